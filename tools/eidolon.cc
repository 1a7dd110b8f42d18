// eidolon: command-line front end of the simulator.
#include "commands.h"

#include "ns3/nstime.h"

#include <fmt/core.h>

namespace eidolon::tools
{
const char*
SourceDir()
{
    return EIDOLON_SOURCE_DIR;
}
} // namespace eidolon::tools

int
main(int argc, char** argv)
{
    // Serialization times on 400 Gb/s-3.6 Tb/s links are a few ns; the packet model needs
    // picoseconds so that ns-3 does not round them (the flow model works in ns either way).
    ns3::Time::SetResolution(ns3::Time::PS);
    CLI::App app{"eidolon: a live GPU-cluster simulator"};
    app.require_subcommand(1);
    auto* version = app.add_subcommand("version", "print the version");
    version->callback([] { fmt::print("eidolon {}\n", EIDOLON_VERSION); });
    eidolon::tools::RegisterTopoCommands(app);
    eidolon::tools::RegisterFlowsCommand(app);
    eidolon::tools::RegisterRunCommands(app);
    eidolon::tools::RegisterCalibrateHostCommand(app);
    try
    {
        app.parse(argc, argv);
    }
    catch (const CLI::ParseError& e)
    {
        return app.exit(e);
    }
    catch (const std::exception& e)
    {
        fmt::print(stderr, "eidolon: {}\n", e.what());
        return 1;
    }
    return 0;
}
