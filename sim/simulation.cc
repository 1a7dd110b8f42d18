#include "simulation.h"

#include "sim-errors.h"
#include "virtual-time.h"

#include "ns3/boolean.h"
#include "ns3/cluster-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <stdexcept>

namespace eidolon::sim
{

namespace e = ns3::eidolon;

// ------------------------------------------------------------------ setup

Simulation::Cluster
Simulation::BuildCluster(const SimOptions& options)
{
    e::ClusterHelper cluster;
    if (options.model == "packet")
    {
        cluster.SetNetworkModel("ns3::eidolon::PacketModel", "Transport",
                                ns3::StringValue(options.transport));
    }
    else if (options.model == "flow")
    {
        // The simulator commits history itself, up to where no rank can still add work, so that
        // a late flow (optimistic mode) can roll the model back.
        cluster.SetNetworkModel("ns3::eidolon::FlowModel", "AutoCommit", ns3::BooleanValue(false));
    }
    else
    {
        throw std::runtime_error("--model must be flow or packet, not '" + options.model + "'");
    }
    Cluster built;
    built.topology = cluster.ReadTopology(options.topologyPath);
    built.network = cluster.Install(built.topology);
    if (built.topology->GpuCount() == 0)
    {
        throw std::runtime_error(options.topologyPath + ": the topology has no GPUs");
    }
    return built;
}

Simulation::Simulation(const SimOptions& options, std::ostream& log, ReplySink& replies)
    : m_options(options)
    , m_log(log)
    , m_replies(replies)
    , m_cluster(BuildCluster(m_options))
    , m_topology(m_cluster.topology)
    , m_collectives(ns3::CreateObject<e::CollectiveModel>())
    , m_stats(m_options, m_topology)
    , m_timelines(m_topology, m_stats)
    , m_matcher(m_timelines, m_topology, m_collectives)
    , m_syncs(m_timelines, replies)
    , m_horizon(m_options, log, m_timelines, m_cluster.network, m_stats)
    , m_watch(m_options, m_timelines)
{
    m_collectives->SetNetworkModel(m_cluster.network);
    m_collectives->SetAttribute("NcclVersion", ns3::UintegerValue(m_options.ncclVersion));
    m_collectives->TraceConnectWithoutContext("NoAlgorithm",
                                              ns3::MakeCallback(&Simulation::NoAlgorithm, this));
    AdoptNcclConfig(e::NcclConfig::FromEnvironment(m_options.ncclEnvironment));
    m_timelines.SetListener(this);
    m_timelines.SetExpected(m_options.expectedProcesses);
    m_stats.RecordFlowsOf(*m_cluster.network);
}

Simulation::~Simulation()
{
    ns3::Simulator::Destroy();
}

// ------------------------------------------------------------------ requests

wire::Welcome
Simulation::Join(const wire::Hello& hello)
{
    if (m_finished)
    {
        throw RefusedProcess("the run is over");
    }
    if (const RankProcess* parent = HelperParent(hello))
    {
        if (m_helpers++ == 0)
        {
            m_log << fmt::format(
                "eidolon-sim: {}'s subprocess (pid {}) uses CUDA with {}'s world rank, as "
                "torch.compile's workers do: it is taken for {}'s helper, which sees the GPU and "
                "prices its own work on its own clock, not for another rank (as are any later "
                "such subprocesses, without a line each)\n",
                parent->name, hello.pid(), parent->name, parent->name);
        }
        wire::Welcome welcome;
        welcome.set_process(-1);
        welcome.set_node(parent->node);
        welcome.set_hostname(fmt::format("node{}", parent->node));
        welcome.set_helper_of(parent->name);
        return welcome;
    }
    std::unique_ptr<RankProcess> placed = m_timelines.Place(hello);
    for (const auto& other : m_timelines.Processes())
    {
        if (placed->worldRank >= 0 && other->worldRank == placed->worldRank &&
            other->node != placed->node)
        {
            // One world rank on two nodes: a launcher per node process (`eidolon run --nodes 2
            // -- srun -n 8 ...`), each starting a world of its own. (On one node it is a rank's
            // own subprocess, such as torch.compile's workers, which inherit its RANK.)
            throw ProgramError(fmt::format(
                "{} (pid {}, node {}) and {} (pid {}, node {}) both joined as world rank {} of {}: "
                "two launchers started worlds of their own (one srun or mpirun in each node "
                "process?); start one launcher for the whole job (eidolon-sim --ranks N and one "
                "srun/mpirun across the nodes), or one node process",
                other->name, other->pid, other->node, placed->name, placed->pid, placed->node,
                placed->worldRank, hello.world_size()));
        }
    }
    if (m_epochs[0] == 0)
    {
        // The run's clock starts when its first rank joins, not when the simulator did: a rank
        // sees real time until its first CUDA call and this clock after, and its start-up
        // (Python's imports, seconds) would otherwise make its clocks jump back by that much.
        // Ranks that join later still go back by how much later they came.
        const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME};
        for (int i = 0; i < 3; ++i)
        {
            timespec ts{};
            clock_gettime(clocks[i], &ts);
            m_epochs[i] = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
        }
    }
    AdoptNcclEnvironment(hello);
    m_timelines.ExpectAtLeast(hello.world_size());
    RankProcess& process = m_timelines.Add(std::move(placed));
    wire::Welcome welcome;
    welcome.set_process(process.index);
    welcome.set_node(process.node);
    for (int32_t gpu : process.gpus)
    {
        welcome.add_gpus(gpu);
    }
    welcome.set_hostname(fmt::format("node{}", process.node));
    welcome.set_epoch_monotonic_ns(m_epochs[0]);
    welcome.set_epoch_realtime_ns(m_epochs[1]);
    welcome.set_epoch_boottime_ns(m_epochs[2]);
    return welcome;
}

const RankProcess*
Simulation::HelperParent(const wire::Hello& hello) const
{
    // Only a rank's own descendant with the same world rank: two ranks never share one, and a
    // process that a rank starts as a rank of its own (mp.spawn) is given a rank of its own.
    if (hello.world_rank() < 0)
    {
        return nullptr;
    }
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && process->worldRank == hello.world_rank() &&
            std::find(hello.ancestors().begin(), hello.ancestors().end(), process->pid) !=
                hello.ancestors().end())
        {
            return process.get();
        }
    }
    return nullptr;
}

void
Simulation::AdoptNcclConfig(const e::NcclConfig& config)
{
    m_collectives->SetConfig(config);
    for (const std::string& warning :
         {config.ReadingWarning(m_options.ncclVersion),
          config.ChannelWarning(m_options.ncclVersion),
          config.UnmodelledWarning(m_options.ncclVersion, m_topology->sharp.present)})
    {
        if (!warning.empty())
        {
            m_log << "eidolon-sim: warning: " << warning << "\n";
        }
    }
}

void
Simulation::NoAlgorithm(e::CollectiveKind kind, const std::string& message)
{
    if (m_warnedNoAlgorithm.insert(kind).second)
    {
        m_log << "eidolon-sim: warning: " << message << "\n";
    }
}

void
Simulation::AdoptNcclEnvironment(const wire::Hello& hello)
{
    // NCCL reads its variables in every rank; the model takes the first rank's (the simulator's
    // own environment wins, as `eidolon run` passes it to every rank anyway).
    if (m_ncclConfigFromRanks)
    {
        return;
    }
    std::map<std::string, std::string> env(hello.nccl_env().begin(), hello.nccl_env().end());
    std::string unread = e::NcclConfig::UnreadVariablesWarning(env);
    if (!unread.empty())
    {
        m_log << "eidolon-sim: warning: " << unread << "\n";
    }
    if (m_options.ncclEnvironment.empty() && !env.empty())
    {
        try
        {
            AdoptNcclConfig(e::NcclConfig::FromEnvironment(env));
        }
        catch (const std::exception& error)
        {
            throw RefusedProcess(fmt::format("{}: {}", hello.name(), error.what()));
        }
    }
    m_ncclConfigFromRanks = true;
}

void
Simulation::Batch(int index, const wire::Batch& batch)
{
    RankProcess& process = m_timelines.Process(index);
    process.Heard();
    if (batch.seq() < process.nextBatch)
    {
        throw std::runtime_error(
            fmt::format("{}: batch {} arrived twice", process.name, batch.seq()));
    }
    if (batch.seq() > process.nextBatch)
    {
        process.early.emplace(batch.seq(), batch); // another thread's socket overtook
        return;
    }
    // A bad record is reported and the rest of its batch dropped; the batch still counts, so
    // the process's later batches are served.
    process.nextBatch++;
    Ingest(process, batch);
    for (auto it = process.early.find(process.nextBatch); it != process.early.end();
         it = process.early.find(process.nextBatch))
    {
        wire::Batch next = std::move(it->second);
        process.early.erase(it);
        process.nextBatch++;
        Ingest(process, next);
    }
    HandleDeferred(process);
}

template<typename Request>
bool
Simulation::DeferUntilBatch(RankProcess& process, Peer peer, const Request& request)
{
    process.Heard();
    if (request.after_batch() < process.nextBatch)
    {
        return false;
    }
    process.waitingForBatch.push_back(DeferredRequest{peer, request});
    return true;
}

void
Simulation::HandleDeferred(RankProcess& process)
{
    // Syncs and goodbyes that waited for these batches.
    std::vector<DeferredRequest> waiting;
    waiting.swap(process.waitingForBatch);
    for (DeferredRequest& deferred : waiting)
    {
        if (auto* sync = std::get_if<wire::SyncRequest>(&deferred.request))
        {
            Sync(process.index, deferred.peer, *sync);
        }
        else if (auto* exchange = std::get_if<wire::ExchangeRequest>(&deferred.request))
        {
            Exchange(process.index, deferred.peer, *exchange);
        }
        else
        {
            Goodbye(process.index, deferred.peer, std::get<wire::Goodbye>(deferred.request));
        }
    }
}

void
Simulation::Sync(int index, Peer peer, const wire::SyncRequest& request)
{
    RankProcess& process = m_timelines.Process(index);
    if (!DeferUntilBatch(process, peer, request))
    {
        m_syncs.Sync(process, peer, request);
    }
}

void
Simulation::Exchange(int index, Peer peer, const wire::ExchangeRequest& request)
{
    RankProcess& process = m_timelines.Process(index);
    if (!DeferUntilBatch(process, peer, request))
    {
        m_syncs.Exchange(process, peer, request);
    }
}

void
Simulation::Goodbye(int index, Peer peer, const wire::Goodbye& goodbye)
{
    RankProcess& process = m_timelines.Process(index);
    if (DeferUntilBatch(process, peer, goodbye))
    {
        return;
    }
    process.clock = std::max(process.clock, goodbye.clock_ns());
    process.goodbye = true;
    process.usage.assign(goodbye.usage().begin(), goodbye.usage().end());
    process.pricing.assign(goodbye.pricing().begin(), goodbye.pricing().end());
    wire::SyncReply ack;
    ack.set_request(0);
    m_replies.SyncAnswered(peer, ack);
    if (goodbye.has_exit_status())
    {
        process.exitStatus = goodbye.exit_status() & 0xff; // what the parent's wait() sees
        if (process.exitStatus != 0)
        {
            // As soon as it is known (a Python rank on an uncaught exception exits with 1): the
            // others would otherwise be found waiting for it, which reads as a deadlock, before
            // its launcher reaps it; a rank under an outside launcher is never reaped here.
            Fail(fmt::format("{} exited with status {} at virtual {:.3f} ms", process.name,
                             process.exitStatus, process.clock / 1e6));
        }
    }
}

// ------------------------------------------------------------------ records

void
Simulation::Ingest(RankProcess& process, const wire::Batch& batch)
{
    for (const wire::Record& record : batch.records())
    {
        IngestRecord(process, record);
    }
    m_stats.RecordsIngested(uint64_t(batch.records_size()));
    process.clock = std::max(process.clock, batch.clock_ns());
    for (const wire::DeviceUsage& peak : batch.usage())
    {
        auto known =
            std::find_if(process.usage.begin(), process.usage.end(),
                         [&](const wire::DeviceUsage& u) { return u.device() == peak.device(); });
        wire::DeviceUsage& usage =
            known != process.usage.end() ? *known : process.usage.emplace_back();
        usage.set_device(peak.device());
        usage.set_peak_bytes(std::max(usage.peak_bytes(), peak.peak_bytes()));
        usage.set_capacity_bytes(peak.capacity_bytes());
    }
    if (batch.driving_threads() > 0 && process.TakeDrivingReport(2 * batch.seq()))
    {
        process.drivingThreads = batch.driving_threads(); // a thread parked or woke
        process.allParked = batch.all_parked();
    }
    m_timelines.RunWorklist();
}

void
Simulation::IngestRecord(RankProcess& process, const wire::Record& record)
{
    switch (record.body_case())
    {
    case wire::Record::kSpan:
        m_stats.SpanDone(m_timelines.UseGpu(process, record.span().device()), record.span());
        break;
    case wire::Record::kChain:
    {
        const wire::Chain& chain = record.chain();
        NodeIndex index = m_timelines.AddNode(process, chain.id(), chain.device(), chain.stream(),
                                              chain.deps(), chain.ready_ns(), false);
        RankTimelines::Node& node = m_timelines.At(index);
        node.a = chain.a_ns();
        node.b = chain.b_ns();
        node.busy = chain.busy_ns();
        m_timelines.SetLabel(
            index, chain.count() > 1 ? fmt::format("{} (+{} ops)", chain.label(), chain.count() - 1)
                                     : chain.label());
        node.compute = !(chain.kind() == wire::OP_COPY || chain.kind() == wire::OP_MEMSET);
        m_timelines.Submit(index);
        break;
    }
    case wire::Record::kCommunication:
    {
        const wire::Communication& c = record.communication();
        if (c.ops_size() == 0)
        {
            throw std::runtime_error(process.name + ": a communication record without ops");
        }
        NodeIndex index = m_timelines.AddNode(process, c.id(), c.device(), c.stream(), c.deps(),
                                              c.ready_ns(), true);
        m_matcher.Match(process, index, c);
        m_timelines.Submit(index);
        break;
    }
    case wire::Record::kCommJoin:
        m_matcher.Join(process, record.comm_join());
        break;
    default:
        throw std::runtime_error(process.name + ": an empty record");
    }
}

// ------------------------------------------------------------------ the run

void
Simulation::Step()
{
    if (m_finished)
    {
        return;
    }
    if (m_horizon.Advance())
    {
        m_watch.Progressed();
    }
    m_syncs.AnswerQueriesBy(m_horizon.Reached());
    ProgressWatch::Verdict verdict = m_watch.Check(m_horizon.QueueEmpty());
    switch (verdict.kind)
    {
    case ProgressWatch::Verdict::Running:
        return;
    case ProgressWatch::Verdict::AllDone:
        // Run what is left (collectives nobody waited for still end).
        RunEvents();
        m_finished = true;
        return;
    case ProgressWatch::Verdict::RankGone:
        Fail(verdict.error);
        return;
    case ProgressWatch::Verdict::Deadlock:
    case ProgressWatch::Verdict::Watchdog:
        Fail(verdict.error + DescribeBlocked());
        return;
    }
}

std::string
Simulation::DescribeBlocked() const
{
    std::string out;
    if (!m_timelines.AllJoined())
    {
        out += fmt::format("  {} of {} processes have joined\n", m_timelines.Processes().size(),
                           m_timelines.Expected());
    }
    for (const auto& process : m_timelines.Processes())
    {
        if (!process->Live())
        {
            continue;
        }
        if (!process->IsBlocked())
        {
            out += fmt::format("  {}: running (outside CUDA/NCCL) at virtual {:.3f} ms\n",
                               process->name, process->clock / 1e6);
            continue;
        }
        out += m_syncs.DescribeSyncs(*process);
    }
    out += DescribeEnded();
    out += m_syncs.DescribeExchanges();
    out += m_matcher.DescribeMissing();
    return out;
}

std::string
Simulation::DescribeEnded() const
{
    // The ranks the waiting ones may be waiting for: a rank that left its loop early (sys.exit,
    // a return) is not blocked anywhere, and only its absence shows.
    constexpr int kShown = 8;
    std::string out;
    int ended = 0;
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() || ++ended > kShown)
        {
            continue;
        }
        std::string how = !process->goodbye ? "ended without its goodbye (killed or _exit)"
                          : process->exitStatus >= 0
                              ? fmt::format("exited with status {}", process->exitStatus)
                              : std::string("exited");
        out += fmt::format("  {}: {} at virtual {:.3f} ms\n", process->name, how,
                           process->clock / 1e6);
    }
    if (ended > kShown)
    {
        out += fmt::format("  ... and {} more ranks that ended\n", ended - kShown);
    }
    return out;
}

void
Simulation::OnProcessExit(const ProcessExit& exit)
{
    m_stats.ProcessExited(ProcessReport{exit.name, exit.pid, true, exit.signaled, exit.code});
    for (const auto& process : m_timelines.Processes())
    {
        if (process->pid == exit.pid && !process->goodbye)
        {
            process->dead = true;
        }
    }
    if (exit.signaled || exit.code != 0)
    {
        Fail(exit.description + (exit.signaled ? SignalHint(exit.code) : std::string()));
    }
}

void
Simulation::OnLaunchedProcessesDone()
{
    if (m_finished)
    {
        return;
    }
    if (m_timelines.Processes().empty())
    {
        Fail("no rank joined the simulator: the program ended without using CUDA (or could not "
             "load eidolon's libraries)");
        return;
    }
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live())
        {
            process->dead = true; // ended without its goodbye (_exit, or killed)
        }
    }
    m_timelines.SetExpected(int(m_timelines.Processes().size()));
    RunEvents();
    m_finished = true;
}

void
Simulation::Fail(const std::string& error)
{
    if (m_finished)
    {
        return;
    }
    m_error = error;
    m_finished = true;
    m_log << "eidolon: " << error << (error.empty() || error.back() == '\n' ? "" : "\n");
    m_replies.RunFailed(error);
}

// ------------------------------------------------------------------ what it knows

RunReport
Simulation::Report(double wallSeconds) const
{
    return m_stats.Report(
        m_timelines.Processes(),
        RunStatistics::RunOutcome{m_error, wallSeconds, m_cluster.network->GetStats()});
}

double
Simulation::VirtualNowNs() const
{
    double latest = NowNs();
    for (const auto& process : m_timelines.Processes())
    {
        latest = std::max(latest, process->clock);
    }
    return latest;
}

std::vector<int>
Simulation::LeavingPids() const
{
    std::vector<int> pids;
    for (const auto& process : m_timelines.Processes())
    {
        if (process->goodbye && process->pid > 0)
        {
            pids.push_back(process->pid);
        }
    }
    return pids;
}

int
Simulation::Running() const
{
    int n = 0;
    for (const auto& process : m_timelines.Processes())
    {
        n += process->Live() && !process->IsBlocked();
    }
    return n;
}

int
Simulation::Blocked() const
{
    int n = 0;
    for (const auto& process : m_timelines.Processes())
    {
        n += process->Live() && process->IsBlocked();
    }
    return n;
}

double
Simulation::RecordEndNs(int process, uint64_t record) const
{
    if (process < 0 || size_t(process) >= m_timelines.Processes().size())
    {
        return -1;
    }
    NodeIndex node = m_timelines.Process(process).Find(record);
    return node == kNoNode ? -1 : m_timelines.EndOf(node);
}

double
Simulation::SimulatedNs() const
{
    return NowNs();
}

} // namespace eidolon::sim
