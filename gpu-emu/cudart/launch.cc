// Launch API family: registration of the program's kernels (what nvcc's generated code calls at
// start-up), the <<<>>> path, cudaLaunchKernel/ExC, host functions, function attributes.
#include "../core/fatbin.h"
#include "../core/per-thread.h"
#include "runtime-common.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

using namespace eidolon::gpu;
using namespace eidolon::gpu::rt;

namespace
{

struct CallConfiguration
{
    dim3 grid;
    dim3 block;
    size_t sharedMem;
    cudaStream_t stream;
};

PerThread<std::vector<CallConfiguration>> g_callConfigurations; // per-thread.h: no thread_local

// What __cudaRegisterFatBinary returns as the module handle.
struct Module
{
    void* fatCubin;
    std::unordered_map<std::string, int64_t> paramBytes; // mangled kernel name -> bytes
};

Dim3
ToDim3(dim3 d)
{
    return Dim3{d.x, d.y, d.z};
}

bool
ValidGeometry(dim3 grid, dim3 block)
{
    uint64_t threads = uint64_t(block.x) * block.y * block.z;
    return grid.x && grid.y && grid.z && threads && threads <= 1024 && block.z <= 64 &&
           grid.y <= 65535 && grid.z <= 65535;
}

// Prices a kernel by the cost-model chain and places it on the stream after the host's launch cost
// (higher on the legacy default stream, which orders itself with the device's blocking streams).
cudaError_t
LaunchKernel(KernelInfo* kernel, dim3 grid, dim3 block, size_t sharedMem, cudaStream_t handle,
             bool perThread, void** args)
{
    ApiCall call(CallKind::Submit);
    Emulator& emu = call.Emu();
    if (CheckReady(emu) != cudaSuccess)
    {
        return cudaErrorNoDevice;
    }
    if (!kernel)
    {
        return Fail(cudaErrorInvalidDeviceFunction);
    }
    if (!ValidGeometry(grid, block))
    {
        return Fail(cudaErrorInvalidConfiguration);
    }
    // More dynamic shared memory than a block can have is refused; the 48 KiB that needs no
    // opt-in is not enforced (a library that opts in through a path not seen here would fail).
    if (sharedMem > SharedMemPerBlockOptin(emu.Spec()))
    {
        return Fail(cudaErrorInvalidValue);
    }
    Stream* stream = StreamOf(emu, handle, perThread);
    if (!stream)
    {
        return Fail(cudaErrorInvalidResourceHandle);
    }
    // The argument values go to the pricing chain, which reads the sizes of the kernels whose
    // parameter layout it knows (core/kernel-families.cc).
    KernelLaunch launch{kernel, ToDim3(grid), ToDim3(block), sharedMem, kernel->argBytes, args};
    Price price = emu.Costs().PriceKernel(launch, emu.Spec());
    emu.Clock().Charge(stream->legacy ? spec::HostCall::LaunchKernelLegacyStream
                                      : spec::HostCall::LaunchKernel);
    ActivityLog::MarkLaunch(launch.grid, launch.block, uint32_t(sharedMem)); // for a profiler
    emu.Place(*stream, OpKind::Kernel, price.duration, kernel->name, price.provider, 0);
    emu.RunKernelData(*stream, launch);
    return cudaSuccess;
}

KernelInfo*
KernelOf(const void* hostFunction)
{
    std::lock_guard<std::mutex> lock(Emulator::Get().Mutex());
    return Emulator::Get().KernelByHostFunction(hostFunction);
}

// Runs a host function at its place in the stream: the op is placed, then the function is called
// (outside the emulator lock) before this call returns.
cudaError_t
LaunchHostFunction(cudaStream_t handle, void (*function)(void*), void* userData, bool perThread)
{
    {
        ApiCall call(CallKind::Submit);
        Emulator& emu = call.Emu();
        Stream* stream = StreamOf(emu, handle, perThread);
        if (!stream || !function)
        {
            return Fail(stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
        }
        emu.Clock().Charge(spec::HostCall::LaunchHostFunc);
        static const std::string label = "host function";
        emu.Place(*stream, OpKind::Kernel, 0, label, "host-function", 0);
    }
    function(userData);
    return cudaSuccess;
}

} // namespace

// ---------------------------------------------------------------- registration (nvcc start-up)

// Registers a fat binary; eidolon keeps no device code, only its kernels' parameter sizes.
EIDOLON_EXPORT void**
__cudaRegisterFatBinary(void* fatCubin)
{
    auto* module = new Module{fatCubin, KernelParamBytes(fatCubin)};
    return reinterpret_cast<void**>(module);
}

// End of a fat binary's registrations: nothing to finish.
EIDOLON_EXPORT void
__cudaRegisterFatBinaryEnd(void**)
{
}

// Unregisters a fat binary at exit: its kernels stay known (exit-time launches still price).
EIDOLON_EXPORT void
__cudaUnregisterFatBinary(void**)
{
}

// Maps a kernel's host stub to its (mangled) device name.
EIDOLON_EXPORT void
__cudaRegisterFunction(void** handle, const char* hostFun, char*, const char* deviceName, int,
                       uint3*, uint3*, dim3*, dim3*, int*)
{
    ApiCall call(CallKind::Untimed, /*join=*/false); // inside dlopen: never the simulator
    std::string name = deviceName ? deviceName : "";
    int64_t argBytes = -1;
    if (auto* module = reinterpret_cast<Module*>(handle))
    {
        auto it = module->paramBytes.find(name);
        argBytes = it == module->paramBytes.end() ? -1 : it->second;
    }
    call.Emu().RegisterKernel(hostFun, name, argBytes);
}

// Registers a __device__/__constant__ variable: its size, for copies to and from it.
EIDOLON_EXPORT void
__cudaRegisterVar(void**, char* hostVar, char*, const char*, int, size_t size, int, int)
{
    ApiCall call(CallKind::Untimed, /*join=*/false); // inside dlopen: never the simulator
    call.Emu().Symbols()[hostVar] = Symbol{size, {}};
}

// Registers a __managed__ variable: it gets real (zeroed) host memory the program may touch.
EIDOLON_EXPORT void
__cudaRegisterManagedVar(void**, void** hostVarPtrAddress, char*, const char*, int, size_t size,
                         int, int)
{
    if (hostVarPtrAddress)
    {
        *hostVarPtrAddress = std::calloc(1, size ? size : 1);
    }
}

// Texture and surface references are not emulated; registering them is harmless.
EIDOLON_EXPORT void
__cudaRegisterTexture(void**, const void*, const void**, const char*, int, int, int)
{
}

// See __cudaRegisterTexture.
EIDOLON_EXPORT void
__cudaRegisterSurface(void**, const void*, const void**, const char*, int, int)
{
}

// Initializes the managed runtime for a module: always succeeds.
EIDOLON_EXPORT char
__cudaInitModule(void**)
{
    return 1;
}

// <<<grid, block, shared, stream>>>: pushes the configuration the stub then pops.
EIDOLON_EXPORT unsigned
__cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                            struct CUstream_st* stream)
{
    g_callConfigurations.Get().push_back({gridDim, blockDim, sharedMem, stream});
    return 0;
}

// Pops the configuration pushed by __cudaPushCallConfiguration.
EIDOLON_EXPORT cudaError_t
__cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream)
{
    std::vector<CallConfiguration>& configurations = g_callConfigurations.Get();
    if (configurations.empty())
    {
        return Fail(cudaErrorInvalidConfiguration);
    }
    CallConfiguration configuration = configurations.back();
    configurations.pop_back();
    *gridDim = configuration.grid;
    *blockDim = configuration.block;
    *sharedMem = configuration.sharedMem;
    *static_cast<cudaStream_t*>(stream) = configuration.stream;
    return cudaSuccess;
}

// The kernel handle of a host stub (nvcc 13 launch path).
EIDOLON_EXPORT cudaError_t
__cudaGetKernel(cudaKernel_t* kernel, const void* hostFun)
{
    KernelInfo* info = KernelOf(hostFun);
    if (!kernel || !info)
    {
        return Fail(cudaErrorInvalidDeviceFunction);
    }
    *kernel = reinterpret_cast<cudaKernel_t>(info);
    return cudaSuccess;
}

// Public form of __cudaGetKernel.
EIDOLON_EXPORT cudaError_t
cudaGetKernel(cudaKernel_t* kernel, const void* entryFuncAddr)
{
    return __cudaGetKernel(kernel, entryFuncAddr);
}

// The function handle of a host stub (usable with cudaFuncGetAttributes and the driver).
EIDOLON_EXPORT cudaError_t
cudaGetFuncBySymbol(cudaFunction_t* function, const void* symbol)
{
    KernelInfo* info = KernelOf(symbol);
    if (!function || !info)
    {
        return Fail(function ? cudaErrorInvalidDeviceFunction : cudaErrorInvalidValue);
    }
    *function = reinterpret_cast<cudaFunction_t>(info);
    return cudaSuccess;
}

// Launches a kernel handle (nvcc 13 <<<>>> path).
EIDOLON_EXPORT cudaError_t
__cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                   cudaStream_t stream)
{
    return LaunchKernel(reinterpret_cast<KernelInfo*>(kernel), gridDim, blockDim, sharedMem, stream,
                        false, args);
}

// __cudaLaunchKernel with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
__cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                        size_t sharedMem, cudaStream_t stream)
{
    return LaunchKernel(reinterpret_cast<KernelInfo*>(kernel), gridDim, blockDim, sharedMem, stream,
                        true, args);
}

// Launches the kernel whose host stub is `func`.
EIDOLON_EXPORT cudaError_t
cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                 cudaStream_t stream)
{
    return LaunchKernel(KernelOf(func), gridDim, blockDim, sharedMem, stream, false, args);
}

// cudaLaunchKernel with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                      cudaStream_t stream)
{
    return LaunchKernel(KernelOf(func), gridDim, blockDim, sharedMem, stream, true, args);
}

// Launch with a configuration struct; launch attributes (clusters, priorities) do not change
// prices.
EIDOLON_EXPORT cudaError_t
cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args)
{
    if (!config)
    {
        return Fail(cudaErrorInvalidValue);
    }
    return LaunchKernel(KernelOf(func), config->gridDim, config->blockDim, config->dynamicSmemBytes,
                        config->stream, false, args);
}

// cudaLaunchKernelExC with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args)
{
    if (!config)
    {
        return Fail(cudaErrorInvalidValue);
    }
    return LaunchKernel(KernelOf(func), config->gridDim, config->blockDim, config->dynamicSmemBytes,
                        config->stream, true, args);
}

// Cooperative launch: priced like any launch.
EIDOLON_EXPORT cudaError_t
cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                            size_t sharedMem, cudaStream_t stream)
{
    return LaunchKernel(KernelOf(func), gridDim, blockDim, sharedMem, stream, false, args);
}

// Cooperative launch on the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                 size_t sharedMem, cudaStream_t stream)
{
    return LaunchKernel(KernelOf(func), gridDim, blockDim, sharedMem, stream, true, args);
}

// Enqueues a host function; it runs before this call returns (see LaunchHostFunction).
EIDOLON_EXPORT cudaError_t
cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData)
{
    return LaunchHostFunction(stream, fn, userData, false);
}

// cudaLaunchHostFunc with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void* userData)
{
    return LaunchHostFunction(stream, fn, userData, true);
}

namespace
{
struct StreamCallback
{
    cudaStreamCallback_t callback;
    cudaStream_t stream;
    void* userData;
};

void
RunStreamCallback(void* data)
{
    auto* callback = static_cast<StreamCallback*>(data);
    callback->callback(callback->stream, cudaSuccess, callback->userData);
}
} // namespace

// Legacy stream callback: like cudaLaunchHostFunc, with the stream and a status.
EIDOLON_EXPORT cudaError_t
cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                      unsigned int)
{
    StreamCallback data{callback, stream, userData};
    return callback ? LaunchHostFunction(stream, RunStreamCallback, &data, false)
                    : Fail(cudaErrorInvalidValue);
}

// cudaStreamAddCallback with a null stream meaning the per-thread default stream.
EIDOLON_EXPORT cudaError_t
cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                           unsigned int)
{
    StreamCallback data{callback, stream, userData};
    return callback ? LaunchHostFunction(stream, RunStreamCallback, &data, true)
                    : Fail(cudaErrorInvalidValue);
}

// Attributes of a kernel: the limits of the GPU, 32 registers, no static shared memory.
EIDOLON_EXPORT cudaError_t
cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func)
{
    KernelInfo* kernel = KernelOf(func);
    if (!attr || !kernel)
    {
        return Fail(attr ? cudaErrorInvalidDeviceFunction : cudaErrorInvalidValue);
    }
    const GpuSpec& spec = Emulator::Get().Spec();
    *attr = cudaFuncAttributes{};
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    attr->ptxVersion = spec.computeCapabilityMajor * 10 + spec.computeCapabilityMinor;
    attr->binaryVersion = attr->ptxVersion;
    attr->maxDynamicSharedSizeBytes = kernel->maxDynamicSharedBytes;
    return cudaSuccess;
}

// Kernel attributes: the dynamic shared memory it may use (up to what a block can opt in to),
// carveout and the rest accepted; prices ignore them.
EIDOLON_EXPORT cudaError_t
cudaFuncSetAttribute(const void* func, cudaFuncAttribute attribute, int value)
{
    KernelInfo* kernel = KernelOf(func);
    if (!kernel)
    {
        return Fail(cudaErrorInvalidDeviceFunction);
    }
    if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize)
    {
        if (value < 0 || uint64_t(value) > SharedMemPerBlockOptin(Emulator::Get().Spec()))
        {
            return Fail(cudaErrorInvalidValue);
        }
        kernel->maxDynamicSharedBytes = value;
    }
    return cudaSuccess;
}

// Cache preference of a kernel: accepted, no effect.
EIDOLON_EXPORT cudaError_t
cudaFuncSetCacheConfig(const void* func, cudaFuncCache)
{
    return KernelOf(func) ? cudaSuccess : Fail(cudaErrorInvalidDeviceFunction);
}

// The (mangled) device name of a kernel.
EIDOLON_EXPORT cudaError_t
cudaFuncGetName(const char** name, const void* func)
{
    KernelInfo* kernel = KernelOf(func);
    if (!name || !kernel)
    {
        return Fail(name ? cudaErrorInvalidDeviceFunction : cudaErrorInvalidValue);
    }
    *name = kernel->mangledName.c_str();
    return cudaSuccess;
}

// Resident blocks per SM, limited by threads, 32 blocks and shared memory.
EIDOLON_EXPORT cudaError_t
cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                       int blockSize, size_t dynamicSMemSize,
                                                       unsigned int)
{
    if (!numBlocks || blockSize <= 0)
    {
        return Fail(cudaErrorInvalidValue);
    }
    if (!KernelOf(func))
    {
        return Fail(cudaErrorInvalidDeviceFunction);
    }
    const GpuSpec& spec = Emulator::Get().Spec();
    int blocks = std::min(32, spec.maxThreadsPerSm / blockSize);
    if (dynamicSMemSize > 0)
    {
        blocks =
            std::min<int>(blocks, static_cast<int>(spec.sharedMemoryPerSmBytes / dynamicSMemSize));
    }
    *numBlocks = blocks;
    return cudaSuccess;
}

// See cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags.
EIDOLON_EXPORT cudaError_t
cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                              size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                  dynamicSMemSize, 0);
}
