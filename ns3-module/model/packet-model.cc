/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "packet-model.h"

#include "lossless-ecn-queue-disc.h"
#include "rdma-transport.h"
#include "topology.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-generator.h"
#include "ns3/ipv4.h"
#include "ns3/integer.h"
#include "ns3/log.h"
#include "ns3/red-queue-disc.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-linux-reno.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/tcp-socket-state.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include <functional>
#include <memory>
#include <utility>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonPacketModel");
NS_OBJECT_ENSURE_REGISTERED(PacketModel);

namespace
{
constexpr uint16_t kFirstPort = 10000; //!< flow ports stay below ns-3's ephemeral range (49152+)
constexpr uint16_t kLastPort = 49151;
/// A pacing ratio (percent of cwnd / srtt) far above what any window reaches in one RTT.
constexpr uint16_t kNoPacingRatio = 60000;
} // namespace

/// One segment's TCP connection, without ns-3 applications (a node keeps its applications for the
/// whole run, and with them every socket they ever had: a live run opens millions of
/// connections). The receiver listens on the segment's port from the start until it has accepted
/// the segment's one connection; the sender connects at the segment's start and writes its bytes
/// as the socket takes them (BulkSendApplication's loop), paced at the flow's rate cap, the GPU
/// side's copy rate (a CTA's share of NVLink, NCCL's per-channel limits), which a connection must
/// not beat whatever the links allow. Once the last byte has landed both ends close and drop their
/// callbacks, and nothing of the connection outlives its sockets' closing.
class SegmentConnection : public SimpleRefCount<SegmentConnection>
{
public:
    SegmentConnection(uint64_t bytes, uint32_t sendSize, double capBytesPerSecond)
        : m_bytes(bytes)
        , m_sendSize(sendSize)
        , m_cap(capBytesPerSecond)
    {
    }

    /// Runs when the receiver has every byte.
    void SetDoneCallback(std::function<void()> done) { m_done = std::move(done); }

    /// Listens on `port` of `receiver` (at once: before the sender's SYN can arrive).
    void Listen(Ptr<Node> receiver, uint16_t port)
    {
        Ptr<SegmentConnection> self(this);
        m_listening = Socket::CreateSocket(receiver, TcpSocketFactory::GetTypeId());
        m_listening->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
        m_listening->Listen();
        m_listening->SetAcceptCallback(
            MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
            Callback<void, Ptr<Socket>, const Address&>(
                [self](Ptr<Socket> s, const Address&) { self->Accepted(s); }));
    }

    /// Connects from `sender` to `to`:`port` and sends (an ns-3 event at the segment's start).
    void Connect(Ptr<Node> sender, Ipv4Address to, uint16_t port)
    {
        if (m_aborted)
        {
            return;
        }
        Ptr<SegmentConnection> self(this);
        // ns-3 takes pacing from TcpSocketState's attribute defaults when a socket is created.
        if (m_cap > 0)
        {
            Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
            Config::SetDefault("ns3::TcpSocketState::PaceInitialWindow", BooleanValue(true));
            Config::SetDefault("ns3::TcpSocketState::MaxPacingRate",
                               DataRateValue(DataRate(uint64_t(m_cap * 8))));
            // Pacing holds the connection to the cap; its window still limits it as any TCP's.
            // ns-3 would also pace at 2 (1.2) x cwnd / srtt in slow start (avoidance), which
            // only smooths what the window allows: left at a ratio that never binds below the
            // cap.
            Config::SetDefault("ns3::TcpSocketState::PacingSsRatio", UintegerValue(kNoPacingRatio));
            Config::SetDefault("ns3::TcpSocketState::PacingCaRatio", UintegerValue(kNoPacingRatio));
        }
        m_sending = Socket::CreateSocket(sender, TcpSocketFactory::GetTypeId());
        if (m_cap > 0)
        {
            Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(false));
            Config::SetDefault("ns3::TcpSocketState::PaceInitialWindow", BooleanValue(false));
        }
        m_sending->Bind();
        m_sending->Connect(InetSocketAddress(to, port));
        m_sending->ShutdownRecv();
        m_sending->SetConnectCallback(
            Callback<void, Ptr<Socket>>([self](Ptr<Socket>) { self->Send(); }),
            MakeNullCallback<void, Ptr<Socket>>());
        m_sending->SetSendCallback(
            Callback<void, Ptr<Socket>, uint32_t>([self](Ptr<Socket>, uint32_t) { self->Send(); }));
    }

    /// Stops a connection that has not finished (its model is going). The sender writes no
    /// more; the receiver reads no more and, once unread data sits in its socket, closes it:
    /// ns-3's TCP answers a close with unread data by a reset (TcpSocketBase::Close), and the
    /// reset ends the sender's connection with what its buffer still held. A connection not yet
    /// accepted finds no listener (reset as well); one not yet started never starts.
    void Abort()
    {
        m_done = nullptr;
        m_aborted = true;
        ForgetSender();
        if (m_accepted)
        {
            m_accepted->SetRecvCallback(Callback<void, Ptr<Socket>>([](Ptr<Socket> r) {
                r->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
                Simulator::ScheduleNow([r]() { r->Close(); });
            }));
        }
        StopListening();
        m_accepted = nullptr;
    }

private:
    void Accepted(Ptr<Socket> s)
    {
        Ptr<SegmentConnection> self(this);
        m_accepted = s;
        s->SetRecvCallback(Callback<void, Ptr<Socket>>([self](Ptr<Socket> r) { self->Read(r); }));
        // One connection a port: the listener has done its work. Closed now, its endpoint leaves
        // the node's list, which ns-3's TCP searches, one by one, for every segment it receives.
        StopListening();
    }

    void StopListening()
    {
        if (m_listening)
        {
            m_listening->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                           MakeNullCallback<void, Ptr<Socket>, const Address&>());
            m_listening->Close();
            m_listening = nullptr;
        }
    }

    void Read(Ptr<Socket> s)
    {
        while (Ptr<Packet> p = s->Recv())
        {
            m_received += p->GetSize();
        }
        if (!m_finished && m_received >= m_bytes)
        {
            m_finished = true;
            // Close once the socket's own receive path has returned.
            Ptr<SegmentConnection> self(this);
            Simulator::ScheduleNow([self]() { self->Close(); });
            if (m_done)
            {
                m_done();
            }
        }
    }

    void Send()
    {
        while (m_sent < m_bytes)
        {
            const uint32_t size = uint32_t(std::min<uint64_t>(m_sendSize, m_bytes - m_sent));
            if (m_sending->Send(Create<Packet>(size)) != int(size))
            {
                return; // the buffer is full: the send callback goes on
            }
            m_sent += size;
        }
        if (!m_sendingClosed)
        {
            m_sendingClosed = true;
            m_sending->Close();
        }
    }

    /// Both ends close and forget their callbacks (which hold this object).
    void Close()
    {
        StopListening();
        if (m_accepted)
        {
            m_accepted->Close();
            m_accepted->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
        }
        ForgetSender();
        m_accepted = nullptr;
    }

    /// The sending socket calls this object no more (its callbacks hold it), and is let go.
    void ForgetSender()
    {
        if (m_sending)
        {
            m_sending->SetConnectCallback(MakeNullCallback<void, Ptr<Socket>>(),
                                          MakeNullCallback<void, Ptr<Socket>>());
            m_sending->SetSendCallback(MakeNullCallback<void, Ptr<Socket>, uint32_t>());
            m_sending = nullptr;
        }
    }

    uint64_t m_bytes;
    uint32_t m_sendSize;
    double m_cap;
    std::function<void()> m_done;
    Ptr<Socket> m_listening;
    Ptr<Socket> m_accepted;
    Ptr<Socket> m_sending;
    uint64_t m_received = 0;
    uint64_t m_sent = 0;
    bool m_finished = false;
    bool m_sendingClosed = false;
    bool m_aborted = false;
};

TypeId
PacketModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::PacketModel")
            .SetParent<NetworkModel>()
            .SetGroupName("Eidolon")
            .AddConstructor<PacketModel>()
            .AddAttribute("Transport",
                          "How flows are carried: DCTCP (ECN, the default: loss-free sharing as in a "
                          "datacenter), TCP (loss-driven Linux Reno) or RDMA (UDP with DCQCN).",
                          EnumValue(Transport::Dctcp),
                          MakeEnumAccessor(&PacketModel::m_transport),
                          MakeEnumChecker(Transport::Tcp, "tcp", Transport::Dctcp, "dctcp",
                                          Transport::Rdma, "rdma"))
            .AddAttribute("Queue",
                          "Queue disc on every egress: ECN marking, drop-tail, or auto "
                          "(drop-tail for TCP, which does not negotiate ECN; ECN otherwise). "
                          "ECN marking is RED on a lossy fabric (it drops what it cannot mark) "
                          "and LosslessEcnQueueDisc on a lossless one (it never drops).",
                          EnumValue(QueueKind::Auto),
                          MakeEnumAccessor(&PacketModel::m_queueKind),
                          MakeEnumChecker(QueueKind::Auto, "auto", QueueKind::RedEcn, "red-ecn",
                                          QueueKind::DropTail, "drop-tail"))
            .AddAttribute("QueueSize",
                          "Capacity of each egress queue disc of a lossy fabric: the network "
                          "where it drops (LosslessNetwork).",
                          QueueSizeValue(QueueSize("1000p")),
                          MakeQueueSizeAccessor(&PacketModel::m_queueSize),
                          MakeQueueSizeChecker())
            .AddAttribute("LosslessQueueSize",
                          "Capacity of each egress queue disc of a lossless fabric: NVLink, "
                          "NVSwitch and PCIe always, the network where LosslessNetwork says so. "
                          "They move data under link-level flow control and never drop a packet, "
                          "so their queues hold any backlog a run builds (ECN marking still "
                          "applies); a tail drop there would cost a flow a retransmission timeout "
                          "the hardware never takes.",
                          QueueSizeValue(QueueSize("10000000p")),
                          MakeQueueSizeAccessor(&PacketModel::m_losslessQueueSize),
                          MakeQueueSizeChecker())
            .AddAttribute("LosslessNetwork",
                          "Whether NIC and switch egresses drop: by the topology's "
                          "network_transport (InfiniBand's credit-based flow control and RoCE's "
                          "PFC do not; EFA, TCPX/TCPXO and sockets run on Ethernet that does), "
                          "always lossless, or never.",
                          EnumValue(LosslessNetwork::LosslessByTransport),
                          MakeEnumAccessor(&PacketModel::m_losslessNetwork),
                          MakeEnumChecker(LosslessNetwork::LosslessByTransport, "by-transport",
                                          LosslessNetwork::LosslessAlways, "yes",
                                          LosslessNetwork::LosslessNever, "no"))
            .AddAttribute("EcnMinThreshold",
                          "ECN: queue length (packets) where marking starts, at least; a faster "
                          "link marks from EcnThresholdDelay worth of its bytes.",
                          DoubleValue(20),
                          MakeDoubleAccessor(&PacketModel::m_ecnMinThreshold),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("EcnMaxThreshold",
                          "ECN: queue length (packets) where RED's marking chance reaches 2%, "
                          "at least (scaled like EcnMinThreshold); it rises on to every packet at "
                          "twice this (RED's gentle mode). Equal to EcnMinThreshold (K): marking "
                          "from K.",
                          DoubleValue(20),
                          MakeDoubleAccessor(&PacketModel::m_ecnMaxThreshold),
                          MakeDoubleChecker<double>(1))
            .AddAttribute("EcnThresholdDelay",
                          "Queueing delay at which a link starts marking: K = rate x delay, so "
                          "that a 450 GB/s NVLink port does not mark at a queue of a few ns "
                          "(K of 20 jumbo frames there left DCTCP >10% short of line rate).",
                          TimeValue(NanoSeconds(1300)),
                          MakeTimeAccessor(&PacketModel::m_ecnThresholdDelay),
                          MakeTimeChecker())
            .AddAttribute("Mtu",
                          "MTU of every link (bytes); jumbo frames by default.",
                          UintegerValue(9000),
                          MakeUintegerAccessor(&PacketModel::m_mtu),
                          MakeUintegerChecker<uint32_t>(576, 65535))
            .AddAttribute("TcpBufferSize",
                          "TCP send and receive buffers (bytes).",
                          UintegerValue(16 << 20),
                          MakeUintegerAccessor(&PacketModel::m_tcpBufferBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("TcpMinRto",
                          "TCP minimum retransmission timeout (datacenter value, not 200 ms).",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&PacketModel::m_tcpMinRto),
                          MakeTimeChecker())
            .AddAttribute("TcpVariant",
                          "TypeId of the TCP congestion control to use instead of the transport's "
                          "(e.g. ns3::TcpCubic, or your own TcpCongestionOps subclass).",
                          StringValue(""),
                          MakeStringAccessor(&PacketModel::m_tcpVariant),
                          MakeStringChecker())
            .AddAttribute("QueueDiscType",
                          "TypeId of a queue disc to install on every egress instead of the "
                          "Queue choice (e.g. ns3::FqCoDelQueueDisc, or your own), defaults "
                          "for its attributes (set them with Config::SetDefault).",
                          StringValue(""),
                          MakeStringAccessor(&PacketModel::m_queueDiscType),
                          MakeStringChecker())
            .AddAttribute("RngStream",
                          "First ns-3 random stream the model's queues and stacks use.",
                          IntegerValue(1000),
                          MakeIntegerAccessor(&PacketModel::m_rngStream),
                          MakeIntegerChecker<int64_t>(0))
            .AddAttribute("EcmpSeed",
                          "Mixed into the per-flow ECMP hash (same meaning as FlowModel's).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&PacketModel::m_ecmpSeed),
                          MakeUintegerChecker<uint64_t>())
            .AddTraceSource("FlowStarted",
                            "A flow was posted.",
                            MakeTraceSourceAccessor(&PacketModel::m_flowStarted),
                            "ns3::eidolon::PacketModel::FlowTracedCallback")
            .AddTraceSource("FlowFinished",
                            "A flow's receiver got its last byte.",
                            MakeTraceSourceAccessor(&PacketModel::m_flowFinished),
                            "ns3::eidolon::PacketModel::FlowTracedCallback");
    return tid;
}

PacketModel::PacketModel()
    : m_alive(std::make_shared<bool>(true))
{
}

PacketModel::~PacketModel() = default;

void
PacketModel::DoDispose()
{
    // The simulator may outlive the model (a script let its last Ptr go while flows ran): every
    // event and callback the model left behind checks m_alive before it touches the model, and
    // the flows still running stop, so that nothing carries on for a model that is gone.
    *m_alive = false;
    for (const Ptr<SegmentConnection>& c : std::exchange(m_connections, {}))
    {
        c->Abort();
    }
    for (const Ptr<RdmaFlow>& f : std::exchange(m_rdmaFlows, {}))
    {
        f->Dispose();
    }
    m_active.clear();
    m_routing.clear();
    m_channelDevice.clear();
    m_nodes = NodeContainer();
    m_topology = nullptr;
    NetworkModel::DoDispose();
}

void
PacketModel::ConfigureTcp() const
{
    // TCP sockets take their parameters from attribute defaults when they are created, so the
    // model sets the defaults before it builds the stacks (this affects the whole process).
    const uint32_t mss = m_mtu - 20 - 20; // IPv4 header, TCP header without options
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    // No timestamp option: ns-3's TCP timestamps count milliseconds, and with them on a
    // connection takes its RTT samples from them, 0 or 1 ms: a connection whose packets straddle
    // a millisecond boundary measured a 1 ms RTT (against ~10 us), paced at cwnd / 1 ms and
    // crawled (a 16 MiB all-reduce on 2 x 8 H100 took 836 us instead of 135 when it started at
    // 952 us). Without them the RTT comes from each segment's send time, to the nanosecond.
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(m_tcpBufferBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(m_tcpBufferBytes));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(m_tcpMinRto));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MicroSeconds(1)));
    // A lost SYN would otherwise cost ns-3's default 3 s; use the datacenter RTO instead.
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(m_tcpMinRto));
    // Every connection has a port pair of its own, so TIME_WAIT guards nothing: a closed
    // connection leaves at once. At ns-3's 2 x 120 s a node that opened 16,384 connections (its
    // ephemeral ports) could open no more; at 2 x 1 ms (the RTO) every connection of the last
    // 2 ms stayed in each node's endpoint list, which every arriving segment searches: 50
    // back-to-back 64 KiB all-reduces on 2 x 8 H100 took 17.4 s and 237 MB, now 6.7 s and 43 MB.
    Config::SetDefault("ns3::TcpSocketBase::MaxSegLifetime", DoubleValue(0));
    const bool dctcp = m_transport == Transport::Dctcp;
    TypeId variant = dctcp ? TcpDctcp::GetTypeId() : TcpLinuxReno::GetTypeId();
    if (!m_tcpVariant.empty())
    {
        NS_ABORT_MSG_UNLESS(TypeId::LookupByNameFailSafe(m_tcpVariant, &variant),
                            "PacketModel: TcpVariant '" << m_tcpVariant << "' is no TypeId");
    }
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(variant));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn",
                       EnumValue(dctcp ? TcpSocketState::On : TcpSocketState::Off));
}

void
PacketModel::SetTopology(Ptr<const Topology> topology)
{
    NS_ABORT_MSG_IF(m_topology, "PacketModel: the topology is set once");
    if (Time::GetResolution() != Time::PS && Time::GetResolution() != Time::FS)
    {
        NS_LOG_WARN("PacketModel: Time resolution coarser than ps; packet serialization times on "
                    "fast links are rounded (call Time::SetResolution(Time::PS) first in main)");
    }
    m_topology = topology;
    ConfigureTcp();
    const uint32_t n = uint32_t(topology->Devices().size());
    m_nodes.Create(n);

    InternetStackHelper stack;
    FlowPathRoutingHelper routing;
    stack.SetRoutingHelper(routing);
    stack.SetIpv6StackInstall(false);
    stack.Install(m_nodes);

    PointToPointHelper p2p;
    // A one-packet device queue: the backlog builds in the queue disc, where RED can see it.
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(m_mtu));
    const bool red = m_queueKind == QueueKind::RedEcn ||
                     (m_queueKind == QueueKind::Auto && m_transport != Transport::Tcp);
    const std::string& fabric = topology->transport.kind;
    const bool losslessNetwork =
        m_losslessNetwork == LosslessNetwork::LosslessAlways ||
        (m_losslessNetwork == LosslessNetwork::LosslessByTransport &&
         (fabric == "ib" || fabric == "ib-no-gdr" || fabric == "roce"));
    // The queue disc of one link: marking thresholds follow the link's rate.
    auto queueFor = [&](double bytesPerSecond, LinkKind kind) {
        TrafficControlHelper tch;
        if (!m_queueDiscType.empty())
        {
            tch.SetRootQueueDisc(m_queueDiscType);
            return tch;
        }
        const bool lossless = kind != LinkKind::Net || losslessNetwork;
        const QueueSize size = lossless ? m_losslessQueueSize : m_queueSize;
        if (!red)
        {
            tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(size));
            return tch;
        }
        const double delayPackets = bytesPerSecond * m_ecnThresholdDelay.GetSeconds() / m_mtu;
        const double minTh = std::max(m_ecnMinThreshold, delayPackets);
        const double maxTh = std::max(m_ecnMaxThreshold, delayPackets);
        if (lossless)
        {
            // Marks ECN-capable packets as RED does and queues the rest: RED would drop an
            // acknowledgement where it marks data, and a lossless link drops nothing.
            tch.SetRootQueueDisc("ns3::eidolon::LosslessEcnQueueDisc",
                                 "MaxSize", QueueSizeValue(size),
                                 "MinTh", DoubleValue(minTh),
                                 "MaxTh", DoubleValue(std::max(maxTh, minTh)));
            return tch;
        }
        // Instantaneous queue (QW = 1) as datacenter switches mark; ECN instead of early drops
        // of ECN-capable packets (the others are dropped: this fabric is lossy).
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", QueueSizeValue(size),
                             "MinTh", DoubleValue(minTh),
                             "MaxTh", DoubleValue(std::max(maxTh, minTh)),
                             "QW", DoubleValue(1.0),
                             "MeanPktSize", UintegerValue(m_mtu),
                             "UseEcn", BooleanValue(true),
                             "UseHardDrop", BooleanValue(false));
        return tch;
    };

    // Random streams fixed from the model's seed stream on, whatever ran before in the process:
    // the same topology and flows give the same packets.
    int64_t stream = m_rngStream;
    stream += stack.AssignStreams(m_nodes, stream);

    // Link i is the /30 network 10.0.0.0 + 4i (its a end .1, its b end .2), as Ipv4AddressHelper
    // from 10.0.0.0/30 with NewNetwork after each link would give. The helper registers each
    // address with Ipv4AddressGenerator, whose list of allocated ranges then gains an entry a link
    // (the network and broadcast addresses between are left out), and each registration walks
    // the whole list: quadratic in the links, 13% of a 128-GPU run's wall time on a 1,024-GPU
    // topology. Registering each /30 whole keeps the list one range long, and the generator still
    // refuses these addresses to anyone else.
    const Ipv4Mask linkMask("255.255.255.252");
    auto assign = [&linkMask](Ptr<NetDevice> device, Ipv4Address address)
    {
        Ptr<Ipv4> ipv4 = device->GetNode()->GetObject<Ipv4>();
        int32_t interface = ipv4->GetInterfaceForDevice(device);
        if (interface < 0)
        {
            interface = int32_t(ipv4->AddInterface(device));
        }
        ipv4->AddAddress(uint32_t(interface), Ipv4InterfaceAddress(address, linkMask));
        ipv4->SetMetric(uint32_t(interface), 1);
        ipv4->SetUp(uint32_t(interface));
        return uint32_t(interface);
    };
    const auto& links = topology->Links();
    m_channelDevice.resize(2 * links.size());
    m_channelInterface.resize(2 * links.size());
    m_channelPeerAddress.resize(2 * links.size());
    m_canonical.assign(n, Ipv4Address());
    std::vector<bool> hasAddress(n, false);
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const Link& l = links[i];
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(l.bandwidth * 8))));
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(l.latencyNs)));
        NetDeviceContainer devices = p2p.Install(m_nodes.Get(l.a), m_nodes.Get(l.b));
        QueueDiscContainer queues = queueFor(l.bandwidth, l.kind).Install(devices);
        for (uint32_t q = 0; q < queues.GetN(); ++q)
        {
            if (auto red = DynamicCast<RedQueueDisc>(queues.Get(q)))
            {
                stream += red->AssignStreams(stream);
            }
            else if (auto marking = DynamicCast<LosslessEcnQueueDisc>(queues.Get(q)))
            {
                stream += marking->AssignStreams(stream);
            }
        }
        const uint32_t network = (10u << 24) + 4 * i;
        NS_ABORT_MSG_IF(i >= (1u << 22), "PacketModel: more than 2^22 links for 10.0.0.0/8");
        for (uint32_t a = network; a < network + 4; ++a)
        {
            Ipv4AddressGenerator::AddAllocated(Ipv4Address(a));
        }
        const Ipv4Address addressOf[2] = {Ipv4Address(network + 1), Ipv4Address(network + 2)};
        const uint32_t ends[2] = {l.a, l.b};
        for (uint32_t side = 0; side < 2; ++side)
        {
            const uint32_t channel = 2 * i + side; // side 0: a -> b, side 1: b -> a
            m_channelDevice[channel] = devices.Get(side);
            m_channelInterface[channel] = assign(devices.Get(side), addressOf[side]);
            m_channelPeerAddress[channel] = addressOf[1 - side];
            m_deviceOfAddress[addressOf[side].Get()] = ends[side];
            if (!hasAddress[ends[side]])
            {
                hasAddress[ends[side]] = true;
                m_canonical[ends[side]] = addressOf[side];
            }
        }
    }

    m_routing.resize(n);
    for (uint32_t d = 0; d < n; ++d)
    {
        Ptr<FlowPathRouting> r =
            DynamicCast<FlowPathRouting>(m_nodes.Get(d)->GetObject<Ipv4>()->GetRoutingProtocol());
        NS_ABORT_MSG_UNLESS(r, "PacketModel: FlowPathRouting missing on node " << d);
        r->SetCanonicalAddress(m_canonical[d]);
        // Traffic that belongs to no flow entry takes the first shortest path.
        r->SetResolver([this, alive = m_alive, d](Ipv4Address dst, FlowPathRouting::Hop& hop) {
            if (!*alive)
            {
                return false; // the nodes outlive the model; its routes went with it
            }
            auto it = m_deviceOfAddress.find(dst.Get());
            if (it == m_deviceOfAddress.end() || it->second == d)
            {
                return false;
            }
            auto path = m_topology->Route(d, it->second, 0);
            hop.interface = m_channelInterface[path[0]];
            hop.gateway = m_channelPeerAddress[path[0]];
            return true;
        });
        m_routing[d] = r;
    }
}

Ptr<const Topology>
PacketModel::GetTopology() const
{
    return m_topology;
}

Ptr<Node>
PacketModel::GetNode(uint32_t device) const
{
    return m_nodes.Get(device);
}

Ptr<NetDevice>
PacketModel::GetChannelDevice(uint32_t channel) const
{
    return m_channelDevice.at(channel);
}

Ipv4Address
PacketModel::GetAddress(uint32_t device) const
{
    return m_canonical.at(device);
}

std::vector<PacketModel::Segment>
PacketModel::Segments(const FlowSpec& spec) const
{
    std::vector<Segment> out;
    if (spec.path.empty())
    {
        out.push_back({spec.src, spec.dst,
                       spec.src == spec.dst
                           ? std::vector<uint32_t>{}
                           : m_topology->Route(spec.src, spec.dst, FlowHash(spec, m_ecmpSeed))});
        return out;
    }
    // Cut an explicit path at every endpoint device it passes (GPUs, hosts): each piece is a
    // connection of its own, all carrying the flow's bytes at once, as a pipeline does. A path
    // may also turn back at a switch or jump on from elsewhere (an in-network reduction: SHARP's
    // aggregation tree lists each head's way up to the aggregating switch and the result's way
    // down, a link the heads share once): a piece then ends or starts at that switch, which
    // terminates its connections as SHARP's aggregation node does.
    const uint32_t n = uint32_t(spec.path.size());
    Segment cur{m_topology->ChannelFrom(spec.path[0]), 0, {}};
    for (uint32_t i = 0; i < n; ++i)
    {
        const uint32_t c = spec.path[i];
        cur.path.push_back(c);
        const uint32_t to = m_topology->ChannelTo(c);
        if (i + 1 == n)
        {
            cur.dst = to; // at an endpoint, or at a switch (a way up ending where it aggregates)
            out.push_back(cur);
            break;
        }
        const uint32_t next = spec.path[i + 1];
        const uint32_t from = m_topology->ChannelFrom(next);
        if (!Forwards(m_topology->GetDevice(to).kind) || from != to || next == (c ^ 1))
        {
            cur.dst = to;
            out.push_back(cur);
            cur = Segment{from, 0, {}};
        }
    }
    return out;
}

uint16_t
PacketModel::AllocatePort(uint32_t src, uint32_t dst)
{
    if (m_transport == Transport::Rdma)
    {
        // RDMA: the lowest port free at both ends, so that the ports a node's RDMA demux keeps
        // (every port it has seen) stay as few as the flows it has in flight at once, not as
        // many as the whole model has. A port is given back only once both ends of its flow
        // have closed.
        std::set<uint16_t>& atSrc = m_portsAtDevice[src];
        std::set<uint16_t>& atDst = m_portsAtDevice[dst];
        for (uint32_t port = kFirstPort; port <= kLastPort; ++port)
        {
            if (!atSrc.count(uint16_t(port)) && !atDst.count(uint16_t(port)))
            {
                atSrc.insert(uint16_t(port));
                atDst.insert(uint16_t(port));
                return uint16_t(port);
            }
        }
        NS_ABORT_MSG("PacketModel: more than " << (kLastPort - kFirstPort + 1)
                                               << " flows in flight at one device");
    }
    // TCP: one port space for the whole model, gone round (a port names a flow in both
    // directions, so it must be unique at its sender as well as at its receiver).
    if (m_nextPort < kFirstPort)
    {
        m_nextPort = kFirstPort;
    }
    for (uint32_t tries = 0; tries <= uint32_t(kLastPort - kFirstPort); ++tries)
    {
        const uint16_t port = m_nextPort;
        m_nextPort = (m_nextPort == kLastPort) ? kFirstPort : uint16_t(m_nextPort + 1);
        if (m_portsInFlight.insert(port).second)
        {
            return port;
        }
    }
    NS_ABORT_MSG("PacketModel: more than " << (kLastPort - kFirstPort + 1)
                                           << " flows in flight at once");
    return 0;
}

void
PacketModel::ReleasePort(uint32_t src, uint32_t dst, uint16_t port)
{
    if (m_transport == Transport::Rdma)
    {
        m_portsAtDevice[src].erase(port);
        m_portsAtDevice[dst].erase(port);
        return;
    }
    m_portsInFlight.erase(port);
}

void
PacketModel::InstallPath(const Segment& seg, uint16_t port)
{
    const Ipv4Address to = m_canonical[seg.dst];
    const Ipv4Address from = m_canonical[seg.src];
    for (uint32_t c : seg.path)
    {
        m_routing[m_topology->ChannelFrom(c)]->AddFlowEntry(
            to, port, {m_channelInterface[c], m_channelPeerAddress[c]});
        const uint32_t back = c ^ 1; // the same link the other way
        m_routing[m_topology->ChannelFrom(back)]->AddFlowEntry(
            from, port, {m_channelInterface[back], m_channelPeerAddress[back]});
    }
}

void
PacketModel::RemovePath(const Segment& seg, uint16_t port)
{
    for (uint32_t c : seg.path)
    {
        m_routing[m_topology->ChannelFrom(c)]->RemoveFlowEntry(m_canonical[seg.dst], port);
        m_routing[m_topology->ChannelFrom(c ^ 1)]->RemoveFlowEntry(m_canonical[seg.src], port);
    }
}

FlowId
PacketModel::AddFlow(const FlowSpec& spec, FinishCallback onFinish)
{
    NS_ABORT_MSG_UNLESS(m_topology, "PacketModel: SetTopology before AddFlow");
    FlowId id = m_nextId++;
    Time start = spec.start;
    if (start < Simulator::Now())
    {
        NS_LOG_WARN("flow " << id << " starts in the past; starting it now");
        start = Simulator::Now();
        ++m_stats.causalityViolations;
    }
    ActiveFlow& flow = m_active[id];
    flow.record.id = id;
    flow.record.src = spec.src;
    flow.record.dst = spec.dst;
    flow.record.bytes = spec.bytes;
    flow.record.tag = spec.tag;
    flow.record.start = start;
    flow.onFinish = onFinish;
    flow.extraLatency = spec.extraLatency;
    std::vector<Segment> segments = Segments(spec);
    for (const Segment& s : segments)
    {
        flow.record.path.insert(flow.record.path.end(), s.path.begin(), s.path.end());
    }
    flow.segmentsLeft = uint32_t(segments.size());
    ++m_stats.flowsAdded;
    m_stats.peakActiveFlows = std::max<uint64_t>(m_stats.peakActiveFlows, m_active.size());
    m_flowStarted(flow.record);
    // The flow's latency is its path's plus extraLatency, as in the flow model. Its segments
    // run at once, each paying its own hops: what the longest of them does not pay is added
    // when the last one ends (a branching flow's negative extraLatency included).
    int64_t segmentNs = 0;
    for (const Segment& s : segments)
    {
        segmentNs = std::max(segmentNs, m_topology->PathLatencyNs(s.path));
    }
    flow.extraLatency = NanoSeconds(m_topology->PathLatencyNs(flow.record.path) - segmentNs) +
                        spec.extraLatency;
    for (Segment& s : segments)
    {
        StartSegment(id, std::move(s), spec.bytes, spec.rateCap, start);
    }
    return id;
}

void
PacketModel::StartSegment(FlowId id, Segment seg, uint64_t bytes, double rateCap, Time start)
{
    const Time delay = start - Simulator::Now();
    if (seg.path.empty() || bytes == 0)
    {
        // Nothing to carry, or nowhere to carry it: done at the start (plus the path's latency).
        Time latency = NanoSeconds(m_topology->PathLatencyNs(seg.path));
        Simulator::Schedule(delay + latency, [this, alive = m_alive, id, seg]() {
            if (*alive)
            {
                SegmentDone(id, seg, 0);
            }
        });
        return;
    }
    const uint16_t port = AllocatePort(seg.src, seg.dst);
    InstallPath(seg, port);
    Ptr<Node> receiver = m_nodes.Get(seg.dst);
    Ptr<Node> sender = m_nodes.Get(seg.src);
    if (m_transport == Transport::Rdma)
    {
        // Connectionless: the sender paces at its first link's rate and DCQCN adapts it.
        const DataRate lineRate(uint64_t(m_topology->ChannelBandwidth(seg.path[0]) * 8));
        // The sender never exceeds its rate: the first link's, or the flow's cap below it.
        const DataRate sendRate(rateCap > 0 ? std::min<uint64_t>(lineRate.GetBitRate(),
                                                                 uint64_t(rateCap * 8))
                                            : lineRate.GetBitRate());
        // DCQCN's increase steps were set for 40 Gb/s NICs (R_AI 40 Mb/s, R_HAI 400 Mb/s):
        // keep their proportion to the line rate, or a 400 Gb/s sender recovers 10x too slowly.
        RdmaFlowHelper rdma;
        rdma.SetSenderAttribute("AdditiveIncrease",
                                DataRateValue(DataRate(lineRate.GetBitRate() / 1000)));
        rdma.SetSenderAttribute("HyperIncrease",
                                DataRateValue(DataRate(lineRate.GetBitRate() / 100)));
        Ptr<RdmaFlow> flow = rdma.Start(
            sender, receiver, m_canonical[seg.dst], m_canonical[seg.src], port, bytes, sendRate,
            start,
            Callback<void, Time>([this, alive = m_alive, id, seg](Time) {
                if (*alive)
                {
                    SegmentDone(id, seg, 0);
                }
            }));
        m_rdmaFlows.insert(flow);
        // The segment is done when its receiver has every byte; its port (and the paths that
        // carry the last acknowledgements) stay until the sender has everything acknowledged
        // and both ends have closed.
        flow->SetClosedCallback(Callback<void>(
            [this, alive = m_alive, seg, port, raw = PeekPointer(flow)]()
            {
                if (!*alive)
                {
                    return;
                }
                m_rdmaFlows.erase(Ptr<RdmaFlow>(raw));
                RemovePath(seg, port);
                ReleasePort(seg.src, seg.dst, port);
            }));
        return;
    }
    auto connection = Create<SegmentConnection>(bytes, m_mtu - 40, rateCap);
    connection->SetDoneCallback(
        [this, alive = m_alive, id, seg, port, raw = PeekPointer(connection)]()
        {
            if (*alive)
            {
                m_connections.erase(Ptr<SegmentConnection>(raw));
                SegmentDone(id, seg, port);
            }
        });
    m_connections.insert(connection);
    connection->Listen(receiver, port);
    const Ipv4Address to = m_canonical[seg.dst];
    Simulator::ScheduleWithContext(sender->GetId(), delay,
                                   [connection, sender, to, port]()
                                   { connection->Connect(sender, to, port); });
}

void
PacketModel::SegmentDone(FlowId id, const Segment& seg, uint16_t port)
{
    if (port != 0)
    {
        RemovePath(seg, port); // late acknowledgements fall back to the default path
        ReleasePort(seg.src, seg.dst, port);
    }
    auto it = m_active.find(id);
    if (it == m_active.end() || --it->second.segmentsLeft > 0)
    {
        return;
    }
    auto deliver = [this, alive = m_alive, id]() {
        if (!*alive)
        {
            return;
        }
        auto it = m_active.find(id);
        if (it == m_active.end())
        {
            return;
        }
        ActiveFlow flow = std::move(it->second);
        m_active.erase(it);
        flow.record.finish = Simulator::Now();
        ++m_stats.flowsFinished;
        m_flowFinished(flow.record);
        if (!flow.onFinish.IsNull())
        {
            flow.onFinish(flow.record);
        }
    };
    if (it->second.extraLatency.IsStrictlyPositive())
    {
        Simulator::Schedule(it->second.extraLatency, deliver);
    }
    else
    {
        deliver();
    }
}

void
PacketModel::Commit(Time)
{
    // Nothing to forget: the packet model never runs ahead of ns-3's clock or rolls back.
}

NetworkModelStats
PacketModel::GetStats() const
{
    return m_stats;
}

} // namespace eidolon
} // namespace ns3
