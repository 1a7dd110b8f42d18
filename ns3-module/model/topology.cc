/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "topology.h"

#include "ns3/log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <limits>
#include <sstream>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonTopology");

namespace
{
constexpr uint32_t kUnreachable = std::numeric_limits<uint32_t>::max();

/// splitmix64: a cheap, well-mixed hash so that ECMP choices spread and stay deterministic.
uint64_t
Mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

std::string
Lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

} // namespace

const char*
ToString(DeviceKind kind)
{
    switch (kind)
    {
    case DeviceKind::Gpu:
        return "gpu";
    case DeviceKind::Host:
        return "host";
    case DeviceKind::NvSwitch:
        return "nvswitch";
    case DeviceKind::PcieSwitch:
        return "pcie-switch";
    case DeviceKind::Nic:
        return "nic";
    case DeviceKind::Switch:
        return "switch";
    }
    return "?";
}

DeviceKind
DeviceKindFromString(const std::string& text)
{
    static const std::map<std::string, DeviceKind> kinds = {
        {"gpu", DeviceKind::Gpu},
        {"host", DeviceKind::Host},
        {"nvswitch", DeviceKind::NvSwitch},
        {"pcie-switch", DeviceKind::PcieSwitch},
        {"nic", DeviceKind::Nic},
        {"switch", DeviceKind::Switch},
    };
    auto it = kinds.find(Lower(text));
    if (it == kinds.end())
    {
        throw TopologyError("unknown device type '" + text +
                            "' (expected gpu, host, nvswitch, pcie-switch, nic or switch)");
    }
    return it->second;
}

bool
Forwards(DeviceKind kind)
{
    return kind == DeviceKind::NvSwitch || kind == DeviceKind::PcieSwitch ||
           kind == DeviceKind::Nic || kind == DeviceKind::Switch;
}

const char*
ToString(LinkKind kind)
{
    switch (kind)
    {
    case LinkKind::NvLink:
        return "nvlink";
    case LinkKind::Pcie:
        return "pcie";
    case LinkKind::Net:
        return "net";
    }
    return "?";
}

LinkKind
LinkKindFromString(const std::string& text)
{
    std::string t = Lower(text);
    if (t == "nvlink")
    {
        return LinkKind::NvLink;
    }
    if (t == "pcie")
    {
        return LinkKind::Pcie;
    }
    if (t == "net")
    {
        return LinkKind::Net;
    }
    throw TopologyError("unknown link type '" + text + "' (expected nvlink, pcie or net)");
}

Topology::Topology() = default;
Topology::~Topology() = default;

uint32_t
Topology::AddDevice(const Device& device)
{
    if (device.name.empty())
    {
        throw TopologyError("device without a name");
    }
    if (m_byName.count(device.name))
    {
        throw TopologyError("duplicate device name '" + device.name + "'");
    }
    uint32_t id = static_cast<uint32_t>(m_devices.size());
    m_devices.push_back(device);
    m_out.emplace_back();
    m_byName.emplace(device.name, id);
    if (device.node >= 0)
    {
        m_nodeCount = std::max<uint32_t>(m_nodeCount, static_cast<uint32_t>(device.node) + 1);
    }
    if (device.kind == DeviceKind::Gpu)
    {
        // Keep GPUs node-major whatever order they were added in: insert after every GPU that
        // does not come later (as a stable sort would place it) and renumber from there. Added
        // in order, as generators add them, that is the end: linear in all, where sorting on
        // every insertion made 4096 generated nodes take minutes.
        auto before = [this](uint32_t x, uint32_t y) {
            const Device& a = m_devices[x];
            const Device& b = m_devices[y];
            return std::tie(a.node, a.localIndex) < std::tie(b.node, b.localIndex);
        };
        auto at = std::upper_bound(m_gpus.begin(), m_gpus.end(), id, before);
        const size_t first = static_cast<size_t>(at - m_gpus.begin());
        m_gpus.insert(at, id);
        for (size_t i = first; i < m_gpus.size(); ++i)
        {
            m_devices[m_gpus[i]].gpuIndex = static_cast<int32_t>(i);
        }
    }
    std::lock_guard<std::mutex> lock(m_cacheMutex);
    m_distCache.clear();
    return id;
}

uint32_t
Topology::AddLink(const Link& link)
{
    if (link.a >= m_devices.size() || link.b >= m_devices.size())
    {
        throw TopologyError("link endpoint out of range");
    }
    if (link.a == link.b)
    {
        throw TopologyError("link joins '" + m_devices[link.a].name + "' to itself");
    }
    if (!(link.bandwidth > 0))
    {
        throw TopologyError("link " + m_devices[link.a].name + " <-> " + m_devices[link.b].name +
                            " has non-positive bandwidth");
    }
    if (link.latencyNs < 0)
    {
        throw TopologyError("link " + m_devices[link.a].name + " <-> " + m_devices[link.b].name +
                            " has negative latency");
    }
    uint32_t id = static_cast<uint32_t>(m_links.size());
    m_links.push_back(link);
    m_out[link.a].push_back(2 * id);
    m_out[link.b].push_back(2 * id + 1);
    std::lock_guard<std::mutex> lock(m_cacheMutex);
    m_distCache.clear();
    return id;
}

void
Topology::AddGpuSpec(const GpuSpec& spec)
{
    m_specs[spec.name] = spec;
}

uint32_t
Topology::FindDevice(const std::string& name) const
{
    auto it = m_byName.find(name);
    if (it == m_byName.end())
    {
        throw TopologyError("no device named '" + name + "'");
    }
    return it->second;
}

bool
Topology::HasDevice(const std::string& name) const
{
    return m_byName.count(name) != 0;
}

std::vector<uint32_t>
Topology::GpusOfNode(uint32_t node) const
{
    // m_gpus is node-major: the node's GPUs are one run of it (a scan of every GPU per node made
    // summaries of large clusters quadratic).
    const auto n = static_cast<int32_t>(node);
    auto it = std::lower_bound(m_gpus.begin(), m_gpus.end(), n,
                               [this](uint32_t id, int32_t value) { return m_devices[id].node < value; });
    std::vector<uint32_t> out;
    for (; it != m_gpus.end() && m_devices[*it].node == n; ++it)
    {
        out.push_back(*it);
    }
    return out;
}

int64_t
Topology::FindGpu(int32_t node, int32_t localIndex) const
{
    const auto key = std::make_pair(node, localIndex);
    auto it = std::lower_bound(m_gpus.begin(), m_gpus.end(), key,
                               [this](uint32_t id, const std::pair<int32_t, int32_t>& value) {
                                   const Device& d = m_devices[id];
                                   return std::make_pair(d.node, d.localIndex) < value;
                               });
    if (it == m_gpus.end() || m_devices[*it].node != node ||
        m_devices[*it].localIndex != localIndex)
    {
        return -1;
    }
    return int64_t(*it);
}

const GpuSpec&
Topology::GpuSpecOf(uint32_t gpuIndex) const
{
    const Device& d = m_devices.at(m_gpus.at(gpuIndex));
    auto it = m_specs.find(d.model);
    if (it == m_specs.end())
    {
        throw TopologyError("GPU '" + d.name + "' names unknown GPU model '" + d.model + "'");
    }
    return it->second;
}

uint32_t
Topology::ChannelFrom(uint32_t channel) const
{
    const Link& l = m_links.at(channel / 2);
    return (channel % 2 == 0) ? l.a : l.b;
}

uint32_t
Topology::ChannelTo(uint32_t channel) const
{
    const Link& l = m_links.at(channel / 2);
    return (channel % 2 == 0) ? l.b : l.a;
}

std::string
Topology::ChannelName(uint32_t channel) const
{
    return m_devices[ChannelFrom(channel)].name + "->" + m_devices[ChannelTo(channel)].name;
}

const std::vector<uint32_t>&
Topology::DistancesTo(uint32_t dst) const
{
    std::lock_guard<std::mutex> lock(m_cacheMutex);
    auto it = m_distCache.find(dst);
    if (it != m_distCache.end())
    {
        return *it->second;
    }
    // Breadth-first search backwards from dst. A device may be crossed only if it forwards, so
    // the search expands from dst itself and from forwarding devices, never through a GPU.
    auto dist = std::make_unique<std::vector<uint32_t>>(m_devices.size(), kUnreachable);
    std::deque<uint32_t> queue;
    (*dist)[dst] = 0;
    queue.push_back(dst);
    while (!queue.empty())
    {
        uint32_t v = queue.front();
        queue.pop_front();
        if (v != dst && !Forwards(m_devices[v].kind))
        {
            continue;
        }
        for (uint32_t ch : m_out[v]) // links are full duplex: v's neighbours can reach v
        {
            uint32_t u = ChannelTo(ch);
            if ((*dist)[u] == kUnreachable)
            {
                (*dist)[u] = (*dist)[v] + 1;
                queue.push_back(u);
            }
        }
    }
    auto& ref = *dist;
    m_distCache.emplace(dst, std::move(dist));
    return ref;
}

std::vector<uint32_t>
Topology::Route(uint32_t src, uint32_t dst, uint64_t flowHash) const
{
    if (src >= m_devices.size() || dst >= m_devices.size())
    {
        throw TopologyError("route between unknown devices");
    }
    std::vector<uint32_t> path;
    if (src == dst)
    {
        return path;
    }
    const std::vector<uint32_t>& dist = DistancesTo(dst);
    if (dist[src] == kUnreachable)
    {
        throw TopologyError("no path from '" + m_devices[src].name + "' to '" + m_devices[dst].name +
                            "'");
    }
    path.reserve(dist[src]);
    uint32_t cur = src;
    uint32_t candidates[64];
    while (cur != dst)
    {
        uint32_t n = 0;
        for (uint32_t ch : m_out[cur])
        {
            uint32_t v = ChannelTo(ch);
            if (dist[v] + 1 == dist[cur] && (v == dst || Forwards(m_devices[v].kind)) && n < 64)
            {
                candidates[n++] = ch;
            }
        }
        NS_ASSERT(n > 0);
        // Where NVLink and another link are equally short ways on (GPUs that share a PCIe
        // switch and an NVSwitch), the traffic takes NVLink, as NCCL's P2P transport and the
        // driver's peer copies do; ECMP spreads over the rest.
        uint32_t nvlinks = 0;
        for (uint32_t k = 0; k < n; ++k)
        {
            if (ChannelKind(candidates[k]) == LinkKind::NvLink)
            {
                candidates[nvlinks++] = candidates[k];
            }
        }
        n = nvlinks > 0 ? nvlinks : n;
        uint32_t pick = n == 1 ? 0 : static_cast<uint32_t>(Mix(flowHash ^ Mix(cur)) % n);
        path.push_back(candidates[pick]);
        cur = ChannelTo(candidates[pick]);
    }
    return path;
}

uint64_t
Topology::PathCount(uint32_t src, uint32_t dst) const
{
    // Number of distinct shortest paths (dynamic programming over the distance layers).
    const std::vector<uint32_t>& dist = DistancesTo(dst);
    if (dist[src] == kUnreachable)
    {
        return 0;
    }
    std::vector<uint32_t> order;
    for (uint32_t v = 0; v < m_devices.size(); ++v)
    {
        if (dist[v] != kUnreachable && dist[v] <= dist[src])
        {
            order.push_back(v);
        }
    }
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return dist[x] < dist[y]; });
    std::vector<uint64_t> count(m_devices.size(), 0);
    count[dst] = 1;
    for (uint32_t v : order)
    {
        if (v == dst || (v != src && !Forwards(m_devices[v].kind)))
        {
            continue;
        }
        for (uint32_t ch : m_out[v])
        {
            uint32_t w = ChannelTo(ch);
            if (dist[w] + 1 == dist[v] && (w == dst || Forwards(m_devices[w].kind)))
            {
                count[v] += count[w];
            }
        }
    }
    return count[src];
}

bool
Topology::Reaches(uint32_t src, uint32_t dst) const
{
    return DistancesTo(dst)[src] != kUnreachable;
}

int64_t
Topology::PathLatencyNs(const std::vector<uint32_t>& path) const
{
    int64_t total = 0;
    for (uint32_t ch : path)
    {
        total += ChannelLatencyNs(ch);
    }
    return total;
}

double
Topology::PathBandwidth(const std::vector<uint32_t>& path) const
{
    double bw = std::numeric_limits<double>::infinity();
    for (uint32_t ch : path)
    {
        bw = std::min(bw, ChannelBandwidth(ch));
    }
    return bw;
}

void
Topology::Validate() const
{
    const std::string where = source.empty() ? std::string() : source + ": ";
    for (const Link& l : m_links)
    {
        if (l.a >= m_devices.size() || l.b >= m_devices.size())
        {
            throw TopologyError(where + "dangling link endpoint");
        }
        if (!(l.bandwidth > 0))
        {
            throw TopologyError(where + "link " + m_devices[l.a].name + " <-> " +
                                m_devices[l.b].name + " has non-positive bandwidth");
        }
    }
    if (m_gpus.empty())
    {
        throw TopologyError(where + "topology has no GPU");
    }
    for (uint32_t id : m_gpus)
    {
        const Device& d = m_devices[id];
        if (!d.model.empty() && !m_specs.empty() && m_specs.count(d.model) == 0)
        {
            throw TopologyError(where + "GPU '" + d.name + "' names unknown GPU model '" + d.model +
                                "'");
        }
    }
    // Reachability: every GPU must reach GPU 0 and be reached from it (links are duplex, so one
    // search each way over forwarding devices is enough).
    const std::vector<uint32_t>& toFirst = DistancesTo(m_gpus[0]);
    for (uint32_t id : m_gpus)
    {
        if (toFirst[id] == kUnreachable)
        {
            throw TopologyError(where + "GPU '" + m_devices[id].name + "' cannot reach GPU '" +
                                m_devices[m_gpus[0]].name + "'");
        }
    }
}

} // namespace eidolon
} // namespace ns3
