// cuBLAS and cuBLASLt GEMMs are priced by the GEMM model (gpu-emu/README.md) on the handle's
// stream: expected times worked out here from TEST-GPU's numbers (100 SMs, 1 TB/s, fp32 10,
// tf32 100, bf16 200 TFLOPS; no pricing block, so 80 % of peak per SM and GPU-wide, all tiles
// equally efficient, no fixed cost): the CUTLASS sm80 tile (and split-K) with the fewest
// waves x tile FLOPs wins.
#include "check.h"

#include <algorithm>
#include <cublasLt.h>
#include <cublas_v2.h>

// Hand-worked prices in us (comments at each use).
// bf16 4096^3: waves x tile area over the tiles: 256x128 6 x 32768, 128x128 11 x 16384, 128x64
// 21 x 8192, 64x64 41 x 4096 (least); 41 x 2*64*64*4096 FLOP at 200e12/100*0.8 = 1.6e12 per SM.
const double kBf16Gemm4096Us = 41 * 2.0 * 64 * 64 * 4096 / 1.6e12 * 1e6; // 859.83 us
cudaStream_t g_stream;
cudaEvent_t g_start, g_stop;

template<typename F>
double
TimedUs(F work)
{
    cudaEventRecord(g_start, g_stream);
    work();
    cudaEventRecord(g_stop, g_stream);
    cudaEventSynchronize(g_stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, g_start, g_stop);
    return ms * 1e3;
}

int
main()
{
    CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&g_start));
    CHECK_CUDA(cudaEventCreate(&g_stop));
    const double O = kLaunchOverheadUs;

    cublasHandle_t handle;
    CHECK(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasSetStream(handle, g_stream) == CUBLAS_STATUS_SUCCESS);
    void* a = nullptr;
    cudaMalloc(&a, 64 << 20);
    float alpha = 1, beta = 0;

    // bf16 4096^3 through cublasGemmEx: 1024 tiles, 11 waves, compute bound.
    double us = TimedUs(
        [&]
        {
            CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, 4096, 4096, 4096, &alpha, a,
                               CUDA_R_16BF, 4096, a, CUDA_R_16BF, 4096, &beta, a, CUDA_R_16BF, 4096,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
        });
    CHECK_NEAR(us, O + kBf16Gemm4096Us, 1e-3);
    CHECK_NEAR(kBf16Gemm4096Us, 859.8323, 1e-3);

    // fp32 SGEMM at the fp32 rate, then at the TF32 rate once the math mode allows it.
    auto sgemm = [&]
    {
        CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 1024, 1024, &alpha,
                          static_cast<float*>(a), 1024, static_cast<float*>(a), 1024, &beta,
                          static_cast<float*>(a), 1024) == CUBLAS_STATUS_SUCCESS);
    };
    // fp32 at 10e12/100*0.8 = 8e10 per SM: 256x128 is 32 tiles, split 3 ways (96 CTAs, 342 of k
    // each): 2*256*128*342*96 / (96 * 8e10) = 280.17 us, plus 2*1024*1024*3*4 B of partial sums at
    // 1 TB/s = 25.17 us; 64x64 would take 3 waves x 104.86 = 314.6 us, 128x128 one wave of 64 at
    // 419.4 us.
    CHECK_NEAR(TimedUs(sgemm),
               O + 2.0 * 256 * 128 * 342 / 8e10 * 1e6 + 2.0 * 1024 * 1024 * 3 * 4 / 1e12 * 1e6,
               1e-3);
    CHECK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    // tf32 at 8e11 per SM: now the split's 25.17 us of partial sums outweigh its gain (28.0 us of
    // mainloop); 64x64: 256 tiles, 3 waves x 2*64*64*1024 / 8e11 = 31.46 us.
    CHECK_NEAR(TimedUs(sgemm), O + 3 * 2.0 * 64 * 64 * 1024 / 8e11 * 1e6, 1e-3);

    // Strided batched bf16, memory bound: 200 GEMMs of 128x128x4096.
    const long long kOperand = 128 * 4096, kOut = 128 * 128;
    char* batched = nullptr;
    CHECK(cudaMalloc(&batched, size_t(200) * (2 * kOperand + kOut) * 2) == cudaSuccess);
    char* batchedB = batched + 200 * kOperand * 2;
    char* batchedC = batchedB + 200 * kOperand * 2;
    auto stridedBatched = [&](long long strideB)
    {
        CHECK(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, 128, 128, 4096, &alpha,
                                         batched, CUDA_R_16BF, 4096, kOperand, batchedB,
                                         CUDA_R_16BF, 4096, strideB, &beta, batchedC, CUDA_R_16BF,
                                         128, kOut, 200, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    };
    us = TimedUs([&] { stridedBatched(kOperand); });
    // Memory bound: 200 x (2 x 128x4096 + 128x128) x 2 B at 1 TB/s = 425.98 us (the mainloop, 8
    // waves of 64x64 tiles, is 167.8 us).
    CHECK_NEAR(us, O + 200 * (2.0 * 128 * 4096 + 128 * 128) * 2 / 1e12 * 1e6, 1e-3);
    // One B for all 200 (batch stride 0: a shared weight) is read once: (201 x 128x4096 +
    // 200 x 128x128) x 2 B = 217.32 us, still above the mainloop.
    us = TimedUs([&] { stridedBatched(0); });
    CHECK_NEAR(us, O + (201.0 * 128 * 4096 + 200.0 * 128 * 128) * 2 / 1e12 * 1e6, 1e-3);
    CHECK(cudaFree(batched) == cudaSuccess);
    cudaStream_t got = nullptr;
    CHECK(cublasGetStream(handle, &got) == CUBLAS_STATUS_SUCCESS && got == g_stream);
    CHECK(cublasDestroy(handle) == CUBLAS_STATUS_SUCCESS);

    // cuBLASLt: the same bf16 GEMM through descriptors, layouts and the heuristic.
    cublasLtHandle_t lt;
    CHECK(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulDesc_t desc;
    CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    cublasOperation_t transA = CUBLAS_OP_T;
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA,
                                         sizeof(transA)) == CUBLAS_STATUS_SUCCESS);
    cublasLtMatrixLayout_t la, lb, lc;
    CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, 4096, 4096, 4096) ==
          CUBLAS_STATUS_SUCCESS); // k x m
    CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, 4096, 4096, 4096) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, 4096, 4096, 4096) == CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulPreference_t pref;
    CHECK(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
    size_t workspace = 32 << 20;
    CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace,
                                               sizeof(workspace)) == CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &result, &found) ==
          CUBLAS_STATUS_SUCCESS);
    CHECK(found == 1 && result.state == CUBLAS_STATUS_SUCCESS);
    CHECK_NEAR(result.wavesCount, 4096.0 / kSmCount, 1e-4); // 64x64 tiles, as above
    us = TimedUs(
        [&]
        {
            CHECK(cublasLtMatmul(lt, desc, &alpha, a, la, a, lb, &beta, a, lc, a, lc, &result.algo,
                                 nullptr, 0, g_stream) == CUBLAS_STATUS_SUCCESS);
        });
    CHECK_NEAR(us, O + kBf16Gemm4096Us, 1e-3);
    // Batched layouts: 8 x (512 x 1024 x 256) at the bf16 rate.
    int32_t batch = 8;
    cublasLtMatrixLayout_t ba, bc;
    CHECK(cublasLtMatrixLayoutCreate(&ba, CUDA_R_16BF, 256, 512, 256) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatrixLayoutCreate(&bc, CUDA_R_16BF, 512, 1024, 512) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatrixLayoutSetAttribute(bc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                           sizeof(batch)) == CUBLAS_STATUS_SUCCESS);
    us = TimedUs(
        [&]
        {
            cublasLtMatmul(lt, desc, &alpha, a, ba, a, lb, &beta, a, bc, a, bc, nullptr, nullptr, 0,
                           g_stream);
        });
    // Memory bound: 8 x (512x256 + 256x1024 + 512x1024) x 2 B at 1 TB/s = 14.68 us (mainloop:
    // 64x32 tiles, 21 waves x 0.655 us = 13.76 us).
    CHECK_NEAR(us, O + 8 * (512.0 * 256 + 256 * 1024 + 512 * 1024) * 2 / 1e12 * 1e6, 1e-3);
    int32_t readBack = 0;
    size_t written = 0;
    CHECK(cublasLtMatrixLayoutGetAttribute(bc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &readBack,
                                           sizeof(readBack), &written) == CUBLAS_STATUS_SUCCESS);
    CHECK(readBack == 8 && written == sizeof(int32_t));
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(ba);
    cublasLtMatrixLayoutDestroy(bc);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatmulDescDestroy(desc);
    CHECK(cublasLtDestroy(lt) == CUBLAS_STATUS_SUCCESS);
    return Finish("blas");
}
