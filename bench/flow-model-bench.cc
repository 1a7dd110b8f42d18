// Benchmarks of the flow model; prints a table. Not a test: figures depend on the machine.
//   flow-model-bench [--quick]
#include "bench-clock.h"
#include "ns3/cluster-helper.h"
#include "ns3/collective-helper.h"
#include "ns3/flow-model.h"
#include "ns3/fluid-network.h"
#include "ns3/simulator.h"
#include "ns3/topology.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

using namespace ns3;
using namespace ns3::eidolon;

namespace
{
using ::eidolon::bench::PeakRssMb;
using ::eidolon::bench::WallSince;

void
RingAllReduce(const std::string& topologyName, uint32_t channels, uint64_t bytes,
              CollectiveHelper::RingMode mode)
{
    auto t0 = std::chrono::steady_clock::now();
    ClusterHelper cluster;
    Ptr<Topology> topo = cluster.ReadTopology(topologyName);
    double load = WallSince(t0);
    auto t1 = std::chrono::steady_clock::now();
    Ptr<NetworkModel> net = cluster.Install(topo);
    CollectiveHelper coll(net);
    Time done;
    coll.RingAllReduce(CollectiveHelper::RailAlignedRings(*topo, channels), bytes, Time(0),
                       [&done](Time at) { done = at; }, mode);
    Simulator::Run();
    double wall = WallSince(t1);
    auto st = net->GetStats();
    double busbw = double(bytes) / done.GetSeconds() *
                   CollectiveHelper::AllReduceBusFactor(topo->GpuCount()) / 1e9;
    std::printf("| ring all-reduce %-9s | %-18s | %5u GPUs x %u ch, %6.0f MiB | %9llu flows | "
                "load %6.3f s | sim %8.3f s | virtual %9.1f us | busbw %6.1f GB/s |\n",
                mode == CollectiveHelper::RingMode::Pipelined ? "pipelined" : "stepwise",
                topologyName.c_str(), topo->GpuCount(), channels, double(bytes) / 1048576.0,
                (unsigned long long)st.flowsAdded, load, wall, done.GetSeconds() * 1e6, busbw);
    Simulator::Destroy();
}

/// Keeps `active` flows alive in groups of `group` flows sharing one channel (components stay
/// small); every departure is followed by an arrival in the same group. Time per event.
void
Churn(uint32_t active, uint32_t group, uint64_t events)
{
    const uint32_t groups = active / group;
    std::vector<double> capacity(groups, 1e10);
    FluidNetwork net(capacity);
    std::mt19937_64 rng(7);
    uint64_t nextId = 0;
    auto add = [&](uint32_t g, int64_t at) {
        FluidNetwork::FlowInput in;
        in.path = {g};
        in.bytes = double(1000000 + rng() % 9000000);
        in.start = at;
        net.Add(nextId++, std::move(in));
    };
    for (uint32_t i = 0; i < active; ++i)
    {
        add(i / group, 0);
    }
    net.AdvanceTo(0);
    auto t0 = std::chrono::steady_clock::now();
    uint64_t done = 0;
    while (done < events)
    {
        int64_t t = net.NextEventTime();
        size_t before = net.CompletionCount();
        net.AdvanceTo(t);
        for (size_t i = before; i < net.CompletionCount(); ++i)
        {
            // replace each finished flow by a new one in a random group
            add(uint32_t(rng() % groups), t);
            ++done;
        }
        net.Commit(t);
    }
    double wall = WallSince(t0);
    std::printf("| churn | %7u active flows in components of %u | %8llu departures+arrivals | "
                "%7.3f us per event | live slots %7zu | history %6zu entries |\n",
                active, group, (unsigned long long)(2 * done), wall / double(2 * done) * 1e6,
                net.LiveFlowSlots(), net.HistoryEntries());
}

/// Rollback over `depth` events in one component of `width` flows: every 1 us one flow leaves
/// and another arrives, so each event re-solves the same number of flows.
void
Rollback(uint32_t depth, uint32_t width)
{
    FluidNetwork net({1e10});
    // Flow i runs from i us to (i + width) us: sizes chosen so that at any instant `width` flows
    // share the channel, each at 1e10 / width bytes/s.
    const double bytes = 1e10 / width * 1e-6 * width; // rate x lifetime (width us)
    for (uint32_t i = 0; i < depth + width; ++i)
    {
        FluidNetwork::FlowInput in;
        in.path = {0};
        in.bytes = bytes;
        in.start = int64_t(i) * 1000;
        net.Add(i, in);
    }
    const int64_t end = int64_t(depth + width) * 1000;
    const int64_t from = int64_t(width) * 1000;
    net.AdvanceTo(end);
    size_t entries = net.HistoryEntries();
    auto t0 = std::chrono::steady_clock::now();
    net.RollbackTo(end - int64_t(depth) * 1000);
    double undo = WallSince(t0);
    size_t left = net.HistoryEntries();
    t0 = std::chrono::steady_clock::now();
    net.AdvanceTo(end);
    double replay = WallSince(t0);
    (void)from;
    std::printf("| rollback | depth %6u events, component %4u flows | %9zu undo entries undone | "
                "undo %9.3f ms | replay %9.3f ms |\n",
                depth, width, entries - left, undo * 1e3, replay * 1e3);
}
} // namespace

int
main(int argc, char** argv)
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    std::printf("## eidolon flow-model benchmarks (wall-clock, one core)\n");
    RingAllReduce("dgx-h100-128node", 8, 1ULL << 30, CollectiveHelper::RingMode::Pipelined);
    RingAllReduce("default", 8, 1ULL << 30, CollectiveHelper::RingMode::Stepwise);
    RingAllReduce("dgx-h100-4node", 8, 1ULL << 30, CollectiveHelper::RingMode::Stepwise);
    if (!quick)
    {
        RingAllReduce("dgx-a100-16node", 8, 1ULL << 30, CollectiveHelper::RingMode::Stepwise);
    }
    for (uint32_t active : {1000u, 10000u, 100000u})
    {
        Churn(active, 4, quick ? 20000 : 200000);
    }
    for (uint32_t depth : {10u, 100u, 1000u, 10000u, 100000u})
    {
        Rollback(depth, 16);
    }
    Rollback(10000, 256);
    std::printf("peak resident memory: %ld MB\n", PeakRssMb());
    return 0;
}
