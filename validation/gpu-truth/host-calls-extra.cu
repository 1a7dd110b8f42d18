// Host costs that h100-sweep.cu does not take (issue 12): clock_gettime, cudaLaunchHostFunc,
// cudaStreamAddCallback, cudaGraphLaunch of a one-kernel graph; and whether the kernel offers a
// hardware instruction counter (perf_event_open), which eidolon's `instructions` host-time mode
// needs. Same method as h100-sweep's host costs: CPU wall clock around batches of calls, median of
// batches, the first batch dropped. Build: nvcc -O2 -o host-calls-extra host-calls-extra.cu
// Prints JSON Lines like h100-sweep ({"kind":"host",...}, {"kind":"pmu",...}).
#include "cuda-check.h"

#include <cuda_runtime.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

__global__ void
EmptyKernel()
{
}
static void
HostNothing(void*)
{
}
static void CUDART_CB
CallbackNothing(cudaStream_t, cudaError_t, void*)
{
}

static double
NowUs()
{
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

template<class F>
static void
HostCost(const char* call, const char* detail, int batch, int batches, F&& body,
         cudaStream_t drain = nullptr)
{
    std::vector<double> per;
    for (int b = 0; b < batches + 1; ++b)
    {
        double t0 = NowUs();
        for (int i = 0; i < batch; ++i)
            body();
        double t1 = NowUs();
        if (drain)
            CK(cudaStreamSynchronize(drain));
        if (b > 0)
            per.push_back((t1 - t0) / batch);
    }
    std::sort(per.begin(), per.end());
    printf("{\"kind\":\"host\",\"call\":\"%s\",\"detail\":\"%s\",\"us_median\":%.4f,"
           "\"us_min\":%.4f,\"batch\":%d,\"batches\":%d}\n",
           call, detail, per[per.size() / 2], per.front(), batch, batches);
    fflush(stdout);
}

static void
ProbePmu()
{
    perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    int error = fd < 0 ? errno : 0;
    printf("{\"kind\":\"pmu\",\"what\":\"perf_event_open HW_INSTRUCTIONS user\",\"ok\":%s,"
           "\"errno\":%d,\"error\":\"%s\"}\n",
           fd >= 0 ? "true" : "false", error, fd >= 0 ? "" : strerror(error));
    if (fd >= 0)
        close(static_cast<int>(fd));
}

int
main()
{
    ProbePmu();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    EmptyKernel<<<1, 1, 0, s>>>();
    CK(cudaStreamSynchronize(s));

    timespec ts;
    HostCost("clock_gettime", "CLOCK_MONOTONIC", 1000, 20,
             [&] { clock_gettime(CLOCK_MONOTONIC, &ts); });
    HostCost(
        "cudaLaunchHostFunc", "empty host function", 256, 40,
        [&] { CK(cudaLaunchHostFunc(s, HostNothing, nullptr)); }, s);
    HostCost(
        "cudaStreamAddCallback", "empty callback", 256, 40,
        [&] { CK(cudaStreamAddCallback(s, CallbackNothing, nullptr, 0)); }, s);

    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EmptyKernel<<<1, 1, 0, s>>>();
    CK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    HostCost(
        "cudaGraphLaunch", "one empty-kernel node", 256, 40, [&] { CK(cudaGraphLaunch(exec, s)); },
        s);
    return 0;
}
