/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: reading cluster descriptions (YAML, SimAI/HPCC text).
 */
#ifndef EIDOLON_TOPOLOGY_READER_H
#define EIDOLON_TOPOLOGY_READER_H

#include "topology.h"

#include "ns3/ptr.h"

#include <map>
#include <string>

namespace ns3
{
namespace eidolon
{

/// Knobs of the readers; the defaults suit files in topologies/.
struct TopologyReadOptions
{
    /**
     * GPU spec directory to use whatever the file says. Empty: the file's gpu_specs (relative to
     * the file), else gpus/ beside the file, else $EIDOLON_GPU_SPECS, else fallbackGpuSpecDir.
     */
    std::string gpuSpecDir;
    /// Last resort for the spec directory (the `eidolon` tool passes the shipped topologies/gpus).
    std::string fallbackGpuSpecDir;
    /// GPU model for imported text files that do not say (HPCC) or name a type eidolon has no
    /// spec for (SimAI); empty: "H100-SXM5-80GB" for HPCC, an error for an unknown SimAI type.
    std::string defaultGpuModel;
};

/**
 * Reads a cluster description and validates it. YAML (doc/topology.md) unless the file is a
 * SimAI or HPCC topology text file: a .txt/.topo name, or a first line made of numbers.
 * Every problem throws TopologyError naming file, line and field.
 */
Ptr<Topology> ReadTopology(const std::string& path);
Ptr<Topology> ReadTopology(const std::string& path, const TopologyReadOptions& options);

/**
 * Reads YAML text; nameForMessages stands for the file name in messages and, when it is a path,
 * its directory is where a relative gpu_specs directory (default gpus/) is looked up.
 */
Ptr<Topology> ReadTopologyFromString(const std::string& text, const std::string& nameForMessages);
Ptr<Topology> ReadTopologyFromString(const std::string& text, const std::string& nameForMessages,
                                     const TopologyReadOptions& options);

/**
 * Imports a SimAI or HPCC topology text (doc/topology.md, "Importing SimAI and HPCC files").
 * SimAI's first line is "nodes gpus_per_server nvswitches switches links gpu_type"; HPCC's is
 * "nodes switches links". GPU specs are attached as for YAML files.
 */
Ptr<Topology> ImportTextTopology(const std::string& text, const std::string& nameForMessages,
                                 const TopologyReadOptions& options = TopologyReadOptions());

/// A SimAI/HPCC text file parsed into devices and links, before GPU specs are attached.
struct TextTopology
{
    Ptr<Topology> topology;
    std::string format;                     //!< "simai" or "hpcc"
    int modelLine = 0;                      //!< line that named the GPU type (0: none)
    std::string modelField;                 //!< field that named it ("gpu_type")
    std::map<std::string, int> deviceLines; //!< device -> first line that mentions it
};

/**
 * Parses a SimAI or HPCC topology text into a Topology without GPU specs and without
 * validation (ImportTextTopology does both). defaultGpuModel as in TopologyReadOptions.
 */
TextTopology ParseTextTopology(const std::string& text, const std::string& nameForMessages,
                               const std::string& defaultGpuModel);

// GPU spec files (doc/gpu-spec.md) are read by the spec library (ns3/gpu-spec.h):
// ReadGpuSpec(path), LoadGpuSpecs(dir) keyed by name, FindGpuSpec(specs, model); each throws
// TopologyError naming file, line and field.
using ::eidolon::spec::FindGpuSpec;
using ::eidolon::spec::LoadGpuSpecs;
using ::eidolon::spec::ReadGpuSpec;

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_TOPOLOGY_READER_H
