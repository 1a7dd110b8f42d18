// The loadable replacements of cuSPARSE, cuSPARSELt, cuFFT, cuSOLVER and NVRTC: linked against
// NVIDIA's libraries (cuSPARSELt: ours; its header is not in the toolkit), run with ours. Handles
// and versions work; computations return the library's not-supported status (NVRTC: internal
// error, with a program log saying why).
#include "check.h"

#include <cufft.h>
#include <cusolverDn.h>
#include <cusparse.h>
#include <nvrtc.h>

#include <cstring>
#include <string>

// cuSPARSELt's entry points used here (its handle is an opaque 1024-byte struct).
struct LtHandle
{
    unsigned char data[1024];
};
extern "C" cusparseStatus_t cusparseLtInit(LtHandle*);
extern "C" cusparseStatus_t cusparseLtDestroy(const LtHandle*);
extern "C" cusparseStatus_t cusparseLtGetVersion(const LtHandle*, int*);
extern "C" cusparseStatus_t cusparseLtMatmul(const LtHandle*, const void*, const void*, const void*,
                                             const void*, const void*, const void*, void*, void*,
                                             cudaStream_t*, int32_t);

int
main()
{
    // cuSPARSE
    cusparseHandle_t sparse = nullptr;
    CHECK(cusparseCreate(&sparse) == CUSPARSE_STATUS_SUCCESS);
    int version = 0;
    CHECK(cusparseGetVersion(sparse, &version) == CUSPARSE_STATUS_SUCCESS);
    CHECK(version == CUSPARSE_VERSION);
    cusparseMatDescr_t descr = nullptr;
    CHECK(cusparseCreateMatDescr(&descr) == CUSPARSE_STATUS_SUCCESS);
    CHECK(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ONE) == CUSPARSE_STATUS_SUCCESS);
    CHECK(cusparseGetMatIndexBase(descr) == CUSPARSE_INDEX_BASE_ONE);
    CHECK(cusparseXcoo2csr(sparse, nullptr, 0, 0, nullptr, CUSPARSE_INDEX_BASE_ZERO) ==
          CUSPARSE_STATUS_NOT_SUPPORTED);
    CHECK(std::strcmp(cusparseGetErrorName(CUSPARSE_STATUS_NOT_SUPPORTED),
                      "CUSPARSE_STATUS_NOT_SUPPORTED") == 0);
    cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x10);
    CHECK(cusparseSetStream(sparse, stream) == CUSPARSE_STATUS_SUCCESS);
    cudaStream_t got = nullptr;
    CHECK(cusparseGetStream(sparse, &got) == CUSPARSE_STATUS_SUCCESS && got == stream);
    // Bad arguments: a missing handle is "not initialized", a missing result pointer or
    // descriptor "invalid value" (cuSPARSE's documented statuses).
    CHECK(cusparseGetStream(nullptr, &got) == CUSPARSE_STATUS_NOT_INITIALIZED);
    CHECK(cusparseGetStream(sparse, nullptr) == CUSPARSE_STATUS_INVALID_VALUE);
    CHECK(cusparseSetMatType(nullptr, CUSPARSE_MATRIX_TYPE_GENERAL) ==
          CUSPARSE_STATUS_INVALID_VALUE);
    CHECK(cusparseCreateMatDescr(nullptr) == CUSPARSE_STATUS_INVALID_VALUE);
    CHECK(cusparseGetVersion(sparse, nullptr) == CUSPARSE_STATUS_INVALID_VALUE);
    int part = -1;
    CHECK(cusparseGetProperty(MINOR_VERSION, &part) == CUSPARSE_STATUS_SUCCESS &&
          part == CUSPARSE_VER_MINOR);
    CHECK(cusparseDestroyMatDescr(descr) == CUSPARSE_STATUS_SUCCESS);
    CHECK(cusparseDestroy(sparse) == CUSPARSE_STATUS_SUCCESS);

    // cuSPARSELt
    LtHandle lt;
    CHECK(cusparseLtInit(&lt) == CUSPARSE_STATUS_SUCCESS);
    CHECK(cusparseLtGetVersion(&lt, &version) == CUSPARSE_STATUS_SUCCESS && version == 801);
    CHECK(cusparseLtMatmul(&lt, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, nullptr, 0) == CUSPARSE_STATUS_NOT_SUPPORTED);
    CHECK(cusparseLtDestroy(&lt) == CUSPARSE_STATUS_SUCCESS);

    // cuFFT
    cufftHandle plan = 0;
    CHECK(cufftCreate(&plan) == CUFFT_SUCCESS);
    CHECK(cufftSetAutoAllocation(plan, 0) == CUFFT_SUCCESS);
    CHECK(cufftGetVersion(&version) == CUFFT_SUCCESS && version == CUFFT_VERSION);
    cufftHandle plan1d = 0;
    CHECK(cufftPlan1d(&plan1d, 1024, CUFFT_C2C, 1) == CUFFT_NOT_SUPPORTED);
    CHECK(cufftGetProperty(MAJOR_VERSION, &part) == CUFFT_SUCCESS && part == CUFFT_VER_MAJOR);
    CHECK(cufftGetVersion(nullptr) == CUFFT_INVALID_VALUE);
    CHECK(cufftDestroy(plan) == CUFFT_SUCCESS);
    CHECK(cufftDestroy(plan) == CUFFT_INVALID_PLAN);

    // cuSOLVER
    cusolverDnHandle_t dense = nullptr;
    CHECK(cusolverDnCreate(&dense) == CUSOLVER_STATUS_SUCCESS);
    int lwork = 0;
    CHECK(cusolverDnSpotrf_bufferSize(dense, CUBLAS_FILL_MODE_LOWER, 16, nullptr, 16, &lwork) ==
          CUSOLVER_STATUS_NOT_SUPPORTED);
    CHECK(cusolverDnSetStream(nullptr, stream) == CUSOLVER_STATUS_NOT_INITIALIZED);
    CHECK(cusolverDnGetStream(dense, nullptr) == CUSOLVER_STATUS_INVALID_VALUE);
    CHECK(cusolverGetProperty(PATCH_LEVEL, &part) == CUSOLVER_STATUS_SUCCESS &&
          part == CUSOLVER_VER_PATCH);
    CHECK(cusolverDnDestroy(dense) == CUSOLVER_STATUS_SUCCESS);

    // NVRTC
    int major = 0, minor = 0;
    CHECK(nvrtcVersion(&major, &minor) == NVRTC_SUCCESS && major >= 12);
    nvrtcProgram program = nullptr;
    CHECK(nvrtcCreateProgram(&program, "__global__ void k() {}", "k.cu", 0, nullptr, nullptr) ==
          NVRTC_SUCCESS);
    CHECK(nvrtcCompileProgram(program, 0, nullptr) == NVRTC_ERROR_INTERNAL_ERROR);
    size_t logSize = 0;
    CHECK(nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS && logSize > 1);
    CHECK(nvrtcGetProgramLogSize(nullptr, &logSize) == NVRTC_ERROR_INVALID_PROGRAM);
    CHECK(nvrtcGetProgramLogSize(program, nullptr) == NVRTC_ERROR_INVALID_INPUT);
    std::string log(logSize, '\0');
    CHECK(nvrtcGetProgramLog(program, &log[0]) == NVRTC_SUCCESS);
    CHECK(log.find("eidolon") != std::string::npos);
    CHECK(nvrtcDestroyProgram(&program) == NVRTC_SUCCESS && program == nullptr);
    return Finish("math-libs");
}
