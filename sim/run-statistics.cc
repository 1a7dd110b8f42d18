#include "run-statistics.h"

#include "ns3/callback.h"

#include <fmt/format.h>

#include <algorithm>

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
                if (self->m_flowSlices.size() + flow.path.size() > self->m_options.maxFlowSlices ||
                    double(flow.finish.GetPicoSeconds()) / 1000.0 < self->m_options.traceFromNs)
                {
                    return;
                }
                for (uint32_t channel : flow.path)
                {
                    self->m_flowSlices.push_back(
                        FlowSlice{channel, self->m_topology->ChannelName(channel),
                                  double(flow.start.GetPicoSeconds()) / 1000.0,
                                  double(flow.finish.GetPicoSeconds()) / 1000.0, flow.bytes,
                                  fmt::format("flow {}", flow.id)});
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
    if (m_slicesBeforeWindow > 0)
    {
        report.error += fmt::format("{}trace.json holds device slices from {:.3f} ms on; {} "
                                    "before were counted in the summary but not kept",
                                    report.error.empty() ? "" : "; ", m_options.traceFromNs / 1e6,
                                    m_slicesBeforeWindow);
    }
    if (m_slicesDropped > 0)
    {
        report.error +=
            fmt::format("{}trace.json holds the first {} device slices; {} more were "
                        "counted in the summary but not kept",
                        report.error.empty() ? "" : "; ", m_slices.size(), m_slicesDropped);
    }
    report.flowSlices = m_flowSlices;
    return report;
}

} // namespace eidolon::sim
