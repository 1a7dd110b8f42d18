// NCCL calls matched per communicator: the n-th collective of every rank on a communicator is one
// call (checked to be the same operation, count, datatype, reduction and root everywhere), the
// k-th send from a to b meets the k-th receive at b from a. A collective begins in the
// CollectiveModel once one member has issued it and every rank has joined the communicator, and
// each member's start is passed on as it becomes known (a Broadcast/Reduce chain lets a rank go
// before its downstream ranks have started; other plans start with their last member); the
// model's completions end the members' records in the rank timelines.
#pragma once

#include "rank-timelines.h"

#include "ns3/collective-model.h"
#include "ns3/topology.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace eidolon::sim
{

class CommunicatorMatcher
{
public:
    CommunicatorMatcher(RankTimelines& timelines, ns3::Ptr<const ns3::eidolon::Topology> topology,
                        ns3::Ptr<ns3::eidolon::CollectiveModel> collectives);

    // A device of `process` joins (or leaves) a communicator. Throws ProgramError when it is
    // joined with two sizes.
    void Join(const RankProcess& process, const wire::CommJoin& join);
    // A communication record (node `index` of `process`): finds the call or transfers it belongs
    // to. Throws ProgramError when the ranks' calls differ.
    void Match(const RankProcess& process, NodeIndex index, const wire::Communication& record);
    // Its dependencies have ended: the call starts once every member has.
    void MemberStarted(NodeIndex index);

    // "  collective #3 on communicator 0x2a (AllReduce): never joined by rank1(comm rank 1)"
    // for every collective some rank has not joined.
    std::string DescribeMissing() const;

private:
    struct Communicator
    {
        int nranks = 0;
        std::map<int, uint32_t> gpuOfRank; // comm rank -> global GPU index
        std::map<int, std::string> nameOfRank;
        std::map<int, uint64_t> collectivesOfRank; // collectives each rank has issued so far
        int minCtas = 0; // ncclConfig_t minCTAs / maxCTAs of comm rank 0 (0: unset)
        int maxCtas = 0;
        // Topology device per comm rank (GPU 0's for ranks not joined), as a transfer's call
        // gives them; built for `devicesJoined` ranks joined, rebuilt when more have.
        std::vector<uint32_t> devices;
        size_t devicesJoined = 0;
    };
    struct Collective
    {
        uint64_t comm = 0;
        uint64_t index = 0;
        int nranks = 0;
        std::vector<NodeIndex> members;         // by comm rank; kNoNode until arrived
        std::vector<wire::Communication> calls; // by comm rank, until every member has arrived
        std::vector<char> startedRanks;         // by comm rank: its start is known
        wire::CommOpKind kind = wire::COMM_ALL_REDUCE;
        int arrived = 0;
        int ended = 0; // the call is forgotten when every member has ended
        std::shared_ptr<ns3::eidolon::CollectiveRun> run; // once begun
        uint32_t label = 0;
    };
    struct Transfer
    {
        NodeIndex sendNode = kNoNode;
        NodeIndex recvNode = kNoNode;
        uint64_t sendBytes = 0;
        uint64_t recvBytes = 0;
        bool started = false;
        uint64_t comm = 0;
        int src = 0;
        int dst = 0;
        size_t nextWaiting = kNoSlot; //!< the pair's next transfer waiting for its other side
    };
    static constexpr size_t kNoSlot = ~size_t(0);
    // A (comm, src, dst) pair's transfers that one side has posted and the other not yet, oldest
    // first: a list threaded through the pool (most pairs have one), not a container each.
    struct PairKey
    {
        uint64_t comm;
        int src, dst;
        bool operator==(const PairKey& o) const
        {
            return comm == o.comm && src == o.src && dst == o.dst;
        }
    };
    struct PairKeyHash
    {
        size_t operator()(const PairKey& k) const
        {
            uint64_t h = k.comm * 0x9e3779b97f4a7c15ULL;
            h ^= (uint64_t(uint32_t(k.src)) << 32 | uint32_t(k.dst)) + 0x632be59bd9b4e019ULL +
                 (h << 6) + (h >> 2);
            return size_t(h ^ (h >> 31));
        }
    };
    struct WaitQueue
    {
        size_t head = kNoSlot;
        size_t tail = kNoSlot;
    };

    void MatchCollective(const RankProcess& process, Communicator& comm, NodeIndex index,
                         const wire::Communication& record);
    void MatchTransfers(const RankProcess& process, const Communicator& comm, NodeIndex index,
                        const wire::Communication& record);
    // Begins the call in the model once some member has issued it and every rank has joined,
    // and passes on the starts known so far.
    void TryBeginCollective(Collective& collective);
    // Starts transfer `slot` once both sides have posted and started; its slot is then free.
    void TryStartTransfer(size_t slot);
    // A member's part of a call is over at ns-3's present.
    void CollectiveMemberDone(uint64_t comm, uint64_t index, uint32_t rank);
    void TransferSideDone(NodeIndex node);
    std::string CallText(const RankProcess& process, const wire::Communication& record) const;

    RankTimelines& m_timelines;
    ns3::Ptr<const ns3::eidolon::Topology> m_topology;
    ns3::Ptr<ns3::eidolon::CollectiveModel> m_collectives;
    std::unordered_map<uint64_t, Communicator> m_comms;
    std::map<std::pair<uint64_t, uint64_t>, Collective> m_collectiveCalls; // (comm, index)
    std::deque<Transfer> m_transferPool;
    // Slots of started transfers, reused (an MoE run's alltoalls would otherwise keep n^2 slots
    // each for the rest of the run).
    std::vector<size_t> m_freeTransfers;
    std::vector<ns3::Time> m_transferStarts; // a transfer's call: only its two ranks' are read
    // A transfer's call, kept between transfers: its GPU list (the communicator's, thousands of
    // ranks long) is copied only when the communicator changes.
    ns3::eidolon::CollectiveCall m_transferCall;
    // (comm, src, dst) -> transfers one side has posted and the other not yet (looked up only)
    std::unordered_map<PairKey, WaitQueue, PairKeyHash> m_transfers;
};

} // namespace eidolon::sim
