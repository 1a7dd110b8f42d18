/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): NCCL's choice for one call: the algorithm and protocol of
 * least estimated time in the cost table, and the channels the operation runs on (enqueue.cc).
 */
#ifndef EIDOLON_NCCL_SELECTION_H
#define EIDOLON_NCCL_SELECTION_H

#include "collective-model.h"
#include "nccl-cost-model.h"

#include <cstdint>
#include <string>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// How NCCL's collective scheduler (enqueue.cc scheduleCollTasksToPlan) spreads one op over the
/// channels its thread threshold left: in cells of a minimum traffic per channel, so that an op
/// of T bytes of traffic takes at most ceil(T / minTraffic) channels. Read at the tags: none up
/// to 2.21 (2.18.5, 2.21.5: the op takes every channel the threshold leaves); 512 B in 2.22.3;
/// 16 KiB in 2.23.4-2.28.3; 32 KiB from 2.29.3. LL traffic counts four times from 2.26.2.
struct SchedulerCells
{
    uint64_t minTraffic; //!< 0: no cells
    bool llTimesFour;
};

SchedulerCells SchedulerCellsOf(uint32_t version);

/// A rank's own bytes of `call` (NCCL's count x type size): AllGather's send buffer,
/// ReduceScatter's receive buffer (CollectiveCall::bytes / nRanks), the whole buffer otherwise.
uint64_t RankBytes(const CollectiveCall& call, uint32_t nRanks);

/// ncclFuncTrafficPerByte: bytes a function of NCCL index `f` moves per byte of a rank's own
/// (AllReduce 2, AllGather / ReduceScatter nRanks, the others 1).
uint64_t TrafficPerByte(int f, uint32_t nRanks);

/// NCCL's plan for `call` on `comm`. Where NCCL_ALGO / NCCL_PROTO leave nothing this call can
/// run, what the emulated release does (plan.envOutcome): 2.19-2.23 run Ring, the others fail
/// the call, for which the plan is NCCL's own choice without the variables. SendRecv: the
/// channels of the largest transfer (each transfer picks its own protocol).
CollectivePlan SelectPlan(const CollectiveCall& call, const NcclCommInfo& comm,
                          const CostSettings& settings);

/// What the emulated NCCL says and does for a call of plan.envOutcome Unavailable (NCCL's
/// warning, its error code), and what the model runs instead.
std::string NoAlgorithmMessage(const CollectiveCall& call, const NcclCommInfo& comm,
                               const CostSettings& settings, const CollectivePlan& plan);

/// Channels NCCL `ncclVersion` gives a collective of the chosen algorithm/protocol: its thread
/// threshold's channels, then (2.22+) no more than its scheduler's cells of minimum traffic.
int OpChannels(const CollectiveCall& call, const NcclCommInfo& comm, NcclAlgorithm algorithm,
               NcclProtocol protocol, uint32_t ncclVersion);

/// A Ring/Tree CTA's full thread count before NCCL's small-op halving (tuning.cc maxThreads):
/// LL 512, LL128 640, Simple 512, 256 for a Simple ring on a PCIe-class graph.
int FullThreads(const NcclCommInfo& comm, NcclAlgorithm algorithm, NcclProtocol protocol);

/// The share of its protocol's full thread count (FullThreads) each CTA of a
/// Ring collective runs with: with one channel left and still under the threshold of bytes per
/// thread, NCCL halves the threads while they are a multiple of 128 (512 -> 256 -> 128 -> 64),
/// then raises them to 3 warps (enqueue.cc, topoGetAlgoInfo). A CTA with fewer threads copies
/// proportionally slower. Tree the same up to 2.21 (2.18.5, 2.21.5); from 2.22 "Tree now uses all
/// threads always" (2.22.3 enqueue.cc), 1. 1 for NVLS and CollNet, which keep theirs.
double OpThreadShare(const CollectiveCall& call, const NcclCommInfo& comm, NcclAlgorithm algorithm,
                     NcclProtocol protocol, uint32_t ncclVersion);

/// Channels NCCL gives one point-to-point operation of `bytes` (scheduleP2pTasksToPlan), by the
/// communicator's release: up to 2.21 calcP2pChunkSize's parts (minimum part the p2p chunk / 8;
/// from 2.20 / 2 across nodes), from 2.22 addP2pToPlan's channel count; nMin is halved to share
/// the p2p pool on one node only up to 2.19, on every communicator from 2.20.
int P2pOpChannels(const NcclCommInfo& comm, uint64_t bytes);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_SELECTION_H
