// Memory pools of the stream-ordered allocator (cudaMallocAsync, cudaMallocFromPoolAsync): each
// device's default pool, pools the program creates, their attributes and what they hold.
// Allocation itself is the emulator's (memory.cc): memory is taken at once and given back to the
// device at once when freed, so a pool keeps nothing in reserve: its reserved figures equal its
// used ones, and trimming has nothing to release.
#include "runtime-common.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

using namespace eidolon::gpu;
using namespace eidolon::gpu::rt;

// The handle a cudaMemPool_t points to.
struct CUmemPoolHandle_st
{
    int device = 0;
    bool isDefault = false;
    uint64_t releaseThreshold = 0;
    int reuse[3] = {1, 1,
                    1}; // FollowEventDependencies, AllowOpportunistic, AllowInternalDependencies
    uint64_t used = 0;
    uint64_t usedHigh = 0;
};

namespace
{

// Every pool and what it holds, under its own lock (no emulator call is made while holding it).
struct PoolRegistry
{
    std::mutex mutex;
    std::vector<std::unique_ptr<CUmemPoolHandle_st>> defaults; // by device
    std::vector<cudaMemPool_t> current;                        // by device
    std::set<cudaMemPool_t> created;
    std::map<uint64_t, std::pair<cudaMemPool_t, uint64_t>> owner; // address -> pool, bytes

    // The device's default pool, made at first use (the lock held).
    cudaMemPool_t Default(int device)
    {
        if (defaults.size() <= size_t(device))
        {
            defaults.resize(size_t(device) + 1);
            current.resize(size_t(device) + 1, nullptr);
        }
        if (!defaults[device])
        {
            defaults[device] = std::make_unique<CUmemPoolHandle_st>();
            defaults[device]->device = device;
            defaults[device]->isDefault = true;
        }
        return defaults[device].get();
    }
    cudaMemPool_t Current(int device)
    {
        cudaMemPool_t fallback = Default(device);
        return current[device] ? current[device] : fallback;
    }
    bool Known(cudaMemPool_t pool) const
    {
        if (created.count(pool))
        {
            return true;
        }
        return std::any_of(defaults.begin(), defaults.end(),
                           [pool](const auto& d) { return d.get() == pool; });
    }
};

PoolRegistry&
Pools()
{
    static auto* registry = new PoolRegistry(); // never destroyed: frees at exit still use it
    return *registry;
}

} // namespace

namespace eidolon::gpu::rt
{

void
PoolAllocated(const void* pointer, uint64_t bytes, int device, cudaMemPool_t pool)
{
    PoolRegistry& pools = Pools();
    std::lock_guard<std::mutex> lock(pools.mutex);
    cudaMemPool_t owner = pool ? pool : pools.Current(device);
    owner->used += bytes;
    owner->usedHigh = std::max(owner->usedHigh, owner->used);
    pools.owner[reinterpret_cast<uint64_t>(pointer)] = {owner, bytes};
}

void
PoolFreed(const void* pointer)
{
    PoolRegistry& pools = Pools();
    std::lock_guard<std::mutex> lock(pools.mutex);
    auto it = pools.owner.find(reinterpret_cast<uint64_t>(pointer));
    if (it == pools.owner.end())
    {
        return;
    }
    auto [pool, bytes] = it->second;
    pool->used -= std::min(bytes, pool->used);
    pools.owner.erase(it);
}

} // namespace eidolon::gpu::rt

namespace
{
// A device's default pool, or (`current`) the one cudaMallocAsync uses there.
cudaError_t
PoolOfDevice(cudaMemPool_t* memPool, int device, bool current)
{
    ApiCall call(CallKind::Untimed);
    if (!memPool)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    std::lock_guard<std::mutex> lock(Pools().mutex);
    *memPool = current ? Pools().Current(device) : Pools().Default(device);
    return cudaSuccess;
}
} // namespace

// The device's default pool (cudaMallocAsync allocates from it until cudaDeviceSetMemPool).
EIDOLON_EXPORT cudaError_t
cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device)
{
    return PoolOfDevice(memPool, device, false);
}

// The pool cudaMallocAsync uses on a device: the last one set, else the default.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device)
{
    return PoolOfDevice(memPool, device, true);
}

// Makes a pool of that device the one cudaMallocAsync uses there.
EIDOLON_EXPORT cudaError_t
cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    ApiCall call(CallKind::Untimed);
    if (!ValidDevice(call.Emu(), device))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    PoolRegistry& pools = Pools();
    std::lock_guard<std::mutex> lock(pools.mutex);
    if (!memPool || !pools.Known(memPool) || memPool->device != device)
    {
        return Fail(cudaErrorInvalidValue);
    }
    pools.Default(device);
    pools.current[device] = memPool;
    return cudaSuccess;
}

// A pool of pinned device memory on the device its properties name.
EIDOLON_EXPORT cudaError_t
cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* props)
{
    ApiCall call(CallKind::Untimed);
    if (!memPool || !props || props->allocType != cudaMemAllocationTypePinned ||
        props->location.type != cudaMemLocationTypeDevice)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!ValidDevice(call.Emu(), props->location.id))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    auto* pool = new CUmemPoolHandle_st();
    pool->device = props->location.id;
    std::lock_guard<std::mutex> lock(Pools().mutex);
    Pools().created.insert(pool);
    *memPool = pool;
    return cudaSuccess;
}

// Destroys a created pool (a device's default pool cannot be); a device using it goes back to
// its default pool. Memory still allocated from it stays valid until freed.
EIDOLON_EXPORT cudaError_t
cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    PoolRegistry& pools = Pools();
    std::lock_guard<std::mutex> lock(pools.mutex);
    if (!memPool || !pools.created.count(memPool))
    {
        return Fail(cudaErrorInvalidValue);
    }
    for (cudaMemPool_t& current : pools.current)
    {
        current = current == memPool ? nullptr : current;
    }
    // Its memory stays valid until freed, and then counts against no pool.
    for (auto it = pools.owner.begin(); it != pools.owner.end();)
    {
        it = it->second.first == memPool ? pools.owner.erase(it) : std::next(it);
    }
    pools.created.erase(memPool);
    delete memPool;
    return cudaSuccess;
}

// Sets a pool attribute: the release threshold, the reuse policies, or a high-water mark back to
// the current figure (only 0 may be written to those).
EIDOLON_EXPORT cudaError_t
cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value)
{
    PoolRegistry& pools = Pools();
    std::lock_guard<std::mutex> lock(pools.mutex);
    if (!memPool || !value || !pools.Known(memPool))
    {
        return Fail(cudaErrorInvalidValue);
    }
    switch (attr)
    {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        memPool->reuse[int(attr) - 1] = *static_cast<int*>(value);
        return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
        memPool->releaseThreshold = *static_cast<uint64_t*>(value);
        return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
        if (*static_cast<uint64_t*>(value) != 0)
        {
            return Fail(cudaErrorInvalidValue);
        }
        memPool->usedHigh = memPool->used;
        return cudaSuccess;
    default:
        return Fail(cudaErrorInvalidValue); // the current figures are read-only
    }
}

// Reads a pool attribute; reserved memory is what the pool holds (it keeps nothing in reserve).
EIDOLON_EXPORT cudaError_t
cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value)
{
    PoolRegistry& pools = Pools();
    std::lock_guard<std::mutex> lock(pools.mutex);
    if (!memPool || !value || !pools.Known(memPool))
    {
        return Fail(cudaErrorInvalidValue);
    }
    switch (attr)
    {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        *static_cast<int*>(value) = memPool->reuse[int(attr) - 1];
        return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
        *static_cast<uint64_t*>(value) = memPool->releaseThreshold;
        return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
        *static_cast<uint64_t*>(value) = memPool->used;
        return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
        *static_cast<uint64_t*>(value) = memPool->usedHigh;
        return cudaSuccess;
    default:
        return Fail(cudaErrorInvalidValue);
    }
}

// Releases reserved memory down to a size: the pool keeps none in reserve.
EIDOLON_EXPORT cudaError_t
cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t)
{
    std::lock_guard<std::mutex> lock(Pools().mutex);
    return memPool && Pools().Known(memPool) ? cudaSuccess : Fail(cudaErrorInvalidValue);
}

// Access from other devices: granted as asked (peer access is not modelled per pool).
EIDOLON_EXPORT cudaError_t
cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc* descList, size_t count)
{
    std::lock_guard<std::mutex> lock(Pools().mutex);
    return memPool && Pools().Known(memPool) && (descList || count == 0)
               ? cudaSuccess
               : Fail(cudaErrorInvalidValue);
}

// Access a location has: read-write for every device.
EIDOLON_EXPORT cudaError_t
cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t memPool, cudaMemLocation* location)
{
    std::lock_guard<std::mutex> lock(Pools().mutex);
    if (!flags || !location || !memPool || !Pools().Known(memPool))
    {
        return Fail(cudaErrorInvalidValue);
    }
    *flags = cudaMemAccessFlagsProtReadWrite;
    return cudaSuccess;
}

// Stream-ordered allocation from a given pool, on the pool's device (allocated at once).
EIDOLON_EXPORT cudaError_t
cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!ptr)
    {
        return Fail(cudaErrorInvalidValue);
    }
    int device = 0;
    {
        std::lock_guard<std::mutex> lock(Pools().mutex);
        if (!memPool || !Pools().Known(memPool))
        {
            return Fail(cudaErrorInvalidValue);
        }
        device = memPool->device;
    }
    *ptr = nullptr;
    if (size == 0)
    {
        return cudaSuccess;
    }
    const uint64_t address = emu.AllocateDevice(device, size, false);
    if (!address)
    {
        return Fail(cudaErrorMemoryAllocation);
    }
    *ptr = reinterpret_cast<void*>(address);
    emu.Clock().Charge(spec::HostCall::MallocAsync, size);
    PoolAllocated(*ptr, size, device, memPool);
    return cudaSuccess;
}

// cudaMallocFromPoolAsync on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return cudaMallocFromPoolAsync(ptr, size, memPool, stream);
}
