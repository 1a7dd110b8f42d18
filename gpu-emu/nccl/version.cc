// The NCCL version this libnccl reports, kept in this one place: ncclGetVersion and the checks of
// ncclConfig_t read it from here. NVIDIA's NCCL 2.30.7 by default (the version PyTorch 2.15's
// wheels ship); EIDOLON_NCCL_VERSION ("2.28.9", or a version code such as "22809") emulates
// another, so that a run can model the library a cluster has. The ABI stays 2.30's whatever
// version is reported: a program built against an older nccl.h calls the same entry points and
// passes a smaller ncclConfig_t, which ReadConfig reads by its size field.
#include "nccl-common.h"

#include <cstdlib>
#include <regex>

namespace eidolon::gpu::nccl
{

int
VersionCode(int major, int minor, int patch)
{
    // NCCL_VERSION(X, Y, Z) of nccl.h: the code changed from X*1000 to X*10000 after 2.8.
    return major <= 2 && minor <= 8 ? major * 1000 + minor * 100 + patch
                                    : major * 10000 + minor * 100 + patch;
}

bool
ParseVersion(const std::string& text, int* code)
{
    std::smatch parts;
    if (std::regex_match(text, parts, std::regex(R"((\d+)\.(\d+)\.(\d+))")))
    {
        int major = std::stoi(parts[1]), minor = std::stoi(parts[2]), patch = std::stoi(parts[3]);
        if (major >= 2 && minor < 100 && patch < 100)
        {
            *code = VersionCode(major, minor, patch);
            return true;
        }
        return false;
    }
    if (std::regex_match(text, std::regex(R"(\d{4,6})")))
    {
        *code = std::stoi(text);
        return *code >= 2000;
    }
    return false;
}

int
EmulatedVersionCode()
{
    constexpr int kDefault = 23007; // NCCL 2.30.7
    const char* text = std::getenv("EIDOLON_NCCL_VERSION");
    int code = kDefault;
    if (text && *text && !ParseVersion(text, &code))
    {
        WarnOnce("EIDOLON_NCCL_VERSION", std::string("EIDOLON_NCCL_VERSION='") + text +
                                             "' is not a NCCL version (2.30.7 or 23007); "
                                             "reporting 2.30.7");
        code = kDefault;
    }
    return code;
}

} // namespace eidolon::gpu::nccl
