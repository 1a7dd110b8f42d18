// Memory API family. Device memory is reserved address space whose contents are only what the
// host wrote into it (core/host-backing.h: zeros elsewhere). Host and managed memory are real.
#include "runtime-common.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

using namespace eidolon::gpu;
using namespace eidolon::gpu::rt;

namespace
{

struct PinnedRange
{
    unsigned flags;
    size_t size;
};

// Pinned host allocations (cudaMallocHost/cudaHostAlloc) and registered ranges, by start.
std::map<const void*, PinnedRange>&
PinnedHost()
{
    static auto* pinned = new std::map<const void*, PinnedRange>();
    return *pinned;
}

// Whether `pointer` lies in a pinned allocation or registered range.
bool
IsPinned(const void* pointer)
{
    auto it = PinnedHost().upper_bound(pointer);
    if (it == PinnedHost().begin())
    {
        return false;
    }
    --it;
    auto offset = static_cast<const char*>(pointer) - static_cast<const char*>(it->first);
    return static_cast<size_t>(offset) < std::max<size_t>(it->second.size, 1);
}

// The host's cost of issuing a copy: the driver stages pageable host memory through its own pinned
// buffers (the cost grows with the bytes); pinned memory and device memory go to the copy engine.
spec::HostCall
CopyCall(Emulator& emu, const void* dst, const void* src)
{
    const void* host = emu.KindOf(dst) == MemoryKind::Host   ? dst
                       : emu.KindOf(src) == MemoryKind::Host ? src
                                                             : nullptr;
    if (!host)
    {
        return spec::HostCall::MemcpyAsyncDevice;
    }
    return IsPinned(host) ? spec::HostCall::MemcpyAsyncPinned : spec::HostCall::MemcpyAsyncPageable;
}

// Places a copy of rows x width bytes on `stream`; blocking copies move the host clock to its end.
cudaError_t
Copy(ApiCall& call, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
     size_t rows, cudaStream_t handle, bool perThread, bool blocking)
{
    Emulator& emu = call.Emu();
    if (CheckReady(emu) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    if (width * rows == 0)
    {
        return cudaSuccess;
    }
    // Both ranges must be memory: a freed device pointer, or a range past its allocation's end,
    // is refused as CUDA refuses it (never touched: that would fault in the program).
    if (!dst || !src || (rows > 0 && (dpitch < width || spitch < width)) ||
        !emu.ValidSpan(dst, dpitch * (rows - 1) + width) ||
        !emu.ValidSpan(src, spitch * (rows - 1) + width))
    {
        return Fail(cudaErrorInvalidValue);
    }
    Stream* stream = StreamOf(emu, handle, perThread);
    if (!stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    if (blocking && stream->capture)
    {
        return Fail(cudaErrorStreamCaptureUnsupported);
    }
    const spec::HostCall copyCall = CopyCall(emu, dst, src);
    CopyStaging staging;
    staging.stagedNs = emu.Clock().Charge(copyCall, uint64_t(width) * rows);
    staging.pageable = copyCall == spec::HostCall::MemcpyAsyncPageable;
    ActivityLog::MarkCall(blocking ? ActivityCall::Memcpy : ActivityCall::MemcpyAsync);
    Placement placement = emu.Copy(*stream, dst, dpitch, src, spitch, width, rows, staging);
    if (blocking)
    {
        emu.SyncTo(emu.OpCompletion(placement), "cudaMemcpy");
        emu.Clock().Charge(spec::HostCall::MemcpyBlockingReturn);
    }
    return cudaSuccess;
}

// Places a memset; host-visible (managed) memory is really set.
cudaError_t
Set(ApiCall& call, void* dst, size_t pitch, int value, size_t width, size_t rows,
    cudaStream_t handle, bool perThread, bool blocking)
{
    Emulator& emu = call.Emu();
    if (CheckReady(emu) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    MemoryKind kind = emu.KindOf(dst);
    if (kind == MemoryKind::Host ||
        (width * rows > 0 && (pitch < width || !emu.ValidSpan(dst, pitch * (rows - 1) + width))))
    {
        return Fail(cudaErrorInvalidValue);
    }
    Stream* stream = StreamOf(emu, handle, perThread);
    if (!stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    emu.Clock().Charge(spec::HostCall::MemsetAsync, uint64_t(width) * rows);
    ActivityLog::MarkCall(blocking ? ActivityCall::Memset : ActivityCall::MemsetAsync);
    Placement placement = emu.Memset(*stream, dst, pitch, value, width, rows);
    if (blocking && !placement.captured)
    {
        emu.SyncTo(emu.OpCompletion(placement), "cudaMemcpy");
    }
    return cudaSuccess;
}

cudaError_t
Allocate(void** pointer, size_t size, bool managed, spec::HostCall cost = spec::HostCall::Malloc)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!pointer)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (CheckReady(emu) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    *pointer = nullptr;
    if (size == 0)
    {
        return cudaSuccess;
    }
    uint64_t address = emu.AllocateDevice(emu.CurrentDevice(), size, managed);
    if (!address)
    {
        return Fail(cudaErrorMemoryAllocation);
    }
    *pointer = reinterpret_cast<void*>(address);
    emu.Clock().Charge(cost, size);
    return cudaSuccess;
}

} // namespace

// Reserves `size` bytes of the current device (backed only where the host writes); fails with
// cudaErrorMemoryAllocation exactly when it would exceed the device's capacity.
EIDOLON_EXPORT cudaError_t
cudaMalloc(void** devPtr, size_t size)
{
    return Allocate(devPtr, size, false);
}

// Managed memory: host-backed (the host may read and write it), counted on the current device.
EIDOLON_EXPORT cudaError_t
cudaMallocManaged(void** devPtr, size_t size, unsigned int)
{
    return Allocate(devPtr, size, true);
}

// Stream-ordered allocation: allocated at once (the stream order is not modelled for capacity),
// from the current device's memory pool (mempool.cc).
EIDOLON_EXPORT cudaError_t
cudaMallocAsync(void** devPtr, size_t size, cudaStream_t)
{
    const cudaError_t result = Allocate(devPtr, size, false, spec::HostCall::MallocAsync);
    if (result == cudaSuccess && *devPtr)
    {
        ApiCall call(CallKind::Untimed);
        PoolAllocated(*devPtr, size, call.Emu().CurrentDevice(), nullptr);
    }
    return result;
}

// Pitched allocation: rows padded to 512 bytes.
EIDOLON_EXPORT cudaError_t
cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height)
{
    if (!pitch)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (width > SIZE_MAX - 511 || (height > 0 && (width + 511) / 512 * 512 > SIZE_MAX / height))
    {
        return Fail(cudaErrorMemoryAllocation); // pitch x height does not fit in a size_t
    }
    *pitch = (width + 511) / 512 * 512;
    return Allocate(devPtr, *pitch * height, false);
}

// Frees device or managed memory; like the runtime, it first waits for the work on the
// memory's device (cudaFree synchronizes). A null pointer is a no-op.
EIDOLON_EXPORT cudaError_t
cudaFree(void* devPtr)
{
    ApiCall call(CallKind::Sync);
    Emulator& emu = call.Emu();
    if (!devPtr)
    {
        return cudaSuccess;
    }
    int device = emu.DeviceOf(devPtr);
    const Allocation* allocation = emu.FindAllocation(reinterpret_cast<uint64_t>(devPtr));
    uint64_t bytes = allocation ? allocation->size : 0;
    if (device < 0 || !emu.FreeDevice(reinterpret_cast<uint64_t>(devPtr)))
    {
        return Fail(cudaErrorInvalidValue);
    }
    PoolFreed(devPtr); // memory from cudaMallocAsync may be freed here too
    emu.SyncTo(emu.DeviceCompletion(device), "cudaFree");
    emu.Clock().Charge(spec::HostCall::Free, bytes); // the release after the implicit wait
    return cudaSuccess;
}

// Stream-ordered free: freed at once, without synchronizing.
EIDOLON_EXPORT cudaError_t
cudaFreeAsync(void* devPtr, cudaStream_t)
{
    ApiCall call(CallKind::Untimed);
    if (!devPtr)
    {
        return cudaSuccess;
    }
    if (!call.Emu().FreeDevice(reinterpret_cast<uint64_t>(devPtr)))
    {
        return Fail(cudaErrorInvalidValue);
    }
    PoolFreed(devPtr);
    call.Emu().Clock().Charge(spec::HostCall::FreeAsync);
    return cudaSuccess;
}

// Page-locked host memory: real memory the program may use.
EIDOLON_EXPORT cudaError_t
cudaHostAlloc(void** pHost, size_t size, unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    if (!pHost)
    {
        return Fail(cudaErrorInvalidValue);
    }
    void* memory = nullptr;
    if (posix_memalign(&memory, 4096, size ? size : 1) != 0)
    {
        *pHost = nullptr;
        return Fail(cudaErrorMemoryAllocation);
    }
    PinnedHost()[memory] = PinnedRange{flags, size};
    *pHost = memory;
    call.Emu().Clock().Charge(spec::HostCall::MallocHost, size); // page-locking the memory
    return cudaSuccess;
}

// Page-locked host memory (cudaHostAlloc with default flags).
EIDOLON_EXPORT cudaError_t
cudaMallocHost(void** ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

// Frees memory from cudaMallocHost/cudaHostAlloc.
EIDOLON_EXPORT cudaError_t
cudaFreeHost(void* ptr)
{
    ApiCall call(CallKind::Untimed);
    if (!ptr)
    {
        return cudaSuccess;
    }
    auto it = PinnedHost().find(ptr);
    if (it == PinnedHost().end())
    {
        return Fail(cudaErrorInvalidValue);
    }
    call.Emu().Clock().Charge(spec::HostCall::FreeHost, it->second.size);
    PinnedHost().erase(it);
    std::free(ptr);
    return cudaSuccess;
}

// Registers (page-locks) an existing host range: recorded, no other effect.
EIDOLON_EXPORT cudaError_t
cudaHostRegister(void* ptr, size_t size, unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    if (!ptr)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!PinnedHost().emplace(ptr, PinnedRange{flags, size}).second)
    {
        return Fail(cudaErrorHostMemoryAlreadyRegistered);
    }
    return cudaSuccess;
}

// Unregisters a range registered with cudaHostRegister.
EIDOLON_EXPORT cudaError_t
cudaHostUnregister(void* ptr)
{
    ApiCall call(CallKind::Untimed);
    return PinnedHost().erase(ptr) ? cudaSuccess : Fail(cudaErrorHostMemoryNotRegistered);
}

// With unified addressing the device pointer of mapped host memory is the host pointer.
EIDOLON_EXPORT cudaError_t
cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int)
{
    if (!pDevice || !pHost)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *pDevice = pHost;
    return cudaSuccess;
}

// Flags a pinned allocation was made with.
EIDOLON_EXPORT cudaError_t
cudaHostGetFlags(unsigned int* pFlags, void* pHost)
{
    ApiCall call(CallKind::Untimed);
    auto it = PinnedHost().find(pHost);
    if (!pFlags || it == PinnedHost().end())
    {
        return Fail(cudaErrorInvalidValue);
    }
    *pFlags = it->second.flags;
    return cudaSuccess;
}

// Free and total memory of the current device: capacity minus what the program holds.
EIDOLON_EXPORT cudaError_t
cudaMemGetInfo(size_t* free, size_t* total)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!free || !total)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (CheckReady(emu) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    const Device& device = emu.DeviceAt(emu.CurrentDevice());
    *free = device.capacity - device.used;
    *total = device.capacity;
    return cudaSuccess;
}

// Kind and device of a pointer (device, managed, pinned host or unregistered host).
EIDOLON_EXPORT cudaError_t
cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!attributes)
    {
        return Fail(cudaErrorInvalidValue);
    }
    std::memset(attributes, 0, sizeof(*attributes));
    void* pointer = const_cast<void*>(ptr);
    switch (emu.KindOf(ptr))
    {
    case MemoryKind::Device:
        attributes->type = cudaMemoryTypeDevice;
        attributes->device = emu.DeviceOf(ptr);
        attributes->devicePointer = pointer;
        break;
    case MemoryKind::Managed:
        attributes->type = cudaMemoryTypeManaged;
        attributes->device = emu.DeviceOf(ptr);
        attributes->devicePointer = pointer;
        attributes->hostPointer = pointer;
        break;
    case MemoryKind::Host:
        bool pinned = IsPinned(ptr);
        attributes->type = pinned ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
        attributes->device = pinned ? emu.CurrentDevice() : -2;
        attributes->devicePointer = pinned ? pointer : nullptr;
        attributes->hostPointer = pinned ? pointer : nullptr;
        break;
    }
    return cudaSuccess;
}

// Blocking copy on the legacy default stream (direction taken from the pointers).
EIDOLON_EXPORT cudaError_t
cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind)
{
    ApiCall call(CallKind::Sync);
    return Copy(call, dst, count, src, count, count, 1, nullptr, false, true);
}

// Blocking copy on the per-thread default stream (--default-stream per-thread).
EIDOLON_EXPORT cudaError_t
cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind)
{
    ApiCall call(CallKind::Sync);
    return Copy(call, dst, count, src, count, count, 1, nullptr, true, true);
}

// Asynchronous copy on `stream`.
EIDOLON_EXPORT cudaError_t
cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Copy(call, dst, count, src, count, count, 1, stream, false, false);
}

// Asynchronous copy; a null stream is the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Copy(call, dst, count, src, count, count, 1, stream, true, false);
}

// Blocking 2D copy of height rows of width bytes.
EIDOLON_EXPORT cudaError_t
cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
             cudaMemcpyKind)
{
    ApiCall call(CallKind::Sync);
    return Copy(call, dst, dpitch, src, spitch, width, height, nullptr, false, true);
}

// Asynchronous 2D copy.
EIDOLON_EXPORT cudaError_t
cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                  size_t height, cudaMemcpyKind, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Copy(call, dst, dpitch, src, spitch, width, height, stream, false, false);
}

// cudaMemcpy2D on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                  size_t height, cudaMemcpyKind)
{
    ApiCall call(CallKind::Sync);
    return Copy(call, dst, dpitch, src, spitch, width, height, nullptr, true, true);
}

// cudaMemcpy2DAsync with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                       size_t height, cudaMemcpyKind, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Copy(call, dst, dpitch, src, spitch, width, height, stream, true, false);
}

// Blocking copy between devices (priced by NVLink bandwidth).
EIDOLON_EXPORT cudaError_t
cudaMemcpyPeer(void* dst, int, const void* src, int, size_t count)
{
    ApiCall call(CallKind::Sync);
    return Copy(call, dst, count, src, count, count, 1, nullptr, false, true);
}

// Asynchronous copy between devices.
EIDOLON_EXPORT cudaError_t
cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t count, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Copy(call, dst, count, src, count, count, 1, stream, false, false);
}

namespace
{

// Copy into (toSymbol) or out of a __device__ variable at `offset`.
cudaError_t
SymbolCopy(void* hostSide, const void* symbol, size_t count, size_t offset, bool toSymbol,
           cudaStream_t stream, bool perThread, bool blocking)
{
    ApiCall call(blocking ? CallKind::Sync : CallKind::Submit);
    uint64_t address = call.Emu().SymbolAddress(symbol, call.Emu().CurrentDevice());
    if (!address)
    {
        return Fail(cudaErrorInvalidSymbol);
    }
    void* device = reinterpret_cast<void*>(address + offset);
    return toSymbol
               ? Copy(call, device, count, hostSide, count, count, 1, stream, perThread, blocking)
               : Copy(call, hostSide, count, device, count, count, 1, stream, perThread, blocking);
}

} // namespace

// Copy into a __device__ variable: priced as host-to-device, the bytes stored.
EIDOLON_EXPORT cudaError_t
cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind)
{
    return SymbolCopy(const_cast<void*>(src), symbol, count, offset, true, nullptr, false, true);
}

// cudaMemcpyToSymbol on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count, size_t offset,
                        cudaMemcpyKind)
{
    return SymbolCopy(const_cast<void*>(src), symbol, count, offset, true, nullptr, true, true);
}

// Copy out of a __device__ variable: what the host stored there, zeros elsewhere.
EIDOLON_EXPORT cudaError_t
cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind)
{
    return SymbolCopy(dst, symbol, count, offset, false, nullptr, false, true);
}

// cudaMemcpyFromSymbol on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count, size_t offset,
                          cudaMemcpyKind)
{
    return SymbolCopy(dst, symbol, count, offset, false, nullptr, true, true);
}

// Asynchronous copy into a __device__ variable.
EIDOLON_EXPORT cudaError_t
cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                        cudaMemcpyKind, cudaStream_t stream)
{
    return SymbolCopy(const_cast<void*>(src), symbol, count, offset, true, stream, false, false);
}

// cudaMemcpyToSymbolAsync with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count, size_t offset,
                             cudaMemcpyKind, cudaStream_t stream)
{
    return SymbolCopy(const_cast<void*>(src), symbol, count, offset, true, stream, true, false);
}

// Asynchronous copy out of a __device__ variable.
EIDOLON_EXPORT cudaError_t
cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                          cudaMemcpyKind, cudaStream_t stream)
{
    return SymbolCopy(dst, symbol, count, offset, false, stream, false, false);
}

// cudaMemcpyFromSymbolAsync with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count, size_t offset,
                               cudaMemcpyKind, cudaStream_t stream)
{
    return SymbolCopy(dst, symbol, count, offset, false, stream, true, false);
}

// Device address of a __device__ variable on the current device.
EIDOLON_EXPORT cudaError_t
cudaGetSymbolAddress(void** devPtr, const void* symbol)
{
    ApiCall call(CallKind::Untimed);
    uint64_t address = call.Emu().SymbolAddress(symbol, call.Emu().CurrentDevice());
    if (!devPtr || !address)
    {
        return Fail(devPtr ? cudaErrorInvalidSymbol : cudaErrorInvalidValue);
    }
    *devPtr = reinterpret_cast<void*>(address);
    return cudaSuccess;
}

// Size of a __device__ variable.
EIDOLON_EXPORT cudaError_t
cudaGetSymbolSize(size_t* size, const void* symbol)
{
    ApiCall call(CallKind::Untimed);
    auto it = call.Emu().Symbols().find(symbol);
    if (!size || it == call.Emu().Symbols().end())
    {
        return Fail(size ? cudaErrorInvalidSymbol : cudaErrorInvalidValue);
    }
    *size = it->second.size;
    return cudaSuccess;
}

// Sets device memory (blocking with respect to the host for pageable semantics: like the
// runtime, cudaMemset is asynchronous unless the target is managed memory).
EIDOLON_EXPORT cudaError_t
cudaMemset(void* devPtr, int value, size_t count)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, count, value, count, 1, nullptr, false, false);
}

// cudaMemset on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemset_ptds(void* devPtr, int value, size_t count)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, count, value, count, 1, nullptr, true, false);
}

// Asynchronous memset on `stream`.
EIDOLON_EXPORT cudaError_t
cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, count, value, count, 1, stream, false, false);
}

// Asynchronous memset; a null stream is the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, count, value, count, 1, stream, true, false);
}

// 2D memset of height rows of width bytes.
EIDOLON_EXPORT cudaError_t
cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, pitch, value, width, height, nullptr, false, false);
}

// Asynchronous 2D memset.
EIDOLON_EXPORT cudaError_t
cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                  cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, pitch, value, width, height, stream, false, false);
}

// cudaMemset2D on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, pitch, value, width, height, nullptr, true, false);
}

// cudaMemset2DAsync with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                       cudaStream_t stream)
{
    ApiCall call(CallKind::Submit);
    return Set(call, devPtr, pitch, value, width, height, stream, true, false);
}

// cudaMallocAsync on the per-thread default stream (allocated at once).
EIDOLON_EXPORT cudaError_t
cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t)
{
    return Allocate(devPtr, size, false, spec::HostCall::MallocAsync);
}

// cudaFreeAsync on the per-thread default stream (freed at once).
EIDOLON_EXPORT cudaError_t
cudaFreeAsync_ptsz(void* devPtr, cudaStream_t stream)
{
    return cudaFreeAsync(devPtr, stream);
}

// Prefetch hint on the per-thread default stream: accepted, free.
EIDOLON_EXPORT cudaError_t
cudaMemPrefetchAsync_ptsz(const void*, size_t, cudaMemLocation, unsigned int, cudaStream_t)
{
    return cudaSuccess;
}

// Prefetching managed memory is a hint: accepted, free.
EIDOLON_EXPORT cudaError_t
cudaMemPrefetchAsync(const void*, size_t, cudaMemLocation, unsigned int, cudaStream_t)
{
    return cudaSuccess;
}

// Advice on managed memory is a hint: accepted, free.
EIDOLON_EXPORT cudaError_t
cudaMemAdvise(const void*, size_t, cudaMemoryAdvise, cudaMemLocation)
{
    return cudaSuccess;
}

// A channel format descriptor (a plain value; CUDA arrays themselves are not supported).
EIDOLON_EXPORT cudaChannelFormatDesc
cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f)
{
    return cudaChannelFormatDesc{x, y, z, w, f};
}
