/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: the packet-level network model, built from real ns-3 nodes, links and transports.
 */
#ifndef EIDOLON_PACKET_MODEL_H
#define EIDOLON_PACKET_MODEL_H

#include "flow-path-routing.h"
#include "network-model.h"

#include "ns3/data-rate.h"
#include "ns3/net-device-container.h"
#include "ns3/node-container.h"
#include "ns3/queue-size.h"
#include "ns3/traced-callback.h"

#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

namespace ns3
{
namespace eidolon
{

class RdmaFlow;
class SegmentConnection;

/**
 * \ingroup eidolon
 * \brief NetworkModel that carries every flow as packets through ns-3.
 *
 * SetTopology builds one ns-3 Node per topology device and one point-to-point link per topology
 * link (its rate and delay), puts a queue disc on every egress (RED with ECN marking, or drop-tail)
 * and installs FlowPathRouting so that each flow follows the path the topology's ECMP chose for it
 * (the path FlowModel would use). Each flow is a real transport connection: ns-3's TCP (NewReno by
 * default, or DCTCP with ECN) or an RDMA-like UDP transport with DCQCN rate control. A flow
 * finishes when its receiver has every byte; the callback runs at that instant.
 *
 * A flow given an explicit path (FlowSpec::path) is cut at the GPUs it passes through into
 * GPU-to-GPU segments that each carry all its bytes at once, as a ring pipeline does; it finishes
 * when the last segment does, plus what its flow-model latency (path + FlowSpec::extraLatency)
 * exceeds the longest segment's. FlowSpec::rateCap holds (TCP pacing, RDMA send rate).
 *
 * NVLink, NVSwitch and PCIe are lossless fabrics, and so is the network where the topology's
 * transport runs on one (InfiniBand's credit-based flow control, RoCE's PFC): their queues hold
 * any backlog (LosslessQueueSize); the others drop at QueueSize.
 *
 * The model may go (Dispose, or its last Ptr released) while the simulator still runs its flows:
 * they stop then (RDMA at once, TCP by a reset at the next byte it would deliver) and none of
 * their callbacks runs.
 */
class PacketModel : public NetworkModel
{
public:
    enum Transport
    {
        Tcp,   //!< ns-3 TCP (TcpNewReno), drop-tail or RED queues
        Dctcp, //!< ns-3 TcpDctcp with ECN; queues mark at the ECN threshold
        Rdma,  //!< RDMA-like UDP transport with DCQCN (rdma-transport.h)
    };
    enum LosslessNetwork
    {
        LosslessByTransport, //!< lossless for ib, ib-no-gdr and roce; lossy for the others
        LosslessAlways,      //!< the network never drops
        LosslessNever,       //!< network egresses drop at QueueSize
    };
    enum QueueKind
    {
        Auto,     //!< drop-tail for TCP, RED with ECN for DCTCP and RDMA
        RedEcn,   //!< RED queue disc marking ECN (dropping only when full)
        DropTail, //!< FIFO queue disc that drops when full
    };

    static TypeId GetTypeId();
    PacketModel();
    ~PacketModel() override;

    void SetTopology(Ptr<const Topology> topology) override;
    Ptr<const Topology> GetTopology() const override;
    FlowId AddFlow(const FlowSpec& spec, FinishCallback onFinish) override;
    void Commit(Time horizon) override;
    NetworkModelStats GetStats() const override;

    /// The ns-3 node standing for a topology device (to attach probes, apps or traces).
    Ptr<Node> GetNode(uint32_t device) const;
    /// The device at the sending end of a directed channel (its queue disc holds the backlog).
    Ptr<NetDevice> GetChannelDevice(uint32_t channel) const;
    Ipv4Address GetAddress(uint32_t device) const;
    NodeContainer GetNodes() const { return m_nodes; }

    using FlowTracedCallback = void (*)(const FlowRecord& record);

protected:
    void DoDispose() override;

private:
    struct Segment
    {
        uint32_t src;
        uint32_t dst;
        std::vector<uint32_t> path;
    };
    struct ActiveFlow
    {
        FlowRecord record;
        FinishCallback onFinish;
        Time extraLatency; //!< after the last segment: the flow's latency beyond its segments'
        uint32_t segmentsLeft = 0;
        Time lastSegment;
    };
    void ConfigureTcp() const;
    std::vector<Segment> Segments(const FlowSpec& spec) const;
    uint16_t AllocatePort(uint32_t src, uint32_t dst);
    void ReleasePort(uint32_t src, uint32_t dst, uint16_t port);
    void InstallPath(const Segment& seg, uint16_t port);
    void RemovePath(const Segment& seg, uint16_t port);
    void StartSegment(FlowId id, Segment seg, uint64_t bytes, double rateCap, Time start);
    void SegmentDone(FlowId id, const Segment& seg, uint16_t port);

    Ptr<const Topology> m_topology;
    NodeContainer m_nodes;
    std::vector<Ptr<NetDevice>> m_channelDevice;   //!< sending device of each channel
    std::vector<uint32_t> m_channelInterface;      //!< its IPv4 interface index
    std::vector<Ipv4Address> m_channelPeerAddress; //!< address of the receiving end
    std::vector<Ipv4Address> m_canonical;          //!< per device
    std::unordered_map<uint32_t, uint32_t> m_deviceOfAddress;
    std::vector<Ptr<FlowPathRouting>> m_routing;
    std::set<uint16_t> m_portsInFlight; //!< TCP: one port space for the whole model
    uint16_t m_nextPort = 0;            //!< TCP: where the round of the port space goes on
    std::map<uint32_t, std::set<uint16_t>> m_portsAtDevice; //!< RDMA: per device
    std::unordered_map<FlowId, ActiveFlow> m_active;
    FlowId m_nextId = 1;
    NetworkModelStats m_stats;
    std::set<Ptr<SegmentConnection>> m_connections; //!< TCP segments whose bytes are on the way
    std::set<Ptr<RdmaFlow>> m_rdmaFlows;            //!< RDMA segments not yet closed
    /// False once the model is disposed: what it scheduled, and the callbacks it gave the flows
    /// and the nodes' routing, hold a copy and leave the model alone then.
    std::shared_ptr<bool> m_alive;

    Transport m_transport;
    QueueKind m_queueKind;
    QueueSize m_queueSize;
    QueueSize m_losslessQueueSize; //!< egresses of lossless fabrics
    LosslessNetwork m_losslessNetwork;
    double m_ecnMinThreshold;
    double m_ecnMaxThreshold;
    Time m_ecnThresholdDelay;
    uint32_t m_mtu;
    uint32_t m_tcpBufferBytes;
    Time m_tcpMinRto;
    uint64_t m_ecmpSeed;
    int64_t m_rngStream;
    std::string m_tcpVariant;
    std::string m_queueDiscType;

    TracedCallback<const FlowRecord&> m_flowStarted;
    TracedCallback<const FlowRecord&> m_flowFinished;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_PACKET_MODEL_H
