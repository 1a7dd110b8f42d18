// What a peer may send, checked at the edge before the simulator core sees a message: every count
// and size against the run (its GPUs, the processes' own batch order) and against fixed limits,
// so that nothing a peer sends makes eidolon-sim allocate more than a stated bound or wait for
// something that cannot come. A violation throws WireError, whose message starts with the field
// ("Batch.seq 1000000000000000: ..."); the endpoint sends it back as an error reply.
//
// The bounds (bridge/README.md, "Limits"), per message and per rank process:
//   message                 kMaxMessageBytes (ZeroMQ drops larger ones before they are read)
//   records in a batch      kMaxRecordsPerBatch; deps of a record kMaxDeps; ops of a record kMaxOps
//   batches ahead           a batch at most kBatchWindow past the next one expected, and at most
//                           kMaxEarlyBytes of such batches (wire bytes) held per process
//   requests held           syncs, exchanges and goodbyes waiting for a batch: kMaxDeferred per
//                           process, and the batch they follow within kBatchWindow
//   counts of the run       world size, devices, communicator and exchange sizes: at most the
//                           topology's GPUs; ranks inside their sizes
//   strings                 names kMaxNameBytes, exchange payloads kMaxPayloadBytes
#pragma once

#include "rank-process.h"
#include "wire.pb.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace eidolon::bridge
{

struct WireError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

struct WireLimits
{
    static constexpr size_t kMaxMessageBytes = size_t(64) << 20;
    static constexpr int kMaxRecordsPerBatch = 1 << 16; // the client sends at most 4096
    static constexpr int kMaxDeps = 1 << 12;
    static constexpr int kMaxOps = 1 << 16;
    // A rank sends batches on one socket per thread, so a batch overtakes every batch still
    // queued on the other sockets (ZeroMQ's send and receive high-water marks, 1000 messages each,
    // plus the kernel's socket buffer): when the simulator falls behind, legitimate batches come
    // over a thousand ahead (the main job, once the data exchange stopped pacing the ranks). The
    // window only refuses absurd sequence numbers; kMaxEarlyBytes bounds what is held.
    static constexpr uint64_t kBatchWindow = 1 << 16;
    static constexpr size_t kMaxEarlyBytes = size_t(256) << 20;
    static constexpr size_t kMaxDeferred = 1024;
    static constexpr size_t kMaxNameBytes = 4096;
    static constexpr size_t kMaxPayloadBytes = size_t(16) << 20;
    static constexpr int kMaxNcclVariables = 256;
    static constexpr int kMaxAncestors = 64; // the client sends at most 32
    // Virtual times (clocks, ready/start/end times, durations): finite and 0 to 1e15 ns (11.6
    // days). ns-3's picosecond Time ends at 9.2e15 ns, so a few bounded times added up stay in it.
    static constexpr double kMaxVirtualNs = 1e15;
};

// What the checks compare with.
struct RunShape
{
    uint32_t gpus = 0; // GPUs of the topology
};

// Hello: world rank/size, devices and names (a process that fails is refused).
void CheckHello(const wire::Hello& hello, const RunShape& run);
// A message of a process that has joined: Batch, SyncRequest, ExchangeRequest, Goodbye.
// `earlyBytes`: wire bytes of the process's batches held until earlier ones arrive;
// `messageBytes`: this message's.
void CheckRequest(const wire::Envelope& envelope, const sim::RankProcess& process,
                  const RunShape& run, size_t earlyBytes, size_t messageBytes);

} // namespace eidolon::bridge
