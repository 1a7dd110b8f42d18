#include "data-exchange.h"

#include "diagnostics.h"
#include "reductions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>

namespace eidolon::gpu
{
namespace
{

// A contribution file: this header, then the payload.
struct FileHeader
{
    uint32_t magic;
    uint32_t backed;
    int32_t readers; // counted down (atomically) by each reader; the last one removes the file
    uint32_t reserved;
    uint64_t bytes;
};
constexpr uint32_t kMagic = 0x44444945; // "EIDD"

void
WarnOnce(const std::string& key, const std::string& message)
{
    static std::set<std::string> warned;
    if (warned.insert(key).second)
    {
        Warn(message);
    }
}

bool
Sends(const CommOp& op, int rank)
{
    switch (op.kind)
    {
    case CommOpKind::AllReduce:
    case CommOpKind::AllGather:
    case CommOpKind::ReduceScatter:
    case CommOpKind::Send:
        return true;
    case CommOpKind::Broadcast:
        return rank == op.root;
    case CommOpKind::Reduce:
        return rank != op.root;
    case CommOpKind::Recv:
        return false;
    }
    return false;
}

// Whether this rank's landing combines its own send buffer (it reads its own post).
bool
ReadsOwn(const CommOp& op, int rank)
{
    switch (op.kind)
    {
    case CommOpKind::AllReduce:
    case CommOpKind::AllGather:
    case CommOpKind::ReduceScatter:
        return true;
    case CommOpKind::Broadcast:
        return rank == op.root && op.sendbuff != op.recvbuff;
    case CommOpKind::Reduce:
        return rank == op.root;
    case CommOpKind::Send:
    case CommOpKind::Recv:
        return false;
    }
    return false;
}

// Bytes of the send buffer an operation reads (count is NCCL's per-op convention).
uint64_t
SendBytes(const CommOp& op, int nranks)
{
    uint64_t bytes = op.count * uint64_t(op.typeSize);
    return op.kind == CommOpKind::ReduceScatter ? bytes * uint64_t(nranks) : bytes;
}

} // namespace

DataExchange::DataExchange(std::string directory, DataAccess& access, uint64_t opMaxBytes)
    : m_directory(std::move(directory))
    , m_access(access)
    , m_opMaxBytes(opMaxBytes)
{
    if (!m_directory.empty() && mkdir(m_directory.c_str(), 0700) != 0 && errno != EEXIST)
    {
        Warn("cannot create the data directory EIDOLON_DATA_DIR=" + m_directory + ": " +
             std::strerror(errno) + "; collectives move no data between processes");
        m_directory.clear();
    }
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    m_runTag = std::to_string(getpid()) + "-" + std::to_string(now.tv_sec) + "-" +
               std::to_string(now.tv_nsec);
}

ExchangeBoard*
DataExchange::Board() const
{
    if (!m_boardOpened && !m_directory.empty())
    {
        m_boardOpened = true;
        std::string path = m_directory + "/board." + m_runTag;
        m_board = std::make_unique<ExchangeBoard>(path);
        if (!m_board->Usable())
        {
            Warn("cannot map the exchange board " + path + ": " + std::strerror(errno) +
                 "; NCCL operations post a file each");
            m_board.reset();
        }
    }
    return m_board.get();
}

std::string
DataExchange::CollectiveKey(uint64_t commId, uint64_t index, int rank) const
{
    char key[96];
    std::snprintf(key, sizeof(key), "%016llx.c%llu.r%d", static_cast<unsigned long long>(commId),
                  static_cast<unsigned long long>(index), rank);
    return key;
}

std::string
DataExchange::P2pKey(uint64_t commId, int from, int to, uint64_t index) const
{
    char key[96];
    std::snprintf(key, sizeof(key), "%016llx.p%d.%d.%llu", static_cast<unsigned long long>(commId),
                  from, to, static_cast<unsigned long long>(index));
    return key;
}

void
DataExchange::Put(const std::string& key, const void* pointer, size_t bytes, int readers,
                  bool local, const BoardStream& stream, uint64_t count, uint64_t opBytes)
{
    // Over the bound, the buffer's pages are not even looked at (every NCCL call posts: a scan
    // of a large buffer's page map would be paid per call); only until the warning is given.
    bool overBound = opBytes > m_opMaxBytes;
    bool backed = pointer && bytes > 0 && !overBound && m_access.HasData(pointer, bytes);
    if (overBound && !m_warnedOpMax && pointer && m_access.HasData(pointer, bytes))
    {
        m_warnedOpMax = true;
        WarnOnce("opmax", "an NCCL operation's send buffer holds host-written data but the "
                          "operation's largest buffer, " +
                              std::to_string(opBytes) +
                              " bytes, is larger than EIDOLON_HOST_DATA_OP_MAX (" +
                              std::to_string(m_opMaxBytes) +
                              " bytes): operations that large move no data (values only: their "
                              "times are simulated "
                              "as before)");
    }
    if (backed)
    {
        m_stats.postedBytes += bytes;
        m_postedData = true;
    }
    if (local)
    {
        Contribution contribution;
        contribution.backed = backed;
        if (backed)
        {
            std::shared_ptr<char> copy(new char[bytes], std::default_delete<char[]>());
            m_access.Load(pointer, copy.get(), bytes);
            contribution.data = copy;
            contribution.size = bytes;
        }
        m_mailbox[key] = Mail{contribution, readers};
        return;
    }
    // The order readers rely on: the file, then the count (exchange-board.h).
    if (backed || !Board())
    {
        WriteFile(key, pointer, bytes, backed, readers);
    }
    if (Board() && !Board()->Publish(stream, count, backed) && !backed)
    {
        WarnOnce("board", "the exchange board in " + m_directory +
                              " is full: NCCL operations without data post marker files");
        WriteFile(key, pointer, bytes, false, readers);
    }
}

void
DataExchange::WriteFile(const std::string& key, const void* pointer, size_t bytes, bool backed,
                        int readers)
{
    ++m_stats.postedFiles;
    std::string path = m_directory + "/" + key;
    std::string temporary = path + ".tmp" + std::to_string(getpid());
    FileHeader header{kMagic, backed ? 1u : 0u, readers, 0, backed ? bytes : 0};
    int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    auto write = [&](const void* data, size_t size)
    {
        const char* cursor = static_cast<const char*>(data);
        while (ok && size > 0)
        {
            ssize_t n = ::write(fd, cursor, size);
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            ok = n > 0;
            cursor += n > 0 ? n : 0;
            size -= n > 0 ? size_t(n) : 0;
        }
    };
    write(&header, sizeof(header));
    // Through a reused staging buffer, in pieces: no fresh pages per post.
    constexpr size_t kPiece = 8u << 20;
    for (size_t offset = 0; backed && ok && offset < bytes; offset += kPiece)
    {
        size_t piece = std::min(kPiece, bytes - offset);
        m_staging.resize(std::max(m_staging.size(), piece));
        m_access.Load(static_cast<const char*>(pointer) + offset, m_staging.data(), piece);
        write(m_staging.data(), piece);
    }
    if (fd >= 0)
    {
        close(fd);
    }
    if (!ok || rename(temporary.c_str(), path.c_str()) != 0)
    {
        unlink(temporary.c_str());
        WarnOnce("put", "cannot write collective data to " + path + ": " + std::strerror(errno) +
                            "; the ranks that read it wait for it in vain");
    }
}

bool
DataExchange::Present(const Source& source, bool local) const
{
    if (local)
    {
        return m_mailbox.count(source.key) != 0;
    }
    int64_t posted = Board() ? Board()->Read(source.stream).posted : -1;
    if (posted >= 0)
    {
        return uint64_t(posted) > source.index;
    }
    return access((m_directory + "/" + source.key).c_str(), F_OK) == 0;
}

bool
DataExchange::Take(const Source& source, bool local, Contribution* out)
{
    const std::string& key = source.key;
    if (local)
    {
        auto it = m_mailbox.find(key);
        if (it == m_mailbox.end())
        {
            return false;
        }
        *out = it->second.contribution;
        if (--it->second.readers <= 0)
        {
            m_mailbox.erase(it);
        }
        return true;
    }
    // On the board (and posted: Present said so), a contribution without a file holds no data;
    // one after its stream's last contribution with data has no file at all.
    ExchangeBoard::Progress progress =
        Board() ? Board()->Read(source.stream) : ExchangeBoard::Progress{-1, 0};
    bool onBoard = progress.posted >= 0;
    if (onBoard && progress.withData <= source.index)
    {
        *out = Contribution{};
        return true;
    }
    std::string path = m_directory + "/" + key;
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
    {
        *out = Contribution{};
        return onBoard;
    }
    struct stat info;
    void* map = MAP_FAILED;
    size_t length = 0;
    if (fstat(fd, &info) == 0 && size_t(info.st_size) >= sizeof(FileHeader))
    {
        length = size_t(info.st_size);
        map = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    }
    close(fd);
    if (map == MAP_FAILED)
    {
        return false;
    }
    std::shared_ptr<char> mapping(static_cast<char*>(map),
                                  [length](char* base) { munmap(base, length); });
    auto* header = reinterpret_cast<FileHeader*>(mapping.get());
    bool valid = header->magic == kMagic && sizeof(FileHeader) + header->bytes <= length;
    out->backed = valid && header->backed;
    out->size = out->backed ? header->bytes : 0;
    // The bytes are read in place, from the mapping (which outlives the file's name).
    out->data = std::shared_ptr<const char>(mapping, mapping.get() + sizeof(FileHeader));
    if (__atomic_sub_fetch(&header->readers, 1, __ATOMIC_ACQ_REL) <= 0)
    {
        unlink(path.c_str());
    }
    return true;
}

bool
DataExchange::Moves(int nranks) const
{
    return nranks == 1 || !m_directory.empty();
}

void
DataExchange::Post(const CommMember& member, const std::vector<CommOp>& ops)
{
    m_postedIndex.assign(ops.size(), 0);
    if (!Moves(member.nranks))
    {
        for (const CommOp& op : ops)
        {
            if (op.sendbuff && m_access.HasData(op.sendbuff, SendBytes(op, member.nranks)))
            {
                WarnOnce("nodir", "EIDOLON_DATA_DIR is not set (the program was not started by "
                                  "`eidolon run`): NCCL operations of several ranks move no data");
            }
        }
        return;
    }
    bool local = Local(member.nranks);
    for (size_t i = 0; i < ops.size(); ++i)
    {
        const CommOp& op = ops[i];
        uint64_t bytes = SendBytes(op, member.nranks);
        const uint64_t opBytes =
            op.kind == CommOpKind::AllGather ? bytes * uint64_t(member.nranks) : bytes;
        if (op.kind == CommOpKind::Send)
        {
            if (op.count > 0) // an empty send has no data and no reader
            {
                uint64_t index = m_sends[{member.commId, member.rank, op.peer}]++;
                Put(P2pKey(member.commId, member.rank, op.peer, index), op.sendbuff, bytes, 1,
                    local, BoardStream{member.commId, member.rank, op.peer, member.nranks},
                    index + 1, opBytes);
            }
            continue;
        }
        if (op.kind == CommOpKind::Recv)
        {
            continue;
        }
        m_postedIndex[i] = m_collectives[{member.commId, member.rank}]++;
        int readers = ReadsOwn(op, member.rank) ? 1 : 0;
        if (Sends(op, member.rank))
        {
            readers += op.kind == CommOpKind::Reduce ? 1 : member.nranks - 1;
        }
        if (readers > 0)
        {
            Put(CollectiveKey(member.commId, m_postedIndex[i], member.rank), op.sendbuff, bytes,
                readers, local, BoardStream{member.commId, member.rank, -1, member.nranks},
                m_postedIndex[i] + 1, opBytes);
        }
    }
}

namespace
{
// The destination range of a landing.
std::pair<uint64_t, uint64_t>
Destination(const CommOp& op, int nranks)
{
    uint64_t bytes = op.count * uint64_t(op.typeSize);
    if (op.kind == CommOpKind::AllGather)
    {
        bytes *= uint64_t(nranks);
    }
    auto start = reinterpret_cast<uint64_t>(op.recvbuff);
    return {start, start + bytes};
}
} // namespace

void
DataExchange::Expect(const CommMember& member, const std::vector<CommOp>& ops, uint64_t streamId,
                     uint64_t record)
{
    Pending pending{m_nextId++, streamId, record, {}, m_postedData};
    m_postedData = false;
    for (size_t i = 0; Moves(member.nranks) && i < ops.size() && i < m_postedIndex.size(); ++i)
    {
        const CommOp& op = ops[i];
        Landing landing{op, member.nranks, member.rank, {}};
        auto key = [&](int rank)
        {
            return Source{CollectiveKey(member.commId, m_postedIndex[i], rank),
                          BoardStream{member.commId, rank, -1, member.nranks}, m_postedIndex[i]};
        };
        switch (op.kind)
        {
        case CommOpKind::AllReduce:
        case CommOpKind::AllGather:
        case CommOpKind::ReduceScatter:
            for (int q = 0; q < member.nranks; ++q)
            {
                landing.sources.emplace_back(q, key(q));
            }
            break;
        case CommOpKind::Reduce:
            if (member.rank != op.root)
            {
                continue;
            }
            for (int q = 0; q < member.nranks; ++q)
            {
                landing.sources.emplace_back(q, key(q));
            }
            break;
        case CommOpKind::Broadcast:
            if (member.rank == op.root && !ReadsOwn(op, member.rank))
            {
                continue; // in place at the root: nothing to land
            }
            landing.sources.emplace_back(op.root, key(op.root));
            break;
        case CommOpKind::Recv:
        {
            if (op.count == 0)
            {
                continue;
            }
            uint64_t index = m_receives[{member.commId, op.peer, member.rank}]++;
            landing.sources.emplace_back(
                op.peer,
                Source{P2pKey(member.commId, op.peer, member.rank, index),
                       BoardStream{member.commId, op.peer, member.rank, member.nranks}, index});
            break;
        }
        case CommOpKind::Send:
            continue;
        }
        if (op.recvbuff && op.count > 0)
        {
            pending.landings.push_back(std::move(landing));
        }
    }
    m_postedIndex.clear();
    if (!pending.landings.empty())
    {
        Unwaited unwaited{{record, streamId}, {}};
        for (const Landing& landing : pending.landings)
        {
            unwaited.destinations.push_back(Destination(landing.op, landing.nranks));
            pending.lo = std::min(pending.lo, unwaited.destinations.back().first);
            pending.hi = std::max(pending.hi, unwaited.destinations.back().second);
        }
        if (record != 0)
        {
            unwaited.lo = pending.lo;
            unwaited.hi = pending.hi;
            m_unwaited.push_back(std::move(unwaited));
            if (m_unwaited.size() > kMaxUnwaited)
            {
                m_unwaited.pop_front(); // by count: program order, so still deterministic
            }
        }
        m_pending.push_back(std::move(pending));
    }
}

std::vector<DataExchange::UnwaitedRecord>
DataExchange::TakeUnwaited(const void* pointer, size_t bytes)
{
    auto start = reinterpret_cast<uint64_t>(pointer);
    std::vector<UnwaitedRecord> taken;
    for (auto it = m_unwaited.begin(); it != m_unwaited.end();)
    {
        bool overlaps = false;
        if (!(it->lo < start + bytes && start < it->hi))
        {
            ++it;
            continue;
        }
        for (auto [begin, end] : it->destinations)
        {
            overlaps = overlaps || (begin < start + bytes && start < end);
        }
        if (overlaps)
        {
            taken.push_back(it->what);
            it = m_unwaited.erase(it);
        }
        else
        {
            ++it;
        }
    }
    return taken;
}

bool
DataExchange::Oldest(PendingRef* ref) const
{
    if (m_pending.empty())
    {
        return false;
    }
    const Pending& oldest = m_pending.front();
    *ref = PendingRef{oldest.id, oldest.streamId, oldest.record, oldest.ownData};
    return true;
}

uint64_t
DataExchange::NewestOverlapping(const void* pointer, size_t bytes) const
{
    auto start = reinterpret_cast<uint64_t>(pointer);
    for (auto it = m_pending.rbegin(); it != m_pending.rend(); ++it)
    {
        if (!(it->lo < start + bytes && start < it->hi))
        {
            continue;
        }
        for (const Landing& landing : it->landings)
        {
            auto [begin, end] = Destination(landing.op, landing.nranks);
            if (begin < start + bytes && start < end)
            {
                return it->id;
            }
        }
    }
    return 0;
}

bool
DataExchange::TryLandOldest()
{
    if (m_pending.empty())
    {
        return false;
    }
    Pending& oldest = m_pending.front();
    for (const Landing& landing : oldest.landings)
    {
        for (const auto& [rank, source] : landing.sources)
        {
            if (!source.key.empty() && !Present(source, Local(landing.nranks)))
            {
                return false;
            }
        }
    }
    Pending done = std::move(oldest);
    m_pending.pop_front();
    for (const Landing& landing : done.landings)
    {
        Land(landing);
    }
    return true;
}

void
DataExchange::AbandonOldest(const std::string& why, bool onlyIfDataArrives)
{
    if (m_pending.empty())
    {
        return;
    }
    if (!onlyIfDataArrives)
    {
        WarnDataLost(why);
    }
    for (const Landing& landing : m_pending.front().landings)
    {
        Discard(landing, why, onlyIfDataArrives);
    }
    m_pending.pop_front();
}

void
DataExchange::WarnDataLost(const std::string& why)
{
    WarnOnce("abandon", "the data of an NCCL operation did not arrive (" + why +
                            "); its destination keeps its contents");
}

void
DataExchange::Given(const Contribution& given, const std::string& abandoned, bool warnIfData)
{
    if (given.backed && !abandoned.empty())
    {
        ++m_stats.lostContributions;
        if (warnIfData)
        {
            WarnDataLost(abandoned);
        }
    }
}

void
DataExchange::Discard(const Landing& landing, const std::string& abandoned, bool warnIfData)
{
    const bool local = Local(landing.nranks);
    for (const auto& [rank, source] : landing.sources)
    {
        Contribution given;
        if (source.key.empty())
        {
            continue; // none expected
        }
        if (Present(source, local) && Take(source, local, &given))
        {
            Given(given, abandoned, warnIfData); // counted down now
            continue;
        }
        if (m_discarded.size() == kMaxDiscarded)
        {
            m_discarded.pop_front(); // its file stays until the run's directory goes
        }
        m_discarded.push_back(Discarded{source, local, abandoned, warnIfData});
    }
}

void
DataExchange::ReleaseDiscarded()
{
    for (auto it = m_discarded.begin(); it != m_discarded.end();)
    {
        Contribution given;
        bool released = Present(it->source, it->local) && Take(it->source, it->local, &given);
        if (released)
        {
            Given(given, it->abandoned, it->warnIfData);
        }
        it = released ? m_discarded.erase(it) : std::next(it);
    }
}

void
DataExchange::LandReady()
{
    while (TryLandOldest())
    {
    }
    if (!m_discarded.empty())
    {
        ReleaseDiscarded();
    }
}

void
DataExchange::Forget(uint64_t address, uint64_t bytes)
{
    for (Unwaited& unwaited : m_unwaited)
    {
        auto& ranges = unwaited.destinations;
        ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                                    [&](const std::pair<uint64_t, uint64_t>& range) {
                                        return range.first >= address &&
                                               range.second <= address + bytes;
                                    }),
                     ranges.end());
    }
    for (Pending& pending : m_pending)
    {
        auto& landings = pending.landings;
        for (auto it = landings.begin(); it != landings.end();)
        {
            auto [begin, end] = Destination(it->op, it->nranks);
            bool inside = begin >= address && end <= address + bytes;
            if (inside)
            {
                Discard(*it);
            }
            it = inside ? landings.erase(it) : std::next(it);
        }
    }
}

void
DataExchange::Land(const Landing& landing)
{
    const CommOp& op = landing.op;
    bool local = Local(landing.nranks);
    uint64_t bytes = op.count * uint64_t(op.typeSize);
    // What each listed rank sent, in the listing's order (rank ascending).
    std::vector<Contribution> from(landing.sources.size());
    bool any = false;
    for (size_t k = 0; k < landing.sources.size(); ++k)
    {
        if (!landing.sources[k].second.key.empty())
        {
            Take(landing.sources[k].second, local, &from[k]);
        }
        any = any || from[k].backed;
    }
    if (!any)
    {
        return; // nobody sent data: nothing moves
    }
    char* recv = static_cast<char*>(op.recvbuff);
    switch (op.kind)
    {
    case CommOpKind::Broadcast: // one source: the root
    case CommOpKind::Recv:      // one source: the peer
        m_access.Store(recv, from[0].data.get(), bytes);
        break;
    case CommOpKind::AllGather:
        for (size_t k = 0; k < from.size(); ++k)
        {
            if (from[k].backed)
            {
                const uint64_t q = uint64_t(landing.sources[k].first);
                m_access.Store(recv + q * bytes, from[k].data.get(), bytes);
            }
        }
        break;
    case CommOpKind::AllReduce:
    case CommOpKind::Reduce:
    case CommOpKind::ReduceScatter:
    {
        // Ranks combined in rank order from rank 0 (every rank is listed), so every rank gets
        // the same bits; a rank without data contributes zeros.
        uint64_t slice = op.kind == CommOpKind::ReduceScatter ? uint64_t(landing.rank) * bytes : 0;
        m_result.resize(std::max<size_t>(m_result.size(), bytes));
        std::string error;
        for (size_t q = 0; q < from.size(); ++q)
        {
            const Contribution& c = from[q];
            const char* input = nullptr;
            if (c.backed && c.size >= slice + bytes)
            {
                input = c.data.get() + slice;
            }
            else
            {
                m_zeros.resize(std::max<size_t>(m_zeros.size(), bytes), 0);
                input = m_zeros.data();
            }
            if (q == 0)
            {
                std::memcpy(m_result.data(), input, bytes);
            }
            else if (!Combine(op.dtype, op.redop, m_result.data(), input, op.count, &error))
            {
                WarnOnce("reduce:" + error, "NCCL reduction not computed (" + error +
                                                "): its destination keeps its contents");
                return;
            }
        }
        Finish(op.dtype, op.redop, m_result.data(), op.count, landing.nranks);
        m_access.Store(recv, m_result.data(), bytes);
        break;
    }
    case CommOpKind::Send:
        return;
    }
    m_stats.receivedBytes += bytes;
}

} // namespace eidolon::gpu
