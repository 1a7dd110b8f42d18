// The host description reader (spec/host-spec.h) and the host speed calibration
// (spec/host-calibration.h): figures as the shipped file gives them, costs between and beyond the
// measured sizes worked out by hand, bad input named by file, line and field.
#define BOOST_TEST_MODULE host_spec
#include <boost/test/unit_test.hpp>

#include "host-calibration.h"
#include "host-spec.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

using namespace eidolon::spec;

namespace
{

const std::string kHosts = EIDOLON_SOURCE_DIR "/topologies/hosts";

// A valid description whose calls all cost 1 us, but `replaceKey`, which is given `replacement`.
std::string
Minimal(const std::string& replaceKey = "", const std::string& replacement = "")
{
    std::string text = "name: tiny\ncpu: Intel test CPU\n"
                       "cpu_benchmark: {alu_ms: 40, sort_ms: 80, map_ms: 160, source: test}\n"
                       "calls:\n";
    for (size_t i = 0; i < kHostCallCount; ++i)
    {
        std::string key = HostCallKey(static_cast<HostCall>(i));
        text += "  " + key + ": " +
                (key == replaceKey ? replacement : std::string("{us: 1, source: test}")) + "\n";
    }
    return text;
}

std::string
ErrorOf(const std::string& text)
{
    try
    {
        ParseHostSpec(text, "tiny.yaml");
    }
    catch (const std::exception& e)
    {
        return e.what();
    }
    return "";
}

} // namespace

BOOST_AUTO_TEST_CASE(the_shipped_host_has_the_measured_figures)
{
    HostSpec host = FindHostSpec(kDefaultHostName, {kHosts});
    BOOST_TEST(host.name == "h100-server");
    // validation/measurements/h100-2026-11-24/host-costs.jsonl medians, in whole ns.
    BOOST_TEST(host.CostNs(HostCall::LaunchKernel) == 4019.0);
    BOOST_TEST(host.CostNs(HostCall::LaunchKernelLegacyStream) == 4858.0); // 4.8575 us
    BOOST_TEST(host.CostNs(HostCall::StreamSynchronize) == 1870.0);        // 1.8701 us
    BOOST_TEST(host.CostNs(HostCall::CublasLtMatmul) == 9095.0);           // 9.0949 us
    BOOST_TEST(host.CostNs(HostCall::NcclCommInit) == 643467400.0);
    // cudaMalloc between 64 MiB (53.595 us) and 1 GiB (115.387 us), at 512 MiB:
    //   53.595 + (115.387 - 53.595) x (512 - 64) / (1024 - 64) = 53.595 + 61.792 x 448/960
    //   = 53.595 + 28.836267 = 82.431267 us: 82431 ns
    BOOST_TEST(host.CostNs(HostCall::Malloc, 512ull << 20) == 82431.0);
    // Below the first size: the first figure (cudaMalloc of 1 byte: 50.389 us).
    BOOST_TEST(host.CostNs(HostCall::Malloc, 1) == 50389.0);
    // Pageable copies grow past 1 MiB along the last segment (64 KiB 8.4446 us, 1 MiB 69.5025 us):
    //   in whole ns, 65536 B: 8445 ns, 1 MiB: 69503 ns; at 2 MiB:
    //   69503 + (69503 - 8445) x (2097152 - 1048576) / (1048576 - 65536) = 69503 + 61058 x 16/15
    //   = 69503 + 65128.53 = 134631.53: 134632 ns
    BOOST_TEST(host.CostNs(HostCall::MemcpyAsyncPageable, 2ull << 20) == 134632.0);
    // Memset falls slightly from 64 KiB (4.5962) to 1 MiB (4.3999): beyond 1 MiB it stays flat.
    BOOST_TEST(host.CostNs(HostCall::MemsetAsync, 1ull << 30) == 4400.0); // 4.3999 us
    for (const HostCallCost& cost : host.calls)
    {
        BOOST_TEST(!cost.source.empty());
    }
}

// Minimal()'s lines: name, cpu, cpu_benchmark, calls:, then call i on line 5 + i (cudaMalloc is
// call 17: line 22; cudaFree 18: line 23; a 40th key after the 39 calls: line 44).
BOOST_AUTO_TEST_CASE(bad_descriptions_are_named_by_line_and_field)
{
    BOOST_TEST(ErrorOf(Minimal()) == "");
    BOOST_TEST(ErrorOf(Minimal("cudaMalloc", "{us: -1, source: x}")) ==
               "tiny.yaml:22: field 'calls.cudaMalloc.us': must not be negative");
    BOOST_TEST(ErrorOf(Minimal("cudaFree", "{us: 1}")) ==
               "tiny.yaml:23: field 'calls.cudaFree.source': missing");
    BOOST_TEST(ErrorOf(Minimal("cudaFree", "{by_bytes: [[10, 1], [5, 2]], source: x}")) ==
               "tiny.yaml:23: field 'calls.cudaFree.by_bytes': sizes must increase");
    std::string missing = Minimal();
    missing.erase(missing.find("  clock_gettime"));
    BOOST_TEST(ErrorOf(missing).find("field 'calls.clock_gettime': missing") != std::string::npos);
    BOOST_TEST(ErrorOf(Minimal() + "  cudaFrobnicate: {us: 1, source: x}\n") ==
               "tiny.yaml:44: field 'calls.cudaFrobnicate': unknown field");
    try
    {
        FindHostSpec("no-such-host", {kHosts});
        BOOST_FAIL("expected an error");
    }
    catch (const std::exception& e)
    {
        BOOST_TEST(std::string(e.what()).find("no host description 'no-such-host'") == 0u);
    }
}

// NCCL's CPU class: as written in cpu_vendor, else told by the words of cpu; a vendor NCCL does
// not know, or neither field saying one, is refused naming the field.
BOOST_AUTO_TEST_CASE(the_cpu_class_is_written_or_told_by_the_cpu_name)
{
    BOOST_TEST(ParseHostSpec(Minimal(), "tiny.yaml").cpuVendor == "intel");
    std::string amd = Minimal();
    amd.replace(amd.find("cpu: Intel test CPU"), 19, "cpu: AMD EPYC 9654");
    BOOST_TEST(ParseHostSpec(amd, "tiny.yaml").cpuVendor == "amd");
    std::string told = Minimal();
    told.replace(told.find("cpu: Intel test CPU"), 19, "cpu: AMD EPYC 9654\ncpu_vendor: arm");
    BOOST_TEST(ParseHostSpec(told, "tiny.yaml").cpuVendor == "arm");
    BOOST_TEST(CpuVendorOf("Intel(R) Xeon(R) Platinum 8480C") == "intel");
    BOOST_TEST(CpuVendorOf("NVIDIA Grace (Neoverse V2), 72 cores") == "arm");
    BOOST_TEST(CpuVendorOf("IBM POWER9") == "power");
    // "arm" inside another word ("Sapphire Rapids" has none, "warm" is not "arm").
    BOOST_TEST(CpuVendorOf("a warm Sapphire Rapids box") == "");
    std::string bad = Minimal();
    bad.replace(bad.find("cpu: Intel test CPU"), 19, "cpu: x\ncpu_vendor: via");
    BOOST_TEST(
        ErrorOf(bad) ==
        "tiny.yaml:3: field 'cpu_vendor': 'via' is not one of intel, amd, zhaoxin, arm, power");
    std::string unnamed = Minimal();
    unnamed.replace(unnamed.find("cpu: Intel test CPU"), 19, "cpu: a test box");
    BOOST_TEST(
        ErrorOf(unnamed).find("field 'cpu_vendor': missing, and 'cpu' (\"a test box\") names "
                              "no vendor") != std::string::npos);
}

// A by_bytes list written a pair a line: a bad pair is named by its own line. cudaMalloc's key is
// on line 22 (see above), so by_bytes is on 23, the pairs on 24 and 25, source on 26.
BOOST_AUTO_TEST_CASE(a_bad_pair_is_named_by_its_own_line)
{
    auto block = [](const std::string& second)
    { return "\n    by_bytes:\n      - [10, 1]\n      - " + second + "\n    source: x"; };
    BOOST_TEST(ErrorOf(Minimal("cudaMalloc", block("[20, 3]"))) == "");
    BOOST_TEST(ErrorOf(Minimal("cudaMalloc", block("[5, 2]"))) ==
               "tiny.yaml:25: field 'calls.cudaMalloc.by_bytes': sizes must increase");
    BOOST_TEST(ErrorOf(Minimal("cudaMalloc", block("[20, lots]"))) ==
               "tiny.yaml:25: field 'calls.cudaMalloc.by_bytes': expected a number, got 'lots'");
    // A nested mapping names its fields by path: cpu_benchmark is line 3.
    std::string noSource = Minimal();
    noSource.replace(noSource.find(", source: test}"), 15, "}");
    BOOST_TEST(ErrorOf(noSource) == "tiny.yaml:3: field 'cpu_benchmark.source': missing");
}

BOOST_AUTO_TEST_CASE(the_speed_factor_is_the_geometric_mean_of_the_workload_ratios)
{
    HostSpec host = ParseHostSpec(Minimal(), "tiny.yaml"); // 40, 80, 160 ms on the target
    HostCalibration here;
    here.aluNs = 20e6;  // the target takes 2x as long
    here.sortNs = 10e6; // 8x
    here.mapNs = 40e6;  // 4x
    // (2 x 8 x 4)^(1/3) = 64^(1/3) = 4
    BOOST_TEST(HostSpeedFactor(host, here) == 4.0, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(TargetInstructionsPerNs(host, here) == 0.0); // no counts: no rate
    here.aluInstructions = 100e6;
    here.sortInstructions = 200e6;
    here.mapInstructions = 260e6;
    // (100 + 200 + 260) M instructions over (40 + 80 + 160) M ns = 2 per ns
    BOOST_TEST(TargetInstructionsPerNs(host, here) == 2.0, boost::test_tools::tolerance(1e-12));

    std::string path = "/tmp/eidolon-host-calibration-test-" + std::to_string(::getpid()) + ".json";
    WriteHostCalibration(path, here);
    HostCalibration back = ReadHostCalibration(path);
    BOOST_TEST(back.sortNs == 10e6);
    BOOST_TEST(back.mapInstructions == 260e6);
    std::remove(path.c_str());
}

// A host known by its CPU (the class NCCL reads) but not measured names the description its costs
// come from: the shipped DGX A100 host is AMD with h100-server's figures. Giving costs as well, or
// naming a description that is not there, is refused by line and field.
BOOST_AUTO_TEST_CASE(a_host_may_take_its_costs_from_another)
{
    HostSpec a100 = FindHostSpec("dgx-a100-server", {kHosts});
    HostSpec h100 = FindHostSpec(kDefaultHostName, {kHosts});
    BOOST_TEST(a100.cpuVendor == "amd");
    BOOST_TEST(a100.costsFrom == "h100-server");
    BOOST_TEST(a100.CostNs(HostCall::LaunchKernel) == 4019.0);
    BOOST_TEST(a100.CostNs(HostCall::Malloc, 512ull << 20) ==
               h100.CostNs(HostCall::Malloc, 512ull << 20));
    BOOST_TEST(a100.cpuBenchmark.aluNs == h100.cpuBenchmark.aluNs);

    const std::string both = "name: x\ncpu: AMD EPYC\ncosts_from: h100-server\n"
                             "calls: {}\n";
    std::string error;
    try
    {
        ParseHostSpec(both, kHosts + "/x.yaml");
    }
    catch (const std::exception& e)
    {
        error = e.what();
    }
    BOOST_TEST(error.find("x.yaml:4: field 'calls': given together with costs_from") !=
                   std::string::npos,
               error);
    error.clear();
    try
    {
        ParseHostSpec("name: x\ncpu: AMD EPYC\ncosts_from: nowhere\n", kHosts + "/x.yaml");
    }
    catch (const std::exception& e)
    {
        error = e.what();
    }
    BOOST_TEST(error.find("x.yaml:3: field 'costs_from': no host description 'nowhere'") !=
                   std::string::npos,
               error);
}
