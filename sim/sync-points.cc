#include "sync-points.h"

#include "sim-errors.h"
#include "virtual-time.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace eidolon::sim
{

SyncPoints::SyncPoints(RankTimelines& timelines, ReplySink& replies)
    : m_timelines(timelines)
    , m_replies(replies)
{
}

// ------------------------------------------------------------------ syncs

void
SyncPoints::Sync(RankProcess& process, Peer peer, const wire::SyncRequest& request)
{
    process.clock = std::max(process.clock, request.clock_ns());
    if (process.TakeDrivingReport(2 * request.after_batch() + 1))
    {
        process.drivingThreads = std::max(1, request.driving_threads());
        process.allParked = request.all_parked();
    }
    PendingSync sync;
    sync.process = process.index;
    sync.peer = peer;
    sync.request = request.request();
    sync.what = request.what();
    sync.query = request.query();
    sync.clock = request.clock_ns();
    for (uint64_t op : request.ops())
    {
        NodeIndex found = process.Find(op);
        if (found == kNoNode)
        {
            throw std::runtime_error(
                fmt::format("{}: {} waits on unknown record {}", process.name, request.what(), op));
        }
        sync.nodes.push_back(found);
    }
    ++(sync.query ? process.outstandingQueries : process.outstandingSyncs);
    size_t index = m_syncs.size();
    if (sync.query)
    {
        m_openQueries.push_back(index);
    }
    m_syncs.push_back(std::move(sync));
    for (NodeIndex node : m_syncs[index].nodes)
    {
        if (m_timelines.EndOf(node) < 0)
        {
            m_waiting[node].push_back(index);
        }
    }
    Check(m_syncs[index]);
}

void
SyncPoints::NodeFinished(NodeIndex node)
{
    auto it = m_waiting.find(node);
    if (it == m_waiting.end())
    {
        return;
    }
    const std::vector<size_t> syncs = std::move(it->second);
    m_waiting.erase(it);
    for (size_t sync : syncs)
    {
        Check(m_syncs[sync]);
    }
}

void
SyncPoints::Check(PendingSync& sync)
{
    if (sync.answered)
    {
        return;
    }
    double latest = 0;
    for (NodeIndex node : sync.nodes)
    {
        if (m_timelines.EndOf(node) < 0)
        {
            return;
        }
        latest = std::max(latest, m_timelines.EndOf(node));
    }
    Answer(sync, latest);
}

void
SyncPoints::AnswerQueriesBy(double reached)
{
    auto open = m_openQueries.begin();
    for (size_t index : m_openQueries)
    {
        PendingSync& sync = m_syncs[index];
        if (sync.answered)
        {
            continue;
        }
        if (sync.clock <= reached)
        {
            // Every event before the caller's clock has run: an op not ended is not ended by
            // then (-1), and the caller goes on from its clock.
            Answer(sync, -1);
            continue;
        }
        *open++ = index;
    }
    m_openQueries.erase(open, m_openQueries.end());
}

void
SyncPoints::Answer(PendingSync& sync, double latest)
{
    sync.answered = true;
    RankProcess& process = m_timelines.Process(sync.process);
    --(sync.query ? process.outstandingQueries : process.outstandingSyncs);
    process.Heard(); // waiting was not silence
    if (!sync.query)
    {
        // The waiting thread goes on from `latest`. A query's caller goes on from its own clock:
        // taking the process to `latest` let ns-3 pass the work it then issued.
        process.clock = std::max(process.clock, latest);
    }
    wire::SyncReply reply;
    reply.set_request(sync.request);
    for (NodeIndex node : sync.nodes)
    {
        wire::OpEnd* end = reply.add_ends();
        end->set_op(m_timelines.IdOf(node));
        end->set_end_ns(m_timelines.EndOf(node)); // -1: not ended (a query answered by its clock)
    }
    m_replies.SyncAnswered(sync.peer, reply);
    // A released rank may issue work from `latest` on: stop ns-3 so the horizon is recomputed.
    StopNow();
}

// ------------------------------------------------------------------ exchanges

void
SyncPoints::Exchange(RankProcess& process, Peer peer, const wire::ExchangeRequest& request)
{
    process.clock = std::max(process.clock, request.clock_ns());
    if (process.TakeDrivingReport(2 * request.after_batch() + 1))
    {
        process.drivingThreads = std::max(1, request.driving_threads());
    }
    PendingExchange& exchange = m_exchanges[request.key()];
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
        PendingExchange::Waiter{process.index, peer, request.request(), request.what()});
    ++process.outstandingSyncs;
    if (int(exchange.entries.size()) < exchange.participants)
    {
        return;
    }
    Release(exchange);
    m_exchanges.erase(request.key());
}

void
SyncPoints::Release(PendingExchange& exchange)
{
    // Everyone is in: a barrier at the latest arrival.
    wire::ExchangeReply reply;
    for (const auto& [index, payload] : exchange.entries)
    {
        wire::ExchangeEntry* entry = reply.add_entries();
        entry->set_index(index);
        entry->set_payload(payload);
    }
    reply.set_time_ns(exchange.time);
    for (const PendingExchange::Waiter& waiter : exchange.waiters)
    {
        RankProcess& waiting = m_timelines.Process(waiter.process);
        --waiting.outstandingSyncs;
        waiting.Heard();
        waiting.clock = std::max(waiting.clock, exchange.time);
        reply.set_request(waiter.request);
        m_replies.ExchangeAnswered(waiter.peer, reply);
    }
}

// ------------------------------------------------------------------ diagnosis

std::string
SyncPoints::DescribeSyncs(const RankProcess& process) const
{
    std::string out;
    for (const PendingSync& sync : m_syncs)
    {
        if (sync.process != process.index || sync.answered)
        {
            continue;
        }
        out += fmt::format("  {}: blocked in {} at virtual {:.3f} ms\n", process.name, sync.what,
                           process.clock / 1e6);
    }
    return out;
}

std::string
SyncPoints::DescribeExchanges() const
{
    std::string out;
    for (const auto& [key, exchange] : m_exchanges)
    {
        for (const auto& waiter : exchange.waiters)
        {
            out += fmt::format("  {}: blocked in {} ({} of {} entries in)\n",
                               m_timelines.Process(waiter.process).name, waiter.what,
                               exchange.entries.size(), exchange.participants);
        }
    }
    return out;
}

} // namespace eidolon::sim
