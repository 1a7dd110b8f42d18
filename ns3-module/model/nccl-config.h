/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): NCCL's configuration as the environment gives it. The
 * public NcclConfig (collective-model.h) holds the variables; nccl-config.cc reads and checks them
 * as NCCL does, and turns NCCL_ALGO / NCCL_PROTO into the masks NCCL's enable rules apply.
 */
#ifndef EIDOLON_NCCL_CONFIG_H
#define EIDOLON_NCCL_CONFIG_H

#include "collective-model.h"
#include "nccl-indices.h"

#include "ns3/nccl-env.h"

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// What NCCL_ALGO and NCCL_PROTO leave enabled, per function (NCCL's orders; spec/nccl-env.h).
using EnableMasks = ::eidolon::spec::NcclEnableMasks;

/// The masks of `config` as NCCL `version` reads them (spec::ReadNcclAlgoProto: a value it cannot
/// read gives its defaults, as the program stops there); with `applyEnv` false, NCCL's defaults
/// (everything enabled, nothing named), as NCCL's own choice without the environment.
EnableMasks ParseEnableMasks(const NcclConfig& config, uint32_t version, bool applyEnv);

/// NCCL_ALGO / NCCL_PROTO of `config` as getenv would give them: null where unset.
const char* AlgoVariable(const NcclConfig& config);
const char* ProtoVariable(const NcclConfig& config);

/// NCCL's MAXCHANNELS in `version`: 32 up to 2.24, 64 from 2.25 (device.h).
inline int
MaxChannelsOf(uint32_t version)
{
    return version >= 22500 ? kMaxChannels : 32;
}

/// NCCL_MAX_NCHANNELS / NCCL_MIN_NCHANNELS of `config` as NCCL `version` applies them
/// (connect.cc, ncclMaxNchannels / ncclMinNchannels): the maximum clamped to 1..MAXCHANNELS
/// (MAXCHANNELS where unset), the minimum to 0..MAXCHANNELS (0 where unset).
int MaxChannelsAsked(const NcclConfig& config, uint32_t version);
int MinChannelsAsked(const NcclConfig& config, uint32_t version);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_CONFIG_H
