#include "host-backing.h"

#include "diagnostics.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace eidolon::gpu
{

HostBacking::HostBacking(uint64_t capBytes)
{
    m_stats.capBytes = capBytes;
}

HostBacking::~HostBacking()
{
    for (auto& [address, region] : m_regions)
    {
        if (region.shadow)
        {
            munmap(region.shadow, region.size);
        }
    }
}

void
HostBacking::Track(uint64_t address, uint64_t size, int device)
{
    uint64_t rounded = (std::max<uint64_t>(size, 1) + kPage - 1) / kPage * kPage;
    m_regions[address] = Region{address, rounded, device, nullptr, {}};
}

HostBackingStats
HostBacking::DeviceStats(int device) const
{
    auto it = m_devices.find(device);
    HostBackingStats stats = it == m_devices.end() ? HostBackingStats{} : it->second;
    stats.capBytes = m_stats.capBytes;
    return stats;
}

void
HostBacking::Untrack(uint64_t address)
{
    auto it = m_regions.find(address);
    if (it == m_regions.end())
    {
        return;
    }
    Region& region = it->second;
    int64_t pages = 0;
    for (const auto& [begin, end] : region.backed)
    {
        pages += int64_t(end - begin);
    }
    Count(region, -pages);
    if (region.shadow)
    {
        munmap(region.shadow, region.size);
    }
    m_regions.erase(it);
}

HostBacking::Region*
HostBacking::Find(uint64_t address)
{
    return const_cast<Region*>(static_cast<const HostBacking*>(this)->Find(address));
}

const HostBacking::Region*
HostBacking::Find(uint64_t address) const
{
    auto it = m_regions.upper_bound(address);
    if (it == m_regions.begin())
    {
        return nullptr;
    }
    --it;
    return address < it->second.address + it->second.size ? &it->second : nullptr;
}

HostBacking::Spans
HostBacking::BackedSpans(const Region& region, uint64_t offset, uint64_t bytes) const
{
    Spans spans;
    uint64_t end = offset + bytes;
    auto it = region.backed.upper_bound(offset / kPage);
    if (it != region.backed.begin())
    {
        --it;
    }
    for (; it != region.backed.end() && it->first * kPage < end; ++it)
    {
        uint64_t begin = std::max(offset, it->first * kPage);
        uint64_t stop = std::min(end, it->second * kPage);
        if (begin < stop)
        {
            spans.emplace_back(begin, stop);
        }
    }
    return spans;
}

void
HostBacking::Count(const Region& region, int64_t pages)
{
    for (HostBackingStats* stats : {&m_stats, &m_devices[region.device]})
    {
        stats->backedBytes = uint64_t(int64_t(stats->backedBytes) + pages * int64_t(kPage));
        stats->peakBytes = std::max(stats->peakBytes, stats->backedBytes);
    }
}

void
HostBacking::Dropped(const Region& region, uint64_t bytes)
{
    m_stats.droppedBytes += bytes;
    m_devices[region.device].droppedBytes += bytes;
}

void
HostBacking::CapReached()
{
    if (!m_warned)
    {
        m_warned = true;
        Warn("device memory written by the host reached EIDOLON_HOST_DATA_CAP (" +
             std::to_string(m_stats.capBytes) +
             " bytes held in host memory); further data written to device memory is dropped and "
             "reads as zeros (values only: every time is simulated as before)");
    }
}

HostBacking::Spans
HostBacking::Back(Region& region, uint64_t offset, uint64_t bytes)
{
    if (!region.shadow)
    {
        void* shadow = mmap(nullptr, region.size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (shadow == MAP_FAILED)
        {
            CapReached();
            return {};
        }
        region.shadow = static_cast<char*>(shadow);
    }
    uint64_t first = offset / kPage;
    uint64_t last = (offset + bytes + kPage - 1) / kPage; // exclusive
    // The gaps of [first, last) not backed yet, each backed as far as the cap allows.
    std::vector<std::pair<uint64_t, uint64_t>> gaps;
    uint64_t cursor = first;
    for (const auto& span : BackedSpans(region, first * kPage, (last - first) * kPage))
    {
        if (span.first / kPage > cursor)
        {
            gaps.emplace_back(cursor, span.first / kPage);
        }
        cursor = span.second / kPage;
    }
    if (cursor < last)
    {
        gaps.emplace_back(cursor, last);
    }
    // Writes of more than kLargeWrite may fill only 3/4 of the cap: the rest stays for small
    // writes (sizes, indices, metadata), so that a model copied in first cannot crowd them out.
    uint64_t limit = bytes > kLargeWrite ? m_stats.capBytes / 4 * 3 : m_stats.capBytes;
    for (auto [begin, end] : gaps)
    {
        uint64_t room = (limit - std::min(limit, m_stats.backedBytes)) / kPage;
        uint64_t pages = std::min(end - begin, room);
        if (pages < end - begin)
        {
            CapReached();
        }
        if (pages == 0)
        {
            break;
        }
        region.backed[begin] = begin + pages;
        Count(region, int64_t(pages));
    }
    // Merge touching intervals around the range.
    auto it = region.backed.lower_bound(first);
    if (it != region.backed.begin())
    {
        --it;
    }
    while (it != region.backed.end() && it->first <= last)
    {
        auto next = std::next(it);
        if (next != region.backed.end() && next->first <= it->second)
        {
            it->second = std::max(it->second, next->second);
            region.backed.erase(next);
        }
        else
        {
            it = next;
        }
    }
    return BackedSpans(region, offset, bytes);
}

void
HostBacking::Clear(Region& region, uint64_t offset, uint64_t bytes)
{
    uint64_t end = offset + bytes;
    uint64_t whole0 = (offset + kPage - 1) / kPage;
    uint64_t whole1 = end / kPage;
    for (const auto& [begin, stop] : BackedSpans(region, offset, bytes))
    {
        // Bytes outside the whole pages (partial first/last page) are zeroed in place.
        uint64_t inner0 = std::max(begin, whole0 * kPage);
        uint64_t inner1 = std::min(stop, whole1 * kPage);
        if (inner0 >= inner1)
        {
            std::memset(region.shadow + begin, 0, stop - begin);
            continue;
        }
        std::memset(region.shadow + begin, 0, inner0 - begin);
        std::memset(region.shadow + inner1, 0, stop - inner1);
    }
    if (whole0 >= whole1)
    {
        return;
    }
    // Whole pages are given back: unmapped from the interval map and from memory.
    std::vector<std::pair<uint64_t, uint64_t>> keep;
    auto it = region.backed.upper_bound(whole0);
    if (it != region.backed.begin())
    {
        --it;
    }
    while (it != region.backed.end() && it->first < whole1)
    {
        uint64_t begin = it->first;
        uint64_t stop = it->second;
        if (stop <= whole0)
        {
            ++it;
            continue;
        }
        it = region.backed.erase(it);
        uint64_t cut0 = std::max(begin, whole0);
        uint64_t cut1 = std::min(stop, whole1);
        if (begin < cut0)
        {
            keep.emplace_back(begin, cut0);
        }
        if (cut1 < stop)
        {
            keep.emplace_back(cut1, stop);
        }
        madvise(region.shadow + cut0 * kPage, (cut1 - cut0) * kPage, MADV_DONTNEED);
        Count(region, -int64_t(cut1 - cut0));
    }
    for (auto [begin, stop] : keep)
    {
        region.backed[begin] = stop;
    }
}

void
HostBacking::Write(uint64_t address, const void* data, size_t bytes)
{
    Region* region = Find(address);
    if (!region || bytes == 0)
    {
        return;
    }
    uint64_t offset = address - region->address;
    bytes = std::min<uint64_t>(bytes, region->size - offset);
    uint64_t kept = 0;
    for (const auto& [begin, end] : Back(*region, offset, bytes))
    {
        std::memcpy(region->shadow + begin, static_cast<const char*>(data) + (begin - offset),
                    end - begin);
        kept += end - begin;
    }
    Dropped(*region, bytes - kept);
}

void
HostBacking::Fill(uint64_t address, int value, size_t bytes)
{
    Region* region = Find(address);
    if (!region || bytes == 0)
    {
        return;
    }
    uint64_t offset = address - region->address;
    bytes = std::min<uint64_t>(bytes, region->size - offset);
    if (static_cast<unsigned char>(value) == 0)
    {
        Clear(*region, offset, bytes);
        return;
    }
    uint64_t kept = 0;
    for (const auto& [begin, end] : Back(*region, offset, bytes))
    {
        std::memset(region->shadow + begin, value, end - begin);
        kept += end - begin;
    }
    Dropped(*region, bytes - kept);
}

void
HostBacking::Read(uint64_t address, void* out, size_t bytes) const
{
    char* to = static_cast<char*>(out);
    const Region* region = Find(address);
    if (!region || !region->shadow)
    {
        std::memset(to, 0, bytes);
        return;
    }
    uint64_t offset = address - region->address;
    uint64_t inside = std::min<uint64_t>(bytes, region->size - offset);
    uint64_t cursor = offset; // bytes before it are filled
    for (const auto& [begin, end] : BackedSpans(*region, offset, inside))
    {
        std::memset(to + (cursor - offset), 0, begin - cursor);
        std::memcpy(to + (begin - offset), region->shadow + begin, end - begin);
        cursor = end;
    }
    std::memset(to + (cursor - offset), 0, bytes - (cursor - offset));
}

bool
HostBacking::AnyBacked(uint64_t address, size_t bytes) const
{
    const Region* region = Find(address);
    if (!region || !region->shadow)
    {
        return false;
    }
    uint64_t offset = address - region->address;
    return !BackedSpans(*region, offset, std::min<uint64_t>(bytes, region->size - offset)).empty();
}

void
HostBacking::Move(uint64_t dst, uint64_t src, size_t bytes)
{
    const Region* from = Find(src);
    if (!Find(dst) || bytes == 0)
    {
        return;
    }
    if (!AnyBacked(src, bytes))
    {
        Fill(dst, 0, bytes); // the source reads as zeros
        return;
    }
    bool overlap = dst < src + bytes && src < dst + bytes;
    if (overlap)
    {
        std::vector<char> staged(bytes);
        Read(src, staged.data(), bytes);
        Write(dst, staged.data(), bytes);
        return;
    }
    uint64_t offset = src - from->address;
    uint64_t cursor = offset;
    for (const auto& [begin, end] : BackedSpans(*from, offset, bytes))
    {
        if (begin > cursor)
        {
            Fill(dst + (cursor - offset), 0, begin - cursor);
        }
        Write(dst + (begin - offset), from->shadow + begin, end - begin);
        cursor = end;
    }
    if (cursor < offset + bytes)
    {
        Fill(dst + (cursor - offset), 0, offset + bytes - cursor);
    }
}

} // namespace eidolon::gpu
