// With a profile database (imported from data/kineto-test-gpu.json: spin(float*) at grid 1000,
// block 1000 measured at 100 us), that launch is priced by the database and any other geometry
// by the roofline. A second, hand-written database (data/profile-db-args.json) keys axpy on its
// parameter bytes, which gpu-emu reads from the program's cubin: float + pointer + pointer + int
// = 28 bytes (4, padding to 8, 8, 8, 4). The pricing report written at exit says which priced what.
#include "check.h"

#include <algorithm>

__global__ void
spin(float*)
{
}

__global__ void
axpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        y[i] = a * x[i] + y[i];
    }
}

int
main()
{
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    float ms = 0;
    cudaEventRecord(start);
    spin<<<1000, 1000>>>(nullptr); // measured: 100 us
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_NEAR(ms, (kLaunchOverheadUs + 100.0) / 1e3, 1e-6);
    cudaEventRecord(start);
    spin<<<500, 1000>>>(nullptr); // not in the database: roofline, 8 us
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_NEAR(ms, (kLaunchOverheadUs + GenericKernelUs(500e3)) / 1e3, 1e-6);

    // arg_bytes 28 matches: 42 us from the database.
    cudaEventRecord(start);
    axpy<<<100, 256>>>(2.0f, nullptr, nullptr, 0);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_NEAR(ms, (kLaunchOverheadUs + 42.0) / 1e3, 1e-6);
    // The entry for grid 200 says 99 argument bytes: no match, the roofline prices it (elementwise
    // family, 12 B per thread: 51200 threads = 0.6 us, so the 1 us floor).
    cudaEventRecord(start);
    axpy<<<200, 256>>>(2.0f, nullptr, nullptr, 0);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    // A 1 us kernel is shorter than the 2 us overhead of the next call: the stop event is issued
    // two overheads after the start event and the elapsed time is host-bound.
    CHECK_NEAR(ms, std::max(kLaunchOverheadUs + kMinKernelUs, 2 * kLaunchOverheadUs) / 1e3, 1e-6);
    return Finish("profiled");
}
