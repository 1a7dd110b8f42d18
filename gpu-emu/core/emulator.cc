#include "emulator.h"

#include "bridge-client.h"
#include "diagnostics.h"
#include "host-kernels.h"
#include "host-time.h"
#include "per-thread.h"

#include <nlohmann/json.hpp>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>

namespace eidolon::gpu
{
namespace
{

thread_local int t_currentDevice = 0;
PerThread<std::vector<Stream*>> g_perThreadStreams; // per device (per-thread.h: no thread_local)
thread_local const void* t_polledObject = nullptr;
thread_local int t_pollCount = 0;

constexpr uint64_t kReserveGranule = 2ull << 20;

uint64_t
RoundUp(uint64_t value, uint64_t granule)
{
    if (value > UINT64_MAX - (granule - 1))
    {
        return UINT64_MAX; // would wrap to a small size: more than any capacity
    }
    return (value + granule - 1) / granule * granule;
}

// The process that created the emulator. A child that fork()ed without exec shares its state,
// sockets included, and must not say the parent's goodbye when it exits (real CUDA is not usable
// in such a child either).
pid_t g_creatorPid = 0;

// Run by exit() (on_exit: it also gets the status, which the simulator reports for a rank that
// fails, such as a Python rank ending on an uncaught exception).
void
WriteReportAtExit(int status, void*)
{
    // A process that only registered kernels (importing torch, torchrun's agent) never joined
    // the simulator and has nothing to report.
    Emulator* joined = Emulator::IfCreated();
    if (!joined || getpid() != g_creatorPid)
    {
        return;
    }
    Emulator& emulator = *joined;
    // A thread still inside a call at exit must not make exit hang: report without the lock then.
    std::unique_lock<std::mutex> lock(emulator.Mutex(), std::try_to_lock);
    ++ApiDepth(); // clocks read from here on (ZeroMQ's too) are real: we hold the lock
    emulator.SendUsageAtExit(status);
    if (!emulator.Settings().reportPath.empty() && !emulator.IsHelper())
    {
        try
        {
            emulator.WriteReport(emulator.Settings().reportPath);
        }
        catch (const std::exception& e)
        {
            Warn(std::string("cannot write the report: ") + e.what());
        }
    }
}

} // namespace

int&
ApiDepth()
{
    static thread_local int depth = 0;
    return depth;
}

// ------------------------------------------------------------------ address space

void
DeviceAddressSpace::Reserve(uint64_t bytes, int device)
{
    m_size = RoundUp(std::max<uint64_t>(bytes, kReserveGranule), kReserveGranule);
    void* base =
        mmap(nullptr, m_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
    {
        // Address space limit: fall back to synthetic addresses high in the canonical range.
        Warn("cannot reserve device address space; using synthetic device addresses");
        m_base = 0x7a0000000000ull + (uint64_t(device) << 40);
    }
    else
    {
        m_base = reinterpret_cast<uint64_t>(base);
    }
    m_holes[m_base] = m_size;
}

uint64_t
DeviceAddressSpace::Take(uint64_t bytes)
{
    for (auto it = m_holes.begin(); it != m_holes.end(); ++it)
    {
        if (it->second >= bytes)
        {
            uint64_t address = it->first;
            uint64_t remaining = it->second - bytes;
            m_holes.erase(it);
            if (remaining > 0)
            {
                m_holes[address + bytes] = remaining;
            }
            return address;
        }
    }
    return 0;
}

void
DeviceAddressSpace::Give(uint64_t address, uint64_t bytes)
{
    auto it = m_holes.emplace(address, bytes).first;
    auto next = std::next(it);
    if (next != m_holes.end() && it->first + it->second == next->first)
    {
        it->second += next->second;
        m_holes.erase(next);
    }
    if (it != m_holes.begin())
    {
        auto previous = std::prev(it);
        if (previous->first + previous->second == it->first)
        {
            previous->second += it->second;
            m_holes.erase(it);
        }
    }
}

// ------------------------------------------------------------------ setup

namespace
{
std::atomic<Emulator*> g_instance{nullptr};

// The rank as the bridge client sees it (rank-host.h): no access to our lock beyond a clock read.
class EmulatorRankHost final : public RankHost
{
public:
    EmulatorRankHost(Emulator& emulator, RankIdentity identity)
        : m_emulator(emulator)
        , m_identity(std::move(identity))
    {
    }

    const RankIdentity& Identity() const override { return m_identity; }

    Ns Now() const override { return m_emulator.Clock().Now(); }

    Ns NowFromOwnThread() const override
    {
        std::lock_guard<std::mutex> guard(m_emulator.Mutex());
        return m_emulator.Clock().Now();
    }

    void AdoptThread() const override { ++ApiDepth(); }

    int DrivingThreads() const override { return m_emulator.Clock().DrivingThreads(); }
    bool AllDrivingThreadsParked() const override
    {
        return m_emulator.Clock().AllDrivingThreadsParked();
    }

    void Warn(const std::string& message) const override { gpu::Warn(message); }

private:
    Emulator& m_emulator;
    RankIdentity m_identity;
};
// How the data exchange reads and writes this rank's memory: device memory through its host
// backing, host and managed memory directly.
class EmulatorDataAccess final : public DataAccess
{
public:
    EmulatorDataAccess(Emulator& emulator, HostBacking& backing)
        : m_emulator(emulator)
        , m_backing(backing)
    {
    }

    bool HasData(const void* pointer, size_t bytes) override
    {
        if (!m_emulator.ValidSpan(pointer, bytes))
        {
            return false; // a freed or foreign device address (a stale kernel argument)
        }
        return m_emulator.KindOf(pointer) != MemoryKind::Device ||
               m_backing.AnyBacked(reinterpret_cast<uint64_t>(pointer), bytes);
    }

    void Load(const void* pointer, void* out, size_t bytes) override
    {
        if (!m_emulator.ValidSpan(pointer, bytes))
        {
            std::memset(out, 0, bytes);
            return;
        }
        if (m_emulator.KindOf(pointer) != MemoryKind::Device)
        {
            std::memcpy(out, pointer, bytes);
            return;
        }
        m_backing.Read(reinterpret_cast<uint64_t>(pointer), out, bytes);
    }

    void Store(void* pointer, const void* data, size_t bytes) override
    {
        if (!m_emulator.ValidSpan(pointer, bytes))
        {
            return;
        }
        if (m_emulator.KindOf(pointer) != MemoryKind::Device)
        {
            std::memmove(pointer, data, bytes);
            return;
        }
        m_backing.Write(reinterpret_cast<uint64_t>(pointer), data, bytes);
    }

    void Zero(void* pointer, size_t bytes) override
    {
        if (!m_emulator.ValidSpan(pointer, bytes))
        {
            return;
        }
        if (m_emulator.KindOf(pointer) != MemoryKind::Device)
        {
            std::memset(pointer, 0, bytes);
            return;
        }
        m_backing.Fill(reinterpret_cast<uint64_t>(pointer), 0, bytes);
    }

private:
    Emulator& m_emulator;
    HostBacking& m_backing;
};

} // namespace

Emulator&
Emulator::Local()
{
    static Emulator* instance = []
    {
        ++ApiDepth(); // a clock read while the state is being built passes through to libc
        auto* emulator = new Emulator(); // never destroyed: atexit handlers still use it
        --ApiDepth();
        return emulator;
    }();
    return *instance;
}

Emulator&
Emulator::Get()
{
    Emulator& emulator = Local();
    if (!g_instance.load(std::memory_order_acquire))
    {
        // Joining waits for the simulator (and so for ZeroMQ's I/O thread): never inside the
        // registrations a dlopen() runs, only at the first call that needs the GPUs.
        static std::once_flag joined;
        std::call_once(joined,
                       [&emulator]
                       {
                           ++ApiDepth();
                           emulator.JoinSimulator();
                           --ApiDepth();
                           g_instance.store(&emulator, std::memory_order_release);
                       });
    }
    return emulator;
}

Emulator*
Emulator::IfCreated()
{
    return g_instance.load(std::memory_order_acquire);
}

Emulator::Emulator()
    : m_config(ReadConfig())
    , m_clock(0.0)
    , m_sink(std::make_unique<LocalSink>())
    , m_backing(std::make_unique<HostBacking>(m_config.hostDataCapBytes))
{
    m_dataAccess = std::make_unique<EmulatorDataAccess>(*this, *m_backing);
    m_exchange = std::make_unique<DataExchange>(m_config.dataDir, *m_dataAccess,
                                                m_config.hostDataOpMaxBytes);
    try
    {
        m_spec = FindGpuSpec(m_config.gpuName, m_config.specDirs);
        SetUpHostTime(m_config, m_clock); // the host's call costs and the host-time mode
        m_ready = true;
    }
    catch (const std::exception& e)
    {
        m_initError = e.what();
        Warn(m_initError + "; the program sees no GPU");
    }
    uint64_t capacity = m_config.memoryCapacityOverride ? m_config.memoryCapacityOverride
                                                        : m_spec.memoryUsableBytes;
    int count = m_ready ? std::max(0, m_config.deviceCount) : 0;
    for (int i = 0; i < count; ++i)
    {
        auto device = std::make_unique<Device>();
        device->index = i;
        device->capacity = capacity;
        device->peerAccess.assign(count, false);
        m_devices.push_back(std::move(device));
        Stream* legacy = CreateStream(i, 0, 0);
        legacy->legacy = true;
        m_devices.back()->legacyStream = legacy;
    }
    auto profiles = std::make_unique<ProfileDb>();
    for (const auto& path : m_config.profileDbPaths)
    {
        try
        {
            profiles->Load(path);
        }
        catch (const std::exception& e)
        {
            Warn(std::string("profile database skipped: ") + e.what());
        }
    }
    m_profiles = profiles.get();
    m_costs.Add(std::move(profiles));
    m_costs.Add(std::make_unique<GemmModel>(m_config.minKernelNs));
    m_costs.Add(std::make_unique<KernelFamilyModel>(m_config.minKernelNs));
    m_costs.Add(std::make_unique<RooflineModel>(m_config.minKernelNs));
    g_creatorPid = getpid();
    on_exit(WriteReportAtExit, nullptr);
}

void
Emulator::JoinSimulator()
{
    if (m_ready && !m_config.simEndpoint.empty())
    {
        std::string error;
        RankIdentity identity{m_config.worldRank,
                              m_config.worldSize,
                              m_config.localRank,
                              m_config.node,
                              m_config.rankName,
                              m_spec.name,
                              static_cast<int>(m_devices.size()),
                              m_config.simEndpoint,
                              m_config.simConnectTimeoutSeconds};
        m_rankHost = std::make_unique<EmulatorRankHost>(*this, std::move(identity));
        std::string helperOf;
        std::unique_ptr<DeviceOpSink> sink = bridge::Connect(*m_rankHost, &error, &helperOf);
        if (!sink && !helperOf.empty())
        {
            // A subprocess of a rank with the rank's identity (torch.compile's workers query the
            // device): it sees the GPU and prices its work locally, beside the simulation, and
            // leaves the rank's EIDOLON_REPORT file to the rank.
            m_helper = true;
            return;
        }
        if (!sink)
        {
            // Without the simulator the program would print numbers that mean nothing: no GPU.
            std::lock_guard<std::mutex> lock(m_mutex); // registrations may run meanwhile
            m_ready = false;
            m_initError = "cannot join eidolon-sim at " + m_config.simEndpoint + ": " + error;
            Warn(m_initError + "; the program sees no GPU");
        }
        else
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_sink = std::move(sink);
            m_joinedSink.store(m_sink.get(), std::memory_order_release);
            // The run's processes share the simulator's epochs: they name the exchange board.
            int64_t monotonic = 0, realtime = 0, boottime = 0;
            if (m_sink->ClockEpochs(&monotonic, &realtime, &boottime))
            {
                m_exchange->SetRunTag(std::to_string(realtime) + "-" + std::to_string(monotonic));
            }
        }
    }
}

int
Emulator::CurrentDevice() const
{
    return t_currentDevice;
}

void
Emulator::SetCurrentDevice(int index)
{
    t_currentDevice = index;
}

// ------------------------------------------------------------------ memory

uint64_t
Emulator::AllocateDevice(int index, uint64_t bytes, bool managed)
{
    Device& device = DeviceAt(index);
    uint64_t charged = RoundUp(bytes, kDeviceAllocAlignment);
    if (charged > device.capacity - device.used)
    {
        return 0;
    }
    uint64_t address = 0;
    if (managed)
    {
        void* memory = mmap(nullptr, charged, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (memory == MAP_FAILED)
        {
            return 0;
        }
        address = reinterpret_cast<uint64_t>(memory);
    }
    else
    {
        if (!device.reserved)
        {
            device.addressSpace.Reserve(device.capacity * 2, index);
            device.reserved = true;
        }
        address = device.addressSpace.Take(charged);
        if (address == 0)
        {
            return 0;
        }
        m_backing->Track(address, charged, index);
    }
    m_allocations[address] = Allocation{address, bytes, charged, index, managed};
    device.used += charged;
    RaisePeak(device);
    return address;
}

void
Emulator::RaisePeak(Device& device)
{
    if (device.used > device.peak)
    {
        device.peak = device.used;
        m_sink->OnPeakMemory(DeviceUsage{device.index, device.peak, device.capacity, 0, 0});
    }
}

bool
Emulator::FreeDevice(uint64_t address)
{
    auto it = m_allocations.find(address);
    if (it == m_allocations.end())
    {
        return false;
    }
    const Allocation& allocation = it->second;
    if (allocation.virtualRange)
    {
        return false;
    }
    Device& device = DeviceAt(allocation.device);
    device.used -= allocation.charged;
    if (allocation.managed)
    {
        munmap(reinterpret_cast<void*>(address), allocation.charged);
    }
    else
    {
        m_exchange->Forget(address, allocation.charged);
        m_backing->Untrack(address);
        device.addressSpace.Give(address, allocation.charged);
    }
    m_allocations.erase(it);
    return true;
}

void
Emulator::AddVirtualRange(uint64_t address, uint64_t bytes, int device)
{
    Allocation range{address, bytes, bytes, device, false};
    range.virtualRange = true;
    m_allocations[address] = range;
    m_backing->Track(address, bytes, device);
}

void
Emulator::RemoveVirtualRange(uint64_t address)
{
    auto it = m_allocations.find(address);
    if (it == m_allocations.end() || !it->second.virtualRange)
    {
        return;
    }
    m_exchange->Forget(address, it->second.size);
    m_backing->Untrack(address);
    m_allocations.erase(it);
}

bool
Emulator::ChargePhysical(int index, uint64_t bytes)
{
    Device& device = DeviceAt(index);
    if (bytes > device.capacity - device.used)
    {
        return false;
    }
    device.used += bytes;
    RaisePeak(device);
    return true;
}

void
Emulator::ReleasePhysical(int index, uint64_t bytes)
{
    Device& device = DeviceAt(index);
    device.used -= std::min(bytes, device.used);
}

const Allocation*
Emulator::FindAllocation(uint64_t address) const
{
    auto it = m_allocations.upper_bound(address);
    if (it == m_allocations.begin())
    {
        return nullptr;
    }
    --it;
    const Allocation& allocation = it->second;
    return address < allocation.address + std::max<uint64_t>(allocation.charged, 1) ? &allocation
                                                                                    : nullptr;
}

MemoryKind
Emulator::KindOf(const void* pointer) const
{
    const Allocation* allocation = FindAllocation(reinterpret_cast<uint64_t>(pointer));
    if (!allocation)
    {
        return MemoryKind::Host;
    }
    return allocation->managed ? MemoryKind::Managed : MemoryKind::Device;
}

bool
Emulator::ValidSpan(const void* pointer, size_t bytes) const
{
    const auto address = reinterpret_cast<uint64_t>(pointer);
    if (const Allocation* allocation = FindAllocation(address))
    {
        const uint64_t end = allocation->address + std::max<uint64_t>(allocation->size, 1);
        return address < end && bytes <= end - address;
    }
    for (const auto& device : m_devices)
    {
        if (device->addressSpace.Contains(address))
        {
            return false;
        }
    }
    return true;
}

int
Emulator::DeviceOf(const void* pointer) const
{
    const Allocation* allocation = FindAllocation(reinterpret_cast<uint64_t>(pointer));
    return allocation ? allocation->device : -1;
}

// ------------------------------------------------------------------ streams and events

Stream*
Emulator::CreateStream(int device, unsigned flags, int priority)
{
    auto* stream = new Stream();
    stream->id = m_nextStreamId++;
    stream->device = device;
    stream->flags = flags;
    stream->priority = priority;
    m_streams.insert(stream);
    m_devices[device]->streams.push_back(stream);
    return stream;
}

bool
Emulator::DestroyStream(Stream* stream)
{
    if (!m_streams.count(stream) || stream->legacy)
    {
        return false;
    }
    auto& list = m_devices[stream->device]->streams;
    list.erase(std::remove(list.begin(), list.end(), stream), list.end());
    m_streams.erase(stream);
    delete stream; // work already placed keeps its times; CUDA lets it complete
    return true;
}

Stream*
Emulator::ResolveStream(void* handle, bool perThreadDefault)
{
    if (handle == nullptr)
    {
        handle = perThreadDefault ? kPerThreadStreamHandle : kLegacyStreamHandle;
    }
    if (handle == kLegacyStreamHandle)
    {
        return DeviceCount() ? DeviceAt(CurrentDevice()).legacyStream : nullptr;
    }
    if (handle == kPerThreadStreamHandle)
    {
        if (!DeviceCount())
        {
            return nullptr;
        }
        int device = CurrentDevice();
        std::vector<Stream*>& streams = g_perThreadStreams.Get();
        if (streams.size() <= size_t(device))
        {
            streams.resize(m_devices.size(), nullptr);
        }
        Stream*& stream = streams[device];
        if (!stream)
        {
            stream = CreateStream(device, 0, 0); // blocking: it orders with the legacy stream
        }
        return stream;
    }
    auto* stream = static_cast<Stream*>(handle);
    return m_streams.count(stream) ? stream : nullptr;
}

Event*
Emulator::CreateEvent(unsigned flags)
{
    auto* event = new Event();
    event->device = CurrentDevice();
    event->flags = flags;
    m_events.insert(event);
    return event;
}

bool
Emulator::DestroyEvent(Event* event)
{
    if (!m_events.erase(event))
    {
        return false;
    }
    delete event;
    return true;
}

// ------------------------------------------------------------------ timelines

Ns
Emulator::ImplicitOrder(const Stream& stream, std::vector<uint64_t>* deps)
{
    const Device& device = *m_devices[stream.device];
    auto waitFor = [&](Stream& other) -> Ns
    {
        Normalize(other);
        if (other.pending && deps)
        {
            m_sink->Seal(other.id); // its record's id now stands for what this op waits on
            deps->push_back(other.pending);
        }
        return other.tail;
    };
    if (stream.legacy)
    {
        Ns latest = 0;
        for (Stream* other : device.streams)
        {
            if (other != &stream && !(other->flags & kStreamNonBlocking))
            {
                latest = std::max(latest, waitFor(*other));
            }
        }
        return latest;
    }
    return (stream.flags & kStreamNonBlocking) ? 0 : waitFor(*device.legacyStream);
}

void
Emulator::Normalize(Stream& stream)
{
    if (stream.pending)
    {
        auto it = m_resolved.find(stream.pending);
        if (it != m_resolved.end())
        {
            stream.tail = std::max(stream.tail, it->second);
            stream.pending = 0;
        }
    }
}

void
Emulator::Normalize(Event& event)
{
    if (event.pending)
    {
        auto it = m_resolved.find(event.pending);
        if (it != m_resolved.end())
        {
            event.time = std::max(event.time, it->second);
            event.pending = 0;
        }
    }
}

Ns
Emulator::ReadyTime(Stream& stream, std::vector<uint64_t>* deps)
{
    Normalize(stream);
    if (stream.pending)
    {
        deps->push_back(stream.pending);
    }
    for (uint64_t dep : stream.waitDeps)
    {
        if (!m_resolved.count(dep) && std::find(deps->begin(), deps->end(), dep) == deps->end())
        {
            deps->push_back(dep);
        }
    }
    stream.waitDeps.clear();
    return std::max(
        {m_clock.Now() + m_spec.launchLatencyUs * 1e3, stream.tail, ImplicitOrder(stream, deps)});
}

Placement
Emulator::Place(Stream& stream, OpKind kind, Ns duration, const std::string& label,
                const char* provider, uint64_t bytes)
{
    if (stream.capture)
    {
        Graph& graph = stream.capture->graph;
        graph.nodes.push_back(
            GraphNode{kind, label, provider, duration, bytes, stream.device, stream.captureDeps});
        stream.captureDeps = {graph.nodes.size() - 1};
        return {true, 0, 0};
    }
    PollSatisfied(); // the thread submits work: whatever it polled before was no spin loop
    Ns issued = m_clock.Now();
    std::vector<uint64_t> deps;
    Ns start = ReadyTime(stream, &deps);
    Ns end = start + duration;
    stream.tail = end;
    Device& device = DeviceAt(stream.device);
    device.busy += duration;
    if (kind != OpKind::EventRecord)
    {
        m_costs.Count(provider, duration);
    }
    if (!deps.empty())
    {
        // Its start waits on the simulator: the sink folds it into the stream's pending record.
        stream.pending = m_sink->OnPendingOp(
            PendingOp{kind, stream.device, stream.id, &label, std::move(deps), start, duration});
        RecordActivity({kind, provider, stream.device, stream.id, label, bytes, start, end,
                        duration, stream.pending});
        return {false, start, end, stream.pending};
    }
    m_sink->OnOp(
        DeviceOp{kind, stream.device, stream.id, &label, provider, issued, start, end, bytes});
    RecordActivity({kind, provider, stream.device, stream.id, label, bytes, start, end, duration});
    return {false, start, end};
}

void
Emulator::RecordEvent(Event& event, Stream& stream)
{
    if (stream.capture)
    {
        event.capture = stream.capture;
        event.captureNodes = stream.captureDeps;
        return;
    }
    static const std::string label = "event record";
    Placement placement = Place(stream, OpKind::EventRecord, 0, label, "event", 0);
    event.capture.reset();
    event.recorded = true;
    event.time = placement.end;
    event.pending = placement.pending;
    if (placement.pending)
    {
        m_sink->Seal(stream.id); // the event stands for the record as it is now
    }
}

void
Emulator::StreamWaitEvent(Stream& stream, const Event& event)
{
    if (event.capture && !event.capture->invalidated)
    {
        if (!stream.capture)
        {
            stream.capture = event.capture; // the stream joins the capture (fork)
            stream.captureDeps.clear();
        }
        if (stream.capture == event.capture)
        {
            for (size_t node : event.captureNodes)
            {
                if (std::find(stream.captureDeps.begin(), stream.captureDeps.end(), node) ==
                    stream.captureDeps.end())
                {
                    stream.captureDeps.push_back(node);
                }
            }
        }
        return;
    }
    if (event.recorded)
    {
        stream.tail = std::max(stream.tail, event.time);
        if (event.pending && !m_resolved.count(event.pending))
        {
            stream.waitDeps.push_back(event.pending);
        }
        else if (event.pending)
        {
            stream.tail = std::max(stream.tail, m_resolved[event.pending]);
        }
    }
}

Completion
Emulator::StreamCompletion(Stream& stream)
{
    Completion completion;
    Normalize(stream);
    completion.known = stream.tail;
    if (stream.pending)
    {
        m_sink->Seal(stream.id);
        completion.pending.push_back(stream.pending);
    }
    if (stream.legacy)
    {
        completion.known = std::max(completion.known, ImplicitOrder(stream, &completion.pending));
    }
    return completion;
}

Completion
Emulator::DeviceCompletion(int index)
{
    Completion completion;
    for (Stream* stream : m_devices[index]->streams)
    {
        Normalize(*stream);
        completion.known = std::max(completion.known, stream->tail);
        if (stream->pending)
        {
            m_sink->Seal(stream->id);
            completion.pending.push_back(stream->pending);
        }
    }
    return completion;
}

Completion
Emulator::EventCompletion(Event& event)
{
    Normalize(event);
    Completion completion{event.time, {}};
    if (event.pending)
    {
        completion.pending.push_back(event.pending);
    }
    return completion;
}

Completion
Emulator::OpCompletion(const Placement& placement) const
{
    Completion completion{placement.end, {}};
    if (placement.pending)
    {
        completion.pending.push_back(placement.pending);
    }
    return completion;
}

const ClockBases&
VirtualClockBases()
{
    static ClockBases bases = []
    {
        ClockBases shared{};
        if (Emulator* emulator = Emulator::IfCreated();
            emulator &&
            emulator->Sink().ClockEpochs(&shared.monotonic, &shared.realtime, &shared.boottime))
        {
            return shared; // every rank of the run reads the same clock
        }
        auto real = [](clockid_t clock)
        {
            timespec ts{};
            syscall(SYS_clock_gettime, clock, &ts); // never the interposed (virtual) one
            return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
        };
        return ClockBases{real(CLOCK_MONOTONIC), real(CLOCK_REALTIME), real(CLOCK_BOOTTIME)};
    }();
    return bases;
}

uint32_t
NewGraphId()
{
    static std::atomic<uint32_t> next{0};
    return ++next;
}

void
Emulator::RecordActivity(const ActivityOp& op)
{
    if (ActivityLog::Get().Recording())
    {
        ActivityLog::Get().OnOp(op, m_clock.Now());
    }
}

std::vector<Ns>
Emulator::RecordEnds(const std::vector<uint64_t>& records)
{
    std::vector<uint64_t> ask;
    for (uint64_t record : records)
    {
        if (!m_resolved.count(record))
        {
            ask.push_back(record);
        }
    }
    // A stream's open record asked about must not grow after its end is known.
    for (const auto& device : m_devices)
    {
        for (Stream* stream : device->streams)
        {
            if (stream->pending && std::count(ask.begin(), ask.end(), stream->pending))
            {
                m_sink->Seal(stream->id);
            }
        }
    }
    if (!ask.empty() && !m_runOver)
    {
        AskSimulator(ask, true, "a profiler's activity records");
    }
    std::vector<Ns> ends;
    for (uint64_t record : records)
    {
        auto it = m_resolved.find(record);
        ends.push_back(it != m_resolved.end() ? it->second : -1);
    }
    return ends;
}

Ns
Emulator::Resolve(const Completion& completion, const char* what, bool query)
{
    Ns time = completion.known;
    std::vector<uint64_t> ask;
    for (uint64_t record : completion.pending)
    {
        auto it = m_resolved.find(record);
        if (it != m_resolved.end())
        {
            time = std::max(time, it->second);
        }
        else if (std::find(ask.begin(), ask.end(), record) == ask.end())
        {
            ask.push_back(record);
        }
    }
    if (!ask.empty())
    {
        std::vector<Ns> ends = AskSimulator(ask, query, what);
        for (size_t i = 0; i < ask.size() && i < ends.size(); ++i)
        {
            // -1: a query, not ended by the clock
            time = ends[i] < 0 ? std::numeric_limits<Ns>::infinity() : std::max(time, ends[i]);
        }
    }
    return time;
}

std::vector<Ns>
Emulator::AskSimulator(const std::vector<uint64_t>& records, bool query, const char* what)
{
    std::vector<Ns> ends =
        m_sink->Resolve(records, m_clock.Now(), m_clock.DrivingThreads(), query, what, m_mutex);
    m_runOver = m_runOver || m_sink->RunOver();
    m_clock.Rebase();
    for (size_t i = 0; i < records.size() && i < ends.size(); ++i)
    {
        if (ends[i] >= 0)
        {
            m_resolved[records[i]] = ends[i];
        }
    }
    m_exchange->LandReady(); // an answer may mean that peers' data has arrived
    return ends;
}

void
Emulator::SyncTo(Ns t)
{
    m_clock.AdvanceTo(t);
}

void
Emulator::SyncTo(const Completion& completion, const char* what)
{
    SyncTo(Resolve(completion, what));
}

bool
Emulator::PollTurnsIntoWait(const void* object, const Completion& completion, const char* what)
{
    if (t_polledObject == object)
    {
        ++t_pollCount;
    }
    else
    {
        t_polledObject = object;
        t_pollCount = 1;
    }
    if (t_pollCount >= m_config.pollsBeforeWait && m_clock.CallingThreadDrives())
    {
        SyncTo(completion, what);
        PollSatisfied();
        return true;
    }
    return false;
}

void
Emulator::PollSatisfied()
{
    t_polledObject = nullptr;
    t_pollCount = 0;
}

// ------------------------------------------------------------------ kernels and pricing

KernelInfo*
Emulator::RegisterKernel(const void* hostFunction, const std::string& mangledName, int64_t argBytes)
{
    KernelInfo* kernel = KernelByName(mangledName);
    if (argBytes >= 0)
    {
        kernel->argBytes = argBytes;
    }
    if (hostFunction)
    {
        m_kernelsByHost[hostFunction] = kernel;
    }
    return kernel;
}

KernelInfo*
Emulator::KernelByHostFunction(const void* hostFunction)
{
    auto it = m_kernelsByHost.find(hostFunction);
    return it == m_kernelsByHost.end() ? nullptr : it->second;
}

KernelInfo*
Emulator::KernelByName(const std::string& mangledName)
{
    auto it = m_kernelsByName.find(mangledName);
    if (it != m_kernelsByName.end())
    {
        return it->second;
    }
    std::string name = NormalizeKernelName(mangledName);
    m_kernels.push_back(KernelInfo{mangledName, name, &FamilyOf(name)});
    m_kernelsByName[mangledName] = &m_kernels.back();
    return &m_kernels.back();
}

uint64_t
Emulator::SymbolAddress(const void* hostVariable, int device)
{
    auto it = m_symbols.find(hostVariable);
    if (it == m_symbols.end() || device < 0 || device >= DeviceCount())
    {
        return 0;
    }
    Symbol& symbol = it->second;
    symbol.addressOnDevice.resize(m_devices.size(), 0);
    if (!symbol.addressOnDevice[device])
    {
        symbol.addressOnDevice[device] =
            AllocateDevice(device, std::max<uint64_t>(symbol.size, 1), false);
    }
    return symbol.addressOnDevice[device];
}

bool
Emulator::SubmitGemm(void* streamHandle, const GemmShape& shape, const std::string& label)
{
    Stream* stream = ResolveStream(streamHandle, false);
    if (!stream)
    {
        return false;
    }
    Price price = m_costs.PriceGemm(shape, m_spec);
    Place(*stream, OpKind::Gemm, price.duration, label, price.provider, 0);
    return true;
}

namespace
{
bool
HostVisible(MemoryKind kind)
{
    return kind != MemoryKind::Device;
}
// Memory as a host-run kernel sees it (host-kernels.h): pending receives land first.
class KernelDataAccess final : public KernelMemory
{
public:
    KernelDataAccess(Emulator& emulator, DataAccess& access)
        : m_emulator(emulator)
        , m_access(access)
    {
    }

    void Settle(const void* pointer, size_t bytes, bool reads) override
    {
        m_emulator.LandData(pointer, bytes, reads);
    }
    bool HasData(const void* pointer, size_t bytes) override
    {
        return m_access.HasData(pointer, bytes);
    }
    void Load(const void* pointer, void* out, size_t bytes) override
    {
        m_access.Load(pointer, out, bytes);
    }
    void Store(void* pointer, const void* data, size_t bytes) override
    {
        m_access.Store(pointer, data, bytes);
    }
    void Zero(void* pointer, size_t bytes) override { m_access.Zero(pointer, bytes); }

private:
    Emulator& m_emulator;
    DataAccess& m_access;
};

} // namespace

void
Emulator::RunKernelData(const Stream& stream, const KernelLaunch& launch)
{
    if (stream.capture || !launch.args || !launch.kernel)
    {
        return;
    }
    KernelDataAccess memory(*this, *m_dataAccess);
    RunKernelOnHost(launch, memory);
}

void
Emulator::LandData(const void* pointer, size_t bytes, bool hostReads)
{
    if (hostReads)
    {
        // A host read of an NCCL receive's destination moves the host clock to that receive's
        // end, as the stream synchronization a correct program makes before reading NCCL's
        // output would, whether or not the peers' data has already arrived: which of the two it
        // is depends on how fast they ran in wall time, and virtual time must not.
        Completion unwaited;
        for (const DataExchange::UnwaitedRecord& receive : m_exchange->TakeUnwaited(pointer, bytes))
        {
            m_sink->Seal(receive.streamId);
            unwaited.pending.push_back(receive.record);
        }
        if (!unwaited.pending.empty())
        {
            SyncTo(unwaited, "data of an NCCL operation");
        }
    }
    uint64_t newest = m_exchange->NewestOverlapping(pointer, bytes);
    m_exchange->LandReady();
    // Receives land oldest first (a later one may overwrite an earlier one's bytes).
    DataExchange::PendingRef oldest;
    while (newest && m_exchange->Oldest(&oldest) && oldest.id <= newest)
    {
        if (m_exchange->TryLandOldest())
        {
            continue;
        }
        if (oldest.record == 0)
        {
            m_exchange->AbandonOldest("a peer in no process of this run");
            continue;
        }
        if (!hostReads && !oldest.ownData)
        {
            // Peers of a rank that sent no data rarely send any (SPMD): warn only if one did.
            m_exchange->AbandonOldest("the device touched the destination before a peer's data "
                                      "arrived, and this rank sent none",
                                      true);
            continue;
        }
        // Every rank posts its data before its record reaches the simulator, so once the record
        // has ended every peer's data is there. For a host read the host clock moves to that end,
        // as the stream synchronization a correct program makes before reading NCCL's output
        // would: a wait that leaves the clock behind lets the horizon pass this rank (causality
        // violations). A device-side touch (an NCCL operation chained on this one's result)
        // waits only for data this rank itself sent, the clock left where it is.
        m_sink->Seal(oldest.streamId);
        Completion completion{0, {oldest.record}};
        Ns end = Resolve(completion, "data of an NCCL operation");
        if (hostReads)
        {
            SyncTo(end);
        }
        DataExchange::PendingRef now;
        if (m_exchange->Oldest(&now) && now.id == oldest.id && !m_exchange->TryLandOldest())
        {
            m_exchange->AbandonOldest(m_config.dataDir.empty()
                                          ? "EIDOLON_DATA_DIR is not set: run under `eidolon run`"
                                          : "a peer's data file in " + m_config.dataDir +
                                                " is missing");
        }
    }
}

Placement
Emulator::Copy(Stream& stream, void* dst, size_t dpitch, const void* src, size_t spitch,
               size_t width, size_t rows, CopyStaging staging)
{
    MemoryKind dstKind = KindOf(dst);
    MemoryKind srcKind = KindOf(src);
    if (rows > 0 && width > 0)
    {
        LandData(src, spitch * (rows - 1) + width, HostVisible(dstKind));
        LandData(dst, dpitch * (rows - 1) + width);
    }
    for (size_t row = 0; row < rows; ++row)
    {
        char* to = static_cast<char*>(dst) + row * dpitch;
        const char* from = static_cast<const char*>(src) + row * spitch;
        auto toAddress = reinterpret_cast<uint64_t>(to);
        auto fromAddress = reinterpret_cast<uint64_t>(from);
        if (HostVisible(dstKind) && HostVisible(srcKind))
        {
            std::memmove(to, from, width);
        }
        else if (HostVisible(dstKind))
        {
            m_backing->Read(fromAddress, to, width);
        }
        else if (HostVisible(srcKind))
        {
            m_backing->Write(toAddress, from, width);
        }
        else
        {
            m_backing->Move(toAddress, fromAddress, width);
        }
    }
    auto priced = [](MemoryKind kind)
    { return kind == MemoryKind::Managed ? MemoryKind::Device : kind; };
    PeerRoute peer = dstKind != MemoryKind::Host && srcKind != MemoryKind::Host
                         ? RouteBetween(DeviceOf(src), DeviceOf(dst))
                         : PeerRoute::None;
    uint64_t bytes = uint64_t(width) * rows;
    Price price = PriceCopy(priced(srcKind), priced(dstKind), bytes, peer, staging);
    if (ActivityLog::Get().Recording())
    {
        auto memory = [&staging](MemoryKind kind)
        {
            return kind == MemoryKind::Device    ? ActivityMemory::Device
                   : kind == MemoryKind::Managed ? ActivityMemory::Managed
                   : staging.pageable            ? ActivityMemory::Pageable
                                                 : ActivityMemory::Pinned;
        };
        ActivityLog::MarkCopy(memory(srcKind), memory(dstKind), peer != PeerRoute::None);
    }
    static const std::string label = "memcpy";
    return Place(stream, OpKind::Copy, price.duration, label, price.provider, bytes);
}

Placement
Emulator::Memset(Stream& stream, void* dst, size_t pitch, int value, size_t width, size_t rows)
{
    MemoryKind kind = KindOf(dst);
    if (rows > 0 && width > 0)
    {
        LandData(dst, pitch * (rows - 1) + width);
    }
    for (size_t row = 0; row < rows; ++row)
    {
        char* to = static_cast<char*>(dst) + row * pitch;
        if (kind == MemoryKind::Managed)
        {
            std::memset(to, value, width);
        }
        else
        {
            m_backing->Fill(reinterpret_cast<uint64_t>(to), value, width);
        }
    }
    uint64_t bytes = uint64_t(width) * rows;
    Price price = PriceMemset(bytes);
    static const std::string label = "memset";
    return Place(stream, OpKind::Memset, price.duration, label, price.provider, bytes);
}

PeerRoute
Emulator::RouteBetween(int from, int to) const
{
    if (from == to || from < 0 || to < 0)
    {
        return PeerRoute::None;
    }
    // Either side's copy engine may push or pull once it can map the other's memory.
    const bool mapped = m_devices[from]->peerAccess[to] || m_devices[to]->peerAccess[from];
    return mapped ? PeerRoute::Direct : PeerRoute::ThroughHost;
}

Price
Emulator::PriceCopy(MemoryKind from, MemoryKind to, uint64_t bytes, PeerRoute peer,
                    CopyStaging staging) const
{
    // Rates, latencies and the L2 regime: cost-model.h (the spec's pricing block).
    if (from == MemoryKind::Host && to == MemoryKind::Host)
    {
        return {0, "copy-host"};
    }
    if (from == MemoryKind::Host || to == MemoryKind::Host)
    {
        const bool toDevice = to != MemoryKind::Host;
        if (!staging.pageable)
        {
            return {HostCopyNs(bytes, toDevice, true, m_spec), "copy-pcie"};
        }
        return {PageableCopyNs(bytes, toDevice, staging.stagedNs, m_spec), "copy-pcie-pageable"};
    }
    if (peer == PeerRoute::Direct)
    {
        return {PeerCopyNs(bytes, m_spec), "copy-peer"};
    }
    if (peer == PeerRoute::ThroughHost)
    {
        return {StagedPeerCopyNs(bytes, m_spec), "copy-peer-via-host"};
    }
    return {DeviceCopyNs(bytes, m_spec), "copy-device"};
}

Price
Emulator::PriceMemset(uint64_t bytes) const
{
    return {MemsetNs(bytes, m_spec), "memset"};
}

// ------------------------------------------------------------------ communication

namespace
{
const char*
CommOpName(CommOpKind kind)
{
    switch (kind)
    {
    case CommOpKind::AllReduce:
        return "ncclAllReduce";
    case CommOpKind::AllGather:
        return "ncclAllGather";
    case CommOpKind::ReduceScatter:
        return "ncclReduceScatter";
    case CommOpKind::Broadcast:
        return "ncclBroadcast";
    case CommOpKind::Reduce:
        return "ncclReduce";
    case CommOpKind::Send:
        return "ncclSend";
    case CommOpKind::Recv:
        return "ncclRecv";
    }
    return "nccl";
}

// NCCL's device kernel for `ops`, as a profiler names it (NCCL 2.19+: ncclDevKernel_<Collective>,
// reductions with their operation and type; the algorithm and protocol that end the real name are
// the simulator's choice, made later, and left off).
std::string
NcclKernelName(const std::vector<CommOp>& ops)
{
    const CommOp& op = ops.front();
    if (op.kind == CommOpKind::Send || op.kind == CommOpKind::Recv)
    {
        return "ncclDevKernel_SendRecv";
    }
    std::string name = std::string("ncclDevKernel_") + (CommOpName(op.kind) + 4);
    if (op.kind != CommOpKind::AllReduce && op.kind != CommOpKind::Reduce &&
        op.kind != CommOpKind::ReduceScatter)
    {
        return name;
    }
    // ncclDataType_t 0..11 and NCCL's short names; ncclAvg is a PreMulSum on floating types.
    static const char* const kTypes[] = {"i8",  "u8",  "i32", "u32",  "i64",    "u64",
                                         "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
    const bool floating = op.dtype >= 6;
    const char* operation = op.redop == 0                    ? "Sum"
                            : op.redop == 1                  ? "Prod"
                            : op.redop == 2 || op.redop == 3 ? "MinMax"
                            : op.redop == 4 && !floating     ? "SumPostDiv"
                                                             : "PreMulSum";
    const char* type = op.dtype >= 0 && op.dtype < 12 ? kTypes[op.dtype] : "unknown";
    return name + "_" + operation + "_" + type;
}
} // namespace

bool
Emulator::RegisterComm(const CommMember& member, std::string* error)
{
    if (member.nranks > 1 && !m_sink->Remote())
    {
        *error = "a communicator of " + std::to_string(member.nranks) +
                 " ranks needs the simulator: run the program under `eidolon run`";
        return false;
    }
    return member.nranks == 1 || m_sink->OnComm(member, false, error);
}

void
Emulator::DeregisterComm(const CommMember& member)
{
    if (member.nranks > 1)
    {
        std::string ignored;
        m_sink->OnComm(member, true, &ignored);
    }
}

bool
Emulator::PlaceCommunication(Stream& stream, const CommMember& member, uint64_t seq,
                             const std::vector<CommOp>& ops, std::string* error)
{
    PollSatisfied(); // as in Place: submitting work ends a run of polls
    if (ops.empty())
    {
        return true;
    }
    std::string label = CommOpName(ops.front().kind);
    for (const CommOp& op : ops)
    {
        if (op.sendbuff && op.count > 0)
        {
            uint64_t bytes = op.count * uint64_t(op.typeSize);
            LandData(op.sendbuff,
                     op.kind == CommOpKind::ReduceScatter ? bytes * member.nranks : bytes);
        }
    }
    if (member.nranks == 1)
    {
        // One rank: NCCL copies (or reduces) the buffer on the device.
        uint64_t bytes = 0;
        for (const CommOp& op : ops)
        {
            bytes += op.count * uint64_t(op.typeSize);
        }
        Price price = PriceCopy(MemoryKind::Device, MemoryKind::Device, bytes, PeerRoute::None);
        Place(stream, OpKind::Communication, price.duration, label, "nccl-local", bytes);
        m_exchange->Post(member, ops);
        m_exchange->Expect(member, ops, stream.id, 0);
        m_exchange->LandReady();
        return true;
    }
    if (!m_sink->Remote())
    {
        *error = "no simulator for a communicator of " + std::to_string(member.nranks) + " ranks";
        return false;
    }
    if (stream.capture)
    {
        *error = "NCCL operations inside CUDA graph capture are not modelled";
        stream.capture->invalidated = true;
        return false;
    }
    m_exchange->Post(member, ops); // before the record: see DataExchange
    Ns issued = m_clock.Now();
    std::vector<uint64_t> deps;
    Ns ready = ReadyTime(stream, &deps);
    const bool recording = ActivityLog::Get().Recording();
    std::vector<uint64_t> recordedDeps = recording ? deps : std::vector<uint64_t>{};
    stream.pending = m_sink->OnCommunication(CommunicationRecord{
        stream.device, stream.id, std::move(deps), ready, issued, &member, seq, &ops});
    stream.tail = ready;
    if (recording)
    {
        // NCCL's kernel (its real name also says the reduction, type, algorithm and protocol).
        const std::string kernel = NcclKernelName(ops);
        RecordActivity({OpKind::Communication, "nccl", stream.device, stream.id, kernel, 0, ready,
                        ready, 0, stream.pending, &recordedDeps});
    }
    m_exchange->Expect(member, ops, stream.id, stream.pending);
    return true;
}

bool
Emulator::Exchange(const std::string& key, int participants, const DeviceOpSink::Entries& mine,
                   DeviceOpSink::Entries* all, std::string* error)
{
    Ns time = m_clock.Now();
    if (!m_sink->Exchange(key, participants, mine, all, m_clock.Now(), m_clock.DrivingThreads(),
                          m_mutex, &time, error))
    {
        return false;
    }
    m_clock.Rebase();
    m_clock.AdvanceTo(time);
    return true;
}

void
Emulator::SendUsageAtExit(int exitStatus)
{
    std::vector<DeviceUsage> usage;
    for (const auto& device : m_devices)
    {
        HostBackingStats data = m_backing->DeviceStats(device->index);
        usage.push_back(DeviceUsage{device->index, device->peak, device->capacity, data.peakBytes,
                                    data.droppedBytes});
    }
    std::vector<ProviderUsage> pricing;
    for (const auto& [name, totals] : m_costs.Totals())
    {
        pricing.push_back(ProviderUsage{name, totals.ops, totals.gpuTime});
    }
    m_sink->OnExit(m_clock.Now(), usage, pricing, exitStatus);
}

// ------------------------------------------------------------------ graphs

bool
Emulator::BeginCapture(Stream& stream)
{
    if (stream.capture || stream.legacy)
    {
        return false;
    }
    stream.capture = std::make_shared<Capture>();
    stream.capture->origin = &stream;
    stream.captureDeps.clear();
    return true;
}

std::unique_ptr<Graph>
Emulator::EndCapture(Stream& stream)
{
    if (!stream.capture || stream.capture->origin != &stream)
    {
        return nullptr;
    }
    std::shared_ptr<Capture> capture = stream.capture;
    for (Stream* other : m_streams)
    {
        if (other->capture == capture)
        {
            other->capture.reset(); // joined streams leave the capture with it
            other->captureDeps.clear();
        }
    }
    if (capture->invalidated)
    {
        return nullptr;
    }
    return std::make_unique<Graph>(std::move(capture->graph));
}

Placement
Emulator::LaunchGraph(const Graph& graph, Stream& stream)
{
    // The graph runs as one op on the stream: its nodes keep their captured prices and order,
    // independent branches overlap, and the op lasts as long as the longest path.
    std::vector<Ns> nodeStart(graph.nodes.size(), 0);
    std::vector<Ns> nodeEnd(graph.nodes.size(), 0);
    Ns makespan = 0;
    for (size_t i = 0; i < graph.nodes.size(); ++i)
    {
        for (size_t dep : graph.nodes[i].deps)
        {
            nodeStart[i] = std::max(nodeStart[i], nodeEnd[dep]);
        }
        nodeEnd[i] = nodeStart[i] + graph.nodes[i].duration;
        makespan = std::max(makespan, nodeEnd[i]);
    }
    static const std::string label = "graph launch";
    if (stream.capture)
    {
        return Place(stream, OpKind::GraphNode, makespan, label, "graph", 0);
    }
    Ns issued = m_clock.Now();
    std::vector<uint64_t> deps;
    Ns start = ReadyTime(stream, &deps);
    if (!deps.empty())
    {
        // After a pending record the whole graph is one pending op of its makespan.
        for (const GraphNode& node : graph.nodes)
        {
            DeviceAt(node.device).busy += node.duration;
            m_costs.Count(node.provider, node.duration);
        }
        stream.tail = start + makespan;
        stream.pending = m_sink->OnPendingOp(PendingOp{OpKind::GraphNode, stream.device, stream.id,
                                                       &label, std::move(deps), start, makespan});
        for (size_t i = 0; i < graph.nodes.size(); ++i)
        {
            const GraphNode& node = graph.nodes[i];
            ActivityOp op{node.kind,  node.provider, stream.device,        stream.id,
                          node.label, node.bytes,    start + nodeStart[i], start + nodeEnd[i],
                          makespan,   stream.pending};
            op.graphId = graph.id;
            op.graphNode = uint32_t(i + 1);
            op.offset = nodeStart[i];
            op.nodeDuration = node.duration;
            op.continuesLaunch = i > 0;
            RecordActivity(op);
        }
        return {false, start, start + makespan, stream.pending};
    }
    stream.tail = start + makespan;
    for (size_t i = 0; i < graph.nodes.size(); ++i)
    {
        const GraphNode& node = graph.nodes[i];
        DeviceAt(node.device).busy += node.duration;
        m_costs.Count(node.provider, node.duration);
        m_sink->OnOp(DeviceOp{node.kind, stream.device, stream.id, &node.label, node.provider,
                              issued, start + nodeStart[i], start + nodeEnd[i], node.bytes});
        ActivityOp op{node.kind,    node.provider, stream.device,        stream.id,
                      node.label,   node.bytes,    start + nodeStart[i], start + nodeEnd[i],
                      node.duration};
        op.graphId = graph.id;
        op.graphNode = uint32_t(i + 1);
        op.continuesLaunch = i > 0;
        RecordActivity(op);
    }
    return {false, start, start + makespan};
}

void
Emulator::WriteReport(const std::string& path)
{
    nlohmann::json providers = nlohmann::json::object();
    Ns total = 0;
    for (const auto& [name, totals] : m_costs.Totals())
    {
        total += totals.gpuTime;
    }
    for (const auto& [name, totals] : m_costs.Totals())
    {
        providers[name] = {{"ops", totals.ops},
                           {"gpu_time_ns", totals.gpuTime},
                           {"share", total > 0 ? totals.gpuTime / total : 0.0}};
    }
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& device : m_devices)
    {
        devices.push_back({{"device", device->index},
                           {"capacity_bytes", device->capacity},
                           {"used_bytes", device->used},
                           {"peak_bytes", device->peak},
                           {"busy_ns", device->busy},
                           {"completion_ns", DeviceCompletion(device->index).known}});
    }
    const HostBackingStats& backed = m_backing->Stats();
    nlohmann::json hostData = {{"cap_bytes", backed.capBytes},
                               {"backed_bytes", backed.backedBytes},
                               {"peak_backed_bytes", backed.peakBytes},
                               {"dropped_bytes", backed.droppedBytes},
                               {"posted_bytes", m_exchange->Stats().postedBytes},
                               {"posted_files", m_exchange->Stats().postedFiles},
                               {"received_bytes", m_exchange->Stats().receivedBytes},
                               {"lost_contributions", m_exchange->Stats().lostContributions}};
    nlohmann::json report = {{"gpu", m_spec.name},
                             {"host_time_ns", m_clock.Now()},
                             {"pricing", providers},
                             {"devices", devices},
                             {"host_data", hostData}};
    std::ofstream out(path);
    if (!out)
    {
        Warn("cannot write report " + path);
        return;
    }
    out << report.dump(1) << '\n';
}

} // namespace eidolon::gpu
