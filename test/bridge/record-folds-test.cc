// How a stream's ops become records on the rank side (bridge/client/record-folds.h): the records
// are read back with the simulator's rules from bridge/README.md (a chain starts at max(ready, end
// of what it waits on) and ends at max(start + a, b); its busy time is [end - busy, end]; a span
// covers [start, end]) and compared with the ops replayed one by one, by hand and at random.
#define BOOST_TEST_MODULE record_folds
#include "record-folds.h"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace eidolon;
using Interval = std::pair<double, double>;

namespace
{
const std::string kLabel = "k";

gpu::PendingOp
Pending(uint64_t dep, double ready, double duration)
{
    return gpu::PendingOp{gpu::OpKind::Kernel, 0, 7, &kLabel, {dep}, ready, duration};
}

gpu::DeviceOp
Known(double start, double end)
{
    return gpu::DeviceOp{gpu::OpKind::Kernel, 0, 7, &kLabel, "test", start, start, end, 0};
}

double
Covered(std::vector<Interval> intervals)
{
    std::sort(intervals.begin(), intervals.end());
    double covered = 0;
    double reach = -1e300;
    for (auto [start, end] : intervals)
    {
        covered += std::max(0.0, end - std::max(start, reach));
        reach = std::max(reach, end);
    }
    return covered;
}

// One stream's pending ops as the client records them: `cuts[i]` closes the open chain before
// op i (the background thread sending a batch). Op 0 waits on record 1, which ends at `firstDep`.
std::vector<wire::Chain>
Record(const std::vector<std::pair<double, double>>& ops, const std::vector<bool>& cuts)
{
    std::vector<wire::Chain> chains;
    uint64_t last = 1;
    for (size_t i = 0; i < ops.size(); ++i)
    {
        const gpu::PendingOp op = Pending(last, ops[i].first, ops[i].second);
        if (!chains.empty() && !cuts[i] && bridge::ExtendsChain(chains.back(), op))
        {
            bridge::AddToChain(chains.back(), op);
            continue;
        }
        chains.emplace_back();
        bridge::StartChain(chains.back(), last + 1, op);
        last = last + 1;
    }
    return chains;
}

// The simulator's reading of the chains (each waits on the one before; the first on a record
// that ends at `firstDep`): their busy intervals, and the end of the last.
std::pair<std::vector<Interval>, double>
Replay(const std::vector<wire::Chain>& chains, double firstDep)
{
    std::vector<Interval> busy;
    double end = firstDep;
    for (const wire::Chain& chain : chains)
    {
        const double start = std::max(chain.ready_ns(), end);
        end = std::max(start + chain.a_ns(), chain.b_ns());
        busy.emplace_back(end - chain.busy_ns(), end);
    }
    return {busy, end};
}

// The ops one by one: op i starts at max(its ready, the end of op i - 1).
std::pair<std::vector<Interval>, double>
OneByOne(const std::vector<std::pair<double, double>>& ops, double firstDep)
{
    std::vector<Interval> busy;
    double end = firstDep;
    for (auto [ready, duration] : ops)
    {
        const double start = std::max(ready, end);
        end = start + duration;
        busy.emplace_back(start, end);
    }
    return {busy, end};
}
} // namespace

BOOST_AUTO_TEST_CASE(an_op_ready_after_the_chain_could_end_starts_a_new_chain)
{
    // Ops (ready, duration): (0, 10), (5, 10), (30, 10). The second is ready at 5, before the
    // chain's earliest end 10: it folds (a = b - ready = 20). The third is ready at 30, after the
    // earliest end 20: a new chain, so the idle gap [20, 30] stays between the records.
    const std::vector<std::pair<double, double>> ops{{0, 10}, {5, 10}, {30, 10}};
    const auto chains = Record(ops, std::vector<bool>(ops.size(), false));
    BOOST_REQUIRE_EQUAL(chains.size(), 2u);
    BOOST_TEST(chains[0].ready_ns() == 0);
    BOOST_TEST(chains[0].a_ns() == 20);
    BOOST_TEST(chains[0].b_ns() == 20);
    BOOST_TEST(chains[0].busy_ns() == 20);
    BOOST_TEST(chains[0].count() == 2u);
    BOOST_TEST(chains[1].ready_ns() == 30);
    BOOST_TEST(chains[1].deps_size() == 1);
    BOOST_TEST(chains[1].deps(0) == chains[0].id());
    // Waiting on a record that ends at 0: busy [0, 20] and [30, 40], 30 ns covered, end 40.
    auto [busy, end] = Replay(chains, 0);
    BOOST_TEST(end == 40);
    BOOST_TEST(Covered(busy) == 30);
    BOOST_TEST(busy[1].first == 30);
    // Waiting on a record that ends at 25: [25, 45] then [45, 55], no gap: 30 ns, end 55.
    std::tie(busy, end) = Replay(chains, 25);
    BOOST_TEST(end == 55);
    BOOST_TEST(busy[0].first == 25);
    BOOST_TEST(busy[1].first == 45);
}

BOOST_AUTO_TEST_CASE(a_span_stops_at_a_gap)
{
    // Known ops [0, 10], [10, 25], [30, 40]: the first two make one span [0, 25] (busy 25), the
    // third starts after a 5 ns gap and opens another, so the spans cover 35 ns, not 40.
    wire::Span span;
    bridge::StartSpan(span, Known(0, 10));
    BOOST_TEST(bridge::ExtendsSpan(span, Known(10, 25)));
    bridge::AddToSpan(span, Known(10, 25));
    BOOST_TEST(span.start_ns() == 0);
    BOOST_TEST(span.end_ns() == 25);
    BOOST_TEST(span.busy_ns() == 25);
    BOOST_TEST(span.count() == 2u);
    BOOST_TEST(!bridge::ExtendsSpan(span, Known(30, 40)));
}

BOOST_AUTO_TEST_CASE(records_are_busy_when_the_ops_are_wherever_the_batches_were_cut)
{
    // Host-bound and GPU-bound stretches at random (an op ready before or after the previous one
    // ends), cut into batches at random: the records' busy intervals cover exactly the ops' own
    // (so the idle time a run reports does not depend on where the background thread cut), and
    // the last end is the ops' end to the bit (whole ticks: bridge/README.md).
    std::mt19937_64 random(20261127);
    std::uniform_int_distribution<int> duration(1, 40);
    std::uniform_int_distribution<int> launchGap(0, 30);
    std::bernoulli_distribution cut(0.15);
    for (int trial = 0; trial < 200; ++trial)
    {
        std::vector<std::pair<double, double>> ops;
        double ready = 0;
        for (int i = 0; i < 60; ++i)
        {
            ready += launchGap(random);
            ops.emplace_back(ready, duration(random));
        }
        const double firstDep = std::uniform_int_distribution<int>(0, 200)(random);
        // Another stream's work on the GPU (communication), which the idle time is the
        // complement of together with this stream's.
        std::vector<Interval> other;
        for (double at = 0; at < ready + 2000; at += (launchGap(random) + 1) * 10.0)
        {
            other.emplace_back(at, at + duration(random));
        }
        auto [opBusy, opEnd] = OneByOne(ops, firstDep);
        opBusy.insert(opBusy.end(), other.begin(), other.end());
        for (int cutting = 0; cutting < 5; ++cutting)
        {
            std::vector<bool> cuts(ops.size());
            for (size_t i = 0; i < ops.size(); ++i)
            {
                cuts[i] = cutting > 0 && cut(random);
            }
            const auto chains = Record(ops, cuts);
            auto [busy, end] = Replay(chains, firstDep);
            busy.insert(busy.end(), other.begin(), other.end());
            BOOST_TEST(end == opEnd);
            BOOST_TEST(Covered(busy) == Covered(opBusy));
            for (const wire::Chain& chain : chains)
            {
                BOOST_TEST(chain.b_ns() == chain.ready_ns() + chain.a_ns()); // no gap inside
            }
        }
    }
}
