/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "collective-helper.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonCollectiveHelper");

CollectiveHelper::CollectiveHelper(Ptr<NetworkModel> model)
    : m_model(model),
      m_topology(model->GetTopology())
{
    NS_ABORT_MSG_UNLESS(m_topology, "CollectiveHelper: the network model has no topology");
}

FlowId
CollectiveHelper::Send(uint32_t srcGpu,
                       uint32_t dstGpu,
                       uint64_t bytes,
                       Time start,
                       DoneCallback done,
                       uint64_t tag)
{
    FlowSpec spec;
    spec.src = m_topology->GpuDevice(srcGpu);
    spec.dst = m_topology->GpuDevice(dstGpu);
    spec.bytes = bytes;
    spec.start = start;
    spec.tag = tag;
    return m_model->AddFlow(spec, [done](const FlowRecord& r) {
        if (!done.IsNull())
        {
            done(r.finish);
        }
    });
}

std::vector<std::vector<uint32_t>>
CollectiveHelper::RailAlignedRings(const Topology& topology, uint32_t channels)
{
    std::vector<std::vector<uint32_t>> rings(channels);
    const uint32_t nodes = topology.NodeCount();
    for (uint32_t c = 0; c < channels; ++c)
    {
        for (uint32_t n = 0; n < std::max<uint32_t>(nodes, 1); ++n)
        {
            std::vector<uint32_t> local;
            for (uint32_t dev : topology.GpusOfNode(n))
            {
                local.push_back(uint32_t(topology.GetDevice(dev).gpuIndex));
            }
            if (local.empty())
            {
                continue;
            }
            const uint32_t g = uint32_t(local.size());
            const uint32_t r = c % g;
            for (uint32_t k = 0; k < g; ++k)
            {
                // Even nodes: r, r+1, ..., r-1. Odd nodes: r-1, r-2, ..., r. Node n leaves on the
                // GPU where node n+1 enters, so the inter-node hop stays on one rail.
                uint32_t idx = (n % 2 == 0) ? (r + k) % g : (r + g - 1 - k) % g;
                rings[c].push_back(local[idx]);
            }
        }
    }
    return rings;
}

void
CollectiveHelper::RingAllReduce(const std::vector<std::vector<uint32_t>>& rings,
                                uint64_t bytes,
                                Time start,
                                DoneCallback done,
                                RingMode mode)
{
    NS_ABORT_MSG_IF(rings.empty() || rings[0].empty(), "RingAllReduce: no ring");
    for (const auto& ring : rings)
    {
        NS_ABORT_MSG_IF(ring.size() != rings[0].size(), "RingAllReduce: rings differ in size");
    }
    if (rings[0].size() == 1 || bytes == 0)
    {
        Simulator::Schedule(std::max(Time(0), start - Simulator::Now()), [done, start] {
            if (!done.IsNull())
            {
                done(start);
            }
        });
        return;
    }
    if (mode == RingMode::Pipelined)
    {
        PipelinedRing(rings, bytes, start, done);
    }
    else
    {
        StepwiseRing(rings, bytes, start, done);
    }
}

namespace
{
/// Counts flows down to zero and reports the latest finish.
struct Countdown
{
    uint64_t left = 0;
    Time last;
    CollectiveHelper::DoneCallback done;
    void Finished(Time t)
    {
        last = std::max(last, t);
        if (--left == 0 && !done.IsNull())
        {
            done(last);
        }
    }
};
} // namespace

void
CollectiveHelper::PipelinedRing(const std::vector<std::vector<uint32_t>>& rings,
                                uint64_t bytes,
                                Time start,
                                DoneCallback done)
{
    const uint32_t n = uint32_t(rings[0].size());
    const uint32_t channels = uint32_t(rings.size());
    auto countdown = std::make_shared<Countdown>();
    countdown->left = channels;
    countdown->done = done;
    const uint64_t steps = 2ULL * (n - 1);
    for (uint32_t c = 0; c < channels; ++c)
    {
        const auto& ring = rings[c];
        FlowSpec spec;
        std::vector<int64_t> edgeLatency(n);
        for (uint32_t i = 0; i < n; ++i)
        {
            auto hop = m_topology->Route(m_topology->GpuDevice(ring[i]),
                                         m_topology->GpuDevice(ring[(i + 1) % n]),
                                         c);
            edgeLatency[i] = m_topology->PathLatencyNs(hop);
            spec.path.insert(spec.path.end(), hop.begin(), hop.end());
        }
        // The last chunk's data crosses 2(n-1) consecutive edges; the slowest such window of the
        // ring is the pipeline's fill latency. The flow's own path latency is not added again.
        int64_t window = 0;
        for (uint64_t k = 0; k < steps; ++k)
        {
            window += edgeLatency[k % n];
        }
        int64_t worst = window;
        for (uint32_t i = 1; i < n; ++i)
        {
            window += edgeLatency[(i - 1 + steps) % n] - edgeLatency[i - 1];
            worst = std::max(worst, window);
        }
        spec.src = m_topology->GpuDevice(ring[0]);
        spec.dst = spec.src;
        // Every edge carries 2(n-1) chunks of bytes / (n * channels).
        const double perChannel = double(bytes) / channels;
        spec.bytes = uint64_t(std::ceil(perChannel * double(steps) / n));
        spec.start = start;
        spec.tag = c;
        spec.extraLatency = NanoSeconds(worst - m_topology->PathLatencyNs(spec.path));
        m_model->AddFlow(spec, [countdown](const FlowRecord& r) { countdown->Finished(r.finish); });
    }
}

void
CollectiveHelper::StepwiseRing(const std::vector<std::vector<uint32_t>>& rings,
                               uint64_t bytes,
                               Time start,
                               DoneCallback done)
{
    const uint32_t n = uint32_t(rings[0].size());
    const uint32_t channels = uint32_t(rings.size());
    const uint32_t steps = 2 * (n - 1);
    const uint64_t chunk = (bytes + uint64_t(n) * channels - 1) / (uint64_t(n) * channels);

    struct State
    {
        std::vector<std::vector<uint32_t>> rings;
        uint64_t chunk;
        uint32_t n, steps;
        // Per channel and ring position: steps whose send drained / whose chunk arrived.
        std::vector<std::vector<uint32_t>> sent, received;
        std::vector<std::vector<Time>> sentAt, receivedAt;
        Ptr<NetworkModel> model;
        Ptr<const Topology> topology;
        Countdown countdown;
    };
    auto st = std::make_shared<State>();
    st->rings = rings;
    st->chunk = chunk;
    st->n = n;
    st->steps = steps;
    st->sent.assign(channels, std::vector<uint32_t>(n, 0));
    st->received = st->sent;
    st->sentAt.assign(channels, std::vector<Time>(n, start));
    st->receivedAt = st->sentAt;
    st->model = m_model;
    st->topology = m_topology;
    st->countdown.left = uint64_t(channels) * n * steps;
    st->countdown.done = done;

    // Post step k of ring position i on channel c.
    auto post = std::make_shared<std::function<void(uint32_t, uint32_t, uint32_t, Time)>>();
    std::weak_ptr<std::function<void(uint32_t, uint32_t, uint32_t, Time)>> weakPost = post;
    *post = [st, weakPost](uint32_t c, uint32_t i, uint32_t k, Time at) {
        auto self = weakPost.lock();
        const auto& ring = st->rings[c];
        FlowSpec spec;
        spec.src = st->topology->GpuDevice(ring[i]);
        spec.dst = st->topology->GpuDevice(ring[(i + 1) % st->n]);
        spec.bytes = st->chunk;
        spec.start = at;
        spec.tag = c;
        st->model->AddFlow(spec, [st, self, c, i, k](const FlowRecord& r) {
            const uint32_t next = (i + 1) % st->n;
            st->sent[c][i] = k + 1;
            st->sentAt[c][i] = r.finish;
            st->received[c][next] = k + 1;
            st->receivedAt[c][next] = r.finish;
            // Position p may send step s once it sent step s-1 and received step s-1.
            auto ready = [&](uint32_t p) {
                uint32_t s = st->sent[c][p];
                if (s < st->steps && s == k + 1 && st->received[c][p] >= s)
                {
                    (*self)(c, p, s, std::max(st->sentAt[c][p], st->receivedAt[c][p]));
                }
            };
            ready(i);
            if (next != i)
            {
                ready(next);
            }
            st->countdown.Finished(r.finish);
        });
    };
    for (uint32_t c = 0; c < channels; ++c)
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            (*post)(c, i, 0, start);
        }
    }
    // The closures hold `post` strongly through `self` while flows are outstanding.
}

} // namespace eidolon
} // namespace ns3
