// A fixed CPU workload, the same on every machine: its time on the machine eidolon runs on against
// its time on a real GPU server's host gives the host speed factor (eidolon calibrate-host runs the
// same three kernels, host-cpu-workload.h). Prints JSON Lines: {"kind":"cpu","what":...,"ns":...}
// (median of 7 runs). Build: g++ -O2 -o host-cpu-bench host-cpu-bench.cc
#include "host-cpu-workload.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

static uint64_t g_sink;

static double
TimeNs(void (*f)(uint64_t&))
{
    std::vector<double> t;
    for (int r = 0; r < 7; ++r)
    {
        auto a = std::chrono::steady_clock::now();
        f(g_sink);
        auto b = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double, std::nano>(b - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[3];
}

int main()
{
    printf("{\"kind\":\"cpu\",\"what\":\"alu-xorshift-20M\",\"ns\":%.0f}\n",
           TimeNs(host_cpu_workload::Alu));
    printf("{\"kind\":\"cpu\",\"what\":\"sort-1M-u32\",\"ns\":%.0f}\n",
           TimeNs(host_cpu_workload::Sort));
    printf("{\"kind\":\"cpu\",\"what\":\"map-200k-strings\",\"ns\":%.0f}\n",
           TimeNs(host_cpu_workload::MapWork));
    return int(g_sink & 0);
}
