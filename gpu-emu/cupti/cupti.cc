// libcupti.so.13: CUPTI, the CUDA profiling interface PyTorch's profiler (Kineto) links. NVIDIA's
// library reaches into the driver through cuGetExportTable, which an emulated driver cannot
// offer, and crashed the process (torch.profiler with CUDA activities: a segfault as it started).
// Here the version and the result strings work and every other call returns
// CUPTI_ERROR_NOT_SUPPORTED, with one warning per process: Kineto then records the CPU side only.
#include "../library-replies.h"

#include <cupti.h>

#include <atomic>
#include <string>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

using namespace eidolon::gpu;

namespace
{
using Reply = Replies<CUptiResult, CUPTI_SUCCESS, CUPTI_ERROR_INVALID_PARAMETER>;
std::atomic<bool> g_warned{false};
} // namespace

// The generated stubs' handler: one warning for the whole library, naming the first call.
EIDOLON_EXPORT int
eidolonCuptiUnsupported(const char* api)
{
    if (!g_warned.exchange(true))
    {
        Warn(std::string(api) +
             ": CUPTI is not supported by eidolon (returns CUPTI_ERROR_NOT_SUPPORTED): profilers "
             "that use it (torch.profiler's CUDA activities) record the CPU side only; the run's "
             "trace.json has every GPU operation");
    }
    return CUPTI_ERROR_NOT_SUPPORTED;
}

// The CUPTI API version of the toolkit eidolon is built with.
EIDOLON_EXPORT CUptiResult
cuptiGetVersion(uint32_t* version)
{
    return Reply::Store(version, uint32_t(CUPTI_API_VERSION));
}

// The text of a result code, as NVIDIA's library words the ones eidolon returns.
EIDOLON_EXPORT CUptiResult
cuptiGetResultString(CUptiResult result, const char** text)
{
    const char* words = result == CUPTI_SUCCESS                   ? "CUPTI_SUCCESS"
                        : result == CUPTI_ERROR_INVALID_PARAMETER ? "CUPTI_ERROR_INVALID_PARAMETER"
                        : result == CUPTI_ERROR_NOT_SUPPORTED     ? "CUPTI_ERROR_NOT_SUPPORTED"
                                                                  : "CUPTI_ERROR_UNKNOWN";
    return Reply::Store(text, words);
}
