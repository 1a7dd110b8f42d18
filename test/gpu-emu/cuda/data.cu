// Host-visible data of device memory (gpu-emu/README.md "Device memory and data"): what the host
// writes into device memory reads back; what no one wrote reads as zeros; kernels compute nothing.
//   data        round trips (blocking, async, 2D, symbols, driver-style D2D), memsets, kernels
//   cap         run with EIDOLON_HOST_DATA_CAP=1MiB: 1 MiB of a 2 MiB write is kept
//   sparse      run with EIDOLON_MEMORY_CAPACITY=80GiB: a 64 GiB allocation written at both ends
//               costs a few pages of resident memory
#include "check.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

__device__ int g_counter[16];

__global__ void
writes(int* out)
{
    out[threadIdx.x] = 7; // kernels compute nothing under eidolon
}

// Resident set size of this process in bytes (/proc/self/status VmRSS).
static uint64_t
ResidentBytes()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
    {
        if (line.rfind("VmRSS:", 0) == 0)
        {
            return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
        }
    }
    return 0;
}

static void
RoundTrips()
{
    // Blocking H2D then D2H of 1000 ints at an odd offset inside a 1 MiB allocation.
    char* device = nullptr;
    CHECK_CUDA(cudaMalloc(&device, 1 << 20));
    std::vector<int> values(1000), back(1000, -1);
    for (int i = 0; i < 1000; ++i)
    {
        values[i] = i * 3 + 1;
    }
    CHECK_CUDA(cudaMemcpy(device + 5000, values.data(), 4000, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device + 5000, 4000, cudaMemcpyDeviceToHost));
    CHECK(back == values);
    // Bytes around what was written were never written: zeros (one page of slack on each side
    // is backed, the rest of the allocation is not).
    std::vector<unsigned char> around(20000, 0xEE);
    CHECK_CUDA(cudaMemcpy(around.data(), device, 20000, cudaMemcpyDeviceToHost));
    CHECK(around[0] == 0 && around[4999] == 0 && around[9000] == 0 && around[19999] == 0);
    CHECK(std::memcmp(around.data() + 5000, values.data(), 4000) == 0);

    // Async copies on a stream: the D2H reads what the earlier H2D on the stream wrote.
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    std::vector<int> doubled(1000), seen(1000, 0);
    for (int i = 0; i < 1000; ++i)
    {
        doubled[i] = 2 * values[i];
    }
    CHECK_CUDA(cudaMemcpyAsync(device, doubled.data(), 4000, cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemcpyAsync(seen.data(), device, 4000, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK(seen == doubled);

    // A kernel's output reads as the memory's prior contents.
    writes<<<1, 32, 0, stream>>>(reinterpret_cast<int*>(device));
    CHECK_CUDA(cudaMemcpyAsync(seen.data(), device, 4000, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK(seen[0] == doubled[0] && seen[31] == doubled[31]);

    // Device to device (overlapping, memmove semantics), and a copy from never-written memory,
    // which makes the destination read zeros.
    CHECK_CUDA(cudaMemcpy(device + 4, device, 4000, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(seen.data(), device + 4, 4000, cudaMemcpyDeviceToHost));
    CHECK(seen == doubled);
    CHECK_CUDA(cudaMemcpy(device, device + 500000, 4000, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(seen.data(), device, 4000, cudaMemcpyDeviceToHost));
    CHECK(seen[0] == 0 && seen[999] == 0);

    // 2D: 4 rows of 3 bytes, source pitch 3, destination pitch 8, and back.
    const unsigned char grid[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    unsigned char grid_back[12] = {};
    CHECK_CUDA(cudaMemset(device, 0xFF, 64));
    CHECK_CUDA(cudaMemcpy2D(device, 8, grid, 3, 3, 4, cudaMemcpyHostToDevice));
    unsigned char row1[8] = {};
    CHECK_CUDA(cudaMemcpy(row1, device + 8, 8, cudaMemcpyDeviceToHost));
    CHECK(row1[0] == 4 && row1[2] == 6 && row1[3] == 0xFF); // the pitch's padding is untouched
    CHECK_CUDA(cudaMemcpy2D(grid_back, 3, device, 8, 3, 4, cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(grid, grid_back, 12) == 0);

    // Memsets: a byte value, then 0 over part of it.
    unsigned char bytes[300];
    CHECK_CUDA(cudaMemset(device + 100000, 0x5A, 300));
    CHECK_CUDA(cudaMemset(device + 100100, 0, 100));
    CHECK_CUDA(cudaMemcpy(bytes, device + 100000, 300, cudaMemcpyDeviceToHost));
    CHECK(bytes[0] == 0x5A && bytes[99] == 0x5A && bytes[100] == 0 && bytes[199] == 0 &&
          bytes[200] == 0x5A && bytes[299] == 0x5A);

    // __device__ variables.
    int counters[16], counters_back[16] = {};
    for (int i = 0; i < 16; ++i)
    {
        counters[i] = 100 + i;
    }
    CHECK_CUDA(cudaMemcpyToSymbol(g_counter, counters, sizeof(counters)));
    CHECK_CUDA(cudaMemcpyFromSymbol(counters_back, g_counter, sizeof(counters)));
    CHECK(std::memcmp(counters, counters_back, sizeof(counters)) == 0);

    // Freed and allocated again, the memory has no contents.
    CHECK_CUDA(cudaFree(device));
    CHECK_CUDA(cudaMalloc(&device, 1 << 20));
    CHECK_CUDA(cudaMemcpy(back.data(), device + 5000, 4000, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0 && back[999] == 0);
    CHECK_CUDA(cudaFree(device));
    CHECK_CUDA(cudaStreamDestroy(stream));
}

// EIDOLON_HOST_DATA_CAP=1MiB: of one 2 MiB write (a large write: it may fill 3/4 of the cap), the
// first 768 KiB (192 pages) are kept, the rest is dropped and reads as zeros; a small write still
// fits in the last quarter.
static void
Cap()
{
    char* device = nullptr;
    CHECK_CUDA(cudaMalloc(&device, 4 << 20));
    std::vector<unsigned char> data(2 << 20, 0x11), back(2 << 20, 0xEE);
    CHECK_CUDA(cudaMemcpy(device, data.data(), data.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device, back.size(), cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0x11 && back[(768 << 10) - 1] == 0x11);
    CHECK(back[768 << 10] == 0 && back[(2 << 20) - 1] == 0);
    std::vector<unsigned char> small(4096, 0x44);
    CHECK_CUDA(cudaMemcpy(device + (3 << 20) + 8192, small.data(), 4096, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device + (3 << 20) + 8192, 4096, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0x44 && back[4095] == 0x44);
    // Pages already held are still written.
    data.assign(16, 0x22);
    CHECK_CUDA(cudaMemcpy(device + 64, data.data(), 16, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device + 64, 16, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0x22 && back[15] == 0x22);
    // 192 + 1 pages held; 63 more (a small write) fill the 256 pages of the cap; one page more is
    // dropped and reads as zeros.
    std::vector<unsigned char> fill(63 * 4096, 0x55);
    CHECK_CUDA(cudaMemcpy(device + (2 << 20), fill.data(), fill.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(device + (3 << 20) + 16384, small.data(), 4096, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device + (3 << 20) + 16384, 4096, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0 && back[4095] == 0);
    CHECK_CUDA(cudaMemcpy(back.data(), device + (2 << 20), fill.size(), cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0x55 && back[fill.size() - 1] == 0x55);
    // Setting memory to 0 gives whole pages back (the 192 of the first write): new data fits.
    CHECK_CUDA(cudaMemset(device, 0, 1 << 20));
    data.assign(4096, 0x33);
    CHECK_CUDA(cudaMemcpy(device + (3 << 20), data.data(), 4096, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device + (3 << 20), 4096, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0x33 && back[4095] == 0x33);
    CHECK_CUDA(cudaFree(device));
}

// A 64 GiB allocation written at both ends (8 KiB) and read back: resident memory grows by a few
// pages, not gigabytes (allow 16 MiB for the runtime's own allocations).
static void
Sparse()
{
    const size_t size = 64ull << 30;
    char* device = nullptr;
    CHECK_CUDA(cudaFree(nullptr)); // the emulator's own start-up is not counted
    uint64_t before = ResidentBytes();
    CHECK_CUDA(cudaMalloc(&device, size));
    std::vector<char> data(4096, 9), back(4096, 0);
    CHECK_CUDA(cudaMemcpy(device, data.data(), 4096, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(device + size - 4096, data.data(), 4096, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), device + size - 4096, 4096, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 9 && back[4095] == 9);
    CHECK_CUDA(cudaMemcpy(back.data(), device + size / 2, 4096, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0 && back[4095] == 0);
    uint64_t after = ResidentBytes();
    std::printf("resident growth: %llu bytes\n", static_cast<unsigned long long>(after - before));
    CHECK(after - before < (16ull << 20));
    CHECK_CUDA(cudaFree(device));
}

int
main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "data";
    if (mode == "cap")
    {
        Cap();
    }
    else if (mode == "sparse")
    {
        Sparse();
    }
    else
    {
        RoundTrips();
    }
    return Finish(("data-" + mode).c_str());
}
