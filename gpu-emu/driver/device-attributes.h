// Device attributes from the GPU spec: the driver's table (CUdevice_attribute), which the runtime
// uses too (cudaDeviceAttr has the same values), as NVIDIA's runtime sits on the driver.
#pragma once

#include "../core/emulator.h"

#include <cuda.h>

namespace eidolon::gpu
{

// PCI bus id of emulated device d: 0000:(0x18 + d*0x10):00.0, like the GPUs of a DGX board.
inline int
PciBusOf(int device)
{
    return 0x18 + device * 0x10;
}

// Value of one device attribute, from the spec; false when eidolon does not know it.
inline bool
AttributeValue(CUdevice_attribute attr, const GpuSpec& spec, const Device& device, int& value)
{
    switch (attr)
    {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        value = 1024;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        value = 1024;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        value = 64;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        value = 2147483647;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        value = 65535;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        value = 48 * 1024;
        return true;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        value = 65536;
        return true;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        value = 32;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        value = 65536;
        return true;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        value = static_cast<int>(spec.boostClockMhz * 1000);
        return true;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        value = static_cast<int>(spec.memoryClockMhz * 1000);
        return true;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        value = spec.memoryBusWidthBits;
        return true;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        value = spec.smCount;
        return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        value = spec.computeCapabilityMajor;
        return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        value = spec.computeCapabilityMinor;
        return true;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        value = static_cast<int>(spec.l2CacheBytes);
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        value = spec.maxThreadsPerSm;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        value = static_cast<int>(spec.sharedMemoryPerSmBytes);
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        value = static_cast<int>(SharedMemPerBlockOptin(spec));
        return true;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
        value = spec.computeCapabilityMajor >= 9 ? 1 : 0; // thread-block clusters from Hopper
        return true;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        value = PciBusOf(device.index);
        return true;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
        value = 0;
        return true;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        value = 1;
        return true;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        value = 2;
        return true;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        value = 32;
        return true;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        value = CU_COMPUTEMODE_DEFAULT;
        return true;
    default:
        return false;
    }
}

} // namespace eidolon::gpu
