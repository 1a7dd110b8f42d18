// gethostname: under eidolon-sim a rank is on a simulated node, and programs that group ranks by
// host name (nccl-tests' local rank, MPI-style host hashes) must see that node ("node3"), not the
// machine that runs every rank. Outside the simulator it is the real name.
#include "runtime-common.h"

#include <sys/utsname.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace eidolon::gpu;

namespace
{
// What the kernel says, as glibc's gethostname does (without calling it: we are it).
std::string
RealHostname()
{
    utsname names{};
    return uname(&names) == 0 ? std::string(names.nodename) : std::string();
}

std::string
SimulatedHostname()
{
    // Only with a simulator, and never from inside our own calls (joining it asks the real name).
    if (!std::getenv("EIDOLON_SIM_ENDPOINT") || ApiDepth() > 0)
    {
        return {};
    }
    // A program may ask before its first CUDA call: join the simulator now.
    return Emulator::Get().Ready() ? Emulator::Get().Sink().Hostname() : std::string();
}
} // namespace

// The simulated node's name when the process runs under eidolon-sim, else the real one.
EIDOLON_EXPORT int
gethostname(char* name, size_t length)
{
    std::string host = SimulatedHostname();
    if (host.empty())
    {
        host = RealHostname();
    }
    if (!name)
    {
        errno = EFAULT;
        return -1;
    }
    if (host.size() + 1 > length)
    {
        if (length > 0)
        {
            std::memcpy(name, host.data(), length); // glibc truncates, then reports the error
        }
        errno = ENAMETOOLONG;
        return -1;
    }
    std::memcpy(name, host.c_str(), host.size() + 1);
    return 0;
}
