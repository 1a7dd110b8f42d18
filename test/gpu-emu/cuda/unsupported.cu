// An API eidolon does not implement returns cudaErrorNotSupported, warns once on stderr, and the
// program goes on.
#include "check.h"

#include <string>

__global__ void
spin(float*)
{
}

int
main()
{
    cudaArray_t array = nullptr;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    CHECK_EQ_ERR(cudaMallocArray(&array, &desc, 16, 16, 0), cudaErrorNotSupported);
    CHECK_EQ_ERR(cudaGetLastError(), cudaErrorNotSupported);
    CHECK_EQ_ERR(cudaMallocArray(&array, &desc, 16, 16, 0), cudaErrorNotSupported); // warns once
    cudaGetLastError();
    int handle = 0;
    CHECK_EQ_ERR(cudaMemPoolExportToShareableHandle(&handle, nullptr,
                                                    cudaMemHandleTypePosixFileDescriptor, 0),
                 cudaErrorNotSupported);
    cudaGetLastError();

    // Everything else still works.
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1024));
    spin<<<1, 1>>>(static_cast<float*>(p));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(p));
    CHECK(std::string(cudaGetErrorName(cudaErrorNotSupported)) == "cudaErrorNotSupported");
    CHECK(std::string(cudaGetErrorString(cudaErrorMemoryAllocation)) == "out of memory");
    return Finish("unsupported");
}
