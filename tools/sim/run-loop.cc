#include "run-loop.h"

#include "ns3/cluster-helper.h"
#include "ns3/nccl-version.h"
#include "rank-launcher.h"
#include "run-report.h"
#include "sim-endpoint.h"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace eidolon::tools
{
namespace
{

const char* const kNcclVariables[] = {"NCCL_ALGO",          "NCCL_PROTO",
                                      "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
                                      "NCCL_NVLS_ENABLE",   "NCCL_COLLNET_ENABLE"};

std::string
SelfDirectory()
{
    std::error_code error;
    auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string(".") : self.parent_path().string();
}

} // namespace

namespace
{

sim::SimOptions
OptionsFrom(const RunArguments& args)
{
    bool attach = args.launch == "attach";
    if (!attach && args.command.empty())
    {
        throw std::runtime_error("no program to run: eidolon run [options] -- PROGRAM ARGS");
    }
    if (args.launch != "gpu" && args.launch != "node" && !attach)
    {
        throw std::runtime_error("--launch must be gpu, node or attach, not '" + args.launch + "'");
    }
    sim::SimOptions options;
    options.topologyPath = ns3::eidolon::ClusterHelper::ResolveTopologyPath(args.topology);
    options.model = args.model;
    options.transport = args.transport;
    options.watchdogSeconds = args.watchdogSeconds;
    options.optimistic = args.optimistic;
    options.graceSeconds = args.graceSeconds;
    options.launch = args.launch;
    if (!args.ncclVersion.empty())
    {
        // The flag is the environment variable set for the simulator and every rank it launches
        // (gpu-emu's ncclGetVersion reads the same variable).
        uint32_t code = ::eidolon::spec::ParseNcclVersion(args.ncclVersion, "--nccl-version");
        setenv(::eidolon::spec::kNcclVersionVariable,
               ::eidolon::spec::FormatNcclVersion(code).c_str(), 1);
    }
    options.ncclVersion = ::eidolon::spec::NcclVersionFromEnvironment();
    for (const char* name : kNcclVariables)
    {
        if (const char* value = std::getenv(name))
        {
            options.ncclEnvironment[name] = value;
        }
    }
    options.expectedProcesses = args.ranks; // attach; a launch counts its own below
    return options;
}

// The processes to launch (none in attach mode), whose ranks connect to `address`; sets how many
// the simulator expects.
std::vector<eidolon::run::RankProcess>
PlanRanks(const RunArguments& args, const std::string& address, sim::SimOptions& options)
{
    // Which GPUs take part: the whole topology, the first N GPUs, or N nodes of M GPUs.
    auto topology = ns3::eidolon::ClusterHelper().ReadTopology(options.topologyPath);
    int topoNodes = int(topology->NodeCount());
    int topoPerNode = int(topology->GpusOfNode(0).size());
    int nodes = args.nodes > 0 ? args.nodes : topoNodes;
    int perNode = args.gpusPerNode > 0 ? args.gpusPerNode : topoPerNode;
    if (args.gpus > 0)
    {
        perNode = std::min(args.gpus, topoPerNode);
        nodes = (args.gpus + perNode - 1) / perNode;
    }
    if (nodes > topoNodes || perNode > topoPerNode)
    {
        throw std::runtime_error(
            fmt::format("{}: asked for {} node(s) x {} GPU(s), the topology has {} x {}",
                        options.topologyPath, nodes, perNode, topoNodes, topoPerNode));
    }
    int totalGpus = args.gpus > 0 ? args.gpus : nodes * perNode;
    std::vector<eidolon::run::RankProcess> processes;
    if (args.launch == "attach")
    {
        return processes;
    }
    std::map<std::string, std::string> common;
    std::string libDir = SelfDirectory() + "/../lib/gpu-emu";
    const char* oldPath = std::getenv("LD_LIBRARY_PATH");
    common["LD_LIBRARY_PATH"] = libDir + (oldPath && *oldPath ? ":" + std::string(oldPath) : "");
    common["EIDOLON_SIM_ENDPOINT"] = address;
    common["EIDOLON_NUM_GPUS"] = std::to_string(topoPerNode);
    common["EIDOLON_GPU"] = topology->GpuSpecOf(0).name;
    if (!topology->host.empty())
    {
        // The servers' host description (per-call host costs, CPU); without a `host:` field the
        // ranks use EIDOLON_HOST or gpu-emu's default.
        common["EIDOLON_HOST"] = topology->host;
        common["EIDOLON_HOST_SPEC_DIR"] = topology->hostSpecDir;
    }
    std::string port = eidolon::run::FreeLoopbackPort();
    if (args.launch == "gpu")
    {
        processes = eidolon::run::PerGpuProcesses(args.command, nodes, perNode, port, common);
        processes.resize(size_t(totalGpus)); // --gpus N may end inside a node
        for (auto& p : processes)
        {
            p.env["WORLD_SIZE"] = std::to_string(totalGpus);
        }
        options.expectedProcesses = totalGpus;
        return processes;
    }
    processes = eidolon::run::PerNodeProcesses(args.command, nodes, perNode, port, common);
    for (size_t k = 0; k < processes.size(); ++k)
    {
        // A program that drives every GPU of its node (nccl-tests -g M) is process k of
        // `nodes`; a launcher such as torchrun sets its workers' own values over these.
        processes[k].env["RANK"] = std::to_string(k);
        processes[k].env["WORLD_SIZE"] = std::to_string(nodes);
        processes[k].env["LOCAL_RANK"] = "0";
        processes[k].env["LOCAL_WORLD_SIZE"] = "1";
    }
    options.expectedProcesses = nodes;
    return processes;
}

} // namespace

int
RunSimulation(const RunArguments& args)
{
    bool attach = args.launch == "attach";
    sim::SimOptions options = OptionsFrom(args);
    std::string address =
        attach ? args.endpoint
               : fmt::format("ipc:///tmp/eidolon-{}-{}.sock", getpid(),
                             std::chrono::steady_clock::now().time_since_epoch().count());
    if (address.empty())
    {
        throw std::runtime_error("attach mode needs --endpoint tcp://HOST:PORT");
    }
    std::vector<eidolon::run::RankProcess> processes = PlanRanks(args, address, options);

    std::ostream& log = std::cerr;
    eidolon::bridge::SimEndpoint endpoint(options, address, log);
    sim::Simulation& simulation = endpoint.Simulation();
    std::filesystem::create_directories(args.out);

    bool progress = args.progress == "on" || (args.progress == "auto" && isatty(STDERR_FILENO));
    bool progressShown = false;
    auto clearProgress = [&]
    {
        if (progressShown)
        {
            std::cerr << "\r\033[K" << std::flush;
            progressShown = false;
        }
    };
    eidolon::run::RankLauncher launcher(std::cout, std::cerr);
    launcher.SetBeforeOutput(clearProgress);
    auto started = std::chrono::steady_clock::now();
    auto wall = [&]
    { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    if (attach)
    {
        log << fmt::format("eidolon-sim: waiting for {} rank(s) at {}\n", args.ranks, address);
    }
    else
    {
        launcher.Start(processes);
    }
    double lastProgress = 0;
    bool launchedDone = false;
    // One turn: wait up to 20 ms for messages (when the simulator steps) and rank output, pass
    // the output on, and tell the simulator about ranks that ended.
    auto pump = [&](bool step)
    {
        std::vector<zmq::pollitem_t> items;
        for (int fd : launcher.Fds())
        {
            items.push_back(zmq::pollitem_t{nullptr, fd, ZMQ_POLLIN, 0});
        }
        if (step)
        {
            endpoint.Step(std::chrono::milliseconds(20), items);
        }
        else
        {
            zmq::poll(items.data(), items.size(), std::chrono::milliseconds(20));
        }
        for (const auto& item : items)
        {
            if (item.revents & (ZMQ_POLLIN | ZMQ_POLLERR))
            {
                launcher.OnReadable(item.fd);
            }
        }
        for (const auto& exit : launcher.Reap())
        {
            simulation.OnProcessExit(
                sim::ProcessExit{exit.name, exit.pid, exit.signaled, exit.code, exit.Describe()});
        }
    };
    while (!simulation.Finished())
    {
        pump(true);
        if (!attach && !launchedDone && launcher.Running() == 0)
        {
            launchedDone = true;
            simulation.OnLaunchedProcessesDone();
        }
        if (progress && wall() - lastProgress > 0.5)
        {
            lastProgress = wall();
            std::cerr << "\r\033[K"
                      << sim::ProgressLine(
                             simulation.VirtualNowNs(), wall(), simulation.Running(),
                             simulation.Blocked(),
                             std::max(simulation.Connected(), options.expectedProcesses))
                      << std::flush;
            progressShown = true;
        }
    }
    clearProgress();
    // The ranks' last output (a program's stdout is flushed at exit) and exit statuses.
    auto drainUntil =
        std::chrono::steady_clock::now() + std::chrono::seconds(simulation.Failed() ? 0 : 10);
    while (!attach && launcher.Running() > 0 && std::chrono::steady_clock::now() < drainUntil)
    {
        pump(false);
    }
    if ((simulation.Failed() || launcher.Running() > 0) && !attach)
    {
        for (const auto& exit : launcher.TerminateAll(std::chrono::milliseconds(3000)))
        {
            simulation.OnProcessExit(
                sim::ProcessExit{exit.name, exit.pid, exit.signaled, exit.code, exit.Describe()});
        }
    }
    auto report = simulation.Report(wall());
    sim::WriteSummaryJson(report, args.out + "/summary.json");
    sim::WriteTraceJson(report, args.out + "/trace.json");
    std::cout << std::flush;
    sim::PrintSummaryTable(report, std::cerr);
    std::cerr << fmt::format("eidolon: wrote {}/summary.json and {}/trace.json\n", args.out,
                             args.out);
    if (simulation.Failed())
    {
        return 1;
    }
    for (const auto& exit : launcher.Exits())
    {
        if (!exit.Success())
        {
            return 1;
        }
    }
    return 0;
}

} // namespace eidolon::tools
