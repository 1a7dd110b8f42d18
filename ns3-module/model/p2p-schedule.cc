/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's p2p schedule for a group of sends and receives, timed as flows
 * (doc/collective-model.md, "p2p schedule"; nccl-model-facts.md).
 */
#include "p2p-schedule.h"

#include "nccl-indices.h"
#include "nccl-selection.h"
#include "nccl-tuning-tables.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonP2pSchedule");

namespace nccl
{
namespace
{
constexpr uint64_t kP2pLlThreshold = 16384; //!< NCCL_P2P_LL_THRESHOLD per channel
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

/// P2pRounds, computed once per shape (every transfer of a live alltoall builds a layout).
const std::vector<int>&
P2pRoundsOf(uint32_t nNodes, uint32_t nLocals)
{
    thread_local std::map<std::pair<uint32_t, uint32_t>, std::vector<int>> shapes;
    auto it = shapes.find({nNodes, nLocals});
    if (it == shapes.end())
    {
        it = shapes.emplace(std::make_pair(nNodes, nLocals), P2pRounds(nNodes, nLocals)).first;
    }
    return it->second;
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

/// Warps one work gets when `works` works share a p2p CTA. From 2.22 (sendrecv.h
/// RunWorkBatch::run): nWarps / works each; with both a send and a recv part on this channel the
/// recv gets (w - 1) / 2 (w / 2 when w <= 4) and the send the rest of the pair, else all w go one
/// way. Up to 2.21 (enqueue.cc finishWorkP2p): the works are pairs of slots in one ncclWork,
/// recvs even and sends odd; the slots used round up to a power of two of groups, each group gets
/// the smallest power of two of warps that times the groups exceeds half the CTA's 20, and a send
/// one more: a send+recv pair 9 + 8, a lone send 9, a lone recv 16.
void
P2pWarps(uint32_t version, int works, bool send, bool recv, int* sendWarps, int* recvWarps)
{
    if (version < 22200)
    {
        const int slots = 2 * std::max(works, 1) - (send ? 0 : 1);
        int groups = 1;
        while (groups < slots)
        {
            groups *= 2;
        }
        int warps = 1;
        while (warps * groups <= kP2pWarps / 2)
        {
            warps *= 2;
        }
        *recvWarps = recv ? warps : 0;
        *sendWarps = send ? warps + (warps >= 2 ? 1 : 0) : 0;
        return;
    }
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

/// The fraction of a lone CTA's rate the send (`sendSide`) or recv of a work gets when the CTA's
/// warps are split among `works` works, this one sending and/or receiving.
double
WarpShare(uint32_t version, int works, bool send, bool recv, bool sendSide)
{
    int sw = 0;
    int rw = 0;
    P2pWarps(version, works, send, recv, &sw, &rw);
    return sendSide ? std::min(1.0, double(sw) / kP2pLoneSendWarps)
                    : std::min(1.0, double(rw) / kP2pLoneRecvWarps);
}

/// Completion bookkeeping of a group: each rank ends when its own transfers have. Only the ranks
/// with transfers are held (rank, outstanding), sorted by rank: the simulator's calls of one
/// transfer each come from communicators of up to thousands of ranks, and a per-rank array per
/// call made an alltoall cost ranks^3.
struct SendRecvJob
{
    CollectiveModel::DoneCallback done;
    std::vector<std::pair<uint32_t, uint32_t>> outstanding;

    uint32_t& Of(uint32_t r)
    {
        auto it = std::lower_bound(outstanding.begin(), outstanding.end(),
                                   std::pair<uint32_t, uint32_t>{r, 0});
        return it->second;
    }

    void Finish(uint32_t r)
    {
        if (--Of(r) == 0 && !done.IsNull())
        {
            done(r);
        }
    }
};

/// NCCL's p2p schedule of one group (enqueue.cc scheduleP2pTasksToPlan / addP2pToPlan): a
/// transfer runs in the round of its (node, local) delta, on its op's channels from that round's
/// base; every rank's works on one channel form one batch per group of 8 rounds, and the batch
/// splits the CTA's warps among them (sendrecv.h). A transfer's channel rate is the CTA's figure
/// scaled by the warps its send (on the source) and recv (on the destination) get, over the
/// batches sharing that channel (run one after another, taken as time shares).
class P2pLayout
{
public:
    P2pLayout(const CollectiveCall& call, const NcclCommInfo& comm);

    /// Channels of transfer i (in call.transfers order).
    int OpChannels(size_t i) const { return m_opChannels[i]; }
    /// The round of a transfer from comm rank s to d (0 for a lone transfer: its rate does not
    /// depend on it).
    int RoundFor(uint32_t s, uint32_t d) const;
    /// The CTAs' worth of rate of a transfer's nCh parts in round k: per part the smaller of the
    /// send's share on the source and the recv's share on the destination.
    double Ctas(uint32_t src, uint32_t dst, int k, int nCh) const;

private:
    struct Work
    {
        int sendParts = 0;
        int recvParts = 0;
    };

    /// Fraction of a lone CTA's rate the send (or recv) of round k on channel c of rank r gets.
    double CtaShare(uint32_t r, int k, int c, int part, bool sendSide) const;
    int ChannelBase(int k) const { return P2pChannelBase(k, m_nNodes, m_nLocals, m_nP2p); }

    int m_nP2p;
    /// A call of one transfer between two ranks (how the simulator posts live ranks' transfers):
    /// its parts share no channel with other work of the call, so each gets a lone send's and
    /// recv's warps, and the tables below (O(ranks) to build) are not built.
    bool m_lone = false;
    uint32_t m_version = 0; //!< the communicator's NCCL release (warp split)
    std::vector<uint32_t> m_rankNode;
    std::vector<uint32_t> m_rankLocal;
    uint32_t m_nNodes = 1;
    uint32_t m_nLocals = 1;
    const std::vector<int>* m_roundOf = nullptr; //!< P2pRoundsOf(m_nNodes, m_nLocals)
    int m_rounds = 1;                            //!< rounds of the schedule (nNodes x nLocals)
    int m_batches = 1;                           //!< batches of 8 rounds
    /// [comm rank]: the rank's row in the tables below, -1 for a rank without a transfer in the
    /// call. The simulator posts each transfer of live ranks as a call of its own, so a 128-rank
    /// alltoall builds 16,256 layouts: they hold rows for the call's ranks, not the comm's.
    std::vector<int32_t> m_row;
    size_t m_rows = 0;
    std::vector<Work> m_works; //!< [row x m_rounds + round]; no parts: no work
    std::vector<int> m_opChannels;
    /// [(row x p2p channels + channel) x m_batches + batch]: how many rounds of the batch
    /// (round / 8) have a part there; flat arrays, as a 1024-rank alltoall asks 2 x 10^6 x parts
    /// times
    std::vector<int> m_channelBatches;
    /// [row x p2p channels + channel]: how many batches have a part there
    std::vector<int> m_batchesOnChannel;

    size_t Row(uint32_t r) const { return size_t(m_row[r]); }
    Work& WorkOf(uint32_t r, int k) { return m_works[Row(r) * m_rounds + size_t(k)]; }
    const Work& WorkOf(uint32_t r, int k) const { return m_works[Row(r) * m_rounds + size_t(k)]; }
};

P2pLayout::P2pLayout(const CollectiveCall& call, const NcclCommInfo& comm)
    : m_nP2p(std::max(comm.p2pChannels, 1))
{
    m_version = comm.ncclVersion;
    if (call.transfers.size() == 1 && call.transfers[0].srcRank != call.transfers[0].dstRank)
    {
        m_lone = true;
        m_opChannels.push_back(P2pOpChannels(comm, call.transfers[0].bytes));
        return;
    }
    const uint32_t n = uint32_t(call.gpus.size());
    m_rankNode.assign(n, 0);
    m_rankLocal.assign(n, 0);
    // NCCL's nodes (in comm-rank order of first appearance), local indices in rank order within
    // a node (NCCL's node and local ranks).
    NS_ABORT_MSG_UNLESS(comm.nodeOfRank.size() == n, "P2pLayout: the communicator's nodes are "
                                                     "not described");
    std::vector<uint32_t> nodeCount(comm.nodes.size(), 0);
    for (uint32_t r = 0; r < n; ++r)
    {
        m_rankNode[r] = comm.nodeOfRank[r];
        m_rankLocal[r] = nodeCount[m_rankNode[r]]++;
    }
    m_nNodes = std::max<uint32_t>(1, uint32_t(nodeCount.size()));
    for (uint32_t c : nodeCount)
    {
        m_nLocals = std::max(m_nLocals, c);
    }
    m_roundOf = &P2pRoundsOf(m_nNodes, m_nLocals);
    m_rounds = std::max(1, int(m_nNodes * m_nLocals));
    m_batches = (m_rounds + kP2pWorksPerBatch - 1) / kP2pWorksPerBatch;
    m_row.assign(n, -1);
    for (const auto& tr : call.transfers)
    {
        for (uint32_t r : {tr.srcRank, tr.dstRank})
        {
            if (m_row[r] < 0)
            {
                m_row[r] = int32_t(m_rows++);
            }
        }
    }
    m_works.assign(m_rows * m_rounds, Work{});
    m_opChannels.reserve(call.transfers.size());
    for (const auto& tr : call.transfers)
    {
        const int nCh = P2pOpChannels(comm, tr.bytes);
        m_opChannels.push_back(nCh);
        const int k = tr.srcRank == tr.dstRank ? 0 : RoundFor(tr.srcRank, tr.dstRank);
        auto& ws = WorkOf(tr.srcRank, k);
        ws.sendParts = std::max(ws.sendParts, nCh);
        auto& wr = WorkOf(tr.dstRank, k);
        wr.recvParts = std::max(wr.recvParts, nCh);
    }
    m_channelBatches.assign(m_rows * m_nP2p * m_batches, 0);
    m_batchesOnChannel.assign(m_rows * m_nP2p, 0);
    for (size_t row = 0; row < m_rows; ++row)
    {
        for (int k = 0; k < m_rounds; ++k)
        {
            const Work& w = m_works[row * m_rounds + size_t(k)];
            const int parts = std::min(std::max(w.sendParts, w.recvParts), m_nP2p);
            const int base = parts > 0 ? ChannelBase(k) : 0;
            for (int part = 0; part < parts; ++part)
            {
                const size_t rc = row * m_nP2p + size_t((base + part) & (m_nP2p - 1));
                if (m_channelBatches[rc * m_batches + size_t(k / kP2pWorksPerBatch)]++ == 0)
                {
                    ++m_batchesOnChannel[rc];
                }
            }
        }
    }
}

int
P2pLayout::RoundFor(uint32_t s, uint32_t d) const
{
    if (m_lone)
    {
        return 0;
    }
    const uint32_t nd = (m_rankNode[d] + m_nNodes - m_rankNode[s]) % m_nNodes;
    const uint32_t ld = (m_rankLocal[d] + m_nLocals - m_rankLocal[s]) % m_nLocals;
    return std::max(0, (*m_roundOf)[size_t(nd) * m_nLocals + ld]);
}

double
P2pLayout::CtaShare(uint32_t r, int k, int c, int part, bool sendSide) const
{
    // Counted once per (rank, channel) in the constructor: an alltoall of n ranks asks this
    // 2 x n^2 x parts times.
    const size_t rc = Row(r) * m_nP2p + size_t(c);
    const int inBatch = m_channelBatches[rc * m_batches + size_t(k / kP2pWorksPerBatch)];
    const Work& w = WorkOf(r, k);
    return WarpShare(m_version, std::min(inBatch, kP2pWorksPerBatch), part < w.sendParts,
                     part < w.recvParts, sendSide) /
           double(std::max(1, m_batchesOnChannel[rc]));
}

double
P2pLayout::Ctas(uint32_t src, uint32_t dst, int k, int nCh) const
{
    if (m_lone)
    {
        // One work per channel: a send alone on the source, a recv alone on the destination.
        return nCh * std::min(WarpShare(m_version, 1, true, false, true),
                              WarpShare(m_version, 1, false, true, false));
    }
    const int base = ChannelBase(k);
    double ctas = 0;
    for (int part = 0; part < nCh; ++part)
    {
        const int c = (base + part) & (m_nP2p - 1);
        ctas += std::min(CtaShare(src, k, c, part, true), CtaShare(dst, k, c, part, false));
    }
    return ctas;
}

/// A copy inside the GPU's memory (a rank sending to itself): read and write at HBM speed.
void
PostSelfCopy(const Topology& topo, uint32_t gpu, uint32_t rank, uint64_t bytes, Time start,
             std::shared_ptr<SendRecvJob> job)
{
    double hbm = 0;
    try
    {
        hbm = topo.GpuSpecOf(uint32_t(topo.GetDevice(gpu).gpuIndex)).hbmBandwidth;
    }
    catch (const std::exception&)
    {
        hbm = 0;
    }
    Time dt = hbm > 0 ? NanoSeconds(int64_t(std::ceil(2.0 * bytes / hbm * 1e9))) : Time(0);
    ScheduleAt(start + dt, [job, rank]() { job->Finish(rank); });
}

/// The path of a transfer between comm ranks: with PXN across nodes between different local
/// indices, the destination's rail, reached over NVLink through the GPU of the destination's
/// local index on the sending node when that GPU is in the comm (`viaProxy`); through the NICs
/// where the network transport joins a node's GPUs (viaNet); else the direct route (through the
/// host under viaHost).
std::vector<uint32_t>
TransferPath(const ScheduleContext& ctx, const NcclCommInfo& comm, const CollectiveCall& call,
             uint32_t srcRank, uint32_t dstRank, uint64_t hash, bool* viaProxy)
{
    const Topology& topo = *ctx.topology;
    const uint32_t src = call.gpus[srcRank];
    const uint32_t dst = call.gpus[dstRank];
    const Device& sd = topo.GetDevice(src);
    const Device& dd = topo.GetDevice(dst);
    std::vector<uint32_t> path;
    *viaProxy = false;
    if (comm.viaNet)
    {
        return CommRoute(topo, comm, call.gpus, srcRank, dstRank, hash); // no PXN: nodes of one
    }
    // PXN's NVLink hop is P2P between the sender and the proxy GPU (not without P2P), and the
    // proxy is a GPU of the comm (NCCL's topology of a node holds no other).
    const bool proxyInComm = sd.node >= 0 && uint32_t(sd.node) < comm.localGpusOfNode.size() &&
                             dd.localIndex >= 0 && dd.localIndex < 64 &&
                             ((comm.localGpusOfNode[sd.node] >> dd.localIndex) & 1) != 0;
    if (sd.node != dd.node && ctx.pxn && !comm.viaHost && proxyInComm &&
        sd.localIndex != dd.localIndex)
    {
        const int64_t proxy = topo.FindGpu(sd.node, dd.localIndex);
        if (proxy >= 0)
        {
            path = topo.Route(src, uint32_t(proxy), hash);
            auto rest = topo.Route(uint32_t(proxy), dst, hash);
            path.insert(path.end(), rest.begin(), rest.end());
            *viaProxy = true;
        }
    }
    if (path.empty())
    {
        path = CommRoute(topo, comm, call.gpus, srcRank, dstRank, hash);
    }
    return path;
}

/// Posts transfer `index` (1-based, in call.transfers order) between two GPUs as one flow: LL for
/// small intra-node transfers, Simple otherwise; the rate of its parts' CTA shares; NCCL's ring
/// step latency of the path's class.
void
PostTransfer(const ScheduleContext& ctx, const CollectiveCall& call, const NcclCommInfo& comm,
             const P2pLayout& layout, uint64_t index, Time start, std::shared_ptr<SendRecvJob> job)
{
    const Topology& topo = *ctx.topology;
    const TuningTables& t = GetTuningTables(ctx.ncclVersion);
    const CollectiveCall::Transfer& tr = call.transfers[index - 1];
    const uint32_t src = call.gpus[tr.srcRank];
    const uint32_t dst = call.gpus[tr.dstRank];
    // One NCCL node (the network transport makes each GPU a node of its own).
    const bool sameNode = comm.nodeOfRank[tr.srcRank] == comm.nodeOfRank[tr.dstRank];
    const uint64_t hash = call.tag * 0x9e3779b97f4a7c15ULL ^ (index * 0xc2b2ae3d27d4eb4fULL);
    bool viaProxy = false;
    std::vector<uint32_t> path =
        TransferPath(ctx, comm, call, tr.srcRank, tr.dstRank, hash, &viaProxy);
    const uint64_t chunk = comm.p2pChunkBytes;
    const int nCh = layout.OpChannels(index - 1);
    // LL for small intra-node transfers (network connections have no LL buffers), up to
    // NCCL_P2P_LL_THRESHOLD a channel: the op's channels up to 2.21 (each part) and from 2.29,
    // the peer's channels (p2pnChannelsPerPeer, addP2pToPlan's nChannelsMax) in 2.22-2.28.
    const bool perPeer = ctx.ncclVersion >= 22200 && ctx.ncclVersion < 22900;
    const uint64_t llChannels = uint64_t(perPeer ? std::max(comm.p2pChannelsPerPeer, 1) : nCh);
    const int p = (sameNode && tr.bytes <= llChannels * kP2pLlThreshold) ? kLL : kSimple;
    const double eProto = ctx.protocolEfficiency[p];
    bool net = false;
    bool nvl = true;
    for (uint32_t ch : path)
    {
        net = net || topo.ChannelKind(ch) == LinkKind::Net;
        nvl = nvl && topo.ChannelKind(ch) == LinkKind::NvLink;
    }
    const double eLink = BottleneckEfficiency(ctx, path, comm.nvlinkEfficiency);
    const int hw = net ? kHwNet : (nvl ? kHwNvlink : kHwPci);
    const double latUs =
        t.baseLat[kRing][p] + t.hwLat[hw][kRing][p] + (net ? ctx.netMessageLatencyUs : 0.0);
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
    const int k = layout.RoundFor(tr.srcRank, tr.dstRank);
    const double ctas = layout.Ctas(tr.srcRank, tr.dstRank, k, nCh);
    if (sameNode && p == kSimple && !viaProxy)
    {
        // P2P transport between processes (no direct pointer): the sender fills the receiver's
        // FIFO one p2p chunk (step) at a time and the receiver's warps copy each step out once it
        // has landed, so every channel's part ends one step after its last step arrives: one more
        // chunk (or the whole part if smaller) per channel.
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
    const int64_t pathNs = topo.PathLatencyNs(path);
    spec.extraLatency =
        NanoSeconds(std::max<int64_t>(0, int64_t(std::llround(latUs * 1000)) - pathNs));
    spec.path = std::move(path);
    const uint32_t rs = tr.srcRank;
    const uint32_t rd = tr.dstRank;
    if (tr.bytes == 0)
    {
        ScheduleAt(start + NanoSeconds(int64_t(std::llround(latUs * 1000))),
                   [job, rs, rd]()
                   {
                       job->Finish(rs);
                       job->Finish(rd);
                   });
        return;
    }
    ctx.network->AddFlow(spec,
                         [job, rs, rd](const FlowRecord&)
                         {
                             job->Finish(rs);
                             job->Finish(rd);
                         });
}
} // namespace

void
PostSendRecv(const ScheduleContext& ctx, const CollectiveCall& call, const NcclCommInfo& comm,
             const std::vector<Time>& starts, CollectiveModel::DoneCallback done)
{
    const Topology& topo = *ctx.topology;
    const uint32_t n = uint32_t(call.gpus.size());
    auto job = std::make_shared<SendRecvJob>();
    job->done = done;
    job->outstanding.reserve(2 * call.transfers.size());
    for (const auto& tr : call.transfers)
    {
        NS_ABORT_MSG_UNLESS(tr.srcRank < n && tr.dstRank < n,
                            "CollectiveModel: transfer " << tr.srcRank << "->" << tr.dstRank
                                                         << " outside a comm of " << n << " ranks");
        job->outstanding.emplace_back(tr.srcRank, 0);
        job->outstanding.emplace_back(tr.dstRank, 0);
    }
    std::sort(job->outstanding.begin(), job->outstanding.end());
    job->outstanding.erase(std::unique(job->outstanding.begin(), job->outstanding.end()),
                           job->outstanding.end());
    for (const auto& tr : call.transfers)
    {
        ++job->Of(tr.srcRank);
        if (tr.dstRank != tr.srcRank)
        {
            ++job->Of(tr.dstRank);
        }
    }
    // Ranks without a transfer are done when they arrive: one event per distinct arrival time
    // (unless they are not part of the call: the simulator's calls of one transfer each).
    std::map<Time, std::vector<uint32_t>> idle;
    for (uint32_t r = 0, k = 0; r < n && call.idleRanksTakePart; ++r)
    {
        while (k < job->outstanding.size() && job->outstanding[k].first < r)
        {
            ++k;
        }
        if (k == job->outstanding.size() || job->outstanding[k].first != r)
        {
            idle[starts[r]].push_back(r);
        }
    }
    for (auto& [at, ranks] : idle)
    {
        ScheduleAt(at,
                   [job, ranks = std::move(ranks)]()
                   {
                       for (uint32_t r : ranks)
                       {
                           if (!job->done.IsNull())
                           {
                               job->done(r);
                           }
                       }
                   });
    }
    const P2pLayout layout(call, comm);
    uint64_t index = 0;
    for (const auto& tr : call.transfers)
    {
        ++index;
        const uint32_t src = call.gpus[tr.srcRank];
        const uint32_t dst = call.gpus[tr.dstRank];
        const Time start = std::max(starts[tr.srcRank], starts[tr.dstRank]);
        if (src == dst || tr.srcRank == tr.dstRank)
        {
            PostSelfCopy(topo, src, tr.srcRank, tr.bytes, start, job);
            continue;
        }
        PostTransfer(ctx, call, comm, layout, index, start, job);
    }
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
