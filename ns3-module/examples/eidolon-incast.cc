/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * Where the packet model and the flow model differ, and why: an incast. Every GPU of nodes 1..N-1
 * sends `bytes` to GPU 0 at the same instant. The flow model shares the receiving NIC's link
 * fairly, so every flow ends at the same time (total bytes / link rate). The packet model queues
 * the bursts at the leaf port facing GPU 0's NIC, marks them (DCTCP) or loses them (TCP), and the
 * flows finish spread out with a tail. Prints completion times of both models and, for the packet
 * model, the queue length at that port over time (CSV), for scripts/plot-incast.py.
 *
 *   eidolon-incast --topology=dgx-h100-4node --bytes=4MiB --transport=dctcp --out=out/incast
 */
#include "ns3/cluster-helper.h"
#include "ns3/command-line.h"
#include "ns3/core-module.h"
#include "ns3/packet-model.h"
#include "ns3/queue-disc.h"
#include "ns3/topology.h"
#include "ns3/traffic-control-layer.h"

#include <filesystem>
#include <fstream>
#include <iostream>

using namespace ns3;
using namespace ns3::eidolon;

namespace
{
std::vector<int64_t>
RunIncast(const std::string& topologyName,
          const std::string& model,
          const std::string& transport,
          uint64_t bytes,
          std::ofstream* queueCsv,
          std::string* bottleneck)
{
    ClusterHelper cluster;
    if (model == "packet")
    {
        cluster.SetNetworkModel("ns3::eidolon::PacketModel");
        cluster.SetNetworkModelAttribute("Transport", StringValue(transport));
    }
    Ptr<Topology> topo = cluster.ReadTopology(topologyName);
    Ptr<NetworkModel> net = cluster.Install(topo);
    const uint32_t dst = topo->GpuDevice(0);
    std::vector<uint32_t> senders;
    for (uint32_t g = 0; g < topo->GpuCount(); ++g)
    {
        if (topo->GetDevice(topo->GpuDevice(g)).node != 0)
        {
            senders.push_back(g);
        }
    }
    // The last fabric hop into GPU 0's node: the channel entering GPU 0's NIC on the first path.
    FlowSpec probe;
    probe.src = topo->GpuDevice(senders[0]);
    probe.dst = dst;
    uint32_t intoNic = 0;
    for (uint32_t c : topo->Route(probe.src, dst, 0))
    {
        if (topo->GetDevice(topo->ChannelTo(c)).kind == DeviceKind::Nic &&
            topo->GetDevice(topo->ChannelTo(c)).node == 0)
        {
            intoNic = c;
        }
    }
    *bottleneck = topo->ChannelName(intoNic);
    if (auto packets = DynamicCast<PacketModel>(net); packets && queueCsv)
    {
        Ptr<NetDevice> dev = packets->GetChannelDevice(intoNic);
        Ptr<QueueDisc> q = dev->GetNode()->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(dev);
        q->TraceConnectWithoutContext(
            "PacketsInQueue",
            Callback<void, uint32_t, uint32_t>([queueCsv](uint32_t, uint32_t now) {
                *queueCsv << Simulator::Now().GetNanoSeconds() << "," << now << "\n";
            }));
    }
    std::vector<int64_t> finish(senders.size(), -1);
    for (size_t i = 0; i < senders.size(); ++i)
    {
        FlowSpec spec;
        spec.src = topo->GpuDevice(senders[i]);
        spec.dst = dst;
        spec.bytes = bytes;
        spec.tag = i;
        net->AddFlow(spec, [&finish, i](const FlowRecord& r) { finish[i] = r.finish.GetNanoSeconds(); });
    }
    Simulator::Run();
    Simulator::Destroy();
    return finish;
}
} // namespace

int
main(int argc, char* argv[])
{
    Time::SetResolution(Time::PS); // ns-scale serialization on fast links (see PacketModel)
    std::string topology = "dgx-h100-4node";
    std::string bytesText = "4MiB";
    std::string transport = "dctcp";
    std::string out = "out/incast";
    CommandLine cmd(__FILE__);
    cmd.AddValue("topology", "cluster (shipped name or path)", topology);
    cmd.AddValue("bytes", "bytes per sender", bytesText);
    cmd.AddValue("transport", "packet model transport: dctcp, tcp or rdma", transport);
    cmd.AddValue("out", "directory for the CSV files", out);
    cmd.Parse(argc, argv);
    const uint64_t bytes = ParseBytes(bytesText);
    std::filesystem::create_directories(out);

    std::ofstream queue(out + "/queue.csv");
    queue << "time_ns,packets\n";
    std::string bottleneck;
    auto fluid = RunIncast(topology, "flow", transport, bytes, nullptr, &bottleneck);
    auto packets = RunIncast(topology, "packet", transport, bytes, &queue, &bottleneck);

    std::ofstream csv(out + "/completions.csv");
    csv << "flow,flow_model_ns,packet_model_ns\n";
    for (size_t i = 0; i < fluid.size(); ++i)
    {
        csv << i << "," << fluid[i] << "," << packets[i] << "\n";
    }
    auto sorted = packets;
    std::sort(sorted.begin(), sorted.end());
    std::cout << "incast of " << fluid.size() << " x " << bytesText << " into GPU 0 on "
              << topology << " (" << transport << "), bottleneck " << bottleneck << "\n"
              << "  flow model:   every flow finishes at " << fluid[0] / 1e3 << " us\n"
              << "  packet model: first " << sorted.front() / 1e3 << " us, median "
              << sorted[sorted.size() / 2] / 1e3 << " us, last " << sorted.back() / 1e3 << " us\n"
              << "  CSV: " << out << "/completions.csv, " << out << "/queue.csv\n";
    return 0;
}
