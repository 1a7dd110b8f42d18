// The clocks the program reads are virtual on its GPU-driving thread: they move by exactly the
// modelled time across a synchronization, never go backwards, and other threads (or every thread
// with EIDOLON_VIRTUAL_CLOCKS=0) see real time.
#include "check.h"

#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>

__global__ void
spin(float*)
{
}

double
RealUs(clockid_t clock)
{
    timespec ts;
    syscall(SYS_clock_gettime, clock, &ts); // bypasses any interposer
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

double
ThreadCpuUs()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); // CPU-time clocks are never virtual
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// With EIDOLON_HOST_CPU_SCALE=2 the host clock advances by twice the CPU time the program spends
// between calls (compared with the thread's CPU clock, so the machine's speed does not matter).
int
CpuScaleMain()
{
    spin<<<1, 32>>>(nullptr); // the thread drives the GPU from here on
    cudaDeviceSynchronize();
    double virtualBefore = NowUs();
    double cpuBefore = ThreadCpuUs();
    volatile double sink = 0;
    for (int i = 0; i < 20000000; ++i)
    {
        sink = sink + i * 0.5;
    }
    double cpuSpent = ThreadCpuUs() - cpuBefore;
    double virtualSpent = NowUs() - virtualBefore;
    CHECK(cpuSpent > 1000); // the loop really took CPU time
    CHECK_NEAR(virtualSpent / cpuSpent, 2.0, 0.05);
    return Finish("clocks (cpu scale 2)");
}

// The clock reads of the library at `path` (clock-reader.cc) after a 35 s kernel: real when its
// name is in EIDOLON_REAL_CLOCK_LIBRARIES (`real`), else the program's virtual time.
int
LibraryMain(const char* path, bool real)
{
    void* library = dlopen(path, RTLD_NOW);
    CHECK(library != nullptr);
    if (!library)
    {
        return Finish("clocks (library)");
    }
    auto libraryNowUs = reinterpret_cast<double (*)()>(dlsym(library, "ClockReaderNowUs"));
    CHECK(libraryNowUs != nullptr);
    spin<<<2147483647, 1024>>>(nullptr); // ~35 s of virtual time
    CHECK_CUDA(cudaDeviceSynchronize());
    double programUs = NowUs();
    double libraryUs = libraryNowUs();
    if (real)
    {
        CHECK(programUs - libraryUs > 20e6);
        CHECK_NEAR(libraryUs, RealUs(CLOCK_MONOTONIC), 5e6);
    }
    else
    {
        CHECK(libraryUs >= programUs);
        CHECK_NEAR(libraryUs, programUs, 1.0); // one clock read's modelled cost apart at most
    }
    return Finish(real ? "clocks (library real)" : "clocks (library virtual)");
}

// Reads in a row on a host whose clock read costs time (h100-server: 30 ns): a loop that reads the
// clock around a sleep (waiting for another process) is no spin and its reads are free, however
// many passes it makes; a spin on the clock is charged from its 65th read on, so that it ends.
int
ReadsMain()
{
    spin<<<1, 32>>>(nullptr); // the thread drives the GPU from here on
    CHECK_CUDA(cudaDeviceSynchronize());
    double waitStart = NowUs();
    for (int i = 0; i < 200; ++i)
    {
        NowUs();
        NowUs();
        std::this_thread::sleep_for(std::chrono::microseconds(1));
    }
    CHECK_NEAR(NowUs() - waitStart, 0.0, 1e-3);
    double spinStart = NowUs();
    for (int i = 0; i < 1000; ++i)
    {
        NowUs();
    }
    CHECK(NowUs() - spinStart > 1.0); // ~936 charged reads
    // A sleep of nothing between the reads is no wait: still a spin, still charged.
    double yieldStart = NowUs();
    for (int i = 0; i < 1000; ++i)
    {
        NowUs();
        timespec none{0, 0};
        nanosleep(&none, nullptr);
    }
    CHECK(NowUs() - yieldStart > 1.0);
    return Finish("clocks (reads)");
}

int
main(int argc, char** argv)
{
    if (argc > 1 && std::strcmp(argv[1], "cpu-scale-2") == 0)
    {
        return CpuScaleMain();
    }
    if (argc > 1 && std::strcmp(argv[1], "reads") == 0)
    {
        return ReadsMain();
    }
    if (argc > 2 && std::strncmp(argv[1], "library-", 8) == 0)
    {
        return LibraryMain(argv[2], std::strcmp(argv[1], "library-real") == 0);
    }
    const bool virtualClocks = !(argc > 1 && std::strcmp(argv[1], "real") == 0);
    const double longKernelUs = 2147483647.0 * 1024 * 16 / kHbmBytesPerUs; // ~35 s

    // Clocks turn virtual at the process's first CUDA call that needs the GPUs (it joins the
    // simulator, if any); registering the program's kernels at start-up does not count, nor does
    // counting the GPUs (a launcher's agent does that without becoming a rank).
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    double countedAt = NowUs();
    usleep(20000);
    CHECK(NowUs() - countedAt >= 20000); // still real: the sleep shows in full
    CHECK_CUDA(cudaSetDevice(0));
    double before = NowUs();
    auto chronoBefore = std::chrono::steady_clock::now();
    timeval tvBefore;
    gettimeofday(&tvBefore, nullptr);
    spin<<<2147483647, 1024>>>(nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    double after = NowUs();
    double chronoUs =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - chronoBefore)
            .count();
    timeval tvAfter;
    gettimeofday(&tvAfter, nullptr);
    double tvUs = (tvAfter.tv_sec - tvBefore.tv_sec) * 1e6 + (tvAfter.tv_usec - tvBefore.tv_usec);
    if (virtualClocks)
    {
        CHECK_NEAR(after - before, kLaunchOverheadUs + kLaunchLatencyUs + longKernelUs, 1e-3);
        CHECK_NEAR(chronoUs, kLaunchOverheadUs + kLaunchLatencyUs + longKernelUs, 1e-3);
        CHECK_NEAR(tvUs, kLaunchOverheadUs + kLaunchLatencyUs + longKernelUs, 2.0);
        // A thread that drives no GPU sees the real clock, which is far behind (~35 s).
        double otherThread = 0;
        std::thread([&] { otherThread = NowUs(); }).join();
        CHECK(after - otherThread > 20e6);
        CHECK_NEAR(otherThread, RealUs(CLOCK_MONOTONIC), 5e6);
    }
    else
    {
        CHECK(after - before < 20e6); // real time: the 35 s kernel took no real time
        CHECK_NEAR(after, RealUs(CLOCK_MONOTONIC), 5e6);
    }

    // Never backwards, whichever clock, across CUDA calls.
    double last = NowUs();
    auto lastChrono = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i)
    {
        if (i % 3 == 0)
        {
            spin<<<1, 32>>>(nullptr);
        }
        if (i % 100 == 0)
        {
            cudaDeviceSynchronize();
        }
        double now = NowUs();
        auto nowChrono = std::chrono::steady_clock::now();
        CHECK(now >= last);
        CHECK(nowChrono >= lastChrono);
        last = now;
        lastChrono = nowChrono;
    }
    return Finish(virtualClocks ? "clocks (virtual)" : "clocks (real)");
}
