// `eidolon flows ...`: replay a flow trace through a network model and print finish times.
#include "commands.h"

#include "ns3/cluster-helper.h"
#include "ns3/network-model.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/topology.h"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace eidolon::tools
{
namespace
{
using namespace ns3;
using namespace ns3::eidolon;

struct Row
{
    uint64_t id;
    uint32_t src;
    uint32_t dst;
    uint64_t bytes;
    int64_t startNs;
    int64_t finishNs = -1;
};

/// Reads `id,src,dst,bytes,start_ns` (src/dst: global GPU indices); errors name file and line.
std::vector<Row>
ReadFlows(const std::string& file, uint32_t gpus)
{
    std::ifstream in(file);
    if (!in)
    {
        throw std::runtime_error(file + ": cannot open");
    }
    std::string line;
    int lineNo = 0;
    std::vector<Row> rows;
    bool header = false;
    while (std::getline(in, line))
    {
        ++lineNo;
        line.erase(std::remove(line.begin(), line.end(), '\r'), line.end());
        if (line.empty() || line[0] == '#')
        {
            continue;
        }
        std::vector<std::string> cells;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ','))
        {
            cell.erase(0, cell.find_first_not_of(" \t"));
            cell.erase(cell.find_last_not_of(" \t") + 1);
            cells.push_back(cell);
        }
        auto where = [&](const std::string& what) {
            return std::runtime_error(fmt::format("{}:{}: {}", file, lineNo, what));
        };
        if (!header)
        {
            if (cells != std::vector<std::string>{"id", "src", "dst", "bytes", "start_ns"})
            {
                throw where("expected the header id,src,dst,bytes,start_ns");
            }
            header = true;
            continue;
        }
        if (cells.size() != 5)
        {
            throw where(fmt::format("expected 5 fields, found {}", cells.size()));
        }
        static const char* names[] = {"id", "src", "dst", "bytes", "start_ns"};
        uint64_t v[5];
        for (int i = 0; i < 5; ++i)
        {
            size_t used = 0;
            try
            {
                if (!cells[i].empty() && cells[i][0] == '-')
                {
                    throw std::invalid_argument("negative");
                }
                v[i] = std::stoull(cells[i], &used);
            }
            catch (const std::exception&)
            {
                used = 0;
            }
            if (used == 0 || used != cells[i].size())
            {
                throw where(fmt::format("field {}: '{}' is not a non-negative integer", names[i],
                                        cells[i]));
            }
        }
        if (v[1] >= gpus || v[2] >= gpus)
        {
            throw where(fmt::format("field {}: GPU {} does not exist (the topology has {} GPUs)",
                                    v[1] >= gpus ? "src" : "dst", std::max(v[1], v[2]), gpus));
        }
        rows.push_back({v[0], uint32_t(v[1]), uint32_t(v[2]), v[3], int64_t(v[4])});
    }
    if (!header)
    {
        throw std::runtime_error(file + ": empty (expected the header id,src,dst,bytes,start_ns)");
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.id < b.id; });
    for (size_t i = 1; i < rows.size(); ++i)
    {
        if (rows[i].id == rows[i - 1].id)
        {
            throw std::runtime_error(fmt::format("{}: flow id {} appears twice", file, rows[i].id));
        }
    }
    return rows;
}

void
Replay(const std::string& topologyFile,
       const std::string& flowsFile,
       const std::string& model,
       const std::string& transport)
{
    ClusterHelper cluster;
    cluster.SetNetworkModel(model == "packet" ? "ns3::eidolon::PacketModel"
                                              : "ns3::eidolon::FlowModel");
    if (model == "packet" && !transport.empty())
    {
        cluster.SetNetworkModelAttribute("Transport", ns3::StringValue(transport));
    }
    Ptr<Topology> topology = cluster.ReadTopology(topologyFile);
    std::vector<Row> rows = ReadFlows(flowsFile, topology->GpuCount());
    Ptr<NetworkModel> net = cluster.Install(topology);
    // Posted in id order at time zero; each starts at its own start_ns. Ids order simultaneous
    // events, so the output depends on the trace alone, not on the order of its lines.
    for (Row& row : rows)
    {
        FlowSpec spec;
        spec.src = topology->GpuDevice(row.src);
        spec.dst = topology->GpuDevice(row.dst);
        spec.bytes = row.bytes;
        spec.start = NanoSeconds(row.startNs);
        spec.tag = row.id;
        Row* target = &row;
        net->AddFlow(spec, [target](const FlowRecord& r) {
            target->finishNs = r.finish.GetNanoSeconds();
        });
    }
    Simulator::Run();
    Simulator::Destroy();
    fmt::print("id,src,dst,bytes,start_ns,finish_ns\n");
    for (const Row& row : rows)
    {
        fmt::print("{},{},{},{},{},{}\n", row.id, row.src, row.dst, row.bytes, row.startNs,
                   row.finishNs);
    }
}
} // namespace

void
RegisterFlowsCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand("flows", "replay a flow trace (CSV) and print finish times");
    auto topology = std::make_shared<std::string>("default");
    auto flows = std::make_shared<std::string>();
    auto model = std::make_shared<std::string>("flow");
    cmd->add_option("--topology", *topology, "cluster description (shipped name or path)");
    cmd->add_option("--flows", *flows, "CSV with header id,src,dst,bytes,start_ns")->required();
    auto transport = std::make_shared<std::string>();
    cmd->add_option("--model", *model, "network model: flow (fair shares) or packet (ns-3 packets)")
        ->check(CLI::IsMember({"flow", "packet"}))
        ->capture_default_str();
    cmd->add_option("--transport", *transport, "packet model transport: tcp, dctcp or rdma")
        ->check(CLI::IsMember({"tcp", "dctcp", "rdma"}));
    cmd->callback([=] { Replay(*topology, *flows, *model, *transport); });
}

} // namespace eidolon::tools
