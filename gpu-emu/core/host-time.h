// Sets a process's host clock up from its settings (gpu-emu/README.md "Host time"): the GPU
// server's host description, the host-time mode, and for the measuring modes the calibrated speed
// of the target host CPU against this machine.
#pragma once

#include "config.h"
#include "host-clock.h"

namespace eidolon::gpu
{

// Loads the host description (throws std::runtime_error when it cannot: the program then sees no
// GPU) and sets `clock`'s model. A mode that cannot run here (instructions without a PMU or without
// a calibrated rate) falls back to `calls` with a warning on stderr.
void SetUpHostTime(const Config& config, HostClock& clock);

} // namespace eidolon::gpu
