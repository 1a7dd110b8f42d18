// How one simulated run is set up, and what the simulator is told about a rank process that
// ended outside the protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace eidolon::sim
{

struct SimOptions
{
    std::string topologyPath;        // a file, or a shipped name ("default")
    std::string model = "flow";      // "flow" or "packet"
    std::string transport = "dctcp"; // packet model only
    int expectedProcesses = 0;       // processes that will join (0: learn from their WORLD_SIZE)
    double watchdogSeconds = 120;    // nothing progresses for this long: report and end
    std::map<std::string, std::string> ncclEnvironment; // NCCL_ALGO, NCCL_PROTO, ...
    uint32_t ncclVersion = 23007;  // emulated NCCL (EIDOLON_NCCL_VERSION; code of 2.30.7)
    size_t maxFlowSlices = 200000; // flow-on-link slices kept for trace.json (the links count all)
    size_t maxSlices = 2000000;    // device slices kept for trace.json (the summary counts all)
    double traceFromNs = 0;        // trace.json keeps device and flow slices ending from here on
    double statsFromNs = 0;        // the summary's compute/comm/idle count time from here on
    std::string launch = "attach";
    // Optimistic mode: the horizon does not wait for running ranks (answers may come before they
    // are final; work that arrives from the simulated past is started at the present and counted
    // as a causality violation with its size). Without it, the same happens for a rank that has
    // sent nothing for `graceSeconds` of wall time (stuck outside CUDA, e.g. in a TCP store).
    bool optimistic = false;
    double graceSeconds = 60;
};

// What the run loop is told about a process that ended outside the protocol (the launcher saw it).
struct ProcessExit
{
    std::string name;
    int pid = 0;
    bool signaled = false;
    int code = 0;
    std::string description;
};

} // namespace eidolon::sim
