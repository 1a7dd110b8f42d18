// The rank launcher of `eidolon run`: /bin/sh scripts as ranks, their prefixed output, exit
// statuses, exec failures, stopping, and the rank variables. Timeouts are generous (nothing here
// depends on how fast the machine is); only TerminateAll's bound is checked, loosely.
#define BOOST_TEST_MODULE rank_launcher
#include "rank-launcher.h"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

using namespace eidolon::run;
using namespace std::chrono_literals;

namespace
{
RankProcess
Sh(const std::string& name, const std::string& script, std::map<std::string, std::string> env = {})
{
    return RankProcess{name, {"/bin/sh", "-c", script}, std::move(env)};
}

/// The caller's loop: poll the pipes, copy output, reap; until every process has been reaped and
/// (if `untilEof`) every pipe has reached EOF. Fails the test after `timeout`.
std::vector<Exit>
RunUntilDone(RankLauncher& launcher, bool untilEof = true, std::chrono::milliseconds timeout = 60s)
{
    std::vector<Exit> exits;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (launcher.Running() > 0 || (untilEof && !launcher.Fds().empty()))
    {
        if (std::chrono::steady_clock::now() > deadline)
        {
            BOOST_FAIL("ranks did not finish within the timeout");
        }
        std::vector<pollfd> fds;
        for (int fd : launcher.Fds())
        {
            fds.push_back(pollfd{fd, POLLIN, 0});
        }
        int ready = ::poll(fds.data(), fds.size(), 20);
        if (ready > 0)
        {
            for (const auto& p : fds)
            {
                if (p.revents != 0)
                {
                    launcher.OnReadable(p.fd);
                }
            }
        }
        auto more = launcher.Reap();
        exits.insert(exits.end(), more.begin(), more.end());
    }
    return exits;
}

std::vector<std::string>
Lines(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
    {
        lines.push_back(line);
    }
    return lines;
}
} // namespace

BOOST_AUTO_TEST_CASE(prefixed_lines_and_partial_line_at_eof)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    launcher.Start({Sh("rank3", "echo hello; echo 'two words'; echo oops >&2; printf partial")});
    BOOST_TEST(launcher.Running() == 1u);
    BOOST_TEST(launcher.Fds().size() == 2u);
    auto exits = RunUntilDone(launcher);
    BOOST_TEST(out.str() == "[rank3]:hello\n[rank3]:two words\n[rank3]:partial\n");
    BOOST_TEST(err.str() == "[rank3]:oops\n");
    BOOST_REQUIRE(exits.size() == 1u);
    BOOST_TEST(exits[0].name == "rank3");
    BOOST_TEST(exits[0].index == 0u);
    BOOST_TEST(exits[0].Success());
    BOOST_TEST(exits[0].Describe() == "rank3 exited with status 0");
    BOOST_TEST(launcher.Running() == 0u);
    BOOST_TEST(launcher.Fds().empty());
}

BOOST_AUTO_TEST_CASE(line_split_across_writes_is_joined)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    launcher.Start({Sh("rank0", "printf ab; sleep 0.2; printf 'c\\nd'; sleep 0.2; echo e; "
                                "printf 'x\\n\\ny\\n'")});
    RunUntilDone(launcher);
    BOOST_TEST(out.str() == "[rank0]:abc\n[rank0]:de\n[rank0]:x\n[rank0]:\n[rank0]:y\n");
}

BOOST_AUTO_TEST_CASE(several_ranks_keep_their_prefixes)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    std::vector<RankProcess> ranks;
    for (int r = 0; r < 4; ++r)
    {
        ranks.push_back(Sh("rank" + std::to_string(r),
                           "i=0; while [ $i -lt 50 ]; do echo line $i; i=$((i+1)); done"));
    }
    launcher.Start(ranks);
    auto exits = RunUntilDone(launcher);
    BOOST_TEST(exits.size() == 4u);
    auto lines = Lines(out.str());
    BOOST_TEST(lines.size() == 200u);
    for (int r = 0; r < 4; ++r)
    {
        // Each rank's lines arrive whole and in order, whatever the interleaving between ranks.
        std::string prefix = "[rank" + std::to_string(r) + "]:";
        std::vector<std::string> mine;
        for (const auto& line : lines)
        {
            if (line.rfind(prefix, 0) == 0)
            {
                mine.push_back(line.substr(prefix.size()));
            }
        }
        BOOST_REQUIRE(mine.size() == 50u);
        for (int i = 0; i < 50; ++i)
        {
            BOOST_TEST(mine[i] == "line " + std::to_string(i));
        }
    }
}

// eidolon's own warnings (stderr, "eidolon: ..."), once per process in gpu-emu, are written once
// per run; the rest are counted. Other stderr and stdout lines are all written.
BOOST_AUTO_TEST_CASE(eidolon_warnings_repeated_by_ranks_are_written_once)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    std::vector<RankProcess> ranks;
    for (int r = 0; r < 3; ++r)
    {
        ranks.push_back(Sh("rank" + std::to_string(r),
                           "echo 'eidolon: same warning' >&2; echo 'eidolon: rank " +
                               std::to_string(r) + "' >&2; echo 'other' >&2; echo 'eidolon: out'"));
    }
    launcher.Start(ranks);
    RunUntilDone(launcher);
    auto errLines = Lines(err.str());
    int same = 0, other = 0, own = 0;
    for (const auto& line : errLines)
    {
        same += line.find("]:eidolon: same warning") != std::string::npos;
        other += line.find("]:other") != std::string::npos;
        own += line.find("]:eidolon: rank ") != std::string::npos;
    }
    BOOST_TEST(same == 1);
    BOOST_TEST(other == 3);
    BOOST_TEST(own == 3);
    BOOST_TEST(Lines(out.str()).size() == 3u); // stdout is not filtered
    BOOST_REQUIRE(launcher.RepeatedWarnings().size() == 4u); // every warning seen
    int repeats = 0;
    for (const auto& [line, times] : launcher.RepeatedWarnings())
    {
        if (line == "eidolon: same warning")
        {
            repeats = times;
        }
    }
    BOOST_TEST(repeats == 2);
}

BOOST_AUTO_TEST_CASE(exit_status_and_signal)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    launcher.Start({Sh("rank0", "exit 3"), Sh("rank1", "kill -9 $$"), Sh("rank2", "kill -TERM $$"),
                    Sh("rank3", "true")});
    auto exits = RunUntilDone(launcher);
    BOOST_REQUIRE(exits.size() == 4u);
    std::sort(exits.begin(), exits.end(),
              [](const Exit& a, const Exit& b) { return a.index < b.index; });
    BOOST_TEST(!exits[0].signaled);
    BOOST_TEST(exits[0].code == 3);
    BOOST_TEST(!exits[0].Success());
    BOOST_TEST(exits[0].Describe() == "rank0 exited with status 3");
    BOOST_TEST(exits[1].signaled);
    BOOST_TEST(exits[1].code == 9);
    BOOST_TEST(exits[1].Describe() == "rank1 was killed by signal 9 (Killed)");
    BOOST_TEST(exits[2].signaled);
    BOOST_TEST(exits[2].code == 15);
    BOOST_TEST(exits[2].Describe() == "rank2 was killed by signal 15 (Terminated)");
    BOOST_TEST(exits[3].Success());
    BOOST_TEST(exits[0].pid > 0);
    BOOST_TEST(launcher.Exits().size() == 4u);

    auto statuses = launcher.Statuses();
    BOOST_REQUIRE(statuses.size() == 4u);
    BOOST_TEST(statuses[1].name == "rank1");
    BOOST_TEST(statuses[1].exited);
    BOOST_TEST(statuses[1].signaled);
    BOOST_TEST(statuses[1].code == 9);
    BOOST_TEST(statuses[0].pid == exits[0].pid);
}

BOOST_AUTO_TEST_CASE(program_that_cannot_be_executed)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    launcher.Start({RankProcess{"rank3", {"eidolon-no-such-program"}, {}},
                    RankProcess{"rank4", {"/nonexistent/dir/prog", "arg"}, {}},
                    RankProcess{"rank5", {"/etc/passwd"}, {}}});
    auto exits = RunUntilDone(launcher);
    BOOST_REQUIRE(exits.size() == 3u);
    std::sort(exits.begin(), exits.end(),
              [](const Exit& a, const Exit& b) { return a.index < b.index; });
    BOOST_TEST(!exits[0].signaled);
    BOOST_TEST(exits[0].code == 127);
    BOOST_TEST(exits[0].Describe() ==
               "rank3: cannot execute 'eidolon-no-such-program': No such file or directory");
    BOOST_TEST(exits[1].code == 127);
    BOOST_TEST(exits[1].Describe() ==
               "rank4: cannot execute '/nonexistent/dir/prog': No such file or directory");
    BOOST_TEST(exits[2].code == 127);
    BOOST_TEST(exits[2].Describe() == "rank5: cannot execute '/etc/passwd': Permission denied");
    BOOST_TEST(launcher.Statuses()[0].error ==
               "cannot execute 'eidolon-no-such-program': No such file or directory");
}

BOOST_AUTO_TEST_CASE(path_lookup_environment_and_stdin)
{
    ::setenv("EIDOLON_TEST_INHERITED", "inherited", 1);
    ::setenv("EIDOLON_TEST_OVERRIDDEN", "old", 1);
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    // "sh" is found on PATH; stdin is /dev/null, so cat ends at once.
    launcher.Start({RankProcess{
        "rank1",
        {"sh", "-c",
         "cat; echo $EIDOLON_TEST_INHERITED $EIDOLON_TEST_OVERRIDDEN $EIDOLON_TEST_NEW"},
        {{"EIDOLON_TEST_OVERRIDDEN", "new"}, {"EIDOLON_TEST_NEW", "added"}}}});
    auto exits = RunUntilDone(launcher);
    BOOST_TEST(out.str() == "[rank1]:inherited new added\n");
    BOOST_REQUIRE(exits.size() == 1u);
    BOOST_TEST(exits[0].Success());
    ::unsetenv("EIDOLON_TEST_INHERITED");
    ::unsetenv("EIDOLON_TEST_OVERRIDDEN");
}

BOOST_AUTO_TEST_CASE(before_output_hook_runs_before_each_write)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    int calls = 0;
    bool outputBeforeHook = false;
    launcher.SetBeforeOutput(
        [&]
        {
            ++calls;
            // The progress line is cleared before the rank line lands: here nothing is written yet
            // for the first call.
            if (calls == 1 && !out.str().empty())
            {
                outputBeforeHook = true;
            }
            out << "<clear>";
        });
    launcher.Start({Sh("rank0", "echo a")});
    RunUntilDone(launcher);
    BOOST_TEST(calls >= 1);
    BOOST_TEST(!outputBeforeHook);
    BOOST_TEST(out.str() == "<clear>[rank0]:a\n");
}

BOOST_AUTO_TEST_CASE(terminate_all_stops_ranks_and_their_children)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    launcher.Start({Sh("rank0", "sleep 100"),
                    // ignores SIGTERM (and so does its sleep): needs the SIGKILL
                    Sh("rank1", "trap '' TERM; echo ready; sleep 100"),
                    // a launcher-like rank whose workers hold its output pipe
                    Sh("rank2", "sleep 100 & sleep 100 & echo spawned; wait"),
                    Sh("rank3", "exit 0")});
    // Wait for rank3 to end and for rank1 and rank2 to have set themselves up.
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while ((out.str().find("[rank1]:ready") == std::string::npos ||
            out.str().find("[rank2]:spawned") == std::string::npos || launcher.Running() > 3) &&
           std::chrono::steady_clock::now() < deadline)
    {
        for (int fd : launcher.Fds())
        {
            launcher.OnReadable(fd);
        }
        launcher.Reap();
        ::usleep(10000);
    }
    BOOST_REQUIRE(launcher.Running() == 3u);
    auto start = std::chrono::steady_clock::now();
    auto exits = launcher.TerminateAll(300ms);
    auto took = std::chrono::steady_clock::now() - start;
    BOOST_TEST(std::chrono::duration<double>(took).count() < 20.0); // sleep 100 was stopped
    BOOST_TEST(launcher.Running() == 0u);
    BOOST_TEST(launcher.Fds().empty());
    BOOST_REQUIRE(exits.size() == 3u);
    std::sort(exits.begin(), exits.end(),
              [](const Exit& a, const Exit& b) { return a.index < b.index; });
    BOOST_TEST(exits[0].name == "rank0");
    BOOST_TEST(exits[0].signaled);
    BOOST_TEST(exits[0].code == 15);
    BOOST_TEST(exits[1].name == "rank1");
    BOOST_TEST(exits[1].signaled);
    BOOST_TEST(exits[1].code == 9);
    BOOST_TEST(exits[2].name == "rank2");
    BOOST_TEST(exits[2].signaled);
    BOOST_TEST(launcher.Exits().size() == 4u); // rank3's normal exit as well
}

BOOST_AUTO_TEST_CASE(workers_left_behind_by_an_exited_launcher_are_stopped)
{
    // torchrun-like: the rank exits but its worker still holds the output pipe.
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    launcher.Start({Sh("node0", "sleep 100 & echo started")});
    auto exits = RunUntilDone(launcher, /*untilEof=*/false);
    BOOST_REQUIRE(exits.size() == 1u);
    BOOST_TEST(exits[0].Success());
    BOOST_TEST(out.str() == "[node0]:started\n");
    BOOST_TEST(!launcher.Fds().empty()); // the worker's copy of the pipe is still open
    auto start = std::chrono::steady_clock::now();
    BOOST_TEST(launcher.TerminateAll(300ms).empty());
    BOOST_TEST(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
               20.0);
    BOOST_TEST(launcher.Fds().empty());
}

BOOST_AUTO_TEST_CASE(destructor_stops_running_ranks)
{
    std::ostringstream out, err;
    int pid = 0;
    {
        RankLauncher launcher(out, err);
        launcher.Start({Sh("rank0", "exec sleep 100")});
        pid = launcher.Statuses()[0].pid;
        BOOST_TEST(::kill(pid, 0) == 0);
    }
    // Reaped by the destructor: the pid is gone.
    BOOST_TEST(::kill(pid, 0) == -1);
}

BOOST_AUTO_TEST_CASE(empty_command_is_rejected)
{
    std::ostringstream out, err;
    RankLauncher launcher(out, err);
    BOOST_CHECK_THROW(launcher.Start({RankProcess{"rank0", {}, {}}}), std::invalid_argument);
    BOOST_TEST(launcher.Size() == 0u);
}

BOOST_AUTO_TEST_CASE(per_gpu_processes_two_nodes_two_gpus)
{
    auto processes = PerGpuProcesses({"./train", "--steps", "3"}, 2, 2, "29500",
                                     {{"LD_PRELOAD", "libx.so"}, {"RANK", "overridden"}});
    BOOST_REQUIRE(processes.size() == 4u);
    for (int rank = 0; rank < 4; ++rank)
    {
        const auto& p = processes[rank];
        int node = rank / 2;
        int local = rank % 2;
        BOOST_TEST(p.name == "rank" + std::to_string(rank));
        BOOST_TEST((p.argv == std::vector<std::string>{"./train", "--steps", "3"}));
        std::map<std::string, std::string> expected = {
            {"LD_PRELOAD", "libx.so"},
            {"RANK", std::to_string(rank)},
            {"LOCAL_RANK", std::to_string(local)},
            {"WORLD_SIZE", "4"},
            {"LOCAL_WORLD_SIZE", "2"},
            {"GROUP_RANK", std::to_string(node)},
            {"NODE_RANK", std::to_string(node)},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", "29500"},
            {"EIDOLON_NODE", std::to_string(node)},
            {"EIDOLON_RANK", std::to_string(rank)},
            {"EIDOLON_LAUNCH", "gpu"},
        };
        BOOST_TEST(p.env.size() == expected.size());
        for (const auto& [key, value] : expected)
        {
            BOOST_TEST_CONTEXT(p.name << " " << key)
            {
                BOOST_REQUIRE(p.env.count(key) == 1u);
                BOOST_TEST(p.env.at(key) == value);
            }
        }
    }
    // Spot checks written out, so that the formula above is not the only witness.
    BOOST_TEST(processes[3].env.at("RANK") == "3");
    BOOST_TEST(processes[3].env.at("LOCAL_RANK") == "1");
    BOOST_TEST(processes[3].env.at("NODE_RANK") == "1");
    BOOST_TEST(processes[2].env.at("LOCAL_RANK") == "0");
    BOOST_TEST(processes[2].env.at("GROUP_RANK") == "1");
    BOOST_TEST(processes[1].env.at("NODE_RANK") == "0");
    BOOST_CHECK_THROW(PerGpuProcesses({"x"}, 0, 2, "1", {}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(per_node_processes)
{
    auto processes =
        PerNodeProcesses({"torchrun", "--nproc-per-node", "8", "train.py"}, 2, 8, "12345", {});
    BOOST_REQUIRE(processes.size() == 2u);
    for (int node = 0; node < 2; ++node)
    {
        const auto& p = processes[node];
        BOOST_TEST(p.name == "node" + std::to_string(node));
        BOOST_TEST(p.argv.size() == 4u);
        std::map<std::string, std::string> expected = {
            {"NODE_RANK", std::to_string(node)},
            {"GROUP_RANK", std::to_string(node)},
            {"EIDOLON_NODE", std::to_string(node)},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", "12345"},
            {"WORLD_SIZE", "16"},
            {"LOCAL_WORLD_SIZE", "8"},
            {"EIDOLON_LAUNCH", "node"},
            // torchrun's defaults: one job of 2 nodes, a worker per GPU, node 0 the master
            {"PET_NNODES", "2"},
            {"PET_NODE_RANK", std::to_string(node)},
            {"PET_NPROC_PER_NODE", "8"},
            {"PET_MASTER_ADDR", "127.0.0.1"},
            {"PET_MASTER_PORT", "12345"},
        };
        BOOST_TEST(p.env == expected);
    }
}

BOOST_AUTO_TEST_CASE(launchers_that_spawn_their_own_ranks)
{
    for (const char* program : {"mpirun", "/usr/bin/mpirun", "mpiexec", "orterun", "srun",
                                ".pytorch-venv/bin/torchrun", "mpiexec.hydra", "prterun"})
    {
        BOOST_TEST(SpawnsItsOwnRanks(program), program);
    }
    for (const char* program : {"collective-bench", "build/bin/collective-bench", "python3",
                                "mpirun-wrapper.sh", "/opt/mpirun/bin/app", ""})
    {
        BOOST_TEST(!SpawnsItsOwnRanks(program), program);
    }
}

BOOST_AUTO_TEST_CASE(free_loopback_port_can_be_bound)
{
    std::string port = FreeLoopbackPort();
    int number = std::stoi(port);
    BOOST_TEST(number > 0);
    BOOST_TEST(number < 65536);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    BOOST_REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(number));
    BOOST_TEST(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    ::close(fd);
}
