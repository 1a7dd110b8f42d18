/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * GPU spec files (ns3-module/doc/gpu-spec.md); every error names the file, the 1-based line and
 * the field.
 */
#include "gpu-spec.h"

#include "spec-fields.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace eidolon
{
namespace spec
{

namespace fs = std::filesystem;

namespace
{

std::string
KnownModels(const std::map<std::string, GpuSpec>& specs)
{
    std::string known;
    for (const auto& [name, spec] : specs)
    {
        known += (known.empty() ? "" : ", ") + name;
    }
    return known.empty() ? std::string("none") : known;
}

void
ReadComputeCapability(const Fields& f, GpuSpec& s)
{
    std::string cc = f.String("compute_capability");
    int major = 0;
    int minor = 0;
    char dot = 0;
    std::istringstream in(cc);
    if (!(in >> major >> dot >> minor) || dot != '.' || !in.eof() || major <= 0 || minor < 0)
    {
        f.Fail("compute_capability", "expected major.minor such as \"9.0\", got '" + cc + "'");
    }
    s.computeCapabilityMajor = major;
    s.computeCapabilityMinor = minor;
}

void
ReadMemory(const Fields& f, GpuSpec& s)
{
    s.memoryClockMhz = f.Positive("memory_clock_mhz");
    s.memoryBusWidthBits = static_cast<int>(f.Int("memory_bus_width_bits", 1));
    s.memoryBytes = f.Bytes("memory");
    s.memoryUsableBytes = s.memoryBytes;
    if (f.Has("memory_usable"))
    {
        s.memoryUsableBytes = f.Bytes("memory_usable");
        if (s.memoryUsableBytes > s.memoryBytes)
        {
            f.Fail("memory_usable", "exceeds memory");
        }
    }
    s.hbmBandwidth = f.Bandwidth("hbm_bandwidth");
    s.l2CacheBytes = f.Bytes("l2_cache");
    s.sharedMemoryPerSmBytes = f.Bytes("shared_memory_per_sm");
}

void
ReadDenseTflops(const Fields& f, GpuSpec& s)
{
    Fields t(f.File(), f.Get("dense_tflops"), "dense_tflops");
    t.Allow({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"});
    for (const char* d : {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"})
    {
        if (t.Has(d)) // null or absent: the GPU has no such units
        {
            s.denseTflops[d] = t.Positive(d);
        }
    }
    if (s.denseTflops.empty())
    {
        f.Fail("dense_tflops", "no rate given");
    }
    // The roofline prices plain kernels at fp32, and a dtype the file does not list at it too.
    if (!s.denseTflops.count("fp32"))
    {
        f.Fail("dense_tflops", "no fp32 rate (kernels are priced at it)");
    }
}

void
ReadLinks(const Fields& f, GpuSpec& s)
{
    Fields n(f.File(), f.Get("nvlink"), "nvlink");
    n.Allow({"generation", "links", "bandwidth"});
    s.nvlinkGeneration = static_cast<int>(n.Int("generation", 0));
    s.nvlinkLinks = static_cast<int>(n.Int("links", 0));
    s.nvlinkBandwidth = s.nvlinkLinks > 0 ? n.Bandwidth("bandwidth") : 0;

    Fields p(f.File(), f.Get("pcie"), "pcie");
    p.Allow({"generation", "bandwidth"});
    s.pcieGeneration = static_cast<int>(p.Int("generation", 1));
    s.pcieBandwidth = p.Bandwidth("bandwidth");
    s.copyEngineEfficiency = f.Positive("copy_engine_efficiency");
    if (s.copyEngineEfficiency > 1)
    {
        f.Fail("copy_engine_efficiency", "is a fraction of the link rate, at most 1");
    }
}

void
ReadSources(const Fields& f, GpuSpec& s)
{
    YAML::Node sources = f.Get("sources");
    if (!sources.IsSequence() || sources.size() == 0)
    {
        f.Fail("sources", "expected a non-empty list of references");
    }
    for (const YAML::Node& src : sources)
    {
        if (!src.IsScalar())
        {
            throw SpecError(Where(f.File(), src) +
                            ": field 'sources': each entry is one line of text");
        }
        s.sources.push_back(src.Scalar());
    }
}

} // namespace

DenseFlops
DenseFlopsOf(const GpuSpec& spec)
{
    auto rate = [&spec](const char* dtype)
    {
        auto it = spec.denseTflops.find(dtype);
        return it == spec.denseTflops.end() ? 0.0 : it->second * 1e12;
    };
    return {rate("fp64"), rate("fp32"), rate("tf32"), rate("bf16"),
            rate("fp16"), rate("fp8"),  rate("int8")};
}

GpuSpec
ReadGpuSpec(const std::string& path)
{
    const std::string text = ReadFile(path);
    YAML::Node root = LoadYaml(text, path);
    Fields f(path, root, "GPU spec");
    f.Allow({"name",
             "marketing_name",
             "compute_capability",
             "sm_count",
             "boost_clock_mhz",
             "memory_clock_mhz",
             "memory_bus_width_bits",
             "memory",
             "memory_usable",
             "hbm_bandwidth",
             "l2_cache",
             "shared_memory_per_sm",
             "max_threads_per_sm",
             "dense_tflops",
             "nvlink",
             "pcie",
             "copy_engine_efficiency",
             "launch_overhead_us",
             "launch_latency_us",
             "pricing",
             "sources",
             "notes"});
    GpuSpec s;
    s.name = f.String("name");
    const std::string stem = fs::path(path).stem().string();
    if (s.name != stem)
    {
        f.Fail("name", "'" + s.name + "' must match the file name '" + stem +
                           "' (models are looked up by file)");
    }
    s.marketingName = f.String("marketing_name");
    ReadComputeCapability(f, s);
    s.smCount = static_cast<int>(f.Int("sm_count", 1));
    s.boostClockMhz = f.Positive("boost_clock_mhz");
    ReadMemory(f, s);
    s.maxThreadsPerSm = static_cast<int>(f.Int("max_threads_per_sm", 1));
    ReadDenseTflops(f, s);
    ReadLinks(f, s);
    s.launchOverheadUs = f.Positive("launch_overhead_us");
    s.launchLatencyUs = f.Positive("launch_latency_us");
    ReadSources(f, s);
    s.pricing = ReadPricingSpec(f);
    return s;
}

std::map<std::string, GpuSpec>
LoadGpuSpecs(const std::string& dir)
{
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
    {
        throw SpecError("GPU spec directory '" + dir + "' does not exist");
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
    {
        if (entry.is_regular_file() && entry.path().extension() == ".yaml")
        {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    std::map<std::string, GpuSpec> specs;
    for (const fs::path& p : files)
    {
        GpuSpec s = ReadGpuSpec(p.string());
        specs[s.name] = std::move(s);
    }
    if (specs.empty())
    {
        throw SpecError("GPU spec directory '" + dir + "' holds no *.yaml spec");
    }
    return specs;
}

const GpuSpec&
FindGpuSpec(const std::map<std::string, GpuSpec>& specs, const std::string& model)
{
    auto it = specs.find(model);
    if (it == specs.end())
    {
        throw SpecError("unknown GPU model '" + model + "' (known: " + KnownModels(specs) + ")");
    }
    return it->second;
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
            return ReadGpuSpec(path);
        }
        looked += " " + path;
    }
    throw SpecError("GPU spec '" + name + "' not found; looked at:" + looked +
                    " (set EIDOLON_GPU_SPEC_DIR or EIDOLON_GPU)");
}

} // namespace spec
} // namespace eidolon
