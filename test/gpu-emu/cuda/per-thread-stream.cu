// Built with --default-stream per-thread: launches and copies go through the _ptsz/_ptds entry
// points and each thread's default stream is its own (they overlap), ordered with the legacy one.
#include "check.h"

#include <thread>

__global__ void
spin(float*)
{
}

int
main()
{
    // Clocks turn virtual at the first CUDA call that needs the GPUs (not at kernel registration,
    // nor at counting them).
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    CHECK_CUDA(cudaSetDevice(0));
    double h = NowUs();
    spin<<<1000, 1000>>>(nullptr); // 16 us on the main thread's default stream
    std::thread(
        []
        {
            spin<<<1000, 1000>>>(nullptr); // 16 us on this thread's default stream
            CHECK_CUDA(cudaGetLastError());
        })
        .join();
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - h, 2 * kLaunchOverheadUs + kLaunchLatencyUs + 16.0, 1e-3);

    // cudaStreamLegacy still orders with the per-thread stream.
    h = NowUs();
    spin<<<1000, 1000>>>(nullptr);
    spin<<<1000, 1000, 0, cudaStreamLegacy>>>(nullptr);
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + 32.0, 1e-3);
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1 << 20));
    CHECK_CUDA(cudaMemsetAsync(p, 0, 1 << 20));
    CHECK_CUDA(cudaStreamSynchronize(0));
    CHECK_CUDA(cudaFree(p));
    return Finish("per-thread-stream");
}
