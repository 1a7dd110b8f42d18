// A shared library with a kernel, as libtorch_cuda.so is: loading it registers its fat binary
// (__cudaRegisterFatBinary/__cudaRegisterFunction from constructors, inside dlopen() with the
// dynamic loader's lock held). Its own constructor then starts a thread that reads the clock and,
// when FATBIN_LIBRARY_CALLS_CUDA is set (the loading process has joined the simulator), makes that
// thread's first CUDA calls, and waits for it, still inside dlopen(): if any of that needed the
// loader's lock (a thread_local with a destructor) the process would hang (the import deadlock of
// issue 15). Joining the simulator itself may need the loader (glibc's NSS dlopens its modules), so
// a process must not make its first CUDA call from a thread a dlopen() waits for; registrations
// never join. Built twice (dlopen-fatbin-a.so, dlopen-fatbin-b.so): loaded before and after
// joining.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <thread>
#include <time.h>

__global__ void
Scale(float* x, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        x[i] *= factor;
    }
}

// Launches the library's kernel on `n` floats (the kernel is registered once the library is
// loaded).
extern "C" int
FatbinLibraryLaunch(float* x, int n)
{
    Scale<<<(n + 255) / 256, 256>>>(x, 2.0f, n);
    return int(cudaGetLastError());
}

namespace
{
int g_threadResult = -1; // the loading thread's CUDA result; -1 until it ran

struct CallsCudaFromAThreadWhileLoading
{
    CallsCudaFromAThreadWhileLoading()
    {
        bool callsCuda = std::getenv("FATBIN_LIBRARY_CALLS_CUDA") != nullptr;
        std::thread worker(
            [callsCuda]
            {
                timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts); // the thread's first clock read
                if (!callsCuda)
                {
                    g_threadResult = 0;
                    return;
                }
                float* x = nullptr;
                cudaError_t error = cudaMalloc(&x, 4096);
                if (error == cudaSuccess)
                {
                    error = cudaMemsetAsync(x, 0, 4096, nullptr); // the thread starts driving
                }
                if (error == cudaSuccess)
                {
                    error = cudaDeviceSynchronize();
                }
                clock_gettime(CLOCK_MONOTONIC, &ts); // and now as a driving thread
                if (x)
                {
                    cudaFree(x);
                }
                g_threadResult = int(error);
            });
        worker.join();
    }
} g_callsCudaWhileLoading;
} // namespace

// What the thread started while the library was loading got (0: cudaSuccess).
extern "C" int
FatbinLibraryThreadResult()
{
    return g_threadResult;
}
