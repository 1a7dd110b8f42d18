#include "run-statistics.h"

#include "ns3/callback.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace eidolon::sim
{

namespace e = ns3::eidolon;

RunStatistics::RunStatistics(const SimOptions& options, ns3::Ptr<const e::Topology> topology)
    : m_options(options)
    , m_topology(topology)
    , m_gpuStats(topology->GpuCount())
{
}

void
RunStatistics::RecordFlowsOf(e::NetworkModel& network)
{
    network.TraceConnectWithoutContext(
        "FlowFinished",
        ns3::MakeBoundCallback(
            +[](RunStatistics* self, const e::FlowRecord& flow)
            {
                const double start = double(flow.start.GetPicoSeconds()) / 1000.0;
                const double finish = double(flow.finish.GetPicoSeconds()) / 1000.0;
                const double from = std::max(start, self->m_options.statsFromNs);
                if (finish > from || (finish == start && finish >= from))
                {
                    const double share = finish > start ? (finish - from) / (finish - start) : 1;
                    for (uint32_t channel : flow.path)
                    {
                        self->CountOnLink(channel, from, finish, double(flow.bytes) * share);
                    }
                }
                if (finish < self->m_options.traceFromNs)
                {
                    self->m_flowSlicesBeforeWindow += flow.path.size();
                    return;
                }
                if (self->m_flowSlices.size() + flow.path.size() > self->m_options.maxFlowSlices)
                {
                    self->m_flowSlicesDropped += flow.path.size();
                    return;
                }
                const std::string& source = self->m_topology->GetDevice(flow.src).name;
                const std::string& destination = self->m_topology->GetDevice(flow.dst).name;
                for (uint32_t channel : flow.path)
                {
                    self->m_flowSlices.push_back(FlowSlice{
                        channel, self->m_topology->ChannelName(channel), start, finish, flow.bytes,
                        fmt::format("flow {}", flow.id), source, destination});
                }
            },
            this));
}

void
RunStatistics::ClaimGpu(uint32_t gpu, int index, const std::string& process)
{
    if (m_gpuStats[gpu].processIndex < 0)
    {
        m_gpuStats[gpu].process = process;
        m_gpuStats[gpu].processIndex = index;
    }
}

double
RunStatistics::BusyInWindow(double busyNs, double endNs) const
{
    // Busy time lies at the end of its record ([end - busy, end]: record-folds.h).
    return std::clamp(endNs - m_options.statsFromNs, 0.0, busyNs);
}

void
RunStatistics::SpanDone(uint32_t gpu, const wire::Span& span)
{
    GpuStats& stats = m_gpuStats[gpu];
    stats.endNs = std::max(stats.endNs, span.end_ns());
    stats.computeNs += BusyInWindow(span.busy_ns(), span.end_ns());
    if (KeepsSlice(gpu, false, span.start_ns(), span.end_ns()))
    {
        m_slices.push_back(TraceSlice{
            gpu, span.stream(),
            span.count() > 1 ? fmt::format("{} (+{} ops)", span.label(), span.count() - 1)
                             : span.label(),
            span.kind() == wire::OP_COPY || span.kind() == wire::OP_MEMSET ? "copy" : "compute",
            span.start_ns(), span.end_ns(), nlohmann::json()});
    }
}

void
RunStatistics::WorkDone(const DecidedWork& work)
{
    GpuStats& stats = m_gpuStats[work.gpu];
    stats.endNs = std::max(stats.endNs, work.endNs);
    if (work.communication)
    {
        stats.commNs += BusyInWindow(work.endNs - work.startNs, work.endNs);
    }
    else
    {
        stats.computeNs += BusyInWindow(work.busyNs, work.endNs);
    }
    const double startNs =
        work.communication ? work.startNs : std::max(work.startNs, work.endNs - work.busyNs);
    if (KeepsSlice(work.gpu, work.communication, startNs, work.endNs))
    {
        m_slices.push_back(
            TraceSlice{work.gpu, work.stream, work.label,
                       work.communication ? "collective" : (work.compute ? "compute" : "copy"),
                       startNs, work.endNs, nlohmann::json()});
    }
}

void
RunStatistics::CommunicationIssued(uint32_t gpu, const std::string& call, uint64_t bytes)
{
    if (gpu >= m_gpuStats.size())
    {
        return;
    }
    CommunicationTotals& totals = m_gpuStats[gpu].communication[call];
    totals.call = call;
    ++totals.calls;
    totals.bytes += bytes;
}

void
RunStatistics::CountOnLink(uint32_t channel, double startNs, double endNs, double bytes)
{
    if (m_links.size() <= channel)
    {
        m_links.resize(m_topology->ChannelCount());
    }
    LinkTotals& link = m_links.at(channel);
    link.bytes += bytes;
    ++link.flows;
    if (!(endNs > startNs))
    {
        return;
    }
    // This flow ends no earlier than any counted before it: it merges with the newest
    // intervals whose end it reaches.
    while (!link.recent.empty() && link.recent.back().second >= startNs)
    {
        startNs = std::min(startNs, link.recent.back().first);
        endNs = std::max(endNs, link.recent.back().second);
        link.recent.pop_back();
    }
    link.recent.emplace_back(startNs, endNs);
    // Memory stays bounded: the oldest busy periods are folded into a sum. A later flow that
    // began before such a period ended would count the overlap twice; it would have to outlast
    // the link's 256 newest busy periods while it ran on that very link.
    constexpr size_t kKeep = 256;
    if (link.recent.size() > 2 * kKeep)
    {
        for (size_t i = 0; i < kKeep; ++i)
        {
            link.folded += link.recent[i].second - link.recent[i].first;
        }
        link.recent.erase(link.recent.begin(), link.recent.begin() + long(kKeep));
    }
}

void
RunStatistics::CausalityViolation(double ns)
{
    ++m_violations;
    m_violationNs += ns;
    m_maxViolationNs = std::max(m_maxViolationNs, ns);
}

void
RunStatistics::LateLocalRecord()
{
    ++m_lateLocalRecords;
}

void
RunStatistics::CloseBefore(double horizonNs)
{
    for (GpuStats& stats : m_gpuStats)
    {
        stats.computeCover.Close(horizonNs);
        stats.commCover.Close(horizonNs);
        stats.anyCover.Close(horizonNs);
    }
}

bool
RunStatistics::KeepsSlice(uint32_t gpu, bool communication, double startNs, double endNs)
{
    const double from = std::max(startNs, m_options.statsFromNs);
    if (gpu < m_gpuStats.size() && endNs > from)
    {
        GpuStats& stats = m_gpuStats[gpu];
        (communication ? stats.commCover : stats.computeCover).Add(from, endNs);
        stats.anyCover.Add(from, endNs);
    }
    if (endNs < m_options.traceFromNs)
    {
        ++m_slicesBeforeWindow;
        return false;
    }
    if (m_slices.size() < m_options.maxSlices)
    {
        return true;
    }
    ++m_slicesDropped;
    return false;
}

// ------------------------------------------------------------------ report

GpuReport
RunStatistics::ReportGpu(uint32_t gpu,
                         const std::vector<std::unique_ptr<RankProcess>>& processes) const
{
    const GpuStats& stats = m_gpuStats[gpu];
    GpuReport g;
    g.gpu = gpu;
    g.name = m_topology->GetDevice(m_topology->GpuDevice(gpu)).name;
    g.process = stats.process;
    g.endNs = stats.endNs;
    // Time covered, not summed: concurrent collectives (or kernels on several streams) overlap.
    // Compute is the busy time of the kernels and copies, at most the time they cover;
    // communication the time some collective runs; idle the time nothing does.
    g.computeNs = std::min(stats.computeNs, stats.computeCover.Covered());
    g.commNs = stats.commCover.Covered();
    g.idleNs = std::max(0.0, stats.endNs - m_options.statsFromNs - stats.anyCover.Covered());
    g.peakBytes = 0;
    g.capacityBytes = 0;
    for (const auto& [call, totals] : stats.communication)
    {
        g.communication.push_back(totals);
    }
    for (const auto& process : processes)
    {
        if (process->index != stats.processIndex)
        {
            continue;
        }
        for (size_t d = 0; d < process->gpus.size(); ++d)
        {
            if (process->gpus[d] != int32_t(gpu))
            {
                continue;
            }
            for (const wire::DeviceUsage& usage : process->usage)
            {
                if (usage.device() == int(d))
                {
                    g.peakBytes = usage.peak_bytes();
                    g.capacityBytes = usage.capacity_bytes();
                    g.hostDataPeakBytes = usage.host_data_peak_bytes();
                    g.hostDataDroppedBytes = usage.host_data_dropped_bytes();
                }
            }
        }
        for (const wire::Pricing& pricing : process->pricing)
        {
            g.pricing.push_back(PricingCoverage{pricing.provider(), pricing.ops(), pricing.ns()});
        }
    }
    return g;
}

RunReport
RunStatistics::Report(const std::vector<std::unique_ptr<RankProcess>>& processes,
                      const RunOutcome& outcome) const
{
    RunReport report;
    report.topology = m_options.topologyPath;
    report.model = m_options.model;
    report.launch = m_options.launch;
    report.partial = !outcome.error.empty();
    report.error = outcome.error;
    report.wallSeconds = outcome.wallSeconds;
    report.statsFromNs = m_options.statsFromNs;
    report.causalityViolations = m_violations + outcome.network.causalityViolations;
    report.causalityViolationNs = m_violationNs;
    report.maxCausalityViolationNs = m_maxViolationNs;
    report.lateLocalRecords = m_lateLocalRecords;
    report.recordsIngested = m_recordsIngested;
    report.flows = outcome.network.flowsAdded;
    report.rateSolves = outcome.network.rateUpdates;
    report.flowsSolved = outcome.network.flowsResolved;
    report.lateFlowsReplayed = outcome.network.lateFlowsReplayed;
    double virtualEnd = 0;
    for (uint32_t gpu = 0; gpu < m_gpuStats.size(); ++gpu)
    {
        if (m_gpuStats[gpu].processIndex < 0)
        {
            continue;
        }
        virtualEnd = std::max(virtualEnd, m_gpuStats[gpu].endNs);
        report.gpus.push_back(ReportGpu(gpu, processes));
    }
    report.virtualEndNs = virtualEnd;
    report.processes = m_exits;
    for (const auto& process : processes)
    {
        bool known = false;
        for (const auto& exit : m_exits)
        {
            known = known || exit.pid == process->pid;
        }
        if (!known)
        {
            report.processes.push_back(ProcessReport{process->name, process->pid, process->goodbye,
                                                     false, std::max(0, process->exitStatus)});
        }
    }
    report.slices.assign(m_slices.begin(), m_slices.end());
    if (m_slicesBeforeWindow > 0 || m_flowSlicesBeforeWindow > 0)
    {
        report.notes.push_back(fmt::format(
            "trace.json holds device and network slices from {:.3f} ms on (--trace-from); {} "
            "device and {} network slices before were counted in the summary but not kept",
            m_options.traceFromNs / 1e6, m_slicesBeforeWindow, m_flowSlicesBeforeWindow));
    }
    if (m_options.launch == "node")
    {
        // One process per node drove one GPU of a node that has several: a program that drives
        // one GPU per process (train-gpt, a torch script without a spawning launcher) wanted
        // --launch gpu, and runs short of memory or slow here without a word.
        std::map<int32_t, std::pair<uint32_t, uint32_t>> perNode; // node -> (GPUs, used)
        for (uint32_t gpu = 0; gpu < m_gpuStats.size(); ++gpu)
        {
            auto& [gpus, used] = perNode[m_topology->GetDevice(m_topology->GpuDevice(gpu)).node];
            ++gpus;
            used += m_gpuStats[gpu].processIndex >= 0 ? 1 : 0;
        }
        for (const auto& [node, count] : perNode)
        {
            if (count.second == 1 && count.first > 1)
            {
                report.notes.push_back(fmt::format(
                    "node{} used 1 of its {} GPUs: --launch node starts one process per node, for "
                    "programs that drive every GPU of their node or spawn a worker per GPU; a "
                    "program of one GPU per process wants --launch gpu",
                    node, count.first));
                break;
            }
        }
    }
    if (m_slicesDropped > 0)
    {
        report.notes.push_back(fmt::format("trace.json holds the first {} device slices; {} more "
                                           "were counted in the summary but not kept "
                                           "(--trace-slices)",
                                           m_slices.size(), m_slicesDropped));
    }
    if (m_flowSlicesDropped > 0)
    {
        report.notes.push_back(fmt::format(
            "trace.json holds the first {} network slices (a flow on a link); {} more were "
            "counted in summary.json's links but not kept (--trace-flow-slices)",
            m_flowSlices.size(), m_flowSlicesDropped));
    }
    report.flowSlices = m_flowSlices;
    for (uint32_t channel = 0; channel < m_links.size(); ++channel)
    {
        const LinkTotals& link = m_links[channel];
        if (link.flows == 0)
        {
            continue;
        }
        double busy = link.folded;
        for (const auto& [start, end] : link.recent)
        {
            busy += end - start;
        }
        report.links.push_back(LinkReport{channel, m_topology->ChannelName(channel),
                                          m_topology->ChannelBandwidth(channel), link.bytes,
                                          link.flows, busy});
    }
    return report;
}

} // namespace eidolon::sim
