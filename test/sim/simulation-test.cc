// The simulator core (sim/) driven directly, without the bridge: decoded requests in, answers
// out through a ReplySink that records them. Expected times are worked out by hand in the
// comments.
#define BOOST_TEST_MODULE simulation
#include "sim-errors.h"
#include "simulation.h"
#include "virtual-time.h"

#include "ns3/nstime.h"
#include "ns3/simulator.h"

#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

using namespace eidolon;

namespace
{

struct PicosecondClock
{
    PicosecondClock() { ns3::Time::SetResolution(ns3::Time::PS); }
};
BOOST_TEST_GLOBAL_FIXTURE(PicosecondClock);

// Every answer the core gives, in order.
struct RecordingSink : sim::ReplySink
{
    std::vector<std::pair<sim::Peer, wire::SyncReply>> syncs;
    std::vector<std::pair<sim::Peer, wire::ExchangeReply>> exchanges;
    std::vector<std::string> failures;
    void SyncAnswered(sim::Peer peer, const wire::SyncReply& reply) override
    {
        syncs.emplace_back(peer, reply);
    }
    void ExchangeAnswered(sim::Peer peer, const wire::ExchangeReply& reply) override
    {
        exchanges.emplace_back(peer, reply);
    }
    void RunFailed(const std::string& error) override { failures.push_back(error); }
};

sim::SimOptions
Options()
{
    sim::SimOptions options;
    options.topologyPath = EIDOLON_BRIDGE_TEST_DIR "/two-gpus.yaml";
    options.watchdogSeconds = 0;
    return options;
}

wire::Hello
Hello(const std::string& name, int rank, int worldSize)
{
    wire::Hello hello;
    hello.set_name(name);
    hello.set_world_rank(rank);
    hello.set_world_size(worldSize);
    hello.set_node(0);
    hello.set_num_devices(2);
    hello.set_process_token(name);
    return hello;
}

wire::Batch
ChainBatch(uint64_t seq, double clock, uint64_t id, std::vector<uint64_t> deps, double ready,
           double a, double b)
{
    wire::Batch batch;
    batch.set_seq(seq);
    batch.set_clock_ns(clock);
    wire::Chain* chain = batch.add_records()->mutable_chain();
    chain->set_id(id);
    chain->set_device(0);
    chain->set_stream(1);
    for (uint64_t dep : deps)
    {
        chain->add_deps(dep);
    }
    chain->set_ready_ns(ready);
    chain->set_a_ns(a);
    chain->set_b_ns(b);
    chain->set_busy_ns(a);
    chain->set_count(1);
    chain->set_label("kernel");
    return batch;
}

wire::SyncRequest
SyncOn(uint64_t request, std::vector<uint64_t> records, uint64_t afterBatch, double clock)
{
    wire::SyncRequest sync;
    sync.set_request(request);
    for (uint64_t record : records)
    {
        sync.add_ops(record);
    }
    sync.set_after_batch(afterBatch);
    sync.set_clock_ns(clock);
    sync.set_driving_threads(1);
    sync.set_what("cudaStreamSynchronize");
    return sync;
}

// A send (rank 0) or receive (rank 1) of `bytes` on communicator 5, record
// `id`, ready at `ready`; the first batch of each rank also joins the communicator.
wire::Batch
SendRecvBatch(int rank, uint64_t seq, uint64_t id, double ready, uint64_t bytes)
{
    wire::Batch batch;
    batch.set_seq(seq);
    batch.set_clock_ns(ready);
    if (seq == 1)
    {
        wire::CommJoin* join = batch.add_records()->mutable_comm_join();
        join->set_comm(5);
        join->set_nranks(2);
        join->set_rank(rank);
        join->set_device(rank);
    }
    wire::Communication* c = batch.add_records()->mutable_communication();
    c->set_id(id);
    c->set_device(rank);
    c->set_stream(1);
    c->set_comm(5);
    c->set_comm_rank(rank);
    c->set_comm_size(2);
    c->set_ready_ns(ready);
    wire::CommOp* op = c->add_ops();
    op->set_kind(rank == 0 ? wire::COMM_SEND : wire::COMM_RECV);
    op->set_count(bytes);
    op->set_type_size(1);
    op->set_peer(1 - rank);
    return batch;
}

// Two ranks of one process each joined to a simulation (the optimistic mode on request).
struct TwoRankRun
{
    explicit TwoRankRun(bool optimistic = false, double graceSeconds = 10)
        : simulation(OptionsWith(optimistic, graceSeconds), log, sink)
    {
        simulation.Join(Hello("rank0", 0, 2));
        simulation.Join(Hello("rank1", 1, 2));
    }
    static sim::SimOptions OptionsWith(bool optimistic, double graceSeconds)
    {
        sim::SimOptions options = Options();
        options.optimistic = optimistic;
        options.graceSeconds = graceSeconds;
        return options;
    }
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation;
};

} // namespace

BOOST_AUTO_TEST_CASE(join_places_a_process_on_its_node_and_gpus)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    wire::Welcome welcome = simulation.Join(Hello("rank0", 0, 1));
    // The topology has one node of two GPUs: device d of node 0 is GPU d.
    BOOST_TEST(welcome.process() == 0);
    BOOST_TEST(welcome.node() == 0);
    BOOST_TEST(welcome.gpus_size() == 2);
    BOOST_TEST(welcome.gpus(0) == 0);
    BOOST_TEST(welcome.gpus(1) == 1);
    BOOST_TEST(welcome.hostname() == "node0");
    // Node 3 is not in a one-node topology: the process is refused, the run goes on.
    wire::Hello far = Hello("rank1", 1, 1);
    far.set_node(3);
    BOOST_CHECK_THROW(simulation.Join(far), sim::RefusedProcess);
    BOOST_TEST(!simulation.Failed());
    BOOST_TEST(simulation.Connected() == 1);
}

BOOST_AUTO_TEST_CASE(a_sync_is_answered_through_the_sink_with_the_decided_ends)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    // Record 1 ends at max(10 + 5, 0) = 15; record 2 waits on it: max(15 + 4, 0) = 19.
    simulation.Batch(0, ChainBatch(1, 0, 1, {}, 10, 5, 0));
    simulation.Batch(0, ChainBatch(2, 0, 2, {1}, 0, 4, 0));
    simulation.Sync(0, 7, SyncOn(42, {1, 2}, 2, 30));
    BOOST_TEST(sink.syncs.size() == 1u);
    BOOST_TEST(sink.syncs[0].first == 7u);
    const wire::SyncReply& reply = sink.syncs[0].second;
    BOOST_TEST(reply.request() == 42u);
    BOOST_TEST(reply.ends_size() == 2);
    BOOST_TEST(reply.ends(0).op() == 1u);
    BOOST_TEST(reply.ends(0).end_ns() == 15.0);
    BOOST_TEST(reply.ends(1).op() == 2u);
    BOOST_TEST(reply.ends(1).end_ns() == 19.0);
    BOOST_TEST(simulation.Blocked() == 0);
}

BOOST_AUTO_TEST_CASE(a_sync_that_follows_a_batch_not_yet_in_waits_for_it)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    // The sync follows batch 1, which another thread's socket has not delivered yet.
    simulation.Sync(0, 3, SyncOn(1, {1}, 1, 0));
    BOOST_TEST(sink.syncs.empty());
    // Batch 1 carries record 1: [20, max(20 + 6, 0)] = [20, 26]; then the sync is answered.
    simulation.Batch(0, ChainBatch(1, 0, 1, {}, 20, 6, 0));
    BOOST_TEST(sink.syncs.size() == 1u);
    BOOST_TEST(sink.syncs[0].first == 3u);
    BOOST_TEST(sink.syncs[0].second.ends(0).end_ns() == 26.0);
}

BOOST_AUTO_TEST_CASE(an_exchange_is_a_barrier_at_the_latest_arrival)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 2));
    simulation.Join(Hello("rank1", 1, 2));
    for (int rank : {0, 1})
    {
        wire::ExchangeRequest request;
        request.set_request(uint64_t(10 + rank));
        request.set_key("bootstrap");
        request.set_participants(2);
        request.set_clock_ns(rank == 0 ? 500 : 800);
        request.set_driving_threads(1);
        request.set_what("ncclCommInitRank");
        wire::ExchangeEntry* entry = request.add_entries();
        entry->set_index(rank);
        entry->set_payload(rank == 0 ? "zero" : "one");
        simulation.Exchange(rank, sim::Peer(rank), request);
        // rank0 alone: nobody is answered yet.
        BOOST_TEST(sink.exchanges.size() == (rank == 0 ? 0u : 2u));
    }
    // Both get both entries, at the later clock (800 ns), each with its own request id.
    for (int rank : {0, 1})
    {
        const auto& [peer, reply] = sink.exchanges[size_t(rank)];
        BOOST_TEST(peer == sim::Peer(rank));
        BOOST_TEST(reply.request() == uint64_t(10 + rank));
        BOOST_TEST(reply.time_ns() == 800.0);
        BOOST_TEST(reply.entries_size() == 2);
        BOOST_TEST(reply.entries(0).payload() == "zero");
        BOOST_TEST(reply.entries(1).payload() == "one");
    }
}

BOOST_AUTO_TEST_CASE(mismatched_send_and_receive_sizes_are_a_program_error)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 2));
    simulation.Join(Hello("rank1", 1, 2));
    for (int rank : {0, 1})
    {
        // rank0 sends 400 bytes, rank1 receives 200.
        wire::Batch batch = SendRecvBatch(rank, 1, 1, 0, rank == 0 ? 400 : 200);
        if (rank == 0)
        {
            simulation.Batch(rank, batch);
        }
        else
        {
            BOOST_CHECK_EXCEPTION(simulation.Batch(rank, batch), sim::ProgramError,
                                  [](const sim::ProgramError& e)
                                  {
                                      return std::string(e.what()).find(
                                                 "rank 0 sends 400 bytes to rank 1, which "
                                                 "receives 200 bytes") != std::string::npos;
                                  });
        }
    }
    // Whoever delivered the request ends the run; the sink is told once.
    simulation.Fail("mismatched send/recv");
    BOOST_TEST(simulation.Failed());
    BOOST_TEST(sink.failures.size() == 1u);
    simulation.Fail("again");
    BOOST_TEST(sink.failures.size() == 1u);
}

// NCCL refuses a communicator with two ranks on one GPU ("Duplicate GPU detected" at init): the
// run ends naming both ranks and the GPU (the test topology's node n0 has two GPUs; both pick
// device 0, which is GPU 0 for each).
BOOST_AUTO_TEST_CASE(two_ranks_of_a_communicator_on_one_gpu_are_a_program_error)
{
    TwoRankRun run;
    run.simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 100));
    wire::Batch second = SendRecvBatch(1, 1, 1, 0, 100);
    second.mutable_records(0)->mutable_comm_join()->set_device(0);
    BOOST_CHECK_EXCEPTION(run.simulation.Batch(1, second), sim::ProgramError,
                          [](const sim::ProgramError& e)
                          {
                              const std::string what = e.what();
                              return what.find("rank0 (comm rank 0) and rank1 (comm rank 1) are "
                                               "both on GPU n0/gpu0") != std::string::npos &&
                                     what.find("Duplicate GPU detected") != std::string::npos;
                          });
}

// Two processes claiming one world rank (a launcher in each node process, each starting a world
// of its own) end the run saying so, instead of a confusing mismatch later.
BOOST_AUTO_TEST_CASE(two_processes_with_one_world_rank_are_a_program_error)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::SimOptions options = Options();
    options.topologyPath = "default"; // two nodes
    sim::Simulation simulation(options, log, sink);
    simulation.Join(Hello("rank0", 0, 2));
    // A subprocess of the rank on its node (torch.compile's workers inherit RANK) is welcome.
    wire::Hello child = Hello("rank0-child", 0, 2);
    BOOST_CHECK_NO_THROW(simulation.Join(child));
    wire::Hello again = Hello("rank0-again", 0, 2);
    again.set_pid(4242);
    again.set_node(1);
    BOOST_CHECK_EXCEPTION(simulation.Join(again), sim::ProgramError,
                          [](const sim::ProgramError& e)
                          {
                              return std::string(e.what()).find(
                                         "rank0-again (pid 4242, node 1) both joined as world "
                                         "rank 0 of 2") != std::string::npos;
                          });
}

// A process whose ancestors include a live joined process with its own world rank is that
// process's helper (torch.compile's workers inherit RANK and query the GPU): it gets a Welcome
// naming the parent and is not a process of the run. Anything else joins as before.
BOOST_AUTO_TEST_CASE(a_descendant_with_its_ancestors_world_rank_is_a_helper)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    wire::Hello rank0 = Hello("rank0", 0, 2);
    rank0.set_pid(100);
    simulation.Join(rank0);
    // Grandchild of rank0 (a worker pool's worker), same world rank: a helper.
    wire::Hello worker = Hello("rank0", 0, 2);
    worker.set_pid(102);
    worker.add_ancestors(101);
    worker.add_ancestors(100);
    worker.add_ancestors(1);
    wire::Welcome welcome = simulation.Join(worker);
    BOOST_TEST(welcome.helper_of() == "rank0");
    BOOST_TEST(welcome.hostname() == "node0");
    BOOST_TEST(simulation.Connected() == 1);
    BOOST_TEST(log.str().find("is taken for rank0's helper") != std::string::npos);
    // A child that is given a world rank of its own (mp.spawn) is a rank.
    wire::Hello spawned = Hello("rank1", 1, 2);
    spawned.set_pid(103);
    spawned.add_ancestors(100);
    BOOST_TEST(simulation.Join(spawned).helper_of().empty());
    BOOST_TEST(simulation.Connected() == 2);
    // Same world rank but not a descendant: joins as before (not a helper).
    wire::Hello stranger = Hello("rank0-stranger", 0, 2);
    stranger.set_pid(104);
    stranger.add_ancestors(7);
    BOOST_TEST(simulation.Join(stranger).helper_of().empty());
    BOOST_TEST(simulation.Connected() == 3);
    BOOST_TEST(!simulation.Failed());
}

// The goodbye carries the status the process gave exit(); a failing one ends the run at once
// with the rank's name, status and clock, as the shell would see it (status & 0xff).
BOOST_AUTO_TEST_CASE(a_goodbye_with_a_failing_exit_status_ends_the_run)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 2));
    simulation.Join(Hello("rank1", 1, 2));
    wire::Goodbye clean;
    clean.set_after_batch(0);
    clean.set_clock_ns(2e6);
    clean.set_exit_status(256); // exit(256): the parent sees status 0
    simulation.Goodbye(0, 1, clean);
    BOOST_TEST(!simulation.Failed());
    wire::Goodbye failing;
    failing.set_after_batch(0);
    failing.set_clock_ns(1.5e6);
    failing.set_exit_status(3);
    simulation.Goodbye(1, 2, failing);
    BOOST_TEST(sink.syncs.size() == 2u); // both acknowledged
    BOOST_TEST(simulation.Failed());
    BOOST_TEST(sink.failures.size() == 1u);
    BOOST_TEST(sink.failures[0] == "rank1 exited with status 3 at virtual 1.500 ms");
    eidolon::sim::RunReport report = simulation.Report(1.0);
    BOOST_TEST(report.processes.size() == 2u);
    BOOST_TEST(report.processes[1].code == 3);
}

// Peaks come in batches (the largest kept) and the goodbye's figures are final, so that a run
// that ends before a rank's exit still reports the memory the rank used.
BOOST_AUTO_TEST_CASE(peak_memory_rides_in_batches)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    wire::Batch first = ChainBatch(1, 100, 1, {}, 0, 50, 0);
    wire::DeviceUsage* usage = first.add_usage();
    usage->set_device(0);
    usage->set_peak_bytes(3u << 20);
    usage->set_capacity_bytes(80u << 20);
    simulation.Batch(0, first);
    wire::Batch second = ChainBatch(2, 200, 2, {}, 100, 50, 0);
    usage = second.add_usage();
    usage->set_device(0);
    usage->set_peak_bytes(2u << 20); // out of order: the 3 MiB peak stands
    usage->set_capacity_bytes(80u << 20);
    simulation.Batch(0, second);
    simulation.Step();
    simulation.Fail("stopped");
    eidolon::sim::RunReport report = simulation.Report(1.0);
    BOOST_TEST(report.gpus.size() == 1u);
    BOOST_TEST(report.gpus[0].peakBytes == uint64_t(3u << 20));
    BOOST_TEST(report.gpus[0].capacityBytes == uint64_t(80u << 20));
}

// How an ended, unreaped process ended is read from /proc while it is a zombie (what the
// simulator does for ranks it did not start); once reaped, nothing is left to read.
BOOST_AUTO_TEST_CASE(a_zombies_exit_status_is_read_from_proc)
{
    auto zombie = [](auto body)
    {
        pid_t pid = fork();
        if (pid == 0)
        {
            body();
            _exit(0);
        }
        // Wait for it to end without reaping it.
        siginfo_t info{};
        BOOST_REQUIRE(waitid(P_PID, pid, &info, WEXITED | WNOWAIT) == 0);
        return pid;
    };
    pid_t killed = zombie([] { raise(SIGKILL); });
    int status = sim::ZombieExitStatus(killed);
    BOOST_TEST(WIFSIGNALED(status));
    BOOST_TEST(WTERMSIG(status) == SIGKILL);
    BOOST_TEST(sim::DescribeWaitStatus(status) == "was killed by signal 9 (Killed)");
    BOOST_TEST(sim::SignalHint(SIGKILL).find("out-of-memory killer") != std::string::npos);
    BOOST_TEST(sim::SignalHint(SIGTERM).empty());
    waitpid(killed, nullptr, 0);
    BOOST_TEST(sim::ZombieExitStatus(killed) == -1); // reaped: gone
    pid_t failed = zombie([] { _exit(3); });
    status = sim::ZombieExitStatus(failed);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(sim::DescribeWaitStatus(status) == "exited with status 3");
    waitpid(failed, nullptr, 0);
    BOOST_TEST(sim::ZombieExitStatus(getpid()) == -1); // alive
}

BOOST_AUTO_TEST_CASE(goodbye_is_acknowledged_and_the_run_ends_when_everyone_left)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    simulation.Batch(0, ChainBatch(1, 100, 1, {}, 0, 50, 0));
    wire::Goodbye goodbye;
    goodbye.set_after_batch(1);
    goodbye.set_clock_ns(100);
    simulation.Goodbye(0, 9, goodbye);
    BOOST_TEST(sink.syncs.size() == 1u);
    BOOST_TEST(sink.syncs[0].first == 9u);
    BOOST_TEST(sink.syncs[0].second.request() == 0u); // request 0 acknowledges a goodbye
    simulation.Step();
    BOOST_TEST(simulation.Finished());
    BOOST_TEST(!simulation.Failed());
    // Record 1 ran [0, 50] on GPU 0, which rank0 owns in the report.
    eidolon::sim::RunReport report = simulation.Report(1.0);
    BOOST_TEST(report.gpus.size() == 1u);
    BOOST_TEST(report.gpus[0].process == "rank0");
    BOOST_TEST(report.gpus[0].endNs == 50.0);
    BOOST_TEST(report.recordsIngested == 1u);
}

// Work that reaches the simulator after ns-3 passed its ready time (here: optimistic mode, which
// runs ahead of running ranks) keeps its time. A chain is priced on its rank alone (ready 0,
// 5 ns: it ends at 5 whenever it comes), so nothing already decided can depend on it: counted as
// a late local record, not as a causality violation. Communication arriving late shares links
// with what ns-3 already ran: each of its two records is a violation.
BOOST_AUTO_TEST_CASE(late_chains_are_exact_and_only_late_communication_is_a_violation)
{
    TwoRankRun run(true);
    sim::Simulation& simulation = run.simulation;
    RecordingSink& sink = run.sink;
    // A 1 MiB transfer from 0: ns-3 runs it to its end (> 0).
    simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 1 << 20));
    simulation.Batch(1, SendRecvBatch(1, 1, 1, 0, 1 << 20));
    simulation.Step();
    simulation.Sync(0, 1, SyncOn(1, {1}, 1, 0));
    BOOST_REQUIRE(sink.syncs.size() == 1u);
    const double transferEnd = sink.syncs[0].second.ends(0).end_ns();
    BOOST_TEST(transferEnd > 0);

    // A late kernel of rank 1 (ready 0): [0, 5].
    simulation.Batch(1, ChainBatch(2, 0, 2, {}, 0, 5, 0));
    simulation.Sync(1, 2, SyncOn(2, {2}, 2, 0));
    BOOST_REQUIRE(sink.syncs.size() == 2u);
    BOOST_TEST(sink.syncs[1].second.ends(0).end_ns() == 5.0);
    sim::RunReport report = simulation.Report(1.0);
    BOOST_TEST(report.lateLocalRecords == 1u);
    BOOST_TEST(report.causalityViolations == 0u);

    // A second transfer, ready at 0 on both ranks: two violations, each transferEnd late.
    simulation.Batch(0, SendRecvBatch(0, 2, 3, 0, 1 << 20));
    simulation.Batch(1, SendRecvBatch(1, 3, 3, 0, 1 << 20));
    report = simulation.Report(1.0);
    BOOST_TEST(report.causalityViolations == 2u);
    BOOST_TEST(report.causalityViolationNs == 2 * transferEnd, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(report.lateLocalRecords == 1u);
}

// A rank's clock after a sync is the end ns-3 gave it, in picoseconds, which the wire's ticks
// (2^-10 ns) round by up to half a tick (0.49 ps). Communication it issues from there, a fraction
// of a picosecond before ns-3's present, starts at the same instant: no violation. 10 ps before it
// is one: each of the transfer's two records (10 ps each), and its flow, which starts before what
// the flow model has committed (three in all).
BOOST_AUTO_TEST_CASE(a_start_a_tick_rounding_before_the_present_is_no_violation)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    RecordingSink& sink = run.sink;
    simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 1 << 20));
    simulation.Batch(1, SendRecvBatch(1, 1, 1, 0, 1 << 20));
    simulation.Sync(0, 1, SyncOn(1, {1}, 1, 0));
    simulation.Sync(1, 1, SyncOn(2, {1}, 1, 0));
    simulation.Step();
    BOOST_REQUIRE(sink.syncs.size() == 2u);
    const double end = sink.syncs[0].second.ends(0).end_ns();
    BOOST_TEST(end > 0);
    BOOST_TEST(sim::NowNs() == end);

    simulation.Batch(0, SendRecvBatch(0, 2, 2, end - 0.0004, 1 << 20));
    simulation.Batch(1, SendRecvBatch(1, 2, 2, end - 0.0004, 1 << 20));
    BOOST_TEST(simulation.Report(1.0).causalityViolations == 0u);

    simulation.Sync(0, 2, SyncOn(3, {2}, 2, end));
    simulation.Sync(1, 2, SyncOn(4, {2}, 2, end));
    simulation.Step();
    BOOST_REQUIRE(sink.syncs.size() == 4u);
    const double end2 = sink.syncs[2].second.ends(0).end_ns();
    simulation.Batch(0, SendRecvBatch(0, 3, 3, end2 - 0.01, 1 << 20));
    simulation.Batch(1, SendRecvBatch(1, 3, 3, end2 - 0.01, 1 << 20));
    const sim::RunReport report = simulation.Report(1.0);
    BOOST_TEST(report.causalityViolations == 3u);
    BOOST_TEST(report.causalityViolationNs == 0.02, boost::test_tools::tolerance(1e-6));
}

// A query (cudaEventQuery: SyncRequest.query) asks whether ops have ended by the caller's clock,
// and the caller goes on from that clock either way. So its process is not blocked: its clock
// holds the horizon, ns-3 never runs past it to answer, and the answer (-1: not ended) comes once
// ns-3 has reached the clock. (Before, the querying process counted as blocked, ns-3 ran to the
// op's end, and the work the caller then issued from its older clock came from the simulated
// past: 1,680 causality violations in 3 steps of an 8-GPU FSDP2 run.) With every driving thread
// parked, a query does block its process: nothing else will move its clock.
BOOST_AUTO_TEST_CASE(a_query_is_answered_at_the_callers_clock_without_running_past_it)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    RecordingSink& sink = run.sink;
    // A 64 MiB transfer from rank 0 to rank 1, both ready at 0: over NVLink it lasts far longer
    // than the 1 us the test looks at (64 MiB at even 1 TB/s is 67 us).
    simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 64 << 20));
    simulation.Batch(1, SendRecvBatch(1, 1, 1, 0, 64 << 20));
    // rank0 asks at 1,000 ns; rank1 has said nothing past 0: no answer yet.
    wire::SyncRequest query = SyncOn(7, {1}, 1, 1000);
    query.set_query(true);
    simulation.Sync(0, 1, query);
    simulation.Step();
    BOOST_TEST(sink.syncs.empty());
    BOOST_TEST(simulation.Blocked() == 0); // a query blocks nobody
    // rank1's clock passes 1,000 ns: ns-3 reaches 1,000 and no further, and the answer is -1.
    wire::Batch later;
    later.set_seq(2);
    later.set_clock_ns(5000);
    simulation.Batch(1, later);
    simulation.Step();
    BOOST_REQUIRE(sink.syncs.size() == 1u);
    BOOST_TEST(sink.syncs[0].second.request() == 7u);
    BOOST_TEST(sink.syncs[0].second.ends(0).end_ns() == -1.0);
    BOOST_TEST(ns3::Simulator::Now().GetNanoSeconds() <= 1000); // ns-3 stayed at the clock

    // Real waits on the op (cudaEventSynchronize on both ranks) block both: the end comes, past
    // 1,000 ns.
    simulation.Sync(0, 1, SyncOn(8, {1}, 1, 1000));
    simulation.Sync(1, 2, SyncOn(9, {1}, 2, 5000));
    for (int i = 0; i < 10 && sink.syncs.size() < 3; ++i)
    {
        simulation.Step();
    }
    BOOST_REQUIRE(sink.syncs.size() == 3u);
    double end = -1; // rank0's wait (request 8)
    for (const auto& [peer, reply] : sink.syncs)
    {
        end = reply.request() == 8u ? reply.ends(0).end_ns() : end;
    }
    BOOST_TEST(end > 1000.0);

    // Asked once the op has ended: answered at once with its end, whatever the clock.
    wire::SyncRequest afterwards = SyncOn(10, {1}, 1, end + 1);
    afterwards.set_query(true);
    simulation.Sync(0, 1, afterwards);
    BOOST_REQUIRE(sink.syncs.size() == 4u);
    BOOST_TEST(sink.syncs[3].second.ends(0).end_ns() == end);
}

BOOST_AUTO_TEST_CASE(a_query_blocks_a_process_whose_driving_threads_are_all_parked)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    RecordingSink& sink = run.sink;
    // rank0 sends; rank1 has not posted its receive: the op cannot end yet.
    simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 1 << 20));
    // A thread of rank0 queries it while another thread drives: rank0 is not blocked.
    wire::SyncRequest query = SyncOn(3, {1}, 1, 0);
    query.set_query(true);
    simulation.Sync(0, 2, query);
    BOOST_TEST(simulation.Blocked() == 0);
    // The same, with every driving thread parked (the watchdog queries, the training thread
    // waits for it): nothing but the answer will move rank0, so it is blocked.
    wire::SyncRequest parked = SyncOn(4, {1}, 1, 0);
    parked.set_query(true);
    parked.set_all_parked(true);
    simulation.Sync(0, 3, parked);
    BOOST_TEST(simulation.Blocked() == 1);
    BOOST_TEST(sink.syncs.empty());
}

// Both ranks send to each other and neither receives (blocking sends in the wrong order): the
// deadlock report names each unmatched send, its bytes, its ranks and the communicator.
BOOST_AUTO_TEST_CASE(a_p2p_deadlock_names_the_unmatched_sends)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 1 << 20));
    wire::Batch alsoSends = SendRecvBatch(1, 1, 1, 0, 2048);
    alsoSends.mutable_records(1)->mutable_communication()->mutable_ops(0)->set_kind(
        wire::COMM_SEND);
    simulation.Batch(1, alsoSends);
    simulation.Sync(0, 1, SyncOn(2, {1}, 1, 0));
    simulation.Sync(1, 2, SyncOn(2, {1}, 1, 0));
    simulation.Step();
    BOOST_TEST(simulation.Failed());
    BOOST_REQUIRE(run.sink.failures.size() == 1u);
    const std::string& report = run.sink.failures[0];
    BOOST_TEST(report.find("deadlock") != std::string::npos);
    BOOST_TEST(report.find("send of 1048576 bytes from rank0(comm rank 0) to rank1(comm rank 1) "
                           "on communicator 0x5: its receive was never posted") !=
               std::string::npos);
    BOOST_TEST(report.find("send of 2048 bytes from rank1(comm rank 1) to rank0(comm rank 0)") !=
               std::string::npos);
}

// A process's count of driving threads comes from its batches and from its syncs, which travel on
// different sockets: an older report never overrides a newer one. rank0's sync (sent after batch
// 1) says two threads drive; a thread then parked and batch 2 said one. Batch 2 is taken first
// here, as it can arrive first: the sync's older "two" must not bring back a running thread that
// nothing would ever hear from (the rank would look silent, not blocked).
BOOST_AUTO_TEST_CASE(a_sync_does_not_override_a_newer_batchs_driving_threads)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    simulation.Batch(0, SendRecvBatch(0, 1, 1, 0, 1 << 20)); // rank1 never receives: no end
    wire::Batch parked;
    parked.set_seq(2);
    parked.set_clock_ns(10);
    parked.set_driving_threads(1);
    simulation.Batch(0, parked);
    wire::SyncRequest sync = SyncOn(3, {1}, 1, 10);
    sync.set_driving_threads(2);
    simulation.Sync(0, 2, sync);
    // One driving thread, in the sync: rank0 is blocked.
    BOOST_TEST(simulation.Blocked() == 1);
    // A newer sync's count is taken (sent after batch 2): three threads, two waiting: running.
    wire::SyncRequest later = SyncOn(4, {1}, 2, 10);
    later.set_driving_threads(3);
    simulation.Sync(0, 3, later);
    BOOST_TEST(simulation.Blocked() == 0);
}

// Chain ends are computed in whole ticks of 2^-10 ns (as the bridge sends a chain's a and b), so
// a stream's ops end where they do however the flusher split them into records (in wall time):
// all the sums are then exact. Ready 0.1 ns starts at round(0.1 x 1024) / 1024 = 0.099609375 ns;
// 1.5 + 2.25 ns later it ends at 3.849609375 ns, folded into one record or sent as two.
BOOST_AUTO_TEST_CASE(a_chain_ends_at_the_same_tick_however_it_was_split)
{
    auto endOf = [](bool split)
    {
        std::ostringstream log;
        RecordingSink sink;
        sim::Simulation simulation(Options(), log, sink);
        simulation.Join(Hello("rank0", 0, 1));
        uint64_t last = 1;
        if (split)
        {
            simulation.Batch(0, ChainBatch(1, 0, 1, {}, 0.1, 1.5, 0));
            simulation.Batch(0, ChainBatch(2, 0, 2, {1}, 0, 2.25, 0));
            last = 2;
        }
        else
        {
            simulation.Batch(0, ChainBatch(1, 0, 1, {}, 0.1, 3.75, 0));
        }
        simulation.Sync(0, 1, SyncOn(1, {last}, last, 0));
        return sink.syncs.at(0).second.ends(0).end_ns();
    };
    BOOST_TEST(endOf(false) == 3.849609375);
    BOOST_TEST(endOf(true) == 3.849609375);
}

BOOST_AUTO_TEST_CASE(ranks_gone_silent_together_get_one_line)
{
    // Grace 0: both running ranks are past it at the first step. One line names both, once.
    TwoRankRun run(false, 0);
    run.simulation.Step();
    run.simulation.Step();
    const std::string text = run.log.str();
    BOOST_TEST(text.find("eidolon: 2 ranks (rank0, rank1) have sent nothing for") !=
               std::string::npos);
    BOOST_TEST(text.find("has sent nothing") == std::string::npos);
    BOOST_TEST(text.find("have sent nothing") == text.rfind("have sent nothing"));
}

BOOST_AUTO_TEST_CASE(a_silent_rank_is_waited_for_while_another_is_heard_from)
{
    // Grace 4 s (a margin for a loaded machine between rank1's batch and the step after it).
    // Both ranks are silent for 4.2 s; then rank1 sends an all-reduce of a one-rank
    // communicator ready at 100 ns (an ns-3 event there: it ends when its only rank arrives) with
    // its clock at 200 ns, and the step right after still waits for rank0 (clock 0): a rank
    // heard from means the run is not stalled, and rank0 may only be starved of CPU. Once rank1
    // blocks in a sync on it, rank0 is the only rank running and silent past the grace period:
    // the run goes on without it and answers rank1 (end 100 ns).
    TwoRankRun run(false, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(4200));
    wire::Batch batch;
    batch.set_seq(1);
    batch.set_clock_ns(200);
    wire::CommJoin* join = batch.add_records()->mutable_comm_join();
    join->set_comm(9);
    join->set_nranks(1);
    join->set_rank(0);
    join->set_device(0);
    wire::Communication* c = batch.add_records()->mutable_communication();
    c->set_id(1);
    c->set_device(0);
    c->set_stream(1);
    c->set_comm(9);
    c->set_comm_rank(0);
    c->set_comm_size(1);
    c->set_ready_ns(100);
    wire::CommOp* op = c->add_ops();
    op->set_kind(wire::COMM_ALL_REDUCE);
    op->set_count(1024);
    op->set_type_size(4);
    run.simulation.Batch(1, batch);
    run.simulation.Step();
    BOOST_TEST(run.log.str().find("sent nothing") == std::string::npos);
    run.simulation.Sync(1, 3, SyncOn(9, {1}, 1, 200));
    BOOST_TEST(run.sink.syncs.empty()); // its end needs ns-3 past rank0's clock
    run.simulation.Step();
    BOOST_TEST(run.log.str().find("eidolon: rank0 has sent nothing for") != std::string::npos);
    BOOST_REQUIRE(run.sink.syncs.size() == 1u);
    BOOST_TEST(run.sink.syncs[0].second.ends(0).end_ns() == 100.0);
}

BOOST_AUTO_TEST_CASE(the_trace_keeps_the_slices_of_its_window)
{
    // Three kernels one after another on one stream: [0, 10], [10, 30], [30, 60] ns. A window
    // from 20 ns keeps the two that end at or after it (30 and 60 ns), at most one of them: the
    // [10, 30] one; the summary still counts all three (compute 60 ns).
    std::ostringstream log;
    RecordingSink sink;
    sim::SimOptions options = Options();
    options.traceFromNs = 20;
    options.maxSlices = 1;
    sim::Simulation simulation(options, log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    simulation.Batch(0, ChainBatch(1, 0, 1, {}, 0, 10, 10));
    simulation.Batch(0, ChainBatch(2, 0, 2, {1}, 0, 20, 20));
    simulation.Batch(0, ChainBatch(3, 0, 3, {2}, 0, 30, 30));
    simulation.Sync(0, 1, SyncOn(1, {3}, 3, 0));
    BOOST_TEST(sink.syncs.at(0).second.ends(0).end_ns() == 60);
    sim::RunReport report = simulation.Report(0);
    BOOST_REQUIRE(report.slices.size() == 1u);
    BOOST_TEST(report.slices[0].startNs == 10);
    BOOST_TEST(report.slices[0].endNs == 30);
    BOOST_TEST(report.gpus.at(0).computeNs == 60);
    // What trace.json left out is a note, not an error (the run is whole).
    BOOST_TEST(report.error.empty());
    BOOST_REQUIRE(report.notes.size() == 2u);
    BOOST_TEST(report.notes[0].find("from 0.000 ms on (--trace-from); 1 device and 0 network") !=
               std::string::npos);
    BOOST_TEST(report.notes[1].find("holds the first 1 device slices; 1 more") !=
               std::string::npos);
}

// Under --launch node, a node of two GPUs whose one process used one of them gets a note that
// names --launch gpu (train-gpt under --launch node ran short of memory on GPU 0 unsaid).
BOOST_AUTO_TEST_CASE(a_node_process_on_one_of_several_gpus_is_noted)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::SimOptions options = Options();
    options.launch = "node";
    sim::Simulation simulation(options, log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    simulation.Batch(0, ChainBatch(1, 0, 1, {}, 0, 10, 10));
    simulation.Sync(0, 1, SyncOn(1, {1}, 1, 0));
    const sim::RunReport report = simulation.Report(0);
    BOOST_REQUIRE(report.notes.size() == 1u);
    BOOST_TEST(report.notes[0].find("node0 used 1 of its 2 GPUs") != std::string::npos);
    BOOST_TEST(report.notes[0].find("--launch gpu") != std::string::npos);
    // The same run launched per GPU says nothing.
    RecordingSink gpuSink;
    sim::Simulation perGpu(Options(), log, gpuSink);
    perGpu.Join(Hello("rank0", 0, 1));
    perGpu.Batch(0, ChainBatch(1, 0, 1, {}, 0, 10, 10));
    perGpu.Sync(0, 1, SyncOn(1, {1}, 1, 0));
    BOOST_TEST(perGpu.Report(0).notes.empty());
}

BOOST_AUTO_TEST_CASE(the_shares_count_from_the_stats_window)
{
    // Kernels on one stream: [0, 10], [10, 30], then [50, 60] (ready at 50). Shares from 20 ns:
    // compute is [20, 30] and [50, 60] = 20 ns, idle the rest of [20, 60] = 20 ns; the end stays
    // 60 ns. The table divides by the 40 ns from 20 on: 50.0% and 50.0%.
    std::ostringstream log;
    RecordingSink sink;
    sim::SimOptions options = Options();
    options.statsFromNs = 20;
    sim::Simulation simulation(options, log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    simulation.Batch(0, ChainBatch(1, 0, 1, {}, 0, 10, 10));
    simulation.Batch(0, ChainBatch(2, 0, 2, {1}, 0, 20, 20));
    simulation.Batch(0, ChainBatch(3, 0, 3, {2}, 50, 10, 60));
    simulation.Sync(0, 1, SyncOn(1, {3}, 3, 0));
    BOOST_TEST(sink.syncs.at(0).second.ends(0).end_ns() == 60);
    sim::RunReport report = simulation.Report(0);
    const sim::GpuReport& gpu = report.gpus.at(0);
    BOOST_TEST(gpu.endNs == 60);
    BOOST_TEST(gpu.computeNs == 20);
    BOOST_TEST(gpu.commNs == 0);
    BOOST_TEST(gpu.idleNs == 20);
    BOOST_TEST(report.statsFromNs == 20);
    std::ostringstream table;
    sim::PrintSummaryTable(report, table);
    BOOST_TEST(table.str().find("50.0%") != std::string::npos);
    BOOST_TEST(table.str().find("shares from") != std::string::npos);
    BOOST_TEST(report.slices.size() == 3u); // the trace keeps them all
}

BOOST_AUTO_TEST_CASE(ended_records_are_retired_by_block_and_their_ends_stay)
{
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(Options(), log, sink);
    simulation.Join(Hello("rank0", 0, 1));
    // Records 1..n on one stream, each waiting on the one before and taking 1 ns from t = 0:
    // record k ends at k ns. Two whole blocks and a few more: both blocks end entirely.
    const uint64_t block = sim::RankTimelines::kBlockSize;
    const uint64_t n = 2 * block + 10;
    uint64_t seq = 1;
    for (uint64_t k = 1; k <= n; ++k)
    {
        simulation.Batch(
            0, ChainBatch(seq++, 0, k,
                          k > 1 ? std::vector<uint64_t>{k - 1} : std::vector<uint64_t>{}, 0, 1, 0));
    }
    // The first two blocks retire at the next record: record n + 1 waits on record 5 (retired),
    // ready at 0: it starts at 5 and ends at 5 + 2 = 7.
    simulation.Batch(0, ChainBatch(seq, 0, n + 1, {5}, 0, 2, 0));
    BOOST_TEST(simulation.RecordsRetired() == 2 * block);
    BOOST_TEST(simulation.RecordEndNs(0, 5) == 5.0);
    BOOST_TEST(simulation.RecordEndNs(0, block + 1) == double(block + 1));
    // A sync on retired and live records is answered with their ids and ends.
    simulation.Sync(0, 1, SyncOn(9, {3, n, n + 1}, seq, 0));
    BOOST_REQUIRE(sink.syncs.size() == 1u);
    const wire::SyncReply& reply = sink.syncs[0].second;
    BOOST_TEST(reply.ends(0).op() == 3u);
    BOOST_TEST(reply.ends(0).end_ns() == 3.0);
    BOOST_TEST(reply.ends(1).op() == n);
    BOOST_TEST(reply.ends(1).end_ns() == double(n));
    BOOST_TEST(reply.ends(2).op() == n + 1);
    BOOST_TEST(reply.ends(2).end_ns() == 7.0);
}

namespace
{
// One point-to-point record on communicator 5 (joined in the process's first batch).
void
AddP2p(wire::Batch& batch, int rank, uint64_t id, uint64_t stream, wire::CommOpKind kind,
       uint64_t bytes, double ready)
{
    wire::Communication* c = batch.add_records()->mutable_communication();
    c->set_id(id);
    c->set_device(rank);
    c->set_stream(stream);
    c->set_comm(5);
    c->set_comm_rank(rank);
    c->set_comm_size(2);
    c->set_ready_ns(ready);
    wire::CommOp* op = c->add_ops();
    op->set_kind(kind);
    op->set_count(bytes);
    op->set_type_size(1);
    op->set_peer(1 - rank);
}

wire::Batch
JoinBatch(int rank, double clock)
{
    wire::Batch batch;
    batch.set_seq(1);
    batch.set_clock_ns(clock);
    wire::CommJoin* join = batch.add_records()->mutable_comm_join();
    join->set_comm(5);
    join->set_nranks(2);
    join->set_rank(rank);
    join->set_device(rank);
    return batch;
}
} // namespace

// A communication record reports its slice from its own start when it ends. GPU 0 here: a send
// (stream 1) posted at 0 whose receive comes at 2 ms, and a small receive (stream 2) that ends
// at e, far earlier. Its communication time is the union [0, E] of [0, E] and [0, e]: E, the
// send's end. (Folding covered time by the horizon closed [0, e] at 1 ms, before the send's slice
// came, and counted e twice: where the fold fell depended on the wall-clock interleaving, so
// comm_ns moved from run to run.)
BOOST_AUTO_TEST_CASE(communication_time_is_the_union_however_the_horizon_moved)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    wire::Batch rank0 = JoinBatch(0, 0);
    AddP2p(rank0, 0, 1, 1, wire::COMM_SEND, 1 << 20, 0);
    AddP2p(rank0, 0, 2, 2, wire::COMM_RECV, 1024, 0);
    simulation.Batch(0, rank0);
    wire::Batch rank1 = JoinBatch(1, 0);
    AddP2p(rank1, 1, 1, 2, wire::COMM_SEND, 1024, 0);
    simulation.Batch(1, rank1);
    // Both clocks at 1 ms: ns-3 runs there, the small transfer ends on the way.
    wire::Batch kernel0 = ChainBatch(2, 1e6, 3, {}, 1e6, 10, 0);
    simulation.Batch(0, kernel0);
    wire::Batch kernel1 = ChainBatch(2, 1e6, 2, {}, 1e6, 10, 0);
    kernel1.mutable_records(0)->mutable_chain()->set_device(1);
    simulation.Batch(1, kernel1);
    simulation.Step();
    // Rank 1 receives the megabyte at 2 ms; both ranks then wait for their records.
    wire::Batch late = JoinBatch(1, 2e6);
    late.set_seq(3);
    late.clear_records();
    AddP2p(late, 1, 3, 1, wire::COMM_RECV, 1 << 20, 2e6);
    simulation.Batch(1, late);
    simulation.Sync(0, 1, SyncOn(1, {1, 2}, 2, 1e6));
    simulation.Sync(1, 2, SyncOn(2, {3}, 3, 2e6));
    for (int i = 0; i < 10 && run.sink.syncs.size() < 2; ++i)
    {
        simulation.Step();
    }
    BOOST_REQUIRE(run.sink.syncs.size() == 2u);
    const wire::SyncReply& ends = run.sink.syncs[0].second; // rank 0's: the send, the receive
    const double sendEnd = ends.ends(0).end_ns();
    const double recvEnd = ends.ends(1).end_ns();
    BOOST_TEST(recvEnd < 1e6);
    BOOST_TEST(sendEnd > 2e6);
    const sim::RunReport report = simulation.Report(1.0);
    BOOST_TEST(report.gpus.at(0).commNs == sendEnd);
}

// What the links carried (summary.json "links"): 64 MiB from GPU 0 to GPU 1 crosses
// n0/gpu0->n0/nvswitch and n0/nvswitch->n0/gpu1 (two-gpus.yaml: 100 GB/s, 500 ns each), and
// nothing the other way. Each carries the same wire bytes: at least the payload (NVLink's packet
// overhead and NCCL's chunking add to it), at most the link's rate over the time it was busy,
// which is no longer than the send.
BOOST_AUTO_TEST_CASE(each_link_counts_the_bytes_and_busy_time_of_its_flows)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    wire::Batch rank0 = JoinBatch(0, 0);
    AddP2p(rank0, 0, 1, 1, wire::COMM_SEND, 64 << 20, 0);
    simulation.Batch(0, rank0);
    wire::Batch rank1 = JoinBatch(1, 0);
    AddP2p(rank1, 1, 1, 1, wire::COMM_RECV, 64 << 20, 0);
    simulation.Batch(1, rank1);
    simulation.Sync(0, 1, SyncOn(1, {1}, 1, 0));
    simulation.Sync(1, 2, SyncOn(1, {1}, 1, 0));
    for (int i = 0; i < 10 && run.sink.syncs.size() < 2; ++i)
    {
        simulation.Step();
    }
    BOOST_REQUIRE(run.sink.syncs.size() == 2u);
    const double sendEnd = run.sink.syncs[0].second.ends(0).end_ns();
    const sim::RunReport report = simulation.Report(1.0);
    BOOST_REQUIRE(report.links.size() == 2u);
    BOOST_TEST(report.links[0].name == "n0/gpu0->n0/nvswitch");
    BOOST_TEST(report.links[1].name == "n0/nvswitch->n0/gpu1");
    for (const sim::LinkReport& link : report.links)
    {
        BOOST_TEST(link.bytes >= double(64 << 20));
        BOOST_TEST(link.bandwidthBytesPerS == 100e9);
        BOOST_TEST(link.flows >= 1u);
        BOOST_TEST(link.busyNs <= sendEnd);
        BOOST_TEST(link.bytes / link.busyNs <= 100.0 * (1 + 1e-9)); // bytes per ns = GB/s
    }
    BOOST_TEST(report.links[0].bytes == report.links[1].bytes);
    BOOST_TEST(report.links[0].flows == report.links[1].flows);
    BOOST_TEST(report.notes.empty());
}

// RunEvents with an interrupt check (what `eidolon run --model packet` sets, reading the stop
// signal): ns-3 asks the check every 10 us of simulated time while other events are pending.
// A flag raised by an event at 35 us, as the signal handler raises it, stops the run at the
// first poll after it, 40 us: the events at 1-40 us ran (the one at 40 us was scheduled before
// that poll), the rest are left, and the stop counts as one of ours. Without a raised flag every
// event runs and the polls end with them: they never keep an empty queue running.
BOOST_AUTO_TEST_CASE(an_interrupt_check_stops_a_long_run_of_events)
{
    bool raised = false;
    sim::SetInterruptCheck([&raised] { return raised; }, ns3::MicroSeconds(10));
    for (bool raise : {true, false})
    {
        raised = false;
        int ran = 0;
        for (int us = 1; us <= 100; ++us)
        {
            ns3::Simulator::Schedule(ns3::MicroSeconds(us), [&ran] { ++ran; });
        }
        if (raise)
        {
            ns3::Simulator::Schedule(ns3::NanoSeconds(35000), [&raised] { raised = true; });
        }
        sim::ClearStopRequest();
        sim::RunEvents();
        BOOST_TEST(sim::StopRequested() == raise);
        BOOST_TEST(ns3::Simulator::Now() == ns3::MicroSeconds(raise ? 40 : 100));
        BOOST_TEST(ran == (raise ? 40 : 100));
        ns3::Simulator::Destroy();
    }
    sim::SetInterruptCheck(nullptr, ns3::Time());
}

// A Broadcast's root goes on before its receiver has started (NCCL's chain: the root's kernel
// ends once its data is in the next rank's FIFO). Two GPUs of two-gpus.yaml (1 us path, NCCL
// 2.30.7): the root issues an 8-byte broadcast ready at 0; rank 1's GPU is busy with a kernel
// until 1 ms, then receives. The root is done at LL's base 6.6 us + the hop's 1 us path (above
// NCCL's 0.6 us NVLink figure) + 8 bytes at the CTA's rate (under 10 ns): its sync is answered
// while rank 1 is still busy. Rank 1 is done at 1 ms + its own 6.6 us base (the data landed long
// before). Before, both ended together after 1 ms.
BOOST_AUTO_TEST_CASE(a_broadcast_root_goes_on_before_its_receiver_has_started)
{
    TwoRankRun run;
    sim::Simulation& simulation = run.simulation;
    auto broadcast = [](wire::Batch& batch, int rank, uint64_t id, std::vector<uint64_t> deps)
    {
        AddP2p(batch, rank, id, 1, wire::COMM_BROADCAST, 8, 0);
        wire::Communication* c =
            batch.mutable_records(batch.records_size() - 1)->mutable_communication();
        c->mutable_ops(0)->set_peer(-1);
        c->mutable_ops(0)->set_root(0);
        for (uint64_t dep : deps)
        {
            c->add_deps(dep);
        }
    };
    wire::Batch rank0 = JoinBatch(0, 0);
    broadcast(rank0, 0, 1, {});
    simulation.Batch(0, rank0);
    wire::Batch rank1 = JoinBatch(1, 0);
    wire::Chain* busy = rank1.add_records()->mutable_chain();
    busy->set_id(1);
    busy->set_device(1);
    busy->set_stream(1);
    busy->set_ready_ns(0);
    busy->set_a_ns(1e6);
    busy->set_b_ns(0);
    busy->set_busy_ns(1e6);
    busy->set_count(1);
    busy->set_label("kernel");
    broadcast(rank1, 1, 2, {1});
    simulation.Batch(1, rank1);
    simulation.Sync(0, 1, SyncOn(1, {1}, 1, 0)); // peer 1: rank 0
    simulation.Sync(1, 2, SyncOn(2, {2}, 1, 0)); // peer 2: rank 1
    for (int i = 0; i < 10 && run.sink.syncs.empty(); ++i)
    {
        simulation.Step();
    }
    // The root's answer comes alone: rank 1's end is after 1 ms, and the root, running again
    // from its end, holds the horizon there until it leaves.
    BOOST_REQUIRE(run.sink.syncs.size() == 1u);
    BOOST_TEST(run.sink.syncs[0].first == sim::Peer(1));
    const double rootEnd = run.sink.syncs[0].second.ends(0).end_ns();
    BOOST_TEST(rootEnd >= 7600.0);
    BOOST_TEST(rootEnd <= 7610.0);
    wire::Goodbye goodbye;
    goodbye.set_after_batch(1);
    goodbye.set_clock_ns(rootEnd);
    simulation.Goodbye(0, 9, goodbye);
    for (int i = 0; i < 10 && run.sink.syncs.size() < 3; ++i)
    {
        simulation.Step();
    }
    BOOST_REQUIRE(run.sink.syncs.size() == 3u); // the goodbye's acknowledgement, then rank 1's
    BOOST_TEST(run.sink.syncs[2].first == sim::Peer(2));
    BOOST_TEST(run.sink.syncs[2].second.ends(0).end_ns() == 1e6 + 6600.0);
    BOOST_TEST(run.sink.failures.empty());
}

// NCCL_ALGO=Tree leaves a Broadcast nothing (NCCL broadcasts on rings only), and NCCL 2.30 fails
// such a call. The rank went on already, so the model runs it as NCCL's own choice, and the
// simulator says so once per function however many such calls come; an AllReduce under the same
// setting runs Tree and is not mentioned.
BOOST_AUTO_TEST_CASE(a_call_nccl_fails_for_its_nccl_algo_is_said_once_and_still_runs)
{
    sim::SimOptions options = Options();
    options.ncclEnvironment = {{"NCCL_ALGO", "Tree"}};
    std::ostringstream log;
    RecordingSink sink;
    sim::Simulation simulation(options, log, sink);
    simulation.Join(Hello("rank0", 0, 2));
    simulation.Join(Hello("rank1", 1, 2));
    for (int rank : {0, 1})
    {
        wire::Batch batch = JoinBatch(rank, 0);
        for (uint64_t id : {1, 2})
        {
            AddP2p(batch, rank, id, 1, wire::COMM_BROADCAST, 4096, 0);
            wire::CommOp* op = batch.mutable_records(batch.records_size() - 1)
                                   ->mutable_communication()
                                   ->mutable_ops(0);
            op->set_peer(-1);
            op->set_root(0);
        }
        AddP2p(batch, rank, 3, 1, wire::COMM_ALL_REDUCE, 4096, 0);
        batch.mutable_records(batch.records_size() - 1)
            ->mutable_communication()
            ->mutable_ops(0)
            ->set_peer(-1);
        simulation.Batch(rank, batch);
    }
    simulation.Sync(0, 1, SyncOn(1, {3}, 1, 0));
    simulation.Sync(1, 2, SyncOn(2, {3}, 1, 0));
    for (int i = 0; i < 20 && sink.syncs.size() < 2; ++i)
    {
        simulation.Step();
    }
    BOOST_REQUIRE(sink.syncs.size() == 2u);
    BOOST_TEST(sink.syncs[0].second.ends(0).end_ns() > 0.0);
    const std::string text = log.str();
    const std::string said = "NCCL_ALGO='Tree' leaves Broadcast no algorithm/protocol";
    const size_t first = text.find(said);
    BOOST_TEST(first != std::string::npos, text);
    BOOST_TEST(text.find(said, first + 1) == std::string::npos, text);
    BOOST_TEST(text.find("ncclInvalidUsage") != std::string::npos, text);
    BOOST_TEST(text.find("AllReduce") == std::string::npos, text);
    BOOST_TEST(sink.failures.empty());
}

// A group's collectives on one stream come as one record of several operations: every rank's
// record must hold the same operations, and the group runs as one kernel (one latency), so it
// ends before the same two all-reduces issued one after the other.
BOOST_AUTO_TEST_CASE(a_group_record_is_one_call_of_several_collectives)
{
    auto run = [](bool grouped, bool mismatched)
    {
        std::ostringstream log;
        RecordingSink sink;
        sim::Simulation simulation(Options(), log, sink);
        simulation.Join(Hello("rank0", 0, 2));
        simulation.Join(Hello("rank1", 1, 2));
        double end = -1;
        for (int rank : {0, 1})
        {
            wire::Batch batch = JoinBatch(rank, 0);
            AddP2p(batch, rank, 1, 1, wire::COMM_ALL_REDUCE, 4096, 0);
            wire::Communication* c =
                batch.mutable_records(batch.records_size() - 1)->mutable_communication();
            c->mutable_ops(0)->set_peer(-1);
            if (grouped && !(mismatched && rank == 1))
            {
                *c->add_ops() = c->ops(0);
            }
            else if (!grouped)
            {
                AddP2p(batch, rank, 2, 1, wire::COMM_ALL_REDUCE, 4096, 0);
                wire::Communication* second =
                    batch.mutable_records(batch.records_size() - 1)->mutable_communication();
                second->mutable_ops(0)->set_peer(-1);
                second->add_deps(1);
            }
            if (mismatched && rank == 1)
            {
                BOOST_CHECK_EXCEPTION(simulation.Batch(rank, batch), sim::ProgramError,
                                      [](const sim::ProgramError& e) {
                                          return std::string(e.what()).find(
                                                     "mismatched NCCL calls") != std::string::npos;
                                      });
                return end;
            }
            simulation.Batch(rank, batch);
        }
        const uint64_t last = grouped ? 1 : 2;
        simulation.Sync(0, 1, SyncOn(1, {last}, 1, 0));
        simulation.Sync(1, 2, SyncOn(2, {last}, 1, 0));
        for (int i = 0; i < 20 && sink.syncs.size() < 2; ++i)
        {
            simulation.Step();
        }
        BOOST_REQUIRE(sink.syncs.size() == 2u);
        BOOST_TEST(sink.syncs[0].second.ends(0).end_ns() == sink.syncs[1].second.ends(0).end_ns());
        BOOST_TEST(sink.failures.empty());
        end = sink.syncs[0].second.ends(0).end_ns();
        return end;
    };
    const double grouped = run(true, false);
    const double apart = run(false, false);
    BOOST_TEST(grouped > 0.0);
    BOOST_TEST(grouped < apart, grouped << " ns grouped, " << apart << " ns apart");
    run(true, true);
}
