/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's topology search, reproduced (nccl-model-facts.md 3.2-3.6; NCCL 2.30.7
 * src/graph/search.cc, connect.cc, trees.cc, src/init.cc for the channel counts).
 */
#include "nccl-topology-search.h"

#include "nccl-config.h"
#include "nccl-indices.h"
#include "nccl-tuning-tables.h"

#include "ns3/abort.h"
#include "ns3/log.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNcclTopologySearch");

namespace nccl
{
namespace
{
/// The ring search's maxChannels: MAXCHANNELS / 2 (init.cc), 16 up to 2.24 and 32 from 2.25.
int
RingSearchMaxChannels(uint32_t version)
{
    return MaxChannelsOf(version) / 2;
}
/// NCCL's PCIe figure over the link rate after encoding: Gen5 x16 is 48 GB/s to NCCL (16 lanes x
/// 240 / 80) where the link carries 63 GB/s; Gen4 x16 is 24 against 31.5.
constexpr double kNcclPcieFactor = 48.0 / 63.0;

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

/// Candidate per-channel speeds of NCCL's search (GB/s), src/graph/search.cc at each tag: sm90's
/// intra list gained 50 in 2.19 and 11 in 2.21, its inter list 22 in 2.19; sm100 reads sm90's
/// lists until it has its own (intra from 2.25, inter from 2.27, changed in 2.27.5, 2.27.6,
/// 2.29.2, 2.29.7 and 2.30).
const std::vector<double>&
IntraSpeeds(int cc, uint32_t version)
{
    static const std::vector<double> sm80 = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
    static const std::vector<double> sm90v218 = {60, 40, 30, 24, 20, 15, 12, 6, 3};
    static const std::vector<double> sm90v219 = {60, 50, 40, 30, 24, 20, 15, 12, 6, 3};
    static const std::vector<double> sm90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
    static const std::vector<double> sm100v225 = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19};
    static const std::vector<double> sm100v227 = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
    static const std::vector<double> sm100 = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
    if (cc >= 100 && version >= 22500)
    {
        return version >= 22902 ? sm100 : version >= 22700 ? sm100v227 : sm100v225;
    }
    if (cc >= 90) // sm100 too before 2.25, which had no list of its own
    {
        return version >= 22100 ? sm90 : version >= 21900 ? sm90v219 : sm90v218;
    }
    return sm80;
}

const std::vector<double>&
InterSpeeds(int cc, uint32_t version)
{
    static const std::vector<double> sm80 = {48, 30, 28, 24, 20, 18,  15,  12,   10,  9,
                                             7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm90v218 = {48, 45, 42, 40, 30,  24,  20,   17.5,
                                                 15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm90 = {48, 45, 42, 40, 30,  24,  22,   20,  17.5,
                                             15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm100v2273 = {47.9, 45, 42, 40, 30,  24,  22,   20,  17.5,
                                                   15,   12, 6,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm100v2275 = {48, 45.1, 42, 40, 30,  24,  22,   20,  17.5,
                                                   15, 12,   6,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm100v2276 = {96,   48, 45.1, 42, 40, 30,  24,  22,   20,
                                                   17.5, 15, 12,   6,  3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm100v2297 = {96,   80, 48, 45.1, 42, 40,  30,  24,   22,  20,
                                                   17.5, 15, 12, 6,    3,  2.4, 1.2, 0.24, 0.12};
    static const std::vector<double> sm100 = {96, 86,   80, 48, 45.1, 42, 40,  30,  24,   22,
                                              20, 17.5, 15, 12, 6,    3,  2.4, 1.2, 0.24, 0.12};
    if (cc >= 100 && version >= 22700)
    {
        return version >= 23000   ? sm100
               : version >= 22907 ? sm100v2297
               : version >= 22706 ? sm100v2276
               : version >= 22705 ? sm100v2275
                                  : sm100v2273;
    }
    if (cc >= 90) // sm100 too before 2.27 (2.25-2.26 give it the sm90 list)
    {
        return version >= 21900 ? sm90 : sm90v218;
    }
    return sm80;
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
    double pcie = 0;        //!< bytes/s of the GPU's PCIe uplink
    int64_t nic = -1;       //!< nearest NIC device
    double nicBw = 0;       //!< bytes/s of that NIC's network port
    int64_t nicUplink = -1; //!< the directed channel from that NIC into the fabric
    double nicPath = 0;     //!< bytes/s, narrowest PCIe link between GPU and NIC
    int nicPathType = NcclConfig::kP2pLevelPix; //!< NCCL's type of the GPU-NIC path (PIX/PXB/PHB)
    double rawPerLink = 25e9;
    double hbm = 0;
};

/// What NCCL's search sees of the communicator as a whole (GB/s).
struct CommBandwidths
{
    bool nvlinkAll = true; //!< every GPU has NVLink
    double intraTotal = 0; //!< intra-node bandwidth per GPU, the smallest
    double pathBw = 0;     //!< GPU to NIC to network, the narrowest
    double nicBwMin = 0;   //!< NIC port, the smallest
    uint32_t nicsPerNode = 0;
    /// NCCL's type of the path from a GPU to the network, the farthest over the comm (the
    /// graphs' typeInter): the GPU's own NIC, or PXN through a comm GPU on NVLink with a closer
    /// one (kP2pLevel* ranks; kPathPxn between PXB and PHB).
    int typeInter = NcclConfig::kP2pLevelPix;
};

/// NCCL's PXN path type (graph/topo.h: ... PXB < P2C < PXN < PHB ...).
constexpr int kPathPxn = 7;

/// NCCL's type of a PCIe path (graph/paths.cc): LOC without a switch, PIX through one PCIe switch,
/// PXB through several, PHB through the CPU's root complex (a switch marked host_bridge).
int
PciePathType(int switches, bool hostBridge)
{
    return hostBridge      ? NcclConfig::kP2pLevelPhb
           : switches > 1  ? NcclConfig::kP2pLevelPxb
           : switches == 1 ? NcclConfig::kP2pLevelPix
                           : NcclConfig::kP2pLevelLoc;
}

int
PciePathType(const Topology& topology, const std::vector<uint32_t>& path)
{
    int switches = 0;
    bool bridge = false;
    for (uint32_t ch : path)
    {
        const Device& d = topology.GetDevice(topology.ChannelTo(ch));
        if (d.kind == DeviceKind::PcieSwitch)
        {
            ++switches;
            bridge = bridge || d.hostBridge;
        }
    }
    return PciePathType(switches, bridge);
}

/// The nearest NIC over PCIe switches (the GPU-NIC affinity NCCL relies on), preferring the NIC
/// of the GPU's own local index at the same depth, and the narrowest PCIe link on the way.
void
FindNearestNic(const Topology& topo, const DeviceLinks& links, GpuFacts& f)
{
    struct Visit
    {
        uint32_t dev;
        int depth;
        double narrow;
        bool bridge; //!< a host bridge on the way
    };
    std::deque<Visit> queue{{f.device, 0, std::numeric_limits<double>::infinity(), false}};
    std::set<uint32_t> seen{f.device};
    int foundDepth = -1;
    while (!queue.empty())
    {
        Visit v = queue.front();
        queue.pop_front();
        if (foundDepth >= 0 && v.depth > foundDepth)
        {
            break;
        }
        for (uint32_t li : links[v.dev])
        {
            const Link& l = topo.Links()[li];
            uint32_t other = l.a == v.dev ? l.b : l.a;
            if (seen.count(other) || l.kind != LinkKind::Pcie)
            {
                continue;
            }
            seen.insert(other);
            const Device& od = topo.GetDevice(other);
            double narrow = std::min(v.narrow, l.bandwidth);
            if (od.kind == DeviceKind::Nic)
            {
                bool better = f.nic < 0 || (od.localIndex == f.local &&
                                            topo.GetDevice(uint32_t(f.nic)).localIndex != f.local);
                if (better)
                {
                    f.nic = other;
                    f.nicPath = narrow;
                    // v.depth PCIe switches between the GPU and the NIC.
                    f.nicPathType = PciePathType(v.depth, v.bridge);
                    foundDepth = v.depth + 1;
                }
            }
            else if (od.kind == DeviceKind::PcieSwitch && v.depth < 3)
            {
                queue.push_back({other, v.depth + 1, narrow, v.bridge || od.hostBridge});
            }
        }
    }
    if (f.nic >= 0)
    {
        for (uint32_t li : links[uint32_t(f.nic)])
        {
            const Link& l = topo.Links()[li];
            if (l.kind == LinkKind::Net)
            {
                if (l.bandwidth > f.nicBw)
                {
                    f.nicUplink = int64_t(l.a == uint32_t(f.nic) ? 2 * li : 2 * li + 1);
                }
                f.nicBw = std::max(f.nicBw, l.bandwidth);
            }
        }
    }
}

/// Comm rank `rank`'s GPU: its architecture from the GPU spec (sm90 when the topology has none),
/// its NVLink and PCIe bandwidth, its NVSwitch and its nearest NIC.
GpuFacts
DescribeGpu(const Topology& topo, const DeviceLinks& links, uint32_t rank, uint32_t device)
{
    GpuFacts f;
    f.device = device;
    const Device& d = topo.GetDevice(device);
    NS_ABORT_MSG_UNLESS(d.kind == DeviceKind::Gpu, "CollectiveModel: comm rank "
                                                       << rank << " is device '" << d.name
                                                       << "', not a GPU");
    f.node = d.node;
    f.local = d.localIndex;
    f.cc = 90;
    try
    {
        const GpuSpec& spec = topo.GpuSpecOf(uint32_t(d.gpuIndex));
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
    for (uint32_t li : links[device])
    {
        const Link& l = topo.Links()[li];
        uint32_t other = l.a == device ? l.b : l.a;
        const Device& od = topo.GetDevice(other);
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
    FindNearestNic(topo, links, f);
    return f;
}

/// NCCL's view of the bandwidths (GB/s): NVLink at `nvlinkEff` of its line rate (PCIe at 48/63
/// when some GPU has no NVLink), the GPU-NIC path and the NIC ports, NICs per node.
CommBandwidths
SummarizeBandwidths(const std::vector<GpuFacts>& facts,
                    const std::map<int32_t, std::vector<uint32_t>>& byNode, double nvlinkEff)
{
    CommBandwidths b;
    for (const GpuFacts& f : facts)
    {
        b.nvlinkAll = b.nvlinkAll && f.nvlink > 0;
    }
    double intraTotal = std::numeric_limits<double>::infinity();
    double pathBw = std::numeric_limits<double>::infinity();
    double nicBwMin = std::numeric_limits<double>::infinity();
    for (const GpuFacts& f : facts)
    {
        double bw = b.nvlinkAll ? f.nvlink * nvlinkEff / 1e9 : f.pcie * kNcclPcieFactor / 1e9;
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
        // typeInter: a GPU whose NIC is across the host bridge reaches the network through PXN
        // (paths.cc) when a GPU of the comm on its node, joined to it by NVLink, has its NIC
        // within PCIe switches.
        for (uint32_t r : ranks)
        {
            int type = facts[r].nicPathType;
            if (type > NcclConfig::kP2pLevelPxb && facts[r].nvlink > 0)
            {
                for (uint32_t q : ranks)
                {
                    if (facts[q].nvlink > 0 && facts[q].nic >= 0 &&
                        facts[q].nicPathType <= NcclConfig::kP2pLevelPxb)
                    {
                        type = kPathPxn;
                        break;
                    }
                }
            }
            b.typeInter = std::max(b.typeInter, type);
        }
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
    b.intraTotal = intraTotal;
    b.pathBw = pathBw;
    b.nicBwMin = nicBwMin;
    b.nicsPerNode = nicsPerNode;
    return b;
}

/// Search rule (ncclTopoDupChannels): a solution is doubled up to `maxChannels` unless its speed
/// is below 25 GB/s or, on sm90+, below 50 GB/s with more than 4 channels; the per-channel
/// bandwidth is divided by ceil(new / old channels), so 12 x 60 capped at 16 becomes 16 x 30.
void
DuplicateGraph(NcclCommInfo::Graph& g, int minCompCap, int maxChannels)
{
    if (g.nChannels == 0 || g.bwIntra < 25 ||
        (minCompCap > 80 && g.bwIntra < 50 && g.nChannels > 4))
    {
        return;
    }
    const int n = std::min(2 * g.nChannels, std::max(maxChannels, g.nChannels));
    const int divisor = (n + g.nChannels - 1) / g.nChannels;
    g.nChannels = n;
    g.bwIntra /= divisor;
    g.bwInter /= divisor;
}

/// The ring graph: on one node the speed of NCCL's per-arch list giving the most channels x speed
/// within the GPU's intra-node bandwidth; across nodes the same over the NICs (channels per NIC
/// port, limited by the intra-node hops a ring makes on each node).
NcclCommInfo::Graph
SearchRing(const NcclCommInfo& c, const CommBandwidths& b, const std::vector<double>& intra,
           const std::vector<double>& inter, int maxChannels)
{
    NcclCommInfo::Graph ring;
    ring.nvlinkIntra = b.nvlinkAll;
    double best = 0;
    if (c.nNodes == 1)
    {
        for (double s : intra)
        {
            if (s > b.intraTotal + 1e-9)
            {
                continue;
            }
            int n = std::min(maxChannels, int(std::floor(b.intraTotal / s + 1e-9)));
            if (n * s > best + 1e-9)
            {
                best = n * s;
                ring.nChannels = n;
                ring.bwIntra = ring.bwInter = s;
            }
        }
    }
    else
    {
        for (double s : inter)
        {
            if (s > b.pathBw + 1e-9)
            {
                continue;
            }
            int n = int(b.nicsPerNode) * std::max(0, int(std::floor(b.nicBwMin / s + 1e-9)));
            if (c.ppn > 1)
            {
                n = std::min(n, int(std::floor(b.intraTotal / (s * (c.ppn - 1) / c.ppn) + 1e-9)));
            }
            n = std::min(n, maxChannels);
            if (n > 0 && n * s > best + 1e-9)
            {
                best = n * s;
                ring.nChannels = n;
                ring.bwIntra = ring.bwInter = s;
            }
        }
    }
    if (ring.nChannels == 0)
    {
        ring.nChannels = 1;
        ring.bwIntra = ring.bwInter = 0.1;
    }
    // search.cc tries the same GPU order for every channel first; across nodes each channel
    // enters through its own NIC, and a replayed order starts at the first channel's GPU, which
    // is not next to the other NICs: that pass finds too few channels and the search retries
    // with sameChannels = 0 (NCCL_DEBUG_SUBSYS=GRAPH prints "sameChannels 0" on DGX H100 nodes).
    ring.sameChannels = !(c.nNodes > 1 && b.nicsPerNode > 1 && ring.nChannels > 1);
    return ring;
}

/// The tree graph: the ring's solution; across nodes, pass 2 raises its intra bandwidth (up to
/// twice the inter one) where the NVLink chain has room for it.
NcclCommInfo::Graph
SearchTree(const NcclCommInfo::Graph& ring, const NcclCommInfo& c, const CommBandwidths& b,
           const std::vector<double>& intra)
{
    NcclCommInfo::Graph tree = ring;
    if (c.nNodes > 1)
    {
        for (double s : intra)
        {
            if (s > tree.bwIntra && s <= 2 * tree.bwInter &&
                tree.nChannels * s <= b.intraTotal + 1e-9)
            {
                tree.bwIntra = s;
                break;
            }
        }
    }
    return tree;
}

/// NVLS graph: one channel per head GPU (all GPUs on one node, the NIC GPUs across nodes); every
/// GPU link carries bw per head and the head's 2 bw. Sets c.nvlsGraph and c.nvls where usable.
void
SearchNvls(NcclCommInfo& c, const CommBandwidths& b, const std::vector<double>& intra,
           const std::vector<double>& inter, const SearchSettings& settings)
{
    const bool nvlsEnv =
        settings.config.nvlsEnable == -1 ? settings.nvlsMulticast : settings.config.nvlsEnable != 0;
    const bool nvlsHw = c.nvswitch && c.minCompCap >= 90 && nvlsEnv;
    // nvls.cc: NVLS needs more than 2 GPUs on the node up to 2.28.3, 2 from 2.28.7.
    if (!nvlsHw || c.minLocalRanks < (settings.ncclVersion >= 22807 ? 2u : 3u))
    {
        return;
    }
    NcclCommInfo::Graph nv;
    nv.nvlinkIntra = true;
    const uint32_t heads =
        c.nNodes == 1 ? std::min<uint32_t>(32, c.ppn) : std::min<uint32_t>(c.ppn, b.nicsPerNode);
    const auto& speeds = c.nNodes == 1 ? intra : inter;
    for (double s : speeds)
    {
        if ((heads + 1) * s <= b.intraTotal + 1e-9 && (c.nNodes == 1 || s <= b.pathBw + 1e-9))
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
                if (s <= b.pathBw + 1e-9)
                {
                    top = s;
                    break;
                }
            }
        }
        // search.cc pass 2 raises an NVLS graph's bwInter from 2.19; 2.18 keeps a raised graph
        // only for more heads (ncclTopoCompareGraphs), so its NVLS graph stays at bwIntra.
        if (settings.ncclVersion >= 21900)
        {
            nv.bwInter = std::max(nv.bwIntra, std::min(2 * nv.bwIntra, top));
        }
    }
    if (nv.nChannels >= 2)
    {
        c.nvlsGraph = nv;
        c.nvls = true;
    }
}

/// CollNet graphs (init.cc, search.cc at the tags we emulate), only with SHARP switches in the
/// topology, NCCL_COLLNET_ENABLE=1 and at least NCCL_COLLNET_NODE_THRESHOLD (2) nodes. Both start
/// from the ring's network speed (each channel enters and leaves through the same NIC, so the
/// NIC path is the ring's); pass 2 then raises bwIntra (the figure NCCL's tuning reads for
/// CollNet) through the network speed array up to twice bwInter. CollNetChain keeps the ring's
/// channel count (its min = max = ring channels); CollNetDirect has one channel per head GPU, a
/// GPU with its own NIC, at most NCCL_MAX_DIRECT_ARITY + 1 = 8, and needs an NVSwitch.
void
SearchCollNet(NcclCommInfo& c, const CommBandwidths& b, const std::vector<double>& inter,
              const SearchSettings& settings)
{
    if (!settings.sharp || settings.config.collnetEnable != 1 || c.nNodes < 2)
    {
        return;
    }
    c.collnet = true;
    c.collnetAllgatherReduceScatter = settings.sharpAllgatherReduceScatter;
    NcclCommInfo::Graph g;
    g.nvlinkIntra = c.ring.nvlinkIntra;
    g.bwIntra = g.bwInter = c.ring.bwInter;
    // Non-ring patterns need not return to the first GPU: NCCL inflates the intra-node budget by
    // ngpus / (ngpus - 1).
    const double budget =
        c.ppn > 1 ? b.intraTotal * double(c.ppn) / double(c.ppn - 1) : b.intraTotal;
    auto raise = [&](NcclCommInfo::Graph& graph)
    {
        for (double s : inter)
        {
            if (s > graph.bwIntra && s <= 2 * graph.bwInter && graph.nChannels * s <= budget + 1e-9)
            {
                graph.bwIntra = s;
                break;
            }
        }
    };
    c.collnetChain = g;
    c.collnetChain.nChannels = c.ring.nChannels;
    raise(c.collnetChain);
    if (c.nvswitch)
    {
        c.collnetDirect = g;
        c.collnetDirect.nChannels =
            int(std::min<uint32_t>({c.ppn, std::max<uint32_t>(b.nicsPerNode, 1), 8}));
        raise(c.collnetDirect);
    }
}

/// NVLS's defaults by release (transport/nvls.cc, enqueue.cc calcCollChunking): returns the NVLS
/// CTAs before NCCL_NVLS_NCHANNELS and the CTA bounds, and sets the NVLS and NVLSTree chunks.
/// - CTAs: 16 up to 2.24; from 2.25 32 on sm100; from 2.27 24 on one sm100 node; 2.30 tunes
///   sm100 across nodes by NIC speed and GPUs per node (ncclNvlsTreeSm100Tuning).
/// - NVLS chunk: 128 KiB; from 2.21 NCCL_NVLS_CHUNKSIZE (at most the 512 KiB Simple step).
/// - NVLSTree chunk: the 512 KiB Simple step up to 2.20, NCCL_NVLS_CHUNKSIZE from 2.21; capped
///   at 64 KiB from 4 nodes from 2.19 (from 2.20 NCCL_NVLSTREE_MAX_CHUNKSIZE instead where set;
///   2.30's sm100 tuning gives its own cap, below the variable).
int
SetNvlsTuning(NcclCommInfo& c, const CommBandwidths& b, const NcclConfig& config, uint32_t v)
{
    const int kStep = int(c.simpleStepBytes); // NCCL_BUFFSIZE / NCCL_STEPS
    int channels = 16;
    int chunk = v >= 22100 ? 131072 : kStep;
    int treeMax = 0; // 0: NCCL's fallback below
    if (c.minCompCap >= 100 && v >= 22500)
    {
        channels = v >= 22700 && c.nNodes == 1 ? 24 : 32;
    }
    if (c.minCompCap >= 100 && c.nNodes > 1 && v >= 23000)
    {
        const double nic = b.nicBwMin;
        const uint32_t ppn = c.minLocalRanks; // ncclNvlsTreeSm100Tuning's ppn
        const bool pxb = b.typeInter <= NcclConfig::kP2pLevelPxb;
        if (c.nNodes == 2 && nic >= 48)
        {
            channels = 32;
            treeMax = 131072;
            if (ppn <= 4)
            {
                chunk = treeMax = 262144;
            }
            else if (ppn >= 16 || (ppn <= 8 && pxb && nic < 96))
            {
                treeMax = 65536;
            }
        }
        else if (nic >= 96)
        {
            channels = ppn <= 8 ? 24 : 32;
            chunk = ppn <= 8 ? 262144 : 131072;
            treeMax = ppn <= 8 ? 262144 : ppn < 32 ? 131072 : 65536;
        }
        else if (nic >= 48)
        {
            channels = 24;
            treeMax = pxb ? 65536 : 131072;
        }
    }
    if (v >= 22100 && config.nvlsChunkSize > 0)
    {
        chunk = config.nvlsChunkSize; // the variable wins over 2.30's tuning
    }
    if (v >= 22000 && config.nvlsTreeMaxChunkSize > 0)
    {
        treeMax = config.nvlsTreeMaxChunkSize;
    }
    else if (treeMax == 0 && v >= 21900)
    {
        treeMax = c.nNodes >= 4 ? 65536 : chunk;
    }
    c.nvlsChunkBytes = uint64_t(std::min(v >= 22100 ? chunk : 131072, kStep));
    c.nvlsTreeChunkBytes = uint64_t(treeMax > 0 ? std::min(chunk, treeMax) : chunk);
    return channels;
}

/// comm.nChannels: min(ring, tree), doubled in Postset (channel c and c+n share a ring and use
/// the two trees), doubled again on multi-node rings faster than 45 GB/s (connect.cc): sm90 only
/// and while the double fits MAXCHANNELS (32) in 2.18-2.19; sm90 only and under 16 channels in
/// 2.20-2.24; sm90+ and under 16 from 2.25 (MAXCHANNELS 64 from 2.25). Then NCCL_MAX_NCHANNELS /
/// NCCL_MIN_NCHANNELS. And the NVLS CTAs, which only the communicator's CTA bounds limit
/// (nvls.cc), and which 2.20-2.27 raise the channels to where NVLS is on (connect.cc): the p2p
/// channels from 2.20, rings and trees from 2.22 (2.20-2.21 pick theirs from collChannels, the
/// count before). Returns the channels NCCL's p2p pool starts from.
int
SetChannels(NcclCommInfo& c, const CommBandwidths& b, const NcclConfig& config,
            const SearchSettings& settings)
{
    const uint32_t v = settings.ncclVersion;
    const int maxChannels = nccl::MaxChannelsOf(v);
    int ch = std::min(c.ring.nChannels, c.tree.nChannels);
    ch = std::min(maxChannels, 2 * ch);
    // With CollNet, half as many channels again where its graph's intra-node speed exceeds its
    // network speed and a node has several ranks (connect.cc, "saturate intra-node bandwidth"):
    // the CollNetDirect graph up to 2.21, the CollNetChain graph from 2.22.
    const NcclCommInfo::Graph& collnetGraph = v >= 22200 ? c.collnetChain : c.collnetDirect;
    if (c.collnet && collnetGraph.nChannels > 0 && collnetGraph.bwIntra > collnetGraph.bwInter &&
        c.nRanks > c.nNodes)
    {
        ch = std::min(maxChannels, ch + ch / 2);
    }
    const bool arch = v >= 22500 ? c.minCompCap >= 90 : c.minCompCap == 90;
    const bool room = v >= 22000 ? ch < 16 : 2 * ch <= maxChannels;
    if (arch && c.nNodes > 1 && c.ring.bwIntra > 45 && room)
    {
        ch = std::min(maxChannels, 2 * ch);
    }
    // connect.cc: min(NCCL_MAX_NCHANNELS, maxCTAs), then copies up to max(NCCL_MIN_NCHANNELS,
    // minCTAs); the CTA bounds are the communicator's ncclConfig_t (NCCL_MAX_CTAS over it).
    const int ctaMax =
        settings.maxCtas > 0 ? std::min(settings.maxCtas, kMaxChannels) : kMaxChannels;
    const int ctaMin = settings.minCtas > 0 ? std::min(settings.minCtas, kMaxChannels) : 1;
    const int maxCtas = std::min(nccl::MaxChannelsAsked(config, v), ctaMax);
    const int minCtas = std::max(nccl::MinChannelsAsked(config, v), ctaMin);
    ch = std::min(ch, maxCtas);
    ch = std::min(maxChannels, std::max(ch, minCtas));
    c.channels = ch;

    int nvlsCh = SetNvlsTuning(c, b, config, v);
    if (config.nvlsChannels > 0)
    {
        nvlsCh = config.nvlsChannels;
    }
    c.nvlsChannels = std::max(std::min(ctaMin, ctaMax), std::min(ctaMax, nvlsCh));
    int p2pBase = c.channels;
    if (c.nvls && v >= 22000 && v < 22800 && c.channels < c.nvlsChannels)
    {
        p2pBase = c.nvlsChannels;
        if (v >= 22200)
        {
            c.channels = c.nvlsChannels;
        }
    }
    return p2pBase;
}

/// p2p: chunk, channels per peer (the fewest any peer gets: NVLink peers 2 x links, PCI peers 2,
/// network peers by release), rounded to powers of two. Network peers (paths.cc
/// ncclTopoGetNchannels, ncclTopoComputeP2pChannels): 2 up to 2.19 (NCCL_NCHANNELS_PER_NET_PEER's
/// default); 2.20-2.28 2, halved while 2 x nRanks > 4 x the p2p channels, at least the NICs the
/// GPU drives (one here); from 2.29 ceil(NIC GB/s / 14), halved while it times ceil(nRanks / 8)
/// exceeds the p2p channels.
void
SetP2pChannels(NcclCommInfo& c, const CommBandwidths& b, const SearchSettings& settings,
               int baseChannels)
{
    const uint32_t ncclVersion = settings.ncclVersion;
    // Across nodes NCCL_P2P_NET_CHUNKSIZE (128 KiB), doubled from 2.29.2 on ARM hosts with sm100
    // (init.cc: GB200 hosts have 4 GPUs); one node the NVLink (512 KiB) or PCI (128 KiB) chunk.
    const bool gbx = settings.cpuVendor == "arm" && c.minCompCap >= 100 && ncclVersion >= 22902;
    c.p2pChunkBytes = c.nNodes > 1 ? (gbx ? 262144 : 131072) : (b.nvlinkAll ? 524288 : 131072);
    c.p2pChannels = int(Pow2Up(uint32_t(std::min(baseChannels, kMaxChannels))));
    const bool byNicBandwidth = ncclVersion >= 22900;
    int perPeer;
    if (c.nNodes > 1 && !byNicBandwidth)
    {
        perPeer = 2;
        while (ncclVersion >= 22000 && perPeer > 1 &&
               uint64_t(perPeer) * c.nRanks > uint64_t(c.p2pChannels) * 4)
        {
            perPeer /= 2;
        }
    }
    else if (c.nNodes > 1)
    {
        perPeer = std::max(1, int(std::ceil(b.nicBwMin / 14.0)));
    }
    else if (b.nvlinkAll)
    {
        perPeer = 2 * std::max(1, int(b.intraTotal / NcclNvlinkPerLink(c.minCompCap) + 1e-9));
    }
    else
    {
        perPeer = 2;
    }
    perPeer = std::min(int(Pow2Up(uint32_t(perPeer))), c.p2pChannels);
    if (c.nNodes > 1 && byNicBandwidth)
    {
        // (2.30.7 paths.cc: divUp(nRanks, NCCL_MAX_DEV_WORK_P2P_PER_BATCH))
        const int batches = (int(c.nRanks) + 7) / 8;
        while (perPeer > 1 && perPeer * batches > c.p2pChannels)
        {
            perPeer /= 2;
        }
    }
    c.p2pChannelsPerPeer = perPeer;
}

/// NCCL's own P2P level (graph/paths.cc ncclTopoCheckP2p, NCCL_P2P_LEVEL unset) on a node where
/// the communicator has `nodeGpus` GPUs (NCCL's topology of a node holds the comm's GPUs there):
/// before 2.23 SYS (P2P wherever it works) except on Intel and Zhaoxin x86 and on ARM, which stop
/// at PXB; from 2.23 PXB (no P2P across the CPU's host bridge) except between the GPUs of an AMD
/// host of at most two.
int
DefaultP2pLevel(const SearchSettings& settings, size_t nodeGpus)
{
    const std::string& cpu = settings.cpuVendor;
    if (settings.ncclVersion < 22300)
    {
        return (cpu == "intel" || cpu == "zhaoxin" || cpu == "arm") ? NcclConfig::kP2pLevelPxb
                                                                    : NcclConfig::kP2pLevelSys;
    }
    return (cpu == "amd" && nodeGpus <= 2) ? NcclConfig::kP2pLevelSys : NcclConfig::kP2pLevelPxb;
}

/// NCCL's P2P rule (graph/paths.cc ncclTopoCheckP2p) for every pair of the comm's GPUs that
/// share a node: P2P where the path between them is no farther than the level (NCCL_P2P_DISABLE=1:
/// LOC, none), else SHM. The path type of a pair: NVL over NVLink (the model's nodes join their
/// NVLink GPUs through an NVSwitch or directly), else PciePathType: PIX through one PCIe switch,
/// PXB through several, PHB through the CPU's root complex (the generated PCIe-only nodes join
/// their GPUs' switches at `pcie-root`, a host bridge; a hand-written one says `host_bridge`);
/// SYS does not arise (one host per node). Unset, the level is NCCL's default (DefaultP2pLevel).
/// One pair over the level takes the whole communicator through host memory.
bool
P2pBetweenAllLocalGpus(const Topology& topology, const std::vector<uint32_t>& gpus,
                       const std::vector<GpuFacts>& facts,
                       const std::map<int32_t, std::vector<uint32_t>>& byNode,
                       const SearchSettings& settings)
{
    const NcclConfig& config = settings.config;
    if (config.p2pDisable == 1)
    {
        return false;
    }
    for (const auto& [node, ranks] : byNode)
    {
        const int level =
            config.p2pLevel >= 0 ? config.p2pLevel : DefaultP2pLevel(settings, ranks.size());
        for (size_t i = 0; i < ranks.size(); ++i)
        {
            for (size_t j = i + 1; j < ranks.size(); ++j)
            {
                const GpuFacts& a = facts[ranks[i]];
                const GpuFacts& b = facts[ranks[j]];
                int type = NcclConfig::kP2pLevelNvl;
                if (a.nvlink <= 0 || b.nvlink <= 0)
                {
                    type = PciePathType(topology, topology.Route(gpus[ranks[i]], gpus[ranks[j]]));
                }
                if (type > level)
                {
                    return false;
                }
            }
        }
    }
    return true;
}

/// NCCL's network transport can join every two of the comm's GPUs that share a node: each has a
/// NIC, and two GPUs with different NICs reach each other's NIC through the fabric (a topology
/// of one node usually has none: then NCCL could not connect them, and the model keeps SHM).
bool
NetworkJoinsLocalGpus(const Topology& topology, const std::vector<GpuFacts>& facts,
                      const std::map<int32_t, std::vector<uint32_t>>& byNode)
{
    for (const auto& [node, ranks] : byNode)
    {
        for (uint32_t a : ranks)
        {
            for (uint32_t b : ranks)
            {
                const GpuFacts& fa = facts[a];
                const GpuFacts& fb = facts[b];
                if (fa.nic < 0 || fb.nic < 0)
                {
                    return false;
                }
                if (fa.nic == fb.nic)
                {
                    continue;
                }
                if (fa.nicUplink < 0)
                {
                    return false;
                }
                try
                {
                    topology.Route(topology.ChannelTo(uint32_t(fa.nicUplink)), uint32_t(fb.nic));
                }
                catch (const TopologyError&)
                {
                    return false;
                }
            }
        }
    }
    return true;
}

/// The graphs and channels of a communicator of two or more ranks.
void
SearchGraphs(NcclCommInfo& c, const CommBandwidths& b, const SearchSettings& settings)
{
    const TuningTables& tables = GetTuningTables(settings.ncclVersion);
    const auto& intra = IntraSpeeds(c.minCompCap, settings.ncclVersion);
    const auto& inter = InterSpeeds(c.minCompCap, settings.ncclVersion);
    const int maxChannels = RingSearchMaxChannels(settings.ncclVersion);
    NcclCommInfo::Graph ring = SearchRing(c, b, intra, inter, maxChannels);
    NcclCommInfo::Graph tree = SearchTree(ring, c, b, intra);
    DuplicateGraph(ring, c.minCompCap, maxChannels);
    DuplicateGraph(tree, c.minCompCap, ring.nChannels); // the tree's maxChannels: the ring's
    // LL128 (tuning.cc): NVLink (or NVLink through one GPU) inside nodes; across nodes the network
    // path within PCIe switches (PXB) or, on sm90+, no farther than PXN (a NIC reached only across
    // the CPU turns it off); one compute capability (2.30: or sm90+); up to 2.24 only on sm70,
    // sm80 and sm90, in 2.25-2.26 also sm100 and sm120, from 2.27 any sm70+.
    bool ll128 =
        b.nvlinkAll && c.minCompCap >= 70 &&
        (c.minCompCap == c.maxCompCap || (tables.release >= kRelease230 && c.minCompCap >= 90)) &&
        (c.nNodes == 1 || b.typeInter <= NcclConfig::kP2pLevelPxb ||
         (c.minCompCap >= 90 && b.typeInter <= kPathPxn));
    const int cc = c.minCompCap;
    if (!tables.ll128Blackwell)
    {
        ll128 = ll128 && (cc == 70 || cc == 80 || cc == 90);
    }
    else if (settings.ncclVersion < 22700)
    {
        // 2.25-2.26 name the architectures (sm100 and sm120 added); 2.27 takes any sm70+.
        ll128 = ll128 && (cc == 70 || cc == 80 || cc == 90 || cc == 100 || cc == 120);
    }
    ring.ll128 = tree.ll128 = ll128;
    c.ring = ring;
    c.tree = tree;
    SearchNvls(c, b, intra, inter, settings);
    SearchCollNet(c, b, inter, settings);
    const NcclConfig& config = settings.config;
    c.pat = (config.patEnable != 0) && c.minCompCap >= 60 && c.nNodes == c.nRanks &&
            (tables.modern || config.patEnable == 1);
    const int p2pBase = SetChannels(c, b, config, settings);
    SetP2pChannels(c, b, settings, p2pBase);
}
} // namespace

DeviceLinks
IndexDeviceLinks(const Topology& topology)
{
    DeviceLinks links(topology.Devices().size());
    for (uint32_t i = 0; i < topology.Links().size(); ++i)
    {
        links[topology.Links()[i].a].push_back(i);
        links[topology.Links()[i].b].push_back(i);
    }
    return links;
}

NcclCommInfo
SearchCommunicator(const Topology& topology, const DeviceLinks& links,
                   const std::vector<uint32_t>& gpus, const SearchSettings& settings)
{
    NcclCommInfo c;
    c.ncclVersion = settings.ncclVersion;
    // init.cc computeBuffSizes: 2.18 gives ARM hosts a 1 MiB Simple buffer (DEFAULT_BUFFSIZE_ARM).
    c.simpleStepBytes =
        settings.ncclVersion < 21900 && settings.cpuVendor == "arm" ? 131072 : 524288;
    c.nRanks = uint32_t(gpus.size());
    NS_ABORT_MSG_IF(gpus.empty(), "CollectiveModel: communicator without ranks");

    std::vector<GpuFacts> facts;
    std::map<int32_t, std::vector<uint32_t>> byNode; // node -> comm ranks
    c.localGpusOfNode.assign(topology.NodeCount(), 0);
    for (uint32_t r = 0; r < gpus.size(); ++r)
    {
        facts.push_back(DescribeGpu(topology, links, r, gpus[r]));
        byNode[facts.back().node].push_back(r);
        const GpuFacts& f = facts.back();
        if (f.node >= 0 && uint32_t(f.node) < c.localGpusOfNode.size() && f.local >= 0 &&
            f.local < 64)
        {
            c.localGpusOfNode[f.node] |= uint64_t(1) << f.local;
        }
    }
    const bool p2p = P2pBetweenAllLocalGpus(topology, gpus, facts, byNode, settings);
    if (!p2p && settings.config.shmDisable == 1 && NetworkJoinsLocalGpus(topology, facts, byNode))
    {
        // Neither P2P nor SHM: NCCL's network transport, and a node of one GPU per rank.
        c.viaNet = true;
        byNode.clear();
        for (uint32_t r = 0; r < gpus.size(); ++r)
        {
            byNode[int32_t(r)].push_back(r);
            c.rankNic.push_back(facts[r].nic);
            c.rankNicUplink.push_back(facts[r].nicUplink);
        }
    }
    else if (!p2p)
    {
        // No P2P: NCCL's paths between GPUs go through the CPU (PCIe both ways), so its search
        // sees no NVLink and no NVSwitch (no NVLS), and SHM carries the data.
        for (GpuFacts& f : facts)
        {
            f.nvlink = 0;
            f.nvswitch = false;
        }
        c.viaHost = true;
    }
    if (c.viaNet)
    {
        for (uint32_t r = 0; r < gpus.size(); ++r)
        {
            c.nodes.push_back({r});
        }
    }
    else
    {
        c.nodes = GroupRanksByNode(topology, gpus, NodeOrder::FirstRank);
    }
    c.nodeOfRank.assign(gpus.size(), 0);
    for (uint32_t k = 0; k < c.nodes.size(); ++k)
    {
        for (uint32_t r : c.nodes[k])
        {
            c.nodeOfRank[r] = k;
        }
    }
    c.nNodes = uint32_t(byNode.size());
    c.ppn = c.nRanks / c.nNodes;
    c.minLocalRanks = c.nRanks;
    for (const auto& node : c.nodes)
    {
        c.minLocalRanks = std::min(c.minLocalRanks, uint32_t(node.size()));
    }
    c.minCompCap = std::numeric_limits<int>::max();
    c.maxCompCap = 0;
    c.nvswitch = true;
    for (const GpuFacts& f : facts)
    {
        c.minCompCap = std::min(c.minCompCap, f.cc);
        c.maxCompCap = std::max(c.maxCompCap, f.cc);
        c.nvswitch = c.nvswitch && f.nvswitch;
    }
    // NVLink payload efficiency: NCCL's per-link figure over the GPU's per-link line rate.
    c.nvlinkEfficiency =
        settings.nvlinkEfficiency > 0
            ? settings.nvlinkEfficiency
            : std::min(1.0, NcclNvlinkPerLink(c.minCompCap) * 1e9 / facts[0].rawPerLink);
    c.channelBandwidth = settings.channelBandwidth > 0 ? settings.channelBandwidth
                                                       : NcclNvlinkPerLink(c.minCompCap) * 1e9;
    const TuningTables& tables = GetTuningTables(settings.ncclVersion);
    const int ccIdx = CompCapIndex(c.minCompCap);
    c.nvlsEfficiency =
        settings.nvlsEfficiency > 0 ? settings.nvlsEfficiency : tables.nvlsEff[ccIdx];
    if (tables.nvlsEff[ccIdx] == 0 && settings.nvlsEfficiency == 0)
    {
        c.nvlsEfficiency = 0.85;
    }

    if (c.nRanks > 1)
    {
        SearchGraphs(c, SummarizeBandwidths(facts, byNode, c.nvlinkEfficiency), settings);
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

std::vector<std::vector<uint32_t>>
GroupRanksByNode(const Topology& topology, const std::vector<uint32_t>& gpus, NodeOrder order)
{
    std::vector<std::vector<uint32_t>> nodes;
    std::map<int32_t, size_t> index;
    for (uint32_t r = 0; r < gpus.size(); ++r)
    {
        int32_t node = topology.GetDevice(gpus[r]).node;
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
                             return topology.GetDevice(gpus[x]).localIndex <
                                    topology.GetDevice(gpus[y]).localIndex;
                         });
    }
    if (order == NodeOrder::NodeId)
    {
        std::vector<std::vector<uint32_t>> byId;
        for (const auto& [node, i] : index)
        {
            byId.push_back(std::move(nodes[i]));
        }
        return byId;
    }
    return nodes;
}

std::vector<std::vector<uint32_t>>
RingOrders(const std::vector<std::vector<uint32_t>>& nodes, int channels)
{
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

NodeTree
DoubleBinaryTree(int nNodes, int tree)
{
    NodeTree t;
    t.children.resize(size_t(nNodes));
    for (int k = 0; k < nNodes; ++k)
    {
        int parent = DtreeParent(nNodes, k, tree);
        if (parent < 0)
        {
            t.root = k;
        }
        else
        {
            t.children[parent].push_back(k);
        }
    }
    return t;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
