// Where ranks wait on the simulator: a sync waits for the ends of some of its records and is
// answered once they are all decided; an exchange (a barrier with payloads, e.g. NCCL's
// bootstrap) is answered to every participant once all are in, at the latest arrival. Answers go
// to the ReplySink.
#pragma once

#include "rank-timelines.h"
#include "reply-sink.h"

#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace eidolon::sim
{

class SyncPoints
{
public:
    SyncPoints(RankTimelines& timelines, ReplySink& replies);

    // `process` waits (from `peer`) for the records `request` names; throws naming an unknown
    // record. Answered at once when they have all ended.
    void Sync(RankProcess& process, Peer peer, const wire::SyncRequest& request);
    // A record has ended: answers the syncs that waited only for it and others already ended.
    void NodeFinished(NodeIndex node);
    // ns-3 has run every event before `reached`: answers the queries (SyncRequest.query) whose
    // caller's clock is not past it, -1 for the ops not ended. A query's caller goes on from its
    // own clock, so its process holds the horizon there (it is not blocked), and the ends are
    // never simulated past it for the answer.
    void AnswerQueriesBy(double reached);
    // `process` adds its entries to the exchange `request.key()`. Throws ProgramError when ranks
    // disagree on the participants or give an index twice.
    void Exchange(RankProcess& process, Peer peer, const wire::ExchangeRequest& request);

    // "  rank0: blocked in cudaStreamSynchronize at virtual 1.000 ms" per open sync of `process`.
    std::string DescribeSyncs(const RankProcess& process) const;
    // "  rank1: blocked in ncclCommInitRank (1 of 2 entries in)" per waiting participant.
    std::string DescribeExchanges() const;

private:
    struct PendingSync
    {
        int process = 0;
        Peer peer = 0;
        uint64_t request = 0;
        std::vector<NodeIndex> nodes;
        std::string what;
        bool query = false; // SyncRequest.query: the caller's clock does not move to the ends
        double clock = 0;   // the caller's clock (a query is answered once ns-3 has reached it)
        bool answered = false;
    };
    struct PendingExchange
    {
        int participants = 0;
        std::map<int, std::string> entries;
        double time = 0;
        struct Waiter
        {
            int process;
            Peer peer;
            uint64_t request;
            std::string what;
        };
        std::vector<Waiter> waiters;
    };

    void Check(PendingSync& sync);
    // Replies to `sync`: every op ended (`latest` the latest), or a query answered by its clock.
    void Answer(PendingSync& sync, double latest);
    void Release(PendingExchange& exchange);

    RankTimelines& m_timelines;
    ReplySink& m_replies;
    std::deque<PendingSync> m_syncs;
    std::vector<size_t> m_openQueries; // indices into m_syncs of queries not yet answered
    // Record -> the syncs waiting for it to end (records' own storage stays small: most are never
    // waited on).
    std::unordered_map<NodeIndex, std::vector<size_t>> m_waiting;
    std::map<std::string, PendingExchange> m_exchanges;
};

} // namespace eidolon::sim
