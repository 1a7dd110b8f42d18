// libcublasLt replacement: descriptors, layouts, preferences, the heuristic query and
// cublasLtMatmul, priced by the GEMM model on the given stream.
#include "blas-common.h"

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

using namespace eidolon::gpu;
using namespace eidolon::gpu::blas;

namespace
{

// What eidolon keeps of a matmul descriptor; lives inside cublasLtMatmulDescOpaque_t.
struct MatmulDesc
{
    cublasComputeType_t computeType;
    cudaDataType scaleType;
    int32_t transA;
    int32_t transB;
    cublasLtEpilogue_t epilogue;
};
static_assert(sizeof(MatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t), "fits the opaque struct");

// What eidolon keeps of a matrix layout; lives inside cublasLtMatrixLayoutOpaque_t.
struct Layout
{
    cudaDataType type;
    int32_t order;
    uint64_t rows;
    uint64_t cols;
    int64_t ld;
    int32_t batchCount;
    int64_t batchStride;
};
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "fits the opaque struct");

struct LtHandle
{
    int unused;
};

MatmulDesc*
DescOf(cublasLtMatmulDesc_t desc)
{
    return reinterpret_cast<MatmulDesc*>(desc);
}

Layout*
LayoutOf(cublasLtMatrixLayout_t layout)
{
    return reinterpret_cast<Layout*>(layout);
}

// Copies an attribute value of `size` bytes in or out of a field.
template<typename T>
cublasStatus_t
SetField(T& field, const void* buf, size_t size)
{
    if (!buf || size != sizeof(T))
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    std::memcpy(&field, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

template<typename T>
cublasStatus_t
GetField(const T& field, void* buf, size_t size, size_t* written)
{
    if (written)
    {
        *written = sizeof(T);
    }
    if (size == 0 && !buf)
    {
        return written ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE; // size query
    }
    if (!buf || size < sizeof(T))
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    std::memcpy(buf, &field, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

// The epilogues that change the price: GELU (with or without bias) and bias alone.
GemmEpilogue
EpilogueOf(cublasLtEpilogue_t epilogue)
{
    switch (epilogue)
    {
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
        return GemmEpilogue::Bias;
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_AUX:
        return GemmEpilogue::Gelu;
    case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
        return GemmEpilogue::GeluBias;
    default:
        return GemmEpilogue::None;
    }
}

// Whether a batched product's operand is one matrix for all: its layout says the batch's count
// with a batch stride of 0.
bool
Shared(const Layout& operand, const Layout& d)
{
    return d.batchCount > 1 && operand.batchCount == d.batchCount && operand.batchStride == 0;
}

// The GEMM a descriptor and its layouts describe: D (m x n) = op(A) (m x k) op(B) (k x n).
GemmShape
ShapeOf(const MatmulDesc& desc, const Layout& a, const Layout& b, const Layout& d)
{
    GemmShape shape;
    shape.m = int64_t(d.rows);
    shape.n = int64_t(d.cols);
    shape.k = int64_t(desc.transA == CUBLAS_OP_N ? a.cols : a.rows);
    shape.batch = std::max(1, d.batchCount);
    shape.inputType = DTypeOf(a.type);
    shape.mathType = MathTypeOf(desc.computeType, a.type, false);
    shape.outputBytes = BytesOf(d.type);
    shape.transA = desc.transA != CUBLAS_OP_N;
    shape.transB = desc.transB != CUBLAS_OP_N;
    shape.epilogue = EpilogueOf(desc.epilogue);
    shape.sharedA = Shared(a, d);
    shape.sharedB = Shared(b, d);
    return shape;
}

} // namespace

// Creates a cuBLASLt handle.
EIDOLON_EXPORT cublasStatus_t
cublasLtCreate(cublasLtHandle_t* handle)
{
    if (!handle)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *handle = reinterpret_cast<cublasLtHandle_t>(new LtHandle{0});
    return CUBLAS_STATUS_SUCCESS;
}

// Destroys a cuBLASLt handle.
EIDOLON_EXPORT cublasStatus_t
cublasLtDestroy(cublasLtHandle_t handle)
{
    if (!handle)
    {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    delete reinterpret_cast<LtHandle*>(handle);
    return CUBLAS_STATUS_SUCCESS;
}

// Version of the emulated cuBLASLt.
EIDOLON_EXPORT size_t
cublasLtGetVersion()
{
    return CUBLAS_VERSION;
}

// The CUDA runtime version cuBLASLt was built for.
EIDOLON_EXPORT size_t
cublasLtGetCudartVersion()
{
    return CUDART_VERSION;
}

// Major, minor and patch level of the emulated cuBLASLt.
EIDOLON_EXPORT cublasStatus_t
cublasLtGetProperty(libraryPropertyType type, int* value)
{
    return Reply::Property(type, value, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
}

// Symbolic name of a status.
EIDOLON_EXPORT const char*
cublasLtGetStatusName(cublasStatus_t status)
{
    return status == CUBLAS_STATUS_SUCCESS         ? "CUBLAS_STATUS_SUCCESS"
           : status == CUBLAS_STATUS_NOT_SUPPORTED ? "CUBLAS_STATUS_NOT_SUPPORTED"
           : status == CUBLAS_STATUS_INVALID_VALUE ? "CUBLAS_STATUS_INVALID_VALUE"
                                                   : "CUBLAS_STATUS_UNKNOWN";
}

// Description of a status.
EIDOLON_EXPORT const char*
cublasLtGetStatusString(cublasStatus_t status)
{
    return status == CUBLAS_STATUS_SUCCESS         ? "success"
           : status == CUBLAS_STATUS_NOT_SUPPORTED ? "the functionality requested is not supported"
           : status == CUBLAS_STATUS_INVALID_VALUE ? "an invalid value was used as an argument"
                                                   : "unknown error";
}

// Initializes a caller-allocated matmul descriptor.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                cublasComputeType_t computeType, cudaDataType_t scaleType)
{
    if (!desc || size < sizeof(MatmulDesc))
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    new (desc)
        MatmulDesc{computeType, scaleType, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT};
    return CUBLAS_STATUS_SUCCESS;
}

// Creates a matmul descriptor.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType,
                         cudaDataType_t scaleType)
{
    if (!desc)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *desc = new cublasLtMatmulDescOpaque_t();
    return cublasLtMatmulDescInit_internal(*desc, sizeof(cublasLtMatmulDescOpaque_t), computeType,
                                           scaleType);
}

// Destroys a matmul descriptor.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc)
{
    delete desc;
    return CUBLAS_STATUS_SUCCESS;
}

// Sets a descriptor attribute; those that do not change the price (epilogue, pointers, scale
// modes, ...) are accepted and ignored.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                               const void* buf, size_t size)
{
    if (!desc)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    MatmulDesc& d = *DescOf(desc);
    switch (attr)
    {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        return SetField(d.computeType, buf, size);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        return SetField(d.scaleType, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return SetField(d.transA, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return SetField(d.transB, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return SetField(d.epilogue, buf, size);
    default:
        return buf ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    }
}

// Reads a descriptor attribute eidolon keeps.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                               void* buf, size_t size, size_t* written)
{
    if (!desc)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const MatmulDesc& d = *DescOf(desc);
    switch (attr)
    {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        return GetField(d.computeType, buf, size, written);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        return GetField(d.scaleType, buf, size, written);
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return GetField(d.transA, buf, size, written);
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return GetField(d.transB, buf, size, written);
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

// Initializes a caller-allocated matrix layout.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout, size_t size, cudaDataType type,
                                  uint64_t rows, uint64_t cols, int64_t ld)
{
    if (!layout || size < sizeof(Layout))
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    new (layout) Layout{type, CUBLASLT_ORDER_COL, rows, cols, ld, 1, 0};
    return CUBLAS_STATUS_SUCCESS;
}

// Creates a matrix layout (column major, one matrix).
EIDOLON_EXPORT cublasStatus_t
cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                           uint64_t cols, int64_t ld)
{
    if (!layout)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *layout = new cublasLtMatrixLayoutOpaque_t();
    return cublasLtMatrixLayoutInit_internal(*layout, sizeof(cublasLtMatrixLayoutOpaque_t), type,
                                             rows, cols, ld);
}

// Destroys a matrix layout.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout)
{
    delete layout;
    return CUBLAS_STATUS_SUCCESS;
}

// Sets a layout attribute (type, order, rows, cols, ld, batch count and stride).
EIDOLON_EXPORT cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                 cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t size)
{
    if (!layout)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    Layout& l = *LayoutOf(layout);
    switch (attr)
    {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
        return SetField(l.type, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
        return SetField(l.order, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
        return SetField(l.rows, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
        return SetField(l.cols, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_LD:
        return SetField(l.ld, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
        return SetField(l.batchCount, buf, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        return SetField(l.batchStride, buf, size);
    default:
        return buf ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    }
}

// Reads a layout attribute.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                 cublasLtMatrixLayoutAttribute_t attr, void* buf, size_t size,
                                 size_t* written)
{
    if (!layout)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    const Layout& l = *LayoutOf(layout);
    switch (attr)
    {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
        return GetField(l.type, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
        return GetField(l.order, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
        return GetField(l.rows, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
        return GetField(l.cols, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_LD:
        return GetField(l.ld, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
        return GetField(l.batchCount, buf, size, written);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        return GetField(l.batchStride, buf, size, written);
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

// Initializes a caller-allocated preference (nothing in it changes the price).
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size)
{
    if (!pref || size < sizeof(cublasLtMatmulPreferenceOpaque_t))
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    std::memset(pref, 0, sizeof(cublasLtMatmulPreferenceOpaque_t));
    return CUBLAS_STATUS_SUCCESS;
}

// Creates a preference.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref)
{
    if (!pref)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    *pref = new cublasLtMatmulPreferenceOpaque_t();
    return CUBLAS_STATUS_SUCCESS;
}

// Destroys a preference.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    delete pref;
    return CUBLAS_STATUS_SUCCESS;
}

// Preferences (workspace limit, alignments) are accepted.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t, const void* buf, size_t)
{
    return pref && buf ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

// One algorithm, needing no workspace; wavesCount from the GEMM model's tiling.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                               cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                               cublasLtMatrixLayout_t, cublasLtMatrixLayout_t d,
                               cublasLtMatmulPreference_t, int requested,
                               cublasLtMatmulHeuristicResult_t results[], int* returned)
{
    if (!handle || !desc || !a || !b || !d || !results || !returned || requested <= 0)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    {
        ApiCall call(CallKind::Untimed);
        call.Emu().Clock().Charge(spec::HostCall::CublasLtAlgoGetHeuristic);
    }
    GemmShape shape = ShapeOf(*DescOf(desc), *LayoutOf(a), *LayoutOf(b), *LayoutOf(d));
    const GpuSpec& spec = Emulator::Get().Spec();
    GemmPlan plan = PlanGemm(shape, spec, 0);
    std::memset(&results[0], 0, sizeof(results[0]));
    results[0].workspaceSize = 0;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = spec.smCount ? float(double(plan.ctas) / spec.smCount) : 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

// D = alpha op(A) op(B) + beta C: priced by the GEMM model and placed on `stream`.
EIDOLON_EXPORT cublasStatus_t
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void*, const void*,
               cublasLtMatrixLayout_t a, const void*, cublasLtMatrixLayout_t b, const void*,
               const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t d,
               const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream)
{
    if (!handle)
    {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    if (!desc || !a || !b || !d)
    {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    GemmShape shape = ShapeOf(*DescOf(desc), *LayoutOf(a), *LayoutOf(b), *LayoutOf(d));
    ApiCall call(CallKind::Submit);
    call.Emu().Clock().Charge(spec::HostCall::CublasLtMatmul);
    return call.Emu().SubmitGemm(static_cast<void*>(stream), shape,
                                 GemmLabel("cublasLtMatmul", shape))
               ? CUBLAS_STATUS_SUCCESS
               : CUBLAS_STATUS_EXECUTION_FAILED;
}

// Called by the generated stubs of the cuBLASLt entry points eidolon does not implement.
extern "C" int
eidolonCublasLtUnsupported(const char* api)
{
    WarnUnsupportedOnce(api, "CUBLAS_STATUS_NOT_SUPPORTED");
    return CUBLAS_STATUS_NOT_SUPPORTED;
}
