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
template<typename Handle>
cusolverStatus_t
CreateHandle(Handle** handle)
{
    if (!handle)
    {
        return CUSOLVER_STATUS_INVALID_VALUE;
    }
    *handle = new Handle();
    return CUSOLVER_STATUS_SUCCESS;
}

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
    WarnUnsupportedOnce(api, "CUSOLVER_STATUS_NOT_SUPPORTED");
    return CUSOLVER_STATUS_NOT_SUPPORTED;
}

EIDOLON_EXPORT cusolverStatus_t
cusolverGetVersion(int* version)
{
    if (!version)
    {
        return CUSOLVER_STATUS_INVALID_VALUE;
    }
    *version = CUSOLVER_VERSION;
    return CUSOLVER_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusolverStatus_t
cusolverGetProperty(libraryPropertyType type, int* value)
{
    if (!value)
    {
        return CUSOLVER_STATUS_INVALID_VALUE;
    }
    *value = type == MAJOR_VERSION   ? CUSOLVER_VER_MAJOR
             : type == MINOR_VERSION ? CUSOLVER_VER_MINOR
                                     : CUSOLVER_VER_PATCH;
    return CUSOLVER_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnCreate(cusolverDnHandle_t* handle)
{
    return CreateHandle(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnDestroy(cusolverDnHandle_t handle)
{
    return DestroyHandle(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t stream)
{
    if (!handle)
    {
        return CUSOLVER_STATUS_NOT_INITIALIZED;
    }
    handle->stream = stream;
    return CUSOLVER_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnGetStream(cusolverDnHandle_t handle, cudaStream_t* stream)
{
    if (!handle || !stream)
    {
        return handle ? CUSOLVER_STATUS_INVALID_VALUE : CUSOLVER_STATUS_NOT_INITIALIZED;
    }
    *stream = handle->stream;
    return CUSOLVER_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnCreateParams(cusolverDnParams_t* params)
{
    return CreateHandle(params);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverDnDestroyParams(cusolverDnParams_t params)
{
    return DestroyHandle(params);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverSpCreate(cusolverSpHandle_t* handle)
{
    return CreateHandle(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverSpDestroy(cusolverSpHandle_t handle)
{
    return DestroyHandle(handle);
}

EIDOLON_EXPORT cusolverStatus_t
cusolverSpSetStream(cusolverSpHandle_t handle, cudaStream_t stream)
{
    if (!handle)
    {
        return CUSOLVER_STATUS_NOT_INITIALIZED;
    }
    handle->stream = stream;
    return CUSOLVER_STATUS_SUCCESS;
}
