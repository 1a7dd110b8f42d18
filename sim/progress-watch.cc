#include "progress-watch.h"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace eidolon::sim
{

ProgressWatch::ProgressWatch(const SimOptions& options, RankTimelines& timelines)
    : m_options(options)
    , m_timelines(timelines)
    , m_lastProgress(std::chrono::steady_clock::now())
{
}

bool
ProgressWatch::AllLeft() const
{
    bool allDone = !m_timelines.Processes().empty() && m_timelines.AllJoined();
    for (const auto& process : m_timelines.Processes())
    {
        allDone = allDone && !process->Live();
    }
    return allDone;
}

bool
ProgressWatch::AllBlocked() const
{
    bool allBlocked = !m_timelines.Processes().empty() && m_timelines.AllJoined();
    for (const auto& process : m_timelines.Processes())
    {
        allBlocked = allBlocked && (!process->Live() || process->IsBlocked());
    }
    return allBlocked;
}

std::string
ProgressWatch::FindVanishedRank()
{
    // A rank on this host that is gone without its goodbye (killed, or crashed before atexit):
    // the launcher reports its own children; ranks an external engine started are checked here.
    auto now = std::chrono::steady_clock::now();
    if (now - m_lastLivenessCheck <= std::chrono::seconds(1))
    {
        return "";
    }
    m_lastLivenessCheck = now;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && process->pid > 0 && process->hostname == host &&
            kill(process->pid, 0) != 0 && errno == ESRCH)
        {
            process->dead = true;
            return fmt::format("{} (pid {}) ended without saying goodbye (killed, or it crashed)",
                               process->name, process->pid);
        }
    }
    return "";
}

ProgressWatch::Verdict
ProgressWatch::Check(bool queueEmpty)
{
    if (AllLeft())
    {
        return {Verdict::AllDone, ""};
    }
    if (AllBlocked() && queueEmpty)
    {
        return {Verdict::Deadlock, "deadlock: every rank waits and nothing is in flight\n"};
    }
    std::string vanished = FindVanishedRank();
    if (!vanished.empty())
    {
        return {Verdict::RankGone, vanished};
    }
    double idle =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_lastProgress).count();
    if (m_options.watchdogSeconds > 0 && idle > m_options.watchdogSeconds)
    {
        return {Verdict::Watchdog,
                fmt::format("watchdog: nothing progressed for {:.0f} s (wall)\n", idle)};
    }
    return {};
}

} // namespace eidolon::sim
