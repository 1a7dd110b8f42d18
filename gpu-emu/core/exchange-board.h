// The run's exchange board (README "Device memory and data"): one shared-memory file in the data
// directory that every rank process maps, so that an NCCL operation whose send buffers hold no
// host data costs no file system call. Per sender stream of contributions (a rank's collectives
// on a communicator, or its sends to one peer) it holds the number posted so far and the number
// up to the last one posted with data, both stored after that contribution's file is in place,
// the count last with a release store. A reader that acquires a count above a contribution's
// index knows it is posted; if the stream's last contribution with data came before it, it holds
// none (no file to look for); otherwise its file says, and a missing file means no data. A rank
// without data writes no file.
//
// The streams are kept in rows of a communicator's size, so that an alltoall of n ranks (n x n
// send streams) costs n rows found by hash and then direct indexing: a communicator's collective
// row (indexed by the sending rank) and one row per rank that sends (indexed by the peer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace eidolon::gpu
{

// A sender's stream of contributions: collectives of (comm, rank), or sends (comm, from -> to),
// on a communicator of `nranks` ranks (every rank of it gives the same size).
struct BoardStream
{
    uint64_t commId;
    int32_t from;
    int32_t to; // -1 for collectives
    int32_t nranks;
};

class ExchangeBoard
{
public:
    // Maps (creating if need be) the board file `path`; Usable() says if it worked.
    explicit ExchangeBoard(const std::string& path);
    ~ExchangeBoard();
    ExchangeBoard(const ExchangeBoard&) = delete;
    ExchangeBoard& operator=(const ExchangeBoard&) = delete;

    bool Usable() const { return m_base != nullptr; }

    // Publishes that `stream` has posted `count` contributions, the last one `withData` (release).
    // False if the board cannot hold the stream (its row table or its counters are used up): then
    // the stream's readers fall back to files (the writer must post markers).
    bool Publish(const BoardStream& stream, uint64_t count, bool withData);
    struct Progress
    {
        int64_t posted;    // contributions posted; -1: the stream cannot be on the board (it is
                           // full and does not hold it), so files alone say
        uint64_t withData; // contributions posted up to the last one with data (0: none had)
    };
    // Where `stream` stands (acquire).
    Progress Read(const BoardStream& stream) const;

    // Capacity: rows (a communicator's collectives, or one rank's sends on it) and the counters
    // the rows share (a row holds one per rank of its communicator).
    static constexpr size_t kRows = size_t(1) << 16;
    static constexpr size_t kCounters = size_t(1) << 24;

private:
    struct Row;
    struct Counter;
    // The counter of `stream`, its row claimed if `claim`; null if absent, or (`*full` set) if
    // the board cannot hold it.
    Counter* Find(const BoardStream& stream, bool claim, bool* full) const;

    void* m_base = nullptr;
    size_t m_length = 0;
};

} // namespace eidolon::gpu
