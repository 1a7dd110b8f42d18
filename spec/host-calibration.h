// How fast the machine eidolon runs on is against a GPU server's host CPU: the same fixed CPU
// workload (validation/gpu-truth/host-cpu-workload.h) timed here by `eidolon calibrate-host`,
// once per machine, and on the server (HostSpec::cpuBenchmark). Only the cpu-time and instructions
// host-time modes use it; the default mode (calls) does not depend on this machine at all.
#pragma once

#include "host-spec.h"

#include <string>

namespace eidolon::spec
{

struct HostCalibration
{
    std::string machine; // host name of the machine that was calibrated
    std::string cpu;     // its CPU model (from /proc/cpuinfo)
    std::string date;    // when (UTC, ISO 8601)
    double aluNs = 0;    // thread CPU time of each workload kernel here (median of 7)
    double sortNs = 0;
    double mapNs = 0;
    // Retired user instructions of each kernel, where the kernel offers a PMU; 0 where not.
    double aluInstructions = 0;
    double sortInstructions = 0;
    double mapInstructions = 0;

    bool HasInstructions() const
    {
        return aluInstructions > 0 && sortInstructions > 0 && mapInstructions > 0;
    }
};

// $XDG_CACHE_HOME/eidolon/host-calibration.json, else $HOME/.cache/eidolon/host-calibration.json.
std::string DefaultHostCalibrationPath();

// Throws std::runtime_error naming the file and the field.
HostCalibration ReadHostCalibration(const std::string& path);
void WriteHostCalibration(const std::string& path, const HostCalibration& calibration);

// Virtual ns on the target host per CPU ns here: the geometric mean over the three kernels of
// (time on the target host / time here): about 1.84 for this project's dev machine, idle, against
// h100-server.
double HostSpeedFactor(const HostSpec& host, const HostCalibration& calibration);

// The target host CPU's rate of retired instructions: the instructions the workload retires (as
// counted here; the same program on the same ISA) over its time on the target. 0 when the
// calibration has no instruction counts.
double TargetInstructionsPerNs(const HostSpec& host, const HostCalibration& calibration);

// A perf_event counter of the calling thread's retired user-space instructions (close-on-exec);
// -1 with errno set where the kernel offers none (no PMU, as in most VMs, or perf_event_paranoid
// forbids it). The instructions host-time mode, the calibration and its test share this one.
int OpenUserInstructionCounter();

} // namespace eidolon::spec
