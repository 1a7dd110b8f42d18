#include "horizon.h"

#include "virtual-time.h"

#include "ns3/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace eidolon::sim
{

Horizon::Horizon(const SimOptions& options, std::ostream& log, RankTimelines& timelines,
                 ns3::Ptr<ns3::eidolon::NetworkModel> network, RunStatistics& stats)
    : m_options(options)
    , m_log(log)
    , m_timelines(timelines)
    , m_network(network)
    , m_stats(stats)
{
}

double
Horizon::Compute()
{
    if (!m_timelines.AllJoined())
    {
        return 0; // a process that has not joined yet may still issue work from time 0
    }
    if (m_options.optimistic)
    {
        return kInf; // no running rank is waited for
    }
    // A rank silent past the grace period is gone on without only when the run would otherwise
    // stall: every running rank is silent past it. While one is still heard from, a silent rank
    // is more likely starved of CPU (hundreds of ranks on a few cores, or busy in this emulator)
    // than stuck outside CUDA waiting on a blocked rank, and the ranks still heard from block
    // on the simulator soon if it is the latter. So either every running rank is waited for
    // (the conservative horizon) or none is.
    auto now = std::chrono::steady_clock::now();
    auto silentFor = [&](const RankProcess& process)
    { return std::chrono::duration<double>(now - process.lastHeard).count(); };
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && !process->IsBlocked() &&
            silentFor(*process) <= m_options.graceSeconds)
        {
            return Conservative();
        }
    }
    // Go on without them; what they send later from the simulated past is counted.
    std::vector<const RankProcess*> silenced; // newly gone silent: one line for all of them
    double longestSilence = 0;
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && !process->IsBlocked() && !process->graceWarned)
        {
            process->graceWarned = true;
            silenced.push_back(process.get());
            longestSilence = std::max(longestSilence, silentFor(*process));
        }
    }
    WarnSilenced(silenced, longestSilence);
    return kInf;
}

void
Horizon::WarnSilenced(const std::vector<const RankProcess*>& silenced, double seconds)
{
    if (silenced.size() == 1)
    {
        m_log << fmt::format("eidolon: {} has sent nothing for {:.0f} s of wall time (host work "
                             "outside CUDA, such as Python imports, or stuck); going on "
                             "optimistically past its clock {:.3f} ms: what it sends later from "
                             "before that counts as a causality violation (--grace)\n",
                             silenced[0]->name, seconds, silenced[0]->clock / 1e6);
    }
    else if (silenced.size() > 1)
    {
        // Hundreds of ranks on a loaded machine go silent together: one line, not one each.
        constexpr size_t kNamed = 4;
        std::string names;
        double earliest = kInf;
        for (size_t i = 0; i < silenced.size(); ++i)
        {
            if (i < kNamed)
            {
                names += (i > 0 ? ", " : "") + silenced[i]->name;
            }
            earliest = std::min(earliest, silenced[i]->clock);
        }
        if (silenced.size() > kNamed)
        {
            names += fmt::format(" and {} more", silenced.size() - kNamed);
        }
        m_log << fmt::format("eidolon: {} ranks ({}) have sent nothing for up to {:.0f} s of wall "
                             "time (host work outside CUDA, such as Python imports, or stuck); "
                             "going on optimistically past their clocks (the earliest {:.3f} ms): "
                             "what they send later from before that counts as a causality "
                             "violation (--grace)\n",
                             silenced.size(), names, seconds, earliest / 1e6);
    }
}

double
Horizon::Conservative() const
{
    double committed = kInf;
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && !process->IsBlocked())
        {
            committed = std::min(committed, process->clock);
        }
    }
    return committed;
}

bool
Horizon::Advance()
{
    double horizon = Compute();
    if (m_timelines.Processes().empty())
    {
        return false;
    }
    double now = NowNs();
    if (horizon <= now)
    {
        m_reached = std::max(m_reached, horizon);
        return false;
    }
    bool moved = false;
    if (horizon != m_lastHorizon)
    {
        moved = true;
        m_lastHorizon = horizon;
    }
    // Run every event before the horizon (events at the horizon itself wait: a rank may still
    // add work there).
    ns3::EventId stop;
    if (std::isfinite(horizon))
    {
        stop = ns3::Simulator::Schedule(
            ToTime(horizon) - ns3::Simulator::Now() - ns3::PicoSeconds(1), &StopNow);
    }
    ClearStopRequest();
    // While ns-3 runs no rank issues anything: a running rank's next work starts at or after its
    // clock, and a rank a sync releases goes on from an end decided at or after ns-3's present
    // (the run stops right there). So the flow model may commit as it goes, up to the clocks of
    // the running ranks (every rank waiting: up to its own present).
    if (m_timelines.AllJoined())
    {
        const double bound = Conservative();
        m_network->CommitAhead(std::isfinite(bound) ? ToTime(bound) : ns3::Time::Max());
    }
    RunEvents();
    m_network->CommitAhead(ns3::Time(-1));
    m_queueEmpty = !StopRequested();
    ns3::Simulator::Cancel(stop);
    // Stopped by the horizon's own event (1 ps before it) or out of events: everything before
    // the horizon has run; stopped early (a sync released a rank): everything before now.
    const bool atHorizon =
        m_queueEmpty ||
        (std::isfinite(horizon) && ns3::Simulator::Now() >= ToTime(horizon) - ns3::PicoSeconds(1));
    m_reached = std::max(m_reached, atHorizon ? horizon : NowNs());
    // History before the conservative horizon (every rank still running, even one the
    // optimistic horizon went on without) is no longer needed for a replay.
    double committed = Conservative();
    if (m_timelines.AllJoined())
    {
        m_network->Commit(std::isfinite(committed) ? ToTime(committed) : ns3::Simulator::Now());
    }
    // The per-GPU covered time folds what no later slice can overlap, which is not the horizon
    // (a collective member that waited reports its slice from its own start when it ends, and a
    // blocked rank's clock is not in the horizon): folding by the horizon made the covered time
    // depend on where the wall-clock interleaving put it.
    const double settled = std::min(
        {NowNs(), m_timelines.LeastLiveClock(), m_timelines.EarliestRunningCommunication()});
    if (m_timelines.AllJoined() && std::isfinite(settled))
    {
        m_stats.CloseBefore(settled);
    }
    return moved || NowNs() > now;
}

} // namespace eidolon::sim
