// The host timeline of one rank process (DESIGN.md "Virtual time"), and the one place where the
// threading rule lives: which threads' work moves it. How the program's own work between calls
// is counted is the host-time mode (gpu-emu/README.md "Host time"); what each call costs comes from
// the host description (spec/host-spec.h).
#pragma once

#include "host-spec.h"

#include <cstdint>
#include <memory>
#include <string>

namespace eidolon::gpu
{

namespace spec = eidolon::spec; // the host description's call names (spec::HostCall) in gpu-emu

using Ns = double; // virtual nanoseconds since the process started driving GPUs

// What an intercepted call does, as far as the host clock cares.
enum class CallKind
{
    Submit,  // enqueues device work (launch, copy, memset, event record, graph launch)
    Sync,    // waits for device work (synchronize, blocking copy, recognised polling loop)
    Query,   // looks at time (stream/event query, elapsed time, clock_gettime)
    Untimed, // bookkeeping that neither submits, waits nor looks at time (get device, malloc,
             // create stream, attributes): the clock is not sampled, so the little CPU time of
             // such a call counts as the program's own
};

// How the program's own host work between intercepted calls becomes virtual time.
enum class HostTimeMode
{
    Calls,        // a modelled cost per submitting call (programOverheadNs): deterministic
    Instructions, // retired user instructions at the target CPU's rate (needs a hardware PMU)
    CpuTime,      // measured thread CPU time x cpuScale: depends on this machine and its load
};

// "calls", "instructions", "cpu-time"; false when `text` names no mode.
bool ParseHostTimeMode(const std::string& text, HostTimeMode* mode);
const char* HostTimeModeName(HostTimeMode mode);

struct HostTimeModel
{
    HostTimeMode mode = HostTimeMode::Calls;
    double cpuScale = 1.0;        // cpu-time: virtual ns per CPU ns of this machine
    double instructionsPerNs = 0; // instructions: the target host CPU's retired rate
    double programOverheadNs = 0; // calls: the program's own work per submitting call
};

// One host clock per process. Not thread-safe by itself: callers hold the emulator lock.
class HostClock
{
public:
    // Counts measured CPU time times `cpuScale` and charges no call costs (for unit tests).
    explicit HostClock(double cpuScale);

    // The mode and the host description the clock charges calls from. `host` may be null (no call
    // costs). In instructions mode the counter must have been probed (InstructionCounterError).
    void SetModel(const HostTimeModel& model, std::shared_ptr<const spec::HostSpec> host);
    const HostTimeModel& Model() const { return m_model; }
    const spec::HostSpec* Host() const { return m_host.get(); }

    // Why this process cannot count retired user instructions ("" when it can).
    static std::string InstructionCounterError();

    // Threading rule. The main thread drives the timeline from process start; any other thread
    // starts driving it at its first Submit call. The program's work on a driving thread since it
    // last left gpu-emu is added as the mode says; threads that only query or poll never move the
    // clock. Call at the entry of every intercepted call.
    void Enter(CallKind kind);

    // Call when leaving gpu-emu: the time spent inside us is not charged to the program.
    void Leave();

    // The calling thread waited (blocked on the simulator) inside the call: the wait is neither
    // the program's CPU time nor ours.
    void Rebase();

    // A virtual clock read by the calling thread (clock_gettime, gettimeofday), before it shows
    // Now(). Reads cost nothing: how often a program reads the clock depends on real thread
    // scheduling (a deadline for each GIL hand-over, ProcessGroupNCCL's completion hooks on
    // whichever thread finds a work done), so a cost per read would make virtual times depend on
    // it. Only a busy-wait on the clock pays: a read followed by another read of the same virtual
    // time, with no timed call or wait in between, joins a row, and from the
    // kReadsBeforeBusyWait-th read of a row on each costs HostCall::ClockRead, so that a loop
    // waiting for the clock to pass a deadline ends.
    void ClockRead();
    static constexpr int kReadsBeforeBusyWait = 64;

    // The calling thread begins a wait (a deadline wait: pthread_cond_timedwait and kin; a
    // semaphore: sem_wait, sem_trywait): the read just before it, if any, computed the deadline or
    // is the lock's own (CPython reads the clock at every lock acquire, with a timeout or not, and
    // once more when the lock is taken), so it joins no row. Whether a lock was free (one read) or
    // not (two reads, then a wait) depends on other threads; neither leaves a read in the row.
    void DeadlineWait();

    // Queries are free (cudaStreamQuery, cudaEventQuery, gpu-emu/README.md "Host time"): how many
    // a thread makes can depend on other threads (PyTorch's NCCL process group queries, on the
    // training thread, the works its watchdog thread has not yet found done). So is the
    // cudaGetLastError that clears a not-ready answer (as PyTorch's CUDAEvent::query does): a query
    // that said not ready calls NotReadyQuery, and TakeNotReadyQuery tells the next
    // cudaGetLastError, before any other timed call, that it is part of that query.
    void NotReadyQuery();
    bool TakeNotReadyQuery();

    // How many threads that drive the timeline are alive and not parked (at least 1): what the
    // simulator waits for before it may pass this process's clock.
    int DrivingThreads() const;
    // Every driving thread is parked: the process waits for threads that drive no GPU.
    bool AllDrivingThreadsParked() const;

    // The calling thread, if it drives, parks in an untimed wait for another thread of this
    // process (pthread_cond_wait, sem_wait: PyTorch's autograd thread waiting for work, the
    // training thread waiting for backward to end) or leaves it. A parked thread submits nothing
    // until another thread wakes it, so the simulator need not wait for it: with every other
    // driving thread in a synchronizing call, the process is blocked. Returns whether the count
    // changed (the thread drives).
    static bool Park(bool parked);

    // Whether the calling thread drives the timeline (its clock_gettime shows virtual time).
    bool CallingThreadDrives() const;

    Ns Now() const { return m_now; }

    // Adds a modelled host cost (`what` names it in the trace).
    void Charge(Ns cost, const char* what = "cost")
    {
        m_now += cost;
        Trace(what, cost);
    }

    // Adds what `call` (moving or allocating `bytes`) costs on the host description, when the
    // calling thread drives the timeline. Returns the cost added.
    Ns Charge(spec::HostCall call, uint64_t bytes = 0);

    // Moves the clock to t if t is later (synchronization); never backwards.
    void AdvanceTo(Ns t);

    // CPU time of the calling thread, in ns.
    static double ThreadCpuNs();

private:
    // Writes a line to EIDOLON_HOST_CLOCK_TRACE's file, if it is set (gpu-emu/README.md). Inline
    // and one test when it is not: every charge of every intercepted call passes here.
    void Trace(const char* what, Ns by) const
    {
        if (s_tracing)
        {
            TraceLine(what, by);
        }
    }
    void TraceLine(const char* what, Ns by) const;
    static const bool s_tracing; // EIDOLON_HOST_CLOCK_TRACE names a directory

    HostTimeModel m_model;
    std::shared_ptr<const spec::HostSpec> m_host;
    Ns m_now = 0;
};

} // namespace eidolon::gpu
