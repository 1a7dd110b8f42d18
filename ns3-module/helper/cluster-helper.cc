/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "cluster-helper.h"

#include "ns3/log.h"
#include "ns3/topology-reader.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

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
    std::error_code ec;
    if (std::filesystem::is_directory(nameOrPath, ec))
    {
        throw TopologyError(nameOrPath + ": a directory, not a topology file");
    }
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
    if (nameOrPath.find('/') == std::string::npos)
    {
        // A name, not a path: say which names there are.
        std::set<std::string> names;
        for (const auto& dir : dirs)
        {
            for (const char* sub : {"", "validation/"})
            {
                for (const auto& entry : std::filesystem::directory_iterator(dir + "/" + sub, ec))
                {
                    if (entry.path().extension() == ".yaml")
                    {
                        names.insert(sub + entry.path().stem().string());
                    }
                }
            }
        }
        std::string list;
        for (const std::string& name : names)
        {
            list += (list.empty() ? "" : ", ") + name;
        }
        throw TopologyError(nameOrPath + ": no such file, and no shipped topology of that name" +
                            (list.empty() ? std::string() : " (shipped: " + list + ")"));
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
