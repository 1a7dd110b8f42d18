// A worker that a launcher (srun, mpirun, a job script around them) starts inside the node
// process of `eidolon run --launch node` inherits the RANK, WORLD_SIZE, LOCAL_RANK and
// LOCAL_WORLD_SIZE eidolon gave the node process; on a cluster its launcher would pass it none,
// and a program that reads RANK first (nccl-tests' -g 1 wrappers, PyTorch's env:// rendezvous)
// would run as rank 0 of a world of one. libeidolon-clocks.so is preloaded into every process of
// a run, so this constructor removes them before the program reads its environment (Python copies
// it at start-up), and the worker sees what it would see on the cluster: its launcher's variables.
// The same holds for a process that the node process's program starts itself (Python's
// multiprocessing workers, `torch.multiprocessing.spawn`): on a cluster a program started with
// `python train.py` has no RANK, and its workers get theirs from the program
// (`init_process_group(rank=...)`). The node process records its pid for them to tell.
#include "../core/node-identity.h"

#include <cstdlib>
#include <string>

#include <unistd.h>

namespace
{

__attribute__((constructor)) void
ForgetInheritedNodeIdentity()
{
    using namespace eidolon::gpu;
    if (!InheritedNodeIdentity())
    {
        return;
    }
    if (!std::getenv(kNodePidVariable) && !LauncherTask())
    {
        // The node process itself: what it starts will know it is not the node process.
        setenv(kNodePidVariable, std::to_string(getpid()).c_str(), 1);
        return;
    }
    if (!ForeignNodeIdentity())
    {
        return;
    }
    for (const char* name : kNodeIdentityVariables)
    {
        unsetenv(name);
    }
}

} // namespace
