// What a rank's NCCL calls become inside gpu-emu: communicator membership and communication ops
// placed on streams. libnccl (gpu-emu/nccl) is the C ABI over this; the bridge carries it to
// eidolon-sim, which matches the ranks' calls and decides when each ends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eidolon::gpu
{

// The members of one communicator a device holds: one per (communicator, device).
struct CommMember
{
    uint64_t commId = 0; // the same on every rank: hashed from the ncclUniqueId, or split parent
    int nranks = 1;
    int rank = 0;
    int device = 0; // local CUDA device index
    // ncclConfig_t's minCTAs / maxCTAs, NCCL_MIN_CTAS / NCCL_MAX_CTAS over them: bounds of the
    // communicator's channel count (0: unset, NCCL's 1 and MAXCHANNELS).
    int minCtas = 0;
    int maxCtas = 0;
};

enum class CommOpKind
{
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    Send,
    Recv,
};

// One NCCL operation as the program called it (count in elements, NCCL's own convention per op).
struct CommOp
{
    CommOpKind kind = CommOpKind::AllReduce;
    uint64_t count = 0;
    int dtype = 0;    // ncclDataType_t
    int typeSize = 0; // bytes per element
    int redop = 0;    // ncclRedOp_t (user-created PreMulSum ops keep their numbers)
    int root = -1;    // Broadcast/Reduce
    int peer = -1;    // Send/Recv: comm rank of the other side
    // The buffers as the program passed them (data-exchange.h moves what the host wrote).
    const void* sendbuff = nullptr; // AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send
    void* recvbuff = nullptr;       // AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Recv
};

} // namespace eidolon::gpu
