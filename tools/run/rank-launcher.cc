// Starting, watching and stopping the rank processes of `eidolon run`.
#include "rank-launcher.h"

#include <fmt/core.h>

#include <algorithm>

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace eidolon::run
{
namespace
{
/// A line longer than this without a newline is written as it stands (a rank printing a progress
/// bar with '\r' forever must not grow our buffer without bound).
constexpr size_t kMaxPartialLine = 1 << 20;

[[noreturn]] void
ThrowErrno(const std::string& what)
{
    throw std::system_error(errno, std::generic_category(), what);
}

void
CloseFd(int& fd)
{
    if (fd >= 0)
    {
        ::close(fd);
        fd = -1;
    }
}

/// In the child between fork and exec: makes `from` the descriptor `to`, without close-on-exec.
/// Only async-signal-safe calls.
bool
MoveFd(int from, int to)
{
    if (from == to)
    {
        return ::fcntl(to, F_SETFD, 0) == 0;
    }
    return ::dup2(from, to) == to;
}

/// The child's side of Start(): never returns. Only async-signal-safe calls (the parent may have
/// threads, e.g. ZeroMQ's).
[[noreturn]] void
ExecChild(char* const* argv, char* const* envp, int outFd, int errFd, int reportFd, pid_t parent)
{
    ::setpgid(0, 0);
    // If the launcher dies without stopping the rank (SIGKILL, a crash), the rank gets SIGTERM
    // instead of living on under init (a launcher rank such as torchrun passes it to its
    // workers). The launcher may have died before this line: then act as if it had just now.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
    {
        ::_exit(128 + SIGTERM);
    }
    // Signals ignored or blocked by the launcher stay so across exec; the ranks get the defaults.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTTIN, SIGTTOU, SIGTSTP,
                    SIGUSR1, SIGUSR2, SIGXFSZ, SIGALRM})
    {
        sigaction(sig, &dfl, nullptr);
    }
    int null = ::open("/dev/null", O_RDONLY);
    bool ok = null >= 0 && MoveFd(null, 0);
    ok = ok && MoveFd(outFd, 1) && MoveFd(errFd, 2);
    if (ok)
    {
        ::execvpe(argv[0], argv, envp);
    }
    int error = errno;
    ssize_t written = ::write(reportFd, &error, sizeof error);
    (void)written;
    ::_exit(127);
}
} // namespace

std::string
Exit::Describe() const
{
    if (!error.empty())
    {
        return fmt::format("{}: {}", name, error);
    }
    if (signaled)
    {
        const char* what = ::strsignal(code);
        return fmt::format("{} was killed by signal {} ({})", name, code,
                           what ? what : "unknown signal");
    }
    return fmt::format("{} exited with status {}", name, code);
}

RankLauncher::RankLauncher(std::ostream& out, std::ostream& err)
    : m_out(out)
    , m_err(err)
{
}

RankLauncher::~RankLauncher()
{
    try
    {
        bool open = false;
        for (const auto& child : m_children)
        {
            open = open || !child.reaped || child.out.fd >= 0 || child.err.fd >= 0;
        }
        if (open)
        {
            TerminateAll(std::chrono::milliseconds(500));
        }
    }
    catch (...)
    {
        // Destructors do not throw; the processes were signalled as far as possible.
    }
}

void
RankLauncher::Start(const std::vector<RankProcess>& processes)
{
    // Everything the child needs is prepared before fork: between fork and exec only
    // async-signal-safe calls are allowed.
    size_t first = m_children.size();
    try
    {
        for (const auto& process : processes)
        {
            if (process.argv.empty() || process.argv[0].empty())
            {
                throw std::invalid_argument(process.name + ": empty command");
            }
            std::vector<std::string> envStrings;
            for (char** entry = environ; entry && *entry; ++entry)
            {
                std::string text(*entry);
                auto eq = text.find('=');
                const std::string name = text.substr(0, eq);
                if (process.env.count(name) == 0 &&
                    std::find(process.unset.begin(), process.unset.end(), name) ==
                        process.unset.end())
                {
                    envStrings.push_back(std::move(text));
                }
            }
            for (const auto& [key, value] : process.env)
            {
                envStrings.push_back(key + "=" + value);
            }
            std::vector<char*> envp;
            for (auto& entry : envStrings)
            {
                envp.push_back(entry.data());
            }
            envp.push_back(nullptr);
            std::vector<std::string> argStrings = process.argv;
            std::vector<char*> argv;
            for (auto& arg : argStrings)
            {
                argv.push_back(arg.data());
            }
            argv.push_back(nullptr);

            int outPipe[2];
            int errPipe[2];
            int reportPipe[2];
            if (::pipe2(outPipe, O_CLOEXEC) != 0)
            {
                ThrowErrno(process.name + ": pipe");
            }
            if (::pipe2(errPipe, O_CLOEXEC) != 0)
            {
                int e = errno;
                ::close(outPipe[0]);
                ::close(outPipe[1]);
                errno = e;
                ThrowErrno(process.name + ": pipe");
            }
            if (::pipe2(reportPipe, O_CLOEXEC) != 0)
            {
                int e = errno;
                for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]})
                {
                    ::close(fd);
                }
                errno = e;
                ThrowErrno(process.name + ": pipe");
            }
            pid_t parent = ::getpid();
            pid_t pid = ::fork();
            if (pid == 0)
            {
                ExecChild(argv.data(), envp.data(), outPipe[1], errPipe[1], reportPipe[1], parent);
            }
            int forkErrno = errno;
            ::close(outPipe[1]);
            ::close(errPipe[1]);
            ::close(reportPipe[1]);
            if (pid < 0)
            {
                ::close(outPipe[0]);
                ::close(errPipe[0]);
                ::close(reportPipe[0]);
                errno = forkErrno;
                ThrowErrno(process.name + ": fork");
            }
            // Also here, so that the group exists whichever of parent and child runs first
            // (EACCES once the child has exec'd, which is fine).
            ::setpgid(pid, pid);

            Child child;
            child.name = process.name;
            child.prefix = "[" + process.name + "]:";
            child.pid = pid;
            child.out.fd = outPipe[0];
            child.err.fd = errPipe[0];
            ::fcntl(child.out.fd, F_SETFL, ::fcntl(child.out.fd, F_GETFL) | O_NONBLOCK);
            ::fcntl(child.err.fd, F_SETFL, ::fcntl(child.err.fd, F_GETFL) | O_NONBLOCK);
            // EOF means exec succeeded (close-on-exec); an int is exec's errno.
            int execErrno = 0;
            ssize_t got;
            do
            {
                got = ::read(reportPipe[0], &execErrno, sizeof execErrno);
            } while (got < 0 && errno == EINTR);
            ::close(reportPipe[0]);
            if (got == static_cast<ssize_t>(sizeof execErrno))
            {
                child.error = fmt::format("cannot execute '{}': {}", process.argv[0],
                                          std::strerror(execErrno));
            }
            m_children.push_back(std::move(child));
        }
    }
    catch (...)
    {
        // Stop what this call started; earlier calls' processes are the caller's business.
        for (size_t i = first; i < m_children.size(); ++i)
        {
            if (!m_children[i].reaped)
            {
                ::kill(-m_children[i].pid, SIGKILL);
                int status = 0;
                if (::waitpid(m_children[i].pid, &status, 0) == m_children[i].pid)
                {
                    Record(i, status);
                }
            }
            CloseFd(m_children[i].out.fd);
            CloseFd(m_children[i].err.fd);
        }
        throw;
    }
}

std::vector<int>
RankLauncher::Fds() const
{
    std::vector<int> fds;
    for (const auto& child : m_children)
    {
        for (int fd : {child.out.fd, child.err.fd})
        {
            if (fd >= 0)
            {
                fds.push_back(fd);
            }
        }
    }
    return fds;
}

void
RankLauncher::OnReadable(int fd)
{
    if (fd < 0)
    {
        return;
    }
    for (auto& child : m_children)
    {
        if (child.out.fd == fd)
        {
            Drain(child, child.out, false);
            return;
        }
        if (child.err.fd == fd)
        {
            Drain(child, child.err, true);
            return;
        }
    }
}

void
RankLauncher::Drain(Child& child, Stream& stream, bool isErr)
{
    char buffer[65536];
    while (stream.fd >= 0)
    {
        ssize_t n = ::read(stream.fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
        {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
            return;
        }
        if (n <= 0)
        {
            // EOF (or an error, treated alike): the last partial line gets its newline.
            if (!stream.partial.empty())
            {
                Emit(child, stream.partial + "\n", isErr);
                stream.partial.clear();
            }
            CloseFd(stream.fd);
            return;
        }
        stream.partial.append(buffer, static_cast<size_t>(n));
        auto last = stream.partial.rfind('\n');
        if (last != std::string::npos)
        {
            Emit(child, stream.partial.substr(0, last + 1), isErr);
            stream.partial.erase(0, last + 1);
        }
        if (stream.partial.size() >= kMaxPartialLine)
        {
            Emit(child, stream.partial + "\n", isErr);
            stream.partial.clear();
        }
    }
}

void
RankLauncher::Emit(const Child& child, const std::string& text, bool isErr)
{
    std::string prefixed;
    prefixed.reserve(text.size() + child.prefix.size() * 4);
    size_t begin = 0;
    while (begin < text.size())
    {
        auto end = text.find('\n', begin);
        if (end == std::string::npos)
        {
            end = text.size() - 1;
        }
        if (isErr && text.compare(begin, 9, "eidolon: ") == 0)
        {
            auto [it, first] = m_warnings.emplace(text.substr(begin, end - begin), 0);
            if (!first)
            {
                ++it->second;
                begin = end + 1;
                continue;
            }
        }
        prefixed += child.prefix;
        prefixed.append(text, begin, end - begin + 1);
        begin = end + 1;
    }
    if (prefixed.empty())
    {
        return;
    }
    if (m_beforeOutput)
    {
        m_beforeOutput();
    }
    std::ostream& os = isErr ? m_err : m_out;
    os << prefixed;
    os.flush();
}

Exit
RankLauncher::Record(size_t index, int status)
{
    Child& child = m_children[index];
    child.reaped = true;
    if (WIFSIGNALED(status))
    {
        child.signaled = true;
        child.code = WTERMSIG(status);
    }
    else
    {
        child.signaled = false;
        child.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    Exit exit;
    exit.index = index;
    exit.name = child.name;
    exit.pid = child.pid;
    exit.signaled = child.signaled;
    exit.code = child.code;
    exit.error = child.error;
    m_exits.push_back(exit);
    return exit;
}

std::vector<Exit>
RankLauncher::Reap()
{
    std::vector<Exit> exits;
    for (size_t i = 0; i < m_children.size(); ++i)
    {
        Child& child = m_children[i];
        if (child.reaped)
        {
            continue;
        }
        int status = 0;
        pid_t got;
        do
        {
            got = ::waitpid(child.pid, &status, WNOHANG);
        } while (got < 0 && errno == EINTR);
        if (got == 0)
        {
            continue;
        }
        if (got < 0)
        {
            // Reaped behind our back (SIGCHLD set to SIG_IGN?): the status is lost.
            child.error = child.error.empty() ? "exit status lost (reaped elsewhere)" : child.error;
            status = 0xff00; // "exited with 255", but the error text says what happened
        }
        // Its output is all in the pipes by now (unless it left children that still write).
        Drain(child, child.out, false);
        Drain(child, child.err, true);
        exits.push_back(Record(i, status));
    }
    return exits;
}

std::vector<Exit>
RankLauncher::TerminateAll(std::chrono::milliseconds grace)
{
    auto signalAll = [this](int sig)
    {
        for (const auto& child : m_children)
        {
            // A reaped leader whose pipes are open left workers behind in its group (torchrun,
            // mpirun); the group id stays reserved while any of them lives.
            bool alive = !child.reaped || child.out.fd >= 0 || child.err.fd >= 0;
            if (alive && ::kill(-child.pid, sig) != 0 && !child.reaped)
            {
                ::kill(child.pid, sig);
            }
        }
    };
    // Reads whatever output arrives within `timeout`.
    auto pump = [this](std::chrono::milliseconds timeout)
    {
        std::vector<pollfd> fds;
        for (int fd : Fds())
        {
            fds.push_back(pollfd{fd, POLLIN, 0});
        }
        if (fds.empty())
        {
            std::this_thread::sleep_for(timeout);
            return;
        }
        int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
        if (ready > 0)
        {
            for (const auto& p : fds)
            {
                if (p.revents != 0)
                {
                    OnReadable(p.fd);
                }
            }
        }
    };

    std::vector<Exit> exits;
    auto collect = [&]
    {
        auto more = Reap();
        exits.insert(exits.end(), more.begin(), more.end());
    };
    collect();
    signalAll(SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (Running() > 0 && std::chrono::steady_clock::now() < deadline)
    {
        pump(std::chrono::milliseconds(10));
        collect();
    }
    signalAll(SIGKILL);
    for (size_t i = 0; i < m_children.size(); ++i)
    {
        Child& child = m_children[i];
        if (child.reaped)
        {
            continue;
        }
        int status = 0;
        pid_t got;
        do
        {
            got = ::waitpid(child.pid, &status, 0);
        } while (got < 0 && errno == EINTR);
        if (got < 0)
        {
            child.error = child.error.empty() ? "exit status lost (reaped elsewhere)" : child.error;
            status = 0xff00;
        }
        exits.push_back(Record(i, status));
    }
    // The groups are dead: the pipes reach EOF at once unless something escaped its group.
    auto drainDeadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (!Fds().empty() && std::chrono::steady_clock::now() < drainDeadline)
    {
        pump(std::chrono::milliseconds(10));
    }
    for (auto& child : m_children)
    {
        for (auto* stream : {&child.out, &child.err})
        {
            if (stream->fd >= 0 && !stream->partial.empty())
            {
                Emit(child, stream->partial + "\n", stream == &child.err);
                stream->partial.clear();
            }
            CloseFd(stream->fd);
        }
    }
    return exits;
}

size_t
RankLauncher::Running() const
{
    size_t running = 0;
    for (const auto& child : m_children)
    {
        running += child.reaped ? 0 : 1;
    }
    return running;
}

std::vector<ProcessStatus>
RankLauncher::Statuses() const
{
    std::vector<ProcessStatus> statuses;
    for (const auto& child : m_children)
    {
        statuses.push_back(ProcessStatus{child.name, child.pid, child.reaped, child.signaled,
                                         child.code, child.error});
    }
    return statuses;
}

namespace
{
void
CheckShape(int nodes, int gpusPerNode)
{
    if (nodes < 1 || gpusPerNode < 1)
    {
        throw std::invalid_argument(fmt::format(
            "need at least one node and one GPU per node (got {} x {})", nodes, gpusPerNode));
    }
}
} // namespace

std::vector<RankProcess>
PerGpuProcesses(const std::vector<std::string>& argv, int nodes, int gpusPerNode,
                const std::string& masterPort, const std::map<std::string, std::string>& common)
{
    CheckShape(nodes, gpusPerNode);
    std::vector<RankProcess> processes;
    int world = nodes * gpusPerNode;
    for (int node = 0; node < nodes; ++node)
    {
        for (int local = 0; local < gpusPerNode; ++local)
        {
            int rank = node * gpusPerNode + local;
            RankProcess p;
            p.name = fmt::format("rank{}", rank);
            p.argv = argv;
            p.env = common;
            p.env["RANK"] = std::to_string(rank);
            p.env["LOCAL_RANK"] = std::to_string(local);
            p.env["WORLD_SIZE"] = std::to_string(world);
            p.env["LOCAL_WORLD_SIZE"] = std::to_string(gpusPerNode);
            p.env["GROUP_RANK"] = std::to_string(node);
            p.env["NODE_RANK"] = std::to_string(node);
            p.env["MASTER_ADDR"] = "127.0.0.1";
            p.env["MASTER_PORT"] = masterPort;
            p.env["EIDOLON_NODE"] = std::to_string(node);
            p.env["EIDOLON_RANK"] = std::to_string(rank);
            p.env["EIDOLON_LAUNCH"] = "gpu";
            processes.push_back(std::move(p));
        }
    }
    return processes;
}

std::vector<RankProcess>
PerNodeProcesses(const std::vector<std::string>& argv, int nodes, int gpusPerNode,
                 const std::string& masterPort, const std::map<std::string, std::string>& common)
{
    CheckShape(nodes, gpusPerNode);
    std::vector<RankProcess> processes;
    for (int node = 0; node < nodes; ++node)
    {
        RankProcess p;
        p.name = fmt::format("node{}", node);
        p.argv = argv;
        p.env = common;
        p.env["NODE_RANK"] = std::to_string(node);
        p.env["GROUP_RANK"] = std::to_string(node);
        p.env["EIDOLON_NODE"] = std::to_string(node);
        p.env["MASTER_ADDR"] = "127.0.0.1";
        p.env["MASTER_PORT"] = masterPort;
        p.env["WORLD_SIZE"] = std::to_string(nodes * gpusPerNode);
        p.env["LOCAL_WORLD_SIZE"] = std::to_string(gpusPerNode);
        p.env["EIDOLON_LAUNCH"] = "node";
        // torchrun's defaults for its options (argparse_util's PET_<OPTION>): the same command on
        // every node makes one job of `nodes` nodes, a worker per GPU unless --nproc-per-node
        // says otherwise; node 0's agent holds the rendezvous store.
        p.env["PET_NNODES"] = std::to_string(nodes);
        p.env["PET_NODE_RANK"] = std::to_string(node);
        p.env["PET_NPROC_PER_NODE"] = std::to_string(gpusPerNode);
        p.env["PET_MASTER_ADDR"] = "127.0.0.1";
        p.env["PET_MASTER_PORT"] = masterPort;
        processes.push_back(std::move(p));
    }
    return processes;
}

bool
SpawnsItsOwnRanks(const std::string& program)
{
    std::string name = program.substr(program.rfind('/') + 1); // npos + 1 == 0
    for (const char* launcher :
         {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "srun", "torchrun"})
    {
        if (name == launcher)
        {
            return true;
        }
    }
    return false;
}

std::string
FreeLoopbackPort()
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        ThrowErrno("socket");
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    {
        int e = errno;
        ::close(fd);
        errno = e;
        ThrowErrno("binding a TCP port on 127.0.0.1");
    }
    ::close(fd);
    return std::to_string(ntohs(address.sin_port));
}
} // namespace eidolon::run
