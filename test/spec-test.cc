// The spec library (spec/): units and GPU spec files, without ns-3. Expected values are the unit
// definitions and the figures of test/gpu-emu/gpus/TEST-GPU.yaml, worked out by hand.
#define BOOST_TEST_MODULE spec
#include "spec/gpu-spec.h"
#include "spec/nccl-env.h"
#include "spec/nccl-version.h"
#include "spec/spec-fields.h"
#include "spec/spec-units.h"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

using namespace eidolon::spec;

namespace
{
const std::string kTestGpuDir = EIDOLON_SOURCE_DIR "/test/gpu-emu/gpus";

/// TEST-GPU.yaml with `from` replaced by `to`, written as <tmp>/<dir>/TEST-GPU.yaml.
std::string
EditedTestGpu(const std::string& dir, const std::string& from, const std::string& to)
{
    std::string text;
    {
        std::ifstream in(kTestGpuDir + "/TEST-GPU.yaml");
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    text.replace(text.find(from), from.size(), to);
    auto path = std::filesystem::temp_directory_path() / ("eidolon-spec-test-" + dir);
    std::filesystem::create_directories(path);
    path /= "TEST-GPU.yaml";
    std::ofstream(path) << text;
    return path.string();
}

/// The message of the SpecError that reading path throws ("" if none).
std::string
ErrorOf(const std::string& path)
{
    try
    {
        ReadGpuSpec(path);
    }
    catch (const SpecError& e)
    {
        return e.what();
    }
    return "";
}
} // namespace

BOOST_AUTO_TEST_SUITE(units)

BOOST_AUTO_TEST_CASE(bandwidth_bits_and_bytes)
{
    // 400 Gb/s is 400e9 bits/s = 50e9 bytes/s; "GB/s" means bytes.
    BOOST_TEST(ParseBandwidth("400Gbps") == 50e9);
    BOOST_TEST(ParseBandwidth("400 Gb/s") == 50e9);
    BOOST_TEST(ParseBandwidth("450GB/s") == 450e9);
    BOOST_TEST(ParseBandwidth("64GBps") == 64e9);
    BOOST_TEST(ParseBandwidth("1.6Tbps") == 200e9);
    BOOST_TEST(ParseBandwidth("3.35TB/s") == 3.35e12);
    // Binary prefixes: 64 GiB/s = 64 * 2^30 bytes/s.
    BOOST_TEST(ParseBandwidth("64 GiB/s") == 64.0 * 1024 * 1024 * 1024);
    BOOST_CHECK_THROW(ParseBandwidth("fast"), SpecError);
    BOOST_CHECK_THROW(ParseBandwidth("0Gbps"), SpecError);
    BOOST_CHECK_THROW(ParseBandwidth("-5GB/s"), SpecError);
    BOOST_CHECK_THROW(ParseBandwidth("10 furlongs"), SpecError);
    BOOST_CHECK_THROW(ParseBandwidth("450"), SpecError); // a rate needs a unit
    BOOST_TEST(*TryParseBandwidth("400Gb/s") == 50e9);
    BOOST_TEST(!TryParseBandwidth("fast"));
}

BOOST_AUTO_TEST_CASE(latency)
{
    BOOST_TEST(ParseLatencyNs("500ns") == 500);
    BOOST_TEST(ParseLatencyNs("1us") == 1000);
    BOOST_TEST(ParseLatencyNs("1.5 us") == 1500);
    BOOST_TEST(ParseLatencyNs("2ms") == 2000000);
    BOOST_TEST(ParseLatencyNs("0") == 0);
    BOOST_CHECK_THROW(ParseLatencyNs("5"), SpecError); // a bare number has no unit
    BOOST_CHECK_THROW(ParseLatencyNs("soon"), SpecError);
}

BOOST_AUTO_TEST_CASE(sizes)
{
    BOOST_TEST(ParseBytes("80GiB") == 80ULL * 1024 * 1024 * 1024);
    BOOST_TEST(ParseBytes("50MiB") == 50ULL * 1024 * 1024);
    BOOST_TEST(ParseBytes("228KiB") == 228ULL * 1024);
    BOOST_TEST(ParseBytes("141GB") == 141000000000ULL);
    BOOST_TEST(ParseBytes("1.5GB") == 1500000000ULL);
    BOOST_TEST(ParseBytes("4096") == 4096ULL);
    BOOST_CHECK_THROW(ParseBytes("lots"), SpecError);
    BOOST_CHECK_THROW(ParseBytes("3XB"), SpecError);
    BOOST_TEST(*TryParseBytes("1GiB") == 1ULL << 30);
    BOOST_TEST(!TryParseBytes("lots"));
}

BOOST_AUTO_TEST_CASE(messages_say_what_was_expected)
{
    try
    {
        ParseBandwidth("10 furlongs");
        BOOST_FAIL("no error");
    }
    catch (const SpecError& e)
    {
        BOOST_TEST(std::string(e.what()) ==
                   "not a positive bandwidth: '10 furlongs' (write e.g. 400Gbps, 400Gb/s, "
                   "450GB/s, 64GBps)");
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(gpu_spec)

BOOST_AUTO_TEST_CASE(reads_test_gpu)
{
    GpuSpec s = ReadGpuSpec(kTestGpuDir + "/TEST-GPU.yaml");
    BOOST_TEST(s.name == "TEST-GPU");
    BOOST_TEST(s.computeCapabilityMajor == 8);
    BOOST_TEST(s.smCount == 100);
    BOOST_TEST(s.memoryBytes == 1ULL << 30);
    // No memory_usable in the file: a program sees all of memory.
    BOOST_TEST(s.memoryUsableBytes == 1ULL << 30);
    BOOST_TEST(s.hbmBandwidth == 1e12);
    BOOST_TEST(s.l2CacheBytes == 40ULL << 20);
    BOOST_TEST(s.sharedMemoryPerSmBytes == 164ULL << 10);
    BOOST_TEST(s.nvlinkBandwidth == 300e9);
    BOOST_TEST(s.pcieBandwidth == 32e9);
    BOOST_TEST(s.launchOverheadUs == 2.0);
    BOOST_TEST(s.denseTflops.at("bf16") == 200);
    // The FLOP/s view: 200 TFLOP/s = 200e12 FLOP/s; 10 TFLOP/s fp32 = 10e12.
    DenseFlops f = DenseFlopsOf(s);
    BOOST_TEST(f.bf16 == 200e12);
    BOOST_TEST(f.fp32 == 10e12);
    BOOST_TEST(f.int8 == 400e12);
}

BOOST_AUTO_TEST_CASE(absent_dtype_is_zero)
{
    std::string p = EditedTestGpu("fp8", "fp8: 400", "fp8: null");
    GpuSpec s = ReadGpuSpec(p);
    BOOST_TEST(s.denseTflops.count("fp8") == 0u);
    BOOST_TEST(DenseFlopsOf(s).fp8 == 0.0);
}

BOOST_AUTO_TEST_CASE(errors_name_file_line_and_field)
{
    // memory is on line 9 of TEST-GPU.yaml.
    std::string p = EditedTestGpu("memory", "memory: 1GiB", "memory: lots");
    std::string m = ErrorOf(p);
    BOOST_TEST(m.find(p + ":9: field 'memory': not a size: 'lots'") == 0u, m);
    p = EditedTestGpu("fp32", "fp32: 10, ", "");
    m = ErrorOf(p);
    BOOST_TEST(m.find("field 'dense_tflops': no fp32 rate") != std::string::npos, m);
    p = EditedTestGpu("usable", "memory: 1GiB", "memory: 1GiB\nmemory_usable: 2GiB");
    m = ErrorOf(p);
    BOOST_TEST(m.find(p + ":10: field 'memory_usable': exceeds memory") == 0u, m);
    p = EditedTestGpu("stray", "sm_count: 100", "sm_count: 100\nsm_cuont: 100");
    m = ErrorOf(p);
    BOOST_TEST(m.find(p + ":6: unknown key 'sm_cuont' in GPU spec") == 0u, m);
}

// yaml-cpp keeps both entries of a repeated key and finds the first: `nodes: 2` then `nodes: 4`
// read as 2, silently. Every file eidolon reads goes through LoadYaml, which refuses it naming both
// lines, at any depth; an alias (a shared node) is walked once and is not a repetition.
BOOST_AUTO_TEST_CASE(a_key_given_twice_is_refused_naming_both_lines)
{
    auto errorOf = [](const std::string& text)
    {
        try
        {
            LoadYaml(text, "f.yaml");
        }
        catch (const SpecError& e)
        {
            return std::string(e.what());
        }
        return std::string();
    };
    BOOST_TEST(errorOf("nodes: 2\nname: x\nnodes: 4\n") ==
               "f.yaml:3: key 'nodes' appears twice in one mapping (also at line 1); each key must "
               "be given once");
    BOOST_TEST(errorOf("a:\n  - {b: 1, c: 2}\n  - b: 1\n    b: 2\n").find("f.yaml:4: key 'b'") ==
               0u);
    // The same key in two mappings, and an anchor used twice, are fine.
    BOOST_TEST(errorOf("a: {b: 1}\nc: {b: 2}\n") == "");
    BOOST_TEST(errorOf("x: &m {b: 1}\ny: *m\nz: *m\n") == "");
}

BOOST_AUTO_TEST_CASE(find_by_name_in_directories)
{
    GpuSpec s = FindGpuSpec("TEST-GPU", {"/nonexistent", kTestGpuDir});
    BOOST_TEST(s.smCount == 100);
    try
    {
        FindGpuSpec("NO-SUCH-GPU", {kTestGpuDir});
        BOOST_FAIL("no error");
    }
    catch (const SpecError& e)
    {
        BOOST_TEST(std::string(e.what()).find(kTestGpuDir + "/NO-SUCH-GPU.yaml") !=
                   std::string::npos);
    }
    auto specs = LoadGpuSpecs(kTestGpuDir);
    BOOST_TEST(FindGpuSpec(specs, "TEST-GPU").smCount == 100);
    BOOST_CHECK_THROW(FindGpuSpec(specs, "X100"), SpecError);
}

BOOST_AUTO_TEST_CASE(nccl_version_as_nccl_prints_it_or_its_code)
{
    // NCCL_VERSION_CODE = major*10000 + minor*100 + patch: 2.18.3 -> 21803.
    BOOST_TEST(ParseNcclVersion("2.18.3", "X") == 21803u);
    BOOST_TEST(ParseNcclVersion("2.18", "X") == 21800u);
    BOOST_TEST(ParseNcclVersion(" v2.21.5-1 ", "X") == 22105u);
    BOOST_TEST(ParseNcclVersion("22403", "X") == 22403u);
    BOOST_TEST(FormatNcclVersion(23007) == "2.30.7");
    for (const char* bad : {"2.17.9", "2.31.0", "3", "latest", "2.x", "2.18.3.1"})
    {
        try
        {
            ParseNcclVersion(bad, "EIDOLON_NCCL_VERSION");
            BOOST_FAIL(std::string("no error for ") + bad);
        }
        catch (const SpecError& e)
        {
            BOOST_TEST(std::string(e.what()).find("EIDOLON_NCCL_VERSION") == 0);
        }
    }
}

BOOST_AUTO_TEST_CASE(nccl_version_from_the_environment)
{
    unsetenv(kNcclVersionVariable);
    BOOST_TEST(NcclVersionFromEnvironment() == kDefaultNcclVersion);
    setenv(kNcclVersionVariable, "2.24.3", 1);
    BOOST_TEST(NcclVersionFromEnvironment() == 22403u);
    setenv(kNcclVersionVariable, "two", 1);
    BOOST_CHECK_THROW(NcclVersionFromEnvironment(), SpecError);
    unsetenv(kNcclVersionVariable);
}

// NCCL_ALGO / NCCL_PROTO as each release reads them (graph/tuning.cc parseList of 2.18.5, 2.21.5,
// 2.23.4 and 2.24.3), and what each release does with a call they leave nothing it implements
// (enqueue.cc, tuning.cc of 2.18.5, 2.21.5, 2.22.3, 2.24.3, 2.30.7).
BOOST_AUTO_TEST_CASE(nccl_algo_and_proto_as_each_release_reads_them)
{
    constexpr int kBroadcast = 0, kReduce = 1, kAllReduce = 4;
    constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kNvls = 4, kNvlsTree = 5, kPat = 6;
    constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
    // 2.24+: a list for all functions, per-function lists (the others keep everything), and a
    // first entry without a function that the later ones override.
    NcclEnvReading r = ReadNcclAlgoProto(22403, "tree", nullptr);
    BOOST_TEST((r.masks.algo[kAllReduce][kTree] && !r.masks.algo[kAllReduce][kRing] &&
                !r.masks.algo[kBroadcast][kRing] && !r.initError && r.ignored.empty()));
    r = ReadNcclAlgoProto(22403, "allreduce:tree", "^LL128");
    BOOST_TEST((r.masks.algo[kBroadcast][kRing] && !r.masks.algo[kAllReduce][kRing]));
    BOOST_TEST((r.masks.proto[kAllReduce][kLL] && !r.masks.proto[kAllReduce][kLL128] &&
                r.masks.protoNamed[kBroadcast]));
    r = ReadNcclAlgoProto(22403, "Ring;AllReduce:tree,NVLS", "allreduce:simple");
    BOOST_TEST((r.masks.algo[kBroadcast][kRing] && !r.masks.algo[kBroadcast][kTree] &&
                !r.masks.algo[kAllReduce][kRing] && r.masks.algo[kAllReduce][kTree] &&
                r.masks.algo[kAllReduce][kNvls]));
    BOOST_TEST((!r.masks.protoNamed[kBroadcast] && r.masks.protoNamed[kAllReduce] &&
                !r.masks.proto[kAllReduce][kLL] && r.masks.proto[kAllReduce][kSimple]));
    // What 2.24+ cannot read fails the communicator's creation, with NCCL's words: no "collnet"
    // (the names are CollNetDirect and CollNetChain), no blanks, no unknown function, and only
    // the first entry may lack one. NCCL_PROTO is read first.
    auto initError = [](const std::string& algo, const std::string& proto)
    {
        // (an empty `proto` here: NCCL_PROTO unset)
        NcclEnvReading read =
            ReadNcclAlgoProto(23007, algo.c_str(), proto.empty() ? nullptr : proto.c_str());
        BOOST_TEST(read.masks.algo[kBroadcast][kRing]); // NCCL's defaults
        return read.initError ? std::to_string(read.initError->code) + " " + read.initError->message
                              : std::string("none");
    };
    BOOST_TEST(initError("collnet", "") ==
               "5 Unrecognized element token \"collnet\" when parsing \"collnet\"");
    BOOST_TEST(initError("ring, tree", "") ==
               "5 Unrecognized element token \" tree\" when parsing \"ring, tree\"");
    BOOST_TEST(initError("sideways:ring", "") ==
               "5 Unrecognized prefix token \"sideways\" when parsing \"sideways:ring\"");
    BOOST_TEST(initError("allreduce:tree;ring", "") ==
               "5 All entries except the first must have a prefix: \"allreduce:tree;ring\"");
    BOOST_TEST(initError("bogus", "LL;allreduce:bogus") ==
               "5 Unrecognized element token \"bogus\" when parsing \"LL;allreduce:bogus\"");
    BOOST_TEST(initError("ring,,tree;;allreduce:^nvls", "") == "none"); // empty pieces skipped

    // 2.18-2.23: one list for every function; what they do not know is skipped without a word,
    // "allreduce:tree" included, so that list enables nothing at all. PAT is a name from 2.23.
    r = ReadNcclAlgoProto(22105, "allreduce:tree", nullptr);
    BOOST_TEST(!r.initError);
    BOOST_TEST(r.ignored == std::vector<std::string>{"NCCL_ALGO: 'allreduce:tree'"});
    BOOST_TEST((!r.masks.algo[kAllReduce][kTree] && !r.masks.algo[kAllReduce][kRing] &&
                !r.masks.algo[kBroadcast][kRing]));
    r = ReadNcclAlgoProto(22105, "ring,PAT", nullptr);
    BOOST_TEST((r.masks.algo[kAllReduce][kRing] && !r.masks.algo[kAllReduce][kPat]));
    BOOST_TEST(r.ignored == std::vector<std::string>{"NCCL_ALGO: 'PAT'"});
    r = ReadNcclAlgoProto(22304, "ring,PAT", nullptr);
    BOOST_TEST((r.masks.algo[kAllReduce][kRing] && r.masks.algo[kAllReduce][kPat]));
    BOOST_TEST(r.ignored.empty());
    r = ReadNcclAlgoProto(21805, "^tree", "simple, LL");
    BOOST_TEST((!r.masks.algo[kBroadcast][kTree] && r.masks.algo[kBroadcast][kRing] &&
                r.masks.algo[kBroadcast][kNvlsTree]));
    BOOST_TEST((r.masks.proto[kBroadcast][kSimple] && !r.masks.proto[kBroadcast][kLL] &&
                !r.masks.proto[kBroadcast][kLL128] && r.masks.protoNamed[kAllReduce]));
    BOOST_TEST(r.ignored == std::vector<std::string>{"NCCL_PROTO: ' LL'"});
    // 2.18 keeps Ring for every function but AllReduce, whatever NCCL_ALGO says; 2.19 does not.
    r = ReadNcclAlgoProto(21805, "tree", nullptr);
    BOOST_TEST((r.masks.algo[kBroadcast][kRing] && r.masks.algo[kReduce][kRing] &&
                !r.masks.algo[kAllReduce][kRing] && r.masks.algo[kAllReduce][kTree]));
    r = ReadNcclAlgoProto(21904, "tree", nullptr);
    BOOST_TEST((!r.masks.algo[kBroadcast][kRing] && !r.masks.algo[kReduce][kRing]));
    const std::string said = NcclEnvReadingWarning(
        22105, ReadNcclAlgoProto(22105, "allreduce:tree", nullptr), "allreduce:tree", nullptr);
    BOOST_TEST(said.find("function:list entries came with NCCL 2.24") != std::string::npos);
    BOOST_TEST(said.find("NCCL_ALGO='allreduce:tree' enables nothing NCCL 2.21.5 knows") !=
               std::string::npos);

    // Set but empty: 2.18-2.23 read a list of nothing (every algorithm, or protocol, off);
    // 2.24+ change nothing.
    r = ReadNcclAlgoProto(22105, "", "");
    BOOST_TEST((!r.masks.algo[kAllReduce][kRing] && !r.masks.algo[kAllReduce][kNvls] &&
                !r.masks.proto[kAllReduce][kSimple] && r.masks.protoNamed[kAllReduce]));
    BOOST_TEST(r.nothingEnabled == (std::vector<std::string>{"NCCL_PROTO", "NCCL_ALGO"}));
    BOOST_TEST(r.ignored.empty());
    r = ReadNcclAlgoProto(22403, "", "");
    BOOST_TEST((r.masks.algo[kAllReduce][kRing] && r.masks.algo[kAllReduce][kNvls] &&
                r.masks.proto[kAllReduce][kSimple] && !r.masks.protoNamed[kAllReduce] &&
                !r.initError && r.nothingEnabled.empty()));
    r = ReadNcclAlgoProto(22105, "^", nullptr); // '^' of nothing: everything
    BOOST_TEST((r.masks.algo[kAllReduce][kRing] && r.nothingEnabled.empty()));

    // 2.18-2.23's CollNet rule: without CollNet, where Ring, Tree, NVLS (off across nodes) and
    // NVLSTree (off on one node) are all off, Ring and Tree come back.
    auto fallback = [](uint32_t v, bool collnet, int nodes, int only)
    {
        bool algo[kNcclAlgos] = {};
        algo[only] = true;
        bool fired = NcclCollNetFallback(v, collnet, nodes, algo);
        BOOST_TEST(fired == (algo[kRing] && algo[kTree]));
        return fired;
    };
    BOOST_TEST(fallback(22105, false, 4, kNvls));
    BOOST_TEST(!fallback(22105, false, 1, kNvls));
    BOOST_TEST(fallback(22105, false, 1, kNvlsTree));
    BOOST_TEST(!fallback(22105, false, 4, kNvlsTree));
    BOOST_TEST(fallback(21805, false, 4, kCollNetDirect));
    BOOST_TEST(!fallback(21805, true, 4, kCollNetDirect));
    BOOST_TEST(fallback(22304, false, 4, kPat));
    BOOST_TEST(!fallback(22403, false, 4, kNvls));
}

BOOST_AUTO_TEST_CASE(nccl_algo_and_proto_leave_a_function_nothing)
{
    constexpr int kBroadcast = 0, kAllGather = 2, kAllReduce = 4;
    // What each function has: PAT gathers from 2.23, NVLS is Simple only.
    BOOST_TEST(!NcclImplements(23007, kBroadcast, 0, 2));
    BOOST_TEST(NcclImplements(23007, kAllGather, 6, 2));
    BOOST_TEST(!NcclImplements(22105, kAllGather, 6, 2));
    BOOST_TEST(!NcclImplements(23007, kAllReduce, 6, 2));
    BOOST_TEST(!NcclImplements(23007, kAllReduce, 4, 0));

    auto error = [](uint32_t v, int f, const std::string& algo, const std::string& proto)
    {
        const char* p = proto.empty() ? nullptr : proto.c_str();
        return NcclNoAlgorithmError(v, f, ReadNcclAlgoProto(v, algo.c_str(), p).masks, algo.c_str(),
                                    p, "ncclFloat32");
    };
    // Tree for a Broadcast: 2.24 names it all (ncclInvalidUsage), 2.30 says "No ...", 2.18 says
    // less (ncclInternalError); 2.21 and 2.22 run Ring.
    auto e = error(22403, kBroadcast, "Tree", "");
    BOOST_TEST_REQUIRE(e.has_value());
    BOOST_TEST(e->code == 5);
    BOOST_TEST(e->message == "Error : no algorithm/protocol available for function Broadcast with "
                             "datatype ncclFloat32. NCCL_ALGO was set to Tree.");
    e = error(23007, kBroadcast, "Tree", "Simple");
    BOOST_TEST_REQUIRE(e.has_value());
    BOOST_TEST(e->message == "No algorithm/protocol available for function Broadcast with datatype "
                             "ncclFloat32. NCCL_ALGO was set to Tree. NCCL_PROTO was set to "
                             "Simple.");
    // 2.18 never turns Ring off for a Broadcast (tuning.cc: "Never disable ring for
    // non-allreduce operations"); an AllReduce with no protocol left fails.
    BOOST_TEST(!error(21805, kBroadcast, "Tree", "").has_value());
    e = error(21805, kAllReduce, "Tree", "^LL,LL128,Simple");
    BOOST_TEST_REQUIRE(e.has_value());
    BOOST_TEST((e->code == 3 && e->message == "Error : no algorithm/protocol available"));
    BOOST_TEST(!error(22105, kBroadcast, "Tree", "").has_value());
    BOOST_TEST(!error(22203, kBroadcast, "Tree", "Simple").has_value());
    // Ring's backup keeps NCCL_PROTO from 2.22: with no protocol left, 2.22 fails and 2.21 runs.
    BOOST_TEST(error(22203, kBroadcast, "Tree", "^LL,LL128,Simple").has_value());
    BOOST_TEST(!error(22105, kBroadcast, "Tree", "^LL,LL128,Simple").has_value());
    // NCCL names a variable that is set (its getenv test), empty or not: NCCL_ALGO="" beside an
    // NCCL_PROTO that leaves nothing.
    e = error(22403, kBroadcast, "", "^LL,LL128,Simple");
    BOOST_TEST_REQUIRE(e.has_value());
    BOOST_TEST(e->code == 5);
    BOOST_TEST(e->message == "Error : no algorithm/protocol available for function Broadcast with "
                             "datatype ncclFloat32. NCCL_ALGO was set to . NCCL_PROTO was set to "
                             "^LL,LL128,Simple.");
    BOOST_TEST(NcclNoAlgorithmText(22403, kBroadcast, nullptr, nullptr, "ncclFloat32").code == 3);
    // PAT for an AllReduce, NVLS with LL: nothing; NVLS alone, PAT for an AllGather, a prefix
    // for another function: something the topology may run (the model decides), so no error here.
    BOOST_TEST(error(23007, kAllReduce, "PAT", "").has_value());
    BOOST_TEST(error(23007, kAllReduce, "NVLS", "LL").has_value());
    BOOST_TEST(!error(23007, kAllReduce, "NVLS", "").has_value());
    BOOST_TEST(!error(23007, kAllGather, "PAT", "").has_value());
    BOOST_TEST(!error(23007, kBroadcast, "allreduce:tree", "").has_value());
    // 2.18-2.23: where NCCL_ALGO leaves Ring, Tree and NVLSTree off, the CollNet rule may turn
    // Ring and Tree back on (the topology decides: the model's part); 2.18 does not know PAT, so
    // NCCL_ALGO=PAT is a list of nothing.
    BOOST_TEST(!error(21805, kBroadcast, "CollNetDirect", "").has_value());
    BOOST_TEST(!error(21805, kBroadcast, "PAT", "").has_value());
    BOOST_TEST(!error(21805, kBroadcast, "Tree,CollNetDirect", "").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
