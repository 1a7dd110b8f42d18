// The run's exchange board (README "Device memory and data"): one shared-memory file in the data
// directory that every rank process maps, so that the common case of an NCCL operation whose send
// buffers hold no host data costs no file system call. It holds
//  - a sticky flag, set by the first rank that posts data (before its data file is written);
//  - per sender stream of contributions (a rank's collectives on a communicator, or its sends to
//    one peer) the number posted so far, published with a release store after the contribution's
//    file (if any) is in place.
// A reader that acquires a count above a contribution's index knows that contribution is posted:
// if the flag was still clear then, no rank had posted data, so it holds none; otherwise its
// file says, and a missing file means no data. A rank without data writes no file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace eidolon::gpu
{

// A sender's stream of contributions: collectives of (comm, rank), or sends (comm, from -> to).
struct BoardStream
{
    uint64_t commId;
    int32_t from;
    int32_t to; // -1 for collectives
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

    // Sets the run's "some rank posted data" flag (sequentially consistent).
    void MarkData();
    // Whether any rank posted data (acquire).
    bool AnyData() const;

    // Publishes that `stream` has posted `count` contributions (release). False if the board is
    // full: then the stream's readers fall back to files (the writer must post markers).
    bool Publish(const BoardStream& stream, uint64_t count);
    // How many contributions `stream` has posted (acquire); -1 if the stream cannot be on the
    // board (it is full and does not hold it): then files alone say.
    int64_t Posted(const BoardStream& stream) const;

private:
    struct Slot;
    // The slot of `stream`, claimed for it if `claim`; null if absent (or the board is full).
    Slot* Find(const BoardStream& stream, bool claim, bool* full) const;

    void* m_base = nullptr;
    size_t m_length = 0;
};

} // namespace eidolon::gpu
