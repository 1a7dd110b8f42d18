// libcublas replacement: handles and the GEMM family PyTorch uses, each priced by the GEMM model
// on the handle's stream. Results are not computed (device memory has no contents).
#include "blas-common.h"

#include <cublas_v2.h>

using namespace eidolon::gpu;
using namespace eidolon::gpu::blas;

struct cublasContext
{
    cudaStream_t stream = nullptr;
    cublasMath_t mathMode = CUBLAS_DEFAULT_MATH;
    cublasPointerMode_t pointerMode = CUBLAS_POINTER_MODE_HOST;
    cublasAtomicsMode_t atomicsMode = CUBLAS_ATOMICS_NOT_ALLOWED;
};

namespace
{

constexpr int kCublasVersion = CUBLAS_VERSION;

// Stores a setting on the handle (cublasSet*).
template<typename T>
cublasStatus_t
SetSetting(cublasHandle_t handle, T cublasContext::*field, T value)
{
    return Reply::SetField(handle, field, value, CUBLAS_STATUS_NOT_INITIALIZED);
}

// Reads a setting of the handle (cublasGet*).
template<typename T>
cublasStatus_t
GetSetting(cublasHandle_t handle, T cublasContext::*field, T* value)
{
    return handle ? Reply::Store(value, handle->*field) : CUBLAS_STATUS_NOT_INITIALIZED;
}

bool
Tf32Allowed(const cublasContext* handle)
{
    return (handle->mathMode & 0xF) == CUBLAS_TF32_TENSOR_OP_MATH;
}

// Which measured host cost a GEMM entry point has: the batched forms, the Ex forms (cublasGemmEx,
// cublasSgemmEx), and the typed ones (cublasSgemm and its D/H siblings).
spec::HostCall
HostCostOf(const std::string& api)
{
    if (api.find("Batched") != std::string::npos)
    {
        return spec::HostCall::CublasGemmBatched;
    }
    return api.find("Ex") != std::string::npos ? spec::HostCall::CublasGemmEx
                                               : spec::HostCall::CublasSgemm;
}

// Prices and places one (batched) GEMM on the handle's stream.
cublasStatus_t
Gemm(const char* api, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
     int64_t m, int64_t n, int64_t k, int64_t batch, cudaDataType inputType,
     cudaDataType outputType, cublasComputeType_t compute, long long strideA = -1,
     long long strideB = -1)
{
    if (!handle)
    {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    if (m < 0 || n < 0 || k < 0 || batch < 0)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    GemmShape shape;
    shape.m = m;
    shape.n = n;
    shape.k = k;
    shape.batch = batch;
    shape.inputType = DTypeOf(inputType);
    shape.mathType = MathTypeOf(compute, inputType, Tf32Allowed(handle));
    shape.outputBytes = BytesOf(outputType);
    shape.transA = transa != CUBLAS_OP_N;
    shape.transB = transb != CUBLAS_OP_N;
    shape.sharedA = batch > 1 && strideA == 0;
    shape.sharedB = batch > 1 && strideB == 0;
    ApiCall call(CallKind::Submit);
    if (m == 0 || n == 0 || batch == 0)
    {
        return CUBLAS_STATUS_SUCCESS; // nothing to do, nothing launched
    }
    call.Emu().Clock().Charge(HostCostOf(api));
    return call.Emu().SubmitGemm(static_cast<void*>(handle->stream), shape, GemmLabel(api, shape))
               ? CUBLAS_STATUS_SUCCESS
               : CUBLAS_STATUS_EXECUTION_FAILED;
}

} // namespace

// Creates a handle bound to the legacy default stream.
EIDOLON_EXPORT cublasStatus_t
cublasCreate_v2(cublasHandle_t* handle)
{
    return Reply::Create(handle);
}

// Destroys a handle.
EIDOLON_EXPORT cublasStatus_t
cublasDestroy_v2(cublasHandle_t handle)
{
    if (!handle)
    {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

// Version of the emulated cuBLAS (CUBLAS_VERSION of the headers).
EIDOLON_EXPORT cublasStatus_t
cublasGetVersion_v2(cublasHandle_t, int* version)
{
    return Reply::Store(version, kCublasVersion);
}

// Major, minor and patch level of the emulated cuBLAS.
EIDOLON_EXPORT cublasStatus_t
cublasGetProperty(libraryPropertyType type, int* value)
{
    return Reply::Property(type, value, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
}

// The CUDA runtime version cuBLAS was built for.
EIDOLON_EXPORT size_t
cublasGetCudartVersion()
{
    return CUDART_VERSION;
}

// Sets the stream later calls run on.
EIDOLON_EXPORT cublasStatus_t
cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
    return SetSetting(handle, &cublasContext::stream, stream);
}

// The handle's stream.
EIDOLON_EXPORT cublasStatus_t
cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream)
{
    return GetSetting(handle, &cublasContext::stream, stream);
}

// Math mode (CUBLAS_TF32_TENSOR_OP_MATH lets fp32 GEMMs run at the TF32 rate).
EIDOLON_EXPORT cublasStatus_t
cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    return SetSetting(handle, &cublasContext::mathMode, mode);
}

// The handle's math mode.
EIDOLON_EXPORT cublasStatus_t
cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode)
{
    return GetSetting(handle, &cublasContext::mathMode, mode);
}

// A user workspace: accepted (the model does not depend on it).
EIDOLON_EXPORT cublasStatus_t
cublasSetWorkspace_v2(cublasHandle_t handle, void*, size_t)
{
    return handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

// Where alpha/beta live (host or device): recorded.
EIDOLON_EXPORT cublasStatus_t
cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    return SetSetting(handle, &cublasContext::pointerMode, mode);
}

// The handle's pointer mode.
EIDOLON_EXPORT cublasStatus_t
cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode)
{
    return GetSetting(handle, &cublasContext::pointerMode, mode);
}

// Atomics mode: recorded.
EIDOLON_EXPORT cublasStatus_t
cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)
{
    return SetSetting(handle, &cublasContext::atomicsMode, mode);
}

// Symbolic name of a status.
EIDOLON_EXPORT const char*
cublasGetStatusName(cublasStatus_t status)
{
    switch (status)
    {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

// Description of a status.
EIDOLON_EXPORT const char*
cublasGetStatusString(cublasStatus_t status)
{
    switch (status)
    {
    case CUBLAS_STATUS_SUCCESS:
        return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "an invalid value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "the functionality requested is not supported";
    default:
        return "unknown error";
    }
}

// C = alpha op(A) op(B) + beta C in fp32.
EIDOLON_EXPORT cublasStatus_t
cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
               int n, int k, const float*, const float*, int, const float*, int, const float*,
               float*, int)
{
    return Gemm("cublasSgemm", handle, transa, transb, m, n, k, 1, CUDA_R_32F, CUDA_R_32F,
                CUBLAS_COMPUTE_32F);
}

// fp64 GEMM.
EIDOLON_EXPORT cublasStatus_t
cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
               int n, int k, const double*, const double*, int, const double*, int, const double*,
               double*, int)
{
    return Gemm("cublasDgemm", handle, transa, transb, m, n, k, 1, CUDA_R_64F, CUDA_R_64F,
                CUBLAS_COMPUTE_64F);
}

// fp16 GEMM with fp16 accumulation.
EIDOLON_EXPORT cublasStatus_t
cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
            int k, const __half*, const __half*, int, const __half*, int, const __half*, __half*,
            int)
{
    return Gemm("cublasHgemm", handle, transa, transb, m, n, k, 1, CUDA_R_16F, CUDA_R_16F,
                CUBLAS_COMPUTE_16F);
}

// Mixed-type GEMM with fp32 compute (legacy interface).
EIDOLON_EXPORT cublasStatus_t
cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
              int n, int k, const float*, const void*, cudaDataType Atype, int, const void*,
              cudaDataType, int, const float*, void*, cudaDataType Ctype, int)
{
    return Gemm("cublasSgemmEx", handle, transa, transb, m, n, k, 1, Atype, Ctype,
                CUBLAS_COMPUTE_32F);
}

// GEMM with explicit data and compute types (what PyTorch uses for fp16/bf16/fp32).
EIDOLON_EXPORT cublasStatus_t
cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
             int n, int k, const void*, const void*, cudaDataType Atype, int, const void*,
             cudaDataType, int, const void*, void*, cudaDataType Ctype, int,
             cublasComputeType_t computeType, cublasGemmAlgo_t)
{
    return Gemm("cublasGemmEx", handle, transa, transb, m, n, k, 1, Atype, Ctype, computeType);
}

// Strided batched GEMM with explicit types (PyTorch's bmm/baddbmm).
EIDOLON_EXPORT cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const void*, const void*,
                           cudaDataType Atype, int, long long int strideA, const void*,
                           cudaDataType, int, long long int strideB, const void*, void*,
                           cudaDataType Ctype, int, long long int, int batchCount,
                           cublasComputeType_t computeType, cublasGemmAlgo_t)
{
    return Gemm("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, batchCount, Atype,
                Ctype, computeType, strideA, strideB);
}

// Batched GEMM over arrays of pointers, explicit types.
EIDOLON_EXPORT cublasStatus_t
cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, const void*, const void* const[], cudaDataType Atype, int,
                    const void* const[], cudaDataType, int, const void*, void* const[],
                    cudaDataType Ctype, int, int batchCount, cublasComputeType_t computeType,
                    cublasGemmAlgo_t)
{
    return Gemm("cublasGemmBatchedEx", handle, transa, transb, m, n, k, batchCount, Atype, Ctype,
                computeType);
}

// Strided batched fp32 GEMM.
EIDOLON_EXPORT cublasStatus_t
cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                          int m, int n, int k, const float*, const float*, int,
                          long long int strideA, const float*, int, long long int strideB,
                          const float*, float*, int, long long int, int batchCount)
{
    return Gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, batchCount,
                CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, strideA, strideB);
}

// Strided batched fp16 GEMM.
EIDOLON_EXPORT cublasStatus_t
cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                          int m, int n, int k, const __half*, const __half*, int,
                          long long int strideA, const __half*, int, long long int strideB,
                          const __half*, __half*, int, long long int, int batchCount)
{
    return Gemm("cublasHgemmStridedBatched", handle, transa, transb, m, n, k, batchCount,
                CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, strideA, strideB);
}

// Strided batched fp64 GEMM.
EIDOLON_EXPORT cublasStatus_t
cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                          int m, int n, int k, const double*, const double*, int,
                          long long int strideA, const double*, int, long long int strideB,
                          const double*, double*, int, long long int, int batchCount)
{
    return Gemm("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, batchCount,
                CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, strideA, strideB);
}

// Batched fp32 GEMM over arrays of pointers.
EIDOLON_EXPORT cublasStatus_t
cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                   int n, int k, const float*, const float* const[], int, const float* const[], int,
                   const float*, float* const[], int, int batchCount)
{
    return Gemm("cublasSgemmBatched", handle, transa, transb, m, n, k, batchCount, CUDA_R_32F,
                CUDA_R_32F, CUBLAS_COMPUTE_32F);
}

// Batched fp16 GEMM over arrays of pointers.
EIDOLON_EXPORT cublasStatus_t
cublasHgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                   int n, int k, const __half*, const __half* const[], int, const __half* const[],
                   int, const __half*, __half* const[], int, int batchCount)
{
    return Gemm("cublasHgemmBatched", handle, transa, transb, m, n, k, batchCount, CUDA_R_16F,
                CUDA_R_16F, CUBLAS_COMPUTE_16F);
}

// Called by the generated stubs of the cuBLAS entry points eidolon does not implement.
extern "C" int
eidolonCublasUnsupported(const char* api)
{
    WarnUnsupportedOnce(api, "CUBLAS_STATUS_NOT_SUPPORTED");
    return CUBLAS_STATUS_NOT_SUPPORTED;
}
