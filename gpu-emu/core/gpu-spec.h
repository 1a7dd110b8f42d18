// The GPU a rank emulates, as gpu-emu names it: the spec library's figures (spec/gpu-spec.h), read
// from topologies/gpus/<NAME>.yaml by the same reader the simulator uses.
#pragma once

#include "spec/gpu-spec.h"

namespace eidolon::gpu
{

using spec::DenseFlops;
using spec::AttentionRates;
using spec::DenseFlopsOf;
using spec::DTypeFractions;
using spec::FindGpuSpec;
using spec::GpuSpec;
using spec::PricingSpec;
using spec::ReadGpuSpec;

} // namespace eidolon::gpu
