// `eidolon topo ...`: validate and summarise cluster descriptions.
#include "commands.h"

#include "ns3/cluster-helper.h"
#include "ns3/topology-reader.h"
#include "ns3/topology.h"

#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <string>

namespace eidolon::tools
{
namespace
{
using ns3::eidolon::TopologyReadOptions;
using ns3::eidolon::TopologySummary;

std::string
TierName(int32_t tier)
{
    switch (tier)
    {
    case 1:
        return "leaf";
    case 2:
        return "spine";
    case 3:
        return "core";
    default:
        return "tier " + std::to_string(tier);
    }
}

/// Bytes/s as "400 GB/s (3.2 Tb/s)": GPU people think in bytes, network people in bits.
std::string
Rate(double bytesPerSecond)
{
    return fmt::format("{:g} GB/s ({:g} Gb/s)", bytesPerSecond / 1e9, bytesPerSecond * 8 / 1e9);
}

void
Check(const std::string& file, const std::string& gpuSpecs, const std::string& gpuModel)
{
    TopologyReadOptions options;
    options.gpuSpecDir = gpuSpecs;
    options.defaultGpuModel = gpuModel;
    // Files outside topologies/ (an imported SimAI file, say) still find the shipped GPU specs.
    options.fallbackGpuSpecDir =
        (std::filesystem::path(SourceDir()) / "topologies" / "gpus").string();
    // A shipped name ("default", "dgx-h100-4node") works as well as a path.
    const std::string path = ns3::eidolon::ClusterHelper::ResolveTopologyPath(file);
    auto topo = ns3::eidolon::ReadTopology(path, options);
    const TopologySummary s = topo->Summarize();

    fmt::print("topology   {} ({})\n", topo->name, path);
    std::string models;
    for (const auto& [model, count] : s.gpuModels)
    {
        models += fmt::format("{}{} x {}", models.empty() ? "" : ", ", count, model);
    }
    fmt::print("GPUs       {} ({})\n", s.gpus, models);
    fmt::print("nodes      {}\n", s.nodes);
    fmt::print("NICs       {}\n", s.nics);
    std::string tiers;
    for (const auto& [tier, count] : s.switchesByTier)
    {
        tiers += fmt::format("{}{} {}", tiers.empty() ? "" : ", ", count, TierName(tier));
    }
    fmt::print("switches   {}{}\n", s.switches, tiers.empty() ? "" : " (" + tiers + ")");
    fmt::print("NVSwitch   {} domain(s), PCIe switches {}, hosts {}\n", s.nvswitches,
               s.pcieSwitches, s.hosts);
    fmt::print("links      {} full-duplex\n", s.links);
    fmt::print("host       {} (NCCL CPU class {})\n",
               topo->host.empty() ? "h100-server, the default" : topo->host, topo->cpuVendor);
    // What the collective model takes from the transport and SHARP blocks, so that a file's
    // figures can be seen to have been read.
    const auto& t = topo->transport;
    std::string transport = t.kind;
    if (t.kind == "ib" && t.messageLatencyUs == 0 && t.bandwidthShare == 1.0)
    {
        transport += " (InfiniBand verbs with GPUDirect RDMA: NCCL's own figures, nothing added)";
    }
    else
    {
        transport += fmt::format(" ({:g} us a network message, {:g}% of the NIC line rate)",
                                 t.messageLatencyUs, t.bandwidthShare * 100);
    }
    if (t.llProxyRate > 0)
    {
        transport += fmt::format(", LL proxy reads {:g} GB/s", t.llProxyRate / 1e9);
    }
    fmt::print("transport  {}\n", transport);
    if (topo->sharp.present)
    {
        fmt::print("SHARP      v{}, aggregation {}, allgather/reduce-scatter in the network: {}\n",
                   topo->sharp.version,
                   topo->sharp.aggregationBandwidth > 0
                       ? Rate(topo->sharp.aggregationBandwidth) + " a stream"
                       : std::string("at port speed"),
                   topo->sharp.allgatherReduceScatter ? "yes" : "no");
    }
    if (s.gpus >= 2)
    {
        fmt::print("bisection  {} per direction, worst of the halvings tried ({})\n",
                   Rate(s.bisectionBandwidth), s.bisectionCut);
    }
    fmt::print("OK\n");
}
} // namespace

void
RegisterTopoCommands(CLI::App& app)
{
    auto* topo = app.add_subcommand("topo", "cluster topologies");
    topo->require_subcommand(1);
    auto* check = topo->add_subcommand(
        "check",
        "read and validate a topology (YAML, SimAI or HPCC text) and print a summary; exits 1 "
        "with the error (file:line: field ...) on a bad file");
    auto file = std::make_shared<std::string>();
    auto specs = std::make_shared<std::string>();
    auto model = std::make_shared<std::string>();
    check->add_option("file", *file, "topology file")->required();
    check->add_option("--gpu-specs", *specs,
                      "GPU spec directory (default: gpu_specs in the file, $EIDOLON_GPU_SPECS, "
                      "gpus/ beside the file, then the shipped topologies/gpus)");
    check->add_option("--gpu-model", *model,
                      "GPU model for imported text files that do not name one eidolon knows");
    check->callback([file, specs, model] { Check(*file, *specs, *model); });
}
} // namespace eidolon::tools
