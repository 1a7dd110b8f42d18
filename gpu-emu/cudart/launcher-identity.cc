// A worker that a launcher (srun, mpirun, a job script around them) starts inside the node
// process of `eidolon run --launch node` inherits the RANK, WORLD_SIZE, LOCAL_RANK and
// LOCAL_WORLD_SIZE eidolon gave the node process; on a cluster its launcher would pass it none,
// and a program that reads RANK first (nccl-tests' -g 1 wrappers, PyTorch's env:// rendezvous)
// would run as rank 0 of a world of one. libeidolon-clocks.so is preloaded into every process of
// a run, so this constructor removes them before the program reads its environment (Python copies
// it at start-up), and the worker sees what it would see on the cluster: its launcher's variables.
#include "../core/node-identity.h"

#include <cstdlib>

namespace
{

__attribute__((constructor)) void
ForgetInheritedNodeIdentity()
{
    if (!eidolon::gpu::LauncherTask() || !eidolon::gpu::InheritedNodeIdentity())
    {
        return;
    }
    for (const char* name : eidolon::gpu::kNodeIdentityVariables)
    {
        unsetenv(name);
    }
}

} // namespace
