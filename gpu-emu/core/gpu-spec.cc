#include "gpu-spec.h"

#include "units.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace eidolon::gpu
{
namespace
{

[[noreturn]] void
Fail(const std::string& path, const std::string& field, const std::string& why)
{
    throw std::runtime_error(path + ": field '" + field + "': " + why);
}

YAML::Node
Required(const YAML::Node& parent, const std::string& path, const std::string& field)
{
    YAML::Node node = parent[field];
    if (!node)
    {
        Fail(path, field, "missing");
    }
    return node;
}

double
Number(const YAML::Node& parent, const std::string& path, const std::string& field)
{
    try
    {
        return Required(parent, path, field).as<double>();
    }
    catch (const YAML::Exception&)
    {
        Fail(path, field, "not a number");
    }
}

double
Bytes(const YAML::Node& parent, const std::string& path, const std::string& field)
{
    YAML::Node node = Required(parent, path, field);
    auto value = ParseBytes(node.as<std::string>());
    if (!value)
    {
        Fail(path, field, "not a size such as 80GiB: '" + node.as<std::string>() + "'");
    }
    return *value;
}

double
Rate(const YAML::Node& parent, const std::string& path, const std::string& field)
{
    YAML::Node node = Required(parent, path, field);
    auto value = ParseBytesPerSecond(node.as<std::string>());
    if (!value)
    {
        Fail(path, field, "not a bandwidth such as 3.35TB/s: '" + node.as<std::string>() + "'");
    }
    return *value;
}

double
Tflops(const YAML::Node& table, const std::string& path, const std::string& field)
{
    YAML::Node node = table[field];
    if (!node || node.IsNull())
    {
        return 0.0; // absent or null: the GPU has no such unit (A100 and fp8)
    }
    try
    {
        return node.as<double>() * 1e12;
    }
    catch (const YAML::Exception&)
    {
        Fail(path, "dense_tflops." + field, "not a number");
    }
}

} // namespace

GpuSpec
LoadGpuSpec(const std::string& path)
{
    YAML::Node root;
    try
    {
        root = YAML::LoadFile(path);
    }
    catch (const YAML::Exception& e)
    {
        throw std::runtime_error(path + ": " + e.what());
    }
    GpuSpec spec;
    spec.name = Required(root, path, "name").as<std::string>();
    spec.marketingName =
        root["marketing_name"] ? root["marketing_name"].as<std::string>() : spec.name;
    std::string cc = Required(root, path, "compute_capability").as<std::string>();
    if (std::sscanf(cc.c_str(), "%d.%d", &spec.ccMajor, &spec.ccMinor) != 2)
    {
        Fail(path, "compute_capability", "expected MAJOR.MINOR, got '" + cc + "'");
    }
    spec.smCount = static_cast<int>(Number(root, path, "sm_count"));
    spec.boostClockMhz = Number(root, path, "boost_clock_mhz");
    spec.memoryClockMhz = root["memory_clock_mhz"] ? Number(root, path, "memory_clock_mhz") : 0;
    spec.memoryBusWidthBits = root["memory_bus_width_bits"]
                                  ? static_cast<int>(Number(root, path, "memory_bus_width_bits"))
                                  : 0;
    spec.memoryBytes = static_cast<uint64_t>(Bytes(root, path, "memory"));
    spec.memoryUsableBytes = root["memory_usable"]
                                 ? static_cast<uint64_t>(Bytes(root, path, "memory_usable"))
                                 : spec.memoryBytes;
    spec.hbmBytesPerSecond = Rate(root, path, "hbm_bandwidth");
    spec.l2Bytes = root["l2_cache"] ? static_cast<uint64_t>(Bytes(root, path, "l2_cache")) : 0;
    spec.sharedMemoryPerSm = root["shared_memory_per_sm"]
                                 ? static_cast<uint64_t>(Bytes(root, path, "shared_memory_per_sm"))
                                 : 0;
    spec.maxThreadsPerSm = root["max_threads_per_sm"]
                               ? static_cast<int>(Number(root, path, "max_threads_per_sm"))
                               : 2048;
    YAML::Node flops = Required(root, path, "dense_tflops");
    spec.denseFlops = {Tflops(flops, path, "fp64"), Tflops(flops, path, "fp32"),
                       Tflops(flops, path, "tf32"), Tflops(flops, path, "bf16"),
                       Tflops(flops, path, "fp16"), Tflops(flops, path, "fp8"),
                       Tflops(flops, path, "int8")};
    if (spec.denseFlops.fp32 <= 0)
    {
        Fail(path, "dense_tflops.fp32", "missing or not positive");
    }
    if (YAML::Node nvlink = root["nvlink"])
    {
        spec.nvlinkGeneration = nvlink["generation"] ? nvlink["generation"].as<int>() : 0;
        spec.nvlinkLinks = nvlink["links"] ? nvlink["links"].as<int>() : 0;
        spec.nvlinkBytesPerSecond = nvlink["bandwidth"] ? Rate(nvlink, path, "bandwidth") : 0;
    }
    YAML::Node pcie = Required(root, path, "pcie");
    spec.pcieGeneration = pcie["generation"] ? pcie["generation"].as<int>() : 0;
    spec.pcieBytesPerSecond = Rate(pcie, path, "bandwidth");
    spec.copyEngineEfficiency =
        root["copy_engine_efficiency"] ? Number(root, path, "copy_engine_efficiency") : 1.0;
    spec.launchOverheadNs = Number(root, path, "launch_overhead_us") * 1e3;
    spec.launchLatencyNs = Number(root, path, "launch_latency_us") * 1e3;
    spec.pricing = LoadPricingSpec(root["pricing"], path);
    return spec;
}

GpuSpec
FindGpuSpec(const std::string& name, const std::vector<std::string>& dirs)
{
    std::string looked;
    for (const auto& dir : dirs)
    {
        std::string path = dir + "/" + name + ".yaml";
        if (std::ifstream(path).good())
        {
            return LoadGpuSpec(path);
        }
        looked += " " + path;
    }
    throw std::runtime_error("GPU spec '" + name + "' not found; looked at:" + looked +
                             " (set EIDOLON_GPU_SPEC_DIR or EIDOLON_GPU)");
}

} // namespace eidolon::gpu
