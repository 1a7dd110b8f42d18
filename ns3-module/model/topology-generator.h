/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: generators for common GPU clusters (DGX-style nodes on rail-optimized fat-trees).
 */
#ifndef EIDOLON_TOPOLOGY_GENERATOR_H
#define EIDOLON_TOPOLOGY_GENERATOR_H

#include "topology.h"

#include "ns3/ptr.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{
namespace eidolon
{

/**
 * One server as the generator builds it: GPUs on an NVSwitch domain, and one PCIe switch per
 * GPU joining that GPU, its compute NIC and the host.
 *
 * One PCIe switch per GPU/NIC pair is deliberate: routing takes the fewest hops, so two GPUs on
 * one PCIe switch would see a PCIe path (gpu-pcie-gpu) as short as the NVSwitch path, and the NIC
 * a GPU uses would no longer be its own rail's.
 */
struct NodeTemplate
{
    std::string type;     //!< preset it came from, e.g. "dgx-h100"
    std::string gpuModel; //!< GpuSpec name, e.g. "H100-SXM5-80GB"
    uint32_t gpus = 8;    //!< GPUs per node
    /// Compute NICs per node (0: one per GPU). It divides `gpus`: each NIC shares its PCIe switch
    /// with gpus / nics neighbouring GPUs (and their host path).
    uint32_t nics = 0;
    double nvlinkBandwidth = 0; //!< bytes/s per direction between one GPU and the NVSwitch domain
    int64_t nvlinkLatencyNs = 0;
    double pcieBandwidth = 0; //!< bytes/s per direction of each PCIe link (GPU, NIC, host)
    int64_t pcieLatencyNs = 0;
    double nicBandwidth = 0; //!< bytes/s per direction of one compute NIC port
    bool nvswitch = true;    //!< false: GPUs talk over PCIe only (no NVSwitch domain)
};

/// Compute NICs per node of a template (its `nics`, else one per GPU).
inline uint32_t
NicsPerNode(const NodeTemplate& node)
{
    return node.nics ? node.nics : node.gpus;
}

/// The node presets known by name ("dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200").
std::vector<std::string> NodePresetNames();
/// A preset by name; throws TopologyError listing the known presets.
NodeTemplate NodePreset(const std::string& type);

/// How the nodes' compute NICs are joined.
enum class FabricKind
{
    None,         //!< no fabric: NICs left unconnected (single node)
    SingleSwitch, //!< every NIC on one switch
    TwoTier,      //!< leaf/spine fat-tree
    ThreeTier,    //!< leaf/spine/core fat-tree in pods
};

const char* ToString(FabricKind kind);
/// Parses "none", "single-switch", "two-tier", "three-tier"; throws TopologyError otherwise.
FabricKind FabricKindFromString(const std::string& text);

/**
 * The network between nodes. Leaves group nodes in scalable units of nodesPerLeaf nodes; with
 * railOptimized, a scalable unit has one leaf per rail and NIC i of every node in it goes to the
 * rail-i leaf, otherwise one leaf takes every NIC of its nodes.
 *
 * Oversubscription: a leaf's uplink capacity is its downlink capacity (the NIC ports attached to
 * it) divided by oversubscription, split evenly over the spines it reaches; a spine's uplink
 * capacity to the cores is its downlink capacity divided by spineOversubscription. Parallel
 * cables between one pair of switches are merged into one link of their total bandwidth.
 */
struct FabricTemplate
{
    FabricKind kind = FabricKind::TwoTier;
    bool railOptimized = true;
    uint32_t nodesPerLeaf = 0;     //!< scalable-unit size; 0: min(nodes, 32)
    uint32_t spines = 0;           //!< spines (per pod for three-tier); 0: one per leaf uplink port
    uint32_t unitsPerPod = 0;      //!< three-tier: scalable units (leaf groups) per pod; 0: 4
    uint32_t cores = 0;            //!< three-tier: core switches; 0: as many as spines per pod
    double oversubscription = 1.0; //!< leaf downlink : uplink
    double spineOversubscription = 1.0; //!< spine downlink : uplink (three-tier)
    int64_t nicLeafLatencyNs = 0;       //!< NIC port, cable and leaf switching
    int64_t leafSpineLatencyNs = 0;     //!< cable and spine switching
    int64_t spineCoreLatencyNs = 0;     //!< cable and core switching
};

/// Defaults for the latencies (see topology.md for where they come from).
FabricTemplate DefaultFabric();

/// Adds `nodes` nodes built from `node` (node indices firstNode..firstNode+nodes-1) to topo.
void AddNodes(Topology& topo, const NodeTemplate& node, uint32_t firstNode, uint32_t nodes);

/**
 * Adds the fabric joining the compute NICs of nodes 0..nodes-1 (named node<N>/nic<i>, as AddNodes
 * makes them); every node has nicsPerNode NICs of nicBandwidth bytes/s each.
 */
void AddFabric(Topology& topo, const FabricTemplate& fabric, uint32_t nodes, uint32_t nicsPerNode,
               double nicBandwidth);

/// How many devices and links AddNodes + AddFabric would make, worked out without making them
/// (64-bit: no count wraps), so that a reader can refuse a size before allocating anything.
struct GeneratedSize
{
    uint64_t devices = 0;
    uint64_t links = 0;
};
GeneratedSize GeneratedSizeOf(const NodeTemplate& node, uint32_t nodes,
                              const FabricTemplate& fabric);

/// A whole cluster: nodes of one template plus a fabric. GPU specs are not attached.
Ptr<Topology> GenerateCluster(const std::string& name, const NodeTemplate& node, uint32_t nodes,
                              const FabricTemplate& fabric);

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_TOPOLOGY_GENERATOR_H
