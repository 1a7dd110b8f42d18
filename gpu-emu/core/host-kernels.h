// Kernels the host runs (README "Device memory and data"): the few PyTorch kernels whose work is
// plain data movement, a fill, a comparison or a tiny integer computation (sizes, offsets,
// counts, flags), so that what a program computes on the device from host-given values and then
// branches on reads back as on a GPU. A kernel of the set runs when one of its inputs holds host
// data (a fill: always, its value is the host's) and its arguments parse; any other launch, and
// these with inputs that hold none, compute nothing, as every kernel does.
//  - reduce_kernel<..., ReduceOp<T, sum/max/min ops, ...>> of an integer T to one output
//    (torch.sum/max/min of a whole tensor), and and/or of bool (.all(), .any());
//  - vectorized_/unrolled_elementwise_kernel of CUDAFunctor[OnSelf|OnOther]_add<T> for an
//    integer T (a + alpha * b, either side a host scalar);
//  - the same kernels of FillFunctor<T> (torch.full/ones/zero_), and of the comparisons
//    (CompareFunctor, compare_scalar_kernel's functor, CompareEqFunctor: lt/le/gt/ge/eq/ne of two
//    tensors or of a tensor and a host scalar), for integer, bool and floating-point T;
//  - CatArrayBatchedCopy* of one-dimensional contiguous inputs (torch.cat of vectors);
//  - amp_update_scale_cuda_kernel (GradScaler.update: the loss scale and its growth count).
#pragma once

#include "cost-model.h"
#include "data-exchange.h"

#include <cstdint>

namespace eidolon::gpu
{

// The memory a host-run kernel reads and writes.
class KernelMemory : public DataAccess
{
public:
    // Before `bytes` at `pointer` are read (`reads`) or written: the pending NCCL receives into
    // them land, a read waiting for them as a host read does.
    virtual void Settle(const void* pointer, size_t bytes, bool reads) = 0;
};

// Largest input (bytes) a host-run kernel reads or fills: the set is for metadata, not for
// tensors.
constexpr uint64_t kHostKernelMaxBytes = 1ull << 20;

// Runs `launch` on the host if it is one of the kernels above and its inputs hold data; returns
// whether it ran.
bool RunKernelOnHost(const KernelLaunch& launch, KernelMemory& memory);

} // namespace eidolon::gpu
