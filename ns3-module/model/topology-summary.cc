/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * Topology::Summarize(): device counts and bisection bandwidth (max flow between GPU halves).
 */
#include "topology.h"

#include "ns3/log.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <string>
#include <vector>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonTopologySummary");

namespace
{
/**
 * Dinic's max-flow on a small directed graph with real capacities. Capacities here are link
 * rates in bytes/s (1e9..1e12), so an absolute epsilon far below one byte/s decides "saturated".
 */
class MaxFlow
{
public:
    explicit MaxFlow(uint32_t vertices)
        : m_adj(vertices)
        , m_level(vertices)
        , m_next(vertices)
    {
    }

    void AddEdge(uint32_t from, uint32_t to, double capacity)
    {
        m_adj[from].push_back(static_cast<uint32_t>(m_edges.size()));
        m_edges.push_back({to, capacity});
        m_adj[to].push_back(static_cast<uint32_t>(m_edges.size()));
        m_edges.push_back({from, 0.0});
    }

    double Run(uint32_t s, uint32_t t)
    {
        double total = 0;
        while (Levels(s, t))
        {
            std::fill(m_next.begin(), m_next.end(), 0);
            double pushed;
            while ((pushed = Push(s, t, std::numeric_limits<double>::infinity())) > kEpsilon)
            {
                total += pushed;
            }
        }
        return total;
    }

private:
    static constexpr double kEpsilon = 1e-3; // bytes/s

    struct Edge
    {
        uint32_t to;
        double residual;
    };

    bool Levels(uint32_t s, uint32_t t)
    {
        std::fill(m_level.begin(), m_level.end(), -1);
        std::deque<uint32_t> queue{s};
        m_level[s] = 0;
        while (!queue.empty())
        {
            uint32_t v = queue.front();
            queue.pop_front();
            for (uint32_t e : m_adj[v])
            {
                if (m_edges[e].residual > kEpsilon && m_level[m_edges[e].to] < 0)
                {
                    m_level[m_edges[e].to] = m_level[v] + 1;
                    queue.push_back(m_edges[e].to);
                }
            }
        }
        return m_level[t] >= 0;
    }

    // Iterative would avoid deep recursion, but paths here are at most ~10 hops (src, GPU, PCIe,
    // NIC, leaf, spine, core, ... , sink), so recursion depth is bounded by the level count.
    double Push(uint32_t v, uint32_t t, double limit)
    {
        if (v == t)
        {
            return limit;
        }
        for (uint32_t& i = m_next[v]; i < m_adj[v].size(); ++i)
        {
            uint32_t e = m_adj[v][i];
            Edge& edge = m_edges[e];
            if (edge.residual > kEpsilon && m_level[edge.to] == m_level[v] + 1)
            {
                double got = Push(edge.to, t, std::min(limit, edge.residual));
                if (got > kEpsilon)
                {
                    edge.residual -= got;
                    m_edges[e ^ 1].residual += got;
                    return got;
                }
            }
        }
        return 0;
    }

    std::vector<Edge> m_edges;
    std::vector<std::vector<uint32_t>> m_adj;
    std::vector<int32_t> m_level;
    std::vector<uint32_t> m_next;
};

/// Describes a set of indices compactly: "0-63", "0,2,4,...,126" style for even/odd sets.
std::string
Describe(const std::vector<uint32_t>& items)
{
    if (items.empty())
    {
        return "-";
    }
    if (items.size() == 1)
    {
        return std::to_string(items[0]);
    }
    uint32_t step = items[1] - items[0];
    for (size_t i = 1; i < items.size(); ++i)
    {
        if (items[i] - items[i - 1] != step)
        {
            step = 0;
            break;
        }
    }
    if (step == 1)
    {
        return std::to_string(items.front()) + "-" + std::to_string(items.back());
    }
    if (step > 1)
    {
        return std::to_string(items[0]) + "," + std::to_string(items[1]) + ",...," +
               std::to_string(items.back());
    }
    std::string out;
    for (uint32_t x : items)
    {
        out += (out.empty() ? "" : ",") + std::to_string(x);
    }
    return out;
}
} // namespace

TopologySummary
Topology::Summarize() const
{
    TopologySummary s;
    s.gpus = GpuCount();
    s.nodes = NodeCount();
    s.links = static_cast<uint32_t>(m_links.size());
    for (const Device& d : m_devices)
    {
        switch (d.kind)
        {
        case DeviceKind::Gpu:
            s.gpuModels[d.model.empty() ? std::string("(unspecified)") : d.model]++;
            break;
        case DeviceKind::Host:
            s.hosts++;
            break;
        case DeviceKind::NvSwitch:
            s.nvswitches++;
            break;
        case DeviceKind::PcieSwitch:
            s.pcieSwitches++;
            break;
        case DeviceKind::Nic:
            s.nics++;
            break;
        case DeviceKind::Switch:
            s.switches++;
            s.switchesByTier[d.tier]++;
            break;
        }
    }
    if (m_gpus.size() < 2)
    {
        return s; // nothing to bisect
    }

    // The halvings tried. Across nodes when there are several (first half | second half, even |
    // odd); within the node's GPUs when there is one. The GPU sets are global GPU indices.
    struct Halving
    {
        std::vector<uint32_t> a;
        std::vector<uint32_t> b;
        std::string label;
    };
    std::vector<Halving> halvings;
    auto gpusOf = [this](const std::vector<uint32_t>& nodes)
    {
        std::vector<uint32_t> out;
        for (uint32_t n : nodes)
        {
            for (uint32_t id : GpusOfNode(n))
            {
                out.push_back(static_cast<uint32_t>(m_devices[id].gpuIndex));
            }
        }
        return out;
    };
    // Nodes that actually hold GPUs, in order (a hand-written file may leave gaps).
    std::vector<uint32_t> gpuNodes;
    for (uint32_t id : m_gpus)
    {
        uint32_t n = static_cast<uint32_t>(std::max<int32_t>(m_devices[id].node, 0));
        if (gpuNodes.empty() || gpuNodes.back() != n)
        {
            gpuNodes.push_back(n);
        }
    }
    auto split = [&](const std::vector<uint32_t>& items, const std::string& what)
    {
        std::vector<uint32_t> firstHalf(items.begin(), items.begin() + items.size() / 2);
        std::vector<uint32_t> secondHalf(items.begin() + items.size() / 2, items.end());
        std::vector<uint32_t> even;
        std::vector<uint32_t> odd;
        for (size_t i = 0; i < items.size(); ++i)
        {
            (i % 2 == 0 ? even : odd).push_back(items[i]);
        }
        std::vector<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> parts = {
            {firstHalf, secondHalf}};
        if (items.size() > 2)
        {
            parts.emplace_back(even, odd);
        }
        for (auto& [a, b] : parts)
        {
            Halving h;
            h.label = what + " " + Describe(a) + " | " + Describe(b);
            if (what == "nodes")
            {
                h.a = gpusOf(a);
                h.b = gpusOf(b);
            }
            else
            {
                h.a = a;
                h.b = b;
            }
            halvings.push_back(std::move(h));
        }
    };
    if (gpuNodes.size() >= 2)
    {
        split(gpuNodes, "nodes");
    }
    else
    {
        std::vector<uint32_t> all(m_gpus.size());
        for (uint32_t i = 0; i < all.size(); ++i)
        {
            all[i] = i;
        }
        split(all, "GPUs");
    }

    const uint32_t n = static_cast<uint32_t>(m_devices.size());
    const uint32_t source = n;
    const uint32_t sink = n + 1;
    double best = std::numeric_limits<double>::infinity();
    for (const Halving& h : halvings)
    {
        // Side of every device: 1 source-side GPU, 2 sink-side GPU, 0 otherwise. Traffic may pass
        // through forwarding devices only, as Route() allows: an edge leaves a device only if it
        // forwards or is a source GPU, and enters one only if it forwards or is a sink GPU.
        std::vector<uint8_t> side(n, 0);
        for (uint32_t g : h.a)
        {
            side[m_gpus[g]] = 1;
        }
        for (uint32_t g : h.b)
        {
            side[m_gpus[g]] = 2;
        }
        MaxFlow flow(n + 2);
        for (uint32_t ch = 0; ch < ChannelCount(); ++ch)
        {
            uint32_t u = ChannelFrom(ch);
            uint32_t v = ChannelTo(ch);
            bool out = Forwards(m_devices[u].kind) || side[u] == 1;
            bool in = Forwards(m_devices[v].kind) || side[v] == 2;
            if (out && in)
            {
                flow.AddEdge(u, v, ChannelBandwidth(ch));
            }
        }
        const double inf = std::numeric_limits<double>::infinity();
        for (uint32_t g : h.a)
        {
            flow.AddEdge(source, m_gpus[g], inf);
        }
        for (uint32_t g : h.b)
        {
            flow.AddEdge(m_gpus[g], sink, inf);
        }
        double value = flow.Run(source, sink);
        NS_LOG_INFO("bisection " << h.label << ": " << value << " bytes/s");
        if (value < best)
        {
            best = value;
            s.bisectionCut = h.label;
        }
    }
    s.bisectionBandwidth = best;
    return s;
}

} // namespace eidolon
} // namespace ns3
