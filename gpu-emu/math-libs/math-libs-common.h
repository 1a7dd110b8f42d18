// Shared by the loadable replacements of cuSPARSE, cuSPARSELt, cuFFT, cuSOLVER and NVRTC: they
// exist so that a program (PyTorch) that links or loads them starts on a machine without a GPU.
// Handles, versions and error strings work; every computation is a generated stub that warns once
// and returns the library's not-supported status (gpu-emu/README.md "Math libraries").
#pragma once

#include "../core/diagnostics.h"

#include <library_types.h>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

namespace eidolon::gpu::mathlibs
{

// A handle of one of these libraries: the stream calls would run on.
struct LibraryHandle
{
    void* stream = nullptr;
};

// The answers of one library's working calls in its own status type: `kOk` on success, `kBad`
// for a null pointer where the call writes its result.
template<typename Status, Status kOk, Status kBad> struct Replies
{
    // Writes `value` through `out`.
    template<typename T, typename V> static Status Store(T* out, const V& value)
    {
        if (!out)
        {
            return kBad;
        }
        *out = value;
        return kOk;
    }

    // Sets one field of a handle or descriptor; `missing` when there is none.
    template<typename Object, typename Field, typename V>
    static Status SetField(Object* object, Field Object::*field, const V& value,
                           Status missing = kBad)
    {
        if (!object)
        {
            return missing;
        }
        object->*field = value;
        return kOk;
    }

    // A new default object (handle, descriptor, parameters) through `out`.
    template<typename T> static Status Create(T** out)
    {
        return Store(out, out ? new T() : nullptr);
    }

    // One part of the library's version, as cu*GetProperty answers it.
    static Status Property(libraryPropertyType type, int* value, int major, int minor, int patch)
    {
        return Store(value, type == MAJOR_VERSION ? major : type == MINOR_VERSION ? minor : patch);
    }

    // The generated stubs' handler: warns once naming `api`, returns `notSupported` (`name`).
    static int Unsupported(const char* api, Status notSupported, const char* name)
    {
        WarnUnsupportedOnce(api, name);
        return notSupported;
    }
};

} // namespace eidolon::gpu::mathlibs
