/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "spec-units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace eidolon
{
namespace spec
{

namespace
{

std::string
Lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

/// "400 Gb/s" -> (400, "Gb/s"): the leading number and the unit as written, spaces dropped.
/// Throws "not a <what>" when there is no leading number.
std::pair<double, std::string>
SplitQuantity(const std::string& text, const char* what)
{
    std::string t;
    for (char c : text)
    {
        if (!std::isspace(static_cast<unsigned char>(c)))
        {
            t.push_back(c);
        }
    }
    size_t used = 0;
    double value = 0;
    try
    {
        value = std::stod(t, &used);
    }
    catch (const std::exception&)
    {
        throw SpecError(std::string("not a ") + what + ": '" + text + "'");
    }
    if (!std::isfinite(value))
    {
        throw SpecError(std::string("not a ") + what + ": '" + text + "'");
    }
    return {value, t.substr(used)};
}

/// Scale of a prefix: "" 1, "K"/"k" 1e3 ... "P" 1e15, "Ki" 1024 ... "Pi" 1024^5; empty if unknown.
std::optional<double>
PrefixScale(const std::string& prefix)
{
    if (prefix.empty())
    {
        return 1.0;
    }
    const bool binary =
        prefix.size() == 2 && std::tolower(static_cast<unsigned char>(prefix[1])) == 'i';
    if (prefix.size() > 2 || (prefix.size() == 2 && !binary))
    {
        return std::nullopt;
    }
    static const std::string letters = "KMGTP";
    const size_t power =
        letters.find(static_cast<char>(std::toupper(static_cast<unsigned char>(prefix[0]))));
    if (power == std::string::npos)
    {
        return std::nullopt;
    }
    return std::pow(binary ? 1024.0 : 1000.0, static_cast<double>(power + 1));
}

bool
EndsWith(const std::string& s, const std::string& tail)
{
    return s.size() >= tail.size() && Lower(s.substr(s.size() - tail.size())) == tail;
}

} // namespace

double
ParseBandwidth(const std::string& text)
{
    auto [value, unit] = SplitQuantity(text, "bandwidth");
    // "<prefix>(b|B)(/s|ps)": case matters only in b (bits, as networks count) against B (bytes,
    // as NVIDIA's datasheets count).
    std::optional<double> scale;
    if (EndsWith(unit, "/s") || EndsWith(unit, "ps"))
    {
        unit.resize(unit.size() - 2);
        if (!unit.empty() && (unit.back() == 'b' || unit.back() == 'B'))
        {
            const double perUnit = unit.back() == 'b' ? 1.0 / 8 : 1.0;
            unit.pop_back();
            if (auto prefix = PrefixScale(unit))
            {
                scale = *prefix * perUnit;
            }
        }
    }
    if (!scale || !(value > 0))
    {
        throw SpecError("not a positive bandwidth: '" + text +
                        "' (write e.g. 400Gbps, 400Gb/s, 450GB/s, 64GBps)");
    }
    return value * *scale;
}

int64_t
ParseLatencyNs(const std::string& text)
{
    auto [value, unit] = SplitQuantity(text, "latency");
    static const std::map<std::string, double> units = {
        {"", 1.0}, {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
    };
    auto it = units.find(Lower(unit));
    if (it == units.end() || value < 0)
    {
        throw SpecError("not a latency: '" + text + "' (write e.g. 500ns, 1us, 1.5us)");
    }
    if (unit.empty() && value != 0)
    {
        throw SpecError("latency '" + text + "' has no unit (write e.g. 500ns or 1us)");
    }
    const double ns = value * it->second;
    if (!(ns < 9e18)) // beyond int64 nanoseconds (or not a number): llround's result is undefined
    {
        throw SpecError("latency '" + text + "' is too large (write at most a few seconds)");
    }
    return static_cast<int64_t>(std::llround(ns));
}

uint64_t
ParseBytes(const std::string& text)
{
    auto [value, unit] = SplitQuantity(text, "size");
    // "<prefix>[B]", any case: sizes are bytes ("80GB" and "80gb" alike).
    if (!unit.empty() && (unit.back() == 'b' || unit.back() == 'B'))
    {
        unit.pop_back();
    }
    std::optional<double> scale = PrefixScale(unit);
    if (!scale || value < 0)
    {
        throw SpecError("not a size: '" + text + "' (write e.g. 80GiB or 141GB)");
    }
    return static_cast<uint64_t>(std::llround(value * *scale));
}

std::optional<double>
TryParseBandwidth(const std::string& text)
{
    try
    {
        return ParseBandwidth(text);
    }
    catch (const SpecError&)
    {
        return std::nullopt;
    }
}

std::optional<uint64_t>
TryParseBytes(const std::string& text)
{
    try
    {
        return ParseBytes(text);
    }
    catch (const SpecError&)
    {
        return std::nullopt;
    }
}

} // namespace spec
} // namespace eidolon
