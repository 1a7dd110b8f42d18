/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: an RDMA-like reliable transport over UDP with DCQCN rate control, for the packet model.
 */
#ifndef EIDOLON_RDMA_TRANSPORT_H
#define EIDOLON_RDMA_TRANSPORT_H

#include "ns3/application.h"
#include "ns3/callback.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/header.h"
#include "ns3/ipv4-address.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"
#include "ns3/object.h"
#include "ns3/ptr.h"
#include "ns3/ipv4-header.h"
#include "ns3/packet.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <string>

namespace ns3
{

class Node;
class Packet;

namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief The transport header of every RDMA-like packet, right after the UDP header (16 bytes,
 * the size of RoCEv2's BTH plus ICRC).
 *
 * Wire format (network byte order): type (1), flags (1), generation (2), flow id (4), sequence (8).
 * DATA: sequence is the packet index in the flow (0-based). ACK: sequence is the next expected
 * index (every index below it was received in order). NACK: sequence is the expected index (an
 * implicit ACK of everything below it) and generation echoes the generation of the out-of-order
 * packet that triggered it. CNP: sequence is unused (0).
 */
class RdmaHeader : public Header
{
public:
    enum Type : uint8_t
    {
        DATA = 0,
        ACK = 1,
        NACK = 2,
        CNP = 3,
    };
    /// flags bit: the last DATA packet of the flow
    static constexpr uint8_t FLAG_LAST = 0x01;
    /// bytes on the wire
    static constexpr uint32_t SIZE = 16;

    RdmaHeader();
    RdmaHeader(Type type, uint32_t flowId, uint64_t sequence);

    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;
    void Print(std::ostream& os) const override;

    Type GetType() const { return m_type; }
    void SetType(Type type) { m_type = type; }
    uint8_t GetFlags() const { return m_flags; }
    void SetFlags(uint8_t flags) { m_flags = flags; }
    /// The sender's go-back-N generation (bumped at every rewind); NACKs echo it.
    uint16_t GetGeneration() const { return m_generation; }
    void SetGeneration(uint16_t generation) { m_generation = generation; }
    uint32_t GetFlowId() const { return m_flowId; }
    void SetFlowId(uint32_t flowId) { m_flowId = flowId; }
    uint64_t GetSequence() const { return m_sequence; }
    void SetSequence(uint64_t sequence) { m_sequence = sequence; }

    static const char* TypeName(Type type);

private:
    Type m_type;
    uint8_t m_flags;
    uint16_t m_generation;
    uint32_t m_flowId;
    uint64_t m_sequence;
};

class RdmaReceiver;
class RdmaUdpDemux;

/**
 * \ingroup eidolon
 * \brief The sending side of one RDMA-like flow: paced UDP packets, go-back-N, DCQCN reaction
 * point.
 *
 * The flow is cut into packets of PayloadSize bytes (the last may be shorter; an empty flow sends
 * one empty packet). Packets leave one every wireBits/Rc, where wireBits counts payload,
 * RdmaHeader, UDP and IPv4 headers plus FrameOverhead, and Rc is the DCQCN current rate (line rate
 * at the start). DATA packets are ECN-capable (ECT(0)) when EcnCapable is set.
 *
 * Reliability (go-back-N as RoCE NICs do): the receiver acknowledges cumulatively; a NACK rewinds
 * the sender to the NACKed index (NACKs triggered by packets sent before the latest rewind are
 * ignored, thanks to the generation echoed in the NACK); when everything is sent but not all
 * acknowledged and nothing happened for RetransmitTimeout, the sender rewinds to the last
 * acknowledged index.
 *
 * DCQCN (Zhu et al., SIGCOMM 2015): on a CNP, Rt = Rc, Rc = Rc (1 - alpha/2),
 * alpha = (1 - g) alpha + g, and the increase machinery restarts; alpha decays by (1 - g) every
 * AlphaUpdatePeriod without CNP. Rate-increase events come from a timer (RateIncreasePeriod) and a
 * byte counter (ByteCounter bytes sent). With T and BC the two event counts since the last CNP:
 * while max(T, BC) <= F fast recovery Rc = (Rt + Rc)/2; when min(T, BC) > F hyper increase Rt +=
 * (min(T, BC) - F) R_HAI; otherwise additive increase Rt += R_AI; both followed by Rc = (Rt +
 * Rc)/2. Rc and Rt never exceed the line rate, Rc never drops below MinRate.
 */
class RdmaSender : public Application
{
public:
    static TypeId GetTypeId();
    RdmaSender();
    ~RdmaSender() override;

    /// Must be called before the application starts.
    void Setup(Ipv4Address local, Ipv4Address remote, uint16_t port, uint64_t bytes,
               DataRate lineRate, uint32_t flowId);
    /// Called (once) when every packet is acknowledged; the sender has given up its port then.
    void SetFinishedCallback(Callback<void> cb);

    uint32_t GetFlowId() const { return m_flowId; }
    uint64_t GetBytes() const { return m_bytes; }
    uint64_t GetPacketCount() const { return m_total; }
    /// payload + RdmaHeader + UDP + IPv4 + FrameOverhead of a full packet
    uint32_t GetWireSize(uint32_t payload) const;
    DataRate GetLineRate() const { return m_lineRate; }
    DataRate GetCurrentRate() const;
    DataRate GetTargetRate() const;
    /// Lowest current rate so far (line rate if no CNP came).
    DataRate GetMinimumRateSeen() const;
    /// alpha now (decays lazily, exactly as a timer every AlphaUpdatePeriod would)
    double GetAlpha() const;
    uint64_t GetCnpCount() const { return m_cnps; }
    /// DATA packets sent again (index below the highest index sent before)
    uint64_t GetRetransmittedPackets() const { return m_retransmitted; }
    uint64_t GetGoBackNCount() const { return m_goBackNs; }
    uint64_t GetTimeoutCount() const { return m_timeouts; }
    uint64_t GetPacketsSent() const { return m_packetsSent; }
    bool IsFinished() const { return m_finished; }

    /// Trace signature: old rate, new rate.
    typedef void (*RateChangedTracedCallback)(DataRate oldRate, DataRate newRate);
    /// Trace signature: flow id, alpha after the update, new current rate.
    typedef void (*CnpTracedCallback)(uint32_t flowId, double alpha, DataRate rate);
    /// Trace signature: from (next index before), to (next index after the rewind).
    typedef void (*GoBackNTracedCallback)(uint64_t from, uint64_t to);

protected:
    void DoDispose() override;

private:
    void StartApplication() override;
    void StopApplication() override;

    void SendNext();
    void ScheduleSend();
    void Receive(Ptr<Packet> p, const Ipv4Header& ip);
    void OnAck(uint64_t nextExpected);
    void Rewind(uint64_t to);
    void OnCnp();
    void OnIncreaseTimer();
    void RateIncreaseEvent();
    void SetCurrentRate(double bps);
    void ArmTimeout();
    void OnTimeout();
    void Finish();
    void StopEverything();

    // attributes
    uint32_t m_payloadSize;
    uint32_t m_frameOverhead;
    bool m_ecnCapable;
    double m_g;
    Time m_alphaPeriod;
    Time m_increasePeriod;
    uint64_t m_byteCounter;
    uint32_t m_fastRecoverySteps;
    DataRate m_rai;
    DataRate m_rhai;
    DataRate m_minRate;
    double m_initialAlpha;
    Time m_rto;

    // flow
    Ipv4Address m_local;
    Ipv4Address m_remote;
    uint16_t m_port;
    uint64_t m_bytes;
    uint64_t m_total; //!< packets
    uint32_t m_flowId;
    DataRate m_lineRate;
    Ptr<RdmaUdpDemux> m_demux; //!< the node's RDMA ports, while this end holds its port
    Callback<void> m_onFinished;

    // go-back-N
    uint64_t m_sndNext;     //!< next index to send
    uint64_t m_sndUna;      //!< every index below is acknowledged
    uint64_t m_highestSent; //!< one past the highest index ever sent
    uint16_t m_generation;
    Time m_lastTx;
    Time m_lastProgress;
    EventId m_sendEvent;
    EventId m_timeoutEvent;
    double m_nextTxNs; //!< ideal time of the next transmission (fractional ns, no drift)
    bool m_started;
    bool m_finished;

    // DCQCN reaction point
    double m_rc; //!< current rate, bit/s
    double m_rt; //!< target rate, bit/s
    double m_minRc;
    double m_alphaRef; //!< alpha at m_alphaTime
    Time m_alphaTime;  //!< last CNP (the alpha timer restarts there)
    uint32_t m_timerCount;
    uint32_t m_byteCount;
    uint64_t m_bytesSinceEvent;
    bool m_recovering; //!< increase machinery running (Rc or Rt below line rate)
    EventId m_increaseEvent;

    // counters
    uint64_t m_cnps;
    uint64_t m_retransmitted;
    uint64_t m_goBackNs;
    uint64_t m_timeouts;
    uint64_t m_packetsSent;

    TracedCallback<DataRate, DataRate> m_rateChangedTrace;
    TracedCallback<uint32_t, double, DataRate> m_cnpTrace;
    TracedCallback<uint64_t, uint64_t> m_goBackNTrace;
    TracedCallback<Ptr<const Packet>> m_txTrace;
};

/**
 * \ingroup eidolon
 * \brief The receiving side of one RDMA-like flow: in-order delivery, cumulative ACKs, NACKs,
 * and the DCQCN notification point (CNPs on ECN CE).
 *
 * Accepts only the expected index; acknowledges every AckInterval in-order packets and at the end;
 * an out-of-order packet sends a NACK for the expected index at most once per (expected index,
 * sender generation), or again after NackInterval; a duplicate (below the expected index) is
 * answered by an ACK likewise at most once per generation or NackInterval, which stops a sender
 * that rewound on a timeout (for example after a lost final ACK). A CE-marked DATA packet sends a
 * CNP, at most one per CnpInterval. Control packets go to the sender's address and the flow's port.
 */
class RdmaReceiver : public Application
{
public:
    static TypeId GetTypeId();
    RdmaReceiver();
    ~RdmaReceiver() override;

    /// Must be called before the application starts.
    void Setup(Ipv4Address local, Ipv4Address remote, uint16_t port, uint64_t bytes,
               uint32_t payloadSize, uint32_t flowId);
    /// Fires once, with Simulator::Now(), when every byte has arrived in order.
    void SetCompleteCallback(Callback<void, Time> cb);
    /// Gives up the port (the sender has everything acknowledged).
    void Close();

    uint32_t GetFlowId() const { return m_flowId; }
    uint64_t GetBytesReceived() const { return m_bytesReceived; }
    uint64_t GetExpected() const { return m_expected; }
    bool IsComplete() const { return m_complete; }
    Time GetCompletionTime() const { return m_completionTime; }
    uint64_t GetCnpsSent() const { return m_cnpsSent; }
    uint64_t GetNacksSent() const { return m_nacksSent; }
    uint64_t GetAcksSent() const { return m_acksSent; }
    uint64_t GetCePackets() const { return m_cePackets; }
    uint64_t GetOutOfOrderPackets() const { return m_outOfOrder; }
    uint64_t GetDuplicatePackets() const { return m_duplicates; }

    /// Trace signature: flow id.
    typedef void (*CnpSentTracedCallback)(uint32_t flowId);
    /// Trace signature: the expected packet index the NACK asks for.
    typedef void (*NackSentTracedCallback)(uint64_t expected);
    /// Trace signature: the DATA packet without its RdmaHeader, whether it carried ECN CE.
    typedef void (*RxTracedCallback)(Ptr<const Packet> packet, bool ce);

protected:
    void DoDispose() override;

private:
    void StartApplication() override;
    void StopApplication() override;
    void Receive(Ptr<Packet> p, const Ipv4Header& ip);
    void OnData(const RdmaHeader& header, uint32_t payload, bool ce);
    void SendControl(RdmaHeader::Type type, uint64_t sequence, uint16_t generation);

    uint32_t m_ackInterval;
    Time m_cnpInterval;
    Time m_nackInterval;

    Ipv4Address m_local;
    Ipv4Address m_remote;
    uint16_t m_port;
    uint64_t m_bytes;
    uint64_t m_total;
    uint32_t m_flowId;
    Ptr<RdmaUdpDemux> m_demux; //!< the node's RDMA ports, while this end holds its port
    Callback<void, Time> m_onComplete;

    uint64_t m_expected;
    uint64_t m_bytesReceived;
    uint32_t m_sinceAck;
    bool m_complete;
    Time m_completionTime;
    bool m_cnpEver;
    Time m_lastCnp;
    bool m_nackEver;
    uint64_t m_lastNackSeq;
    uint16_t m_lastNackGen;
    Time m_lastNack;
    bool m_dupAckEver;
    uint16_t m_lastDupAckGen;
    Time m_lastDupAck;

    uint64_t m_cnpsSent;
    uint64_t m_nacksSent;
    uint64_t m_acksSent;
    uint64_t m_cePackets;
    uint64_t m_outOfOrder;
    uint64_t m_duplicates;

    TracedCallback<uint32_t> m_cnpSentTrace;
    TracedCallback<uint64_t> m_nackSentTrace;
    TracedCallback<Ptr<const Packet>, bool> m_rxTrace;
};

/**
 * \ingroup eidolon
 * \brief One RDMA-like flow: a sender application on one node, a receiver on another, both on the
 * flow's UDP port; Start() runs them. The applications are not added to the nodes (a node keeps
 * its applications for the whole run): the flow holds them, and the sender's node holds the flow,
 * until the sender has everything acknowledged (a caller that keeps the flow can still read them
 * afterwards); a flow still running when its sender's node is disposed is disposed with it.
 */
class RdmaFlow : public Object
{
public:
    static TypeId GetTypeId();
    RdmaFlow();
    ~RdmaFlow() override;

    /**
     * Runs an RdmaReceiver on `receiver` (receiverAddress:port) and an RdmaSender on `sender`
     * (senderAddress:port), both on UDP port `port` as RoCE v2 queue pairs, and starts the flow at the
     * absolute simulation time `start` (now, if `start` is in the past). `onComplete` (may be null)
     * fires once with Simulator::Now() when the receiver has every byte in order. The applications
     * take their attributes from the defaults
     * (Config::SetDefault("ns3::eidolon::RdmaSender::PayloadSize", ...)). The port must be free on
     * both addresses until the flow is done (both ends close when the sender has everything
     * acknowledged). A flow end binds no ns-3 socket: the node's UDP datagrams for RDMA ports
     * are delivered by a hash of address and port, the others by UdpL4Protocol as before.
     */
    static Ptr<RdmaFlow> Start(Ptr<Node> sender, Ptr<Node> receiver, Ipv4Address receiverAddress,
                               Ipv4Address senderAddress, uint16_t port, uint64_t bytes,
                               DataRate lineRate, Time start, Callback<void, Time> onComplete);

    /// Called once both ends have closed (the sender has everything acknowledged): the flow's
    /// port is free again on both nodes.
    void SetClosedCallback(Callback<void> cb) { m_onClosed = cb; }

    Ptr<RdmaSender> GetSender() const { return m_sender; }
    Ptr<RdmaReceiver> GetReceiver() const { return m_receiver; }
    uint32_t GetFlowId() const;

protected:
    void DoDispose() override;

private:
    friend class RdmaFlowHelper;
    static Ptr<RdmaFlow> Install(Ptr<RdmaSender> snd, Ptr<RdmaReceiver> rcv, Ptr<Node> sender,
                                 Ptr<Node> receiver, Ipv4Address receiverAddress,
                                 Ipv4Address senderAddress, uint16_t port, uint64_t bytes,
                                 DataRate lineRate, Time start, Callback<void, Time> onComplete);

    /// The sender has everything acknowledged: close the receiver, let the flow go.
    void Finished();

    Ptr<RdmaSender> m_sender;
    Ptr<RdmaReceiver> m_receiver;
    Callback<void> m_onClosed;
};

/**
 * \ingroup eidolon
 * \brief ns-3 style helper: sets attributes on the sender and receiver of the flows it starts.
 */
class RdmaFlowHelper
{
public:
    RdmaFlowHelper();
    /// An attribute of ns3::eidolon::RdmaSender for the flows this helper starts.
    void SetSenderAttribute(const std::string& name, const AttributeValue& value);
    /// An attribute of ns3::eidolon::RdmaReceiver for the flows this helper starts.
    void SetReceiverAttribute(const std::string& name, const AttributeValue& value);
    /// As RdmaFlow::Start, with this helper's attributes.
    Ptr<RdmaFlow> Start(Ptr<Node> sender, Ptr<Node> receiver, Ipv4Address receiverAddress,
                        Ipv4Address senderAddress, uint16_t port, uint64_t bytes, DataRate lineRate,
                        Time start, Callback<void, Time> onComplete) const;

private:
    ObjectFactory m_senderFactory;
    ObjectFactory m_receiverFactory;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_RDMA_TRANSPORT_H
