/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * An ns-3 scenario with no live process: read a cluster, run ring all-reduces of growing size on
 * it through the flow model, and print time, algorithm bandwidth and bus bandwidth as nccl-tests
 * defines them (algbw = size / time, busbw = algbw x 2(n-1)/n).
 *
 *   eidolon-ring-allreduce --topology=topologies/default.yaml --channels=8 --minBytes=1MiB
 */
#include "ns3/cluster-helper.h"
#include "ns3/collective-helper.h"
#include "ns3/command-line.h"
#include "ns3/core-module.h"
#include "ns3/flow-model.h"
#include "ns3/topology.h"

#include <cstdio>
#include <iostream>

using namespace ns3;
using namespace ns3::eidolon;

NS_LOG_COMPONENT_DEFINE("EidolonRingAllReduce");

namespace
{
struct Sweep
{
    Ptr<NetworkModel> model;
    CollectiveHelper* collectives;
    std::vector<std::vector<uint32_t>> rings;
    uint64_t bytes;
    uint64_t maxBytes;
    uint32_t factor;
    uint32_t iterations;
    uint32_t done = 0;
    Time began;
    CollectiveHelper::RingMode mode;

    void Next(Time at)
    {
        began = at;
        done = 0;
        Post(at);
    }
    void Post(Time at)
    {
        collectives->RingAllReduce(rings, bytes, at, MakeCallback(&Sweep::Finished, this), mode);
    }
    void Finished(Time t)
    {
        if (++done < iterations)
        {
            Post(t);
            return;
        }
        double us = (t - began).GetNanoSeconds() / 1e3 / iterations;
        double algbw = double(bytes) / (us * 1e3); // GB/s (1e9 bytes/s)
        double busbw = algbw * CollectiveHelper::AllReduceBusFactor(uint32_t(rings[0].size()));
        std::printf("%14llu %14llu %12.2f %10.2f %10.2f\n",
                    (unsigned long long)bytes,
                    (unsigned long long)(bytes / 4),
                    us,
                    algbw,
                    busbw);
        if (bytes < maxBytes)
        {
            bytes *= factor;
            Next(t);
        }
    }
};
} // namespace

int
main(int argc, char* argv[])
{
    std::string topologyFile = "default";
    std::string minBytes = "1MiB";
    std::string maxBytes = "4GiB";
    uint32_t factor = 4;
    uint32_t channels = 8;
    uint32_t iterations = 1;
    bool stepwise = false;
    CommandLine cmd(__FILE__);
    cmd.AddValue("topology", "cluster description (a shipped name or a path)", topologyFile);
    cmd.AddValue("minBytes", "first buffer size (e.g. 1MiB)", minBytes);
    cmd.AddValue("maxBytes", "last buffer size (e.g. 4GiB)", maxBytes);
    cmd.AddValue("factor", "size multiplier between rows", factor);
    cmd.AddValue("channels", "rings (NCCL channels)", channels);
    cmd.AddValue("iterations", "all-reduces per size (back to back)", iterations);
    cmd.AddValue("stepwise", "one flow per rank and step instead of one pipeline per ring", stepwise);
    cmd.Parse(argc, argv);

    ClusterHelper cluster;
    Ptr<Topology> topology;
    try
    {
        topology = cluster.ReadTopology(topologyFile);
    }
    catch (const std::exception& e)
    {
        std::cerr << "eidolon-ring-allreduce: " << e.what() << "\n";
        return 1;
    }
    Ptr<NetworkModel> model = cluster.Install(topology);
    CollectiveHelper collectives(model);

    Sweep sweep;
    sweep.model = model;
    sweep.collectives = &collectives;
    sweep.rings = CollectiveHelper::RailAlignedRings(*topology, channels);
    sweep.bytes = ParseBytes(minBytes);
    sweep.maxBytes = ParseBytes(maxBytes);
    sweep.factor = std::max<uint32_t>(factor, 2);
    sweep.iterations = std::max<uint32_t>(iterations, 1);
    sweep.mode = stepwise ? CollectiveHelper::RingMode::Stepwise
                          : CollectiveHelper::RingMode::Pipelined;

    std::printf("# eidolon ring all-reduce: %s, %u GPUs on %u nodes, %u channels, %s rings\n",
                topology->name.c_str(),
                topology->GpuCount(),
                topology->NodeCount(),
                channels,
                stepwise ? "stepwise" : "pipelined");
    std::printf("# plain ring data movement on the flow model (no NCCL protocol overheads)\n");
    std::printf("%14s %14s %12s %10s %10s\n", "size(B)", "count(fp32)", "time(us)", "algbw",
                "busbw");
    Simulator::ScheduleNow(&Sweep::Next, &sweep, Seconds(0));
    Simulator::Run();
    auto stats = model->GetStats();
    std::printf("# flows %llu, re-solves %llu, virtual time %.6f s\n",
                (unsigned long long)stats.flowsAdded,
                (unsigned long long)stats.rateUpdates,
                Simulator::Now().GetSeconds());
    Simulator::Destroy();
    return 0;
}
