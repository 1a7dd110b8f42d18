/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): NCCL's topology search as far as the model reproduces it
 * (src/graph/search.cc, connect.cc, trees.cc; doc/collective-model.md): what NCCL sees of each
 * GPU (architecture, NVLink, PCIe, nearest NIC), the ring, tree and NVLS graphs with their
 * per-channel speeds, the communicator's channel counts and its p2p channels. Also the graphs as
 * the schedules walk them: rings per channel, ranks grouped by node, the double binary tree.
 */
#ifndef EIDOLON_NCCL_TOPOLOGY_SEARCH_H
#define EIDOLON_NCCL_TOPOLOGY_SEARCH_H

#include "collective-model.h"
#include "topology.h"

#include <cstdint>
#include <vector>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// What the search takes besides the topology: the emulated release, the environment, and the
/// model's attributes that replace NCCL's figures (0: NCCL's own).
struct SearchSettings
{
    uint32_t ncclVersion = 0;
    NcclConfig config;
    double channelBandwidth = 0; //!< bytes/s of one CTA; 0: NCCL's per-link NVLink figure
    double nvlinkEfficiency = 0; //!< 0: NCCL's per-link figure over the spec's per-link rate
    double nvlsEfficiency = 0;   //!< 0: NCCL's nvlsEff table
    bool nvlsMulticast = true;   //!< the driver reports CUDA multicast support
    bool sharp = false;          //!< the switches reduce in the network (Topology::sharp)
    bool sharpAllgatherReduceScatter = false; //!< and the plugin gathers/scatters there too
    std::string cpuVendor = "intel"; //!< NCCL's CPU class (intel, amd, zhaoxin, arm, power)
    int minCtas = 0;                 //!< the communicator's ncclConfig_t minCTAs (0: unset)
    int maxCtas = 0;                 //!< and maxCTAs
};

/// Per topology device: the indices (in Topology::Links()) of the links touching it.
using DeviceLinks = std::vector<std::vector<uint32_t>>;

DeviceLinks IndexDeviceLinks(const Topology& topology);

/// The communicator of `gpus` (topology device ids by comm rank) as NCCL's search sees it.
NcclCommInfo SearchCommunicator(const Topology& topology, const DeviceLinks& links,
                                const std::vector<uint32_t>& gpus, const SearchSettings& settings);

/// How GroupRanksByNode orders the nodes.
enum class NodeOrder
{
    FirstRank, //!< in the order of each node's first comm rank
    NodeId,    //!< by topology node id
};

/// Comm ranks grouped by node, each node's ranks by GPU local index.
std::vector<std::vector<uint32_t>> GroupRanksByNode(const Topology& topology,
                                                    const std::vector<uint32_t>& gpus,
                                                    NodeOrder order);

/// The ring of each of `channels` channels, as comm ranks, over a communicator's nodes
/// (NcclCommInfo::nodes: in the order of their first rank, each by local index); channel c enters
/// each node on the GPU of rail c: even nodes walk up from it, odd nodes down back to it, so node
/// boundaries stay on a rail (as CollectiveHelper::RailAlignedRings).
std::vector<std::vector<uint32_t>> RingOrders(const std::vector<std::vector<uint32_t>>& nodes,
                                              int channels);

/// One of NCCL's two binary trees over node indices 0..n-1.
struct NodeTree
{
    int root = 0;
    std::vector<std::vector<int>> children;
};

/// Tree `tree` (0 or 1) of NCCL's double binary tree over `nNodes` nodes (src/graph/trees.cc,
/// restated): the second tree is the mirror image of the first (even n) or the first shifted by
/// one node (odd n), so every node is a leaf in (roughly) one of them.
NodeTree DoubleBinaryTree(int nNodes, int tree);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_TOPOLOGY_SEARCH_H
