/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's choice (algorithm, protocol, channels) reproduced from its published cost model,
 * and the chosen data movement timed as flows on the network model. Constants and their sources:
 * doc/collective-model.md and ../shared/notes/nccl-model-facts.md (NCCL 2.30.7,
 * src/graph/tuning.cc, src/graph/search.cc, src/enqueue.cc; NCCL 2.20.3 src/graph/tuning.cc for the
 * older tables).
 */
#include "collective-model.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonCollectiveModel");
NS_OBJECT_ENSURE_REGISTERED(CollectiveModel);

const char*
ToString(CollectiveKind kind)
{
    switch (kind)
    {
    case CollectiveKind::AllReduce:
        return "AllReduce";
    case CollectiveKind::AllGather:
        return "AllGather";
    case CollectiveKind::ReduceScatter:
        return "ReduceScatter";
    case CollectiveKind::Broadcast:
        return "Broadcast";
    case CollectiveKind::Reduce:
        return "Reduce";
    case CollectiveKind::SendRecv:
        return "SendRecv";
    }
    return "?";
}

const char*
ToString(NcclAlgorithm algorithm)
{
    switch (algorithm)
    {
    case NcclAlgorithm::Tree:
        return "Tree";
    case NcclAlgorithm::Ring:
        return "Ring";
    case NcclAlgorithm::CollNetDirect:
        return "CollNetDirect";
    case NcclAlgorithm::CollNetChain:
        return "CollNetChain";
    case NcclAlgorithm::Nvls:
        return "NVLS";
    case NcclAlgorithm::NvlsTree:
        return "NVLSTree";
    case NcclAlgorithm::Pat:
        return "PAT";
    }
    return "?";
}

const char*
ToString(NcclProtocol protocol)
{
    switch (protocol)
    {
    case NcclProtocol::LL:
        return "LL";
    case NcclProtocol::LL128:
        return "LL128";
    case NcclProtocol::Simple:
        return "Simple";
    }
    return "?";
}

namespace
{
constexpr int kAlgos = 7;
constexpr int kProtos = 3;
constexpr int kFuncs = 5;
// NCCL's orders: algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT;
// protocols LL, LL128, Simple; functions Broadcast, Reduce, AllGather, ReduceScatter, AllReduce.
constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5,
              kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;

const char* const kAlgoNames[kAlgos] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                        "NVLSTree", "PAT"};
const char* const kProtoNames[kProtos] = {"LL", "LL128", "Simple"};
const char* const kFuncNames[kFuncs] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                        "AllReduce"};

/// NCCL_STEPS-independent constants of the scheduler (nccl-model-facts.md 2.2-2.4).
constexpr uint64_t kMinTrafficPerChannel = 32 * 1024; //!< bytes of traffic per cell
constexpr int kMaxChannels = 64;                      //!< MAXCHANNELS
constexpr int kSearchMaxChannels = 32;                //!< ring search maxChannels
constexpr uint64_t kP2pLlThreshold = 16384;           //!< NCCL_P2P_LL_THRESHOLD per channel
/// NCCL's PCIe figure over the link rate after encoding: Gen5 x16 is 48 GB/s to NCCL (16 lanes x
/// 240 / 80) where the link carries 63 GB/s; Gen4 x16 is 24 against 31.5.
constexpr double kNcclPcieFactor = 48.0 / 63.0;

int
FuncOf(CollectiveKind kind)
{
    switch (kind)
    {
    case CollectiveKind::Broadcast:
        return kBroadcast;
    case CollectiveKind::Reduce:
        return kReduce;
    case CollectiveKind::AllGather:
        return kAllGather;
    case CollectiveKind::ReduceScatter:
        return kReduceScatter;
    case CollectiveKind::AllReduce:
        return kAllReduce;
    case CollectiveKind::SendRecv:
        return -1;
    }
    return -1;
}

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

uint32_t
Pow2Up(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
    {
        p <<= 1;
    }
    return p;
}

int
Log2i(uint64_t v)
{
    int l = -1;
    while (v)
    {
        v >>= 1;
        ++l;
    }
    return l;
}

/// NCCL's per-link NVLink bandwidth (GB/s) by compute capability (src/graph/topo.h).
double
NcclNvlinkPerLink(int cc)
{
    if (cc >= 100)
    {
        return 40.1;
    }
    if (cc >= 90)
    {
        return 20.6;
    }
    if (cc == 86)
    {
        return 12.0;
    }
    if (cc >= 70)
    {
        return 20.0;
    }
    return 18.0;
}

/// Candidate per-channel speeds of NCCL's search (GB/s), src/graph/search.cc.
const std::vector<double>&
IntraSpeeds(int cc, uint32_t version)
{
    static const std::vector<double> sm80 = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
    static const std::vector<double> sm90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
    static const std::vector<double> sm100 = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
    static const std::vector<double> sm100Old = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
    if (cc >= 100)
    {
        return version >= 22902 ? sm100 : sm100Old; // 45.0 added in 2.29.2
    }
    return cc >= 90 ? sm90 : sm80;
}

const std::vector<double>&
InterSpeeds(int cc)
{
    static const std::vector<double> sm80 = {48, 30, 28, 24, 20, 18,  15,  12,   10,  9,
                                             7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm90 = {48, 45, 42, 40, 30,  24,  22,   20,  17.5,
                                             15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm100 = {96, 86,   80, 48, 45.1, 42, 40,  30,  24,   22,
                                              20, 17.5, 15, 12, 6,    3,  2.4, 1.2, 0.24, 0.12};
    if (cc >= 100)
    {
        return sm100;
    }
    return cc >= 90 ? sm90 : sm80;
}

int
CompCapIndex(int cc)
{
    return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

/// NCCL's double binary tree over node indices (src/graph/trees.cc, restated): parent of r in
/// the first tree, -1 for the root.
int
BtreeParent(int n, int r)
{
    if (r == 0)
    {
        return -1;
    }
    int bit = 1;
    while (bit < n && !(bit & r))
    {
        bit <<= 1;
    }
    int up = (r ^ bit) | (bit << 1);
    if (up >= n)
    {
        up = r ^ bit;
    }
    return up;
}

/// Parent of node r in tree t (0 or 1): the second tree is the mirror image (even n) or the first
/// shifted by one node (odd n), so every node is a leaf in (roughly) one of them.
int
DtreeParent(int n, int r, int t)
{
    if (t == 0)
    {
        return BtreeParent(n, r);
    }
    if (n % 2 == 1)
    {
        int p = BtreeParent(n, (r - 1 + n) % n);
        return p < 0 ? -1 : (p + 1) % n;
    }
    int p = BtreeParent(n, n - 1 - r);
    return p < 0 ? -1 : n - 1 - p;
}

} // namespace

// --------------------------------------------------------------------------------------------
// Environment

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
    c.Validate();
    return c;
}

// --------------------------------------------------------------------------------------------
// NCCL's tables by version

/// The constant tables of src/graph/tuning.cc for one NCCL release family.
struct NcclTables
{
    uint32_t version = 0;
    bool modern = true; //!< 2.23+ formulas (NVLS efficiency model, PAT, 2(nNodes-1) inter steps)
    double baseLat[kAlgos][kProtos] = {};
    double hwLat[3][kAlgos][kProtos] = {};
    double llMaxBw[4][3] = {};
    double perChMaxRingLL128[4][3] = {};
    double perChMaxTreeLL128[4][3] = {};
    double perChMaxTree[4][3] = {};
    double perChMaxNvlsTree[4][3] = {};
    double nvlsEff[4] = {};
    std::vector<double> treeCorrection[kProtos];
};

namespace
{
template<size_t R, size_t C>
void
Fill(double (&dst)[R][C], std::initializer_list<std::initializer_list<double>> rows)
{
    size_t r = 0;
    for (const auto& row : rows)
    {
        size_t c = 0;
        for (double v : row)
        {
            dst[r][c++] = v;
        }
        ++r;
    }
}

/// NCCL 2.30.7 (nccl-model-facts.md section 1.3), with the per-release deltas that file lists
/// for 2.28/2.29.
NcclTables
ModernTables(uint32_t version)
{
    NcclTables t;
    t.version = version;
    t.modern = true;
    Fill(t.baseLat, {{6.8, 14.0, 8.4},
                     {6.6, 14.0, 8.4},
                     {0, 0, 0},
                     {0, 0, 0},
                     {0, 0, 0},
                     {0, 0, 0},
                     {8.0, 8.0, 8.0}});
    Fill(t.hwLat[kHwNvlink], {{.6, 1.25, 4.0},
                              {.6, 1.9, 3.4},
                              {0, 0, 3.7},
                              {0, 0, 2.8},
                              {0, 0, 25},
                              {0, 0, 25},
                              {0, 0, 4.0}});
    Fill(t.hwLat[kHwPci], {{1.0, 1.9, 4.0},
                           {1.0, 2.5, 5.7},
                           {0, 0, 3.7},
                           {0, 0, 2.8},
                           {0, 0, 0},
                           {0, 0, 0},
                           {0, 0, 4.0}});
    const double nvlsTreeNet = version <= 22807 ? 14.0 : 20.9;
    Fill(t.hwLat[kHwNet], {{5.0, 8.5, 14},
                           {2.7, 4.0, 14.0},
                           {0, 0, 31},
                           {0, 0, 30},
                           {0, 0, 18},
                           {0, 0, nvlsTreeNet},
                           {0, 0, 14}});
    Fill(t.llMaxBw,
         {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}});
    if (version < 22809)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}});
    }
    else if (version < 22907)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}});
    }
    else
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}});
    }
    Fill(t.perChMaxTreeLL128,
         {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}});
    Fill(t.perChMaxTree,
         {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}});
    const double bwNvlsTreeN4 = version <= 22807 ? 43.1 : version < 23000 ? 43.8 : 80.0;
    Fill(t.perChMaxNvlsTree,
         {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, bwNvlsTreeN4}});
    t.nvlsEff[0] = 0;
    t.nvlsEff[1] = 0;
    t.nvlsEff[2] = 0.85;
    t.nvlsEff[3] = 0.74;
    t.treeCorrection[kLL] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
                             .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0};
    t.treeCorrection[kLL128] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
                                .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0};
    t.treeCorrection[kSimple] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                 .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
    return t;
}

/// NCCL 2.20.3 src/graph/tuning.cc (used for releases before 2.23).
NcclTables
LegacyTables(uint32_t version)
{
    NcclTables t;
    t.version = version;
    t.modern = false;
    Fill(t.baseLat,
         {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
    Fill(t.hwLat[kHwNvlink], {{.6, 1.25, 28},
                              {.6, 1.9, 3.4},
                              {0, 0, 3.7},
                              {0, 0, 2.8},
                              {0, 0, 23},
                              {0, 0, 23},
                              {0, 0, 0}});
    Fill(t.hwLat[kHwPci], {{1.0, 1.9, 28},
                           {1.0, 2.5, 5.7},
                           {0, 0, 3.7},
                           {0, 0, 2.8},
                           {0, 0, 0},
                           {0, 0, 0},
                           {0, 0, 0}});
    Fill(t.hwLat[kHwNet], {{5.0, 8.5, 28},
                           {2.7, 4.0, 14.0},
                           {0, 0, 31},
                           {0, 0, 30},
                           {0, 0, 18},
                           {0, 0, 14},
                           {0, 0, 0}});
    Fill(t.llMaxBw,
         {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}});
    Fill(t.perChMaxRingLL128, {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {36.7, 36.7, 36.7}});
    Fill(t.perChMaxTreeLL128, {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {36.7, 36.7, 29.0}});
    Fill(t.perChMaxTree,
         {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {38.7, 41.4, 36.0}});
    t.treeCorrection[kLL] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
                             .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0};
    t.treeCorrection[kLL128] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
                                .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0};
    t.treeCorrection[kSimple] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                 .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
    // The timing still uses the physical NVLS efficiencies of the newer tables.
    t.nvlsEff[2] = 0.85;
    t.nvlsEff[3] = 0.74;
    return t;
}
} // namespace

const NcclTables&
CollectiveModel::GetTables() const
{
    static thread_local std::unique_ptr<NcclTables> cache;
    if (!cache || cache->version != m_ncclVersion)
    {
        cache = std::make_unique<NcclTables>(m_ncclVersion >= 22300 ? ModernTables(m_ncclVersion)
                                                                    : LegacyTables(m_ncclVersion));
    }
    return *cache;
}

// --------------------------------------------------------------------------------------------
// Object

TypeId
CollectiveModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::CollectiveModel")
            .SetParent<Object>()
            .SetGroupName("Eidolon")
            .AddConstructor<CollectiveModel>()
            .AddAttribute("NcclVersion",
                          "Emulated NCCL release as NCCL encodes it (major*10000 + minor*100 + "
                          "patch, 2.30.7 = 23007). Releases before 2.23 use the 2.20.3 tables.",
                          UintegerValue(23007),
                          MakeUintegerAccessor(&CollectiveModel::m_ncclVersion),
                          MakeUintegerChecker<uint32_t>(21800, 99999))
            .AddAttribute("ChannelBandwidth",
                          "Bytes/s one channel (one CTA's copy loop) moves; 0: NCCL's per-link "
                          "NVLink figure for the GPU's architecture (20.6 GB/s on sm90).",
                          DoubleValue(0), MakeDoubleAccessor(&CollectiveModel::m_channelBandwidth),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("NvlinkEfficiency",
                          "Payload fraction of the NVLink line rate; 0: NCCL's per-link figure "
                          "over the GPU spec's per-link rate (20.6/25 on H100).",
                          DoubleValue(0), MakeDoubleAccessor(&CollectiveModel::m_nvlinkEfficiency),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("NvlsEfficiency",
                          "Fraction of the NVLink payload rate NVLS multimem operations reach; "
                          "0: NCCL's nvlsEff table (0.85 Hopper, 0.74 Blackwell).",
                          DoubleValue(0), MakeDoubleAccessor(&CollectiveModel::m_nvlsEfficiency),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("NetEfficiency",
                          "Payload fraction of a NIC port's line rate (NDR 400 Gb/s carries "
                          "46-49 GB/s of NCCL data; NCCL's search uses 48 GB/s per channel).",
                          DoubleValue(0.96), MakeDoubleAccessor(&CollectiveModel::m_netEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("PcieEfficiency",
                          "Payload fraction of a PCIe link's rate after encoding (TLP headers "
                          "and framing at 256-byte payloads).",
                          DoubleValue(0.9), MakeDoubleAccessor(&CollectiveModel::m_pcieEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("LlEfficiency",
                          "Data fraction of what the LL protocol writes (8 bytes of data per 8 "
                          "bytes of flag).",
                          DoubleValue(0.5), MakeDoubleAccessor(&CollectiveModel::m_llEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("Ll128Efficiency",
                          "Data fraction of what LL128 writes (120 bytes per 128-byte line).",
                          DoubleValue(120.0 / 128.0),
                          MakeDoubleAccessor(&CollectiveModel::m_ll128Efficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("SimpleEfficiency",
                          "Data fraction of what Simple writes (flags are separate and small).",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&CollectiveModel::m_simpleEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("CpuVendor",
                          "Host CPU vendor as NCCL's tuning sees it: 'intel' or 'amd' (LL "
                          "bandwidth row on multi-node, network post overhead).",
                          StringValue("intel"), MakeStringAccessor(&CollectiveModel::m_cpuVendor),
                          MakeStringChecker())
            .AddAttribute("NvlsMulticast",
                          "The driver reports CUDA multicast support (NCCL_NVLS_ENABLE=2 then "
                          "enables NVLS on NVSwitch systems).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&CollectiveModel::m_nvlsMulticast),
                          MakeBooleanChecker())
            .AddAttribute("Pxn",
                          "Inter-node send/recv goes through the NIC of the destination's rail "
                          "via an NVLink hop on the sending node (NCCL_P2P_PXN_LEVEL=2).",
                          BooleanValue(true), MakeBooleanAccessor(&CollectiveModel::m_pxn),
                          MakeBooleanChecker());
    return tid;
}

CollectiveModel::CollectiveModel()
    : m_ncclVersion(23007)
    , m_channelBandwidth(0)
    , m_nvlinkEfficiency(0)
    , m_nvlsEfficiency(0)
    , m_netEfficiency(0.96)
    , m_pcieEfficiency(0.9)
    , m_llEfficiency(0.5)
    , m_ll128Efficiency(120.0 / 128.0)
    , m_simpleEfficiency(1.0)
    , m_cpuVendor("intel")
    , m_nvlsMulticast(true)
    , m_pxn(true)
{
    NS_LOG_FUNCTION(this);
}

CollectiveModel::~CollectiveModel() = default;

double
CollectiveModel::ProtocolEfficiency(int protocol) const
{
    return protocol == kLL      ? m_llEfficiency
           : protocol == kLL128 ? m_ll128Efficiency
                                : m_simpleEfficiency;
}

void
CollectiveModel::DoDispose()
{
    m_network = nullptr;
    m_commCache.clear();
    m_deviceLinks.clear();
    Object::DoDispose();
}

void
CollectiveModel::SetNetworkModel(Ptr<NetworkModel> network)
{
    m_network = network;
    m_commCache.clear();
    m_deviceLinks.clear();
}

void
CollectiveModel::SetConfig(const NcclConfig& config)
{
    config.Validate();
    m_config = config;
    m_commCache.clear();
}

Ptr<const Topology>
CollectiveModel::GetTopology() const
{
    NS_ABORT_MSG_UNLESS(m_network, "CollectiveModel: SetNetworkModel first");
    Ptr<const Topology> t = m_network->GetTopology();
    NS_ABORT_MSG_UNLESS(t, "CollectiveModel: the network model has no topology");
    return t;
}

void
CollectiveModel::IndexTopology() const
{
    Ptr<const Topology> t = GetTopology();
    if (m_deviceLinks.size() == t->Devices().size())
    {
        return;
    }
    m_deviceLinks.assign(t->Devices().size(), {});
    for (uint32_t i = 0; i < t->Links().size(); ++i)
    {
        m_deviceLinks[t->Links()[i].a].push_back(i);
        m_deviceLinks[t->Links()[i].b].push_back(i);
    }
}

double
CollectiveModel::BusBandwidthFactor(CollectiveKind kind, uint32_t n)
{
    if (n <= 1)
    {
        return kind == CollectiveKind::AllReduce ? 0.0 : 1.0;
    }
    switch (kind)
    {
    case CollectiveKind::AllReduce:
        return 2.0 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
        return double(n - 1) / n;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
    case CollectiveKind::SendRecv:
        return 1.0;
    }
    return 1.0;
}

// --------------------------------------------------------------------------------------------
// The communicator: NCCL's topology search as far as the model reproduces it

namespace
{
/// What the topology says about one rank's GPU.
struct GpuFacts
{
    uint32_t device = 0;
    int32_t node = -1;
    int32_t local = -1;
    int cc = 0;
    double nvlink = 0; //!< bytes/s, all NVLink links of the GPU
    bool nvswitch = false;
    uint32_t nvswitchDevice = 0;
    double pcie = 0;    //!< bytes/s of the GPU's PCIe uplink
    int64_t nic = -1;   //!< nearest NIC device
    double nicBw = 0;   //!< bytes/s of that NIC's network port
    double nicPath = 0; //!< bytes/s, narrowest PCIe link between GPU and NIC
    double rawPerLink = 25e9;
    double hbm = 0;
};
} // namespace

NcclCommInfo
CollectiveModel::DescribeCommunicator(const std::vector<uint32_t>& gpus) const
{
    const std::vector<double> key = {double(m_ncclVersion), m_channelBandwidth, m_nvlinkEfficiency,
                                     m_nvlsEfficiency, double(m_nvlsMulticast)};
    if (key != m_commCacheKey)
    {
        m_commCache.clear();
        m_commCacheKey = key;
    }
    auto it = m_commCache.find(gpus);
    if (it != m_commCache.end())
    {
        return it->second;
    }
    NcclCommInfo info = Analyze(gpus);
    if (m_commCache.size() > 4096)
    {
        m_commCache.clear();
    }
    m_commCache.emplace(gpus, info);
    return info;
}

NcclCommInfo
CollectiveModel::Analyze(const std::vector<uint32_t>& gpus) const
{
    Ptr<const Topology> topo = GetTopology();
    IndexTopology();
    NcclCommInfo c;
    c.nRanks = uint32_t(gpus.size());
    NS_ABORT_MSG_IF(gpus.empty(), "CollectiveModel: communicator without ranks");

    std::vector<GpuFacts> facts(gpus.size());
    std::map<int32_t, std::vector<uint32_t>> byNode; // node -> comm ranks
    for (uint32_t r = 0; r < gpus.size(); ++r)
    {
        GpuFacts& f = facts[r];
        f.device = gpus[r];
        const Device& d = topo->GetDevice(gpus[r]);
        NS_ABORT_MSG_UNLESS(d.kind == DeviceKind::Gpu, "CollectiveModel: comm rank "
                                                           << r << " is device '" << d.name
                                                           << "', not a GPU");
        f.node = d.node;
        f.local = d.localIndex;
        byNode[d.node].push_back(r);
        f.cc = 90;
        try
        {
            const GpuSpec& spec = topo->GpuSpecOf(uint32_t(d.gpuIndex));
            f.cc = spec.computeCapabilityMajor * 10 + spec.computeCapabilityMinor;
            if (spec.nvlinkLinks > 0 && spec.nvlinkBandwidth > 0)
            {
                f.rawPerLink = spec.nvlinkBandwidth / spec.nvlinkLinks;
            }
            f.hbm = spec.hbmBandwidth;
        }
        catch (const std::exception& e)
        {
            NS_LOG_WARN("no GPU spec for " << d.name << " (" << e.what() << "): assuming sm90");
        }
        for (uint32_t li : m_deviceLinks[gpus[r]])
        {
            const Link& l = topo->Links()[li];
            uint32_t other = l.a == gpus[r] ? l.b : l.a;
            const Device& od = topo->GetDevice(other);
            if (l.kind == LinkKind::NvLink)
            {
                f.nvlink += l.bandwidth;
                if (od.kind == DeviceKind::NvSwitch)
                {
                    f.nvswitch = true;
                    f.nvswitchDevice = other;
                }
            }
            else if (l.kind == LinkKind::Pcie)
            {
                f.pcie = std::max(f.pcie, l.bandwidth);
            }
        }
        // Nearest NIC over PCIe switches (the GPU-NIC affinity NCCL relies on).
        struct Visit
        {
            uint32_t dev;
            int depth;
            double narrow;
        };
        std::deque<Visit> queue{{gpus[r], 0, std::numeric_limits<double>::infinity()}};
        std::set<uint32_t> seen{gpus[r]};
        int foundDepth = -1;
        while (!queue.empty())
        {
            Visit v = queue.front();
            queue.pop_front();
            if (foundDepth >= 0 && v.depth > foundDepth)
            {
                break;
            }
            for (uint32_t li : m_deviceLinks[v.dev])
            {
                const Link& l = topo->Links()[li];
                uint32_t other = l.a == v.dev ? l.b : l.a;
                if (seen.count(other) || l.kind != LinkKind::Pcie)
                {
                    continue;
                }
                seen.insert(other);
                const Device& od = topo->GetDevice(other);
                double narrow = std::min(v.narrow, l.bandwidth);
                if (od.kind == DeviceKind::Nic)
                {
                    bool better =
                        f.nic < 0 || (od.localIndex == f.local &&
                                      topo->GetDevice(uint32_t(f.nic)).localIndex != f.local);
                    if (better)
                    {
                        f.nic = other;
                        f.nicPath = narrow;
                        foundDepth = v.depth + 1;
                    }
                }
                else if (od.kind == DeviceKind::PcieSwitch && v.depth < 3)
                {
                    queue.push_back({other, v.depth + 1, narrow});
                }
            }
        }
        if (f.nic >= 0)
        {
            for (uint32_t li : m_deviceLinks[uint32_t(f.nic)])
            {
                const Link& l = topo->Links()[li];
                if (l.kind == LinkKind::Net)
                {
                    f.nicBw = std::max(f.nicBw, l.bandwidth);
                }
            }
        }
    }
    c.nNodes = uint32_t(byNode.size());
    c.ppn = c.nRanks / c.nNodes;
    c.minCompCap = std::numeric_limits<int>::max();
    c.maxCompCap = 0;
    c.nvswitch = true;
    bool nvlinkAll = true;
    double nvlinkEff = 0;
    double ctaBw = std::numeric_limits<double>::infinity();
    for (const GpuFacts& f : facts)
    {
        c.minCompCap = std::min(c.minCompCap, f.cc);
        c.maxCompCap = std::max(c.maxCompCap, f.cc);
        c.nvswitch = c.nvswitch && f.nvswitch;
        nvlinkAll = nvlinkAll && f.nvlink > 0;
    }
    // NVLink payload efficiency: NCCL's per-link figure over the GPU's per-link line rate.
    {
        const GpuFacts& f0 = facts[0];
        nvlinkEff = m_nvlinkEfficiency > 0
                        ? m_nvlinkEfficiency
                        : std::min(1.0, NcclNvlinkPerLink(c.minCompCap) * 1e9 / f0.rawPerLink);
        ctaBw = m_channelBandwidth > 0 ? m_channelBandwidth : NcclNvlinkPerLink(c.minCompCap) * 1e9;
    }
    c.nvlinkEfficiency = nvlinkEff;
    c.channelBandwidth = ctaBw;
    const NcclTables& tables = GetTables();
    const int ccIdx = CompCapIndex(c.minCompCap);
    c.nvlsEfficiency = m_nvlsEfficiency > 0 ? m_nvlsEfficiency : tables.nvlsEff[ccIdx];
    if (tables.nvlsEff[ccIdx] == 0 && m_nvlsEfficiency == 0)
    {
        c.nvlsEfficiency = 0.85;
    }

    // Intra-node bandwidth per GPU as NCCL sees it (GB/s).
    double intraTotal = std::numeric_limits<double>::infinity();
    double pathBw = std::numeric_limits<double>::infinity();
    double nicBwMin = std::numeric_limits<double>::infinity();
    for (const GpuFacts& f : facts)
    {
        double bw = nvlinkAll ? f.nvlink * nvlinkEff / 1e9 : f.pcie * kNcclPcieFactor / 1e9;
        intraTotal = std::min(intraTotal, bw);
        if (f.nic >= 0)
        {
            pathBw = std::min(pathBw, std::min(f.nicBw / 1e9, f.nicPath * kNcclPcieFactor / 1e9));
            nicBwMin = std::min(nicBwMin, f.nicBw / 1e9);
        }
        else
        {
            pathBw = std::min(pathBw, 0.1);
            nicBwMin = std::min(nicBwMin, 0.1);
        }
    }
    if (!std::isfinite(intraTotal) || intraTotal <= 0)
    {
        intraTotal = 0.1;
    }
    uint32_t nicsPerNode = std::numeric_limits<uint32_t>::max();
    for (const auto& [node, ranks] : byNode)
    {
        std::set<int64_t> nics;
        for (uint32_t r : ranks)
        {
            if (facts[r].nic >= 0)
            {
                nics.insert(facts[r].nic);
            }
        }
        nicsPerNode = std::min<uint32_t>(nicsPerNode, std::max<uint32_t>(1, uint32_t(nics.size())));
    }

    auto duplicate = [&](NcclCommInfo::Graph& g)
    {
        // Search rule: a solution is doubled (per-channel bandwidth halved) unless its speed is
        // below 25 GB/s or, on sm90+, below 50 GB/s with more than 4 channels.
        if (g.nChannels == 0 || g.bwIntra < 25 ||
            (c.minCompCap > 80 && g.bwIntra < 50 && g.nChannels > 4))
        {
            return;
        }
        int n = std::min(2 * g.nChannels, kSearchMaxChannels);
        double f = double(g.nChannels) / n;
        g.nChannels = n;
        g.bwIntra *= f;
        g.bwInter *= f;
    };

    if (c.nRanks > 1)
    {
        const auto& intra = IntraSpeeds(c.minCompCap, m_ncclVersion);
        const auto& inter = InterSpeeds(c.minCompCap);
        NcclCommInfo::Graph ring;
        ring.nvlinkIntra = nvlinkAll;
        if (c.nNodes == 1)
        {
            double best = 0;
            for (double s : intra)
            {
                if (s > intraTotal + 1e-9)
                {
                    continue;
                }
                int n = std::min(kSearchMaxChannels, int(std::floor(intraTotal / s + 1e-9)));
                if (n * s > best + 1e-9)
                {
                    best = n * s;
                    ring.nChannels = n;
                    ring.bwIntra = ring.bwInter = s;
                }
            }
            if (ring.nChannels == 0)
            {
                ring.nChannels = 1;
                ring.bwIntra = ring.bwInter = 0.1;
            }
        }
        else
        {
            double best = 0;
            for (double s : inter)
            {
                if (s > pathBw + 1e-9)
                {
                    continue;
                }
                int n = int(nicsPerNode) * std::max(0, int(std::floor(nicBwMin / s + 1e-9)));
                if (c.ppn > 1)
                {
                    n = std::min(n, int(std::floor(intraTotal / (s * (c.ppn - 1) / c.ppn) + 1e-9)));
                }
                n = std::min(n, kSearchMaxChannels);
                if (n > 0 && n * s > best + 1e-9)
                {
                    best = n * s;
                    ring.nChannels = n;
                    ring.bwIntra = ring.bwInter = s;
                }
            }
            if (ring.nChannels == 0)
            {
                ring.nChannels = 1;
                ring.bwIntra = ring.bwInter = 0.1;
            }
        }
        NcclCommInfo::Graph tree = ring;
        if (c.nNodes > 1)
        {
            // Pass 2 raises a tree's intra bandwidth (up to twice the inter one) where the
            // NVLink chain has room for it.
            for (double s : intra)
            {
                if (s > tree.bwIntra && s <= 2 * tree.bwInter &&
                    tree.nChannels * s <= intraTotal + 1e-9)
                {
                    tree.bwIntra = s;
                    break;
                }
            }
        }
        duplicate(ring);
        duplicate(tree);
        // LL128: NVLink (or NVLink through one GPU) inside nodes, NIC within a PCIe switch or,
        // on sm90+, reached through PXN; same compute capability or sm90+.
        bool ll128 =
            nvlinkAll && (c.minCompCap == c.maxCompCap || c.minCompCap >= 90) && c.minCompCap >= 70;
        if (!tables.modern)
        {
            ll128 = ll128 && c.minCompCap == c.maxCompCap &&
                    (c.minCompCap == 70 || c.minCompCap == 80 || c.minCompCap == 90);
        }
        ring.ll128 = tree.ll128 = ll128;
        c.ring = ring;
        c.tree = tree;

        // NVLS graph: one channel per head GPU (all GPUs on one node, the NIC GPUs across
        // nodes); every GPU link carries bw per head and the head's 2 bw.
        const bool nvlsEnv = m_config.nvlsEnable == -1 ? m_nvlsMulticast : m_config.nvlsEnable != 0;
        const bool nvlsHw = c.nvswitch && c.minCompCap >= 90 && nvlsEnv;
        if (nvlsHw && c.ppn >= 2)
        {
            NcclCommInfo::Graph nv;
            nv.nvlinkIntra = true;
            const uint32_t heads = c.nNodes == 1 ? std::min<uint32_t>(32, c.ppn)
                                                 : std::min<uint32_t>(c.ppn, nicsPerNode);
            const auto& speeds = c.nNodes == 1 ? intra : inter;
            for (double s : speeds)
            {
                if ((heads + 1) * s <= intraTotal + 1e-9 && (c.nNodes == 1 || s <= pathBw + 1e-9))
                {
                    nv.bwIntra = nv.bwInter = s;
                    break;
                }
            }
            if (nv.bwIntra > 0)
            {
                nv.nChannels = int(heads);
                double top = c.nNodes == 1 ? intra.front() : 0;
                if (c.nNodes > 1)
                {
                    for (double s : inter)
                    {
                        if (s <= pathBw + 1e-9)
                        {
                            top = s;
                            break;
                        }
                    }
                }
                nv.bwInter = std::max(nv.bwIntra, std::min(2 * nv.bwIntra, top));
            }
            if (nv.nChannels >= 2)
            {
                c.nvlsGraph = nv;
                c.nvls = true;
            }
        }
        c.pat = (m_config.patEnable != 0) && c.minCompCap >= 60 && c.nNodes == c.nRanks &&
                (tables.modern || m_config.patEnable == 1);

        // comm.nChannels: min(ring, tree), doubled in Postset (channel c and c+n share a ring and
        // use the two trees), doubled again on sm90+ multi-node rings faster than 45 GB/s with
        // fewer than 16 channels; then NCCL_MAX_NCHANNELS / NCCL_MIN_NCHANNELS.
        int ch = std::min(ring.nChannels, tree.nChannels);
        ch = std::min(kMaxChannels, 2 * ch);
        if (c.minCompCap >= 90 && c.nNodes > 1 && c.ring.bwIntra > 45 && ch < 16)
        {
            ch = std::min(kMaxChannels, 2 * ch);
        }
        const int maxCtas = m_config.maxChannels > 0 ? m_config.maxChannels : kMaxChannels;
        const int minCtas = m_config.minChannels > 0 ? m_config.minChannels : 1;
        ch = std::min(ch, maxCtas);
        ch = std::min(kMaxChannels, std::max(ch, minCtas));
        c.channels = ch;

        int nvlsCh = 16;
        if (c.minCompCap >= 100)
        {
            nvlsCh = c.nNodes == 1 ? 24 : 32;
            if (c.nNodes > 1)
            {
                if (c.nNodes == 2 && nicBwMin >= 48)
                {
                    nvlsCh = 32;
                }
                else if (nicBwMin >= 96)
                {
                    nvlsCh = c.ppn <= 8 ? 24 : 32;
                }
                else if (nicBwMin >= 48)
                {
                    nvlsCh = 24;
                }
            }
        }
        if (m_config.nvlsChannels > 0)
        {
            nvlsCh = m_config.nvlsChannels;
        }
        c.nvlsChannels = std::min(maxCtas, std::max(minCtas, nvlsCh));

        // p2p: chunk, channels per peer (NVLink peers 2 x links, PCI peers 2, network peers
        // ceil(NIC GB/s / 14)), rounded to powers of two.
        c.p2pChunkBytes = c.nNodes > 1 ? 131072 : (nvlinkAll ? 524288 : 131072);
        int perPeer;
        if (c.nNodes > 1)
        {
            perPeer = std::max(1, int(std::ceil(nicBwMin / 14.0)));
        }
        else if (nvlinkAll)
        {
            perPeer = 2 * std::max(1, int(intraTotal / NcclNvlinkPerLink(c.minCompCap) + 1e-9));
        }
        else
        {
            perPeer = 2;
        }
        c.p2pChannels = int(Pow2Up(uint32_t(std::min(c.channels, kMaxChannels))));
        perPeer = std::min(int(Pow2Up(uint32_t(perPeer))), c.p2pChannels);
        if (c.nNodes > 1)
        {
            const int maxPeers = int(c.nRanks) - 1;
            while (perPeer > 1 && perPeer * ((maxPeers + 7) / 8) > c.p2pChannels)
            {
                perPeer /= 2;
            }
        }
        c.p2pChannelsPerPeer = perPeer;
    }
    else
    {
        c.channels = 1;
        c.nvlsChannels = 1;
        c.p2pChannels = 1;
        c.p2pChannelsPerPeer = 1;
        c.p2pChunkBytes = 524288;
    }
    NS_LOG_INFO("comm of " << c.nRanks << " ranks on " << c.nNodes << " nodes: sm" << c.minCompCap
                           << ", ring " << c.ring.nChannels << "x" << c.ring.bwIntra << "/"
                           << c.ring.bwInter << ", tree " << c.tree.nChannels << "x"
                           << c.tree.bwIntra << "/" << c.tree.bwInter << ", nvls "
                           << c.nvlsGraph.nChannels << "x" << c.nvlsGraph.bwIntra << "/"
                           << c.nvlsGraph.bwInter << ", channels " << c.channels << ", nvls "
                           << c.nvlsChannels);
    return c;
}

// --------------------------------------------------------------------------------------------
// NCCL's cost model

void
CollectiveModel::ComputeCosts(const CollectiveCall& call, const NcclCommInfo& comm,
                              NcclCostTable& table, bool applyEnv) const
{
    const NcclTables& t = GetTables();
    const int coll = FuncOf(call.kind);
    for (int a = 0; a < kAlgos; ++a)
    {
        for (int p = 0; p < kProtos; ++p)
        {
            table.latencyUs[a][p] = 0;
            table.bandwidthGBps[a][p] = 0;
            table.timeUs[a][p] = -1;
        }
    }
    if (coll < 0 || comm.nRanks <= 1)
    {
        return;
    }
    const int nRanks = int(comm.nRanks);
    const int nNodes = int(comm.nNodes);
    const double ppnF = double(nRanks) / nNodes;
    const int ppn = int(comm.ppn);
    const int ccIdx = CompCapIndex(comm.minCompCap);
    const bool amd = Lower(m_cpuVendor) == "amd";
    const int index2 = nNodes <= 2 ? nNodes - 1 : 2;
    const int index1 = nNodes == 1 ? ccIdx : (amd ? 1 : 0);
    const double llMaxBw = t.llMaxBw[index1][index2];
    const double perChMaxTree = t.perChMaxTree[ccIdx][index2];
    const double perChMaxRingLL128 = t.perChMaxRingLL128[ccIdx][index2];
    const double perChMaxTreeLL128 = t.perChMaxTreeLL128[ccIdx][index2];
    const double perChMaxNvlsTree = t.perChMaxNvlsTree[ccIdx][index2];
    const double nvlsEff = t.nvlsEff[ccIdx];
    const double netOverheadBase = amd ? 2.0 : 1.0;

    const int nsteps = coll == kAllReduce                               ? 2 * (nRanks - 1)
                       : (coll == kReduceScatter || coll == kAllGather) ? nRanks - 1
                                                                        : nRanks;
    int nInterSteps;
    if (t.modern)
    {
        nInterSteps = nNodes == 1                                      ? 0
                      : coll == kAllReduce                             ? 2 * (nNodes - 1)
                      : (coll == kReduceScatter || coll == kAllGather) ? nNodes - 1
                                                                       : nNodes;
    }
    else
    {
        nInterSteps = coll == kAllReduce ? (nNodes > 1 ? 2 * nNodes : 0)
                      : (coll == kReduceScatter || coll == kAllGather) ? nNodes - 1
                                                                       : nNodes;
    }

    auto graphOf = [&](int a) -> const NcclCommInfo::Graph&
    {
        static const NcclCommInfo::Graph none;
        switch (a)
        {
        case kTree:
        case kPat:
            return comm.tree;
        case kRing:
            return comm.ring;
        case kNvls:
        case kNvlsTree:
            return comm.nvlsGraph;
        default:
            return none; // CollNet: no SHARP-capable switches in the topology
        }
    };
    auto supported = [&](int a)
    {
        switch (coll)
        {
        case kBroadcast:
        case kReduce:
            return a == kRing;
        case kAllGather:
        case kReduceScatter:
            return a == kRing || a == kNvls || a == kCollNetDirect || (t.modern && a == kPat);
        case kAllReduce:
            return a != kPat;
        }
        return false;
    };

    for (int a = 0; a < kAlgos; ++a)
    {
        if (!supported(a))
        {
            continue;
        }
        const NcclCommInfo::Graph& g = graphOf(a);
        for (int p = 0; p < kProtos; ++p)
        {
            if ((a == kNvls || a == kNvlsTree || a == kPat || a == kCollNetDirect ||
                 a == kCollNetChain) &&
                p != kSimple)
            {
                continue;
            }
            if (g.nChannels == 0)
            {
                continue;
            }
            const bool collnet = a == kCollNetDirect || a == kCollNetChain;
            double bw = (nNodes <= 2 || collnet) ? g.bwIntra : g.bwInter;
            double busBw;
            if (t.modern)
            {
                if (a == kNvls || a == kNvlsTree)
                {
                    if (g.nChannels < 2)
                    {
                        continue;
                    }
                    double intraBw = g.bwIntra * nvlsEff * (g.nChannels - 1) / g.nChannels;
                    intraBw *= coll == kAllReduce ? 2.0 : (ppnF - 1) / ppnF;
                    double interBw = g.bwInter * ((a == kNvlsTree && nNodes <= 2) ? 2.0 : 1.0);
                    bw = std::min(intraBw, interBw);
                    if (a == kNvlsTree)
                    {
                        bw = std::min(bw, perChMaxNvlsTree);
                    }
                }
                busBw = g.nChannels * bw;
                if (a == kRing && p == kLL)
                {
                    busBw = std::min(llMaxBw, 0.5 * busBw);
                }
                if (a == kRing && p == kLL128)
                {
                    busBw = std::min(0.92 * busBw, g.nChannels * perChMaxRingLL128);
                }
                if (a == kTree && coll == kAllReduce)
                {
                    busBw = std::min(0.92 * busBw, g.nChannels * perChMaxTree);
                }
                if (a == kTree && p == kLL)
                {
                    busBw = std::min(busBw / 3.8, llMaxBw);
                }
                if (a == kTree && p == kLL128)
                {
                    busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                                     g.nChannels * perChMaxTreeLL128);
                }
                if (a == kPat)
                {
                    busBw *= 0.75;
                }
                double ratio = 1.0;
                if (a == kRing || ((a == kNvls || a == kNvlsTree) && coll == kAllReduce))
                {
                    ratio = double(nRanks) / nsteps;
                }
                else if (a == kTree || a == kCollNetDirect || a == kCollNetChain)
                {
                    ratio = (coll == kAllReduce) ? 0.5 : 1.0;
                }
                busBw *= ratio;
            }
            else
            {
                if (a == kNvls)
                {
                    bw = std::min(g.bwIntra, g.bwInter);
                }
                if (a == kNvlsTree)
                {
                    bw = std::min(g.bwIntra, nNodes <= 2 ? g.bwInter : g.bwInter / 2);
                }
                busBw = g.nChannels * bw;
                if (a == kRing && p == kLL)
                {
                    double f =
                        (nNodes > 1 || coll == kAllReduce || coll == kReduce) ? 0.25 : 1.0 / 3.0;
                    busBw = std::min(llMaxBw, busBw * f);
                }
                if (a == kRing && p == kLL128)
                {
                    busBw =
                        std::min(busBw * (ppnF < 2 ? 0.7 : 0.92), g.nChannels * perChMaxRingLL128);
                }
                if (a == kTree)
                {
                    busBw = std::min(busBw * .92, g.nChannels * perChMaxTree);
                }
                if (a == kTree && p == kLL)
                {
                    busBw = std::min(busBw / 3.8, llMaxBw);
                }
                if (a == kTree && p == kLL128)
                {
                    busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                                     g.nChannels * perChMaxTreeLL128);
                }
                double ratio = 1.0;
                if (a == kRing)
                {
                    ratio = double(nRanks) / nsteps;
                }
                else if (a == kNvls || a == kNvlsTree)
                {
                    ratio = 5.0 / 6.0;
                }
                else
                {
                    ratio = 0.5;
                }
                busBw *= ratio;
            }
            table.bandwidthGBps[a][p] = busBw;

            // Latency.
            const int intraHw = g.nvlinkIntra ? kHwNvlink : kHwPci;
            double intraLat = t.hwLat[intraHw][a][p];
            double interLat = t.hwLat[kHwNet][a][p];
            if (t.modern && ppn == 1)
            {
                interLat = t.hwLat[kHwNet][kTree][p];
            }
            double lat = t.baseLat[a][p];
            if (a == kRing)
            {
                if (coll == kBroadcast || coll == kReduce)
                {
                    double hwl = t.hwLat[nNodes == 1 ? intraHw : kHwNet][kRing][p];
                    lat += hwl; // rings are the same on every channel (sameChannels)
                }
                else
                {
                    if (nNodes > 1)
                    {
                        double overhead = netOverheadBase * (p == kSimple ? 3 : 1);
                        intraLat = std::max(intraLat, overhead);
                    }
                    lat += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat;
                }
            }
            else if (a == kTree)
            {
                lat += 2 * ((ppn - 1) * intraLat + Log2i(uint64_t(nNodes)) * interLat);
            }
            else if (a == kNvls)
            {
                lat = intraLat + (nNodes > 1 ? interLat : 0);
            }
            else if (a == kNvlsTree)
            {
                lat += intraLat + 2 * Log2i(uint64_t(nNodes)) * interLat;
            }
            else if (a == kPat)
            {
                lat = 8.0 + Log2i(uint64_t(nNodes)) * interLat / 3.5 + 2.8 * nRanks;
            }
            table.latencyUs[a][p] = lat;
        }
    }

    // Enable rules: LL128 platform rule, NVLSTree only across nodes, CollNet (and multi-node
    // NVLS, which needs it) without SHARP switches, PAT only with one rank per node.
    bool algoMask[kFuncs][kAlgos];
    bool protoMask[kFuncs][kProtos];
    bool protoNamed[kFuncs];
    ParseFunctionLists<kAlgos>("NCCL_ALGO", applyEnv ? m_config.algo : "", kAlgoNames, algoMask);
    ParseFunctionLists<kProtos>("NCCL_PROTO", applyEnv ? m_config.proto : "", kProtoNames,
                                protoMask, protoNamed);
    for (int a = 0; a < kAlgos; ++a)
    {
        const NcclCommInfo::Graph& g = graphOf(a);
        bool algoOn = algoMask[coll][a];
        if (a == kNvlsTree && nNodes == 1)
        {
            algoOn = false;
        }
        if (a == kCollNetDirect || a == kCollNetChain || (a == kNvls && nNodes > 1))
        {
            algoOn = false;
        }
        if ((a == kNvls || a == kNvlsTree) && !comm.nvls)
        {
            algoOn = false;
        }
        if (a == kPat && !comm.pat)
        {
            algoOn = false;
        }
        for (int p = 0; p < kProtos; ++p)
        {
            bool on = algoOn && protoMask[coll][p];
            if (p == kLL128 && !g.ll128 && !protoNamed[coll])
            {
                // LL128 defaults to "auto": on only where NCCL's platform rule allows it. Once
                // NCCL_PROTO is given for the function, the list decides (as in NCCL, where
                // "^LL" enables LL128 explicitly).
                on = false;
            }
            if (!on)
            {
                table.bandwidthGBps[a][p] = 0;
            }
        }
    }

    // Time estimate per algorithm/protocol.
    const uint64_t nBytes = call.bytes;
    for (int a = 0; a < kAlgos; ++a)
    {
        for (int p = 0; p < kProtos; ++p)
        {
            double bw = table.bandwidthGBps[a][p];
            double lat = table.latencyUs[a][p];
            if (bw <= 0)
            {
                table.timeUs[a][p] = -1;
                continue;
            }
            int logSize = Log2i(nBytes >> 6);
            int entries = int(t.treeCorrection[p].size());
            int limit = t.modern ? 23 : entries;
            if (a == kTree && coll == kAllReduce && logSize >= 0 && logSize < limit &&
                logSize < entries)
            {
                bw *= t.treeCorrection[p][logSize];
            }
            if (t.modern && a == kNvlsTree && coll == kAllReduce && comm.minCompCap >= 100 &&
                logSize >= 0 && logSize < 24 && logSize < entries)
            {
                bw *= t.treeCorrection[p][logSize];
            }
            if (a == kRing && p == kSimple && nNodes > 1 && coll == kAllReduce &&
                double(nBytes) / (double(comm.channels) * nRanks) >= 64)
            {
                lat *= comm.minCompCap < 80 ? 1.9 : 1.4;
            }
            table.timeUs[a][p] = lat + double(nBytes) / (1000.0 * bw);
        }
    }
}

NcclCostTable
CollectiveModel::CostTable(const CollectiveCall& call) const
{
    NcclCostTable table;
    ComputeCosts(call, DescribeCommunicator(call.gpus), table, true);
    return table;
}

namespace
{
/// Channels NCCL gives one point-to-point operation (scheduleP2pTasksToPlan): start at
/// nChannelsMin (channels per peer halved until nChannelsMin x nRanks fits the p2p channels), at
/// least chunk/8 (one node) or chunk/2 (across nodes) per channel, doubled while parts exceed
/// 32 x chunk (one node) or one chunk (across nodes), up to twice half the per-peer channels.
int
P2pOpChannels(const NcclCommInfo& comm, uint64_t bytes)
{
    const uint64_t chunk = comm.p2pChunkBytes;
    const bool multi = comm.nNodes > 1;
    const uint64_t minPart = multi ? chunk / 2 : chunk / 8;
    const uint64_t maxPart = multi ? chunk : 32 * chunk;
    int nMin = std::max(comm.p2pChannelsPerPeer, 1);
    while (nMin > 1 && uint64_t(nMin) * comm.nRanks > uint64_t(comm.p2pChannels))
    {
        nMin /= 2;
    }
    int nCh = int(
        std::min<uint64_t>(uint64_t(nMin), std::max<uint64_t>(1, (bytes + minPart - 1) / minPart)));
    while (bytes / uint64_t(nCh) > maxPart && nCh <= comm.p2pChannelsPerPeer / 2)
    {
        nCh *= 2;
    }
    return std::max(nCh, 1);
}

constexpr int kP2pWarps = 20;         //!< NCCL_MAX_NTHREADS (640) / WARP_SIZE: the p2p kernel's CTA
constexpr int kP2pWorksPerBatch = 8;  //!< NCCL_MAX_DEV_WORK_P2P_PER_BATCH
constexpr int kP2pLoneSendWarps = 10; //!< send warps of a lone send+recv work (20 -> 10 + 9)
constexpr int kP2pLoneRecvWarps = 9;

/// NCCL's p2p schedule (init.cc ncclP2pSchedule): round -> (node delta, local delta), the same
/// for every rank; in round k a rank sends to (node + nodeDelta, local + localDelta) and receives
/// from (node - nodeDelta, local - localDelta). Both loops walk the deltas 0, 1, 3, 6, 10, ...
/// (mod the next power of two), skipping those out of range. Returns roundOf[nodeDelta * nLocals
/// + localDelta].
std::vector<int>
P2pRounds(uint32_t nNodes, uint32_t nLocals)
{
    std::vector<int> roundOf(size_t(nNodes) * nLocals, -1);
    const uint32_t nodesPow2 = Pow2Up(nNodes);
    const uint32_t localsPow2 = Pow2Up(nLocals);
    int round = 0;
    uint32_t nodeRound = 0;
    uint32_t nodeDelta = 0;
    do
    {
        if (nodeDelta < nNodes)
        {
            uint32_t localRound = 0;
            uint32_t localDelta = 0;
            do
            {
                if (localDelta < nLocals)
                {
                    roundOf[size_t(nodeDelta) * nLocals + localDelta] = round++;
                }
                ++localRound;
                localDelta = (localDelta + localRound) & (localsPow2 - 1);
            } while (localRound != localsPow2);
        }
        ++nodeRound;
        nodeDelta = (nodeDelta + nodeRound) & (nodesPow2 - 1);
    } while (nodeRound != nodesPow2);
    return roundOf;
}

/// First p2p channel of a round (channel.h ncclP2pChannelBaseForRound): the round itself on one
/// node; across nodes nodeDelta x ceil(nLocals / 8) + localDelta / 8 (rounds of one batch group
/// share a base); bit-reversed over log2(p2pnChannels) bits. Part p of an op runs on channel
/// (base + p) mod p2pnChannels (device.h ncclP2pChannelForPart).
int
P2pChannelBase(int round, uint32_t nNodes, uint32_t nLocals, int p2pChannels)
{
    int base = round;
    if (nNodes > 1)
    {
        const int group = round / int(nLocals);
        const int local = round % int(nLocals);
        base = group * int((nLocals + kP2pWorksPerBatch - 1) / kP2pWorksPerBatch) +
               local / kP2pWorksPerBatch;
    }
    int bits = 0;
    while ((1 << bits) < p2pChannels)
    {
        ++bits;
    }
    base &= p2pChannels - 1;
    int rev = 0;
    for (int b = 0; b < bits; ++b)
    {
        rev |= ((base >> b) & 1) << (bits - 1 - b);
    }
    return rev;
}

/// Warps one work gets when `works` works share a p2p CTA (sendrecv.h RunWorkBatch::run):
/// nWarps / works each; with both a send and a recv part on this channel the recv gets
/// (w - 1) / 2 (w / 2 when w <= 4) and the send the rest of the pair, else all w go one way.
void
P2pWarps(int works, bool send, bool recv, int* sendWarps, int* recvWarps)
{
    const int w = kP2pWarps / std::max(works, 1);
    if (send && recv)
    {
        *recvWarps = w <= 4 ? w / 2 : (w - 1) / 2;
        *sendWarps = w <= 4 ? *recvWarps : *recvWarps + 1;
    }
    else
    {
        *sendWarps = send ? w : 0;
        *recvWarps = recv ? w : 0;
    }
}
} // namespace

CollectivePlan
CollectiveModel::Choose(const CollectiveCall& call) const
{
    return ChooseFor(call, DescribeCommunicator(call.gpus));
}

CollectivePlan
CollectiveModel::ChooseFor(const CollectiveCall& call, const NcclCommInfo& comm) const
{
    CollectivePlan plan;
    if (call.kind == CollectiveKind::SendRecv)
    {
        // Reported: the largest transfer's channels (each transfer picks its own protocol).
        plan.algorithm = NcclAlgorithm::Ring;
        plan.protocol = NcclProtocol::Simple;
        uint64_t largest = 0;
        for (const auto& tr : call.transfers)
        {
            largest = std::max(largest, tr.bytes);
        }
        plan.channels = P2pOpChannels(comm, largest);
        return plan;
    }
    if (comm.nRanks <= 1)
    {
        return plan; // Ring/Simple, nothing to move
    }
    NcclCostTable table;
    ComputeCosts(call, comm, table, true);
    int bestA = -1;
    int bestP = -1;
    double best = std::numeric_limits<double>::infinity();
    auto pick = [&]
    {
        for (int a = 0; a < kAlgos; ++a)
        {
            for (int p = 0; p < kProtos; ++p)
            {
                double tt = table.timeUs[a][p];
                if (tt >= 0 && tt < best)
                {
                    best = tt;
                    bestA = a;
                    bestP = p;
                }
            }
        }
    };
    pick();
    if (bestA < 0)
    {
        // Nothing the environment allows can run here (e.g. NCCL_ALGO=CollNetDirect without
        // SHARP switches, or NVLS without NVSwitch): fall back to NCCL's own choice.
        if ((m_warnedFallbacks++ % 1000) == 0)
        {
            NS_LOG_WARN("NCCL_ALGO='" << m_config.algo << "' NCCL_PROTO='" << m_config.proto
                                      << "' leave no algorithm/protocol this topology supports for "
                                      << ToString(call.kind)
                                      << " (CollNet needs SHARP-capable switches, NVLS an NVSwitch "
                                         "and sm90+); using NCCL's default choice");
        }
        ComputeCosts(call, comm, table, false);
        pick();
    }
    if (bestA < 0)
    {
        bestA = kRing;
        bestP = kSimple;
        best = 0;
    }
    plan.algorithm = NcclAlgorithm(bestA);
    plan.protocol = NcclProtocol(bestP);
    plan.ncclEstimateUs = best;
    plan.channels = OpChannels(call, comm, plan.algorithm, plan.protocol);
    NS_LOG_DEBUG(ToString(call.kind)
                 << " " << call.bytes << " B on " << comm.nRanks << " ranks -> "
                 << ToString(plan.algorithm) << "/" << ToString(plan.protocol) << " x"
                 << plan.channels << " (NCCL estimate " << plan.ncclEstimateUs << " us)");
    return plan;
}

int
CollectiveModel::OpChannels(const CollectiveCall& call, const NcclCommInfo& comm,
                            NcclAlgorithm algorithm, NcclProtocol protocol) const
{
    const int a = int(algorithm);
    const int p = int(protocol);
    const uint32_t n = comm.nRanks;
    int nc;
    if (a == kNvls)
    {
        nc = comm.nNodes == 1 ? comm.nvlsChannels : std::min(comm.nvlsChannels, comm.channels);
    }
    else if (a == kNvlsTree)
    {
        nc = comm.nvlsChannels;
    }
    else
    {
        // Fewer channels for small operations: while the op has less than a channel's worth of
        // bytes per thread, drop a channel (thresholds: LL 8 B/thread x nRanks on rings, LL128
        // 8, Simple 64; threads 512, LL128 640).
        nc = comm.channels;
        int nt = p == kLL128 ? 640 : 512;
        if (a == kRing && p == kSimple && comm.ring.bwIntra * comm.ring.nChannels <= 12)
        {
            nt = 256;
        }
        uint64_t thr = p == kSimple ? 64 : 8;
        if (a == kRing && p == kLL)
        {
            thr *= n;
        }
        while (nc >= 2 && call.bytes < uint64_t(nc) * nt * thr)
        {
            --nc;
        }
    }
    // The scheduler cuts an op into cells of 32 KiB of traffic and fills channels with them.
    const int f = FuncOf(call.kind);
    uint64_t perRank = (f == kAllGather || f == kReduceScatter)
                           ? call.bytes / std::max<uint32_t>(n, 1)
                           : call.bytes;
    uint64_t perByte = f == kAllReduce ? 2 : (f == kAllGather || f == kReduceScatter) ? n : 1;
    uint64_t traffic = perRank * perByte * (p == kLL ? 4 : 1);
    uint64_t cells =
        std::max<uint64_t>(1, (traffic + kMinTrafficPerChannel - 1) / kMinTrafficPerChannel);
    nc = int(std::min<uint64_t>(uint64_t(std::max(nc, 1)), cells));
    return std::max(nc, 1);
}

double
CollectiveModel::PlanLatencyUs(const CollectiveCall& call, const CollectivePlan& plan) const
{
    const NcclCommInfo comm = DescribeCommunicator(call.gpus);
    const int a = int(plan.algorithm);
    const int p = int(plan.protocol);
    const int f = FuncOf(call.kind);
    if (f < 0 || comm.nRanks <= 1)
    {
        return 0;
    }
    if (a == kRing && p != kLL && (f == kBroadcast || f == kReduce))
    {
        // A Simple chain forwards whole steps, each hop after its own handshake: every hop adds
        // its step latency. (LL and LL128 forward line by line, so back-to-back operations stream
        // through the chain and NCCL's one-hop figure for identical rings holds.)
        const NcclTables& t = GetTables();
        const int intraHw = comm.ring.nvlinkIntra ? kHwNvlink : kHwPci;
        return t.baseLat[kRing][p] + (comm.nNodes - 1) * t.hwLat[kHwNet][kRing][p] +
               (comm.nRanks - comm.nNodes) * t.hwLat[intraHw][kRing][p];
    }
    NcclCostTable table;
    ComputeCosts(call, comm, table, false);
    return table.latencyUs[a][p];
}

// --------------------------------------------------------------------------------------------
// Timing: the chosen data movement as flows

/// Completion bookkeeping shared by the flows of one call.
struct CollectiveModel::FlowJob
{
    DoneCallback done;
    // Collectives: all ranks finish with the last flow.
    uint64_t outstanding = 0;
    uint32_t ranks = 0;
    // SendRecv: per rank.
    std::vector<uint32_t> rankOutstanding;

    void FinishAll()
    {
        for (uint32_t r = 0; r < ranks; ++r)
        {
            if (!done.IsNull())
            {
                done(r);
            }
        }
    }
};

namespace
{
/// Per-flow description before the efficiency of the bottleneck link class is applied.
struct Pipe
{
    std::vector<uint32_t> path; //!< directed channels, a channel listed k times is used k times
    double payload = 0;         //!< bytes of data each listed channel carries
    double payloadCap = 0;      //!< bytes/s of data the senders (CTAs) can issue, 0: none
    bool nvls = false;          //!< NVLink hops run multimem operations
    /// The hops are not one chain (a tree, a switch's fan-in and fan-out): the latency is the
    /// algorithm's alone, not the sum of the hops' latencies.
    bool branching = false;
    /// Store-and-forward pipeline: a chunk crosses `stages` stages at the flow's rate one after
    /// the other, so the last chunk leaves (stages - 1) chunk-times after a pure fluid flow would
    /// (charged as that many more chunks of payload).
    uint32_t stages = 1;
    double chunk = 0;
};
} // namespace

namespace
{
void
ScheduleAt(Time at, std::function<void()> fn)
{
    Time delay = at > Simulator::Now() ? at - Simulator::Now() : Time(0);
    Simulator::Schedule(delay, [fn]() { fn(); });
}
} // namespace

namespace
{
/// NCCL's chunk size for NVLS (calcCollChunking): at most NCCL_NVLS_CHUNKSIZE (128 KiB), smaller
/// when the op has few chunks per head and channel (ops = channels x heads).
double
NvlsChunk(uint64_t nBytes, int channels, uint32_t heads)
{
    double chunk = 128 * 1024;
    const double ops = double(channels) * heads;
    if (nBytes < 64 * ops * chunk)
    {
        chunk = std::min(chunk, 64.0 * 1024);
    }
    if (nBytes < 8 * ops * chunk)
    {
        chunk = std::min(chunk, 32.0 * 1024);
    }
    if (nBytes < 2 * ops * chunk)
    {
        chunk = std::min(chunk, 16.0 * 1024);
    }
    return chunk;
}

/// NVLSTree: NVLS chunk capped at 64 KiB from 4 nodes, then 256/128/64/32 KiB below
/// 32/16/4/1 x ops x chunk.
double
NvlsTreeChunk(uint64_t nBytes, int channels, uint32_t heads, uint32_t nNodes)
{
    double chunk = 128 * 1024;
    if (nNodes >= 4)
    {
        chunk = 64 * 1024;
    }
    const double ops = double(channels) * heads;
    const double base = chunk;
    if (nBytes < 32 * ops * base)
    {
        chunk = std::min(chunk, 256.0 * 1024);
    }
    if (nBytes < 16 * ops * base)
    {
        chunk = std::min(chunk, 128.0 * 1024);
    }
    if (nBytes < 4 * ops * base)
    {
        chunk = std::min(chunk, 64.0 * 1024);
    }
    if (nBytes < 1 * ops * base)
    {
        chunk = std::min(chunk, 32.0 * 1024);
    }
    return chunk;
}

/// Tree Simple: one 512 KiB step per chunk, halved until the op has about 8 x depth chunks per
/// channel (down to 128 KiB), 4 x depth (64 KiB), depth (32 KiB).
double
TreeChunk(uint64_t nBytes, int channels, int depth)
{
    double chunk = 512 * 1024;
    auto per = [&] { return double(nBytes) / (channels * chunk); };
    while (per() < depth * 8 && chunk > 131072)
    {
        chunk /= 2;
    }
    while (per() < depth * 4 && chunk > 65536)
    {
        chunk /= 2;
    }
    while (per() < depth && chunk > 32768)
    {
        chunk /= 2;
    }
    return chunk;
}

uint32_t
CeilLog2(uint32_t n)
{
    uint32_t l = 0;
    while ((1u << l) < n)
    {
        ++l;
    }
    return l;
}
} // namespace

CollectivePlan
CollectiveModel::Start(const CollectiveCall& call, const std::vector<Time>& starts,
                       DoneCallback done)
{
    NS_ABORT_MSG_UNLESS(m_network, "CollectiveModel: SetNetworkModel before Start");
    NS_ABORT_MSG_UNLESS(starts.size() == call.gpus.size(),
                        "CollectiveModel: " << starts.size() << " start times for "
                                            << call.gpus.size() << " ranks");
    const NcclCommInfo comm = DescribeCommunicator(call.gpus);
    if (call.kind == CollectiveKind::SendRecv)
    {
        PostSendRecv(call, comm, starts, done);
        return ChooseFor(call, comm);
    }
    CollectivePlan plan = ChooseFor(call, comm);
    if (comm.nRanks <= 1 || call.bytes == 0)
    {
        // Nothing crosses a link: each rank is done when it arrives.
        for (uint32_t r = 0; r < starts.size(); ++r)
        {
            ScheduleAt(starts[r],
                       [done, r]()
                       {
                           if (!done.IsNull())
                           {
                               done(r);
                           }
                       });
        }
        return plan;
    }
    // A collective starts when its last rank arrives.
    Time start = *std::max_element(starts.begin(), starts.end());
    PostCollective(call, comm, plan, start, done);
    return plan;
}

std::vector<std::vector<uint32_t>>
CollectiveModel::RingOrders(const CollectiveCall& call, const NcclCommInfo& comm,
                            int channels) const
{
    (void)comm;
    Ptr<const Topology> topo = GetTopology();
    // Nodes in the order of their first rank; ranks of a node by local index (on NVSwitch nodes
    // NCCL's rings follow GPU index order). Channel c enters each node on the GPU of rail c:
    // even nodes walk up from it, odd nodes down back to it, so node boundaries stay on a rail
    // (as CollectiveHelper::RailAlignedRings).
    std::vector<std::vector<uint32_t>> nodes;
    std::map<int32_t, size_t> index;
    for (uint32_t r = 0; r < call.gpus.size(); ++r)
    {
        int32_t node = topo->GetDevice(call.gpus[r]).node;
        auto it = index.find(node);
        if (it == index.end())
        {
            it = index.emplace(node, nodes.size()).first;
            nodes.emplace_back();
        }
        nodes[it->second].push_back(r);
    }
    for (auto& ranks : nodes)
    {
        std::stable_sort(ranks.begin(), ranks.end(),
                         [&](uint32_t x, uint32_t y) {
                             return topo->GetDevice(call.gpus[x]).localIndex <
                                    topo->GetDevice(call.gpus[y]).localIndex;
                         });
    }
    std::vector<std::vector<uint32_t>> rings(channels);
    for (int c = 0; c < channels; ++c)
    {
        for (size_t k = 0; k < nodes.size(); ++k)
        {
            const auto& local = nodes[k];
            const uint32_t g = uint32_t(local.size());
            const uint32_t r = uint32_t(c) % g;
            for (uint32_t i = 0; i < g; ++i)
            {
                uint32_t idx = (k % 2 == 0) ? (r + i) % g : (r + g - 1 - i) % g;
                rings[c].push_back(local[idx]);
            }
        }
    }
    return rings;
}

void
CollectiveModel::PostCollective(const CollectiveCall& call, const NcclCommInfo& comm,
                                const CollectivePlan& plan, Time start, DoneCallback done)
{
    Ptr<const Topology> topo = GetTopology();
    const NcclTables& t = GetTables();
    const int a = int(plan.algorithm);
    const int p = int(plan.protocol);
    const int f = FuncOf(call.kind);
    const uint32_t n = comm.nRanks;
    const int C = std::max(1, plan.channels);
    const double S = double(call.bytes);
    const double eProto = ProtocolEfficiency(p);
    const int ccIdx = CompCapIndex(comm.minCompCap);
    const int index2 = comm.nNodes <= 2 ? int(comm.nNodes) - 1 : 2;
    const bool amd = Lower(m_cpuVendor) == "amd";
    const int index1 = comm.nNodes == 1 ? ccIdx : (amd ? 1 : 0);
    const uint64_t hashBase = call.tag * 0x9e3779b97f4a7c15ULL;
    auto route = [&](uint32_t from, uint32_t to, uint64_t salt)
    { return topo->Route(from, to, hashBase ^ (salt * 0xc2b2ae3d27d4eb4fULL)); };
    auto append = [](std::vector<uint32_t>& path, const std::vector<uint32_t>& hop)
    { path.insert(path.end(), hop.begin(), hop.end()); };
    // Per-channel data rate the senders can issue: one CTA's copy rate times the protocol's data
    // fraction, and NCCL's own per-channel protocol limits (LL total, LL128 per search channel)
    // spread over the channels that run.
    double cta = comm.channelBandwidth * eProto;
    const double commCh = std::max(comm.channels, 1);
    if (a == kRing && p == kLL)
    {
        cta = std::min(cta, t.llMaxBw[index1][index2] * 1e9 / C);
    }
    if (a == kRing && p == kLL128)
    {
        cta =
            std::min(cta, t.perChMaxRingLL128[ccIdx][index2] * 1e9 * comm.ring.nChannels / commCh);
    }
    if (a == kTree)
    {
        // A tree CTA runs the reduce and the broadcast half at once: each direction gets half of
        // it. NCCL's own per-channel tree caps are bus bandwidths per search channel: half of
        // that, spread over the CTAs, is the per-channel rate of each direction.
        cta /= 2;
        const double treeCh = comm.tree.nChannels;
        cta = std::min(cta, 0.5 * t.perChMaxTree[ccIdx][index2] * 1e9 * treeCh / commCh);
        if (p == kLL)
        {
            cta = std::min(cta, 0.5 * t.llMaxBw[index1][index2] * 1e9 / C);
        }
        if (p == kLL128)
        {
            cta = std::min(cta, 0.5 * t.perChMaxTreeLL128[ccIdx][index2] * 1e9 * treeCh / commCh);
        }
    }

    std::vector<Pipe> pipes;
    if (a == kRing)
    {
        auto rings = RingOrders(call, comm, C);
        for (int c = 0; c < C; ++c)
        {
            const auto& ring = rings[c];
            Pipe pipe;
            pipe.payloadCap = cta;
            if (f == kBroadcast || f == kReduce)
            {
                // A chain from the root (broadcast) or into it (reduce), along the ring.
                uint32_t pos = uint32_t(std::find(ring.begin(), ring.end(), uint32_t(call.root)) -
                                        ring.begin());
                if (pos >= n)
                {
                    pos = 0;
                }
                const uint32_t first = f == kBroadcast ? pos : (pos + 1) % n;
                for (uint32_t i = 0; i + 1 < n; ++i)
                {
                    uint32_t x = ring[(first + i) % n];
                    uint32_t y = ring[(first + i + 1) % n];
                    append(pipe.path, route(call.gpus[x], call.gpus[y], uint64_t(c)));
                }
                pipe.payload = S / C;
            }
            else
            {
                for (uint32_t i = 0; i < n; ++i)
                {
                    append(pipe.path,
                           route(call.gpus[ring[i]], call.gpus[ring[(i + 1) % n]], uint64_t(c)));
                }
                const double share = f == kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
                pipe.payload = share * S / C;
            }
            pipes.push_back(std::move(pipe));
        }
    }
    else if (a == kTree)
    {
        // Per channel: the intra-node chain (ring order of that channel, first GPU at the head)
        // both ways, and the node-level tree between the heads both ways (reduce up, broadcast
        // down concurrently). Channels of the first half use tree 0, the second half tree 1.
        // Ranks by node (nodes in the order of their first rank), each by local index.
        std::vector<std::vector<uint32_t>> nodeRanks;
        {
            std::map<int32_t, size_t> index;
            for (uint32_t r = 0; r < n; ++r)
            {
                int32_t node = topo->GetDevice(call.gpus[r]).node;
                auto it = index.find(node);
                if (it == index.end())
                {
                    it = index.emplace(node, nodeRanks.size()).first;
                    nodeRanks.emplace_back();
                }
                nodeRanks[it->second].push_back(r);
            }
            for (auto& local : nodeRanks)
            {
                std::stable_sort(local.begin(), local.end(),
                                 [&](uint32_t x, uint32_t y) {
                                     return topo->GetDevice(call.gpus[x]).localIndex <
                                            topo->GetDevice(call.gpus[y]).localIndex;
                                 });
            }
        }
        const int nNodes = int(nodeRanks.size());
        for (int c = 0; c < C; ++c)
        {
            const int treeIdx = (comm.channels >= 2 && c >= comm.channels / 2) ? 1 : 0;
            Pipe pipe;
            pipe.payloadCap = cta;
            pipe.branching = true;
            std::vector<std::vector<uint32_t>> chains(nNodes);
            for (int k = 0; k < nNodes; ++k)
            {
                // The node's GPUs in local order from the channel's rail upward: every node's
                // head is on the same rail, so tree edges stay on one leaf.
                const auto& local = nodeRanks[k];
                for (size_t i = 0; i < local.size(); ++i)
                {
                    chains[k].push_back(local[(size_t(c) + i) % local.size()]);
                }
            }
            std::vector<std::vector<int>> children(nNodes);
            int root = 0;
            for (int k = 0; k < nNodes; ++k)
            {
                int parent = DtreeParent(nNodes, k, treeIdx);
                if (parent < 0)
                {
                    root = k;
                }
                else
                {
                    children[parent].push_back(k);
                }
            }
            // An Euler tour of the tree: every chain hop and every tree edge once each way, as
            // one contiguous walk from the root's head back to it (a model that cuts explicit
            // paths into GPU-to-GPU connections sees each of them).
            std::function<void(int)> visit = [&](int k)
            {
                const auto& chain = chains[k];
                for (size_t i = 0; i + 1 < chain.size(); ++i)
                {
                    append(pipe.path, route(call.gpus[chain[i]], call.gpus[chain[i + 1]], c));
                }
                for (size_t i = chain.size(); i-- > 1;)
                {
                    append(pipe.path, route(call.gpus[chain[i]], call.gpus[chain[i - 1]], c));
                }
                for (int child : children[k])
                {
                    append(pipe.path, route(call.gpus[chains[k].front()],
                                            call.gpus[chains[child].front()], c));
                    visit(child);
                    append(pipe.path, route(call.gpus[chains[child].front()],
                                            call.gpus[chains[k].front()], c));
                }
            };
            visit(root);
            pipe.payload = S / C;
            if (p == kSimple)
            {
                // Reduce up then broadcast down, chunk by chunk: the stages that run at the
                // bottleneck's rate are the network hops across nodes, the chain hops on one node.
                const int depth = int(comm.ppn) - 1 + Log2i(comm.nNodes);
                pipe.chunk = TreeChunk(call.bytes, C, std::max(depth, 1));
                pipe.stages = comm.nNodes > 1 ? 2 * CeilLog2(comm.nNodes) : 2 * (comm.ppn - 1);
            }
            pipes.push_back(std::move(pipe));
        }
    }
    else if (a == kNvls || a == kNvlsTree)
    {
        // The switch reduces and multicasts. Per channel, every GPU's NVLink uplink carries its
        // data to the switch (the heads' multimem reductions read it) and every downlink the
        // multicast result, plus the heads' own share in the other direction: about
        // (1 + 1/heads) x S each way for an all-reduce.
        std::map<int32_t, std::vector<uint32_t>> byNode;
        for (uint32_t r = 0; r < n; ++r)
        {
            byNode[topo->GetDevice(call.gpus[r]).node].push_back(r);
        }
        std::vector<std::vector<uint32_t>> nodes;
        for (auto& [node, ranks] : byNode)
        {
            std::stable_sort(ranks.begin(), ranks.end(),
                             [&](uint32_t x, uint32_t y) {
                                 return topo->GetDevice(call.gpus[x]).localIndex <
                                        topo->GetDevice(call.gpus[y]).localIndex;
                             });
            nodes.push_back(ranks);
        }
        const uint32_t heads = uint32_t(comm.nvlsGraph.nChannels);
        // Inside a node, a walk through the switch from GPU to GPU and back to the first crosses
        // every GPU's uplink and downlink once.
        auto nodeRing = [&](std::vector<uint32_t>& path, const std::vector<uint32_t>& local,
                            size_t first, uint64_t salt)
        {
            const size_t g = local.size();
            for (size_t i = 0; i < g && g > 1; ++i)
            {
                append(path, route(call.gpus[local[(first + i) % g]],
                                   call.gpus[local[(first + i + 1) % g]], salt));
            }
        };
        if (a == kNvls)
        {
            const double chunk = NvlsChunk(call.bytes, C, heads);
            for (int c = 0; c < C; ++c)
            {
                Pipe pipe;
                pipe.nvls = true;
                pipe.branching = true;
                pipe.payloadCap = cta;
                nodeRing(pipe.path, nodes[0], 0, uint64_t(c));
                if (f == kAllReduce)
                {
                    // Each GPU's data up to the switch (read by the heads' reductions) and the
                    // multicast result down, plus the heads' share the other way:
                    // (1 + 1/heads) x S each way. Scatter, reduce+multicast and gather are three
                    // stages per loop of heads x chunk.
                    pipe.payload = (1.0 + 1.0 / heads) * S / C;
                    pipe.stages = 3;
                    pipe.chunk = (1.0 + 1.0 / heads) * heads * chunk;
                }
                else
                {
                    // AllGather: each GPU stores its S/n through the multicast address and
                    // receives all S; ReduceScatter the reverse. The flow carries the heavier
                    // direction's S on both (the lighter direction is overcounted).
                    pipe.payload = S / C;
                    pipe.stages = 2;
                    pipe.chunk = heads * chunk;
                }
                pipes.push_back(std::move(pipe));
            }
        }
        else
        {
            // NVLSTree: per channel and head h, every node reduces head h's share in the switch
            // (every GPU's uplink, the head's downlink), the heads run the double binary tree
            // across nodes over their NICs (reduce up, broadcast down), and the result is
            // multicast back (the head's uplink, every downlink). As one contiguous walk: an Euler
            // tour of the node tree, going once round each node through the switch (every uplink
            // and downlink once; the head's extra uplink and downlink use is left out).
            const int nNodes = int(nodes.size());
            const double chunk = NvlsTreeChunk(call.bytes, C, heads, uint32_t(nNodes));
            for (int c = 0; c < C; ++c)
            {
                const int treeIdx = c % 2;
                std::vector<std::vector<int>> children(nNodes);
                int root = 0;
                for (int k = 0; k < nNodes; ++k)
                {
                    int parent = DtreeParent(nNodes, k, treeIdx);
                    if (parent < 0)
                    {
                        root = k;
                    }
                    else
                    {
                        children[parent].push_back(k);
                    }
                }
                for (uint32_t h = 0; h < heads; ++h)
                {
                    Pipe pipe;
                    pipe.nvls = true;
                    pipe.branching = true;
                    pipe.payloadCap = cta;
                    const uint64_t salt = uint64_t(c) * 64 + h;
                    auto head = [&](int k) { return nodes[k][h % nodes[k].size()]; };
                    std::function<void(int)> visit = [&](int k)
                    {
                        nodeRing(pipe.path, nodes[k], h % nodes[k].size(), salt);
                        for (int child : children[k])
                        {
                            append(pipe.path,
                                   route(call.gpus[head(k)], call.gpus[head(child)], salt));
                            visit(child);
                            append(pipe.path,
                                   route(call.gpus[head(child)], call.gpus[head(k)], salt));
                        }
                    };
                    visit(root);
                    pipe.payload = S / (double(C) * heads);
                    // Chunks cross the tree's network hops (up, then down) store-and-forward.
                    pipe.stages = 2 * CeilLog2(uint32_t(nNodes));
                    pipe.chunk = chunk;
                    pipes.push_back(std::move(pipe));
                }
            }
        }
    }
    else if (a == kPat)
    {
        // PAT (one rank per node): exchanges with peers at distance 2^k, volume (n-1)/n x S per
        // rank over all rounds, rounds pipelined.
        std::vector<uint32_t> dist;
        for (uint32_t d = 1; d < n; d <<= 1)
        {
            dist.push_back(d);
        }
        for (uint32_t r = 0; r < n; ++r)
        {
            for (uint32_t d : dist)
            {
                const uint32_t blocks = std::min(d, n - d);
                Pipe pipe;
                pipe.payloadCap = cta * C / dist.size();
                const uint32_t peer = f == kAllGather ? (r + d) % n : (r + n - d) % n;
                pipe.path = route(call.gpus[r], call.gpus[peer], d);
                pipe.payload = blocks * S / n;
                pipes.push_back(std::move(pipe));
            }
        }
    }
    else
    {
        NS_FATAL_ERROR("CollectiveModel: algorithm " << kAlgoNames[a] << " has no data movement");
    }

    // Post: the bottleneck class of each flow decides its wire efficiency; the latency is NCCL's
    // for the algorithm/protocol, of which the links' own latency is a part.
    const double latencyUs = PlanLatencyUs(call, plan);
    auto job = std::make_shared<FlowJob>();
    job->done = done;
    job->ranks = n;
    job->outstanding = pipes.size();
    const int64_t latencyNs = int64_t(std::llround(latencyUs * 1000.0));
    if (pipes.empty())
    {
        ScheduleAt(start, [job]() { job->FinishAll(); });
        return;
    }
    uint64_t salt = 0;
    for (Pipe& pipe : pipes)
    {
        std::map<uint32_t, uint32_t> uses;
        for (uint32_t ch : pipe.path)
        {
            ++uses[ch];
        }
        double worst = std::numeric_limits<double>::infinity();
        double eLink = 1.0;
        for (const auto& [ch, k] : uses)
        {
            double e;
            switch (topo->ChannelKind(ch))
            {
            case LinkKind::NvLink:
                e = comm.nvlinkEfficiency * (pipe.nvls ? comm.nvlsEfficiency : 1.0);
                break;
            case LinkKind::Pcie:
                e = m_pcieEfficiency;
                break;
            default:
                e = m_netEfficiency;
                break;
            }
            double rate = topo->ChannelBandwidth(ch) * e / k;
            if (rate < worst)
            {
                worst = rate;
                eLink = e;
            }
        }
        FlowSpec spec;
        spec.src = pipe.path.empty() ? call.gpus[0] : topo->ChannelFrom(pipe.path.front());
        spec.dst = pipe.path.empty() ? call.gpus[0] : topo->ChannelTo(pipe.path.back());
        double payload = pipe.payload;
        if (pipe.stages > 1 && pipe.chunk > 0)
        {
            payload += (pipe.stages - 1) * std::min(pipe.chunk, pipe.payload);
        }
        spec.bytes = uint64_t(std::ceil(payload / (eProto * eLink)));
        spec.start = start;
        spec.tag = call.tag ^ (++salt * 0x100000001b3ULL);
        spec.rateCap = pipe.payloadCap > 0 ? pipe.payloadCap / (eProto * eLink) : 0;
        // The flow model adds the path's latency itself: a chain pays at least its hops, a
        // branching flow exactly the algorithm's latency (its critical path, not its hop sum).
        const int64_t pathNs = topo->PathLatencyNs(pipe.path);
        spec.extraLatency = NanoSeconds(pipe.branching ? latencyNs - pathNs
                                                       : std::max<int64_t>(0, latencyNs - pathNs));
        spec.path = std::move(pipe.path);
        m_network->AddFlow(spec,
                           [job](const FlowRecord&)
                           {
                               if (--job->outstanding == 0)
                               {
                                   job->FinishAll();
                               }
                           });
    }
}

void
CollectiveModel::PostSendRecv(const CollectiveCall& call, const NcclCommInfo& comm,
                              const std::vector<Time>& starts, DoneCallback done)
{
    Ptr<const Topology> topo = GetTopology();
    const NcclTables& t = GetTables();
    const uint32_t n = uint32_t(call.gpus.size());
    auto job = std::make_shared<FlowJob>();
    job->done = done;
    job->rankOutstanding.assign(n, 0);
    for (const auto& tr : call.transfers)
    {
        NS_ABORT_MSG_UNLESS(tr.srcRank < n && tr.dstRank < n,
                            "CollectiveModel: transfer " << tr.srcRank << "->" << tr.dstRank
                                                         << " outside a comm of " << n << " ranks");
        if (tr.srcRank == tr.dstRank)
        {
            ++job->rankOutstanding[tr.srcRank];
        }
        else
        {
            ++job->rankOutstanding[tr.srcRank];
            ++job->rankOutstanding[tr.dstRank];
        }
    }
    auto finish = [job](uint32_t r)
    {
        if (--job->rankOutstanding[r] == 0 && !job->done.IsNull())
        {
            job->done(r);
        }
    };
    for (uint32_t r = 0; r < n; ++r)
    {
        if (job->rankOutstanding[r] == 0)
        {
            ScheduleAt(starts[r],
                       [job, r]()
                       {
                           if (!job->done.IsNull())
                           {
                               job->done(r);
                           }
                       });
        }
    }
    // NCCL's p2p schedule for the group (enqueue.cc scheduleP2pTasksToPlan / addP2pToPlan): a
    // transfer runs in the round of its (node, local) delta, on its op's channels from that
    // round's base; every rank's works on one channel form one batch per group of 8 rounds, and
    // the batch splits the CTA's warps among them (sendrecv.h). A transfer's channel rate is the
    // CTA's figure scaled by the warps its send (on the source) and recv (on the destination)
    // get, over the batches sharing that channel (run one after another, taken as time shares).
    const int nP2p = std::max(comm.p2pChannels, 1);
    std::vector<uint32_t> rankNode(n, 0);
    std::vector<uint32_t> rankLocal(n, 0);
    std::vector<uint32_t> nodeCount;
    {
        std::map<int32_t, uint32_t> nodeIndex;
        for (uint32_t r = 0; r < n; ++r)
        {
            auto it =
                nodeIndex.emplace(topo->GetDevice(call.gpus[r]).node, uint32_t(nodeIndex.size()));
            if (it.second)
            {
                nodeCount.push_back(0);
            }
            rankNode[r] = it.first->second;
            rankLocal[r] = nodeCount[rankNode[r]]++;
        }
    }
    const uint32_t nNodes = std::max<uint32_t>(1, uint32_t(nodeCount.size()));
    uint32_t nLocals = 1;
    for (uint32_t c : nodeCount)
    {
        nLocals = std::max(nLocals, c);
    }
    const std::vector<int> roundOf = P2pRounds(nNodes, nLocals);
    auto roundFor = [&](uint32_t s, uint32_t d)
    {
        const uint32_t nd = (rankNode[d] + nNodes - rankNode[s]) % nNodes;
        const uint32_t ld = (rankLocal[d] + nLocals - rankLocal[s]) % nLocals;
        return std::max(0, roundOf[size_t(nd) * nLocals + ld]);
    };
    struct P2pWork
    {
        int sendParts = 0;
        int recvParts = 0;
    };
    // works[rank][round]; channelRounds[rank][channel] = rounds with a part there
    std::vector<std::map<int, P2pWork>> works(n);
    std::vector<int> opChannels;
    opChannels.reserve(call.transfers.size());
    for (const auto& tr : call.transfers)
    {
        const int nCh = P2pOpChannels(comm, tr.bytes);
        opChannels.push_back(nCh);
        const int k = tr.srcRank == tr.dstRank ? 0 : roundFor(tr.srcRank, tr.dstRank);
        auto& ws = works[tr.srcRank][k];
        ws.sendParts = std::max(ws.sendParts, nCh);
        auto& wr = works[tr.dstRank][k];
        wr.recvParts = std::max(wr.recvParts, nCh);
    }
    std::vector<std::vector<std::vector<int>>> channelRounds(
        n, std::vector<std::vector<int>>(size_t(nP2p)));
    for (uint32_t r = 0; r < n; ++r)
    {
        for (const auto& [k, w] : works[r])
        {
            const int base = P2pChannelBase(k, nNodes, nLocals, nP2p);
            const int parts = std::min(std::max(w.sendParts, w.recvParts), nP2p);
            for (int part = 0; part < parts; ++part)
            {
                channelRounds[r][size_t((base + part) & (nP2p - 1))].push_back(k);
            }
        }
    }
    // Fraction of a lone CTA's rate the send (or recv) of round k on channel c of rank r gets.
    auto ctaShare = [&](uint32_t r, int k, int c, int part, bool sendSide)
    {
        const auto& rounds = channelRounds[r][size_t(c)];
        std::set<int> batches;
        int inBatch = 0;
        for (int other : rounds)
        {
            batches.insert(other / kP2pWorksPerBatch);
            inBatch += (other / kP2pWorksPerBatch == k / kP2pWorksPerBatch) ? 1 : 0;
        }
        const P2pWork& w = works[r].at(k);
        int sw = 0;
        int rw = 0;
        P2pWarps(std::min(inBatch, kP2pWorksPerBatch), part < w.sendParts, part < w.recvParts, &sw,
                 &rw);
        const double f = sendSide ? std::min(1.0, double(sw) / kP2pLoneSendWarps)
                                  : std::min(1.0, double(rw) / kP2pLoneRecvWarps);
        return f / double(std::max<size_t>(1, batches.size()));
    };
    uint64_t index = 0;
    for (const auto& tr : call.transfers)
    {
        ++index;
        const uint32_t src = call.gpus[tr.srcRank];
        const uint32_t dst = call.gpus[tr.dstRank];
        const Time start = std::max(starts[tr.srcRank], starts[tr.dstRank]);
        if (src == dst || tr.srcRank == tr.dstRank)
        {
            // A copy inside the GPU's memory: read and write at HBM speed.
            double hbm = 0;
            try
            {
                hbm = topo->GpuSpecOf(uint32_t(topo->GetDevice(src).gpuIndex)).hbmBandwidth;
            }
            catch (const std::exception&)
            {
                hbm = 0;
            }
            Time dt =
                hbm > 0 ? NanoSeconds(int64_t(std::ceil(2.0 * tr.bytes / hbm * 1e9))) : Time(0);
            const uint32_t r = tr.srcRank;
            ScheduleAt(start + dt, [finish, r]() { finish(r); });
            continue;
        }
        const Device& sd = topo->GetDevice(src);
        const Device& dd = topo->GetDevice(dst);
        const bool sameNode = sd.node == dd.node;
        const uint64_t hash = call.tag * 0x9e3779b97f4a7c15ULL ^ (index * 0xc2b2ae3d27d4eb4fULL);
        std::vector<uint32_t> path;
        bool viaProxy = false;
        if (!sameNode && m_pxn && sd.localIndex != dd.localIndex)
        {
            // PXN: the destination's rail, reached over NVLink through the GPU of the same local
            // index on the sending node.
            int64_t proxy = -1;
            for (uint32_t g : topo->GpusOfNode(uint32_t(sd.node)))
            {
                if (topo->GetDevice(g).localIndex == dd.localIndex)
                {
                    proxy = g;
                }
            }
            if (proxy >= 0)
            {
                path = topo->Route(src, uint32_t(proxy), hash);
                auto rest = topo->Route(uint32_t(proxy), dst, hash);
                path.insert(path.end(), rest.begin(), rest.end());
                viaProxy = true;
            }
        }
        if (path.empty())
        {
            path = topo->Route(src, dst, hash);
        }
        const uint64_t chunk = comm.p2pChunkBytes;
        const int nCh = opChannels[index - 1];
        // LL for small intra-node transfers (network connections have no LL buffers).
        const int p = (sameNode && tr.bytes <= uint64_t(nCh) * kP2pLlThreshold) ? kLL : kSimple;
        const double eProto = ProtocolEfficiency(p);
        bool net = false;
        bool nvl = true;
        std::map<uint32_t, uint32_t> uses;
        for (uint32_t ch : path)
        {
            ++uses[ch];
            net = net || topo->ChannelKind(ch) == LinkKind::Net;
            nvl = nvl && topo->ChannelKind(ch) == LinkKind::NvLink;
        }
        double worst = std::numeric_limits<double>::infinity();
        double eLink = 1.0;
        for (const auto& [ch, k] : uses)
        {
            double e = topo->ChannelKind(ch) == LinkKind::NvLink ? comm.nvlinkEfficiency
                       : topo->ChannelKind(ch) == LinkKind::Pcie ? m_pcieEfficiency
                                                                 : m_netEfficiency;
            double rate = topo->ChannelBandwidth(ch) * e / k;
            if (rate < worst)
            {
                worst = rate;
                eLink = e;
            }
        }
        const int hw = net ? kHwNet : (nvl ? kHwNvlink : kHwPci);
        const double latUs = t.baseLat[kRing][p] + t.hwLat[hw][kRing][p];
        FlowSpec spec;
        spec.src = src;
        spec.dst = dst;
        double payload = double(tr.bytes);
        if (viaProxy)
        {
            // The proxy GPU forwards whole chunks: one more chunk-time.
            payload += std::min<double>(double(chunk), double(tr.bytes) / nCh);
        }
        spec.bytes = uint64_t(std::ceil(payload / (eProto * eLink)));
        spec.start = start;
        spec.tag = call.tag ^ (index * 0x100000001b3ULL);
        // The transfer's parts on their channels: each at the CTA figure times its warp share.
        const int k = roundFor(tr.srcRank, tr.dstRank);
        const int base = P2pChannelBase(k, nNodes, nLocals, nP2p);
        double ctas = 0;
        for (int part = 0; part < nCh; ++part)
        {
            const int c = (base + part) & (nP2p - 1);
            ctas += std::min(ctaShare(tr.srcRank, k, c, part, true),
                             ctaShare(tr.dstRank, k, c, part, false));
        }
        if (sameNode && p == kSimple && !viaProxy)
        {
            // P2P transport between processes (no direct pointer): the sender fills the
            // receiver's FIFO one p2p chunk (step) at a time and the receiver's warps copy each
            // step out once it has landed, so every channel's part ends one step after its last
            // step arrives: one more chunk (or the whole part if smaller) per channel.
            const uint64_t partBytes = (((tr.bytes + nCh - 1) / nCh) + 4095) / 4096 * 4096;
            for (int part = 0; part < nCh; ++part)
            {
                const uint64_t beg = std::min<uint64_t>(uint64_t(part) * partBytes, tr.bytes);
                const uint64_t end = std::min<uint64_t>(uint64_t(part + 1) * partBytes, tr.bytes);
                payload += double(std::min<uint64_t>(chunk, end - beg));
            }
            spec.bytes = uint64_t(std::ceil(payload / (eProto * eLink)));
        }
        spec.rateCap = ctas * comm.channelBandwidth * eProto / (eProto * eLink);
        const int64_t pathNs = topo->PathLatencyNs(path);
        spec.extraLatency =
            NanoSeconds(std::max<int64_t>(0, int64_t(std::llround(latUs * 1000)) - pathNs));
        spec.path = std::move(path);
        const uint32_t rs = tr.srcRank;
        const uint32_t rd = tr.dstRank;
        if (tr.bytes == 0)
        {
            ScheduleAt(start + NanoSeconds(int64_t(std::llround(latUs * 1000))),
                       [finish, rs, rd]()
                       {
                           finish(rs);
                           finish(rd);
                       });
            continue;
        }
        m_network->AddFlow(spec,
                           [finish, rs, rd](const FlowRecord&)
                           {
                               finish(rs);
                               finish(rd);
                           });
    }
}

} // namespace eidolon
} // namespace ns3
