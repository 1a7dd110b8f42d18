// FlowModel inside ns-3: completions as events, ECMP, ring all-reduce against the alpha-beta
// formula, trace sources, provisional prediction with rollback. Expected values worked by hand.
#define BOOST_TEST_MODULE flow_model
#include "cluster-helper.h"
#include "collective-helper.h"
#include "flow-model.h"
#include "star-topology.h"
#include "topology.h"

#include "ns3/config.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <boost/test/unit_test.hpp>

#include <map>
#include <set>

using namespace ns3;
using namespace ns3::eidolon;

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
} // namespace

BOOST_AUTO_TEST_CASE(completion_is_an_ns3_event_at_the_finish_time)
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
    m->AddFlow(spec, [&](const FlowRecord& r) {
        seenAt = Simulator::Now();
        recorded = r.finish;
    });
    Simulator::Run();
    BOOST_TEST(recorded.GetNanoSeconds() == 5000 + 100000000 + 2000);
    BOOST_TEST(seenAt == recorded);
}

BOOST_AUTO_TEST_CASE(ecmp_spreads_flows_and_shares_follow)
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
    BOOST_TEST(t->PathCount(0, 8) == 4u);
    auto m = Install(t);
    std::map<uint32_t, std::vector<int64_t>> finishBySpine;
    for (uint32_t f = 0; f < 64; ++f)
    {
        FlowSpec spec;
        spec.src = f % 8;
        spec.dst = 8 + f % 8;
        spec.bytes = 1000000000;
        spec.tag = f;
        m->AddFlow(spec, [&](const FlowRecord& r) {
            BOOST_REQUIRE(r.path.size() == 4u);
            uint32_t spine = t->ChannelTo(r.path[1]); // gpu -> leafA -> spine -> leafB -> gpu
            finishBySpine[spine].push_back(r.finish.GetNanoSeconds());
        });
    }
    Simulator::Run();
    BOOST_TEST(finishBySpine.size() == 4u); // 64 flows reach every spine
    size_t total = 0;
    for (const auto& [spine, finishes] : finishBySpine)
    {
        const int64_t k = int64_t(finishes.size());
        for (int64_t f : finishes)
        {
            BOOST_TEST(f == k * 100000000 + 400, "spine " << spine << " with " << k << " flows");
        }
        total += finishes.size();
    }
    BOOST_TEST(total == 64u);
}

BOOST_AUTO_TEST_CASE(ring_allreduce_matches_alpha_beta)
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
            coll.RingAllReduce(rings, 1000000000, Seconds(0), [&](Time at) { done = at; }, mode);
            Simulator::Run();
            BOOST_TEST(done.GetNanoSeconds() == expected,
                       "mode " << int(mode) << " channels " << channels);
        }
    }
}

BOOST_AUTO_TEST_CASE(ring_allreduce_on_the_default_cluster)
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
    BOOST_TEST(busbw / 1e9 == 400.0, boost::test_tools::tolerance(0.005));
}

BOOST_AUTO_TEST_CASE(trace_sources_fire)
{
    // One flow saturating gpu0->switch: utilization 1.0 on that channel while it runs.
    SimulatorGuard guard;
    auto m = Install(Star(2, 10e9, 0));
    int started = 0, finished = 0;
    double maxUtil = 0;
    using RecordCb = Callback<void, const FlowRecord&>;
    m->TraceConnectWithoutContext("FlowStarted", RecordCb([&](const FlowRecord&) { ++started; }));
    m->TraceConnectWithoutContext("FlowFinished", RecordCb([&](const FlowRecord&) { ++finished; }));
    m->TraceConnectWithoutContext(
        "LinkUtilization",
        Callback<void, uint32_t, double>([&](uint32_t, double v) { maxUtil = std::max(maxUtil, v); }));
    FlowSpec spec;
    spec.src = 0;
    spec.dst = 1;
    spec.bytes = 1000;
    m->AddFlow(spec, FlowModel::FinishCallback());
    Simulator::Run();
    BOOST_TEST(started == 1);
    BOOST_TEST(finished == 1);
    BOOST_TEST(maxUtil == 1.0);
}

BOOST_AUTO_TEST_CASE(prediction_then_late_flow_rolls_back)
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
    FlowId a = m->AddFlow(spec, [&](const FlowRecord& r) { calls[0].push_back(r.finish.GetNanoSeconds()); });
    BOOST_TEST(m->PredictFinish(a).GetNanoSeconds() == 100000000);
    spec.start = MilliSeconds(50);
    m->AddFlow(spec, [&](const FlowRecord& r) { calls[1].push_back(r.finish.GetNanoSeconds()); });
    BOOST_TEST(m->GetStats().rollbacks == 1u);
    Simulator::Run();
    BOOST_TEST(calls[0] == std::vector<int64_t>{150000000}, boost::test_tools::per_element());
    BOOST_TEST(calls[1] == std::vector<int64_t>{200000000}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(auto_commit_keeps_history_bounded)
{
    // 10,000 back-to-back flows; with AutoCommit the undo history never holds more than the
    // handful of events around the current time.
    SimulatorGuard guard;
    auto m = Install(Star(2, 1e9, 0));
    size_t peak = 0;
    std::function<void(int)> post = [&](int left) {
        FlowSpec spec;
        spec.src = 0;
        spec.dst = 1;
        spec.bytes = 1000;
        spec.start = Simulator::Now();
        m->AddFlow(spec, [&, left](const FlowRecord&) {
            peak = std::max(peak, m->GetEngine().HistoryEntries());
            if (left > 1)
            {
                post(left - 1);
            }
        });
    };
    post(10000);
    Simulator::Run();
    BOOST_TEST(m->GetStats().flowsFinished == 10000u);
    BOOST_TEST(peak <= 8u);
    BOOST_TEST(m->GetEngine().LiveFlowSlots() <= 2u);
}
