/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): the schedule that turns NCCL's choice for a collective
 * into flows on the network model: per channel, the path its data takes through the topology
 * (ring, chain, tree, NVLS switch walks, PAT exchanges), what it carries, what its CTA can issue
 * and the latency it adds. p2p-schedule.h does the same for a group of sends and receives.
 */
#ifndef EIDOLON_COLLECTIVE_SCHEDULE_H
#define EIDOLON_COLLECTIVE_SCHEDULE_H

#include "collective-group.h"
#include "collective-model.h"
#include "nccl-cost-model.h"
#include "nccl-indices.h"
#include "network-model.h"
#include "topology.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// Where a schedule posts its flows, and how wire bytes relate to data bytes.
struct ScheduleContext
{
    Ptr<const Topology> topology;
    Ptr<NetworkModel> network;
    uint32_t ncclVersion = 0;
    bool amdCpu = false;                     //!< selects NCCL's LL bandwidth row across nodes
    double protocolEfficiency[kProtos] = {}; //!< data fraction of what LL, LL128, Simple write
    double pcieEfficiency = 0;               //!< payload fraction of a PCIe link
    double netEfficiency = 0;                //!< payload fraction of a NIC port
    double netMessageLatencyUs = 0;          //!< the network transport's cost per message
    bool pxn = true;                         //!< inter-node p2p through the destination's rail
    double llNetSendRate = 0; //!< data bytes/s an LL channel's network sends reach (0: no limit)
};

/// NVLS's chunk for an operation of `nBytes` on `channels` x `heads` (NCCL's calcCollChunking):
/// `startChunk` (NcclCommInfo::nvlsChunkBytes), then 64, 32, 16 KiB while the operation has
/// fewer than 64, 8, 2 chunks per channel and head, each test on the chunk the one before left.
double NvlsChunk(uint64_t nBytes, int channels, uint32_t heads, uint64_t startChunk);
/// NVLSTree's chunk, as NvlsChunk from NcclCommInfo::nvlsTreeChunkBytes: 256, 128, 64, 32 KiB
/// while the operation has fewer than 32, 16, 4, 1 chunks per channel and head.
double NvlsTreeChunk(uint64_t nBytes, int channels, uint32_t heads, uint64_t startChunk);
/// The path of NCCL's SHM transport between GPUs `src` and `dst` of one node (NCCL_P2P_DISABLE=1):
/// up PCIe into the node's host memory and down to `dst`, as one pipelined flow. GPUs of different
/// nodes, or a node without a host device, take the plain route.
std::vector<uint32_t> RouteViaHost(const Topology& topo, uint32_t src, uint32_t dst, uint64_t hash);

/// The path of NCCL's network transport between comm ranks `from` and `to` of one node
/// (NcclCommInfo::viaNet): down PCIe to `from`'s NIC, into the fabric and out at `to`'s NIC, up
/// to `to` (one NIC: its loopback). Ranks on different nodes take the plain route.
std::vector<uint32_t> RouteViaNet(const Topology& topo, const NcclCommInfo& comm,
                                  const std::vector<uint32_t>& gpus, uint32_t from, uint32_t to,
                                  uint64_t hash);

/// The path NCCL's transport between comm ranks `from` and `to` takes: RouteViaNet under viaNet,
/// RouteViaHost under viaHost, else the topology's route (ECMP by `hash`).
std::vector<uint32_t> CommRoute(const Topology& topo, const NcclCommInfo& comm,
                                const std::vector<uint32_t>& gpus, uint32_t from, uint32_t to,
                                uint64_t hash);

/// A run that gathers its ranks' starts and, once every one of `ranks` has started, runs `start`
/// with them (every plan but a chain starts when its last rank does).
std::shared_ptr<CollectiveRun> StartWhenAllHave(
    size_t ranks, std::function<void(const std::vector<Time>&)> start);

/// Runs `fn` at `at` (now if `at` has passed).
void ScheduleAt(Time at, std::function<void()> fn);

/// The payload fraction of directed channel `channel`'s link class: NVLink at `nvlinkEfficiency`,
/// PCIe and network at the context's figures.
double LinkEfficiency(const ScheduleContext& ctx, uint32_t channel, double nvlinkEfficiency);

/// The payload efficiency of the link class that limits `path` (directed channels, a channel
/// listed k times carries k shares): NVLink at `nvlinkEfficiency`, PCIe and network at the
/// context's figures.
double BottleneckEfficiency(const ScheduleContext& ctx, const std::vector<uint32_t>& path,
                            double nvlinkEfficiency);

/// Posts the flows of collective `call` run as `plan` from `start` (its last rank's arrival);
/// every rank's `done` fires when the last flow ends. `latencyUs` is the plan's latency
/// (nccl::PlanLatencyUs).
void PostCollective(const ScheduleContext& ctx, const CollectiveCall& call,
                    const NcclCommInfo& comm, const CollectivePlan& plan, double latencyUs,
                    Time start, CollectiveModel::DoneCallback done);

/// A Broadcast/Reduce on the ring as NCCL's chain runs it: per channel, one flow per hop from
/// the root along the ring (Broadcast) or along it into the root (Reduce). A hop starts once its
/// sender has started and holds data (the first chunk landed where the hop before stores and
/// forwards); a hop whose channel's share exceeds the connection's FIFO (8 steps) also waits
/// for its receiver. Each hop's last byte lands no sooner than the hop before's plus a hop; a
/// rank's part of a channel ends when its outgoing hop has landed (the chain's last rank: its
/// incoming one), and the rank is done when every channel's part has, at least `hops.baseUs`
/// after it started.
std::shared_ptr<CollectiveRun> BeginChain(const ScheduleContext& ctx, const CollectiveCall& call,
                                          std::shared_ptr<const NcclCommInfo> comm,
                                          const CollectivePlan& plan, const ChainHops& hops,
                                          CollectiveModel::DoneCallback done);

/// The collectives `calls` of one group as NCCL's one kernel runs them (`layout`, LayOutGroup):
/// each channel runs its pieces one after the other, rank by rank (a rank goes on to a channel's
/// next piece when its own part of the one before is done), a piece being its call's plan on that
/// channel alone (its ring, tree or NVLS walk, its CTA; a Broadcast/Reduce a one-channel chain).
/// The first piece of a channel pays its plan's latency (nccl::PlanLatencyUs); a later one, as
/// the kernel was launched once, the latency less NCCL's base: a ring's steps run anew for every
/// piece, the other algorithms pipeline the pieces of a batch of work items
/// (nccl::WorkBatchColls) behind its first, without latency or pipeline fill (NCCL's numPipeOps
/// rule). A rank is done when every channel's last piece is.
std::shared_ptr<CollectiveRun> BeginGroup(const ScheduleContext& ctx, const CostSettings& settings,
                                          std::vector<CollectiveCall> calls,
                                          std::shared_ptr<const NcclCommInfo> comm,
                                          GroupLayout layout, CollectiveModel::DoneCallback done);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_COLLECTIVE_SCHEDULE_H
