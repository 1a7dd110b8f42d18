/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: the quantities description files are written in (sizes, bandwidths,
 * latencies), parsed in one place for the simulator and the ranks.
 */
#ifndef EIDOLON_SPEC_UNITS_H
#define EIDOLON_SPEC_UNITS_H

#include "spec-error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace eidolon
{
namespace spec
{

/**
 * Bytes per second from "400Gbps", "400Gb/s", "450GB/s", "64GBps", "1.6Tbps", "64GiB/s": a
 * lower-case b is bits, an upper-case B bytes; K/M/G/T/P are powers of 1000, Ki/Mi/Gi/Ti/Pi powers
 * of 1024. Throws SpecError unless the text is a positive bandwidth.
 */
double ParseBandwidth(const std::string& text);
/// Parses "500ns", "1us", "1.5 us", "2ms", "1s", "0" into nanoseconds; throws SpecError on junk.
int64_t ParseLatencyNs(const std::string& text);
/// Parses "80GiB", "80GB", "141 GB", "228KiB", "4096" into bytes; throws SpecError on junk.
uint64_t ParseBytes(const std::string& text);

/// ParseBandwidth without the throw: empty when the text is not a positive bandwidth.
std::optional<double> TryParseBandwidth(const std::string& text);
/// ParseBytes without the throw: empty when the text is not a size.
std::optional<uint64_t> TryParseBytes(const std::string& text);

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_UNITS_H
