/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: a fluid simulation of flows over channels, with history for rollback.
 */
#ifndef EIDOLON_FLUID_NETWORK_H
#define EIDOLON_FLUID_NETWORK_H

#include "fair-share-solver.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief The fair-share flow model's engine: time-stepped by events, independent of ns-3's clock.
 *
 * Flows cross directed channels of fixed capacity. Between events every active flow runs at its
 * max-min fair rate; an event (a flow starting or draining) changes the rates of the flows in its
 * connected component only (flows that share channels, transitively), which are re-solved. A flow
 * holds bandwidth from its start until its last byte leaves (its drain time) and finishes one path
 * latency later.
 *
 * History: every change is written to an undo log stamped with its event time. RollbackTo(t) undoes
 * everything at or after t, so the engine is in the state "all events before t processed"; the
 * events from t on are then replayed by AdvanceTo. Commit(t) drops the log before t (no flow will
 * ever start earlier) and retires finished flows, which keeps memory bounded. Events at one instant
 * are processed as one batch in flow-id order, and each re-solve sees its flows sorted by id, so
 * the outcome depends only on the set of flows, not on the order they were added or on rollbacks.
 */
class FluidNetwork
{
public:
    using FlowId = uint64_t;
    static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

    struct FlowInput
    {
        std::vector<uint32_t> path; //!< channels crossed; a channel listed k times is used k times
        double bytes = 0;
        int64_t start = 0;     //!< ns
        int64_t latencyNs = 0; //!< added after the drain
        double rateCap = 0;    //!< bytes/s, 0: none
    };

    enum class Status : uint8_t
    {
        Pending,
        Active,
        Done,
        Retired, //!< done before the commit horizon; only its times are kept
    };

    struct Stats
    {
        uint64_t flowsAdded = 0;
        uint64_t flowsFinished = 0;
        uint64_t batches = 0;
        uint64_t resolves = 0;
        uint64_t flowsResolved = 0;
        uint64_t rollbacks = 0;
        uint64_t undoneEntries = 0;
        uint64_t causalityViolations = 0;
        int64_t violationNs =
            0; //!< sum over violations of how much later the flow would have drained
        uint64_t peakActive = 0;
        uint64_t useCompactions = 0; //!< times the retired flows' use storage was reclaimed
    };

    /// capacity[c]: bytes/s of directed channel c.
    explicit FluidNetwork(std::vector<double> capacity);

    /// Adds a flow with a caller-chosen unique id (ids order simultaneous events). A start before
    /// Now() rolls the engine back to that start first. Throws std::logic_error if the id is
    /// taken, a channel is unknown, or the start is before the commit horizon.
    void Add(FlowId id, FlowInput flow);

    /// Processes every event with time <= t.
    void AdvanceTo(int64_t t);
    /// Processes events until the flow is done (provisionally, if beyond what is committed).
    void AdvanceUntilDone(FlowId id);
    /// Every event at or before this time has been processed.
    int64_t Now() const { return m_now; }
    /// Time of the next unprocessed event, kNever if none.
    int64_t NextEventTime() const;

    /// State as if only events before t had been processed. t must not precede the commit horizon.
    void RollbackTo(int64_t t);
    /// No flow will start before t: forget history before it and retire flows finished before it.
    void Commit(int64_t t);
    int64_t CommitHorizon() const { return m_committed; }

    /// Keep this flow's drain time on replay: after a rollback it runs at the rate that makes it
    /// drain when it did, ahead of the fair share of others. The flow must be done. Where the fair
    /// share would have drained it later, that is counted as a causality violation.
    void Pin(FlowId id);

    bool Has(FlowId id) const { return m_index.count(id) != 0; }
    Status GetStatus(FlowId id) const;
    int64_t DrainTime(FlowId id) const;  //!< kNever until done
    int64_t FinishTime(FlowId id) const; //!< drain + latency; kNever until done
    double Rate(FlowId id) const;        //!< current rate (bytes/s) of an active flow

    /// Flows completed so far, in completion order (drain time, then id), counted from the start
    /// of the run; rollback takes back the tail. CompletionAt(i) is valid for i in
    /// [CompletionBase(), CompletionCount()): older entries were trimmed with retired flows.
    size_t CompletionCount() const { return m_completionBase + m_completionLog.size(); }
    size_t CompletionBase() const { return m_completionBase; }
    FlowId CompletionAt(size_t i) const { return m_completionLog.at(i - m_completionBase); }
    size_t ActiveCount() const { return m_activeCount; }
    size_t HistoryEntries() const { return m_undo.size(); }
    size_t HistoryBytes() const;
    size_t LiveFlowSlots() const { return m_flows.size() - m_freeSlots.size(); }
    const Stats& GetStats() const { return m_stats; }
    /// Sum of rate x weight over the active flows on a channel (bytes/s).
    double ChannelLoad(uint32_t channel) const;
    double ChannelCapacity(uint32_t channel) const { return m_capacity.at(channel); }

    /// Called after each re-solve with the event time and the channels whose load changed.
    std::function<void(int64_t, const std::vector<uint32_t>&)> onRatesChanged;

private:
    /// One channel a flow crosses, in the flows' shared use arena (m_uses).
    struct Use
    {
        uint32_t channel;
        uint32_t weight;   //!< how many times the flow crosses it
        uint32_t position; //!< the flow's index in the channel's list while attached
    };
    /// A flow. What a re-solve reads of it (its uses, cap, pin) comes first: a re-solve of a
    /// large component visits every flow and misses the cache once per line it touches.
    struct Flow
    {
        uint32_t useBegin = 0; //!< its uses: m_uses[useBegin, useBegin + useCount), by channel
        uint32_t useCount = 0;
        double rateCap = 0;
        bool pinned = false;
        Status status = Status::Pending;
        FlowId id = 0;
        double bytes = 0;
        int64_t start = 0;
        int64_t latencyNs = 0;
        bool violated = false;
        int64_t pinnedDrain = kNever;
        double rate = 0;
        double remaining = 0;
        int64_t lastUpdate = 0;
        int64_t drain = kNever;
        uint64_t stamp = 0; //!< stamp of its live queue entry, 0: none
    };
    struct ChannelEntry
    {
        uint32_t slot; //!< flow slot
        uint32_t use;  //!< index into that flow's uses
    };
    enum class UndoKind : uint8_t
    {
        Activated,
        Updated,
        Completed,
    };
    struct UndoEntry
    {
        int64_t time;
        uint32_t slot;
        UndoKind kind;
        double rate;
        double remaining;
        int64_t lastUpdate;
        int64_t drain;
    };

    uint32_t SlotOf(FlowId id) const;
    void ProcessBatch(int64_t t);
    void Attach(uint32_t slot);
    void Detach(uint32_t slot);
    void Resolve(int64_t t, const std::vector<uint32_t>& seeds);
    void SetDrain(uint32_t slot, int64_t drain);
    int64_t DrainFrom(int64_t t, double remaining, double rate) const;
    void Undo(const UndoEntry& e);
    void Complete(uint32_t slot, int64_t t);
    void Retire(uint32_t slot);

    std::vector<double> m_capacity;
    std::vector<std::vector<ChannelEntry>> m_channelFlows;
    std::vector<Flow> m_flows;
    std::vector<uint32_t> m_freeSlots;
    /// Every flow's uses, a flow's contiguous (one allocation for all; the live flows' are
    /// compacted once retired flows' dead ranges outnumber them).
    std::vector<Use> m_uses;
    size_t m_deadUses = 0;
    void CompactUses();
    std::unordered_map<FlowId, uint32_t> m_index;
    /// Event queue: pending flows keyed by start, active flows by drain. A binary heap with lazy
    /// deletion: an entry is live only while its stamp equals its flow's (every re-key stamps
    /// anew), so re-keying is a push and a removal is a stamp change, with no search.
    struct Event
    {
        int64_t time;
        FlowId id;
        uint32_t slot;
        uint64_t stamp;
    };
    struct EventAfter
    {
        bool operator()(const Event& a, const Event& b) const
        {
            return a.time > b.time || (a.time == b.time && a.id > b.id);
        }
    };
    void PushEvent(uint32_t slot, int64_t time);
    void DropEvent(uint32_t slot);
    /// Discards dead entries at the top; returns the live top or nullptr.
    const Event* TopEvent() const;
    mutable std::vector<Event> m_events;
    uint64_t m_stampCounter = 0;
    size_t m_liveEvents = 0;
    std::deque<UndoEntry> m_undo;
    std::deque<FlowId> m_completionLog;
    size_t m_completionBase = 0;
    size_t m_retireCursor = 0;         //!< absolute index of the first completion not yet retired
    std::vector<uint32_t> m_lingering; //!< drained before the horizon but finishing after it
    size_t m_activeCount = 0;
    int64_t m_now = -1;
    int64_t m_committed = std::numeric_limits<int64_t>::min();

    // Work arrays reused across re-solves (no allocation on the hot path).
    FairShareSolver m_solver;
    FairShareProblem m_problem;
    std::vector<double> m_rates;
    std::vector<uint32_t> m_component;
    std::vector<std::pair<FlowId, uint32_t>> m_componentOrder; //!< (id, slot), sorted per solve
    std::vector<uint32_t> m_componentChannels;
    std::vector<uint32_t> m_channelMark;
    std::vector<uint32_t> m_flowMark;
    std::vector<uint32_t> m_localChannel;
    std::vector<std::pair<FlowId, uint32_t>> m_batch;
    std::vector<uint32_t> m_seeds;
    uint32_t m_mark = 0;
    Stats m_stats;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_FLUID_NETWORK_H
