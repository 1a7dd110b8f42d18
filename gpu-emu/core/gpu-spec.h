// The GPU a rank emulates, as gpu-emu names it: the spec library's figures (spec/gpu-spec.h), read
// from topologies/gpus/<NAME>.yaml by the same reader the simulator uses.
#pragma once

#include "spec/gpu-spec.h"

namespace eidolon::gpu
{

using spec::AttentionRates;
using spec::DenseFlops;
using spec::DenseFlopsOf;
using spec::DTypeFractions;
using spec::FindGpuSpec;
using spec::GpuSpec;
using spec::PricingSpec;
using spec::ReadGpuSpec;

// The most dynamic shared memory a block may opt in to (cudaDeviceProp::sharedMemPerBlockOptin):
// an SM's shared memory less the 1 KiB the system reserves per block (227 KiB on H100).
inline uint64_t
SharedMemPerBlockOptin(const GpuSpec& spec)
{
    return spec.sharedMemoryPerSmBytes > 1024 ? spec.sharedMemoryPerSmBytes - 1024 : 0;
}

} // namespace eidolon::gpu
