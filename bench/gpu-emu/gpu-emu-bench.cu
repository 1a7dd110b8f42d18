// gpu-emu benchmark: host cost of intercepted calls (target: median launch <= 1 us) and resident
// memory per simulated GPU holding 10 GB (target: < 50 MB). Run it through the
// `run-gpu-emu-bench` target, which points LD_LIBRARY_PATH at gpu-emu's libraries.
// Times are real (read with the clock_gettime system call, which gpu-emu does not interpose).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <vector>

__global__ void
empty_kernel(float*)
{
}

namespace
{

double
RealNs()
{
    timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

struct Stats
{
    double median;
    double p10;
    double p90;
};

// Runs `call` in batches of `batch` and returns per-call wall-clock statistics in ns.
Stats
Measure(const std::function<void()>& call, int samples = 200, int batch = 1000)
{
    std::vector<double> perCall;
    for (int s = 0; s < samples; ++s)
    {
        double start = RealNs();
        for (int i = 0; i < batch; ++i)
        {
            call();
        }
        perCall.push_back((RealNs() - start) / batch);
    }
    std::sort(perCall.begin(), perCall.end());
    return {perCall[perCall.size() / 2], perCall[perCall.size() / 10],
            perCall[perCall.size() * 9 / 10]};
}

long
ResidentKb()
{
    FILE* status = std::fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (status && std::fgets(line, sizeof(line), status))
    {
        if (std::strncmp(line, "VmRSS:", 6) == 0)
        {
            kb = std::strtol(line + 6, nullptr, 10);
        }
    }
    if (status)
    {
        std::fclose(status);
    }
    return kb;
}

} // namespace

int
main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    {
        std::printf("no (emulated) GPU: run through the run-gpu-emu-bench target\n");
        return 1;
    }
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaEvent_t event;
    cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    void* buffer = nullptr;
    cudaMalloc(&buffer, 1 << 20);
    static char host[4096];
    const char* scale = std::getenv("EIDOLON_HOST_CPU_SCALE");

    std::printf("gpu-emu host cost per call (%s, EIDOLON_HOST_CPU_SCALE=%s)\n", prop.name,
                scale ? scale : "1");
    std::printf("%-34s %10s %10s %10s\n", "call", "median ns", "p10 ns", "p90 ns");
    auto row = [](const char* name, Stats stats)
    { std::printf("%-34s %10.0f %10.0f %10.0f\n", name, stats.median, stats.p10, stats.p90); };
    row("kernel<<<>>> (launch, target <=1us)",
        Measure([&] { empty_kernel<<<128, 256, 0, stream>>>(nullptr); }));
    row("cudaLaunchKernel", Measure(
                                [&]
                                {
                                    void* args[] = {&buffer};
                                    cudaLaunchKernel(reinterpret_cast<const void*>(&empty_kernel),
                                                     dim3(128), dim3(256), args, 0, stream);
                                }));
    row("cudaEventRecord", Measure([&] { cudaEventRecord(event, stream); }));
    row("cudaMemcpyAsync H2D 4 KiB",
        Measure([&]
                { cudaMemcpyAsync(buffer, host, sizeof(host), cudaMemcpyHostToDevice, stream); }));
    row("cudaStreamQuery", Measure([&] { cudaStreamQuery(stream); }));
    row("cudaGetDevice", Measure(
                             [&]
                             {
                                 int d;
                                 cudaGetDevice(&d);
                             }));
    timespec ts;
    row("clock_gettime (virtual)", Measure([&] { clock_gettime(CLOCK_MONOTONIC, &ts); }));
    cudaStreamSynchronize(stream);

    // Resident memory: 10 GB per GPU in 10 MB allocations, on every emulated GPU.
    const size_t perGpu = 10ull * 1000 * 1000 * 1000;
    const size_t chunk = 10ull * 1000 * 1000;
    long before = ResidentKb();
    double allocStart = RealNs();
    size_t allocations = 0;
    for (int d = 0; d < devices; ++d)
    {
        cudaSetDevice(d);
        for (size_t done = 0; done < perGpu; done += chunk)
        {
            void* p = nullptr;
            if (cudaMalloc(&p, chunk) != cudaSuccess)
            {
                std::printf("allocation failed on device %d after %zu bytes\n", d, done);
                return 1;
            }
            ++allocations;
        }
    }
    double allocNs = (RealNs() - allocStart) / double(allocations);
    long after = ResidentKb();
    std::printf(
        "\nresident memory with 10 GB allocated on each of %d GPUs (%zu cudaMalloc of 10 MB)\n",
        devices, allocations);
    std::printf("%-34s %10s\n", "quantity", "value");
    std::printf("%-34s %10.1f\n", "RSS before (MB)", before / 1024.0);
    std::printf("%-34s %10.1f\n", "RSS after (MB)", after / 1024.0);
    std::printf("%-34s %10.3f\n", "RSS per GPU (MB, target < 50)",
                (after - before) / 1024.0 / devices);
    std::printf("%-34s %10.0f\n", "cudaMalloc median-free cost (ns)", allocNs);
    return 0;
}
