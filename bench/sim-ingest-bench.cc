// How fast eidolon-sim ingests records (target: at least 1 million per second on one core).
// Serialized batches go through SimEndpoint::Deliver exactly as the ROUTER hands them over
// (protobuf parse, per-record handling, dependency propagation), each followed by the step the
// run loop takes after draining its socket (advance to the horizon, fold finished statistics),
// without the socket itself.
// Prints a table: record kind, records, wall seconds, records per second, and the resident memory
// the ingestion added per record, trace slices off (ended records keep 16 bytes and their id's
// slot: the Node of a record goes with its block once every record of the block has ended).
#include "sim-endpoint.h"
#include "wire-version.h"

#include "ns3/nstime.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace
{
using namespace eidolon;

std::string
Serialize(const wire::Envelope& envelope)
{
    std::string bytes;
    envelope.SerializeToString(&bytes);
    return bytes;
}

// Resident set size of this process (bytes), from /proc/self/status.
double
ResidentBytes()
{
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key)
    {
        if (key == "VmRSS:")
        {
            double kib = 0;
            status >> kib;
            return kib * 1024;
        }
        status.ignore(1 << 12, '\n');
    }
    return 0;
}

wire::Envelope
NewEnvelope()
{
    wire::Envelope e;
    e.set_protocol_version(wire::kProtocolVersion);
    return e;
}

// `batches` batches of `perBatch` records of one kind from one process; returns records/s.
double
Measure(const char* kind, int batches, int perBatch)
{
    sim::SimOptions options;
    options.topologyPath = "default";
    options.watchdogSeconds = 0;
    options.maxSlices = 0; // trace.json's slices (up to 2 million, kept by design) not counted
    std::ostringstream log;
    bridge::SimEndpoint server(options, "", log);
    wire::Envelope hello = NewEnvelope();
    hello.mutable_hello()->set_name("rank0");
    hello.mutable_hello()->set_world_rank(0);
    hello.mutable_hello()->set_world_size(1);
    hello.mutable_hello()->set_node(0);
    hello.mutable_hello()->set_num_devices(8);
    hello.mutable_hello()->set_process_token("t");
    server.Deliver("r0", Serialize(hello));

    std::vector<std::string> messages;
    uint64_t id = 0;
    double t = 0;
    for (int b = 0; b < batches; ++b)
    {
        wire::Envelope e = NewEnvelope();
        wire::Batch* batch = e.mutable_batch();
        batch->set_seq(uint64_t(b + 1));
        for (int r = 0; r < perBatch; ++r)
        {
            t += 10;
            if (std::string(kind) == "span")
            {
                wire::Span* s = batch->add_records()->mutable_span();
                s->set_device(r % 8);
                s->set_stream(uint64_t(r % 8));
                s->set_start_ns(t);
                s->set_end_ns(t + 5);
                s->set_busy_ns(5);
                s->set_count(1);
                s->set_label("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn");
            }
            else
            {
                // A chain on each of 8 streams, each waiting on that stream's previous record.
                wire::Chain* c = batch->add_records()->mutable_chain();
                ++id;
                c->set_id(id);
                c->set_device(int(id % 8));
                c->set_stream(id % 8);
                if (id > 8)
                {
                    c->add_deps(id - 8);
                }
                c->set_ready_ns(t);
                c->set_a_ns(5);
                c->set_b_ns(t + 5);
                c->set_busy_ns(5);
                c->set_count(1);
                c->set_label("elementwise_kernel");
            }
        }
        batch->set_clock_ns(t);
        messages.push_back(Serialize(e));
    }
    std::vector<zmq::pollitem_t> none;
    const double residentBefore = ResidentBytes();
    auto start = std::chrono::steady_clock::now();
    for (const std::string& message : messages)
    {
        server.Deliver("r0", message);
        server.Step(std::chrono::milliseconds(0), none);
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double records = double(batches) * perBatch;
    const double held = (ResidentBytes() - residentBefore) / records;
    std::printf("%-6s %10.0f %8.3f %14.0f %18.1f\n", kind, records, seconds, records / seconds,
                held);
    return records / seconds;
}
} // namespace

int
main()
{
    ns3::Time::SetResolution(ns3::Time::PS);
    std::printf("%-6s %10s %8s %14s %18s\n", "kind", "records", "wall_s", "records_per_s",
                "held_B_per_record");
    Measure("span", 500, 4096);
    Measure("chain", 500, 4096);
    return 0;
}
