// Memory and registration: ncclMemAlloc/ncclMemFree take device memory through the emulator's
// allocator (so it counts against the device's capacity, like cudaMalloc); buffer and window
// registration is bookkeeping only (registration changes which algorithms NCCL may use, which the
// simulator does not model per buffer).
#include "nccl-common.h"

#include <algorithm>

using namespace eidolon::gpu;
using namespace eidolon::gpu::nccl;

namespace
{

// NCCL allocates with cuMemCreate in multiples of the allocation granularity (2 MiB, the value
// eidolon's cuMemGetAllocationGranularity reports).
constexpr uint64_t kGranularity = 2ull << 20;

} // namespace

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (ncclResult_t rc = CheckPtr(ptr, "ncclMemAlloc", "ptr"))
    {
        return rc;
    }
    *ptr = nullptr;
    if (size == 0)
    {
        return ncclSuccess;
    }
    if (!emu.Ready() || emu.DeviceCount() == 0)
    {
        return Fail(ncclUnhandledCudaError, "memalloc:nodevice",
                    "Cuda failure 'no CUDA-capable device is detected'");
    }
    uint64_t rounded = (uint64_t(size) + kGranularity - 1) / kGranularity * kGranularity;
    uint64_t address = emu.AllocateDevice(emu.CurrentDevice(), rounded, false);
    if (!address)
    {
        return Fail(ncclUnhandledCudaError, "memalloc:oom",
                    "ncclMemAlloc: Cuda failure 2 'out of memory' (" + std::to_string(rounded) +
                        " bytes on device " + std::to_string(emu.CurrentDevice()) + ")");
    }
    *ptr = reinterpret_cast<void*>(address);
    return ncclSuccess;
}

// Frees memory from ncclMemAlloc (or cudaMalloc, as NCCL's fallback does); null is a no-op.
NCCL_API(ncclResult_t, ncclMemFree, void* ptr)
{
    ApiCall call(CallKind::Untimed);
    if (!ptr)
    {
        return ncclSuccess;
    }
    const Allocation* allocation = call.Emu().FindAllocation(reinterpret_cast<uint64_t>(ptr));
    if (!allocation || allocation->managed ||
        !call.Emu().FreeDevice(reinterpret_cast<uint64_t>(ptr)))
    {
        return Fail(ncclUnhandledCudaError, "memfree:invalid",
                    "ncclMemFree: Cuda failure 1 'invalid argument' (not a device allocation)");
    }
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "ncclCommRegister"))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(handle, "ncclCommRegister", "handle"))
    {
        return rc;
    }
    auto* registration = new ncclRegistration{buff, size};
    comm->registrations.push_back(registration);
    *handle = registration;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "ncclCommDeregister"))
    {
        return rc;
    }
    auto& registrations = comm->registrations;
    auto it = std::find(registrations.begin(), registrations.end(), handle);
    if (it == registrations.end())
    {
        return Fail(ncclInvalidArgument, "deregister:handle",
                    "ncclCommDeregister : handle was not registered on this communicator");
    }
    delete *it;
    registrations.erase(it);
    return ncclSuccess;
}

// Collective in NCCL (every rank registers its part of a symmetric window); bookkeeping here.
NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "ncclCommWindowRegister"))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(win, "ncclCommWindowRegister", "win"))
    {
        return rc;
    }
    if (winFlags & ~(NCCL_WIN_DEFAULT | NCCL_WIN_COLL_SYMMETRIC))
    {
        return Fail(ncclInvalidArgument, "window:flags",
                    "ncclCommWindowRegister : invalid flags " + std::to_string(winFlags));
    }
    auto* window = new ncclWindow_vidmem{comm, buff, size, winFlags};
    comm->windows.push_back(window);
    *win = window;
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "ncclCommWindowDeregister"))
    {
        return rc;
    }
    auto& windows = comm->windows;
    auto it = std::find(windows.begin(), windows.end(), win);
    if (it == windows.end())
    {
        return Fail(ncclInvalidArgument, "window:handle",
                    "ncclCommWindowDeregister : window was not registered on this communicator");
    }
    delete *it;
    windows.erase(it);
    return ncclSuccess;
}
