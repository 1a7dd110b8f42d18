/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "cluster-helper.h"

#include "ns3/log.h"
#include "ns3/topology-reader.h"

#include <cstdlib>
#include <fstream>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonClusterHelper");

ClusterHelper::ClusterHelper()
{
    m_modelFactory.SetTypeId("ns3::eidolon::FlowModel");
}

void
ClusterHelper::SetNetworkModelAttribute(const std::string& name, const AttributeValue& value)
{
    m_modelFactory.Set(name, value);
}

std::string
ClusterHelper::ResolveTopologyPath(const std::string& nameOrPath)
{
    if (std::ifstream(nameOrPath).good())
    {
        return nameOrPath;
    }
    // Shipped files: $EIDOLON_TOPOLOGIES, then the source tree this build came from.
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("EIDOLON_TOPOLOGIES"))
    {
        dirs.emplace_back(env);
    }
#ifdef EIDOLON_SOURCE_DIR
    dirs.emplace_back(std::string(EIDOLON_SOURCE_DIR) + "/topologies");
#endif
    for (const auto& dir : dirs)
    {
        for (const char* ext : {"", ".yaml"})
        {
            std::string candidate = dir + "/" + nameOrPath + ext;
            if (std::ifstream(candidate).good())
            {
                return candidate;
            }
        }
    }
    return nameOrPath; // let the reader report it missing, by the name the user gave
}

Ptr<Topology>
ClusterHelper::ReadTopology(const std::string& path) const
{
    TopologyReadOptions options;
#ifdef EIDOLON_SOURCE_DIR
    // A file outside topologies/ (with no gpus/ beside it) still finds the shipped GPU specs, as
    // `eidolon topo check` does: `eidolon run` and eidolon-sim read topologies here.
    options.fallbackGpuSpecDir = std::string(EIDOLON_SOURCE_DIR) + "/topologies/gpus";
#endif
    return eidolon::ReadTopology(ResolveTopologyPath(path), options);
}

Ptr<NetworkModel>
ClusterHelper::Install(Ptr<const Topology> topology) const
{
    Ptr<NetworkModel> model = m_modelFactory.Create<NetworkModel>();
    model->SetTopology(topology);
    return model;
}

} // namespace eidolon
} // namespace ns3
