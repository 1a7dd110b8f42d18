// Subcommands of the `eidolon` front end; each file registers its own on the CLI11 app.
#ifndef EIDOLON_TOOLS_COMMANDS_H
#define EIDOLON_TOOLS_COMMANDS_H

#include <CLI/CLI.hpp>

namespace eidolon::tools
{
/// Directory of the shipped data (topologies/), baked in at build time.
const char* SourceDir();
/// `eidolon topo check FILE`
void RegisterTopoCommands(CLI::App& app);
/// `eidolon flows --topology FILE --flows FILE.csv`
void RegisterFlowsCommand(CLI::App& app);
/// `eidolon run [...] -- PROGRAM ARGS` and `eidolon sim --endpoint tcp://... --ranks N`
void RegisterRunCommands(CLI::App& app);
/// `eidolon calibrate-host [--out FILE]`: this machine's speed on the host CPU workload
void RegisterCalibrateHostCommand(CLI::App& app);
} // namespace eidolon::tools

#endif
