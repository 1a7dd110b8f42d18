// train-gpt: trains a decoder-only transformer (llama-, nemotron- and GPT-style presets) with
// data, fully sharded data, tensor, sequence, pipeline and context parallelism, on real GPUs with
// CUDA, cuBLAS and NCCL. One process per GPU (torchrun's environment: WORLD_SIZE, RANK,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT). Each step prints one line in torchtitan's form on rank 0.
#include "config.h"
#include "kernels.h"
#include "model.h"
#include "runtime.h"
#include "schedule.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace traingpt;

namespace
{

int
EnvInt(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v)
        return fallback;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 0)
        throw UsageError(std::string(name) + "='" + v + "' is not a non-negative integer");
    return int(n);
}

// Dense bf16 peak (FLOP/s) by device name: NVIDIA's datasheets.
double
PeakBf16(const std::string& name)
{
    struct Row
    {
        const char* key;
        double tflops;
    };
    static const Row rows[] = {{"GB200", 2450},    {"B200", 2250},    {"H200", 989.4},
                               {"H100 PCIe", 756}, {"H100 NVL", 835}, {"H100", 989.4},
                               {"H800", 989.4},    {"H20", 148},      {"A100", 312},
                               {"A800", 312},      {"L40S", 362},     {"A10", 125}};
    for (const Row& r : rows)
        if (name.find(r.key) != std::string::npos)
            return r.tflops * 1e12;
    return 0;
}

// torchtitan's count: 6 x parameters other than the embedding, plus attention's 12 l h q t.
double
FlopsPerToken(const ModelShape& s)
{
    const double d = s.hidden, hd = s.HeadDim();
    const double norms = (s.norm == Norm::LayerNorm ? 2 : 1) * d;
    const double layer = 2 * norms + d * (s.heads + 2 * s.kvHeads) * hd + s.heads * hd * d +
                         d * s.ffn * (s.Gated() ? 3 : 2);
    const double params = s.layers * layer + norms + double(s.vocab) * d;
    return 6 * params + 12.0 * s.layers * s.heads * hd * s.seqLen;
}

std::string
Thousands(double v)
{
    std::string digits = std::to_string(static_cast<long long>(v + 0.5)), out;
    for (size_t i = 0; i < digits.size(); i++)
    {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return out;
}

const char*
Name(Checkpointing ac)
{
    return ac == Checkpointing::Full ? "full"
                                     : (ac == Checkpointing::Selective ? "selective" : "none");
}

int
Train(const Options& o, ModelShape shape, const Layout& l)
{
    CUDA_CHECK(cudaSetDevice(l.localRank));
    DeviceMemory mem;
    mem.Init(l.localRank);
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, l.localRank));
    Streams streams;
    for (cudaStream_t* s : {&streams.compute, &streams.data, &streams.actSend, &streams.actRecv,
                            &streams.gradSend, &streams.gradRecv, &streams.cp})
        CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    Blas blas;
    CUBLAS_CHECK(cublasCreate(&blas.handle));
    CUBLAS_CHECK(cublasLtCreate(&blas.lt));
    blas.ltWorkspaceBytes = 32u << 20;
    blas.ltWorkspace = mem.Alloc(blas.ltWorkspaceBytes, streams.compute, "the cuBLASLt workspace");
    CUBLAS_CHECK(cublasSetWorkspace(blas.handle, blas.ltWorkspace, blas.ltWorkspaceBytes));
    Comms comms = InitComms(l);

    Model model(shape, o, l, comms, mem, blas, streams);
    const std::vector<PipelineAction> schedule =
        PipelineSchedule(l.pp, l.vp, l.ppRank, l.microBatches);
    const double globalTokens = double(l.microBatches) * l.dp * o.localBatch * shape.seqLen;
    const double flopsPerToken = FlopsPerToken(shape);
    const double peak = PeakBf16(prop.name);
    if (l.rank == 0)
    {
        std::printf("train-gpt: %s (%d layers, hidden %d, %d heads / %d kv, ffn %d, vocab %d), "
                    "seq %d, global batch %d (local %d x dp %d x accumulation %d)\n",
                    shape.name.c_str(), shape.layers, shape.hidden, shape.heads, shape.kvHeads,
                    shape.ffn, shape.vocab, shape.seqLen, l.microBatches * l.dp * o.localBatch,
                    o.localBatch, l.dp, l.microBatches);
        std::printf("train-gpt: %d GPUs (%s): dp %d%s tp %d%s pp %d vp %d cp %d, %s, ac %s, "
                    "attention %s; this rank holds %s parameters\n",
                    l.world, prop.name, l.dp,
                    o.fsdp ? " (fsdp)" : (o.distributedOptimizer ? " (distributed optimizer)" : ""),
                    l.tp, o.sequenceParallel ? " (sp)" : "", l.pp, l.vp, l.cp,
                    o.precision == Precision::Fp8 ? "fp8" : "bf16", Name(o.ac),
                    o.attention == AttentionImpl::Flash ? "flash" : "cublas",
                    Thousands(double(model.ParameterCount())).c_str());
        std::fflush(stdout);
    }
    std::vector<double> times;
    for (int step = 1; step <= o.steps; step++)
    {
        CUDA_CHECK(cudaDeviceSynchronize());
        const auto start = std::chrono::steady_clock::now();
        for (const PipelineAction& a : schedule)
        {
            if (a.forward)
                model.Forward(step, a.microBatch, a.chunk);
            else
                model.Backward(a.microBatch, a.chunk);
        }
        const float lr = float(o.lr * std::min(1.0, double(step) / double(o.warmupSteps + 1)));
        model.OptimizerStep(step, lr);
        const double loss = model.StepLossSum() / globalTokens;
        CUDA_CHECK(cudaDeviceSynchronize());
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        times.push_back(seconds);
        const double tps = globalTokens / seconds / l.world;
        const double tflops = flopsPerToken * tps / 1e12;
        if (l.rank == 0)
        {
            const double gib = double(mem.PeakReserved()) / double(1ull << 30);
            char mfu[32] = "n/a";
            if (peak > 0)
                std::snprintf(mfu, sizeof(mfu), "%.2f%%", 100.0 * tflops * 1e12 / peak);
            // Milliseconds to the microsecond below a second (a small model's step is a few).
            std::printf("step: %d  loss: %.4f  memory: %.2fGiB(%.2f%%)  tps: %s  tflops: %.2f  "
                        "mfu: %s  time: %.*fs\n",
                        step, loss, gib,
                        100.0 * double(mem.PeakReserved()) / double(mem.Capacity()),
                        Thousands(tps).c_str(), tflops, mfu, seconds < 1 ? 6 : 3, seconds);
            std::fflush(stdout);
        }
    }
    model.FinishParameterGathers();
    std::vector<double> after(times.begin() + std::min<size_t>(times.size() - 1, o.warmupSteps),
                              times.end());
    std::sort(after.begin(), after.end());
    const double median = after.size() % 2
                              ? after[after.size() / 2]
                              : 0.5 * (after[after.size() / 2 - 1] + after[after.size() / 2]);
    if (l.rank == 0)
        std::printf("train-gpt: median step time %.*fs over %zu steps after %d warm-up; peak "
                    "memory %s reserved\n",
                    median < 1 ? 6 : 3, median, after.size(), int(times.size() - after.size()),
                    FormatBytes(double(mem.PeakReserved())).c_str());
    for (ncclComm_t c :
         {comms.tp.comm, comms.cp.comm, comms.data.comm, comms.actSend.comm, comms.actRecv.comm,
          comms.gradSend.comm, comms.gradRecv.comm, comms.world.comm})
        if (c)
            ncclCommDestroy(c);
    cublasLtDestroy(blas.lt);
    cublasDestroy(blas.handle);
    return 0;
}

} // namespace

int
main(int argc, char** argv)
{
    int rank = 0;
    try
    {
        Options o = ParseCommandLine(argc, argv);
        if (o.help)
        {
            std::fputs(Usage(), stdout);
            return 0;
        }
        ModelShape shape = Preset(o.model);
        const int world = EnvInt("WORLD_SIZE", 1);
        rank = EnvInt("RANK", 0);
        const int localRank = EnvInt("LOCAL_RANK", rank);
        Layout l = MakeLayout(o, shape, world, rank, localRank);
        return Train(o, shape, l);
    }
    catch (const UsageError& e)
    {
        std::fprintf(stderr, "train-gpt: %s\n%s", e.what(), Usage());
        return 2;
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "train-gpt: rank %d: %s\n", rank, e.what());
        return 1;
    }
}
