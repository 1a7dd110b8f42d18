/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "flow-model.h"

#include "topology.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonFlowModel");
NS_OBJECT_ENSURE_REGISTERED(FlowModel);

TypeId
FlowModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::FlowModel")
            .SetParent<NetworkModel>()
            .SetGroupName("Eidolon")
            .AddConstructor<FlowModel>()
            .AddAttribute("AutoCommit",
                          "Forget history before ns-3's current time at every event: flows can "
                          "never start in ns-3's past, so this only bounds memory.",
                          BooleanValue(true), MakeBooleanAccessor(&FlowModel::m_autoCommit),
                          MakeBooleanChecker())
            .AddAttribute("EcmpSeed",
                          "Mixed into the per-flow hash that picks among equal-cost paths.",
                          UintegerValue(0), MakeUintegerAccessor(&FlowModel::m_ecmpSeed),
                          MakeUintegerChecker<uint64_t>())
            .AddTraceSource("FlowStarted", "A flow was posted (its record carries its start time).",
                            MakeTraceSourceAccessor(&FlowModel::m_flowStarted),
                            "ns3::eidolon::FlowModel::FlowTracedCallback")
            .AddTraceSource("FlowFinished",
                            "A flow's last byte arrived (fired at its finish time).",
                            MakeTraceSourceAccessor(&FlowModel::m_flowFinished),
                            "ns3::eidolon::FlowModel::FlowTracedCallback")
            .AddTraceSource("LinkUtilization",
                            "The load of a directed channel changed: channel id and load over "
                            "capacity (provisional if the model runs ahead of ns-3).",
                            MakeTraceSourceAccessor(&FlowModel::m_linkUtilization),
                            "ns3::eidolon::FlowModel::LinkUtilizationTracedCallback");
    return tid;
}

FlowModel::FlowModel()
{
    NS_LOG_FUNCTION(this);
}

FlowModel::~FlowModel() = default;

void
FlowModel::DoDispose()
{
    Simulator::Cancel(m_wake);
    m_posted.clear();
    m_engine.reset();
    m_topology = nullptr;
    NetworkModel::DoDispose();
}

void
FlowModel::SetTopology(Ptr<const Topology> topology)
{
    NS_ABORT_MSG_IF(m_engine && m_engine->GetStats().flowsAdded > 0,
                    "FlowModel: topology changed after flows were posted");
    m_topology = topology;
    std::vector<double> capacity(topology->ChannelCount());
    for (uint32_t c = 0; c < capacity.size(); ++c)
    {
        capacity[c] = topology->ChannelBandwidth(c);
    }
    m_engine = std::make_unique<FluidNetwork>(std::move(capacity));
    m_engine->onRatesChanged = [this](int64_t, const std::vector<uint32_t>& channels)
    {
        if (m_linkUtilization.IsEmpty())
        {
            return;
        }
        for (uint32_t c : channels)
        {
            m_linkUtilization(c, m_engine->ChannelLoad(c) / m_engine->ChannelCapacity(c));
        }
    };
}

Ptr<const Topology>
FlowModel::GetTopology() const
{
    return m_topology;
}

FlowId
FlowModel::AddFlow(const FlowSpec& spec, FinishCallback onFinish)
{
    NS_ABORT_MSG_UNLESS(m_engine, "FlowModel: SetTopology before AddFlow");
    FlowId id = m_nextId++;
    Time start = spec.start;
    if (start < Simulator::Now())
    {
        if (!m_autoCommit && start.GetNanoSeconds() >= m_engine->CommitHorizon())
        {
            // Optimistic use: the history since the commit horizon is kept, so the engine rolls
            // back to the flow's start and replays; flows already delivered are pinned (their
            // finish stands), the others finish where the replay puts them (delivered now if that
            // is already past).
            NS_LOG_INFO("flow " << id << " starts at " << start << ", before now "
                                << Simulator::Now() << ": replaying from there");
            ++m_lateReplays;
        }
        else
        {
            // Before what is committed: that past cannot be replayed. Start it now and count it:
            // the caller broke the horizon contract.
            NS_LOG_WARN("flow " << id << " starts at " << start << ", before now "
                                << Simulator::Now());
            start = Simulator::Now();
            ++m_lateStarts;
        }
    }
    FluidNetwork::FlowInput in;
    in.path = spec.path.empty() ? m_topology->Route(spec.src, spec.dst, FlowHash(spec, m_ecmpSeed))
                                : spec.path;
    in.bytes = double(spec.bytes);
    in.start = start.GetNanoSeconds();
    in.latencyNs = m_topology->PathLatencyNs(in.path) + spec.extraLatency.GetNanoSeconds();
    in.rateCap = spec.rateCap;
    Posted& p = m_posted[id];
    p.record.path = in.path;
    m_engine->Add(id, std::move(in));

    p.record.id = id;
    p.record.src = spec.src;
    p.record.dst = spec.dst;
    p.record.bytes = spec.bytes;
    p.record.tag = spec.tag;
    p.record.start = start;
    p.onFinish = onFinish;
    m_flowStarted(p.record);
    // The add may have rolled the engine back: completions past the rollback point are void.
    m_logCursor = std::min(m_logCursor, m_engine->CompletionCount());
    ScheduleWake();
    return id;
}

void
FlowModel::CollectCompletions()
{
    size_t end = m_engine->CompletionCount();
    for (size_t i = std::max(m_logCursor, m_engine->CompletionBase()); i < end; ++i)
    {
        FlowId id = m_engine->CompletionAt(i);
        m_due.emplace(m_engine->FinishTime(id), id);
    }
    m_logCursor = end;
}

void
FlowModel::Deliver(int64_t upTo)
{
    while (!m_due.empty() && m_due.top().first <= upTo)
    {
        auto [finish, id] = m_due.top();
        m_due.pop();
        auto it = m_posted.find(id);
        // Entries made stale by a rollback (the flow finishes at another time now) are skipped.
        if (it == m_posted.end() || m_engine->GetStatus(id) != FluidNetwork::Status::Done ||
            m_engine->FinishTime(id) != finish)
        {
            continue;
        }
        Posted p = std::move(it->second);
        m_posted.erase(it);
        if (!m_autoCommit)
        {
            m_engine->Pin(id); // it has been observed: a later replay must keep its finish
        }
        p.record.finish = NanoSeconds(finish);
        m_flowFinished(p.record);
        if (!p.onFinish.IsNull())
        {
            p.onFinish(p.record);
        }
    }
}

void
FlowModel::Wake()
{
    m_wakeAt = FluidNetwork::kNever;
    int64_t now = Simulator::Now().GetNanoSeconds();
    m_engine->AdvanceTo(now);
    CollectCompletions();
    Deliver(now);
    if (m_autoCommit)
    {
        // Everything finishing before now was delivered above: nothing there can change.
        m_engine->Commit(now);
    }
    else if (m_commitAhead >= 0)
    {
        // The caller promised no flow before min(bound, now): the flows of a long stretch with
        // every rank waiting retire as it runs, not all at its end.
        m_engine->Commit(std::min(m_commitAhead, now));
    }
    ScheduleWake();
}

void
FlowModel::CommitAhead(Time bound)
{
    m_commitAhead = bound.IsNegative() ? -1 : bound.GetNanoSeconds();
}

void
FlowModel::ScheduleWake()
{
    int64_t next = m_engine->NextEventTime();
    if (!m_due.empty())
    {
        next = std::min(next, m_due.top().first);
    }
    if (next == FluidNetwork::kNever)
    {
        Simulator::Cancel(m_wake);
        m_wakeAt = next;
        return;
    }
    int64_t now = Simulator::Now().GetNanoSeconds();
    next = std::max(next, now);
    if (m_wake.IsRunning() && m_wakeAt == next)
    {
        return;
    }
    Simulator::Cancel(m_wake);
    m_wakeAt = next;
    // At `next` exactly: ns-3's clock may stand between two ns (the simulator stops 1 ps before
    // a horizon), and a delay from the truncated `now` would land up to 0.999 ns late, by an amount
    // that depends on where the wall-clock interleaving of ranks put the horizon.
    Time delay = NanoSeconds(next) - Simulator::Now();
    m_wake = Simulator::Schedule(delay.IsNegative() ? Time(0) : delay, &FlowModel::Wake, this);
}

void
FlowModel::Commit(Time horizon)
{
    // Never past ns-3's own clock: finishes after it are not delivered yet.
    int64_t t = std::min(horizon, Simulator::Now()).GetNanoSeconds();
    m_engine->Commit(t);
}

Time
FlowModel::PredictFinish(FlowId id)
{
    auto st = m_engine->GetStatus(id);
    if (st == FluidNetwork::Status::Retired)
    {
        NS_ABORT_MSG("FlowModel::PredictFinish: flow " << id << " is long finished");
    }
    m_engine->AdvanceUntilDone(id);
    CollectCompletions();
    ScheduleWake();
    int64_t finish = m_engine->FinishTime(id);
    return finish == FluidNetwork::kNever ? Time::Max() : NanoSeconds(finish);
}

void
FlowModel::Pin(FlowId id)
{
    PredictFinish(id);
    m_engine->Pin(id);
}

double
FlowModel::GetChannelLoad(uint32_t channel) const
{
    return m_engine->ChannelLoad(channel);
}

NetworkModelStats
FlowModel::GetStats() const
{
    NetworkModelStats s;
    if (!m_engine)
    {
        return s;
    }
    const auto& e = m_engine->GetStats();
    s.flowsAdded = e.flowsAdded;
    s.flowsFinished = e.flowsFinished;
    s.rateUpdates = e.resolves;
    s.flowsResolved = e.flowsResolved;
    s.rollbacks = e.rollbacks;
    s.causalityViolations = e.causalityViolations + m_lateStarts;
    s.lateFlowsReplayed = m_lateReplays;
    s.peakActiveFlows = e.peakActive;
    s.historyBytes = m_engine->HistoryBytes();
    return s;
}

} // namespace eidolon
} // namespace ns3
