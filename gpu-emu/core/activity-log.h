// CUPTI's activity records, kept where the device ops are placed (libcupti.so.13, gpu-emu/cupti,
// hands them out). While a profiler has activity kinds enabled, each device op the emulator places
// gets a correlation id, the API call that issued it gets a record with the same id, and the
// external ids the calling thread has pushed (Kineto pushes its operator ids) are tied to it. An op
// whose times wait on the simulator is finished when the records are collected: a pending record's
// ops run back to back up to the record's end (bridge/client/record-folds.h), a communication runs
// from its ready time (or its dependencies' ends) to its end.
#pragma once

#include "cost-model.h"
#include "device-op-sink.h"
#include "host-clock.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace eidolon::gpu
{

// What a record is (libcupti maps these onto CUPTI_ACTIVITY_KIND_*).
enum class ActivityKind : unsigned
{
    Kernel,
    Memcpy,
    Memset,
    Runtime,             // a CUDA runtime call that put work on a stream
    Driver,              // a driver call that did (cuLaunchKernel, NCCL's cuLaunchKernelEx)
    ExternalCorrelation, // an external id pushed on the calling thread, tied to a call
    Count,
};

// The call an op came from, as CUPTI identifies it (libcupti maps these onto its callback ids).
enum class ActivityCall : uint8_t
{
    Default, // by the op: a kernel -> cudaLaunchKernel, a copy -> cudaMemcpyAsync, ...
    LaunchKernel,
    Memcpy, // blocking
    MemcpyAsync,
    Memset, // blocking
    MemsetAsync,
    GraphLaunch,
    DriverLaunchKernel,
    DriverLaunchKernelEx,
    // Calls that wait and place nothing: a record of their own when marked.
    DeviceSynchronize,
    StreamSynchronize,
    EventSynchronize,
};

// Where a copy's bytes are, as CUPTI's memory kinds say it.
enum class ActivityMemory : uint8_t
{
    Unknown,
    Pageable,
    Pinned,
    Device,
    Managed,
};

struct ActivityRecord
{
    ActivityKind kind;
    uint32_t correlationId = 0;
    // Device ops (Kernel, Memcpy, Memset): virtual host-clock times.
    int device = 0;
    uint64_t streamId = 0;
    const char* name = nullptr; // interned: valid for the life of the process
    uint64_t bytes = 0;
    ActivityMemory source = ActivityMemory::Unknown, destination = ActivityMemory::Unknown;
    bool peer = false; // a copy between two devices
    uint32_t graphId = 0;
    uint64_t graphNodeId = 0; // graph id << 32 | the node's index + 1 (0: not a graph's)
    Dim3 grid{}, block{}; // a kernel's launch geometry; 1 x 1 x 1 where the launch was a library's
    uint32_t sharedMemory = 0;
    Ns start = 0, end = 0;
    // Calls (Runtime, Driver). With a timestamp source, also its readings as the call began and
    // returned (0: none): a call is CPU-side, on the timeline the client's own CPU events use.
    ActivityCall call = ActivityCall::Default;
    uint32_t threadId = 0;
    uint64_t sourceStart = 0, sourceEnd = 0;
    // ExternalCorrelation.
    uint32_t externalKind = 0;
    uint64_t externalId = 0;
};

// One op as the emulator places it. `pending`: its record when its times wait on the simulator
// (then `start`/`end` are lower bounds and `duration` what it takes once started).
struct ActivityOp
{
    OpKind kind;
    const char* provider;
    int device;
    uint64_t streamId;
    const std::string& label;
    uint64_t bytes;
    Ns start, end, duration;
    uint64_t pending = 0;
    const std::vector<uint64_t>* deps = nullptr; // a communication's: its start waits on them
    uint32_t graphId = 0;
    uint32_t graphNode = 0; // the node's index + 1 in its graph
    // A pending graph launch's nodes: `duration` is the launch's, `offset` and `nodeDuration` the
    // node's place in it; `continuesLaunch` for every node after the first.
    Ns offset = 0;
    Ns nodeDuration = -1;
    bool continuesLaunch = false;
};

class ActivityLog
{
public:
    static ActivityLog& Get(); // one per process, as the emulator

    // Profilers (libcupti) switch kinds on and off; while any is on, ops are recorded.
    void Enable(ActivityKind kind, bool on);
    bool Enabled(ActivityKind kind) const;
    bool Recording() const { return m_recording.load(std::memory_order_relaxed); }

    // cuptiActivityPush/PopExternalCorrelationId: a stack per kind on the calling thread.
    void PushExternal(uint32_t externalKind, uint64_t id);
    bool PopExternal(uint32_t externalKind, uint64_t* id);

    // The call that is about to place ops on this thread: its start time, and what it is where
    // the op alone does not say (a driver launch). Set by ApiCall and by the callers.
    static void EnterCall(Ns now);
    // The call returns at `now`: its records end there (a blocking copy's after its wait); a
    // marked synchronizing call gets its record from its start to `now`.
    void LeaveCall(Ns now);
    static void MarkCall(ActivityCall call);
    // The kernel launch about to be placed on this thread (the program's own kernels: library
    // kernels' geometry is not modelled).
    static void MarkLaunch(Dim3 grid, Dim3 block, uint32_t sharedMemory);
    // The copy about to be placed on this thread: where its bytes come from and go.
    static void MarkCopy(ActivityMemory source, ActivityMemory destination, bool peer);

    // The emulator places an op (its lock held). `now`: the host clock after the call's cost.
    void OnOp(const ActivityOp& op, Ns now);

    // Every record whose times are final. `ends` gives the final ends of pending records (-1:
    // not ended yet; those ops stay for a later collection). The emulator's lock is held.
    using RecordEnds = std::function<std::vector<Ns>(const std::vector<uint64_t>&)>;
    std::vector<ActivityRecord> Collect(const RecordEnds& ends);

    // Drops what is kept (a profiler that finalizes).
    void Clear();

    // At most this many records are kept between collections (NVIDIA's CUPTI is bounded by the
    // client's buffers); ops past it are dropped and counted, with one warning.
    static constexpr size_t kMaxRecords = size_t(1) << 22;
    uint64_t Dropped() const { return m_dropped.load(std::memory_order_relaxed); }

    // A client's timestamp source (CUPTI's timestamp callback: Kineto's is the CPU's TSC). While
    // one is set and records are kept, each CLOCK_REALTIME reading (real or virtual) is paired with
    // the source's, and a run of kConverterPairs of them in a row on one thread is kept: that is
    // how a TSC-to-clock converter calibrates (PyTorch's reads the pair 1001 times at the profile's
    // start and again at its end), and libcupti places records on the line those readings give.
    using TimestampSource = uint64_t (*)();
    void SetTimestampSource(TimestampSource source);
    TimestampSource Source() const { return m_source.load(std::memory_order_relaxed); }
    static constexpr size_t kConverterPairs = 1001;
    using Pairs = std::vector<std::pair<uint64_t, int64_t>>; // (source, virtual realtime ns)
    // The source's reading now (0 without a source, while nothing is recorded, or from inside
    // the source: one that reads the clock itself).
    uint64_t ReadSource() const;
    // A virtual reading of `clock` (a clockid_t) that showed `value` ns on this thread; the
    // source read `before` as it began. The pair's source reading is the middle of `before` and
    // one taken now, as a converter takes the middle of its readings on both sides of the clock's.
    void OnClockRead(int clock, int64_t value, uint64_t before);
    // The runs kept since the last call (and forgets them).
    std::vector<Pairs> TakeConverterRuns();

private:
    ActivityLog() = default;

    // Ops waiting on a pending record: one slot of `duration` in it (a stream's op, or a graph
    // launch whose nodes are the parts, each at its offset in the slot).
    struct Part
    {
        size_t index; // in m_records
        Ns offset;
        Ns duration;
    };
    struct Unfinished
    {
        uint64_t record;
        Ns duration;
        bool communication; // starts at max(ready, ends of deps) and ends with the record
        Ns ready;
        std::vector<uint64_t> deps;
        std::vector<Part> parts;
    };

    uint32_t NewCorrelation(ActivityCall call, OpKind kind, Ns now);
    static const char* Intern(const std::string& name);

    std::atomic<bool> m_recording{false};
    std::atomic<TimestampSource> m_source{nullptr};
    std::vector<Pairs> m_converterRuns; // under m_mutex
    std::atomic<unsigned> m_enabled{0}; // bit per ActivityKind
    std::atomic<uint64_t> m_dropped{0};
    std::mutex m_mutex; // the records (the emulator lock covers OnOp; pushes don't)
    std::vector<ActivityRecord> m_records;
    std::vector<bool> m_final; // per record: its times are known
    std::vector<Unfinished> m_unfinished;
    uint32_t m_nextCorrelation = 0;
};

} // namespace eidolon::gpu
