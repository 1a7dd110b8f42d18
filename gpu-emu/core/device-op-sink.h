// The seam between a rank's local timelines and whatever else wants to see its device work.
// A single-process program runs with the LocalSink (no simulator). Under eidolon-sim the
// BridgeSink (bridge/client) plugs in here: ops whose times the rank knows are reported for
// statistics; ops that wait on a communication (whose end the simulator decides) become *pending*
// records, and a synchronizing call asks the simulator for the final end times.
#pragma once

#include "communication.h"
#include "host-clock.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace eidolon::gpu
{

enum class OpKind
{
    Kernel,
    Gemm,
    Copy,
    Memset,
    EventRecord,
    GraphNode,
    Communication,
};

// One device op whose times are known, already placed on its stream's timeline.
struct DeviceOp
{
    OpKind kind;
    int device;
    uint64_t streamId;
    const std::string* label; // kernel name or op description; valid only during the call
    const char* provider;     // which pricing provider priced it
    Ns issued;                // host time of submission
    Ns start;
    Ns end;
    uint64_t bytes; // copies and memsets
};

// A device op that starts only after pending ops end: start = max(ready, ends of deps).
struct PendingOp
{
    OpKind kind;
    int device;
    uint64_t streamId;
    const std::string* label;
    std::vector<uint64_t> deps; // ids of pending records (never empty)
    Ns ready;                   // what the rank knows: launch latency, known stream/event times
    Ns duration;
};

// One communication record (see Emulator::PlaceCommunication).
struct CommunicationRecord
{
    int device;
    uint64_t streamId;
    std::vector<uint64_t> deps; // may be empty
    Ns ready;
    Ns issued;
    const CommMember* member;
    uint64_t seq;
    const std::vector<CommOp>* ops;
};

struct DeviceUsage
{
    int device;
    uint64_t peakBytes;
    uint64_t capacityBytes;
    uint64_t hostDataPeakBytes = 0;    // device bytes the host wrote, most held at once
    uint64_t hostDataDroppedBytes = 0; // of those, not kept (EIDOLON_HOST_DATA_CAP)
};

struct ProviderUsage
{
    std::string provider;
    uint64_t ops;
    double ns;
};

class DeviceOpSink
{
public:
    virtual ~DeviceOpSink() = default;

    // Where virtual time 0 lies on the real clocks, when every rank must share it (the simulator
    // says); false: the process's own start.
    virtual bool ClockEpochs(int64_t* monotonic, int64_t* realtime, int64_t* boottime) const
    {
        (void)monotonic, (void)realtime, (void)boottime;
        return false;
    }

    // The simulated node's host name ("" when there is none).
    virtual std::string Hostname() const { return {}; }

    // Whether communicators with more than one rank can exist (a simulator is attached).
    virtual bool Remote() const { return false; }
    // The simulator has gone or ended the run: no time can be simulated any more, and the
    // emulator fails every later CUDA call instead of going on or waiting.
    virtual bool RunOver() const { return false; }

    // All calls below are made under the emulator lock.

    // An op placed on a stream with known times.
    virtual void OnOp(const DeviceOp& op) = 0;

    // A driving thread parked or left its park (HostClock::Park): the simulator should hear the
    // new count soon. Called from that thread, holding none of gpu-emu's locks.
    virtual void DrivingThreadsChanged() {}

    // An op that waits on pending records; returns the id later records and syncs use for it. The
    // sink may fold it into the stream's open record (then it returns that record's id, which now
    // stands for the end of the extended record) until Seal(streamId).
    virtual uint64_t OnPendingOp(const PendingOp&) { return 0; }

    // The stream's open record must not grow any more: its id is about to be referred to.
    virtual void Seal(uint64_t /*streamId*/) {}

    // A communication record; returns its id. Its end is pending.
    virtual uint64_t OnCommunication(const CommunicationRecord&) { return 0; }

    // Communicator membership (join or leave). False with `error` set when refused.
    virtual bool OnComm(const CommMember&, bool /*leave*/, std::string* /*error*/) { return true; }

    // Blocks until the ends of `ops` are final and returns them (same order). `lock` is the
    // emulator mutex the caller holds; the sink releases it while it waits so that other threads
    // of the process can issue work. `what` names the waiting call (for the watchdog).
    // `query`: the caller only asks whether the ops have ended by `now` and goes on from `now`
    // either way; an op not ended by then comes back as -1.
    virtual std::vector<Ns> Resolve(const std::vector<uint64_t>& ops, Ns now, int drivingThreads,
                                    bool query, const std::string& what, std::mutex& lock)
    {
        (void)now, (void)drivingThreads, (void)query, (void)what, (void)lock;
        return std::vector<Ns>(ops.size(), 0);
    }

    // A host-side all-gather with the other processes (ncclCommSplit's colors and keys): blocks
    // (the lock released) until `participants` entries under `key` have arrived; fills `all`
    // (by index) and the virtual time the last one arrived. False with `error` when impossible.
    using Entries = std::vector<std::pair<int, std::string>>;
    virtual bool Exchange(const std::string& key, int participants, const Entries& mine,
                          Entries* all, Ns now, int drivingThreads, std::mutex& lock, Ns* time,
                          std::string* error)
    {
        (void)key, (void)participants, (void)mine, (void)all, (void)now, (void)drivingThreads,
            (void)lock, (void)time;
        *error = "no simulator to exchange with";
        return false;
    }

    // A device's peak memory rose (to usage.peakBytes): a run that ends before this process's
    // exit still knows what it used.
    virtual void OnPeakMemory(const DeviceUsage&) {}

    // The process is exiting with `exitStatus` (the value given to exit(), or main's return).
    virtual void OnExit(Ns /*now*/, const std::vector<DeviceUsage>&,
                        const std::vector<ProviderUsage>&, int /*exitStatus*/)
    {
    }
};

// Default sink: nothing outside this process; local prices are final.
class LocalSink : public DeviceOpSink
{
public:
    void OnOp(const DeviceOp&) override {}
};

} // namespace eidolon::gpu
