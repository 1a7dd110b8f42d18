// CollectiveModel: NCCL's choice (algorithm, protocol, channels) from its cost tables, and the
// chosen data movement timed as flows. Expected values are worked out by hand in the comments from
// NCCL's tables (../shared/notes/nccl-model-facts.md, NCCL 2.30.7) and the alpha-beta formula.
//
// The DGX H100 of topologies/dgx-h100-1node.yaml: 8 GPUs, each with one 450 GB/s (per direction)
// link of 250 ns to the NVSwitch domain. NCCL sees NVLink4 as 18 x 20.6 = 370.8 GB/s per GPU, so
// the model's NVLink payload efficiency is 20.6 / 25 = 0.824 and one channel (CTA) moves at most
// 20.6 GB/s (NCCL's per-link figure).
#include "collective-schedule.h"
#include "eidolon-test-checks.h"
#include "nccl-config.h"

#include "ns3/cluster-helper.h"
#include "ns3/collective-model.h"
#include "ns3/double.h"
#include "ns3/flow-model.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/topology.h"
#include "ns3/uinteger.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

using namespace ns3;
using namespace ns3::eidolon;
using namespace ::eidolon::test;

namespace
{
struct SimulatorGuard
{
    ~SimulatorGuard() { Simulator::Destroy(); }
};

Ptr<Topology>
Load(const std::string& name)
{
    static std::map<std::string, Ptr<Topology>> cache;
    auto it = cache.find(name);
    if (it == cache.end())
    {
        ClusterHelper cluster;
        it = cache.emplace(name, cluster.ReadTopology(name)).first;
    }
    return it->second;
}

struct Bench
{
    Ptr<Topology> topo;
    Ptr<FlowModel> net;
    Ptr<CollectiveModel> model;

    explicit Bench(const std::string& topology, const std::map<std::string, std::string>& env = {})
    {
        topo = Load(topology);
        net = CreateObject<FlowModel>();
        net->SetTopology(topo);
        model = CreateObject<CollectiveModel>();
        model->SetNetworkModel(net);
        model->SetConfig(NcclConfig::FromEnvironment(env));
    }

    CollectiveCall Call(CollectiveKind kind, uint64_t bytes, uint32_t ranks = 0,
                        uint64_t tag = 1) const
    {
        CollectiveCall c;
        c.kind = kind;
        c.bytes = bytes;
        c.tag = tag;
        uint32_t n = ranks ? ranks : topo->GpuCount();
        for (uint32_t g = 0; g < n; ++g)
        {
            c.gpus.push_back(topo->GpuDevice(g));
        }
        return c;
    }
};

/// CollectiveModel as an ns-3 object: one TestCase per check, each check a member below.
class CollectiveModelTestCase : public TestCase
{
public:
    /// One of the checks below.
    using Check = void (CollectiveModelTestCase::*)();

    CollectiveModelTestCase(const std::string& name, Check check)
        : TestCase(name)
        , m_check(check)
    {
    }

    void CommunicatorMatchesNcclSearchOnDgxH100();
    void CostTableIsNcclsFor8H100();
    void SelectionBySizeFollowsNcclRule();
    void RingAllreduceTimeIsAlphaBeta();
    void MaxChannelsChangesTimeAsPredicted();
    void NvlsBeatsRingOn8H100AndItsTimeByHand();
    void TreeAcrossTwoNodes();
    void TwoConcurrentAllreducesShareTheLinks();
    void EnvironmentOverrides();
    void NoAlgorithmIsWhatTheReleaseDoes();
    void InvalidEnvironmentNamesTheVariable();
    void UnreadVariablesAreNamed();
    void SendrecvRanksEndWhenTheirOwnTransfersDo();
    void SendrecvWaitsForBothRanksAndSelfCopiesRunAtHbmSpeed();
    void SendrecvLlThresholdIsTheReleases();
    void NvlsCtasAndChunksAreTheReleases();
    void P2pOpsSplitAsTheReleaseDoes();
    void AlltoallFollowsNcclsP2pRoundsAndChannelSharing();
    void CollectiveWaitsForItsLastRankAndReportsEveryRankOnce();
    void OtherCollectivesMoveWhatNcclMoves();
    void EmulatedVersionChangesTheTables();
    void EachClaimedReleaseHasItsTablesAndRules();
    void CollNetInNcclAlgoIsNamedInAWarning();
    void RingAcrossNodesPaysTheNetworkHopEveryStepOfEveryLoop();
    void LlRingAcrossNodesCrossesEveryNodeBoundaryOnItsLongestPath();
    void ChainAcrossNodesStoresAndForwardsSlicesAndSteps();
    void SmallRingOpsRunWithFewerThreads();
    void TreeLl128AcrossNodesHoldsAChunkAtEveryNetworkHop();
    void TreeLlAcrossNodesHoldsAStepAtEveryNetworkHop();
    void SmallOpsTakeTheChannelsTheReleasesSchedulerGives();
    void NetworkTransportCostsEveryNetworkMessage();
    void BusBandwidthFactorsAreNcclTests();
    void CollNetCostsAndSelectionAreNcclsOnSharpSwitches();
    /// 256 MiB of `kind` alone on 2 nodes x 8 H100 with 100 Gb/s NICs and SHARPv3 switches,
    /// NCCL_ALGO=CollNetDirect (checked to be what runs): every rank's end (us).
    std::vector<double> CollNetDirectEnds(CollectiveKind kind);
    void CollNetDirectAllreduceReducesInTheSwitch();
    void CollNetDirectAllgatherGathersInTheSwitch();
    void P2pDisabledRoutesIntraNodeTrafficThroughTheHost();
    void P2pLevelKeepsP2pUpToThePathItNames();
    void ShmDisabledMakesEachGpuANodeOfItsOwn();
    void ConfigCtasBoundTheChannels();
    void Ll128FollowsTheNicsPlace();
    void CommNodesAreNcclsNodes();
    void GroupsAreLaidOutAsTheReleaseDoes();
    void GroupRunsAsOneKernel();
    /// The calls of one group, all members starting at 0: every rank's end (us).
    std::vector<double> RunGroup(Bench& b, const std::vector<CollectiveCall>& calls,
                                 std::vector<CollectivePlan>* plans = nullptr);

private:
    void DoRun() override { (this->*m_check)(); }

    /// Runs the calls at time 0 and returns each call's per-rank end times (us).
    std::vector<std::vector<double>> Run(Bench& b, const std::vector<CollectiveCall>& calls,
                                         std::vector<CollectivePlan>* plans = nullptr,
                                         const std::vector<std::vector<Time>>& starts = {});

    Check m_check;
};

std::vector<std::vector<double>>
CollectiveModelTestCase::Run(Bench& b, const std::vector<CollectiveCall>& calls,
                             std::vector<CollectivePlan>* plans,
                             const std::vector<std::vector<Time>>& starts)
{
    std::vector<std::vector<double>> ends(calls.size());
    for (size_t i = 0; i < calls.size(); ++i)
    {
        ends[i].assign(calls[i].gpus.size(), -1);
        auto* slot = &ends[i];
        std::vector<Time> st =
            starts.empty() ? std::vector<Time>(calls[i].gpus.size(), Seconds(0)) : starts[i];
        CollectivePlan plan = b.model->Start(
            calls[i], st,
            [this, slot](uint32_t r)
            {
                NS_TEST_EXPECT_MSG_LT((*slot)[r], 0, "rank " << r << " reported twice");
                (*slot)[r] = Simulator::Now().GetNanoSeconds() / 1e3;
            });
        if (plans)
        {
            plans->push_back(plan);
        }
    }
    Simulator::Run();
    Simulator::Destroy();
    return ends;
}

constexpr double kGiB = 1073741824.0;
constexpr double kNvlPayload = 450e9 * 0.824; // 370.8 GB/s, NCCL's NVLink4 figure
constexpr double kCta = 20.6e9;               // one channel's copy rate on sm90

bool
Near(double got, double want, double rel = 1e-3, double absUs = 0.01)
{
    return std::fabs(got - want) <= std::max(rel * std::fabs(want), absUs);
}
} // namespace

void
CollectiveModelTestCase::CommunicatorMatchesNcclSearchOnDgxH100()
{
    // One node: a ring channel uses each GPU's 370.8 GB/s once, so 6 x 60 GB/s (sm90 speeds
    // 60, 50, ...), doubled by the search to 12 x 30; comm.nChannels = 2 x 12 = 24. NVLS: 8 heads,
    // (8 + 1) x 40 <= 370.8 < 9 x 50, bwInter raised to 60; 16 NVLS CTAs on sm90.
    Bench b("dgx-h100-1node");
    NcclCommInfo c = b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
    NS_TEST_EXPECT_MSG_EQ(c.nRanks, 8u, "");
    NS_TEST_EXPECT_MSG_EQ(c.nNodes, 1u, "");
    NS_TEST_EXPECT_MSG_EQ(c.minCompCap, 90, "");
    NS_TEST_EXPECT_MSG_EQ(c.ring.nChannels, 12, "");
    NS_TEST_EXPECT_MSG_EQ(c.ring.bwIntra, 30.0, "");
    NS_TEST_EXPECT_MSG_EQ(c.channels, 24, "");
    NS_TEST_EXPECT_MSG_EQ(c.nvls, true, "");
    NS_TEST_EXPECT_MSG_EQ(c.nvlsGraph.nChannels, 8, "");
    NS_TEST_EXPECT_MSG_EQ(c.nvlsGraph.bwIntra, 40.0, "");
    NS_TEST_EXPECT_MSG_EQ(c.nvlsGraph.bwInter, 60.0, "");
    NS_TEST_EXPECT_MSG_EQ(c.nvlsChannels, 16, "");
    NS_TEST_EXPECT_MSG_EQ(Near(c.nvlinkEfficiency, 0.824, 1e-9), true, c.nvlinkEfficiency);

    // Two nodes: GPU-NIC path min(400 Gb/s = 50, PCIe Gen5 48) = 48 GB/s, one channel per NIC:
    // 8 x 48, not doubled (sm90, < 50 GB/s, > 4 channels); Postset doubles to 16.
    Bench d("default");
    NcclCommInfo m = d.model->DescribeCommunicator(d.Call(CollectiveKind::AllReduce, 1).gpus);
    NS_TEST_EXPECT_MSG_EQ(m.nNodes, 2u, "");
    NS_TEST_EXPECT_MSG_EQ(m.ring.nChannels, 8, "");
    NS_TEST_EXPECT_MSG_EQ(m.ring.bwInter, 48.0, "");
    NS_TEST_EXPECT_MSG_EQ(m.channels, 16, "");
    // NVLS heads bound to the 8 NICs: 9 x 40 <= 370.8, bwInter raised to min(2 x 40, 48).
    NS_TEST_EXPECT_MSG_EQ(m.nvlsGraph.bwIntra, 40.0, "");
    NS_TEST_EXPECT_MSG_EQ(m.nvlsGraph.bwInter, 48.0, "");
}

void
CollectiveModelTestCase::CostTableIsNcclsFor8H100()
{
    // nccl-model-facts.md 1.8: AllReduce on 8 H100, n/nsteps = 8/14.
    Bench b("dgx-h100-1node");
    NcclCostTable t = b.model->CostTable(b.Call(CollectiveKind::AllReduce, 1 << 20));
    const int ring = int(NcclAlgorithm::Ring), tree = int(NcclAlgorithm::Tree),
              nvls = int(NcclAlgorithm::Nvls);
    const int ll = 0, ll128 = 1, simple = 2;
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll], 141.0 * 8 / 14), true,
                          ""); // min(141, 0.5 x 360)
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll128], 331.2 * 8 / 14), true,
                          ""); // min(0.92 x 360, 12 x 36.7)
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][simple], 360.0 * 8 / 14), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[tree][ll], 331.2 / 3.8 * 0.5), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 8 * 40 * 0.85 * 7 / 8 * 2 * 8 / 14.0),
                          true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][ll], 6.6 + 14 * 0.6), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][ll128], 14 + 14 * 1.9), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][simple], 8.4 + 14 * 3.4), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[tree][ll128], 14 + 2 * 7 * 1.25), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[nvls][simple], 25.0), true, "");
    // CollNet needs SHARP switches; NVLSTree needs several nodes; PAT one rank per node.
    NS_TEST_EXPECT_MSG_LT(t.timeUs[int(NcclAlgorithm::CollNetDirect)][simple], 0, "");
    NS_TEST_EXPECT_MSG_LT(t.timeUs[int(NcclAlgorithm::NvlsTree)][simple], 0, "");
    NS_TEST_EXPECT_MSG_LT(t.timeUs[int(NcclAlgorithm::Pat)][simple], 0, "");
}

void
CollectiveModelTestCase::SelectionBySizeFollowsNcclRule()
{
    // Ring/LL: 15.0 + S/80.57 kB/us; NVLS: 25 + S/272 kB/us. They cross at
    // S = 10 / (1/80.57 - 1/272) / 1e-3 ~ 1.145 MB: 1 MiB stays on LL, 2 MiB goes NVLS.
    // 8 KiB: Ring/LL 15.10 us against Tree/LL 15.2 + 8192 / (43.6 x 0.7) = 15.47 us.
    Bench b("dgx-h100-1node");
    auto plan = [&](uint64_t bytes)
    { return b.model->Choose(b.Call(CollectiveKind::AllReduce, bytes)); };
    NS_TEST_EXPECT_MSG_EQ(plan(8192).algorithm, NcclAlgorithm::Ring, "");
    NS_TEST_EXPECT_MSG_EQ(plan(8192).protocol, NcclProtocol::LL, "");
    NS_TEST_EXPECT_MSG_EQ(Near(plan(8192).ncclEstimateUs, 15.0 + 8192 / (141.0 * 8 / 14 * 1000)),
                          true, plan(8192).ncclEstimateUs);
    NS_TEST_EXPECT_MSG_EQ(plan(1 << 20).protocol, NcclProtocol::LL, "");
    NS_TEST_EXPECT_MSG_EQ(plan(2 << 20).algorithm, NcclAlgorithm::Nvls, "");
    NS_TEST_EXPECT_MSG_EQ(plan(2 << 20).protocol, NcclProtocol::Simple, "");
    NS_TEST_EXPECT_MSG_EQ(plan(1ull << 30).algorithm, NcclAlgorithm::Nvls, "");
    NS_TEST_EXPECT_MSG_EQ(plan(1ull << 30).channels, 16, "");
    // 8 KiB of Ring/LL: one channel per 32 KiB (512 threads x 8 B x 8 ranks), so 1 channel.
    NS_TEST_EXPECT_MSG_EQ(plan(8192).channels, 1, "");

    // Without NVLS: LL up to ~3.6 MB (15 + S/80.57 = 40.6 + S/189.3), LL128 up to ~36.6 MB
    // (40.6 + S/189.3 = 56 + S/205.7), Simple beyond.
    Bench off("dgx-h100-1node", {{"NCCL_NVLS_ENABLE", "0"}});
    auto plan2 = [&](uint64_t bytes)
    { return off.model->Choose(off.Call(CollectiveKind::AllReduce, bytes)); };
    NS_TEST_EXPECT_MSG_EQ(plan2(2 << 20).protocol, NcclProtocol::LL, "");
    NS_TEST_EXPECT_MSG_EQ(plan2(8 << 20).protocol, NcclProtocol::LL128, "");
    NS_TEST_EXPECT_MSG_EQ(plan2(64 << 20).protocol, NcclProtocol::Simple, "");
    NS_TEST_EXPECT_MSG_EQ(plan2(64 << 20).algorithm, NcclAlgorithm::Ring, "");
    NS_TEST_EXPECT_MSG_EQ(plan2(64 << 20).channels, 24, "");

    // All-gather: NVLS's all-gather bandwidth (8 x 40 x 0.85 x 7/8 x 7/8 = 208 GB/s, no ring
    // conversion) loses to the ring's 360 x 8/7 = 411 GB/s.
    auto ag = b.model->Choose(b.Call(CollectiveKind::AllGather, 1ull << 30));
    NS_TEST_EXPECT_MSG_EQ(ag.algorithm, NcclAlgorithm::Ring, "");
    NS_TEST_EXPECT_MSG_EQ(ag.protocol, NcclProtocol::Simple, "");
}

void
CollectiveModelTestCase::RingAllreduceTimeIsAlphaBeta()
{
    // NCCL_ALGO=Ring, NCCL_PROTO=Simple, 1 GiB on 8 H100, 24 channels. Each channel is one flow
    // crossing every GPU's uplink and downlink once: 24 flows share each 450 GB/s link (18.75 GB/s
    // each, below a CTA's 20.6 / 0.824 = 25 GB/s), so the ring moves 2(n-1)/n x S at 0.824 x 450
    // = 370.8 GB/s of payload. alpha: NCCL's ring latency (8.4 + 14 x 3.4 = 56 us) pays each of
    // the 14 steps' NVLink hop once; the ring runs in lockstep and repeats its steps for every
    // loop of 24 channels x 8 ranks x 2 MiB = 384 MiB, 3 loops for 1 GiB: 8.4 + 3 x 47.6 =
    // 151.2 us.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, uint64_t(kGiB))}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].algorithm, NcclAlgorithm::Ring, "");
    NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 24, "");
    const double want = 151.2 + 1.75 * kGiB / kNvlPayload * 1e6;
    for (double e : ends[0])
    {
        NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-4), true, e << " us, want " << want);
    }
    NS_TEST_EXPECT_MSG_EQ(
        Near(b.model->PlanLatencyUs(b.Call(CollectiveKind::AllReduce, uint64_t(kGiB)), plans[0]),
             151.2),
        true, "");
    // 256 MiB is one loop: NCCL's own 56 us.
    const CollectiveCall one = b.Call(CollectiveKind::AllReduce, 256 << 20);
    NS_TEST_EXPECT_MSG_EQ(Near(b.model->PlanLatencyUs(one, b.model->Choose(one)), 56.0), true,
                          b.model->PlanLatencyUs(one, b.model->Choose(one)));
}

void
CollectiveModelTestCase::P2pLevelKeepsP2pUpToThePathItNames()
{
    // NCCL_P2P_LEVEL (graph/paths.cc): P2P between two GPUs of a node where their path type is
    // no farther than the level, else SHM through host memory (viaHost). On a DGX H100 every pair
    // is NVL: only LOC (or the old number 0) turns P2P off; NCCL_P2P_DISABLE=1 wins over any level.
    auto viaHost = [](const std::string& topology, std::map<std::string, std::string> env,
                      std::vector<uint32_t> gpus, const std::string& cpu = "",
                      uint32_t version = 23007)
    {
        Bench b(topology, env);
        b.model->SetAttribute("CpuVendor", StringValue(cpu));
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        std::vector<uint32_t> devices;
        for (uint32_t g : gpus)
        {
            devices.push_back(b.topo->GpuDevice(g));
        }
        return b.model->DescribeCommunicator(devices).viaHost;
    };
    const std::vector<uint32_t> eight = {0, 1, 2, 3, 4, 5, 6, 7};
    NS_TEST_EXPECT_MSG_EQ(viaHost("dgx-h100-1node", {{"NCCL_P2P_LEVEL", "LOC"}}, eight), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost("dgx-h100-1node", {{"NCCL_P2P_LEVEL", "0"}}, eight), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost("dgx-h100-1node", {{"NCCL_P2P_LEVEL", "NVL"}}, eight), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost("dgx-h100-1node", {{"NCCL_P2P_LEVEL", "PIX"}}, eight), false, "");
    NS_TEST_EXPECT_MSG_EQ(
        viaHost("dgx-h100-1node", {{"NCCL_P2P_LEVEL", "SYS"}, {"NCCL_P2P_DISABLE", "1"}}, eight),
        true, "");
    // Four GPUs on PCIe only (no NVSwitch): each GPU has its own PCIe switch, and two GPUs meet
    // at the CPU's root complex (gpu0 -> pcie0 -> pcie-root -> pcie1 -> gpu1): PHB. PHB, SYS and
    // the old numbers 3 (PHB) and 4 (SYS) keep P2P; PXB, PIX and the old 2 (PXB) do not.
    const std::string pcie = "/tmp/eidolon-collective-test-pcie-4gpu.yaml";
    std::ofstream(pcie) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                        << "name: pcie-4gpu\ngenerate:\n  nodes: 1\n"
                        << "  node: {type: dgx-h100, nvswitch: false, gpus: 4}\n";
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "PHB"}}, {0, 1}), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "SYS"}}, {0, 1, 2, 3}), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "3"}}, {0, 2}), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "4"}}, {0, 2}), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "PXB"}}, {0, 1}), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "PIX"}}, {2, 3}), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {{"NCCL_P2P_LEVEL", "2"}}, {0, 1, 2, 3}), true, "");
    // Unset, NCCL's own level (paths.cc): from 2.23 PXB, so GPUs meeting at the host bridge go
    // through host memory, unless the host is AMD and the comm has at most two GPUs on the node
    // (SYS); before 2.23 SYS, except on Intel, Zhaoxin and ARM hosts (PXB). The topology's
    // default host is an Intel Xeon.
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1, 2, 3}), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1, 2, 3}, "amd"), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1}, "amd"), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1}, "intel"), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1, 2, 3}, "amd", 22005), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1, 2, 3}, "power", 22005), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1, 2, 3}, "arm", 22005), true, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(pcie, {}, {0, 1, 2, 3}, "intel", 22005), true, "");
    // NVLink pairs are NVL, under every default.
    NS_TEST_EXPECT_MSG_EQ(viaHost("dgx-h100-1node", {}, eight, "intel"), false, "");
    // The CPU class comes from the host description the topology names (here an AMD EPYC
    // server: the shipped host's figures under another name and CPU, no cpu_vendor field), so two
    // GPUs of that PCIe node keep P2P.
    const std::filesystem::path dir = "/tmp/eidolon-collective-test-amd-host";
    std::filesystem::create_directories(dir / "hosts");
    std::stringstream shipped;
    shipped << std::ifstream(ShippedTopologies() + "/hosts/h100-server.yaml").rdbuf();
    std::string host;
    for (std::string line; std::getline(shipped, line);)
    {
        if (line.rfind("name:", 0) == 0)
        {
            line = "name: epyc-server";
        }
        else if (line.rfind("cpu:", 0) == 0)
        {
            line = "cpu: \"AMD EPYC 7V12 64-Core Processor\"";
        }
        else if (line.rfind("cpu_vendor:", 0) == 0)
        {
            continue;
        }
        host += line + "\n";
    }
    std::ofstream(dir / "hosts" / "epyc-server.yaml") << host;
    const std::string amdPcie = (dir / "pcie-4gpu-amd.yaml").string();
    std::ofstream(amdPcie) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                           << "name: pcie-4gpu-amd\nhost: epyc-server\ngenerate:\n  nodes: 1\n"
                           << "  node: {type: dgx-h100, nvswitch: false, gpus: 4}\n";
    NS_TEST_EXPECT_MSG_EQ(Load(amdPcie)->cpuVendor, "amd", "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(amdPcie, {}, {0, 1}), false, "");
    NS_TEST_EXPECT_MSG_EQ(viaHost(amdPcie, {}, {0, 1, 2}), true, "");
    // A value NCCL would silently ignore is named; the model reads the variable (no warning).
    EIDOLON_TEST_EXPECT_THROW(NcclConfig::FromEnvironment({{"NCCL_P2P_LEVEL", "FAST"}}),
                              std::invalid_argument);
    NS_TEST_EXPECT_MSG_EQ(
        NcclConfig::UnreadVariablesWarning({{"NCCL_P2P_LEVEL", "NVL"}}).find("NCCL_P2P_LEVEL"),
        std::string::npos, "");
}

void
CollectiveModelTestCase::Ll128FollowsTheNicsPlace()
{
    // Two nodes of two GPUs on an NVSwitch; each GPU on a PCIe switch of its own, the two switches
    // under `root`, and one NIC per node. NCCL's LL128 rule across nodes (tuning.cc): the path to
    // the network within PCIe switches (PXB), or on sm90+ no farther than PXN (paths.cc: through
    // an NVLink peer whose NIC is within PCIe switches).
    auto cluster =
        [](const std::string& name, const std::string& model, bool hostBridge, bool nicOnGpu0Switch)
    {
        const std::string path = "/tmp/eidolon-collective-test-" + name + ".yaml";
        std::ofstream out(path);
        out << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\nname: " << name
            << "\ngpu_model: " << model << "\ndevices:\n  - {name: leaf, type: switch}\n";
        std::string links;
        for (int n = 0; n < 2; ++n)
        {
            const std::string p = "n" + std::to_string(n) + "/";
            const std::string node = ", node: " + std::to_string(n);
            out << "  - {name: " << p << "nvswitch, type: nvswitch" << node << "}\n"
                << "  - {name: " << p << "root, type: pcie-switch" << node
                << (hostBridge ? ", host_bridge: true" : "") << "}\n"
                << "  - {name: " << p << "host, type: host" << node << "}\n"
                << "  - {name: " << p << "nic0, type: nic" << node << ", index: 0}\n";
            links +=
                "  - {a: " + p + "root, b: " + p + "host, bandwidth: 63GB/s, latency: 250ns}\n";
            links += "  - {a: " + p + "nic0, b: " + p + (nicOnGpu0Switch ? "sw0" : "root") +
                     ", bandwidth: 63GB/s, latency: 250ns}\n";
            links += "  - {a: " + p + "nic0, b: leaf, bandwidth: 50GB/s, latency: 200ns}\n";
            for (int g = 0; g < 2; ++g)
            {
                const std::string gpu = p + "gpu" + std::to_string(g);
                const std::string sw = p + "sw" + std::to_string(g);
                out << "  - {name: " << gpu << ", type: gpu" << node << "}\n"
                    << "  - {name: " << sw << ", type: pcie-switch" << node << "}\n";
                links += "  - {a: " + gpu + ", b: " + p + "nvswitch, bandwidth: 450GB/s, " +
                         "latency: 250ns}\n";
                links += "  - {a: " + gpu + ", b: " + sw + ", bandwidth: 63GB/s, latency: 250ns}\n";
                links +=
                    "  - {a: " + sw + ", b: " + p + "root, bandwidth: 63GB/s, latency: 250ns}\n";
            }
        }
        out << "links:\n" << links;
        return path;
    };
    auto ll128 = [](const std::string& path)
    {
        Bench b(path);
        return b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus).ring.ll128;
    };
    const std::string h100 = "H100-SXM5-80GB", a100 = "A100-SXM4-80GB";
    // The NIC on the CPU's root complex: PHB for both GPUs, no PXN: off.
    NS_TEST_EXPECT_MSG_EQ(ll128(cluster("nic-behind-cpu", h100, true, false)), false, "");
    // The same tree without a host bridge (a switch chain): PXB: on.
    NS_TEST_EXPECT_MSG_EQ(ll128(cluster("nic-behind-switches", h100, false, false)), true, "");
    // The NIC on GPU 0's switch: PIX for GPU 0, GPU 1 through PXN (its own path is PHB): on for
    // H100, off for A100 (sm80 allows PXB at most).
    NS_TEST_EXPECT_MSG_EQ(ll128(cluster("nic-by-gpu0-h100", h100, true, true)), true, "");
    NS_TEST_EXPECT_MSG_EQ(ll128(cluster("nic-by-gpu0-a100", a100, true, true)), false, "");
    // One node: no network path, LL128 stays on.
    Bench one(cluster("nic-behind-cpu", h100, true, false));
    NS_TEST_EXPECT_MSG_EQ(
        one.model->DescribeCommunicator({one.topo->GpuDevice(0), one.topo->GpuDevice(1)})
            .ring.ll128,
        true, "");
}

void
CollectiveModelTestCase::ConfigCtasBoundTheChannels()
{
    // A communicator's ncclConfig_t maxCTAs bounds its channels as NCCL_MAX_NCHANNELS does
    // (connect.cc: min(NCCL_MAX_NCHANNELS, nChannels, maxCTAs), then copies up to
    // max(NCCL_MIN_NCHANNELS, minCTAs)), per communicator: the same GPUs without bounds keep the
    // channels NCCL gives them (Ring/Simple AllReduce of 1 GiB on one DGX H100).
    const std::map<std::string, std::string> ring = {{"NCCL_ALGO", "Ring"},
                                                     {"NCCL_PROTO", "Simple"}};
    Bench b("dgx-h100-1node", ring);
    CollectiveCall call = b.Call(CollectiveKind::AllReduce, uint64_t(kGiB));
    const int own = b.model->Choose(call).channels;
    NS_TEST_EXPECT_MSG_GT(own, 4, "");
    call.maxCtas = 4;
    NS_TEST_EXPECT_MSG_EQ(b.model->Choose(call).channels, 4, "");
    auto env = ring;
    env["NCCL_MAX_NCHANNELS"] = "4";
    Bench capped("dgx-h100-1node", env);
    const CollectiveCall plain = capped.Call(CollectiveKind::AllReduce, uint64_t(kGiB));
    NS_TEST_EXPECT_MSG_EQ(b.model->CostTable(call).timeUs[int(NcclAlgorithm::Ring)][2],
                          capped.model->CostTable(plain).timeUs[int(NcclAlgorithm::Ring)][2], "");
    call.maxCtas = 0;
    call.minCtas = own + 8;
    NS_TEST_EXPECT_MSG_EQ(b.model->Choose(call).channels, own + 8, "");
    call.minCtas = 0;
    NS_TEST_EXPECT_MSG_EQ(b.model->Choose(call).channels, own, "the bounds are per communicator");
}

void
CollectiveModelTestCase::CommNodesAreNcclsNodes()
{
    // NCCL numbers its nodes by their first rank and orders a node's ranks by GPU (local index).
    // default.yaml: 2 nodes of 8. Ranks n0/gpu3, n1/gpu0, n0/gpu1, n1/gpu5: node 0 holds ranks
    // {2 (gpu1), 0 (gpu3)}, node 1 ranks {1 (gpu0), 3 (gpu5)}.
    {
        Bench b("default");
        const std::vector<uint32_t> gpus = {b.topo->GpuDevice(3), b.topo->GpuDevice(8),
                                            b.topo->GpuDevice(1), b.topo->GpuDevice(13)};
        const NcclCommInfo c = b.model->DescribeCommunicator(gpus);
        const std::vector<std::vector<uint32_t>> nodes = {{2, 0}, {1, 3}};
        const std::vector<uint32_t> nodeOfRank = {0, 1, 0, 1};
        NS_TEST_EXPECT_MSG_EQ((c.nodes == nodes), true, "");
        NS_TEST_EXPECT_MSG_EQ((c.nodeOfRank == nodeOfRank), true, "");
        NS_TEST_EXPECT_MSG_EQ(c.nNodes, 2u, "");
    }
    // Without P2P and SHM every rank is a node of its own (NcclCommInfo::viaNet), in rank order.
    {
        Bench b("dgx-h100-128node", {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
        const NcclCommInfo c =
            b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1, 4).gpus);
        const std::vector<std::vector<uint32_t>> nodes = {{0}, {1}, {2}, {3}};
        const std::vector<uint32_t> nodeOfRank = {0, 1, 2, 3};
        NS_TEST_EXPECT_MSG_EQ(c.viaNet, true, "");
        NS_TEST_EXPECT_MSG_EQ((c.nodes == nodes), true, "");
        NS_TEST_EXPECT_MSG_EQ((c.nodeOfRank == nodeOfRank), true, "");
        NS_TEST_EXPECT_MSG_EQ(c.nNodes, 4u, "");
    }
}

void
CollectiveModelTestCase::ShmDisabledMakesEachGpuANodeOfItsOwn()
{
    // NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 leave NCCL its network transport between the GPUs
    // of a server, and its topology of a node then holds one GPU: the 8 GPUs of node 0 of the
    // 128-node DGX H100 cluster are 8 NCCL nodes whose traffic leaves through their own NICs
    // (NIC i on rail i) and crosses the rail leaves and a spine. That is what NCCL does for GPU i
    // of node i (i = 0..7: the same rails, the same scalable unit, one rank per node, no PXN
    // proxy in the comm): the independent reference below. Same choice, same times.
    const std::map<std::string, std::string> net = {{"NCCL_P2P_DISABLE", "1"},
                                                    {"NCCL_SHM_DISABLE", "1"}};
    auto ends = [](const std::map<std::string, std::string>& env, bool spread, CollectiveKind kind,
                   uint64_t bytes, CollectivePlan* plan)
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-128node", env);
        CollectiveCall call = b.Call(kind, bytes, 8);
        for (uint32_t i = 0; i < 8; ++i)
        {
            call.gpus[i] = b.topo->GpuDevice(spread ? 9 * i : i);
        }
        if (kind == CollectiveKind::SendRecv)
        {
            for (uint32_t s = 0; s < 8; ++s) // an alltoall of `bytes` per pair
            {
                for (uint32_t d = 0; d < 8; ++d)
                {
                    if (s != d)
                    {
                        call.transfers.push_back({s, d, bytes});
                    }
                }
            }
        }
        std::vector<double> out(8, -1);
        *plan = b.model->Start(call, std::vector<Time>(8, Seconds(0)),
                               [&out](uint32_t r) { out[r] = Simulator::Now().GetNanoSeconds(); });
        Simulator::Run();
        Simulator::Destroy();
        return out;
    };
    {
        Bench b("dgx-h100-128node", net);
        std::vector<uint32_t> node0;
        for (uint32_t i = 0; i < 8; ++i)
        {
            node0.push_back(b.topo->GpuDevice(i));
        }
        const NcclCommInfo c = b.model->DescribeCommunicator(node0);
        NS_TEST_EXPECT_MSG_EQ(c.viaNet, true, "");
        NS_TEST_EXPECT_MSG_EQ(c.nNodes, 8u, "");
        NS_TEST_EXPECT_MSG_EQ(c.ppn, 1u, "");
    }
    for (const auto& [kind, bytes] : {std::pair{CollectiveKind::AllReduce, uint64_t(kGiB)},
                                      std::pair{CollectiveKind::AllReduce, uint64_t(1) << 20},
                                      std::pair{CollectiveKind::AllGather, uint64_t(64) << 20},
                                      std::pair{CollectiveKind::Broadcast, uint64_t(256) << 20},
                                      std::pair{CollectiveKind::SendRecv, uint64_t(8) << 20}})
    {
        CollectivePlan inNode, spread;
        const std::vector<double> a = ends(net, false, kind, bytes, &inNode);
        const std::vector<double> b = ends({}, true, kind, bytes, &spread);
        NS_TEST_EXPECT_MSG_EQ(inNode.algorithm, spread.algorithm, ToString(kind));
        NS_TEST_EXPECT_MSG_EQ(inNode.protocol, spread.protocol, ToString(kind));
        NS_TEST_EXPECT_MSG_EQ(inNode.channels, spread.channels, ToString(kind));
        for (uint32_t r = 0; r < 8; ++r)
        {
            NS_TEST_EXPECT_MSG_GT(a[r], 0, ToString(kind));
            NS_TEST_EXPECT_MSG_EQ(Near(a[r], b[r], 1e-9, 1), true,
                                  ToString(kind) << " rank " << r << ": " << a[r] << " ns in one "
                                                 << "server, " << b[r] << " one per node");
        }
    }
    // One DGX H100 alone has no fabric between its NICs: NCCL could not connect them, and the
    // model keeps SHM through the host.
    Bench one("dgx-h100-1node", net);
    const NcclCommInfo alone =
        one.model->DescribeCommunicator(one.Call(CollectiveKind::AllReduce, 1).gpus);
    NS_TEST_EXPECT_MSG_EQ(alone.viaNet, false, "");
    NS_TEST_EXPECT_MSG_EQ(alone.viaHost, true, "");
}

void
CollectiveModelTestCase::P2pDisabledRoutesIntraNodeTrafficThroughTheHost()
{
    // NCCL_P2P_DISABLE=1 on one DGX H100: the GPUs connect through host memory (NCCL's SHM
    // transport), each ring step gpu i -> pcie i -> host -> pcie j -> gpu j over Gen5 x16
    // (63 GB/s per direction, 0.9 of it payload). Ring/Simple, 4 channels, 1 GiB: each directed
    // PCIe link carries the 4 channels' flows once, 63/4 GB/s each (below a CTA's 20.6 GB/s), so
    // the ring moves 2(n-1)/n x S at 0.9 x 63 = 56.7 GB/s. alpha = NCCL's ring latency over PCI,
    // its 14 hops of 5.7 us paid per loop of 4 x 8 x 2 MiB = 64 MiB: 8.4 + 16 x 79.8 = 1285.2 us.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node", {{"NCCL_ALGO", "Ring"},
                               {"NCCL_PROTO", "Simple"},
                               {"NCCL_MIN_NCHANNELS", "4"},
                               {"NCCL_MAX_NCHANNELS", "4"},
                               {"NCCL_P2P_DISABLE", "1"}});
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, uint64_t(kGiB))}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 4, "");
    const double want = 1285.2 + 1.75 * kGiB / (0.9 * 63e9) * 1e6;
    for (double e : ends[0])
    {
        NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-4), true, e << " us, want " << want);
    }
    // Without P2P NCCL has no NVLink path and no NVLS: its own choice for 1 GiB is not NVLS.
    Bench own("dgx-h100-1node", {{"NCCL_P2P_DISABLE", "1"}});
    const NcclCommInfo c =
        own.model->DescribeCommunicator(own.Call(CollectiveKind::AllReduce, 1).gpus);
    NS_TEST_EXPECT_MSG_EQ(c.nvls, false, "");
    NS_TEST_EXPECT_MSG_EQ(c.viaHost, true, "");
    NS_TEST_EXPECT_MSG_EQ(c.ring.nvlinkIntra, false, "");
    std::vector<CollectivePlan> ownPlans;
    Run(own, {own.Call(CollectiveKind::AllReduce, uint64_t(kGiB))}, &ownPlans);
    NS_TEST_EXPECT_MSG_NE(ownPlans[0].algorithm, NcclAlgorithm::Nvls, "");
    // Send/Recv takes the host path too: 1 GB from rank 0 to rank 1 crosses gpu0's PCIe uplink,
    // so it cannot beat 1e9 / 56.7 GB/s = 17637 us (over NVLink it would take under 3 ms), and
    // with a CTA's 20.6 GB/s per channel on at most 4 p2p channels it needs no more than
    // 1e9 / (2 x 20.6 GB/s) = 24272 us if only the per-peer 2 channels run, plus latency and
    // the FIFO steps (under 1 ms).
    Bench pair("dgx-h100-1node", {{"NCCL_P2P_DISABLE", "1"}});
    CollectiveCall send = pair.Call(CollectiveKind::SendRecv, 0, 2);
    send.transfers = {{0, 1, 1000000000}};
    auto sendEnds = Run(pair, {send});
    NS_TEST_EXPECT_MSG_GT(sendEnds[0][1], 1e9 / (0.9 * 63e9) * 1e6, "");
    NS_TEST_EXPECT_MSG_LT(sendEnds[0][1], 1e9 / (2 * kCta) * 1e6 + 1000, "");
    // Only 0 and 1 are NCCL_P2P_DISABLE values.
    EIDOLON_TEST_EXPECT_THROW(NcclConfig::FromEnvironment({{"NCCL_P2P_DISABLE", "2"}}),
                              std::invalid_argument);
}

void
CollectiveModelTestCase::MaxChannelsChangesTimeAsPredicted()
{
    // NCCL_MAX_NCHANNELS=2: two flows get 225 GB/s of every link each, but a channel's CTA moves
    // only 20.6 GB/s: T = latency + 1.75 x S / (2 x 20.6 GB/s), about 9x the 24-channel time.
    // The ring's 14 NVLink hops (3.4 us) are paid per loop of 2 channels x 8 ranks x 2 MiB =
    // 32 MiB, 32 loops: latency 8.4 + 32 x 14 x 3.4 = 1531.6 us.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node",
            {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}, {"NCCL_MAX_NCHANNELS", "2"}});
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, uint64_t(kGiB))}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 2, "");
    const double want = 1531.6 + 1.75 * kGiB / (2 * kCta) * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], want, 1e-4), true, ends[0][0] << " us, want " << want);
}

void
CollectiveModelTestCase::NvlsBeatsRingOn8H100AndItsTimeByHand()
{
    // 1 GiB, NCCL's choice: NVLS/Simple, 16 CTAs. Per channel one flow over every GPU's uplink and
    // downlink carrying (1 + 1/8) x S/16 (each GPU's data to the switch, the heads' reduced share
    // back, and the multicast result). 16 flows share each link: 450/16 GB/s of wire, of which NVLS
    // carries 0.824 (NVLink payload) x 0.85 (NCCL's nvlsEff for Hopper) as data. NCCL's chunk rule
    // keeps 128 KiB chunks at 1 GiB (not below 64 x 16 x 8 x 128 KiB); the three stages (scatter,
    // reduce+multicast, gather) cost two more loops of 8 heads x 128 KiB x 1.125. Latency 25 us.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node");
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, uint64_t(kGiB))}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].algorithm, NcclAlgorithm::Nvls, "");
    NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 16, "");
    const double perFlowRate = 450e9 / 16 * 0.824 * 0.85;
    const double bytes = 1.125 * kGiB / 16 + 2 * 1.125 * 8 * 131072;
    const double want = 25.0 + bytes / perFlowRate * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][7], want, 1e-4), true, ends[0][7] << " us, want " << want);
    // Bus bandwidth above the ring's 370.8 GB/s: the switch does the reduction.
    const double busbw = kGiB / (ends[0][7] * 1e3) * 1.75;
    NS_TEST_EXPECT_MSG_GT(busbw, 460.0, "");
    NS_TEST_EXPECT_MSG_LT(busbw, 490.0, "");

    // NCCL_NVLS_ENABLE=0: the ring, at 370.8 GB/s.
    Bench off("dgx-h100-1node", {{"NCCL_NVLS_ENABLE", "0"}});
    NS_TEST_EXPECT_MSG_EQ(
        off.model->Choose(off.Call(CollectiveKind::AllReduce, uint64_t(kGiB))).algorithm,
        NcclAlgorithm::Ring, "");
    NS_TEST_EXPECT_MSG_EQ(
        off.model->DescribeCommunicator(off.Call(CollectiveKind::AllReduce, 1).gpus).nvls, false,
        "");
}

void
CollectiveModelTestCase::TreeAcrossTwoNodes()
{
    // default.yaml, 16 ranks, NCCL_ALGO=Tree, Simple, 1 GiB, 16 channels: channels 0-7 use tree 0
    // (node 1 under node 0), 8-15 tree 1 (node 0 under node 1). Channel c: the intra-node chain
    // from GPU c both ways, and GPU c of node 0 <-> GPU c of node 1 over rail c. A tree CTA splits
    // into a reduce and a broadcast half: 20.6 / 2 = 10.3 GB/s per channel (NCCL's own cap,
    // 41.4 GB/s per search channel x 8 / 16 / 2 = 10.35, is looser). Links are not the limit (NIC
    // c: 2 flows on 50 GB/s; NVLink: at most 2 uses x 16 flows on 450 GB/s). The tree's chunk stays
    // 512 KiB (2^30 / (16 x 512 KiB) = 128 chunks >= 8 x depth 8) and crosses two network stages,
    // one more chunk-time. Latency: 8.4 + 2 x (7 x 4.0 + 1 x 14) = 92.4 us.
    SimulatorGuard guard;
    Bench b("default", {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}});
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, uint64_t(kGiB))}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].algorithm, NcclAlgorithm::Tree, "");
    NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 16, "");
    const double want = 92.4 + (kGiB / 16 + 524288) / (kCta / 2) * 1e6;
    for (double e : ends[0])
    {
        NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-4), true, e << " us, want " << want);
    }
    // 64 MiB: 2.20 and later keep the 512 KiB chunk (one more chunk-time: 524,288 B); up to 2.19
    // NCCL halved it while the op had fewer than 8 x depth chunks a channel: 64 MiB / (16 x 512
    // KiB) = 8 < 64 -> 256 KiB (16) -> 128 KiB (32 < 64, but 128 KiB is the floor of that loop;
    // 32 < 4 x 8 is false), so one more chunk-time of 131,072 B. The ends past the plan's
    // latency show it. (NCCL_MAX_NCHANNELS=16: 2.19 would double the channels to 32.)
    for (uint32_t version : {22105u, 21904u})
    {
        SimulatorGuard g2;
        Bench v("default",
                {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}, {"NCCL_MAX_NCHANNELS", "16"}});
        v.model->SetAttribute("NcclVersion", UintegerValue(version));
        const CollectiveCall call = v.Call(CollectiveKind::AllReduce, 64 << 20);
        std::vector<CollectivePlan> vp;
        const double end = Run(v, {call}, &vp)[0][0];
        NS_TEST_ASSERT_MSG_EQ(vp[0].channels, 16, version);
        const double chunk = version >= 22000 ? 524288 : 131072;
        const double stream = ((64 << 20) / 16 + chunk) / (kCta / 2) * 1e6;
        const double lat = v.model->PlanLatencyUs(call, vp[0]);
        NS_TEST_EXPECT_MSG_EQ(Near(end - lat, stream, 1e-4), true,
                              version << ": " << end - lat << " us past the latency, want "
                                      << stream);
    }
    // NCCL's own choice for 1 GiB on 2 nodes is NVLSTree (its model: min(59.5, 2 x 48, 57.7) x 8
    // = 462 GB/s bus, 247 algorithm, latency 25 + 2 x 20.9).
    auto pick = Bench("default").model->Choose(b.Call(CollectiveKind::AllReduce, uint64_t(kGiB)));
    NS_TEST_EXPECT_MSG_EQ(pick.algorithm, NcclAlgorithm::NvlsTree, "");
}

void
CollectiveModelTestCase::TwoConcurrentAllreducesShareTheLinks()
{
    // Two Ring/Simple all-reduces of 1 GiB on the same 8 GPUs at once: 48 flows on every link,
    // 9.375 GB/s of wire each, so the bandwidth term doubles: T2 = A + 2 x B, against
    // T1 = A + B with B = 1.75 x S / 370.8 GB/s and A the ring's latency, its 14 NVLink hops
    // paid once per loop of 384 MiB: 8.4 + 3 x 14 x 3.4 = 151.2 us.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node", {{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", "simple"}});
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, uint64_t(kGiB), 0, 1),
                        b.Call(CollectiveKind::AllReduce, uint64_t(kGiB), 0, 2)});
    const double beta = 1.75 * kGiB / kNvlPayload * 1e6;
    const double alone = 151.2 + beta;
    const double shared = 151.2 + 2 * beta;
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], shared, 1e-4), true,
                          ends[0][0] << " us, want " << shared);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[1][0], shared, 1e-4), true, ends[1][0]);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0] / alone, shared / alone, 1e-4), true, "");
    NS_TEST_EXPECT_MSG_GT(ends[0][0] / alone, 1.97, ""); // (A + 2B) / (A + B) = 1.971
}

void
CollectiveModelTestCase::EnvironmentOverrides()
{
    Bench ring("dgx-h100-1node", {{"NCCL_ALGO", "Ring"}});
    auto big = ring.Call(CollectiveKind::AllReduce, uint64_t(kGiB));
    NS_TEST_EXPECT_MSG_EQ(ring.model->Choose(big).algorithm, NcclAlgorithm::Ring, "");

    // NCCL syntax: lists, '^' inverts, case-insensitive, per-function "func:list;func:list".
    Bench lists("dgx-h100-1node", {{"NCCL_ALGO", "tree,RING"}});
    NS_TEST_EXPECT_MSG_NE(lists.model->Choose(big).algorithm, NcclAlgorithm::Nvls, "");
    Bench perFunc("dgx-h100-1node", {{"NCCL_ALGO", "allreduce:ring;allgather:ring"}});
    NS_TEST_EXPECT_MSG_EQ(perFunc.model->Choose(big).algorithm, NcclAlgorithm::Ring, "");
    Bench perFunc2("dgx-h100-1node", {{"NCCL_ALGO", "AllGather:Ring"}});
    NS_TEST_EXPECT_MSG_EQ(perFunc2.model->Choose(big).algorithm, NcclAlgorithm::Nvls, "");
    // Models with different variables, asked in turn, each keep their own (the masks' reading is
    // kept between calls).
    for (int i = 0; i < 2; ++i)
    {
        NS_TEST_EXPECT_MSG_EQ(ring.model->Choose(big).algorithm, NcclAlgorithm::Ring, i);
        NS_TEST_EXPECT_MSG_EQ(perFunc2.model->Choose(big).algorithm, NcclAlgorithm::Nvls, i);
        ring.model->SetAttribute("NcclVersion", UintegerValue(i ? 23007 : 21805));
    }

    // NCCL_PROTO=^LL128 without NVLS: at 8 MiB LL128 would win (above); without it LL and Simple
    // cross at 15 + S/80.57 = 56 + S/205.7, S ~ 5.4 MB: 4 MiB stays LL, 8 MiB goes Simple.
    Bench noLl128("dgx-h100-1node", {{"NCCL_PROTO", "^LL128"}, {"NCCL_NVLS_ENABLE", "0"}});
    NS_TEST_EXPECT_MSG_EQ(
        noLl128.model->Choose(noLl128.Call(CollectiveKind::AllReduce, 4 << 20)).protocol,
        NcclProtocol::LL, "");
    NS_TEST_EXPECT_MSG_EQ(
        noLl128.model->Choose(noLl128.Call(CollectiveKind::AllReduce, 8 << 20)).protocol,
        NcclProtocol::Simple, "");
    Bench onlyLl("dgx-h100-1node", {{"NCCL_PROTO", "ll"}});
    NS_TEST_EXPECT_MSG_EQ(onlyLl.model->Choose(big).protocol, NcclProtocol::LL, "");
    NS_TEST_EXPECT_MSG_NE(onlyLl.model->Choose(big).algorithm, NcclAlgorithm::Nvls,
                          ""); // NVLS is Simple only

    // NCCL_MIN_NCHANNELS raises comm.nChannels (up to 64).
    Bench minCh("dgx-h100-1node", {{"NCCL_MIN_NCHANNELS", "32"}});
    NS_TEST_EXPECT_MSG_EQ(minCh.model->DescribeCommunicator(big.gpus).channels, 32, "");

    // CollNet cannot run without SHARP switches: NCCL_ALGO=CollNetDirect falls back (warning).
    Bench collnet("dgx-h100-1node", {{"NCCL_ALGO", "CollNetDirect"}});
    auto fb = collnet.model->Choose(big);
    NS_TEST_EXPECT_MSG_NE(fb.algorithm, NcclAlgorithm::CollNetDirect, "");
    NS_TEST_EXPECT_MSG_NE(fb.algorithm, NcclAlgorithm::CollNetChain, "");
}

// NCCL_ALGO / NCCL_PROTO that leave a call nothing (Tree for a Broadcast, PAT for an AllReduce,
// NVLS with LL): NCCL 2.18 and 2.24+ fail the call (enqueue.cc, "no algorithm/protocol
// available"), which the model runs as NCCL's own choice and reports on the NoAlgorithm trace;
// 2.19-2.23 run Ring instead (`ringbdw`), with any protocol up to 2.21 (NVIDIA/nccl#1304: Tree +
// Simple ran a Broadcast as Ring/LL) and NCCL_PROTO's from 2.22. 2.18 keeps Ring on for every
// function but AllReduce, whatever NCCL_ALGO says.
void
CollectiveModelTestCase::NoAlgorithmIsWhatTheReleaseDoes()
{
    auto bench = [](uint32_t version, const std::map<std::string, std::string>& env)
    {
        auto b = std::make_unique<Bench>("dgx-h100-1node", env);
        b->model->SetAttribute("NcclVersion", UintegerValue(version));
        return b;
    };
    std::vector<std::pair<CollectiveKind, std::string>> said;
    auto listen = [&](Bench& b)
    {
        b.model->TraceConnectWithoutContext("NoAlgorithm",
                                            Callback<void, CollectiveKind, const std::string&>(
                                                [&](CollectiveKind kind, const std::string& message)
                                                { said.emplace_back(kind, message); }));
    };
    auto has = [](const std::string& text, const std::string& part)
    { return text.find(part) != std::string::npos; };

    // 2.30.7, PAT for an AllReduce (PAT gathers and scatters only): NCCL's own choice runs, and the
    // trace names the variable, the function and NCCL's ncclInvalidUsage.
    auto pat = bench(23007, {{"NCCL_ALGO", "PAT"}});
    auto plain = bench(23007, {});
    listen(*pat);
    const CollectiveCall ar = pat->Call(CollectiveKind::AllReduce, uint64_t(kGiB));
    const CollectivePlan p = pat->model->Choose(ar);
    const CollectivePlan d = plain->model->Choose(ar);
    NS_TEST_EXPECT_MSG_EQ(int(p.envOutcome), int(NcclEnvOutcome::Unavailable), "");
    NS_TEST_EXPECT_MSG_EQ(int(d.envOutcome), int(NcclEnvOutcome::Applied), "");
    NS_TEST_EXPECT_MSG_EQ(int(p.algorithm), int(d.algorithm), "");
    NS_TEST_EXPECT_MSG_EQ(int(p.protocol), int(d.protocol), "");
    NS_TEST_EXPECT_MSG_EQ(p.channels, d.channels, "");
    NS_TEST_ASSERT_MSG_EQ(said.size(), 1u, "one trace per such call");
    NS_TEST_EXPECT_MSG_EQ(int(said[0].first), int(CollectiveKind::AllReduce), "");
    NS_TEST_EXPECT_MSG_EQ(has(said[0].second, "NCCL_ALGO='PAT'"), true, said[0].second);
    NS_TEST_EXPECT_MSG_EQ(
        has(said[0].second, "No algorithm/protocol available for function AllReduce"), true,
        said[0].second);
    NS_TEST_EXPECT_MSG_EQ(has(said[0].second, "ncclInvalidUsage"), true, said[0].second);
    pat->model->Choose(ar);
    NS_TEST_EXPECT_MSG_EQ(said.size(), 2u, "");

    // NVLS is Simple only: with NCCL_PROTO=LL an AllReduce has nothing either.
    said.clear();
    auto nvlsLl = bench(23007, {{"NCCL_ALGO", "NVLS"}, {"NCCL_PROTO", "LL"}});
    listen(*nvlsLl);
    NS_TEST_EXPECT_MSG_EQ(int(nvlsLl->model->Choose(ar).envOutcome),
                          int(NcclEnvOutcome::Unavailable), "");
    NS_TEST_EXPECT_MSG_EQ(said.size(), 1u, "");

    // Tree for a Broadcast (Ring only): 2.24.3 fails it, and an AllReduce of the same settings
    // runs Tree. 2.18.5 runs the Broadcast on Ring (its enable rule never turns Ring off for a
    // Broadcast), untraced; with no protocol left (NCCL_PROTO=^LL,LL128,Simple) an AllReduce
    // fails there, without naming the function (ncclInternalError).
    const CollectiveCall bc = plain->Call(CollectiveKind::Broadcast, 64 << 10);
    {
        said.clear();
        auto tree = bench(21805u, {{"NCCL_ALGO", "Tree"}});
        listen(*tree);
        const CollectivePlan b = tree->model->Choose(bc);
        NS_TEST_EXPECT_MSG_EQ(int(b.envOutcome), int(NcclEnvOutcome::Applied), "");
        NS_TEST_EXPECT_MSG_EQ(int(b.algorithm), int(NcclAlgorithm::Ring), "");
        NS_TEST_EXPECT_MSG_EQ(said.size(), 0u, "");
        auto none = bench(21805u, {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "^LL,LL128,Simple"}});
        listen(*none);
        NS_TEST_EXPECT_MSG_EQ(int(none->model->Choose(ar).envOutcome),
                              int(NcclEnvOutcome::Unavailable), "");
        NS_TEST_ASSERT_MSG_EQ(said.size(), 1u, "");
        NS_TEST_EXPECT_MSG_EQ(has(said[0].second, "\"Error : no algorithm/protocol available\""),
                              true, said[0].second);
        NS_TEST_EXPECT_MSG_EQ(has(said[0].second, "ncclInternalError"), true, said[0].second);
    }
    for (uint32_t v : {22403u})
    {
        said.clear();
        auto tree = bench(v, {{"NCCL_ALGO", "Tree"}});
        listen(*tree);
        NS_TEST_EXPECT_MSG_EQ(int(tree->model->Choose(bc).envOutcome),
                              int(NcclEnvOutcome::Unavailable), v);
        NS_TEST_ASSERT_MSG_EQ(said.size(), 1u, v);
        NS_TEST_EXPECT_MSG_EQ(int(said[0].first), int(CollectiveKind::Broadcast), v);
        NS_TEST_EXPECT_MSG_EQ(has(said[0].second, v == 22403u
                                                      ? "Error : no algorithm/protocol available "
                                                        "for function Broadcast"
                                                      : "Error : no algorithm/protocol available"),
                              true, said[0].second);
        NS_TEST_EXPECT_MSG_EQ(
            has(said[0].second, v == 22403u ? "ncclInvalidUsage" : "ncclInternalError"), true,
            said[0].second);
        const CollectivePlan t = tree->model->Choose(ar);
        NS_TEST_EXPECT_MSG_EQ(int(t.envOutcome), int(NcclEnvOutcome::Applied), v);
        NS_TEST_EXPECT_MSG_EQ(int(t.algorithm), int(NcclAlgorithm::Tree), v);
    }

    // 2.21.5 and 2.22.3: NCCL_ALGO=Tree NCCL_PROTO=Simple, a 64 KiB Broadcast runs Ring, untraced.
    // 2.21 takes any protocol: the one a Ring-only choice takes, LL at this size (a 64 KiB chain
    // is latency: LL's 0.6 us hops against Simple's 2+ us); 2.22 keeps Simple.
    for (uint32_t v : {22105u, 22203u})
    {
        said.clear();
        auto treeSimple = bench(v, {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}});
        listen(*treeSimple);
        const CollectivePlan b = treeSimple->model->Choose(bc);
        NS_TEST_EXPECT_MSG_EQ(int(b.envOutcome), int(NcclEnvOutcome::RingBackup), v);
        NS_TEST_EXPECT_MSG_EQ(int(b.algorithm), int(NcclAlgorithm::Ring), v);
        NS_TEST_EXPECT_MSG_EQ(said.size(), 0u, v);
        const CollectivePlan ring = bench(v, {{"NCCL_ALGO", "Ring"}})->model->Choose(bc);
        NS_TEST_EXPECT_MSG_EQ(int(ring.protocol), int(NcclProtocol::LL), v);
        NS_TEST_EXPECT_MSG_EQ(int(b.protocol),
                              int(v < 22200u ? NcclProtocol::LL : NcclProtocol::Simple), v);
    }

    // 2.18-2.23's CollNet rule (tuning.cc: "If user has hard set NCCL_ALGO=COLLNET, ignore it"):
    // on 2 nodes without SHARP, NCCL_ALGO=NVLS leaves nothing once NVLS is off across nodes, so
    // Ring and Tree come back and NCCL chooses between them: the plan of NCCL_ALGO=Ring,Tree,
    // untraced. 2.18 does not know PAT, so NCCL_ALGO=PAT is a list of nothing, with the same end.
    // 2.24.3 has no such rule: the call fails. On one node NVLS stays on, so the rule does not
    // fire and a Broadcast takes 2.21's Ring backup instead.
    auto across = [](uint32_t version, const std::map<std::string, std::string>& env)
    {
        auto b = std::make_unique<Bench>("default", env);
        b->model->SetAttribute("NcclVersion", UintegerValue(version));
        return b;
    };
    for (auto [v, algo] : std::vector<std::pair<uint32_t, std::string>>{
             {22105u, "NVLS"}, {21805u, "PAT"}, {21805u, "CollNetChain"}})
    {
        said.clear();
        auto forced = across(v, {{"NCCL_ALGO", algo}});
        listen(*forced);
        for (uint64_t bytes : {uint64_t(64 << 10), uint64_t(kGiB)})
        {
            const CollectiveCall call = forced->Call(CollectiveKind::AllReduce, bytes);
            const CollectivePlan got = forced->model->Choose(call);
            const CollectivePlan want =
                across(v, {{"NCCL_ALGO", "Ring,Tree"}})->model->Choose(call);
            NS_TEST_EXPECT_MSG_EQ(int(got.envOutcome), int(NcclEnvOutcome::Applied), algo);
            NS_TEST_EXPECT_MSG_EQ(int(got.algorithm), int(want.algorithm), algo << " " << bytes);
            NS_TEST_EXPECT_MSG_EQ(int(got.protocol), int(want.protocol), algo << " " << bytes);
        }
        NS_TEST_EXPECT_MSG_EQ(said.size(), 0u, algo);
    }
    // NVLSTree stays on across nodes (no rule: NVLSTree runs), and is off on one node, where
    // the rule fires (Ring or Tree).
    auto nvlsTree = across(22105u, {{"NCCL_ALGO", "NVLSTree"}});
    NS_TEST_EXPECT_MSG_EQ(
        int(nvlsTree->model->Choose(nvlsTree->Call(CollectiveKind::AllReduce, 1 << 20)).algorithm),
        int(NcclAlgorithm::NvlsTree), "");
    const CollectivePlan oneNode =
        bench(22105u, {{"NCCL_ALGO", "NVLSTree"}})
            ->model->Choose(plain->Call(CollectiveKind::AllReduce, 1 << 20));
    NS_TEST_EXPECT_MSG_EQ(int(oneNode.envOutcome), int(NcclEnvOutcome::Applied), "");
    const bool ringOrTree =
        oneNode.algorithm == NcclAlgorithm::Ring || oneNode.algorithm == NcclAlgorithm::Tree;
    NS_TEST_EXPECT_MSG_EQ(ringOrTree, true, "");
    said.clear();
    auto nvls224 = across(22403u, {{"NCCL_ALGO", "NVLS"}});
    listen(*nvls224);
    NS_TEST_EXPECT_MSG_EQ(
        int(nvls224->model->Choose(nvls224->Call(CollectiveKind::AllReduce, 1 << 20)).envOutcome),
        int(NcclEnvOutcome::Unavailable), "");
    NS_TEST_EXPECT_MSG_EQ(said.size(), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(int(bench(22105u, {{"NCCL_ALGO", "NVLS"}})->model->Choose(bc).envOutcome),
                          int(NcclEnvOutcome::RingBackup), "");

    // NCCL_ALGO set but empty (a launch script's NCCL_ALGO=$UNSET): 2.21 reads a list of
    // nothing, every algorithm off, and on one node without CollNet the rule turns Ring and Tree
    // back on, so a 1 GiB AllReduce leaves NVLS; 2.24 reads "" as no change (NVLS, as unset).
    for (uint32_t v : {22105u, 22403u})
    {
        auto empty = bench(v, {{"NCCL_ALGO", ""}});
        const CollectivePlan e = empty->model->Choose(ar);
        const CollectivePlan unset = bench(v, {})->model->Choose(ar);
        NS_TEST_EXPECT_MSG_EQ(int(unset.algorithm), int(NcclAlgorithm::Nvls), v);
        NS_TEST_EXPECT_MSG_EQ(int(e.envOutcome), int(NcclEnvOutcome::Applied), v);
        const bool ringOrTreeNow =
            e.algorithm == NcclAlgorithm::Ring || e.algorithm == NcclAlgorithm::Tree;
        const bool before224 = v < 22400u;
        NS_TEST_EXPECT_MSG_EQ(ringOrTreeNow, before224, v);
    }
    NS_TEST_EXPECT_MSG_EQ(NcclConfig::FromEnvironment({{"NCCL_ALGO", ""}}).algoSet, true, "");
    NS_TEST_EXPECT_MSG_NE(NcclConfig::FromEnvironment({{"NCCL_ALGO", ""}})
                              .ReadingWarning(22105)
                              .find("NCCL_ALGO='' enables nothing NCCL 2.21.5 knows"),
                          std::string::npos, "");
}

// A variable that changes NCCL's behaviour and that the model does not read is named, never
// ignored in silence; the ones it reads, and NCCL's logging, are not.
void
CollectiveModelTestCase::UnreadVariablesAreNamed()
{
    NS_TEST_EXPECT_MSG_EQ(NcclConfig::UnreadVariablesWarning({}), "", "");
    NS_TEST_EXPECT_MSG_EQ(NcclConfig::UnreadVariablesWarning({{"NCCL_ALGO", "Ring"},
                                                              {"NCCL_DEBUG", "INFO"},
                                                              {"NCCL_P2P_DISABLE", "1"},
                                                              {"NCCL_SHM_DISABLE", "1"}}),
                          "", "");
    std::string one = NcclConfig::UnreadVariablesWarning({{"NCCL_CROSS_NIC", "1"}});
    NS_TEST_EXPECT_MSG_NE(one.find("NCCL_CROSS_NIC=1 is set but not modelled"), std::string::npos,
                          one);
    std::string two = NcclConfig::UnreadVariablesWarning(
        {{"NCCL_NET_GDR_LEVEL", "PIX"}, {"NCCL_BUFFSIZE", "8388608"}, {"NCCL_DEBUG", "WARN"}});
    NS_TEST_EXPECT_MSG_NE(two.find("NCCL_NET_GDR_LEVEL=PIX"), std::string::npos, two);
    NS_TEST_EXPECT_MSG_NE(two.find("NCCL_BUFFSIZE=8388608"), std::string::npos, two);
    NS_TEST_EXPECT_MSG_EQ(two.find("NCCL_DEBUG"), std::string::npos, two);
    NS_TEST_EXPECT_MSG_NE(two.find("are set but not modelled"), std::string::npos, two);
}

void
CollectiveModelTestCase::InvalidEnvironmentNamesTheVariable()
{
    auto message = [](const std::map<std::string, std::string>& env) -> std::string
    {
        try
        {
            NcclConfig::FromEnvironment(env);
        }
        catch (const std::invalid_argument& e)
        {
            return e.what();
        }
        return "";
    };
    // NCCL_ALGO / NCCL_PROTO are NCCL's to read, release by release: never refused here, and
    // what NCCL would do with them is said (2.24+ fail the communicator's creation; 2.18-2.23
    // skip the names they do not know).
    NS_TEST_EXPECT_MSG_EQ(message({{"NCCL_ALGO", "ring,bogus"}}), "", "");
    NcclConfig read = NcclConfig::FromEnvironment({{"NCCL_ALGO", "ring,bogus"}});
    std::string said = read.ReadingWarning(22403);
    NS_TEST_EXPECT_MSG_NE(said.find("Unrecognized element token \"bogus\""), std::string::npos,
                          said);
    NS_TEST_EXPECT_MSG_NE(said.find("ncclInvalidUsage"), std::string::npos, said);
    said = read.ReadingWarning(22105);
    NS_TEST_EXPECT_MSG_NE(said.find("NCCL_ALGO: 'bogus'"), std::string::npos, said);
    NS_TEST_EXPECT_MSG_EQ(read.ReadingWarning(22105).find("ncclInvalidUsage"), std::string::npos,
                          "");
    NS_TEST_EXPECT_MSG_EQ(
        NcclConfig::FromEnvironment({{"NCCL_ALGO", "allreduce:tree"}}).ReadingWarning(22403), "",
        "");
    // NCCL_MAX_NCHANNELS / NCCL_MIN_NCHANNELS: NCCL reads any number and clamps it where it makes
    // the communicator (connect.cc, ncclMaxNchannels / ncclMinNchannels), warning about a maximum
    // below 1 and a minimum above MAXCHANNELS; a value that is not a number keeps its default
    // (its parameter reader). Never refused, always said.
    NS_TEST_EXPECT_MSG_EQ(message({{"NCCL_MAX_NCHANNELS", "abc"}}), "", "");
    NS_TEST_EXPECT_MSG_EQ(message({{"NCCL_MAX_NCHANNELS", "0"}}), "", "");
    NS_TEST_EXPECT_MSG_EQ(message({{"NCCL_MIN_NCHANNELS", "-3"}}), "", "");
    NcclConfig channels = NcclConfig::FromEnvironment({{"NCCL_MAX_NCHANNELS", "abc"}});
    NS_TEST_EXPECT_MSG_EQ(channels.maxChannels, NcclConfig::kChannelsUnset, "");
    NS_TEST_EXPECT_MSG_EQ(channels.ChannelWarning(22403),
                          "NCCL_MAX_NCHANNELS='abc' is not a number: NCCL ignores it and keeps its "
                          "default",
                          "");
    channels = NcclConfig::FromEnvironment({{"NCCL_MAX_NCHANNELS", "0"}});
    NS_TEST_EXPECT_MSG_EQ(channels.ChannelWarning(22403),
                          "NCCL_MAX_NCHANNELS=0: NCCL warns \"User asked for a maximum of 0 "
                          "channels, setting it to 1\" and runs one channel",
                          "");
    NS_TEST_EXPECT_MSG_EQ(nccl::MaxChannelsAsked(channels, 22403), 1, "");
    // Above MAXCHANNELS (32 up to 2.24, 64 from 2.25): the maximum silently, the minimum with
    // NCCL's warning.
    channels =
        NcclConfig::FromEnvironment({{"NCCL_MAX_NCHANNELS", "128"}, {"NCCL_MIN_NCHANNELS", "40"}});
    NS_TEST_EXPECT_MSG_EQ(nccl::MaxChannelsAsked(channels, 22403), 32, "");
    NS_TEST_EXPECT_MSG_EQ(nccl::MaxChannelsAsked(channels, 22703), 64, "");
    NS_TEST_EXPECT_MSG_EQ(nccl::MinChannelsAsked(channels, 22403), 32, "");
    NS_TEST_EXPECT_MSG_EQ(nccl::MinChannelsAsked(channels, 22703), 40, "");
    NS_TEST_EXPECT_MSG_EQ(channels.ChannelWarning(22403),
                          "NCCL_MIN_NCHANNELS=40: NCCL warns \"User asked for a minimum of 40 "
                          "channels, limiting to 32\" (its MAXCHANNELS)",
                          "");
    NS_TEST_EXPECT_MSG_EQ(channels.ChannelWarning(22703), "", "");
    channels = NcclConfig::FromEnvironment({{"NCCL_MIN_NCHANNELS", "-3"}});
    NS_TEST_EXPECT_MSG_EQ(nccl::MinChannelsAsked(channels, 22403), 0, "");
    NS_TEST_EXPECT_MSG_EQ(nccl::MaxChannelsAsked(NcclConfig(), 22403), 32, "");
    NS_TEST_EXPECT_MSG_NE(message({{"NCCL_NVLS_ENABLE", "7"}}).find("NCCL_NVLS_ENABLE"),
                          std::string::npos, "");
    NS_TEST_EXPECT_MSG_EQ(message({{"NCCL_ALGO", "Tree,Ring"}, {"NCCL_PROTO", "^LL128"}}), "", "");
    // A hand-built config is checked by SetConfig.
    Ptr<CollectiveModel> m = CreateObject<CollectiveModel>();
    NcclConfig bad;
    bad.nvlsEnable = 7;
    EIDOLON_TEST_EXPECT_THROW(m->SetConfig(bad), std::invalid_argument);
}

void
CollectiveModelTestCase::SendrecvRanksEndWhenTheirOwnTransfersDo()
{
    // A chain on one node: rank 0 sends 1 GB to rank 1, rank 1 sends 0.25 GB to rank 2. Each
    // transfer is alone on its links. p2p channels: perPeer 2 x 18 -> 64 -> clamped to 32 p2p
    // channels; nChannelsMin 32 -> 8 (8 x 3 ranks <= 32). 1 GB: parts above 32 x 512 KiB double
    // 8 -> 16 -> 32 channels, 32 x 20.6 GB/s > 370.8: NVLink-bound. 0.25 GB: 8 -> 16 channels
    // (15.6 MB parts), 16 x 20.6 = 329.6 GB/s: CTA-bound. Latency 8.4 + 3.4 = 11.8 us (Simple).
    // Rank 1's send and recv are one work (round of delta 1: send to 2, recv from 0), alone on
    // its channels, so every channel keeps its whole CTA. Each channel's part ends one 512 KiB
    // step after its last step lands (the receiver copies out of its FIFO): 32 (16) more chunks.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node");
    CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0, 3);
    call.transfers = {{0, 1, 1000000000}, {1, 2, 250000000}};
    auto ends = Run(b, {call});
    const double big = 11.8 + (1e9 + 32 * 524288.0) / kNvlPayload * 1e6;
    const double small = 11.8 + (0.25e9 + 16 * 524288.0) / (16 * kCta) * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], big, 1e-4), true, ends[0][0] << " vs " << big);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][1], big, 1e-4), true, ends[0][1]);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][2], small, 1e-4), true, ends[0][2] << " vs " << small);
    NS_TEST_EXPECT_MSG_LT(ends[0][2], ends[0][0] / 3, "");
}

void
CollectiveModelTestCase::NvlsCtasAndChunksAreTheReleases()
{
    // calcCollChunking (enqueue.cc), each test on the chunk the one before left.
    // NVLSTree, 16 channels x 2 heads = 32 concurrent ops:
    // - from 128 KiB: 3 MiB < 4 x 32 x 128 KiB = 16 MiB -> 64 KiB; 3 MiB < 32 x 64 KiB = 2 MiB
    //   is false: 64 KiB (a test on the first chunk, 3 MiB < 32 x 128 KiB, would give 32 KiB).
    //   1 MiB: 64 KiB, then 1 MiB < 2 MiB -> 32 KiB.
    // - from 64 KiB (4 nodes and more): only the last test, 32 x 64 KiB = 2 MiB.
    // - from 512 KiB (the Simple step, up to 2.20): 256 MiB < 32 x 32 x 512 KiB = 512 MiB ->
    //   256 KiB, then 256 MiB < 16 x 32 x 256 KiB = 128 MiB is false: 256 KiB; 64 MiB -> 256 KiB
    //   -> 128 KiB (64 < 128 MiB), 64 MiB < 4 x 32 x 128 KiB = 16 MiB false; 1 GiB keeps 512 KiB.
    // - from 1 MiB (NCCL_NVLS_CHUNKSIZE=1048576): 16 MiB < 1 GiB -> 256 KiB, < 128 MiB -> 128
    //   KiB, 16 MiB < 16 MiB false: 128 KiB.
    using nccl::NvlsTreeChunk;
    const uint64_t MiB = 1 << 20;
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(3 * MiB, 16, 2, 131072), 65536, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(1 * MiB, 16, 2, 131072), 32768, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(3 * MiB, 16, 2, 65536), 65536, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(1 * MiB, 16, 2, 65536), 32768, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(256 * MiB, 16, 2, 524288), 262144, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(64 * MiB, 16, 2, 524288), 131072, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(1024 * MiB, 16, 2, 524288), 524288, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsTreeChunk(16 * MiB, 16, 2, 1048576), 131072, "");
    // NVLS, 16 channels x 4 heads = 64 ops, from 128 KiB: 256 MiB < 64 x 64 x 128 KiB = 512 MiB
    // -> 64 KiB, 256 MiB < 8 x 64 x 64 KiB = 32 MiB false: 64 KiB; 16 MiB -> 64 KiB -> 32 KiB,
    // 16 MiB < 2 x 64 x 32 KiB = 4 MiB false; 2 MiB -> 16 KiB. From 512 KiB, 1 GiB < 2 GiB -> 64
    // KiB.
    using nccl::NvlsChunk;
    NS_TEST_EXPECT_MSG_EQ(NvlsChunk(256 * MiB, 16, 4, 131072), 65536, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsChunk(16 * MiB, 16, 4, 131072), 32768, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsChunk(2 * MiB, 16, 4, 131072), 16384, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsChunk(1024 * MiB, 16, 4, 524288), 65536, "");
    NS_TEST_EXPECT_MSG_EQ(NvlsChunk(4096 * MiB, 16, 4, 524288), 524288, "");

    // Where each release starts (nvls.cc, enqueue.cc), 2 and 4 DGX H100 nodes: 2.18 the Simple
    // step, 512 KiB; 2.19 the same, 64 KiB from 4 nodes; 2.20 NCCL_NVLSTREE_MAX_CHUNKSIZE may cap
    // it instead; from 2.21 NCCL_NVLS_CHUNKSIZE (128 KiB), 64 KiB from 4 nodes. NVLS: 128 KiB,
    // NCCL_NVLS_CHUNKSIZE from 2.21 (at most the 512 KiB step).
    struct Case
    {
        const char* topology;
        uint32_t version;
        std::map<std::string, std::string> env;
        uint64_t tree, nvls;
    };
    const Case cases[] = {
        {"default", 21805, {}, 524288, 131072},
        {"dgx-h100-4node", 21805, {}, 524288, 131072},
        {"default", 21904, {}, 524288, 131072},
        {"dgx-h100-4node", 21904, {}, 65536, 131072},
        {"dgx-h100-4node", 21904, {{"NCCL_NVLSTREE_MAX_CHUNKSIZE", "262144"}}, 65536, 131072},
        {"default", 22005, {{"NCCL_NVLSTREE_MAX_CHUNKSIZE", "262144"}}, 262144, 131072},
        {"dgx-h100-4node", 22005, {{"NCCL_NVLSTREE_MAX_CHUNKSIZE", "262144"}}, 262144, 131072},
        {"default", 22005, {{"NCCL_NVLS_CHUNKSIZE", "65536"}}, 524288, 131072},
        {"default", 22105, {}, 131072, 131072},
        {"dgx-h100-4node", 22403, {}, 65536, 131072},
        {"dgx-h100-4node", 22403, {{"NCCL_NVLSTREE_MAX_CHUNKSIZE", "262144"}}, 131072, 131072},
        {"default",
         22403,
         {{"NCCL_NVLS_CHUNKSIZE", "1048576"}, {"NCCL_NVLSTREE_MAX_CHUNKSIZE", "262144"}},
         262144,
         524288},
        {"default", 22403, {{"NCCL_NVLS_CHUNKSIZE", "65536"}}, 65536, 65536},
        {"default", 23007, {}, 131072, 131072},
        {"dgx-h100-4node", 23007, {}, 65536, 131072},
    };
    for (const Case& k : cases)
    {
        Bench b(k.topology, k.env);
        b.model->SetAttribute("NcclVersion", UintegerValue(k.version));
        const NcclCommInfo c =
            b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
        NS_TEST_EXPECT_MSG_EQ(c.nvlsTreeChunkBytes, k.tree, k.topology << " " << k.version);
        NS_TEST_EXPECT_MSG_EQ(c.nvlsChunkBytes, k.nvls, k.topology << " " << k.version);
        NS_TEST_EXPECT_MSG_EQ(c.nvlsChannels, 16, k.topology << " " << k.version);
    }

    // B200 (sm100), 400 Gb/s NICs (50 GB/s, between NCCL's 48 and 96), each behind the PCIe
    // switch of its GPU (PIX): NVLS CTAs 16 up to 2.24; 32 from 2.25; from 2.27 24 on one node;
    // 2.30 on 2 nodes of 8 GPUs at >= 48 GB/s: 32 CTAs, NVLSTree cap 128 KiB, 64 KiB for 8 GPUs a
    // node behind PIX NICs under 96 GB/s; on 4 nodes at 48-96 GB/s 24 CTAs, cap 64 KiB (PIX).
    for (uint32_t nodes : {1u, 2u, 4u})
    {
        const std::string topo =
            "/tmp/eidolon-collective-test-b200-" + std::to_string(nodes) + "node.yaml";
        std::ofstream(topo) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                            << "name: b200\ngenerate:\n  nodes: " << nodes
                            << "\n  node: {type: dgx-b200}\n";
        struct Release
        {
            uint32_t version;
            int ctas;
            uint64_t tree;
        };
        const uint64_t fallback = nodes >= 4 ? 65536 : 131072;
        const Release releases[] = {
            {22403, 16, fallback},
            {22501, 32, fallback},
            {22707, nodes == 1 ? 24 : 32, fallback},
            {23007,
             nodes == 1   ? 24
             : nodes == 2 ? 32
                          : 24,
             nodes == 1 ? 131072u : 65536u},
        };
        for (const Release& r : releases)
        {
            Bench b(topo);
            b.model->SetAttribute("NcclVersion", UintegerValue(r.version));
            const NcclCommInfo c =
                b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
            NS_TEST_EXPECT_MSG_EQ(c.nvls, true, nodes);
            NS_TEST_EXPECT_MSG_EQ(c.nvlsChannels, r.ctas, nodes << " nodes, " << r.version);
            NS_TEST_EXPECT_MSG_EQ(c.nvlsTreeChunkBytes, r.tree, nodes << " nodes, " << r.version);
        }
    }

    // 2.18 gives ARM hosts a 1 MiB Simple buffer (init.cc DEFAULT_BUFFSIZE_ARM): 128 KiB steps,
    // so NVLSTree starts from 128 KiB there, and a Ring/Simple AllReduce across 2 x 8 H100 loops
    // over channels x ranks x 4 steps of 128 KiB instead of 2 MiB. With 32 channels (2.18
    // doubles 16 across nodes) and 16 ranks, 1 GiB is one loop of 2 MiB chunks and 2 GiB two,
    // against four and eight of 512 KiB: the plan's latency is base + loops x K, so on ARM 1 GiB
    // costs 3 K more than on Intel, K being what the second loop adds on Intel.
    {
        auto plan = [this](const char* cpu, uint32_t version, uint64_t bytes, NcclCommInfo* info)
        {
            Bench b("default", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
            b.model->SetAttribute("NcclVersion", UintegerValue(version));
            b.model->SetAttribute("CpuVendor", StringValue(cpu));
            const CollectiveCall call = b.Call(CollectiveKind::AllReduce, bytes);
            *info = b.model->DescribeCommunicator(call.gpus);
            const CollectivePlan p = b.model->Choose(call);
            NS_TEST_EXPECT_MSG_EQ(p.channels, 32, cpu);
            return b.model->PlanLatencyUs(call, p);
        };
        NcclCommInfo arm, intel, arm219;
        const double l1 = plan("intel", 21805, 1ull << 30, &intel);
        const double l2 = plan("intel", 21805, 2ull << 30, &intel);
        const double a1 = plan("arm", 21805, 1ull << 30, &arm);
        plan("arm", 21904, 1ull << 30, &arm219);
        NS_TEST_EXPECT_MSG_EQ(arm.simpleStepBytes, 131072u, "");
        NS_TEST_EXPECT_MSG_EQ(intel.simpleStepBytes, 524288u, "");
        NS_TEST_EXPECT_MSG_EQ(arm219.simpleStepBytes, 524288u, "");
        NS_TEST_EXPECT_MSG_EQ(arm.nvlsTreeChunkBytes, 131072u, "");
        NS_TEST_EXPECT_MSG_EQ(intel.nvlsTreeChunkBytes, 524288u, "");
        NS_TEST_EXPECT_MSG_GT(l2 - l1, 0, "");
        NS_TEST_EXPECT_MSG_EQ(Near(a1 - l1, 3 * (l2 - l1)), true, a1 << " " << l1 << " " << l2);
    }

    // LL128's default by architecture (tuning.cc): 2.25-2.26 list sm70/80/90/100/120, so an sm103
    // part (a B200 spec renamed, compute capability 10.3) has no LL128 there; 2.27 takes any
    // sm70+.
    {
        namespace fs = std::filesystem;
        const fs::path dir = "/tmp/eidolon-collective-test-sm103";
        fs::create_directories(dir / "gpus");
        std::ifstream in(ShippedTopologies() + "/gpus/B200.yaml");
        std::ofstream out(dir / "gpus" / "B300-test.yaml");
        for (std::string line; std::getline(in, line);)
        {
            if (line.rfind("name:", 0) == 0)
            {
                line = "name: B300-test";
            }
            else if (line.rfind("compute_capability:", 0) == 0)
            {
                line = "compute_capability: \"10.3\"";
            }
            out << line << "\n";
        }
        out.close();
        const std::string topo = (dir / "one-node.yaml").string();
        std::ofstream(topo) << "version: 1\ngpu_specs: " << (dir / "gpus").string() << "\n"
                            << "name: sm103\ngenerate:\n  nodes: 1\n"
                            << "  node: {type: dgx-b200, gpu_model: B300-test}\n";
        for (auto [version, on] : {std::pair{22501u, false}, std::pair{22707u, true}})
        {
            Bench b(topo);
            b.model->SetAttribute("NcclVersion", UintegerValue(version));
            const NcclCommInfo c =
                b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
            NS_TEST_EXPECT_MSG_EQ(c.minCompCap, 103, "");
            NS_TEST_EXPECT_MSG_EQ(c.ring.ll128, on, version);
        }
    }

    // NVLS needs more than 2 GPUs on a node up to 2.28.3 (nvls.cc: gpuCount <= 2 turns it off),
    // 2 from 2.28.7.
    for (auto [version, ranks, on] :
         {std::tuple{22403u, 2u, false}, std::tuple{22803u, 2u, false},
          std::tuple{22809u, 2u, true}, std::tuple{23007u, 2u, true}, std::tuple{22403u, 3u, true}})
    {
        Bench b("dgx-h100-1node");
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        NS_TEST_EXPECT_MSG_EQ(
            b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1, ranks).gpus).nvls,
            on, version << ", " << ranks << " GPUs");
    }

    // The variables are checked as the others are.
    EIDOLON_TEST_EXPECT_THROW(NcclConfig::FromEnvironment({{"NCCL_NVLS_CHUNKSIZE", "0"}}),
                              std::invalid_argument);
    EIDOLON_TEST_EXPECT_THROW(NcclConfig::FromEnvironment({{"NCCL_NVLSTREE_MAX_CHUNKSIZE", "64k"}}),
                              std::invalid_argument);
}

void
CollectiveModelTestCase::P2pOpsSplitAsTheReleaseDoes()
{
    // Channels of one send (scheduleP2pTasksToPlan), worked from each release's code.
    // 4 x 8 H100 (32 ranks; p2p chunk 128 KiB across nodes; 2 channels per peer; p2p pool 32 up
    // to 2.19, 16 from 2.20, where NVLS raises it):
    // - up to 2.19 a multi-node comm keeps nChannelsMin = 2, and calcP2pChunkSize cuts parts of
    //   at least 128 KiB / 8 = 16 KiB: 32 KiB -> 2 parts of 16 KiB, 2 channels; 16 KiB -> 1.
    // - from 2.20 nChannelsMin halves while 2 x 32 > 16: 1; parts of at least 64 KiB: 32 KiB ->
    //   1 channel. 1 MiB: part 1 MiB > 128 KiB -> 2 channels, 512 KiB each, on every release.
    // One DGX H100 (8 ranks; p2p chunk 512 KiB; 32 a peer; pool 32): nChannelsMin 32 -> 4 (4 x 8
    // <= 32); parts of at least 64 KiB, at most 16 MiB.
    // - 320 KiB: up to 2.21 a part of max(64, 320 / 4 = 80) KiB rounded up to 64 KiB = 128 KiB:
    //   3 parts, 3 channels; from 2.22 min(4, 320 / 64 = 5) = 4 channels.
    // - 1 GiB: up to 2.19 nChannelsMax also halves while 32 x 8 > 4 x 32: 16; parts 256 -> 128 ->
    //   64 MiB on 4, 8, 16 channels, and 16 is the most: 16 channels. From 2.20 nChannelsMax 32:
    //   32 channels of 32 MiB.
    struct Case
    {
        const char* topology;
        uint32_t version;
        uint64_t bytes;
        int channels;
    };
    const uint64_t KiB = 1024;
    const uint64_t GiB = KiB * KiB * KiB;
    const Case cases[] = {
        {"dgx-h100-4node", 21805, 32 * KiB, 2},   {"dgx-h100-4node", 21904, 32 * KiB, 2},
        {"dgx-h100-4node", 21904, 16 * KiB, 1},   {"dgx-h100-4node", 22105, 32 * KiB, 1},
        {"dgx-h100-4node", 22403, 32 * KiB, 1},   {"dgx-h100-4node", 21904, 1024 * KiB, 2},
        {"dgx-h100-4node", 22105, 1024 * KiB, 2}, {"dgx-h100-4node", 22403, 1024 * KiB, 2},
        {"dgx-h100-1node", 21904, 320 * KiB, 3},  {"dgx-h100-1node", 22105, 320 * KiB, 3},
        {"dgx-h100-1node", 22203, 320 * KiB, 4},  {"dgx-h100-1node", 23007, 320 * KiB, 4},
        {"dgx-h100-1node", 21805, GiB, 16},       {"dgx-h100-1node", 21904, GiB, 16},
        {"dgx-h100-1node", 22105, GiB, 32},       {"dgx-h100-1node", 23007, GiB, 32},
    };
    for (const Case& k : cases)
    {
        Bench b(k.topology);
        b.model->SetAttribute("NcclVersion", UintegerValue(k.version));
        CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0);
        call.transfers = {{0, 1, k.bytes}};
        NS_TEST_EXPECT_MSG_EQ(b.model->Choose(call).channels, k.channels,
                              k.topology << " " << k.version << " " << k.bytes << " B");
    }
}

void
CollectiveModelTestCase::SendrecvLlThresholdIsTheReleases()
{
    // 256 KiB from rank 0 to rank 1 of two on one DGX H100: p2p channels per peer 2 x 18 -> 64
    // -> 32 (the p2p channels), nChannelsMin 32 -> 16 (16 x 2 ranks <= 32), parts of at least
    // 512 KiB / 8: 4 channels. LL below NCCL_P2P_LL_THRESHOLD (16 KiB) a channel: 4 x 16 KiB =
    // 64 KiB on 2.21 and 2.30 (the op's channels): Simple, 8.4 + 3.4 us and one more 64 KiB
    // step a channel at 4 x 20.6 GB/s; 32 x 16 KiB = 512 KiB on 2.24 (the peer's channels): LL,
    // 6.6 + 0.6 us, at half the CTA rate.
    // Up to 2.21 a lone send runs on 9 warps (finishWorkP2p: its slot pairs with an empty recv
    // slot, 2 groups of 8 warps, a send one more), against the 10 of 2.22's pair split the CTA
    // rate stands for: 0.9 of it.
    const double simple = 11.8 + (262144.0 + 4 * 65536.0) / (4 * kCta) * 1e6;
    const double simple221 = 11.8 + (262144.0 + 4 * 65536.0) / (4 * kCta * 0.9) * 1e6;
    const double ll = 7.2 + 262144.0 / (4 * kCta * 0.5) * 1e6;
    for (auto [version, want] : {std::pair{22105u, simple221}, std::pair{22403u, ll},
                                 std::pair{22707u, ll}, std::pair{23007u, simple}})
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-1node");
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0, 2);
        call.transfers = {{0, 1, 262144}};
        auto ends = Run(b, {call});
        NS_TEST_EXPECT_MSG_EQ(Near(ends[0][1], want, 1e-4), true,
                              version << ": " << ends[0][1] << " us, want " << want);
    }
    // A send+recv pair on each channel (0 <-> 1, 64 MiB each way, Simple on 16 channels of 4 MiB
    // parts): 2.22+ split the CTA's 20 warps 10 send + 9 recv, the rate the CTA figure stands
    // for; up to 2.21 finishWorkP2p gives the pair 9 + 8 warps, so a transfer (its source's send,
    // its destination's recv) runs at 8/9 of it: past the same 11.8 us latency, 9/8 the time.
    double past[2] = {};
    for (int i = 0; i < 2; ++i)
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-1node");
        b.model->SetAttribute("NcclVersion", UintegerValue(i == 0 ? 22105u : 23007u));
        CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0, 2);
        call.transfers = {{0, 1, 64u << 20}, {1, 0, 64u << 20}};
        NS_TEST_EXPECT_MSG_EQ(b.model->Choose(call).channels, 16, i);
        past[i] = Run(b, {call})[0][1] - 11.8;
    }
    NS_TEST_EXPECT_MSG_EQ(Near(past[0], past[1] * 9 / 8, 1e-4), true, past[0] << " vs " << past[1]);
}

void
CollectiveModelTestCase::SendrecvWaitsForBothRanksAndSelfCopiesRunAtHbmSpeed()
{
    // Rank 1 arrives at 100 us: the 0 -> 1 transfer (100 MB, 8 channels: 100 MB / 8 = 12.5 MB
    // parts, below 16 MiB; 8 x 20.6 = 164.8 GB/s, CTA-bound; plus one 512 KiB FIFO step per
    // channel) starts then. Rank 2 copies 1 GB to
    // itself: read and write at 3.35 TB/s, 2 x 1e9 / 3.35e12 s = 597.0 us. Ranks 3 and 4 have
    // nothing to do and are done when they arrive (50 and 70 us; rank 5 at 50 us with rank 3).
    SimulatorGuard guard;
    Bench b("dgx-h100-1node");
    CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0, 6);
    call.transfers = {{0, 1, 100000000}, {2, 2, 1000000000}};
    auto ends = Run(b, {call}, nullptr,
                    {{Seconds(0), MicroSeconds(100), Seconds(0), MicroSeconds(50), MicroSeconds(70),
                      MicroSeconds(50)}});
    const double p2p = 100 + 11.8 + (1e8 + 8 * 524288.0) / (8 * kCta) * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], p2p, 1e-4), true, ends[0][0] << " vs " << p2p);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][1], p2p, 1e-4), true, ends[0][1]);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][2], 2e9 / 3.35e12 * 1e6, 1e-4), true, ends[0][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][3], 50.0, 1e-6), true, ends[0][3]);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][4], 70.0, 1e-6), true, ends[0][4]);
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][5], 50.0, 1e-6), true, ends[0][5]);
}

void
CollectiveModelTestCase::AlltoallFollowsNcclsP2pRoundsAndChannelSharing()
{
    // 8 GPUs, every rank sends 4 MiB to every rank (itself included): NCCL's 32 MiB alltoall.
    // One node: the schedule's rounds are the deltas 0, 1, 3, 6, 2, 7, 5, 4; round k sends to
    // rank + delta and receives from rank - delta. Every op gets 4 channels (nChannelsMin: 32
    // per peer halved until 8 ranks x 4 <= 32 p2p channels; 1 MiB parts), from base
    // bitreverse5(k) = 0, 16, 8, 24, 4, 20, 12, 28: the 8 rounds sit on disjoint channels, all
    // run at once, each op on 4 whole CTAs (4 x 20.6 = 82.4 GB/s). Each GPU's NVLink carries 7
    // ops out and 7 in: 370.8 / 7 = 53.0 GB/s each, NVLink-bound. Each of an op's 4 parts ends
    // one 512 KiB step after its last step lands (FIFO copy-out): 4 MiB + 4 x 512 KiB per op.
    // Latency 11.8 us. Self copies (8 MiB at 3.35 TB/s, 2.5 us) finish first.
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-1node");
        CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0);
        for (uint32_t s = 0; s < 8; ++s)
        {
            for (uint32_t d = 0; d < 8; ++d)
            {
                call.transfers.push_back({s, d, 4194304});
            }
        }
        auto ends = Run(b, {call});
        const double want = 11.8 + 7 * (4194304.0 + 4 * 524288.0) / kNvlPayload * 1e6; // 130.57
        for (uint32_t r = 0; r < 8; ++r)
        {
            NS_TEST_EXPECT_MSG_EQ(Near(ends[0][r], want, 1e-4), true,
                                  "rank " << r << ": " << ends[0][r] << " vs " << want);
        }
    }
    // NCCL_MAX_NCHANNELS=4: 4 p2p channels, 4 per peer, nChannelsMin 1. 1 GB per peer: parts
    // above 16 MiB double the op to 4 channels, so all 8 rounds (the self copy too) share every
    // channel, in one batch (rounds 0-7). The CTA's 20 warps split 2 per work: 1 send + 1 recv
    // warp, a tenth of a lone work's 10 send warps (1/9 of its 9 recv warps). Each op: 4 x 20.6
    // x 0.1 = 8.24 GB/s, CTA-bound (7 x 8.24 is far below 370.8); bytes 1e9 + 4 x 512 KiB.
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-1node", {{"NCCL_MAX_NCHANNELS", "4"}});
        CollectiveCall call = b.Call(CollectiveKind::SendRecv, 0);
        for (uint32_t s = 0; s < 8; ++s)
        {
            for (uint32_t d = 0; d < 8; ++d)
            {
                call.transfers.push_back({s, d, 1000000000});
            }
        }
        auto ends = Run(b, {call});
        const double want = 11.8 + (1e9 + 4 * 524288.0) / (4 * kCta * 0.1) * 1e6; // 121.6 ms
        for (uint32_t r = 0; r < 8; ++r)
        {
            NS_TEST_EXPECT_MSG_EQ(Near(ends[0][r], want, 1e-4), true,
                                  "rank " << r << ": " << ends[0][r] << " vs " << want);
        }
    }
}

void
CollectiveModelTestCase::CollectiveWaitsForItsLastRankAndReportsEveryRankOnce()
{
    // Ring/Simple 256 MiB (one loop: NCCL's 56 us) with rank 5 arriving at 1 ms: the ring starts
    // then; every rank is done at 1000 + 56 + 1.75 x S / 370.8 GB/s. A single-rank communicator
    // or 0 bytes is done at once.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    std::vector<Time> starts(8, Seconds(0));
    starts[5] = MilliSeconds(1);
    auto one = b.Call(CollectiveKind::AllReduce, uint64_t(kGiB), 1);
    auto empty = b.Call(CollectiveKind::AllGather, 0, 8, 3);
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, 256 << 20), one, empty}, nullptr,
                    {starts, {MicroSeconds(7)}, std::vector<Time>(8, MicroSeconds(3))});
    const double want = 1000 + 56.0 + 1.75 * (256 << 20) / kNvlPayload * 1e6;
    for (double e : ends[0])
    {
        NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-4), true, e << " us, want " << want);
    }
    NS_TEST_EXPECT_MSG_EQ(Near(ends[1][0], 7.0, 1e-6), true, ends[1][0]);
    for (double e : ends[2])
    {
        NS_TEST_EXPECT_MSG_EQ(Near(e, 3.0, 1e-6), true, e);
    }
}

void
CollectiveModelTestCase::OtherCollectivesMoveWhatNcclMoves()
{
    // Ring/Simple on 8 H100, 1 GiB, 24 channels, link-bound at 370.8 GB/s of payload per hop:
    // all-gather and reduce-scatter move (n-1)/n x S per hop, latency 8.4 + 7 x 3.4 per loop of
    // 24 x 8 x 2 MiB = 384 MiB: 3 loops, 8.4 + 3 x 23.8 = 79.8 us;
    // broadcast moves S along a 7-hop chain (root 3: 3, 4, 5, 6, 7, 0, 1, 2 on every channel, the
    // ring of one node being one cycle); Simple forwards whole steps, so every hop adds its step
    // latency (3.4 us) after the root's 8.4 us base, and each hop holds a 512 KiB slice until
    // all of it landed, per channel at its 370.8 / 24 GB/s share. Each rank is done when its
    // own hop out has landed, the last when its hop in has: at chain position k (k < 7)
    //   8.4 + (k + 1) x 3.4 + (k slices + S / 24) / rate,
    // the last rank as position 6: 32.2 us + (6 slices + S / 24) / rate.
    SimulatorGuard guard;
    Bench b("dgx-h100-1node", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    auto ends = Run(b, {b.Call(CollectiveKind::AllGather, uint64_t(kGiB), 0, 1)});
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], 79.8 + 0.875 * kGiB / kNvlPayload * 1e6, 1e-4), true,
                          ends[0][0]);
    Bench c("dgx-h100-1node", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    auto call = c.Call(CollectiveKind::Broadcast, uint64_t(kGiB), 0, 2);
    call.root = 3;
    auto e2 = Run(c, {call});
    for (uint32_t r = 0; r < 8; ++r)
    {
        const uint32_t k = std::min<uint32_t>((r + 8 - 3) % 8, 6);
        const double want =
            8.4 + (k + 1) * 3.4 + (kGiB / 24 + k * 524288.0) / (kNvlPayload / 24) * 1e6;
        NS_TEST_EXPECT_MSG_EQ(Near(e2[0][r], want, 1e-4), true,
                              "rank " << r << ": " << e2[0][r] << " us, want " << want);
    }
}

void
CollectiveModelTestCase::SmallRingOpsRunWithFewerThreads()
{
    // NCCL's thread count for a small ring op (enqueue.cc, topoGetAlgoInfo): drop channels while
    // S < nc x 512 threads x 8 B x nRanks (LL on a ring: 64 B a thread on 8 ranks), then, at one
    // channel, halve the threads while S < 1 x nt x 64 and nt is a multiple of 128, then at least
    // 3 warps (96). Ring/LL Broadcast on 8 H100 (the same NVLink cycle on every channel):
    //   32 KiB: 1 channel, 512 threads;  16 KiB: 256;  8 KiB: 128;  4 KiB: 64 -> 96;  8 B: 96.
    // A CTA copies at 20.6 GB/s x LL's 1/2 with all 512 threads, in proportion with fewer, so
    // every size from 8 to 32 KiB moves its data in the same 32 KiB / 10.3 GB/s = 3.18 us (NCCL's
    // aim), 4 KiB in 4 KiB / (10.3 x 96/512) = 2.12 us; the chain's latency is the same for all,
    // so the last rank's end minus the 8 B op's is that (minus 8 B at 96 threads' 1.93 GB/s).
    const double lane = kCta * 0.5 / 512; // bytes/s per thread
    auto lastEnd = [this](uint64_t bytes)
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-1node", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}});
        std::vector<CollectivePlan> plans;
        auto ends = Run(b, {b.Call(CollectiveKind::Broadcast, bytes)}, &plans);
        NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 1, bytes << " B");
        return *std::max_element(ends[0].begin(), ends[0].end());
    };
    const double floor8 = lastEnd(8) - 8 / (lane * 96) * 1e6;
    const std::vector<std::pair<uint64_t, int>> sizes = {
        {4096, 96}, {8192, 128}, {16384, 256}, {32768, 512}};
    for (const auto& [bytes, threads] : sizes)
    {
        const double want = floor8 + double(bytes) / (lane * threads) * 1e6;
        const double got = lastEnd(bytes);
        NS_TEST_EXPECT_MSG_EQ(Near(got, want, 1e-4), true,
                              bytes << " B: " << got << " us, want " << want);
    }
}

void
CollectiveModelTestCase::ChainAcrossNodesStoresAndForwardsSlicesAndSteps()
{
    // default.yaml: 2 nodes x 8 H100, one 400G NIC per GPU, NCCL 2.24.3. 16 ranks, 16 channels.
    // NCCL's estimate for Broadcast/Reduce across nodes: the ring search could not keep one GPU
    // order for channels that enter through different NICs (sameChannels 0), so it charges
    // nsteps = nRanks hops: Simple 8.4 + 16 x 14 (the tree's network figure) = 232.4 us, LL128
    // 14 + 16 x 4.0 = 78, LL 6.6 + 16 x 2.7 = 49.8. One node keeps one hop: 8.4 + 3.4 = 11.8.
    Bench b("default");
    b.model->SetAttribute("NcclVersion", UintegerValue(22403));
    const int ring = int(NcclAlgorithm::Ring);
    NcclCostTable t = b.model->CostTable(b.Call(CollectiveKind::Broadcast, 1 << 20));
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][2], 232.4), true, t.latencyUs[ring][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][1], 78.0), true, t.latencyUs[ring][1]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][0], 49.8), true, t.latencyUs[ring][0]);
    t = b.model->CostTable(b.Call(CollectiveKind::Reduce, 1 << 20, 8));
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[ring][2], 11.8), true, t.latencyUs[ring][2]);

    // Timing, hop by hop, on one channel (NCCL_MAX_NCHANNELS=1), 1 GiB, root 0. Ring 0 runs
    // node 0's GPUs 0..7, then node 1's 7..0: the Broadcast chain is ranks 0..7, 15..8 (hop 8
    // crosses the network), the Reduce chain 1..7, 15..8, 0 (hops 7 and 15 do). Every link
    // carries one hop, so each hop runs at the channel's rate R:
    // - Simple: the CTA carries one search channel, 48 GB/s (as its NIC); a message is half of
    //   NCCL's 14 us ring step, 7 us: a copy hop costs 7, a network hop 14 (copy and network
    //   transfer); every hop's flow passes its 2,048 slices (S / 512 KiB) one message apart,
    //   2,047 x 7 = 14,329 us; a slice is held where a copy hop lands, two where a network hop
    //   does. Base 8.4 us.
    // - LL128: one CTA at 20.6 x 120/128 = 19.3125 GB/s (under 36.7 x 8 per search channel);
    //   copy hop 1.9, network hop 4.0, base 14; a step (576,000 B of data) held where a network
    //   hop lands; no per-slice wait.
    // Position k's data is ready G_k = base + sum over hops j <= k of (hop_j + held_j / R); it
    // is done when its hop out has landed: G_k + hop_(k+1) + wait + S / R; the chain's last rank
    // as the one before it.
    // (NCCL_NVLS_ENABLE=0: on an NVLS machine 2.20-2.27 raise the channels back to NVLS's 16.)
    for (const char* proto : {"Simple", "LL128"})
    {
        for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce})
        {
            SimulatorGuard guard;
            Bench c("default", {{"NCCL_ALGO", "Ring"},
                                {"NCCL_PROTO", proto},
                                {"NCCL_MAX_NCHANNELS", "1"},
                                {"NCCL_NVLS_ENABLE", "0"}});
            c.model->SetAttribute("NcclVersion", UintegerValue(22403));
            const bool simple = std::string(proto) == "Simple";
            std::vector<CollectivePlan> plans;
            auto ends = Run(c, {c.Call(kind, uint64_t(kGiB))}, &plans);
            NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 1, proto);
            const double rate = simple ? 48e9 : kCta * 120 / 128;
            const double base = simple ? 8.4 : 14;
            const double copyHop = simple ? 7 : 1.9;
            const double netHop = simple ? 14 : 4.0;
            const double wait = simple ? 2047 * 7 : 0;
            const double chunkUs = (simple ? 524288.0 : 576000.0) / rate * 1e6;
            const double copyHeld = simple ? 1 : 0;
            const double netHeld = simple ? 2 : 1;
            const bool bcast = kind == CollectiveKind::Broadcast;
            std::vector<uint32_t> order; // comm rank at each chain position
            for (uint32_t r = bcast ? 0 : 1; r < 8; ++r)
            {
                order.push_back(r);
            }
            for (uint32_t r = 15; r >= 8; --r)
            {
                order.push_back(r);
            }
            if (!bcast)
            {
                order.push_back(0);
            }
            auto isNet = [&](uint32_t j) { return (order[j - 1] < 8) != (order[j] < 8); };
            for (uint32_t k = 0; k < 16; ++k)
            {
                const uint32_t out = std::min<uint32_t>(k + 1, 15); // hop whose landing ends k
                double g = base;
                for (uint32_t j = 1; j < out; ++j)
                {
                    g += (isNet(j) ? netHop : copyHop) + (isNet(j) ? netHeld : copyHeld) * chunkUs;
                }
                const double want = g + (isNet(out) ? netHop : copyHop) + wait + kGiB / rate * 1e6;
                NS_TEST_EXPECT_MSG_EQ(Near(ends[0][order[k]], want, 1e-4), true,
                                      proto << " " << ToString(kind) << " position " << k
                                            << " (rank " << order[k] << "): " << ends[0][order[k]]
                                            << " us, want " << want);
            }
        }
    }
    // LL, 128 KiB, one channel: the CTA writes 20.6 x 0.5 = 10.3 GB/s of data (512 threads:
    // 128 KiB is not below 1 x 512 x 8 x 16 B; under LL's 39 GB/s for 2 Intel nodes), but the
    // network hop's sends leave at LlNetSendRate, 3.0 GB/s (the proxy reads every line's flags
    // in host memory first). Base 6.6; NVLink hops 0.6 raised to the 1.0 us network post
    // overhead; network hop 2.7. Only the network hop holds a step (32 KiB of data), written
    // at its 3.0 GB/s: 10.923 us. Broadcast chain 0..7, 15..8 (hop 8 crosses):
    //   G_k = 6.6 + k (k <= 7), G_8 = G_7 + 2.7 + 10.923, G_k = G_8 + (k - 8) (k >= 9);
    //   hop k (copy) ends at G_(k-1) + 1 + 128 KiB / 10.3 GB/s = G_(k-1) + 13.725,
    //   hop 8 at G_7 + 2.7 + 128 KiB / 3.0 GB/s = 13.6 + 46.391 = 59.991;
    //   hop 9 no sooner than hop 8's end + 1 + the held step sent on at 10.3 GB/s (3.181 us):
    //   64.172, each later hop 1 us after the one before (their own flows end at G + 13.725,
    //   sooner). Position k is done when hop k + 1 has landed; the last (rank 8) with hop 15.
    {
        SimulatorGuard guard;
        Bench c("default", {{"NCCL_ALGO", "Ring"},
                            {"NCCL_PROTO", "LL"},
                            {"NCCL_MAX_NCHANNELS", "1"},
                            {"NCCL_NVLS_ENABLE", "0"}});
        c.model->SetAttribute("NcclVersion", UintegerValue(22403));
        std::vector<CollectivePlan> plans;
        const uint64_t bytes = 128 << 10;
        auto ends = Run(c, {c.Call(CollectiveKind::Broadcast, bytes)}, &plans);
        NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 1, "LL channels");
        NS_TEST_EXPECT_MSG_EQ(plans[0].threadShare, 1.0, "LL threads");
        const double cta = kCta * 0.5;
        const double net = 3.0e9;
        const double g7 = 6.6 + 7;
        const double g8 = g7 + 2.7 + 32768 / net * 1e6;
        std::vector<double> hopEnd(16, 0.0); // hopEnd[k]: hop k's last byte landed
        for (uint32_t k = 1; k <= 7; ++k)
        {
            hopEnd[k] = 6.6 + (k - 1) + 1.0 + bytes / cta * 1e6;
        }
        hopEnd[8] = g7 + 2.7 + bytes / net * 1e6;
        hopEnd[9] = hopEnd[8] + 1.0 + 32768 / cta * 1e6;
        for (uint32_t k = 10; k <= 15; ++k)
        {
            hopEnd[k] = hopEnd[k - 1] + 1.0;
            NS_TEST_EXPECT_MSG_LT(g8 + (k - 9) + 1.0 + bytes / cta * 1e6, hopEnd[k], "own flow");
        }
        const uint32_t order[16] = {0, 1, 2, 3, 4, 5, 6, 7, 15, 14, 13, 12, 11, 10, 9, 8};
        for (uint32_t k = 0; k < 16; ++k)
        {
            const double want = hopEnd[std::min<uint32_t>(k + 1, 15)];
            NS_TEST_EXPECT_MSG_EQ(Near(ends[0][order[k]], want, 1e-4), true,
                                  "LL Broadcast position " << k << " (rank " << order[k]
                                                           << "): " << ends[0][order[k]]
                                                           << " us, want " << want);
        }
        // No proxy limit (LlNetSendRate 0): the network hop runs at the CTA's rate, its step
        // held 3.181 us; rank 8, last, at 13.6 + 2.7 + 3.181 + 6 x 1 + 1 + 12.725 = 39.206 us.
        SimulatorGuard guard2;
        Bench d("default", {{"NCCL_ALGO", "Ring"},
                            {"NCCL_PROTO", "LL"},
                            {"NCCL_MAX_NCHANNELS", "1"},
                            {"NCCL_NVLS_ENABLE", "0"}});
        d.model->SetAttribute("NcclVersion", UintegerValue(22403));
        d.model->SetAttribute("LlNetSendRate", DoubleValue(0));
        auto free = Run(d, {d.Call(CollectiveKind::Broadcast, bytes)});
        const double wantFree = g7 + 2.7 + 32768 / cta * 1e6 + 6 + 1.0 + bytes / cta * 1e6;
        NS_TEST_EXPECT_MSG_EQ(Near(free[0][8], wantFree, 1e-4), true,
                              free[0][8] << " us, want " << wantFree);
    }
    // LL, 1 MiB on all 16 channels (64 KiB each; 512 threads: 1 MiB is not below 16 x 512 x 8
    // x 16 ranks). Each channel streams at NCCL's LL ceiling over the channels, 39 / 16 =
    // 2.4375 GB/s; a network hop sends at most the proxy's share, 3.0 / 2 = 1.5 GB/s (two
    // channels leave from each rail GPU), and holds a 32 KiB step written at that rate (21.845
    // us), which goes on downstream at the CTA's own 10.3 GB/s (3.181 us), not at the ceiling's
    // 2.4375 (13.443 us). Channel c's ring enters node 0 at GPU c mod 8 and leaves it at GPU c - 1
    // (its rail), so root 0's chain crosses the network once (c mod 8 = 0: 0..7, then node 1), or
    // twice (node 0's GPUs from 0 up to c - 1, node 1, then node 0's c..7), the second time as
    // hop c + 8 (not its last for c mod 8 <= 6). A crossing at hop m: G_m = G_(m-1) + 2.7 +
    // 21.845; the crossing's own flow ends at G_(m-1) + 2.7 + 64 KiB / 1.5 GB/s = G_(m-1) +
    // 46.391; the next hop forwards no sooner than that + 1 + 3.181 = G_(m-1) + 50.572, but its
    // own flow ends later, at G_m + 1 + 64 KiB / 2.4375 GB/s = G_(m-1) + 52.432, and so do the
    // hops after it, 1 us apart. Copy hops before: G_k = G_(k-1) + 1 (base 6.6).
    // - Rank 0 (c mod 8 = 1: its hop out is the crossing): 6.6 + 46.391 = 52.991 us.
    // - The last hop of a chain crossing twice: G_14 + 27.887 with G_14 = 6.6 + 12 + 2 x 24.545:
    //   95.578 us, the operation's end (ranks 6 and 7, last on those chains).
    // Were the held step written and forwarded at the ceiling's rate, each crossing would add
    // 2.7 + 13.443 to G and the hop after it would end at the crossing's end + 1 + 13.443.
    {
        SimulatorGuard guard;
        Bench c("default", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}});
        c.model->SetAttribute("NcclVersion", UintegerValue(22403));
        std::vector<CollectivePlan> plans;
        auto ends = Run(c, {c.Call(CollectiveKind::Broadcast, 1 << 20)}, &plans);
        NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 16, "LL channels");
        NS_TEST_EXPECT_MSG_EQ(plans[0].threadShare, 1.0, "LL threads");
        const double stream = 39e9 / 16;
        const double proxy = 3.0e9 / 2;
        const double crossing = 2.7 + 32768 / proxy * 1e6; // G_m - G_(m-1)
        const double root = 6.6 + 2.7 + 65536 / proxy * 1e6;
        NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], root, 1e-4), true,
                              "LL Broadcast on 16 channels, root: " << ends[0][0] << " us, want "
                                                                    << root);
        const double twice = 6.6 + 12 + 2 * crossing + 1 + 65536 / stream * 1e6;
        const double last = *std::max_element(ends[0].begin(), ends[0].end());
        NS_TEST_EXPECT_MSG_EQ(Near(last, twice, 1e-4), true,
                              "LL Broadcast on 16 channels: " << last << " us, want " << twice);
        NS_TEST_EXPECT_MSG_EQ(Near(ends[0][7], twice, 1e-4), true, ends[0][7]);
    }
    // A ring across nodes streams at the same 24 GB/s per channel: Ring/Simple AllGather of
    // 64 MiB (one loop, 15 lockstep steps of 14 us after the 8.4 us base) moves 15/16 x S / 16
    // per channel: 218.4 us + 3.93 MiB / 24 GB/s.
    SimulatorGuard guard;
    Bench d("default", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    d.model->SetAttribute("NcclVersion", UintegerValue(22403));
    auto ag = Run(d, {d.Call(CollectiveKind::AllGather, 64 << 20)});
    const double want = 218.4 + 15.0 / 16 * (64 << 20) / 16 / 24e9 * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(ag[0][0], want, 1e-4), true, ag[0][0] << " us, want " << want);
    // NCCL_MAX_NCHANNELS=4: 4 CTAs for 8 search channels; a CTA carries one search channel,
    // 48 GB/s, all of its NIC (one channel per NIC now). Still one loop (4 x 16 x 2 MiB).
    SimulatorGuard guard2;
    Bench e("default", {{"NCCL_ALGO", "Ring"},
                        {"NCCL_PROTO", "Simple"},
                        {"NCCL_MAX_NCHANNELS", "4"},
                        {"NCCL_NVLS_ENABLE", "0"}});
    e.model->SetAttribute("NcclVersion", UintegerValue(22403));
    auto four = Run(e, {e.Call(CollectiveKind::AllGather, 64 << 20)});
    const double want4 = 218.4 + 15.0 / 16 * (64 << 20) / 4 / 48e9 * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(four[0][0], want4, 1e-4), true, four[0][0] << " us, want " << want4);
}

void
CollectiveModelTestCase::TreeLl128AcrossNodesHoldsAChunkAtEveryNetworkHop()
{
    // default.yaml: 2 nodes x 8 H100, NCCL 2.24.3, Tree/LL128 AllReduce of 1 MiB on 16 channels,
    // 64 KiB a channel. NCCL's chunk (calcCollChunking, per channel): nsteps = 1 + log2(2) +
    // 0.1 x 8 = 2.8; 576,000 B halved while 65,536 / chunk < 2.8 x 64 / 8 = 22.4 (to 72,000,
    // the first not above 131,072), then while < 2.8 x 16 / 8 = 5.6 (36,000, then 18,000, the
    // first not above 32,768), rounded down to the 3,840-byte grain: 15,360 B. The CTA posts its
    // tail once per chunk and the proxy sends what it covers, so each of the 2 network hops (one
    // up, one down) is a stage: one chunk of fill.
    // Latency: 14 + 2 x ((8 - 1) x 1.25 + 1 x 8.5) = 48.5 us. Rate per channel and direction:
    // min(20.6 x 120/128 / 2, 41.4 x 8 / 16 / 2, LL128's 36.7 x 8 / 16 / 2) = 9.175 GB/s.
    SimulatorGuard guard;
    Bench b("default", {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL128"}});
    b.model->SetAttribute("NcclVersion", UintegerValue(22403));
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, 1 << 20)}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 16, "channels");
    const double want = 48.5 + (65536.0 + 15360.0) / 9.175e9 * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(ends[0][0], want, 1e-4), true, ends[0][0] << " us, want " << want);
}

void
CollectiveModelTestCase::SmallOpsTakeTheChannelsTheReleasesSchedulerGives()
{
    // Tree/LL AllReduce on 2 x 8 H100 (16 channels). The thread threshold leaves one channel per
    // 512 threads x 8 B = 4 KiB; then NCCL's scheduler (enqueue.cc scheduleCollTasksToPlan) gives
    // at most one channel per cell of minimum traffic, an AllReduce's traffic being twice its
    // bytes: no cells up to 2.21, 16 KiB in 2.23-2.28, 32 KiB from 2.29, LL traffic x4 from 2.26.
    //   8 KiB:  threshold 2; 2.24: 16 KiB / 16 KiB = 1; 2.27: 64 / 16 = 4 -> 2; 2.30: 64 / 32 = 2.
    //   32 KiB: threshold 8; 2.24: 64 / 16 = 4;         2.27: 256 / 16 = 16 -> 8; 2.30: 8.
    //   4 KiB:  threshold 1 everywhere.
    const std::pair<uint32_t, std::array<int, 3>> want[] = {
        {22105, {1, 2, 8}}, {22403, {1, 1, 4}}, {22707, {1, 2, 8}}, {23007, {1, 2, 8}}};
    for (const auto& [version, channels] : want)
    {
        Bench b("default", {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        const uint64_t sizes[] = {4096, 8192, 32768};
        for (int i = 0; i < 3; ++i)
        {
            const CollectivePlan plan =
                b.model->Choose(b.Call(CollectiveKind::AllReduce, sizes[i]));
            NS_TEST_EXPECT_MSG_EQ(int(plan.algorithm), int(NcclAlgorithm::Tree), version);
            NS_TEST_EXPECT_MSG_EQ(plan.channels, channels[size_t(i)],
                                  version << ", " << sizes[i] << " B");
        }
    }
    // The threads a one-channel Tree runs with: up to 2.21 halved as a ring's while under the
    // threshold (1 KiB < 512 x 8 B -> 256 -> 128 threads, a quarter), from 2.22 all of them.
    for (uint32_t version : {22105u, 22203u})
    {
        Bench b("default", {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        const CollectivePlan plan = b.model->Choose(b.Call(CollectiveKind::AllReduce, 1024));
        NS_TEST_EXPECT_MSG_EQ(plan.channels, 1, version);
        NS_TEST_EXPECT_MSG_EQ(Near(plan.threadShare, version < 22200 ? 0.25 : 1.0), true,
                              version << ": " << plan.threadShare);
    }
    // A Simple ring is held by its thread threshold (512 x 64 B = 32 KiB a channel) before any
    // cell: 256 KiB AllGather, 16 KiB a rank, takes 8 channels on every release.
    for (uint32_t version : {22105u, 22403u, 23007u})
    {
        Bench b("default", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        NS_TEST_EXPECT_MSG_EQ(
            b.model->Choose(b.Call(CollectiveKind::AllGather, 256 << 10)).channels, 8, version);
    }
}

void
CollectiveModelTestCase::TreeLlAcrossNodesHoldsAStepAtEveryNetworkHop()
{
    // Tree/LL AllReduce on one channel: the tree crosses the network 2 x ceil(log2 nNodes) times
    // (up, then down), and the proxy sends each hop's step only once it has read its lines at
    // LlNetSendRate (3.0 GB/s): the first step is held at all of those hops but the last (whose
    // sending is the flow's own). The step is the channel's share up to 32 KiB of data. So the
    // call ends later, than with LlNetSendRate 0, by (2 ceil(log2 nNodes) - 1) x step / 3.0 GB/s:
    // - 2 x 8 H100 (one hold): 4 KiB 1.3653 us, 64 KiB (a 32 KiB step) 10.9227 us;
    // - 4 x 8 H100 (three holds): 4 KiB 4.0960 us, 64 KiB 32.7680 us.
    const std::pair<const char*, int> clusters[] = {{"default", 1}, {"dgx-h100-4node", 3}};
    for (const auto& [topology, holds] : clusters)
    {
        for (uint64_t bytes : {uint64_t(4096), uint64_t(65536)})
        {
            double end[2] = {0, 0};
            for (int limited = 0; limited < 2; ++limited)
            {
                SimulatorGuard guard;
                Bench b(topology, {{"NCCL_ALGO", "Tree"},
                                   {"NCCL_PROTO", "LL"},
                                   {"NCCL_MAX_NCHANNELS", "1"},
                                   {"NCCL_NVLS_ENABLE", "0"}});
                b.model->SetAttribute("NcclVersion", UintegerValue(22403));
                b.model->SetAttribute("LlNetSendRate", DoubleValue(limited ? 3.0e9 : 0.0));
                std::vector<CollectivePlan> plans;
                auto ends = Run(b, {b.Call(CollectiveKind::AllReduce, bytes)}, &plans);
                NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 1, topology);
                end[limited] = ends[0][0];
            }
            const double step = std::min<double>(bytes, 32768);
            const double want = holds * step / 3.0e9 * 1e6;
            NS_TEST_EXPECT_MSG_EQ(Near(end[1] - end[0], want, 1e-3), true,
                                  topology << " " << bytes << " B: held " << end[1] - end[0]
                                           << " us, want " << want);
        }
    }
    // All 16 channels (128 KiB, 8 KiB a channel, on 2 x 8 H100; NCCL 2.24's scheduler gives an
    // AllReduce one channel per 16 KiB of traffic, twice its bytes: 16): channels c and c + 8
    // leave each node from the same GPU, whose one proxy reads both: each channel's step is read
    // at 1.5 GB/s, one hold of 8,192 B: 5.4613 us.
    double end[2] = {0, 0};
    for (int limited = 0; limited < 2; ++limited)
    {
        SimulatorGuard guard;
        Bench b("default", {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(22403));
        b.model->SetAttribute("LlNetSendRate", DoubleValue(limited ? 3.0e9 : 0.0));
        std::vector<CollectivePlan> plans;
        end[limited] = Run(b, {b.Call(CollectiveKind::AllReduce, 131072)}, &plans)[0][0];
        NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 16, "16 channels");
    }
    const double want = 8192 / 1.5e9 * 1e6;
    NS_TEST_EXPECT_MSG_EQ(Near(end[1] - end[0], want, 1e-3), true,
                          "16 channels: held " << end[1] - end[0] << " us, want " << want);

    // A cluster whose transport states its proxy's rate (network_transport.ll_proxy_rate,
    // 2.0 GB/s) has it in place of the attribute: one channel, 4 KiB, one hold of 2.048 us.
    const std::string path = "/tmp/eidolon-collective-test-ll-proxy.yaml";
    std::ofstream(path) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                        << R"(name: ll-proxy-2node
generate:
  nodes: 2
  node: {type: dgx-h100}
network_transport: {kind: ib, ll_proxy_rate: 2GB/s}
)";
    double stated[2] = {0, 0};
    for (int limited = 0; limited < 2; ++limited)
    {
        SimulatorGuard guard;
        Bench b(limited ? path : std::string("default"), {{"NCCL_ALGO", "Tree"},
                                                          {"NCCL_PROTO", "LL"},
                                                          {"NCCL_MAX_NCHANNELS", "1"},
                                                          {"NCCL_NVLS_ENABLE", "0"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(22403));
        if (!limited)
        {
            b.model->SetAttribute("LlNetSendRate", DoubleValue(0));
        }
        stated[limited] = Run(b, {b.Call(CollectiveKind::AllReduce, 4096)})[0][0];
    }
    NS_TEST_EXPECT_MSG_EQ(Near(stated[1] - stated[0], 4096 / 2.0e9 * 1e6, 1e-3), true,
                          "ll_proxy_rate: held " << stated[1] - stated[0] << " us");
}

void
CollectiveModelTestCase::EmulatedVersionChangesTheTables()
{
    // NCCL 2.20.x: NVLS latency 23 us, Tree/Simple latency 28 us per hop with no base, NVLS
    // bandwidth min(bwIntra, bwInter) x 8 x 5/6 = 266.7 GB/s.
    Bench b("dgx-h100-1node");
    b.model->SetAttribute("NcclVersion", UintegerValue(22003));
    NcclCostTable t = b.model->CostTable(b.Call(CollectiveKind::AllReduce, 1 << 20));
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[int(NcclAlgorithm::Nvls)][2], 23.0), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[int(NcclAlgorithm::Nvls)][2], 320.0 * 5 / 6), true,
                          "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[int(NcclAlgorithm::Tree)][2], 2 * 7 * 28.0), true, "");
    NS_TEST_EXPECT_MSG_LT(t.timeUs[int(NcclAlgorithm::Pat)][2], 0, "");
}

void
CollectiveModelTestCase::EachClaimedReleaseHasItsTablesAndRules()
{
    // One DGX H100 (ring graph 12 x 30 GB/s, NVLS graph 8 heads x bwIntra 40 / bwInter 60, as in
    // cost_table_is_nccls_for_8_h100), AllReduce ring ratio 8/14. Values from each release's
    // src/graph/tuning.cc, worked out by hand.
    const int ring = int(NcclAlgorithm::Ring), tree = int(NcclAlgorithm::Tree),
              nvls = int(NcclAlgorithm::Nvls);
    const int ll = 0, simple = 2;
    auto tables = [](uint32_t version, CollectiveKind kind)
    {
        Bench b("dgx-h100-1node");
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        return b.model->CostTable(b.Call(kind, 1 << 20));
    };
    // 2.18.6: ring LL x1/4 under Hopper's LL ceiling of then (87.7): min(87.7, 360/4); NVLS a
    // 23 us base, no per-hop figure, bandwidth bwIntra x 8 x 5/6; Tree/Simple 2 x 7 x 4 us;
    // AllGather on rings only.
    NcclCostTable t = tables(21806, CollectiveKind::AllReduce);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll], 87.7 * 8 / 14), true,
                          t.bandwidthGBps[ring][ll]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[nvls][simple], 23.0), true, t.latencyUs[nvls][simple]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 40.0 * 8 * 5 / 6), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[tree][simple], 2 * 7 * 4.0), true,
                          t.latencyUs[tree][simple]);
    NS_TEST_EXPECT_MSG_LT(tables(21806, CollectiveKind::AllGather).timeUs[nvls][simple], 0, "");
    // 2.19.3 (read with 2.20's table): AllGather and ReduceScatter may use NVLS, at
    // min(40, 60) x 8 x 5/6 like AllReduce, behind its 23 us latency.
    t = tables(21903, CollectiveKind::ReduceScatter);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 320.0 * 5 / 6), true,
                          t.bandwidthGBps[nvls][simple]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[nvls][simple], 23.0), true, t.latencyUs[nvls][simple]);
    // 2.21.5: ring LL x1/2 under 141: min(141, 180); NVLS 25 us; Tree/Simple 2 x 7 x 28 us;
    // AllGather may use NVLS: min(40, 60) x 8 x 5/6.
    t = tables(22105, CollectiveKind::AllReduce);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll], 141.0 * 8 / 14), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[nvls][simple], 25.0), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[tree][simple], 2 * 7 * 28.0), true, "");
    t = tables(22105, CollectiveKind::AllGather);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 320.0 * 5 / 6), true,
                          t.bandwidthGBps[nvls][simple]);
    // 2.24.3: Tree/Simple 8.4 + 2 x 7 x 4 us; AllReduce NVLS still min(40, 60) x 8 x 5/6;
    // AllGather on NVLS no longer converted: 320.
    t = tables(22403, CollectiveKind::AllReduce);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[tree][simple], 8.4 + 2 * 7 * 4.0), true, "");
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 320.0 * 5 / 6), true, "");
    t = tables(22403, CollectiveKind::AllGather);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 320.0), true,
                          t.bandwidthGBps[nvls][simple]);
    // 2.27.7: AllGather NVLS min(40 x 7/8, 0.9 x 60) x 8 = 280.
    t = tables(22707, CollectiveKind::AllGather);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][simple], 35.0 * 8), true,
                          t.bandwidthGBps[nvls][simple]);
    // DGX B200 (ring graph 16 x 45 GB/s on one node, AllReduce ratio 8/14; 8 x 48 on two, 16/30).
    // 2.23-2.24 read Hopper's rows for sm100 and keep LL128 off; 2.25 adds Blackwell's rows at
    // twice Hopper's and turns LL128 on: ring LL min(282, 720 / 2), LL128 min(0.92 x 720, 16 x
    // 73.4). Blackwell's ring LL128 cap per channel: 73.4 up to 2.28.3; on 2 nodes 34.6 from
    // 2.28.7; on one node 34.5 in 2.29.2-2.29.6, 40 from 2.29.7.
    const int ll128 = 1;
    for (uint32_t nodes : {1u, 2u})
    {
        const std::string topo =
            "/tmp/eidolon-collective-test-b200-" + std::to_string(nodes) + "node.yaml";
        std::ofstream(topo) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                            << "name: b200\ngenerate:\n  nodes: " << nodes
                            << "\n  node: {type: dgx-b200}\n";
        auto b200 = [&](uint32_t version)
        {
            Bench b(topo);
            b.model->SetAttribute("NcclVersion", UintegerValue(version));
            return b.model->CostTable(b.Call(CollectiveKind::AllReduce, 1 << 20));
        };
        if (nodes == 1)
        {
            // The NVLS graph (8 heads, 9 x speed within NVLink5's 18 x 40.1 = 721.8 GB/s): the
            // sm90 speed list up to 2.24 (60 the largest), sm100's own from 2.25 (80). The ring:
            // 2.24 finds 12 x 60 (720) and doubles it up to the search's 16 channels (MAXCHANNELS
            // 32 / 2), dividing the speed by ceil(16 / 12) = 2: 16 x 30; 2.25 finds 8 x 90 and
            // doubles it to 16 x 45 (its cap is 32).
            for (auto [version, speed, ringSpeed] :
                 {std::tuple{22403u, 60.0, 30.0}, std::tuple{22501u, 80.0, 45.0}})
            {
                Bench b(topo);
                b.model->SetAttribute("NcclVersion", UintegerValue(version));
                const NcclCommInfo c =
                    b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
                NS_TEST_EXPECT_MSG_EQ(c.nvlsGraph.bwIntra, speed, version);
                NS_TEST_EXPECT_MSG_EQ(c.ring.nChannels, 16, version);
                NS_TEST_EXPECT_MSG_EQ(c.ring.bwIntra, ringSpeed, version);
            }
            t = b200(22403);
            NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll], 141.0 * 8 / 14), true, "");
            NS_TEST_EXPECT_MSG_LT(t.timeUs[ring][ll128], 0, "LL128 off on sm100 before 2.25");
            t = b200(22501);
            NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll], 282.0 * 8 / 14), true, "");
            NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[ring][ll128], 0.92 * 720 * 8 / 14), true,
                                  t.bandwidthGBps[ring][ll128]);
            NS_TEST_EXPECT_MSG_EQ(Near(b200(22903).bandwidthGBps[ring][ll128], 16 * 34.5 * 8 / 14),
                                  true, "");
            NS_TEST_EXPECT_MSG_EQ(Near(b200(23007).bandwidthGBps[ring][ll128], 16 * 40.0 * 8 / 14),
                                  true, "");
        }
        else
        {
            // ARM hosts (GB200-class): from 2.29.2 the network p2p chunk doubles to 256 KiB on
            // sm100, and 2.29+ correct Blackwell's NVLSTree by size on x86 only: a 1 MiB
            // AllReduce (1 MiB >> 6 = 2^14) is taken at treeCorrectionFactor[Simple][14] = 0.5
            // on x86 and not on ARM.
            for (auto [version, cpu, chunk] :
                 {std::tuple{23007u, "arm", 262144u}, std::tuple{23007u, "intel", 131072u},
                  std::tuple{22809u, "arm", 131072u}})
            {
                Bench b(topo);
                b.model->SetAttribute("NcclVersion", UintegerValue(version));
                b.model->SetAttribute("CpuVendor", StringValue(cpu));
                NS_TEST_EXPECT_MSG_EQ(
                    b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus)
                        .p2pChunkBytes,
                    chunk, version << " " << cpu);
            }
            // NCCL's time: latency + bytes / (bandwidth x correction).
            const int nvlsTree = int(NcclAlgorithm::NvlsTree);
            auto streaming = [&](const char* cpu)
            {
                Bench b(topo);
                b.model->SetAttribute("CpuVendor", StringValue(cpu));
                const NcclCostTable c =
                    b.model->CostTable(b.Call(CollectiveKind::AllReduce, 1 << 20));
                return c.timeUs[nvlsTree][simple] - c.latencyUs[nvlsTree][simple];
            };
            NS_TEST_EXPECT_MSG_GT(streaming("arm"), 0, "");
            NS_TEST_EXPECT_MSG_EQ(Near(streaming("intel"), streaming("arm") / 0.5), true,
                                  streaming("intel") << " vs " << streaming("arm"));
            NS_TEST_EXPECT_MSG_EQ(
                Near(b200(22803).bandwidthGBps[ring][ll128], 0.92 * 384 * 16 / 30), true, "");
            NS_TEST_EXPECT_MSG_EQ(Near(b200(22807).bandwidthGBps[ring][ll128], 8 * 34.6 * 16 / 30),
                                  true, "");
        }
    }
    // One H100 on each of 4 nodes (tree graph 2 channels x 24 GB/s across nodes, busBw 48): PAT
    // at 0.85 of it in 2.23.4, 0.75 from 2.24; the tree graph is a plain TREE there (one GPU a
    // node), at 0.85 on every release: Tree/Simple AllReduce min(0.92 x 48, 2 x 36.0) x 0.85,
    // halved to algorithm bandwidth.
    {
        Bench b("dgx-h100-4node");
        const int pat = int(NcclAlgorithm::Pat);
        CollectiveCall call = b.Call(CollectiveKind::AllGather, 4 << 20);
        call.gpus = {b.topo->GpuDevice(0), b.topo->GpuDevice(8), b.topo->GpuDevice(16),
                     b.topo->GpuDevice(24)};
        CollectiveCall ar = call;
        ar.kind = CollectiveKind::AllReduce;
        for (auto [version, factor] : {std::pair{22304u, 0.85}, std::pair{22403u, 0.75}})
        {
            b.model->SetAttribute("NcclVersion", UintegerValue(version));
            NS_TEST_EXPECT_MSG_EQ(
                Near(b.model->CostTable(call).bandwidthGBps[pat][simple], 48 * factor), true,
                version);
            NS_TEST_EXPECT_MSG_EQ(
                Near(b.model->CostTable(ar).bandwidthGBps[tree][simple], 0.92 * 48 * 0.85 * 0.5),
                true, version);
        }
        // NCCL sets no maxThreads for PAT, so topoGetAlgoInfo drops none of its channels; only
        // the scheduler's 16 KiB cells limit them: a 64 KiB AllGather moves 4 x 16 KiB, 4
        // channels (the thread rule would have left 2: 64 KiB < 2 x 512 x 64 B is false at 2).
        Bench forced("dgx-h100-4node", {{"NCCL_ALGO", "PAT"}});
        forced.model->SetAttribute("NcclVersion", UintegerValue(22403));
        CollectiveCall small = call;
        small.bytes = 64 << 10;
        NS_TEST_EXPECT_MSG_GT(forced.model->DescribeCommunicator(small.gpus).channels, 3, "");
        const CollectivePlan plan = forced.model->Choose(small);
        NS_TEST_EXPECT_MSG_EQ(int(plan.algorithm), pat, "");
        NS_TEST_EXPECT_MSG_EQ(plan.channels, 4, "");
    }
    // 4 x 8 H100: the NVLS graph (8 NIC heads) is 40/40 GB/s in 2.18, whose search keeps a raised
    // graph only for more heads; 2.19+ raise bwInter to min(2 x 40, 48). 2.18's NVLSTree takes
    // bwInter from 3 nodes at 0.7 x 4 / (2 x 3): 8 x 40 x 0.7 x 4 / 6.
    {
        Bench b("dgx-h100-4node");
        const CollectiveCall call = b.Call(CollectiveKind::AllReduce, 256 << 20);
        b.model->SetAttribute("NcclVersion", UintegerValue(21805));
        NS_TEST_EXPECT_MSG_EQ(b.model->DescribeCommunicator(call.gpus).nvlsGraph.bwInter, 40.0, "");
        const int nvlsTree = int(NcclAlgorithm::NvlsTree);
        NS_TEST_EXPECT_MSG_EQ(
            Near(b.model->CostTable(call).bandwidthGBps[nvlsTree][simple], 8 * 40 * 0.7 * 4 / 6),
            true, b.model->CostTable(call).bandwidthGBps[nvlsTree][simple]);
        b.model->SetAttribute("NcclVersion", UintegerValue(21904));
        NS_TEST_EXPECT_MSG_EQ(b.model->DescribeCommunicator(call.gpus).nvlsGraph.bwInter, 48.0, "");
    }
    // Multi-node sm90 channels (connect.cc): 2 x 8 H100 search 8 ring channels, doubled to 16 for
    // the two trees; 2.18-2.19 double again while 2 x 16 fits MAXCHANNELS (32), 2.20+ only under
    // 16 channels.
    // NCCL_MAX_NCHANNELS=4 on one DGX H100 (connect.cc, nvls.cc): the NVLS CTAs stay 16 (only the
    // CTA bounds limit them); 2.20-2.27 then raise the channels to 16 where NVLS is on, for p2p
    // from 2.20 and for rings and trees from 2.22; 2.18 and 2.28+ keep 4.
    for (auto [version, channels, p2p] :
         {std::tuple{21805u, 4, 4}, std::tuple{22105u, 4, 16}, std::tuple{22403u, 16, 16},
          std::tuple{22707u, 16, 16}, std::tuple{23007u, 4, 4}})
    {
        Bench b("dgx-h100-1node", {{"NCCL_MAX_NCHANNELS", "4"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        const NcclCommInfo c =
            b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
        NS_TEST_EXPECT_MSG_EQ(c.nvlsChannels, 16, version);
        NS_TEST_EXPECT_MSG_EQ(c.channels, channels, version);
        NS_TEST_EXPECT_MSG_EQ(c.p2pChannels, p2p, version);
    }
    {
        Bench b("dgx-h100-1node", {{"NCCL_MAX_NCHANNELS", "4"}, {"NCCL_NVLS_ENABLE", "0"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(22403));
        NS_TEST_EXPECT_MSG_EQ(
            b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus).channels, 4,
            "no NVLS, no raise");
    }
    // And p2p channels per network peer (paths.cc), 400 Gb/s NICs (48 GB/s in NCCL's speed
    // table): 2 up to 2.19 (of 32 p2p channels there); 2.20-2.28 2, halved while 2 x 16 ranks >
    // 4 x 16 p2p channels: 2;
    // from 2.29 ceil(48 / 14) = 4, halved while 4 x ceil(16 / 8) > 16: 4.
    for (auto [version, channels, perPeer] : {std::tuple{21904u, 32, 2}, std::tuple{22003u, 16, 2},
                                              std::tuple{22403u, 16, 2}, std::tuple{23007u, 16, 4}})
    {
        Bench b("default");
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        const NcclCommInfo c =
            b.model->DescribeCommunicator(b.Call(CollectiveKind::AllReduce, 1).gpus);
        NS_TEST_EXPECT_MSG_EQ(c.channels, channels, version);
        NS_TEST_EXPECT_MSG_EQ(c.p2pChannelsPerPeer, perPeer, version);
    }
    // NVLS by datatype and reduction op (ncclNvlsSupported; ncclDataType_t, ncclRedOp_t values):
    // a 256 MiB AllReduce on one DGX H100 runs NVLS for fp32 sum, bf16 max and an unknown type;
    // not for uint8 sum, fp32 avg or fp32 max. An AllGather keeps NVLS whatever the type.
    {
        Bench b("dgx-h100-1node");
        for (auto [dtype, redop, nvlsOn] :
             {std::tuple{7, 0, true}, std::tuple{9, 2, true}, std::tuple{-1, -1, true},
              std::tuple{1, 0, false}, std::tuple{7, 4, false}, std::tuple{7, 2, false}})
        {
            CollectiveCall call = b.Call(CollectiveKind::AllReduce, 256u << 20);
            call.dtype = dtype;
            call.redop = redop;
            const bool offered = b.model->CostTable(call).timeUs[nvls][simple] >= 0;
            const bool chosen = int(b.model->Choose(call).algorithm) == nvls;
            NS_TEST_EXPECT_MSG_EQ(offered, nvlsOn, dtype << " " << redop);
            NS_TEST_EXPECT_MSG_EQ(chosen, nvlsOn, dtype << " " << redop);
        }
        CollectiveCall gather = b.Call(CollectiveKind::AllGather, 256u << 20);
        gather.dtype = 1;
        NS_TEST_EXPECT_MSG_GT(b.model->CostTable(gather).timeUs[nvls][simple], 0, "");
    }
    // fp8 rings of more than 8 ranks cost 1024 times NCCL's estimate from 2.24 (enqueue.cc): 16
    // ranks on 2 x 8 H100, against fp32; not on 2.23.4.
    for (auto [version, factor] : {std::pair{22403u, 1024.0}, std::pair{22304u, 1.0}})
    {
        Bench b("default");
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        CollectiveCall f32 = b.Call(CollectiveKind::AllReduce, 64u << 20);
        f32.dtype = 7;
        CollectiveCall f8 = f32;
        f8.dtype = 10;
        const double want = b.model->CostTable(f32).timeUs[ring][simple] * factor;
        NS_TEST_EXPECT_MSG_EQ(Near(b.model->CostTable(f8).timeUs[ring][simple], want), true,
                              version);
    }
    // PAT's ReduceScatter is off for avg from 2.23 (4 nodes x 1 H100).
    {
        Bench b("dgx-h100-4node");
        b.model->SetAttribute("NcclVersion", UintegerValue(22403));
        CollectiveCall rs = b.Call(CollectiveKind::ReduceScatter, 4 << 20);
        rs.gpus = {b.topo->GpuDevice(0), b.topo->GpuDevice(8), b.topo->GpuDevice(16),
                   b.topo->GpuDevice(24)};
        rs.dtype = 7;
        rs.redop = 0;
        const int pat = int(NcclAlgorithm::Pat);
        NS_TEST_EXPECT_MSG_GT(b.model->CostTable(rs).timeUs[pat][simple], 0, "");
        rs.redop = 4;
        NS_TEST_EXPECT_MSG_LT(b.model->CostTable(rs).timeUs[pat][simple], 0, "");
    }
}

void
CollectiveModelTestCase::CollNetInNcclAlgoIsNamedInAWarning()
{
    NcclConfig c = NcclConfig::FromEnvironment({{"NCCL_ALGO", "COLLNETCHAIN"}});
    NS_TEST_EXPECT_MSG_NE(c.UnmodelledWarning(23007).find("CollNetChain"), std::string::npos,
                          c.UnmodelledWarning(23007));
    NS_TEST_EXPECT_MSG_EQ(c.UnmodelledWarning(23007).find("CollNetDirect"), std::string::npos, "");
    NS_TEST_EXPECT_MSG_NE(c.UnmodelledWarning(23007).find("fails the call"), std::string::npos, "");
    NS_TEST_EXPECT_MSG_NE(c.UnmodelledWarning(22105).find("turns Ring and Tree back on"),
                          std::string::npos, c.UnmodelledWarning(22105));
    c = NcclConfig::FromEnvironment({{"NCCL_ALGO", "allreduce:collnetdirect,collnetchain,ring"}});
    NS_TEST_EXPECT_MSG_NE(c.UnmodelledWarning(23007).find("CollNetDirect, CollNetChain"),
                          std::string::npos, c.UnmodelledWarning(23007));
    // "collnet" is no name NCCL knows: 2.30 cannot read it (ReadingWarning says so).
    NS_TEST_EXPECT_MSG_EQ(
        NcclConfig::FromEnvironment({{"NCCL_ALGO", "collnet"}}).UnmodelledWarning(23007), "", "");
    NS_TEST_EXPECT_MSG_EQ(
        NcclConfig::FromEnvironment({{"NCCL_ALGO", "^collnetdirect"}}).UnmodelledWarning(23007), "",
        "");
    NS_TEST_EXPECT_MSG_EQ(
        NcclConfig::FromEnvironment({{"NCCL_ALGO", "ring,tree"}}).UnmodelledWarning(23007), "", "");
}

void
CollectiveModelTestCase::RingAcrossNodesPaysTheNetworkHopEveryStepOfEveryLoop()
{
    // default.yaml: 2 nodes x 8 H100, 16 ranks, 16 channels. Ring/Simple AllGather: every one of
    // the 15 steps waits for the network hop (NCCL 2.30.7: 14 us, over NVLink's 3.4), base 8.4 us.
    // A loop covers 16 channels x 16 ranks x 2 MiB = 512 MiB: 64 MiB is one loop (8.4 + 15 x 14 =
    // 218.4 us), 1 GiB two (8.4 + 2 x 15 x 14 = 428.4 us). AllReduce has 30 steps: 8.4 + 30 x 14.
    // One node keeps NCCL's own estimate (8.4 + 7 x 3.4 for an 8-rank AllGather).
    Bench b("default", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    auto latency = [&](CollectiveKind kind, uint64_t bytes, uint32_t ranks = 0)
    {
        CollectiveCall call = b.Call(kind, bytes, ranks);
        CollectivePlan plan = b.model->Choose(call);
        NS_TEST_EXPECT_MSG_EQ(plan.algorithm, NcclAlgorithm::Ring, "");
        return b.model->PlanLatencyUs(call, plan);
    };
    NS_TEST_EXPECT_MSG_EQ(b.model->Choose(b.Call(CollectiveKind::AllGather, 64 << 20)).channels, 16,
                          "");
    NS_TEST_EXPECT_MSG_EQ(Near(latency(CollectiveKind::AllGather, 64 << 20), 218.4), true,
                          latency(CollectiveKind::AllGather, 64 << 20));
    NS_TEST_EXPECT_MSG_EQ(Near(latency(CollectiveKind::AllGather, uint64_t(kGiB)), 428.4), true,
                          latency(CollectiveKind::AllGather, uint64_t(kGiB)));
    NS_TEST_EXPECT_MSG_EQ(Near(latency(CollectiveKind::AllReduce, 64 << 20), 8.4 + 30 * 14.0), true,
                          latency(CollectiveKind::AllReduce, 64 << 20));
    NS_TEST_EXPECT_MSG_EQ(Near(latency(CollectiveKind::AllGather, 64 << 20, 8), 8.4 + 7 * 3.4),
                          true, latency(CollectiveKind::AllGather, 64 << 20, 8));
}

void
CollectiveModelTestCase::LlRingAcrossNodesCrossesEveryNodeBoundaryOnItsLongestPath()
{
    // 4 nodes x 8 H100, NCCL 2.30.7, Ring/LL: base 6.6 us, a network hop 2.7 us, an NVLink hop
    // 0.6 us raised to NCCL's network post overhead (1.0 us, Intel). The ring crosses the network
    // at each of its 4 node boundaries; a chunk's path of nsteps hops crosses it
    // ceil(nsteps / ppn) times.
    // - AllGather, 32 ranks: 31 hops, 4 crossings (NCCL's estimate: 3):
    //   6.6 + 27 x 1.0 + 4 x 2.7 = 44.4 us.
    // - AllReduce, 32 ranks: 62 hops (reduce, then gather), 8 crossings:
    //   6.6 + 54 x 1.0 + 8 x 2.7 = 82.2 us.
    // - AllReduce on GPUs 0, 1 of nodes 0 and 1 (ppn 2): 6 hops, 3 crossings:
    //   6.6 + 3 x 1.0 + 3 x 2.7 = 17.7 us.
    // - AllGather on GPU 0 of each node (ppn 1): 3 hops, all network, at NCCL's Tree network
    //   figure for ppn 1 (5.0 us): 6.6 + 3 x 5.0 = 21.6 us.
    Bench b("dgx-h100-4node", {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}});
    auto latency = [&](CollectiveKind kind, const std::vector<uint32_t>& gpus)
    {
        CollectiveCall call = b.Call(kind, 4096);
        if (!gpus.empty())
        {
            call.gpus.clear();
            for (uint32_t g : gpus)
            {
                call.gpus.push_back(b.topo->GpuDevice(g));
            }
        }
        const CollectivePlan plan = b.model->Choose(call);
        NS_TEST_EXPECT_MSG_EQ(plan.algorithm, NcclAlgorithm::Ring, "");
        NS_TEST_EXPECT_MSG_EQ(plan.protocol, NcclProtocol::LL, "");
        return b.model->PlanLatencyUs(call, plan);
    };
    const double ag = latency(CollectiveKind::AllGather, {});
    NS_TEST_EXPECT_MSG_EQ(Near(ag, 44.4), true, ag);
    const double ar = latency(CollectiveKind::AllReduce, {});
    NS_TEST_EXPECT_MSG_EQ(Near(ar, 82.2), true, ar);
    const double ar2 = latency(CollectiveKind::AllReduce, {0, 1, 8, 9});
    NS_TEST_EXPECT_MSG_EQ(Near(ar2, 17.7), true, ar2);
    const double ag1 = latency(CollectiveKind::AllGather, {0, 8, 16, 24});
    NS_TEST_EXPECT_MSG_EQ(Near(ag1, 21.6), true, ag1);

    // Each of those crossings sends its chunk (a rank's share of the channel, here 128 KiB / 32
    // = 4 KiB on one channel) only once the proxy has read its lines at LlNetSendRate: the call
    // ends later than with no limit by crossings x 4,096 B / 3.0 GB/s, AllGather 4 x 1.3653 =
    // 5.4613 us, AllReduce 8 x 1.3653 = 10.9227 us.
    for (const auto& [kind, crossings] :
         {std::pair{CollectiveKind::AllGather, 4}, std::pair{CollectiveKind::AllReduce, 8}})
    {
        double end[2] = {0, 0};
        for (int limited = 0; limited < 2; ++limited)
        {
            SimulatorGuard guard;
            Bench c("dgx-h100-4node",
                    {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}, {"NCCL_MAX_NCHANNELS", "1"}});
            c.model->SetAttribute("LlNetSendRate", DoubleValue(limited ? 3.0e9 : 0.0));
            end[limited] = Run(c, {c.Call(kind, 128 << 10)})[0][0];
        }
        const double want = crossings * 4096 / 3.0e9 * 1e6;
        NS_TEST_EXPECT_MSG_EQ(Near(end[1] - end[0], want, 1e-3), true,
                              ToString(kind)
                                  << ": held " << end[1] - end[0] << " us, want " << want);
    }
}

void
CollectiveModelTestCase::NetworkTransportCostsEveryNetworkMessage()
{
    // 2 nodes x 8 H100 over a transport that costs 48.5 us per network message. Ring/Simple
    // AllGather of 64 MiB (one loop, 15 lockstep steps): every step waits for the network hop
    // plus the message, 8.4 + 15 x (14 + 48.5) = 945.9 us. Tree AllReduce crosses the network
    // 2 x ceil(log2 2) = 2 times: NCCL's latency + 97 us (NCCL's own estimate is unchanged).
    const std::string path = "/tmp/eidolon-collective-test-tcpxo.yaml";
    std::ofstream(path) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                        << R"(name: tcpxo-2node
generate:
  nodes: 2
  node: {type: dgx-h100}
network_transport: {kind: tcpxo, message_latency: 48.5us, bandwidth_share: 0.94}
)";
    Bench ring(path, {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    CollectiveCall ag = ring.Call(CollectiveKind::AllGather, 64 << 20);
    const double agUs = ring.model->PlanLatencyUs(ag, ring.model->Choose(ag));
    NS_TEST_EXPECT_MSG_EQ(Near(agUs, 8.4 + 15 * (14 + 48.5)), true, agUs);
    Bench tree(path, {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}});
    CollectiveCall ar = tree.Call(CollectiveKind::AllReduce, 64 << 20);
    const CollectivePlan plan = tree.model->Choose(ar);
    const double nccl = tree.model->CostTable(ar).latencyUs[int(NcclAlgorithm::Tree)][2];
    NS_TEST_EXPECT_MSG_EQ(Near(tree.model->PlanLatencyUs(ar, plan), nccl + 97.0), true,
                          tree.model->PlanLatencyUs(ar, plan) << " vs " << nccl);
}

void
CollectiveModelTestCase::BusBandwidthFactorsAreNcclTests()
{
    NS_TEST_EXPECT_MSG_EQ(CollectiveModel::BusBandwidthFactor(CollectiveKind::AllReduce, 8), 1.75,
                          "");
    NS_TEST_EXPECT_MSG_EQ(CollectiveModel::BusBandwidthFactor(CollectiveKind::AllGather, 8), 0.875,
                          "");
    NS_TEST_EXPECT_MSG_EQ(CollectiveModel::BusBandwidthFactor(CollectiveKind::ReduceScatter, 4),
                          0.75, "");
    NS_TEST_EXPECT_MSG_EQ(CollectiveModel::BusBandwidthFactor(CollectiveKind::Broadcast, 8), 1.0,
                          "");
}

namespace
{
/// A cluster of `nodes` DGX H100 with `nic` NICs on a rail-optimized fabric whose switches reduce
/// in the network (SHARPv3), written where Bench can read it.
std::string
WriteSharpCluster(int nodes, const std::string& nic,
                  const std::string& sharp = "{version: 3, source: test}")
{
    const std::string path = "/tmp/eidolon-collective-test-sharp-" + std::to_string(nodes) + "-" +
                             nic + "-" + std::to_string(std::hash<std::string>{}(sharp)) + ".yaml";
    std::ofstream(path) << "version: 1\ngpu_specs: " << ShippedTopologies() << "/gpus\n"
                        << "name: sharp-" << nodes << "node\ngenerate:\n  nodes: " << nodes
                        << "\n  node: {type: dgx-h100, nic_bandwidth: " << nic << "}\n"
                        << R"(  fabric:
    type: two-tier
    rail_optimized: true
    nodes_per_leaf: 4
    spines: 2
    oversubscription: 1
sharp: )" << sharp << "\n";
    return path;
}
} // namespace

void
CollectiveModelTestCase::CollNetCostsAndSelectionAreNcclsOnSharpSwitches()
{
    // 4 nodes x 8 H100, 8 x 400 Gb/s NICs, SHARP switches, NCCL 2.30.7 tables (tuning.cc):
    // every CollNet graph has the ring's 48 GB/s per channel (the network speed array tops at 48),
    // CollNetChain the ring's 8 channels, CollNetDirect 8 heads (one per NIC GPU).
    // CollNetChain: latency 0 + 2 x (8 - 1) x 2.8 + 30 = 69.2 us; bus 8 x 48 = 384, algorithm
    //   384 x 0.5 = 192 GB/s.
    // CollNetDirect: latency 2 x (min(1, 7) x 3.7 + 7 x 0.4) + 31 = 44.0 us; GPU/NIC ratio
    //   8 / 8 = 1 (no penalty), x 0.85 on sm90: 384 x 0.85 x 0.5 = 163.2 GB/s.
    // NVLS across nodes (needs CollNet): latency 25 + 18 = 43 us; min(40 x 0.85 x 7/8 x 2 = 59.5,
    //   48) x 8 = 384 bus, x 32 / 62 = 198.19 GB/s.
    const std::string path = WriteSharpCluster(4, "400Gbps");
    SimulatorGuard guard;
    Bench on(path, {{"NCCL_COLLNET_ENABLE", "1"}});
    const CollectiveCall big = on.Call(CollectiveKind::AllReduce, uint64_t(kGiB));
    const NcclCostTable t = on.model->CostTable(big);
    const int chain = int(NcclAlgorithm::CollNetChain);
    const int direct = int(NcclAlgorithm::CollNetDirect);
    const int nvls = int(NcclAlgorithm::Nvls);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[chain][2], 69.2), true, t.latencyUs[chain][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[chain][2], 192.0), true, t.bandwidthGBps[chain][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[direct][2], 44.0), true, t.latencyUs[direct][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[direct][2], 163.2), true,
                          t.bandwidthGBps[direct][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.latencyUs[nvls][2], 43.0), true, t.latencyUs[nvls][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t.bandwidthGBps[nvls][2], 384.0 * 32 / 62), true,
                          t.bandwidthGBps[nvls][2]);
    // NCCL 2.18.6's figures: CollNetChain 2 x 7 x 4.75 + 14 = 80.5 us, CollNetDirect
    // 2 x (8.0 + 7 x 0.5) + 10.7 = 33.7 us; the same bandwidth formulas.
    Bench old(path, {{"NCCL_COLLNET_ENABLE", "1"}});
    old.model->SetAttribute("NcclVersion", UintegerValue(21806));
    const NcclCostTable t218 = old.model->CostTable(big);
    NS_TEST_EXPECT_MSG_EQ(Near(t218.latencyUs[chain][2], 80.5), true, t218.latencyUs[chain][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t218.latencyUs[direct][2], 33.7), true, t218.latencyUs[direct][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(t218.bandwidthGBps[direct][2], 163.2), true,
                          t218.bandwidthGBps[direct][2]);
    // CollNet has no LL/LL128.
    NS_TEST_EXPECT_MSG_LT(t.timeUs[chain][0], 0, "");
    // AllGather through CollNetDirect (SHARPv3: the plugin has iallgather; a NIC per GPU): every
    // local rank a head, bus bandwidth 8 x min(bwIntra 48, 0.9 x bwInter 48) = 345.6 GB/s, no
    // conversion; latency CollNetDirect's, 44.0 us. NCCL 2.24.3: 8 x 48 x 0.85 (its corrective
    // ratio at eight ranks per node) = 326.4. NVLS across nodes gathers from 2.27 only.
    // CollNetChain never gathers.
    const CollectiveCall gather = on.Call(CollectiveKind::AllGather, uint64_t(kGiB));
    const NcclCostTable ag = on.model->CostTable(gather);
    NS_TEST_EXPECT_MSG_EQ(Near(ag.bandwidthGBps[direct][2], 345.6), true,
                          ag.bandwidthGBps[direct][2]);
    NS_TEST_EXPECT_MSG_EQ(Near(ag.latencyUs[direct][2], 44.0), true, ag.latencyUs[direct][2]);
    NS_TEST_EXPECT_MSG_GT(ag.timeUs[nvls][2], 0, "");
    NS_TEST_EXPECT_MSG_LT(ag.timeUs[chain][2], 0, "");
    Bench v224(path, {{"NCCL_COLLNET_ENABLE", "1"}});
    v224.model->SetAttribute("NcclVersion", UintegerValue(22403));
    const NcclCostTable ag224 = v224.model->CostTable(gather);
    NS_TEST_EXPECT_MSG_EQ(Near(ag224.bandwidthGBps[direct][2], 326.4), true,
                          ag224.bandwidthGBps[direct][2]);
    NS_TEST_EXPECT_MSG_LT(ag224.timeUs[nvls][2], 0, "");
    // NVLS across nodes on NCCL_MAX_NCHANNELS=4: 2.28+ take min(NVLS CTAs, the comm's 4
    // channels) (enqueue.cc topoGetAlgoInfo); 2.21 all 16 NVLS CTAs (2.22-2.27 raise the comm's
    // channels to them anyway).
    for (auto [version, channels] : {std::pair{22105u, 16}, std::pair{22803u, 4}})
    {
        Bench capped(
            path,
            {{"NCCL_COLLNET_ENABLE", "1"}, {"NCCL_MAX_NCHANNELS", "4"}, {"NCCL_ALGO", "NVLS"}});
        capped.model->SetAttribute("NcclVersion", UintegerValue(version));
        const CollectivePlan plan = capped.model->Choose(big);
        NS_TEST_EXPECT_MSG_EQ(int(plan.algorithm), nvls, version);
        NS_TEST_EXPECT_MSG_EQ(plan.channels, channels, version);
    }
    // CollNet adds half as many channels again where its graph is faster inside the node than
    // across it and nodes hold several ranks (connect.cc). 2 x 8 H100 on 200 Gb/s NICs: the ring
    // is 8 x 24 GB/s, 16 channels once duplicated (no sm90 doubling: 24 < 45 GB/s); the CollNet
    // graphs are 24 across nodes with their intra-node speed raised to 48, so
    // NCCL_COLLNET_ENABLE=1 makes 16 + 8 = 24 (the CollNetDirect graph decides up to 2.21, the
    // CollNetChain graph from 2.22).
    {
        const std::string slow = WriteSharpCluster(2, "200Gbps");
        for (uint32_t version : {22105u, 22403u})
        {
            for (bool enable : {false, true})
            {
                Bench s(slow, {{"NCCL_COLLNET_ENABLE", enable ? "1" : "0"}});
                s.model->SetAttribute("NcclVersion", UintegerValue(version));
                const NcclCommInfo c =
                    s.model->DescribeCommunicator(s.Call(CollectiveKind::AllReduce, 1).gpus);
                NS_TEST_EXPECT_MSG_EQ(c.collnet, enable, version);
                NS_TEST_EXPECT_MSG_EQ(c.ring.nChannels * c.ring.bwIntra, 8 * 24.0, version);
                if (enable)
                {
                    NS_TEST_EXPECT_MSG_EQ(c.collnetChain.bwInter, 24.0, version);
                    NS_TEST_EXPECT_MSG_EQ(c.collnetChain.bwIntra, 48.0, version);
                    const bool faster = c.collnetDirect.bwIntra > c.collnetDirect.bwInter;
                    NS_TEST_EXPECT_MSG_EQ(faster, true, version);
                }
                NS_TEST_EXPECT_MSG_EQ(c.channels, enable ? 24 : 16, version << " " << enable);
            }
        }
        // A CollNet op's channels (enqueue.cc topoGetAlgoInfo, 640 threads, 512 B a thread), on
        // those 24 channels, taken whole (no scheduler cells: CollNet ops are isCollnet):
        // - CollNetChain drops a channel while bytes < nc x 640 x 512 (320 KiB a channel): 4 MiB
        //   -> 12 channels, 1 MiB -> 3.
        // - CollNetDirect with 8 heads steps down towards 16, 8, 4, ... from 2.5 MiB a channel,
        //   halving that where it passes 24 and 12: 24 -> 16 at 1.25 MiB, 16 -> 8 at 0.625 MiB
        //   (halved at 12), then down to 6, where 6 x 0.625 = 3.75 MiB <= 4 MiB stops it.
        for (auto [algo, bytes, channels] :
             {std::tuple{"CollNetChain", 4u << 20, 12}, std::tuple{"CollNetChain", 1u << 20, 3},
              std::tuple{"CollNetDirect", 4u << 20, 6}})
        {
            Bench s(slow, {{"NCCL_COLLNET_ENABLE", "1"}, {"NCCL_ALGO", algo}});
            s.model->SetAttribute("NcclVersion", UintegerValue(22403));
            const CollectivePlan p = s.model->Choose(s.Call(CollectiveKind::AllReduce, bytes));
            NS_TEST_EXPECT_MSG_EQ(std::string(ToString(p.algorithm)), algo, "");
            NS_TEST_EXPECT_MSG_EQ(p.channels, channels, algo << " " << bytes);
        }
    }
    const NcclCostTable ag218 = old.model->CostTable(gather);
    NS_TEST_EXPECT_MSG_LT(ag218.timeUs[direct][2], 0, "");
    // tuning.cc admits CollNetDirect for AllGather/ReduceScatter from 2.20 (not 2.19).
    for (const auto& [version, offered] : {std::pair{21903u, false}, std::pair{22005u, true}})
    {
        Bench b(path, {{"NCCL_COLLNET_ENABLE", "1"}});
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        NS_TEST_EXPECT_MSG_EQ((b.model->CostTable(gather).timeUs[direct][2] > 0), offered, version);
    }
    // A plugin without iallgather / ireducescatter (SHARPv2 by default): rings only.
    const std::string v2 = WriteSharpCluster(4, "400Gbps", "{version: 2, source: test}");
    Bench noGather(v2, {{"NCCL_COLLNET_ENABLE", "1"}});
    const NcclCostTable agV2 = noGather.model->CostTable(gather);
    NS_TEST_EXPECT_MSG_LT(agV2.timeUs[direct][2], 0, "");
    NS_TEST_EXPECT_MSG_LT(agV2.timeUs[nvls][2], 0, "");
    NS_TEST_EXPECT_MSG_GT(noGather.model->CostTable(big).timeUs[direct][2], 0, "");
    const std::string v3off = WriteSharpCluster(
        4, "400Gbps", "{version: 3, allgather_reduce_scatter: false, source: test}");
    Bench offGather(v3off, {{"NCCL_COLLNET_ENABLE", "1"}});
    NS_TEST_EXPECT_MSG_LT(offGather.model->CostTable(gather).timeUs[direct][2], 0, "");

    // NCCL's choice at 1 GiB: NVLS (NVLS + SHARP) 43 + 2^30 / 198193 = 5460.6 us beats
    // CollNetChain 69.2 + 2^30 / 192000 = 5661.6, Ring Simple 1.4 x (8.4 + 56 x 3.4 + 6 x 14)
    // + 5417.6 = 5813.5, NVLSTree (latency 25 + 2 x 2 x 20.9, bandwidth <= NVLS's).
    NS_TEST_EXPECT_MSG_EQ(on.model->Choose(big).algorithm, NcclAlgorithm::Nvls, "");
    // Without NVLS: CollNetChain at 1 GiB (5661.6 < Ring's 5813.5 < Tree Simple's 120.4 +
    // 2^30 / (min(0.92 x 384, 8 x 36.0) x 0.5 = 144) = 7577); CollNetDirect at 8 MiB (44 +
    // 8388608 / 163200 = 95.4 us against CollNetChain 112.9, Tree LL128 >= 65.5 + 8388608 /
    // (min(0.92 x 384, 8 x 36.0) x 120/128 capped at 8 x 29 = 232, x 0.5) = 137.8, Ring LL128
    // 14 + 56 x 1.9 + 6 x 4 + 8388608 / (8 x 36.7 x 32/62) = 199.8).
    Bench noNvls(path, {{"NCCL_COLLNET_ENABLE", "1"}, {"NCCL_NVLS_ENABLE", "0"}});
    NS_TEST_EXPECT_MSG_EQ(noNvls.model->Choose(big).algorithm, NcclAlgorithm::CollNetChain, "");
    NS_TEST_EXPECT_MSG_EQ(
        noNvls.model->Choose(noNvls.Call(CollectiveKind::AllReduce, 8 << 20)).algorithm,
        NcclAlgorithm::CollNetDirect, "");
    // NCCL leaves CollNet (and NVLS across nodes) off without NCCL_COLLNET_ENABLE=1.
    Bench off(path);
    const NcclCostTable t0 = off.model->CostTable(big);
    NS_TEST_EXPECT_MSG_LT(t0.timeUs[chain][2], 0, "");
    NS_TEST_EXPECT_MSG_LT(t0.timeUs[nvls][2], 0, "");
    // NCCL_ALGO=CollNetChain is honoured with SHARP, and no longer warned about.
    Bench forced(path, {{"NCCL_COLLNET_ENABLE", "1"}, {"NCCL_ALGO", "COLLNETCHAIN"}});
    NS_TEST_EXPECT_MSG_EQ(
        forced.model->Choose(on.Call(CollectiveKind::AllReduce, 1 << 20)).algorithm,
        NcclAlgorithm::CollNetChain, "");
    NcclConfig c =
        NcclConfig::FromEnvironment({{"NCCL_ALGO", "COLLNETCHAIN"}, {"NCCL_COLLNET_ENABLE", "1"}});
    NS_TEST_EXPECT_MSG_EQ(c.UnmodelledWarning(23007, true), "", "");
    NS_TEST_EXPECT_MSG_NE(c.UnmodelledWarning(23007, false).find("no SHARP"), std::string::npos,
                          "");
    c.collnetEnable = 0;
    NS_TEST_EXPECT_MSG_NE(c.UnmodelledWarning(23007, true).find("NCCL_COLLNET_ENABLE"),
                          std::string::npos, c.UnmodelledWarning(23007, true));
}

std::vector<double>
CollectiveModelTestCase::CollNetDirectEnds(CollectiveKind kind)
{
    SimulatorGuard guard;
    Bench b(WriteSharpCluster(2, "100Gbps"),
            {{"NCCL_COLLNET_ENABLE", "1"}, {"NCCL_ALGO", "CollNetDirect"}});
    std::vector<CollectivePlan> plans;
    auto ends = Run(b, {b.Call(kind, 256u << 20)}, &plans);
    NS_TEST_EXPECT_MSG_EQ(plans[0].algorithm, NcclAlgorithm::CollNetDirect, "");
    return ends[0];
}

void
CollectiveModelTestCase::CollNetDirectAllreduceReducesInTheSwitch()
{
    // 2 nodes x 8 H100 with 100 Gb/s NICs (12.5 GB/s) on SHARP switches; NCCL_ALGO=CollNetDirect,
    // AllReduce of 256 MiB. 8 heads (GPU h of each node, NIC h): stream h carries S/8 = 32 MiB.
    // Inside a node every GPU sends the head its share over NVLink and gets the result back; the
    // heads send the node's sum up to the rail-h leaf once and receive the result once: NIC h's
    // link carries one stream each way (SHARP reduces in the leaf; no ring or tree traffic).
    // Bottleneck: the NIC port, 12.5 GB/s of wire at the network efficiency 0.96 (NVLink: a
    // GPU's uplink has 14 stream listings x 12.5 = 175 of 450 GB/s; PCIe one stream).
    // Time = latency 44.0 us (2 x (3.7 + 7 x 0.4) + 31) + 2^25 / 0.96 / 12.5e9 s = 2796.2 us.
    const std::vector<double> ends = CollNetDirectEnds(CollectiveKind::AllReduce);
    const double want = 44.0 + double(1 << 25) / 0.96 / 12.5e9 * 1e6;
    for (double e : ends)
    {
        NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-3), true, e << " us, want " << want);
    }
    // The same call as a ring moves 2 (n - 1) / n x S = 1.875 S through every rank, a node's
    // share of it through its NICs: 1.875 x S / 8 per NIC each way against CollNet's S / 8, so
    // the ring (network-bound here too) takes longer.
    SimulatorGuard guard;
    Bench ring(WriteSharpCluster(2, "100Gbps"), {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
    auto ringEnds = Run(ring, {ring.Call(CollectiveKind::AllReduce, 256u << 20)});
    NS_TEST_EXPECT_MSG_GT(ringEnds[0][0], ends[0], "");
}

void
CollectiveModelTestCase::CollNetDirectAllgatherGathersInTheSwitch()
{
    // 2 nodes x 8 H100 with 100 Gb/s NICs (12.5 GB/s), SHARPv3 (the plugin gathers and
    // scatters), NCCL_ALGO=CollNetDirect, AllGather of 256 MiB (S / 16 = 16 MiB from each of the
    // 16 ranks). Rail h (GPU h of both nodes) gathers in its leaf: each head
    // sends its S / 16 up and receives the rail's S / 8 = 32 MiB (both nodes' shares, its own
    // too) down its NIC, then writes it to its 7 local peers over NVLink (7 x 32 MiB on its
    // uplink, 7 x 32 MiB into each GPU's downlink from the 7 other heads: 224 MiB of 450 GB/s,
    // 0.52 ms, under the NIC's). Bottleneck: the NIC port down, 12.5 GB/s at the network
    // efficiency 0.96: 44.0 us (CollNetDirect's latency, 2 x (3.7 + 7 x 0.4) + 31) +
    // 2^25 / 0.96 / 12.5e9 s = 2840.2 us. ReduceScatter of 256 MiB is the mirror image: each
    // head gets rail h's parts from its 7 peers over NVLink, sends S / 8 up, gets S / 16 back.
    const double want = 44.0 + double(1 << 25) / 0.96 / 12.5e9 * 1e6;
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter})
    {
        for (double e : CollNetDirectEnds(kind))
        {
            NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-3), true, e << " us, want " << want);
        }
    }
}

namespace
{
std::vector<double>
CollectiveModelTestCase::RunGroup(Bench& b, const std::vector<CollectiveCall>& calls,
                                  std::vector<CollectivePlan>* plans)
{
    std::vector<double> ends(calls[0].gpus.size(), -1);
    auto* slot = &ends;
    auto run = b.model->BeginGroup(
        calls,
        [this, slot](uint32_t r)
        {
            NS_TEST_EXPECT_MSG_LT((*slot)[r], 0, "rank " << r << " reported twice");
            (*slot)[r] = Simulator::Now().GetNanoSeconds() / 1e3;
        },
        plans);
    for (uint32_t r = 0; r < calls[0].gpus.size(); ++r)
    {
        run->MemberStart(r, Seconds(0));
    }
    Simulator::Run();
    Simulator::Destroy();
    return ends;
}

void
CollectiveModelTestCase::GroupsAreLaidOutAsTheReleaseDoes()
{
    // Eight float AllReduces of 64 KiB in one group on one DGX H100 (enqueue.cc at each tag).
    Bench b("dgx-h100-1node");
    auto layout = [&](uint32_t version, const std::vector<uint64_t>& sizes,
                      std::map<std::string, std::string> env = {})
    {
        nccl::CostSettings settings;
        settings.ncclVersion = version;
        settings.config = NcclConfig::FromEnvironment(env);
        std::vector<CollectiveCall> calls;
        for (size_t i = 0; i < sizes.size(); ++i)
        {
            calls.push_back(b.Call(CollectiveKind::AllReduce, sizes[i], 0, 1 + i));
            calls.back().dtype = 7; // ncclFloat32
            calls.back().redop = 0; // ncclSum
        }
        b.model->SetAttribute("NcclVersion", UintegerValue(version));
        const NcclCommInfo comm = b.model->DescribeCommunicator(calls[0].gpus);
        return std::make_pair(comm, nccl::LayOutGroup(calls, comm, settings));
    };
    const std::vector<uint64_t> eight(8, 65536);
    {
        // 2.30.7: one aggregate (all within 4x of the smallest), chosen on 512 KiB: Ring/LL on
        // 16 channels (the call alone would be; LL traffic counts 4x from 2.26). A task's traffic
        // is 64 KiB x 2 x 4 = 512 KiB, the kind's 4 MiB over min(8 x 16, 24) = 24 channels:
        // 174,768 B a channel (4 MiB / 24 rounded up to 16). Cells hold 32 KiB of traffic, 4 KiB
        // of data: 16 a task, at most ceil(174,768 / 32 Ki) = 6 a channel. Task 0: 6 + 6 + 4
        // cells on channels 0-2 (4 x 32 Ki = 131,072 B of channel 2 used); task 1: 2 cells to
        // fill channel 2, then 6, 6, 2 on channels 3-5; task 2: 4, 6, 6 on 5-7 (channel 7 full:
        // the next starts on 8); tasks 3-5 repeat 0-2 from channel 8, tasks 6-7 repeat 0-1 from
        // 16: channels 0-21 run, 22 and 23 stay idle.
        auto [comm, l] = layout(23007, eight);
        NS_TEST_EXPECT_MSG_EQ(comm.channels, 24, "");
        for (size_t i = 0; i < 8; ++i)
        {
            NS_TEST_EXPECT_MSG_EQ(l.plans[i].algorithm, NcclAlgorithm::Ring, "one aggregate");
            NS_TEST_EXPECT_MSG_EQ(l.plans[i].protocol, NcclProtocol::LL, "one aggregate");
            NS_TEST_EXPECT_MSG_EQ(l.plans[i].channels, 16, "the aggregate's channels");
        }
        const int lo[8] = {0, 2, 5, 8, 10, 13, 16, 18};
        const int hi[8] = {2, 5, 7, 10, 13, 15, 18, 21};
        for (int k = 0; k < 8; ++k)
        {
            NS_TEST_EXPECT_MSG_EQ(l.channelLo[k], lo[k], "task " << k);
            NS_TEST_EXPECT_MSG_EQ(l.channelHi[k], hi[k], "task " << k);
        }
        std::ostringstream text;
        for (size_t c = 0; c < l.lanes.size(); ++c)
        {
            for (const auto& piece : l.lanes[c])
            {
                text << " " << c << ":" << piece.call << "/" << piece.bytes;
            }
        }
        NS_TEST_EXPECT_MSG_EQ(l.lanes.size(), 22u, text.str());
        using P = std::vector<std::pair<uint32_t, uint64_t>>;
        auto lane = [&](size_t c)
        {
            P out;
            for (const auto& piece : c < l.lanes.size() ? l.lanes[c] : l.lanes.front())
            {
                out.emplace_back(piece.call, piece.bytes);
            }
            return out;
        };
        NS_TEST_EXPECT_MSG_EQ((lane(0) == P{{0, 24576}}), true, "");
        NS_TEST_EXPECT_MSG_EQ((lane(2) == P{{0, 16384}, {1, 8192}}), true, "");
        NS_TEST_EXPECT_MSG_EQ((lane(5) == P{{1, 8192}, {2, 16384}}), true, "");
        NS_TEST_EXPECT_MSG_EQ((lane(7) == P{{2, 24576}}), true, "");
        NS_TEST_EXPECT_MSG_EQ((lane(18) == P{{6, 16384}, {7, 8192}}), true, "");
        NS_TEST_EXPECT_MSG_EQ((lane(19) == P{{7, 24576}}), true, "");
        NS_TEST_EXPECT_MSG_EQ((lane(21) == P{{7, 8192}}), true, "");
    }
    {
        // Forced Ring/Simple on 2.30.7 (24 channels, 32 KiB minimum traffic): 48 x 64 KiB, 6 MiB
        // of traffic, 256 KiB a channel: each task is 4 cells of 32 KiB (128 KiB), so channel c
        // runs tasks 2c and 2c + 1 whole, one after the other.
        std::vector<uint64_t> many(48, 65536);
        auto [comm, l] = layout(23007, many, {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
        NS_TEST_EXPECT_MSG_EQ(comm.channels, 24, "");
        NS_TEST_EXPECT_MSG_EQ(l.lanes.size(), 24u, "");
        for (size_t c = 0; c < l.lanes.size(); ++c)
        {
            NS_TEST_EXPECT_MSG_EQ(l.lanes[c].size(), 2u, "channel " << c);
            for (size_t k = 0; k < l.lanes[c].size() && k < 2; ++k)
            {
                NS_TEST_EXPECT_MSG_EQ(l.lanes[c][k].call, 2 * c + k, "channel " << c);
                NS_TEST_EXPECT_MSG_EQ(l.lanes[c][k].bytes, 65536u, "channel " << c);
            }
        }
        // 2 x 48 MiB: 4 x 48 MiB / 24 = 8 MiB of traffic a channel, 16 KiB cells (32 KiB of
        // traffic), 3072 of them a task, 256 a channel: task 0 on channels 0-11, task 1 on
        // 12-23, 4 MiB each.
        auto [comm2, big] = layout(23007, {48u << 20, 48u << 20},
                                   {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
        NS_TEST_EXPECT_MSG_EQ(big.channelLo[0], 0, "");
        NS_TEST_EXPECT_MSG_EQ(big.channelHi[0], 11, "");
        NS_TEST_EXPECT_MSG_EQ(big.channelLo[1], 12, "");
        NS_TEST_EXPECT_MSG_EQ(big.channelHi[1], 23, "");
        for (const auto& lane : big.lanes)
        {
            NS_TEST_EXPECT_MSG_EQ(lane.size(), 1u, "");
            NS_TEST_EXPECT_MSG_EQ(lane[0].bytes, uint64_t(4) << 20, "");
        }
    }
    {
        // 2.18.5: the per-channel size halves to 512 B, so a 64 KiB call asks for 128 channels
        // and takes all C: every channel runs the eight calls in issue order, 64 KiB / C each.
        auto [comm, l] = layout(21805, eight, {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
        const size_t C = size_t(comm.channels);
        NS_TEST_EXPECT_MSG_EQ(l.lanes.size(), C, "");
        for (const auto& lane : l.lanes)
        {
            NS_TEST_EXPECT_MSG_EQ(lane.size(), 8u, "");
            for (size_t k = 0; k < lane.size(); ++k)
            {
                NS_TEST_EXPECT_MSG_EQ(lane[k].call, k, "");
                NS_TEST_EXPECT_MSG_EQ(lane[k].bytes, 65536u / C, "");
            }
        }
    }
    {
        // 2.21.5, 2 x 48 MiB of Ring/Simple: both take every channel C, so 96 MiB / C a channel,
        // filled in order: the first call on channels 0 .. C/2 - 1, the second on the rest.
        auto [comm, l] = layout(22105, {48u << 20, 48u << 20},
                                {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}});
        const int C = comm.channels;
        NS_TEST_EXPECT_MSG_EQ(l.lanes.size(), size_t(C), "");
        NS_TEST_EXPECT_MSG_EQ(l.channelHi[0], C / 2 - 1, "");
        NS_TEST_EXPECT_MSG_EQ(l.channelLo[1], C / 2, "");
        for (const auto& lane : l.lanes)
        {
            NS_TEST_EXPECT_MSG_EQ(lane.size(), 1u, "");
            NS_TEST_EXPECT_MSG_EQ(lane[0].bytes, (uint64_t(96) << 20) / uint64_t(C), "");
        }
    }
    {
        // 2.21.5, 2 x 1 MiB of Ring/LL128 (24 channels): 2 MiB / 24 channels = 87,392 B a channel
        // (87,381.3 rounded up to 16 B), but a channel's part is cut up to a multiple of 480 B x
        // 20 warps = 9,600 B (640 threads: 2 MiB is no small op), so channels take 96,000 B:
        // the first call 10 x 96,000 on channels 0-9 and its last 88,576 B on 10 (full), the
        // second the same on 11-21. Without the alignment the first ends on channel 11 and the
        // second starts there with the 128 B left.
        auto [comm, l] =
            layout(22105, {1u << 20, 1u << 20}, {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL128"}});
        NS_TEST_EXPECT_MSG_EQ(comm.channels, 24, "");
        NS_TEST_EXPECT_MSG_EQ(l.plans[0].protocol, NcclProtocol::LL128, "");
        NS_TEST_EXPECT_MSG_EQ(l.channelLo[0], 0, "");
        NS_TEST_EXPECT_MSG_EQ(l.channelHi[0], 10, "");
        NS_TEST_EXPECT_MSG_EQ(l.channelLo[1], 11, "");
        NS_TEST_EXPECT_MSG_EQ(l.channelHi[1], 21, "");
        NS_TEST_EXPECT_MSG_EQ(l.lanes.size(), 22u, "");
        for (size_t c = 0; c < l.lanes.size(); ++c)
        {
            const uint64_t want = c == 10 || c == 21 ? 88576u : 96000u;
            NS_TEST_EXPECT_MSG_EQ(l.lanes[c].size(), 1u, "channel " << c);
            NS_TEST_EXPECT_MSG_EQ(l.lanes[c].front().bytes, want, "channel " << c);
        }
    }
    {
        // 2.24.3: calls more than 4x apart are aggregated apart; the one of another function is
        // a bin of its own. 64 KiB, 128 KiB, 1 MiB AllReduce: {64, 128} KiB and {1 MiB}.
        nccl::CostSettings settings;
        settings.ncclVersion = 22403;
        b.model->SetAttribute("NcclVersion", UintegerValue(22403));
        std::vector<CollectiveCall> calls = {b.Call(CollectiveKind::AllReduce, 65536),
                                             b.Call(CollectiveKind::AllReduce, 131072),
                                             b.Call(CollectiveKind::AllReduce, 1 << 20)};
        const NcclCommInfo comm = b.model->DescribeCommunicator(calls[0].gpus);
        const auto l = nccl::LayOutGroup(calls, comm, settings);
        CollectiveCall small = calls[0];
        small.bytes = 65536 + 131072;
        small.pipeOps = 1;
        const CollectivePlan want = b.model->Choose(small);
        NS_TEST_EXPECT_MSG_EQ(l.plans[0].algorithm, want.algorithm, "");
        NS_TEST_EXPECT_MSG_EQ(l.plans[1].protocol, want.protocol, "");
        const CollectivePlan alone = b.model->Choose(calls[2]);
        NS_TEST_EXPECT_MSG_EQ(l.plans[2].algorithm, alone.algorithm, "");
        NS_TEST_EXPECT_MSG_EQ(l.plans[2].protocol, alone.protocol, "");
        // NCCL's estimate is the aggregate's: 192 KiB for the first two, 1 MiB for the third.
        NS_TEST_EXPECT_MSG_EQ(Near(l.plans[0].ncclEstimateUs, want.ncclEstimateUs, 1e-9), true,
                              l.plans[0].ncclEstimateUs << " us, want " << want.ncclEstimateUs);
        NS_TEST_EXPECT_MSG_EQ(Near(l.plans[1].ncclEstimateUs, want.ncclEstimateUs, 1e-9), true, "");
        NS_TEST_EXPECT_MSG_EQ(Near(l.plans[2].ncclEstimateUs, alone.ncclEstimateUs, 1e-9), true,
                              l.plans[2].ncclEstimateUs << " us, want " << alone.ncclEstimateUs);
    }
}

void
CollectiveModelTestCase::GroupRunsAsOneKernel()
{
    // NCCL_ALGO=Ring, NCCL_PROTO=Simple on one DGX H100 (2.30.7, 24 channels), as
    // ring_allreduce_time_is_alpha_beta: 24 flows share each 450 GB/s link, the ring moves
    // 2(n-1)/n of the data at 370.8 GB/s, and a loop of a channel's ring (8 ranks x 2 MiB) pays
    // NCCL's 8.4 us base and 14 x 3.4 = 47.6 us of steps.
    const std::map<std::string, std::string> env = {{"NCCL_ALGO", "Ring"},
                                                    {"NCCL_PROTO", "Simple"}};
    // Two calls of 48 MiB of `kind` in one group: every rank's end, and the calls' plans.
    auto twoOf48MiB = [&](CollectiveKind kind, std::vector<CollectivePlan>* plans)
    {
        SimulatorGuard guard;
        Bench b("dgx-h100-1node", env);
        return RunGroup(b, {b.Call(kind, 48u << 20, 0, 1), b.Call(kind, 48u << 20, 0, 2)}, plans);
    };
    {
        // 2 x 48 MiB in one group: channels 0-11 run the first, 12-23 the second, 4 MiB each
        // (one loop): 56 us + 1.75 x 96 MiB / 370.8 GB/s, as one 96 MiB AllReduce would.
        // Issued apart, one after the other, each pays its 56 us.
        std::vector<CollectivePlan> plans;
        const auto ends = twoOf48MiB(CollectiveKind::AllReduce, &plans);
        const double want = 56.0 + 1.75 * double(96u << 20) / kNvlPayload * 1e6;
        for (double e : ends)
        {
            NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-4), true, e << " us, want " << want);
        }
        NS_TEST_EXPECT_MSG_EQ(plans.size(), 2u, "");
        NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 12, "the channels a call spans");
    }
    {
        // 48 x 64 KiB: channel c runs calls 2c and 2c + 1 one after the other. The first pays
        // 56 us, the second its steps alone (47.6 us: the kernel was launched once); each moves
        // 1.75 x 64 KiB on each of the 24 channels at once, 1.75 x 24 x 64 KiB / 370.8 GB/s.
        SimulatorGuard guard;
        Bench b("dgx-h100-1node", env);
        std::vector<CollectiveCall> calls;
        for (uint64_t i = 0; i < 48; ++i)
        {
            calls.push_back(b.Call(CollectiveKind::AllReduce, 65536, 0, 1 + i));
        }
        const auto ends = RunGroup(b, calls);
        const double wave = 1.75 * 24 * 65536.0 / kNvlPayload * 1e6;
        const double want = 56.0 + 47.6 + 2 * wave;
        for (double e : ends)
        {
            NS_TEST_EXPECT_MSG_EQ(Near(e, want, 1e-4), true, e << " us, want " << want);
        }
    }
    {
        // NVLS pipelines a channel's pieces: NCCL_ALGO=NVLS, 64 KiB AllReduces on one DGX H100
        // (2.30.7, 16 NVLS CTAs). 16 of them: 16 x 128 KiB of traffic over 16 channels, one call
        // a channel; 32: two a channel. The second piece of a channel follows the first without
        // its latency or pipeline fill, so it adds less than the first wave less its latency.
        auto groupEnd = [&](int calls)
        {
            SimulatorGuard guard;
            Bench b("dgx-h100-1node", {{"NCCL_ALGO", "NVLS"}});
            std::vector<CollectiveCall> group;
            for (int i = 0; i < calls; ++i)
            {
                group.push_back(b.Call(CollectiveKind::AllReduce, 65536, 0, 1 + i));
            }
            std::vector<CollectivePlan> plans;
            const auto ends = RunGroup(b, group, &plans);
            NS_TEST_EXPECT_MSG_EQ(plans[0].algorithm, NcclAlgorithm::Nvls, "");
            NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 1, "one channel a call");
            CollectivePlan one = plans[0];
            one.channels = 1;
            Bench again("dgx-h100-1node", {{"NCCL_ALGO", "NVLS"}});
            const double latency =
                again.model->PlanLatencyUs(again.Call(CollectiveKind::AllReduce, 65536), one);
            return std::make_pair(*std::max_element(ends.begin(), ends.end()), latency);
        };
        const auto [one, latency] = groupEnd(16);
        const auto [two, unused] = groupEnd(32);
        NS_TEST_EXPECT_MSG_GT(latency, 0.0, "");
        NS_TEST_EXPECT_MSG_GT(two, one, "");
        NS_TEST_EXPECT_MSG_LT_OR_EQ(two - one, one - latency + 1e-3,
                                    "first wave " << one << " us (latency " << latency
                                                  << " us), both " << two << " us");
    }
    {
        // Two 48 MiB Broadcasts from rank 0 in a group: each a chain on 12 channels (the layout
        // of the AllReduces above, traffic once the data). A chain's rank is done when its own
        // hop out has landed, so the root ends first and the chain's tail last. The root's
        // uplink carries all 96 MiB once: no rank is done before 96 MiB / 370.8 GB/s.
        std::vector<CollectivePlan> plans;
        const auto ends = twoOf48MiB(CollectiveKind::Broadcast, &plans);
        NS_TEST_EXPECT_MSG_EQ(plans[0].channels, 12, "");
        const double floor = double(96u << 20) / kNvlPayload * 1e6;
        double last = 0;
        for (double e : ends)
        {
            NS_TEST_EXPECT_MSG_GT_OR_EQ(e, floor, "no rank before the root has sent it all");
            last = std::max(last, e);
        }
        NS_TEST_EXPECT_MSG_LT(ends[0], last, "the root is done before the chain's tail");
    }
}

class CollectiveModelTestSuite : public TestSuite
{
public:
    CollectiveModelTestSuite()
        : TestSuite("eidolon-collective-model", UNIT)
    {
        using C = CollectiveModelTestCase;
        const std::pair<const char*, C::Check> checks[] = {
            {"communicator_matches_nccl_search_on_dgx_h100",
             &C::CommunicatorMatchesNcclSearchOnDgxH100},
            {"cost_table_is_ncclS_for_8_h100", &C::CostTableIsNcclsFor8H100},
            {"selection_by_size_follows_nccl_rule", &C::SelectionBySizeFollowsNcclRule},
            {"ring_allreduce_time_is_alpha_beta", &C::RingAllreduceTimeIsAlphaBeta},
            {"max_channels_changes_time_as_predicted", &C::MaxChannelsChangesTimeAsPredicted},
            {"nvls_beats_ring_on_8_h100_and_its_time_by_hand",
             &C::NvlsBeatsRingOn8H100AndItsTimeByHand},
            {"tree_across_two_nodes", &C::TreeAcrossTwoNodes},
            {"two_concurrent_allreduces_share_the_links", &C::TwoConcurrentAllreducesShareTheLinks},
            {"environment_overrides", &C::EnvironmentOverrides},
            {"no_algorithm_is_what_the_release_does", &C::NoAlgorithmIsWhatTheReleaseDoes},
            {"invalid_environment_names_the_variable", &C::InvalidEnvironmentNamesTheVariable},
            {"unread_variables_are_named", &C::UnreadVariablesAreNamed},
            {"sendrecv_ranks_end_when_their_own_transfers_do",
             &C::SendrecvRanksEndWhenTheirOwnTransfersDo},
            {"sendrecv_waits_for_both_ranks_and_self_copies_run_at_hbm_speed",
             &C::SendrecvWaitsForBothRanksAndSelfCopiesRunAtHbmSpeed},
            {"sendrecv_ll_threshold_is_the_releases", &C::SendrecvLlThresholdIsTheReleases},
            {"nvls_ctas_and_chunks_are_the_releases", &C::NvlsCtasAndChunksAreTheReleases},
            {"p2p_ops_split_as_the_release_does", &C::P2pOpsSplitAsTheReleaseDoes},
            {"alltoall_follows_ncclS_p2p_rounds_and_channel_sharing",
             &C::AlltoallFollowsNcclsP2pRoundsAndChannelSharing},
            {"collective_waits_for_its_last_rank_and_reports_every_rank_once",
             &C::CollectiveWaitsForItsLastRankAndReportsEveryRankOnce},
            {"other_collectives_move_what_nccl_moves", &C::OtherCollectivesMoveWhatNcclMoves},
            {"emulated_version_changes_the_tables", &C::EmulatedVersionChangesTheTables},
            {"each_claimed_release_has_its_tables_and_rules",
             &C::EachClaimedReleaseHasItsTablesAndRules},
            {"collnet_in_nccl_algo_is_named_in_a_warning", &C::CollNetInNcclAlgoIsNamedInAWarning},
            {"collnet_costs_and_selection_are_ncclS_on_sharp_switches",
             &C::CollNetCostsAndSelectionAreNcclsOnSharpSwitches},
            {"collnet_direct_allreduce_reduces_in_the_switch",
             &C::CollNetDirectAllreduceReducesInTheSwitch},
            {"collnet_direct_allgather_gathers_in_the_switch",
             &C::CollNetDirectAllgatherGathersInTheSwitch},
            {"ring_across_nodes_pays_the_network_hop_every_step_of_every_loop",
             &C::RingAcrossNodesPaysTheNetworkHopEveryStepOfEveryLoop},
            {"ll_ring_across_nodes_crosses_every_node_boundary_on_its_longest_path",
             &C::LlRingAcrossNodesCrossesEveryNodeBoundaryOnItsLongestPath},
            {"chain_across_nodes_stores_and_forwards_slices_and_steps",
             &C::ChainAcrossNodesStoresAndForwardsSlicesAndSteps},
            {"small_ring_ops_run_with_fewer_threads", &C::SmallRingOpsRunWithFewerThreads},
            {"tree_ll128_across_nodes_holds_a_chunk_at_every_network_hop",
             &C::TreeLl128AcrossNodesHoldsAChunkAtEveryNetworkHop},
            {"tree_ll_across_nodes_holds_a_step_at_every_network_hop",
             &C::TreeLlAcrossNodesHoldsAStepAtEveryNetworkHop},
            {"small_ops_take_the_channels_the_releases_scheduler_gives",
             &C::SmallOpsTakeTheChannelsTheReleasesSchedulerGives},
            {"network_transport_costs_every_network_message",
             &C::NetworkTransportCostsEveryNetworkMessage},
            {"bus_bandwidth_factors_are_nccl_tests", &C::BusBandwidthFactorsAreNcclTests},
            {"p2p_disabled_routes_intra_node_traffic_through_the_host",
             &C::P2pDisabledRoutesIntraNodeTrafficThroughTheHost},
            {"p2p_level_keeps_p2p_up_to_the_path_it_names", &C::P2pLevelKeepsP2pUpToThePathItNames},
            {"shm_disabled_makes_each_gpu_a_node_of_its_own",
             &C::ShmDisabledMakesEachGpuANodeOfItsOwn},
            {"config_ctas_bound_the_channels", &C::ConfigCtasBoundTheChannels},
            {"ll128_follows_the_nics_place", &C::Ll128FollowsTheNicsPlace},
            {"comm_nodes_are_nccls_nodes", &C::CommNodesAreNcclsNodes},
            {"groups_are_laid_out_as_the_release_does", &C::GroupsAreLaidOutAsTheReleaseDoes},
            {"group_runs_as_one_kernel", &C::GroupRunsAsOneKernel},
        };
        for (const auto& [name, check] : checks)
        {
            AddTestCase(new CollectiveModelTestCase(name, check), TestCase::QUICK);
        }
    }
};

CollectiveModelTestSuite g_collectiveModelTestSuite;
} // namespace
