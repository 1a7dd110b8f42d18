/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: the interface every network model of the simulator implements.
 */
#ifndef EIDOLON_NETWORK_MODEL_H
#define EIDOLON_NETWORK_MODEL_H

#include "ns3/callback.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <vector>

namespace ns3
{
namespace eidolon
{

class Topology;

/// Identifies one flow for the lifetime of a model.
using FlowId = uint64_t;

/// What a caller asks a network model to carry: bytes from one topology device to another.
struct FlowSpec
{
    uint32_t src = 0;   //!< source device id in the Topology
    uint32_t dst = 0;   //!< destination device id in the Topology
    uint64_t bytes = 0; //!< payload size
    Time start;         //!< virtual time at which the sender starts
    uint64_t tag = 0;   //!< opaque to the model; returned in the FlowRecord (and used for ECMP)
    double rateCap = 0; //!< bytes/s the sender cannot exceed (0: no cap)
    Time extraLatency;  //!< added to the path latency (protocol or per-step latency)
    /// Directed channels to cross, in order; empty means "route it through the topology".
    std::vector<uint32_t> path;
};

/// The per-flow ECMP hash every model routes with: endpoints and tag, never the posting order,
/// so paths do not depend on how live ranks interleave, and all models pick the same paths.
inline uint64_t
FlowHash(const FlowSpec& spec, uint64_t seed)
{
    return (spec.tag * 0x9e3779b97f4a7c15ULL) ^ (uint64_t(spec.src) << 32) ^ spec.dst ^
           (seed * 0xc2b2ae3d27d4eb4fULL);
}

/// A flow as the model saw it; finish is valid once the flow completed.
struct FlowRecord
{
    FlowId id = 0;
    uint32_t src = 0;
    uint32_t dst = 0;
    uint64_t bytes = 0;
    uint64_t tag = 0;
    Time start;
    Time finish;
    std::vector<uint32_t> path; //!< directed channels the flow crossed (as routed or as given)
};

/// Counters every model keeps.
struct NetworkModelStats
{
    uint64_t flowsAdded = 0;
    uint64_t flowsFinished = 0;
    uint64_t rateUpdates = 0;         //!< re-solves of a connected component
    uint64_t flowsResolved = 0;       //!< sum of component sizes over those re-solves
    uint64_t rollbacks = 0;           //!< times the model went back to an earlier state
    uint64_t causalityViolations = 0; //!< pinned flows whose replay could not keep their time
    uint64_t lateFlowsReplayed = 0;   //!< flows added with a start in the past, replayed from it
    uint64_t peakActiveFlows = 0;
    uint64_t historyBytes = 0; //!< memory held for rollback right now (approximate)
};

/**
 * \ingroup eidolon
 * \brief The network as the rest of eidolon sees it: flows in, completion callbacks out.
 *
 * A completion is an ns-3 event at the flow's finish time; the callback runs inside the simulator.
 * Commit(t) promises that no flow will be added with a start before t, so the model may forget
 * the history it would need to roll back past t.
 */
class NetworkModel : public Object
{
public:
    using FinishCallback = Callback<void, const FlowRecord&>;

    static TypeId GetTypeId();
    ~NetworkModel() override;

    /// Give the model the cluster it simulates; must be called before the first AddFlow.
    virtual void SetTopology(Ptr<const Topology> topology) = 0;
    virtual Ptr<const Topology> GetTopology() const = 0;

    /// Post a flow; onFinish runs (as an ns-3 event) when its last byte has arrived.
    virtual FlowId AddFlow(const FlowSpec& spec, FinishCallback onFinish) = 0;

    /// No flow will start before horizon from now on: history before it may be dropped.
    virtual void Commit(Time horizon) = 0;

    /// Until the next call, no flow will start before the lesser of `bound` and the simulator's
    /// present as it moves: the model may commit as it runs (a run whose every rank waits gives
    /// Time::Max(): each finish commits). A negative bound withdraws the promise. Default: the
    /// model commits only when told (Commit).
    virtual void CommitAhead(Time bound);

    virtual NetworkModelStats GetStats() const = 0;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NETWORK_MODEL_H
