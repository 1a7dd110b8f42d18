// The NCCL version this libnccl reports: ncclGetVersion and the checks of ncclConfig_t read it
// from here. It comes from spec::NcclVersionFromEnvironment(), the one parser of
// EIDOLON_NCCL_VERSION that the collective model reads too, so the release a program sees is the
// release whose tuning tables price its collectives (NVIDIA's NCCL 2.30.7 by default, the version
// PyTorch 2.15's wheels ship). The ABI stays 2.30's whatever version is reported: a program built
// against an older nccl.h calls the same entry points and passes a smaller ncclConfig_t, which
// ReadConfig reads by its size field.
#include "nccl-common.h"

#include "nccl-version.h"
#include "spec-error.h"

namespace eidolon::gpu::nccl
{

int
EmulatedVersionCode()
{
    try
    {
        return static_cast<int>(spec::NcclVersionFromEnvironment());
    }
    catch (const spec::SpecError& error)
    {
        // Never throw into the user's program: say why once and report the default release.
        WarnOnce("EIDOLON_NCCL_VERSION", std::string(error.what()) + "; reporting NCCL " +
                                             spec::FormatNcclVersion(spec::kDefaultNcclVersion));
        return static_cast<int>(spec::kDefaultNcclVersion);
    }
}

} // namespace eidolon::gpu::nccl
