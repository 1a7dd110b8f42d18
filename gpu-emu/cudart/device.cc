// Device API family: count, selection, properties and attributes from the GPU spec, peer access.
#include "../driver/device-attributes.h"
#include "runtime-common.h"

#include <cuda_profiler_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace eidolon::gpu;

// The runtime reads device attributes from the driver's table: cudaDeviceAttr and
// CUdevice_attribute number every attribute alike.
static_assert(int(cudaDevAttrMaxThreadsPerBlock) ==
                      int(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) &&
                  int(cudaDevAttrComputeCapabilityMajor) ==
                      int(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) &&
                  int(cudaDevAttrMemoryPoolsSupported) ==
                      int(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED),
              "cudaDeviceAttr and CUdevice_attribute differ");
using namespace eidolon::gpu::rt;

namespace
{

void
FillProperties(cudaDeviceProp& prop, const GpuSpec& spec, const Device& device)
{
    std::memset(&prop, 0, sizeof(prop));
    std::snprintf(prop.name, sizeof(prop.name), "%s", spec.marketingName.c_str());
    for (int i = 0; i < 16; ++i)
    {
        prop.uuid.bytes[i] = static_cast<char>(0xE1 ^ (i * 17) ^ device.index);
    }
    prop.totalGlobalMem = device.capacity;
    prop.sharedMemPerBlock = 48 * 1024;
    prop.regsPerBlock = 65536;
    prop.warpSize = 32;
    prop.memPitch = 2147483647;
    prop.maxThreadsPerBlock = 1024;
    prop.maxThreadsDim[0] = 1024;
    prop.maxThreadsDim[1] = 1024;
    prop.maxThreadsDim[2] = 64;
    prop.maxGridSize[0] = 2147483647;
    prop.maxGridSize[1] = 65535;
    prop.maxGridSize[2] = 65535;
    prop.totalConstMem = 65536;
    prop.major = spec.computeCapabilityMajor;
    prop.minor = spec.computeCapabilityMinor;
    prop.textureAlignment = 512;
    prop.texturePitchAlignment = 32;
    prop.multiProcessorCount = spec.smCount;
    prop.canMapHostMemory = 1;
    prop.surfaceAlignment = 512;
    prop.concurrentKernels = 1;
    prop.ECCEnabled = 1;
    prop.pciBusID = PciBusOf(device.index);
    prop.asyncEngineCount = 2;
    prop.unifiedAddressing = 1;
    prop.memoryBusWidth = spec.memoryBusWidthBits;
    prop.l2CacheSize = static_cast<int>(spec.l2CacheBytes);
    prop.persistingL2CacheMaxSize = static_cast<int>(spec.l2CacheBytes * 3 / 4);
    prop.maxThreadsPerMultiProcessor = spec.maxThreadsPerSm;
    prop.streamPrioritiesSupported = 1;
    prop.globalL1CacheSupported = 1;
    prop.localL1CacheSupported = 1;
    prop.sharedMemPerMultiprocessor = spec.sharedMemoryPerSmBytes;
    prop.regsPerMultiprocessor = 65536;
    prop.managedMemory = 1;
    prop.hostNativeAtomicSupported = 0;
    prop.concurrentManagedAccess = 1;
    prop.computePreemptionSupported = 1;
    prop.canUseHostPointerForRegisteredMem = 1;
    prop.cooperativeLaunch = 1;
    prop.sharedMemPerBlockOptin = SharedMemPerBlockOptin(spec);
    prop.maxBlocksPerMultiProcessor = 32;
    prop.accessPolicyMaxWindowSize = 134213632;
    prop.reservedSharedMemPerBlock = 1024;
    prop.hostRegisterSupported = 1;
    prop.memoryPoolsSupported = 1;
    prop.memoryPoolSupportedHandleTypes = 1;
    prop.clusterLaunch = spec.computeCapabilityMajor >= 9;
    prop.unifiedFunctionPointers = 1;
    prop.deviceNumaId = -1;
    prop.hostNumaId = -1;
}

} // namespace

// Number of emulated GPUs (EIDOLON_NUM_GPUS); cudaErrorNoDevice when the GPU spec did not load.
// Answered without joining the simulator: a process that only counts the GPUs (torchrun's agent
// does, before it starts its workers) is no rank; it joins at its first call that uses one.
EIDOLON_EXPORT cudaError_t
cudaGetDeviceCount(int* count)
{
    ApiCall call(CallKind::Untimed, false);
    if (!count)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *count = call.Emu().DeviceCount();
    return *count ? cudaSuccess : Fail(cudaErrorNoDevice);
}

// Selects the calling thread's current device.
EIDOLON_EXPORT cudaError_t
cudaSetDevice(int device)
{
    ApiCall call(CallKind::Untimed);
    if (CheckReady(call.Emu()) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    call.Emu().SetCurrentDevice(device);
    call.Emu().Clock().Charge(spec::HostCall::SetDevice);
    return cudaSuccess;
}

// The calling thread's current device (0 unless set).
EIDOLON_EXPORT cudaError_t
cudaGetDevice(int* device)
{
    ApiCall call(CallKind::Untimed);
    if (!device)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (CheckReady(call.Emu()) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    *device = call.Emu().CurrentDevice();
    // Not charged, like event creation (streams-events.cc): runtimes call it around every pooled
    // object they create (a device guard), so its count follows the pools.
    return cudaSuccess;
}

// Initializes a device's primary context: nothing to do beyond validating it.
EIDOLON_EXPORT cudaError_t
cudaInitDevice(int device, unsigned int, unsigned int)
{
    ApiCall call(CallKind::Untimed);
    return ValidDevice(call.Emu(), device) ? cudaSuccess : Fail(cudaErrorInvalidDevice);
}

// Properties of a device, from the GPU spec.
EIDOLON_EXPORT cudaError_t
cudaGetDeviceProperties(cudaDeviceProp* prop, int device)
{
    ApiCall call(CallKind::Untimed);
    if (!prop)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return Fail(call.Emu().DeviceCount() ? cudaErrorInvalidDevice : cudaErrorNoDevice);
    }
    FillProperties(*prop, call.Emu().Spec(), call.Emu().DeviceAt(device));
    return cudaSuccess;
}

namespace
{
// cudaDeviceProp as CUDA 12.x headers lay it out (what cudaGetDeviceProperties_v2 fills for
// programs built with CUDA 12). CUDA 13 dropped the fields marked "12 only"; the rest keep their
// names and order, and both layouts end in padding to the same size.
struct CudaDeviceProp12
{
    char name[256];
    cudaUUID_t uuid;
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate; // 12 only
    size_t totalConstMem;
    int major;
    int minor;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int deviceOverlap; // 12 only
    int multiProcessorCount;
    int kernelExecTimeoutEnabled; // 12 only
    int integrated;
    int canMapHostMemory;
    int computeMode; // 12 only
    int maxTexture1D;
    int maxTexture1DMipmap;
    int maxTexture1DLinear; // 12 only
    int maxTexture2D[2];
    int maxTexture2DMipmap[2];
    int maxTexture2DLinear[3];
    int maxTexture2DGather[2];
    int maxTexture3D[3];
    int maxTexture3DAlt[3];
    int maxTextureCubemap;
    int maxTexture1DLayered[2];
    int maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2];
    int maxSurface1D;
    int maxSurface2D[2];
    int maxSurface3D[3];
    int maxSurface1DLayered[2];
    int maxSurface2DLayered[3];
    int maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int tccDriver;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryClockRate; // 12 only
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    int globalL1CacheSupported;
    int localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int singleToDoublePrecisionPerfRatio; // 12 only
    int pageableMemoryAccess;
    int concurrentManagedAccess;
    int computePreemptionSupported;
    int canUseHostPointerForRegisteredMem;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch; // 12 only
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables;
    int directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor;
    int accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported;
    int sparseCudaArraySupported;
    int hostRegisterReadOnlySupported;
    int timelineSemaphoreInteropSupported;
    int memoryPoolsSupported;
    int gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingCudaArraySupported;
    int ipcEventSupported;
    int clusterLaunch;
    int unifiedFunctionPointers;
    int deviceNumaConfig;
    int deviceNumaId;
    int mpsEnabled;
    int hostNumaId;
    unsigned int gpuPciDeviceID;
    unsigned int gpuPciSubsystemID;
    int hostNumaMultinodeIpcSupported;
    int reserved[56];
};

// Copies the fields both layouts share, by name.
void
ToCuda12(const cudaDeviceProp& p, CudaDeviceProp12& q)
{
#define EIDOLON_COPY(field) std::memcpy(&q.field, &p.field, sizeof(q.field))
    EIDOLON_COPY(name);
    EIDOLON_COPY(uuid);
    EIDOLON_COPY(luid);
    EIDOLON_COPY(luidDeviceNodeMask);
    EIDOLON_COPY(totalGlobalMem);
    EIDOLON_COPY(sharedMemPerBlock);
    EIDOLON_COPY(regsPerBlock);
    EIDOLON_COPY(warpSize);
    EIDOLON_COPY(memPitch);
    EIDOLON_COPY(maxThreadsPerBlock);
    EIDOLON_COPY(maxThreadsDim);
    EIDOLON_COPY(maxGridSize);
    EIDOLON_COPY(totalConstMem);
    EIDOLON_COPY(major);
    EIDOLON_COPY(minor);
    EIDOLON_COPY(textureAlignment);
    EIDOLON_COPY(texturePitchAlignment);
    EIDOLON_COPY(multiProcessorCount);
    EIDOLON_COPY(integrated);
    EIDOLON_COPY(canMapHostMemory);
    EIDOLON_COPY(surfaceAlignment);
    EIDOLON_COPY(concurrentKernels);
    EIDOLON_COPY(ECCEnabled);
    EIDOLON_COPY(pciBusID);
    EIDOLON_COPY(pciDeviceID);
    EIDOLON_COPY(pciDomainID);
    EIDOLON_COPY(tccDriver);
    EIDOLON_COPY(asyncEngineCount);
    EIDOLON_COPY(unifiedAddressing);
    EIDOLON_COPY(memoryBusWidth);
    EIDOLON_COPY(l2CacheSize);
    EIDOLON_COPY(persistingL2CacheMaxSize);
    EIDOLON_COPY(maxThreadsPerMultiProcessor);
    EIDOLON_COPY(streamPrioritiesSupported);
    EIDOLON_COPY(globalL1CacheSupported);
    EIDOLON_COPY(localL1CacheSupported);
    EIDOLON_COPY(sharedMemPerMultiprocessor);
    EIDOLON_COPY(regsPerMultiprocessor);
    EIDOLON_COPY(managedMemory);
    EIDOLON_COPY(isMultiGpuBoard);
    EIDOLON_COPY(multiGpuBoardGroupID);
    EIDOLON_COPY(hostNativeAtomicSupported);
    EIDOLON_COPY(pageableMemoryAccess);
    EIDOLON_COPY(concurrentManagedAccess);
    EIDOLON_COPY(computePreemptionSupported);
    EIDOLON_COPY(canUseHostPointerForRegisteredMem);
    EIDOLON_COPY(cooperativeLaunch);
    EIDOLON_COPY(sharedMemPerBlockOptin);
    EIDOLON_COPY(pageableMemoryAccessUsesHostPageTables);
    EIDOLON_COPY(directManagedMemAccessFromHost);
    EIDOLON_COPY(maxBlocksPerMultiProcessor);
    EIDOLON_COPY(accessPolicyMaxWindowSize);
    EIDOLON_COPY(reservedSharedMemPerBlock);
    EIDOLON_COPY(hostRegisterSupported);
    EIDOLON_COPY(memoryPoolsSupported);
    EIDOLON_COPY(memoryPoolSupportedHandleTypes);
    EIDOLON_COPY(clusterLaunch);
    EIDOLON_COPY(unifiedFunctionPointers);
    EIDOLON_COPY(deviceNumaId);
    EIDOLON_COPY(hostNumaId);
#undef EIDOLON_COPY
}
} // namespace

// Properties in the CUDA 12 layout (CUDA 12 headers map cudaGetDeviceProperties to this name).
EIDOLON_EXPORT cudaError_t
cudaGetDeviceProperties_v2(CudaDeviceProp12* prop, int device)
{
    cudaDeviceProp current;
    cudaError_t result = cudaGetDeviceProperties(prop ? &current : nullptr, device);
    if (result != cudaSuccess)
    {
        return result;
    }
    std::memset(prop, 0, sizeof(*prop));
    ToCuda12(current, *prop);
    const GpuSpec& spec = Emulator::Get().Spec();
    prop->clockRate = static_cast<int>(spec.boostClockMhz * 1000);
    prop->memoryClockRate = static_cast<int>(spec.memoryClockMhz * 1000);
    prop->deviceOverlap = 1;
    prop->computeMode = cudaComputeModeDefault;
    prop->maxTexture1DLinear = 1 << 27;
    const DenseFlops flops = DenseFlopsOf(spec);
    prop->singleToDoublePrecisionPerfRatio =
        flops.fp64 > 0 ? static_cast<int>(flops.fp32 / flops.fp64) : 32;
    prop->cooperativeMultiDeviceLaunch = 1;
    return cudaSuccess;
}

// One device attribute, from the GPU spec; cudaErrorInvalidValue for attributes eidolon lacks.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device)
{
    ApiCall call(CallKind::Untimed);
    if (!value)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    if (!AttributeValue(static_cast<CUdevice_attribute>(attr), call.Emu().Spec(),
                        call.Emu().DeviceAt(device), *value))
    {
        *value = 0; // unknown attributes read as 0 (feature absent), as for a conservative device
    }
    return cudaSuccess;
}

// Blocks the host until all work on the current device is done: host clock moves to its end.
EIDOLON_EXPORT cudaError_t
cudaDeviceSynchronize()
{
    ApiCall call(CallKind::Sync);
    ActivityLog::MarkCall(ActivityCall::DeviceSynchronize); // for a profiler
    if (CheckReady(call.Emu()) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    call.Emu().SyncTo(call.Emu().DeviceCompletion(call.Emu().CurrentDevice()),
                      "cudaDeviceSynchronize");
    call.Emu().Clock().Charge(spec::HostCall::DeviceSynchronize); // from completion to return
    return CheckReady(call.Emu()); // the simulator may have gone while this call waited
}

// Deprecated alias of cudaDeviceSynchronize (CUDA 12 and earlier).
EIDOLON_EXPORT cudaError_t
cudaThreadSynchronize()
{
    return cudaDeviceSynchronize();
}

// Destroys the current device's state: waits for its work and frees nothing else (allocations
// stay reserved; a real reset would free them).
EIDOLON_EXPORT cudaError_t
cudaDeviceReset()
{
    return cudaDeviceSynchronize();
}

// Device flags are recorded and returned; they do not change pricing.
EIDOLON_EXPORT cudaError_t
cudaSetDeviceFlags(unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    if (CheckReady(call.Emu()) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    call.Emu().DeviceAt(call.Emu().CurrentDevice()).flags = flags;
    return cudaSuccess;
}

// The flags set by cudaSetDeviceFlags.
EIDOLON_EXPORT cudaError_t
cudaGetDeviceFlags(unsigned int* flags)
{
    ApiCall call(CallKind::Untimed);
    if (!flags)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (CheckReady(call.Emu()) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    *flags = call.Emu().DeviceAt(call.Emu().CurrentDevice()).flags;
    return cudaSuccess;
}

// Every pair of emulated devices can access each other (NVLink/NVSwitch node).
EIDOLON_EXPORT cudaError_t
cudaDeviceCanAccessPeer(int* canAccess, int device, int peer)
{
    ApiCall call(CallKind::Untimed);
    if (!canAccess || !ValidDevice(call.Emu(), device) || !ValidDevice(call.Emu(), peer))
    {
        return Fail(canAccess ? cudaErrorInvalidDevice : cudaErrorInvalidValue);
    }
    *canAccess = device != peer;
    return cudaSuccess;
}

// Enables access from the current device to `peer`; already enabled is an error, as in CUDA.
EIDOLON_EXPORT cudaError_t
cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (flags != 0)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!ValidDevice(emu, peer) || peer == emu.CurrentDevice())
    {
        return Fail(cudaErrorInvalidDevice);
    }
    std::vector<bool>& access = emu.DeviceAt(emu.CurrentDevice()).peerAccess;
    if (access[peer])
    {
        return Fail(cudaErrorPeerAccessAlreadyEnabled);
    }
    access[peer] = true;
    return cudaSuccess;
}

// Disables access from the current device to `peer`.
EIDOLON_EXPORT cudaError_t
cudaDeviceDisablePeerAccess(int peer)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!ValidDevice(emu, peer))
    {
        return Fail(cudaErrorInvalidDevice);
    }
    std::vector<bool>& access = emu.DeviceAt(emu.CurrentDevice()).peerAccess;
    if (!access[peer])
    {
        return Fail(cudaErrorPeerAccessNotEnabled);
    }
    access[peer] = false;
    return cudaSuccess;
}

// P2P attributes: NVLink peers, native atomics, no CUDA-array access restrictions.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int src, int dst)
{
    ApiCall call(CallKind::Untimed);
    if (!value || !ValidDevice(call.Emu(), src) || !ValidDevice(call.Emu(), dst) || src == dst)
    {
        return Fail(value ? cudaErrorInvalidDevice : cudaErrorInvalidValue);
    }
    *value = attr == cudaDevP2PAttrPerformanceRank ? 0 : 1;
    return cudaSuccess;
}

// Range of stream priorities: [0 (least), -5 (greatest)] as on Hopper.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority)
{
    if (leastPriority)
    {
        *leastPriority = 0;
    }
    if (greatestPriority)
    {
        *greatestPriority = -5;
    }
    return cudaSuccess;
}

// PCI bus id string "0000:BB:00.0" of a device.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetPCIBusId(char* pciBusId, int len, int device)
{
    ApiCall call(CallKind::Untimed);
    if (!pciBusId || len <= 0 || !ValidDevice(call.Emu(), device))
    {
        return Fail(pciBusId ? cudaErrorInvalidDevice : cudaErrorInvalidValue);
    }
    std::snprintf(pciBusId, size_t(len), "00000000:%02X:00.0", PciBusOf(device));
    return cudaSuccess;
}

// The device whose PCI bus id is given.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetByPCIBusId(int* device, const char* pciBusId)
{
    ApiCall call(CallKind::Untimed);
    unsigned domain = 0, bus = 0;
    if (!device || !pciBusId || std::sscanf(pciBusId, "%x:%x", &domain, &bus) != 2)
    {
        return Fail(cudaErrorInvalidValue);
    }
    for (int d = 0; d < call.Emu().DeviceCount(); ++d)
    {
        if (unsigned(PciBusOf(d)) == bus)
        {
            *device = d;
            return cudaSuccess;
        }
    }
    return Fail(cudaErrorInvalidDevice);
}

// Limits are accepted and reported back (stack size, heap size, ...); they cost nothing.
EIDOLON_EXPORT cudaError_t
cudaDeviceSetLimit(cudaLimit, size_t)
{
    return cudaSuccess;
}

// Default values of the limits eidolon reports.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetLimit(size_t* value, cudaLimit limit)
{
    if (!value)
    {
        return Fail(cudaErrorInvalidValue);
    }
    switch (limit)
    {
    case cudaLimitStackSize:
        *value = 1024;
        break;
    case cudaLimitPrintfFifoSize:
    case cudaLimitMallocHeapSize:
        *value = 8 << 20;
        break;
    default:
        *value = 0;
        break;
    }
    return cudaSuccess;
}

// Cache configuration is a hint with no effect on prices.
EIDOLON_EXPORT cudaError_t
cudaDeviceSetCacheConfig(cudaFuncCache)
{
    return cudaSuccess;
}

// Always cudaFuncCachePreferNone.
EIDOLON_EXPORT cudaError_t
cudaDeviceGetCacheConfig(cudaFuncCache* config)
{
    if (!config)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *config = cudaFuncCachePreferNone;
    return cudaSuccess;
}

// The runtime version this library stands in for (12.8 for libcudart.so.12, 13.0 for .so.13).
EIDOLON_EXPORT cudaError_t
cudaRuntimeGetVersion(int* version)
{
    if (!version)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *version = CudartVersion();
    return cudaSuccess;
}

// The emulated driver supports the runtime's version.
EIDOLON_EXPORT cudaError_t
cudaDriverGetVersion(int* version)
{
    if (!version)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *version = std::max(CudartVersion(), CUDART_VERSION); // a driver new enough for either
    return cudaSuccess;
}

namespace
{
// cuGetProcAddress_v2 of the driver library loaded in this process (ours when LD_LIBRARY_PATH
// points at gpu-emu), or null when there is none.
using GetProcAddress = int (*)(const char*, void**, int, unsigned long long, int*);

GetProcAddress
DriverGetProcAddress()
{
    static GetProcAddress function = []
    {
        void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL);
        return driver ? reinterpret_cast<GetProcAddress>(dlsym(driver, "cuGetProcAddress_v2"))
                      : nullptr;
    }();
    return function;
}
} // namespace

// Address of a driver entry point, through the driver's cuGetProcAddress.
EIDOLON_EXPORT cudaError_t
cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                 unsigned long long flags, cudaDriverEntryPointQueryResult* status)
{
    if (!symbol || !funcPtr)
    {
        return Fail(cudaErrorInvalidValue);
    }
    GetProcAddress getProcAddress = DriverGetProcAddress();
    int found = 1;
    if (!getProcAddress || getProcAddress(symbol, funcPtr, int(cudaVersion), flags, &found) != 0)
    {
        *funcPtr = nullptr;
        if (status)
        {
            *status = cudaDriverEntryPointSymbolNotFound;
        }
        return getProcAddress ? cudaSuccess : Fail(cudaErrorNotSupported);
    }
    if (status)
    {
        *status = cudaDriverEntryPointSuccess;
    }
    return cudaSuccess;
}

// cudaGetDriverEntryPointByVersion at this runtime's version.
EIDOLON_EXPORT cudaError_t
cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* status)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, unsigned(CudartVersion()), flags,
                                            status);
}

// cudaGetDriverEntryPointByVersion (per-thread default stream build).
EIDOLON_EXPORT cudaError_t
cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                      unsigned long long flags,
                                      cudaDriverEntryPointQueryResult* status)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, cudaVersion, flags, status);
}

// cudaGetDriverEntryPoint (per-thread default stream build).
EIDOLON_EXPORT cudaError_t
cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                             cudaDriverEntryPointQueryResult* status)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, unsigned(CudartVersion()), flags,
                                            status);
}

// Profiler ranges: nothing to profile; accepted.
EIDOLON_EXPORT cudaError_t
cudaProfilerStart()
{
    return cudaSuccess;
}

// See cudaProfilerStart.
EIDOLON_EXPORT cudaError_t
cudaProfilerStop()
{
    return cudaSuccess;
}

// Resetting persisting L2 lines: no cache is modelled; accepted.
EIDOLON_EXPORT cudaError_t
cudaCtxResetPersistingL2Cache()
{
    return cudaSuccess;
}

// Flushing GPUDirect RDMA writes: nothing is in flight outside the model; accepted.
EIDOLON_EXPORT cudaError_t
cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTarget,
                                   cudaFlushGPUDirectRDMAWritesScope)
{
    return cudaSuccess;
}

// All emulated devices are alike: device 0 matches any requested properties best.
EIDOLON_EXPORT cudaError_t
cudaChooseDevice(int* device, const cudaDeviceProp* prop)
{
    if (!device || !prop)
    {
        return Fail(cudaErrorInvalidValue);
    }
    *device = 0;
    return cudaSuccess;
}
