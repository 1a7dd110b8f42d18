#include "exchange-board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thread>

namespace eidolon::gpu
{

// A board: a header, then an open-addressing table of streams. Slots are claimed with a
// compare-and-swap and never freed (a run has few streams: communicators x ranks, plus the pairs
// that send). tmpfs gives zeroed pages, and only the pages touched.
struct ExchangeBoard::Slot
{
    uint32_t state; // 0 free, 1 being claimed, 2 holds `stream`
    uint32_t reserved;
    uint64_t commId;
    int32_t from;
    int32_t to;
    uint64_t posted;
    uint64_t withData;
};

namespace
{
struct Header
{
    uint32_t reserved[16]; // a cache line, for a later format field
};
constexpr size_t kSlots = 1u << 16; // 2.5 MiB of address space; a run touches a few pages
constexpr uint32_t kFree = 0;
constexpr uint32_t kClaiming = 1;
constexpr uint32_t kHeld = 2;

uint64_t
Hash(const BoardStream& s)
{
    uint64_t h = s.commId * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t(uint32_t(s.from)) << 32 | uint32_t(s.to)) + 0x632be59bd9b4e019ull + (h << 6) +
         (h >> 2);
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
    size_t length = sizeof(Header) + kSlots * sizeof(Slot);
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

ExchangeBoard::Slot*
ExchangeBoard::Find(const BoardStream& stream, bool claim, bool* full) const
{
    auto* slots = reinterpret_cast<Slot*>(static_cast<char*>(m_base) + sizeof(Header));
    uint64_t start = Hash(stream);
    for (size_t probe = 0; probe < kSlots; ++probe)
    {
        Slot* slot = &slots[(start + probe) % kSlots];
        uint32_t state = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);
        if (state == kFree)
        {
            if (!claim)
            {
                return nullptr; // streams are only added, so it is not further on either
            }
            uint32_t expected = kFree;
            if (__atomic_compare_exchange_n(&slot->state, &expected, kClaiming, false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            {
                slot->commId = stream.commId;
                slot->from = stream.from;
                slot->to = stream.to;
                __atomic_store_n(&slot->state, kHeld, __ATOMIC_RELEASE);
                return slot;
            }
            state = expected; // another process claimed it: read what it holds
        }
        while (state == kClaiming) // the claimer writes three words next
        {
            std::this_thread::yield();
            state = __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE);
        }
        if (slot->commId == stream.commId && slot->from == stream.from && slot->to == stream.to)
        {
            return slot;
        }
    }
    *full = true;
    return nullptr;
}

bool
ExchangeBoard::Publish(const BoardStream& stream, uint64_t count, bool withData)
{
    bool full = false;
    Slot* slot = Find(stream, true, &full);
    if (!slot)
    {
        return false;
    }
    if (withData) // one writer per stream: the count's release store publishes this too
    {
        __atomic_store_n(&slot->withData, count, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&slot->posted, count, __ATOMIC_RELEASE);
    return true;
}

ExchangeBoard::Progress
ExchangeBoard::Read(const BoardStream& stream) const
{
    bool full = false;
    const Slot* slot = Find(stream, false, &full);
    if (!slot)
    {
        return Progress{full ? -1 : 0, 0};
    }
    int64_t posted = int64_t(__atomic_load_n(&slot->posted, __ATOMIC_ACQUIRE));
    return Progress{posted, __atomic_load_n(&slot->withData, __ATOMIC_RELAXED)};
}

} // namespace eidolon::gpu
