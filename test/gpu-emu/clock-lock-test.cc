// A thread that drives no GPU reads the real clock without waiting for the emulator's lock.
// libzmq's I/O thread reads clock_gettime for its timers; the main thread may hold the lock while
// it blocks in a bridge send that only the I/O thread can complete (back-pressure from a
// simulator that is behind). Had the interposed clock taken the lock first, that was a deadlock
// (it stopped 128-rank train-gpt runs). The bound below is a liveness bound, not a speed
// assertion: an unblocked read takes microseconds, a blocked one never ends.
#define BOOST_TEST_MODULE gpu_emu_clock_lock
#include <boost/test/unit_test.hpp>

#include "emulator.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <time.h>

namespace
{
double
RealSeconds()
{
    timespec ts{};
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts); // not through any interposer
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
} // namespace

BOOST_AUTO_TEST_CASE(a_thread_that_drives_no_gpu_reads_the_clock_while_the_lock_is_held)
{
    eidolon::gpu::Emulator& emulator = eidolon::gpu::Emulator::Get(); // clocks now virtual
    std::atomic<bool> read{false};
    std::thread reader;
    bool readWhileLocked = false;
    {
        std::lock_guard<std::mutex> lock(emulator.Mutex());
        reader = std::thread(
            [&]
            {
                timespec ts{};
                clock_gettime(CLOCK_MONOTONIC, &ts); // libcudart's interposer
                read = true;
            });
        for (double start = RealSeconds(); !read && RealSeconds() - start < 60;)
        {
            std::this_thread::yield();
        }
        readWhileLocked = read;
    }
    reader.join();
    BOOST_TEST(readWhileLocked);
}
