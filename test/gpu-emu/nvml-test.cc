// NVML basics against libnvidia-ml.so.1 from gpu-emu (no nvml.h in this toolkit: the few
// prototypes are declared here as NVML documents them).
#define BOOST_TEST_MODULE gpu_emu_nvml
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstring>

#include <unistd.h>

extern "C"
{
    typedef struct nvmlDevice_st* nvmlDevice_t;
    typedef struct
    {
        unsigned long long total, free, used;
    } nvmlMemory_t;
    typedef struct
    {
        char busIdLegacy[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
    } nvmlPciInfo_t;
    int nvmlInit_v2();
    int nvmlShutdown();
    int nvmlDeviceGetCount_v2(unsigned int*);
    int nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t*);
    int nvmlDeviceGetName(nvmlDevice_t, char*, unsigned int);
    int nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);
    int nvmlDeviceGetUUID(nvmlDevice_t, char*, unsigned int);
    int nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t*);
    int nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int*);
    const char* nvmlErrorString(int);
    typedef struct
    {
        unsigned int pid;
        unsigned long long usedGpuMemory;
    } nvmlProcessInfo_v1_t;
    int nvmlDeviceGetHandleByPciBusId_v2(const char*, nvmlDevice_t*);
    int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*);
    // The runtime's, to hold memory on a device.
    int cudaSetDevice(int);
    int cudaMalloc(void**, size_t);
    int cudaFree(void*);
}

BOOST_AUTO_TEST_CASE(nvml_basics)
{
    unsigned count = 0;
    BOOST_TEST(nvmlDeviceGetCount_v2(&count) == 1); // NVML_ERROR_UNINITIALIZED before nvmlInit
    BOOST_TEST(nvmlInit_v2() == 0);
    BOOST_TEST((nvmlDeviceGetCount_v2(&count) == 0 && count == 2));
    nvmlDevice_t device;
    BOOST_TEST(nvmlDeviceGetHandleByIndex_v2(1, &device) == 0);
    BOOST_TEST(nvmlDeviceGetHandleByIndex_v2(2, &device) == 2);
    BOOST_TEST(nvmlDeviceGetHandleByIndex_v2(1, &device) == 0);
    char text[96];
    BOOST_TEST((nvmlDeviceGetName(device, text, sizeof(text)) == 0 &&
                std::strcmp(text, "eidolon test GPU") == 0));
    BOOST_TEST(nvmlDeviceGetName(device, text, 4) == 7); // NVML_ERROR_INSUFFICIENT_SIZE
    nvmlMemory_t memory;
    BOOST_TEST(nvmlDeviceGetMemoryInfo(device, &memory) == 0);
    BOOST_TEST((memory.total == (1ull << 30) && memory.free == memory.total && memory.used == 0));
    BOOST_TEST((nvmlDeviceGetUUID(device, text, sizeof(text)) == 0 &&
                std::strncmp(text, "GPU-", 4) == 0 && std::strlen(text) == 40));
    nvmlPciInfo_t pci;
    BOOST_TEST((nvmlDeviceGetPciInfo_v3(device, &pci) == 0 && pci.bus == 0x28 &&
                std::strcmp(pci.busId, "00000000:28:00.0") == 0));
    unsigned power = 0;
    BOOST_TEST(nvmlDeviceGetPowerUsage(device, &power) == 3); // NVML_ERROR_NOT_SUPPORTED
    BOOST_TEST(std::strcmp(nvmlErrorString(3), "Not Supported") == 0);
    BOOST_TEST(nvmlShutdown() == 0);
}

// What PyTorch's out-of-memory message asks NVML: the device at the runtime's PCI bus id, and the
// processes using it with their memory ("this process has X GiB memory in use").
BOOST_AUTO_TEST_CASE(a_device_by_bus_id_and_the_processes_using_it)
{
    BOOST_TEST(nvmlInit_v2() == 0);
    nvmlDevice_t first = nullptr, second = nullptr, found = nullptr;
    BOOST_TEST(nvmlDeviceGetHandleByIndex_v2(0, &first) == 0);
    BOOST_TEST(nvmlDeviceGetHandleByIndex_v2(1, &second) == 0);
    // Buses 0x18 and 0x28 (0x18 + 0x10 per device); the domain in 4 or 8 digits, any case.
    BOOST_TEST(
        (nvmlDeviceGetHandleByPciBusId_v2("00000000:28:00.0", &found) == 0 && found == second));
    BOOST_TEST((nvmlDeviceGetHandleByPciBusId_v2("0000:18:00.0", &found) == 0 && found == first));
    BOOST_TEST(nvmlDeviceGetHandleByPciBusId_v2("0000:99:00.0", &found) == 6); // NOT_FOUND
    BOOST_TEST(nvmlDeviceGetHandleByPciBusId_v2("bus 28", &found) == 2);       // INVALID_ARGUMENT
    // 64 MiB on device 1, nothing on device 0.
    void* memory = nullptr;
    BOOST_TEST(cudaSetDevice(1) == 0);
    BOOST_TEST(cudaMalloc(&memory, 64u << 20) == 0);
    unsigned count = 0;
    BOOST_TEST(nvmlDeviceGetComputeRunningProcesses(second, &count, nullptr) == 7); // too small
    BOOST_TEST(count == 1u);
    nvmlProcessInfo_v1_t infos[2] = {};
    count = 2;
    BOOST_TEST(nvmlDeviceGetComputeRunningProcesses(second, &count, infos) == 0);
    BOOST_TEST(count == 1u);
    BOOST_TEST(infos[0].pid == unsigned(getpid()));
    BOOST_TEST(infos[0].usedGpuMemory == (64ull << 20));
    count = 2;
    BOOST_TEST(nvmlDeviceGetComputeRunningProcesses(first, &count, infos) == 0);
    BOOST_TEST(count == 0u);
    BOOST_TEST(cudaFree(memory) == 0);
    BOOST_TEST(nvmlShutdown() == 0);
}
