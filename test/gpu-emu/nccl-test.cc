// libnccl.so.2 against a stand-in simulator: a DeviceOpSink that accepts communicators of several
// ranks and records what the emulator hands it. Checks what eidolon-sim will receive from one
// process holding several ranks (ncclCommInitAll): membership, communicator ids, the records of
// collectives and of grouped sends/receives with their seq numbers, splits resolved in a group,
// shrink, and the implicit groups of AlltoAll, Gather and Scatter.
#define BOOST_TEST_MODULE gpu_emu_nccl
#include <boost/test/unit_test.hpp>

#include "emulator.h"

#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace eidolon::gpu;

namespace
{

struct Record
{
    int device;
    uint64_t streamId;
    CommMember member;
    uint64_t seq;
    std::vector<CommOp> ops;
};

class RecordingSink : public DeviceOpSink
{
public:
    bool Remote() const override { return true; }
    void OnOp(const DeviceOp&) override {}
    uint64_t OnPendingOp(const PendingOp&) override { return ++m_lastId; }
    uint64_t OnCommunication(const CommunicationRecord& record) override
    {
        records.push_back(
            Record{record.device, record.streamId, *record.member, record.seq, *record.ops});
        return ++m_lastId;
    }
    bool OnComm(const CommMember& member, bool leave, std::string*) override
    {
        (leave ? left : joined).push_back(member);
        return true;
    }
    std::vector<Ns> Resolve(const std::vector<uint64_t>& ops, Ns now, int, bool, const std::string&,
                            std::mutex&) override
    {
        return std::vector<Ns>(ops.size(), now + 1000);
    }

    std::vector<Record> records;
    std::vector<CommMember> joined;
    std::vector<CommMember> left;

private:
    uint64_t m_lastId = 0;
};

RecordingSink* g_sink = nullptr;

struct InstallSink
{
    InstallSink()
    {
        auto sink = std::make_unique<RecordingSink>();
        g_sink = sink.get();
        Emulator::Get().SetSink(std::move(sink));
    }
};
BOOST_TEST_GLOBAL_FIXTURE(InstallSink);

uint64_t
LegacyStreamId(int device)
{
    return Emulator::Get().DeviceAt(device).legacyStream->id;
}

// ncclCommInitAll over devices 0..n-1.
std::vector<ncclComm_t>
InitAll(int n)
{
    std::vector<ncclComm_t> comms(n, nullptr);
    BOOST_TEST_REQUIRE(ncclCommInitAll(comms.data(), n, nullptr) == ncclSuccess);
    return comms;
}

void
DestroyAll(const std::vector<ncclComm_t>& comms)
{
    for (ncclComm_t comm : comms)
    {
        BOOST_TEST(ncclCommDestroy(comm) == ncclSuccess);
    }
}

// NCCL_ALGO and the emulated release for one test case, unset again however the case ends (a
// failed requirement must not leave them to the cases after it).
struct NcclAlgoForTest
{
    NcclAlgoForTest(const char* algo, const char* version)
    {
        ::setenv("NCCL_ALGO", algo, 1);
        Release(version);
    }
    NcclAlgoForTest(const NcclAlgoForTest&) = delete;
    NcclAlgoForTest& operator=(const NcclAlgoForTest&) = delete;
    void Release(const char* version) { ::setenv("EIDOLON_NCCL_VERSION", version, 1); }
    ~NcclAlgoForTest()
    {
        ::unsetenv("NCCL_ALGO");
        ::unsetenv("EIDOLON_NCCL_VERSION");
    }
};

CommMember
MemberOf(ncclComm_t comm)
{
    CommMember member;
    int value = -1;
    BOOST_TEST(ncclCommCount(comm, &value) == ncclSuccess);
    member.nranks = value;
    BOOST_TEST(ncclCommUserRank(comm, &value) == ncclSuccess);
    member.rank = value;
    BOOST_TEST(ncclCommCuDevice(comm, &value) == ncclSuccess);
    member.device = value;
    return member;
}

} // namespace

BOOST_AUTO_TEST_CASE(init_all_registers_every_rank)
{
    g_sink->joined.clear();
    std::vector<ncclComm_t> comms = InitAll(3);
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 3u);
    for (int i = 0; i < 3; ++i)
    {
        const CommMember& member = g_sink->joined[i];
        BOOST_TEST(member.commId == g_sink->joined[0].commId);
        BOOST_TEST(member.nranks == 3);
        BOOST_TEST(member.rank == i);
        BOOST_TEST(member.device == i);
        CommMember queried = MemberOf(comms[i]);
        BOOST_TEST((queried.nranks == 3 && queried.rank == i && queried.device == i));
    }
    g_sink->left.clear();
    DestroyAll(comms);
    BOOST_TEST(g_sink->left.size() == 3u);
}

BOOST_AUTO_TEST_CASE(group_places_its_collectives_then_its_p2p_as_one_record_each_per_comm)
{
    std::vector<ncclComm_t> comms = InitAll(3);
    g_sink->records.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 3; ++i)
    {
        BOOST_TEST(ncclSend(nullptr, 100, ncclFloat, (i + 1) % 3, comms[i], nullptr) ==
                   ncclSuccess);
        BOOST_TEST(ncclAllReduce(nullptr, nullptr, 1000, ncclBfloat16, ncclSum, comms[i],
                                 nullptr) == ncclSuccess);
        BOOST_TEST(ncclRecv(nullptr, 100, ncclFloat, (i + 2) % 3, comms[i], nullptr) ==
                   ncclSuccess);
        BOOST_TEST(ncclAllGather(nullptr, nullptr, 10, ncclInt8, comms[i], nullptr) == ncclSuccess);
    }
    BOOST_TEST(g_sink->records.empty()); // nothing before the group ends
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    // Per communicator: its collectives as one record (NCCL runs them as one kernel), in issue
    // order, then its sends and receives as one record.
    BOOST_TEST_REQUIRE(g_sink->records.size() == 6u);
    for (int i = 0; i < 3; ++i)
    {
        const Record* r = &g_sink->records[2 * i];
        for (int k = 0; k < 2; ++k)
        {
            BOOST_TEST(r[k].member.rank == i);
            BOOST_TEST(r[k].device == i);
            BOOST_TEST(r[k].streamId == LegacyStreamId(i));
            BOOST_TEST(r[k].seq == uint64_t(k));
        }
        BOOST_TEST_REQUIRE(r[0].ops.size() == 2u);
        BOOST_TEST((r[0].ops[0].kind == CommOpKind::AllReduce));
        BOOST_TEST(r[0].ops[0].count == 1000u);
        BOOST_TEST(r[0].ops[0].dtype == int(ncclBfloat16));
        BOOST_TEST(r[0].ops[0].typeSize == 2);
        BOOST_TEST(r[0].ops[0].redop == int(ncclSum));
        BOOST_TEST((r[0].ops[1].kind == CommOpKind::AllGather));
        BOOST_TEST_REQUIRE(r[1].ops.size() == 2u);
        BOOST_TEST((r[1].ops[0].kind == CommOpKind::Send));
        BOOST_TEST(r[1].ops[0].peer == (i + 1) % 3);
        BOOST_TEST((r[1].ops[1].kind == CommOpKind::Recv));
        BOOST_TEST(r[1].ops[1].peer == (i + 2) % 3);
        BOOST_TEST(r[1].ops[1].typeSize == 4);
    }

    // Collectives of one group on two streams of a communicator: one record on the first stream
    // they used, which waits for the other (NCCL joins the streams around its one launch).
    auto other = reinterpret_cast<cudaStream_t>(Emulator::Get().CreateStream(1, 0, 0));
    g_sink->records.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 8, ncclFloat, ncclSum, comms[1], other) ==
               ncclSuccess);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 16, ncclFloat, ncclSum, comms[1], nullptr) ==
               ncclSuccess);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 32, ncclFloat, ncclSum, comms[1], other) ==
               ncclSuccess);
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->records.size() == 1u);
    BOOST_TEST_REQUIRE(g_sink->records[0].ops.size() == 3u);
    BOOST_TEST(g_sink->records[0].ops[0].count == 8u);
    BOOST_TEST(g_sink->records[0].ops[1].count == 16u);
    BOOST_TEST(g_sink->records[0].ops[2].count == 32u);
    BOOST_TEST(g_sink->records[0].seq == 2u);
    BOOST_TEST(g_sink->records[0].streamId == reinterpret_cast<Stream*>(other)->id);
    // The legacy stream waits for the launch: its next operation depends on the record.
    BOOST_TEST(!Emulator::Get().DeviceAt(1).legacyStream->waitDeps.empty());

    // Outside a group each call is its own record and takes the next seq.
    g_sink->records.clear();
    BOOST_TEST(ncclBroadcast(nullptr, nullptr, 5, ncclFloat, 2, comms[1], nullptr) == ncclSuccess);
    BOOST_TEST(ncclReduce(nullptr, nullptr, 5, ncclFloat, ncclMax, 1, comms[1], nullptr) ==
               ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->records.size() == 2u);
    BOOST_TEST(g_sink->records[0].seq == 3u);
    BOOST_TEST(g_sink->records[0].ops[0].root == 2);
    BOOST_TEST(g_sink->records[1].seq == 4u);
    BOOST_TEST(g_sink->records[1].ops[0].redop == int(ncclMax));
    DestroyAll(comms);
}

BOOST_AUTO_TEST_CASE(alltoall_gather_scatter_are_grouped_sends_and_receives)
{
    std::vector<ncclComm_t> comms = InitAll(3);
    g_sink->records.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (ncclComm_t comm : comms)
    {
        BOOST_TEST(ncclAlltoAll(nullptr, nullptr, 7, ncclFloat, comm, nullptr) == ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->records.size() == 3u);
    for (const Record& record : g_sink->records)
    {
        BOOST_TEST_REQUIRE(record.ops.size() == 6u);
        for (int peer = 0; peer < 3; ++peer)
        {
            BOOST_TEST((record.ops[2 * peer].kind == CommOpKind::Send));
            BOOST_TEST((record.ops[2 * peer + 1].kind == CommOpKind::Recv));
            BOOST_TEST(record.ops[2 * peer].peer == peer);
            BOOST_TEST(record.ops[2 * peer].count == 7u);
        }
    }

    g_sink->records.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (ncclComm_t comm : comms)
    {
        BOOST_TEST(ncclGather(nullptr, nullptr, 4, ncclFloat, 1, comm, nullptr) == ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->records.size() == 3u);
    BOOST_TEST(g_sink->records[0].ops.size() == 1u); // rank 0: send to the root
    BOOST_TEST(g_sink->records[1].ops.size() == 4u); // the root: send to itself, 3 receives
    BOOST_TEST(g_sink->records[2].ops.size() == 1u);

    g_sink->records.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (ncclComm_t comm : comms)
    {
        BOOST_TEST(ncclScatter(nullptr, nullptr, 4, ncclFloat, 0, comm, nullptr) == ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->records.size() == 3u);
    BOOST_TEST(g_sink->records[0].ops.size() == 4u); // the root: 3 sends, receive from itself
    BOOST_TEST((g_sink->records[1].ops.size() == 1u &&
                g_sink->records[1].ops[0].kind == CommOpKind::Recv &&
                g_sink->records[1].ops[0].peer == 0));
    DestroyAll(comms);
}

BOOST_AUTO_TEST_CASE(split_in_a_group_orders_by_key_then_parent_rank)
{
    g_sink->joined.clear();
    std::vector<ncclComm_t> comms = InitAll(4);
    uint64_t parentId = g_sink->joined.at(0).commId;
    const int colors[4] = {0, 1, 0, NCCL_SPLIT_NOCOLOR};
    const int keys[4] = {5, 0, 1, 0};
    std::vector<ncclComm_t> children(4, nullptr);
    g_sink->joined.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 4; ++i)
    {
        BOOST_TEST(ncclCommSplit(comms[i], colors[i], keys[i], &children[i], nullptr) ==
                   ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE((children[0] && children[1] && children[2]));
    BOOST_TEST(children[3] == nullptr);
    CommMember c0 = MemberOf(children[0]), c1 = MemberOf(children[1]), c2 = MemberOf(children[2]);
    BOOST_TEST((c0.nranks == 2 && c0.rank == 1 && c0.device == 0)); // key 5
    BOOST_TEST((c2.nranks == 2 && c2.rank == 0 && c2.device == 2)); // key 1
    BOOST_TEST((c1.nranks == 1 && c1.rank == 0 && c1.device == 1));
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 2u); // one-rank communicators stay local
    BOOST_TEST(g_sink->joined[0].commId == g_sink->joined[1].commId);
    BOOST_TEST(g_sink->joined[0].commId != parentId);
    uint64_t firstChildId = g_sink->joined[0].commId;
    for (ncclComm_t child : {children[0], children[1], children[2]})
    {
        BOOST_TEST(ncclCommDestroy(child) == ncclSuccess);
    }

    // A second split of the same parent gets another id.
    std::vector<ncclComm_t> again(4, nullptr);
    g_sink->joined.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 4; ++i)
    {
        BOOST_TEST(ncclCommSplit(comms[i], 0, 0, &again[i], nullptr) == ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 4u);
    for (const CommMember& member : g_sink->joined)
    {
        BOOST_TEST(member.nranks == 4);
        BOOST_TEST(member.commId == g_sink->joined[0].commId);
    }
    BOOST_TEST(g_sink->joined[0].commId != firstChildId);
    BOOST_TEST(g_sink->joined[0].commId != parentId);
    DestroyAll(again);

    // Outside a group the colors of the other ranks must be gathered from their processes, which
    // needs the simulator (this sink has none to exchange with).
    ncclComm_t lone = nullptr;
    BOOST_TEST(ncclCommSplit(comms[0], 0, 0, &lone, nullptr) == ncclInvalidUsage);
    BOOST_TEST(lone == nullptr);
    BOOST_TEST(std::strstr(ncclGetLastError(nullptr), "colors cannot be gathered") != nullptr);
    DestroyAll(comms);
}

BOOST_AUTO_TEST_CASE(shrink_drops_the_excluded_ranks)
{
    std::vector<ncclComm_t> comms = InitAll(3);
    int excluded[1] = {1};
    ncclComm_t a = nullptr, b = nullptr;
    g_sink->joined.clear();
    BOOST_TEST(ncclCommShrink(comms[0], excluded, 1, &a, nullptr, NCCL_SHRINK_DEFAULT) ==
               ncclSuccess);
    BOOST_TEST(ncclCommShrink(comms[2], excluded, 1, &b, nullptr, NCCL_SHRINK_ABORT) ==
               ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 2u);
    BOOST_TEST(g_sink->joined[0].commId == g_sink->joined[1].commId);
    CommMember ma = MemberOf(a), mb = MemberOf(b);
    BOOST_TEST((ma.nranks == 2 && ma.rank == 0 && mb.nranks == 2 && mb.rank == 1));
    BOOST_TEST(ncclCommDestroy(a) == ncclSuccess);
    BOOST_TEST(ncclCommDestroy(b) == ncclSuccess);
    DestroyAll(comms);
}

BOOST_AUTO_TEST_CASE(unique_ids_name_communicators)
{
    ncclUniqueId id;
    BOOST_TEST(ncclGetUniqueId(&id) == ncclSuccess);
    g_sink->joined.clear();
    std::vector<ncclComm_t> comms(2, nullptr);
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 2; ++i)
    {
        Emulator::Get().SetCurrentDevice(i);
        BOOST_TEST(ncclCommInitRank(&comms[i], 2, id, i) == ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    Emulator::Get().SetCurrentDevice(0);
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 2u);
    BOOST_TEST(g_sink->joined[0].commId == g_sink->joined[1].commId);
    BOOST_TEST((g_sink->joined[0].device == 0 && g_sink->joined[1].device == 1));
    DestroyAll(comms);
}

// ncclConfig_t's minCTAs / maxCTAs reach the simulator with the communicator (its channel
// bounds); NCCL_MAX_CTAS overrides the configuration, as in NCCL; a split without a configuration
// inherits its parent's; values NCCL refuses fail ncclCommInitRankConfig with
// ncclInvalidArgument (init.cc, parseCommConfig: positive, min <= max).
BOOST_AUTO_TEST_CASE(config_ctas_travel_with_the_communicator)
{
    // Both ranks of a communicator of two, on devices 0 and 1, each with `config`.
    auto init = [](ncclConfig_t* config, std::vector<ncclComm_t>& comms)
    {
        ncclUniqueId id;
        BOOST_TEST(ncclGetUniqueId(&id) == ncclSuccess);
        comms.assign(2, nullptr);
        ncclResult_t rc = ncclSuccess;
        BOOST_TEST(ncclGroupStart() == ncclSuccess);
        for (int i = 0; i < 2; ++i)
        {
            Emulator::Get().SetCurrentDevice(i);
            ncclResult_t one = ncclCommInitRankConfig(&comms[i], 2, id, i, config);
            rc = rc == ncclSuccess ? one : rc;
        }
        ncclResult_t end = ncclGroupEnd();
        Emulator::Get().SetCurrentDevice(0);
        return rc == ncclSuccess ? end : rc;
    };
    g_sink->joined.clear();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.minCTAs = 2;
    config.maxCTAs = 8;
    std::vector<ncclComm_t> comms;
    BOOST_TEST_REQUIRE(init(&config, comms) == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 2u);
    for (const CommMember& member : g_sink->joined)
    {
        BOOST_TEST(member.minCtas == 2);
        BOOST_TEST(member.maxCtas == 8);
    }
    std::vector<ncclComm_t> children(2, nullptr);
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 2; ++i)
    {
        BOOST_TEST(ncclCommSplit(comms[i], 0, i, &children[i], nullptr) == ncclSuccess);
    }
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST_REQUIRE(g_sink->joined.size() == 4u);
    BOOST_TEST(g_sink->joined[2].maxCtas == 8); // inherited
    BOOST_TEST(g_sink->joined[3].minCtas == 2);
    DestroyAll(children);
    DestroyAll(comms);

    setenv("NCCL_MAX_CTAS", "4", 1);
    BOOST_TEST_REQUIRE(init(&config, comms) == ncclSuccess);
    unsetenv("NCCL_MAX_CTAS");
    BOOST_TEST(g_sink->joined.back().minCtas == 2);
    BOOST_TEST(g_sink->joined.back().maxCtas == 4);
    DestroyAll(comms);

    BOOST_TEST_REQUIRE(init(nullptr, comms) == ncclSuccess);
    BOOST_TEST(g_sink->joined.back().minCtas == 0); // unset: NCCL's own bounds
    BOOST_TEST(g_sink->joined.back().maxCtas == 0);
    DestroyAll(comms);

    for (auto [minCtas, maxCtas] : {std::pair{0, 8}, std::pair{8, 4}, std::pair{2, -1}})
    {
        ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
        bad.minCTAs = minCtas;
        bad.maxCTAs = maxCtas;
        ncclComm_t refused = nullptr;
        ncclUniqueId id;
        BOOST_TEST(ncclGetUniqueId(&id) == ncclSuccess);
        BOOST_TEST(ncclCommInitRankConfig(&refused, 2, id, 0, &bad) == ncclInvalidArgument);
        BOOST_TEST(refused == nullptr);
    }
}

// NCCL_ALGO=Tree leaves Broadcast nothing NCCL implements (it broadcasts on rings only): NCCL 2.24+
// fails the call with ncclInvalidUsage and its own warning, and places nothing; an AllReduce runs
// Tree and is placed. NCCL reads the variable at init, so it is set before the communicators are
// made. NCCL 2.21 runs such a call on Ring instead, so nothing fails there.
// fp8 (ncclFloat8e4m3 = 10, ncclFloat8e5m2 = 11) exists from NCCL 2.24 (nccl.h; 2.18-2.23 have
// ncclNumTypes 10, so argcheck.cc refuses "invalid type 10"), and 2.24+ refuse fp8 collectives
// below sm90 (enqueue.cc: "FP8 reduction support begins with sm90 capable devices."). The test's
// GPU is an sm80 one; a send of fp8 only moves bytes and goes through.
BOOST_AUTO_TEST_CASE(fp8_exists_from_2_24_and_reduces_from_sm90)
{
    NcclAlgoForTest env("Ring", "2.21.5");
    std::vector<ncclComm_t> comms = InitAll(2);
    g_sink->records.clear();
    BOOST_TEST(ncclAllGather(nullptr, nullptr, 5, ncclFloat8e4m3, comms[0], nullptr) ==
               ncclInvalidArgument);
    BOOST_TEST(std::string(ncclGetLastError(comms[0])) == "AllGather : invalid type 10");
    BOOST_TEST(g_sink->records.empty());
    DestroyAll(comms);

    env.Release("2.24.3");
    BOOST_TEST_REQUIRE(Emulator::Get().Spec().computeCapabilityMajor == 8);
    comms = InitAll(2);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 5, ncclFloat8e5m2, ncclSum, comms[0], nullptr) ==
               ncclInvalidArgument);
    BOOST_TEST(std::string(ncclGetLastError(comms[0])) ==
               "FP8 reduction support begins with sm90 capable devices.");
    BOOST_TEST(g_sink->records.empty());
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    BOOST_TEST(ncclSend(nullptr, 5, ncclFloat8e4m3, 1, comms[0], nullptr) == ncclSuccess);
    BOOST_TEST(ncclRecv(nullptr, 5, ncclFloat8e4m3, 0, comms[1], nullptr) == ncclSuccess);
    BOOST_TEST(ncclGroupEnd() == ncclSuccess);
    BOOST_TEST(g_sink->records.size() == 2u);
    DestroyAll(comms);
}

BOOST_AUTO_TEST_CASE(a_call_nccl_algo_leaves_nothing_fails_as_in_nccl)
{
    NcclAlgoForTest env("Tree", "2.24.3");
    std::vector<ncclComm_t> comms = InitAll(2);
    g_sink->records.clear();
    BOOST_TEST(ncclBroadcast(nullptr, nullptr, 5, ncclFloat, 0, comms[0], nullptr) ==
               ncclInvalidUsage);
    BOOST_TEST(std::string(ncclGetLastError(comms[0])) ==
               "Error : no algorithm/protocol available for function Broadcast with datatype "
               "ncclFloat32. NCCL_ALGO was set to Tree.");
    BOOST_TEST(ncclAllGather(nullptr, nullptr, 5, ncclBfloat16, comms[1], nullptr) ==
               ncclInvalidUsage);
    BOOST_TEST(g_sink->records.empty());
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 5, ncclFloat, ncclSum, comms[0], nullptr) ==
               ncclSuccess);
    BOOST_TEST(g_sink->records.size() == 1u);
    DestroyAll(comms);

    env.Release("2.21.5");
    comms = InitAll(2);
    BOOST_TEST(ncclBroadcast(nullptr, nullptr, 5, ncclFloat, 0, comms[0], nullptr) == ncclSuccess);
    DestroyAll(comms);
}

// Inside a group, NCCL chooses an algorithm at ncclGroupEnd (enqueue.cc, ncclPrepareTasks): a call
// NCCL_ALGO leaves nothing returns ncclSuccess and ncclGroupEnd fails the whole group, of which
// nothing is placed.
BOOST_AUTO_TEST_CASE(a_grouped_call_nccl_algo_leaves_nothing_fails_its_group_end)
{
    NcclAlgoForTest env("Tree", "2.24.3");
    std::vector<ncclComm_t> comms = InitAll(2);
    g_sink->records.clear();
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 5, ncclFloat, ncclSum, comms[0], nullptr) ==
               ncclSuccess);
    BOOST_TEST(ncclBroadcast(nullptr, nullptr, 5, ncclFloat, 0, comms[0], nullptr) == ncclSuccess);
    BOOST_TEST(ncclGroupEnd() == ncclInvalidUsage);
    BOOST_TEST(std::string(ncclGetLastError(comms[0])) ==
               "Error : no algorithm/protocol available for function Broadcast with datatype "
               "ncclFloat32. NCCL_ALGO was set to Tree.");
    BOOST_TEST(g_sink->records.empty());
    DestroyAll(comms);
}

// NCCL reads NCCL_ALGO / NCCL_PROTO while it makes a communicator (init.cc -> ncclTopoTuneModel ->
// parseList): from 2.24 a name it does not know fails the creation with ncclInvalidUsage and its
// warning, a nonblocking one through ncclCommGetAsyncError; 2.18-2.23 skip the name and make the
// communicator. "collnet" is such a name: NCCL's are CollNetDirect and CollNetChain.
BOOST_AUTO_TEST_CASE(nccl_algo_nccl_cannot_read_fails_the_communicator)
{
    NcclAlgoForTest env("ring,collnet", "2.24.3");
    g_sink->joined.clear();
    ncclUniqueId id;
    BOOST_TEST(ncclGetUniqueId(&id) == ncclSuccess);
    ncclComm_t comm = nullptr;
    BOOST_TEST(ncclCommInitRank(&comm, 1, id, 0) == ncclInvalidUsage);
    BOOST_TEST(comm == nullptr);
    BOOST_TEST(std::string(ncclGetLastError(nullptr)) ==
               "Unrecognized element token \"collnet\" when parsing \"ring,collnet\"");
    BOOST_TEST(g_sink->joined.empty());

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    BOOST_TEST(ncclGetUniqueId(&id) == ncclSuccess);
    BOOST_TEST(ncclCommInitRankConfig(&comm, 1, id, 0, &config) == ncclInProgress);
    BOOST_TEST_REQUIRE(comm != nullptr);
    ncclResult_t async = ncclSuccess;
    BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    BOOST_TEST(async == ncclInProgress);
    BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    BOOST_TEST(async == ncclInvalidUsage);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 5, ncclFloat, ncclSum, comm, nullptr) ==
               ncclInvalidUsage);
    BOOST_TEST(ncclCommAbort(comm) == ncclSuccess);
    BOOST_TEST(g_sink->joined.empty());

    // Inside a group NCCL queues the init (ncclAsyncLaunch, the communicator already handed out)
    // and runs it at ncclGroupEnd, which fails.
    BOOST_TEST(ncclGetUniqueId(&id) == ncclSuccess);
    comm = nullptr;
    BOOST_TEST(ncclGroupStart() == ncclSuccess);
    BOOST_TEST(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
    BOOST_TEST(ncclGroupEnd() == ncclInvalidUsage);
    BOOST_TEST_REQUIRE(comm != nullptr);
    BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    BOOST_TEST(async == ncclInvalidUsage);
    BOOST_TEST(ncclAllReduce(nullptr, nullptr, 5, ncclFloat, ncclSum, comm, nullptr) ==
               ncclInvalidUsage);
    BOOST_TEST(ncclCommDestroy(comm) == ncclSuccess);
    BOOST_TEST(g_sink->joined.empty());

    // A nonblocking init inside a group: the call returns ncclSuccess (the job is only queued),
    // the group's end ncclInProgress (NCCL launches it on a thread), and the communicator its
    // error once it has run.
    auto initInGroup = [&config]()
    {
        ncclUniqueId groupId;
        BOOST_TEST(ncclGetUniqueId(&groupId) == ncclSuccess);
        ncclComm_t made = nullptr;
        BOOST_TEST(ncclGroupStart() == ncclSuccess);
        BOOST_TEST(ncclCommInitRankConfig(&made, 1, groupId, 0, &config) == ncclSuccess);
        BOOST_TEST(ncclGroupEnd() == ncclInProgress);
        return made;
    };
    comm = initInGroup();
    BOOST_TEST_REQUIRE(comm != nullptr);
    BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    BOOST_TEST(async == ncclInProgress);
    BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    BOOST_TEST(async == ncclInvalidUsage);
    BOOST_TEST(ncclCommAbort(comm) == ncclSuccess);

    env.Release("2.21.5");
    // The same where the init succeeds: ncclInProgress from the group's end, then ready.
    comm = initInGroup();
    BOOST_TEST_REQUIRE(comm != nullptr);
    do
    {
        BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
    } while (async == ncclInProgress);
    BOOST_TEST(async == ncclSuccess);
    BOOST_TEST(ncclCommDestroy(comm) == ncclSuccess);

    std::vector<ncclComm_t> comms = InitAll(2);
    BOOST_TEST(g_sink->joined.size() == 2u);
    DestroyAll(comms);
}
