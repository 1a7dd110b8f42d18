/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): a group of sends and receives (CollectiveKind::SendRecv)
 * as NCCL schedules it (init.cc ncclP2pSchedule, enqueue.cc scheduleP2pTasksToPlan, channel.h,
 * device/sendrecv.h) turned into flows: each transfer's round, channels and CTA warp share, its
 * path (PXN through the destination's rail) and its protocol.
 */
#ifndef EIDOLON_P2P_SCHEDULE_H
#define EIDOLON_P2P_SCHEDULE_H

#include "collective-model.h"
#include "collective-schedule.h"

#include "ns3/nstime.h"

#include <vector>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// Posts the transfers of `call`; rank r's part is ready at starts[r]. A transfer starts when both
/// its ranks are ready; a rank's `done` fires when its own sends and receives are done (at its
/// start when it has none).
void PostSendRecv(const ScheduleContext& ctx, const CollectiveCall& call, const NcclCommInfo& comm,
                  const std::vector<Time>& starts, CollectiveModel::DoneCallback done);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_P2P_SCHEDULE_H
