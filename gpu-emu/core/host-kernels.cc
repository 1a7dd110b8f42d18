// Kernels the host runs (host-kernels.h). Each reads its launch arguments as PyTorch lays them out
// (aten/src/ATen/native/cuda: Reduce.cuh, CUDALoops.cuh, OffsetCalculator.cuh, Shape.cu) and
// checks what it reads against the launch (geometry, parameter bytes) before it runs; a launch
// that does not check out computes nothing.
#include "host-kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
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
    Min,
    And,
    Or
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
    // bool reduces too (`.all()`, `.any()`: and_kernel_cuda, or_kernel_cuda), its values 0 or 1.
    const bool isBool = m[1] == "bool";
    const auto type = isBool ? std::optional<IntType>(IntType{1, false}) : IntTypeNamed(m[1]);
    const std::string ops = m[2];
    std::optional<Combine> combine;
    if (isBool && ops.find("and_kernel_cuda") != std::string::npos)
        combine = Combine::And;
    else if (isBool && ops.find("or_kernel_cuda") != std::string::npos)
        combine = Combine::Or;
    else if (isBool && ops.find("sum_functor") != std::string::npos)
        combine = std::nullopt; // a sum of bools wraps differently on the device: not ours
    else if (ops.find("sum_functor") != std::string::npos)
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
            value = isBool ? int64_t(x != 0) : x;
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
        case Combine::And:
            value = value != 0 && x != 0;
            break;
        case Combine::Or:
            value = value != 0 || x != 0;
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

// ------------------------------------------------------------------ elementwise: fill, compare

// An element type of the fill and compare functors, as PyTorch's kernel names spell it.
struct ElementType
{
    enum class Kind
    {
        Integer,
        Bool,
        Float,
        Double,
        Half,
        BFloat16
    };
    Kind kind = Kind::Integer;
    int bytes = 0;
    bool isSigned = true;
};

std::optional<ElementType>
ElementTypeNamed(const std::string& name)
{
    using Kind = ElementType::Kind;
    if (const auto integer = IntTypeNamed(name))
        return ElementType{Kind::Integer, integer->bytes, integer->isSigned};
    if (name == "bool")
        return ElementType{Kind::Bool, 1, false};
    if (name == "float")
        return ElementType{Kind::Float, 4, true};
    if (name == "double")
        return ElementType{Kind::Double, 8, true};
    if (name == "c10::Half")
        return ElementType{Kind::Half, 2, true};
    if (name == "c10::BFloat16")
        return ElementType{Kind::BFloat16, 2, true};
    return std::nullopt;
}

// IEEE binary16 to float, exactly (subnormals, infinities and NaN included).
float
HalfToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float magnitude;
    if (exponent == 0)
        magnitude = std::ldexp(float(mantissa), -24);
    else if (exponent == 31)
        magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                             : std::numeric_limits<float>::infinity();
    else
        magnitude = std::ldexp(float(mantissa | 0x400), int(exponent) - 25);
    return sign ? -magnitude : magnitude;
}

// An element's value, exact for every type above: integers and bool as int64, the rest as double.
struct Element
{
    bool isFloating = false;
    int64_t integer = 0;
    double floating = 0;
};

Element
ElementAt(const char* bytes, ElementType type)
{
    using Kind = ElementType::Kind;
    Element e;
    switch (type.kind)
    {
    case Kind::Integer:
    {
        int64_t low = 0;
        std::memcpy(&low, bytes, type.bytes);
        e.integer = Widen(low, IntType{type.bytes, type.isSigned});
        break;
    }
    case Kind::Bool:
        e.integer = bytes[0] != 0;
        break;
    case Kind::Float:
        e.isFloating = true;
        e.floating = Field<float>(bytes, 0);
        break;
    case Kind::Double:
        e.isFloating = true;
        e.floating = Field<double>(bytes, 0);
        break;
    case Kind::Half:
        e.isFloating = true;
        e.floating = HalfToFloat(Field<uint16_t>(bytes, 0));
        break;
    case Kind::BFloat16:
    {
        const uint32_t bits = uint32_t(Field<uint16_t>(bytes, 0)) << 16;
        float value;
        std::memcpy(&value, &bits, sizeof value);
        e.isFloating = true;
        e.floating = value;
        break;
    }
    }
    return e;
}

// The comparisons of CompareKernels.cu (OpType {GE, GT, LE, LT}) and CompareEqKernel.cu
// (EqOpType {EQ, NE}), as one set.
enum class Comparison
{
    GE,
    GT,
    LE,
    LT,
    EQ,
    NE
};

bool
Compared(const Element& a, const Element& b, Comparison op)
{
    // Both sides have one type (the kernel's), so both are integers or both floating point; a
    // NaN compares false except by NE, as on the device.
    auto holds = [&](auto x, auto y)
    {
        switch (op)
        {
        case Comparison::GE:
            return x >= y;
        case Comparison::GT:
            return x > y;
        case Comparison::LE:
            return x <= y;
        case Comparison::LT:
            return x < y;
        case Comparison::EQ:
            return x == y;
        case Comparison::NE:
            return x != y;
        }
        return false;
    };
    return a.isFloating ? holds(a.floating, b.floating) : holds(a.integer, b.integer);
}

// What an elementwise functor does, read from its name and its bytes.
struct ElementwiseWork
{
    enum class Kind
    {
        Fill,          // out = value
        Compare,       // out = a (op) b, both tensors
        CompareScalar, // out = a (op) scalar
        ScalarCompare  // out = scalar (op) b
    };
    Kind kind = Kind::Fill;
    ElementType type;
    size_t operands = 0;     // std::array<char*, N>: the output, then the inputs
    size_t functorBytes = 0; // the functor's size and alignment, to check the parameters
    size_t functorAlign = 0;
    std::optional<bool> equality; // the op is an EqOpType (true) or an OpType (false)
    size_t scalarAt = 0;          // where a scalar operand sits in the functor
};

size_t
RoundUp(size_t value, size_t to)
{
    return (value + to - 1) / to * to;
}

// The functors of PyTorch's fill and comparisons (FillKernel.cu, CompareKernels.cu,
// CompareEqKernel.cu, BinaryInternal/Loops.cuh's {A,B}UnaryFunctor and BinaryFunctor), each a
// struct of an op enum (4 bytes) and a scalar of the element type, or of the fill value alone.
std::optional<ElementwiseWork>
ElementwiseWorkNamed(const std::string& functor, size_t operands)
{
    using Kind = ElementwiseWork::Kind;
    static const std::regex fill(R"(^at::native::FillFunctor<([A-Za-z0-9: ]+)>$)");
    static const std::regex compare(
        R"(^at::native::\(anonymous namespace\)::CompareFunctor<([A-Za-z0-9: ]+)>$)");
    static const std::regex compareScalar(
        R"(^at::native::compare_scalar_kernel<([A-Za-z0-9: ]+)>\(at::TensorIteratorBase&, at::native::\(anonymous namespace\)::OpType, [A-Za-z0-9: ]+\)::\{lambda\([A-Za-z0-9: ]+\)#1\}$)");
    static const std::regex compareEq(
        R"(^at::native::(Binary|AUnary|BUnary)Functor<([A-Za-z0-9: ]+), ([A-Za-z0-9: ]+), bool, at::native::\(anonymous namespace\)::CompareEqFunctor<([A-Za-z0-9: ]+)> >$)");
    std::smatch m;
    ElementwiseWork work;
    work.operands = operands;
    std::string typeName;
    if (std::regex_match(functor, m, fill))
    {
        work.kind = Kind::Fill;
        typeName = m[1];
    }
    else if (std::regex_match(functor, m, compare))
    {
        work.kind = Kind::Compare;
        work.equality = false;
        typeName = m[1];
    }
    else if (std::regex_match(functor, m, compareScalar))
    {
        work.kind = Kind::CompareScalar;
        work.equality = false;
        typeName = m[1];
    }
    else if (std::regex_match(functor, m, compareEq))
    {
        if (m[2] != m[3] || m[3] != m[4])
        {
            return std::nullopt;
        }
        work.kind = m[1] == "Binary"   ? Kind::Compare
                    : m[1] == "AUnary" ? Kind::ScalarCompare
                                       : Kind::CompareScalar;
        work.equality = true;
        typeName = m[2];
    }
    else
    {
        return std::nullopt;
    }
    const auto type = ElementTypeNamed(typeName);
    const size_t expected = work.kind == Kind::Fill ? 1 : work.kind == Kind::Compare ? 3 : 2;
    if (!type || operands != expected)
    {
        return std::nullopt;
    }
    work.type = *type;
    const size_t bytes = size_t(type->bytes); // every type here is aligned to its size
    if (work.kind == Kind::Fill)
    {
        work.functorBytes = work.functorAlign = bytes;
    }
    else if (work.kind == Kind::Compare)
    {
        work.functorBytes = work.functorAlign = 4;
    }
    else
    {
        work.scalarAt = RoundUp(4, bytes);
        work.functorAlign = std::max<size_t>(4, bytes);
        work.functorBytes = RoundUp(work.scalarAt + bytes, work.functorAlign);
    }
    return work;
}

// An elementwise kernel's name as parsed: its work, or none when the kernel is not one of ours.
struct ParsedElementwise
{
    std::string name; // the name parsed (a key's kernel may be another one in a unit test)
    std::optional<ElementwiseWork> work;
    bool vectorized = false;
};

// The parse of `kernel`'s name, made once per kernel: this runs at every launch of a kernel that
// may be ours, and FillFunctor's (zero_, fill_) are among a training step's most frequent, where
// the regexes cost about 3 us a launch. Launches are serialized by the emulator's lock, as the
// writes of KernelInfo::notRunOnHost are.
const ParsedElementwise&
ParseElementwise(const KernelInfo& kernel)
{
    static std::unordered_map<const KernelInfo*, ParsedElementwise> cache;
    ParsedElementwise& parsed = cache[&kernel];
    if (!parsed.name.empty() && parsed.name == kernel.name)
    {
        return parsed;
    }
    static const std::regex form(
        R"(^(?:at::native::)?(vectorized|unrolled)_elementwise_kernel<(?:\d+, )?(.*?), std::array<char\*, (\d)ul?>)");
    parsed = ParsedElementwise{kernel.name, std::nullopt, false};
    std::smatch m;
    if (std::regex_search(kernel.name, m, form) &&
        !(m[1] == "unrolled" && kernel.name.find("WithCast<") != std::string::npos))
    {
        parsed.work = ElementwiseWorkNamed(m[2], std::stoul(m[3]));
        parsed.vectorized = m[1] == "vectorized";
    }
    return parsed;
}

// vectorized_elementwise_kernel<vec, func_t, std::array<char*, N>>(int N, func_t f, array data),
// and unrolled_elementwise_kernel<func_t, array, ...> of contiguous operands without casts (the
// same first three parameters): data[0] the output. Runs the fills and comparisons above.
bool
RunElementwise(const KernelLaunch& launch, KernelMemory& memory, bool* nameFits)
{
    const ParsedElementwise& parsed = ParseElementwise(*launch.kernel);
    if (!parsed.work)
    {
        *nameFits = false;
        return false;
    }
    const ElementwiseWork* work = &*parsed.work;
    if (!launch.args || !launch.args[0] || !launch.args[1] || !launch.args[2])
    {
        return false;
    }
    // (int N, func_t f, std::array<char*, N> data), when the cubin gives the parameter bytes.
    const size_t arrayAt = RoundUp(RoundUp(4, work->functorAlign) + work->functorBytes, 8);
    if (parsed.vectorized && launch.argBytes >= 0 &&
        size_t(launch.argBytes) != arrayAt + 8 * work->operands)
    {
        return false;
    }
    const int32_t n = Field<int32_t>(launch.args[0], 0);
    const size_t inBytes = size_t(work->type.bytes);
    if (n <= 0 || uint64_t(n) * inBytes > kHostKernelMaxBytes)
    {
        return false;
    }
    const char* functor = static_cast<const char*>(launch.args[1]);
    char* const* data = static_cast<char* const*>(launch.args[2]);
    using Kind = ElementwiseWork::Kind;
    if (work->kind == Kind::Fill)
    {
        // The value comes from the host, so the fill is host data; a fill of zeros over memory
        // that holds none changes nothing.
        const size_t bytes = size_t(n) * inBytes;
        const bool zero = std::all_of(functor, functor + inBytes, [](char c) { return c == 0; });
        memory.Settle(data[0], bytes, false);
        if (zero)
        {
            if (!memory.HasData(data[0], bytes))
            {
                return false;
            }
            memory.Zero(data[0], bytes);
            return true;
        }
        std::vector<char> out(bytes);
        for (size_t i = 0; i < size_t(n); ++i)
        {
            std::memcpy(out.data() + i * inBytes, functor, inBytes);
        }
        memory.Store(data[0], out.data(), bytes);
        return true;
    }
    const int32_t opValue = Field<int32_t>(functor, 0);
    if (opValue < 0 || opValue > (*work->equality ? 1 : 3))
    {
        return false;
    }
    const Comparison op = Comparison(*work->equality ? 4 + opValue : opValue);
    const size_t inputBytes = size_t(n) * inBytes;
    bool anyData = false;
    for (size_t i = 1; i < work->operands; ++i)
    {
        memory.Settle(data[i], inputBytes, true);
        anyData = anyData || memory.HasData(data[i], inputBytes);
    }
    if (!anyData)
    {
        return false;
    }
    std::vector<std::vector<char>> inputs(work->operands);
    for (size_t i = 1; i < work->operands; ++i)
    {
        inputs[i].resize(inputBytes);
        memory.Load(data[i], inputs[i].data(), inputBytes);
    }
    const Element scalar = ElementAt(functor + work->scalarAt, work->type);
    std::vector<char> out(static_cast<size_t>(n)); // bool: one byte, 0 or 1
    for (size_t i = 0; i < size_t(n); ++i)
    {
        const Element first = ElementAt(inputs[1].data() + i * inBytes, work->type);
        bool result = false;
        switch (work->kind)
        {
        case Kind::Compare:
            result = Compared(first, ElementAt(inputs[2].data() + i * inBytes, work->type), op);
            break;
        case Kind::CompareScalar:
            result = Compared(first, scalar, op);
            break;
        case Kind::ScalarCompare:
            result = Compared(scalar, first, op);
            break;
        case Kind::Fill:
            break;
        }
        out[i] = char(result);
    }
    memory.Settle(data[0], out.size(), false);
    memory.Store(data[0], out.data(), out.size());
    return true;
}

// ------------------------------------------------------------------ GradScaler's update

// amp_update_scale_cuda_kernel(float* current_scale, int* growth_tracker, const float* found_inf,
// double growth_factor, double backoff_factor, int growth_interval) (AmpKernels.cu), one thread:
// an inf found backs the scale off and restarts the count; else the count grows, and at the
// interval the scale grows (if it stays finite) and the count restarts.
bool
RunAmpUpdateScale(const KernelLaunch& launch, const std::string& name, KernelMemory& memory,
                  bool* nameFits)
{
    if (name.rfind("at::native::amp_update_scale_cuda_kernel(float*, int*, float const*, double, "
                   "double, int)",
                   0) != 0)
    {
        *nameFits = false;
        return false;
    }
    if (!launch.args || (launch.argBytes >= 0 && launch.argBytes != 44))
    {
        return false;
    }
    for (int i = 0; i < 6; ++i)
    {
        if (!launch.args[i])
        {
            return false;
        }
    }
    char* scaleAt = Field<char*>(launch.args[0], 0);
    char* trackerAt = Field<char*>(launch.args[1], 0);
    const char* foundAt = Field<const char*>(launch.args[2], 0);
    const double growth = Field<double>(launch.args[3], 0);
    const double backoff = Field<double>(launch.args[4], 0);
    const int32_t interval = Field<int32_t>(launch.args[5], 0);
    if (!scaleAt || !trackerAt || !foundAt)
    {
        return false;
    }
    memory.Settle(scaleAt, 4, true);
    memory.Settle(trackerAt, 4, true);
    memory.Settle(foundAt, 4, true);
    if (!memory.HasData(scaleAt, 4) && !memory.HasData(trackerAt, 4) && !memory.HasData(foundAt, 4))
    {
        return false;
    }
    float scale = 0, found = 0;
    int32_t tracker = 0;
    memory.Load(scaleAt, &scale, 4);
    memory.Load(trackerAt, &tracker, 4);
    memory.Load(foundAt, &found, 4);
    if (found != 0)
    {
        scale = float(double(scale) * backoff);
        tracker = 0;
    }
    else if (int32_t(uint32_t(tracker) + 1) == interval)
    {
        const float grown = float(double(scale) * growth);
        if (std::isfinite(grown))
        {
            scale = grown;
        }
        tracker = 0;
    }
    else
    {
        tracker = int32_t(uint32_t(tracker) + 1);
    }
    memory.Settle(scaleAt, 4, false);
    memory.Store(scaleAt, &scale, 4);
    memory.Settle(trackerAt, 4, false);
    memory.Store(trackerAt, &tracker, 4);
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
    else if (name.find("_elementwise_kernel<") != std::string::npos)
    {
        ran = RunElementwise(launch, memory, &nameFits);
    }
    else if (name.find("amp_update_scale_cuda_kernel") != std::string::npos)
    {
        ran = RunAmpUpdateScale(launch, name, memory, &nameFits);
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
