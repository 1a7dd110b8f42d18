// eidolon-sim's core: the simulator side of the bridge. It keeps the timelines of every rank
// process (the records whose ends it decides and how they depend on each other), matches NCCL
// calls per communicator, turns them into flows through the CollectiveModel on the NetworkModel,
// and advances ns-3 only as far as nothing can change any more (the horizon, DESIGN.md "Time
// synchronization"). A sync is answered once the times it asks for are final.
#pragma once

#include "ns3/collective-model.h"
#include "ns3/network-model.h"
#include "ns3/topology.h"
#include "run-report.h"
#include "wire.pb.h"

#include <zmq.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace eidolon::sim
{

using ns3::Ptr;
namespace e = ns3::eidolon;

struct SimOptions
{
    std::string topologyPath;        // a file, or a shipped name ("default")
    std::string model = "flow";      // "flow" or "packet"
    std::string transport = "dctcp"; // packet model only
    std::string endpoint;            // ipc://... or tcp://127.0.0.1:PORT
    int expectedProcesses = 0;       // processes that will join (0: learn from their WORLD_SIZE)
    double watchdogSeconds = 120;    // nothing progresses for this long: report and end
    std::map<std::string, std::string> ncclEnvironment; // NCCL_ALGO, NCCL_PROTO, ...
    size_t maxFlowSlices = 200000;                      // flows per link kept for trace.json
    size_t maxSlices = 2000000; // device slices kept for trace.json (the summary counts all)
    std::string launch = "attach";
    // Optimistic mode: the horizon does not wait for running ranks (answers may come before they
    // are final; work that arrives from the simulated past is started at the present and counted
    // as a causality violation with its size). Without it, the same happens for a rank that has
    // sent nothing for `graceSeconds` of wall time (stuck outside CUDA, e.g. in a TCP store).
    bool optimistic = false;
    double graceSeconds = 10;
};

// What the run loop is told about a process that ended outside the protocol (the launcher saw it).
struct ProcessExit
{
    std::string name;
    int pid = 0;
    bool signaled = false;
    int code = 0;
    std::string description;
};

class SimServer
{
public:
    // Reads the topology, builds the network and collective models, binds the endpoint (empty:
    // no socket, for benchmarks that call Ingest directly). Throws std::runtime_error with a
    // message naming the file or field on bad input.
    explicit SimServer(const SimOptions& options, std::ostream& log);
    ~SimServer();

    // One turn of the loop: waits up to `timeout` for messages (and for `extra` poll items, whose
    // revents are filled in), handles them, and advances the simulation as far as it is final.
    void Step(std::chrono::milliseconds timeout, std::vector<zmq::pollitem_t>& extra);

    // The run is over: every process said goodbye (or the run failed).
    bool Finished() const { return m_finished; }
    bool Failed() const { return !m_error.empty(); }
    const std::string& Error() const { return m_error; }

    // A process the launcher started has exited. A nonzero status (or a signal) ends the run.
    void OnProcessExit(const ProcessExit& exit);
    // Every process the launcher started has exited: the run ends once the simulation drains.
    void OnLaunchedProcessesDone();
    // Ends the run with `error` (fatal Error to every connected process).
    void Fail(const std::string& error);

    // Everything needed for summary.json and trace.json.
    eidolon::run::RunReport Report(double wallSeconds) const;
    // Virtual time, processes running and blocked (for the progress line).
    double VirtualNowNs() const;
    int Running() const;
    int Blocked() const;
    int Connected() const;

    // For benchmarks and tests: handle one message from a process as if it had arrived.
    void Deliver(const std::string& routingId, const std::string& bytes);
    uint64_t RecordsIngested() const { return m_recordsIngested; }
    // The end the simulator decided for a process's record (-1: not decided yet or unknown).
    double RecordEndNs(int process, uint64_t record) const;
    // How far ns-3 has simulated (everything before is final).
    double SimulatedNs() const;
    Ptr<const e::Topology> GetTopology() const { return m_topology; }

private:
    struct Process;
    struct Node;
    struct Collective;
    struct Transfer;
    struct Sync;
    using NodeIndex = size_t;

    void Handle(const std::string& routingId, const wire::Envelope& envelope);
    void HandleHello(const std::string& routingId, const wire::Hello& hello);
    void HandleBatch(Process& process, const wire::Batch& batch);
    void Ingest(Process& process, const wire::Batch& batch);
    void IngestRecord(Process& process, const wire::Record& record);
    void HandleSync(Process& process, const std::string& routingId, const wire::SyncRequest& sync);
    void HandleExchange(Process& process, const std::string& routingId,
                        const wire::ExchangeRequest& request);
    void HandleGoodbye(Process& process, const std::string& routingId,
                       const wire::Goodbye& goodbye);
    void SendTo(const std::string& routingId, const wire::Envelope& envelope);
    void SendError(const std::string& routingId, const std::string& message, bool fatal);

    NodeIndex AddNode(Process& process, uint64_t id, int device, uint64_t stream,
                      const google::protobuf::RepeatedField<uint64_t>& deps, double ready);
    void DepEnded(NodeIndex node);
    void NodeStarted(NodeIndex node);
    void Finish(NodeIndex node, double endNs);
    void RunWorklist();
    void TryStartCollective(Collective& collective);
    void TryStartTransfer(Transfer& transfer);
    void MatchCommunication(Process& process, NodeIndex node, const wire::Communication& record);
    void CheckSync(Sync& sync);
    void AnswerReadySyncs();

    double Horizon();
    void Advance();
    void CheckProgress();
    std::string DescribeBlocked() const;
    uint32_t GpuOf(const Process& process, int device);
    std::string CallText(const Process& process, const wire::Communication& record) const;

    SimOptions m_options;
    std::ostream& m_log;
    Ptr<e::Topology> m_topology;
    Ptr<e::NetworkModel> m_network;
    Ptr<e::CollectiveModel> m_collectives;
    uint32_t m_gpusPerNode = 1;

    std::unique_ptr<zmq::context_t> m_context;
    std::unique_ptr<zmq::socket_t> m_router;

    std::vector<std::unique_ptr<Process>> m_processes;
    std::unordered_map<std::string, Process*> m_byRoutingId;
    std::unordered_map<std::string, Process*> m_byToken;
    std::deque<Node> m_nodes;
    std::vector<NodeIndex> m_worklist;
    std::map<std::pair<uint64_t, uint64_t>, Collective> m_collectiveCalls; // (comm, index)
    std::deque<Transfer> m_transferPool;
    // (comm, src, dst) -> transfers one side has posted and the other not yet, oldest first
    std::map<std::tuple<uint64_t, int, int>, std::deque<size_t>> m_transfers;
    bool m_queueEmpty = false; // the last Run ended because ns-3 had no events left
    struct CommInfo
    {
        int nranks = 0;
        std::map<int, uint32_t> gpuOfRank; // comm rank -> global GPU index
        std::map<int, std::string> nameOfRank;
        std::map<int, uint64_t> collectivesOfRank; // collectives each rank has issued so far
    };
    std::unordered_map<uint64_t, CommInfo> m_comms;
    std::deque<Sync> m_syncs;
    struct Exchange
    {
        int participants = 0;
        std::map<int, std::string> entries;
        double time = 0;
        struct Waiter
        {
            int process;
            std::string routingId;
            uint64_t request;
            std::string what;
        };
        std::vector<Waiter> waiters;
    };
    std::map<std::string, Exchange> m_exchanges;

    int m_expected = 0;
    bool m_ncclConfigFromRanks = false; // the first Hello decided the NCCL_* settings
    int64_t m_epochs[3] = {0, 0, 0};    // the ranks' virtual time 0 on the real clocks
    bool m_finished = false;
    std::string m_error;
    uint64_t m_recordsIngested = 0;
    uint64_t m_violations = 0;
    double m_violationNs = 0;
    double m_maxViolationNs = 0;
    std::chrono::steady_clock::time_point m_lastProgress;
    std::chrono::steady_clock::time_point m_lastLivenessCheck;
    double m_lastHorizon = -1;

    // The time a set of intervals covers, kept small: intervals that end before the horizon can
    // no longer meet a new one (new work starts at or after it) and fold into a total.
    class IntervalUnion
    {
    public:
        void Add(double start, double end);
        void Close(double before);
        double Covered() const;

    private:
        // Disjoint, by start, from m_head on (work mostly arrives in time order: appends are
        // O(1), the rest a binary search).
        std::vector<std::pair<double, double>> m_open;
        size_t m_head = 0;
        double m_closed = 0;
    };

    // Statistics for the report.
    struct GpuStats
    {
        double endNs = 0;
        double computeNs = 0; // busy time of kernels and copies (summed)
        double commNs = 0;
        std::string process;
        IntervalUnion computeCover; // time some kernel or copy runs
        IntervalUnion commCover;    // time some collective runs
        IntervalUnion anyCover;
    };
    void AddSlice(eidolon::run::TraceSlice slice);
    std::vector<GpuStats> m_gpuStats;
    std::vector<eidolon::run::TraceSlice> m_slices;
    uint64_t m_slicesDropped = 0;
    std::vector<eidolon::run::FlowSlice> m_flowSlices;
    uint64_t m_flows = 0;
    std::vector<eidolon::run::ProcessReport> m_exits;
};

} // namespace eidolon::sim
