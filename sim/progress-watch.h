// Whether the run is still going: every process said goodbye (done), every live process waits
// and nothing is left to simulate (deadlock), a rank on this host is gone without its goodbye,
// or nothing has progressed for the watchdog's time.
#pragma once

#include "rank-timelines.h"
#include "sim-options.h"

#include <chrono>
#include <string>

namespace eidolon::sim
{

class ProgressWatch
{
public:
    ProgressWatch(const SimOptions& options, RankTimelines& timelines);

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
    // A rank started on this host whose pid no longer exists (checked once a second).
    std::string FindVanishedRank();

    const SimOptions& m_options;
    RankTimelines& m_timelines;
    std::chrono::steady_clock::time_point m_lastProgress;
    std::chrono::steady_clock::time_point m_lastLivenessCheck;
};

} // namespace eidolon::sim
