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

/// NCCL's answer to a call (or a communicator's creation) it cannot serve.
struct NcclCallError
{
    int code;            //!< ncclResult_t: 3 (ncclInternalError) or 5 (ncclInvalidUsage)
    std::string message; //!< what NCCL's WARN says (datatype as `datatype`)
};

/// NCCL_ALGO and NCCL_PROTO as one NCCL release reads them.
struct NcclEnvReading
{
    NcclEnableMasks masks;
    /// What 2.18-2.23 skip without a word: names they do not know, compared whole ("tree " is not
    /// "tree"), and any "function:list" entry (those came with 2.24): "NCCL_ALGO: 'pat'".
    std::vector<std::string> ignored;
    /// 2.18-2.23: the variables whose list enables nothing the release knows (set but empty,
    /// or only names it skips), which turns every algorithm (protocol) off: "NCCL_ALGO".
    std::vector<std::string> nothingEnabled;
    /// 2.24+: a value NCCL cannot read fails communicator creation (ncclInvalidUsage, NCCL's
    /// text); the masks are then NCCL's defaults.
    std::optional<NcclCallError> initError;
};

/**
 * NCCL_ALGO and NCCL_PROTO as NCCL `version` reads them when it makes a communicator
 * (graph/tuning.cc parseList), each as getenv gives it: null when unset. Up to 2.23: one comma
 * list for every function, '^' inverting it, names compared whole and case-insensitively, unknown
 * ones skipped (PAT is a name from 2.23); a variable set to "" is a list of nothing. From 2.24:
 * "list" or "function:list;function:list" (the first entry alone may lack the function, setting
 * all of them; later entries override), functions not named keep everything, "" changes nothing;
 * an unknown name or function fails the communicator's creation. 2.18 keeps Ring on for every
 * function but AllReduce whatever NCCL_ALGO says (its enable rule skips them).
 */
NcclEnvReading ReadNcclAlgoProto(uint32_t version, const char* algo, const char* proto);

/// The simulator's warning for a reading with skipped names, lists of nothing or an init failure
/// (the variables as ReadNcclAlgoProto took them); empty if none.
std::string NcclEnvReadingWarning(uint32_t version, const NcclEnvReading& reading, const char* algo,
                                  const char* proto);

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

/// 2.18-2.23 (tuning.cc: "If user has hard set NCCL_ALGO=COLLNET, ignore it"): without CollNet
/// support, where NCCL_ALGO leaves Ring, Tree, NVLS (already off across nodes) and NVLSTree
/// (already off on one node) all off, NCCL turns Ring and Tree back on. Applies that rule to one
/// function's algorithms; true where it fired. 2.24+ have no such rule.
bool NcclCollNetFallback(uint32_t version, bool collnet, int nNodes, bool algo[kNcclAlgos]);

/**
 * What NCCL `version` does with a call of function `f` (on a communicator of more than one rank)
 * that `masks`, read from NCCL_ALGO = `algo` and NCCL_PROTO = `proto`, leave no pair it implements:
 * 2.19-2.23 run Ring instead (with any protocol up to 2.21, with NCCL_PROTO's from 2.22), so
 * nothing; 2.18 and 2.24+ fail it (enqueue.cc topoGetAlgoInfo). Nothing where a pair is left,
 * or where 2.18-2.23's CollNet rule may turn Ring and Tree back on: whether it runs here is the
 * topology's to say (NVLS, PAT, CollNet support, nodes), which the model decides.
 */
std::optional<NcclCallError> NcclNoAlgorithmError(uint32_t version, int f,
                                                  const NcclEnableMasks& masks, const char* algo,
                                                  const char* proto, const std::string& datatype);

/// NCCL's warning and code for a call of function `f` that finds no algorithm/protocol (the
/// datatype as given): "Error : no algorithm/protocol available" up to 2.23 (ncclInternalError),
/// naming the function, datatype and variables from 2.24 (ncclInvalidUsage when NCCL_ALGO or
/// NCCL_PROTO is set), "No algorithm/protocol available ..." from 2.30. `algo` / `proto` as getenv
/// gives them: null where unset; set but empty still counts as set, as NCCL's getenv test does.
NcclCallError NcclNoAlgorithmText(uint32_t version, int f, const char* algo, const char* proto,
                                  const std::string& datatype);

/// Helpers for NCCL's variables: ASCII lower case, surrounding blanks removed.
std::string NcclLower(std::string s);
std::string NcclTrim(const std::string& s);

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_NCCL_ENV_H
