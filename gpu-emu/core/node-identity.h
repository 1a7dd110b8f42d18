// The identity `eidolon run --launch node` gives a node process (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, recorded in EIDOLON_NODE_IDENTITY), and the workers that a launcher inside it
// (srun, mpirun, a job script around them) starts with that identity inherited: their own is the
// launcher's (OMPI_COMM_WORLD_*, PMI_*, SLURM_*). Workers the node's program starts itself
// (torch.multiprocessing.spawn) have none: their program tells NCCL who they are. Header-only: the
// preloaded libeidolon-clocks.so uses it before the program starts, and gpu-emu's configuration
// after.
#pragma once

#include <cstdlib>
#include <string>

#include <unistd.h>

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

// The variable in which the node process records its pid (libeidolon-clocks.so, at its start),
// so that the processes its program starts know they are not it.
inline constexpr const char* kNodePidVariable = "EIDOLON_NODE_PID";

// A process that the node process's program started itself (Python's multiprocessing workers:
// `torch.multiprocessing.spawn`, a subprocess, a fork) rather than the node process: on a cluster
// nothing would have set RANK and the rest for it, so it must not take the node's.
inline bool
StartedByNodeProgram()
{
    const char* pid = std::getenv(kNodePidVariable);
    return pid && std::atol(pid) != long(getpid());
}

// Whether this process's RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE are the node
// process's, passed down to a process that is not it: a launcher's task or a process its program
// started. Such a process takes its identity from its launcher's variables, or has none.
inline bool
ForeignNodeIdentity()
{
    return InheritedNodeIdentity() && (LauncherTask() || StartedByNodeProgram());
}

} // namespace eidolon::gpu
