// What the parts that serve a rank (the bridge client, bridge/client) may use of gpu-emu's core:
// who the rank is, its virtual host clock, and a few process services. The emulator implements it;
// with the records of device-op-sink.h it is all such a part sees of gpu-emu, and it never sees
// the emulator's lock: calls into a DeviceOpSink arrive with that lock held by the caller, and the
// sink keeps its own state under a lock of its own.
#pragma once

#include "host-clock.h"

#include <string>

namespace eidolon::gpu
{

// Who the rank process is, as its launcher said (Config), and what it emulates.
struct RankIdentity
{
    int worldRank = -1;
    int worldSize = -1;
    int localRank = -1;
    int node = -1;
    std::string name; // "" = rank<worldRank>, or pid<pid> without a rank
    std::string gpu;  // GPU spec name
    int numDevices = 0;
    std::string simEndpoint; // the eidolon-sim to join (ipc:// or tcp://)
    double connectTimeoutSeconds = 60;
};

class RankHost
{
public:
    virtual ~RankHost() = default;

    virtual const RankIdentity& Identity() const = 0;

    // The virtual host clock, read inside a DeviceOpSink call (its caller keeps the clock still).
    virtual Ns Now() const = 0;

    // The virtual host clock, read from a thread of the sink's own outside any sink call; the host
    // makes the read safe itself (briefly taking its lock). Never call it inside a sink call, nor
    // while holding a lock a sink call may wait for.
    virtual Ns NowFromOwnThread() const = 0;

    // Makes the calling thread (a sink's own) one of gpu-emu's: the clock reads it makes, ZeroMQ's
    // included, see real time, and its CPU time never moves the virtual clock.
    virtual void AdoptThread() const = 0;

    // Driving threads alive and not parked (HostClock::DrivingThreads); safe from any thread.
    virtual int DrivingThreads() const = 0;
    // Every driving thread is parked (HostClock::AllDrivingThreadsParked); safe from any thread.
    virtual bool AllDrivingThreadsParked() const = 0;

    // Prints "eidolon: <message>" on stderr.
    virtual void Warn(const std::string& message) const = 0;
};

} // namespace eidolon::gpu
