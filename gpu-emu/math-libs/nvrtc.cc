// libnvrtc.so.13: programs can be created and destroyed, the version and architectures queried;
// compiling returns NVRTC_ERROR_INTERNAL_ERROR with a program log saying why (eidolon runs no
// device code, so there is nothing to compile for), and every other call the same status.
#include "math-libs-common.h"

#include <cuda.h>
#include <nvrtc.h>

#include <cstring>
#include <string>

using namespace eidolon::gpu;

struct _nvrtcProgram
{
    std::string source;
    std::string name;
    std::string log;
};

namespace
{
// The architectures NVRTC 13 compiles for (sm_75 .. sm_121).
constexpr int kArchs[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
constexpr int kArchCount = int(sizeof(kArchs) / sizeof(kArchs[0]));
using Reply = Replies<nvrtcResult, NVRTC_SUCCESS, NVRTC_ERROR_INVALID_INPUT>;
} // namespace

EIDOLON_EXPORT int
eidolonNvrtcUnsupported(const char* api)
{
    return Reply::Unsupported(api, NVRTC_ERROR_INTERNAL_ERROR, "NVRTC_ERROR_INTERNAL_ERROR");
}

EIDOLON_EXPORT nvrtcResult
nvrtcVersion(int* major, int* minor)
{
    if (!major || !minor)
    {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    *major = CUDA_VERSION / 1000;
    *minor = CUDA_VERSION % 1000 / 10;
    return NVRTC_SUCCESS;
}

EIDOLON_EXPORT const char*
nvrtcGetErrorString(nvrtcResult result)
{
    switch (result)
    {
    case NVRTC_SUCCESS:
        return "NVRTC_SUCCESS";
    case NVRTC_ERROR_OUT_OF_MEMORY:
        return "NVRTC_ERROR_OUT_OF_MEMORY";
    case NVRTC_ERROR_PROGRAM_CREATION_FAILURE:
        return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case NVRTC_ERROR_INVALID_INPUT:
        return "NVRTC_ERROR_INVALID_INPUT";
    case NVRTC_ERROR_INVALID_PROGRAM:
        return "NVRTC_ERROR_INVALID_PROGRAM";
    case NVRTC_ERROR_COMPILATION:
        return "NVRTC_ERROR_COMPILATION";
    case NVRTC_ERROR_INTERNAL_ERROR:
        return "NVRTC_ERROR_INTERNAL_ERROR";
    default:
        return "NVRTC_ERROR";
    }
}

EIDOLON_EXPORT nvrtcResult
nvrtcGetNumSupportedArchs(int* count)
{
    return Reply::Store(count, kArchCount);
}

EIDOLON_EXPORT nvrtcResult
nvrtcGetSupportedArchs(int* archs)
{
    if (!archs)
    {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    std::memcpy(archs, kArchs, sizeof(kArchs));
    return NVRTC_SUCCESS;
}

EIDOLON_EXPORT nvrtcResult
nvrtcCreateProgram(nvrtcProgram* program, const char* source, const char* name, int,
                   const char* const*, const char* const*)
{
    if (!program || !source)
    {
        return NVRTC_ERROR_INVALID_INPUT;
    }
    *program = new _nvrtcProgram{source, name ? name : "default_program", ""};
    return NVRTC_SUCCESS;
}

EIDOLON_EXPORT nvrtcResult
nvrtcDestroyProgram(nvrtcProgram* program)
{
    if (!program || !*program)
    {
        return NVRTC_ERROR_INVALID_PROGRAM;
    }
    delete *program;
    *program = nullptr;
    return NVRTC_SUCCESS;
}

EIDOLON_EXPORT nvrtcResult
nvrtcCompileProgram(nvrtcProgram program, int, const char* const*)
{
    if (!program)
    {
        return NVRTC_ERROR_INVALID_PROGRAM;
    }
    program->log = program->name +
                   ": not compiled: eidolon simulates the GPU and runs no device code, so runtime "
                   "compilation (NVRTC) is not supported\n";
    WarnUnsupportedOnce("nvrtcCompileProgram", "NVRTC_ERROR_INTERNAL_ERROR");
    return NVRTC_ERROR_INTERNAL_ERROR;
}

EIDOLON_EXPORT nvrtcResult
nvrtcGetProgramLogSize(nvrtcProgram program, size_t* size)
{
    return program ? Reply::Store(size, program->log.size() + 1) : NVRTC_ERROR_INVALID_PROGRAM;
}

EIDOLON_EXPORT nvrtcResult
nvrtcGetProgramLog(nvrtcProgram program, char* log)
{
    if (!program || !log)
    {
        return program ? NVRTC_ERROR_INVALID_INPUT : NVRTC_ERROR_INVALID_PROGRAM;
    }
    std::memcpy(log, program->log.c_str(), program->log.size() + 1);
    return NVRTC_SUCCESS;
}
