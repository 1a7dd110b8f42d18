// Unit tests of gpu-emu's core: GPU specs as the ranks load them, the pricing chain (roofline, GEMM
// model, profile database and its Kineto importer), the device address space and the host clock.
// Expected values are worked out by hand from test/gpu-emu/gpus/TEST-GPU.yaml.
#define BOOST_TEST_MODULE gpu_emu_core
#include "cost-model.h"
#include "emulator.h"
#include "fatbin.h"
#include "gpu-spec.h"
#include "host-clock.h"
#include "profile-db.h"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <vector>

using namespace eidolon::gpu;

namespace
{
const std::string kTestDir = EIDOLON_GPU_TEST_DIR;

GpuSpec
TestGpu()
{
    return ReadGpuSpec(kTestDir + "/gpus/TEST-GPU.yaml");
}
} // namespace

BOOST_AUTO_TEST_SUITE(gpu_spec)

BOOST_AUTO_TEST_CASE(loads_test_gpu)
{
    GpuSpec spec = TestGpu();
    BOOST_TEST(spec.name == "TEST-GPU");
    BOOST_TEST(spec.computeCapabilityMajor == 8);
    BOOST_TEST(spec.computeCapabilityMinor == 0);
    BOOST_TEST(spec.smCount == 100);
    BOOST_TEST(spec.memoryBytes == (uint64_t(1) << 30));
    BOOST_TEST(spec.memoryUsableBytes == (uint64_t(1) << 30));
    BOOST_TEST(spec.hbmBandwidth == 1e12);
    BOOST_TEST(DenseFlopsOf(spec).bf16 == 200e12);
    BOOST_TEST(spec.nvlinkBandwidth == 300e9);
    BOOST_TEST(spec.pcieBandwidth == 32e9);
    BOOST_TEST(spec.copyEngineEfficiency == 0.5);
    BOOST_TEST(spec.launchOverheadUs * 1e3 == 2000.0);
    BOOST_TEST(spec.launchLatencyUs * 1e3 == 3000.0);
}

BOOST_AUTO_TEST_CASE(every_shipped_spec_loads)
{
    // The clusters' own GPU files (topologies/gpus) load as the ranks read them; A100 says
    // `fp8: null` (no FP8 tensor cores), which means a zero rate, not an error.
    const std::string dir = EIDOLON_SHIPPED_GPU_DIR;
    for (const char* name : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200"})
    {
        GpuSpec spec = FindGpuSpec(name, {dir});
        BOOST_TEST(DenseFlopsOf(spec).bf16 > 0, name);
    }
    BOOST_TEST(DenseFlopsOf(FindGpuSpec("A100-SXM4-80GB", {dir})).fp8 == 0.0);
    BOOST_TEST(DenseFlopsOf(FindGpuSpec("A100-SXM4-80GB", {dir})).bf16 == 312e12);
}

BOOST_AUTO_TEST_CASE(missing_spec_names_where_it_looked)
{
    try
    {
        FindGpuSpec("NO-SUCH-GPU", {kTestDir + "/gpus"});
        BOOST_FAIL("expected an error");
    }
    catch (const std::runtime_error& e)
    {
        BOOST_TEST(std::string(e.what()).find("NO-SUCH-GPU.yaml") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(bad_field_is_reported)
{
    // TEST-GPU.yaml with a memory that is not a size.
    std::string text;
    {
        std::ifstream in(kTestDir + "/gpus/TEST-GPU.yaml");
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    text.replace(text.find("memory: 1GiB"), 12, "memory: lots");
    std::string dir = "/tmp/eidolon-bad-gpu-spec";
    std::filesystem::create_directories(dir);
    std::string path = dir + "/TEST-GPU.yaml";
    std::ofstream(path) << text;
    try
    {
        ReadGpuSpec(path);
        BOOST_FAIL("expected an error");
    }
    catch (const std::runtime_error& e)
    {
        BOOST_TEST(std::string(e.what()).find("'memory'") != std::string::npos);
    }
    std::remove(path.c_str());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pricing)

BOOST_AUTO_TEST_CASE(roofline_by_family)
{
    GpuSpec spec = TestGpu();
    RooflineModel roofline(1000);
    KernelInfo generic{"_Z4spinPf", "spin(float*)", nullptr};
    KernelInfo add{"x", "vectorized_elementwise_kernel<4>(int)", nullptr};
    // generic: 16 B/thread over 1 TB/s; 1e6 threads -> 16 us.
    BOOST_TEST(*roofline.PriceKernel({&generic, {1000, 1, 1}, {1000, 1, 1}, 0, -1}, spec) ==
               16000.0);
    // elementwise: 12 B/thread; 2e6 threads -> 24 us.
    BOOST_TEST(*roofline.PriceKernel({&add, {2000, 1, 1}, {1000, 1, 1}, 0, -1}, spec) == 24000.0);
    // below the floor
    BOOST_TEST(*roofline.PriceKernel({&generic, {1, 1, 1}, {32, 1, 1}, 0, -1}, spec) == 1000.0);
    BOOST_TEST(std::string(FamilyOf("at::native::reduce_kernel<512, 1>").name) == "reduction");
    BOOST_TEST(std::string(FamilyOf("mystery").name) == "generic");
}

BOOST_AUTO_TEST_CASE(gemm_neutral_spec_quantizes_waves)
{
    // TEST-GPU has no pricing block: 80% of peak per SM and GPU-wide, equal tiles, no fixed cost.
    GpuSpec spec = TestGpu();
    GemmModel gemm(1000);
    GemmShape shape;
    shape.m = shape.n = shape.k = 4096;
    shape.inputType = shape.mathType = DType::BF16;
    shape.outputBytes = 2;
    // Per SM 200 TFLOPS / 100 * 0.8 = 1.6e12 FLOP/s; a wave of w tiles takes 2*tm*tn*4096/1.6e12.
    // waves x tile area over the sm80 tiles: 256x128 6 x 32768, 128x128 11 x 16384, 128x64
    // 21 x 8192, 64x64 41 x 4096 = 167936 (least; 64x32 ties and comes later).
    double expectedNs = 41 * 2.0 * 64 * 64 * 4096 / 1.6e12 * 1e9;
    BOOST_TEST(*gemm.PriceGemm(shape, spec) == expectedNs, boost::test_tools::tolerance(1e-12));
    // A skinny fp32 GEMM (m=n=128, k=1e6) splits k: 64x64 tiles (4) x 25 slices fill the 100 SMs
    // at 10e12 x 0.8 = 8e12: 2*128*128*1e6 FLOP in 4.096 ms, plus the partial sums
    // 2*128*128*25*4 B at 1 TB/s (3.3 us). (128x64: 2 x 50, same rate, twice the partial sums.)
    GemmShape skinny;
    skinny.m = skinny.n = 128;
    skinny.k = 1000000;
    double expectedSkinny =
        2.0 * 128 * 128 * 1e6 / 8e12 * 1e9 + 2.0 * 128 * 128 * 25 * 4 / 1e12 * 1e9;
    BOOST_TEST(*gemm.PriceGemm(skinny, spec) == expectedSkinny,
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(PlanGemm(skinny, spec, 1000).splitK == 25);
}

BOOST_AUTO_TEST_SUITE_END()

// The pricing model on TEST-GPU-PRICED (round numbers, see the file): 100 SMs, bf16 200 TFLOPS so
// 2e12 FLOP/s per SM at gemm_sm_efficiency 1.0, GPU-wide cap 0.75 x 200 = 150 TFLOPS; tile
// efficiency (1 + 32*(1/256 + 1/128)) / (1 + 32*(1/tm + 1/tn)) = 1.375 / (...): 256x128 1,
// 128x128 0.9167, 128x64 0.7857, 64x64 0.6875, 64x32 0.55; fixed 2 us, gap 1 us; HBM 1 TB/s x 0.8,
// L2 2 TB/s up to 10 MiB.
BOOST_AUTO_TEST_SUITE(pricing_model)

namespace
{
// (1 + 32*(1/256 + 1/128)) / (1 + 32*(1/tm + 1/tn)), TEST-GPU-PRICED's tile efficiency.
double
TileEfficiencyForTest(int tm, int tn)
{
    return (1 + 32 * (1.0 / 256 + 1.0 / 128)) / (1 + 32 * (1.0 / tm + 1.0 / tn));
}

GpuSpec
PricedGpu()
{
    return ReadGpuSpec(kTestDir + "/gpus/TEST-GPU-PRICED.yaml");
}

GemmShape
Bf16(int64_t m, int64_t n, int64_t k)
{
    GemmShape shape;
    shape.m = m;
    shape.n = n;
    shape.k = k;
    shape.inputType = shape.mathType = DType::BF16;
    shape.outputBytes = 2;
    return shape;
}
} // namespace

BOOST_AUTO_TEST_CASE(pricing_block_is_read)
{
    GpuSpec spec = PricedGpu();
    BOOST_TEST(spec.pricing.present);
    BOOST_TEST(spec.pricing.gemmEfficiency.bf16 == 0.75);
    BOOST_TEST(spec.pricing.gemmFixedNs == 2000.0);
    BOOST_TEST(spec.pricing.l2ResidentBytes == 10u * 1024 * 1024);
    BOOST_TEST(spec.pricing.l2BytesPerSecond == 2e12);
    BOOST_TEST(spec.pricing.fa2Forward.hd128 == 0.3);
    BOOST_TEST(!TestGpu().pricing.present);
}

BOOST_AUTO_TEST_CASE(gemm_tiny_pays_the_fixed_cost)
{
    // 64^3: k < 256, no split-K. 64x64 is one CTA at 2e12 x 0.6875 = 1.375e12: 524288 FLOP in
    // 381 ns; 64x32 is two CTAs at 2 x 2e12 x 0.55 = 2.2e12: 524288 / 2.2e12 = 238.3 ns (least; a
    // 128-wide tile computes 2x the FLOPs at <= 1.571e12). Memory: 24576 B in L2 at 2 TB/s, 12 ns.
    GemmPlan plan = PlanGemm(Bf16(64, 64, 64), PricedGpu(), 1000);
    BOOST_TEST(plan.tileM == 64);
    BOOST_TEST(plan.tileN == 32);
    BOOST_TEST(plan.totalNs == 2000 + 524288 / 2.2e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(gemm_full_wave_runs_at_the_sustained_rate)
{
    // 2560 x 1280 x 4096: 10 x 10 = 100 tiles of 256x128, one full wave; 100 SMs x 2e12 = 200e12
    // is capped at 150e12: 2*2560*1280*4096 = 26.84e9 FLOP in 178.96 us. Memory 38 MB at 0.8 TB/s
    // is 47 us. Other tiles that divide the shape hit the same cap (ties keep 256x128).
    GemmPlan plan = PlanGemm(Bf16(2560, 1280, 4096), PricedGpu(), 1000);
    BOOST_TEST(plan.tileM == 256);
    BOOST_TEST(plan.waves == 1);
    const double flops = 2.0 * 2560 * 1280 * 4096;
    BOOST_TEST(plan.totalNs == 2000 + flops / 150e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(gemm_batched_over_a_shared_operand_reads_it_once)
{
    // 8 products of 64 x 8192 x 8192 (bf16 out) over one B (batch stride 0, a shared weight).
    // Each its own B: 8 x (64 x 8192 + 8192 x 8192) x 2 + 8 x 64 x 8192 x 2 = 1,090,519,040 B
    // at 0.8 TB/s = 1,363.1 us. One B: (8 x 64 x 8192 + 8192 x 8192) x 2 + 8,388,608 =
    // 150,994,944 B = 188.7 us. The math (68.7 GFLOP, >= 458 us at the 150e12 cap) is the same.
    GemmShape distinct = Bf16(64, 8192, 8192);
    distinct.batch = 8;
    GemmShape shared = distinct;
    shared.sharedB = true;
    GemmPlan a = PlanGemm(distinct, PricedGpu(), 1000);
    GemmPlan b = PlanGemm(shared, PricedGpu(), 1000);
    BOOST_TEST(a.memoryNs == 1090519040 / 0.8e12 * 1e9, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(b.memoryNs == 150994944 / 0.8e12 * 1e9, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(a.totalNs > b.totalNs);
    BOOST_TEST(b.mainloopNs >= 2.0 * 64 * 8192 * 8192 * 8 / 150e12 * 1e9);
    BOOST_TEST(b.totalNs == 2000 + b.mainloopNs + b.reductionNs + 1000,
               boost::test_tools::tolerance(1e-9)); // compute-bound now
}

BOOST_AUTO_TEST_CASE(gemm_partial_wave_is_tile_and_wave_quantized)
{
    // One more row (m = 2561): 256x128 needs 110 tiles = 2 waves (357.9 us); 128x128 210 tiles,
    // 3 waves (268.4 us); 128x64 420 tiles, 5 waves at the cap (223.7 us); 64x64 41 x 20 = 820
    // tiles, 9 waves at 100 x 2e12 x 0.6875 = 137.5e12: 9 x 100 x 2*64*64*4096 / 137.5e12 =
    // 219.6 us (least); 64x32 1640 tiles, 17 waves at 110e12: 259.3 us.
    GemmPlan plan = PlanGemm(Bf16(2561, 1280, 4096), PricedGpu(), 1000);
    BOOST_TEST(plan.tileM == 64);
    BOOST_TEST(plan.tileN == 64);
    BOOST_TEST(plan.waves == 9);
    BOOST_TEST(plan.totalNs == 2000 + 900 * 2.0 * 64 * 64 * 4096 / 137.5e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(gemm_small_output_large_k_splits_k)
{
    // 256 x 256 x 65536: 2 tiles of 256x128 would use 2 of 100 SMs (2*256*256*65536 = 8.6e9 FLOP
    // at 4e12: 2.1 ms). Splitting k over s slices runs 2s CTAs; the reduction writes and reads
    // 2*256*256*s*4 B of fp32 partial sums and is a second kernel (fixed + gap).
    GemmShape shape = Bf16(256, 256, 65536);
    GpuSpec spec = PricedGpu();
    GemmPlan plan = PlanGemm(shape, spec, 1000);
    BOOST_TEST(plan.splitK > 1);
    const double s = plan.splitK;
    const double ctas = double(plan.ctas);
    const double perSm = 2e12 * TileEfficiencyForTest(plan.tileM, plan.tileN);
    const double rate = std::min(ctas * perSm, 150e12);
    const double mainloop =
        plan.waves * 2.0 * plan.tileM * plan.tileN * std::ceil(65536 / s) * ctas / rate * 1e9;
    const double workspace = 2.0 * 256 * 256 * s * 4;
    const double reduction =
        workspace / (workspace <= 10.0 * 1024 * 1024 ? 2e12 : 0.8e12) * 1e9 + 2000 + 1000;
    const double memory = (2.0 * 256 * 65536 * 2 + 256.0 * 256 * 2) / 0.8e12 * 1e9; // 33.7 MB
    BOOST_TEST(plan.totalNs == 2000 + std::max(mainloop, memory) + reduction + 1000,
               boost::test_tools::tolerance(1e-9));
    // Far faster than the unsplit kernel (2.1 ms of mainloop).
    BOOST_TEST(plan.totalNs < 1e6);
}

BOOST_AUTO_TEST_CASE(memory_bound_kernel_above_and_below_l2)
{
    GpuSpec spec = PricedGpu();
    const PricingSpec& p = spec.pricing;
    // 8 MiB moved, footprint 8 MiB <= 10 MiB: L2 at 2 TB/s: 1 us floor + 4.194 us + 1 us gap.
    const double small = 8.0 * 1024 * 1024;
    BOOST_TEST(MemoryBoundNs(small, small, p.hbmEfficiency, spec, p.kernelMinNs) ==
                   1000 + small / 2e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // 1 GiB: HBM at 1 TB/s x 0.8: 1 us + 1342.2 us + 1 us.
    const double large = 1024.0 * 1024 * 1024;
    BOOST_TEST(MemoryBoundNs(large, large, p.hbmEfficiency, spec, p.kernelMinNs) ==
                   1000 + large / 0.8e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // A device copy moves 2x its bytes (memcpy_efficiency 0.8 too); a memset 1x at 1.0.
    BOOST_TEST(DeviceCopyNs(1u << 30, spec) == 1000 + 2 * large / 0.8e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    BOOST_TEST(MemsetNs(1u << 30, spec) == 1000 + large / 1e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // Pinned 25 GB/s, pageable 5 GB/s to the device, each after 2 us.
    BOOST_TEST(HostCopyNs(25000000, true, true, spec) == 2000 + 1e6,
               boost::test_tools::tolerance(1e-9));
    BOOST_TEST(HostCopyNs(25000000, true, false, spec) == 2000 + 5e6,
               boost::test_tools::tolerance(1e-9));
    // Between GPUs without peer access: pinned 25 GB/s once (the legs overlap), 2 us per leg.
    BOOST_TEST(StagedPeerCopyNs(25000000, spec) == 2000 + 1e6 + 2000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(attention_forward_and_backward)
{
    GpuSpec spec = PricedGpu();
    AttentionShape a;
    a.batch = 2;
    a.heads = 16;
    a.seqQ = a.seqK = 4096;
    a.headDim = 128;
    // Forward: 4 * 2 * 16 * 4096^2 * 128 = 2.199e12 FLOP at 200e12 x 0.3 x 4096 / (4096 + 128).
    const double flops = 4.0 * 2 * 16 * 4096.0 * 4096 * 128;
    BOOST_TEST(AttentionFlops(a) == flops);
    const double ramp = 4096.0 / (4096 + 128);
    BOOST_TEST(AttentionNs(a, spec, 1000) == 1000 + flops / (200e12 * 0.3 * ramp) * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // Backward, causal: 2.5x the FLOPs, halved by the mask, times (32 + 1) / 32 diagonal blocks of
    // 128 keys, at 200e12 x 0.25 x ramp x 0.9.
    a.backward = true;
    a.causal = true;
    const double bwd = 2.5 * flops / 2 * 33.0 / 32;
    BOOST_TEST(AttentionNs(a, spec, 1000) == 1000 + bwd / (200e12 * 0.25 * ramp * 0.9) * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(pytorch_kernels_priced_by_family)
{
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    // vectorized_elementwise_kernel, 128 threads x 8 elements per block, 3 bf16 operands:
    // 4096 blocks -> 4194304 elements x 6 B = 25.2 MB over 0.8 TB/s (footprint above 10 MiB).
    std::string add = "at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<"
                      "c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<"
                      "c10::BFloat16>, std::array<char*, 3ul>)";
    KernelInfo info{"", add, nullptr, -1};
    const double bytes = 4096.0 * 128 * 8 * 3 * 2;
    BOOST_TEST(*families.PriceKernel({&info, {4096, 1, 1}, {128, 1, 1}, 0, -1}, spec) ==
                   1000 + bytes / 0.8e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // Not a PyTorch kernel: left to the next provider.
    KernelInfo spin{"", "spin(float*)", nullptr, -1};
    BOOST_TEST(!families.PriceKernel({&spin, {1, 1, 1}, {32, 1, 1}, 0, -1}, spec));
}

BOOST_AUTO_TEST_CASE(train_gpt_row_kernel_priced_by_bytes)
{
    // examples/train-gpt README "Kernels and their cost": rmsnorm_fwd<VEC>, grid rows, block
    // dim / VEC, moves rows (4 dim + 4) + 2 dim bytes. 8192 rows of 512 x 8 = 4096: 8192 x 16388
    // + 8192 = 134258688 B, footprint above 10 MiB: HBM at 1 TB/s x 0.8 = 167.8 us, plus the
    // 1 us floor and 1 us gap of TEST-GPU-PRICED.
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo norm{"",
                    "rmsnorm_fwd<8>(__nv_bfloat16 const*, __nv_bfloat16 const*, "
                    "__nv_bfloat16*, float*, int)",
                    nullptr, -1};
    const double bytes = 8192.0 * (4 * 4096 + 4) + 2 * 4096;
    BOOST_TEST(*families.PriceKernel({&norm, {8192, 1, 1}, {512, 1, 1}, 0, -1}, spec) ==
                   1000 + bytes / 0.8e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // adamw_step: 30 B per element, n = 256 threads x 8 x grid: 64 blocks = 131072 elements,
    // 3.93 MB, inside the 10 MiB L2-resident size: 2 TB/s, 1.97 us.
    KernelInfo adamw{"",
                     "adamw_step(float*, __nv_bfloat16*, float*, float*, float*, long, "
                     "float const*, float, float, float, float, float, float, int)",
                     nullptr, -1};
    BOOST_TEST(*families.PriceKernel({&adamw, {64, 1, 1}, {256, 1, 1}, 0, -1}, spec) ==
                   1000 + 30.0 * 131072 / 2e12 * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(pytorch_norm_reads_its_row_width_argument)
{
    // vectorized_layer_norm_kernel(int N, float eps, X, gamma, beta, mean, rstd, Y): one block
    // per row, N the first argument. 8192 rows of N = 4096 bf16: read X and write Y (2 x 2 B per
    // element) and 8 B of mean/rstd per row = 8192 x 16392 = 134283264 B, above the 10 MiB
    // L2-resident size: 1 TB/s x 0.8 x 0.72 (the norm forward's fraction of the copy rate).
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo norm{
        "",
        "at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
        "float, true>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, "
        "c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
        nullptr, -1};
    int cols = 4096;
    float eps = 1e-5f;
    void* pointer = nullptr;
    void* args[8] = {&cols, &eps, &pointer, &pointer, &pointer, &pointer, &pointer, &pointer};
    KernelLaunch launch{&norm, {8192, 1, 1}, {32, 4, 1}, 0, -1, args};
    const double bytes = 8192.0 * (4096 * 2 * 2 + 8);
    BOOST_TEST(*families.PriceKernel(launch, spec) == 1000 + bytes / (0.8e12 * 0.72) * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // Without its arguments the grid does not tell the width: left to the next provider.
    launch.args = nullptr;
    BOOST_TEST(!families.PriceKernel(launch, spec));
}

BOOST_AUTO_TEST_CASE(pytorch_reduction_reads_its_reduce_config)
{
    // reduce_kernel<512, 1, ReduceOp<bf16, ...>>(ReduceOp): the ReduceOp holds an empty functor,
    // a float identity, then ReduceConfig {element_size_bytes, num_inputs, num_outputs, step_input,
    // step_output, ctas_per_output, input_mult[3], output_mult[2], block_width, block_height,
    // num_threads} (Reduce.cuh). x.sum(-1) of 8192 x 4096 bf16: block (32, 16), grid (512, 1).
    // Bytes: 8192 x 4096 x 2 read + 8192 x 2 written = 67125248; the read footprint is above the
    // 10 MiB L2-resident size: 1 TB/s x 0.8, plus the 1 us floor and 1 us gap.
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo reduce{"",
                      "at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, "
                      "at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<"
                      "c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::"
                      "{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 4> >(at::native::"
                      "ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, "
                      "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()("
                      "at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
                      "c10::BFloat16, 4, 4>)",
                      nullptr, -1};
    int32_t op[32] = {};
    int32_t* config = op + 2;
    config[0] = 4;
    config[1] = 4096;
    config[2] = 8192;
    config[3] = config[4] = config[5] = 1;
    config[6] = 1;
    config[11] = 32;
    config[12] = 16;
    config[13] = 512;
    void* args[1] = {op};
    KernelLaunch launch{&reduce, {512, 1, 1}, {32, 16, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 67125248 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // A full reduction of 2^24 values over 400 blocks (grid (1, 400), block (512, 1)): each block
    // also writes one float partial that the last block reads back: 2^24 x 2 + 2 + 2 x 400 x 4.
    config[1] = 1 << 24;
    config[2] = 1;
    config[5] = 400;
    config[11] = 512;
    config[12] = 1;
    launch.grid = {1, 400, 1};
    launch.block = {512, 1, 1};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + (33554432.0 + 2 + 3200) / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // A struct whose block does not match the launch is not a ReduceConfig: left to the next.
    launch.block = {256, 1, 1};
    BOOST_TEST(!families.PriceKernel(launch, spec));
    launch.args = nullptr;
    BOOST_TEST(!families.PriceKernel(launch, spec));
}

BOOST_AUTO_TEST_CASE(pytorch_strided_elementwise_is_bound_by_its_loads_in_flight)
{
    // elementwise_kernel<128, 4, ...BinaryFunctor<bf16...>>(int N, f): each thread loads 4
    // elements of each of its 2 inputs (16 B) and exits. With a 10 us load round: 100 SMs x 2048
    // resident threads (16 blocks of 128) x 16 B = 3276800 B per 10 us = 3.2768e11 B/s of reads;
    // N = 2^25: reads 2 x 2 x 2^25 = 134217728 B -> 409.6 us, slower than the HBM bound
    // (3 x 2 x 2^25 B at 0.8 TB/s = 251.7 us).
    GpuSpec spec = PricedGpu();
    spec.pricing.loadRoundNs = 10000;
    KernelFamilyModel families(1000);
    KernelInfo mul{"",
                   "at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
                   "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
                   "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
                   "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
                   "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>("
                   "int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<"
                   "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
                   "MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<"
                   "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
                   "MulFunctor<float> > const&)::{lambda(int)#1})",
                   nullptr, -1};
    int n = 1 << 25;
    void* args[2] = {&n, nullptr};
    KernelLaunch launch{&mul, {65536, 1, 1}, {128, 1, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 134217728 / 3.2768e11 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // Without a load round (TEST-GPU-PRICED has none) only the HBM bound applies.
    spec.pricing.loadRoundNs = 0;
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 3.0 * 2 * n / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(pytorch_cat_is_bound_by_its_integer_divisions)
{
    // CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 4, 64, 64>: inputs metadata `T*
    // input[64]; unsigned offset[64], dimSize[64], nElements[64]; bool isContiguous[64]`. Two
    // inputs of 2^24 elements, the first contiguous: instructions per element 8 + offsets x
    // (3 dims x (20 + 3) + 2) = 79 and 150; 2^24 x 229 / 32 warp instructions at 100 SMs x 4
    // schedulers x 1 GHz = 300.2 us, above the memory bound (2 x 2^25 x 2 B at 0.8 TB/s = 168 us).
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo cat{"",
                   "at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
                   "namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous "
                   "namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::"
                   "CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, "
                   "unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<"
                   "unsigned int, 4u>, int, unsigned int)",
                   nullptr, -1};
    std::vector<char> metadata(64 * 21 + 64 * 32, 0);
    const uint32_t half = 1u << 24;
    std::memcpy(&metadata[64 * 16], &half, 4);
    std::memcpy(&metadata[64 * 16 + 4], &half, 4);
    metadata[64 * 20] = 1;
    void* out = nullptr;
    void* args[5] = {&out, metadata.data(), nullptr, nullptr, nullptr};
    KernelLaunch launch{&cat, {200, 2, 1}, {512, 1, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + double(half) * 229 / 32 / 4e11 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(pytorch_vectorized_cat_takes_one_offset_a_vector)
{
    // PyTorch 2.15's CatArrayBatchedCopy_vectorized<OpaqueType<2u>, unsigned int, 4, 128, 1, 16,
    // 8>: metadata `T* input[128]; unsigned offset[128], dimSize[128], nElements[128]; bool
    // isContiguous[128]` (counts at 128 x 16 = 2048, flags at 2560). Two contiguous inputs of 2^24
    // elements move as 2^22 vectors of 8, each 8 + (3 x 23 + 2) = 79 instructions: 2^22 x 79 / 32
    // at 4e11 warp instructions/s = 25.9 us, under the memory bound 2 x 2^25 x 2 B = 134217728 B
    // at 0.8 TB/s = 167.8 us (the scalar kernel would be issue-bound at 207 us).
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo cat{"",
                   "at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::"
                   "(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1, 16, 8>(char*, "
                   "at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::"
                   "(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::"
                   "(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
                   nullptr, -1};
    std::vector<char> metadata(128 * 21 + 128 * 8, 0);
    const uint32_t half = 1u << 24;
    std::memcpy(&metadata[128 * 16], &half, 4);
    std::memcpy(&metadata[128 * 16 + 4], &half, 4);
    metadata[128 * 20] = metadata[128 * 20 + 1] = 1;
    void* out = nullptr;
    void* args[5] = {&out, metadata.data(), nullptr, nullptr, nullptr};
    KernelLaunch launch{&cat, {200, 2, 1}, {128, 1, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 134217728.0 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(fsdp_copy_kernels_read_their_totals)
{
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    // PyTorch 2.15's chunk_cat_cuda_kernel<float, c10::BFloat16>: FSDP2 packs bf16 gradients into
    // an fp32 reduce-scatter buffer. grid (16384, 2, 1) of 2048-byte tiles bounds it at 64 MiB;
    // slice_size (parameter 8) = 64 MiB - 4096 = 67104768 B written, half of it read (bf16):
    // 100657152 B at 0.8 TB/s = 125.82 us, plus the 1 us floor and 1 us gap.
    KernelInfo chunkCat{"",
                        "at::native::detail::chunk_cat_cuda_kernel<float, c10::BFloat16>(c10::"
                        "BFloat16**, float*, long*, long*, long*, long*, long*, long*, long, "
                        "long, long)",
                        nullptr, -1};
    void* pointer = nullptr;
    int64_t slice = 67104768, chunk = slice / 2, ratio = 2;
    void* args[11] = {&pointer, &pointer, &pointer, &pointer, &pointer, &pointer,
                      &pointer, &pointer, &slice,   &chunk,   &ratio};
    KernelLaunch launch{&chunkCat, {16384, 2, 1}, {128, 1, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 100657152.0 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // Without arguments the tiles: 32768 x 2048 = 67108864 B written, 33554432 B read.
    launch.args = nullptr;
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 100663296.0 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // split_with_sizes_copy_out_contiguous_no_cast_kernel: FSDP2's all-gather copy-out of 4 ranks'
    // 8 MiB shards (src_stride 8388608 B, num_chunks 4): 32 MiB read and 32 MiB written =
    // 67108864 B at 0.8 TB/s = 83.89 us.
    KernelInfo split{"",
                     "at::native::detail::split_with_sizes_copy_out_contiguous_no_cast_kernel("
                     "char**, char**, long*, long*, long*, long, long)",
                     nullptr, -1};
    int64_t stride = 8388608, chunks = 4;
    void* splitArgs[7] = {&pointer, &pointer, &pointer, &pointer, &pointer, &stride, &chunks};
    KernelLaunch copyOut{&split, {4096, 4, 1}, {128, 1, 1}, 0, -1, splitArgs};
    BOOST_TEST(*families.PriceKernel(copyOut, spec) == 2000 + 67108864.0 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // Its totals are only in its arguments: without them, left to the next provider.
    copyOut.args = nullptr;
    BOOST_TEST(!families.PriceKernel(copyOut, spec));
}

BOOST_AUTO_TEST_CASE(pytorch_random_fill_writes_its_elements)
{
    // distribution_elementwise_grid_stride_kernel<float, 4, ...>(long numel, PhiloxCudaState,
    // ...): nn.init.normal_ of 2^24 floats writes 67108864 B: at 0.8 TB/s 83.89 us; 2^20 floats
    // (4 MiB, inside the 10 MiB L2-resident size) at 2 TB/s: 2.10 us.
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo normal{"",
                      "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_"
                      "kernel<float, 4, at::native::templates::cuda::normal_and_transform<float, "
                      "float>::{lambda(curandStatePhilox4_32_10*)#1}, at::native::normal_kernel::"
                      "{lambda(float)#1}>(long, at::PhiloxCudaState, at::native::templates::cuda::"
                      "normal_and_transform<float, float>::{lambda(curandStatePhilox4_32_10*)#1}, "
                      "at::native::normal_kernel::{lambda(int, float)#1})",
                      nullptr, -1};
    int64_t numel = int64_t(1) << 24;
    void* pointer = nullptr;
    void* args[4] = {&numel, &pointer, &pointer, &pointer};
    KernelLaunch launch{&normal, {1056, 1, 1}, {256, 1, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 67108864.0 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    numel = int64_t(1) << 20;
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 4194304.0 / 2e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(same_address_atomics_serialise)
{
    // train-gpt's grad_norm_sumsq: one atomicAdd a block on one float. 4096 blocks of 256 x 8 =
    // 8388608 floats, 33.6 MB at 0.8 TB/s = 41.9 us; 4096 atomics at 20 ns = 81.92 us, slower.
    GpuSpec spec = PricedGpu();
    spec.pricing.sameAddressAtomicNs = 20;
    KernelFamilyModel families(1000);
    KernelInfo sumsq{"", "grad_norm_sumsq(float const*, long, float, float*)", nullptr, -1};
    KernelLaunch launch{&sumsq, {4096, 1, 1}, {256, 1, 1}, 0, -1};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 81920.0,
               boost::test_tools::tolerance(1e-9));
    spec.pricing.sameAddressAtomicNs = 0; // no figure: the memory bound alone
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 4 * 8388608.0 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(pageable_copy_leaves_the_stream_what_staging_did_not_cover)
{
    // TEST-GPU-PRICED: 2 us latency, pinned 25 GB/s, pageable H2D 5 GB/s. 25 MB pageable H2D:
    // 2000 + 5e6 ns end to end. With 3e6 ns already staged on the host the stream keeps
    // 2000 + 2e6; with 4.5e6 staged, the DMA itself at the pinned rate (2000 + 1e6) remains.
    GpuSpec spec = PricedGpu();
    BOOST_TEST(PageableCopyNs(25000000, true, 3e6, spec) == 2000 + 2e6,
               boost::test_tools::tolerance(1e-9));
    BOOST_TEST(PageableCopyNs(25000000, true, 4.5e6, spec) == 2000 + 1e6,
               boost::test_tools::tolerance(1e-9));
}

namespace
{
// An OffsetCalculator<N, uint32_t> as OffsetCalculator.cuh lays it out: int dims; {divisor, m1,
// shift} x 25; uint32 strides[25][N] (bytes). `sizes` innermost first, `strides[dim][operand]`.
std::vector<char>
OffsetCalculatorBytes(const std::vector<uint32_t>& sizes, const std::vector<uint32_t>& shifts,
                      const std::vector<std::vector<uint32_t>>& strides)
{
    const size_t operands = strides[0].size();
    std::vector<char> bytes(4 + 25 * 12 + 25 * operands * 4, 0);
    const int32_t dims = int32_t(sizes.size());
    std::memcpy(bytes.data(), &dims, 4);
    for (size_t i = 0; i < sizes.size(); ++i)
    {
        std::memcpy(&bytes[4 + 12 * i], &sizes[i], 4);
        std::memcpy(&bytes[4 + 12 * i + 8], &shifts[i], 4);
        std::memcpy(&bytes[4 + 25 * 12 + 4 * i * operands], strides[i].data(), 4 * operands);
    }
    return bytes;
}
} // namespace

BOOST_AUTO_TEST_CASE(pytorch_strided_elementwise_reads_its_offset_calculator)
{
    // x.t().contiguous() of 4096 x 4096 bf16: elementwise_kernel<128, 4, direct copy>(N, f), f
    // capturing the OffsetCalculator: dims (4096, 4096), output strides (2, 8192), input (8192, 2).
    // The input's innermost stride is not one element: every element a 32-byte L2 sector,
    // 2^24 x 32 B at 2 TB/s = 268.4 us, above HBM (2 x 2^24 x 2 B at 0.8 TB/s = 83.9 us).
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo copy{"",
                    "at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
                    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
                    "operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)"
                    "#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::"
                    "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::"
                    "operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, "
                    "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
                    "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::"
                    "operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
                    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::"
                    "operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)"
                    "#1} const&)::{lambda(int)#1})",
                    nullptr, -1};
    int n = 1 << 24;
    std::vector<char> transposed =
        OffsetCalculatorBytes({4096, 4096}, {12, 12}, {{2, 8192}, {8192, 2}});
    void* args[2] = {&n, transposed.data()};
    KernelLaunch launch{&copy, {32768, 1, 1}, {128, 1, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 536870912 / 2e12 * 1e9,
               boost::test_tools::tolerance(1e-9));

    // x * cos for x [4, 1024, 8, 128] and cos [1024, 1, 128] bf16: dims (128, 8, 1024, 4), cos
    // strides (2, 0, 256, 0) bytes. cos is read once (1024 x 128 x 2 = 262144 B): 2 x 8388608 +
    // 262144 = 17039360 B at 0.8 TB/s (above the 10 MiB L2-resident size).
    KernelInfo mul{"",
                   "at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
                   "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
                   "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
                   "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
                   "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>("
                   "int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<"
                   "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
                   "MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<"
                   "c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::"
                   "MulFunctor<float> > const&)::{lambda(int)#1})",
                   nullptr, -1};
    n = 4 * 1024 * 8 * 128;
    std::vector<char> broadcast =
        OffsetCalculatorBytes({128, 8, 1024, 4}, {7, 3, 10, 2},
                              {{2, 2, 2}, {256, 256, 0}, {2048, 2048, 256}, {2097152, 2097152, 0}});
    args[1] = broadcast.data();
    launch.kernel = &mul;
    launch.grid = {8192, 1, 1};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 17039360 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    // A closure without a calculator whose sizes multiply to N: every operand read in full.
    std::vector<char> garbage(broadcast.size(), 0);
    args[1] = garbage.data();
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 3.0 * 2 * n / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(pytorch_foreach_functors_move_their_lists)
{
    // multi_tensor_apply_kernel: one 65536-element chunk a block; 320 blocks = 20971520 floats.
    // BinaryOpScalarFunctor<float, 1, 1, 0> (in-place scale): one read, one write, 167772160 B;
    // LpNormFunctor (foreach norm): the read alone. HBM 0.8 TB/s, 1 us floor and gap.
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo scale{"",
                     "at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous "
                     "namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, "
                     "float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
                     "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
                     "std::multiplies<float>, float)",
                     nullptr, -1};
    KernelInfo norm{"",
                    "at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                    "(anonymous namespace)::TensorListMetadata<1>, at::native::LpNormFunctor<"
                    "float, (at::native::NormType)1, float, 1, 1, 0>, float*, int>(at::native::"
                    "(anonymous namespace)::TensorListMetadata<1>, at::native::LpNormFunctor<"
                    "float, (at::native::NormType)1, float, 1, 1, 0>, float*, int)",
                    nullptr, -1};
    const double floats = 320.0 * 65536;
    BOOST_TEST(*families.PriceKernel({&scale, {320, 1, 1}, {512, 1, 1}, 0, -1}, spec) ==
                   2000 + floats * 8 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
    BOOST_TEST(*families.PriceKernel({&norm, {320, 1, 1}, {512, 1, 1}, 0, -1}, spec) ==
                   2000 + floats * 4 / 0.8e12 * 1e9,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(serial_chains_of_dependent_loads)
{
    // With a 400 ns dependent load:
    // - embedding_backward_feature_kernel(indices, grad, grad_weight, int n = 1024, long stride =
    //   256, padding): grid 8 of (32, 32): one wave, 1024 / 32 = 32 chunks of two dependent
    //   accesses: 1000 + 32 x 2 x 400 + 1000 (its 1.57 MB move in 0.79 us from L2);
    // - nll_loss_forward_reduce_cuda_kernel_2d, one block of 32 over nframe = 512 rows: 16 rows a
    //   thread, target then logit: 1000 + 16 x 2 x 400 + 1000.
    GpuSpec spec = PricedGpu();
    spec.pricing.dependentLoadNs = 400;
    KernelFamilyModel families(1000);
    KernelInfo embedding{"",
                         "at::native::(anonymous namespace)::embedding_backward_feature_kernel<"
                         "c10::BFloat16, float, long>(long const*, c10::BFloat16 const*, "
                         "c10::BFloat16*, int, long, int)",
                         nullptr, -1};
    int n = 1024, padding = -1;
    long stride = 256;
    void* pointer = nullptr;
    void* args[10] = {&pointer, &pointer, &pointer, &n, &stride, &padding};
    KernelLaunch launch{&embedding, {8, 1, 1}, {32, 32, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 2000 + 32 * 2 * 400.0,
               boost::test_tools::tolerance(1e-9));
    KernelInfo nll{"",
                   "at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<"
                   "c10::BFloat16, float, long>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 "
                   "const*, long const*, c10::BFloat16 const*, bool, long, long, long, long)",
                   nullptr, -1};
    bool average = true;
    long frames = 512, classes = 256, ignore = -100;
    void* nllArgs[10] = {&pointer, &pointer, &pointer, &pointer, &pointer,
                         &average, &frames,  &classes, &classes, &ignore};
    KernelLaunch loss{&nll, {1, 1, 1}, {32, 1, 1}, 0, -1, nllArgs};
    BOOST_TEST(*families.PriceKernel(loss, spec) == 2000 + 16 * 2 * 400.0,
               boost::test_tools::tolerance(1e-9));
    // vectorized_gather_kernel<16, long>: 1024 rows of 32 x 16 B, one block each: 1024 x (2 x
    // 512 + 8) = 1.06 MB from L2 in 0.53 us, less than its index-then-row chain of 2 x 400 ns.
    KernelInfo gather{"",
                      "at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, "
                      "long, long, long, long, bool)",
                      nullptr, -1};
    BOOST_TEST(*families.PriceKernel({&gather, {1024, 1, 1}, {32, 1, 1}, 0, -1}, spec) ==
                   2000 + 2 * 400.0,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(narrow_norm_rows_take_a_load_round_a_wave)
{
    // vectorized_layer_norm_kernel on 8192 rows of 256 bf16, block (32, 4): 16 blocks an SM x
    // 100 SMs = 1600 rows a wave, 6 waves of a 3 us load round = 18 us, above its 8.45 MB at the
    // L2 rate (4.2 us): 1000 + 18000 + 1000.
    GpuSpec spec = PricedGpu();
    spec.pricing.loadRoundNs = 3000;
    KernelFamilyModel families(1000);
    KernelInfo norm{
        "",
        "at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
        "float, false>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, "
        "c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
        nullptr, -1};
    int cols = 256;
    float eps = 1e-5f;
    void* pointer = nullptr;
    void* args[8] = {&cols, &eps, &pointer, &pointer, &pointer, &pointer, &pointer, &pointer};
    KernelLaunch launch{&norm, {8192, 1, 1}, {32, 4, 1}, 0, -1, args};
    BOOST_TEST(*families.PriceKernel(launch, spec) == 20000.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(train_gpt_attention_backward_reads_the_query_heads)
{
    // flash_attention_bwd_dkdv<128, true>: grid (seq / 64, hkv, batch) = (64, 2, 2), block 64:
    // seq 4096, 2 kv heads, batch 2; hq = 8 is its ninth argument (8 pointers, then int hq).
    // FLOPs: S, dP, dV, dK = 4 matmuls: 2 x 4 x 2 x 8 x 4096^2 x 128 / 2 (causal) = 68.7e9, times
    // (32 + 1) / 32 diagonal blocks of 128 keys, at the FA2 backward rate 200e12 x 0.25 x
    // 4096 / (4096 + 128) x 0.9 (causal): 1000 + 1.63 ms + 1000.
    GpuSpec spec = PricedGpu();
    KernelFamilyModel families(1000);
    KernelInfo dkdv{"",
                    "flash_attention_bwd_dkdv<128, true>(__nv_bfloat16 const*, "
                    "__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 const*, float "
                    "const*, float const*, float*, float*, int)",
                    nullptr, 68};
    int hq = 8;
    void* pointer = nullptr;
    void* args[9] = {&pointer, &pointer, &pointer, &pointer, &pointer,
                     &pointer, &pointer, &pointer, &hq};
    KernelLaunch launch{&dkdv, {64, 2, 2}, {64, 1, 1}, 0, 68, args};
    const double flops = 2.0 * 4 * 2 * 8 * 4096.0 * 4096 * 128 / 2 * 33 / 32;
    const double rate = 200e12 * 0.25 * 4096 / (4096 + 128) * 0.9;
    BOOST_TEST(*families.PriceKernel(launch, spec) == 1000 + flops / rate * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
    // Without the arguments only the kv heads the grid shows are counted: a quarter the FLOPs.
    launch.args = nullptr;
    BOOST_TEST(*families.PriceKernel(launch, spec) == 1000 + flops / 4 / rate * 1e9 + 1000,
               boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pricing)

BOOST_AUTO_TEST_CASE(chain_reports_provider)
{
    GpuSpec spec = TestGpu();
    CostModel model;
    auto db = std::make_unique<ProfileDb>();
    ProfileEntry entry;
    entry.gpu = "TEST-GPU";
    entry.kernel = "void spin(float*)";
    entry.grid = {10, 1, 1};
    entry.block = {256, 1, 1};
    entry.durationUs = 7.5;
    db->Add(entry);
    model.Add(std::move(db));
    model.Add(std::make_unique<GemmModel>(1000));
    model.Add(std::make_unique<RooflineModel>(1000));
    KernelInfo spin{"_Z4spinPf", NormalizeKernelName("_Z4spinPf"), nullptr};
    Price measured = model.PriceKernel({&spin, {10, 1, 1}, {256, 1, 1}, 0, -1}, spec);
    BOOST_TEST(measured.duration == 7500.0);
    BOOST_TEST(std::string(measured.provider) == "profile-db");
    Price modelled = model.PriceKernel({&spin, {11, 1, 1}, {256, 1, 1}, 0, -1}, spec);
    BOOST_TEST(std::string(modelled.provider) == "roofline");
    GemmShape shape;
    shape.m = shape.n = shape.k = 256;
    BOOST_TEST(std::string(model.PriceGemm(shape, spec).provider) == "gemm-model");
    model.Count(measured.provider, measured.duration);
    model.Count(modelled.provider, modelled.duration);
    BOOST_TEST(model.Totals().at("profile-db").ops == 1u);
    BOOST_TEST(model.Totals().at("roofline").gpuTime == modelled.duration);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(profile_db)

BOOST_AUTO_TEST_CASE(demangled_names_match)
{
    BOOST_TEST(Demangle("_Z4axpyfPKfPfi") == "axpy(float, float const*, float*, int)");
    BOOST_TEST(NormalizeKernelName("_Z4axpyfPKfPfi") == "axpy(float, float const*, float*, int)");
    BOOST_TEST(NormalizeKernelName("void foo<int>(int) ") == "foo<int>(int)");
    BOOST_TEST(NormalizeKernelName("_Z3fooIiEvi") == "foo<int>(int)");
    BOOST_TEST(Demangle("not_mangled") == "not_mangled");
}

BOOST_AUTO_TEST_CASE(kineto_import_takes_median_and_round_trips)
{
    ProfileDb db;
    BOOST_TEST(db.ImportKinetoTrace(kTestDir + "/data/kineto-small.json", "H100-SXM5-80GB") == 4u);
    BOOST_TEST(db.Size() == 2u);
    GpuSpec spec;
    spec.name = "H100-SXM5-80GB";
    KernelInfo add{"",
                   NormalizeKernelName(
                       "void at::native::vectorized_elementwise_kernel<4, "
                       "at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, "
                       "at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"),
                   nullptr};
    BOOST_TEST(*db.PriceKernel({&add, {1024, 1, 1}, {128, 1, 1}, 0, -1}, spec) ==
               5000.0); // median of 4, 6, 5
    BOOST_TEST(!db.PriceKernel({&add, {1024, 1, 1}, {256, 1, 1}, 0, -1}, spec));
    KernelInfo gemm{"", "sm90_xmma_gemm_bf16bf16_bf16f32", nullptr};
    BOOST_TEST(*db.PriceKernel({&gemm, {132, 1, 1}, {384, 1, 1}, 232448, -1}, spec) == 120500.0);

    std::string path = "/tmp/eidolon-profile-db-test.json";
    db.Save(path);
    ProfileDb loaded;
    loaded.Load(path);
    BOOST_TEST(loaded.Size() == 2u);
    BOOST_TEST(*loaded.PriceKernel({&add, {1024, 1, 1}, {128, 1, 1}, 0, -1}, spec) == 5000.0);
    std::remove(path.c_str());
}

BOOST_AUTO_TEST_CASE(malformed_database_is_an_error)
{
    std::string path = "/tmp/eidolon-profile-db-bad.json";
    std::ofstream(path) << "{\"format\": \"something-else\"}";
    ProfileDb db;
    BOOST_CHECK_THROW(db.Load(path), std::runtime_error);
    std::remove(path.c_str());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(memory_and_clock)

BOOST_AUTO_TEST_CASE(address_space_first_fit_and_coalescing)
{
    DeviceAddressSpace space;
    space.Reserve(4 << 20, 0);
    uint64_t a = space.Take(1 << 20);
    uint64_t b = space.Take(1 << 20);
    uint64_t c = space.Take(2 << 20);
    BOOST_TEST(a != 0u);
    BOOST_TEST(b == a + (1 << 20));
    BOOST_TEST(c == b + (1 << 20));
    BOOST_TEST(space.Take(1) == 0u); // full
    space.Give(a, 1 << 20);
    space.Give(b, 1 << 20);
    BOOST_TEST(space.Take(2 << 20) == a); // the two holes merged
    BOOST_TEST(space.Contains(c));
}

BOOST_AUTO_TEST_CASE(host_clock_never_goes_backwards)
{
    HostClock clock(0.0);
    clock.Enter(CallKind::Submit);
    clock.Charge(2000);
    clock.AdvanceTo(1000);
    BOOST_TEST(clock.Now() == 2000.0);
    clock.AdvanceTo(5000);
    BOOST_TEST(clock.Now() == 5000.0);
    clock.Leave();
}

BOOST_AUTO_TEST_CASE(host_clock_counts_cpu_time_of_driving_threads)
{
    HostClock clock(2.0); // virtual ns per CPU ns
    clock.Enter(CallKind::Submit);
    clock.Leave();
    double cpuBefore = HostClock::ThreadCpuNs();
    volatile double sink = 0;
    for (int i = 0; i < 2000000; ++i)
    {
        sink = sink + i * 0.5;
    }
    double spent = HostClock::ThreadCpuNs() - cpuBefore;
    Ns before = clock.Now();
    clock.Enter(CallKind::Query);
    clock.Leave();
    // At least twice the CPU time measured before the call (and the call's own reading after it).
    BOOST_TEST(clock.Now() - before >= 2.0 * spent);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(device_op_sink)

// A sink that records what it is given and, as the simulator bridge does, decides the ends of
// pending records (from a table the test fills) when a sync asks.
class RecordingSink : public DeviceOpSink
{
public:
    bool Remote() const override { return true; }
    void OnOp(const DeviceOp& op) override
    {
        ops.push_back(op);
        labels.push_back(*op.label);
    }
    uint64_t OnPendingOp(const PendingOp& op) override
    {
        pending.push_back(op);
        return ++nextId;
    }
    void Seal(uint64_t streamId) override { sealed.push_back(streamId); }
    uint64_t OnCommunication(const CommunicationRecord& record) override
    {
        communications.push_back(record.ready);
        communicationDeps.push_back(record.deps);
        return ++nextId;
    }
    std::vector<Ns> Resolve(const std::vector<uint64_t>& records, Ns, int, bool, const std::string& what,
                            std::mutex&) override
    {
        asked.push_back(records);
        askedWhat.push_back(what);
        std::vector<Ns> result;
        for (uint64_t record : records)
        {
            result.push_back(ends.at(record));
        }
        return result;
    }

    std::vector<DeviceOp> ops;
    std::vector<std::string> labels;
    std::vector<PendingOp> pending;
    std::vector<uint64_t> sealed;
    std::vector<Ns> communications;
    std::vector<std::vector<uint64_t>> communicationDeps;
    std::vector<std::vector<uint64_t>> asked;
    std::vector<std::string> askedWhat;
    std::map<uint64_t, Ns> ends;
    uint64_t nextId = 0;
};

BOOST_AUTO_TEST_CASE(ops_after_a_communication_wait_for_the_simulator)
{
    Emulator& emu = Emulator::Get(); // EIDOLON_GPU=TEST-GPU from ctest
    BOOST_REQUIRE(emu.Ready());
    auto sink = std::make_unique<RecordingSink>();
    RecordingSink* recorded = sink.get();
    emu.SetSink(std::move(sink));
    std::lock_guard<std::mutex> lock(emu.Mutex());
    Stream* stream = emu.CreateStream(0, kStreamNonBlocking, 0);
    Ns issued = emu.Clock().Now();
    const std::string label = "k";
    // Known times: TEST-GPU's launch latency is 3 us; FIFO on the stream.
    Placement first = emu.Place(*stream, OpKind::Kernel, 5000, label, "roofline", 0);
    Placement second = emu.Place(*stream, OpKind::Copy, 1000, label, "copy-pcie", 4096);
    BOOST_TEST(first.start == issued + 3000.0);
    BOOST_TEST(second.start == first.end);
    BOOST_REQUIRE(recorded->ops.size() == 2u);
    BOOST_TEST(recorded->ops[1].bytes == 4096u);
    BOOST_TEST(std::string(recorded->ops[1].provider) == "copy-pcie");
    BOOST_TEST(recorded->labels[0] == "k");

    // A communication of a 2-rank communicator: one launch overhead (2 us), ready after the copy.
    CommMember member{77, 2, 0, 0};
    std::string error;
    BOOST_TEST(emu.RegisterComm(member, &error));
    Ns beforeComm = emu.Clock().Now();
    BOOST_TEST(emu.PlaceCommunication(*stream, member, 0, {CommOp{}}, &error));
    BOOST_REQUIRE(recorded->communications.size() == 1u);
    BOOST_TEST(recorded->communications[0] == std::max(beforeComm + 2000 + 3000, second.end));
    BOOST_TEST(recorded->communicationDeps[0].empty());
    BOOST_TEST(stream->pending == 1u);

    // A kernel after it waits on record 1: pending, with its own ready time, not a known op.
    Placement third = emu.Place(*stream, OpKind::Kernel, 4000, label, "roofline", 0);
    BOOST_TEST(third.pending == 2u);
    BOOST_REQUIRE(recorded->pending.size() == 1u);
    BOOST_TEST(recorded->pending[0].deps == std::vector<uint64_t>{1});
    BOOST_TEST(recorded->pending[0].duration == 4000.0);
    BOOST_TEST(recorded->ops.size() == 2u);

    // An event recorded now stands for record 3 (the event op folded behind the kernel); the sink
    // is told to seal the stream's record.
    Event* event = emu.CreateEvent(0);
    emu.RecordEvent(*event, *stream);
    BOOST_TEST(event->pending == 3u);
    BOOST_TEST(recorded->sealed.back() == stream->id);

    // The simulator says record 3 ends at 1 ms: the sync moves the host clock there, and from
    // now on the stream's times are known again.
    recorded->ends[3] = 1e6;
    emu.SyncTo(emu.StreamCompletion(*stream), "cudaStreamSynchronize");
    BOOST_REQUIRE(recorded->asked.size() == 1u);
    BOOST_TEST(recorded->asked[0] == std::vector<uint64_t>{3});
    BOOST_TEST(recorded->askedWhat[0] == "cudaStreamSynchronize");
    BOOST_TEST(emu.Clock().Now() == 1e6);
    BOOST_TEST(emu.Resolve(emu.EventCompletion(*event), "cudaEventQuery") == 1e6); // cached
    BOOST_TEST(recorded->asked.size() == 1u);
    Placement fourth = emu.Place(*stream, OpKind::Kernel, 1000, label, "roofline", 0);
    BOOST_TEST(fourth.pending == 0u);
    BOOST_TEST(fourth.start == 1e6 + 3000.0);

    emu.DeregisterComm(member);
    BOOST_TEST(emu.DestroyEvent(event));
    BOOST_TEST(emu.DestroyStream(stream));
    emu.SetSink(std::make_unique<LocalSink>());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fat_binaries)

BOOST_AUTO_TEST_CASE(malformed_images_give_nothing)
{
    BOOST_TEST(KernelParamBytes(nullptr).empty());
    const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.0\n";
    BOOST_TEST(ModuleImageParamBytes(ptx).empty());
    // A wrapper with the right magic around a container that lies about its size.
    unsigned char container[64] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0xff, 0xff, 0xff, 0x7f};
    struct
    {
        int magic;
        int version;
        const unsigned long long* data;
        void* unused;
    } wrapper{0x466243b1, 1, reinterpret_cast<const unsigned long long*>(container), nullptr};
    BOOST_TEST(KernelParamBytes(&wrapper).empty());
    // An ELF header whose section table points far outside the image.
    unsigned char elf[128] = {0x7f, 'E', 'L', 'F', 2};
    elf[0x28] = 0xff;
    elf[0x2f] = 0x01;
    elf[0x3A] = 64;
    elf[0x3C] = 3;
    std::unordered_map<std::string, int64_t> out;
    AddKernelParamBytes(elf, sizeof(elf), out);
    BOOST_TEST(out.empty());
}

BOOST_AUTO_TEST_SUITE_END()
