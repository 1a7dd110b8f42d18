// Times on the wire that the simulator adds up (a chain's ready time and durations, where chains
// start) are whole ticks of 2^-10 ns (about 1 ps). Sums and maxima of such values below 2^43 ns
// (2.4 hours) are exact in a double, so how a stream's ops were folded into chain records (which
// depends on when the rank's flusher sent a batch, in wall time) never changes an end by a
// rounding.
#pragma once

#include <cmath>

namespace eidolon::wire
{
inline double
WholeTicks(double ns)
{
    return std::ldexp(std::nearbyint(std::ldexp(ns, 10)), -10);
}
} // namespace eidolon::wire
