// `eidolon calibrate-host`: times the fixed CPU workload (validation/gpu-truth/host-cpu-workload.h)
// on this machine, once, and writes the result where runs read it (spec/host-calibration.h). The
// cpu-time and instructions host-time modes turn it into a speed factor against the target host's
// time on the same workload; the default mode (calls) does not need it.
#include "commands.h"

#include "../validation/gpu-truth/host-cpu-workload.h"
#include "host-calibration.h"
#include "host-spec.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <vector>

namespace eidolon::tools
{
namespace
{

double
ThreadCpuNs()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

uint64_t
ReadCounter(int fd)
{
    uint64_t value = 0;
    return fd >= 0 && read(fd, &value, sizeof value) == sizeof value ? value : 0;
}

struct KernelTiming
{
    double cpuNs;        // median thread CPU time
    double instructions; // median retired user instructions (0 without a PMU)
};

// Thread CPU time, not wall time: a machine busy with other work still gives about the same answer.
KernelTiming
Time(void (*kernel)(uint64_t&), int runs, int counter, uint64_t& sink)
{
    std::vector<double> cpu, instructions;
    for (int r = 0; r < runs; ++r)
    {
        uint64_t i0 = ReadCounter(counter);
        double t0 = ThreadCpuNs();
        kernel(sink);
        cpu.push_back(ThreadCpuNs() - t0);
        instructions.push_back(double(ReadCounter(counter) - i0));
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(instructions.begin(), instructions.end());
    return {cpu[cpu.size() / 2], instructions[instructions.size() / 2]};
}

std::string
CpuModel()
{
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
    {
        if (line.rfind("model name", 0) == 0)
        {
            auto colon = line.find(':');
            return colon == std::string::npos ? line : line.substr(colon + 2);
        }
    }
    return "unknown";
}

std::string
UtcNow()
{
    std::time_t now = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return text;
}

// Keeps the workload's results alive, so that the compiler keeps the work.
volatile uint64_t g_workloadSink = 0;

void
CalibrateHost(const std::string& out, const std::string& hostName, int runs)
{
    int counter = eidolon::spec::OpenUserInstructionCounter();
    std::string pmu = counter >= 0 ? "" : std::strerror(errno);
    uint64_t sink = 0;
    spec::HostCalibration calibration;
    KernelTiming alu = Time(host_cpu_workload::Alu, runs, counter, sink);
    KernelTiming sort = Time(host_cpu_workload::Sort, runs, counter, sink);
    KernelTiming map = Time(host_cpu_workload::MapWork, runs, counter, sink);
    if (counter >= 0)
    {
        close(counter);
    }
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    calibration.machine = name;
    calibration.cpu = CpuModel();
    calibration.date = UtcNow();
    calibration.aluNs = alu.cpuNs;
    calibration.sortNs = sort.cpuNs;
    calibration.mapNs = map.cpuNs;
    calibration.aluInstructions = alu.instructions;
    calibration.sortInstructions = sort.instructions;
    calibration.mapInstructions = map.instructions;
    spec::WriteHostCalibration(out, calibration);

    std::cout << fmt::format("{} ({}): alu {:.1f} ms, sort {:.1f} ms, map {:.1f} ms of CPU time\n",
                             calibration.machine, calibration.cpu, alu.cpuNs / 1e6,
                             sort.cpuNs / 1e6, map.cpuNs / 1e6);
    std::cout << (counter >= 0 ? fmt::format("instructions: alu {:.0f}, sort {:.0f}, map {:.0f}\n",
                                             alu.instructions, sort.instructions, map.instructions)
                               : "no hardware instruction counter (" + pmu +
                                     "): the instructions host-time mode cannot run here\n");
    spec::HostSpec host =
        spec::FindHostSpec(hostName, {std::string(SourceDir()) + "/topologies/hosts"});
    std::cout << fmt::format("speed factor against {} ({}): {:.3f} virtual ns per CPU ns here\n",
                             host.name, host.cpu, spec::HostSpeedFactor(host, calibration));
    std::cout << "written to " << out << " (read by runs in the cpu-time and instructions "
              << "host-time modes)\n";
    g_workloadSink = sink;
}

} // namespace

void
RegisterCalibrateHostCommand(CLI::App& app)
{
    auto* command = app.add_subcommand(
        "calibrate-host", "time a fixed CPU workload here, once per machine, for the host speed "
                          "factor of the cpu-time and instructions host-time modes");
    static std::string out = spec::DefaultHostCalibrationPath();
    static std::string host = spec::kDefaultHostName;
    static int runs = 7;
    command->add_option("--out", out, "where to write the calibration")->capture_default_str();
    command->add_option("--host", host, "host description to print the speed factor against")
        ->capture_default_str();
    command->add_option("--runs", runs, "runs of each kernel (the median is kept)")
        ->check(CLI::Range(1, 101))
        ->capture_default_str();
    command->callback([] { CalibrateHost(out, host, runs); });
}

} // namespace eidolon::tools
