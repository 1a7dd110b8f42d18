/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: NCCL_ALGO and NCCL_PROTO as NCCL reads them (graph/tuning.cc parseList),
 * and which algorithm/protocol pairs each NCCL release implements for each function. The
 * collective model chooses among what they leave; gpu-emu's libnccl refuses, as NCCL does, a call
 * they leave nothing that NCCL implements at all. One reading for both.
 */
#ifndef EIDOLON_SPEC_NCCL_ENV_H
#define EIDOLON_SPEC_NCCL_ENV_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace eidolon
{
namespace spec
{

/// NCCL's orders: functions, algorithms, protocols (the indices of its tuning arrays).
constexpr int kNcclFuncs = 5;
constexpr int kNcclAlgos = 7;
constexpr int kNcclProtos = 3;
inline const char* const kNcclFuncNames[kNcclFuncs] = {"Broadcast", "Reduce", "AllGather",
                                                       "ReduceScatter", "AllReduce"};
inline const char* const kNcclAlgoNames[kNcclAlgos] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
inline const char* const kNcclProtoNames[kNcclProtos] = {"LL", "LL128", "Simple"};

/// What NCCL_ALGO and NCCL_PROTO leave enabled, per function.
struct NcclEnableMasks
{
    bool algo[kNcclFuncs][kNcclAlgos];
    bool proto[kNcclFuncs][kNcclProtos];
    /// NCCL_PROTO names the function: its list then decides LL128 even where NCCL's platform
    /// rule would keep it off.
    bool protoNamed[kNcclFuncs];
};

/**
 * NCCL_ALGO and NCCL_PROTO as NCCL parses them: a comma list for every function, or
 * "function:list;function:list" (functions not named keep everything); case-insensitive; '^'
 * inverts a list; "collnet" names both CollNet algorithms. Empty values enable everything.
 * Throws std::invalid_argument naming the variable, its value and the bad part.
 */
NcclEnableMasks ParseNcclEnableMasks(const std::string& algo, const std::string& proto);

/// Whether NCCL `version` implements algorithm `a` with protocol `p` for function `f` on some
/// topology (enqueue.cc, tuning.cc): Broadcast and Reduce on Ring only; AllGather and
/// ReduceScatter on Ring, NVLS (2.19+), CollNetDirect (2.20+) and PAT (2.23+); AllReduce on all
/// but PAT; NVLS, NVLSTree, CollNet and PAT with Simple only.
bool NcclImplements(uint32_t version, int f, int a, int p);

/// Whether NCCL `version` runs a call its variables leave nothing on Ring instead of failing it
/// (2.19-2.23: tuning.cc `ringbdw`, enqueue.cc's backup).
bool NcclRingBackup(uint32_t version);
/// Whether that backup keeps to the protocols NCCL_PROTO (and LL128's platform rule) leave
/// (2.22+; 2.19-2.21 ran any protocol, NVIDIA/nccl#1304).
bool NcclRingBackupKeepsProto(uint32_t version);

/// NCCL's answer to a call of function `f` for which the masks leave nothing it implements.
struct NcclCallError
{
    int code;            //!< ncclResult_t: 3 (ncclInternalError) or 5 (ncclInvalidUsage)
    std::string message; //!< what NCCL's WARN says (datatype as `datatype`)
};

/**
 * What NCCL `version` does with a call of function `f` (on a communicator of more than one rank)
 * that `masks`, read from NCCL_ALGO = `algo` and NCCL_PROTO = `proto`, leave no pair it implements:
 * 2.19-2.23 run Ring instead (with any protocol up to 2.21, with NCCL_PROTO's from 2.22), so
 * nothing; 2.18 and 2.24+ fail it (enqueue.cc topoGetAlgoInfo). Nothing where a pair is left:
 * whether it runs here is the topology's to say (NVLS, PAT, CollNet), which the model decides.
 */
std::optional<NcclCallError> NcclNoAlgorithmError(uint32_t version, int f,
                                                  const NcclEnableMasks& masks,
                                                  const std::string& algo, const std::string& proto,
                                                  const std::string& datatype);

/// NCCL's warning and code for a call of function `f` that finds no algorithm/protocol (the
/// datatype as given): "Error : no algorithm/protocol available" up to 2.23 (ncclInternalError),
/// naming the function, datatype and variables from 2.24 (ncclInvalidUsage when NCCL_ALGO or
/// NCCL_PROTO is set), "No algorithm/protocol available ..." from 2.30.
NcclCallError NcclNoAlgorithmText(uint32_t version, int f, const std::string& algo,
                                  const std::string& proto, const std::string& datatype);

/// Helpers for NCCL's variables: ASCII lower case, surrounding blanks removed, split on `sep`.
std::string NcclLower(std::string s);
std::string NcclTrim(const std::string& s);
std::vector<std::string> NcclSplit(const std::string& s, char sep);

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_NCCL_ENV_H
