// Benchmarks of the packet model (every flow of a collective as ns-3 packets); prints a table.
// Not a test: figures depend on the machine.
//   packet-model-bench [--quick]
// Rows: one NCCL all-reduce as the collective model posts it (NCCL's choice for the size) on the
// first 2 or 4 nodes of dgx-h100-4node, carried by the flow model (the reference), the packet
// model's RDMA transport (UDP + DCQCN) and DCTCP: the simulated time, the wall seconds, the ns-3
// events processed and the process's peak RSS so far.
#include "bench-clock.h"
#include "ns3/cluster-helper.h"
#include "ns3/collective-model.h"
#include "ns3/config.h"
#include "ns3/network-model.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/topology.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace ns3;
using namespace ns3::eidolon;

namespace
{
using ::eidolon::bench::PeakRssMb;
using ::eidolon::bench::WallSince;

/// One all-reduce of `bytes` on the GPUs of the first `nodes` nodes; `transport` empty: the flow
/// model.
void
AllReduce(Ptr<Topology> topo, uint32_t nodes, uint64_t bytes, const std::string& transport)
{
    ClusterHelper cluster;
    if (!transport.empty())
    {
        cluster.SetNetworkModel("ns3::eidolon::PacketModel");
        Config::SetDefault("ns3::eidolon::PacketModel::Transport", StringValue(transport));
    }
    auto t0 = std::chrono::steady_clock::now();
    Ptr<NetworkModel> net = cluster.Install(topo);
    Ptr<CollectiveModel> model = CreateObject<CollectiveModel>();
    model->SetNetworkModel(net);
    CollectiveCall call;
    call.kind = CollectiveKind::AllReduce;
    call.bytes = bytes;
    call.typeSize = 4;
    call.tag = 1;
    for (uint32_t node = 0; node < nodes; ++node)
    {
        for (uint32_t gpu : topo->GpusOfNode(node))
        {
            call.gpus.push_back(gpu);
        }
    }
    Time last;
    model->Start(call, std::vector<Time>(call.gpus.size(), Seconds(0)),
                 [&last](uint32_t) { last = std::max(last, Simulator::Now()); });
    Simulator::Run();
    const double wall = WallSince(t0);
    std::printf("| all_reduce %5.0f MiB | %2u x 8 GPUs | %-12s | virtual %8.2f us | wall %7.2f s "
                "| %10llu events | peak RSS %5ld MiB |\n",
                double(bytes) / 1048576.0, nodes,
                transport.empty() ? "flow model" : ("packet " + transport).c_str(),
                last.GetSeconds() * 1e6, wall,
                (unsigned long long)Simulator::GetEventCount(), PeakRssMb());
    std::fflush(stdout);
    Simulator::Destroy();
}
} // namespace

int
main(int argc, char** argv)
{
    Time::SetResolution(Time::PS);
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    Ptr<Topology> topo = ClusterHelper().ReadTopology("dgx-h100-4node");
    for (uint32_t nodes : {2u, 4u})
    {
        for (const char* transport : {"", "rdma", "dctcp"})
        {
            if (quick && nodes > 2 && *transport != '\0')
            {
                continue;
            }
            AllReduce(topo, nodes, uint64_t(4) << 20, transport);
        }
    }
    return 0;
}
