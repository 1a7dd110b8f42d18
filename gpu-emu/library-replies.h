// Shared by the replacement libraries (cuBLAS, cuDNN and the math libraries): the answers of the
// calls that do work without a GPU (handles, descriptors, versions), in each library's own status
// type, and the handler of the generated stubs that warn once and return not-supported.
#pragma once

#include "core/diagnostics.h"

#include <library_types.h>

namespace eidolon::gpu
{

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

} // namespace eidolon::gpu
