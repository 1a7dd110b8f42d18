// Minimal checks for the nvcc-compiled API tests (they run under ctest with our libcudart).
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <ctime>

static int g_failures = 0;

#define CHECK(cond)                                                                                \
    do                                                                                             \
    {                                                                                              \
        if (!(cond))                                                                               \
        {                                                                                          \
            std::printf("%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                   \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

#define CHECK_CUDA(call) CHECK_EQ_ERR((call), cudaSuccess)

#define CHECK_EQ_ERR(call, expected)                                                               \
    do                                                                                             \
    {                                                                                              \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != (expected))                                                                      \
        {                                                                                          \
            std::printf("%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call,         \
                        cudaGetErrorName(e_), cudaGetErrorName(expected));                         \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

// |actual - expected| <= tolerance
#define CHECK_NEAR(actual, expected, tolerance)                                                    \
    do                                                                                             \
    {                                                                                              \
        double a_ = (actual), x_ = (expected);                                                     \
        if (!(std::fabs(a_ - x_) <= (tolerance)))                                                  \
        {                                                                                          \
            std::printf("%s:%d: %s = %.9g, expected %.9g (+-%g)\n", __FILE__, __LINE__, #actual,   \
                        a_, x_, double(tolerance));                                                \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

inline int
Finish(const char* name)
{
    std::printf("%s: %s (%d failures)\n", name, g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
}

// Host clock as the program sees it (virtual on this GPU-driving thread), in microseconds.
inline double
NowUs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// TEST-GPU (test/gpu-emu/gpus/TEST-GPU.yaml), numbers copied by hand from the spec file:
constexpr double kHbmBytesPerUs = 1e12 / 1e6;   // hbm_bandwidth 1TB/s
constexpr double kFp32FlopsPerUs = 10e12 / 1e6; // dense fp32 10 TFLOPS
constexpr double kLaunchOverheadUs = 2.0;
constexpr double kLaunchLatencyUs = 3.0;
constexpr double kMinKernelUs = 1.0; // EIDOLON_MIN_KERNEL_US default
constexpr int kSmCount = 100;

// Roofline price (gpu-emu/README.md) of a kernel with no family keyword in its name:
// 16 bytes and 16 FLOPs per thread.
inline double
GenericKernelUs(double threads)
{
    return std::fmax(std::fmax(threads * 16 / kHbmBytesPerUs, threads * 16 / kFp32FlopsPerUs),
                     kMinKernelUs);
}
