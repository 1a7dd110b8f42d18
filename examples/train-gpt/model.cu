// The model on this rank (model.h).
#include "model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace traingpt
{

// What one layer keeps from its forward for its backward (which pointers are set depends on the
// activation-checkpointing policy; the rest are recomputed).
struct LayerActs
{
    bf16* x = nullptr; // input [tr, d]
    float* st1 = nullptr;
    bf16* ln1 = nullptr; // [tr, d]
    bf16* q = nullptr;   // [b, hq, s, hd]
    bf16* kv = nullptr;  // k then v, each [b, hkv, s, hd]
    bf16* o = nullptr;   // [tf, hq hd], token-major
    float* lse = nullptr;
    bf16* probs = nullptr; // cuBLAS attention: [b, hq, s, s]
    bf16* h = nullptr;     // x + attention [tr, d]
    float* st2 = nullptr;
    bf16* ln2 = nullptr; // [tr, d]
    bf16* fc1 = nullptr; // [tf, fc1 cols]
    bf16* act = nullptr; // [tf, ffn / tp]
};

struct Model::MicroBatchState
{
    int* tokens = nullptr;
    int* targets = nullptr;
    std::vector<LayerActs> layers;
    bf16* headDx = nullptr; // last chunk: d loss / d (input of the head), computed in forward
};

Model::Model(const ModelShape& shape, const Options& options, const Layout& layout, Comms& comms,
             DeviceMemory& memory, Blas& blas, Streams& streams)
    : m_shape(shape)
    , m_opt(options)
    , m_l(layout)
    , m_comms(comms)
    , m_mem(memory)
    , m_blas(blas)
    , m_s(streams)
{
    m_tf = options.localBatch * layout.seqLocal;
    m_tr = options.sequenceParallel ? m_tf / layout.tp : m_tf;
    m_hq = shape.heads / layout.tp;
    m_hkv = shape.kvHeads / layout.tp;
    m_hd = shape.HeadDim();
    m_ffn = shape.ffn / layout.tp;
    m_vocab = layout.vocabPadded / layout.tp;
    m_vocabLo = m_vocab * layout.tpRank;
    m_qkvCols = (m_hq + 2 * m_hkv) * m_hd;
    m_fc1Cols = shape.Gated() ? 2 * m_ffn : m_ffn;
    m_fp8 = options.precision == Precision::Fp8;
    for (cudaStream_t s :
         {m_s.compute, m_s.data, m_s.actSend, m_s.actRecv, m_s.gradSend, m_s.gradRecv, m_s.cp})
    {
        cudaEvent_t e;
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        m_streamEvents[s] = e;
    }
    m_lossSum = m_mem.New<float>(1, m_s.compute, "the loss accumulator");
    m_sumsq = m_mem.New<float>(1, m_s.compute, "the gradient norm accumulator");
    CUDA_CHECK(cudaMemsetAsync(m_lossSum, 0, sizeof(float), m_s.compute));
    BuildUnits();
}

Model::~Model()
{
    for (auto& [s, e] : m_streamEvents)
        cudaEventDestroy(e);
    for (Unit& u : m_units)
        if (u.gatherDone)
            cudaEventDestroy(u.gatherDone);
}

void
Model::WaitFor(cudaStream_t waiter, cudaStream_t signaler)
{
    if (waiter == signaler)
        return;
    cudaEvent_t e = m_streamEvents.at(signaler);
    CUDA_CHECK(cudaEventRecord(e, signaler));
    CUDA_CHECK(cudaStreamWaitEvent(waiter, e, 0));
}

// ------------------------------------------------------------------ parameters

Unit&
Model::NewUnit(const std::string& name, int64_t numel, int64_t replicated, float initStd,
               float outStd, int64_t outOffset, int64_t outNumel)
{
    m_units.emplace_back();
    Unit& u = m_units.back();
    u.name = name;
    u.numel = numel;
    u.replicated = replicated;
    const int dataRanks = m_comms.data.size;
    u.sharded = m_opt.fsdp && dataRanks > 1;
    u.optimizerSharded = m_opt.distributedOptimizer && dataRanks > 1;
    u.shard = u.sharded || u.optimizerSharded ? (numel + dataRanks - 1) / dataRanks : numel;
    u.shardStart = u.sharded || u.optimizerSharded ? u.shard * m_comms.data.rank : 0;
    const int64_t held = u.optimizerSharded ? u.shard * dataRanks : u.shard;
    const std::string what = name + " ";
    u.param = m_mem.New<bf16>(held, m_s.compute, what + "parameters (bf16)");
    u.master = m_mem.New<float>(u.shard, m_s.compute, what + "master weights (fp32)");
    u.m = m_mem.New<float>(u.shard, m_s.compute, what + "AdamW first moments (fp32)");
    u.v = m_mem.New<float>(u.shard, m_s.compute, what + "AdamW second moments (fp32)");
    u.grad = m_mem.New<float>(held, m_s.compute, what + "gradients (fp32)");
    // Sharding pads the last shard: the padding stays zero.
    CUDA_CHECK(cudaMemsetAsync(u.param, 0, held * sizeof(bf16), m_s.compute));
    CUDA_CHECK(cudaMemsetAsync(u.master, 0, u.shard * sizeof(float), m_s.compute));
    CUDA_CHECK(cudaMemsetAsync(u.m, 0, u.shard * sizeof(float), m_s.compute));
    CUDA_CHECK(cudaMemsetAsync(u.v, 0, u.shard * sizeof(float), m_s.compute));
    CUDA_CHECK(cudaMemsetAsync(u.grad, 0, held * sizeof(float), m_s.compute));
    CUDA_CHECK(cudaEventCreateWithFlags(&u.gatherDone, cudaEventDisableTiming));
    // Initialisation: the same values on every data-parallel rank (the seed depends on the unit
    // and the tensor-parallel rank only). Norm weights start at one, biases at zero; matrices are
    // uniform with the given standard deviation, output projections with outStd. Under FSDP each
    // rank initialises its shard of the same flat tensor.
    const uint64_t seed = m_opt.seed * 1000003ULL + uint64_t(m_units.size()) * 7919ULL +
                          uint64_t(m_l.tpRank) * 104729ULL + uint64_t(m_l.ppRank) * 15485863ULL;
    // The distributed optimizer initialises all parameters, as DDP does, with their fp32 values
    // in the (still unused) gradient buffer, and keeps its shard of them as master weights.
    const int64_t lo = u.sharded ? u.shardStart : 0;
    const int64_t hi = u.sharded ? std::min(numel, lo + u.shard) : numel;
    float* values = u.optimizerSharded ? u.grad : u.master;
    if (hi > lo)
    {
        ParamInit(values, u.param, hi - lo, seed + uint64_t(lo), initStd, m_s.compute);
        // Output projections: a second pass over their range with the smaller std.
        int64_t a = std::max(lo, outOffset), b = std::min(hi, outOffset + outNumel);
        if (b > a)
            ParamInit(values + (a - lo), u.param + (a - lo), b - a, seed * 31 + uint64_t(a), outStd,
                      m_s.compute);
    }
    // Norm weights (the replicated prefix) set to one, biases to zero: written by the host.
    if (replicated > 0)
    {
        const int normTensors = m_shape.norm == Norm::LayerNorm ? 2 : 1;
        const int64_t d = m_shape.hidden;
        std::vector<float> ones(size_t(replicated), 0.0f);
        for (int64_t i = 0; i < replicated; i++)
            ones[size_t(i)] = (normTensors == 1 || (i / d) % 2 == 0) ? 1.0f : 0.0f;
        std::vector<bf16> onesB(ones.size());
        for (size_t i = 0; i < ones.size(); i++)
            onesB[i] = __float2bfloat16(ones[i]);
        int64_t a = lo, b = std::min(hi, replicated);
        if (b > a)
        {
            CUDA_CHECK(cudaMemcpyAsync(values, ones.data() + a, (b - a) * sizeof(float),
                                       cudaMemcpyHostToDevice, m_s.compute));
            CUDA_CHECK(cudaMemcpyAsync(u.param, onesB.data() + a, (b - a) * sizeof(bf16),
                                       cudaMemcpyHostToDevice, m_s.compute));
            CUDA_CHECK(cudaStreamSynchronize(m_s.compute)); // the host vectors go away
        }
    }
    if (u.optimizerSharded)
    {
        CUDA_CHECK(cudaMemcpyAsync(u.master, u.grad + u.shardStart, u.shard * sizeof(float),
                                   cudaMemcpyDeviceToDevice, m_s.compute));
        CUDA_CHECK(cudaMemsetAsync(u.grad, 0, held * sizeof(float), m_s.compute));
    }
    return u;
}

void
Model::BuildUnits()
{
    const int64_t d = m_shape.hidden;
    const int normTensors = m_shape.norm == Norm::LayerNorm ? 2 : 1;
    m_offNorm1 = 0;
    m_offNorm1b = d;
    m_offNorm2 = normTensors * d;
    m_offNorm2b = m_offNorm2 + d;
    m_offQkv = 2 * normTensors * d;
    m_offWo = m_offQkv + int64_t(m_qkvCols) * d;
    m_offW1 = m_offWo + d * m_hq * m_hd;
    m_offW2 = m_offW1 + int64_t(m_fc1Cols) * d;
    const int64_t layerNumel = m_offW2 + d * m_ffn;
    const float std = 0.02f, outStd = 0.02f / std::sqrt(2.0f * float(m_shape.layers));
    const int chunksTotal = m_l.pp * m_l.vp;
    for (int v = 0; v < m_l.vp; v++)
    {
        Chunk c;
        c.global = v * m_l.pp + m_l.ppRank;
        c.first = c.global == 0;
        c.last = c.global == chunksTotal - 1;
        if (c.first)
        {
            NewUnit("embedding", int64_t(m_vocab) * d, 0, std, 0, 0, 0);
            c.units.push_back(int(m_units.size()) - 1);
        }
        for (int i = 0; i < m_l.layersPerChunk; i++)
        {
            int layer = c.global * m_l.layersPerChunk + i;
            // Two output projections per layer (attention and MLP) get the smaller std; the
            // second pass covers wo, and w2 gets its own below.
            Unit& u = NewUnit("layer " + std::to_string(layer), layerNumel, 2 * normTensors * d,
                              std, outStd, m_offWo, d * m_hq * m_hd);
            (void)u;
            c.units.push_back(int(m_units.size()) - 1);
        }
        if (c.last)
        {
            NewUnit("head", normTensors * d + int64_t(m_vocab) * d, normTensors * d, std, 0, 0, 0);
            c.units.push_back(int(m_units.size()) - 1);
        }
        m_chunks.push_back(c);
    }
    for (const Unit& u : m_units)
    {
        m_totalParams += u.numel;
        if (u.name != "embedding")
            m_nonEmbeddingParams += u.numel;
    }
}

bf16*
Model::Params(int unit)
{
    Unit& u = m_units[unit];
    if (u.updateGatherInFlight)
    {
        CUDA_CHECK(cudaStreamWaitEvent(m_s.compute, u.gatherDone, 0));
        u.updateGatherInFlight = false;
    }
    if (!u.sharded)
        return u.param;
    Gather(unit);
    CUDA_CHECK(cudaStreamWaitEvent(m_s.compute, u.gatherDone, 0));
    return u.gathered;
}

// FSDP: all-gather a unit's parameters on the data stream, after the compute stream's work so
// far (so that the buffer, if reused from the cache, is no longer read).
void
Model::Gather(int unit)
{
    if (unit < 0 || unit >= int(m_units.size()))
        return;
    Unit& u = m_units[unit];
    if (!u.sharded || u.gathered)
        return;
    WaitFor(m_s.data, m_s.compute);
    u.gathered = m_mem.New<bf16>(u.shard * m_comms.data.size, m_s.data,
                                 (u.name + " all-gathered parameters (FSDP)").c_str());
    NCCL_CHECK(
        ncclAllGather(u.param, u.gathered, u.shard, ncclBfloat16, m_comms.data.comm, m_s.data));
    CUDA_CHECK(cudaEventRecord(u.gatherDone, m_s.data));
}

// Distributed optimizer: every rank gets every shard's updated bf16 parameters (in place). As
// Megatron's overlap-param-gather does it, the gathers go out on the data stream when the next
// step's forward reaches the chunk, each unit's forward waiting only for its own (Params).
void
Model::GatherUpdatedParams(const Chunk& c)
{
    bool ordered = false;
    for (int unit : c.units)
    {
        Unit& u = m_units[unit];
        if (!u.updateGatherDue)
            continue;
        if (!ordered)
            WaitFor(m_s.data, m_s.compute); // after the optimizer wrote this rank's shards
        ordered = true;
        NCCL_CHECK(ncclAllGather(u.param + u.shardStart, u.param, u.shard, ncclBfloat16,
                                 m_comms.data.comm, m_s.data));
        CUDA_CHECK(cudaEventRecord(u.gatherDone, m_s.data));
        u.updateGatherDue = false;
        u.updateGatherInFlight = true;
    }
}

void
Model::FinishParameterGathers()
{
    for (const Chunk& c : m_chunks)
        GatherUpdatedParams(c);
    CUDA_CHECK(cudaStreamSynchronize(m_s.data));
}

void
Model::Release(int unit)
{
    Unit& u = m_units[unit];
    if (u.gathered)
    {
        m_mem.Free(u.gathered, m_s.compute);
        u.gathered = nullptr;
    }
}

float*
Model::Grads(int unit)
{
    Unit& u = m_units[unit];
    if (!u.sharded)
        return u.grad;
    if (!u.fullGrad)
    {
        u.fullGrad = New<float>(u.shard * m_comms.data.size, "FSDP unsharded gradients");
        CUDA_CHECK(cudaMemsetAsync(u.fullGrad, 0, u.shard * m_comms.data.size * sizeof(float),
                                   m_s.compute));
    }
    return u.fullGrad;
}

// After a unit's backward: with sequence parallelism the norm weights' gradients are partial
// sums over the sequence shards (all-reduced over tp). Then, on the data stream so that it
// overlaps the rest of backward: FSDP reduce-scatters this micro-batch's gradients into the
// shard; DDP all-reduces the accumulated gradients once, after the last micro-batch.
void
Model::ReduceGrads(int unit, bool lastMicroBatch)
{
    Unit& u = m_units[unit];
    if (!u.sharded && !lastMicroBatch)
        return;
    float* g = u.sharded ? u.fullGrad : u.grad;
    if (m_opt.sequenceParallel && u.replicated > 0)
        NCCL_CHECK(
            ncclAllReduce(g, g, u.replicated, ncclFloat32, ncclSum, m_comms.tp.comm, m_s.compute));
    if (m_comms.data.size == 1)
        return;
    WaitFor(m_s.data, m_s.compute);
    if (u.sharded)
    {
        float* part = m_mem.New<float>(u.shard, m_s.data, "FSDP reduce-scatter output");
        NCCL_CHECK(
            ncclReduceScatter(g, part, u.shard, ncclFloat32, ncclSum, m_comms.data.comm, m_s.data));
        GradAccumulate(u.grad, part, u.shard, m_s.data);
        m_mem.Free(part, m_s.data);
        m_mem.Free(u.fullGrad, m_s.data);
        u.fullGrad = nullptr;
    }
    else if (u.optimizerSharded)
        // Distributed optimizer: each rank updates only its shard, so it needs only that shard's
        // sum (in place: NCCL's rule is recvbuff = sendbuff + rank x recvcount).
        NCCL_CHECK(ncclReduceScatter(g, g + u.shardStart, u.shard, ncclFloat32, ncclSum,
                                     m_comms.data.comm, m_s.data));
    else
        NCCL_CHECK(ncclAllReduce(g, g, u.numel, ncclFloat32, ncclSum, m_comms.data.comm, m_s.data));
}

// ------------------------------------------------------------------ tensor parallelism

// Sequence parallelism: all-gather the tp shards of [tr, cols] into a new [tf, cols]; otherwise
// the input already is the whole sequence.
bf16*
Model::TpGather(const bf16* shard, int cols, cudaStream_t s)
{
    if (!m_opt.sequenceParallel)
        return const_cast<bf16*>(shard);
    bf16* full = m_mem.New<bf16>(size_t(m_tf) * cols, s, "sequence-parallel all-gather");
    NCCL_CHECK(ncclAllGather(shard, full, size_t(m_tr) * cols, ncclBfloat16, m_comms.tp.comm, s));
    return full;
}

// Row-parallel output [tf, cols] (partial sums over tp): reduce-scatter to a new [tr, cols] under
// sequence parallelism (the input is freed), all-reduce in place otherwise.
bf16*
Model::TpReduce(bf16* partial, int cols)
{
    if (m_l.tp == 1)
        return partial;
    if (!m_opt.sequenceParallel)
    {
        NCCL_CHECK(ncclAllReduce(partial, partial, size_t(m_tf) * cols, ncclBfloat16, ncclSum,
                                 m_comms.tp.comm, m_s.compute));
        return partial;
    }
    bf16* shard = New<bf16>(size_t(m_tr) * cols, "sequence-parallel reduce-scatter");
    NCCL_CHECK(ncclReduceScatter(partial, shard, size_t(m_tr) * cols, ncclBfloat16, ncclSum,
                                 m_comms.tp.comm, m_s.compute));
    Drop(partial);
    return shard;
}

void
Model::LinearFwd(const bf16* x, const bf16* w, bf16* y, int m, int n, int k, bool fp8)
{
    if (fp8)
    {
        Fp8GemmArgs g;
        g.m = m, g.n = n, g.k = k;
        g.x = Fp8Copy(x, m, k, Fp8Format::E4M3, false, "fp8 copy of a GEMM input");
        g.w = Fp8Copy(w, n, k, Fp8Format::E4M3, false, "fp8 copy of a weight");
        g.y = y;
        GemmFp8(m_blas, m_s.compute, g);
        Drop(const_cast<void*>(g.x));
        Drop(const_cast<void*>(g.w));
        return;
    }
    GemmArgs g;
    g.transB = true;
    g.m = m, g.n = n, g.k = k;
    g.a = x, g.lda = k;
    g.b = w, g.ldb = k;
    g.c = y, g.ldc = n;
    Gemm(m_blas, m_s.compute, g);
}

// An fp8 copy of bf16 [rows, cols] (transposed: [cols, rows]), from the caching allocator.
void*
Model::Fp8Copy(const bf16* in, int rows, int cols, Fp8Format format, bool transpose,
               const char* what)
{
    void* out = m_mem.Alloc(size_t(rows) * cols, m_s.compute, what);
    CastToFp8(in, out, rows, cols, format, transpose, m_s.compute);
    return out;
}

// fp8 backward as Transformer Engine's hybrid recipe runs it: gradients in e5m2, weights and
// inputs in e4m3; every operand K-major, so dgrad takes the weight transposed and wgrad the
// gradient and the input transposed (TE fuses each cast with its transpose and keeps the
// transposed input from forward; here each is its own cast kernel in backward).
void
Model::LinearBwdFp8(const bf16* dy, const bf16* x, const bf16* w, bf16* dx, float* dw, int m, int n,
                    int k)
{
    if (dx)
    {
        Fp8GemmArgs g; // dx[m, k] = dy[m, n] (w^T)[k, n]^T
        g.m = m, g.n = k, g.k = n;
        g.x = Fp8Copy(dy, m, n, Fp8Format::E5M2, false, "fp8 copy of an output gradient");
        g.xType = CUDA_R_8F_E5M2;
        g.w = Fp8Copy(w, n, k, Fp8Format::E4M3, true, "fp8 transposed copy of a weight");
        g.y = dx;
        GemmFp8(m_blas, m_s.compute, g);
        Drop(const_cast<void*>(g.x));
        Drop(const_cast<void*>(g.w));
    }
    Fp8GemmArgs g; // dw[n, k] += (dy^T)[n, m] (x^T)[k, m]^T
    g.m = n, g.n = k, g.k = m;
    g.x = Fp8Copy(dy, m, n, Fp8Format::E5M2, true, "fp8 transposed copy of an output gradient");
    g.xType = CUDA_R_8F_E5M2;
    g.w = Fp8Copy(x, m, k, Fp8Format::E4M3, true, "fp8 transposed copy of a GEMM input");
    g.y = dw, g.yType = CUDA_R_32F, g.beta = 1.0f;
    GemmFp8(m_blas, m_s.compute, g);
    Drop(const_cast<void*>(g.x));
    Drop(const_cast<void*>(g.w));
}

// dx[m, k] = dy[m, n] w[n, k] (when dx is given); dw[n, k] += dy^T x (fp32).
void
Model::LinearBwd(const bf16* dy, const bf16* x, const bf16* w, bf16* dx, float* dw, int m, int n,
                 int k, bool fp8)
{
    if (fp8)
    {
        LinearBwdFp8(dy, x, w, dx, dw, m, n, k);
        return;
    }
    if (dx)
    {
        GemmArgs g;
        g.m = m, g.n = k, g.k = n;
        g.a = dy, g.lda = n;
        g.b = w, g.ldb = k;
        g.c = dx, g.ldc = k;
        Gemm(m_blas, m_s.compute, g);
    }
    GemmArgs g;
    g.transA = true;
    g.m = n, g.n = k, g.k = m;
    g.a = dy, g.lda = n;
    g.b = x, g.ldb = k;
    g.c = dw, g.typeC = CUDA_R_32F, g.ldc = k;
    g.beta = 1.0f;
    Gemm(m_blas, m_s.compute, g);
}

// ------------------------------------------------------------------ embedding and head

bf16*
Model::EmbeddingForward(int unit, const int* tokens)
{
    const int d = m_shape.hidden;
    bf16* full = New<bf16>(size_t(m_tf) * d, "embedding output");
    EmbeddingFwd(tokens, Params(unit), full, m_tf, d, m_vocabLo, m_vocabLo + m_vocab, m_s.compute);
    return TpReduce(full, d); // vocab-parallel: each tp rank holds its vocabulary's rows
}

void
Model::EmbeddingBackward(int unit, const int* tokens, bf16* dx)
{
    const int d = m_shape.hidden;
    bf16* full = TpGather(dx, d, m_s.compute);
    EmbeddingBwd(tokens, full, Grads(unit), m_tf, d, m_vocabLo, m_vocabLo + m_vocab, m_s.compute);
    if (full != dx)
        Drop(full);
}

// Final norm, output projection and vocab-parallel cross-entropy, forward and backward at once:
// the logits live only here. Returns d loss / d x [tr, d].
bf16*
Model::HeadForwardBackward(int unit, bf16* x, const int* targets)
{
    const int d = m_shape.hidden;
    const bool ln = m_shape.norm == Norm::LayerNorm;
    const int normNumel = (ln ? 2 : 1) * d;
    bf16* w = Params(unit);
    float* g = Grads(unit);
    bf16* normed = New<bf16>(size_t(m_tr) * d, "final norm output");
    float* stats = New<float>(size_t(m_tr) * 2, "final norm statistics");
    NormFwd(ln, x, w, w + d, normed, stats, m_tr, d, m_s.compute);
    bf16* normedFull = TpGather(normed, d, m_s.compute);
    bf16* logits = New<bf16>(size_t(m_tf) * m_vocab, "logits");
    // The output layer stays bf16 under --precision fp8, as in Megatron (it is not a Transformer
    // Engine layer).
    LinearFwd(normedFull, w + normNumel, logits, m_tf, m_vocab, d, false);

    float* rows = New<float>(size_t(m_tf) * 4, "cross-entropy row statistics");
    float *rowMax = rows, *rowSum = rows + m_tf, *rowTarget = rows + 2 * m_tf,
          *globalMax = rows + 3 * m_tf;
    const int chunks = (m_vocab + kCeChunk - 1) / kCeChunk;
    float* scratch = New<float>(size_t(m_tf) * chunks * 2, "cross-entropy scratch");
    CrossEntropyStats(logits, targets, rowMax, rowSum, rowTarget, scratch, m_tf, m_vocab, m_vocabLo,
                      m_s.compute);
    if (m_l.tp > 1)
    {
        NCCL_CHECK(ncclAllReduce(rowMax, globalMax, m_tf, ncclFloat32, ncclMax, m_comms.tp.comm,
                                 m_s.compute));
        CrossEntropyRescale(rowMax, globalMax, rowSum, m_tf, m_s.compute);
        // sums and target logits in one call: they are adjacent
        NCCL_CHECK(ncclAllReduce(rowSum, rowSum, 2 * size_t(m_tf), ncclFloat32, ncclSum,
                                 m_comms.tp.comm, m_s.compute));
        rowMax = globalMax;
    }
    // The loss is the mean over the global batch's tokens: each rank's gradient is scaled by one
    // over their number, and gradients are summed over data-parallel ranks and micro-batches.
    const double globalTokens =
        double(m_l.microBatches) * m_l.dp * m_opt.localBatch * m_shape.seqLen;
    CrossEntropyLossAndGrad(logits, targets, rowMax, rowSum, rowTarget, m_lossSum, m_tf, m_vocab,
                            m_vocabLo, 1.0f / float(m_l.tp), float(1.0 / globalTokens),
                            m_s.compute);
    Drop(scratch);
    Drop(rows);
    bf16* dnormed = New<bf16>(size_t(m_tf) * d, "final norm output gradient");
    LinearBwd(logits, normedFull, w + normNumel, dnormed, g + normNumel, m_tf, m_vocab, d, false);
    Drop(logits);
    if (normedFull != normed)
        Drop(normedFull);
    dnormed = TpReduce(dnormed, d);
    bf16* dx = New<bf16>(size_t(m_tr) * d, "head input gradient");
    NormBwd(ln, x, w, stats, dnormed, nullptr, dx, g, g + d, m_tr, d, m_s.compute);
    Drop(dnormed);
    Drop(normed);
    Drop(stats);
    return dx;
}

// ------------------------------------------------------------------ attention

// The parts of a sequence this rank holds: the whole local sequence without context
// parallelism; under it, the halves holding chunks r and 2 cp - 1 - r of the 2 cp chunks, each
// (batch x s / 2) tokens, one after the other.
std::vector<Model::SeqPart>
Model::SeqParts() const
{
    const int b = m_opt.localBatch, s = m_l.seqLocal;
    if (m_l.cp == 1)
        return {SeqPart{0, s, 0}};
    const int hs = s / 2;
    const int chunks[2] = {m_l.cpRank, 2 * m_l.cp - 1 - m_l.cpRank};
    return {SeqPart{0, hs, chunks[0] * hs}, SeqPart{int64_t(b) * hs, hs, chunks[1] * hs}};
}

// The attention blocks of ring step `step` (keys and values of cp rank src = r - step): query half
// against key half, causal or whole. With chunks r, 2cp-1-r here and src, 2cp-1-src there:
// src = r: the diagonal (chunk r on itself, chunk 2cp-1-r on chunk r and on itself);
// src < r: chunk src precedes both query chunks, chunk 2cp-1-src follows both;
// src > r: chunk r precedes both key chunks, chunk 2cp-1-r follows both.
// Each step is two (s/2)^2 blocks of work, so every rank computes the same.
std::vector<Model::CpBlock>
Model::CpBlocks(int step) const
{
    const int r = m_l.cpRank, src = (r - step + m_l.cp) % m_l.cp;
    if (src == r)
        return {CpBlock{0, 0, true}, CpBlock{1, 0, false}, CpBlock{1, 1, true}};
    if (src < r)
        return {CpBlock{0, 0, false}, CpBlock{1, 0, false}};
    return {CpBlock{1, 0, false}, CpBlock{1, 1, false}};
}

// Flash attention; under context parallelism, ring attention: the key/value chunks travel around
// the cp ranks (each exchange on the cp stream overlapping the previous chunk's kernels), and each
// block's result is merged into the running output by its log-sum-exp. Load-balanced as Megatron
// and Transformer Engine do it: the sequence is cut into 2 cp chunks and cp rank r holds chunks r
// and 2 cp - 1 - r (SeqParts), so every rank does the same causal attention work (CpBlocks).
void
Model::AttentionForward(LayerActs& a)
{
    const int b = m_opt.localBatch, s = m_l.seqLocal;
    const size_t kvElems = size_t(b) * m_hkv * s * m_hd;
    a.o = New<bf16>(size_t(m_tf) * m_hq * m_hd, "attention output");
    a.lse = New<float>(size_t(b) * m_hq * s, "attention log-sum-exp");
    if (m_opt.attention == AttentionImpl::Cublas)
    {
        const int g = m_hq / m_hkv;
        float* scores = New<float>(size_t(b) * m_hq * s * s, "attention scores (cuBLAS path)");
        a.probs = New<bf16>(size_t(b) * m_hq * s * s, "attention probabilities (cuBLAS path)");
        GemmArgs sc; // scores[g s, s] = Q_group K^T, one batch per (b, kv head)
        sc.transB = true;
        sc.m = g * s, sc.n = s, sc.k = m_hd;
        sc.a = a.q, sc.lda = m_hd, sc.strideA = (long long)g * s * m_hd;
        sc.b = a.kv, sc.ldb = m_hd, sc.strideB = (long long)s * m_hd;
        sc.c = scores, sc.typeC = CUDA_R_32F, sc.ldc = s, sc.strideC = (long long)g * s * s;
        sc.batch = b * m_hkv;
        Gemm(m_blas, m_s.compute, sc);
        SoftmaxFwd(scores, a.probs, b * m_hq * s, s, 1.0f / std::sqrt(float(m_hd)), m_s.compute);
        Drop(scores);
        const bf16* v = a.kv + kvElems;
        for (int bi = 0; bi < b; bi++)
            for (int gi = 0; gi < g; gi++)
            {
                GemmArgs pv; // O[s, hd] (token-major) = P V, one batch per kv head
                pv.m = s, pv.n = m_hd, pv.k = s;
                pv.a = a.probs + ((size_t(bi) * m_hkv) * g + gi) * s * s, pv.lda = s;
                pv.strideA = (long long)g * s * s;
                pv.b = v + size_t(bi) * m_hkv * s * m_hd, pv.ldb = m_hd;
                pv.strideB = (long long)s * m_hd;
                pv.c = a.o + size_t(bi) * s * m_hq * m_hd + size_t(gi) * m_hd;
                pv.ldc = m_hq * m_hd, pv.strideC = (long long)g * m_hd;
                pv.batch = m_hkv;
                Gemm(m_blas, m_s.compute, pv);
            }
        return;
    }
    if (m_l.cp == 1)
    {
        FlashAttentionFwd(a.q, a.kv, a.kv + kvElems, nullptr, a.lse, a.o, false, true, b, s, m_hq,
                          m_hkv, m_hd, m_s.compute);
        return;
    }
    // Every per-token tensor of a half is contiguous ((half, batch, position) order): a half is
    // a batch of b sequences of s / 2 tokens to the kernels.
    const int hs = s / 2;
    const size_t qHalf = size_t(b) * m_hq * hs * m_hd, kvHalf = kvElems / 2,
                 lseHalf = size_t(b) * m_hq * hs;
    float* oAcc = New<float>(size_t(m_tf) * m_hq * m_hd, "ring attention running output");
    // The last block that adds to each query half writes the bf16 output.
    std::pair<int, size_t> lastBlock[2];
    for (int step = 0; step < m_l.cp; step++)
    {
        const std::vector<CpBlock> blocks = CpBlocks(step);
        for (size_t i = 0; i < blocks.size(); i++)
            lastBlock[blocks[i].qHalf] = {step, i};
    }
    bool merged[2] = {false, false};
    bf16* cur = a.kv;
    bf16* next = nullptr;
    const int r = m_l.cpRank, cp = m_l.cp;
    for (int step = 0; step < cp; step++)
    {
        if (step + 1 < cp)
        {
            next = New<bf16>(2 * kvElems, "ring attention key/value in flight");
            WaitFor(m_s.cp, m_s.compute);
            NCCL_CHECK(ncclGroupStart());
            NCCL_CHECK(
                ncclSend(cur, 2 * kvElems, ncclBfloat16, (r + 1) % cp, m_comms.cp.comm, m_s.cp));
            NCCL_CHECK(ncclRecv(next, 2 * kvElems, ncclBfloat16, (r - 1 + cp) % cp, m_comms.cp.comm,
                                m_s.cp));
            NCCL_CHECK(ncclGroupEnd());
        }
        const std::vector<CpBlock> blocks = CpBlocks(step);
        for (size_t i = 0; i < blocks.size(); i++)
        {
            const CpBlock& k = blocks[i];
            const bool last = lastBlock[k.qHalf] == std::make_pair(step, i);
            const bf16* kh = cur + k.kvHalf * kvHalf;
            FlashAttentionFwd(a.q + k.qHalf * qHalf, kh, kh + kvElems, oAcc + k.qHalf * qHalf,
                              a.lse + k.qHalf * lseHalf, last ? a.o + k.qHalf * qHalf : nullptr,
                              merged[k.qHalf], k.causal, b, hs, m_hq, m_hkv, m_hd, m_s.compute);
            merged[k.qHalf] = true;
        }
        if (step + 1 < cp)
        {
            WaitFor(m_s.compute, m_s.cp);
            if (cur != a.kv)
                m_mem.Free(cur, m_s.cp);
            cur = next;
        }
    }
    if (cur != a.kv)
        Drop(cur);
    Drop(oAcc);
}

void
Model::AttentionBackward(LayerActs& a, const bf16* dout, float* dq, float* dk, float* dv)
{
    const int b = m_opt.localBatch, s = m_l.seqLocal;
    const size_t kvElems = size_t(b) * m_hkv * s * m_hd;
    if (m_opt.attention == AttentionImpl::Cublas)
    {
        const int g = m_hq / m_hkv;
        const bf16* k = a.kv;
        const bf16* v = a.kv + kvElems;
        float* dprobs = New<float>(size_t(b) * m_hq * s * s, "attention probability gradients");
        for (int bi = 0; bi < b; bi++)
            for (int gi = 0; gi < g; gi++)
            {
                const bf16* dO = dout + size_t(bi) * s * m_hq * m_hd + size_t(gi) * m_hd;
                GemmArgs dp; // dP[s, s] = dO V^T
                dp.transB = true;
                dp.m = s, dp.n = s, dp.k = m_hd;
                dp.a = dO, dp.lda = m_hq * m_hd, dp.strideA = (long long)g * m_hd;
                dp.b = v + size_t(bi) * m_hkv * s * m_hd, dp.ldb = m_hd;
                dp.strideB = (long long)s * m_hd;
                dp.c = dprobs + ((size_t(bi) * m_hkv) * g + gi) * s * s, dp.typeC = CUDA_R_32F;
                dp.ldc = s, dp.strideC = (long long)g * s * s;
                dp.batch = m_hkv;
                Gemm(m_blas, m_s.compute, dp);
                GemmArgs gv; // dV[s, hd] += P^T dO
                gv.transA = true;
                gv.m = s, gv.n = m_hd, gv.k = s;
                gv.a = a.probs + ((size_t(bi) * m_hkv) * g + gi) * s * s, gv.lda = s;
                gv.strideA = (long long)g * s * s;
                gv.b = dO, gv.ldb = m_hq * m_hd, gv.strideB = (long long)g * m_hd;
                gv.c = dv + size_t(bi) * m_hkv * s * m_hd, gv.typeC = CUDA_R_32F, gv.ldc = m_hd;
                gv.strideC = (long long)s * m_hd;
                gv.batch = m_hkv;
                gv.beta = 1.0f;
                Gemm(m_blas, m_s.compute, gv);
            }
        bf16* dscores = New<bf16>(size_t(b) * m_hq * s * s, "attention score gradients");
        SoftmaxBwd(a.probs, dprobs, dscores, b * m_hq * s, s, 1.0f / std::sqrt(float(m_hd)),
                   m_s.compute);
        Drop(dprobs);
        GemmArgs gq; // dQ_group[g s, hd] = dS K
        gq.m = g * s, gq.n = m_hd, gq.k = s;
        gq.a = dscores, gq.lda = s, gq.strideA = (long long)g * s * s;
        gq.b = k, gq.ldb = m_hd, gq.strideB = (long long)s * m_hd;
        gq.c = dq, gq.typeC = CUDA_R_32F, gq.ldc = m_hd, gq.strideC = (long long)g * s * m_hd;
        gq.batch = b * m_hkv;
        Gemm(m_blas, m_s.compute, gq);
        GemmArgs gk; // dK[s, hd] = dS_group^T Q_group
        gk.transA = true;
        gk.m = s, gk.n = m_hd, gk.k = g * s;
        gk.a = dscores, gk.lda = s, gk.strideA = (long long)g * s * s;
        gk.b = a.q, gk.ldb = m_hd, gk.strideB = (long long)g * s * m_hd;
        gk.c = dk, gk.typeC = CUDA_R_32F, gk.ldc = m_hd, gk.strideC = (long long)s * m_hd;
        gk.batch = b * m_hkv;
        Gemm(m_blas, m_s.compute, gk);
        Drop(dscores);
        return;
    }
    float* delta = New<float>(size_t(b) * m_hq * s, "attention backward row dot products");
    if (m_l.cp == 1)
    {
        FlashAttentionBwdDot(a.o, dout, delta, b, s, m_hq, m_hd, m_s.compute);
        FlashAttentionBwd(a.q, a.kv, a.kv + kvElems, dout, a.lse, delta, dq, dk, dv, true, b, s,
                          m_hq, m_hkv, m_hd, m_s.compute);
        Drop(delta);
        return;
    }
    // The two halves as a batch of 2 b sequences of s / 2 (see AttentionForward).
    const int hs = s / 2;
    const size_t qHalf = size_t(b) * m_hq * hs * m_hd, kvHalf = kvElems / 2,
                 lseHalf = size_t(b) * m_hq * hs;
    FlashAttentionBwdDot(a.o, dout, delta, 2 * b, hs, m_hq, m_hd, m_s.compute);
    // Ring: keys/values travel with their gradient accumulators; after cp exchanges each
    // accumulator is back with the rank that owns the chunk (the last exchange carries only it).
    const int r = m_l.cpRank, cp = m_l.cp;
    bf16* kvCur = a.kv;
    float* dkvCur = New<float>(2 * kvElems, "ring attention key/value gradients");
    CUDA_CHECK(cudaMemsetAsync(dkvCur, 0, 2 * kvElems * sizeof(float), m_s.compute));
    for (int step = 0; step < cp; step++)
    {
        for (const CpBlock& k : CpBlocks(step))
        {
            const size_t kq = k.qHalf * qHalf, kk = k.kvHalf * kvHalf;
            FlashAttentionBwd(a.q + kq, kvCur + kk, kvCur + kvElems + kk, dout + kq,
                              a.lse + k.qHalf * lseHalf, delta + k.qHalf * lseHalf, dq + kq,
                              dkvCur + kk, dkvCur + kvElems + kk, k.causal, b, hs, m_hq, m_hkv,
                              m_hd, m_s.compute);
        }
        const bool lastExchange = step + 1 == cp;
        bf16* kvNext = lastExchange ? nullptr : New<bf16>(2 * kvElems, "ring key/value in flight");
        float* dkvNext = New<float>(2 * kvElems, "ring key/value gradients in flight");
        WaitFor(m_s.cp, m_s.compute);
        NCCL_CHECK(ncclGroupStart());
        if (!lastExchange)
        {
            NCCL_CHECK(
                ncclSend(kvCur, 2 * kvElems, ncclBfloat16, (r + 1) % cp, m_comms.cp.comm, m_s.cp));
            NCCL_CHECK(ncclRecv(kvNext, 2 * kvElems, ncclBfloat16, (r - 1 + cp) % cp,
                                m_comms.cp.comm, m_s.cp));
        }
        NCCL_CHECK(
            ncclSend(dkvCur, 2 * kvElems, ncclFloat32, (r + 1) % cp, m_comms.cp.comm, m_s.cp));
        NCCL_CHECK(ncclRecv(dkvNext, 2 * kvElems, ncclFloat32, (r - 1 + cp) % cp, m_comms.cp.comm,
                            m_s.cp));
        NCCL_CHECK(ncclGroupEnd());
        WaitFor(m_s.compute, m_s.cp);
        if (kvCur != a.kv)
            m_mem.Free(kvCur, m_s.cp);
        m_mem.Free(dkvCur, m_s.cp);
        kvCur = kvNext;
        dkvCur = dkvNext;
    }
    // dkvCur now holds this rank's chunk's gradients: add them to dk, dv (contiguous).
    GradAccumulate(dk, dkvCur, int64_t(2 * kvElems), m_s.compute);
    Drop(dkvCur);
    Drop(delta);
}

// ------------------------------------------------------------------ layers

void
Model::FreeLayerActs(LayerActs& a, bool keepInput)
{
    bf16* x = a.x;
    for (void* p :
         {(void*)a.ln1, (void*)a.q, (void*)a.kv, (void*)a.o, (void*)a.probs, (void*)a.h,
          (void*)a.ln2, (void*)a.fc1, (void*)a.act, (void*)a.st1, (void*)a.st2, (void*)a.lse})
        Drop(p);
    a = LayerActs{};
    if (keepInput)
        a.x = x;
    else
        Drop(x);
}

// One transformer layer; a.x holds the input. Returns the output [tr, d].
bf16*
Model::LayerForwardImpl(int unit, LayerActs& a)
{
    const int d = m_shape.hidden, b = m_opt.localBatch, s = m_l.seqLocal;
    const bool ln = m_shape.norm == Norm::LayerNorm;
    bf16* w = Params(unit);
    a.st1 = New<float>(size_t(m_tr) * 2, "norm statistics");
    a.ln1 = New<bf16>(size_t(m_tr) * d, "attention norm output");
    NormFwd(ln, a.x, w + m_offNorm1, w + m_offNorm1b, a.ln1, a.st1, m_tr, d, m_s.compute);
    bf16* ln1g = TpGather(a.ln1, d, m_s.compute);
    bf16* qkv = New<bf16>(size_t(m_tf) * m_qkvCols, "qkv projection output");
    LinearFwd(ln1g, w + m_offQkv, qkv, m_tf, m_qkvCols, d, m_fp8);
    if (ln1g != a.ln1)
        Drop(ln1g);
    const size_t kvElems = size_t(b) * m_hkv * s * m_hd;
    a.q = New<bf16>(size_t(b) * m_hq * s * m_hd, "queries");
    a.kv = New<bf16>(2 * kvElems, "keys and values");
    for (const SeqPart& p : SeqParts())
        RotaryFwd(qkv + p.tokenOffset * m_qkvCols, a.q + p.tokenOffset * m_hq * m_hd,
                  a.kv + p.tokenOffset * m_hkv * m_hd,
                  a.kv + kvElems + p.tokenOffset * m_hkv * m_hd, b, p.len, m_hq, m_hkv, m_hd, p.pos,
                  float(m_shape.ropeTheta), m_s.compute);
    Drop(qkv);
    AttentionForward(a);
    bf16* proj = New<bf16>(size_t(m_tf) * d, "attention projection output");
    LinearFwd(a.o, w + m_offWo, proj, m_tf, d, m_hq * m_hd, m_fp8);
    proj = TpReduce(proj, d);
    a.h = New<bf16>(size_t(m_tr) * d, "attention residual");
    ResidualAdd(a.x, proj, a.h, int64_t(m_tr) * d, m_s.compute);
    Drop(proj);
    a.st2 = New<float>(size_t(m_tr) * 2, "norm statistics");
    a.ln2 = New<bf16>(size_t(m_tr) * d, "MLP norm output");
    NormFwd(ln, a.h, w + m_offNorm2, w + m_offNorm2b, a.ln2, a.st2, m_tr, d, m_s.compute);
    bf16* ln2g = TpGather(a.ln2, d, m_s.compute);
    a.fc1 = New<bf16>(size_t(m_tf) * m_fc1Cols, "MLP input projection output");
    LinearFwd(ln2g, w + m_offW1, a.fc1, m_tf, m_fc1Cols, d, m_fp8);
    if (ln2g != a.ln2)
        Drop(ln2g);
    a.act = New<bf16>(size_t(m_tf) * m_ffn, "MLP activation output");
    ActivationFwd(ActKindOf(), a.fc1, a.act, m_tf, m_ffn, m_s.compute);
    bf16* out = New<bf16>(size_t(m_tf) * d, "MLP output projection output");
    LinearFwd(a.act, w + m_offW2, out, m_tf, d, m_ffn, m_fp8);
    out = TpReduce(out, d);
    bf16* y = New<bf16>(size_t(m_tr) * d, "layer output");
    ResidualAdd(a.h, out, y, int64_t(m_tr) * d, m_s.compute);
    Drop(out);
    return y;
}

ActKind
Model::ActKindOf() const
{
    switch (m_shape.activation)
    {
    case Activation::SwiGlu:
        return ActKind::SwiGlu;
    case Activation::SquaredRelu:
        return ActKind::SquaredRelu;
    default:
        return ActKind::Gelu;
    }
}

bf16*
Model::LayerBackward(int unit, LayerActs& a, bf16* dy)
{
    const int d = m_shape.hidden, b = m_opt.localBatch, s = m_l.seqLocal;
    const bool ln = m_shape.norm == Norm::LayerNorm;
    bf16* w = Params(unit);
    float* g = Grads(unit);
    if (m_opt.ac == Checkpointing::Full)
        Drop(LayerForwardImpl(unit, a));
    else if (m_opt.ac == Checkpointing::Selective)
    {
        a.ln1 = New<bf16>(size_t(m_tr) * d, "recomputed attention norm output");
        NormFwd(ln, a.x, w + m_offNorm1, w + m_offNorm1b, a.ln1, a.st1, m_tr, d, m_s.compute);
        a.ln2 = New<bf16>(size_t(m_tr) * d, "recomputed MLP norm output");
        NormFwd(ln, a.h, w + m_offNorm2, w + m_offNorm2b, a.ln2, a.st2, m_tr, d, m_s.compute);
        a.act = New<bf16>(size_t(m_tf) * m_ffn, "recomputed MLP activation output");
        ActivationFwd(ActKindOf(), a.fc1, a.act, m_tf, m_ffn, m_s.compute);
    }
    // MLP
    bf16* dyFull = TpGather(dy, d, m_s.compute);
    bf16* dact = New<bf16>(size_t(m_tf) * m_ffn, "MLP activation gradient");
    LinearBwd(dyFull, a.act, w + m_offW2, dact, g + m_offW2, m_tf, d, m_ffn, m_fp8);
    if (dyFull != dy)
        Drop(dyFull);
    bf16* dfc1 = New<bf16>(size_t(m_tf) * m_fc1Cols, "MLP input projection gradient");
    ActivationBwd(ActKindOf(), a.fc1, dact, dfc1, m_tf, m_ffn, m_s.compute);
    Drop(dact);
    bf16* ln2g = TpGather(a.ln2, d, m_s.compute);
    bf16* dln2 = New<bf16>(size_t(m_tf) * d, "MLP norm output gradient");
    LinearBwd(dfc1, ln2g, w + m_offW1, dln2, g + m_offW1, m_tf, m_fc1Cols, d, m_fp8);
    Drop(dfc1);
    if (ln2g != a.ln2)
        Drop(ln2g);
    dln2 = TpReduce(dln2, d);
    bf16* dh = New<bf16>(size_t(m_tr) * d, "attention residual gradient");
    NormBwd(ln, a.h, w + m_offNorm2, a.st2, dln2, dy, dh, g + m_offNorm2, g + m_offNorm2b, m_tr, d,
            m_s.compute);
    Drop(dln2);
    Drop(dy);
    // attention
    bf16* dhFull = TpGather(dh, d, m_s.compute);
    bf16* dO = New<bf16>(size_t(m_tf) * m_hq * m_hd, "attention output gradient");
    LinearBwd(dhFull, a.o, w + m_offWo, dO, g + m_offWo, m_tf, d, m_hq * m_hd, m_fp8);
    if (dhFull != dh)
        Drop(dhFull);
    const size_t qElems = size_t(b) * m_hq * s * m_hd, kvElems = size_t(b) * m_hkv * s * m_hd;
    float* dq = New<float>(qElems, "query gradients (fp32)");
    float* dkv = New<float>(2 * kvElems, "key and value gradients (fp32)");
    CUDA_CHECK(cudaMemsetAsync(dq, 0, qElems * sizeof(float), m_s.compute));
    CUDA_CHECK(cudaMemsetAsync(dkv, 0, 2 * kvElems * sizeof(float), m_s.compute));
    AttentionBackward(a, dO, dq, dkv, dkv + kvElems);
    Drop(dO);
    bf16* dqkv = New<bf16>(size_t(m_tf) * m_qkvCols, "qkv projection gradient");
    for (const SeqPart& p : SeqParts())
        RotaryBwd(dq + p.tokenOffset * m_hq * m_hd, dkv + p.tokenOffset * m_hkv * m_hd,
                  dkv + kvElems + p.tokenOffset * m_hkv * m_hd, dqkv + p.tokenOffset * m_qkvCols, b,
                  p.len, m_hq, m_hkv, m_hd, p.pos, float(m_shape.ropeTheta), m_s.compute);
    Drop(dq);
    Drop(dkv);
    bf16* ln1g = TpGather(a.ln1, d, m_s.compute);
    bf16* dln1 = New<bf16>(size_t(m_tf) * d, "attention norm output gradient");
    LinearBwd(dqkv, ln1g, w + m_offQkv, dln1, g + m_offQkv, m_tf, m_qkvCols, d, m_fp8);
    Drop(dqkv);
    if (ln1g != a.ln1)
        Drop(ln1g);
    dln1 = TpReduce(dln1, d);
    bf16* dx = New<bf16>(size_t(m_tr) * d, "layer input gradient");
    NormBwd(ln, a.x, w + m_offNorm1, a.st1, dln1, dh, dx, g + m_offNorm1, g + m_offNorm1b, m_tr, d,
            m_s.compute);
    Drop(dln1);
    Drop(dh);
    FreeLayerActs(a, false);
    return dx;
}

// ------------------------------------------------------------------ chunks and pipeline

void
Model::Forward(int step, int microBatch, int virtualChunk)
{
    Chunk& c = m_chunks[virtualChunk];
    const int d = m_shape.hidden;
    const bool lastMicroBatch = ++m_forwardsDone[virtualChunk] == m_l.microBatches;
    GatherUpdatedParams(c);
    auto st = std::make_unique<MicroBatchState>();
    if (c.first || c.last)
    {
        // The same data on every rank of a data-parallel replica (tp, cp and pp peers); each cp
        // rank takes its chunk of the sequence.
        st->tokens = New<int>(m_tf, "input tokens");
        st->targets = New<int>(m_tf, "target tokens");
        const uint64_t seed = m_opt.seed + 1000003ULL * uint64_t(step) +
                              7919ULL * uint64_t(m_l.dpRank * m_l.microBatches + microBatch);
        for (const SeqPart& p : SeqParts())
            RandomTokens(st->tokens + p.tokenOffset, st->targets + p.tokenOffset, m_opt.localBatch,
                         p.len, p.pos, m_shape.seqLen, m_shape.vocab, seed, m_s.compute);
    }
    size_t i = 0;
    bf16* x = nullptr;
    if (c.first)
    {
        Gather(c.units[0]);
        Gather(c.units[1]);
        x = EmbeddingForward(c.units[0], st->tokens);
        Release(c.units[0]);
        i = 1;
    }
    else
    {
        // Receives are posted at once, on their own stream: only the buffer's previous use
        // orders them (a receive that waited for this rank's compute could close a cycle with
        // the peer's sends).
        x = m_mem.New<bf16>(size_t(m_tr) * d, m_s.actRecv, "pipeline stage input");
        NCCL_CHECK(
            ncclRecv(x, size_t(m_tr) * d, ncclBfloat16, 0, m_comms.actRecv.comm, m_s.actRecv));
        WaitFor(m_s.compute, m_s.actRecv);
    }
    const size_t layerEnd = c.units.size() - (c.last ? 1 : 0);
    for (; i < layerEnd; i++)
    {
        Gather(c.units[i]);
        if (i + 1 < c.units.size())
            Gather(c.units[i + 1]); // prefetch (FSDP)
        LayerActs a;
        a.x = x;
        x = LayerForwardImpl(c.units[i], a);
        if (m_opt.ac == Checkpointing::Full)
            FreeLayerActs(a, true);
        else if (m_opt.ac == Checkpointing::Selective)
        {
            for (bf16** p : {&a.ln1, &a.ln2, &a.act})
            {
                Drop(*p);
                *p = nullptr;
            }
        }
        st->layers.push_back(a);
        Release(c.units[i]);
    }
    if (c.last)
    {
        const int head = c.units.back();
        st->headDx = HeadForwardBackward(head, x, st->targets);
        Release(head);
        ReduceGrads(head, lastMicroBatch);
        Drop(x);
    }
    else
    {
        WaitFor(m_s.actSend, m_s.compute);
        NCCL_CHECK(
            ncclSend(x, size_t(m_tr) * d, ncclBfloat16, 1, m_comms.actSend.comm, m_s.actSend));
        m_sent.push_back(x); // freed at the step's end (see m_sent)
    }
    m_live[{microBatch, virtualChunk}] = std::move(st);
}

void
Model::Backward(int microBatch, int virtualChunk)
{
    Chunk& c = m_chunks[virtualChunk];
    const int d = m_shape.hidden;
    auto it = m_live.find({microBatch, virtualChunk});
    if (it == m_live.end())
        throw RuntimeError("pipeline schedule: backward of micro-batch " +
                           std::to_string(microBatch) + " before its forward");
    std::unique_ptr<MicroBatchState> st = std::move(it->second);
    m_live.erase(it);
    const bool lastMicroBatch = ++m_backwardsDone[virtualChunk] == m_l.microBatches;
    bf16* dy = st->headDx;
    if (!c.last)
    {
        dy = m_mem.New<bf16>(size_t(m_tr) * d, m_s.gradRecv, "pipeline stage output gradient");
        NCCL_CHECK(
            ncclRecv(dy, size_t(m_tr) * d, ncclBfloat16, 0, m_comms.gradRecv.comm, m_s.gradRecv));
        WaitFor(m_s.compute, m_s.gradRecv);
    }
    const int firstLayer = c.first ? 1 : 0;
    for (int l = int(st->layers.size()) - 1; l >= 0; l--)
    {
        const int unit = c.units[size_t(firstLayer + l)];
        Gather(unit);
        if (l > 0)
            Gather(c.units[size_t(firstLayer + l - 1)]); // prefetch (FSDP)
        dy = LayerBackward(unit, st->layers[size_t(l)], dy);
        ReduceGrads(unit, lastMicroBatch);
        Release(unit);
    }
    if (c.first)
    {
        // The embedding's backward needs no parameters: nothing to gather.
        EmbeddingBackward(c.units[0], st->tokens, dy);
        Drop(dy);
        ReduceGrads(c.units[0], lastMicroBatch);
    }
    else
    {
        WaitFor(m_s.gradSend, m_s.compute);
        NCCL_CHECK(
            ncclSend(dy, size_t(m_tr) * d, ncclBfloat16, 1, m_comms.gradSend.comm, m_s.gradSend));
        m_sent.push_back(dy);
    }
    Drop(st->tokens);
    Drop(st->targets);
}

// ------------------------------------------------------------------ optimizer

void
Model::OptimizerStep(int step, float lr)
{
    WaitFor(m_s.compute, m_s.data);
    for (cudaStream_t s : {m_s.actSend, m_s.actRecv, m_s.gradSend, m_s.gradRecv})
        WaitFor(m_s.compute, s);
    for (void* p : m_sent)
        Drop(p);
    m_sent.clear();
    // Global gradient norm: each rank adds the squares of the gradients it holds, weighted by one
    // over the number of ranks holding the same values (data ranks for unsharded gradients, tp
    // ranks for the replicated norm weights), then one all-reduce over the world.
    CUDA_CHECK(cudaMemsetAsync(m_sumsq, 0, sizeof(float), m_s.compute));
    const float tpShare = 1.0f / float(m_l.tp);
    for (Unit& u : m_units)
    {
        const bool shardOnly = u.sharded || u.optimizerSharded;
        const int64_t lo = u.shardStart;
        const int64_t hi = std::min(u.numel, lo + u.shard);
        const float dataShare = shardOnly ? 1.0f : 1.0f / float(m_comms.data.size);
        const int64_t split = std::clamp(u.replicated, lo, std::max(lo, hi));
        float* g = u.optimizerSharded ? u.grad + lo : u.grad;
        GradSumSquares(g, split - lo, dataShare * tpShare, m_sumsq, m_s.compute);
        GradSumSquares(g + (split - lo), hi - split, dataShare, m_sumsq, m_s.compute);
    }
    if (m_comms.world.size > 1)
        NCCL_CHECK(ncclAllReduce(m_sumsq, m_sumsq, 1, ncclFloat32, ncclSum, m_comms.world.comm,
                                 m_s.compute));
    for (Unit& u : m_units)
    {
        // The distributed optimizer updates its shard of the (whole) parameters and gradients.
        const int64_t at = u.optimizerSharded ? u.shardStart : 0;
        AdamWStep(u.master, u.param + at, u.grad + at, u.m, u.v, u.shard, m_sumsq,
                  float(m_opt.gradClip), lr, 0.9f, 0.95f, 1e-8f, 0.1f, step, m_s.compute);
        if (u.optimizerSharded)
        {
            // The other shards' gradients were only sent; the next step accumulates from zero.
            // The new parameters are gathered when the next forward needs them.
            const size_t held = size_t(u.shard) * size_t(m_comms.data.size);
            CUDA_CHECK(cudaMemsetAsync(u.grad, 0, held * sizeof(float), m_s.compute));
            u.updateGatherDue = true;
        }
    }
    m_forwardsDone.clear();
    m_backwardsDone.clear();
}

double
Model::StepLossSum()
{
    if (m_comms.world.size > 1)
        NCCL_CHECK(ncclAllReduce(m_lossSum, m_lossSum, 1, ncclFloat32, ncclSum, m_comms.world.comm,
                                 m_s.compute));
    float sum = 0;
    CUDA_CHECK(
        cudaMemcpyAsync(&sum, m_lossSum, sizeof(float), cudaMemcpyDeviceToHost, m_s.compute));
    CUDA_CHECK(cudaMemsetAsync(m_lossSum, 0, sizeof(float), m_s.compute));
    CUDA_CHECK(cudaStreamSynchronize(m_s.compute));
    return sum;
}

} // namespace traingpt
