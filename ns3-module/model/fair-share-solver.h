/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: max-min fair sharing of capacity among flows (progressive filling).
 */
#ifndef EIDOLON_FAIR_SHARE_SOLVER_H
#define EIDOLON_FAIR_SHARE_SOLVER_H

#include <cstdint>
#include <vector>

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief One max-min problem: resources with capacities, flows that use them.
 *
 * Flow f uses resource useResource[k] with integer weight useWeight[k] for k in
 * [flowBegin[f], flowBegin[f+1]): at rate x it consumes weight*x there. Weights above one describe
 * a flow that crosses the same channel several times (a ring pipeline folded into one flow). A flow
 * with fixedRate >= 0 is not shared: it takes exactly that rate first (a reservation) and the
 * others share what is left. rateCap > 0 bounds a flow's rate (a NIC or sender limit).
 */
struct FairShareProblem
{
    std::vector<double> capacity;    //!< per resource, in any rate unit (eidolon uses bytes/s)
    std::vector<uint32_t> flowBegin; //!< CSR offsets, size flows+1
    std::vector<uint32_t> useResource;
    std::vector<uint32_t> useWeight;
    std::vector<double> rateCap;   //!< per flow; 0 means uncapped
    std::vector<double> fixedRate; //!< per flow; < 0 means shared (the usual case)

    void Clear();
    uint32_t FlowCount() const { return flowBegin.empty() ? 0 : uint32_t(flowBegin.size() - 1); }
    /// Appends a resource and returns its index.
    uint32_t AddResource(double cap);
    /// Starts a new flow; follow with Use() calls for the resources it crosses.
    uint32_t AddFlow(double cap = 0, double fixed = -1);
    void Use(uint32_t resource, uint32_t weight = 1);
};

/**
 * \ingroup eidolon
 * \brief Exact max-min fair rates by progressive filling.
 *
 * All shared flows grow together; the resource whose remaining capacity per unit of unfrozen weight
 * is smallest saturates first and freezes its flows at that level; repeat. A heap over resources
 * keyed by that level (indexed: an entry moves as its level rises) makes a solve O(U log R) for U
 * uses and R resources; rate caps, levels that
 * never move, are one sorted list beside it (a heap entry each made a live alltoall's solves of
 * 10^5 capped flows spend most of their time in the heap). Ties go to the lower
 * resource index, and a level takes its flows' summed integer weight times the share off each
 * resource once, so the result depends only on the problem, never on the order its resources'
 * flows or its shared flows were given in (fixed rates are taken off flow by flow, in order).
 * The solver keeps its work arrays between calls so that repeated solves do not allocate.
 */
class FairShareSolver
{
public:
    /// Fills rates (one per flow). Returns the number of bottleneck levels found.
    uint32_t Solve(const FairShareProblem& problem, std::vector<double>& rates);

    /// True if some resource carries more than its capacity (only possible with fixed rates);
    /// valid after Solve.
    bool Overcommitted() const { return m_overcommitted; }

private:
    std::vector<double> m_remaining;
    std::vector<uint64_t> m_weight;   //!< unfrozen weight per resource (integers: exact)
    std::vector<uint32_t> m_resBegin; //!< reverse CSR: flows of each resource
    std::vector<uint32_t> m_resFlows;
    std::vector<uint8_t> m_frozen;
    std::vector<uint32_t> m_lastTouch;   //!< per resource: the last level that released it
    std::vector<uint32_t> m_touched;     //!< resources released by the current level
    std::vector<uint64_t> m_levelWeight; //!< per touched resource: weight the level froze there
    std::vector<double> m_level;         //!< per resource in the heap: remaining / unfrozen weight
    std::vector<uint32_t> m_heap;        //!< resources with unfrozen flows, a min-heap by Before
    std::vector<uint32_t> m_heapPos;     //!< per resource: its index in m_heap
    /// Heap order: lower level, then lower resource index.
    bool Before(uint32_t a, uint32_t b) const;
    void Place(uint32_t i, uint32_t r);
    /// Moves the entry at i up while it goes before its parent; returns where it ends.
    uint32_t SiftUp(uint32_t i);
    /// Moves the entry at i down while a child goes before it.
    void SiftDown(uint32_t i);
    /// Restores the heap around index i after its resource's level changed.
    void Fix(uint32_t i);
    void Remove(uint32_t r);
    struct Cap
    {
        double cap;
        uint32_t flow;
    };
    std::vector<Cap> m_caps; //!< the shared flows' rate caps, by (cap, flow)
    bool m_overcommitted = false;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_FAIR_SHARE_SOLVER_H
