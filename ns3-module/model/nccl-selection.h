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

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// NCCL's plan for `call` on `comm`. Where the environment leaves nothing this topology supports,
/// NCCL's own choice (a warning every 1000 such calls, counted in `fallbacks`). SendRecv: the
/// channels of the largest transfer (each transfer picks its own protocol).
CollectivePlan SelectPlan(const CollectiveCall& call, const NcclCommInfo& comm,
                          const CostSettings& settings, uint64_t& fallbacks);

/// Channels NCCL gives a collective of the chosen algorithm/protocol.
int OpChannels(const CollectiveCall& call, const NcclCommInfo& comm, NcclAlgorithm algorithm,
               NcclProtocol protocol);

/// Channels NCCL gives one point-to-point operation of `bytes` (scheduleP2pTasksToPlan).
int P2pOpChannels(const NcclCommInfo& comm, uint64_t bytes);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_SELECTION_H
