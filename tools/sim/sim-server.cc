#include "sim-server.h"

#include "ns3/cluster-helper.h"
#include "ns3/flow-model.h"
#include "wire-version.h"

#include "ns3/boolean.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <time.h>

#include <google/protobuf/arena.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace eidolon::sim
{

namespace
{
// An error in what the program did (not in a message): the run cannot go on meaningfully.
struct ProgramError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

ns3::Time
ToTime(double ns)
{
    return ns3::PicoSeconds(int64_t(std::llround(ns * 1000.0)));
}

double
NowNs()
{
    return double(ns3::Simulator::Now().GetPicoSeconds()) / 1000.0;
}

bool g_stopRequested = false; // set by every Stop of ours; clear: Run ended with no events left

void
StopNow()
{
    g_stopRequested = true;
    ns3::Simulator::Stop();
}

e::CollectiveKind
KindOf(wire::CommOpKind kind)
{
    switch (kind)
    {
    case wire::COMM_ALL_REDUCE:
        return e::CollectiveKind::AllReduce;
    case wire::COMM_ALL_GATHER:
        return e::CollectiveKind::AllGather;
    case wire::COMM_REDUCE_SCATTER:
        return e::CollectiveKind::ReduceScatter;
    case wire::COMM_BROADCAST:
        return e::CollectiveKind::Broadcast;
    case wire::COMM_REDUCE:
        return e::CollectiveKind::Reduce;
    default:
        return e::CollectiveKind::SendRecv;
    }
}

const char*
CommName(wire::CommOpKind kind)
{
    switch (kind)
    {
    case wire::COMM_ALL_REDUCE:
        return "AllReduce";
    case wire::COMM_ALL_GATHER:
        return "AllGather";
    case wire::COMM_REDUCE_SCATTER:
        return "ReduceScatter";
    case wire::COMM_BROADCAST:
        return "Broadcast";
    case wire::COMM_REDUCE:
        return "Reduce";
    case wire::COMM_SEND:
        return "Send";
    case wire::COMM_RECV:
        return "Recv";
    default:
        return "?";
    }
}

bool
IsP2p(wire::CommOpKind kind)
{
    return kind == wire::COMM_SEND || kind == wire::COMM_RECV;
}

std::string
Bytes(uint64_t bytes)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
    {
        return fmt::format("{} GiB", bytes >> 30);
    }
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
    {
        return fmt::format("{} MiB", bytes >> 20);
    }
    if (bytes >= 1024 && bytes % 1024 == 0)
    {
        return fmt::format("{} KiB", bytes >> 10);
    }
    return fmt::format("{} B", bytes);
}

} // namespace

// ------------------------------------------------------------------ state

struct SimServer::Process
{
    int index = 0;
    std::string name;
    int pid = 0;
    std::string hostname;
    int worldRank = -1;
    int node = 0;
    std::string token;
    std::vector<int32_t> gpus; // local device -> global GPU index (-1: none)
    double clock = 0;
    bool goodbye = false;
    bool dead = false;
    uint64_t nextBatch = 1;
    std::map<uint64_t, wire::Batch> early; // batches that overtook earlier ones
    int drivingThreads = 1;
    int outstandingSyncs = 0;
    std::chrono::steady_clock::time_point lastHeard = std::chrono::steady_clock::now();
    bool graceWarned = false;
    // Record id -> node. A rank numbers its records 1, 2, 3, ... so a vector indexed by id is
    // the map (SIZE_MAX: no such record).
    std::vector<NodeIndex> records;
    NodeIndex Find(uint64_t id) const { return id < records.size() ? records[id] : SIZE_MAX; }
    bool Insert(uint64_t id, NodeIndex node)
    {
        if (id > records.size() + (1u << 20))
        {
            return false; // not the dense numbering the client uses
        }
        if (id >= records.size())
        {
            records.resize(std::max<size_t>(id + 1, records.size() * 2), SIZE_MAX);
        }
        records[id] = node;
        return true;
    }
    std::vector<wire::DeviceUsage> usage;
    std::vector<wire::Pricing> pricing;
    // Sync requests and goodbyes that wait for a batch not yet arrived.
    std::vector<std::pair<std::string, wire::Envelope>> waitingForBatch;

    bool Live() const { return !goodbye && !dead; }
    bool IsBlocked() const { return outstandingSyncs > 0 && outstandingSyncs >= drivingThreads; }
};

struct SimServer::Node
{
    int process = 0;
    uint64_t id = 0;
    int device = 0;
    uint64_t stream = 0;
    double ready = 0;
    double a = 0;
    double b = -kInf;
    bool communication = false;
    int unresolved = 0;
    double start = -1;
    double end = -1;
    int pendingTransfers = 0;      // p2p: transfers of this group not yet done
    std::vector<size_t> transfers; // p2p: its transfers (indexes into m_transferPool)
    std::vector<NodeIndex> successors;
    std::vector<size_t> syncs;
    // trace
    std::string label;
    double busy = 0;
    bool compute = true;
    int collectiveRank = -1;
    std::pair<uint64_t, uint64_t> collectiveKey{0, 0};
};

struct SimServer::Collective
{
    uint64_t comm = 0;
    uint64_t index = 0;
    int nranks = 0;
    std::vector<NodeIndex> members; // by comm rank; SIZE_MAX until arrived
    std::vector<wire::Communication> calls;
    int arrived = 0;
    int started = 0;
    bool running = false;
    std::string planText;
};

struct SimServer::Transfer
{
    NodeIndex sendNode = SIZE_MAX;
    NodeIndex recvNode = SIZE_MAX;
    uint64_t sendBytes = 0;
    uint64_t recvBytes = 0;
    bool started = false;
    uint64_t comm = 0;
    int src = 0;
    int dst = 0;
};

struct SimServer::Sync
{
    int process = 0;
    std::string routingId;
    uint64_t request = 0;
    std::vector<NodeIndex> nodes;
    std::string what;
    bool answered = false;
};

// ------------------------------------------------------------------ setup

SimServer::SimServer(const SimOptions& options, std::ostream& log)
    : m_options(options)
    , m_log(log)
    , m_expected(options.expectedProcesses)
    , m_lastProgress(std::chrono::steady_clock::now())
{
    e::ClusterHelper cluster;
    if (options.model == "packet")
    {
        cluster.SetNetworkModel("ns3::eidolon::PacketModel", "Transport",
                                ns3::StringValue(options.transport));
    }
    else if (options.model == "flow")
    {
        // The simulator commits history itself, up to where no rank can still add work, so that
        // a late flow (optimistic mode) can roll the model back.
        cluster.SetNetworkModel("ns3::eidolon::FlowModel", "AutoCommit", ns3::BooleanValue(false));
    }
    else
    {
        throw std::runtime_error("--model must be flow or packet, not '" + options.model + "'");
    }
    m_topology = cluster.ReadTopology(options.topologyPath);
    m_network = cluster.Install(m_topology);
    m_collectives = ns3::CreateObject<e::CollectiveModel>();
    m_collectives->SetNetworkModel(m_network);
    m_collectives->SetConfig(e::NcclConfig::FromEnvironment(options.ncclEnvironment));
    if (m_topology->GpuCount() == 0)
    {
        throw std::runtime_error(options.topologyPath + ": the topology has no GPUs");
    }
    m_gpusPerNode = std::max<uint32_t>(1, uint32_t(m_topology->GpusOfNode(0).size()));
    const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME};
    for (int i = 0; i < 3; ++i)
    {
        timespec ts{};
        clock_gettime(clocks[i], &ts);
        m_epochs[i] = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    }
    m_gpuStats.resize(m_topology->GpuCount());
    m_network->TraceConnectWithoutContext(
        "FlowFinished",
        ns3::MakeBoundCallback(
            +[](SimServer* self, const e::FlowRecord& flow)
            {
                ++self->m_flows;
                if (self->m_flowSlices.size() + flow.path.size() > self->m_options.maxFlowSlices)
                {
                    return;
                }
                for (uint32_t channel : flow.path)
                {
                    self->m_flowSlices.push_back(
                        eidolon::run::FlowSlice{channel, self->m_topology->ChannelName(channel),
                                                double(flow.start.GetPicoSeconds()) / 1000.0,
                                                double(flow.finish.GetPicoSeconds()) / 1000.0,
                                                flow.bytes, fmt::format("flow {}", flow.id)});
                }
            },
            this));
    if (!options.endpoint.empty())
    {
        m_context = std::make_unique<zmq::context_t>(1);
        m_router = std::make_unique<zmq::socket_t>(*m_context, zmq::socket_type::router);
        m_router->set(zmq::sockopt::linger, 0);
        m_router->bind(options.endpoint);
    }
}

SimServer::~SimServer()
{
    ns3::Simulator::Destroy();
}

// ------------------------------------------------------------------ messages

void
SimServer::Step(std::chrono::milliseconds timeout, std::vector<zmq::pollitem_t>& extra)
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
    if (!m_finished)
    {
        Advance();
        CheckProgress();
    }
}

void
SimServer::Deliver(const std::string& routingId, const std::string& bytes)
{
    m_lastProgress = std::chrono::steady_clock::now();
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
        Handle(routingId, envelope);
    }
    catch (const ProgramError& e)
    {
        Fail(e.what());
    }
    catch (const std::exception& e)
    {
        SendError(routingId, e.what(), false);
    }
}

void
SimServer::Handle(const std::string& routingId, const wire::Envelope& envelope)
{
    if (envelope.has_hello())
    {
        HandleHello(routingId, envelope.hello());
        return;
    }
    if (envelope.has_thread_hello())
    {
        auto it = m_byToken.find(envelope.thread_hello().process_token());
        if (it == m_byToken.end())
        {
            throw std::runtime_error("ThreadHello with an unknown process token");
        }
        m_byRoutingId[routingId] = it->second;
        return;
    }
    auto it = m_byRoutingId.find(routingId);
    if (it == m_byRoutingId.end())
    {
        throw std::runtime_error("message from a peer that has not said Hello");
    }
    Process& process = *it->second;
    process.lastHeard = std::chrono::steady_clock::now();
    if (envelope.has_batch())
    {
        HandleBatch(process, envelope.batch());
    }
    else if (envelope.has_sync())
    {
        if (envelope.sync().after_batch() >= process.nextBatch)
        {
            process.waitingForBatch.emplace_back(routingId, envelope);
            return;
        }
        HandleSync(process, routingId, envelope.sync());
    }
    else if (envelope.has_exchange())
    {
        if (envelope.exchange().after_batch() >= process.nextBatch)
        {
            process.waitingForBatch.emplace_back(routingId, envelope);
            return;
        }
        HandleExchange(process, routingId, envelope.exchange());
    }
    else if (envelope.has_goodbye())
    {
        if (envelope.goodbye().after_batch() >= process.nextBatch)
        {
            process.waitingForBatch.emplace_back(routingId, envelope);
            return;
        }
        HandleGoodbye(process, routingId, envelope.goodbye());
    }
    else
    {
        throw std::runtime_error("unexpected message: a rank may send Hello, ThreadHello, Batch, "
                                 "SyncRequest, ExchangeRequest or Goodbye");
    }
}

void
SimServer::HandleHello(const std::string& routingId, const wire::Hello& hello)
{
    if (m_finished)
    {
        SendError(routingId, "the run is over", true);
        return;
    }
    auto process = std::make_unique<Process>();
    process->index = int(m_processes.size());
    process->name = hello.name().empty() ? fmt::format("process{}", process->index) : hello.name();
    process->pid = hello.pid();
    process->hostname = hello.hostname();
    process->worldRank = hello.world_rank();
    process->token = hello.process_token();
    uint32_t nodes = m_topology->NodeCount();
    uint32_t total = m_topology->GpuCount();
    bool flat = hello.node() < 0 && uint32_t(hello.num_devices()) >= total;
    if (flat)
    {
        // The process sees the whole cluster (e.g. mpirun on one host): device d is GPU d.
        process->node = 0;
        for (int d = 0; d < hello.num_devices(); ++d)
        {
            process->gpus.push_back(uint32_t(d) < total ? d : -1);
        }
    }
    else
    {
        int node = hello.node();
        if (node < 0 && hello.world_rank() >= 0)
        {
            node = hello.world_rank() / int(m_gpusPerNode);
        }
        if (node < 0)
        {
            node = int(m_processes.size() % std::max<uint32_t>(1, nodes));
        }
        if (uint32_t(node) >= nodes)
        {
            SendError(routingId,
                      fmt::format("{} is on node {}, but the topology has {} node(s)",
                                  process->name, node, nodes),
                      true);
            return;
        }
        process->node = node;
        for (int d = 0; d < hello.num_devices(); ++d)
        {
            process->gpus.push_back(uint32_t(d) < m_gpusPerNode
                                        ? int32_t(uint32_t(node) * m_gpusPerNode + uint32_t(d))
                                        : -1);
        }
    }
    // NCCL reads its variables in every rank; the model takes the first rank's (the simulator's
    // own environment wins, as `eidolon run` passes it to every rank anyway).
    if (!m_ncclConfigFromRanks && m_options.ncclEnvironment.empty() && !hello.nccl_env().empty())
    {
        std::map<std::string, std::string> env(hello.nccl_env().begin(), hello.nccl_env().end());
        try
        {
            m_collectives->SetConfig(e::NcclConfig::FromEnvironment(env));
        }
        catch (const std::exception& error)
        {
            SendError(routingId, fmt::format("{}: {}", hello.name(), error.what()), true);
            return;
        }
    }
    m_ncclConfigFromRanks = true;
    if (hello.world_size() > m_expected)
    {
        m_expected = hello.world_size();
    }
    wire::Envelope reply;
    reply.set_protocol_version(wire::kProtocolVersion);
    wire::Welcome* welcome = reply.mutable_welcome();
    welcome->set_process(process->index);
    welcome->set_node(process->node);
    for (int32_t gpu : process->gpus)
    {
        welcome->add_gpus(gpu);
    }
    welcome->set_hostname(fmt::format("node{}", process->node));
    welcome->set_epoch_monotonic_ns(m_epochs[0]);
    welcome->set_epoch_realtime_ns(m_epochs[1]);
    welcome->set_epoch_boottime_ns(m_epochs[2]);
    m_byRoutingId[routingId] = process.get();
    m_byToken[process->token] = process.get();
    m_processes.push_back(std::move(process));
    SendTo(routingId, reply);
}

void
SimServer::HandleBatch(Process& process, const wire::Batch& batch)
{
    if (batch.seq() < process.nextBatch)
    {
        throw std::runtime_error(
            fmt::format("{}: batch {} arrived twice", process.name, batch.seq()));
    }
    if (batch.seq() > process.nextBatch)
    {
        process.early.emplace(batch.seq(), batch); // another thread's socket overtook
        return;
    }
    // A bad record is reported and the rest of its batch dropped; the batch still counts, so
    // the process's later batches are served.
    process.nextBatch++;
    Ingest(process, batch);
    for (auto it = process.early.find(process.nextBatch); it != process.early.end();
         it = process.early.find(process.nextBatch))
    {
        wire::Batch next = std::move(it->second);
        process.early.erase(it);
        process.nextBatch++;
        Ingest(process, next);
    }
    // Syncs and goodbyes that waited for these batches.
    std::vector<std::pair<std::string, wire::Envelope>> waiting;
    waiting.swap(process.waitingForBatch);
    for (auto& [routingId, envelope] : waiting)
    {
        Handle(routingId, envelope);
    }
}

void
SimServer::Ingest(Process& process, const wire::Batch& batch)
{
    for (const wire::Record& record : batch.records())
    {
        IngestRecord(process, record);
    }
    m_recordsIngested += uint64_t(batch.records_size());
    process.clock = std::max(process.clock, batch.clock_ns());
    RunWorklist();
}

uint32_t
SimServer::GpuOf(const Process& process, int device)
{
    if (device < 0 || size_t(device) >= process.gpus.size() || process.gpus[device] < 0)
    {
        throw std::runtime_error(
            fmt::format("{}: device {} is not a GPU of the simulated cluster ({} GPUs per node)",
                        process.name, device, m_gpusPerNode));
    }
    uint32_t gpu = uint32_t(process.gpus[device]);
    if (m_gpuStats[gpu].process.empty())
    {
        // The first process that puts work on a GPU owns it in the report (with one process per
        // GPU, every process sees the node's GPUs and uses one of them).
        m_gpuStats[gpu].process = process.name;
    }
    return gpu;
}

void
SimServer::IngestRecord(Process& process, const wire::Record& record)
{
    switch (record.body_case())
    {
    case wire::Record::kSpan:
    {
        const wire::Span& span = record.span();
        uint32_t gpu = GpuOf(process, span.device());
        GpuStats& stats = m_gpuStats[gpu];
        stats.endNs = std::max(stats.endNs, span.end_ns());
        stats.computeNs += span.busy_ns();
        AddSlice(eidolon::run::TraceSlice{
            gpu, span.stream(),
            span.count() > 1 ? fmt::format("{} (+{} ops)", span.label(), span.count() - 1)
                             : span.label(),
            span.kind() == wire::OP_COPY || span.kind() == wire::OP_MEMSET ? "copy" : "compute",
            span.start_ns(), span.end_ns(), nlohmann::json()});
        break;
    }
    case wire::Record::kChain:
    {
        const wire::Chain& chain = record.chain();
        NodeIndex index = AddNode(process, chain.id(), chain.device(), chain.stream(), chain.deps(),
                                  chain.ready_ns());
        Node& node = m_nodes[index];
        node.a = chain.a_ns();
        node.b = chain.b_ns();
        node.busy = chain.busy_ns();
        node.label = chain.count() > 1
                         ? fmt::format("{} (+{} ops)", chain.label(), chain.count() - 1)
                         : chain.label();
        node.compute = !(chain.kind() == wire::OP_COPY || chain.kind() == wire::OP_MEMSET);
        if (node.unresolved == 0)
        {
            m_worklist.push_back(index);
        }
        break;
    }
    case wire::Record::kCommunication:
    {
        const wire::Communication& c = record.communication();
        if (c.ops_size() == 0)
        {
            throw std::runtime_error(process.name + ": a communication record without ops");
        }
        NodeIndex index = AddNode(process, c.id(), c.device(), c.stream(), c.deps(), c.ready_ns());
        m_nodes[index].communication = true;
        MatchCommunication(process, index, c);
        if (m_nodes[index].unresolved == 0)
        {
            m_worklist.push_back(index);
        }
        break;
    }
    case wire::Record::kCommJoin:
    {
        const wire::CommJoin& join = record.comm_join();
        CommInfo& comm = m_comms[join.comm()];
        if (join.leave())
        {
            break;
        }
        if (comm.nranks != 0 && comm.nranks != join.nranks())
        {
            throw ProgramError(fmt::format(
                "{} joins communicator {:#x} as rank {} of {}, but {} joined it as one of {}",
                process.name, join.comm(), join.rank(), join.nranks(),
                comm.nameOfRank.begin()->second, comm.nranks));
        }
        if (join.rank() < 0 || join.rank() >= join.nranks())
        {
            throw std::runtime_error(fmt::format("{}: comm rank {} out of range [0, {})",
                                                 process.name, join.rank(), join.nranks()));
        }
        comm.nranks = join.nranks();
        comm.gpuOfRank[join.rank()] = GpuOf(process, join.device());
        comm.nameOfRank[join.rank()] = process.name;
        break;
    }
    default:
        throw std::runtime_error(process.name + ": an empty record");
    }
}

SimServer::NodeIndex
SimServer::AddNode(Process& process, uint64_t id, int device, uint64_t stream,
                   const google::protobuf::RepeatedField<uint64_t>& deps, double ready)
{
    GpuOf(process, device); // validates
    NodeIndex index = m_nodes.size();
    m_nodes.emplace_back();
    Node& node = m_nodes.back();
    node.process = process.index;
    node.id = id;
    node.device = device;
    node.stream = stream;
    node.ready = ready;
    if (ready < NowNs())
    {
        // Work from before the simulator's present: only when the horizon went on without a
        // rank (optimistic mode, or past the grace period). Counted with its size; it keeps its
        // time, so its flows roll the flow model back (what ranks were already shown is pinned).
        ++m_violations;
        m_violationNs += NowNs() - ready;
        m_maxViolationNs = std::max(m_maxViolationNs, NowNs() - ready);
    }
    for (uint64_t dep : deps)
    {
        NodeIndex found = process.Find(dep);
        if (found == SIZE_MAX)
        {
            throw std::runtime_error(
                fmt::format("{}: record {} waits on unknown record {}", process.name, id, dep));
        }
        Node& other = m_nodes[found];
        if (other.end >= 0)
        {
            node.ready = std::max(node.ready, other.end);
        }
        else
        {
            other.successors.push_back(index);
            ++node.unresolved;
        }
    }
    if (!process.Insert(id, index))
    {
        throw std::runtime_error(
            fmt::format("{}: record id {} is far beyond the ids so far", process.name, id));
    }
    return index;
}

// ------------------------------------------------------------------ statistics

void
SimServer::IntervalUnion::Add(double start, double end)
{
    if (!(end > start))
    {
        return;
    }
    if (m_open.size() == m_head || start > m_open.back().second)
    {
        m_open.emplace_back(start, end); // after everything: the common case
        return;
    }
    // Merge with every interval it touches: those from the first whose end reaches `start` to
    // the last whose start is within `end`.
    auto first = std::lower_bound(m_open.begin() + long(m_head), m_open.end(), start,
                                  [](const std::pair<double, double>& interval, double value)
                                  { return interval.second < value; });
    auto last = first;
    while (last != m_open.end() && last->first <= end)
    {
        start = std::min(start, last->first);
        end = std::max(end, last->second);
        ++last;
    }
    if (first == last)
    {
        m_open.insert(first, {start, end});
        return;
    }
    *first = {start, end};
    m_open.erase(first + 1, last);
}

void
SimServer::IntervalUnion::Close(double before)
{
    while (m_head < m_open.size() && m_open[m_head].second < before)
    {
        m_closed += m_open[m_head].second - m_open[m_head].first;
        ++m_head;
    }
    if (m_head > 1024 && m_head * 2 > m_open.size())
    {
        m_open.erase(m_open.begin(), m_open.begin() + long(m_head));
        m_head = 0;
    }
}

double
SimServer::IntervalUnion::Covered() const
{
    double total = m_closed;
    for (size_t i = m_head; i < m_open.size(); ++i)
    {
        total += m_open[i].second - m_open[i].first;
    }
    return total;
}

void
SimServer::AddSlice(eidolon::run::TraceSlice slice)
{
    if (slice.gpu < m_gpuStats.size())
    {
        GpuStats& stats = m_gpuStats[slice.gpu];
        (slice.category == "collective" ? stats.commCover : stats.computeCover)
            .Add(slice.startNs, slice.endNs);
        stats.anyCover.Add(slice.startNs, slice.endNs);
    }
    if (m_slices.size() < m_options.maxSlices)
    {
        m_slices.push_back(std::move(slice));
    }
    else
    {
        ++m_slicesDropped;
    }
}

// ------------------------------------------------------------------ dependency graph

void
SimServer::RunWorklist()
{
    while (!m_worklist.empty())
    {
        NodeIndex index = m_worklist.back();
        m_worklist.pop_back();
        NodeStarted(index);
    }
}

void
SimServer::DepEnded(NodeIndex index)
{
    Node& node = m_nodes[index];
    if (--node.unresolved == 0)
    {
        m_worklist.push_back(index);
    }
}

void
SimServer::NodeStarted(NodeIndex index)
{
    Node& node = m_nodes[index];
    node.start = node.ready; // ready already holds the max of the ends of its dependencies
    if (!node.communication)
    {
        Finish(index, std::max(node.start + node.a, node.b));
        return;
    }
    if (node.collectiveRank >= 0)
    {
        Collective& collective = m_collectiveCalls.at(node.collectiveKey);
        ++collective.started;
        TryStartCollective(collective);
    }
    else
    {
        std::vector<size_t> transfers = node.transfers;
        for (size_t transfer : transfers)
        {
            TryStartTransfer(m_transferPool[transfer]);
        }
        if (m_nodes[index].pendingTransfers == 0 && m_nodes[index].end < 0)
        {
            Finish(index, node.start); // a group with nothing to move (count 0)
        }
    }
}

void
SimServer::Finish(NodeIndex index, double endNs)
{
    Node& node = m_nodes[index];
    node.end = endNs;
    Process& process = *m_processes[node.process];
    uint32_t gpu = GpuOf(process, node.device);
    GpuStats& stats = m_gpuStats[gpu];
    stats.endNs = std::max(stats.endNs, endNs);
    if (node.communication)
    {
        stats.commNs += endNs - node.start;
    }
    else
    {
        stats.computeNs += node.busy;
    }
    AddSlice(eidolon::run::TraceSlice{
        gpu, node.stream, std::move(node.label),
        node.communication ? "collective" : (node.compute ? "compute" : "copy"),
        node.communication ? node.start : std::max(node.start, node.end - node.busy), endNs,
        nlohmann::json()});
    for (NodeIndex successor : node.successors)
    {
        Node& next = m_nodes[successor];
        next.ready = std::max(next.ready, endNs);
        DepEnded(successor);
    }
    for (size_t sync : node.syncs)
    {
        CheckSync(m_syncs[sync]);
    }
}

// ------------------------------------------------------------------ NCCL calls

std::string
SimServer::CallText(const Process& process, const wire::Communication& record) const
{
    std::string ops;
    for (const wire::CommOp& op : record.ops())
    {
        if (!ops.empty())
        {
            ops += ", ";
        }
        ops +=
            fmt::format("{}(count {}, dtype {}, redop {}, root {}, peer {})", CommName(op.kind()),
                        op.count(), op.dtype(), op.redop(), op.root(), op.peer());
    }
    return fmt::format("{} (comm rank {} of {}, device {}): {}", process.name, record.comm_rank(),
                       record.comm_size(), record.device(), ops);
}

void
SimServer::MatchCommunication(Process& process, NodeIndex index, const wire::Communication& record)
{
    auto commIt = m_comms.find(record.comm());
    if (commIt == m_comms.end() || !commIt->second.gpuOfRank.count(record.comm_rank()))
    {
        throw std::runtime_error(fmt::format("{}: NCCL call on communicator {:#x} it never joined",
                                             process.name, record.comm()));
    }
    CommInfo& comm = commIt->second;
    Node& node = m_nodes[index];
    node.label = fmt::format("nccl{}", CommName(record.ops(0).kind()));
    bool p2p = IsP2p(record.ops(0).kind());
    for (const wire::CommOp& op : record.ops())
    {
        if (IsP2p(op.kind()) != p2p)
        {
            throw std::runtime_error(process.name + ": collectives and send/recv in one record");
        }
    }
    if (!p2p)
    {
        // The n-th collective of every rank on a communicator is the same call (send/recv groups
        // in between do not count: not every rank takes part in them).
        uint64_t collectiveIndex = comm.collectivesOfRank[record.comm_rank()]++;
        auto key = std::make_pair(record.comm(), collectiveIndex);
        Collective& collective = m_collectiveCalls[key];
        if (collective.nranks == 0)
        {
            collective.comm = record.comm();
            collective.index = collectiveIndex;
            collective.nranks = comm.nranks;
            collective.members.assign(size_t(comm.nranks), SIZE_MAX);
            collective.calls.resize(size_t(comm.nranks));
        }
        int rank = record.comm_rank();
        if (collective.members[rank] != SIZE_MAX)
        {
            throw std::runtime_error(process.name + ": two ranks claim the same comm rank");
        }
        // Every rank must make the same call: compare with the first that arrived.
        for (int other = 0; other < collective.nranks; ++other)
        {
            if (collective.members[other] == SIZE_MAX)
            {
                continue;
            }
            const wire::CommOp& a = collective.calls[other].ops(0);
            const wire::CommOp& b = record.ops(0);
            if (a.kind() != b.kind() || a.count() != b.count() || a.dtype() != b.dtype() ||
                (a.kind() != wire::COMM_ALL_GATHER && a.kind() != wire::COMM_BROADCAST &&
                 a.redop() != b.redop()) ||
                a.root() != b.root())
            {
                const Process& first = *m_processes[m_nodes[collective.members[other]].process];
                throw ProgramError(fmt::format(
                    "mismatched NCCL calls at collective #{} on communicator {:#x}:\n  {}\n  {}",
                    collectiveIndex, record.comm(), CallText(first, collective.calls[other]),
                    CallText(process, record)));
            }
            break;
        }
        collective.members[rank] = index;
        collective.calls[rank] = record;
        ++collective.arrived;
        node.collectiveRank = rank;
        node.collectiveKey = key;
        return;
    }
    // Point to point: the k-th send from a to b meets the k-th receive at b from a.
    for (const wire::CommOp& op : record.ops())
    {
        if (op.peer() < 0 || op.peer() >= comm.nranks)
        {
            throw std::runtime_error(fmt::format("{}: peer {} out of range [0, {})", process.name,
                                                 op.peer(), comm.nranks));
        }
        bool send = op.kind() == wire::COMM_SEND;
        int src = send ? record.comm_rank() : op.peer();
        int dst = send ? op.peer() : record.comm_rank();
        // Transfers waiting for their other side, oldest first.
        auto& queue = m_transfers[{record.comm(), src, dst}];
        Transfer* slot = nullptr;
        size_t slotIndex = 0;
        if (!queue.empty() && (send ? m_transferPool[queue.front()].sendNode
                                    : m_transferPool[queue.front()].recvNode) == SIZE_MAX)
        {
            slotIndex = queue.front();
            queue.pop_front(); // now matched on both sides
        }
        else
        {
            slotIndex = m_transferPool.size();
            m_transferPool.emplace_back();
            queue.push_back(slotIndex);
        }
        slot = &m_transferPool[slotIndex];
        slot->comm = record.comm();
        slot->src = src;
        slot->dst = dst;
        // A node waits for each of its transfers once: a send to itself is both sides of one.
        bool counted = (send ? slot->recvNode : slot->sendNode) == index;
        uint64_t bytes = op.count() * uint64_t(std::max(1, op.type_size()));
        (send ? slot->sendNode : slot->recvNode) = index;
        (send ? slot->sendBytes : slot->recvBytes) = bytes;
        if (!counted)
        {
            node.transfers.push_back(slotIndex);
            ++node.pendingTransfers;
        }
        if (slot->sendNode != SIZE_MAX && slot->recvNode != SIZE_MAX &&
            slot->sendBytes != slot->recvBytes)
        {
            throw ProgramError(fmt::format(
                "mismatched send/recv on communicator {:#x}: rank {} sends {} bytes to rank {}, "
                "which receives {} bytes",
                record.comm(), src, slot->sendBytes, dst, slot->recvBytes));
        }
    }
}

void
SimServer::TryStartCollective(Collective& collective)
{
    if (collective.running || collective.started < collective.nranks)
    {
        return;
    }
    collective.running = true;
    const CommInfo& comm = m_comms.at(collective.comm);
    const wire::CommOp& op = collective.calls[0].ops(0);
    e::CollectiveCall call;
    call.kind = KindOf(op.kind());
    uint64_t typeSize = uint64_t(std::max(1, op.type_size()));
    uint64_t n = uint64_t(collective.nranks);
    // nccl-tests' size: the whole buffer (allgather/reducescatter counts are per rank).
    call.bytes = op.count() * typeSize *
                 ((call.kind == e::CollectiveKind::AllGather ||
                   call.kind == e::CollectiveKind::ReduceScatter)
                      ? n
                      : 1);
    call.typeSize = uint32_t(typeSize);
    call.root = op.root();
    for (int r = 0; r < collective.nranks; ++r)
    {
        call.gpus.push_back(m_topology->GpuDevice(comm.gpuOfRank.at(r)));
    }
    call.tag = collective.comm * 0x9e3779b97f4a7c15ULL + collective.index;
    std::vector<ns3::Time> starts;
    for (NodeIndex member : collective.members)
    {
        starts.push_back(ToTime(m_nodes[member].start));
    }
    auto key = std::make_pair(collective.comm, collective.index);
    e::CollectivePlan plan =
        m_collectives->Start(call, starts,
                             ns3::MakeBoundCallback(
                                 +[](SimServer* self, uint64_t comm, uint64_t index, uint32_t rank)
                                 {
                                     Collective& c = self->m_collectiveCalls.at({comm, index});
                                     self->Finish(c.members[rank], NowNs());
                                     self->RunWorklist();
                                     self->AnswerReadySyncs();
                                 },
                                 this, key.first, key.second));
    std::string text =
        fmt::format("{} {} {}/{} {}ch", m_nodes[collective.members[0]].label, Bytes(call.bytes),
                    e::ToString(plan.algorithm), e::ToString(plan.protocol), plan.channels);
    for (NodeIndex member : collective.members)
    {
        m_nodes[member].label = text;
    }
}

void
SimServer::TryStartTransfer(Transfer& transfer)
{
    if (transfer.started || transfer.sendNode == SIZE_MAX || transfer.recvNode == SIZE_MAX)
    {
        return;
    }
    const Node& sender = m_nodes[transfer.sendNode];
    const Node& receiver = m_nodes[transfer.recvNode];
    if (sender.start < 0 || receiver.start < 0)
    {
        return;
    }
    transfer.started = true;
    const CommInfo& comm = m_comms.at(transfer.comm);
    e::CollectiveCall call;
    call.kind = e::CollectiveKind::SendRecv;
    call.bytes = transfer.sendBytes;
    call.typeSize = 1;
    for (int r = 0; r < comm.nranks; ++r)
    {
        auto it = comm.gpuOfRank.find(r);
        call.gpus.push_back(it == comm.gpuOfRank.end() ? m_topology->GpuDevice(0)
                                                       : m_topology->GpuDevice(it->second));
    }
    call.transfers.push_back(e::CollectiveCall::Transfer{
        uint32_t(transfer.src), uint32_t(transfer.dst), transfer.sendBytes});
    call.tag = transfer.comm * 0x9e3779b97f4a7c15ULL + uint64_t(transfer.src) * 7919 +
               uint64_t(transfer.dst);
    double start = std::max(sender.start, receiver.start);
    std::vector<ns3::Time> starts(size_t(comm.nranks), ToTime(start));
    NodeIndex sendNode = transfer.sendNode;
    NodeIndex recvNode = transfer.recvNode;
    int src = transfer.src;
    int dst = transfer.dst;
    m_collectives->Start(call, starts,
                         ns3::MakeBoundCallback(
                             +[](SimServer* self, NodeIndex sendNode, NodeIndex recvNode, int src,
                                 int dst, uint32_t rank)
                             {
                                 NodeIndex index = SIZE_MAX;
                                 if (int(rank) == src)
                                 {
                                     index = sendNode;
                                 }
                                 else if (int(rank) == dst)
                                 {
                                     index = recvNode;
                                 }
                                 if (index == SIZE_MAX)
                                 {
                                     return;
                                 }
                                 Node& node = self->m_nodes[index];
                                 if (--node.pendingTransfers == 0)
                                 {
                                     self->Finish(index, std::max(node.start, NowNs()));
                                     self->RunWorklist();
                                     self->AnswerReadySyncs();
                                 }
                             },
                             this, sendNode, recvNode, src, dst));
}

// ------------------------------------------------------------------ syncs

void
SimServer::HandleSync(Process& process, const std::string& routingId,
                      const wire::SyncRequest& request)
{
    process.clock = std::max(process.clock, request.clock_ns());
    process.drivingThreads = std::max(1, request.driving_threads());
    Sync sync;
    sync.process = process.index;
    sync.routingId = routingId;
    sync.request = request.request();
    sync.what = request.what();
    for (uint64_t op : request.ops())
    {
        NodeIndex found = process.Find(op);
        if (found == SIZE_MAX)
        {
            throw std::runtime_error(
                fmt::format("{}: {} waits on unknown record {}", process.name, request.what(), op));
        }
        sync.nodes.push_back(found);
    }
    ++process.outstandingSyncs;
    size_t index = m_syncs.size();
    m_syncs.push_back(std::move(sync));
    for (NodeIndex node : m_syncs[index].nodes)
    {
        m_nodes[node].syncs.push_back(index);
    }
    CheckSync(m_syncs[index]);
}

void
SimServer::CheckSync(Sync& sync)
{
    if (sync.answered)
    {
        return;
    }
    double latest = 0;
    for (NodeIndex node : sync.nodes)
    {
        if (m_nodes[node].end < 0)
        {
            return;
        }
        latest = std::max(latest, m_nodes[node].end);
    }
    sync.answered = true;
    Process& process = *m_processes[sync.process];
    --process.outstandingSyncs;
    process.lastHeard = std::chrono::steady_clock::now(); // waiting was not silence
    process.clock = std::max(process.clock, latest);
    wire::Envelope reply;
    reply.set_protocol_version(wire::kProtocolVersion);
    wire::SyncReply* r = reply.mutable_sync_reply();
    r->set_request(sync.request);
    for (NodeIndex node : sync.nodes)
    {
        wire::OpEnd* end = r->add_ends();
        end->set_op(m_nodes[node].id);
        end->set_end_ns(m_nodes[node].end);
    }
    SendTo(sync.routingId, reply);
    // A released rank may issue work from `latest` on: stop ns-3 so the horizon is recomputed.
    StopNow();
}

void
SimServer::AnswerReadySyncs()
{
    // Syncs are answered from Finish; nothing is deferred. Kept as the single place to hook
    // optimistic answers.
}

void
SimServer::HandleExchange(Process& process, const std::string& routingId,
                          const wire::ExchangeRequest& request)
{
    process.clock = std::max(process.clock, request.clock_ns());
    process.drivingThreads = std::max(1, request.driving_threads());
    Exchange& exchange = m_exchanges[request.key()];
    if (exchange.participants == 0)
    {
        exchange.participants = request.participants();
    }
    if (exchange.participants != request.participants() || request.participants() <= 0)
    {
        throw ProgramError(fmt::format("{}: {} with {} participants, but another rank said {}",
                                       process.name, request.what(), request.participants(),
                                       exchange.participants));
    }
    for (const wire::ExchangeEntry& entry : request.entries())
    {
        if (!exchange.entries.emplace(entry.index(), entry.payload()).second)
        {
            throw ProgramError(fmt::format("{}: {}: index {} given twice", process.name,
                                           request.what(), entry.index()));
        }
    }
    exchange.time = std::max(exchange.time, request.clock_ns());
    exchange.waiters.push_back(
        Exchange::Waiter{process.index, routingId, request.request(), request.what()});
    ++process.outstandingSyncs;
    if (int(exchange.entries.size()) < exchange.participants)
    {
        return;
    }
    // Everyone is in: a barrier at the latest arrival.
    wire::Envelope reply;
    reply.set_protocol_version(wire::kProtocolVersion);
    for (const auto& [index, payload] : exchange.entries)
    {
        wire::ExchangeEntry* entry = reply.mutable_exchange_reply()->add_entries();
        entry->set_index(index);
        entry->set_payload(payload);
    }
    reply.mutable_exchange_reply()->set_time_ns(exchange.time);
    for (const Exchange::Waiter& waiter : exchange.waiters)
    {
        Process& waiting = *m_processes[waiter.process];
        --waiting.outstandingSyncs;
        waiting.lastHeard = std::chrono::steady_clock::now();
        waiting.clock = std::max(waiting.clock, exchange.time);
        reply.mutable_exchange_reply()->set_request(waiter.request);
        SendTo(waiter.routingId, reply);
    }
    m_exchanges.erase(request.key());
}

void
SimServer::HandleGoodbye(Process& process, const std::string& routingId,
                         const wire::Goodbye& goodbye)
{
    process.clock = std::max(process.clock, goodbye.clock_ns());
    process.goodbye = true;
    process.usage.assign(goodbye.usage().begin(), goodbye.usage().end());
    process.pricing.assign(goodbye.pricing().begin(), goodbye.pricing().end());
    wire::Envelope ack;
    ack.set_protocol_version(wire::kProtocolVersion);
    ack.mutable_sync_reply()->set_request(0);
    SendTo(routingId, ack);
}

void
SimServer::SendTo(const std::string& routingId, const wire::Envelope& envelope)
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
SimServer::SendError(const std::string& routingId, const std::string& message, bool fatal)
{
    m_log << "eidolon-sim: " << message << '\n';
    wire::Envelope envelope;
    envelope.set_protocol_version(wire::kProtocolVersion);
    envelope.mutable_error()->set_message(message);
    envelope.mutable_error()->set_fatal(fatal);
    SendTo(routingId, envelope);
}

// ------------------------------------------------------------------ time

double
SimServer::Horizon()
{
    if (m_expected > 0 && int(m_processes.size()) < m_expected)
    {
        return 0; // a process that has not joined yet may still issue work from time 0
    }
    auto now = std::chrono::steady_clock::now();
    double horizon = kInf;
    for (const auto& process : m_processes)
    {
        if (!process->Live() || process->IsBlocked())
        {
            continue;
        }
        double silent = std::chrono::duration<double>(now - process->lastHeard).count();
        if (m_options.optimistic || silent > m_options.graceSeconds)
        {
            // Go on without it; what it sends later from the simulated past is counted.
            if (!process->graceWarned && !m_options.optimistic)
            {
                process->graceWarned = true;
                m_log << fmt::format("eidolon: {} has sent nothing for {:.0f} s (outside CUDA?); "
                                     "going on optimistically past its clock {:.3f} ms\n",
                                     process->name, silent, process->clock / 1e6);
            }
            continue;
        }
        horizon = std::min(horizon, process->clock);
    }
    return horizon;
}

void
SimServer::Advance()
{
    double horizon = Horizon();
    if (m_processes.empty())
    {
        return;
    }
    double now = NowNs();
    if (horizon <= now)
    {
        return;
    }
    if (horizon != m_lastHorizon)
    {
        m_lastProgress = std::chrono::steady_clock::now();
        m_lastHorizon = horizon;
    }
    // Run every event before the horizon (events at the horizon itself wait: a rank may still
    // add work there).
    ns3::EventId stop;
    if (std::isfinite(horizon))
    {
        stop = ns3::Simulator::Schedule(
            ToTime(horizon) - ns3::Simulator::Now() - ns3::PicoSeconds(1), &StopNow);
    }
    g_stopRequested = false;
    ns3::Simulator::Run();
    m_queueEmpty = !g_stopRequested;
    ns3::Simulator::Cancel(stop);
    // History before the conservative horizon (every rank still running, even one the
    // optimistic horizon went on without) is no longer needed for a replay.
    double committed = kInf;
    for (const auto& process : m_processes)
    {
        if (process->Live() && !process->IsBlocked())
        {
            committed = std::min(committed, process->clock);
        }
    }
    if (int(m_processes.size()) >= m_expected)
    {
        m_network->Commit(std::isfinite(committed) ? ToTime(committed) : ns3::Simulator::Now());
    }
    if (std::isfinite(horizon))
    {
        for (GpuStats& stats : m_gpuStats)
        {
            stats.computeCover.Close(horizon);
            stats.commCover.Close(horizon);
            stats.anyCover.Close(horizon);
        }
    }
    if (NowNs() > now)
    {
        m_lastProgress = std::chrono::steady_clock::now();
    }
}

void
SimServer::CheckProgress()
{
    bool allDone =
        !m_processes.empty() && (m_expected == 0 || int(m_processes.size()) >= m_expected);
    for (const auto& process : m_processes)
    {
        allDone = allDone && !process->Live();
    }
    if (allDone)
    {
        // Run what is left (collectives nobody waited for still end).
        ns3::Simulator::Run();
        m_finished = true;
        return;
    }
    // Deadlock: every live process waits and nothing is left to simulate.
    bool allBlocked = !m_processes.empty() && int(m_processes.size()) >= m_expected;
    for (const auto& process : m_processes)
    {
        allBlocked = allBlocked && (!process->Live() || process->IsBlocked());
    }
    if (allBlocked && m_queueEmpty)
    {
        Fail("deadlock: every rank waits and nothing is in flight\n" + DescribeBlocked());
        return;
    }
    // A rank on this host that is gone without its goodbye (killed, or crashed before atexit):
    // the launcher reports its own children; ranks an external engine started are checked here.
    auto now = std::chrono::steady_clock::now();
    if (now - m_lastLivenessCheck > std::chrono::seconds(1))
    {
        m_lastLivenessCheck = now;
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        for (auto& process : m_processes)
        {
            if (process->Live() && process->pid > 0 && process->hostname == host &&
                kill(process->pid, 0) != 0 && errno == ESRCH)
            {
                process->dead = true;
                Fail(fmt::format("{} (pid {}) ended without saying goodbye (killed, or it crashed)",
                                 process->name, process->pid));
                return;
            }
        }
    }
    double idle = std::chrono::duration<double>(now - m_lastProgress).count();
    if (m_options.watchdogSeconds > 0 && idle > m_options.watchdogSeconds)
    {
        Fail(fmt::format("watchdog: nothing progressed for {:.0f} s (wall)\n", idle) +
             DescribeBlocked());
    }
}

std::string
SimServer::DescribeBlocked() const
{
    std::string out;
    if (m_expected > 0 && int(m_processes.size()) < m_expected)
    {
        out += fmt::format("  {} of {} processes have joined\n", m_processes.size(), m_expected);
    }
    for (const auto& process : m_processes)
    {
        if (!process->Live())
        {
            continue;
        }
        if (!process->IsBlocked())
        {
            out += fmt::format("  {}: running (outside CUDA/NCCL) at virtual {:.3f} ms\n",
                               process->name, process->clock / 1e6);
            continue;
        }
        for (const Sync& sync : m_syncs)
        {
            if (sync.process != process->index || sync.answered)
            {
                continue;
            }
            out += fmt::format("  {}: blocked in {} at virtual {:.3f} ms\n", process->name,
                               sync.what, process->clock / 1e6);
        }
    }
    for (const auto& [key, exchange] : m_exchanges)
    {
        for (const auto& waiter : exchange.waiters)
        {
            out += fmt::format("  {}: blocked in {} ({} of {} entries in)\n",
                               m_processes[waiter.process]->name, waiter.what,
                               exchange.entries.size(), exchange.participants);
        }
    }
    for (const auto& [key, collective] : m_collectiveCalls)
    {
        if (collective.running)
        {
            continue;
        }
        std::string missing;
        const CommInfo& comm = m_comms.at(key.first);
        for (int r = 0; r < collective.nranks; ++r)
        {
            if (collective.members[r] == SIZE_MAX)
            {
                auto name = comm.nameOfRank.find(r);
                missing += fmt::format(" {}(comm rank {})",
                                       name == comm.nameOfRank.end() ? "?" : name->second, r);
            }
        }
        if (!missing.empty())
        {
            out += fmt::format("  collective #{} on communicator {:#x} ({}): never joined by{}\n",
                               key.second, key.first,
                               CommName(collective.calls[0].ops_size()
                                            ? collective.calls[0].ops(0).kind()
                                            : wire::COMM_ALL_REDUCE),
                               missing);
        }
    }
    return out;
}

void
SimServer::OnProcessExit(const ProcessExit& exit)
{
    m_exits.push_back(
        eidolon::run::ProcessReport{exit.name, exit.pid, true, exit.signaled, exit.code});
    for (auto& process : m_processes)
    {
        if (process->pid == exit.pid)
        {
            if (!process->goodbye)
            {
                process->dead = true;
            }
        }
    }
    if (exit.signaled || exit.code != 0)
    {
        Fail(exit.description);
    }
}

void
SimServer::OnLaunchedProcessesDone()
{
    if (m_finished)
    {
        return;
    }
    if (m_processes.empty())
    {
        Fail("no rank joined the simulator: the program ended without using CUDA (or could not "
             "load eidolon's libraries)");
        return;
    }
    for (auto& process : m_processes)
    {
        if (process->Live())
        {
            process->dead = true; // ended without its goodbye (_exit, or killed)
        }
    }
    m_expected = int(m_processes.size());
    ns3::Simulator::Run();
    m_finished = true;
}

void
SimServer::Fail(const std::string& error)
{
    if (m_finished)
    {
        return;
    }
    m_error = error;
    m_finished = true;
    m_log << "eidolon: " << error << (error.empty() || error.back() == '\n' ? "" : "\n");
    for (const auto& [routingId, process] : m_byRoutingId)
    {
        if (process->Live())
        {
            wire::Envelope envelope;
            envelope.set_protocol_version(wire::kProtocolVersion);
            envelope.mutable_error()->set_message("the run ended: " + error);
            envelope.mutable_error()->set_fatal(true);
            SendTo(routingId, envelope);
        }
    }
}

double
SimServer::VirtualNowNs() const
{
    double latest = NowNs();
    for (const auto& process : m_processes)
    {
        latest = std::max(latest, process->clock);
    }
    return latest;
}

int
SimServer::Running() const
{
    int n = 0;
    for (const auto& process : m_processes)
    {
        n += process->Live() && !process->IsBlocked();
    }
    return n;
}

int
SimServer::Blocked() const
{
    int n = 0;
    for (const auto& process : m_processes)
    {
        n += process->Live() && process->IsBlocked();
    }
    return n;
}

double
SimServer::RecordEndNs(int process, uint64_t record) const
{
    if (process < 0 || size_t(process) >= m_processes.size())
    {
        return -1;
    }
    NodeIndex node = m_processes[process]->Find(record);
    return node == SIZE_MAX ? -1 : m_nodes[node].end;
}

double
SimServer::SimulatedNs() const
{
    return NowNs();
}

int
SimServer::Connected() const
{
    return int(m_processes.size());
}

// ------------------------------------------------------------------ report

eidolon::run::RunReport
SimServer::Report(double wallSeconds) const
{
    eidolon::run::RunReport report;
    report.topology = m_options.topologyPath;
    report.model = m_options.model;
    report.launch = m_options.launch;
    report.partial = !m_error.empty();
    report.error = m_error;
    report.wallSeconds = wallSeconds;
    report.causalityViolations = m_violations + m_network->GetStats().causalityViolations;
    report.causalityViolationNs = m_violationNs;
    report.maxCausalityViolationNs = m_maxViolationNs;
    report.recordsIngested = m_recordsIngested;
    report.flows = m_network->GetStats().flowsAdded;
    report.lateFlowsReplayed = m_network->GetStats().lateFlowsReplayed;
    double virtualEnd = 0;
    for (uint32_t gpu = 0; gpu < m_gpuStats.size(); ++gpu)
    {
        const GpuStats& stats = m_gpuStats[gpu];
        if (stats.process.empty())
        {
            continue;
        }
        eidolon::run::GpuReport g;
        g.gpu = gpu;
        g.name = m_topology->GetDevice(m_topology->GpuDevice(gpu)).name;
        g.process = stats.process;
        g.endNs = stats.endNs;
        // Time covered, not summed: concurrent collectives (or kernels on several streams)
        // overlap. Compute is the busy time of the kernels and copies, at most the time they
        // cover; communication the time some collective runs; idle the time nothing does.
        g.computeNs = std::min(stats.computeNs, stats.computeCover.Covered());
        g.commNs = stats.commCover.Covered();
        g.idleNs = std::max(0.0, stats.endNs - stats.anyCover.Covered());
        g.peakBytes = 0;
        g.capacityBytes = 0;
        for (const auto& process : m_processes)
        {
            if (process->name != stats.process)
            {
                continue;
            }
            for (size_t d = 0; d < process->gpus.size(); ++d)
            {
                if (process->gpus[d] != int32_t(gpu))
                {
                    continue;
                }
                for (const wire::DeviceUsage& usage : process->usage)
                {
                    if (usage.device() == int(d))
                    {
                        g.peakBytes = usage.peak_bytes();
                        g.capacityBytes = usage.capacity_bytes();
                    }
                }
            }
            for (const wire::Pricing& pricing : process->pricing)
            {
                g.pricing.push_back(
                    eidolon::run::PricingCoverage{pricing.provider(), pricing.ops(), pricing.ns()});
            }
        }
        virtualEnd = std::max(virtualEnd, stats.endNs);
        report.gpus.push_back(std::move(g));
    }
    report.virtualEndNs = virtualEnd;
    report.processes = m_exits;
    for (const auto& process : m_processes)
    {
        bool known = false;
        for (const auto& exit : m_exits)
        {
            known = known || exit.pid == process->pid;
        }
        if (!known)
        {
            report.processes.push_back(eidolon::run::ProcessReport{process->name, process->pid,
                                                                   process->goodbye, false, 0});
        }
    }
    report.slices = m_slices;
    if (m_slicesDropped > 0)
    {
        report.error +=
            fmt::format("{}trace.json holds the first {} device slices; {} more were "
                        "counted in the summary but not kept",
                        report.error.empty() ? "" : "; ", m_slices.size(), m_slicesDropped);
    }
    report.flowSlices = m_flowSlices;
    return report;
}

} // namespace eidolon::sim
