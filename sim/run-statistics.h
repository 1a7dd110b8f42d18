// What the run report says, gathered while the run goes: per GPU its end, busy and covered time
// and owner, the slices and flows for trace.json, records ingested and causality violations.
#pragma once

#include "interval-union.h"
#include "rank-process.h"
#include "run-report.h"
#include "sim-options.h"

#include "ns3/network-model.h"
#include "ns3/topology.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace eidolon::sim
{

class RunStatistics
{
public:
    RunStatistics(const SimOptions& options, ns3::Ptr<const ns3::eidolon::Topology> topology);

    // Keeps the network model's finished flows (per link, up to maxFlowSlices) for trace.json.
    void RecordFlowsOf(ns3::eidolon::NetworkModel& network);

    // The first process that puts work on a GPU owns it in the report (with one process per GPU,
    // every process sees the node's GPUs and uses one of them). `index`: the process's place
    // among the run's (RankProcess::index), which tells processes of the same name apart.
    void ClaimGpu(uint32_t gpu, int index, const std::string& process);
    // Device work whose times the rank knew (a Span record).
    void SpanDone(uint32_t gpu, const wire::Span& span);
    // A record whose end the simulator decided: kernels and copies count their busy time,
    // communication its whole duration.
    struct DecidedWork
    {
        uint32_t gpu = 0;
        uint64_t stream = 0;
        const std::string& label;
        bool communication = false;
        bool compute = true; // not communication: a kernel (else a copy or memset)
        double startNs = 0;
        double endNs = 0;
        double busyNs = 0;
    };
    void WorkDone(const DecidedWork& work);
    // An NCCL call of kind `call` ("AllReduce", "Send", ...) issued on a GPU, with its bytes.
    void CommunicationIssued(uint32_t gpu, const std::string& call, uint64_t bytes);
    // Work that arrived `ns` before the simulator's present.
    void CausalityViolation(double ns);
    // A chain (kernels, copies) ready before ns-3's present: exact (priced on its rank alone).
    void LateLocalRecord();
    void RecordsIngested(uint64_t records) { m_recordsIngested += records; }
    uint64_t RecordsIngested() const { return m_recordsIngested; }
    // Nothing new can start before `horizonNs`: fold covered time up to there.
    void CloseBefore(double horizonNs);
    void ProcessExited(const ProcessReport& exit) { m_exits.push_back(exit); }

    // Everything needed for summary.json and trace.json.
    struct RunOutcome
    {
        std::string error; // empty: the run succeeded
        double wallSeconds = 0;
        ns3::eidolon::NetworkModelStats network;
    };
    RunReport Report(const std::vector<std::unique_ptr<RankProcess>>& processes,
                     const RunOutcome& outcome) const;

private:
    struct GpuStats
    {
        double endNs = 0;
        double computeNs = 0; // busy time of kernels and copies (summed)
        double commNs = 0;
        std::string process;
        int processIndex = -1;      // RankProcess::index of `process`
        IntervalUnion computeCover; // time some kernel or copy runs
        IntervalUnion commCover;    // time some collective runs
        IntervalUnion anyCover;
        std::map<std::string, CommunicationTotals> communication; // by call name
    };
    // The part of `busyNs` ending at `endNs` that lies from SimOptions::statsFromNs on.
    double BusyInWindow(double busyNs, double endNs) const;
    // Counts the slice's covered time; keeps it for trace.json while fewer than maxSlices are.
    bool KeepsSlice(uint32_t gpu, bool communication, double startNs, double endNs);
    GpuReport ReportGpu(uint32_t gpu,
                        const std::vector<std::unique_ptr<RankProcess>>& processes) const;

    const SimOptions& m_options;
    ns3::Ptr<const ns3::eidolon::Topology> m_topology;
    std::vector<GpuStats> m_gpuStats;
    std::deque<TraceSlice> m_slices; // no doubling copy as it grows to maxSlices
    uint64_t m_slicesDropped = 0;
    uint64_t m_slicesBeforeWindow = 0; // ended before SimOptions::traceFromNs
    std::vector<FlowSlice> m_flowSlices;
    uint64_t m_flowSlicesDropped = 0;
    uint64_t m_flowSlicesBeforeWindow = 0;
    // What each channel carried (LinkReport). Busy time is the union of its flows' intervals;
    // flows arrive in finish order, so a new one merges with the newest intervals it reaches.
    struct LinkTotals
    {
        double bytes = 0;
        uint64_t flows = 0;
        double folded = 0;                             // covered time of intervals let go
        std::vector<std::pair<double, double>> recent; // disjoint, by start
    };
    void CountOnLink(uint32_t channel, double startNs, double endNs, double bytes);
    std::vector<LinkTotals> m_links;
    uint64_t m_recordsIngested = 0;
    uint64_t m_violations = 0;
    double m_violationNs = 0;
    double m_maxViolationNs = 0;
    uint64_t m_lateLocalRecords = 0;
    std::vector<ProcessReport> m_exits;
};

} // namespace eidolon::sim
