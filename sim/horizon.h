// The horizon (DESIGN.md "Time synchronization"): ns-3 runs only as far as no rank can still add
// work, the least clock of the ranks that are running (a blocked rank waits on the simulator; a
// rank silent past the grace period once no running rank is heard from, or every rank in
// optimistic mode, is not waited for). The flow model's history before the conservative horizon
// is committed: no late flow can need it.
#pragma once

#include "rank-timelines.h"
#include "run-statistics.h"
#include "sim-options.h"

#include "ns3/network-model.h"

#include <ostream>
#include <vector>

namespace eidolon::sim
{

class Horizon
{
public:
    Horizon(const SimOptions& options, std::ostream& log, RankTimelines& timelines,
            ns3::Ptr<ns3::eidolon::NetworkModel> network, RunStatistics& stats);

    // Runs every event before the horizon and commits the history no rank can still reach.
    // Returns whether the horizon or ns-3's present moved (progress, for the watchdog).
    bool Advance();
    // The last Advance ended because ns-3 had no events left (not at the horizon).
    bool QueueEmpty() const { return m_queueEmpty; }
    // Every ns-3 event before this virtual time has run (and no rank can add one before it).
    double Reached() const { return m_reached; }

private:
    // The least clock of the ranks waited for (0 until every process has joined; infinite when
    // none is waited for).
    double Compute();
    // The least clock of every rank still running, silent or not.
    double Conservative() const;
    // Says which ranks just went past the grace period silent: one line for all of them.
    void WarnSilenced(const std::vector<const RankProcess*>& silenced, double seconds);

    const SimOptions& m_options;
    std::ostream& m_log;
    RankTimelines& m_timelines;
    ns3::Ptr<ns3::eidolon::NetworkModel> m_network;
    RunStatistics& m_stats;
    double m_lastHorizon = -1;
    bool m_queueEmpty = false;
    double m_reached = 0;
};

} // namespace eidolon::sim
