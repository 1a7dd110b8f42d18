/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: the emulated NCCL release of a run. EIDOLON_NCCL_VERSION (set by hand, or
 * by `eidolon run --nccl-version`) is the one source: the collective model loads that release's
 * tuning tables and selection rules, and gpu-emu's ncclGetVersion reports it. Both read it through
 * NcclVersionFromEnvironment().
 */
#ifndef EIDOLON_SPEC_NCCL_VERSION_H
#define EIDOLON_SPEC_NCCL_VERSION_H

#include <cstdint>
#include <string>

namespace eidolon
{
namespace spec
{

/// NCCL's own encoding of a release: major*10000 + minor*100 + patch (NCCL_VERSION_CODE).
constexpr uint32_t kDefaultNcclVersion = 23007; //!< 2.30.7, the newest release modelled
constexpr uint32_t kOldestNcclVersion = 21800;  //!< 2.18.0
constexpr uint32_t kNewestNcclVersion = 23099;  //!< anything of 2.30

/// The environment variable that names the emulated release.
inline const char* const kNcclVersionVariable = "EIDOLON_NCCL_VERSION";

/**
 * The version code of `text`: "2.18.3", "2.18" (patch 0), "v2.21.5-1" (a release tag), or the
 * code itself ("21803"). Throws SpecError naming `origin` (e.g. "EIDOLON_NCCL_VERSION") for
 * anything else, and for releases outside 2.18 to 2.30, which the model has no tables for.
 */
uint32_t ParseNcclVersion(const std::string& text, const std::string& origin);

/// EIDOLON_NCCL_VERSION parsed, or kDefaultNcclVersion where it is unset or empty. Throws
/// SpecError for a value ParseNcclVersion refuses.
uint32_t NcclVersionFromEnvironment();

/// "2.18.3" for 21803.
std::string FormatNcclVersion(uint32_t code);

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_NCCL_VERSION_H
