// Prices every kernel measurement eidolon has through gpu-emu's pricing chain and prints, per
// kernel family, the mean and maximum |error| of the modelled time (the README's validation table):
//  - our H100 ground truth, validation/measurements/h100-2026-11-24/ (gemm, memory, torch-kernels);
//  - ../shared/validation-data: TraceLens H100 GEMMs, Azure cuBLASLt sweeps, MAMF best shapes,
//    FlashAttention-2/3 H100 figures, Azure STREAM-like bandwidth.
// The model is never fed these rows; constants come from topologies/gpus/*.yaml (pricing block).
// Times that include the gap between back-to-back kernels (our gemm/memory sweeps, benchmarks that
// time loops) are compared with the full price; Kineto kernel bodies with the price less the gap.
//
//   eidolon-pricing-check [--rows] [--measurements DIR] [--validation-data DIR]
#include "cost-model.h"
#include "gpu-spec.h"
#include "host-spec.h"
#include "profile-db.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace eidolon::gpu;

namespace
{

struct Summary
{
    double sumErr = 0, maxErr = 0;
    int count = 0;
    std::string group;
};

class Table
{
public:
    explicit Table(bool rows)
        : m_rows(rows)
    {
    }

    void Add(const std::string& group, const std::string& family, const std::string& what,
             double measuredUs, double modelUs)
    {
        if (!(measuredUs > 0) || !(modelUs > 0))
        {
            return;
        }
        const double err = modelUs / measuredUs - 1;
        Summary& s = m_families[family];
        s.group = group;
        s.sumErr += std::fabs(err);
        s.maxErr = std::max(s.maxErr, std::fabs(err));
        ++s.count;
        if (m_rows)
        {
            std::printf("%-34s %-58s %12.2f %12.2f %+7.1f%%\n", family.c_str(), what.c_str(),
                        measuredUs, modelUs, 100 * err);
        }
    }

    void Print() const
    {
        std::printf("\n| source | family | rows | mean abs error | max abs error |\n");
        std::printf("| --- | --- | ---: | ---: | ---: |\n");
        double sum = 0;
        int families = 0, rows = 0;
        for (const auto& [family, s] : m_families)
        {
            std::printf("| %s | %s | %d | %.1f%% | %.1f%% |\n", s.group.c_str(), family.c_str(),
                        s.count, 100 * s.sumErr / s.count, 100 * s.maxErr);
            if (s.group == "H100 (ours)")
            {
                sum += s.sumErr / s.count;
                ++families;
                rows += s.count;
            }
        }
        std::printf("\nmean over our H100 families (%d families, %d rows): %.1f%%\n", families,
                    rows, 100 * sum / std::max(1, families));
    }

private:
    bool m_rows;
    std::map<std::string, Summary> m_families;
};

std::vector<nlohmann::json>
ReadJsonLines(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error(path + ": cannot open");
    }
    std::vector<nlohmann::json> rows;
    std::string line;
    int number = 0;
    while (std::getline(in, line))
    {
        ++number;
        if (line.empty())
        {
            continue;
        }
        try
        {
            rows.push_back(nlohmann::json::parse(line));
        }
        catch (const nlohmann::json::exception& e)
        {
            throw std::runtime_error(path + ":" + std::to_string(number) + ": " + e.what());
        }
    }
    return rows;
}

DType
TypeOf(const std::string& d)
{
    if (d.rfind("fp8", 0) == 0)
        return DType::F8;
    if (d == "fp16")
        return DType::F16;
    if (d == "fp32")
        return DType::F32;
    if (d == "tf32")
        return DType::TF32;
    return DType::BF16;
}

GemmShape
Shape(int64_t m, int64_t n, int64_t k, int64_t batch, const std::string& dtype)
{
    GemmShape shape;
    shape.m = m;
    shape.n = n;
    shape.k = k;
    shape.batch = batch;
    shape.mathType = TypeOf(dtype);
    shape.inputType = shape.mathType == DType::TF32 ? DType::F32 : shape.mathType;
    shape.outputBytes = shape.inputType == DType::F8 ? 2 : DTypeBytes(shape.inputType);
    return shape;
}

std::string
SpecName(const std::string& gpu)
{
    if (gpu.find("A100") != std::string::npos)
        return "A100-SXM4-80GB";
    if (gpu.find("H200") != std::string::npos)
        return "H200-SXM-141GB";
    if (gpu.find("H100") != std::string::npos)
        return "H100-SXM5-80GB";
    if (gpu.find("B200") != std::string::npos)
        return "B200";
    return "";
}

struct Context
{
    std::map<std::string, GpuSpec> specs;
    std::string specDir;
    Ns minKernelNs = 1000;

    std::unique_ptr<eidolon::spec::HostSpec> host;

    // The host the H100 measurements were taken on (topologies/hosts/h100-server.yaml).
    const eidolon::spec::HostSpec& Host()
    {
        if (!host)
        {
            host = std::make_unique<eidolon::spec::HostSpec>(eidolon::spec::FindHostSpec(
                "h100-server", {std::string(EIDOLON_SOURCE_DIR) + "/topologies/hosts"}));
        }
        return *host;
    }

    const GpuSpec& Spec(const std::string& name)
    {
        auto it = specs.find(name);
        if (it == specs.end())
        {
            it = specs.emplace(name, FindGpuSpec(name, {specDir})).first;
        }
        return it->second;
    }
};

std::string Label(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::string
Label(const char* fmt, ...)
{
    char buffer[256];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buffer, sizeof buffer, fmt, args);
    va_end(args);
    return buffer;
}

// ------------------------------------------------------------------ our H100 measurements

void
CheckGemms(Context& ctx, const std::string& dir, Table& table)
{
    const GpuSpec& spec = ctx.Spec("H100-SXM5-80GB");
    for (const auto& r : ReadJsonLines(dir + "/gemm.jsonl"))
    {
        if (r.value("kind", "") != "gemm")
            continue;
        const std::string dtype = r["dtype"];
        GemmShape shape = Shape(r["m"], r["n"], r["k"], r["batch"], dtype);
        const std::string epilogue = r.value("epilogue", "");
        shape.epilogue = epilogue == "bias"        ? GemmEpilogue::Bias
                         : epilogue == "gelu_bias" ? GemmEpilogue::GeluBias
                                                   : GemmEpilogue::None;
        const double us = r["us"];
        std::string family = "gemm " + dtype;
        if (dtype == "bf16" || dtype == "fp16")
        {
            family = shape.batch > 1 ? "gemm bf16/fp16 batched"
                     : us >= 100     ? "gemm bf16/fp16 >= 0.1 ms"
                                     : "gemm bf16/fp16 < 0.1 ms";
        }
        const GemmPlan plan = PlanGemm(shape, spec, ctx.minKernelNs);
        table.Add("H100 (ours)", family,
                  Label("%s %s %lldx%lldx%lld b%lld tile %dx%d s%d",
                        r["tag"].get<std::string>().c_str(), dtype.c_str(), (long long)shape.m,
                        (long long)shape.n, (long long)shape.k, (long long)shape.batch, plan.tileM,
                        plan.tileN, plan.splitK),
                  us, plan.totalNs / 1e3);
    }
}

void
CheckMemory(Context& ctx, const std::string& dir, Table& table)
{
    const GpuSpec& spec = ctx.Spec("H100-SXM5-80GB");
    const PricingSpec& p = spec.pricing;
    for (const auto& r : ReadJsonLines(dir + "/memory.jsonl"))
    {
        if (!r.contains("what"))
            continue;
        const std::string what = r["what"];
        const uint64_t bytes = r["bytes"];
        const double moved = r["bytes_moved"];
        double model = 0;
        std::string family;
        if (what == "copy-kernel" || what == "add-kernel" || what == "scale-inplace-kernel")
        {
            // Our own grid-stride kernels: the footprint is what they touch (in place: half).
            const double footprint = what == "scale-inplace-kernel" ? moved / 2 : moved;
            model = MemoryBoundNs(moved, footprint, p.hbmEfficiency, spec, p.kernelMinNs);
            family = "memory-bound kernels";
        }
        else if (what == "sum-kernel")
        {
            // h100-sweep's SumKernel: grid min(n/4/256, 32 x SMs) blocks of 256, one atomicAdd
            // per warp on one float, overlapping the read.
            const double grid =
                std::max(1.0, std::min(std::ceil(double(bytes) / 16 / 256), 32.0 * spec.smCount));
            model = std::max(MemoryBoundNs(moved, moved, p.hbmEfficiency, spec, p.kernelMinNs),
                             p.kernelMinNs + SameAddressAtomicsNs(grid * 8, spec) + p.kernelGapNs);
            family = "sum kernel (one atomic per warp)";
        }
        else if (what == "cudaMemcpyAsync-D2D")
        {
            model = DeviceCopyNs(bytes, spec);
            family = "memcpy device-to-device";
        }
        else if (what == "cudaMemsetAsync")
        {
            model = MemsetNs(bytes, spec);
            family = "memset";
        }
        else if (what.find("pinned") != std::string::npos)
        {
            model = HostCopyNs(bytes, what.find("H2D") != std::string::npos, true, spec);
            family = "memcpy host<->device pinned";
        }
        else if (what.find("pageable") != std::string::npos)
        {
            // Wall time of a synchronous cudaMemcpy as gpu-emu runs it (cudart/memory.cc): the
            // host's staging (the host spec's cudaMemcpyAsync.pageable), the launch latency, the
            // stream's share of the staged pipeline (PageableCopyNs), the blocking call's return.
            const eidolon::spec::HostSpec& host = ctx.Host();
            const Ns staged = host.CostNs(eidolon::spec::HostCall::MemcpyAsyncPageable, bytes);
            model = staged + spec.launchLatencyUs * 1e3 +
                    PageableCopyNs(bytes, what.find("H2D") != std::string::npos, staged, spec) +
                    host.CostNs(eidolon::spec::HostCall::MemcpyBlockingReturn);
            family = "memcpy host<->device pageable";
        }
        else
        {
            continue;
        }
        table.Add("H100 (ours)", family,
                  Label("%s %llu B", what.c_str(), (unsigned long long)bytes), r["us"],
                  model / 1e3);
    }
}

// The argument values PyTorch passes to the kernels whose size gpu-emu reads from their arguments
// (core/kernel-families.cc), rebuilt from the op's recorded shape: Kineto records no argument
// values. Integers are stored 64-bit; an int parameter reads the low half (little-endian).
struct TorchArguments
{
    std::vector<int64_t> values = std::vector<int64_t>(12, 0);
    struct CastSide
    {
        int8_t dtype = 0;
        uint32_t elementSize = 0;
    } load, store;
    std::vector<void*> pointers = std::vector<void*>(12, nullptr);
    // reduce_kernel's ReduceOp (Reduce.cuh): an empty functor, a float identity, then ReduceConfig.
    std::array<int32_t, 32> reduceOp{};
    // CatArrayBatchedCopy's CatArrInputTensorMetadata<T, unsigned int, 64, 64> (Shape.cu).
    std::vector<char> catMetadata;
    // The legacy elementwise_kernel's lambda: its OffsetCalculator<N, uint32_t> first.
    std::vector<char> closure;

    void Set(size_t index, int64_t value)
    {
        values[index] = value;
        pointers[index] = &values[index];
    }
};

int
TorchDtypeBytes(const std::string& dtype)
{
    return dtype.find("float32") != std::string::npos   ? 4
           : dtype.find("float64") != std::string::npos ? 8
                                                        : 2;
}

// Fills `a` for kernel `name` of torch-op row `r`; false when the kernel takes no size argument
// the model reads (it is then sized from its launch geometry).
// The ReduceOp PyTorch builds for a reduction over `inputs` values into `outputs`
// (setReduceConfig): block and grid as the kernel record has them; lanes split the input when it is
// contiguous.
void
FillReduceOp(TorchArguments& a, const nlohmann::json& k, int64_t inputs, int64_t outputs,
             bool lanesSplitInput)
{
    int32_t* config = a.reduceOp.data() + 2; // ops (1 byte) and the float identity: 8 bytes
    config[0] = 4;                           // sizeof(arg_t)
    config[1] = int32_t(inputs);
    config[2] = int32_t(outputs);
    config[3] = config[4] = 1;
    config[5] = k["grid"][1].get<int32_t>(); // ctas_per_output
    config[6] = lanesSplitInput ? 1 : 0;     // input_mult[BLOCK_X]
    config[11] = k["block"][0].get<int32_t>();
    config[12] = k["block"][1].get<int32_t>();
    config[13] = config[11] * config[12];
    a.pointers[0] = a.reduceOp.data();
}

// The OffsetCalculator TensorIterator builds for `shape` (outermost first) with each operand's
// element strides (operand 0 the output): size-1 dimensions dropped, dimension 0 the innermost,
// neighbours merged where every operand steps through both as one (OffsetCalculator.cuh's layout:
// int dims; {divisor, m1, shift} x 25; uint32 strides[25][N] in bytes).
void
FillOffsetCalculator(TorchArguments& a, std::vector<int64_t> shape,
                     std::vector<std::vector<int64_t>> strides, int64_t elementBytes)
{
    std::vector<int64_t> sizes;
    std::vector<std::vector<int64_t>> steps; // [dim][operand], innermost first
    for (size_t i = shape.size(); i-- > 0;)
    {
        if (shape[i] == 1)
            continue;
        std::vector<int64_t> step;
        for (const auto& operand : strides)
            step.push_back(operand[i]);
        const bool merges =
            !sizes.empty() &&
            std::equal(step.begin(), step.end(), steps.back().begin(),
                       [&](int64_t outer, int64_t inner) { return outer == inner * sizes.back(); });
        if (merges)
        {
            sizes.back() *= shape[i];
            continue;
        }
        sizes.push_back(shape[i]);
        steps.push_back(step);
    }
    const size_t operands = strides.size();
    a.closure.assign(4 + 25 * 12 + 25 * operands * 4, 0);
    const int32_t dims = int32_t(sizes.size());
    std::memcpy(a.closure.data(), &dims, 4);
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        const uint64_t d = uint64_t(sizes[i]);
        uint32_t shift = 0;
        while (shift < 32 && (uint64_t(1) << shift) < d)
            ++shift;
        const uint32_t divider[3] = {
            uint32_t(d), uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1),
            shift};
        std::memcpy(&a.closure[4 + 12 * i], divider, sizeof divider);
        for (size_t k = 0; k < operands; ++k)
        {
            const uint32_t bytes = uint32_t(steps[i][k] * elementBytes);
            std::memcpy(&a.closure[4 + 25 * 12 + 4 * (i * operands + k)], &bytes, 4);
        }
    }
    a.pointers[1] = a.closure.data();
}

// Fills `a` for kernel record `k` (name `name`) of torch-op row `r`; false when the kernel takes no
// argument the model reads (it is then sized from its launch geometry).
bool
FillTorchArguments(const std::string& name, const nlohmann::json& k, const nlohmann::json& r,
                   TorchArguments& a)
{
    const std::string family = r["family"], op = r["op"];
    const auto& shape = r["shape"];
    int64_t numel = 1;
    for (const auto& d : shape)
        numel *= d.get<int64_t>();
    const int64_t cols = shape.back();
    const int64_t rows = numel / cols;
    auto has = [&](const char* fragment) { return name.find(fragment) != std::string::npos; };
    if (family == "norm" || family == "softmax" || family == "cross_entropy")
    {
        if (has("vectorized_layer_norm_kernel<"))
            a.Set(0, cols);
        else if (has("layer_norm_grad_input_kernel_vectorized<"))
            a.Set(6, cols);
        else if (has("GammaBetaBackward"))
        {
            a.Set(0, rows);
            a.Set(1, cols);
        }
        else if (has("cunn_SoftMaxForward"))
            a.Set(2, cols);
        else if (has("cunn_SoftMaxBackward"))
            a.Set(3, cols);
    }
    if (has("reduce_kernel<"))
    {
        if (op == "sum-last")
            FillReduceOp(a, k, cols, rows, true);
        else if (op == "sum-first")
            FillReduceOp(a, k, rows, cols, false);
        else if (op == "amax-all" || op == "float-sum-all")
            FillReduceOp(a, k, numel, 1, true);
        else if (op == "clip_grad_norm_")
            FillReduceOp(a, k, shape[0].get<int64_t>(), 1, true); // the stacked per-tensor norms
        else if (family == "attention" && shape[1] != shape[2])
        {
            // GQA backward: dK and dV summed over the hq / hkv query heads of each kv head.
            const int64_t b = shape[0], hq = shape[1], hkv = shape[2], seq = shape[3], d = shape[4];
            FillReduceOp(a, k, hq / hkv, b * hkv * seq * d, false);
        }
    }
    if (has("CatArrayBatchedCopy<") && op == "rotary(torch ops)")
    {
        // cat((-x2, x1), -1): -x2 is a new contiguous tensor, x1 a strided half of x.
        constexpr size_t batch = 64;
        a.catMetadata.assign(batch * (8 + 4 + 4 + 4 + 1) + batch * 32, 0);
        const size_t counts = batch * 16, contiguous = counts + batch * 4;
        const uint32_t half = uint32_t(numel / 2);
        std::memcpy(&a.catMetadata[counts], &half, 4);
        std::memcpy(&a.catMetadata[counts + 4], &half, 4);
        a.catMetadata[contiguous] = 1;
        a.catMetadata[contiguous + 1] = 0;
        a.pointers[1] = a.catMetadata.data();
    }
    if (has("nll_loss_forward_reduce_cuda_kernel_2d<") ||
        has("nll_loss_backward_reduce_cuda_kernel_2d<"))
    {
        a.Set(6, rows); // nframe: one target a row of logits
    }
    if (has("embedding_backward_feature_kernel<"))
    {
        // (indices, grad, grad_weight, int n, long stride, int padding_idx): row [vocab,
        // hidden, tokens].
        a.Set(3, shape[2].get<int64_t>());
        a.Set(4, shape[1].get<int64_t>());
    }
    const bool legacy = has("at::native::elementwise_kernel<");
    if (legacy && op == "transpose-contiguous")
    {
        // x.t().contiguous(): out [cols, rows] contiguous, in = x.t(), strides (1, cols).
        a.Set(0, numel);
        FillOffsetCalculator(a, {cols, rows}, {{rows, 1}, {1, cols}}, 2);
    }
    else if (legacy && family == "rotary")
    {
        // x * cos, rot * sin: [b, s, h, d] by a [s, 1, d] table; view_as_complex(x) * freqs:
        // [b, s, h, d/2] complex by [s, 1, d/2]; -x2: the strided second half of x.
        const int64_t b = shape[0], seq = shape[1], h = shape[2], d = shape[3];
        const bool complex = has("complex<float>");
        const int64_t w = complex ? d / 2 : d;
        const std::vector<int64_t> dense = {seq * h * w, h * w, w, 1};
        if (has("MulFunctor"))
        {
            a.Set(0, b * seq * h * w);
            FillOffsetCalculator(a, {b, seq, h, w}, {dense, dense, {0, w, 0, 1}}, complex ? 8 : 2);
        }
        else if (has("neg_kernel_cuda"))
        {
            a.Set(0, b * seq * h * d / 2);
            FillOffsetCalculator(a, {b, seq, h, d / 2},
                                 {{seq * h * d / 2, h * d / 2, d / 2, 1}, dense}, 2);
        }
    }
    const bool elementwise = has("elementwise_kernel<");
    if (elementwise && (family == "copy" || family == "softmax" || family == "cross_entropy" ||
                        family == "reduce"))
    {
        a.Set(0, numel); // int N: these ops' elementwise kernels cover the whole tensor
        if (has("LoadWithCast<1>"))
        {
            // The cast's source is the op's dtype; its destination float32 (the kernels' lambda
            // takes float) unless the op casts to bf16.
            a.load.elementSize = TorchDtypeBytes(r["dtype"]);
            a.store.elementSize = op.find("bfloat16") != std::string::npos ? 2 : 4;
            a.pointers[5] = &a.load;
            a.pointers[6] = &a.store;
        }
    }
    return std::any_of(a.pointers.begin(), a.pointers.end(), [](void* p) { return p != nullptr; });
}

// A Kineto kernel record priced through the chain (its body: the price less the gap).
double
KernelBodyUs(CostModel& chain, const nlohmann::json& k, const GpuSpec& spec, double opBytes,
             const nlohmann::json& row)
{
    const std::string name = k["name"];
    const double gap = spec.pricing.kernelGapNs;
    if (name.rfind("Memcpy DtoD", 0) == 0)
    {
        return (DeviceCopyNs(uint64_t(opBytes / 2), spec) - gap) / 1e3;
    }
    if (name.rfind("Memset", 0) == 0)
    {
        return (MemsetNs(0, spec) - gap) / 1e3;
    }
    if (!k["grid"].is_array())
    {
        return 0;
    }
    KernelInfo info{name, NormalizeKernelName(name), nullptr, -1};
    KernelLaunch launch{&info,
                        {k["grid"][0], k["grid"][1], k["grid"][2]},
                        {k["block"][0], k["block"][1], k["block"][2]},
                        k.value("smem", uint64_t(0)),
                        -1};
    TorchArguments arguments;
    if (FillTorchArguments(name, k, row, arguments))
    {
        launch.args = arguments.pointers.data();
    }
    Price price = chain.PriceKernel(launch, spec);
    return (price.duration - gap) / 1e3;
}

// The GEMMs of a PyTorch linear layer [tokens, in, out]: fwd, or bwd's dgrad and wgrad.
double
LinearUs(const nlohmann::json& r, const GpuSpec& spec, Ns floor)
{
    const int64_t tokens = r["shape"][0], in = r["shape"][1], out = r["shape"][2];
    const std::string op = r["op"];
    const double gap = spec.pricing.kernelGapNs;
    // Kineto bodies of GEMMs are as long as their back-to-back price (see CheckPublishedGemms).
    auto body = [&](GemmShape s) { return PlanGemm(s, spec, floor).totalNs / 1e3; };
    const double memset = (MemsetNs(0, spec) - gap) / 1e3; // cuBLAS's workspace memset per GEMM
    if (op.find(".bwd") != std::string::npos)
    {
        return body(Shape(tokens, in, out, 1, "bf16")) + body(Shape(out, in, tokens, 1, "bf16")) +
               2 * memset;
    }
    GemmShape fwd = Shape(tokens, out, in, 1, "bf16");
    if (op.find("bias") != std::string::npos)
        fwd.epilogue = GemmEpilogue::Bias;
    return body(fwd) + (tokens * in * out > 1e9 ? memset : 0);
}

// cuDNN's persistent sm90 attention kernels (grid = SM count) carry no shape in their launch: the
// row's shape goes to the attention model (Hopper-native rates) directly, helpers as memory passes.
double
CudnnAttentionUs(const nlohmann::json& r, const GpuSpec& spec, Ns floor)
{
    AttentionShape a;
    a.batch = r["shape"][0];
    a.heads = r["shape"][1];
    a.seqQ = a.seqK = r["shape"][3];
    a.headDim = r["shape"][4];
    a.causal = r.value("causal", false);
    a.backward = r["op"].get<std::string>().find(".bwd") != std::string::npos;
    a.kind = AttentionKind::Fa3;
    const double gap = spec.pricing.kernelGapNs;
    double us = (AttentionNs(a, spec, floor) - gap) / 1e3;
    if (a.backward)
    {
        // dot(dO, O) over bf16 dO and O, and dQ from fp32 to bf16.
        const double elements = double(a.batch) * a.heads * a.seqQ * a.headDim;
        us += (MemoryBoundNs(4 * elements, 4 * elements, spec.pricing.hbmEfficiency, spec, floor) +
               MemoryBoundNs(6 * elements, 6 * elements, spec.pricing.hbmEfficiency, spec, floor) -
               2 * gap) /
              1e3;
    }
    return us;
}

// PyTorch's CUTLASS mem-efficient kernels (fmha_cutlassF/B) for a row [batch, hq, hkv, seq, hd].
double
MemEfficientAttentionUs(const nlohmann::json& r, const GpuSpec& spec, Ns floor)
{
    AttentionShape a;
    a.batch = r["shape"][0];
    a.heads = r["shape"][1];
    a.seqQ = a.seqK = r["shape"][3];
    a.headDim = r["shape"][4];
    a.causal = r.value("causal", false);
    a.backward = r["op"].get<std::string>().find(".bwd") != std::string::npos;
    a.kind = AttentionKind::MemEfficient;
    return (AttentionNs(a, spec, floor) - spec.pricing.kernelGapNs) / 1e3;
}

void
CheckTorch(Context& ctx, const std::string& dir, Table& table)
{
    const GpuSpec& spec = ctx.Spec("H100-SXM5-80GB");
    CostModel chain;
    chain.Add(std::make_unique<KernelFamilyModel>(ctx.minKernelNs));
    chain.Add(std::make_unique<RooflineModel>(ctx.minKernelNs));
    for (const auto& r : ReadJsonLines(dir + "/torch-kernels.jsonl"))
    {
        if (r.value("kind", "") != "torch-op")
            continue;
        const std::string family = r["family"], op = r["op"];
        double model = 0;
        std::string name = "torch " + family;
        if (family == "gemm")
        {
            model = LinearUs(r, spec, ctx.minKernelNs);
            name = "torch linear (cuBLAS)";
        }
        else if (op.rfind("sdpa-cudnn", 0) == 0)
        {
            model = CudnnAttentionUs(r, spec, ctx.minKernelNs);
            name = "attention cuDNN (shape given)";
        }
        else
        {
            for (const auto& k : r["kernels"])
            {
                if (k["name"].get<std::string>().rfind("fmha_cutlass", 0) == 0)
                {
                    // Causality is a field of the kernel's Params struct, whose layout gpu-emu
                    // does not read: the row's shape and mask price it (mem-efficient rates).
                    model += MemEfficientAttentionUs(r, spec, ctx.minKernelNs);
                    continue;
                }
                model +=
                    k.value("count", 1.0) * KernelBodyUs(chain, k, spec, r.value("bytes", 0.0), r);
            }
            if (op.rfind("sdpa-flash", 0) == 0)
                name = "attention flash (by kernel)";
            else if (op.rfind("sdpa-efficient", 0) == 0)
                name = "attention mem-efficient (CUTLASS)";
        }
        table.Add("H100 (ours)", name, Label("%s %s", op.c_str(), r["shape"].dump().c_str()),
                  r["us"], model);
    }
}

// ------------------------------------------------------------------ train-gpt under Nsight Compute

// One CSV record of `ncu --csv`: quoted fields, numbers with thousands separators.
std::vector<std::string>
CsvFields(const std::string& line)
{
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (char c : line)
    {
        if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
        {
            fields.push_back(field);
            field.clear();
        }
        else
            field += c;
    }
    fields.push_back(field);
    return fields;
}

Dim3
DimsOf(const std::string& text) // "(256, 1, 1)"
{
    Dim3 d;
    std::sscanf(text.c_str(), "(%u, %u, %u)", &d.x, &d.y, &d.z);
    return d;
}

// examples/train-gpt's own kernels as ncu timed them on our H100 (kernel bodies: the price less the
// gap). Its cuBLAS GEMMs (nvjet_*) carry no shape in the record and are left out; its flash
// attention is its own simple kernel, several times slower than the FlashAttention-2 rates
// eidolon prices it at on purpose (validation/measurements/h100-2026-11-24/README.md), so it is a
// family of its own. Launch arguments are not recorded: kernels that read one fall back to grid.
void
CheckTrainGpt(Context& ctx, const std::string& dir, Table& table)
{
    // ncu's default --cache-control all flushes the caches before every profiled kernel (Nsight
    // Compute CLI documentation, "Cache Control"): no footprint is L2-resident in these records.
    GpuSpec spec = ctx.Spec("H100-SXM5-80GB");
    spec.pricing.l2ResidentBytes = 0;
    CostModel chain;
    chain.Add(std::make_unique<KernelFamilyModel>(ctx.minKernelNs));
    chain.Add(std::make_unique<RooflineModel>(ctx.minKernelNs));
    for (const char* file :
         {"train-gpt-kernels-gpt2-124m.csv", "train-gpt-kernels-llama3.2-1b.csv"})
    {
        std::ifstream in(dir + "/" + file);
        if (!in)
            throw std::runtime_error(dir + "/" + file + ": cannot open");
        std::string line;
        std::getline(in, line); // header
        for (int number = 2; std::getline(in, line); ++number)
        {
            const std::vector<std::string> f = CsvFields(line);
            if (f.size() < 15 || f[12] != "gpu__time_duration.sum")
                continue;
            std::string name = f[4];
            if (name.rfind("void ", 0) == 0)
                name = name.substr(5);
            if (name.rfind("nvjet", 0) == 0)
                continue;
            std::string ns = f[14];
            ns.erase(std::remove(ns.begin(), ns.end(), ','), ns.end());
            const std::string head = name.substr(0, name.find_first_of("<("));
            const std::string family =
                head.rfind("flash_attention", 0) == 0 ? "train-gpt flash attention (own kernels, "
                                                        "priced at FA2 rates by design)"
                : head.find("norm") != std::string::npos || head.rfind("embedding", 0) == 0
                    ? "train-gpt norm and embedding rows"
                : head.rfind("rotary", 0) == 0 || head.rfind("cross_entropy", 0) == 0
                    ? "train-gpt rotary and cross-entropy"
                    : "train-gpt elementwise (incl. AdamW, grad norm)";
            KernelInfo info{name, name, nullptr, -1};
            KernelLaunch launch{&info, DimsOf(f[8]), DimsOf(f[7]), 0, -1};
            const Price price = chain.PriceKernel(launch, spec);
            table.Add("train-gpt H100 (ours, ncu)", family,
                      Label("%s:%d %s", file, number, head.c_str()), std::stod(ns) / 1e3,
                      (price.duration - spec.pricing.kernelGapNs) / 1e3);
        }
    }
}

// ------------------------------------------------------------------ ../shared/validation-data

void
CheckPublishedGemms(Context& ctx, const std::string& data, Table& table)
{
    for (const auto& r : YAML::LoadFile(data + "/gemm-tracelens-h100.yaml")["rows"])
    {
        const GpuSpec& spec = ctx.Spec("H100-SXM5-80GB");
        GemmShape shape = Shape(r["M"].as<int64_t>(), r["N"].as<int64_t>(), r["K"].as<int64_t>(),
                                r["B"].as<int64_t>(), "bf16");
        // A stride that is not a multiple of 8 bf16 elements (16 B) gets cuBLAS's align-1 kernels.
        for (const char* field : {"stride_A", "stride_B"})
        {
            std::string strides = r[field].as<std::string>();
            for (char& c : strides)
                c = std::isdigit(static_cast<unsigned char>(c)) ? c : ' ';
            std::istringstream in(strides);
            for (long stride; in >> stride;)
                shape.unaligned = shape.unaligned || (stride != 1 && stride % 8 != 0);
        }
        if (r["bias"] && r["bias"].as<bool>())
            shape.epilogue = GemmEpilogue::Bias;
        // Kineto bodies of GEMMs are as long as their back-to-back price (a GEMM's prologue
        // overlaps its predecessor's tail), plus cuBLAS's workspace memset if listed.
        double us = PlanGemm(shape, spec, ctx.minKernelNs).totalNs / 1e3;
        for (const auto& other : r["other_kernels"])
        {
            if (other.as<std::string>().rfind("Memset", 0) == 0)
                us += (MemsetNs(0, spec) - spec.pricing.kernelGapNs) / 1e3;
        }
        table.Add("TraceLens H100", "gemm bf16 inference (TraceLens)",
                  Label("%s b%lld %lldx%lldx%lld", r["op"].as<std::string>().c_str(),
                        (long long)shape.batch, (long long)shape.m, (long long)shape.n,
                        (long long)shape.k),
                  r["kernel_time_us"]["median"].as<double>(), us);
    }
    for (const auto& r : YAML::LoadFile(data + "/gemm-cublaslt-azure.yaml")["rows"])
    {
        const std::string gpu = SpecName(r["gpu"].as<std::string>());
        const std::string dtype = r["dtype"].as<std::string>();
        GemmShape shape =
            Shape(r["m"].as<int64_t>(), r["n"].as<int64_t>(), r["k"].as<int64_t>(), 1, dtype);
        const GpuSpec& spec = ctx.Spec(gpu);
        table.Add(
            "Azure cuBLASLt", "gemm " + dtype.substr(0, 4) + " " + gpu,
            Label("%lldx%lldx%lld", (long long)shape.m, (long long)shape.n, (long long)shape.k),
            r["time_us_derived"].as<double>(),
            PlanGemm(shape, spec, ctx.minKernelNs).totalNs / 1e3);
    }
    for (const auto& r : YAML::LoadFile(data + "/gemm-mamf-mlengineering.yaml")["rows"])
    {
        const std::string gpu = r["accelerator"].as<std::string>();
        const std::string dtype = r["dtype"].as<std::string>();
        // SXM parts only (the specs eidolon ships); PCIe/NVL/GB variants have other clocks.
        if (SpecName(gpu).empty() || gpu.find("SXM") == std::string::npos ||
            gpu.find("GH200") != std::string::npos)
            continue;
        auto s = r["best_shape_mnk"];
        GemmShape shape =
            Shape(s[0].as<int64_t>(), s[1].as<int64_t>(), s[2].as<int64_t>(), 1, dtype);
        const double us =
            2.0 * shape.m * shape.n * shape.k / (r["mamf_tflops"].as<double>() * 1e12) * 1e6;
        table.Add("MAMF best shapes", "gemm " + dtype + " best shape", gpu, us,
                  PlanGemm(shape, ctx.Spec(SpecName(gpu)), ctx.minKernelNs).totalNs / 1e3);
    }
}

void
CheckPublishedAttention(Context& ctx, const std::string& data, Table& table)
{
    const GpuSpec& spec = ctx.Spec("H100-SXM5-80GB");
    const double gap = spec.pricing.kernelGapNs;
    auto price = [&](AttentionShape a)
    { return (AttentionNs(a, spec, ctx.minKernelNs) - gap) / 1e3; };
    auto shapeOf = [](const YAML::Node& r, AttentionKind kind)
    {
        AttentionShape a;
        a.batch = r["batch"].as<int64_t>();
        a.heads = r["nheads"].as<int64_t>();
        a.seqQ = a.seqK = r["seq_len"].as<int64_t>();
        a.headDim = r["head_dim"].as<int64_t>();
        a.causal = r["causal"].as<bool>();
        a.kind = kind;
        return a;
    };
    for (const auto& r : YAML::LoadFile(data + "/attention-fa2-fwdbwd-h100.yaml")["rows"])
    {
        if (r["impl"].as<std::string>() != "flashattention2" || r["tflops"].IsNull())
            continue;
        AttentionShape a = shapeOf(r, AttentionKind::Fa2);
        double us = price(a);
        a.backward = true;
        us += price(a);
        table.Add(
            "FlashAttention-2 H100", "attention FA2 fwd+bwd (published)",
            Label("hd%lld s%lld causal=%d", (long long)a.headDim, (long long)a.seqQ, a.causal),
            r["time_ms_derived"].as<double>() * 1e3, us);
    }
    for (const auto& r : YAML::LoadFile(data + "/attention-fa3-fwd-h100.yaml")["rows"])
    {
        const std::string impl = r["impl"].as<std::string>();
        if ((impl != "flashattention2" && impl != "flashattention3") || r["tflops"].IsNull())
            continue;
        const bool fa3 = impl == "flashattention3";
        AttentionShape a = shapeOf(r, fa3 ? AttentionKind::Fa3 : AttentionKind::Fa2);
        table.Add(
            "FlashAttention-3 H100",
            fa3 ? "attention FA3 fwd (published)" : "attention FA2 fwd (published)",
            Label("hd%lld s%lld causal=%d", (long long)a.headDim, (long long)a.seqQ, a.causal),
            r["time_ms_derived"].as<double>() * 1e3, price(a));
    }
}

void
CheckPublishedBandwidth(Context& ctx, const std::string& data, Table& table)
{
    // STREAM-like kernels on arrays far larger than L2 (the benchmark's default 2^28 floats):
    // compare the rate with 1 GiB per array.
    const double bytes = double(1ull << 30);
    for (const auto& r : YAML::LoadFile(data + "/gemm-cublaslt-azure.yaml")["memory_bandwidth"])
    {
        if (!r["tb_per_s"])
            continue;
        const std::string vm = r["vm"].as<std::string>();
        const std::string gpu = vm.find("A100") != std::string::npos   ? "A100-SXM4-80GB"
                                : vm.find("H200") != std::string::npos ? "H200-SXM-141GB"
                                                                       : "H100-SXM5-80GB";
        const std::string kernel = r["kernel"].as<std::string>();
        const double arrays = kernel == "Copy" || kernel == "Mul" ? 2 : kernel == "Dot" ? 2 : 3;
        const GpuSpec& spec = ctx.Spec(gpu);
        const double moved = arrays * bytes;
        const double model =
            MemoryBoundNs(moved, moved, spec.pricing.hbmEfficiency, spec, spec.pricing.kernelMinNs);
        table.Add("Azure HBM", "memory-bound kernels " + gpu, kernel,
                  moved / (r["tb_per_s"].as<double>() * 1e12) * 1e6, model / 1e3);
    }
}

} // namespace

int
main(int argc, char** argv)
{
    bool rows = false;
    std::string measurements =
        std::string(EIDOLON_SOURCE_DIR) + "/validation/measurements/h100-2026-11-24";
    // ../shared/validation-data beside the checkout (or beside the worktree folder it sits in).
    std::string data = std::string(EIDOLON_SOURCE_DIR) + "/../shared/validation-data";
    if (!std::ifstream(data + "/INDEX.md").good())
    {
        data = std::string(EIDOLON_SOURCE_DIR) + "/../../shared/validation-data";
    }
    for (int i = 1; i < argc; ++i)
    {
        std::string arg = argv[i];
        if (arg == "--rows")
            rows = true;
        else if (arg == "--measurements" && i + 1 < argc)
            measurements = argv[++i];
        else if (arg == "--validation-data" && i + 1 < argc)
            data = argv[++i];
        else
        {
            std::fprintf(stderr, "usage: eidolon-pricing-check [--rows] [--measurements DIR] "
                                 "[--validation-data DIR]\n");
            return 2;
        }
    }
    Context ctx;
    ctx.specDir = std::string(EIDOLON_SOURCE_DIR) + "/topologies/gpus";
    Table table(rows);
    try
    {
        CheckGemms(ctx, measurements, table);
        CheckMemory(ctx, measurements, table);
        CheckTorch(ctx, measurements, table);
        CheckTrainGpt(ctx, measurements, table);
        if (std::ifstream(data + "/gemm-tracelens-h100.yaml").good())
        {
            CheckPublishedGemms(ctx, data, table);
            CheckPublishedAttention(ctx, data, table);
            CheckPublishedBandwidth(ctx, data, table);
        }
        else
        {
            std::fprintf(stderr, "eidolon-pricing-check: %s not found; published sets skipped\n",
                         data.c_str());
        }
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "eidolon-pricing-check: %s\n", e.what());
        return 1;
    }
    table.Print();
    return 0;
}
