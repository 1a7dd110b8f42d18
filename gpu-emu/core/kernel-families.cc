// KernelFamilyModel: PyTorch's own kernels recognised by their (demangled) names and launch
// geometry. What each family's geometry says about its size comes from PyTorch's launch code
// (aten/src/ATen/native/cuda/CUDALoops.cuh, MultiTensorApply.cuh, flash_attn/flash_api.cpp):
//  - vectorized_elementwise_kernel: 128 threads x 8 elements per block (io_block_work_size);
//    elementwise_kernel<T, W> and unrolled_elementwise_kernel: T x W elements per block (4 when the
//    name does not say); std::array<char*, N>: N operands (inputs and the output).
//  - multi_tensor_apply_kernel<TensorListMetadata<N>, ...>: one 65536-element chunk per block
//    (kChunkSize), N tensor lists of which all but the first-listed are read and N-1 written
//    (AdamW: param, grad, exp_avg, exp_avg_sq: 4 read + 3 written).
//  - pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<D, BM, BN, ...>, dropout, causal, ...>
//    grid (ceil(seqQ/BM), batch, heads); flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel grid
//    (ceil(seqK/BN), batch, heads); flash_bwd_dot_do_o_kernel and flash_bwd_convert_dq_kernel are
//    memory-bound passes over dO/O and dQ.
#include "cost-model.h"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <string>

namespace eidolon::gpu
{
namespace
{

// Bytes of the element type a PyTorch kernel's name is templated on (the first one it names).
double
ElementBytes(const std::string& name)
{
    struct TypeBytes
    {
        const char* type;
        double bytes;
    };
    static const TypeBytes types[] = {{"c10::BFloat16", 2}, {"c10::Half", 2}, {"double", 8},
                                      {"float", 4},         {"long", 8},      {"int", 4},
                                      {"unsigned char", 1}, {"bool", 1},      {"c10::Float8", 1}};
    size_t best = std::string::npos;
    double bytes = 4;
    for (const auto& entry : types)
    {
        size_t at = name.find(entry.type);
        if (at != std::string::npos && (best == std::string::npos || at < best))
        {
            best = at;
            bytes = entry.bytes;
        }
    }
    // A cast (bf16 <-> float) moves the average of its two sides.
    if (name.find("c10::BFloat16") != std::string::npos &&
        name.find("float") != std::string::npos &&
        name.find("direct_copy_kernel") != std::string::npos)
    {
        bytes = 3;
    }
    return bytes;
}

// The integer template arguments of `prefix<a, b, c...` as written in a demangled name.
std::vector<long>
IntArgs(const std::string& name, const std::string& prefix)
{
    std::vector<long> args;
    size_t at = name.find(prefix);
    if (at == std::string::npos)
    {
        return args;
    }
    const char* p = name.c_str() + at + prefix.size();
    while (*p)
    {
        while (*p == ' ')
        {
            ++p;
        }
        char* end = nullptr;
        long value = std::strtol(p, &end, 10);
        if (end == p)
        {
            break;
        }
        args.push_back(value);
        p = end;
        if (*p != ',')
        {
            break;
        }
        ++p;
    }
    return args;
}

// The booleans that follow the kernel traits in a flash kernel's name: `>, false, true, ...`.
std::vector<bool>
FlashFlags(const std::string& name)
{
    std::vector<bool> flags;
    static const std::regex flag("(true|false)");
    size_t at = name.find("> >, ");
    if (at == std::string::npos)
    {
        return flags;
    }
    std::string tail = name.substr(at + 5);
    for (auto it = std::sregex_iterator(tail.begin(), tail.end(), flag);
         it != std::sregex_iterator(); ++it)
    {
        flags.push_back(it->str() == "true");
    }
    return flags;
}

int
Operands(const std::string& name)
{
    std::vector<long> n = IntArgs(name, "std::array<char*, ");
    return n.empty() ? 2 : int(n[0]);
}

std::optional<Ns>
Elementwise(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    double perBlock = 0;
    if (name.rfind("at::native::vectorized_elementwise_kernel<", 0) == 0)
    {
        perBlock = double(launch.block.Count()) * 8;
    }
    else if (name.rfind("at::native::elementwise_kernel<", 0) == 0)
    {
        std::vector<long> args = IntArgs(name, "at::native::elementwise_kernel<");
        perBlock = args.size() >= 2 ? double(args[0] * args[1]) : double(launch.block.Count()) * 4;
    }
    else if (name.rfind("at::native::unrolled_elementwise_kernel<", 0) == 0)
    {
        perBlock = double(launch.block.Count()) * 4;
    }
    else
    {
        return std::nullopt;
    }
    const double elements = perBlock * double(launch.grid.Count());
    const double bytes = elements * Operands(name) * ElementBytes(name);
    return MemoryBoundNs(bytes, bytes, spec.pricing.hbmEfficiency, spec, floor);
}

std::optional<Ns>
MultiTensorApply(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    if (name.find("multi_tensor_apply_kernel<") == std::string::npos)
    {
        return std::nullopt;
    }
    constexpr double kChunk = 65536;
    std::vector<long> lists = IntArgs(name, "TensorListMetadata<");
    const double depth = lists.empty() ? 2 : double(lists[0]);
    const double elements = kChunk * double(launch.grid.Count());
    const double bytes = elements * (2 * depth - 1) * ElementBytes(name);
    return MemoryBoundNs(bytes, bytes, spec.pricing.hbmEfficiency, spec, floor);
}

std::optional<Ns>
FlashAttention(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    if (name.rfind("pytorch_flash::flash_", 0) != 0 && name.rfind("flash::flash_", 0) != 0)
    {
        return std::nullopt;
    }
    const bool backward = name.find("flash_bwd") != std::string::npos;
    std::vector<long> traits =
        IntArgs(name, backward ? "Flash_bwd_kernel_traits<" : "Flash_fwd_kernel_traits<");
    if (traits.size() < 3)
    {
        return std::nullopt;
    }
    AttentionShape a;
    a.headDim = traits[0];
    a.batch = launch.grid.y;
    a.heads = launch.grid.z;
    if (name.find("flash_fwd_kernel<") != std::string::npos ||
        name.find("flash_bwd_dq_dk_dv_loop") != std::string::npos)
    {
        // Self-attention: the key length is the query length the grid covers.
        const long block = backward ? traits[2] : traits[1];
        a.seqQ = a.seqK = int64_t(launch.grid.x) * block;
        std::vector<bool> flags = FlashFlags(name);
        a.causal = flags.size() >= 2 && flags[1]; // <traits, Is_dropout, Is_causal, ...>
        a.backward = backward;
        return AttentionNs(a, spec, floor);
    }
    // Helpers of the backward pass: one pass over dO and O (bf16), or dQ (fp32 in, bf16 out).
    const double rows = double(launch.grid.Count()) * double(traits[1]);
    const double perRow = name.find("convert_dq") != std::string::npos ? 6.0 : 4.0;
    const double bytes = rows * double(a.headDim) * perRow;
    return MemoryBoundNs(bytes, bytes, spec.pricing.hbmEfficiency, spec, floor);
}

} // namespace

std::optional<Ns>
KernelFamilyModel::PriceKernel(const KernelLaunch& launch, const GpuSpec& spec)
{
    if (!launch.kernel || !spec.pricing.present)
    {
        return std::nullopt; // without measured constants the roofline's families apply
    }
    const std::string& name = launch.kernel->name;
    const Ns floor = spec.pricing.kernelMinNs > 0 ? spec.pricing.kernelMinNs : m_minKernelNs;
    if (auto price = Elementwise(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = MultiTensorApply(launch, name, spec, floor))
    {
        return price;
    }
    return FlashAttention(launch, name, spec, floor);
}

} // namespace eidolon::gpu
