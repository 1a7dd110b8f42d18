// The rank side of the bridge: a DeviceOpSink that joins eidolon-sim over ZeroMQ (a DEALER per
// thread of the process), sends the process's device records in batches, and blocks a thread only
// to learn a time that depends on other ranks. It sees of gpu-emu only the narrow interface of
// rank-host.h (identity, clock, services) and the records of device-op-sink.h.
#pragma once

#include "device-op-sink.h"
#include "rank-host.h"

#include <memory>
#include <string>

namespace eidolon::bridge
{

// Joins the simulator at `host.Identity().simEndpoint`: says Hello (who the process is) and waits
// for the Welcome. Null with `error` set when the simulator refuses the process or does not answer
// within the identity's connect timeout. Null with `error` empty and `helperOf` set to a joined
// process's name when the simulator takes this process for that one's helper (a subprocess with
// its world rank, such as torch.compile's workers): it is not a rank and runs on its own.
// `host` must outlive the sink.
std::unique_ptr<gpu::DeviceOpSink> Connect(const gpu::RankHost& host, std::string* error,
                                           std::string* helperOf = nullptr);

} // namespace eidolon::bridge
