#include "rank-timelines.h"

#include "sim-errors.h"
#include "wire-ticks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace eidolon::sim
{

RankTimelines::RankTimelines(ns3::Ptr<const ns3::eidolon::Topology> topology, RunStatistics& stats)
    : m_topology(topology)
    , m_stats(stats)
    , m_gpusPerNode(std::max<uint32_t>(1, uint32_t(topology->GpusOfNode(0).size())))
{
}

// ------------------------------------------------------------------ processes

std::unique_ptr<RankProcess>
RankTimelines::Place(const wire::Hello& hello) const
{
    auto process = std::make_unique<RankProcess>();
    process->index = int(m_processes.size());
    process->name = hello.name().empty() ? fmt::format("process{}", process->index) : hello.name();
    process->unnamed = hello.world_rank() < 0 && hello.name() == fmt::format("pid{}", hello.pid());
    process->pid = hello.pid();
    process->hostname = hello.hostname();
    process->worldRank = hello.world_rank();
    uint32_t nodes = m_topology->NodeCount();
    uint32_t total = m_topology->GpuCount();
    if (hello.node() < 0 && uint32_t(hello.num_devices()) >= total)
    {
        // The process sees the whole cluster (e.g. mpirun on one host): device d is GPU d.
        process->node = 0;
        for (int d = 0; d < hello.num_devices(); ++d)
        {
            process->gpus.push_back(uint32_t(d) < total ? d : -1);
        }
        return process;
    }
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
        throw RefusedProcess(fmt::format("{} is on node {}, but the topology has {} node(s)",
                                         process->name, node, nodes));
    }
    process->node = node;
    for (int d = 0; d < hello.num_devices(); ++d)
    {
        process->gpus.push_back(uint32_t(d) < m_gpusPerNode
                                    ? int32_t(uint32_t(node) * m_gpusPerNode + uint32_t(d))
                                    : -1);
    }
    return process;
}

RankProcess&
RankTimelines::Add(std::unique_ptr<RankProcess> process)
{
    m_processes.push_back(std::move(process));
    return *m_processes.back();
}

uint32_t
RankTimelines::UseGpu(const RankProcess& process, int device)
{
    if (device < 0 || size_t(device) >= process.gpus.size() || process.gpus[device] < 0)
    {
        throw std::runtime_error(
            fmt::format("{}: device {} is not a GPU of the simulated cluster ({} GPUs per node)",
                        process.name, device, m_gpusPerNode));
    }
    uint32_t gpu = uint32_t(process.gpus[device]);
    if (process.unnamed && size_t(process.index) < m_processes.size() &&
        m_processes[size_t(process.index)].get() == &process)
    {
        RankProcess& owned = *m_processes[size_t(process.index)];
        owned.name = fmt::format("worker{}", gpu);
        owned.unnamed = false;
    }
    m_stats.ClaimGpu(gpu, process.index, process.name);
    return gpu;
}

// ------------------------------------------------------------------ dependency graph

NodeIndex
RankTimelines::AddNode(RankProcess& process, uint64_t id, int device, uint64_t stream,
                       const google::protobuf::RepeatedField<uint64_t>& deps, double ready,
                       bool communication)
{
    UseGpu(process, device); // validates
    RetireEndedBlocks();     // here: no caller holds a Node across AddNode
    const NodeIndex index = m_kept.size();
    if (index % kBlockSize == 0)
    {
        m_blocks.push_back(std::make_unique<Block>());
    }
    m_kept.push_back(Kept{-1, id});
    Node& node = m_blocks.back()->nodes[index % kBlockSize];
    node.process = process.index;
    node.device = device;
    node.stream = stream;
    node.ready = ready;
    node.communication = communication;
    if (communication)
    {
        node.comm = std::make_unique<Communication>();
    }
    if (!communication && ready < NowNs())
    {
        // Work from before the simulator's present: the horizon went on without its rank
        // (optimistic mode, past the grace period, or while its thread asked for an end that
        // then lay past its own clock: a cudaEventQuery). It keeps its time. A chain (kernels,
        // copies, memsets) is priced on its own rank alone, from its ready time and its
        // dependencies, and nothing the simulator already decided can depend on it: it is
        // exact, and only counted. (Communication is judged when it starts: Start.)
        m_stats.LateLocalRecord();
    }
    for (uint64_t dep : deps)
    {
        NodeIndex found = process.Find(dep);
        if (found == kNoNode)
        {
            throw std::runtime_error(
                fmt::format("{}: record {} waits on unknown record {}", process.name, id, dep));
        }
        if (EndOf(found) >= 0)
        {
            node.ready = std::max(node.ready, EndOf(found));
        }
        else
        {
            At(found).successors.push_back(index);
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

void
RankTimelines::Submit(NodeIndex index)
{
    if (At(index).unresolved == 0)
    {
        m_worklist.push_back(index);
    }
}

void
RankTimelines::RunWorklist()
{
    while (!m_worklist.empty())
    {
        NodeIndex index = m_worklist.back();
        m_worklist.pop_back();
        Start(index);
    }
}

void
RankTimelines::Start(NodeIndex index)
{
    Node& node = At(index);
    node.start = node.ready; // ready already holds the max of the ends of its dependencies
    if (!node.communication)
    {
        // On a whole tick, as the chain's a and b are (wire-ticks.h): the sum is exact, and a
        // chain split across batches ends where the whole one would.
        Finish(index, std::max(wire::WholeTicks(node.start) + node.a, node.b));
        return;
    }
    // Less than ns-3's resolution (1 ps) before its present is the same instant: the wire's
    // ticks (2^-10 ns) and ns-3's picoseconds round one time differently, by up to half of
    // either (a kernel after a collective that ended at a picosecond off the tick grid ends
    // on the grid, up to 0.49 ps before it; 144 such "violations" in 3 steps of a 16-GPU
    // packet-model run, the largest 0.28 ps).
    constexpr double kSameInstantNs = 1e-3;
    if (node.start < NowNs() - kSameInstantNs)
    {
        // Communication that may start before the simulator's present (its rank reached the
        // simulator late, and so did whatever it waits on): counted as a causality violation
        // with its size. It keeps its time: flows that start in the past roll the flow model
        // back (late flows replayed; what ranks were already shown is pinned).
        m_stats.CausalityViolation(NowNs() - node.start);
    }
    m_runningCommunication.insert(node.start);
    m_listener->CommunicationStarted(index);
}

void
RankTimelines::Finish(NodeIndex index, double endNs)
{
    Node& node = At(index);
    m_kept[index].end = endNs;
    if (node.communication)
    {
        // Started communication is running (Start); a record ended otherwise never was.
        if (auto running = m_runningCommunication.find(node.start);
            running != m_runningCommunication.end())
        {
            m_runningCommunication.erase(running);
        }
    }
    uint32_t gpu = UseGpu(*m_processes[size_t(node.process)], node.device);
    m_stats.WorkDone(RunStatistics::DecidedWork{gpu, node.stream, *m_labelText[node.label],
                                                node.communication, node.compute, node.start, endNs,
                                                node.busy});
    for (NodeIndex successor : node.successors)
    {
        Node& next = At(successor);
        next.ready = std::max(next.ready, endNs);
        if (--next.unresolved == 0)
        {
            m_worklist.push_back(successor);
        }
    }
    // Nothing becomes a successor of an ended node (AddNode reads its end instead): its heap
    // parts go now, the Node itself with its block.
    std::vector<NodeIndex>().swap(node.successors);
    const size_t block = index / kBlockSize;
    if (++m_blocks[block]->ended == kBlockSize)
    {
        m_endedBlocks.push_back(block);
    }
    m_listener->NodeFinished(index);
}

RankTimelines::Node&
RankTimelines::At(NodeIndex index)
{
    return const_cast<Node&>(std::as_const(*this).At(index));
}

const RankTimelines::Node&
RankTimelines::At(NodeIndex index) const
{
    const std::unique_ptr<Block>& block = m_blocks.at(index / kBlockSize);
    if (!block)
    {
        throw std::logic_error(
            fmt::format("record {} was read after its block was retired (every record of it "
                        "ended); only its end and id are kept",
                        index));
    }
    return block->nodes[index % kBlockSize];
}

double
RankTimelines::LeastLiveClock() const
{
    double least = kInf;
    for (const auto& process : m_processes)
    {
        if (process->Live())
        {
            least = std::min(least, process->clock);
        }
    }
    return least;
}

uint32_t
RankTimelines::InternLabel(const std::string& text)
{
    auto [it, added] = m_labelIds.try_emplace(text, uint32_t(m_labelText.size()));
    if (added)
    {
        m_labelText.push_back(&it->first); // unordered_map keys stay where they are
    }
    return it->second;
}

void
RankTimelines::RetireEndedBlocks()
{
    for (size_t block : m_endedBlocks)
    {
        m_blocks[block].reset();
        ++m_retiredBlocks;
    }
    m_endedBlocks.clear();
}

} // namespace eidolon::sim
