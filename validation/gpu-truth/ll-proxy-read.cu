// How fast one NCCL proxy thread can send LL data across nodes (issue 16's LL proxy read rate,
// `CollectiveModel::LlNetSendRate`), measured on this GPU server with the mechanism alone.
//
// What NCCL 2.24 does (transport/net.cc, sendProxyProgress; NVIDIA/nccl#756): a network
// connection's LL send buffer is in host memory (NCCL_STEPS = 8 slots); the GPU's LL primitives
// wait for a free slot (the head the proxy posts), write the step's size into the connection's
// FIFO, then store 16-byte lines {data, flag, data, flag} over PCIe, one line per thread in turn.
// The proxy thread visits each of its connections once per pass: when a slot has a size, it reads
// both flags of every line of the step, from line 0 again on its next visit whenever one is not
// written yet, and only when all are there posts the `isend`; the slot is free again once the send
// completes. Here the send completes at once (no NIC), so what is left is the GPU's stores to
// host memory and the proxy's reads of them: the ceiling a real run can only be under.
//
// Modes (one JSON line per configuration, median of 5 runs; "gbps" is data bytes, 8 per line):
//   proxy     the loop above: C connections (one CTA each) on one proxy thread
//   gpu-only  the same stores with the proxy out of the way (every slot free): PCIe write rate
//   cold-read the proxy's flag check over steps the GPU wrote earlier (no race): read rate alone
//
// Build: nvcc -O2 -arch=sm_90 -o ll-proxy-read ll-proxy-read.cu -lpthread
#include "cuda-check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

constexpr int kSlots = 8;       // NCCL_STEPS
constexpr int kHeadStride = 16; // one 128-byte line per connection's head and FIFO

struct alignas(16) LlLine
{
    uint32_t data1, flag1, data2, flag2;
};

// One CTA per connection: NCCL's LL send side for `steps` steps of `lines` lines each.
__global__ void
LlSender(LlLine* buffers, long long* fifo, unsigned long long* heads, int lines, long steps,
         int slots)
{
    const int c = blockIdx.x;
    LlLine* buffer = buffers + (size_t)c * slots * lines;
    volatile long long* sizes = fifo + (size_t)c * kHeadStride;
    volatile unsigned long long* head = heads + (size_t)c * kHeadStride;
    long headCache = 0; // as NCCL's sendConnHeadCache: read the head over PCIe only when needed
    for (long s = 0; s < steps; ++s)
    {
        const int slot = (int)(s % slots);
        if (threadIdx.x == 0)
        {
            while (headCache + slots <= s) // the slot's previous step is not sent yet
                headCache = (long)*head;
            sizes[slot % kSlots] = (long long)lines * sizeof(LlLine);
        }
        __syncthreads();
        const uint32_t flag = (uint32_t)(s + 1);
        LlLine* step = buffer + (size_t)slot * lines;
        for (int i = threadIdx.x; i < lines; i += blockDim.x)
        {
            const uint32_t d = (uint32_t)i;
            asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(step + i), "r"(d),
                         "r"(flag), "r"(d), "r"(flag)
                         : "memory");
        }
    }
}

static double
NowS()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Result
{
    double gbps;
    double linesReadPerLine; // proxy reads of a line's flags, per line sent
};

struct Buffers
{
    LlLine* lines = nullptr;
    long long* fifo = nullptr;
    unsigned long long* heads = nullptr;
    size_t lineCount = 0;
};

static Buffers
Alloc(int channels, int slots, int lines)
{
    Buffers b;
    b.lineCount = (size_t)channels * slots * lines;
    CK(cudaHostAlloc((void**)&b.lines, b.lineCount * sizeof(LlLine), cudaHostAllocMapped));
    CK(cudaHostAlloc((void**)&b.fifo, (size_t)channels * kHeadStride * sizeof(long long),
                     cudaHostAllocMapped));
    CK(cudaHostAlloc((void**)&b.heads, (size_t)channels * kHeadStride * sizeof(long long),
                     cudaHostAllocMapped));
    return b;
}

static void
Reset(Buffers& b, int channels, unsigned long long headStart)
{
    for (size_t i = 0; i < b.lineCount; ++i)
        b.lines[i] = LlLine{0, 0, 0, 0};
    for (int i = 0; i < channels * kHeadStride; ++i)
    {
        b.fifo[i] = -1;
        b.heads[i] = headStart;
    }
}

static void
Free(Buffers& b)
{
    CK(cudaFreeHost(b.lines));
    CK(cudaFreeHost(b.fifo));
    CK(cudaFreeHost(b.heads));
}

// The proxy: one thread, passes over the connections as NCCL's progress loop does.
static Result
RunProxy(int channels, int threads, int lines, long steps)
{
    Buffers b = Alloc(channels, kSlots, lines);
    Reset(b, channels, 0);
    std::vector<long> sent(channels, 0);
    long long linesRead = 0;
    LlSender<<<channels, threads>>>(b.lines, b.fifo, b.heads, lines, steps, kSlots);
    CK(cudaGetLastError());
    double t0 = 0;
    const double start = NowS();
    long done = 0;
    for (long pass = 0; done < channels; ++pass)
    {
        if ((pass & 0xffff) == 0 && NowS() - start > 20)
        {
            fprintf(stderr, "proxy: no progress after 20 s (sent %ld of %ld on connection 0)\n",
                    sent[0], steps);
            exit(1);
        }
        done = 0;
        for (int c = 0; c < channels; ++c)
        {
            long s = sent[c];
            if (s >= steps)
            {
                ++done;
                continue;
            }
            const int slot = (int)(s % kSlots);
            volatile long long* size = b.fifo + (size_t)c * kHeadStride + slot;
            if (*size == -1)
                continue;
            if (t0 == 0)
                t0 = NowS();
            const uint32_t flag = (uint32_t)(s + 1);
            volatile LlLine* step = b.lines + ((size_t)c * kSlots + slot) * lines;
            const int n = (int)(*size / (long long)sizeof(LlLine));
            bool ready = true;
            for (int i = 0; i < n; ++i)
            {
                ++linesRead;
                if (step[i].flag1 != flag || step[i].flag2 != flag)
                {
                    ready = false;
                    break;
                }
            }
            if (!ready)
                continue;
            // isend posted and (no NIC here) complete: free the slot, post the head.
            *size = -1;
            sent[c] = s + 1;
            std::atomic_thread_fence(std::memory_order_release);
            *(volatile unsigned long long*)(b.heads + (size_t)c * kHeadStride) = sent[c];
        }
    }
    const double t1 = NowS();
    CK(cudaDeviceSynchronize());
    Free(b);
    const double bytes = (double)channels * steps * lines * 8;
    return Result{bytes / (t1 - t0) / 1e9, (double)linesRead / ((double)channels * steps * lines)};
}

// The same stores with every slot free from the start: the GPU's LL write rate to host memory.
static Result
RunGpuOnly(int channels, int threads, int lines, long steps)
{
    Buffers b = Alloc(channels, kSlots, lines);
    Reset(b, channels, (unsigned long long)steps);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    LlSender<<<channels, threads>>>(b.lines, b.fifo, b.heads, lines, steps, kSlots);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    Free(b);
    const double bytes = (double)channels * steps * lines * 8;
    return Result{bytes / (ms * 1e-3) / 1e9, 0};
}

// The proxy's check over steps already written (one slot per step, no reuse): its read rate alone.
static Result
RunColdRead(int threads, int lines, long steps)
{
    Buffers b = Alloc(1, (int)steps, lines);
    Reset(b, 1, (unsigned long long)steps);
    LlSender<<<1, threads>>>(b.lines, b.fifo, b.heads, lines, steps, (int)steps);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    long bad = 0;
    const double t0 = NowS();
    for (long s = 0; s < steps; ++s)
    {
        const uint32_t flag = (uint32_t)(s + 1);
        volatile LlLine* step = b.lines + (size_t)s * lines;
        for (int i = 0; i < lines; ++i)
            if (step[i].flag1 != flag || step[i].flag2 != flag)
            {
                ++bad;
                break;
            }
    }
    const double t1 = NowS();
    Free(b);
    if (bad)
        fprintf(stderr, "cold-read: %ld steps not written\n", bad);
    const double bytes = (double)steps * lines * 8;
    return Result{bytes / (t1 - t0) / 1e9, 1};
}

template<class F>
static void
Report(const char* mode, int channels, int threads, int lines, long steps, F&& run)
{
    std::vector<Result> runs;
    for (int r = 0; r < 6; ++r)
    {
        Result x = run();
        if (r > 0) // the first run warms the allocator and the page tables
            runs.push_back(x);
    }
    std::sort(runs.begin(), runs.end(),
              [](const Result& a, const Result& b) { return a.gbps < b.gbps; });
    const Result& mid = runs[runs.size() / 2];
    printf("{\"kind\":\"ll-proxy\",\"mode\":\"%s\",\"channels\":%d,\"threads\":%d,"
           "\"step_lines\":%d,\"step_data_bytes\":%d,\"steps\":%ld,\"gbps_median\":%.3f,"
           "\"gbps_min\":%.3f,\"gbps_max\":%.3f,\"line_reads_per_line\":%.2f}\n",
           mode, channels, threads, lines, lines * 8, steps, mid.gbps, runs.front().gbps,
           runs.back().gbps, mid.linesReadPerLine);
    fflush(stdout);
}

int
main()
{
    const double perChannelBytes = 16.0 * 1024 * 1024;
    // NCCL's LL step: 64 KiB of lines (512 threads x 8 lines x 16 B), 32 KiB of data; smaller
    // operations send shorter steps.
    for (int lines : {512, 1024, 4096})
    {
        const long steps = (long)(perChannelBytes / (lines * 8));
        for (int threads : {128, 256, 512})
        {
            for (int channels : {1, 2, 4})
                Report("proxy", channels, threads, lines, steps,
                       [&] { return RunProxy(channels, threads, lines, steps); });
            Report("gpu-only", 1, threads, lines, steps,
                   [&] { return RunGpuOnly(1, threads, lines, steps); });
        }
        Report("cold-read", 1, 512, lines, steps, [&] { return RunColdRead(512, lines, steps); });
    }
    return 0;
}
