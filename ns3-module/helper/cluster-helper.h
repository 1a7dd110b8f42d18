/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: builds a cluster (topology + network model) for a scenario, as ns-3 helpers do.
 */
#ifndef EIDOLON_CLUSTER_HELPER_H
#define EIDOLON_CLUSTER_HELPER_H

#include "ns3/attribute.h"
#include "ns3/network-model.h"
#include "ns3/object-factory.h"
#include "ns3/topology.h"

#include <string>

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief Reads a cluster description and installs a network model on it.
 *
 * \code
 *   ClusterHelper cluster;
 *   cluster.SetNetworkModel("ns3::eidolon::FlowModel", "EcmpSeed", UintegerValue(7));
 *   Ptr<Topology> topo = cluster.ReadTopology("topologies/dgx-h100-4node.yaml");
 *   Ptr<NetworkModel> net = cluster.Install(topo);
 * \endcode
 */
class ClusterHelper
{
public:
    ClusterHelper();

    /// The NetworkModel TypeId to create (default ns3::eidolon::FlowModel) and its attributes.
    template <typename... Ts>
    void SetNetworkModel(std::string type, Ts&&... args)
    {
        m_modelFactory.SetTypeId(type);
        m_modelFactory.Set(std::forward<Ts>(args)...);
    }
    void SetNetworkModelAttribute(const std::string& name, const AttributeValue& value);

    /// Reads YAML or a SimAI/HPCC text file (see doc/topology.md); throws TopologyError.
    Ptr<Topology> ReadTopology(const std::string& path) const;
    /// Finds a shipped topology by name ("default", "dgx-h100-4node") or returns path as given.
    static std::string ResolveTopologyPath(const std::string& nameOrPath);

    /// Creates the network model and gives it the topology.
    Ptr<NetworkModel> Install(Ptr<const Topology> topology) const;

private:
    ObjectFactory m_modelFactory;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_CLUSTER_HELPER_H
