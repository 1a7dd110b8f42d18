/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "nccl-env.h"

#include "nccl-version.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

namespace eidolon
{
namespace spec
{

namespace
{
constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5,
              kPat = 6;
constexpr int kSimple = 2;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;
constexpr int kInvalidUsage = 5;

bool
SameName(const std::string& a, const char* b)
{
    return NcclLower(a) == NcclLower(b); // strcasecmp
}

/// The non-empty pieces of `s` between `sep`, as strtok_r gives them, each with its offset.
std::vector<std::pair<size_t, std::string>>
Tokens(const std::string& s, char sep)
{
    std::vector<std::pair<size_t, std::string>> out;
    size_t at = 0;
    while (at <= s.size())
    {
        size_t end = s.find(sep, at);
        if (end == std::string::npos)
        {
            end = s.size();
        }
        if (end > at)
        {
            out.emplace_back(at, s.substr(at, end - at));
        }
        at = end + 1;
    }
    return out;
}

/// A list's leading '^' (everything but what it names): removed, and whether it was there.
bool
TakeInversion(std::string& list)
{
    if (list.empty() || list[0] != '^')
    {
        return false;
    }
    list.erase(0, 1);
    return true;
}

/// The algorithm names NCCL `version` knows (ncclAlgoStr): PAT from 2.23.
int
AlgoNameCount(uint32_t version)
{
    return version >= 22300 ? kNcclAlgos : kNcclAlgos - 1;
}

/// 2.18-2.23 (tuning.cc parseList(str, elems, nelems, list)): one comma list for every function;
/// a leading '^' inverts it; a name is compared whole, case aside, and one it does not know is
/// skipped without a word (so is "allreduce:tree": function lists came with 2.24).
void
ReadFlatList(const std::string& var, const std::string& text, const char* const names[], int n,
             int known, bool* enable, NcclEnvReading* reading)
{
    std::string s = text;
    const bool set = !TakeInversion(s);
    std::fill(enable, enable + n, !set);
    bool anyKnown = false;
    for (const auto& [at, tok] : Tokens(s, ','))
    {
        bool matched = false;
        for (int i = 0; i < known; ++i)
        {
            if (SameName(tok, names[i]))
            {
                enable[i] = set;
                matched = true;
            }
        }
        if (!matched)
        {
            reading->ignored.push_back(var + ": '" + tok + "'");
        }
        anyKnown = anyKnown || matched;
    }
    if (set && !anyKnown)
    {
        reading->nothingEnabled.push_back(var);
    }
}

/// 2.24+ (tuning.cc parseList with prefixes): "list" for every function, or "func:list;..."
/// where the first entry alone may lack the prefix (it then sets every function, and the
/// prefixed ones after it override theirs); a list sets every element of its functions, '^'
/// inverting it. An unknown element or function fails communicator creation: the error returned.
/// named[f]: the variable set function f's list (NCCL_PROTO: LL128 no longer "auto").
template<int N>
std::optional<std::string>
ReadFunctionLists(const std::string& text, const char* const names[], bool mask[kNcclFuncs][N],
                  bool named[kNcclFuncs])
{
    for (const auto& [entryAt, entry] : Tokens(text, ';'))
    {
        std::vector<std::pair<size_t, std::string>> parts = Tokens(entry, ':');
        std::string prefix;
        std::string list;
        bool prefixed = parts.size() >= 2; // NCCL reads two pieces; a third is never looked at
        if (prefixed)
        {
            prefix = parts[0].second;
            list = parts[1].second;
        }
        else
        {
            if (entryAt != 0)
            {
                return "All entries except the first must have a prefix: \"" + text + "\"";
            }
            list = parts.empty() ? "" : parts[0].second;
        }
        const bool set = !TakeInversion(list);
        const bool unset = !set;
        bool foundPrefix = false;
        for (int f = 0; f < kNcclFuncs; ++f)
        {
            if (prefixed && !SameName(prefix, kNcclFuncNames[f]))
            {
                continue;
            }
            foundPrefix = true;
            std::fill(mask[f], mask[f] + N, unset);
            named[f] = true;
            for (const auto& [at, elem] : Tokens(list, ','))
            {
                int e = 0;
                while (e < N && !SameName(elem, names[e]))
                {
                    ++e;
                }
                if (e == N)
                {
                    return "Unrecognized element token \"" + elem + "\" when parsing \"" + text +
                           "\"";
                }
                mask[f][e] = set;
            }
        }
        if (!foundPrefix)
        {
            return "Unrecognized prefix token \"" + prefix + "\" when parsing \"" + text + "\"";
        }
    }
    return std::nullopt;
}

template<int N>
void
EnableAll(bool mask[kNcclFuncs][N])
{
    for (int f = 0; f < kNcclFuncs; ++f)
    {
        std::fill(mask[f], mask[f] + N, true);
    }
}
} // namespace

NcclEnvReading
ReadNcclAlgoProto(uint32_t version, const char* algo, const char* proto)
{
    NcclEnvReading r;
    NcclEnableMasks& m = r.masks;
    EnableAll<kNcclAlgos>(m.algo);
    EnableAll<kNcclProtos>(m.proto);
    std::fill(m.protoNamed, m.protoNamed + kNcclFuncs, false);
    if (version < 22400)
    {
        if (proto)
        {
            ReadFlatList("NCCL_PROTO", proto, kNcclProtoNames, kNcclProtos, kNcclProtos, m.proto[0],
                         &r);
            std::fill(m.protoNamed, m.protoNamed + kNcclFuncs, true);
        }
        if (algo)
        {
            ReadFlatList("NCCL_ALGO", algo, kNcclAlgoNames, kNcclAlgos, AlgoNameCount(version),
                         m.algo[0], &r);
            if (AlgoNameCount(version) < kNcclAlgos)
            {
                m.algo[0][kPat] = false; // no such algorithm yet
            }
        }
        for (int f = 1; f < kNcclFuncs; ++f)
        {
            std::copy(m.proto[0], m.proto[0] + kNcclProtos, m.proto[f]);
            std::copy(m.algo[0], m.algo[0] + kNcclAlgos, m.algo[f]);
        }
        if (version < 21900)
        {
            // 2.18 never turns Ring off for a function other than AllReduce (tuning.cc: "Never
            // disable ring for non-allreduce operations"): NCCL_ALGO=Tree runs them on Ring.
            for (int f = 0; f < kNcclFuncs; ++f)
            {
                m.algo[f][kRing] = m.algo[f][kRing] || f != kAllReduce;
            }
        }
        return r;
    }
    // NCCL reads NCCL_PROTO first; the first error ends communicator creation.
    std::optional<std::string> error;
    if (proto)
    {
        error = ReadFunctionLists<kNcclProtos>(proto, kNcclProtoNames, m.proto, m.protoNamed);
    }
    if (!error && algo)
    {
        bool named[kNcclFuncs] = {};
        error = ReadFunctionLists<kNcclAlgos>(algo, kNcclAlgoNames, m.algo, named);
    }
    if (error)
    {
        // NCCL's defaults: the run has none.
        r.masks = ReadNcclAlgoProto(version, nullptr, nullptr).masks;
        r.initError = NcclCallError{kInvalidUsage, *error};
    }
    return r;
}

std::string
NcclEnvReadingWarning(uint32_t version, const NcclEnvReading& reading, const char* algo,
                      const char* proto)
{
    const std::string release = FormatNcclVersion(version);
    auto quoted = [](const char* name, const char* value)
    { return std::string(name) + "='" + value + "'"; };
    if (reading.initError)
    {
        std::string set = proto ? quoted("NCCL_PROTO", proto) : "";
        if (algo)
        {
            set += (set.empty() ? "" : ", ") + quoted("NCCL_ALGO", algo);
        }
        return "NCCL " + release + " cannot read " + set + ": " + reading.initError->message +
               ". Creating a communicator fails there (ncclInvalidUsage), where the real program "
               "would stop; collectives that run anyway are timed as NCCL's defaults";
    }
    std::string said;
    if (!reading.ignored.empty())
    {
        std::string names;
        bool prefixed = false;
        for (const std::string& one : reading.ignored)
        {
            names += (names.empty() ? "" : ", ") + one;
            prefixed = prefixed || one.find(':', one.find('\'')) != std::string::npos;
        }
        said = "NCCL " + release +
               " skips, without a word, what it does not know in NCCL_ALGO / NCCL_PROTO: " + names +
               (prefixed ? " (function:list entries came with NCCL 2.24)" : "") +
               "; the rest of the list stands without them";
    }
    for (const std::string& var : reading.nothingEnabled)
    {
        const bool isAlgo = var == "NCCL_ALGO";
        said +=
            (said.empty() ? "" : ". ") + quoted(var.c_str(), isAlgo ? algo : proto) +
            " enables nothing NCCL " + release + " knows: every " +
            (isAlgo ? std::string("algorithm is off (where CollNet is off too, NCCL turns "
                                  "Ring and Tree back on") +
                          (version < 21900 ? "; Ring stays on for all but AllReduce)" : ")")
                    : std::string("protocol is off, so no collective has an algorithm/protocol"));
    }
    return said;
}

bool
NcclImplements(uint32_t version, int f, int a, int p)
{
    if ((a == kNvls || a == kNvlsTree || a == kPat || a == kCollNetDirect || a == kCollNetChain) &&
        p != kSimple)
    {
        return false;
    }
    switch (f)
    {
    case kBroadcast:
    case kReduce:
        return a == kRing;
    case kAllGather:
    case kReduceScatter:
        return a == kRing || (a == kNvls && version >= 21900) ||
               (a == kCollNetDirect && version >= 22000) || (a == kPat && version >= 22300);
    case kAllReduce:
        return a != kPat;
    }
    return false;
}

bool
NcclRingBackup(uint32_t version)
{
    return version >= 21900 && version < 22400;
}

bool
NcclRingBackupKeepsProto(uint32_t version)
{
    return version >= 22200;
}

NcclCallError
NcclNoAlgorithmText(uint32_t version, int f, const char* algo, const char* proto,
                    const std::string& datatype)
{
    if (version < 22400)
    {
        return {3, "Error : no algorithm/protocol available"};
    }
    std::string said;
    if (algo)
    {
        said += std::string(" NCCL_ALGO was set to ") + algo + ".";
    }
    if (proto)
    {
        said += std::string(" NCCL_PROTO was set to ") + proto + ".";
    }
    const std::string named = std::string(" for function ") + kNcclFuncNames[f] +
                              " with datatype " + datatype + "." + said;
    return {said.empty() ? 3 : 5, (version < 23000 ? "Error : no algorithm/protocol available"
                                                   : "No algorithm/protocol available") +
                                      named};
}

bool
NcclCollNetFallback(uint32_t version, bool collnet, int nNodes, bool algo[kNcclAlgos])
{
    if (version >= 22400 || collnet)
    {
        return false;
    }
    const bool nvls = algo[kNvls] && nNodes == 1;
    const bool nvlsTree = algo[kNvlsTree] && nNodes > 1;
    if (algo[kRing] || algo[kTree] || nvls || nvlsTree)
    {
        return false;
    }
    algo[kRing] = algo[kTree] = true;
    return true;
}

std::optional<NcclCallError>
NcclNoAlgorithmError(uint32_t version, int f, const NcclEnableMasks& masks, const char* algo,
                     const char* proto, const std::string& datatype)
{
    if (version < 22400 && !masks.algo[f][kRing] && !masks.algo[f][kTree] &&
        !masks.algo[f][kNvlsTree])
    {
        return std::nullopt; // the CollNet rule may turn Ring and Tree back on: the topology's call
    }
    for (int a = 0; a < kNcclAlgos; ++a)
    {
        for (int p = 0; p < kNcclProtos; ++p)
        {
            if (masks.algo[f][a] && masks.proto[f][p] && NcclImplements(version, f, a, p))
            {
                return std::nullopt; // the topology decides (the model's part)
            }
        }
    }
    if (NcclRingBackup(version))
    {
        // Ring's backup: any protocol up to 2.21, NCCL_PROTO's from 2.22.
        const bool* allowed = masks.proto[f];
        if (!NcclRingBackupKeepsProto(version) ||
            std::any_of(allowed, allowed + kNcclProtos, [](bool b) { return b; }))
        {
            return std::nullopt;
        }
    }
    return NcclNoAlgorithmText(version, f, algo, proto, datatype);
}

std::string
NcclLower(std::string s)
{
    for (char& ch : s)
    {
        ch = char(std::tolower(static_cast<unsigned char>(ch)));
    }
    return s;
}

std::string
NcclTrim(const std::string& s)
{
    size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos)
    {
        return "";
    }
    size_t b = s.find_last_not_of(" \t\r\n");
    return s.substr(a, b - a + 1);
}

} // namespace spec
} // namespace eidolon
