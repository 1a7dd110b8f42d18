// Presets, command line and layout checks (config.h).
#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace traingpt
{

namespace
{

// Published shapes: Llama 3 (Meta's model card and params.json), Nemotron-4 15B/340B (NVIDIA's
// technical reports, arXiv 2402.16819 and 2406.11704), GPT-3 175B (Brown et al. 2020, table 2.1).
std::vector<ModelShape>
Presets()
{
    std::vector<ModelShape> all;
    auto add = [&](const char* name, int layers, int hidden, int heads, int kv, int ffn, int vocab,
                   int seq, Norm norm, Activation act, double theta)
    {
        ModelShape s;
        s.name = name;
        s.layers = layers;
        s.hidden = hidden;
        s.heads = heads;
        s.kvHeads = kv;
        s.ffn = ffn;
        s.vocab = vocab;
        s.seqLen = seq;
        s.norm = norm;
        s.activation = act;
        s.ropeTheta = theta;
        all.push_back(s);
    };
    add("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, Norm::RmsNorm, Activation::SwiGlu, 5e5);
    add("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, Norm::RmsNorm, Activation::SwiGlu, 5e5);
    add("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, Norm::RmsNorm, Activation::SwiGlu,
        5e5);
    add("nemotron4-15b", 32, 6144, 48, 8, 24576, 256000, 4096, Norm::RmsNorm,
        Activation::SquaredRelu, 1e4);
    add("nemotron4-340b", 96, 18432, 96, 8, 73728, 256000, 4096, Norm::RmsNorm,
        Activation::SquaredRelu, 1e4);
    add("gpt3-175b", 96, 12288, 96, 96, 49152, 50257, 2048, Norm::LayerNorm, Activation::Gelu, 1e4);
    // Single-GPU sizes, for checks against a real GPU: Llama 3.2 1B (Meta's model card: 16 layers,
    // 2048 hidden, 32/8 heads, 8192 ffn) and GPT-2 small (12 layers, 768 hidden, 12 heads).
    add("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, 8192, Norm::RmsNorm, Activation::SwiGlu, 5e5);
    add("gpt2-124m", 12, 768, 12, 12, 3072, 50304, 1024, Norm::LayerNorm, Activation::Gelu, 1e4);
    // tiny: small enough for tests on 2 cores; head dim 64; vocab a multiple of 128 x 4.
    add("tiny", 4, 256, 4, 2, 768, 2048, 256, Norm::RmsNorm, Activation::SwiGlu, 1e4);
    return all;
}

int
ParseInt(const std::string& flag, const char* text, int min)
{
    if (!text)
        throw UsageError(flag + " needs a value");
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < min || v > (1L << 30))
        throw UsageError("invalid value '" + std::string(text) + "' for " + flag +
                         ": expected an integer >= " + std::to_string(min));
    return int(v);
}

void
Require(bool ok, const std::string& what)
{
    if (!ok)
        throw UsageError(what);
}

} // namespace

const char*
Usage()
{
    return "USAGE: train-gpt --model NAME [--seq-len N] [--local-batch N] [--global-batch N]\n"
           "                 [--layers N] [--hidden N] [--heads N] [--kv-heads N] [--ffn N] "
           "[--vocab N]\n"
           "                 [--tp N] [--pp N] [--vp N] [--cp N] [--fsdp] "
           "[--distributed-optimizer]\n"
           "                 [--sequence-parallel] [--precision bf16|fp8] [--ac "
           "none|selective|full]\n"
           "                 [--steps N] [--warmup-steps N] [--attention flash|cublas] [--seed N]\n"
           "  models: llama3-8b llama3-70b llama3-405b nemotron4-15b nemotron4-340b gpt3-175b "
           "llama3.2-1b gpt2-124m tiny\n"
           "  WORLD_SIZE, RANK, LOCAL_RANK (as torchrun sets them) give the processes; the NCCL "
           "id\n"
           "  goes through a TCP store on MASTER_ADDR:MASTER_PORT. DP = WORLD_SIZE/(tp*pp*cp).\n";
}

Options
ParseCommandLine(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; i++)
    {
        std::string a = argv[i];
        const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
        auto value = [&]()
        {
            i++;
            return next;
        };
        if (a == "--help" || a == "-h")
            o.help = true;
        else if (a == "--model")
        {
            const char* v = value();
            Require(v != nullptr, "--model needs a value");
            o.model = v;
        }
        else if (a == "--seq-len")
            o.seqLen = ParseInt(a, value(), 1);
        else if (a == "--layers")
            o.layers = ParseInt(a, value(), 1);
        else if (a == "--hidden")
            o.hidden = ParseInt(a, value(), 1);
        else if (a == "--heads")
            o.heads = ParseInt(a, value(), 1);
        else if (a == "--kv-heads")
            o.kvHeads = ParseInt(a, value(), 1);
        else if (a == "--ffn")
            o.ffn = ParseInt(a, value(), 1);
        else if (a == "--vocab")
            o.vocab = ParseInt(a, value(), 1);
        else if (a == "--local-batch")
            o.localBatch = ParseInt(a, value(), 1);
        else if (a == "--global-batch")
            o.globalBatch = ParseInt(a, value(), 1);
        else if (a == "--tp")
            o.tp = ParseInt(a, value(), 1);
        else if (a == "--pp")
            o.pp = ParseInt(a, value(), 1);
        else if (a == "--vp")
            o.vp = ParseInt(a, value(), 1);
        else if (a == "--cp")
            o.cp = ParseInt(a, value(), 1);
        else if (a == "--steps")
            o.steps = ParseInt(a, value(), 1);
        else if (a == "--warmup-steps")
            o.warmupSteps = ParseInt(a, value(), 0);
        else if (a == "--seed")
            o.seed = uint64_t(ParseInt(a, value(), 0));
        else if (a == "--fsdp")
            o.fsdp = true;
        else if (a == "--distributed-optimizer")
            o.distributedOptimizer = true;
        else if (a == "--sequence-parallel")
            o.sequenceParallel = true;
        else if (a == "--precision")
        {
            std::string v = value() ? next : "";
            Require(v == "bf16" || v == "fp8",
                    "invalid value '" + v + "' for --precision: expected bf16 or fp8");
            o.precision = v == "fp8" ? Precision::Fp8 : Precision::Bf16;
        }
        else if (a == "--ac")
        {
            std::string v = value() ? next : "";
            Require(v == "none" || v == "selective" || v == "full",
                    "invalid value '" + v + "' for --ac: expected none, selective or full");
            o.ac = v == "full"
                       ? Checkpointing::Full
                       : (v == "selective" ? Checkpointing::Selective : Checkpointing::None);
        }
        else if (a == "--attention")
        {
            std::string v = value() ? next : "";
            Require(v == "flash" || v == "cublas",
                    "invalid value '" + v + "' for --attention: expected flash or cublas");
            o.attention = v == "cublas" ? AttentionImpl::Cublas : AttentionImpl::Flash;
        }
        else
            throw UsageError("unknown argument '" + a + "'");
    }
    if (!o.help && o.model.empty())
        throw UsageError("no model given (--model NAME)");
    return o;
}

ModelShape
Preset(const std::string& name)
{
    std::string known;
    for (const ModelShape& s : Presets())
    {
        if (s.name == name)
            return s;
        known += (known.empty() ? "" : ", ") + s.name;
    }
    throw UsageError("unknown model '" + name + "' (presets: " + known + ")");
}

Layout
MakeLayout(const Options& o, ModelShape& shape, int world, int rank, int localRank)
{
    if (o.seqLen > 0)
        shape.seqLen = o.seqLen;
    // The preset gives the family (norm, MLP, rotary base); the flags its size.
    for (auto [flag, field] :
         {std::make_pair(o.layers, &shape.layers), std::make_pair(o.hidden, &shape.hidden),
          std::make_pair(o.heads, &shape.heads), std::make_pair(o.kvHeads, &shape.kvHeads),
          std::make_pair(o.ffn, &shape.ffn), std::make_pair(o.vocab, &shape.vocab)})
        if (flag > 0)
            *field = flag;
    Layout l;
    l.world = world;
    l.rank = rank;
    l.localRank = localRank;
    l.tp = o.tp;
    l.pp = o.pp;
    l.vp = o.vp;
    l.cp = o.cp;
    const int model = o.tp * o.pp * o.cp;
    Require(world % model == 0, "WORLD_SIZE " + std::to_string(world) +
                                    " is not divisible by tp*pp*cp = " + std::to_string(model));
    l.dp = world / model;
    Require(rank >= 0 && rank < world,
            "RANK " + std::to_string(rank) + " is not in [0, WORLD_SIZE)");
    l.tpRank = rank % o.tp;
    l.cpRank = (rank / o.tp) % o.cp;
    l.dpRank = (rank / (o.tp * o.cp)) % l.dp;
    l.ppRank = rank / (o.tp * o.cp * l.dp);

    auto divides = [&](int n, int d, const std::string& what, const std::string& by)
    {
        Require(n % d == 0, what + " (" + std::to_string(n) + ") is not divisible by " + by + " (" +
                                std::to_string(d) + ")");
    };
    divides(shape.hidden, shape.heads, shape.name + ": hidden size", "heads");
    divides(shape.heads, shape.kvHeads, shape.name + ": heads", "kv heads");
    divides(shape.heads, o.tp, shape.name + ": heads", "--tp");
    divides(shape.kvHeads, o.tp, shape.name + ": kv heads", "--tp");
    divides(shape.ffn, o.tp, shape.name + ": ffn size", "--tp");
    divides(shape.layers, o.pp * o.vp, shape.name + ": layers", "--pp x --vp");
    Require(!(o.fsdp && o.distributedOptimizer),
            "--fsdp and --distributed-optimizer exclude each other (FSDP already shards the "
            "optimizer state)");
    Require(o.vp == 1 || o.pp > 1, "--vp " + std::to_string(o.vp) + " needs --pp > 1");
    // Load-balanced ring attention splits each sequence into 2 cp chunks; each chunk must tile
    // the attention kernel's 64-row blocks.
    if (o.cp > 1)
        divides(shape.seqLen, 128 * o.cp, "--seq-len", "128 x --cp (2 cp chunks of 64-row blocks)");
    else
        divides(shape.seqLen, 64, "--seq-len", "64 (the attention kernel's blocks)");
    l.seqLocal = shape.seqLen / o.cp;
    if (o.sequenceParallel)
    {
        Require(o.tp > 1, "--sequence-parallel needs --tp > 1");
        divides(o.localBatch * l.seqLocal, o.tp, "tokens per micro-batch (local batch x seq/cp)",
                "--tp");
    }
    Require(!(o.attention == AttentionImpl::Cublas && o.cp > 1),
            "--attention cublas does not support --cp > 1 (ring attention uses the flash kernel)");
    const int hd = shape.HeadDim();
    Require(hd == 64 || hd == 128 || hd == 192, shape.name + ": head dim " + std::to_string(hd) +
                                                    " (the attention kernels have 64, 128 "
                                                    "and 192)");
    Require(shape.hidden % 256 == 0 && shape.ffn % 8 == 0,
            shape.name + ": hidden size must be a multiple of 256 and ffn of 8");
    const int perStep = o.localBatch * l.dp;
    const int global = o.globalBatch > 0 ? o.globalBatch : perStep;
    Require(global % perStep == 0, "--global-batch " + std::to_string(global) +
                                       " is not divisible by local batch x DP = " +
                                       std::to_string(o.localBatch) + " x " + std::to_string(l.dp));
    l.microBatches = global / perStep;
    if (o.vp > 1)
        divides(l.microBatches, o.pp, "micro-batches per step (global batch / (local batch x DP))",
                "--pp (the interleaved schedule needs it)");
    const int unit = 128 * o.tp;
    l.vocabPadded = (shape.vocab + unit - 1) / unit * unit;
    l.layersPerChunk = shape.layers / (o.pp * o.vp);
    return l;
}

} // namespace traingpt
