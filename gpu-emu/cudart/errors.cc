// Error API family: last error, error names and strings.
#include "runtime-common.h"

#include <cstdio>

namespace eidolon::gpu::rt
{
namespace
{
thread_local cudaError_t t_lastError = cudaSuccess;

struct ErrorText
{
    cudaError_t code;
    const char* name;
    const char* text;
};

const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled",
     "peer access has not been enabled"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation is not permitted in the current state"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText*
Find(cudaError_t error)
{
    for (const auto& entry : kErrors)
    {
        if (entry.code == error)
        {
            return &entry;
        }
    }
    return nullptr;
}

} // namespace

cudaError_t
Fail(cudaError_t error)
{
    t_lastError = error;
    return error;
}

cudaError_t
TakeLastError()
{
    cudaError_t error = t_lastError;
    t_lastError = cudaSuccess;
    return error;
}

cudaError_t
PeekLastError()
{
    return t_lastError;
}

cudaError_t
CheckReady(Emulator& emulator)
{
    return emulator.Ready() && emulator.DeviceCount() > 0 ? cudaSuccess : Fail(cudaErrorNoDevice);
}

cudaError_t
Unsupported(const char* api)
{
    WarnUnsupportedOnce(api, "cudaErrorNotSupported");
    return Fail(cudaErrorNotSupported);
}

} // namespace eidolon::gpu::rt

using namespace eidolon::gpu::rt;

// Returns and clears the calling thread's last error.
EIDOLON_EXPORT cudaError_t
cudaGetLastError()
{
    {
        eidolon::gpu::ApiCall call(eidolon::gpu::CallKind::Untimed); // PyTorch checks every launch
        if (!call.Emu().Clock().TakeNotReadyQuery()) // clearing a not-ready answer is the query's
        {
            call.Emu().Clock().Charge(eidolon::spec::HostCall::GetLastError);
        }
    }
    return TakeLastError();
}

// Returns the calling thread's last error without clearing it.
EIDOLON_EXPORT cudaError_t
cudaPeekAtLastError()
{
    {
        eidolon::gpu::ApiCall call(eidolon::gpu::CallKind::Untimed);
        if (!call.Emu().Clock().TakeNotReadyQuery())
        {
            call.Emu().Clock().Charge(eidolon::spec::HostCall::GetLastError);
        }
    }
    return PeekLastError();
}

// Description of an error code ("unrecognized error code" for unknown codes).
EIDOLON_EXPORT const char*
cudaGetErrorString(cudaError_t error)
{
    const ErrorText* entry = Find(error);
    return entry ? entry->text : "unrecognized error code";
}

// Symbolic name of an error code ("cudaErrorUnknown"-style; "unrecognized error code" otherwise).
EIDOLON_EXPORT const char*
cudaGetErrorName(cudaError_t error)
{
    const ErrorText* entry = Find(error);
    return entry ? entry->name : "unrecognized error code";
}

// Called by every generated stub of an API eidolon does not implement.
EIDOLON_EXPORT int
eidolonCudartUnsupported(const char* api)
{
    return static_cast<int>(Unsupported(api));
}
