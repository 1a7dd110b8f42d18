#include "sim-endpoint.h"

#include "sim-errors.h"
#include "wire-version.h"

#include <fmt/format.h>

#include <google/protobuf/arena.h>

#include <stdexcept>

namespace eidolon::bridge
{

namespace
{
wire::Envelope
NewEnvelope()
{
    wire::Envelope envelope;
    envelope.set_protocol_version(wire::kProtocolVersion);
    return envelope;
}
} // namespace

SimEndpoint::SimEndpoint(const sim::SimOptions& options, const std::string& address,
                         std::ostream& log)
    : m_log(log)
    , m_simulation(
          std::make_unique<sim::Simulation>(options, log, static_cast<sim::ReplySink&>(*this)))
{
    if (!address.empty())
    {
        m_context = std::make_unique<zmq::context_t>(1);
        m_router = std::make_unique<zmq::socket_t>(*m_context, zmq::socket_type::router);
        m_router->set(zmq::sockopt::linger, 0);
        m_router->bind(address);
    }
}

SimEndpoint::~SimEndpoint() = default;

// ------------------------------------------------------------------ receiving

void
SimEndpoint::Step(std::chrono::milliseconds timeout, std::vector<zmq::pollitem_t>& extra)
{
    std::vector<zmq::pollitem_t> items;
    if (m_router)
    {
        items.push_back(zmq::pollitem_t{m_router->handle(), 0, ZMQ_POLLIN, 0});
    }
    items.insert(items.end(), extra.begin(), extra.end());
    zmq::poll(items.data(), items.size(), timeout);
    for (size_t i = 0; i < extra.size(); ++i)
    {
        extra[i].revents = items[i + (m_router ? 1 : 0)].revents;
    }
    if (m_router && (items[0].revents & ZMQ_POLLIN))
    {
        ReceiveAll();
    }
    m_simulation->Step();
}

void
SimEndpoint::ReceiveAll()
{
    // Drain what is there, then simulate: batches from every rank before advancing.
    for (int n = 0; n < 10000; ++n)
    {
        zmq::message_t identity;
        zmq::message_t payload;
        if (!m_router->recv(identity, zmq::recv_flags::dontwait))
        {
            break;
        }
        if (!identity.more() || !m_router->recv(payload, zmq::recv_flags::none))
        {
            continue;
        }
        while (payload.more())
        {
            zmq::message_t extraFrame;
            (void)m_router->recv(extraFrame, zmq::recv_flags::none);
        }
        Deliver(identity.to_string(), payload.to_string());
    }
}

void
SimEndpoint::Deliver(const std::string& routingId, const std::string& bytes)
{
    m_simulation->MessageArrived();
    // One arena per message: a batch's thousands of records are freed at once.
    google::protobuf::Arena arena;
    wire::Envelope& envelope = *google::protobuf::Arena::CreateMessage<wire::Envelope>(&arena);
    if (!envelope.ParseFromString(bytes))
    {
        SendError(routingId,
                  fmt::format("malformed message ({} bytes): not a bridge Envelope", bytes.size()),
                  false);
        return;
    }
    if (envelope.protocol_version() != wire::kProtocolVersion)
    {
        SendError(routingId,
                  fmt::format("bridge protocol version {} is not supported: eidolon-sim speaks "
                              "version {} (rebuild the rank libraries and the simulator together)",
                              envelope.protocol_version(), wire::kProtocolVersion),
                  true);
        return;
    }
    try
    {
        Dispatch(routingId, envelope);
    }
    catch (const sim::ProgramError& e)
    {
        m_simulation->Fail(e.what());
    }
    catch (const sim::RefusedProcess& e)
    {
        SendError(routingId, e.what(), true);
    }
    catch (const std::exception& e)
    {
        SendError(routingId, e.what(), false);
    }
}

void
SimEndpoint::Dispatch(const std::string& routingId, const wire::Envelope& envelope)
{
    if (envelope.has_hello())
    {
        Welcome(routingId, envelope.hello());
        return;
    }
    if (envelope.has_thread_hello())
    {
        auto it = m_processOfToken.find(envelope.thread_hello().process_token());
        if (it == m_processOfToken.end())
        {
            throw std::runtime_error("ThreadHello with an unknown process token");
        }
        Bind(routingId, it->second);
        return;
    }
    auto it = m_peerOf.find(routingId);
    if (it == m_peerOf.end())
    {
        throw std::runtime_error("message from a peer that has not said Hello");
    }
    sim::Peer peer = it->second;
    int process = m_peers[peer].process;
    if (envelope.has_batch())
    {
        m_simulation->Batch(process, envelope.batch());
    }
    else if (envelope.has_sync())
    {
        m_simulation->Sync(process, peer, envelope.sync());
    }
    else if (envelope.has_exchange())
    {
        m_simulation->Exchange(process, peer, envelope.exchange());
    }
    else if (envelope.has_goodbye())
    {
        m_simulation->Goodbye(process, peer, envelope.goodbye());
    }
    else
    {
        throw std::runtime_error("unexpected message: a rank may send Hello, ThreadHello, Batch, "
                                 "SyncRequest, ExchangeRequest or Goodbye");
    }
}

void
SimEndpoint::Welcome(const std::string& routingId, const wire::Hello& hello)
{
    wire::Envelope reply = NewEnvelope();
    *reply.mutable_welcome() = m_simulation->Join(hello);
    int process = reply.welcome().process();
    Bind(routingId, process);
    m_processOfToken[hello.process_token()] = process;
    Send(routingId, reply);
}

sim::Peer
SimEndpoint::Bind(const std::string& routingId, int process)
{
    auto [it, added] = m_peerOf.emplace(routingId, sim::Peer(m_peers.size()));
    if (added)
    {
        m_peers.push_back(PeerSocket{routingId, process});
    }
    m_peers[it->second].process = process;
    return it->second;
}

// ------------------------------------------------------------------ sending

void
SimEndpoint::Send(const std::string& routingId, const wire::Envelope& envelope)
{
    if (!m_router)
    {
        return;
    }
    std::string bytes;
    envelope.SerializeToString(&bytes);
    m_router->send(zmq::buffer(routingId), zmq::send_flags::sndmore);
    m_router->send(zmq::buffer(bytes), zmq::send_flags::dontwait);
}

void
SimEndpoint::SendError(const std::string& routingId, const std::string& message, bool fatal)
{
    m_log << "eidolon-sim: " << message << '\n';
    wire::Envelope envelope = NewEnvelope();
    envelope.mutable_error()->set_message(message);
    envelope.mutable_error()->set_fatal(fatal);
    Send(routingId, envelope);
}

void
SimEndpoint::SyncAnswered(sim::Peer peer, const wire::SyncReply& reply)
{
    wire::Envelope envelope = NewEnvelope();
    *envelope.mutable_sync_reply() = reply;
    Send(m_peers[peer].routingId, envelope);
}

void
SimEndpoint::ExchangeAnswered(sim::Peer peer, const wire::ExchangeReply& reply)
{
    wire::Envelope envelope = NewEnvelope();
    *envelope.mutable_exchange_reply() = reply;
    Send(m_peers[peer].routingId, envelope);
}

void
SimEndpoint::RunFailed(const std::string& error)
{
    for (const PeerSocket& peer : m_peers)
    {
        if (m_simulation->IsLive(peer.process))
        {
            wire::Envelope envelope = NewEnvelope();
            envelope.mutable_error()->set_message("the run ended: " + error);
            envelope.mutable_error()->set_fatal(true);
            Send(peer.routingId, envelope);
        }
    }
}

} // namespace eidolon::bridge
