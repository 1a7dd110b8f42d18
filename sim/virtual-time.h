// Virtual time as the simulator core keeps it: double nanoseconds, and ns-3's Time (picoseconds)
// where the network model runs. Also the one way the core stops ns-3's run loop, so that the
// horizon can tell a stop of its own from a run that ended because no events were left.
#pragma once

#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <limits>

namespace eidolon::sim
{

constexpr double kInf = std::numeric_limits<double>::infinity();

ns3::Time ToTime(double ns);

// ns-3's present in nanoseconds.
double NowNs();

// Stops ns-3's run loop at the current event and remembers that it was asked to.
void StopNow();
// Forgets earlier stop requests (before a run).
void ClearStopRequest();
// Whether a StopNow came since the last ClearStopRequest (false: the run had no events left).
bool StopRequested();

// Runs ns-3's loop (Simulator::Run). With an interrupt check set, ns-3 also asks it every
// `period` of simulated time while other events are pending and stops (StopNow) when it says
// so: where one run can take minutes of wall time (the packet model), a stop signal must not
// wait for it. The check only reads a flag: it changes no model state, so results do not
// depend on it.
void RunEvents();
void SetInterruptCheck(std::function<bool()> check, ns3::Time period);

} // namespace eidolon::sim
