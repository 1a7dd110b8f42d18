// Settings of one rank process, read once from the environment (see gpu-emu/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eidolon::gpu
{

struct Config
{
    std::string gpuName = "H100-SXM5-80GB"; // EIDOLON_GPU
    std::vector<std::string> specDirs;      // EIDOLON_GPU_SPEC_DIR (':'-separated), then the repo
    int deviceCount = 8;                    // EIDOLON_NUM_GPUS
    uint64_t memoryCapacityOverride = 0;    // EIDOLON_MEMORY_CAPACITY ("80GiB"), 0 = from spec
    // Host time (README "Host time"): the GPU server's host description, and how the program's
    // own work between calls is counted.
    std::string hostName = "h100-server";  // EIDOLON_HOST
    std::vector<std::string> hostSpecDirs; // EIDOLON_HOST_SPEC_DIR (':'-separated), then the repo
    std::string hostTime = "calls";        // EIDOLON_HOST_TIME: calls | instructions | cpu-time
    double programOverheadNs = 0;          // EIDOLON_HOST_PROGRAM_OVERHEAD_US (calls mode)
    double hostCpuScale = -1;              // EIDOLON_HOST_CPU_SCALE; -1: from the calibration
    double instructionsPerNs = -1;         // EIDOLON_HOST_INSTRUCTIONS_PER_NS; -1: calibration
    std::string hostCalibrationPath;       // EIDOLON_HOST_CALIBRATION ("" = the default file)
    bool virtualClocks = true;             // EIDOLON_VIRTUAL_CLOCKS=0 shows real clocks
    // EIDOLON_REAL_CLOCK_LIBRARIES: ':'-separated file-name prefixes of the libraries whose clock
    // reads stay real on driving threads too (clocks.cc says why).
    std::string realClockLibraries =
        "libpsm:libinfinipath:libfabric:libucs:libucp:libuct:libibverbs:librdmacm:libopen-pal:"
        "libopen-rte:libpmix:libevent:mca_:pmix_mca_";
    double minKernelNs = 1000.0;             // EIDOLON_MIN_KERNEL_US: floor of a priced kernel
    std::vector<std::string> profileDbPaths; // EIDOLON_PROFILE_DB (':'-separated JSON files)
    std::string reportPath;                  // EIDOLON_REPORT: JSON pricing report at exit
    int pollsBeforeWait = 8;                 // EIDOLON_POLLS_BEFORE_WAIT
    std::string simEndpoint;              // EIDOLON_SIM_ENDPOINT: eidolon-sim to join ("" = none)
    double simConnectTimeoutSeconds = 60; // EIDOLON_SIM_CONNECT_TIMEOUT
    std::string rankName;                 // EIDOLON_RANK_NAME ("" = rank<worldRank>)
    // Where the launcher put the process: the first of torchrun's / eidolon run's, Open MPI's,
    // PMI's and Slurm's variables that is set; -1 when none is.
    int worldRank = -1; // RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
    int worldSize = -1; // WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
    int localRank = -1; // LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID
    int node = -1;      // EIDOLON_NODE
    // Host-visible data (README "Device memory and data").
    uint64_t hostDataCapBytes = 1ull << 30; // EIDOLON_HOST_DATA_CAP: device bytes kept per process
    // EIDOLON_HOST_DATA_OP_MAX: the largest send buffer an NCCL operation moves real bytes for.
    // What frameworks need on the host is metadata (shapes, counts, pickled objects: kilobytes);
    // a training program's host-filled weights would otherwise cross /dev/shm on every
    // all-gather, costing wall seconds per call (and pushing ranks past the grace period).
    uint64_t hostDataOpMaxBytes = 4ull << 20;
    // EIDOLON_DATA_DIR, else $EIDOLON_RUN_DIR/data: where ranks exchange NCCL data ("" = none).
    std::string dataDir;
};

// Reads the environment; bad values are reported on stderr and replaced by the default.
Config ReadConfig();

} // namespace eidolon::gpu
