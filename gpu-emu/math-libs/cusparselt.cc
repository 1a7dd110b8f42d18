// libcusparseLt.so.0 (structured-sparsity matmuls; PyTorch links it): init, destroy, version and
// error strings; every other call returns CUSPARSE_STATUS_NOT_SUPPORTED. cuSPARSELt's header is
// not part of the CUDA toolkit, so the few types used here are spelled out: its handle is an
// opaque 1024-byte struct the caller owns, and its status is cuSPARSE's.
#include "math-libs-common.h"

#include <cusparse.h>

#include <cstring>

using namespace eidolon::gpu;

namespace
{
// cuSPARSELt 0.8.1, the version in the PyTorch 2.15 wheels (nvidia-cusparselt-cu13).
constexpr int kMajor = 0, kMinor = 8, kPatch = 1;
constexpr size_t kHandleBytes = 1024;
constexpr char kHandleTag[] = "eidolon-cusparseLt";
using Reply = Replies<cusparseStatus_t, CUSPARSE_STATUS_SUCCESS, CUSPARSE_STATUS_INVALID_VALUE>;
} // namespace

EIDOLON_EXPORT int
eidolonCusparseLtUnsupported(const char* api)
{
    return Reply::Unsupported(api, CUSPARSE_STATUS_NOT_SUPPORTED, "CUSPARSE_STATUS_NOT_SUPPORTED");
}

EIDOLON_EXPORT cusparseStatus_t
cusparseLtInit(void* handle)
{
    if (!handle)
    {
        return CUSPARSE_STATUS_INVALID_VALUE;
    }
    std::memset(handle, 0, kHandleBytes);
    std::memcpy(handle, kHandleTag, sizeof(kHandleTag));
    return CUSPARSE_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseLtDestroy(const void* handle)
{
    if (!handle || std::memcmp(handle, kHandleTag, sizeof(kHandleTag)) != 0)
    {
        return CUSPARSE_STATUS_NOT_INITIALIZED;
    }
    return CUSPARSE_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseLtGetVersion(const void*, int* version)
{
    return Reply::Store(version, kMajor * 1000 + kMinor * 100 + kPatch);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseLtGetProperty(libraryPropertyType type, int* value)
{
    return Reply::Property(type, value, kMajor, kMinor, kPatch);
}

EIDOLON_EXPORT const char*
cusparseLtGetErrorName(cusparseStatus_t status)
{
    return status == CUSPARSE_STATUS_SUCCESS         ? "CUSPARSE_STATUS_SUCCESS"
           : status == CUSPARSE_STATUS_NOT_SUPPORTED ? "CUSPARSE_STATUS_NOT_SUPPORTED"
                                                     : "CUSPARSE_STATUS_ERROR";
}

EIDOLON_EXPORT const char*
cusparseLtGetErrorString(cusparseStatus_t status)
{
    return status == CUSPARSE_STATUS_NOT_SUPPORTED
               ? "the operation is not supported by eidolon (a simulated GPU computes nothing)"
               : cusparseLtGetErrorName(status);
}
