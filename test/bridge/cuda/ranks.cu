// A multi-process NCCL program for the bridge tests: every process is one rank (RANK, WORLD_SIZE,
// LOCAL_RANK from `eidolon run` or mpirun); rank 0 hands the ncclUniqueId to the others through
// the file named by EIDOLON_TEST_ID_FILE. It prints the virtual host times the tests check:
//   p2p BYTES             rank 0 runs a 64 us kernel then sends BYTES to rank 1, which runs three
//                         64 us kernels after its receive
//   allreduce BYTES ITERS  ITERS all-reduces, each followed by a stream sync
//   jitter BYTES ITERS     the same with random wall-clock sleeps between calls (determinism)
//   mismatch              rank r all-reduces 1000 * (r + 1) floats
//   crash                 rank 1 aborts after joining the communicator
//   skip                  rank 1 never calls the all-reduce rank 0 waits for
//   stuck                 rank 1 sleeps (outside CUDA) for 1000 s before its all-reduce
//   parked BYTES          a second thread launches a kernel and waits on a condition variable
//                         while the main thread all-reduces BYTES and synchronizes
//   split                 every rank splits the communicator with key = -rank (new ranks in
//                         reverse order) and all-reduces BYTES on the new one
//   concurrent BYTES      an all-reduce alone, then two at once on two communicators and streams
//                         (tensor- and data-parallel style); prints both durations
//   replay                3 ranks: 0 and 2 each send BYTES to 1 (one group there); rank 2 first
//                         sleeps 5 s of wall time outside CUDA
//   fail                  rank 1 exits with status 5 (exit()) instead of the all-reduce rank 0
//                         waits for
//   helper                each rank starts itself as "helper-child" (a subprocess with the
//                         rank's environment, as torch.compile's workers are) and waits for it
//                         before an all-reduce; the child allocates, runs a kernel, synchronizes
//   signals               a 1 ms SIGALRM timer with a handler (as profilers install) runs
//                         while the ranks all-reduce and synchronize 200 times
//   clocks                CLOCK_MONOTONIC read before the first CUDA call (after a 1.5 s real
//                         sleep, as a slow start-up) and after it
//   last-words            prints a line (to a pipe: flushed only at exit), joins, and returns 1;
//                         an exit handler that runs after eidolon's goodbye takes 1 s
//   straggler             3 ranks: 1 sends 4 MiB to 0; rank 2 sleeps 5 s (wall, outside CUDA),
//                         then sends 1 MiB to 0, which waits for it after the first transfer
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <signal.h>
#include <spawn.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>

#define CHECK(call, ok)                                                                            \
    do                                                                                             \
    {                                                                                              \
        auto r_ = (call);                                                                          \
        if (r_ != (ok))                                                                            \
        {                                                                                          \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, int(r_));   \
            return 2;                                                                              \
        }                                                                                          \
    } while (0)
#define CUDA(call) CHECK(call, cudaSuccess)
#define NCCL(call) CHECK(call, ncclSuccess)

__global__ void
spin(float* data)
{
    if (data)
        data[threadIdx.x] = 0;
}

static double
NowUs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

static int
EnvInt(const char* name, int fallback)
{
    const char* value = std::getenv(name);
    if (!value)
        value = std::getenv((std::string("OMPI_COMM_WORLD_") + name).c_str());
    return value ? std::atoi(value) : fallback;
}

static bool
ExchangeId(int rank, ncclUniqueId* id)
{
    const char* path = std::getenv("EIDOLON_TEST_ID_FILE");
    if (!path)
    {
        std::fprintf(stderr, "EIDOLON_TEST_ID_FILE is not set\n");
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

int
main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "allreduce";
    size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 20;
    int iters = argc > 3 ? std::atoi(argv[3]) : 1;
    int rank = EnvInt("RANK", 0);
    int size = EnvInt("WORLD_SIZE", EnvInt("SIZE", 1));
    int local = EnvInt("LOCAL_RANK", rank);
    if (mode == "last-words")
    {
        // Registered before the first CUDA call, so exit runs it after eidolon's goodbye (handlers
        // run in reverse order) and before stdout is flushed: a slow exit, as a program freeing
        // much memory has.
        std::atexit([] { usleep(1000000); });
        std::printf("rank %d last words\n", rank);
        CUDA(cudaSetDevice(local));
        CUDA(cudaFree(nullptr));
        return 1;
    }
    if (mode == "clocks")
    {
        usleep(1500000); // real time runs on before the first CUDA call, as Python's imports
        double before = NowUs();
        CUDA(cudaSetDevice(local));
        CUDA(cudaFree(nullptr)); // joins the simulator: the clocks turn virtual
        double after = NowUs();
        std::printf("rank %d clocks before_us=%.3f after_us=%.3f\n", rank, before, after);
        return 0;
    }
    CUDA(cudaSetDevice(local));
    if (mode == "helper-child")
    {
        float* data = nullptr;
        CUDA(cudaMalloc(&data, 1 << 20));
        spin<<<1, 32>>>(data);
        CUDA(cudaDeviceSynchronize());
        CUDA(cudaFree(data));
        std::printf("rank %d helper-child ok\n", rank);
        return 0;
    }
    ncclUniqueId id;
    if (!ExchangeId(rank, &id))
        return 3;
    ncclComm_t comm;
    NCCL(ncclCommInitRank(&comm, size, id, rank));
    cudaStream_t stream;
    CUDA(cudaStreamCreate(&stream));
    float* buffer = nullptr;
    CUDA(cudaMalloc(&buffer, bytes > 0 ? bytes : 4));
    size_t count = bytes / sizeof(float);
    std::mt19937 random(std::random_device{}());

    if (mode == "p2p")
    {
        double issued = NowUs();
        if (rank == 0)
        {
            spin<<<4000, 1000, 0, stream>>>(nullptr); // 4e6 threads x 16 B at 1 TB/s = 64 us
            NCCL(ncclSend(buffer, count, ncclFloat, 1, comm, stream));
        }
        else if (rank == 1)
        {
            NCCL(ncclRecv(buffer, count, ncclFloat, 0, comm, stream));
            for (int k = 0; k < 3; ++k)
                spin<<<4000, 1000, 0, stream>>>(nullptr);
        }
        CUDA(cudaStreamSynchronize(stream));
        char host[64] = {};
        gethostname(host, sizeof host);
        std::printf("rank %d issued_us=%.6f synced_us=%.6f host=%s\n", rank, issued, NowUs(), host);
    }
    else if (mode == "allreduce" || mode == "jitter")
    {
        double first = NowUs();
        for (int i = 0; i < iters; ++i)
        {
            if (mode == "jitter")
                usleep(std::uniform_int_distribution<int>(0, 20000)(random));
            NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
            if (mode == "jitter")
                usleep(std::uniform_int_distribution<int>(0, 20000)(random));
            CUDA(cudaStreamSynchronize(stream));
        }
        std::printf("rank %d first_us=%.6f synced_us=%.6f\n", rank, first, NowUs());
    }
    else if (mode == "mismatch")
    {
        NCCL(ncclAllReduce(buffer, buffer, 1000 * (rank + 1), ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
    }
    else if (mode == "crash")
    {
        if (rank == 1)
            std::abort();
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
    }
    else if (mode == "skip")
    {
        if (rank != 1)
            NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
    }
    else if (mode == "signals")
    {
        static volatile sig_atomic_t alarms = 0;
        struct sigaction action = {};
        action.sa_handler = [](int) { alarms = alarms + 1; };
        sigaction(SIGALRM, &action, nullptr); // no SA_RESTART: waits see EINTR
        itimerval every{{0, 1000}, {0, 1000}};
        setitimer(ITIMER_REAL, &every, nullptr);
        for (int i = 0; i < 200; ++i)
        {
            NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
            CUDA(cudaStreamSynchronize(stream));
        }
        itimerval off{};
        setitimer(ITIMER_REAL, &off, nullptr);
        std::printf("rank %d signals ok alarms=%d\n", rank, int(alarms));
    }
    else if (mode == "fail")
    {
        if (rank == 1)
            std::exit(5);
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
    }
    else if (mode == "helper")
    {
        char self[] = "/proc/self/exe";
        char childMode[] = "helper-child";
        char* childArgv[] = {self, childMode, nullptr};
        extern char** environ;
        pid_t child = 0;
        CHECK(posix_spawn(&child, self, nullptr, nullptr, childArgv, environ), 0);
        int status = 0;
        CHECK(waitpid(child, &status, 0), child);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, true);
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
        std::printf("rank %d helper ok\n", rank);
    }
    else if (mode == "split")
    {
        ncclComm_t reversed;
        NCCL(ncclCommSplit(comm, 0, -rank, &reversed, nullptr));
        int newRank = -1;
        int newSize = -1;
        NCCL(ncclCommUserRank(reversed, &newRank));
        NCCL(ncclCommCount(reversed, &newSize));
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, reversed, stream));
        CUDA(cudaStreamSynchronize(stream));
        std::printf("rank %d newrank=%d newsize=%d synced_us=%.6f\n", rank, newRank, newSize,
                    NowUs());
        NCCL(ncclCommDestroy(reversed));
    }
    else if (mode == "concurrent")
    {
        ncclComm_t other;
        NCCL(ncclCommSplit(comm, 0, rank, &other, nullptr));
        cudaStream_t second;
        CUDA(cudaStreamCreate(&second));
        float* buffer2 = nullptr;
        CUDA(cudaMalloc(&buffer2, bytes));
        cudaEvent_t start, end1, end2;
        CUDA(cudaEventCreate(&start));
        CUDA(cudaEventCreate(&end1));
        CUDA(cudaEventCreate(&end2));
        CUDA(cudaEventRecord(start, stream));
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaEventRecord(end1, stream));
        CUDA(cudaStreamSynchronize(stream));
        float alone = 0;
        CUDA(cudaEventElapsedTime(&alone, start, end1));
        CUDA(cudaEventRecord(start, stream));
        CUDA(cudaStreamWaitEvent(second, start, 0));
        NCCL(ncclGroupStart());
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        NCCL(ncclAllReduce(buffer2, buffer2, count, ncclFloat, ncclSum, other, second));
        NCCL(ncclGroupEnd());
        CUDA(cudaEventRecord(end1, stream));
        CUDA(cudaEventRecord(end2, second));
        CUDA(cudaDeviceSynchronize());
        float first = 0, both = 0;
        CUDA(cudaEventElapsedTime(&first, start, end1));
        CUDA(cudaEventElapsedTime(&both, start, end2));
        std::printf("rank %d alone_us=%.6f first_us=%.6f second_us=%.6f\n", rank, alone * 1e3,
                    first * 1e3, both * 1e3);
    }
    else if (mode == "replay")
    {
        double issued = NowUs();
        if (rank == 1)
        {
            NCCL(ncclGroupStart());
            NCCL(ncclRecv(buffer, count, ncclFloat, 0, comm, stream));
            NCCL(ncclRecv(buffer, count, ncclFloat, 2, comm, stream));
            NCCL(ncclGroupEnd());
        }
        else
        {
            if (rank == 2)
                sleep(5);
            NCCL(ncclSend(buffer, count, ncclFloat, 1, comm, stream));
        }
        CUDA(cudaStreamSynchronize(stream));
        std::printf("rank %d issued_us=%.6f synced_us=%.6f\n", rank, issued, NowUs());
    }
    else if (mode == "straggler")
    {
        if (rank == 0)
        {
            NCCL(ncclRecv(buffer, count, ncclFloat, 1, comm, stream));
            CUDA(cudaStreamSynchronize(stream));
            NCCL(ncclRecv(buffer, count / 4, ncclFloat, 2, comm, stream));
        }
        else if (rank == 1)
        {
            NCCL(ncclSend(buffer, count, ncclFloat, 0, comm, stream));
        }
        else
        {
            sleep(5);
            NCCL(ncclSend(buffer, count / 4, ncclFloat, 0, comm, stream));
        }
        CUDA(cudaStreamSynchronize(stream));
        std::printf("rank %d synced_us=%.6f\n", rank, NowUs());
    }
    else if (mode == "parked")
    {
        // A second thread drives the GPU (one kernel), then parks on a condition variable until
        // the main thread has run an all-reduce and synchronized: as PyTorch's autograd thread
        // waits for work while the training thread waits for NCCL.
        std::mutex lock;
        std::condition_variable wake;
        bool done = false;
        std::thread helper(
            [&]
            {
                if (cudaSetDevice(local) != cudaSuccess)
                    std::abort();
                spin<<<1, 32, 0, stream>>>(nullptr);
                std::unique_lock<std::mutex> guard(lock);
                wake.wait(guard, [&] { return done; });
            });
        usleep(200000); // let the helper launch and park
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
        {
            std::lock_guard<std::mutex> guard(lock);
            done = true;
        }
        wake.notify_one();
        helper.join();
        std::printf("rank %d parked ok synced_us=%.6f\n", rank, NowUs());
    }
    else if (mode == "stuck")
    {
        if (rank == 1)
            sleep(1000);
        NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
        CUDA(cudaStreamSynchronize(stream));
    }
    else
    {
        std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
        return 1;
    }
    CUDA(cudaFree(buffer));
    NCCL(ncclCommDestroy(comm));
    return 0;
}
