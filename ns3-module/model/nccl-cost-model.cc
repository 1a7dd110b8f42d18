/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's cost model reproduced from src/graph/tuning.cc (ncclTopoTuneModel and
 * ncclTopoGetAlgoTime) as each emulated release has it: the 2.28+ NVLS efficiency formulas, and
 * the formulas of 2.18 to 2.27 (nccl-tuning-tables.h lists the releases read). Constants and
 * their sources: doc/collective-model.md and ../shared/notes/nccl-model-facts.md.
 */
#include "nccl-cost-model.h"

#include "nccl-config.h"
#include "nccl-indices.h"
#include "nccl-tuning-tables.h"

#include "ns3/log.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNcclCostModel");

namespace nccl
{
namespace
{
/// The figures of one call that NCCL's formulas share.
struct CostInputs
{
    const TuningTables& t;
    const NcclCommInfo* comm = nullptr;
    int coll = 0;
    int nRanks = 0;
    int nNodes = 0;
    double ppnF = 0; //!< ranks per node, not rounded (bandwidth)
    int ppn = 0;     //!< ranks per node, rounded down (latency)
    double llMaxBw = 0;
    double perChMaxTree = 0;
    double perChMaxRingLL128 = 0;
    double perChMaxTreeLL128 = 0;
    double perChMaxNvlsTree = 0;
    double nvlsEff = 0;
    double netOverheadBase = 0;
    int nsteps = 0;      //!< ring steps
    int nInterSteps = 0; //!< of which cross nodes
    /// A node of the comm holds one of its GPUs: NCCL's tree graph there is a plain TREE
    /// (search.cc: ngpus == 1), whose bandwidth it takes at 0.85 (every release).
    bool plainTree = false;
    bool x86Cpu = true; //!< CostSettings::x86Cpu
    int dtype = -1;     //!< CollectiveCall::dtype
    int redop = -1;     //!< CollectiveCall::redop
    int pipeOps = 1;    //!< CollectiveCall::pipeOps
};

/// NCCL's ncclNvlsSupported (device.h; 2.18's NCCL_NVLS_SUPPORTS): multimem reduces 32/64-bit
/// integers, fp16 and bf16 by sum, min or max, fp32 and fp64 by sum only; never 8-bit types,
/// prod, avg (a pre- or post-scaled sum) or a custom PreMulSum op. Unknown (-1): supported.
bool
NvlsReduces(int dtype, int redop)
{
    if (dtype < 0 || redop < 0)
    {
        return true;
    }
    const bool sum = redop == 0;
    const bool minMax = redop == 2 || redop == 3;
    switch (dtype)
    {
    case 2: // int32
    case 3: // uint32
    case 4: // int64
    case 5: // uint64
    case 6: // fp16
    case 9: // bf16
        return sum || minMax;
    case 7: // fp32
    case 8: // fp64
        return sum;
    default:
        return false;
    }
}

CostInputs
MakeInputs(const TuningTables& t, int coll, const NcclCommInfo& comm, bool amd)
{
    CostInputs in{t};
    in.comm = &comm;
    in.coll = coll;
    const int nRanks = int(comm.nRanks);
    const int nNodes = int(comm.nNodes);
    in.nRanks = nRanks;
    in.nNodes = nNodes;
    in.ppnF = double(nRanks) / nNodes;
    in.ppn = int(comm.ppn);
    const int ccIdx = CompCapIndex(comm.minCompCap);
    const int index2 = nNodes <= 2 ? nNodes - 1 : 2;
    const int index1 = nNodes == 1 ? ccIdx : (amd ? 1 : 0);
    in.llMaxBw = t.llMaxBw[index1][index2];
    in.perChMaxTree = t.perChMaxTree[ccIdx][index2];
    in.perChMaxRingLL128 = t.perChMaxRingLL128[ccIdx][index2];
    in.perChMaxTreeLL128 = t.perChMaxTreeLL128[ccIdx][index2];
    in.perChMaxNvlsTree = t.perChMaxNvlsTree[ccIdx][index2];
    in.nvlsEff = t.nvlsEff[ccIdx];
    in.netOverheadBase = amd ? 2.0 : 1.0;
    in.plainTree = comm.minLocalRanks == 1;

    in.nsteps = coll == kAllReduce                               ? 2 * (nRanks - 1)
                : (coll == kReduceScatter || coll == kAllGather) ? nRanks - 1
                                                                 : nRanks;
    if (t.modern)
    {
        in.nInterSteps = nNodes == 1                                      ? 0
                         : coll == kAllReduce                             ? 2 * (nNodes - 1)
                         : (coll == kReduceScatter || coll == kAllGather) ? nNodes - 1
                                                                          : nNodes;
    }
    else
    {
        in.nInterSteps = coll == kAllReduce ? (nNodes > 1 ? 2 * nNodes : 0)
                         : (coll == kReduceScatter || coll == kAllGather) ? nNodes - 1
                                                                          : nNodes;
    }
    return in;
}

/// The graph an algorithm runs on.
const NcclCommInfo::Graph&
GraphOf(const NcclCommInfo& comm, int a)
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
    case kCollNetDirect:
        return comm.collnetDirect; // empty without SHARP switches or NCCL_COLLNET_ENABLE=1
    case kCollNetChain:
        return comm.collnetChain;
    default:
        return none;
    }
}

/// The algorithms NCCL implements for a function.
bool
Supported(const TuningTables& t, int coll, int a)
{
    return ::eidolon::spec::NcclImplements(t.version, coll, a, kSimple);
}

/// CollNetDirect AllReduce at full speed needs a NIC per GPU: NCCL divides the bus bandwidth by
/// the GPU/NIC ratio r = ppn / heads taken halfway to 1 (r - (r - 1) / 2), and takes 0.85 of it
/// on sm90+.
double
CollNetDirectFactor(const CostInputs& in, const NcclCommInfo& comm, const NcclCommInfo::Graph& g)
{
    double ratio = in.ppnF / double(g.nChannels);
    ratio -= (ratio - 1) / 2;
    return (comm.minCompCap >= 90 ? 0.85 : 1.0) / ratio;
}

/// CollNetDirect AllGather/ReduceScatter: every local rank is a head with its own rail, so the
/// bus bandwidth is ppn heads' worth: 2.20-2.24 ppn x bwIntra, times 0.95 at one rank per node to
/// 0.85 at eight ("measured corrective ratio", interpolated); 2.27+ ppn x min(bwIntra,
/// 0.9 bwInter). No bus-to-algorithm conversion.
double
CollNetDirectGatherBandwidth(const CostInputs& in, const NcclCommInfo::Graph& g)
{
    if (in.t.release >= kRelease227)
    {
        return in.ppnF * std::min(g.bwIntra, 0.9 * g.bwInter);
    }
    const double w = (in.ppnF - 1) / 7.0;
    return in.ppnF * g.bwIntra * (w * 0.85 + (1 - w) * 0.95);
}

/// Bus bandwidth (GB/s) of algorithm a, protocol p by the 2.28+ formulas; nothing where NCCL
/// skips the pair (an NVLS graph of fewer than two heads).
std::optional<double>
ModernBusBandwidth(const CostInputs& in, const NcclCommInfo::Graph& g, int a, int p)
{
    const int coll = in.coll;
    const bool collnet = a == kCollNetDirect || a == kCollNetChain;
    double bw = (in.nNodes <= 2 || collnet) ? g.bwIntra : g.bwInter;
    if (a == kNvls || a == kNvlsTree)
    {
        if (g.nChannels < 2)
        {
            return std::nullopt;
        }
        double intraBw = g.bwIntra * in.nvlsEff * (g.nChannels - 1) / g.nChannels;
        intraBw *= coll == kAllReduce ? 2.0 : (in.ppnF - 1) / in.ppnF;
        double interBw = g.bwInter * ((a == kNvlsTree && in.nNodes <= 2) ? 2.0 : 1.0);
        bw = std::min(intraBw, interBw);
        if (a == kNvlsTree)
        {
            bw = std::min(bw, in.perChMaxNvlsTree);
        }
    }
    double busBw = g.nChannels * bw;
    if (a == kRing && p == kLL)
    {
        busBw = std::min(in.llMaxBw, 0.5 * busBw);
    }
    if (a == kRing && p == kLL128)
    {
        busBw = std::min(0.92 * busBw, g.nChannels * in.perChMaxRingLL128);
    }
    if (a == kTree && coll == kAllReduce)
    {
        busBw = std::min(0.92 * busBw, g.nChannels * in.perChMaxTree);
    }
    if (a == kTree && p == kLL)
    {
        busBw = std::min(busBw / 3.8, in.llMaxBw);
    }
    if (a == kTree && p == kLL128)
    {
        busBw = std::min(busBw * (in.nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                         g.nChannels * in.perChMaxTreeLL128);
    }
    if (a == kTree && in.plainTree && in.nRanks > 1)
    {
        busBw *= 0.85;
    }
    if (a == kPat)
    {
        busBw *= in.t.version < 22400 ? 0.85 : 0.75; // 2.23.4 tuning.cc .85, 2.24 on .75
    }
    if (a == kCollNetDirect && coll == kAllReduce)
    {
        busBw *= CollNetDirectFactor(in, *in.comm, g);
    }
    if (a == kCollNetDirect && (coll == kAllGather || coll == kReduceScatter))
    {
        busBw = CollNetDirectGatherBandwidth(in, g);
    }
    double ratio = 1.0;
    if (a == kRing || ((a == kNvls || a == kNvlsTree) && coll == kAllReduce))
    {
        ratio = double(in.nRanks) / in.nsteps;
    }
    else if (a == kTree || a == kCollNetDirect || a == kCollNetChain)
    {
        ratio = (coll == kAllReduce) ? 0.5 : 1.0;
    }
    busBw *= ratio;
    return busBw;
}

/// Bandwidth per channel (GB/s) NCCL's formulas before 2.28 start from: NVLS min(bwIntra,
/// bwInter) from 2.20 (2.27: AllGather/ReduceScatter min(bwIntra (ppn-1)/ppn, 0.9 bwInter)),
/// NVLSTree min(bwIntra, bwInter or half of it from three nodes); 2.18 takes the graph's figure.
double
ClassicChannelBandwidth(const CostInputs& in, const NcclCommInfo::Graph& g, int a)
{
    const bool collnet = a == kCollNetDirect || a == kCollNetChain;
    double bw = (in.nNodes <= 2 || collnet) ? g.bwIntra : g.bwInter;
    if (in.t.release == kRelease218)
    {
        return bw;
    }
    if (a == kNvls)
    {
        bw = (in.t.release >= kRelease227 && in.coll != kAllReduce)
                 ? std::min(g.bwIntra * (in.ppnF - 1) / in.ppnF, g.bwInter * 0.9)
                 : std::min(g.bwIntra, g.bwInter);
    }
    if (a == kNvlsTree)
    {
        bw = std::min(g.bwIntra, in.nNodes <= 2 ? g.bwInter : g.bwInter / 2);
    }
    return bw;
}

/// NCCL's bus-to-algorithm bandwidth ratio before 2.28: rings nRanks/nsteps, NVLS 5/6 (2.18:
/// NVLSTree 0.7 nNodes / 2(nNodes-1)), the rest 1/2; from 2.23 only rings convert for
/// AllGather/ReduceScatter, before that all but CollNetDirect.
double
ClassicRatio(const CostInputs& in, int a)
{
    const bool agRs = in.coll == kAllGather || in.coll == kReduceScatter;
    if (agRs && ((in.t.modern && a != kRing) || a == kCollNetDirect))
    {
        return 1.0;
    }
    if (a == kRing)
    {
        return double(in.nRanks) / in.nsteps;
    }
    if (a == kNvlsTree && in.t.release == kRelease218)
    {
        return in.nNodes > 1 ? 0.7 * in.nNodes / (2.0 * (in.nNodes - 1)) : 0.0;
    }
    if (a == kNvls || a == kNvlsTree)
    {
        return 5.0 / 6.0;
    }
    return 0.5;
}

/// Bus bandwidth (GB/s) of algorithm a, protocol p by the formulas of 2.18 to 2.27.
double
ClassicBusBandwidth(const CostInputs& in, const NcclCommInfo::Graph& g, int a, int p)
{
    const TuningTables& t = in.t;
    const int coll = in.coll;
    double busBw = g.nChannels * ClassicChannelBandwidth(in, g, a);
    if (a == kRing && p == kLL)
    {
        double f = t.ringLLHalf                                               ? 0.5
                   : (in.nNodes > 1 || coll == kAllReduce || coll == kReduce) ? 0.25
                                                                              : 1.0 / 3.0;
        busBw = std::min(in.llMaxBw, busBw * f);
    }
    if (a == kRing && p == kLL128)
    {
        double f = (!t.modern && in.ppnF < 2) ? 0.7 : 0.92;
        busBw = std::min(busBw * f, g.nChannels * in.perChMaxRingLL128);
    }
    if (a == kTree && (!t.modern || coll == kAllReduce))
    {
        busBw = std::min(busBw * .92, g.nChannels * in.perChMaxTree);
    }
    if (a == kTree && p == kLL)
    {
        busBw = std::min(busBw / 3.8, in.llMaxBw);
    }
    if (a == kTree && p == kLL128)
    {
        busBw = std::min(busBw * (in.nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                         g.nChannels * in.perChMaxTreeLL128);
    }
    if (a == kTree && in.plainTree && in.nRanks > 1)
    {
        busBw *= 0.85;
    }
    if (a == kPat)
    {
        busBw *= in.t.version < 22400 ? 0.85 : 0.75; // 2.23.4 tuning.cc .85, 2.24 on .75
    }
    if (a == kCollNetDirect && coll == kAllReduce)
    {
        busBw *= CollNetDirectFactor(in, *in.comm, g);
    }
    if (a == kCollNetDirect && (coll == kAllGather || coll == kReduceScatter))
    {
        busBw = CollNetDirectGatherBandwidth(in, g);
    }
    return busBw * ClassicRatio(in, a);
}

/// NCCL's network hop latency for algorithm a, protocol p: with one rank per node (2.19+)
/// "latencies are fully exposed" and every algorithm takes the Tree's figure.
double
NetHopLatency(const TuningTables& t, int a, int p, int ppn)
{
    return t.hwLat[kHwNet][t.modern && ppn == 1 ? kTree : a][p];
}

/// Latency (us) of algorithm a, protocol p.
double
Latency(const CostInputs& in, const NcclCommInfo::Graph& g, int a, int p)
{
    const TuningTables& t = in.t;
    const int coll = in.coll;
    const int intraHw = g.nvlinkIntra ? kHwNvlink : kHwPci;
    double intraLat = t.hwLat[intraHw][a][p];
    double interLat = NetHopLatency(t, a, p, in.ppn);
    double lat = t.baseLat[a][p];
    if (a == kRing)
    {
        if (coll == kBroadcast || coll == kReduce)
        {
            const int hw = in.nNodes == 1 ? intraHw : kHwNet;
            if (g.sameChannels)
            {
                lat += t.hwLat[hw][kRing][p];
            }
            else
            {
                // NCCL: "Add some chunk latency, waiting for proper chunk modeling": Simple
                // takes the tree's per-hop figure, every protocol pays it nsteps (nRanks) times.
                lat += in.nsteps * t.hwLat[hw][p == kSimple ? kTree : kRing][p];
            }
        }
        else
        {
            if (in.nNodes > 1)
            {
                double overhead = in.netOverheadBase * (p == kSimple ? 3 : 1);
                intraLat = std::max(intraLat, overhead);
            }
            lat += (in.nsteps - in.nInterSteps) * intraLat + in.nInterSteps * interLat;
        }
    }
    else if (a == kTree)
    {
        lat += 2 * ((in.ppn - 1) * intraLat + Log2i(uint64_t(in.nNodes)) * interLat);
    }
    else if (a == kNvls && t.release == kRelease218)
    {
        lat += in.nNodes > 1 ? interLat : 0; // a 23 us base, no per-hop NVLink figure
    }
    else if (a == kNvls)
    {
        lat = intraLat + (in.nNodes > 1 ? interLat : 0);
    }
    else if (a == kNvlsTree && t.release == kRelease218)
    {
        lat += 2 * (in.nNodes - 1) * interLat;
    }
    else if (a == kNvlsTree)
    {
        lat += intraLat + 2 * Log2i(uint64_t(in.nNodes)) * interLat;
    }
    else if (a == kCollNetDirect)
    {
        // Scatter to the heads and gather back (one NVLink hop each way when the node has more
        // than one GPU), an arity serialization per extra local rank (0.5 us in 2.18, 0.4 us
        // since), one trip through the switches.
        const double arity = t.release == kRelease218 ? 0.5 : 0.4;
        lat += 2 * (std::min(1, in.ppn - 1) * intraLat + (in.ppn - 1) * arity) + interLat;
    }
    else if (a == kCollNetChain)
    {
        lat += 2 * (in.ppn - 1) * intraLat + interLat; // up the chain, down it, one network trip
    }
    else if (a == kPat)
    {
        lat = 8.0 + Log2i(uint64_t(in.nNodes)) * interLat / 3.5 + 2.8 * in.nRanks;
    }
    return lat;
}

/// Enable rules: LL128 platform rule, NVLSTree only across nodes, CollNet (and multi-node NVLS,
/// which needs it) only with SHARP switches and NCCL_COLLNET_ENABLE=1 (comm.collnet),
/// CollNetDirect only on NVSwitch nodes, PAT only with one rank per node; then NCCL_ALGO and
/// NCCL_PROTO (2.18-2.23: Ring and Tree back on where NCCL_ALGO leaves them, NVLS and NVLSTree
/// nothing and CollNet is off, spec::NcclCollNetFallback). A disabled pair gets bandwidth 0.
///
/// AllGather and ReduceScatter through SHARP across nodes: CollNetDirect (2.20+) and NVLS (2.27+;
/// before, NVLS gathers and scatters inside one node only: enqueue.cc) need the plugin's
/// iallgather / ireducescatter (comm.collnetAllgatherReduceScatter) and no node with more ranks
/// than CollNetDirect heads (a NIC per GPU).
void
ApplyEnableRules(const CostInputs& in, const NcclCommInfo& comm, const EnableMasks& masks,
                 NcclCostTable& table)
{
    const int coll = in.coll;
    bool listed[kAlgos];
    std::copy(std::begin(masks.algo[coll]), std::end(masks.algo[coll]), listed);
    ::eidolon::spec::NcclCollNetFallback(in.t.version, comm.collnet, in.nNodes, listed);
    for (int a = 0; a < kAlgos; ++a)
    {
        const NcclCommInfo::Graph& g = GraphOf(comm, a);
        bool algoOn = listed[a];
        if (a == kNvlsTree && in.nNodes == 1)
        {
            algoOn = false;
        }
        // NVLS reduces only some types and ops (AllGather moves data alone); 2.23+ keep PAT's
        // ReduceScatter off for avg and PreMulSum (enqueue.cc).
        if ((a == kNvls || a == kNvlsTree) && coll != kAllGather &&
            !NvlsReduces(in.dtype, in.redop))
        {
            algoOn = false;
        }
        if (a == kPat && coll == kReduceScatter && in.redop >= 4)
        {
            algoOn = false;
        }
        if ((a == kCollNetDirect || a == kCollNetChain || (a == kNvls && in.nNodes > 1)) &&
            !comm.collnet)
        {
            algoOn = false;
        }
        if ((a == kCollNetDirect || (a == kNvls && in.nNodes > 1)) &&
            (coll == kAllGather || coll == kReduceScatter) &&
            (!comm.collnetAllgatherReduceScatter || in.ppn > comm.collnetDirect.nChannels ||
             in.ppnF > in.ppn /* uneven nodes: the fullest has more ranks than heads */ ||
             (a == kNvls && in.t.release < kRelease227)))
        {
            algoOn = false;
        }
        if (a == kCollNetDirect && !comm.nvswitch)
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
            bool on = algoOn && masks.proto[coll][p];
            if (p == kLL128 && !g.ll128 && !masks.protoNamed[coll])
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
}

/// NCCL's time estimate per algorithm/protocol: latency + bytes / bandwidth, with the tree
/// correction by size and the multi-node ring Simple latency factor.
void
EstimateTimes(const CostInputs& in, const NcclCommInfo& comm, uint64_t nBytes, NcclCostTable& table)
{
    const TuningTables& t = in.t;
    const int coll = in.coll;
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
            if (t.nvlsTreeCorrection && a == kNvlsTree && coll == kAllReduce &&
                comm.minCompCap >= 100 && in.x86Cpu && logSize >= 0 && logSize < 24 &&
                logSize < entries)
            {
                bw *= t.treeCorrection[p][logSize];
            }
            if (a == kRing && p == kSimple && in.nNodes > 1 && coll == kAllReduce &&
                double(nBytes) / (double(comm.channels) * in.nRanks) >= 64)
            {
                lat *= comm.minCompCap < 80 ? 1.9 : 1.4;
            }
            // Pipelined operations of a group: a Ring pays its latency per operation, the others
            // once per batch of work items (ncclTopoGetAlgoTime).
            const int batch = WorkBatchColls(t.version);
            const int latCount = a == kRing ? in.pipeOps : (in.pipeOps + batch - 1) / batch;
            table.timeUs[a][p] = lat * latCount + double(nBytes) / (1000.0 * bw);
            // 2.24+ push fp8 rings of more than 8 ranks behind everything else (their
            // reductions lose precision over so many steps): x1024 (enqueue.cc).
            if (a == kRing && (in.dtype == 10 || in.dtype == 11) && in.nRanks > 8 &&
                t.version >= 22400)
            {
                table.timeUs[a][p] *= 1024.0;
            }
        }
    }
}
} // namespace

int
WorkBatchColls(uint32_t version)
{
    return version < 22200   ? 9
           : version < 22300 ? 1024 / 64
           : version < 23000 ? 1024 / 96
                             : 1024 / 128;
}

void
ComputeCosts(const CollectiveCall& call, const NcclCommInfo& comm, const CostSettings& settings,
             bool applyEnv, NcclCostTable& table)
{
    ComputeCosts(call, comm, settings,
                 ParseEnableMasks(settings.config, settings.ncclVersion, applyEnv), table);
}

void
ComputeCosts(const CollectiveCall& call, const NcclCommInfo& comm, const CostSettings& settings,
             const EnableMasks& masks, NcclCostTable& table)
{
    const TuningTables& t = GetTuningTables(settings.ncclVersion);
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
    CostInputs in = MakeInputs(t, coll, comm, settings.amdCpu);
    in.x86Cpu = settings.x86Cpu;
    in.dtype = call.dtype;
    in.redop = call.redop;
    in.pipeOps = std::max(1, call.pipeOps);
    for (int a = 0; a < kAlgos; ++a)
    {
        if (!Supported(t, coll, a))
        {
            continue;
        }
        const NcclCommInfo::Graph& g = GraphOf(comm, a);
        for (int p = 0; p < kProtos; ++p)
        {
            if (!::eidolon::spec::NcclImplements(t.version, coll, a, p))
            {
                continue;
            }
            if (g.nChannels == 0)
            {
                continue;
            }
            double busBw;
            if (t.nvlsEfficiencyModel)
            {
                std::optional<double> bw = ModernBusBandwidth(in, g, a, p);
                if (!bw)
                {
                    continue;
                }
                busBw = *bw;
            }
            else
            {
                busBw = ClassicBusBandwidth(in, g, a, p);
            }
            table.bandwidthGBps[a][p] = busBw;
            table.latencyUs[a][p] = Latency(in, g, a, p);
        }
    }
    ApplyEnableRules(in, comm, masks, table);
    EstimateTimes(in, comm, call.bytes, table);
}

namespace
{
/// A ring across nodes runs in lockstep: a rank forwards in step k what it received in step
/// k - 1, and Simple keeps only two chunks in flight per connection (NCCL_STEPS = 8 slots, 4 per
/// chunk), so every step of every rank waits for the slowest hop of the ring, the network hop,
/// not only the nNodes - 1 steps that cross it (NCCL's estimate). The ring repeats its steps for
/// every loop of channels x ranks x chunk bytes (chunk: Simple 4 x 512 KiB, LL128 576,000 B of
/// data), so the latency is paid per loop:
///   base + loops x nsteps x max(network hop, NVLink/PCI hop).
/// A Simple ring inside one node runs the same way with its NVLink (PCI) hop on every step: NCCL's
/// estimate pays the nsteps hops once, a ring of several loops pays them per loop. LL128 inside a
/// node streams its flagged lines (no step is held back) and keeps NCCL's estimate.
/// LL does not run in lockstep (LlRingPathLatencyUs).
/// doc/collective-model.md ("Rings across nodes") shows the fit to the 4 x 8 H100 logs.
double
LockstepRingLatencyUs(const CollectiveCall& call, const NcclCommInfo& comm,
                      const CollectivePlan& plan, const CostSettings& settings)
{
    const TuningTables& t = GetTuningTables(settings.ncclVersion);
    const int p = int(plan.protocol);
    const int f = FuncOf(call.kind);
    const uint64_t n = comm.nRanks;
    const int intraHw = comm.ring.nvlinkIntra ? kHwNvlink : kHwPci;
    const double intraHop = t.hwLat[intraHw][kRing][p];
    const double hop =
        comm.nNodes == 1
            ? intraHop
            : std::max(NetHopLatency(t, kRing, p, int(comm.ppn)) + settings.netMessageLatencyUs,
                       intraHop);
    const double chunk = p == kSimple ? 4.0 * double(comm.simpleStepBytes) : 576000.0;
    const double loopBytes = double(std::max(plan.channels, 1)) * double(n) * chunk;
    const double loops = std::max(1.0, std::ceil(double(call.bytes) / loopBytes));
    const double nsteps = f == kAllReduce ? 2.0 * double(n - 1) : double(n - 1);
    return t.baseLat[kRing][p] + loops * nsteps * hop;
}

/// An LL ring across nodes does not run in lockstep (each 16-byte line carries its flag and a
/// rank forwards it as it lands), so its time is the longest path a chunk takes: nsteps hops
/// along the ring (AllGather/ReduceScatter n - 1, AllReduce 2(n - 1), reduce then gather). The
/// ring crosses the network once every ppn hops, and a path of nsteps hops that starts at a
/// node's exit crosses it ceil(nsteps / ppn) times: every node boundary of the ring for
/// AllGather with ppn >= 2 (nNodes, where NCCL's estimate counts nNodes - 1), twice each for
/// AllReduce with ppn >= 3 (2 nNodes, where NCCL 2.19+ counts 2(nNodes - 1)). Each hop costs
/// NCCL's per-hop figure (NVLink/PCI hops at least NCCL's network post overhead, as its estimate
/// charges them; network hops plus the transport's message latency):
///   base + (nsteps - X) x max(intra hop, net overhead) + X x (network hop + message),
///   X = ceil(nsteps / ppn).
double
LlRingPathLatencyUs(const CollectiveCall& call, const NcclCommInfo& comm,
                    const CostSettings& settings)
{
    const TuningTables& t = GetTuningTables(settings.ncclVersion);
    const CostInputs in = MakeInputs(t, FuncOf(call.kind), comm, settings.amdCpu);
    const int intraHw = comm.ring.nvlinkIntra ? kHwNvlink : kHwPci;
    const double nsteps = in.nsteps;
    const double crossings = LlRingNetworkCrossings(call, comm);
    const double intraHop = std::max(t.hwLat[intraHw][kRing][kLL], in.netOverheadBase);
    const double netHop = NetHopLatency(t, kRing, kLL, in.ppn);
    return t.baseLat[kRing][kLL] + (nsteps - crossings) * intraHop +
           crossings * (netHop + settings.netMessageLatencyUs);
}

} // namespace

double
LlRingNetworkCrossings(const CollectiveCall& call, const NcclCommInfo& comm)
{
    const int f = FuncOf(call.kind);
    if (comm.nNodes <= 1 || comm.nRanks <= 1)
    {
        return 0;
    }
    const double n = comm.nRanks;
    const double nsteps = f == kAllReduce ? 2 * (n - 1) : n - 1;
    const double ppn = std::max<uint32_t>(1, comm.ppn);
    return std::min(nsteps, std::ceil(nsteps / ppn));
}

ChainHops
ChainHopLatencies(const CollectiveCall& call, const NcclCommInfo& comm, const CollectivePlan& plan,
                  const CostSettings& settings)
{
    const TuningTables& t = GetTuningTables(settings.ncclVersion);
    const int p = int(plan.protocol);
    const int intraHw = comm.ring.nvlinkIntra ? kHwNvlink : kHwPci;
    const CostInputs in = MakeInputs(t, FuncOf(call.kind), comm, settings.amdCpu);
    ChainHops h;
    h.baseUs = t.baseLat[kRing][p];
    h.intraHopUs = t.hwLat[intraHw][kRing][p];
    h.netHopUs = NetHopLatency(t, kRing, p, in.ppn) + settings.netMessageLatencyUs;
    if (comm.nNodes > 1 && p == kLL)
    {
        // As LlRingPathLatencyUs: an LL hop inside a node costs at least the network post
        // overhead NCCL's estimate charges it across nodes.
        h.intraHopUs = std::max(h.intraHopUs, in.netOverheadBase);
    }
    if (comm.nNodes > 1 && p == kSimple)
    {
        // A Simple chain across nodes runs in lockstep like a ring: each rank forwards slice i
        // after it received it, so every slice step waits for the slowest hop, the network one,
        // whose every message (the proxy posts a network send per 512 KiB slice) costs NCCL's
        // network hop latency for one message. NCCL's Ring/Simple figure (14 us) is per ring
        // step, and a ring step of AllReduce/AllGather is two network messages (chunkSteps 4 /
        // sliceSteps 2), so a message costs half of it, plus the transport's own. Each stage of
        // the chain (a copy hop; a network hop is two: the copy and the network transfer) fills
        // in one message, and each hop passes its slices one message apart:
        //   base + (slices + stages - 1) x message along the chain.
        const double sliceBytes = double(comm.simpleStepBytes); // NCCL_BUFFSIZE / NCCL_STEPS
        constexpr double kRingMessagesPerStep = 4.0 / 2.0;      // ALLREDUCE chunkSteps / sliceSteps
        const double message =
            t.hwLat[kHwNet][kRing][kSimple] / kRingMessagesPerStep + settings.netMessageLatencyUs;
        const double perChannel = double(call.bytes) / double(std::max(plan.channels, 1));
        const double slices = std::max(1.0, std::ceil(perChannel / sliceBytes));
        h.intraHopUs = message;
        h.netHopUs = 2 * message;
        h.lockstepUs = (slices - 1) * message;
    }
    return h;
}

double
PlanLatencyUs(const CollectiveCall& call, const NcclCommInfo& comm, const CollectivePlan& plan,
              const CostSettings& settings)
{
    const int a = int(plan.algorithm);
    const int p = int(plan.protocol);
    const int f = FuncOf(call.kind);
    if (f < 0 || comm.nRanks <= 1)
    {
        return 0;
    }
    if (a == kRing && (f == kBroadcast || f == kReduce))
    {
        // Every hop's latency once along a chain that crosses the nNodes - 1 node boundaries
        // (a channel whose ring enters the root's node after the root crosses one more: the
        // schedule charges each channel's own hops).
        const ChainHops h = ChainHopLatencies(call, comm, plan, settings);
        return h.baseUs + double(comm.nRanks - comm.nNodes) * h.intraHopUs +
               double(comm.nNodes - 1) * h.netHopUs + h.lockstepUs;
    }
    if (a == kRing && (f == kAllGather || f == kReduceScatter || f == kAllReduce))
    {
        if (comm.nNodes > 1)
        {
            return p == kLL ? LlRingPathLatencyUs(call, comm, settings)
                            : LockstepRingLatencyUs(call, comm, plan, settings);
        }
        if (p == kSimple)
        {
            return LockstepRingLatencyUs(call, comm, plan, settings);
        }
    }
    NcclCostTable table;
    ComputeCosts(call, comm, settings, false, table);
    // Trees (and NVLSTree, PAT) cross the network 2 log2(nNodes) times on their critical path;
    // CollNet and NVLS across nodes twice (up to the switches' reduction, and back).
    const bool sharp = a == kCollNetDirect || a == kCollNetChain || a == kNvls;
    const double netMessages = comm.nNodes <= 1 ? 0.0 : sharp ? 2.0 : 2.0 * CeilLog2(comm.nNodes);
    return table.latencyUs[a][p] + netMessages * settings.netMessageLatencyUs;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
