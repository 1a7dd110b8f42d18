#include "activity-log.h"

#include "diagnostics.h"
#include "per-thread.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <unordered_map>
#include <unordered_set>

namespace eidolon::gpu
{

namespace
{

// CUPTI's external correlation kinds run 0..7 (CUpti_ExternalCorrelationKind); the stacks of the
// calling thread, one per kind.
constexpr uint32_t kExternalKinds = 8;
using ExternalStacks = std::array<std::vector<uint64_t>, kExternalKinds>;
PerThread<ExternalStacks> g_external;

// This thread's run of virtual CLOCK_REALTIME readings paired with the timestamp source.
PerThread<ActivityLog::Pairs> g_run;

// The call this thread is in (trivially destructible thread-locals: per-thread.h).
thread_local Ns t_callStart = 0;
thread_local uint64_t t_sourceStart = 0; // the timestamp source as the call began (0: none)
thread_local ActivityCall t_call = ActivityCall::Default;
thread_local ActivityMemory t_copy[2] = {ActivityMemory::Unknown, ActivityMemory::Unknown};
thread_local bool t_peer = false;
thread_local bool t_inSource = false;    // inside the client's timestamp source
thread_local bool t_entered = false;     // EnterCall began the call this thread is in
thread_local uint32_t t_firstInCall = 0; // the call's first correlation id (0: none yet)
thread_local bool t_launchMarked = false;
thread_local Dim3 t_grid, t_block;
thread_local uint32_t t_sharedMemory = 0;

unsigned
Bit(ActivityKind kind)
{
    return 1u << unsigned(kind);
}

ActivityKind
DeviceKind(OpKind kind)
{
    return kind == OpKind::Copy     ? ActivityKind::Memcpy
           : kind == OpKind::Memset ? ActivityKind::Memset
                                    : ActivityKind::Kernel;
}

} // namespace

ActivityLog&
ActivityLog::Get()
{
    // Never destroyed (exit-time flushes still work), and not on the heap: the clock interposers
    // reach it, and allocators read clocks.
    alignas(ActivityLog) static unsigned char storage[sizeof(ActivityLog)];
    static ActivityLog* log = new (storage) ActivityLog();
    return *log;
}

void
ActivityLog::Enable(ActivityKind kind, bool on)
{
    unsigned enabled = on ? m_enabled.fetch_or(Bit(kind)) | Bit(kind)
                          : m_enabled.fetch_and(~Bit(kind)) & ~Bit(kind);
    m_recording.store(enabled != 0, std::memory_order_relaxed);
}

bool
ActivityLog::Enabled(ActivityKind kind) const
{
    return (m_enabled.load(std::memory_order_relaxed) & Bit(kind)) != 0;
}

void
ActivityLog::PushExternal(uint32_t externalKind, uint64_t id)
{
    if (externalKind < kExternalKinds)
    {
        g_external.Get()[externalKind].push_back(id);
    }
}

bool
ActivityLog::PopExternal(uint32_t externalKind, uint64_t* id)
{
    if (externalKind >= kExternalKinds)
    {
        return false;
    }
    std::vector<uint64_t>& stack = g_external.Get()[externalKind];
    if (stack.empty())
    {
        return false;
    }
    if (id)
    {
        *id = stack.back();
    }
    stack.pop_back();
    return true;
}

void
ActivityLog::EnterCall(Ns now)
{
    t_callStart = now;
    t_sourceStart = Get().ReadSource();
    t_call = ActivityCall::Default;
    t_entered = true;
    t_firstInCall = 0;
    t_launchMarked = false; // a mark left by a launch that was captured, not placed
    if (Pairs* run = g_run.IfCreated())
    {
        run->clear(); // work submitted between readings: not a converter's calibration
    }
}

void
ActivityLog::LeaveCall(Ns now)
{
    const bool waited = t_call == ActivityCall::DeviceSynchronize ||
                        t_call == ActivityCall::StreamSynchronize ||
                        t_call == ActivityCall::EventSynchronize;
    const bool entered = t_entered;
    t_entered = false;
    if (waited && entered && Enabled(ActivityKind::Runtime))
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        NewCorrelation(t_call, OpKind::Kernel, now); // its record, tied to the pushed ids
        t_call = ActivityCall::Default;
        t_firstInCall = 0;
        return;
    }
    if (t_firstInCall == 0)
    {
        return;
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    // The call's records are among the newest (unless a flush took them); another thread's calls
    // may have placed records after them while this one waited.
    auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
    for (auto it = m_records.rbegin(); it != m_records.rend() && it->correlationId >= t_firstInCall;
         ++it)
    {
        if ((it->kind == ActivityKind::Runtime || it->kind == ActivityKind::Driver) &&
            it->threadId == tid)
        {
            it->end = std::max(it->end, now);
            it->sourceEnd = it->sourceStart ? std::max(it->sourceEnd, ReadSource()) : 0;
        }
    }
    t_firstInCall = 0;
}

void
ActivityLog::MarkCall(ActivityCall call)
{
    t_call = call;
}

void
ActivityLog::MarkLaunch(Dim3 grid, Dim3 block, uint32_t sharedMemory)
{
    t_launchMarked = true;
    t_grid = grid;
    t_block = block;
    t_sharedMemory = sharedMemory;
}

void
ActivityLog::MarkCopy(ActivityMemory source, ActivityMemory destination, bool peer)
{
    t_copy[0] = source;
    t_copy[1] = destination;
    t_peer = peer;
}

const char*
ActivityLog::Intern(const std::string& name)
{
    static std::mutex mutex;
    static auto* names = new std::unordered_set<std::string>(); // never freed: records point here
    std::lock_guard<std::mutex> lock(mutex);
    return names->insert(name).first->c_str();
}

// A new correlation id for an op placed now: the call's record, and one external correlation
// record per kind the thread has an id pushed for.
uint32_t
ActivityLog::NewCorrelation(ActivityCall call, OpKind kind, Ns now)
{
    uint32_t id = ++m_nextCorrelation;
    t_firstInCall = t_firstInCall ? t_firstInCall : id;
    if (call == ActivityCall::Default)
    {
        call = kind == OpKind::Copy            ? ActivityCall::MemcpyAsync
               : kind == OpKind::Memset        ? ActivityCall::MemsetAsync
               : kind == OpKind::GraphNode     ? ActivityCall::GraphLaunch
               : kind == OpKind::Communication ? ActivityCall::DriverLaunchKernelEx
                                               : ActivityCall::LaunchKernel;
    }
    bool driver =
        call == ActivityCall::DriverLaunchKernel || call == ActivityCall::DriverLaunchKernelEx;
    ActivityRecord api{driver ? ActivityKind::Driver : ActivityKind::Runtime};
    if (Enabled(api.kind))
    {
        api.correlationId = id;
        api.call = call;
        api.start = std::min(t_callStart, now);
        api.end = now;
        api.threadId = static_cast<uint32_t>(syscall(SYS_gettid));
        api.sourceStart = t_sourceStart;
        api.sourceEnd = t_sourceStart ? ReadSource() : 0;
        m_records.push_back(api);
        m_final.push_back(true);
    }
    ExternalStacks* stacks = g_external.IfCreated();
    if (stacks && Enabled(ActivityKind::ExternalCorrelation))
    {
        for (uint32_t k = 0; k < kExternalKinds; ++k)
        {
            if (!(*stacks)[k].empty())
            {
                ActivityRecord external{ActivityKind::ExternalCorrelation};
                external.correlationId = id;
                external.externalKind = k;
                external.externalId = (*stacks)[k].back();
                m_records.push_back(external);
                m_final.push_back(true);
            }
        }
    }
    return id;
}

void
ActivityLog::OnOp(const ActivityOp& op, Ns now)
{
    if (op.kind == OpKind::EventRecord || std::strcmp(op.provider, "host-function") == 0)
    {
        return; // CUPTI records neither an event record nor a host function as device work
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_records.size() >= kMaxRecords)
    {
        if (m_dropped.fetch_add(1) == 0)
        {
            Warn("CUPTI: more than " + std::to_string(kMaxRecords) +
                 " activity records since the last flush; later ops are dropped (counted in "
                 "cuptiActivityGetNumDroppedRecords)");
        }
        return;
    }
    uint32_t correlation =
        op.continuesLaunch ? m_nextCorrelation : NewCorrelation(t_call, op.kind, now);
    t_call = ActivityCall::Default;
    bool launchMarked = t_launchMarked;
    t_launchMarked = false;
    if (!Enabled(DeviceKind(op.kind)))
    {
        return;
    }
    ActivityRecord record{DeviceKind(op.kind)};
    record.correlationId = correlation;
    record.device = op.device;
    record.streamId = op.streamId;
    record.name = Intern(op.label);
    record.bytes = op.bytes;
    record.graphId = op.graphId;
    record.graphNodeId = op.graphNode ? uint64_t(op.graphId) << 32 | op.graphNode : 0;
    if (launchMarked && op.kind == OpKind::Kernel)
    {
        record.grid = t_grid;
        record.block = t_block;
        record.sharedMemory = t_sharedMemory;
    }
    record.start = op.start;
    record.end = op.end;
    if (op.kind == OpKind::Copy)
    {
        record.source = t_copy[0];
        record.destination = t_copy[1];
        record.peer = t_peer;
    }
    m_records.push_back(record);
    m_final.push_back(op.pending == 0);
    if (op.pending == 0)
    {
        return;
    }
    Part part{m_records.size() - 1, op.offset,
              op.nodeDuration >= 0 ? op.nodeDuration : op.duration};
    if (op.continuesLaunch && !m_unfinished.empty())
    {
        m_unfinished.back().parts.push_back(part);
        return;
    }
    Unfinished unfinished{op.pending,
                          op.duration,
                          op.kind == OpKind::Communication,
                          op.start,
                          op.deps ? *op.deps : std::vector<uint64_t>{},
                          {part}};
    m_unfinished.push_back(std::move(unfinished));
}

std::vector<ActivityRecord>
ActivityLog::Collect(const RecordEnds& ends)
{
    // The ends of every record an unfinished op waits on, in one question, asked without this
    // log's lock: the emulator's is released while the simulator answers, and other threads
    // place (and record) ops meanwhile.
    std::vector<uint64_t> ask;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const Unfinished& u : m_unfinished)
        {
            ask.push_back(u.record);
            ask.insert(ask.end(), u.deps.begin(), u.deps.end());
        }
    }
    std::sort(ask.begin(), ask.end());
    ask.erase(std::unique(ask.begin(), ask.end()), ask.end());
    std::vector<Ns> answer = ask.empty() ? std::vector<Ns>{} : ends(ask);
    std::lock_guard<std::mutex> lock(m_mutex);
    std::unordered_map<uint64_t, Ns> end;
    for (size_t i = 0; i < ask.size() && i < answer.size(); ++i)
    {
        if (answer[i] >= 0)
        {
            end[ask[i]] = answer[i];
        }
    }
    // A record's slots run back to back up to its end: walk them from the last. (Ops folded into
    // a record after recording stopped would shift the recorded ones; Kineto flushes as it stops.)
    std::unordered_map<uint64_t, Ns> slotEnd;
    std::vector<Unfinished> left;
    for (auto it = m_unfinished.rbegin(); it != m_unfinished.rend(); ++it)
    {
        Unfinished& u = *it;
        auto found = end.find(u.record);
        bool known = found != end.end();
        Ns start = 0;
        Ns stop = 0;
        if (known && u.communication)
        {
            stop = found->second;
            start = u.ready;
            for (uint64_t dep : u.deps)
            {
                auto d = end.find(dep);
                known = known && d != end.end();
                start = known ? std::max(start, d->second) : start;
            }
        }
        else if (known)
        {
            Ns& slot = slotEnd.try_emplace(u.record, found->second).first->second;
            stop = slot;
            start = stop - u.duration;
            slot = start;
        }
        if (!known)
        {
            left.push_back(std::move(u));
            continue;
        }
        for (const Part& part : u.parts)
        {
            ActivityRecord& record = m_records[part.index];
            record.start = u.communication ? start : start + part.offset;
            record.end = u.communication ? stop : record.start + part.duration;
            m_final[part.index] = true;
        }
    }
    std::reverse(left.begin(), left.end());
    // Hand out the final records; the rest stay, renumbered.
    std::vector<ActivityRecord> out;
    std::vector<ActivityRecord> kept;
    std::vector<size_t> newIndex(m_records.size(), 0);
    for (size_t i = 0; i < m_records.size(); ++i)
    {
        if (m_final[i])
        {
            out.push_back(m_records[i]);
        }
        else
        {
            newIndex[i] = kept.size();
            kept.push_back(m_records[i]);
        }
    }
    for (Unfinished& u : left)
    {
        for (Part& part : u.parts)
        {
            part.index = newIndex[part.index];
        }
    }
    m_records = std::move(kept);
    m_final.assign(m_records.size(), false);
    m_unfinished = std::move(left);
    return out;
}

void
ActivityLog::SetTimestampSource(TimestampSource source)
{
    m_source.store(source, std::memory_order_relaxed);
}

uint64_t
ActivityLog::ReadSource() const
{
    TimestampSource source = Source();
    if (!source || !Recording() || t_inSource)
    {
        return 0;
    }
    t_inSource = true;
    uint64_t reading = source();
    t_inSource = false;
    return reading;
}

void
ActivityLog::OnClockRead(int clock, int64_t value, uint64_t before)
{
    if (before == 0)
    {
        return;
    }
    const uint64_t after = ReadSource();
    if (after == 0)
    {
        return;
    }
    if (clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID || clock < 0)
    {
        return; // CPU time (the host-time model's own readings) is no calibration's
    }
    if (clock != CLOCK_REALTIME)
    {
        if (Pairs* run = g_run.IfCreated()) // never allocates here: allocators read this clock
        {
            run->clear(); // another clock between: not a converter's calibration
        }
        return;
    }
    Pairs& run = g_run.Get();
    if (run.size() < kConverterPairs)
    {
        run.emplace_back(before + (after - before) / 2, value);
        if (run.size() == kConverterPairs)
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_converterRuns.push_back(run);
        }
    }
}

std::vector<ActivityLog::Pairs>
ActivityLog::TakeConverterRuns()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    std::vector<Pairs> runs = std::move(m_converterRuns);
    m_converterRuns.clear();
    return runs;
}

void
ActivityLog::Clear()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_records.clear();
    m_final.clear();
    m_unfinished.clear();
}

} // namespace eidolon::gpu
