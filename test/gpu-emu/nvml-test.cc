// NVML basics against libnvidia-ml.so.1 from gpu-emu (no nvml.h in this toolkit: the few
// prototypes are declared here as NVML documents them).
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

static int g_failures = 0;
#define CHECK(cond)                                                                                \
    do                                                                                             \
    {                                                                                              \
        if (!(cond))                                                                               \
        {                                                                                          \
            std::printf("%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                   \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

int
main()
{
    unsigned count = 0;
    CHECK(nvmlDeviceGetCount_v2(&count) == 1); // NVML_ERROR_UNINITIALIZED before nvmlInit
    CHECK(nvmlInit_v2() == 0);
    CHECK(nvmlDeviceGetCount_v2(&count) == 0 && count == 2);
    nvmlDevice_t device;
    CHECK(nvmlDeviceGetHandleByIndex_v2(1, &device) == 0);
    CHECK(nvmlDeviceGetHandleByIndex_v2(2, &device) == 2);
    CHECK(nvmlDeviceGetHandleByIndex_v2(1, &device) == 0);
    char text[96];
    CHECK(nvmlDeviceGetName(device, text, sizeof(text)) == 0 &&
          std::strcmp(text, "eidolon test GPU") == 0);
    CHECK(nvmlDeviceGetName(device, text, 4) == 7); // NVML_ERROR_INSUFFICIENT_SIZE
    nvmlMemory_t memory;
    CHECK(nvmlDeviceGetMemoryInfo(device, &memory) == 0);
    CHECK(memory.total == (1ull << 30) && memory.free == memory.total && memory.used == 0);
    CHECK(nvmlDeviceGetUUID(device, text, sizeof(text)) == 0 &&
          std::strncmp(text, "GPU-", 4) == 0 && std::strlen(text) == 40);
    nvmlPciInfo_t pci;
    CHECK(nvmlDeviceGetPciInfo_v3(device, &pci) == 0 && pci.bus == 0x28 &&
          std::strcmp(pci.busId, "00000000:28:00.0") == 0);
    unsigned power = 0;
    CHECK(nvmlDeviceGetPowerUsage(device, &power) == 3); // NVML_ERROR_NOT_SUPPORTED
    CHECK(std::strcmp(nvmlErrorString(3), "Not Supported") == 0);
    CHECK(nvmlShutdown() == 0);
    std::printf("nvml: %s (%d failures)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
}
