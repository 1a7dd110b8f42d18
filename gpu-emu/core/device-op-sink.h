// The seam between a rank's local timelines and whatever else wants to see its device work.
// A single-GPU program runs with the LocalSink (no simulator process). The bridge to eidolon-sim
// plugs in here for multi-rank runs: it receives every op as it is placed on a stream and, for ops
// whose end depends on other ranks (collectives, cross-rank waits), is asked for the end time.
#pragma once

#include "host-clock.h"

#include <cstdint>
#include <string>

namespace eidolon::gpu
{

enum class OpKind
{
    Kernel,
    Gemm,
    Copy,
    Memset,
    EventRecord,
    GraphNode,
};

// One device op, already placed on its stream's timeline.
struct DeviceOp
{
    OpKind kind;
    int device;
    uint64_t streamId;
    const std::string* label; // kernel name or op description; valid only during the call
    const char* provider;     // which pricing provider priced it
    Ns issued;                // host time of submission
    Ns start;
    Ns end;
    uint64_t bytes; // copies and memsets
};

class DeviceOpSink
{
public:
    virtual ~DeviceOpSink() = default;

    // Called (under the emulator lock) for every op placed on a stream.
    virtual void OnOp(const DeviceOp& op) = 0;

    // Called before a synchronizing call returns, with the host time it would return at; a remote
    // sink may block here until every op that time depends on is final, and return a later time.
    virtual Ns ResolveSync(Ns localCompletion) { return localCompletion; }
};

// Default sink: nothing outside this process; local prices are final.
class LocalSink : public DeviceOpSink
{
public:
    void OnOp(const DeviceOp&) override {}
};

} // namespace eidolon::gpu
