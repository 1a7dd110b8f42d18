// libFuzzer target: the YAML topology reader (ns3-module/model/topology-reader.cc). Any input
// must end in a topology or a TopologyError (file:line: field ...); anything else (another
// exception, a crash, a sanitizer report, a timeout, memory past -rss_limit_mb) is a finding.
#include "ns3/topology-reader.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    ns3::eidolon::TopologyReadOptions options;
    options.gpuSpecDir = EIDOLON_SOURCE_DIR "/topologies/gpus";
    try
    {
        ns3::eidolon::ReadTopologyFromString(std::string(reinterpret_cast<const char*>(data), size),
                                             "fuzz.yaml", options);
    }
    catch (const ns3::eidolon::TopologyError&)
    {
        // the expected end of a bad input
    }
    return 0;
}
