// libFuzzer target: the SimAI/HPCC text importer (ns3-module/model/topology-import.cc). Any
// input must end in a topology or a TopologyError naming line and field; anything else is a
// finding.
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
        ns3::eidolon::ImportTextTopology(std::string(reinterpret_cast<const char*>(data), size),
                                         "fuzz.txt", options);
    }
    catch (const ns3::eidolon::TopologyError&)
    {
        // the expected end of a bad input
    }
    return 0;
}
