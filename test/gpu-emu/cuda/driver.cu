// The driver API as Triton and PyTorch use it: devices, contexts, cuGetProcAddress (directly and
// through cudaGetDriverEntryPoint), modules loaded by name, cuLaunchKernel, virtual memory.
#include "check.h"

#include <cstring>
#include <cuda.h>

int
main()
{
    CHECK(cuInit(0) == CUDA_SUCCESS);
    int count = 0, value = 0;
    CHECK(cuDeviceGetCount(&count) == CUDA_SUCCESS && count == 1);
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0) == CUDA_SUCCESS);
    CHECK(cuDeviceGet(&device, 1) == CUDA_ERROR_INVALID_DEVICE);
    char name[256];
    CHECK(cuDeviceGetName(name, sizeof(name), 0) == CUDA_SUCCESS &&
          std::strcmp(name, "eidolon test GPU") == 0);
    CHECK(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) ==
          CUDA_SUCCESS);
    CHECK(value == kSmCount);
    CUcontext context = nullptr;
    CHECK(cuDevicePrimaryCtxRetain(&context, 0) == CUDA_SUCCESS && context);
    CHECK(cuCtxSetCurrent(context) == CUDA_SUCCESS);
    CUcontext current = nullptr;
    CHECK(cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context);

    // cuGetProcAddress gives the newest version of a symbol; the runtime forwards to it.
    void* function = nullptr;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress("cuMemAlloc", &function, 12000, 0, &status) == CUDA_SUCCESS);
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS &&
          function == reinterpret_cast<void*>(&cuMemAlloc_v2));
    CHECK(cuGetProcAddress("cuNoSuchCall", &function, 12000, 0, &status) == CUDA_ERROR_NOT_FOUND);
    cudaDriverEntryPointQueryResult runtimeStatus;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &function, 12000,
                                                cudaEnableDefault, &runtimeStatus));
    CHECK(runtimeStatus == cudaDriverEntryPointSuccess &&
          function == reinterpret_cast<void*>(&cuLaunchKernel));

    // A module loaded from an image; its kernel found by name and priced by the roofline
    // (1e6 threads of a generic kernel: 16 us).
    const char image[] = "not a real cubin";
    CUmodule module;
    CHECK(cuModuleLoadData(&module, image) == CUDA_SUCCESS);
    CUfunction kernel;
    CHECK(cuModuleGetFunction(&kernel, module, "triton_poi_fused_0") == CUDA_SUCCESS);
    CHECK(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel) == CUDA_SUCCESS);
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CUevent start, stop;
    CHECK(cuEventCreate(&start, 0) == CUDA_SUCCESS && cuEventCreate(&stop, 0) == CUDA_SUCCESS);
    CHECK(cuEventRecord(start, stream) == CUDA_SUCCESS);
    CHECK(cuLaunchKernel(kernel, 1000, 1, 1, 1000, 1, 1, 0, stream, nullptr, nullptr) ==
          CUDA_SUCCESS);
    CHECK(cuEventRecord(stop, stream) == CUDA_SUCCESS);
    CHECK(cuEventSynchronize(stop) == CUDA_SUCCESS);
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, start, stop) == CUDA_SUCCESS);
    CHECK_NEAR(ms, (kLaunchOverheadUs + 16.0) / 1e3, 1e-6);
    CHECK(cuModuleUnload(module) == CUDA_SUCCESS);

    // Virtual memory: physical allocations count against capacity (1 GiB), exactly.
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granularity = 0;
    CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
          CUDA_SUCCESS);
    CHECK(granularity == (2u << 20));
    CUmemGenericAllocationHandle all, more;
    CHECK(cuMemCreate(&all, size_t(1) << 30, &prop, 0) == CUDA_SUCCESS);
    CHECK(cuMemCreate(&more, granularity, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr range;
    CHECK(cuMemAddressReserve(&range, size_t(1) << 30, 0, 0, 0) == CUDA_SUCCESS);
    CHECK(cuMemMap(range, size_t(1) << 30, 0, all, 0) == CUDA_SUCCESS);
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(cuMemSetAccess(range, size_t(1) << 30, &access, 1) == CUDA_SUCCESS);
    size_t freeBytes = 0, total = 0;
    CHECK(cuMemGetInfo(&freeBytes, &total) == CUDA_SUCCESS && freeBytes == 0);
    // A mapped range is device memory to copies: what the host wrote there reads back.
    const int written[4] = {11, 22, 33, 44};
    int readBack[4] = {};
    CHECK(cuMemcpyHtoD(range + 4096, written, sizeof(written)) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoH(readBack, range + 4096, sizeof(readBack)) == CUDA_SUCCESS);
    CHECK(readBack[0] == 11 && readBack[3] == 44);
    CHECK(cuMemUnmap(range, size_t(1) << 30) == CUDA_SUCCESS);
    CHECK(cuMemRelease(all) == CUDA_SUCCESS);
    CHECK(cuMemAddressFree(range, size_t(1) << 30) == CUDA_SUCCESS);
    CHECK(cuMemGetInfo(&freeBytes, &total) == CUDA_SUCCESS && freeBytes == total);

    // An unsupported driver call returns CUDA_ERROR_NOT_SUPPORTED.
    CUarray array;
    CUDA_ARRAY_DESCRIPTOR arrayDesc = {};
    CHECK(cuArrayCreate(&array, &arrayDesc) == CUDA_ERROR_NOT_SUPPORTED);
    const char* text = nullptr;
    CHECK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text) == CUDA_SUCCESS &&
          std::strcmp(text, "CUDA_ERROR_OUT_OF_MEMORY") == 0);

    // Log callbacks (PyTorch registers one): accepted with distinct handles, never called.
    CUlogsCallback callback = [](void*, CUlogLevel, char*, size_t) {};
    CUlogsCallbackHandle first = nullptr, second = nullptr;
    CHECK(cuLogsRegisterCallback(callback, nullptr, &first) == CUDA_SUCCESS && first);
    CHECK(cuLogsRegisterCallback(callback, nullptr, &second) == CUDA_SUCCESS && second != first);
    CHECK(cuLogsRegisterCallback(nullptr, nullptr, &first) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLogsUnregisterCallback(first) == CUDA_SUCCESS);
    return Finish("driver");
}
