// A captured graph replays at the prices of the captured ops; fork/join branches overlap.
#include "check.h"

#include <cstdint>

__global__ void
spin(float*)
{
}

int
main()
{
    cudaStream_t s, side;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    const int grids[] = {1000, 2000, 500}; // 16 + 32 + 8 us
    float direct = 0, replay = 0;

    // The sequence launched directly.
    CHECK_CUDA(cudaEventRecord(start, s));
    for (int grid : grids)
    {
        spin<<<grid, 1000, 0, s>>>(nullptr);
    }
    CHECK_CUDA(cudaEventRecord(stop, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaEventElapsedTime(&direct, start, stop));

    // The same sequence captured: nothing runs while capturing.
    double h = NowUs();
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK_CUDA(cudaStreamIsCapturing(s, &status));
    CHECK(status == cudaStreamCaptureStatusActive);
    for (int grid : grids)
    {
        spin<<<grid, 1000, 0, s>>>(nullptr);
    }
    CHECK_EQ_ERR(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - h, 3 * kLaunchOverheadUs, 1e-3); // only the host cost of the launches
    size_t nodes = 0;
    CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    CHECK(nodes == 3);
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));

    // One graph launch: one overhead, then the three kernels back to back.
    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaEventRecord(stop, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaEventElapsedTime(&replay, start, stop));
    CHECK_NEAR(replay, direct, 1e-6);
    CHECK_NEAR(replay, (kLaunchOverheadUs + 56.0) / 1e3, 1e-6);

    // Fork/join capture: a 32 us branch on `side` beside 16 + 8 us on `s`; the graph lasts 32 us.
    cudaEvent_t fork, join;
    CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    cudaGraph_t forked;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CUDA(cudaEventRecord(fork, s));
    CHECK_CUDA(cudaStreamWaitEvent(side, fork, 0));
    spin<<<2000, 1000, 0, side>>>(nullptr);
    spin<<<1000, 1000, 0, s>>>(nullptr);
    spin<<<500, 1000, 0, s>>>(nullptr);
    CHECK_CUDA(cudaEventRecord(join, side));
    CHECK_CUDA(cudaStreamWaitEvent(s, join, 0));
    CHECK_CUDA(cudaStreamEndCapture(s, &forked));
    CHECK_CUDA(cudaStreamIsCapturing(side, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    cudaGraphExec_t forkedExec;
    CHECK_CUDA(cudaGraphInstantiateWithFlags(&forkedExec, forked, 0));
    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaGraphLaunch(forkedExec, s));
    CHECK_CUDA(cudaEventRecord(stop, s));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&replay, start, stop));
    CHECK_NEAR(replay, (kLaunchOverheadUs + 32.0) / 1e3, 1e-6);

    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphExecDestroy(forkedExec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaGraphDestroy(forked));
    // Graph memory (allocation nodes are not modelled): every figure reads 0, a high mark
    // resets to 0, trimming has nothing to free (PyTorch's cudaMallocAsync backend asks).
    uint64_t graphMemory = 1;
    CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &graphMemory));
    CHECK(graphMemory == 0);
    CHECK_CUDA(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &graphMemory));
    CHECK_CUDA(cudaDeviceGraphMemTrim(0));
    return Finish("graphs");
}
