// libcupti.so.13: CUPTI, the CUDA profiling interface PyTorch's profiler (Kineto) links. NVIDIA's
// library reaches into the driver through cuGetExportTable, which an emulated driver cannot offer
// (it crashed the process as torch.profiler started). Here the activity API works: kernels,
// copies, memsets, the runtime and driver calls that issued them, and external correlation
// records, with the simulated times (core/activity-log.h keeps them as the emulator places ops).
// The callback API, counters, PC sampling and the profiler/PM-sampling APIs return
// CUPTI_ERROR_NOT_SUPPORTED, with one warning per process.
//
// Timestamps: CUPTI's own are nanoseconds of the virtual CLOCK_REALTIME (what the program's clocks
// read). A client that registers a timestamp source gets records in the source's units. PyTorch
// registers the CPU's TSC and maps it back to clock time with a converter calibrated on 1001
// (TSC, clock) readings at the profile's start and 1001 at its end; the TSC runs in real time, the
// clock in virtual time, so the map is only right on the line those readings give. The clock
// interposers pair every reading of a session, real or virtual, with the source
// (ActivityLog::OnClockRead), and device records are placed on the line the converter computes
// from the session's first and last such runs, by its own arithmetic (c10's
// ApproximateClockToUnixTimeConverter): PyTorch then shows each at its virtual time. Calls are
// CPU-side and carry the source's own readings, as NVIDIA's do. Without such runs (another
// client), the line goes through the source's readings at the session's start (its first external
// correlation push, else its enable) and at the flush: exact where the source is linear in the
// virtual clock.
#include "../library-replies.h"
#include "core/activity-log.h"
#include "core/emulator.h"

#include <cupti.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

using namespace eidolon::gpu;

namespace
{
using Reply = Replies<CUptiResult, CUPTI_SUCCESS, CUPTI_ERROR_INVALID_PARAMETER>;
std::atomic<bool> g_warned{false};

// The callback ids' names, from the toolkit's headers (generated at configure time).
struct CallbackName
{
    CUpti_CallbackId id;
    const char* name;
};
const CallbackName kRuntimeNames[] = {
#include "cupti-runtime-names.inc"
};
const CallbackName kDriverNames[] = {
#include "cupti-driver-names.inc"
};

// Record sizes in a buffer. A kernel is written as CUDA 13.0's CUpti_ActivityKernel10 in the
// 224 bytes of 13.1's CUpti_ActivityKernel11, which only adds fields after it (left zero: not
// device-launched, default priority), so a client built against either reads it.
constexpr size_t kKernelBytes = 224;
static_assert(sizeof(CUpti_ActivityKernel10) <= kKernelBytes, "kernel record outgrew its slot");

size_t
RecordBytes(CUpti_ActivityKind kind)
{
    size_t bytes = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? kKernelBytes
                   : kind == CUPTI_ACTIVITY_KIND_KERNEL          ? kKernelBytes
                   : kind == CUPTI_ACTIVITY_KIND_MEMCPY          ? sizeof(CUpti_ActivityMemcpy6)
                   : kind == CUPTI_ACTIVITY_KIND_MEMSET          ? sizeof(CUpti_ActivityMemset4)
                   : kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION
                       ? sizeof(CUpti_ActivityExternalCorrelation)
                       : sizeof(CUpti_ActivityAPI);
    return (bytes + 7) & ~size_t(7);
}

// The profiling session: the client's buffer callbacks and timestamp source, the readings that
// place records in that source's units, and which kinds it enabled as which CUPTI kind.
struct Session
{
    std::recursive_mutex mutex; // the client's buffer callbacks may call back into CUPTI
    CUpti_BuffersCallbackRequestFunc request = nullptr;
    CUpti_BuffersCallbackCompleteFunc complete = nullptr;
    CUpti_TimestampCallbackFunc timestamp = nullptr;
    bool kernelAsConcurrent = true; // KIND_KERNEL or KIND_CONCURRENT_KERNEL (what was enabled)
    bool startPinned = false;       // the start reading is the first push's, not the enable's
    uint64_t startSource = 0, endSource = 0;
    int64_t startClock = 0, endClock = 0;
    std::vector<ActivityLog::Pairs> converterRuns; // since the session started
    size_t dropped = 0;
    // A buffer asked for as recording starts, as NVIDIA's library does (Kineto flushes only
    // while it has handed out a buffer): filled first at the flush.
    uint8_t* held = nullptr;
    size_t heldSize = 0, heldMaxRecords = 0;
};
Session g_session;

// Now on the virtual CLOCK_REALTIME (ns), without moving the program's clock.
int64_t
VirtualNow()
{
    Emulator* emulator = Emulator::IfCreated();
    if (!emulator)
    {
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    }
    ApiCall call(CallKind::Untimed, false); // the lock, and clocks read inside stay real
    return VirtualClockBases().realtime + std::llround(emulator->Clock().Now());
}

// A (source, clock) reading for the timestamp line; `start` or end of the session.
void
Read(bool start)
{
    int64_t clock = VirtualNow();
    uint64_t source = g_session.timestamp ? g_session.timestamp() : uint64_t(clock);
    (start ? g_session.startSource : g_session.endSource) = source;
    (start ? g_session.startClock : g_session.endClock) = clock;
}

// Source units to clock ns: clock = t0 + (source - a0) x nsPerUnit.
struct Line
{
    uint64_t a0 = 0;
    int64_t t0 = 0;
    double nsPerUnit = 1;
};
Line g_line;

// The line a converter calibrated on `start` and `end` runs computes: its scale is the
// 502nd-smallest of the pairs' ratios and its offset the 502nd-smallest correction of the start
// run's readings against the first (c10/util/ApproximateClock.cpp).
Line
ConverterLine(const ActivityLog::Pairs& start, const ActivityLog::Pairs& end)
{
    size_t n = std::min(start.size(), end.size());
    std::vector<long double> scales(n);
    for (size_t i = 0; i < n; ++i)
    {
        scales[i] = double(end[i].second - start[i].second) /
                    double(int64_t(end[i].first - start[i].first));
    }
    std::sort(scales.begin(), scales.end());
    long double scale = scales[n / 2 + 1];
    Line line{start[0].first, start[0].second, double(scale)};
    std::vector<double> corrections(n);
    for (size_t i = 0; i < n; ++i)
    {
        int64_t dt = start[i].second - line.t0;
        double approx = double(start[i].first - line.a0) * double(scale);
        corrections[i] = double(dt - int64_t(approx));
    }
    std::sort(corrections.begin(), corrections.end());
    line.t0 += int64_t(corrections[n / 2 + 1]);
    return line;
}

// The line for this flush: a converter's runs where the session has two, else the readings at
// the session's start and now.
Line
FlushLine()
{
    if (!g_session.timestamp)
    {
        return Line{};
    }
    std::vector<ActivityLog::Pairs> runs = ActivityLog::Get().TakeConverterRuns();
    for (ActivityLog::Pairs& run : runs)
    {
        g_session.converterRuns.push_back(std::move(run));
    }
    if (g_session.converterRuns.size() >= 2 &&
        g_session.converterRuns.back().front().first > g_session.converterRuns.front().back().first)
    {
        return ConverterLine(g_session.converterRuns.front(), g_session.converterRuns.back());
    }
    int64_t units = int64_t(g_session.endSource - g_session.startSource);
    double perUnit = units > 0 ? double(g_session.endClock - g_session.startClock) / units : 1.0;
    return Line{g_session.startSource, g_session.startClock, perUnit > 0 ? perUnit : 1.0};
}

// A virtual host-clock time in the session's timestamp units (on this flush's line). Where a unit
// is under a nanosecond (a TSC against a slower virtual clock), the first unit past the time:
// the converter truncates what it computes, and so gives the time back to the nanosecond.
uint64_t
Stamp(Ns time)
{
    int64_t clock = VirtualClockBases().realtime + std::llround(time);
    if (!g_session.timestamp)
    {
        return uint64_t(clock);
    }
    double units = double(clock - g_line.t0) / g_line.nsPerUnit;
    int64_t offset = g_line.nsPerUnit < 1 ? int64_t(std::floor(units)) + 1 : std::llround(units);
    return g_line.a0 + uint64_t(offset);
}

// CUPTI's memory kinds, by ActivityMemory.
constexpr CUpti_ActivityMemoryKind kMemoryKinds[] = {
    CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
    CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
    CUPTI_ACTIVITY_MEMORY_KIND_MANAGED};

uint32_t
MemoryKind(ActivityMemory memory)
{
    return kMemoryKinds[size_t(memory)];
}

uint32_t
CopyKind(const ActivityRecord& r)
{
    bool fromDevice = r.source == ActivityMemory::Device || r.source == ActivityMemory::Managed;
    bool toDevice =
        r.destination == ActivityMemory::Device || r.destination == ActivityMemory::Managed;
    return r.peer                   ? CUPTI_ACTIVITY_MEMCPY_KIND_PTOP
           : fromDevice && toDevice ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
           : fromDevice             ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
           : toDevice               ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
                                    : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

// The runtime (or driver) callback id of each ActivityCall; Default is a kernel launch.
constexpr CUpti_CallbackId kCallbackIds[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,      // Default
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,      // LaunchKernel
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,            // Memcpy
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,       // MemcpyAsync
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,            // Memset
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,       // MemsetAsync
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,      // GraphLaunch
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,               // DriverLaunchKernel
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,             // DriverLaunchKernelEx
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, // DeviceSynchronize
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, // StreamSynchronize
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,  // EventSynchronize
};
static_assert(std::size(kCallbackIds) == size_t(ActivityCall::EventSynchronize) + 1,
              "a callback id for every ActivityCall");

CUpti_CallbackId
CallbackId(ActivityCall call)
{
    return kCallbackIds[size_t(call)];
}

// The fields kernel, memcpy and memset records share.
template<typename Record>
void
FillDeviceOp(Record* record, const ActivityRecord& r)
{
    record->start = Stamp(r.start);
    record->end = Stamp(r.end);
    record->deviceId = uint32_t(r.device);
    record->contextId = uint32_t(r.device) + 1;
    record->streamId = uint32_t(r.streamId);
    record->correlationId = r.correlationId;
    record->graphId = r.graphId;
    record->graphNodeId = r.graphNodeId;
}

// Writes `r` as CUPTI's record at `out` (RecordBytes of its kind, zeroed).
bool
WriteRecord(const ActivityRecord& r, uint8_t* out)
{
    switch (r.kind)
    {
    case ActivityKind::Kernel:
    {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(out);
        k->kind = g_session.kernelAsConcurrent ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                               : CUPTI_ACTIVITY_KIND_KERNEL;
        FillDeviceOp(k, r);
        k->completed = k->end;
        k->name = r.name;
        k->gridX = int32_t(r.grid.x);
        k->gridY = int32_t(r.grid.y);
        k->gridZ = int32_t(r.grid.z);
        k->blockX = int32_t(r.block.x);
        k->blockY = int32_t(r.block.y);
        k->blockZ = int32_t(r.block.z);
        k->dynamicSharedMemory = int32_t(r.sharedMemory);
        return true;
    }
    case ActivityKind::Memcpy:
    {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(out);
        m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        FillDeviceOp(m, r);
        m->copyKind = uint8_t(CopyKind(r));
        m->srcKind = uint8_t(MemoryKind(r.source));
        m->dstKind = uint8_t(MemoryKind(r.destination));
        m->bytes = r.bytes;
        return true;
    }
    case ActivityKind::Memset:
    {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(out);
        m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
        FillDeviceOp(m, r);
        m->bytes = r.bytes;
        m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        return true;
    }
    case ActivityKind::Runtime:
    case ActivityKind::Driver:
    {
        auto* a = reinterpret_cast<CUpti_ActivityAPI*>(out);
        a->kind = r.kind == ActivityKind::Driver ? CUPTI_ACTIVITY_KIND_DRIVER
                                                 : CUPTI_ACTIVITY_KIND_RUNTIME;
        a->cbid = CallbackId(r.call);
        // A call is CPU-side: the source's own readings where there are (as the client's CPU
        // events), else its virtual host times.
        bool read = g_session.timestamp && r.sourceStart && r.sourceEnd >= r.sourceStart;
        a->start = read ? r.sourceStart : Stamp(r.start);
        a->end = read ? r.sourceEnd : Stamp(r.end);
        a->processId = uint32_t(getpid());
        a->threadId = r.threadId;
        a->correlationId = r.correlationId;
        return true;
    }
    case ActivityKind::ExternalCorrelation:
    {
        auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(out);
        e->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        e->externalKind = CUpti_ExternalCorrelationKind(r.externalKind);
        e->externalId = r.externalId;
        e->correlationId = r.correlationId;
        return true;
    }
    default:
        return false;
    }
}

CUpti_ActivityKind
CuptiKind(const ActivityRecord& r)
{
    switch (r.kind)
    {
    case ActivityKind::Kernel:
        return CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    case ActivityKind::Memcpy:
        return CUPTI_ACTIVITY_KIND_MEMCPY;
    case ActivityKind::Memset:
        return CUPTI_ACTIVITY_KIND_MEMSET;
    case ActivityKind::Driver:
        return CUPTI_ACTIVITY_KIND_DRIVER;
    case ActivityKind::ExternalCorrelation:
        return CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    default:
        return CUPTI_ACTIVITY_KIND_RUNTIME;
    }
}

// The kinds eidolon records, by CUPTI's name for them.
bool
ToActivityKind(CUpti_ActivityKind kind, ActivityKind* out)
{
    switch (kind)
    {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        *out = ActivityKind::Kernel;
        return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        *out = ActivityKind::Memcpy;
        return true;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        *out = ActivityKind::Memset;
        return true;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
        *out = ActivityKind::Runtime;
        return true;
    case CUPTI_ACTIVITY_KIND_DRIVER:
        *out = ActivityKind::Driver;
        return true;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        *out = ActivityKind::ExternalCorrelation;
        return true;
    default:
        return false;
    }
}

// The kinds CUPTI has that no emulated work produces: enabling them succeeds, no record comes.
bool
RecordsNothing(CUpti_ActivityKind kind)
{
    return kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION || kind == CUPTI_ACTIVITY_KIND_OVERHEAD ||
           kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT || kind == CUPTI_ACTIVITY_KIND_MEMCPY2 ||
           kind == CUPTI_ACTIVITY_KIND_NAME || kind == CUPTI_ACTIVITY_KIND_MARKER ||
           kind == CUPTI_ACTIVITY_KIND_MEMORY2 || kind == CUPTI_ACTIVITY_KIND_CONTEXT ||
           kind == CUPTI_ACTIVITY_KIND_DEVICE;
}

// Asks the client for the buffer the next records go to, unless one is held.
void
HoldBuffer()
{
    if (!g_session.held && g_session.request)
    {
        g_session.request(&g_session.held, &g_session.heldSize, &g_session.heldMaxRecords);
        if (!g_session.held)
        {
            g_session.heldSize = 0;
        }
    }
}

bool
AnyEnabled()
{
    return ActivityLog::Get().Recording();
}

// The records final now, from the emulator (nothing before it exists).
std::vector<ActivityRecord>
CollectRecords()
{
    Emulator* emulator = Emulator::IfCreated();
    if (!emulator)
    {
        return {};
    }
    ApiCall call(CallKind::Untimed, false); // as VirtualNow; the simulator may be asked
    return ActivityLog::Get().Collect([emulator](const std::vector<uint64_t>& records)
                                      { return emulator->RecordEnds(records); });
}

} // namespace

// The generated stubs' handler: one warning for the whole library, naming the first call.
EIDOLON_EXPORT int
eidolonCuptiUnsupported(const char* api)
{
    if (!g_warned.exchange(true))
    {
        Warn(std::string(api) +
             ": not supported by eidolon's CUPTI (returns CUPTI_ERROR_NOT_SUPPORTED); its activity "
             "API works (torch.profiler's CUDA activities), its callback, counter, sampling and "
             "profiler APIs do not");
    }
    return CUPTI_ERROR_NOT_SUPPORTED;
}

// The CUPTI API version of the toolkit eidolon is built with.
EIDOLON_EXPORT CUptiResult
cuptiGetVersion(uint32_t* version)
{
    return Reply::Store(version, uint32_t(CUPTI_API_VERSION));
}

// The text of a result code, as NVIDIA's library words the ones eidolon returns.
EIDOLON_EXPORT CUptiResult
cuptiGetResultString(CUptiResult result, const char** text)
{
    const char* words = result == CUPTI_SUCCESS                   ? "CUPTI_SUCCESS"
                        : result == CUPTI_ERROR_INVALID_PARAMETER ? "CUPTI_ERROR_INVALID_PARAMETER"
                        : result == CUPTI_ERROR_INVALID_KIND      ? "CUPTI_ERROR_INVALID_KIND"
                        : result == CUPTI_ERROR_MAX_LIMIT_REACHED ? "CUPTI_ERROR_MAX_LIMIT_REACHED"
                        : result == CUPTI_ERROR_NOT_SUPPORTED     ? "CUPTI_ERROR_NOT_SUPPORTED"
                                                                  : "CUPTI_ERROR_UNKNOWN";
    return Reply::Store(text, words);
}

// The current timestamp: virtual CLOCK_REALTIME nanoseconds.
EIDOLON_EXPORT CUptiResult
cuptiGetTimestamp(uint64_t* timestamp)
{
    return Reply::Store(timestamp, uint64_t(VirtualNow()));
}

// The name of a runtime or driver callback id (the toolkit's enum spelling, as NVIDIA's does).
EIDOLON_EXPORT CUptiResult
cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name)
{
    if (!name)
    {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    auto find = [cbid, name](const auto& table)
    {
        for (const CallbackName& entry : table)
        {
            if (entry.id == cbid)
            {
                *name = entry.name;
                return CUPTI_SUCCESS;
            }
        }
        return CUPTI_ERROR_INVALID_PARAMETER;
    };
    return domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? find(kRuntimeNames)
           : domain == CUPTI_CB_DOMAIN_DRIVER_API ? find(kDriverNames)
                                                  : CUPTI_ERROR_INVALID_PARAMETER;
}

// Registers the client's buffer callbacks: asked for buffers at a flush, given them back filled.
EIDOLON_EXPORT CUptiResult
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                               CUpti_BuffersCallbackCompleteFunc complete)
{
    if (!request || !complete)
    {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    std::lock_guard<std::recursive_mutex> lock(g_session.mutex);
    g_session.request = request;
    g_session.complete = complete;
    return CUPTI_SUCCESS;
}

// Records of `kind` from now on (a session starts when the first kind is enabled).
EIDOLON_EXPORT CUptiResult
cuptiActivityEnable(CUpti_ActivityKind kind)
{
    ActivityKind ours;
    if (!ToActivityKind(kind, &ours))
    {
        return RecordsNothing(kind) ? CUPTI_SUCCESS : CUPTI_ERROR_NOT_SUPPORTED;
    }
    std::lock_guard<std::recursive_mutex> lock(g_session.mutex);
    if (!AnyEnabled())
    {
        g_session.startPinned = false;
        g_session.converterRuns.clear();
        ActivityLog::Get().TakeConverterRuns(); // a converter calibrated before the session
        Read(true);
    }
    if (ours == ActivityKind::Kernel)
    {
        g_session.kernelAsConcurrent = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    }
    ActivityLog::Get().Enable(ours, true);
    HoldBuffer();
    return CUPTI_SUCCESS;
}

// No more records of `kind` (those already kept still come at the next flush).
EIDOLON_EXPORT CUptiResult
cuptiActivityDisable(CUpti_ActivityKind kind)
{
    ActivityKind ours;
    if (ToActivityKind(kind, &ours))
    {
        ActivityLog::Get().Enable(ours, false);
        return CUPTI_SUCCESS;
    }
    return RecordsNothing(kind) ? CUPTI_SUCCESS : CUPTI_ERROR_NOT_SUPPORTED;
}

// Per-call filters of the runtime and driver records: the calls eidolon records are always on.
EIDOLON_EXPORT CUptiResult
cuptiActivityEnableRuntimeApi(CUpti_CallbackId, uint8_t)
{
    return CUPTI_SUCCESS;
}

EIDOLON_EXPORT CUptiResult
cuptiActivityEnableDriverApi(CUpti_CallbackId, uint8_t)
{
    return CUPTI_SUCCESS;
}

// Device timestamps for CUDA event records: eidolon's event records carry none.
EIDOLON_EXPORT CUptiResult
cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t)
{
    return CUPTI_SUCCESS;
}

// Buffer sizes and per-thread buffers: records are kept by the emulator and written at a flush,
// so every size is accepted.
EIDOLON_EXPORT CUptiResult
cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t* valueSize, void* value)
{
    return valueSize && value ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

// The client's timestamp source: records come in its units (see the top of this file).
EIDOLON_EXPORT CUptiResult
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc callback)
{
    std::lock_guard<std::recursive_mutex> lock(g_session.mutex);
    g_session.timestamp = callback;
    ActivityLog::Get().SetTimestampSource(callback);
    if (AnyEnabled())
    {
        Read(true);
    }
    return CUPTI_SUCCESS;
}

// Ties the calling thread's next calls to `id` (of `kind`) until it is popped.
EIDOLON_EXPORT CUptiResult
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    if (!g_session.startPinned && AnyEnabled())
    {
        std::lock_guard<std::recursive_mutex> lock(g_session.mutex);
        if (!g_session.startPinned)
        {
            g_session.startPinned = true; // Kineto's operators start: its converter's first reading
            Read(true);
        }
    }
    ActivityLog::Get().PushExternal(uint32_t(kind), id);
    return CUPTI_SUCCESS;
}

// Unties the innermost id of `kind` on the calling thread (CUPTI_ERROR_QUEUE_EMPTY: none).
EIDOLON_EXPORT CUptiResult
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t* lastId)
{
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return ActivityLog::Get().PopExternal(uint32_t(kind), lastId) ? CUPTI_SUCCESS
                                                                  : CUPTI_ERROR_QUEUE_EMPTY;
}

// Hands every record whose times are final to the client: buffers asked for, filled, given back.
EIDOLON_EXPORT CUptiResult
cuptiActivityFlushAll(uint32_t)
{
    std::lock_guard<std::recursive_mutex> lock(g_session.mutex);
    if (!g_session.request || !g_session.complete)
    {
        return CUPTI_SUCCESS; // nobody to give records to: they stay
    }
    std::vector<ActivityRecord> records = CollectRecords();
    Read(false);
    g_line = FlushLine();
    size_t next = 0;
    bool first = true;
    while (first || next < records.size())
    {
        first = false;
        HoldBuffer();
        uint8_t* buffer = g_session.held;
        size_t size = g_session.heldSize;
        size_t maxRecords = g_session.heldMaxRecords;
        g_session.held = nullptr;
        if (!buffer || size == 0)
        {
            g_session.dropped += records.size() - next; // the client refused: the rest are lost
            break;
        }
        size_t used = 0;
        size_t count = 0;
        for (; next < records.size() && (maxRecords == 0 || count < maxRecords); ++next)
        {
            size_t bytes = RecordBytes(CuptiKind(records[next]));
            if (used + bytes > size)
            {
                break;
            }
            std::memset(buffer + used, 0, bytes);
            if (WriteRecord(records[next], buffer + used))
            {
                used += bytes;
                ++count;
            }
        }
        g_session.complete(nullptr, 0, buffer, size, used);
        if (used == 0 && next < records.size())
        {
            g_session.dropped += records.size() - next; // a buffer too small for one record
            break;
        }
    }
    if (AnyEnabled())
    {
        HoldBuffer(); // recording goes on: the next records' buffer
    }
    return CUPTI_SUCCESS;
}

// The record after `*record` in a buffer the client got back (the first when null);
// CUPTI_ERROR_MAX_LIMIT_REACHED past the last.
EIDOLON_EXPORT CUptiResult
cuptiActivityGetNextRecord(uint8_t* buffer, size_t validSize, CUpti_Activity** record)
{
    if (!buffer || !record)
    {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    uint8_t* at =
        *record ? reinterpret_cast<uint8_t*>(*record) + RecordBytes((*record)->kind) : buffer;
    if (at + sizeof(CUpti_Activity) > buffer + validSize)
    {
        *record = nullptr;
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    *record = reinterpret_cast<CUpti_Activity*>(at);
    return CUPTI_SUCCESS;
}

// Records lost because the client gave no buffer for them.
EIDOLON_EXPORT CUptiResult
cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped)
{
    std::lock_guard<std::recursive_mutex> lock(g_session.mutex);
    return Reply::Store(dropped, g_session.dropped + ActivityLog::Get().Dropped());
}

// Ends profiling: records not yet flushed are dropped.
EIDOLON_EXPORT CUptiResult
cuptiFinalize()
{
    for (unsigned k = 0; k < unsigned(ActivityKind::Count); ++k)
    {
        ActivityLog::Get().Enable(ActivityKind(k), false);
    }
    ActivityLog::Get().Clear();
    return CUPTI_SUCCESS;
}
