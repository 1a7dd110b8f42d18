// Two devices (EIDOLON_NUM_GPUS=2): per-thread current device, per-device memory and streams,
// peer access, peer copies priced by NVLink (access enabled) or through host memory (not),
// properties from the spec.
#include "check.h"

#include <cstring>
#include <dlfcn.h>
#include <thread>

__global__ void
spin(float*)
{
}

// CUDA 12's name, not in CUDA 13's libcudart we link against: looked up at run time.
using GetProperties12 = cudaError_t (*)(void* prop, int device);

int
main()
{
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    CHECK(count == 2);
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 1));
    CHECK(std::strcmp(prop.name, "eidolon test GPU") == 0);
    CHECK(prop.major == 8 && prop.minor == 0 && prop.multiProcessorCount == kSmCount);
    CHECK(prop.totalGlobalMem == (size_t(1) << 30));
    // CUDA 12 programs call cudaGetDeviceProperties_v2 with CUDA 12's layout: name at 0,
    // totalGlobalMem at 288 (after name[256], uuid[16], luid[8], an unsigned and padding),
    // clockRate (kHz) at 348 (296 sharedMemPerBlock, 304 regsPerBlock, 308 warpSize, 312 memPitch,
    // 320 maxThreadsPerBlock, 324 maxThreadsDim[3], 336 maxGridSize[3]).
    alignas(8) unsigned char v12[2048] = {};
    auto getProperties12 =
        reinterpret_cast<GetProperties12>(dlsym(RTLD_DEFAULT, "cudaGetDeviceProperties_v2"));
    CHECK(getProperties12 != nullptr);
    if (getProperties12)
    {
        CHECK_CUDA(getProperties12(v12, 1));
    }
    CHECK(std::strcmp(reinterpret_cast<char*>(v12), "eidolon test GPU") == 0);
    size_t total12 = 0;
    std::memcpy(&total12, v12 + 288, sizeof(total12));
    CHECK(total12 == (size_t(1) << 30));
    int clockKhz = 0;
    std::memcpy(&clockKhz, v12 + 348, sizeof(clockKhz));
    CHECK(clockKhz == 1000 * 1000);
    int value = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0));
    CHECK(value == kSmCount);
    CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, 0));
    CHECK(value == 8);
    CHECK_EQ_ERR(cudaSetDevice(2), cudaErrorInvalidDevice);
    cudaGetLastError();

    void* on0 = nullptr;
    void* on1 = nullptr;
    CHECK_CUDA(cudaMalloc(&on0, 100 << 20));
    CHECK_CUDA(cudaSetDevice(1));
    int current = -1;
    CHECK_CUDA(cudaGetDevice(&current));
    CHECK(current == 1);
    std::thread(
        []
        {
            int other = -1;
            cudaGetDevice(&other);
            CHECK(other == 0); // the current device is per thread
        })
        .join();
    CHECK_CUDA(cudaMalloc(&on1, 10000000));
    size_t freeBytes = 0, total = 0;
    CHECK_CUDA(cudaMemGetInfo(&freeBytes, &total));
    CHECK(total - freeBytes == (10000000 + 255) / 256 * 256); // only its own allocation, rounded
    cudaPointerAttributes attributes;
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, on1));
    CHECK(attributes.device == 1);

    int canAccess = 0;
    CHECK_CUDA(cudaDeviceCanAccessPeer(&canAccess, 1, 0));
    CHECK(canAccess == 1);
    CHECK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
    CHECK_EQ_ERR(cudaDeviceEnablePeerAccess(0, 0), cudaErrorPeerAccessAlreadyEnabled);
    cudaGetLastError();

    // Peer copy of 1e7 bytes: 1e7 / (300 GB/s * 0.5) = 66.67 us on device 1's legacy stream.
    double h = NowUs();
    CHECK_CUDA(cudaMemcpyPeer(on0, 0, on1, 1, 10000000));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + 1e7 / (300e3 * 0.5), 1e-3);

    // Without peer access either way the driver stages the copy through pinned host memory: down
    // device 1's PCIe and up device 0's, pipelined, so 1e7 bytes cross once at the pinned rate,
    // 32 GB/s * 0.5: 1e7 / 16e3 = 625 us (TEST-GPU has no host-copy latency).
    const double viaHostUs = 1e7 / (32e3 * 0.5);
    CHECK_CUDA(cudaDeviceDisablePeerAccess(0));
    CHECK_EQ_ERR(cudaDeviceDisablePeerAccess(0), cudaErrorPeerAccessNotEnabled);
    cudaGetLastError();
    h = NowUs();
    CHECK_CUDA(cudaMemcpyPeer(on0, 0, on1, 1, 10000000));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + viaHostUs, 1e-3);
    // The same for a UVA cudaMemcpy and a 2D copy (1000 rows of 10^4 bytes) between the devices.
    h = NowUs();
    CHECK_CUDA(cudaMemcpy(on1, on0, 10000000, cudaMemcpyDefault));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + viaHostUs, 1e-3);
    h = NowUs();
    CHECK_CUDA(cudaMemcpy2D(on0, 20000, on1, 10000, 10000, 1000, cudaMemcpyDeviceToDevice));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + viaHostUs, 1e-3);
    // Access enabled from device 0 to device 1 alone is enough for the copy engines: NVLink again.
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(1, 0));
    h = NowUs();
    CHECK_CUDA(cudaMemcpy(on0, on1, 10000000, cudaMemcpyDefault));
    CHECK_NEAR(NowUs() - h, kLaunchOverheadUs + kLaunchLatencyUs + 1e7 / (300e3 * 0.5), 1e-3);
    CHECK_CUDA(cudaDeviceDisablePeerAccess(1));
    CHECK_CUDA(cudaSetDevice(1));

    // Work on device 1 does not make device 0 busy.
    spin<<<4000, 1000>>>(nullptr); // 64 us on device 1
    CHECK_CUDA(cudaSetDevice(0));
    h = NowUs();
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - h, 0.0, 1e-3);
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - h, kLaunchLatencyUs + 64.0, 1e-3);
    CHECK_CUDA(cudaFree(on1));
    CHECK_CUDA(cudaFree(on0)); // freeing memory of another device works from any device
    return Finish("devices");
}
