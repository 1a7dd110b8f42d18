// Collectives: AllReduce, AllGather, ReduceScatter, Broadcast (and the older Bcast), Reduce, the
// 2.28 AlltoAll, Gather and Scatter (sends and receives in an implicit group, as NCCL runs them),
// and user reduction operators (ncclRedOpCreatePreMulSum/ncclRedOpDestroy). Buffers are passed on
// for the data the host wrote (core/data-exchange.h); they are not checked, as NCCL checks
// pointers only on request.
#include "nccl-common.h"

#include <iterator>

using namespace eidolon::gpu;
using namespace eidolon::gpu::nccl;

namespace eidolon::gpu::nccl
{

int
TypeSize(int type)
{
    switch (type)
    {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

ncclResult_t
CheckArgs(const ncclComm* comm, const OpArgs& args)
{
    std::string name = args.name;
    if (ncclResult_t rc = CheckComm(comm, args.name))
    {
        return rc;
    }
    int nranks = comm->member.nranks;
    if (args.root < 0 || args.root >= nranks)
    {
        const char* what = args.isPeer ? "peer" : "root";
        return Fail(ncclInvalidArgument, name + ":" + what,
                    name + " : invalid " + what + " " + std::to_string(args.root) + " (" + what +
                        " should be in the 0.." + std::to_string(nranks - 1) + " range)");
    }
    // The release's types: fp8 (ncclFloat8e4m3, ncclFloat8e5m2: 10, 11) from 2.24 (nccl.h). The
    // release is read only for those: this runs on every call.
    const bool beyondRelease = args.type >= int(ncclFloat8e4m3) && args.type < int(ncclNumTypes) &&
                               EmulatedVersionCode() < 22400;
    if (args.type < 0 || args.type >= int(ncclNumTypes) || beyondRelease)
    {
        return Fail(ncclInvalidArgument, name + ":type",
                    name + " : invalid type " + std::to_string(args.type));
    }
    if (!args.reduces)
    {
        return ncclSuccess;
    }
    if (args.redop < 0 || args.redop > int(ncclMaxRedOp))
    {
        return Fail(ncclInvalidArgument, name + ":op",
                    name + " : invalid reduction operation " + std::to_string(args.redop));
    }
    if (args.redop >= int(ncclNumOps))
    {
        size_t index = size_t(args.redop - int(ncclNumOps));
        if (index >= comm->userOps.size() || comm->userOps[index] < 0)
        {
            return Fail(ncclInvalidArgument, name + ":userop",
                        name + " : reduction operation " + std::to_string(args.redop) +
                            " unknown to this communicator");
        }
        if (comm->userOps[index] != args.type)
        {
            return Fail(ncclInvalidArgument, name + ":usertype",
                        "Data type supplied to user-created ncclRedOp_t does not match type "
                        "given to reduction operation");
        }
    }
    return ncclSuccess;
}

} // namespace eidolon::gpu::nccl

namespace
{

/// ncclDatatypeToString's names.
const char*
TypeName(int type)
{
    static const char* const kNames[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                         "ncclUint32",   "ncclInt64",      "ncclUint64",
                                         "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                         "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
    return type >= 0 && type < int(std::size(kNames)) ? kNames[type] : "unknown";
}

/// NCCL's function index (spec/nccl-env.h) of a collective.
int
FunctionOf(CommOpKind kind)
{
    switch (kind)
    {
    case CommOpKind::Broadcast:
        return 0;
    case CommOpKind::Reduce:
        return 1;
    case CommOpKind::AllGather:
        return 2;
    case CommOpKind::ReduceScatter:
        return 3;
    default:
        return 4;
    }
}

ncclResult_t
Collective(CommOpKind kind, const void* sendbuff, void* recvbuff, size_t count, int type,
           const int* redop, const int* root, ncclComm_t comm, cudaStream_t stream,
           const char* name, const char* api)
{
    ApiCall call(InGroup() ? CallKind::Untimed : CallKind::Submit);
    OpArgs args;
    args.name = name;
    args.type = type;
    args.root = root ? *root : 0;
    args.reduces = redop != nullptr;
    args.redop = redop ? *redop : ncclSum;
    if (ncclResult_t rc = CheckArgs(comm, args))
    {
        return GroupError(rc);
    }
    // NCCL 2.24+ refuses fp8 collectives below sm90 (enqueue.cc, taskAppend, after it drops an
    // empty one); sends, receives and the AlltoAll/Gather/Scatter made of them only move bytes.
    if ((type == ncclFloat8e4m3 || type == ncclFloat8e5m2) && count > 0 &&
        Emulator::Local().Spec().computeCapabilityMajor < 9)
    {
        return GroupError(Fail(ncclInvalidArgument, std::string(name) + ":fp8",
                               "FP8 reduction support begins with sm90 capable devices."));
    }
    const int function = FunctionOf(kind);
    if (comm->member.nranks > 1 && comm->noAlgorithm[function])
    {
        // NCCL_ALGO / NCCL_PROTO leave this function nothing NCCL implements: NCCL's error, from
        // where NCCL chooses, the group's end (enqueue.cc): inside a group the call itself
        // succeeds and ncclGroupEnd fails the whole group.
        const spec::NcclCallError error =
            spec::NcclNoAlgorithmText(uint32_t(EmulatedVersionCode()), function,
                                      comm->AlgoVariable(), comm->ProtoVariable(), TypeName(type));
        const ncclResult_t code =
            Fail(ncclResult_t(error.code), std::string(name) + ":noalgorithm", error.message);
        GroupError(code);
        return InGroup() ? ncclSuccess : code;
    }
    CommOp op;
    op.kind = kind;
    op.count = count;
    op.dtype = type;
    op.typeSize = TypeSize(type);
    op.redop = args.redop;
    op.root = root ? *root : -1;
    op.sendbuff = sendbuff;
    op.recvbuff = recvbuff;
    return Submit(call, comm, stream, op, api);
}

// Sends and receives issued as one implicit group (nested in the caller's group, if any).
struct Transfer
{
    CommOpKind kind;
    int peer;
    uint64_t slot; // the buffer's offset in units of `count` elements
};

ncclResult_t
Exchange(const void* sendbuff, void* recvbuff, size_t count, int type, const int* root,
         ncclComm_t comm, cudaStream_t stream, const char* name, const char* api,
         std::vector<Transfer> (*plan)(int rank, int nranks, int root))
{
    ApiCall call(InGroup() ? CallKind::Untimed : CallKind::Submit);
    OpArgs args;
    args.name = name;
    args.type = type;
    args.root = root ? *root : 0;
    if (ncclResult_t rc = CheckArgs(comm, args))
    {
        return GroupError(rc);
    }
    if (count == 0)
    {
        return ncclSuccess;
    }
    ncclResult_t result = ncclSuccess;
    GroupStartInternal();
    for (const Transfer& transfer : plan(comm->member.rank, comm->member.nranks, args.root))
    {
        CommOp op;
        op.kind = transfer.kind;
        op.count = count;
        op.dtype = type;
        op.typeSize = TypeSize(type);
        op.peer = transfer.peer;
        uint64_t offset = transfer.slot * count * uint64_t(op.typeSize);
        if (transfer.kind == CommOpKind::Send)
        {
            op.sendbuff = static_cast<const char*>(sendbuff) + offset;
        }
        else
        {
            op.recvbuff = static_cast<char*>(recvbuff) + offset;
        }
        ncclResult_t rc = Submit(call, comm, stream, op, api);
        result = result == ncclSuccess ? rc : result;
    }
    ncclResult_t ended = GroupEndInternal(call);
    return result != ncclSuccess ? result : ended;
}

std::vector<Transfer>
AlltoAllPlan(int, int nranks, int)
{
    std::vector<Transfer> plan;
    for (int peer = 0; peer < nranks; ++peer)
    {
        plan.push_back({CommOpKind::Send, peer, uint64_t(peer)});
        plan.push_back({CommOpKind::Recv, peer, uint64_t(peer)});
    }
    return plan;
}

std::vector<Transfer>
GatherPlan(int rank, int nranks, int root)
{
    std::vector<Transfer> plan{{CommOpKind::Send, root, 0}};
    for (int peer = 0; rank == root && peer < nranks; ++peer)
    {
        plan.push_back({CommOpKind::Recv, peer, uint64_t(peer)});
    }
    return plan;
}

std::vector<Transfer>
ScatterPlan(int rank, int nranks, int root)
{
    std::vector<Transfer> plan;
    for (int peer = 0; rank == root && peer < nranks; ++peer)
    {
        plan.push_back({CommOpKind::Send, peer, uint64_t(peer)});
    }
    plan.push_back({CommOpKind::Recv, root, 0});
    return plan;
}

} // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    int redop = Raw(op);
    return Collective(CommOpKind::AllReduce, sendbuff, recvbuff, count, Raw(datatype), &redop,
                      nullptr, comm, stream, "AllReduce", "ncclAllReduce");
}

// `sendcount` elements from each rank.
NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return Collective(CommOpKind::AllGather, sendbuff, recvbuff, sendcount, Raw(datatype), nullptr,
                      nullptr, comm, stream, "AllGather", "ncclAllGather");
}

// `recvcount` elements to each rank.
NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    int redop = Raw(op);
    return Collective(CommOpKind::ReduceScatter, sendbuff, recvbuff, recvcount, Raw(datatype),
                      &redop, nullptr, comm, stream, "ReduceScatter", "ncclReduceScatter");
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return Collective(CommOpKind::Broadcast, sendbuff, recvbuff, count, Raw(datatype), nullptr,
                      &root, comm, stream, "Broadcast", "ncclBroadcast");
}

// In-place broadcast (the pre-2.2 form).
NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream)
{
    return Collective(CommOpKind::Broadcast, buff, buff, count, Raw(datatype), nullptr, &root, comm,
                      stream, "Broadcast", "ncclBcast");
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    int redop = Raw(op);
    return Collective(CommOpKind::Reduce, sendbuff, recvbuff, count, Raw(datatype), &redop, &root,
                      comm, stream, "Reduce", "ncclReduce");
}

// `count` elements to and from every rank (itself included).
NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return Exchange(sendbuff, recvbuff, count, Raw(datatype), nullptr, comm, stream, "AlltoAll",
                    "ncclAlltoAll", AlltoAllPlan);
}

// `count` elements from every rank to `root`.
NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return Exchange(sendbuff, recvbuff, count, Raw(datatype), &root, comm, stream, "Gather",
                    "ncclGather", GatherPlan);
}

// `count` elements from `root` to every rank.
NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return Exchange(sendbuff, recvbuff, count, Raw(datatype), &root, comm, stream, "Scatter",
                    "ncclScatter", ScatterPlan);
}

// A sum with a pre-multiplying scalar, usable on `comm` with `datatype` until destroyed. The ops of
// a communicator are numbered from ncclNumOps up, freed numbers reused lowest first, so every rank
// creating the same ops gets the same numbers.
NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "ncclRedOpCreatePreMulSum"))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(op, "ncclRedOpCreatePreMulSum", "op"))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(scalar, "ncclRedOpCreatePreMulSum", "scalar"))
    {
        return rc;
    }
    int type = Raw(datatype);
    if (type < 0 || type >= ncclNumTypes)
    {
        return Fail(ncclInvalidArgument, "premulsum:type",
                    "ncclRedOpCreatePreMulSum : invalid type " + std::to_string(type));
    }
    if (Raw(residence) != ncclScalarDevice && Raw(residence) != ncclScalarHostImmediate)
    {
        return Fail(ncclInvalidArgument, "premulsum:residence",
                    "ncclRedOpCreatePreMulSum : invalid scalar residence " +
                        std::to_string(Raw(residence)));
    }
    size_t index = 0;
    while (index < comm->userOps.size() && comm->userOps[index] >= 0)
    {
        ++index;
    }
    if (index == comm->userOps.size())
    {
        comm->userOps.push_back(-1);
    }
    comm->userOps[index] = type;
    *op = ncclRedOp_t(int(ncclNumOps) + int(index));
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm)
{
    ApiCall call(CallKind::Untimed);
    if (!IsLive(comm))
    {
        return Fail(ncclInvalidArgument, "redopdestroy:comm",
                    "ncclRedOpDestroy : invalid communicator passed.");
    }
    CheckComm(comm, "ncclRedOpDestroy"); // completes a pending nonblocking init
    int raw = Raw(op);
    if (raw >= 0 && raw < int(ncclNumOps))
    {
        return Fail(ncclInvalidArgument, "redopdestroy:builtin",
                    "ncclRedOpDestroy : operator is a NCCL builtin.");
    }
    size_t index = size_t(raw - int(ncclNumOps));
    if (raw < 0 || index >= comm->userOps.size() || comm->userOps[index] < 0)
    {
        return Fail(ncclInvalidArgument, "redopdestroy:garbage",
                    "ncclRedOpDestroy : operator is garbage.");
    }
    comm->userOps[index] = -1;
    return ncclSuccess;
}
