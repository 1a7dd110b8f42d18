// The legacy convolution API (PyTorch's path when its cuDNN v8 API is disabled): tensor, filter
// and convolution descriptors; algorithm queries that offer the implicit-GEMM algorithms with no
// workspace; and the forward, backward-data and backward-filter calls, each priced as its implicit
// GEMM on the handle's stream.
#include "legacy-common.h"

#include <algorithm>

using namespace eidolon::gpu;
using namespace eidolon::gpu::dnn;

namespace
{

// fp32 convolutions use TF32 tensor cores unless the descriptor asks for FMA math (PyTorch sets
// CUDNN_FMA_MATH when torch.backends.cudnn.allow_tf32 is off).
bool
TensorCores(const cudnnConvolutionStruct& conv)
{
    return conv.mathType != CUDNN_FMA_MATH;
}

cudnnStatus_t
Convolve(const char* api, cudnnHandle_t handle, ConvDirection direction, const cudnnTensorStruct* x,
         const cudnnFilterStruct* w, const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y)
{
    if (!handle || !x || !w || !conv || !y)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    auto shape =
        ConvolutionGemm(direction, FactsOf(*x), FactsOf(*w), FactsOf(*y), TensorCores(*conv));
    if (!shape)
    {
        return Unsupported(api, CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "descriptor shapes");
    }
    return SubmitOne(handle, ConvolutionPart(api, *shape, FactsOf(*x), FactsOf(*w), FactsOf(*y)));
}

// One algorithm per direction: the implicit-GEMM one, deterministic, without workspace.
template<typename Perf, typename Algo>
cudnnStatus_t
OfferAlgorithm(Algo algo, const cudnnConvolutionStruct* conv, int requested, int* returned,
               Perf* results)
{
    if (!conv || !returned || !results || requested < 1)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    Perf perf{};
    perf.algo = algo;
    perf.status = CUDNN_STATUS_SUCCESS;
    perf.time = 0;
    perf.memory = 0;
    perf.determinism = CUDNN_DETERMINISTIC;
    perf.mathType = conv->mathType;
    results[0] = perf;
    *returned = 1;
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

// ---------------------------------------------------------------- tensor descriptors
EIDOLON_EXPORT cudnnStatus_t
cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* out)
{
    return Reply::Create(out);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t t)
{
    return Destroy(t);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t t, cudnnDataType_t dataType, int nbDims,
                           const int dims[], const int strides[])
{
    if (!t || !dims || !strides || nbDims < 1 || nbDims > CUDNN_DIM_MAX)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    t->dataType = dataType;
    t->dims.assign(dims, dims + nbDims);
    t->strides.assign(strides, strides + nbDims);
    return CUDNN_STATUS_SUCCESS;
}

// NCHW or NHWC strides of an n x c x h x w tensor.
EIDOLON_EXPORT cudnnStatus_t
cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t t, cudnnTensorFormat_t format,
                           cudnnDataType_t dataType, int n, int c, int h, int w)
{
    const int nchw[4] = {n, c, h, w};
    const int nchwStrides[4] = {c * h * w, h * w, w, 1};
    const int nhwcStrides[4] = {c * h * w, 1, w * c, c};
    return cudnnSetTensorNdDescriptor(t, dataType, 4, nchw,
                                      format == CUDNN_TENSOR_NHWC ? nhwcStrides : nchwStrides);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t t, int requested,
                           cudnnDataType_t* dataType, int* nbDims, int dims[], int strides[])
{
    if (!t || !dataType || !nbDims)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    *dataType = t->dataType;
    *nbDims = int(t->dims.size());
    for (int i = 0; i < std::min(requested, *nbDims); ++i)
    {
        if (dims)
        {
            dims[i] = t->dims[i];
        }
        if (strides)
        {
            strides[i] = t->strides[i];
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- filter descriptors
EIDOLON_EXPORT cudnnStatus_t
cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* out)
{
    return Reply::Create(out);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t w)
{
    return Destroy(w);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t w, cudnnDataType_t dataType,
                           cudnnTensorFormat_t format, int nbDims, const int dims[])
{
    if (!w || !dims || nbDims < 3 || nbDims > CUDNN_DIM_MAX)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    w->dataType = dataType;
    w->format = format;
    w->dims.assign(dims, dims + nbDims);
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t w, cudnnDataType_t dataType,
                           cudnnTensorFormat_t format, int k, int c, int h, int width)
{
    const int dims[4] = {k, c, h, width};
    return cudnnSetFilterNdDescriptor(w, dataType, format, 4, dims);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t w, int requested,
                           cudnnDataType_t* dataType, cudnnTensorFormat_t* format, int* nbDims,
                           int dims[])
{
    if (!w || !dataType || !format || !nbDims)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    *dataType = w->dataType;
    *format = w->format;
    *nbDims = int(w->dims.size());
    for (int i = 0; dims && i < std::min(requested, *nbDims); ++i)
    {
        dims[i] = w->dims[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- convolution descriptors
EIDOLON_EXPORT cudnnStatus_t
cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* out)
{
    return Reply::Create(out);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t conv)
{
    return Destroy(conv);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t conv, int length, const int padding[],
                                const int strides[], const int dilations[],
                                cudnnConvolutionMode_t mode, cudnnDataType_t computeType)
{
    if (!conv || !padding || !strides || !dilations || length < 1 || length > CUDNN_DIM_MAX - 2)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    conv->padding.assign(padding, padding + length);
    conv->strides.assign(strides, strides + length);
    conv->dilations.assign(dilations, dilations + length);
    conv->mode = mode;
    conv->computeType = computeType;
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t conv, int padH, int padW, int u, int v,
                                int dilationH, int dilationW, cudnnConvolutionMode_t mode,
                                cudnnDataType_t computeType)
{
    const int padding[2] = {padH, padW}, strides[2] = {u, v}, dilations[2] = {dilationH, dilationW};
    return cudnnSetConvolutionNdDescriptor(conv, 2, padding, strides, dilations, mode, computeType);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t conv, int groups)
{
    if (!conv || groups < 1)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    conv->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t conv, cudnnMathType_t mathType)
{
    return Reply::SetField(conv, &cudnnConvolutionStruct::mathType, mathType,
                           CUDNN_STATUS_BAD_PARAM);
}

// Output dims: (in + 2 pad - dilation (filter - 1) - 1) / stride + 1 per spatial dim.
EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                      const cudnnTensorDescriptor_t x,
                                      const cudnnFilterDescriptor_t w, int nbDims, int out[])
{
    if (!conv || !x || !w || !out || nbDims != int(x->dims.size()) ||
        w->dims.size() != x->dims.size() || conv->padding.size() + 2 != x->dims.size())
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    out[0] = x->dims[0];
    out[1] = w->dims[0];
    for (int i = 2; i < nbDims; ++i)
    {
        const int s = i - 2;
        const int extent = conv->dilations[s] * (w->dims[i] - 1) + 1;
        out[i] = (x->dims[i] + 2 * conv->padding[s] - extent) / conv->strides[s] + 1;
    }
    return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- algorithms and workspaces
EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                       const cudnnFilterDescriptor_t,
                                       const cudnnConvolutionDescriptor_t conv,
                                       const cudnnTensorDescriptor_t, const int requested,
                                       int* returned, cudnnConvolutionFwdAlgoPerf_t* results)
{
    return OfferAlgorithm(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, conv, requested,
                          returned, results);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t, const cudnnTensorDescriptor_t, const void*,
                                       const cudnnFilterDescriptor_t, const void*,
                                       const cudnnConvolutionDescriptor_t conv,
                                       const cudnnTensorDescriptor_t, void*, const int requested,
                                       int* returned, cudnnConvolutionFwdAlgoPerf_t* results, void*,
                                       size_t)
{
    return OfferAlgorithm(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, conv, requested,
                          returned, results);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t, const cudnnFilterDescriptor_t,
                                            const cudnnTensorDescriptor_t,
                                            const cudnnConvolutionDescriptor_t conv,
                                            const cudnnTensorDescriptor_t, const int requested,
                                            int* returned,
                                            cudnnConvolutionBwdDataAlgoPerf_t* results)
{
    return OfferAlgorithm(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, conv, requested, returned, results);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const void*, const cudnnTensorDescriptor_t,
    const void*, const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t, void*,
    const int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results, void*, size_t)
{
    return OfferAlgorithm(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, conv, requested, returned, results);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                              const cudnnTensorDescriptor_t,
                                              const cudnnConvolutionDescriptor_t conv,
                                              const cudnnFilterDescriptor_t, const int requested,
                                              int* returned,
                                              cudnnConvolutionBwdFilterAlgoPerf_t* results)
{
    return OfferAlgorithm(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, conv, requested, returned, results);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const void*, const cudnnTensorDescriptor_t,
    const void*, const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t, void*,
    const int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results, void*, size_t)
{
    return OfferAlgorithm(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, conv, requested, returned, results);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                        const cudnnFilterDescriptor_t,
                                        const cudnnConvolutionDescriptor_t,
                                        const cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t,
                                        size_t* size)
{
    return NoWorkspace(size);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t, const cudnnFilterDescriptor_t,
                                             const cudnnTensorDescriptor_t,
                                             const cudnnConvolutionDescriptor_t,
                                             const cudnnTensorDescriptor_t,
                                             cudnnConvolutionBwdDataAlgo_t, size_t* size)
{
    return NoWorkspace(size);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                               const cudnnTensorDescriptor_t,
                                               const cudnnConvolutionDescriptor_t,
                                               const cudnnFilterDescriptor_t,
                                               cudnnConvolutionBwdFilterAlgo_t, size_t* size)
{
    return NoWorkspace(size);
}

// ---------------------------------------------------------------- convolutions
EIDOLON_EXPORT cudnnStatus_t
cudnnConvolutionForward(cudnnHandle_t handle, const void*, const cudnnTensorDescriptor_t x,
                        const void*, const cudnnFilterDescriptor_t w, const void*,
                        const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t, void*,
                        size_t, const void*, const cudnnTensorDescriptor_t y, void*)
{
    return Convolve("cudnnConvolutionForward", handle, ConvDirection::Forward, x, w, conv, y);
}

// Forward with bias, residual and activation fused into the epilogue: the convolution's price.
EIDOLON_EXPORT cudnnStatus_t
cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void*, const cudnnTensorDescriptor_t x, const void*,
    const cudnnFilterDescriptor_t w, const void*, const cudnnConvolutionDescriptor_t conv,
    cudnnConvolutionFwdAlgo_t, void*, size_t, const void*, const cudnnTensorDescriptor_t,
    const void*, const cudnnTensorDescriptor_t, const void*, const cudnnActivationDescriptor_t,
    const cudnnTensorDescriptor_t y, void*)
{
    return Convolve("cudnnConvolutionBiasActivationForward", handle, ConvDirection::Forward, x, w,
                    conv, y);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnConvolutionBackwardData(cudnnHandle_t handle, const void*, const cudnnFilterDescriptor_t w,
                             const void*, const cudnnTensorDescriptor_t dy, const void*,
                             const cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdDataAlgo_t,
                             void*, size_t, const void*, const cudnnTensorDescriptor_t dx, void*)
{
    return Convolve("cudnnConvolutionBackwardData", handle, ConvDirection::BackwardData, dx, w,
                    conv, dy);
}

EIDOLON_EXPORT cudnnStatus_t
cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void*, const cudnnTensorDescriptor_t x,
                               const void*, const cudnnTensorDescriptor_t dy, const void*,
                               const cudnnConvolutionDescriptor_t conv,
                               cudnnConvolutionBwdFilterAlgo_t, void*, size_t, const void*,
                               const cudnnFilterDescriptor_t dw, void*)
{
    return Convolve("cudnnConvolutionBackwardFilter", handle, ConvDirection::BackwardFilter, x, dw,
                    conv, dy);
}
