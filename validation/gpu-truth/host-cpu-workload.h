// A fixed CPU workload, the same on every machine: host-cpu-bench.cc times it on a GPU server's
// host (the host description's cpu_benchmark), `eidolon calibrate-host` on the machine eidolon runs
// on; the ratio is the host speed factor. Header-only so that host-cpu-bench.cc still builds alone
// on the server (g++ -O2 host-cpu-bench.cc). Each kernel adds its result to `sink` so that the
// compiler keeps the work.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace host_cpu_workload
{

// Integer ALU with a dependency chain (xorshift), 20 M steps.
inline void
Alu(uint64_t& sink)
{
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000000; ++i)
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
}

// Branchy, cache-resident work: sort 1 M pseudo-random 32-bit keys.
inline void
Sort(uint64_t& sink)
{
    std::vector<uint32_t> v(1 << 20);
    uint32_t x = 2463534242u;
    for (auto& e : v)
    {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        e = x;
    }
    std::sort(v.begin(), v.end());
    sink += v[12345];
}

// Pointer-chasing, allocation-heavy work like a framework's dispatcher: a std::map of strings.
inline void
MapWork(uint64_t& sink)
{
    std::map<std::string, int> m;
    for (int i = 0; i < 200000; ++i)
        m["key-" + std::to_string((i * 7919) % 100003)] += i;
    sink += m.size();
}

} // namespace host_cpu_workload
