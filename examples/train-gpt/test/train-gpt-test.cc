// train-gpt under `eidolon run` on 2 and 4 simulated H100s (topologies/default.yaml), tiny model.
// The collective bytes each scheme moves per step come from summary.json (GPU 0's NCCL calls by
// kind, bytes as NCCL-tests count them: the whole buffer for all-gather and reduce-scatter) and
// are compared with the formula for the scheme; memory also from summary.json.
// Host CPU scale 0: every time is modelled, so two runs give identical virtual times.
//
// tiny: 4 layers, hidden d = 256, 4 heads / 2 kv heads of 64, ffn 768 (SwiGLU), vocab 2048,
// seq 256, local batch 1. Elements per unit (one tp rank of tp = 1):
//   layer     = norm 256 + norm 256 + qkv (4 + 2 + 2) 64 x 256 + wo 256 x 256
//               + w1 2 x 768 x 256 + w2 256 x 768          = 786,944
//   embedding = 2048 x 256                                 = 524,288
//   head      = norm 256 + 2048 x 256                      = 524,544
//   total P   = 4 x 786,944 + 524,288 + 524,544            = 4,196,608
#define BOOST_TEST_MODULE train_gpt
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace
{

constexpr double kLayer = 786944, kEmbedding = 524288, kHead = 524544;
constexpr double kParams = 4 * kLayer + kEmbedding + kHead;

std::string
Slurp(const fs::path& path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

struct Run
{
    int status = -1;
    std::string out;
    nlohmann::json summary;
    // Bytes and calls per kind of NCCL call on GPU 0, from summary.json.
    std::map<std::string, double> bytes;
    std::map<std::string, int> calls;
};

Run
Train(int gpus, const std::string& args, const std::string& tag)
{
    fs::path dir =
        fs::temp_directory_path() / ("train-gpt-test-" + std::to_string(getpid()) + "-" + tag);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string cmd = "EIDOLON_HOST_CPU_SCALE=0 " EIDOLON_BIN_DIR "/eidolon run --topology " +
                      std::string(EIDOLON_SOURCE_DIR) + "/topologies/default.yaml --gpus " +
                      std::to_string(gpus) + " --progress off --watchdog 120 --out " +
                      (dir / "out").string() + " -- " EIDOLON_BIN_DIR "/train-gpt --model tiny " +
                      args + " >" + (dir / "stdout").string() + " 2>&1";
    Run r;
    int status = std::system(cmd.c_str());
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(dir / "stdout");
    BOOST_TEST_INFO("output:\n" << r.out);
    BOOST_REQUIRE_EQUAL(r.status, 0);
    r.summary = nlohmann::json::parse(Slurp(dir / "out" / "summary.json"));
    for (const auto& gpu : r.summary["gpus"])
    {
        if (gpu["gpu"] != 0)
            continue;
        for (const auto& [call, totals] : gpu["communication"].items())
        {
            r.calls["nccl" + call] = totals["calls"];
            r.bytes["nccl" + call] = totals["bytes"];
        }
    }
    fs::remove_all(dir);
    return r;
}

bool
Completed(const Run& r, int steps)
{
    return r.out.find("step: " + std::to_string(steps) + "  loss: ") != std::string::npos &&
           r.out.find("median step time") != std::string::npos;
}

} // namespace

// DDP on 2 GPUs, one step: each unit's fp32 gradients all-reduced once (6 units, 4 P bytes),
// plus two 4-byte all-reduces (gradient norm, loss).
BOOST_AUTO_TEST_CASE(ddp_all_reduces_the_gradient_bytes_once)
{
    Run r = Train(2, "--steps 1", "ddp");
    BOOST_TEST(Completed(r, 1));
    BOOST_TEST(r.calls["ncclAllReduce"] == 6 + 2);
    BOOST_TEST(r.bytes["ncclAllReduce"] == 4 * kParams + 2 * 4);
    BOOST_TEST(r.calls.count("ncclAllGather") == 0u);
}

// FSDP on 2 GPUs, one step: bf16 all-gathers of each layer before its forward and backward, of
// the embedding and the head once (the embedding's backward needs no parameters; the head's
// forward and backward run together); one fp32 reduce-scatter of every unit. Unit sizes are even,
// so the shards need no padding.
BOOST_AUTO_TEST_CASE(fsdp_gathers_parameters_twice_and_reduce_scatters_gradients_once)
{
    Run r = Train(2, "--steps 1 --fsdp", "fsdp");
    BOOST_TEST(Completed(r, 1));
    BOOST_TEST(r.calls["ncclAllGather"] == 2 * 4 + 1 + 1);
    BOOST_TEST(r.bytes["ncclAllGather"] == 2 * (2 * 4 * kLayer + kEmbedding + kHead));
    BOOST_TEST(r.calls["ncclReduceScatter"] == 6);
    BOOST_TEST(r.bytes["ncclReduceScatter"] == 4 * kParams);
}

// FSDP holds half of the 18 bytes per parameter (bf16 weights, fp32 master, moments, gradients)
// that DDP holds: the difference of the peaks is 9 P bytes, less what FSDP's gathered
// parameters and unsharded gradients take. The caching allocator keeps blocks by size, so that is
// at most three layers' bf16 parameters plus one embedding's and one head's, and one fp32
// unsharded-gradient buffer and one half-size reduce-scatter output per unit size:
// 3 x 2 x 786,944 + 2 x (524,288 + 524,544) + (4 + 2) x (786,944 + 524,288 + 524,544)
// = 17,833,984 bytes. DDP's peak is its 18 P bytes, the 32 MiB
// cuBLASLt workspace and at most 16 MiB of activations and temporaries.
BOOST_AUTO_TEST_CASE(peak_memory_follows_the_state_arithmetic)
{
    Run ddp = Train(2, "--steps 1", "mem-ddp");
    Run fsdp = Train(2, "--steps 1 --fsdp", "mem-fsdp");
    const double ddpPeak = ddp.summary["gpus"][0]["peak_bytes"];
    const double fsdpPeak = fsdp.summary["gpus"][0]["peak_bytes"];
    const double state = 18 * kParams, workspace = 32 << 20;
    BOOST_TEST(ddpPeak >= state + workspace);
    BOOST_TEST(ddpPeak <= state + workspace + (16 << 20));
    BOOST_TEST(ddpPeak - fsdpPeak <= 9 * kParams);
    BOOST_TEST(ddpPeak - fsdpPeak >= 9 * kParams - 17833984);
}

// Distributed optimizer (Megatron's, ZeRO-1) on 2 GPUs, one step: each unit's fp32 gradients
// reduce-scattered once after backward (4 P bytes, whole buffers), each unit's bf16 parameters
// all-gathered once after the optimizer (2 P bytes); only the norm and loss are all-reduced.
// Memory: the fp32 master weights and both moments are halved, 12 P -> 6 P bytes, and nothing
// else changes (both collectives work in place), so DDP's peak is 6 P bytes higher.
BOOST_AUTO_TEST_CASE(distributed_optimizer_reduce_scatters_gradients_and_gathers_parameters)
{
    Run ddp = Train(2, "--steps 1", "distopt-ddp");
    Run r = Train(2, "--steps 1 --distributed-optimizer", "distopt");
    BOOST_TEST(Completed(r, 1));
    BOOST_TEST(r.calls["ncclReduceScatter"] == 6);
    BOOST_TEST(r.bytes["ncclReduceScatter"] == 4 * kParams);
    BOOST_TEST(r.calls["ncclAllGather"] == 6);
    BOOST_TEST(r.bytes["ncclAllGather"] == 2 * kParams);
    BOOST_TEST(r.calls["ncclAllReduce"] == 2);
    BOOST_TEST(r.bytes["ncclAllReduce"] == 2 * 4);
    const double ddpPeak = ddp.summary["gpus"][0]["peak_bytes"];
    const double peak = r.summary["gpus"][0]["peak_bytes"];
    BOOST_TEST(ddpPeak - peak == 6 * kParams);
}

// TP 2 without SP, one step: per layer two bf16 all-reduces of tokens x hidden (256 x 256 x 2 =
// 131,072 bytes) in forward and two in backward; one after the vocab-parallel embedding, one for
// the head's input gradient: 18. Cross-entropy adds a max (256 x 4 bytes) and a sum of sums and
// target logits (2 x 256 x 4); gradient norm and loss 4 bytes each.
BOOST_AUTO_TEST_CASE(tensor_parallel_all_reduces_activations)
{
    Run r = Train(2, "--steps 1 --tp 2", "tp");
    BOOST_TEST(Completed(r, 1));
    BOOST_TEST(r.calls["ncclAllReduce"] == 18 + 2 + 2);
    BOOST_TEST(r.bytes["ncclAllReduce"] == 18 * 131072 + 1024 + 2048 + 8);
}

// With sequence parallelism those become reduce-scatters and all-gathers (whole buffer 131,072
// bytes each): forward per layer 2 gathers (norm outputs) and 2 reduce-scatters; backward 4
// gathers (output gradients and the two saved norm outputs) and 2 reduce-scatters; embedding:
// one reduce-scatter forward, one gather backward; head: one gather forward, one reduce-scatter.
// The norm weights' gradients are all-reduced over tp (fp32: 2 x 256 x 4 bytes per layer, 256 x 4
// for the head).
BOOST_AUTO_TEST_CASE(sequence_parallel_gathers_and_scatters_instead)
{
    Run r = Train(2, "--steps 1 --tp 2 --sequence-parallel", "sp");
    BOOST_TEST(Completed(r, 1));
    BOOST_TEST(r.calls["ncclAllGather"] == 4 * 6 + 1 + 1);
    BOOST_TEST(r.bytes["ncclAllGather"] == (4 * 6 + 2) * 131072.0);
    BOOST_TEST(r.calls["ncclReduceScatter"] == 4 * 4 + 1 + 1);
    BOOST_TEST(r.bytes["ncclReduceScatter"] == (4 * 4 + 2) * 131072.0);
    BOOST_TEST(r.bytes["ncclAllReduce"] == 4 * 2048 + 1024 + 1024 + 2048 + 8);
}

// PP 2 with 2 micro-batches (1F1B) and interleaved (vp 2, 4 micro-batches): every run completes;
// stage 0 sends one activation per micro-batch and chunk boundary it owns and receives one
// gradient for each.
BOOST_AUTO_TEST_CASE(pipeline_schedules_complete)
{
    Run oneF = Train(2, "--steps 1 --pp 2 --global-batch 2", "pp");
    BOOST_TEST(Completed(oneF, 1));
    BOOST_TEST(oneF.calls["ncclSend"] == 2);
    BOOST_TEST(oneF.calls["ncclRecv"] == 2);
    // interleaved: rank 0 holds chunks 0 and 2 of 4; chunk 0 sends forward, chunk 2 receives
    // forward and sends forward and backward... per micro-batch: sends = 1 (c0) + 1 (c2 fwd) +
    // 1 (c2 bwd) = 3, receives = 1 (c2 fwd input) + 1 (c2 bwd) + 1 (c0 bwd) = 3.
    Run inter = Train(2, "--steps 1 --pp 2 --vp 2 --global-batch 4", "vpp");
    BOOST_TEST(Completed(inter, 1));
    BOOST_TEST(inter.calls["ncclSend"] == 4 * 3);
    BOOST_TEST(inter.calls["ncclRecv"] == 4 * 3);
}

// CP 2 on 2 GPUs, one step. Each rank holds 128 of the 256 tokens: keys and values are
// 2 x (2 kv heads x 128 x 64) = 32,768 elements. Per layer: forward one exchange of them (bf16,
// 65,536 bytes); backward two: the first with the keys and values and their fp32 gradients
// (65,536 + 131,072 bytes), the last with the gradients alone (131,072). So 4 sends of 393,216
// bytes per layer, 16 and 1,572,864 over the 4 layers, and as many receives. Load-balanced: each
// rank holds 2 of the 4 chunks (rank 0 chunks 0 and 3, rank 1 chunks 1 and 2) and runs the same
// attention blocks (a diagonal of two causal 64-token blocks and one whole, two whole blocks from
// its peer), so both GPUs compute exactly as long.
BOOST_AUTO_TEST_CASE(context_parallel_exchanges_keys_values_and_balances_work)
{
    Run r = Train(2, "--steps 1 --cp 2", "cp-bytes");
    BOOST_TEST(Completed(r, 1));
    BOOST_TEST(r.calls["ncclSend"] == 16);
    BOOST_TEST(r.bytes["ncclSend"] == 1572864.0);
    BOOST_TEST(r.calls["ncclRecv"] == 16);
    BOOST_TEST(r.bytes["ncclRecv"] == 1572864.0);
    const double compute0 = r.summary["gpus"][0]["compute_ns"];
    const double compute1 = r.summary["gpus"][1]["compute_ns"];
    BOOST_TEST(compute0 > 0);
    BOOST_TEST(std::abs(compute0 - compute1) < 1.0);
}

// CP 2 and combinations on 4 GPUs complete.
BOOST_AUTO_TEST_CASE(context_parallel_and_combinations_complete)
{
    BOOST_TEST(Completed(Train(2, "--steps 2 --cp 2", "cp"), 2));
    BOOST_TEST(Completed(Train(4, "--steps 2 --tp 2 --fsdp", "tp-fsdp"), 2));
    BOOST_TEST(Completed(Train(4, "--steps 2 --pp 2 --cp 2 --global-batch 4", "pp-cp"), 2));
    BOOST_TEST(Completed(
        Train(4, "--steps 2 --pp 2 --vp 2 --tp 2 --sequence-parallel --global-batch 4", "pp-tp-sp"),
        2));
    BOOST_TEST(Completed(Train(2, "--steps 2 --ac full --precision fp8 --fsdp", "ac-fp8"), 2));
    BOOST_TEST(Completed(Train(2, "--steps 2 --attention cublas --ac selective", "cublas"), 2));
}

// The same run twice ends at the same virtual time. Seen here: the ends differ by up to 0.2 ns
// (of 1.85 ms) between runs, a sub-nanosecond jitter inside eidolon, not in the program (whose
// work is the same call for call); the check allows 1 ns.
BOOST_AUTO_TEST_CASE(virtual_step_times_repeat)
{
    Run a = Train(2, "--steps 2 --fsdp", "repeat-a");
    Run b = Train(2, "--steps 2 --fsdp", "repeat-b");
    BOOST_TEST(std::abs(double(a.summary["virtual_end_ns"]) - double(b.summary["virtual_end_ns"])) <
               1.0);
    BOOST_TEST(double(a.summary["virtual_end_ns"]) > 0);
}
