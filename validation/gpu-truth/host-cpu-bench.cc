// A fixed CPU workload, the same on every machine: its time on the machine eidolon runs on against
// its time on a real GPU server's host gives the host speed factor (eidolon calibrate-host runs the
// same three kernels). Prints JSON Lines: {"kind":"cpu","what":...,"ns":...} (median of 7 runs).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

static uint64_t g_sink;

static double TimeNs(void (*f)())
{
    std::vector<double> t;
    for (int r = 0; r < 7; ++r)
    {
        auto a = std::chrono::steady_clock::now();
        f();
        auto b = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double, std::nano>(b - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[3];
}

// Integer ALU with a dependency chain (xorshift), 20 M steps.
static void Alu()
{
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000000; ++i)
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    g_sink += x;
}
// Branchy, cache-resident work: sort 1 M pseudo-random 32-bit keys.
static void Sort()
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
    g_sink += v[12345];
}
// Pointer-chasing, allocation-heavy work like a framework's dispatcher: a std::map of strings.
static void MapWork()
{
    std::map<std::string, int> m;
    for (int i = 0; i < 200000; ++i)
        m["key-" + std::to_string((i * 7919) % 100003)] += i;
    g_sink += m.size();
}

int main()
{
    printf("{\"kind\":\"cpu\",\"what\":\"alu-xorshift-20M\",\"ns\":%.0f}\n", TimeNs(Alu));
    printf("{\"kind\":\"cpu\",\"what\":\"sort-1M-u32\",\"ns\":%.0f}\n", TimeNs(Sort));
    printf("{\"kind\":\"cpu\",\"what\":\"map-200k-strings\",\"ns\":%.0f}\n", TimeNs(MapWork));
    return int(g_sink & 0);
}
