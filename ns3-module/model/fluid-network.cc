/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "fluid-network.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ns3
{
namespace eidolon
{

FluidNetwork::FluidNetwork(std::vector<double> capacity)
    : m_capacity(std::move(capacity))
    , m_channelFlows(m_capacity.size())
    , m_channelMark(m_capacity.size(), 0)
    , m_localChannel(m_capacity.size(), 0)
{
    for (size_t c = 0; c < m_capacity.size(); ++c)
    {
        if (!(m_capacity[c] > 0))
        {
            throw std::logic_error("channel " + std::to_string(c) + " has no capacity");
        }
    }
}

uint32_t
FluidNetwork::SlotOf(FlowId id) const
{
    auto it = m_index.find(id);
    if (it == m_index.end())
    {
        throw std::logic_error("unknown or retired flow " + std::to_string(id));
    }
    return it->second;
}

void
FluidNetwork::Add(FlowId id, FlowInput in)
{
    if (m_index.count(id))
    {
        throw std::logic_error("flow id " + std::to_string(id) + " already used");
    }
    if (in.start < m_committed)
    {
        throw std::logic_error("flow " + std::to_string(id) + " starts at " +
                               std::to_string(in.start) + " ns, before the commit horizon " +
                               std::to_string(m_committed) + " ns");
    }
    if (!(in.bytes >= 0) || in.latencyNs < 0)
    {
        throw std::logic_error("flow " + std::to_string(id) + " has negative size or latency");
    }
    for (uint32_t c : in.path)
    {
        if (c >= m_capacity.size())
        {
            throw std::logic_error("flow " + std::to_string(id) + " crosses unknown channel " +
                                   std::to_string(c));
        }
    }
    if (in.start < m_now)
    {
        RollbackTo(in.start); // the flow arrives in the region already computed: replay it
    }
    // A start exactly at Now() needs no rollback: it becomes another batch at the same instant.
    // No time passes between the two batches, so the rates and drains that follow are those one
    // batch with every arrival would give. (Callbacks that post the next flow at the finish time
    // of the last one, the common case, stay cheap.)
    uint32_t slot;
    if (!m_freeSlots.empty())
    {
        slot = m_freeSlots.back();
        m_freeSlots.pop_back();
        m_flows[slot] = Flow{};
    }
    else
    {
        slot = uint32_t(m_flows.size());
        m_flows.emplace_back();
        m_flowMark.push_back(0);
    }
    Flow& f = m_flows[slot];
    f.id = id;
    std::sort(in.path.begin(), in.path.end());
    f.useBegin = uint32_t(m_uses.size());
    for (uint32_t c : in.path)
    {
        if (f.useCount > 0 && m_uses.back().channel == c)
        {
            ++m_uses.back().weight;
        }
        else
        {
            m_uses.push_back({c, 1, 0});
            ++f.useCount;
        }
    }
    f.bytes = in.bytes;
    f.rateCap = in.rateCap;
    f.start = in.start;
    f.latencyNs = in.latencyNs;
    f.status = Status::Pending;
    m_index.emplace(id, slot);
    PushEvent(slot, f.start);
    ++m_stats.flowsAdded;
}

void
FluidNetwork::PushEvent(uint32_t slot, int64_t time)
{
    Flow& f = m_flows[slot];
    if (f.stamp == 0)
    {
        ++m_liveEvents;
    }
    f.stamp = ++m_stampCounter;
    m_events.push_back({time, f.id, slot, f.stamp});
    std::push_heap(m_events.begin(), m_events.end(), EventAfter{});
    // Dead entries pile up as flows are re-keyed; rebuild once they outnumber the live ones.
    if (m_events.size() > 2 * m_liveEvents + 1024)
    {
        std::vector<Event> live;
        live.reserve(m_liveEvents);
        for (const Event& e : m_events)
        {
            if (m_flows[e.slot].stamp == e.stamp)
            {
                live.push_back(e);
            }
        }
        m_events.swap(live);
        std::make_heap(m_events.begin(), m_events.end(), EventAfter{});
    }
}

void
FluidNetwork::DropEvent(uint32_t slot)
{
    Flow& f = m_flows[slot];
    if (f.stamp != 0)
    {
        f.stamp = 0;
        --m_liveEvents;
    }
}

const FluidNetwork::Event*
FluidNetwork::TopEvent() const
{
    while (!m_events.empty() && m_flows[m_events.front().slot].stamp != m_events.front().stamp)
    {
        std::pop_heap(m_events.begin(), m_events.end(), EventAfter{});
        m_events.pop_back();
    }
    return m_events.empty() ? nullptr : &m_events.front();
}

int64_t
FluidNetwork::NextEventTime() const
{
    const Event* top = TopEvent();
    return top ? top->time : kNever;
}

void
FluidNetwork::AdvanceTo(int64_t t)
{
    for (const Event* top = TopEvent(); top && top->time <= t; top = TopEvent())
    {
        ProcessBatch(top->time);
    }
    if (t != kNever)
    {
        m_now = std::max(m_now, t);
    }
}

void
FluidNetwork::AdvanceUntilDone(FlowId id)
{
    uint32_t slot = SlotOf(id);
    while (m_flows[slot].status != Status::Done && TopEvent())
    {
        AdvanceTo(NextEventTime());
    }
}

FluidNetwork::Status
FluidNetwork::GetStatus(FlowId id) const
{
    auto it = m_index.find(id);
    return it == m_index.end() ? Status::Retired : m_flows[it->second].status;
}

int64_t
FluidNetwork::DrainTime(FlowId id) const
{
    const Flow& f = m_flows[SlotOf(id)];
    return f.status == Status::Done ? f.drain : kNever;
}

int64_t
FluidNetwork::FinishTime(FlowId id) const
{
    const Flow& f = m_flows[SlotOf(id)];
    return f.status == Status::Done ? f.drain + f.latencyNs : kNever;
}

double
FluidNetwork::Rate(FlowId id) const
{
    const Flow& f = m_flows[SlotOf(id)];
    return f.status == Status::Active ? f.rate : 0.0;
}

double
FluidNetwork::ChannelLoad(uint32_t channel) const
{
    double load = 0;
    for (const ChannelEntry& e : m_channelFlows.at(channel))
    {
        const Flow& f = m_flows[e.slot];
        load += f.rate * m_uses[f.useBegin + e.use].weight;
    }
    return load;
}

size_t
FluidNetwork::HistoryBytes() const
{
    return m_undo.size() * sizeof(UndoEntry) + m_completionLog.size() * sizeof(FlowId);
}

void
FluidNetwork::Attach(uint32_t slot)
{
    const Flow& f = m_flows[slot];
    for (uint32_t i = 0; i < f.useCount; ++i)
    {
        Use& u = m_uses[f.useBegin + i];
        auto& list = m_channelFlows[u.channel];
        u.position = uint32_t(list.size());
        list.push_back({slot, i});
    }
}

void
FluidNetwork::Detach(uint32_t slot)
{
    const Flow& f = m_flows[slot];
    for (uint32_t i = 0; i < f.useCount; ++i)
    {
        const Use& u = m_uses[f.useBegin + i];
        auto& list = m_channelFlows[u.channel];
        const uint32_t pos = u.position;
        ChannelEntry moved = list.back();
        list[pos] = moved;
        m_uses[m_flows[moved.slot].useBegin + moved.use].position = pos;
        list.pop_back();
    }
}

void
FluidNetwork::SetDrain(uint32_t slot, int64_t drain)
{
    Flow& f = m_flows[slot];
    f.drain = drain;
    if (drain != kNever)
    {
        PushEvent(slot, drain);
    }
    else
    {
        DropEvent(slot);
    }
}

int64_t
FluidNetwork::DrainFrom(int64_t t, double remaining, double rate) const
{
    if (remaining <= 0 || std::isinf(rate))
    {
        return t;
    }
    if (rate <= 0)
    {
        return kNever;
    }
    // Bytes times 1e9 first, then divide: exact for the round numbers people check by hand.
    double ns = remaining * 1e9 / rate;
    if (ns > 9e18)
    {
        return kNever;
    }
    // A thousandth of a nanosecond of slack keeps 999.99999... from becoming 1001 ns.
    return t + std::max<int64_t>(0, int64_t(std::ceil(ns - 1e-3)));
}

void
FluidNetwork::Complete(uint32_t slot, int64_t t)
{
    Flow& f = m_flows[slot];
    m_undo.push_back({t, slot, UndoKind::Completed, f.rate, f.remaining, f.lastUpdate, f.drain});
    Detach(slot);
    f.status = Status::Done;
    f.rate = 0;
    f.remaining = 0;
    f.lastUpdate = t;
    f.drain = t;
    --m_activeCount;
    m_completionLog.push_back(f.id);
    ++m_stats.flowsFinished;
}

void
FluidNetwork::ProcessBatch(int64_t t)
{
    // Take every event of this instant out of the queue first: arrivals and drains at t form one
    // batch, handled in id order, followed by a single re-solve of the components they touch.
    std::vector<std::pair<FlowId, uint32_t>>& batch = m_batch;
    batch.clear();
    for (const Event* top = TopEvent(); top && top->time == t; top = TopEvent())
    {
        batch.emplace_back(top->id, top->slot);
        DropEvent(top->slot);
    }
    m_now = std::max(m_now, t);
    ++m_stats.batches;
    std::vector<uint32_t>& seeds = m_seeds;
    seeds.clear();
    for (auto [id, slot] : batch)
    {
        Flow& f = m_flows[slot];
        for (uint32_t k = f.useBegin; k < f.useBegin + f.useCount; ++k)
        {
            seeds.push_back(m_uses[k].channel);
        }
        if (f.status == Status::Pending)
        {
            m_undo.push_back({t, slot, UndoKind::Activated, 0, 0, 0, kNever});
            f.status = Status::Active;
            f.remaining = f.bytes;
            f.lastUpdate = t;
            f.rate = 0;
            f.drain = kNever;
            Attach(slot);
            ++m_activeCount;
            m_stats.peakActive = std::max<uint64_t>(m_stats.peakActive, m_activeCount);
            if (f.useCount == 0 || f.bytes <= 0)
            {
                Complete(slot, t); // nothing to carry, or nowhere to carry it: done at once
            }
        }
        else
        {
            Complete(slot, t); // its drain time has come (the queue entry is gone already)
        }
    }
    Resolve(t, seeds);
}

void
FluidNetwork::Resolve(int64_t t, const std::vector<uint32_t>& seeds)
{
    // Connected component of the touched channels: channels -> flows on them -> their channels...
    // The problem is built as the flows are found, in one pass over their uses: the solver's
    // rates do not depend on the order of the shared flows. Its uses name global channels until
    // every channel of the component is known and numbered in canonical (index) order.
    ++m_mark;
    m_component.clear();
    m_componentChannels.clear();
    m_problem.Clear();
    bool anyPinned = false;
    for (uint32_t c : seeds)
    {
        if (m_channelMark[c] != m_mark)
        {
            m_channelMark[c] = m_mark;
            m_componentChannels.push_back(c);
        }
    }
    for (size_t i = 0; i < m_componentChannels.size(); ++i)
    {
        for (const ChannelEntry& e : m_channelFlows[m_componentChannels[i]])
        {
            if (m_flowMark[e.slot] == m_mark)
            {
                continue;
            }
            m_flowMark[e.slot] = m_mark;
            m_component.push_back(e.slot);
            const Flow& f = m_flows[e.slot];
            anyPinned = anyPinned || f.pinned;
            m_problem.AddFlow(f.rateCap);
            for (uint32_t k = f.useBegin; k < f.useBegin + f.useCount; ++k)
            {
                const Use& u = m_uses[k];
                if (m_channelMark[u.channel] != m_mark)
                {
                    m_channelMark[u.channel] = m_mark;
                    m_componentChannels.push_back(u.channel);
                }
                m_problem.Use(u.channel, u.weight);
            }
        }
    }
    if (!m_component.empty())
    {
        ++m_stats.resolves;
        m_stats.flowsResolved += m_component.size();
        std::sort(m_componentChannels.begin(), m_componentChannels.end());
        for (uint32_t c : m_componentChannels)
        {
            m_localChannel[c] = m_problem.AddResource(m_capacity[c]);
        }
        for (uint32_t& r : m_problem.useResource)
        {
            r = m_localChannel[r];
        }
        if (anyPinned)
        {
            // Pinned flows are reserved flow by flow, which rounds with the order: canonical
            // order, flows by id, makes the solve a function of the set of flows alone, which is
            // what makes rollback and replay exact. (Ids sorted beside their slots: a comparison
            // that looked each id up in m_flows missed the cache.)
            m_componentOrder.clear();
            for (uint32_t slot : m_component)
            {
                m_componentOrder.emplace_back(m_flows[slot].id, slot);
            }
            std::sort(m_componentOrder.begin(), m_componentOrder.end());
            m_component.clear();
            m_problem.Clear();
            for (uint32_t c : m_componentChannels)
            {
                m_problem.AddResource(m_capacity[c]);
            }
            for (const auto& [id, slot] : m_componentOrder)
            {
                const Flow& f = m_flows[slot];
                m_component.push_back(slot);
                m_problem.AddFlow(f.rateCap);
                for (uint32_t k = f.useBegin; k < f.useBegin + f.useCount; ++k)
                {
                    m_problem.Use(m_localChannel[m_uses[k].channel], m_uses[k].weight);
                }
            }
        }
        m_solver.Solve(m_problem, m_rates);
        if (anyPinned)
        {
            // Pinned flows must drain when they were seen to drain: reserve the rate that does it
            // and share the rest. The first solve (all shared) tells whether that was fair.
            for (size_t i = 0; i < m_component.size(); ++i)
            {
                Flow& f = m_flows[m_component[i]];
                if (!f.pinned)
                {
                    continue;
                }
                double remaining =
                    std::max(0.0, f.remaining - f.rate * double(t - f.lastUpdate) / 1e9);
                // (pinnedDrain <= t cannot happen for an active flow: its drain event came first)
                double need = f.pinnedDrain > t ? remaining * 1e9 / double(f.pinnedDrain - t) : 0;
                if (m_rates[i] < need * (1 - 1e-9) && !f.violated)
                {
                    f.violated = true;
                    ++m_stats.causalityViolations;
                    int64_t fair = DrainFrom(t, remaining, m_rates[i]);
                    m_stats.violationNs += (fair == kNever ? 0 : fair - f.pinnedDrain);
                }
                m_problem.fixedRate[i] = need;
            }
            m_solver.Solve(m_problem, m_rates);
        }
        for (size_t i = 0; i < m_component.size(); ++i)
        {
            uint32_t slot = m_component[i];
            Flow& f = m_flows[slot];
            double rate = m_rates[i];
            if (rate == f.rate && f.drain != kNever && !f.pinned)
            {
                continue; // unchanged: its drain prediction stands, nothing to log
            }
            m_undo.push_back(
                {t, slot, UndoKind::Updated, f.rate, f.remaining, f.lastUpdate, f.drain});
            f.remaining = std::max(0.0, f.remaining - f.rate * double(t - f.lastUpdate) / 1e9);
            f.lastUpdate = t;
            f.rate = rate;
            SetDrain(slot, f.pinned ? std::max(t, f.pinnedDrain) : DrainFrom(t, f.remaining, rate));
        }
    }
    if (onRatesChanged)
    {
        onRatesChanged(t, m_componentChannels);
    }
}

void
FluidNetwork::Undo(const UndoEntry& e)
{
    Flow& f = m_flows[e.slot];
    switch (e.kind)
    {
    case UndoKind::Activated:
        SetDrain(e.slot, kNever);
        Detach(e.slot);
        f.status = Status::Pending;
        f.rate = 0;
        f.remaining = 0;
        --m_activeCount;
        PushEvent(e.slot, f.start);
        break;
    case UndoKind::Updated:
        SetDrain(e.slot, e.drain);
        f.rate = e.rate;
        f.remaining = e.remaining;
        f.lastUpdate = e.lastUpdate;
        break;
    case UndoKind::Completed:
        f.status = Status::Active;
        Attach(e.slot);
        ++m_activeCount;
        f.rate = e.rate;
        f.remaining = e.remaining;
        f.lastUpdate = e.lastUpdate;
        f.drain = kNever;
        // A flow completed in the batch that activated it had no drain event: give it the instant.
        SetDrain(e.slot, e.drain == kNever ? e.time : e.drain);
        m_completionLog.pop_back();
        --m_stats.flowsFinished;
        break;
    }
}

void
FluidNetwork::RollbackTo(int64_t t)
{
    if (t < m_committed)
    {
        throw std::logic_error("rollback to " + std::to_string(t) +
                               " ns, before the commit horizon " + std::to_string(m_committed) +
                               " ns");
    }
    if (t > m_now)
    {
        return; // nothing at or after t has been processed
    }
    ++m_stats.rollbacks;
    while (!m_undo.empty() && m_undo.back().time >= t)
    {
        Undo(m_undo.back());
        m_undo.pop_back();
        ++m_stats.undoneEntries;
    }
    m_now = t - 1;
}

void
FluidNetwork::Retire(uint32_t slot)
{
    Flow& f = m_flows[slot];
    m_index.erase(f.id);
    m_deadUses += f.useCount;
    f = Flow{};
    f.status = Status::Retired;
    m_freeSlots.push_back(slot);
    if (m_deadUses > m_uses.size() / 2 + 4096)
    {
        CompactUses();
    }
}

void
FluidNetwork::CompactUses()
{
    // The live flows' uses, slot by slot, into a fresh arena (channel lists refer to a flow's
    // uses by index, so nothing else moves).
    std::vector<Use> live;
    live.reserve(m_uses.size() - m_deadUses);
    for (Flow& f : m_flows)
    {
        if (f.status == Status::Retired)
        {
            continue;
        }
        const uint32_t begin = uint32_t(live.size());
        live.insert(live.end(), m_uses.begin() + f.useBegin,
                    m_uses.begin() + f.useBegin + f.useCount);
        f.useBegin = begin;
    }
    m_uses.swap(live);
    m_deadUses = 0;
    ++m_stats.useCompactions;
}

void
FluidNetwork::Pin(FlowId id)
{
    Flow& f = m_flows[SlotOf(id)];
    if (f.status != Status::Done)
    {
        throw std::logic_error("pin of flow " + std::to_string(id) + " before it is done");
    }
    f.pinned = true;
    f.pinnedDrain = f.drain;
}

void
FluidNetwork::Commit(int64_t t)
{
    if (t <= m_committed)
    {
        return;
    }
    m_committed = t;
    while (!m_undo.empty() && m_undo.front().time < t)
    {
        m_undo.pop_front();
    }
    // Retire flows whose whole life lies before t: no rollback can reach them any more.
    // (In place: Commit runs at every FlowModel wake, so it allocates nothing.)
    size_t kept = 0;
    for (uint32_t slot : m_lingering)
    {
        const Flow& f = m_flows[slot];
        if (f.drain + f.latencyNs < t)
        {
            Retire(slot);
        }
        else
        {
            m_lingering[kept++] = slot;
        }
    }
    m_lingering.resize(kept);
    while (m_retireCursor < CompletionCount())
    {
        uint32_t slot = SlotOf(CompletionAt(m_retireCursor));
        const Flow& f = m_flows[slot];
        if (f.drain >= t)
        {
            break;
        }
        (f.drain + f.latencyNs < t) ? Retire(slot) : m_lingering.push_back(slot);
        ++m_retireCursor;
    }
    // Trim the retired prefix of the completion log (amortised: only when it is the larger half).
    size_t retired = m_retireCursor - m_completionBase;
    if (retired > 1024 && retired * 2 > m_completionLog.size())
    {
        m_completionLog.erase(m_completionLog.begin(), m_completionLog.begin() + retired);
        m_completionBase = m_retireCursor;
    }
}

} // namespace eidolon
} // namespace ns3
