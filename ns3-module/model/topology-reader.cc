/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * YAML cluster descriptions (doc/topology.md) and SimAI/HPCC imports; GPU spec files are read by
 * the spec library (ns3/gpu-spec.h). Every error names the file, the 1-based line and the field.
 */
#include "topology-reader.h"

#include "topology-generator.h"

#include "host-spec.h"

#include "ns3/log.h"
#include "ns3/spec-fields.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonTopologyReader");

namespace fs = std::filesystem;

namespace
{
/// 2^16 nodes of 8 GPUs is half a million GPUs, beyond any cluster built so far.
constexpr uint32_t kMaxGeneratedNodes = 65536;
/// Switch counts of a generated fabric (spines, cores, nodes per leaf, units per pod): far above
/// any switch radix, and small enough that the counts below are worked out without wrapping.
constexpr int64_t kMaxGeneratedSwitchCount = 65536;
/// What a generated graph may hold in all (doc/topology.md, "Limits"): checked before anything
/// is made, so that a typo (`spines: 99999999`) is an error, not minutes of work and gigabytes.
constexpr uint64_t kMaxGeneratedDevices = 1u << 21;
constexpr uint64_t kMaxGeneratedLinks = 1u << 22;
/// A link's bandwidth and latency (doc/topology.md, "Limits"): 1 Mb/s to 1 Pb/s, at most 1 s.
/// Beyond them a file holds a unit slip (1e-30 GB/s); the run would stall or overflow its clock.
constexpr double kMinLinkBandwidth = 1e6 / 8;  // bytes/s
constexpr double kMaxLinkBandwidth = 1e15 / 8; // bytes/s
constexpr int64_t kMaxLinkLatencyNs = 1000000000;

using ::eidolon::spec::Fields;
using ::eidolon::spec::LoadYaml;
using ::eidolon::spec::ReadFile;
using ::eidolon::spec::Where;

/// A link bandwidth field, within [kMinLinkBandwidth, kMaxLinkBandwidth].
double
LinkBandwidth(const Fields& f, const char* key)
{
    const double bandwidth = f.Bandwidth(key);
    if (!(bandwidth >= kMinLinkBandwidth && bandwidth <= kMaxLinkBandwidth))
    {
        std::ostringstream message;
        message << bandwidth << " bytes/s is outside what a link can be (1 Mb/s to 1 Pb/s)";
        f.Fail(key, message.str());
    }
    return bandwidth;
}

/// A link latency field, at most kMaxLinkLatencyNs.
int64_t
LinkLatency(const Fields& f, const char* key)
{
    const int64_t latency = f.Latency(key);
    if (latency < 0 || latency > kMaxLinkLatencyNs)
    {
        f.Fail(key, std::to_string(latency) + " ns is outside what a link can be (0 to 1 s)");
    }
    return latency;
}

/// A generated fabric's switch count (0: the generator's default).
uint32_t
SwitchCount(const Fields& f, const char* key)
{
    const int64_t count = f.Int(key, 1, 0);
    if (count > kMaxGeneratedSwitchCount)
    {
        f.Fail(key, std::to_string(count) + " is more than the " +
                        std::to_string(kMaxGeneratedSwitchCount) + " a generated fabric may have");
    }
    return static_cast<uint32_t>(count);
}

/// Where GPU specs come from, in order of precedence (doc/topology.md, "GPU specs").
std::string
ResolveGpuSpecDir(const std::string& file, const std::string& fromFile,
                  const TopologyReadOptions& options)
{
    if (!options.gpuSpecDir.empty())
    {
        return options.gpuSpecDir;
    }
    fs::path base = fs::path(file).parent_path();
    if (!fromFile.empty())
    {
        fs::path p(fromFile);
        return (p.is_absolute() ? p : base / p).string();
    }
    std::error_code ec;
    fs::path beside = base / "gpus";
    if (fs::is_directory(beside, ec))
    {
        return beside.string();
    }
    if (const char* env = std::getenv("EIDOLON_GPU_SPECS"); env && *env)
    {
        return env;
    }
    return options.fallbackGpuSpecDir;
}

/**
 * The `host:` field: the host description every node's server has (spec/host-spec.h), found in
 * hosts/ beside the file, then $EIDOLON_HOST_SPEC_DIR (':'-separated), then the shipped
 * topologies/hosts. Loaded here so that a bad name or file is reported with the topology's line.
 */
/// `network_transport:`. InfiniBand verbs with GPUDirect RDMA and RoCE are what NCCL's own
/// tables describe: nothing is added unless the file says so. The other stacks have no default
/// figure (what they cost depends on the deployment): the file gives them, with their source.
void
ReadNetworkTransport(Topology& topo, const Fields& t)
{
    t.Allow({"kind", "message_latency", "bandwidth_share", "ll_proxy_rate", "source"});
    static const std::set<std::string> kinds = {"ib",   "ib-no-gdr", "roce",  "efa",
                                                "tcpx", "tcpxo",     "socket"};
    Topology::NetworkTransport nt;
    nt.kind = t.String("kind");
    if (!kinds.count(nt.kind))
    {
        t.Fail("kind", "'" + nt.kind +
                           "' is not a transport (ib, ib-no-gdr, roce, efa, tcpx, tcpxo, socket)");
    }
    const bool reference = nt.kind == "ib" || nt.kind == "roce";
    if (!reference && (!t.Has("message_latency") || !t.Has("bandwidth_share")))
    {
        t.Fail(t.Has("message_latency") ? "bandwidth_share" : "message_latency",
               "required for '" + nt.kind +
                   "': eidolon has no default figure for this network stack; give the one "
                   "measured on the cluster (and its source)");
    }
    if (t.Has("message_latency"))
    {
        nt.messageLatencyUs = double(t.Latency("message_latency")) / 1000.0;
    }
    nt.bandwidthShare = t.Has("bandwidth_share") ? t.Positive("bandwidth_share") : 1.0;
    if (nt.bandwidthShare > 1)
    {
        t.Fail("bandwidth_share", "a fraction of the NIC line rate: above 0, at most 1");
    }
    if (t.Has("ll_proxy_rate"))
    {
        nt.llProxyRate = t.Bandwidth("ll_proxy_rate");
    }
    nt.source = t.String("source", "");
    topo.transport = nt;
}

/// `sharp:` the switches reduce in the network (NVIDIA SHARP) and the nodes have NCCL's CollNet
/// plugin. SHARPv1 aggregates small messages only (its low-latency trees), which NCCL's CollNet
/// does not rely on for bandwidth: versions 2 and 3 are accepted.
void
ReadInNetworkReduction(Topology& topo, const Fields& t)
{
    t.Allow({"version", "aggregation_bandwidth", "allgather_reduce_scatter", "source"});
    Topology::InNetworkReduction r;
    r.present = true;
    r.version = int(t.Int("version", 1, 3));
    if (r.version != 2 && r.version != 3)
    {
        t.Fail("version", "SHARP version " + std::to_string(r.version) +
                              " is not modelled (2: Quantum HDR, 3: Quantum-2 NDR; SHARPv1 "
                              "streams no large messages)");
    }
    if (t.Has("aggregation_bandwidth"))
    {
        r.aggregationBandwidth = t.Bandwidth("aggregation_bandwidth");
    }
    r.allgatherReduceScatter = t.Bool("allgather_reduce_scatter", r.version >= 3);
    r.source = t.String("source", "");
    topo.sharp = r;
}

void
ReadHostField(Topology& topo, const std::string& file, const YAML::Node& node)
{
    const std::string where = Where(file, node);
    if (!node.IsScalar() || node.as<std::string>().empty())
    {
        throw TopologyError(where + ": field 'host': expected the name of a host description");
    }
    topo.host = node.as<std::string>();
    std::vector<std::string> dirs{(fs::path(file).parent_path() / "hosts").string()};
    if (const char* env = std::getenv("EIDOLON_HOST_SPEC_DIR"); env && *env)
    {
        std::stringstream list(env);
        for (std::string dir; std::getline(list, dir, ':');)
        {
            if (!dir.empty())
            {
                dirs.push_back(dir);
            }
        }
    }
#ifdef EIDOLON_SOURCE_DIR
    dirs.push_back(std::string(EIDOLON_SOURCE_DIR) + "/topologies/hosts");
#endif
    try
    {
        topo.cpuVendor = ::eidolon::spec::FindHostSpec(topo.host, dirs).cpuVendor;
    }
    catch (const std::exception& e)
    {
        throw TopologyError(where + ": field 'host': " + e.what());
    }
    for (const std::string& dir : dirs)
    {
        std::error_code ec;
        if (fs::is_regular_file(fs::path(dir) / (topo.host + ".yaml"), ec))
        {
            topo.hostSpecDir = dir;
            break;
        }
    }
}

/// A GPU model some device names, and where (for messages).
struct ModelUse
{
    std::string model;
    std::string where; //!< "file:line"
    std::string field; //!< field that named it
};

/**
 * Loads the specs, checks every model used exists (reporting where it was named), attaches the
 * specs, then checks reachability with a line to blame and runs Topology::Validate().
 */
void
Finish(Topology& topo, const std::string& file, const std::string& specDir,
       const std::string& specDirWhere, const std::vector<ModelUse>& uses,
       const std::map<std::string, std::string>& deviceWhere, const std::string& fileWhere)
{
    if (!uses.empty())
    {
        if (specDir.empty())
        {
            throw TopologyError(fileWhere +
                                ": field 'gpu_specs': no GPU spec directory (no gpus/ "
                                "beside the file; set gpu_specs or $EIDOLON_GPU_SPECS)");
        }
        std::map<std::string, GpuSpec> specs;
        try
        {
            specs = LoadGpuSpecs(specDir);
        }
        catch (const TopologyError& e)
        {
            throw TopologyError(specDirWhere + ": field 'gpu_specs': " + e.what());
        }
        for (const ModelUse& u : uses)
        {
            try
            {
                FindGpuSpec(specs, u.model);
            }
            catch (const TopologyError& e) // "unknown GPU model 'X' (known: ...)"
            {
                throw TopologyError(u.where + ": field '" + u.field + "': " + e.what());
            }
        }
        for (const auto& [name, spec] : specs)
        {
            topo.AddGpuSpec(spec);
        }
    }
    if (topo.GpuCount() == 0)
    {
        throw TopologyError(fileWhere + ": field 'devices': the topology has no GPU");
    }
    // Reachability with a line to blame; Validate() below repeats it without lines.
    const uint32_t first = topo.GpuDevice(0);
    for (uint32_t g = 1; g < topo.GpuCount(); ++g)
    {
        const uint32_t id = topo.GpuDevice(g);
        if (!topo.Reaches(id, first))
        {
            const std::string& name = topo.GetDevice(id).name;
            auto it = deviceWhere.find(name);
            std::string where = it != deviceWhere.end() ? it->second : file;
            throw TopologyError(where + ": field 'links': GPU '" + name + "' cannot reach GPU '" +
                                topo.GetDevice(first).name +
                                "' (no path through switches, NICs, PCIe switches or NVSwitches)");
        }
    }
    topo.Validate();
}

bool
LooksLikeText(const std::string& path, const std::string& text)
{
    std::string ext = fs::path(path).extension().string();
    if (ext == ".txt" || ext == ".topo")
    {
        return true;
    }
    if (ext == ".yaml" || ext == ".yml")
    {
        return false;
    }
    // No telling extension: a SimAI/HPCC file starts with a line of numbers (and a GPU type).
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
    {
        size_t i = line.find_first_not_of(" \t\r");
        if (i == std::string::npos || line[i] == '#')
        {
            continue;
        }
        return std::isdigit(static_cast<unsigned char>(line[i])) != 0;
    }
    return false;
}
} // namespace

Ptr<Topology>
ReadTopologyFromString(const std::string& text, const std::string& nameForMessages)
{
    return ReadTopologyFromString(text, nameForMessages, TopologyReadOptions());
}

Ptr<Topology>
ReadTopologyFromString(const std::string& text, const std::string& file,
                       const TopologyReadOptions& options)
{
    YAML::Node root = LoadYaml(text, file);
    if (!root.IsDefined() || root.IsNull())
    {
        throw TopologyError(file + ": empty topology file");
    }
    Fields top(file, root, "topology");
    top.Allow({"version", "name", "description", "gpu_model", "gpu_specs", "host", "generate",
               "devices", "links", "network_transport", "sharp"});
    const int64_t version = top.Int("version", 1);
    if (version != 1)
    {
        top.Fail("version", "this eidolon reads version 1, not " + std::to_string(version));
    }
    Ptr<Topology> topo = Create<Topology>();
    topo->source = file;
    topo->name = top.String("name", fs::path(file).stem().string());
    if (top.Has("host"))
    {
        ReadHostField(*topo, file, top.Get("host"));
    }
    if (top.Has("network_transport"))
    {
        ReadNetworkTransport(*topo, top.Child("network_transport"));
    }
    if (top.Has("sharp"))
    {
        ReadInNetworkReduction(*topo, top.Child("sharp"));
    }

    std::vector<ModelUse> uses;
    std::map<std::string, std::string> deviceWhere; // device name -> "file:line" that made it
    std::string defaultModel = top.String("gpu_model", "");

    if (top.Has("generate"))
    {
        YAML::Node genNode = top.Get("generate");
        Fields gen(file, genNode, "generate");
        gen.Allow({"nodes", "node", "fabric"});
        const auto nodes = static_cast<uint32_t>(gen.Int("nodes", 1));
        if (nodes > kMaxGeneratedNodes)
        {
            gen.Fail("nodes", "at most " + std::to_string(kMaxGeneratedNodes) +
                                  " nodes can be generated (the graph is held in memory)");
        }
        Fields node(file, gen.Get("node"), "generate.node");
        node.Allow({"type", "gpu_model", "gpus", "nics", "nvswitch", "nvlink_bandwidth",
                    "nvlink_latency", "pcie_bandwidth", "pcie_latency", "nic_bandwidth"});
        NodeTemplate t;
        try
        {
            t = NodePreset(node.String("type"));
        }
        catch (const TopologyError& e)
        {
            if (!node.Has("type"))
            {
                throw;
            }
            node.Fail("type", e.what());
        }
        t.gpuModel = node.String("gpu_model", t.gpuModel);
        t.gpus = static_cast<uint32_t>(node.Int("gpus", 1, t.gpus));
        if (t.gpus > 1024) // NVLink domains reach 72 (GB200 NVL72) to a few hundred GPUs
        {
            node.Fail("gpus", "at most 1024 GPUs per node");
        }
        if (node.Has("nics"))
        {
            t.nics = static_cast<uint32_t>(node.Int("nics", 1, t.gpus));
            if (t.nics > t.gpus || t.gpus % t.nics != 0)
            {
                node.Fail("nics", "must divide gpus (" + std::to_string(t.gpus) +
                                      "): each NIC serves the same number of GPUs");
            }
        }
        t.nvswitch = node.Bool("nvswitch", t.nvswitch);
        if (node.Has("nvlink_bandwidth"))
        {
            t.nvlinkBandwidth = LinkBandwidth(node, "nvlink_bandwidth");
        }
        if (node.Has("nvlink_latency"))
        {
            t.nvlinkLatencyNs = LinkLatency(node, "nvlink_latency");
        }
        if (node.Has("pcie_bandwidth"))
        {
            t.pcieBandwidth = LinkBandwidth(node, "pcie_bandwidth");
        }
        if (node.Has("pcie_latency"))
        {
            t.pcieLatencyNs = LinkLatency(node, "pcie_latency");
        }
        if (node.Has("nic_bandwidth"))
        {
            t.nicBandwidth = LinkBandwidth(node, "nic_bandwidth");
        }
        const std::string modelField = node.Has("gpu_model") ? "gpu_model" : "type";
        uses.push_back(
            {t.gpuModel,
             Where(file, node.Has("gpu_model") ? node.Get("gpu_model") : node.Get("type")),
             modelField});
        if (defaultModel.empty())
        {
            defaultModel = t.gpuModel;
        }

        FabricTemplate fab = DefaultFabric();
        fab.kind = nodes == 1 ? FabricKind::None : FabricKind::TwoTier;
        if (gen.Has("fabric"))
        {
            Fields fb(file, gen.Get("fabric"), "generate.fabric");
            fb.Allow({"type", "rail_optimized", "nodes_per_leaf", "spines", "units_per_pod",
                      "cores", "oversubscription", "spine_oversubscription", "nic_leaf_latency",
                      "leaf_spine_latency", "spine_core_latency"});
            if (fb.Has("type"))
            {
                try
                {
                    fab.kind = FabricKindFromString(fb.String("type"));
                }
                catch (const TopologyError& e)
                {
                    fb.Fail("type", e.what());
                }
            }
            fab.railOptimized = fb.Bool("rail_optimized", fab.railOptimized);
            fab.nodesPerLeaf = SwitchCount(fb, "nodes_per_leaf");
            fab.spines = SwitchCount(fb, "spines");
            fab.unitsPerPod = SwitchCount(fb, "units_per_pod");
            fab.cores = SwitchCount(fb, "cores");
            fab.oversubscription = fb.Ratio("oversubscription", 1.0);
            fab.spineOversubscription = fb.Ratio("spine_oversubscription", 1.0);
            if (fb.Has("nic_leaf_latency"))
            {
                fab.nicLeafLatencyNs = LinkLatency(fb, "nic_leaf_latency");
            }
            if (fb.Has("leaf_spine_latency"))
            {
                fab.leafSpineLatencyNs = LinkLatency(fb, "leaf_spine_latency");
            }
            if (fb.Has("spine_core_latency"))
            {
                fab.spineCoreLatencyNs = LinkLatency(fb, "spine_core_latency");
            }
            if (fab.kind != FabricKind::ThreeTier)
            {
                for (const char* k :
                     {"units_per_pod", "cores", "spine_oversubscription", "spine_core_latency"})
                {
                    if (fb.Has(k))
                    {
                        fb.Fail(k, "only applies to a three-tier fabric");
                    }
                }
            }
        }
        const GeneratedSize size = GeneratedSizeOf(t, nodes, fab);
        if (size.devices > kMaxGeneratedDevices || size.links > kMaxGeneratedLinks)
        {
            gen.Fail(gen.Has("fabric") ? "fabric" : "nodes",
                     std::to_string(nodes) + " nodes of " + std::to_string(t.gpus) +
                         " GPUs with this fabric make " + std::to_string(size.devices) +
                         " devices and " + std::to_string(size.links) +
                         " links; a generated cluster may have at most " +
                         std::to_string(kMaxGeneratedDevices) + " and " +
                         std::to_string(kMaxGeneratedLinks));
        }
        try
        {
            AddNodes(*topo, t, 0, nodes);
            AddFabric(*topo, fab, nodes, NicsPerNode(t), t.nicBandwidth);
        }
        catch (const TopologyError& e)
        {
            throw TopologyError(Where(file, genNode) + ": field 'generate': " + e.what());
        }
        for (const Device& d : topo->Devices())
        {
            deviceWhere[d.name] = Where(file, genNode);
        }
    }

    if (top.Has("devices"))
    {
        YAML::Node list = top.Get("devices");
        if (!list.IsSequence())
        {
            top.Fail("devices", "expected a list of devices");
        }
        std::map<int32_t, int32_t> nextIndex; // node -> next free local GPU index
        // (node, local index) -> GPU name: the pair fixes the GPU's global number, so it is unique.
        std::map<std::pair<int32_t, int32_t>, std::string> gpuSlots;
        for (const Device& d : topo->Devices())
        {
            if (d.kind == DeviceKind::Gpu)
            {
                nextIndex[d.node] = std::max(nextIndex[d.node], d.localIndex + 1);
                gpuSlots[{d.node, d.localIndex}] = d.name;
            }
        }
        for (const YAML::Node& item : list)
        {
            Fields f(file, item, "device");
            f.Allow({"name", "type", "node", "index", "tier", "model", "host_bridge"});
            Device d;
            d.name = f.String("name");
            try
            {
                d.kind = DeviceKindFromString(f.String("type"));
            }
            catch (const TopologyError& e)
            {
                f.Fail("type", e.what());
            }
            const bool gpu = d.kind == DeviceKind::Gpu;
            if (gpu && !f.Has("node"))
            {
                f.Get("node"); // throws "missing"
            }
            d.node = static_cast<int32_t>(f.Int("node", 0, -1));
            d.tier = static_cast<int32_t>(f.Int("tier", 0, d.kind == DeviceKind::Switch ? 1 : 0));
            if (f.Has("host_bridge") && d.kind != DeviceKind::PcieSwitch)
            {
                f.Fail("host_bridge", "only a pcie-switch can be the CPU's root complex");
            }
            d.hostBridge = f.Bool("host_bridge", false);
            if (f.Has("index"))
            {
                d.localIndex = static_cast<int32_t>(f.Int("index", 0));
            }
            else if (gpu)
            {
                d.localIndex = nextIndex[d.node];
            }
            if (gpu)
            {
                auto [slot, fresh] = gpuSlots.emplace(std::pair{d.node, d.localIndex}, d.name);
                if (!fresh)
                {
                    f.Fail(f.Has("index") ? "index" : "node",
                           "GPU " + std::to_string(d.localIndex) + " of node " +
                               std::to_string(d.node) + " is already '" + slot->second + "'");
                }
                nextIndex[d.node] = std::max(nextIndex[d.node], d.localIndex + 1);
                if (f.Has("model"))
                {
                    d.model = f.String("model");
                    uses.push_back({d.model, Where(file, f.Get("model")), "model"});
                }
                else if (!defaultModel.empty())
                {
                    d.model = defaultModel;
                    uses.push_back({d.model,
                                    Where(file, top.Has("gpu_model") ? top.Get("gpu_model") : item),
                                    "gpu_model"});
                }
                else
                {
                    f.Fail("model", "missing, and the file sets no gpu_model default");
                }
            }
            else if (f.Has("model"))
            {
                f.Fail("model", "only GPUs have a model");
            }
            if (topo->HasDevice(d.name))
            {
                f.Fail("name", "duplicate device name '" + d.name + "'");
            }
            topo->AddDevice(d);
            deviceWhere[d.name] = Where(file, item);
        }
    }

    if (top.Has("links"))
    {
        YAML::Node list = top.Get("links");
        if (!list.IsSequence())
        {
            top.Fail("links", "expected a list of links");
        }
        for (const YAML::Node& item : list)
        {
            Fields f(file, item, "link");
            f.Allow({"a", "b", "bandwidth", "latency", "type", "count"});
            Link l;
            for (const char* end : {"a", "b"})
            {
                std::string name = f.String(end);
                if (!topo->HasDevice(name))
                {
                    f.Fail(end, "no device named '" + name + "'");
                }
                (std::string(end) == "a" ? l.a : l.b) = topo->FindDevice(name);
            }
            if (l.a == l.b)
            {
                f.Fail("b", "a link cannot join '" + f.String("a") + "' to itself");
            }
            l.bandwidth = LinkBandwidth(f, "bandwidth");
            l.latencyNs = LinkLatency(f, "latency");
            if (f.Has("type"))
            {
                try
                {
                    l.kind = LinkKindFromString(f.String("type"));
                }
                catch (const TopologyError& e)
                {
                    f.Fail("type", e.what());
                }
            }
            else
            {
                // Inferred from the endpoints: NVSwitch or GPU-GPU is NVLink, PCIe switch or host
                // is PCIe, the rest is the network.
                DeviceKind ka = topo->GetDevice(l.a).kind;
                DeviceKind kb = topo->GetDevice(l.b).kind;
                auto either = [&](DeviceKind k) { return ka == k || kb == k; };
                if (either(DeviceKind::NvSwitch) ||
                    (ka == DeviceKind::Gpu && kb == DeviceKind::Gpu))
                {
                    l.kind = LinkKind::NvLink;
                }
                else if (either(DeviceKind::PcieSwitch) || either(DeviceKind::Host))
                {
                    l.kind = LinkKind::Pcie;
                }
                else
                {
                    l.kind = LinkKind::Net;
                }
            }
            const int64_t count = f.Int("count", 1, 1);
            if (count > 1024)
            {
                f.Fail("count", "at most 1024 parallel links");
            }
            for (int64_t i = 0; i < count; ++i)
            {
                topo->AddLink(l);
            }
        }
    }

    std::string specDirField = top.Has("gpu_specs") ? top.String("gpu_specs") : std::string();
    std::string specDir = ResolveGpuSpecDir(file, specDirField, options);
    std::string specWhere = top.Has("gpu_specs") ? Where(file, top.Get("gpu_specs")) : file;
    Finish(*topo, file, specDir, specWhere, uses, deviceWhere, Where(file, root));
    NS_LOG_INFO(file << ": " << topo->GpuCount() << " GPUs, " << topo->Devices().size()
                     << " devices, " << topo->Links().size() << " links");
    return topo;
}

Ptr<Topology>
ImportTextTopology(const std::string& text, const std::string& file,
                   const TopologyReadOptions& options)
{
    TextTopology parsed = ParseTextTopology(text, file, options.defaultGpuModel);
    Ptr<Topology> topo = parsed.topology;
    topo->source = file;
    std::vector<ModelUse> uses;
    std::set<std::string> seen;
    for (const Device& d : topo->Devices())
    {
        if (d.kind == DeviceKind::Gpu && seen.insert(d.model).second)
        {
            uses.push_back(
                {d.model, file + ":" + std::to_string(parsed.modelLine), parsed.modelField});
        }
    }
    std::map<std::string, std::string> deviceWhere;
    for (const auto& [name, line] : parsed.deviceLines)
    {
        deviceWhere[name] = file + ":" + std::to_string(line);
    }
    Finish(*topo, file, ResolveGpuSpecDir(file, "", options), file + ":1", uses, deviceWhere,
           file + ":1");
    return topo;
}

Ptr<Topology>
ReadTopology(const std::string& path)
{
    return ReadTopology(path, TopologyReadOptions());
}

Ptr<Topology>
ReadTopology(const std::string& path, const TopologyReadOptions& options)
{
    const std::string text = ReadFile(path);
    if (LooksLikeText(path, text))
    {
        return ImportTextTopology(text, path, options);
    }
    return ReadTopologyFromString(text, path, options);
}

} // namespace eidolon
} // namespace ns3
