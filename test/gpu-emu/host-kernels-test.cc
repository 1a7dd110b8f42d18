// Kernels the host runs (core/host-kernels.{h,cc}, gpu-emu/README.md "Kernels the host runs"):
// launches whose arguments are laid out by hand from PyTorch's headers (Reduce.cuh, Shape.cu,
// the ufunc add functors) over host memory; every expected value is worked out in the comment.
#define BOOST_TEST_MODULE gpu_emu_host_kernels
#include <boost/test/unit_test.hpp>

#include "host-kernels.h"

#include <cstdint>
#include <cstring>
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
