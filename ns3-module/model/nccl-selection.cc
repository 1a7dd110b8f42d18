/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's choice of algorithm, protocol and channels (src/enqueue.cc topoGetAlgoInfo,
 * getNChannels/calcCollChunking, scheduleP2pTasksToPlan; nccl-model-facts.md 2.2-2.4).
 */
#include "nccl-selection.h"

#include "nccl-config.h"
#include "nccl-indices.h"

#include "ns3/log.h"
#include "ns3/nccl-version.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNcclSelection");

namespace nccl
{
SchedulerCells
SchedulerCellsOf(uint32_t version)
{
    if (version < 22200)
    {
        return {0, false};
    }
    if (version < 22300)
    {
        return {512, false};
    }
    return {version >= 22900 ? 32u * 1024 : 16u * 1024, version >= 22600};
}

uint64_t
RankBytes(const CollectiveCall& call, uint32_t nRanks)
{
    const int f = FuncOf(call.kind);
    return (f == kAllGather || f == kReduceScatter) ? call.bytes / std::max<uint32_t>(nRanks, 1)
                                                    : call.bytes;
}

uint64_t
TrafficPerByte(int f, uint32_t nRanks)
{
    return f == kAllReduce ? 2 : (f == kAllGather || f == kReduceScatter) ? nRanks : 1;
}

namespace
{
/// The (algorithm, protocol) of least estimated time; false where every time is negative.
bool
PickFastest(const NcclCostTable& table, int* bestA, int* bestP, double* best)
{
    for (int a = 0; a < kAlgos; ++a)
    {
        for (int p = 0; p < kProtos; ++p)
        {
            double tt = table.timeUs[a][p];
            if (tt >= 0 && tt < *best)
            {
                *best = tt;
                *bestA = a;
                *bestP = p;
            }
        }
    }
    return *bestA >= 0;
}

/// NCCL 2.19-2.23's backup when the environment leaves a call nothing: Ring at the bandwidths it
/// had before the enable rules (tuning.cc `ringbdw`): every protocol up to 2.21, LL128 even where
/// NCCL's platform rule keeps it off; from 2.22 the protocols NCCL_PROTO and that rule leave.
EnableMasks
RingBackupMasks(const CostSettings& settings)
{
    const bool keepsProto = ::eidolon::spec::NcclRingBackupKeepsProto(settings.ncclVersion);
    EnableMasks m = ParseEnableMasks(settings.config, settings.ncclVersion, keepsProto);
    for (int f = 0; f < kFuncs; ++f)
    {
        for (int a = 0; a < kAlgos; ++a)
        {
            m.algo[f][a] = a == kRing;
        }
        if (!keepsProto)
        {
            std::fill(std::begin(m.proto[f]), std::end(m.proto[f]), true);
            m.protoNamed[f] = true;
        }
    }
    return m;
}
} // namespace

CollectivePlan
SelectPlan(const CollectiveCall& call, const NcclCommInfo& comm, const CostSettings& settings)
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
    ComputeCosts(call, comm, settings, true, table);
    int bestA = -1;
    int bestP = -1;
    double best = std::numeric_limits<double>::infinity();
    if (!PickFastest(table, &bestA, &bestP, &best))
    {
        // Nothing the environment allows can run here (NCCL_ALGO=Tree for a Broadcast, PAT for an
        // AllReduce, NVLS with NCCL_PROTO=LL, CollNetDirect without SHARP switches, ...).
        const bool ringBackup = ::eidolon::spec::NcclRingBackup(settings.ncclVersion);
        if (ringBackup)
        {
            ComputeCosts(call, comm, settings, RingBackupMasks(settings), table);
            plan.envOutcome = NcclEnvOutcome::RingBackup;
        }
        if (!ringBackup || !PickFastest(table, &bestA, &bestP, &best))
        {
            // NCCL fails the call; the model runs NCCL's own choice and says so (NoAlgorithm).
            ComputeCosts(call, comm, settings, false, table);
            PickFastest(table, &bestA, &bestP, &best);
            plan.envOutcome = NcclEnvOutcome::Unavailable;
        }
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
    plan.channels = OpChannels(call, comm, plan.algorithm, plan.protocol, settings.ncclVersion);
    plan.threadShare =
        OpThreadShare(call, comm, plan.algorithm, plan.protocol, settings.ncclVersion);
    NS_LOG_DEBUG(ToString(call.kind)
                 << " " << call.bytes << " B on " << comm.nRanks << " ranks -> "
                 << ToString(plan.algorithm) << "/" << ToString(plan.protocol) << " x"
                 << plan.channels << " (NCCL estimate " << plan.ncclEstimateUs << " us)");
    return plan;
}

std::string
NoAlgorithmMessage(const CollectiveCall& call, const NcclCommInfo& comm,
                   const CostSettings& settings, const CollectivePlan& plan)
{
    const uint32_t v = settings.ncclVersion;
    const std::string version = ::eidolon::spec::FormatNcclVersion(v);
    std::string set;
    auto name = [&](const char* variable, const char* value)
    {
        if (value)
        {
            set += (set.empty() ? "" : " and ") + std::string(variable) + "='" + value + "'";
        }
    };
    name("NCCL_ALGO", AlgoVariable(settings.config));
    name("NCCL_PROTO", ProtoVariable(settings.config));
    if (set.empty())
    {
        set = "NCCL's enable rules";
    }
    // NCCL's own warning and code (enqueue.cc), the datatype left open: the model does not know it.
    const ::eidolon::spec::NcclCallError nccl =
        ::eidolon::spec::NcclNoAlgorithmText(v, FuncOf(call.kind), AlgoVariable(settings.config),
                                             ProtoVariable(settings.config), "<its datatype>");
    const char* fn = ToString(call.kind);
    const std::string& warn = nccl.message;
    const char* code = nccl.code == 5 ? "ncclInvalidUsage" : "ncclInternalError";
    std::ostringstream m;
    m << set << " leave" << (set.find(" and ") == std::string::npos ? "s" : "") << " " << fn
      << " no algorithm/protocol on a communicator of " << comm.nRanks << " ranks (" << comm.nNodes
      << (comm.nNodes == 1 ? " node" : " nodes") << "): NCCL " << version
      << " fails such a call (\"" << warn << "\", " << code
      << "), where the real program would stop; here it runs as NCCL chooses without them ("
      << ToString(plan.algorithm) << "/" << ToString(plan.protocol) << " x" << plan.channels
      << "), so its time is not a real run's";
    return m.str();
}

namespace
{
/// Fewer channels for small operations: while the op has less than a channel's worth of bytes
/// per thread, drop a channel (thresholds: LL 8 B/thread x nRanks on rings, LL128 8, Simple 64;
/// threads 512, LL128 640); then, down to one channel, halve the threads while they are a
/// multiple of 128. `nt` gets the threads before the 3-warp floor (ntMax: the full count).
void
RingTreeChannels(const CollectiveCall& call, const NcclCommInfo& comm, int a, int p, int& nc,
                 int& nt, int* ntMax = nullptr)
{
    nc = comm.channels;
    nt = FullThreads(comm, NcclAlgorithm(a), NcclProtocol(p));
    if (ntMax)
    {
        *ntMax = nt;
    }
    uint64_t thr = p == kSimple ? 64 : 8;
    if (a == kRing && p == kLL)
    {
        thr *= comm.nRanks;
    }
    while (nc >= 2 && call.bytes < uint64_t(nc) * uint64_t(nt) * thr)
    {
        --nc;
    }
    while (call.bytes < uint64_t(nc) * uint64_t(nt) * thr && nt % 128 == 0)
    {
        nt /= 2;
    }
}
/// CollNet's channels for an op of `bytes` (enqueue.cc topoGetAlgoInfo; 640 threads, 512 B a
/// thread): CollNetChain drops a channel while bytes < channels x 640 x 512; CollNetDirect counts
/// its heads too and steps down towards 16, 8, 4, 2, 1 channels, halving the threshold each time it
/// passes 1.5 x the next step.
int
CollNetChannels(uint64_t bytes, const NcclCommInfo& comm, int a)
{
    int nc = std::max(comm.channels, 1);
    const uint64_t nt = 640;
    uint64_t thr = 512;
    if (a == kCollNetChain)
    {
        while (nc >= 2 && bytes < uint64_t(nc) * nt * thr)
        {
            --nc;
        }
        return nc;
    }
    const uint64_t heads = uint64_t(std::max(comm.collnetDirect.nChannels, 1));
    bool flag = true;
    for (int step = 16; step >= 1 && flag; step /= 2)
    {
        while ((flag = bytes < uint64_t(nc) * nt * heads * thr) && nc > step)
        {
            if (nc == step + step / 2)
            {
                thr /= 2;
            }
            --nc;
        }
    }
    return nc;
}
} // namespace

int
FullThreads(const NcclCommInfo& comm, NcclAlgorithm algorithm, NcclProtocol protocol)
{
    if (algorithm == NcclAlgorithm::Ring && protocol == NcclProtocol::Simple &&
        comm.ring.bwIntra * comm.ring.nChannels <= 12)
    {
        return 256;
    }
    return protocol == NcclProtocol::LL128 ? 640 : 512;
}

double
OpThreadShare(const CollectiveCall& call, const NcclCommInfo& comm, NcclAlgorithm algorithm,
              NcclProtocol protocol, uint32_t ncclVersion)
{
    const int a = int(algorithm);
    const bool halves = a == kRing || (a == kTree && ncclVersion < 22200);
    if (!halves || call.kind == CollectiveKind::SendRecv)
    {
        return 1.0;
    }
    int nc = 0, nt = 0, ntMax = 0;
    RingTreeChannels(call, comm, a, int(protocol), nc, nt, &ntMax);
    constexpr int kWarp = 32;
    nt = std::max(nt, 3 * kWarp);
    return std::min(1.0, double(nt) / double(ntMax));
}

int
OpChannels(const CollectiveCall& call, const NcclCommInfo& comm, NcclAlgorithm algorithm,
           NcclProtocol protocol, uint32_t ncclVersion)
{
    const int a = int(algorithm);
    const int p = int(protocol);
    const uint32_t n = comm.nRanks;
    int nc;
    if (a == kNvls)
    {
        // Across nodes (with SHARP) 2.28+ take no more than the comm's channels.
        nc = comm.nNodes == 1 || ncclVersion < 22800 ? comm.nvlsChannels
                                                     : std::min(comm.nvlsChannels, comm.channels);
    }
    else if (a == kNvlsTree)
    {
        nc = comm.nvlsChannels;
    }
    else if (a == kPat)
    {
        nc = comm.channels; // NCCL sets no maxThreads for PAT, so topoGetAlgoInfo drops none
    }
    else if (a == kCollNetDirect || a == kCollNetChain)
    {
        nc = CollNetChannels(call.bytes, comm, a);
    }
    else
    {
        int nt = 0;
        RingTreeChannels(call, comm, a, p, nc, nt);
    }
    // The scheduler cuts an op into cells of its release's minimum traffic and fills channels
    // with them.
    const SchedulerCells rule = SchedulerCellsOf(ncclVersion);
    // CollNet ops and NVLS across nodes (isCollnet) take all their channels, outside the cells.
    const bool isCollnet =
        a == kCollNetDirect || a == kCollNetChain || (a == kNvls && comm.nNodes > 1);
    if (rule.minTraffic == 0 || isCollnet)
    {
        return std::max(nc, 1);
    }
    const uint64_t traffic = RankBytes(call, n) * TrafficPerByte(FuncOf(call.kind), n) *
                             (p == kLL && rule.llTimesFour ? 4 : 1);
    uint64_t cells = std::max<uint64_t>(1, (traffic + rule.minTraffic - 1) / rule.minTraffic);
    nc = int(std::min<uint64_t>(uint64_t(std::max(nc, 1)), cells));
    return std::max(nc, 1);
}

/// Channels NCCL gives one point-to-point operation (scheduleP2pTasksToPlan): start at
/// nChannelsMin (channels per peer halved until nChannelsMin x nRanks fits the p2p channels), at
/// least chunk/8 (one node) or chunk/2 (across nodes) per channel, doubled while parts exceed
/// 32 x chunk (one node) or one chunk (across nodes), up to twice half the per-peer channels.
int
P2pOpChannels(const NcclCommInfo& comm, uint64_t bytes)
{
    const uint32_t v = comm.ncclVersion;
    const bool multi = comm.nNodes > 1;
    const uint64_t step = std::max<uint64_t>(comm.p2pChunkBytes, 8);
    const uint64_t minPart = multi && v >= 22000 ? step / 2 : step / 8;
    const uint64_t maxPart = multi ? step : 32 * step;
    const int perPeer = std::max(comm.p2pChannelsPerPeer, 1);
    const uint64_t nRanks = comm.nRanks;
    const uint64_t pool = uint64_t(std::max(comm.p2pChannels, 1));
    int nMin = perPeer;
    int nMax = perPeer;
    // Up to 2.19 only a one-node communicator spreads its ops over the pool (and keeps an op off
    // more than 4 x the pool's share); from 2.20 every communicator halves nMin.
    while ((v >= 22000 || !multi) && nMin > 1 && nMin * nRanks > pool)
    {
        nMin /= 2;
    }
    while (v < 22000 && !multi && nMax > 1 && nMax * nRanks > 4 * pool)
    {
        nMax /= 2;
    }
    if (bytes == 0)
    {
        return 1;
    }
    auto divUp = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
    if (v < 22200)
    {
        // calcP2pChunkSize: parts of max(minPart, B / nMin), doubling the parts while one exceeds
        // maxPart, rounded up to minPart; an op takes a channel per part.
        uint64_t part = std::max(minPart, divUp(bytes, uint64_t(nMin)));
        int n = nMin;
        while (part > maxPart && n <= nMax / 2)
        {
            n *= 2;
            part = divUp(bytes, uint64_t(n));
        }
        part = divUp(part, minPart) * minPart;
        return int(std::min<uint64_t>(divUp(bytes, part), uint64_t(perPeer)));
    }
    // addP2pToPlan: as many channels as minPart fills up to nMin, doubled while a part exceeds
    // maxPart.
    int nCh = int(std::min<uint64_t>(uint64_t(nMin), divUp(bytes, minPart)));
    uint64_t part = std::max(minPart, divUp(bytes, uint64_t(nCh)));
    while (part > maxPart && nCh <= nMax / 2)
    {
        nCh *= 2;
        part = divUp(bytes, uint64_t(nCh));
    }
    return nCh;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
