// cuDNN versions, properties, error strings and the sub-library version checks. The version is
// the one of the headers eidolon is built against (the wheel's cuDNN, 9.26 for torch 2.15), so
// that PyTorch's compile-time/run-time check passes.
#include "cudnn-common.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>

using namespace eidolon::gpu;
using namespace eidolon::gpu::dnn;

namespace
{
// The last error message a call left (cudnnGetLastErrorString), per thread as in cuDNN. A plain
// array: a thread_local with a destructor registers it through the dynamic loader's lock on first
// use, which deadlocks against a dlopen in progress (issue 15).
constexpr size_t kLastErrorBytes = 512;
thread_local char t_lastError[kLastErrorBytes];

void
SetLastError(const std::string& message)
{
    const size_t n = std::min(kLastErrorBytes - 1, message.size());
    std::memcpy(t_lastError, message.data(), n);
    t_lastError[n] = '\0';
}
} // namespace

namespace eidolon::gpu::dnn
{

const char*
StatusName(cudnnStatus_t status)
{
    switch (status)
    {
    case CUDNN_STATUS_SUCCESS:
        return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
        return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH:
        return "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM:
        return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER:
        return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED:
        return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND:
        return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT:
        return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH:
        return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE:
        return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE:
        return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED:
        return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN:
        return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
        return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE:
        return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT:
        return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_INTERNAL_ERROR:
        return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED:
        return "CUDNN_STATUS_EXECUTION_FAILED";
    default:
        break;
    }
    switch (CUDNN_STATUS_CATEGORY(status))
    {
    case CUDNN_STATUS_BAD_PARAM:
        return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED:
        return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR:
        return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED:
        return "CUDNN_STATUS_EXECUTION_FAILED";
    default:
        return "CUDNN_STATUS_UNKNOWN";
    }
}

cudnnStatus_t
Unsupported(const char* api, cudnnStatus_t status, const std::string& why)
{
    static std::mutex mutex;
    static auto* warned = new std::set<std::string>(); // never destroyed: atexit paths still warn
    std::string message = std::string(api) + " is not supported by eidolon" +
                          (why.empty() ? "" : ": " + why) + " (returns " + StatusName(status) + ")";
    SetLastError(message);
    std::lock_guard<std::mutex> lock(mutex);
    if (warned->insert(message).second)
    {
        Warn(message);
    }
    return status;
}

} // namespace eidolon::gpu::dnn

// Every cuDNN entry point eidolon does not implement (the generated stubs).
EIDOLON_EXPORT int
eidolonCudnnUnsupported(const char* api)
{
    return Unsupported(api, CUDNN_STATUS_NOT_SUPPORTED);
}

EIDOLON_EXPORT size_t
cudnnGetVersion()
{
    return CUDNN_VERSION;
}

// The newest compute capability this cuDNN knows (x100: 1210 for sm_121).
EIDOLON_EXPORT size_t
cudnnGetMaxDeviceVersion()
{
    return CUDNN_MAX_DEVICE_VERSION;
}

// The CUDA runtime this cuDNN was built for.
EIDOLON_EXPORT size_t
cudnnGetCudartVersion()
{
    return CUDART_VERSION;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnGetProperty(libraryPropertyType type, int* value)
{
    if (!value)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    switch (type)
    {
    case MAJOR_VERSION:
        *value = CUDNN_MAJOR;
        return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
        *value = CUDNN_MINOR;
        return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
        *value = CUDNN_PATCHLEVEL;
        return CUDNN_STATUS_SUCCESS;
    default:
        return CUDNN_STATUS_BAD_PARAM;
    }
}

EIDOLON_EXPORT const char*
cudnnGetErrorString(cudnnStatus_t status)
{
    return StatusName(status);
}

// Copies the calling thread's last error message (empty if none) and clears it.
EIDOLON_EXPORT void
cudnnGetLastErrorString(char* message, size_t maxSize)
{
    if (!message || maxSize == 0)
    {
        return;
    }
    const size_t n = std::min(maxSize - 1, std::strlen(t_lastError));
    std::memcpy(message, t_lastError, n);
    message[n] = '\0';
    t_lastError[0] = '\0';
}

// The sub-libraries are all this one library: their version checks always pass.
EIDOLON_EXPORT cudnnStatus_t
cudnnGraphVersionCheck()
{
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnOpsVersionCheck()
{
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnCnnVersionCheck()
{
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnAdvVersionCheck()
{
    return CUDNN_STATUS_SUCCESS;
}
