/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: parsing the emulated NCCL release (EIDOLON_NCCL_VERSION).
 */
#include "nccl-version.h"

#include "spec-error.h"

#include <cstdlib>
#include <regex>

namespace eidolon
{
namespace spec
{

uint32_t
ParseNcclVersion(const std::string& text, const std::string& origin)
{
    static const std::regex dotted(R"(\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?\s*)");
    static const std::regex code(R"(\s*(\d{5})\s*)");
    std::smatch m;
    uint32_t version = 0;
    if (std::regex_match(text, m, dotted))
    {
        const unsigned long major = std::stoul(m[1]);
        const unsigned long minor = std::stoul(m[2]);
        const unsigned long patch = m[3].matched ? std::stoul(m[3]) : 0;
        if (major > 9 || minor > 99 || patch > 99)
        {
            throw SpecError(origin + ": '" + text + "' is not an NCCL release (MAJOR.MINOR.PATCH)");
        }
        version = uint32_t(major * 10000 + minor * 100 + patch);
    }
    else if (std::regex_match(text, m, code))
    {
        version = uint32_t(std::stoul(m[1]));
    }
    else
    {
        throw SpecError(origin + ": '" + text +
                        "' is not an NCCL version (write it as NCCL prints it, e.g. 2.18.3, or "
                        "as its code, e.g. 21803)");
    }
    if (version < kOldestNcclVersion || version > kNewestNcclVersion)
    {
        throw SpecError(origin + ": NCCL " + FormatNcclVersion(version) +
                        " is not modelled; the tuning tables cover 2.18 to 2.30");
    }
    return version;
}

uint32_t
NcclVersionFromEnvironment()
{
    const char* value = std::getenv(kNcclVersionVariable);
    if (!value || !*value)
    {
        return kDefaultNcclVersion;
    }
    return ParseNcclVersion(value, kNcclVersionVariable);
}

std::string
FormatNcclVersion(uint32_t code)
{
    return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
           std::to_string(code % 100);
}

} // namespace spec
} // namespace eidolon
