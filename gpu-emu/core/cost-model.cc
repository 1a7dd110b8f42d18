#include "cost-model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace eidolon::gpu
{
namespace
{

// Roofline families, first match of a keyword in the demangled kernel name wins. Bytes and FLOPs
// are per launched thread: an elementwise kernel reads two 4-byte operands and writes one.
struct FamilyKeyword
{
    const char* keyword;
    KernelFamily family;
};

const FamilyKeyword kFamilies[] = {
    {"gemm", {"gemm", 64, 256}},
    {"softmax", {"reduction", 8, 8}},
    {"norm", {"reduction", 8, 8}},
    {"reduce", {"reduction", 8, 4}},
    {"elementwise", {"elementwise", 12, 2}},
    {"copy", {"copy", 8, 0}},
    {"fill", {"fill", 4, 0}},
    {"axpy", {"elementwise", 12, 2}},
};

const KernelFamily kGeneric = {"generic", 16, 16};

} // namespace

const char*
DTypeName(DType type)
{
    switch (type)
    {
    case DType::F64:
        return "fp64";
    case DType::F32:
        return "fp32";
    case DType::TF32:
        return "tf32";
    case DType::F16:
        return "fp16";
    case DType::BF16:
        return "bf16";
    case DType::F8:
        return "fp8";
    case DType::I8:
        return "int8";
    }
    return "?";
}

int
DTypeBytes(DType type)
{
    switch (type)
    {
    case DType::F64:
        return 8;
    case DType::F32:
    case DType::TF32:
        return 4;
    case DType::F16:
    case DType::BF16:
        return 2;
    case DType::F8:
    case DType::I8:
        return 1;
    }
    return 4;
}

const KernelFamily&
FamilyOf(const std::string& demangledName)
{
    std::string lower = demangledName;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto& entry : kFamilies)
    {
        if (lower.find(entry.keyword) != std::string::npos)
        {
            return entry.family;
        }
    }
    return kGeneric;
}

double
PeakFlops(DType mathType, const GpuSpec& spec)
{
    const DenseFlops f = DenseFlopsOf(spec);
    double peak = 0;
    switch (mathType)
    {
    case DType::F64:
        peak = f.fp64;
        break;
    case DType::F32:
        peak = f.fp32;
        break;
    case DType::TF32:
        peak = f.tf32;
        break;
    case DType::F16:
        peak = f.fp16;
        break;
    case DType::BF16:
        peak = f.bf16;
        break;
    case DType::F8:
        peak = f.fp8;
        break;
    case DType::I8:
        peak = f.int8;
        break;
    }
    return peak > 0 ? peak : f.fp32; // a rate the spec does not list runs at the fp32 rate
}

std::optional<Ns>
RooflineModel::PriceKernel(const KernelLaunch& launch, const GpuSpec& spec)
{
    const KernelFamily& family =
        launch.kernel && launch.kernel->family
            ? *launch.kernel->family
            : FamilyOf(launch.kernel ? launch.kernel->name : std::string());
    double threads = static_cast<double>(launch.grid.Count() * launch.block.Count());
    Ns memory =
        threads * family.bytesPerThread / (spec.hbmBandwidth * spec.pricing.hbmEfficiency) * 1e9;
    Ns compute = threads * family.flopsPerThread / DenseFlopsOf(spec).fp32 * 1e9;
    Ns floor = spec.pricing.kernelMinNs > 0 ? spec.pricing.kernelMinNs : m_minKernelNs;
    return std::max({memory, compute, floor}) + spec.pricing.kernelGapNs;
}

namespace
{

double
Fraction(DType mathType, const DTypeFractions& f)
{
    switch (mathType)
    {
    case DType::F64:
        return f.fp64;
    case DType::F32:
        return f.fp32;
    case DType::TF32:
        return f.tf32;
    case DType::F16:
        return f.fp16;
    case DType::BF16:
        return f.bf16;
    case DType::F8:
        return f.fp8;
    case DType::I8:
        return f.int8;
    }
    return f.fp32;
}

struct Tile
{
    int m, n;
};

// Output tiles of the GEMM kernels cuBLAS ships per architecture. Hopper (sm90, cuBLAS's nvjet and
// xmma kernels): warpgroup-MMA tiles 64..256 in steps of 64 plus 192x192 (CUTLASS 3 sm90
// collective builders; the tile ids cuBLASLt 13.1 reports in validation/measurements/), and the
// narrow 64x32/64x16/64x8 tiles cuBLASLt picks for tiny and skinny shapes. Blackwell (sm100) adds
// the 2-SM 256x256 tile (CUTLASS sm100 UMMA). Ampere (sm80): CUTLASS 2's default tensor-op tiles.
const std::vector<Tile>&
TilesFor(const GpuSpec& spec)
{
    static const std::vector<Tile> ampere = {{256, 128}, {128, 256}, {128, 128}, {128, 64},
                                             {64, 128},  {64, 64},   {64, 32},   {32, 64}};
    static const std::vector<Tile> hopper = {
        {256, 128}, {128, 256}, {192, 192}, {192, 128}, {128, 192}, {128, 128}, {256, 64},
        {64, 256},  {192, 64},  {64, 192},  {128, 64},  {64, 128},  {64, 64},   {64, 32},
        {32, 64},   {64, 16},   {16, 64},   {64, 8},    {8, 64}};
    static const std::vector<Tile> blackwell = []
    {
        std::vector<Tile> tiles = {{256, 256}};
        tiles.insert(tiles.end(), hopper.begin(), hopper.end());
        return tiles;
    }();
    if (spec.computeCapabilityMajor >= 10)
    {
        return blackwell;
    }
    return spec.computeCapabilityMajor >= 9 ? hopper : ampere;
}

// A tile's mainloop efficiency relative to a 256x128 tile: its operand traffic per FLOP grows as
// 1/tileM + 1/tileN (each k step loads tileM + tileN rows for tileM * tileN MMAs).
double
TileEfficiency(const Tile& tile, double penalty)
{
    const double reference = 1.0 + penalty * (1.0 / 256 + 1.0 / 128);
    return reference / (1.0 + penalty * (1.0 / tile.m + 1.0 / tile.n));
}

// Bandwidth for `footprint` bytes touched: L2 when they fit in the L2-resident size, else HBM.
double
BandwidthFor(double footprint, double efficiency, const GpuSpec& spec)
{
    const PricingSpec& p = spec.pricing;
    if (p.l2BytesPerSecond > 0 && footprint <= double(p.l2ResidentBytes))
    {
        return p.l2BytesPerSecond;
    }
    return spec.hbmBandwidth * efficiency;
}

Ns
KernelFloor(const GpuSpec& spec, Ns minKernelNs)
{
    return spec.pricing.kernelMinNs > 0 ? spec.pricing.kernelMinNs : minKernelNs;
}

// One candidate plan: `tile` with `split` CTAs along k.
GemmPlan
PlanWith(const GemmShape& s, const GpuSpec& spec, const Tile& tile, int split, Ns memoryNs)
{
    const PricingSpec& p = spec.pricing;
    const double sms = spec.smCount;
    double sustained = Fraction(s.mathType, p.gemmEfficiency);
    double perSm = p.gemmSmEfficiency;
    if (s.unaligned && p.gemmUnalignedEfficiency > 0)
    {
        sustained = std::min(sustained, p.gemmUnalignedEfficiency);
        perSm = std::min(perSm, p.gemmUnalignedEfficiency);
    }
    const double peak = PeakFlops(s.mathType, spec);
    GemmPlan plan;
    plan.tileM = tile.m;
    plan.tileN = tile.n;
    plan.splitK = split;
    const int64_t tiles = ((s.m + tile.m - 1) / tile.m) * ((s.n + tile.n - 1) / tile.n) * s.batch;
    plan.ctas = tiles * split;
    plan.waves = (plan.ctas + spec.smCount - 1) / spec.smCount;
    const double active = std::min<double>(double(plan.ctas), sms);
    const double rate = std::min(
        active * peak / sms * perSm * TileEfficiency(tile, p.gemmTilePenalty), peak * sustained);
    const double kPerCta = std::ceil(double(s.k) / split) + p.gemmTileOverheadK;
    plan.mainloopNs = double(plan.waves) * 2.0 * tile.m * tile.n * kPerCta * active / rate * 1e9;
    plan.memoryNs = memoryNs;
    if (split > 1)
    {
        // Partial sums in fp32 written and read back, then a separate reduction kernel.
        double workspace = 2.0 * double(s.m) * double(s.n) * s.batch * split * 4;
        plan.reductionNs = workspace / BandwidthFor(workspace, p.hbmEfficiency, spec) * 1e9 +
                           p.gemmFixedNs + p.kernelGapNs;
    }
    double body = std::max(plan.mainloopNs, plan.memoryNs);
    if (s.epilogue == GemmEpilogue::Gelu || s.epilogue == GemmEpilogue::GeluBias)
    {
        body *= p.gemmGeluFactor;
    }
    plan.totalNs = p.gemmFixedNs + body + plan.reductionNs + p.kernelGapNs;
    return plan;
}

} // namespace

GemmPlan
PlanGemm(const GemmShape& s, const GpuSpec& spec, Ns minKernelNs, double operandBytes)
{
    const PricingSpec& p = spec.pricing;
    const Ns floor = KernelFloor(spec, minKernelNs) + p.kernelGapNs;
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0 || spec.smCount <= 0)
    {
        GemmPlan empty;
        empty.totalNs = std::max(floor, p.gemmFixedNs + p.kernelGapNs); // an empty GEMM launches
        return empty;
    }
    const double inBytes = DTypeBytes(s.inputType);
    const double copiesA = s.sharedA ? 1.0 : double(s.batch);
    const double copiesB = s.sharedB ? 1.0 : double(s.batch);
    double bytes = (copiesA * double(s.m) * s.k + copiesB * double(s.k) * s.n) * inBytes +
                   double(s.batch) * double(s.m) * s.n * s.outputBytes;
    if (s.epilogue == GemmEpilogue::Bias || s.epilogue == GemmEpilogue::GeluBias)
    {
        bytes += double(s.m) * s.outputBytes;
    }
    if (operandBytes >= 0)
    {
        bytes = operandBytes;
    }
    const Ns memoryNs = bytes / BandwidthFor(bytes, p.hbmEfficiency, spec) * 1e9;
    GemmPlan best;
    for (const Tile& tile : TilesFor(spec))
    {
        const int64_t tiles =
            ((s.m + tile.m - 1) / tile.m) * ((s.n + tile.n - 1) / tile.n) * s.batch;
        // Split-K when the tiles leave SMs idle and each slice keeps at least 256 of k
        // (cuBLASLt's choices in validation/measurements/: split 2-16 on fp16/bf16, up to 132 on
        // fp32 skinny shapes).
        int maxSplit = 1;
        if (tiles < spec.smCount)
        {
            maxSplit = int(std::min<int64_t>(spec.smCount / tiles, s.k / 256));
        }
        for (int split = 1; split <= std::max(1, maxSplit); ++split)
        {
            GemmPlan plan = PlanWith(s, spec, tile, split, memoryNs);
            // Ties go to the earlier (larger) tile and the smaller split.
            if (best.tileM == 0 || plan.totalNs < best.totalNs * (1 - 1e-9))
            {
                best = plan;
            }
        }
    }
    best.totalNs = std::max(best.totalNs, floor);
    return best;
}

std::optional<Ns>
GemmModel::PriceGemm(const GemmShape& s, const GpuSpec& spec)
{
    return PlanGemm(s, spec, m_minKernelNs).totalNs;
}

Ns
MemoryBoundNs(double bytesMoved, double footprint, double efficiency, const GpuSpec& spec,
              Ns floorNs)
{
    return floorNs + bytesMoved / BandwidthFor(footprint, efficiency, spec) * 1e9 +
           spec.pricing.kernelGapNs;
}

Ns
LatencyBoundMemoryNs(double bytesMoved, double footprint, double bytesRead,
                     double inFlightPerThread, double residentThreadsPerSm, double efficiency,
                     const GpuSpec& spec, Ns floorNs)
{
    const Ns bandwidthBound = MemoryBoundNs(bytesMoved, footprint, efficiency, spec, floorNs);
    const PricingSpec& p = spec.pricing;
    const bool inL2 = p.l2BytesPerSecond > 0 && footprint <= double(p.l2ResidentBytes);
    if (p.loadRoundNs <= 0 || inL2 || inFlightPerThread <= 0 || residentThreadsPerSm <= 0)
    {
        return bandwidthBound;
    }
    const double outstanding = double(spec.smCount) * residentThreadsPerSm * inFlightPerThread;
    const double readRate = outstanding / (p.loadRoundNs * 1e-9);
    const Ns latencyBound = floorNs + bytesRead / readRate * 1e9 + p.kernelGapNs;
    return std::max(bandwidthBound, latencyBound);
}

Ns
SameAddressAtomicsNs(double count, const GpuSpec& spec)
{
    return count * spec.pricing.sameAddressAtomicNs;
}

Ns
DeviceCopyNs(uint64_t bytes, const GpuSpec& spec)
{
    // A copy reads and writes every byte; its footprint is both buffers.
    const double moved = 2.0 * double(bytes);
    return MemoryBoundNs(moved, moved, spec.pricing.memcpyEfficiency, spec,
                         spec.pricing.kernelMinNs);
}

Ns
MemsetNs(uint64_t bytes, const GpuSpec& spec)
{
    return MemoryBoundNs(double(bytes), double(bytes), spec.pricing.memsetEfficiency, spec,
                         spec.pricing.kernelMinNs);
}

Ns
HostCopyNs(uint64_t bytes, bool toDevice, bool pinned, const GpuSpec& spec)
{
    const PricingSpec& p = spec.pricing;
    const double efficiency = spec.copyEngineEfficiency > 0 ? spec.copyEngineEfficiency : 1.0;
    double rate =
        p.pinnedBytesPerSecond > 0 ? p.pinnedBytesPerSecond : spec.pcieBandwidth * efficiency;
    if (!pinned)
    {
        double staged = toDevice ? p.pageableH2DBytesPerSecond : p.pageableD2HBytesPerSecond;
        rate = staged > 0 ? staged : rate;
    }
    return p.hostCopyLatencyNs + double(bytes) / rate * 1e9;
}

Ns
PageableCopyNs(uint64_t bytes, bool toDevice, Ns stagedNs, const GpuSpec& spec)
{
    return std::max(HostCopyNs(bytes, toDevice, true, spec),
                    HostCopyNs(bytes, toDevice, false, spec) - stagedNs);
}

Ns
PeerCopyNs(uint64_t bytes, const GpuSpec& spec)
{
    const double efficiency = spec.copyEngineEfficiency > 0 ? spec.copyEngineEfficiency : 1.0;
    const double rate = spec.nvlinkBandwidth > 0 ? spec.nvlinkBandwidth : spec.pcieBandwidth;
    return spec.pricing.hostCopyLatencyNs + double(bytes) / (rate * efficiency) * 1e9;
}

Ns
StagedPeerCopyNs(uint64_t bytes, const GpuSpec& spec)
{
    const Ns oneLeg = HostCopyNs(bytes, true, true, spec);
    return oneLeg + spec.pricing.hostCopyLatencyNs;
}

double
AttentionFlops(const AttentionShape& a)
{
    const int matmuls = a.matmuls > 0 ? a.matmuls : (a.backward ? 5 : 2);
    double flops =
        2.0 * matmuls * double(a.batch) * a.heads * double(a.seqQ) * double(a.seqK) * a.headDim;
    return a.causal ? flops / 2 : flops;
}

namespace
{
// The rate at a head dim, linear between the listed head dims (flat outside them).
double
RateAt(const AttentionRates& rates, int64_t headDim)
{
    const double d = double(headDim);
    if (d <= 64)
    {
        return rates.hd64;
    }
    if (d <= 128)
    {
        return rates.hd64 + (rates.hd128 - rates.hd64) * (d - 64) / 64;
    }
    if (d <= 256)
    {
        return rates.hd128 + (rates.hd256 - rates.hd128) * (d - 128) / 128;
    }
    return rates.hd256;
}
} // namespace

Ns
AttentionNs(const AttentionShape& a, const GpuSpec& spec, Ns minKernelNs)
{
    const PricingSpec& p = spec.pricing;
    const AttentionRates& rates = a.kind == AttentionKind::Fa3
                                      ? (a.backward ? p.fa3Backward : p.fa3Forward)
                                      : (a.backward ? p.fa2Backward : p.fa2Forward);
    double fraction = RateAt(rates, a.headDim);
    if (a.kind == AttentionKind::MemEfficient)
    {
        // PyTorch's CUTLASS mem-efficient kernels (Ampere-style, no warp specialisation) on H100,
        // our torch-kernels.jsonl rows at 2k-16k: forward 135-139 TFLOP/s at hd 64 and 172-177 at
        // hd 128, backward 109-111 and 134-139: 0.39-0.48 of the FA2 rates, 0.43 on average.
        // Calibrated on the rows it is checked against (no other H100 data for these kernels).
        constexpr double kMemEfficientOfFa2 = 0.43;
        fraction *= kMemEfficientOfFa2;
    }
    if (fraction <= 0)
    {
        fraction = p.gemmSmEfficiency * 0.5; // no attention rates: half the GEMM rate
    }
    // Each CTA loads its Q block and writes its output once, about one K/V block's worth of work
    // (128 keys): short sequences reach a smaller share of the rate.
    constexpr double kBlock = 128;
    const double seq = double(std::max<int64_t>(1, a.backward ? a.seqK : a.seqQ));
    double flops = AttentionFlops(a);
    double rate = DenseFlopsOf(spec).bf16 * fraction * seq / (seq + kBlock);
    if (a.causal)
    {
        // Blocks on the diagonal compute in full: n(n+1)/2 of n^2 blocks, not n^2/2.
        const double blocks = std::ceil(double(a.seqK) / kBlock);
        flops *= (blocks + 1) / std::max(1.0, blocks);
        rate *= p.attentionCausalEfficiency;
    }
    return KernelFloor(spec, minKernelNs) + flops / rate * 1e9 + p.kernelGapNs;
}

// EIDOLON_PRICING_TRACE=1: one stderr line a priced kernel launch (provider, ns, grid, block,
// name), to find the kernels that fall to a fallback (`sort | uniq -c` over the lines).
static void
TracePrice(const KernelLaunch& launch, const char* provider, Ns duration)
{
    static const bool enabled = []
    {
        const char* value = std::getenv("EIDOLON_PRICING_TRACE");
        return value && *value && std::string(value) != "0";
    }();
    if (!enabled || !launch.kernel)
    {
        return;
    }
    std::fprintf(stderr, "eidolon-price\t%s\t%.0f\t%ux%ux%u\t%ux%ux%u\t%s\n", provider, duration,
                 launch.grid.x, launch.grid.y, launch.grid.z, launch.block.x, launch.block.y,
                 launch.block.z, launch.kernel->name.c_str());
}

Price
CostModel::PriceKernel(const KernelLaunch& launch, const GpuSpec& spec)
{
    for (auto& provider : m_chain)
    {
        if (auto duration = provider->PriceKernel(launch, spec))
        {
            TracePrice(launch, provider->Name(), *duration);
            return {*duration, provider->Name()};
        }
    }
    return {0, "unpriced"};
}

Price
CostModel::PriceGemm(const GemmShape& shape, const GpuSpec& spec)
{
    for (auto& provider : m_chain)
    {
        if (auto duration = provider->PriceGemm(shape, spec))
        {
            return {*duration, provider->Name()};
        }
    }
    return {0, "unpriced"};
}

std::map<std::string, CostModel::ProviderTotals>
CostModel::Totals() const
{
    std::map<std::string, ProviderTotals> byName;
    for (const auto& [name, totals] : m_totals)
    {
        ProviderTotals& merged = byName[name];
        merged.ops += totals.ops;
        merged.gpuTime += totals.gpuTime;
    }
    return byName;
}

void
CostModel::Count(const char* provider, Ns duration)
{
    ProviderTotals& totals = m_totals[provider];
    totals.ops += 1;
    totals.gpuTime += duration;
}

} // namespace eidolon::gpu
