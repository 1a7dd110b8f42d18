// eidolon-sim's core, without sockets: one simulated run. Decoded requests of the rank processes
// go in (Join, Batch, Sync, Exchange, Goodbye); it keeps every rank's timeline (rank-timelines.h),
// matches NCCL calls per communicator (communicator-matcher.h) and turns them into flows through
// the CollectiveModel on the NetworkModel, advances ns-3 only as far as nothing can change any
// more (horizon.h), and answers a wait once the times it asks for are final (sync-points.h,
// through the ReplySink). The endpoint that talks to the processes is bridge/server.
#pragma once

#include "communicator-matcher.h"
#include "horizon.h"
#include "progress-watch.h"
#include "rank-timelines.h"
#include "reply-sink.h"
#include "run-report.h"
#include "run-statistics.h"
#include "sim-options.h"
#include "sync-points.h"

#include "ns3/collective-model.h"
#include "ns3/network-model.h"
#include "ns3/topology.h"

#include <memory>
#include <ostream>
#include <set>
#include <string>

namespace eidolon::sim
{

class Simulation : private RankTimelines::Listener
{
public:
    // Reads the topology, builds the network and collective models. Throws std::runtime_error
    // with a message naming the file or field on bad input.
    Simulation(const SimOptions& options, std::ostream& log, ReplySink& replies);
    ~Simulation() override;

    // ---- requests of the rank processes (decoded). Each throws std::runtime_error for a bad
    // request (the run goes on), ProgramError when the program is wrong (call Fail), and Join
    // RefusedProcess when the process cannot be served.

    // A message that brings work (records, a sync that waits, an exchange, a process coming or
    // going: the endpoint decides) counts as progress for the watchdog.
    void MessageArrived() { m_watch.Progressed(); }
    // A process joins: where it runs (the Welcome's process index names it from then on).
    wire::Welcome Join(const wire::Hello& hello);
    // Batches are taken in their sequence order (another thread's socket may overtake).
    void Batch(int process, const wire::Batch& batch);
    // Sync, exchange and goodbye wait for the batches they follow; answered through the sink.
    void Sync(int process, Peer peer, const wire::SyncRequest& request);
    void Exchange(int process, Peer peer, const wire::ExchangeRequest& request);
    void Goodbye(int process, Peer peer, const wire::Goodbye& goodbye);

    // ---- the run
    // Advances the simulation as far as it is final and checks that the run still progresses
    // (nothing once the run is over).
    void Step();
    // The run is over: every process said goodbye (or the run failed).
    bool Finished() const { return m_finished; }
    bool Failed() const { return !m_error.empty(); }
    const std::string& Error() const { return m_error; }
    // A process the launcher started has exited. A nonzero status (or a signal) ends the run.
    void OnProcessExit(const ProcessExit& exit);
    // Every process the launcher started has exited: the run ends once the simulation drains.
    void OnLaunchedProcessesDone();
    // Ends the run with `error` (the sink tells every live process).
    void Fail(const std::string& error);

    // ---- what it knows
    // Everything needed for summary.json and trace.json.
    RunReport Report(double wallSeconds) const;
    // Virtual time, processes running and blocked (for the progress line).
    double VirtualNowNs() const;
    int Running() const;
    int Blocked() const;
    int Connected() const { return int(m_timelines.Processes().size()); }
    // The pids of the processes that said goodbye: they are exiting on their own.
    std::vector<int> LeavingPids() const;
    bool IsLive(int process) const { return m_timelines.Process(process).Live(); }
    // A joined process (index from its Welcome), for checks at the edge (bridge/server).
    const RankProcess& Process(int process) const { return m_timelines.Process(process); }
    uint64_t RecordsIngested() const { return m_stats.RecordsIngested(); }
    // Records whose Node was freed (their whole block ended; their ends stay).
    uint64_t RecordsRetired() const { return m_timelines.RetiredRecords(); }
    // The end the simulator decided for a process's record (-1: not decided yet or unknown).
    double RecordEndNs(int process, uint64_t record) const;
    // How far ns-3 has simulated (everything before is final).
    double SimulatedNs() const;
    ns3::Ptr<const ns3::eidolon::Topology> GetTopology() const { return m_topology; }

private:
    struct Cluster
    {
        ns3::Ptr<ns3::eidolon::Topology> topology;
        ns3::Ptr<ns3::eidolon::NetworkModel> network;
    };
    static Cluster BuildCluster(const SimOptions& options);

    void Ingest(RankProcess& process, const wire::Batch& batch);
    void IngestRecord(RankProcess& process, const wire::Record& record);
    void AdoptNcclEnvironment(const wire::Hello& hello);
    // Gives the model NCCL's configuration and warns of algorithms it names that are not modelled.
    void AdoptNcclConfig(const ns3::eidolon::NcclConfig& config);
    // CollectiveModel's NoAlgorithm trace: warns once per function (NCCL would fail the call).
    void NoAlgorithm(ns3::eidolon::CollectiveKind kind, const std::string& message);
    // The request follows a batch not yet in: keep it for then.
    template<typename Request>
    bool DeferUntilBatch(RankProcess& process, Peer peer, const Request& request);
    void HandleDeferred(RankProcess& process);
    std::string DescribeBlocked() const;
    // Ranks that have ended (exit status, virtual time), for a deadlock or watchdog report.
    std::string DescribeEnded() const;
    // The live joined process `hello` is a helper of (a descendant with its world rank), or null.
    const RankProcess* HelperParent(const wire::Hello& hello) const;

    // RankTimelines::Listener
    void CommunicationStarted(NodeIndex node) override { m_matcher.MemberStarted(node); }
    void NodeFinished(NodeIndex node) override { m_syncs.NodeFinished(node); }

    SimOptions m_options;
    std::ostream& m_log;
    ReplySink& m_replies;
    Cluster m_cluster;
    ns3::Ptr<ns3::eidolon::Topology> m_topology;
    ns3::Ptr<ns3::eidolon::CollectiveModel> m_collectives;
    RunStatistics m_stats;
    RankTimelines m_timelines;
    CommunicatorMatcher m_matcher;
    SyncPoints m_syncs;
    Horizon m_horizon;
    ProgressWatch m_watch;

    int m_helpers = 0; // processes taken for a rank's helpers (HelperParent), not joined
    bool m_ncclConfigFromRanks = false; // the first Hello decided the NCCL_* settings
    std::set<ns3::eidolon::CollectiveKind> m_warnedNoAlgorithm;
    int64_t m_epochs[3] = {0, 0, 0}; // the ranks' virtual time 0 on the real clocks (first join)
    bool m_finished = false;
    std::string m_error;
};

} // namespace eidolon::sim
