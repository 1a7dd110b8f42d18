// The state of the emulated GPUs of one rank process: devices, memory, streams, events, kernels,
// captured graphs, the host clock and the pricing chain. The API libraries (libcudart, libcuda,
// libcublas, libnvidia-ml) are thin C ABI layers over this one object, so they share one state.
#pragma once

#include "activity-log.h"
#include "communication.h"
#include "config.h"
#include "cost-model.h"
#include "data-exchange.h"
#include "device-op-sink.h"
#include "gpu-spec.h"
#include "host-backing.h"
#include "host-clock.h"
#include "profile-db.h"
#include "rank-host.h"

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace eidolon::gpu
{

// Special stream handles, the same values in the runtime and driver APIs.
inline void* const kLegacyStreamHandle = reinterpret_cast<void*>(0x1);
inline void* const kPerThreadStreamHandle = reinterpret_cast<void*>(0x2);
constexpr unsigned kStreamNonBlocking = 0x1;
constexpr unsigned kEventDisableTiming = 0x2;
constexpr uint64_t kDeviceAllocAlignment = 256;

struct Capture;

struct Stream
{
    uint64_t id;
    int device;
    unsigned flags;
    int priority;
    bool legacy = false;
    Ns tail = 0;          // end of the last op placed on it (a lower bound while pending)
    uint64_t pending = 0; // record whose end the simulator decides and `tail` waits on; 0: final
    std::vector<uint64_t> waitDeps; // pending records the next op waits on (cudaStreamWaitEvent)
    std::shared_ptr<Capture> capture;
    std::vector<size_t> captureDeps; // nodes the next captured op depends on
};

struct Event
{
    int device;
    unsigned flags;
    bool recorded = false;
    Ns time = 0;                      // a lower bound while `pending` is set
    uint64_t pending = 0;             // the event completes with this pending record
    std::shared_ptr<Capture> capture; // set when recorded on a capturing stream
    std::vector<size_t> captureNodes;
};

struct GraphNode
{
    OpKind kind;
    std::string label;
    const char* provider;
    Ns duration;
    uint64_t bytes;
    int device;
    std::vector<size_t> deps;
};

// Where virtual time 0 lies on the real clocks: the simulator's epoch shared by every rank, else
// this process's clocks at the first call. A virtual clock reading is its base + host time.
struct ClockBases
{
    int64_t monotonic;
    int64_t realtime;
    int64_t boottime;
};
const ClockBases& VirtualClockBases();

// A process-wide number for each graph made (CUPTI's graph id); a copy keeps its original's.
uint32_t NewGraphId();

struct Graph
{
    std::vector<GraphNode> nodes;
    uint32_t id = NewGraphId();
};

struct Capture
{
    Graph graph;
    Stream* origin;
    bool invalidated = false;
};

struct Allocation
{
    uint64_t address;
    uint64_t size;    // as requested
    uint64_t charged; // counted against capacity (size rounded to kDeviceAllocAlignment)
    int device;
    bool managed; // host-backed (cudaMallocManaged): the host may touch it
    // A range reserved with cuMemAddressReserve (charged nothing: cuMemCreate charges), device
    // memory for copies and data; cudaFree refuses it.
    bool virtualRange = false;
};

// Reserved, never-touched address space of one device with a first-fit allocator over it.
class DeviceAddressSpace
{
public:
    void Reserve(uint64_t bytes, int device);
    // Returns 0 when no hole is large enough.
    uint64_t Take(uint64_t bytes);
    void Give(uint64_t address, uint64_t bytes);
    bool Contains(uint64_t address) const { return address >= m_base && address < m_base + m_size; }

private:
    uint64_t m_base = 0;
    uint64_t m_size = 0;
    std::map<uint64_t, uint64_t> m_holes; // address -> size
};

struct Device
{
    int index;
    uint64_t capacity;
    uint64_t used = 0;
    uint64_t peak = 0;
    Ns busy = 0;
    DeviceAddressSpace addressSpace;
    bool reserved = false;
    Stream* legacyStream;
    std::vector<Stream*> streams; // every live stream of the device, the legacy one included
    std::vector<bool> peerAccess;
    unsigned flags = 0;
};

// A __device__ variable registered by the program (__cudaRegisterVar).
struct Symbol
{
    uint64_t size;
    std::vector<uint64_t> addressOnDevice; // allocated on first use, 0 until then
};

struct Placement
{
    bool captured; // recorded into a stream capture instead of placed
    Ns start;      // lower bounds when `pending` is set
    Ns end;
    uint64_t pending = 0; // the op's record when its times wait on the simulator
};

// When some work completes: at `known`, or later when pending records end later.
struct Completion
{
    Ns known = 0;
    std::vector<uint64_t> pending;
};

// What a copy or memset reaches, for pricing and for the host-visible data semantics.
enum class MemoryKind
{
    Host,    // ordinary or pinned host memory
    Device,  // cudaMalloc'd: contents only where the host wrote (host-backing.h)
    Managed, // cudaMallocManaged: host-backed
};

// A host copy from or to pageable memory (not pinned by cudaHostAlloc/cudaMallocHost/
// cudaHostRegister) is staged by the driver through its own pinned buffers: the whole copy runs at
// the spec's pageable rate, of which `stagedNs` the caller has already charged the host (the
// staging it did before the copy reached the stream).
// A copy between two devices of this process: none (same device or host memory involved), direct
// over NVLink (peer access enabled), or staged by the driver through pinned host memory.
enum class PeerRoute
{
    None,
    Direct,
    ThroughHost,
};

struct CopyStaging
{
    bool pageable = false;
    Ns stagedNs = 0;
};

class Emulator
{
public:
    // The process-wide instance (created on first use, never destroyed), joined to the simulator
    // (EIDOLON_SIM_ENDPOINT) on first use.
    static Emulator& Get();
    // The same instance without joining the simulator: for kernel and variable registrations,
    // which run inside dlopen() with the dynamic loader's lock held and must never wait for the
    // simulator (or for ZeroMQ's I/O thread, which may need that lock); and for the queries that
    // only count or describe the GPUs (device count, cuInit, NVML), so that a process that only
    // looks at them (torchrun's agent) never becomes a rank.
    static Emulator& Local();
    // The instance once it has joined (or found no simulator to join), else null (never creates
    // it: for the clock interposers, which may run inside allocators and loaders). Clocks stay
    // real until then.
    static Emulator* IfCreated();

    // A driving thread parked or left its park (clocks.cc's wait interposers, HostClock::Park):
    // tells the simulator's sink, without gpu-emu's lock (the thread may hold a lock of its own).
    void DrivingThreadsChanged()
    {
        if (DeviceOpSink* sink = m_joinedSink.load(std::memory_order_acquire))
        {
            sink->DrivingThreadsChanged();
        }
    }

    std::mutex& Mutex() { return m_mutex; }
    HostClock& Clock() { return m_clock; }
    const Config& Settings() const { return m_config; }
    const GpuSpec& Spec() const { return m_spec; }
    // False before a successful start, and once the simulator has gone (DeviceOpSink::RunOver).
    bool Ready() const { return m_ready && !m_runOver; }
    const std::string& InitError() const { return m_initError; }
    void SetSink(std::unique_ptr<DeviceOpSink> sink) { m_sink = std::move(sink); }
    const DeviceOpSink& Sink() const { return *m_sink; }

    // ---- devices
    int DeviceCount() const { return m_ready ? static_cast<int>(m_devices.size()) : 0; }
    Device& DeviceAt(int index) { return *m_devices[index]; }
    int CurrentDevice() const;
    void SetCurrentDevice(int index);

    // ---- memory
    // Returns 0 (and allocates nothing) past capacity or when the address space is exhausted.
    uint64_t AllocateDevice(int device, uint64_t bytes, bool managed);
    // False when the address is not the start of a live allocation.
    bool FreeDevice(uint64_t address);
    const Allocation* FindAllocation(uint64_t address) const;
    // A reserved virtual address range (cuMemAddressReserve) that reads and writes as device
    // memory of `device`; removed by cuMemAddressFree.
    void AddVirtualRange(uint64_t address, uint64_t bytes, int device);
    void RemoveVirtualRange(uint64_t address);
    // Physical memory without an address (driver cuMemCreate): counted against capacity only.
    bool ChargePhysical(int device, uint64_t bytes);
    void ReleasePhysical(int device, uint64_t bytes);
    MemoryKind KindOf(const void* pointer) const;
    int DeviceOf(const void* pointer) const;
    // Whether [pointer, +bytes) may be read or written as CUDA checks a copy or memset: inside
    // one live allocation when it starts in one; never in a device's address space outside its
    // allocations (freed or never allocated: touching it would fault); host memory otherwise.
    bool ValidSpan(const void* pointer, size_t bytes) const;

    // ---- streams and events
    Stream* CreateStream(int device, unsigned flags, int priority);
    bool DestroyStream(Stream* stream);
    // nullptr for an invalid handle. `perThreadDefault` is how a null handle is read.
    Stream* ResolveStream(void* handle, bool perThreadDefault);
    Event* CreateEvent(unsigned flags);
    bool DestroyEvent(Event* event);
    bool IsEvent(const Event* event) const { return m_events.count(event) != 0; }

    // ---- timelines (all called with the lock held)
    // Places an op issued now on `stream` (DESIGN.md: start = max(host + launch latency, stream
    // tail, implicit legacy-stream order)), or records it into the stream's capture.
    Placement Place(Stream& stream, OpKind kind, Ns duration, const std::string& label,
                    const char* provider, uint64_t bytes);
    void RecordEvent(Event& event, Stream& stream);
    void StreamWaitEvent(Stream& stream, const Event& event);
    Completion StreamCompletion(Stream& stream);
    Completion DeviceCompletion(int device);
    Completion EventCompletion(Event& event);
    Completion OpCompletion(const Placement& placement) const;
    // The final ends of pending records as far as the simulator has them by the host clock (-1
    // for one not ended): for a profiler's records (ActivityLog::Collect). The lock is held.
    std::vector<Ns> RecordEnds(const std::vector<uint64_t>& records);
    // The time `completion` is final at; asks the simulator (blocking, the lock released while it
    // waits) when pending records are involved. `what` names the caller for the watchdog.
    // `query`: only whether it has completed by the host clock matters (cudaEventQuery): the
    // simulator answers once it has reached the clock, and a completion not reached by then is
    // +infinity (not cached).
    Ns Resolve(const Completion& completion, const char* what, bool query = false);
    // Moves the host clock to `t`; never backwards.
    void SyncTo(Ns t);
    void SyncTo(const Completion& completion, const char* what);
    // Polling rule: the calling thread asked whether `object` is done and it is not. After
    // pollsBeforeWait such questions in a row about the same object from a driving thread, with no
    // work submitted in between (a spin loop), the poll is taken as a wait; returns true when the
    // caller should now report completion.
    bool PollTurnsIntoWait(const void* object, const Completion& completion, const char* what);
    void PollSatisfied();

    // ---- kernels and pricing
    // `argBytes`: total parameter bytes when known (fatbin.h), -1 otherwise.
    KernelInfo* RegisterKernel(const void* hostFunction, const std::string& mangledName,
                               int64_t argBytes = -1);
    KernelInfo* KernelByHostFunction(const void* hostFunction);
    KernelInfo* KernelByName(const std::string& mangledName);
    CostModel& Costs() { return m_costs; }
    ProfileDb* Profiles() { return m_profiles; }
    // A library GEMM (cuBLAS/cuBLASLt) issued now on the stream named by `streamHandle` (a null
    // handle is the legacy default stream): priced by the chain (the caller charges its host cost).
    // False when the handle is invalid.
    bool SubmitGemm(void* streamHandle, const GemmShape& shape, const std::string& label);
    // A copy of `rows` rows of `width` bytes placed on `stream` (the caller charges its host cost),
    // with its host-visible effect, done when it is issued: the destination reads what the source
    // reads (device memory: what the host wrote there, zeros elsewhere; host-backing.h). Priced by
    // PCIe, NVLink or HBM bandwidth.
    Placement Copy(Stream& stream, void* dst, size_t dpitch, const void* src, size_t spitch,
                   size_t width, size_t rows, CopyStaging staging = CopyStaging());
    // A memset placed on `stream`; its bytes are set (device memory within the host-data cap).
    Placement Memset(Stream& stream, void* dst, size_t pitch, int value, size_t width, size_t rows);
    // Lands the data NCCL operations still deliver into [pointer, +bytes) (data-exchange.h).
    // `hostReads`: the host is about to read those bytes (a copy to host memory): then a peer's
    // data that is not there yet is waited for (the record's end, the lock released; the host
    // clock moves to it, as the stream sync before such a read would move it). Device-side reads
    // and writes wait (clock unmoved) only for operations this rank sent data to; the others are
    // given up with a warning, because a wait that does not move the host clock lets the
    // simulator's horizon pass the rank (causality violations).
    void LandData(const void* pointer, size_t bytes, bool hostReads = false);
    // The data effect of a kernel launched on `stream`: the few kernels host-kernels.h names run
    // on the host when their inputs hold data (not while the stream captures a graph).
    void RunKernelData(const Stream& stream, const KernelLaunch& launch);
    const HostBacking& Backing() const { return *m_backing; }
    Price PriceCopy(MemoryKind from, MemoryKind to, uint64_t bytes, PeerRoute peer,
                    CopyStaging staging = CopyStaging()) const;
    // How a copy between devices `from` and `to` travels: straight over NVLink when either has
    // peer access to the other (cudaDeviceEnablePeerAccess), else through host memory.
    PeerRoute RouteBetween(int from, int to) const;
    Price PriceMemset(uint64_t bytes) const;

    std::unordered_map<const void*, Symbol>& Symbols() { return m_symbols; }
    // Device address of a registered variable on `device` (allocated on first use); 0 if unknown.
    uint64_t SymbolAddress(const void* hostVariable, int device);

    // ---- communication (libnccl)
    // Tells the simulator that `member.device` holds rank `member.rank` of `member.commId`. False
    // (with `error` set) when the communicator cannot exist here: nranks > 1 without eidolon-sim.
    bool RegisterComm(const CommMember& member, std::string* error);
    // The device leaves the communicator (destroy/abort); ops already placed keep their times.
    void DeregisterComm(const CommMember& member);
    // Places one communication record on `stream`: a collective (one op), or every send/recv one
    // group issued on one communicator. `seq` numbers the records of a communicator (the same
    // sequence on every rank). The end is decided by the simulator, so the stream's tail becomes
    // pending; a one-rank communicator is priced locally as a device copy. False with `error` set
    // when it cannot be placed.
    bool PlaceCommunication(Stream& stream, const CommMember& member, uint64_t seq,
                            const std::vector<CommOp>& ops, std::string* error);

    // A host-side all-gather with the ranks of other processes (ncclCommSplit): blocks until
    // every participant's entry is in, then moves the host clock to when the last arrived.
    bool Exchange(const std::string& key, int participants, const DeviceOpSink::Entries& mine,
                  DeviceOpSink::Entries* all, std::string* error);

    // ---- graphs
    bool BeginCapture(Stream& stream);
    // Ends the capture begun on `stream`; nullptr (and no graph) if none or invalidated.
    std::unique_ptr<Graph> EndCapture(Stream& stream);
    Placement LaunchGraph(const Graph& graph, Stream& stream);

    // Tells the sink (the simulator) the process is exiting, with its memory and pricing usage
    // and the status it gave exit().
    void SendUsageAtExit(int exitStatus);

    // The simulator took this process for a rank's helper (a subprocess with the rank's world
    // rank): it runs on its own, with the local sink.
    bool IsHelper() const { return m_helper; }

    // Writes the pricing/memory report (JSON) to `path`.
    void WriteReport(const std::string& path);

private:
    void RecordActivity(const ActivityOp& op); // for a profiler (ActivityLog)
    // Asks the sink for the ends of `records` (the lock released while it waits) and keeps the
    // final ones in m_resolved; -1 for one a query found not ended.
    std::vector<Ns> AskSimulator(const std::vector<uint64_t>& records, bool query,
                                 const char* what);
    Emulator();
    void JoinSimulator();           // connects the bridge sink when EIDOLON_SIM_ENDPOINT is set
    void RaisePeak(Device& device); // after `used` grew: a new peak goes to the sink
    // The time and the pending records implicit legacy-stream order makes `stream` wait for.
    Ns ImplicitOrder(const Stream& stream, std::vector<uint64_t>* deps);
    // Applies answers already known to a stream's or event's pending record.
    void Normalize(Stream& stream);
    void Normalize(Event& event);
    // What an op issued now on `stream` waits for: its ready time and pending records.
    Ns ReadyTime(Stream& stream, std::vector<uint64_t>* deps);

    std::mutex m_mutex;
    Config m_config;
    HostClock m_clock;
    GpuSpec m_spec;
    bool m_ready = false;
    std::atomic<bool> m_runOver{false}; // read by CUDA calls without the lock
    std::string m_initError;
    std::vector<std::unique_ptr<Device>> m_devices;
    std::unordered_set<Stream*> m_streams;
    std::unordered_set<const Event*> m_events;
    uint64_t m_nextStreamId = 1;
    std::map<uint64_t, Allocation> m_allocations; // address -> allocation
    std::unordered_map<const void*, KernelInfo*> m_kernelsByHost;
    std::unordered_map<std::string, KernelInfo*> m_kernelsByName;
    std::deque<KernelInfo> m_kernels;
    std::unordered_map<const void*, Symbol> m_symbols;
    CostModel m_costs;
    ProfileDb* m_profiles = nullptr;
    std::unique_ptr<RankHost> m_rankHost; // what the bridge client sees of us; outlives m_sink
    std::unique_ptr<DeviceOpSink> m_sink;
    bool m_helper = false;                            // see IsHelper()
    std::atomic<DeviceOpSink*> m_joinedSink{nullptr}; // m_sink once joined (never reset after)
    std::unordered_map<uint64_t, Ns> m_resolved;      // pending record -> final end, once answered
    std::unique_ptr<HostBacking> m_backing;           // contents of device memory the host wrote
    std::unique_ptr<DataAccess> m_dataAccess;         // how m_exchange reads and writes our memory
    std::unique_ptr<DataExchange> m_exchange;         // bytes NCCL operations move between ranks
};

// How many ApiCalls the calling thread is inside (the clock interposers pass through when > 0).
int& ApiDepth();

// Every intercepted call holds one of these for its duration: it takes the emulator lock and
// keeps the host clock (HostClock::Enter/Leave).
class ApiCall
{
public:
    // `join`: false for registrations (Emulator::Local) and for counting the devices, which
    // must not make a process that only looks (a launcher's agent) a rank of the run.
    explicit ApiCall(CallKind kind, bool join = true)
        : m_emulator(join ? Emulator::Get() : Emulator::Local())
        , m_lock(m_emulator.Mutex())
        , m_timed(kind != CallKind::Untimed)
    {
        ++ApiDepth();
        if (m_timed)
        {
            m_emulator.Clock().Enter(kind);
        }
        if ((kind == CallKind::Submit || kind == CallKind::Sync) && ActivityLog::Get().Recording())
        {
            ActivityLog::EnterCall(m_emulator.Clock().Now()); // a profiler's call record starts
        }
    }
    ~ApiCall()
    {
        if (m_timed && ActivityLog::Get().Recording())
        {
            ActivityLog::Get().LeaveCall(m_emulator.Clock().Now());
        }
        if (m_timed)
        {
            m_emulator.Clock().Leave();
        }
        --ApiDepth();
    }
    ApiCall(const ApiCall&) = delete;
    ApiCall& operator=(const ApiCall&) = delete;
    Emulator& Emu() { return m_emulator; }

private:
    Emulator& m_emulator;
    std::lock_guard<std::mutex> m_lock;
    bool m_timed;
};

} // namespace eidolon::gpu
