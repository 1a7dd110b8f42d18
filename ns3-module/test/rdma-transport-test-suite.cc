// The RDMA-like transport (UDP, go-back-N, DCQCN) on small ns-3 networks built here: an idle path
// against the serialization formula, an ECN incast, a lossy bottleneck, targeted drops that need
// the NACK and timeout paths, the DCQCN rate state machine against its formulas, port reuse.
//
// Wire size of a full DATA packet: 4096 payload + 16 RdmaHeader + 8 UDP + 20 IPv4 + 2 PPP = 4142 B.
#include "eidolon-test-checks.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/error-model.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-generator.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-global-routing-helper.h"
#include "ns3/ipv4-header.h"
#include "ns3/log.h"
#include "ns3/node-container.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/pointer.h"
#include "ns3/ppp-header.h"
#include "ns3/queue-disc.h"
#include "ns3/queue-size.h"
#include "ns3/rdma-transport.h"
#include "ns3/red-queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/udp-header.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace ns3;
using namespace ns3::eidolon;

NS_LOG_COMPONENT_DEFINE("EidolonRdmaTransportTest");

namespace
{
constexpr uint32_t kPayload = 4096;
constexpr uint32_t kWire = kPayload + 16 + 8 + 20 + 2; // 4142
const Time kLinkDelay = MicroSeconds(1);

struct SimulatorGuard
{
    SimulatorGuard() { Ipv4AddressGenerator::Reset(); }
    ~SimulatorGuard() { Simulator::Destroy(); }
};

enum class Bottleneck
{
    Fifo,        //!< 1000-packet FIFO: never drops in these tests
    RedEcn,      //!< RED marking CE (DCQCN-style thresholds), never drops here
    TinyDropTail //!< 4-packet FIFO, no ECN: drops
};

/// Hosts h0..h(n-1), each on its own point-to-point link to one switch (1 us per link). The link of
/// the last host runs at `lastRate` and the switch's queue disc towards it is the bottleneck.
struct Star
{
    NodeContainer hosts;
    Ptr<Node> sw;
    std::vector<Ipv4Address> addr;
    std::vector<Ptr<PointToPointNetDevice>> hostDev;
    Ptr<QueueDisc> bottleneck;
};

Star
MakeStar(uint32_t n, DataRate hostRate, DataRate lastRate, Bottleneck kind)
{
    Star s;
    s.hosts.Create(n);
    s.sw = CreateObject<Node>();
    InternetStackHelper stack;
    stack.Install(s.hosts);
    stack.Install(s.sw);

    PointToPointHelper p2p;
    p2p.SetChannelAttribute("Delay", TimeValue(kLinkDelay));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(9000));
    // Queueing happens in the queue discs, not in the devices.
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("1000p")));

    for (uint32_t i = 0; i < n; ++i)
    {
        const bool last = (i + 1 == n);
        const DataRate rate = last ? lastRate : hostRate;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(rate));
        NetDeviceContainer d = p2p.Install(s.hosts.Get(i), s.sw);
        fifo.Install(d.Get(0));
        if (!last || kind == Bottleneck::Fifo)
        {
            QueueDiscContainer q = fifo.Install(d.Get(1));
            if (last)
            {
                s.bottleneck = q.Get(0);
            }
        }
        else if (kind == Bottleneck::RedEcn)
        {
            // DCQCN's marking (Kmin 5 KB, Kmax 200 KB) in 4 KB packets, on the instantaneous
            // queue (QW = 1) as switches do. The paper's Pmax = 1 % was for 1 KB packets at 40
            // Gb/s, ~250 packets per 50 us CNP window; at 10 Gb/s with 4 KB packets a window holds
            // ~15, so the same chance of a CNP per window needs Pmax ~ 1/6 (LInterm 6). With 1 %
            // the queue overshoots into the gentle region before anyone hears of it, every window
            // then marks, and the senders halve down to MinRate.
            TrafficControlHelper red;
            // clang-format off
            red.SetRootQueueDisc("ns3::RedQueueDisc",
                                 "UseEcn", BooleanValue(true),
                                 "UseHardDrop", BooleanValue(false),
                                 "MinTh", DoubleValue(2),
                                 "MaxTh", DoubleValue(50),
                                 "LInterm", DoubleValue(6),
                                 "QW", DoubleValue(1.0),
                                 "MeanPktSize", UintegerValue(kWire),
                                 "LinkBandwidth", DataRateValue(rate),
                                 "LinkDelay", TimeValue(kLinkDelay),
                                 "MaxSize", QueueSizeValue(QueueSize("2000p")));
            // clang-format on
            s.bottleneck = red.Install(d.Get(1)).Get(0);
            // Its own random stream: the outcome must not depend on which tests ran before.
            DynamicCast<RedQueueDisc>(s.bottleneck)->AssignStreams(7);
        }
        else
        {
            TrafficControlHelper tiny;
            tiny.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("4p")));
            s.bottleneck = tiny.Install(d.Get(1)).Get(0);
        }
        Ipv4AddressHelper ip;
        ip.SetBase(Ipv4Address((10u << 24) | (i << 8)), Ipv4Mask("255.255.255.0"));
        Ipv4InterfaceContainer ifs = ip.Assign(d);
        s.addr.push_back(ifs.GetAddress(0));
        s.hostDev.push_back(DynamicCast<PointToPointNetDevice>(d.Get(0)));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    return s;
}

/// Records every onComplete call of one flow.
struct Completion
{
    std::vector<Time> calls;
    Callback<void, Time> Cb()
    {
        return Callback<void, Time>([this](Time t) { calls.push_back(t); });
    }
};

/// Serialization time of `bytes` at `rate`, in seconds.
double
Tx(double bytes, DataRate rate)
{
    return bytes * 8.0 / static_cast<double>(rate.GetBitRate());
}

/// Drops chosen RdmaHeader packets (type, sequence) once each, as a receive error model of a
/// point-to-point device (which sees PPP + IPv4 + UDP + RdmaHeader).
class RdmaDropper : public ErrorModel
{
public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::eidolon::test::RdmaDropper").SetParent<ErrorModel>();
        return tid;
    }
    std::multiset<std::pair<int, uint64_t>> toDrop;
    std::vector<std::pair<int, uint64_t>> dropped;

private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        Ptr<Packet> c = p->Copy();
        PppHeader ppp;
        c->RemoveHeader(ppp);
        if (ppp.GetProtocol() != 0x0021)
        {
            return false;
        }
        Ipv4Header ip;
        c->RemoveHeader(ip);
        if (ip.GetProtocol() != 17)
        {
            return false;
        }
        UdpHeader udp;
        c->RemoveHeader(udp);
        RdmaHeader h;
        c->RemoveHeader(h);
        auto it = toDrop.find({int(h.GetType()), h.GetSequence()});
        if (it == toDrop.end())
        {
            return false;
        }
        dropped.push_back(*it);
        toDrop.erase(it);
        return true;
    }
    void DoReset() override {}
};

struct RateLog
{
    std::vector<std::pair<Time, double>> changes; // (when, new rate in bit/s)
    void Connect(Ptr<RdmaSender> s)
    {
        s->TraceConnectWithoutContext(
            "RateChanged", Callback<void, DataRate, DataRate>(
                               [this](DataRate, DataRate now) {
                                   changes.emplace_back(Simulator::Now(), double(now.GetBitRate()));
                               }));
    }
};

/// The RDMA transport: one TestCase per check, each check a member below.
class RdmaTransportTestCase : public TestCase
{
public:
    /// One of the checks below.
    using Check = void (RdmaTransportTestCase::*)();

    RdmaTransportTestCase(const std::string& name, Check check)
        : TestCase(name)
        , m_check(check)
    {
    }

    void HeaderRoundTrip();
    void IdlePathCompletesAtLineRate();
    void IncastTwoFlowsDcqcnReactsAndSharesTheBottleneck();
    void LossyBottleneckGoBackNCompletes();
    void LostMiddleTailAndFinalAckRecover();
    void DcqcnRateStateMachineFollowsThePaper();
    void PortIsReusableAfterAFlowAndCallbacksFireOnce();
    void FlowsLeaveNothingOnTheirNodes();
    void OtherUdpTrafficOnTheNodesIsUntouched();

private:
    void DoRun() override { (this->*m_check)(); }

    Check m_check;
};
} // namespace

void
RdmaTransportTestCase::HeaderRoundTrip()
{
    RdmaHeader h(RdmaHeader::NACK, 0xdeadbeef, 0x0123456789abcdefULL);
    h.SetGeneration(65535);
    h.SetFlags(RdmaHeader::FLAG_LAST);
    Ptr<Packet> p = Create<Packet>(100);
    p->AddHeader(h);
    NS_TEST_EXPECT_MSG_EQ(p->GetSize(), 116u, "");
    RdmaHeader g;
    p->RemoveHeader(g);
    NS_TEST_EXPECT_MSG_EQ(g.GetType(), RdmaHeader::NACK, "");
    NS_TEST_EXPECT_MSG_EQ(g.GetFlowId(), 0xdeadbeefu, "");
    NS_TEST_EXPECT_MSG_EQ(g.GetSequence(), 0x0123456789abcdefULL, "");
    NS_TEST_EXPECT_MSG_EQ(g.GetGeneration(), 65535, "");
    NS_TEST_EXPECT_MSG_EQ(g.GetFlags(), RdmaHeader::FLAG_LAST, "");
}

// (1) One flow, idle 10 Gb/s path h0 -> switch -> h1. The sender paces at line rate, so the
// receiver has the last byte after N packet times at the first hop, one more at the switch (store
// and forward) and 2 x 1 us of propagation: T = (N + 1) * 4142 * 8 / 10 Gb/s + 2 us, N = bytes /
// 4096. This is bytes * (4142/4096) / rate + propagation plus one packet of pipeline fill. ns-3
// rounds each serialization to whole ns (3313.6 -> 3314 ns), which the sender's ideal pacing does
// not, so the link runs up to 1 ns per packet late per hop: tolerance 2 ns per packet.
void
RdmaTransportTestCase::IdlePathCompletesAtLineRate()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    Star s = MakeStar(2, rate, rate, Bottleneck::Fifo);
    const uint64_t bytes = 4 * 1024 * 1024; // 1024 packets
    const uint64_t n = bytes / kPayload;
    const Time start = MicroSeconds(10);
    Completion done;
    Ptr<RdmaFlow> f = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      bytes, rate, start, done.Cb());
    Simulator::Run();

    NS_TEST_ASSERT_MSG_EQ(done.calls.size(), 1u, "");
    const double measured = (done.calls[0] - start).GetSeconds();
    const double expected = double(n + 1) * Tx(kWire, rate) + 2 * kLinkDelay.GetSeconds();
    const double formula = Tx(double(bytes) * kWire / kPayload, rate) + 2 * kLinkDelay.GetSeconds();
    NS_LOG_INFO("idle path: measured " << measured * 1e6 << " us, expected " << expected * 1e6
                                       << " us, bytes*(1+overhead)/rate+prop " << formula * 1e6
                                       << " us");
    NS_TEST_EXPECT_MSG_GT_OR_EQ(measured, expected - 1e-9, "");
    NS_TEST_EXPECT_MSG_LT_OR_EQ(measured, expected + 2e-9 * double(n) + 1e-9, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetReceiver()->GetBytesReceived(), bytes, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->IsFinished(), true, ""); // the final ACK arrived
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetCnpCount(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetRetransmittedPackets(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetPacketsSent(), n, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetMinimumRateSeen(), rate, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetReceiver()->GetCePackets(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetWireSize(kPayload), kWire, "");
}

// (2) Incast: h0 and h1 send 8 MiB each to h2 through one 10 Gb/s bottleneck (switch -> h2) with
// RED marking ECN CE. DCQCN must react (CNPs, rates below line rate), nothing is dropped, and the
// two flows together need at least total wire bytes / bottleneck rate (ideal, 13.57 ms). Upper
// bounds, in two phases:
//  - while both run, a cut (alpha near 1 halves a sender) can leave the link idle once the ~50
//    packet queue (170 us) has drained, before fast recovery brings the rate back: we require 80 %
//    of the link to carry delivered bytes until the first flow is done (0.83-0.98 over 12 RED
//    random streams);
//  - then the survivor climbs back by R_AI = 40 Mb/s per T = 55 us (hyper increase needs five
//    10 MB byte-counter events, which never come here): its remaining bytes take the time of that
//    additive ramp from its rate at that moment (+15 % and one period for late cuts). From half the
//    line rate the ramp costs (line/2)^2 / (2 a line) = 1.7 ms of link time, 12.7 % of ideal, so
//    with the first phase the whole incast stays below 1.4 x ideal (1.09-1.28 over 12 streams).
void
RdmaTransportTestCase::IncastTwoFlowsDcqcnReactsAndSharesTheBottleneck()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    Star s = MakeStar(3, rate, rate, Bottleneck::RedEcn);
    const uint64_t bytes = 8 * 1024 * 1024;
    const Time start = MicroSeconds(10);
    Completion done[2];
    Ptr<RdmaFlow> f[2];
    RateLog rates[2];
    uint64_t cnpsTraced = 0;
    // When the first flow completes: the bytes both have delivered, the survivor's rate.
    Time firstDone;
    uint64_t deliveredAtFirst = 0;
    double survivorRate = 0;
    for (int i = 0; i < 2; ++i)
    {
        f[i] = RdmaFlow::Start(
            s.hosts.Get(i), s.hosts.Get(2), s.addr[2], s.addr[i], uint16_t(5000 + i), bytes, rate,
            start,
            Callback<void, Time>(
                [&, i](Time t)
                {
                    done[i].calls.push_back(t);
                    if (firstDone.IsZero())
                    {
                        firstDone = t;
                        deliveredAtFirst = bytes + f[1 - i]->GetReceiver()->GetBytesReceived();
                        survivorRate = double(f[1 - i]->GetSender()->GetCurrentRate().GetBitRate());
                    }
                }));
        rates[i].Connect(f[i]->GetSender());
        f[i]->GetSender()->TraceConnectWithoutContext(
            "CnpReceived", Callback<void, uint32_t, double, DataRate>(
                               [&cnpsTraced](uint32_t, double, DataRate) { ++cnpsTraced; }));
    }
    Simulator::Run();

    Time last;
    uint64_t cnps = 0;
    for (int i = 0; i < 2; ++i)
    {
        NS_TEST_ASSERT_MSG_EQ(done[i].calls.size(), 1u, "");
        last = std::max(last, done[i].calls[0]);
        NS_TEST_EXPECT_MSG_EQ(f[i]->GetReceiver()->GetBytesReceived(), bytes, "");
        NS_TEST_EXPECT_MSG_EQ(f[i]->GetSender()->IsFinished(), true, "");
        NS_TEST_EXPECT_MSG_GT(f[i]->GetReceiver()->GetCnpsSent(), 0u, "");
        NS_TEST_EXPECT_MSG_EQ(f[i]->GetSender()->GetCnpCount(), f[i]->GetReceiver()->GetCnpsSent(),
                              "");
        NS_TEST_EXPECT_MSG_LT(f[i]->GetSender()->GetMinimumRateSeen(), rate, "");
        NS_TEST_EXPECT_MSG_EQ(rates[i].changes.empty(), false, "");
        NS_TEST_EXPECT_MSG_EQ(f[i]->GetSender()->GetRetransmittedPackets(), 0u, "");
        cnps += f[i]->GetSender()->GetCnpCount();
        NS_LOG_INFO("flow " << i << ": done at " << done[i].calls[0].GetMicroSeconds()
                            << " us, CNPs " << f[i]->GetSender()->GetCnpCount() << ", min rate "
                            << f[i]->GetSender()->GetMinimumRateSeen() << ", rate changes "
                            << rates[i].changes.size());
    }
    NS_TEST_EXPECT_MSG_EQ(cnpsTraced, cnps, "");
    const QueueDisc::Stats& st = s.bottleneck->GetStats();
    NS_TEST_EXPECT_MSG_EQ(st.nTotalDroppedPackets, 0u, "");
    NS_TEST_EXPECT_MSG_GT(st.nTotalMarkedPackets, 0u, "");
    const double measured = (last - start).GetSeconds();
    const double ideal = Tx(2.0 * double(bytes) * kWire / kPayload, rate);
    NS_LOG_INFO("incast: last done after " << measured * 1e6 << " us, ideal " << ideal * 1e6
                                           << " us (" << measured / ideal << "x), marked "
                                           << st.nTotalMarkedPackets);
    const double sharedUtil =
        Tx(double(deliveredAtFirst) * kWire / kPayload, rate) / (firstDone - start).GetSeconds();
    NS_LOG_INFO("incast: first done after " << (firstDone - start).GetMicroSeconds()
                                            << " us, bottleneck utilization until then "
                                            << sharedUtil << ", survivor at " << survivorRate / 1e9
                                            << " Gb/s");
    NS_TEST_EXPECT_MSG_GT_OR_EQ(measured, ideal, "");
    // The survivor's remaining wire bytes on the additive ramp r(t) = r0 + a t (capped at line):
    // fast recovery only makes it quicker, further cuts slower (15 % + one period of slack).
    const double a = 40e6 / 55e-6;
    const double lineBps = double(rate.GetBitRate());
    double left = (2.0 * double(bytes) - double(deliveredAtFirst)) * kWire / kPayload * 8.0;
    double ramp = 0;
    const double toLine = (lineBps - survivorRate) / a;
    const double onRamp = survivorRate * toLine + a * toLine * toLine / 2;
    if (left <= onRamp)
    {
        ramp = (-survivorRate + std::sqrt(survivorRate * survivorRate + 2 * a * left)) / a;
    }
    else
    {
        ramp = toLine + (left - onRamp) / lineBps;
    }
    const double tail = (last - firstDone).GetSeconds();
    NS_LOG_INFO("incast: tail " << tail * 1e6 << " us, additive ramp " << ramp * 1e6 << " us");
    NS_TEST_EXPECT_MSG_GT_OR_EQ(sharedUtil, 0.80, "");
    NS_TEST_EXPECT_MSG_LT_OR_EQ(tail, 1.15 * ramp + 55e-6, "");
    NS_TEST_EXPECT_MSG_LT_OR_EQ(measured, ideal * 1.40, "");
}

// (3) A lossy bottleneck: h0 sends 2 MiB at 10 Gb/s into an 8 Gb/s link behind a 4-packet drop-tail
// queue, no ECN, so DCQCN never hears of congestion and a fifth of what is sent is dropped.
// Go-back-N must still deliver every byte, in order, and count its retransmissions.
void
RdmaTransportTestCase::LossyBottleneckGoBackNCompletes()
{
    SimulatorGuard guard;
    Star s = MakeStar(2, DataRate("10Gb/s"), DataRate("8Gb/s"), Bottleneck::TinyDropTail);
    const uint64_t bytes = 2 * 1024 * 1024;
    Completion done;
    uint64_t rewinds = 0;
    Ptr<RdmaFlow> f = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      bytes, DataRate("10Gb/s"), MicroSeconds(10), done.Cb());
    f->GetSender()->TraceConnectWithoutContext("GoBackN",
                                               Callback<void, uint64_t, uint64_t>(
                                                   [this, &rewinds](uint64_t from, uint64_t to)
                                                   {
                                                       NS_TEST_EXPECT_MSG_LT(to, from, "");
                                                       ++rewinds;
                                                   }));
    Simulator::Stop(Seconds(1)); // a hang shows as a failed check, not a stuck test
    Simulator::Run();

    NS_TEST_ASSERT_MSG_EQ(done.calls.size(), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetReceiver()->GetBytesReceived(), bytes, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->IsFinished(), true, "");
    NS_TEST_EXPECT_MSG_GT(s.bottleneck->GetStats().nTotalDroppedPackets, 0u, "");
    NS_TEST_EXPECT_MSG_GT(f->GetSender()->GetRetransmittedPackets(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetGoBackNCount(), rewinds, "");
    NS_TEST_EXPECT_MSG_GT(rewinds, 0u, "");
    NS_TEST_EXPECT_MSG_GT(f->GetReceiver()->GetNacksSent(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetCnpCount(), 0u, "");
    NS_LOG_INFO("lossy: done at " << done.calls[0].GetMicroSeconds() << " us, dropped "
                                  << s.bottleneck->GetStats().nTotalDroppedPackets
                                  << ", retransmitted " << f->GetSender()->GetRetransmittedPackets()
                                  << ", rewinds " << rewinds << ", NACKs "
                                  << f->GetReceiver()->GetNacksSent() << ", timeouts "
                                  << f->GetSender()->GetTimeoutCount());
}

// (3b) Targeted losses, each once: DATA 100 (a NACK rewinds), the last DATA packet (nothing follows
// it, so only the retransmission timeout recovers it) and the final ACK (the sender times out again
// and the complete receiver answers the duplicate). onComplete still fires exactly once.
void
RdmaTransportTestCase::LostMiddleTailAndFinalAckRecover()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    Star s = MakeStar(2, rate, rate, Bottleneck::Fifo);
    const uint64_t bytes = 1024 * 1024; // 256 packets
    const uint64_t n = bytes / kPayload;
    Ptr<RdmaDropper> dataDrops = CreateObject<RdmaDropper>();
    dataDrops->toDrop = {{RdmaHeader::DATA, 100}, {RdmaHeader::DATA, n - 1}};
    s.hostDev[1]->SetAttribute("ReceiveErrorModel", PointerValue(dataDrops));
    Ptr<RdmaDropper> ackDrops = CreateObject<RdmaDropper>();
    ackDrops->toDrop = {{RdmaHeader::ACK, n}};
    s.hostDev[0]->SetAttribute("ReceiveErrorModel", PointerValue(ackDrops));

    Completion done;
    const Time start = MicroSeconds(10);
    Ptr<RdmaFlow> f = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      bytes, rate, start, done.Cb());
    Simulator::Stop(Seconds(1));
    Simulator::Run();

    NS_TEST_EXPECT_MSG_EQ(dataDrops->dropped.size(), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(ackDrops->dropped.size(), 1u, "");
    NS_TEST_ASSERT_MSG_EQ(done.calls.size(), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetReceiver()->GetBytesReceived(), bytes, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->IsFinished(), true, "");
    NS_TEST_EXPECT_MSG_GT_OR_EQ(f->GetReceiver()->GetNacksSent(), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetSender()->GetTimeoutCount(), 2u, ""); // lost tail, lost final ACK
    NS_TEST_EXPECT_MSG_GT(f->GetSender()->GetRetransmittedPackets(), 0u, "");
    NS_TEST_EXPECT_MSG_GT_OR_EQ(f->GetSender()->GetGoBackNCount(), 3u, "");
    // The tail needed one retransmission timeout (1 ms by default) after the last transmission.
    NS_TEST_EXPECT_MSG_GT(done.calls[0] - start, MilliSeconds(1), "");
    NS_TEST_EXPECT_MSG_LT(done.calls[0] - start, MilliSeconds(2), "");
    NS_TEST_EXPECT_MSG_GT(f->GetReceiver()->GetDuplicatePackets(), 0u, "");
}

// DCQCN reaction point against the formulas: CNPs are injected by hand at the sender's port while
// a long flow runs on an idle path (no marking there), so every rate change is ours. The second CNP
// comes during fast recovery, so Rt is below line rate afterwards and the additive stage shows.
void
RdmaTransportTestCase::DcqcnRateStateMachineFollowsThePaper()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    const double line = 1e10;
    Star s = MakeStar(2, rate, rate, Bottleneck::Fifo);
    Completion done;
    Ptr<RdmaFlow> f = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      uint64_t(1) << 30, rate, Time(0), done.Cb());
    Ptr<RdmaSender> snd = f->GetSender();
    RateLog log;
    log.Connect(snd);

    // A CNP source on the receiver host: same flow id, to the sender's address and port.
    Ptr<Socket> inj = Socket::CreateSocket(s.hosts.Get(1), UdpSocketFactory::GetTypeId());
    inj->Bind();
    auto sendCnp = [&]()
    {
        Ptr<Packet> p = Create<Packet>();
        p->AddHeader(RdmaHeader(RdmaHeader::CNP, f->GetFlowId(), 0));
        inj->SendTo(p, 0, InetSocketAddress(s.addr[0], 4000));
    };
    // One-way delay of a bare CNP (16+8+20+2 = 46 bytes) on two idle hops.
    const Time cnpDelay = 2 * (kLinkDelay + rate.CalculateBytesTxTime(46));
    const Time t1 = MicroSeconds(100);
    const Time t2 = MicroSeconds(292); // between the 3rd and 4th increase events after the first
    const Time stop = MicroSeconds(1400);
    Simulator::Schedule(t1, sendCnp);
    Simulator::Schedule(t2, sendCnp);
    double alphaBefore2 = -1;
    Simulator::Schedule(t2 + cnpDelay - NanoSeconds(1), [&]() { alphaBefore2 = snd->GetAlpha(); });
    Simulator::Stop(stop);
    Simulator::Run();

    NS_TEST_EXPECT_MSG_EQ(snd->GetCnpCount(), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(done.calls.empty(), true, "");
    // Replay: g = 1/256, K = T = 55 us, F = 5, R_AI = 40 Mb/s, alpha0 = 1; the byte counter (10 MB)
    // cannot fire: less than 2 MB leave in this window.
    const double g = 1.0 / 256;
    const double K = 55e-6;
    const double c1 = (t1 + cnpDelay).GetSeconds();
    const double c2 = (t2 + cnpDelay).GetSeconds();
    std::vector<std::pair<double, double>> expect; // (time s, rate)
    double rc = line;
    double rt = line;
    double alpha = 1.0;
    auto cut = [&](double at, double a)
    {
        rt = rc;
        rc = rc * (1 - a / 2);
        alpha = (1 - g) * a + g;
        expect.emplace_back(at, rc);
    };
    auto increases = [&](double from, double until)
    {
        for (int k = 1; from + k * K < until; ++k)
        {
            if (k > 5)
            {
                rt = std::min(line, rt + 40e6); // additive (the byte counter stays at 0)
            }
            double next = std::min(line, (rt + rc) / 2); // fast recovery and after
            const bool back = rt >= line && line - next <= line * 1e-3;
            if (back)
            {
                next = line;
            }
            rc = next;
            expect.emplace_back(from + k * K, rc);
            if (back)
            {
                break;
            }
        }
    };
    cut(c1, 1.0);
    increases(c1, c2);
    NS_TEST_EXPECT_MSG_EQ(expect.size(), 4u, ""); // the cut and three fast-recovery steps
    const double alpha2 = alpha * std::pow(1 - g, std::floor((c2 - c1) / K));
    NS_TEST_EXPECT_MSG_LT(std::abs(alphaBefore2 - alpha2), 1e-12, "");
    cut(c2, alpha2);
    const double rtAfterCut = rt;
    increases(c2, stop.GetSeconds());

    NS_TEST_ASSERT_MSG_EQ(log.changes.size(), expect.size(), "");
    for (size_t i = 0; i < expect.size(); ++i)
    {
        NS_TEST_EXPECT_MSG_LT(std::abs(log.changes[i].first.GetSeconds() - expect[i].first), 1e-9,
                              "change " << i << " at " << log.changes[i].first.GetSeconds());
        NS_TEST_EXPECT_MSG_LT_OR_EQ(std::abs(log.changes[i].second - expect[i].second), 1.0,
                                    "change " << i << ": " << log.changes[i].second << " vs "
                                              << expect[i].second);
    }
    NS_TEST_EXPECT_MSG_LT_OR_EQ(std::abs(double(snd->GetTargetRate().GetBitRate()) - rt), 1.0, "");
    NS_TEST_EXPECT_MSG_GT(rt, rtAfterCut + 10 * 40e6, ""); // the additive stage ran
    NS_TEST_EXPECT_MSG_LT(rt, line, "");
    NS_TEST_EXPECT_MSG_LT(
        std::abs(snd->GetAlpha() -
                 alpha * std::pow(1 - g, std::floor((stop.GetSeconds() - c2) / K))),
        1e-12, "");
}

// A flow's ports are free once it is done, so the same port carries the next flow between the
// same hosts; onComplete fires once per flow.
void
RdmaTransportTestCase::PortIsReusableAfterAFlowAndCallbacksFireOnce()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    Star s = MakeStar(2, rate, rate, Bottleneck::Fifo);
    Completion first;
    Completion second;
    Completion empty;
    Ptr<RdmaFlow> a = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      100000, rate, Time(0), first.Cb());
    Ptr<RdmaFlow> b;
    Ptr<RdmaFlow> c;
    Simulator::Schedule(MicroSeconds(200),
                        [&]()
                        {
                            NS_TEST_EXPECT_MSG_EQ(a->GetSender()->IsFinished(), true, "");
                            RdmaFlowHelper helper;
                            helper.SetSenderAttribute("PayloadSize", UintegerValue(1000));
                            helper.SetReceiverAttribute("AckInterval", UintegerValue(4));
                            b = helper.Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0],
                                             4000, 12345, rate, MicroSeconds(250), second.Cb());
                            c = RdmaFlow::Start(s.hosts.Get(1), s.hosts.Get(0), s.addr[0],
                                                s.addr[1], 4001, 0, rate, MicroSeconds(200),
                                                empty.Cb());
                        });
    Simulator::Run();
    NS_TEST_ASSERT_MSG_EQ(first.calls.size(), 1u, "");
    NS_TEST_ASSERT_MSG_EQ(second.calls.size(), 1u, "");
    NS_TEST_ASSERT_MSG_EQ(empty.calls.size(), 1u, "");
    NS_TEST_EXPECT_MSG_GT(second.calls[0], MicroSeconds(250), "");
    NS_TEST_EXPECT_MSG_EQ(b->GetSender()->GetPacketCount(), 13u, "");
    NS_TEST_EXPECT_MSG_EQ(b->GetReceiver()->GetBytesReceived(), 12345u, "");
    NS_TEST_EXPECT_MSG_EQ(c->GetReceiver()->GetBytesReceived(), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(b->GetSender()->IsFinished(), true, "");
    NS_TEST_EXPECT_MSG_NE(a->GetFlowId(), b->GetFlowId(), "");
}

// A run carries millions of flows: a flow adds no application to its nodes, its closed-callback
// fires once both ends have closed, and a flow still running when its sender's node is disposed
// (the simulation stopped first) is disposed with it.
void
RdmaTransportTestCase::FlowsLeaveNothingOnTheirNodes()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    Star s = MakeStar(2, rate, rate, Bottleneck::Fifo);
    Completion done;
    uint32_t closed = 0;
    Ptr<RdmaFlow> a = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      100000, rate, Time(0), done.Cb());
    a->SetClosedCallback(Callback<void>([&closed]() { ++closed; }));
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(done.calls.size(), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(closed, 1u, "closed once, after the sender was done");
    NS_TEST_EXPECT_MSG_EQ(a->GetSender()->IsFinished(), true, "");
    NS_TEST_EXPECT_MSG_EQ(s.hosts.Get(0)->GetNApplications(), 0u, "no application left");
    NS_TEST_EXPECT_MSG_EQ(s.hosts.Get(1)->GetNApplications(), 0u, "no application left");

    // 100 MB at 10 Gb/s takes 80 ms; the simulation stops after 1 ms.
    Completion never;
    Ptr<RdmaFlow> b = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      100000000, rate, Simulator::Now(), never.Cb());
    Simulator::Stop(MilliSeconds(1));
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(b->GetSender()->IsFinished(), false, "still running");
    s.hosts.Get(0)->Dispose();
    NS_TEST_EXPECT_MSG_EQ(b->GetSender(), nullptr, "disposed with its sender's node");
}

// The transport takes IP protocol 17 over from UdpL4Protocol on the nodes it runs on (its demux
// delivers RDMA ports by a hash); every other datagram still goes to ns-3's UDP. While a flow runs
// on port 4000 from h0 to h1, and after it, a UDP socket on h1's port 5000 gets the 3 datagrams a
// socket on h0 sends it, from its own address and port, in order; a datagram sent to the finished
// flow's port is dropped there (no socket sees it, and the RDMA ends are gone).
void
RdmaTransportTestCase::OtherUdpTrafficOnTheNodesIsUntouched()
{
    SimulatorGuard guard;
    const DataRate rate("10Gb/s");
    Star s = MakeStar(2, rate, rate, Bottleneck::Fifo);
    Completion done;
    Ptr<RdmaFlow> f = RdmaFlow::Start(s.hosts.Get(0), s.hosts.Get(1), s.addr[1], s.addr[0], 4000,
                                      1000000, rate, Time(0), done.Cb());
    Ptr<Socket> server = Socket::CreateSocket(s.hosts.Get(1), UdpSocketFactory::GetTypeId());
    NS_TEST_ASSERT_MSG_EQ(server->Bind(InetSocketAddress(Ipv4Address::GetAny(), 5000)), 0, "");
    std::vector<uint32_t> sizes;
    Address from;
    server->SetRecvCallback(Callback<void, Ptr<Socket>>([&](Ptr<Socket> sock) {
        while (Ptr<Packet> p = sock->RecvFrom(from))
        {
            sizes.push_back(p->GetSize());
        }
    }));
    Ptr<Socket> client = Socket::CreateSocket(s.hosts.Get(0), UdpSocketFactory::GetTypeId());
    NS_TEST_ASSERT_MSG_EQ(client->Bind(InetSocketAddress(s.addr[0], 6000)), 0, "");
    // 1 MB at 10 Gb/s takes ~0.8 ms: two datagrams while the flow runs, one after it.
    for (auto [at, size] : {std::pair<Time, uint32_t>{MicroSeconds(100), 100},
                            {MicroSeconds(400), 200},
                            {MilliSeconds(3), 300}})
    {
        Simulator::Schedule(at, [&client, &s, size]() {
            client->SendTo(Create<Packet>(size), 0, InetSocketAddress(s.addr[1], 5000));
        });
    }
    uint32_t strays = 0;
    Simulator::Schedule(MilliSeconds(4), [&]() {
        NS_TEST_EXPECT_MSG_EQ(f->GetReceiver()->GetBytesReceived(), 1000000u, "");
        strays = f->GetReceiver()->GetBytesReceived();
        client->SendTo(Create<Packet>(50), 0, InetSocketAddress(s.addr[1], 4000));
    });
    Simulator::Run();
    NS_TEST_EXPECT_MSG_EQ(done.calls.size(), 1u, "");
    NS_TEST_ASSERT_MSG_EQ(sizes.size(), 3u, "every datagram to port 5000 arrived");
    NS_TEST_EXPECT_MSG_EQ(sizes[0], 100u, "");
    NS_TEST_EXPECT_MSG_EQ(sizes[1], 200u, "");
    NS_TEST_EXPECT_MSG_EQ(sizes[2], 300u, "");
    NS_TEST_EXPECT_MSG_EQ(InetSocketAddress::ConvertFrom(from).GetIpv4(), s.addr[0], "");
    NS_TEST_EXPECT_MSG_EQ(InetSocketAddress::ConvertFrom(from).GetPort(), 6000u, "");
    NS_TEST_EXPECT_MSG_EQ(f->GetReceiver()->GetBytesReceived(), strays, "the stray is dropped");
}

namespace
{
class RdmaTransportTestSuite : public TestSuite
{
public:
    RdmaTransportTestSuite()
        : TestSuite("eidolon-rdma-transport", UNIT)
    {
        const std::pair<const char*, RdmaTransportTestCase::Check> checks[] = {
            {"header_round_trip", &RdmaTransportTestCase::HeaderRoundTrip},
            {"idle_path_completes_at_line_rate",
             &RdmaTransportTestCase::IdlePathCompletesAtLineRate},
            {"incast_two_flows_dcqcn_reacts_and_shares_the_bottleneck",
             &RdmaTransportTestCase::IncastTwoFlowsDcqcnReactsAndSharesTheBottleneck},
            {"lossy_bottleneck_go_back_n_completes",
             &RdmaTransportTestCase::LossyBottleneckGoBackNCompletes},
            {"lost_middle_tail_and_final_ack_recover",
             &RdmaTransportTestCase::LostMiddleTailAndFinalAckRecover},
            {"dcqcn_rate_state_machine_follows_the_paper",
             &RdmaTransportTestCase::DcqcnRateStateMachineFollowsThePaper},
            {"port_is_reusable_after_a_flow_and_callbacks_fire_once",
             &RdmaTransportTestCase::PortIsReusableAfterAFlowAndCallbacksFireOnce},
            {"flows_leave_nothing_on_their_nodes",
             &RdmaTransportTestCase::FlowsLeaveNothingOnTheirNodes},
            {"other_udp_traffic_on_the_nodes_is_untouched",
             &RdmaTransportTestCase::OtherUdpTrafficOnTheNodesIsUntouched},
        };
        for (const auto& [name, check] : checks)
        {
            AddTestCase(new RdmaTransportTestCase(name, check), TestCase::QUICK);
        }
    }
};

RdmaTransportTestSuite g_rdmaTransportTestSuite;
} // namespace
