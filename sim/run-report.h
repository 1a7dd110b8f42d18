// What `eidolon run` reports: plain structs the simulator fills, and the writers of
// DIR/summary.json, DIR/trace.json (Chrome trace event format), the terminal summary table and the
// progress line.
#ifndef EIDOLON_SIM_RUN_REPORT_H
#define EIDOLON_SIM_RUN_REPORT_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace eidolon::sim
{
/// Device time priced by one provider of the cost model ("profile", "model", "roofline", ...).
struct PricingCoverage
{
    std::string provider;
    uint64_t ops = 0;
    double ns = 0;
};

/// The NCCL calls of one kind a GPU made ("AllReduce", "AllGather", "ReduceScatter", "Broadcast",
/// "Reduce", "Send", "Recv") and their bytes as nccl-tests count them: count x type size, times
/// the ranks for all-gather and reduce-scatter (the whole buffer); send and receive: the message.
struct CommunicationTotals
{
    std::string call;
    uint64_t calls = 0;
    uint64_t bytes = 0;
};

/// One simulated GPU at the end of the run.
struct GpuReport
{
    uint32_t gpu = 0;    ///< global index
    std::string name;    ///< "node0/gpu3"
    std::string process; ///< the rank that drove it ("rank3")
    double endNs = 0;    ///< virtual time its last work ended
    double computeNs = 0;
    double commNs = 0;
    double idleNs = 0; ///< endNs minus the union of busy intervals (all from statsFromNs on)
    uint64_t peakBytes = 0;
    uint64_t capacityBytes = 0;
    uint64_t hostDataPeakBytes = 0;    ///< device bytes the host wrote, most held at once
    uint64_t hostDataDroppedBytes = 0; ///< of those, not kept (EIDOLON_HOST_DATA_CAP)
    std::vector<PricingCoverage> pricing;
    std::vector<CommunicationTotals> communication; ///< by call name
};

/// One span on a GPU stream, for trace.json.
struct TraceSlice
{
    uint32_t gpu = 0;
    uint64_t stream = 0;
    std::string name;
    std::string category; ///< "compute", "copy", "collective", "sync"
    double startNs = 0;
    double endNs = 0;
    nlohmann::json args; ///< null or an object; shown by the trace viewer
};

/// One flow's time on one link (channel), for trace.json.
struct FlowSlice
{
    uint32_t channel = 0;
    std::string channelName; ///< "node0/gpu0->node0/nvswitch"
    double startNs = 0;
    double endNs = 0;
    uint64_t bytes = 0;
    std::string label; ///< e.g. "allreduce#12 ring step 3"; empty: named by size
    std::string from;  ///< the flow's source and destination devices ("node0/gpu0")
    std::string to;
};

/// What one direction of a link (a channel) carried (summary.json "links"): the flows that
/// crossed it, counted from the statistics window on (`--stats-from`; a flow that began before it
/// counts its bytes pro rata), and the time at least one of them did.
struct LinkReport
{
    uint32_t channel = 0;
    std::string name;              ///< "node0/gpu0->node0/nvswitch"
    double bandwidthBytesPerS = 0; ///< its line rate, per direction
    double bytes = 0;
    uint64_t flows = 0;
    double busyNs = 0;
};

/// How one launched process ended (or that it had not when the run ended).
struct ProcessReport
{
    std::string name;
    int pid = 0;
    bool exited = false;
    bool signaled = false;
    int code = 0;
};

struct RunReport
{
    std::string topology;
    std::string model;  ///< "flow" | "packet"
    std::string launch; ///< "gpu" | "node" | "attach"
    bool partial = false;
    std::string error; ///< why the run ended early (set with partial)
    /// What a reader of the outputs must know that is no error (what trace.json left out).
    std::vector<std::string> notes;
    double wallSeconds = 0;
    double virtualEndNs = 0;
    /// The GPUs' compute, comm and idle count from this virtual time on (`--stats-from`).
    double statsFromNs = 0;
    uint64_t causalityViolations = 0;
    double causalityViolationNs = 0; ///< sum of their sizes
    double maxCausalityViolationNs = 0;
    /// Chains that reached the simulator after ns-3 passed their ready time (exact, not
    /// violations).
    uint64_t lateLocalRecords = 0;
    /// Late flows that rolled the flow model back and were replayed from their true start (the
    /// flows ranks had already been shown kept their finish).
    uint64_t lateFlowsReplayed = 0;
    uint64_t recordsIngested = 0;
    uint64_t flows = 0;
    /// The flow model's work: rate solves and the flows they covered (summed), the figure that
    /// a run's wall time follows when many flows share links.
    uint64_t rateSolves = 0;
    uint64_t flowsSolved = 0;
    std::vector<GpuReport> gpus;
    std::vector<ProcessReport> processes;
    std::vector<TraceSlice> slices;
    std::vector<FlowSlice> flowSlices;
    std::vector<LinkReport> links; ///< the channels that carried a flow, by channel
};

/// Virtual seconds per wall second (0 when wallSeconds is 0).
double VirtualWallRatio(const RunReport& report);

/// Share of each provider in `pricing` by priced time (by ops when no time was priced), in the
/// order given; all zero when nothing was priced.
std::vector<double> PricingShares(const std::vector<PricingCoverage>& pricing);

/// DIR/summary.json; the schema is documented in run-report.cc. Throws std::runtime_error when
/// the file cannot be written (written to PATH.tmp and renamed, so a reader never sees half).
void WriteSummaryJson(const RunReport& report, const std::string& path);

/// DIR/trace.json in Chrome's trace event format (loads in Perfetto and chrome://tracing),
/// streamed event by event: pid = GPU index (process_name "node0/gpu3"), tid = stream
/// (thread_name "stream 7"), "X" events with ts/dur in microseconds and cat = the slice category;
/// flows in one more pid named "network" (GPU count or past the highest GPU index), one tid per
/// channel (thread_name = channel name). Slices that overlap on one track without nesting (flows
/// sharing a link do) go to extra tracks "stream 7 #2", "<channel> #2", ... so that viewers show
/// every one. Throws std::runtime_error when the file cannot be written.
void WriteTraceJson(const RunReport& report, const std::string& path);

/// The terminal summary: one line per GPU (gpu, name, process, virtual end, compute/comm/idle as
/// percentages of that GPU's virtual end, peak/capacity memory in GiB, pricing coverage), then
/// the per-run lines, and "PARTIAL: <error>" when partial.
void PrintSummaryTable(const RunReport& report, std::ostream& os);

/// "[eidolon] virtual 12.345 ms | wall 3.2 s | ranks 14 running, 2 blocked / 16" (virtual time
/// in seconds once it reaches 10 s).
std::string ProgressLine(double virtualNs, double wallSeconds, int running, int blocked, int total);

/// A duration for people: "850 ns", "1.500 us", "12.345 ms", "3.200 s".
std::string FormatNs(double ns);
} // namespace eidolon::sim

#endif
