// Device attributes from the GPU spec, shared by the runtime (cudaDeviceAttr) and the driver
// (CUdevice_attribute has the same values).
#pragma once

#include "../core/emulator.h"

#include <cuda_runtime_api.h>

namespace eidolon::gpu
{

// PCI bus id of emulated device d: 0000:(0x18 + d*0x10):00.0, like the GPUs of a DGX board.
inline int
PciBusOf(int device)
{
    return 0x18 + device * 0x10;
}

// Value of one cudaDeviceAttr, from the spec; false when eidolon does not know it.
inline bool
AttributeValue(cudaDeviceAttr attr, const GpuSpec& spec, const Device& device, int& value)
{
    switch (attr)
    {
    case cudaDevAttrMaxThreadsPerBlock:
        value = 1024;
        return true;
    case cudaDevAttrMaxBlockDimX:
    case cudaDevAttrMaxBlockDimY:
        value = 1024;
        return true;
    case cudaDevAttrMaxBlockDimZ:
        value = 64;
        return true;
    case cudaDevAttrMaxGridDimX:
        value = 2147483647;
        return true;
    case cudaDevAttrMaxGridDimY:
    case cudaDevAttrMaxGridDimZ:
        value = 65535;
        return true;
    case cudaDevAttrMaxSharedMemoryPerBlock:
        value = 48 * 1024;
        return true;
    case cudaDevAttrTotalConstantMemory:
        value = 65536;
        return true;
    case cudaDevAttrWarpSize:
        value = 32;
        return true;
    case cudaDevAttrMaxRegistersPerBlock:
    case cudaDevAttrMaxRegistersPerMultiprocessor:
        value = 65536;
        return true;
    case cudaDevAttrClockRate:
        value = static_cast<int>(spec.boostClockMhz * 1000);
        return true;
    case cudaDevAttrMemoryClockRate:
        value = static_cast<int>(spec.memoryClockMhz * 1000);
        return true;
    case cudaDevAttrGlobalMemoryBusWidth:
        value = spec.memoryBusWidthBits;
        return true;
    case cudaDevAttrMultiProcessorCount:
        value = spec.smCount;
        return true;
    case cudaDevAttrComputeCapabilityMajor:
        value = spec.computeCapabilityMajor;
        return true;
    case cudaDevAttrComputeCapabilityMinor:
        value = spec.computeCapabilityMinor;
        return true;
    case cudaDevAttrL2CacheSize:
        value = static_cast<int>(spec.l2CacheBytes);
        return true;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
        value = spec.maxThreadsPerSm;
        return true;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
        value = static_cast<int>(spec.sharedMemoryPerSmBytes);
        return true;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        value = static_cast<int>(
            spec.sharedMemoryPerSmBytes > 1024 ? spec.sharedMemoryPerSmBytes - 1024 : 0);
        return true;
    case cudaDevAttrPciBusId:
        value = PciBusOf(device.index);
        return true;
    case cudaDevAttrPciDeviceId:
    case cudaDevAttrPciDomainId:
    case cudaDevAttrIntegrated:
    case cudaDevAttrTccDriver:
    case cudaDevAttrKernelExecTimeout:
        value = 0;
        return true;
    case cudaDevAttrConcurrentKernels:
    case cudaDevAttrEccEnabled:
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrCanMapHostMemory:
    case cudaDevAttrManagedMemory:
    case cudaDevAttrConcurrentManagedAccess:
    case cudaDevAttrStreamPrioritiesSupported:
    case cudaDevAttrGlobalL1CacheSupported:
    case cudaDevAttrLocalL1CacheSupported:
    case cudaDevAttrCooperativeLaunch:
    case cudaDevAttrComputePreemptionSupported:
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
    case cudaDevAttrHostRegisterSupported:
    case cudaDevAttrMemoryPoolsSupported:
        value = 1;
        return true;
    case cudaDevAttrAsyncEngineCount:
        value = 2;
        return true;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
        value = 32;
        return true;
    case cudaDevAttrComputeMode:
        value = cudaComputeModeDefault;
        return true;
    default:
        return false;
    }
}

} // namespace eidolon::gpu
