/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's environment variables (NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS,
 * NCCL_NVLS_ENABLE, NCCL_NVLS_NCHANNELS, NCCL_PAT_ENABLE) read and checked as NCCL parses them
 * (src/graph/tuning.cc parseList and friends, restated).
 */
#include "nccl-config.h"

#include "ns3/log.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNcclConfig");

using namespace nccl;

namespace
{

std::string
Lower(std::string s)
{
    for (char& ch : s)
    {
        ch = char(std::tolower(static_cast<unsigned char>(ch)));
    }
    return s;
}

std::string
Trim(const std::string& s)
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
Split(const std::string& s, char sep)
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

/// One NCCL list ("ring,tree", "^LL128"): tokens compared case-insensitively; '^' inverts.
/// NCCL skips empty tokens. An unknown token is an error (newer NCCL refuses it too).
void
ParseList(const std::string& var, const std::string& text, const char* const names[], int n,
          bool* enable)
{
    std::string s = Trim(text);
    bool def = false;
    bool set = true;
    if (!s.empty() && s[0] == '^')
    {
        def = true;
        set = false;
        s = s.substr(1);
    }
    for (int i = 0; i < n; ++i)
    {
        enable[i] = def;
    }
    for (const std::string& raw : Split(s, ','))
    {
        std::string tok = Lower(Trim(raw));
        if (tok.empty())
        {
            continue;
        }
        bool matched = false;
        for (int i = 0; i < n; ++i)
        {
            if (tok == Lower(names[i]))
            {
                enable[i] = set;
                matched = true;
            }
        }
        if (!matched && names == kAlgoNames && tok == "collnet")
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
            throw std::invalid_argument(var + "='" + text + "': unknown name '" + Trim(raw) +
                                        "' (known: " + known.str() + ")");
        }
    }
}

/// NCCL_ALGO / NCCL_PROTO: a list for every function, or "func:list;func:list" (functions not
/// named keep everything enabled). mask[f][i].
template<int N>
void
ParseFunctionLists(const std::string& var, const std::string& text, const char* const names[],
                   bool mask[kFuncs][N], bool* named = nullptr)
{
    for (int f = 0; f < kFuncs; ++f)
    {
        for (int i = 0; i < N; ++i)
        {
            mask[f][i] = true;
        }
        if (named)
        {
            named[f] = false;
        }
    }
    if (Trim(text).empty())
    {
        return;
    }
    if (text.find(':') == std::string::npos)
    {
        bool one[N];
        ParseList(var, text, names, N, one);
        for (int f = 0; f < kFuncs; ++f)
        {
            std::copy(one, one + N, mask[f]);
            if (named)
            {
                named[f] = true;
            }
        }
        return;
    }
    for (const std::string& part : Split(text, ';'))
    {
        if (Trim(part).empty())
        {
            continue;
        }
        size_t colon = part.find(':');
        if (colon == std::string::npos)
        {
            throw std::invalid_argument(var + "='" + text + "': '" + Trim(part) +
                                        "' is not of the form function:list");
        }
        std::string fn = Lower(Trim(part.substr(0, colon)));
        int f = -1;
        for (int i = 0; i < kFuncs; ++i)
        {
            if (fn == Lower(kFuncNames[i]))
            {
                f = i;
            }
        }
        if (f < 0)
        {
            throw std::invalid_argument(var + "='" + text + "': unknown function '" +
                                        Trim(part.substr(0, colon)) +
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

/// NCCL_P2P_LEVEL (graph/paths.cc ncclGetLevel): a path type name (topoPathTypeStr, in NCCL's
/// order from 2.27, which added C2C and P2C) or an old-style number, 0-5 = LOC, PIX, PXB, PHB,
/// SYS, SYS (larger numbers count as 5). NCCL ignores anything else; the model names it instead.
int
ParseP2pLevel(const std::string& text)
{
    static const char* const kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                         "PXB", "P2C", "PXN", "PHB", "SYS"};
    const std::string s = Trim(text);
    for (int i = 0; i < int(std::size(kNames)); ++i)
    {
        if (s == kNames[i])
        {
            return i;
        }
    }
    if (!s.empty() && s[0] >= '0' && s[0] <= '9')
    {
        static const int kOld[] = {NcclConfig::kP2pLevelLoc, NcclConfig::kP2pLevelPix,
                                   NcclConfig::kP2pLevelPxb, NcclConfig::kP2pLevelPhb,
                                   NcclConfig::kP2pLevelSys, NcclConfig::kP2pLevelSys};
        const long old = std::strtol(s.c_str(), nullptr, 0);
        return kOld[std::min<long>(old, 5)];
    }
    throw std::invalid_argument("NCCL_P2P_LEVEL='" + text +
                                "': not a path type (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, "
                                "PHB, SYS) or a level 0-5");
}

int
ParseInt(const std::string& var, const std::string& text, int lo, int hi)
{
    std::string s = Trim(text);
    size_t used = 0;
    long long v = 0;
    try
    {
        v = std::stoll(s, &used, 0);
    }
    catch (const std::exception&)
    {
        used = 0;
    }
    if (s.empty() || used != s.size())
    {
        throw std::invalid_argument(var + "='" + text + "': not an integer");
    }
    if (v < lo || v > hi)
    {
        throw std::invalid_argument(var + "=" + s + ": out of range [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
    }
    return int(v);
}

} // namespace

namespace nccl
{

EnableMasks
ParseEnableMasks(const NcclConfig& config, bool applyEnv)
{
    EnableMasks m;
    ParseFunctionLists<kAlgos>("NCCL_ALGO", applyEnv ? config.algo : "", kAlgoNames, m.algo);
    ParseFunctionLists<kProtos>("NCCL_PROTO", applyEnv ? config.proto : "", kProtoNames, m.proto,
                                m.protoNamed);
    return m;
}

} // namespace nccl

void
NcclConfig::Validate() const
{
    bool algoMask[kFuncs][kAlgos];
    bool protoMask[kFuncs][kProtos];
    ParseFunctionLists<kAlgos>("NCCL_ALGO", algo, kAlgoNames, algoMask);
    ParseFunctionLists<kProtos>("NCCL_PROTO", proto, kProtoNames, protoMask);
    if (minChannels < -1 || minChannels > kMaxChannels)
    {
        throw std::invalid_argument("NCCL_MIN_NCHANNELS=" + std::to_string(minChannels) +
                                    ": out of range [0, 64]");
    }
    if (maxChannels != -1 && (maxChannels < 1 || maxChannels > kMaxChannels))
    {
        throw std::invalid_argument("NCCL_MAX_NCHANNELS=" + std::to_string(maxChannels) +
                                    ": out of range [1, 64]");
    }
    if (nvlsEnable < -1 || nvlsEnable > 2)
    {
        throw std::invalid_argument("NCCL_NVLS_ENABLE=" + std::to_string(nvlsEnable) +
                                    ": must be 0, 1 or 2");
    }
    if (nvlsChannels != -1 && (nvlsChannels < 1 || nvlsChannels > kMaxChannels))
    {
        throw std::invalid_argument("NCCL_NVLS_NCHANNELS=" + std::to_string(nvlsChannels) +
                                    ": out of range [1, 64]");
    }
    if (patEnable < -1 || patEnable > 2)
    {
        throw std::invalid_argument("NCCL_PAT_ENABLE=" + std::to_string(patEnable) +
                                    ": must be 0, 1 or 2");
    }
    if (collnetEnable < -1 || collnetEnable > 1)
    {
        throw std::invalid_argument("NCCL_COLLNET_ENABLE=" + std::to_string(collnetEnable) +
                                    ": must be 0 or 1");
    }
    if (p2pDisable < -1 || p2pDisable > 1)
    {
        throw std::invalid_argument("NCCL_P2P_DISABLE=" + std::to_string(p2pDisable) +
                                    ": must be 0 or 1");
    }
    if (shmDisable < -1 || shmDisable > 1)
    {
        throw std::invalid_argument("NCCL_SHM_DISABLE=" + std::to_string(shmDisable) +
                                    ": must be 0 or 1");
    }
    if (p2pLevel < -1 || p2pLevel > kP2pLevelSys)
    {
        throw std::invalid_argument("NCCL_P2P_LEVEL=" + std::to_string(p2pLevel) +
                                    ": not a path type rank (0 LOC ... 9 SYS)");
    }
}

std::string
NcclConfig::UnmodelledWarning(bool topologySharp) const
{
    if (topologySharp && collnetEnable == 1)
    {
        return "";
    }
    if (Trim(algo).empty())
    {
        return "";
    }
    bool mask[kFuncs][kAlgos];
    ParseFunctionLists<kAlgos>("NCCL_ALGO", algo, kAlgoNames, mask);
    // What the variable asks for, function by function; an inverted list ("^ring") names what it
    // removes, so only explicitly listed algorithms count.
    std::string lowered = Lower(algo);
    std::ostringstream names;
    int found = 0;
    for (int a : {kCollNetDirect, kCollNetChain})
    {
        bool enabled = false;
        for (int f = 0; f < kFuncs; ++f)
        {
            enabled = enabled || mask[f][a];
        }
        bool listed = lowered.find(Lower(kAlgoNames[a])) != std::string::npos ||
                      (lowered.find("collnet") != std::string::npos &&
                       lowered.find("collnetdirect") == std::string::npos &&
                       lowered.find("collnetchain") == std::string::npos);
        if (enabled && listed && lowered.find('^') == std::string::npos)
        {
            names << (found++ ? ", " : "") << kAlgoNames[a];
        }
    }
    if (!found)
    {
        return "";
    }
    const std::string why =
        topologySharp
            ? "NCCL_COLLNET_ENABLE is not 1, and NCCL leaves CollNet off without it"
            : "the topology has no SHARP switches (a `sharp:` block, doc/topology.md), and NCCL "
              "itself needs a CollNet plugin and SHARP switches for it";
    return "NCCL_ALGO='" + algo + "' asks for " + names.str() + ", which cannot run here (" + why +
           "): those calls run without CollNet (what else NCCL_ALGO allows; where it allows "
           "nothing else, NCCL fails the call, or runs Ring in 2.19-2.23), so their times are "
           "not CollNet's";
}

const std::vector<std::string>&
NcclConfig::Variables()
{
    static const std::vector<std::string> names = {
        "NCCL_ALGO",        "NCCL_PROTO",          "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
        "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS", "NCCL_PAT_ENABLE",    "NCCL_COLLNET_ENABLE",
        "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",      "NCCL_SHM_DISABLE"};
    return names;
}

std::string
NcclConfig::UnreadVariablesWarning(const std::map<std::string, std::string>& env)
{
    // NCCL's variables (docs.nvidia.com/deeplearning/nccl, "Environment Variables") that change
    // its transports, buffers, channels or choices, which the model does not read: it runs as
    // NCCL does with them unset. (Logging, debugging and memory-only variables are not listed;
    // nor are NCCL_MIN_CTAS / NCCL_MAX_CTAS, which gpu-emu reads over each communicator's
    // ncclConfig_t and sends with it: CollectiveCall::minCtas / maxCtas.)
    static const char* const kUnread[] = {"NCCL_P2P_NET_CHUNKSIZE",
                                          "NCCL_P2P_NVL_CHUNKSIZE",
                                          "NCCL_P2P_PCI_CHUNKSIZE",
                                          "NCCL_P2P_LL_THRESHOLD",
                                          "NCCL_BUFFSIZE",
                                          "NCCL_LL_BUFFSIZE",
                                          "NCCL_LL128_BUFFSIZE",
                                          "NCCL_NTHREADS",
                                          "NCCL_LL128_NTHREADS",
                                          "NCCL_NET_GDR_LEVEL",
                                          "NCCL_NET_GDR_READ",
                                          "NCCL_NET_SHARED_BUFFERS",
                                          "NCCL_CROSS_NIC",
                                          "NCCL_IB_HCA",
                                          "NCCL_IB_DISABLE",
                                          "NCCL_IB_QPS_PER_CONNECTION",
                                          "NCCL_IB_SPLIT_DATA_ON_QPS",
                                          "NCCL_NCHANNELS_PER_NET_PEER",
                                          "NCCL_PXN_DISABLE",
                                          "NCCL_P2P_PXN_LEVEL",
                                          "NCCL_NVLS_CHUNKSIZE",
                                          "NCCL_TUNER_PLUGIN",
                                          "NCCL_NET_PLUGIN",
                                          "NCCL_TOPO_FILE",
                                          "NCCL_GRAPH_FILE",
                                          "NCCL_SOCKET_NTHREADS",
                                          "NCCL_NSOCKS_PERTHREAD",
                                          "NCCL_SHM_USE_CUDA_MEMCPY",
                                          "NCCL_CGA_CLUSTER_SIZE"};
    std::vector<std::string> set;
    for (const char* name : kUnread)
    {
        auto it = env.find(name);
        if (it != env.end() && !Trim(it->second).empty())
        {
            set.push_back(std::string(name) + "=" + Trim(it->second));
        }
    }
    if (set.empty())
    {
        return "";
    }
    std::string names;
    for (const std::string& one : set)
    {
        names += (names.empty() ? "" : ", ") + one;
    }
    return names + (set.size() == 1 ? " is" : " are") +
           " set but not modelled: collectives run as NCCL runs them without " +
           (set.size() == 1 ? "it" : "them") + " (ns3-module/doc/collective-model.md)";
}

NcclConfig
NcclConfig::FromEnvironment(const std::map<std::string, std::string>& env)
{
    NcclConfig c;
    auto get = [&](const char* name, std::string* out)
    {
        auto it = env.find(name);
        if (it == env.end() || Trim(it->second).empty())
        {
            return false;
        }
        *out = it->second;
        return true;
    };
    std::string v;
    if (get("NCCL_ALGO", &v))
    {
        c.algo = v;
    }
    if (get("NCCL_PROTO", &v))
    {
        c.proto = v;
    }
    if (get("NCCL_MIN_NCHANNELS", &v))
    {
        c.minChannels = ParseInt("NCCL_MIN_NCHANNELS", v, 0, kMaxChannels);
    }
    if (get("NCCL_MAX_NCHANNELS", &v))
    {
        c.maxChannels = ParseInt("NCCL_MAX_NCHANNELS", v, 1, kMaxChannels);
    }
    if (get("NCCL_NVLS_ENABLE", &v))
    {
        c.nvlsEnable = ParseInt("NCCL_NVLS_ENABLE", v, 0, 2);
    }
    if (get("NCCL_NVLS_NCHANNELS", &v))
    {
        c.nvlsChannels = ParseInt("NCCL_NVLS_NCHANNELS", v, 1, kMaxChannels);
    }
    if (get("NCCL_PAT_ENABLE", &v))
    {
        c.patEnable = ParseInt("NCCL_PAT_ENABLE", v, 0, 2);
    }
    if (get("NCCL_COLLNET_ENABLE", &v))
    {
        c.collnetEnable = ParseInt("NCCL_COLLNET_ENABLE", v, 0, 1);
    }
    if (get("NCCL_P2P_DISABLE", &v))
    {
        c.p2pDisable = ParseInt("NCCL_P2P_DISABLE", v, 0, 1);
    }
    if (get("NCCL_P2P_LEVEL", &v))
    {
        c.p2pLevel = ParseP2pLevel(v);
    }
    if (get("NCCL_SHM_DISABLE", &v))
    {
        c.shmDisable = ParseInt("NCCL_SHM_DISABLE", v, 0, 1);
    }
    c.Validate();
    return c;
}

} // namespace eidolon
} // namespace ns3
