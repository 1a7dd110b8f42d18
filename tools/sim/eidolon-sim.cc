// eidolon-sim: the simulator as its own program, for ranks that an external engine (mpirun, srun)
// starts and that connect over tcp:// (EIDOLON_SIM_ENDPOINT). `eidolon run` runs the same loop
// and launches the ranks itself.
#include "run-loop.h"

#include "ns3/nstime.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

int
main(int argc, char** argv)
{
    ns3::Time::SetResolution(ns3::Time::PS);
    eidolon::tools::RunArguments args;
    args.launch = "attach";
    CLI::App app{"eidolon-sim: the simulator side of eidolon; ranks connect to --endpoint"};
    app.add_option("--topology", args.topology, "cluster description (shipped name or path)")
        ->capture_default_str();
    app.add_option("--endpoint", args.endpoint, "where ranks connect, e.g. tcp://127.0.0.1:5555")
        ->required();
    app.add_option("--ranks", args.ranks, "processes that will connect")->required();
    app.add_flag("--curve", args.curve,
                 "tcp:// endpoint: ZeroMQ CURVE authentication and encryption, keys made for this "
                 "run and written (mode 0600) to a file the ranks' environment takes them from");
    app.add_option("--model", args.model, "network model: flow or packet")
        ->check(CLI::IsMember({"flow", "packet"}))
        ->capture_default_str();
    app.add_option("--transport", args.transport, "packet model transport: tcp, dctcp or rdma");
    app.add_option("--out", args.out, "directory for summary.json and trace.json")
        ->capture_default_str();
    app.add_option("--watchdog", args.watchdogSeconds,
                   "wall seconds without progress before the "
                   "run ends (0: never)")
        ->capture_default_str();
    app.add_option(
        "--nccl-version", args.ncclVersion,
        "emulated NCCL release, e.g. 2.18.3 (default: EIDOLON_NCCL_VERSION, else 2.30.7)");
    app.add_option("--progress", args.progress, "auto, on or off")->capture_default_str();
    app.add_flag("--optimistic", args.optimistic,
                 "do not wait for running ranks (see eidolon run)");
    app.add_option("--grace", args.graceSeconds,
                   "wall seconds a silent rank is waited for before going on optimistically")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    try
    {
        return eidolon::tools::RunSimulation(args);
    }
    catch (const std::exception& e)
    {
        fmt::print(stderr, "eidolon-sim: {}\n", e.what());
        return 1;
    }
}
