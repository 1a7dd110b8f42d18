// The simulator's end of the bridge: one ZeroMQ ROUTER that every rank process's sockets talk
// to. It decodes each message (a wire::Envelope of this protocol version, else an error reply
// naming what is wrong), knows which process and socket a routing id is (Hello, ThreadHello), and
// hands the decoded requests to the simulator core (sim/simulation.h); the core's answers come
// back through the ReplySink and go out encoded to the socket that asked.
#pragma once

#include "simulation.h"
#include "wire-limits.h"
#include "wire.pb.h"

#include <zmq.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace eidolon::bridge
{

// ZeroMQ CURVE for a tcp:// endpoint: the simulator's key pair and the one client public key it
// admits (every rank of a run presents the same client pair, handed to it in the environment:
// CurveKeys::Environment). Keys are Z85 text, 40 characters.
struct CurveKeys
{
    std::string serverPublic;
    std::string serverSecret;
    std::string clientPublic;
    std::string clientSecret;

    // Fresh key pairs for one run (zmq_curve_keypair). Throws when ZeroMQ has no CURVE.
    static CurveKeys Generate();
    // EIDOLON_SIM_CURVE_SERVER_KEY, EIDOLON_SIM_CURVE_PUBLIC_KEY, EIDOLON_SIM_CURVE_SECRET_KEY:
    // what a rank needs to connect (bridge/client reads them).
    std::vector<std::pair<std::string, std::string>> Environment() const;
};

class SimEndpoint : private sim::ReplySink
{
public:
    // Builds the simulation (throws std::runtime_error naming the file or field on bad input)
    // and binds `address` (ipc://... or tcp://HOST:PORT; empty: no socket, for tests and
    // benchmarks that hand messages to Deliver). With `curve`, the socket is a CURVE server that
    // admits only peers presenting curve->clientPublic.
    SimEndpoint(const sim::SimOptions& options, const std::string& address, std::ostream& log,
                const CurveKeys* curve = nullptr);

    // The address bound (tcp://127.0.0.1:* resolved to its port); empty without a socket.
    std::string BoundAddress() const;
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
    // Answers the ZeroMQ authentication (ZAP) requests of CURVE handshakes.
    void Authenticate();
    void Dispatch(const std::string& routingId, const wire::Envelope& envelope, size_t bytes);
    // A batch of `process` that arrived ahead of its turn is held by the core: count its bytes
    // (WireLimits::kMaxEarlyBytes) until the core has taken it.
    void AccountEarly(int process, uint64_t seq, size_t bytes);
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
    RunShape m_run;
    // By process: wire bytes of each batch held ahead of its turn, and their sum.
    std::unordered_map<int, std::pair<std::map<uint64_t, size_t>, size_t>> m_early;
    std::unique_ptr<sim::Simulation> m_simulation;
    std::unique_ptr<zmq::context_t> m_context;
    std::unique_ptr<zmq::socket_t> m_router;
    std::unique_ptr<zmq::socket_t> m_zap; // with CURVE: the ZAP handler's socket
    std::string m_admittedKey;            // with CURVE: the client public key (32 bytes)
};

} // namespace eidolon::bridge
