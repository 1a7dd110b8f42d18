// What the training code stands on: checked CUDA/cuBLAS/NCCL calls, a caching device allocator
// that tracks reserved memory and names the allocation that does not fit, the process groups
// (NCCL communicators split from one world communicator), and row-major GEMMs.
#pragma once

#include "config.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace traingpt
{

using bf16 = __nv_bfloat16;

struct RuntimeError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

void CheckCuda(cudaError_t e, const char* call, const char* file, int line);
void CheckCublas(cublasStatus_t s, const char* call, const char* file, int line);
void CheckNccl(ncclResult_t r, const char* call, const char* file, int line);
#define CUDA_CHECK(x) ::traingpt::CheckCuda((x), #x, __FILE__, __LINE__)
#define CUBLAS_CHECK(x) ::traingpt::CheckCublas((x), #x, __FILE__, __LINE__)
#define NCCL_CHECK(x) ::traingpt::CheckNccl((x), #x, __FILE__, __LINE__)

std::string FormatBytes(double bytes); // "2.00 GiB"

// A caching allocator in the manner of PyTorch's: freed blocks are kept for reuse by requests of
// the same size, so "reserved" (what was cudaMalloc'ed) is what the GPU holds. A block freed by
// one stream and reused on another is ordered by an event. A cudaMalloc that fails is retried once
// after the cache is released; then the out-of-memory error names the allocation.
class DeviceMemory
{
public:
    void Init(int device);
    void* Alloc(size_t bytes, cudaStream_t stream, const std::string& what);
    void Free(void* p, cudaStream_t lastUse);
    template<typename T> T* New(size_t count, cudaStream_t stream, const std::string& what)
    {
        return static_cast<T*>(Alloc(count * sizeof(T), stream, what));
    }
    size_t Reserved() const { return m_reserved; }
    size_t PeakReserved() const { return m_peakReserved; }
    size_t Capacity() const { return m_capacity; }

private:
    struct Block
    {
        size_t bytes = 0;
        cudaEvent_t released = nullptr;
    };
    void ReleaseCache();
    int m_device = 0;
    size_t m_capacity = 0, m_reserved = 0, m_peakReserved = 0;
    std::unordered_map<void*, Block> m_live;
    std::multimap<size_t, std::pair<void*, Block>> m_cache;
    std::vector<cudaEvent_t> m_events;
};

// One communicator per process group; a group of one rank has none (its collectives are no-ops).
struct Group
{
    ncclComm_t comm = nullptr;
    int size = 1, rank = 0;
};

struct Comms
{
    Group world, tp, cp, data; // data: the dp x cp ranks that share parameters
    // Pipeline links: a two-rank communicator per (stage, next stage) pair and direction, so that
    // each communicator is used on one stream of each rank and a send never queues behind a
    // receive (with pp = 2 both neighbours are the same rank). The sender is rank 0 of a link.
    Group actSend, actRecv, gradSend, gradRecv;
};

// WORLD_SIZE processes: rank 0 creates the ncclUniqueId and hands it out over a TCP store on
// MASTER_ADDR:MASTER_PORT; every group is then split from the world communicator.
Comms InitComms(const Layout& layout);

struct Blas
{
    cublasHandle_t handle = nullptr;
    cublasLtHandle_t lt = nullptr;
    void* ltWorkspace = nullptr;
    size_t ltWorkspaceBytes = 0;
};

// Row-major C[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C, batched with strides (elements).
struct GemmArgs
{
    bool transA = false, transB = false;
    int m = 0, n = 0, k = 0;
    const void* a = nullptr;
    cudaDataType_t typeA = CUDA_R_16BF;
    int lda = 0;
    long long strideA = 0;
    const void* b = nullptr;
    cudaDataType_t typeB = CUDA_R_16BF;
    int ldb = 0;
    long long strideB = 0;
    void* c = nullptr;
    cudaDataType_t typeC = CUDA_R_16BF;
    int ldc = 0;
    long long strideC = 0;
    int batch = 1;
    float alpha = 1.0f, beta = 0.0f;
};
void Gemm(Blas& blas, cudaStream_t s, const GemmArgs& g);
// Y[M,N] = X[M,K] W[N,K]^T + beta Y with fp8 X and W (both K-major, the only layout fp8 matmuls
// take; not both e5m2), through cublasLtMatmul. Y is bf16 or fp32 (yType).
struct Fp8GemmArgs
{
    int m = 0, n = 0, k = 0;
    const void* x = nullptr;
    cudaDataType_t xType = CUDA_R_8F_E4M3;
    const void* w = nullptr;
    cudaDataType_t wType = CUDA_R_8F_E4M3;
    void* y = nullptr;
    cudaDataType_t yType = CUDA_R_16BF;
    float beta = 0.0f;
};
void GemmFp8(Blas& blas, cudaStream_t s, const Fp8GemmArgs& g);

} // namespace traingpt
