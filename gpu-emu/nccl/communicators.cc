// Communicators: unique ids, init (rank, config, all, scalable), split, shrink, finalize, destroy,
// abort, revoke, async error, and the queries (count, device, rank). A communicator is one
// CommMember the emulator registers with the simulator; its id is the same on every rank because it
// is hashed from what every rank passes (the ncclUniqueId bytes, or the parent's id and the split).
#include "nccl-common.h"

#include <cuda_runtime_api.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>

using namespace eidolon::gpu;
using namespace eidolon::gpu::nccl;

namespace eidolon::gpu::nccl
{
namespace
{

constexpr uint64_t kUniqueIdMagic = 0x4e4f4c4f44494521ull; // "!EIDOLON" in little-endian bytes
constexpr unsigned kConfigMagic = 0xcafebeef;

std::unordered_set<const ncclComm*>&
Live()
{
    static auto* live = new std::unordered_set<const ncclComm*>(); // never destroyed
    return *live;
}

// Deterministic: magic, world rank, and how many ids this process made before. Never random, so
// that two runs of a program see the same communicator ids and the same virtual times.
ncclUniqueId
NextUniqueId()
{
    static uint64_t counter = 0; // under the emulator lock
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    int rank = Emulator::Get().Settings().worldRank; // -1 when no launcher said
    uint64_t fields[3] = {kUniqueIdMagic, uint64_t(std::max(rank, 0)), counter++};
    std::memcpy(id.internal, fields, sizeof(fields));
    return id;
}

uint64_t
CommIdOf(const ncclUniqueId* ids, int count)
{
    uint64_t hash = Hash(ids, sizeof(ncclUniqueId) * size_t(count));
    return hash ? hash : 1;
}

ncclResult_t
CheckReady(Emulator& emu)
{
    if (!emu.Ready() || emu.DeviceCount() == 0)
    {
        return Fail(ncclUnhandledCudaError, "cuda:nodevice",
                    "Cuda failure 'no CUDA-capable device is detected'");
    }
    return ncclSuccess;
}

// Null or unknown communicator, without completing a pending initialisation.
ncclResult_t
CheckCommOnly(const ncclComm* comm, const char* api)
{
    if (!comm)
    {
        return Fail(ncclInvalidArgument, std::string(api) + ":nullcomm",
                    std::string(api) + " : comm argument is NULL");
    }
    if (!IsLive(comm))
    {
        return Fail(ncclInvalidArgument, std::string(api) + ":badcomm",
                    std::string(api) + " : invalid or destroyed communicator");
    }
    return ncclSuccess;
}

// Waits (moves the host clock) until the work the communicator placed has completed.
void
WaitForWork(ApiCall& call, ncclComm* comm, const char* what)
{
    Emulator& emu = call.Emu();
    Completion all;
    for (Stream* stream : comm->streams)
    {
        if (emu.ResolveStream(stream, false) != stream)
        {
            continue; // destroyed since
        }
        Completion completion = emu.StreamCompletion(*stream);
        all.known = std::max(all.known, completion.known);
        all.pending.insert(all.pending.end(), completion.pending.begin(), completion.pending.end());
    }
    emu.SyncTo(all, what);
}

// Leaves the communicator and frees the member (destroy, abort).
void
Release(Emulator& emu, ncclComm* comm)
{
    if (comm->initError == ncclSuccess)
    {
        emu.DeregisterComm(comm->member);
    }
    for (ncclRegistration* registration : comm->registrations)
    {
        delete registration;
    }
    for (ncclWindow_t window : comm->windows)
    {
        delete window;
    }
    Live().erase(comm);
    delete comm;
}

ncclResult_t
InitRank(ncclComm_t* newcomm, int nranks, uint64_t commId, int rank, const ncclConfig_t* config,
         const char* api)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (ncclResult_t rc = CheckReady(emu))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(newcomm, "CommInitRank", "newcomm"))
    {
        return rc;
    }
    *newcomm = nullptr;
    if (nranks < 1 || rank < 0 || rank >= nranks)
    {
        return Fail(ncclInvalidArgument, "initrank:rank",
                    "Invalid rank requested : " + std::to_string(rank) + "/" +
                        std::to_string(nranks));
    }
    CommConfig read;
    if (ncclResult_t rc = ReadConfig(config, nullptr, api, &read))
    {
        return rc;
    }
    CommMember member;
    member.commId = commId;
    member.nranks = nranks;
    member.rank = rank;
    member.device = emu.CurrentDevice();
    member.minCtas = read.minCtas;
    member.maxCtas = read.maxCtas;
    if (ncclResult_t rc = CreateComm(emu, member, read.blocking, api, newcomm))
    {
        return rc;
    }
    emu.Clock().Charge(spec::HostCall::NcclCommInit);
    if (!read.blocking && InGroup())
    {
        // Queued (ncclAsyncLaunch): the call returns the communicator's state at that point,
        // ncclSuccess; the group's end returns ncclInProgress (init.cc, group.cc).
        NoteNonblockingInGroup();
        return ncclSuccess;
    }
    return read.blocking ? ncclSuccess : ncclInProgress;
}

} // namespace

bool
IsLive(const ncclComm* comm)
{
    return comm && Live().count(comm) != 0;
}

ncclResult_t
CheckComm(const ncclComm* comm, const char* api)
{
    if (ncclResult_t rc = CheckCommOnly(comm, api))
    {
        return rc;
    }
    const_cast<ncclComm*>(comm)->pending = false;
    if (comm->initError != ncclSuccess)
    {
        return Fail(comm->initError, std::string(api) + ":initfailed",
                    std::string(api) + " : the communicator's initialization failed");
    }
    return ncclSuccess;
}

ncclResult_t
CheckPtr(const void* pointer, const char* api, const char* name)
{
    if (!pointer)
    {
        return Fail(ncclInvalidArgument, std::string(api) + ":null:" + name,
                    std::string(api) + " : " + name + " argument is NULL");
    }
    return ncclSuccess;
}

namespace
{
// NCCL_DEBUG=VERSION, INFO or TRACE: the lines NCCL prints as it makes a communicator (init.cc:
// the version once per process, then "Init COMPLETE" per rank), in NCCL's format
// ("host:pid:tid [cudaDev] NCCL INFO ..."), on stdout where NCCL's log goes by default. The
// channels and algorithms NCCL would print are the simulator's, not known here. eidolon's own
// warnings are printed whatever NCCL_DEBUG says.
void
DebugCommCreated(const char* api, const ncclComm* comm)
{
    const char* level = std::getenv("NCCL_DEBUG");
    if (!level)
    {
        return;
    }
    std::string lowered(level);
    for (char& c : lowered)
    {
        c = char(std::tolower(static_cast<unsigned char>(c)));
    }
    const bool info = lowered == "info" || lowered == "trace";
    if (!info && lowered != "version")
    {
        return;
    }
    // The simulated node's name ("node1") where the rank has joined the simulator, as NCCL would
    // print the host it runs on.
    std::string host = Emulator::Get().Ready() ? Emulator::Get().Sink().Hostname() : "";
    if (host.empty())
    {
        char real[256] = {};
        gethostname(real, sizeof real - 1);
        host = real;
    }
    const std::string prefix = host + ":" + std::to_string(getpid()) + ":" +
                               std::to_string(long(syscall(SYS_gettid))) + " [" +
                               std::to_string(comm->member.device) + "] NCCL INFO ";
    const int code = EmulatedVersionCode();
    const std::string version =
        "NCCL version " + std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) +
        "." + std::to_string(code % 100) + "+cuda" + std::to_string(CUDART_VERSION / 1000) + "." +
        std::to_string(CUDART_VERSION % 1000 / 10);
    static std::once_flag shown;
    std::call_once(shown,
                   [&] { std::printf("%s%s\n", info ? prefix.c_str() : "", version.c_str()); });
    if (info)
    {
        std::printf("%s%s comm %p rank %d nranks %d cudaDev %d commId 0x%llx - Init COMPLETE\n",
                    prefix.c_str(), api, static_cast<const void*>(comm), comm->member.rank,
                    comm->member.nranks, comm->member.device,
                    static_cast<unsigned long long>(comm->member.commId));
    }
    std::fflush(stdout);
}
} // namespace

ncclResult_t
CreateComm(Emulator& emu, const CommMember& member, bool blocking, const char* api, ncclComm** out)
{
    // NCCL reads NCCL_ALGO / NCCL_PROTO while it makes a communicator (init.cc ->
    // ncclTopoTuneModel): from 2.24 a value it cannot read fails the creation; otherwise the
    // functions they leave nothing the release implements get NCCL's error at every call.
    const uint32_t version = uint32_t(EmulatedVersionCode());
    const char* algo = std::getenv("NCCL_ALGO");
    const char* proto = std::getenv("NCCL_PROTO");
    const spec::NcclEnvReading reading = spec::ReadNcclAlgoProto(version, algo, proto);
    if (reading.initError)
    {
        const auto code = ncclResult_t(reading.initError->code);
        Fail(code, std::string(api) + ":ncclenv", reading.initError->message);
        // Inside a group NCCL only queues the init (ncclAsyncLaunch): a blocking group's
        // ncclGroupEnd fails, a nonblocking one's returns ncclInProgress and the communicator
        // reports the error (ncclCommGetAsyncError).
        const bool grouped = InGroup();
        if (blocking && !grouped)
        {
            return code;
        }
        if (blocking)
        {
            GroupError(code);
        }
        auto* comm = new ncclComm(); // reported by ncclCommGetAsyncError, as NCCL's async init
        comm->member = member;
        comm->blocking = blocking;
        comm->pending = !blocking;
        comm->initError = code;
        Live().insert(comm);
        *out = comm;
        return ncclSuccess;
    }
    std::string error;
    if (!emu.RegisterComm(member, &error))
    {
        return Fail(ncclInvalidUsage, std::string(api) + ":register",
                    std::string(api) + ": cannot create rank " + std::to_string(member.rank) +
                        " of a communicator of " + std::to_string(member.nranks) +
                        " ranks: " + error);
    }
    auto* comm = new ncclComm();
    comm->member = member;
    comm->ncclAlgo = algo ? algo : "";
    comm->ncclProto = proto ? proto : "";
    comm->ncclAlgoSet = algo != nullptr;
    comm->ncclProtoSet = proto != nullptr;
    for (int f = 0; f < spec::kNcclFuncs; ++f)
    {
        comm->noAlgorithm[f] =
            spec::NcclNoAlgorithmError(version, f, reading.masks, algo, proto, "").has_value();
    }
    comm->blocking = blocking;
    comm->pending = !blocking;
    Live().insert(comm);
    *out = comm;
    DebugCommCreated(api, comm);
    return ncclSuccess;
}

ncclResult_t
ReadConfig(const ncclConfig_t* config, const ncclComm* parent, const char* api, CommConfig* out)
{
    // A child without a configuration of its own inherits its parent's.
    *out = CommConfig{};
    if (parent)
    {
        out->blocking = parent->blocking;
        out->minCtas = parent->member.minCtas;
        out->maxCtas = parent->member.maxCtas;
    }
    if (config)
    {
        // A program built against an older nccl.h passes a smaller struct: read what it has.
        ncclConfig_t copy = NCCL_CONFIG_INITIALIZER;
        size_t size = 0;
        std::memcpy(&size, config, sizeof(size));
        std::memcpy(&copy, config, std::min(size, sizeof(copy)));
        if (size < offsetof(ncclConfig_t, blocking) + sizeof(int) || copy.magic != kConfigMagic)
        {
            return Fail(ncclInvalidArgument, std::string(api) + ":config",
                        "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
        }
        if (copy.blocking != NCCL_CONFIG_UNDEF_INT && copy.blocking != 0 && copy.blocking != 1)
        {
            return Fail(ncclInvalidArgument, std::string(api) + ":blocking",
                        "Invalid config blocking attribute value " + std::to_string(copy.blocking));
        }
        if (copy.blocking != NCCL_CONFIG_UNDEF_INT)
        {
            out->blocking = copy.blocking == 1;
        }
        // minCTAs / maxCTAs (init.cc, parseCommConfig): positive where set, min <= max.
        const bool hasCtas = size >= offsetof(ncclConfig_t, maxCTAs) + sizeof(int);
        const int minCtas = hasCtas ? copy.minCTAs : NCCL_CONFIG_UNDEF_INT;
        const int maxCtas = hasCtas ? copy.maxCTAs : NCCL_CONFIG_UNDEF_INT;
        if ((minCtas != NCCL_CONFIG_UNDEF_INT && minCtas <= 0) ||
            (maxCtas != NCCL_CONFIG_UNDEF_INT && maxCtas <= 0) ||
            (minCtas != NCCL_CONFIG_UNDEF_INT && maxCtas != NCCL_CONFIG_UNDEF_INT &&
             minCtas > maxCtas))
        {
            return Fail(ncclInvalidArgument, std::string(api) + ":ctas",
                        "Invalid config min/max channels attribute value " +
                            std::to_string(minCtas) + "/" + std::to_string(maxCtas));
        }
        out->minCtas = minCtas != NCCL_CONFIG_UNDEF_INT ? minCtas : out->minCtas;
        out->maxCtas = maxCtas != NCCL_CONFIG_UNDEF_INT ? maxCtas : out->maxCtas;
    }
    // NCCL_COMM_BLOCKING, NCCL_MIN_CTAS and NCCL_MAX_CTAS override the configuration, as in NCCL.
    if (const char* env = std::getenv("NCCL_COMM_BLOCKING"))
    {
        if (std::strcmp(env, "0") == 0)
        {
            out->blocking = false;
        }
        else if (std::strcmp(env, "1") == 0)
        {
            out->blocking = true;
        }
    }
    for (auto [name, field] :
         {std::pair{"NCCL_MIN_CTAS", &out->minCtas}, std::pair{"NCCL_MAX_CTAS", &out->maxCtas}})
    {
        const char* env = std::getenv(name);
        if (!env || !*env)
        {
            continue;
        }
        char* end = nullptr;
        const long value = std::strtol(env, &end, 10);
        if (*end != '\0' || value <= 0 || value > 1024)
        {
            // Once per variable, not per communicator.
            static std::unordered_set<std::string> warned;
            if (warned.insert(name).second)
            {
                Warn(std::string(name) + "='" + env + "' is not a positive channel count; ignored");
            }
            continue;
        }
        *field = int(value);
    }
    if (out->minCtas > 0 && out->maxCtas > 0 && out->minCtas > out->maxCtas)
    {
        // NCCL: "minCTAs %d is larger than maxCTAs %d, set both to %d".
        Warn(std::string(api) + ": minCTAs " + std::to_string(out->minCtas) +
             " is larger than maxCTAs " + std::to_string(out->maxCtas) + ", set both to " +
             std::to_string(out->maxCtas));
        out->minCtas = out->maxCtas;
    }
    return ncclSuccess;
}

uint64_t
Hash(const void* data, size_t bytes, uint64_t seed)
{
    // FNV-1a, 64 bits.
    uint64_t hash = seed;
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i)
    {
        hash ^= p[i];
        hash *= 1099511628211ull;
    }
    return hash;
}

ncclResult_t
ResolveSplits(Emulator& emu, std::vector<SplitRequest> requests)
{
    ncclResult_t result = ncclSuccess;
    auto note = [&result](ncclResult_t rc)
    {
        if (result == ncclSuccess || result == ncclInProgress)
        {
            result = rc == ncclSuccess ? result : rc;
        }
    };
    // One split = every request naming the same parent communicator and split index.
    std::map<std::pair<uint64_t, uint64_t>, std::vector<const SplitRequest*>> splits;
    std::vector<std::pair<uint64_t, uint64_t>> order;
    for (const SplitRequest& request : requests)
    {
        if (!IsLive(request.parent))
        {
            note(Fail(ncclInvalidUsage, "split:destroyed",
                      "ncclCommSplit: the parent communicator was destroyed before the group "
                      "ended"));
            continue;
        }
        auto key = std::make_pair(request.parent->member.commId, request.index);
        if (!splits.count(key))
        {
            order.push_back(key);
        }
        splits[key].push_back(&request);
    }
    for (const auto& key : order)
    {
        std::vector<const SplitRequest*>& members = splits[key];
        int nranks = members.front()->parent->member.nranks;
        std::unordered_set<int> ranks;
        for (const SplitRequest* request : members)
        {
            ranks.insert(request->parent->member.rank);
        }
        // (color, key) of every parent rank: known here when every rank is in this process,
        // else gathered from the other processes through the simulator (NCCL's bootstrap
        // all-gather).
        std::map<int, std::pair<int, int>> colorKey; // parent rank -> (color, key)
        for (const SplitRequest* request : members)
        {
            colorKey[request->parent->member.rank] = {request->color, request->key};
        }
        if (int(ranks.size()) != int(members.size()))
        {
            note(Fail(ncclInvalidUsage, "split:twice",
                      "ncclCommSplit: a parent rank split twice in one group"));
            continue;
        }
        if (int(members.size()) != nranks)
        {
            DeviceOpSink::Entries mine;
            for (const SplitRequest* request : members)
            {
                int32_t fields[2] = {request->color, request->key};
                mine.emplace_back(
                    request->parent->member.rank,
                    std::string(reinterpret_cast<const char*>(fields), sizeof fields));
            }
            DeviceOpSink::Entries all;
            std::string error;
            std::string exchangeKey =
                "ncclCommSplit " + std::to_string(key.first) + "/" + std::to_string(key.second);
            if (!emu.Exchange(exchangeKey, nranks, mine, &all, &error))
            {
                note(Fail(ncclInvalidUsage, "split:remote",
                          "ncclCommSplit: " + std::to_string(members.size()) + " of the " +
                              std::to_string(nranks) +
                              " ranks of the parent communicator are in this process and the "
                              "others' colors cannot be gathered: " +
                              error));
                continue;
            }
            for (const auto& [rank, payload] : all)
            {
                int32_t fields[2] = {NCCL_SPLIT_NOCOLOR, 0};
                if (payload.size() == sizeof fields)
                {
                    std::memcpy(fields, payload.data(), sizeof fields);
                }
                colorKey[rank] = {fields[0], fields[1]};
            }
        }
        for (const SplitRequest* request : members)
        {
            if (request->color == NCCL_SPLIT_NOCOLOR)
            {
                continue;
            }
            // New ranks in (key, parent rank) order among the parent ranks of the same color.
            std::vector<std::pair<int, int>> group; // (key, parent rank)
            for (const auto& [rank, ck] : colorKey)
            {
                if (ck.first == request->color)
                {
                    group.emplace_back(ck.second, rank);
                }
            }
            std::sort(group.begin(), group.end());
            auto self = std::find(group.begin(), group.end(),
                                  std::make_pair(request->key, request->parent->member.rank));
            int64_t fields[4] = {int64_t(key.first), int64_t(key.second), request->color,
                                 0x53504c4954};
            uint64_t id = Hash(fields, sizeof(fields));
            CommMember member;
            member.commId = id ? id : 1;
            member.nranks = int(group.size());
            member.rank = int(self - group.begin());
            member.device = request->parent->member.device;
            member.minCtas = request->config.minCtas;
            member.maxCtas = request->config.maxCtas;
            ncclComm* child = nullptr;
            ncclResult_t rc =
                CreateComm(emu, member, request->config.blocking, "ncclCommSplit", &child);
            *request->out = child;
            note(rc != ncclSuccess ? rc : request->config.blocking ? ncclSuccess : ncclInProgress);
        }
    }
    return result;
}

} // namespace eidolon::gpu::nccl

// ---------------------------------------------------------------- ids and init

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckPtr(uniqueId, "GetUniqueId", "out"))
    {
        return rc;
    }
    *uniqueId = NextUniqueId();
    return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config)
{
    return InitRank(comm, nranks, CommIdOf(&commId, 1), rank, config, "ncclCommInitRankConfig");
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank)
{
    return InitRank(comm, nranks, CommIdOf(&commId, 1), rank, nullptr, "ncclCommInitRank");
}

// Several ids spread the bootstrap in NCCL; here the id is hashed from all of them.
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config)
{
    if (nId < 1 || !commIds)
    {
        ApiCall call(CallKind::Untimed);
        return Fail(ncclInvalidArgument, "initscalable:ids",
                    "ncclCommInitRankScalable : invalid number of unique ids " +
                        std::to_string(nId) + (commIds ? "" : " (commIds is NULL)"));
    }
    return InitRank(newcomm, nranks, CommIdOf(commIds, nId), myrank, config,
                    "ncclCommInitRankScalable");
}

// One communicator over `ndev` devices of this process (rank i on devlist[i], or device i).
NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist)
{
    ApiCall call(CallKind::Untimed);
    Emulator& emu = call.Emu();
    if (ncclResult_t rc = CheckReady(emu))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(comms, "CommInitAll", "comms"))
    {
        return rc;
    }
    if (ndev < 0 || ndev > emu.DeviceCount())
    {
        return Fail(ncclInvalidArgument, "initall:count",
                    "Invalid device count requested : " + std::to_string(ndev));
    }
    std::vector<int> devices;
    for (int i = 0; i < ndev; ++i)
    {
        int device = devlist ? devlist[i] : i;
        if (device < 0 || device >= emu.DeviceCount())
        {
            return Fail(ncclInvalidArgument, "initall:device",
                        "Invalid device " + std::to_string(device) +
                            " (totalnDev=" + std::to_string(emu.DeviceCount()) + ")");
        }
        if (std::find(devices.begin(), devices.end(), device) != devices.end())
        {
            return Fail(ncclInvalidUsage, "initall:duplicate",
                        "Duplicate device " + std::to_string(device) + " in device list");
        }
        devices.push_back(device);
    }
    ncclUniqueId id = NextUniqueId();
    uint64_t commId = CommIdOf(&id, 1);
    for (int i = 0; i < ndev; ++i)
    {
        comms[i] = nullptr;
    }
    for (int i = 0; i < ndev; ++i)
    {
        CommMember member;
        member.commId = commId;
        member.nranks = ndev;
        member.rank = i;
        member.device = devices[i];
        if (ncclResult_t rc = CreateComm(emu, member, true, "ncclCommInitAll", &comms[i]))
        {
            for (int j = 0; j < i; ++j)
            {
                Release(emu, comms[j]);
                comms[j] = nullptr;
            }
            return rc;
        }
    }
    // One charge for the call: the measured figure is an initialisation of the process's NCCL.
    emu.Clock().Charge(spec::HostCall::NcclCommInit);
    return ncclSuccess;
}

// ---------------------------------------------------------------- split and shrink

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config)
{
    bool grouped = InGroup();
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "CommSplit"))
    {
        return grouped ? GroupError(rc) : rc;
    }
    if (ncclResult_t rc = CheckPtr(newcomm, "CommSplit", "newcomm"))
    {
        return grouped ? GroupError(rc) : rc;
    }
    *newcomm = nullptr;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    {
        ncclResult_t rc = Fail(ncclInvalidArgument, "split:color",
                               "CommSplit : invalid color " + std::to_string(color) +
                                   " (a color is >= 0 or NCCL_SPLIT_NOCOLOR)");
        return grouped ? GroupError(rc) : rc;
    }
    CommConfig read;
    if (ncclResult_t rc = ReadConfig(config, comm, "ncclCommSplit", &read))
    {
        return grouped ? GroupError(rc) : rc;
    }
    SplitRequest request{comm, comm->children++, color, key, read, newcomm};
    if (grouped)
    {
        AddSplit(request); // resolved when the group ends, with the other ranks' colors
        return ncclSuccess;
    }
    return ResolveSplits(call.Emu(), {request});
}

// A child of the parent without the excluded ranks, which do not call this. Every caller passes
// the same list, so the child's id and ranks are known without an exchange.
NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "CommShrink"))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(newcomm, "CommShrink", "newcomm"))
    {
        return rc;
    }
    *newcomm = nullptr;
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
    {
        return Fail(ncclInvalidArgument, "shrink:list",
                    "ncclCommShrink : invalid exclude list (count " +
                        std::to_string(excludeRanksCount) + ")");
    }
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
    {
        return Fail(ncclInvalidArgument, "shrink:flags",
                    "ncclCommShrink : invalid flags " + std::to_string(shrinkFlags));
    }
    std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
    std::sort(excluded.begin(), excluded.end());
    for (size_t i = 0; i < excluded.size(); ++i)
    {
        int rank = excluded[i];
        if (rank < 0 || rank >= comm->member.nranks || (i > 0 && excluded[i - 1] == rank))
        {
            return Fail(ncclInvalidArgument, "shrink:rank",
                        "ncclCommShrink : invalid or repeated excluded rank " +
                            std::to_string(rank));
        }
        if (rank == comm->member.rank)
        {
            return Fail(ncclInvalidArgument, "shrink:self",
                        "ncclCommShrink : rank " + std::to_string(rank) +
                            " excludes itself (excluded ranks do not call ncclCommShrink)");
        }
    }
    CommConfig read;
    if (ncclResult_t rc = ReadConfig(config, comm, "ncclCommShrink", &read))
    {
        return rc;
    }
    std::vector<int64_t> fields = {int64_t(comm->member.commId), int64_t(comm->children++),
                                   0x534852494e4b};
    fields.insert(fields.end(), excluded.begin(), excluded.end());
    CommMember member;
    member.commId = Hash(fields.data(), fields.size() * sizeof(int64_t));
    member.commId = member.commId ? member.commId : 1;
    member.nranks = comm->member.nranks - int(excluded.size());
    member.rank = comm->member.rank -
                  int(std::lower_bound(excluded.begin(), excluded.end(), comm->member.rank) -
                      excluded.begin());
    member.device = comm->member.device;
    member.minCtas = read.minCtas;
    member.maxCtas = read.maxCtas;
    if (ncclResult_t rc = CreateComm(call.Emu(), member, read.blocking, "ncclCommShrink", newcomm))
    {
        return rc;
    }
    return read.blocking ? ncclSuccess : ncclInProgress;
}

// ---------------------------------------------------------------- end of life

// Flushes the communicator's work: a blocking communicator waits until it has completed.
NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm)
{
    ApiCall call(CallKind::Sync);
    if (!comm)
    {
        return ncclSuccess; // as NCCL
    }
    if (ncclResult_t rc = CheckComm(comm, "ncclCommFinalize"))
    {
        return rc;
    }
    if (comm->finalized)
    {
        return Fail(ncclInvalidUsage, "finalize:twice",
                    "ncclCommFinalize: comm (rank = " + std::to_string(comm->member.rank) +
                        ") has already been finalized");
    }
    comm->finalized = true;
    if (!comm->blocking)
    {
        comm->pending = true; // done at the next ncclCommGetAsyncError
        return ncclInProgress;
    }
    WaitForWork(call, comm, "ncclCommFinalize");
    return ncclSuccess;
}

// Finalizes (waits) if the program did not, then frees the member.
NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm)
{
    ApiCall call(CallKind::Sync);
    if (!comm)
    {
        return ncclSuccess;
    }
    if (ncclResult_t rc = CheckCommOnly(comm, "ncclCommDestroy"))
    {
        return rc;
    }
    if (!comm->finalized && comm->blocking)
    {
        WaitForWork(call, comm, "ncclCommDestroy");
    }
    Release(call.Emu(), comm);
    return ncclSuccess;
}

// Frees the member at once; work already placed keeps its times.
NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm)
{
    ApiCall call(CallKind::Untimed);
    if (!comm)
    {
        return ncclSuccess;
    }
    if (ncclResult_t rc = CheckCommOnly(comm, "ncclCommAbort"))
    {
        return rc;
    }
    Release(call.Emu(), comm);
    return ncclSuccess;
}

// Further operations on a revoked communicator fail; split, shrink and destroy still work.
NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, "ncclCommRevoke"))
    {
        return rc;
    }
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
    {
        return Fail(ncclInvalidArgument, "revoke:flags",
                    "ncclCommRevoke : invalid flags " + std::to_string(revokeFlags));
    }
    comm->revoked = true;
    return ncclSuccess;
}

// ncclInProgress once for a nonblocking communicator whose init, split or finalize was not yet
// reported; ncclSuccess from then on (deterministic: nothing completes in the background), or the
// code of an init NCCL failed.
NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckCommOnly(comm, "ncclGetAsyncError"))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(asyncError, "ncclGetAsyncError", "asyncError"))
    {
        return rc;
    }
    *asyncError = comm->pending ? ncclInProgress : comm->initError;
    comm->pending = false;
    return ncclSuccess;
}

// ---------------------------------------------------------------- queries

namespace
{
// One field of a communicator's member, with NCCL's checks of the handle and the out pointer.
ncclResult_t
QueryMember(const ncclComm_t comm, int* out, const char* function, const char* argument,
            int CommMember::*field)
{
    ApiCall call(CallKind::Untimed);
    if (ncclResult_t rc = CheckComm(comm, function))
    {
        return rc;
    }
    if (ncclResult_t rc = CheckPtr(out, function, argument))
    {
        return rc;
    }
    *out = comm->member.*field;
    return ncclSuccess;
}
} // namespace

// The number of ranks in the communicator.
NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count)
{
    return QueryMember(comm, count, "CommCount", "count", &CommMember::nranks);
}

// The CUDA device the communicator runs on.
NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device)
{
    return QueryMember(comm, device, "CommCuDevice", "device", &CommMember::device);
}

// The caller's rank in the communicator.
NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank)
{
    return QueryMember(comm, rank, "CommUserRank", "rank", &CommMember::rank);
}
