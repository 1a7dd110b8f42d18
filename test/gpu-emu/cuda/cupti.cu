// CUPTI's activity API as NVIDIA's samples use it (linked against the toolkit's libcupti, run with
// eidolon's): buffers handed out and back, kernels, copies, memsets, the runtime calls that issued
// them and external correlation, with the simulated times worked out by hand from TEST-GPU.
// With the argument "source", a timestamp source is registered (3 units a ns of the clock + 1000,
// as a made-up TSC): device records come in its units, exactly, since the source is linear in the
// virtual clock; calls carry the source's own readings as they begin and return, as NVIDIA's
// CUPTI gives them (CPU-side; inside eidolon's calls the clock reads real time, so their units
// are checked only for order).
#include "check.h"

#include <cupti.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__global__ void
spin(float* data)
{
    if (data)
        data[threadIdx.x] = 0;
}

namespace
{

struct Kernel
{
    std::string name;
    uint64_t start, end;
    uint32_t correlation, stream, graph;
    uint64_t graphNode;
    int gridX, blockX;
};
struct Copy
{
    uint64_t start, end, bytes;
    uint32_t correlation;
    uint8_t copyKind, srcKind, dstKind;
};
struct Call
{
    uint32_t cbid, correlation, thread;
    uint64_t start, end;
};

std::vector<Kernel> g_kernels;
std::vector<Copy> g_copies, g_memsets;
std::vector<Call> g_calls;
std::vector<std::pair<uint64_t, uint32_t>> g_external; // external id, correlation id
int g_buffers = 0;

uint64_t
VirtualNs()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
}

uint64_t CUPTIAPI
MadeUpTsc()
{
    return 3 * VirtualNs() + 1000;
}

void CUPTIAPI
Requested(uint8_t** buffer, size_t* size, size_t* maxRecords)
{
    *size = 64 * 1024;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
    *maxRecords = 0;
}

void CUPTIAPI
Completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid)
{
    ++g_buffers;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    {
        switch (record->kind)
        {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        {
            auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
            g_kernels.push_back({k->name, uint64_t(k->start), uint64_t(k->end),
                                 uint32_t(k->correlationId), uint32_t(k->streamId),
                                 uint32_t(k->graphId), uint64_t(k->graphNodeId), int(k->gridX),
                                 int(k->blockX)});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY:
        {
            auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
            g_copies.push_back({m->start, m->end, m->bytes, m->correlationId, m->copyKind,
                                m->srcKind, m->dstKind});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET:
        {
            auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
            g_memsets.push_back({m->start, m->end, m->bytes, m->correlationId, 0, 0, 0});
            break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        {
            auto* a = reinterpret_cast<CUpti_ActivityAPI*>(record);
            g_calls.push_back({a->cbid, a->correlationId, a->threadId, a->start, a->end});
            break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        {
            auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(record);
            CHECK(e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
            uint64_t id = e->externalId; // the record is packed
            g_external.push_back({id, uint32_t(e->correlationId)});
            break;
        }
        default:
            CHECK(!"a record of a kind that was not enabled");
        }
    }
    std::free(buffer);
}

#define CHECK_CUPTI(call) CHECK((call) == CUPTI_SUCCESS)

const Call*
CallOf(uint32_t correlation)
{
    for (const Call& call : g_calls)
    {
        if (call.correlation == correlation)
        {
            return &call;
        }
    }
    return nullptr;
}

} // namespace

int
main(int argc, char** argv)
{
    bool source = argc > 1 && std::string(argv[1]) == "source";
    double unitsPerNs = source ? 3 : 1;
    CHECK_CUDA(cudaFree(nullptr)); // the device exists before profiling starts
    CHECK_CUPTI(cuptiActivityRegisterCallbacks(Requested, Completed));
    if (source)
    {
        CHECK_CUPTI(cuptiActivityRegisterTimestampCallback(MadeUpTsc));
    }
    for (CUpti_ActivityKind kind :
         {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
          CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
          CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION})
    {
        CHECK_CUPTI(cuptiActivityEnable(kind));
    }
    const char* name = nullptr;
    CHECK_CUPTI(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &name));
    CHECK(std::string(name) == "cudaLaunchKernel_v7000");

    uint64_t before = source ? MadeUpTsc() : 0;
    if (!source)
    {
        CHECK_CUPTI(cuptiGetTimestamp(&before));
    }
    // Two GPU-bound kernels under external id 42: 16 us and 32 us (16 bytes a thread at 1 TB/s).
    CHECK_CUPTI(
        cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 42));
    spin<<<1000, 1000>>>(nullptr);
    spin<<<2000, 1000>>>(nullptr);
    uint64_t popped = 0;
    CHECK_CUPTI(
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped));
    CHECK(popped == 42);
    CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, nullptr) ==
          CUPTI_ERROR_QUEUE_EMPTY);
    // A blocking copy from pinned memory and a memset, after the kernels on the same stream.
    const size_t bytes = 1 << 20;
    void* device = nullptr;
    void* pinned = nullptr;
    CHECK_CUDA(cudaMalloc(&device, bytes));
    CHECK_CUDA(cudaMallocHost(&pinned, bytes));
    CHECK_CUDA(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemsetAsync(device, 0, bytes));
    // A graph of one captured kernel (8 us), launched on a stream of its own.
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    spin<<<500, 1000, 0, stream>>>(nullptr);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUPTI(cuptiActivityFlushAll(0));

    // The graph's kernel: its own graph id, its call cudaGraphLaunch.
    CHECK(g_buffers >= 1);
    CHECK(g_kernels.size() == 3);
    Kernel node = g_kernels.back();
    g_kernels.pop_back();
    CHECK(node.graph != 0 && node.graphNode != 0 && node.name.find("spin") != std::string::npos);
    CHECK_NEAR((node.end - node.start) / unitsPerNs, GenericKernelUs(5e5) * 1e3, 1);
    const Call* graphCall = CallOf(node.correlation);
    CHECK(graphCall && graphCall->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
    // Two kernels, back to back (the second was issued long before the first ends).
    CHECK(g_kernels.size() == 2);
    for (const Kernel& k : g_kernels)
    {
        CHECK(k.name.find("spin") != std::string::npos);
        CHECK(k.blockX == 1000 && k.graph == 0 && k.graphNode == 0);
    }
    CHECK(g_kernels[0].gridX == 1000 && g_kernels[1].gridX == 2000);
    CHECK_NEAR((g_kernels[0].end - g_kernels[0].start) / unitsPerNs, GenericKernelUs(1e6) * 1e3, 1);
    CHECK_NEAR((g_kernels[1].end - g_kernels[1].start) / unitsPerNs, GenericKernelUs(2e6) * 1e3, 1);
    CHECK(g_kernels[1].start == g_kernels[0].end);
    // The first starts a launch overhead + latency after the clock was read before it (5 us).
    CHECK_NEAR((g_kernels[0].start - before) / unitsPerNs,
               (kLaunchOverheadUs + kLaunchLatencyUs) * 1e3, 1);
    // Each kernel's runtime call (cudaLaunchKernel) on this thread, ending before it starts, and
    // its external correlation with 42.
    for (const Kernel& k : g_kernels)
    {
        const Call* call = CallOf(k.correlation);
        CHECK(call && call->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
        CHECK(call->start <= call->end);
        if (!source)
        {
            CHECK(call->end <= k.start);
            CHECK_NEAR((call->end - call->start) / unitsPerNs, kLaunchOverheadUs * 1e3, 1);
        }
        bool tied = false;
        for (auto [id, correlation] : g_external)
        {
            tied = tied || (id == 42 && correlation == k.correlation);
        }
        CHECK(tied);
    }
    CHECK(g_external.size() == 2); // nothing after the pop
    // The copy: host (pinned) to device, 1 MiB, after the second kernel; its call is cudaMemcpy and
    // returns when the copy has ended.
    CHECK(g_copies.size() == 1);
    const Copy& copy = g_copies[0];
    CHECK(copy.bytes == bytes && copy.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    CHECK(copy.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED &&
          copy.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    CHECK(copy.start >= g_kernels[1].end && copy.end > copy.start);
    const Call* copyCall = CallOf(copy.correlation);
    CHECK(copyCall && copyCall->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020);
    CHECK(source || copyCall->end >= copy.end);
    // The memset: after the copy, its call cudaMemsetAsync.
    CHECK(g_memsets.size() == 1 && g_memsets[0].bytes == bytes);
    CHECK(g_memsets[0].start >= copy.end);
    const Call* setCall = CallOf(g_memsets[0].correlation);
    CHECK(setCall && setCall->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020);
    // The wait: cudaDeviceSynchronize's record, from before the graph's kernel ends to after.
    const Call* wait = nullptr;
    for (const Call& call : g_calls)
    {
        wait = call.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 ? &call : wait;
    }
    CHECK(wait && wait->start <= wait->end);
    CHECK(source || (wait->start < node.end && wait->end >= node.end));
    // A second flush has nothing new; what is not supported says so.
    size_t records = g_kernels.size() + g_calls.size() + g_copies.size();
    CHECK_CUPTI(cuptiActivityFlushAll(0));
    CHECK(g_kernels.size() + g_calls.size() + g_copies.size() == records);
    CUpti_SubscriberHandle subscriber;
    CHECK(cuptiSubscribe(&subscriber, nullptr, nullptr) == CUPTI_ERROR_NOT_SUPPORTED);
    std::printf("cupti ok (%s timestamps)\n", source ? "source" : "virtual ns");
    return 0;
}
