/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "topology-generator.h"

#include "ns3/log.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonTopologyGenerator");

namespace
{
// Link latencies. NVIDIA publishes no per-hop figures for NVLink or PCIe inside a DGX; these are
// order-of-magnitude estimates (a switch traversal plus a short trace or cable), chosen so that a
// GPU-to-GPU NVLink transfer sees ~0.5 us of wire latency and an inter-node transfer over one
// leaf ~1.4 us, in line with published small-message RDMA latencies. The NCCL model adds its own
// per-step software latencies on top. See doc/topology.md.
constexpr int64_t kNvlinkHopNs = 250; // GPU <-> NVSwitch
constexpr int64_t kPcieHopNs = 250;   // device <-> PCIe switch
constexpr int64_t kNicLeafNs = 200;   // NIC port + ~2 m cable (5 ns/m) + leaf switching (~130 ns)
constexpr int64_t kLeafSpineNs = 300; // up to ~30 m fibre + spine switching
constexpr int64_t kSpineCoreNs = 400; // longer inter-pod runs + core switching

NodeTemplate
MakePreset(const char* type, const char* gpu, double nvlinkGBps, double pcieGBps, double nicGbps)
{
    NodeTemplate t;
    t.type = type;
    t.gpuModel = gpu;
    t.gpus = 8;
    t.nvlinkBandwidth = nvlinkGBps * 1e9;
    t.nvlinkLatencyNs = kNvlinkHopNs;
    t.pcieBandwidth = pcieGBps * 1e9;
    t.pcieLatencyNs = kPcieHopNs;
    t.nicBandwidth = nicGbps * 1e9 / 8;
    return t;
}

const std::map<std::string, NodeTemplate>&
Presets()
{
    // PCIe x16 per direction after 128b/130b encoding: Gen4 31.5 GB/s, Gen5 63 GB/s.
    // NVLink per GPU per direction: NVLink3 (A100) 300 GB/s, NVLink4 (H100/H200) 450 GB/s,
    // NVLink5 (B200) 900 GB/s. NICs: DGX A100 has ConnectX-6 HDR 200 Gb/s, DGX H100/H200/B200 have
    // ConnectX-7 NDR 400 Gb/s; one compute NIC per GPU in all four.
    static const std::map<std::string, NodeTemplate> presets = {
        {"dgx-a100", MakePreset("dgx-a100", "A100-SXM4-80GB", 300, 31.5, 200)},
        {"dgx-h100", MakePreset("dgx-h100", "H100-SXM5-80GB", 450, 63, 400)},
        {"dgx-h200", MakePreset("dgx-h200", "H200-SXM-141GB", 450, 63, 400)},
        {"dgx-b200", MakePreset("dgx-b200", "B200", 900, 63, 400)},
    };
    return presets;
}

std::string
NodePrefix(uint32_t node)
{
    return "node" + std::to_string(node) + "/";
}

uint32_t
Add(Topology& topo, const std::string& name, DeviceKind kind, int32_t node, int32_t index,
    int32_t tier = 0, const std::string& model = "")
{
    Device d;
    d.name = name;
    d.kind = kind;
    d.node = node;
    d.localIndex = index;
    d.tier = tier;
    d.model = model;
    return topo.AddDevice(d);
}

void
Connect(Topology& topo, uint32_t a, uint32_t b, double bandwidth, int64_t latencyNs, LinkKind kind)
{
    Link l;
    l.a = a;
    l.b = b;
    l.bandwidth = bandwidth;
    l.latencyNs = latencyNs;
    l.kind = kind;
    topo.AddLink(l);
}

uint32_t
CeilDiv(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}
} // namespace

std::vector<std::string>
NodePresetNames()
{
    std::vector<std::string> names;
    for (const auto& [name, preset] : Presets())
    {
        names.push_back(name);
    }
    return names;
}

NodeTemplate
NodePreset(const std::string& type)
{
    auto it = Presets().find(type);
    if (it == Presets().end())
    {
        std::string known;
        for (const auto& n : NodePresetNames())
        {
            known += (known.empty() ? "" : ", ") + n;
        }
        throw TopologyError("unknown node type '" + type + "' (known: " + known + ")");
    }
    return it->second;
}

const char*
ToString(FabricKind kind)
{
    switch (kind)
    {
    case FabricKind::None:
        return "none";
    case FabricKind::SingleSwitch:
        return "single-switch";
    case FabricKind::TwoTier:
        return "two-tier";
    case FabricKind::ThreeTier:
        return "three-tier";
    }
    return "?";
}

FabricKind
FabricKindFromString(const std::string& text)
{
    for (FabricKind k :
         {FabricKind::None, FabricKind::SingleSwitch, FabricKind::TwoTier, FabricKind::ThreeTier})
    {
        if (text == ToString(k))
        {
            return k;
        }
    }
    throw TopologyError("unknown fabric type '" + text +
                        "' (expected none, single-switch, two-tier or three-tier)");
}

FabricTemplate
DefaultFabric()
{
    FabricTemplate f;
    f.nicLeafLatencyNs = kNicLeafNs;
    f.leafSpineLatencyNs = kLeafSpineNs;
    f.spineCoreLatencyNs = kSpineCoreNs;
    return f;
}

void
AddNodes(Topology& topo, const NodeTemplate& node, uint32_t firstNode, uint32_t nodes)
{
    if (node.gpus == 0)
    {
        throw TopologyError("a node needs at least one GPU");
    }
    const uint32_t nics = NicsPerNode(node);
    if (node.gpus % nics != 0)
    {
        throw TopologyError("a node's NICs must divide its GPUs");
    }
    const uint32_t gpusPerNic = node.gpus / nics;
    for (uint32_t n = firstNode; n < firstNode + nodes; ++n)
    {
        const std::string p = NodePrefix(n);
        const auto node32 = static_cast<int32_t>(n);
        uint32_t host = Add(topo, p + "host", DeviceKind::Host, node32, 0);
        uint32_t nvswitch = 0;
        constexpr uint32_t kNone = ~0U;
        uint32_t pcieRoot = kNone;
        if (node.nvswitch)
        {
            nvswitch = Add(topo, p + "nvswitch", DeviceKind::NvSwitch, node32, 0);
        }
        const bool grouped = gpusPerNic > 1;
        uint32_t nicSwitch = kNone;
        for (uint32_t i = 0; i < node.gpus; ++i)
        {
            const auto i32 = static_cast<int32_t>(i);
            uint32_t gpu = Add(topo, p + "gpu" + std::to_string(i), DeviceKind::Gpu, node32, i32, 0,
                               node.gpuModel);
            uint32_t pcie =
                Add(topo, p + "pcie" + std::to_string(i), DeviceKind::PcieSwitch, node32, i32);
            // A NIC per GPU sits on the GPU's PCIe switch. A NIC shared by a group of GPUs sits
            // on a switch above theirs (nic-switch<g>, made with the group's first GPU), so that
            // every GPU of the group is as far from it, and GPU-to-GPU traffic never finds a
            // PCIe path as short as NVLink's.
            uint32_t nic = kNone;
            if (!grouped || i % gpusPerNic == 0)
            {
                const uint32_t index = i / gpusPerNic;
                const auto index32 = static_cast<int32_t>(index);
                if (grouped)
                {
                    nicSwitch =
                        Add(topo, p + "nic-switch" + std::to_string(index), DeviceKind::PcieSwitch,
                            node32, static_cast<int32_t>(node.gpus + 1 + index));
                }
                nic =
                    Add(topo, p + "nic" + std::to_string(index), DeviceKind::Nic, node32, index32);
                if (grouped)
                {
                    Connect(topo, nicSwitch, nic, node.pcieBandwidth, node.pcieLatencyNs,
                            LinkKind::Pcie);
                }
            }
            if (node.nvswitch)
            {
                Connect(topo, gpu, nvswitch, node.nvlinkBandwidth, node.nvlinkLatencyNs,
                        LinkKind::NvLink);
            }
            Connect(topo, gpu, pcie, node.pcieBandwidth, node.pcieLatencyNs, LinkKind::Pcie);
            Connect(topo, pcie, grouped ? nicSwitch : nic, node.pcieBandwidth, node.pcieLatencyNs,
                    LinkKind::Pcie);
            // The host hangs off every GPU's PCIe switch so that each GPU has its own host path
            // (host<->device copies of different GPUs do not share a PCIe link).
            Connect(topo, pcie, host, node.pcieBandwidth, node.pcieLatencyNs, LinkKind::Pcie);
            if (!node.nvswitch)
            {
                // Without NVSwitch, peer traffic crosses the CPU's root complex. The host device
                // does not forward, so the root complex is a PCIe switch of its own.
                if (pcieRoot == kNone)
                {
                    Device root;
                    root.name = p + "pcie-root";
                    root.kind = DeviceKind::PcieSwitch;
                    root.node = node32;
                    root.localIndex = static_cast<int32_t>(node.gpus);
                    root.hostBridge = true;
                    pcieRoot = topo.AddDevice(root);
                }
                Connect(topo, pcie, pcieRoot, node.pcieBandwidth, node.pcieLatencyNs,
                        LinkKind::Pcie);
            }
        }
    }
}

void
AddFabric(Topology& topo, const FabricTemplate& f, uint32_t nodes, uint32_t nicsPerNode,
          double nicBandwidth)
{
    if (f.kind == FabricKind::None || nodes == 0)
    {
        return;
    }
    if (!(f.oversubscription > 0) || !(f.spineOversubscription > 0))
    {
        throw TopologyError("oversubscription must be positive");
    }
    auto nic = [&](uint32_t n, uint32_t i)
    { return topo.FindDevice(NodePrefix(n) + "nic" + std::to_string(i)); };
    if (f.kind == FabricKind::SingleSwitch)
    {
        uint32_t sw = Add(topo, "leaf0", DeviceKind::Switch, -1, 0, 1);
        for (uint32_t n = 0; n < nodes; ++n)
        {
            for (uint32_t i = 0; i < nicsPerNode; ++i)
            {
                Connect(topo, nic(n, i), sw, nicBandwidth, f.nicLeafLatencyNs, LinkKind::Net);
            }
        }
        return;
    }

    // Leaves: one per (scalable unit, rail), or one per scalable unit without rail optimization.
    const uint32_t perLeaf = f.nodesPerLeaf ? f.nodesPerLeaf : std::min<uint32_t>(nodes, 32);
    const uint32_t units = CeilDiv(nodes, perLeaf);
    const uint32_t railsPerUnit = f.railOptimized ? nicsPerNode : 1;
    // Ports a full leaf offers downwards; the default spine count gives one uplink per port at 1:1.
    const uint32_t downPortsPerLeaf = f.railOptimized ? perLeaf : perLeaf * nicsPerNode;
    const uint32_t spinesPerPod =
        f.spines ? f.spines
                 : std::max<uint32_t>(
                       1, static_cast<uint32_t>(std::ceil(downPortsPerLeaf / f.oversubscription)));
    const bool threeTier = f.kind == FabricKind::ThreeTier;
    const uint32_t unitsPerPod = threeTier ? (f.unitsPerPod ? f.unitsPerPod : 4) : units;
    const uint32_t pods = CeilDiv(units, unitsPerPod);

    std::vector<std::vector<uint32_t>> leaves(units); // [unit][rail]
    std::vector<std::vector<double>> leafDown(units, std::vector<double>(railsPerUnit, 0.0));
    for (uint32_t u = 0; u < units; ++u)
    {
        for (uint32_t r = 0; r < railsPerUnit; ++r)
        {
            std::string name = "leaf" + std::to_string(u);
            if (f.railOptimized)
            {
                name += "-rail" + std::to_string(r);
            }
            leaves[u].push_back(Add(topo, name, DeviceKind::Switch, -1,
                                    static_cast<int32_t>(u * railsPerUnit + r), 1));
        }
    }
    for (uint32_t n = 0; n < nodes; ++n)
    {
        const uint32_t u = n / perLeaf;
        for (uint32_t i = 0; i < nicsPerNode; ++i)
        {
            const uint32_t r = f.railOptimized ? i : 0;
            Connect(topo, nic(n, i), leaves[u][r], nicBandwidth, f.nicLeafLatencyNs, LinkKind::Net);
            leafDown[u][r] += nicBandwidth;
        }
    }
    if (units == 1 && !f.railOptimized)
    {
        return; // one leaf holds every NIC: spines would carry nothing
    }

    // Spines, per pod (a two-tier fabric is one pod). Every leaf of a pod reaches every spine of
    // it.
    std::vector<std::vector<uint32_t>> spines(pods);
    std::vector<std::vector<double>> spineDown(pods, std::vector<double>(spinesPerPod, 0.0));
    for (uint32_t p = 0; p < pods; ++p)
    {
        for (uint32_t s = 0; s < spinesPerPod; ++s)
        {
            std::string name = threeTier ? "spine" + std::to_string(p) + "-" + std::to_string(s)
                                         : "spine" + std::to_string(s);
            spines[p].push_back(Add(topo, name, DeviceKind::Switch, -1,
                                    static_cast<int32_t>(p * spinesPerPod + s), 2));
        }
    }
    for (uint32_t u = 0; u < units; ++u)
    {
        const uint32_t p = u / unitsPerPod;
        for (uint32_t r = 0; r < railsPerUnit; ++r)
        {
            const double up = leafDown[u][r] / f.oversubscription / spinesPerPod;
            for (uint32_t s = 0; s < spinesPerPod; ++s)
            {
                Connect(topo, leaves[u][r], spines[p][s], up, f.leafSpineLatencyNs, LinkKind::Net);
                spineDown[p][s] += up;
            }
        }
    }
    if (!threeTier)
    {
        return;
    }

    const uint32_t cores = f.cores ? f.cores : spinesPerPod;
    std::vector<uint32_t> core;
    for (uint32_t c = 0; c < cores; ++c)
    {
        core.push_back(Add(topo, "core" + std::to_string(c), DeviceKind::Switch, -1,
                           static_cast<int32_t>(c), 3));
    }
    for (uint32_t p = 0; p < pods; ++p)
    {
        for (uint32_t s = 0; s < spinesPerPod; ++s)
        {
            const double up = spineDown[p][s] / f.spineOversubscription / cores;
            for (uint32_t c = 0; c < cores; ++c)
            {
                Connect(topo, spines[p][s], core[c], up, f.spineCoreLatencyNs, LinkKind::Net);
            }
        }
    }
}

GeneratedSize
GeneratedSizeOf(const NodeTemplate& node, uint32_t nodes, const FabricTemplate& f)
{
    // As AddNodes: per node a host and the NVSwitch or a PCIe root complex; per GPU the GPU and
    // its PCIe switch with three links (NVLink or root complex, GPU-PCIe, PCIe-host) and one to
    // its NIC or its group's NIC switch; per NIC the NIC, and when GPUs share it, its switch and
    // the link between them.
    GeneratedSize size;
    const uint64_t n = nodes;
    const uint64_t gpus = node.gpus;
    const uint64_t nicsPerNode = NicsPerNode(node);
    const bool grouped = nicsPerNode < gpus;
    size.devices = n * (2 + 2 * gpus + nicsPerNode * (grouped ? 2 : 1));
    size.links = n * (4 * gpus + (grouped ? nicsPerNode : 0));
    if (f.kind == FabricKind::None || nodes == 0)
    {
        return size;
    }
    size.links += n * nicsPerNode; // every NIC to its leaf
    if (f.kind == FabricKind::SingleSwitch)
    {
        size.devices += 1;
        return size;
    }
    // As AddFabric (its comments say why each count is what it is).
    const uint64_t perLeaf = f.nodesPerLeaf ? f.nodesPerLeaf : std::min<uint64_t>(n, 32);
    const uint64_t units = (n + perLeaf - 1) / perLeaf;
    const uint64_t rails = f.railOptimized ? nicsPerNode : 1;
    const uint64_t downPorts = f.railOptimized ? perLeaf : perLeaf * nicsPerNode;
    const uint64_t spines =
        f.spines ? f.spines
                 : std::max<uint64_t>(
                       1, static_cast<uint64_t>(std::ceil(double(downPorts) / f.oversubscription)));
    const bool threeTier = f.kind == FabricKind::ThreeTier;
    const uint64_t unitsPerPod = threeTier ? (f.unitsPerPod ? f.unitsPerPod : 4) : units;
    const uint64_t pods = (units + unitsPerPod - 1) / unitsPerPod;
    size.devices += units * rails;
    if (units == 1 && !f.railOptimized)
    {
        return size;
    }
    size.devices += pods * spines;
    size.links += units * rails * spines;
    if (threeTier)
    {
        const uint64_t cores = f.cores ? f.cores : spines;
        size.devices += cores;
        size.links += pods * spines * cores;
    }
    return size;
}

Ptr<Topology>
GenerateCluster(const std::string& name, const NodeTemplate& node, uint32_t nodes,
                const FabricTemplate& fabric)
{
    Ptr<Topology> topo = Create<Topology>();
    topo->name = name;
    AddNodes(*topo, node, 0, nodes);
    AddFabric(*topo, fabric, nodes, NicsPerNode(node), node.nicBandwidth);
    NS_LOG_INFO("generated " << name << ": " << topo->Devices().size() << " devices, "
                             << topo->Links().size() << " links");
    return topo;
}

} // namespace eidolon
} // namespace ns3
