// What executing a cuDNN operation graph costs. The graph's operations are read for the patterns
// PyTorch builds through cudnn-frontend and each is priced by the model of its kind:
// - scaled dot-product attention, fused (SDPA_FWD/SDPA_BWD operations) or spelled out as
//   matmul -> scale/mask/softmax -> matmul (2 matmuls forward, 3 or more backward): one
//   flash-style kernel priced by the attention model (AttentionNs) from b, h, s_q, s_kv, d of
//   the Q.K^T matmul (the one whose two inputs are both real tensors);
// - convolution forward, backward data and backward filter, with fused pointwise epilogues: its
//   implicit GEMM through the GEMM model;
// - one matmul with pointwise epilogues: the GEMM model;
// - normalisation, pointwise and reduction graphs: the bytes of their real tensors at HBM rate.
// Anything else (resampling, RNG-only, MoE, paged caches, ...) is not supported.
#include "cudnn-common.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <sstream>

using namespace eidolon::gpu;
using namespace eidolon::gpu::dnn;

namespace eidolon::gpu::dnn
{

int64_t
TensorFacts::Elements() const
{
    int64_t n = 1;
    for (int64_t d : dims)
    {
        n *= d;
    }
    return dims.empty() ? 0 : n;
}

double
TensorFacts::Bytes() const
{
    return double(Elements()) * BytesOf(dataType);
}

std::optional<TensorFacts>
TensorOf(const DescriptorPtr& tensor)
{
    if (!tensor || tensor->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR)
    {
        return std::nullopt;
    }
    TensorFacts t;
    t.dims = Int64s(*tensor, CUDNN_ATTR_TENSOR_DIMENSIONS);
    if (t.dims.empty())
    {
        return std::nullopt;
    }
    t.dataType = cudnnDataType_t(
        Scalar<int32_t>(*tensor, CUDNN_ATTR_TENSOR_DATA_TYPE).value_or(CUDNN_DATA_FLOAT));
    t.isVirtual = Scalar<bool>(*tensor, CUDNN_ATTR_TENSOR_IS_VIRTUAL).value_or(false);
    t.uid = Scalar<int64_t>(*tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID).value_or(0);
    return t;
}

DType
DTypeOf(cudnnDataType_t type)
{
    switch (type)
    {
    case CUDNN_DATA_DOUBLE:
        return DType::F64;
    case CUDNN_DATA_HALF:
        return DType::F16;
    case CUDNN_DATA_BFLOAT16:
        return DType::BF16;
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
        return DType::F8;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
        return DType::I8;
    default:
        return DType::F32;
    }
}

int
BytesOf(cudnnDataType_t type)
{
    switch (type)
    {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
        return 8;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
        return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
        return 1;
    default:
        return 4;
    }
}

DType
MathTypeOf(cudnnDataType_t data, bool tensorCores)
{
    const DType type = DTypeOf(data);
    return type == DType::F32 && tensorCores ? DType::TF32 : type;
}

std::optional<GemmShape>
ConvolutionGemm(ConvDirection direction, const TensorFacts& x, const TensorFacts& w,
                const TensorFacts& y, bool tensorCores)
{
    if (x.dims.size() < 3 || w.dims.size() != x.dims.size() || y.dims.size() != x.dims.size())
    {
        return std::nullopt;
    }
    auto spatial = [](const std::vector<int64_t>& dims)
    { return std::accumulate(dims.begin() + 2, dims.end(), int64_t(1), std::multiplies<>()); };
    const int64_t n = x.dims[0], c = x.dims[1], k = w.dims[0], cPerGroup = w.dims[1];
    if (cPerGroup <= 0 || c % cPerGroup != 0 || k % (c / cPerGroup) != 0)
    {
        return std::nullopt;
    }
    const int64_t groups = c / cPerGroup, kPerGroup = k / groups;
    const int64_t rs = spatial(w.dims), pq = spatial(y.dims), hw = spatial(x.dims);
    // NVIDIA's implicit-GEMM mapping (cuDNN's "Convolution Algorithms" / the convolutional
    // layers guide): forward M = N.P.Q, N = K, K = C.R.S; backward data M = N.H.W, N = C,
    // K = K.R.S; backward filter M = K, N = C.R.S, K = N.P.Q; per group.
    GemmShape g;
    switch (direction)
    {
    case ConvDirection::Forward:
        g.m = n * pq, g.n = kPerGroup, g.k = cPerGroup * rs;
        break;
    case ConvDirection::BackwardData:
        g.m = n * hw, g.n = cPerGroup, g.k = kPerGroup * rs;
        break;
    case ConvDirection::BackwardFilter:
        g.m = kPerGroup, g.n = cPerGroup * rs, g.k = n * pq;
        break;
    }
    g.batch = groups;
    const cudnnDataType_t input =
        direction == ConvDirection::BackwardData ? y.dataType : x.dataType;
    const cudnnDataType_t output = direction == ConvDirection::Forward        ? y.dataType
                                   : direction == ConvDirection::BackwardData ? x.dataType
                                                                              : w.dataType;
    g.inputType = DTypeOf(input);
    g.mathType = MathTypeOf(input, tensorCores);
    g.outputBytes = BytesOf(output);
    return g;
}

bool
TraceEnabled()
{
    static const bool enabled = []
    {
        const char* v = std::getenv("EIDOLON_CUDNN_TRACE");
        return v && *v && *v != '0';
    }();
    return enabled;
}

std::string
GemmLabel(const std::string& name, const GemmShape& shape)
{
    return name + " m=" + std::to_string(shape.m) + " n=" + std::to_string(shape.n) +
           " k=" + std::to_string(shape.k) + " batch=" + std::to_string(shape.batch) + " " +
           DTypeName(shape.mathType);
}

WorkPart
ConvolutionPart(const std::string& name, const GemmShape& shape, const TensorFacts& x,
                const TensorFacts& w, const TensorFacts& y)
{
    WorkPart part;
    part.model = WorkPart::Model::Convolution;
    part.gemm = shape;
    part.bytes = x.Bytes() + w.Bytes() + y.Bytes();
    part.label = GemmLabel(name, shape);
    return part;
}

Ns
ConvolutionNs(const GemmShape& implicitGemm, double tensorBytes, const GpuSpec& spec,
              Ns minKernelNs)
{
    return PlanGemm(implicitGemm, spec, minKernelNs, tensorBytes).totalNs;
}

} // namespace eidolon::gpu::dnn

namespace
{

const char*
OpName(cudnnBackendDescriptorType_t type)
{
    switch (type)
    {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
        return "conv_fwd";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
        return "conv_bwd_data";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
        return "conv_bwd_filter";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        return "pointwise";
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
        return "matmul";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
        return "reduction";
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
        return "norm_fwd";
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
        return "norm_bwd";
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:
        return "rng";
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
        return "sdpa_fwd";
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
        return "sdpa_bwd";
    case CUDNN_BACKEND_OPERATION_SOFTMAX_DESCRIPTOR:
        return "softmax";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR:
        return "resample_fwd";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR:
        return "resample_bwd";
    case CUDNN_BACKEND_OPERATION_DIAGONAL_BAND_MASK_DESCRIPTOR:
        return "diagonal_band_mask";
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
        return "reshape";
    case CUDNN_BACKEND_OPERATION_TRANSPOSE_DESCRIPTOR:
        return "transpose";
    default:
        return nullptr;
    }
}

// The tensors each operation kind reads and writes, by attribute.
std::vector<cudnnBackendAttributeName_t>
TensorAttributes(cudnnBackendDescriptorType_t type)
{
    switch (type)
    {
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        return {CUDNN_ATTR_OPERATION_POINTWISE_XDESC,  CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                CUDNN_ATTR_OPERATION_POINTWISE_YDESC,  CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
                CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC};
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
        return {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_ATTR_OPERATION_REDUCTION_YDESC};
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
        return {CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, CUDNN_ATTR_OPERATION_NORM_FWD_YDESC,
                CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC};
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
        return {CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC,
                CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC};
    default:
        return {};
    }
}

struct MatmulFacts
{
    TensorFacts a, b, c;
};

// The operations of a graph sorted by what the pricing needs.
struct GraphOps
{
    std::vector<MatmulFacts> matmuls;
    std::vector<std::pair<ConvDirection, std::array<TensorFacts, 3>>> convs; // x, w, y
    std::vector<DescriptorPtr> sdpaFwd, sdpaBwd, norms;
    int softmaxLike = 0; // softmax operations, exp pointwise ops, reductions
    bool causal = false;
    bool unknown = false;
    double memoryBytes = 0; // real tensors of memory-bound operations (each counted once)
    std::vector<int64_t> seenUids;
    std::string pattern;
};

void
AddMemoryTensors(GraphOps& g, const Descriptor& op)
{
    for (cudnnBackendAttributeName_t name : TensorAttributes(op.type))
    {
        auto t = TensorOf(Child(op, name));
        if (!t || t->isVirtual ||
            std::find(g.seenUids.begin(), g.seenUids.end(), t->uid) != g.seenUids.end())
        {
            continue;
        }
        g.seenUids.push_back(t->uid);
        g.memoryBytes += t->Bytes();
    }
}

void
ReadPointwise(GraphOps& g, const Descriptor& op)
{
    DescriptorPtr pw = Child(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
    const auto mode = pw ? Scalar<int32_t>(*pw, CUDNN_ATTR_POINTWISE_MODE) : std::nullopt;
    if (mode == CUDNN_POINTWISE_EXP)
    {
        ++g.softmaxLike;
    }
    const bool compare = mode == CUDNN_POINTWISE_CMP_GE || mode == CUDNN_POINTWISE_CMP_GT ||
                         mode == CUDNN_POINTWISE_CMP_LE || mode == CUDNN_POINTWISE_CMP_LT;
    if (compare)
    {
        // A causal mask compares a row index with a column index, both generated (virtual);
        // a padding mask compares an index with a real sequence-length tensor.
        auto x = TensorOf(Child(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC));
        auto b = TensorOf(Child(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
        if (x && b && x->isVirtual && b->isVirtual)
        {
            g.causal = true;
        }
    }
    AddMemoryTensors(g, op);
}

void
ReadConvolution(GraphOps& g, const Descriptor& op, ConvDirection direction,
                cudnnBackendAttributeName_t x, cudnnBackendAttributeName_t w,
                cudnnBackendAttributeName_t y)
{
    auto tx = TensorOf(Child(op, x)), tw = TensorOf(Child(op, w)), ty = TensorOf(Child(op, y));
    if (!tx || !tw || !ty)
    {
        g.unknown = true;
        return;
    }
    g.convs.push_back({direction, {*tx, *tw, *ty}});
}

GraphOps ReadOps(const std::vector<DescriptorPtr>& ops);

// The score-modifier subgraph of a fused SDPA operation (cuDNN 9.21+) masks causally.
bool
SubgraphIsCausal(const Descriptor& sdpa, cudnnBackendAttributeName_t attribute)
{
    DescriptorPtr subgraph = Child(sdpa, attribute);
    return subgraph && ReadOps(Children(*subgraph, CUDNN_ATTR_OPERATIONGRAPH_OPS)).causal;
}

// Set EIDOLON_CUDNN_TRACE=1 to see every operation graph and the attributes of its operations.
void
Trace(const std::vector<DescriptorPtr>& ops)
{
    if (!TraceEnabled())
    {
        return;
    }
    std::ostringstream out;
    out << "cudnn graph:";
    for (const DescriptorPtr& op : ops)
    {
        out << " [type " << int(op->type) << ":";
        for (const auto& [name, value] : op->attributes)
        {
            out << " " << int(name) << "/" << int(value.type) << "x" << value.count;
        }
        out << "]";
    }
    Warn(out.str());
}

GraphOps
ReadOps(const std::vector<DescriptorPtr>& ops)
{
    Trace(ops);
    GraphOps g;
    std::ostringstream pattern;
    for (const DescriptorPtr& op : ops)
    {
        const char* name = OpName(op->type);
        pattern << (pattern.tellp() > 0 ? " " : "");
        if (name)
        {
            pattern << name;
        }
        else
        {
            pattern << "descriptor-type-" << int(op->type);
        }
        switch (op->type)
        {
        case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
        {
            auto a = TensorOf(Child(*op, CUDNN_ATTR_OPERATION_MATMUL_ADESC));
            auto b = TensorOf(Child(*op, CUDNN_ATTR_OPERATION_MATMUL_BDESC));
            auto c = TensorOf(Child(*op, CUDNN_ATTR_OPERATION_MATMUL_CDESC));
            if (a && b && c && a->dims.size() >= 2 && b->dims.size() >= 2)
            {
                g.matmuls.push_back({*a, *b, *c});
            }
            else
            {
                g.unknown = true;
            }
            break;
        }
        case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
            ReadConvolution(g, *op, ConvDirection::Forward,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y);
            break;
        case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
            ReadConvolution(g, *op, ConvDirection::BackwardData,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY);
            break;
        case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
            ReadConvolution(g, *op, ConvDirection::BackwardFilter,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY);
            break;
        case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
            ReadPointwise(g, *op);
            break;
        case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
        case CUDNN_BACKEND_OPERATION_SOFTMAX_DESCRIPTOR:
            ++g.softmaxLike;
            AddMemoryTensors(g, *op);
            break;
        case CUDNN_BACKEND_OPERATION_DIAGONAL_BAND_MASK_DESCRIPTOR:
            // PyTorch's causal mask (a band without a left bound). A sliding window (a left bound)
            // is priced as causal too: an upper bound of its work.
            g.causal = true;
            break;
        case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:     // dropout inside attention
        case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: // K^T, P^T, dS^T inside attention
        case CUDNN_BACKEND_OPERATION_TRANSPOSE_DESCRIPTOR:
            break;
        case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
            g.sdpaFwd.push_back(op);
            g.causal |= SubgraphIsCausal(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_SUBGRAPH);
            break;
        case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
            g.sdpaBwd.push_back(op);
            g.causal |= SubgraphIsCausal(*op, CUDNN_ATTR_OPERATION_SDPA_BWD_SUBGRAPH);
            break;
        case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
        case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
            g.norms.push_back(op);
            AddMemoryTensors(g, *op);
            break;
        default:
            g.unknown = true;
            break;
        }
    }
    g.pattern = pattern.str();
    return g;
}

// An attention's shape and the bytes of an element of Q, K, V and O.
struct AttentionFacts
{
    AttentionShape shape;
    int elementBytes = 2;
};

// b, h, s_q, s_kv, d of attention from Q [b, h, s_q, d] and K^T [b, h_kv, d, s_kv] (K given as
// [b, h_kv, s_kv, d] when not `kTransposed`).
std::optional<AttentionFacts>
AttentionFrom(const TensorFacts& q, const TensorFacts& k, bool kTransposed)
{
    if (q.dims.size() < 3 || k.dims.size() != q.dims.size())
    {
        return std::nullopt;
    }
    const size_t r = q.dims.size();
    AttentionShape a;
    a.batch = q.dims[0];
    a.heads = r >= 4 ? std::accumulate(q.dims.begin() + 1, q.dims.end() - 2, int64_t(1),
                                       std::multiplies<>())
                     : 1;
    a.seqQ = q.dims[r - 2];
    a.headDim = q.dims[r - 1];
    a.seqK = kTransposed ? k.dims[r - 1] : k.dims[r - 2];
    return AttentionFacts{a, BytesOf(q.dataType)};
}

WorkPart
MemoryPart(double bytes, std::string label)
{
    WorkPart part;
    part.model = WorkPart::Model::Memory;
    part.bytes = bytes;
    part.label = std::move(label);
    return part;
}

// Forward: one flash kernel. Backward, as cuDNN runs it (validation/measurements/h100-2026-11-24
// torch-kernels.jsonl, sdpa-cudnn.bwd): a kernel computing the softmax's row sums D = dO.O (reads
// dO and O, writes one fp32 a row), the flash backward kernel (dQ accumulated in fp32 in the
// workspace) and a kernel converting dQ to the input type (reads 4 bytes, writes 2 an element).
std::shared_ptr<GraphWork>
AttentionWork(const AttentionFacts& facts, bool backward, bool causal)
{
    AttentionShape a = facts.shape;
    const int elementBytes = facts.elementBytes;
    a.backward = backward;
    a.causal = causal;
    auto work = std::make_shared<GraphWork>();
    WorkPart part;
    part.model = WorkPart::Model::Attention;
    part.attention = a;
    part.label = std::string("cudnn sdpa_") + (backward ? "bwd" : "fwd") +
                 " b=" + std::to_string(a.batch) + " h=" + std::to_string(a.heads) +
                 " sq=" + std::to_string(a.seqQ) + " skv=" + std::to_string(a.seqK) +
                 " d=" + std::to_string(a.headDim) + (causal ? " causal" : "");
    if (!backward)
    {
        work->parts.push_back(part);
        return work;
    }
    const double rows = double(a.batch) * a.heads * a.seqQ;
    const double elements = rows * a.headDim;
    work->parts.push_back(MemoryPart(2 * elements * elementBytes + rows * sizeof(float),
                                     "cudnn sdpa_bwd dot(dO, O)"));
    work->parts.push_back(part);
    work->parts.push_back(
        MemoryPart(elements * (sizeof(float) + elementBytes), "cudnn sdpa_bwd convert dQ"));
    // dQ accumulates in fp32 across the key blocks, and the row sums D.
    work->workspaceBytes = int64_t(elements + rows) * int64_t(sizeof(float));
    return work;
}

// The shape comes from Q.K^T: its A is the real Q. The other matmul reading a real A is dO.V^T
// (backward), of the same shape; the rest read a virtual P, P^T, dS or dS^T. K^T may be a real
// tensor with transposed strides or the output of a reshape.
std::optional<AttentionFacts>
DecomposedAttention(const GraphOps& g)
{
    for (const MatmulFacts& m : g.matmuls)
    {
        if (!m.a.isVirtual)
        {
            return AttentionFrom(m.a, m.b, true);
        }
    }
    return AttentionFrom(g.matmuls.front().a, g.matmuls.front().b, true);
}

std::optional<AttentionFacts>
FusedAttention(const Descriptor& op, bool backward)
{
    auto q = TensorOf(Child(op, backward ? CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC
                                         : CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC));
    auto k = TensorOf(Child(op, backward ? CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC
                                         : CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC));
    return q && k ? AttentionFrom(*q, *k, false) : std::nullopt;
}

std::shared_ptr<GraphWork>
GemmWork(WorkPart part)
{
    auto work = std::make_shared<GraphWork>();
    work->parts.push_back(std::move(part));
    return work;
}

std::optional<GemmShape>
MatmulGemm(const MatmulFacts& m, bool tensorCores)
{
    const size_t r = m.a.dims.size();
    if (m.b.dims.size() != r)
    {
        return std::nullopt;
    }
    GemmShape g;
    g.m = m.a.dims[r - 2];
    g.k = m.a.dims[r - 1];
    g.n = m.b.dims[r - 1];
    g.batch =
        std::accumulate(m.c.dims.begin(), m.c.dims.end() - 2, int64_t(1), std::multiplies<>());
    g.inputType = DTypeOf(m.a.dataType);
    g.mathType = MathTypeOf(m.a.dataType, tensorCores);
    g.outputBytes = BytesOf(m.c.dataType);
    return g;
}

} // namespace

namespace eidolon::gpu::dnn
{

Classified
ClassifyGraph(const std::vector<DescriptorPtr>& ops, bool tensorCores)
{
    GraphOps g = ReadOps(ops);
    Classified result;
    result.pattern = "operation graph [" + g.pattern + "]";
    auto fail = [&](cudnnStatus_t status)
    {
        result.status = status;
        return result;
    };
    if (g.unknown)
    {
        return fail(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
    }
    if (!g.sdpaFwd.empty() || !g.sdpaBwd.empty())
    {
        const bool backward = !g.sdpaBwd.empty();
        auto a = FusedAttention(backward ? *g.sdpaBwd.front() : *g.sdpaFwd.front(), backward);
        if (!a || g.sdpaFwd.size() + g.sdpaBwd.size() != 1)
        {
            return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
        }
        result.work = AttentionWork(*a, backward, g.causal);
        return result;
    }
    if (g.matmuls.size() >= 2 && g.softmaxLike > 0 && g.convs.empty())
    {
        auto a = DecomposedAttention(g);
        if (!a)
        {
            return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
        }
        result.work = AttentionWork(*a, g.matmuls.size() >= 3, g.causal);
        return result;
    }
    if (g.convs.size() == 1 && g.matmuls.empty() && g.norms.empty())
    {
        const auto& [direction, t] = g.convs.front();
        auto shape = ConvolutionGemm(direction, t[0], t[1], t[2], tensorCores);
        if (!shape)
        {
            return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
        }
        const char* name = direction == ConvDirection::Forward        ? "cudnn conv_fwd"
                           : direction == ConvDirection::BackwardData ? "cudnn conv_bwd_data"
                                                                      : "cudnn conv_bwd_filter";
        result.work = GemmWork(ConvolutionPart(name, *shape, t[0], t[1], t[2]));
        return result;
    }
    if (g.matmuls.size() == 1 && g.convs.empty() && g.norms.empty() && g.softmaxLike == 0)
    {
        auto shape = MatmulGemm(g.matmuls.front(), tensorCores);
        if (!shape)
        {
            return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
        }
        WorkPart part;
        part.model = WorkPart::Model::Gemm;
        part.gemm = *shape;
        part.label = GemmLabel("cudnn matmul", *shape);
        result.work = GemmWork(part);
        return result;
    }
    if (g.matmuls.empty() && g.convs.empty() && g.norms.empty() && g.memoryBytes == 0)
    {
        // Only virtual tensors: the score-modifier subgraph of a fused SDPA operation (a causal
        // mask, a soft cap), whose cost is part of the attention kernel's.
        result.work = std::make_shared<GraphWork>();
        return result;
    }
    if (g.matmuls.empty() && g.convs.empty() && g.memoryBytes > 0)
    {
        auto work = std::make_shared<GraphWork>();
        WorkPart part;
        part.model = WorkPart::Model::Memory;
        part.bytes = g.memoryBytes;
        part.label = "cudnn " + g.pattern;
        work->parts.push_back(part);
        result.work = work;
        return result;
    }
    return fail(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
}

bool
Submit(cudnnHandle_t handle, const GraphWork& work)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    Stream* stream = emu.ResolveStream(static_cast<void*>(handle->stream), false);
    if (!stream)
    {
        return false;
    }
    const GpuSpec& spec = emu.Spec();
    const Ns floor =
        spec.pricing.kernelMinNs > 0 ? spec.pricing.kernelMinNs : emu.Settings().minKernelNs;
    for (const WorkPart& part : work.parts)
    {
        if (TraceEnabled())
        {
            Warn("cudnn execute: " + part.label);
        }
        emu.Clock().Charge(stream->legacy ? spec::HostCall::LaunchKernelLegacyStream
                                          : spec::HostCall::LaunchKernel);
        switch (part.model)
        {
        case WorkPart::Model::Gemm:
        {
            Price price = emu.Costs().PriceGemm(part.gemm, spec);
            emu.Place(*stream, OpKind::Gemm, price.duration, part.label, price.provider, 0);
            break;
        }
        case WorkPart::Model::Convolution:
        {
            const Ns ns = ConvolutionNs(part.gemm, part.bytes, spec, emu.Settings().minKernelNs);
            emu.Place(*stream, OpKind::Gemm, ns, part.label, "cudnn-convolution", 0);
            break;
        }
        case WorkPart::Model::Attention:
        {
            AttentionShape a = part.attention;
            // cuDNN's attention kernels on Hopper and later are its warp-specialised ones.
            a.kind = spec.computeCapabilityMajor >= 9 ? AttentionKind::Fa3 : AttentionKind::Fa2;
            emu.Place(*stream, OpKind::Kernel, AttentionNs(a, spec, emu.Settings().minKernelNs),
                      part.label, "cudnn-attention", 0);
            break;
        }
        case WorkPart::Model::Memory:
        {
            const Ns ns =
                MemoryBoundNs(part.bytes, part.bytes, spec.pricing.hbmEfficiency, spec, floor);
            emu.Place(*stream, OpKind::Kernel, ns, part.label, "cudnn-memory",
                      uint64_t(part.bytes));
            break;
        }
        }
    }
    return true;
}

} // namespace eidolon::gpu::dnn
