// A kernel sequence's elapsed time is the sum of its prices plus one launch overhead; events are
// exact; a GPU-bound sequence is not slowed by the host; a host-bound one is.
#include "check.h"

#include <dlfcn.h>

__global__ void
spin(float* data)
{
    if (data)
        data[threadIdx.x] = 0;
}
__global__ void
vector_add_elementwise(const float* a, float* b)
{
    b[threadIdx.x] += a[threadIdx.x];
}

int
main()
{
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));

    // GPU-bound: each kernel is longer than the launch overhead of the next.
    const int grids[] = {1000, 2000, 500};
    double expectedUs = kLaunchOverheadUs; // the first kernel is issued one overhead after `start`
    CHECK_CUDA(cudaEventRecord(start));
    for (int grid : grids)
    {
        spin<<<grid, 1000>>>(nullptr);
        expectedUs += GenericKernelUs(double(grid) * 1000);
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(stop));
    float ms = -1;
    CHECK_EQ_ERR(cudaEventElapsedTime(&ms, start, stop), cudaErrorNotReady); // not yet complete
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_NEAR(ms, expectedUs / 1e3, 1e-6); // 16 + 32 + 8 + 2 = 58 us
    CHECK_NEAR(expectedUs, 58.0, 1e-9);
    // CUDA 12.8+ programs call the same thing under its _v2 name (headers map it there).
    // CUDA 13 neither declares nor exports it, so look it up in the loaded (eidolon) runtime.
    using ElapsedFn = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
    auto elapsedV2 = reinterpret_cast<ElapsedFn>(dlsym(RTLD_DEFAULT, "cudaEventElapsedTime_v2"));
    CHECK(elapsedV2 != nullptr);
    float msV2 = 0;
    CHECK_CUDA(elapsedV2(&msV2, start, stop));
    CHECK_NEAR(msV2, ms, 1e-9);

    // An elementwise kernel moves 12 bytes per thread: 4e6 threads -> 48 us.
    CHECK_CUDA(cudaEventRecord(start));
    vector_add_elementwise<<<4000, 1000>>>(nullptr, nullptr);
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_NEAR(ms, (kLaunchOverheadUs + 4e6 * 12 / kHbmBytesPerUs) / 1e3, 1e-6);

    // Host-bound: 10 tiny kernels (1 us floor) are issued one launch overhead apart, so `stop`
    // lands one overhead after the last issue plus its latency and price.
    CHECK_CUDA(cudaEventRecord(start));
    for (int i = 0; i < 10; ++i)
    {
        spin<<<1, 32>>>(nullptr);
    }
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    // start is issued at h+O and placed at h+O+L; kernel i (1..10) is issued at h+(i+1)*O and,
    // the stream being idle again (1 us < O), starts at issue + L; stop is issued at h+12*O and
    // placed at h+12*O+L: 11 overheads apart.
    CHECK_NEAR(ms, 11 * kLaunchOverheadUs / 1e3, 1e-6);

    // The host clock moves to the completion time on synchronization.
    double before = NowUs();
    spin<<<1000, 1000>>>(nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - before, kLaunchOverheadUs + kLaunchLatencyUs + 16.0, 1e-3);

    // Timing-disabled events cannot be timed; invalid launches report an error.
    cudaEvent_t untimed;
    CHECK_CUDA(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(untimed));
    CHECK_CUDA(cudaEventSynchronize(untimed));
    CHECK_EQ_ERR(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
    spin<<<1, 2048>>>(nullptr);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorInvalidConfiguration);
    CHECK_EQ_ERR(cudaGetLastError(), cudaSuccess);
    // Dynamic shared memory: a block opts in to at most the device's sharedMemPerBlockOptin
    // (the SM's shared memory less 1 KiB); more is refused at launch and by the attribute, and
    // the attribute reads back what was set.
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    const int optin = int(prop.sharedMemPerBlockOptin);
    CHECK(optin > 48 * 1024);
    spin<<<1, 32, size_t(optin) + 1>>>(nullptr);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ_ERR(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1),
                 cudaErrorInvalidValue);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorInvalidValue); // a failed call is the last error
    CHECK_CUDA(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    cudaFuncAttributes attributes{};
    CHECK_CUDA(cudaFuncGetAttributes(&attributes, spin));
    CHECK(attributes.maxDynamicSharedSizeBytes == optin);
    spin<<<1, 32, size_t(optin)>>>(nullptr);
    CHECK_CUDA(cudaGetLastError());
    int clusters = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, 0));
    CHECK(clusters == (prop.major >= 9 ? 1 : 0)); // thread-block clusters from Hopper
    return Finish("timing");
}
