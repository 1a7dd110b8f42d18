// One rank process as the simulator sees it: where it runs (node, the global GPU of each of its
// devices), its host clock, the order of its batches, the records it has sent (by id) and how many
// of its threads wait.
#pragma once

#include "reply-sink.h"
#include "wire.pb.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace eidolon::sim
{

// A record's place in the rank timelines (RankTimelines::Node).
using NodeIndex = size_t;
constexpr NodeIndex kNoNode = SIZE_MAX;

// A sync, exchange or goodbye that follows a batch not yet arrived (another thread's socket
// overtook it): handled once that batch is in.
struct DeferredRequest
{
    Peer peer = 0;
    std::variant<wire::SyncRequest, wire::ExchangeRequest, wire::Goodbye> request;
};

struct RankProcess
{
    int index = 0;
    std::string name;
    // No launcher named it (no rank, no EIDOLON_RANK_NAME: the client's "pid<pid>"): it takes the
    // name "worker<gpu>" from the first GPU it uses, which does not depend on when it started.
    bool unnamed = false;
    int pid = 0;
    std::string hostname;
    int worldRank = -1;
    int node = 0;
    std::vector<int32_t> gpus; // local device -> global GPU index (-1: none)
    double clock = 0;
    bool goodbye = false;
    int exitStatus = -1; // from the goodbye (0-255, as a shell sees it); -1 when not known
    bool dead = false;
    uint64_t nextBatch = 1;
    std::map<uint64_t, wire::Batch> early; // batches that overtook earlier ones
    std::vector<DeferredRequest> waitingForBatch;
    int drivingThreads = 1;
    int outstandingSyncs = 0;   // syncs and exchanges that hold a thread until answered
    int outstandingQueries = 0; // queries (SyncRequest.query): their threads go on from their clock
    bool allParked = false;     // every driving thread is parked (Batch.all_parked)
    // Which report the two fields above come from, in the order the process sent them: 2 x seq for
    // a batch, 2 x after_batch + 1 for a sync or exchange (sent after that batch and before the
    // next). Batches and requests travel on different sockets and may arrive in either order; an
    // older report never overrides a newer one (TakeDrivingReport).
    uint64_t drivingReport = 0;
    // Whether a report with `key` is newer than the one the driving fields hold; if so it becomes
    // theirs.
    bool TakeDrivingReport(uint64_t key)
    {
        if (key < drivingReport)
        {
            return false;
        }
        drivingReport = key;
        return true;
    }
    std::chrono::steady_clock::time_point lastHeard = std::chrono::steady_clock::now();
    bool graceWarned = false;
    std::vector<wire::DeviceUsage> usage;
    std::vector<wire::Pricing> pricing;

    // Record id -> node. A rank numbers its records 1, 2, 3, ... so a vector indexed by id is
    // the map (kNoNode: no such record).
    std::vector<NodeIndex> records;
    NodeIndex Find(uint64_t id) const { return id < records.size() ? records[id] : kNoNode; }
    bool Insert(uint64_t id, NodeIndex node)
    {
        if (id > records.size() + (1u << 20))
        {
            return false; // not the dense numbering the client uses
        }
        if (id >= records.size())
        {
            records.resize(std::max<size_t>(id + 1, records.size() * 2), kNoNode);
        }
        records[id] = node;
        return true;
    }

    bool Live() const { return !goodbye && !dead; }
    // Every driving thread waits for the simulator; or every one is parked, waiting for threads
    // that drive no GPU, and one of those waits for an answer. (A query alone does not block:
    // its thread goes on from its own clock, which the simulator must not pass.)
    bool IsBlocked() const
    {
        return (outstandingSyncs > 0 && outstandingSyncs >= drivingThreads) ||
               (allParked && outstandingSyncs + outstandingQueries > 0);
    }
    // Heard from, or released from a wait: silence is counted from here.
    void Heard() { lastHeard = std::chrono::steady_clock::now(); }
};

} // namespace eidolon::sim
