// Whether the run is still going: every process said goodbye (done), every live process waits
// and nothing is left to simulate (deadlock), a rank on this host is gone without its goodbye,
// or nothing has progressed for the watchdog's time.
#pragma once

#include "rank-timelines.h"
#include "sim-options.h"

#include <chrono>
#include <map>
#include <string>

namespace eidolon::sim
{

class ProgressWatch
{
public:
    ProgressWatch(const SimOptions& options, RankTimelines& timelines);
    ~ProgressWatch();
    ProgressWatch(const ProgressWatch&) = delete;
    ProgressWatch& operator=(const ProgressWatch&) = delete;

    // Something moved: the horizon or ns-3's present advanced (messages alone do not count).
    void Progressed() { m_lastProgress = std::chrono::steady_clock::now(); }

    struct Verdict
    {
        enum Kind
        {
            Running,
            AllDone,  // every process has left: simulate what is left and end
            Deadlock, // every live process waits and nothing is in flight
            RankGone, // `error` names it (marked dead)
            Watchdog, // `error` says for how long
        } kind = Running;
        std::string error;
    };
    // `queueEmpty`: ns-3's last run ended because no events were left.
    Verdict Check(bool queueEmpty);

private:
    bool AllLeft() const;
    bool AllBlocked() const;
    // A rank on this host that ended without its goodbye: seen through a pidfd the moment it
    // exits (its status read while it is a zombie, before whoever started it reaps it), or, where
    // no pidfd could be opened, as a pid that no longer exists (checked once a second).
    std::string FindVanishedRank();
    // Opens a pidfd for each live rank process on this host that has none yet.
    void WatchNewProcesses();

    const SimOptions& m_options;
    RankTimelines& m_timelines;
    std::chrono::steady_clock::time_point m_lastProgress;
    std::chrono::steady_clock::time_point m_lastLivenessCheck;
    std::chrono::steady_clock::time_point m_lastExitPoll;
    std::map<int, int> m_exitFds; // pid -> pidfd (-1: none could be opened)
    std::string m_hostname;
};

/// How a process ended, from its waitpid-style status (/proc/PID/stat's exit_code): "was killed by
/// signal 9 (Killed)", "exited with status 1".
std::string DescribeWaitStatus(int status);

/// What a signal that ended a rank suggests ("; a SIGKILL that nobody sent is the kernel's
/// out-of-memory killer ..."), or empty.
std::string SignalHint(int signal);

/// The waitpid-style status of `pid` if it is a zombie (ended, not yet reaped), else -1.
int ZombieExitStatus(int pid);

} // namespace eidolon::sim
