/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "flow-path-routing.h"

#include "ns3/ipv4-route.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/output-stream-wrapper.h"
#include "ns3/tcp-header.h"
#include "ns3/udp-header.h"

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonFlowPathRouting");
NS_OBJECT_ENSURE_REGISTERED(FlowPathRouting);

TypeId
FlowPathRouting::GetTypeId()
{
    static TypeId tid = TypeId("ns3::eidolon::FlowPathRouting")
                            .SetParent<Ipv4RoutingProtocol>()
                            .SetGroupName("Eidolon")
                            .AddConstructor<FlowPathRouting>();
    return tid;
}

FlowPathRouting::FlowPathRouting() = default;
FlowPathRouting::~FlowPathRouting() = default;

void
FlowPathRouting::DoDispose()
{
    m_ipv4 = nullptr;
    m_flows.clear();
    m_resolver = nullptr;
    Ipv4RoutingProtocol::DoDispose();
}

void
FlowPathRouting::AddFlowEntry(Ipv4Address destination, uint16_t port, Hop hop)
{
    m_flows[Key(destination, port)] = hop;
}

void
FlowPathRouting::RemoveFlowEntry(Ipv4Address destination, uint16_t port)
{
    m_flows.erase(Key(destination, port));
}

bool
FlowPathRouting::Lookup(Ptr<const Packet> p, const Ipv4Header& header, Hop& hop) const
{
    const Ipv4Address dst = header.GetDestination();
    if (p && !m_flows.empty())
    {
        uint16_t ports[2] = {0, 0};
        if (header.GetProtocol() == 6 && p->GetSize() >= 20)
        {
            TcpHeader tcp;
            p->PeekHeader(tcp);
            ports[0] = tcp.GetDestinationPort();
            ports[1] = tcp.GetSourcePort();
        }
        else if (header.GetProtocol() == 17 && p->GetSize() >= 8)
        {
            UdpHeader udp;
            p->PeekHeader(udp);
            ports[0] = udp.GetDestinationPort();
            ports[1] = udp.GetSourcePort();
        }
        // Forward packets carry the flow's port as destination, returning ones as source.
        for (uint16_t port : ports)
        {
            auto it = m_flows.find(Key(dst, port));
            if (port != 0 && it != m_flows.end())
            {
                hop = it->second;
                return true;
            }
        }
    }
    return m_resolver && m_resolver(dst, hop);
}

Ptr<Ipv4Route>
FlowPathRouting::MakeRoute(const Ipv4Header& header, const Hop& hop) const
{
    Ptr<Ipv4Route> route = Create<Ipv4Route>();
    route->SetDestination(header.GetDestination());
    route->SetSource(m_canonical);
    route->SetGateway(hop.gateway);
    route->SetOutputDevice(m_ipv4->GetNetDevice(hop.interface));
    return route;
}

Ptr<Ipv4Route>
FlowPathRouting::RouteOutput(Ptr<Packet> p,
                             const Ipv4Header& header,
                             Ptr<NetDevice> /*oif*/,
                             Socket::SocketErrno& sockerr)
{
    Hop hop;
    if (!Lookup(p, header, hop))
    {
        sockerr = Socket::ERROR_NOROUTETOHOST;
        return nullptr;
    }
    sockerr = Socket::ERROR_NOTERROR;
    return MakeRoute(header, hop);
}

bool
FlowPathRouting::RouteInput(Ptr<const Packet> p,
                            const Ipv4Header& header,
                            Ptr<const NetDevice> idev,
                            UnicastForwardCallback ucb,
                            MulticastForwardCallback /*mcb*/,
                            LocalDeliverCallback lcb,
                            ErrorCallback ecb)
{
    const int32_t iif = m_ipv4->GetInterfaceForDevice(idev);
    if (m_ipv4->IsDestinationAddress(header.GetDestination(), iif))
    {
        if (!lcb.IsNull())
        {
            lcb(p, header, iif);
            return true;
        }
        return false;
    }
    Hop hop;
    if (!Lookup(p, header, hop))
    {
        NS_LOG_WARN("no route to " << header.GetDestination());
        ecb(p, header, Socket::ERROR_NOROUTETOHOST);
        return false;
    }
    ucb(MakeRoute(header, hop), p, header);
    return true;
}

void
FlowPathRouting::NotifyInterfaceUp(uint32_t)
{
}

void
FlowPathRouting::NotifyInterfaceDown(uint32_t)
{
}

void
FlowPathRouting::NotifyAddAddress(uint32_t, Ipv4InterfaceAddress)
{
}

void
FlowPathRouting::NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress)
{
}

void
FlowPathRouting::SetIpv4(Ptr<Ipv4> ipv4)
{
    m_ipv4 = ipv4;
}

void
FlowPathRouting::PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const
{
    std::ostream& os = *stream->GetStream();
    os << "FlowPathRouting on node " << m_ipv4->GetObject<Node>()->GetId() << ", source "
       << m_canonical << ", " << m_flows.size() << " flow entries\n";
    for (const auto& [key, hop] : m_flows)
    {
        os << "  " << Ipv4Address(uint32_t(key >> 16)) << " port " << (key & 0xffff) << " -> if "
           << hop.interface << " via " << hop.gateway << "\n";
    }
}

Ptr<Ipv4RoutingProtocol>
FlowPathRoutingHelper::Create(Ptr<Node>) const
{
    return CreateObject<FlowPathRouting>();
}

} // namespace eidolon
} // namespace ns3
