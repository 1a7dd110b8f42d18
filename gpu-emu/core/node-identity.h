// The identity `eidolon run --launch node` gives a node process (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, recorded in EIDOLON_NODE_IDENTITY), and the workers that a launcher inside it
// (srun, mpirun, a job script around them) starts with that identity inherited: their own is the
// launcher's (OMPI_COMM_WORLD_*, PMI_*, SLURM_*). Header-only: the preloaded libeidolon-clocks.so
// uses it before the program starts, and gpu-emu's configuration after.
#pragma once

#include <cstdlib>
#include <string>

namespace eidolon::gpu
{

inline constexpr const char* kNodeIdentityVariables[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                         "LOCAL_WORLD_SIZE"};

// Whether RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE hold what `eidolon run --launch node`
// set for the node process, i.e. no launcher that the node process ran (torchrun does) replaced
// them.
inline bool
InheritedNodeIdentity()
{
    const char* recorded = std::getenv("EIDOLON_NODE_IDENTITY");
    if (!recorded)
    {
        return false;
    }
    std::string current;
    for (const char* name : kNodeIdentityVariables)
    {
        const char* value = std::getenv(name);
        current += (current.empty() ? "" : ":") + std::string(value ? value : "");
    }
    return current == recorded;
}

// A process a launcher started as one of its tasks (it set its task variables).
inline bool
LauncherTask()
{
    return std::getenv("OMPI_COMM_WORLD_RANK") || std::getenv("PMI_RANK") ||
           std::getenv("SLURM_PROCID");
}

} // namespace eidolon::gpu
