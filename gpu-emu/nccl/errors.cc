// Errors and version: ncclGetVersion, ncclGetErrorString, ncclGetLastError, the warnings every
// failing call prints once, and the handler of the generated stubs.
#include "nccl-common.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace eidolon::gpu::nccl
{
namespace
{

// NCCL keeps one process-wide last-error text (not per thread, not per communicator).
std::mutex g_lastErrorMutex;
char g_lastError[1024] = "";

} // namespace

const char*
ResultName(ncclResult_t code)
{
    switch (code)
    {
    case ncclSuccess:
        return "ncclSuccess";
    case ncclUnhandledCudaError:
        return "ncclUnhandledCudaError";
    case ncclSystemError:
        return "ncclSystemError";
    case ncclInternalError:
        return "ncclInternalError";
    case ncclInvalidArgument:
        return "ncclInvalidArgument";
    case ncclInvalidUsage:
        return "ncclInvalidUsage";
    case ncclRemoteError:
        return "ncclRemoteError";
    case ncclInProgress:
        return "ncclInProgress";
    default:
        return "unknown result code";
    }
}

ncclResult_t
Fail(ncclResult_t code, const std::string& key, const std::string& message)
{
    static std::set<std::string>* warned = new std::set<std::string>(); // never destroyed
    std::lock_guard<std::mutex> lock(g_lastErrorMutex);
    std::snprintf(g_lastError, sizeof(g_lastError), "%s", message.c_str());
    if (warned->insert(key).second)
    {
        Warn("nccl: " + message + " (returns " + ResultName(code) + ")");
    }
    return code;
}

void
WarnOnce(const std::string& key, const std::string& message)
{
    static std::set<std::string>* warned = new std::set<std::string>(); // never destroyed
    std::lock_guard<std::mutex> lock(g_lastErrorMutex);
    if (warned->insert(key).second)
    {
        Warn(message);
    }
}

} // namespace eidolon::gpu::nccl

using namespace eidolon::gpu::nccl;

// The emulated NCCL version (version.cc): 2.30.7 (23007) unless EIDOLON_NCCL_VERSION says another.
NCCL_API(ncclResult_t, ncclGetVersion, int* version)
{
    if (!version)
    {
        return ncclInvalidArgument; // NCCL returns this without a message
    }
    *version = EmulatedVersionCode();
    return ncclSuccess;
}

// NCCL's own texts, word for word.
NCCL_API(const char*, ncclGetErrorString, ncclResult_t result)
{
    switch (Raw(result))
    {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

// The text of the most recent failure in the process ("" if none); `comm` is not used, as in NCCL.
NCCL_API(const char*, ncclGetLastError, ncclComm_t comm)
{
    (void)comm;
    return g_lastError;
}

// Deprecated in NCCL and without effect here (eidolon has no NCCL_DEBUG state to re-read).
NCCL_API(void, ncclResetDebugInit)
{
}

// Called by every generated stub of an entry point eidolon does not implement.
extern "C" __attribute__((visibility("default"))) int
eidolonNcclUnsupported(const char* api)
{
    eidolon::gpu::WarnUnsupportedOnce(api, "ncclInvalidUsage");
    std::lock_guard<std::mutex> lock(g_lastErrorMutex);
    std::snprintf(g_lastError, sizeof(g_lastError), "%s is not supported by eidolon", api);
    return ncclInvalidUsage;
}
