// The fair-share engine over time: finish times worked out by hand, rollback against replay in
// time order, commit and pinning.
#include "eidolon-test-checks.h"

#include "ns3/fluid-network.h"
#include "ns3/test.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>

using namespace ns3;
using namespace ns3::eidolon;
using Input = FluidNetwork::FlowInput;

namespace
{
Input
Flow(std::vector<uint32_t> path, double bytes, int64_t start, int64_t latency = 0, double cap = 0)
{
    Input in;
    in.path = std::move(path);
    in.bytes = bytes;
    in.start = start;
    in.latencyNs = latency;
    in.rateCap = cap;
    return in;
}

/// FluidNetwork over time: one TestCase per check, each check a member below.
class FluidNetworkTestCase : public TestCase
{
public:
    /// One of the checks below.
    using Check = void (FluidNetworkTestCase::*)();

    FluidNetworkTestCase(const std::string& name, Check check)
        : TestCase(name)
        , m_check(check)
    {
    }

    void SingleFlowWithLatency();
    void ArrivalThenSharing();
    void ThreeLinkExampleOverTime();
    void RateCapOverTime();
    void OnlyTheTouchedComponentIsResolved();
    void ZeroBytesAndEmptyPathFinishAtStartPlusLatency();
    void LateFlowRollsBackAndReplays();
    void ShuffledInsertionWithRollbacksMatchesTimeOrder();
    void CommitTrimsHistoryAndRetiresFlows();
    void LiveFlowsKeepTheirChannelsAsRetiredOnesAreReclaimed();
    void PinnedFlowKeepsItsTime();
    void BadInputIsRefused();

private:
    void DoRun() override { (this->*m_check)(); }

    Check m_check;
};
} // namespace

void
FluidNetworkTestCase::SingleFlowWithLatency()
{
    // 1 MB over a 1 GB/s channel takes 1e6 B / 1e9 B/s = 1 ms = 1,000,000 ns from its start at
    // 500 ns; three hops of 1 us each add 3,000 ns to the finish.
    FluidNetwork net({1e9});
    net.Add(1, Flow({0}, 1e6, 500, 3000));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1000500, "");
    NS_TEST_EXPECT_MSG_EQ(net.FinishTime(1), 1003500, "");
}

void
FluidNetworkTestCase::ArrivalThenSharing()
{
    // Channel of 10 MB/s. A (10 MB) starts at 0 and runs alone for 0.5 s: 5 MB sent.
    // B (10 MB) arrives at 0.5 s; both get 5 MB/s. A's last 5 MB take 1 s: A drains at 1.5 s.
    // By then B has 5 MB sent; alone at 10 MB/s its last 5 MB take 0.5 s: B drains at 2.0 s.
    FluidNetwork net({10e6});
    net.Add(1, Flow({0}, 10e6, 0));
    net.Add(2, Flow({0}, 10e6, 500000000));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1500000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(2), 2000000000, "");
}

void
FluidNetworkTestCase::ThreeLinkExampleOverTime()
{
    // Channels 0: 10, 1: 4, 2: 10 (bytes/s x 1e9). Flow a crosses all three, b uses 0, c uses 1,
    // d uses 2 (the classic case: a = c = 2, b = d = 8 GB/s). Sizes: a and c 2 GB -> drain at
    // 1 s; b 8 GB -> 1 s; d 16 GB: 8 GB/s for 1 s (8 GB), then alone at 10 GB/s for the other
    // 8 GB -> 0.8 s more: 1.8 s.
    FluidNetwork net({10e9, 4e9, 10e9});
    net.Add(1, Flow({0, 1, 2}, 2e9, 0));
    net.Add(2, Flow({0}, 8e9, 0));
    net.Add(3, Flow({1}, 2e9, 0));
    net.Add(4, Flow({2}, 16e9, 0));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(2), 1000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(3), 1000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(4), 1800000000, "");
}

void
FluidNetworkTestCase::RateCapOverTime()
{
    // One 10 GB/s channel; A capped at 2 GB/s with 2 GB, B free with 8 GB: A gets 2, B 8:
    // both drain at 1 s.
    FluidNetwork net({10e9});
    net.Add(1, Flow({0}, 2e9, 0, 0, 2e9));
    net.Add(2, Flow({0}, 8e9, 0));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(2), 1000000000, "");
}

void
FluidNetworkTestCase::OnlyTheTouchedComponentIsResolved()
{
    // Two disjoint channels with a flow each; a third flow arrives on channel 1 only. The re-solve
    // at its arrival covers channel 1's two flows, not the flow on channel 0.
    FluidNetwork net({1e9, 1e9});
    net.Add(1, Flow({0}, 1e9, 0));
    net.Add(2, Flow({1}, 1e9, 0));
    net.AdvanceTo(0);
    uint64_t before = net.GetStats().flowsResolved;
    net.Add(3, Flow({1}, 1e9, 10));
    net.AdvanceTo(10);
    NS_TEST_EXPECT_MSG_EQ(net.GetStats().flowsResolved - before, 2u, "");
}

void
FluidNetworkTestCase::ZeroBytesAndEmptyPathFinishAtStartPlusLatency()
{
    FluidNetwork net({1e9});
    net.Add(1, Flow({0}, 0, 100, 50));
    net.Add(2, Flow({}, 4096, 200, 0));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.FinishTime(1), 150, "");
    NS_TEST_EXPECT_MSG_EQ(net.FinishTime(2), 200, "");
}

void
FluidNetworkTestCase::LateFlowRollsBackAndReplays()
{
    // The arrival_then_sharing case again, but B is added after the engine already computed A
    // alone (A would drain at 1 s). Adding B at 0.5 s rolls back and gives the same answer.
    FluidNetwork net({10e6});
    net.Add(1, Flow({0}, 10e6, 0));
    net.AdvanceUntilDone(1);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1000000000, "");
    net.Add(2, Flow({0}, 10e6, 500000000));
    NS_TEST_EXPECT_MSG_EQ(net.GetStats().rollbacks, 1u, "");
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1500000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(2), 2000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.CompletionCount(), 2u, "");
}

void
FluidNetworkTestCase::ShuffledInsertionWithRollbacksMatchesTimeOrder()
{
    // For random flow sets, adding flows in start order and adding them shuffled (with the engine
    // run ahead between adds, so that most adds roll back) must give the same finish times.
    std::mt19937_64 rng(2026);
    for (int trial = 0; trial < 40; ++trial)
    {
        const uint32_t nChannels = 3 + rng() % 10;
        std::vector<double> capacity;
        for (uint32_t c = 0; c < nChannels; ++c)
        {
            capacity.push_back(1e9 * double(1 + rng() % 16));
        }
        const uint32_t nFlows = 5 + rng() % 80;
        std::vector<Input> flows;
        for (uint32_t f = 0; f < nFlows; ++f)
        {
            std::vector<uint32_t> path;
            uint32_t hops = 1 + rng() % 4;
            for (uint32_t h = 0; h < hops; ++h)
            {
                path.push_back(rng() % nChannels);
            }
            // Starts on a coarse grid so that simultaneous arrivals happen too.
            flows.push_back(Flow(path, double(1000 + rng() % 10000000),
                                 int64_t(rng() % 50) * 100000, int64_t(rng() % 5000),
                                 (rng() % 5 == 0) ? 2e9 : 0.0));
        }
        FluidNetwork ordered(capacity);
        std::vector<uint32_t> byStart(nFlows);
        for (uint32_t i = 0; i < nFlows; ++i)
        {
            byStart[i] = i;
        }
        std::stable_sort(byStart.begin(), byStart.end(),
                         [&](uint32_t a, uint32_t b) { return flows[a].start < flows[b].start; });
        for (uint32_t i : byStart)
        {
            ordered.AdvanceTo(flows[i].start - 1); // never ahead of the next arrival: no rollback
            ordered.Add(i, flows[i]);
        }
        ordered.AdvanceTo(FluidNetwork::kNever);
        NS_TEST_EXPECT_MSG_EQ(ordered.GetStats().rollbacks, 0u, "");

        FluidNetwork shuffled(capacity);
        std::vector<uint32_t> order = byStart;
        std::shuffle(order.begin(), order.end(), rng);
        for (uint32_t i : order)
        {
            shuffled.Add(i, flows[i]);
            shuffled.AdvanceTo(int64_t(rng() % 60) * 100000); // run ahead (provisional)
        }
        shuffled.AdvanceTo(FluidNetwork::kNever);
        NS_TEST_EXPECT_MSG_GT(shuffled.GetStats().rollbacks, 0u, "");
        for (uint32_t i = 0; i < nFlows; ++i)
        {
            int64_t a = ordered.FinishTime(i);
            int64_t b = shuffled.FinishTime(i);
            NS_TEST_EXPECT_MSG_LT_OR_EQ(std::llabs(a - b), 1,
                                        "trial " << trial << " flow " << i << ": " << a << " vs "
                                                 << b);
        }
    }
}

void
FluidNetworkTestCase::CommitTrimsHistoryAndRetiresFlows()
{
    // 1000 back-to-back flows on one channel, each 1 us long. After committing at the end the undo
    // log is empty and every flow's slot is free again; before, history grows with the flows.
    FluidNetwork net({1e9});
    for (uint32_t i = 0; i < 1000; ++i)
    {
        net.Add(i, Flow({0}, 1000, int64_t(i) * 1000));
    }
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_GT_OR_EQ(net.HistoryEntries(), 2000u,
                                ""); // at least an activation and a completion each
    NS_TEST_EXPECT_MSG_EQ(net.LiveFlowSlots(), 1000u, "");
    size_t before = net.HistoryBytes();
    net.Commit(500000); // flows 0..498 drained (and finished) before 500 us
    NS_TEST_EXPECT_MSG_LT(net.HistoryBytes(), before, "");
    NS_TEST_EXPECT_MSG_EQ(net.LiveFlowSlots(), 501u, "");
    NS_TEST_EXPECT_MSG_EQ((net.GetStatus(10) == FluidNetwork::Status::Retired), true, "");
    EIDOLON_TEST_EXPECT_THROW(net.RollbackTo(400000), std::logic_error);
    EIDOLON_TEST_EXPECT_THROW(net.Add(5000, Flow({0}, 1, 100)), std::logic_error);
    net.Commit(2000000);
    NS_TEST_EXPECT_MSG_EQ(net.HistoryEntries(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(net.LiveFlowSlots(), 0u, "");
    // Slots are reused: new flows do not grow the flow table.
    net.Add(7000, Flow({0}, 1000, 3000000));
    NS_TEST_EXPECT_MSG_EQ(net.LiveFlowSlots(), 1u, "");
}

void
FluidNetworkTestCase::LiveFlowsKeepTheirChannelsAsRetiredOnesAreReclaimed()
{
    // Five channels of 1 GB/s. 6000 back-to-back flows of 1000 B on channels 0, 1, 2 (1 us each:
    // flow i from i us to i + 1 us), and L, 10 MB on channels 3 and 4 from 0 (10 ms alone). The
    // commit at 5 ms retires flows 0..4998, whose uses then outnumber the live ones: the flows'
    // use storage is reclaimed while L and flows 4999..5999 run. M, 2 MB on channel 4 from 6 ms,
    // must then share channel 4 with L: at 6 ms L has 4 MB left; both at 0.5 GB/s, M drains at
    // 6 + 4 = 10 ms, L with 2 MB left then runs alone and drains at 12 ms. (Were L's channels
    // lost, M would drain at 8 ms.)
    FluidNetwork net({1e9, 1e9, 1e9, 1e9, 1e9});
    for (uint32_t i = 0; i < 6000; ++i)
    {
        net.Add(i, Flow({0, 1, 2}, 1000, int64_t(i) * 1000));
    }
    net.Add(100000, Flow({3, 4}, 10e6, 0));
    net.AdvanceTo(5000000);
    net.Commit(5000000);
    NS_TEST_EXPECT_MSG_EQ((net.GetStatus(4000) == FluidNetwork::Status::Retired), true, "");
    NS_TEST_EXPECT_MSG_EQ(net.GetStats().useCompactions, 1u, "");
    net.Add(200000, Flow({4}, 2e6, 6000000));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(5999), 6000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(200000), 10000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(100000), 12000000, "");
}

void
FluidNetworkTestCase::PinnedFlowKeepsItsTime()
{
    // 1 GB/s channel. A (1 GB) alone drains at 1 s; the caller sees that and pins it. B (1 GB)
    // then arrives at 0.5 s. A fair share would give A 0.5 GB/s and drain it at 1.5 s, but A is
    // pinned: it takes the 1 GB/s it needs to keep 1 s, B waits, then runs alone from 1 s to 2 s.
    // That is one causality violation of 0.5 s.
    FluidNetwork net({1e9});
    net.Add(1, Flow({0}, 1e9, 0));
    net.AdvanceUntilDone(1);
    net.Pin(1);
    net.Add(2, Flow({0}, 1e9, 500000000));
    net.AdvanceTo(FluidNetwork::kNever);
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(1), 1000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.DrainTime(2), 2000000000, "");
    NS_TEST_EXPECT_MSG_EQ(net.GetStats().causalityViolations, 1u, "");
    NS_TEST_EXPECT_MSG_EQ(net.GetStats().violationNs, 500000000, "");
}

void
FluidNetworkTestCase::BadInputIsRefused()
{
    FluidNetwork net({1e9});
    net.Add(1, Flow({0}, 10, 0));
    EIDOLON_TEST_EXPECT_THROW(net.Add(1, Flow({0}, 10, 0)), std::logic_error); // id taken
    EIDOLON_TEST_EXPECT_THROW(net.Add(2, Flow({3}, 10, 0)), std::logic_error); // no channel 3
    EIDOLON_TEST_EXPECT_THROW(net.Add(3, Flow({0}, -1, 0)), std::logic_error); // negative size
    EIDOLON_TEST_EXPECT_THROW(FluidNetwork({0.0}), std::logic_error); // channel without capacity
}

namespace
{
class FluidNetworkTestSuite : public TestSuite
{
public:
    FluidNetworkTestSuite()
        : TestSuite("eidolon-fluid-network", UNIT)
    {
        const std::pair<const char*, FluidNetworkTestCase::Check> checks[] = {
            {"single_flow_with_latency", &FluidNetworkTestCase::SingleFlowWithLatency},
            {"arrival_then_sharing", &FluidNetworkTestCase::ArrivalThenSharing},
            {"three_link_example_over_time", &FluidNetworkTestCase::ThreeLinkExampleOverTime},
            {"rate_cap_over_time", &FluidNetworkTestCase::RateCapOverTime},
            {"only_the_touched_component_is_resolved",
             &FluidNetworkTestCase::OnlyTheTouchedComponentIsResolved},
            {"zero_bytes_and_empty_path_finish_at_start_plus_latency",
             &FluidNetworkTestCase::ZeroBytesAndEmptyPathFinishAtStartPlusLatency},
            {"late_flow_rolls_back_and_replays",
             &FluidNetworkTestCase::LateFlowRollsBackAndReplays},
            {"shuffled_insertion_with_rollbacks_matches_time_order",
             &FluidNetworkTestCase::ShuffledInsertionWithRollbacksMatchesTimeOrder},
            {"commit_trims_history_and_retires_flows",
             &FluidNetworkTestCase::CommitTrimsHistoryAndRetiresFlows},
            {"live_flows_keep_their_channels_as_retired_ones_are_reclaimed",
             &FluidNetworkTestCase::LiveFlowsKeepTheirChannelsAsRetiredOnesAreReclaimed},
            {"pinned_flow_keeps_its_time", &FluidNetworkTestCase::PinnedFlowKeepsItsTime},
            {"bad_input_is_refused", &FluidNetworkTestCase::BadInputIsRefused},
        };
        for (const auto& [name, check] : checks)
        {
            AddTestCase(new FluidNetworkTestCase(name, check), TestCase::QUICK);
        }
    }
};

FluidNetworkTestSuite g_fluidNetworkTestSuite;
} // namespace
