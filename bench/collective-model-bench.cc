// Benchmarks of the collective model (NCCL's schedules as flows); prints a table. Not a test:
// figures depend on the machine.
//   collective-model-bench [--quick | --staggered N]   (--staggered N: that row alone, N ranks)
// Rows: an alltoall (every rank sends bytes/n to every rank, NCCL's grouped send/recv) on the
// first N GPUs of dgx-h100-128node, wall seconds to simulate it: posted as one call with every
// transfer (a whole group), and as one call per transfer, which is how the simulator posts the
// transfers of live ranks (each starts once both its sides have); "staggered": per transfer, with
// the GPUs of a node starting 25 us apart (one process issuing its 8 GPUs' groups one after the
// other, as nccl-tests' -g 8), so that the transfers start and end in waves and the flow model
// re-solves its one large component some 200 times, as in a live run.
#include "bench-clock.h"
#include "ns3/cluster-helper.h"
#include "ns3/collective-model.h"
#include "ns3/network-model.h"
#include "ns3/simulator.h"
#include "ns3/topology.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace ns3;
using namespace ns3::eidolon;

namespace
{
using ::eidolon::bench::PeakRssMb;
using ::eidolon::bench::WallSince;

enum class Posting
{
    OneGroup,
    PerTransfer,
    Staggered,
};

void
Alltoall(Ptr<Topology> topo, uint32_t ranks, uint64_t bytes, Posting posting)
{
    const bool perTransfer = posting != Posting::OneGroup;
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
        std::vector<Time> starts(ranks, Seconds(0));
        for (size_t i = 0; i < call.transfers.size(); ++i)
        {
            one.transfers = {call.transfers[i]};
            one.tag = 1 + i;
            if (posting == Posting::Staggered)
            {
                const uint32_t s = call.transfers[i].srcRank;
                const uint32_t d = call.transfers[i].dstRank;
                starts[s] = starts[d] = MicroSeconds(25 * std::max(s % 8, d % 8));
            }
            model->Start(one, starts, done);
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
                ranks,
                posting == Posting::OneGroup      ? "one group"
                : posting == Posting::PerTransfer ? "per transfer"
                                                  : "staggered",
                double(bytes) / 1048576.0, call.transfers.size(), posted, wall,
                (unsigned long long)st.rateUpdates, (unsigned long long)st.flowsResolved,
                last.GetSeconds() * 1e6, busbw, PeakRssMb());
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
    if (argc > 2 && std::strcmp(argv[1], "--staggered") == 0)
    {
        Alltoall(topo, uint32_t(std::strtoul(argv[2], nullptr, 10)), uint64_t(1) << 30,
                 Posting::Staggered);
        return 0;
    }
    for (uint32_t ranks : {64u, 128u, 256u, 1024u})
    {
        if (quick && ranks > 128)
        {
            break;
        }
        Alltoall(topo, ranks, uint64_t(1) << 30, Posting::OneGroup);
        if (ranks <= 256)
        {
            Alltoall(topo, ranks, uint64_t(1) << 30, Posting::PerTransfer);
            Alltoall(topo, ranks, uint64_t(1) << 30, Posting::Staggered);
        }
    }
    return 0;
}
