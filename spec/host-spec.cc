#include "host-spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

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

// Reports bad input as "file:line: field 'x': why".
class Reader
{
public:
    explicit Reader(const std::string& path)
        : m_path(path)
    {
    }

    [[noreturn]] void Fail(const YAML::Node& node, const std::string& field,
                           const std::string& why) const
    {
        std::string where = m_path;
        if (node.IsDefined() && node.Mark().line >= 0)
        {
            where += ":" + std::to_string(node.Mark().line + 1);
        }
        throw std::runtime_error(where + ": field '" + field + "': " + why);
    }

    YAML::Node Required(const YAML::Node& map, const std::string& field,
                        const std::string& prefix) const
    {
        YAML::Node node = map[field];
        if (!node)
        {
            Fail(map, prefix + field, "missing");
        }
        return node;
    }

    std::string Text(const YAML::Node& map, const std::string& field, const std::string& prefix,
                     bool required) const
    {
        YAML::Node node = map[field];
        if (!node)
        {
            if (required)
            {
                Fail(map, prefix + field, "missing");
            }
            return "";
        }
        if (!node.IsScalar())
        {
            Fail(node, prefix + field, "expected text");
        }
        return node.as<std::string>();
    }

    double NonNegative(const YAML::Node& node, const std::string& field) const
    {
        double value = 0;
        try
        {
            value = node.as<double>();
        }
        catch (const YAML::Exception&)
        {
            Fail(node, field, "not a number");
        }
        if (!(value >= 0))
        {
            Fail(node, field, "must not be negative");
        }
        return value;
    }

    void OnlyKeys(const YAML::Node& map, const std::set<std::string>& allowed,
                  const std::string& prefix) const
    {
        for (const auto& item : map)
        {
            std::string key = item.first.as<std::string>();
            if (!allowed.count(key))
            {
                Fail(item.first, prefix + key, "unknown field");
            }
        }
    }

    HostCallCost Cost(const YAML::Node& node, const std::string& field) const
    {
        if (!node.IsMap())
        {
            Fail(node, field,
                 "expected {us: N, source: ...} or {by_bytes: [[B, us], ...], source}");
        }
        OnlyKeys(node, {"us", "by_bytes", "source"}, field + ".");
        HostCallCost cost;
        cost.source = Text(node, "source", field + ".", true);
        if (cost.source.empty())
        {
            Fail(node, field + ".source", "every figure needs its source");
        }
        if (node["us"] && node["by_bytes"])
        {
            Fail(node, field, "give either us or by_bytes, not both");
        }
        if (node["us"])
        {
            cost.points.emplace_back(0.0, Ns(NonNegative(node["us"], field + ".us")));
            return cost;
        }
        YAML::Node points = Required(node, "by_bytes", field + ".");
        if (!points.IsSequence() || points.size() == 0)
        {
            Fail(points, field + ".by_bytes", "expected a list of [bytes, us] pairs");
        }
        for (const YAML::Node& point : points)
        {
            if (!point.IsSequence() || point.size() != 2)
            {
                Fail(point, field + ".by_bytes", "expected a [bytes, us] pair");
            }
            double bytes = NonNegative(point[0], field + ".by_bytes");
            double ns = Ns(NonNegative(point[1], field + ".by_bytes"));
            if (!cost.points.empty() && bytes <= cost.points.back().first)
            {
                Fail(point, field + ".by_bytes", "sizes must increase");
            }
            cost.points.emplace_back(bytes, ns);
        }
        return cost;
    }

private:
    const std::string& m_path;
};

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

HostSpec
ParseHostSpec(const std::string& text, const std::string& path)
{
    YAML::Node root;
    try
    {
        root = YAML::Load(text);
    }
    catch (const YAML::ParserException& e)
    {
        throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) +
                                 ": not valid YAML: " + e.msg);
    }
    Reader reader(path);
    if (!root.IsMap())
    {
        throw std::runtime_error(path + ": expected a host description (a map of fields)");
    }
    reader.OnlyKeys(root, {"name", "description", "cpu", "software", "cpu_benchmark", "calls"}, "");
    HostSpec spec;
    spec.name = reader.Text(root, "name", "", true);
    spec.description = reader.Text(root, "description", "", false);
    spec.cpu = reader.Text(root, "cpu", "", true);
    spec.software = reader.Text(root, "software", "", false);

    YAML::Node bench = reader.Required(root, "cpu_benchmark", "");
    reader.OnlyKeys(bench, {"alu_ms", "sort_ms", "map_ms", "source"}, "cpu_benchmark.");
    auto benchMs = [&](const char* field)
    {
        std::string name = std::string("cpu_benchmark.") + field;
        double ms = reader.NonNegative(reader.Required(bench, field, "cpu_benchmark."), name);
        if (ms <= 0)
        {
            reader.Fail(bench[field], name, "must be positive");
        }
        return ms * 1e6;
    };
    spec.cpuBenchmark.aluNs = benchMs("alu_ms");
    spec.cpuBenchmark.sortNs = benchMs("sort_ms");
    spec.cpuBenchmark.mapNs = benchMs("map_ms");
    spec.cpuBenchmark.source = reader.Text(bench, "source", "cpu_benchmark.", true);

    YAML::Node calls = reader.Required(root, "calls", "");
    if (!calls.IsMap())
    {
        reader.Fail(calls, "calls", "expected a map from call to cost");
    }
    reader.OnlyKeys(calls, std::set<std::string>(kKeys.begin(), kKeys.end()), "calls.");
    for (size_t i = 0; i < kHostCallCount; ++i)
    {
        std::string field = std::string("calls.") + kKeys[i];
        YAML::Node node = calls[kKeys[i]];
        if (!node)
        {
            reader.Fail(calls, field, "missing (every call needs a cost and its source)");
        }
        spec.calls[i] = reader.Cost(node, field);
    }
    return spec;
}

HostSpec
ReadHostSpec(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error(path + ": cannot open host description");
    }
    std::stringstream text;
    text << in.rdbuf();
    return ParseHostSpec(text.str(), path);
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
            HostSpec spec = ReadHostSpec(file.string());
            if (spec.name != name)
            {
                throw std::runtime_error(file.string() + ": field 'name': '" + spec.name +
                                         "' does not match the file name '" + name + "'");
            }
            return spec;
        }
        searched += (searched.empty() ? "" : ", ") + dir;
    }
    throw std::runtime_error("no host description '" + name + "' (looked for " + name +
                             ".yaml in: " + (searched.empty() ? "no directory" : searched) + ")");
}

} // namespace eidolon::spec
