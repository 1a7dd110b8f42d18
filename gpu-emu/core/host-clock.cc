#include "host-clock.h"

#include "host-calibration.h"
#include "per-thread.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

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
std::atomic<int> g_parkedThreads{0}; // driving threads in an untimed wait (HostClock::Park)

struct ThreadClockState
{
    ~ThreadClockState()
    {
        if (drives)
        {
            --g_drivingThreads;
        }
        if (parked)
        {
            --g_parkedThreads;
        }
        if (instructionCounter >= 0)
        {
            close(instructionCounter);
        }
    }
    bool known = false;
    bool drives = false;
    uint64_t timedCalls = 0;              // timed calls it has entered (Enter)
    uint64_t timedCallsAtLastRead = 0;    // that count at its last virtual clock read
    Ns nowAtLastRead = -1;                // the host clock then
    int sameReads = 0;                    // reads in a row that saw the clock stand still
    bool pendingRead = false;             // its last read may still join a row (ClockRead)
    bool afterNotReadyQuery = false;      // its last timed call was a query that said not ready
    bool parked = false;                  // in an untimed wait (HostClock::Park)
    double cpuAtLastLeave = 0;            // thread CPU ns when it last left gpu-emu
    double cpuAtEnter = 0;                // thread CPU ns when it entered the current call
    double wallAtEnter = 0;               // monotonic ns then
    int instructionCounter = -1;          // perf_event fd counting this thread's user instructions
    uint64_t instructionsAtLastLeave = 0; // its value when the thread last left gpu-emu
};

uint64_t
ReadInstructions(int counter)
{
    uint64_t value = 0;
    return read(counter, &value, sizeof value) == sizeof value ? value : 0;
}

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

// Not a thread_local object: its destructor would make a thread's first clock read take the
// dynamic loader's lock (per-thread.h). Created at the thread's first intercepted call.
PerThread<ThreadClockState> g_threads;

bool
IsMainThread()
{
    return static_cast<pid_t>(syscall(SYS_gettid)) == getpid();
}

} // namespace

bool
ParseHostTimeMode(const std::string& text, HostTimeMode* mode)
{
    for (HostTimeMode candidate :
         {HostTimeMode::Calls, HostTimeMode::Instructions, HostTimeMode::CpuTime})
    {
        if (text == HostTimeModeName(candidate))
        {
            *mode = candidate;
            return true;
        }
    }
    return false;
}

const char*
HostTimeModeName(HostTimeMode mode)
{
    switch (mode)
    {
    case HostTimeMode::Calls:
        return "calls";
    case HostTimeMode::Instructions:
        return "instructions";
    case HostTimeMode::CpuTime:
        return "cpu-time";
    }
    return "?";
}

// EIDOLON_HOST_CLOCK_TRACE=<dir>: every move of the host clock, one line each, in
// <dir>/host-clock-<pid>.tsv: thread (numbered in the order threads first move the clock, so that
// two runs compare line by line), what moved it, by how much, and the clock after it.
const bool HostClock::s_tracing = []
{
    const char* dir = std::getenv("EIDOLON_HOST_CLOCK_TRACE");
    return dir && *dir;
}();

void
HostClock::TraceLine(const char* what, Ns by) const
{
    struct TraceFile
    {
        FILE* file = nullptr;
        std::mutex mutex;
        std::map<long, int> threads;
    };
    static TraceFile* trace = []
    {
        const char* dir = std::getenv("EIDOLON_HOST_CLOCK_TRACE");
        if (!dir || !*dir)
        {
            return static_cast<TraceFile*>(nullptr);
        }
        std::string path = std::string(dir) + "/host-clock-" + std::to_string(getpid()) + ".tsv";
        auto* opened = new TraceFile(); // kept to the end of the process: threads may still write
        opened->file = std::fopen(path.c_str(), "we");
        if (!opened->file)
        {
            std::fprintf(stderr, "eidolon: EIDOLON_HOST_CLOCK_TRACE: cannot write %s: %s\n",
                         path.c_str(), std::strerror(errno));
            return static_cast<TraceFile*>(nullptr);
        }
        std::fprintf(opened->file, "thread\twhat\tby_ns\tnow_ns\n");
        return opened;
    }();
    if (!trace)
    {
        return;
    }
    std::lock_guard<std::mutex> lock(trace->mutex);
    long tid = long(syscall(SYS_gettid));
    int thread = trace->threads.emplace(tid, int(trace->threads.size())).first->second;
    std::fprintf(trace->file, "%d\t%s\t%.4f\t%.4f\n", thread, what, by, m_now);
    std::fflush(trace->file);
}

void
HostClock::AdvanceTo(Ns t)
{
    if (t > m_now)
    {
        Ns by = t - m_now;
        m_now = t;
        Trace("sync", by);
    }
}

HostClock::HostClock(double cpuScale)
{
    m_model.mode = HostTimeMode::CpuTime;
    m_model.cpuScale = cpuScale;
}

void
HostClock::SetModel(const HostTimeModel& model, std::shared_ptr<const spec::HostSpec> host)
{
    m_model = model;
    m_host = std::move(host);
}

std::string
HostClock::InstructionCounterError()
{
    int counter = spec::OpenUserInstructionCounter();
    if (counter < 0)
    {
        int error = errno;
        return std::string("perf_event_open(PERF_COUNT_HW_INSTRUCTIONS): ") + std::strerror(error) +
               (error == ENOENT ? " (no hardware performance counters: a VM without a PMU?)"
                : error == EACCES || error == EPERM ? " (see /proc/sys/kernel/perf_event_paranoid)"
                                                    : "");
    }
    close(counter);
    return "";
}

Ns
HostClock::Charge(spec::HostCall call, uint64_t bytes)
{
    if (!m_host || !CallingThreadDrives())
    {
        return 0;
    }
    Ns cost = m_host->CostNs(call, bytes);
    m_now += cost;
    Trace(spec::HostCallKey(call), cost);
    return cost;
}

double
HostClock::ThreadCpuNs()
{
    return ReadNs(CLOCK_THREAD_CPUTIME_ID); // a system call (~0.2 us)
}

void
HostClock::Enter(CallKind kind)
{
    ThreadClockState& thread = g_threads.Get();
    bool startsDriving = false;
    if (!thread.known)
    {
        thread.known = true;
        thread.drives = IsMainThread();
        g_drivingThreads += thread.drives ? 1 : 0;
        startsDriving = thread.drives;
    }
    if (kind == CallKind::Submit && !thread.drives)
    {
        thread.drives = true;
        ++g_drivingThreads;
        startsDriving = true;
    }
    ++thread.timedCalls;
    thread.afterNotReadyQuery = false;
    if (!thread.drives)
    {
        return;
    }
    switch (m_model.mode)
    {
    case HostTimeMode::Calls:
        if (kind == CallKind::Submit)
        {
            m_now += m_model.programOverheadNs;
            if (m_model.programOverheadNs > 0)
            {
                Trace("program", m_model.programOverheadNs);
            }
        }
        break;
    case HostTimeMode::CpuTime:
        if (m_model.cpuScale > 0)
        {
            double cpu = ThreadCpuNs();
            if (startsDriving)
            {
                thread.cpuAtLastLeave = cpu; // its work before it drove the GPU is not counted
            }
            if (cpu > thread.cpuAtLastLeave)
            {
                m_now += (cpu - thread.cpuAtLastLeave) * m_model.cpuScale;
                Trace("program", (cpu - thread.cpuAtLastLeave) * m_model.cpuScale);
            }
            thread.cpuAtEnter = cpu;
            thread.wallAtEnter = ReadNs(CLOCK_MONOTONIC); // vDSO, ~20 ns
        }
        break;
    case HostTimeMode::Instructions:
        if (thread.instructionCounter < 0 && startsDriving)
        {
            thread.instructionCounter =
                spec::OpenUserInstructionCounter(); // probed at start: it opens
            thread.instructionsAtLastLeave = 0;
        }
        if (thread.instructionCounter >= 0 && m_model.instructionsPerNs > 0)
        {
            uint64_t count = ReadInstructions(thread.instructionCounter);
            if (count > thread.instructionsAtLastLeave)
            {
                m_now += double(count - thread.instructionsAtLastLeave) / m_model.instructionsPerNs;
                Trace("program",
                      double(count - thread.instructionsAtLastLeave) / m_model.instructionsPerNs);
            }
        }
        break;
    }
}

void
HostClock::Leave()
{
    ThreadClockState& thread = g_threads.Get();
    if (!thread.drives)
    {
        return;
    }
    if (m_model.mode == HostTimeMode::CpuTime && m_model.cpuScale > 0)
    {
        // Our own time in the call, measured on the monotonic clock (a call never blocks: its wall
        // time is its CPU time, or time spent waiting for the lock, which is not the program's
        // either). This saves the second CPU-clock system call per call.
        thread.cpuAtLastLeave = thread.cpuAtEnter + (ReadNs(CLOCK_MONOTONIC) - thread.wallAtEnter);
    }
    else if (m_model.mode == HostTimeMode::Instructions && thread.instructionCounter >= 0)
    {
        // The instructions retired inside gpu-emu (and while blocked on the simulator) are ours.
        thread.instructionsAtLastLeave = ReadInstructions(thread.instructionCounter);
    }
}

void
HostClock::ClockRead()
{
    ThreadClockState& thread = g_threads.Get();
    // The read itself entered a timed call (ApiCall(CallKind::Query)): not one in between.
    bool callBetween = thread.timedCalls != thread.timedCallsAtLastRead + 1;
    if (callBetween || m_now != thread.nowAtLastRead)
    {
        thread.sameReads = 0;
    }
    else if (thread.pendingRead)
    {
        // The previous read was followed by this one, not by a wait: it belongs to the row.
        ++thread.sameReads;
        if (thread.sameReads >= kReadsBeforeBusyWait)
        {
            Charge(spec::HostCall::ClockRead);
        }
    }
    thread.pendingRead = true;
    thread.timedCallsAtLastRead = thread.timedCalls;
    thread.nowAtLastRead = m_now;
}

void
HostClock::DeadlineWait()
{
    if (ThreadClockState* thread = g_threads.IfCreated())
    {
        // A wait ends the row: a loop that reads the clock twice around each sleep (PyTorch's TCP
        // store waiting for its workers) is no spin, and otherwise counted one read per pass
        // until, after 64 passes (as many as the workers took in wall time), each was charged.
        thread->pendingRead = false;
        thread->sameReads = 0;
    }
}

bool
HostClock::Park(bool parked)
{
    ThreadClockState* thread = g_threads.IfCreated();
    if (!thread || !thread->known || !thread->drives || thread->parked == parked)
    {
        return false;
    }
    thread->parked = parked;
    g_parkedThreads += parked ? 1 : -1;
    return true;
}

void
HostClock::NotReadyQuery()
{
    g_threads.Get().afterNotReadyQuery = true;
}

bool
HostClock::TakeNotReadyQuery()
{
    ThreadClockState* thread = g_threads.IfCreated();
    bool after = thread && thread->afterNotReadyQuery;
    if (after)
    {
        thread->afterNotReadyQuery = false;
    }
    return after;
}

int
HostClock::DrivingThreads() const
{
    return std::max(1, g_drivingThreads.load() - g_parkedThreads.load());
}

bool
HostClock::AllDrivingThreadsParked() const
{
    const int parked = g_parkedThreads.load();
    return parked > 0 && parked >= g_drivingThreads.load();
}

void
HostClock::Rebase()
{
    ThreadClockState& thread = g_threads.Get();
    if (thread.drives && m_model.mode == HostTimeMode::CpuTime && m_model.cpuScale > 0)
    {
        thread.cpuAtEnter = ThreadCpuNs();
        thread.wallAtEnter = ReadNs(CLOCK_MONOTONIC);
    }
}

bool
HostClock::CallingThreadDrives() const
{
    // Runs on every clock read of every thread: it neither allocates nor takes a lock.
    const ThreadClockState* thread = g_threads.IfCreated();
    return thread && thread->known ? thread->drives : IsMainThread();
}

} // namespace eidolon::gpu
