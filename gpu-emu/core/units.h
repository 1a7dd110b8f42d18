// Parsers for the quantities in GPU spec files: sizes ("80GiB"), rates ("3.35TB/s").
#pragma once

#include <optional>
#include <string>

namespace eidolon::gpu
{

// Bytes from "80GiB", "50MiB", "228KiB", "1.5GB", "4096" (SI prefixes are powers of 1000,
// binary prefixes powers of 1024). Empty when the text is not a size.
std::optional<double> ParseBytes(const std::string& text);

// Bytes per second from "3.35TB/s", "450GB/s", "64 GiB/s", "400Gb/s" (lower-case b = bits).
std::optional<double> ParseBytesPerSecond(const std::string& text);

} // namespace eidolon::gpu
