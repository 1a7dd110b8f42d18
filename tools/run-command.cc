// `eidolon run`: simulate a program on the cluster (launching its ranks), and `eidolon sim`:
// the simulator alone, for ranks an external engine (mpirun, srun) starts.
#include "commands.h"
#include "run-loop.h"

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

namespace eidolon::tools
{
namespace
{
// A count of GPUs or nodes: a whole number of at least 1 (0 or -1 used to mean "all" silently).
const CLI::Validator kCount(
    [](std::string& value)
    {
        try
        {
            size_t used = 0;
            long n = std::stol(value, &used);
            if (used == value.size() && n >= 1)
            {
                return std::string();
            }
        }
        catch (const std::exception&)
        {
        }
        return "'" + value + "' is not a count (a whole number, at least 1)";
    },
    "COUNT");

void
AddCommonOptions(CLI::App* cmd, eidolon::tools::RunArguments& a)
{
    cmd->add_option("--topology", a.topology, "cluster description (shipped name or path)")
        ->capture_default_str();
    cmd->add_option("--model", a.model,
                    "network model: flow (fair shares) or packet (ns-3 packets)")
        ->check(CLI::IsMember({"flow", "packet"}))
        ->capture_default_str();
    auto* transport =
        cmd->add_option("--transport", a.transport, "packet model transport: tcp, dctcp or rdma")
            ->check(CLI::IsMember({"tcp", "dctcp", "rdma"}));
    // The flow model has no transport: a run that names one without the packet model would run
    // without it, unsaid.
    cmd->parse_complete_callback(
        [transport, &a]
        {
            if (transport->count() > 0 && a.model != "packet")
            {
                throw CLI::ValidationError("--transport",
                                           "a transport belongs to the packet model: add --model "
                                           "packet (the flow model shares links without one)");
            }
        });
    cmd->add_option("--out", a.out, "directory for summary.json and trace.json")
        ->capture_default_str();
    cmd->add_option("--watchdog", a.watchdogSeconds,
                    "end the run if nothing progresses for this many wall seconds (0: never)")
        ->capture_default_str();
    cmd->add_flag("--optimistic", a.optimistic,
                  "do not wait for running ranks: answers may come before they are final; "
                  "late work is counted as causality violations");
    cmd->add_option("--grace", a.graceSeconds,
                    "wall seconds a silent rank is waited for before going on optimistically")
        ->capture_default_str();
    cmd->add_option("--nccl-version", a.ncclVersion,
                    "emulated NCCL release, e.g. 2.18.3 (sets EIDOLON_NCCL_VERSION; default: that "
                    "variable, else 2.30.7): its tuning tables and selection rules, and what "
                    "ncclGetVersion reports");
    cmd->add_option("--trace-slices", a.traceSlices,
                    "device slices trace.json keeps (the summary counts them all)")
        ->capture_default_str();
    cmd->add_option("--trace-flow-slices", a.traceFlowSlices,
                    "network slices (a flow on a link) trace.json keeps (summary.json's links "
                    "count them all)")
        ->capture_default_str();
    cmd->add_option("--trace-from", a.traceFromMs,
                    "trace.json keeps the device and network slices that end from this virtual "
                    "time on (ms; e.g. past start-up and warm-up steps)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    cmd->add_option("--stats-from", a.statsFromMs,
                    "the summary's compute, comm and idle shares count the time from this virtual "
                    "time on (ms; e.g. past start-up and warm-up steps); the end, memory and "
                    "pricing stay the whole run's")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    cmd->add_flag("--trace-each-op", a.traceEachOp,
                  "trace.json shows every kernel and copy as a slice of its own (sets "
                  "EIDOLON_TRACE_EACH_OP=1; by default a stream's back-to-back ops are one slice "
                  "'name (+N ops)', which keeps large runs light)");
    cmd->add_option("--progress", a.progress, "progress line on stderr: auto, on or off")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
}
} // namespace

void
RegisterRunCommands(CLI::App& app)
{
    auto run = std::make_shared<eidolon::tools::RunArguments>();
    auto* cmd = app.add_subcommand("run", "run a GPU program on the simulated cluster");
    AddCommonOptions(cmd, *run);
    auto* gpus =
        cmd->add_option("--gpus", run->gpus, "use the first N GPUs of the topology")->check(kCount);
    cmd->add_option("--nodes", run->nodes, "use N nodes")->excludes(gpus)->check(kCount);
    cmd->add_option("--gpus-per-node", run->gpusPerNode, "use M GPUs of each node")
        ->excludes(gpus)
        ->check(kCount);
    cmd->add_option("--launch", run->launch,
                    "gpu: one process per GPU (RANK, LOCAL_RANK, ... set); node: one per node, "
                    "for launchers that spawn workers (torchrun, mpirun)")
        ->check(CLI::IsMember({"gpu", "node"}))
        ->capture_default_str();
    cmd->add_option("command", run->command, "PROGRAM ARGS (after --)")->required();
    cmd->callback([run] { std::exit(eidolon::tools::RunSimulation(*run)); });

    auto attach = std::make_shared<eidolon::tools::RunArguments>();
    attach->launch = "attach";
    auto* sim = app.add_subcommand(
        "sim", "the simulator alone: ranks started elsewhere (mpirun, srun) connect over tcp://");
    AddCommonOptions(sim, *attach);
    sim->add_option("--endpoint", attach->endpoint,
                    "where ranks connect, e.g. tcp://127.0.0.1:5555")
        ->required();
    sim->add_option("--ranks", attach->ranks, "processes that will connect")->required();
    sim->add_flag("--curve", attach->curve,
                  "tcp:// endpoint: ZeroMQ CURVE authentication and encryption, keys made for this "
                  "run and written (mode 0600) to a file the ranks' environment takes them from");
    sim->callback([attach] { std::exit(eidolon::tools::RunSimulation(*attach)); });
}
} // namespace eidolon::tools
