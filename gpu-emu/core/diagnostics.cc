#include "diagnostics.h"

#include <cstdio>
#include <mutex>
#include <set>

namespace eidolon::gpu
{

void
Warn(const std::string& message)
{
    std::fprintf(stderr, "eidolon: %s\n", message.c_str());
}

void
WarnUnsupportedOnce(const char* api, const char* returned)
{
    static std::mutex mutex;
    static auto* warned = new std::set<std::string>(); // never destroyed: atexit paths still warn
    std::lock_guard<std::mutex> lock(mutex);
    if (warned->insert(api).second)
    {
        std::fprintf(stderr, "eidolon: %s is not supported by eidolon (returns %s)\n", api,
                     returned);
    }
}

} // namespace eidolon::gpu
