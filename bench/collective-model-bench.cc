// Benchmarks of the collective model (NCCL's schedules as flows); prints a table. Not a test:
// figures depend on the machine.
//   collective-model-bench [--quick]
// Rows: an alltoall (every rank sends bytes/n to every rank, NCCL's grouped send/recv) on the
// first N GPUs of dgx-h100-128node, wall seconds to simulate it: posted as one call with every
// transfer (a whole group), and as one call per transfer, which is how the simulator posts the
// transfers of live ranks (each starts once both its sides have).
#include "ns3/cluster-helper.h"
#include "ns3/collective-model.h"
#include "ns3/network-model.h"
#include "ns3/simulator.h"
#include "ns3/topology.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sys/resource.h>

using namespace ns3;
using namespace ns3::eidolon;

namespace
{
double
WallSince(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

long
PeakRssMb()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}

void
Alltoall(Ptr<Topology> topo, uint32_t ranks, uint64_t bytes, bool perTransfer)
{
    ClusterHelper cluster;
    Ptr<NetworkModel> net = cluster.Install(topo);
    Ptr<CollectiveModel> model = CreateObject<CollectiveModel>();
    model->SetNetworkModel(net);
    CollectiveCall call;
    call.kind = CollectiveKind::SendRecv;
    call.tag = 1;
    for (uint32_t g = 0; g < ranks; ++g)
    {
        call.gpus.push_back(topo->GpuDevice(g));
    }
    const uint64_t perPeer = bytes / ranks;
    for (uint32_t s = 0; s < ranks; ++s)
    {
        for (uint32_t d = 0; d < ranks; ++d)
        {
            call.transfers.push_back({s, d, perPeer});
        }
    }
    auto t0 = std::chrono::steady_clock::now();
    Time last;
    auto done = [&last](uint32_t) { last = std::max(last, Simulator::Now()); };
    if (perTransfer)
    {
        CollectiveCall one = call;
        one.idleRanksTakePart = false; // as the simulator posts them
        for (size_t i = 0; i < call.transfers.size(); ++i)
        {
            one.transfers = {call.transfers[i]};
            one.tag = 1 + i;
            model->Start(one, std::vector<Time>(ranks, Seconds(0)), done);
        }
    }
    else
    {
        model->Start(call, std::vector<Time>(ranks, Seconds(0)), done);
    }
    double posted = WallSince(t0);
    Simulator::Run();
    double wall = WallSince(t0);
    // nccl-tests' alltoall busbw: bytes / time x (n-1)/n.
    double busbw = double(bytes) / last.GetSeconds() * (ranks - 1) / ranks / 1e9;
    const NetworkModelStats st = net->GetStats();
    std::printf("| alltoall %5u ranks | %-12s | %6.0f MiB | %7zu transfers | post %6.3f s | "
                "total %7.3f s "
                "| %6llu re-solves of %9llu flows | virtual %9.1f us | busbw %6.1f GB/s | "
                "peak RSS %5ld MiB |\n",
                ranks, perTransfer ? "per transfer" : "one group", double(bytes) / 1048576.0,
                call.transfers.size(), posted, wall, (unsigned long long)st.rateUpdates,
                (unsigned long long)st.flowsResolved, last.GetSeconds() * 1e6, busbw, PeakRssMb());
    std::fflush(stdout);
    Simulator::Destroy();
}
} // namespace

int
main(int argc, char** argv)
{
    Time::SetResolution(Time::PS);
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    Ptr<Topology> topo = ClusterHelper().ReadTopology("dgx-h100-128node");
    for (uint32_t ranks : {64u, 128u, 256u, 1024u})
    {
        if (quick && ranks > 128)
        {
            break;
        }
        Alltoall(topo, ranks, uint64_t(1) << 30, false);
        if (ranks <= 256)
        {
            Alltoall(topo, ranks, uint64_t(1) << 30, true);
        }
    }
    return 0;
}
