// Two streams overlap; cudaStreamWaitEvent orders them; the legacy default stream orders with
// blocking streams and not with non-blocking ones; polling loops become waits.
#include "check.h"

#include <thread>

__global__ void
spin(float*)
{
}

// 1e6 threads of a generic kernel: 16 us on TEST-GPU.
constexpr double kKernelUs = 16.0;
#define LAUNCH_16US(stream) spin<<<1000, 1000, 0, stream>>>(nullptr)

int
main()
{
    cudaStream_t s1, s2, nonBlocking;
    CHECK_CUDA(cudaStreamCreate(&s1));
    CHECK_CUDA(cudaStreamCreate(&s2));
    CHECK_CUDA(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking));
    const double O = kLaunchOverheadUs, L = kLaunchLatencyUs;

    // Overlap: the second kernel starts one overhead after the first, both run at once.
    double h = NowUs();
    LAUNCH_16US(s1);
    LAUNCH_16US(s2);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - h, 2 * O + L + kKernelUs, 1e-3);

    // Order: s2's kernel waits for s1's through an event.
    cudaEvent_t done;
    CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    h = NowUs();
    LAUNCH_16US(s1);                       // issued h+O, runs [h+O+L, h+O+L+16]
    CHECK_CUDA(cudaEventRecord(done, s1)); // issued h+2O, completes at h+O+L+16
    CHECK_CUDA(cudaStreamWaitEvent(s2, done, 0));
    LAUNCH_16US(s2); // issued h+3O, starts at h+O+L+16
    CHECK_CUDA(cudaStreamSynchronize(s2));
    CHECK_NEAR(NowUs() - h, O + L + 2 * kKernelUs, 1e-3);

    // Synchronizing one stream does not wait for another.
    h = NowUs();
    spin<<<4000, 1000, 0, s1>>>(nullptr); // 64 us
    LAUNCH_16US(s2);
    CHECK_CUDA(cudaStreamSynchronize(s2));
    CHECK_NEAR(NowUs() - h, 2 * O + L + kKernelUs, 1e-3);
    CHECK_EQ_ERR(cudaStreamQuery(s1), cudaErrorNotReady);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_NEAR(NowUs() - h, O + L + 64.0, 1e-3);
    CHECK_CUDA(cudaStreamQuery(s1));

    // Legacy default stream: waits for the blocking stream s1, not for the non-blocking stream.
    h = NowUs();
    spin<<<4000, 1000, 0, s1>>>(nullptr);          // [h+O+L, h+O+L+64]
    spin<<<4000, 1000, 0, nonBlocking>>>(nullptr); // [h+2O+L, h+2O+L+64]
    LAUNCH_16US(0);                                // after s1 only: [h+O+L+64, h+O+L+80]
    CHECK_CUDA(cudaStreamSynchronize(0));
    CHECK_NEAR(NowUs() - h, O + L + 64 + kKernelUs, 1e-3);
    // ... and a blocking stream waits for the legacy stream's work.
    h = NowUs();
    LAUNCH_16US(0);  // [h+O+L, h+O+L+16]
    LAUNCH_16US(s2); // after it: ends h+O+L+32
    CHECK_CUDA(cudaStreamSynchronize(s2));
    CHECK_NEAR(NowUs() - h, O + L + 2 * kKernelUs, 1e-3);
    CHECK_CUDA(cudaDeviceSynchronize());

    // A polling loop: the first seven queries tell the truth, the eighth is taken as a wait.
    h = NowUs();
    LAUNCH_16US(s1);
    int notReady = 0;
    while (cudaStreamQuery(s1) == cudaErrorNotReady)
    {
        ++notReady;
    }
    CHECK(notReady == 7);
    CHECK_NEAR(NowUs() - h, O + L + kKernelUs, 1e-3);
    cudaEvent_t marker;
    CHECK_CUDA(cudaEventCreate(&marker));
    LAUNCH_16US(s1);
    CHECK_CUDA(cudaEventRecord(marker, s1));
    notReady = 0;
    while (cudaEventQuery(marker) == cudaErrorNotReady)
    {
        ++notReady;
    }
    CHECK(notReady == 7);
    CHECK_CUDA(cudaGetLastError()); // NotReady is not an error
    // A loop that submits work between its queries is no spin: each query tells the truth until
    // the marker's kernel has ended on the host clock the launches move (2 us each).
    LAUNCH_16US(s1);
    CHECK_CUDA(cudaEventRecord(marker, s1));
    notReady = 0;
    while (cudaEventQuery(marker) == cudaErrorNotReady)
    {
        ++notReady;
        LAUNCH_16US(s2);
    }
    CHECK(notReady > 7);
    CHECK_CUDA(cudaDeviceSynchronize());

    // A thread that only polls drives nothing: its queries never move the host clock, however
    // many; the kernel completes for it once the driving thread has waited.
    LAUNCH_16US(s1);
    CHECK_CUDA(cudaEventRecord(marker, s1));
    h = NowUs();
    int watchdogNotReady = 0;
    std::thread(
        [&]
        {
            for (int i = 0; i < 100; ++i)
            {
                watchdogNotReady += cudaEventQuery(marker) == cudaErrorNotReady;
            }
        })
        .join();
    CHECK(watchdogNotReady == 100);
    CHECK_NEAR(NowUs() - h, 0.0, 1e-3);
    CHECK_CUDA(cudaEventSynchronize(marker));
    std::thread([&] { CHECK_CUDA(cudaEventQuery(marker)); }).join();

    // Stream attributes.
    unsigned flags = 7;
    CHECK_CUDA(cudaStreamGetFlags(nonBlocking, &flags));
    CHECK(flags == cudaStreamNonBlocking);
    int least = 1, greatest = 1, priority = 1;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t urgent;
    CHECK_CUDA(cudaStreamCreateWithPriority(&urgent, 0, greatest));
    CHECK_CUDA(cudaStreamGetPriority(urgent, &priority));
    CHECK(priority == greatest && least == 0);
    CHECK_CUDA(cudaStreamDestroy(urgent));
    CHECK_EQ_ERR(cudaStreamSynchronize(urgent), cudaErrorInvalidResourceHandle);
    CHECK_CUDA(cudaStreamDestroy(s1));
    CHECK_CUDA(cudaStreamDestroy(s2));
    CHECK_CUDA(cudaStreamDestroy(nonBlocking));
    return Finish("streams");
}
