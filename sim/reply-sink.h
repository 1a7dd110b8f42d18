// Where the simulator core's answers go. The core decides when a rank's wait is over and what it
// is told; the endpoint that talks to the processes (bridge/server) implements this and encodes
// the answers for the wire. A Peer is the endpoint's own name for where an answer goes (one
// socket of one process); the core only hands it back.
#pragma once

#include "wire.pb.h"

#include <cstdint>
#include <string>

namespace eidolon::sim
{

using Peer = uint64_t;

class ReplySink
{
public:
    virtual ~ReplySink() = default;
    // The ends of the records a SyncRequest waited for (request 0: a Goodbye is acknowledged).
    virtual void SyncAnswered(Peer peer, const wire::SyncReply& reply) = 0;
    // Every participant of an exchange is in: its entries and the time of the barrier.
    virtual void ExchangeAnswered(Peer peer, const wire::ExchangeReply& reply) = 0;
    // The run failed with `error`: every process still running must be told, fatally.
    virtual void RunFailed(const std::string& error) = 0;
};

} // namespace eidolon::sim
