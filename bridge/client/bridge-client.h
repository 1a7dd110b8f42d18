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
struct Config;
} // namespace eidolon::gpu

namespace eidolon::bridge
{

// Joins the simulator at `config.simEndpoint` (ipc:// or tcp://): says Hello (who the process is,
// from `config`) and waits for the Welcome. Null with `error` set when the simulator refuses the
// process or does not answer within `config.simConnectTimeoutSeconds`.
std::unique_ptr<gpu::DeviceOpSink> Connect(const gpu::Config& config, const std::string& gpu,
                                           int numDevices, const gpu::HostClock& clock,
                                           std::mutex& emulatorLock, std::string* error);

} // namespace eidolon::bridge
