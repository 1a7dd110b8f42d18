// The part of NVML's C API that eidolon implements (libnvidia-ml.so.1, nvml.cc) and its
// nvidia-smi uses. nvml.h is not part of this CUDA toolkit, so the types are declared here with
// NVML's documented layouts.
#pragma once

// Exported from libnvidia-ml.so.1 (the library builds with hidden visibility).
#define EIDOLON_NVML_API __attribute__((visibility("default")))

extern "C"
{

    typedef enum nvmlReturn_enum
    {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_UNKNOWN = 999,
    } nvmlReturn_t;

    struct nvmlDevice_st
    {
        unsigned index;
    };
    typedef struct nvmlDevice_st* nvmlDevice_t;

    typedef struct nvmlMemory_st
    {
        unsigned long long total;
        unsigned long long free;
        unsigned long long used;
    } nvmlMemory_t;

    // PCI info of nvmlDeviceGetPciInfo_v2/_v3.
    typedef struct nvmlPciInfo_st
    {
        char busIdLegacy[16];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;
        unsigned int pciSubSystemId;
        char busId[32];
    } nvmlPciInfo_t;

    // PCI info of the original nvmlDeviceGetPciInfo.
    typedef struct nvmlPciInfoV1_st
    {
        char busId[16];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;
        unsigned int pciSubSystemId;
    } nvmlPciInfoV1_t;

    // A process using a device (nvmlDeviceGetComputeRunningProcesses): the original layout, and
    // the _v2/_v3 one with the MIG instance ids.
    typedef struct nvmlProcessInfo_v1_st
    {
        unsigned int pid;
        unsigned long long usedGpuMemory;
    } nvmlProcessInfo_v1_t;
    typedef struct nvmlProcessInfo_st
    {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
    } nvmlProcessInfo_t;

    EIDOLON_NVML_API nvmlReturn_t nvmlInit_v2();
    EIDOLON_NVML_API nvmlReturn_t nvmlShutdown();
    EIDOLON_NVML_API const char* nvmlErrorString(nvmlReturn_t result);
    EIDOLON_NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
    EIDOLON_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                nvmlDevice_t* device);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                    unsigned int length);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                          nvmlMemory_t* memory);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                    unsigned int length);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device,
                                                                     int* major, int* minor);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                                                   nvmlDevice_t* device);
    EIDOLON_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                          unsigned int* count,
                                                                          nvmlProcessInfo_t* infos);
}
