// eidolon-sim's endpoint (bridge/server) and the simulator core behind it, without a socket:
// messages go in through SimEndpoint::Deliver, as the ROUTER would hand them over. Expected times
// are worked out by hand in the comments.
#define BOOST_TEST_MODULE sim_endpoint
#include "sim-endpoint.h"
#include "wire-version.h"

#include "ns3/nstime.h"

#include <boost/test/unit_test.hpp>

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
