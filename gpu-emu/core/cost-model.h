// Pricing GPU work (DESIGN.md "Pricing GPU work"): a chain of providers; the first that knows an op
// prices it, and the model keeps per-provider totals so a run can report its pricing coverage.
#pragma once

#include "gpu-spec.h"
#include "host-clock.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace eidolon::gpu
{

struct Dim3
{
    unsigned x = 1, y = 1, z = 1;
    uint64_t Count() const { return uint64_t(x) * y * z; }
};

// A kernel as registered by the program (__cudaRegisterFunction) or loaded by name (cuModule).
struct KernelFamily;

struct KernelInfo
{
    std::string mangledName;
    std::string name;                     // demangled, without a leading "void " (matching key)
    const KernelFamily* family = nullptr; // roofline family from the name; null: look it up
    int64_t argBytes = -1;                // total parameter bytes (from the cubin), -1 unknown
    // Its name is no kernel the host runs (host-kernels.cc), known after its first launch, so
    // that later launches skip the name checks. Written under the emulator's lock.
    mutable bool notRunOnHost = false;
    // cudaFuncAttributeMaxDynamicSharedMemorySize as the program set it (48 KiB by default).
    mutable int maxDynamicSharedBytes = 48 * 1024;
};

struct KernelLaunch
{
    const KernelInfo* kernel;
    Dim3 grid;
    Dim3 block;
    uint64_t sharedMemBytes = 0;
    int64_t argBytes = -1; // total parameter bytes when known, -1 otherwise
    // The launch's argument array (cudaLaunchKernel's `args`: one pointer per parameter, valid
    // only while the launch is priced), or null when the launch path does not carry it.
    void* const* args = nullptr;
};

enum class DType
{
    F64,
    F32,
    TF32,
    F16,
    BF16,
    F8,
    I8,
};

const char* DTypeName(DType type);
int DTypeBytes(DType type);

// cuBLASLt epilogues that change a GEMM's price (bias adds are part of the output write).
enum class GemmEpilogue
{
    None,
    Bias,
    Gelu,
    GeluBias,
};

struct GemmShape
{
    int64_t m = 0, n = 0, k = 0, batch = 1;
    DType inputType = DType::F32; // A and B
    DType mathType = DType::F32;  // the tensor-core / FMA rate that applies
    int outputBytes = 4;
    bool transA = false, transB = false;
    GemmEpilogue epilogue = GemmEpilogue::None;
    // A leading dimension that is not a multiple of 16 bytes: cuBLAS falls back to align-1 kernels.
    bool unaligned = false;
    // Batched with a batch stride of 0: one A (or B) that every product reads (a shared weight;
    // an expanded tensor's bmm): its bytes come from memory once, the batch's CTAs meet in L2.
    bool sharedA = false, sharedB = false;
};

// What the GEMM model decided for a shape: the tile and split-K the heuristic picks, how the CTAs
// fall into waves over the SMs, and the parts of the time.
struct GemmPlan
{
    int tileM = 0, tileN = 0, splitK = 1;
    int64_t ctas = 0;
    int64_t waves = 0;
    Ns mainloopNs = 0;  // waves of tiles at the tile's rate (compute)
    Ns memoryNs = 0;    // operand and output traffic at the achievable bandwidth
    Ns reductionNs = 0; // split-K: workspace traffic and the reduction kernel
    Ns totalNs = 0;     // the price: fixed + max(mainloop, memory) [x epilogue] + reduction + gap
};

// Flash-attention-style kernels: FA2 (PyTorch's flash backend, Ampere-style mma) or Hopper-native
// (FA3, cuDNN's sm90 kernels), forward or backward.
enum class AttentionKind
{
    Fa2,
    Fa3,
    // CUTLASS memory-efficient kernels (xformers; PyTorch's fmha_cutlassF/B): FA2's rates scaled
    // by kMemEfficientOfFa2 (cost-model.cc).
    MemEfficient,
};

struct AttentionShape
{
    int64_t batch = 1, heads = 1, seqQ = 0, seqK = 0, headDim = 64;
    bool causal = false;
    bool backward = false;
    AttentionKind kind = AttentionKind::Fa2;
    // Matmuls of sq x sk x d per head the kernel does; 0: a whole pass (2 forward, 5 backward).
    // A backward split into a dK/dV kernel (S, dP, dV, dK: 4) and a dQ kernel (S, dP, dQ: 3)
    // prices each kernel's share.
    int matmuls = 0;
};

// Matmul FLOPs of attention: 2*matmuls*b*h*sq*sk*d, halved by a causal mask. A whole forward pass
// is 4*b*h*sq*sk*d (QK^T and PV); a whole backward 2.5x that (five matmuls to the forward's two).
double AttentionFlops(const AttentionShape& shape);

struct Price
{
    Ns duration;
    const char* provider;
};

// The memory-bound part of the pricing (DESIGN.md: memory-bound work at the bandwidth real kernels
// reach): bytesMoved over the L2 rate when footprint fits in the spec's L2-resident size, else over
// hbm_bandwidth x efficiency; plus the kernel floor and the back-to-back gap.
Ns MemoryBoundNs(double bytesMoved, double footprint, double efficiency, const GpuSpec& spec,
                 Ns floorNs);
// A memory-bound kernel whose threads each load `inFlightPerThread` bytes, wait for them and move
// on (one batch of loads per block, or a grid-stride loop that is not unrolled): with
// `residentThreadsPerSm` threads on every SM the GPU has SMs x resident x inFlightPerThread bytes
// of reads outstanding, which by Little's law return at most once per pricing.loadRoundNs.
// The price is MemoryBoundNs or, when slower, bytesRead at that rate (HBM-resident data only; an
// L2-resident footprint returns faster than the round the constant was measured on).
Ns LatencyBoundMemoryNs(double bytesMoved, double footprint, double bytesRead,
                        double inFlightPerThread, double residentThreadsPerSm, double efficiency,
                        const GpuSpec& spec, Ns floorNs);
// `count` atomics on one address: they serialise at its L2 slice, pricing.sameAddressAtomicNs
// each (0 when the spec has no such figure). A kernel that also streams memory overlaps the two:
// price max(MemoryBoundNs, floor + this + gap).
Ns SameAddressAtomicsNs(double count, const GpuSpec& spec);
// Copies and memsets placed on a stream: device-to-device (reads and writes every byte), memset,
// host<->device over PCIe (pinned or pageable) and peer copies over NVLink.
Ns DeviceCopyNs(uint64_t bytes, const GpuSpec& spec);
Ns MemsetNs(uint64_t bytes, const GpuSpec& spec);
Ns HostCopyNs(uint64_t bytes, bool toDevice, bool pinned, const GpuSpec& spec);
Ns PeerCopyNs(uint64_t bytes, const GpuSpec& spec);
// A copy between two GPUs without peer access: the driver stages it through pinned host memory,
// device-to-host over the source's PCIe and host-to-device over the destination's, in chunks that
// overlap; both legs run at the pinned rate, so the bytes cross once at that rate and each leg
// adds its latency.
Ns StagedPeerCopyNs(uint64_t bytes, const GpuSpec& spec);
// The stream's share of a copy from or to pageable host memory: the driver's staged pipeline takes
// HostCopyNs(pageable) end to end, `stagedNs` of which the host already spent staging before the
// copy reached the stream; what is left, never less than the DMA itself at the pinned rate.
Ns PageableCopyNs(uint64_t bytes, bool toDevice, Ns stagedNs, const GpuSpec& spec);
// The GEMM model's plan (see GemmModel).
// `operandBytes` >= 0 replaces the operand and output traffic the shape implies (an implicit-GEMM
// convolution reads its tensors, not the im2col matrix its GEMM's A would be).
GemmPlan PlanGemm(const GemmShape& shape, const GpuSpec& spec, Ns minKernelNs,
                  double operandBytes = -1);
// Price of one attention kernel from its FLOPs at the spec's attention rates.
Ns AttentionNs(const AttentionShape& shape, const GpuSpec& spec, Ns minKernelNs);

class CostProvider
{
public:
    virtual ~CostProvider() = default;
    virtual const char* Name() const = 0;
    virtual std::optional<Ns> PriceKernel(const KernelLaunch&, const GpuSpec&)
    {
        return std::nullopt;
    }
    virtual std::optional<Ns> PriceGemm(const GemmShape&, const GpuSpec&) { return std::nullopt; }
};

// Roofline of a kernel family: bytes and FLOPs per launched thread.
struct KernelFamily
{
    const char* name;
    double bytesPerThread;
    double flopsPerThread;
};

// The roofline family whose keyword occurs first in the demangled name ("generic" if none).
const KernelFamily& FamilyOf(const std::string& demangledName);

// Launch-geometry roofline: threads = grid * block;
// duration = max(threads * bytesPerThread / hbm_bandwidth, threads * flopsPerThread / fp32_peak,
//                minKernelNs).
class RooflineModel : public CostProvider
{
public:
    explicit RooflineModel(Ns minKernelNs)
        : m_minKernelNs(minKernelNs)
    {
    }
    const char* Name() const override { return "roofline"; }
    std::optional<Ns> PriceKernel(const KernelLaunch& launch, const GpuSpec& spec) override;

private:
    Ns m_minKernelNs;
};

// cuBLAS/cuBLASLt GEMM (gpu-emu/README.md "The GEMM model"). For each output tile the GPU's
// kernels offer (by compute capability) and each split-K count, CTAs = tiles x split fall into
// waves over the SMs; a wave takes 2*tileM*tileN*(k/split + tile_overhead_k) FLOP per CTA at
// min(active SMs x per-SM rate x tile efficiency, GPU-wide sustained rate); memory is the operand
// and output traffic at HBM (or L2, when it fits) rate; the heuristic keeps the fastest plan.
class GemmModel : public CostProvider
{
public:
    explicit GemmModel(Ns minKernelNs)
        : m_minKernelNs(minKernelNs)
    {
    }
    const char* Name() const override { return "gemm-model"; }
    std::optional<Ns> PriceGemm(const GemmShape& shape, const GpuSpec& spec) override;

private:
    Ns m_minKernelNs;
};

// PyTorch's own kernels recognised by name and launch geometry (elementwise, multi-tensor-apply
// optimizers, flash-attention forward/backward and its helpers): bytes and FLOPs from the element
// count the geometry implies, priced by MemoryBoundNs and AttentionNs. Others pass down the chain.
class KernelFamilyModel : public CostProvider
{
public:
    explicit KernelFamilyModel(Ns minKernelNs)
        : m_minKernelNs(minKernelNs)
    {
    }
    const char* Name() const override { return "kernel-family"; }
    std::optional<Ns> PriceKernel(const KernelLaunch& launch, const GpuSpec& spec) override;

private:
    Ns m_minKernelNs;
};

// Peak dense rate of a math type from the spec (FLOP/s).
double PeakFlops(DType mathType, const GpuSpec& spec);

class CostModel
{
public:
    struct ProviderTotals
    {
        uint64_t ops = 0;
        Ns gpuTime = 0;
    };

    void Add(std::unique_ptr<CostProvider> provider) { m_chain.push_back(std::move(provider)); }
    Price PriceKernel(const KernelLaunch& launch, const GpuSpec& spec);
    Price PriceGemm(const GemmShape& shape, const GpuSpec& spec);
    // Counts an op placed on a device timeline (pricing alone counts nothing: a captured graph
    // node is counted each time the graph is launched).
    void Count(const char* provider, Ns duration);
    // Totals by provider name.
    std::map<std::string, ProviderTotals> Totals() const;

private:
    std::vector<std::unique_ptr<CostProvider>> m_chain;
    std::map<const char*, ProviderTotals> m_totals; // keyed by the providers' static names
};

} // namespace eidolon::gpu
