// Shared by libcublas and libcublasLt: CUDA data and compute types to the GEMM model's terms.
#pragma once

#include "../core/diagnostics.h"
#include "../core/emulator.h"
#include "../library-replies.h"

#include <cublas_api.h>
#include <library_types.h>

#include <string>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

namespace eidolon::gpu::blas
{

// The answers of calls that write a result or create an object: a null pointer is
// CUBLAS_STATUS_INVALID_VALUE.
using Reply = Replies<cublasStatus_t, CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_INVALID_VALUE>;

inline DType
DTypeOf(cudaDataType type)
{
    switch (type)
    {
    case CUDA_R_64F:
    case CUDA_C_64F:
        return DType::F64;
    case CUDA_R_16F:
    case CUDA_C_16F:
        return DType::F16;
    case CUDA_R_16BF:
    case CUDA_C_16BF:
        return DType::BF16;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
        return DType::F8;
    case CUDA_R_8I:
    case CUDA_R_8U:
        return DType::I8;
    default:
        return DType::F32;
    }
}

inline int
BytesOf(cudaDataType type)
{
    switch (type)
    {
    case CUDA_R_64F:
    case CUDA_C_32F:
        return 8;
    case CUDA_C_64F:
        return 16;
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return 2;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
    case CUDA_R_8I:
    case CUDA_R_8U:
        return 1;
    default:
        return 4;
    }
}

// The rate a GEMM runs at: tensor cores of the input type; fp32 inputs use TF32 only when asked
// (CUBLAS_COMPUTE_32F_FAST_TF32 or the handle's TF32 math mode).
inline DType
MathTypeOf(cublasComputeType_t compute, cudaDataType inputType, bool tf32Allowed)
{
    switch (compute)
    {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
        return DType::F64;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        return DType::TF32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
        return DType::F16;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
        return DType::BF16;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
        return DType::F16;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
        return DType::I8;
    default:
        break;
    }
    DType input = DTypeOf(inputType);
    if (input == DType::F32 && tf32Allowed)
    {
        return DType::TF32;
    }
    return input;
}

inline std::string
GemmLabel(const char* api, const GemmShape& shape)
{
    return std::string(api) + " m=" + std::to_string(shape.m) + " n=" + std::to_string(shape.n) +
           " k=" + std::to_string(shape.k) + " batch=" + std::to_string(shape.batch) + " " +
           DTypeName(shape.mathType);
}

} // namespace eidolon::gpu::blas
