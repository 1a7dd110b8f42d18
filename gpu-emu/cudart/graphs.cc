// Graph API family: stream capture (with fork/join through events), instantiation, and launch,
// which replays the captured ops at the prices they had when captured.
#include "runtime-common.h"

#include <memory>
#include <unordered_set>

using namespace eidolon::gpu;
using namespace eidolon::gpu::rt;

namespace
{

// Live graphs and executable graphs (guarded by the emulator lock).
std::unordered_set<const Graph*>&
Graphs()
{
    static auto* graphs = new std::unordered_set<const Graph*>();
    return *graphs;
}

std::unordered_set<const Graph*>&
Execs()
{
    static auto* execs = new std::unordered_set<const Graph*>();
    return *execs;
}

cudaError_t
BeginCapture(cudaStream_t handle, bool perThread)
{
    ApiCall call(CallKind::Untimed);
    Stream* stream = StreamOf(call.Emu(), handle, perThread);
    if (!stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    if (stream->legacy)
    {
        return Fail(cudaErrorStreamCaptureUnsupported);
    }
    return call.Emu().BeginCapture(*stream) ? cudaSuccess : Fail(cudaErrorIllegalState);
}

cudaError_t
EndCapture(cudaStream_t handle, cudaGraph_t* graph, bool perThread)
{
    ApiCall call(CallKind::Untimed);
    Stream* stream = StreamOf(call.Emu(), handle, perThread);
    if (!stream || !graph)
    {
        return Fail(stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    }
    if (!stream->capture)
    {
        return Fail(cudaErrorIllegalState);
    }
    std::unique_ptr<Graph> captured = call.Emu().EndCapture(*stream);
    if (!captured)
    {
        *graph = nullptr;
        return Fail(cudaErrorStreamCaptureInvalidated);
    }
    Graphs().insert(captured.get());
    *graph = reinterpret_cast<cudaGraph_t>(captured.release());
    return cudaSuccess;
}

cudaError_t
IsCapturing(cudaStream_t handle, cudaStreamCaptureStatus* status, bool perThread)
{
    ApiCall call(CallKind::Untimed);
    Stream* stream = StreamOf(call.Emu(), handle, perThread);
    if (!stream || !status)
    {
        return Fail(stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    }
    *status = stream->capture ? (stream->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                                              : cudaStreamCaptureStatusActive)
                              : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t
CaptureInfo(cudaStream_t handle, bool perThread, cudaStreamCaptureStatus* status,
            unsigned long long* id, cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
            const cudaGraphEdgeData** edgeData, size_t* numDependencies)
{
    ApiCall call(CallKind::Untimed);
    Stream* stream = StreamOf(call.Emu(), handle, perThread);
    if (!stream || !status)
    {
        return Fail(stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
    }
    *status = stream->capture ? (stream->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                                              : cudaStreamCaptureStatusActive)
                              : cudaStreamCaptureStatusNone;
    if (id)
    {
        *id = stream->capture ? reinterpret_cast<uintptr_t>(stream->capture.get()) : 0;
    }
    if (graph)
    {
        *graph = nullptr;
    }
    if (dependencies)
    {
        *dependencies = nullptr;
    }
    if (edgeData)
    {
        *edgeData = nullptr;
    }
    if (numDependencies)
    {
        *numDependencies = 0;
    }
    return cudaSuccess;
}

cudaError_t
LaunchGraph(cudaGraphExec_t handle, cudaStream_t streamHandle, bool perThread)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    auto* exec = reinterpret_cast<const Graph*>(handle);
    Stream* stream = StreamOf(emu, streamHandle, perThread);
    if (!Execs().count(exec) || !stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    emu.Clock().Charge(spec::HostCall::GraphLaunch);
    ActivityLog::MarkCall(ActivityCall::GraphLaunch); // for a profiler
    emu.LaunchGraph(*exec, *stream);
    return cudaSuccess;
}

} // namespace

// Starts capturing the work issued to `stream` into a graph instead of running it.
EIDOLON_EXPORT cudaError_t
cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode)
{
    return BeginCapture(stream, false);
}

// cudaStreamBeginCapture with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode)
{
    return BeginCapture(stream, true);
}

// Ends the capture begun on `stream` and returns the captured graph.
EIDOLON_EXPORT cudaError_t
cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph)
{
    return EndCapture(stream, pGraph, false);
}

// cudaStreamEndCapture with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph)
{
    return EndCapture(stream, pGraph, true);
}

// Whether `stream` is capturing.
EIDOLON_EXPORT cudaError_t
cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus)
{
    return IsCapturing(stream, pCaptureStatus, false);
}

// cudaStreamIsCapturing with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus)
{
    return IsCapturing(stream, pCaptureStatus, true);
}

// Capture status and id of a stream (dependencies are not exposed: none reported).
EIDOLON_EXPORT cudaError_t
cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                         unsigned long long* id, cudaGraph_t* graph,
                         const cudaGraphNode_t** dependencies, const cudaGraphEdgeData** edgeData,
                         size_t* numDependencies)
{
    return CaptureInfo(stream, false, status, id, graph, dependencies, edgeData, numDependencies);
}

// cudaStreamGetCaptureInfo with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status,
                              unsigned long long* id, cudaGraph_t* graph,
                              const cudaGraphNode_t** dependencies,
                              const cudaGraphEdgeData** edgeData, size_t* numDependencies)
{
    return CaptureInfo(stream, true, status, id, graph, dependencies, edgeData, numDependencies);
}

// CUDA 12's form (what cudaStreamGetCaptureInfo meant there): no edge data.
EIDOLON_EXPORT cudaError_t
cudaStreamGetCaptureInfo_v2(cudaStream_t stream, cudaStreamCaptureStatus* status,
                            unsigned long long* id, cudaGraph_t* graph,
                            const cudaGraphNode_t** dependencies, size_t* numDependencies)
{
    return CaptureInfo(stream, false, status, id, graph, dependencies, nullptr, numDependencies);
}

// cudaStreamGetCaptureInfo_v2 with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetCaptureInfo_v2_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                 unsigned long long* id, cudaGraph_t* graph,
                                 const cudaGraphNode_t** dependencies, size_t* numDependencies)
{
    return CaptureInfo(stream, true, status, id, graph, dependencies, nullptr, numDependencies);
}

// CUDA 12.3+'s name for the form with edge data (CUDA 13 calls it cudaStreamGetCaptureInfo).
EIDOLON_EXPORT cudaError_t
cudaStreamGetCaptureInfo_v3(cudaStream_t stream, cudaStreamCaptureStatus* status,
                            unsigned long long* id, cudaGraph_t* graph,
                            const cudaGraphNode_t** dependencies,
                            const cudaGraphEdgeData** edgeData, size_t* numDependencies)
{
    return CaptureInfo(stream, false, status, id, graph, dependencies, edgeData, numDependencies);
}

// cudaStreamGetCaptureInfo_v3 with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamGetCaptureInfo_v3_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                 unsigned long long* id, cudaGraph_t* graph,
                                 const cudaGraphNode_t** dependencies,
                                 const cudaGraphEdgeData** edgeData, size_t* numDependencies)
{
    return CaptureInfo(stream, true, status, id, graph, dependencies, edgeData, numDependencies);
}

// The calling thread's capture interaction mode: accepted (eidolon does not restrict calls).
EIDOLON_EXPORT cudaError_t
cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode)
{
    return mode ? cudaSuccess : Fail(cudaErrorInvalidValue);
}

// An empty graph (nodes can only be added by stream capture).
EIDOLON_EXPORT cudaError_t
cudaGraphCreate(cudaGraph_t* pGraph, unsigned int)
{
    ApiCall call(CallKind::Untimed);
    if (!pGraph)
    {
        return Fail(cudaErrorInvalidValue);
    }
    auto* graph = new Graph();
    Graphs().insert(graph);
    *pGraph = reinterpret_cast<cudaGraph_t>(graph);
    return cudaSuccess;
}

// Number of nodes of a graph; node handles are opaque (index + 1).
EIDOLON_EXPORT cudaError_t
cudaGraphGetNodes(cudaGraph_t handle, cudaGraphNode_t* nodes, size_t* numNodes)
{
    ApiCall call(CallKind::Untimed);
    auto* graph = reinterpret_cast<const Graph*>(handle);
    if (!Graphs().count(graph) || !numNodes)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (nodes)
    {
        size_t count = std::min(*numNodes, graph->nodes.size());
        for (size_t i = 0; i < count; ++i)
        {
            nodes[i] = reinterpret_cast<cudaGraphNode_t>(i + 1);
        }
    }
    *numNodes = graph->nodes.size();
    return cudaSuccess;
}

// An executable copy of a graph.
EIDOLON_EXPORT cudaError_t
cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t handle, unsigned long long)
{
    ApiCall call(CallKind::Untimed);
    auto* graph = reinterpret_cast<const Graph*>(handle);
    if (!pGraphExec || !Graphs().count(graph))
    {
        return Fail(cudaErrorInvalidValue);
    }
    auto* exec = new Graph(*graph);
    Execs().insert(exec);
    *pGraphExec = reinterpret_cast<cudaGraphExec_t>(exec);
    return cudaSuccess;
}

// cudaGraphInstantiate with flags (upload/auto-free flags have no effect).
EIDOLON_EXPORT cudaError_t
cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                              unsigned long long flags)
{
    return cudaGraphInstantiate(pGraphExec, graph, flags);
}

// Uploading an executable graph costs nothing.
EIDOLON_EXPORT cudaError_t
cudaGraphUpload(cudaGraphExec_t, cudaStream_t)
{
    return cudaSuccess;
}

// cudaGraphUpload on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaGraphUpload_ptsz(cudaGraphExec_t, cudaStream_t)
{
    return cudaSuccess;
}

// Launches an executable graph on `stream`: its nodes run at their captured prices.
EIDOLON_EXPORT cudaError_t
cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return LaunchGraph(graphExec, stream, false);
}

// cudaGraphLaunch with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return LaunchGraph(graphExec, stream, true);
}

// Destroys an executable graph.
EIDOLON_EXPORT cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t handle)
{
    ApiCall call(CallKind::Untimed);
    auto* exec = reinterpret_cast<const Graph*>(handle);
    if (!Execs().erase(exec))
    {
        return Fail(cudaErrorInvalidValue);
    }
    delete exec;
    return cudaSuccess;
}

// Destroys a graph.
EIDOLON_EXPORT cudaError_t
cudaGraphDestroy(cudaGraph_t handle)
{
    ApiCall call(CallKind::Untimed);
    auto* graph = reinterpret_cast<const Graph*>(handle);
    if (!Graphs().erase(graph))
    {
        return Fail(cudaErrorInvalidValue);
    }
    delete graph;
    return cudaSuccess;
}

// Memory that graphs' allocation nodes hold on a device: none (graph memory nodes are not
// modelled; a graph's kernels use memory the program allocated), so every figure reads 0.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value)
{
    ApiCall call(CallKind::Untimed);
    if (!value || attr < cudaGraphMemAttrUsedMemCurrent || attr > cudaGraphMemAttrReservedMemHigh)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    *static_cast<uint64_t*>(value) = 0;
    return cudaSuccess;
}

// Resets a high-water mark of graph memory (only 0 may be written): nothing to reset.
EIDOLON_EXPORT cudaError_t
cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value)
{
    ApiCall call(CallKind::Untimed);
    if (!value || *static_cast<uint64_t*>(value) != 0 ||
        (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh))
    {
        return Fail(cudaErrorInvalidValue);
    }
    return ValidDevice(call.Emu(), device) ? cudaSuccess : Fail(cudaErrorInvalidDevice);
}

// Frees graph memory the device keeps in reserve: none is kept.
EIDOLON_EXPORT cudaError_t
cudaDeviceGraphMemTrim(int device)
{
    ApiCall call(CallKind::Untimed);
    return ValidDevice(call.Emu(), device) ? cudaSuccess : Fail(cudaErrorInvalidDevice);
}
