// NVML basics against libnvidia-ml.so.1 from gpu-emu (no nvml.h in this toolkit: the few
// prototypes are declared here as NVML documents them).
#define BOOST_TEST_MODULE gpu_emu_nvml
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstring>

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
