#include "host-spec.h"

#include "spec-fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

namespace eidolon::spec
{
namespace
{

constexpr std::array<const char*, kHostCallCount> kKeys = {
    "cudaLaunchKernel",
    "cudaLaunchKernel.legacy_stream",
    "cudaLaunchHostFunc",
    "cudaGraphLaunch",
    "cudaMemcpyAsync.pinned",
    "cudaMemcpyAsync.pageable",
    "cudaMemcpyAsync.device",
    "cudaMemcpy.return",
    "cudaMemsetAsync",
    "cudaEventRecord",
    "cudaEventRecord.disable_timing",
    "cudaEventQuery",
    "cudaEventSynchronize",
    "cudaStreamWaitEvent",
    "cudaStreamQuery",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaMalloc",
    "cudaFree",
    "cudaMallocHost",
    "cudaFreeHost",
    "cudaMallocAsync",
    "cudaFreeAsync",
    "cudaStreamCreate",
    "cudaStreamDestroy",
    "cudaEventCreate",
    "cudaEventDestroy",
    "cudaGetDevice",
    "cudaSetDevice",
    "cudaGetLastError",
    "cublasGemmEx",
    "cublasSgemm",
    "cublasGemmStridedBatchedEx",
    "cublasLtMatmul",
    "cublasLtMatmulAlgoGetHeuristic",
    "ncclEnqueue",
    "ncclGroupEnd",
    "ncclCommInit",
    "clock_gettime",
};

// Microseconds as whole nanoseconds (the figures are medians good to tens of ns): every host cost,
// and so every host time, is an exact integer in a double, sums of costs are exact (10,000
// launches cost exactly 10,000 x 4019 ns), and no sub-ns remainder can round differently in the
// simulator depending on the order in which ranks' records arrive.
double
Ns(double us)
{
    return std::round(us * 1e3);
}

// A figure of a by_bytes list, [bytes, us]: the same number syntax as every field's.
double
PointFigure(const Fields& cost, const YAML::Node& figure)
{
    if (!figure.IsScalar())
    {
        cost.FailAt(figure, "by_bytes", "expected a number, not a list or mapping");
    }
    double value = 0;
    try
    {
        value = ParseNumber(figure.Scalar());
    }
    catch (const SpecError& e)
    {
        cost.FailAt(figure, "by_bytes", e.what());
    }
    if (value < 0)
    {
        cost.FailAt(figure, "by_bytes", "must not be negative");
    }
    return value;
}

// The cost of calls[key]: {us: N, source} or {by_bytes: [[B, us], ...], source}.
HostCallCost
ReadCost(const Fields& calls, const char* key)
{
    if (!calls.Get(key).IsMap())
    {
        calls.Fail(key, "expected {us: N, source: ...} or {by_bytes: [[B, us], ...], source: ...}");
    }
    Fields f = calls.Child(key);
    f.Allow({"us", "by_bytes", "source"});
    HostCallCost cost;
    cost.source = f.String("source"); // every figure needs its source
    if (f.Has("us") && f.Has("by_bytes"))
    {
        f.Fail("us", "give either us or by_bytes, not both");
    }
    if (f.Has("us"))
    {
        cost.points.emplace_back(0.0, Ns(f.NonNegative("us")));
        return cost;
    }
    YAML::Node points = f.Get("by_bytes");
    if (!points.IsSequence() || points.size() == 0)
    {
        f.Fail("by_bytes", "expected a list of [bytes, us] pairs");
    }
    for (const YAML::Node& point : points)
    {
        if (!point.IsSequence() || point.size() != 2)
        {
            f.FailAt(point, "by_bytes", "expected a [bytes, us] pair");
        }
        double bytes = PointFigure(f, point[0]);
        double ns = Ns(PointFigure(f, point[1]));
        if (!cost.points.empty() && bytes <= cost.points.back().first)
        {
            f.FailAt(point, "by_bytes", "sizes must increase");
        }
        cost.points.emplace_back(bytes, ns);
    }
    return cost;
}

} // namespace

const char*
HostCallKey(HostCall call)
{
    return kKeys[static_cast<size_t>(call)];
}

double
HostCallCost::NsFor(uint64_t bytes) const
{
    if (points.empty())
    {
        return 0;
    }
    double x = static_cast<double>(bytes);
    if (points.size() == 1 || x <= points.front().first)
    {
        return points.front().second;
    }
    size_t i = 1;
    while (i + 1 < points.size() && x > points[i].first)
    {
        ++i;
    }
    const auto& [x0, y0] = points[i - 1];
    const auto& [x1, y1] = points[i];
    if (x > x1 && y1 <= y0)
    {
        return y1; // past the last size a cost never falls: it stays at the last figure
    }
    return std::round(y0 + (y1 - y0) * (x - x0) / (x1 - x0)); // whole ns, as every figure
}

std::string
CpuVendorOf(const std::string& cpu)
{
    std::string text;
    for (char c : cpu)
    {
        text += char(std::tolower(static_cast<unsigned char>(c)));
    }
    // Whole words only: "arm" is not a word of "Emerald Rapids" or "Sapphire".
    std::vector<std::string> words;
    std::string word;
    for (char c : text + " ")
    {
        if (std::isalnum(static_cast<unsigned char>(c)))
        {
            word += c;
        }
        else if (!word.empty())
        {
            words.push_back(word);
            word.clear();
        }
    }
    auto names = [&words](std::initializer_list<const char*> keys)
    {
        return std::any_of(words.begin(), words.end(),
                           [&keys](const std::string& w)
                           { return std::find(keys.begin(), keys.end(), w) != keys.end(); });
    };
    if (names({"amd", "epyc"}))
    {
        return "amd";
    }
    if (names({"intel", "xeon"}))
    {
        return "intel";
    }
    if (names({"zhaoxin"}))
    {
        return "zhaoxin";
    }
    if (names({"arm", "aarch64", "grace", "neoverse", "graviton", "ampere"}))
    {
        return "arm";
    }
    if (names({"power", "power8", "power9", "power10", "power11", "ppc64le"}))
    {
        return "power";
    }
    return "";
}

namespace
{
HostSpec ParseHostSpecAt(const std::string& text, const std::string& path, int depth);

// The description in `file`, which must call itself `name` (its file name); `depth` counts the
// costs_from steps that led here.
HostSpec
ReadNamedHostSpec(const std::filesystem::path& file, const std::string& name, int depth)
{
    HostSpec spec = ParseHostSpecAt(ReadFile(file.string()), file.string(), depth);
    if (spec.name != name)
    {
        throw SpecError(file.string() + ": field 'name': '" + spec.name +
                        "' does not match the file name '" + name + "'");
    }
    return spec;
}
} // namespace

HostSpec
ParseHostSpec(const std::string& text, const std::string& path)
{
    return ParseHostSpecAt(text, path, 0);
}

namespace
{
HostSpec
ParseHostSpecAt(const std::string& text, const std::string& path, int depth)
{
    Fields root(path, LoadYaml(text, path), "host description");
    root.Allow({"name", "description", "cpu", "cpu_vendor", "software", "cpu_benchmark", "calls",
                "costs_from"});
    HostSpec spec;
    spec.name = root.Scalar("name");
    spec.description = root.Has("description") ? root.Scalar("description") : "";
    spec.cpu = root.Scalar("cpu");
    static const std::vector<std::string> kVendors = {"intel", "amd", "zhaoxin", "arm", "power"};
    if (root.Has("cpu_vendor"))
    {
        spec.cpuVendor = root.Scalar("cpu_vendor");
        if (std::find(kVendors.begin(), kVendors.end(), spec.cpuVendor) == kVendors.end())
        {
            root.Fail("cpu_vendor",
                      "'" + spec.cpuVendor + "' is not one of intel, amd, zhaoxin, arm, power");
        }
    }
    else
    {
        spec.cpuVendor = CpuVendorOf(spec.cpu);
        if (spec.cpuVendor.empty())
        {
            root.Fail("cpu_vendor", "missing, and 'cpu' (\"" + spec.cpu +
                                        "\") names no vendor: give one of intel, amd, zhaoxin, "
                                        "arm, power");
        }
    }
    spec.software = root.Has("software") ? root.Scalar("software") : "";

    if (root.Has("costs_from"))
    {
        // A host measured only in what NCCL reads of it (its CPU class): its call costs and CPU
        // benchmark are another description's, named, from the same directory.
        spec.costsFrom = root.Scalar("costs_from");
        for (const char* own : {"cpu_benchmark", "calls"})
        {
            if (root.Has(own))
            {
                root.Fail(own, "given together with costs_from: a file takes its costs from one "
                               "place");
            }
        }
        if (spec.costsFrom.empty() || spec.costsFrom.find('/') != std::string::npos)
        {
            root.Fail("costs_from",
                      "'" + spec.costsFrom + "' is not the name of a host description (no path)");
        }
        if (depth >= 4 || spec.costsFrom == spec.name)
        {
            root.Fail("costs_from", "'" + spec.costsFrom + "' leads back to itself");
        }
        const std::filesystem::path file =
            std::filesystem::path(path).parent_path() / (spec.costsFrom + ".yaml");
        std::error_code error;
        if (!std::filesystem::is_regular_file(file, error))
        {
            const std::string beside = file.string();
            root.Fail("costs_from", "no host description '" + spec.costsFrom +
                                        "' beside this file (" + beside + ")");
        }
        const HostSpec from = ReadNamedHostSpec(file, spec.costsFrom, depth + 1);
        spec.cpuBenchmark = from.cpuBenchmark;
        spec.calls = from.calls;
        return spec;
    }

    Fields bench = root.Child("cpu_benchmark");
    bench.Allow({"alu_ms", "sort_ms", "map_ms", "source"});
    spec.cpuBenchmark.aluNs = bench.Positive("alu_ms") * 1e6;
    spec.cpuBenchmark.sortNs = bench.Positive("sort_ms") * 1e6;
    spec.cpuBenchmark.mapNs = bench.Positive("map_ms") * 1e6;
    spec.cpuBenchmark.source = bench.Scalar("source");

    Fields calls = root.Child("calls");
    // Not Allow(): the 39 call names would bury the one misspelt.
    for (const auto& item : root.Get("calls"))
    {
        std::string key = item.first.Scalar();
        if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
        {
            calls.FailAt(item.first, key.c_str(), "unknown field");
        }
    }
    for (size_t i = 0; i < kHostCallCount; ++i)
    {
        if (!calls.Has(kKeys[i]))
        {
            calls.Fail(kKeys[i], "missing (every call needs a cost and its source)");
        }
        spec.calls[i] = ReadCost(calls, kKeys[i]);
    }
    return spec;
}
} // namespace

HostSpec
ReadHostSpec(const std::string& path)
{
    return ParseHostSpec(ReadFile(path), path);
}

HostSpec
FindHostSpec(const std::string& name, const std::vector<std::string>& dirs)
{
    std::string searched;
    for (const std::string& dir : dirs)
    {
        std::filesystem::path file = std::filesystem::path(dir) / (name + ".yaml");
        std::error_code error;
        if (std::filesystem::is_regular_file(file, error))
        {
            return ReadNamedHostSpec(file, name, 0);
        }
        searched += (searched.empty() ? "" : ", ") + dir;
    }
    throw SpecError("no host description '" + name + "' (looked for " + name +
                    ".yaml in: " + (searched.empty() ? "no directory" : searched) + ")");
}

} // namespace eidolon::spec
