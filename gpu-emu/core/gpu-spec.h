// A GPU model as read from topologies/gpus/<NAME>.yaml, in SI units (bytes, bytes/s, FLOP/s, ns).
#pragma once

#include "pricing-spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace eidolon::gpu
{

struct DenseFlops
{
    double fp64 = 0;
    double fp32 = 0;
    double tf32 = 0;
    double bf16 = 0;
    double fp16 = 0;
    double fp8 = 0;
    double int8 = 0; // operations per second
};

struct GpuSpec
{
    std::string name;
    std::string marketingName;
    int ccMajor = 0;
    int ccMinor = 0;
    int smCount = 0;
    double boostClockMhz = 0;
    double memoryClockMhz = 0;
    int memoryBusWidthBits = 0;
    uint64_t memoryBytes = 0; // capacity sold ("memory")
    uint64_t memoryUsableBytes =
        0; // what cudaMemGetInfo reports as total ("memory_usable"), or memory
    double hbmBytesPerSecond = 0;
    uint64_t l2Bytes = 0;
    uint64_t sharedMemoryPerSm = 0;
    int maxThreadsPerSm = 0;
    DenseFlops denseFlops;
    int nvlinkGeneration = 0;
    int nvlinkLinks = 0;
    double nvlinkBytesPerSecond = 0; // per direction, all links together
    int pcieGeneration = 0;
    double pcieBytesPerSecond = 0; // per direction
    double copyEngineEfficiency = 1.0;
    double launchOverheadNs = 0; // host CPU cost of one launch call
    double launchLatencyNs = 0;  // from submission to the start of the op on an idle stream
    PricingSpec pricing;         // what real kernels reach ("pricing:", optional)
};

// Reads one spec file. Throws std::runtime_error with the file and field on a bad or missing field.
GpuSpec LoadGpuSpec(const std::string& path);

// Finds <dir>/<name>.yaml in the first directory that has it and loads it; throws
// std::runtime_error naming every place looked at when none has it.
GpuSpec FindGpuSpec(const std::string& name, const std::vector<std::string>& dirs);

} // namespace eidolon::gpu
