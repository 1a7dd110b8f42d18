#include "communicator-matcher.h"

#include "sim-errors.h"
#include "virtual-time.h"

#include "ns3/callback.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace eidolon::sim
{

namespace e = ns3::eidolon;

namespace
{

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

// Whether two ranks' ops are the same collective call (reduction only where one is applied).
bool
SameCall(const wire::CommOp& a, const wire::CommOp& b)
{
    return a.kind() == b.kind() && a.count() == b.count() && a.dtype() == b.dtype() &&
           (a.kind() == wire::COMM_ALL_GATHER || a.kind() == wire::COMM_BROADCAST ||
            a.redop() == b.redop()) &&
           a.root() == b.root();
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

CommunicatorMatcher::CommunicatorMatcher(RankTimelines& timelines,
                                         ns3::Ptr<const e::Topology> topology,
                                         ns3::Ptr<e::CollectiveModel> collectives)
    : m_timelines(timelines)
    , m_topology(topology)
    , m_collectives(collectives)
{
}

void
CommunicatorMatcher::Join(const RankProcess& process, const wire::CommJoin& join)
{
    Communicator& comm = m_comms[join.comm()];
    if (join.leave())
    {
        return;
    }
    if (comm.nranks != 0 && comm.nranks != join.nranks())
    {
        throw ProgramError(fmt::format(
            "{} joins communicator {:#x} as rank {} of {}, but {} joined it as one of {}",
            process.name, join.comm(), join.rank(), join.nranks(), comm.nameOfRank.begin()->second,
            comm.nranks));
    }
    if (join.rank() < 0 || join.rank() >= join.nranks())
    {
        throw std::runtime_error(fmt::format("{}: comm rank {} out of range [0, {})", process.name,
                                             join.rank(), join.nranks()));
    }
    comm.nranks = join.nranks();
    const uint32_t gpu = m_timelines.UseGpu(process, join.device());
    for (const auto& [rank, other] : comm.gpuOfRank)
    {
        if (other == gpu && rank != join.rank())
        {
            // NCCL refuses a communicator with two ranks on one GPU (init.cc, "Duplicate GPU
            // detected"): ncclCommInitRank fails on every rank.
            throw ProgramError(fmt::format(
                "communicator {:#x}: {} (comm rank {}) and {} (comm rank {}) are both on GPU {}; "
                "NCCL fails ncclCommInitRank with \"Duplicate GPU detected\" (each rank needs a "
                "GPU of its own: check how the program picks its device)",
                join.comm(), comm.nameOfRank.at(rank), rank, process.name, join.rank(),
                m_topology->GetDevice(m_topology->GpuDevice(gpu)).name));
        }
    }
    comm.gpuOfRank[join.rank()] = gpu;
    comm.nameOfRank[join.rank()] = process.name;
    if (join.rank() == 0)
    {
        // NCCL sizes the channels on each rank from its own configuration; programs give every
        // rank the same, and rank 0's stands for all.
        comm.minCtas = join.min_ctas();
        comm.maxCtas = join.max_ctas();
    }
}

// ------------------------------------------------------------------ matching

std::string
CommunicatorMatcher::CallText(const RankProcess& process, const wire::Communication& record) const
{
    std::string ops;
    for (const wire::CommOp& op : record.ops())
    {
        if (!ops.empty())
        {
            ops += ", ";
        }
        // NCCL's names for its datatype and reduction codes (nccl.h), and only the fields the
        // operation has: a root for Broadcast/Reduce, a peer for Send/Recv.
        static const char* const kTypes[] = {"int8",    "uint8",    "int32",      "uint32",
                                             "int64",   "uint64",   "float16",    "float32",
                                             "float64", "bfloat16", "float8e4m3", "float8e5m2"};
        static const char* const kOps[] = {"sum", "prod", "max", "min", "avg"};
        std::string type = op.dtype() >= 0 && op.dtype() < 12 ? kTypes[op.dtype()]
                                                              : fmt::format("type {}", op.dtype());
        std::string fields = fmt::format("count {}, {}", op.count(), type);
        const wire::CommOpKind kind = op.kind();
        if (kind == wire::COMM_ALL_REDUCE || kind == wire::COMM_REDUCE ||
            kind == wire::COMM_REDUCE_SCATTER)
        {
            fields += fmt::format(", {}", op.redop() >= 0 && op.redop() < 5
                                              ? std::string(kOps[op.redop()])
                                              : fmt::format("custom op {}", op.redop()));
        }
        if (kind == wire::COMM_BROADCAST || kind == wire::COMM_REDUCE)
        {
            fields += fmt::format(", root {}", op.root());
        }
        if (kind == wire::COMM_SEND || kind == wire::COMM_RECV)
        {
            fields += fmt::format(", peer {}", op.peer());
        }
        ops += fmt::format("{}({})", CommName(op.kind()), fields);
    }
    return fmt::format("{} (comm rank {} of {}, device {}): {}", process.name, record.comm_rank(),
                       record.comm_size(), record.device(), ops);
}

void
CommunicatorMatcher::Match(const RankProcess& process, NodeIndex index,
                           const wire::Communication& record)
{
    auto commIt = m_comms.find(record.comm());
    if (commIt == m_comms.end() || !commIt->second.gpuOfRank.count(record.comm_rank()))
    {
        throw std::runtime_error(fmt::format("{}: NCCL call on communicator {:#x} it never joined",
                                             process.name, record.comm()));
    }
    m_timelines.SetLabel(index, fmt::format("nccl{}", CommName(record.ops(0).kind())));
    // Bytes per kind of call for summary.json, as nccl-tests count them (the whole buffer).
    const uint32_t gpu = m_timelines.UseGpu(process, m_timelines.At(index).device);
    for (const wire::CommOp& op : record.ops())
    {
        const bool perRank =
            op.kind() == wire::COMM_ALL_GATHER || op.kind() == wire::COMM_REDUCE_SCATTER;
        m_timelines.Stats().CommunicationIssued(
            gpu, CommName(op.kind()),
            op.count() * uint64_t(std::max(1, op.type_size())) *
                (perRank ? uint64_t(commIt->second.nranks) : 1));
    }
    bool p2p = IsP2p(record.ops(0).kind());
    for (const wire::CommOp& op : record.ops())
    {
        if (IsP2p(op.kind()) != p2p)
        {
            throw std::runtime_error(process.name + ": collectives and send/recv in one record");
        }
    }
    if (p2p)
    {
        MatchTransfers(process, commIt->second, index, record);
    }
    else
    {
        MatchCollective(process, commIt->second, index, record);
    }
}

void
CommunicatorMatcher::MatchCollective(const RankProcess& process, Communicator& comm,
                                     NodeIndex index, const wire::Communication& record)
{
    // The n-th collective of every rank on a communicator is the same call (send/recv groups in
    // between do not count: not every rank takes part in them).
    uint64_t collectiveIndex = comm.collectivesOfRank[record.comm_rank()]++;
    auto key = std::make_pair(record.comm(), collectiveIndex);
    Collective& collective = m_collectiveCalls[key];
    if (collective.nranks == 0)
    {
        collective.comm = record.comm();
        collective.index = collectiveIndex;
        collective.nranks = comm.nranks;
        collective.members.assign(size_t(comm.nranks), kNoNode);
        collective.calls.resize(size_t(comm.nranks));
        collective.startedRanks.assign(size_t(comm.nranks), 0);
        collective.kind = record.ops(0).kind();
    }
    int rank = record.comm_rank();
    if (collective.members[rank] != kNoNode)
    {
        throw std::runtime_error(process.name + ": two ranks claim the same comm rank");
    }
    // Every rank must make the same call: compare with the first that arrived.
    for (int other = 0; other < collective.nranks; ++other)
    {
        if (collective.members[other] == kNoNode)
        {
            continue;
        }
        const wire::Communication& theirs = collective.calls[other];
        bool same = theirs.ops_size() == record.ops_size();
        for (int k = 0; same && k < record.ops_size(); ++k)
        {
            same = SameCall(theirs.ops(k), record.ops(k));
        }
        if (!same)
        {
            const RankProcess& first =
                m_timelines.Process(m_timelines.At(collective.members[other]).process);
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
    RankTimelines::Communication& node = *m_timelines.At(index).comm;
    node.collectiveRank = rank;
    node.collectiveKey = key;
    if (collective.run)
    {
        m_timelines.At(index).label = collective.label;
    }
    TryBeginCollective(collective);
    if (collective.arrived == collective.nranks)
    {
        // Every call is here and matched: they were kept for the comparison and the call's
        // description only (a long run issues millions).
        std::vector<wire::Communication>().swap(collective.calls);
    }
}

void
CommunicatorMatcher::MatchTransfers(const RankProcess& process, const Communicator& comm,
                                    NodeIndex index, const wire::Communication& record)
{
    RankTimelines::Communication& node = *m_timelines.At(index).comm;
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
        // Transfers waiting for their other side, oldest first (a pair with none waiting has no
        // entry: an alltoall of n ranks leaves n^2 pairs behind).
        auto waiting = m_transfers.try_emplace(PairKey{record.comm(), src, dst}).first;
        WaitQueue& queue = waiting->second;
        size_t slotIndex = 0;
        if (queue.head != kNoSlot && (send ? m_transferPool[queue.head].sendNode
                                           : m_transferPool[queue.head].recvNode) == kNoNode)
        {
            slotIndex = queue.head; // now matched on both sides
            queue.head = m_transferPool[slotIndex].nextWaiting;
            m_transferPool[slotIndex].nextWaiting = kNoSlot;
            if (queue.head == kNoSlot)
            {
                m_transfers.erase(waiting);
            }
        }
        else
        {
            if (m_freeTransfers.empty())
            {
                slotIndex = m_transferPool.size();
                m_transferPool.emplace_back();
            }
            else
            {
                slotIndex = m_freeTransfers.back();
                m_freeTransfers.pop_back();
                m_transferPool[slotIndex] = Transfer{};
            }
            if (queue.head == kNoSlot)
            {
                queue.head = slotIndex;
            }
            else
            {
                m_transferPool[queue.tail].nextWaiting = slotIndex;
            }
            queue.tail = slotIndex;
        }
        Transfer* slot = &m_transferPool[slotIndex];
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
        if (slot->sendNode != kNoNode && slot->recvNode != kNoNode &&
            slot->sendBytes != slot->recvBytes)
        {
            throw ProgramError(fmt::format(
                "mismatched send/recv on communicator {:#x}: rank {} sends {} bytes to rank {}, "
                "which receives {} bytes",
                record.comm(), src, slot->sendBytes, dst, slot->recvBytes));
        }
    }
}

// ------------------------------------------------------------------ starting calls

void
CommunicatorMatcher::MemberStarted(NodeIndex index)
{
    RankTimelines::Node& node = m_timelines.At(index);
    if (node.comm->collectiveRank >= 0)
    {
        Collective& collective = m_collectiveCalls.at(node.comm->collectiveKey);
        const int rank = node.comm->collectiveRank;
        collective.startedRanks[size_t(rank)] = 1;
        if (collective.run)
        {
            collective.run->MemberStart(uint32_t(rank), ToTime(node.start));
        }
        else
        {
            TryBeginCollective(collective);
        }
        return;
    }
    std::vector<size_t> transfers = node.comm->transfers;
    for (size_t transfer : transfers)
    {
        TryStartTransfer(transfer);
    }
    if (m_timelines.EndOf(index) < 0 && m_timelines.At(index).comm->pendingTransfers == 0)
    {
        m_timelines.Finish(index, node.start); // a group with nothing to move (count 0)
    }
}

void
CommunicatorMatcher::TryBeginCollective(Collective& collective)
{
    const Communicator& comm = m_comms.at(collective.comm);
    if (collective.run || collective.arrived == 0 || int(comm.gpuOfRank.size()) < comm.nranks)
    {
        return;
    }
    int first = 0;
    while (collective.members[size_t(first)] == kNoNode)
    {
        ++first;
    }
    // One call per operation of the record: a group's collectives on one stream are one record.
    const wire::Communication& issued = collective.calls[size_t(first)];
    std::vector<e::CollectiveCall> calls(size_t(issued.ops_size()));
    uint64_t n = uint64_t(collective.nranks);
    for (int k = 0; k < issued.ops_size(); ++k)
    {
        const wire::CommOp& op = issued.ops(k);
        e::CollectiveCall& call = calls[size_t(k)];
        call.kind = KindOf(op.kind());
        uint64_t typeSize = uint64_t(std::max(1, op.type_size()));
        // nccl-tests' size: the whole buffer (allgather/reducescatter counts are per rank).
        call.bytes = op.count() * typeSize *
                     ((call.kind == e::CollectiveKind::AllGather ||
                       call.kind == e::CollectiveKind::ReduceScatter)
                          ? n
                          : 1);
        call.typeSize = uint32_t(typeSize);
        call.dtype = op.dtype();
        call.redop = op.redop();
        call.root = op.root();
        if (k == 0)
        {
            for (int r = 0; r < collective.nranks; ++r)
            {
                call.gpus.push_back(m_topology->GpuDevice(comm.gpuOfRank.at(r)));
            }
        }
        else
        {
            call.gpus = calls[0].gpus;
        }
        // Each operation's own identity (ECMP hashing): the record's, then one per operation.
        call.tag = collective.comm * 0x9e3779b97f4a7c15ULL + collective.index +
                   uint64_t(k) * 0xbf58476d1ce4e5b9ULL;
        call.minCtas = comm.minCtas;
        call.maxCtas = comm.maxCtas;
    }
    const e::CollectiveCall& call = calls[0];
    auto done = ns3::MakeBoundCallback(
        +[](CommunicatorMatcher* self, uint64_t comm, uint64_t index, uint32_t rank)
        { self->CollectiveMemberDone(comm, index, rank); },
        this, collective.comm, collective.index);
    std::string text;
    if (calls.size() == 1)
    {
        e::CollectivePlan plan;
        collective.run = m_collectives->Begin(call, done, &plan);
        text =
            fmt::format("{} {} {}/{} {}ch", m_timelines.LabelOf(collective.members[size_t(first)]),
                        Bytes(call.bytes), e::ToString(plan.algorithm), e::ToString(plan.protocol),
                        plan.channels);
    }
    else
    {
        std::vector<e::CollectivePlan> plans;
        collective.run = m_collectives->BeginGroup(calls, done, &plans);
        uint64_t bytes = 0;
        for (const e::CollectiveCall& c : calls)
        {
            bytes += c.bytes;
        }
        text = fmt::format("{} group of {} {} {}/{}",
                           m_timelines.LabelOf(collective.members[size_t(first)]), calls.size(),
                           Bytes(bytes), e::ToString(plans[0].algorithm),
                           e::ToString(plans[0].protocol));
    }
    collective.label = m_timelines.InternLabel(text);
    for (NodeIndex member : collective.members)
    {
        if (member != kNoNode)
        {
            m_timelines.At(member).label = collective.label;
        }
    }
    // The members that started before the call began, in comm rank order (the model does not
    // depend on the order).
    for (int r = 0; r < collective.nranks; ++r)
    {
        if (collective.startedRanks[size_t(r)])
        {
            collective.run->MemberStart(
                uint32_t(r), ToTime(m_timelines.At(collective.members[size_t(r)]).start));
        }
    }
}

void
CommunicatorMatcher::CollectiveMemberDone(uint64_t comm, uint64_t index, uint32_t rank)
{
    auto it = m_collectiveCalls.find({comm, index});
    m_timelines.Finish(it->second.members[rank], NowNs());
    if (++it->second.ended == it->second.nranks)
    {
        m_collectiveCalls.erase(it);
    }
    m_timelines.RunWorklist();
}

void
CommunicatorMatcher::TryStartTransfer(size_t slot)
{
    Transfer& transfer = m_transferPool[slot];
    if (transfer.started || transfer.sendNode == kNoNode || transfer.recvNode == kNoNode)
    {
        return;
    }
    const RankTimelines::Node& sender = m_timelines.At(transfer.sendNode);
    const RankTimelines::Node& receiver = m_timelines.At(transfer.recvNode);
    if (sender.start < 0 || receiver.start < 0)
    {
        return;
    }
    transfer.started = true;
    Communicator& comm = m_comms.at(transfer.comm);
    if (comm.devices.size() != size_t(comm.nranks) || comm.devicesJoined != comm.gpuOfRank.size())
    {
        comm.devices.clear();
        for (int r = 0; r < comm.nranks; ++r)
        {
            auto it = comm.gpuOfRank.find(r);
            comm.devices.push_back(it == comm.gpuOfRank.end() ? m_topology->GpuDevice(0)
                                                              : m_topology->GpuDevice(it->second));
        }
        comm.devicesJoined = comm.gpuOfRank.size();
    }
    e::CollectiveCall& call = m_transferCall;
    call.kind = e::CollectiveKind::SendRecv;
    call.bytes = transfer.sendBytes;
    call.typeSize = 1;
    call.minCtas = comm.minCtas;
    call.maxCtas = comm.maxCtas;
    if (call.gpus != comm.devices)
    {
        call.gpus = comm.devices;
    }
    call.transfers.assign(1,
                          e::CollectiveCall::Transfer{uint32_t(transfer.src),
                                                      uint32_t(transfer.dst), transfer.sendBytes});
    call.idleRanksTakePart = false; // only the two ranks of this transfer are in the call
    call.tag = transfer.comm * 0x9e3779b97f4a7c15ULL + uint64_t(transfer.src) * 7919 +
               uint64_t(transfer.dst);
    const ns3::Time start = ToTime(std::max(sender.start, receiver.start));
    m_transferStarts.resize(size_t(comm.nranks));
    m_transferStarts[size_t(transfer.src)] = start;
    m_transferStarts[size_t(transfer.dst)] = start;
    m_collectives->Start(call, m_transferStarts,
                         ns3::MakeBoundCallback(
                             +[](CommunicatorMatcher* self, NodeIndex sendNode, NodeIndex recvNode,
                                 int src, int dst, uint32_t rank)
                             {
                                 if (int(rank) == src)
                                 {
                                     self->TransferSideDone(sendNode);
                                 }
                                 else if (int(rank) == dst)
                                 {
                                     self->TransferSideDone(recvNode);
                                 }
                             },
                             this, transfer.sendNode, transfer.recvNode, transfer.src,
                             transfer.dst));
    // Matched on both sides (off its queue) and started on both (both nodes' MemberStarted ran
    // or are running past it): nothing refers to the slot any more.
    m_freeTransfers.push_back(slot);
}

void
CommunicatorMatcher::TransferSideDone(NodeIndex index)
{
    RankTimelines::Node& node = m_timelines.At(index);
    if (--node.comm->pendingTransfers == 0)
    {
        m_timelines.Finish(index, std::max(node.start, NowNs()));
        m_timelines.RunWorklist();
    }
}

// ------------------------------------------------------------------ diagnosis

std::string
CommunicatorMatcher::DescribeMissing() const
{
    std::string out;
    for (const auto& [key, collective] : m_collectiveCalls)
    {
        if (collective.arrived == collective.nranks)
        {
            continue;
        }
        std::string missing;
        const Communicator& comm = m_comms.at(key.first);
        for (int r = 0; r < collective.nranks; ++r)
        {
            if (collective.members[r] == kNoNode)
            {
                auto name = comm.nameOfRank.find(r);
                missing += fmt::format(" {}(comm rank {})",
                                       name == comm.nameOfRank.end() ? "?" : name->second, r);
            }
        }
        if (!missing.empty())
        {
            out += fmt::format("  collective #{} on communicator {:#x} ({}): never joined by{}\n",
                               key.second, key.first, CommName(collective.kind), missing);
        }
    }
    // Sends and receives one side posted and the other never did (a pipeline's mismatched
    // order, a peer that left), oldest first per pair, pairs in a fixed order.
    std::vector<std::string> unmatched;
    for (const auto& [pair, queue] : m_transfers)
    {
        const Communicator& comm = m_comms.at(pair.comm);
        auto nameOf = [&](int rank)
        {
            auto name = comm.nameOfRank.find(rank);
            return fmt::format("{}(comm rank {})",
                               name == comm.nameOfRank.end() ? "?" : name->second, rank);
        };
        for (size_t slot = queue.head; slot != kNoSlot; slot = m_transferPool[slot].nextWaiting)
        {
            const Transfer& transfer = m_transferPool[slot];
            unmatched.push_back(
                transfer.sendNode != kNoNode
                    ? fmt::format("  send of {} bytes from {} to {} on communicator {:#x}: its "
                                  "receive was never posted\n",
                                  transfer.sendBytes, nameOf(pair.src), nameOf(pair.dst), pair.comm)
                    : fmt::format("  receive of {} bytes by {} from {} on communicator {:#x}: "
                                  "its send was never posted\n",
                                  transfer.recvBytes, nameOf(pair.dst), nameOf(pair.src),
                                  pair.comm));
        }
    }
    std::sort(unmatched.begin(), unmatched.end());
    constexpr size_t kShown = 8;
    for (size_t i = 0; i < unmatched.size() && i < kShown; ++i)
    {
        out += unmatched[i];
    }
    if (unmatched.size() > kShown)
    {
        out += fmt::format("  ... and {} more unmatched sends and receives\n",
                           unmatched.size() - kShown);
    }
    return out;
}

} // namespace eidolon::sim
