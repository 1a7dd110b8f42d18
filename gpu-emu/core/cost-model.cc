#include "cost-model.h"

#include <algorithm>
#include <cmath>

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
    const DenseFlops& f = DenseFlopsOf(spec);
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
    Ns memory = threads * family.bytesPerThread / spec.hbmBandwidth * 1e9;
    Ns compute = threads * family.flopsPerThread / DenseFlopsOf(spec).fp32 * 1e9;
    return std::max({memory, compute, m_minKernelNs});
}

std::optional<Ns>
GemmModel::PriceGemm(const GemmShape& s, const GpuSpec& spec)
{
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0)
    {
        return m_minKernelNs; // an empty GEMM still launches
    }
    double tiles =
        std::ceil(double(s.m) / kTile) * std::ceil(double(s.n) / kTile) * double(s.batch);
    double waves = std::ceil(tiles / spec.smCount);
    double perSmFlops = PeakFlops(s.mathType, spec) / spec.smCount;
    Ns compute = waves * (2.0 * kTile * kTile * double(s.k)) / perSmFlops / kGemmEfficiency * 1e9;
    double bytes =
        double(s.batch) * (double(s.m) * s.k + double(s.k) * s.n) * DTypeBytes(s.inputType) +
        double(s.batch) * double(s.m) * s.n * s.outputBytes;
    Ns memory = bytes / spec.hbmBandwidth * 1e9;
    return std::max({compute, memory, m_minKernelNs});
}

Price
CostModel::PriceKernel(const KernelLaunch& launch, const GpuSpec& spec)
{
    for (auto& provider : m_chain)
    {
        if (auto duration = provider->PriceKernel(launch, spec))
        {
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
