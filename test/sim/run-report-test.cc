// The report writers of `eidolon run`: summary.json and trace.json read back with nlohmann, the
// summary table and the progress line compared with values worked out by hand.
#define BOOST_TEST_MODULE run_report
#include "run-report.h"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

using namespace eidolon::sim;
using nlohmann::json;

namespace
{
constexpr uint64_t kGiB = 1024ULL * 1024 * 1024;

/// A fresh directory under the system temp dir, removed at the end of the test.
struct TempDir
{
    std::filesystem::path path;
    TempDir()
    {
        std::string pattern = (std::filesystem::temp_directory_path() / "eidolon-run-XXXXXX");
        BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

json
ReadJson(const std::filesystem::path& path)
{
    std::ifstream in(path);
    BOOST_REQUIRE(in.good());
    return json::parse(in); // throws (fails the test) on invalid JSON
}

RunReport
HandBuiltReport()
{
    RunReport r;
    r.topology = "topologies/default.yaml";
    r.model = "flow";
    r.launch = "gpu";
    r.partial = true;
    r.error = "rank1 exited with status 1";
    r.wallSeconds = 2.0;
    r.virtualEndNs = 10e6; // 10 ms: virtual/wall = 0.01 s / 2 s = 0.005
    r.causalityViolations = 2;
    r.causalityViolationNs = 1500;
    r.maxCausalityViolationNs = 1000;
    r.lateLocalRecords = 7;
    r.recordsIngested = 12345;
    r.flows = 678;

    GpuReport g0;
    g0.gpu = 0;
    g0.name = "node0/gpu0";
    g0.process = "rank0";
    g0.endNs = 10e6;
    g0.computeNs = 6e6; // 60.0 %
    g0.commNs = 2.5e6;  // 25.0 %
    g0.idleNs = 1.5e6;  // 15.0 %
    g0.peakBytes = 12 * kGiB;
    g0.capacityBytes = 80 * kGiB;
    // shares by priced time: 0 / 6e6, 4.8e6 / 6e6 = 80 %, 1.2e6 / 6e6 = 20 %
    g0.pricing = {{"profile", 0, 0}, {"model", 40, 4.8e6}, {"roofline", 10, 1.2e6}};
    g0.communication = {{"AllReduce", 3, 3 << 20}, {"Send", 2, 4096}};

    GpuReport g1;
    g1.gpu = 1;
    g1.name = "node0/gpu1";
    g1.process = "rank1";
    g1.endNs = 8e6;
    g1.computeNs = 2e6;      // 25.0 %
    g1.commNs = 1e6;         // 12.5 %
    g1.idleNs = 5e6;         // 62.5 %
    g1.peakBytes = kGiB / 2; // 0.50 GiB
    g1.capacityBytes = 80 * kGiB;
    g1.pricing = {{"profile", 3, 1e6}, {"model", 1, 3e6}}; // 25 % / 75 %

    r.gpus = {g0, g1};
    r.processes = {{"rank0", 1234, false, false, 0}, {"rank1", 1235, true, false, 1}};
    return r;
}
} // namespace

BOOST_AUTO_TEST_CASE(summary_json_round_trip)
{
    TempDir dir;
    auto report = HandBuiltReport();
    auto path = dir.path / "summary.json";
    WriteSummaryJson(report, path.string());
    BOOST_TEST(!std::filesystem::exists(dir.path / "summary.json.tmp"));
    json s = ReadJson(path);

    BOOST_TEST(s["topology"] == "topologies/default.yaml");
    BOOST_TEST(s["model"] == "flow");
    BOOST_TEST(s["launch"] == "gpu");
    BOOST_TEST(s["partial"] == true);
    BOOST_TEST(s["error"] == "rank1 exited with status 1");
    BOOST_TEST(s["wall_seconds"].get<double>() == 2.0);
    BOOST_TEST(s["virtual_end_ns"].get<double>() == 10e6);
    BOOST_TEST(s["virtual_wall_ratio"].get<double>() == 0.005, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(s["records_ingested"].get<uint64_t>() == 12345u);
    BOOST_TEST(s["flows"].get<uint64_t>() == 678u);
    BOOST_TEST(s["causality_violations"]["count"].get<uint64_t>() == 2u);
    BOOST_TEST(s["causality_violations"]["total_ns"].get<double>() == 1500.0);
    BOOST_TEST(s["causality_violations"]["max_ns"].get<double>() == 1000.0);
    BOOST_TEST(s["causality_violations"]["late_local_records"].get<uint64_t>() == 7u);

    BOOST_REQUIRE(s["gpus"].size() == 2u);
    const json& g0 = s["gpus"][0];
    BOOST_TEST(g0["gpu"].get<uint32_t>() == 0u);
    BOOST_TEST(g0["name"] == "node0/gpu0");
    BOOST_TEST(g0["process"] == "rank0");
    BOOST_TEST(g0["end_ns"].get<double>() == 10e6);
    BOOST_TEST(g0["compute_ns"].get<double>() == 6e6);
    BOOST_TEST(g0["comm_ns"].get<double>() == 2.5e6);
    BOOST_TEST(g0["idle_ns"].get<double>() == 1.5e6);
    BOOST_TEST(g0["peak_bytes"].get<uint64_t>() == 12 * kGiB);
    BOOST_TEST(g0["capacity_bytes"].get<uint64_t>() == 80 * kGiB);
    BOOST_REQUIRE(g0["pricing"].size() == 3u);
    BOOST_TEST(g0["pricing"][0]["provider"] == "profile");
    BOOST_TEST(g0["pricing"][0]["ops"].get<uint64_t>() == 0u);
    BOOST_TEST(g0["pricing"][0]["share"].get<double>() == 0.0);
    BOOST_TEST(g0["pricing"][1]["provider"] == "model");
    BOOST_TEST(g0["pricing"][1]["ops"].get<uint64_t>() == 40u);
    BOOST_TEST(g0["pricing"][1]["ns"].get<double>() == 4.8e6);
    BOOST_TEST(g0["pricing"][1]["share"].get<double>() == 0.8, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(g0["pricing"][2]["share"].get<double>() == 0.2, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(g0["communication"].size() == 2u);
    BOOST_TEST(g0["communication"]["AllReduce"]["calls"].get<uint64_t>() == 3u);
    BOOST_TEST(g0["communication"]["AllReduce"]["bytes"].get<uint64_t>() == 3u << 20);
    BOOST_TEST(g0["communication"]["Send"]["bytes"].get<uint64_t>() == 4096u);
    BOOST_TEST(s["gpus"][1]["communication"].empty());
    BOOST_TEST(s["gpus"][1]["name"] == "node0/gpu1");
    BOOST_TEST(s["gpus"][1]["pricing"][1]["share"].get<double>() == 0.75);

    BOOST_REQUIRE(s["processes"].size() == 2u);
    BOOST_TEST(s["processes"][0]["name"] == "rank0");
    BOOST_TEST(s["processes"][0]["pid"].get<int>() == 1234);
    BOOST_TEST(s["processes"][0]["exited"] == false);
    BOOST_TEST(s["processes"][1]["exited"] == true);
    BOOST_TEST(s["processes"][1]["signaled"] == false);
    BOOST_TEST(s["processes"][1]["code"].get<int>() == 1);
}

// Processes are listed by name with numbers by value, whatever order they ended in; links and
// notes are written as the report has them.
BOOST_AUTO_TEST_CASE(summary_json_lists_processes_by_name_and_the_links)
{
    TempDir dir;
    auto report = HandBuiltReport();
    report.processes = {{"worker1", 7, true, false, 0},
                        {"rank10", 5, true, false, 0},
                        {"rank2", 6, true, false, 0},
                        {"rank02x", 8, true, false, 0}};
    report.links.push_back({3, "node0/gpu0->node0/nvswitch", 450e9, 4096, 2, 1500});
    report.notes.push_back("trace.json holds the first 1 network slices");
    auto path = dir.path / "summary.json";
    WriteSummaryJson(report, path.string());
    json s = ReadJson(path);
    BOOST_REQUIRE(s["processes"].size() == 4u);
    // rank2 and rank02x share "rank" and 2; then "" < "x"; 10 > 2 as numbers; "w" > "r".
    BOOST_TEST(s["processes"][0]["name"] == "rank2");
    BOOST_TEST(s["processes"][1]["name"] == "rank02x");
    BOOST_TEST(s["processes"][2]["name"] == "rank10");
    BOOST_TEST(s["processes"][3]["name"] == "worker1");
    BOOST_REQUIRE(s["links"].size() == 1u);
    BOOST_TEST(s["links"][0]["name"] == "node0/gpu0->node0/nvswitch");
    BOOST_TEST(s["links"][0]["bandwidth_bytes_per_s"].get<double>() == 450e9);
    BOOST_TEST(s["links"][0]["bytes"].get<double>() == 4096);
    BOOST_TEST(s["links"][0]["flows"].get<uint64_t>() == 2u);
    BOOST_TEST(s["links"][0]["busy_ns"].get<double>() == 1500);
    BOOST_REQUIRE(s["notes"].size() == 1u);
    BOOST_TEST(s["notes"][0] == "trace.json holds the first 1 network slices");
}

BOOST_AUTO_TEST_CASE(summary_json_to_an_unwritable_path_throws)
{
    BOOST_CHECK_THROW(WriteSummaryJson(HandBuiltReport(), "/nonexistent-dir/summary.json"),
                      std::runtime_error);
}

namespace
{
/// The events of a trace with the given phase, pid and (if >= 0) tid.
std::vector<json>
Events(const json& trace, const std::string& ph, int64_t pid, int64_t tid = -1)
{
    std::vector<json> found;
    for (const auto& e : trace["traceEvents"])
    {
        if (e["ph"] == ph && e["pid"].get<int64_t>() == pid &&
            (tid < 0 || (e.contains("tid") && e["tid"].get<int64_t>() == tid)))
        {
            found.push_back(e);
        }
    }
    return found;
}

std::string
MetadataName(const json& trace, const std::string& what, int64_t pid, int64_t tid = -1)
{
    for (const auto& e : Events(trace, "M", pid, tid))
    {
        if (e["name"] == what && (tid >= 0 || !e.contains("tid")))
        {
            return e["args"]["name"].get<std::string>();
        }
    }
    return "<none>";
}
} // namespace

BOOST_AUTO_TEST_CASE(trace_json_events)
{
    TempDir dir;
    auto report = HandBuiltReport();
    // GPU 0, stream 7: a GEMM from 1000 ns to 3500 ns -> ts 1 us, dur 2.5 us.
    report.slices.push_back({0, 7, "gemm", "compute", 1000, 3500, json{{"flops", 1e9}}});
    // GPU 0, stream 8: an all-reduce from 2000 ns to 12000 ns -> ts 2 us, dur 10 us.
    report.slices.push_back({0, 8, "allreduce", "collective", 2000, 12000, json()});
    // GPU 1, stream 0: a copy from 500 ns to 1500.5 ns -> ts 0.5 us, dur 1.0005 us.
    report.slices.push_back({1, 0, "memcpy HtoD", "copy", 500, 1500.5, json()});
    // Channel 3: two flows overlapping (2000-6000 and 3000-7000 ns): the second gets a lane of
    // its own, tid 6 (past the highest channel, 5), named "<channel> #2".
    report.flowSlices.push_back({3, "node0/gpu0->node0/nvswitch", 2000, 6000, 4096, "allreduce#1",
                                 "node0/gpu0", "node0/gpu1"});
    report.flowSlices.push_back({3, "node0/gpu0->node0/nvswitch", 3000, 7000, 8192, "", "", ""});
    // Channel 5: 1 MiB from 0 to 1000 ns, no label -> named by its size; 1048576 B / 1000 ns.
    report.flowSlices.push_back({5, "node0/nvswitch->node0/gpu1", 0, 1000, 1048576, "", "", ""});
    // Channel 3 again after both ended: back in lane 0.
    report.flowSlices.push_back({3, "node0/gpu0->node0/nvswitch", 7000, 8000, 100, "late", "", ""});

    auto path = dir.path / "trace.json";
    WriteTraceJson(report, path.string());
    json trace = ReadJson(path);
    BOOST_REQUIRE(trace["traceEvents"].is_array());
    BOOST_TEST(trace["displayTimeUnit"] == "ns");

    // Process and thread names.
    BOOST_TEST(MetadataName(trace, "process_name", 0) == "node0/gpu0");
    BOOST_TEST(MetadataName(trace, "process_name", 1) == "node0/gpu1");
    BOOST_TEST(MetadataName(trace, "thread_name", 0, 7) == "stream 7");
    BOOST_TEST(MetadataName(trace, "thread_name", 0, 8) == "stream 8");
    BOOST_TEST(MetadataName(trace, "thread_name", 1, 0) == "stream 0");
    const int64_t network = 2; // past the highest GPU index
    BOOST_TEST(MetadataName(trace, "process_name", network) == "network");
    BOOST_TEST(MetadataName(trace, "thread_name", network, 3) == "node0/gpu0->node0/nvswitch");
    BOOST_TEST(MetadataName(trace, "thread_name", network, 6) == "node0/gpu0->node0/nvswitch #2");
    BOOST_TEST(MetadataName(trace, "thread_name", network, 5) == "node0/nvswitch->node0/gpu1");

    // GPU slices.
    auto gemm = Events(trace, "X", 0, 7);
    BOOST_REQUIRE(gemm.size() == 1u);
    BOOST_TEST(gemm[0]["name"] == "gemm");
    BOOST_TEST(gemm[0]["cat"] == "compute");
    BOOST_TEST(gemm[0]["ts"].get<double>() == 1.0);
    BOOST_TEST(gemm[0]["dur"].get<double>() == 2.5);
    BOOST_TEST(gemm[0]["args"]["flops"].get<double>() == 1e9);
    auto allreduce = Events(trace, "X", 0, 8);
    BOOST_REQUIRE(allreduce.size() == 1u);
    BOOST_TEST(allreduce[0]["cat"] == "collective");
    BOOST_TEST(allreduce[0]["ts"].get<double>() == 2.0);
    BOOST_TEST(allreduce[0]["dur"].get<double>() == 10.0);
    BOOST_TEST(!allreduce[0].contains("args"));
    auto copy = Events(trace, "X", 1, 0);
    BOOST_REQUIRE(copy.size() == 1u);
    BOOST_TEST(copy[0]["cat"] == "copy");
    BOOST_TEST(copy[0]["ts"].get<double>() == 0.5);
    BOOST_TEST(copy[0]["dur"].get<double>() == 1.0005, boost::test_tools::tolerance(1e-12));

    // Flows.
    auto lane0 = Events(trace, "X", network, 3);
    BOOST_REQUIRE(lane0.size() == 2u);
    BOOST_TEST(lane0[0]["name"] == "allreduce#1");
    BOOST_TEST(lane0[0]["cat"] == "flow");
    BOOST_TEST(lane0[0]["ts"].get<double>() == 2.0);
    BOOST_TEST(lane0[0]["dur"].get<double>() == 4.0);
    BOOST_TEST(lane0[0]["args"]["bytes"].get<uint64_t>() == 4096u);
    BOOST_TEST(lane0[0]["args"]["GB/s"].get<double>() == 1.024); // 4096 B / 4000 ns
    BOOST_TEST(lane0[0]["args"]["from"] == "node0/gpu0");        // the flow's endpoints
    BOOST_TEST(lane0[0]["args"]["to"] == "node0/gpu1");
    BOOST_TEST(lane0[1]["name"] == "late");
    BOOST_TEST(lane0[1]["ts"].get<double>() == 7.0);
    BOOST_TEST(lane0[1]["dur"].get<double>() == 1.0);
    auto lane1 = Events(trace, "X", network, 6);
    BOOST_REQUIRE(lane1.size() == 1u);
    BOOST_TEST(lane1[0]["name"] == "8.00 KiB");
    BOOST_TEST(lane1[0]["ts"].get<double>() == 3.0);
    BOOST_TEST(lane1[0]["dur"].get<double>() == 4.0);
    auto other = Events(trace, "X", network, 5);
    BOOST_REQUIRE(other.size() == 1u);
    BOOST_TEST(other[0]["name"] == "1.00 MiB");
    BOOST_TEST(other[0]["ts"].get<double>() == 0.0);
    BOOST_TEST(other[0]["dur"].get<double>() == 1.0);
    BOOST_TEST(other[0]["args"]["GB/s"].get<double>() == 1048.576);

    int complete = 0;
    for (const auto& e : trace["traceEvents"])
    {
        complete += e["ph"] == "X" ? 1 : 0;
    }
    BOOST_TEST(complete == 7);
}

BOOST_AUTO_TEST_CASE(trace_json_overlapping_slices_on_a_stream_get_extra_lanes)
{
    TempDir dir;
    RunReport report;
    report.gpus.push_back(GpuReport{});
    report.gpus[0].name = "node0/gpu0";
    report.slices.push_back({0, 2, "a", "compute", 0, 2000, json()});
    report.slices.push_back({0, 2, "b", "sync", 1000, 3000, json()});
    report.slices.push_back({0, 2, "c", "compute", 2000, 2500, json()}); // after a: lane 0
    WriteTraceJson(report, (dir.path / "t.json").string());
    json trace = ReadJson(dir.path / "t.json");
    BOOST_TEST(Events(trace, "X", 0, 2).size() == 2u);
    auto extra = Events(trace, "X", 0, 3);
    BOOST_REQUIRE(extra.size() == 1u);
    BOOST_TEST(extra[0]["name"] == "b");
    BOOST_TEST(MetadataName(trace, "thread_name", 0, 3) == "stream 2 #2");
}

BOOST_AUTO_TEST_CASE(trace_json_stays_valid)
{
    TempDir dir;
    RunReport report;
    // Names needing escapes, non-finite times, non-object args, no GPU reports at all.
    report.slices.push_back({9, 0, "quote \" backslash \\ newline \n tab \t", "compute",
                             std::numeric_limits<double>::quiet_NaN(), 10, json(42)});
    report.slices.push_back({9, 1, "inf", "", 0, std::numeric_limits<double>::infinity(), json()});
    report.slices.push_back({9, 1, "backwards", "sync", 50, 10, json()});
    // A large run: 200k slices on 8 GPUs x 4 streams, 100k flows on 64 channels.
    for (int i = 0; i < 200000; ++i)
    {
        double start = i * 100.0;
        report.slices.push_back({static_cast<uint32_t>(i % 8), static_cast<uint64_t>(i / 8 % 4),
                                 "kernel", "compute", start, start + 90, json()});
    }
    for (int i = 0; i < 100000; ++i)
    {
        report.flowSlices.push_back(
            {static_cast<uint32_t>(i % 64), "link", i * 10.0, i * 10.0 + 5000, 1000, "", "", ""});
    }
    WriteTraceJson(report, (dir.path / "big.json").string());
    json trace = ReadJson(dir.path / "big.json");
    size_t complete = 0;
    for (const auto& e : trace["traceEvents"])
    {
        complete += e["ph"] == "X" ? 1 : 0;
    }
    BOOST_TEST(complete == 300003u);
    auto weird = Events(trace, "X", 9, 0);
    BOOST_REQUIRE(weird.size() == 1u);
    BOOST_TEST(weird[0]["name"] == "quote \" backslash \\ newline \n tab \t");
    BOOST_TEST(weird[0]["args"]["value"] == 42);
    BOOST_TEST(weird[0]["ts"].get<double>() == 0.0); // NaN start -> 0
    BOOST_TEST(weird[0]["dur"].get<double>() == 0.01);
    for (const auto& e : Events(trace, "X", 9, 1))
    {
        BOOST_TEST(e["dur"].get<double>() == 0.0); // infinite or backwards -> empty
    }
    BOOST_TEST(MetadataName(trace, "process_name", 9) == "gpu 9");
    BOOST_TEST(MetadataName(trace, "process_name", 10) == "network");
}

BOOST_AUTO_TEST_CASE(summary_table)
{
    std::ostringstream os;
    PrintSummaryTable(HandBuiltReport(), os);
    std::string text = os.str();
    BOOST_TEST_MESSAGE(text);
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
    {
        lines.push_back(line);
    }
    BOOST_REQUIRE(lines.size() >= 3u);
    // Header and one line per GPU, columns aligned.
    BOOST_TEST(lines[0].find("gpu") == 0u);
    BOOST_TEST(lines[0].find("compute") != std::string::npos);
    BOOST_TEST(lines[0].find("pricing") != std::string::npos);
    auto has = [](const std::string& line, const std::string& what)
    {
        BOOST_TEST_CONTEXT(line)
        {
            BOOST_TEST(line.find(what) != std::string::npos, what);
        }
    };
    has(lines[1], "node0/gpu0");
    has(lines[1], "rank0");
    has(lines[1], "10.000 ms");
    has(lines[1], "  60.0%  25.0%  15.0%  ");
    has(lines[1], "12.00 / 80.00 GiB");
    has(lines[1], "profile 0% model 80% roofline 20%");
    has(lines[2], "node0/gpu1");
    has(lines[2], "8.000 ms");
    has(lines[2], "  25.0%  12.5%  62.5%  ");
    has(lines[2], " 0.50 / 80.00 GiB");
    has(lines[2], "profile 25% model 75%");
    BOOST_TEST(lines[1].find("pricing") == std::string::npos);
    // Same column positions on both GPU lines.
    BOOST_TEST(lines[1].find("ms") == lines[2].find("ms"));
    BOOST_TEST(lines[1].find("GiB") == lines[2].find("GiB"));

    has(text, "\nwall time             2.000 s\n");
    has(text, "\nvirtual end           10.000 ms\n");
    has(text, "\nvirtual/wall          0.005\n");
    has(text, "\nrecords ingested      12345\n");
    has(text, "\nflows                 678\n");
    has(text, "\ncausality violations  2 (total 1.500 us, max 1.000 us)\n");
    has(text, "\nlate local records    7 (kernels and copies: exact)\n");
    BOOST_TEST(lines.back() == "PARTIAL: rank1 exited with status 1");
}

BOOST_AUTO_TEST_CASE(summary_table_edge_cases)
{
    RunReport report;
    GpuReport gpu;
    gpu.gpu = 3;
    gpu.name = "node0/gpu3";
    gpu.process = "rank3";
    report.gpus.push_back(gpu); // nothing ran: no percentages, no pricing
    std::ostringstream os;
    PrintSummaryTable(report, os);
    std::string text = os.str();
    BOOST_TEST_MESSAGE(text);
    std::istringstream in(text);
    std::string header, line;
    std::getline(in, header);
    std::getline(in, line);
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;)
    {
        tokens.push_back(w);
    }
    BOOST_TEST((tokens == std::vector<std::string>{"3", "node0/gpu3", "rank3", "0.000", "ms", "-",
                                                   "-", "-", "0.00", "GiB", "-"}));
    BOOST_TEST(text.find("virtual/wall          -\n") != std::string::npos);
    BOOST_TEST(text.find("causality violations  0\n") != std::string::npos);
    BOOST_TEST(text.find("PARTIAL") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(progress_line)
{
    BOOST_TEST(ProgressLine(12.345e6, 3.2, 14, 2, 16) ==
               "[eidolon] virtual 12.345 ms | wall 3.2 s | ranks 14 running, 2 blocked / 16");
    BOOST_TEST(ProgressLine(0, 0, 0, 0, 0) ==
               "[eidolon] virtual 0.000 ms | wall 0.0 s | ranks 0 running, 0 blocked / 0");
    BOOST_TEST(ProgressLine(12.5e9, 61.24, 1, 7, 8) ==
               "[eidolon] virtual 12.500 s | wall 61.2 s | ranks 1 running, 7 blocked / 8");
}

BOOST_AUTO_TEST_CASE(format_ns_and_pricing_shares)
{
    BOOST_TEST(FormatNs(850) == "850 ns");
    BOOST_TEST(FormatNs(1500) == "1.500 us");
    BOOST_TEST(FormatNs(12.345e6) == "12.345 ms");
    BOOST_TEST(FormatNs(3.2e9) == "3.200 s");
    // By time when any time was priced, by ops otherwise.
    auto byTime = PricingShares({{"a", 10, 1}, {"b", 0, 3}});
    BOOST_TEST(byTime[0] == 0.25);
    BOOST_TEST(byTime[1] == 0.75);
    auto byOps = PricingShares({{"a", 1, 0}, {"b", 3, 0}});
    BOOST_TEST(byOps[0] == 0.25);
    auto none = PricingShares({{"a", 0, 0}});
    BOOST_TEST(none[0] == 0.0);
}
