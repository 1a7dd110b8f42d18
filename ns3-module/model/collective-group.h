/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): the collectives one group (ncclGroupStart/End) issues on a
 * communicator, as NCCL plans them into one kernel (enqueue.cc): which of them are aggregated and
 * chosen an algorithm together, on their summed size, and which channels run which part of each,
 * in what order. Each claimed release's rules, read at its tag.
 */
#ifndef EIDOLON_COLLECTIVE_GROUP_H
#define EIDOLON_COLLECTIVE_GROUP_H

#include "collective-model.h"
#include "nccl-cost-model.h"

#include <cstdint>
#include <vector>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// A part of one collective of the group that one channel runs.
struct GroupPiece
{
    uint32_t call = 0;  //!< index of the call in the group (issue order)
    uint64_t bytes = 0; //!< the part's size in CollectiveCall::bytes' convention
};

/// NCCL's plan for a group's collectives.
struct GroupLayout
{
    /// Per call: the algorithm and protocol of its aggregate, the channels NCCL chose for the
    /// aggregate (nMaxChannels), the aggregate's thread share and NCCL's estimate for it.
    std::vector<CollectivePlan> plans;
    /// Per call: the first and last channel its pieces run on (channels of the call's kind).
    std::vector<int> channelLo, channelHi;
    /// Per channel (CTA): the pieces it runs, one after the other, in order.
    std::vector<std::vector<GroupPiece>> lanes;
};

/// Lays out the collectives `calls` (issued in this order inside one group on communicator
/// `comm`) as NCCL `settings.ncclVersion` does:
/// - up to 2.19: runs of consecutive calls of one function, datatype and operation are aggregated
///   (the algorithm chosen on their summed size, NCCL's numPipeOps the channels they ask for over
///   the channels they get); each call of an aggregate takes ceil(bytes / 512 B) channels (the
///   per-channel size NCCL starts from, 2 MiB x min(16, ranks), halves down to 512 B: the total
///   it compares with is never set in those releases), placed on the least loaded channels;
/// - 2.20-2.21: the same runs, numPipeOps 1; their bytes spread continuously over the usable
///   channels, each channel filled to total / usable before the next (CollNet and NVLS across
///   nodes apart, on all their channels);
/// - from 2.22: calls sorted by traffic, binned by function, datatype and operation, and
///   aggregated within 4x of the smallest of a run; numPipeOps ceil(calls / channels); then, per
///   kind (CollNet x NVLS), cut into cells of the release's minimum traffic and laid on the
///   channels so that each carries the kind's traffic over its channels (CollNet and NVLS across
///   nodes: every call on all its channels).
/// Broadcast and Reduce take part like the others. Calls of 0 bytes are left out (no piece).
GroupLayout LayOutGroup(const std::vector<CollectiveCall>& calls, const NcclCommInfo& comm,
                        const CostSettings& settings);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_COLLECTIVE_GROUP_H
