// Test support: the smallest interesting cluster, n GPUs under one switch.
#ifndef EIDOLON_TEST_STAR_TOPOLOGY_H
#define EIDOLON_TEST_STAR_TOPOLOGY_H

#include "ns3/ptr.h"
#include "ns3/topology.h"

#include <string>

namespace eidolon::test
{
/// n GPUs (node 0) each joined to one switch by a link of `bw` bytes/s and `latNs` latency, so
/// GPU-to-GPU paths are two hops and a GPU's link is the only resource it shares.
inline ns3::Ptr<ns3::eidolon::Topology>
StarTopology(uint32_t n, double bw, int64_t latNs,
             ns3::eidolon::DeviceKind switchKind = ns3::eidolon::DeviceKind::Switch)
{
    using namespace ns3::eidolon;
    ns3::Ptr<Topology> t = ns3::Create<Topology>();
    for (uint32_t i = 0; i < n; ++i)
    {
        Device g;
        g.kind = DeviceKind::Gpu;
        g.name = "gpu" + std::to_string(i);
        g.node = 0;
        g.localIndex = int32_t(i);
        t->AddDevice(g);
    }
    Device s;
    s.kind = switchKind;
    s.name = "switch";
    const uint32_t sw = t->AddDevice(s);
    const LinkKind kind = switchKind == DeviceKind::NvSwitch ? LinkKind::NvLink : LinkKind::Net;
    for (uint32_t i = 0; i < n; ++i)
    {
        t->AddLink({i, sw, bw, latNs, kind});
    }
    return t;
}
} // namespace eidolon::test

#endif
