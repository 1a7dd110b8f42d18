// Shared state of the libnccl replacement: communicators, argument checks, the last error, and the
// group machinery every operation goes through. All of it is used with the emulator lock held (an
// ApiCall), except the group state, which is per thread as NCCL's is.
#pragma once

#include "../core/communication.h"
#include "../core/diagnostics.h"
#include "../core/emulator.h"

#include <nccl.h>

#include "nccl-env.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// Defines `func` (weak, as NCCL's are) and its profiling alias p`func` (global), the pair NCCL
// exports for every entry point. The stub list drops the names implemented this way: CMake reads
// them from the `NCCL_API(<type>, <name>,` lines of gpu-emu/nccl/*.cc.
#define NCCL_API(ret, func, ...)                                                                   \
    extern "C" __attribute__((visibility("default"))) ret p##func(__VA_ARGS__)                     \
        __attribute__((alias(#func)));                                                             \
    extern "C" __attribute__((visibility("default"), weak)) ret func(__VA_ARGS__)

// One communicator member held by this process (NCCL's ncclComm_t points at one of these).
struct ncclComm
{
    eidolon::gpu::CommMember member;
    bool blocking = true;
    // A nonblocking init, split or finalize that ncclCommGetAsyncError has not yet reported done.
    bool pending = false;
    bool finalized = false;
    bool revoked = false;
    uint64_t seq = 0;         // communication records placed (PlaceCommunication's `seq`)
    uint64_t children = 0;    // ncclCommSplit/ncclCommShrink calls, which name the children
    std::vector<int> userOps; // ncclRedOpCreatePreMulSum ops: datatype, or -1 once destroyed
    std::vector<eidolon::gpu::Stream*> streams; // streams it placed work on (finalize waits)
    std::vector<struct ncclRegistration*> registrations; // ncclCommRegister handles
    std::vector<ncclWindow_t> windows;                   // ncclCommWindowRegister windows
    // A nonblocking init that NCCL failed (NCCL_ALGO / NCCL_PROTO it cannot read): never
    // registered with the simulator; ncclCommGetAsyncError reports the code, other calls fail.
    ncclResult_t initError = ncclSuccess;
    // Per NCCL function (spec/nccl-env.h order): NCCL_ALGO / NCCL_PROTO, read at init as NCCL
    // does, leave it nothing the emulated release implements, so NCCL fails its calls.
    bool noAlgorithm[eidolon::spec::kNcclFuncs] = {};
    std::string ncclAlgo;                           // NCCL_ALGO at init
    std::string ncclProto;                          // NCCL_PROTO at init
    bool ncclAlgoSet = false, ncclProtoSet = false; // present at init, even if empty
    const char* AlgoVariable() const { return ncclAlgoSet ? ncclAlgo.c_str() : nullptr; }
    const char* ProtoVariable() const { return ncclProtoSet ? ncclProto.c_str() : nullptr; }
};

// A buffer registered with ncclCommRegister (bookkeeping only); its handle points at this.
struct ncclRegistration
{
    void* buffer;
    size_t size;
};

// A registered window (bookkeeping only).
struct ncclWindow_vidmem
{
    ncclComm* comm;
    void* buffer;
    size_t size;
    int flags;
};

namespace eidolon::gpu::nccl
{

// ---- errors (errors.cc)
// Records `message` as the text ncclGetLastError returns, warns on stderr once per `key`, and
// returns `code`.
ncclResult_t Fail(ncclResult_t code, const std::string& key, const std::string& message);
const char* ResultName(ncclResult_t code);
// Warns on stderr once per `key` ("eidolon: <message>") without touching the last error.
void WarnOnce(const std::string& key, const std::string& message);

// ---- version (version.cc): the one place the reported NCCL version comes from
// The version ncclGetVersion reports: EIDOLON_NCCL_VERSION (spec::NcclVersionFromEnvironment),
// else 2.30.7 (23007); a value the spec refuses warns once and reports 2.30.7.
int EmulatedVersionCode();

// ---- communicators (communicators.cc)
bool IsLive(const ncclComm* comm);
// Null or unknown communicator: ncclInvalidArgument. A pending nonblocking communicator becomes
// ready (any call but ncclCommGetAsyncError completes its initialisation).
ncclResult_t CheckComm(const ncclComm* comm, const char* api);
// "<api> : <name> argument is NULL" (ncclInvalidArgument) for a null pointer.
ncclResult_t CheckPtr(const void* pointer, const char* api, const char* name);
// A new member registered with the emulator (and the simulator), or null with the error recorded.
ncclResult_t CreateComm(Emulator& emu, const CommMember& member, bool blocking, const char* api,
                        ncclComm** out);
// What a communicator's ncclConfig_t says that gpu-emu uses (ReadConfig).
struct CommConfig
{
    bool blocking = true;
    int minCtas = 0; // 0: unset
    int maxCtas = 0;
};
// Configuration of a new communicator: `config` as NCCL reads it, or the parent's when null;
// NCCL_COMM_BLOCKING, NCCL_MIN_CTAS and NCCL_MAX_CTAS over it.
ncclResult_t ReadConfig(const ncclConfig_t* config, const ncclComm* parent, const char* api,
                        CommConfig* out);
uint64_t Hash(const void* data, size_t bytes, uint64_t seed = 1469598103934665603ull);

// The value of an enum argument as the caller passed it. A program may pass any int (NCCL checks
// them); reading an out-of-range value through the enum type would be undefined behaviour.
template<class Enum>
inline int
Raw(const Enum& value)
{
    static_assert(sizeof(Enum) == sizeof(int), "NCCL's enums are ints");
    int raw;
    std::memcpy(&raw, &value, sizeof(raw));
    return raw;
}

// ---- operations (collectives.cc)
int TypeSize(int type); // bytes per element of an ncclDataType_t, 0 if invalid
// NCCL's argument check of an operation: communicator, root (or peer) in range, datatype, and for
// reductions the operator (a builtin, or a live ncclRedOpCreatePreMulSum op of this datatype).
struct OpArgs
{
    const char* name;     // NCCL's operation name in messages: "AllReduce", "Send", ...
    int type;             // ncclDataType_t
    int root = 0;         // root or peer (0 for operations without one)
    bool isPeer = false;  // `root` is a send/recv peer
    bool reduces = false; // `redop` is used
    int redop = ncclSum;  // ncclRedOp_t
};
ncclResult_t CheckArgs(const ncclComm* comm, const OpArgs& args);

// ---- groups (p2p-groups.cc)
bool InGroup();
// A nonblocking communicator's init was queued in the calling thread's group: NCCL launches
// such a group asynchronously, and its ncclGroupEnd returns ncclInProgress.
void NoteNonblockingInGroup();
// Enqueues one operation (already validated) on `comm`: placed at once outside a group, at the
// outermost ncclGroupEnd inside one. Send/Recv of one group and communicator become one record.
ncclResult_t Submit(ApiCall& call, ncclComm* comm, cudaStream_t stream, const CommOp& op,
                    const char* api);
// Records an argument error of a call issued inside a group (ncclGroupEnd then fails) and returns
// it.
ncclResult_t GroupError(ncclResult_t code);
void GroupStartInternal();
ncclResult_t GroupEndInternal(ApiCall& call);

// A split requested on `parent` (resolved when the outermost group ends).
struct SplitRequest
{
    ncclComm* parent;
    uint64_t index; // parent->children at the call
    int color;
    int key;
    CommConfig config;
    ncclComm_t* out;
};
void AddSplit(const SplitRequest& request);
// Resolves the splits requested in the group that just ended. Returns the first error, or
// ncclInProgress when a nonblocking child was created.
ncclResult_t ResolveSplits(Emulator& emu, std::vector<SplitRequest> requests);

} // namespace eidolon::gpu::nccl
