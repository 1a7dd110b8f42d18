// The host timeline of one rank process (DESIGN.md "Virtual time"), and the one place where the
// threading rule lives: which threads' CPU time moves it.
#pragma once

#include <cstdint>

namespace eidolon::gpu
{

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

// One host clock per process. Not thread-safe by itself: callers hold the emulator lock.
class HostClock
{
public:
    explicit HostClock(double cpuScale);

    // Threading rule. The main thread drives the timeline from process start; any other thread
    // starts driving it at its first Submit call. The CPU time a driving thread spent outside
    // gpu-emu since it last left us is added (times cpuScale); threads that only query or poll
    // never move the clock. Call at the entry of every intercepted call.
    void Enter(CallKind kind);

    // Call when leaving gpu-emu: the time spent inside us is not charged to the program.
    void Leave();

    // The calling thread waited (blocked on the simulator) inside the call: the wait is neither
    // the program's CPU time nor ours.
    void Rebase();

    // How many threads that drive the timeline are alive (at least 1).
    int DrivingThreads() const;

    // Whether the calling thread drives the timeline (its clock_gettime shows virtual time).
    bool CallingThreadDrives() const;

    Ns Now() const { return m_now; }

    // Adds a modelled host cost (e.g. the launch overhead of the GPU spec).
    void Charge(Ns cost) { m_now += cost; }

    // Moves the clock to t if t is later (synchronization); never backwards.
    void AdvanceTo(Ns t)
    {
        if (t > m_now)
        {
            m_now = t;
        }
    }

    // CPU time of the calling thread, in ns.
    static double ThreadCpuNs();

private:
    double m_cpuScale;
    Ns m_now = 0;
};

} // namespace eidolon::gpu
