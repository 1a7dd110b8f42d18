// pthread_exit (gpu-emu/cudart/clocks.cc): a thread that CPython ends during finalization while it
// is inside C++ that may not unwind (PyTorch's autograd thread releasing Python state) waits for
// the process to exit instead of aborting it; pthread_exit called by anything else still ends the
// thread, running its destructors. From then on a timed wait that times out shows its thread the
// deadline, so that a wait_until loop at exit (PyTorch's engine waiting for that thread) ends.
// The program stands in for CPython: it exports PyThread_exit_thread (linked with
// --export-dynamic), the function CPython 3.9 to 3.13 call to end such a thread.
#include "check.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <pthread.h>
#include <thread>

__global__ void
step(float*)
{
}

extern "C" void PyThread_exit_thread();

namespace
{

std::atomic<bool> g_exiting{false};
std::atomic<bool> g_unwound{false};

struct SetsUnwound
{
    ~SetsUnwound() { g_unwound = true; }
};

// A destructor may not unwind: the forced unwind of pthread_exit from inside it calls
// std::terminate (what the autograd thread's ~ThreadLocalState does).
struct ReleasesPythonState
{
    ~ReleasesPythonState()
    {
        g_exiting = true;
        PyThread_exit_thread(); // CPython: the GIL is wanted after finalization began
    }
};

} // namespace

// As CPython's: only its name matters (the interposer finds its caller by name).
extern "C" __attribute__((visibility("default"), noinline)) void
PyThread_exit_thread()
{
    pthread_exit(nullptr);
}

int
main()
{

    // Any other pthread_exit ends the thread, unwinding it (its destructors run).
    std::thread plain(
        []
        {
            SetsUnwound unwinds;
            pthread_exit(nullptr);
        });
    plain.join();
    CHECK(g_unwound);

    // A GPU-driving thread ended by "CPython" inside a destructor: it waits (parked) instead.
    std::thread autograd(
        []
        {
            step<<<1, 32>>>(nullptr);
            cudaStreamSynchronize(nullptr);
            ReleasesPythonState release;
        });
    autograd.detach();
    while (!g_exiting)
    {
        std::this_thread::yield();
    }
    // Unwinding through the destructor would abort the process at once; give it the time to.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    step<<<1, 32>>>(nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());

    // As ~Engine waits for its threads: on this (driving) thread the virtual clock stands still
    // across a wait, yet wait_for must time out (it returns only once steady_clock passed the
    // deadline).
    std::mutex mutex;
    std::condition_variable neverNotified;
    std::unique_lock<std::mutex> lock(mutex);
    const auto before = std::chrono::steady_clock::now();
    CHECK(!neverNotified.wait_for(lock, std::chrono::milliseconds(50), [] { return false; }));
    CHECK(std::chrono::steady_clock::now() - before >= std::chrono::milliseconds(50));
    return Finish("thread-exit");
}
