// The bytes NCCL operations move between ranks (README "Device memory and data"). Ranks are
// separate processes on one machine; payloads never go through the simulator. When a rank places a
// communication record it first *posts* its contribution: for each operation that sends and whose
// send buffer holds data, a snapshot of the buffer as a file in the run's data directory
// (EIDOLON_DATA_DIR, which `eidolon run` creates per run on /dev/shm), written under a temporary
// name and renamed, so a file that exists is complete; then, on the run's exchange board (shared
// memory, exchange-board.h), how many contributions it has posted. A contribution counted on the
// board but without a file holds no data, and one after its stream's last contribution with data is
// not even looked for, so operations without host data cost no file system call. The receive side
// is *pending* until its data is needed: reading or writing an overlapping range (a copy, a memset,
// a later collective's send buffer) lands it, after asking the simulator for the record's end if a
// peer's contribution is not posted yet (the simulator ends a collective only after every rank
// placed it, and ranks post before they place, so then every one is posted); any answer from the
// simulator also lands what is ready. Each file counts its readers down and the last one removes
// it.
//
// Operations of one-rank communicators use an in-process mailbox instead of files. Without a data
// directory (a program not started by `eidolon run`), communicators of several ranks move no data.
#pragma once

#include "communication.h"
#include "exchange-board.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace eidolon::gpu
{

// How the exchange reaches a rank's memory (the emulator implements it).
class DataAccess
{
public:
    virtual ~DataAccess() = default;
    // Whether [pointer, +bytes) holds data: host and managed memory always, device memory where
    // the host wrote.
    virtual bool HasData(const void* pointer, size_t bytes) = 0;
    // Reads `bytes` at `pointer` (device, managed or host memory; zeros where device memory
    // holds no data).
    virtual void Load(const void* pointer, void* out, size_t bytes) = 0;
    virtual void Store(void* pointer, const void* data, size_t bytes) = 0;
    // Sets `bytes` at `pointer` to zero (device memory gives its pages back, as a memset does).
    virtual void Zero(void* pointer, size_t bytes)
    {
        const std::vector<char> zeros(bytes, 0);
        Store(pointer, zeros.data(), bytes);
    }
};

struct DataExchangeStats
{
    uint64_t postedBytes = 0;   // bytes of data this process posted
    uint64_t receivedBytes = 0; // bytes of data landed from other ranks
    uint64_t postedFiles = 0;   // contribution files this process wrote
    // contributions holding data that a given-up receive (AbandonOldest) did not land
    uint64_t lostContributions = 0;
};

class DataExchange
{
public:
    // `directory`: where ranks of other processes meet ("" = in-process only). `opMaxBytes`: a
    // an operation whose largest buffer on a rank (an all-gather's receive buffer, a
    // reduce-scatter's send buffer, else the send buffer) is larger than this is posted as holding
    // no data (EIDOLON_HOST_DATA_OP_MAX): every rank lands what every other posted, so the bytes
    // a run holds grow with ranks x that buffer.
    DataExchange(std::string directory, DataAccess& access, uint64_t opMaxBytes = 4ull << 20);

    // Names this run for the exchange board ("board.<tag>" in the directory), so that a
    // directory reused by a later run starts from a fresh board; every process of the run must
    // give the same tag (the simulator's clock epoch). Default: this process's id and start.
    void SetRunTag(const std::string& tag) { m_runTag = tag; }

    // Before the record of `ops` is placed: posts what this member sends.
    void Post(const CommMember& member, const std::vector<CommOp>& ops);
    // After it is placed: what this member receives becomes pending on `record` (0: the record's
    // end is known locally, so every contribution must already be there).
    void Expect(const CommMember& member, const std::vector<CommOp>& ops, uint64_t streamId,
                uint64_t record);

    // The oldest pending receive, if any: its id, stream and record.
    struct PendingRef
    {
        uint64_t id;
        uint64_t streamId;
        uint64_t record;
        bool ownData; // this rank's own contribution held data (else peers' rarely do: SPMD)
    };
    bool Oldest(PendingRef* ref) const;
    // The id of the newest pending receive whose destination overlaps [pointer, +bytes); 0: none.
    uint64_t NewestOverlapping(const void* pointer, size_t bytes) const;
    // Lands the oldest pending receive if all its contributions are there.
    bool TryLandOldest();
    // Gives up the oldest pending receive (its destination keeps its contents), with a warning
    // now, or (`onlyIfDataArrives`) once a contribution it gave up turns out to hold data: a
    // receive whose peers sent buffers the host never wrote loses nothing.
    void AbandonOldest(const std::string& why, bool onlyIfDataArrives = false);
    // Lands pending receives from the oldest on while they are complete.
    void LandReady();
    // Receives into freed memory are dropped.
    void Forget(uint64_t address, uint64_t bytes);

    // The clock side of host reads, kept apart from landing so that it follows program order
    // only: a receive stays "unwaited" from Expect until the host reads its destination, whether
    // or not its data has landed (which depends on how fast the peers ran). A receive whose
    // record is known locally (record 0) is never unwaited. At most kMaxUnwaited are kept, the
    // oldest dropped first (by then the host has long passed their ends).
    struct UnwaitedRecord
    {
        uint64_t record;
        uint64_t streamId;
    };
    static constexpr size_t kMaxUnwaited = 4096;
    // Takes the unwaited receives whose destinations overlap [pointer, +bytes).
    std::vector<UnwaitedRecord> TakeUnwaited(const void* pointer, size_t bytes);

    const DataExchangeStats& Stats() const { return m_stats; }

private:
    // A send buffer as posted: its bytes in the reader's memory (a mapping of the file, or the
    // mailbox's copy); copies share them.
    struct Contribution
    {
        bool backed = false;
        std::shared_ptr<const char> data;
        size_t size = 0;
    };
    // Where a contribution is found: its file's name (or mailbox key) and its place on the board.
    struct Source
    {
        std::string key; // "" = none expected
        BoardStream stream{};
        uint64_t index = 0;
    };
    // One operation's receive: the contributions it combines, this rank's own included (a rank
    // posts its send buffer for itself too: what it sent, whatever the buffer holds by the time
    // the data lands). Only those it reads are listed (a receive reads one of n ranks').
    struct Landing
    {
        CommOp op;
        int nranks;
        int rank;
        std::vector<std::pair<int, Source>> sources; // (comm rank, source), rank ascending
    };
    struct Pending
    {
        uint64_t id;
        uint64_t streamId;
        uint64_t record;
        std::vector<Landing> landings;
        bool ownData = false;
        // The landings' destinations lie in [lo, hi) (checked first: an alltoall's pending
        // receive has a landing per peer, and every NCCL call checks its send buffer).
        uint64_t lo = ~uint64_t(0);
        uint64_t hi = 0;
    };

    std::string CollectiveKey(uint64_t commId, uint64_t index, int rank) const;
    std::string P2pKey(uint64_t commId, int from, int to, uint64_t index) const;
    // Posts `bytes` at `pointer` under `key` for `readers` reads, then counts `count` posted on
    // `stream`'s board entry. A buffer without data is posted as a marker only in the mailbox
    // or without a board. `local`: the in-process mailbox (one-rank communicators). `opBytes`:
    // the operation's largest buffer on a rank, which the op bound applies to.
    void Put(const std::string& key, const void* pointer, size_t bytes, int readers, bool local,
             const BoardStream& stream, uint64_t count, uint64_t opBytes);
    // Writes the contribution file `key` (a marker if not `backed`).
    void WriteFile(const std::string& key, const void* pointer, size_t bytes, bool backed,
                   int readers);
    bool Present(const Source& source, bool local) const;
    // Reads (and counts down) the contribution of `source`; false if it is not there.
    bool Take(const Source& source, bool local, Contribution* out);
    bool Local(int nranks) const { return nranks == 1; }
    // Whether operations of `nranks` ranks move data here.
    bool Moves(int nranks) const;
    void Land(const Landing& landing);
    // A receive given up (abandoned, or its destination freed) still counts down the
    // contributions it would have read, so that their files and mailbox entries go: at once for
    // those already there, later (ReleaseDiscarded, from LandReady) for those still to come.
    // `abandoned`: AbandonOldest's reason ("" for a freed destination, which loses nothing);
    // `warnIfData`: its warning waits for a contribution holding data.
    void Discard(const Landing& landing, const std::string& abandoned = "",
                 bool warnIfData = false);
    void ReleaseDiscarded();
    // A contribution that `discarded` did not land has come; counted and warned if it held data.
    void Given(const Contribution& given, const std::string& abandoned, bool warnIfData);
    void WarnDataLost(const std::string& why);

    std::string m_directory;
    // The board, mapped at first use (null: files alone, markers for buffers without data).
    ExchangeBoard* Board() const;
    std::string m_runTag;
    mutable std::unique_ptr<ExchangeBoard> m_board;
    mutable bool m_boardOpened = false;
    DataAccess& m_access;
    uint64_t m_opMaxBytes;
    bool m_postedData = false; // the last Post put data under some key
    bool m_warnedOpMax = false;
    // Counters that name contributions the same way on every rank: collectives per (comm, rank),
    // sends and receives per (comm, from, to). A process may hold several ranks of a comm.
    std::map<std::pair<uint64_t, int>, uint64_t> m_collectives;
    std::map<std::tuple<uint64_t, int, int>, uint64_t> m_sends;
    std::map<std::tuple<uint64_t, int, int>, uint64_t> m_receives;
    // What the last Post left for Expect: each op's collective index.
    std::vector<uint64_t> m_postedIndex;
    std::vector<char> m_staging; // reused: a posted buffer on its way to its file
    std::vector<char> m_result;  // reused: a reduction's result
    std::vector<char> m_zeros;   // reused: the contribution of a rank without data
    struct Mail
    {
        Contribution contribution;
        int readers;
    };
    std::map<std::string, Mail> m_mailbox; // in-process contributions
    std::deque<Pending> m_pending;
    struct Discarded
    {
        Source source;
        bool local;
        std::string abandoned; // AbandonOldest's reason ("": a freed destination)
        bool warnIfData;       // its warning waits for data
    };
    // Contributions of given-up receives not yet posted; at most kMaxDiscarded, oldest dropped.
    static constexpr size_t kMaxDiscarded = 4096;
    std::deque<Discarded> m_discarded;
    struct Unwaited
    {
        UnwaitedRecord what;
        std::vector<std::pair<uint64_t, uint64_t>> destinations; // [begin, end) byte ranges
        uint64_t lo = ~uint64_t(0);                              // they lie in [lo, hi)
        uint64_t hi = 0;
    };
    std::deque<Unwaited> m_unwaited; // program order
    uint64_t m_nextId = 1;
    DataExchangeStats m_stats;
};

} // namespace eidolon::gpu
