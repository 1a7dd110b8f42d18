// NCCL operations move the bytes the host wrote (gpu-emu/README.md "Device memory and data").
// Every process is one rank of N (RANK, WORLD_SIZE, LOCAL_RANK from `eidolon run`); rank 0 hands
// the ncclUniqueId to the others through the file named by EIDOLON_TEST_ID_FILE. Each check's
// expected value is worked out from what every rank wrote; the program prints
// "rank R data: passed" or the failed checks and exits 1.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static int g_failures = 0;
static std::chrono::steady_clock::time_point g_start; // virtual: read after the first CUDA call
static int g_rank = 0;

#define CHECK(cond)                                                                                \
    do                                                                                             \
    {                                                                                              \
        if (!(cond))                                                                               \
        {                                                                                          \
            std::printf("rank %d %s:%d: CHECK failed: %s\n", g_rank, __FILE__, __LINE__, #cond);   \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)
#define CALL(call, ok)                                                                             \
    do                                                                                             \
    {                                                                                              \
        auto r_ = (call);                                                                          \
        if (r_ != (ok))                                                                            \
        {                                                                                          \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, int(r_));   \
            std::exit(2);                                                                          \
        }                                                                                          \
    } while (0)
#define CUDA(call) CALL(call, cudaSuccess)
#define NCCL(call) CALL(call, ncclSuccess)

static int
EnvInt(const char* name, int fallback)
{
    const char* value = std::getenv(name);
    return value ? std::atoi(value) : fallback;
}

static bool
ExchangeId(int rank, ncclUniqueId* id)
{
    const char* path = std::getenv("EIDOLON_TEST_ID_FILE");
    if (!path)
    {
        return false;
    }
    if (rank == 0)
    {
        if (ncclGetUniqueId(id) != ncclSuccess)
            return false;
        std::string tmp = std::string(path) + ".tmp";
        std::ofstream(tmp, std::ios::binary).write(id->internal, sizeof id->internal);
        return std::rename(tmp.c_str(), path) == 0;
    }
    for (int tries = 0; tries < 60000; ++tries)
    {
        std::ifstream in(path, std::ios::binary);
        if (in.read(id->internal, sizeof id->internal))
            return true;
        usleep(1000);
    }
    return false;
}

template<class T>
static T*
DeviceWith(const std::vector<T>& values)
{
    T* device = nullptr;
    CUDA(cudaMalloc(&device, values.size() * sizeof(T)));
    CUDA(cudaMemcpy(device, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
    return device;
}

template<class T>
static std::vector<T>
HostOf(const T* device, size_t count)
{
    std::vector<T> values(count);
    CUDA(cudaMemcpy(values.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
    return values;
}

// Contribution files in the run's data directory (EIDOLON_DATA_DIR) named for the first
// `collectives` collectives of a communicator or for the first send from a rank to the next one
// (names as core/data-exchange.cc makes them: <comm>.c<index>.r<rank>, <comm>.p<from>.<to>.<index>,
// a ".tmp<pid>" suffix while written). The exchange board ("board") is not one.
static int
EarlyContributionFiles(int n, unsigned long long collectives)
{
    const char* directory = std::getenv("EIDOLON_DATA_DIR");
    DIR* dir = directory ? opendir(directory) : nullptr;
    if (!dir)
        return -1;
    int found = 0;
    while (dirent* entry = readdir(dir))
    {
        std::string name = entry->d_name;
        size_t dot = name.find('.');
        if (dot == std::string::npos || name == "." || name == "..")
            continue;
        unsigned long long index = 0;
        int from = 0, to = 0, r = 0;
        const char* rest = name.c_str() + dot;
        if (std::sscanf(rest, ".c%llu.r%d", &index, &r) == 2 && index < collectives)
            ++found;
        else if (std::sscanf(rest, ".p%d.%d.%llu", &from, &to, &index) == 3 && index == 0 &&
                 to == (from + 1) % n)
            ++found;
    }
    closedir(dir);
    return found;
}

int
main()
{
    int rank = EnvInt("RANK", 0);
    int n = EnvInt("WORLD_SIZE", 1);
    g_rank = rank;
    CUDA(cudaSetDevice(EnvInt("LOCAL_RANK", rank)));
    g_start = std::chrono::steady_clock::now();
    ncclUniqueId id;
    if (!ExchangeId(rank, &id))
        return 3;
    ncclComm_t comm;
    NCCL(ncclCommInitRank(&comm, n, id, rank));
    cudaStream_t stream;
    CUDA(cudaStreamCreate(&stream));
    const int sum = n * (n - 1) / 2; // 0 + 1 + ... + (n - 1)

    // First, operations on buffers no rank wrote: the common case posts no file at all (only the
    // exchange board is there), and the destinations keep what they held (zeros).
    {
        float* unwritten = nullptr;
        float* out = nullptr;
        CUDA(cudaMalloc(&unwritten, 256 * sizeof(float) * n));
        CUDA(cudaMalloc(&out, 256 * sizeof(float) * n));
        NCCL(ncclAllReduce(unwritten, out, 256, ncclFloat, ncclSum, comm, stream));
        NCCL(ncclAllGather(unwritten, out, 256, ncclFloat, comm, stream));
        NCCL(ncclBroadcast(unwritten, out, 256, ncclFloat, 0, comm, stream));
        NCCL(ncclGroupStart());
        NCCL(ncclSend(unwritten, 8, ncclFloat, (rank + 1) % n, comm, stream));
        NCCL(ncclRecv(out, 8, ncclFloat, (rank + n - 1) % n, comm, stream));
        NCCL(ncclGroupEnd());
        CUDA(cudaStreamSynchronize(stream));
        CHECK(HostOf(out, 256)[7] == 0.0f);
        CHECK(EarlyContributionFiles(n, 3) == 0);
    }

    // DDP's model check: rank r fills 1024 floats with r; an in-place sum gives sum(0..n-1); the
    // result is read with an async copy on the stream after the collective.
    float* grads = DeviceWith(std::vector<float>(1024, float(rank)));
    NCCL(ncclAllReduce(grads, grads, 1024, ncclFloat, ncclSum, comm, stream));
    std::vector<float> reduced(1024, -1.0f);
    CUDA(cudaMemcpyAsync(reduced.data(), grads, 4096, cudaMemcpyDeviceToHost, stream));
    CUDA(cudaStreamSynchronize(stream));
    CHECK(reduced[0] == float(sum) && reduced[1023] == float(sum));
    // Two in place without a sync between: the second sums the first's results, n x sum.
    NCCL(ncclAllReduce(grads, grads, 1024, ncclFloat, ncclSum, comm, stream));
    NCCL(ncclAllReduce(grads, grads, 1024, ncclFloat, ncclSum, comm, stream));
    CHECK(HostOf(grads, 1024)[512] == float(n * n * sum));

    // Max over int64 of 10 r: 10 (n - 1); average over float of r: sum / n; bfloat16 sum of r
    // (small integers are exact in bfloat16: 0x3F80 is 1.0, r is r x 1.0).
    int64_t* big = DeviceWith(std::vector<int64_t>(8, int64_t(10 * rank)));
    NCCL(ncclAllReduce(big, big, 8, ncclInt64, ncclMax, comm, stream));
    CHECK(HostOf(big, 8)[7] == int64_t(10 * (n - 1)));
    float* mean = DeviceWith(std::vector<float>(4, float(rank)));
    NCCL(ncclAllReduce(mean, mean, 4, ncclFloat, ncclAvg, comm, stream));
    CHECK(HostOf(mean, 4)[3] == float(sum) / float(n));
    uint16_t rankBf16 = 0;
    {
        float value = float(rank);
        uint32_t bits;
        std::memcpy(&bits, &value, 4);
        rankBf16 = uint16_t(bits >> 16); // exact for small integers
    }
    uint16_t* half = DeviceWith(std::vector<uint16_t>(4, rankBf16));
    NCCL(ncclAllReduce(half, half, 4, ncclBfloat16, ncclSum, comm, stream));
    {
        uint32_t bits = uint32_t(HostOf(half, 4)[0]) << 16;
        float value;
        std::memcpy(&value, &bits, 4);
        CHECK(value == float(sum));
    }

    // Broadcast from the last rank of 100 ints 1000 + i into buffers the others never wrote.
    int root = n - 1;
    std::vector<int> message(100);
    for (int i = 0; i < 100; ++i)
        message[i] = 1000 + i;
    int* broadcast = nullptr;
    CUDA(cudaMalloc(&broadcast, 400));
    if (rank == root)
        CUDA(cudaMemcpy(broadcast, message.data(), 400, cudaMemcpyHostToDevice));
    NCCL(ncclBroadcast(broadcast, broadcast, 100, ncclInt32, root, comm, stream));
    CHECK(HostOf(broadcast, 100) == message);

    // All-gather of 4 ints 100 r + i: slot q holds 100 q + i.
    std::vector<int> mine(4);
    for (int i = 0; i < 4; ++i)
        mine[i] = 100 * rank + i;
    int* gatherSend = DeviceWith(mine);
    int* gathered = nullptr;
    CUDA(cudaMalloc(&gathered, 16 * n));
    NCCL(ncclAllGather(gatherSend, gathered, 4, ncclInt32, comm, stream));
    std::vector<int> all = HostOf(gathered, 4 * size_t(n));
    for (int q = 0; q < n; ++q)
        CHECK(all[4 * q + 3] == 100 * q + 3);

    // Reduce-scatter (sum) of 4 n ints, element j = r + j: rank r gets elements 4r..4r+3,
    // sum over q of (q + 4r + i) = sum + n (4r + i).
    std::vector<int> scatterValues(4 * size_t(n));
    for (int j = 0; j < 4 * n; ++j)
        scatterValues[j] = rank + j;
    int* scatterSend = DeviceWith(scatterValues);
    int* scattered = nullptr;
    CUDA(cudaMalloc(&scattered, 16));
    NCCL(ncclReduceScatter(scatterSend, scattered, 4, ncclInt32, ncclSum, comm, stream));
    std::vector<int> part = HostOf(scattered, 4);
    for (int i = 0; i < 4; ++i)
        CHECK(part[i] == sum + n * (4 * rank + i));

    // Reduce (sum) of r + 1 to rank 0: sum + n.
    int* contribution = DeviceWith(std::vector<int>(2, rank + 1));
    int* total = DeviceWith(std::vector<int>(2, -5));
    NCCL(ncclReduce(contribution, total, 2, ncclInt32, ncclSum, 0, comm, stream));
    CHECK(HostOf(total, 2)[1] == (rank == 0 ? sum + n : -5)); // only the root receives

    // A ring of sends: rank r sends 50 + r to r + 1 and receives 50 + (r - 1) from r - 1.
    int* ringSend = DeviceWith(std::vector<int>(3, 50 + rank));
    int* ringRecv = nullptr;
    CUDA(cudaMalloc(&ringRecv, 12));
    NCCL(ncclGroupStart());
    NCCL(ncclSend(ringSend, 3, ncclInt32, (rank + 1) % n, comm, stream));
    NCCL(ncclRecv(ringRecv, 3, ncclInt32, (rank + n - 1) % n, comm, stream));
    NCCL(ncclGroupEnd());
    CHECK(HostOf(ringRecv, 3)[2] == 50 + (rank + n - 1) % n);

    // All-to-all: rank r sends 10 r + p to p; slot p of what r receives is 10 p + r.
    std::vector<int> outgoing(size_t(n) * 2);
    for (int p = 0; p < n; ++p)
        outgoing[2 * p] = outgoing[2 * p + 1] = 10 * rank + p;
    int* a2aSend = DeviceWith(outgoing);
    int* a2aRecv = nullptr;
    CUDA(cudaMalloc(&a2aRecv, 8 * n));
    NCCL(ncclAlltoAll(a2aSend, a2aRecv, 2, ncclInt32, comm, stream));
    std::vector<int> incoming = HostOf(a2aRecv, 2 * size_t(n));
    for (int p = 0; p < n; ++p)
        CHECK(incoming[2 * p + 1] == 10 * p + rank);

    // Only rank 1 writes its send buffer (i + 7): every rank's sum is rank 1's values (the
    // others add zeros), and the all-gather's slot 1 holds them on every rank.
    {
        int* onlyOne = nullptr;
        CUDA(cudaMalloc(&onlyOne, 16));
        if (rank == 1)
            CUDA(cudaMemcpy(onlyOne, std::vector<int>{7, 8, 9, 10}.data(), 16,
                            cudaMemcpyHostToDevice));
        int* summed = nullptr;
        int* gatheredOne = nullptr;
        CUDA(cudaMalloc(&summed, 16));
        CUDA(cudaMalloc(&gatheredOne, 16 * n));
        NCCL(ncclAllReduce(onlyOne, summed, 4, ncclInt32, ncclSum, comm, stream));
        NCCL(ncclAllGather(onlyOne, gatheredOne, 4, ncclInt32, comm, stream));
        CHECK(HostOf(summed, 4) == (std::vector<int>{7, 8, 9, 10}));
        std::vector<int> slots = HostOf(gatheredOne, 4 * size_t(n));
        CHECK(slots[4] == 7 && slots[7] == 10);
    }

    // Buffers no one wrote move nothing: the destination keeps what the host put there.
    float* empty = nullptr;
    CUDA(cudaMalloc(&empty, 64));
    float* kept = DeviceWith(std::vector<float>(16, 77.0f));
    NCCL(ncclAllReduce(empty, kept, 16, ncclFloat, ncclSum, comm, stream));
    CHECK(HostOf(kept, 16)[15] == 77.0f);

    // A host read of an NCCL result moves the host clock to the operation's end whether or not
    // the peers' data is already there: EIDOLON_TEST_LATE_RANK sleeps 300 ms (wall) before the
    // all-reduce, so that its data comes late to the reader; EIDOLON_TEST_SLOW_READ_RANK sleeps
    // before reading, so that it is there. The virtual time after the read is the same either way.
    {
        CUDA(cudaStreamSynchronize(stream));
        int* timed = DeviceWith(std::vector<int>(4, rank));
        if (rank == EnvInt("EIDOLON_TEST_LATE_RANK", -1))
            usleep(300000);
        NCCL(ncclAllReduce(timed, timed, 4, ncclInt32, ncclSum, comm, stream));
        if (rank == EnvInt("EIDOLON_TEST_SLOW_READ_RANK", -1))
            usleep(300000);
        CHECK(HostOf(timed, 4)[3] == sum);
        long long readAt = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - g_start)
                               .count();
        std::printf("rank %d read_at_ns=%lld\n", rank, readAt);
    }

    CUDA(cudaStreamSynchronize(stream));
    NCCL(ncclCommDestroy(comm));
    std::printf("rank %d data: %s (%d failures)\n", rank, g_failures ? "FAILED" : "passed",
                g_failures);
    return g_failures ? 1 : 0;
}
