#include "progress-watch.h"

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

namespace eidolon::sim
{

ProgressWatch::ProgressWatch(const SimOptions& options, RankTimelines& timelines)
    : m_options(options)
    , m_timelines(timelines)
    , m_lastProgress(std::chrono::steady_clock::now())
{
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    m_hostname = host;
}

ProgressWatch::~ProgressWatch()
{
    for (const auto& [pid, fd] : m_exitFds)
    {
        if (fd >= 0)
        {
            close(fd);
        }
    }
}

std::string
DescribeWaitStatus(int status)
{
    if (WIFSIGNALED(status))
    {
        int signal = WTERMSIG(status);
        return fmt::format("was killed by signal {} ({})", signal, strsignal(signal));
    }
    return fmt::format("exited with status {}", WEXITSTATUS(status));
}

std::string
SignalHint(int signal)
{
    return signal == SIGKILL ? "; a SIGKILL that nobody sent is the kernel's out-of-memory killer "
                               "(the host's memory ran out: see dmesg)"
                             : "";
}

int
ZombieExitStatus(int pid)
{
    std::FILE* file = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
    if (!file)
    {
        return -1;
    }
    char text[4096] = {};
    size_t length = std::fread(text, 1, sizeof text - 1, file);
    std::fclose(file);
    const char* close = std::strrchr(text, ')');
    if (!close || close >= text + length)
    {
        return -1;
    }
    // From field 3 (state) on; exit_code is field 52 (proc(5), since Linux 3.5).
    std::istringstream fields(close + 1);
    std::vector<std::string> values;
    for (std::string value; fields >> value;)
    {
        values.push_back(value);
    }
    if (values.size() < 50 || values[0] != "Z")
    {
        return -1;
    }
    return std::atoi(values[49].c_str());
}

void
ProgressWatch::WatchNewProcesses()
{
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && process->pid > 0 && process->hostname == m_hostname &&
            m_exitFds.find(process->pid) == m_exitFds.end())
        {
            m_exitFds[process->pid] = int(syscall(SYS_pidfd_open, process->pid, 0));
        }
    }
}

bool
ProgressWatch::AllLeft() const
{
    bool allDone = !m_timelines.Processes().empty() && m_timelines.AllJoined();
    for (const auto& process : m_timelines.Processes())
    {
        allDone = allDone && !process->Live();
    }
    return allDone;
}

bool
ProgressWatch::AllBlocked() const
{
    bool allBlocked = !m_timelines.Processes().empty() && m_timelines.AllJoined();
    for (const auto& process : m_timelines.Processes())
    {
        allBlocked = allBlocked && (!process->Live() || process->IsBlocked());
    }
    return allBlocked;
}

std::string
ProgressWatch::FindVanishedRank()
{
    // A rank on this host that is gone without its goodbye (killed, or crashed before atexit):
    // the launcher reports its own children; ranks an external engine started are checked here.
    // Every 10 ms of wall time: torchrun looks at its workers every 100 ms and reaps them, and
    // a reaped process's status is gone.
    auto now = std::chrono::steady_clock::now();
    if (now - m_lastExitPoll >= std::chrono::milliseconds(10))
    {
        m_lastExitPoll = now;
        WatchNewProcesses();
        std::vector<pollfd> fds;
        std::vector<RankProcess*> owners;
        for (const auto& process : m_timelines.Processes())
        {
            auto fd = m_exitFds.find(process->pid);
            if (fd == m_exitFds.end() || fd->second < 0)
            {
                continue;
            }
            if (!process->Live())
            {
                close(fd->second); // said goodbye, or found gone otherwise
                fd->second = -1;
                continue;
            }
            fds.push_back(pollfd{fd->second, POLLIN, 0});
            owners.push_back(process.get());
        }
        if (!fds.empty() && poll(fds.data(), fds.size(), 0) > 0)
        {
            // Several at once: name the one that ended on its own, not one a launcher then
            // stopped with SIGTERM (torchrun stops the other workers when one fails).
            RankProcess* gone = nullptr;
            int goneStatus = -1;
            int goneWeight = -1;
            for (size_t i = 0; i < fds.size(); ++i)
            {
                if (!(fds[i].revents & POLLIN))
                {
                    continue;
                }
                int status = ZombieExitStatus(owners[i]->pid);
                bool terminated = WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM;
                int weight = status < 0 ? 0 : terminated ? 1 : 2;
                if (weight > goneWeight)
                {
                    gone = owners[i];
                    goneStatus = status;
                    goneWeight = weight;
                }
            }
            if (gone)
            {
                gone->dead = true;
                if (goneStatus >= 0)
                {
                    return fmt::format("{} {} (pid {}, before its goodbye){}", gone->name,
                                       DescribeWaitStatus(goneStatus), gone->pid,
                                       WIFSIGNALED(goneStatus) ? SignalHint(WTERMSIG(goneStatus))
                                                               : std::string());
                }
                return fmt::format(
                    "{} (pid {}) ended without saying goodbye (killed, or it crashed)", gone->name,
                    gone->pid);
            }
        }
    }
    if (now - m_lastLivenessCheck <= std::chrono::seconds(1))
    {
        return "";
    }
    m_lastLivenessCheck = now;
    for (const auto& process : m_timelines.Processes())
    {
        if (process->Live() && process->pid > 0 && process->hostname == m_hostname &&
            kill(process->pid, 0) != 0 && errno == ESRCH)
        {
            process->dead = true;
            return fmt::format("{} (pid {}) ended without saying goodbye (killed, or it crashed)",
                               process->name, process->pid);
        }
    }
    return "";
}

ProgressWatch::Verdict
ProgressWatch::Check(bool queueEmpty)
{
    if (AllLeft())
    {
        return {Verdict::AllDone, ""};
    }
    // A rank that died explains what waits for it better than the deadlock it leaves.
    std::string vanished = FindVanishedRank();
    if (!vanished.empty())
    {
        return {Verdict::RankGone, vanished};
    }
    if (AllBlocked() && queueEmpty)
    {
        return {Verdict::Deadlock, "deadlock: every rank waits and nothing is in flight\n"};
    }
    double idle =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_lastProgress).count();
    if (m_options.watchdogSeconds > 0 && idle > m_options.watchdogSeconds)
    {
        return {Verdict::Watchdog,
                fmt::format("watchdog: nothing progressed for {:.0f} s (wall)\n", idle)};
    }
    return {};
}

} // namespace eidolon::sim
