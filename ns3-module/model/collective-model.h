/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: collectives the way NCCL runs them (algorithm, protocol, channels, chunking), turned
 * into flows over the topology. INTERFACE CONTRACT (the simulator, eidolon-sim, codes against
 * this). The implementation is split by concern (collective-model.cc lists the files): NCCL's
 * configuration, its tuning tables, its topology search, its cost model and choice, and the
 * schedules that turn a choice into flows; their headers are internal to the module.
 */
#ifndef EIDOLON_COLLECTIVE_MODEL_H
#define EIDOLON_COLLECTIVE_MODEL_H

#include "network-model.h"
#include "topology.h"

#include "ns3/callback.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ns3
{
namespace eidolon
{

/// The NCCL operations a communicator runs. SendRecv stands for a group of point-to-point
/// transfers (ncclSend/ncclRecv inside one group on one communicator: sendrecv, alltoall,
/// pipeline).
enum class CollectiveKind
{
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    SendRecv,
};

enum class NcclAlgorithm
{
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
};

enum class NcclProtocol
{
    LL,
    LL128,
    Simple,
};

const char* ToString(CollectiveKind kind);
const char* ToString(NcclAlgorithm algorithm);
const char* ToString(NcclProtocol protocol);

inline std::ostream&
operator<<(std::ostream& os, CollectiveKind kind)
{
    return os << ToString(kind);
}

inline std::ostream&
operator<<(std::ostream& os, NcclAlgorithm algorithm)
{
    return os << ToString(algorithm);
}

inline std::ostream&
operator<<(std::ostream& os, NcclProtocol protocol)
{
    return os << ToString(protocol);
}

/// One collective as every rank of the communicator issued it (already matched by the caller).
struct CollectiveCall
{
    CollectiveKind kind = CollectiveKind::AllReduce;
    /// NCCL's count times the datatype size, as nccl-tests' "size" column: the full buffer for
    /// AllReduce/Broadcast/Reduce, the per-rank *output* for ReduceScatter's recvcount x ranks...
    /// Precisely: AllReduce/Broadcast/Reduce: count*typeSize; AllGather: sendcount*typeSize*nranks;
    /// ReduceScatter: recvcount*typeSize*nranks (the nccl-tests convention: total bytes).
    uint64_t bytes = 0;
    uint32_t typeSize = 4;
    /// ncclDataType_t and ncclRedOp_t of the call (-1: not known; a custom PreMulSum op counts
    /// from ncclNumOps, 5): NVLS reduces only some of them, fp8 rings are shunned above 8 ranks.
    int dtype = -1;
    int redop = -1;
    /// Topology device id of each comm rank (index = rank in the communicator).
    std::vector<uint32_t> gpus;
    int root = 0;
    /// SendRecv only: every transfer of the group (comm ranks, bytes).
    struct Transfer
    {
        uint32_t srcRank = 0;
        uint32_t dstRank = 0;
        uint64_t bytes = 0;
    };
    std::vector<Transfer> transfers;
    /// SendRecv only: false when the call holds some of a group's transfers and the comm's
    /// ranks without one are not part of it (their starts are not read and they are not
    /// reported done): the simulator posts each matched transfer of live ranks as a call of its
    /// own, and reporting the other n - 2 ranks of each made an alltoall cost n^3.
    bool idleRanksTakePart = true;
    /// Canonical identity (communicator and sequence number hashed): used for ECMP hashing so that
    /// paths never depend on posting order.
    uint64_t tag = 0;
    /// The communicator's ncclConfig_t minCTAs / maxCTAs (0: unset): its channel count is kept
    /// within them, with NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (connect.cc).
    int minCtas = 0;
    int maxCtas = 0;
    /// NCCL's numPipeOps: the operations of an aggregated group each channel runs one after the
    /// other (1 outside a group). NCCL's estimate counts a Ring's latency once per operation and
    /// the other algorithms' once per batch of work items (ncclTopoGetAlgoTime).
    int pipeOps = 1;
};

/// What NCCL would pick, and what the environment forces (NCCL_ALGO, NCCL_PROTO,
/// NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_NVLS_ENABLE, NCCL_P2P_DISABLE), for the emulated
/// NCCL version.
struct NcclConfig
{
    std::string algo;  //!< NCCL_ALGO value as NCCL parses it ("" = NCCL's choice)
    std::string proto; //!< NCCL_PROTO value ("" = NCCL's choice)
    /// NCCL_ALGO / NCCL_PROTO present even where empty or blank (NCCL 2.18-2.23 read "" as a
    /// list of nothing); a non-empty value counts as present without it.
    bool algoSet = false;
    bool protoSet = false;
    /// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS as given (kChannelsUnset: not set, NCCL's own
    /// default, -2). Any other value counts: NCCL clamps it where it makes the communicator
    /// (connect.cc: a maximum below 1 becomes 1, with a warning; either above MAXCHANNELS, 32 up
    /// to 2.24 and 64 from 2.25, becomes MAXCHANNELS; a minimum below 0 becomes 0), and so does
    /// the model (ChannelWarning says what NCCL warns).
    static constexpr int kChannelsUnset = -2;
    int minChannels = kChannelsUnset;
    int maxChannels = kChannelsUnset;
    int nvlsEnable = -1;    //!< NCCL_NVLS_ENABLE (-1 unset = NCCL's default)
    int nvlsChannels = -1;  //!< NCCL_NVLS_NCHANNELS (-1 unset)
    int nvlsChunkSize = -1; //!< NCCL_NVLS_CHUNKSIZE in bytes (-1 unset; read from 2.21)
    /// NCCL_NVLSTREE_MAX_CHUNKSIZE in bytes (-1 unset; read from 2.20): NVLSTree's chunk cap.
    int nvlsTreeMaxChunkSize = -1;
    int patEnable = -1; //!< NCCL_PAT_ENABLE (-1 unset = 2, auto)
    /// NCCL_COLLNET_ENABLE (-1 unset = 0: NCCL leaves CollNet off unless it is 1)
    int collnetEnable = -1;
    /// NCCL_P2P_DISABLE (-1 unset = 0). At 1 GPUs of one node never map each other's memory: NCCL
    /// connects them with its SHM transport, through host memory (GPU -> PCIe -> host -> PCIe ->
    /// GPU), its search sees PCIe between them, and NVLS is off.
    int p2pDisable = -1;
    /// NCCL_P2P_LEVEL (-1 unset: NCCL's default for the version and host CPU): the farthest path
    /// between two GPUs of a node over which NCCL still uses P2P, as a rank of NCCL's path types
    /// LOC < NVL < NVB < C2C < PIX < PXB < P2C < PXN < PHB < SYS (kP2pLevel* below; a name, or the
    /// old numbers 0-5 = LOC, PIX, PXB, PHB, SYS, SYS). GPUs farther apart go through host memory
    /// (SHM), as with NCCL_P2P_DISABLE=1, which wins over it.
    int p2pLevel = -1;
    /// NCCL_SHM_DISABLE (-1 unset = 0). With it, GPUs of a node that do not use P2P connect
    /// through NCCL's network transport instead of SHM (see NcclCommInfo::viaNet).
    int shmDisable = -1;
    static constexpr int kP2pLevelLoc = 0, kP2pLevelNvl = 1, kP2pLevelPix = 4, kP2pLevelPxb = 5,
                         kP2pLevelPhb = 8, kP2pLevelSys = 9;
    /// Reads the variables above from `env` (name -> value); throws std::invalid_argument naming
    /// the variable on a value NCCL would reject. NCCL_ALGO and NCCL_PROTO are taken as given:
    /// how NCCL reads them depends on its release (ReadingWarning).
    static NcclConfig FromEnvironment(const std::map<std::string, std::string>& env);
    /// The names of the variables FromEnvironment reads (what a launcher passes on to the model).
    static const std::vector<std::string>& Variables();
    /// A warning naming the variables set in `env` that change what NCCL does or how fast, which
    /// the model does not read (NCCL_SHM_DISABLE, NCCL_P2P_LEVEL, NCCL_BUFFSIZE, NCCL_IB_HCA, a
    /// tuner plugin, ...: the list in nccl-config.cc); empty when none is set. So that setting
    /// one is never ignored in silence.
    static std::string UnreadVariablesWarning(const std::map<std::string, std::string>& env);
    /// Checks every field as FromEnvironment would; throws std::invalid_argument naming the
    /// variable (SetConfig calls it, so a hand-built config is checked too).
    void Validate() const;
    /// A warning naming the algorithms that NCCL_ALGO enables and cannot run on the cluster
    /// (CollNetDirect, CollNetChain without SHARP switches (`topologySharp` false), or without
    /// NCCL_COLLNET_ENABLE=1, which NCCL needs for them), and what runs instead; empty when
    /// there are none. The simulator prints it when the configuration is set, so that such a
    /// name is never ignored in silence.
    std::string UnmodelledWarning(uint32_t version, bool topologySharp = false) const;
    /// A warning for NCCL_ALGO / NCCL_PROTO as NCCL `version` reads them: the names 2.18-2.23 skip
    /// without a word, or the value 2.24+ cannot read (communicator creation fails there); empty
    /// when NCCL reads all of it.
    std::string ReadingWarning(uint32_t version) const;
    /// What NCCL `version` warns about NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS as it clamps them
    /// (a maximum below 1, a minimum above MAXCHANNELS), and a value of either that NCCL cannot
    /// read as a number (it keeps its default); empty when there is nothing to say.
    std::string ChannelWarning(uint32_t version) const;
    /// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS values that were not numbers (FromEnvironment):
    /// NCCL's parameter reader ignores such a value (INFO "Invalid value ..., using default").
    std::vector<std::string> unreadChannelValues;
};

/// What the model derived about a communicator from the topology: NCCL's topology search as
/// far as the model reproduces it (doc/collective-model.md), per algorithm graph.
struct NcclCommInfo
{
    struct Graph
    {
        int nChannels = 0;        //!< search channels (what NCCL's tuning model sees)
        double bwIntra = 0;       //!< GB/s per search channel inside a node
        double bwInter = 0;       //!< GB/s per search channel across nodes
        bool nvlinkIntra = false; //!< intra-node path type is NVLink (else PCI)
        bool ll128 = false;       //!< LL128 allowed on this graph (NCCL's platform rule)
        /// Every channel replays the first one's GPU order (NCCL's search keeps it only where
        /// that order works for every channel: one node, or channels through one NIC).
        bool sameChannels = true;
    };
    uint32_t ncclVersion = 0; //!< the release whose rules derived it (e.g. 22403)
    uint32_t nRanks = 0;
    uint32_t nNodes = 0;
    uint32_t ppn = 0; //!< nRanks / nNodes (integer division, as NCCL's latency uses it)
    /// The fewest comm ranks on one node (NCCL's minLocalRanks, the GPUs its topology of that
    /// node holds): NVLS needs 3 (2 from 2.28.7), one makes the tree graph a plain TREE.
    uint32_t minLocalRanks = 0;
    int minCompCap = 0; //!< e.g. 90 for sm_90 (smallest over the comm)
    int maxCompCap = 0;
    bool nvswitch = false; //!< every rank's GPU hangs off an NVSwitch
    /// NVLS usable: sm90+, NVSwitch, NCCL_NVLS_ENABLE, and more than 2 GPUs on every node up to
    /// 2.28.3 (2 from 2.28.7).
    bool nvls = false;
    bool pat = false; //!< PAT usable (one rank per node, NCCL_PAT_ENABLE)
    /// CollNet usable: SHARP switches, NCCL_COLLNET_ENABLE=1, two nodes or more. Enables
    /// CollNetDirect (with an NVSwitch), CollNetChain and NVLS across nodes.
    bool collnet = false;
    /// The CollNet plugin has iallgather / ireducescatter (Topology::sharp): AllGather and
    /// ReduceScatter may run CollNetDirect (2.20+) and NVLS across nodes (2.27+) where every node
    /// has a head per GPU.
    bool collnetAllgatherReduceScatter = false;
    /// NCCL_P2P_DISABLE=1: intra-node traffic goes through the node's host memory (SHM transport).
    bool viaHost = false;
    /// No P2P and NCCL_SHM_DISABLE=1: NCCL's network transport connects the GPUs of a node, and
    /// NCCL's topology of a node then holds one GPU (its search drops the GPUs it cannot reach by
    /// P2P or SHM), so every rank is a node of its own (nNodes = nRanks) and traffic between two
    /// GPUs of one server leaves through their NICs and the fabric (one NIC: its loopback).
    bool viaNet = false;
    /// viaNet: per comm rank, its NIC (topology device) and the NIC's channel into the fabric
    /// (-1: none).
    std::vector<int64_t> rankNic, rankNicUplink;
    /// NCCL's nodes (what its rings, trees and p2p schedule see as a node): the comm ranks of
    /// each, nodes in the order of their first rank and each node's ranks by GPU local index;
    /// the topology's servers, except under viaNet (one rank each). nodeOfRank: the inverse.
    std::vector<std::vector<uint32_t>> nodes;
    std::vector<uint32_t> nodeOfRank;
    /// Per topology node, bit i set when the GPU of local index i is one of the comm's ranks:
    /// NCCL's topology of a node holds only the comm's GPUs there, so PXN relays through them
    /// only.
    std::vector<uint64_t> localGpusOfNode;
    Graph ring, tree;
    Graph nvlsGraph;      //!< NVLS graph: one channel per head
    Graph collnetDirect;  //!< CollNetDirect graph: one channel per head GPU (a GPU with a NIC)
    Graph collnetChain;   //!< CollNetChain graph: the ring's channels, NIC in and out the same
    int channels = 0;     //!< comm.nChannels (after Postset and NCCL_MIN/MAX_NCHANNELS)
    int nvlsChannels = 0; //!< NVLS/NVLSTree CTAs
    /// The Simple FIFO step: NCCL_BUFFSIZE (4 MiB; 1 MiB on ARM hosts in 2.18) over its 8 steps.
    uint64_t simpleStepBytes = 524288;
    /// NVLS's chunk before its halving for small operations (calcCollChunking): the Simple step
    /// (512 KiB) capped at 128 KiB, NCCL_NVLS_CHUNKSIZE from 2.21.
    uint64_t nvlsChunkBytes = 131072;
    /// NVLSTree's chunk before its halving for small operations: the Simple step (512 KiB) up to
    /// 2.20, NCCL_NVLS_CHUNKSIZE (128 KiB) from 2.21; capped at 64 KiB from 4 nodes from 2.19
    /// (NCCL_NVLSTREE_MAX_CHUNKSIZE from 2.20); 2.30 tunes both on sm100 across nodes.
    uint64_t nvlsTreeChunkBytes = 131072;
    int p2pChannels = 0; //!< p2pnChannels
    int p2pChannelsPerPeer = 0;
    uint64_t p2pChunkBytes = 0;
    /// Payload fraction of the NVLink line rate (NCCL's per-link figure over the line rate).
    double nvlinkEfficiency = 0;
    double nvlsEfficiency = 0;   //!< fraction of NVLink payload rate multimem operations reach
    double channelBandwidth = 0; //!< bytes/s one channel (CTA) can move
};

/// NCCL's tuning table for one call: what rank 0 prints under NCCL_DEBUG_SUBSYS=TUNING
/// (latency in us, algorithm bandwidth in GB/s), and the resulting time estimate per
/// algorithm/protocol (negative: disabled).
struct NcclCostTable
{
    double latencyUs[7][3] = {};
    double bandwidthGBps[7][3] = {};
    double timeUs[7][3] = {};
};

/// How NCCL_ALGO and NCCL_PROTO bore on a call's plan.
enum class NcclEnvOutcome
{
    Applied,    //!< the plan is NCCL's choice among what they allow
    RingBackup, //!< they allow nothing for the call, and NCCL 2.19-2.23 then runs Ring
    /// They allow nothing for the call, and the emulated NCCL fails it ("no algorithm/protocol
    /// available": ncclInvalidUsage, 2.18 ncclInternalError). The plan is NCCL's choice without
    /// them, so the run goes on where the real program would stop (CollectiveModel's
    /// NoAlgorithm trace says so).
    Unavailable,
};

/// The choice for one call, with NCCL's own time estimate (for reports; the simulated time comes
/// from the flows).
struct CollectivePlan
{
    NcclAlgorithm algorithm = NcclAlgorithm::Ring;
    NcclProtocol protocol = NcclProtocol::Simple;
    int channels = 1;
    /// The share of its protocol's full thread count each channel's CTA runs with (NCCL halves
    /// the threads of a small one-channel ring op): its copy rate scales with it.
    double threadShare = 1;
    double ncclEstimateUs = 0;
    NcclEnvOutcome envOutcome = NcclEnvOutcome::Applied;
};

/// One collective whose ranks start one by one (CollectiveModel::Begin): the model learns each
/// rank's start as the simulator does and runs what that start allows.
class CollectiveRun
{
public:
    virtual ~CollectiveRun() = default;
    /// Comm rank `rank`'s part may start at `start` (>= Simulator::Now()); once per rank.
    virtual void MemberStart(uint32_t rank, Time start) = 0;
};

namespace nccl
{
struct SearchSettings;  //!< nccl-topology-search.h
struct CostSettings;    //!< nccl-cost-model.h
struct ScheduleContext; //!< collective-schedule.h
} // namespace nccl

/**
 * \ingroup eidolon
 * \brief Chooses algorithm/protocol/channels as NCCL does and runs the chosen data movement as
 * flows on a NetworkModel, so concurrent collectives contend on every link they share.
 */
class CollectiveModel : public Object
{
public:
    static TypeId GetTypeId();
    CollectiveModel();
    ~CollectiveModel() override;

    void SetNetworkModel(Ptr<NetworkModel> network);
    void SetConfig(const NcclConfig& config);

    /// NCCL's choice for this call on this topology (GPU generation, node count, NVSwitch, NICs).
    CollectivePlan Choose(const CollectiveCall& call) const;

    /// Called once per comm rank, from an ns-3 event at the time that rank's part is done
    /// (Simulator::Now() is its end): the rank's later work may start then, so it must not be
    /// delayed to the end of the slowest rank (a pipeline sender goes on before its receiver).
    using DoneCallback = Callback<void, uint32_t /*comm rank*/>;

    /// Runs `call`; rank r's part becomes ready at starts[r] (>= Simulator::Now()). Flows are
    /// posted to the network model; `done` is invoked once per rank as above. Returns the plan.
    CollectivePlan Start(const CollectiveCall& call, const std::vector<Time>& starts,
                         DoneCallback done);

    /// Runs `call` as its ranks start (CollectiveRun::MemberStart), for a caller that learns the
    /// starts one at a time: a Broadcast/Reduce chain on the ring lets each rank go as soon as
    /// its upstream ranks have started and done its part without waiting for downstream ranks
    /// (as NCCL's chain does while the data fits the connection's FIFO), so back-to-back chains
    /// overlap; every other plan starts when its last rank does, as Start. `plan`, when given,
    /// receives the plan.
    std::shared_ptr<CollectiveRun> Begin(const CollectiveCall& call, DoneCallback done,
                                         CollectivePlan* plan = nullptr);

    /// Runs the collectives one group (ncclGroupStart/End) issued on one communicator, in issue
    /// order (`calls` share their GPUs), as NCCL runs them: in one kernel, aggregated and laid
    /// on the channels by the emulated release's rules (doc/collective-model.md, "Groups"). It
    /// starts once every rank has (CollectiveRun::MemberStart) and every rank is done with the
    /// last channel. `plans`, when given, receives each call's plan, with the channels its
    /// parts span. One call: Begin.
    std::shared_ptr<CollectiveRun> BeginGroup(const std::vector<CollectiveCall>& calls,
                                              DoneCallback done,
                                              std::vector<CollectivePlan>* plans = nullptr);

    /// The communicator as the model sees it (graphs, channels, efficiencies); `gpus` are
    /// topology device ids by comm rank. Cached per GPU set.
    NcclCommInfo DescribeCommunicator(const std::vector<uint32_t>& gpus, int minCtas = 0,
                                      int maxCtas = 0) const;
    /// The same, shared with the cache (no copy: a live alltoall asks once per transfer).
    std::shared_ptr<const NcclCommInfo> CommunicatorOf(const std::vector<uint32_t>& gpus,
                                                       int minCtas = 0, int maxCtas = 0) const;
    /// NCCL's cost table for this call (after the environment's enable/disable rules).
    NcclCostTable CostTable(const CollectiveCall& call) const;
    /// The latency (us) the timing adds to the data movement of `plan` for `call`: NCCL's own
    /// latency formula for the algorithm/protocol (doc/collective-model.md).
    double PlanLatencyUs(const CollectiveCall& call, const CollectivePlan& plan) const;
    /// The emulated NCCL version as NCCL encodes it (2.30.7 -> 23007).
    uint32_t GetNcclVersion() const { return m_ncclVersion; }
    /// nccl-tests' bus bandwidth factor for `kind` on n ranks (busbw = algbw x factor).
    static double BusBandwidthFactor(CollectiveKind kind, uint32_t n);

    /// Signature of the NoAlgorithm trace: the call's function and what NCCL would say and do.
    typedef void (*NoAlgorithmTracedCallback)(CollectiveKind kind, const std::string& message);

protected:
    void DoDispose() override;

private:
    Ptr<const Topology> GetTopology() const;
    void IndexTopology() const;
    CollectivePlan ChooseFor(const CollectiveCall& call, const NcclCommInfo& comm) const;
    /// A Broadcast/Reduce chain of `plan` (Begin, Start), told its members' starts as they come.
    std::shared_ptr<CollectiveRun> RunChain(const CollectiveCall& call,
                                            const std::shared_ptr<const NcclCommInfo>& comm,
                                            const CollectivePlan& plan, DoneCallback done) const;
    /// Posts `call` run as `plan` (chosen) once every start is known: every plan but a chain.
    void StartPlanned(const CollectiveCall& call, const NcclCommInfo& comm,
                      const CollectivePlan& plan, const std::vector<Time>& starts,
                      DoneCallback done);
    /// What each concern takes from the attributes and the configuration.
    nccl::SearchSettings GetSearchSettings() const;
    nccl::CostSettings GetCostSettings() const;
    nccl::ScheduleContext GetScheduleContext() const;
    /// NCCL's CPU class: the CpuVendor attribute, else the topology's host (Topology::cpuVendor).
    std::string CpuVendor() const;
    bool IsAmdCpu() const;

    Ptr<NetworkModel> m_network;
    NcclConfig m_config;
    uint32_t m_ncclVersion;
    double m_channelBandwidth; //!< attribute; 0: NCCL's per-link NVLink figure
    double m_nvlinkEfficiency; //!< attribute; 0: derived from NCCL's per-link figure
    double m_nvlsEfficiency;   //!< attribute; 0: NCCL's table
    double m_netEfficiency;
    double m_pcieEfficiency;
    double m_llEfficiency;
    double m_ll128Efficiency;
    double m_simpleEfficiency;
    std::string m_cpuVendor; //!< attribute; "": the topology's host's
    bool m_nvlsMulticast;
    bool m_pxn;
    double m_llNetSendRate; //!< attribute; 0: no limit
    /// Per topology device: links touching it (built on first use).
    mutable std::vector<std::vector<uint32_t>> m_deviceLinks;
    /// Communicators by channel bounds (minCTAs, maxCTAs), then GPUs: looked up without copying
    /// the GPU list.
    mutable std::map<std::pair<int, int>,
                     std::map<std::vector<uint32_t>, std::shared_ptr<const NcclCommInfo>>>
        m_commCache;
    mutable size_t m_commCacheSize = 0;
    /// The last communicator looked up, and its key: the transfers of one alltoall all ask for
    /// the same one, and a map lookup compares the GPU list lexicographically at every level.
    mutable std::shared_ptr<const NcclCommInfo> m_lastComm;
    mutable std::pair<int, int> m_lastCommBounds;
    mutable std::vector<uint32_t> m_lastCommGpus;
    /// Attribute values the cache was built with (attributes may change after a lookup).
    mutable std::vector<double> m_commCacheKey;
    mutable std::string m_commCacheVendor;
    /// A call whose NCCL_ALGO / NCCL_PROTO leave it no algorithm/protocol: fired per such call.
    TracedCallback<CollectiveKind, const std::string&> m_noAlgorithm;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_COLLECTIVE_MODEL_H
