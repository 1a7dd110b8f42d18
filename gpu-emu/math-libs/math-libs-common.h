// Shared by the loadable replacements of cuSPARSE, cuSPARSELt, cuFFT, cuSOLVER and NVRTC: they
// exist so that a program (PyTorch) that links or loads them starts on a machine without a GPU.
// Handles, versions and error strings work; every computation is a generated stub that warns once
// and returns the library's not-supported status (gpu-emu/README.md "Math libraries").
#pragma once

#include "../library-replies.h"

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))
