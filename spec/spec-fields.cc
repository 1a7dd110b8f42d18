/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "spec-fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace eidolon
{
namespace spec
{

std::string
Where(const std::string& file, const YAML::Node& node)
{
    if (node.IsDefined())
    {
        YAML::Mark m = node.Mark();
        if (m.line >= 0)
        {
            return file + ":" + std::to_string(m.line + 1);
        }
    }
    return file;
}

namespace
{
// yaml-cpp keeps both entries of a mapping that names a key twice and finds the first, so a file
// saying `nodes: 2` and later `nodes: 4` read as 2 nodes, silently. YAML 1.2 requires keys to be
// unique: a repeated one is refused, naming both lines. The walk is iterative (no recursion for a
// deeply nested file) and visits each mapping or sequence once (an alias shares its anchor's node
// and position, so aliases cannot make it exponential).
void
RefuseDuplicateKeys(const YAML::Node& root, const std::string& file)
{
    std::vector<YAML::Node> pending{root};
    std::set<int> visited; // positions of the collections already walked
    while (!pending.empty())
    {
        YAML::Node node = pending.back();
        pending.pop_back();
        if (!node.IsMap() && !node.IsSequence())
        {
            continue;
        }
        if (!visited.insert(node.Mark().pos).second)
        {
            continue;
        }
        if (node.IsSequence())
        {
            for (const YAML::Node& item : node)
            {
                pending.push_back(item);
            }
            continue;
        }
        std::map<std::string, int> lineOfKey;
        for (const auto& entry : node)
        {
            if (entry.first.IsScalar())
            {
                const int line = entry.first.Mark().line + 1;
                auto [it, fresh] = lineOfKey.emplace(entry.first.Scalar(), line);
                if (!fresh)
                {
                    throw SpecError(file + ":" + std::to_string(line) + ": key '" +
                                    entry.first.Scalar() +
                                    "' appears twice in one mapping (also at line " +
                                    std::to_string(it->second) + "); each key must be given once");
                }
            }
            pending.push_back(entry.second);
        }
    }
}
} // namespace

YAML::Node
LoadYaml(const std::string& text, const std::string& file)
{
    YAML::Node root;
    try
    {
        root = YAML::Load(text);
    }
    catch (const YAML::ParserException& e)
    {
        throw SpecError(file + ":" + std::to_string(e.mark.line + 1) +
                        ": not valid YAML: " + e.msg);
    }
    RefuseDuplicateKeys(root, file);
    return root;
}

std::string
ReadFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
    {
        throw SpecError(path + ": cannot open file");
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

double
ParseNumber(const std::string& text)
{
    size_t used = 0;
    double v = 0;
    try
    {
        v = std::stod(text, &used);
    }
    catch (const std::exception&)
    {
        used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(v))
    {
        throw SpecError("expected a number, got '" + text + "'");
    }
    return v;
}

Fields::Fields(std::string file, const YAML::Node& map, std::string what)
    : m_file(std::move(file))
    , m_map(map)
    , m_what(std::move(what))
{
    if (!m_map.IsMap())
    {
        throw SpecError(Where(m_file, m_map) + ": " + m_what + " must be a mapping of " +
                        "key: value pairs");
    }
}

void
Fields::Allow(std::initializer_list<const char*> allowed) const
{
    std::set<std::string> ok(allowed.begin(), allowed.end());
    for (auto it = m_map.begin(); it != m_map.end(); ++it)
    {
        std::string key = it->first.Scalar();
        if (!ok.count(key))
        {
            std::string list;
            for (const char* a : allowed)
            {
                list += (list.empty() ? "" : ", ") + std::string(a);
            }
            throw SpecError(Where(m_file, it->first) + ": unknown key '" + key + "' in " + m_what +
                            " (allowed: " + list + ")");
        }
    }
}

bool
Fields::Has(const char* key) const
{
    const YAML::Node n = m_map[key];
    return n.IsDefined() && !n.IsNull();
}

YAML::Node
Fields::Get(const char* key) const
{
    const YAML::Node n = m_map[key];
    if (!n.IsDefined() || n.IsNull())
    {
        FailAt(m_map, key, m_prefix.empty() ? "missing in " + m_what : "missing");
    }
    return n;
}

Fields
Fields::Child(const char* key) const
{
    YAML::Node n = Get(key);
    if (!n.IsMap())
    {
        Fail(key, "expected a mapping of key: value pairs");
    }
    Fields child(m_file, n, m_prefix + key);
    child.m_prefix = m_prefix + key + ".";
    return child;
}

void
Fields::Fail(const char* key, const std::string& message) const
{
    const YAML::Node n = m_map[key];
    FailAt(n.IsDefined() ? n : m_map, key, message);
}

void
Fields::FailAt(const YAML::Node& at, const char* key, const std::string& message) const
{
    throw SpecError(Where(m_file, at) + ": field '" + m_prefix + key + "': " + message);
}

std::string
Fields::Scalar(const char* key) const
{
    YAML::Node n = Get(key);
    if (!n.IsScalar())
    {
        Fail(key,
             "expected a single value, not a " + std::string(n.IsSequence() ? "list" : "mapping"));
    }
    return n.Scalar();
}

std::string
Fields::String(const char* key) const
{
    std::string s = Scalar(key);
    if (s.empty())
    {
        Fail(key, "must not be empty");
    }
    return s;
}

std::string
Fields::String(const char* key, const std::string& fallback) const
{
    return Has(key) ? String(key) : fallback;
}

int64_t
Fields::Int(const char* key, int64_t min) const
{
    std::string s = Scalar(key);
    size_t used = 0;
    int64_t v = 0;
    try
    {
        v = std::stoll(s, &used, 10);
    }
    catch (const std::exception&)
    {
        used = 0;
    }
    if (used == 0 || used != s.size())
    {
        Fail(key, "expected an integer, got '" + s + "'");
    }
    if (v < min)
    {
        Fail(key, "must be at least " + std::to_string(min) + ", got " + s);
    }
    if (v > std::numeric_limits<int32_t>::max())
    {
        Fail(key, "is too large: " + s);
    }
    return v;
}

int64_t
Fields::Int(const char* key, int64_t min, int64_t fallback) const
{
    return Has(key) ? Int(key, min) : fallback;
}

double
Fields::Number(const char* key) const
{
    return Parsed(key, ParseNumber);
}

double
Fields::Positive(const char* key) const
{
    double v = Number(key);
    if (!(v > 0))
    {
        Fail(key, "must be positive, got " + Scalar(key));
    }
    return v;
}

double
Fields::NonNegative(const char* key) const
{
    double v = Number(key);
    if (v < 0)
    {
        Fail(key, "must not be negative");
    }
    return v;
}

bool
Fields::Bool(const char* key, bool fallback) const
{
    if (!Has(key))
    {
        return fallback;
    }
    std::string s = Scalar(key);
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    if (l == "true" || l == "yes" || l == "on")
    {
        return true;
    }
    if (l == "false" || l == "no" || l == "off")
    {
        return false;
    }
    Fail(key, "expected true or false, got '" + s + "'");
}

double
Fields::Ratio(const char* key, double fallback) const
{
    if (!Has(key))
    {
        return fallback;
    }
    std::string s = Scalar(key);
    double num = 0;
    double den = 1;
    size_t colon = s.find(':');
    try
    {
        size_t used = 0;
        num = std::stod(s.substr(0, colon), &used);
        bool ok = used == s.substr(0, colon).size();
        if (colon != std::string::npos)
        {
            std::string rest = s.substr(colon + 1);
            den = std::stod(rest, &used);
            ok = ok && used == rest.size();
        }
        if (!ok)
        {
            throw std::invalid_argument(s);
        }
    }
    catch (const std::exception&)
    {
        Fail(key, "expected a ratio such as 2 or 2:1, got '" + s + "'");
    }
    if (!(num > 0) || !(den > 0))
    {
        Fail(key, "ratio must be positive, got '" + s + "'");
    }
    return num / den;
}

double
Fields::Bandwidth(const char* key) const
{
    return Parsed(key, [](const std::string& s) { return ParseBandwidth(s); });
}

int64_t
Fields::Latency(const char* key) const
{
    return Parsed(key, [](const std::string& s) { return ParseLatencyNs(s); });
}

uint64_t
Fields::Bytes(const char* key) const
{
    uint64_t v = Parsed(key, [](const std::string& s) { return ParseBytes(s); });
    if (v == 0)
    {
        Fail(key, "must be positive");
    }
    return v;
}

} // namespace spec
} // namespace eidolon
