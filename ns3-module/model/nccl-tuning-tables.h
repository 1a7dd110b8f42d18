/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): NCCL's constant tuning tables (src/graph/tuning.cc) for
 * the emulated release: base and per-hardware latencies, per-channel bandwidth caps, NVLS
 * efficiencies and the tree correction factors, and which of NCCL's formula changes the release
 * has. Read from NCCL's public source at the tags v2.18.6-1, v2.20.3-1, v2.21.5-1, v2.24.3-1,
 * v2.27.7-1, v2.28.3-1/v2.28.9-1, v2.29.7-1 and v2.30.7-1; a version between two of these gets the
 * tables of the nearest one below it.
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

/// Releases whose tables were read (major*10000 + minor*100 + patch).
constexpr uint32_t kRelease218 = 21806, kRelease220 = 22003, kRelease221 = 22105,
                   kRelease224 = 22403, kRelease227 = 22707, kRelease228 = 22803,
                   kRelease230 = 23007;

/// The constant tables of src/graph/tuning.cc for one NCCL release family.
struct TuningTables
{
    uint32_t version = 0; //!< the emulated version asked for
    uint32_t release = 0; //!< the release read for it (one of kRelease*)
    /// 2.23+ formulas: PAT, 2(nNodes-1) ring inter-node steps, the tree's network latency at one
    /// rank per node, Tree only for AllReduce in the bandwidth caps, no ppn<2 LL128 discount.
    bool modern = true;
    bool ringLLHalf = true;          //!< ring LL bus bandwidth x1/2 (2.21+; before: x1/4 or x1/3)
    bool nvlsEfficiencyModel = true; //!< NVLS bandwidth from the NVLS efficiency (2.28+)
    bool nvlsTreeCorrection = true;  //!< tree size correction on Blackwell NVLSTree (2.29+)
    bool ll128Blackwell = true;      //!< LL128 on by default on sm100 (2.25+)
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
