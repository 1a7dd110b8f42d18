#include "virtual-time.h"

#include "ns3/simulator.h"

#include <cmath>

namespace eidolon::sim
{
namespace
{
bool g_stopRequested = false; // set by every Stop of ours; clear: Run ended with no events left
std::function<bool()> g_interrupted;
ns3::Time g_interruptPeriod;
ns3::EventId g_interruptPoll;

void
PollInterrupt()
{
    if (g_interrupted())
    {
        StopNow();
        return;
    }
    if (!ns3::Simulator::IsFinished()) // only while other events are left: never run forever
    {
        g_interruptPoll = ns3::Simulator::Schedule(g_interruptPeriod, &PollInterrupt);
    }
}
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

void
SetInterruptCheck(std::function<bool()> check, ns3::Time period)
{
    g_interrupted = std::move(check);
    g_interruptPeriod = period;
}

void
RunEvents()
{
    if (g_interrupted)
    {
        g_interruptPoll = ns3::Simulator::Schedule(g_interruptPeriod, &PollInterrupt);
    }
    ns3::Simulator::Run();
    ns3::Simulator::Cancel(g_interruptPoll);
}

} // namespace eidolon::sim
