// FlowModel inside ns-3: completions as events, ECMP, ring all-reduce against the alpha-beta
// formula, trace sources, provisional prediction with rollback. Expected values worked by hand.
#include "eidolon-test-checks.h"
#include "star-topology.h"

#include "ns3/cluster-helper.h"
#include "ns3/collective-helper.h"
#include "ns3/config.h"
#include "ns3/flow-model.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/topology.h"
#include "ns3/uinteger.h"

#include <map>
#include <set>
#include <string>
#include <utility>

using namespace ns3;
using namespace ns3::eidolon;
using namespace ::eidolon::test;

namespace
{
Ptr<Topology>
Star(uint32_t n, double bw, int64_t latNs)
{
    return ::eidolon::test::StarTopology(n, bw, latNs, DeviceKind::NvSwitch);
}

Ptr<FlowModel>
Install(Ptr<Topology> t)
{
    Ptr<FlowModel> m = CreateObject<FlowModel>();
    m->SetTopology(t);
    return m;
}

struct SimulatorGuard
{
    ~SimulatorGuard() { Simulator::Destroy(); }
};

/// FlowModel as an ns-3 object: one TestCase per check, each check a member below.
class FlowModelTestCase : public TestCase
{
public:
    /// One of the checks below.
    using Check = void (FlowModelTestCase::*)();

    FlowModelTestCase(const std::string& name, Check check)
        : TestCase(name)
        , m_check(check)
    {
    }

    void CompletionIsAnNs3EventAtTheFinishTime();
    void EcmpSpreadsFlowsAndSharesFollow();
    void RingAllreduceMatchesAlphaBeta();
    void RingAllreduceOnTheDefaultCluster();
    void TraceSourcesFire();
    void PredictionThenLateFlowRollsBack();
    void AutoCommitKeepsHistoryBounded();

private:
    void DoRun() override { (this->*m_check)(); }

    Check m_check;
};
} // namespace

void
FlowModelTestCase::CompletionIsAnNs3EventAtTheFinishTime()
{
    // gpu0 -> switch -> gpu1, 10 GB/s per link, 1 us per link. 1 GB takes 0.1 s, plus 2 us.
    SimulatorGuard guard;
    auto m = Install(Star(2, 10e9, 1000));
    FlowSpec spec;
    spec.src = 0;
    spec.dst = 1;
    spec.bytes = 1000000000;
    spec.start = MicroSeconds(5);
    Time seenAt, recorded;
    m->AddFlow(spec,
               [&](const FlowRecord& r)
               {
                   seenAt = Simulator::Now();
                   recorded = r.finish;
               });
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(recorded.GetNanoSeconds(), 5000 + 100000000 + 2000, "");
    NS_TEST_EXPECT_MSG_EQ(seenAt, recorded, "");
}

void
FlowModelTestCase::EcmpSpreadsFlowsAndSharesFollow()
{
    // Two leaves joined by four spines (links 10 GB/s, 100 ns); 8 GPUs under each leaf (links
    // 100 GB/s). 64 flows of 1 GB: GPU i -> GPU 8+i, eight tags per pair. ECMP hashes each flow
    // onto a spine. Flows on one spine share only its 10 GB/s (the GPU links carry at most
    // 8 x 10/k GB/s, far below 100), so a spine with k flows gives each 10/k GB/s and they all
    // drain together at k x 0.1 s; four 100 ns hops later they finish.
    SimulatorGuard guard;
    Ptr<Topology> t = Create<Topology>();
    for (uint32_t i = 0; i < 16; ++i)
    {
        Device g;
        g.kind = DeviceKind::Gpu;
        g.name = "gpu" + std::to_string(i);
        g.node = int32_t(i / 8);
        g.localIndex = int32_t(i % 8);
        t->AddDevice(g);
    }
    Device sw;
    sw.kind = DeviceKind::Switch;
    sw.tier = 1;
    sw.name = "leafA";
    uint32_t a = t->AddDevice(sw);
    sw.name = "leafB";
    uint32_t b = t->AddDevice(sw);
    sw.tier = 2;
    for (int s = 0; s < 4; ++s)
    {
        sw.name = "spine" + std::to_string(s);
        uint32_t spine = t->AddDevice(sw);
        t->AddLink({a, spine, 10e9, 100, LinkKind::Net});
        t->AddLink({b, spine, 10e9, 100, LinkKind::Net});
    }
    for (uint32_t i = 0; i < 16; ++i)
    {
        t->AddLink({i, i < 8 ? a : b, 100e9, 100, LinkKind::Net});
    }
    NS_TEST_EXPECT_MSG_EQ(t->PathCount(0, 8), 4u, "");
    auto m = Install(t);
    std::map<uint32_t, std::vector<int64_t>> finishBySpine;
    for (uint32_t f = 0; f < 64; ++f)
    {
        FlowSpec spec;
        spec.src = f % 8;
        spec.dst = 8 + f % 8;
        spec.bytes = 1000000000;
        spec.tag = f;
        m->AddFlow(spec,
                   [&](const FlowRecord& r)
                   {
                       NS_TEST_ASSERT_MSG_EQ(r.path.size(), 4u, "");
                       uint32_t spine =
                           t->ChannelTo(r.path[1]); // gpu -> leafA -> spine -> leafB -> gpu
                       finishBySpine[spine].push_back(r.finish.GetNanoSeconds());
                   });
    }
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(finishBySpine.size(), 4u, ""); // 64 flows reach every spine
    size_t total = 0;
    for (const auto& [spine, finishes] : finishBySpine)
    {
        const int64_t k = int64_t(finishes.size());
        for (int64_t f : finishes)
        {
            NS_TEST_EXPECT_MSG_EQ(f, k * 100000000 + 400,
                                  "spine " << spine << " with " << k << " flows");
        }
        total += finishes.size();
    }
    NS_TEST_EXPECT_MSG_EQ(total, 64u, "");
}

void
FlowModelTestCase::RingAllreduceMatchesAlphaBeta()
{
    // 4 GPUs on a switch, links 100 GB/s and 1 us, so a ring edge (gpu-switch-gpu) has latency
    // alpha = 2 us and bandwidth B = 100 GB/s. Ring all-reduce of S bytes:
    //   T = 2(n-1) alpha + 2(n-1)/n S / B = 6 x 2 us + 1.5 x S / B.
    // S = 1 GB: T = 12 us + 15 ms = 15,012,000 ns. With two channels each link carries both
    // rings at half rate and each ring half the data: the same T. Stepwise gives it too: six
    // steps of a 250 MB chunk at 100 GB/s (2.5 ms) plus 2 us each.
    const int64_t expected = 12000 + 15000000;
    for (auto mode : {CollectiveHelper::RingMode::Pipelined, CollectiveHelper::RingMode::Stepwise})
    {
        for (uint32_t channels : {1u, 2u})
        {
            SimulatorGuard guard;
            auto t = Star(4, 100e9, 1000);
            auto m = Install(t);
            CollectiveHelper coll(m);
            std::vector<std::vector<uint32_t>> rings(channels, {0, 1, 2, 3});
            Time done;
            coll.RingAllReduce(
                rings, 1000000000, Seconds(0), [&](Time at) { done = at; }, mode);
            Simulator::Run();
            NS_TEST_EXPECT_MSG_EQ(done.GetNanoSeconds(), expected,
                                  "mode " << int(mode) << " channels " << channels);
        }
    }
}

void
FlowModelTestCase::RingAllreduceOnTheDefaultCluster()
{
    // topologies/default.yaml: 2 nodes x 8 H100, one 400 Gb/s (50 GB/s) NIC per GPU. Rail-aligned
    // rings put each of the 8 channels on its own NIC in each direction, so each ring runs at
    // 50 GB/s and busbw = 8 x 50 GB/s = 400 GB/s for a large buffer (latency is negligible at
    // 4 GiB: a few tens of us against ~20 ms).
    SimulatorGuard guard;
    ClusterHelper cluster;
    auto t = cluster.ReadTopology("default");
    auto m = cluster.Install(t);
    CollectiveHelper coll(m);
    const uint64_t bytes = 4ULL << 30;
    Time done;
    coll.RingAllReduce(CollectiveHelper::RailAlignedRings(*t, 8), bytes, Seconds(0),
                       [&](Time at) { done = at; });
    Simulator::Run();
    double busbw = double(bytes) / done.GetSeconds() * CollectiveHelper::AllReduceBusFactor(16);
    EIDOLON_TEST_EXPECT_CLOSE(busbw / 1e9, 400.0, 0.005, "");
}

void
FlowModelTestCase::TraceSourcesFire()
{
    // One flow saturating gpu0->switch: utilization 1.0 on that channel while it runs.
    SimulatorGuard guard;
    auto m = Install(Star(2, 10e9, 0));
    int started = 0, finished = 0;
    double maxUtil = 0;
    using RecordCb = Callback<void, const FlowRecord&>;
    m->TraceConnectWithoutContext("FlowStarted", RecordCb([&](const FlowRecord&) { ++started; }));
    m->TraceConnectWithoutContext("FlowFinished", RecordCb([&](const FlowRecord&) { ++finished; }));
    m->TraceConnectWithoutContext("LinkUtilization",
                                  Callback<void, uint32_t, double>(
                                      [&](uint32_t, double v) { maxUtil = std::max(maxUtil, v); }));
    FlowSpec spec;
    spec.src = 0;
    spec.dst = 1;
    spec.bytes = 1000;
    m->AddFlow(spec, FlowModel::FinishCallback());
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(started, 1, "");
    NS_TEST_EXPECT_MSG_EQ(finished, 1, "");
    NS_TEST_EXPECT_MSG_EQ(maxUtil, 1.0, "");
}

void
FlowModelTestCase::PredictionThenLateFlowRollsBack()
{
    // 10 GB/s star. A (1 GB, start 0) is predicted alone: 0.1 s. Then B (1 GB, start 0.05 s) is
    // posted on the same path: A sent 0.5 GB alone, then both share 5 GB/s: A drains at 0.15 s,
    // B at 0.2 s (0.5 GB at 5 then 0.5 GB at 10). Each callback fires once, at the final time.
    SimulatorGuard guard;
    auto m = Install(Star(2, 10e9, 0));
    std::map<int, std::vector<int64_t>> calls;
    FlowSpec spec;
    spec.src = 0;
    spec.dst = 1;
    spec.bytes = 1000000000;
    FlowId a = m->AddFlow(spec, [&](const FlowRecord& r)
                          { calls[0].push_back(r.finish.GetNanoSeconds()); });
    NS_TEST_EXPECT_MSG_EQ(m->PredictFinish(a).GetNanoSeconds(), 100000000, "");
    spec.start = MilliSeconds(50);
    m->AddFlow(spec, [&](const FlowRecord& r) { calls[1].push_back(r.finish.GetNanoSeconds()); });
    NS_TEST_EXPECT_MSG_EQ(m->GetStats().rollbacks, 1u, "");
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(calls[0], std::vector<int64_t>{150000000}, "");
    NS_TEST_EXPECT_MSG_EQ(calls[1], std::vector<int64_t>{200000000}, "");
}

void
FlowModelTestCase::AutoCommitKeepsHistoryBounded()
{
    // 10,000 back-to-back flows; with AutoCommit the undo history never holds more than the
    // handful of events around the current time.
    SimulatorGuard guard;
    auto m = Install(Star(2, 1e9, 0));
    size_t peak = 0;
    std::function<void(int)> post = [&](int left)
    {
        FlowSpec spec;
        spec.src = 0;
        spec.dst = 1;
        spec.bytes = 1000;
        spec.start = Simulator::Now();
        m->AddFlow(spec,
                   [&, left](const FlowRecord&)
                   {
                       peak = std::max(peak, m->GetEngine().HistoryEntries());
                       if (left > 1)
                       {
                           post(left - 1);
                       }
                   });
    };
    post(10000);
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(m->GetStats().flowsFinished, 10000u, "");
    NS_TEST_EXPECT_MSG_LT_OR_EQ(peak, 8u, "");
    NS_TEST_EXPECT_MSG_LT_OR_EQ(m->GetEngine().LiveFlowSlots(), 2u, "");
}

namespace
{
class FlowModelTestSuite : public TestSuite
{
public:
    FlowModelTestSuite()
        : TestSuite("eidolon-flow-model", UNIT)
    {
        const std::pair<const char*, FlowModelTestCase::Check> checks[] = {
            {"completion_is_an_ns3_event_at_the_finish_time",
             &FlowModelTestCase::CompletionIsAnNs3EventAtTheFinishTime},
            {"ecmp_spreads_flows_and_shares_follow",
             &FlowModelTestCase::EcmpSpreadsFlowsAndSharesFollow},
            {"ring_allreduce_matches_alpha_beta",
             &FlowModelTestCase::RingAllreduceMatchesAlphaBeta},
            {"ring_allreduce_on_the_default_cluster",
             &FlowModelTestCase::RingAllreduceOnTheDefaultCluster},
            {"trace_sources_fire", &FlowModelTestCase::TraceSourcesFire},
            {"prediction_then_late_flow_rolls_back",
             &FlowModelTestCase::PredictionThenLateFlowRollsBack},
            {"auto_commit_keeps_history_bounded",
             &FlowModelTestCase::AutoCommitKeepsHistoryBounded},
        };
        for (const auto& [name, check] : checks)
        {
            AddTestCase(new FlowModelTestCase(name, check), TestCase::QUICK);
        }
    }
};

FlowModelTestSuite g_flowModelTestSuite;
} // namespace
