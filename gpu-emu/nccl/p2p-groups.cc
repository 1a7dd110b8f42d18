// Point-to-point and groups: ncclSend, ncclRecv, ncclGroupStart/End/SimulateEnd, and the one path
// every operation takes to the emulator. Outside a group an operation is placed at once; inside
// one (groups nest, per thread) it waits for the outermost ncclGroupEnd, which places, for each
// communicator in the order it first appeared, its collectives as one record (issue order inside
// it: NCCL runs a group's collectives as one kernel, aggregated and spread over the channels,
// which the simulator's model lays out) and then all its sends and receives as one record, on
// the first stream its operations used, joined with the others.
#include "../core/per-thread.h"
#include "nccl-common.h"

#include <algorithm>

using namespace eidolon::gpu;
using namespace eidolon::gpu::nccl;

namespace eidolon::gpu::nccl
{
namespace
{

struct Task
{
    ncclComm* comm;
    Stream* stream;
    CommOp op;
    const char* api;
};

struct GroupState
{
    int depth = 0;
    ncclResult_t error = ncclSuccess; // first error of a call inside the group
    bool nonblocking = false;         // a nonblocking communicator's init is queued in it
    std::vector<Task> tasks;
    std::vector<SplitRequest> splits;
};

PerThread<GroupState> g_groups; // per-thread.h: no thread_local with a destructor

bool
IsP2p(const CommOp& op)
{
    return op.kind == CommOpKind::Send || op.kind == CommOpKind::Recv;
}

// The stream a handle names for `comm`: a null handle is the legacy stream of the communicator's
// device (NCCL launches on its own device whatever the caller's current device is).
Stream*
StreamFor(Emulator& emu, const ncclComm* comm, cudaStream_t handle)
{
    int current = emu.CurrentDevice();
    emu.SetCurrentDevice(comm->member.device);
    Stream* stream = emu.ResolveStream(static_cast<void*>(handle), false);
    emu.SetCurrentDevice(current);
    return stream;
}

ncclResult_t
Place(ApiCall& call, ncclComm* comm, Stream* stream, const std::vector<CommOp>& ops,
      const char* api)
{
    Emulator& emu = call.Emu();
    if (emu.ResolveStream(stream, false) != stream)
    {
        return Fail(ncclUnhandledCudaError, std::string(api) + ":stream",
                    std::string(api) + ": Cuda failure 'invalid resource handle' (the stream was "
                                       "destroyed before the group ended)");
    }
    // One enqueue per collective (a group of 8 all-reduces measured 8 times one); a group's sends
    // and receives on a communicator go to the GPU together, as NCCL fuses them into one kernel.
    const size_t enqueues = IsP2p(ops.front()) ? 1 : ops.size();
    for (size_t i = 0; i < enqueues; ++i)
    {
        emu.Clock().Charge(spec::HostCall::NcclEnqueue);
    }
    std::string error;
    if (!emu.PlaceCommunication(*stream, comm->member, comm->seq, ops, &error))
    {
        return Fail(ncclInvalidUsage, std::string(api) + ":place", std::string(api) + ": " + error);
    }
    ++comm->seq;
    if (std::find(comm->streams.begin(), comm->streams.end(), stream) == comm->streams.end())
    {
        comm->streams.push_back(stream);
    }
    return ncclSuccess;
}

// Places the operations of a group that just ended.
ncclResult_t
Flush(ApiCall& call, std::vector<Task> tasks)
{
    ncclResult_t result = ncclSuccess;
    auto note = [&result](ncclResult_t rc)
    {
        if (result == ncclSuccess)
        {
            result = rc;
        }
    };
    std::vector<ncclComm*> comms;
    for (const Task& task : tasks)
    {
        if (std::find(comms.begin(), comms.end(), task.comm) == comms.end())
        {
            comms.push_back(task.comm);
        }
    }
    for (ncclComm* comm : comms)
    {
        if (!IsLive(comm))
        {
            note(Fail(ncclInvalidUsage, "group:destroyed",
                      "ncclGroupEnd: a communicator was destroyed or aborted before the group "
                      "ended; its operations are dropped"));
            continue;
        }
        // NCCL launches a group's work on a communicator on the first stream its operations
        // used, once every other stream they used has reached the group (event joins), and
        // those streams then wait for the launch (enqueue.cc, ncclLaunchPrepare). One record of
        // its collectives (one kernel, laid out by the simulator's model), then one of its sends
        // and receives, both on that stream.
        std::vector<Stream*> streams;
        std::vector<CommOp> collectives, p2p;
        for (const Task& task : tasks)
        {
            if (task.comm != comm)
            {
                continue;
            }
            if (std::find(streams.begin(), streams.end(), task.stream) == streams.end())
            {
                streams.push_back(task.stream);
            }
            (IsP2p(task.op) ? p2p : collectives).push_back(task.op);
        }
        Emulator& emu = call.Emu();
        Stream* launch = streams.front();
        std::vector<Stream*> joined;
        for (size_t k = 1; k < streams.size(); ++k)
        {
            Stream* other = streams[k];
            if (emu.ResolveStream(other, false) != other)
            {
                note(Fail(ncclUnhandledCudaError, "ncclGroupEnd:stream",
                          "ncclGroupEnd: Cuda failure 'invalid resource handle' (a stream was "
                          "destroyed before the group ended)"));
                continue;
            }
            Event arrived{};
            arrived.device = launch->device;
            emu.RecordEvent(arrived, *other);
            emu.StreamWaitEvent(*launch, arrived);
            joined.push_back(other);
        }
        if (!collectives.empty())
        {
            note(Place(call, comm, launch, collectives, "ncclGroupEnd"));
        }
        if (!p2p.empty())
        {
            note(Place(call, comm, launch, p2p, "ncclGroupEnd"));
        }
        if (!joined.empty() && emu.ResolveStream(launch, false) == launch)
        {
            Event launched{};
            launched.device = launch->device;
            emu.RecordEvent(launched, *launch);
            for (Stream* other : joined)
            {
                emu.StreamWaitEvent(*other, launched);
            }
        }
    }
    return result;
}

} // namespace

bool
InGroup()
{
    return g_groups.Get().depth > 0;
}

void
NoteNonblockingInGroup()
{
    g_groups.Get().nonblocking = true;
}

ncclResult_t
GroupError(ncclResult_t code)
{
    if (g_groups.Get().depth > 0 && g_groups.Get().error == ncclSuccess && code != ncclSuccess)
    {
        g_groups.Get().error = code;
    }
    return code;
}

void
AddSplit(const SplitRequest& request)
{
    g_groups.Get().splits.push_back(request);
}

ncclResult_t
Submit(ApiCall& call, ncclComm* comm, cudaStream_t handle, const CommOp& op, const char* api)
{
    Emulator& emu = call.Emu();
    if (comm->revoked || comm->finalized)
    {
        return GroupError(Fail(ncclInvalidUsage, std::string(api) + ":state",
                               std::string(api) + " : communicator is " +
                                   (comm->revoked ? "revoked" : "finalized")));
    }
    Stream* stream = StreamFor(emu, comm, handle);
    if (!stream)
    {
        return GroupError(Fail(ncclUnhandledCudaError, std::string(api) + ":stream",
                               std::string(api) + " : Cuda failure 'invalid resource handle'"));
    }
    if (stream->device != comm->member.device)
    {
        return GroupError(Fail(ncclUnhandledCudaError, std::string(api) + ":streamdevice",
                               std::string(api) +
                                   " : Cuda failure 'invalid resource handle' "
                                   "(stream of device " +
                                   std::to_string(stream->device) + ", communicator on device " +
                                   std::to_string(comm->member.device) + ")"));
    }
    if (op.count == 0 && !IsP2p(op))
    {
        return ncclSuccess; // NCCL discards empty collectives (sends/receives of 0 still match)
    }
    if (g_groups.Get().depth > 0)
    {
        g_groups.Get().tasks.push_back(Task{comm, stream, op, api});
        return ncclSuccess;
    }
    return Place(call, comm, stream, {op}, api);
}

void
GroupStartInternal()
{
    if (g_groups.Get().depth++ == 0)
    {
        g_groups.Get().error = ncclSuccess;
    }
}

ncclResult_t
GroupEndInternal(ApiCall& call)
{
    if (g_groups.Get().depth == 0)
    {
        return Fail(ncclInvalidUsage, "groupend:nogroup", "ncclGroupEnd: not in a group call.");
    }
    if (--g_groups.Get().depth > 0)
    {
        return ncclSuccess;
    }
    std::vector<Task> tasks = std::move(g_groups.Get().tasks);
    std::vector<SplitRequest> splits = std::move(g_groups.Get().splits);
    ncclResult_t error = g_groups.Get().error;
    const bool nonblocking = g_groups.Get().nonblocking;
    g_groups.Get() = GroupState();
    if (error != ncclSuccess)
    {
        // As NCCL: an error inside the group fails the whole group; nothing of it is issued.
        for (const SplitRequest& request : splits)
        {
            *request.out = nullptr;
        }
        return error;
    }
    call.Emu().Clock().Charge(spec::HostCall::NcclGroupEnd);
    ncclResult_t placed = Flush(call, std::move(tasks));
    ncclResult_t split = splits.empty() ? ncclSuccess : ResolveSplits(call.Emu(), splits);
    ncclResult_t result = placed != ncclSuccess ? placed : split;
    // NCCL runs a group holding a nonblocking init on a thread of its own (groupLaunchNonBlocking)
    // and returns at once; the communicators report their state through ncclCommGetAsyncError.
    return result == ncclSuccess && nonblocking ? ncclInProgress : result;
}

} // namespace eidolon::gpu::nccl

namespace
{

// What the outermost ncclGroupEnd of the calling thread will do: submit work or not.
CallKind
GroupEndKind()
{
    return g_groups.Get().depth == 1 && !g_groups.Get().tasks.empty() ? CallKind::Submit
                                                                      : CallKind::Untimed;
}

ncclResult_t
P2p(CommOpKind kind, const void* sendbuff, void* recvbuff, size_t count, int datatype, int peer,
    ncclComm_t comm, cudaStream_t stream, const char* name, const char* api)
{
    ApiCall call(InGroup() ? CallKind::Untimed : CallKind::Submit);
    OpArgs args;
    args.name = name;
    args.type = datatype;
    args.root = peer;
    args.isPeer = true;
    if (ncclResult_t rc = CheckArgs(comm, args))
    {
        return GroupError(rc);
    }
    CommOp op;
    op.kind = kind;
    op.count = count;
    op.dtype = datatype;
    op.typeSize = TypeSize(datatype);
    op.redop = ncclSum;
    op.peer = peer;
    op.sendbuff = sendbuff;
    op.recvbuff = recvbuff;
    return Submit(call, comm, stream, op, api);
}

} // namespace

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream)
{
    return P2p(CommOpKind::Send, sendbuff, nullptr, count, Raw(datatype), peer, comm, stream,
               "Send", "ncclSend");
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream)
{
    return P2p(CommOpKind::Recv, nullptr, recvbuff, count, Raw(datatype), peer, comm, stream,
               "Recv", "ncclRecv");
}

NCCL_API(ncclResult_t, ncclGroupStart)
{
    GroupStartInternal();
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd)
{
    ApiCall call(GroupEndKind());
    return GroupEndInternal(call);
}

// Ends the group without issuing it. eidolon has no estimate to give without running the group
// through the simulator: estimatedTime stays NCCL_UNDEF_FLOAT, and the operations are dropped.
NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo)
{
    ApiCall call(CallKind::Untimed);
    if (g_groups.Get().depth == 0)
    {
        return Fail(ncclInvalidUsage, "groupsimend:nogroup",
                    "ncclGroupSimulateEnd: not in a group call.");
    }
    if (simInfo && simInfo->magic != 0x74685283)
    {
        return Fail(ncclInvalidArgument, "groupsimend:info",
                    "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER");
    }
    if (--g_groups.Get().depth > 0)
    {
        return ncclSuccess;
    }
    for (const SplitRequest& request : g_groups.Get().splits)
    {
        *request.out = nullptr;
    }
    g_groups.Get() = GroupState();
    if (simInfo)
    {
        simInfo->estimatedTime = NCCL_UNDEF_FLOAT;
    }
    WarnOnce("groupsimend", "nccl: ncclGroupSimulateEnd gives no estimate under eidolon "
                            "(estimatedTime is NCCL_UNDEF_FLOAT); the group is not issued");
    return ncclSuccess;
}
