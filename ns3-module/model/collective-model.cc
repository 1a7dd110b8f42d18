/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: the CollectiveModel object: its attributes, the communicator cache, and the wiring of
 * the concerns it is made of (doc/collective-model.md):
 *   nccl-config.cc           NCCL's environment variables;
 *   nccl-tuning-tables.cc    NCCL's constant tables per emulated release;
 *   nccl-topology-search.cc  the communicator's graphs and channels from the topology;
 *   nccl-cost-model.cc       NCCL's latency/bandwidth/time table of a call;
 *   nccl-selection.cc        NCCL's choice of algorithm, protocol and channels;
 *   collective-schedule.cc   a collective's chosen data movement as flows;
 *   p2p-schedule.cc          a group of sends and receives as flows.
 */
#include "collective-model.h"

#include "collective-schedule.h"
#include "nccl-cost-model.h"
#include "nccl-selection.h"
#include "nccl-topology-search.h"
#include "p2p-schedule.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/string.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cctype>
#include <functional>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonCollectiveModel");
NS_OBJECT_ENSURE_REGISTERED(CollectiveModel);

const char*
ToString(CollectiveKind kind)
{
    switch (kind)
    {
    case CollectiveKind::AllReduce:
        return "AllReduce";
    case CollectiveKind::AllGather:
        return "AllGather";
    case CollectiveKind::ReduceScatter:
        return "ReduceScatter";
    case CollectiveKind::Broadcast:
        return "Broadcast";
    case CollectiveKind::Reduce:
        return "Reduce";
    case CollectiveKind::SendRecv:
        return "SendRecv";
    }
    return "?";
}

const char*
ToString(NcclAlgorithm algorithm)
{
    switch (algorithm)
    {
    case NcclAlgorithm::Tree:
        return "Tree";
    case NcclAlgorithm::Ring:
        return "Ring";
    case NcclAlgorithm::CollNetDirect:
        return "CollNetDirect";
    case NcclAlgorithm::CollNetChain:
        return "CollNetChain";
    case NcclAlgorithm::Nvls:
        return "NVLS";
    case NcclAlgorithm::NvlsTree:
        return "NVLSTree";
    case NcclAlgorithm::Pat:
        return "PAT";
    }
    return "?";
}

const char*
ToString(NcclProtocol protocol)
{
    switch (protocol)
    {
    case NcclProtocol::LL:
        return "LL";
    case NcclProtocol::LL128:
        return "LL128";
    case NcclProtocol::Simple:
        return "Simple";
    }
    return "?";
}

// --------------------------------------------------------------------------------------------
// Object

TypeId
CollectiveModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::CollectiveModel")
            .SetParent<Object>()
            .SetGroupName("Eidolon")
            .AddConstructor<CollectiveModel>()
            .AddAttribute("NcclVersion",
                          "Emulated NCCL release as NCCL encodes it (major*10000 + minor*100 + "
                          "patch, 2.30.7 = 23007): the tuning tables and selection rules of 2.18, "
                          "2.20, 2.21, 2.24, 2.27, 2.28 or 2.30, whichever is the nearest below.",
                          UintegerValue(23007),
                          MakeUintegerAccessor(&CollectiveModel::m_ncclVersion),
                          MakeUintegerChecker<uint32_t>(21800, 99999))
            .AddAttribute("ChannelBandwidth",
                          "Bytes/s one channel (one CTA's copy loop) moves; 0: NCCL's per-link "
                          "NVLink figure for the GPU's architecture (20.6 GB/s on sm90).",
                          DoubleValue(0), MakeDoubleAccessor(&CollectiveModel::m_channelBandwidth),
                          MakeDoubleChecker<double>(0))
            .AddAttribute("NvlinkEfficiency",
                          "Payload fraction of the NVLink line rate; 0: NCCL's per-link figure "
                          "over the GPU spec's per-link rate (20.6/25 on H100).",
                          DoubleValue(0), MakeDoubleAccessor(&CollectiveModel::m_nvlinkEfficiency),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("NvlsEfficiency",
                          "Fraction of the NVLink payload rate NVLS multimem operations reach; "
                          "0: NCCL's nvlsEff table (0.85 Hopper, 0.74 Blackwell).",
                          DoubleValue(0), MakeDoubleAccessor(&CollectiveModel::m_nvlsEfficiency),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("NetEfficiency",
                          "Payload fraction of a NIC port's line rate (NDR 400 Gb/s carries "
                          "46-49 GB/s of NCCL data; NCCL's search uses 48 GB/s per channel).",
                          DoubleValue(0.96), MakeDoubleAccessor(&CollectiveModel::m_netEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("PcieEfficiency",
                          "Payload fraction of a PCIe link's rate after encoding (TLP headers "
                          "and framing at 256-byte payloads).",
                          DoubleValue(0.9), MakeDoubleAccessor(&CollectiveModel::m_pcieEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("LlEfficiency",
                          "Data fraction of what the LL protocol writes (8 bytes of data per 8 "
                          "bytes of flag).",
                          DoubleValue(0.5), MakeDoubleAccessor(&CollectiveModel::m_llEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("Ll128Efficiency",
                          "Data fraction of what LL128 writes (120 bytes per 128-byte line).",
                          DoubleValue(120.0 / 128.0),
                          MakeDoubleAccessor(&CollectiveModel::m_ll128Efficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("SimpleEfficiency",
                          "Data fraction of what Simple writes (flags are separate and small).",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&CollectiveModel::m_simpleEfficiency),
                          MakeDoubleChecker<double>(0.01, 1))
            .AddAttribute("CpuVendor",
                          "NCCL's class of the host CPU: 'intel', 'amd', 'zhaoxin', 'arm' or "
                          "'power' (the LL bandwidth row across nodes, the network post "
                          "overhead, the default P2P level); empty: the topology's host "
                          "description's cpu_vendor.",
                          StringValue(""), MakeStringAccessor(&CollectiveModel::m_cpuVendor),
                          MakeStringChecker())
            .AddAttribute("NvlsMulticast",
                          "The driver reports CUDA multicast support (NCCL_NVLS_ENABLE=2 then "
                          "enables NVLS on NVSwitch systems).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&CollectiveModel::m_nvlsMulticast),
                          MakeBooleanChecker())
            .AddAttribute("Pxn",
                          "Inter-node send/recv goes through the NIC of the destination's rail "
                          "via an NVLink hop on the sending node (NCCL_P2P_PXN_LEVEL=2).",
                          BooleanValue(true), MakeBooleanAccessor(&CollectiveModel::m_pxn),
                          MakeBooleanChecker())
            .AddAttribute("LlNetSendRate",
                          "Data bytes/s one channel's LL sends across the network reach: NCCL "
                          "keeps a network connection's LL send buffer in host memory and its "
                          "proxy thread posts a step only once it has read every 16-byte line's "
                          "flags (transport/net.cc). Calibrated on one-channel LL broadcasts "
                          "across 4 x 8 H100 (doc/collective-model.md); 0: no limit. A "
                          "topology's network_transport.ll_proxy_rate takes its place.",
                          DoubleValue(3.0e9), MakeDoubleAccessor(&CollectiveModel::m_llNetSendRate),
                          MakeDoubleChecker<double>(0))
            .AddTraceSource("NoAlgorithm",
                            "A call NCCL_ALGO / NCCL_PROTO leave no algorithm/protocol, which the "
                            "emulated NCCL fails (2.19-2.23 run Ring instead, untraced): the "
                            "call's function and what NCCL says and does. The model runs it as "
                            "NCCL chooses without the variables.",
                            MakeTraceSourceAccessor(&CollectiveModel::m_noAlgorithm),
                            "ns3::eidolon::CollectiveModel::NoAlgorithmTracedCallback");
    return tid;
}

CollectiveModel::CollectiveModel()
    : m_ncclVersion(23007)
    , m_channelBandwidth(0)
    , m_nvlinkEfficiency(0)
    , m_nvlsEfficiency(0)
    , m_netEfficiency(0.96)
    , m_pcieEfficiency(0.9)
    , m_llEfficiency(0.5)
    , m_ll128Efficiency(120.0 / 128.0)
    , m_simpleEfficiency(1.0)
    , m_cpuVendor("")
    , m_nvlsMulticast(true)
    , m_pxn(true)
    , m_llNetSendRate(3.0e9)
{
    NS_LOG_FUNCTION(this);
}

CollectiveModel::~CollectiveModel() = default;

void
CollectiveModel::DoDispose()
{
    m_network = nullptr;
    m_commCache.clear();
    m_commCacheSize = 0;
    m_lastComm.reset();
    m_deviceLinks.clear();
    Object::DoDispose();
}

void
CollectiveModel::SetNetworkModel(Ptr<NetworkModel> network)
{
    m_network = network;
    m_commCache.clear();
    m_commCacheSize = 0;
    m_lastComm.reset();
    m_deviceLinks.clear();
}

void
CollectiveModel::SetConfig(const NcclConfig& config)
{
    config.Validate();
    m_config = config;
    m_commCache.clear();
    m_commCacheSize = 0;
    m_lastComm.reset();
}

Ptr<const Topology>
CollectiveModel::GetTopology() const
{
    NS_ABORT_MSG_UNLESS(m_network, "CollectiveModel: SetNetworkModel first");
    Ptr<const Topology> t = m_network->GetTopology();
    NS_ABORT_MSG_UNLESS(t, "CollectiveModel: the network model has no topology");
    return t;
}

void
CollectiveModel::IndexTopology() const
{
    Ptr<const Topology> t = GetTopology();
    if (m_deviceLinks.size() == t->Devices().size())
    {
        return;
    }
    m_deviceLinks = nccl::IndexDeviceLinks(*t);
}

double
CollectiveModel::BusBandwidthFactor(CollectiveKind kind, uint32_t n)
{
    if (n <= 1)
    {
        return kind == CollectiveKind::AllReduce ? 0.0 : 1.0;
    }
    switch (kind)
    {
    case CollectiveKind::AllReduce:
        return 2.0 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
        return double(n - 1) / n;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
    case CollectiveKind::SendRecv:
        return 1.0;
    }
    return 1.0;
}

// --------------------------------------------------------------------------------------------
// The concerns' settings, from the attributes and the configuration

nccl::SearchSettings
CollectiveModel::GetSearchSettings() const
{
    nccl::SearchSettings s;
    s.ncclVersion = m_ncclVersion;
    s.config = m_config;
    s.channelBandwidth = m_channelBandwidth;
    s.nvlinkEfficiency = m_nvlinkEfficiency;
    s.nvlsEfficiency = m_nvlsEfficiency;
    s.nvlsMulticast = m_nvlsMulticast;
    s.sharp = GetTopology()->sharp.present;
    s.sharpAllgatherReduceScatter = s.sharp && GetTopology()->sharp.allgatherReduceScatter;
    s.cpuVendor = CpuVendor();
    return s;
}

nccl::CostSettings
CollectiveModel::GetCostSettings() const
{
    nccl::CostSettings s;
    s.ncclVersion = m_ncclVersion;
    s.config = m_config;
    const std::string cpu = CpuVendor();
    s.amdCpu = cpu == "amd";
    s.x86Cpu = cpu != "arm" && cpu != "power";
    s.netMessageLatencyUs = GetTopology()->transport.messageLatencyUs;
    return s;
}

nccl::ScheduleContext
CollectiveModel::GetScheduleContext() const
{
    nccl::ScheduleContext ctx;
    ctx.topology = GetTopology();
    ctx.network = m_network;
    ctx.ncclVersion = m_ncclVersion;
    ctx.amdCpu = IsAmdCpu();
    ctx.protocolEfficiency[nccl::kLL] = m_llEfficiency;
    ctx.protocolEfficiency[nccl::kLL128] = m_ll128Efficiency;
    ctx.protocolEfficiency[nccl::kSimple] = m_simpleEfficiency;
    ctx.pcieEfficiency = m_pcieEfficiency;
    ctx.netEfficiency = m_netEfficiency * ctx.topology->transport.bandwidthShare;
    ctx.netMessageLatencyUs = ctx.topology->transport.messageLatencyUs;
    ctx.pxn = m_pxn;
    ctx.llNetSendRate = ctx.topology->transport.llProxyRate > 0
                            ? ctx.topology->transport.llProxyRate
                            : m_llNetSendRate;
    return ctx;
}

std::string
CollectiveModel::CpuVendor() const
{
    std::string vendor = m_cpuVendor.empty() ? GetTopology()->cpuVendor : m_cpuVendor;
    for (char& ch : vendor)
    {
        ch = char(std::tolower(static_cast<unsigned char>(ch)));
    }
    return vendor;
}

bool
CollectiveModel::IsAmdCpu() const
{
    return CpuVendor() == "amd";
}

// --------------------------------------------------------------------------------------------
// The communicator, NCCL's choice and the timing

NcclCommInfo
CollectiveModel::DescribeCommunicator(const std::vector<uint32_t>& gpus, int minCtas,
                                      int maxCtas) const
{
    return *CommunicatorOf(gpus, minCtas, maxCtas);
}

std::shared_ptr<const NcclCommInfo>
CollectiveModel::CommunicatorOf(const std::vector<uint32_t>& gpus, int minCtas, int maxCtas) const
{
    const std::vector<double> key = {double(m_ncclVersion), m_channelBandwidth, m_nvlinkEfficiency,
                                     m_nvlsEfficiency, double(m_nvlsMulticast)};
    if (key != m_commCacheKey || m_cpuVendor != m_commCacheVendor)
    {
        m_commCache.clear();
        m_commCacheSize = 0;
        m_commCacheKey = key;
        m_commCacheVendor = m_cpuVendor;
        m_lastComm.reset();
    }
    // The channel bounds are part of the key (two communicators of the same GPUs may differ).
    const std::pair<int, int> bounds{minCtas, maxCtas};
    if (m_lastComm && m_lastCommBounds == bounds && m_lastCommGpus == gpus)
    {
        return m_lastComm;
    }
    auto& byGpus = m_commCache[bounds];
    auto it = byGpus.find(gpus);
    if (it != byGpus.end())
    {
        m_lastComm = it->second;
        m_lastCommBounds = bounds;
        m_lastCommGpus = gpus;
        return it->second;
    }
    Ptr<const Topology> topo = GetTopology();
    IndexTopology();
    nccl::SearchSettings settings = GetSearchSettings();
    settings.minCtas = minCtas;
    settings.maxCtas = maxCtas;
    auto info = std::make_shared<const NcclCommInfo>(
        nccl::SearchCommunicator(*topo, m_deviceLinks, gpus, settings));
    if (++m_commCacheSize > 4096)
    {
        for (auto& [bounds, comms] : m_commCache)
        {
            comms.clear();
        }
        m_commCacheSize = 1;
    }
    byGpus.emplace(gpus, info);
    m_lastComm = info;
    m_lastCommBounds = bounds;
    m_lastCommGpus = gpus;
    return info;
}

NcclCostTable
CollectiveModel::CostTable(const CollectiveCall& call) const
{
    NcclCostTable table;
    nccl::ComputeCosts(call, *CommunicatorOf(call.gpus, call.minCtas, call.maxCtas),
                       GetCostSettings(), true, table);
    return table;
}

CollectivePlan
CollectiveModel::Choose(const CollectiveCall& call) const
{
    return ChooseFor(call, *CommunicatorOf(call.gpus, call.minCtas, call.maxCtas));
}

CollectivePlan
CollectiveModel::ChooseFor(const CollectiveCall& call, const NcclCommInfo& comm) const
{
    CollectivePlan plan = nccl::SelectPlan(call, comm, GetCostSettings());
    if (plan.envOutcome == NcclEnvOutcome::Unavailable && !m_noAlgorithm.IsEmpty())
    {
        m_noAlgorithm(call.kind, nccl::NoAlgorithmMessage(call, comm, GetCostSettings(), plan));
    }
    return plan;
}

double
CollectiveModel::PlanLatencyUs(const CollectiveCall& call, const CollectivePlan& plan) const
{
    return nccl::PlanLatencyUs(call, *CommunicatorOf(call.gpus, call.minCtas, call.maxCtas), plan,
                               GetCostSettings());
}

namespace
{
/// A Broadcast/Reduce on the ring: each rank may run ahead of its downstream ranks.
bool
IsChain(const CollectiveCall& call, const CollectivePlan& plan)
{
    return plan.algorithm == NcclAlgorithm::Ring &&
           (call.kind == CollectiveKind::Broadcast || call.kind == CollectiveKind::Reduce);
}

} // namespace

std::shared_ptr<CollectiveRun>
CollectiveModel::Begin(const CollectiveCall& call, DoneCallback done, CollectivePlan* plan)
{
    NS_ABORT_MSG_UNLESS(m_network, "CollectiveModel: SetNetworkModel before Begin");
    const std::shared_ptr<const NcclCommInfo> comm =
        CommunicatorOf(call.gpus, call.minCtas, call.maxCtas);
    const CollectivePlan chosen = ChooseFor(call, *comm);
    if (plan)
    {
        *plan = chosen;
    }
    if (comm->nRanks > 1 && call.bytes > 0 && IsChain(call, chosen))
    {
        return RunChain(call, comm, chosen, done);
    }
    // The plan is chosen once, here: the gathered starts go straight to the data movement.
    Ptr<CollectiveModel> self(this);
    return nccl::StartWhenAllHave(call.gpus.size(),
                                  [self, call, comm, chosen, done](const std::vector<Time>& starts)
                                  { self->StartPlanned(call, *comm, chosen, starts, done); });
}

std::shared_ptr<CollectiveRun>
CollectiveModel::BeginGroup(const std::vector<CollectiveCall>& calls, DoneCallback done,
                            std::vector<CollectivePlan>* plans)
{
    NS_ABORT_MSG_UNLESS(m_network, "CollectiveModel: SetNetworkModel before BeginGroup");
    NS_ABORT_MSG_UNLESS(!calls.empty(), "CollectiveModel: BeginGroup without a call");
    if (calls.size() == 1)
    {
        CollectivePlan plan;
        auto run = Begin(calls[0], done, &plan);
        if (plans)
        {
            *plans = {plan};
        }
        return run;
    }
    const CollectiveCall& first = calls[0];
    for (const CollectiveCall& call : calls)
    {
        NS_ABORT_MSG_UNLESS(call.kind != CollectiveKind::SendRecv && call.gpus == first.gpus,
                            "CollectiveModel: a group's collectives are of one communicator");
    }
    const std::shared_ptr<const NcclCommInfo> comm =
        CommunicatorOf(first.gpus, first.minCtas, first.maxCtas);
    const nccl::CostSettings settings = GetCostSettings();
    nccl::GroupLayout layout = nccl::LayOutGroup(calls, *comm, settings);
    for (size_t i = 0; i < calls.size(); ++i)
    {
        if (layout.plans[i].envOutcome == NcclEnvOutcome::Unavailable && !m_noAlgorithm.IsEmpty())
        {
            m_noAlgorithm(calls[i].kind,
                          nccl::NoAlgorithmMessage(calls[i], *comm, settings, layout.plans[i]));
        }
    }
    if (plans)
    {
        *plans = layout.plans;
        for (size_t i = 0; i < calls.size(); ++i)
        {
            (*plans)[i].channels = layout.channelHi[i] - layout.channelLo[i] + 1;
        }
    }
    return nccl::BeginGroup(GetScheduleContext(), settings, calls, comm, std::move(layout), done);
}

CollectivePlan
CollectiveModel::Start(const CollectiveCall& call, const std::vector<Time>& starts,
                       DoneCallback done)
{
    NS_ABORT_MSG_UNLESS(m_network, "CollectiveModel: SetNetworkModel before Start");
    NS_ABORT_MSG_UNLESS(starts.size() == call.gpus.size(),
                        "CollectiveModel: " << starts.size() << " start times for "
                                            << call.gpus.size() << " ranks");
    const std::shared_ptr<const NcclCommInfo> comm =
        CommunicatorOf(call.gpus, call.minCtas, call.maxCtas);
    const CollectivePlan plan = ChooseFor(call, *comm);
    if (comm->nRanks > 1 && call.bytes > 0 && IsChain(call, plan))
    {
        // Every start is known: the chain as Begin runs it.
        auto run = RunChain(call, comm, plan, done);
        for (uint32_t r = 0; r < starts.size(); ++r)
        {
            run->MemberStart(r, starts[r]);
        }
        return plan;
    }
    StartPlanned(call, *comm, plan, starts, done);
    return plan;
}

std::shared_ptr<CollectiveRun>
CollectiveModel::RunChain(const CollectiveCall& call,
                          const std::shared_ptr<const NcclCommInfo>& comm,
                          const CollectivePlan& plan, DoneCallback done) const
{
    return nccl::BeginChain(GetScheduleContext(), call, comm, plan,
                            nccl::ChainHopLatencies(call, *comm, plan, GetCostSettings()), done);
}

void
CollectiveModel::StartPlanned(const CollectiveCall& call, const NcclCommInfo& comm,
                              const CollectivePlan& plan, const std::vector<Time>& starts,
                              DoneCallback done)
{
    if (call.kind == CollectiveKind::SendRecv)
    {
        nccl::PostSendRecv(GetScheduleContext(), call, comm, starts, done);
        return;
    }
    if (comm.nRanks <= 1 || call.bytes == 0)
    {
        // Nothing crosses a link: each rank is done when it arrives.
        for (uint32_t r = 0; r < starts.size(); ++r)
        {
            nccl::ScheduleAt(starts[r],
                             [done, r]()
                             {
                                 if (!done.IsNull())
                                 {
                                     done(r);
                                 }
                             });
        }
        return;
    }
    // A collective starts when its last rank arrives.
    Time start = *std::max_element(starts.begin(), starts.end());
    nccl::PostCollective(GetScheduleContext(), call, comm, plan,
                         nccl::PlanLatencyUs(call, comm, plan, GetCostSettings()), start, done);
}

} // namespace eidolon
} // namespace ns3
