// The rank side of the bridge: a DeviceOpSink that joins eidolon-sim over ZeroMQ (a DEALER per
// thread of the process), sends the process's device records in batches, and blocks a thread only
// to learn a time that depends on other ranks.
#pragma once

#include "device-op-sink.h"

#include <memory>
#include <mutex>
#include <string>

namespace eidolon::gpu
{
class HostClock;
} // namespace eidolon::gpu

namespace eidolon::bridge
{

// Joins the simulator at `endpoint` (ipc:// or tcp://): says Hello and waits for the Welcome.
// Null with `error` set when the simulator refuses the process or does not answer in time
// (EIDOLON_SIM_CONNECT_TIMEOUT seconds, default 60).
std::unique_ptr<gpu::DeviceOpSink> Connect(const std::string& endpoint, const std::string& gpu,
                                           int numDevices, const gpu::HostClock& clock,
                                           std::mutex& emulatorLock, std::string* error);

} // namespace eidolon::bridge
