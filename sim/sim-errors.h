// The two kinds of error the simulator core throws besides std::runtime_error (a bad request: the
// process that sent it is told, and the run goes on). Whoever delivers requests decides what to
// answer from the kind.
#pragma once

#include <stdexcept>

namespace eidolon::sim
{

// An error in what the program did (mismatched NCCL calls, a communicator joined with two
// sizes): the run cannot go on meaningfully and ends.
struct ProgramError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

// A process the simulator cannot serve at all (the run is over, its node is not in the topology,
// its NCCL settings do not parse): it gets a fatal error; the run goes on.
struct RefusedProcess : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

} // namespace eidolon::sim
