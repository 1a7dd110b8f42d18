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

#include <map>

#include <cstdio>
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

BOOST_AUTO_TEST_CASE(gemm_tiles_and_waves)
{
    GpuSpec spec = TestGpu();
    GemmModel gemm(1000);
    GemmShape shape;
    shape.m = shape.n = shape.k = 4096;
    shape.inputType = shape.mathType = DType::BF16;
    shape.outputBytes = 2;
    // 32 x 32 = 1024 tiles of 128x128 over 100 SMs: 11 waves; one tile = 2*128*128*4096 FLOP at
    // 200 TFLOPS / 100 SMs = 2e12 FLOP/s per SM, at 80 % efficiency.
    double expectedNs = 11 * (2.0 * 128 * 128 * 4096) / 2e12 / 0.8 * 1e9;
    BOOST_TEST(*gemm.PriceGemm(shape, spec) == expectedNs, boost::test_tools::tolerance(1e-12));
    // A skinny GEMM is memory bound: m=n=128 (1 tile), k=1e6 fp32: reads (128e6 + 128e6) * 4 B.
    GemmShape skinny;
    skinny.m = skinny.n = 128;
    skinny.k = 1000000;
    double memoryNs = ((128.0 * 1e6 + 1e6 * 128.0) * 4 + 128.0 * 128 * 4) / 1e12 * 1e9;
    double computeNs = 1 * (2.0 * 128 * 128 * 1e6) / (10e12 / 100) / 0.8 * 1e9;
    BOOST_TEST(*gemm.PriceGemm(skinny, spec) == std::max(memoryNs, computeNs),
               boost::test_tools::tolerance(1e-12));
    // One more row of tiles than fits in a wave costs a whole extra wave.
    GemmShape wave;
    wave.m = 128 * 100;
    wave.n = 128;
    wave.k = 8192;
    wave.mathType = DType::F32;
    GemmShape overflow = wave;
    overflow.m += 1;
    BOOST_TEST(*gemm.PriceGemm(overflow, spec) > 1.99 * *gemm.PriceGemm(wave, spec));
}

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
    std::vector<Ns> Resolve(const std::vector<uint64_t>& records, Ns, int, const std::string& what,
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
