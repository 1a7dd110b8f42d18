// The `pricing:` block of a GPU spec (topologies/gpus/<NAME>.yaml): what real kernels reach on that
// GPU, as opposed to its datasheet. Every field is optional; an absent one keeps the neutral
// default below (datasheet rates, no fixed costs), so a spec without the block prices as a plain
// roofline. Field meanings: ns3-module/doc/gpu-spec.md ("pricing"); each figure's source: the
// comments in topologies/gpus/<NAME>.yaml.
#pragma once

#include <cstdint>
#include <string>

namespace eidolon::spec
{

class Fields;

// Fractions of the dense datasheet peak, one per math type.
struct DTypeFractions
{
    double fp64 = 0.8;
    double fp32 = 0.8;
    double tf32 = 0.8;
    double bf16 = 0.8;
    double fp16 = 0.8;
    double fp8 = 0.8;
    double int8 = 0.8;
};

// Sustained attention rate as a fraction of the bf16 dense peak, at head dims 64, 128 and 256.
struct AttentionRates
{
    double hd64 = 0;
    double hd128 = 0;
    double hd256 = 0;
};

struct PricingSpec
{
    // GEMM (cuBLAS/cuBLASLt): a GPU-wide sustained fraction per math type (power/clock limited,
    // large shapes), a per-SM mainloop fraction that applies when few SMs are busy, the operand
    // traffic penalty of a tile (eff = 1 / (1 + penalty * (1/tileM + 1/tileN))), the prologue and
    // epilogue of one tile in k steps, and the fixed cost of a GEMM kernel body.
    DTypeFractions gemmEfficiency;
    double gemmSmEfficiency = 0.8;
    double gemmTilePenalty = 0;
    double gemmTileOverheadK = 0;
    double gemmFixedNs = 0;
    double gemmGeluFactor = 1.0;        // a GELU epilogue multiplies the time by this
    double gemmUnalignedEfficiency = 0; // leading dimension not a multiple of 16 bytes (0: ignore)
    // Every kernel: its body never takes less than kernelMinNs (0: the emulator's configured
    // floor), and back-to-back kernels on one stream are kernelGapNs apart (part of each kernel's
    // price).
    double kernelMinNs = 0;
    double kernelGapNs = 0;
    // Memory-bound kernels and copies: achievable fractions of hbm_bandwidth; data whose footprint
    // fits in l2ResidentBytes moves at l2BytesPerSecond instead (0: no L2 regime).
    double hbmEfficiency = 1.0;
    double memcpyEfficiency = 1.0;
    double memsetEfficiency = 1.0;
    double l2BytesPerSecond = 0;
    uint64_t l2ResidentBytes = 0;
    // Host <-> device copies: fixed cost of a copy on the device timeline, and the bandwidth of
    // pinned and pageable (driver-staged) copies; 0 means pcie bandwidth x copy_engine_efficiency.
    double hostCopyLatencyNs = 0;
    double pinnedBytesPerSecond = 0;
    double pageableH2DBytesPerSecond = 0;
    double pageableD2HBytesPerSecond = 0;
    // Latency-bound memory access (kernel-families.cc): a kernel whose threads each issue one batch
    // of loads and exit reads at most (resident threads x bytes a thread has in flight) per
    // loadRoundNs (Little's law; 0: no such bound); atomics on one address serialise at
    // sameAddressAtomicNs each (0: not priced).
    double loadRoundNs = 0;
    double sameAddressAtomicNs = 0;
    // One global load whose address depends on the previous one (a serial chain: an index, then
    // the row it names), from L2-resident data (0: not priced).
    double dependentLoadNs = 0;
    // Attention: flash-attention-2 style kernels (FA2, PyTorch's flash backend, Ampere-style mma)
    // and Hopper-native ones (FA3, cuDNN's sm90 kernels), forward and backward.
    AttentionRates fa2Forward, fa2Backward, fa3Forward, fa3Backward;
    double attentionCausalEfficiency = 1.0; // load imbalance of the causal mask's diagonal blocks
    bool present = false;                   // the spec had a pricing block
};

// Reads the GPU spec's optional `pricing:` mapping (absent: the defaults above). Throws SpecError
// naming the file, line and field ("pricing.attention.fa2_forward.hd64").
PricingSpec ReadPricingSpec(const Fields& gpuSpec);

} // namespace eidolon::spec
