/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "network-model.h"

#include "ns3/log.h"

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNetworkModel");
NS_OBJECT_ENSURE_REGISTERED(NetworkModel);

TypeId
NetworkModel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::eidolon::NetworkModel").SetParent<Object>().SetGroupName("Eidolon");
    return tid;
}

NetworkModel::~NetworkModel() = default;

void
NetworkModel::CommitAhead(Time /* bound */)
{
}

} // namespace eidolon
} // namespace ns3
