// eidolon-sim's endpoint (bridge/server) and the simulator core behind it, without a socket:
// messages go in through SimEndpoint::Deliver, as the ROUTER would hand them over. Expected times
// are worked out by hand in the comments.
#define BOOST_TEST_MODULE sim_endpoint
#include "sim-endpoint.h"
#include "wire-version.h"

#include "ns3/nstime.h"

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>

using namespace eidolon;

namespace
{

struct PicosecondClock
{
    PicosecondClock() { ns3::Time::SetResolution(ns3::Time::PS); }
};
BOOST_TEST_GLOBAL_FIXTURE(PicosecondClock);

sim::SimOptions
Options()
{
    sim::SimOptions options;
    options.topologyPath = EIDOLON_BRIDGE_TEST_DIR "/two-gpus.yaml";
    options.watchdogSeconds = 0;
    return options;
}

std::string
Bytes(const wire::Envelope& envelope)
{
    std::string out;
    envelope.SerializeToString(&out);
    return out;
}

wire::Envelope
Envelope()
{
    wire::Envelope e;
    e.set_protocol_version(wire::kProtocolVersion);
    return e;
}

// Process `name` (world rank `rank`, one device on node 0... as the two-gpus topology has it).
std::string
Hello(const std::string& name, int rank, int worldSize)
{
    wire::Envelope e = Envelope();
    wire::Hello* h = e.mutable_hello();
    h->set_name(name);
    h->set_world_rank(rank);
    h->set_world_size(worldSize);
    h->set_node(0);
    h->set_num_devices(2);
    h->set_process_token(name);
    return Bytes(e);
}

struct BatchBuilder
{
    wire::Envelope envelope = Envelope();
    explicit BatchBuilder(uint64_t seq, double clock)
    {
        envelope.mutable_batch()->set_seq(seq);
        envelope.mutable_batch()->set_clock_ns(clock);
    }
    wire::Chain* Chain(uint64_t id, int device, std::initializer_list<uint64_t> deps, double ready,
                       double a, double b)
    {
        wire::Chain* c = envelope.mutable_batch()->add_records()->mutable_chain();
        c->set_id(id);
        c->set_device(device);
        c->set_stream(1);
        for (uint64_t d : deps)
        {
            c->add_deps(d);
        }
        c->set_ready_ns(ready);
        c->set_a_ns(a);
        c->set_b_ns(b);
        c->set_busy_ns(a);
        c->set_count(1);
        c->set_label("kernel");
        return c;
    }
    void Join(uint64_t comm, int nranks, int rank, int device)
    {
        wire::CommJoin* j = envelope.mutable_batch()->add_records()->mutable_comm_join();
        j->set_comm(comm);
        j->set_nranks(nranks);
        j->set_rank(rank);
        j->set_device(device);
    }
    wire::Communication* Comm(uint64_t id, int device, double ready, uint64_t comm, int rank,
                              int nranks, wire::CommOpKind kind, uint64_t count, int peer = -1)
    {
        wire::Communication* c = envelope.mutable_batch()->add_records()->mutable_communication();
        c->set_id(id);
        c->set_device(device);
        c->set_stream(1);
        c->set_ready_ns(ready);
        c->set_comm(comm);
        c->set_comm_rank(rank);
        c->set_comm_size(nranks);
        wire::CommOp* op = c->add_ops();
        op->set_kind(kind);
        op->set_count(count);
        op->set_dtype(7); // ncclFloat
        op->set_type_size(4);
        op->set_redop(0);
        op->set_root(-1);
        op->set_peer(peer);
        return c;
    }
    std::string Bytes() const { return ::Bytes(envelope); }
};

void
Settle(bridge::SimEndpoint& server)
{
    std::vector<zmq::pollitem_t> none;
    for (int i = 0; i < 5; ++i)
    {
        server.Step(std::chrono::milliseconds(0), none);
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(chains_fold_and_propagate)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 1));
    BatchBuilder batch(1, 0);
    // Record 1: no dependencies, ready at 10 ns; the folded chain ends at max(s + 5, 20) = 20.
    batch.Chain(1, 0, {}, 10, 5, 20);
    // Record 2 waits on record 1: starts at max(0, 20) = 20, ends at max(20 + 3, -inf) = 23.
    batch.Chain(2, 0, {1}, 0, 3, -1e300);
    // Record 3 waits on record 2 but is not ready before 100: ends at max(100 + 7, 0) = 107.
    batch.Chain(3, 0, {2}, 100, 7, 0);
    server.Deliver("p0", batch.Bytes());
    BOOST_TEST(simulation.RecordEndNs(0, 1) == 20.0);
    BOOST_TEST(simulation.RecordEndNs(0, 2) == 23.0);
    BOOST_TEST(simulation.RecordEndNs(0, 3) == 107.0);
    BOOST_TEST(log.str().empty());
}

BOOST_AUTO_TEST_CASE(batches_from_two_threads_are_put_back_in_order)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 1));
    wire::Envelope thread = Envelope();
    thread.mutable_thread_hello()->set_process_token("rank0");
    server.Deliver("p0-thread2", Bytes(thread));
    BatchBuilder second(2, 50);
    second.Chain(2, 0, {1}, 0, 4, 0); // waits on record 1, which the first batch carries
    BatchBuilder first(1, 10);
    first.Chain(1, 0, {}, 10, 6, 0);
    server.Deliver("p0-thread2", second.Bytes()); // overtakes the first batch
    BOOST_TEST(simulation.RecordEndNs(0, 2) == -1.0);
    server.Deliver("p0", first.Bytes());
    // 1: [10, 16]; 2: [16, 20]
    BOOST_TEST(simulation.RecordEndNs(0, 1) == 16.0);
    BOOST_TEST(simulation.RecordEndNs(0, 2) == 20.0);
}

BOOST_AUTO_TEST_CASE(malformed_and_old_protocol_messages_get_errors_and_the_run_goes_on)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("junk", std::string("\xff\xff\xff garbage", 12));
    BOOST_TEST(log.str().find("malformed message (12 bytes)") != std::string::npos);
    wire::Envelope old = Envelope();
    old.set_protocol_version(0);
    old.mutable_hello()->set_name("old");
    server.Deliver("old", Bytes(old));
    BOOST_TEST(log.str().find("bridge protocol version 0 is not supported") != std::string::npos);
    // A batch before Hello names what is wrong.
    server.Deliver("stranger", BatchBuilder(1, 0).Bytes());
    BOOST_TEST(log.str().find("has not said Hello") != std::string::npos);
    // A record that waits on a record never sent.
    server.Deliver("p0", Hello("rank0", 0, 1));
    BatchBuilder bad(1, 0);
    bad.Chain(5, 0, {4}, 0, 1, 0);
    server.Deliver("p0", bad.Bytes());
    BOOST_TEST(log.str().find("record 5 waits on unknown record 4") != std::string::npos);
    BOOST_TEST(!simulation.Failed());
    // The process is still served.
    BatchBuilder good(2, 0);
    good.Chain(6, 0, {}, 1, 1, 0);
    server.Deliver("p0", good.Bytes());
    BOOST_TEST(simulation.RecordEndNs(0, 6) == 2.0);
}

BOOST_AUTO_TEST_CASE(mismatched_collectives_name_both_calls)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 2));
    server.Deliver("p1", Hello("rank1", 1, 2));
    BatchBuilder b0(1, 0);
    b0.Join(42, 2, 0, 0);
    b0.Comm(1, 0, 100, 42, 0, 2, wire::COMM_ALL_REDUCE, 1000);
    BatchBuilder b1(1, 0);
    b1.Join(42, 2, 1, 1);
    b1.Comm(1, 1, 100, 42, 1, 2, wire::COMM_ALL_REDUCE, 2000);
    server.Deliver("p0", b0.Bytes());
    server.Deliver("p1", b1.Bytes());
    std::string text = log.str();
    BOOST_TEST(simulation.Failed()); // the run ends: a real cluster would hang or corrupt data
    BOOST_TEST(text.find("mismatched NCCL calls at collective #0") != std::string::npos);
    BOOST_TEST(text.find("rank0 (comm rank 0 of 2, device 0): AllReduce(count 1000") !=
               std::string::npos);
    BOOST_TEST(text.find("rank1 (comm rank 1 of 2, device 1): AllReduce(count 2000") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_network_never_runs_past_a_running_rank)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 2));
    server.Deliver("p1", Hello("rank1", 1, 2));
    BatchBuilder b0(1, 5000);
    b0.Join(7, 2, 0, 0);
    b0.Comm(1, 0, 1000, 7, 0, 2, wire::COMM_SEND, 1 << 20, 1);
    BatchBuilder b1(1, 2000);
    b1.Join(7, 2, 1, 1);
    b1.Comm(1, 1, 1000, 7, 1, 2, wire::COMM_RECV, 1 << 20, 0);
    server.Deliver("p0", b0.Bytes());
    server.Deliver("p1", b1.Bytes());
    Settle(server);
    // rank1 is running at 2000 ns: nothing at or after 2000 ns is simulated yet, and 4 MiB take
    // tens of microseconds, so the transfer is not done.
    BOOST_TEST(simulation.SimulatedNs() < 2000.0);
    BOOST_TEST(simulation.RecordEndNs(1, 1) == -1.0);
    // Both ranks wait for their records: the horizon is gone and the transfer completes.
    for (auto [id, process] : {std::pair<const char*, int>{"p0", 0}, {"p1", 1}})
    {
        wire::Envelope sync = Envelope();
        sync.mutable_sync()->set_request(1);
        sync.mutable_sync()->add_ops(1);
        sync.mutable_sync()->set_after_batch(1);
        sync.mutable_sync()->set_clock_ns(process == 0 ? 5000 : 2000);
        sync.mutable_sync()->set_driving_threads(1);
        sync.mutable_sync()->set_what("cudaStreamSynchronize");
        server.Deliver(id, Bytes(sync));
    }
    Settle(server);
    double end0 = simulation.RecordEndNs(0, 1);
    double end1 = simulation.RecordEndNs(1, 1);
    // 4 MiB over 100 GB/s is 41.94 us: both ends lie beyond start + size / bandwidth.
    BOOST_TEST(end0 >= 1000.0 + 4194304.0 / 100.0);
    BOOST_TEST(end1 >= 1000.0 + 4194304.0 / 100.0);
    BOOST_TEST(!simulation.Failed());
}

BOOST_AUTO_TEST_CASE(a_collective_nobody_else_joins_is_a_named_deadlock)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 2));
    server.Deliver("p1", Hello("rank1", 1, 2));
    BatchBuilder b0(1, 10);
    b0.Join(9, 2, 0, 0);
    b0.Comm(1, 0, 10, 9, 0, 2, wire::COMM_ALL_REDUCE, 256);
    BatchBuilder b1(1, 10);
    b1.Join(9, 2, 1, 1);
    server.Deliver("p0", b0.Bytes());
    server.Deliver("p1", b1.Bytes());
    wire::Envelope sync = Envelope();
    sync.mutable_sync()->set_request(1);
    sync.mutable_sync()->add_ops(1);
    sync.mutable_sync()->set_after_batch(1);
    sync.mutable_sync()->set_driving_threads(1);
    sync.mutable_sync()->set_what("cudaStreamSynchronize(stream 1)");
    server.Deliver("p0", Bytes(sync));
    wire::Envelope bye = Envelope();
    bye.mutable_goodbye()->set_after_batch(1);
    server.Deliver("p1", Bytes(bye)); // rank1 leaves without the all-reduce
    Settle(server);
    BOOST_TEST(simulation.Failed());
    BOOST_TEST(simulation.Error().find("deadlock") != std::string::npos);
    BOOST_TEST(simulation.Error().find("rank0: blocked in cudaStreamSynchronize(stream 1)") !=
               std::string::npos);
    BOOST_TEST(simulation.Error().find("never joined by rank1(comm rank 1)") != std::string::npos);
}

// A message of two frames (the bridge sends one) gets an error reply, and the endpoint goes on
// serving: the Hello sent right after it is welcomed. Before the fix, draining the extra frames
// tested the first frame's more flag, so the endpoint blocked in recv for good and swallowed the
// Hello (this test then hung until ctest's timeout).
BOOST_AUTO_TEST_CASE(a_multi_frame_message_is_refused_and_the_endpoint_keeps_serving)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("eidolon-frames-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::string address = "ipc://" + (dir / "sim.sock").string();
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), address, log);
    zmq::context_t context;
    zmq::socket_t rank(context, zmq::socket_type::dealer);
    rank.set(zmq::sockopt::linger, 0);
    rank.connect(address);
    rank.send(zmq::str_buffer("first"), zmq::send_flags::sndmore);
    rank.send(zmq::str_buffer("second"), zmq::send_flags::none);
    std::string hello = Hello("rank0", 0, 1);
    rank.send(zmq::buffer(hello), zmq::send_flags::none);
    std::vector<wire::Envelope> replies;
    std::vector<zmq::pollitem_t> none;
    // Each Step waits at most 50 ms; 200 turns bound the test without depending on speed.
    for (int turn = 0; turn < 200 && replies.size() < 2; ++turn)
    {
        server.Step(std::chrono::milliseconds(50), none);
        zmq::message_t reply;
        while (rank.recv(reply, zmq::recv_flags::dontwait))
        {
            replies.emplace_back();
            BOOST_REQUIRE(replies.back().ParseFromArray(reply.data(), int(reply.size())));
        }
    }
    BOOST_REQUIRE(replies.size() == 2u);
    BOOST_TEST(replies[0].has_error());
    BOOST_TEST(replies[0].error().message().find("malformed message (2 frames)") !=
               std::string::npos);
    BOOST_TEST(!replies[0].error().fatal());
    BOOST_TEST(replies[1].has_welcome());
    fs::remove_all(dir);
}

// Counts a peer claims are checked against the run (two GPUs here) before anything is sized by
// them. Before the checks, each of these was accepted: world_size 1e7 made the run wait for ten
// million processes, num_devices 1e7 a 100 MB Welcome, nranks 1e7 a 1.3 GB communicator.
BOOST_AUTO_TEST_CASE(hello_counts_beyond_the_topology_are_refused_naming_the_field)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("big-world", Hello("rank0", 0, 10000000));
    BOOST_TEST(log.str().find("Hello.world_size 10000000: the topology has 2 GPUs") !=
               std::string::npos);
    wire::Envelope devices = Envelope();
    devices.mutable_hello()->set_name("many-devices");
    devices.mutable_hello()->set_world_rank(0);
    devices.mutable_hello()->set_num_devices(10000000);
    server.Deliver("many-devices", Bytes(devices));
    // The bound is the topology's GPUs or 64, whichever is more: 64 here.
    BOOST_TEST(log.str().find("Hello.num_devices 10000000: must be 0 to 64") != std::string::npos);
    server.Deliver("far-rank", Hello("rank7", 7, 2));
    BOOST_TEST(log.str().find("Hello.world_rank 7: must be below 2") != std::string::npos);
    BOOST_TEST(simulation.Connected() == 0);
    BOOST_TEST(!simulation.Failed());
}

// A communicator of more ranks than the topology has GPUs is the program's error (NCCL's
// "Duplicate GPU detected"; typically nccl-tests -g 8 started one process per GPU): the run ends
// at once, naming the process and the way out, rather than dropping the batch and waiting for the
// watchdog. 1e7 ranks allocate nothing on the way.
BOOST_AUTO_TEST_CASE(a_communicator_larger_than_the_cluster_ends_the_run)
{
    for (int nranks : {3, 10000000})
    {
        std::ostringstream log;
        bridge::SimEndpoint server(Options(), "", log);
        sim::Simulation& simulation = server.Simulation();
        server.Deliver("p0", Hello("rank0", 0, 1));
        BatchBuilder join(1, 0);
        join.Join(5, nranks, 0, 0);
        server.Deliver("p0", join.Bytes());
        BOOST_TEST(simulation.Failed());
        const std::string expected = "rank0 joins a communicator of " + std::to_string(nranks) +
                                     " ranks, but the topology has 2 GPUs";
        BOOST_TEST(simulation.Error().find(expected) != std::string::npos, simulation.Error());
        BOOST_TEST(simulation.Error().find("--launch node") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(communicator_sizes_beyond_the_topology_are_refused_naming_the_field)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 1));
    BatchBuilder join(1, 0);
    join.Join(5, 0, 0, 0);
    server.Deliver("p0", join.Bytes());
    BOOST_TEST(log.str().find("CommJoin.nranks 0: must be 1 to 2") != std::string::npos);
    BatchBuilder call(1, 0); // batch 1 was refused whole: it is still the one expected
    call.Join(6, 2, 0, 0);
    call.Comm(1, 0, 0, 6, 0, 10000000, wire::COMM_ALL_REDUCE, 4);
    server.Deliver("p0", call.Bytes());
    BOOST_TEST(log.str().find("Communication.comm_size 10000000: must be 1 to 2") !=
               std::string::npos);
    BatchBuilder rank(1, 0);
    rank.Join(6, 2, 2, 0);
    server.Deliver("p0", rank.Bytes());
    BOOST_TEST(log.str().find("CommJoin.rank 2: must be 0 to 1 (CommJoin.nranks 2)") !=
               std::string::npos);
    BOOST_TEST(!simulation.Failed());
    // The process is still served in order.
    BatchBuilder good(1, 0);
    good.Chain(1, 0, {}, 3, 4, 0);
    server.Deliver("p0", good.Bytes());
    BOOST_TEST(simulation.RecordEndNs(0, 1) == 7.0); // ready 3 + 4
}

// Batches and requests parked on a batch far ahead were kept for good (17 GB in the report);
// now a batch or request at most 65536 batches ahead is held, and at most 1024 requests wait.
BOOST_AUTO_TEST_CASE(batches_and_requests_far_ahead_are_refused_and_held_ones_bounded)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 1));
    BatchBuilder far(1000000000000000ull, 0);
    far.Chain(1, 0, {}, 0, 1, 0);
    server.Deliver("p0", far.Bytes());
    BOOST_TEST(log.str().find("Batch.seq 1000000000000000: rank0 expects batch 1 next and "
                              "holds at most 65536 batches ahead") != std::string::npos);
    // Batch 1 + 65535 is the last one held; 1 + 65536 is refused.
    BatchBuilder last(65536, 0);
    last.Chain(2, 0, {}, 0, 1, 0);
    server.Deliver("p0", last.Bytes());
    BatchBuilder beyond(65537, 0);
    server.Deliver("p0", beyond.Bytes());
    BOOST_TEST(log.str().find("Batch.seq 65536:") == std::string::npos);
    BOOST_TEST(log.str().find("Batch.seq 65537: rank0 expects batch 1 next") != std::string::npos);
    wire::Envelope sync = Envelope();
    sync.mutable_sync()->add_ops(1);
    sync.mutable_sync()->set_driving_threads(1);
    sync.mutable_sync()->set_after_batch(1000000000000000ull);
    server.Deliver("p0", Bytes(sync));
    BOOST_TEST(log.str().find("SyncRequest.after_batch 1000000000000000: rank0 expects batch 1") !=
               std::string::npos);
    // 1024 syncs wait for batch 5; the 1025th is refused.
    sync.mutable_sync()->set_after_batch(5);
    for (int i = 0; i < 1024; ++i)
    {
        sync.mutable_sync()->set_request(uint64_t(i + 1));
        server.Deliver("p0", Bytes(sync));
    }
    BOOST_TEST(log.str().find("requests waiting") == std::string::npos);
    server.Deliver("p0", Bytes(sync));
    BOOST_TEST(log.str().find("SyncRequest.after_batch 5: rank0 already has 1024 requests "
                              "waiting for batches (at most 1024)") != std::string::npos);
    BOOST_TEST(simulation.Process(0).waitingForBatch.size() == 1024u);
    BOOST_TEST(!simulation.Failed());
}

// Found by fuzz/wire-decoder-fuzzer.cc: a batch whose clock_ns was beyond ns-3's picosecond Time
// (int64 ps: 9.2e15 ns) reached Horizon::Advance, where ToTime overflowed (signed overflow in
// ns3::Time's operator-, UBSan). Every time on the wire is now checked: finite, 0 to 1e15 ns.
BOOST_AUTO_TEST_CASE(times_beyond_the_virtual_time_range_are_refused_naming_the_field)
{
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "", log);
    sim::Simulation& simulation = server.Simulation();
    server.Deliver("p0", Hello("rank0", 0, 1));
    BatchBuilder late(1, 1e300);
    server.Deliver("p0", late.Bytes());
    BOOST_TEST(log.str().find("Batch.clock_ns 1e+300: must be 0 to 1e+15 ns") != std::string::npos);
    BatchBuilder nan(1, 0);
    nan.Chain(1, 0, {}, std::nan(""), 1, 0);
    server.Deliver("p0", nan.Bytes());
    BOOST_TEST(log.str().find("Chain.ready_ns nan: must be 0 to 1e+15 ns") != std::string::npos);
    BatchBuilder negative(1, 0);
    negative.Chain(1, 0, {}, 0, -5, 0);
    server.Deliver("p0", negative.Bytes());
    BOOST_TEST(log.str().find("Chain.a_ns -5: must be 0 to 1e+15 ns") != std::string::npos);
    wire::Envelope sync = Envelope();
    sync.mutable_sync()->set_request(1);
    sync.mutable_sync()->set_driving_threads(1);
    sync.mutable_sync()->set_clock_ns(2e15);
    server.Deliver("p0", Bytes(sync));
    BOOST_TEST(log.str().find("SyncRequest.clock_ns 2e+15: must be 0 to 1e+15 ns") !=
               std::string::npos);
    // Refused whole: batch 1 is still the one expected, and b_ns's "none" (-1e300) is accepted.
    BatchBuilder good(1, 10);
    good.Chain(1, 0, {}, 3, 4, -1e300);
    server.Deliver("p0", good.Bytes());
    Settle(server);
    BOOST_TEST(simulation.RecordEndNs(0, 1) == 7.0); // max(ready 3 + a 4, b -1e300) = 7
    BOOST_TEST(!simulation.Failed());
}

// `eidolon run` and eidolon-sim read a topology file kept anywhere, as `eidolon topo check` does:
// a copy of the shipped default.yaml (2 DGX H100 nodes of 8 GPUs) with no gpus/ beside it finds
// the shipped GPU specs. Before, it failed with "field 'gpu_specs': no GPU spec directory".
BOOST_AUTO_TEST_CASE(a_topology_kept_elsewhere_finds_the_shipped_gpu_specs)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("eidolon-elsewhere-" + std::to_string(getpid()));
    fs::create_directories(dir);
    fs::copy_file(EIDOLON_BRIDGE_TEST_DIR "/../../topologies/default.yaml", dir / "mine.yaml",
                  fs::copy_options::overwrite_existing);
    unsetenv("EIDOLON_GPU_SPECS");
    sim::SimOptions options = Options();
    options.topologyPath = (dir / "mine.yaml").string();
    std::ostringstream log;
    bridge::SimEndpoint server(options, "", log);
    BOOST_TEST(server.Simulation().GetTopology()->GpuCount() == 16u);
    fs::remove_all(dir);
}

// A tcp:// endpoint with CURVE admits the peer presenting the run's client key and no other: a
// peer with another key pair is refused in the handshake (and logged), one without CURVE never
// gets through, and neither stops the endpoint from serving.
BOOST_AUTO_TEST_CASE(a_curve_endpoint_admits_only_the_runs_key)
{
    bridge::CurveKeys keys = bridge::CurveKeys::Generate();
    std::ostringstream log;
    bridge::SimEndpoint server(Options(), "tcp://127.0.0.1:*", log, &keys);
    std::string address = server.BoundAddress();
    zmq::context_t context;
    auto dealer = [&](const std::string& publicKey, const std::string& secretKey)
    {
        auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
        socket->set(zmq::sockopt::linger, 0);
        if (!publicKey.empty())
        {
            socket->set(zmq::sockopt::curve_serverkey, keys.serverPublic);
            socket->set(zmq::sockopt::curve_publickey, publicKey);
            socket->set(zmq::sockopt::curve_secretkey, secretKey);
        }
        socket->connect(address);
        return socket;
    };
    bridge::CurveKeys other = bridge::CurveKeys::Generate();
    auto stranger = dealer(other.clientPublic, other.clientSecret);
    auto plain = dealer("", "");
    auto rank = dealer(keys.clientPublic, keys.clientSecret);
    for (auto* socket : {stranger.get(), plain.get(), rank.get()})
    {
        std::string hello = Hello(socket == rank.get() ? "rank0" : "intruder", 0, 1);
        socket->send(zmq::buffer(hello), zmq::send_flags::dontwait);
    }
    std::vector<zmq::pollitem_t> none;
    wire::Envelope welcome;
    bool answered = false;
    // Bounded (200 x 50 ms); ends when the rank is welcomed and the stranger refused.
    for (int turn = 0; turn < 200; ++turn)
    {
        server.Step(std::chrono::milliseconds(50), none);
        zmq::message_t reply;
        if (!answered && rank->recv(reply, zmq::recv_flags::dontwait))
        {
            answered = welcome.ParseFromArray(reply.data(), int(reply.size()));
        }
        if (answered && log.str().find("refused a connection") != std::string::npos)
        {
            break;
        }
    }
    BOOST_TEST(answered);
    BOOST_TEST(welcome.has_welcome());
    BOOST_TEST(log.str().find("did not present this run's CURVE key") != std::string::npos);
    zmq::message_t nothing;
    BOOST_TEST(!stranger->recv(nothing, zmq::recv_flags::dontwait));
    BOOST_TEST(!plain->recv(nothing, zmq::recv_flags::dontwait));
    BOOST_TEST(server.Simulation().Connected() == 1); // the intruders' Hellos never arrived
}

// The watchdog counts work, not messages: a rank's watchdog thread polling an event (sync
// queries) or a clock-only batch while nothing moves does not keep a stalled run alive (one rank
// looping in host code while the others wait for it ran forever); a batch with a record does.
BOOST_AUTO_TEST_CASE(polling_is_not_progress_for_the_watchdog)
{
    for (bool work : {false, true})
    {
        std::ostringstream log;
        sim::SimOptions options = Options();
        options.watchdogSeconds = 1;
        bridge::SimEndpoint server(options, "", log);
        sim::Simulation& simulation = server.Simulation();
        server.Deliver("p0", Hello("rank0", 0, 2));
        server.Deliver("p1", Hello("rank1", 1, 2));
        simulation.Step();
        uint64_t seq = 1;
        for (int i = 0; i < 15 && !simulation.Failed(); ++i)
        {
            usleep(100000);
            if (work)
            {
                BatchBuilder batch(seq, 0);
                batch.Chain(seq, 0, {}, 1, 1, 0);
                ++seq;
                server.Deliver("p0", batch.Bytes());
            }
            else
            {
                wire::Envelope query = Envelope();
                query.mutable_sync()->set_request(uint64_t(i + 1));
                query.mutable_sync()->set_query(true);
                query.mutable_sync()->set_driving_threads(1);
                server.Deliver("p0", Bytes(query));
                server.Deliver("p1", BatchBuilder(seq++, 0).Bytes()); // a clock, no record
            }
            simulation.Step();
        }
        BOOST_TEST(simulation.Failed() == !work, simulation.Error());
        if (!work)
        {
            BOOST_TEST(simulation.Error().find("watchdog: nothing progressed") == 0u,
                       simulation.Error());
        }
    }
}
