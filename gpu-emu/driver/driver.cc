// libcuda.so.1 replacement: the driver API basics (devices, primary contexts, cuGetProcAddress),
// modules and launches as Triton uses them, memory including the virtual memory (cuMem*) calls,
// streams and events. It shares the one emulator state with libcudart.
#define __CUDA_API_VERSION_INTERNAL // declare every versioned name, rename none
#include "../core/diagnostics.h"
#include "../core/emulator.h"
#include "../core/fatbin.h"
#include "device-attributes.h"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <unordered_map>
#include <vector>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

using namespace eidolon::gpu;

struct CUctx_st
{
    int device;
};

struct CUmod_st
{
    std::unordered_map<std::string, int64_t> paramBytes; // kernel name -> parameter bytes
};

namespace
{

constexpr int kDriverVersion = CUDA_VERSION;

// One primary context per device, never freed.
CUctx_st*
PrimaryContext(int device)
{
    static std::mutex mutex;
    static auto* contexts = new std::map<int, CUctx_st*>();
    std::lock_guard<std::mutex> lock(mutex);
    CUctx_st*& context = (*contexts)[device];
    if (!context)
    {
        context = new CUctx_st{device};
    }
    return context;
}

thread_local CUctx_st* t_currentContext = nullptr;

bool
ValidDevice(Emulator& emu, CUdevice device)
{
    return device >= 0 && device < emu.DeviceCount();
}

// Physical allocations of cuMemCreate: handle -> (device, bytes).
std::map<CUmemGenericAllocationHandle, std::pair<int, uint64_t>>&
PhysicalAllocations()
{
    static auto* allocations =
        new std::map<CUmemGenericAllocationHandle, std::pair<int, uint64_t>>();
    return *allocations;
}

constexpr size_t kGranularity = 2 << 20;

CUresult
Launch(CUfunction function, Dim3 grid, Dim3 block, unsigned sharedMem, CUstream handle)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    auto* kernel = reinterpret_cast<KernelInfo*>(function);
    if (!kernel)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (grid.Count() == 0 || block.Count() == 0 || block.Count() > 1024 ||
        sharedMem > SharedMemPerBlockOptin(emu.Spec()))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    Stream* stream = emu.ResolveStream(static_cast<void*>(handle), false);
    if (!stream)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    Price price =
        emu.Costs().PriceKernel(KernelLaunch{kernel, grid, block, sharedMem, -1}, emu.Spec());
    emu.Clock().Charge(stream->legacy ? spec::HostCall::LaunchKernelLegacyStream
                                      : spec::HostCall::LaunchKernel);
    ActivityLog::MarkCall(ActivityCall::DriverLaunchKernel); // cuLaunchKernel, for a profiler
    ActivityLog::MarkLaunch(grid, block, uint32_t(sharedMem));
    emu.Place(*stream, OpKind::Kernel, price.duration, kernel->name, price.provider, 0);
    return CUDA_SUCCESS;
}

CUresult
CopyBytes(void* dst, const void* src, size_t bytes, CUstream handle, bool blocking)
{
    ApiCall call(blocking ? CallKind::Sync : CallKind::Submit);
    Emulator& emu = call.Emu();
    Stream* stream = emu.ResolveStream(static_cast<void*>(handle), false);
    if (!stream)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (bytes == 0)
    {
        return CUDA_SUCCESS;
    }
    if (!dst || !src || !emu.ValidSpan(dst, bytes) || !emu.ValidSpan(src, bytes))
    {
        return CUDA_ERROR_INVALID_VALUE; // freed, or past the allocation's end
    }
    // The driver layer does not know which host memory the runtime pinned: host copies are
    // charged the pinned figure.
    bool host = emu.KindOf(dst) == MemoryKind::Host || emu.KindOf(src) == MemoryKind::Host;
    emu.Clock().Charge(host ? spec::HostCall::MemcpyAsyncPinned : spec::HostCall::MemcpyAsyncDevice,
                       bytes);
    Placement placement = emu.Copy(*stream, dst, bytes, src, bytes, bytes, 1);
    if (blocking && !placement.captured)
    {
        emu.SyncTo(emu.OpCompletion(placement), "cuMemcpy");
        emu.Clock().Charge(spec::HostCall::MemcpyBlockingReturn);
    }
    return CUDA_SUCCESS;
}

CUresult
SetBytes(CUdeviceptr dst, int value, size_t bytes, CUstream handle)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    Stream* stream = emu.ResolveStream(static_cast<void*>(handle), false);
    if (!stream)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (bytes > 0 && !emu.ValidSpan(reinterpret_cast<void*>(dst), bytes))
    {
        return CUDA_ERROR_INVALID_VALUE; // freed, or past the allocation's end
    }
    emu.Clock().Charge(spec::HostCall::MemsetAsync, bytes);
    emu.Memset(*stream, reinterpret_cast<void*>(dst), bytes, value, bytes, 1);
    return CUDA_SUCCESS;
}

} // namespace

// ---------------------------------------------------------------- initialization, versions, errors

// Initializes the driver: fails with CUDA_ERROR_NO_DEVICE when the GPU spec did not load. Like
// counting the devices, it does not join the simulator (cudaGetDeviceCount says why).
EIDOLON_EXPORT CUresult
cuInit(unsigned int)
{
    return Emulator::Local().DeviceCount() ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

// The driver's CUDA version (that of the headers eidolon was built with).
EIDOLON_EXPORT CUresult
cuDriverGetVersion(int* version)
{
    if (!version)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = kDriverVersion;
    return CUDA_SUCCESS;
}

namespace
{
// The result codes this driver returns, with CUDA's own name and description for each.
struct ResultText
{
    CUresult code;
    const char* name;
    const char* text;
};
constexpr ResultText kResultTexts[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

const ResultText*
FindResult(CUresult error)
{
    for (const ResultText& r : kResultTexts)
    {
        if (r.code == error)
        {
            return &r;
        }
    }
    return nullptr;
}
} // namespace

// Symbolic name of a result code.
EIDOLON_EXPORT CUresult
cuGetErrorName(CUresult error, const char** name)
{
    if (!name)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const ResultText* r = FindResult(error);
    *name = r ? r->name : nullptr;
    return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Description of a result code.
EIDOLON_EXPORT CUresult
cuGetErrorString(CUresult error, const char** text)
{
    if (!text)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const ResultText* r = FindResult(error);
    *text = r ? r->text : nullptr;
    return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Address of a driver entry point of this library: the newest version of `symbol` we define
// (name_v3, name_v2, name), per-thread-stream variants first when asked for.
EIDOLON_EXPORT CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status)
{
    if (!symbol || !pfn)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    static void* self = []
    {
        Dl_info info{};
        dladdr(reinterpret_cast<void*>(&cuInit), &info);
        return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }();
    const std::string name(symbol);
    std::vector<std::string> candidates;
    for (const char* version : {"_v3", "_v2", ""})
    {
        if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        {
            candidates.push_back(name + version + "_ptsz");
            candidates.push_back(name + version + "_ptds");
        }
        candidates.push_back(name + version);
    }
    for (const auto& candidate : candidates)
    {
        if (void* address = self ? dlsym(self, candidate.c_str()) : nullptr)
        {
            *pfn = address;
            if (status)
            {
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            }
            return CUDA_SUCCESS;
        }
    }
    *pfn = nullptr;
    if (status)
    {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
}

// cuGetProcAddress without the status output (CUDA 11 signature).
EIDOLON_EXPORT CUresult
cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

// ---------------------------------------------------------------- devices

// Device handle of an ordinal (the ordinal itself).
EIDOLON_EXPORT CUresult
cuDeviceGet(CUdevice* device, int ordinal)
{
    ApiCall call(CallKind::Untimed);
    if (!device)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), ordinal))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = ordinal;
    return CUDA_SUCCESS;
}

// Number of emulated GPUs.
EIDOLON_EXPORT CUresult
cuDeviceGetCount(int* count)
{
    ApiCall call(CallKind::Untimed, false); // no join (cudaGetDeviceCount)
    if (!count)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *count = call.Emu().DeviceCount();
    return CUDA_SUCCESS;
}

// Marketing name of the GPU model.
EIDOLON_EXPORT CUresult
cuDeviceGetName(char* name, int length, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!name || length <= 0)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    std::snprintf(name, size_t(length), "%s", call.Emu().Spec().marketingName.c_str());
    return CUDA_SUCCESS;
}

// Total memory of a device (its capacity).
EIDOLON_EXPORT CUresult
cuDeviceTotalMem_v2(size_t* bytes, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!bytes)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *bytes = call.Emu().DeviceAt(device).capacity;
    return CUDA_SUCCESS;
}

// A device attribute from the GPU spec (same values as the runtime's); unknown ones read 0.
EIDOLON_EXPORT CUresult
cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!value)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    if (!AttributeValue(attribute, call.Emu().Spec(), call.Emu().DeviceAt(device), *value))
    {
        *value = 0;
    }
    return CUDA_SUCCESS;
}

// Compute capability (deprecated query).
EIDOLON_EXPORT CUresult
cuDeviceComputeCapability(int* major, int* minor, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!major || !minor)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *major = call.Emu().Spec().computeCapabilityMajor;
    *minor = call.Emu().Spec().computeCapabilityMinor;
    return CUDA_SUCCESS;
}

// A stable UUID per device (the same bytes as cudaDeviceProp::uuid).
EIDOLON_EXPORT CUresult
cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!uuid)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    for (int i = 0; i < 16; ++i)
    {
        uuid->bytes[i] = static_cast<char>(0xE1 ^ (i * 17) ^ device);
    }
    return CUDA_SUCCESS;
}

// See cuDeviceGetUuid_v2.
EIDOLON_EXPORT CUresult
cuDeviceGetUuid(CUuuid* uuid, CUdevice device)
{
    return cuDeviceGetUuid_v2(uuid, device);
}

// PCI bus id "00000000:BB:00.0".
EIDOLON_EXPORT CUresult
cuDeviceGetPCIBusId(char* busId, int length, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!busId || length <= 0)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    std::snprintf(busId, size_t(length), "00000000:%02X:00.0", PciBusOf(device));
    return CUDA_SUCCESS;
}

// Every pair of distinct emulated devices can access each other.
EIDOLON_EXPORT CUresult
cuDeviceCanAccessPeer(int* canAccess, CUdevice device, CUdevice peer)
{
    ApiCall call(CallKind::Untimed);
    if (!canAccess)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device) || !ValidDevice(call.Emu(), peer))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *canAccess = device != peer;
    return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- contexts

// The primary context of a device (one per device, shared with the runtime).
EIDOLON_EXPORT CUresult
cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!context)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *context = PrimaryContext(device);
    return CUDA_SUCCESS;
}

// Releasing the primary context keeps it (the runtime holds it too).
EIDOLON_EXPORT CUresult
cuDevicePrimaryCtxRelease_v2(CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    return ValidDevice(call.Emu(), device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// Primary contexts are always active, with default flags.
EIDOLON_EXPORT CUresult
cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active)
{
    ApiCall call(CallKind::Untimed);
    if (!flags || !active)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *flags = 0;
    *active = 1;
    return CUDA_SUCCESS;
}

// Primary context flags are accepted.
EIDOLON_EXPORT CUresult
cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int)
{
    ApiCall call(CallKind::Untimed);
    return ValidDevice(call.Emu(), device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// Resetting the primary context waits for the device's work.
EIDOLON_EXPORT CUresult
cuDevicePrimaryCtxReset_v2(CUdevice device)
{
    ApiCall call(CallKind::Sync);
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    call.Emu().SyncTo(call.Emu().DeviceCompletion(device), "cuCtxSynchronize");
    return CUDA_SUCCESS;
}

// The calling thread's context: the one set, else the primary context of its current device.
EIDOLON_EXPORT CUresult
cuCtxGetCurrent(CUcontext* context)
{
    ApiCall call(CallKind::Untimed);
    if (!context)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *context = t_currentContext           ? t_currentContext
               : call.Emu().DeviceCount() ? PrimaryContext(call.Emu().CurrentDevice())
                                          : nullptr;
    return CUDA_SUCCESS;
}

// Makes a context current: its device becomes the thread's current device.
EIDOLON_EXPORT CUresult
cuCtxSetCurrent(CUcontext context)
{
    ApiCall call(CallKind::Untimed);
    t_currentContext = context;
    if (context)
    {
        call.Emu().SetCurrentDevice(context->device);
    }
    return CUDA_SUCCESS;
}

// Pushes a context (a one-deep stack: the pushed context becomes current).
EIDOLON_EXPORT CUresult
cuCtxPushCurrent_v2(CUcontext context)
{
    return cuCtxSetCurrent(context);
}

// Pops the current context.
EIDOLON_EXPORT CUresult
cuCtxPopCurrent_v2(CUcontext* context)
{
    if (context)
    {
        cuCtxGetCurrent(context);
    }
    t_currentContext = nullptr;
    return CUDA_SUCCESS;
}

// Device of the current context.
EIDOLON_EXPORT CUresult
cuCtxGetDevice(CUdevice* device)
{
    CUcontext context = nullptr;
    cuCtxGetCurrent(&context);
    if (!device)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!context)
    {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *device = context->device;
    return CUDA_SUCCESS;
}

// Waits for all work of the current context's device.
EIDOLON_EXPORT CUresult
cuCtxSynchronize()
{
    ApiCall call(CallKind::Sync);
    if (!call.Emu().DeviceCount())
    {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    int device = t_currentContext ? t_currentContext->device : call.Emu().CurrentDevice();
    call.Emu().SyncTo(call.Emu().DeviceCompletion(device), "cuCtxSynchronize");
    call.Emu().Clock().Charge(spec::HostCall::DeviceSynchronize);
    return CUDA_SUCCESS;
}

// A new context on a device (CUDA 12 signature); it shares the device's state.
EIDOLON_EXPORT CUresult
cuCtxCreate_v2(CUcontext* context, unsigned int, CUdevice device)
{
    ApiCall call(CallKind::Untimed);
    if (!context)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ValidDevice(call.Emu(), device))
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *context = new CUctx_st{device};
    t_currentContext = *context;
    call.Emu().SetCurrentDevice(device);
    return CUDA_SUCCESS;
}

// A new context (CUDA 13 signature with creation parameters).
EIDOLON_EXPORT CUresult
cuCtxCreate_v4(CUcontext* context, CUctxCreateParams*, unsigned int flags, CUdevice device)
{
    return cuCtxCreate_v2(context, flags, device);
}

// Destroys a context made by cuCtxCreate (primary contexts are kept).
EIDOLON_EXPORT CUresult
cuCtxDestroy_v2(CUcontext context)
{
    if (!context)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (t_currentContext == context)
    {
        t_currentContext = nullptr;
    }
    if (context != PrimaryContext(context->device))
    {
        delete context;
    }
    return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- modules and launches

// Loads a module image (cubin, fatbin or PTX): the code is not kept, kernels are found by name.
EIDOLON_EXPORT CUresult
cuModuleLoadData(CUmodule* module, const void* image)
{
    if (!module || !image)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *module = new CUmod_st{ModuleImageParamBytes(image)};
    return CUDA_SUCCESS;
}

// cuModuleLoadData with JIT options (ignored).
EIDOLON_EXPORT CUresult
cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*, void**)
{
    return cuModuleLoadData(module, image);
}

// Loads a module file: its kernels are found by name (the file is not read).
EIDOLON_EXPORT CUresult
cuModuleLoad(CUmodule* module, const char* path)
{
    if (!module || !path)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *module = new CUmod_st{};
    return CUDA_SUCCESS;
}

// Unloads a module.
EIDOLON_EXPORT CUresult
cuModuleUnload(CUmodule module)
{
    delete module;
    return CUDA_SUCCESS;
}

// A kernel of a module by its (mangled) name; priced by the chain under that name.
EIDOLON_EXPORT CUresult
cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name)
{
    ApiCall call(CallKind::Untimed);
    if (!function || !module || !name)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    auto it = module->paramBytes.find(name);
    *function = reinterpret_cast<CUfunction>(
        call.Emu().RegisterKernel(nullptr, name, it == module->paramBytes.end() ? -1 : it->second));
    return CUDA_SUCCESS;
}

// Kernel attributes Triton asks for: 32 registers, no local or static shared memory.
EIDOLON_EXPORT CUresult
cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function)
{
    if (!value || !function)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const GpuSpec& spec = Emulator::Get().Spec();
    switch (attribute)
    {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *value = 1024;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *value = 32;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *value = spec.computeCapabilityMajor * 10 + spec.computeCapabilityMinor;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *value = static_cast<int>(
            spec.sharedMemoryPerSmBytes > 1024 ? spec.sharedMemoryPerSmBytes - 1024 : 0);
        break;
    default:
        *value = 0;
        break;
    }
    return CUDA_SUCCESS;
}

// Kernel attributes: the dynamic shared memory it may use (up to what a block can opt in to),
// carveout and the rest accepted.
EIDOLON_EXPORT CUresult
cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value)
{
    if (!function)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    {
        if (value < 0 || uint64_t(value) > SharedMemPerBlockOptin(Emulator::Local().Spec()))
        {
            return CUDA_ERROR_INVALID_VALUE;
        }
        reinterpret_cast<KernelInfo*>(function)->maxDynamicSharedBytes = value;
    }
    return CUDA_SUCCESS;
}

// Cache preference: accepted.
EIDOLON_EXPORT CUresult
cuFuncSetCacheConfig(CUfunction function, CUfunc_cache)
{
    return function ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// Launches a kernel: priced by the chain and placed on the stream.
EIDOLON_EXPORT CUresult
cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
               unsigned int by, unsigned int bz, unsigned int sharedMem, CUstream stream, void**,
               void**)
{
    return Launch(f, Dim3{gx, gy, gz}, Dim3{bx, by, bz}, sharedMem, stream);
}

// Launch with a configuration struct (attributes such as clusters do not change the price).
EIDOLON_EXPORT CUresult
cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void**, void**)
{
    if (!config)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return Launch(f, Dim3{config->gridDimX, config->gridDimY, config->gridDimZ},
                  Dim3{config->blockDimX, config->blockDimY, config->blockDimZ},
                  config->sharedMemBytes, config->hStream);
}

// ---------------------------------------------------------------- memory

// Device memory on the current context's device (no backing store).
EIDOLON_EXPORT CUresult
cuMemAlloc_v2(CUdeviceptr* pointer, size_t bytes)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!pointer || bytes == 0)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!emu.DeviceCount())
    {
        return CUDA_ERROR_NO_DEVICE;
    }
    uint64_t address = emu.AllocateDevice(emu.CurrentDevice(), bytes, false);
    if (!address)
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pointer = address;
    emu.Clock().Charge(spec::HostCall::Malloc, bytes);
    return CUDA_SUCCESS;
}

// Frees device memory after the device's work (it synchronizes).
EIDOLON_EXPORT CUresult
cuMemFree_v2(CUdeviceptr pointer)
{
    ApiCall call(CallKind::Sync);
    Emulator& emu = call.Emu();
    int device = emu.DeviceOf(reinterpret_cast<const void*>(pointer));
    const Allocation* allocation = emu.FindAllocation(pointer);
    uint64_t bytes = allocation ? allocation->size : 0;
    if (device < 0 || !emu.FreeDevice(pointer))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    emu.SyncTo(emu.DeviceCompletion(device), "cuMemFree"); // like cudaFree, it waits for the device
    emu.Clock().Charge(spec::HostCall::Free, bytes);
    return CUDA_SUCCESS;
}

// Free and total memory of the current device.
EIDOLON_EXPORT CUresult
cuMemGetInfo_v2(size_t* free, size_t* total)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!free || !total)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!emu.DeviceCount())
    {
        return CUDA_ERROR_NO_DEVICE;
    }
    const Device& device = emu.DeviceAt(emu.CurrentDevice());
    *free = device.capacity - device.used;
    *total = device.capacity;
    return CUDA_SUCCESS;
}

// Pinned host memory: real memory.
EIDOLON_EXPORT CUresult
cuMemAllocHost_v2(void** pointer, size_t bytes)
{
    if (!pointer)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pointer = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    return *pointer ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

// Frees memory from cuMemAllocHost.
EIDOLON_EXPORT CUresult
cuMemFreeHost(void* pointer)
{
    std::free(pointer);
    return CUDA_SUCCESS;
}

// Blocking host-to-device copy (the bytes stored: core/host-backing.h).
EIDOLON_EXPORT CUresult
cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes)
{
    return CopyBytes(reinterpret_cast<void*>(dst), src, bytes, nullptr, true);
}

// Blocking device-to-host copy (what the host stored, zeros elsewhere).
EIDOLON_EXPORT CUresult
cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes)
{
    return CopyBytes(dst, reinterpret_cast<void*>(src), bytes, nullptr, true);
}

// Blocking device-to-device copy.
EIDOLON_EXPORT CUresult
cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return CopyBytes(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes, nullptr,
                     true);
}

// Copy between any two pointers (unified addressing).
EIDOLON_EXPORT CUresult
cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return CopyBytes(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes, nullptr,
                     true);
}

// Asynchronous host-to-device copy.
EIDOLON_EXPORT CUresult
cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream)
{
    return CopyBytes(reinterpret_cast<void*>(dst), src, bytes, stream, false);
}

// Asynchronous device-to-host copy.
EIDOLON_EXPORT CUresult
cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    return CopyBytes(dst, reinterpret_cast<void*>(src), bytes, stream, false);
}

// Asynchronous device-to-device copy.
EIDOLON_EXPORT CUresult
cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    return CopyBytes(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes, stream,
                     false);
}

// Asynchronous copy between any two pointers.
EIDOLON_EXPORT CUresult
cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    return CopyBytes(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), bytes, stream,
                     false);
}

// Sets bytes (asynchronous with respect to the host, like cudaMemset).
EIDOLON_EXPORT CUresult
cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count)
{
    return SetBytes(dst, value, count, nullptr);
}

// Sets 32-bit words.
EIDOLON_EXPORT CUresult
cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t count)
{
    return SetBytes(dst, int(value & 0xFF), count * 4, nullptr);
}

// Sets bytes on a stream.
EIDOLON_EXPORT CUresult
cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream)
{
    return SetBytes(dst, value, count, stream);
}

// Sets 32-bit words on a stream.
EIDOLON_EXPORT CUresult
cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream)
{
    return SetBytes(dst, int(value & 0xFF), count * 4, stream);
}

// Pointer attributes: memory type and device ordinal.
EIDOLON_EXPORT CUresult
cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!data)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const void* address = reinterpret_cast<const void*>(pointer);
    MemoryKind kind = emu.KindOf(address);
    switch (attribute)
    {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(data) =
            kind == MemoryKind::Host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return kind == MemoryKind::Host ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(data) = emu.DeviceOf(address);
        return kind == MemoryKind::Host ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *static_cast<CUdeviceptr*>(data) = pointer;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *static_cast<CUcontext*>(data) =
            kind == MemoryKind::Host ? nullptr : PrimaryContext(emu.DeviceOf(address));
        return kind == MemoryKind::Host ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

// Virtual memory: allocations are made in 2 MiB granules.
EIDOLON_EXPORT CUresult
cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp*,
                              CUmemAllocationGranularity_flags)
{
    if (!granularity)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *granularity = kGranularity;
    return CUDA_SUCCESS;
}

// Reserves a range of device virtual addresses (PROT_NONE: the host never touches it), which
// copies, memsets and NCCL treat as device memory of the current device (its data: host-backing.h).
EIDOLON_EXPORT CUresult
cuMemAddressReserve(CUdeviceptr* pointer, size_t size, size_t, CUdeviceptr, unsigned long long)
{
    ApiCall call(CallKind::Untimed);
    if (!pointer || size == 0)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    void* range =
        mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED)
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pointer = reinterpret_cast<CUdeviceptr>(range);
    if (call.Emu().DeviceCount() > 0)
    {
        call.Emu().AddVirtualRange(*pointer, size, call.Emu().CurrentDevice());
    }
    return CUDA_SUCCESS;
}

// Frees a reserved range.
EIDOLON_EXPORT CUresult
cuMemAddressFree(CUdeviceptr pointer, size_t size)
{
    ApiCall call(CallKind::Untimed);
    call.Emu().RemoveVirtualRange(pointer);
    return munmap(reinterpret_cast<void*>(pointer), size) == 0 ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_VALUE;
}

// Physical device memory: counted against the device's capacity, fails exactly past it.
EIDOLON_EXPORT CUresult
cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
            unsigned long long)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (!handle || !prop || size == 0 || size % kGranularity)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    int device = prop->location.id;
    if (device < 0 || device >= emu.DeviceCount())
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    if (!emu.ChargePhysical(device, size))
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    static CUmemGenericAllocationHandle next = 1;
    *handle = next++;
    PhysicalAllocations()[*handle] = {device, size};
    return CUDA_SUCCESS;
}

// Releases physical memory from cuMemCreate.
EIDOLON_EXPORT CUresult
cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ApiCall call(CallKind::Untimed);
    auto it = PhysicalAllocations().find(handle);
    if (it == PhysicalAllocations().end())
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    call.Emu().ReleasePhysical(it->second.first, it->second.second);
    PhysicalAllocations().erase(it);
    return CUDA_SUCCESS;
}

// Maps physical memory into a reserved range: recorded only (nothing is backed).
EIDOLON_EXPORT CUresult
cuMemMap(CUdeviceptr pointer, size_t, size_t, CUmemGenericAllocationHandle handle,
         unsigned long long)
{
    ApiCall call(CallKind::Untimed);
    return pointer && PhysicalAllocations().count(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Unmaps a range.
EIDOLON_EXPORT CUresult
cuMemUnmap(CUdeviceptr pointer, size_t)
{
    return pointer ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Access rights of a mapped range: accepted.
EIDOLON_EXPORT CUresult
cuMemSetAccess(CUdeviceptr pointer, size_t, const CUmemAccessDesc* desc, size_t count)
{
    return pointer && (desc || count == 0) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------- streams and events

// A stream on the current device.
EIDOLON_EXPORT CUresult
cuStreamCreate(CUstream* stream, unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    if (!stream)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!call.Emu().DeviceCount())
    {
        return CUDA_ERROR_NO_DEVICE;
    }
    *stream =
        reinterpret_cast<CUstream>(call.Emu().CreateStream(call.Emu().CurrentDevice(), flags, 0));
    return CUDA_SUCCESS;
}

// A stream with a priority.
EIDOLON_EXPORT CUresult
cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int)
{
    return cuStreamCreate(stream, flags);
}

// Destroys a stream.
EIDOLON_EXPORT CUresult
cuStreamDestroy_v2(CUstream stream)
{
    ApiCall call(CallKind::Untimed);
    return call.Emu().DestroyStream(reinterpret_cast<Stream*>(stream)) ? CUDA_SUCCESS
                                                                       : CUDA_ERROR_INVALID_HANDLE;
}

// Waits for a stream's work.
EIDOLON_EXPORT CUresult
cuStreamSynchronize(CUstream handle)
{
    ApiCall call(CallKind::Sync);
    Stream* stream = call.Emu().ResolveStream(static_cast<void*>(handle), false);
    if (!stream)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    call.Emu().SyncTo(call.Emu().StreamCompletion(*stream), "cuStreamSynchronize");
    call.Emu().Clock().Charge(spec::HostCall::StreamSynchronize);
    return CUDA_SUCCESS;
}

// Whether a stream's work is done at the current host time (polling loops become waits).
EIDOLON_EXPORT CUresult
cuStreamQuery(CUstream handle)
{
    ApiCall call(CallKind::Query);
    Emulator& emu = call.Emu();
    Stream* stream = emu.ResolveStream(static_cast<void*>(handle), false);
    if (!stream)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    // Not charged: queries are free (HostClock::NotReadyQuery).
    Ns completion = emu.Resolve(emu.StreamCompletion(*stream), "cuStreamQuery", true);
    if (completion <= emu.Clock().Now() ||
        emu.PollTurnsIntoWait(stream, emu.StreamCompletion(*stream), "cuStreamQuery"))
    {
        emu.PollSatisfied();
        return CUDA_SUCCESS;
    }
    emu.Clock().NotReadyQuery();
    return CUDA_ERROR_NOT_READY;
}

// An event.
EIDOLON_EXPORT CUresult
cuEventCreate(CUevent* event, unsigned int flags)
{
    ApiCall call(CallKind::Untimed);
    if (!event)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *event = reinterpret_cast<CUevent>(call.Emu().CreateEvent(flags));
    return CUDA_SUCCESS;
}

// Destroys an event.
EIDOLON_EXPORT CUresult
cuEventDestroy_v2(CUevent event)
{
    ApiCall call(CallKind::Untimed);
    return call.Emu().DestroyEvent(reinterpret_cast<Event*>(event)) ? CUDA_SUCCESS
                                                                    : CUDA_ERROR_INVALID_HANDLE;
}

// Records an event on a stream.
EIDOLON_EXPORT CUresult
cuEventRecord(CUevent handle, CUstream streamHandle)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    auto* event = reinterpret_cast<Event*>(handle);
    Stream* stream = emu.ResolveStream(static_cast<void*>(streamHandle), false);
    if (!emu.IsEvent(event) || !stream)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    emu.Clock().Charge((event->flags & kEventDisableTiming)
                           ? spec::HostCall::EventRecordDisableTiming
                           : spec::HostCall::EventRecord);
    emu.RecordEvent(*event, *stream);
    return CUDA_SUCCESS;
}

// Waits for an event.
EIDOLON_EXPORT CUresult
cuEventSynchronize(CUevent handle)
{
    ApiCall call(CallKind::Sync);
    auto* event = reinterpret_cast<Event*>(handle);
    if (!call.Emu().IsEvent(event))
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (event->recorded)
    {
        call.Emu().SyncTo(call.Emu().EventCompletion(*event), "cuEventSynchronize");
    }
    call.Emu().Clock().Charge(spec::HostCall::EventSynchronize);
    return CUDA_SUCCESS;
}

// Exact time between two completed events in milliseconds.
EIDOLON_EXPORT CUresult
cuEventElapsedTime_v2(float* ms, CUevent startHandle, CUevent endHandle)
{
    ApiCall call(CallKind::Query);
    Emulator& emu = call.Emu();
    auto* start = reinterpret_cast<Event*>(startHandle);
    auto* end = reinterpret_cast<Event*>(endHandle);
    if (!ms)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!emu.IsEvent(start) || !emu.IsEvent(end) || !start->recorded || !end->recorded)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    Ns startTime = emu.Resolve(emu.EventCompletion(*start), "cuEventElapsedTime", true);
    Ns endTime = emu.Resolve(emu.EventCompletion(*end), "cuEventElapsedTime", true);
    if (std::max(startTime, endTime) > emu.Clock().Now())
    {
        return CUDA_ERROR_NOT_READY;
    }
    *ms = static_cast<float>((endTime - startTime) / 1e6);
    return CUDA_SUCCESS;
}

// See cuEventElapsedTime_v2.
EIDOLON_EXPORT CUresult
cuEventElapsedTime(float* ms, CUevent start, CUevent end)
{
    return cuEventElapsedTime_v2(ms, start, end);
}

// Driver log callbacks (PyTorch registers one at start-up): accepted, and never called, since
// eidolon's driver writes no log entries. The handle only has to be distinct and non-null.
EIDOLON_EXPORT CUresult
cuLogsRegisterCallback(CUlogsCallback callback, void*, CUlogsCallbackHandle* handle)
{
    if (!callback || !handle)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    static std::atomic<uintptr_t> next{1};
    *handle = reinterpret_cast<CUlogsCallbackHandle>(next.fetch_add(1));
    return CUDA_SUCCESS;
}

// See cuLogsRegisterCallback.
EIDOLON_EXPORT CUresult
cuLogsUnregisterCallback(CUlogsCallbackHandle handle)
{
    return handle ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Called by the generated stubs of the driver entry points eidolon does not implement.
extern "C" int
eidolonDriverUnsupported(const char* api)
{
    WarnUnsupportedOnce(api, "CUDA_ERROR_NOT_SUPPORTED");
    return CUDA_ERROR_NOT_SUPPORTED;
}
