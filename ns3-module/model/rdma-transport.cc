/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: an RDMA-like reliable transport over UDP with DCQCN rate control, for the packet model.
 */
#include "rdma-transport.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4-interface.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/ipv6-header.h"
#include "ns3/ipv6-interface.h"
#include "ns3/ip-l4-protocol.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/udp-header.h"
#include "ns3/udp-l4-protocol.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonRdmaTransport");

NS_OBJECT_ENSURE_REGISTERED(RdmaHeader);
NS_OBJECT_ENSURE_REGISTERED(RdmaSender);
NS_OBJECT_ENSURE_REGISTERED(RdmaReceiver);
NS_OBJECT_ENSURE_REGISTERED(RdmaFlow);

namespace
{
/// ECT(0) in the low two bits of the IPv4 TOS byte (RFC 3168): an ECN-capable packet.
constexpr uint8_t kEcnEct0 = 0x02;
/// IPv4 (20) + UDP (8) headers in front of the RdmaHeader.
constexpr uint32_t kIpUdpHeaders = 20 + 8;

/// a is newer than b in 16-bit serial arithmetic
bool
GenerationNewer(uint16_t a, uint16_t b)
{
    return static_cast<int16_t>(static_cast<uint16_t>(a - b)) > 0;
}

uint32_t g_nextFlowId = 1;
} // namespace

/**
 * The UDP ports of a node's RDMA flow ends, delivered by a hash of (address, port): in place of
 * UdpL4Protocol in the node's Ipv4L3Protocol (protocol 17), it hands a datagram for a port an
 * RDMA flow holds to that flow's end and every other datagram (and ICMP) to UdpL4Protocol, so
 * other UDP applications on the node run as before. A flow end binds no ns-3 socket: UDP's own
 * demultiplexer compares each datagram with every bound socket in turn
 * (Ipv4EndPointDemux::Lookup), and with one socket per flow end a GPU carrying hundreds of flows
 * spent a third of a live run there; and ns-3.37's UdpL4Protocol holds every socket it ever
 * created until the end of the run. A port a finished flow held stays known, and what still
 * arrives for it is dropped (a late duplicate, not a reason for an ICMP error).
 */
class RdmaUdpDemux : public IpL4Protocol
{
public:
    using Handler = Callback<void, Ptr<Packet>, const Ipv4Header&>;

    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::eidolon::RdmaUdpDemux")
                                .SetParent<IpL4Protocol>()
                                .SetGroupName("Eidolon");
        return tid;
    }

    /// A demux for `node`, put in UdpL4Protocol's place in its Ipv4L3Protocol.
    static Ptr<RdmaUdpDemux> Install(Ptr<Node> node)
    {
        Ptr<RdmaUdpDemux> demux = CreateObject<RdmaUdpDemux>();
        demux->m_udp = node->GetObject<UdpL4Protocol>();
        demux->m_ipv4 = node->GetObject<Ipv4L3Protocol>();
        NS_ABORT_MSG_IF(!demux->m_udp || !demux->m_ipv4,
                        "RDMA transport: node " << node->GetId() << " has no IPv4/UDP stack");
        demux->m_ipv4->Insert(demux); // takes protocol 17 over from UdpL4Protocol
        return demux;
    }

    /// Delivers datagrams to local:port to `handler`; false if a running flow end holds it.
    bool Bind(Ipv4Address local, uint16_t port, Handler handler)
    {
        Handler& h = m_ports[Key(local, port)];
        if (!h.IsNull())
        {
            return false;
        }
        h = handler;
        return true;
    }

    /// The flow end at local:port is done; what still arrives there is dropped.
    void Unbind(Ipv4Address local, uint16_t port) { m_ports[Key(local, port)] = Handler(); }

    /// Sends `p` from local:port to remote:port (both ends of a flow use its port) with `tos`,
    /// routed as UdpSocketImpl's datagrams are (the node's routing protocol sees the UDP header).
    void Send(Ptr<Packet> p, Ipv4Address local, Ipv4Address remote, uint16_t port, uint8_t tos)
    {
        UdpHeader udp;
        udp.SetSourcePort(port);
        udp.SetDestinationPort(port);
        p->AddHeader(udp);
        if (tos != 0)
        {
            SocketIpTosTag tag;
            tag.SetTos(tos);
            p->ReplacePacketTag(tag);
        }
        m_ipv4->Send(p, local, remote, UdpL4Protocol::PROT_NUMBER, nullptr);
    }

    int GetProtocolNumber() const override { return UdpL4Protocol::PROT_NUMBER; }

    RxStatus Receive(Ptr<Packet> p, const Ipv4Header& header, Ptr<Ipv4Interface> iface) override
    {
        UdpHeader udp;
        if (p->GetSize() >= udp.GetSerializedSize())
        {
            p->PeekHeader(udp);
            auto it = m_ports.find(Key(header.GetDestination(), udp.GetDestinationPort()));
            if (it != m_ports.end())
            {
                p->RemoveHeader(udp);
                if (!it->second.IsNull())
                {
                    Handler h = it->second; // the handler may unbind its port
                    h(p, header);
                }
                return RX_OK;
            }
        }
        return m_udp->Receive(p, header, iface);
    }

    RxStatus Receive(Ptr<Packet> p, const Ipv6Header& header, Ptr<Ipv6Interface> iface) override
    {
        return m_udp->Receive(p, header, iface);
    }

    void ReceiveIcmp(Ipv4Address icmpSource,
                     uint8_t icmpTtl,
                     uint8_t icmpType,
                     uint8_t icmpCode,
                     uint32_t icmpInfo,
                     Ipv4Address payloadSource,
                     Ipv4Address payloadDestination,
                     const uint8_t payload[8]) override
    {
        m_udp->ReceiveIcmp(icmpSource, icmpTtl, icmpType, icmpCode, icmpInfo, payloadSource,
                           payloadDestination, payload);
    }

    void ReceiveIcmp(Ipv6Address icmpSource,
                     uint8_t icmpTtl,
                     uint8_t icmpType,
                     uint8_t icmpCode,
                     uint32_t icmpInfo,
                     Ipv6Address payloadSource,
                     Ipv6Address payloadDestination,
                     const uint8_t payload[8]) override
    {
        m_udp->ReceiveIcmp(icmpSource, icmpTtl, icmpType, icmpCode, icmpInfo, payloadSource,
                           payloadDestination, payload);
    }

    void SetDownTarget(DownTargetCallback cb) override { m_udp->SetDownTarget(cb); }
    void SetDownTarget6(DownTargetCallback6 cb) override { m_udp->SetDownTarget6(cb); }
    DownTargetCallback GetDownTarget() const override { return m_udp->GetDownTarget(); }
    DownTargetCallback6 GetDownTarget6() const override { return m_udp->GetDownTarget6(); }

protected:
    void DoDispose() override
    {
        m_ports.clear();
        m_udp = nullptr;
        m_ipv4 = nullptr;
        IpL4Protocol::DoDispose();
    }

private:
    static uint64_t Key(Ipv4Address address, uint16_t port)
    {
        return (uint64_t(address.Get()) << 16) | port;
    }

    Ptr<UdpL4Protocol> m_udp;
    Ptr<Ipv4L3Protocol> m_ipv4;
    std::unordered_map<uint64_t, Handler> m_ports; //!< null: a finished flow's port
};

/**
 * What the RDMA transport keeps on a node (aggregated to it, so it goes with the node):
 * - the flows this node sends that are still running: a flow's applications are not added to its
 *   nodes (a node keeps its applications for the whole run), so the sender's node holds the flow,
 *   and through it both applications, until the sender has everything acknowledged; whatever still
 *   runs when the node is disposed is disposed with it;
 * - the node's RdmaUdpDemux, installed on first use.
 */
class RdmaNodeState : public Object
{
public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::eidolon::RdmaNodeState")
                                .SetParent<Object>()
                                .SetGroupName("Eidolon")
                                .AddConstructor<RdmaNodeState>();
        return tid;
    }

    /// The node's state, aggregated to it on first use.
    static Ptr<RdmaNodeState> Of(Ptr<Node> node)
    {
        Ptr<RdmaNodeState> state = node->GetObject<RdmaNodeState>();
        if (!state)
        {
            state = CreateObject<RdmaNodeState>();
            node->AggregateObject(state);
            state->m_demux = RdmaUdpDemux::Install(node);
        }
        return state;
    }

    /// The node's RDMA ports.
    static Ptr<RdmaUdpDemux> Demux(Ptr<Node> node) { return Of(node)->m_demux; }

    std::set<Ptr<RdmaFlow>> m_running; //!< flows this node sends, until their sender is done

protected:
    void DoDispose() override
    {
        std::set<Ptr<RdmaFlow>> running;
        running.swap(m_running);
        for (const Ptr<RdmaFlow>& flow : running)
        {
            flow->Dispose();
        }
        m_demux = nullptr; // the node's Ipv4L3Protocol holds it until it is disposed itself
        Object::DoDispose();
    }

private:
    Ptr<RdmaUdpDemux> m_demux;
};

NS_OBJECT_ENSURE_REGISTERED(RdmaUdpDemux);
NS_OBJECT_ENSURE_REGISTERED(RdmaNodeState);

// ------------------------------------------------------------------------------------ RdmaHeader

RdmaHeader::RdmaHeader()
    : m_type(DATA)
    , m_flags(0)
    , m_generation(0)
    , m_flowId(0)
    , m_sequence(0)
{
}

RdmaHeader::RdmaHeader(Type type, uint32_t flowId, uint64_t sequence)
    : m_type(type)
    , m_flags(0)
    , m_generation(0)
    , m_flowId(flowId)
    , m_sequence(sequence)
{
}

TypeId
RdmaHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::eidolon::RdmaHeader")
                            .SetParent<Header>()
                            .SetGroupName("Eidolon")
                            .AddConstructor<RdmaHeader>();
    return tid;
}

TypeId
RdmaHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
RdmaHeader::GetSerializedSize() const
{
    return SIZE;
}

void
RdmaHeader::Serialize(Buffer::Iterator start) const
{
    start.WriteU8(m_type);
    start.WriteU8(m_flags);
    start.WriteHtonU16(m_generation);
    start.WriteHtonU32(m_flowId);
    start.WriteHtonU64(m_sequence);
}

uint32_t
RdmaHeader::Deserialize(Buffer::Iterator start)
{
    m_type = static_cast<Type>(start.ReadU8());
    m_flags = start.ReadU8();
    m_generation = start.ReadNtohU16();
    m_flowId = start.ReadNtohU32();
    m_sequence = start.ReadNtohU64();
    return SIZE;
}

const char*
RdmaHeader::TypeName(Type type)
{
    switch (type)
    {
    case DATA:
        return "DATA";
    case ACK:
        return "ACK";
    case NACK:
        return "NACK";
    case CNP:
        return "CNP";
    }
    return "?";
}

void
RdmaHeader::Print(std::ostream& os) const
{
    os << TypeName(m_type) << " flow=" << m_flowId << " seq=" << m_sequence
       << " gen=" << m_generation;
    if (m_flags & FLAG_LAST)
    {
        os << " last";
    }
}

// ------------------------------------------------------------------------------------ RdmaSender

TypeId
RdmaSender::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::RdmaSender")
            .SetParent<Application>()
            .SetGroupName("Eidolon")
            .AddConstructor<RdmaSender>()
            .AddAttribute("PayloadSize",
                          "Payload bytes per DATA packet (RoCE MTU 4096). The path MTU must hold "
                          "PayloadSize + 44 (RdmaHeader 16, UDP 8, IPv4 20) or IPv4 fragments.",
                          UintegerValue(4096), MakeUintegerAccessor(&RdmaSender::m_payloadSize),
                          MakeUintegerChecker<uint32_t>(1, 65000))
            .AddAttribute("FrameOverhead",
                          "Bytes the link layer adds below IPv4 (PPP: 2); used for pacing only.",
                          UintegerValue(2), MakeUintegerAccessor(&RdmaSender::m_frameOverhead),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("EcnCapable",
                          "Send DATA as ECT(0) so that switches mark rather than drop.",
                          BooleanValue(true), MakeBooleanAccessor(&RdmaSender::m_ecnCapable),
                          MakeBooleanChecker())
            .AddAttribute("G", "DCQCN gain g of the alpha estimate.", DoubleValue(1.0 / 256),
                          MakeDoubleAccessor(&RdmaSender::m_g), MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("AlphaUpdatePeriod",
                          "DCQCN K: alpha decays by (1-g) every K without a CNP.",
                          TimeValue(MicroSeconds(55)), MakeTimeAccessor(&RdmaSender::m_alphaPeriod),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("RateIncreasePeriod", "DCQCN T: period of the rate-increase timer.",
                          TimeValue(MicroSeconds(55)),
                          MakeTimeAccessor(&RdmaSender::m_increasePeriod),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute(
                "ByteCounter", "DCQCN B: a rate-increase event every B bytes sent (0 disables).",
                UintegerValue(10 * 1000 * 1000), MakeUintegerAccessor(&RdmaSender::m_byteCounter),
                MakeUintegerChecker<uint64_t>())
            .AddAttribute("FastRecoverySteps",
                          "DCQCN F: rate-increase events of fast recovery after a CNP.",
                          UintegerValue(5), MakeUintegerAccessor(&RdmaSender::m_fastRecoverySteps),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("AdditiveIncrease", "DCQCN R_AI: target-rate step of additive increase.",
                          DataRateValue(DataRate("40Mb/s")),
                          MakeDataRateAccessor(&RdmaSender::m_rai), MakeDataRateChecker())
            .AddAttribute("HyperIncrease", "DCQCN R_HAI: target-rate step of hyper increase.",
                          DataRateValue(DataRate("200Mb/s")),
                          MakeDataRateAccessor(&RdmaSender::m_rhai), MakeDataRateChecker())
            .AddAttribute("MinRate", "The current rate never drops below this.",
                          DataRateValue(DataRate("100Mb/s")),
                          MakeDataRateAccessor(&RdmaSender::m_minRate), MakeDataRateChecker())
            .AddAttribute("InitialAlpha",
                          "alpha before the first CNP (1: the first CNP halves the rate).",
                          DoubleValue(1.0), MakeDoubleAccessor(&RdmaSender::m_initialAlpha),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("RetransmitTimeout",
                          "Everything sent, not everything acknowledged, nothing sent or "
                          "acknowledged for this long: rewind to the last acknowledged packet.",
                          TimeValue(MilliSeconds(1)), MakeTimeAccessor(&RdmaSender::m_rto),
                          MakeTimeChecker(NanoSeconds(1)))
            .AddTraceSource("RateChanged", "The DCQCN current rate changed (old, new).",
                            MakeTraceSourceAccessor(&RdmaSender::m_rateChangedTrace),
                            "ns3::eidolon::RdmaSender::RateChangedTracedCallback")
            .AddTraceSource("CnpReceived",
                            "A CNP arrived (flow id, alpha after the update, new current rate).",
                            MakeTraceSourceAccessor(&RdmaSender::m_cnpTrace),
                            "ns3::eidolon::RdmaSender::CnpTracedCallback")
            .AddTraceSource("GoBackN", "The sender rewound (next index before, next index after).",
                            MakeTraceSourceAccessor(&RdmaSender::m_goBackNTrace),
                            "ns3::eidolon::RdmaSender::GoBackNTracedCallback")
            .AddTraceSource("Tx", "A DATA packet was handed to IPv4.",
                            MakeTraceSourceAccessor(&RdmaSender::m_txTrace),
                            "ns3::Packet::TracedCallback");
    return tid;
}

RdmaSender::RdmaSender()
    : m_payloadSize(4096)
    , m_frameOverhead(2)
    , m_ecnCapable(true)
    , m_g(1.0 / 256)
    , m_byteCounter(0)
    , m_fastRecoverySteps(5)
    , m_initialAlpha(1.0)
    , m_port(0)
    , m_bytes(0)
    , m_total(0)
    , m_flowId(0)
    , m_sndNext(0)
    , m_sndUna(0)
    , m_highestSent(0)
    , m_generation(0)
    , m_nextTxNs(0)
    , m_started(false)
    , m_finished(false)
    , m_rc(0)
    , m_rt(0)
    , m_minRc(0)
    , m_alphaRef(1.0)
    , m_timerCount(0)
    , m_byteCount(0)
    , m_bytesSinceEvent(0)
    , m_recovering(false)
    , m_cnps(0)
    , m_retransmitted(0)
    , m_goBackNs(0)
    , m_timeouts(0)
    , m_packetsSent(0)
{
    NS_LOG_FUNCTION(this);
}

RdmaSender::~RdmaSender()
{
    NS_LOG_FUNCTION(this);
}

void
RdmaSender::Setup(Ipv4Address local, Ipv4Address remote, uint16_t port, uint64_t bytes,
                  DataRate lineRate, uint32_t flowId)
{
    NS_LOG_FUNCTION(this << local << remote << port << bytes << lineRate << flowId);
    NS_ABORT_MSG_IF(m_started, "RdmaSender::Setup after the start");
    NS_ABORT_MSG_IF(lineRate.GetBitRate() == 0, "RdmaSender: zero line rate");
    m_local = local;
    m_remote = remote;
    m_port = port;
    m_bytes = bytes;
    m_lineRate = lineRate;
    m_flowId = flowId;
}

void
RdmaSender::SetFinishedCallback(Callback<void> cb)
{
    m_onFinished = cb;
}

uint32_t
RdmaSender::GetWireSize(uint32_t payload) const
{
    return payload + RdmaHeader::SIZE + kIpUdpHeaders + m_frameOverhead;
}

DataRate
RdmaSender::GetCurrentRate() const
{
    return DataRate(static_cast<uint64_t>(std::llround(m_rc)));
}

DataRate
RdmaSender::GetTargetRate() const
{
    return DataRate(static_cast<uint64_t>(std::llround(m_rt)));
}

DataRate
RdmaSender::GetMinimumRateSeen() const
{
    return DataRate(static_cast<uint64_t>(std::llround(m_minRc)));
}

double
RdmaSender::GetAlpha() const
{
    if (m_cnps == 0)
    {
        return m_alphaRef; // the alpha timer starts at the first CNP
    }
    const int64_t periods = (Simulator::Now() - m_alphaTime).GetTimeStep() /
                            std::max<int64_t>(1, m_alphaPeriod.GetTimeStep());
    return m_alphaRef * std::pow(1.0 - m_g, static_cast<double>(periods));
}

void
RdmaSender::DoDispose()
{
    NS_LOG_FUNCTION(this);
    StopEverything();
    m_onFinished = Callback<void>();
    Application::DoDispose();
}

void
RdmaSender::StartApplication()
{
    NS_LOG_FUNCTION(this);
    NS_ABORT_MSG_IF(m_lineRate.GetBitRate() == 0, "RdmaSender started without Setup");
    m_started = true;
    m_total = std::max<uint64_t>(1, (m_bytes + m_payloadSize - 1) / m_payloadSize);
    m_rc = m_rt = m_minRc = static_cast<double>(m_lineRate.GetBitRate());
    m_alphaRef = m_initialAlpha;
    m_alphaTime = Simulator::Now();
    m_lastTx = m_lastProgress = Simulator::Now();
    m_nextTxNs = static_cast<double>(Simulator::Now().GetNanoSeconds());

    m_demux = RdmaNodeState::Demux(GetNode());
    NS_ABORT_MSG_IF(!m_demux->Bind(m_local, m_port, MakeCallback(&RdmaSender::Receive, this)),
                    "RdmaSender: " << m_local << ":" << m_port << " on node " << GetNode()->GetId()
                                   << " is held by a running flow");
    NS_LOG_INFO("flow " << m_flowId << " starts: " << m_bytes << " bytes in " << m_total
                        << " packets at " << m_lineRate);
    SendNext();
}

void
RdmaSender::StopApplication()
{
    NS_LOG_FUNCTION(this);
    StopEverything();
}

void
RdmaSender::StopEverything()
{
    m_sendEvent.Cancel();
    m_timeoutEvent.Cancel();
    m_increaseEvent.Cancel();
    if (m_demux)
    {
        m_demux->Unbind(m_local, m_port);
        m_demux = nullptr;
    }
}

void
RdmaSender::ScheduleSend()
{
    if (m_finished || m_sendEvent.IsRunning() || m_sndNext >= m_total)
    {
        return;
    }
    const double now = static_cast<double>(Simulator::Now().GetNanoSeconds());
    const double at = std::max(now, m_nextTxNs);
    m_sendEvent = Simulator::Schedule(NanoSeconds(static_cast<int64_t>(std::ceil(at - now))),
                                      &RdmaSender::SendNext, this);
}

void
RdmaSender::SendNext()
{
    if (m_finished || !m_demux)
    {
        return;
    }
    if (m_sndNext >= m_total)
    {
        ArmTimeout();
        return;
    }
    const uint64_t seq = m_sndNext;
    const uint64_t offset = seq * m_payloadSize;
    const uint32_t payload = static_cast<uint32_t>(
        std::min<uint64_t>(m_payloadSize, m_bytes - std::min(m_bytes, offset)));
    Ptr<Packet> p = Create<Packet>(payload);
    RdmaHeader h(RdmaHeader::DATA, m_flowId, seq);
    h.SetGeneration(m_generation);
    if (seq + 1 == m_total)
    {
        h.SetFlags(RdmaHeader::FLAG_LAST);
    }
    p->AddHeader(h);
    m_txTrace(p);
    m_demux->Send(p, m_local, m_remote, m_port, m_ecnCapable ? kEcnEct0 : 0);
    ++m_packetsSent;
    if (seq < m_highestSent)
    {
        ++m_retransmitted;
    }
    m_highestSent = std::max(m_highestSent, seq + 1);
    ++m_sndNext;
    m_lastTx = Simulator::Now();

    // Pacing: the ideal departure times advance by wireBits / Rc; events round up to whole ns
    // without accumulating the rounding (an idle sender restarts from now).
    const uint32_t wire = GetWireSize(payload);
    const double now = static_cast<double>(Simulator::Now().GetNanoSeconds());
    const double base = (now - m_nextTxNs < 1.0) ? m_nextTxNs : now;
    m_nextTxNs = base + wire * 8.0 * 1e9 / m_rc;

    // DCQCN byte counter (only while recovering: at line rate there is nothing to increase).
    if (m_recovering && m_byteCounter > 0)
    {
        m_bytesSinceEvent += wire;
        if (m_bytesSinceEvent >= m_byteCounter)
        {
            m_bytesSinceEvent -= m_byteCounter;
            ++m_byteCount;
            RateIncreaseEvent();
        }
    }

    if (m_sndNext < m_total)
    {
        ScheduleSend();
    }
    else
    {
        ArmTimeout();
    }
}

void
RdmaSender::Receive(Ptr<Packet> p, const Ipv4Header&)
{
    RdmaHeader h;
    if (m_finished || p->GetSize() < RdmaHeader::SIZE)
    {
        return;
    }
    p->RemoveHeader(h);
    if (h.GetFlowId() != m_flowId)
    {
        NS_LOG_WARN("flow " << m_flowId << ": ignoring " << h);
        return;
    }
    NS_LOG_LOGIC("flow " << m_flowId << " got " << h);
    switch (h.GetType())
    {
    case RdmaHeader::ACK:
        OnAck(h.GetSequence());
        break;
    case RdmaHeader::NACK:
        OnAck(h.GetSequence());
        // A NACK provoked by a packet sent before our latest rewind is stale: that rewind
        // already covers it.
        if (!m_finished && !GenerationNewer(m_generation, h.GetGeneration()))
        {
            Rewind(h.GetSequence());
        }
        break;
    case RdmaHeader::CNP:
        OnCnp();
        break;
    case RdmaHeader::DATA:
        break;
    }
}

void
RdmaSender::OnAck(uint64_t nextExpected)
{
    if (nextExpected <= m_sndUna)
    {
        return;
    }
    m_sndUna = std::min(nextExpected, m_total);
    m_lastProgress = Simulator::Now();
    if (m_sndNext < m_sndUna)
    {
        m_sndNext = m_sndUna; // the receiver has these already (after a timeout rewind)
    }
    if (m_sndUna >= m_total)
    {
        Finish();
    }
}

void
RdmaSender::Rewind(uint64_t to)
{
    if (to >= m_sndNext)
    {
        return;
    }
    NS_LOG_INFO("flow " << m_flowId << " go-back-N " << m_sndNext << " -> " << to);
    m_goBackNTrace(m_sndNext, to);
    ++m_goBackNs;
    ++m_generation;
    m_sndNext = to;
    ScheduleSend();
}

void
RdmaSender::ArmTimeout()
{
    if (m_finished || m_timeoutEvent.IsRunning())
    {
        return;
    }
    const Time deadline = std::max(m_lastTx, m_lastProgress) + m_rto;
    m_timeoutEvent = Simulator::Schedule(std::max(Time(0), deadline - Simulator::Now()),
                                         &RdmaSender::OnTimeout, this);
}

void
RdmaSender::OnTimeout()
{
    if (m_finished || m_sndNext < m_total)
    {
        return; // sending again; re-armed when everything is out
    }
    const Time deadline = std::max(m_lastTx, m_lastProgress) + m_rto;
    if (Simulator::Now() < deadline)
    {
        ArmTimeout();
        return;
    }
    ++m_timeouts;
    NS_LOG_INFO("flow " << m_flowId << " timeout at " << m_sndUna << "/" << m_total);
    Rewind(m_sndUna);
}

void
RdmaSender::Finish()
{
    if (m_finished)
    {
        return;
    }
    NS_LOG_INFO("flow " << m_flowId << " acknowledged");
    m_finished = true;
    StopEverything();
    if (!m_onFinished.IsNull())
    {
        Callback<void> cb = m_onFinished;
        m_onFinished = Callback<void>();
        cb();
    }
}

void
RdmaSender::SetCurrentRate(double bps)
{
    const double line = static_cast<double>(m_lineRate.GetBitRate());
    bps = std::min(line, std::max(bps, static_cast<double>(m_minRate.GetBitRate())));
    if (bps == m_rc)
    {
        return;
    }
    const DataRate before = GetCurrentRate();
    m_rc = bps;
    m_minRc = std::min(m_minRc, m_rc);
    const DataRate after = GetCurrentRate();
    if (before != after)
    {
        m_rateChangedTrace(before, after);
    }
}

void
RdmaSender::OnCnp()
{
    ++m_cnps;
    const double alpha = (m_cnps == 1) ? m_alphaRef : GetAlpha();
    m_rt = m_rc;
    SetCurrentRate(m_rc * (1.0 - alpha / 2.0));
    m_alphaRef = (1.0 - m_g) * alpha + m_g;
    m_alphaTime = Simulator::Now();
    NS_LOG_INFO("flow " << m_flowId << " CNP: alpha " << alpha << " -> " << m_alphaRef << ", Rc "
                        << GetCurrentRate() << ", Rt " << GetTargetRate());
    m_cnpTrace(m_flowId, m_alphaRef, GetCurrentRate());

    // The increase machinery restarts from the cut.
    m_timerCount = 0;
    m_byteCount = 0;
    m_bytesSinceEvent = 0;
    m_recovering = true;
    m_increaseEvent.Cancel();
    m_increaseEvent = Simulator::Schedule(m_increasePeriod, &RdmaSender::OnIncreaseTimer, this);
}

void
RdmaSender::OnIncreaseTimer()
{
    ++m_timerCount;
    RateIncreaseEvent();
    if (m_recovering && !m_finished)
    {
        m_increaseEvent = Simulator::Schedule(m_increasePeriod, &RdmaSender::OnIncreaseTimer, this);
    }
}

void
RdmaSender::RateIncreaseEvent()
{
    const double line = static_cast<double>(m_lineRate.GetBitRate());
    const uint32_t hi = std::max(m_timerCount, m_byteCount);
    const uint32_t lo = std::min(m_timerCount, m_byteCount);
    if (hi <= m_fastRecoverySteps)
    {
        // fast recovery: Rt unchanged
    }
    else if (lo > m_fastRecoverySteps)
    {
        m_rt += static_cast<double>(lo - m_fastRecoverySteps) *
                static_cast<double>(m_rhai.GetBitRate());
    }
    else
    {
        m_rt += static_cast<double>(m_rai.GetBitRate());
    }
    m_rt = std::min(m_rt, line);
    double rc = std::min(line, (m_rt + m_rc) / 2.0);
    // Back at line rate (within 0.1 %): nothing left to increase.
    if (m_rt >= line && line - rc <= line * 1e-3)
    {
        rc = line;
        m_recovering = false;
        m_increaseEvent.Cancel();
    }
    SetCurrentRate(rc);
}

// ---------------------------------------------------------------------------------- RdmaReceiver

TypeId
RdmaReceiver::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::RdmaReceiver")
            .SetParent<Application>()
            .SetGroupName("Eidolon")
            .AddConstructor<RdmaReceiver>()
            .AddAttribute("AckInterval",
                          "A cumulative ACK every this many in-order packets (and at the end).",
                          UintegerValue(16), MakeUintegerAccessor(&RdmaReceiver::m_ackInterval),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("CnpInterval",
                          "DCQCN notification point: at most one CNP per this interval.",
                          TimeValue(MicroSeconds(50)),
                          MakeTimeAccessor(&RdmaReceiver::m_cnpInterval), MakeTimeChecker())
            .AddAttribute("NackInterval",
                          "A NACK for the same expected packet and sender generation (or an ACK "
                          "answering duplicates) is repeated at most once per this interval.",
                          TimeValue(MicroSeconds(500)),
                          MakeTimeAccessor(&RdmaReceiver::m_nackInterval), MakeTimeChecker())
            .AddTraceSource("CnpSent", "A CNP was sent (flow id).",
                            MakeTraceSourceAccessor(&RdmaReceiver::m_cnpSentTrace),
                            "ns3::eidolon::RdmaReceiver::CnpSentTracedCallback")
            .AddTraceSource("NackSent", "A NACK was sent (expected packet index).",
                            MakeTraceSourceAccessor(&RdmaReceiver::m_nackSentTrace),
                            "ns3::eidolon::RdmaReceiver::NackSentTracedCallback")
            .AddTraceSource("Rx", "A DATA packet arrived (packet without RdmaHeader, ECN CE).",
                            MakeTraceSourceAccessor(&RdmaReceiver::m_rxTrace),
                            "ns3::eidolon::RdmaReceiver::RxTracedCallback");
    return tid;
}

RdmaReceiver::RdmaReceiver()
    : m_ackInterval(16)
    , m_port(0)
    , m_bytes(0)
    , m_total(0)
    , m_flowId(0)
    , m_expected(0)
    , m_bytesReceived(0)
    , m_sinceAck(0)
    , m_complete(false)
    , m_cnpEver(false)
    , m_nackEver(false)
    , m_lastNackSeq(0)
    , m_lastNackGen(0)
    , m_dupAckEver(false)
    , m_lastDupAckGen(0)
    , m_cnpsSent(0)
    , m_nacksSent(0)
    , m_acksSent(0)
    , m_cePackets(0)
    , m_outOfOrder(0)
    , m_duplicates(0)
{
    NS_LOG_FUNCTION(this);
}

RdmaReceiver::~RdmaReceiver()
{
    NS_LOG_FUNCTION(this);
}

void
RdmaReceiver::Setup(Ipv4Address local, Ipv4Address remote, uint16_t port, uint64_t bytes,
                    uint32_t payloadSize, uint32_t flowId)
{
    NS_LOG_FUNCTION(this << local << remote << port << bytes << payloadSize << flowId);
    NS_ABORT_MSG_IF(payloadSize == 0, "RdmaReceiver: zero payload size");
    m_local = local;
    m_remote = remote;
    m_port = port;
    m_bytes = bytes;
    m_total = std::max<uint64_t>(1, (bytes + payloadSize - 1) / payloadSize);
    m_flowId = flowId;
}

void
RdmaReceiver::SetCompleteCallback(Callback<void, Time> cb)
{
    m_onComplete = cb;
}

void
RdmaReceiver::DoDispose()
{
    NS_LOG_FUNCTION(this);
    Close();
    m_onComplete = Callback<void, Time>();
    Application::DoDispose();
}

void
RdmaReceiver::StartApplication()
{
    NS_LOG_FUNCTION(this);
    NS_ABORT_MSG_IF(m_total == 0, "RdmaReceiver started without Setup");
    m_demux = RdmaNodeState::Demux(GetNode());
    NS_ABORT_MSG_IF(!m_demux->Bind(m_local, m_port, MakeCallback(&RdmaReceiver::Receive, this)),
                    "RdmaReceiver: " << m_local << ":" << m_port << " on node "
                                     << GetNode()->GetId() << " is held by a running flow");
}

void
RdmaReceiver::StopApplication()
{
    NS_LOG_FUNCTION(this);
    Close();
}

void
RdmaReceiver::Close()
{
    if (m_demux)
    {
        m_demux->Unbind(m_local, m_port);
        m_demux = nullptr;
    }
}

void
RdmaReceiver::Receive(Ptr<Packet> p, const Ipv4Header& ip)
{
    if (p->GetSize() < RdmaHeader::SIZE)
    {
        return;
    }
    const bool ce = ip.GetEcn() == Ipv4Header::ECN_CE;
    RdmaHeader h;
    p->RemoveHeader(h);
    if (h.GetType() != RdmaHeader::DATA || h.GetFlowId() != m_flowId)
    {
        NS_LOG_WARN("flow " << m_flowId << ": ignoring " << h);
        return;
    }
    m_rxTrace(p, ce);
    OnData(h, p->GetSize(), ce);
}

void
RdmaReceiver::SendControl(RdmaHeader::Type type, uint64_t sequence, uint16_t generation)
{
    if (!m_demux)
    {
        return;
    }
    Ptr<Packet> p = Create<Packet>();
    RdmaHeader h(type, m_flowId, sequence);
    h.SetGeneration(generation);
    p->AddHeader(h);
    NS_LOG_LOGIC("flow " << m_flowId << " sends " << h);
    m_demux->Send(p, m_local, m_remote, m_port, 0);
}

void
RdmaReceiver::OnData(const RdmaHeader& h, uint32_t payload, bool ce)
{
    const Time now = Simulator::Now();
    // Notification point: CNPs for CE-marked packets, paced per flow.
    if (ce)
    {
        ++m_cePackets;
        if (!m_cnpEver || now - m_lastCnp >= m_cnpInterval)
        {
            m_cnpEver = true;
            m_lastCnp = now;
            ++m_cnpsSent;
            m_cnpSentTrace(m_flowId);
            SendControl(RdmaHeader::CNP, 0, 0);
        }
    }

    const uint64_t seq = h.GetSequence();
    if (seq == m_expected && !m_complete)
    {
        ++m_expected;
        m_bytesReceived += payload;
        ++m_sinceAck;
        if (m_expected >= m_total)
        {
            m_complete = true;
            m_completionTime = now;
            m_sinceAck = 0;
            ++m_acksSent;
            SendControl(RdmaHeader::ACK, m_expected, 0);
            NS_LOG_INFO("flow " << m_flowId << " complete: " << m_bytesReceived << " bytes");
            if (!m_onComplete.IsNull())
            {
                Callback<void, Time> cb = m_onComplete;
                m_onComplete = Callback<void, Time>();
                cb(now);
            }
        }
        else if (m_sinceAck >= m_ackInterval)
        {
            m_sinceAck = 0;
            ++m_acksSent;
            SendControl(RdmaHeader::ACK, m_expected, 0);
        }
    }
    else if (seq > m_expected && !m_complete)
    {
        ++m_outOfOrder;
        const uint16_t gen = h.GetGeneration();
        if (!m_nackEver || m_lastNackSeq != m_expected || GenerationNewer(gen, m_lastNackGen) ||
            now - m_lastNack >= m_nackInterval)
        {
            m_nackEver = true;
            m_lastNackSeq = m_expected;
            m_lastNackGen = gen;
            m_lastNack = now;
            ++m_nacksSent;
            m_nackSentTrace(m_expected);
            SendControl(RdmaHeader::NACK, m_expected, gen);
        }
    }
    else
    {
        // Below the expected index (or anything after completion): the sender went back further
        // than needed; tell it where we are.
        ++m_duplicates;
        const uint16_t gen = h.GetGeneration();
        if (!m_dupAckEver || GenerationNewer(gen, m_lastDupAckGen) ||
            now - m_lastDupAck >= m_nackInterval)
        {
            m_dupAckEver = true;
            m_lastDupAckGen = gen;
            m_lastDupAck = now;
            ++m_acksSent;
            SendControl(RdmaHeader::ACK, m_expected, 0);
        }
    }
}

// -------------------------------------------------------------------------------------- RdmaFlow

TypeId
RdmaFlow::GetTypeId()
{
    static TypeId tid = TypeId("ns3::eidolon::RdmaFlow")
                            .SetParent<Object>()
                            .SetGroupName("Eidolon")
                            .AddConstructor<RdmaFlow>();
    return tid;
}

RdmaFlow::RdmaFlow() = default;
RdmaFlow::~RdmaFlow() = default;

uint32_t
RdmaFlow::GetFlowId() const
{
    return m_sender ? m_sender->GetFlowId() : 0;
}

void
RdmaFlow::DoDispose()
{
    // Disposed while running (its node went first): stop both ends.
    if (m_sender)
    {
        m_sender->Dispose();
    }
    if (m_receiver)
    {
        m_receiver->Dispose();
    }
    m_sender = nullptr;
    m_receiver = nullptr;
    m_onClosed = Callback<void>();
    Object::DoDispose();
}

Ptr<RdmaFlow>
RdmaFlow::Install(Ptr<RdmaSender> snd, Ptr<RdmaReceiver> rcv, Ptr<Node> sender, Ptr<Node> receiver,
                  Ipv4Address receiverAddress, Ipv4Address senderAddress, uint16_t port,
                  uint64_t bytes, DataRate lineRate, Time start, Callback<void, Time> onComplete)
{
    NS_ABORT_MSG_IF(!sender || !receiver, "RdmaFlow::Start: null node");
    const uint32_t flowId = g_nextFlowId++;
    UintegerValue payload;
    snd->GetAttribute("PayloadSize", payload);
    snd->Setup(senderAddress, receiverAddress, port, bytes, lineRate, flowId);
    rcv->Setup(receiverAddress, senderAddress, port, bytes, uint32_t(payload.Get()), flowId);
    rcv->SetCompleteCallback(onComplete);
    Ptr<RdmaFlow> flow = CreateObject<RdmaFlow>();
    flow->m_sender = snd;
    flow->m_receiver = rcv;
    // Both ends close once the sender has everything acknowledged (the receiver answers
    // duplicates until then, so a lost final ACK cannot leave the sender retrying forever).
    RdmaFlow* raw = PeekPointer(flow);
    snd->SetFinishedCallback(Callback<void>([raw]() { raw->Finished(); }));

    // The applications run on the nodes without being added to them: a node keeps its
    // applications for the whole run, and a run carries millions of flows. The sender's node
    // holds the flow (and so both applications) until the sender is done; as
    // Node::AddApplication, each application is initialized (its start scheduled) in its node's
    // context.
    const Time delay = std::max(Time(0), start - Simulator::Now());
    rcv->SetStartTime(Time(0)); // listening before anything can arrive
    snd->SetStartTime(delay);
    rcv->SetNode(receiver);
    snd->SetNode(sender);
    RdmaNodeState::Of(sender)->m_running.insert(flow);
    Simulator::ScheduleWithContext(receiver->GetId(), Time(0), &Application::Initialize, rcv);
    Simulator::ScheduleWithContext(sender->GetId(), Time(0), &Application::Initialize, snd);
    return flow;
}

void
RdmaFlow::Finished()
{
    m_receiver->Close();
    if (!m_onClosed.IsNull())
    {
        Callback<void> cb = m_onClosed;
        m_onClosed = Callback<void>();
        cb();
    }
    // The flow lets itself go once the sender's own call has returned (it runs inside it); the
    // caller may still hold it to read the applications' counters.
    Ptr<RdmaFlow> self(this);
    RdmaNodeState::Of(m_sender->GetNode())->m_running.erase(self);
    Simulator::ScheduleNow([self]() {});
}

Ptr<RdmaFlow>
RdmaFlow::Start(Ptr<Node> sender, Ptr<Node> receiver, Ipv4Address receiverAddress,
                Ipv4Address senderAddress, uint16_t port, uint64_t bytes, DataRate lineRate,
                Time start, Callback<void, Time> onComplete)
{
    return RdmaFlow::Install(CreateObject<RdmaSender>(), CreateObject<RdmaReceiver>(), sender,
                             receiver, receiverAddress, senderAddress, port, bytes, lineRate, start,
                             onComplete);
}

// -------------------------------------------------------------------------------- RdmaFlowHelper

RdmaFlowHelper::RdmaFlowHelper()
{
    m_senderFactory.SetTypeId(RdmaSender::GetTypeId());
    m_receiverFactory.SetTypeId(RdmaReceiver::GetTypeId());
}

void
RdmaFlowHelper::SetSenderAttribute(const std::string& name, const AttributeValue& value)
{
    m_senderFactory.Set(name, value);
}

void
RdmaFlowHelper::SetReceiverAttribute(const std::string& name, const AttributeValue& value)
{
    m_receiverFactory.Set(name, value);
}

Ptr<RdmaFlow>
RdmaFlowHelper::Start(Ptr<Node> sender, Ptr<Node> receiver, Ipv4Address receiverAddress,
                      Ipv4Address senderAddress, uint16_t port, uint64_t bytes, DataRate lineRate,
                      Time start, Callback<void, Time> onComplete) const
{
    return RdmaFlow::Install(
        m_senderFactory.Create<RdmaSender>(), m_receiverFactory.Create<RdmaReceiver>(), sender,
        receiver, receiverAddress, senderAddress, port, bytes, lineRate, start, onComplete);
}

} // namespace eidolon
} // namespace ns3
