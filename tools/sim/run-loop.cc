#include "run-loop.h"

#include "ns3/cluster-helper.h"
#include "ns3/collective-model.h"
#include "ns3/nccl-version.h"
#include "rank-launcher.h"
#include "run-report.h"
#include "sim-endpoint.h"
#include "virtual-time.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <system_error>

namespace eidolon::tools
{
namespace
{

std::string
SelfDirectory()
{
    std::error_code error;
    auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string(".") : self.parent_path().string();
}

// `value` ahead of what the variable `name` already holds (`separator` between).
std::string
Prepend(const char* name, const std::string& value, char separator)
{
    const char* old = std::getenv(name);
    return old && *old ? value + separator + old : value;
}

// `eidolon run` may itself be a task of a launcher (srun or mpirun starting it on a CPU node of a
// cluster). The processes it starts are not that launcher's tasks, and gpu-emu and programs take
// a rank's identity from these variables: they are not passed on.
std::vector<std::string>
HostTaskIdentity()
{
    return {"SLURM_PROCID",
            "SLURM_LOCALID",
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_SIZE",
            "OMPI_COMM_WORLD_NODE_RANK",
            "PMI_RANK",
            "PMI_SIZE",
            "PMIX_RANK"};
}

// How a rank process loads gpu-emu's libraries instead of NVIDIA's (gpu-emu/loader/README.md):
// the search path for programs linked against them; the audit module for programs that reach
// NVIDIA's by RPATH or full path (PyTorch's wheels); the clock interposers preloaded for programs
// that dlopen CUDA (Python); and gpu-emu's nvidia-smi first on PATH. What the user set is kept,
// after ours.
std::map<std::string, std::string>
LoaderEnvironment(const std::string& libDir)
{
    return {{"LD_LIBRARY_PATH", Prepend("LD_LIBRARY_PATH", libDir, ':')},
            {"PATH", Prepend("PATH", libDir + "/bin", ':')},
            {"LD_AUDIT", Prepend("LD_AUDIT", libDir + "/libeidolon-redirect.so", ':')},
            {"LD_PRELOAD", Prepend("LD_PRELOAD", libDir + "/libeidolon-clocks.so", ' ')}};
}

// The run's private directory where the ranks exchange the bytes of NCCL operations
// (gpu-emu/core/data-exchange.h), on /dev/shm when there is one: made at the start of a launched
// run (mode 0700) and removed with whatever the ranks left in it when the run ends. The run holds
// an exclusive lock on its `owner.lock` for as long as it lives (the kernel drops it when the
// process dies, however it dies), so that a run killed by SIGKILL (a harness's timeout), whose
// directory no destructor removes, leaves nothing a later run does not sweep: /dev/shm is memory,
// and one killed benchmark can leave gigabytes of unread contributions there.
class RunDataDirectory
{
public:
    RunDataDirectory()
    {
        std::error_code error;
        std::string parent = std::filesystem::is_directory("/dev/shm", error)
                                 ? std::string("/dev/shm")
                                 : std::filesystem::temp_directory_path().string();
        SweepStale(parent);
        std::string pattern = parent + "/" + kPrefix + "XXXXXX";
        if (mkdtemp(pattern.data()))
        {
            m_path = pattern;
            m_lock = open((m_path + "/" + kLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
            if (m_lock >= 0)
            {
                flock(m_lock, LOCK_EX | LOCK_NB);
            }
        }
    }
    ~RunDataDirectory()
    {
        if (!m_path.empty())
        {
            std::error_code error;
            std::filesystem::remove_all(m_path, error);
        }
        if (m_lock >= 0)
        {
            close(m_lock);
        }
    }
    RunDataDirectory(const RunDataDirectory&) = delete;
    RunDataDirectory& operator=(const RunDataDirectory&) = delete;
    const std::string& Path() const { return m_path; }

    static constexpr const char* kPrefix = "eidolon-data-";
    static constexpr const char* kLockName = "owner.lock";

    // Removes the run data directories in `parent` whose run has ended: their lock can be taken
    // (its holder is dead). A directory without a lock file is from a release before the lock,
    // or one being made this instant: removed only when untouched for an hour. Says what it freed.
    static void SweepStale(const std::string& parent)
    {
        namespace fs = std::filesystem;
        std::error_code error;
        uint64_t removed = 0;
        uint64_t bytes = 0;
        for (fs::directory_iterator it(parent, error), end; !error && it != end;
             it.increment(error))
        {
            const fs::path& path = it->path();
            struct stat info;
            if (path.filename().string().rfind(kPrefix, 0) != 0 ||
                lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
                info.st_uid != geteuid())
            {
                continue; // not a run's directory, or another user's: not ours to judge
            }
            if (!Ended(path, info))
            {
                continue;
            }
            uint64_t size = 0;
            std::error_code statError;
            for (fs::recursive_directory_iterator file(path, statError), last;
                 !statError && file != last; file.increment(statError))
            {
                std::error_code sizeError;
                uint64_t fileSize =
                    file->is_regular_file(sizeError) ? file->file_size(sizeError) : 0;
                size += sizeError ? 0 : fileSize;
            }
            std::error_code removeError;
            fs::remove_all(path, removeError);
            if (!removeError)
            {
                ++removed;
                bytes += size;
            }
        }
        if (removed > 0)
        {
            std::cerr << fmt::format("eidolon: removed {} data director{} ({:.1f} MiB) left in {} "
                                     "by runs that were killed before they could clean up\n",
                                     removed, removed == 1 ? "y" : "ies", double(bytes) / (1 << 20),
                                     parent);
        }
    }

private:
    // Whether the run that made the directory `path` has ended.
    static bool Ended(const std::filesystem::path& path, const struct stat& info)
    {
        int fd = open((path / kLockName).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
        {
            return errno == ENOENT && time(nullptr) - info.st_mtime > 3600;
        }
        bool ended = flock(fd, LOCK_EX | LOCK_NB) == 0;
        close(fd); // drops the lock we may have taken
        return ended;
    }

    std::string m_path;
    int m_lock = -1;
};

// The signal that asked the run to stop (0: none yet). Set by the handler, read by the loop.
volatile sig_atomic_t g_stopSignal = 0;

void
OnStopSignal(int signal)
{
    g_stopSignal = signal;
}

// SIGINT, SIGTERM and SIGHUP stop the run through the loop (ranks stopped, partial summary,
// socket removed) instead of killing eidolon; restores the previous handlers when it goes. A
// shell starts a background job with SIGINT ignored: the handler replaces that too.
class StopSignals
{
public:
    StopSignals()
    {
        g_stopSignal = 0;
        struct sigaction action;
        std::memset(&action, 0, sizeof action);
        action.sa_handler = OnStopSignal;
        sigemptyset(&action.sa_mask);
        for (size_t i = 0; i < std::size(kSignals); ++i)
        {
            sigaction(kSignals[i], &action, &m_previous[i]);
        }
    }
    ~StopSignals()
    {
        for (size_t i = 0; i < std::size(kSignals); ++i)
        {
            sigaction(kSignals[i], &m_previous[i], nullptr);
        }
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    static int Received() { return g_stopSignal; }

private:
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction m_previous[3];
};

// A private directory for one run: mode 0700 with a random name ($TMPDIR or /tmp), holding the
// simulator's ipc:// socket; the ranks find it as EIDOLON_RUN_DIR. Removed with its contents when
// the run ends, whatever the way (exception, signal, failure).
class RunDirectory
{
public:
    RunDirectory()
    {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/eidolon-run-XXXXXX";
        if (!::mkdtemp(pattern.data())) // 0700, a name nobody can guess or take first
        {
            throw std::system_error(errno, std::generic_category(),
                                    "cannot create a run directory from " + pattern);
        }
        m_path = pattern;
    }
    ~RunDirectory()
    {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    RunDirectory(const RunDirectory&) = delete;
    RunDirectory& operator=(const RunDirectory&) = delete;

    const std::string& Path() const { return m_path; }
    std::string SocketAddress() const { return "ipc://" + m_path + "/sim.sock"; }

private:
    std::string m_path;
};

// Whether a tcp:// endpoint is bound beyond this machine's loopback (anyone who can reach the
// port may join the run).
bool
BeyondLoopback(const std::string& address)
{
    if (address.rfind("tcp://", 0) != 0)
    {
        return false;
    }
    std::string host = address.substr(6, address.rfind(':') - 6);
    return !(host == "127.0.0.1" || host == "localhost" || host == "[::1]" || host == "::1" ||
             host.rfind("127.", 0) == 0);
}

// Writes `export NAME=VALUE` lines for the ranks' CURVE keys into DIR/curve.env (mode 0600, in
// the run's private directory); returns its path.
std::string
WriteCurveEnvironment(const eidolon::bridge::CurveKeys& keys, const std::string& dir)
{
    std::string path = dir + "/curve.env";
    std::string text;
    for (const auto& [name, value] : keys.Environment())
    {
        text += "export " + name + "='" + value + "'\n";
    }
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, text.data(), text.size()) != ssize_t(text.size()))
    {
        int error = errno;
        if (fd >= 0)
        {
            ::close(fd);
        }
        throw std::system_error(error, std::generic_category(), path);
    }
    ::close(fd);
    return path;
}

} // namespace

namespace
{

sim::SimOptions
OptionsFrom(const RunArguments& args)
{
    bool attach = args.launch == "attach";
    if (!attach && args.command.empty())
    {
        throw std::runtime_error("no program to run: eidolon run [options] -- PROGRAM ARGS");
    }
    if (args.launch != "gpu" && args.launch != "node" && !attach)
    {
        throw std::runtime_error("--launch must be gpu, node or attach, not '" + args.launch + "'");
    }
    sim::SimOptions options;
    options.topologyPath = ns3::eidolon::ClusterHelper::ResolveTopologyPath(args.topology);
    options.model = args.model;
    options.transport = args.transport;
    options.watchdogSeconds = args.watchdogSeconds;
    options.optimistic = args.optimistic;
    options.graceSeconds = args.graceSeconds;
    options.maxSlices = args.traceSlices;
    options.maxFlowSlices = args.traceFlowSlices;
    options.traceFromNs = args.traceFromMs * 1e6;
    options.statsFromNs = args.statsFromMs * 1e6;
    options.launch = args.launch;
    if (args.traceEachOp)
    {
        setenv("EIDOLON_TRACE_EACH_OP", "1", 1); // the ranks inherit it (gpu-emu's bridge client)
    }
    if (!args.ncclVersion.empty())
    {
        // The flag is the environment variable set for the simulator and every rank it launches
        // (gpu-emu's ncclGetVersion reads the same variable).
        uint32_t code = ::eidolon::spec::ParseNcclVersion(args.ncclVersion, "--nccl-version");
        setenv(::eidolon::spec::kNcclVersionVariable,
               ::eidolon::spec::FormatNcclVersion(code).c_str(), 1);
    }
    options.ncclVersion = ::eidolon::spec::NcclVersionFromEnvironment();
    // The variables the collective model reads (a list of its own here lost NCCL_PAT_ENABLE and
    // NCCL_NVLS_NCHANNELS set beside `eidolon run`).
    for (const std::string& name : ns3::eidolon::NcclConfig::Variables())
    {
        if (const char* value = std::getenv(name.c_str()))
        {
            options.ncclEnvironment[name] = value;
        }
    }
    options.expectedProcesses = args.ranks; // attach; a launch counts its own below
    return options;
}

// The processes to launch (none in attach mode), whose ranks connect to `address`; sets how many
// the simulator expects.
std::vector<eidolon::run::RankProcess>
PlanRanks(const RunArguments& args, const std::string& address, const std::string& runDir,
          sim::SimOptions& options)
{
    // Which GPUs take part: the whole topology, the first N GPUs, or N nodes of M GPUs.
    auto topology = ns3::eidolon::ClusterHelper().ReadTopology(options.topologyPath);
    int topoNodes = int(topology->NodeCount());
    int topoPerNode = int(topology->GpusOfNode(0).size());
    int nodes = args.nodes > 0 ? args.nodes : topoNodes;
    int perNode = args.gpusPerNode > 0 ? args.gpusPerNode : topoPerNode;
    if (args.gpus > topoNodes * topoPerNode)
    {
        throw std::runtime_error(fmt::format("--gpus {}: the topology {} has {} GPUs ({} x {})",
                                             args.gpus, options.topologyPath,
                                             topoNodes * topoPerNode, topoNodes, topoPerNode));
    }
    if (args.gpus > 0)
    {
        perNode = std::min(args.gpus, topoPerNode);
        nodes = (args.gpus + perNode - 1) / perNode;
    }
    if (nodes > topoNodes || perNode > topoPerNode)
    {
        throw std::runtime_error(
            fmt::format("{}: asked for {} node(s) x {} GPU(s), the topology has {} x {}",
                        options.topologyPath, nodes, perNode, topoNodes, topoPerNode));
    }
    int totalGpus = args.gpus > 0 ? args.gpus : nodes * perNode;
    std::vector<eidolon::run::RankProcess> processes;
    if (args.launch == "attach")
    {
        return processes;
    }
    std::map<std::string, std::string> common =
        LoaderEnvironment(SelfDirectory() + "/../lib/gpu-emu");
    common["EIDOLON_SIM_ENDPOINT"] = address;
    // Who to watch while waiting: the ranks end with an error rather than wait for a simulator
    // that is gone.
    common["EIDOLON_SIM_PID"] = std::to_string(getpid());
    common["EIDOLON_RUN_DIR"] = runDir;
    common["EIDOLON_NUM_GPUS"] = std::to_string(topoPerNode);
    common["EIDOLON_GPU"] = topology->GpuSpecOf(0).name;
    if (!topology->host.empty())
    {
        // The servers' host description (per-call host costs, CPU); without a `host:` field the
        // ranks use EIDOLON_HOST or gpu-emu's default.
        common["EIDOLON_HOST"] = topology->host;
        common["EIDOLON_HOST_SPEC_DIR"] = topology->hostSpecDir;
    }
    std::string port = eidolon::run::FreeLoopbackPort();
    if (args.launch == "gpu")
    {
        processes = eidolon::run::PerGpuProcesses(args.command, nodes, perNode, port, common);
        processes.resize(size_t(totalGpus)); // --gpus N may end inside a node
        for (auto& p : processes)
        {
            p.env["WORLD_SIZE"] = std::to_string(totalGpus);
            p.unset = HostTaskIdentity();
        }
        options.expectedProcesses = totalGpus;
        return processes;
    }
    processes = eidolon::run::PerNodeProcesses(args.command, nodes, perNode, port, common);
    for (auto& p : processes)
    {
        p.unset = HostTaskIdentity();
    }
    for (size_t k = 0; k < processes.size() && !eidolon::run::SpawnsItsOwnRanks(args.command[0]);
         ++k)
    {
        // A program that drives every GPU of its node (nccl-tests -g M) is process k of
        // `nodes`. A known launcher gets none (SpawnsItsOwnRanks); one that is not known by name
        // (a script around mpirun) passes these on, and gpu-emu sees through them.
        processes[k].env["RANK"] = std::to_string(k);
        processes[k].env["WORLD_SIZE"] = std::to_string(nodes);
        processes[k].env["LOCAL_RANK"] = "0";
        processes[k].env["LOCAL_WORLD_SIZE"] = "1";
        // The workers of a launcher that keeps these (mpirun passes its environment on) take
        // their identity from the launcher's own variables instead (gpu-emu/core/config.cc).
        processes[k].env["EIDOLON_NODE_IDENTITY"] = fmt::format("{}:{}:0:1", k, nodes);
    }
    // At least one process per node; a worker's Hello raises this to its WORLD_SIZE (torchrun's
    // or mpirun's workers), and a launcher's agent that only counts the GPUs never joins.
    options.expectedProcesses = nodes;
    return processes;
}

// Whether `pid` still runs (a zombie has exited: its output is all written).
bool
ProcessAlive(int pid)
{
    if (::kill(pid, 0) != 0)
    {
        return false;
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

} // namespace

int
RunSimulation(const RunArguments& args)
{
#ifndef NS3_LOG_ENABLE
    // The packaged ns-3 and our release builds compile NS_LOG out: a researcher who sets it would
    // otherwise see nothing and not know why.
    if (const char* log = std::getenv("NS_LOG"); log && *log)
    {
        std::cerr
            << "eidolon: NS_LOG is set, but this build has ns-3 logging compiled out; "
               "build with -DCMAKE_BUILD_TYPE=Debug for the eidolon module's log components\n";
    }
#endif
    bool attach = args.launch == "attach";
    sim::SimOptions options = OptionsFrom(args);
    std::unique_ptr<RunDirectory> runDir;
    std::string address = args.endpoint;
    if (!attach || args.curve)
    {
        runDir = std::make_unique<RunDirectory>();
    }
    if (!attach)
    {
        address = runDir->SocketAddress();
    }
    if (address.empty())
    {
        throw std::runtime_error("attach mode needs --endpoint tcp://HOST:PORT");
    }
    std::vector<eidolon::run::RankProcess> processes =
        PlanRanks(args, address, runDir ? runDir->Path() : std::string(), options);
    std::optional<RunDataDirectory> dataDir;
    if (!attach)
    {
        dataDir.emplace();
        if (dataDir->Path().empty())
        {
            std::cerr << "eidolon: cannot create the run's data directory; collectives move no "
                         "data between ranks\n";
        }
        for (auto& process : processes)
        {
            process.env["EIDOLON_DATA_DIR"] = dataDir->Path();
        }
    }

    std::ostream& log = std::cerr;
    std::unique_ptr<eidolon::bridge::CurveKeys> curve;
    if (args.curve)
    {
        if (address.rfind("tcp://", 0) != 0)
        {
            throw std::runtime_error("--curve is for a tcp:// endpoint, not " + address);
        }
        curve =
            std::make_unique<eidolon::bridge::CurveKeys>(eidolon::bridge::CurveKeys::Generate());
        log << fmt::format("eidolon-sim: ranks need the CURVE keys in {} (readable by you alone; "
                           "source it and pass the three variables on, e.g. mpirun -x)\n",
                           WriteCurveEnvironment(*curve, runDir->Path()));
    }
    else if (BeyondLoopback(address))
    {
        log << fmt::format("eidolon-sim: warning: {} is reachable beyond this machine and any "
                           "process that reaches it may join the run or send it messages\n",
                           address);
    }
    StopSignals stopSignals;
    // One step of the packet model can run for minutes of wall time (every packet an event):
    // ns-3 looks at the stop signal every 10 us of simulated time there. The flow model's steps
    // are short, and an event every 10 us would cost a training run millions.
    struct InterruptCheck
    {
        explicit InterruptCheck(bool on)
        {
            if (on)
            {
                sim::SetInterruptCheck([] { return StopSignals::Received() != 0; },
                                       ns3::MicroSeconds(10));
            }
        }
        ~InterruptCheck() { sim::SetInterruptCheck(nullptr, ns3::Time()); }
    } interruptCheck(options.model == "packet");
    eidolon::bridge::SimEndpoint endpoint(options, address, log, curve.get());
    sim::Simulation& simulation = endpoint.Simulation();
    std::filesystem::create_directories(args.out);

    bool progress = args.progress == "on" || (args.progress == "auto" && isatty(STDERR_FILENO));
    bool progressShown = false;
    auto clearProgress = [&]
    {
        if (progressShown)
        {
            std::cerr << "\r\033[K" << std::flush;
            progressShown = false;
        }
    };
    eidolon::run::RankLauncher launcher(std::cout, std::cerr);
    launcher.SetBeforeOutput(clearProgress);
    auto started = std::chrono::steady_clock::now();
    auto wall = [&]
    { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    if (attach)
    {
        log << fmt::format("eidolon-sim: waiting for {} rank(s) at {}\n", args.ranks, address);
    }
    else
    {
        launcher.Start(processes);
    }
    double lastProgress = 0;
    bool launchedDone = false;
    // One turn: wait up to 20 ms for messages (when the simulator steps) and rank output, pass
    // the output on, and tell the simulator about ranks that ended.
    auto pump = [&](bool step)
    {
        std::vector<zmq::pollitem_t> items;
        for (int fd : launcher.Fds())
        {
            items.push_back(zmq::pollitem_t{nullptr, fd, ZMQ_POLLIN, 0});
        }
        if (step)
        {
            endpoint.Step(std::chrono::milliseconds(20), items);
        }
        else
        {
            try
            {
                zmq::poll(items.data(), items.size(), std::chrono::milliseconds(20));
            }
            catch (const zmq::error_t& e)
            {
                if (e.num() != EINTR)
                {
                    throw;
                }
                items.clear(); // a signal: the loop looks at it next
            }
        }
        for (const auto& item : items)
        {
            if (item.revents & (ZMQ_POLLIN | ZMQ_POLLERR))
            {
                launcher.OnReadable(item.fd);
            }
        }
        for (const auto& exit : launcher.Reap())
        {
            simulation.OnProcessExit(
                sim::ProcessExit{exit.name, exit.pid, exit.signaled, exit.code, exit.Describe()});
        }
    };
    while (!simulation.Finished())
    {
        try
        {
            pump(true);
        }
        catch (const std::exception& e)
        {
            // An error of the simulator itself (not of the program: those end the run through
            // Fail where they are found). The ranks are stopped and the summary of what ran is
            // still written, marked partial, rather than lost with the process.
            simulation.Fail(fmt::format("internal error of the simulator: {} (please report it "
                                        "with the command line)",
                                        e.what()));
            break;
        }
        if (int signal = StopSignals::Received())
        {
            simulation.Fail(fmt::format("stopped by signal {} ({}): the ranks were stopped; the "
                                        "summary holds what ran until then",
                                        signal, ::strsignal(signal)));
            break;
        }
        if (!attach && !launchedDone && launcher.Running() == 0)
        {
            launchedDone = true;
            simulation.OnLaunchedProcessesDone();
        }
        if (progress && wall() - lastProgress > 0.5)
        {
            lastProgress = wall();
            std::cerr << "\r\033[K"
                      << sim::ProgressLine(
                             simulation.VirtualNowNs(), wall(), simulation.Running(),
                             simulation.Blocked(),
                             std::max(simulation.Connected(), options.expectedProcesses))
                      << std::flush;
            progressShown = true;
        }
    }
    clearProgress();
    // A rank that said goodbye is exiting on its own, its output (flushed only at exit when it
    // goes to a pipe) still to come: a failed run waits for such ranks before stopping the rest,
    // or a failing program's last lines would be lost.
    if (simulation.Failed() && !attach)
    {
        const std::vector<int> leaving = simulation.LeavingPids();
        const auto leaveUntil = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        while (std::any_of(leaving.begin(), leaving.end(), ProcessAlive) &&
               std::chrono::steady_clock::now() < leaveUntil && !StopSignals::Received())
        {
            pump(false);
        }
    }
    // The ranks' last output (a program's stdout is flushed at exit) and exit statuses.
    auto drainUntil =
        std::chrono::steady_clock::now() + std::chrono::seconds(simulation.Failed() ? 0 : 10);
    while (!attach && launcher.Running() > 0 && std::chrono::steady_clock::now() < drainUntil &&
           !StopSignals::Received())
    {
        pump(false);
    }
    if ((simulation.Failed() || launcher.Running() > 0) && !attach)
    {
        for (const auto& exit : launcher.TerminateAll(std::chrono::milliseconds(3000)))
        {
            simulation.OnProcessExit(
                sim::ProcessExit{exit.name, exit.pid, exit.signaled, exit.code, exit.Describe()});
        }
    }
    for (const auto& [line, times] : launcher.RepeatedWarnings())
    {
        if (times > 0)
        {
            std::cerr << fmt::format("eidolon: {} more rank line(s) repeated: {}\n", times, line);
        }
    }
    auto report = simulation.Report(wall());
    sim::WriteSummaryJson(report, args.out + "/summary.json");
    sim::WriteTraceJson(report, args.out + "/trace.json");
    std::cout << std::flush;
    sim::PrintSummaryTable(report, std::cerr);
    std::cerr << fmt::format("eidolon: wrote {}/summary.json and {}/trace.json\n", args.out,
                             args.out);
    if (int signal = StopSignals::Received())
    {
        return 128 + signal; // as a shell reports a command a signal ended
    }
    if (simulation.Failed())
    {
        return 1;
    }
    for (const auto& exit : launcher.Exits())
    {
        if (!exit.Success())
        {
            return 1;
        }
    }
    return 0;
}

} // namespace eidolon::tools
