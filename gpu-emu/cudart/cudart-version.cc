// The one source file compiled separately for libcudart.so.12 and libcudart.so.13.
#include "runtime-common.h"

#ifndef EIDOLON_CUDART_VERSION
#error "EIDOLON_CUDART_VERSION must be defined (12080 or 13000)"
#endif

int
eidolon::gpu::rt::CudartVersion()
{
    return EIDOLON_CUDART_VERSION;
}
