/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "lossless-ecn-queue-disc.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/log.h"
#include "ns3/object-factory.h"
#include "ns3/queue-size.h"

#include <algorithm>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonLosslessEcnQueueDisc");

NS_OBJECT_ENSURE_REGISTERED(LosslessEcnQueueDisc);

TypeId
LosslessEcnQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::LosslessEcnQueueDisc")
            .SetParent<QueueDisc>()
            .SetGroupName("Eidolon")
            .AddConstructor<LosslessEcnQueueDisc>()
            .AddAttribute("MaxSize",
                          "The most the queue holds; only this drops (a lossless link's backlog "
                          "must fit).",
                          QueueSizeValue(QueueSize("10000000p")),
                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                          MakeQueueSizeChecker())
            .AddAttribute("MinTh",
                          "Queue length (packets, before the arriving one) where marking starts.",
                          DoubleValue(20), MakeDoubleAccessor(&LosslessEcnQueueDisc::m_minTh),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("MaxTh", "Queue length (packets) where the base chance reaches MaxP.",
                          DoubleValue(20), MakeDoubleAccessor(&LosslessEcnQueueDisc::m_maxTh),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("MaxP",
                          "Base marking chance at MaxTh (RED's 1 / LInterm; RedQueueDisc's "
                          "default LInterm 50).",
                          DoubleValue(0.02), MakeDoubleAccessor(&LosslessEcnQueueDisc::m_maxP),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("Gentle",
                          "From MaxTh the chance rises on to 1 at 2 MaxTh (RED's gentle mode, "
                          "RedQueueDisc's default); false: every ECN-capable packet is marked "
                          "from MaxTh (MinTh = MaxTh: DCTCP's step at K).",
                          BooleanValue(true), MakeBooleanAccessor(&LosslessEcnQueueDisc::m_gentle),
                          MakeBooleanChecker())
            .AddAttribute("Wait",
                          "Space marks at least 1 / p packets apart, the gap uniform up to 2 / p "
                          "(RED's wait option, RedQueueDisc's default); false: p / (1 - count p), "
                          "gaps uniform from 1 to 1 / p - 1.",
                          BooleanValue(true), MakeBooleanAccessor(&LosslessEcnQueueDisc::m_wait),
                          MakeBooleanChecker());
    return tid;
}

LosslessEcnQueueDisc::LosslessEcnQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE)
    , m_minTh(20)
    , m_maxTh(20)
    , m_maxP(0.02)
    , m_gentle(true)
    , m_wait(true)
    , m_count(0)
    , m_above(false)
    , m_uniform(CreateObject<UniformRandomVariable>())
{
}

LosslessEcnQueueDisc::~LosslessEcnQueueDisc() = default;

int64_t
LosslessEcnQueueDisc::AssignStreams(int64_t stream)
{
    m_uniform->SetStream(stream);
    return 1;
}

double
LosslessEcnQueueDisc::BaseProbability(double queued) const
{
    if (m_gentle && queued >= m_maxTh)
    {
        return m_maxP + (1.0 - m_maxP) * (queued - m_maxTh) / m_maxTh;
    }
    if (m_maxTh <= m_minTh)
    {
        return m_maxP;
    }
    return m_maxP * (queued - m_minTh) / (m_maxTh - m_minTh);
}

bool
LosslessEcnQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    if (GetCurrentSize() + item > GetMaxSize())
    {
        DropBeforeEnqueue(item, LIMIT_EXCEEDED_DROP);
        return false;
    }
    ++m_count;
    const uint32_t queued = GetInternalQueue(0)->GetNPackets();
    const double forcedFrom = m_gentle ? 2 * m_maxTh : m_maxTh;
    if (queued < m_minTh || queued <= 1)
    {
        m_above = false; // below the marking range: nothing marked, the count starts again
    }
    else if (queued >= forcedFrom)
    {
        // Every packet (one that is not ECT is queued unmarked: Mark returns false).
        Mark(item, FORCED_MARK);
    }
    else if (!m_above)
    {
        m_above = true; // the first packet into the range is not marked
        m_count = 1;
    }
    else
    {
        // The base chance spread over the packets since the last mark, so that marks come at
        // roughly even gaps rather than in clusters.
        const double p = BaseProbability(queued);
        const double cp = m_count * p;
        double spread = 1.0;
        if (m_wait)
        {
            spread = cp < 1.0 ? 0.0 : (cp < 2.0 ? p / (2.0 - cp) : 1.0);
        }
        else if (cp < 1.0)
        {
            spread = p / (1.0 - cp);
        }
        if (m_uniform->GetValue() <= std::min(spread, 1.0))
        {
            Mark(item, UNFORCED_MARK); // a packet that is not ECT is queued unmarked
            m_count = 0;
        }
    }
    return GetInternalQueue(0)->Enqueue(item);
}

Ptr<QueueDiscItem>
LosslessEcnQueueDisc::DoDequeue()
{
    return GetInternalQueue(0)->Dequeue();
}

Ptr<const QueueDiscItem>
LosslessEcnQueueDisc::DoPeek()
{
    return GetInternalQueue(0)->Peek();
}

bool
LosslessEcnQueueDisc::CheckConfig()
{
    if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0)
    {
        NS_LOG_ERROR("LosslessEcnQueueDisc takes no classes and no packet filters");
        return false;
    }
    if (m_maxTh < m_minTh)
    {
        NS_LOG_ERROR("LosslessEcnQueueDisc: MaxTh " << m_maxTh << " is below MinTh " << m_minTh);
        return false;
    }
    if (GetNInternalQueues() == 0)
    {
        AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
            "MaxSize", QueueSizeValue(GetMaxSize())));
    }
    if (GetNInternalQueues() != 1)
    {
        NS_LOG_ERROR("LosslessEcnQueueDisc needs exactly one internal queue");
        return false;
    }
    return true;
}

void
LosslessEcnQueueDisc::InitializeParams()
{
}

} // namespace eidolon
} // namespace ns3
