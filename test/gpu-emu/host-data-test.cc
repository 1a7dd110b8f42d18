// The pieces of the host-visible data rule (gpu-emu/README.md "Device memory and data") on their
// own: HostBacking's page accounting and cap, the reductions' arithmetic and conversions, and the
// data exchange's board (two ranks of a run as two DataExchange objects in this process).
// Every expected value is worked out by hand in the comment next to it.
#define BOOST_TEST_MODULE gpu_emu_host_data
#include <boost/test/unit_test.hpp>

#include "data-exchange.h"
#include "exchange-board.h"
#include "host-backing.h"
#include "reductions.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using eidolon::gpu::HostBacking;

namespace
{
constexpr uint64_t kPage = HostBacking::kPage; // 4096
constexpr uint64_t kBase = 0x100000000ull;     // a made-up device address, never dereferenced
} // namespace

BOOST_AUTO_TEST_CASE(backing_counts_whole_pages_and_reads_zeros_elsewhere)
{
    HostBacking backing(1ull << 30);
    backing.Track(kBase, 1ull << 20, 0);
    // 10 bytes straddling the first page boundary (4090..4099) back pages 0 and 1: 8192 bytes.
    std::vector<char> data(10, 'x');
    backing.Write(kBase + 4090, data.data(), data.size());
    BOOST_TEST(backing.Stats().backedBytes == 2 * kPage);
    std::vector<char> back(20, '?');
    backing.Read(kBase + 4085, back.data(), back.size());
    // 4085..4089 were backed (page 0) but never written: zeros; 4090..4099 'x'; 4100.. zeros.
    BOOST_TEST(back[4] == 0);
    BOOST_TEST(back[5] == 'x');
    BOOST_TEST(back[14] == 'x');
    BOOST_TEST(back[15] == 0);
    // Far away, never written: zeros, and no page backed for reading.
    backing.Read(kBase + 500000, back.data(), back.size());
    BOOST_TEST(back[0] == 0);
    BOOST_TEST(backing.Stats().backedBytes == 2 * kPage);
    BOOST_TEST(!backing.AnyBacked(kBase + 3 * kPage, kPage));
    BOOST_TEST(backing.AnyBacked(kBase + kPage, 1));
}

BOOST_AUTO_TEST_CASE(the_cap_keeps_what_fits_and_setting_zero_gives_pages_back)
{
    HostBacking backing(3 * kPage);
    backing.Track(kBase, 16 * kPage, 1);
    // 5 pages written, 3 fit: 2 pages (8192 bytes) dropped.
    std::vector<char> data(5 * kPage, 7);
    backing.Write(kBase, data.data(), data.size());
    BOOST_TEST(backing.Stats().backedBytes == 3 * kPage);
    BOOST_TEST(backing.Stats().droppedBytes == 2 * kPage);
    BOOST_TEST(backing.DeviceStats(1).droppedBytes == 2 * kPage);
    std::vector<char> back(5 * kPage);
    backing.Read(kBase, back.data(), back.size());
    BOOST_TEST(back[3 * kPage - 1] == 7);
    BOOST_TEST(back[3 * kPage] == 0);
    // Zeroing bytes 100 .. 2 pages + 100 frees the one whole page inside (page 1) and zeros the
    // partial ones in place: 2 pages stay backed; the peak stays 3.
    backing.Fill(kBase + 100, 0, 2 * kPage);
    BOOST_TEST(backing.Stats().backedBytes == 2 * kPage);
    BOOST_TEST(backing.Stats().peakBytes == 3 * kPage);
    backing.Read(kBase, back.data(), 3 * kPage);
    BOOST_TEST(back[99] == 7);
    BOOST_TEST(back[100] == 0);
    BOOST_TEST(back[2 * kPage + 99] == 0);
    BOOST_TEST(back[2 * kPage + 100] == 7);
    // Untracking gives everything back.
    backing.Untrack(kBase);
    BOOST_TEST(backing.Stats().backedBytes == 0u);
}

BOOST_AUTO_TEST_CASE(large_writes_leave_a_quarter_of_the_cap_to_small_ones)
{
    HostBacking backing(8 * kPage);
    backing.Track(kBase, 4ull << 20, 0);
    // A 2 MiB write is large (> 1 MiB): it may fill 3/4 of 8 pages, 6 pages.
    std::vector<char> big(2u << 20, 1);
    backing.Write(kBase, big.data(), big.size());
    BOOST_TEST(backing.Stats().backedBytes == 6 * kPage);
    // Two small one-page writes elsewhere still fit: 8 pages; a third is dropped.
    std::vector<char> page(kPage, 2);
    backing.Write(kBase + (3u << 20), page.data(), kPage);
    backing.Write(kBase + (3u << 20) + kPage, page.data(), kPage);
    backing.Write(kBase + (3u << 20) + 2 * kPage, page.data(), kPage);
    BOOST_TEST(backing.Stats().backedBytes == 8 * kPage);
    BOOST_TEST(backing.Stats().droppedBytes == (2u << 20) - 6 * kPage + kPage);
}

BOOST_AUTO_TEST_CASE(moves_carry_data_and_zeros)
{
    HostBacking backing(1ull << 30);
    backing.Track(kBase, 8 * kPage, 0);
    backing.Track(kBase + 8 * kPage, 8 * kPage, 0);
    uint32_t word = 0xA5A5A5A5u;
    backing.Write(kBase + 16, &word, 4);
    // Copy 64 bytes from 0 (bytes 16..19 written) to the second allocation.
    backing.Move(kBase + 8 * kPage, kBase, 64);
    uint32_t read = 0;
    backing.Read(kBase + 8 * kPage + 16, &read, 4);
    BOOST_TEST(read == word);
    // Overlapping move by 2 bytes up: bytes 18..21 hold the word.
    backing.Move(kBase + 2, kBase, 64);
    backing.Read(kBase + 18, &read, 4);
    BOOST_TEST(read == word);
    // A move from never-written memory zeros the destination.
    backing.Move(kBase + 8 * kPage, kBase + 4 * kPage, 64);
    backing.Read(kBase + 8 * kPage + 16, &read, 4);
    BOOST_TEST(read == 0u);
}

BOOST_AUTO_TEST_CASE(half_and_bfloat16_conversions_round_to_nearest_even)
{
    using namespace eidolon::gpu;
    BOOST_TEST(FloatToHalf(1.0f) == 0x3C00);          // exponent 15, mantissa 0
    BOOST_TEST(FloatToHalf(-2.0f) == 0xC000);         // sign, exponent 16
    BOOST_TEST(FloatToHalf(65504.0f) == 0x7BFF);      // the largest half
    BOOST_TEST(FloatToHalf(70000.0f) == 0x7C00);      // overflow: infinity
    BOOST_TEST(FloatToHalf(5.9604645e-8f) == 0x0001); // 2^-24, the smallest subnormal
    // 1 + 2^-11 is halfway between 1 (0x3C00) and 1 + 2^-10 (0x3C01): to even, 0x3C00;
    // 1 + 3 x 2^-11 is halfway between 0x3C01 and 0x3C02: to even, 0x3C02.
    BOOST_TEST(FloatToHalf(1.0f + 1.0f / 2048) == 0x3C00);
    BOOST_TEST(FloatToHalf(1.0f + 3.0f / 2048) == 0x3C02);
    BOOST_TEST(HalfToFloat(0x3555) == 0.333251953125f); // 1.0101010101b x 2^-2
    BOOST_TEST(HalfToFloat(0x0001) == 5.9604644775390625e-8f);
    // bfloat16 keeps float's top 16 bits: 1 + 2^-8 (0x3F808000) is halfway: to even, 0x3F80;
    // 1 + 3 x 2^-8 (0x3F81_8000) to even: 0x3F82.
    BOOST_TEST(FloatToBfloat16(1.0f + 1.0f / 256) == 0x3F80);
    BOOST_TEST(FloatToBfloat16(1.0f + 3.0f / 256) == 0x3F82);
    BOOST_TEST(Bfloat16ToFloat(0xC040) == -3.0f);
}

BOOST_AUTO_TEST_CASE(reductions_compute_nccl_operators)
{
    using namespace eidolon::gpu;
    std::string error;
    // int32 sum (ncclInt32 = 2, ncclSum = 0): {1, -2} + {10, 20} = {11, 18}.
    int32_t acc[2] = {1, -2}, in[2] = {10, 20};
    BOOST_TEST(Combine(2, 0, reinterpret_cast<char*>(acc), reinterpret_cast<char*>(in), 2, &error));
    BOOST_TEST(acc[0] == 11);
    BOOST_TEST(acc[1] == 18);
    // uint8 max (1, 2) and min (1, 3).
    uint8_t bytes[2] = {5, 200}, other[2] = {9, 100};
    Combine(1, 2, reinterpret_cast<char*>(bytes), reinterpret_cast<char*>(other), 2, &error);
    BOOST_TEST(bytes[0] == 9);
    BOOST_TEST(bytes[1] == 200);
    Combine(1, 3, reinterpret_cast<char*>(bytes), reinterpret_cast<char*>(other), 2, &error);
    BOOST_TEST(bytes[1] == 100);
    // double product (8, 1): 1.5 x -4 = -6.
    double d = 1.5, e = -4;
    Combine(8, 1, reinterpret_cast<char*>(&d), reinterpret_cast<char*>(&e), 1, &error);
    BOOST_TEST(d == -6.0);
    // float average (7, 4) over 4 ranks of 1, 2, 3, 4: sum 10, / 4 = 2.5.
    float f = 1;
    for (float x : {2.0f, 3.0f, 4.0f})
    {
        Combine(7, 4, reinterpret_cast<char*>(&f), reinterpret_cast<const char*>(&x), 1, &error);
    }
    Finish(7, 4, reinterpret_cast<char*>(&f), 1, 4);
    BOOST_TEST(f == 2.5f);
    // half sum (6): 1 + 2 = 3 (0x4200).
    uint16_t h = 0x3C00, h2 = 0x4000;
    Combine(6, 0, reinterpret_cast<char*>(&h), reinterpret_cast<char*>(&h2), 1, &error);
    BOOST_TEST(h == 0x4200);
    // Not computed: a PreMulSum operator (ncclNumOps = 5) and float8 (10).
    BOOST_TEST(!Combine(7, 5, reinterpret_cast<char*>(&f), reinterpret_cast<char*>(&f), 1, &error));
    BOOST_TEST(
        !Combine(10, 0, reinterpret_cast<char*>(&h), reinterpret_cast<char*>(&h), 1, &error));
}

namespace
{
using eidolon::gpu::BoardStream;
using eidolon::gpu::CommMember;
using eidolon::gpu::CommOp;
using eidolon::gpu::CommOpKind;
using eidolon::gpu::DataExchange;
using eidolon::gpu::ExchangeBoard;

// Host memory standing in for a rank's device memory: a buffer holds data once it is marked.
class HostAccess : public eidolon::gpu::DataAccess
{
public:
    std::set<const void*> written;
    bool HasData(const void* pointer, size_t) override { return written.count(pointer) != 0; }
    void Load(const void* pointer, void* out, size_t bytes) override
    {
        std::memcpy(out, pointer, bytes);
    }
    void Store(void* pointer, const void* data, size_t bytes) override
    {
        std::memcpy(pointer, data, bytes);
    }
};

// A fresh data directory under /dev/shm (or the temporary directory), removed at the end.
struct DataDirectory
{
    std::filesystem::path path;
    DataDirectory()
    {
        std::filesystem::path parent = std::filesystem::is_directory("/dev/shm")
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
        path = parent / ("eidolon-board-test-" + std::to_string(getpid()));
        std::filesystem::remove_all(path);
    }
    ~DataDirectory() { std::filesystem::remove_all(path); }
    // Entries other than boards.
    int Files() const
    {
        int files = 0;
        for (const auto& entry : std::filesystem::directory_iterator(path))
        {
            files += entry.path().filename().string().rfind("board.", 0) == 0 ? 0 : 1;
        }
        return files;
    }
};

CommOp
AllReduceInt32(const int32_t* send, int32_t* recv, uint64_t count)
{
    CommOp op;
    op.kind = CommOpKind::AllReduce;
    op.count = count;
    op.dtype = 2; // ncclInt32
    op.typeSize = 4;
    op.redop = 0; // ncclSum
    op.sendbuff = send;
    op.recvbuff = recv;
    return op;
}
} // namespace

BOOST_AUTO_TEST_CASE(a_board_shares_posted_counts_between_mappings)
{
    DataDirectory dir;
    std::filesystem::create_directories(dir.path);
    ExchangeBoard writer((dir.path / "board.run1").string());
    ExchangeBoard reader((dir.path / "board.run1").string());
    BOOST_REQUIRE(writer.Usable() && reader.Usable());
    BoardStream collectives{7, 1, -1, 2};
    BoardStream sends{7, 1, 0, 2};
    BOOST_TEST(reader.Read(collectives).posted == 0); // nothing posted yet
    BOOST_TEST(writer.Publish(collectives, 1, false));
    BOOST_TEST(writer.Publish(collectives, 2, true)); // the second collective (index 1) had data
    BOOST_TEST(writer.Publish(collectives, 3, false));
    BOOST_TEST(writer.Publish(sends, 1, false));
    BOOST_TEST(reader.Read(collectives).posted == 3);
    BOOST_TEST(reader.Read(collectives).withData == 2u);
    BOOST_TEST(reader.Read(sends).posted == 1);
    BOOST_TEST(reader.Read(sends).withData == 0u);
    BOOST_TEST(reader.Read(BoardStream{7, 0, -1, 2}).posted == 0); // another rank's stream
    // Another run's board in the same directory starts clean.
    ExchangeBoard next((dir.path / "board.run2").string());
    BOOST_TEST(next.Read(collectives).posted == 0);
}

// An alltoall of 1,024 ranks has 1,048,576 send streams (the first board held 65,536 streams in
// all, and a 512-rank alltoall fell back to a marker file per send). Every pair is published by
// one mapping with its own count, and read back from another.
BOOST_AUTO_TEST_CASE(a_board_holds_every_pair_of_1024_ranks)
{
    DataDirectory dir;
    std::filesystem::create_directories(dir.path);
    ExchangeBoard writer((dir.path / "board.run1").string());
    ExchangeBoard reader((dir.path / "board.run1").string());
    BOOST_REQUIRE(writer.Usable() && reader.Usable());
    constexpr int n = 1024;
    auto count = [](int from, int to) { return uint64_t(from) * 4096 + uint64_t(to) + 1; };
    for (int from = 0; from < n; ++from)
    {
        for (int to = 0; to < n; ++to)
        {
            BOOST_REQUIRE(writer.Publish(BoardStream{99, from, to, n}, count(from, to), to == 5));
        }
    }
    int wrong = 0;
    for (int from = 0; from < n; ++from)
    {
        for (int to = 0; to < n; ++to)
        {
            auto progress = reader.Read(BoardStream{99, from, to, n});
            wrong += progress.posted != int64_t(count(from, to)) ||
                     progress.withData != (to == 5 ? count(from, to) : 0);
        }
    }
    BOOST_TEST(wrong == 0);
    // The same ranks on another communicator, and the collectives of this one, start at zero.
    BOOST_TEST(reader.Read(BoardStream{100, 3, 4, n}).posted == 0);
    BOOST_TEST(reader.Read(BoardStream{99, 3, -1, n}).posted == 0);
}

// A stream the board cannot hold is refused to its writer and read as "files alone say" (-1) by
// everyone: a peer index outside the communicator, and rows once the counters are used up
// (ExchangeBoard::kCounters of them; two rows of half that many ranks take them all).
BOOST_AUTO_TEST_CASE(a_stream_the_board_cannot_hold_falls_back_to_files_for_everyone)
{
    DataDirectory dir;
    std::filesystem::create_directories(dir.path);
    ExchangeBoard writer((dir.path / "board.run1").string());
    ExchangeBoard reader((dir.path / "board.run1").string());
    BOOST_REQUIRE(writer.Usable() && reader.Usable());
    BOOST_TEST(!writer.Publish(BoardStream{1, 0, 4, 4}, 1, false)); // peer 4 of 4 ranks
    BOOST_TEST(reader.Read(BoardStream{1, 0, 4, 4}).posted == -1);
    const int half = int(ExchangeBoard::kCounters / 2);
    BOOST_TEST(writer.Publish(BoardStream{2, 0, half - 1, half}, 1, false));
    BOOST_TEST(writer.Publish(BoardStream{2, 1, 0, half}, 2, false));
    BOOST_TEST(!writer.Publish(BoardStream{2, 2, 0, half}, 3, false)); // no counters left
    BOOST_TEST(reader.Read(BoardStream{2, 2, 0, half}).posted == -1);
    BOOST_TEST(reader.Read(BoardStream{2, 1, 0, half}).posted == 2); // the rows before still work
    BOOST_TEST(writer.Publish(BoardStream{3, 0, 1, 2}, 1, false) == false); // nor for a new comm
}

// Two ranks of one run as two DataExchange objects of this process, on a 2-rank communicator,
// each with a 4-int send and receive buffer.
struct TwoRanks
{
    DataDirectory dir;
    HostAccess access0, access1;
    DataExchange rank0{dir.path.string(), access0};
    DataExchange rank1{dir.path.string(), access1};
    CommMember member0{42, 2, 0, 0};
    CommMember member1{42, 2, 1, 0};
    int32_t send0[4] = {1, 2, 3, 4}, send1[4] = {10, 20, 30, 40};
    int32_t recv0[4] = {-1, -1, -1, -1}, recv1[4] = {-1, -1, -1, -1};
    TwoRanks()
    {
        rank0.SetRunTag("test");
        rank1.SetRunTag("test");
    }
};

BOOST_FIXTURE_TEST_CASE(exchange_without_data_posts_no_file_and_one_writer_reaches_every_rank,
                        TwoRanks)
{

    // No rank's buffer holds data: no file, and the landing (once both posted) moves nothing.
    std::vector<CommOp> ops0{AllReduceInt32(send0, recv0, 4)};
    std::vector<CommOp> ops1{AllReduceInt32(send1, recv1, 4)};
    rank0.Post(member0, ops0);
    rank0.Expect(member0, ops0, 1, 5);
    BOOST_TEST(!rank0.TryLandOldest()); // rank 1 has not posted: it might still send data
    rank1.Post(member1, ops1);
    rank1.Expect(member1, ops1, 1, 5);
    BOOST_TEST(rank0.TryLandOldest());
    BOOST_TEST(rank1.TryLandOldest());
    BOOST_TEST(dir.Files() == 0);
    BOOST_TEST(rank0.Stats().postedFiles == 0u);
    BOOST_TEST(recv0[3] == -1); // nothing moved: the destination keeps its contents
    BOOST_TEST(recv1[0] == -1);

    // Only rank 1's buffer holds data; rank 0 posts first, without a file: both get 10 20 30 40
    // (rank 0 adds zeros).
    access1.written.insert(send1);
    rank0.Post(member0, ops0);
    rank0.Expect(member0, ops0, 1, 6);
    BOOST_TEST(!rank0.TryLandOldest());
    rank1.Post(member1, ops1);
    rank1.Expect(member1, ops1, 1, 6);
    BOOST_TEST(dir.Files() == 1); // rank 1's file
    BOOST_TEST(rank0.TryLandOldest());
    BOOST_TEST(rank1.TryLandOldest());
    BOOST_TEST(recv0[0] == 10);
    BOOST_TEST(recv0[3] == 40);
    BOOST_TEST(recv1[0] == 10);
    BOOST_TEST(recv1[3] == 40);
    BOOST_TEST(rank0.Stats().postedFiles == 0u);
    BOOST_TEST(rank1.Stats().postedFiles == 1u);
    BOOST_TEST(dir.Files() == 0); // its last reader removed it

    // A later run in the same directory (another tag) is not fooled by this run's counts.
    HostAccess access2;
    DataExchange again(dir.path.string(), access2);
    again.SetRunTag("next");
    again.Post(member0, ops0);
    again.Expect(member0, ops0, 1, 7);
    BOOST_TEST(!again.TryLandOldest()); // its rank 1 has not posted
}

// A receive given up still counts down what it would have read: its destination freed before the
// data came (Forget), or abandoned. Both ranks' buffers hold data, so each posts one file with two
// readers (itself and the peer); without the count-down, a freed or abandoned receive's files
// stayed on /dev/shm until the run ended.
BOOST_FIXTURE_TEST_CASE(receives_given_up_still_release_their_contributions, TwoRanks)
{
    access0.written.insert(send0);
    access1.written.insert(send1);
    std::vector<CommOp> ops0{AllReduceInt32(send0, recv0, 4)};
    std::vector<CommOp> ops1{AllReduceInt32(send1, recv1, 4)};

    // Rank 0 posts and frees its destination before rank 1 posts: its own file is counted down
    // at once (1 reader left: rank 1), rank 1's when it comes.
    rank0.Post(member0, ops0);
    rank0.Expect(member0, ops0, 1, 5);
    rank0.Forget(reinterpret_cast<uint64_t>(recv0), sizeof recv0);
    BOOST_TEST(dir.Files() == 1);
    rank1.Post(member1, ops1);
    rank1.Expect(member1, ops1, 1, 5);
    BOOST_TEST(dir.Files() == 2);
    BOOST_TEST(rank1.TryLandOldest()); // rank 1 reads both: rank 0's file goes, its own has 1 left
    BOOST_TEST(recv1[0] == 11);
    BOOST_TEST(dir.Files() == 1);
    rank0.LandReady(); // rank 0's given-up read of rank 1's file
    BOOST_TEST(dir.Files() == 0);
    BOOST_TEST(recv0[0] == -1);                        // nothing landed in the freed destination
    BOOST_TEST(rank0.Stats().lostContributions == 0u); // a freed destination loses nothing

    // Abandoned after both posted: both files it would have read are counted down at once.
    rank0.Post(member0, ops0);
    rank0.Expect(member0, ops0, 1, 6);
    rank1.Post(member1, ops1);
    rank1.Expect(member1, ops1, 1, 6);
    BOOST_TEST(dir.Files() == 2);
    rank0.AbandonOldest("a test");
    BOOST_TEST(dir.Files() == 2); // each still has rank 1 to read it
    BOOST_TEST(rank1.TryLandOldest());
    BOOST_TEST(dir.Files() == 0);
    BOOST_TEST(recv0[0] == -1);
    BOOST_TEST(rank0.Stats().lostContributions == 2u); // both held data
}

// A receive given up because the device touched its destination before the peers' data came
// (AbandonOldest's onlyIfDataArrives) loses data only if a peer's contribution, once it comes,
// holds some: in SPMD programs a rank that sent none rarely receives any, and the main job gave
// up one such receive per rank with a warning about data that never existed.
BOOST_FIXTURE_TEST_CASE(a_receive_given_up_early_counts_only_data_that_comes, TwoRanks)
{
    std::vector<CommOp> ops0{AllReduceInt32(send0, recv0, 4)};
    std::vector<CommOp> ops1{AllReduceInt32(send1, recv1, 4)};

    // Neither buffer holds data: given up before rank 1 posts; nothing is lost when it does.
    rank0.Post(member0, ops0);
    rank0.Expect(member0, ops0, 1, 5);
    rank0.AbandonOldest("a device touch", true);
    rank1.Post(member1, ops1);
    rank1.Expect(member1, ops1, 1, 5);
    BOOST_TEST(rank1.TryLandOldest());
    rank0.LandReady(); // rank 0's given-up read of rank 1's contribution
    BOOST_TEST(rank0.Stats().lostContributions == 0u);

    // Rank 1's buffer holds data (10 20 30 40): given up before it comes, it is lost, once.
    access1.written.insert(send1);
    rank0.Post(member0, ops0);
    rank0.Expect(member0, ops0, 1, 6);
    rank0.AbandonOldest("a device touch", true);
    BOOST_TEST(rank0.Stats().lostContributions == 0u); // not known yet
    rank1.Post(member1, ops1);
    rank1.Expect(member1, ops1, 1, 6);
    BOOST_TEST(rank1.TryLandOldest());
    BOOST_TEST(recv1[0] == 10);
    rank0.LandReady();
    BOOST_TEST(rank0.Stats().lostContributions == 1u);
    BOOST_TEST(recv0[0] == -1); // the destination kept its contents
    BOOST_TEST(dir.Files() == 0);
}

// EIDOLON_HOST_DATA_OP_MAX bounds an operation by its largest buffer on a rank: an all-gather's
// is its receive buffer, ranks x its send buffer (every rank lands every other's contribution,
// so a run holds ranks x that much). Bound 24 bytes, two ranks: an all-gather of 2 int32 a rank
// (receive 16 bytes) moves data; of 4 (send 16, receive 32) none, though each send fits.
BOOST_AUTO_TEST_CASE(the_op_bound_applies_to_an_all_gathers_receive_buffer)
{
    DataDirectory dir;
    HostAccess access0, access1;
    DataExchange rank0{dir.path.string(), access0, 24};
    DataExchange rank1{dir.path.string(), access1, 24};
    rank0.SetRunTag("bound");
    rank1.SetRunTag("bound");
    CommMember member0{43, 2, 0, 0};
    CommMember member1{43, 2, 1, 0};
    int32_t send0[4] = {1, 2, 3, 4}, send1[4] = {10, 20, 30, 40};
    int32_t recv0[8], recv1[8];
    std::fill(std::begin(recv0), std::end(recv0), -1);
    std::fill(std::begin(recv1), std::end(recv1), -1);
    access0.written = {send0};
    access1.written = {send1};
    auto allGather = [](const int32_t* send, int32_t* recv, uint64_t count)
    {
        CommOp op = AllReduceInt32(send, recv, count);
        op.kind = CommOpKind::AllGather;
        return op;
    };

    // Both ranks post and expect an all-gather of `count` ints a rank (record `record`), then land.
    auto exchange = [&](uint64_t count, uint64_t record)
    {
        std::vector<CommOp> ops0{allGather(send0, recv0, count)};
        std::vector<CommOp> ops1{allGather(send1, recv1, count)};
        rank0.Post(member0, ops0);
        rank1.Post(member1, ops1);
        rank0.Expect(member0, ops0, 1, record);
        rank1.Expect(member1, ops1, 1, record);
        BOOST_TEST(rank0.TryLandOldest());
        BOOST_TEST(rank1.TryLandOldest());
    };

    exchange(2, 5);
    BOOST_TEST(recv1[0] == 1); // rank 0's two ints, then rank 1's
    BOOST_TEST(recv1[1] == 2);
    BOOST_TEST(recv0[2] == 10);
    BOOST_TEST(recv0[3] == 20);

    std::fill(std::begin(recv0), std::end(recv0), -1);
    exchange(4, 6);
    BOOST_TEST(recv0[4] == -1); // nothing moved: the destination keeps its contents
    BOOST_TEST(rank0.Stats().postedFiles == 1u); // the small all-gather's only
    BOOST_TEST(dir.Files() == 0);
}
