// train-gpt's CUDA kernels, launched through these host functions. Every kernel's name says its
// family and its launch geometry (with its template arguments) carries the shape that decides its
// cost, so that a simulator pricing kernels by name, grid and block sees the work (README.md
// lists bytes and FLOPs per kernel as a function of grid, block and template arguments).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace traingpt
{

using bf16 = __nv_bfloat16;

// Elementwise kernels: 256 threads, 8 elements per thread, grid = ceil(n / 2048).
constexpr int kElemThreads = 256;
constexpr int kElemsPerThread = 8;
// Attention kernels: one thread per query (or key) row, 64 rows per block.
constexpr int kAttnRows = 64;
// Cross-entropy: one block of 256 threads x 8 logits per (token, chunk of 2048 logits).
constexpr int kCeChunk = 2048;

// Row kernels (norms, softmax) use block = width / VEC threads, VEC in {8, 16, 32}: the smallest
// that keeps the block within 1024 threads.
int RowVec(int width);

void ParamInit(float* master, bf16* param, int64_t n, uint64_t seed, float stddev, cudaStream_t s);
void RandomTokens(int* tokens, int* targets, int batch, int seqLocal, int posOffset, int seqLen,
                  int vocab, uint64_t seed, cudaStream_t s);

void EmbeddingFwd(const int* tokens, const bf16* table, bf16* out, int rows, int dim, int vocabLo,
                  int vocabHi, cudaStream_t s);
void EmbeddingBwd(const int* tokens, const bf16* dout, float* dtable, int rows, int dim,
                  int vocabLo, int vocabHi, cudaStream_t s);

// Norms: out = norm(x) * w (+ b for LayerNorm); stats = rstd (RMSNorm) or (mean, rstd).
void NormFwd(bool layerNorm, const bf16* x, const bf16* w, const bf16* b, bf16* out, float* stats,
             int rows, int dim, cudaStream_t s);
// dx = dres + dnorm (dx may alias dres; dres may be null); dw, db accumulate (fp32).
void NormBwd(bool layerNorm, const bf16* x, const bf16* w, const float* stats, const bf16* dout,
             const bf16* dres, bf16* dx, float* dw, float* db, int rows, int dim, cudaStream_t s);

// qkv [tokens, (hq + 2 hkv) d] -> q [b, hq, s, d], k, v [b, hkv, s, d], rotary on q and k at
// positions posOffset + s.
void RotaryFwd(const bf16* qkv, bf16* q, bf16* k, bf16* v, int batch, int seq, int hq, int hkv,
               int headDim, int posOffset, float theta, cudaStream_t s);
// dq, dk, dv (fp32, head-major) -> dqkv [tokens, (hq + 2 hkv) d] (inverse rotation).
void RotaryBwd(const float* dq, const float* dk, const float* dv, bf16* dqkv, int batch, int seq,
               int hq, int hkv, int headDim, int posOffset, float theta, cudaStream_t s);

// Flash attention over one (query chunk, key chunk) pair of equal length `seq`. oAcc/lse hold the
// running result (fp32 [b, s, hq, d], may be null without merge, and [b, hq, s]); merge: combine
// with what they hold; outBf16: when not null, also write the normalised output token-major in
// bf16.
void FlashAttentionFwd(const bf16* q, const bf16* k, const bf16* v, float* oAcc, float* lse,
                       bf16* outBf16, bool merge, bool causal, int batch, int seq, int hq, int hkv,
                       int headDim, cudaStream_t s);
// delta[b, h, s] = sum_d dO * O (O, dO token-major bf16).
void FlashAttentionBwdDot(const bf16* o, const bf16* dout, float* delta, int batch, int seq, int hq,
                          int headDim, cudaStream_t s);
// dq (fp32, head-major) += ...; dk, dv (fp32, head-major) += ... for one key chunk.
void FlashAttentionBwd(const bf16* q, const bf16* k, const bf16* v, const bf16* dout,
                       const float* lse, const float* delta, float* dq, float* dk, float* dv,
                       bool causal, int batch, int seq, int hq, int hkv, int headDim,
                       cudaStream_t s);

// cuBLAS attention path: scores (fp32 [rows, seq]) -> probabilities (bf16), causal mask, scale.
void SoftmaxFwd(const float* scores, bf16* probs, int rows, int seq, float scale, cudaStream_t s);
// dscores = p * (dp - sum(dp * p)) * scale, bf16.
void SoftmaxBwd(const bf16* probs, const float* dprobs, bf16* dscores, int rows, int seq,
                float scale, cudaStream_t s);

enum class ActKind
{
    SwiGlu,
    SquaredRelu,
    Gelu
};
// in [rows, 2 f] (gate | up) for SwiGLU, else [rows, f]; out [rows, f].
void ActivationFwd(ActKind kind, const bf16* in, bf16* out, int64_t rows, int f, cudaStream_t s);
void ActivationBwd(ActKind kind, const bf16* in, const bf16* dout, bf16* din, int64_t rows, int f,
                   cudaStream_t s);

void ResidualAdd(const bf16* a, const bf16* b, bf16* out, int64_t n, cudaStream_t s);
// fp8 formats as Transformer Engine's hybrid recipe uses them: e4m3 for weights and activations,
// e5m2 (more range) for gradients.
enum class Fp8Format
{
    E4M3,
    E5M2
};
// bf16 [rows, cols] -> fp8 [rows, cols], or [cols, rows] when transposed.
void CastToFp8(const bf16* in, void* out, int64_t rows, int64_t cols, Fp8Format format,
               bool transpose, cudaStream_t s);
void GradAccumulate(float* dst, const float* src, int64_t n, cudaStream_t s); // dst += src
void CastFp32ToBf16(const float* in, bf16* out, int64_t n, cudaStream_t s);

// Vocab-parallel cross-entropy over logits [rows, vocabLocal] (this rank's vocabulary slice
// starts at vocabLo). Step 1: per-row local max, sum of exp relative to it, and target logit.
void CrossEntropyStats(const bf16* logits, const int* targets, float* rowMax, float* rowSum,
                       float* rowTarget, float* chunkScratch, int rows, int vocabLocal, int vocabLo,
                       cudaStream_t s);
// After the global max is known: rowSum *= exp(localMax - globalMax) (before a SUM all-reduce).
void CrossEntropyRescale(const float* localMax, const float* globalMax, float* rowSum, int rows,
                         cudaStream_t s);
// loss += sum_rows (log sum + max - target) x lossWeight; logits <- (softmax - onehot) x
// gradScale in place.
void CrossEntropyLossAndGrad(bf16* logits, const int* targets, const float* rowMax,
                             const float* rowSum, const float* rowTarget, float* lossSum, int rows,
                             int vocabLocal, int vocabLo, float lossWeight, float gradScale,
                             cudaStream_t s);

// sumsq += weight x sum(g^2) over n elements.
void GradSumSquares(const float* grad, int64_t n, float weight, float* sumsq, cudaStream_t s);
// AdamW on fp32 master weights with the global-norm clip read from sumsq on the device; writes
// the bf16 parameters and zeroes the gradients.
void AdamWStep(float* master, bf16* param, float* grad, float* m, float* v, int64_t n,
               const float* sumsq, float clip, float lr, float beta1, float beta2, float eps,
               float weightDecay, int step, cudaStream_t s);

} // namespace traingpt
