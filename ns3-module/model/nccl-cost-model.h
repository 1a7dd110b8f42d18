/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): NCCL's cost model (src/graph/tuning.cc): per algorithm
 * and protocol, the latency and bus bandwidth of a call on a communicator, the enable rules
 * (platform, environment) and NCCL's time estimate latency + bytes / bandwidth.
 */
#ifndef EIDOLON_NCCL_COST_MODEL_H
#define EIDOLON_NCCL_COST_MODEL_H

#include "collective-model.h"
#include "nccl-config.h"

#include <cstdint>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// What the cost model takes besides the call and the communicator.
struct CostSettings
{
    uint32_t ncclVersion = 0;
    NcclConfig config;
    bool amdCpu = false; //!< NCCL's LL bandwidth row on multi-node, network post overhead
    /// NCCL's CPU arch is x86 (intel, amd, zhaoxin): 2.29+ correct Blackwell's NVLSTree there only.
    bool x86Cpu = true;
    /// The topology's network transport: added to every network message on the critical path
    /// of the timing (PlanLatencyUs), not to NCCL's own estimate (which knows IB only).
    double netMessageLatencyUs = 0;
};

/// Collective work items a channel takes in one batch: NCCL_MAX_WORK_ELEMENTS (9) up to 2.21;
/// from 2.22 NCCL_MAX_DEV_WORK_BATCH_BYTES (1024) over sizeof(ncclDevWorkColl): 64 B in 2.22,
/// 96 B in 2.23-2.29 (buffer offsets and remote addresses added), 128 B from 2.30 (padding).
int WorkBatchColls(uint32_t version);

/// NCCL's table for `call` on `comm`. With `applyEnv` false, NCCL_ALGO and NCCL_PROTO are ignored
/// (NCCL's own choice); the platform rules hold either way. SendRecv and one-rank communicators
/// get an empty table (every time negative).
void ComputeCosts(const CollectiveCall& call, const NcclCommInfo& comm,
                  const CostSettings& settings, bool applyEnv, NcclCostTable& table);

/// The same table with NCCL_ALGO / NCCL_PROTO's place taken by `masks`.
void ComputeCosts(const CollectiveCall& call, const NcclCommInfo& comm,
                  const CostSettings& settings, const EnableMasks& masks, NcclCostTable& table);

/// The latency (us) the timing adds to the data movement of `plan`: NCCL's own latency formula
/// for the algorithm/protocol, except where the data movement runs otherwise than the estimate
/// assumes: chains (Broadcast/Reduce on a ring), and rings across nodes (Simple and LL128 in
/// lockstep, LL along its longest chunk path).
double PlanLatencyUs(const CollectiveCall& call, const NcclCommInfo& comm,
                     const CollectivePlan& plan, const CostSettings& settings);

/// The network crossings on an LL ring's longest chunk path (AllGather/ReduceScatter, AllReduce):
/// nsteps hops (n - 1, or 2(n - 1) for AllReduce) from a node's exit cross the network
/// min(nsteps, ceil(nsteps / ppn)) times; 0 on one node.
double LlRingNetworkCrossings(const CollectiveCall& call, const NcclCommInfo& comm);

/// What a Broadcast/Reduce chain on the ring charges hop by hop (collective-schedule.cc runs it
/// as one flow per hop): each rank's kernel `baseUs` before it sends, each NVLink/PCI hop
/// `intraHopUs`, each network hop `netHopUs`, and every hop's flow `lockstepUs` more (a Simple
/// chain across nodes waits for a network message per slice on every hop). A chain of n ranks
/// that crosses nNodes - 1 node boundaries has PlanLatencyUs = base + (n - nNodes) x intra +
/// (nNodes - 1) x net + lockstep.
struct ChainHops
{
    double baseUs = 0;
    double intraHopUs = 0;
    double netHopUs = 0;
    double lockstepUs = 0;
};
ChainHops ChainHopLatencies(const CollectiveCall& call, const NcclCommInfo& comm,
                            const CollectivePlan& plan, const CostSettings& settings);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_COST_MODEL_H
