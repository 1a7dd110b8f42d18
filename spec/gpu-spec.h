/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: the public figures of one GPU model (topologies/gpus/<name>.yaml, schema
 * in ns3-module/doc/gpu-spec.md), read in this one place for the simulator and for the ranks.
 */
#ifndef EIDOLON_SPEC_GPU_SPEC_H
#define EIDOLON_SPEC_GPU_SPEC_H

#include "pricing-spec.h"
#include "spec-error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace eidolon
{
namespace spec
{

/**
 * Public figures of one GPU model; rates are dense (no 2:4 sparsity). To add a figure: a member
 * here, its key in ReadGpuSpec's allowed list and its read there (gpu-spec.cc), and its row in
 * ns3-module/doc/gpu-spec.md.
 */
struct GpuSpec
{
    std::string name;          //!< e.g. "H100-SXM5-80GB"; equals the file name without .yaml
    std::string marketingName; //!< what cudaGetDeviceProperties reports: "NVIDIA H100 80GB HBM3"
    int computeCapabilityMajor = 0;
    int computeCapabilityMinor = 0;
    int smCount = 0;
    double boostClockMhz = 0;
    double memoryClockMhz = 0;
    int memoryBusWidthBits = 0;
    uint64_t memoryBytes = 0;       //!< capacity as NVIDIA states it (e.g. 80 GiB)
    uint64_t memoryUsableBytes = 0; //!< total that cudaMemGetInfo reports; memoryBytes if unsaid
    double hbmBandwidth = 0;        //!< bytes/s
    uint64_t l2CacheBytes = 0;
    uint64_t sharedMemoryPerSmBytes = 0;
    int maxThreadsPerSm = 0;
    /// dtype ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8") -> TFLOP/s (TOPS for int8),
    /// as the file writes them; a dtype the GPU has no units for is absent. fp32 is always there.
    std::map<std::string, double> denseTflops;
    int nvlinkGeneration = 0;
    int nvlinkLinks = 0;
    double nvlinkBandwidth = 0; //!< bytes/s per direction, all links together; 0 without NVLink
    int pcieGeneration = 0;
    double pcieBandwidth = 0;          //!< bytes/s per direction (x16)
    double copyEngineEfficiency = 1.0; //!< fraction of the PCIe rate a pinned cudaMemcpy achieves
    double launchOverheadUs = 0;       //!< host-side cost of one kernel launch
    double launchLatencyUs = 0;        //!< from launch call to kernel start on an idle stream
    std::vector<std::string> sources;  //!< where each figure comes from
    PricingSpec pricing;               //!< what real kernels reach ("pricing:", optional)
};

/// The dense rates of a GpuSpec in operations per second, one member per dtype; 0 where the GPU
/// has no such units. A view of GpuSpec::denseTflops for code that prices by dtype.
struct DenseFlops
{
    double fp64 = 0;
    double fp32 = 0;
    double tf32 = 0;
    double bf16 = 0;
    double fp16 = 0;
    double fp8 = 0;
    double int8 = 0;
};

DenseFlops DenseFlopsOf(const GpuSpec& spec);

/// Reads one GPU spec file; throws SpecError naming file, line and field.
GpuSpec ReadGpuSpec(const std::string& path);
/// Reads every *.yaml in dir, keyed by GpuSpec::name; throws SpecError if there is none.
std::map<std::string, GpuSpec> LoadGpuSpecs(const std::string& dir);
/// Looks a model up; throws SpecError listing the known models if it is absent.
const GpuSpec& FindGpuSpec(const std::map<std::string, GpuSpec>& specs, const std::string& model);
/// Reads <dir>/<name>.yaml from the first of dirs that has it; throws SpecError naming every
/// place looked at when none has it.
GpuSpec FindGpuSpec(const std::string& name, const std::vector<std::string>& dirs);

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_GPU_SPEC_H
