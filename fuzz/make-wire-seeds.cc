// Writes the wire fuzzer's seed corpus (fuzz/corpus/wire/): conversations a real run has, in the
// format of wire-conversation.h. Run once when the protocol changes:
//   build-fuzz/bin/make-wire-seeds fuzz/corpus/wire
#include "wire-conversation.h"
#include "wire-version.h"
#include "wire.pb.h"

#include <fstream>
#include <iostream>
#include <string>

namespace
{

using namespace eidolon;
using Conversation = std::vector<std::pair<int, std::string>>;

wire::Envelope
Envelope()
{
    wire::Envelope e;
    e.set_protocol_version(wire::kProtocolVersion);
    return e;
}

std::string
Bytes(const wire::Envelope& e)
{
    std::string out;
    e.SerializeToString(&out);
    return out;
}

std::string
Hello(int rank, int worldSize)
{
    wire::Envelope e = Envelope();
    wire::Hello* h = e.mutable_hello();
    h->set_name("rank" + std::to_string(rank));
    h->set_world_rank(rank);
    h->set_world_size(worldSize);
    h->set_node(0);
    h->set_num_devices(2);
    h->set_process_token("token" + std::to_string(rank));
    (*h->mutable_nccl_env())["NCCL_ALGO"] = "Ring";
    return Bytes(e);
}

std::string
Sync(uint64_t request, uint64_t op, uint64_t afterBatch, double clock)
{
    wire::Envelope e = Envelope();
    wire::SyncRequest* s = e.mutable_sync();
    s->set_request(request);
    s->add_ops(op);
    s->set_after_batch(afterBatch);
    s->set_clock_ns(clock);
    s->set_driving_threads(1);
    s->set_what("cudaStreamSynchronize(stream 1)");
    return Bytes(e);
}

std::string
Goodbye(uint64_t afterBatch)
{
    wire::Envelope e = Envelope();
    e.mutable_goodbye()->set_after_batch(afterBatch);
    wire::DeviceUsage* u = e.mutable_goodbye()->add_usage();
    u->set_device(0);
    u->set_peak_bytes(1 << 20);
    u->set_capacity_bytes(uint64_t(80) << 30);
    return Bytes(e);
}

// Batch 1 of `rank`: a kernel chain, a join of communicator 7 and one collective (or send/recv).
std::string
Batch(int rank, wire::CommOpKind kind)
{
    wire::Envelope e = Envelope();
    wire::Batch* b = e.mutable_batch();
    b->set_seq(1);
    b->set_clock_ns(1000);
    wire::Span* span = b->add_records()->mutable_span();
    span->set_device(rank);
    span->set_stream(1);
    span->set_start_ns(10);
    span->set_end_ns(20);
    span->set_busy_ns(10);
    span->set_count(1);
    span->set_label("memset");
    wire::CommJoin* join = b->add_records()->mutable_comm_join();
    join->set_comm(7);
    join->set_nranks(2);
    join->set_rank(rank);
    join->set_device(rank);
    wire::Communication* c = b->add_records()->mutable_communication();
    c->set_id(1);
    c->set_device(rank);
    c->set_stream(1);
    c->set_ready_ns(100);
    c->set_comm(7);
    c->set_comm_rank(rank);
    c->set_comm_size(2);
    wire::CommOp* op = c->add_ops();
    op->set_kind(kind);
    op->set_count(1 << 16);
    op->set_dtype(7);
    op->set_type_size(4);
    op->set_root(-1);
    op->set_peer(kind == wire::COMM_SEND || kind == wire::COMM_RECV ? 1 - rank : -1);
    wire::Chain* chain = b->add_records()->mutable_chain();
    chain->set_id(2);
    chain->set_device(rank);
    chain->set_stream(1);
    chain->add_deps(1);
    chain->set_ready_ns(200);
    chain->set_a_ns(50);
    chain->set_b_ns(-1e300);
    chain->set_busy_ns(50);
    chain->set_count(2);
    chain->set_label("gemm");
    chain->set_kind(wire::OP_GEMM);
    return Bytes(e);
}

std::string
Exchange(int rank)
{
    wire::Envelope e = Envelope();
    wire::ExchangeRequest* x = e.mutable_exchange();
    x->set_request(9);
    x->set_key("split:7:0");
    x->set_participants(2);
    wire::ExchangeEntry* entry = x->add_entries();
    entry->set_index(rank);
    entry->set_payload("color=0 key=" + std::to_string(rank));
    x->set_after_batch(1);
    x->set_driving_threads(1);
    x->set_what("ncclCommSplit");
    return Bytes(e);
}

void
Write(const std::string& dir, const std::string& name, const Conversation& conversation)
{
    std::ofstream(dir + "/" + name, std::ios::binary) << fuzz::JoinConversation(conversation);
}

} // namespace

int
main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::cerr << "usage: make-wire-seeds DIR\n";
        return 2;
    }
    const std::string dir = argv[1];
    for (auto [name, kind] :
         {std::pair{"allreduce", wire::COMM_ALL_REDUCE}, std::pair{"sendrecv", wire::COMM_SEND}})
    {
        wire::CommOpKind other = kind == wire::COMM_SEND ? wire::COMM_RECV : kind;
        Write(dir, name,
              {{0, Hello(0, 2)},
               {1, Hello(1, 2)},
               {0, Batch(0, kind)},
               {1, Batch(1, other)},
               {0, Sync(1, 2, 1, 2000)},
               {1, Sync(1, 2, 1, 2000)},
               {0, Goodbye(1)},
               {1, Goodbye(1)}});
    }
    wire::Envelope thread = Envelope();
    thread.mutable_thread_hello()->set_process_token("token0");
    Write(dir, "thread-and-exchange",
          {{0, Hello(0, 2)},
           {1, Hello(1, 2)},
           {2, Bytes(thread)},
           {2, Batch(0, wire::COMM_ALL_REDUCE)},
           {0, Exchange(0)},
           {1, Batch(1, wire::COMM_ALL_REDUCE)},
           {1, Exchange(1)}});
    Write(dir, "early-sync", {{0, Hello(0, 1)}, {0, Sync(1, 2, 1, 10)}, {0, Goodbye(1)}});
    return 0;
}
