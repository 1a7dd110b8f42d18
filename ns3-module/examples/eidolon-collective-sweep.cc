/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * nccl-tests for a simulated cluster: for each size (-b/-e/-f as nccl-tests), run one collective
 * alone on a fresh flow model through the collective model (NCCL's choice, timed by eidolon's link
 * model) and print size, algorithm, protocol, channels, time, NCCL's own estimate, algbw and busbw
 * with nccl-tests' bus bandwidth factors. With --compare=<validation yaml> it prints the measured
 * busbw beside each row and the mean relative error for sizes >= 1 MiB and < 1 MiB.
 *
 *   eidolon-collective-sweep --topology=dgx-h100-1node --collective=all_reduce --b=8 --e=8G --f=2
 *   eidolon-collective-sweep --topology=dgx-h100-4node --collective=all_reduce --ncclVersion=22403
 * \
 *       --compare=../shared/validation-data/nccl-allreduce-voltagepark-h100-4node.yaml
 */
#include "ns3/cluster-helper.h"
#include "ns3/collective-model.h"
#include "ns3/command-line.h"
#include "ns3/core-module.h"
#include "ns3/flow-model.h"
#include "ns3/topology.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

using namespace ns3;
using namespace ns3::eidolon;

NS_LOG_COMPONENT_DEFINE("EidolonCollectiveSweep");

namespace
{
bool
KindFromName(const std::string& name, CollectiveKind* kind, bool* alltoall)
{
    *alltoall = false;
    if (name == "all_reduce" || name == "allreduce")
    {
        *kind = CollectiveKind::AllReduce;
    }
    else if (name == "all_gather" || name == "allgather")
    {
        *kind = CollectiveKind::AllGather;
    }
    else if (name == "reduce_scatter" || name == "reducescatter")
    {
        *kind = CollectiveKind::ReduceScatter;
    }
    else if (name == "broadcast")
    {
        *kind = CollectiveKind::Broadcast;
    }
    else if (name == "reduce")
    {
        *kind = CollectiveKind::Reduce;
    }
    else if (name == "sendrecv")
    {
        *kind = CollectiveKind::SendRecv;
    }
    else if (name == "alltoall")
    {
        *kind = CollectiveKind::SendRecv;
        *alltoall = true;
    }
    else
    {
        return false;
    }
    return true;
}
} // namespace

int
main(int argc, char* argv[])
{
    std::string topologyFile = "dgx-h100-1node";
    std::string collective = "all_reduce";
    std::string minBytes = "8";
    std::string maxBytes = "8GiB";
    uint32_t factor = 2;
    uint32_t gpus = 0;
    uint32_t nodes = 0;
    uint32_t ppn = 0;
    std::string algo;
    std::string proto;
    int minChannels = -1;
    int maxChannels = -1;
    int nvls = -1;
    int collnet = -1;
    uint32_t version = 23007;
    uint32_t typeSize = 4;
    uint32_t iters = 1;
    uint32_t agg = 1;
    int root = 0;
    std::string compare;
    std::string networkModel = "ns3::eidolon::FlowModel";
    CommandLine cmd(__FILE__);
    cmd.AddValue("topology", "cluster (a shipped name or a path)", topologyFile);
    cmd.AddValue("collective",
                 "all_reduce, all_gather, reduce_scatter, broadcast, reduce, sendrecv, alltoall",
                 collective);
    cmd.AddValue("b", "first size in bytes (nccl-tests -b; suffixes K/M/G, KiB/MiB/GiB)", minBytes);
    cmd.AddValue("e", "last size (nccl-tests -e)", maxBytes);
    cmd.AddValue("f", "size multiplier (nccl-tests -f)", factor);
    cmd.AddValue("gpus", "use the first N GPUs (node-major); 0: all", gpus);
    cmd.AddValue("nodes", "use this many nodes (with --ppn)", nodes);
    cmd.AddValue("ppn", "GPUs per node to use (with --nodes)", ppn);
    cmd.AddValue("algo", "NCCL_ALGO", algo);
    cmd.AddValue("proto", "NCCL_PROTO", proto);
    cmd.AddValue("minChannels", "NCCL_MIN_NCHANNELS", minChannels);
    cmd.AddValue("maxChannels", "NCCL_MAX_NCHANNELS", maxChannels);
    cmd.AddValue("nvls", "NCCL_NVLS_ENABLE", nvls);
    cmd.AddValue("collnet", "NCCL_COLLNET_ENABLE (CollNet / SHARP where the topology has it)",
                 collnet);
    cmd.AddValue("ncclVersion", "emulated NCCL version (2.30.7 = 23007)", version);
    cmd.AddValue("typeSize", "bytes per element (sizes are rounded to whole elements per rank)",
                 typeSize);
    cmd.AddValue("root", "root rank of broadcast/reduce", root);
    cmd.AddValue(
        "iters",
        "back-to-back calls timed as nccl-tests does (after one, each rank's calls from "
        "its own end of the one before; mean over ranks); 1: one call, its last rank's end",
        iters);
    cmd.AddValue("agg",
                 "operations issued in one group per call (nccl-tests -m, agg_iters): run as "
                 "NCCL's one kernel; the time is per operation",
                 agg);
    cmd.AddValue("compare", "validation YAML (rows of size_bytes, busbw_gbps) to compare with",
                 compare);
    cmd.AddValue("networkModel", "NetworkModel TypeId (ns3::eidolon::FlowModel or PacketModel)",
                 networkModel);
    cmd.Parse(argc, argv);

    CollectiveKind kind;
    bool alltoall = false;
    if (!KindFromName(collective, &kind, &alltoall))
    {
        std::cerr << "eidolon-collective-sweep: unknown collective '" << collective << "'\n";
        return 1;
    }
    auto parseSize = [](std::string s) -> uint64_t
    {
        if (!s.empty() && (s.back() == 'K' || s.back() == 'M' || s.back() == 'G'))
        {
            s += "iB";
        }
        bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::stoull(s) : ParseBytes(s);
    };

    ClusterHelper cluster;
    cluster.SetNetworkModel(networkModel);
    Ptr<Topology> topology;
    uint64_t first = 0;
    uint64_t last = 0;
    std::map<std::string, std::string> env;
    NcclConfig config;
    try
    {
        topology = cluster.ReadTopology(topologyFile);
        first = parseSize(minBytes);
        last = parseSize(maxBytes);
        if (!algo.empty())
        {
            env["NCCL_ALGO"] = algo;
        }
        if (!proto.empty())
        {
            env["NCCL_PROTO"] = proto;
        }
        if (minChannels >= 0)
        {
            env["NCCL_MIN_NCHANNELS"] = std::to_string(minChannels);
        }
        if (maxChannels >= 0)
        {
            env["NCCL_MAX_NCHANNELS"] = std::to_string(maxChannels);
        }
        if (nvls >= 0)
        {
            env["NCCL_NVLS_ENABLE"] = std::to_string(nvls);
        }
        if (collnet >= 0)
        {
            env["NCCL_COLLNET_ENABLE"] = std::to_string(collnet);
        }
        config = NcclConfig::FromEnvironment(env);
    }
    catch (const std::exception& e)
    {
        std::cerr << "eidolon-collective-sweep: " << e.what() << "\n";
        return 1;
    }
    for (const std::string& said : {config.ReadingWarning(version), config.ChannelWarning(version)})
    {
        if (!said.empty())
        {
            std::cerr << "eidolon-collective-sweep: warning: " << said << "\n";
        }
    }

    // The communicator: topology device ids by rank.
    std::vector<uint32_t> ranks;
    if (nodes > 0)
    {
        for (uint32_t node = 0; node < std::min(nodes, topology->NodeCount()); ++node)
        {
            auto local = topology->GpusOfNode(node);
            for (uint32_t i = 0; i < local.size() && (ppn == 0 || i < ppn); ++i)
            {
                ranks.push_back(local[i]);
            }
        }
    }
    else
    {
        uint32_t n = gpus == 0 ? topology->GpuCount() : std::min(gpus, topology->GpuCount());
        for (uint32_t g = 0; g < n; ++g)
        {
            ranks.push_back(topology->GpuDevice(g));
        }
    }
    const uint32_t n = uint32_t(ranks.size());

    std::map<uint64_t, double> measured;
    if (!compare.empty())
    {
        try
        {
            YAML::Node doc = YAML::LoadFile(compare);
            for (const auto& row : doc["rows"])
            {
                if (!row.IsMap() || !row["size_bytes"] || !row["busbw_gbps"] ||
                    row["busbw_gbps"].IsNull())
                {
                    continue;
                }
                uint64_t size = row["size_bytes"].as<uint64_t>();
                if (size > 0)
                {
                    measured[size] = row["busbw_gbps"].as<double>();
                }
            }
        }
        catch (const std::exception& e)
        {
            std::cerr << "eidolon-collective-sweep: " << compare << ": " << e.what() << "\n";
            return 1;
        }
    }

    std::printf(
        "# eidolon collective sweep: %s on %s, %u ranks on %u GPUs, NCCL %u.%u.%u emulated\n",
        collective.c_str(), topology->name.c_str(), n, topology->GpuCount(), version / 10000,
        version / 100 % 100, version % 100);
    if (agg > 1)
    {
        std::printf("# %u operations a group (nccl-tests -m): time per operation; ch: the channels "
                    "one operation spans; nccl_us: NCCL's estimate for the aggregate\n",
                    agg);
    }
    std::printf("#%13s %9s %7s %4s %12s %10s %10s %10s", "size", "algo", "proto", "ch", "time_us",
                "nccl_us", "algbw", "busbw");
    if (!measured.empty())
    {
        std::printf(" %10s %8s", "measured", "err%");
    }
    std::printf("\n");

    double errLarge = 0, errSmall = 0;
    uint32_t nLarge = 0, nSmall = 0;
    const uint64_t unit = uint64_t(typeSize) * ((kind == CollectiveKind::AllGather ||
                                                 kind == CollectiveKind::ReduceScatter || alltoall)
                                                    ? n
                                                    : 1);
    for (uint64_t size = first; size <= last; size *= std::max<uint32_t>(factor, 2))
    {
        uint64_t bytes = size / unit * unit;
        if (bytes == 0)
        {
            continue;
        }
        Ptr<NetworkModel> net = cluster.Install(topology);
        Ptr<CollectiveModel> model = CreateObject<CollectiveModel>();
        model->SetAttribute("NcclVersion", UintegerValue(version));
        model->SetNetworkModel(net);
        model->SetConfig(config);

        CollectiveCall call;
        call.kind = kind;
        call.bytes = bytes;
        call.typeSize = typeSize;
        call.gpus = ranks;
        call.root = root;
        call.tag = size;
        if (kind == CollectiveKind::SendRecv)
        {
            for (uint32_t r = 0; r < n; ++r)
            {
                if (alltoall)
                {
                    for (uint32_t d = 0; d < n; ++d)
                    {
                        call.transfers.push_back({r, d, bytes / n});
                    }
                }
                else
                {
                    call.transfers.push_back({r, (r + 1) % n, bytes});
                }
            }
        }
        // nccl-tests' timing (BenchTime): one call, waited for, then a barrier lines the ranks
        // up (the call alone does not: a Broadcast root or a Reduce's first rank is done before
        // the rest), then each rank issues `iters` calls back to back (a call starts where the
        // rank's previous one ended) and times them from the barrier; the time is the mean over
        // ranks. A rank may start its next call before the others have ended this one
        // (CollectiveModel::Begin).
        const uint32_t calls = iters > 1 ? iters + 1 : 1;
        std::vector<std::shared_ptr<CollectiveRun>> runs(calls);
        std::vector<std::vector<Time>> ends(calls, std::vector<Time>(n));
        uint32_t lined = 0; // ranks done with the first call (the barrier releases at n)
        CollectivePlan plan;
        for (uint32_t i = 0; i < calls; ++i)
        {
            call.tag = size * 1000003ULL + i;
            auto done = [&runs, &ends, &lined, i, calls, n](uint32_t r)
            {
                ends[i][r] = Simulator::Now();
                if (i + 1 == calls)
                {
                    return;
                }
                if (i > 0)
                {
                    runs[i + 1]->MemberStart(r, Simulator::Now());
                    return;
                }
                if (++lined == n)
                {
                    for (uint32_t k = 0; k < n; ++k)
                    {
                        ends[0][k] = Simulator::Now();
                        runs[1]->MemberStart(k, Simulator::Now());
                    }
                }
            };
            if (agg > 1 && kind != CollectiveKind::SendRecv)
            {
                // nccl-tests -m: agg_iters calls between one ncclGroupStart/End.
                std::vector<CollectiveCall> group(agg, call);
                for (uint32_t k = 0; k < agg; ++k)
                {
                    group[k].tag = call.tag * 131ULL + k;
                }
                std::vector<CollectivePlan> plans;
                runs[i] = model->BeginGroup(group, done, &plans);
                if (i == 0)
                {
                    plan = plans[0];
                }
            }
            else
            {
                runs[i] = model->Begin(call, done, i == 0 ? &plan : nullptr);
            }
        }
        for (uint32_t r = 0; r < n; ++r)
        {
            runs[0]->MemberStart(r, Seconds(0));
        }
        Simulator::Run();
        Simulator::Destroy();
        Time end;
        if (calls == 1)
        {
            end = *std::max_element(ends[0].begin(), ends[0].end());
        }
        else
        {
            int64_t sum = 0;
            for (uint32_t r = 0; r < n; ++r)
            {
                sum += (ends[calls - 1][r] - ends[0][r]).GetNanoSeconds();
            }
            end = NanoSeconds(sum / int64_t(n) / int64_t(iters));
        }
        const double us = end.GetNanoSeconds() / 1e3 /
                          double(agg > 1 && kind != CollectiveKind::SendRecv ? agg : 1);
        const double algbw = double(bytes) / (us * 1e3);
        const double factorBus =
            alltoall ? double(n - 1) / n : CollectiveModel::BusBandwidthFactor(kind, n);
        const double busbw = algbw * factorBus;
        const char* algoName = kind == CollectiveKind::SendRecv ? "P2P" : ToString(plan.algorithm);
        // nccl_us: NCCL's own estimate for the chosen algorithm/protocol (what it selects by).
        std::printf("%14llu %9s %7s %4d %12.2f %10.2f %10.2f %10.2f", (unsigned long long)bytes,
                    algoName, ToString(plan.protocol), plan.channels, us, plan.ncclEstimateUs,
                    algbw, busbw);
        auto m = measured.find(bytes);
        if (m == measured.end())
        {
            m = measured.find(size);
        }
        if (m != measured.end() && m->second > 0)
        {
            double err = (busbw - m->second) / m->second * 100.0;
            std::printf(" %10.2f %+8.1f", m->second, err);
            if (bytes >= (1u << 20))
            {
                errLarge += std::fabs(err);
                ++nLarge;
            }
            else
            {
                errSmall += std::fabs(err);
                ++nSmall;
            }
        }
        std::printf("\n");
        if (size > last / std::max<uint32_t>(factor, 2))
        {
            break;
        }
    }
    if (!measured.empty())
    {
        std::printf("# mean |error| of busbw: %.1f%% over %u sizes >= 1 MiB, %.1f%% over %u sizes "
                    "< 1 MiB\n",
                    nLarge ? errLarge / nLarge : 0.0, nLarge, nSmall ? errSmall / nSmall : 0.0,
                    nSmall);
    }
    return 0;
}
