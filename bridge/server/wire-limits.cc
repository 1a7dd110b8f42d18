#include "wire-limits.h"

#include "sim-errors.h"

#include <fmt/format.h>

#include <algorithm>

namespace eidolon::bridge
{

namespace
{

using L = WireLimits;

// A process may see more devices than the topology has (gpu-emu's default is 8; the extra ones
// are no GPU of the cluster), but not without bound: the Welcome lists one entry per device.
constexpr uint32_t kMaxDevicesBeyondTopology = 64;

[[noreturn]] void
Refuse(const std::string& message)
{
    throw WireError(message);
}

void
CheckString(const char* field, const std::string& value, size_t limit)
{
    if (value.size() > limit)
    {
        Refuse(fmt::format("{}: {} bytes, more than the {} allowed", field, value.size(), limit));
    }
}

void
CheckCount(const char* field, int64_t value, int64_t limit, const char* what)
{
    if (value > limit)
    {
        Refuse(fmt::format("{} {}: more than {} ({})", field, value, limit, what));
    }
}

// A time from the wire: NaN, infinity or beyond kMaxVirtualNs would overflow ns-3's Time.
void
CheckTime(const char* field, double ns)
{
    if (!(ns >= 0 && ns <= L::kMaxVirtualNs))
    {
        Refuse(fmt::format("{} {:g}: must be 0 to {:g} ns", field, ns, L::kMaxVirtualNs));
    }
}

void
CheckGroup(const char* sizeField, int64_t size, const char* rankField, int64_t rank,
           const RunShape& run)
{
    if (size < 1 || size > int64_t(run.gpus))
    {
        Refuse(
            fmt::format("{} {}: must be 1 to {} (the topology's GPUs)", sizeField, size, run.gpus));
    }
    if (rank < 0 || rank >= size)
    {
        Refuse(fmt::format("{} {}: must be 0 to {} ({} {})", rankField, rank, size - 1, sizeField,
                           size));
    }
}

void
CheckCommunication(const wire::Communication& c, const RunShape& run)
{
    CheckCount("Communication.deps", c.deps_size(), L::kMaxDeps, "dependencies of a record");
    CheckCount("Communication.ops", c.ops_size(), L::kMaxOps, "operations of a record");
    CheckTime("Communication.ready_ns", c.ready_ns());
    CheckTime("Communication.issued_ns", c.issued_ns());
    CheckGroup("Communication.comm_size", c.comm_size(), "Communication.comm_rank", c.comm_rank(),
               run);
    for (const wire::CommOp& op : c.ops())
    {
        // Sizes the collective model can price: an element of at most 16 bytes (NCCL's largest
        // is 8) and at most 2^48 of them (256 TiB of floats), so that count x size cannot wrap.
        if (op.type_size() < 0 || op.type_size() > 16)
        {
            Refuse(fmt::format("CommOp.type_size {}: must be 0 to 16 bytes", op.type_size()));
        }
        CheckCount("CommOp.count", int64_t(std::min<uint64_t>(op.count(), INT64_MAX)),
                   int64_t(1) << 48, "elements of one operation");
    }
}

// A communicator of more ranks than the cluster has GPUs cannot be created: two of its ranks would
// share a GPU, which NCCL refuses (init.cc, "Duplicate GPU detected", ncclInvalidUsage on every
// rank). The usual cause is a program driving several GPUs from each process (nccl-tests -g 8)
// started one process per GPU. That is the program's error, not a malformed message: the run ends
// at once, saying so, instead of dropping the batch and waiting for ranks that never come.
void
CheckJoinFits(const wire::CommJoin& join, const sim::RankProcess& process, const RunShape& run)
{
    if (join.nranks() > int64_t(run.gpus))
    {
        throw sim::ProgramError(fmt::format(
            "{} joins a communicator of {} ranks, but the topology has {} GPUs: ranks would share "
            "a GPU, and NCCL fails ncclCommInitRank with \"Duplicate GPU detected\" (a program "
            "that drives several GPUs from one process, like nccl-tests with -g 8, runs one "
            "process per node: `eidolon run --launch node`)",
            process.name, join.nranks(), run.gpus));
    }
}

void
CheckRecord(const wire::Record& record, const sim::RankProcess& process, const RunShape& run)
{
    switch (record.body_case())
    {
    case wire::Record::kChain:
    {
        const wire::Chain& chain = record.chain();
        CheckCount("Chain.deps", chain.deps_size(), L::kMaxDeps, "dependencies of a record");
        CheckTime("Chain.ready_ns", chain.ready_ns());
        CheckTime("Chain.a_ns", chain.a_ns());
        CheckTime("Chain.busy_ns", chain.busy_ns());
        // b_ns may be far below 0 (-1e300: no later ready time), never above the bound.
        if (!(chain.b_ns() <= L::kMaxVirtualNs))
        {
            Refuse(fmt::format("Chain.b_ns {:g}: must be at most {:g} ns", chain.b_ns(),
                               L::kMaxVirtualNs));
        }
        break;
    }
    case wire::Record::kSpan:
        CheckTime("Span.start_ns", record.span().start_ns());
        CheckTime("Span.end_ns", record.span().end_ns());
        CheckTime("Span.busy_ns", record.span().busy_ns());
        break;
    case wire::Record::kCommunication:
        CheckCommunication(record.communication(), run);
        break;
    case wire::Record::kCommJoin:
        CheckJoinFits(record.comm_join(), process, run);
        CheckGroup("CommJoin.nranks", record.comm_join().nranks(), "CommJoin.rank",
                   record.comm_join().rank(), run);
        break;
    default:
        break; // an empty record is the core's to name
    }
}

void
CheckBatch(const wire::Batch& batch, const sim::RankProcess& process, const RunShape& run,
           size_t earlyBytes, size_t messageBytes)
{
    CheckCount("Batch.records", batch.records_size(), L::kMaxRecordsPerBatch,
               "records in one batch");
    CheckTime("Batch.clock_ns", batch.clock_ns());
    CheckCount("Batch.usage", batch.usage_size(), std::max(run.gpus, kMaxDevicesBeyondTopology),
               "devices");
    if (batch.driving_threads() < 0 || batch.driving_threads() > (1 << 16))
    {
        Refuse(
            fmt::format("Batch.driving_threads {}: must be 0 to 65536", batch.driving_threads()));
    }
    if (batch.seq() >= process.nextBatch + L::kBatchWindow)
    {
        Refuse(fmt::format("Batch.seq {}: {} expects batch {} next and holds at most {} batches "
                           "ahead of it",
                           batch.seq(), process.name, process.nextBatch, L::kBatchWindow));
    }
    if (batch.seq() > process.nextBatch && earlyBytes + messageBytes > L::kMaxEarlyBytes)
    {
        Refuse(fmt::format("Batch.seq {}: {} already holds {} bytes of batches waiting for batch "
                           "{} (at most {})",
                           batch.seq(), process.name, earlyBytes, process.nextBatch,
                           L::kMaxEarlyBytes));
    }
    for (const wire::Record& record : batch.records())
    {
        CheckRecord(record, process, run);
    }
}

// A request that follows batch `afterBatch`: held until it is in, within the window.
void
CheckAfterBatch(const char* field, uint64_t afterBatch, int drivingThreads,
                const sim::RankProcess& process)
{
    if (afterBatch >= process.nextBatch + L::kBatchWindow)
    {
        Refuse(fmt::format("{} {}: {} expects batch {} next and holds requests at most {} "
                           "batches ahead of it",
                           field, afterBatch, process.name, process.nextBatch, L::kBatchWindow));
    }
    if (afterBatch >= process.nextBatch && process.waitingForBatch.size() >= L::kMaxDeferred)
    {
        Refuse(fmt::format("{} {}: {} already has {} requests waiting for batches (at most {})",
                           field, afterBatch, process.name, process.waitingForBatch.size(),
                           L::kMaxDeferred));
    }
    if (drivingThreads < 0 || drivingThreads > (1 << 16))
    {
        Refuse(fmt::format("driving_threads {}: must be 0 to 65536", drivingThreads));
    }
}

void
CheckExchange(const wire::ExchangeRequest& x, const sim::RankProcess& process, const RunShape& run)
{
    CheckAfterBatch("ExchangeRequest.after_batch", x.after_batch(), x.driving_threads(), process);
    if (x.participants() < 1 || x.participants() > int64_t(run.gpus))
    {
        Refuse(fmt::format("ExchangeRequest.participants {}: must be 1 to {} (the topology's GPUs)",
                           x.participants(), run.gpus));
    }
    CheckCount("ExchangeRequest.entries", x.entries_size(), x.participants(),
               "ExchangeRequest.participants");
    CheckString("ExchangeRequest.key", x.key(), L::kMaxNameBytes);
    CheckString("ExchangeRequest.what", x.what(), L::kMaxNameBytes);
    CheckTime("ExchangeRequest.clock_ns", x.clock_ns());
    for (const wire::ExchangeEntry& entry : x.entries())
    {
        CheckString("ExchangeEntry.payload", entry.payload(), L::kMaxPayloadBytes);
    }
}

} // namespace

void
CheckHello(const wire::Hello& hello, const RunShape& run)
{
    // 0 or -1: the process does not know (the run's own count stands).
    if (hello.world_size() > int64_t(run.gpus))
    {
        Refuse(fmt::format("Hello.world_size {}: the topology has {} GPUs", hello.world_size(),
                           run.gpus));
    }
    int64_t ranks = hello.world_size() > 0 ? hello.world_size() : int64_t(run.gpus);
    if (hello.world_rank() >= ranks)
    {
        Refuse(fmt::format("Hello.world_rank {}: must be below {} ({})", hello.world_rank(), ranks,
                           hello.world_size() > 0 ? "Hello.world_size" : "the topology's GPUs"));
    }
    uint32_t devices = std::max(run.gpus, kMaxDevicesBeyondTopology);
    if (hello.num_devices() < 0 || hello.num_devices() > int64_t(devices))
    {
        Refuse(fmt::format("Hello.num_devices {}: must be 0 to {} (the topology has {} GPUs)",
                           hello.num_devices(), devices, run.gpus));
    }
    CheckString("Hello.name", hello.name(), L::kMaxNameBytes);
    CheckString("Hello.hostname", hello.hostname(), L::kMaxNameBytes);
    CheckString("Hello.gpu", hello.gpu(), L::kMaxNameBytes);
    CheckString("Hello.process_token", hello.process_token(), L::kMaxNameBytes);
    CheckCount("Hello.nccl_env", hello.nccl_env_size(), L::kMaxNcclVariables, "variables");
    CheckCount("Hello.ancestors", hello.ancestors_size(), L::kMaxAncestors, "ancestors");
}

void
CheckRequest(const wire::Envelope& envelope, const sim::RankProcess& process, const RunShape& run,
             size_t earlyBytes, size_t messageBytes)
{
    switch (envelope.body_case())
    {
    case wire::Envelope::kBatch:
        CheckBatch(envelope.batch(), process, run, earlyBytes, messageBytes);
        break;
    case wire::Envelope::kSync:
        CheckAfterBatch("SyncRequest.after_batch", envelope.sync().after_batch(),
                        envelope.sync().driving_threads(), process);
        CheckCount("SyncRequest.ops", envelope.sync().ops_size(), L::kMaxRecordsPerBatch,
                   "records waited for");
        CheckString("SyncRequest.what", envelope.sync().what(), L::kMaxNameBytes);
        CheckTime("SyncRequest.clock_ns", envelope.sync().clock_ns());
        break;
    case wire::Envelope::kExchange:
        CheckExchange(envelope.exchange(), process, run);
        break;
    case wire::Envelope::kGoodbye:
        CheckAfterBatch("Goodbye.after_batch", envelope.goodbye().after_batch(), 0, process);
        CheckCount("Goodbye.usage", envelope.goodbye().usage_size(),
                   std::max(run.gpus, kMaxDevicesBeyondTopology), "devices");
        CheckCount("Goodbye.pricing", envelope.goodbye().pricing_size(), 256, "pricing providers");
        CheckTime("Goodbye.clock_ns", envelope.goodbye().clock_ns());
        break;
    default:
        break;
    }
}

} // namespace eidolon::bridge
