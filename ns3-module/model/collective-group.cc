/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model): NCCL's plan for the collectives of one group. Read at the tags
 * v2.18.5-1 / v2.19.4-1 (scheduleCollTasksToPlan, addCollToPlan), v2.20.5-1 / v2.21.5-1
 * (scheduleCollTasksToPlan, addCBDCollToPlan) and v2.22.3-1 .. v2.30.7-1 (ncclPrepareTasks,
 * scheduleCollTasksToPlan, the task sorter in comm.h).
 */
#include "collective-group.h"

#include "nccl-indices.h"
#include "nccl-selection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace ns3
{
namespace eidolon
{
namespace nccl
{
namespace
{

uint64_t
DivUp(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/// A rank's bytes back in CollectiveCall::bytes' convention.
uint64_t
CallBytes(const CollectiveCall& call, uint32_t n, uint64_t data)
{
    const int f = FuncOf(call.kind);
    return (f == kAllGather || f == kReduceScatter) ? data * n : data;
}

/// u32fpEncode(x, 2): the task sorter's bin (four bins per power of two).
uint32_t
FpBin(uint32_t x)
{
    const int log2x = 31 - __builtin_clz(x | 1);
    const uint32_t mantissa = (x >> (log2x >= 2 ? log2x - 2 : 0)) & 3u;
    const uint32_t exponent = log2x >= 2 ? uint32_t(log2x - 1) : 0;
    return exponent << 2 | mantissa;
}

/// Function, operation and datatype: what NCCL aggregates by.
std::tuple<int, int, int>
AggKey(const CollectiveCall& call)
{
    return {FuncOf(call.kind), call.redop, call.dtype};
}

bool
IsCollnetPlan(const CollectivePlan& plan, const NcclCommInfo& comm)
{
    return plan.algorithm == NcclAlgorithm::CollNetDirect ||
           plan.algorithm == NcclAlgorithm::CollNetChain ||
           (plan.algorithm == NcclAlgorithm::Nvls && comm.nNodes > 1);
}

bool
IsNvlsPlan(const CollectivePlan& plan)
{
    return plan.algorithm == NcclAlgorithm::Nvls || plan.algorithm == NcclAlgorithm::NvlsTree;
}

/// 2.20-2.21 cut a call's bytes on a channel up to a multiple of this (enqueue.cc
/// computeCollAlignCount, in bytes): Simple 4 KiB (NCCL_SIMPLE_ALIGNMENT), LL128 480 B a warp,
/// LL 8 B a thread, of the threads the aggregate's CTA runs (its share of FullThreads).
uint64_t
CbdAlignBytes(const CollectivePlan& plan, const NcclCommInfo& comm)
{
    constexpr uint64_t kSimpleAlign = 32 * 8 * 16;
    constexpr uint64_t kLl128AlignPerWarp = 480;
    constexpr uint64_t kLlAlignPerThread = 8;
    const uint64_t threads =
        uint64_t(std::lround(plan.threadShare * FullThreads(comm, plan.algorithm, plan.protocol)));
    switch (plan.protocol)
    {
    case NcclProtocol::LL128:
        return kLl128AlignPerWarp * threads / 32;
    case NcclProtocol::LL:
        return kLlAlignPerThread * threads;
    default:
        return kSimpleAlign;
    }
}

/// NCCL's choice for calls[members] aggregated: the first one's function, datatype and
/// operation on their summed size, with `pipeOps` operations per channel.
CollectivePlan
AggregatePlan(const std::vector<CollectiveCall>& calls, const std::vector<uint32_t>& members,
              int pipeOps, const NcclCommInfo& comm, const CostSettings& settings)
{
    CollectiveCall agg = calls[members.front()];
    agg.bytes = 0;
    for (uint32_t i : members)
    {
        agg.bytes += calls[i].bytes;
    }
    agg.pipeOps = pipeOps;
    return SelectPlan(agg, comm, settings);
}

void
AddPiece(GroupLayout& layout, int channel, uint32_t call, uint64_t bytes)
{
    if (size_t(channel) >= layout.lanes.size())
    {
        layout.lanes.resize(size_t(channel) + 1);
    }
    layout.lanes[size_t(channel)].push_back(GroupPiece{call, bytes});
    layout.channelLo[call] = std::min(layout.channelLo[call], channel);
    layout.channelHi[call] = std::max(layout.channelHi[call], channel);
}

/// Every channel 0 .. channels - 1 runs an equal part (CollNet, NVLS across nodes).
void
OnAllChannels(GroupLayout& layout, const CollectiveCall& call, uint32_t i, int channels, uint32_t n)
{
    const uint64_t data = RankBytes(call, n);
    const int ch = std::max(channels, 1);
    for (int c = 0; c < ch; ++c)
    {
        const uint64_t part = data / uint64_t(ch) + (uint64_t(c) < data % uint64_t(ch) ? 1 : 0);
        AddPiece(layout, c, i, CallBytes(call, n, part));
    }
}

/// Runs of consecutive calls of one function, operation and datatype (up to 2.21).
std::vector<std::vector<uint32_t>>
ConsecutiveRuns(const std::vector<CollectiveCall>& calls, const std::vector<uint32_t>& live)
{
    std::vector<std::vector<uint32_t>> runs;
    for (uint32_t i : live)
    {
        if (runs.empty() || AggKey(calls[runs.back().front()]) != AggKey(calls[i]))
        {
            runs.emplace_back();
        }
        runs.back().push_back(i);
    }
    return runs;
}

/// 2.18-2.19: aggregated calls take ceil(bytes / bytePerChannel) channels each, on the least
/// loaded channels (addCollToPlan).
void
LayOut218(const std::vector<CollectiveCall>& calls, const std::vector<uint32_t>& live,
          const NcclCommInfo& comm, const CostSettings& settings, GroupLayout& layout)
{
    const uint32_t n = comm.nRanks;
    const int channels = std::max(comm.channels, 1);
    // NCCL halves the per-channel size while the group's total is below size x channels; the
    // total (collBytesTotal) adds each call's nBytes before anything set it, so it stays 0 and
    // the size halves down to NCCL_MIN_CHANNEL_SIZE (8 x 64 = 512 B).
    uint64_t bytePerChannel[2] = {uint64_t(2) << 20, uint64_t(256) << 10};
    bytePerChannel[0] *= std::min<uint32_t>(16, n);
    for (uint64_t& size : bytePerChannel)
    {
        while (size > 512)
        {
            size /= 2;
        }
    }
    std::vector<uint64_t> load(size_t(std::max(channels, comm.nvlsChannels)), 0);
    for (const auto& run : ConsecutiveRuns(calls, live))
    {
        const int f = FuncOf(calls[run.front()].kind);
        const int collnet = comm.collnet && f == kAllReduce ? 1 : 0;
        CollectivePlan plan;
        if (run.size() > 1)
        {
            // The channels the calls after the first ask for (NCCL's loop leaves the first out).
            int asked = 0;
            for (size_t k = 1; k < run.size(); ++k)
            {
                const uint64_t nc = DivUp(calls[run[k]].bytes, bytePerChannel[collnet]);
                asked += int(std::clamp<uint64_t>(nc, 1, uint64_t(channels)));
            }
            const int aggChannels = std::min(channels, asked);
            plan = AggregatePlan(calls, run, int(DivUp(asked, aggChannels)), comm, settings);
        }
        for (uint32_t i : run)
        {
            CollectivePlan own = run.size() > 1 ? plan : SelectPlan(calls[i], comm, settings);
            const int maxChannels = IsNvlsPlan(own) ? comm.nvlsChannels : channels;
            int nBid = own.channels;
            if (run.size() > 1)
            {
                nBid = int(std::clamp<uint64_t>(DivUp(calls[i].bytes, bytePerChannel[collnet]), 1,
                                                uint64_t(std::max(maxChannels, 1))));
            }
            nBid = std::clamp(nBid, 1, std::max(maxChannels, 1));
            layout.plans[i] = own;
            // The nBid least loaded of the first maxChannels channels, the lowest on a tie.
            std::vector<int> least(static_cast<size_t>(nBid), 0);
            int maxIndex = 0;
            for (int b = 0; b < nBid; ++b)
            {
                least[size_t(b)] = b;
                if (load[size_t(least[size_t(maxIndex)])] < load[size_t(b)])
                {
                    maxIndex = b;
                }
            }
            for (int c = nBid; c < maxChannels; ++c)
            {
                if (load[size_t(c)] < load[size_t(least[size_t(maxIndex)])])
                {
                    least[size_t(maxIndex)] = c;
                    maxIndex = 0;
                    for (int b = 1; b < nBid; ++b)
                    {
                        if (load[size_t(least[size_t(maxIndex)])] < load[size_t(least[size_t(b)])])
                        {
                            maxIndex = b;
                        }
                    }
                }
            }
            const uint64_t share = calls[i].bytes / uint64_t(nBid);
            for (int c : least)
            {
                load[size_t(c)] += share;
                AddPiece(layout, c, i, share);
            }
        }
    }
}

/// 2.20-2.21: continuous byte distribution (addCBDCollToPlan).
void
LayOut220(const std::vector<CollectiveCall>& calls, const std::vector<uint32_t>& live,
          const NcclCommInfo& comm, const CostSettings& settings, GroupLayout& layout)
{
    const uint32_t n = comm.nRanks;
    const uint32_t v = settings.ncclVersion;
    int usable = 0;
    int accChannels = 0;
    std::vector<uint32_t> cbd, collnet;
    uint64_t total = 0;
    for (const auto& run : ConsecutiveRuns(calls, live))
    {
        const CollectivePlan plan = AggregatePlan(calls, run, 1, comm, settings);
        for (uint32_t i : run)
        {
            layout.plans[i] = plan;
            accChannels += OpChannels(calls[i], comm, plan.algorithm, plan.protocol, v);
            usable = std::max(usable, IsNvlsPlan(plan) ? comm.nvlsChannels : comm.channels);
            if (IsCollnetPlan(plan, comm))
            {
                collnet.push_back(i);
            }
            else
            {
                cbd.push_back(i);
                total += RankBytes(calls[i], n);
            }
        }
    }
    usable = std::max(1, std::min(usable, accChannels));
    const uint64_t maxPerChannel = DivUp(DivUp(total, uint64_t(usable)), 16) * 16;
    std::vector<uint64_t> load(size_t(usable), 0);
    for (uint32_t i : cbd)
    {
        const uint64_t align = CbdAlignBytes(layout.plans[i], comm);
        uint64_t left = RankBytes(calls[i], n);
        for (int c = 0; c < usable && left > 0; ++c)
        {
            if (load[size_t(c)] >= maxPerChannel)
            {
                continue;
            }
            const uint64_t room = maxPerChannel - load[size_t(c)];
            // Rounded up: a channel may take up to one alignment more than maxPerChannel.
            const uint64_t enq = std::min(DivUp(std::min(room, left), align) * align, left);
            load[size_t(c)] += enq;
            left -= enq;
            AddPiece(layout, c, i, CallBytes(calls[i], n, enq));
        }
        if (left > 0)
        {
            AddPiece(layout, usable - 1, i, CallBytes(calls[i], n, left));
        }
    }
    for (uint32_t i : collnet)
    {
        OnAllChannels(
            layout, calls[i], i,
            OpChannels(calls[i], comm, layout.plans[i].algorithm, layout.plans[i].protocol, v), n);
    }
}

/// 2.22+: sorted, aggregated within 4x, cut into cells over the channels of each kind.
void
LayOut222(const std::vector<CollectiveCall>& calls, const std::vector<uint32_t>& live,
          const NcclCommInfo& comm, const CostSettings& settings, GroupLayout& layout)
{
    const uint32_t n = comm.nRanks;
    const uint32_t v = settings.ncclVersion;
    const SchedulerCells cells = SchedulerCellsOf(v);
    std::vector<uint64_t> traffic(calls.size(), 0);
    for (uint32_t i : live)
    {
        traffic[i] = RankBytes(calls[i], n) * TrafficPerByte(FuncOf(calls[i].kind), n);
    }
    // The sorter: bins of four per power of two of the traffic in KiB (up to 1 GiB), largest
    // first; a bin is a stack (the last issued first).
    std::vector<uint32_t> sorted = live;
    auto bin = [&](uint32_t i)
    { return FpBin(uint32_t(std::min<uint64_t>(traffic[i], uint64_t(1) << 30) >> 10)); };
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](uint32_t a, uint32_t b)
                     { return bin(a) != bin(b) ? bin(a) > bin(b) : a > b; });
    // Bins by function, operation and datatype, in the order their first call comes; each a
    // stack again, so ascending.
    std::vector<std::vector<uint32_t>> bins;
    std::map<std::tuple<int, int, int>, size_t> binOf;
    for (uint32_t i : sorted)
    {
        auto [it, added] = binOf.emplace(AggKey(calls[i]), bins.size());
        if (added)
        {
            bins.emplace_back();
        }
        bins[it->second].push_back(i);
    }
    for (auto& group : bins)
    {
        std::reverse(group.begin(), group.end()); // a stack: the last pushed first
    }
    const int pipeOps = int(DivUp(live.size(), uint64_t(std::max(comm.channels, 1))));
    std::vector<uint32_t> queue[4]; // by kind: 2 x CollNet + NVLS
    for (const auto& group : bins)
    {
        for (size_t b = 0; b < group.size();)
        {
            size_t e = b + 1;
            while (e < group.size() && traffic[group[e]] < 4 * traffic[group[b]])
            {
                ++e;
            }
            const std::vector<uint32_t> members(group.begin() + long(b), group.begin() + long(e));
            const CollectivePlan plan = AggregatePlan(calls, members, pipeOps, comm, settings);
            for (uint32_t i : members)
            {
                layout.plans[i] = plan;
                if (cells.llTimesFour && plan.protocol == NcclProtocol::LL)
                {
                    traffic[i] *= 4;
                }
                queue[2 * IsCollnetPlan(plan, comm) + IsNvlsPlan(plan)].push_back(i);
            }
            b = e;
        }
    }
    const int nvlsCollnet =
        v >= 22800 ? std::min(comm.channels, comm.nvlsChannels) : comm.nvlsChannels;
    const int maxChannels[4] = {comm.channels, comm.nvlsChannels, comm.channels, nvlsCollnet};
    const uint64_t minTraffic = cells.minTraffic;
    for (int kind = 0; kind < 4; ++kind)
    {
        if (queue[kind].empty())
        {
            continue;
        }
        const int nMax = std::max(maxChannels[kind], 1);
        uint64_t kindTraffic = 0;
        int kindChannels = 0;
        for (uint32_t i : queue[kind])
        {
            kindTraffic += std::max(minTraffic, traffic[i]);
            kindChannels = std::min(kindChannels + layout.plans[i].channels, nMax);
        }
        kindChannels = std::max(kindChannels, 1);
        const uint64_t perChannel =
            v >= 22900 ? DivUp(kindTraffic / uint64_t(kindChannels), 16) * 16
                       : std::max(minTraffic, kindTraffic / uint64_t(kindChannels));
        int channelId = 0;
        uint64_t current = 0;
        for (uint32_t i : queue[kind])
        {
            const CollectiveCall& call = calls[i];
            const CollectivePlan& plan = layout.plans[i];
            if (kind >= 2)
            {
                OnAllChannels(layout, call, i, plan.channels, n);
                continue;
            }
            const uint64_t elementSize = std::max<uint32_t>(call.typeSize, 1);
            const uint64_t count = RankBytes(call, n) / elementSize;
            const uint64_t perByte =
                TrafficPerByte(FuncOf(call.kind), n) *
                (cells.llTimesFour && plan.protocol == NcclProtocol::LL ? 4 : 1);
            const uint64_t cellSize =
                DivUp(DivUp(std::max<uint64_t>(minTraffic, 1), perByte), 16) * 16;
            const uint64_t elementsPerCell = std::max<uint64_t>(cellSize / elementSize, 1);
            const uint64_t nCells = DivUp(count * elementSize, cellSize);
            const uint64_t perElement = elementSize * perByte;
            const uint64_t perCell = cellSize * perByte;
            uint64_t cellsPerChannel = std::min(nCells, DivUp(perChannel, perCell));
            uint64_t cellsLo =
                channelId + 1 == nMax
                    ? nCells
                    : std::min(nCells, DivUp(perChannel - std::min(current, perChannel), perCell));
            int nMid = cellsPerChannel ? int((nCells - cellsLo) / cellsPerChannel) : 0;
            uint64_t cellsHi = cellsPerChannel ? (nCells - cellsLo) % cellsPerChannel : 0;
            int nChannels = (cellsLo ? 1 : 0) + nMid + (cellsHi ? 1 : 0);
            if (nMax < channelId + nChannels)
            {
                // Overflowed the channels: the rest spread evenly over those left.
                nMid = std::max(nMax - channelId - 2, 0);
                cellsPerChannel = (nCells - cellsLo) / uint64_t(nMid + 1);
                cellsHi = cellsPerChannel + (nCells - cellsLo) % uint64_t(nMid + 1);
            }
            if (cellsHi == 0 && nMid != 0)
            {
                cellsHi = cellsPerChannel;
                nMid -= 1;
            }
            if (cellsLo == 0)
            {
                // The least channel is full: the next is the new least.
                channelId += 1;
                if (nMid == 0)
                {
                    cellsLo = cellsHi;
                    cellsHi = 0;
                }
                else
                {
                    cellsLo = cellsPerChannel;
                    nMid -= 1;
                }
            }
            const uint64_t countMid = nMid ? cellsPerChannel * elementsPerCell : 0;
            uint64_t countLo = cellsLo * elementsPerCell;
            uint64_t countHi = cellsHi * elementsPerCell;
            const uint64_t excess = nCells * elementsPerCell - count;
            (countHi ? countHi : countLo) -= excess;
            nChannels = (countLo ? 1 : 0) + nMid + (cellsHi ? 1 : 0);
            const int lo = channelId;
            const int hi = channelId + std::max(nChannels, 1) - 1;
            for (int c = lo; c <= hi; ++c)
            {
                const uint64_t part = c == lo ? countLo : c == hi ? countHi : countMid;
                AddPiece(layout, c, i, CallBytes(call, n, part * elementSize));
            }
            if (countHi)
            {
                channelId += nChannels - 1;
                current = cellsHi * elementsPerCell * perElement;
            }
            else if (nMid)
            {
                channelId += nChannels;
                current = 0;
            }
            else
            {
                current += cellsLo * elementsPerCell * perElement;
            }
            if (current >= perChannel && channelId + 1 != nMax)
            {
                channelId += 1;
                current = 0;
            }
        }
    }
}

} // namespace

GroupLayout
LayOutGroup(const std::vector<CollectiveCall>& calls, const NcclCommInfo& comm,
            const CostSettings& settings)
{
    GroupLayout layout;
    layout.plans.resize(calls.size());
    layout.channelLo.assign(calls.size(), std::numeric_limits<int>::max());
    layout.channelHi.assign(calls.size(), -1);
    std::vector<uint32_t> live;
    for (uint32_t i = 0; i < calls.size(); ++i)
    {
        if (calls[i].bytes > 0)
        {
            live.push_back(i);
        }
    }
    if (!live.empty() && comm.nRanks > 1)
    {
        const uint32_t v = settings.ncclVersion;
        v < 22000   ? LayOut218(calls, live, comm, settings, layout)
        : v < 22200 ? LayOut220(calls, live, comm, settings, layout)
                    : LayOut222(calls, live, comm, settings, layout);
    }
    for (size_t i = 0; i < calls.size(); ++i)
    {
        if (layout.channelHi[i] < 0)
        {
            layout.channelLo[i] = layout.channelHi[i] = 0;
        }
    }
    return layout;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
