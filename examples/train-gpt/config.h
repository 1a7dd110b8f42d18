// train-gpt's configuration: model presets with their published shapes, the command line, and the
// parallel layout derived from WORLD_SIZE. Host-only C++: nothing here touches a GPU, so every
// configuration error is reported before any GPU work.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace traingpt
{

enum class Norm
{
    RmsNorm,
    LayerNorm
};

enum class Activation
{
    SwiGlu,      // llama: silu(gate) * up, two input projections
    SquaredRelu, // nemotron-4: relu(x)^2, one input projection
    Gelu         // gpt-3: gelu(x), one input projection
};

struct ModelShape
{
    std::string name;
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kvHeads = 0;
    int ffn = 0;
    int vocab = 0;
    int seqLen = 0;
    Norm norm = Norm::RmsNorm;
    Activation activation = Activation::SwiGlu;
    double ropeTheta = 10000.0;

    int HeadDim() const { return hidden / heads; }
    bool Gated() const { return activation == Activation::SwiGlu; }
};

enum class Precision
{
    Bf16,
    Fp8
};

enum class Checkpointing
{
    None,
    Selective, // recompute norms and the MLP activation; keep GEMM outputs and attention
    Full       // keep only each layer's input; recompute the whole layer in backward
};

enum class AttentionImpl
{
    Flash, // our fused kernel, forward and backward
    Cublas // scores through strided-batched GEMMs and an explicit softmax
};

struct Options
{
    std::string model;
    int seqLen = 0; // 0: the preset's
    // Shape overrides (0: the preset's), for models of a preset's family at other sizes.
    int layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0, vocab = 0;
    int localBatch = 1;  // sequences per micro-batch per data-parallel rank
    int globalBatch = 0; // 0: localBatch x DP (no accumulation)
    int tp = 1, pp = 1, vp = 1, cp = 1;
    bool fsdp = false;
    bool distributedOptimizer = false; // ZeRO-1 over the data ranks (Megatron's)
    bool sequenceParallel = false;
    Precision precision = Precision::Bf16;
    Checkpointing ac = Checkpointing::None;
    AttentionImpl attention = AttentionImpl::Flash;
    int steps = 10;
    int warmupSteps = 2; // LR warm-up steps, also left out of the median step time
    uint64_t seed = 1234;
    double lr = 3e-4;
    double gradClip = 1.0;
    bool help = false;
};

// The parallel layout of one run. Rank order is Megatron's: tp fastest, then cp, dp, pp slowest.
struct Layout
{
    int world = 1, rank = 0, localRank = 0;
    int tp = 1, cp = 1, dp = 1, pp = 1, vp = 1;
    int tpRank = 0, cpRank = 0, dpRank = 0, ppRank = 0;
    int microBatches = 1; // gradient-accumulation steps per optimizer step
    int seqLocal = 0;     // tokens of a sequence on this rank (seqLen / cp)
    int vocabPadded = 0;  // vocabulary padded to a multiple of 128 x tp (Megatron's rule)
    int layersPerChunk = 0;
};

struct UsageError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

const char* Usage();
Options ParseCommandLine(int argc, char** argv); // throws UsageError
ModelShape Preset(const std::string& name);      // throws UsageError naming the known presets
// Checks divisibility (heads, kv heads, ffn, vocab by tp; layers by pp x vp; seq by cp and tp;
// global batch by local batch x DP; micro-batches by pp for interleaving) and returns the layout.
Layout MakeLayout(const Options& options, ModelShape& shape, int world, int rank, int localRank);

} // namespace traingpt
