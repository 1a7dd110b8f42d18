// Checked calls, the caching allocator, process groups and GEMMs (runtime.h).
#include "runtime.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace traingpt
{

void
CheckCuda(cudaError_t e, const char* call, const char* file, int line)
{
    if (e != cudaSuccess)
        throw RuntimeError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                           cudaGetErrorString(e));
}

void
CheckCublas(cublasStatus_t s, const char* call, const char* file, int line)
{
    if (s != CUBLAS_STATUS_SUCCESS)
        throw RuntimeError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                           cublasGetStatusString(s));
}

void
CheckNccl(ncclResult_t r, const char* call, const char* file, int line)
{
    if (r != ncclSuccess)
        throw RuntimeError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                           ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")");
}

std::string
FormatBytes(double bytes)
{
    char buf[64];
    if (bytes >= double(1ull << 30))
        std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / double(1ull << 30));
    else if (bytes >= double(1ull << 20))
        std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / double(1ull << 20));
    else
        std::snprintf(buf, sizeof(buf), "%.0f bytes", bytes);
    return buf;
}

// ------------------------------------------------------------------ device memory

void
DeviceMemory::Init(int device)
{
    m_device = device;
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    m_capacity = prop.totalGlobalMem;
}

void*
DeviceMemory::Alloc(size_t bytes, cudaStream_t stream, const std::string& what)
{
    const size_t rounded = (std::max<size_t>(bytes, 1) + 511) / 512 * 512;
    auto hit = m_cache.find(rounded);
    if (hit != m_cache.end())
    {
        void* p = hit->second.first;
        Block block = hit->second.second;
        m_cache.erase(hit);
        if (block.released)
        {
            CUDA_CHECK(cudaStreamWaitEvent(stream, block.released, 0));
            m_events.push_back(block.released);
            block.released = nullptr;
        }
        m_live[p] = block;
        return p;
    }
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e == cudaErrorMemoryAllocation && !m_cache.empty())
    {
        (void)cudaGetLastError();
        ReleaseCache();
        e = cudaMalloc(&p, rounded);
    }
    if (e != cudaSuccess)
    {
        (void)cudaGetLastError();
        size_t freeBytes = 0, total = 0;
        (void)cudaMemGetInfo(&freeBytes, &total);
        throw RuntimeError(
            "CUDA out of memory. Tried to allocate " + FormatBytes(double(rounded)) + " for " +
            what + " (GPU " + std::to_string(m_device) + "; " + FormatBytes(double(total)) +
            " total capacity; " + FormatBytes(double(m_reserved)) + " reserved by train-gpt; " +
            FormatBytes(double(freeBytes)) + " free): cudaMalloc: " + cudaGetErrorString(e));
    }
    m_reserved += rounded;
    m_peakReserved = std::max(m_peakReserved, m_reserved);
    m_live[p] = Block{rounded, nullptr};
    return p;
}

void
DeviceMemory::Free(void* p, cudaStream_t lastUse)
{
    if (!p)
        return;
    auto it = m_live.find(p);
    if (it == m_live.end())
        throw RuntimeError("DeviceMemory::Free of a pointer it did not allocate");
    Block block = it->second;
    m_live.erase(it);
    if (m_events.empty())
    {
        cudaEvent_t e;
        CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        m_events.push_back(e);
    }
    block.released = m_events.back();
    m_events.pop_back();
    CUDA_CHECK(cudaEventRecord(block.released, lastUse));
    m_cache.emplace(block.bytes, std::make_pair(p, block));
}

void
DeviceMemory::ReleaseCache()
{
    CUDA_CHECK(cudaDeviceSynchronize());
    for (auto& [bytes, entry] : m_cache)
    {
        CUDA_CHECK(cudaFree(entry.first));
        m_reserved -= bytes;
        if (entry.second.released)
            m_events.push_back(entry.second.released);
    }
    m_cache.clear();
}

// ------------------------------------------------------------------ process groups

namespace
{

int
EnvInt(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

// Real seconds (gpu-emu makes clock_gettime virtual on threads that drive GPUs; a timeout must
// count real time, so this asks the kernel directly).
double
RealSeconds()
{
    timespec ts{};
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void
SendAll(int fd, const void* data, size_t n)
{
    const char* p = static_cast<const char*>(data);
    while (n > 0)
    {
        ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            throw RuntimeError(std::string("TCP store: send failed: ") + std::strerror(errno));
        p += w;
        n -= size_t(w);
    }
}

void
RecvAll(int fd, void* data, size_t n)
{
    char* p = static_cast<char*>(data);
    while (n > 0)
    {
        ssize_t r = ::recv(fd, p, n, 0);
        if (r <= 0)
            throw RuntimeError(
                "TCP store: the connection to rank 0 closed before the NCCL id came");
        p += r;
        n -= size_t(r);
    }
}

// Rank 0 serves the id to WORLD_SIZE - 1 connections; the others connect (retrying while rank 0
// starts) and read it.
void
ExchangeUniqueId(ncclUniqueId* id, int rank, int world)
{
    const char* addr = std::getenv("MASTER_ADDR");
    const int port = EnvInt("MASTER_PORT", 0);
    if (!addr || port <= 0)
        throw RuntimeError("WORLD_SIZE > 1 needs MASTER_ADDR and MASTER_PORT (the TCP store)");
    const double timeout = 600;
    if (rank == 0)
    {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(uint16_t(port));
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
        // A backlog for every other rank: they all connect at once, and a connection beyond a
        // full backlog waits for TCP's SYN retransmission (1 s, then 3 s, ...).
        if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
            ::listen(fd, std::max(128, world)) != 0)
            throw RuntimeError("TCP store: cannot listen on port " + std::to_string(port) + ": " +
                               std::strerror(errno));
        for (int served = 1; served < world; served++)
        {
            int c = ::accept(fd, nullptr, nullptr);
            if (c < 0)
                throw RuntimeError(std::string("TCP store: accept: ") + std::strerror(errno));
            SendAll(c, id, sizeof(*id));
            ::close(c);
        }
        ::close(fd);
        return;
    }
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(addr, std::to_string(port).c_str(), &hints, &res) != 0 || !res)
        throw RuntimeError(std::string("TCP store: cannot resolve MASTER_ADDR ") + addr);
    const double start = RealSeconds();
    for (int waitMs = 1;; waitMs = std::min(2 * waitMs, 100))
    {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0)
        {
            RecvAll(fd, id, sizeof(*id));
            ::close(fd);
            break;
        }
        ::close(fd);
        if (RealSeconds() - start > timeout)
            throw RuntimeError(std::string("TCP store: rank 0 did not answer on ") + addr + ":" +
                               std::to_string(port));
        timespec ts{0, waitMs * 1000000L};
        nanosleep(&ts, nullptr);
    }
    freeaddrinfo(res);
}

Group
Split(ncclComm_t world, int color, int key, int size)
{
    Group g;
    g.size = size;
    ncclComm_t comm = nullptr;
    // Every rank takes part in every split (NCCL requires it); groups of one keep no communicator.
    NCCL_CHECK(ncclCommSplit(world, size > 1 ? color : NCCL_SPLIT_NOCOLOR, key, &comm, nullptr));
    if (size > 1)
    {
        g.comm = comm;
        NCCL_CHECK(ncclCommUserRank(comm, &g.rank));
    }
    return g;
}

// Links p -> p + 1 (mod pp) in one direction. Every rank takes part in three splits (NCCL
// requires all ranks in each); a link's split is p mod 2, or 2 for the wrap-around link when pp
// is odd, so no rank is in two links of one split.
void
SplitLinks(ncclComm_t world, const Layout& l, int direction, int sendLink, int recvLink,
           Group* send, Group* recv)
{
    const int pp = l.pp;
    auto callOf = [&](int link) { return (pp % 2 == 1 && link == pp - 1) ? 2 : link % 2; };
    const int ppColor = l.rank % (l.tp * l.cp * l.dp);
    for (int call = 0; call < 3; call++)
    {
        int color = NCCL_SPLIT_NOCOLOR, key = 0;
        Group* target = nullptr;
        if (pp > 1 && callOf(sendLink) == call)
            color = (ppColor * pp + sendLink) * 2 + direction, key = 0, target = send;
        else if (pp > 1 && callOf(recvLink) == call)
            color = (ppColor * pp + recvLink) * 2 + direction, key = 1, target = recv;
        ncclComm_t comm = nullptr;
        NCCL_CHECK(ncclCommSplit(world, color, key, &comm, nullptr));
        if (target)
        {
            target->comm = comm;
            target->size = 2;
            target->rank = key;
        }
    }
}

} // namespace

Comms
InitComms(const Layout& l)
{
    Comms c;
    ncclUniqueId id{};
    if (l.rank == 0)
        NCCL_CHECK(ncclGetUniqueId(&id));
    if (l.world > 1)
        ExchangeUniqueId(&id, l.rank, l.world);
    NCCL_CHECK(ncclCommInitRank(&c.world.comm, l.world, id, l.rank));
    c.world.size = l.world;
    c.world.rank = l.rank;
    const int tpBlock = l.rank / l.tp;                                  // same cp, dp, pp
    const int cpColor = l.tpRank + l.tp * (l.dpRank + l.dp * l.ppRank); // same tp, dp, pp
    const int dataColor = l.tpRank + l.tp * l.ppRank;                   // same tp, pp
    c.tp = Split(c.world.comm, tpBlock, l.tpRank, l.tp);
    c.cp = Split(c.world.comm, cpColor, l.cpRank, l.cp);
    c.data = Split(c.world.comm, dataColor, l.rank, l.dp * l.cp);
    const int r = l.ppRank, pp = l.pp;
    // activations: rank r sends on link r (to r + 1) and receives on link r - 1;
    // gradients: link q carries q + 1 -> q, so rank r sends on link r - 1, receives on link r.
    SplitLinks(c.world.comm, l, 0, r, (r - 1 + pp) % pp, &c.actSend, &c.actRecv);
    SplitLinks(c.world.comm, l, 1, (r - 1 + pp) % pp, r, &c.gradSend, &c.gradRecv);
    return c;
}

// ------------------------------------------------------------------ GEMMs

void
Gemm(Blas& blas, cudaStream_t s, const GemmArgs& g)
{
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands and
    // keep each one's transpose flag.
    CUBLAS_CHECK(cublasSetStream(blas.handle, s));
    const cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (g.batch == 1)
        CUBLAS_CHECK(cublasGemmEx(blas.handle, opB, opA, g.n, g.m, g.k, &g.alpha, g.b, g.typeB,
                                  g.ldb, g.a, g.typeA, g.lda, &g.beta, g.c, g.typeC, g.ldc,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas.handle, opB, opA, g.n, g.m, g.k, &g.alpha, g.b,
                                                g.typeB, g.ldb, g.strideB, g.a, g.typeA, g.lda,
                                                g.strideA, &g.beta, g.c, g.typeC, g.ldc, g.strideC,
                                                g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void
GemmFp8(Blas& blas, cudaStream_t s, const Fp8GemmArgs& g)
{
    // Column-major Y^T[n, m] = W[k, n]^T X^T[k, m]: the "TN" form fp8 matmuls require.
    cublasLtMatmulDesc_t desc;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn)));
    cublasLtMatrixLayout_t la, lb, lc;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, g.wType, g.k, g.n, g.k));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, g.xType, g.k, g.m, g.k));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, g.yType, g.n, g.m, g.n));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &blas.ltWorkspaceBytes,
        sizeof(blas.ltWorkspaceBytes)));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    CUBLAS_CHECK(
        cublasLtMatmulAlgoGetHeuristic(blas.lt, desc, la, lb, lc, lc, pref, 1, &heuristic, &found));
    if (found == 0)
        throw RuntimeError("cublasLt has no fp8 algorithm for " + std::to_string(g.m) + "x" +
                           std::to_string(g.n) + "x" + std::to_string(g.k));
    const float alpha = 1.0f;
    CUBLAS_CHECK(cublasLtMatmul(blas.lt, desc, &alpha, g.w, la, g.x, lb, &g.beta, g.y, lc, g.y, lc,
                                &heuristic.algo, blas.ltWorkspace, blas.ltWorkspaceBytes, s));
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
}

} // namespace traingpt
