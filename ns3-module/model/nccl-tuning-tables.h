/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): NCCL's constant tuning tables (src/graph/tuning.cc) for
 * the emulated release: base and per-hardware latencies, per-channel bandwidth caps, NVLS
 * efficiencies and the tree correction factors. Releases from 2.23 use the 2.30.7 tables with
 * their per-release deltas, older ones the 2.20.3 tables.
 */
#ifndef EIDOLON_NCCL_TUNING_TABLES_H
#define EIDOLON_NCCL_TUNING_TABLES_H

#include "nccl-indices.h"

#include <cstdint>
#include <vector>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

/// The constant tables of src/graph/tuning.cc for one NCCL release family.
struct TuningTables
{
    uint32_t version = 0;
    bool modern = true; //!< 2.23+ formulas (NVLS efficiency model, PAT, 2(nNodes-1) inter steps)
    double baseLat[kAlgos][kProtos] = {};
    double hwLat[3][kAlgos][kProtos] = {};
    double llMaxBw[4][3] = {};
    double perChMaxRingLL128[4][3] = {};
    double perChMaxTreeLL128[4][3] = {};
    double perChMaxTree[4][3] = {};
    double perChMaxNvlsTree[4][3] = {};
    double nvlsEff[4] = {};
    std::vector<double> treeCorrection[kProtos];
};

/// The tables of NCCL `version` (major*10000 + minor*100 + patch); cached per thread.
const TuningTables& GetTuningTables(uint32_t version);

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_TUNING_TABLES_H
