// The legacy batch-normalisation API PyTorch's BatchNorm calls, and the activation descriptor
// it passes along. Batch norm is memory bound: each call is priced by the bytes it moves at the
// achievable HBM rate (MemoryBoundNs):
// - forward training: x read twice (the statistics pass, then the normalising pass), y written:
//   3 |x|, plus the optional residual z read;
// - forward inference: x read, y written: 2 |x|;
// - backward: x and dy read twice (the dscale/dbias reduction, then dx), dx written: 5 |x|;
// plus the per-channel vectors (scale, bias, means, variances: 4 fp32 values a channel each way).
#include "legacy-common.h"

using namespace eidolon::gpu;
using namespace eidolon::gpu::dnn;

namespace
{

cudnnStatus_t
BatchNorm(const char* api, cudnnHandle_t handle, const cudnnTensorStruct* x,
          const cudnnTensorStruct* channels, double passesOverX)
{
    if (!handle || !x)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    const TensorFacts facts = FactsOf(*x);
    const double perChannel = channels ? double(FactsOf(*channels).Elements()) * 4 * 4 * 2 : 0;
    WorkPart part;
    part.model = WorkPart::Model::Memory;
    part.bytes = passesOverX * facts.Bytes() + perChannel;
    part.label = std::string(api) + " elements=" + std::to_string(facts.Elements());
    return SubmitOne(handle, part);
}

} // namespace

// ---------------------------------------------------------------- activation descriptors
EIDOLON_EXPORT cudnnStatus_t
cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* out)
{
    return Reply::Create(out);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t a)
{
    return Destroy(a);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetActivationDescriptor(cudnnActivationDescriptor_t a, cudnnActivationMode_t mode,
                             cudnnNanPropagation_t nan, double coef)
{
    if (!a)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    *a = cudnnActivationStruct{mode, nan, coef};
    return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- batch normalisation
EIDOLON_EXPORT cudnnStatus_t
cudnnBatchNormalizationForwardInference(cudnnHandle_t handle, cudnnBatchNormMode_t, const void*,
                                        const void*, const cudnnTensorDescriptor_t x, const void*,
                                        const cudnnTensorDescriptor_t, void*,
                                        const cudnnTensorDescriptor_t channels, const void*,
                                        const void*, const void*, const void*, double)
{
    return BatchNorm("cudnnBatchNormalizationForwardInference", handle, x, channels, 2);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnBatchNormalizationForwardTrainingEx(cudnnHandle_t handle, cudnnBatchNormMode_t,
                                         cudnnBatchNormOps_t ops, const void*, const void*,
                                         const cudnnTensorDescriptor_t x, const void*,
                                         const cudnnTensorDescriptor_t z, const void*,
                                         const cudnnTensorDescriptor_t, void*,
                                         const cudnnTensorDescriptor_t channels, const void*,
                                         const void*, double, void*, void*, double, void*, void*,
                                         cudnnActivationDescriptor_t, void*, size_t, void*, size_t)
{
    const bool residual = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION && z;
    return BatchNorm("cudnnBatchNormalizationForwardTrainingEx", handle, x, channels,
                     residual ? 4 : 3);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t, cudnnBatchNormOps_t, const void*, const void*,
    const void*, const void*, const cudnnTensorDescriptor_t x, const void*,
    const cudnnTensorDescriptor_t, const void*, const cudnnTensorDescriptor_t, const void*,
    const cudnnTensorDescriptor_t, void*, const cudnnTensorDescriptor_t, void*,
    const cudnnTensorDescriptor_t channels, const void*, const void*, void*, void*, double,
    const void*, const void*, cudnnActivationDescriptor_t, void*, size_t, void*, size_t)
{
    return BatchNorm("cudnnBatchNormalizationBackwardEx", handle, x, channels, 5);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t, cudnnBatchNormMode_t, cudnnBatchNormOps_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnActivationDescriptor_t, size_t* size)
{
    return NoWorkspace(size);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t, cudnnBatchNormMode_t, cudnnBatchNormOps_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnActivationDescriptor_t,
    size_t* size)
{
    return NoWorkspace(size);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnnHandle_t, cudnnBatchNormMode_t,
                                                     cudnnBatchNormOps_t,
                                                     const cudnnActivationDescriptor_t,
                                                     const cudnnTensorDescriptor_t, size_t* size)
{
    return NoWorkspace(size);
}
