// libFuzzer target: what eidolon-sim does with the messages of its peers (bridge/server: decoding,
// the checks of wire-limits.h, and the simulator core behind them), on the two-GPU test topology.
// Each input is a conversation (wire-conversation.h) delivered to a fresh endpoint, which then
// steps until the simulation settles. Error replies and a failed run are expected ends; a crash,
// an uncaught exception, a sanitizer report, a timeout or memory past -rss_limit_mb is a finding.
#include "sim-endpoint.h"
#include "wire-conversation.h"

#include "ns3/nstime.h"

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <sstream>

extern "C" int
LLVMFuzzerInitialize(int*, char***)
{
    ns3::Time::SetResolution(ns3::Time::PS);
    // Mutated strings are often not UTF-8; protobuf's parse error for each (the endpoint replies
    // with its own error) would bury libFuzzer's progress lines.
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    eidolon::sim::SimOptions options;
    options.topologyPath = EIDOLON_SOURCE_DIR "/test/bridge/two-gpus.yaml";
    options.watchdogSeconds = 0;
    options.graceSeconds = 1e9; // wall time never decides anything here
    std::ostringstream log;
    eidolon::bridge::SimEndpoint endpoint(options, "", log);
    for (const auto& [peer, bytes] : eidolon::fuzz::SplitConversation(data, size))
    {
        endpoint.Deliver(peer, bytes);
    }
    std::vector<zmq::pollitem_t> none;
    for (int i = 0; i < 4 && !endpoint.Simulation().Finished(); ++i)
    {
        endpoint.Step(std::chrono::milliseconds(0), none);
    }
    return 0;
}
