/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: NCCL's tuning tables by release. Sources: ../shared/notes/nccl-model-facts.md section
 * 1.3 (NCCL 2.30.7 src/graph/tuning.cc, with the 2.28/2.29 deltas) and NCCL 2.20.3
 * src/graph/tuning.cc for releases before 2.23.
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
    t.modern = true;
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
    if (version < 22809)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}});
    }
    else if (version < 22907)
    {
        Fill(t.perChMaxRingLL128,
             {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}});
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

/// NCCL 2.20.3 src/graph/tuning.cc (used for releases before 2.23).
TuningTables
LegacyTables(uint32_t version)
{
    TuningTables t;
    t.version = version;
    t.modern = false;
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
} // namespace

const TuningTables&
GetTuningTables(uint32_t version)
{
    static thread_local std::unique_ptr<TuningTables> cache;
    if (!cache || cache->version != version)
    {
        cache = std::make_unique<TuningTables>(version >= 22300 ? ModernTables(version)
                                                                : LegacyTables(version));
    }
    return *cache;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3
