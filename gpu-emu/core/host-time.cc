#include "host-time.h"

#include "diagnostics.h"
#include "host-calibration.h"

#include <optional>

namespace eidolon::gpu
{
namespace
{

std::optional<spec::HostCalibration>
Calibration(const Config& config, std::string* error)
{
    std::string path = config.hostCalibrationPath.empty() ? spec::DefaultHostCalibrationPath()
                                                          : config.hostCalibrationPath;
    try
    {
        return spec::ReadHostCalibration(path);
    }
    catch (const std::exception& e)
    {
        *error = e.what();
        return std::nullopt;
    }
}

// The instructions mode where it can run; calls (with the reason on stderr) where it cannot.
HostTimeModel
InstructionsOrCalls(const Config& config, const spec::HostSpec& host, HostTimeModel model)
{
    const std::string fallback = "; host time falls back to 'calls' (deterministic: the "
                                 "program's own work costs EIDOLON_HOST_PROGRAM_OVERHEAD_US per "
                                 "submitting call)";
    std::string counterError = HostClock::InstructionCounterError();
    if (!counterError.empty())
    {
        Warn("EIDOLON_HOST_TIME=instructions: this kernel cannot count retired instructions: " +
             counterError + fallback);
        model.mode = HostTimeMode::Calls;
        return model;
    }
    model.instructionsPerNs = config.instructionsPerNs;
    if (model.instructionsPerNs <= 0)
    {
        std::string error;
        if (auto calibration = Calibration(config, &error))
        {
            model.instructionsPerNs = spec::TargetInstructionsPerNs(host, *calibration);
            if (model.instructionsPerNs <= 0)
            {
                error = "the calibration has no instruction counts (it was taken without a PMU)";
            }
        }
        if (model.instructionsPerNs <= 0)
        {
            Warn("EIDOLON_HOST_TIME=instructions: no instruction rate for host '" + host.name +
                 "': " + error +
                 " (run `eidolon calibrate-host` here, or set "
                 "EIDOLON_HOST_INSTRUCTIONS_PER_NS)" +
                 fallback);
            model.mode = HostTimeMode::Calls;
        }
    }
    return model;
}

} // namespace

void
SetUpHostTime(const Config& config, HostClock& clock)
{
    auto host = std::make_shared<const spec::HostSpec>(
        spec::FindHostSpec(config.hostName, config.hostSpecDirs));
    HostTimeModel model;
    model.programOverheadNs = config.programOverheadNs;
    if (!ParseHostTimeMode(config.hostTime, &model.mode))
    {
        Warn("EIDOLON_HOST_TIME='" + config.hostTime +
             "' is not calls, instructions or cpu-time; using calls");
        model.mode = HostTimeMode::Calls;
    }
    if (model.mode == HostTimeMode::Instructions)
    {
        model = InstructionsOrCalls(config, *host, model);
    }
    else if (model.mode == HostTimeMode::CpuTime)
    {
        model.cpuScale = config.hostCpuScale;
        if (model.cpuScale < 0)
        {
            std::string error;
            auto calibration = Calibration(config, &error);
            model.cpuScale = calibration ? spec::HostSpeedFactor(*host, *calibration) : 1.0;
            if (!calibration)
            {
                Warn("EIDOLON_HOST_TIME=cpu-time: " + error +
                     "; counting this machine's CPU time 1:1 for host '" + host->name +
                     "' (or set EIDOLON_HOST_CPU_SCALE)");
            }
        }
    }
    clock.SetModel(model, std::move(host));
}

} // namespace eidolon::gpu
