/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "nccl-env.h"

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
constexpr int kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr int kSimple = 2;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

/// One NCCL list ("ring,tree", "^LL128"): tokens compared case-insensitively; '^' inverts.
/// NCCL skips empty tokens. An unknown token is an error (newer NCCL refuses it too).
void
ParseList(const std::string& var, const std::string& text, const char* const names[], int n,
          bool* enable)
{
    std::string s = NcclTrim(text);
    bool def = false;
    bool set = true;
    if (!s.empty() && s[0] == '^')
    {
        def = true;
        set = false;
        s = s.substr(1);
    }
    std::fill(enable, enable + n, def);
    for (const std::string& raw : NcclSplit(s, ','))
    {
        std::string tok = NcclLower(NcclTrim(raw));
        if (tok.empty())
        {
            continue;
        }
        bool matched = false;
        for (int i = 0; i < n; ++i)
        {
            if (tok == NcclLower(names[i]))
            {
                enable[i] = set;
                matched = true;
            }
        }
        if (!matched && names == kNcclAlgoNames && tok == "collnet")
        {
            enable[kCollNetDirect] = enable[kCollNetChain] = set;
            matched = true;
        }
        if (!matched)
        {
            std::ostringstream known;
            for (int i = 0; i < n; ++i)
            {
                known << (i ? ", " : "") << names[i];
            }
            throw std::invalid_argument(var + "='" + text + "': unknown name '" + NcclTrim(raw) +
                                        "' (known: " + known.str() + ")");
        }
    }
}

/// NCCL_ALGO / NCCL_PROTO: a list for every function, or "func:list;func:list" (functions not
/// named keep everything enabled). mask[f][i].
template<int N>
void
ParseFunctionLists(const std::string& var, const std::string& text, const char* const names[],
                   bool mask[kNcclFuncs][N], bool* named = nullptr)
{
    for (int f = 0; f < kNcclFuncs; ++f)
    {
        std::fill(mask[f], mask[f] + N, true);
        if (named)
        {
            named[f] = false;
        }
    }
    if (NcclTrim(text).empty())
    {
        return;
    }
    if (text.find(':') == std::string::npos)
    {
        bool one[N];
        ParseList(var, text, names, N, one);
        for (int f = 0; f < kNcclFuncs; ++f)
        {
            std::copy(one, one + N, mask[f]);
            if (named)
            {
                named[f] = true;
            }
        }
        return;
    }
    for (const std::string& part : NcclSplit(text, ';'))
    {
        if (NcclTrim(part).empty())
        {
            continue;
        }
        size_t colon = part.find(':');
        if (colon == std::string::npos)
        {
            throw std::invalid_argument(var + "='" + text + "': '" + NcclTrim(part) +
                                        "' is not of the form function:list");
        }
        std::string fn = NcclLower(NcclTrim(part.substr(0, colon)));
        int f = -1;
        for (int i = 0; i < kNcclFuncs; ++i)
        {
            if (fn == NcclLower(kNcclFuncNames[i]))
            {
                f = i;
            }
        }
        if (f < 0)
        {
            throw std::invalid_argument(var + "='" + text + "': unknown function '" +
                                        NcclTrim(part.substr(0, colon)) +
                                        "' (known: Broadcast, Reduce, AllGather, ReduceScatter, "
                                        "AllReduce)");
        }
        ParseList(var, part.substr(colon + 1), names, N, mask[f]);
        if (named)
        {
            named[f] = true;
        }
    }
}
} // namespace

NcclEnableMasks
ParseNcclEnableMasks(const std::string& algo, const std::string& proto)
{
    NcclEnableMasks m;
    ParseFunctionLists<kNcclAlgos>("NCCL_ALGO", algo, kNcclAlgoNames, m.algo);
    ParseFunctionLists<kNcclProtos>("NCCL_PROTO", proto, kNcclProtoNames, m.proto, m.protoNamed);
    return m;
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
NcclNoAlgorithmText(uint32_t version, int f, const std::string& algo, const std::string& proto,
                    const std::string& datatype)
{
    if (version < 22400)
    {
        return {3, "Error : no algorithm/protocol available"};
    }
    std::string said;
    if (!NcclTrim(algo).empty())
    {
        said += " NCCL_ALGO was set to " + algo + ".";
    }
    if (!NcclTrim(proto).empty())
    {
        said += " NCCL_PROTO was set to " + proto + ".";
    }
    const std::string named = std::string(" for function ") + kNcclFuncNames[f] +
                              " with datatype " + datatype + "." + said;
    return {said.empty() ? 3 : 5, (version < 23000 ? "Error : no algorithm/protocol available"
                                                   : "No algorithm/protocol available") +
                                      named};
}

std::optional<NcclCallError>
NcclNoAlgorithmError(uint32_t version, int f, const NcclEnableMasks& masks, const std::string& algo,
                     const std::string& proto, const std::string& datatype)
{
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

std::vector<std::string>
NcclSplit(const std::string& s, char sep)
{
    std::vector<std::string> out;
    std::string cur;
    for (char ch : s)
    {
        if (ch == sep)
        {
            out.push_back(cur);
            cur.clear();
        }
        else
        {
            cur += ch;
        }
    }
    out.push_back(cur);
    return out;
}

} // namespace spec
} // namespace eidolon
