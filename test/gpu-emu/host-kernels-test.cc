// Kernels the host runs (core/host-kernels.{h,cc}, gpu-emu/README.md "Kernels the host runs"):
// launches whose arguments are laid out by hand from PyTorch's headers (Reduce.cuh, Shape.cu,
// the ufunc add functors) over host memory; every expected value is worked out in the comment.
#define BOOST_TEST_MODULE gpu_emu_host_kernels
#include <boost/test/unit_test.hpp>

#include "host-kernels.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace eidolon::gpu;

namespace
{

// Host memory that always holds data (as host and managed memory do for the emulator).
class PlainMemory final : public KernelMemory
{
public:
    void Settle(const void*, size_t, bool) override {}
    bool HasData(const void*, size_t) override { return true; }
    void Load(const void* pointer, void* out, size_t bytes) override
    {
        std::memcpy(out, pointer, bytes);
    }
    void Store(void* pointer, const void* data, size_t bytes) override
    {
        std::memcpy(pointer, data, bytes);
    }
};

template<typename T>
void
Put(std::vector<char>& blob, size_t offset, T value)
{
    std::memcpy(blob.data() + offset, &value, sizeof value);
}

// A ReduceOp<T, ops, unsigned int, T, 4, 4> as PyTorch lays it out for an 8-byte ident: ops at 0,
// ident at 8, ReduceConfig (16 ints) at 16, input_calc at 80 (dims, IntDivider[25], strides[25]),
// output_calc at 484, src at 992, dst[0] at 1000, accumulate at 1040; 1056 bytes. Block (4, 1).
std::vector<char>
ReduceOpBlob(int32_t elementBytes, int32_t inputs, const std::vector<uint32_t>& sizes,
             const std::vector<uint32_t>& strides, const void* src, void* dst)
{
    std::vector<char> op(1056, 0);
    const int32_t config[14] = {elementBytes, inputs, 1, 1, 1, 1, 0, 0, 0, 0, 0, 4, 1, 4};
    std::memcpy(op.data() + 16, config, sizeof config);
    Put<int32_t>(op, 80, int32_t(sizes.size()));
    for (size_t d = 0; d < sizes.size(); ++d)
    {
        uint32_t shift = 0;
        while ((uint64_t(1) << shift) < sizes[d])
        {
            ++shift;
        }
        Put<uint32_t>(op, 84 + 12 * d, sizes[d]);
        Put<uint32_t>(op, 84 + 12 * d + 8, shift);
        Put<uint32_t>(op, 84 + 300 + 4 * d, strides[d]);
    }
    Put<const void*>(op, 992, src);
    Put<void*>(op, 1000, dst);
    return op;
}

KernelLaunch
Launch(const KernelInfo& kernel, Dim3 grid, Dim3 block, void** args)
{
    return KernelLaunch{&kernel, grid, block, 0, -1, args};
}

} // namespace

BOOST_AUTO_TEST_CASE(sum_of_int64_to_one_value)
{
    const KernelInfo kernel{
        "",
        "at::native::reduce_kernel<512, 1, at::native::ReduceOp<long, "
        "at::native::func_wrapper_t<long, at::native::sum_functor<long, long, "
        "long>::operator()(at::TensorIterator&)::{lambda(long, long)#1}>, unsigned int, long, 4, "
        "4> >(at::native::ReduceOp<long, at::native::func_wrapper_t<long, "
        "at::native::sum_functor<long, long, long>::operator()(at::TensorIterator&)::{lambda(long, "
        "long)#1}>, unsigned int, long, 4, 4>)"};
    int64_t input[3] = {5, 7, 11};
    int64_t output = -1;
    auto op = ReduceOpBlob(8, 3, {3}, {8}, input, &output);
    void* args[] = {op.data()};
    PlainMemory memory;
    BOOST_TEST(RunKernelOnHost(Launch(kernel, {1, 1, 1}, {4, 1, 1}, args), memory));
    BOOST_TEST(output == 23); // 5 + 7 + 11
}

BOOST_AUTO_TEST_CASE(max_and_min_of_a_strided_int32_tensor)
{
    // A 2 x 3 int32 matrix read column-major (dimension 0, the innermost, strides 12 bytes).
    int32_t input[6] = {4, -9, 2, 8, -1, 3};
    int32_t output = 0;
    auto op = ReduceOpBlob(4, 6, {2, 3}, {12, 4}, input, &output);
    void* args[] = {op.data()};
    PlainMemory memory;
    const KernelInfo max{"", "at::native::reduce_kernel<512, 1, at::native::ReduceOp<int, "
                             "at::native::func_wrapper_t<int, at::native::MaxNanFunctor<int> >, "
                             "unsigned int, int, 4, 4> >(x)"};
    BOOST_TEST(RunKernelOnHost(Launch(max, {1, 1, 1}, {4, 1, 1}, args), memory));
    BOOST_TEST(output == 8);
    const KernelInfo min{"", "at::native::reduce_kernel<512, 1, at::native::ReduceOp<int, "
                             "at::native::MinOps<int>, unsigned int, int, 4, 4> >(x)"};
    BOOST_TEST(RunKernelOnHost(Launch(min, {1, 1, 1}, {4, 1, 1}, args), memory));
    BOOST_TEST(output == -9); // sign-extended from 4 bytes
}

BOOST_AUTO_TEST_CASE(a_float_reduction_or_a_wrong_geometry_runs_nothing)
{
    float input[2] = {1, 2};
    float output = -1;
    auto op = ReduceOpBlob(4, 2, {2}, {4}, input, &output);
    void* args[] = {op.data()};
    PlainMemory memory;
    const KernelInfo sum{"", "at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                             "at::native::func_wrapper_t<float, at::native::sum_functor<float, "
                             "float, float>::operator()(at::TensorIterator&)::{lambda(float, "
                             "float)#1}>, unsigned int, float, 4, 4> >(x)"};
    BOOST_TEST(!RunKernelOnHost(Launch(sum, {1, 1, 1}, {4, 1, 1}, args), memory));
    BOOST_TEST(output == -1);
    int64_t ints[2] = {1, 2};
    int64_t result = -1;
    auto intOp = ReduceOpBlob(8, 2, {2}, {8}, ints, &result);
    void* intArgs[] = {intOp.data()};
    const KernelInfo intSum{"", "at::native::reduce_kernel<512, 1, at::native::ReduceOp<long, "
                                "at::native::MaxOps<long>, unsigned int, long, 4, 4> >(x)"};
    // Block (8, 1) is not the config's (4, 1): not a ReduceOp this code knows.
    BOOST_TEST(!RunKernelOnHost(Launch(intSum, {1, 1, 1}, {8, 1, 1}, intArgs), memory));
    BOOST_TEST(result == -1);
}

BOOST_AUTO_TEST_CASE(integer_adds_with_a_host_scalar_on_either_side)
{
    PlainMemory memory;
    int64_t a[2] = {3, 4}, b[2] = {10, 20}, out[2] = {0, 0};
    int32_t n = 2;
    // CUDAFunctor_add {alpha = 2}: out = a + 2 b = {23, 44}.
    int64_t alpha = 2;
    char* three[3] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(a),
                      reinterpret_cast<char*>(b)};
    void* args[] = {&n, &alpha, three};
    const KernelInfo add{"",
                         "at::native::vectorized_elementwise_kernel<2, "
                         "at::native::CUDAFunctor_add<long>, std::array<char*, 3ul>, false>(int, "
                         "at::native::CUDAFunctor_add<long>, std::array<char*, 3ul>)"};
    BOOST_TEST(RunKernelOnHost(Launch(add, {1, 1, 1}, {128, 1, 1}, args), memory));
    BOOST_TEST(out[0] == 23);
    BOOST_TEST(out[1] == 44);
    // CUDAFunctorOnSelf_add {self = 100, alpha = 3}: out = 100 + 3 a = {109, 112}.
    int64_t onSelf[2] = {100, 3};
    char* two[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(a)};
    void* selfArgs[] = {&n, onSelf, two};
    const KernelInfo addSelf{
        "", "at::native::vectorized_elementwise_kernel<2, at::native::CUDAFunctorOnSelf_add<long>, "
            "std::array<char*, 2ul>, false>(int, x)"};
    BOOST_TEST(RunKernelOnHost(Launch(addSelf, {1, 1, 1}, {128, 1, 1}, selfArgs), memory));
    BOOST_TEST(out[0] == 109);
    BOOST_TEST(out[1] == 112);
    // CUDAFunctorOnOther_add {other = 100, alpha = 3}: out = a + 300 = {303, 304}.
    const KernelInfo addOther{
        "", "at::native::unrolled_elementwise_kernel<at::native::CUDAFunctorOnOther_add<long>, "
            "std::array<char*, 2ul>, 4, x>(int, x)"};
    BOOST_TEST(RunKernelOnHost(Launch(addOther, {1, 1, 1}, {128, 1, 1}, selfArgs), memory));
    BOOST_TEST(out[0] == 303);
    BOOST_TEST(out[1] == 304);
}

BOOST_AUTO_TEST_CASE(cat_of_byte_vectors)
{
    // CatArrInputTensorMetadata<OpaqueType<1>, unsigned int, 128, 1>: input[128] pointers at 0,
    // offset[128] at 1024, dimSize[128] at 1536, nElements[128] at 2048, isContiguous at 2560.
    std::vector<char> meta(2560 + 128 + 16, 0);
    const unsigned char x[3] = {1, 2, 3}, y[2] = {4, 5};
    unsigned char out[6] = {9, 9, 9, 9, 9, 9};
    Put<const void*>(meta, 0, x);
    Put<const void*>(meta, 8, y);
    Put<uint32_t>(meta, 1024, 0);
    Put<uint32_t>(meta, 1028, 3);
    Put<uint32_t>(meta, 2048, 3);
    Put<uint32_t>(meta, 2052, 2);
    meta[2560] = meta[2561] = 1;
    unsigned char* outPointer = out;
    uint32_t dimStride = 1;
    int32_t concatDim = 0;
    char sizeStride[64] = {};
    void* args[] = {&outPointer, meta.data(), sizeStride, &concatDim, &dimStride};
    const KernelInfo cat{
        "", "at::native::(anonymous namespace)::CatArrayBatchedCopy_contig<at::native::(anonymous "
            "namespace)::OpaqueType<1u>, unsigned int, 1, 128, 1>(x)"};
    PlainMemory memory;
    BOOST_TEST(RunKernelOnHost(Launch(cat, {264, 2, 1}, {512, 1, 1}, args), memory));
    const unsigned char expected[6] = {1, 2, 3, 4, 5, 9}; // x then y; the last byte untouched
    BOOST_TEST(std::memcmp(out, expected, 6) == 0);
}

namespace
{

// Device memory that holds no data (no host write reached it): kernels of the set run nothing.
class EmptyMemory final : public KernelMemory
{
public:
    void Settle(const void*, size_t, bool) override {}
    bool HasData(const void*, size_t) override { return false; }
    void Load(const void*, void* out, size_t bytes) override { std::memset(out, 0, bytes); }
    void Store(void*, const void*, size_t) override { ++stores; }
    int stores = 0;
};

// An elementwise launch (int N, functor, std::array<char*, K>), `argBytes` as the cubin gives it.
KernelLaunch
Elementwise(const KernelInfo& kernel, void** args, int64_t argBytes = -1)
{
    return KernelLaunch{&kernel, {1, 1, 1}, {128, 1, 1}, 0, argBytes, args};
}

} // namespace

BOOST_AUTO_TEST_CASE(fills_store_their_value_and_zero_fills_of_empty_memory_do_nothing)
{
    PlainMemory memory;
    float out[3] = {0, 0, 0};
    float value = 2.5f;
    int32_t n = 3;
    char* one[1] = {reinterpret_cast<char*>(out)};
    void* args[] = {&n, &value, one};
    const KernelInfo fill{"",
                          "at::native::vectorized_elementwise_kernel<4, "
                          "at::native::FillFunctor<float>, std::array<char*, 1ul>, "
                          "false>(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"};
    // (int, FillFunctor<float> {4 bytes at 4}, std::array at 8): 16 parameter bytes.
    BOOST_TEST(RunKernelOnHost(Elementwise(fill, args, 16), memory));
    BOOST_TEST(out[0] == 2.5f);
    BOOST_TEST(out[2] == 2.5f);
    // A zero fill over memory holding data sets it to zero.
    int64_t ints[2] = {7, 9};
    int64_t zero = 0;
    char* intOut[1] = {reinterpret_cast<char*>(ints)};
    int32_t two = 2;
    void* zeroArgs[] = {&two, &zero, intOut};
    const KernelInfo fillLong{"", "at::native::vectorized_elementwise_kernel<2, "
                                  "at::native::FillFunctor<long>, std::array<char*, 1ul>, "
                                  "false>(int, x)"};
    BOOST_TEST(RunKernelOnHost(Elementwise(fillLong, zeroArgs), memory));
    BOOST_TEST(ints[0] == 0);
    BOOST_TEST(ints[1] == 0);
    // Over memory that holds none, it changes nothing (the memory reads zeros already); a fill
    // of 2.5 there is host data and is stored.
    EmptyMemory empty;
    BOOST_TEST(!RunKernelOnHost(Elementwise(fillLong, zeroArgs), empty));
    BOOST_TEST(RunKernelOnHost(Elementwise(fill, args), empty));
    BOOST_TEST(empty.stores == 1);
    // The wrong parameter size (a layout this code does not know) runs nothing.
    out[0] = 0;
    BOOST_TEST(!RunKernelOnHost(Elementwise(fill, args, 24), memory));
    BOOST_TEST(out[0] == 0);
}

BOOST_AUTO_TEST_CASE(comparisons_of_two_tensors)
{
    PlainMemory memory;
    int64_t a[3] = {1, 5, 7}, b[3] = {5, 5, 5};
    bool out[3] = {true, true, true};
    int32_t n = 3;
    char* three[3] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(a),
                      reinterpret_cast<char*>(b)};
    int32_t gt = 1; // OpType {GE, GT, LE, LT}
    void* args[] = {&n, &gt, three};
    const KernelInfo compare{
        "", "at::native::vectorized_elementwise_kernel<8, at::native::(anonymous "
            "namespace)::CompareFunctor<long>, std::array<char*, 3ul>, false>(int, x)"};
    // (int, CompareFunctor {op: 4 bytes at 4}, std::array at 8): 8 + 24 bytes.
    BOOST_TEST(RunKernelOnHost(Elementwise(compare, args, 32), memory));
    BOOST_TEST(out[0] == false); // 1 > 5
    BOOST_TEST(out[1] == false); // 5 > 5
    BOOST_TEST(out[2] == true);  // 7 > 5
    int32_t ge = 0;
    void* geArgs[] = {&n, &ge, three};
    BOOST_TEST(RunKernelOnHost(Elementwise(compare, geArgs), memory));
    BOOST_TEST(out[1] == true); // 5 >= 5
    // torch.eq / ne of two tensors: BinaryFunctor<T, T, bool, CompareEqFunctor<T>>, EqOpType
    // {EQ, NE}.
    int32_t ne = 1;
    void* neArgs[] = {&n, &ne, three};
    const KernelInfo eq{"",
                        "at::native::vectorized_elementwise_kernel<8, "
                        "at::native::BinaryFunctor<long, long, bool, at::native::(anonymous "
                        "namespace)::CompareEqFunctor<long> >, std::array<char*, 3ul>, false>(x)"};
    BOOST_TEST(RunKernelOnHost(Elementwise(eq, neArgs), memory));
    BOOST_TEST(out[0] == true);  // 1 != 5
    BOOST_TEST(out[1] == false); // 5 != 5
    // Inputs that hold no data: nothing runs.
    EmptyMemory empty;
    BOOST_TEST(!RunKernelOnHost(Elementwise(compare, args), empty));
    BOOST_TEST(empty.stores == 0);
}

BOOST_AUTO_TEST_CASE(comparisons_with_a_host_scalar)
{
    PlainMemory memory;
    int32_t n = 3;
    bool out[3] = {};
    // compare_scalar_kernel<float>'s lambda captures {CompareFunctor f; float rhs}: op at 0, rhs
    // at 4. x < 2.0 for {1.5, 2.0, NaN}: {true, false, false} (NaN compares false).
    float x[3] = {1.5f, 2.0f, std::numeric_limits<float>::quiet_NaN()};
    char functor[8] = {};
    const int32_t lt = 3;
    const float two = 2.0f;
    std::memcpy(functor, &lt, 4);
    std::memcpy(functor + 4, &two, 4);
    char* operands[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(x)};
    void* args[] = {&n, functor, operands};
    const KernelInfo scalarFloat{
        "", "at::native::vectorized_elementwise_kernel<8, "
            "at::native::compare_scalar_kernel<float>(at::TensorIteratorBase&, "
            "at::native::(anonymous namespace)::OpType, float)::{lambda(float)#1}, "
            "std::array<char*, 2ul>, false>(int, x)"};
    // (int, lambda {8 bytes at 4}, std::array at 16): 32 parameter bytes.
    BOOST_TEST(RunKernelOnHost(Elementwise(scalarFloat, args, 32), memory));
    BOOST_TEST(out[0] == true);
    BOOST_TEST(out[1] == false);
    BOOST_TEST(out[2] == false);
    // A long scalar sits at 8 (aligned): x <= 4 for {3, 4, 5} gives {true, true, false}.
    int64_t ints[3] = {3, 4, 5};
    char longFunctor[16] = {};
    const int32_t le = 2;
    const int64_t four = 4;
    std::memcpy(longFunctor, &le, 4);
    std::memcpy(longFunctor + 8, &four, 8);
    char* intOperands[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(ints)};
    void* intArgs[] = {&n, longFunctor, intOperands};
    const KernelInfo scalarLong{
        "", "at::native::vectorized_elementwise_kernel<8, "
            "at::native::compare_scalar_kernel<long>(at::TensorIteratorBase&, "
            "at::native::(anonymous namespace)::OpType, long)::{lambda(long)#1}, "
            "std::array<char*, 2ul>, false>(int, x)"};
    BOOST_TEST(RunKernelOnHost(Elementwise(scalarLong, intArgs, 40), memory));
    BOOST_TEST(out[0] == true);
    BOOST_TEST(out[1] == true);
    BOOST_TEST(out[2] == false);
    // Half: x == 1.0 with the scalar on the right (BUnaryFunctor {f, b}); {1.0, 2.0} in binary16
    // are 0x3C00 and 0x4000. 1.0 == x with bfloat16 (AUnaryFunctor {f, a}): 0x3F80 is 1.0.
    uint16_t halves[2] = {0x3C00, 0x4000};
    char halfFunctor[8] = {};
    const uint16_t halfOne = 0x3C00;
    std::memcpy(halfFunctor + 4, &halfOne, 2); // op EQ = 0 at 0
    int32_t twoElements = 2;
    char* halfOperands[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(halves)};
    void* halfArgs[] = {&twoElements, halfFunctor, halfOperands};
    const KernelInfo eqHalf{
        "", "at::native::vectorized_elementwise_kernel<8, at::native::BUnaryFunctor<c10::Half, "
            "c10::Half, bool, at::native::(anonymous namespace)::CompareEqFunctor<c10::Half> >, "
            "std::array<char*, 2ul>, false>(x)"};
    BOOST_TEST(RunKernelOnHost(Elementwise(eqHalf, halfArgs), memory));
    BOOST_TEST(out[0] == true);
    BOOST_TEST(out[1] == false);
    uint16_t bf16[2] = {0x4000, 0x3F80}; // 2.0, 1.0
    const uint16_t bfOne = 0x3F80;
    std::memcpy(halfFunctor + 4, &bfOne, 2);
    char* bfOperands[2] = {reinterpret_cast<char*>(out), reinterpret_cast<char*>(bf16)};
    void* bfArgs[] = {&twoElements, halfFunctor, bfOperands};
    const KernelInfo eqBf16{"",
                            "at::native::vectorized_elementwise_kernel<8, "
                            "at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, bool, "
                            "at::native::(anonymous namespace)::CompareEqFunctor<c10::BFloat16> >, "
                            "std::array<char*, 2ul>, false>(x)"};
    BOOST_TEST(RunKernelOnHost(Elementwise(eqBf16, bfArgs), memory));
    BOOST_TEST(out[0] == false); // 1.0 == 2.0
    BOOST_TEST(out[1] == true);  // 1.0 == 1.0
}

BOOST_AUTO_TEST_CASE(all_and_any_of_bools)
{
    PlainMemory memory;
    const bool input[3] = {true, true, false};
    bool output = true;
    auto op = ReduceOpBlob(1, 3, {3}, {1}, input, &output);
    void* args[] = {op.data()};
    const KernelInfo all{"", "at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, "
                             "at::native::func_wrapper_t<bool, "
                             "at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::"
                             "operator()() const::{lambda()#12}::operator()() const::{lambda(bool, "
                             "bool)#1}>, unsigned int, bool, 4, 4> >(x)"};
    BOOST_TEST(RunKernelOnHost(Launch(all, {1, 1, 1}, {4, 1, 1}, args), memory));
    BOOST_TEST(output == false); // true && true && false
    const KernelInfo any{"", "at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, "
                             "at::native::func_wrapper_t<bool, "
                             "at::native::or_kernel_cuda(at::TensorIterator&)::{lambda()#1}::"
                             "operator()() const::{lambda()#12}::operator()() const::{lambda(bool, "
                             "bool)#1}>, unsigned int, bool, 4, 4> >(x)"};
    BOOST_TEST(RunKernelOnHost(Launch(any, {1, 1, 1}, {4, 1, 1}, args), memory));
    BOOST_TEST(output == true);
    const bool allTrue[2] = {true, true};
    auto both = ReduceOpBlob(1, 2, {2}, {1}, allTrue, &output);
    void* bothArgs[] = {both.data()};
    BOOST_TEST(RunKernelOnHost(Launch(all, {1, 1, 1}, {4, 1, 1}, bothArgs), memory));
    BOOST_TEST(output == true);
}

BOOST_AUTO_TEST_CASE(grad_scalers_update_grows_backs_off_and_stays_finite)
{
    PlainMemory memory;
    float scale = 65536.0f, found = 0.0f;
    int32_t tracker = 0;
    float* scaleAt = &scale;
    int32_t* trackerAt = &tracker;
    const float* foundAt = &found;
    double growth = 2.0, backoff = 0.5;
    int32_t interval = 2;
    void* args[] = {&scaleAt, &trackerAt, &foundAt, &growth, &backoff, &interval};
    const KernelInfo update{"", "at::native::amp_update_scale_cuda_kernel(float*, int*, float "
                                "const*, double, double, int)"};
    const KernelLaunch launch{&update, {1, 1, 1}, {1, 1, 1}, 0, 44, args};
    // No inf, count 0 -> 1 (below the interval 2): the scale stays.
    BOOST_TEST(RunKernelOnHost(launch, memory));
    BOOST_TEST(scale == 65536.0f);
    BOOST_TEST(tracker == 1);
    // Count 1 -> 2 = the interval: the scale doubles, the count restarts.
    BOOST_TEST(RunKernelOnHost(launch, memory));
    BOOST_TEST(scale == 131072.0f);
    BOOST_TEST(tracker == 0);
    // An inf was found: the scale halves, the count restarts.
    found = 1.0f;
    tracker = 1;
    BOOST_TEST(RunKernelOnHost(launch, memory));
    BOOST_TEST(scale == 65536.0f);
    BOOST_TEST(tracker == 0);
    // Growing past float's range keeps the scale (3e38 x 2 is not finite).
    found = 0.0f;
    scale = 3e38f;
    tracker = 1;
    BOOST_TEST(RunKernelOnHost(launch, memory));
    BOOST_TEST(scale == 3e38f);
    BOOST_TEST(tracker == 0);
}
