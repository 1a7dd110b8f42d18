/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's tuning tables by release, from src/graph/tuning.cc of NCCL's public repository
 * (github.com/NVIDIA/nccl) at the tags v2.18.6-1, v2.20.3-1, v2.21.5-1, v2.24.3-1, v2.27.7-1,
 * v2.28.3-1, v2.28.9-1, v2.29.7-1 and v2.30.7-1 (../shared/notes/nccl-model-facts.md section 1.3
 * for 2.30.7). Values are NCCL's; the arrangement is ours.
 */
#include "nccl-tuning-tables.h"

#include "ns3/log.h"

#include <initializer_list>
#include <memory>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonNcclTuningTables");

namespace nccl
{
namespace
{
template<size_t R, size_t C>
void
Fill(double (&dst)[R][C], std::initializer_list<std::initializer_list<double>> rows)
{
    size_t r = 0;
    for (const auto& row : rows)
    {
        size_t c = 0;
        for (double v : row)
        {
            dst[r][c++] = v;
        }
        ++r;
    }
}

/// NCCL 2.30.7 (nccl-model-facts.md section 1.3), with the per-release deltas that file lists
/// for 2.28/2.29.
TuningTables
ModernTables(uint32_t version)
{
    TuningTables t;
    t.version = version;
    t.release = version >= 23000 ? kRelease230 : kRelease228;
    t.modern = true;
    t.nvlsTreeCorrection = version >= 22900;
    Fill(t.baseLat, {{6.8, 14.0, 8.4},
                     {6.6, 14.0, 8.4},
                     {0, 0, 0},
                     {0, 0, 0},
                     {0, 0, 0},
                     {0, 0, 0},
                     {8.0, 8.0, 8.0}});
    Fill(t.hwLat[kHwNvlink], {{.6, 1.25, 4.0},
                              {.6, 1.9, 3.4},
                              {0, 0, 3.7},
                              {0, 0, 2.8},
                              {0, 0, 25},
                              {0, 0, 25},
                              {0, 0, 4.0}});
    Fill(t.hwLat[kHwPci], {{1.0, 1.9, 4.0},
                           {1.0, 2.5, 5.7},
                           {0, 0, 3.7},
                           {0, 0, 2.8},
                           {0, 0, 0},
                           {0, 0, 0},
                           {0, 0, 4.0}});
    const double nvlsTreeNet = version <= 22807 ? 14.0 : 20.9;
    Fill(t.hwLat[kHwNet], {{5.0, 8.5, 14},
                           {2.7, 4.0, 14.0},
                           {0, 0, 31},
                           {0, 0, 30},
                           {0, 0, 18},
                           {0, 0, nvlsTreeNet},
                           {0, 0, 14}});
    Fill(t.llMaxBw,
         {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}});
    // Blackwell's ring LL128 cap (tuning.cc at each tag): 2 x 36.7 to 2.28.3, 34.6 on two nodes
    // from 2.28.7, 34.5/34.6/34.5 in 2.29.2-2.29.3, 40 from 2.29.7.
    if (version < 22807)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}});
    }
    else if (version < 22902)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}});
    }
    else if (version < 22907)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {34.5, 34.6, 34.5}});
    }
    else
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}});
    }
    Fill(t.perChMaxTreeLL128,
         {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}});
    Fill(t.perChMaxTree,
         {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}});
    const double bwNvlsTreeN4 = version <= 22807 ? 43.1 : version < 23000 ? 43.8 : 80.0;
    Fill(t.perChMaxNvlsTree,
         {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, bwNvlsTreeN4}});
    t.nvlsEff[0] = 0;
    t.nvlsEff[1] = 0;
    t.nvlsEff[2] = 0.85;
    t.nvlsEff[3] = 0.74;
    t.treeCorrection[kLL] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
                             .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0};
    t.treeCorrection[kLL128] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
                                .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0};
    t.treeCorrection[kSimple] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                 .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
    return t;
}

/// The flags of the releases before 2.23.
void
SetClassicFlags(TuningTables& t, uint32_t release)
{
    t.release = release;
    t.modern = false;
    t.ringLLHalf = release >= kRelease221;
    // tuning.cc's function/algorithm filter (2.18 Ring only for AllGather and ReduceScatter,
    // 2.19 adds NVLS, 2.20 CollNetDirect) is spec::NcclImplements, by version.
    t.nvlsEfficiencyModel = false;
    t.nvlsTreeCorrection = false;
    t.ll128Blackwell = false;
}

/// NCCL 2.20.3 (used for 2.19 and 2.20).
TuningTables
Release220Tables(uint32_t version)
{
    TuningTables t;
    t.version = version;
    SetClassicFlags(t, kRelease220);
    Fill(t.baseLat,
         {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
    Fill(t.hwLat[kHwNvlink], {{.6, 1.25, 28},
                              {.6, 1.9, 3.4},
                              {0, 0, 3.7},
                              {0, 0, 2.8},
                              {0, 0, 23},
                              {0, 0, 23},
                              {0, 0, 0}});
    Fill(t.hwLat[kHwPci], {{1.0, 1.9, 28},
                           {1.0, 2.5, 5.7},
                           {0, 0, 3.7},
                           {0, 0, 2.8},
                           {0, 0, 0},
                           {0, 0, 0},
                           {0, 0, 0}});
    Fill(t.hwLat[kHwNet], {{5.0, 8.5, 28},
                           {2.7, 4.0, 14.0},
                           {0, 0, 31},
                           {0, 0, 30},
                           {0, 0, 18},
                           {0, 0, 14},
                           {0, 0, 0}});
    Fill(t.llMaxBw,
         {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}});
    Fill(t.perChMaxRingLL128, {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {36.7, 36.7, 36.7}});
    Fill(t.perChMaxTreeLL128, {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {36.7, 36.7, 29.0}});
    Fill(t.perChMaxTree,
         {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {38.7, 41.4, 36.0}});
    t.treeCorrection[kLL] = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
                             .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0};
    t.treeCorrection[kLL128] = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
                                .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0};
    t.treeCorrection[kSimple] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                 .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
    // The timing still uses the physical NVLS efficiencies of the newer tables.
    t.nvlsEff[2] = 0.85;
    t.nvlsEff[3] = 0.74;
    return t;
}
/// NCCL 2.18.6 (used for 2.18): NVLS and NVLSTree with a 23 us base latency and no NVLink
/// per-hop figure, NVLSTree 19 us per network hop, Tree/Simple 4/6/14 us per hop with no base,
/// Hopper's LL ceiling still Ampere's.
TuningTables
Release218Tables(uint32_t version)
{
    TuningTables t = Release220Tables(version);
    SetClassicFlags(t, kRelease218);
    Fill(t.baseLat, {{6.8, 14.0, 0},
                     {6.6, 14.0, 8.4},
                     {6.8, 14.0, 0},
                     {6.8, 14.0, 0},
                     {0, 0, 23.0},
                     {0, 0, 23.0},
                     {0, 0, 0}});
    Fill(t.hwLat[kHwNvlink], {{.6, 1.25, 4},
                              {.6, 1.9, 3.4},
                              {0, 0, 8.0},
                              {0, 0, 4.75},
                              {0, 0, 0},
                              {0, 0, 0},
                              {0, 0, 0}});
    Fill(t.hwLat[kHwPci], {{1.0, 1.9, 6},
                           {1.0, 2.5, 5.7},
                           {0, 0, 8.0},
                           {0, 0, 8.0},
                           {0, 0, 0},
                           {0, 0, 0},
                           {0, 0, 0}});
    Fill(t.hwLat[kHwNet], {{5.0, 8.5, 14},
                           {2.7, 4.0, 14.0},
                           {0, 0, 10.7},
                           {0, 0, 14},
                           {0, 0, 18},
                           {0, 0, 19},
                           {0, 0, 0}});
    return t;
}

/// NCCL 2.21.5 (used for 2.21 and 2.22): 2.20.3's tables with NVLS 25 us per NVLink hop and
/// Hopper's own LL ceiling (141/45/35 GB/s).
TuningTables
Release221Tables(uint32_t version)
{
    TuningTables t = Release220Tables(version);
    SetClassicFlags(t, kRelease221);
    t.hwLat[kHwNvlink][kNvls][kSimple] = 25;
    t.hwLat[kHwNvlink][kNvlsTree][kSimple] = 25;
    Fill(t.llMaxBw,
         {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {141.0, 45.0, 35.0}});
    return t;
}

/// NCCL 2.24.3 (used for 2.23 to 2.26) and 2.27.7 (2.27): the 2.23 formulas (PAT, Tree/Simple
/// 4/4/14 us per hop over a base of 8.4 us) with NVLS still min(bwIntra, bwInter) x 5/6. 2.23-2.24
/// have three architecture rows (sm100 reads Hopper's, LL128 off by default); 2.25 adds
/// Blackwell's at twice Hopper's figures and allows LL128 there (2.25.1 tuning.cc).
TuningTables
Release224Tables(uint32_t version)
{
    TuningTables t = ModernTables(kRelease230);
    t.version = version;
    const bool r227 = version >= 22700;
    t.release = r227 ? kRelease227 : kRelease224;
    t.nvlsEfficiencyModel = false;
    t.nvlsTreeCorrection = false;
    const bool blackwell = version >= 22500;
    t.ll128Blackwell = blackwell;
    for (int p = 0; p < kProtos; ++p)
    {
        t.baseLat[kPat][p] = 0; // PAT's latency is its own formula (8 us base inside it)
        t.hwLat[kHwNvlink][kPat][p] = t.hwLat[kHwPci][kPat][p] = t.hwLat[kHwNet][kPat][p] = 0;
    }
    t.hwLat[kHwNet][kNvlsTree][kSimple] = 14;
    const double m = blackwell ? 2.0 : 1.0; // Blackwell row: twice Hopper's (2.25+), else Hopper's
    for (int i = 0; i < 3; ++i)
    {
        t.llMaxBw[3][i] = m * t.llMaxBw[2][i];
        t.perChMaxRingLL128[3][i] = m * t.perChMaxRingLL128[2][i];
        t.perChMaxTreeLL128[3][i] = m * t.perChMaxTreeLL128[2][i];
        t.perChMaxTree[3][i] = m * t.perChMaxTree[2][i];
        t.perChMaxNvlsTree[2][i] = t.perChMaxNvlsTree[3][i] = 0; // no NVLSTree cap before 2.28
    }
    t.nvlsEff[2] = 0.85; // not in NCCL's formula before 2.28; the timing's NVLS efficiency
    t.nvlsEff[3] = 0.74;
    return t;
}
} // namespace

const TuningTables&
GetTuningTables(uint32_t version)
{
    static thread_local std::unique_ptr<TuningTables> cache;
    if (!cache || cache->version != version)
    {
        TuningTables t = version >= 22800   ? ModernTables(version)
                         : version >= 22300 ? Release224Tables(version)
                         : version >= 22100 ? Release221Tables(version)
                         : version >= 21900 ? Release220Tables(version)
                                            : Release218Tables(version);
        cache = std::make_unique<TuningTables>(t);
    }
    return *cache;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
