/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: a collective's data movement, as NCCL's chosen algorithm runs it, turned into flows.
 * Every channel (CTA) of the plan becomes a flow (NVLSTree: one per channel and head) along the
 * GPU-to-GPU hops its data takes; the flow model shares each link among all flows, so concurrent
 * collectives contend. Sources: doc/collective-model.md ("Layer 2").
 */
#include "collective-schedule.h"

#include "nccl-topology-search.h"
#include "nccl-tuning-tables.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonCollectiveSchedule");

namespace nccl
{
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
    /// Time chunks are held along the way at rates other than the flow's (added latency).
    double holdNs = 0;
};

/// Completion bookkeeping shared by the flows of one collective (or one piece of a group's).
struct CollectiveJob
{
    std::function<void()> finished;
    uint64_t outstanding = 0;
};

/// What building the pipes of one call needs: the call, its routes and its per-channel figures.
struct PipeInputs
{
    const Topology& topo;
    const CollectiveCall& call;
    const NcclCommInfo& comm;
    int f = 0;                //!< NCCL function
    int p = 0;                //!< protocol
    uint32_t n = 0;           //!< ranks
    int C = 1;                //!< channels of the plan
    double S = 0;             //!< bytes of the call
    double cta = 0;           //!< bytes/s of data one channel's senders can issue
    double llNetSendRate = 0; //!< ScheduleContext::llNetSendRate
    uint32_t ncclVersion = 0; //!< ScheduleContext::ncclVersion
    uint64_t hashBase = 0;
    /// The kernel's channel of the pipes' channel c is base + c (a group's piece runs on one
    /// channel of the group's kernel: its ring, tree and routes are that channel's).
    int base = 0;

    /// The route from comm rank `from`'s GPU to `to`'s: ECMP hashed by the call's identity and
    /// `salt`, so paths never depend on posting order.
    std::vector<uint32_t> Route(uint32_t from, uint32_t to, uint64_t salt) const
    {
        return CommRoute(topo, comm, call.gpus, from, to,
                         hashBase ^ (salt * 0xc2b2ae3d27d4eb4fULL));
    }

    void Append(std::vector<uint32_t>& path, uint32_t from, uint32_t to, uint64_t salt) const
    {
        const std::vector<uint32_t> hop = Route(from, to, salt);
        path.insert(path.end(), hop.begin(), hop.end());
    }
};

/// calcCollChunking's cuts for small operations: for each (chunks, size) in turn, the chunk drops
/// to `size` where the operation holds fewer than `chunks` chunks per concurrent op (channel x
/// head) and the chunk, as the cuts before left it, is larger.
double
CutChunk(uint64_t nBytes, double ops, uint64_t startChunk,
         std::initializer_list<std::pair<double, double>> cuts)
{
    double chunk = double(startChunk);
    for (const auto& [chunks, size] : cuts)
    {
        if (double(nBytes) < chunks * ops * chunk && chunk > size)
        {
            chunk = size;
        }
    }
    return chunk;
}
} // namespace

double
NvlsChunk(uint64_t nBytes, int channels, uint32_t heads, uint64_t startChunk)
{
    return CutChunk(nBytes, double(channels) * heads, startChunk,
                    {{64, 65536}, {8, 32768}, {2, 16384}});
}

double
NvlsTreeChunk(uint64_t nBytes, int channels, uint32_t heads, uint64_t startChunk)
{
    return CutChunk(nBytes, double(channels) * heads, startChunk,
                    {{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}});
}

namespace
{

/// Tree Simple: one Simple step (`step`, 512 KiB) per chunk; up to 2.19 (2.18.5, 2.19.4 enqueue.cc
/// computeColl) halved until the op has about 8 x depth chunks per channel (down to 128 KiB), 4 x
/// depth (64 KiB), depth (32 KiB). 2.20 dropped the halving (computeCollChunkInfo), as have all
/// since.
double
TreeChunk(uint64_t nBytes, int channels, int depth, uint32_t ncclVersion, double step)
{
    double chunk = step;
    if (ncclVersion >= 22000)
    {
        return chunk;
    }
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

/// Tree LL128: NCCL's chunk (enqueue.cc calcCollChunking, NCCL 2.24, called per channel with
/// that channel's bytes): one LL128 step of data (4,915,200 / 8 x 120/128 = 576,000 B), halved
/// while the channel has fewer than nsteps x 64 / ppn chunks (down to 131,072 B) and then fewer
/// than nsteps x 16 / ppn (down to 32,768 B), nsteps = 1 + log2(nodes) + 0.1 ppn (integer
/// divisions as NCCL's), rounded down to the LL128 grain (32 lanes x 8 words / 16 x 15 x 8 B =
/// 3,840 B).
double
TreeLl128Chunk(double channelBytes, uint32_t nNodes, double ppn)
{
    const double nsteps = 1 + Log2i(nNodes) + 0.1 * ppn;
    uint64_t chunk = 576000;
    const auto per = [&] { return std::floor(channelBytes / double(chunk)); };
    while (per() < nsteps * 64 / ppn && chunk > 131072)
    {
        chunk /= 2;
    }
    while (per() < nsteps * 16 / ppn && chunk > 32768)
    {
        chunk /= 2;
    }
    constexpr uint64_t kLl128Grain = 3840;
    return double(chunk / kLl128Grain * kLl128Grain);
}

/// What one channel's CTA copies: NCCL's per-link figure times the protocol's data fraction and
/// the share of its threads the op runs with, before any of NCCL's per-operation ceilings.
double
ChannelWriteRate(const NcclCommInfo& comm, double eProto, double threadShare)
{
    return comm.channelBandwidth * eProto * threadShare;
}

/// Per-channel data rate the senders can issue: one CTA's copy rate times the protocol's data
/// fraction and the share of its threads the op runs with (CollectivePlan::threadShare), and NCCL's
/// own per-channel protocol limits (LL total, LL128 per search channel) spread over the channels
/// that run.
double
CtaRate(const TuningTables& t, const NcclCommInfo& comm, int a, int p, int C, double eProto,
        bool amd, double threadShare)
{
    const int ccIdx = CompCapIndex(comm.minCompCap);
    const int index2 = comm.nNodes <= 2 ? int(comm.nNodes) - 1 : 2;
    const int index1 = comm.nNodes == 1 ? ccIdx : (amd ? 1 : 0);
    double cta = ChannelWriteRate(comm, eProto, threadShare);
    const double commCh = std::max(comm.channels, 1);
    if (a == kRing && p == kSimple && comm.nNodes > 1)
    {
        // Across nodes a ring channel is the search's network channel split over the CTAs
        // (bwInter per search channel, ring.nChannels of them, comm.channels CTAs): on DGX H100
        // nodes 48 x 8 / 16 = 24 GB/s, each CTA's share of its NIC port. NCCL's NVLink per-link
        // figure (channelBandwidth) is a link's rate, not a bound on a channel whose hops are
        // its NIC's; the network hop's per-message cost is the lockstep latency's
        // (nccl-cost-model.cc). With fewer CTAs than search channels (NCCL_MAX_NCHANNELS) a CTA
        // still carries at most one search channel.
        cta = comm.ring.bwInter * 1e9 * std::min(1.0, comm.ring.nChannels / commCh) * threadShare;
    }
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
    return cta;
}

/// LL128 data per step: the 4,915,200-byte buffer over 8 slots, 120 of every 128 bytes data.
constexpr double kLl128StepDataBytes = 4915200.0 / 8 * 120 / 128;
/// LL data per step: the 524,288-byte buffer over 8 slots, half of every 16-byte line data.
constexpr double kLlStepDataBytes = 524288.0 / 8 / 2;
/// Slots of a connection's FIFO (NCCL_STEPS): what a sender may write before its receiver runs.
constexpr double kFifoSteps = 8;

/// What one channel's LL network sends get of their GPU's proxy thread, which reads the lines of
/// every LL step that GPU sends across the network (`rate`: ScheduleContext::llNetSendRate). A
/// channel's ring and tree leave each node from the GPU of its rail (channel c: GPU c mod ppn,
/// as NCCL's duplicated channels c and c + nChannels / 2 share a search channel), so with more
/// channels than GPUs a node, ceil(C / ppn) of them share each proxy.
double
LlProxyRate(double rate, const NcclCommInfo& comm, int C)
{
    const int ppn = std::max<int>(1, int(comm.ppn));
    return rate / double((std::max(C, 1) + ppn - 1) / ppn);
}

/// Store-and-forward points of a Broadcast/Reduce chain (device/prims_simple.h, prims_ll128.h,
/// transport/net.cc), in chunks held back where hop k lands, before rank k forwards:
/// - Simple: a rank's CTA waits for a whole slice (the sender posts the FIFO tail after writing
///   all of it) before it forwards it, and a network hop is a stage of its own (the proxy posts
///   the RDMA write of a slice once the GPU posted it; the receiver's tail moves once it landed):
///   one 512 KiB slice per copy hop, two per network hop.
/// - LL128: inside a node a rank forwards each 128-byte line as its flag lands (no stage); the
///   sender's CTA posts the tail once per step and the proxy sends only whole steps, so every
///   network hop holds a step (576,000 B of data) back.
/// - LL: the same as LL128 with 16-byte lines: every network hop holds a step (32 KiB of data)
///   back.
/// Simple: NCCL's FIFO step (NcclCommInfo::simpleStepBytes); a Broadcast/Reduce slice is one step
/// (BROADCAST_SLICESTEPS = REDUCE_SLICESTEPS = 1).
double
ChainChunkBytes(int p, const NcclCommInfo& comm)
{
    return p == kSimple  ? double(comm.simpleStepBytes)
           : p == kLL128 ? kLl128StepDataBytes
                         : kLlStepDataBytes;
}

uint32_t
ChainStageChunks(int p, bool networkHop)
{
    if (p == kSimple)
    {
        return networkHop ? 2 : 1;
    }
    return networkHop ? 1 : 0;
}

/// The chain of one call (BeginChain): hop k of a channel goes from chain position k - 1 to k.
class ChainRun : public CollectiveRun, public std::enable_shared_from_this<ChainRun>
{
public:
    /// `base` >= 0: one channel, the kernel's channel `base`, its CTA sharing NCCL's ceilings
    /// with `ctaChannels` channels (a group's piece).
    ChainRun(const ScheduleContext& ctx, const CollectiveCall& call,
             std::shared_ptr<const NcclCommInfo> comm, const CollectivePlan& plan,
             const ChainHops& hops, CollectiveModel::DoneCallback done, int base = -1,
             int ctaChannels = 0);
    void MemberStart(uint32_t rank, Time start) override;

private:
    struct Hop
    {
        std::vector<uint32_t> path;
        bool network = false;
        double latencyNs = 0;   //!< the hop's latency: its links', at least the hop's figure
        double stageNs = 0;     //!< chunks held where it lands, at the estimated rate
        double heldBytes = 0;   //!< data held back where it lands before it is forwarded
        double rate = 0;        //!< estimated data bytes/s (its sender's cap, its links' shares)
        double rateCap = 0;     //!< data bytes/s the hop's sender issues (0: none)
        double flowEndNs = -1;  //!< when its flow ended
        double endNs = -1;      //!< when its last byte landed (no sooner than the hop before's)
        bool finishing = false; //!< its end is scheduled
    };
    struct Channel
    {
        std::vector<uint32_t> order; //!< comm rank at each chain position
        std::vector<Hop> hops;       //!< hops[k], k = 1 .. n - 1 (hops[0] unused)
        std::vector<double> readyNs; //!< when position k holds data to send
        uint32_t known = 0;          //!< positions 0 .. known - 1 have readyNs
        uint32_t nextHop = 1;        //!< the first hop not posted
    };

    void Advance(uint32_t c);
    void Post(uint32_t c, uint32_t k);
    void FlowEnded(uint32_t c, uint32_t k);
    void TryFinish(uint32_t c, uint32_t k);
    void HopLanded(uint32_t c, uint32_t k);
    void PartDone(uint32_t rank);
    void Done(uint32_t rank);

    ScheduleContext m_ctx;
    std::shared_ptr<const NcclCommInfo> m_comm;
    uint64_t m_tag = 0;
    int m_base = 0; //!< the kernel's channel of channel 0 (a group's piece)
    uint32_t m_n = 0;
    double m_payload = 0; //!< data bytes per channel
    double m_eProto = 1;
    double m_cta = 0; //!< data bytes/s a channel's CTA issues
    double m_baseNs = 0;
    double m_lockstepNs = 0;
    bool m_waitsForReceiver = false; //!< a channel's share exceeds the FIFO
    std::vector<Channel> m_channels;
    std::vector<double> m_startNs;   //!< per comm rank; negative until known
    std::vector<uint32_t> m_pending; //!< channels whose part of the rank has not ended
    CollectiveModel::DoneCallback m_done;
};

ChainRun::ChainRun(const ScheduleContext& ctx, const CollectiveCall& call,
                   std::shared_ptr<const NcclCommInfo> comm, const CollectivePlan& plan,
                   const ChainHops& hops, CollectiveModel::DoneCallback done, int base,
                   int ctaChannels)
    : m_ctx(ctx)
    , m_comm(std::move(comm))
    , m_tag(call.tag)
    , m_base(std::max(base, 0))
    , m_done(done)
{
    const NcclCommInfo& cm = *m_comm;
    const Topology& topo = *ctx.topology;
    PipeInputs in{topo, call, cm};
    in.ncclVersion = ctx.ncclVersion;
    in.f = FuncOf(call.kind);
    in.p = int(plan.protocol);
    in.n = cm.nRanks;
    in.C = base >= 0 ? 1 : std::max(1, plan.channels);
    in.S = double(call.bytes);
    in.hashBase = call.tag * 0x9e3779b97f4a7c15ULL;
    m_eProto = ctx.protocolEfficiency[in.p];
    m_cta = CtaRate(GetTuningTables(ctx.ncclVersion), cm, kRing, in.p,
                    base >= 0 ? std::max(ctaChannels, 1) : in.C, m_eProto, ctx.amdCpu,
                    plan.threadShare);
    m_n = in.n;
    m_payload = in.S / in.C;
    m_baseNs = hops.baseUs * 1000.0;
    m_lockstepNs = hops.lockstepUs * 1000.0;
    m_waitsForReceiver = m_payload > kFifoSteps * ChainChunkBytes(in.p, in.comm);
    m_startNs.assign(m_n, -1.0);
    m_pending.assign(m_n, uint32_t(in.C));

    // Chains and routes, and how many of the call's hops share each link (the rate estimate
    // behind the store-and-forward stages).
    const auto rings = RingOrders(cm.nodes, m_base + in.C);
    std::map<uint32_t, uint32_t> uses;
    m_channels.resize(size_t(in.C));
    for (int c = 0; c < in.C; ++c)
    {
        const auto& ring = rings[size_t(m_base + c)];
        Channel& ch = m_channels[c];
        uint32_t pos =
            uint32_t(std::find(ring.begin(), ring.end(), uint32_t(call.root)) - ring.begin());
        if (pos >= m_n)
        {
            pos = 0;
        }
        const uint32_t first = in.f == kBroadcast ? pos : (pos + 1) % m_n;
        for (uint32_t i = 0; i < m_n; ++i)
        {
            ch.order.push_back(ring[(first + i) % m_n]);
        }
        ch.hops.resize(m_n);
        ch.readyNs.assign(m_n, 0.0);
        for (uint32_t k = 1; k < m_n; ++k)
        {
            Hop& hop = ch.hops[k];
            hop.path = in.Route(ch.order[k - 1], ch.order[k], uint64_t(m_base + c));
            hop.network = cm.nodeOfRank[ch.order[k - 1]] != cm.nodeOfRank[ch.order[k]];
            for (uint32_t link : hop.path)
            {
                ++uses[link];
            }
        }
    }
    const double chunk = std::min(ChainChunkBytes(in.p, in.comm), m_payload);
    const double inf = std::numeric_limits<double>::infinity();
    // The LL send buffer of a network connection is in host memory and the proxy posts a step
    // once it has checked every line's flags (transport/net.cc).
    const double proxy =
        in.p == kLL && ctx.llNetSendRate > 0 ? LlProxyRate(ctx.llNetSendRate, cm, in.C) : inf;
    // A held LL step is written and read at the channel's own rates, whatever NCCL's LL ceiling
    // for the whole operation leaves each channel to stream (as the holds of LL rings and trees).
    const double write = in.p == kLL ? ChannelWriteRate(cm, m_eProto, plan.threadShare) : inf;
    for (Channel& ch : m_channels)
    {
        for (uint32_t k = 1; k < m_n; ++k)
        {
            Hop& hop = ch.hops[k];
            const double sent = hop.network ? proxy : inf;
            const double cap = std::min(m_cta > 0 ? m_cta : inf, sent);
            hop.rateCap = std::isinf(cap) ? 0 : cap;
            double links = inf;
            for (uint32_t link : hop.path)
            {
                const double e = LinkEfficiency(ctx, link, cm.nvlinkEfficiency);
                links = std::min(links, m_eProto * topo.ChannelBandwidth(link) * e / uses[link]);
            }
            hop.rate = std::min(in.p == kLL ? std::min(write, sent) : cap, links);
            const double hopUs = hop.network ? hops.netHopUs : hops.intraHopUs;
            hop.latencyNs = std::max(double(topo.PathLatencyNs(hop.path)), hopUs * 1000.0);
            hop.heldBytes = ChainStageChunks(in.p, hop.network) * chunk;
            hop.stageNs = hop.heldBytes / hop.rate * 1e9;
        }
    }
}

void
ChainRun::MemberStart(uint32_t rank, Time start)
{
    NS_ABORT_MSG_UNLESS(rank < m_n && m_startNs[rank] < 0,
                        "CollectiveRun: rank " << rank << " started twice or is not a member");
    m_startNs[rank] = std::max(double(start.GetNanoSeconds()), 0.0);
    for (uint32_t c = 0; c < m_channels.size(); ++c)
    {
        Advance(c);
    }
    if (m_pending[rank] == 0)
    {
        Done(rank); // everything reached it before it started
    }
}

/// Position k holds data once it runs (its kernel's base latency after it started) and the
/// first chunk of hop k has landed: readyNs[k] = max(readyNs[k - 1] + hop k + stage, start +
/// base). Hop k may start at readyNs[k - 1], and at its receiver's start too when a channel's
/// share does not fit the FIFO.
void
ChainRun::Advance(uint32_t c)
{
    Channel& ch = m_channels[c];
    while (ch.known < m_n && m_startNs[ch.order[ch.known]] >= 0)
    {
        const uint32_t k = ch.known;
        double ready = m_startNs[ch.order[k]] + m_baseNs;
        if (k > 0)
        {
            ready = std::max(ready, ch.readyNs[k - 1] + ch.hops[k].latencyNs + ch.hops[k].stageNs);
        }
        ch.readyNs[k] = ready;
        ++ch.known;
    }
    while (ch.nextHop < m_n && ch.nextHop <= ch.known &&
           (!m_waitsForReceiver || m_startNs[ch.order[ch.nextHop]] >= 0))
    {
        Post(c, ch.nextHop++);
    }
}

void
ChainRun::Post(uint32_t c, uint32_t k)
{
    const Topology& topo = *m_ctx.topology;
    Channel& ch = m_channels[c];
    Hop& hop = ch.hops[k];
    double start = ch.readyNs[k - 1];
    if (m_waitsForReceiver)
    {
        start = std::max(start, m_startNs[ch.order[k]]);
    }
    // A member that started before the call could begin (a rank joined the communicator late)
    // is clamped to the present.
    start = std::max(start, double(Simulator::Now().GetNanoSeconds()));
    const double eLink = BottleneckEfficiency(m_ctx, hop.path, m_comm->nvlinkEfficiency);
    FlowSpec spec;
    spec.src = topo.ChannelFrom(hop.path.front());
    spec.dst = topo.ChannelTo(hop.path.back());
    spec.bytes = uint64_t(std::ceil(m_payload / (m_eProto * eLink)));
    spec.start = NanoSeconds(int64_t(std::llround(start)));
    spec.tag = m_tag ^ ((uint64_t(m_base + int(c)) * m_n + k + 1) * 0x100000001b3ULL);
    spec.rateCap = hop.rateCap > 0 ? hop.rateCap / (m_eProto * eLink) : 0;
    const int64_t pathNs = topo.PathLatencyNs(hop.path);
    spec.extraLatency =
        NanoSeconds(std::max<int64_t>(0, std::llround(hop.latencyNs + m_lockstepNs) - pathNs));
    spec.path = hop.path;
    auto self = shared_from_this();
    m_ctx.network->AddFlow(spec, [self, c, k](const FlowRecord&) { self->FlowEnded(c, k); });
}

void
ChainRun::FlowEnded(uint32_t c, uint32_t k)
{
    m_channels[c].hops[k].flowEndNs = double(Simulator::Now().GetNanoSeconds());
    TryFinish(c, k);
}

/// Hop k's last byte lands when its flow has ended and no sooner than hop k - 1's last byte
/// plus one hop (and the chunk position k - 1 holds back, sent on at hop k's rate): a downstream
/// hop on less loaded links cannot outrun the data it forwards.
void
ChainRun::TryFinish(uint32_t c, uint32_t k)
{
    Channel& ch = m_channels[c];
    Hop& hop = ch.hops[k];
    if (hop.finishing || hop.flowEndNs < 0 || (k > 1 && ch.hops[k - 1].endNs < 0))
    {
        return;
    }
    hop.finishing = true;
    double end = hop.flowEndNs;
    if (k > 1)
    {
        // The last chunk held where hop k - 1 landed goes on at hop k's own rate.
        end = std::max(end, ch.hops[k - 1].endNs + hop.latencyNs +
                                ch.hops[k - 1].heldBytes / hop.rate * 1e9);
    }
    auto self = shared_from_this();
    ScheduleAt(NanoSeconds(int64_t(std::llround(end))), [self, c, k]() { self->HopLanded(c, k); });
}

void
ChainRun::HopLanded(uint32_t c, uint32_t k)
{
    Channel& ch = m_channels[c];
    ch.hops[k].endNs = double(Simulator::Now().GetNanoSeconds());
    PartDone(ch.order[k - 1]); // the sender's part of this channel: its data has landed
    if (k + 1 == m_n)
    {
        PartDone(ch.order[k]); // the chain's last rank has received all of it
    }
    else
    {
        TryFinish(c, k + 1);
    }
}

void
ChainRun::PartDone(uint32_t rank)
{
    if (--m_pending[rank] == 0 && m_startNs[rank] >= 0)
    {
        Done(rank);
    }
}

/// A rank whose parts have all ended is done then, at least its base latency after it started
/// (the chain's last rank may receive everything before it has started: it is done once it has).
void
ChainRun::Done(uint32_t rank)
{
    const double at =
        std::max(double(Simulator::Now().GetNanoSeconds()), m_startNs[rank] + m_baseNs);
    CollectiveModel::DoneCallback done = m_done;
    ScheduleAt(NanoSeconds(int64_t(std::llround(at))),
               [done, rank]()
               {
                   if (!done.IsNull())
                   {
                       done(rank);
                   }
               });
}

/// Ring: per channel, the whole ring (AllReduce, AllGather, ReduceScatter).
void
RingPipes(const PipeInputs& in, std::vector<Pipe>& pipes)
{
    NS_ABORT_MSG_IF(in.f == kBroadcast || in.f == kReduce,
                    "CollectiveModel: a Broadcast/Reduce chain runs hop by hop (BeginChain)");
    const uint32_t n = in.n;
    const auto rings = RingOrders(in.comm.nodes, in.base + in.C);
    for (int c = 0; c < in.C; ++c)
    {
        const int ch = in.base + c;
        const auto& ring = rings[size_t(ch)];
        Pipe pipe;
        pipe.payloadCap = in.cta;
        for (uint32_t i = 0; i < n; ++i)
        {
            in.Append(pipe.path, ring[i], ring[(i + 1) % n], uint64_t(ch));
        }
        const double share = in.f == kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
        pipe.payload = share * in.S / in.C;
        if (in.p == kLL && in.comm.nNodes > 1 && in.llNetSendRate > 0)
        {
            // Each network crossing of the longest chunk path sends a chunk (a rank's share of
            // a channel, up to a step) only once the proxy has read its lines in host memory.
            const double held = std::min(kLlStepDataBytes, in.S / (double(n) * in.C));
            pipe.holdNs = LlRingNetworkCrossings(in.call, in.comm) * held /
                          LlProxyRate(in.llNetSendRate, in.comm, in.C) * 1e9;
        }
        pipes.push_back(std::move(pipe));
    }
}

/// Tree: per channel, the intra-node chain (the node's GPUs in local order from the channel's
/// rail, first GPU at the head) both ways, and the node-level tree between the heads both ways
/// (reduce up, broadcast down concurrently). Channels of the first half use tree 0, the second
/// half tree 1.
void
TreePipes(const PipeInputs& in, std::vector<Pipe>& pipes)
{
    const NcclCommInfo& comm = in.comm;
    const std::vector<std::vector<uint32_t>>& nodeRanks = comm.nodes; // NCCL's nodes
    const int nNodes = int(nodeRanks.size());
    for (int c = in.base; c < in.base + in.C; ++c)
    {
        const int treeIdx = (comm.channels >= 2 && c >= comm.channels / 2) ? 1 : 0;
        Pipe pipe;
        pipe.payloadCap = in.cta;
        pipe.branching = true;
        std::vector<std::vector<uint32_t>> chains(nNodes);
        for (int k = 0; k < nNodes; ++k)
        {
            // Every node's head is on the same rail, so tree edges stay on one leaf.
            const auto& local = nodeRanks[k];
            for (size_t i = 0; i < local.size(); ++i)
            {
                chains[k].push_back(local[(size_t(c) + i) % local.size()]);
            }
        }
        const NodeTree tree = DoubleBinaryTree(nNodes, treeIdx);
        // An Euler tour of the tree: every chain hop and every tree edge once each way, as one
        // contiguous walk from the root's head back to it (a model that cuts explicit paths into
        // GPU-to-GPU connections sees each of them).
        std::function<void(int)> visit = [&](int k)
        {
            const auto& chain = chains[k];
            for (size_t i = 0; i + 1 < chain.size(); ++i)
            {
                in.Append(pipe.path, chain[i], chain[i + 1], c);
            }
            for (size_t i = chain.size(); i-- > 1;)
            {
                in.Append(pipe.path, chain[i], chain[i - 1], c);
            }
            for (int child : tree.children[k])
            {
                in.Append(pipe.path, chains[k].front(), chains[child].front(), c);
                visit(child);
                in.Append(pipe.path, chains[child].front(), chains[k].front(), c);
            }
        };
        visit(tree.root);
        pipe.payload = in.S / in.C;
        if (in.p == kSimple)
        {
            // Reduce up then broadcast down, chunk by chunk: the stages that run at the
            // bottleneck's rate are the network hops across nodes, the chain hops on one node.
            const int depth = int(comm.ppn) - 1 + Log2i(comm.nNodes);
            pipe.chunk = TreeChunk(in.call.bytes, in.C, std::max(depth, 1), in.ncclVersion,
                                   double(comm.simpleStepBytes));
            pipe.stages = comm.nNodes > 1 ? 2 * CeilLog2(comm.nNodes) : 2 * (comm.ppn - 1);
        }
        else if (in.p == kLL128 && comm.nNodes > 1)
        {
            // LL128 streams each 128-byte line through NVLink hops as its flag lands, but a CTA
            // posts its send tail once per chunk (prims_ll128.h: GenericOp ends with postSend)
            // and the network proxy sends only what the tail covers (transport/net.cc,
            // sendProxyProgress: LL128 ready once the tail moved, with GPUDirect RDMA), so every
            // network hop of the tree, up and down, holds a whole chunk back, as in a chain.
            pipe.chunk = TreeLl128Chunk(in.S / in.C, comm.nNodes, double(in.n) / comm.nNodes);
            pipe.stages = 2 * CeilLog2(comm.nNodes);
        }
        else if (in.p == kLL && comm.nNodes > 1 && in.llNetSendRate > 0)
        {
            // LL: every network hop of the tree, up and down, sends a step only once the proxy
            // has read all of its lines in host memory (LlNetSendRate, as in a chain): the first
            // step is held at each of them before it goes on. The per-channel reading is a
            // delay of its own, not a share of NCCL's LL ceiling for the whole operation.
            const double held = std::min(kLlStepDataBytes, pipe.payload);
            pipe.holdNs = (2 * CeilLog2(comm.nNodes) - 1) * held /
                          LlProxyRate(in.llNetSendRate, comm, in.C) * 1e9;
        }
        pipes.push_back(std::move(pipe));
    }
}

/// Inside a node, a walk through the switch from GPU to GPU and back to the first crosses every
/// GPU's uplink and downlink once.
void
AppendNodeRing(const PipeInputs& in, std::vector<uint32_t>& path,
               const std::vector<uint32_t>& local, size_t first, uint64_t salt)
{
    const size_t g = local.size();
    for (size_t i = 0; i < g && g > 1; ++i)
    {
        in.Append(path, local[(first + i) % g], local[(first + i + 1) % g], salt);
    }
}

/// NVLS (one node): the switch reduces and multicasts. Per channel, every GPU's NVLink uplink
/// carries its data to the switch (the heads' multimem reductions read it) and every downlink the
/// multicast result, plus the heads' own share in the other direction.
void
NvlsPipes(const PipeInputs& in, const std::vector<std::vector<uint32_t>>& nodes,
          std::vector<Pipe>& pipes)
{
    const uint32_t heads = uint32_t(in.comm.nvlsGraph.nChannels);
    const double chunk = NvlsChunk(in.call.bytes, in.C, heads, in.comm.nvlsChunkBytes);
    for (int c = in.base; c < in.base + in.C; ++c)
    {
        Pipe pipe;
        pipe.nvls = true;
        pipe.branching = true;
        pipe.payloadCap = in.cta;
        AppendNodeRing(in, pipe.path, nodes[0], 0, uint64_t(c));
        if (in.f == kAllReduce)
        {
            // Each GPU's data up to the switch (read by the heads' reductions) and the multicast
            // result down, plus the heads' share the other way: (1 + 1/heads) x S each way.
            // Scatter, reduce+multicast and gather are three stages per loop of heads x chunk.
            pipe.payload = (1.0 + 1.0 / heads) * in.S / in.C;
            pipe.stages = 3;
            pipe.chunk = (1.0 + 1.0 / heads) * heads * chunk;
        }
        else
        {
            // AllGather: each GPU stores its S/n through the multicast address and receives all
            // S; ReduceScatter the reverse. The flow carries the heavier direction's S on both
            // (the lighter direction is overcounted).
            pipe.payload = in.S / in.C;
            pipe.stages = 2;
            pipe.chunk = heads * chunk;
        }
        pipes.push_back(std::move(pipe));
    }
}

/// NVLSTree: per channel and head h, every node reduces head h's share in the switch (every GPU's
/// uplink, the head's downlink), the heads run the double binary tree across nodes over their
/// NICs (reduce up, broadcast down), and the result is multicast back (the head's uplink, every
/// downlink). As one contiguous walk: an Euler tour of the node tree, going once round each node
/// through the switch (every uplink and downlink once; the head's extra uplink and downlink use
/// is left out).
void
NvlsTreePipes(const PipeInputs& in, const std::vector<std::vector<uint32_t>>& nodes,
              std::vector<Pipe>& pipes)
{
    const uint32_t heads = uint32_t(in.comm.nvlsGraph.nChannels);
    const int nNodes = int(nodes.size());
    const double chunk = NvlsTreeChunk(in.call.bytes, in.C, heads, in.comm.nvlsTreeChunkBytes);
    for (int c = in.base; c < in.base + in.C; ++c)
    {
        const NodeTree tree = DoubleBinaryTree(nNodes, c % 2);
        for (uint32_t h = 0; h < heads; ++h)
        {
            Pipe pipe;
            pipe.nvls = true;
            pipe.branching = true;
            pipe.payloadCap = in.cta;
            const uint64_t salt = uint64_t(c) * 64 + h;
            auto head = [&](int k) { return nodes[k][h % nodes[k].size()]; };
            std::function<void(int)> visit = [&](int k)
            {
                AppendNodeRing(in, pipe.path, nodes[k], h % nodes[k].size(), salt);
                for (int child : tree.children[k])
                {
                    in.Append(pipe.path, head(k), head(child), salt);
                    visit(child);
                    in.Append(pipe.path, head(child), head(k), salt);
                }
            };
            visit(tree.root);
            pipe.payload = in.S / (double(in.C) * heads);
            // Chunks cross the tree's network hops (up, then down) store-and-forward.
            pipe.stages = 2 * CeilLog2(uint32_t(nNodes));
            pipe.chunk = chunk;
            pipes.push_back(std::move(pipe));
        }
    }
}

/// The directed channels of the SHARP aggregation tree joining `heads` (comm ranks, one per
/// node): every head's route to the first head up to the last switch on it (the reduction goes
/// up), and from that switch back down to the head (the result comes down); the first head's own
/// way up to its first switch and back. A channel on several heads' routes is listed once: a
/// switch forwards one reduced stream up and one result stream down, whatever its fan-in.
/// `up` / `down` false leave that half out (a gather's way up carries a head's own share only,
/// a scatter's way down only each head's result).
void
AppendAggregationTree(const PipeInputs& in, const std::vector<uint32_t>& heads, uint64_t salt,
                      std::vector<uint32_t>& path, bool up = true, bool down = true)
{
    const Topology& topo = in.topo;
    std::set<uint32_t> listed;
    auto add = [&](uint32_t ch)
    {
        if (listed.insert(ch).second)
        {
            path.push_back(ch);
        }
    };
    auto isSwitch = [&](uint32_t dev) { return topo.GetDevice(dev).kind == DeviceKind::Switch; };
    const uint32_t root = heads[0];
    for (size_t k = 0; k < heads.size() && heads.size() > 1; ++k)
    {
        // The root climbs only to its first switch; the others to the last switch towards it.
        const uint32_t from = heads[k];
        const uint32_t to = k == 0 ? heads[1] : root;
        const std::vector<uint32_t> upRoute = in.Route(from, to, salt);
        const std::vector<uint32_t> downRoute = in.Route(to, from, salt);
        size_t upEnd = 0; // channels [0, upEnd) go up
        for (size_t i = 0; i < upRoute.size(); ++i)
        {
            if (isSwitch(topo.ChannelTo(upRoute[i])))
            {
                upEnd = i + 1;
                if (k == 0)
                {
                    break;
                }
            }
        }
        size_t downBegin = downRoute.size(); // channels [downBegin, end) come down
        for (size_t i = downRoute.size(); i-- > 0;)
        {
            if (isSwitch(topo.ChannelFrom(downRoute[i])))
            {
                downBegin = i;
                if (k == 0)
                {
                    break;
                }
            }
        }
        for (size_t i = 0; up && i < upEnd; ++i)
        {
            add(upRoute[i]);
        }
        for (size_t i = downBegin; down && i < downRoute.size(); ++i)
        {
            add(downRoute[i]);
        }
    }
}

/// The per-stream rate SHARP aggregates at (Topology::sharp), where the topology gives one.
double
CapBySharp(const PipeInputs& in, double cap)
{
    const double agg = in.topo.sharp.aggregationBandwidth;
    return agg > 0 ? (cap > 0 ? std::min(cap, agg) : agg) : cap;
}

/// CollNet (SHARP): every node reduces inside itself, its heads send the node's sum up the
/// switches' aggregation tree once and receive the result once, and the node spreads it.
/// CollNetDirect: one stream per head GPU (a GPU with a NIC) carrying S / heads; every other GPU
/// of the node sends the head its share and gets the result back (one NVLink hop each way).
/// CollNetChain: one stream per channel carrying S / C, up and down the node's GPUs as a chain
/// from the channel's rail GPU, which talks to the network.
void
CollNetPipes(const PipeInputs& in, bool direct, const std::vector<std::vector<uint32_t>>& nodes,
             std::vector<Pipe>& pipes)
{
    const int streams = direct ? std::max(1, in.comm.collnetDirect.nChannels) : in.C;
    for (int h = 0; h < streams; ++h)
    {
        Pipe pipe;
        pipe.branching = true;
        const uint64_t salt = uint64_t(h);
        std::vector<uint32_t> heads;
        for (const auto& local : nodes)
        {
            const size_t g = local.size();
            const size_t first = size_t(h) % g;
            heads.push_back(local[first]);
            for (size_t i = 1; i < g; ++i)
            {
                if (direct)
                {
                    in.Append(pipe.path, local[(first + i) % g], local[first], salt);
                    in.Append(pipe.path, local[first], local[(first + i) % g], salt);
                }
                else
                {
                    in.Append(pipe.path, local[(first + i) % g], local[(first + i - 1) % g], salt);
                    in.Append(pipe.path, local[(first + i - 1) % g], local[(first + i) % g], salt);
                }
            }
        }
        AppendAggregationTree(in, heads, salt, pipe.path);
        pipe.payload = in.S / streams;
        pipe.payloadCap = CapBySharp(in, in.cta * in.C / streams);
        pipes.push_back(std::move(pipe));
    }
}

/// NVLS across nodes (NVLS + SHARP): per channel and head h, every node reduces head h's share in
/// its NVSwitch (every GPU's uplink, the head's downlink), the heads reduce across nodes in the
/// InfiniBand switches (up once, down once) and the result is multicast back.
void
NvlsSharpPipes(const PipeInputs& in, const std::vector<std::vector<uint32_t>>& nodes,
               std::vector<Pipe>& pipes)
{
    const uint32_t heads = uint32_t(in.comm.nvlsGraph.nChannels);
    for (int c = in.base; c < in.base + in.C; ++c)
    {
        for (uint32_t h = 0; h < heads; ++h)
        {
            Pipe pipe;
            pipe.nvls = true;
            pipe.branching = true;
            pipe.payloadCap = CapBySharp(in, in.cta);
            const uint64_t salt = uint64_t(c) * 64 + h;
            std::vector<uint32_t> headRanks;
            for (const auto& local : nodes)
            {
                AppendNodeRing(in, pipe.path, local, h % local.size(), salt);
                headRanks.push_back(local[h % local.size()]);
            }
            AppendAggregationTree(in, headRanks, salt, pipe.path);
            pipe.payload = in.S / (double(in.C) * heads);
            pipes.push_back(std::move(pipe));
        }
    }
}

/// AllGather / ReduceScatter through SHARP across nodes (device/all_gather.h,
/// reduce_scatter.h): every local rank is a head with its own NIC (NCCL's requirement), and the
/// heads of one local index, one per node, form a rail that gathers (scatters) in the switches.
/// Per head h, one stream carrying the rail's S / ppn:
/// - CollNetDirect AllGather: the rail's data comes down the aggregation tree to head h, which
///   writes it to each of the other local GPUs over NVLink (its uplink carries ppn - 1 copies);
///   ReduceScatter the reverse: the local GPUs send head h their part of rail h's data, the head
///   reduces and sends it up, and its own S / n comes back down.
/// - NVLS (2.27+): the same rail streams, spread inside the node by the NVSwitch's multicast
///   (AllGather: the head's uplink once, every downlink) or reduced by it (ReduceScatter: every
///   uplink, the head's downlink), per channel as NVLS does (S / (C x heads) per stream).
/// The way up of a gather (and the way down of a scatter) carries a head's own S / n, one
/// node's worth of the stream's bytes: it is left out (undercounted by 1/nNodes on those links).
void
SharpGatherPipes(const PipeInputs& in, bool nvls, const std::vector<std::vector<uint32_t>>& nodes,
                 std::vector<Pipe>& pipes)
{
    const bool gather = in.f == kAllGather;
    const uint32_t ppn = uint32_t(nodes[0].size());
    const int channels = nvls ? in.C : 1;
    for (int c = 0; c < channels; ++c)
    {
        for (uint32_t h = 0; h < ppn; ++h)
        {
            Pipe pipe;
            pipe.branching = true;
            pipe.nvls = nvls;
            const uint64_t salt = uint64_t(c) * 64 + h;
            std::vector<uint32_t> heads;
            for (const auto& local : nodes)
            {
                const uint32_t head = local[h % local.size()];
                heads.push_back(head);
                if (nvls)
                {
                    AppendNodeRing(in, pipe.path, local, h % local.size(), salt);
                    continue;
                }
                for (uint32_t peer : local)
                {
                    if (peer != head)
                    {
                        gather ? in.Append(pipe.path, head, peer, salt)
                               : in.Append(pipe.path, peer, head, salt);
                    }
                }
            }
            AppendAggregationTree(in, heads, salt, pipe.path, !gather, gather);
            pipe.payload = in.S / (double(ppn) * channels);
            // CollNetDirect: all C CTAs of the head GPU work on its own rail's stream.
            pipe.payloadCap = CapBySharp(in, nvls ? in.cta : in.cta * in.C);
            pipes.push_back(std::move(pipe));
        }
    }
}

/// PAT (one rank per node): exchanges with peers at distance 2^k, volume (n-1)/n x S per rank
/// over all rounds, rounds pipelined.
void
PatPipes(const PipeInputs& in, std::vector<Pipe>& pipes)
{
    const uint32_t n = in.n;
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
            pipe.payloadCap = in.cta * in.C / dist.size();
            const uint32_t peer = in.f == kAllGather ? (r + d) % n : (r + n - d) % n;
            pipe.path = in.Route(r, peer, d);
            pipe.payload = blocks * in.S / n;
            pipes.push_back(std::move(pipe));
        }
    }
}

/// Posts the pipes as flows: the bottleneck class of each flow decides its wire efficiency; the
/// latency is NCCL's for the algorithm/protocol, of which the links' own latency is a part.
void
PostPipes(const ScheduleContext& ctx, const CollectiveCall& call, const NcclCommInfo& comm,
          double eProto, double latencyUs, Time start, std::vector<Pipe>& pipes,
          std::function<void()> finished)
{
    const Topology& topo = *ctx.topology;
    auto job = std::make_shared<CollectiveJob>();
    job->finished = std::move(finished);
    job->outstanding = pipes.size();
    const int64_t latencyNs = int64_t(std::llround(latencyUs * 1000.0));
    if (pipes.empty())
    {
        ScheduleAt(start, [job]() { job->finished(); });
        return;
    }
    uint64_t salt = 0;
    for (Pipe& pipe : pipes)
    {
        const double eLink = BottleneckEfficiency(
            ctx, pipe.path, comm.nvlinkEfficiency * (pipe.nvls ? comm.nvlsEfficiency : 1.0));
        FlowSpec spec;
        spec.src = pipe.path.empty() ? call.gpus[0] : topo.ChannelFrom(pipe.path.front());
        spec.dst = pipe.path.empty() ? call.gpus[0] : topo.ChannelTo(pipe.path.back());
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
        const int64_t pathNs = topo.PathLatencyNs(pipe.path);
        const int64_t holdNs = std::llround(pipe.holdNs);
        spec.extraLatency =
            NanoSeconds(holdNs + (pipe.branching ? latencyNs - pathNs
                                                 : std::max<int64_t>(0, latencyNs - pathNs)));
        spec.path = std::move(pipe.path);
        ctx.network->AddFlow(spec,
                             [job](const FlowRecord&)
                             {
                                 if (--job->outstanding == 0)
                                 {
                                     job->finished();
                                 }
                             });
    }
}
} // namespace

namespace
{
/// StartWhenAllHave's run.
class StartWhenAllRun : public CollectiveRun
{
public:
    StartWhenAllRun(size_t ranks, std::function<void(const std::vector<Time>&)> start)
        : m_start(std::move(start))
        , m_starts(ranks)
        , m_known(ranks, false)
    {
    }

    void MemberStart(uint32_t rank, Time start) override
    {
        NS_ABORT_MSG_UNLESS(rank < m_starts.size() && !m_known[rank],
                            "CollectiveRun: rank " << rank << " started twice or is not a member");
        m_known[rank] = true;
        m_starts[rank] = start;
        if (++m_count == m_starts.size())
        {
            m_start(m_starts);
        }
    }

private:
    std::function<void(const std::vector<Time>&)> m_start;
    std::vector<Time> m_starts;
    std::vector<bool> m_known;
    size_t m_count = 0;
};
} // namespace

std::shared_ptr<CollectiveRun>
StartWhenAllHave(size_t ranks, std::function<void(const std::vector<Time>&)> start)
{
    return std::make_shared<StartWhenAllRun>(ranks, std::move(start));
}

void
ScheduleAt(Time at, std::function<void()> fn)
{
    Time delay = at > Simulator::Now() ? at - Simulator::Now() : Time(0);
    Simulator::Schedule(delay, [fn]() { fn(); });
}

std::vector<uint32_t>
CommRoute(const Topology& topo, const NcclCommInfo& comm, const std::vector<uint32_t>& gpus,
          uint32_t from, uint32_t to, uint64_t hash)
{
    if (comm.viaNet)
    {
        return RouteViaNet(topo, comm, gpus, from, to, hash);
    }
    return comm.viaHost ? RouteViaHost(topo, gpus[from], gpus[to], hash)
                        : topo.Route(gpus[from], gpus[to], hash);
}

std::vector<uint32_t>
RouteViaNet(const Topology& topo, const NcclCommInfo& comm, const std::vector<uint32_t>& gpus,
            uint32_t from, uint32_t to, uint64_t hash)
{
    const uint32_t src = gpus[from];
    const uint32_t dst = gpus[to];
    if (src == dst || topo.GetDevice(src).node != topo.GetDevice(dst).node ||
        comm.rankNic.size() != gpus.size())
    {
        return topo.Route(src, dst, hash);
    }
    const uint32_t nicA = uint32_t(comm.rankNic[from]);
    const uint32_t nicB = uint32_t(comm.rankNic[to]);
    std::vector<uint32_t> path = topo.Route(src, nicA, hash);
    if (nicA != nicB)
    {
        const uint32_t uplink = uint32_t(comm.rankNicUplink[from]);
        path.push_back(uplink);
        const std::vector<uint32_t> across = topo.Route(topo.ChannelTo(uplink), nicB, hash);
        path.insert(path.end(), across.begin(), across.end());
    }
    const std::vector<uint32_t> up = topo.Route(nicB, dst, hash);
    path.insert(path.end(), up.begin(), up.end());
    return path;
}

std::vector<uint32_t>
RouteViaHost(const Topology& topo, uint32_t src, uint32_t dst, uint64_t hash)
{
    const int32_t node = topo.GetDevice(src).node;
    if (src != dst && node >= 0 && topo.GetDevice(dst).node == node)
    {
        const std::vector<Device>& devices = topo.Devices();
        for (uint32_t id = 0; id < devices.size(); ++id)
        {
            if (devices[id].kind == DeviceKind::Host && devices[id].node == node)
            {
                std::vector<uint32_t> path = topo.Route(src, id, hash);
                const std::vector<uint32_t> down = topo.Route(id, dst, hash);
                path.insert(path.end(), down.begin(), down.end());
                return path;
            }
        }
    }
    return topo.Route(src, dst, hash);
}

double
LinkEfficiency(const ScheduleContext& ctx, uint32_t channel, double nvlinkEfficiency)
{
    switch (ctx.topology->ChannelKind(channel))
    {
    case LinkKind::NvLink:
        return nvlinkEfficiency;
    case LinkKind::Pcie:
        return ctx.pcieEfficiency;
    default:
        return ctx.netEfficiency;
    }
}

double
BottleneckEfficiency(const ScheduleContext& ctx, const std::vector<uint32_t>& path,
                     double nvlinkEfficiency)
{
    const Topology& topo = *ctx.topology;
    std::map<uint32_t, uint32_t> uses;
    for (uint32_t ch : path)
    {
        ++uses[ch];
    }
    double worst = std::numeric_limits<double>::infinity();
    double eLink = 1.0;
    for (const auto& [ch, k] : uses)
    {
        const double e = LinkEfficiency(ctx, ch, nvlinkEfficiency);
        double rate = topo.ChannelBandwidth(ch) * e / k;
        if (rate < worst)
        {
            worst = rate;
            eLink = e;
        }
    }
    return eLink;
}

std::shared_ptr<CollectiveRun>
BeginChain(const ScheduleContext& ctx, const CollectiveCall& call,
           std::shared_ptr<const NcclCommInfo> comm, const CollectivePlan& plan,
           const ChainHops& hops, CollectiveModel::DoneCallback done)
{
    return std::make_shared<ChainRun>(ctx, call, std::move(comm), plan, hops, done);
}

namespace
{
/// Posts `call` run as `plan` from `start`: on channels 0 .. plan.channels - 1, or, for a piece
/// of a group (`base` >= 0), on the kernel's channel `base` alone, its CTA sharing NCCL's
/// per-operation ceilings with `ctaChannels` channels. `finished` runs when its last flow ends.
void
PostPlan(const ScheduleContext& ctx, const CollectiveCall& call, const NcclCommInfo& comm,
         const CollectivePlan& plan, double latencyUs, Time start, int base, int ctaChannels,
         bool pipelined, std::function<void()> finished)
{
    const int a = int(plan.algorithm);
    PipeInputs in{*ctx.topology, call, comm};
    in.f = FuncOf(call.kind);
    in.p = int(plan.protocol);
    in.n = comm.nRanks;
    in.C = base >= 0 ? 1 : std::max(1, plan.channels);
    in.base = std::max(base, 0);
    in.S = double(call.bytes);
    const double eProto = ctx.protocolEfficiency[in.p];
    in.cta =
        CtaRate(GetTuningTables(ctx.ncclVersion), comm, a, in.p,
                base >= 0 ? std::max(ctaChannels, 1) : in.C, eProto, ctx.amdCpu, plan.threadShare);
    in.llNetSendRate = ctx.llNetSendRate;
    in.ncclVersion = ctx.ncclVersion;
    in.hashBase = call.tag * 0x9e3779b97f4a7c15ULL;

    std::vector<Pipe> pipes;
    if (a == kRing)
    {
        RingPipes(in, pipes);
    }
    else if (a == kTree)
    {
        TreePipes(in, pipes);
    }
    else if (a == kNvls || a == kNvlsTree)
    {
        const auto nodes = GroupRanksByNode(in.topo, call.gpus, NodeOrder::NodeId);
        if (a == kNvls && nodes.size() > 1)
        {
            in.f == kAllReduce ? NvlsSharpPipes(in, nodes, pipes)
                               : SharpGatherPipes(in, true, nodes, pipes);
        }
        else if (a == kNvls)
        {
            NvlsPipes(in, nodes, pipes);
        }
        else
        {
            NvlsTreePipes(in, nodes, pipes);
        }
    }
    else if (a == kPat)
    {
        PatPipes(in, pipes);
    }
    else if (a == kCollNetDirect && in.f != kAllReduce)
    {
        SharpGatherPipes(in, false, GroupRanksByNode(in.topo, call.gpus, NodeOrder::NodeId), pipes);
    }
    else if (a == kCollNetDirect || a == kCollNetChain)
    {
        CollNetPipes(in, a == kCollNetDirect,
                     GroupRanksByNode(in.topo, call.gpus, NodeOrder::NodeId), pipes);
    }
    else
    {
        NS_FATAL_ERROR("CollectiveModel: algorithm " << kAlgoNames[a] << " has no data movement");
    }
    if (pipelined)
    {
        // Behind the piece before on its channel: its chunks follow that piece's through the
        // stages without filling them again.
        for (Pipe& pipe : pipes)
        {
            pipe.stages = 1;
            pipe.holdNs = 0;
        }
    }
    PostPipes(ctx, call, comm, eProto, latencyUs, start, pipes, std::move(finished));
}
} // namespace

void
PostCollective(const ScheduleContext& ctx, const CollectiveCall& call, const NcclCommInfo& comm,
               const CollectivePlan& plan, double latencyUs, Time start,
               CollectiveModel::DoneCallback done)
{
    const uint32_t ranks = comm.nRanks;
    PostPlan(ctx, call, comm, plan, latencyUs, start, -1, 0, false,
             [done, ranks]()
             {
                 for (uint32_t r = 0; r < ranks && !done.IsNull(); ++r)
                 {
                     done(r);
                 }
             });
}

namespace
{
/// The collectives of one group as one kernel (BeginGroup). Each channel (lane) runs its pieces in
/// turn, rank by rank: a rank goes on to a lane's next piece when its part of the piece before is
/// done, so a Broadcast/Reduce chain's root moves on before its tail (as NCCL's CTAs do) and the
/// other pieces start with their last rank; a rank is done when every lane's last piece is.
class GroupRun : public CollectiveRun, public std::enable_shared_from_this<GroupRun>
{
public:
    GroupRun(const ScheduleContext& ctx, const CostSettings& settings,
             std::vector<CollectiveCall> calls, std::shared_ptr<const NcclCommInfo> comm,
             GroupLayout layout, CollectiveModel::DoneCallback done)
        : m_ctx(ctx)
        , m_settings(settings)
        , m_calls(std::move(calls))
        , m_comm(std::move(comm))
        , m_layout(std::move(layout))
        , m_done(done)
        , m_n(m_comm->nRanks)
    {
        m_full.resize(m_calls.size());
        for (size_t i = 0; i < m_calls.size(); ++i)
        {
            m_full[i] = m_calls[i].bytes;
        }
        m_runs.resize(m_layout.lanes.size());
        size_t lanes = 0;
        for (size_t c = 0; c < m_layout.lanes.size(); ++c)
        {
            m_runs[c].resize(m_layout.lanes[c].size());
            lanes += m_layout.lanes[c].empty() ? 0 : 1;
        }
        m_lanesLeft.assign(m_n, lanes);
        m_started.assign(m_n, false);
        // The kernel's CTAs: NCCL's per-operation ceilings (LL's) are shared among them.
        m_kernelChannels = std::max<int>(1, int(m_layout.lanes.size()));
    }

    void MemberStart(uint32_t rank, Time start) override
    {
        NS_ABORT_MSG_UNLESS(rank < m_n && !m_started[rank],
                            "CollectiveRun: rank " << rank << " started twice or is not a member");
        m_started[rank] = true;
        if (m_lanesLeft[rank] == 0)
        {
            std::weak_ptr<GroupRun> weak = shared_from_this();
            ScheduleAt(start,
                       [weak, rank]()
                       {
                           if (auto self = weak.lock())
                           {
                               self->m_done(rank);
                           }
                       });
            return;
        }
        for (size_t c = 0; c < m_layout.lanes.size(); ++c)
        {
            if (!m_layout.lanes[c].empty())
            {
                Piece(c, 0)->MemberStart(rank, start);
            }
        }
    }

private:
    /// What the pieces' callbacks hold of the group (ns-3 binds arguments it can compare).
    using Handle = std::shared_ptr<std::weak_ptr<GroupRun>>;

    /// Rank `rank`'s part of lane c's piece k is done (Simulator::Now()).
    static void PartDone(Handle handle, size_t c, size_t k, uint32_t rank)
    {
        auto self = handle->lock();
        if (!self)
        {
            return;
        }
        if (k + 1 < self->m_layout.lanes[c].size())
        {
            self->Piece(c, k + 1)->MemberStart(rank, Simulator::Now());
            return;
        }
        if (--self->m_lanesLeft[rank] == 0 && !self->m_done.IsNull())
        {
            self->m_done(rank);
        }
    }

    /// Piece k follows the piece before on its channel (NCCL's numPipeOps rule): a ring's steps
    /// (AllReduce, AllGather, ReduceScatter) run anew for each piece, in lockstep; the other
    /// algorithms pipeline the pieces of a batch of work items behind its first.
    bool Pipelined(size_t c, size_t k) const
    {
        const int f = FuncOf(m_calls[m_layout.lanes[c][k].call].kind);
        const bool ringSteps =
            m_layout.plans[m_layout.lanes[c][k].call].algorithm == NcclAlgorithm::Ring &&
            f != kBroadcast && f != kReduce;
        const bool batchStart = k % size_t(WorkBatchColls(m_ctx.ncclVersion)) == 0;
        return k > 0 && !ringSteps && !batchStart;
    }

    /// Lane c's piece k, made when its first rank may start it: a one-channel chain for a
    /// Broadcast/Reduce (a chain's rank goes on, its next piece's hops following the last's),
    /// else posted once its last rank may start (Post).
    const std::shared_ptr<CollectiveRun>& Piece(size_t c, size_t k)
    {
        std::shared_ptr<CollectiveRun>& run = m_runs[c][k];
        if (run)
        {
            return run;
        }
        if (!m_handle)
        {
            m_handle = std::make_shared<std::weak_ptr<GroupRun>>(weak_from_this());
        }
        const GroupPiece& piece = m_layout.lanes[c][k];
        const CollectivePlan& plan = m_layout.plans[piece.call];
        const int f = FuncOf(m_calls[piece.call].kind);
        if (plan.algorithm == NcclAlgorithm::Ring && (f == kBroadcast || f == kReduce))
        {
            CollectiveCall& call = m_calls[piece.call];
            call.bytes = piece.bytes;
            CollectivePlan one = plan;
            one.channels = 1;
            ChainHops hops = ChainHopLatencies(call, *m_comm, one, m_settings);
            if (k > 0)
            {
                hops.baseUs = 0; // the kernel was launched once
            }
            run = std::make_shared<ChainRun>(m_ctx, call, m_comm, one, hops,
                                             MakeBoundCallback(&GroupRun::PartDone, m_handle, c, k),
                                             int(c), m_kernelChannels);
            call.bytes = m_full[piece.call];
            return run;
        }
        Handle handle = m_handle;
        run = StartWhenAllHave(m_n,
                               [handle, c, k](const std::vector<Time>& starts)
                               {
                                   if (auto self = handle->lock())
                                   {
                                       self->Post(c, k,
                                                  *std::max_element(starts.begin(), starts.end()));
                                   }
                               });
        return run;
    }

    /// Posts lane c's piece k from `start` (its last rank's); every rank's part ends with its
    /// last flow. A later piece skips NCCL's base latency (the kernel was launched once), and a
    /// pipelined one its latency and pipeline fill altogether.
    void Post(size_t c, size_t k, Time start)
    {
        const GroupPiece& piece = m_layout.lanes[c][k];
        CollectiveCall& call = m_calls[piece.call];
        const CollectivePlan& plan = m_layout.plans[piece.call];
        call.bytes = piece.bytes;
        CollectivePlan one = plan;
        one.channels = 1;
        const bool pipelined = Pipelined(c, k);
        double latencyUs = PlanLatencyUs(call, *m_comm, one, m_settings);
        if (k > 0)
        {
            const double base =
                GetTuningTables(m_ctx.ncclVersion).baseLat[int(plan.algorithm)][int(plan.protocol)];
            latencyUs = pipelined ? 0.0 : std::max(0.0, latencyUs - base);
        }
        Handle handle = m_handle;
        const uint32_t n = m_n;
        PostPlan(m_ctx, call, *m_comm, one, latencyUs, start, int(c), m_kernelChannels, pipelined,
                 [handle, c, k, n]()
                 {
                     for (uint32_t r = 0; r < n; ++r)
                     {
                         PartDone(handle, c, k, r);
                     }
                 });
        call.bytes = m_full[piece.call];
    }

    ScheduleContext m_ctx;
    CostSettings m_settings;
    std::vector<CollectiveCall> m_calls; //!< bytes set to a piece's while it is made
    std::vector<uint64_t> m_full;        //!< each call's own bytes
    std::shared_ptr<const NcclCommInfo> m_comm;
    GroupLayout m_layout;
    CollectiveModel::DoneCallback m_done;
    uint32_t m_n = 0;
    std::vector<std::vector<std::shared_ptr<CollectiveRun>>> m_runs; //!< per lane, per piece
    std::vector<size_t> m_lanesLeft; //!< per rank: lanes whose last piece it has not done
    std::vector<bool> m_started;
    int m_kernelChannels = 1;
    Handle m_handle;
};
} // namespace

std::shared_ptr<CollectiveRun>
BeginGroup(const ScheduleContext& ctx, const CostSettings& settings,
           std::vector<CollectiveCall> calls, std::shared_ptr<const NcclCommInfo> comm,
           GroupLayout layout, CollectiveModel::DoneCallback done)
{
    return std::make_shared<GroupRun>(ctx, settings, std::move(calls), std::move(comm),
                                      std::move(layout), done);
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
