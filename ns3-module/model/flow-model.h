/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: the default network model, max-min fair sharing of link capacity among flows.
 */
#ifndef EIDOLON_FLOW_MODEL_H
#define EIDOLON_FLOW_MODEL_H

#include "fluid-network.h"
#include "network-model.h"

#include "ns3/event-id.h"
#include "ns3/traced-callback.h"

#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief NetworkModel in which every active flow runs at its max-min fair share of the channels it
 * crosses (FluidNetwork does the arithmetic), and completions are ns-3 events.
 *
 * The model keeps one ns-3 event pending at the next instant something happens: a flow starts or
 * drains (rates change) or a finish is due. Callbacks run at the flow's finish time, which is final
 * then: nothing can be added before ns-3's current time. PredictFinish() may run the engine ahead
 * of ns-3's clock (provisionally); a flow added later with an earlier start rolls it back and
 * replays.
 */
class FlowModel : public NetworkModel
{
public:
    static TypeId GetTypeId();
    FlowModel();
    ~FlowModel() override;

    void SetTopology(Ptr<const Topology> topology) override;
    Ptr<const Topology> GetTopology() const override;
    FlowId AddFlow(const FlowSpec& spec, FinishCallback onFinish) override;
    void Commit(Time horizon) override;
    void CommitAhead(Time bound) override;
    NetworkModelStats GetStats() const override;

    /// When the flow will finish as far as the flows posted so far tell (runs the engine ahead).
    Time PredictFinish(FlowId id);
    /// Keep the flow's predicted finish on replay (the optimistic mode pins what a rank has seen).
    void Pin(FlowId id);
    /// Current load (bytes/s) and capacity of a directed channel.
    double GetChannelLoad(uint32_t channel) const;
    const FluidNetwork& GetEngine() const { return *m_engine; }

    /// Signature of the LinkUtilization trace: channel, load / capacity.
    using LinkUtilizationTracedCallback = void (*)(uint32_t channel, double utilization);
    using FlowTracedCallback = void (*)(const FlowRecord& record);

protected:
    void DoDispose() override;

private:
    struct Posted
    {
        FlowRecord record;
        FinishCallback onFinish;
    };
    void ScheduleWake();
    void Wake();
    void CollectCompletions();
    void Deliver(int64_t upTo);

    Ptr<const Topology> m_topology;
    std::unique_ptr<FluidNetwork> m_engine;
    std::unordered_map<FlowId, Posted> m_posted; //!< posted, finish not yet delivered
    using Due = std::pair<int64_t, FlowId>;
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> m_due;
    size_t m_logCursor = 0;
    EventId m_wake;
    int64_t m_wakeAt = FluidNetwork::kNever;
    FlowId m_nextId = 1;
    uint64_t m_lateStarts = 0;  //!< flows from before the commit horizon, started late
    uint64_t m_lateReplays = 0; //!< flows from the past that rolled the engine back

    bool m_autoCommit;
    int64_t m_commitAhead = -1; //!< ns: CommitAhead's bound, -1: none
    uint64_t m_ecmpSeed;

    TracedCallback<const FlowRecord&> m_flowStarted;
    TracedCallback<const FlowRecord&> m_flowFinished;
    TracedCallback<uint32_t, double> m_linkUtilization;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_FLOW_MODEL_H
