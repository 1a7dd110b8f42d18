// CK(call): a CUDA runtime call in the ground-truth programs here; on an error, print where and
// which call, and exit (these run on a real GPU, alone: nothing to recover).
#ifndef EIDOLON_GPU_TRUTH_CUDA_CHECK_H
#define EIDOLON_GPU_TRUTH_CUDA_CHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                      \
    do                                                                                             \
    {                                                                                              \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess)                                                                     \
        {                                                                                          \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
