#include "config.h"

#include "diagnostics.h"
#include "node-identity.h"
#include "spec/spec-units.h"

#include <cstdlib>
#include <sstream>

#ifndef EIDOLON_SOURCE_DIR
#define EIDOLON_SOURCE_DIR "."
#endif

namespace eidolon::gpu
{
namespace
{

std::vector<std::string>
SplitPaths(const char* text)
{
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, ':'))
    {
        if (!part.empty())
        {
            parts.push_back(part);
        }
    }
    return parts;
}

double
EnvNumber(const char* name, double fallback)
{
    const char* text = std::getenv(name);
    if (!text || !*text)
    {
        return fallback;
    }
    char* end = nullptr;
    double value = std::strtod(text, &end);
    if (*end != '\0' || value < 0)
    {
        Warn(std::string(name) + "='" + text + "' is not a non-negative number; using default");
        return fallback;
    }
    return value;
}

// The first of `names` that is set, as a non-negative integer; -1 when none is (a value that is not
// one is reported and skipped).
int
FirstEnvIndex(std::initializer_list<const char*> names)
{
    for (const char* name : names)
    {
        const char* text = std::getenv(name);
        if (!text || !*text)
        {
            continue;
        }
        char* end = nullptr;
        long value = std::strtol(text, &end, 10);
        if (*end == '\0' && value >= 0)
        {
            return static_cast<int>(value);
        }
        Warn(std::string(name) + "='" + text + "' is not a non-negative integer; ignored");
    }
    return -1;
}

} // namespace

Config
ReadConfig()
{
    Config config;
    if (const char* gpu = std::getenv("EIDOLON_GPU"); gpu && *gpu)
    {
        config.gpuName = gpu;
    }
    if (const char* dirs = std::getenv("EIDOLON_GPU_SPEC_DIR"))
    {
        config.specDirs = SplitPaths(dirs);
    }
    config.specDirs.push_back(std::string(EIDOLON_SOURCE_DIR) + "/topologies/gpus");
    config.deviceCount = static_cast<int>(EnvNumber("EIDOLON_NUM_GPUS", config.deviceCount));
    if (const char* capacity = std::getenv("EIDOLON_MEMORY_CAPACITY"); capacity && *capacity)
    {
        auto bytes = spec::TryParseBytes(capacity);
        if (bytes && *bytes > 0)
        {
            config.memoryCapacityOverride = static_cast<uint64_t>(*bytes);
        }
        else
        {
            Warn(std::string("EIDOLON_MEMORY_CAPACITY='") + capacity + "' is not a size; ignored");
        }
    }
    if (const char* host = std::getenv("EIDOLON_HOST"); host && *host)
    {
        config.hostName = host;
    }
    if (const char* dirs = std::getenv("EIDOLON_HOST_SPEC_DIR"))
    {
        config.hostSpecDirs = SplitPaths(dirs);
    }
    config.hostSpecDirs.push_back(std::string(EIDOLON_SOURCE_DIR) + "/topologies/hosts");
    if (const char* mode = std::getenv("EIDOLON_HOST_TIME"); mode && *mode)
    {
        config.hostTime = mode; // checked where the clock is set up
    }
    config.programOverheadNs = EnvNumber("EIDOLON_HOST_PROGRAM_OVERHEAD_US", 0) * 1e3;
    config.hostCpuScale = EnvNumber("EIDOLON_HOST_CPU_SCALE", config.hostCpuScale);
    config.instructionsPerNs =
        EnvNumber("EIDOLON_HOST_INSTRUCTIONS_PER_NS", config.instructionsPerNs);
    if (const char* calibration = std::getenv("EIDOLON_HOST_CALIBRATION"))
    {
        config.hostCalibrationPath = calibration;
    }
    if (const char* clocks = std::getenv("EIDOLON_VIRTUAL_CLOCKS"))
    {
        config.virtualClocks = std::string(clocks) != "0";
    }
    if (const char* libraries = std::getenv("EIDOLON_REAL_CLOCK_LIBRARIES"))
    {
        config.realClockLibraries = libraries;
    }
    config.minKernelNs = EnvNumber("EIDOLON_MIN_KERNEL_US", config.minKernelNs / 1e3) * 1e3;
    if (const char* dbs = std::getenv("EIDOLON_PROFILE_DB"))
    {
        config.profileDbPaths = SplitPaths(dbs);
    }
    if (const char* endpoint = std::getenv("EIDOLON_SIM_ENDPOINT"))
    {
        config.simEndpoint = endpoint;
    }
    config.simConnectTimeoutSeconds =
        EnvNumber("EIDOLON_SIM_CONNECT_TIMEOUT", config.simConnectTimeoutSeconds);
    if (config.simConnectTimeoutSeconds <= 0)
    {
        config.simConnectTimeoutSeconds = 60; // 0 would give up at once
    }
    if (const char* name = std::getenv("EIDOLON_RANK_NAME"))
    {
        config.rankName = name;
    }
    // torchrun's variables first, unless they are those `eidolon run --launch node` gave the node
    // process and a launcher it ran (mpirun) passed them on unchanged beside its own, or the node's
    // program started this process itself (a fork that did not exec, where no constructor ran).
    // (libeidolon-clocks.so, preloaded by `eidolon run`, has removed such inherited variables
    // already; this holds where a launcher dropped LD_PRELOAD.)
    if (ForeignNodeIdentity())
    {
        config.worldRank = FirstEnvIndex({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
        config.worldSize = FirstEnvIndex({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
        config.localRank = FirstEnvIndex({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
    }
    else
    {
        config.worldRank =
            FirstEnvIndex({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"});
        config.worldSize =
            FirstEnvIndex({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
        config.localRank =
            FirstEnvIndex({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
    }
    config.node = FirstEnvIndex({"EIDOLON_NODE"});
    if (const char* report = std::getenv("EIDOLON_REPORT"))
    {
        config.reportPath = report;
    }
    config.pollsBeforeWait =
        static_cast<int>(EnvNumber("EIDOLON_POLLS_BEFORE_WAIT", config.pollsBeforeWait));
    if (const char* cap = std::getenv("EIDOLON_HOST_DATA_CAP"); cap && *cap)
    {
        auto bytes = spec::TryParseBytes(cap);
        if (bytes)
        {
            config.hostDataCapBytes = *bytes;
        }
        else
        {
            Warn(std::string("EIDOLON_HOST_DATA_CAP='") + cap + "' is not a size; ignored");
        }
    }
    if (const char* opMax = std::getenv("EIDOLON_HOST_DATA_OP_MAX"); opMax && *opMax)
    {
        auto bytes = spec::TryParseBytes(opMax);
        if (bytes)
        {
            config.hostDataOpMaxBytes = *bytes;
        }
        else
        {
            Warn(std::string("EIDOLON_HOST_DATA_OP_MAX='") + opMax + "' is not a size; ignored");
        }
    }
    if (const char* dir = std::getenv("EIDOLON_DATA_DIR"); dir && *dir)
    {
        config.dataDir = dir;
    }
    else if (const char* run = std::getenv("EIDOLON_RUN_DIR"); run && *run)
    {
        config.dataDir = std::string(run) + "/data"; // the run's private directory (issue 17)
    }
    return config;
}

} // namespace eidolon::gpu
