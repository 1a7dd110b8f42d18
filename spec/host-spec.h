// The description of a GPU server's host: its CPU, and what each CUDA runtime, cuBLAS, cuBLASLt and
// NCCL call costs the calling thread there (the host and driver's share of a step, not the GPU's),
// each figure with its source. Read from topologies/hosts/<name>.yaml (format in
// topologies/hosts/README.md); used by gpu-emu to charge calls and by the topology reader to check
// a cluster's `host:` field. No ns-3 dependency.
#pragma once

#include "spec-error.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace eidolon::spec
{

// Every call the host description prices. The YAML key of each is HostCallKey(call).
enum class HostCall
{
    LaunchKernel,             // cudaLaunchKernel, <<<>>>, cuLaunchKernel, on a created stream
    LaunchKernelLegacyStream, // the same on the legacy default stream (implicit ordering work)
    LaunchHostFunc,           // cudaLaunchHostFunc, cudaStreamAddCallback
    GraphLaunch,              // cudaGraphLaunch
    MemcpyAsyncPinned,        // host <-> device with page-locked host memory (by bytes)
    MemcpyAsyncPageable,      // host <-> device with pageable host memory: staged (by bytes)
    MemcpyAsyncDevice,        // device <-> device
    MemcpyBlockingReturn,     // a blocking cudaMemcpy: from the copy's end to the call's return
    MemsetAsync,              // cudaMemset(Async), cuMemsetD8 (by bytes)
    EventRecord,              // cudaEventRecord, timing event
    EventRecordDisableTiming, // cudaEventRecord, cudaEventDisableTiming event
    EventQuery,               // cudaEventQuery
    EventSynchronize,         // cudaEventSynchronize: from the event's completion to the return
    StreamWaitEvent,          // cudaStreamWaitEvent
    StreamQuery,              // cudaStreamQuery
    StreamSynchronize,        // cudaStreamSynchronize: from the stream's completion to the return
    DeviceSynchronize,        // cudaDeviceSynchronize: from the device's completion to the return
    Malloc,                   // cudaMalloc, cuMemAlloc (by bytes)
    Free,                     // cudaFree, cuMemFree (by bytes)
    MallocHost,               // cudaMallocHost, cudaHostAlloc (by bytes)
    FreeHost,                 // cudaFreeHost (by bytes)
    MallocAsync,              // cudaMallocAsync from the default pool
    FreeAsync,                // cudaFreeAsync
    StreamCreate,             // cudaStreamCreate*
    StreamDestroy,            // cudaStreamDestroy
    EventCreate,              // cudaEventCreate*
    EventDestroy,             // cudaEventDestroy
    GetDevice,                // cudaGetDevice
    SetDevice,                // cudaSetDevice
    GetLastError,             // cudaGetLastError, cudaPeekAtLastError
    CublasGemmEx,             // cublasGemmEx and the typed half/bf16 GEMMs
    CublasSgemm,              // cublasSgemm/Dgemm/Cgemm/Zgemm/Hgemm
    CublasGemmBatched,        // cublas*GemmBatched, cublas*GemmStridedBatched(Ex)
    CublasLtMatmul,           // cublasLtMatmul
    CublasLtAlgoGetHeuristic, // cublasLtMatmulAlgoGetHeuristic
    NcclEnqueue,              // one NCCL collective or send/recv handed to the GPU
    NcclGroupEnd,             // ncclGroupEnd itself, beyond its operations' enqueues
    NcclCommInit,             // ncclCommInitRank/InitAll/Split, per communicator
    ClockRead,                // clock_gettime/gettimeofday, busy-waits on driving threads only
    Count
};

constexpr size_t kHostCallCount = static_cast<size_t>(HostCall::Count);

// "cudaLaunchKernel", "cudaMemcpyAsync.pinned", ... (the YAML key of a call).
const char* HostCallKey(HostCall call);

// The host cost of one call: a constant, or a piecewise-linear function of the bytes the call
// moves or allocates (flat below the first point; above the last, extended along the last segment
// where it rises and flat where it does not), in whole nanoseconds.
struct HostCallCost
{
    std::vector<std::pair<double, double>> points; // (bytes, ns), bytes increasing; at least one
    std::string source;                            // where the figure comes from

    double NsFor(uint64_t bytes) const;
};

// A fixed CPU workload's times on the host (validation/gpu-truth/host-cpu-bench.cc, the same
// kernels as `eidolon calibrate-host`): the reference the host speed factor is measured against.
struct CpuBenchmark
{
    double aluNs = 0;
    double sortNs = 0;
    double mapNs = 0;
    std::string source;
};

struct HostSpec
{
    std::string name;
    std::string description;
    std::string cpu; // the host CPU, e.g. "Intel Xeon Platinum 8480C"
    // NCCL's class of that CPU (graph/topo.h: x86 Intel, AMD or Zhaoxin, ARM, POWER), which sets
    // some of its choices (the LL bandwidth ceiling across nodes, the network post overhead, the
    // default NCCL_P2P_LEVEL): "intel", "amd", "zhaoxin", "arm" or "power". From `cpu_vendor`,
    // else from the words of `cpu` (CpuVendorOf).
    std::string cpuVendor;
    std::string software; // driver, CUDA, cuBLAS, NCCL versions the figures were taken with
    // The host description the call costs and CPU benchmark come from (`costs_from`), "" when
    // the file gives its own: a host whose CPU class is known but whose costs were not measured.
    std::string costsFrom;
    CpuBenchmark cpuBenchmark;
    std::array<HostCallCost, kHostCallCount> calls;

    double CostNs(HostCall call, uint64_t bytes = 0) const
    {
        return calls[static_cast<size_t>(call)].NsFor(bytes);
    }
};

// NCCL's CPU class named by a CPU's description ("AMD EPYC 7V12" -> "amd", "Intel Xeon ..." ->
// "intel", "NVIDIA Grace" / "Neoverse" / "Graviton" / "aarch64" -> "arm", "POWER9" -> "power",
// "Zhaoxin" -> "zhaoxin"); "" when no word says.
std::string CpuVendorOf(const std::string& cpu);

// Reads one host description; every call of HostCall must be priced. Throws SpecError (a
// std::runtime_error) naming the file, the line and the field on bad input.
HostSpec ReadHostSpec(const std::string& path);
HostSpec ParseHostSpec(const std::string& text, const std::string& path);

// Finds `<dir>/<name>.yaml` in the first of `dirs` that has it; throws naming the directories.
HostSpec FindHostSpec(const std::string& name, const std::vector<std::string>& dirs);

// The host every topology gets when it names none.
inline const char* const kDefaultHostName = "h100-server";

} // namespace eidolon::spec
