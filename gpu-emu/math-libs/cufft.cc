// libcufft.so.12: plan handles (create, destroy, stream, work area), version; making or executing
// a plan returns CUFFT_NOT_SUPPORTED. A cufftHandle is an integer, numbered from 1.
#include "math-libs-common.h"

#include <cufft.h>

#include <atomic>
#include <mutex>
#include <set>

using namespace eidolon::gpu;

namespace
{
std::mutex g_mutex;
std::set<cufftHandle> g_plans;
std::atomic<cufftHandle> g_nextPlan{1};
using Reply = Replies<cufftResult, CUFFT_SUCCESS, CUFFT_INVALID_VALUE>;

bool
IsPlan(cufftHandle plan)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_plans.count(plan) != 0;
}
} // namespace

EIDOLON_EXPORT int
eidolonCufftUnsupported(const char* api)
{
    return Reply::Unsupported(api, CUFFT_NOT_SUPPORTED, "CUFFT_NOT_SUPPORTED");
}

EIDOLON_EXPORT cufftResult
cufftCreate(cufftHandle* plan)
{
    if (!plan)
    {
        return CUFFT_INVALID_VALUE;
    }
    *plan = g_nextPlan++;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_plans.insert(*plan);
    return CUFFT_SUCCESS;
}

EIDOLON_EXPORT cufftResult
cufftDestroy(cufftHandle plan)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_plans.erase(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

EIDOLON_EXPORT cufftResult
cufftSetStream(cufftHandle plan, cudaStream_t)
{
    return IsPlan(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

EIDOLON_EXPORT cufftResult
cufftSetAutoAllocation(cufftHandle plan, int)
{
    return IsPlan(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

EIDOLON_EXPORT cufftResult
cufftSetWorkArea(cufftHandle plan, void*)
{
    return IsPlan(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

EIDOLON_EXPORT cufftResult
cufftGetVersion(int* version)
{
    return Reply::Store(version, CUFFT_VERSION);
}

EIDOLON_EXPORT cufftResult
cufftGetProperty(libraryPropertyType type, int* value)
{
    return Reply::Property(type, value, CUFFT_VER_MAJOR, CUFFT_VER_MINOR, CUFFT_VER_PATCH);
}
