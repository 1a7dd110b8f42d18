#include "host-calibration.h"

#include <nlohmann/json.hpp>

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace eidolon::spec
{

std::string
DefaultHostCalibrationPath()
{
    const char* cache = std::getenv("XDG_CACHE_HOME");
    std::string base;
    if (cache && *cache)
    {
        base = cache;
    }
    else if (const char* home = std::getenv("HOME"); home && *home)
    {
        base = std::string(home) + "/.cache";
    }
    else
    {
        base = "/tmp";
    }
    return base + "/eidolon/host-calibration.json";
}

HostCalibration
ReadHostCalibration(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error(path + ": no host calibration (run `eidolon calibrate-host`)");
    }
    nlohmann::json json;
    try
    {
        json = nlohmann::json::parse(in);
    }
    catch (const nlohmann::json::exception& e)
    {
        throw std::runtime_error(path + ": not valid JSON: " + e.what());
    }
    auto number = [&](const char* field, bool required)
    {
        if (!json.contains(field) || json[field].is_null())
        {
            if (required)
            {
                throw std::runtime_error(path + ": field '" + field + "': missing");
            }
            return 0.0;
        }
        if (!json[field].is_number() || json[field].get<double>() < 0)
        {
            throw std::runtime_error(path + ": field '" + field + "': not a non-negative number");
        }
        return json[field].get<double>();
    };
    HostCalibration calibration;
    calibration.machine = json.value("machine", "");
    calibration.cpu = json.value("cpu", "");
    calibration.date = json.value("date", "");
    calibration.aluNs = number("alu_ns", true);
    calibration.sortNs = number("sort_ns", true);
    calibration.mapNs = number("map_ns", true);
    calibration.aluInstructions = number("alu_instructions", false);
    calibration.sortInstructions = number("sort_instructions", false);
    calibration.mapInstructions = number("map_instructions", false);
    if (calibration.aluNs <= 0 || calibration.sortNs <= 0 || calibration.mapNs <= 0)
    {
        throw std::runtime_error(path + ": a workload time is 0; run `eidolon calibrate-host`");
    }
    return calibration;
}

void
WriteHostCalibration(const std::string& path, const HostCalibration& calibration)
{
    nlohmann::json json = {
        {"kind", "eidolon-host-calibration"},
        {"machine", calibration.machine},
        {"cpu", calibration.cpu},
        {"date", calibration.date},
        {"workload", "validation/gpu-truth/host-cpu-workload.h, thread CPU time, median of 7"},
        {"alu_ns", calibration.aluNs},
        {"sort_ns", calibration.sortNs},
        {"map_ns", calibration.mapNs},
    };
    for (auto [field, value] : {std::pair{"alu_instructions", calibration.aluInstructions},
                                std::pair{"sort_instructions", calibration.sortInstructions},
                                std::pair{"map_instructions", calibration.mapInstructions}})
    {
        json[field] = value > 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
    }
    std::filesystem::path file(path);
    if (file.has_parent_path())
    {
        std::filesystem::create_directories(file.parent_path());
    }
    std::ofstream out(path);
    if (!out)
    {
        throw std::runtime_error(path + ": cannot write the host calibration");
    }
    out << json.dump(2) << "\n";
}

double
HostSpeedFactor(const HostSpec& host, const HostCalibration& calibration)
{
    const CpuBenchmark& target = host.cpuBenchmark;
    double logSum = std::log(target.aluNs / calibration.aluNs) +
                    std::log(target.sortNs / calibration.sortNs) +
                    std::log(target.mapNs / calibration.mapNs);
    return std::exp(logSum / 3);
}

double
TargetInstructionsPerNs(const HostSpec& host, const HostCalibration& calibration)
{
    if (!calibration.HasInstructions())
    {
        return 0;
    }
    const CpuBenchmark& target = host.cpuBenchmark;
    return (calibration.aluInstructions + calibration.sortInstructions +
            calibration.mapInstructions) /
           (target.aluNs + target.sortNs + target.mapNs);
}

int
OpenUserInstructionCounter()
{
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.exclude_kernel = 1; // the program's work, not the system calls it makes
    attr.exclude_hv = 1;
    return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

} // namespace eidolon::spec
