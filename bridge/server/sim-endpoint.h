// The simulator's end of the bridge: one ZeroMQ ROUTER that every rank process's sockets talk
// to. It decodes each message (a wire::Envelope of this protocol version, else an error reply
// naming what is wrong), knows which process and socket a routing id is (Hello, ThreadHello), and
// hands the decoded requests to the simulator core (sim/simulation.h); the core's answers come
// back through the ReplySink and go out encoded to the socket that asked.
#pragma once

#include "simulation.h"
#include "wire.pb.h"

#include <zmq.hpp>

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace eidolon::bridge
{

class SimEndpoint : private sim::ReplySink
{
public:
    // Builds the simulation (throws std::runtime_error naming the file or field on bad input)
    // and binds `address` (ipc://... or tcp://HOST:PORT; empty: no socket, for tests and
    // benchmarks that hand messages to Deliver).
    SimEndpoint(const sim::SimOptions& options, const std::string& address, std::ostream& log);
    ~SimEndpoint() override;

    // One turn of the loop: waits up to `timeout` for messages (and for `extra` poll items, whose
    // revents are filled in), handles every message there is, and advances the simulation as far
    // as it is final.
    void Step(std::chrono::milliseconds timeout, std::vector<zmq::pollitem_t>& extra);
    // Handles one message from the socket `routingId` as if it had arrived.
    void Deliver(const std::string& routingId, const std::string& bytes);

    sim::Simulation& Simulation() { return *m_simulation; }
    const sim::Simulation& Simulation() const { return *m_simulation; }

private:
    struct PeerSocket
    {
        std::string routingId;
        int process = -1;
    };

    void ReceiveAll();
    void Dispatch(const std::string& routingId, const wire::Envelope& envelope);
    void Welcome(const std::string& routingId, const wire::Hello& hello);
    // The socket `routingId` belongs to `process` from now on.
    sim::Peer Bind(const std::string& routingId, int process);
    void Send(const std::string& routingId, const wire::Envelope& envelope);
    void SendError(const std::string& routingId, const std::string& message, bool fatal);

    // sim::ReplySink
    void SyncAnswered(sim::Peer peer, const wire::SyncReply& reply) override;
    void ExchangeAnswered(sim::Peer peer, const wire::ExchangeReply& reply) override;
    void RunFailed(const std::string& error) override;

    std::ostream& m_log;
    std::vector<PeerSocket> m_peers;                     // by sim::Peer
    std::unordered_map<std::string, sim::Peer> m_peerOf; // routing id -> peer
    std::unordered_map<std::string, int> m_processOfToken;
    std::unique_ptr<sim::Simulation> m_simulation;
    std::unique_ptr<zmq::context_t> m_context;
    std::unique_ptr<zmq::socket_t> m_router;
};

} // namespace eidolon::bridge
