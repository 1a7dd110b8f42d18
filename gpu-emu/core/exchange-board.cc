#include "exchange-board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thread>

namespace eidolon::gpu
{

// A board: a header (the counters handed out so far), an open-addressing table of rows, then the
// counters. A row is claimed with a compare-and-swap, takes its communicator's size in counters
// from the header with a fetch-and-add, and is never freed. tmpfs gives zeroed pages, and only
// the pages touched: a row's counters are contiguous, so a run touches about as many pages as
// its streams need (16 MiB of counters for every pair of 1,024 ranks).
struct ExchangeBoard::Row
{
    uint32_t state; // 0 free, 1 being claimed, 2 holds (commId, owner)
    int32_t owner;  // the sending rank of a row of sends; -1: the communicator's collectives
    uint64_t commId;
    uint32_t length; // counters: the communicator's size
    uint32_t reserved;
    uint64_t first; // index of its first counter; kNoCounters: the counters were used up
};

struct ExchangeBoard::Counter
{
    uint64_t posted;
    uint64_t withData;
};

namespace
{
struct Header
{
    uint64_t countersTaken;
    uint64_t reserved[7]; // a cache line, for a later format field
};
constexpr uint32_t kFree = 0;
constexpr uint32_t kClaiming = 1;
constexpr uint32_t kHeld = 2;
constexpr uint64_t kNoCounters = ~uint64_t(0);

uint64_t
Hash(uint64_t commId, int32_t owner)
{
    uint64_t h = commId * 0x9e3779b97f4a7c15ull;
    h ^= uint64_t(uint32_t(owner)) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    return h * 0xbf58476d1ce4e5b9ull;
}
} // namespace

ExchangeBoard::ExchangeBoard(const std::string& path)
{
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
    {
        return;
    }
    size_t length = sizeof(Header) + kRows * sizeof(Row) + kCounters * sizeof(Counter);
    // Every process sets the same length: racing creators agree, and no one shrinks it.
    if (ftruncate(fd, off_t(length)) == 0)
    {
        void* map = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED)
        {
            m_base = map;
            m_length = length;
        }
    }
    close(fd);
}

ExchangeBoard::~ExchangeBoard()
{
    if (m_base)
    {
        munmap(m_base, m_length);
    }
}

ExchangeBoard::Counter*
ExchangeBoard::Find(const BoardStream& stream, bool claim, bool* full) const
{
    auto* header = static_cast<Header*>(m_base);
    auto* rows = reinterpret_cast<Row*>(static_cast<char*>(m_base) + sizeof(Header));
    auto* counters = reinterpret_cast<Counter*>(rows + kRows);
    const int32_t owner = stream.to < 0 ? -1 : stream.from;
    const int32_t index = stream.to < 0 ? stream.from : stream.to;
    if (stream.nranks <= 0 || index < 0 || index >= stream.nranks)
    {
        *full = true; // not a stream of this communicator: files alone say
        return nullptr;
    }
    const uint64_t start = Hash(stream.commId, owner);
    for (size_t probe = 0; probe < kRows; ++probe)
    {
        Row* row = &rows[(start + probe) % kRows];
        uint32_t state = __atomic_load_n(&row->state, __ATOMIC_ACQUIRE);
        if (state == kFree)
        {
            if (!claim)
            {
                return nullptr; // rows are only added, so it is not further on either
            }
            uint32_t expected = kFree;
            if (__atomic_compare_exchange_n(&row->state, &expected, kClaiming, false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            {
                const uint64_t length = uint64_t(stream.nranks);
                const uint64_t first =
                    __atomic_fetch_add(&header->countersTaken, length, __ATOMIC_RELAXED);
                row->commId = stream.commId;
                row->owner = owner;
                row->length = uint32_t(length);
                row->first = first + length <= kCounters ? first : kNoCounters;
                __atomic_store_n(&row->state, kHeld, __ATOMIC_RELEASE);
                state = kHeld;
            }
            else
            {
                state = expected; // another process claimed it: read what it holds
            }
        }
        while (state == kClaiming) // the claimer writes the row's fields next
        {
            std::this_thread::yield();
            state = __atomic_load_n(&row->state, __ATOMIC_ACQUIRE);
        }
        if (row->commId == stream.commId && row->owner == owner)
        {
            if (row->first == kNoCounters || uint32_t(index) >= row->length)
            {
                *full = true;
                return nullptr;
            }
            return &counters[row->first + uint64_t(index)];
        }
    }
    *full = true;
    return nullptr;
}

bool
ExchangeBoard::Publish(const BoardStream& stream, uint64_t count, bool withData)
{
    bool full = false;
    Counter* counter = Find(stream, true, &full);
    if (!counter)
    {
        return false;
    }
    if (withData) // one writer per stream: the count's release store publishes this too
    {
        __atomic_store_n(&counter->withData, count, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&counter->posted, count, __ATOMIC_RELEASE);
    return true;
}

ExchangeBoard::Progress
ExchangeBoard::Read(const BoardStream& stream) const
{
    bool full = false;
    const Counter* counter = Find(stream, false, &full);
    if (!counter)
    {
        return Progress{full ? -1 : 0, 0};
    }
    int64_t posted = int64_t(__atomic_load_n(&counter->posted, __ATOMIC_ACQUIRE));
    return Progress{posted, __atomic_load_n(&counter->withData, __ATOMIC_RELAXED)};
}

} // namespace eidolon::gpu
