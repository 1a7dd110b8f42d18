// What one step of NCCL's LL128 ring costs where the ring leaves a node, on the GPU and its proxy
// thread alone (issue 16's "LL128 ring floor": the 4 x 8 H100 all_gather log's steps take
// ~5.5 us, NCCL's figure is 4.0; ns3-module/doc/collective-model.md, "Rings across nodes").
//
// What NCCL 2.24.3 does at the rank whose ring hop goes to the network (device/prims_ll128.h
// GenericOp; transport/net.cc sendProxyProgress), one ring step of s bytes a channel:
//   - waitSend: one thread re-reads the connection's head (host memory) only when its cached
//     credit of NCCL_STEPS = 8 slots runs out, and writes the step's size into the FIFO (host);
//   - a barrier of the block (640 threads, 20 warps);
//   - the receive from the NVLink peer: each thread loads its 16 B of each 128-byte line (120 B of
//     data, the flag in the last 8 B) until the line's flag is the step's, and stores the line to
//     the send buffer (GPU memory: GPUDirect RDMA sends from there);
//   - a barrier; __threadfence_system (sm90) and the tail store to host memory;
//   - the credit back to the NVLink peer (postRecv: the head it waits on).
// The proxy thread visits each of its connections once per pass and does one thing there: make
// a slot available (posted), send a step whose tail has arrived (isend), or find a send complete
// (test) and write the head. Here nothing leaves the GPU server: the "upstream" block stands for
// the NVLink peer (it writes its lines into the receive buffer in this GPU's memory, as the peer
// would over NVLink), and an isend completes at once. What is left is what the GPU and the proxy
// spend on every step, the occupancy that NCCL's code serializes per step; the network's own
// latency comes on top on a real cluster.
//
// Modes (one JSON line per configuration, median of 5 runs after a warm-up):
//   proxy       the loop above, C connections (C upstream + C exit blocks) on one proxy thread
//   gpu-only    the same blocks, every slot free from the start (no proxy): the GPU side alone
//   nvlink-hop  the exit block as an intra-node hop: no FIFO size, fence or tail, as an LL128
//               step between two NVLink peers
// "step_us" is the run's time over its steps (each connection runs `steps` steps at once).
//
// Build: nvcc -O2 -arch=sm_90 -o ll128-step ll128-step.cu -lpthread   (run it alone on the GPU)
#include "cuda-check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kSlots = 8;          // NCCL_STEPS
constexpr int kThreads = 640;      // NCCL_LL128_MAX_NTHREADS
constexpr int kLineBytes = 128;    // NCCL_LL128_LINEELEMS x 8 B
constexpr int kLineData = 120;     // NCCL_LL128_DATAELEMS x 8 B
constexpr int kStride = 16;        // one 128-byte line per connection's head, tail and FIFO
constexpr int kMaxLines = 4800;    // 576,000 B of data: NCCL's LL128 step (buffSize / 8)

enum Mode
{
    kProxy,
    kGpuOnly,
    kNvlinkHop
};

struct Conn
{
    uint64_t* recv;                   // upstream -> exit, kSlots steps of lines (GPU memory)
    uint64_t* send;                   // exit's send buffer, kSlots steps (GPU memory)
    volatile unsigned long long* upHead; // exit -> upstream credit (GPU memory)
    volatile long long* fifo;         // step sizes (host memory, mapped)
    volatile unsigned long long* tail; // exit -> proxy (host memory, mapped)
    volatile unsigned long long* head; // proxy -> exit (host memory, mapped)
};

__device__ __forceinline__ void
Load16(const uint64_t* p, uint64_t& a, uint64_t& b)
{
    asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}

__device__ __forceinline__ void
Store16(uint64_t* p, uint64_t a, uint64_t b)
{
    asm volatile("st.volatile.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

// Blocks 0 .. C-1: the NVLink peers; C .. 2C-1: the exit ranks' blocks.
__global__ void
Ll128Ring(Conn* conns, int nConns, int lines, long steps, int mode)
{
    const bool upstream = blockIdx.x < (unsigned)nConns;
    Conn& c = conns[upstream ? blockIdx.x : blockIdx.x - nConns];
    const int tid = threadIdx.x;
    const int lane8 = tid % 8; // 8 threads a line, 16 B each; the 8th holds the flag
    const int linesPerPass = kThreads / 8;
    const unsigned full = 0xffffffffu;
    if (upstream)
    {
        unsigned long long credit = 0;
        for (long s = 0; s < steps; ++s)
        {
            if (tid == 0)
                while (credit + kSlots < (unsigned long long)s + 1)
                    credit = *c.upHead;
            __syncthreads();
            const uint64_t flag = (uint64_t)s + 1;
            uint64_t* step = c.recv + (size_t)(s % kSlots) * kMaxLines * 16;
            for (int l = tid / 8; l < lines; l += linesPerPass)
                Store16(step + (size_t)l * 16 + lane8 * 2, (uint64_t)l, lane8 == 7 ? flag : 1);
        }
        return;
    }
    unsigned long long headCache = mode == kProxy ? 0 : (unsigned long long)steps;
    for (long s = 0; s < steps; ++s)
    {
        const int slot = (int)(s % kSlots);
        if (tid == 0 && mode != kNvlinkHop)
        {
            while (headCache + kSlots < (unsigned long long)s + 1)
                headCache = *c.head;
            c.fifo[slot] = (long long)lines * kLineBytes;
        }
        __syncthreads();
        const uint64_t flag = (uint64_t)s + 1;
        const uint64_t* in = c.recv + (size_t)slot * kMaxLines * 16;
        uint64_t* out = c.send + (size_t)slot * kMaxLines * 16;
        for (int base = 0; base < lines; base += linesPerPass)
        {
            const int l = base + tid / 8;
            const bool active = l < lines;
            uint64_t a = 0, b = 0;
            // As recvReduceSendCopy: every thread loads its 16 B, the flag threads check, and
            // the warp loads again while any of its lines is not this step's yet.
            while (true)
            {
                if (active)
                    Load16(in + (size_t)l * 16 + lane8 * 2, a, b);
                if (!__any_sync(full, active && lane8 == 7 && b != flag))
                    break;
            }
            if (active)
                Store16(out + (size_t)l * 16 + lane8 * 2, a, lane8 == 7 ? flag : b);
        }
        __syncthreads();
        if (tid == 0)
        {
            if (mode != kNvlinkHop)
            {
                __threadfence_system();
                *c.tail = (unsigned long long)s + 1;
            }
            *c.upHead = (unsigned long long)s + 1; // postRecv: the slot is free again
        }
    }
}

static double
NowS()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Setup
{
    std::vector<Conn> host;
    Conn* dev = nullptr;
    long long* hostMem = nullptr; // fifo, tail and head of every connection
};

static Setup
Alloc(int nConns)
{
    Setup s;
    const size_t stepWords = (size_t)kSlots * kMaxLines * 16;
    CK(cudaHostAlloc((void**)&s.hostMem, (size_t)nConns * 3 * kStride * sizeof(long long),
                     cudaHostAllocMapped));
    for (int i = 0; i < nConns; ++i)
    {
        Conn c{};
        CK(cudaMalloc((void**)&c.recv, stepWords * 8));
        CK(cudaMalloc((void**)&c.send, stepWords * 8));
        CK(cudaMemset(c.recv, 0, stepWords * 8));
        unsigned long long* up = nullptr;
        CK(cudaMalloc((void**)&up, 128));
        CK(cudaMemset(up, 0, 128));
        c.upHead = up;
        long long* base = s.hostMem + (size_t)i * 3 * kStride;
        c.fifo = base;
        c.tail = (volatile unsigned long long*)(base + kStride);
        c.head = (volatile unsigned long long*)(base + 2 * kStride);
        s.host.push_back(c);
    }
    CK(cudaMalloc((void**)&s.dev, nConns * sizeof(Conn)));
    return s;
}

static void
Reset(Setup& s, int nConns)
{
    for (int i = 0; i < nConns * 3 * kStride; ++i)
        s.hostMem[i] = 0;
    for (int i = 0; i < nConns; ++i)
    {
        for (int k = 0; k < kSlots; ++k)
            s.host[i].fifo[k] = -1;
        CK(cudaMemset(s.host[i].recv, 0, (size_t)kSlots * kMaxLines * 16 * 8));
        CK(cudaMemset((void*)s.host[i].upHead, 0, 128));
    }
    // Mapped host pointers are the same on the device (unified addressing).
    CK(cudaMemcpy(s.dev, s.host.data(), nConns * sizeof(Conn), cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
}

static void
Free(Setup& s)
{
    for (Conn& c : s.host)
    {
        CK(cudaFree(c.recv));
        CK(cudaFree(c.send));
        CK(cudaFree((void*)c.upHead));
    }
    CK(cudaFree(s.dev));
    CK(cudaFreeHost(s.hostMem));
}

// The proxy's passes: one action per connection per pass, as sendProxyProgress.
static void
ProxyLoop(Setup& s, int nConns, long steps)
{
    std::vector<long> posted(nConns, 0), transmitted(nConns, 0), done(nConns, 0);
    const double start = NowS();
    int finished = 0;
    for (long pass = 0; finished < nConns; ++pass)
    {
        if ((pass & 0xffff) == 0 && NowS() - start > 30)
        {
            fprintf(stderr, "proxy: no progress after 30 s (connection 0: %ld of %ld done)\n",
                    done[0], steps);
            exit(1);
        }
        finished = 0;
        for (int i = 0; i < nConns; ++i)
        {
            Conn& c = s.host[i];
            if (done[i] == steps)
            {
                ++finished;
                continue;
            }
            if (posted[i] < steps && posted[i] < done[i] + kSlots)
            {
                ++posted[i]; // non-shared buffers: only the count moves
                continue;
            }
            const int slot = (int)(transmitted[i] % kSlots);
            if (transmitted[i] < posted[i] && c.fifo[slot] != -1 &&
                *c.tail > (unsigned long long)transmitted[i])
            {
                ++transmitted[i]; // isend posted (LL128 with GDR: ready at once)
                continue;
            }
            if (done[i] < transmitted[i])
            {
                // test: complete (no NIC); size reset before the head, as NCCL
                c.fifo[done[i] % kSlots] = -1;
                std::atomic_thread_fence(std::memory_order_seq_cst);
                ++done[i];
                *c.head = (unsigned long long)done[i];
            }
        }
    }
}

static double
RunOnce(Setup& s, int nConns, int lines, long steps, Mode mode)
{
    Reset(s, nConns);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    Ll128Ring<<<2 * nConns, kThreads>>>(s.dev, nConns, lines, steps, mode);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1));
    if (mode == kProxy)
        ProxyLoop(s, nConns, steps);
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms * 1e3 / (double)steps;
}

int
main()
{
    const char* names[] = {"proxy", "gpu-only", "nvlink-hop"};
    const long steps = 4096;
    // s: a channel's bytes a ring step (8 KiB is the 4 x 8 all_gather's 4 MiB row; 2 and 4 KiB
    // its 1 and 2 MiB rows), cut into 120-byte lines as NCCL does.
    for (int dataBytes : {2048, 4096, 8192, 16384, 65536, 131072})
    {
        const int lines = (dataBytes + kLineData - 1) / kLineData;
        for (int nConns : {1, 2, 4})
        {
            for (Mode mode : {kProxy, kGpuOnly, kNvlinkHop})
            {
                if (mode != kProxy && nConns != 1)
                    continue;
                Setup s = Alloc(nConns);
                RunOnce(s, nConns, lines, steps / 8, mode); // warm-up
                std::vector<double> runs;
                for (int r = 0; r < 5; ++r)
                    runs.push_back(RunOnce(s, nConns, lines, steps, mode));
                Free(s);
                std::sort(runs.begin(), runs.end());
                printf("{\"kind\":\"ll128-step\",\"mode\":\"%s\",\"connections\":%d,"
                       "\"step_data_bytes\":%d,\"step_lines\":%d,\"steps\":%ld,"
                       "\"step_us_median\":%.3f,\"step_us_min\":%.3f,\"step_us_max\":%.3f}\n",
                       names[mode], nConns, dataBytes, lines, steps, runs[2], runs.front(),
                       runs.back());
                fflush(stdout);
            }
        }
    }
    return 0;
}
