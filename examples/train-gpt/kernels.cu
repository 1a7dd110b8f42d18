// train-gpt's kernels (kernels.h). Simple and correct rather than fast: fp32 arithmetic on bf16
// data, one thread per row in attention, shared-memory block reductions.
#include "kernels.h"

#include <cuda_fp8.h>

#include <cfloat>
#include <cmath>

namespace traingpt
{

namespace
{

__device__ __forceinline__ float
ToF(bf16 x)
{
    return __bfloat162float(x);
}

__device__ __forceinline__ bf16
ToB(float x)
{
    return __float2bfloat16(x);
}

__device__ __forceinline__ uint64_t
Mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

// Uniform in [0, 1) from a counter-based hash.
__device__ __forceinline__ float
Uniform(uint64_t seed, uint64_t i)
{
    return float(Mix(seed * 0x9e3779b97f4a7c15ULL + i) >> 40) * (1.0f / 16777216.0f);
}

// Sum over the block (any blockDim.x <= 1024); `sh` has 1024 floats. All threads get the sum.
__device__ float
BlockSum(float v, float* sh)
{
    const int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1)
    {
        if (t < s && t + s < blockDim.x)
            sh[t] += sh[t + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ float
BlockMax(float v, float* sh)
{
    const int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1)
    {
        if (t < s && t + s < blockDim.x)
            sh[t] = fmaxf(sh[t], sh[t + s]);
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

unsigned
ElemGrid(int64_t n)
{
    return unsigned((n + kElemThreads * kElemsPerThread - 1) / (kElemThreads * kElemsPerThread));
}

} // namespace
} // namespace traingpt

// The kernels live at global scope so that their demangled names start with their family
// (flash_attention_fwd<128, true>(...)), which is what a pricing model keyed on names reads.
using namespace traingpt;

#define ELEMENTWISE_LOOP(n)                                                                        \
    const int64_t base_ = (int64_t(blockIdx.x) * kElemThreads) * kElemsPerThread + threadIdx.x;    \
    for (int e_ = 0; e_ < kElemsPerThread; e_++)                                                   \
        for (int64_t i = base_ + int64_t(e_) * kElemThreads; i < (n); i = INT64_MAX)

// ------------------------------------------------------------------ initialisation and data

__global__ void
param_init(float* master, bf16* param, int64_t n, uint64_t seed, float halfWidth)
{
    ELEMENTWISE_LOOP(n)
    {
        float x = (2.0f * Uniform(seed, uint64_t(i)) - 1.0f) * halfWidth;
        master[i] = x;
        param[i] = ToB(x);
    }
}

// One thread per token. Tokens are skewed towards small ids (u^4), so that a model learns their
// distribution within a few steps and the loss visibly falls.
__global__ void
random_tokens(int* tokens, int* targets, int n, int seqLocal, int posOffset, int seqLen, int vocab,
              uint64_t seed)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int b = i / seqLocal, p = posOffset + i % seqLocal;
    auto tok = [&](int pos)
    {
        float u = Uniform(seed, uint64_t(b) * uint64_t(seqLen + 1) + uint64_t(pos));
        int t = int(float(vocab) * u * u * u * u);
        return t < vocab ? t : vocab - 1;
    };
    tokens[i] = tok(p);
    targets[i] = tok(p + 1);
}

// ------------------------------------------------------------------ embedding

template<int VEC>
__global__ void
embedding_fwd(const int* tokens, const bf16* table, bf16* out, int dim, int vocabLo, int vocabHi)
{
    const int row = blockIdx.x;
    const int tok = tokens[row];
    const bool mine = tok >= vocabLo && tok < vocabHi;
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        out[int64_t(row) * dim + c] = mine ? table[int64_t(tok - vocabLo) * dim + c] : ToB(0.0f);
    }
}

template<int VEC>
__global__ void
embedding_bwd(const int* tokens, const bf16* dout, float* dtable, int dim, int vocabLo, int vocabHi)
{
    const int row = blockIdx.x;
    const int tok = tokens[row];
    if (tok < vocabLo || tok >= vocabHi)
        return;
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        atomicAdd(&dtable[int64_t(tok - vocabLo) * dim + c], ToF(dout[int64_t(row) * dim + c]));
    }
}

// ------------------------------------------------------------------ norms

template<int VEC>
__global__ void
rmsnorm_fwd(const bf16* x, const bf16* w, bf16* out, float* rstdOut, int dim)
{
    __shared__ float sh[1024];
    const int64_t row = blockIdx.x;
    const bf16* xr = x + row * dim;
    float v[VEC], ss = 0;
    for (int j = 0; j < VEC; j++)
    {
        v[j] = ToF(xr[threadIdx.x * VEC + j]);
        ss += v[j] * v[j];
    }
    float rstd = rsqrtf(BlockSum(ss, sh) / dim + 1e-5f);
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        out[row * dim + c] = ToB(v[j] * rstd * ToF(w[c]));
    }
    if (threadIdx.x == 0)
        rstdOut[row] = rstd;
}

template<int VEC>
__global__ void
layernorm_fwd(const bf16* x, const bf16* w, const bf16* b, bf16* out, float* stats, int dim)
{
    __shared__ float sh[1024];
    const int64_t row = blockIdx.x;
    const bf16* xr = x + row * dim;
    float v[VEC], s = 0;
    for (int j = 0; j < VEC; j++)
    {
        v[j] = ToF(xr[threadIdx.x * VEC + j]);
        s += v[j];
    }
    float mean = BlockSum(s, sh) / dim, ss = 0;
    for (int j = 0; j < VEC; j++)
        ss += (v[j] - mean) * (v[j] - mean);
    float rstd = rsqrtf(BlockSum(ss, sh) / dim + 1e-5f);
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        out[row * dim + c] = ToB((v[j] - mean) * rstd * ToF(w[c]) + ToF(b[c]));
    }
    if (threadIdx.x == 0)
    {
        stats[2 * row] = mean;
        stats[2 * row + 1] = rstd;
    }
}

// y = xhat * w: dxhat = dy * w; dx = rstd (dxhat - xhat mean(dxhat xhat)) for RMSNorm,
// rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) for LayerNorm.
template<int VEC, bool LAYER>
__device__ void
NormBwdRow(const bf16* x, const bf16* w, const float* stats, const bf16* dout, const bf16* dres,
           bf16* dx, float* dw, float* db, int dim)
{
    __shared__ float sh[1024];
    const int64_t row = blockIdx.x;
    const float mean = LAYER ? stats[2 * row] : 0.0f;
    const float rstd = LAYER ? stats[2 * row + 1] : stats[row];
    float xhat[VEC], dxhat[VEC], sumDx = 0, sumDxX = 0;
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        xhat[j] = (ToF(x[row * dim + c]) - mean) * rstd;
        float dy = ToF(dout[row * dim + c]);
        dxhat[j] = dy * ToF(w[c]);
        sumDx += dxhat[j];
        sumDxX += dxhat[j] * xhat[j];
        atomicAdd(&dw[c], dy * xhat[j]);
        if (LAYER)
            atomicAdd(&db[c], dy);
    }
    const float meanDx = LAYER ? BlockSum(sumDx, sh) / dim : 0.0f;
    const float meanDxX = BlockSum(sumDxX, sh) / dim;
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        float g = rstd * (dxhat[j] - meanDx - xhat[j] * meanDxX);
        dx[row * dim + c] = ToB((dres ? ToF(dres[row * dim + c]) : 0.0f) + g);
    }
}

template<int VEC>
__global__ void
rmsnorm_bwd(const bf16* x, const bf16* w, const float* stats, const bf16* dout, const bf16* dres,
            bf16* dx, float* dw, float* db, int dim)
{
    NormBwdRow<VEC, false>(x, w, stats, dout, dres, dx, dw, db, dim);
}

template<int VEC>
__global__ void
layernorm_bwd(const bf16* x, const bf16* w, const float* stats, const bf16* dout, const bf16* dres,
              bf16* dx, float* dw, float* db, int dim)
{
    NormBwdRow<VEC, true>(x, w, stats, dout, dres, dx, dw, db, dim);
}

// ------------------------------------------------------------------ rotary

__device__ __forceinline__ void
RotaryAngle(int pos, int pair, int headDim, float theta, float* c, float* s)
{
    float freq = powf(theta, -2.0f * float(pair) / float(headDim));
    sincosf(float(pos) * freq, s, c);
}

// grid (seq, hq + 2 hkv, batch), block HEAD_DIM / 2: one thread per rotary pair (i, i + d/2).
template<int HEAD_DIM>
__global__ void
rotary_fwd(const bf16* qkv, bf16* q, bf16* k, bf16* v, int hq, int hkv, int posOffset, float theta)
{
    const int seq = gridDim.x, sIdx = blockIdx.x, head = blockIdx.y, b = blockIdx.z;
    const int pair = threadIdx.x, half = HEAD_DIM / 2;
    const int width = (hq + 2 * hkv) * HEAD_DIM;
    const bf16* in = qkv + (int64_t(b) * seq + sIdx) * width + head * HEAD_DIM;
    float x0 = ToF(in[pair]), x1 = ToF(in[pair + half]);
    bf16* dst;
    bool rotate = true;
    if (head < hq)
        dst = q + ((int64_t(b) * hq + head) * seq + sIdx) * HEAD_DIM;
    else if (head < hq + hkv)
        dst = k + ((int64_t(b) * hkv + head - hq) * seq + sIdx) * HEAD_DIM;
    else
    {
        dst = v + ((int64_t(b) * hkv + head - hq - hkv) * seq + sIdx) * HEAD_DIM;
        rotate = false;
    }
    if (rotate)
    {
        float c, s;
        RotaryAngle(posOffset + sIdx, pair, HEAD_DIM, theta, &c, &s);
        float y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        x0 = y0;
        x1 = y1;
    }
    dst[pair] = ToB(x0);
    dst[pair + half] = ToB(x1);
}

template<int HEAD_DIM>
__global__ void
rotary_bwd(const float* dq, const float* dk, const float* dv, bf16* dqkv, int hq, int hkv,
           int posOffset, float theta)
{
    const int seq = gridDim.x, sIdx = blockIdx.x, head = blockIdx.y, b = blockIdx.z;
    const int pair = threadIdx.x, half = HEAD_DIM / 2;
    const int width = (hq + 2 * hkv) * HEAD_DIM;
    bf16* out = dqkv + (int64_t(b) * seq + sIdx) * width + head * HEAD_DIM;
    const float* src;
    bool rotate = true;
    if (head < hq)
        src = dq + ((int64_t(b) * hq + head) * seq + sIdx) * HEAD_DIM;
    else if (head < hq + hkv)
        src = dk + ((int64_t(b) * hkv + head - hq) * seq + sIdx) * HEAD_DIM;
    else
    {
        src = dv + ((int64_t(b) * hkv + head - hq - hkv) * seq + sIdx) * HEAD_DIM;
        rotate = false;
    }
    float g0 = src[pair], g1 = src[pair + half];
    if (rotate) // transpose of the rotation
    {
        float c, s;
        RotaryAngle(posOffset + sIdx, pair, HEAD_DIM, theta, &c, &s);
        float y0 = g0 * c + g1 * s, y1 = -g0 * s + g1 * c;
        g0 = y0;
        g1 = y1;
    }
    out[pair] = ToB(g0);
    out[pair + half] = ToB(g1);
}

// ------------------------------------------------------------------ flash attention

// grid (seq / 64, hq, batch), block 64: thread i owns query row blockIdx.x * 64 + i and keeps its
// running max, sum and output in registers; key/value tiles of 64 rows go through shared memory.
template<int HEAD_DIM, bool CAUSAL>
__global__ void
flash_attention_fwd(const bf16* q, const bf16* k, const bf16* v, float* oAcc, float* lse,
                    bf16* outBf16, int merge, int hkv)
{
    __shared__ bf16 ks[kAttnRows][HEAD_DIM];
    __shared__ bf16 vs[kAttnRows][HEAD_DIM];
    const int seq = gridDim.x * kAttnRows, hq = gridDim.y;
    const int head = blockIdx.y, b = blockIdx.z, kvHead = head / (hq / hkv);
    const int row = blockIdx.x * kAttnRows + threadIdx.x;
    const float scale = rsqrtf(float(HEAD_DIM));
    const bf16* qr = q + ((int64_t(b) * hq + head) * seq + row) * HEAD_DIM;
    const bf16* kb = k + (int64_t(b) * hkv + kvHead) * seq * HEAD_DIM;
    const bf16* vb = v + (int64_t(b) * hkv + kvHead) * seq * HEAD_DIM;
    float qv[HEAD_DIM], acc[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; d++)
    {
        qv[d] = ToF(qr[d]) * scale;
        acc[d] = 0;
    }
    float mx = -FLT_MAX, sum = 0;
    const int tiles = CAUSAL ? blockIdx.x + 1 : gridDim.x;
    for (int t = 0; t < tiles; t++)
    {
        __syncthreads();
        for (int i = threadIdx.x; i < kAttnRows * HEAD_DIM; i += kAttnRows)
        {
            ks[i / HEAD_DIM][i % HEAD_DIM] = kb[int64_t(t) * kAttnRows * HEAD_DIM + i];
            vs[i / HEAD_DIM][i % HEAD_DIM] = vb[int64_t(t) * kAttnRows * HEAD_DIM + i];
        }
        __syncthreads();
        for (int j = 0; j < kAttnRows; j++)
        {
            if (CAUSAL && t * kAttnRows + j > row)
                break;
            float sc = 0;
            for (int d = 0; d < HEAD_DIM; d++)
                sc += qv[d] * ToF(ks[j][d]);
            float nmx = fmaxf(mx, sc);
            float corr = __expf(mx - nmx), p = __expf(sc - nmx);
            sum = sum * corr + p;
            for (int d = 0; d < HEAD_DIM; d++)
                acc[d] = acc[d] * corr + p * ToF(vs[j][d]);
            mx = nmx;
        }
    }
    // This chunk's normalised output and log-sum-exp, merged with what oAcc/lse hold.
    const float blockLse = mx + logf(sum);
    float* o = oAcc ? oAcc + ((int64_t(b) * seq + row) * hq + head) * HEAD_DIM : nullptr;
    float* l = lse + (int64_t(b) * hq + head) * seq + row;
    float wNew = 1.0f, wOld = 0.0f, newLse = blockLse;
    if (merge)
    {
        float old = *l, m = fmaxf(old, blockLse);
        newLse = m + logf(__expf(old - m) + __expf(blockLse - m));
        wOld = __expf(old - newLse);
        wNew = __expf(blockLse - newLse);
    }
    bf16* ob = outBf16 ? outBf16 + ((int64_t(b) * seq + row) * hq + head) * HEAD_DIM : nullptr;
    for (int d = 0; d < HEAD_DIM; d++)
    {
        float val = wNew * acc[d] / sum + (merge ? wOld * o[d] : 0.0f);
        if (o)
            o[d] = val;
        if (ob)
            ob[d] = ToB(val);
    }
    *l = newLse;
}

// grid (seq / 64, hq, batch), block 64: delta = rowsum(dO * O).
template<int HEAD_DIM>
__global__ void
flash_attention_bwd_dot(const bf16* o, const bf16* dout, float* delta)
{
    const int seq = gridDim.x * kAttnRows, hq = gridDim.y, head = blockIdx.y, b = blockIdx.z;
    const int row = blockIdx.x * kAttnRows + threadIdx.x;
    const int64_t off = ((int64_t(b) * seq + row) * hq + head) * HEAD_DIM;
    float s = 0;
    for (int d = 0; d < HEAD_DIM; d++)
        s += ToF(o[off + d]) * ToF(dout[off + d]);
    delta[(int64_t(b) * hq + head) * seq + row] = s;
}

// grid (seq / 64, hkv, batch), block 64: thread i owns key row blockIdx.x * 64 + i and
// accumulates its dK and dV over every query row of every query head of its group.
template<int HEAD_DIM, bool CAUSAL>
__global__ void
flash_attention_bwd_dkdv(const bf16* q, const bf16* k, const bf16* v, const bf16* dout,
                         const float* lse, const float* delta, float* dk, float* dv, int hq)
{
    // Query tiles of 32 rows keep shared memory under 48 KiB at head dim 192.
    constexpr int kTile = kAttnRows / 2;
    __shared__ bf16 qs[kTile][HEAD_DIM];
    __shared__ bf16 dos[kTile][HEAD_DIM];
    __shared__ float ls[kTile], ds[kTile];
    const int seq = gridDim.x * kAttnRows, hkv = gridDim.y, kvHead = blockIdx.y, b = blockIdx.z;
    const int group = hq / hkv;
    const int col = blockIdx.x * kAttnRows + threadIdx.x;
    const float scale = rsqrtf(float(HEAD_DIM));
    const int64_t kvOff = ((int64_t(b) * hkv + kvHead) * seq + col) * HEAD_DIM;
    float kv[HEAD_DIM], vv[HEAD_DIM], dka[HEAD_DIM], dva[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; d++)
    {
        kv[d] = ToF(k[kvOff + d]);
        vv[d] = ToF(v[kvOff + d]);
        dka[d] = 0;
        dva[d] = 0;
    }
    for (int g = 0; g < group; g++)
    {
        const int head = kvHead * group + g;
        const int64_t rowBase = (int64_t(b) * hq + head) * seq;
        for (int t = CAUSAL ? 2 * blockIdx.x : 0; t < seq / kTile; t++)
        {
            __syncthreads();
            for (int i = threadIdx.x; i < kTile * HEAD_DIM; i += kAttnRows)
            {
                int r = t * kTile + i / HEAD_DIM, d = i % HEAD_DIM;
                qs[i / HEAD_DIM][d] = q[(rowBase + r) * HEAD_DIM + d];
                dos[i / HEAD_DIM][d] = dout[((int64_t(b) * seq + r) * hq + head) * HEAD_DIM + d];
            }
            if (threadIdx.x < kTile)
            {
                ls[threadIdx.x] = lse[rowBase + t * kTile + threadIdx.x];
                ds[threadIdx.x] = delta[rowBase + t * kTile + threadIdx.x];
            }
            __syncthreads();
            for (int i = 0; i < kTile; i++)
            {
                if (CAUSAL && t * kTile + i < col)
                    continue;
                float sc = 0, dp = 0;
                for (int d = 0; d < HEAD_DIM; d++)
                {
                    sc += ToF(qs[i][d]) * kv[d];
                    dp += ToF(dos[i][d]) * vv[d];
                }
                float p = __expf(sc * scale - ls[i]);
                float dsc = p * (dp - ds[i]) * scale;
                for (int d = 0; d < HEAD_DIM; d++)
                {
                    dva[d] += p * ToF(dos[i][d]);
                    dka[d] += dsc * ToF(qs[i][d]);
                }
            }
        }
    }
    for (int d = 0; d < HEAD_DIM; d++)
    {
        dk[kvOff + d] += dka[d];
        dv[kvOff + d] += dva[d];
    }
}

// grid (seq / 64, hq, batch), block 64: thread i owns query row blockIdx.x * 64 + i.
template<int HEAD_DIM, bool CAUSAL>
__global__ void
flash_attention_bwd_dq(const bf16* q, const bf16* k, const bf16* v, const bf16* dout,
                       const float* lse, const float* delta, float* dq, int hkv)
{
    __shared__ bf16 ks[kAttnRows][HEAD_DIM];
    __shared__ bf16 vs[kAttnRows][HEAD_DIM];
    const int seq = gridDim.x * kAttnRows, hq = gridDim.y, head = blockIdx.y, b = blockIdx.z;
    const int kvHead = head / (hq / hkv);
    const int row = blockIdx.x * kAttnRows + threadIdx.x;
    const float scale = rsqrtf(float(HEAD_DIM));
    const int64_t qOff = ((int64_t(b) * hq + head) * seq + row) * HEAD_DIM;
    const int64_t oOff = ((int64_t(b) * seq + row) * hq + head) * HEAD_DIM;
    const bf16* kb = k + (int64_t(b) * hkv + kvHead) * seq * HEAD_DIM;
    const bf16* vb = v + (int64_t(b) * hkv + kvHead) * seq * HEAD_DIM;
    float qv[HEAD_DIM], dov[HEAD_DIM], dqa[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; d++)
    {
        qv[d] = ToF(q[qOff + d]);
        dov[d] = ToF(dout[oOff + d]);
        dqa[d] = 0;
    }
    const float l = lse[(int64_t(b) * hq + head) * seq + row];
    const float dl = delta[(int64_t(b) * hq + head) * seq + row];
    const int tiles = CAUSAL ? blockIdx.x + 1 : gridDim.x;
    for (int t = 0; t < tiles; t++)
    {
        __syncthreads();
        for (int i = threadIdx.x; i < kAttnRows * HEAD_DIM; i += kAttnRows)
        {
            ks[i / HEAD_DIM][i % HEAD_DIM] = kb[int64_t(t) * kAttnRows * HEAD_DIM + i];
            vs[i / HEAD_DIM][i % HEAD_DIM] = vb[int64_t(t) * kAttnRows * HEAD_DIM + i];
        }
        __syncthreads();
        for (int j = 0; j < kAttnRows; j++)
        {
            if (CAUSAL && t * kAttnRows + j > row)
                break;
            float sc = 0, dp = 0;
            for (int d = 0; d < HEAD_DIM; d++)
            {
                sc += qv[d] * ToF(ks[j][d]);
                dp += dov[d] * ToF(vs[j][d]);
            }
            float p = __expf(sc * scale - l);
            float dsc = p * (dp - dl) * scale;
            for (int d = 0; d < HEAD_DIM; d++)
                dqa[d] += dsc * ToF(ks[j][d]);
        }
    }
    for (int d = 0; d < HEAD_DIM; d++)
        dq[qOff + d] += dqa[d];
}

// ------------------------------------------------------------------ softmax (cuBLAS attention)

// grid rows, block seq / VEC; rows are (batch, head, query) with query = row % seq.
template<int VEC>
__global__ void
softmax_fwd(const float* scores, bf16* probs, int seq, float scale)
{
    __shared__ float sh[1024];
    const int64_t row = blockIdx.x;
    const int qi = int(row % seq);
    float v[VEC], mx = -FLT_MAX;
    for (int j = 0; j < VEC; j++)
    {
        int c = threadIdx.x * VEC + j;
        v[j] = c <= qi ? scores[row * seq + c] * scale : -FLT_MAX;
        mx = fmaxf(mx, v[j]);
    }
    mx = BlockMax(mx, sh);
    float s = 0;
    for (int j = 0; j < VEC; j++)
    {
        v[j] = (threadIdx.x * VEC + j) <= qi ? __expf(v[j] - mx) : 0.0f;
        s += v[j];
    }
    s = BlockSum(s, sh);
    for (int j = 0; j < VEC; j++)
        probs[row * seq + threadIdx.x * VEC + j] = ToB(v[j] / s);
}

template<int VEC>
__global__ void
softmax_bwd(const bf16* probs, const float* dprobs, bf16* dscores, int seq, float scale)
{
    __shared__ float sh[1024];
    const int64_t row = blockIdx.x;
    float p[VEC], dp[VEC], dot = 0;
    for (int j = 0; j < VEC; j++)
    {
        int64_t c = row * seq + threadIdx.x * VEC + j;
        p[j] = ToF(probs[c]);
        dp[j] = dprobs[c];
        dot += p[j] * dp[j];
    }
    dot = BlockSum(dot, sh);
    for (int j = 0; j < VEC; j++)
        dscores[row * seq + threadIdx.x * VEC + j] = ToB(p[j] * (dp[j] - dot) * scale);
}

// ------------------------------------------------------------------ MLP activations

__device__ __forceinline__ float
Silu(float x)
{
    return x / (1.0f + __expf(-x));
}

__device__ __forceinline__ float
GeluTanh(float x, float* grad)
{
    const float c = 0.7978845608f, a = 0.044715f;
    float u = c * (x + a * x * x * x), t = tanhf(u);
    *grad = 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * c * (1 + 3 * a * x * x);
    return 0.5f * x * (1 + t);
}

// n = rows x f outputs; SwiGLU reads gate = in[r, c], up = in[r, f + c].
__global__ void
swiglu_fwd(const bf16* in, bf16* out, int64_t n, int f)
{
    ELEMENTWISE_LOOP(n)
    {
        int64_t r = i / f, c = i % f;
        float g = ToF(in[r * 2 * f + c]), u = ToF(in[r * 2 * f + f + c]);
        out[i] = ToB(Silu(g) * u);
    }
}

__global__ void
swiglu_bwd(const bf16* in, const bf16* dout, bf16* din, int64_t n, int f)
{
    ELEMENTWISE_LOOP(n)
    {
        int64_t r = i / f, c = i % f;
        float g = ToF(in[r * 2 * f + c]), u = ToF(in[r * 2 * f + f + c]), d = ToF(dout[i]);
        float sg = 1.0f / (1.0f + __expf(-g));
        din[r * 2 * f + c] = ToB(d * u * sg * (1 + g * (1 - sg)));
        din[r * 2 * f + f + c] = ToB(d * g * sg);
    }
}

__global__ void
squared_relu_fwd(const bf16* in, bf16* out, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        float x = fmaxf(ToF(in[i]), 0.0f);
        out[i] = ToB(x * x);
    }
}

__global__ void
squared_relu_bwd(const bf16* in, const bf16* dout, bf16* din, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        din[i] = ToB(2.0f * fmaxf(ToF(in[i]), 0.0f) * ToF(dout[i]));
    }
}

__global__ void
gelu_fwd(const bf16* in, bf16* out, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        float g;
        out[i] = ToB(GeluTanh(ToF(in[i]), &g));
    }
}

__global__ void
gelu_bwd(const bf16* in, const bf16* dout, bf16* din, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        float g;
        GeluTanh(ToF(in[i]), &g);
        din[i] = ToB(g * ToF(dout[i]));
    }
}

__global__ void
residual_add(const bf16* a, const bf16* b, bf16* out, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        out[i] = ToB(ToF(a[i]) + ToF(b[i]));
    }
}

// bf16 [n / cols, cols] -> fp8 (e4m3, or e5m2 for gradients), transposed to [cols, n / cols]
// when TRANSPOSE (the K-major operand layout fp8 GEMMs need).
template<bool E5M2, bool TRANSPOSE>
__global__ void
cast_fp8(const bf16* in, void* out, int64_t n, int64_t cols)
{
    ELEMENTWISE_LOOP(n)
    {
        const int64_t o = TRANSPOSE ? (i % cols) * (n / cols) + i / cols : i;
        if (E5M2)
            static_cast<__nv_fp8_e5m2*>(out)[o] = __nv_fp8_e5m2(ToF(in[i]));
        else
            static_cast<__nv_fp8_e4m3*>(out)[o] = __nv_fp8_e4m3(ToF(in[i]));
    }
}

__global__ void
grad_accumulate(float* dst, const float* src, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        dst[i] += src[i];
    }
}

__global__ void
cast_bf16(const float* in, bf16* out, int64_t n)
{
    ELEMENTWISE_LOOP(n)
    {
        out[i] = ToB(in[i]);
    }
}

// ------------------------------------------------------------------ cross-entropy

// grid (rows, chunks), block 256 x 8 logits: each block's max and sum of exp over its chunk.
__global__ void
cross_entropy_fwd_chunk(const bf16* logits, float* scratch, int vocabLocal)
{
    __shared__ float sh[1024];
    const int64_t row = blockIdx.x;
    float v[kElemsPerThread], mx = -FLT_MAX;
    for (int j = 0; j < kElemsPerThread; j++)
    {
        int c = blockIdx.y * kCeChunk + j * kElemThreads + threadIdx.x;
        v[j] = c < vocabLocal ? ToF(logits[row * vocabLocal + c]) : -FLT_MAX;
        mx = fmaxf(mx, v[j]);
    }
    mx = BlockMax(mx, sh);
    float s = 0;
    for (int j = 0; j < kElemsPerThread; j++)
        s += v[j] == -FLT_MAX ? 0.0f : __expf(v[j] - mx);
    s = BlockSum(s, sh);
    if (threadIdx.x == 0)
    {
        scratch[2 * (row * gridDim.y + blockIdx.y)] = mx;
        scratch[2 * (row * gridDim.y + blockIdx.y) + 1] = s;
    }
}

// grid ceil(rows / 256), block 256: one thread per row combines its chunks.
__global__ void
cross_entropy_fwd_combine(const bf16* logits, const int* targets, const float* scratch,
                          float* rowMax, float* rowSum, float* rowTarget, int rows, int chunks,
                          int vocabLocal, int vocabLo)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    float mx = -FLT_MAX, s = 0;
    for (int c = 0; c < chunks; c++)
        mx = fmaxf(mx, scratch[2 * (int64_t(row) * chunks + c)]);
    for (int c = 0; c < chunks; c++)
        s += scratch[2 * (int64_t(row) * chunks + c) + 1] *
             __expf(scratch[2 * (int64_t(row) * chunks + c)] - mx);
    rowMax[row] = mx;
    rowSum[row] = s;
    int t = targets[row] - vocabLo;
    rowTarget[row] = (t >= 0 && t < vocabLocal) ? ToF(logits[int64_t(row) * vocabLocal + t]) : 0.0f;
}

__global__ void
cross_entropy_rescale(const float* localMax, const float* globalMax, float* rowSum, int rows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows)
        rowSum[row] *= __expf(localMax[row] - globalMax[row]);
}

// grid (rows, chunks), block 256 x 8 logits.
__global__ void
cross_entropy_bwd(bf16* logits, const int* targets, const float* rowMax, const float* rowSum,
                  const float* rowTarget, float* lossSum, int vocabLocal, int vocabLo,
                  float lossWeight, float gradScale)
{
    const int64_t row = blockIdx.x;
    const float mx = rowMax[row], inv = 1.0f / rowSum[row];
    const int t = targets[row] - vocabLo;
    for (int j = 0; j < kElemsPerThread; j++)
    {
        int c = blockIdx.y * kCeChunk + j * kElemThreads + threadIdx.x;
        if (c < vocabLocal)
        {
            float p = __expf(ToF(logits[row * vocabLocal + c]) - mx) * inv;
            logits[row * vocabLocal + c] = ToB((p - (c == t ? 1.0f : 0.0f)) * gradScale);
        }
    }
    if (blockIdx.y == 0 && threadIdx.x == 0)
        atomicAdd(lossSum, (logf(rowSum[row]) + mx - rowTarget[row]) * lossWeight);
}

// ------------------------------------------------------------------ optimizer

__global__ void
grad_norm_sumsq(const float* g, int64_t n, float weight, float* sumsq)
{
    __shared__ float sh[1024];
    float s = 0;
    ELEMENTWISE_LOOP(n)
    {
        s += g[i] * g[i];
    }
    s = BlockSum(s, sh);
    if (threadIdx.x == 0)
        atomicAdd(sumsq, s * weight);
}

__global__ void
adamw_step(float* master, bf16* param, float* grad, float* m, float* v, int64_t n,
           const float* sumsq, float clip, float lr, float beta1, float beta2, float eps, float wd,
           int step)
{
    const float norm = sqrtf(*sumsq);
    const float coef = norm > clip ? clip / (norm + 1e-6f) : 1.0f;
    const float bc1 = 1.0f - powf(beta1, float(step)), bc2 = 1.0f - powf(beta2, float(step));
    ELEMENTWISE_LOOP(n)
    {
        float g = grad[i] * coef;
        float mi = beta1 * m[i] + (1 - beta1) * g;
        float vi = beta2 * v[i] + (1 - beta2) * g * g;
        float w = master[i] * (1 - lr * wd);
        w -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
        m[i] = mi;
        v[i] = vi;
        master[i] = w;
        param[i] = ToB(w);
        grad[i] = 0.0f;
    }
}

namespace traingpt
{

int
RowVec(int width)
{
    for (int vec : {8, 16, 32})
        if (width % vec == 0 && width / vec <= 1024)
            return vec;
    return 0;
}

#define DISPATCH_VEC(width, KERNEL, GRID, ...)                                                     \
    do                                                                                             \
    {                                                                                              \
        int vec_ = RowVec(width);                                                                  \
        if (vec_ == 8)                                                                             \
            KERNEL<8><<<GRID, (width) / 8, 0, s>>>(__VA_ARGS__);                                   \
        else if (vec_ == 16)                                                                       \
            KERNEL<16><<<GRID, (width) / 16, 0, s>>>(__VA_ARGS__);                                 \
        else                                                                                       \
            KERNEL<32><<<GRID, (width) / 32, 0, s>>>(__VA_ARGS__);                                 \
    } while (0)

#define DISPATCH_HEAD_DIM(hd, CALL)                                                                \
    do                                                                                             \
    {                                                                                              \
        if ((hd) == 64)                                                                            \
        {                                                                                          \
            constexpr int HD = 64;                                                                 \
            CALL;                                                                                  \
        }                                                                                          \
        else if ((hd) == 128)                                                                      \
        {                                                                                          \
            constexpr int HD = 128;                                                                \
            CALL;                                                                                  \
        }                                                                                          \
        else                                                                                       \
        {                                                                                          \
            constexpr int HD = 192;                                                                \
            CALL;                                                                                  \
        }                                                                                          \
    } while (0)

void
ParamInit(float* master, bf16* param, int64_t n, uint64_t seed, float stddev, cudaStream_t s)
{
    if (n > 0)
        param_init<<<ElemGrid(n), kElemThreads, 0, s>>>(master, param, n, seed,
                                                        stddev * 1.7320508f);
}

void
RandomTokens(int* tokens, int* targets, int batch, int seqLocal, int posOffset, int seqLen,
             int vocab, uint64_t seed, cudaStream_t s)
{
    int n = batch * seqLocal;
    random_tokens<<<(n + 255) / 256, 256, 0, s>>>(tokens, targets, n, seqLocal, posOffset, seqLen,
                                                  vocab, seed);
}

void
EmbeddingFwd(const int* tokens, const bf16* table, bf16* out, int rows, int dim, int vocabLo,
             int vocabHi, cudaStream_t s)
{
    DISPATCH_VEC(dim, embedding_fwd, rows, tokens, table, out, dim, vocabLo, vocabHi);
}

void
EmbeddingBwd(const int* tokens, const bf16* dout, float* dtable, int rows, int dim, int vocabLo,
             int vocabHi, cudaStream_t s)
{
    DISPATCH_VEC(dim, embedding_bwd, rows, tokens, dout, dtable, dim, vocabLo, vocabHi);
}

void
NormFwd(bool layerNorm, const bf16* x, const bf16* w, const bf16* b, bf16* out, float* stats,
        int rows, int dim, cudaStream_t s)
{
    if (layerNorm)
        DISPATCH_VEC(dim, layernorm_fwd, rows, x, w, b, out, stats, dim);
    else
        DISPATCH_VEC(dim, rmsnorm_fwd, rows, x, w, out, stats, dim);
}

void
NormBwd(bool layerNorm, const bf16* x, const bf16* w, const float* stats, const bf16* dout,
        const bf16* dres, bf16* dx, float* dw, float* db, int rows, int dim, cudaStream_t s)
{
    if (layerNorm)
        DISPATCH_VEC(dim, layernorm_bwd, rows, x, w, stats, dout, dres, dx, dw, db, dim);
    else
        DISPATCH_VEC(dim, rmsnorm_bwd, rows, x, w, stats, dout, dres, dx, dw, db, dim);
}

void
RotaryFwd(const bf16* qkv, bf16* q, bf16* k, bf16* v, int batch, int seq, int hq, int hkv,
          int headDim, int posOffset, float theta, cudaStream_t s)
{
    dim3 grid(seq, hq + 2 * hkv, batch);
    DISPATCH_HEAD_DIM(
        headDim, (rotary_fwd<HD><<<grid, HD / 2, 0, s>>>(qkv, q, k, v, hq, hkv, posOffset, theta)));
}

void
RotaryBwd(const float* dq, const float* dk, const float* dv, bf16* dqkv, int batch, int seq, int hq,
          int hkv, int headDim, int posOffset, float theta, cudaStream_t s)
{
    dim3 grid(seq, hq + 2 * hkv, batch);
    DISPATCH_HEAD_DIM(headDim, (rotary_bwd<HD><<<grid, HD / 2, 0, s>>>(dq, dk, dv, dqkv, hq, hkv,
                                                                       posOffset, theta)));
}

void
FlashAttentionFwd(const bf16* q, const bf16* k, const bf16* v, float* oAcc, float* lse,
                  bf16* outBf16, bool merge, bool causal, int batch, int seq, int hq, int hkv,
                  int headDim, cudaStream_t s)
{
    dim3 grid(seq / kAttnRows, hq, batch);
    if (causal)
        DISPATCH_HEAD_DIM(headDim, (flash_attention_fwd<HD, true><<<grid, kAttnRows, 0, s>>>(
                                       q, k, v, oAcc, lse, outBf16, merge, hkv)));
    else
        DISPATCH_HEAD_DIM(headDim, (flash_attention_fwd<HD, false><<<grid, kAttnRows, 0, s>>>(
                                       q, k, v, oAcc, lse, outBf16, merge, hkv)));
}

void
FlashAttentionBwdDot(const bf16* o, const bf16* dout, float* delta, int batch, int seq, int hq,
                     int headDim, cudaStream_t s)
{
    dim3 grid(seq / kAttnRows, hq, batch);
    DISPATCH_HEAD_DIM(headDim,
                      (flash_attention_bwd_dot<HD><<<grid, kAttnRows, 0, s>>>(o, dout, delta)));
}

void
FlashAttentionBwd(const bf16* q, const bf16* k, const bf16* v, const bf16* dout, const float* lse,
                  const float* delta, float* dq, float* dk, float* dv, bool causal, int batch,
                  int seq, int hq, int hkv, int headDim, cudaStream_t s)
{
    dim3 kvGrid(seq / kAttnRows, hkv, batch), qGrid(seq / kAttnRows, hq, batch);
    if (causal)
    {
        DISPATCH_HEAD_DIM(headDim, (flash_attention_bwd_dkdv<HD, true><<<kvGrid, kAttnRows, 0, s>>>(
                                       q, k, v, dout, lse, delta, dk, dv, hq)));
        DISPATCH_HEAD_DIM(headDim, (flash_attention_bwd_dq<HD, true><<<qGrid, kAttnRows, 0, s>>>(
                                       q, k, v, dout, lse, delta, dq, hkv)));
    }
    else
    {
        DISPATCH_HEAD_DIM(headDim,
                          (flash_attention_bwd_dkdv<HD, false>
                           <<<kvGrid, kAttnRows, 0, s>>>(q, k, v, dout, lse, delta, dk, dv, hq)));
        DISPATCH_HEAD_DIM(headDim, (flash_attention_bwd_dq<HD, false><<<qGrid, kAttnRows, 0, s>>>(
                                       q, k, v, dout, lse, delta, dq, hkv)));
    }
}

void
SoftmaxFwd(const float* scores, bf16* probs, int rows, int seq, float scale, cudaStream_t s)
{
    DISPATCH_VEC(seq, softmax_fwd, rows, scores, probs, seq, scale);
}

void
SoftmaxBwd(const bf16* probs, const float* dprobs, bf16* dscores, int rows, int seq, float scale,
           cudaStream_t s)
{
    DISPATCH_VEC(seq, softmax_bwd, rows, probs, dprobs, dscores, seq, scale);
}

void
ActivationFwd(ActKind kind, const bf16* in, bf16* out, int64_t rows, int f, cudaStream_t s)
{
    int64_t n = rows * f;
    if (kind == ActKind::SwiGlu)
        swiglu_fwd<<<ElemGrid(n), kElemThreads, 0, s>>>(in, out, n, f);
    else if (kind == ActKind::SquaredRelu)
        squared_relu_fwd<<<ElemGrid(n), kElemThreads, 0, s>>>(in, out, n);
    else
        gelu_fwd<<<ElemGrid(n), kElemThreads, 0, s>>>(in, out, n);
}

void
ActivationBwd(ActKind kind, const bf16* in, const bf16* dout, bf16* din, int64_t rows, int f,
              cudaStream_t s)
{
    int64_t n = rows * f;
    if (kind == ActKind::SwiGlu)
        swiglu_bwd<<<ElemGrid(n), kElemThreads, 0, s>>>(in, dout, din, n, f);
    else if (kind == ActKind::SquaredRelu)
        squared_relu_bwd<<<ElemGrid(n), kElemThreads, 0, s>>>(in, dout, din, n);
    else
        gelu_bwd<<<ElemGrid(n), kElemThreads, 0, s>>>(in, dout, din, n);
}

void
ResidualAdd(const bf16* a, const bf16* b, bf16* out, int64_t n, cudaStream_t s)
{
    residual_add<<<ElemGrid(n), kElemThreads, 0, s>>>(a, b, out, n);
}

void
CastToFp8(const bf16* in, void* out, int64_t rows, int64_t cols, Fp8Format format, bool transpose,
          cudaStream_t s)
{
    const int64_t n = rows * cols;
    if (n == 0)
        return;
    const unsigned grid = ElemGrid(n);
    if (format == Fp8Format::E5M2)
    {
        if (transpose)
            cast_fp8<true, true><<<grid, kElemThreads, 0, s>>>(in, out, n, cols);
        else
            cast_fp8<true, false><<<grid, kElemThreads, 0, s>>>(in, out, n, cols);
    }
    else if (transpose)
        cast_fp8<false, true><<<grid, kElemThreads, 0, s>>>(in, out, n, cols);
    else
        cast_fp8<false, false><<<grid, kElemThreads, 0, s>>>(in, out, n, cols);
}

void
GradAccumulate(float* dst, const float* src, int64_t n, cudaStream_t s)
{
    if (n > 0)
        grad_accumulate<<<ElemGrid(n), kElemThreads, 0, s>>>(dst, src, n);
}

void
CastFp32ToBf16(const float* in, bf16* out, int64_t n, cudaStream_t s)
{
    cast_bf16<<<ElemGrid(n), kElemThreads, 0, s>>>(in, out, n);
}

void
CrossEntropyStats(const bf16* logits, const int* targets, float* rowMax, float* rowSum,
                  float* rowTarget, float* chunkScratch, int rows, int vocabLocal, int vocabLo,
                  cudaStream_t s)
{
    int chunks = (vocabLocal + kCeChunk - 1) / kCeChunk;
    cross_entropy_fwd_chunk<<<dim3(rows, chunks), kElemThreads, 0, s>>>(logits, chunkScratch,
                                                                        vocabLocal);
    cross_entropy_fwd_combine<<<(rows + 255) / 256, 256, 0, s>>>(logits, targets, chunkScratch,
                                                                 rowMax, rowSum, rowTarget, rows,
                                                                 chunks, vocabLocal, vocabLo);
}

void
CrossEntropyRescale(const float* localMax, const float* globalMax, float* rowSum, int rows,
                    cudaStream_t s)
{
    cross_entropy_rescale<<<(rows + 255) / 256, 256, 0, s>>>(localMax, globalMax, rowSum, rows);
}

void
CrossEntropyLossAndGrad(bf16* logits, const int* targets, const float* rowMax, const float* rowSum,
                        const float* rowTarget, float* lossSum, int rows, int vocabLocal,
                        int vocabLo, float lossWeight, float gradScale, cudaStream_t s)
{
    int chunks = (vocabLocal + kCeChunk - 1) / kCeChunk;
    cross_entropy_bwd<<<dim3(rows, chunks), kElemThreads, 0, s>>>(logits, targets, rowMax, rowSum,
                                                                  rowTarget, lossSum, vocabLocal,
                                                                  vocabLo, lossWeight, gradScale);
}

void
GradSumSquares(const float* grad, int64_t n, float weight, float* sumsq, cudaStream_t s)
{
    if (n > 0)
        grad_norm_sumsq<<<ElemGrid(n), kElemThreads, 0, s>>>(grad, n, weight, sumsq);
}

void
AdamWStep(float* master, bf16* param, float* grad, float* m, float* v, int64_t n,
          const float* sumsq, float clip, float lr, float beta1, float beta2, float eps,
          float weightDecay, int step, cudaStream_t s)
{
    if (n > 0)
        adamw_step<<<ElemGrid(n), kElemThreads, 0, s>>>(master, param, grad, m, v, n, sumsq, clip,
                                                        lr, beta1, beta2, eps, weightDecay, step);
}

} // namespace traingpt
