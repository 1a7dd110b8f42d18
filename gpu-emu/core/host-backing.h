// Host-visible data of device memory (README "Device memory and data"). A device allocation is
// address space with no contents until the host puts data into it (a copy from host memory, a
// memset, a copy from memory that holds data, a collective that delivers data): then, and only
// for the pages written, it gets real host pages in a private shadow mapping of the allocation's
// size (MAP_NORESERVE, so a 70 GB allocation costs nothing until written). Reading a page that was
// never written gives zeros; kernels compute nothing, so what they "write" reads as the prior
// contents. Backing is bounded by a per-process cap: past it, writes to pages not yet backed are
// dropped (they read as zeros), with one warning. Writes of more than 1 MiB may fill only 3/4 of
// the cap, so that small ones (the metadata frameworks check) still fit after a model was copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace eidolon::gpu
{

// Process totals, or one device's.
struct HostBackingStats
{
    uint64_t capBytes = 0;
    uint64_t backedBytes = 0;  // pages holding data now
    uint64_t peakBytes = 0;    // most pages held at once
    uint64_t droppedBytes = 0; // bytes written but not kept because of the cap
};

class HostBacking
{
public:
    static constexpr uint64_t kPage = 4096;
    static constexpr uint64_t kLargeWrite = 1ull << 20; // may fill 3/4 of the cap, not all of it

    explicit HostBacking(uint64_t capBytes);
    ~HostBacking();
    HostBacking(const HostBacking&) = delete;
    HostBacking& operator=(const HostBacking&) = delete;

    // A device allocation [address, address + size) of `device` that may get contents.
    void Track(uint64_t address, uint64_t size, int device);
    // The allocation starting at `address` is freed: its pages are given back.
    void Untrack(uint64_t address);
    bool Tracks(uint64_t address) const { return Find(address) != nullptr; }

    // The host writes `bytes` bytes at `address` (inside one tracked allocation). Pages not yet
    // backed are backed within the cap; the rest of the write is dropped.
    void Write(uint64_t address, const void* data, size_t bytes);
    // Sets `bytes` bytes to `value`; setting to 0 gives back whole pages.
    void Fill(uint64_t address, int value, size_t bytes);
    // Reads `bytes` bytes: real where backed, zeros elsewhere.
    void Read(uint64_t address, void* out, size_t bytes) const;
    // Whether any byte of the range is backed.
    bool AnyBacked(uint64_t address, size_t bytes) const;
    // Device-to-device copy (memmove semantics): the destination reads what the source reads.
    void Move(uint64_t dst, uint64_t src, size_t bytes);

    const HostBackingStats& Stats() const { return m_stats; }
    HostBackingStats DeviceStats(int device) const;

private:
    struct Region
    {
        uint64_t address;
        uint64_t size;
        int device;
        char* shadow = nullptr;              // created at the first write
        std::map<uint64_t, uint64_t> backed; // page index -> end page index (exclusive)
    };
    // Backed [begin, end) byte ranges (relative to the region) within [offset, offset + bytes).
    using Spans = std::vector<std::pair<uint64_t, uint64_t>>;

    Region* Find(uint64_t address);
    const Region* Find(uint64_t address) const;
    Spans BackedSpans(const Region& region, uint64_t offset, uint64_t bytes) const;
    // Backs the pages of [offset, offset + bytes) that the cap allows; returns the backed spans
    // of the range afterwards.
    Spans Back(Region& region, uint64_t offset, uint64_t bytes);
    // Releases the whole pages of [offset, offset + bytes) and zeros the partial ones.
    void Clear(Region& region, uint64_t offset, uint64_t bytes);
    void Count(const Region& region, int64_t pages);
    void Dropped(const Region& region, uint64_t bytes);
    void CapReached();

    std::map<uint64_t, Region> m_regions; // address -> region
    HostBackingStats m_stats;
    std::map<int, HostBackingStats> m_devices;
    bool m_warned = false;
};

} // namespace eidolon::gpu
