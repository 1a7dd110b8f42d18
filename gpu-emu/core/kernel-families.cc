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
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <string_view>
#include <utility>

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
    static const TypeBytes types[] = {{"c10::complex<float>", 8},
                                      {"c10::BFloat16", 2},
                                      {"c10::Half", 2},
                                      {"double", 8},
                                      {"float", 4},
                                      {"long", 8},
                                      {"int", 4},
                                      {"unsigned char", 1},
                                      {"bool", 1},
                                      {"c10::Float8", 1}};
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

// ------------------------------------------------------------------ PyTorch kernels sized by
// argument

// The top-level parameter types of a demangled function name: "f<...>(int, float, T const*)" ->
// {"int", "float", "T const*"}. The parameter list fixes which argument is which, so a size read
// from the launch's argument array is read only where the name says that parameter is an integer.
std::vector<std::string>
Parameters(const std::string& name)
{
    std::vector<std::string> parameters;
    if (name.empty() || name.back() != ')')
    {
        return parameters;
    }
    int depth = 0;
    size_t open = std::string::npos;
    for (size_t i = name.size(); i-- > 0;)
    {
        const char c = name[i];
        depth += (c == ')' || c == '>') ? 1 : (c == '(' || c == '<') ? -1 : 0;
        if (depth == 0)
        {
            open = i;
            break;
        }
    }
    if (open == std::string::npos)
    {
        return parameters;
    }
    std::string current;
    depth = 0;
    for (size_t i = open + 1; i + 1 < name.size(); ++i)
    {
        const char c = name[i];
        depth += (c == '(' || c == '<') ? 1 : (c == ')' || c == '>') ? -1 : 0;
        if (c == ',' && depth == 0)
        {
            parameters.push_back(current);
            current.clear();
            continue;
        }
        if (!(c == ' ' && current.empty()))
        {
            current += c;
        }
    }
    if (!current.empty())
    {
        parameters.push_back(current);
    }
    return parameters;
}

// Parameter `index` when the name declares it `int` or `long` and the launch carries arguments.
std::optional<double>
SizeArgument(const KernelLaunch& launch, const std::string& name, size_t index)
{
    const std::vector<std::string> parameters = Parameters(name);
    if (!launch.args || index >= parameters.size() || !launch.args[index])
    {
        return std::nullopt;
    }
    double value = 0;
    if (parameters[index] == "int" || parameters[index] == "unsigned int")
    {
        int32_t v = 0;
        std::memcpy(&v, launch.args[index], sizeof v);
        value = v;
    }
    else if (parameters[index] == "long" || parameters[index] == "unsigned long")
    {
        int64_t v = 0;
        std::memcpy(&v, launch.args[index], sizeof v);
        value = double(v);
    }
    return value > 0 ? std::optional<double>(value) : std::nullopt;
}

// The element bytes read plus written by unrolled_elementwise_kernel<..., LoadWithCast<1>,
// StoreWithCast<1> >(int N, f, data, ic, oc, loader, storer): each of loader and storer holds
// {ScalarType dtypes[1]; uint32_t element_sizes[1]} (ATen/native/cuda/MemoryAccess.cuh), the size
// at byte 4. Returns {in, out} bytes per element.
std::optional<std::pair<double, double>>
CastSizes(const KernelLaunch& launch, const std::string& name)
{
    if (!launch.args || name.find("LoadWithCast<1>") == std::string::npos)
    {
        return std::nullopt;
    }
    const std::vector<std::string> parameters = Parameters(name);
    if (parameters.size() != 7 || parameters[5].find("LoadWithCast<1>") == std::string::npos ||
        parameters[6].find("StoreWithCast<1>") == std::string::npos || !launch.args[5] ||
        !launch.args[6])
    {
        return std::nullopt;
    }
    uint32_t in = 0, out = 0;
    std::memcpy(&in, static_cast<const char*>(launch.args[5]) + 4, sizeof in);
    std::memcpy(&out, static_cast<const char*>(launch.args[6]) + 4, sizeof out);
    if (in == 0 || in > 16 || out == 0 || out > 16)
    {
        return std::nullopt;
    }
    return std::make_pair(double(in), double(out));
}

int
Operands(const std::string& name)
{
    std::vector<long> n = IntArgs(name, "std::array<char*, ");
    if (!n.empty())
    {
        return int(n[0]);
    }
    // gpu_kernel_impl_nocast<...> names carry the functor, not the operand array: a binary
    // functor reads two operands and writes one.
    const bool binary = name.find("BinaryFunctor<") != std::string::npos ||
                        name.find("CUDAFunctor_add<") != std::string::npos;
    return binary ? 3 : 2;
}

// Threads resident on one SM for a launch of `block` threads: as many whole blocks as the SM's
// thread limit takes (at most 32 blocks, the CUDA occupancy limit), no more than the grid gives it.
double
ResidentThreadsPerSm(const KernelLaunch& launch, const GpuSpec& spec)
{
    const double block = std::max<double>(1, double(launch.block.Count()));
    const double limit = spec.maxThreadsPerSm > 0 ? spec.maxThreadsPerSm : 2048;
    const double blocksPerSm = std::min(32.0, std::floor(limit / block));
    const double gridPerSm = std::ceil(double(launch.grid.Count()) / std::max(1, spec.smCount));
    return std::max(1.0, std::min(blocksPerSm, gridPerSm)) * block;
}

// The OffsetCalculator<N, uint32_t> that gpu_kernel_impl_nocast's lambda captures for the legacy
// elementwise_kernel<nt, vt, ...>(int N, f) (CUDALoops.cuh, OffsetCalculator.cuh): `int dims;
// IntDivider<uint32_t> sizes_[25] {divisor, m1, shift}; uint32_t strides_[25][N]` (byte strides,
// operand 0 the output, dimension 0 the innermost). The closure's layout is the compiler's, so the
// calculator is found by its signature: 1..25 dims whose divisors multiply to the element count,
// each with the shift IntDivider derives from it (the smallest s with 2^s >= divisor).
constexpr double kSectorBytes = 32; // the unit an SM fetches from L2
constexpr int kMaxDims = 25;        // MAX_DIMS

struct OffsetLayout
{
    int dims = 0;
    uint32_t sizes[kMaxDims] = {};
    uint32_t strides[kMaxDims][8] = {};
};

std::optional<OffsetLayout>
ReadOffsetCalculator(const KernelLaunch& launch, int operands, double elements)
{
    if (!launch.args || !launch.args[1] || operands > 8 || elements < 1)
    {
        return std::nullopt;
    }
    const char* closure = static_cast<const char*>(launch.args[1]);
    const size_t calculatorBytes = 4 + kMaxDims * 12 + size_t(kMaxDims) * operands * 4;
    for (size_t at = 0; at <= size_t(8 * operands); at += 4)
    {
        // The parameter bytes, when the cubin gives them, hold int N (padded to 8) and the closure.
        if (launch.argBytes >= 0 && size_t(launch.argBytes) < 8 + at + calculatorBytes)
        {
            break;
        }
        int32_t dims = 0;
        std::memcpy(&dims, closure + at, sizeof dims);
        if (dims < 1 || dims > kMaxDims)
        {
            continue;
        }
        OffsetLayout layout;
        layout.dims = dims;
        double product = 1;
        bool valid = true;
        for (int i = 0; i < dims && valid; ++i)
        {
            uint32_t divider[3];
            std::memcpy(divider, closure + at + 4 + 12 * size_t(i), sizeof divider);
            uint32_t shift = 0;
            while (shift < 32 && (uint64_t(1) << shift) < divider[0])
            {
                ++shift;
            }
            valid = divider[0] >= 1 && divider[2] == shift;
            layout.sizes[i] = divider[0];
            product *= divider[0];
        }
        if (!valid || product != elements)
        {
            continue;
        }
        const char* strides = closure + at + 4 + 12 * kMaxDims;
        for (int i = 0; i < dims; ++i)
        {
            std::memcpy(layout.strides[i], strides + 4 * size_t(i) * operands,
                        4 * size_t(operands));
        }
        return layout;
    }
    return std::nullopt;
}

// PyTorch's elementwise kernels (CUDALoops.cuh): each thread loads its elements of every input at
// once (vectorized_elementwise_kernel<VEC>: one VEC-wide vector per input; elementwise_kernel<nt,
// vt> and unrolled_elementwise_kernel: vt or thread_work_size = 4 scalars per input), waits, then
// computes and stores, and the block exits. Those loads are all a thread has in flight, so besides
// the HBM rate the kernel is bound by LatencyBoundMemoryNs (the load round).
std::optional<Ns>
Elementwise(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    double perBlock = 0;
    double perThread = 4; // elements a thread loads of each input
    if (name.rfind("at::native::vectorized_elementwise_kernel<", 0) == 0)
    {
        std::vector<long> vec = IntArgs(name, "at::native::vectorized_elementwise_kernel<");
        perThread = vec.empty() ? 8 : double(vec[0]);
        perBlock = double(launch.block.Count()) * 8;
    }
    else if (name.rfind("at::native::elementwise_kernel<", 0) == 0)
    {
        std::vector<long> args = IntArgs(name, "at::native::elementwise_kernel<");
        perThread = args.size() >= 2 ? double(args[1]) : 4;
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
    // The exact count is the kernel's first argument (int N) when the launch carries arguments;
    // the grid gives it rounded up to whole blocks.
    const double elements =
        SizeArgument(launch, name, 0).value_or(perBlock * double(launch.grid.Count()));
    const int operands = Operands(name);
    double element = ElementBytes(name);
    double perElement = operands * element;
    double readPerElement = (operands - 1) * element; // one output
    if (name.find("bfloat16_copy_kernel_cuda") != std::string::npos)
    {
        perElement = 6; // float in, bf16 out
        readPerElement = element = 4;
    }
    if (auto sizes = CastSizes(launch, name))
    {
        // A cast through LoadWithCast/StoreWithCast converts each element by its runtime dtype:
        // sizes = in + out bytes; the in side is what a thread has in flight.
        perElement = sizes->first + sizes->second;
        readPerElement = element = sizes->first;
    }
    double bytes = elements * perElement;
    const double inputs = element > 0 ? readPerElement / element : 0;
    // The legacy (non-contiguous) path carries its OffsetCalculator: a broadcast input is read
    // from HBM once, and an input whose innermost stride is not one element costs a 32-byte
    // sector through L2 for every element (uncoalesced: 32 lanes, 32 sectors).
    double sectorBytes = 0;
    if (name.rfind("at::native::elementwise_kernel<", 0) == 0 && operands >= 2)
    {
        if (auto layout = ReadOffsetCalculator(launch, operands, elements))
        {
            bytes = elements * element; // the output
            for (int k = 1; k < operands; ++k)
            {
                double unique = element;
                for (int i = 0; i < layout->dims; ++i)
                {
                    unique *= layout->strides[i][k] != 0 ? double(layout->sizes[i]) : 1.0;
                }
                bytes += unique;
                const uint32_t inner = layout->strides[0][k];
                if (layout->sizes[0] > 1 && inner != 0 && inner != uint32_t(element))
                {
                    sectorBytes += elements * kSectorBytes;
                }
            }
        }
    }
    const Ns price = LatencyBoundMemoryNs(
        bytes, bytes, elements * readPerElement, perThread * element * inputs,
        ResidentThreadsPerSm(launch, spec), spec.pricing.hbmEfficiency, spec, floor);
    if (sectorBytes > 0 && spec.pricing.l2BytesPerSecond > 0)
    {
        return std::max(price, floor + sectorBytes / spec.pricing.l2BytesPerSecond * 1e9 +
                                   spec.pricing.kernelGapNs);
    }
    return price;
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
    // ForeachFunctors.cuh: XxxFunctor<T, depth, r_args_depth, res_arg_index> reads r_args_depth
    // lists and writes one (in place when res_arg_index is 0); LpNormFunctor (foreach norm) only
    // reads, ZeroFunctor only writes. Others (FusedAdamMathFunctor: param, grad, exp_avg,
    // exp_avg_sq read, three written) move 2 x depth - 1.
    double perElement = 2 * depth - 1;
    static const std::regex functor(R"((\w+Functor)<[^<>]*?(\d+), (\d+), (\d+)>)");
    std::smatch m;
    if (name.find("FusedAdam") == std::string::npos && std::regex_search(name, m, functor))
    {
        const double reads = std::stod(m[3]);
        perElement = m[1] == "ZeroFunctor" ? 1 : m[1] == "LpNormFunctor" ? reads : reads + 1;
    }
    const double bytes = elements * perElement * ElementBytes(name);
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

// ------------------------------------------------------------------ PyTorch reductions and cat

// reduce_kernel<nt, output_vec_size, ReduceOp<scalar_t, ops_t, index_t, out_scalar_t, vt0,
// input_vec_size>>(ReduceOp) (aten/src/ATen/native/cuda/Reduce.cuh). Its only argument is the
// ReduceOp, whose members begin `ops_t ops; arg_t ident; ReduceConfig config;`, and ReduceConfig
// with `int element_size_bytes, num_inputs, num_outputs, step_input, step_output,
// ctas_per_output, input_mult[3], output_mult[2], block_width, block_height, num_threads`.
// setReduceConfig launches block (block_width, block_height) and grid (outputs / step_output,
// ctas_per_output). ops and ident vary in size with the op (an empty functor and a float; Welford's
// state is larger), so the config is found by its signature: the block and grid.y it must equal.
struct ReduceConfigView
{
    double accumulatorBytes = 4, inputs = 0, outputs = 0, ctasPerOutput = 1;
    bool blockXReduce = false; // lanes split the input (contiguous reduction): one partial a block
};

std::optional<ReduceConfigView>
ReadReduceConfig(const KernelLaunch& launch)
{
    constexpr size_t kConfigBytes = 14 * 4; // through num_threads
    constexpr size_t kMaxOffset = 64;
    if (!launch.args || !launch.args[0] ||
        (launch.argBytes >= 0 && size_t(launch.argBytes) < kConfigBytes + kMaxOffset))
    {
        return std::nullopt;
    }
    const char* op = static_cast<const char*>(launch.args[0]);
    for (size_t offset = 0; offset <= kMaxOffset; offset += 4)
    {
        int32_t c[14];
        std::memcpy(c, op + offset, sizeof c);
        const bool element = c[0] == 1 || c[0] == 2 || c[0] == 4 || c[0] == 8 || c[0] == 16;
        if (element && c[1] > 0 && c[2] > 0 && c[5] == int32_t(launch.grid.y) &&
            c[11] == int32_t(launch.block.x) && c[12] == int32_t(launch.block.y) &&
            c[13] == c[11] * c[12])
        {
            ReduceConfigView view;
            view.accumulatorBytes = c[0];
            view.inputs = c[1];
            view.outputs = c[2];
            view.ctasPerOutput = c[5];
            view.blockXReduce = c[6] != 0; // input_mult[BLOCK_X]
            return view;
        }
    }
    return std::nullopt;
}

// A reduction reads every input once (at the rate copies reach: its loop keeps loads in flight) and
// writes one value per output; split over ctas_per_output blocks (should_global_reduce), each block
// also writes its partial of every output it covers to a staging buffer that the last block reads
// back.
std::optional<Ns>
TorchReduce(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    if (name.find("reduce_kernel<") == std::string::npos)
    {
        return std::nullopt;
    }
    const auto config = ReadReduceConfig(launch);
    if (!config)
    {
        return std::nullopt;
    }
    const size_t op = name.find("ReduceOp<");
    const double element = ElementBytes(op == std::string::npos ? name : name.substr(op));
    const double reads = config->inputs * config->outputs * element;
    double bytes = reads + config->outputs * element;
    if (config->ctasPerOutput > 1)
    {
        // One partial an output a CTA (global_reduce's staging_memory_offset).
        bytes += 2 * config->outputs * config->ctasPerOutput * config->accumulatorBytes;
    }
    return MemoryBoundNs(bytes, reads, spec.pricing.hbmEfficiency, spec, floor);
}

// CatArrayBatchedCopy<T, IndexType, Dims, batch_size, stride_size>(T* out,
// CatArrInputTensorMetadata<T, IndexType, batch_size, stride_size> inputs, ...)
// (aten/src/ATen/native/cuda/Shape.cu): grid (2 x SMs, inputs in the batch), a grid-stride loop of
// one element at a time; every element's output offset (and, for an input that is not contiguous,
// its input offset) is CatArrIndexToOffset: Dims - 1 integer divisions by runtime sizes. An integer
// division compiles to up to 20 instructions (CUDA C++ Programming Guide, "Arithmetic
// Instructions"), so the kernel is issue-bound: 4 warp schedulers per SM each issue one warp
// instruction a clock (NVIDIA Hopper/Ampere architecture whitepapers). The metadata struct is
// `T* input[n]; IndexType offset[n], dimSize[n], nElements[n]; bool isContiguous[n]; ...`.
// CatArrayBatchedCopy_vectorized<T, IndexType, Dims, batch_size, stride_size, alignment,
// elems_per_vec>(char* out, the same metadata, ...), used for contiguous inputs (PyTorch 2.6 on),
// moves a vector of elems_per_vec elements an iteration: one offset computation a vector.
std::optional<Ns>
TorchCat(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    if (name.find("CatArrayBatchedCopy") == std::string::npos ||
        name.find("_contig<") != std::string::npos || !launch.args || !launch.args[1])
    {
        return std::nullopt;
    }
    // <OpaqueType<bytes>, unsigned int, Dims, batch_size, stride_size[, alignment, elems_per_vec]>
    static const std::regex cat(
        R"(CatArrayBatchedCopy(_vectorized)?<[^<]*OpaqueType<(\d+)u?>, unsigned int, (\d+), (\d+), (\d+)(?:, (\d+), (\d+))?>)");
    std::smatch m;
    if (!std::regex_search(name, m, cat) || (m[1].matched && !m[7].matched))
    {
        return std::nullopt;
    }
    const double element = std::stod(m[2]);
    const long dims = std::stol(m[3]), batch = std::stol(m[4]);
    const double perVector = m[1].matched ? std::max(1.0, std::stod(m[7])) : 1.0;
    const long inputs = std::min<long>(launch.grid.y, batch);
    const char* meta = static_cast<const char*>(launch.args[1]);
    const size_t countsAt = size_t(batch) * (8 + 4 + 4),
                 contiguousAt = countsAt + size_t(batch) * 4;
    if (launch.argBytes >= 0 && size_t(launch.argBytes) < contiguousAt + size_t(batch))
    {
        return std::nullopt;
    }
    constexpr double kDivisionInstructions = 20; // Programming Guide: "up to 20 instructions"
    constexpr double kPerDimension =
        kDivisionInstructions + 3;    // and a multiply-subtract, a multiply-add
    constexpr double kPerElement = 8; // load, store, loop and address arithmetic
    double elements = 0, instructions = 0;
    for (long i = 0; i < inputs; ++i)
    {
        uint32_t n = 0;
        bool contiguous = true;
        std::memcpy(&n, meta + countsAt + 4 * size_t(i), sizeof n);
        std::memcpy(&contiguous, meta + contiguousAt + size_t(i), sizeof contiguous);
        const double offsets = contiguous ? 1 : 2;
        elements += n;
        instructions +=
            n / perVector * (kPerElement + offsets * (double(dims - 1) * kPerDimension + 2));
    }
    if (elements <= 0)
    {
        return std::nullopt;
    }
    constexpr double kSchedulersPerSm = 4;
    const double issueRate = double(spec.smCount) * kSchedulersPerSm * spec.boostClockMhz * 1e6;
    const double bytes = 2 * elements * element;
    const Ns memory = MemoryBoundNs(bytes, bytes, spec.pricing.hbmEfficiency, spec, floor);
    const Ns issue = floor + instructions / 32 / issueRate * 1e9 + spec.pricing.kernelGapNs;
    return std::max(memory, issue);
}

// Rates PyTorch's reduction-style kernels reach, as fractions of the achievable HBM rate
// (hbm_efficiency): calibrated on our H100 rows (validation/measurements/h100-2026-11-24/
// torch-kernels.jsonl, the largest shapes), the same rows the pricing check compares with.
constexpr double kNormForwardFraction = 0.72;     // vectorized_layer_norm_kernel: 1.8-2.6 TB/s
constexpr double kGammaBetaFraction = 0.43;       // weight-gradient column sums: 1.2-1.3 TB/s
constexpr double kRegisterSoftmaxFraction = 0.45; // cunn_SoftMaxForwardReg: 1.24 TB/s
constexpr double kWarpSoftmaxFraction = 0.6;      // softmax_warp_forward at 2048 wide: 1.7 TB/s

// One block per row (grid.x rows) of `cols` elements, cols being the integer argument `index`:
// passes over the rows x cols elements (a multi-pass softmax reads its input three times).
struct RowKernel
{
    const char* kernel;
    size_t colsArgument;
    double reads, writes;
    double fraction;
    bool oneLoadRound = false; // the row is loaded once into registers (norms)
};

std::optional<Ns>
TorchRowKernel(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    static const RowKernel kernels[] = {
        {"vectorized_layer_norm_kernel<", 0, 1, 1, kNormForwardFraction, true},
        {"layer_norm_grad_input_kernel_vectorized<", 6, 2, 1, 1.0, true},
        {"cunn_SoftMaxForwardReg<", 2, 1, 1, kRegisterSoftmaxFraction},
        {"cunn_SoftMaxForwardSmem<", 2, 1, 1, 1.0},
        {"cunn_SoftMaxForward<", 2, 3, 1, 1.0},
        {"cunn_SoftMaxBackwardSmem<", 3, 2, 1, 1.0},
        {"cunn_SoftMaxBackward<", 3, 3, 1, 1.0},
    };
    const double hbm = spec.pricing.hbmEfficiency;
    for (const auto& kernel : kernels)
    {
        if (name.find(kernel.kernel) == std::string::npos)
        {
            continue;
        }
        const double element = ElementBytes(name);
        auto cols = SizeArgument(launch, name, kernel.colsArgument);
        if (!cols)
        {
            return std::nullopt;
        }
        // Per row: one read and the writes from HBM, and mean/rstd (8 B) for the norms.
        const double rows = double(launch.grid.x);
        const double rowBytes = *cols * element;
        const double bytes = rows * (rowBytes * (1 + kernel.writes) + 8);
        Ns price = MemoryBoundNs(bytes, bytes, hbm * kernel.fraction, spec, floor);
        if (kernel.oneLoadRound && spec.pricing.loadRoundNs > 0)
        {
            // A norm loads its row once and the block exits: however few the bytes, each wave
            // of resident blocks takes a load round (narrow rows: many short blocks).
            const double perWave = ResidentThreadsPerSm(launch, spec) /
                                   double(std::max<uint64_t>(1, launch.block.Count())) *
                                   spec.smCount;
            const double waves = std::ceil(rows / perWave);
            price = std::max(price,
                             floor + waves * spec.pricing.loadRoundNs + spec.pricing.kernelGapNs);
        }
        if (kernel.reads > 1)
        {
            // A multi-pass kernel reads each row again: from L2 while the rows of the resident
            // blocks (2048 threads per SM) fit in the L2-resident size, else from HBM.
            const double resident =
                double(spec.smCount) * std::max(1.0, 2048.0 / double(launch.block.Count()));
            const bool inL2 = spec.pricing.l2BytesPerSecond > 0 &&
                              resident * rowBytes <= double(spec.pricing.l2ResidentBytes);
            const double rate =
                inL2 ? spec.pricing.l2BytesPerSecond : spec.hbmBandwidth * hbm * kernel.fraction;
            price += rows * rowBytes * (kernel.reads - 1) / rate * 1e9;
        }
        return price;
    }
    if (name.find("GammaBetaBackward") != std::string::npos)
    {
        const double element = ElementBytes(name);
        // (long M, long N, dY, X, mean, rstd, dgamma, dbeta): reads dY and X, M x N each.
        auto rows = SizeArgument(launch, name, 0), cols = SizeArgument(launch, name, 1);
        if (!rows || !cols)
        {
            return std::nullopt;
        }
        const double bytes = *rows * *cols * 2 * element + *rows * 8 + *cols * 2 * element;
        return MemoryBoundNs(bytes, bytes, hbm * kGammaBetaFraction, spec, floor);
    }
    return std::nullopt;
}

// embedding_backward_feature_kernel<scalar_t, acc, index_t>(indices, grad, grad_weight, int n,
// long stride, int padding_idx) (aten/src/ATen/native/cuda/Embedding.cu), PyTorch's backward for
// few tokens: a block of (32, 32) threads owns 32 features and walks all n tokens in chunks of
// blockDim.y: load the chunk's gradient rows, __syncthreads, the leading warp of each set of equal
// indices adds them into grad_weight (a read-modify-write), __syncthreads. The chunks are a serial
// chain of two dependent global accesses each; blocks run in waves of 2048 threads an SM.
std::optional<Ns>
EmbeddingBackwardFeature(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec,
                         Ns floor)
{
    if (name.find("embedding_backward_feature_kernel<") == std::string::npos)
    {
        return std::nullopt;
    }
    const auto tokens = SizeArgument(launch, name, 3), stride = SizeArgument(launch, name, 4);
    if (!tokens || !stride)
    {
        return std::nullopt;
    }
    const double element = ElementBytes(name);
    const double bytes = 3 * *tokens * *stride * element; // grad read, grad_weight read + written
    const double chunks = std::ceil(*tokens / std::max(1.0, double(launch.block.y)));
    const double perWave = ResidentThreadsPerSm(launch, spec) /
                           double(std::max<uint64_t>(1, launch.block.Count())) * spec.smCount;
    const double waves = std::ceil(double(launch.grid.Count()) / perWave);
    const Ns chain =
        floor + waves * chunks * 2 * spec.pricing.dependentLoadNs + spec.pricing.kernelGapNs;
    return std::max(MemoryBoundNs(bytes, bytes, spec.pricing.hbmEfficiency, spec, floor), chain);
}

// nll_loss_forward_reduce_cuda_kernel_2d(output, total_weight, input, target, weights,
// size_average, long nframe, ...) and nll_loss_backward_reduce_cuda_kernel_2d(grad_input,
// grad_output, target, weights, total_weight, size_average, int nframe, ...)
// (aten/src/ATen/native/cuda/Loss.cu): one block; each thread walks rows i, i + blockDim.x, ...,
// reading the row's target and then (forward) the logit it names: a chain of two dependent loads
// a row (backward: the target, then a store).
std::optional<Ns>
NllLoss(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    const bool forward = name.find("nll_loss_forward_reduce_cuda_kernel_2d<") != std::string::npos;
    if (!forward && name.find("nll_loss_backward_reduce_cuda_kernel_2d<") == std::string::npos)
    {
        return std::nullopt;
    }
    const auto rows = SizeArgument(launch, name, 6);
    if (!rows || launch.grid.Count() != 1)
    {
        return std::nullopt;
    }
    const double perThread = std::ceil(*rows / std::max(1.0, double(launch.block.Count())));
    return floor + perThread * (forward ? 2 : 1) * spec.pricing.dependentLoadNs +
           spec.pricing.kernelGapNs;
}

// Sized by template and geometry: softmax_warp_forward/backward<in, out, acc, log2_elements, ...>
// (rows of 2^log2 elements; 4 warps per block, each on 2 rows up to 128 wide, else 1), the
// embedding gather vectorized_gather_kernel<VEC, index> (one block per index, grid.y x block x VEC
// bytes of its row), and PyTorch's CUTLASS memory-efficient attention.
std::optional<Ns>
TorchGeometryKernel(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec,
                    Ns floor)
{
    static const std::regex warpSoftmax(
        R"(softmax_warp_(forward|backward)<.*?, (\d+), (?:true|false), (?:true|false)>)");
    static const std::regex cutlassForward(
        R"(AttentionKernel<[^,]+, [^,]+, (?:true|false), (\d+), (\d+), (\d+)[,>])");
    static const std::regex cutlassBackward(
        R"(AttentionBackwardKernel<[^,]+, [^,]+, (?:true|false), (?:true|false), (?:true|false), (\d+), (\d+), (\d+)[,>])");
    const double hbm = spec.pricing.hbmEfficiency;
    std::smatch m;
    // Regexes only on names that can match: this runs on every kernel launch.
    if (name.find("softmax_warp_") != std::string::npos && std::regex_search(name, m, warpSoftmax))
    {
        const double width = std::ldexp(1.0, std::stoi(m[2]));
        const double rows = double(launch.grid.x) * launch.block.y * (width <= 128 ? 2 : 1);
        const double passes = m[1] == "forward" ? 2 : 3;
        const double bytes = rows * width * passes * ElementBytes(name);
        return MemoryBoundNs(bytes, bytes, hbm * kWarpSoftmaxFraction, spec, floor);
    }
    if (name.find("vectorized_gather_kernel<") != std::string::npos)
    {
        std::vector<long> vec = IntArgs(name, "vectorized_gather_kernel<");
        const double row = double(launch.grid.y) * launch.block.x * (vec.empty() ? 16 : vec[0]);
        const double bytes = double(launch.grid.x) * (2 * row + 8);
        // A block reads its index, then the row it names: two dependent loads at least.
        return std::max(MemoryBoundNs(bytes, bytes, hbm, spec, floor),
                        floor + 2 * spec.pricing.dependentLoadNs + spec.pricing.kernelGapNs);
    }
    if (auto price = EmbeddingBackwardFeature(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = NllLoss(launch, name, spec, floor))
    {
        return price;
    }
    const bool forward = name.rfind("fmha_cutlassF", 0) == 0;
    if ((forward && std::regex_search(name, m, cutlassForward)) ||
        (name.rfind("fmha_cutlassB", 0) == 0 && std::regex_search(name, m, cutlassBackward)))
    {
        // Forward <..., queries per block, keys per block, max head dim>: grid (seqQ / queries,
        // heads, batch); backward <..., block I, block J (keys), max head dim>: grid (seqK / J,
        // ...).
        AttentionShape a;
        a.kind = AttentionKind::MemEfficient;
        a.backward = !forward;
        a.headDim = std::stol(m[3]);
        a.seqQ = a.seqK = int64_t(launch.grid.x) * std::stol(forward ? m[1] : m[2]);
        a.heads = launch.grid.y;
        a.batch = launch.grid.z;
        return AttentionNs(a, spec, floor);
    }
    return std::nullopt;
}

// ------------------------------------------------------------------ FSDP2's copy kernels

// FSDP2 packs gradients for its reduce-scatter with torch._chunk_cat and unpacks its all-gathered
// parameters with split_with_sizes_copy (aten/src/ATen/native/cuda/TensorShape.cu). Both are
// byte copies over a "jagged grid" of 128-thread blocks (BLOCK_SIZE) moving 16 bytes a thread
// (BYTES_PER_THREAD); the per-tensor sizes sit in device arrays, but the totals are arguments:
//  - chunk_cat_cuda_kernel: grid (blocks per chunk, num_chunks, leading_dim), each tensor's chunk
//    padded to whole 2048-byte tiles. Its `long slice_size` (bytes of one leading slice of the
//    output, padding included) is parameter 8 in every version: (char** src, char* dst, 6 x
//    int64_t*, slice_size, chunk_size, bool bf162float) in PyTorch 2.4-2.11, templated
//    <dst_t, src_t>(src_t** src, dst_t* dst, 6 x long*, slice_size, chunk_size, long
//    dst_to_src_ratio) in 2.15 (slice_size = num_chunks x chunk_size, in bytes). It writes
//    leading_dim x slice_size bytes and reads sizeof(src) / sizeof(dst) of that (bf16 gradients
//    widened to an fp32 reduce-scatter buffer: half). Without arguments the tiles bound it.
//  - split_with_sizes_copy_out_contiguous_no_cast_kernel(char** dst, char** src, 3 x int64_t*,
//    long src_stride, long num_chunks): the splits cover the source's dimension, so their chunk
//    sizes add up to src_stride and it reads and writes num_chunks x src_stride bytes.
std::optional<Ns>
TorchJaggedCopy(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    constexpr double kTileBytes = 128 * 16;
    double read = 0, written = 0;
    if (name.find("chunk_cat_cuda_kernel") != std::string::npos)
    {
        const double tiles = double(launch.grid.Count()) * kTileBytes;
        const double slice = SizeArgument(launch, name, 8).value_or(0);
        written = slice > 0 && slice * launch.grid.z <= tiles ? slice * launch.grid.z : tiles;
        read = written;
        const size_t types = name.find("chunk_cat_cuda_kernel<");
        const size_t comma = types == std::string::npos ? types : name.find(", ", types);
        if (comma != std::string::npos)
        {
            // <dst_t, src_t>: the first type named is the destination's, the next the source's.
            read =
                written * ElementBytes(name.substr(comma + 2)) / ElementBytes(name.substr(types));
        }
        else if (launch.args && launch.args[10])
        {
            bool widen = false; // bf162float: bf16 read, fp32 written
            std::memcpy(&widen, launch.args[10], sizeof widen);
            read = widen ? written / 2 : written;
        }
    }
    else if (name.find("split_with_sizes_copy_out_contiguous_no_cast_kernel(") != std::string::npos)
    {
        const auto stride = SizeArgument(launch, name, 5), chunks = SizeArgument(launch, name, 6);
        if (!stride || !chunks)
        {
            return std::nullopt;
        }
        read = written = *stride * *chunks;
    }
    else
    {
        return std::nullopt;
    }
    return MemoryBoundNs(read + written, read + written, spec.pricing.hbmEfficiency, spec, floor);
}

// distribution_elementwise_grid_stride_kernel<accscalar_t, unroll_factor, ...>(long numel,
// PhiloxCudaState, dist_func, transform_func) (aten/src/ATen/native/cuda/DistributionTemplates.h):
// random fills (torch.randint, nn.init's normal_/uniform_). Each thread draws unroll_factor values
// with one Philox call and stores them: a write of numel elements, priced at the accumulation
// type's size (the output's for float; for bf16 outputs twice theirs, for randint's int64 drawn as
// unsigned int half of theirs).
std::optional<Ns>
TorchRandomFill(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    if (name.find("distribution_elementwise_grid_stride_kernel<") == std::string::npos)
    {
        return std::nullopt;
    }
    const auto numel = SizeArgument(launch, name, 0);
    if (!numel)
    {
        return std::nullopt;
    }
    const double bytes =
        *numel *
        ElementBytes(name.substr(name.find("distribution_elementwise_grid_stride_kernel<")));
    return MemoryBoundNs(bytes, bytes, spec.pricing.hbmEfficiency, spec, floor);
}

// ------------------------------------------------------------------ train-gpt's kernels

// The kernels of examples/train-gpt (kernels.cu) live at global scope, so their demangled names
// start with the family: `rmsnorm_fwd<8>(...)`, `flash_attention_fwd<128, true>(...)`. Their sizes
// follow from grid, block and template arguments as that README's "Kernels and their cost" table
// gives them; the bytes below are that table's.
// The family of a kernel at global scope: its name up to the template arguments or parameters
// (computed once a launch; the comparisons below then fail on the length at once).
std::string_view
KernelHead(const std::string& name)
{
    return std::string_view(name).substr(0, name.find_first_of("<("));
}

// The int parameter `index` of a launch whose parameter layout is `layoutBytes` bytes, when the
// launch carries its arguments (a kernel whose cubin is compressed has unknown parameter bytes:
// its name alone vouches for the layout then).
std::optional<long>
IntArgument(const KernelLaunch& launch, size_t index, int64_t layoutBytes)
{
    // The cubin's parameter bytes are the layout's, up to the 8-byte alignment of the bank.
    const bool layoutMatches = launch.argBytes < 0 || launch.argBytes == layoutBytes ||
                               launch.argBytes == (layoutBytes + 7) / 8 * 8;
    if (!launch.args || !layoutMatches || !launch.args[index])
    {
        return std::nullopt;
    }
    int value = 0;
    std::memcpy(&value, launch.args[index], sizeof value);
    return value;
}

// Grid-stride elementwise kernels: 256 threads x 8 elements per block (kElemThreads x
// kElemsPerThread), n = 2048 G; bytes per element from the README's table.
std::optional<double>
TrainGptElementwiseBytes(const KernelLaunch& launch, std::string_view head)
{
    struct PerElement
    {
        const char* family;
        double bytes;
    };
    static const PerElement kernels[] = {
        {"param_init", 6},       {"swiglu_fwd", 6},       {"swiglu_bwd", 10},
        {"squared_relu_fwd", 4}, {"gelu_fwd", 4},         {"squared_relu_bwd", 6},
        {"gelu_bwd", 6},         {"residual_add", 6},     {"cast_fp8", 3},
        {"cast_bf16", 6},        {"grad_accumulate", 12}, {"grad_norm_sumsq", 4},
        {"adamw_step", 30}};
    const double n = double(launch.block.Count()) * 8 * double(launch.grid.Count());
    for (const auto& kernel : kernels)
    {
        if (head == kernel.family)
        {
            return kernel.bytes * n;
        }
    }
    if ((head == "random_tokens")) // one token per thread: two int32 written
    {
        return 8 * double(launch.block.Count()) * double(launch.grid.Count());
    }
    return std::nullopt;
}

// Row kernels `family<VEC>`: one block per row (grid.x rows), width = block.x x VEC. Returns
// {bytes through HBM, fp32 atomics on the norm weights' gradients (L2-resident)}.
std::optional<std::pair<double, double>>
TrainGptRowBytes(const KernelLaunch& launch, const std::string& name, std::string_view head)
{
    // {family, HBM bytes per row and per width element, L2 atomic bytes per width element}:
    // HBM bytes = rows x (perWidth x width + perRow) + once x width.
    struct RowKernel
    {
        const char* family;
        double perWidth, perRow, once, atomicsPerWidth;
    };
    static const RowKernel kernels[] =
        {
            {"embedding_fwd", 4, 4, 0, 0},
            {"embedding_bwd", 10, 4, 0, 0}, // token, bf16 dout, fp32 atomics on table rows in HBM
            {"rmsnorm_fwd", 4, 4, 2, 0},
            {"layernorm_fwd", 4, 8, 4, 0},
            {"rmsnorm_bwd", 8, 8, 0, 8},
            {"layernorm_bwd", 8, 8, 0, 16},
            {"softmax_fwd", 6, 0, 0, 0}, // fp32 scores in, bf16 probabilities out
            {"softmax_bwd", 8, 0, 0, 0},
        };
    for (const auto& kernel : kernels)
    {
        if (head != kernel.family)
        {
            continue;
        }
        const std::vector<long> vec = IntArgs(name, "<");
        if (vec.empty() || vec[0] <= 0)
        {
            return std::nullopt;
        }
        const double rows = launch.grid.x;
        const double width = double(launch.block.x) * double(vec[0]);
        return std::make_pair(rows * (kernel.perWidth * width + kernel.perRow) +
                                  kernel.once * width,
                              kernel.atomicsPerWidth * width * rows);
    }
    return std::nullopt;
}

std::optional<double>
TrainGptOtherBytes(const KernelLaunch& launch, const std::string& name, std::string_view head)
{
    const double blocks = double(launch.grid.Count());
    const bool rotary = (head == "rotary_fwd") || (head == "rotary_bwd");
    const bool dot = (head == "flash_attention_bwd_dot");
    const std::vector<long> headDim = rotary || dot ? IntArgs(name, "<") : std::vector<long>();
    if (rotary && !headDim.empty())
    {
        // grid (seq, hq + 2 hkv, batch): one head row per block; bf16 in and out forward, fp32
        // gradients in and bf16 out backward.
        return ((head == "rotary_fwd") ? 4.0 : 10.0) * double(headDim[0]) * blocks;
    }
    if (dot && !headDim.empty())
    {
        const double rows = double(launch.block.x) * blocks; // dO and O bf16, delta fp32
        return rows * (4.0 * double(headDim[0]) + 4);
    }
    const double chunk = double(launch.block.Count()) * 8; // 2048 logits per block
    if ((head == "cross_entropy_fwd_chunk"))
        return 2 * chunk * blocks;
    if ((head == "cross_entropy_bwd"))
        return 4 * chunk * blocks;
    const double rows = double(launch.block.Count()) * blocks; // one thread per row
    if ((head == "cross_entropy_fwd_combine"))
    {
        // (logits, targets, scratch, rowMax, rowSum, rowTarget, rows, chunks, vocabLocal,
        // vocabLo): each row reads its chunks' (max, sum) pairs and writes three floats.
        const double chunks = IntArgument(launch, 7, 6 * 8 + 4 * 4).value_or(1);
        return rows * (8 * std::max(1.0, chunks) + 16);
    }
    if ((head == "cross_entropy_rescale"))
        return 16 * rows;
    return std::nullopt;
}

// flash_attention_fwd<HD, CAUSAL>, flash_attention_bwd_dkdv<HD, CAUSAL>, flash_attention_bwd_dq:
// grid (seq / 64, heads, batch), block 64 query (or key) rows; priced by FLOPs at the FA2 rates.
std::optional<Ns>
TrainGptAttention(const KernelLaunch& launch, const std::string& name, std::string_view head,
                  const GpuSpec& spec, Ns floor)
{
    const bool forward = (head == "flash_attention_fwd");
    const bool dkdv = (head == "flash_attention_bwd_dkdv");
    const bool dq = (head == "flash_attention_bwd_dq");
    if (!(forward || dkdv || dq))
    {
        return std::nullopt;
    }
    const std::vector<long> headDim = IntArgs(name, "<");
    if (headDim.empty())
    {
        return std::nullopt;
    }
    AttentionShape a;
    a.headDim = headDim[0];
    a.causal = name.find(", true>") != std::string::npos;
    a.batch = launch.grid.z;
    a.heads = launch.grid.y;
    a.seqQ = a.seqK = int64_t(launch.grid.x) * launch.block.x;
    a.backward = !forward;
    a.matmuls = forward ? 2 : dkdv ? 4 : 3;
    if (dkdv)
    {
        // The grid covers the kv heads; every query head of the group is computed. hq is the
        // ninth argument (q, k, v, dout, lse, delta, dk, dv: 64 bytes of pointers, then int hq).
        const long hq = IntArgument(launch, 8, 8 * 8 + 4).value_or(a.heads);
        if (hq >= a.heads && hq % a.heads == 0)
        {
            a.heads = hq;
        }
    }
    return AttentionNs(a, spec, floor);
}

std::optional<Ns>
TrainGpt(const KernelLaunch& launch, const std::string& name, const GpuSpec& spec, Ns floor)
{
    const double hbm = spec.pricing.hbmEfficiency;
    const std::string_view head = KernelHead(name);
    if (auto bytes = TrainGptElementwiseBytes(launch, head))
    {
        const Ns memory = MemoryBoundNs(*bytes, *bytes, hbm, spec, floor);
        if (head == "grad_norm_sumsq")
        {
            // One atomicAdd a block on the single sum (kernels.cu): they serialise.
            const double blocks = double(launch.grid.Count());
            return std::max(memory,
                            floor + SameAddressAtomicsNs(blocks, spec) + spec.pricing.kernelGapNs);
        }
        return memory;
    }
    if (auto bytes = TrainGptRowBytes(launch, name, head))
    {
        // Atomics on a weight gradient of one row's width stay in L2.
        const double l2 = spec.pricing.l2BytesPerSecond > 0 ? spec.pricing.l2BytesPerSecond
                                                            : spec.hbmBandwidth * hbm;
        return MemoryBoundNs(bytes->first, bytes->first, hbm, spec, floor) +
               bytes->second / l2 * 1e9;
    }
    if (auto bytes = TrainGptOtherBytes(launch, name, head))
    {
        return MemoryBoundNs(*bytes, *bytes, hbm, spec, floor);
    }
    return TrainGptAttention(launch, name, head, spec, floor);
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
    if (auto price = FlashAttention(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = TorchReduce(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = TorchCat(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = TorchRowKernel(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = TorchGeometryKernel(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = TorchJaggedCopy(launch, name, spec, floor))
    {
        return price;
    }
    if (auto price = TorchRandomFill(launch, name, spec, floor))
    {
        return price;
    }
    return TrainGpt(launch, name, spec, floor);
}

} // namespace eidolon::gpu
