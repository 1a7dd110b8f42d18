// Device memory: capacity from the spec (or EIDOLON_MEMORY_CAPACITY), exact failure past it,
// contents only where the host wrote (never-written memory reads zeros; data.cu has the details),
// real host/pinned/managed memory, pointer attributes.
#include "check.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

int
main(int argc, char** argv)
{
    // argv[1]: the capacity this run expects, in bytes.
    const size_t capacity = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 30);
    size_t freeBytes = 0, totalBytes = 0;
    CHECK_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    CHECK(totalBytes == capacity);
    CHECK(freeBytes == capacity);

    // Exactly the capacity fits; one more byte does not.
    void* all = nullptr;
    CHECK_EQ_ERR(cudaMalloc(&all, capacity + 1), cudaErrorMemoryAllocation);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
    // Sizes whose round-up to the allocation granule would wrap around are refused as well
    // (SIZE_MAX used to round to 0 bytes, succeed and charge nothing).
    CHECK_EQ_ERR(cudaMalloc(&all, SIZE_MAX), cudaErrorMemoryAllocation);
    CHECK_EQ_ERR(cudaMallocManaged(&all, SIZE_MAX - 1), cudaErrorMemoryAllocation);
    size_t pitch = 0;
    CHECK_EQ_ERR(cudaMallocPitch(&all, &pitch, SIZE_MAX - 10, 1), cudaErrorMemoryAllocation);
    CHECK_EQ_ERR(cudaMallocPitch(&all, &pitch, 1024, SIZE_MAX / 512), cudaErrorMemoryAllocation);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_CUDA(cudaMalloc(&all, capacity));
    CHECK(all != nullptr);
    void* more = nullptr;
    CHECK_EQ_ERR(cudaMalloc(&more, 1), cudaErrorMemoryAllocation);
    CHECK_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    CHECK(freeBytes == 0);
    CHECK_CUDA(cudaFree(all));
    CHECK_EQ_ERR(cudaFree(all), cudaErrorInvalidValue); // double free
    cudaGetLastError();

    // Allocations are rounded to 256 bytes; freeing gives the space back.
    void* a = nullptr;
    void* b = nullptr;
    CHECK_CUDA(cudaMalloc(&a, 1000));
    CHECK_CUDA(cudaMalloc(&b, 256));
    CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0 && reinterpret_cast<uintptr_t>(b) % 256 == 0);
    CHECK_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    CHECK(freeBytes == capacity - 1024 - 256);

    // Copies: never-written device memory reads zeros, what the host wrote reads back (data.cu
    // tests it in detail), host to host is real.
    std::vector<unsigned char> host(1000, 0xAB), back(1000, 0xCD);
    CHECK_CUDA(cudaMemcpy(back.data(), b, 256, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0 && back[255] == 0);
    CHECK_CUDA(cudaMemcpy(a, host.data(), 1000, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(back.data(), a, 1000, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 0xAB && back[999] == 0xAB);
    CHECK_CUDA(cudaMemcpy(back.data(), host.data(), 1000, cudaMemcpyDefault));
    CHECK(back[0] == 0xAB && back[999] == 0xAB);
    CHECK_CUDA(cudaMemset(a, 1, 1000));
    CHECK_CUDA(cudaMemcpy(b, a, 256, cudaMemcpyDeviceToDevice));

    // A 1 MB host-to-device copy costs 1e6 B / (32 GB/s * 0.5): 62.5 us, plus O + L.
    void* big = nullptr;
    CHECK_CUDA(cudaMalloc(&big, 10000000));
    std::vector<char> source(1000000);
    double h = NowUs();
    CHECK_CUDA(cudaMemcpy(big, source.data(), 1000000, cudaMemcpyHostToDevice));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + 62.5, 1e-3);
    // Device to device on one GPU reads and writes every byte: 2 * 1e7 B / 1 TB/s = 20 us.
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0);
    CHECK_CUDA(cudaMemcpyAsync(big, static_cast<char*>(big) + 1, 10000000 - 1,
                               cudaMemcpyDeviceToDevice, 0));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    CHECK_NEAR(ms, (kLaunchOverheadUs + 2 * (1e7 - 1) / kHbmBytesPerUs) / 1e3, 1e-6);

    // Pinned and managed memory are real host memory.
    char* pinned = nullptr;
    CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned), 4096));
    std::memset(pinned, 7, 4096);
    cudaPointerAttributes attributes;
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, pinned));
    CHECK(attributes.type == cudaMemoryTypeHost);
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, a));
    CHECK(attributes.type == cudaMemoryTypeDevice && attributes.device == 0);
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, static_cast<char*>(a) + 999));
    CHECK(attributes.type == cudaMemoryTypeDevice);
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, source.data()));
    CHECK(attributes.type == cudaMemoryTypeUnregistered);
    int* managed = nullptr;
    CHECK_CUDA(cudaMallocManaged(reinterpret_cast<void**>(&managed), 64 * sizeof(int)));
    managed[63] = 42;
    CHECK_CUDA(cudaMemcpy(back.data(), managed, 64 * sizeof(int), cudaMemcpyDefault));
    CHECK(reinterpret_cast<int*>(back.data())[63] == 42);
    CHECK_CUDA(cudaMemset(managed, 0, 64 * sizeof(int)));
    CHECK(managed[63] == 0);
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, managed));
    CHECK(attributes.type == cudaMemoryTypeManaged);
    CHECK_CUDA(cudaFree(managed));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    // cudaFree waits for the device: a 20 us device-to-device copy still running is waited for.
    CHECK_CUDA(cudaMemcpyAsync(big, static_cast<char*>(big) + 1, 10000000 - 1,
                               cudaMemcpyDeviceToDevice, 0));
    h = NowUs();
    CHECK_CUDA(cudaFree(big));
    CHECK_NEAR(NowUs() - h, kLaunchLatencyUs + 2 * (1e7 - 1) / kHbmBytesPerUs, 1e-3);
    CHECK_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    CHECK(freeBytes == capacity);
    // A copy or memset must lie inside one allocation and never touch freed memory: CUDA refuses
    // them with cudaErrorInvalidValue (touching them here would fault in the program).
    void* small = nullptr;
    CHECK_CUDA(cudaMalloc(&small, 256));
    std::vector<char> bytes(1024, 1);
    CHECK_EQ_ERR(cudaMemcpy(small, bytes.data(), 1024, cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue); // 1024 bytes into 256
    CHECK_EQ_ERR(cudaMemset(small, 0, 4096), cudaErrorInvalidValue);
    CHECK_EQ_ERR(
        cudaMemcpy(bytes.data(), static_cast<char*>(small) + 200, 100, cudaMemcpyDeviceToHost),
        cudaErrorInvalidValue);                                               // 200 + 100 > 256
    CHECK_CUDA(cudaMemcpy(small, bytes.data(), 256, cudaMemcpyHostToDevice)); // exactly fits
    CHECK_CUDA(cudaFree(small));
    CHECK_EQ_ERR(cudaMemcpy(small, bytes.data(), 64, cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue);
    CHECK_EQ_ERR(cudaMemcpy(bytes.data(), small, 64, cudaMemcpyDeviceToHost),
                 cudaErrorInvalidValue);
    CHECK_EQ_ERR(cudaMemset(small, 0, 64), cudaErrorInvalidValue);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_CUDA(cudaGetLastError()); // read once, cleared
    CHECK_CUDA(cudaFree(nullptr));

    // Memory pools of the stream-ordered allocator: cudaMallocAsync draws on the device's
    // current pool (the default until cudaDeviceSetMemPool), whose used figure counts what it
    // holds (reserved equals used: nothing is kept in reserve); the high-water mark resets to the
    // current figure; a created pool is used when set, or directly by cudaMallocFromPoolAsync.
    cudaMemPool_t pool = nullptr, current = nullptr;
    CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
    CHECK(pool != nullptr && current == pool);
    uint64_t threshold = UINT64_MAX, value = 1;
    CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value));
    CHECK(value == UINT64_MAX);
    void* first = nullptr;
    void* second = nullptr;
    CHECK_CUDA(cudaMallocAsync(&first, 3 << 20, 0));
    CHECK_CUDA(cudaMallocAsync(&second, 1 << 20, 0));
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &value));
    CHECK(value == (4u << 20));
    CHECK_CUDA(cudaFreeAsync(first, 0));
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &value));
    CHECK(value == (1u << 20));
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &value));
    CHECK(value == (4u << 20));
    uint64_t zero = 0;
    CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &value));
    CHECK(value == (1u << 20)); // back to the current figure
    CHECK_EQ_ERR(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero),
                 cudaErrorInvalidValue); // read-only
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
    CHECK_CUDA(cudaFree(second)); // cudaFree takes stream-ordered memory too
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &value));
    CHECK(value == 0);
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t own = nullptr;
    CHECK_CUDA(cudaMemPoolCreate(&own, &props));
    void* fromPool = nullptr;
    CHECK_CUDA(cudaMallocFromPoolAsync(&fromPool, 2 << 20, own, 0));
    CHECK_CUDA(cudaMemPoolGetAttribute(own, cudaMemPoolAttrUsedMemCurrent, &value));
    CHECK(value == (2u << 20));
    CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &value));
    CHECK(value == 0); // the default pool holds none of it
    CHECK_CUDA(cudaDeviceSetMemPool(0, own));
    CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
    CHECK(current == own);
    CHECK_CUDA(cudaFreeAsync(fromPool, 0));
    CHECK_EQ_ERR(cudaMemPoolDestroy(pool), cudaErrorInvalidValue); // a default pool stays
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_CUDA(cudaMemPoolDestroy(own));
    CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
    CHECK(current == pool); // back to the default
    return Finish("memory");
}
