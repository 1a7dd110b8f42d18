// The host-time tests' program (test/host-time): real CUDA, cuBLAS and NCCL calls, compiled by
// nvcc and run on eidolon's libraries. Every rank is one process (RANK, WORLD_SIZE, LOCAL_RANK from
// `eidolon run`); rank 0 hands the ncclUniqueId to the others through EIDOLON_TEST_ID_FILE.
//   launch-bound N   N empty kernels on a created stream, nothing else (a launch-bound loop)
//   collective N     N iterations of: host work, a kernel, an all-reduce of 4 MiB, a stream sync
//   train N          N training-like steps: host work, forward kernels and two cublasGemmEx, a
//                    backward GEMM, a memset, an all-reduce of the gradients, an event, a sync
// The looping modes print "rank R loop_ns=..." (the virtual time of the loop, by the program's own
// clock) and, for train, each step's time.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#define CHECK(call, ok)                                                                            \
    do                                                                                             \
    {                                                                                              \
        auto r_ = (call);                                                                          \
        if (r_ != (ok))                                                                            \
        {                                                                                          \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, int(r_)); \
            return 2;                                                                              \
        }                                                                                          \
    } while (0)
#define CUDA(call) CHECK(call, cudaSuccess)
#define NCCL(call) CHECK(call, ncclSuccess)
#define BLAS(call) CHECK(call, CUBLAS_STATUS_SUCCESS)

__global__ void
empty()
{
}

__global__ void
scale(float* data, float factor)
{
    if (data)
        data[blockIdx.x * blockDim.x + threadIdx.x] *= factor;
}

static int64_t
NowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Real CPU work between calls, as a framework's Python and dispatcher do: on a busy machine it
// takes a different CPU time every run, which must not show in the virtual times (calls mode).
static uint64_t
HostWork(uint64_t seed)
{
    uint64_t x = seed | 1;
    for (int i = 0; i < 200000; ++i)
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static int
EnvInt(const char* name, int fallback)
{
    const char* value = std::getenv(name);
    return value ? std::atoi(value) : fallback;
}

static bool
ExchangeId(int rank, ncclUniqueId* id)
{
    const char* path = std::getenv("EIDOLON_TEST_ID_FILE");
    if (!path)
        return false;
    if (rank == 0)
    {
        if (ncclGetUniqueId(id) != ncclSuccess)
            return false;
        std::string tmp = std::string(path) + ".tmp";
        std::ofstream(tmp, std::ios::binary).write(id->internal, sizeof id->internal);
        return std::rename(tmp.c_str(), path) == 0;
    }
    for (int tries = 0; tries < 120000; ++tries)
    {
        std::ifstream in(path, std::ios::binary);
        if (in.read(id->internal, sizeof id->internal))
            return true;
        usleep(1000);
    }
    return false;
}

static int
LaunchBound(int launches)
{
    cudaStream_t stream;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int i = 0; i < launches; ++i)
        empty<<<1, 1, 0, stream>>>();
    return 0; // no sync: the host clock at exit is the launches' host cost (and the create's)
}

// Observations cost nothing: `rounds` of cudaGetDevice, an event created and destroyed and a query
// of an idle stream; then a kernel, a query that finds it not ready, the cudaGetLastError that
// clears that answer (part of the query), and one more cudaGetLastError (a check of its own).
static int
Observe(int rounds)
{
    cudaStream_t stream;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int i = 0; i < rounds; ++i)
    {
        int device = -1;
        CUDA(cudaGetDevice(&device));
        cudaEvent_t event;
        CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        CUDA(cudaEventDestroy(event));
        CUDA(cudaStreamQuery(stream));
    }
    empty<<<1, 1, 0, stream>>>();
    if (cudaStreamQuery(stream) != cudaErrorNotReady)
        return 4;
    (void)cudaGetLastError();
    (void)cudaGetLastError();
    return 0;
}

int
main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    int iters = argc > 2 ? std::atoi(argv[2]) : 1;
    if (mode == "launch-bound")
        return LaunchBound(iters);
    if (mode == "observe")
        return Observe(iters);
    if (mode != "collective" && mode != "train")
    {
        std::fprintf(stderr, "usage: host-time launch-bound|observe|collective|train N\n");
        return 1;
    }
    int rank = EnvInt("RANK", 0);
    int size = EnvInt("WORLD_SIZE", 1);
    CUDA(cudaSetDevice(EnvInt("LOCAL_RANK", rank)));
    ncclUniqueId id;
    if (!ExchangeId(rank, &id))
        return 3;
    ncclComm_t comm;
    NCCL(ncclCommInitRank(&comm, size, id, rank));
    cudaStream_t stream;
    CUDA(cudaStreamCreate(&stream));
    const size_t gradBytes = 4 << 20;
    float* grads = nullptr;
    CUDA(cudaMalloc(&grads, gradBytes));
    const int n = 1024; // GEMMs of 1024^3 in bf16
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
    CUDA(cudaMalloc(&a, size_t(n) * n * 2));
    CUDA(cudaMalloc(&b, size_t(n) * n * 2));
    CUDA(cudaMalloc(&c, size_t(n) * n * 2));
    cublasHandle_t blas;
    BLAS(cublasCreate(&blas));
    BLAS(cublasSetStream(blas, stream));
    cudaEvent_t stepEnd;
    CUDA(cudaEventCreate(&stepEnd));
    const float one = 1, zero = 0;
    uint64_t sink = 0;

    int64_t first = NowNs();
    for (int i = 0; i < iters; ++i)
    {
        int64_t stepStart = NowNs();
        sink += HostWork(uint64_t(i) + uint64_t(rank));
        if (mode == "train")
        {
            for (int k = 0; k < 4; ++k)
                scale<<<1024, 256, 0, stream>>>(nullptr, 1.0f);
            for (int k = 0; k < 3; ++k) // two forward GEMMs and one backward
                BLAS(cublasGemmEx(blas, CUBLAS_OP_N, k == 2 ? CUBLAS_OP_T : CUBLAS_OP_N, n, n, n,
                                  &one, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &zero, c,
                                  CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            CUDA(cudaMemsetAsync(grads, 0, 4096, stream));
        }
        else
        {
            scale<<<1024, 256, 0, stream>>>(nullptr, 1.0f);
        }
        NCCL(ncclAllReduce(grads, grads, gradBytes / sizeof(float), ncclFloat, ncclSum, comm,
                           stream));
        CUDA(cudaEventRecord(stepEnd, stream));
        CUDA(cudaStreamSynchronize(stream));
        if (mode == "train")
            std::printf("rank %d step %d step_ns=%lld\n", rank, i, (long long)(NowNs() - stepStart));
    }
    std::printf("rank %d loop_ns=%lld\n", rank, (long long)(NowNs() - first));
    NCCL(ncclCommDestroy(comm));
    return int(sink & 0);
}
