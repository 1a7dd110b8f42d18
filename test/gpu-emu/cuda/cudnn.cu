// libcudnn.so.9: graphs built through the backend API as cudnn-frontend builds them, and the legacy
// convolution and batch-norm calls, priced on the handle's stream. Expected times worked out here
// from TEST-GPU's numbers (100 SMs, 1 TB/s, bf16 200 TFLOPS, compute capability 8.0; no pricing
// block: no attention rates, so attention runs at half the GEMM's 80 % per-SM efficiency, FA2
// style; 1 us kernel floor) and TEST-HOST's (every call that submits GPU work costs O = 2 us).
#include "check.h"

#include <cudnn.h>

#include <cstring>
#include <initializer_list>
#include <vector>

using Desc = cudnnBackendDescriptor_t;

// ---- expected prices (us)
// Attention (gpu-emu/core/cost-model.cc AttentionNs): FLOPs 2 x matmuls x b h sq skv d (halved
// when causal, then x (blocks + 1) / blocks for the diagonal's 128-key blocks) at
// bf16 200e12 x 0.4 x s / (s + 128), s the query length forward and the key length backward,
// plus the 1 us floor.
// b=2 h=8 s=1024 d=64 forward: 4 x 2 x 8 x 1024^2 x 64 = 2^32 FLOP at 80e12 x 1024/1152.
const double kSdpaFwdUs = 4294967296.0 / (80e12 * 1024 / 1152) * 1e6 + 1; // 61.3979776
// Causal: 2^31 x 9/8 (8 blocks of 128 keys) FLOP at the same rate.
const double kSdpaFwdCausalUs = 2147483648.0 * 9 / 8 / (80e12 * 1024 / 1152) * 1e6 + 1; // 34.97
// Backward: five matmuls, 2.5 x the forward's FLOPs; before it the row sums D = dO.O (reads dO
// and O, 2 x 2 x 8 x 1024 x 64 x 2 bytes, writes 2 x 8 x 1024 fp32) and after it dQ converted
// from fp32 (2 x 8 x 1024 x 64 x (4 + 2) bytes), each at 1 TB/s plus the 1 us floor.
const double kSdpaBwdUs = 2.5 * 4294967296.0 / (80e12 * 1024 / 1152) * 1e6 + 1; // 151.994944
const double kSdpaBwdDotUs = (2 * 1048576.0 * 2 + 16384 * 4) / 1e12 * 1e6 + 1;  // 5.25984
const double kSdpaBwdConvertUs = 1048576.0 * 6 / 1e12 * 1e6 + 1;                // 7.291456
// Fused SDPA_FWD operation, b=1 h=4 sq=512 skv=2048 d=64: 4 x 4 x 512 x 2048 x 64 = 2^30 FLOP at
// 80e12 x 512/640 = 64e12.
const double kSdpaFusedUs = 1073741824.0 / 64e12 * 1e6 + 1; // 17.777216
// Convolution N=32 C=64 H=W=56, K=128 3x3, pad 1, bf16: implicit GEMM M = N.P.Q = 100352,
// N = K = 128, K = C.R.S = 576. Tiles (sm80, CUTLASS): waves x tile area is 131072 for 256x128
// (4 waves), 128x128 (8), 128x64 and 64x128 (16), 64x64 (32), and 63 x 2048 = 129024 for 64x32
// and 32x64 (6272 CTAs): the 64x32 tile, 63 waves of 2 x 64 x 32 x 576 FLOP per SM at
// 200e12 / 100 x 0.8 = 1.6e12. Its tensors x + w + y = 12845056 + 147456 + 25690112 bytes take
// 38.68 us at 1 TB/s: compute bound.
const double kConvFwdUs = 63 * 2.0 * 64 * 32 * 576 / 1.6e12 * 1e6; // 92.89728
// Batch norm training forward over the same x (32 x 64 x 56 x 56 bf16 = 12845056 bytes): read
// twice, y written once, plus 64 channels x 32 bytes of parameters, at 1 TB/s, plus the floor.
const double kBatchNormFwdUs = (3 * 12845056.0 + 64 * 32) / 1e12 * 1e6 + 1; // 39.537216

cudaStream_t g_stream;
cudaEvent_t g_start, g_stop;

template<typename F>
double
TimedUs(F work)
{
    cudaEventRecord(g_start, g_stream);
    work();
    cudaEventRecord(g_stop, g_stream);
    cudaEventSynchronize(g_stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, g_start, g_stop);
    return ms * 1e3;
}

#define CHECK_DNN(call) CHECK((call) == CUDNN_STATUS_SUCCESS)

// ---- backend helpers, in the order cudnn-frontend calls the API
Desc
Make(cudnnBackendDescriptorType_t type)
{
    Desc d = nullptr;
    CHECK_DNN(cudnnBackendCreateDescriptor(type, &d));
    return d;
}

template<typename T>
void
Set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
    std::vector<T> values)
{
    CHECK_DNN(cudnnBackendSetAttribute(d, name, type, int64_t(values.size()), values.data()));
}

// A tensor with packed row-major strides.
Desc
Tensor(int64_t uid, std::vector<int64_t> dims, cudnnDataType_t type, bool isVirtual = false)
{
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i)
    {
        strides[i - 1] = strides[i] * dims[i];
    }
    Desc t = Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    Set<int32_t>(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, {type});
    Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims);
    Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides);
    Set<int64_t>(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, {uid});
    Set<int64_t>(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, {16});
    CHECK_DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1,
                                       &isVirtual));
    CHECK_DNN(cudnnBackendFinalize(t));
    return t;
}

Desc
Matmul(Desc a, Desc b, Desc c)
{
    Desc config = Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    Set<int32_t>(config, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, {CUDNN_DATA_FLOAT});
    CHECK_DNN(cudnnBackendFinalize(config));
    Desc op = Make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    Set<Desc>(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {a});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {b});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {c});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {config});
    CHECK_DNN(cudnnBackendFinalize(op));
    cudnnBackendDestroyDescriptor(config); // the operation keeps what it needs
    return op;
}

Desc
Pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y)
{
    Desc config = Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    Set<int32_t>(config, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, {mode});
    Set<int32_t>(config, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, {CUDNN_DATA_FLOAT});
    CHECK_DNN(cudnnBackendFinalize(config));
    Desc op = Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    Set<Desc>(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              {config});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {x});
    if (b)
    {
        Set<Desc>(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {b});
    }
    Set<Desc>(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {y});
    CHECK_DNN(cudnnBackendFinalize(op));
    return op;
}

Desc
Reduction(cudnnReduceTensorOp_t op, Desc x, Desc y)
{
    Desc config = Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    Set<int32_t>(config, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, {op});
    Set<int32_t>(config, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, {CUDNN_DATA_FLOAT});
    CHECK_DNN(cudnnBackendFinalize(config));
    Desc r = Make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    Set<Desc>(r, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {config});
    Set<Desc>(r, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {x});
    Set<Desc>(r, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {y});
    CHECK_DNN(cudnnBackendFinalize(r));
    return r;
}

cudnnStatus_t
FinalizeGraph(cudnnHandle_t handle, std::vector<Desc> ops, Desc* graph)
{
    *graph = Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Set(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops);
    Set<cudnnHandle_t>(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, {handle});
    return cudnnBackendFinalize(*graph);
}

// Heuristics -> first engine config -> execution plan, as cudnn-frontend's build_plans does.
Desc
PlanFor(cudnnHandle_t handle, Desc graph, int64_t* workspace)
{
    Desc heuristics = Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    Set<Desc>(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              {graph});
    Set<int32_t>(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, {CUDNN_HEUR_MODE_A});
    CHECK_DNN(cudnnBackendFinalize(heuristics));
    int64_t count = -1;
    CHECK_DNN(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    CHECK(count == 2);
    // Asked for fewer, the count is what was written (cudnn-frontend resizes its list to it).
    Desc first = Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t written = -1;
    CHECK_DNN(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &written, &first));
    CHECK(written == 1);
    cudnnBackendDestroyDescriptor(first);
    std::vector<Desc> configs(count);
    for (Desc& c : configs)
    {
        c = Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    }
    CHECK_DNN(cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                       configs.data()));
    // The first engine uses tensor cores and says so (PyTorch filters on this note).
    Desc engine = Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    CHECK_DNN(cudnnBackendGetAttribute(configs[0], CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine));
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    CHECK_DNN(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                       &n, notes));
    CHECK(n == 1 && notes[0] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE);

    Desc plan = Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    Set<cudnnHandle_t>(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, {handle});
    Set<Desc>(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              {configs[0]});
    CHECK_DNN(cudnnBackendFinalize(plan));
    CHECK_DNN(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &n, workspace));
    for (Desc c : configs)
    {
        cudnnBackendDestroyDescriptor(c);
    }
    cudnnBackendDestroyDescriptor(engine);
    cudnnBackendDestroyDescriptor(heuristics);
    return plan;
}

// Executes `plan` with a variant pack of `uids` (device pointers do not matter: nothing is read).
double
ExecuteUs(cudnnHandle_t handle, Desc plan, std::vector<int64_t> uids, void* buffer)
{
    std::vector<void*> pointers(uids.size(), buffer);
    Desc pack = Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids);
    Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers);
    Set<void*>(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, {buffer});
    CHECK_DNN(cudnnBackendFinalize(pack));
    double us = TimedUs([&] { CHECK_DNN(cudnnBackendExecute(handle, plan, pack)); });
    cudnnBackendDestroyDescriptor(pack);
    return us;
}

// Attention forward spelled out as cudnn-frontend's SDPA node does: S = Q.K^T, scaled, optionally
// causally masked (row and column indices compared), softmax (max, exp, sum, divide), O = P.V.
std::vector<Desc>
SdpaForwardOps(bool causal)
{
    const int64_t b = 2, h = 8, s = 1024, d = 64;
    const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
    Desc q = Tensor(1, {b, h, s, d}, bf16), kt = Tensor(2, {b, h, d, s}, bf16);
    Desc v = Tensor(3, {b, h, s, d}, bf16), o = Tensor(4, {b, h, s, d}, bf16);
    Desc scale = Tensor(5, {1, 1, 1, 1}, f32);
    Desc sRaw = Tensor(100, {b, h, s, s}, f32, true),
         sScaled = Tensor(101, {b, h, s, s}, f32, true);
    Desc rowMax = Tensor(102, {b, h, s, 1}, f32, true), e = Tensor(103, {b, h, s, s}, f32, true);
    Desc rowSum = Tensor(104, {b, h, s, 1}, f32, true), p = Tensor(105, {b, h, s, s}, bf16, true);
    std::vector<Desc> ops = {Matmul(q, kt, sRaw),
                             Pointwise(CUDNN_POINTWISE_MUL, sRaw, scale, sScaled)};
    Desc logits = sScaled;
    if (causal)
    {
        Desc row = Tensor(110, {b, h, s, s}, f32, true), col = Tensor(111, {b, h, s, s}, f32, true);
        Desc keep = Tensor(112, {b, h, s, s}, CUDNN_DATA_BOOLEAN, true);
        Desc masked = Tensor(113, {b, h, s, s}, f32, true);
        ops.push_back(Pointwise(CUDNN_POINTWISE_GEN_INDEX, sScaled, nullptr, row));
        ops.push_back(Pointwise(CUDNN_POINTWISE_GEN_INDEX, sScaled, nullptr, col));
        ops.push_back(Pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep));
        ops.push_back(Pointwise(CUDNN_POINTWISE_BINARY_SELECT, sScaled, keep, masked));
        logits = masked;
    }
    ops.push_back(Reduction(CUDNN_REDUCE_TENSOR_MAX, logits, rowMax));
    ops.push_back(Pointwise(CUDNN_POINTWISE_EXP, logits, nullptr, e));
    ops.push_back(Reduction(CUDNN_REDUCE_TENSOR_ADD, e, rowSum));
    ops.push_back(Pointwise(CUDNN_POINTWISE_DIV, e, rowSum, p));
    ops.push_back(Matmul(p, v, o));
    return ops;
}

// Attention backward: S recomputed, P = exp(S - stats), dV = P^T.dO, dP = dO.V^T,
// dS = P (dP - D), dQ = dS.K, dK = dS^T.Q: five matmuls.
std::vector<Desc>
SdpaBackwardOps()
{
    const int64_t b = 2, h = 8, s = 1024, d = 64;
    const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
    Desc q = Tensor(1, {b, h, s, d}, bf16), kt = Tensor(2, {b, h, d, s}, bf16);
    Desc k = Tensor(3, {b, h, s, d}, bf16), vt = Tensor(4, {b, h, d, s}, bf16);
    Desc dO = Tensor(5, {b, h, s, d}, bf16), stats = Tensor(6, {b, h, s, 1}, f32);
    Desc dq = Tensor(7, {b, h, s, d}, bf16), dk = Tensor(8, {b, h, s, d}, bf16);
    Desc dv = Tensor(9, {b, h, s, d}, bf16);
    Desc sRaw = Tensor(100, {b, h, s, s}, f32, true),
         shifted = Tensor(101, {b, h, s, s}, f32, true);
    Desc p = Tensor(102, {b, h, s, s}, bf16, true), pt = Tensor(103, {b, h, s, s}, bf16, true);
    Desc dp = Tensor(104, {b, h, s, s}, f32, true), ds = Tensor(105, {b, h, s, s}, bf16, true);
    Desc dst = Tensor(106, {b, h, s, s}, bf16, true);
    return {Matmul(q, kt, sRaw),
            Pointwise(CUDNN_POINTWISE_SUB, sRaw, stats, shifted),
            Pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, p),
            Pointwise(CUDNN_POINTWISE_IDENTITY, p, nullptr, pt),
            Matmul(pt, dO, dv),
            Matmul(dO, vt, dp),
            Pointwise(CUDNN_POINTWISE_MUL, dp, p, ds),
            Pointwise(CUDNN_POINTWISE_IDENTITY, ds, nullptr, dst),
            Matmul(ds, k, dq),
            Matmul(dst, q, dk)};
}

double
RunGraphUs(cudnnHandle_t handle, std::vector<Desc> ops, std::vector<int64_t> uids, void* buffer,
           int64_t* workspace)
{
    Desc graph = nullptr;
    CHECK_DNN(FinalizeGraph(handle, ops, &graph));
    for (Desc op : ops)
    {
        cudnnBackendDestroyDescriptor(op); // the graph keeps what it needs
    }
    int64_t engines = 0, n = 0;
    CHECK_DNN(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                       CUDNN_TYPE_INT64, 1, &n, &engines));
    CHECK(n == 1 && engines == 2);
    Desc plan = PlanFor(handle, graph, workspace);
    cudnnBackendDestroyDescriptor(graph);
    double us = ExecuteUs(handle, plan, uids, buffer);
    cudnnBackendDestroyDescriptor(plan);
    return us;
}

void
CheckAttention(cudnnHandle_t handle, void* buffer)
{
    const double O = kLaunchOverheadUs;
    int64_t workspace = -1;
    double us = RunGraphUs(handle, SdpaForwardOps(false), {1, 2, 3, 4, 5}, buffer, &workspace);
    CHECK_NEAR(us, O + kSdpaFwdUs, 1e-3);
    CHECK_NEAR(kSdpaFwdUs, 61.3979776, 1e-6);
    CHECK(workspace == 0);

    us = RunGraphUs(handle, SdpaForwardOps(true), {1, 2, 3, 4, 5}, buffer, &workspace);
    CHECK_NEAR(us, O + kSdpaFwdCausalUs, 1e-3);
    CHECK_NEAR(kSdpaFwdCausalUs, 34.9738624, 1e-6);

    us = RunGraphUs(handle, SdpaBackwardOps(), {1, 2, 3, 4, 5, 6, 7, 8, 9}, buffer, &workspace);
    // Three kernels, each longer than a launch: the GPU is the bottleneck after the first.
    CHECK_NEAR(us, O + kSdpaBwdDotUs + kSdpaBwdUs + kSdpaBwdConvertUs, 1e-3);
    CHECK_NEAR(kSdpaBwdUs, 151.994944, 1e-6);
    CHECK_NEAR(kSdpaBwdDotUs + kSdpaBwdConvertUs, 12.551296, 1e-6);
    // dQ accumulated in fp32 plus one fp32 per row: 2 x 8 x 1024 x (64 + 1) x 4 bytes.
    CHECK(workspace == 2 * 8 * 1024 * 65 * 4);

    // The fused SDPA_FWD operation (cuDNN 9.13+), cross attention: s_kv from K's rows.
    Desc q = Tensor(1, {1, 4, 512, 64}, CUDNN_DATA_BFLOAT16);
    Desc k = Tensor(2, {1, 4, 2048, 64}, CUDNN_DATA_BFLOAT16);
    Desc v = Tensor(3, {1, 4, 2048, 64}, CUDNN_DATA_BFLOAT16);
    Desc o = Tensor(4, {1, 4, 512, 64}, CUDNN_DATA_BFLOAT16);
    Desc sdpa = Make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    Set<Desc>(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {q});
    Set<Desc>(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {k});
    Set<Desc>(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {v});
    Set<Desc>(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {o});
    CHECK_DNN(cudnnBackendFinalize(sdpa));
    us = RunGraphUs(handle, {sdpa}, {1, 2, 3, 4}, buffer, &workspace);
    CHECK_NEAR(us, O + kSdpaFusedUs, 1e-3);
}

void
CheckConvolution(cudnnHandle_t handle, void* buffer)
{
    const double O = kLaunchOverheadUs;
    const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16;
    // Backend: x [32, 64, 56, 56], w [128, 64, 3, 3], y [32, 128, 56, 56].
    Desc x = Tensor(1, {32, 64, 56, 56}, bf16), w = Tensor(2, {128, 64, 3, 3}, bf16);
    Desc y = Tensor(3, {32, 128, 56, 56}, bf16);
    Desc conv = Make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    Set<int32_t>(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, {CUDNN_DATA_FLOAT});
    Set<int32_t>(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                 {CUDNN_CROSS_CORRELATION});
    Set<int64_t>(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, {2});
    Set<int64_t>(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, {1, 1});
    Set<int64_t>(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, {1, 1});
    Set<int64_t>(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, {1, 1});
    Set<int64_t>(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, {1, 1});
    CHECK_DNN(cudnnBackendFinalize(conv));
    Desc op = Make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    Set<Desc>(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, {x});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, {w});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, {y});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              {conv});
    Set<float>(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, {1.0f});
    Set<float>(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, {0.0f});
    CHECK_DNN(cudnnBackendFinalize(op));
    int64_t workspace = -1;
    double us = RunGraphUs(handle, {op}, {1, 2, 3}, buffer, &workspace);
    CHECK_NEAR(us, O + kConvFwdUs, 1e-3);
    CHECK_NEAR(kConvFwdUs, 92.89728, 1e-6);

    // Legacy API, the same convolution.
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    CHECK_DNN(cudnnCreateTensorDescriptor(&xd));
    CHECK_DNN(cudnnCreateTensorDescriptor(&yd));
    CHECK_DNN(cudnnCreateFilterDescriptor(&wd));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
    CHECK_DNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, bf16, 32, 64, 56, 56));
    CHECK_DNN(cudnnSetFilter4dDescriptor(wd, bf16, CUDNN_TENSOR_NCHW, 128, 64, 3, 3));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
    int out[4] = {};
    CHECK_DNN(cudnnGetConvolutionNdForwardOutputDim(cd, xd, wd, 4, out));
    CHECK(out[0] == 32 && out[1] == 128 && out[2] == 56 && out[3] == 56);
    CHECK_DNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, bf16, 32, 128, 56, 56));
    cudnnConvolutionFwdAlgoPerf_t perf[4];
    int returned = 0;
    CHECK_DNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, cd, yd, 4, &returned, perf));
    CHECK(returned == 1 && perf[0].status == CUDNN_STATUS_SUCCESS);
    float alpha = 1, beta = 0;
    us = TimedUs(
        [&]
        {
            CHECK_DNN(cudnnConvolutionForward(handle, &alpha, xd, buffer, wd, buffer, cd,
                                              perf[0].algo, nullptr, 0, &beta, yd, buffer));
        });
    CHECK_NEAR(us, O + kConvFwdUs, 1e-3);

    // Batch norm (training forward) over x.
    cudnnTensorDescriptor_t channels;
    CHECK_DNN(cudnnCreateTensorDescriptor(&channels));
    CHECK_DNN(
        cudnnSetTensor4dDescriptor(channels, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 64, 1, 1));
    us = TimedUs(
        [&]
        {
            CHECK_DNN(cudnnBatchNormalizationForwardTrainingEx(
                handle, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &alpha, &beta, xd, buffer,
                nullptr, nullptr, xd, buffer, channels, buffer, buffer, 0.1, buffer, buffer, 1e-5,
                buffer, buffer, nullptr, nullptr, 0, nullptr, 0));
        });
    CHECK_NEAR(us, O + kBatchNormFwdUs, 1e-3);
    for (auto t : {xd, yd, channels})
    {
        cudnnDestroyTensorDescriptor(t);
    }
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
}

// A resampling (pooling) graph is not something eidolon prices: the graph does not finalize, with
// a NOT_SUPPORTED status PyTorch reports as an unsupported cuDNN graph; nothing crashes.
void
CheckUnsupported(cudnnHandle_t handle)
{
    Desc x = Tensor(1, {8, 16, 32, 32}, CUDNN_DATA_HALF),
         y = Tensor(2, {8, 16, 16, 16}, CUDNN_DATA_HALF);
    Desc resample = Make(CUDNN_BACKEND_RESAMPLE_DESCRIPTOR);
    Desc op = Make(CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR);
    Set<Desc>(op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {x});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, {y});
    Set<Desc>(op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              {resample});
    Desc graph = nullptr;
    const cudnnStatus_t status = FinalizeGraph(handle, {op}, &graph);
    CHECK(status == CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
    CHECK(CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED);
    char message[256];
    cudnnGetLastErrorString(message, sizeof(message));
    CHECK(std::strstr(message, "resample_fwd") != nullptr);
    // A plan cannot be made from it.
    Desc heuristics = Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    Set<Desc>(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
              {graph});
    CHECK(cudnnBackendFinalize(heuristics) != CUDNN_STATUS_SUCCESS);
    // Entry points eidolon does not implement answer CUDNN_STATUS_NOT_SUPPORTED.
    cudnnPoolingDescriptor_t pooling = nullptr;
    CHECK(cudnnCreatePoolingDescriptor(&pooling) == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN),
                      "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN") == 0);
}

int
main()
{
    CHECK(cudnnGetVersion() == CUDNN_VERSION);
    CHECK(cudnnGetCudartVersion() == CUDART_VERSION);
    int major = 0, minor = 0;
    CHECK_DNN(cudnnGetProperty(MAJOR_VERSION, &major));
    CHECK_DNN(cudnnGetProperty(MINOR_VERSION, &minor));
    CHECK(major == CUDNN_MAJOR && minor == CUDNN_MINOR);

    CHECK_CUDA(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&g_start));
    CHECK_CUDA(cudaEventCreate(&g_stop));
    cudnnHandle_t handle;
    CHECK_DNN(cudnnCreate(&handle));
    CHECK_DNN(cudnnSetStream(handle, g_stream));
    cudaStream_t got = nullptr;
    CHECK_DNN(cudnnGetStream(handle, &got));
    CHECK(got == g_stream);
    void* buffer = nullptr;
    CHECK_CUDA(cudaMalloc(&buffer, 1 << 20));

    CheckAttention(handle, buffer);
    CheckConvolution(handle, buffer);
    CheckUnsupported(handle);

    CHECK_DNN(cudnnDestroy(handle));
    return Finish("cudnn");
}
