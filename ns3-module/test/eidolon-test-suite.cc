/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * ns-3 TestSuites of the eidolon module (run by ns-3's TestRunner: test.py or, here, ctest).
 */
#include "ns3/flow-model.h"
#include "ns3/network-model.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/topology.h"
#include "ns3/type-id.h"

using namespace ns3;
using namespace ns3::eidolon;

namespace
{

/// The module's TypeIds are registered with ns-3 and found by name, as attribute paths need.
class TypeRegistrationTestCase : public TestCase
{
public:
    TypeRegistrationTestCase()
        : TestCase("eidolon TypeIds are registered with ns-3")
    {
    }

private:
    void DoRun() override
    {
        TypeId tid;
        NS_TEST_ASSERT_MSG_EQ(TypeId::LookupByNameFailSafe("ns3::eidolon::NetworkModel", &tid),
                              true,
                              "NetworkModel not registered");
        NS_TEST_ASSERT_MSG_EQ(tid.GetGroupName(), "Eidolon", "wrong group");
        NS_TEST_ASSERT_MSG_EQ(tid.GetParent(), Object::GetTypeId(), "wrong parent");
        NS_TEST_ASSERT_MSG_EQ(TypeId::LookupByNameFailSafe("ns3::eidolon::FlowModel", &tid),
                              true,
                              "FlowModel not registered");
        NS_TEST_ASSERT_MSG_EQ(tid.GetParent(), NetworkModel::GetTypeId(), "FlowModel's parent");
        TypeId::AttributeInformation info;
        NS_TEST_ASSERT_MSG_EQ(tid.LookupAttributeByName("EcmpSeed", &info), true, "attribute");
        NS_TEST_ASSERT_MSG_EQ((tid.LookupTraceSourceByName("FlowFinished") != nullptr),
                              true,
                              "trace source");
    }
};

/// Shortest-path routing never crosses a GPU, and ECMP picks among equal paths by flow hash.
class RoutingTestCase : public TestCase
{
public:
    RoutingTestCase()
        : TestCase("topology routing avoids GPUs and spreads over ECMP paths")
    {
    }

private:
    void DoRun() override
    {
        // gpu0 - sw0 - gpu1, and gpu0 - sw1 - gpu1: two equal two-hop paths; gpu2 hangs off gpu1
        // only, so it must be unreachable (gpu1 does not forward).
        Topology t;
        Device g;
        g.kind = DeviceKind::Gpu;
        g.node = 0;
        for (int i = 0; i < 3; ++i)
        {
            g.name = "gpu" + std::to_string(i);
            g.localIndex = i;
            t.AddDevice(g);
        }
        Device s;
        s.kind = DeviceKind::Switch;
        s.name = "sw0";
        uint32_t sw0 = t.AddDevice(s);
        s.name = "sw1";
        uint32_t sw1 = t.AddDevice(s);
        t.AddLink({0, sw0, 1e9, 100, LinkKind::Net});
        t.AddLink({0, sw1, 1e9, 100, LinkKind::Net});
        t.AddLink({1, sw0, 1e9, 100, LinkKind::Net});
        t.AddLink({1, sw1, 1e9, 100, LinkKind::Net});
        t.AddLink({1, 2, 1e9, 100, LinkKind::Net});
        NS_TEST_ASSERT_MSG_EQ(t.PathCount(0, 1), 2, "two equal-cost paths gpu0->gpu1");
        bool seen[2] = {false, false};
        for (uint64_t h = 0; h < 64; ++h)
        {
            auto p = t.Route(0, 1, h);
            NS_TEST_ASSERT_MSG_EQ(p.size(), 2, "two hops");
            NS_TEST_ASSERT_MSG_EQ(t.ChannelTo(p.back()), 1u, "ends at gpu1");
            seen[t.ChannelTo(p[0]) == sw0 ? 0 : 1] = true;
            NS_TEST_ASSERT_MSG_EQ((t.Route(0, 1, h) == p), true, "deterministic per hash");
        }
        NS_TEST_ASSERT_MSG_EQ(seen[0] && seen[1], true, "ECMP uses both switches");
        NS_TEST_ASSERT_MSG_EQ(t.PathCount(0, 2), 0, "gpu2 only reachable through a GPU");
    }
};

/// Two flows on one bottleneck through the ns-3 object: each gets half, and the finishes are
/// ns-3 events at the times worked out by hand.
class FlowModelSharingTestCase : public TestCase
{
public:
    FlowModelSharingTestCase()
        : TestCase("FlowModel shares a bottleneck and finishes flows as ns-3 events")
    {
    }

private:
    void DoRun() override
    {
        // gpu0 and gpu1 both send to gpu2 over a switch; links 8 GB/s, 250 ns each.
        // The switch->gpu2 channel is shared: 4 GB/s each. 1 GB (gpu0) drains at 0.25 s.
        // gpu1 sends 2 GB: 1 GB by 0.25 s, then alone at 8 GB/s for 1 GB more: 0.375 s.
        // Both paths have two hops: finish = drain + 500 ns.
        Ptr<Topology> t = Create<Topology>();
        Device d;
        d.kind = DeviceKind::Gpu;
        d.node = 0;
        for (int i = 0; i < 3; ++i)
        {
            d.name = "gpu" + std::to_string(i);
            d.localIndex = i;
            t->AddDevice(d);
        }
        d.kind = DeviceKind::Switch;
        d.name = "sw";
        uint32_t sw = t->AddDevice(d);
        for (uint32_t i = 0; i < 3; ++i)
        {
            t->AddLink({i, sw, 8e9, 250, LinkKind::Net});
        }
        Ptr<FlowModel> model = CreateObject<FlowModel>();
        model->SetTopology(t);
        std::vector<int64_t> finish(2, -1);
        for (uint32_t src = 0; src < 2; ++src)
        {
            FlowSpec spec;
            spec.src = src;
            spec.dst = 2;
            spec.bytes = (src + 1) * 1000000000ULL;
            model->AddFlow(spec, [&finish, src](const FlowRecord& r) {
                NS_ASSERT(Simulator::Now() == r.finish);
                finish[src] = r.finish.GetNanoSeconds();
            });
        }
        Simulator::Run();
        Simulator::Destroy();
        NS_TEST_ASSERT_MSG_EQ(finish[0], 250000500, "gpu0's flow");
        NS_TEST_ASSERT_MSG_EQ(finish[1], 375000500, "gpu1's flow");
    }
};

class EidolonTestSuite : public TestSuite
{
public:
    EidolonTestSuite()
        : TestSuite("eidolon", UNIT)
    {
        AddTestCase(new TypeRegistrationTestCase, TestCase::QUICK);
        AddTestCase(new RoutingTestCase, TestCase::QUICK);
        AddTestCase(new FlowModelSharingTestCase, TestCase::QUICK);
    }
};

EidolonTestSuite g_eidolonTestSuite;

} // namespace
