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
} // namespace eidolon::tools

#endif
