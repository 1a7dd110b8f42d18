#include "virtual-time.h"

#include "ns3/simulator.h"

#include <cmath>

namespace eidolon::sim
{
namespace
{
bool g_stopRequested = false; // set by every Stop of ours; clear: Run ended with no events left
} // namespace

ns3::Time
ToTime(double ns)
{
    return ns3::PicoSeconds(int64_t(std::llround(ns * 1000.0)));
}

double
NowNs()
{
    return double(ns3::Simulator::Now().GetPicoSeconds()) / 1000.0;
}

void
StopNow()
{
    g_stopRequested = true;
    ns3::Simulator::Stop();
}

void
ClearStopRequest()
{
    g_stopRequested = false;
}

bool
StopRequested()
{
    return g_stopRequested;
}

} // namespace eidolon::sim
