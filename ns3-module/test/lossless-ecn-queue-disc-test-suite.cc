// LosslessEcnQueueDisc on its own: packets enqueued and dequeued by hand, the queue length each
// one finds and so whether it is marked worked out from the thresholds.
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/lossless-ecn-queue-disc.h"
#include "ns3/packet.h"
#include "ns3/queue-size.h"
#include "ns3/simulator.h"
#include "ns3/test.h"

#include <cmath>
#include <string>
#include <utility>

using namespace ns3;
using namespace ns3::eidolon;

namespace
{
Ptr<Ipv4QueueDiscItem>
Item(Ipv4Header::EcnType ecn)
{
    Ipv4Header h;
    h.SetEcn(ecn);
    h.SetPayloadSize(1000);
    return Create<Ipv4QueueDiscItem>(Create<Packet>(1000), Address(), 0x0800, h);
}

Ipv4Header::EcnType
EcnOf(Ptr<QueueDiscItem> item)
{
    return DynamicCast<Ipv4QueueDiscItem>(item)->GetHeader().GetEcn();
}

struct Marking
{
    double minTh;
    double maxTh;
    double maxP;
    bool gentle;
    bool wait;
};

Ptr<LosslessEcnQueueDisc>
Disc(const Marking& m, const std::string& maxSize = "1000p")
{
    Ptr<LosslessEcnQueueDisc> q = CreateObject<LosslessEcnQueueDisc>();
    q->SetAttribute("MinTh", DoubleValue(m.minTh));
    q->SetAttribute("MaxTh", DoubleValue(m.maxTh));
    q->SetAttribute("MaxP", DoubleValue(m.maxP));
    q->SetAttribute("Gentle", BooleanValue(m.gentle));
    q->SetAttribute("Wait", BooleanValue(m.wait));
    q->SetAttribute("MaxSize", QueueSizeValue(QueueSize(maxSize)));
    q->AssignStreams(7);
    q->Initialize();
    return q;
}

/// Holds the queue at `held` packets (ECT) and offers it `n` more ECT packets, each followed by
/// a dequeue, so that every one finds `held` ahead; returns how many of the n were marked.
uint32_t
MarksAtHeldQueue(const Marking& m, int held, int n)
{
    Ptr<LosslessEcnQueueDisc> q = Disc(m);
    for (int i = 0; i < held; ++i)
    {
        q->Enqueue(Item(Ipv4Header::ECN_ECT0));
    }
    const uint32_t before = q->GetStats().nTotalMarkedPackets;
    for (int i = 0; i < n; ++i)
    {
        q->Enqueue(Item(Ipv4Header::ECN_ECT0));
        q->Dequeue();
    }
    return q->GetStats().nTotalMarkedPackets - before;
}

class LosslessEcnQueueDiscTestCase : public TestCase
{
public:
    using Check = void (LosslessEcnQueueDiscTestCase::*)();

    LosslessEcnQueueDiscTestCase(const std::string& name, Check check)
        : TestCase(name)
        , m_check(check)
    {
    }

    void StepMarksFromKAndQueuesWhatItCannotMark();
    void BetweenTheThresholdsMarksAsRed();
    void OnlyMaxSizeDrops();

private:
    void DoRun() override
    {
        (this->*m_check)();
        Simulator::Destroy();
    }

    Check m_check;
};

void
LosslessEcnQueueDiscTestCase::StepMarksFromKAndQueuesWhatItCannotMark()
{
    // MinTh = MaxTh = 3, not gentle (DCTCP's step at K = 3). Ten ECT packets into an empty queue
    // find 0..9 packets ahead of them: the first three (0, 1, 2 ahead) pass unmarked, the other
    // seven are marked CE. Then ten packets that cannot carry a mark (not ECT: an RDMA ACK, a TCP
    // pure ACK) find 10..19 ahead: RED would drop them; here all ten are queued as they are.
    Ptr<LosslessEcnQueueDisc> q = Disc({3, 3, 0.02, false, true});
    for (int i = 0; i < 10; ++i)
    {
        NS_TEST_EXPECT_MSG_EQ(q->Enqueue(Item(Ipv4Header::ECN_ECT0)), true, "ECT " << i);
    }
    for (int i = 0; i < 10; ++i)
    {
        NS_TEST_EXPECT_MSG_EQ(q->Enqueue(Item(Ipv4Header::ECN_NotECT)), true, "not ECT " << i);
    }
    const QueueDisc::Stats& stats = q->GetStats();
    NS_TEST_EXPECT_MSG_EQ(stats.nTotalMarkedPackets, 7u, "");
    NS_TEST_EXPECT_MSG_EQ(stats.GetNMarkedPackets(LosslessEcnQueueDisc::FORCED_MARK), 7u, "");
    NS_TEST_EXPECT_MSG_EQ(stats.nTotalDroppedPackets, 0u, "");
    NS_TEST_EXPECT_MSG_EQ(q->GetNPackets(), 20u, "");
    for (int i = 0; i < 20; ++i)
    {
        Ptr<QueueDiscItem> item = q->Dequeue();
        NS_TEST_ASSERT_MSG_NE(item, nullptr, "FIFO holds 20");
        const Ipv4Header::EcnType expected = i < 3    ? Ipv4Header::ECN_ECT0
                                             : i < 10 ? Ipv4Header::ECN_CE
                                                      : Ipv4Header::ECN_NotECT;
        NS_TEST_EXPECT_MSG_EQ(EcnOf(item), expected, "packet " << i << " in FIFO order");
    }
    NS_TEST_EXPECT_MSG_EQ(q->Dequeue(), nullptr, "");
}

void
LosslessEcnQueueDiscTestCase::BetweenTheThresholdsMarksAsRed()
{
    // MinTh 2, MaxTh 10, MaxP 0.5, every ECT arrival finding the queue held at 6: RED's base
    // chance p = 0.5 x (6 - 2) / (10 - 2) = 0.25 at the k-th packet since the last mark is
    // spread as follows (20000 arrivals; the first arrival into the range is never marked).
    const int n = 20000;
    // Without Wait, p / (1 - k p): the gap to the next mark is uniform on 1, 2, 3 (each
    // p / (1 - p) = 1/3): mean 2, so 10000 marks; gap variance 2/3, so the count's sigma is
    // sqrt(n x (2/3) / 2^3) = 41: within 4 sigma.
    const double noWait = MarksAtHeldQueue({2, 10, 0.5, false, false}, 6, n);
    NS_TEST_EXPECT_MSG_LT(std::abs(noWait - 10000), 164, "without Wait: " << noWait);
    // With Wait (RedQueueDisc's default): no mark while k p < 1, then p / (2 - k p): the gap is
    // uniform on 4..7 (each 1/4): mean 5.5, n / 5.5 = 3636 marks; gap variance 1.25, sigma
    // sqrt(n x 1.25 / 5.5^3) = 12: within 4 sigma.
    const double wait = MarksAtHeldQueue({2, 10, 0.5, false, true}, 6, n);
    NS_TEST_EXPECT_MSG_LT(std::abs(wait - 20000 / 5.5), 50, "with Wait: " << wait);
    // Gentle, held at 15 (between MaxTh and 2 MaxTh): p = 0.5 + 0.5 x (15 - 10) / 10 = 0.75;
    // with Wait the first packet after a mark has k p = 0.75 < 1 (never), the second 1.5
    // (0.75 / 0.5 >= 1: always), so exactly every second packet is marked.
    NS_TEST_EXPECT_MSG_EQ(MarksAtHeldQueue({2, 10, 0.5, true, true}, 15, n), uint32_t(n / 2),
                          "gentle");
    // Below MinTh nothing is marked; from 2 MaxTh (gentle) or MaxTh (not) every packet is.
    NS_TEST_EXPECT_MSG_EQ(MarksAtHeldQueue({2, 10, 0.5, true, true}, 1, n), 0u, "below MinTh");
    NS_TEST_EXPECT_MSG_EQ(MarksAtHeldQueue({2, 10, 0.5, true, true}, 20, n), uint32_t(n),
                          "at 2 MaxTh, gentle");
    NS_TEST_EXPECT_MSG_EQ(MarksAtHeldQueue({2, 10, 0.5, false, true}, 10, n), uint32_t(n),
                          "at MaxTh, not gentle");
}

void
LosslessEcnQueueDiscTestCase::OnlyMaxSizeDrops()
{
    // A 5-packet disc: of 7 packets the last two are dropped for the limit, as by any FIFO.
    Ptr<LosslessEcnQueueDisc> q = Disc({1, 1, 0.02, false, true}, "5p");
    int accepted = 0;
    for (int i = 0; i < 7; ++i)
    {
        accepted += q->Enqueue(Item(Ipv4Header::ECN_NotECT)) ? 1 : 0;
    }
    NS_TEST_EXPECT_MSG_EQ(accepted, 5, "");
    NS_TEST_EXPECT_MSG_EQ(
        q->GetStats().GetNDroppedPackets(LosslessEcnQueueDisc::LIMIT_EXCEEDED_DROP), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(q->GetStats().nTotalMarkedPackets, 0u, "none of them can carry a mark");
}

class LosslessEcnQueueDiscTestSuite : public TestSuite
{
public:
    LosslessEcnQueueDiscTestSuite()
        : TestSuite("eidolon-lossless-ecn-queue-disc", UNIT)
    {
        const std::pair<const char*, LosslessEcnQueueDiscTestCase::Check> checks[] = {
            {"step_marks_from_k_and_queues_what_it_cannot_mark",
             &LosslessEcnQueueDiscTestCase::StepMarksFromKAndQueuesWhatItCannotMark},
            {"between_the_thresholds_marks_as_red",
             &LosslessEcnQueueDiscTestCase::BetweenTheThresholdsMarksAsRed},
            {"only_max_size_drops", &LosslessEcnQueueDiscTestCase::OnlyMaxSizeDrops},
        };
        for (const auto& [name, check] : checks)
        {
            AddTestCase(new LosslessEcnQueueDiscTestCase(name, check), TestCase::QUICK);
        }
    }
};

LosslessEcnQueueDiscTestSuite g_losslessEcnQueueDiscTestSuite;
} // namespace
