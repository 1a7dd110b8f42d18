// eidolon's libnccl.so.2 under a program linked against NVIDIA's NCCL (-lnccl): a one-rank
// communicator runs every collective and send/recv to itself; groups, splits, nonblocking init,
// user reduction ops, memory and registration; NCCL's argument errors; a communicator of more than
// one rank without the simulator fails cleanly. Modes: `single` (one GPU), `multi` (two GPUs).
#include "check.h"

#include <nccl.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>

#define CHECK_NCCL_EQ(call, expected)                                                              \
    do                                                                                             \
    {                                                                                              \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != (expected))                                                                      \
        {                                                                                          \
            std::printf("%s:%d: %s returned %d (%s), expected %d; last error: %s\n", __FILE__,     \
                        __LINE__, #call, int(r_), ncclGetErrorString(r_), int(expected),           \
                        ncclGetLastError(nullptr));                                                \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)
#define CHECK_NCCL(call) CHECK_NCCL_EQ((call), ncclSuccess)

static bool
LastErrorHas(const char* text)
{
    const char* last = ncclGetLastError(nullptr);
    bool found = last && std::strstr(last, text);
    if (!found)
    {
        std::printf("last error '%s' does not contain '%s'\n", last ? last : "(null)", text);
    }
    return found;
}

// The libnccl.so.2 this process loaded is eidolon's, not NVIDIA's.
static void
CheckLibrary()
{
    Dl_info info{};
    CHECK(dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) != 0);
    std::string path = info.dli_fname ? info.dli_fname : "";
    CHECK(path.find("lib/gpu-emu/libnccl.so.2") != std::string::npos);
    if (path.find("lib/gpu-emu/") == std::string::npos)
    {
        std::printf("libnccl loaded from %s\n", path.c_str());
    }
    // The profiling names are the same functions.
    CHECK(dlsym(RTLD_DEFAULT, "pncclAllReduce") == dlsym(RTLD_DEFAULT, "ncclAllReduce"));
    // NCCL 2.30.7 by default (PyTorch 2.15's), whatever nccl.h this program was built with
    // (2.28.9): NCCL_VERSION(2, 30, 7) = 2 * 10000 + 30 * 100 + 7 = 23007.
    int version = 0;
    CHECK_NCCL(ncclGetVersion(&version));
    CHECK(version == 23007);
    CHECK_NCCL_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
    // EIDOLON_NCCL_VERSION emulates another release: 2.28.9 is 2 * 10000 + 28 * 100 + 9 = 22809,
    // 2.8.4 (before the code's scheme changed) 2 * 1000 + 8 * 100 + 4 = 2804; a bad value warns and
    // reports the default.
    setenv("EIDOLON_NCCL_VERSION", "2.28.9", 1);
    CHECK_NCCL(ncclGetVersion(&version));
    CHECK(version == 22809);
    setenv("EIDOLON_NCCL_VERSION", "2.8.4", 1);
    CHECK_NCCL(ncclGetVersion(&version));
    CHECK(version == 2804);
    setenv("EIDOLON_NCCL_VERSION", "22703", 1);
    CHECK_NCCL(ncclGetVersion(&version));
    CHECK(version == 22703);
    setenv("EIDOLON_NCCL_VERSION", "two.thirty", 1);
    CHECK_NCCL(ncclGetVersion(&version));
    CHECK(version == 23007);
    unsetenv("EIDOLON_NCCL_VERSION");
}

// ncclConfig_t as NCCL 2.30's nccl.h lays it out: 2.28's fields (80 bytes, no tail padding), then
// graphUsageMode, numRmaCtx, maxP2pPeers and graphStreamOrdering (ints): 96 bytes. A program built
// against 2.30 passes this size and version.
struct Config230
{
    ncclConfig_t v228;
    int graphUsageMode;
    int numRmaCtx;
    int maxP2pPeers;
    int graphStreamOrdering;
};

static void
CheckConfig230()
{
    static_assert(sizeof(ncclConfig_t) == 80 && sizeof(Config230) == 96, "NCCL 2.28 / 2.30 sizes");
    Config230 config{NCCL_CONFIG_INITIALIZER, NCCL_CONFIG_UNDEF_INT, 4, 8, NCCL_CONFIG_UNDEF_INT};
    config.v228.size = sizeof(Config230);
    config.v228.version = 23007;
    config.v228.blocking = 1;
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    ncclComm_t comm = nullptr;
    CHECK_NCCL(ncclCommInitRankConfig(&comm, 1, id, 0, &config.v228));
    CHECK(comm != nullptr);
    if (comm)
    {
        CHECK_NCCL(ncclCommDestroy(comm));
    }
}

static void
CheckErrorStrings()
{
    const char* texts[] = {
        "no error",
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        "unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "internal error - please report this issue to the NCCL developers",
        "invalid argument (run with NCCL_DEBUG=WARN for details)",
        "invalid usage (run with NCCL_DEBUG=WARN for details)",
        "remote process exited or there was a network error",
        "NCCL operation in progress",
        "unknown result code",
    };
    for (int code = 0; code <= 8; ++code)
    {
        CHECK(std::string(ncclGetErrorString(ncclResult_t(code))) == texts[code]);
    }
    CHECK(std::string(ncclGetErrorString(ncclResult_t(99))) == "unknown result code");
}

static ncclComm_t
OneRank()
{
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    ncclComm_t comm = nullptr;
    CHECK_NCCL(ncclCommInitRank(&comm, 1, id, 0));
    CHECK(comm != nullptr);
    return comm;
}

static void
CheckUniqueIds()
{
    // Deterministic: a magic, the world rank from the environment (ctest sets RANK=3), a counter.
    ncclUniqueId a, b;
    CHECK_NCCL(ncclGetUniqueId(&a));
    CHECK_NCCL(ncclGetUniqueId(&b));
    uint64_t fa[3], fb[3];
    std::memcpy(fa, a.internal, sizeof(fa));
    std::memcpy(fb, b.internal, sizeof(fb));
    CHECK(fa[0] == fb[0] && fa[0] != 0);
    CHECK(fa[1] == 3 && fb[1] == 3);
    CHECK(fb[2] == fa[2] + 1);
    CHECK(std::memcmp(&a, &b, sizeof(a)) != 0);
    CHECK_NCCL_EQ(ncclGetUniqueId(nullptr), ncclInvalidArgument);
    CHECK(LastErrorHas("GetUniqueId : out argument is NULL"));
}

static void
CheckCollectives()
{
    ncclComm_t comm = OneRank();
    int value = -1;
    CHECK_NCCL(ncclCommCount(comm, &value));
    CHECK(value == 1);
    CHECK_NCCL(ncclCommCuDevice(comm, &value));
    CHECK(value == 0);
    CHECK_NCCL(ncclCommUserRank(comm, &value));
    CHECK(value == 0);

    const size_t count = 25000000; // floats: 100 MB
    float *send = nullptr, *recv = nullptr;
    CHECK_CUDA(cudaMalloc(&send, count * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&recv, count * sizeof(float)));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));

    // A one-rank all-reduce is priced as a device copy after one launch overhead:
    // 2 x 100 MB / 1 TB/s = 200 us.
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_NEAR(ms, (kLaunchOverheadUs + 2 * 100e6 / kHbmBytesPerUs) / 1e3, 1e-6);

    // Every collective, on a created stream and on the legacy stream.
    for (cudaStream_t s : {stream, cudaStream_t(nullptr)})
    {
        CHECK_NCCL(ncclAllReduce(send, recv, 1000, ncclBfloat16, ncclAvg, comm, s));
        CHECK_NCCL(ncclAllGather(send, recv, 1000, ncclFloat, comm, s));
        CHECK_NCCL(ncclReduceScatter(send, recv, 1000, ncclHalf, ncclMax, comm, s));
        CHECK_NCCL(ncclBroadcast(send, recv, 1000, ncclInt8, 0, comm, s));
        CHECK_NCCL(ncclBcast(recv, 1000, ncclUint64, 0, comm, s));
        CHECK_NCCL(ncclReduce(send, recv, 1000, ncclDouble, ncclProd, 0, comm, s));
        CHECK_NCCL(ncclAlltoAll(send, recv, 1000, ncclFloat8e4m3, comm, s));
        CHECK_NCCL(ncclGather(send, recv, 1000, ncclInt32, 0, comm, s));
        CHECK_NCCL(ncclScatter(send, recv, 1000, ncclUint32, 0, comm, s));
        CHECK_NCCL(ncclAllReduce(send, recv, 0, ncclFloat, ncclSum, comm, s)); // count 0: no-op
    }

    // Send/recv to itself in a group, with collectives and a nested group.
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclSend(send, 1000, ncclFloat, 0, comm, stream));
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclRecv(recv, 1000, ncclFloat, 0, comm, stream));
    CHECK_NCCL(ncclAllReduce(send, recv, 1000, ncclFloat, ncclMin, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    CHECK_NCCL(ncclAllGather(send, recv, 1000, ncclFloat, comm, stream));
    CHECK_NCCL(ncclGroupEnd());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaDeviceSynchronize());

    // Work inside a group is issued at the outermost ncclGroupEnd: before it, the stream is idle.
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_NCCL(ncclGroupEnd());
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK(ms < 0.1f); // `stop` was recorded before the all-reduce was placed
    CHECK_CUDA(cudaStreamSynchronize(stream));

    // ncclGroupSimulateEnd ends the group without issuing it and gives no estimate.
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
    CHECK_NCCL(ncclGroupSimulateEnd(&info));
    CHECK(info.estimatedTime == NCCL_UNDEF_FLOAT);
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK(ms < 0.1f);

    // PreMulSum: a user op of one datatype, numbered from ncclNumOps, reused once destroyed.
    ncclRedOp_t premul;
    float scalar = 0.5f;
    CHECK_NCCL(
        ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat, ncclScalarHostImmediate, comm));
    CHECK(int(premul) == int(ncclNumOps));
    CHECK_NCCL(ncclAllReduce(send, recv, 1000, ncclFloat, premul, comm, stream));
    CHECK_NCCL_EQ(ncclAllReduce(send, recv, 1000, ncclHalf, premul, comm, stream),
                  ncclInvalidArgument);
    CHECK(LastErrorHas("does not match type"));
    CHECK_NCCL(ncclRedOpDestroy(premul, comm));
    CHECK_NCCL_EQ(ncclAllReduce(send, recv, 1000, ncclFloat, premul, comm, stream),
                  ncclInvalidArgument);
    CHECK(LastErrorHas("unknown to this communicator"));
    CHECK_NCCL_EQ(ncclRedOpDestroy(premul, comm), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclRedOpDestroy(premul, nullptr), ncclInvalidArgument);
    ncclRedOp_t again;
    CHECK_NCCL(ncclRedOpCreatePreMulSum(&again, send, ncclHalf, ncclScalarDevice, comm));
    CHECK(again == premul);

    // Registration and windows: bookkeeping.
    void* handle = nullptr;
    CHECK_NCCL(ncclCommRegister(comm, send, 1000, &handle));
    CHECK(handle != nullptr);
    CHECK_NCCL(ncclCommDeregister(comm, handle));
    CHECK_NCCL_EQ(ncclCommDeregister(comm, handle), ncclInvalidArgument);
    ncclWindow_t window = nullptr;
    CHECK_NCCL(ncclCommWindowRegister(comm, recv, 4096, &window, NCCL_WIN_COLL_SYMMETRIC));
    CHECK(window != nullptr);
    CHECK_NCCL(ncclCommWindowDeregister(comm, window));
    CHECK_NCCL_EQ(ncclCommWindowDeregister(comm, window), ncclInvalidArgument);

    // Finalize waits for the communicator's work; destroy frees it.
    double before = NowUs();
    CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
    CHECK_NCCL(ncclCommFinalize(comm));
    CHECK(NowUs() - before >= 200.0);
    CHECK_NCCL_EQ(ncclCommFinalize(comm), ncclInvalidUsage);
    CHECK_NCCL_EQ(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm, stream), ncclInvalidUsage);
    CHECK_NCCL(ncclCommDestroy(comm));
    CHECK_NCCL_EQ(ncclCommCount(comm, &value), ncclInvalidArgument); // destroyed
    CHECK_NCCL(ncclCommDestroy(nullptr));
    CHECK_NCCL(ncclCommAbort(nullptr));

    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFree(send));
    CHECK_CUDA(cudaFree(recv));
}

static void
CheckArgumentErrors()
{
    ncclComm_t comm = OneRank();
    float* buffer = nullptr;
    CHECK_CUDA(cudaMalloc(&buffer, 4096));

    CHECK_NCCL_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclSum, nullptr, nullptr),
                  ncclInvalidArgument);
    CHECK(LastErrorHas("AllReduce : comm argument is NULL"));
    CHECK_NCCL_EQ(ncclAllReduce(buffer, buffer, 4, ncclNumTypes, ncclSum, comm, nullptr),
                  ncclInvalidArgument);
    CHECK(LastErrorHas("AllReduce : invalid type 12"));
    CHECK_NCCL_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclRedOp_t(-1), comm, nullptr),
                  ncclInvalidArgument);
    CHECK(LastErrorHas("invalid reduction operation -1"));
    CHECK_NCCL_EQ(
        ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclRedOp_t(ncclNumOps + 3), comm, nullptr),
        ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclBroadcast(buffer, buffer, 4, ncclFloat, 1, comm, nullptr),
                  ncclInvalidArgument);
    CHECK(LastErrorHas("Broadcast : invalid root 1"));
    CHECK_NCCL_EQ(ncclReduce(buffer, buffer, 4, ncclFloat, ncclSum, -1, comm, nullptr),
                  ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclGather(buffer, buffer, 4, ncclFloat, 2, comm, nullptr), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclSend(buffer, 4, ncclFloat, 1, comm, nullptr), ncclInvalidArgument);
    CHECK(LastErrorHas("Send : invalid peer 1"));
    CHECK_NCCL_EQ(ncclRecv(buffer, 4, ncclFloat, -1, comm, nullptr), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclSend(buffer, 4, ncclDataType_t(-3), 0, comm, nullptr), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclCommCount(nullptr, nullptr), ncclInvalidArgument);
    CHECK(LastErrorHas("CommCount : comm argument is NULL"));
    CHECK_NCCL_EQ(ncclCommCount(comm, nullptr), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclCommGetAsyncError(nullptr, nullptr), ncclInvalidArgument);

    // A destroyed stream.
    cudaStream_t gone;
    CHECK_CUDA(cudaStreamCreate(&gone));
    CHECK_CUDA(cudaStreamDestroy(gone));
    CHECK_NCCL_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclSum, comm, gone),
                  ncclUnhandledCudaError);

    // An error inside a group fails the group's end; nothing of it is issued.
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclSum, comm, nullptr));
    CHECK_NCCL_EQ(ncclAllReduce(buffer, buffer, 4, ncclNumTypes, ncclSum, comm, nullptr),
                  ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclGroupEnd(), ncclInvalidArgument);
    CHECK_NCCL(ncclGroupStart()); // the next group is clean
    CHECK_NCCL(ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclSum, comm, nullptr));
    CHECK_NCCL(ncclGroupEnd());
    CHECK_NCCL_EQ(ncclGroupEnd(), ncclInvalidUsage);
    CHECK(LastErrorHas("not in a group call"));

    // Init arguments and configurations.
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    ncclComm_t bad = nullptr;
    CHECK_NCCL_EQ(ncclCommInitRank(&bad, 0, id, 0), ncclInvalidArgument);
    CHECK(LastErrorHas("Invalid rank requested : 0/0"));
    CHECK_NCCL_EQ(ncclCommInitRank(&bad, 1, id, 1), ncclInvalidArgument);
    CHECK_NCCL_EQ(ncclCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 5;
    CHECK_NCCL_EQ(ncclCommInitRankConfig(&bad, 1, id, 0, &config), ncclInvalidArgument);
    CHECK(LastErrorHas("Invalid config blocking attribute value 5"));
    ncclConfig_t garbage;
    std::memset(&garbage, 0, sizeof(garbage));
    garbage.size = sizeof(garbage);
    CHECK_NCCL_EQ(ncclCommInitRankConfig(&bad, 1, id, 0, &garbage), ncclInvalidArgument);
    CHECK(LastErrorHas("NCCL_CONFIG_INITIALIZER"));
    CHECK(bad == nullptr);

    // Revoked: further operations fail, destroy works.
    CHECK_NCCL(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    CHECK_NCCL_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat, ncclSum, comm, nullptr),
                  ncclInvalidUsage);
    CHECK_NCCL(ncclCommDestroy(comm));
    CHECK_CUDA(cudaFree(buffer));
}

static void
CheckNonblocking()
{
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    CHECK_NCCL_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclInProgress);
    CHECK(comm != nullptr);
    ncclResult_t state = ncclInternalError;
    CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclInProgress);
    CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclSuccess);
    CHECK_NCCL(ncclAllReduce(nullptr, nullptr, 16, ncclFloat, ncclSum, comm, nullptr));

    // A split inherits nonblocking from its parent.
    ncclComm_t child = nullptr;
    CHECK_NCCL_EQ(ncclCommSplit(comm, 0, 0, &child, nullptr), ncclInProgress);
    CHECK(child != nullptr);
    int count = 0;
    CHECK_NCCL(ncclCommCount(child, &count)); // any call completes it
    CHECK(count == 1);
    CHECK_NCCL(ncclCommGetAsyncError(child, &state));
    CHECK(state == ncclSuccess);

    CHECK_NCCL_EQ(ncclCommFinalize(comm), ncclInProgress);
    CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclInProgress);
    CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclSuccess);
    CHECK_NCCL(ncclCommDestroy(comm));
    CHECK_NCCL(ncclCommAbort(child));
}

static void
CheckSplit()
{
    ncclComm_t comm = OneRank();
    ncclComm_t none = reinterpret_cast<ncclComm_t>(0x1);
    CHECK_NCCL(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr));
    CHECK(none == nullptr);
    ncclComm_t child = nullptr;
    CHECK_NCCL(ncclCommSplit(comm, 7, 3, &child, nullptr));
    CHECK(child != nullptr && child != comm);
    int value = -1;
    CHECK_NCCL(ncclCommCount(child, &value));
    CHECK(value == 1);
    CHECK_NCCL(ncclCommUserRank(child, &value));
    CHECK(value == 0);
    CHECK_NCCL(ncclAllReduce(nullptr, nullptr, 1024, ncclFloat, ncclSum, child, nullptr));
    CHECK_NCCL_EQ(ncclCommSplit(comm, -5, 0, &child, nullptr), ncclInvalidArgument);

    // Inside a group the child appears at the group's end.
    ncclComm_t grouped = nullptr;
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclCommSplit(comm, 0, 0, &grouped, nullptr));
    CHECK_NCCL(ncclGroupEnd());
    CHECK(grouped != nullptr);

    // Shrink excluding nobody: a one-rank child.
    ncclComm_t shrunk = nullptr;
    CHECK_NCCL(ncclCommShrink(comm, nullptr, 0, &shrunk, nullptr, NCCL_SHRINK_DEFAULT));
    CHECK(shrunk != nullptr);
    int self = 0;
    CHECK_NCCL_EQ(ncclCommShrink(comm, &self, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT),
                  ncclInvalidArgument);

    CHECK_NCCL(ncclCommDestroy(grouped));
    CHECK_NCCL(ncclCommDestroy(child));
    CHECK_NCCL(ncclCommDestroy(comm));

    // ncclCommInitAll over one device.
    ncclComm_t all[1] = {nullptr};
    CHECK_NCCL(ncclCommInitAll(all, 1, nullptr));
    CHECK(all[0] != nullptr);
    CHECK_NCCL(ncclAllGather(nullptr, nullptr, 64, ncclFloat, all[0], nullptr));
    CHECK_NCCL(ncclCommDestroy(all[0]));
}

static void
CheckMemory()
{
    size_t free0 = 0, free1 = 0, total = 0;
    CHECK_CUDA(cudaMemGetInfo(&free0, &total));
    void* p = nullptr;
    CHECK_NCCL(ncclMemAlloc(&p, 1000)); // one 2 MiB granule
    CHECK(p != nullptr);
    CHECK_CUDA(cudaMemGetInfo(&free1, &total));
    CHECK(free0 - free1 == (2u << 20));
    cudaPointerAttributes attributes{};
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, p));
    CHECK(attributes.type == cudaMemoryTypeDevice);
    CHECK_NCCL(ncclMemFree(p));
    CHECK_CUDA(cudaMemGetInfo(&free1, &total));
    CHECK(free1 == free0);
    CHECK_NCCL_EQ(ncclMemAlloc(&p, size_t(2) << 30), ncclUnhandledCudaError); // 1 GiB device
    CHECK(p == nullptr);
    CHECK(LastErrorHas("out of memory"));
    int host = 0;
    CHECK_NCCL_EQ(ncclMemFree(&host), ncclUnhandledCudaError);
    CHECK_NCCL(ncclMemFree(nullptr));
    CHECK_NCCL_EQ(ncclMemAlloc(nullptr, 16), ncclInvalidArgument);
}

static void
CheckUnsupported()
{
    // Entry points of NCCL's device API are stubs: a warning naming them, ncclInvalidUsage.
    auto stub = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "ncclDevCommDestroy"));
    CHECK(stub != nullptr);
    if (stub)
    {
        CHECK(stub() == ncclInvalidUsage);
        CHECK(stub() == ncclInvalidUsage); // warns once
        CHECK(LastErrorHas("ncclDevCommDestroy is not supported by eidolon"));
    }
}

// Two GPUs, no simulator: a communicator of two ranks cannot exist; one-rank ones still work.
static void
CheckMulti()
{
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    CHECK(devices == 2);
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    ncclComm_t comm = reinterpret_cast<ncclComm_t>(0x1);
    CHECK_NCCL_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclInvalidUsage);
    CHECK(comm == nullptr);
    CHECK(LastErrorHas("needs the simulator"));
    ncclComm_t comms[2] = {reinterpret_cast<ncclComm_t>(0x1), reinterpret_cast<ncclComm_t>(0x1)};
    CHECK_NCCL_EQ(ncclCommInitAll(comms, 2, nullptr), ncclInvalidUsage);
    CHECK(comms[0] == nullptr && comms[1] == nullptr);
    CHECK(LastErrorHas("needs the simulator"));
    int duplicate[2] = {0, 0};
    CHECK_NCCL_EQ(ncclCommInitAll(comms, 2, duplicate), ncclInvalidUsage);
    int outOfRange[1] = {2};
    CHECK_NCCL_EQ(ncclCommInitAll(comms, 1, outOfRange), ncclInvalidArgument);

    // A one-rank communicator on device 1: a null stream is device 1's legacy stream whatever the
    // current device; a stream of device 0 is refused.
    int one[1] = {1};
    CHECK_NCCL(ncclCommInitAll(comms, 1, one));
    int device = -1;
    CHECK_NCCL(ncclCommCuDevice(comms[0], &device));
    CHECK(device == 1);
    CHECK_CUDA(cudaSetDevice(0));
    cudaStream_t stream0;
    CHECK_CUDA(cudaStreamCreate(&stream0));
    CHECK_NCCL(ncclAllReduce(nullptr, nullptr, 25000000, ncclFloat, ncclSum, comms[0], nullptr));
    CHECK_NCCL_EQ(ncclAllReduce(nullptr, nullptr, 16, ncclFloat, ncclSum, comms[0], stream0),
                  ncclUnhandledCudaError);
    double before = NowUs();
    CHECK_CUDA(cudaDeviceSynchronize()); // device 0 has nothing to wait for
    CHECK(NowUs() - before < 100.0);
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaDeviceSynchronize()); // device 1 has the 200 us all-reduce
    CHECK(NowUs() - before >= 190.0);
    CHECK_NCCL(ncclCommDestroy(comms[0]));
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaStreamDestroy(stream0));
}

int
main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "single";
    CheckLibrary();
    CheckConfig230();
    if (mode == "multi")
    {
        CheckMulti();
        return Finish("nccl-multi");
    }
    CheckErrorStrings();
    CheckUniqueIds();
    CheckCollectives();
    CheckArgumentErrors();
    CheckNonblocking();
    CheckSplit();
    CheckMemory();
    CheckUnsupported();
    return Finish("nccl-single");
}
