// The legacy (descriptor-and-call) API's descriptors, shared by legacy-cnn.cc and legacy-norm.cc.
#pragma once

#include "cudnn-common.h"

struct cudnnTensorStruct
{
    cudnnDataType_t dataType = CUDNN_DATA_FLOAT;
    std::vector<int> dims;
    std::vector<int> strides;
};

struct cudnnFilterStruct
{
    cudnnDataType_t dataType = CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    std::vector<int> dims; // K, C/groups, spatial... whatever the format
};

struct cudnnConvolutionStruct
{
    std::vector<int> padding, strides, dilations;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnDataType_t computeType = CUDNN_DATA_FLOAT;
    int groups = 1;
    cudnnMathType_t mathType = CUDNN_DEFAULT_MATH;
};

struct cudnnActivationStruct
{
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
    double coef = 0;
};

namespace eidolon::gpu::dnn
{

// The pricing's facts of a tensor or filter descriptor (dims and data type).
template<typename TensorOrFilter>
TensorFacts
FactsOf(const TensorOrFilter& t)
{
    TensorFacts f;
    f.dims.assign(t.dims.begin(), t.dims.end());
    f.dataType = t.dataType;
    return f;
}

// Destroys a descriptor; null is allowed, as in cuDNN.
template<typename T>
cudnnStatus_t
Destroy(T* descriptor)
{
    delete descriptor;
    return CUDNN_STATUS_SUCCESS;
}

// The workspace (or reserve space) eidolon's algorithms ask for: none.
inline cudnnStatus_t
NoWorkspace(size_t* size)
{
    return Reply::Store(size, size_t(0));
}

// Places one kernel on the handle's stream.
inline cudnnStatus_t
SubmitOne(cudnnHandle_t handle, WorkPart part)
{
    GraphWork work;
    work.parts.push_back(std::move(part));
    return Submit(handle, work) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

} // namespace eidolon::gpu::dnn
