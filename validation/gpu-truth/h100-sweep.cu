// Ground-truth sweep for eidolon's host-cost and kernel-pricing models, run on a real GPU.
//
// Prints one JSON object per line (JSON Lines) on stdout:
//   {"kind":"host", ...}   host time of one CUDA/cuBLAS/NCCL call (CPU wall clock, median of batches)
//   {"kind":"gemm", ...}   device time of one GEMM (CUDA events), with cuBLASLt's heuristic choice
//   {"kind":"mem", ...}    device time of a memory-bound kernel, copy or memset
//   {"kind":"device", ...} what the device and driver are
// It is a plain CUDA/cuBLAS program (nvcc h100-sweep.cu -lcublas -lcublasLt -ldl); NCCL is loaded
// with dlopen when a libnccl.so.2 is found, so the sweep runs without it too.
#include "cuda-check.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CB(x)                                                                                      \
    do                                                                                             \
    {                                                                                              \
        cublasStatus_t s_ = (x);                                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
        {                                                                                          \
            fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, int(s_));             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double NowUs()
{
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static double Median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

__global__ void EmptyKernel() {}
struct BigArgs
{
    char bytes[1024];
};
__global__ void BigArgKernel(BigArgs a)
{
    if (a.bytes[0] == 42 && threadIdx.x == 1000)
        printf("x");
}
__global__ void SpinKernel(long long ns)
{
    long long start = clock64();
    // ~1.98 GHz: spin a fixed number of cycles; the exact length does not matter.
    while (clock64() - start < ns * 2)
    {
    }
}
__global__ void FillKernel(uint32_t* p, size_t words, uint32_t seed)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words;
         i += size_t(gridDim.x) * blockDim.x)
    {
        uint32_t x = uint32_t(i) * 2654435761u ^ seed;
        x ^= x >> 13;
        x *= 0x5bd1e995u;
        x ^= x >> 15;
        // Keep bf16/fp16/fp8 halves finite and small: clear exponent's top bits.
        p[i] = x & 0x3F7F3F7Fu;
    }
}
__global__ void CopyKernel(const float4* __restrict__ a, float4* __restrict__ b, size_t n)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x)
        b[i] = a[i];
}
__global__ void AddKernel(const float4* __restrict__ a, const float4* __restrict__ b,
                          float4* __restrict__ c, size_t n)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x)
    {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
__global__ void ScaleKernel(float4* __restrict__ a, size_t n)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x)
    {
        float4 x = a[i];
        a[i] = make_float4(x.x * 1.5f, x.y * 1.5f, x.z * 1.5f, x.w * 1.5f);
    }
}
__global__ void SumKernel(const float4* __restrict__ a, size_t n, float* out)
{
    float s = 0;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
         i += size_t(gridDim.x) * blockDim.x)
    {
        float4 x = a[i];
        s += x.x + x.y + x.z + x.w;
    }
    for (int o = 16; o > 0; o /= 2)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, s);
}

static int g_sms = 132;

// ---------------------------------------------------------------- host costs

template <class F>
static void HostCost(const char* call, const char* detail, int batch, int batches, F&& body,
                     cudaStream_t drainStream = nullptr)
{
    std::vector<double> per;
    for (int b = 0; b < batches + 1; ++b)
    {
        double t0 = NowUs();
        for (int i = 0; i < batch; ++i)
            body(i);
        double t1 = NowUs();
        if (drainStream)
            CK(cudaStreamSynchronize(drainStream));
        if (b > 0) // the first batch warms caches and lazy initialisation
            per.push_back((t1 - t0) / batch);
    }
    printf("{\"kind\":\"host\",\"call\":\"%s\",\"detail\":\"%s\",\"us_median\":%.4f,"
           "\"us_min\":%.4f,\"batch\":%d,\"batches\":%d}\n",
           call, detail, Median(per), *std::min_element(per.begin(), per.end()), batch, batches);
    fflush(stdout);
}

typedef int (*NcclGetUniqueId)(void*);
typedef int (*NcclCommInitAll)(void**, int, const int*);
typedef int (*NcclAllReduce)(const void*, void*, size_t, int, int, void*, cudaStream_t);
typedef int (*NcclGroup)();

static void HostCosts()
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *d, *h, *hp;
    CK(cudaMalloc(&d, 64 << 20));
    CK(cudaMallocHost(&h, 64 << 20));
    hp = malloc(64 << 20);
    memset(hp, 1, 64 << 20);
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaEvent_t evt;
    CK(cudaEventCreate(&evt));

    // Launches are measured in batches of 256 so that the launch queue never fills (a full queue
    // makes cudaLaunchKernel wait for the GPU, which is not a host cost).
    HostCost("cudaLaunchKernel", "empty<<<1,1>>> 0 B args", 256, 40,
             [&](int) { EmptyKernel<<<1, 1, 0, s>>>(); }, s);
    HostCost("cudaLaunchKernel", "<<<1320,256>>> 0 B args", 256, 40,
             [&](int) { EmptyKernel<<<g_sms * 10, 256, 0, s>>>(); }, s);
    BigArgs big{};
    HostCost("cudaLaunchKernel", "<<<1,32>>> 1024 B args", 256, 40,
             [&](int) { BigArgKernel<<<1, 32, 0, s>>>(big); }, s);
    HostCost("cudaLaunchKernel", "legacy default stream empty<<<1,1>>>", 256, 40,
             [&](int) { EmptyKernel<<<1, 1>>>(); }, nullptr);
    CK(cudaDeviceSynchronize());

    // Round trip: launch one empty kernel on an idle stream and wait for it.
    HostCost("launch+cudaStreamSynchronize", "empty kernel, idle GPU", 1, 400, [&](int) {
        EmptyKernel<<<1, 1, 0, s>>>();
        cudaStreamSynchronize(s);
    });
    HostCost("cudaStreamSynchronize", "idle stream", 1000, 20, [&](int) { cudaStreamSynchronize(s); });
    HostCost("cudaDeviceSynchronize", "idle device", 1000, 20, [&](int) { cudaDeviceSynchronize(); });
    HostCost("cudaEventRecord", "disable-timing event", 256, 40, [&](int) { cudaEventRecord(ev, s); }, s);
    HostCost("cudaEventRecord", "timing event", 256, 40, [&](int) { cudaEventRecord(evt, s); }, s);
    CK(cudaStreamSynchronize(s));
    HostCost("cudaEventQuery", "completed event", 1000, 20, [&](int) { cudaEventQuery(ev); });
    HostCost("cudaEventSynchronize", "completed event", 1000, 20, [&](int) { cudaEventSynchronize(ev); });
    HostCost("cudaStreamWaitEvent", "completed event", 256, 40, [&](int) { cudaStreamWaitEvent(s, ev, 0); }, s);
    HostCost("cudaStreamQuery", "idle stream", 1000, 20, [&](int) { cudaStreamQuery(s); });
    HostCost("cudaGetDevice", "", 1000, 20, [&](int) {
        int dev;
        cudaGetDevice(&dev);
    });
    HostCost("cudaSetDevice", "same device", 1000, 20, [&](int) { cudaSetDevice(0); });
    HostCost("cudaGetLastError", "", 1000, 20, [&](int) { cudaGetLastError(); });
    HostCost("cudaStreamIsCapturing", "", 1000, 20, [&](int) {
        cudaStreamCaptureStatus st;
        cudaStreamIsCapturing(s, &st);
    });
    HostCost("cudaPointerGetAttributes", "device pointer", 1000, 20, [&](int) {
        cudaPointerAttributes a;
        cudaPointerGetAttributes(&a, d);
    });

    // Copies and memsets: host time of the call (async ones return before the copy ends).
    for (size_t bytes : {size_t(4), size_t(4096), size_t(65536), size_t(1 << 20)})
    {
        std::string sz = std::to_string(bytes) + " B";
        HostCost("cudaMemcpyAsync", ("H2D pinned " + sz).c_str(), 64, 40,
                 [&](int) { cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s); }, s);
        HostCost("cudaMemcpyAsync", ("D2H pinned " + sz).c_str(), 64, 40,
                 [&](int) { cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s); }, s);
        HostCost("cudaMemcpyAsync", ("H2D pageable " + sz).c_str(), 64, 40,
                 [&](int) { cudaMemcpyAsync(d, hp, bytes, cudaMemcpyHostToDevice, s); }, s);
        HostCost("cudaMemcpyAsync", ("D2D " + sz).c_str(), 64, 40,
                 [&](int) { cudaMemcpyAsync((char*)d + (32 << 20), d, bytes, cudaMemcpyDeviceToDevice, s); }, s);
        HostCost("cudaMemcpy", ("H2D pinned sync " + sz).c_str(), 16, 40,
                 [&](int) { cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice); });
        HostCost("cudaMemcpy", ("D2H pinned sync " + sz).c_str(), 16, 40,
                 [&](int) { cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost); });
        HostCost("cudaMemcpy", ("H2D pageable sync " + sz).c_str(), 16, 40,
                 [&](int) { cudaMemcpy(d, hp, bytes, cudaMemcpyHostToDevice); });
        HostCost("cudaMemcpy", ("D2H pageable sync " + sz).c_str(), 16, 40,
                 [&](int) { cudaMemcpy(hp, d, bytes, cudaMemcpyDeviceToHost); });
        HostCost("cudaMemsetAsync", sz.c_str(), 64, 40, [&](int) { cudaMemsetAsync(d, 0, bytes, s); }, s);
    }

    // Allocation: cudaMalloc then cudaFree of the same size (each timed separately).
    for (size_t bytes : {size_t(512), size_t(1 << 20), size_t(2 << 20), size_t(64 << 20),
                         size_t(1) << 30, size_t(8) << 30})
    {
        std::vector<double> tm, tf;
        for (int i = 0; i < 21; ++i)
        {
            void* p;
            double t0 = NowUs();
            CK(cudaMalloc(&p, bytes));
            double t1 = NowUs();
            CK(cudaFree(p));
            double t2 = NowUs();
            if (i)
            {
                tm.push_back(t1 - t0);
                tf.push_back(t2 - t1);
            }
        }
        printf("{\"kind\":\"host\",\"call\":\"cudaMalloc\",\"detail\":\"%zu B\",\"us_median\":%.4f,"
               "\"us_min\":%.4f,\"batch\":1,\"batches\":20}\n",
               bytes, Median(tm), *std::min_element(tm.begin(), tm.end()));
        printf("{\"kind\":\"host\",\"call\":\"cudaFree\",\"detail\":\"%zu B\",\"us_median\":%.4f,"
               "\"us_min\":%.4f,\"batch\":1,\"batches\":20}\n",
               bytes, Median(tf), *std::min_element(tf.begin(), tf.end()));
    }
    for (size_t bytes : {size_t(4096), size_t(1 << 20), size_t(64 << 20)})
    {
        std::vector<double> tm, tf;
        for (int i = 0; i < 11; ++i)
        {
            void* p;
            double t0 = NowUs();
            CK(cudaMallocHost(&p, bytes));
            double t1 = NowUs();
            CK(cudaFreeHost(p));
            double t2 = NowUs();
            if (i)
            {
                tm.push_back(t1 - t0);
                tf.push_back(t2 - t1);
            }
        }
        printf("{\"kind\":\"host\",\"call\":\"cudaMallocHost\",\"detail\":\"%zu B\",\"us_median\":%.4f,"
               "\"us_min\":%.4f,\"batch\":1,\"batches\":10}\n",
               bytes, Median(tm), *std::min_element(tm.begin(), tm.end()));
        printf("{\"kind\":\"host\",\"call\":\"cudaFreeHost\",\"detail\":\"%zu B\",\"us_median\":%.4f,"
               "\"us_min\":%.4f,\"batch\":1,\"batches\":10}\n",
               bytes, Median(tf), *std::min_element(tf.begin(), tf.end()));
    }
    HostCost("cudaMallocAsync+cudaFreeAsync", "1 MiB, default pool", 64, 40, [&](int) {
        void* p;
        cudaMallocAsync(&p, 1 << 20, s);
        cudaFreeAsync(p, s);
    }, s);
    HostCost("cudaStreamCreate+Destroy", "non-blocking", 16, 20, [&](int) {
        cudaStream_t t;
        cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking);
        cudaStreamDestroy(t);
    });
    HostCost("cudaEventCreate+Destroy", "disable timing", 64, 20, [&](int) {
        cudaEvent_t e;
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        cudaEventDestroy(e);
    });

    // cuBLAS / cuBLASLt enqueue cost for a tiny GEMM (the GPU finishes it in a few us).
    cublasHandle_t hb;
    CB(cublasCreate(&hb));
    CB(cublasSetStream(hb, s));
    float one = 1, zero = 0;
    for (int n : {64, 1024})
    {
        std::string det = "bf16 " + std::to_string(n) + "^3 GemmEx";
        HostCost("cublasGemmEx", det.c_str(), 128, 40, [&](int) {
            cublasGemmEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, d, CUDA_R_16BF, n, d,
                         CUDA_R_16BF, n, &zero, (char*)d + (16 << 20), CUDA_R_16BF, n,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }, s);
    }
    HostCost("cublasSgemm", "fp32 64^3", 128, 40, [&](int) {
        cublasSgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, (float*)d, 64, (float*)d, 64,
                    &zero, (float*)d + (4 << 20), 64);
    }, s);
    HostCost("cublasGemmStridedBatchedEx", "bf16 64^3 x16", 128, 40, [&](int) {
        cublasGemmStridedBatchedEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, 64, 64, 64, &one, d, CUDA_R_16BF,
                                   64, 4096, d, CUDA_R_16BF, 64, 4096, &zero,
                                   (char*)d + (16 << 20), CUDA_R_16BF, 64, 4096, 16,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }, s);
    {
        cublasLtHandle_t lt;
        CB(cublasLtCreate(&lt));
        cublasLtMatmulDesc_t op;
        CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        cublasLtMatrixLayout_t la, lb, lc;
        int n = 256;
        CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, n, n));
        CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, n, n, n));
        CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, n, n));
        void* ws;
        size_t wsBytes = 32 << 20;
        CK(cudaMalloc(&ws, wsBytes));
        cublasLtMatmulPreference_t pref;
        CB(cublasLtMatmulPreferenceCreate(&pref));
        CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsBytes, sizeof wsBytes));
        cublasLtMatmulHeuristicResult_t res;
        int got = 0;
        CB(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &res, &got));
        HostCost("cublasLtMatmul", "bf16 256^3 given algo", 128, 40, [&](int) {
            cublasLtMatmul(lt, op, &one, d, la, d, lb, &zero, (char*)d + (16 << 20), lc,
                           (char*)d + (16 << 20), lc, &res.algo, ws, wsBytes, s);
        }, s);
        HostCost("cublasLtMatmul", "bf16 256^3 no algo (heuristic inside)", 128, 40, [&](int) {
            cublasLtMatmul(lt, op, &one, d, la, d, lb, &zero, (char*)d + (16 << 20), lc,
                           (char*)d + (16 << 20), lc, nullptr, ws, wsBytes, s);
        }, s);
        HostCost("cublasLtMatmulAlgoGetHeuristic", "bf16 256^3 top 1", 64, 20, [&](int) {
            cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &res, &got);
        });
        CK(cudaFree(ws));
    }

    // NCCL enqueue cost on a one-rank communicator (no peer: what remains is the host path).
    const char* ncclPaths[] = {"libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
                               getenv("NCCL_LIB") ? getenv("NCCL_LIB") : "libnccl.so.2"};
    void* lib = nullptr;
    for (const char* p : ncclPaths)
        if (!lib)
            lib = dlopen(p, RTLD_NOW);
    if (lib)
    {
        auto initAll = (NcclCommInitAll)dlsym(lib, "ncclCommInitAll");
        auto allReduce = (NcclAllReduce)dlsym(lib, "ncclAllReduce");
        auto allGather = (NcclAllReduce)dlsym(lib, "ncclAllGather");
        auto groupStart = (NcclGroup)dlsym(lib, "ncclGroupStart");
        auto groupEnd = (NcclGroup)dlsym(lib, "ncclGroupEnd");
        int (*getVersion)(int*) = (int (*)(int*))dlsym(lib, "ncclGetVersion");
        int ver = 0;
        if (getVersion)
            getVersion(&ver);
        void* comm = nullptr;
        int dev = 0;
        double t0 = NowUs();
        int rc = initAll(&comm, 1, &dev);
        double t1 = NowUs();
        printf("{\"kind\":\"host\",\"call\":\"ncclCommInitAll\",\"detail\":\"1 rank, NCCL %d, rc %d\","
               "\"us_median\":%.1f,\"us_min\":%.1f,\"batch\":1,\"batches\":1}\n",
               ver, rc, t1 - t0, t1 - t0);
        if (rc == 0)
        {
            // ncclFloat32 = 7, ncclBfloat16 = 9, ncclSum = 0
            for (size_t count : {size_t(256), size_t(1 << 20)})
            {
                std::string det = "1 rank, fp32 x " + std::to_string(count) + ", NCCL " + std::to_string(ver);
                HostCost("ncclAllReduce", det.c_str(), 64, 40,
                         [&](int) { allReduce(d, (char*)d + (32 << 20), count, 7, 0, comm, s); }, s);
                HostCost("ncclAllGather", det.c_str(), 64, 40,
                         [&](int) { allGather(d, (char*)d + (32 << 20), count, 7, 0, comm, s); }, s);
            }
            HostCost("ncclGroupStart+AllReduce x8+ncclGroupEnd", "1 rank, fp32 x 1M", 16, 40, [&](int) {
                groupStart();
                for (int j = 0; j < 8; ++j)
                    allReduce(d, (char*)d + (32 << 20), 1 << 20, 7, 0, comm, s);
                groupEnd();
            }, s);
        }
    }
    else
        printf("{\"kind\":\"note\",\"text\":\"no libnccl.so.2 found: NCCL enqueue not measured\"}\n");

    // GPU-side: back-to-back empty kernels queued behind a spin kernel (the device's per-kernel
    // floor with no host in the way), and the time from a launch call to the kernel's end.
    for (int grid : {1, 132, 1320})
    {
        CK(cudaEventRecord(evt, s));
        SpinKernel<<<1, 1, 0, s>>>(20000000); // 20 ms: the queue fills behind it
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < 1000; ++i)
            EmptyKernel<<<grid, 128, 0, s>>>();
        CK(cudaEventRecord(b, s));
        CK(cudaStreamSynchronize(s));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        printf("{\"kind\":\"gpu\",\"what\":\"back-to-back empty kernels, grid %d x 128\","
               "\"us_per_kernel\":%.4f}\n",
               grid, ms * 1000 / 1000);
        CK(cudaEventDestroy(a));
        CK(cudaEventDestroy(b));
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFree(d));
    CK(cudaFreeHost(h));
    free(hp);
    fflush(stdout);
}

// ---------------------------------------------------------------- GEMMs

struct Gemm
{
    std::string tag;
    const char* dtype; // bf16 fp16 fp32 tf32 fp8
    int m, n, k, batch;
    cublasOperation_t ta, tb;
    const char* epilogue; // "" for none, "bias", "gelu_bias" (cuBLASLt only)
};

static void* g_bufA;
static void* g_bufB;
static void* g_bufC;
static void* g_bias;
static void* g_ws;
static size_t g_wsBytes = 64 << 20;

static cudaDataType_t InType(const char* d)
{
    if (!strcmp(d, "fp16"))
        return CUDA_R_16F;
    if (!strcmp(d, "fp32") || !strcmp(d, "tf32"))
        return CUDA_R_32F;
    if (!strcmp(d, "fp8"))
        return CUDA_R_8F_E4M3;
    return CUDA_R_16BF;
}

static void LtInfo(const cublasLtMatmulAlgo_t& algo, char* out, size_t n)
{
    int tile = -1, stages = -1, splitk = -1, swz = -1, red = -1, cluster = -1, custom = -1, id = -1;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &w);
    snprintf(out, n,
             "\"lt_algo_id\":%d,\"lt_tile_id\":%d,\"lt_stages_id\":%d,\"lt_splitk\":%d,"
             "\"lt_swizzle\":%d,\"lt_reduction\":%d,\"lt_cluster_id\":%d,\"lt_custom\":%d",
             id, tile, stages, splitk, swz, red, cluster, custom);
}

// Device time of one call of `body`, as the GPU sees it: each sample queues its repetitions
// behind a spin kernel, so the host's enqueue cost (4 us a launch, 10 us a cuBLAS call) never
// starves the GPU and the span between the two events is back-to-back device work only.
template <class F>
static double TimeDevice(cudaStream_t s, F&& body)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i)
        body();
    SpinKernel<<<1, 1, 0, s>>>(2000000);
    CK(cudaEventRecord(a, s));
    body();
    CK(cudaEventRecord(b, s));
    CK(cudaStreamSynchronize(s));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    // Enough repetitions for ~20 ms of work per sample (at least 2, at most 1000).
    int per = std::max(2, std::min(1000, int(20.0 / std::max(ms, 0.001f))));
    std::vector<double> samples;
    for (int r = 0; r < 5; ++r)
    {
        // The spin covers the host's enqueue of `per` calls (at most ~15 us each).
        SpinKernel<<<1, 1, 0, s>>>((long long)(per * 15000LL + 1000000));
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < per; ++i)
            body();
        CK(cudaEventRecord(b, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaEventElapsedTime(&ms, a, b));
        samples.push_back(ms * 1000.0 / per);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return Median(samples);
}

static void RunGemm(cublasHandle_t hb, cublasLtHandle_t lt, cudaStream_t s, const Gemm& g)
{
    bool useLt = !strcmp(g.dtype, "fp8") || g.epilogue[0];
    cudaDataType_t in = InType(g.dtype);
    cudaDataType_t out = !strcmp(g.dtype, "fp32") || !strcmp(g.dtype, "tf32") ? CUDA_R_32F
                         : !strcmp(g.dtype, "fp16")                            ? CUDA_R_16F
                                                                               : CUDA_R_16BF;
    cublasComputeType_t ct = !strcmp(g.dtype, "fp32")   ? CUBLAS_COMPUTE_32F
                             : !strcmp(g.dtype, "tf32") ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                        : CUBLAS_COMPUTE_32F;
    int lda = g.ta == CUBLAS_OP_N ? g.m : g.k;
    int ldb = g.tb == CUBLAS_OP_N ? g.k : g.n;
    int ldc = g.m;
    long long sA = (long long)g.m * g.k, sB = (long long)g.k * g.n, sC = (long long)g.m * g.n;
    float one = 1, zero = 0;

    // cuBLASLt's heuristic for the same problem (what cuBLAS's kernel choice looks like).
    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof g.ta));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof g.tb));
    if (!strcmp(g.epilogue, "bias") || !strcmp(g.epilogue, "gelu_bias"))
    {
        cublasLtEpilogue_t e = !strcmp(g.epilogue, "bias") ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS;
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g_bias, sizeof g_bias));
        cudaDataType_t bt = out;
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, in, g.ta == CUBLAS_OP_N ? g.m : g.k, g.ta == CUBLAS_OP_N ? g.k : g.m, lda));
    CB(cublasLtMatrixLayoutCreate(&lb, in, g.tb == CUBLAS_OP_N ? g.k : g.n, g.tb == CUBLAS_OP_N ? g.n : g.k, ldb));
    CB(cublasLtMatrixLayoutCreate(&lc, out, g.m, g.n, ldc));
    if (g.batch > 1)
    {
        for (auto* l : {&la, &lb, &lc})
            CB(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &g.batch, sizeof g.batch));
        CB(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sA, sizeof sA));
        CB(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sB, sizeof sB));
        CB(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sC, sizeof sC));
    }
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g_wsBytes, sizeof g_wsBytes));
    cublasLtMatmulHeuristicResult_t res[1];
    int got = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, res, &got);
    char info[512] = "\"lt_algo_id\":-1";
    if (hs == CUBLAS_STATUS_SUCCESS && got > 0)
        LtInfo(res[0].algo, info, sizeof info);

    double us;
    const char* path;
    if (useLt)
    {
        if (hs != CUBLAS_STATUS_SUCCESS || got == 0)
        {
            printf("{\"kind\":\"note\",\"text\":\"no cuBLASLt algo for %s %s %dx%dx%d\"}\n", g.tag.c_str(), g.dtype, g.m, g.n, g.k);
            return;
        }
        path = "cublasLtMatmul";
        us = TimeDevice(s, [&] {
            cublasLtMatmul(lt, op, &one, g_bufA, la, g_bufB, lb, &zero, g_bufC, lc, g_bufC, lc,
                           &res[0].algo, g_ws, g_wsBytes, s);
        });
    }
    else if (g.batch > 1)
    {
        path = "cublasGemmStridedBatchedEx";
        us = TimeDevice(s, [&] {
            cublasGemmStridedBatchedEx(hb, g.ta, g.tb, g.m, g.n, g.k, &one, g_bufA, in, lda, sA,
                                       g_bufB, in, ldb, sB, &zero, g_bufC, out, ldc, sC, g.batch,
                                       ct, CUBLAS_GEMM_DEFAULT);
        });
    }
    else
    {
        path = "cublasGemmEx";
        us = TimeDevice(s, [&] {
            cublasGemmEx(hb, g.ta, g.tb, g.m, g.n, g.k, &one, g_bufA, in, lda, g_bufB, in, ldb,
                         &zero, g_bufC, out, ldc, ct, CUBLAS_GEMM_DEFAULT);
        });
    }
    CK(cudaGetLastError());
    double flops = 2.0 * g.m * g.n * double(g.k) * g.batch;
    printf("{\"kind\":\"gemm\",\"tag\":\"%s\",\"dtype\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"batch\":%d,"
           "\"transa\":\"%s\",\"transb\":\"%s\",\"epilogue\":\"%s\",\"path\":\"%s\",\"us\":%.3f,"
           "\"tflops\":%.2f,%s}\n",
           g.tag.c_str(), g.dtype, g.m, g.n, g.k, g.batch, g.ta == CUBLAS_OP_N ? "N" : "T",
           g.tb == CUBLAS_OP_N ? "N" : "T", g.epilogue, path, us, flops / us / 1e6, info);
    fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
}

static void Gemms()
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    size_t bytes = size_t(5) << 30; // 5 GiB each for A, B, C
    CK(cudaMalloc(&g_bufA, bytes));
    CK(cudaMalloc(&g_bufB, bytes));
    CK(cudaMalloc(&g_bufC, bytes));
    CK(cudaMalloc(&g_bias, 1 << 20));
    CK(cudaMalloc(&g_ws, g_wsBytes));
    FillKernel<<<1024, 256, 0, s>>>((uint32_t*)g_bufA, bytes / 4, 1);
    FillKernel<<<1024, 256, 0, s>>>((uint32_t*)g_bufB, bytes / 4, 2);
    FillKernel<<<1024, 256, 0, s>>>((uint32_t*)g_bias, (1 << 20) / 4, 3);
    CK(cudaStreamSynchronize(s));
    cublasHandle_t hb;
    CB(cublasCreate(&hb));
    CB(cublasSetStream(hb, s));
    CB(cublasSetWorkspace(hb, g_ws, g_wsBytes));
    cublasLtHandle_t lt;
    CB(cublasLtCreate(&lt));

    const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    std::vector<Gemm> list;
    for (int n : {128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384})
        list.push_back({"square", "bf16", n, n, n, 1, T, N, ""});
    for (int n : {1152, 1280, 1408, 1664, 1920, 2176, 2304, 2560, 2816, 3328, 4224, 4352, 5120})
        list.push_back({"waves-k4096", "bf16", n, n, 4096, 1, T, N, ""});
    for (int n : {1024, 4096, 8192})
        list.push_back({"square-NN", "bf16", n, n, n, 1, N, N, ""});
    for (int n : {1024, 4096, 8192, 16384})
        list.push_back({"square", "fp16", n, n, n, 1, T, N, ""});
    for (int n : {256, 1024, 2048, 4096, 8192})
        list.push_back({"square", "fp32", n, n, n, 1, N, N, ""});
    for (int n : {1024, 4096, 8192})
        list.push_back({"square", "tf32", n, n, n, 1, N, N, ""});
    for (int n : {1024, 2048, 4096, 8192, 16384})
        list.push_back({"square", "fp8", n, n, n, 1, T, N, ""});
    // A linear layer y[T,out] = x[T,in] W[out,in]^T as PyTorch calls cuBLAS (column-major):
    // forward (T,N, m=out, n=T, k=in), dgrad (N,N, m=in, n=T, k=out), wgrad (N,T, m=in, n=out, k=T).
    struct Lin
    {
        const char* tag;
        int in, out;
    };
    std::vector<Lin> lins = {
        {"llama3-8b.qkv", 4096, 6144},         {"llama3-8b.o", 4096, 4096},
        {"llama3-8b.gate_up", 4096, 28672},    {"llama3-8b.down", 14336, 4096},
        {"llama3-8b.lm_head", 4096, 128256},   {"llama3-70b-tp8.qkv", 8192, 1280},
        {"llama3-70b-tp8.o", 1024, 8192},      {"llama3-70b-tp8.gate_up", 8192, 7168},
        {"llama3-70b-tp8.down", 3584, 8192},   {"gpt3-175b-tp4.qkv", 12288, 9216},
        {"gpt3-175b-tp4.proj", 3072, 12288},   {"gpt3-175b-tp4.fc1", 12288, 12288},
        {"gpt3-175b-tp4.fc2", 12288, 12288},   {"tiny.qkv", 256, 768},
        {"tiny.mlp", 256, 1024},
    };
    for (int tokens : {2048, 8192})
        for (auto& l : lins)
        {
            std::string t = l.tag;
            list.push_back({t + ".fwd", "bf16", l.out, tokens, l.in, 1, T, N, ""});
            list.push_back({t + ".dgrad", "bf16", l.in, tokens, l.out, 1, N, N, ""});
            list.push_back({t + ".wgrad", "bf16", l.in, l.out, tokens, 1, N, T, ""});
        }
    for (auto& l : {lins[0], lins[2], lins[3]})
        list.push_back({std::string(l.tag) + ".fwd", "fp8", l.out, 8192, l.in, 1, T, N, ""});
    // Small M*N with large K (split-K / stream-K), skinny and GEMV-like shapes.
    int skinny[][3] = {{128, 128, 8192}, {256, 256, 16384}, {128, 128, 65536}, {512, 512, 32768},
                       {64, 4096, 4096}, {16, 4096, 4096},  {1, 4096, 4096},    {4096, 1, 4096},
                       {4096, 4096, 64}, {8192, 8192, 128}, {4096, 128, 4096},  {128, 4096, 4096},
                       {4096, 4096, 256}, {1024, 1024, 1024}, {256, 256, 256},  {64, 64, 64},
                       {32, 32, 32}};
    for (auto& sh : skinny)
        list.push_back({"skinny", "bf16", sh[0], sh[1], sh[2], 1, T, N, ""});
    int skinny32[][3] = {{4096, 64, 4096}, {64, 64, 65536}, {4096, 4096, 64}, {64, 4096, 4096},
                         {1, 4096, 4096},  {128, 128, 8192}, {512, 512, 512}, {32, 32, 32}};
    for (auto& sh : skinny32)
        list.push_back({"skinny", "fp32", sh[0], sh[1], sh[2], 1, N, N, ""});
    // Attention as batched GEMMs: Q K^T and P V, (batch*heads) x seq x seq x head_dim.
    for (int seq : {1024, 2048, 4096})
        for (int hd : {64, 128})
        {
            int bh = 16384 / seq * 32 / (hd / 64) / 2;
            list.push_back({"attn.qk", "bf16", seq, seq, hd, bh, T, N, ""});
            list.push_back({"attn.pv", "bf16", hd, seq, seq, bh, N, N, ""});
        }
    for (int b : {8, 64, 512})
        list.push_back({"batched", "bf16", 512, 512, 512, b, T, N, ""});
    list.push_back({"batched", "bf16", 128, 128, 128, 1024, T, N, ""});
    for (int n : {2048, 8192})
    {
        list.push_back({"lt-epilogue", "bf16", n, n, n, 1, T, N, "bias"});
        list.push_back({"lt-epilogue", "bf16", n, n, n, 1, T, N, "gelu_bias"});
    }
    list.push_back({"lt-epilogue", "bf16", 4096, 8192, 4096, 1, T, N, "bias"});

    for (auto& g : list)
    {
        size_t need = size_t(std::max({(long long)g.m * g.k, (long long)g.k * g.n, (long long)g.m * g.n})) *
                      g.batch * 4;
        if (need > bytes)
        {
            printf("{\"kind\":\"note\",\"text\":\"skip %s %dx%dx%d: too big\"}\n", g.tag.c_str(), g.m, g.n, g.k);
            continue;
        }
        RunGemm(hb, lt, s, g);
    }
    cublasDestroy(hb);
    cublasLtDestroy(lt);
    CK(cudaFree(g_bufA));
    CK(cudaFree(g_bufB));
    CK(cudaFree(g_bufC));
    CK(cudaFree(g_bias));
    CK(cudaFree(g_ws));
    CK(cudaStreamDestroy(s));
}

// ---------------------------------------------------------------- memory-bound

static void Memory()
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    size_t maxBytes = size_t(4) << 30;
    char *a, *b, *c, *h, *hp;
    float* sum;
    CK(cudaMalloc(&a, maxBytes));
    CK(cudaMalloc(&b, maxBytes));
    CK(cudaMalloc(&c, maxBytes));
    CK(cudaMalloc(&sum, 4));
    size_t hostBytes = size_t(1) << 30;
    CK(cudaMallocHost(&h, hostBytes));
    hp = (char*)malloc(hostBytes);
    memset(hp, 1, hostBytes);
    FillKernel<<<1024, 256, 0, s>>>((uint32_t*)a, maxBytes / 4, 1);
    CK(cudaStreamSynchronize(s));
    auto emit = [](const char* what, size_t bytes, size_t moved, double us) {
        printf("{\"kind\":\"mem\",\"what\":\"%s\",\"bytes\":%zu,\"bytes_moved\":%zu,\"us\":%.3f,"
               "\"gbps\":%.1f}\n",
               what, bytes, moved, us, moved / us / 1e3);
        fflush(stdout);
    };
    for (size_t bytes = 4096; bytes <= maxBytes; bytes *= 4)
    {
        size_t n4 = bytes / 16;
        // The launch geometry PyTorch's elementwise kernels use: enough blocks to fill the GPU
        // several times over, capped; grid-stride beyond that.
        int block = 256;
        int grid = int(std::min<size_t>((n4 + block - 1) / block, size_t(g_sms) * 32));
        grid = std::max(grid, 1);
        emit("copy-kernel", bytes, 2 * bytes, TimeDevice(s, [&] {
                 CopyKernel<<<grid, block, 0, s>>>((const float4*)a, (float4*)b, n4);
             }));
        emit("add-kernel", bytes, 3 * bytes, TimeDevice(s, [&] {
                 AddKernel<<<grid, block, 0, s>>>((const float4*)a, (const float4*)b, (float4*)c, n4);
             }));
        emit("scale-inplace-kernel", bytes, 2 * bytes, TimeDevice(s, [&] {
                 ScaleKernel<<<grid, block, 0, s>>>((float4*)b, n4);
             }));
        emit("sum-kernel", bytes, bytes, TimeDevice(s, [&] {
                 SumKernel<<<grid, block, 0, s>>>((const float4*)a, n4, sum);
             }));
        emit("cudaMemcpyAsync-D2D", bytes, 2 * bytes, TimeDevice(s, [&] {
                 cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
             }));
        emit("cudaMemsetAsync", bytes, bytes, TimeDevice(s, [&] { cudaMemsetAsync(b, 0, bytes, s); }));
        if (bytes <= hostBytes)
        {
            emit("cudaMemcpyAsync-H2D-pinned", bytes, bytes, TimeDevice(s, [&] {
                     cudaMemcpyAsync(a, h, bytes, cudaMemcpyHostToDevice, s);
                 }));
            emit("cudaMemcpyAsync-D2H-pinned", bytes, bytes, TimeDevice(s, [&] {
                     cudaMemcpyAsync(h, a, bytes, cudaMemcpyDeviceToHost, s);
                 }));
            // Pageable copies are staged by the driver; wall-clock of the synchronous call.
            std::vector<double> w;
            for (int i = 0; i < 5; ++i)
            {
                double t0 = NowUs();
                CK(cudaMemcpy(a, hp, bytes, cudaMemcpyHostToDevice));
                w.push_back(NowUs() - t0);
            }
            emit("cudaMemcpy-H2D-pageable(wall)", bytes, bytes, Median(w));
            w.clear();
            for (int i = 0; i < 5; ++i)
            {
                double t0 = NowUs();
                CK(cudaMemcpy(hp, a, bytes, cudaMemcpyDeviceToHost));
                w.push_back(NowUs() - t0);
            }
            emit("cudaMemcpy-D2H-pageable(wall)", bytes, bytes, Median(w));
        }
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaFree(sum));
    CK(cudaFreeHost(h));
    free(hp);
    CK(cudaStreamDestroy(s));
}

int main(int argc, char** argv)
{
    std::string what = argc > 1 ? argv[1] : "all";
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    g_sms = p.multiProcessorCount;
    int drv = 0, rt = 0, cublasVer = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cublasVer = int(cublasLtGetVersion());
    printf("{\"kind\":\"device\",\"name\":\"%s\",\"sms\":%d,\"l2_bytes\":%d,\"cc\":\"%d.%d\","
           "\"mem_bytes\":%zu,\"driver_api\":%d,\"runtime\":%d,\"cublaslt\":%d}\n",
           p.name, p.multiProcessorCount, p.l2CacheSize, p.major, p.minor, p.totalGlobalMem, drv,
           rt, cublasVer);
    fflush(stdout);
    if (what == "all" || what == "host")
        HostCosts();
    if (what == "all" || what == "gemm")
        Gemms();
    if (what == "all" || what == "mem")
        Memory();
    return 0;
}
