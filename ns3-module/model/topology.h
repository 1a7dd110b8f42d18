/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: the cluster as a graph of devices joined by full-duplex links.
 */
#ifndef EIDOLON_TOPOLOGY_H
#define EIDOLON_TOPOLOGY_H

#include "ns3/gpu-spec.h"
#include "ns3/simple-ref-count.h"
#include "ns3/spec-units.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{
namespace eidolon
{

/// What kind of box a topology device is. Only switches, NICs and PCIe switches forward traffic.
enum class DeviceKind
{
    Gpu,        //!< an accelerator: an endpoint, never forwards
    Host,       //!< a node's CPU and memory: an endpoint (host<->device copies)
    NvSwitch,   //!< an NVSwitch domain (all NVSwitch chips of a node taken together)
    PcieSwitch, //!< a PCIe switch joining GPUs, NICs and the host
    Nic,        //!< a network adapter
    Switch,     //!< an Ethernet/InfiniBand switch (leaf/ToR, spine, core)
};

const char* ToString(DeviceKind kind);
/// Parses "gpu", "host", "nvswitch", "pcie-switch", "nic", "switch"; throws on anything else.
DeviceKind DeviceKindFromString(const std::string& text);
bool Forwards(DeviceKind kind);

/// What a link is made of; it decides which NCCL latency class a hop belongs to.
enum class LinkKind
{
    NvLink,
    Pcie,
    Net,
};

const char* ToString(LinkKind kind);
LinkKind LinkKindFromString(const std::string& text);

/// Public figures of one GPU model (topologies/gpus/*.yaml): the spec library's, read by
/// ReadGpuSpec (ns3/gpu-spec.h).
using GpuSpec = ::eidolon::spec::GpuSpec;

/// One box in the cluster graph.
struct Device
{
    std::string name; //!< unique, e.g. "node3/gpu5", "leaf0-rail2", "spine7"
    DeviceKind kind = DeviceKind::Switch;
    int32_t node = -1;       //!< host node (server) index, -1 for fabric switches
    int32_t localIndex = -1; //!< index within its node for GPUs/NICs
    int32_t gpuIndex = -1;   //!< global GPU index (node-major) for GPUs
    int32_t tier = 0;        //!< switches: 1 leaf/ToR, 2 spine, 3 core
    std::string model;       //!< GPUs: GpuSpec name
    /// PCIe switches: the CPU's root complex. NCCL calls a path through it PHB (across a host
    /// bridge), one through PCIe switches alone PIX (one) or PXB (several).
    bool hostBridge = false;
};

/// A full-duplex link; bandwidth applies to each direction separately.
struct Link
{
    uint32_t a = 0;
    uint32_t b = 0;
    double bandwidth = 0;  //!< bytes/s per direction
    int64_t latencyNs = 0; //!< propagation + switching latency of the hop
    LinkKind kind = LinkKind::Net;
};

/// A bad topology or GPU spec: what and where (file, line, field) in one message. The spec
/// library's error, so that both kinds of file reach the same handlers.
using TopologyError = ::eidolon::spec::SpecError;

/// Figures `eidolon topo check` prints.
struct TopologySummary
{
    uint32_t gpus = 0;
    uint32_t nodes = 0;
    uint32_t nics = 0;
    uint32_t switches = 0; //!< fabric switches (leaf/spine/core)
    uint32_t nvswitches = 0;
    uint32_t pcieSwitches = 0;
    uint32_t links = 0;
    double bisectionBandwidth = 0; //!< bytes/s per direction across the worst node halving
    std::string bisectionCut;      //!< halving that gave it, e.g. "nodes 0-63 | 64-127"
    std::map<int32_t, uint32_t> switchesByTier; //!< tier (1 leaf, 2 spine, 3 core) -> count
    uint32_t hosts = 0;
    std::map<std::string, uint32_t> gpuModels;
};

/**
 * \ingroup eidolon
 * \brief The cluster: devices, full-duplex links, and shortest-path ECMP routing.
 *
 * Each link i gives two directed channels: 2i (a to b) and 2i+1 (b to a). Flows cross channels.
 * GPUs are numbered 0..N-1 in node-major order (node 0's GPUs first).
 */
class Topology : public SimpleRefCount<Topology>
{
public:
    Topology();
    ~Topology();
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;

    std::string name;
    std::string source; //!< file it came from, for messages
    std::string host;   //!< the GPU servers' host description (topologies/hosts/), "" = default
    std::string hostSpecDir; //!< the directory it was found in
    /// NCCL's class of the hosts' CPU (the host description's cpu_vendor: intel, amd, zhaoxin,
    /// arm, power); the default host's when the topology names none.
    std::string cpuVendor = "intel";

    /// The network stack NCCL runs across nodes (`network_transport:`; doc/topology.md). The
    /// collective model adds `messageLatencyUs` to every network message on a collective's
    /// critical path and sustains `bandwidthShare` of the NICs' line rate (on top of its own
    /// NetEfficiency). InfiniBand verbs with GPUDirect RDMA, NCCL's reference, add nothing.
    struct NetworkTransport
    {
        std::string kind = "ib";     //!< ib, ib-no-gdr, roce, efa, tcpx, tcpxo, socket
        double messageLatencyUs = 0; //!< per network message, beyond the links' latency
        double bandwidthShare = 1.0; //!< of the NIC line rate
        /// Data bytes/s a GPU's proxy thread reads LL steps at, before it sends them (NCCL keeps
        /// a network connection's LL send buffer in host memory); 0: the collective model's
        /// LlNetSendRate.
        double llProxyRate = 0;
        std::string source; //!< where the figures come from
    };
    NetworkTransport transport;

    /// In-network reduction in the InfiniBand switches (`sharp:`; doc/topology.md): NVIDIA SHARP
    /// with NCCL's CollNet plugin installed on the nodes. With it (and NCCL_COLLNET_ENABLE=1, as
    /// NCCL wants) the collective model offers CollNetDirect, CollNetChain and NVLS across nodes,
    /// and reduces in the switches: each node sends its (node-reduced) data up the aggregation
    /// tree once and receives the result once.
    struct InNetworkReduction
    {
        bool present = false;
        int version = 3; //!< SHARP generation (1: Switch-IB 2, 2: Quantum, 3: Quantum-2)
        /// Bytes/s one aggregation stream (one head's share) can be reduced at; 0: the links'
        /// line rate (SHARPv2/v3 streaming aggregation runs at port speed).
        double aggregationBandwidth = 0;
        /// The CollNet plugin gathers and scatters in the network too (collnet v8 iallgather and
        /// ireducescatter, which nccl-rdma-sharp-plugins implements on SHARP's allgather and
        /// reduce-scatter): AllGather and ReduceScatter may then run CollNetDirect and, from
        /// NCCL 2.27, NVLS across nodes. Default: SHARPv3.
        bool allgatherReduceScatter = true;
        std::string source; //!< where the figures come from
    };
    InNetworkReduction sharp;

    uint32_t AddDevice(const Device& device);
    uint32_t AddLink(const Link& link);
    /// Registers (or replaces) a GPU model; devices name it in Device::model.
    void AddGpuSpec(const GpuSpec& spec);

    const std::vector<Device>& Devices() const { return m_devices; }
    const std::vector<Link>& Links() const { return m_links; }
    const Device& GetDevice(uint32_t id) const { return m_devices.at(id); }
    /// Device id by unique name; throws TopologyError if absent.
    uint32_t FindDevice(const std::string& name) const;
    bool HasDevice(const std::string& name) const;

    uint32_t GpuCount() const { return static_cast<uint32_t>(m_gpus.size()); }
    uint32_t NodeCount() const { return m_nodeCount; }
    /// Device id of global GPU index i; throws std::out_of_range.
    uint32_t GpuDevice(uint32_t gpuIndex) const { return m_gpus.at(gpuIndex); }
    /// GPUs of one node, in local order.
    std::vector<uint32_t> GpusOfNode(uint32_t node) const;
    /// Device id of the GPU with this local index on this node, -1 if there is none (a binary
    /// search: the GPU list is node-major).
    int64_t FindGpu(int32_t node, int32_t localIndex) const;
    const GpuSpec& GpuSpecOf(uint32_t gpuIndex) const;
    const std::map<std::string, GpuSpec>& GpuSpecs() const { return m_specs; }

    uint32_t ChannelCount() const { return static_cast<uint32_t>(2 * m_links.size()); }
    double ChannelBandwidth(uint32_t channel) const { return m_links[channel / 2].bandwidth; }
    int64_t ChannelLatencyNs(uint32_t channel) const { return m_links[channel / 2].latencyNs; }
    LinkKind ChannelKind(uint32_t channel) const { return m_links[channel / 2].kind; }
    uint32_t ChannelFrom(uint32_t channel) const;
    uint32_t ChannelTo(uint32_t channel) const;
    std::string ChannelName(uint32_t channel) const; //!< "node0/gpu0->node0/nvswitch"

    /**
     * Shortest path (fewest hops) from src to dst as directed channels. Where several next hops are
     * equally short, flowHash picks one deterministically (per-flow ECMP). Only devices that
     * forward (switches, NICs, PCIe switches, NVSwitches) appear inside a path.
     * Throws TopologyError if dst cannot be reached.
     */
    std::vector<uint32_t> Route(uint32_t src, uint32_t dst, uint64_t flowHash = 0) const;
    /// Number of equal-cost next hops at each step of src->dst (1 everywhere: a single path).
    uint64_t PathCount(uint32_t src, uint32_t dst) const;
    int64_t PathLatencyNs(const std::vector<uint32_t>& path) const;
    /// Smallest per-direction bandwidth along a path (bytes/s).
    double PathBandwidth(const std::vector<uint32_t>& path) const;

    /// Whether src reaches dst through forwarding devices (one search per dst, cached: checking
    /// every GPU against one is linear, where PathCount for each would be quadratic).
    bool Reaches(uint32_t src, uint32_t dst) const;

    /// Structural checks (dangling ids, non-positive bandwidth, negative latency, every GPU can
    /// reach every other GPU); throws TopologyError naming the device or link.
    void Validate() const;
    TopologySummary Summarize() const;

private:
    /// Hop distance of every device to dst over forwarding devices; built once per dst, cached.
    const std::vector<uint32_t>& DistancesTo(uint32_t dst) const;

    std::vector<Device> m_devices;
    std::vector<Link> m_links;
    std::vector<uint32_t> m_gpus;
    uint32_t m_nodeCount = 0;
    std::unordered_map<std::string, uint32_t> m_byName;
    std::map<std::string, GpuSpec> m_specs;
    /// adjacency: device -> outgoing directed channels
    std::vector<std::vector<uint32_t>> m_out;
    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<uint32_t, std::unique_ptr<std::vector<uint32_t>>> m_distCache;
};

// The units of topology files, from the spec library (ns3/spec-units.h): ParseBandwidth (bytes/s),
// ParseLatencyNs, ParseBytes; each throws TopologyError on junk.
using ::eidolon::spec::ParseBandwidth;
using ::eidolon::spec::ParseBytes;
using ::eidolon::spec::ParseLatencyNs;

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_TOPOLOGY_H
