// Stream and event API family: FIFO stream timelines, legacy and per-thread default streams,
// events with exact elapsed times, cross-stream waits, queries (polling loops become waits).
#include "runtime-common.h"

#include <algorithm>
#include <cstring>

using namespace eidolon::gpu;
using namespace eidolon::gpu::rt;

namespace
{

cudaError_t
CreateStream(cudaStream_t* handle, unsigned flags, int priority)
{
    ApiCall call(CallKind::Untimed);
    if (!handle || (flags & ~kStreamNonBlocking))
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (CheckReady(call.Emu()) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    priority = std::max(-5, std::min(0, priority)); // clamped to the range, as CUDA does
    call.Emu().Clock().Charge(spec::HostCall::StreamCreate);
    *handle = reinterpret_cast<cudaStream_t>(
        call.Emu().CreateStream(call.Emu().CurrentDevice(), flags, priority));
    return cudaSuccess;
}

cudaError_t
SynchronizeStream(cudaStream_t handle, bool perThread)
{
    ApiCall call(CallKind::Sync);
    ActivityLog::MarkCall(ActivityCall::StreamSynchronize); // for a profiler
    Stream* stream = StreamOf(call.Emu(), handle, perThread);
    if (!stream)
    {
        return Fail(CheckReady(call.Emu()) == cudaSuccess ? cudaErrorInvalidResourceHandle
                                                          : cudaErrorNoDevice);
    }
    if (stream->capture)
    {
        return Fail(cudaErrorStreamCaptureUnsupported);
    }
    call.Emu().SyncTo(call.Emu().StreamCompletion(*stream), "cudaStreamSynchronize");
    call.Emu().Clock().Charge(spec::HostCall::StreamSynchronize); // from completion to return
    return CheckReady(call.Emu()); // the simulator may have gone while this call waited
}

cudaError_t
QueryStream(cudaStream_t handle, bool perThread)
{
    ApiCall call(CallKind::Query);
    Emulator& emu = call.Emu();
    Stream* stream = StreamOf(emu, handle, perThread);
    if (!stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    // Not charged: queries are free (HostClock::NotReadyQuery).
    Ns completion = emu.Resolve(emu.StreamCompletion(*stream), "cudaStreamQuery", true);
    if (completion <= emu.Clock().Now() ||
        emu.PollTurnsIntoWait(stream, emu.StreamCompletion(*stream), "cudaStreamQuery"))
    {
        emu.PollSatisfied();
        return cudaSuccess;
    }
    emu.Clock().NotReadyQuery();
    return cudaErrorNotReady; // not an error: not recorded as the last error
}

cudaError_t
RecordEvent(cudaEvent_t handle, cudaStream_t streamHandle, bool perThread)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    auto* event = reinterpret_cast<Event*>(handle);
    Stream* stream = StreamOf(emu, streamHandle, perThread);
    if (!emu.IsEvent(event) || !stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    emu.Clock().Charge((event->flags & kEventDisableTiming)
                           ? spec::HostCall::EventRecordDisableTiming
                           : spec::HostCall::EventRecord);
    emu.RecordEvent(*event, *stream);
    return cudaSuccess;
}

cudaError_t
WaitEvent(cudaStream_t streamHandle, cudaEvent_t handle, bool perThread)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    auto* event = reinterpret_cast<Event*>(handle);
    Stream* stream = StreamOf(emu, streamHandle, perThread);
    if (!emu.IsEvent(event) || !stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    emu.Clock().Charge(spec::HostCall::StreamWaitEvent);
    emu.StreamWaitEvent(*stream, *event);
    return cudaSuccess;
}

// Reads one property of a stream into *out.
template<typename T, typename Get>
cudaError_t
StreamProperty(cudaStream_t handle, bool perThread, T* out, Get get)
{
    ApiCall call(CallKind::Untimed);
    Stream* stream = StreamOf(call.Emu(), handle, perThread);
    if (!stream || !out)
    {
        return Fail(stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    }
    *out = static_cast<T>(get(*stream));
    return cudaSuccess;
}

} // namespace

// Creates a blocking stream on the current device.
EIDOLON_EXPORT cudaError_t
cudaStreamCreate(cudaStream_t* pStream)
{
    return CreateStream(pStream, 0, 0);
}

// Creates a stream; cudaStreamNonBlocking streams do not order with the legacy default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags)
{
    return CreateStream(pStream, flags, 0);
}

// Creates a stream with a priority (recorded; priorities do not preempt in the model).
EIDOLON_EXPORT cudaError_t
cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority)
{
    return CreateStream(pStream, flags, priority);
}

// Destroys a stream; work already placed on it keeps its times.
EIDOLON_EXPORT cudaError_t
cudaStreamDestroy(cudaStream_t stream)
{
    ApiCall call(CallKind::Untimed);
    if (!call.Emu().DestroyStream(reinterpret_cast<Stream*>(stream)))
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    call.Emu().Clock().Charge(spec::HostCall::StreamDestroy);
    return cudaSuccess;
}

// Waits for everything placed on the stream (and, for the legacy stream, on blocking streams).
EIDOLON_EXPORT cudaError_t
cudaStreamSynchronize(cudaStream_t stream)
{
    return SynchronizeStream(stream, false);
}

// cudaStreamSynchronize with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return SynchronizeStream(stream, true);
}

// cudaSuccess when the stream's work is done at the current host time, cudaErrorNotReady else.
EIDOLON_EXPORT cudaError_t
cudaStreamQuery(cudaStream_t stream)
{
    return QueryStream(stream, false);
}

// cudaStreamQuery with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamQuery_ptsz(cudaStream_t stream)
{
    return QueryStream(stream, true);
}

// Flags the stream was created with.
EIDOLON_EXPORT cudaError_t
cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags)
{
    return StreamProperty(stream, false, flags, [](const Stream& s) { return s.flags; });
}

// cudaStreamGetFlags with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int* flags)
{
    return StreamProperty(stream, true, flags, [](const Stream& s) { return s.flags; });
}

// Priority the stream was created with.
EIDOLON_EXPORT cudaError_t
cudaStreamGetPriority(cudaStream_t stream, int* priority)
{
    return StreamProperty(stream, false, priority, [](const Stream& s) { return s.priority; });
}

// cudaStreamGetPriority with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetPriority_ptsz(cudaStream_t stream, int* priority)
{
    return StreamProperty(stream, true, priority, [](const Stream& s) { return s.priority; });
}

// Device the stream belongs to.
EIDOLON_EXPORT cudaError_t
cudaStreamGetDevice(cudaStream_t stream, int* device)
{
    return StreamProperty(stream, false, device, [](const Stream& s) { return s.device; });
}

// cudaStreamGetDevice with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetDevice_ptsz(cudaStream_t stream, int* device)
{
    return StreamProperty(stream, true, device, [](const Stream& s) { return s.device; });
}

// Unique id of the stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetId(cudaStream_t stream, unsigned long long* id)
{
    return StreamProperty(stream, false, id, [](const Stream& s) { return s.id; });
}

// cudaStreamGetId with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetId_ptsz(cudaStream_t stream, unsigned long long* id)
{
    return StreamProperty(stream, true, id, [](const Stream& s) { return s.id; });
}

// Makes all later work on `stream` wait for the event's completion (or joins a capture).
EIDOLON_EXPORT cudaError_t
cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int)
{
    return WaitEvent(stream, event, false);
}

// cudaStreamWaitEvent with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int)
{
    return WaitEvent(stream, event, true);
}

// Creates an event on the current device.
EIDOLON_EXPORT cudaError_t
cudaEventCreate(cudaEvent_t* event)
{
    ApiCall call(CallKind::Untimed);
    if (!event)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *event = reinterpret_cast<cudaEvent_t>(call.Emu().CreateEvent(0));
    // Not charged (its 0.23 us on the host description either): how many events a threaded
    // runtime creates depends on when another thread gave some back to its pool (PyTorch's NCCL
    // process group returns a work's events when its watchdog thread, on real time, finds the
    // work done), so a charge here made virtual times depend on thread scheduling.
    return cudaSuccess;
}

// Creates an event; cudaEventDisableTiming events cannot be timed.
EIDOLON_EXPORT cudaError_t
cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    if (!event)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *event = reinterpret_cast<cudaEvent_t>(call.Emu().CreateEvent(flags));
    return cudaSuccess; // not charged: see cudaEventCreate
}

// Destroys an event.
EIDOLON_EXPORT cudaError_t
cudaEventDestroy(cudaEvent_t event)
{
    ApiCall call(CallKind::Untimed);
    if (!call.Emu().DestroyEvent(reinterpret_cast<Event*>(event)))
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    return cudaSuccess; // not charged: see cudaEventCreate
}

// Places a zero-length marker on the stream; the event completes when the stream reaches it.
EIDOLON_EXPORT cudaError_t
cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return RecordEvent(event, stream, false);
}

// cudaEventRecord with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return RecordEvent(event, stream, true);
}

// cudaEventRecord with flags (cudaEventRecordExternal only matters inside graphs).
EIDOLON_EXPORT cudaError_t
cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int)
{
    return RecordEvent(event, stream, false);
}

// cudaEventRecordWithFlags with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int)
{
    return RecordEvent(event, stream, true);
}

// cudaSuccess when the event has completed at the current host time (or was never recorded).
EIDOLON_EXPORT cudaError_t
cudaEventQuery(cudaEvent_t handle)
{
    ApiCall call(CallKind::Query);
    Emulator& emu = call.Emu();
    auto* event = reinterpret_cast<Event*>(handle);
    if (!emu.IsEvent(event))
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    // Not charged: queries are free (HostClock::NotReadyQuery).
    Ns time =
        event->recorded ? emu.Resolve(emu.EventCompletion(*event), "cudaEventQuery", true) : 0;
    if (!event->recorded || time <= emu.Clock().Now() ||
        emu.PollTurnsIntoWait(event, emu.EventCompletion(*event), "cudaEventQuery"))
    {
        emu.PollSatisfied();
        return cudaSuccess;
    }
    emu.Clock().NotReadyQuery();
    return cudaErrorNotReady;
}

// Blocks the host until the event completes: the host clock moves to the event's time.
EIDOLON_EXPORT cudaError_t
cudaEventSynchronize(cudaEvent_t handle)
{
    ApiCall call(CallKind::Sync);
    ActivityLog::MarkCall(ActivityCall::EventSynchronize); // for a profiler
    Emulator& emu = call.Emu();
    auto* event = reinterpret_cast<Event*>(handle);
    if (!emu.IsEvent(event))
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    if (event->recorded)
    {
        emu.SyncTo(emu.EventCompletion(*event), "cudaEventSynchronize");
    }
    emu.Clock().Charge(spec::HostCall::EventSynchronize); // from completion to return
    return CheckReady(emu); // the simulator may have gone while this call waited
}

// CUDA 12.8+'s name for cudaEventElapsedTime (same semantics; CUDA 13 drops the suffix).
EIDOLON_EXPORT cudaError_t
cudaEventElapsedTime_v2(float* ms, cudaEvent_t startHandle, cudaEvent_t endHandle)
{
    return cudaEventElapsedTime(ms, startHandle, endHandle);
}

// Exact time between two completed events, in milliseconds.
EIDOLON_EXPORT cudaError_t
cudaEventElapsedTime(float* ms, cudaEvent_t startHandle, cudaEvent_t endHandle)
{
    ApiCall call(CallKind::Query);
    Emulator& emu = call.Emu();
    auto* start = reinterpret_cast<Event*>(startHandle);
    auto* end = reinterpret_cast<Event*>(endHandle);
    if (!ms)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!emu.IsEvent(start) || !emu.IsEvent(end) || (start->flags & kEventDisableTiming) ||
        (end->flags & kEventDisableTiming) || !start->recorded || !end->recorded)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    Ns startTime = emu.Resolve(emu.EventCompletion(*start), "cudaEventElapsedTime", true);
    Ns endTime = emu.Resolve(emu.EventCompletion(*end), "cudaEventElapsedTime", true);
    if (std::max(startTime, endTime) > emu.Clock().Now())
    {
        return Fail(cudaErrorNotReady);
    }
    *ms = static_cast<float>((endTime - startTime) / 1e6);
    return cudaSuccess;
}

// Stream attributes (access policy window, synchronization policy, priority) are accepted and
// do not change prices; reading one gives zeros.
EIDOLON_EXPORT cudaError_t
cudaStreamSetAttribute(cudaStream_t stream, cudaStreamAttrID, const cudaStreamAttrValue* value)
{
    ApiCall call(CallKind::Untimed);
    return StreamOf(call.Emu(), stream, false) && value ? cudaSuccess : Fail(cudaErrorInvalidValue);
}

// See cudaStreamSetAttribute.
EIDOLON_EXPORT cudaError_t
cudaStreamGetAttribute(cudaStream_t stream, cudaStreamAttrID, cudaStreamAttrValue* value)
{
    ApiCall call(CallKind::Untimed);
    if (!StreamOf(call.Emu(), stream, false) || !value)
    {
        return Fail(cudaErrorInvalidValue);
    }
    std::memset(value, 0, sizeof(*value));
    return cudaSuccess;
}

// See cudaStreamSetAttribute.
EIDOLON_EXPORT cudaError_t
cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
    ApiCall call(CallKind::Untimed);
    return StreamOf(call.Emu(), dst, false) && StreamOf(call.Emu(), src, false)
               ? cudaSuccess
               : Fail(cudaErrorInvalidResourceHandle);
}
