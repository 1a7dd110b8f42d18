// Shared helpers of the libcudart replacement: the per-thread last error and argument checks.
#pragma once

#include "../core/diagnostics.h"
#include "../core/emulator.h"

#include <cuda_runtime_api.h>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

namespace eidolon::gpu::rt
{

// CUDART_VERSION of the library being emulated (cudart-version.cc, compiled once per soname).
int CudartVersion();

// Records a failure as the thread's last error (as the runtime does) and returns it.
cudaError_t Fail(cudaError_t error);

// Returns `error`, recording it as the last error when it is not cudaSuccess.
inline cudaError_t
Result(cudaError_t error)
{
    return error == cudaSuccess ? error : Fail(error);
}

cudaError_t TakeLastError();
cudaError_t PeekLastError();

// cudaErrorNoDevice (recorded) when no GPU is emulated, cudaSuccess otherwise.
cudaError_t CheckReady(Emulator& emulator);

// Unsupported API: warns once naming it, returns (and records) cudaErrorNotSupported.
cudaError_t Unsupported(const char* api);

inline bool
ValidDevice(Emulator& emulator, int device)
{
    return device >= 0 && device < emulator.DeviceCount();
}

// The stream-ordered allocator's pools (mempool.cc): `bytes` at `pointer` were allocated on
// `device` from `pool` (null: the pool cudaMallocAsync uses there), or were freed.
void PoolAllocated(const void* pointer, uint64_t bytes, int device, cudaMemPool_t pool);
void PoolFreed(const void* pointer);

// The stream a handle names, or nullptr (invalid handle or no device).
inline Stream*
StreamOf(Emulator& emulator, cudaStream_t handle, bool perThreadDefault)
{
    return emulator.ResolveStream(static_cast<void*>(handle), perThreadDefault);
}

} // namespace eidolon::gpu::rt
