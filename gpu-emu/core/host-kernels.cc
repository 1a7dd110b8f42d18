// Kernels the host runs (host-kernels.h). Each reads its launch arguments as PyTorch lays them out
// (aten/src/ATen/native/cuda: Reduce.cuh, CUDALoops.cuh, OffsetCalculator.cuh, Shape.cu) and
// checks what it reads against the launch (geometry, parameter bytes) before it runs; a launch
// that does not check out computes nothing.
#include "host-kernels.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace eidolon::gpu
{
namespace
{

// An integer element type as PyTorch's kernel names spell it.
struct IntType
{
    int bytes = 0;
    bool isSigned = true;
};

std::optional<IntType>
IntTypeNamed(const std::string& type)
{
    if (type == "long")
        return IntType{8, true};
    if (type == "int")
        return IntType{4, true};
    if (type == "short")
        return IntType{2, true};
    if (type == "signed char")
        return IntType{1, true};
    if (type == "unsigned char")
        return IntType{1, false};
    return std::nullopt;
}

// The value of `type.bytes` little-endian bytes.
int64_t
Widen(int64_t low, IntType type)
{
    if (type.bytes == 8)
    {
        return low;
    }
    const int bits = 8 * type.bytes;
    low &= (int64_t(1) << bits) - 1;
    if (type.isSigned && (low >> (bits - 1)) & 1)
    {
        low = int64_t(uint64_t(low) | ~uint64_t(0) << bits);
    }
    return low;
}

int64_t
LoadInt(KernelMemory& memory, const char* at, IntType type)
{
    int64_t value = 0;
    memory.Load(at, &value, type.bytes);
    return Widen(value, type);
}

// An integer member of a kernel argument.
int64_t
IntField(const void* base, size_t offset, IntType type)
{
    int64_t value = 0;
    std::memcpy(&value, static_cast<const char*>(base) + offset, type.bytes);
    return Widen(value, type);
}

void
StoreInt(KernelMemory& memory, char* at, IntType type, int64_t value)
{
    memory.Store(at, &value, type.bytes); // wraps as the device's integer arithmetic does
}

template<typename T>
T
Field(const void* base, size_t offset)
{
    T value;
    std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof value);
    return value;
}

// ------------------------------------------------------------------ reduce_kernel

// ReduceOp<scalar_t, ops_t, index_t, out_scalar_t, vt0, input_vec_size>: `ops_t ops; arg_t ident;
// ReduceConfig config; OffsetCalculator<1, index_t> input_calc; OffsetCalculator<2, index_t>
// output_calc; const void* src; const char* dst[2]; void* acc_buf; void* cta_buf; int*
// semaphores; int64_t base_idx; bool accumulate; bool final_output; int noutputs;`. ReduceConfig
// is 16 ints (`element_size_bytes, num_inputs, num_outputs, step_input, step_output,
// ctas_per_output, input_mult[3], output_mult[2], block_width, block_height, num_threads`, then
// `bool vectorize_input; int output_vec_size`); an OffsetCalculator<N, uint32_t> is `int dims;
// IntDivider sizes_[25] {divisor, m1, shift}; uint32_t strides_[25][N]` (byte strides, dimension
// 0 the innermost). input_calc spans the reduced dimensions.
constexpr size_t kMaxDims = 25;
constexpr size_t kConfigBytes = 64;
constexpr size_t kInputCalcBytes = 4 + kMaxDims * 12 + kMaxDims * 4;
constexpr size_t kOutputCalcBytes = 4 + kMaxDims * 12 + kMaxDims * 8;

// Where the ReduceConfig begins: found by its signature (the block and grid.y it must equal).
std::optional<size_t>
ReduceConfigOffset(const KernelLaunch& launch, const char* op)
{
    for (size_t offset = 0; offset <= 64; offset += 4)
    {
        int32_t c[14];
        std::memcpy(c, op + offset, sizeof c);
        if ((c[0] == 1 || c[0] == 2 || c[0] == 4 || c[0] == 8) && c[1] > 0 && c[2] > 0 &&
            c[5] == int32_t(launch.grid.y) && c[11] == int32_t(launch.block.x) &&
            c[12] == int32_t(launch.block.y) && c[13] == c[11] * c[12])
        {
            return offset;
        }
    }
    return std::nullopt;
}

enum class Combine
{
    Sum,
    Max,
    Min
};

bool
RunReduce(const KernelLaunch& launch, const std::string& name, KernelMemory& memory, bool* nameFits)
{
    static const std::regex reduce(
        R"(reduce_kernel<\d+, \d+, at::native::ReduceOp<([a-z ]+), (.*), unsigned int, ([a-z ]+), \d+, \d+> >)");
    std::smatch m;
    if (!std::regex_search(name, m, reduce) || m[1] != m[3])
    {
        *nameFits = false;
        return false;
    }
    if (!launch.args || !launch.args[0])
    {
        return false;
    }
    const auto type = IntTypeNamed(m[1]);
    const std::string ops = m[2];
    std::optional<Combine> combine;
    if (ops.find("sum_functor") != std::string::npos)
        combine = Combine::Sum;
    else if (ops.find("MaxOps<") != std::string::npos ||
             ops.find("MaxNanFunctor<") != std::string::npos)
        combine = Combine::Max;
    else if (ops.find("MinOps<") != std::string::npos ||
             ops.find("MinNanFunctor<") != std::string::npos)
        combine = Combine::Min;
    if (!type || !combine)
    {
        *nameFits = false;
        return false;
    }
    const char* op = static_cast<const char*>(launch.args[0]);
    std::optional<size_t> at = ReduceConfigOffset(launch, op);
    if (!at)
    {
        return false;
    }
    const size_t inputCalc = *at + kConfigBytes;
    const size_t srcAt = (inputCalc + kInputCalcBytes + kOutputCalcBytes + 7) / 8 * 8;
    // The layout above (when the cubin gives the parameter bytes), or not ours to run.
    if (launch.argBytes >= 0 && size_t(launch.argBytes) != srcAt + 64)
    {
        return false;
    }
    const int32_t inputs = Field<int32_t>(op, *at + 4), outputs = Field<int32_t>(op, *at + 8);
    const int32_t dims = Field<int32_t>(op, inputCalc);
    const bool accumulate = Field<bool>(op, srcAt + 48);
    if (outputs != 1 || accumulate || dims < 0 || dims > int32_t(kMaxDims))
    {
        return false;
    }
    // The offset of every reduced element (dimension 0 the innermost).
    std::vector<uint64_t> offsets(1, 0);
    for (int32_t d = 0; d < dims; ++d)
    {
        const uint32_t size = Field<uint32_t>(op, inputCalc + 4 + 12 * size_t(d));
        const uint32_t shift = Field<uint32_t>(op, inputCalc + 4 + 12 * size_t(d) + 8);
        if (shift > 32 || (uint64_t(1) << shift) < size ||
            (shift > 0 && (uint64_t(1) << (shift - 1)) >= size))
        {
            return false; // not an IntDivider: the smallest s with 2^s >= divisor
        }
        const uint32_t stride = Field<uint32_t>(op, inputCalc + 4 + 12 * kMaxDims + 4 * size_t(d));
        if (size == 0 || offsets.size() * size > kHostKernelMaxBytes)
        {
            return false;
        }
        std::vector<uint64_t> next;
        next.reserve(offsets.size() * size);
        for (uint32_t i = 0; i < size; ++i)
        {
            for (uint64_t base : offsets)
            {
                next.push_back(base + uint64_t(i) * stride);
            }
        }
        offsets = std::move(next);
    }
    if (offsets.size() != size_t(inputs))
    {
        return false;
    }
    const char* src = Field<const char*>(op, srcAt);
    char* dst = Field<char*>(op, srcAt + 8);
    uint64_t last = 0;
    for (uint64_t offset : offsets)
    {
        last = std::max(last, offset);
    }
    const size_t span = last + type->bytes;
    memory.Settle(src, span, true);
    if (!src || !dst || !memory.HasData(src, span))
    {
        return false;
    }
    int64_t value = 0;
    for (size_t i = 0; i < offsets.size(); ++i)
    {
        const int64_t x = LoadInt(memory, src + offsets[i], *type);
        if (i == 0)
        {
            value = x;
            continue;
        }
        switch (*combine)
        {
        case Combine::Sum:
            value = int64_t(uint64_t(value) + uint64_t(x));
            break;
        case Combine::Max:
            value = std::max(value, x);
            break;
        case Combine::Min:
            value = std::min(value, x);
            break;
        }
    }
    memory.Settle(dst, type->bytes, false);
    StoreInt(memory, dst, *type, value);
    return true;
}

// ------------------------------------------------------------------ elementwise add

// vectorized_elementwise_kernel<vec, func_t, std::array<char*, N>>(int N, func_t f, array data)
// and unrolled_elementwise_kernel<func_t, array, ...>(int N, func_t f, array data, ...): contiguous
// operands, data[0] the output. The add functors (the ufunc codegen's) hold opmath_t members:
// CUDAFunctor_add {alpha} (out = a + alpha b), CUDAFunctorOnOther_add {other, alpha} (out = a +
// alpha other), CUDAFunctorOnSelf_add {self, alpha} (out = self + alpha b).
bool
RunAdd(const KernelLaunch& launch, const std::string& name, KernelMemory& memory, bool* nameFits)
{
    static const std::regex add(
        R"(^(?:at::native::)?(?:vectorized|unrolled)_elementwise_kernel<.*at::native::CUDAFunctor(OnSelf|OnOther)?_add<([a-z ]+)>, std::array<char\*, (\d)ul?>)");
    std::smatch m;
    if (!std::regex_search(name, m, add))
    {
        *nameFits = false;
        return false;
    }
    const auto type = IntTypeNamed(m[2]);
    const std::string side = m[1];
    const size_t operands = std::stoul(m[3]);
    if (!type || operands != (side.empty() ? 3u : 2u))
    {
        *nameFits = false;
        return false;
    }
    if (!launch.args || !launch.args[0] || !launch.args[1] || !launch.args[2])
    {
        return false;
    }
    const int32_t n = Field<int32_t>(launch.args[0], 0);
    if (n <= 0 || uint64_t(n) * type->bytes > kHostKernelMaxBytes)
    {
        return false;
    }
    // opmath_t of an integer type is the type itself; members are aligned to it.
    const int64_t first = IntField(launch.args[1], 0, *type);
    const int64_t alpha = side.empty() ? first : IntField(launch.args[1], type->bytes, *type);
    char* const* data = static_cast<char* const*>(launch.args[2]);
    const size_t bytes = size_t(n) * type->bytes;
    bool anyData = false;
    for (size_t i = 1; i < operands; ++i)
    {
        memory.Settle(data[i], bytes, true);
        anyData = anyData || memory.HasData(data[i], bytes);
    }
    if (!anyData)
    {
        return false;
    }
    memory.Settle(data[0], bytes, false);
    for (int32_t i = 0; i < n; ++i)
    {
        const size_t at = size_t(i) * type->bytes;
        const int64_t a = LoadInt(memory, data[1] + at, *type);
        int64_t value;
        if (side.empty())
            value = int64_t(uint64_t(a) +
                            uint64_t(alpha) * uint64_t(LoadInt(memory, data[2] + at, *type)));
        else if (side == "OnOther")
            value = int64_t(uint64_t(a) + uint64_t(alpha) * uint64_t(first));
        else
            value = int64_t(uint64_t(first) + uint64_t(alpha) * uint64_t(a));
        StoreInt(memory, data[0] + at, *type, value);
    }
    return true;
}

// ------------------------------------------------------------------ cat

// CatArrayBatchedCopy*<T, unsigned int, Dims, batch_size, stride_size, ...>(T* out,
// CatArrInputTensorMetadata inputs, TensorSizeStride os, int concatDim, IndexType dimStride)
// (Shape.cu): the metadata is `const T* input[batch]; IndexType offset[batch], dimSize[batch],
// nElements[batch]; bool isContiguous[batch]; ...`; grid.y inputs of this batch. For one dimension,
// input i's element j goes to out[(offset[i] + j) * dimStride].
bool
RunCat(const KernelLaunch& launch, const std::string& name, KernelMemory& memory, bool* nameFits)
{
    static const std::regex cat(
        R"(CatArrayBatchedCopy[A-Za-z0-9_]*<[^<]*OpaqueType<(\d+)u?>, unsigned int, (\d+), (\d+), (\d+))");
    std::smatch m;
    if (!std::regex_search(name, m, cat) || std::stol(m[2]) != 1)
    {
        *nameFits = false;
        return false;
    }
    if (!launch.args || !launch.args[0] || !launch.args[1] || !launch.args[4])
    {
        return false;
    }
    const size_t element = std::stoul(m[1]), batch = std::stoul(m[3]);
    const size_t inputs = launch.grid.y;
    if (inputs == 0 || inputs > batch)
    {
        return false;
    }
    char* out = Field<char*>(launch.args[0], 0);
    const char* meta = static_cast<const char*>(launch.args[1]);
    const uint32_t dimStride = Field<uint32_t>(launch.args[4], 0);
    const size_t offsetsAt = batch * 8, countsAt = batch * 16, contiguousAt = batch * 20;
    bool anyData = false;
    for (size_t i = 0; i < inputs; ++i)
    {
        const char* input = Field<const char*>(meta, 8 * i);
        const uint32_t count = Field<uint32_t>(meta, countsAt + 4 * i);
        if (!input || !Field<bool>(meta, contiguousAt + i) ||
            uint64_t(count) * element > kHostKernelMaxBytes)
        {
            return false;
        }
        memory.Settle(input, count * element, true);
        anyData = anyData || memory.HasData(input, count * element);
    }
    if (!anyData || dimStride == 0)
    {
        return false;
    }
    std::vector<char> bytes;
    for (size_t i = 0; i < inputs; ++i)
    {
        const char* input = Field<const char*>(meta, 8 * i);
        const uint32_t offset = Field<uint32_t>(meta, offsetsAt + 4 * i);
        const uint32_t count = Field<uint32_t>(meta, countsAt + 4 * i);
        bytes.resize(count * element);
        memory.Load(input, bytes.data(), bytes.size());
        for (uint32_t j = 0; j < count; ++j)
        {
            char* to = out + (uint64_t(offset) + j) * dimStride * element;
            memory.Settle(to, element, false);
            memory.Store(to, bytes.data() + j * element, element);
        }
    }
    return true;
}

} // namespace

bool
RunKernelOnHost(const KernelLaunch& launch, KernelMemory& memory)
{
    // This runs at every launch, and the regexes are slow on long names: a kernel whose name is
    // none of ours is known as such after its first launch (KernelInfo::notRunOnHost).
    const KernelInfo& kernel = *launch.kernel;
    if (kernel.notRunOnHost)
    {
        return false;
    }
    const std::string& name = kernel.name;
    bool nameFits = true;
    bool ran = false;
    if (name.find("reduce_kernel<") != std::string::npos)
    {
        ran = RunReduce(launch, name, memory, &nameFits);
    }
    else if (name.find("_add<") != std::string::npos)
    {
        ran = RunAdd(launch, name, memory, &nameFits);
    }
    else if (name.find("CatArrayBatchedCopy") != std::string::npos)
    {
        ran = RunCat(launch, name, memory, &nameFits);
    }
    else
    {
        nameFits = false;
    }
    kernel.notRunOnHost = !nameFits;
    return ran;
}

} // namespace eidolon::gpu
