// libnvidia-ml.so.1 replacement: the NVML basics frameworks query (device count, handles, name,
// memory, UUID, PCI info, versions). NVML only looks at the GPUs: it never joins the simulator
// (Emulator::Local), so a process that only monitors them (nvidia-smi) is no rank.
#include "nvml-api.h"

#include "../core/diagnostics.h"
#include "../core/emulator.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

using namespace eidolon::gpu;

namespace
{

constexpr unsigned kMaxDevices = 64;
constexpr unsigned kH100PciDeviceId = 0x233010DE; // device 0x2330 (H100 SXM5), vendor 0x10DE
bool g_initialized = false;

nvmlDevice_st*
Handle(unsigned index)
{
    static nvmlDevice_st handles[kMaxDevices];
    handles[index].index = index;
    return &handles[index];
}

bool
Valid(nvmlDevice_t device)
{
    return g_initialized && device && device->index < unsigned(Emulator::Local().DeviceCount());
}

unsigned
BusOf(unsigned index)
{
    return 0x18 + index * 0x10; // same numbering as the runtime's PCI bus ids
}

std::string
UuidOf(unsigned index)
{
    unsigned char bytes[16];
    for (int i = 0; i < 16; ++i)
    {
        bytes[i] = static_cast<unsigned char>(0xE1 ^ (i * 17) ^ index);
    }
    char text[64];
    std::snprintf(text, sizeof(text),
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                  bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14],
                  bytes[15]);
    return text;
}

nvmlReturn_t
CopyString(const std::string& value, char* buffer, unsigned length)
{
    if (!buffer)
    {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (value.size() + 1 > length)
    {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::memcpy(buffer, value.c_str(), value.size() + 1);
    return NVML_SUCCESS;
}

} // namespace

// Initializes NVML: fails (driver not loaded) when the GPU spec did not load.
EIDOLON_EXPORT nvmlReturn_t
nvmlInit_v2()
{
    if (!Emulator::Local().Ready())
    {
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    g_initialized = true;
    return NVML_SUCCESS;
}

// Original name of nvmlInit_v2.
EIDOLON_EXPORT nvmlReturn_t
nvmlInit()
{
    return nvmlInit_v2();
}

// nvmlInit_v2 with flags (ignored).
EIDOLON_EXPORT nvmlReturn_t
nvmlInitWithFlags(unsigned int)
{
    return nvmlInit_v2();
}

// Shuts NVML down.
EIDOLON_EXPORT nvmlReturn_t
nvmlShutdown()
{
    if (!g_initialized)
    {
        return NVML_ERROR_UNINITIALIZED;
    }
    g_initialized = false;
    return NVML_SUCCESS;
}

// Description of a return code.
EIDOLON_EXPORT const char*
nvmlErrorString(nvmlReturn_t result)
{
    switch (result)
    {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    default:
        return "Unknown Error";
    }
}

// Number of emulated GPUs.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int* count)
{
    if (!g_initialized)
    {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (!count)
    {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *count = std::min<unsigned>(unsigned(Emulator::Local().DeviceCount()), kMaxDevices);
    return NVML_SUCCESS;
}

// Original name of nvmlDeviceGetCount_v2.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetCount(unsigned int* count)
{
    return nvmlDeviceGetCount_v2(count);
}

// Handle of the device with this index.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device)
{
    if (!g_initialized)
    {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (!device || index >= unsigned(Emulator::Local().DeviceCount()) || index >= kMaxDevices)
    {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = Handle(index);
    return NVML_SUCCESS;
}

// Original name of nvmlDeviceGetHandleByIndex_v2.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

// Handle of the device at a PCI bus id ("domain:bus:device.function", as
// cudaDeviceGetPCIBusId and nvmlDeviceGetPciInfo write it, any case, domain of 4 or 8 digits).
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device)
{
    if (!g_initialized)
    {
        return NVML_ERROR_UNINITIALIZED;
    }
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    if (!pciBusId || !device ||
        std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4)
    {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    const unsigned count =
        std::min<unsigned>(unsigned(Emulator::Local().DeviceCount()), kMaxDevices);
    for (unsigned index = 0; index < count; ++index)
    {
        if (domain == 0 && bus == BusOf(index) && slot == 0 && function == 0)
        {
            *device = Handle(index);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

// Original name of nvmlDeviceGetHandleByPciBusId_v2.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

namespace
{
// The processes using a device, as NVML lists them: this process, where it holds device memory
// (each rank process sees only itself; with one process per GPU that is the whole list). `fill`
// writes entry i. Fewer entries than processes: NVML_ERROR_INSUFFICIENT_SIZE, `*count` the
// number needed.
template<typename Info>
nvmlReturn_t
RunningProcesses(nvmlDevice_t device, unsigned int* count, Info* infos)
{
    if (!Valid(device) || !count)
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    ApiCall call(CallKind::Untimed, false);
    const uint64_t used = call.Emu().DeviceAt(int(device->index)).used;
    const unsigned needed = used > 0 ? 1 : 0;
    if (*count < needed || (needed > 0 && !infos))
    {
        *count = needed;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = needed;
    if (needed > 0)
    {
        Info info{};
        info.pid = unsigned(getpid());
        info.usedGpuMemory = used;
        if constexpr (sizeof(Info) > sizeof(nvmlProcessInfo_v1_t))
        {
            info.gpuInstanceId = info.computeInstanceId = 0xFFFFFFFFu; // no MIG
        }
        infos[0] = info;
    }
    return NVML_SUCCESS;
}
} // namespace

// Processes using a device (compute contexts), current layout.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                        nvmlProcessInfo_t* infos)
{
    return RunningProcesses(device, count, infos);
}

// Processes using a device, the original layout (PyTorch's out-of-memory message reads it).
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                     nvmlProcessInfo_v1_t* infos)
{
    return RunningProcesses(device, count, infos);
}

// Index of a device.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index)
{
    if (!Valid(device) || !index)
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    *index = device->index;
    return NVML_SUCCESS;
}

// Marketing name of the GPU model.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length)
{
    if (!Valid(device))
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    return CopyString(Emulator::Local().Spec().marketingName, name, length);
}

// Memory of a device: its capacity, and what the program holds on it.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory)
{
    if (!Valid(device) || !memory)
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    ApiCall call(CallKind::Untimed, false);
    const Device& state = call.Emu().DeviceAt(int(device->index));
    memory->total = state.capacity;
    memory->used = state.used;
    memory->free = state.capacity - state.used;
    return NVML_SUCCESS;
}

// UUID string "GPU-xxxxxxxx-..." (the bytes of cudaDeviceProp::uuid).
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length)
{
    if (!Valid(device))
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    return CopyString(UuidOf(device->index), uuid, length);
}

// PCI information (current layout).
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci)
{
    if (!Valid(device) || !pci)
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    std::memset(pci, 0, sizeof(*pci));
    pci->bus = BusOf(device->index);
    pci->pciDeviceId = kH100PciDeviceId;
    std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
    std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}

// PCI information (same layout as _v3).
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci)
{
    return nvmlDeviceGetPciInfo_v3(device, pci);
}

// PCI information (original layout).
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfoV1_t* pci)
{
    if (!Valid(device) || !pci)
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    std::memset(pci, 0, sizeof(*pci));
    pci->bus = BusOf(device->index);
    pci->pciDeviceId = kH100PciDeviceId;
    std::snprintf(pci->busId, sizeof(pci->busId), "0000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}

// Compute capability of a device.
EIDOLON_EXPORT nvmlReturn_t
nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor)
{
    if (!Valid(device) || !major || !minor)
    {
        return g_initialized ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    }
    *major = Emulator::Local().Spec().computeCapabilityMajor;
    *minor = Emulator::Local().Spec().computeCapabilityMinor;
    return NVML_SUCCESS;
}

// Version of the emulated driver.
EIDOLON_EXPORT nvmlReturn_t
nvmlSystemGetDriverVersion(char* version, unsigned int length)
{
    return CopyString("580.65.06", version, length);
}

// CUDA version the emulated driver supports (1000 * major + 10 * minor).
EIDOLON_EXPORT nvmlReturn_t
nvmlSystemGetCudaDriverVersion_v2(int* version)
{
    if (!version)
    {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *version = 13000;
    return NVML_SUCCESS;
}

// Original name of nvmlSystemGetCudaDriverVersion_v2.
EIDOLON_EXPORT nvmlReturn_t
nvmlSystemGetCudaDriverVersion(int* version)
{
    return nvmlSystemGetCudaDriverVersion_v2(version);
}

// Called by the generated stubs of the NVML entry points eidolon does not implement.
extern "C" int
eidolonNvmlUnsupported(const char* api)
{
    WarnUnsupportedOnce(api, "NVML_ERROR_NOT_SUPPORTED");
    return NVML_ERROR_NOT_SUPPORTED;
}
