// What `eidolon run` reports: summary.json, trace.json, the summary table and the progress line.
//
// summary.json:
//   { "topology", "model", "launch": strings, "partial": bool, "error": string ("" unless partial),
//     "wall_seconds", "virtual_end_ns", "virtual_wall_ratio" (virtual s per wall s),
//     "stats_from_ns" (compute_ns, comm_ns and idle_ns count from there),
//     "records_ingested", "flows",
//     "causality_violations": { "count", "total_ns", "max_ns", "late_flows_replayed",
//                               "late_local_records" },
//     "gpus": [ { "gpu", "name", "process", "end_ns", "compute_ns", "comm_ns", "idle_ns",
//                 "peak_bytes", "capacity_bytes",
//                 "host_data_peak_bytes", "host_data_dropped_bytes" (gpu-emu/README.md
//                 "Device memory and data"),
//                 "pricing": [ { "provider", "ops", "ns", "share" (of priced time) } ],
//                 "communication": { "<NCCL call>": { "calls", "bytes" } } } ],
//     (calls issued by the GPU's rank per kind, AllReduce ... Send, Recv; bytes as nccl-tests
//     count them: the whole buffer for all-gather and reduce-scatter, the message for send/recv)
//     "processes": [ { "name", "pid", "exited", "signaled", "code" } ] (by name),
//     "links": [ { "name", "bandwidth_bytes_per_s", "bytes", "flows", "busy_ns" } ] (each direction
//     of a link that carried a flow, by channel: bytes and flows from stats_from_ns on, busy_ns the
//     time at least one flow crossed it),
//     "notes": [ strings ] (what trace.json left out) }
#include "run-report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

namespace eidolon::sim
{
namespace
{
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// A JSON number; JSON has no NaN or infinity, so those become 0.
std::string
Num(double value)
{
    return std::isfinite(value) ? fmt::format("{}", value) : "0";
}

/// [start, end] made safe to sort and print: a non-finite start becomes 0, an end that is not
/// finite or precedes the start becomes the start.
std::pair<double, double>
Span(double start, double end)
{
    start = std::isfinite(start) ? start : 0.0;
    end = std::isfinite(end) && end >= start ? end : start;
    return {start, end};
}

std::string
Str(const std::string& text)
{
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string
Dump(const nlohmann::json& value)
{
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Whether `a` sorts before `b` with their runs of digits compared as numbers.
bool
NaturalLess(const std::string& a, const std::string& b)
{
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size())
    {
        if (digit(a[i]) && digit(b[j]))
        {
            size_t iEnd = i, jEnd = j;
            while (iEnd < a.size() && digit(a[iEnd]))
                ++iEnd;
            while (jEnd < b.size() && digit(b[jEnd]))
                ++jEnd;
            // Leading zeros dropped: the longer number is the larger, else they compare as text.
            while (i + 1 < iEnd && a[i] == '0')
                ++i;
            while (j + 1 < jEnd && b[j] == '0')
                ++j;
            const std::string x = a.substr(i, iEnd - i), y = b.substr(j, jEnd - j);
            if (x.size() != y.size())
                return x.size() < y.size();
            if (x != y)
                return x < y;
            i = iEnd;
            j = jEnd;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

std::string
FormatBytes(uint64_t bytes)
{
    if (bytes < 1024)
    {
        return fmt::format("{} B", bytes);
    }
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes) / 1024.0;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units))
    {
        value /= 1024.0;
        ++unit;
    }
    return fmt::format("{:.2f} {}", value, units[unit]);
}

/// Writes to PATH.tmp, then renames it to PATH.
class AtomicFile
{
public:
    explicit AtomicFile(const std::string& path)
        : m_path(path)
        , m_tmp(path + ".tmp")
        , m_out(m_tmp, std::ios::out | std::ios::trunc)
    {
        if (!m_out)
        {
            throw std::runtime_error(m_path + ": cannot open for writing");
        }
    }
    ~AtomicFile()
    {
        if (!m_done)
        {
            m_out.close();
            std::remove(m_tmp.c_str());
        }
    }
    std::ostream& Out() { return m_out; }
    void Commit()
    {
        m_out.flush();
        m_out.close();
        if (!m_out || std::rename(m_tmp.c_str(), m_path.c_str()) != 0)
        {
            std::remove(m_tmp.c_str());
            m_done = true;
            throw std::runtime_error(m_path + ": write failed");
        }
        m_done = true;
    }

private:
    std::string m_path;
    std::string m_tmp;
    std::ofstream m_out;
    bool m_done = false;
};

/// Writes the events of trace.json, comma-separated.
class EventWriter
{
public:
    explicit EventWriter(std::ostream& out)
        : m_out(out)
    {
    }
    void Write(const std::string& event)
    {
        m_out << (m_first ? "\n" : ",\n") << event;
        m_first = false;
    }
    void Metadata(const char* what, int64_t pid, const int64_t* tid, const std::string& key,
                  const std::string& value)
    {
        Write(fmt::format(R"({{"ph":"M","name":"{}","pid":{}{},"args":{{"{}":{}}}}})", what, pid,
                          tid ? fmt::format(R"(,"tid":{})", *tid) : "", key, value));
    }

private:
    std::ostream& m_out;
    bool m_first = true;
};

/// Assigns each interval a lane so that intervals in one lane do not overlap (touching is
/// fine): lane 0 first, the first lane whose last interval has ended. Returns lanes by index.
std::vector<size_t>
PackLanes(const std::vector<std::pair<double, double>>& intervals)
{
    std::vector<size_t> order(intervals.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return intervals[a].first < intervals[b].first; });
    std::vector<size_t> lane(intervals.size(), 0);
    std::vector<double> laneEnd;
    for (size_t i : order)
    {
        size_t chosen = laneEnd.size();
        for (size_t l = 0; l < laneEnd.size(); ++l)
        {
            if (laneEnd[l] <= intervals[i].first)
            {
                chosen = l;
                break;
            }
        }
        if (chosen == laneEnd.size())
        {
            laneEnd.push_back(intervals[i].second);
        }
        else
        {
            laneEnd[chosen] = intervals[i].second;
        }
        lane[i] = chosen;
    }
    return lane;
}

// Lanes for the slices `indices` of one track (PackLanes on their spans), written into
// lane[index]; returns how many lanes the track needs.
template<typename Slice>
size_t
AssignLanes(const std::vector<Slice>& slices, const std::vector<size_t>& indices,
            std::vector<size_t>& lane)
{
    std::vector<std::pair<double, double>> intervals;
    for (size_t i : indices)
    {
        intervals.push_back(Span(slices[i].startNs, slices[i].endNs));
    }
    auto lanes = PackLanes(intervals);
    size_t count = 1;
    for (size_t k = 0; k < indices.size(); ++k)
    {
        lane[indices[k]] = lanes[k];
        count = std::max(count, lanes[k] + 1);
    }
    return count;
}

/// Tracks of one trace process: lane 0 of track key k is tid k; extra lanes get tids past the
/// highest key, with sort indices that keep them next to their lane 0.
struct TrackLayout
{
    // (key, lane) -> tid, in sort order
    std::map<std::pair<uint64_t, size_t>, int64_t> tids;
};

TrackLayout
LayOut(const std::map<uint64_t, size_t>& lanesPerKey)
{
    TrackLayout layout;
    int64_t next = lanesPerKey.empty() ? 0 : static_cast<int64_t>(lanesPerKey.rbegin()->first) + 1;
    for (const auto& [key, lanes] : lanesPerKey)
    {
        for (size_t lane = 0; lane < lanes; ++lane)
        {
            layout.tids[{key, lane}] = lane == 0 ? static_cast<int64_t>(key) : next++;
        }
    }
    return layout;
}

std::string
LaneName(const std::string& base, size_t lane)
{
    return lane == 0 ? base : fmt::format("{} #{}", base, lane + 1);
}

/// Left- or right-aligned columns separated by two spaces.
void
PrintColumns(std::ostream& os, const std::vector<std::vector<std::string>>& rows,
             const std::vector<bool>& rightAligned)
{
    std::vector<size_t> width(rightAligned.size(), 0);
    for (const auto& row : rows)
    {
        for (size_t c = 0; c < row.size() && c < width.size(); ++c)
        {
            width[c] = std::max(width[c], row[c].size());
        }
    }
    for (const auto& row : rows)
    {
        std::string line;
        for (size_t c = 0; c < row.size() && c < width.size(); ++c)
        {
            if (c > 0)
            {
                line += "  ";
            }
            bool last = c + 1 == row.size();
            if (rightAligned[c])
            {
                line += fmt::format("{:>{}}", row[c], width[c]);
            }
            else
            {
                line += last ? row[c] : fmt::format("{:<{}}", row[c], width[c]);
            }
        }
        os << line << '\n';
    }
}

std::string
Percent(double part, double whole)
{
    if (!(whole > 0) || !std::isfinite(part))
    {
        return "-";
    }
    return fmt::format("{:.1f}%", 100.0 * part / whole);
}
} // namespace

double
VirtualWallRatio(const RunReport& report)
{
    return report.wallSeconds > 0 ? report.virtualEndNs * 1e-9 / report.wallSeconds : 0.0;
}

std::vector<double>
PricingShares(const std::vector<PricingCoverage>& pricing)
{
    double totalNs = 0;
    double totalOps = 0;
    for (const auto& p : pricing)
    {
        totalNs += p.ns;
        totalOps += static_cast<double>(p.ops);
    }
    std::vector<double> shares;
    for (const auto& p : pricing)
    {
        if (totalNs > 0)
        {
            shares.push_back(p.ns / totalNs);
        }
        else if (totalOps > 0)
        {
            shares.push_back(static_cast<double>(p.ops) / totalOps);
        }
        else
        {
            shares.push_back(0.0);
        }
    }
    return shares;
}

void
WriteSummaryJson(const RunReport& report, const std::string& path)
{
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& gpu : report.gpus)
    {
        nlohmann::json pricing = nlohmann::json::array();
        auto shares = PricingShares(gpu.pricing);
        for (size_t i = 0; i < gpu.pricing.size(); ++i)
        {
            pricing.push_back({{"provider", gpu.pricing[i].provider},
                               {"ops", gpu.pricing[i].ops},
                               {"ns", gpu.pricing[i].ns},
                               {"share", shares[i]}});
        }
        nlohmann::json communication = nlohmann::json::object();
        for (const auto& c : gpu.communication)
        {
            communication[c.call] = {{"calls", c.calls}, {"bytes", c.bytes}};
        }
        gpus.push_back({{"gpu", gpu.gpu},
                        {"name", gpu.name},
                        {"process", gpu.process},
                        {"end_ns", gpu.endNs},
                        {"compute_ns", gpu.computeNs},
                        {"comm_ns", gpu.commNs},
                        {"idle_ns", gpu.idleNs},
                        {"peak_bytes", gpu.peakBytes},
                        {"capacity_bytes", gpu.capacityBytes},
                        {"host_data_peak_bytes", gpu.hostDataPeakBytes},
                        {"host_data_dropped_bytes", gpu.hostDataDroppedBytes},
                        {"pricing", pricing},
                        {"communication", communication}});
    }
    nlohmann::json processes = nlohmann::json::array();
    // By name, numbers by value (rank2 before rank10), not in the order they ended (which
    // depends on the machine's scheduling).
    std::vector<ProcessReport> byName = report.processes;
    std::stable_sort(byName.begin(), byName.end(),
                     [](const ProcessReport& a, const ProcessReport& b)
                     { return NaturalLess(a.name, b.name); });
    for (const auto& p : byName)
    {
        processes.push_back({{"name", p.name},
                             {"pid", p.pid},
                             {"exited", p.exited},
                             {"signaled", p.signaled},
                             {"code", p.code}});
    }
    nlohmann::json links = nlohmann::json::array();
    for (const LinkReport& link : report.links)
    {
        links.push_back({{"name", link.name},
                         {"bandwidth_bytes_per_s", link.bandwidthBytesPerS},
                         {"bytes", link.bytes},
                         {"flows", link.flows},
                         {"busy_ns", link.busyNs}});
    }
    nlohmann::json summary = {
        {"topology", report.topology},
        {"model", report.model},
        {"launch", report.launch},
        {"partial", report.partial},
        {"error", report.error},
        {"wall_seconds", report.wallSeconds},
        {"virtual_end_ns", report.virtualEndNs},
        {"virtual_wall_ratio", VirtualWallRatio(report)},
        {"stats_from_ns", report.statsFromNs},
        {"records_ingested", report.recordsIngested},
        {"flows", report.flows},
        {"rate_solves", {{"count", report.rateSolves}, {"flows", report.flowsSolved}}},
        {"causality_violations",
         {{"count", report.causalityViolations},
          {"total_ns", report.causalityViolationNs},
          {"max_ns", report.maxCausalityViolationNs},
          {"late_flows_replayed", report.lateFlowsReplayed},
          {"late_local_records", report.lateLocalRecords}}},
        {"gpus", gpus},
        {"processes", processes},
        {"links", links},
        {"notes", report.notes},
    };
    AtomicFile file(path);
    file.Out() << summary.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    file.Commit();
}

void
WriteTraceJson(const RunReport& report, const std::string& path)
{
    AtomicFile file(path);
    std::ostream& out = file.Out();
    out << R"({"displayTimeUnit":"ns","traceEvents":[)";
    EventWriter events(out);

    // ---- GPUs: one trace process each, one track per stream (plus overflow lanes).
    std::map<uint32_t, std::string> gpuNames;
    for (const auto& gpu : report.gpus)
    {
        gpuNames[gpu.gpu] = gpu.name.empty() ? fmt::format("gpu {}", gpu.gpu) : gpu.name;
    }
    std::map<uint32_t, std::map<uint64_t, std::vector<size_t>>> slicesByTrack;
    for (size_t i = 0; i < report.slices.size(); ++i)
    {
        const auto& s = report.slices[i];
        slicesByTrack[s.gpu][s.stream].push_back(i);
        gpuNames.emplace(s.gpu, fmt::format("gpu {}", s.gpu));
    }
    for (const auto& [gpu, name] : gpuNames)
    {
        events.Metadata("process_name", gpu, nullptr, "name", Str(name));
        events.Metadata("process_sort_index", gpu, nullptr, "sort_index", std::to_string(gpu));
    }
    std::vector<size_t> sliceLane(report.slices.size(), 0);
    for (const auto& [gpu, streams] : slicesByTrack)
    {
        std::map<uint64_t, size_t> lanesPerStream;
        for (const auto& [stream, indices] : streams)
        {
            lanesPerStream[stream] = AssignLanes(report.slices, indices, sliceLane);
        }
        auto layout = LayOut(lanesPerStream);
        int64_t sortIndex = 0;
        for (const auto& [key, tid] : layout.tids)
        {
            events.Metadata("thread_name", gpu, &tid, "name",
                            Str(LaneName(fmt::format("stream {}", key.first), key.second)));
            events.Metadata("thread_sort_index", gpu, &tid, "sort_index",
                            std::to_string(sortIndex++));
        }
        for (const auto& [stream, indices] : streams)
        {
            for (size_t i : indices)
            {
                const auto& s = report.slices[i];
                int64_t tid = layout.tids.at({stream, sliceLane[i]});
                auto [start, end] = Span(s.startNs, s.endNs);
                std::string args;
                if (s.args.is_object())
                {
                    args = "," + std::string(R"("args":)") + Dump(s.args);
                }
                else if (!s.args.is_null())
                {
                    args =
                        "," + std::string(R"("args":)") + Dump(nlohmann::json{{"value", s.args}});
                }
                events.Write(fmt::format(
                    R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{}{}}})",
                    Str(s.name), Str(s.category.empty() ? "compute" : s.category), s.gpu, tid,
                    Num(start / 1000.0), Num((end - start) / 1000.0), args));
            }
        }
    }

    // ---- The network: one trace process, one track per channel (plus overflow lanes).
    if (!report.flowSlices.empty())
    {
        int64_t networkPid =
            gpuNames.empty() ? 0 : static_cast<int64_t>(gpuNames.rbegin()->first) + 1;
        events.Metadata("process_name", networkPid, nullptr, "name", Str("network"));
        events.Metadata("process_sort_index", networkPid, nullptr, "sort_index",
                        std::to_string(networkPid));
        std::map<uint64_t, std::vector<size_t>> byChannel;
        std::map<uint64_t, std::string> channelNames;
        for (size_t i = 0; i < report.flowSlices.size(); ++i)
        {
            const auto& f = report.flowSlices[i];
            byChannel[f.channel].push_back(i);
            if (!f.channelName.empty())
            {
                channelNames.emplace(f.channel, f.channelName);
            }
        }
        std::vector<size_t> flowLane(report.flowSlices.size(), 0);
        std::map<uint64_t, size_t> lanesPerChannel;
        for (const auto& [channel, indices] : byChannel)
        {
            lanesPerChannel[channel] = AssignLanes(report.flowSlices, indices, flowLane);
        }
        auto layout = LayOut(lanesPerChannel);
        int64_t sortIndex = 0;
        for (const auto& [key, tid] : layout.tids)
        {
            auto named = channelNames.find(key.first);
            std::string base =
                named != channelNames.end() ? named->second : fmt::format("channel {}", key.first);
            events.Metadata("thread_name", networkPid, &tid, "name",
                            Str(LaneName(base, key.second)));
            events.Metadata("thread_sort_index", networkPid, &tid, "sort_index",
                            std::to_string(sortIndex++));
        }
        for (const auto& [channel, indices] : byChannel)
        {
            for (size_t i : indices)
            {
                const auto& f = report.flowSlices[i];
                int64_t tid = layout.tids.at({channel, flowLane[i]});
                auto [start, end] = Span(f.startNs, f.endNs);
                double dur = end - start;
                // bytes per ns is GB/s
                double rate = dur > 0 ? static_cast<double>(f.bytes) / dur : 0.0;
                events.Write(fmt::format(
                    R"({{"ph":"X","name":{},"cat":"flow","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"bytes":{},"GB/s":{},"from":{},"to":{}}}}})",
                    Str(f.label.empty() ? FormatBytes(f.bytes) : f.label), networkPid, tid,
                    Num(start / 1000.0), Num(dur / 1000.0), f.bytes, Num(rate), Str(f.from),
                    Str(f.to)));
            }
        }
    }
    out << "\n]}\n";
    file.Commit();
}

void
PrintSummaryTable(const RunReport& report, std::ostream& os)
{
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"gpu", "name", "process", "virtual end", "compute", "comm", "idle",
                    "peak memory", "pricing"});
    auto share = [&report](double ns, const GpuReport& gpu)
    { return Percent(ns, std::max(0.0, gpu.endNs - report.statsFromNs)); };
    for (const auto& gpu : report.gpus)
    {
        std::string memory =
            gpu.capacityBytes > 0
                ? fmt::format("{:.2f} / {:.2f} GiB", gpu.peakBytes / kGiB, gpu.capacityBytes / kGiB)
                : fmt::format("{:.2f} GiB", gpu.peakBytes / kGiB);
        std::string pricing;
        auto shares = PricingShares(gpu.pricing);
        bool any = false;
        for (size_t i = 0; i < gpu.pricing.size(); ++i)
        {
            any = any || gpu.pricing[i].ns > 0 || gpu.pricing[i].ops > 0;
            pricing += fmt::format("{}{} {:.0f}%", pricing.empty() ? "" : " ",
                                   gpu.pricing[i].provider, 100.0 * shares[i]);
        }
        if (!any)
        {
            pricing = "-";
        }
        rows.push_back({std::to_string(gpu.gpu), gpu.name, gpu.process,
                        fmt::format("{:.3f} ms", gpu.endNs / 1e6), share(gpu.computeNs, gpu),
                        share(gpu.commNs, gpu), share(gpu.idleNs, gpu), memory, pricing});
    }
    PrintColumns(os, rows, {true, false, false, true, true, true, true, true, false});

    os << '\n';
    std::vector<std::vector<std::string>> lines;
    lines.push_back({"virtual end", fmt::format("{:.3f} ms", report.virtualEndNs / 1e6)});
    if (report.statsFromNs > 0)
    {
        lines.push_back({"shares from",
                         fmt::format("{:.3f} ms (compute, comm, idle)", report.statsFromNs / 1e6)});
    }
    lines.push_back({"wall time", fmt::format("{:.3f} s", report.wallSeconds)});
    lines.push_back({"virtual/wall", report.wallSeconds > 0
                                         ? fmt::format("{:.3g}", VirtualWallRatio(report))
                                         : std::string("-")});
    lines.push_back({"records ingested", std::to_string(report.recordsIngested)});
    lines.push_back({"flows", std::to_string(report.flows)});
    if (report.rateSolves > 0)
    {
        lines.push_back(
            {"rate solves", fmt::format("{} ({:.3g} flows each)", report.rateSolves,
                                        double(report.flowsSolved) / double(report.rateSolves))});
    }
    lines.push_back({"causality violations",
                     report.causalityViolations == 0
                         ? std::string("0")
                         : fmt::format("{} (total {}, max {})", report.causalityViolations,
                                       FormatNs(report.causalityViolationNs),
                                       FormatNs(report.maxCausalityViolationNs))});
    if (report.lateFlowsReplayed > 0)
    {
        lines.push_back({"late flows replayed", std::to_string(report.lateFlowsReplayed)});
    }
    if (report.lateLocalRecords > 0)
    {
        lines.push_back({"late local records",
                         std::to_string(report.lateLocalRecords) + " (kernels and copies: exact)"});
    }
    // The link that was busy longest: where a researcher looks first (summary.json has them all).
    const LinkReport* busiest = nullptr;
    for (const LinkReport& link : report.links)
    {
        if (!busiest || link.busyNs > busiest->busyNs)
        {
            busiest = &link;
        }
    }
    if (busiest && report.virtualEndNs > report.statsFromNs)
    {
        const double window = report.virtualEndNs - report.statsFromNs;
        lines.push_back(
            {"busiest link",
             fmt::format("{}: busy {:.1f}% of the run, {} at {:.1f} GB/s while busy", busiest->name,
                         100.0 * busiest->busyNs / window, FormatBytes(uint64_t(busiest->bytes)),
                         busiest->busyNs > 0 ? busiest->bytes / busiest->busyNs : 0.0)});
    }
    PrintColumns(os, lines, {false, false});
    for (const std::string& note : report.notes)
    {
        os << "note: " << note << '\n';
    }
    if (report.partial)
    {
        os << "PARTIAL: " << (report.error.empty() ? "the run ended early" : report.error) << '\n';
    }
}

std::string
ProgressLine(double virtualNs, double wallSeconds, int running, int blocked, int total)
{
    std::string virtualText = virtualNs < 10e9 ? fmt::format("{:.3f} ms", virtualNs / 1e6)
                                               : fmt::format("{:.3f} s", virtualNs / 1e9);
    return fmt::format("[eidolon] virtual {} | wall {:.1f} s | ranks {} running, {} blocked / {}",
                       virtualText, wallSeconds, running, blocked, total);
}

std::string
FormatNs(double ns)
{
    double magnitude = std::fabs(ns);
    if (magnitude < 1e3)
    {
        return fmt::format("{:.0f} ns", ns);
    }
    if (magnitude < 1e6)
    {
        return fmt::format("{:.3f} us", ns / 1e3);
    }
    if (magnitude < 1e9)
    {
        return fmt::format("{:.3f} ms", ns / 1e6);
    }
    return fmt::format("{:.3f} s", ns / 1e9);
}
} // namespace eidolon::sim
