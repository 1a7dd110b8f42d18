/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon (collective model, internal): the axes of NCCL's tuning arrays as NCCL orders them
 * (algorithm, protocol, function, hardware class), the names NCCL prints and parses, and the
 * integer helpers NCCL's formulas use. The public enums NcclAlgorithm and NcclProtocol have the
 * same orders, so an index and an enum value convert by a cast.
 */
#ifndef EIDOLON_NCCL_INDICES_H
#define EIDOLON_NCCL_INDICES_H

#include "collective-model.h"

#include "ns3/nccl-env.h"

#include <cstdint>

namespace ns3
{
namespace eidolon
{
namespace nccl
{

constexpr int kAlgos = 7;
constexpr int kProtos = 3;
constexpr int kFuncs = 5;
// NCCL's orders: algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT;
// protocols LL, LL128, Simple; functions Broadcast, Reduce, AllGather, ReduceScatter, AllReduce.
constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5,
              kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;
/// Hardware classes of the latency table: the path type inside a node, and the network.
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;

/// The names NCCL prints and parses (spec/nccl-env.h, shared with gpu-emu).
inline const char* const* const kAlgoNames = ::eidolon::spec::kNcclAlgoNames;
inline const char* const* const kProtoNames = ::eidolon::spec::kNcclProtoNames;
inline const char* const* const kFuncNames = ::eidolon::spec::kNcclFuncNames;
static_assert(kAlgos == ::eidolon::spec::kNcclAlgos && kProtos == ::eidolon::spec::kNcclProtos &&
                  kFuncs == ::eidolon::spec::kNcclFuncs,
              "one NCCL order for the model and spec/nccl-env.h");

constexpr int kMaxChannels = 64; //!< MAXCHANNELS

static_assert(int(NcclAlgorithm::Tree) == kTree && int(NcclAlgorithm::Ring) == kRing &&
                  int(NcclAlgorithm::Nvls) == kNvls && int(NcclAlgorithm::Pat) == kPat,
              "NcclAlgorithm follows NCCL's order");
static_assert(int(NcclProtocol::LL) == kLL && int(NcclProtocol::Simple) == kSimple,
              "NcclProtocol follows NCCL's order");

/// NCCL's function index of a collective; -1 for SendRecv (not a collective function).
inline int
FuncOf(CollectiveKind kind)
{
    switch (kind)
    {
    case CollectiveKind::Broadcast:
        return kBroadcast;
    case CollectiveKind::Reduce:
        return kReduce;
    case CollectiveKind::AllGather:
        return kAllGather;
    case CollectiveKind::ReduceScatter:
        return kReduceScatter;
    case CollectiveKind::AllReduce:
        return kAllReduce;
    case CollectiveKind::SendRecv:
        return -1;
    }
    return -1;
}

/// Row of the per-architecture tables: Volta, Ampere, Hopper, Blackwell.
inline int
CompCapIndex(int cc)
{
    return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

/// Smallest power of two >= v (NCCL's pow2Up).
inline uint32_t
Pow2Up(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
    {
        p <<= 1;
    }
    return p;
}

/// floor(log2(v)), -1 for 0 (NCCL's log2i).
inline int
Log2i(uint64_t v)
{
    int l = -1;
    while (v)
    {
        v >>= 1;
        ++l;
    }
    return l;
}

/// ceil(log2(n)), 0 for n <= 1.
inline uint32_t
CeilLog2(uint32_t n)
{
    uint32_t l = 0;
    while ((1u << l) < n)
    {
        ++l;
    }
    return l;
}

} // namespace nccl
} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_NCCL_INDICES_H
