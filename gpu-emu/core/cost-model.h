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
};

struct KernelLaunch
{
    const KernelInfo* kernel;
    Dim3 grid;
    Dim3 block;
    uint64_t sharedMemBytes = 0;
    int64_t argBytes = -1; // total parameter bytes when known, -1 otherwise
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

struct GemmShape
{
    int64_t m = 0, n = 0, k = 0, batch = 1;
    DType inputType = DType::F32; // A and B
    DType mathType = DType::F32;  // the tensor-core / FMA rate that applies
    int outputBytes = 4;
    bool transA = false, transB = false;
};

struct Price
{
    Ns duration;
    const char* provider;
};

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

// cuBLAS/cuBLASLt GEMM: 128x128 output tiles, waves of sm_count tiles;
// compute = waves * (2 * 128 * 128 * k) / (peak(mathType) / sm_count) / kGemmEfficiency;
// memory = batch * (m*k + k*n) * in_bytes + batch * m*n * out_bytes, over hbm_bandwidth;
// duration = max(compute, memory, minKernelNs).
class GemmModel : public CostProvider
{
public:
    static constexpr int kTile = 128;
    static constexpr double kGemmEfficiency = 0.8;
    explicit GemmModel(Ns minKernelNs)
        : m_minKernelNs(minKernelNs)
    {
    }
    const char* Name() const override { return "gemm-model"; }
    std::optional<Ns> PriceGemm(const GemmShape& shape, const GpuSpec& spec) override;

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
