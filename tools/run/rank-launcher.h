// Starting, watching and stopping the rank processes of `eidolon run`.
//
// One RankLauncher owns every process it started. Each runs in its own process group (so that a
// launcher rank such as torchrun or mpirun is stopped together with the workers it spawned), with
// stdin from /dev/null and stdout/stderr through pipes whose read ends the caller polls (Fds())
// next to its own sockets; OnReadable() copies complete lines to the launcher's streams with
// torchrun's prefix ("[rank3]:hello"). Nothing here blocks except TerminateAll() (for at most its
// grace period plus the SIGKILL reap) and Start() (until each exec has succeeded or failed).
#ifndef EIDOLON_TOOLS_RUN_RANK_LAUNCHER_H
#define EIDOLON_TOOLS_RUN_RANK_LAUNCHER_H

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace eidolon::run
{
/// One process to start.
struct RankProcess
{
    std::string name;                       ///< "rank3" or "node1": the output prefix and messages
    std::vector<std::string> argv;          ///< argv[0] is looked up on PATH (execvp)
    std::map<std::string, std::string> env; ///< added to / overriding the inherited environment
    std::vector<std::string> unset = {};    ///< inherited variables the process does not get
};

/// How a started process ended.
struct Exit
{
    size_t index = 0; ///< position in the order of Start() calls
    std::string name;
    int pid = 0;
    bool signaled = false;
    int code = 0;      ///< exit status, or the signal number when signaled
    std::string error; ///< set when exec failed: "cannot execute 'foo': No such file or directory"

    /// True for a normal exit with status 0.
    bool Success() const { return !signaled && code == 0; }
    /// "rank3 exited with status 1", "rank3 was killed by signal 9 (Killed)",
    /// "rank3: cannot execute 'foo': No such file or directory" (exec failed; code is 127).
    std::string Describe() const;
};

/// The state of one started process, for the run summary.
struct ProcessStatus
{
    std::string name;
    int pid = 0;
    bool exited = false; ///< reaped; then signaled/code/error are meaningful
    bool signaled = false;
    int code = 0;
    std::string error;
};

class RankLauncher
{
public:
    /// Rank output goes to `out` (their stdout) and `err` (their stderr), line by line, prefixed.
    RankLauncher(std::ostream& out, std::ostream& err);
    /// Stops whatever is still running (TerminateAll with a short grace period).
    ~RankLauncher();
    RankLauncher(const RankLauncher&) = delete;
    RankLauncher& operator=(const RankLauncher&) = delete;

    /// Called before any rank output is written, e.g. to clear a progress line.
    void SetBeforeOutput(std::function<void()> hook) { m_beforeOutput = std::move(hook); }

    /// Forks and execs every process (in order; may be called again to add more). A program that
    /// cannot be executed is not an exception: that process exits with status 127 and its Exit
    /// carries the message. Throws std::system_error when pipes or fork fail (after stopping
    /// what this call had started) and std::invalid_argument on an empty argv.
    void Start(const std::vector<RankProcess>& processes);

    /// Read ends of every output pipe still open (non-blocking, close-on-exec), for poll() or
    /// zmq_poll(). Call OnReadable on any revents: a pipe at EOF reports POLLHUP (ZMQ_POLLERR
    /// through zmq_poll) without POLLIN.
    std::vector<int> Fds() const;
    /// Reads what is available on `fd` (one of Fds()) and writes complete lines; at EOF the partial
    /// last line is written with a newline and the fd is closed (it leaves Fds()).
    void OnReadable(int fd);

    /// Collects processes that have ended since the last call (waitpid WNOHANG on each), after
    /// writing the output they left in their pipes.
    std::vector<Exit> Reap();
    /// SIGTERM to every live process group, up to `grace` for them to end, then SIGKILL; reaps all
    /// and drains their output. Returns the exits it reaped (also kept in Exits()).
    std::vector<Exit> TerminateAll(std::chrono::milliseconds grace);

    /// Processes started and not yet reaped.
    size_t Running() const;
    /// Processes started so far.
    size_t Size() const { return m_children.size(); }
    /// Every exit reaped so far, in the order reaped.
    const std::vector<Exit>& Exits() const { return m_exits; }
    /// One entry per started process, in start order.
    std::vector<ProcessStatus> Statuses() const;
    /// eidolon's own warnings in rank output (stderr lines that begin "eidolon: ", which gpu-emu
    /// gives once per process) are written the first time only: a 384-rank run would repeat each
    /// 384 times. Each such line seen, with how many times it was held back.
    const std::map<std::string, int>& RepeatedWarnings() const { return m_warnings; }

private:
    struct Stream
    {
        int fd = -1;
        std::string partial;
    };
    struct Child
    {
        std::string name;
        std::string prefix; ///< "[rank3]:"
        int pid = -1;
        bool reaped = false;
        bool signaled = false;
        int code = 0;
        std::string error;
        Stream out;
        Stream err;
    };

    /// Reads `stream` until EAGAIN or EOF and writes its complete lines.
    void Drain(Child& child, Stream& stream, bool isErr);
    /// Writes `lines` (each ends in '\n', not yet prefixed) to out or err.
    void Emit(const Child& child, const std::string& text, bool isErr);
    /// Records a waitpid status for `child` and returns its Exit.
    Exit Record(size_t index, int status);

    std::ostream& m_out;
    std::ostream& m_err;
    std::function<void()> m_beforeOutput;
    std::vector<Child> m_children;
    std::vector<Exit> m_exits;
    std::map<std::string, int> m_warnings; ///< see RepeatedWarnings()
};

/// One process per GPU: rank r = node * gpusPerNode + local, named "rank<r>", with RANK,
/// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and NODE_RANK (= node), MASTER_ADDR
/// (127.0.0.1), MASTER_PORT, EIDOLON_NODE (= node), EIDOLON_RANK (= RANK) and EIDOLON_LAUNCH=gpu.
/// `common` is added first; these override it.
std::vector<RankProcess> PerGpuProcesses(const std::vector<std::string>& argv, int nodes,
                                         int gpusPerNode, const std::string& masterPort,
                                         const std::map<std::string, std::string>& common);

/// One process per node for launchers that spawn their own workers (torchrun, mpirun), named
/// "node<k>", with NODE_RANK and GROUP_RANK (= k), EIDOLON_NODE (= k), MASTER_ADDR (127.0.0.1),
/// MASTER_PORT, WORLD_SIZE (nodes * gpusPerNode), LOCAL_WORLD_SIZE (gpusPerNode),
/// EIDOLON_LAUNCH=node, and torchrun's option defaults PET_NNODES (nodes), PET_NODE_RANK (k),
/// PET_NPROC_PER_NODE (gpusPerNode), PET_MASTER_ADDR and PET_MASTER_PORT. `common` is added
/// first; these override it.
std::vector<RankProcess> PerNodeProcesses(const std::vector<std::string>& argv, int nodes,
                                          int gpusPerNode, const std::string& masterPort,
                                          const std::map<std::string, std::string>& common);

/// Whether `program` (a path or a name) is a launcher that gives the processes it spawns their own
/// rank variables: mpirun, mpiexec, mpiexec.hydra, orterun, prterun, srun, torchrun. A node
/// process running one gets no RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE of its own, which
/// mpirun would pass on to its ranks (a program that reads RANK before OMPI_COMM_WORLD_RANK, as
/// collective-bench does, would take every rank for rank 0 of 1).
bool SpawnsItsOwnRanks(const std::string& program);

/// A TCP port on 127.0.0.1 that was free when asked (bound to port 0 and released). Throws
/// std::system_error if no socket can be bound.
std::string FreeLoopbackPort();
} // namespace eidolon::run

#endif
