// The clocks a program times itself with show virtual time on the threads that drive GPUs
// (DESIGN.md "Virtual time"). clock_gettime and gettimeofday are interposed here, in libcudart,
// because a library the program links directly comes before libc in symbol lookup; the same file
// is libeidolon-clocks.so, which `eidolon run` preloads for programs that dlopen CUDA (Python).
// CPU-time clocks always pass through; EIDOLON_VIRTUAL_CLOCKS=0 makes every clock real.
//
// So do the reads made by the libraries that move real bytes between the rank processes, which
// eidolon does not simulate: MPI's runtime and transports (Open MPI's opal/orte and components,
// PMIx, libevent, libfabric, UCX, verbs, PSM). They time real waits and timeouts, and PSM's
// constructor calibrates the CPU's cycle counter (real) against gettimeofday for 100 ms of
// gettimeofday time, sleeping 125 us per look: against a virtual clock that barely moves while
// the thread sleeps, that stalled every MPI rank at start (84 s in issue 16's run; still inside
// the constructor after 120 s here) and then fell back to /proc's timebase. The calling library
// is known by the return address (one dl_iterate_phdr per library, then a short table); libmpi
// itself stays virtual, since MPI_Wtime is a clock the program times itself with.
#include "runtime-common.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <sys/time.h>
#include <time.h>

using namespace eidolon::gpu;

namespace
{

using ClockGettime = int (*)(clockid_t, struct timespec*);
using GetTimeOfDay = int (*)(struct timeval*, void*);
using ClockNanosleep = int (*)(clockid_t, int, const struct timespec*, struct timespec*);
using CondTimedwait = int (*)(pthread_cond_t*, pthread_mutex_t*, const struct timespec*);
using CondClockwait = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
using SemTimedwait = int (*)(sem_t*, const struct timespec*);
using SemClockwait = int (*)(sem_t*, clockid_t, const struct timespec*);
using SemWait = int (*)(sem_t*);
using CondWait = int (*)(pthread_cond_t*, pthread_mutex_t*);
using PthreadExit = void (*)(void*);

// libc's functions, resolved once when libcudart is loaded (resolving them lazily could allocate
// inside an allocator that reads the clock); until then the system call is used.
ClockGettime g_realClockGettime = nullptr;
GetTimeOfDay g_realGetTimeOfDay = nullptr;
ClockNanosleep g_realClockNanosleep = nullptr;
CondTimedwait g_realCondTimedwait = nullptr;
CondClockwait g_realCondClockwait = nullptr;
SemTimedwait g_realSemTimedwait = nullptr;
SemClockwait g_realSemClockwait = nullptr;
SemWait g_realSemWait = nullptr;
SemWait g_realSemTrywait = nullptr;
CondWait g_realCondWait = nullptr;
PthreadExit g_realPthreadExit = nullptr;
using Nanosleep = int (*)(const struct timespec*, struct timespec*);
using Usleep = int (*)(useconds_t);
Nanosleep g_realNanosleep = nullptr;
Usleep g_realUsleep = nullptr;

// libc's `name` at `version` (else the next definition): resolved when the library loads.
template<class Function>
Function
Libc(void* libc, const char* name, const char* version)
{
    void* symbol = libc ? dlvsym(libc, name, version) : nullptr;
    return reinterpret_cast<Function>(symbol ? symbol : dlsym(RTLD_NEXT, name));
}

// libc's own, not RTLD_NEXT's: these interposers are in libcudart and in libeidolon-clocks.so,
// and when the latter is preloaded the next definition after it is libcudart's.
__attribute__((constructor)) void
ResolveRealClocks()
{
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    g_realClockGettime = Libc<ClockGettime>(libc, "clock_gettime", "GLIBC_2.17");
    g_realGetTimeOfDay = Libc<GetTimeOfDay>(libc, "gettimeofday", "GLIBC_2.2.5");
    g_realClockNanosleep = Libc<ClockNanosleep>(libc, "clock_nanosleep", "GLIBC_2.17");
    g_realCondTimedwait = Libc<CondTimedwait>(libc, "pthread_cond_timedwait", "GLIBC_2.3.2");
    g_realCondClockwait = Libc<CondClockwait>(libc, "pthread_cond_clockwait", "GLIBC_2.30");
    g_realSemTimedwait = Libc<SemTimedwait>(libc, "sem_timedwait", "GLIBC_2.2.5");
    g_realSemClockwait = Libc<SemClockwait>(libc, "sem_clockwait", "GLIBC_2.30");
    g_realSemWait = Libc<SemWait>(libc, "sem_wait", "GLIBC_2.2.5");
    g_realSemTrywait = Libc<SemWait>(libc, "sem_trywait", "GLIBC_2.2.5");
    g_realCondWait = Libc<CondWait>(libc, "pthread_cond_wait", "GLIBC_2.3.2");
    g_realPthreadExit = Libc<PthreadExit>(libc, "pthread_exit", "GLIBC_2.2.5");
    g_realNanosleep = Libc<Nanosleep>(libc, "nanosleep", "GLIBC_2.2.5");
    g_realUsleep = Libc<Usleep>(libc, "usleep", "GLIBC_2.2.5");
}

int
RealTime(clockid_t clock, struct timespec* ts)
{
    return g_realClockGettime ? g_realClockGettime(clock, ts)
                              : static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
}

int
RealDay(struct timeval* tv, void* tz)
{
    return g_realGetTimeOfDay ? g_realGetTimeOfDay(tv, tz)
                              : static_cast<int>(syscall(SYS_gettimeofday, tv, tz));
}

int64_t
ToNs(const timespec& ts)
{
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A loaded library's address range and whether its clock reads stay real.
struct CallerLibrary
{
    uintptr_t begin;
    uintptr_t end;
    bool real;
};

constexpr size_t kMaxCallerLibraries = 256;
CallerLibrary g_callerLibraries[kMaxCallerLibraries];
std::atomic<size_t> g_callerLibraryCount{0}; // entries below it are complete (release/acquire)
std::mutex g_callerLibrariesAdding;

// Whether the file name `path` starts, after its directory, with one of the ':'-separated
// `prefixes`. No allocation: clock reads may come from inside an allocator.
bool
NamedIn(const char* path, const std::string& prefixes)
{
    const char* slash = std::strrchr(path, '/');
    const char* name = slash ? slash + 1 : path;
    size_t begin = 0;
    while (begin < prefixes.size())
    {
        size_t end = prefixes.find(':', begin);
        end = end == std::string::npos ? prefixes.size() : end;
        if (end > begin && std::strncmp(name, prefixes.data() + begin, end - begin) == 0)
        {
            return true;
        }
        begin = end + 1;
    }
    return false;
}

struct CallerSearch
{
    uintptr_t address;
    CallerLibrary found;
    const char* name;
};

int
FindCallerLibrary(struct dl_phdr_info* info, size_t, void* data)
{
    auto* search = static_cast<CallerSearch*>(data);
    uintptr_t low = UINTPTR_MAX;
    uintptr_t high = 0;
    bool inside = false;
    for (int i = 0; i < info->dlpi_phnum; ++i)
    {
        const ElfW(Phdr)& segment = info->dlpi_phdr[i];
        if (segment.p_type != PT_LOAD)
        {
            continue;
        }
        uintptr_t start = info->dlpi_addr + segment.p_vaddr;
        low = std::min(low, start);
        high = std::max(high, start + segment.p_memsz);
        inside = inside || (search->address >= start && search->address < start + segment.p_memsz);
    }
    if (!inside)
    {
        return 0;
    }
    search->found = CallerLibrary{low, high, false};
    search->name = info->dlpi_name ? info->dlpi_name : "";
    return 1;
}

// Whether the code at `caller` belongs to a library whose clock reads stay real (the list is
// Config::realClockLibraries).
bool
CallerKeepsRealTime(const void* caller, const std::string& libraries)
{
    auto address = reinterpret_cast<uintptr_t>(caller);
    auto lookUp = [address](size_t count, bool* real)
    {
        for (size_t i = 0; i < count; ++i)
        {
            if (address >= g_callerLibraries[i].begin && address < g_callerLibraries[i].end)
            {
                *real = g_callerLibraries[i].real;
                return true;
            }
        }
        return false;
    };
    bool real = false;
    if (lookUp(g_callerLibraryCount.load(std::memory_order_acquire), &real))
    {
        return real;
    }
    std::lock_guard<std::mutex> adding(g_callerLibrariesAdding);
    size_t count = g_callerLibraryCount.load(std::memory_order_acquire);
    if (lookUp(count, &real))
    {
        return real;
    }
    CallerSearch search{address, {}, nullptr};
    if (dl_iterate_phdr(FindCallerLibrary, &search) == 0)
    {
        return false; // not in a loaded object (generated code): the program's
    }
    search.found.real = NamedIn(search.name, libraries);
    if (count < kMaxCallerLibraries)
    {
        g_callerLibraries[count] = search.found;
        g_callerLibraryCount.store(count + 1, std::memory_order_release);
    }
    return search.found.real;
}

bool
IsWallClock(clockid_t clock)
{
    return clock == CLOCK_MONOTONIC || clock == CLOCK_MONOTONIC_RAW ||
           clock == CLOCK_MONOTONIC_COARSE || clock == CLOCK_REALTIME ||
           clock == CLOCK_REALTIME_COARSE || clock == CLOCK_BOOTTIME;
}

// The virtual clock's value for `clock` at host time 0.
int64_t
VirtualBase(clockid_t clock)
{
    const ClockBases& bases = VirtualClockBases(); // emulator.h
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE ? bases.realtime
           : clock == CLOCK_BOOTTIME                                 ? bases.boottime
                                                                     : bases.monotonic;
}

// The host time the calling thread's last virtual reading showed: its clock never goes back.
thread_local double t_lastShown = 0;

// Virtual value of a wall clock for the calling thread, or a negative value to pass through.
// `caller`: the code that asked (the interposer's return address).
int64_t
VirtualNs(clockid_t clock, const void* caller)
{
    Emulator* created = Emulator::IfCreated();
    if (!IsWallClock(clock) || !created || ApiDepth() > 0)
    {
        return -1; // before the first CUDA call (and inside our own calls) clocks are real
    }
    Emulator& emulator = *created;
    if (!emulator.Settings().virtualClocks)
    {
        return -1;
    }
    // Whether this thread drives is its own (thread-local) state: decide it before taking the
    // emulator's lock. Threads that never drive (libzmq's I/O thread, which reads the clock for
    // its timers) must never wait for that lock: the main thread may hold it while it blocks in
    // a send that only the I/O thread can complete (the bridge's back-pressure), a deadlock that
    // stopped 128-rank runs once the simulator fell behind.
    if (!emulator.Clock().CallingThreadDrives() ||
        CallerKeepsRealTime(caller, emulator.Settings().realClockLibraries))
    {
        return -1;
    }
    ApiCall call(CallKind::Query);
    // Free, but for a loop that waits for the clock to pass a deadline (HostClock::ClockRead).
    emulator.Clock().ClockRead();
    double offset = std::max(emulator.Clock().Now(), t_lastShown); // never backwards for a thread
    t_lastShown = offset;
    return VirtualBase(clock) + static_cast<int64_t>(std::llround(offset));
}

} // namespace

// clock_gettime: virtual wall clocks on GPU-driving threads (outside the transport libraries),
// real otherwise.
EIDOLON_EXPORT int
clock_gettime(clockid_t clock, struct timespec* ts)
{
    // A profiler's timestamp source is read on both sides of every reading, real or virtual: its
    // converter calibrates on what the program saw (activity-log.h; a profile may start before
    // the first CUDA call makes the clocks virtual).
    ActivityLog& activity = ActivityLog::Get();
    const uint64_t sourceBefore = activity.ReadSource();
    int64_t ns = VirtualNs(clock, __builtin_return_address(0));
    if (ns < 0)
    {
        int result = RealTime(clock, ts);
        activity.OnClockRead(clock, result == 0 ? ToNs(*ts) : 0, result == 0 ? sourceBefore : 0);
        return result;
    }
    ts->tv_sec = static_cast<time_t>(ns / 1000000000);
    ts->tv_nsec = static_cast<long>(ns % 1000000000);
    activity.OnClockRead(clock, ns, sourceBefore);
    return 0;
}

// gettimeofday: virtual on GPU-driving threads, real otherwise.
EIDOLON_EXPORT int
gettimeofday(struct timeval* tv, void* tz)
{
    ActivityLog& activity = ActivityLog::Get(); // as clock_gettime
    const uint64_t sourceBefore = activity.ReadSource();
    int64_t ns = VirtualNs(CLOCK_REALTIME, __builtin_return_address(0));
    if (ns < 0)
    {
        int result = RealDay(tv, tz);
        activity.OnClockRead(
            CLOCK_REALTIME, result == 0 ? int64_t(tv->tv_sec) * 1000000000 + tv->tv_usec * 1000 : 0,
            result == 0 ? sourceBefore : 0);
        return result;
    }
    tv->tv_sec = static_cast<time_t>(ns / 1000000000);
    tv->tv_usec = static_cast<suseconds_t>(ns % 1000000000 / 1000);
    activity.OnClockRead(CLOCK_REALTIME, ns, sourceBefore);
    return 0;
}

namespace
{
void DeadlineWait(); // below: the clock reads around a wait are free
} // namespace

// clock_nanosleep: a deadline (TIMER_ABSTIME) on a clock this thread sees virtual was computed from
// the virtual clock, which the kernel does not know: sleep for what is left of it in virtual time,
// as real time. (Python's time.sleep sleeps to such a deadline: without this it would return at
// once while the virtual clock is behind the real one, and block for the difference once it is
// ahead.) The sleep itself is the program's own host time: it moves the virtual clock only as the
// host-time mode counts such time (in `calls` mode, not at all).
EIDOLON_EXPORT int
clock_nanosleep(clockid_t clock, int flags, const struct timespec* request, struct timespec* remain)
{
    if (!g_realClockNanosleep)
    {
        return ENOSYS; // before our constructor ran: nothing sleeps that early
    }
    // A sleep is a wait, not a spin: the clock read that computed its deadline (Python's time.sleep
    // reads the clock, then sleeps to now + its argument) and ours below are free, as before a
    // timed condition wait. Otherwise a loop that sleeps until another process is ready (a TCP
    // store's wait) was charged per read, as many times as the other process took in wall time.
    // A sleep of nothing (time.sleep(0) in a loop that waits for the clock) is no wait: its reads
    // stay in the row, whose charges let such a loop end.
    if ((flags & TIMER_ABSTIME) && request)
    {
        int64_t now = VirtualNs(clock, __builtin_return_address(0));
        if (now >= 0)
        {
            int64_t left = ToNs(*request) - now;
            if (left <= 0)
            {
                return 0;
            }
            DeadlineWait();
            timespec relative{static_cast<time_t>(left / 1000000000),
                              static_cast<long>(left % 1000000000)};
            return g_realClockNanosleep(clock, 0, &relative, remain);
        }
    }
    if (request && (flags & TIMER_ABSTIME || request->tv_sec > 0 || request->tv_nsec > 0))
    {
        DeadlineWait();
    }
    return g_realClockNanosleep(clock, flags, request, remain);
}

// nanosleep and usleep: relative sleeps, which std::this_thread::sleep_for and C programs use
// between their polls of another process (PyTorch's TCP store waits for its workers so). A sleep
// is a wait, not a spin: the clock reads around it are free (DeadlineWait); they sleep in real
// time as before (glibc's own calls to them are internal and do not come here).
EIDOLON_EXPORT int
nanosleep(const struct timespec* request, struct timespec* remain)
{
    if (!g_realNanosleep)
    {
        ResolveRealClocks();
    }
    if (request && (request->tv_sec > 0 || request->tv_nsec > 0))
    {
        DeadlineWait(); // a sleep of nothing is no wait (see clock_nanosleep)
    }
    return g_realNanosleep(request, remain);
}

EIDOLON_EXPORT int
usleep(useconds_t microseconds)
{
    if (!g_realUsleep)
    {
        ResolveRealClocks();
    }
    if (microseconds > 0)
    {
        DeadlineWait();
    }
    return g_realUsleep(microseconds);
}

namespace
{

// The calling thread waits for an absolute deadline: the clock read that computed it is free
// (HostClock::DeadlineWait).
void
DeadlineWait()
{
    if (Emulator* emulator = Emulator::IfCreated())
    {
        emulator->Clock().DeadlineWait();
    }
}

// A deadline on `clock` that a thread which sees the clock virtual computed, as a deadline on the
// real clock: as far ahead of the real now as it is of the virtual now (so that the wait lasts its
// timeout in real time). False (pass the deadline through) where the thread sees real time, and
// for the libraries whose reads stay real (`caller`: the code that waits).
bool
RealDeadline(clockid_t clock, const struct timespec* deadline, struct timespec* real,
             const void* caller)
{
    if (!g_realCondTimedwait)
    {
        ResolveRealClocks(); // a wait in another library's constructor, before ours ran
    }
    DeadlineWait();
    int64_t now = deadline ? VirtualNs(clock, caller) : -1;
    DeadlineWait(); // our own read is free too
    if (now < 0)
    {
        return false;
    }
    timespec realNow;
    RealTime(clock, &realNow);
    int64_t left = std::max<int64_t>(0, ToNs(*deadline) - now);
    int64_t at = ToNs(realNow) + left;
    real->tv_sec = static_cast<time_t>(at / 1000000000);
    real->tv_nsec = static_cast<long>(at % 1000000000);
    return true;
}

// The clock a condition variable's deadline was computed on (its attribute is glibc's private
// state): the virtual clock it is nearer to. Real and monotonic time are decades apart.
// (Compared with the real clocks' values now, not the virtual bases: those are fixed when the
// process first shows virtual time, which a wait on any thread must not bring forward.)
clockid_t
DeadlineClock(const struct timespec* deadline)
{
    timespec monotonic, realtime;
    RealTime(CLOCK_MONOTONIC, &monotonic);
    RealTime(CLOCK_REALTIME, &realtime);
    int64_t at = ToNs(*deadline);
    return std::llabs(at - ToNs(monotonic)) < std::llabs(at - ToNs(realtime)) ? CLOCK_MONOTONIC
                                                                              : CLOCK_REALTIME;
}

// Set when CPython ends a thread because its finalization has begun (pthread_exit below).
std::atomic<bool> g_cpythonFinalizing{false};

// Runs `wait` (libc's wait, given the deadline to use) for `deadline` on `clock`: a deadline the
// calling thread computed from the virtual clock becomes the real one as far ahead (RealDeadline;
// `caller`: the code that waits). Once CPython is finalizing, such a wait that timed out shows its
// thread a clock at the deadline, as POSIX promises. (Until then a timeout moves no clock, so that
// how long a racing wait lasted in real time, CPython's 5 ms GIL waits among them, never shows in
// virtual time. At exit that rule would never end a loop that waits until its clock passes the
// deadline, as std::condition_variable's wait_until does: PyTorch's autograd engine waits so, for
// up to 10 s, for its threads, one of which may be waiting in pthread_exit below.) The thread's
// own view moves, not the host clock. Condition variables return the error; semaphores return -1
// and set errno.
template<typename Wait>
int
WaitForDeadline(clockid_t clock, const struct timespec* deadline, const void* caller, Wait wait)
{
    timespec real;
    if (!RealDeadline(clock, deadline, &real, caller))
    {
        return wait(deadline);
    }
    int result = wait(&real);
    const bool timedOut = result == ETIMEDOUT || (result == -1 && errno == ETIMEDOUT);
    if (timedOut && g_cpythonFinalizing.load(std::memory_order_relaxed))
    {
        t_lastShown = std::max(t_lastShown, double(ToNs(*deadline) - VirtualBase(clock)));
    }
    return result;
}

} // namespace

// pthread_cond_timedwait: a deadline computed from the virtual clock waits what is left of it in
// virtual time, as real time; its clock read costs nothing (HostClock::DeadlineWait).
EIDOLON_EXPORT int
pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                       const struct timespec* deadline)
{
    if (!g_realCondTimedwait)
    {
        ResolveRealClocks(); // a wait in another library's constructor, before ours ran
    }
    auto wait = [&](const struct timespec* at) { return g_realCondTimedwait(cond, mutex, at); };
    // Threads that drive no GPU (most waits of a process) pass through before any clock is read.
    Emulator* emulator = Emulator::IfCreated();
    if (emulator && emulator->Clock().CallingThreadDrives())
    {
        return WaitForDeadline(DeadlineClock(deadline), deadline, __builtin_return_address(0),
                               wait);
    }
    return wait(deadline);
}

// pthread_cond_clockwait: as pthread_cond_timedwait, on the clock named.
extern "C" int
eidolon_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                               const struct timespec* deadline)
{
    return WaitForDeadline(clock, deadline, __builtin_return_address(0),
                           [&](const struct timespec* at)
                           { return g_realCondClockwait(cond, mutex, clock, at); });
}

// sem_timedwait: as pthread_cond_timedwait, on CLOCK_REALTIME.
extern "C" int
eidolon_sem_timedwait(sem_t* semaphore, const struct timespec* deadline)
{
    return WaitForDeadline(CLOCK_REALTIME, deadline, __builtin_return_address(0),
                           [&](const struct timespec* at)
                           { return g_realSemTimedwait(semaphore, at); });
}

// sem_clockwait: as pthread_cond_timedwait, on the clock named.
extern "C" int
eidolon_sem_clockwait(sem_t* semaphore, clockid_t clock, const struct timespec* deadline)
{
    return WaitForDeadline(clock, deadline, __builtin_return_address(0),
                           [&](const struct timespec* at)
                           { return g_realSemClockwait(semaphore, clock, at); });
}

namespace
{

// A driving thread begins an untimed wait for another thread of its process: it parks
// (HostClock::Park) and the simulator hears of it. Not inside gpu-emu's own calls.
bool
ParkBegin()
{
    Emulator* emulator = Emulator::IfCreated();
    if (!emulator || ApiDepth() > 0 || !HostClock::Park(true))
    {
        return false;
    }
    emulator->DrivingThreadsChanged();
    return true;
}

void
ParkEnd()
{
    HostClock::Park(false);
    if (Emulator* emulator = Emulator::IfCreated())
    {
        emulator->DrivingThreadsChanged();
    }
}

// Runs the untimed wait `wait` with the calling thread parked (if it drives).
template<typename Wait>
int
Parked(Wait wait)
{
    bool parked = ParkBegin();
    int result = wait();
    if (parked)
    {
        ParkEnd();
    }
    return result;
}

} // namespace

// pthread_cond_wait: an untimed wait for another thread (PyTorch's autograd thread waiting for
// work, std::condition_variable::wait): a driving thread parks while it lasts.
EIDOLON_EXPORT int
pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex)
{
    if (!g_realCondWait)
    {
        ResolveRealClocks();
    }
    return Parked([&] { return g_realCondWait(cond, mutex); });
}

// sem_wait: blocks; the clock read just before it was the lock's (CPython's), not a spin's; a
// driving thread parks while it lasts (a contended CPython lock, a thread join).
extern "C" int
eidolon_sem_wait(sem_t* semaphore)
{
    if (!g_realSemWait)
    {
        ResolveRealClocks();
    }
    DeadlineWait();
    return Parked([&] { return g_realSemWait(semaphore); });
}

// sem_trywait: the clock read just before it was the lock's, as for sem_wait; it never blocks, so
// never parks.
extern "C" int
eidolon_sem_trywait(sem_t* semaphore)
{
    if (!g_realSemTrywait)
    {
        ResolveRealClocks();
    }
    DeadlineWait();
    return g_realSemTrywait(semaphore);
}

namespace
{

// True when the return address `caller` is in CPython's PyThread_exit_thread (found by its exported
// name, so any build of CPython 3.9 to 3.13 that exports its C API is recognised). The call to a
// noreturn function may be the last instruction, so its return address is past the function's
// end: the byte before it is looked up.
bool
CalledByCPythonThreadExit(const void* caller)
{
    Dl_info info{};
    return dladdr(static_cast<const char*>(caller) - 1, &info) != 0 && info.dli_sname != nullptr &&
           std::strcmp(info.dli_sname, "PyThread_exit_thread") == 0;
}

} // namespace

// pthread_exit: CPython 3.9 to 3.13 end a thread that asks for the GIL after finalization began
// with pthread_exit; its unwind aborts the process ("terminate called without an active
// exception") when the thread is inside C++ that may not unwind: PyTorch's autograd thread
// dropping the last reference to a finished backward, whose state holds Python objects
// (pytorch/pytorch#38228). The thread loses that race only if it is preempted between finishing
// the backward and dropping it, which ranks packed many to a core (a simulated cluster on a few
// cores) are far more often than a real host's. Such a thread waits instead, parked, until the
// process exits, as CPython 3.14 makes it wait (PyThread_hang_thread); any other caller exits.
extern "C" [[noreturn]] void
eidolon_pthread_exit(void* value)
{
    if (!g_realPthreadExit)
    {
        ResolveRealClocks();
    }
    if (CalledByCPythonThreadExit(__builtin_return_address(0)))
    {
        g_cpythonFinalizing = true;
        ParkBegin();
        for (;;)
        {
            pause();
        }
    }
    g_realPthreadExit(value);
    __builtin_unreachable();
}

// glibc 2.34 gave these functions new version nodes (libpthread moved into libc): a program built
// since (this machine's CPython) binds to GLIBC_2.34, one built before (PyTorch's manylinux
// libraries) to the older node; both versions are the definitions above. (A definition under its
// own name with only an older alias loses its default version in GNU ld, so both are aliases.)
#define EIDOLON_BOTH_VERSIONS(name, older, returns, ...)                                           \
    extern "C"                                                                                     \
        __attribute__((visibility("default"), alias("eidolon_" #name), copy(eidolon_##name)))      \
        returns eidolon_##name##_older(__VA_ARGS__);                                               \
    extern "C"                                                                                     \
        __attribute__((visibility("default"), alias("eidolon_" #name), copy(eidolon_##name)))      \
        returns eidolon_##name##_2_34(__VA_ARGS__);                                                \
    __asm__(".symver eidolon_" #name "_older, " #name "@" older);                                  \
    __asm__(".symver eidolon_" #name "_2_34, " #name "@@GLIBC_2.34")
EIDOLON_BOTH_VERSIONS(pthread_cond_clockwait, "GLIBC_2.30", int, pthread_cond_t*, pthread_mutex_t*,
                      clockid_t, const struct timespec*);
EIDOLON_BOTH_VERSIONS(sem_clockwait, "GLIBC_2.30", int, sem_t*, clockid_t, const struct timespec*);
EIDOLON_BOTH_VERSIONS(sem_timedwait, "GLIBC_2.2.5", int, sem_t*, const struct timespec*);
EIDOLON_BOTH_VERSIONS(sem_wait, "GLIBC_2.2.5", int, sem_t*);
EIDOLON_BOTH_VERSIONS(sem_trywait, "GLIBC_2.2.5", int, sem_t*);
EIDOLON_BOTH_VERSIONS(pthread_exit, "GLIBC_2.2.5", void, void*);
