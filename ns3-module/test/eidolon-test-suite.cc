/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * ns-3 TestSuites of the eidolon module (run by ns-3's TestRunner: test.py or, here, ctest).
 */
#include "ns3/network-model.h"
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

class EidolonTestSuite : public TestSuite
{
public:
    EidolonTestSuite()
        : TestSuite("eidolon", UNIT)
    {
        AddTestCase(new TypeRegistrationTestCase, TestCase::QUICK);
        AddTestCase(new RoutingTestCase, TestCase::QUICK);
    }
};

EidolonTestSuite g_eidolonTestSuite;

} // namespace
