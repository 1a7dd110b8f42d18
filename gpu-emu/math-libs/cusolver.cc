// libcusolver.so.12: dense and sparse handles, parameter objects, version; every factorisation
// and solve returns CUSOLVER_STATUS_NOT_SUPPORTED.
#include "math-libs-common.h"

#include <cusolverDn.h>
#include <cusolverSp.h>

using namespace eidolon::gpu;

struct cusolverDnContext
{
    cudaStream_t stream = nullptr;
};

struct cusolverSpContext
{
    cudaStream_t stream = nullptr;
};

struct cusolverDnParams
{
    int unused = 0;
};

namespace
{
using Reply = Replies<cusolverStatus_t, CUSOLVER_STATUS_SUCCESS, CUSOLVER_STATUS_INVALID_VALUE>;

template<typename Handle>
cusolverStatus_t
DestroyHandle(Handle* handle)
{
    if (!handle)
    {
        return CUSOLVER_STATUS_NOT_INITIALIZED;
    }
    delete handle;
    return CUSOLVER_STATUS_SUCCESS;
}
} // namespace

EIDOLON_EXPORT int
eidolonCusolverUnsupported(const char* api)
{
    return Reply::Unsupported(api, CUSOLVER_STATUS_NOT_SUPPORTED, "CUSOLVER_STATUS_NOT_SUPPORTED");
}

EIDOLON_EXPORT cusolverStatus_t
cusolverGetVersion(int* version)
{
    return Reply::Store(version, CUSOLVER_VERSION);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverGetProperty(libraryPropertyType type, int* value)
{
    return Reply::Property(type, value, CUSOLVER_VER_MAJOR, CUSOLVER_VER_MINOR, CUSOLVER_VER_PATCH);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnCreate(cusolverDnHandle_t* handle)
{
    return Reply::Create(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnDestroy(cusolverDnHandle_t handle)
{
    return DestroyHandle(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t stream)
{
    return Reply::SetField(handle, &cusolverDnContext::stream, stream,
                           CUSOLVER_STATUS_NOT_INITIALIZED);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnGetStream(cusolverDnHandle_t handle, cudaStream_t* stream)
{
    return handle ? Reply::Store(stream, handle->stream) : CUSOLVER_STATUS_NOT_INITIALIZED;
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnCreateParams(cusolverDnParams_t* params)
{
    return Reply::Create(params);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnDestroyParams(cusolverDnParams_t params)
{
    return DestroyHandle(params);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverSpCreate(cusolverSpHandle_t* handle)
{
    return Reply::Create(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverSpDestroy(cusolverSpHandle_t handle)
{
    return DestroyHandle(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverSpSetStream(cusolverSpHandle_t handle, cudaStream_t stream)
{
    return Reply::SetField(handle, &cusolverSpContext::stream, stream,
                           CUSOLVER_STATUS_NOT_INITIALIZED);
}
