// What the benchmark programs measure about themselves: wall seconds and peak resident memory.
#pragma once

#include <chrono>
#include <sys/resource.h>

namespace eidolon::bench
{
/// Wall seconds since `since`.
inline double
WallSince(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

/// The process's peak resident memory so far, in MiB.
inline long
PeakRssMb()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}
} // namespace eidolon::bench
