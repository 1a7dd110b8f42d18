#include "bridge-client.h"

#include "record-folds.h"

#include "wire-ticks.h"
#include "wire-version.h"
#include "wire.pb.h"

#include <zmq.hpp>

#include <signal.h>
#include <unistd.h>

extern char** environ;

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace eidolon::bridge
{
namespace
{

using gpu::Ns;
using Clock = std::chrono::steady_clock;

// The background thread sends what a rank has recorded (or only its clock, when that moved) once
// the process has spent kFlushCpu of CPU time since the last send, so that a rank that computes
// for long on the CPU still lets the simulator's horizon move. CPU time, not wall: R rank
// processes on C cores each get about C / R of a core, so a wall-clock interval would cut the
// same work into R / C times more timer batches (and wake-ups) as runs grow, while the simulator,
// paced by the same slowed ranks, hears of the work no later in their terms. (Measured at 256
// ranks on 2 loaded cores: 33.1 s of wall per training step against 31.5 s with the 2 ms wall
// age, within the noise, and the same simulator CPU: there most batches go out with their NCCL
// calls, not on the timer.) Which batch a record rides in never changes a virtual time. A process
// that holds records while it waits outside eidolon's calls (a TCP store, a sleep) uses no CPU:
// kFlushWallLimit sends them anyway.
constexpr auto kFlushCpu = std::chrono::milliseconds(2);
constexpr auto kFlushWallLimit = std::chrono::milliseconds(50);
// The thread wakes every kFlushCpu of wall time at first, backing off to kWakeMax while there is
// nothing due; a batch opening while it is backed off wakes it at once.
constexpr auto kWakeMax = std::chrono::milliseconds(32);
constexpr int kMaxBatchRecords = 4096;
// ZeroMQ heartbeats on every connection to the simulator (ZMTP PING/PONG, answered by the
// simulator's I/O thread however busy its main thread is): a simulator that stops answering them
// for this long (its host died, the network parted, the process was stopped) has left the run.
// EIDOLON_SIM_HEARTBEAT_S overrides it; 0 turns heartbeats off.
constexpr double kDefaultHeartbeatSeconds = 30;

// The process's parent, grandparent, ... from /proc/<pid>/stat (its fourth field, after the
// command name in parentheses, which may itself hold spaces and parentheses), nearest first,
// up to init or `most` of them.
std::vector<int>
Ancestors(int most)
{
    std::vector<int> chain;
    int pid = getpid();
    while (int(chain.size()) < most)
    {
        std::FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
        if (!file)
        {
            break;
        }
        char text[1024] = {};
        size_t length = std::fread(text, 1, sizeof text - 1, file);
        std::fclose(file);
        const char* close = std::strrchr(text, ')');
        int parent = 0;
        char state = 0;
        if (!close || close >= text + length ||
            std::sscanf(close + 1, " %c %d", &state, &parent) != 2 || parent <= 1)
        {
            break;
        }
        chain.push_back(parent);
        pid = parent;
    }
    return chain;
}

// The program's own signal handlers (a profiler's SIGALRM timer, faulthandler's SIGUSR1) interrupt
// ZeroMQ's waits with EINTR. A CUDA or NCCL call never fails for that, so each wait, receive and
// send on the simulator's sockets is taken up again; a wait with a timeout goes on for what is left
// of it.
template<typename Call>
auto
RetryOnEintr(Call call)
{
    for (;;)
    {
        try
        {
            return call();
        }
        catch (const zmq::error_t& e)
        {
            if (e.num() != EINTR)
            {
                throw;
            }
        }
    }
}

int
PollRetrying(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout)
{
    const auto deadline = Clock::now() + timeout;
    return RetryOnEintr(
        [&]
        {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            return zmq::poll(items, count, std::max(std::chrono::milliseconds(0), left));
        });
}

zmq::recv_result_t
ReceiveRetrying(zmq::socket_t& socket, zmq::message_t& message, zmq::recv_flags flags)
{
    return RetryOnEintr([&] { return socket.recv(message, flags); });
}

void
SendRetrying(zmq::socket_t& socket, const std::string& bytes)
{
    RetryOnEintr([&] { return socket.send(zmq::buffer(bytes), zmq::send_flags::none); });
}

// A rank thread's connection to the simulator, with a monitor of its state: a rank attached over
// tcp:// has no simulator pid to watch, so losing the connection it had is how it learns that
// the simulator has gone (a killed simulator's kernel closes the connection at once; a frozen or
// unreachable one misses heartbeats).
class SimSocket : public zmq::socket_t
{
public:
    SimSocket(zmq::context_t& context, const std::string& monitorAddress)
        : zmq::socket_t(context, zmq::socket_type::dealer)
        , m_monitor(context, zmq::socket_type::pair)
    {
        if (zmq_socket_monitor(handle(), monitorAddress.c_str(),
                               ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) == 0)
        {
            m_monitor.connect(monitorAddress);
            m_monitored = true;
        }
    }

    zmq::socket_t& Monitor() { return m_monitor; }
    bool Monitored() const { return m_monitored; }

    // Reads the monitor's pending events; true once a connection that was up has gone down.
    bool ConnectionLost()
    {
        zmq::message_t event;
        while (m_monitored && ReceiveRetrying(m_monitor, event, zmq::recv_flags::dontwait))
        {
            uint16_t id = 0;
            if (event.size() >= sizeof id)
            {
                std::memcpy(&id, event.data(), sizeof id);
            }
            zmq::message_t address; // the second frame: the endpoint
            while (m_monitor.get(zmq::sockopt::rcvmore) &&
                   ReceiveRetrying(m_monitor, address, zmq::recv_flags::dontwait))
            {
            }
            m_connected = m_connected || id == ZMQ_EVENT_CONNECTED;
            m_lost = m_lost || (id == ZMQ_EVENT_DISCONNECTED && m_connected);
        }
        return m_lost;
    }

private:
    zmq::socket_t m_monitor;
    bool m_monitored = false;
    bool m_connected = false;
    bool m_lost = false;
};

wire::CommOpKind
WireCommKind(gpu::CommOpKind kind)
{
    switch (kind)
    {
    case gpu::CommOpKind::AllReduce:
        return wire::COMM_ALL_REDUCE;
    case gpu::CommOpKind::AllGather:
        return wire::COMM_ALL_GATHER;
    case gpu::CommOpKind::ReduceScatter:
        return wire::COMM_REDUCE_SCATTER;
    case gpu::CommOpKind::Broadcast:
        return wire::COMM_BROADCAST;
    case gpu::CommOpKind::Reduce:
        return wire::COMM_REDUCE;
    case gpu::CommOpKind::Send:
        return wire::COMM_SEND;
    case gpu::CommOpKind::Recv:
        return wire::COMM_RECV;
    }
    return wire::COMM_ALL_REDUCE;
}

class BridgeSink : public gpu::DeviceOpSink
{
public:
    explicit BridgeSink(const gpu::RankHost& host)
        : m_host(host)
        , m_endpoint(host.Identity().simEndpoint)
        , m_context(1)
    {
        std::random_device random;
        m_token =
            std::to_string(getpid()) + "-" + std::to_string(random()) + std::to_string(random());
        if (const char* pid = std::getenv("EIDOLON_SIM_PID"))
        {
            m_simulatorPid = std::atoi(pid);
        }
        if (m_simulatorPid > 0)
        {
            // The simulator's pid says whether it runs: no heartbeats unless asked for. They
            // are not answered while the simulator's inbound queue from this rank is full (its
            // I/O thread stops reading the connection), so a simulator busy for longer than the
            // timeout dropped the connections of hundreds of ranks (1,536 train-gpt ranks: the
            // ranks reconnected as unknown peers, and libzmq aborted one of them).
            m_heartbeatMs = 0;
        }
        if (const char* seconds = std::getenv("EIDOLON_SIM_HEARTBEAT_S"))
        {
            char* end = nullptr;
            double value = std::strtod(seconds, &end);
            if (end != seconds && *end == '\0' && value >= 0 && value <= 86400)
            {
                m_heartbeatMs = int(value * 1000);
            }
            else
            {
                host.Warn(std::string("EIDOLON_SIM_HEARTBEAT_S='") + seconds +
                          "' is not a number of seconds from 0 to 86400: heartbeats every " +
                          std::to_string(int(kDefaultHeartbeatSeconds)) + " s");
            }
        }
        // EIDOLON_TRACE_EACH_OP=1 (`eidolon run --trace-each-op`): every op its own record, so that
        // the trace shows each kernel; folding is exact, so no virtual time changes.
        if (const char* each = std::getenv("EIDOLON_TRACE_EACH_OP"))
        {
            m_eachOp = std::strcmp(each, "1") == 0;
        }
        // A simulator bound to tcp:// with --curve: its public key and this run's client pair.
        for (auto [name, key] : {std::pair{"EIDOLON_SIM_CURVE_SERVER_KEY", &m_curveServer},
                                 std::pair{"EIDOLON_SIM_CURVE_PUBLIC_KEY", &m_curvePublic},
                                 std::pair{"EIDOLON_SIM_CURVE_SECRET_KEY", &m_curveSecret}})
        {
            const char* value = std::getenv(name);
            *key = value ? value : "";
        }
    }

    bool Join(std::string* error)
    {
        const gpu::RankIdentity& config = m_host.Identity();
        std::lock_guard<std::mutex> state(m_state);
        zmq::socket_t& socket = NewSocket();
        wire::Envelope hello;
        hello.set_protocol_version(wire::kProtocolVersion);
        wire::Hello* h = hello.mutable_hello();
        int rank = config.worldRank;
        h->set_world_rank(rank);
        h->set_world_size(config.worldSize);
        h->set_local_rank(config.localRank);
        h->set_node(config.node);
        h->set_pid(getpid());
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        h->set_hostname(host);
        h->set_num_devices(config.numDevices);
        h->set_gpu(config.gpu);
        h->set_process_token(m_token);
        for (int ancestor : Ancestors(32))
        {
            h->add_ancestors(ancestor);
        }
        for (char** entry = environ; entry && *entry; ++entry)
        {
            std::string variable = *entry;
            size_t equals = variable.find('=');
            if (variable.rfind("NCCL_", 0) == 0 && equals != std::string::npos)
            {
                (*h->mutable_nccl_env())[variable.substr(0, equals)] = variable.substr(equals + 1);
            }
        }
        h->set_name(!config.name.empty() ? config.name
                    : rank >= 0          ? "rank" + std::to_string(rank)
                                         : "pid" + std::to_string(getpid()));
        Send(socket, hello);

        double timeoutSeconds = config.connectTimeoutSeconds;
        zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
        if (PollRetrying(&item, 1, std::chrono::milliseconds(int64_t(timeoutSeconds * 1000))) <= 0)
        {
            *error = "no answer within " + std::to_string(int(timeoutSeconds)) + " s";
            return false;
        }
        wire::Envelope reply;
        if (!Receive(socket, &reply, error))
        {
            return false;
        }
        if (reply.has_error())
        {
            *error = reply.error().message();
            return false;
        }
        if (!reply.has_welcome())
        {
            *error = "the simulator answered Hello with something other than Welcome";
            return false;
        }
        m_welcome = reply.welcome();
        if (!m_welcome.helper_of().empty())
        {
            return false; // not a rank: the caller runs without the simulator
        }
        m_flusher = std::thread([this] { FlushLoop(); });
        m_flusher.detach(); // lives as long as the process; exit does not wait for it
        return true;
    }

    bool Remote() const override { return true; }

    // The joined process this one is a helper of, when the simulator said so in its Welcome.
    const std::string& HelperOf() const { return m_welcome.helper_of(); }

    bool RunOver() const override { return m_simulatorGone; }

    std::string Hostname() const override { return m_welcome.hostname(); }

    bool ClockEpochs(int64_t* monotonic, int64_t* realtime, int64_t* boottime) const override
    {
        *monotonic = m_welcome.epoch_monotonic_ns();
        *realtime = m_welcome.epoch_realtime_ns();
        *boottime = m_welcome.epoch_boottime_ns();
        return *monotonic > 0;
    }

    void DrivingThreadsChanged() override
    {
        {
            std::lock_guard<std::mutex> wake(m_wakeLock);
            m_drivingChanged = true;
        }
        m_wake.notify_one();
    }

    void OnOp(const gpu::DeviceOp& op) override
    {
        std::lock_guard<std::mutex> state(m_state);
        auto it = m_openSpan.find(op.streamId);
        if (it != m_openSpan.end() && !m_eachOp)
        {
            wire::Span* span = m_batch.mutable_records(int(it->second))->mutable_span();
            if (ExtendsSpan(*span, op))
            {
                AddToSpan(*span, op);
                return;
            }
        }
        Touch();
        m_openSpan[op.streamId] = size_t(m_batch.records_size());
        StartSpan(*m_batch.add_records()->mutable_span(), op);
        MaybeFlushFull();
    }

    uint64_t OnPendingOp(const gpu::PendingOp& op) override
    {
        std::lock_guard<std::mutex> state(m_state);
        m_openSpan.erase(op.streamId);
        auto it = m_openChain.find(op.streamId);
        if (it != m_openChain.end() && !m_eachOp)
        {
            wire::Chain* chain = m_batch.mutable_records(int(it->second))->mutable_chain();
            if (ExtendsChain(*chain, op))
            {
                AddToChain(*chain, op);
                return chain->id();
            }
        }
        Touch();
        uint64_t id = ++m_nextId;
        m_openChain[op.streamId] = size_t(m_batch.records_size());
        StartChain(*m_batch.add_records()->mutable_chain(), id, op);
        MaybeFlushFull();
        return id;
    }

    void Seal(uint64_t streamId) override
    {
        std::lock_guard<std::mutex> state(m_state);
        m_openChain.erase(streamId);
    }

    uint64_t OnCommunication(const gpu::CommunicationRecord& record) override
    {
        std::lock_guard<std::mutex> state(m_state);
        m_openSpan.erase(record.streamId);
        m_openChain.erase(record.streamId);
        Touch();
        uint64_t id = ++m_nextId;
        wire::Communication* c = m_batch.add_records()->mutable_communication();
        c->set_id(id);
        c->set_device(record.device);
        c->set_stream(record.streamId);
        for (uint64_t dep : record.deps)
        {
            c->add_deps(dep);
        }
        c->set_ready_ns(record.ready);
        c->set_issued_ns(record.issued);
        c->set_comm(record.member->commId);
        c->set_seq(record.seq);
        c->set_comm_rank(record.member->rank);
        c->set_comm_size(record.member->nranks);
        for (const gpu::CommOp& op : *record.ops)
        {
            wire::CommOp* w = c->add_ops();
            w->set_kind(WireCommKind(op.kind));
            w->set_count(op.count);
            w->set_dtype(op.dtype);
            w->set_type_size(op.typeSize);
            w->set_redop(op.redop);
            w->set_root(op.root);
            w->set_peer(op.peer);
        }
        // Other ranks may be waiting for this one: send it now.
        Flush(ThreadSocket(), m_host.Now());
        return id;
    }

    bool OnComm(const gpu::CommMember& member, bool leave, std::string*) override
    {
        std::lock_guard<std::mutex> state(m_state);
        Touch();
        wire::CommJoin* join = m_batch.add_records()->mutable_comm_join();
        join->set_comm(member.commId);
        join->set_nranks(member.nranks);
        join->set_rank(member.rank);
        join->set_device(member.device);
        join->set_leave(leave);
        join->set_min_ctas(member.minCtas);
        join->set_max_ctas(member.maxCtas);
        Flush(ThreadSocket(), m_host.Now());
        return true;
    }

    std::vector<Ns> Resolve(const std::vector<uint64_t>& ops, Ns now, int drivingThreads,
                            bool query, const std::string& what, std::mutex& lock) override
    {
        wire::Envelope request;
        request.set_protocol_version(wire::kProtocolVersion);
        wire::SyncRequest* sync = request.mutable_sync();
        for (uint64_t op : ops)
        {
            sync->add_ops(op);
        }
        sync->set_clock_ns(now);
        sync->set_driving_threads(drivingThreads);
        sync->set_query(query);
        sync->set_all_parked(m_host.AllDrivingThreadsParked());
        sync->set_what(what);
        auto [socketPtr, id] = FlushAndRequest(&request, sync);
        SimSocket& socket = *socketPtr;

        std::vector<Ns> ends(ops.size(), now);
        // Neither lock is held while waiting: the caller's (emulator) lock so that other threads
        // of the process may go on issuing work, ours so that they and the flusher can send it.
        lock.unlock();
        wire::Envelope reply;
        std::string error;
        while (true)
        {
            if (!AwaitSimulator(socket, &error))
            {
                m_host.Warn(error + " (" + what + ")");
                break;
            }
            if (!Receive(socket, &reply, &error))
            {
                m_host.Warn("bridge: " + error);
                continue;
            }
            if (reply.has_sync_reply() && reply.sync_reply().request() == id)
            {
                for (const wire::OpEnd& end : reply.sync_reply().ends())
                {
                    for (size_t i = 0; i < ops.size(); ++i)
                    {
                        if (ops[i] == end.op())
                        {
                            ends[i] = end.end_ns();
                        }
                    }
                }
                break;
            }
            if (reply.has_error())
            {
                m_host.Warn("eidolon-sim: " + reply.error().message());
                if (reply.error().fatal())
                {
                    m_simulatorGone = true; // the run is over: later CUDA calls fail
                    break;                  // (and a launcher stops this process)
                }
            }
        }
        lock.lock();
        return ends;
    }

    bool Exchange(const std::string& key, int participants, const Entries& mine, Entries* all,
                  Ns now, int drivingThreads, std::mutex& lock, Ns* time,
                  std::string* error) override
    {
        wire::Envelope request;
        request.set_protocol_version(wire::kProtocolVersion);
        wire::ExchangeRequest* x = request.mutable_exchange();
        x->set_key(key);
        x->set_participants(participants);
        for (const auto& [index, payload] : mine)
        {
            wire::ExchangeEntry* entry = x->add_entries();
            entry->set_index(index);
            entry->set_payload(payload);
        }
        x->set_clock_ns(now);
        x->set_driving_threads(drivingThreads);
        x->set_what("exchange " + key);
        auto [socketPtr, id] = FlushAndRequest(&request, x);
        SimSocket& socket = *socketPtr;
        lock.unlock(); // as in Resolve: no lock held while waiting
        bool ok = false;
        wire::Envelope reply;
        std::string problem;
        while (true)
        {
            if (!AwaitSimulator(socket, error))
            {
                break;
            }
            if (!Receive(socket, &reply, &problem))
            {
                m_host.Warn("bridge: " + problem);
                continue;
            }
            if (reply.has_exchange_reply() && reply.exchange_reply().request() == id)
            {
                all->clear();
                for (const wire::ExchangeEntry& entry : reply.exchange_reply().entries())
                {
                    all->emplace_back(entry.index(), entry.payload());
                }
                *time = reply.exchange_reply().time_ns();
                ok = true;
                break;
            }
            if (reply.has_error())
            {
                *error = "eidolon-sim: " + reply.error().message();
                if (reply.error().fatal())
                {
                    break;
                }
                m_host.Warn(*error);
            }
        }
        lock.lock();
        return ok;
    }

    void OnPeakMemory(const gpu::DeviceUsage& usage) override
    {
        std::lock_guard<std::mutex> state(m_state);
        wire::DeviceUsage* entry = nullptr;
        for (wire::DeviceUsage& pending : *m_batch.mutable_usage())
        {
            entry = pending.device() == usage.device ? &pending : entry;
        }
        if (!entry)
        {
            entry = m_batch.add_usage();
            entry->set_device(usage.device);
        }
        entry->set_peak_bytes(usage.peakBytes);
        entry->set_capacity_bytes(usage.capacityBytes);
    }

    void OnExit(Ns now, const std::vector<gpu::DeviceUsage>& usage,
                const std::vector<gpu::ProviderUsage>& pricing, int exitStatus) override
    {
        std::unique_lock<std::mutex> state(m_state);
        zmq::socket_t& socket = ThreadSocket();
        Flush(socket, m_host.Now());
        wire::Envelope bye;
        bye.set_protocol_version(wire::kProtocolVersion);
        wire::Goodbye* g = bye.mutable_goodbye();
        g->set_after_batch(m_sentSeq);
        g->set_clock_ns(now);
        g->set_exit_status(exitStatus);
        for (const auto& u : usage)
        {
            wire::DeviceUsage* w = g->add_usage();
            w->set_device(u.device);
            w->set_peak_bytes(u.peakBytes);
            w->set_capacity_bytes(u.capacityBytes);
            w->set_host_data_peak_bytes(u.hostDataPeakBytes);
            w->set_host_data_dropped_bytes(u.hostDataDroppedBytes);
        }
        for (const auto& p : pricing)
        {
            wire::Pricing* w = g->add_pricing();
            w->set_provider(p.provider);
            w->set_ops(p.ops);
            w->set_ns(p.ns);
        }
        Send(socket, bye);
        m_exiting = true; // nothing may follow the Goodbye: the flusher stops
        state.unlock();
        // Wait (briefly) for the acknowledgement: ZeroMQ sends from its own thread, and exit would
        // drop a message still queued.
        zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
        PollRetrying(&item, 1, std::chrono::milliseconds(5000));
    }

private:
    SimSocket& NewSocket()
    {
        std::string monitor = "inproc://eidolon-monitor-" +
                              std::to_string(reinterpret_cast<uintptr_t>(this)) + "-" +
                              std::to_string(m_sockets.size());
        auto socket = std::make_unique<SimSocket>(m_context, monitor);
        socket->set(zmq::sockopt::linger, 2000);
        if (m_heartbeatMs > 0)
        {
            socket->set(zmq::sockopt::heartbeat_ivl, std::max(100, m_heartbeatMs / 6));
            socket->set(zmq::sockopt::heartbeat_timeout, m_heartbeatMs);
        }
        if (!m_curveServer.empty())
        {
            socket->set(zmq::sockopt::curve_serverkey, m_curveServer);
            socket->set(zmq::sockopt::curve_publickey, m_curvePublic);
            socket->set(zmq::sockopt::curve_secretkey, m_curveSecret);
        }
        socket->connect(m_endpoint);
        SimSocket& ref = *socket;
        m_sockets[std::this_thread::get_id()] = std::move(socket);
        return ref;
    }

    // The calling thread's socket (its first use says ThreadHello).
    SimSocket& ThreadSocket()
    {
        auto it = m_sockets.find(std::this_thread::get_id());
        if (it != m_sockets.end())
        {
            return *it->second;
        }
        SimSocket& socket = NewSocket();
        wire::Envelope hello;
        hello.set_protocol_version(wire::kProtocolVersion);
        hello.mutable_thread_hello()->set_process_token(m_token);
        Send(socket, hello);
        return socket;
    }

    void Send(zmq::socket_t& socket, const wire::Envelope& envelope)
    {
        std::string bytes;
        envelope.SerializeToString(&bytes);
        SendRetrying(socket, bytes);
    }

    // ", no heartbeat answer within N s" when heartbeats are on.
    std::string HeartbeatText() const
    {
        if (m_heartbeatMs <= 0)
        {
            return "";
        }
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", m_heartbeatMs / 1000.0);
        return std::string(", no heartbeat answer within ") + seconds + " s";
    }

    // Waits until `socket` has a message. While none comes, watches that the simulator is still
    // there: its pid (EIDOLON_SIM_PID, which `eidolon run` sets) checked every second, or where
    // no pid is known (ranks attached over tcp://) the connection this socket had, kept alive by
    // heartbeats. False with `error` once it has gone, and at once for every later wait, so that
    // no rank waits for good for answers that cannot come.
    bool AwaitSimulator(SimSocket& socket, std::string* error)
    {
        bool watchConnection = m_simulatorPid <= 0 && socket.Monitored();
        while (!m_simulatorGone)
        {
            zmq::pollitem_t items[2] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                                        {socket.Monitor().handle(), 0, ZMQ_POLLIN, 0}};
            if (PollRetrying(items, watchConnection ? 2 : 1, std::chrono::milliseconds(1000)) > 0 &&
                (items[0].revents & ZMQ_POLLIN))
            {
                return true;
            }
            if (m_simulatorPid > 0 && ::kill(m_simulatorPid, 0) != 0 && errno == ESRCH)
            {
                m_simulatorGone = true;
            }
            if (watchConnection && socket.ConnectionLost())
            {
                std::lock_guard<std::mutex> reason(m_goneLock);
                m_goneReason = "eidolon-sim at " + m_endpoint +
                               " has ended or is unreachable (connection lost" + HeartbeatText() +
                               ")";
                m_simulatorGone = true;
            }
        }
        std::lock_guard<std::mutex> reason(m_goneLock);
        *error = (m_goneReason.empty()
                      ? "eidolon-sim (pid " + std::to_string(m_simulatorPid) + ") has ended"
                      : m_goneReason) +
                 ": the simulated run is over; CUDA calls fail from now on (cudaErrorNoDevice)";
        return false;
    }

    bool Receive(zmq::socket_t& socket, wire::Envelope* envelope, std::string* error)
    {
        zmq::message_t message;
        if (!ReceiveRetrying(socket, message, zmq::recv_flags::none))
        {
            *error = "receive interrupted";
            return false;
        }
        if (!envelope->ParseFromArray(message.data(), int(message.size())))
        {
            *error = "cannot parse a message from the simulator";
            return false;
        }
        if (envelope->protocol_version() != wire::kProtocolVersion)
        {
            *error = "the simulator speaks bridge protocol " +
                     std::to_string(envelope->protocol_version()) + ", this library " +
                     std::to_string(wire::kProtocolVersion);
            return false;
        }
        return true;
    }

    void Touch()
    {
        if (m_batch.records_size() == 0)
        {
            // Only a flusher in a long back-off is woken: a wake-up per batch would cost more
            // than the timer it replaces when every NCCL call sends its batch.
            std::lock_guard<std::mutex> wake(m_wakeLock);
            if (m_flusherBackedOff)
            {
                m_batchOpened = true;
                m_wake.notify_one();
            }
        }
    }

    // Under m_state: sends the batch, numbers the request (`body` is the request inside `envelope`)
    // after that batch, and sends it on the calling thread's socket; returns the socket (the
    // calling thread's own, to wait on without m_state) and the request id.
    template<typename Body>
    std::pair<SimSocket*, uint64_t> FlushAndRequest(wire::Envelope* envelope, Body* body)
    {
        std::lock_guard<std::mutex> state(m_state);
        SimSocket& socket = ThreadSocket();
        Flush(socket, m_host.Now());
        uint64_t id = ++m_nextRequest;
        body->set_request(id);
        body->set_after_batch(m_sentSeq);
        Send(socket, *envelope);
        // The simulator takes the request's count of driving threads (and a sync's all-parked)
        // as the process's: they are what it last heard. Without this, a thread that woke before
        // the request and parked after it brought the count back to the last batch's, so no batch
        // told the simulator, which then took the waiting rank for a running one that had gone
        // silent (a pipeline's autograd threads; 10 s each and the optimistic mode).
        m_reportedDriving = body->driving_threads();
        if constexpr (std::is_same_v<Body, wire::SyncRequest>)
        {
            m_reportedAllParked = body->all_parked();
        }
        return {&socket, id};
    }

    void MaybeFlushFull()
    {
        if (m_batch.records_size() >= kMaxBatchRecords)
        {
            Flush(ThreadSocket(), m_host.Now());
        }
    }

    // Sends the batch with the host clock `now` (called with m_state held). The reported clock
    // never goes back: the flusher may have read `now` before a sink call reported a later one.
    void Flush(zmq::socket_t& socket, Ns now)
    {
        m_openChain.clear();
        m_openSpan.clear();
        const Ns clock = std::max(now, m_reportedClock);
        const int driving = m_host.DrivingThreads();
        const bool allParked = m_host.AllDrivingThreadsParked();
        if (m_batch.records_size() == 0 && m_batch.usage_size() == 0 && clock == m_reportedClock &&
            driving == m_reportedDriving && allParked == m_reportedAllParked)
        {
            return;
        }
        if (driving != m_reportedDriving || allParked != m_reportedAllParked)
        {
            m_batch.set_all_parked(allParked);
            m_reportedAllParked = allParked;
            m_batch.set_driving_threads(driving);
            m_reportedDriving = driving;
        }
        m_flushedWall = Clock::now();
        m_flushedCpu = ProcessCpuTime();
        m_batch.set_seq(++m_sentSeq);
        m_batch.set_clock_ns(clock);
        m_reportedClock = clock;
        wire::Envelope envelope;
        envelope.set_protocol_version(wire::kProtocolVersion);
        envelope.mutable_batch()->Swap(&m_batch);
        Send(socket, envelope);
        m_batch.Clear();
    }

    // CPU time of the whole process (not a wall clock: gpu-emu's interposer passes it through).
    static Clock::duration ProcessCpuTime()
    {
        timespec ts{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
    }

    // The background thread: sends the batch and the clock when they are due (kFlushCpu,
    // kFlushWallLimit), so that the simulator's horizon can move while a rank computes.
    void FlushLoop()
    {
        // Everything this thread does (ZeroMQ reads clocks too) passes the clock interposers.
        m_host.AdoptThread();
        Clock::duration wait = kFlushCpu;
        while (!m_exiting)
        {
            {
                // Sink calls notify under m_state; this thread never takes m_state holding
                // m_wakeLock.
                std::unique_lock<std::mutex> wake(m_wakeLock);
                m_flusherBackedOff = wait > kFlushCpu;
                m_wake.wait_for(wake, wait,
                                [this] { return m_exiting || m_batchOpened || m_drivingChanged; });
                m_batchOpened = false;
                m_flusherBackedOff = false;
            }
            const bool drivingChanged = m_drivingChanged.exchange(false);
            // The clock first, with m_state not held: sink calls take m_state inside the host's
            // lock, so taking them in the other order could deadlock.
            const Ns now = m_host.NowFromOwnThread();
            std::lock_guard<std::mutex> state(m_state);
            if (m_exiting)
            {
                break;
            }
            const bool due = drivingChanged || ProcessCpuTime() - m_flushedCpu >= kFlushCpu ||
                             Clock::now() - m_flushedWall >= kFlushWallLimit;
            if (due && (m_batch.records_size() > 0 || now > m_reportedClock ||
                        m_host.DrivingThreads() != m_reportedDriving ||
                        m_host.AllDrivingThreadsParked() != m_reportedAllParked))
            {
                Flush(ThreadSocket(), now);
                wait = kFlushCpu;
            }
            else
            {
                wait = std::min<Clock::duration>(2 * wait, kWakeMax);
            }
        }
    }

    const gpu::RankHost& m_host;
    std::string m_endpoint;
    // Guards everything below that sink calls and the flusher share (sockets map, batch, open
    // records, counters). Sink calls take it inside the emulator's lock; nothing takes the
    // emulator's lock while holding it, and no thread waits for the simulator holding it.
    std::mutex m_state;
    zmq::context_t m_context;
    std::string m_token;
    wire::Welcome m_welcome;
    std::unordered_map<std::thread::id, std::unique_ptr<SimSocket>> m_sockets;
    wire::Batch m_batch;
    // When the last batch (or clock) was sent, in wall and process CPU time.
    Clock::time_point m_flushedWall = Clock::now();
    Clock::duration m_flushedCpu = ProcessCpuTime();
    // Wakes the flusher when a batch opens, so that its back-off delays nothing due.
    std::mutex m_wakeLock;
    std::condition_variable m_wake;
    bool m_batchOpened = false;      // under m_wakeLock
    bool m_flusherBackedOff = false; // under m_wakeLock: the flusher waits longer than kFlushCpu
    // A driving thread parked or woke (DrivingThreadsChanged): the flusher sends the new count at
    // once, in a batch (ordered after the records before it), so that a process whose other
    // threads all wait for the simulator counts as blocked without waiting for a flush.
    std::atomic<bool> m_drivingChanged{false};
    int m_reportedDriving = 0; // under m_state: the count the simulator last heard in a batch
    bool m_reportedAllParked = false; // under m_state: likewise, Batch.all_parked
    // Per stream, the batch index of the record ops may still fold into (record-folds.h).
    std::unordered_map<uint64_t, size_t> m_openChain;
    std::unordered_map<uint64_t, size_t> m_openSpan;
    bool m_eachOp = false; // EIDOLON_TRACE_EACH_OP: no folding
    uint64_t m_nextId = 0;
    uint64_t m_nextRequest = 0;
    uint64_t m_sentSeq = 0;
    Ns m_reportedClock = -1;
    std::atomic<bool> m_exiting{false};
    std::thread m_flusher;
    int m_simulatorPid = 0; // EIDOLON_SIM_PID: 0 when not known (attached over tcp://)
    std::string m_curveServer, m_curvePublic, m_curveSecret;  // EIDOLON_SIM_CURVE_*
    int m_heartbeatMs = int(kDefaultHeartbeatSeconds * 1000); // EIDOLON_SIM_HEARTBEAT_S
    std::atomic<bool> m_simulatorGone{false};
    std::mutex m_goneLock;
    std::string m_goneReason; // under m_goneLock: how the simulator was found gone, if not by pid
};

} // namespace

std::unique_ptr<gpu::DeviceOpSink>
Connect(const gpu::RankHost& host, std::string* error, std::string* helperOf)
{
    try
    {
        auto sink = std::make_unique<BridgeSink>(host);
        if (!sink->Join(error))
        {
            if (helperOf)
            {
                *helperOf = sink->HelperOf();
            }
            return nullptr;
        }
        return sink;
    }
    catch (const std::exception& e)
    {
        *error = e.what();
        return nullptr;
    }
}

} // namespace eidolon::bridge
