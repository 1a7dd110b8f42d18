/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: posts transfers and collectives as flows, for ns-3 scenarios without live processes.
 */
#ifndef EIDOLON_COLLECTIVE_HELPER_H
#define EIDOLON_COLLECTIVE_HELPER_H

#include "ns3/callback.h"
#include "ns3/network-model.h"
#include "ns3/nstime.h"
#include "ns3/topology.h"

#include <cstdint>
#include <vector>

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief Turns GPU-level transfers and a ring all-reduce into flows on a NetworkModel.
 *
 * GPUs are named by global index. The ring all-reduce has two forms:
 *  - Pipelined (default): each channel's ring is one flow that crosses every ring edge; it moves
 *    2(n-1)/n of the buffer per channel at the rate of the ring's bottleneck (the steady state of
 *    a chunked pipeline), plus the latency of 2(n-1) consecutive ring edges. Cheap at any scale.
 *  - Stepwise: 2(n-1) steps per channel, each a flow per rank of bytes/(n * channels); a rank's
 *    step starts when it received the previous step's chunk and its own previous send drained.
 *    It shows per-step dynamics at the cost of 2(n-1) x n x channels flows.
 * NCCL's own algorithm and protocol choice is a separate layer (the collective model); this helper
 * is the plain data movement.
 */
class CollectiveHelper
{
public:
    using DoneCallback = Callback<void, Time>; //!< called with the completion time

    enum class RingMode
    {
        Pipelined,
        Stepwise,
    };

    explicit CollectiveHelper(Ptr<NetworkModel> model);

    /// One transfer of bytes from GPU src to GPU dst (global indices), routed by the topology.
    FlowId Send(uint32_t srcGpu,
                uint32_t dstGpu,
                uint64_t bytes,
                Time start,
                DoneCallback done,
                uint64_t tag = 0);

    /**
     * All-reduce of `bytes` over rings (one ring order of global GPU indices per channel; all rings
     * hold the same GPUs), split evenly across channels. done runs once, when the last flow ends.
     */
    void RingAllReduce(const std::vector<std::vector<uint32_t>>& rings,
                       uint64_t bytes,
                       Time start,
                       DoneCallback done,
                       RingMode mode = RingMode::Pipelined);

    /**
     * Rings the way NCCL lays them out on rail-optimized nodes: channel c enters and leaves each
     * node on GPUs of one rail, so inter-node hops stay on a rail (even nodes walk their GPUs
     * upward from c, odd nodes downward back to c). With one node the ring is rotated by c.
     */
    static std::vector<std::vector<uint32_t>> RailAlignedRings(const Topology& topology,
                                                               uint32_t channels);

    /// nccl-tests' bus bandwidth factor for all-reduce: 2(n-1)/n.
    static double AllReduceBusFactor(uint32_t n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }

private:
    void PipelinedRing(const std::vector<std::vector<uint32_t>>& rings,
                       uint64_t bytes,
                       Time start,
                       DoneCallback done);
    void StepwiseRing(const std::vector<std::vector<uint32_t>>& rings,
                      uint64_t bytes,
                      Time start,
                      DoneCallback done);

    Ptr<NetworkModel> m_model;
    Ptr<const Topology> m_topology;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_COLLECTIVE_HELPER_H
