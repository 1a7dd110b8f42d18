// `eidolon run` and `eidolon-sim`: the simulator loop, with or without launching the ranks.
#pragma once

#include "sim-options.h"

#include <string>
#include <vector>

namespace eidolon::tools
{

struct RunArguments
{
    std::string topology = "default";
    int gpus = 0;        // --gpus N: the first N GPUs of the topology
    int nodes = 0;       // --nodes N
    int gpusPerNode = 0; // --gpus-per-node M
    std::string model = "flow";
    std::string transport = "dctcp";
    std::string out = "eidolon-out";
    std::string launch = "gpu"; // gpu | node | attach
    std::string endpoint;       // attach: where ranks connect (tcp://127.0.0.1:PORT)
    int ranks = 0;              // attach: processes expected
    double watchdogSeconds = 120;
    bool optimistic = false;
    double graceSeconds = 60;
    std::string progress = "auto";                            // auto | on | off
    size_t traceSlices = sim::SimOptions().maxSlices;         // --trace-slices
    size_t traceFlowSlices = sim::SimOptions().maxFlowSlices; // --trace-flow-slices
    double traceFromMs = 0;   // --trace-from: slices that end from this virtual time on
    double statsFromMs = 0;   // --stats-from: the shares count time from this virtual time on
    bool traceEachOp = false; // --trace-each-op: sets EIDOLON_TRACE_EACH_OP=1 for the ranks
    std::string ncclVersion;  // --nccl-version: sets EIDOLON_NCCL_VERSION for the run
    bool curve = false;       // attach over tcp://: ZeroMQ CURVE with keys made for the run
    std::vector<std::string> command;
};

// Runs the simulation; returns the process exit status (0: every rank succeeded).
int RunSimulation(const RunArguments& arguments);

} // namespace eidolon::tools
