/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's environment variables (NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS,
 * NCCL_NVLS_ENABLE, NCCL_NVLS_NCHANNELS, NCCL_PAT_ENABLE) read and checked as NCCL parses them
 * (src/graph/tuning.cc parseList and friends, restated; NCCL_ALGO / NCCL_PROTO in
 * spec/nccl-env.cc, which gpu-emu reads too).
 */
#include "nccl-config.h"

#include "ns3/log.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNcclConfig");

using namespace nccl;

namespace
{
namespace spec = ::eidolon::spec;

/// NCCL_P2P_LEVEL (graph/paths.cc ncclGetLevel): a path type name (topoPathTypeStr, in NCCL's
/// order from 2.27, which added C2C and P2C) or an old-style number, 0-5 = LOC, PIX, PXB, PHB,
/// SYS, SYS (larger numbers count as 5). NCCL ignores anything else; the model names it instead.
int
ParseP2pLevel(const std::string& text)
{
    static const char* const kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                         "PXB", "P2C", "PXN", "PHB", "SYS"};
    const std::string s = spec::NcclTrim(text);
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

/// The largest NVLS chunk the model takes (1 GiB): NCCL sets no bound, but its NVLS buffers are
/// 8 chunks per channel and head.
constexpr int kMaxChunkBytes = 1 << 30;

int
ParseInt(const std::string& var, const std::string& text, int lo, int hi)
{
    std::string s = spec::NcclTrim(text);
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

const char*
AlgoVariable(const NcclConfig& config)
{
    return config.algoSet || !config.algo.empty() ? config.algo.c_str() : nullptr;
}

const char*
ProtoVariable(const NcclConfig& config)
{
    return config.protoSet || !config.proto.empty() ? config.proto.c_str() : nullptr;
}

int
MaxChannelsAsked(const NcclConfig& config, uint32_t version)
{
    const int limit = MaxChannelsOf(version);
    if (config.maxChannels == NcclConfig::kChannelsUnset)
    {
        return limit;
    }
    return std::clamp(config.maxChannels, 1, limit);
}

int
MinChannelsAsked(const NcclConfig& config, uint32_t version)
{
    if (config.minChannels == NcclConfig::kChannelsUnset)
    {
        return 0;
    }
    return std::clamp(config.minChannels, 0, MaxChannelsOf(version));
}

EnableMasks
ParseEnableMasks(const NcclConfig& config, uint32_t version, bool applyEnv)
{
    // Every collective the model chooses asks, nearly always with the same variables: the last
    // reading is kept (per thread) so that one is parsed once, not once a collective.
    struct Reading
    {
        bool valid = false;
        uint32_t version = 0;
        bool applyEnv = false, algoSet = false, protoSet = false;
        std::string algo, proto;
        EnableMasks masks;
    };
    thread_local Reading last;
    const bool algoSet = applyEnv && AlgoVariable(config) != nullptr;
    const bool protoSet = applyEnv && ProtoVariable(config) != nullptr;
    if (last.valid && last.version == version && last.applyEnv == applyEnv &&
        last.algoSet == algoSet && last.protoSet == protoSet &&
        (!algoSet || last.algo == config.algo) && (!protoSet || last.proto == config.proto))
    {
        return last.masks;
    }
    last.masks = spec::ReadNcclAlgoProto(version, algoSet ? config.algo.c_str() : nullptr,
                                         protoSet ? config.proto.c_str() : nullptr)
                     .masks;
    last.valid = true;
    last.version = version;
    last.applyEnv = applyEnv;
    last.algoSet = algoSet;
    last.protoSet = protoSet;
    last.algo = algoSet ? config.algo : std::string();
    last.proto = protoSet ? config.proto : std::string();
    return last.masks;
}

} // namespace nccl

void
NcclConfig::Validate() const
{
    // NCCL_ALGO / NCCL_PROTO are not refused here: how NCCL reads them depends on the release
    // (ReadingWarning), and where NCCL cannot, the program's communicator creation fails.
    // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS: every integer is valid, NCCL clamps it
    // (ChannelWarning).
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
    if (nvlsChunkSize != -1 && (nvlsChunkSize < 1 || nvlsChunkSize > kMaxChunkBytes))
    {
        throw std::invalid_argument("NCCL_NVLS_CHUNKSIZE=" + std::to_string(nvlsChunkSize) +
                                    ": out of range [1, " + std::to_string(kMaxChunkBytes) + "]");
    }
    if (nvlsTreeMaxChunkSize != -1 &&
        (nvlsTreeMaxChunkSize < 1 || nvlsTreeMaxChunkSize > kMaxChunkBytes))
    {
        throw std::invalid_argument(
            "NCCL_NVLSTREE_MAX_CHUNKSIZE=" + std::to_string(nvlsTreeMaxChunkSize) +
            ": out of range [1, " + std::to_string(kMaxChunkBytes) + "]");
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
NcclConfig::ReadingWarning(uint32_t version) const
{
    const char* a = nccl::AlgoVariable(*this);
    const char* p = nccl::ProtoVariable(*this);
    return spec::NcclEnvReadingWarning(version, spec::ReadNcclAlgoProto(version, a, p), a, p);
}

std::string
NcclConfig::ChannelWarning(uint32_t version) const
{
    const int limit = nccl::MaxChannelsOf(version);
    std::vector<std::string> said;
    for (const std::string& value : unreadChannelValues)
    {
        said.push_back(value + " is not a number: NCCL ignores it and keeps its default");
    }
    if (maxChannels != kChannelsUnset && maxChannels < 1)
    {
        said.push_back("NCCL_MAX_NCHANNELS=" + std::to_string(maxChannels) +
                       ": NCCL warns \"User asked for a maximum of " + std::to_string(maxChannels) +
                       " channels, setting it to 1\" and runs one "
                       "channel");
    }
    if (minChannels != kChannelsUnset && minChannels > limit)
    {
        said.push_back("NCCL_MIN_NCHANNELS=" + std::to_string(minChannels) +
                       ": NCCL warns \"User asked for a minimum of " + std::to_string(minChannels) +
                       " channels, limiting to " + std::to_string(limit) + "\" (its MAXCHANNELS)");
    }
    std::string text;
    for (const std::string& one : said)
    {
        text += (text.empty() ? "" : "; ") + one;
    }
    return text;
}

std::string
NcclConfig::UnmodelledWarning(uint32_t version, bool topologySharp) const
{
    if (topologySharp && collnetEnable == 1)
    {
        return "";
    }
    if (algo.empty())
    {
        return "";
    }
    const spec::NcclEnvReading reading =
        spec::ReadNcclAlgoProto(version, nccl::AlgoVariable(*this), nullptr);
    if (reading.initError)
    {
        return ""; // ReadingWarning says it
    }
    // What the variable asks for, function by function; an inverted list ("^ring") names what it
    // removes, so only explicitly listed algorithms count.
    std::string lowered = spec::NcclLower(algo);
    std::ostringstream names;
    int found = 0;
    for (int a : {kCollNetDirect, kCollNetChain})
    {
        bool enabled = false;
        for (int f = 0; f < kFuncs; ++f)
        {
            enabled = enabled || reading.masks.algo[f][a];
        }
        bool listed = lowered.find(spec::NcclLower(kAlgoNames[a])) != std::string::npos;
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
           "nothing else, NCCL " +
           (version < 22400 ? "2.18-2.23 turns Ring and Tree back on" : "fails the call") +
           "), so their times are not CollNet's";
}

const std::vector<std::string>&
NcclConfig::Variables()
{
    static const std::vector<std::string> names = {"NCCL_ALGO",
                                                   "NCCL_PROTO",
                                                   "NCCL_MIN_NCHANNELS",
                                                   "NCCL_MAX_NCHANNELS",
                                                   "NCCL_NVLS_ENABLE",
                                                   "NCCL_NVLS_NCHANNELS",
                                                   "NCCL_PAT_ENABLE",
                                                   "NCCL_COLLNET_ENABLE",
                                                   "NCCL_P2P_DISABLE",
                                                   "NCCL_P2P_LEVEL",
                                                   "NCCL_SHM_DISABLE",
                                                   "NCCL_NVLS_CHUNKSIZE",
                                                   "NCCL_NVLSTREE_MAX_CHUNKSIZE"};
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
        if (it != env.end() && !spec::NcclTrim(it->second).empty())
        {
            set.push_back(std::string(name) + "=" + spec::NcclTrim(it->second));
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
        if (it == env.end() || spec::NcclTrim(it->second).empty())
        {
            return false;
        }
        *out = it->second;
        return true;
    };
    // NCCL_ALGO / NCCL_PROTO as NCCL reads them: present, whatever the value.
    if (auto it = env.find("NCCL_ALGO"); it != env.end())
    {
        c.algo = it->second;
        c.algoSet = true;
    }
    if (auto it = env.find("NCCL_PROTO"); it != env.end())
    {
        c.proto = it->second;
        c.protoSet = true;
    }
    std::string v;
    // NCCL reads these with its parameter reader (strtoll, base 0; a value that is not a number
    // keeps the default) and clamps them where it makes the communicator (connect.cc).
    for (auto [name, field] : {std::pair{"NCCL_MIN_NCHANNELS", &c.minChannels},
                               std::pair{"NCCL_MAX_NCHANNELS", &c.maxChannels}})
    {
        if (!get(name, &v))
        {
            continue;
        }
        try
        {
            *field = ParseInt(name, v, INT_MIN, INT_MAX);
        }
        catch (const std::invalid_argument&)
        {
            c.unreadChannelValues.push_back(std::string(name) + "='" + v + "'");
        }
    }
    if (get("NCCL_NVLS_ENABLE", &v))
    {
        c.nvlsEnable = ParseInt("NCCL_NVLS_ENABLE", v, 0, 2);
    }
    if (get("NCCL_NVLS_NCHANNELS", &v))
    {
        c.nvlsChannels = ParseInt("NCCL_NVLS_NCHANNELS", v, 1, kMaxChannels);
    }
    if (get("NCCL_NVLS_CHUNKSIZE", &v))
    {
        c.nvlsChunkSize = ParseInt("NCCL_NVLS_CHUNKSIZE", v, 1, kMaxChunkBytes);
    }
    if (get("NCCL_NVLSTREE_MAX_CHUNKSIZE", &v))
    {
        c.nvlsTreeMaxChunkSize = ParseInt("NCCL_NVLSTREE_MAX_CHUNKSIZE", v, 1, kMaxChunkBytes);
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
