// The rank timelines: every rank process and the records whose ends the simulator decides, as a
// dependency graph. A record (node) starts once the records it waits on have ended, at the
// latest of their ends and its own ready time; device work then ends at once (a folded chain:
// max(start + a, b), bridge/README.md), communication when the network says so (the listener
// starts it and calls Finish). Records are kept in blocks of kBlockSize: once every record of a
// block has ended, only their ends and ids stay (16 bytes a record rather than the whole Node),
// so a long run's memory follows the records in flight, not all it ever issued.
#pragma once

#include "rank-process.h"
#include "run-statistics.h"
#include "virtual-time.h"

#include "ns3/topology.h"

#include <google/protobuf/repeated_field.h>

#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace eidolon::sim
{

class RankTimelines
{
public:
    // What the matcher keeps of a communication record (CommunicatorMatcher).
    struct Communication
    {
        int pendingTransfers = 0; // p2p: transfers of this group not yet done
        int collectiveRank = -1;
        std::vector<size_t> transfers;                     // p2p: its transfers
        std::pair<uint64_t, uint64_t> collectiveKey{0, 0}; // (communicator, call index)
    };
    // A record while its block holds one that has not ended (NodeIndex is its place). Its end
    // and id stay for the whole run (EndOf, IdOf); what only communication records need lives in
    // `comm`.
    struct Node
    {
        int process = 0;
        int device = 0;
        uint64_t stream = 0;
        double ready = 0;
        double a = 0;
        double b = -kInf;
        double start = -1;
        int unresolved = 0;
        bool communication = false;
        bool compute = true; // trace
        uint32_t label = 0;  // trace: its text is LabelOf(this node)
        std::vector<NodeIndex> successors;
        std::unique_ptr<Communication> comm; // communication records only
        double busy = 0;                     // trace
    };

    // Told when a communication record may start and when any record has ended.
    class Listener
    {
    public:
        virtual ~Listener() = default;
        virtual void CommunicationStarted(NodeIndex node) = 0;
        virtual void NodeFinished(NodeIndex node) = 0;
    };

    RankTimelines(ns3::Ptr<const ns3::eidolon::Topology> topology, RunStatistics& stats);
    void SetListener(Listener* listener) { m_listener = listener; }

    // Where a process that said `hello` runs: its node and the global GPU of each device.
    // Throws RefusedProcess when its node is not in the topology.
    std::unique_ptr<RankProcess> Place(const wire::Hello& hello) const;
    RankProcess& Add(std::unique_ptr<RankProcess> process);

    // The global GPU of a process's device (throws naming the process when it has none); the
    // first process that uses a GPU owns it in the report.
    uint32_t UseGpu(const RankProcess& process, int device);

    // A record of `process` that waits on `deps` (earlier records of the same process); throws
    // naming the record when one is unknown. Work ready before ns-3's present keeps its time and
    // is counted: a chain as a late local record (exact: priced on its rank alone); communication
    // that starts before it (its dependencies included) as a causality violation.
    NodeIndex AddNode(RankProcess& process, uint64_t id, int device, uint64_t stream,
                      const google::protobuf::RepeatedField<uint64_t>& deps, double ready,
                      bool communication);
    // The node is complete: it starts (in RunWorklist) once nothing it waits on is pending.
    void Submit(NodeIndex node);
    // Starts every node whose dependencies have all ended.
    void RunWorklist();
    void Finish(NodeIndex node, double endNs);

    RunStatistics& Stats() { return m_stats; }
    // A record not yet retired: one that has not ended, or whose block of kBlockSize records
    // has not ended yet (throws std::logic_error for a retired one).
    Node& At(NodeIndex node);
    const Node& At(NodeIndex node) const;
    // Any record of the run: its end (-1: not ended) and its id.
    double EndOf(NodeIndex node) const { return m_kept[node].end; }
    uint64_t IdOf(NodeIndex node) const { return m_kept[node].id; }
    // A record's trace label (kernel names and collective descriptions repeat: a Node holds the
    // index of its text, which the run keeps once).
    void SetLabel(NodeIndex node, const std::string& text) { At(node).label = InternLabel(text); }
    // The index of `text` among the run's labels (added if new), for several records at once.
    uint32_t InternLabel(const std::string& text);
    const std::string& LabelOf(NodeIndex node) const { return *m_labelText[At(node).label]; }
    // Records whose whole block has ended; their Node is freed (at the next AddNode).
    uint64_t RetiredRecords() const { return m_retiredBlocks * kBlockSize; }
    RankProcess& Process(int index) { return *m_processes[size_t(index)]; }
    const RankProcess& Process(int index) const { return *m_processes[size_t(index)]; }
    const std::vector<std::unique_ptr<RankProcess>>& Processes() const { return m_processes; }

    // Lower bounds for the start of any work not yet decided: the least clock of the live
    // processes (what they issue from now on is ready no earlier) and the earliest start among
    // the communication records running (they end later, as slices from their start).
    double LeastLiveClock() const;
    double EarliestRunningCommunication() const
    {
        return m_runningCommunication.empty() ? kInf : *m_runningCommunication.begin();
    }

    // Processes that will join (0: not known yet); the run waits for them.
    int Expected() const { return m_expected; }
    void ExpectAtLeast(int processes) { m_expected = std::max(m_expected, processes); }
    void SetExpected(int processes) { m_expected = processes; }
    bool AllJoined() const { return int(m_processes.size()) >= m_expected; }
    uint32_t GpusPerNode() const { return m_gpusPerNode; }

    // Records of a block: a run keeps the Node of a record only while its block is live.
    static constexpr size_t kBlockSize = 4096;

private:
    void Start(NodeIndex node);
    void RetireEndedBlocks();

    // What a run keeps of every record: later records and syncs may wait on any of them.
    struct Kept
    {
        double end = -1;
        uint64_t id = 0;
    };
    struct Block
    {
        Node nodes[kBlockSize];
        size_t ended = 0;
    };

    ns3::Ptr<const ns3::eidolon::Topology> m_topology;
    RunStatistics& m_stats;
    Listener* m_listener = nullptr;
    uint32_t m_gpusPerNode = 1;
    int m_expected = 0;
    std::vector<std::unique_ptr<RankProcess>> m_processes;
    std::deque<Kept> m_kept;                      // by NodeIndex
    std::vector<std::unique_ptr<Block>> m_blocks; // NodeIndex / kBlockSize; null: retired
    std::vector<size_t> m_endedBlocks;            // every record ended: retire at the next AddNode
    std::multiset<double> m_runningCommunication; // starts of the communication records running
    uint64_t m_retiredBlocks = 0;
    std::unordered_map<std::string, uint32_t> m_labelIds{{std::string(), 0}};
    std::vector<const std::string*> m_labelText{&m_labelIds.begin()->first}; // by id
    std::vector<NodeIndex> m_worklist;
};

} // namespace eidolon::sim
