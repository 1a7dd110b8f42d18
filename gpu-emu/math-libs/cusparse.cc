// libcusparse.so.12: handles, matrix descriptors, version and error strings; every sparse
// computation returns CUSPARSE_STATUS_NOT_SUPPORTED.
#include "math-libs-common.h"

#include <cusparse.h>

using namespace eidolon::gpu;

namespace
{
using Reply = Replies<cusparseStatus_t, CUSPARSE_STATUS_SUCCESS, CUSPARSE_STATUS_INVALID_VALUE>;
} // namespace

struct cusparseContext
{
    cudaStream_t stream = nullptr;
    cusparsePointerMode_t pointerMode = CUSPARSE_POINTER_MODE_HOST;
};

struct cusparseMatDescr
{
    cusparseMatrixType_t type = CUSPARSE_MATRIX_TYPE_GENERAL;
    cusparseFillMode_t fill = CUSPARSE_FILL_MODE_LOWER;
    cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
    cusparseIndexBase_t base = CUSPARSE_INDEX_BASE_ZERO;
};

EIDOLON_EXPORT int
eidolonCusparseUnsupported(const char* api)
{
    return Reply::Unsupported(api, CUSPARSE_STATUS_NOT_SUPPORTED, "CUSPARSE_STATUS_NOT_SUPPORTED");
}

EIDOLON_EXPORT cusparseStatus_t
cusparseCreate(cusparseHandle_t* handle)
{
    return Reply::Create(handle);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseDestroy(cusparseHandle_t handle)
{
    if (!handle)
    {
        return CUSPARSE_STATUS_NOT_INITIALIZED;
    }
    delete handle;
    return CUSPARSE_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseSetStream(cusparseHandle_t handle, cudaStream_t stream)
{
    return Reply::SetField(handle, &cusparseContext::stream, stream,
                           CUSPARSE_STATUS_NOT_INITIALIZED);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseGetStream(cusparseHandle_t handle, cudaStream_t* stream)
{
    return handle ? Reply::Store(stream, handle->stream) : CUSPARSE_STATUS_NOT_INITIALIZED;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseSetPointerMode(cusparseHandle_t handle, cusparsePointerMode_t mode)
{
    return Reply::SetField(handle, &cusparseContext::pointerMode, mode,
                           CUSPARSE_STATUS_NOT_INITIALIZED);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseGetPointerMode(cusparseHandle_t handle, cusparsePointerMode_t* mode)
{
    return handle ? Reply::Store(mode, handle->pointerMode) : CUSPARSE_STATUS_NOT_INITIALIZED;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseGetVersion(cusparseHandle_t, int* version)
{
    return Reply::Store(version, CUSPARSE_VERSION);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseGetProperty(libraryPropertyType type, int* value)
{
    return Reply::Property(type, value, CUSPARSE_VER_MAJOR, CUSPARSE_VER_MINOR, CUSPARSE_VER_PATCH);
}

EIDOLON_EXPORT const char*
cusparseGetErrorName(cusparseStatus_t status)
{
    switch (status)
    {
    case CUSPARSE_STATUS_SUCCESS:
        return "CUSPARSE_STATUS_SUCCESS";
    case CUSPARSE_STATUS_NOT_INITIALIZED:
        return "CUSPARSE_STATUS_NOT_INITIALIZED";
    case CUSPARSE_STATUS_ALLOC_FAILED:
        return "CUSPARSE_STATUS_ALLOC_FAILED";
    case CUSPARSE_STATUS_INVALID_VALUE:
        return "CUSPARSE_STATUS_INVALID_VALUE";
    case CUSPARSE_STATUS_EXECUTION_FAILED:
        return "CUSPARSE_STATUS_EXECUTION_FAILED";
    case CUSPARSE_STATUS_INTERNAL_ERROR:
        return "CUSPARSE_STATUS_INTERNAL_ERROR";
    case CUSPARSE_STATUS_NOT_SUPPORTED:
        return "CUSPARSE_STATUS_NOT_SUPPORTED";
    default:
        return "CUSPARSE_STATUS_UNKNOWN";
    }
}

EIDOLON_EXPORT const char*
cusparseGetErrorString(cusparseStatus_t status)
{
    return status == CUSPARSE_STATUS_NOT_SUPPORTED
               ? "the operation is not supported by eidolon (a simulated GPU computes nothing)"
               : cusparseGetErrorName(status);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseCreateMatDescr(cusparseMatDescr_t* descr)
{
    return Reply::Create(descr);
}

EIDOLON_EXPORT cusparseStatus_t
cusparseDestroyMatDescr(cusparseMatDescr_t descr)
{
    delete descr;
    return CUSPARSE_STATUS_SUCCESS;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseSetMatType(cusparseMatDescr_t descr, cusparseMatrixType_t type)
{
    return Reply::SetField(descr, &cusparseMatDescr::type, type);
}

EIDOLON_EXPORT cusparseMatrixType_t
cusparseGetMatType(const cusparseMatDescr_t descr)
{
    return descr ? descr->type : CUSPARSE_MATRIX_TYPE_GENERAL;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseSetMatFillMode(cusparseMatDescr_t descr, cusparseFillMode_t fill)
{
    return Reply::SetField(descr, &cusparseMatDescr::fill, fill);
}

EIDOLON_EXPORT cusparseFillMode_t
cusparseGetMatFillMode(const cusparseMatDescr_t descr)
{
    return descr ? descr->fill : CUSPARSE_FILL_MODE_LOWER;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseSetMatDiagType(cusparseMatDescr_t descr, cusparseDiagType_t diag)
{
    return Reply::SetField(descr, &cusparseMatDescr::diag, diag);
}

EIDOLON_EXPORT cusparseDiagType_t
cusparseGetMatDiagType(const cusparseMatDescr_t descr)
{
    return descr ? descr->diag : CUSPARSE_DIAG_TYPE_NON_UNIT;
}

EIDOLON_EXPORT cusparseStatus_t
cusparseSetMatIndexBase(cusparseMatDescr_t descr, cusparseIndexBase_t base)
{
    return Reply::SetField(descr, &cusparseMatDescr::base, base);
}

EIDOLON_EXPORT cusparseIndexBase_t
cusparseGetMatIndexBase(const cusparseMatDescr_t descr)
{
    return descr ? descr->base : CUSPARSE_INDEX_BASE_ZERO;
}
