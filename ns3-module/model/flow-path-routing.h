/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: IPv4 routing that sends each flow along the path the topology chose for it.
 */
#ifndef EIDOLON_FLOW_PATH_ROUTING_H
#define EIDOLON_FLOW_PATH_ROUTING_H

#include "ns3/ipv4-address.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/ipv4.h"

#include <functional>
#include <unordered_map>

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief Per-flow source routing for the packet model, as a plain ns-3 Ipv4RoutingProtocol.
 *
 * A flow is known to the network by its destination address and its port: data travels to the
 * receiver with the flow's port as destination port; acknowledgements and congestion
 * notifications travel back with it as source port. PacketModel installs, on every node of a
 * flow's path, which interface leads on (and the reverse entries for the way back), so packets
 * follow exactly the path the topology's ECMP picked, the same one FlowModel uses. Anything else
 * (connection setup before a packet exists, stray traffic) takes the default shortest path given
 * by the resolver. Every packet leaves a node with the node's canonical address as source.
 */
class FlowPathRouting : public Ipv4RoutingProtocol
{
public:
    /// Where a packet goes next: output interface and the next hop's address on that link.
    struct Hop
    {
        uint32_t interface = 0;
        Ipv4Address gateway;
    };
    /// Default route for a destination address; returns false if there is none.
    using Resolver = std::function<bool(Ipv4Address destination, Hop& hop)>;

    static TypeId GetTypeId();
    FlowPathRouting();
    ~FlowPathRouting() override;

    void SetCanonicalAddress(Ipv4Address address) { m_canonical = address; }
    Ipv4Address GetCanonicalAddress() const { return m_canonical; }
    void SetResolver(Resolver resolver) { m_resolver = std::move(resolver); }
    /// Packets to `destination` carrying `port` (as destination or source port) leave via hop.
    void AddFlowEntry(Ipv4Address destination, uint16_t port, Hop hop);
    void RemoveFlowEntry(Ipv4Address destination, uint16_t port);
    size_t FlowEntryCount() const { return m_flows.size(); }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p,
                               const Ipv4Header& header,
                               Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override;
    bool RouteInput(Ptr<const Packet> p,
                    const Ipv4Header& header,
                    Ptr<const NetDevice> idev,
                    UnicastForwardCallback ucb,
                    MulticastForwardCallback mcb,
                    LocalDeliverCallback lcb,
                    ErrorCallback ecb) override;
    void NotifyInterfaceUp(uint32_t interface) override;
    void NotifyInterfaceDown(uint32_t interface) override;
    void NotifyAddAddress(uint32_t interface, Ipv4InterfaceAddress address) override;
    void NotifyRemoveAddress(uint32_t interface, Ipv4InterfaceAddress address) override;
    void SetIpv4(Ptr<Ipv4> ipv4) override;
    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit unit) const override;

protected:
    void DoDispose() override;

private:
    static uint64_t Key(Ipv4Address destination, uint16_t port)
    {
        return (uint64_t(destination.Get()) << 16) | port;
    }
    /// The hop for this packet: by flow entry if its ports name one, else the default route.
    bool Lookup(Ptr<const Packet> p, const Ipv4Header& header, Hop& hop) const;
    Ptr<Ipv4Route> MakeRoute(const Ipv4Header& header, const Hop& hop) const;

    Ptr<Ipv4> m_ipv4;
    Ipv4Address m_canonical;
    Resolver m_resolver;
    std::unordered_map<uint64_t, Hop> m_flows;
};

/// Installs FlowPathRouting on nodes through InternetStackHelper::SetRoutingHelper.
class FlowPathRoutingHelper : public Ipv4RoutingHelper
{
public:
    FlowPathRoutingHelper* Copy() const override { return new FlowPathRoutingHelper(*this); }
    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node> node) const override;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_FLOW_PATH_ROUTING_H
