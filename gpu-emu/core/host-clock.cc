#include "host-clock.h"

#include <algorithm>
#include <atomic>

#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace eidolon::gpu
{
namespace
{

// Driving threads alive (a thread that exits stops counting: the simulator takes a process as
// blocked when all its driving threads wait).
std::atomic<int> g_drivingThreads{0};

struct ThreadClockState
{
    ~ThreadClockState()
    {
        if (drives)
        {
            --g_drivingThreads;
        }
    }
    bool known = false;
    bool drives = false;
    double cpuAtLastLeave = 0; // thread CPU ns when it last left gpu-emu
    double cpuAtEnter = 0;     // thread CPU ns when it entered the current call
    double wallAtEnter = 0;    // monotonic ns then
};

using ClockGettime = int (*)(clockid_t, timespec*);

// libc's clock_gettime itself: libcudart interposes the symbol, and this library's own readings
// need not go through that.
ClockGettime
LibcClockGettime()
{
    static ClockGettime function = []
    {
        void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        void* symbol = libc ? dlvsym(libc, "clock_gettime", "GLIBC_2.17") : nullptr;
        return symbol ? reinterpret_cast<ClockGettime>(symbol) : &clock_gettime;
    }();
    return function;
}

double
ReadNs(clockid_t clock)
{
    timespec ts;
    LibcClockGettime()(clock, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

thread_local ThreadClockState t_thread;

bool
IsMainThread()
{
    return static_cast<pid_t>(syscall(SYS_gettid)) == getpid();
}

} // namespace

HostClock::HostClock(double cpuScale)
    : m_cpuScale(cpuScale)
{
}

double
HostClock::ThreadCpuNs()
{
    return ReadNs(CLOCK_THREAD_CPUTIME_ID); // a system call (~0.2 us)
}

void
HostClock::Enter(CallKind kind)
{
    ThreadClockState& thread = t_thread;
    if (!thread.known)
    {
        thread.known = true;
        thread.drives = IsMainThread();
        g_drivingThreads += thread.drives ? 1 : 0;
        thread.cpuAtLastLeave = ThreadCpuNs();
    }
    if (kind == CallKind::Submit && !thread.drives)
    {
        thread.drives = true;
        ++g_drivingThreads;
        thread.cpuAtLastLeave = ThreadCpuNs();
    }
    if (thread.drives && m_cpuScale > 0)
    {
        double cpu = ThreadCpuNs();
        if (cpu > thread.cpuAtLastLeave)
        {
            m_now += (cpu - thread.cpuAtLastLeave) * m_cpuScale;
        }
        thread.cpuAtEnter = cpu;
        thread.wallAtEnter = ReadNs(CLOCK_MONOTONIC); // vDSO, ~20 ns
    }
}

void
HostClock::Leave()
{
    ThreadClockState& thread = t_thread;
    if (thread.drives && m_cpuScale > 0)
    {
        // Our own time in the call, measured on the monotonic clock (a call never blocks: its wall
        // time is its CPU time, or time spent waiting for the lock, which is not the program's
        // either). This saves the second CPU-clock system call per call.
        thread.cpuAtLastLeave = thread.cpuAtEnter + (ReadNs(CLOCK_MONOTONIC) - thread.wallAtEnter);
    }
}

int
HostClock::DrivingThreads() const
{
    return std::max(1, g_drivingThreads.load());
}

void
HostClock::Rebase()
{
    ThreadClockState& thread = t_thread;
    if (thread.drives && m_cpuScale > 0)
    {
        thread.cpuAtEnter = ThreadCpuNs();
        thread.wallAtEnter = ReadNs(CLOCK_MONOTONIC);
    }
}

bool
HostClock::CallingThreadDrives() const
{
    const ThreadClockState& thread = t_thread;
    return thread.known ? thread.drives : IsMainThread();
}

} // namespace eidolon::gpu
