#include "units.h"

#include <cctype>
#include <cstdlib>

namespace eidolon::gpu
{
namespace
{

struct NumberAndUnit
{
    double value;
    std::string unit;
};

std::optional<NumberAndUnit>
SplitNumber(const std::string& text)
{
    const char* begin = text.c_str();
    char* end = nullptr;
    double value = std::strtod(begin, &end);
    if (end == begin)
    {
        return std::nullopt;
    }
    std::string unit;
    for (const char* p = end; *p; ++p)
    {
        if (!std::isspace(static_cast<unsigned char>(*p)))
        {
            unit.push_back(*p);
        }
    }
    return NumberAndUnit{value, unit};
}

// Multiplier of a size unit in bytes, or in bits when the unit ends in a lower-case 'b'.
std::optional<double>
UnitScale(std::string unit)
{
    double bits = 1.0;
    if (!unit.empty() && unit.back() == 'b')
    {
        bits = 1.0 / 8.0;
        unit.pop_back();
    }
    else if (!unit.empty() && unit.back() == 'B')
    {
        unit.pop_back();
    }
    if (unit.empty())
    {
        return bits;
    }
    bool binary = unit.size() == 2 && unit[1] == 'i';
    if (unit.size() > 2 || (unit.size() == 2 && !binary))
    {
        return std::nullopt;
    }
    const std::string prefixes = "KMGTP";
    auto pos = prefixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (pos == std::string::npos)
    {
        return std::nullopt;
    }
    double scale = 1.0;
    for (size_t i = 0; i <= pos; ++i)
    {
        scale *= binary ? 1024.0 : 1000.0;
    }
    return scale * bits;
}

} // namespace

std::optional<double>
ParseBytes(const std::string& text)
{
    auto parts = SplitNumber(text);
    if (!parts)
    {
        return std::nullopt;
    }
    auto scale = UnitScale(parts->unit);
    if (!scale)
    {
        return std::nullopt;
    }
    return parts->value * *scale;
}

std::optional<double>
ParseBytesPerSecond(const std::string& text)
{
    auto parts = SplitNumber(text);
    if (!parts)
    {
        return std::nullopt;
    }
    std::string unit = parts->unit;
    if (unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "/s") == 0)
    {
        unit.resize(unit.size() - 2);
    }
    else if (unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "ps") == 0)
    {
        unit.resize(unit.size() - 2); // "Gbps" -> "Gb" (bits)
    }
    auto scale = UnitScale(unit);
    if (!scale)
    {
        return std::nullopt;
    }
    return parts->value * *scale;
}

} // namespace eidolon::gpu
