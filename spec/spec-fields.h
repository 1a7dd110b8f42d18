/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: reading the fields of a YAML description (GPU spec, host, topology) so
 * that every problem names the file, the 1-based line and the field.
 */
#ifndef EIDOLON_SPEC_FIELDS_H
#define EIDOLON_SPEC_FIELDS_H

#include "spec-error.h"
#include "spec-units.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace eidolon
{
namespace spec
{

/// Where a YAML node is, for messages: "file:line" (1-based), or just "file" without a mark.
std::string Where(const std::string& file, const YAML::Node& node);

/// Parses YAML text; a syntax error throws SpecError "file:line: not valid YAML: ...", and so does a
/// key given twice in one mapping ("file:line: key 'nodes' appears twice ...").
YAML::Node LoadYaml(const std::string& text, const std::string& file);

/// A whole file as text; throws SpecError "path: cannot open file".
std::string ReadFile(const std::string& path);

/// A finite decimal number ("4019", "2.5", "1e-3"); throws SpecError "expected a number, got
/// '...'".
double ParseNumber(const std::string& text);

/**
 * Reads fields of one YAML mapping, turning every problem into a SpecError that names the file,
 * line and field. `what` names the mapping in messages ("link", "GPU spec", ...). A key whose
 * value is null counts as absent. The Fields of a nested mapping made by Child() name their fields
 * by dotted path ("calls.cudaFree.source"), which says by itself where the field belongs.
 */
class Fields
{
public:
    /// Throws unless map is a mapping.
    Fields(std::string file, const YAML::Node& map, std::string what);

    /// Rejects keys outside `allowed`, naming the stray key and listing the allowed ones.
    void Allow(std::initializer_list<const char*> allowed) const;
    bool Has(const char* key) const;
    /// The value; throws "field 'key': missing in <what>" when absent ("field 'a.b.key': missing"
    /// in a Child).
    YAML::Node Get(const char* key) const;
    /// The mapping under key, its fields named "key.field" in messages.
    Fields Child(const char* key) const;
    [[noreturn]] void Fail(const char* key, const std::string& message) const;
    /// Fail at a node inside key's value, such as one entry of a list, so the line is the entry's.
    [[noreturn]] void FailAt(const YAML::Node& at, const char* key,
                             const std::string& message) const;

    std::string Scalar(const char* key) const;
    /// A non-empty scalar.
    std::string String(const char* key) const;
    std::string String(const char* key, const std::string& fallback) const;
    /// An integer of at least min that fits 32 bits (every integer of the schemas is a count or an
    /// index).
    int64_t Int(const char* key, int64_t min) const;
    int64_t Int(const char* key, int64_t min, int64_t fallback) const;
    double Number(const char* key) const;
    double Positive(const char* key) const;
    double NonNegative(const char* key) const;
    bool Bool(const char* key, bool fallback) const;
    /// "2", "2.5" or "2:1": a ratio such as a downlink-to-uplink oversubscription.
    double Ratio(const char* key, double fallback) const;

    /// A unit parser's result; its SpecError message gets the file, line and field in front.
    template<typename F> auto Parsed(const char* key, F parse) const
    {
        std::string s = Scalar(key);
        try
        {
            return parse(s);
        }
        catch (const SpecError& e)
        {
            Fail(key, e.what());
        }
    }

    double Bandwidth(const char* key) const; //!< bytes/s (ParseBandwidth)
    int64_t Latency(const char* key) const;  //!< ns (ParseLatencyNs)
    uint64_t Bytes(const char* key) const;   //!< a positive size (ParseBytes)

    /// The file named in messages, for the Fields of a nested mapping.
    const std::string& File() const { return m_file; }

private:
    std::string m_file;
    YAML::Node m_map;
    std::string m_what;
    std::string m_prefix; //!< "a.b." for a Child, prepended to field names in messages
};

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_FIELDS_H
