#include "sim-endpoint.h"

#include "sim-errors.h"
#include "wire-version.h"

#include <fmt/format.h>

#include <google/protobuf/arena.h>

#include <cerrno>
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

CurveKeys
CurveKeys::Generate()
{
    if (!zmq_has("curve"))
    {
        throw std::runtime_error("--curve: this ZeroMQ was built without CURVE (libsodium)");
    }
    CurveKeys keys;
    for (auto [pub, sec] : {std::pair{&keys.serverPublic, &keys.serverSecret},
                            std::pair{&keys.clientPublic, &keys.clientSecret}})
    {
        char publicKey[41] = {};
        char secretKey[41] = {};
        if (zmq_curve_keypair(publicKey, secretKey) != 0)
        {
            throw std::runtime_error("--curve: cannot generate a CURVE key pair");
        }
        *pub = publicKey;
        *sec = secretKey;
    }
    return keys;
}

std::vector<std::pair<std::string, std::string>>
CurveKeys::Environment() const
{
    return {{"EIDOLON_SIM_CURVE_SERVER_KEY", serverPublic},
            {"EIDOLON_SIM_CURVE_PUBLIC_KEY", clientPublic},
            {"EIDOLON_SIM_CURVE_SECRET_KEY", clientSecret}};
}

SimEndpoint::SimEndpoint(const sim::SimOptions& options, const std::string& address,
                         std::ostream& log, const CurveKeys* curve)
    : m_log(log)
    , m_simulation(
          std::make_unique<sim::Simulation>(options, log, static_cast<sim::ReplySink&>(*this)))
{
    m_run.gpus = m_simulation->GetTopology()->GpuCount();
    if (!address.empty())
    {
        m_context = std::make_unique<zmq::context_t>(1);
        m_router = std::make_unique<zmq::socket_t>(*m_context, zmq::socket_type::router);
        m_router->set(zmq::sockopt::linger, 0);
        // A larger message is dropped by ZeroMQ (and its connection closed) before it is read.
        m_router->set(zmq::sockopt::maxmsgsize, int64_t(WireLimits::kMaxMessageBytes));
        if (curve)
        {
            // ZeroMQ asks the handler bound at this inproc address about every handshake.
            m_zap = std::make_unique<zmq::socket_t>(*m_context, zmq::socket_type::rep);
            m_zap->set(zmq::sockopt::linger, 0);
            m_zap->bind("inproc://zeromq.zap.01");
            m_admittedKey.resize(32);
            if (!zmq_z85_decode(reinterpret_cast<uint8_t*>(m_admittedKey.data()),
                                curve->clientPublic.c_str()))
            {
                throw std::runtime_error("CURVE client key is not Z85 text of 40 characters");
            }
            m_router->set(zmq::sockopt::curve_server, true);
            m_router->set(zmq::sockopt::curve_secretkey, curve->serverSecret);
            m_router->set(zmq::sockopt::zap_domain, std::string("eidolon"));
        }
        m_router->bind(address);
    }
}

SimEndpoint::~SimEndpoint() = default;

std::string
SimEndpoint::BoundAddress() const
{
    return m_router ? m_router->get(zmq::sockopt::last_endpoint) : std::string();
}

// ------------------------------------------------------------------ receiving

void
SimEndpoint::Step(std::chrono::milliseconds timeout, std::vector<zmq::pollitem_t>& extra)
{
    std::vector<zmq::pollitem_t> items;
    if (m_router)
    {
        items.push_back(zmq::pollitem_t{m_router->handle(), 0, ZMQ_POLLIN, 0});
    }
    if (m_zap)
    {
        items.push_back(zmq::pollitem_t{m_zap->handle(), 0, ZMQ_POLLIN, 0});
    }
    const size_t own = items.size();
    items.insert(items.end(), extra.begin(), extra.end());
    try
    {
        zmq::poll(items.data(), items.size(), timeout);
    }
    catch (const zmq::error_t& e)
    {
        if (e.num() != EINTR)
        {
            throw;
        }
        // A signal (SIGINT, SIGTERM: the run loop's handler noted it): nothing is ready.
        for (auto& item : items)
        {
            item.revents = 0;
        }
    }
    for (size_t i = 0; i < extra.size(); ++i)
    {
        extra[i].revents = items[i + own].revents;
    }
    if (m_zap && (items[1].revents & ZMQ_POLLIN))
    {
        Authenticate();
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
        // A bridge message is one frame. ZeroMQ hands over a multi-part message only whole, so
        // its further frames are all there: drain them (the more flag of the frame just read,
        // not of the first) and refuse the message, or the next message's frames would be
        // taken for this one's.
        size_t frames = 1;
        for (bool more = payload.more(); more; ++frames)
        {
            zmq::message_t extraFrame;
            if (!m_router->recv(extraFrame, zmq::recv_flags::dontwait))
            {
                break;
            }
            more = extraFrame.more();
        }
        if (frames > 1)
        {
            SendError(
                identity.to_string(),
                fmt::format("malformed message ({} frames): a bridge message is one frame", frames),
                false);
            continue;
        }
        Deliver(identity.to_string(), payload.to_string());
    }
}

void
SimEndpoint::Authenticate()
{
    // A ZAP request (RFC 27): version, request id, domain, address, identity, mechanism, then
    // the mechanism's credentials (CURVE: the client's 32-byte public key).
    for (;;)
    {
        std::vector<zmq::message_t> frames;
        for (bool more = true; more;)
        {
            zmq::message_t frame;
            if (!m_zap->recv(frame, zmq::recv_flags::dontwait))
            {
                return;
            }
            more = frame.more();
            frames.push_back(std::move(frame));
        }
        bool admitted = frames.size() == 7 && frames[5].to_string() == "CURVE" &&
                        frames[6].to_string() == m_admittedKey;
        if (!admitted && frames.size() >= 4)
        {
            m_log << "eidolon-sim: refused a connection from " << frames[3].to_string()
                  << ": it did not present this run's CURVE key\n";
        }
        std::string requestId = frames.size() >= 2 ? frames[1].to_string() : std::string();
        m_zap->send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
        m_zap->send(zmq::buffer(requestId), zmq::send_flags::sndmore);
        m_zap->send(admitted ? zmq::str_buffer("200") : zmq::str_buffer("400"),
                    zmq::send_flags::sndmore);
        m_zap->send(admitted ? zmq::str_buffer("OK") : zmq::str_buffer("unknown key"),
                    zmq::send_flags::sndmore);
        m_zap->send(zmq::str_buffer(""), zmq::send_flags::sndmore); // user id
        m_zap->send(zmq::str_buffer(""), zmq::send_flags::none);    // metadata
    }
}

void
SimEndpoint::Deliver(const std::string& routingId, const std::string& bytes)
{
    // One arena per message: a batch's thousands of records are freed at once.
    google::protobuf::Arena arena;
    wire::Envelope& envelope = *google::protobuf::Arena::CreateMessage<wire::Envelope>(&arena);
    const bool parsed = envelope.ParseFromString(bytes);
    // Progress, for the watchdog, is work: a query (a watchdog thread polling an event) or a
    // batch that only carries a clock is not. Counting them kept a run alive forever in which
    // one rank looped in host code and the others waited for it, polling.
    const bool work = parsed && !(envelope.has_sync() && envelope.sync().query()) &&
                      !(envelope.has_batch() && envelope.batch().records_size() == 0);
    if (work)
    {
        m_simulation->MessageArrived();
    }
    if (!parsed)
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
        Dispatch(routingId, envelope, bytes.size());
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
SimEndpoint::Dispatch(const std::string& routingId, const wire::Envelope& envelope, size_t bytes)
{
    if (envelope.has_hello())
    {
        try
        {
            CheckHello(envelope.hello(), m_run);
        }
        catch (const WireError& e)
        {
            throw sim::RefusedProcess(e.what());
        }
        Welcome(routingId, envelope.hello());
        return;
    }
    if (envelope.has_thread_hello())
    {
        if (envelope.thread_hello().process_token().size() > WireLimits::kMaxNameBytes)
        {
            throw WireError("ThreadHello.process_token: longer than any process token");
        }
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
    auto early = m_early.find(process);
    CheckRequest(envelope, m_simulation->Process(process), m_run,
                 early == m_early.end() ? 0 : early->second.second, bytes);
    if (envelope.has_batch())
    {
        m_simulation->Batch(process, envelope.batch());
        AccountEarly(process, envelope.batch().seq(), bytes);
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
    if (!reply.welcome().helper_of().empty())
    {
        Send(routingId, reply); // a rank's helper: it sends nothing more
        return;
    }
    int process = reply.welcome().process();
    Bind(routingId, process);
    m_processOfToken[hello.process_token()] = process;
    Send(routingId, reply);
}

void
SimEndpoint::AccountEarly(int process, uint64_t seq, size_t bytes)
{
    uint64_t next = m_simulation->Process(process).nextBatch;
    auto found = m_early.find(process);
    if (seq < next && found == m_early.end())
    {
        return; // taken at once, as nearly every batch is
    }
    auto& [held, total] = m_early[process];
    if (seq >= next)
    {
        held.emplace(seq, bytes);
        total += bytes;
    }
    while (!held.empty() && held.begin()->first < next)
    {
        total -= held.begin()->second;
        held.erase(held.begin());
    }
    if (held.empty())
    {
        m_early.erase(process);
    }
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
    // Once the run has failed (and said why), what the ranks still had in flight is refused
    // without a line each: a 128-rank communicator on 16 GPUs left one per rank after the reason.
    if (fatal || !m_simulation->Failed())
    {
        m_log << "eidolon-sim: " << message << '\n';
    }
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
