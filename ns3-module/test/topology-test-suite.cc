// Topology input: shipped files, generators, routes, bisection, GPU specs, importers and errors.
// Every expected number is worked out by hand in the comment beside it.
#include "eidolon-test-checks.h"

#include "ns3/abort.h"
#include "ns3/test.h"
#include "ns3/topology-generator.h"
#include "ns3/topology-reader.h"
#include "ns3/topology.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

using namespace ns3;
using namespace ns3::eidolon;
using namespace ::eidolon::test;
namespace fs = std::filesystem;

namespace
{
const std::string kTopologies = ShippedTopologies() + "/";
const std::string kGpuSpecs = ShippedTopologies() + "/gpus";

constexpr double GB = 1e9;

/// A scratch directory for bad files, removed at exit.
class Scratch
{
public:
    Scratch()
    {
        std::string tmpl = (fs::temp_directory_path() / "eidolon-topology-test-XXXXXX").string();
        char* dir = mkdtemp(tmpl.data());
        NS_ABORT_MSG_IF(dir == nullptr, "cannot create a scratch directory from " << tmpl);
        m_dir = dir;
    }

    ~Scratch()
    {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    /// Writes text to name inside the scratch directory and returns the path.
    std::string Write(const std::string& name, const std::string& text) const
    {
        fs::path p = m_dir / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
        return p.string();
    }

    const fs::path& Dir() const { return m_dir; }

private:
    fs::path m_dir;
};

Scratch&
Tmp()
{
    static Scratch s;
    return s;
}

/// Topology text with the shipped GPU specs, so that scratch files need no gpus/ beside them.
std::string
WithSpecs(const std::string& body)
{
    return "version: 1\ngpu_specs: " + kGpuSpecs + "\n" + body;
}

std::vector<std::string>
DevicesOnPath(const Topology& t, const std::vector<uint32_t>& path)
{
    std::vector<std::string> out;
    for (uint32_t ch : path)
    {
        out.push_back(t.GetDevice(t.ChannelTo(ch)).name);
    }
    return out;
}

uint32_t
CountKind(const Topology& t, DeviceKind kind, int32_t tier = -1)
{
    uint32_t n = 0;
    for (const Device& d : t.Devices())
    {
        n += d.kind == kind && (tier < 0 || d.tier == tier);
    }
    return n;
}

/// Sum of the per-direction bandwidth of links between two named devices' classes.
double
UplinkCapacity(const Topology& t, const std::string& leaf)
{
    uint32_t id = t.FindDevice(leaf);
    double total = 0;
    for (const Link& l : t.Links())
    {
        uint32_t other = l.a == id ? l.b : (l.b == id ? l.a : id);
        if (other != id && t.GetDevice(other).tier == 2)
        {
            total += l.bandwidth;
        }
    }
    return total;
}

/// Topology input: one TestCase per check, each check a member below.
class TopologyTestCase : public TestCase
{
public:
    /// One of the checks below.
    using Check = void (TopologyTestCase::*)();

    TopologyTestCase(const std::string& name, Check check)
        : TestCase(name)
        , m_check(check)
    {
    }

    void DefaultYaml();
    void DgxH100_1node();
    void DgxH100_4node();
    void DgxH100_128node();
    void DgxA100_16node();
    void IntraNodeOverNvswitch();
    void InterNodeSameRail();
    void EcmpSpreadsOverSpines();
    void CrossRailUsesBothSpines();
    void OversubscriptionHalvesUplinks();
    void OversubscriptionFromYaml();
    void ThreeTierPods();
    void SingleSwitchAndPresets();
    void TopOfRackWithoutRails();
    void PcieOnlyNode();
    void NicsSharedByGpus();
    void NvlinkBeforeASharedPcieSwitch();
    void FromString();
    void NetworkTransport();
    void MixedGeneratedAndExplicit();
    void ShippedSpecs();
    void UnknownModelListsKnown();
    void BadSpecFile();
    void UnknownKey();
    void UnknownTopLevelKey();
    void MissingField();
    void HostBridgeOnlyOnPcieSwitches();
    void GpuWithoutNode();
    void DanglingEndpoint();
    void UnreachableGpu();
    void UnreachableGeneratedNodes();
    void NonPositiveBandwidth();
    void SizesAndRatesOutOfBounds();
    void UnknownGpuModel();
    void WrongTypes();
    void DuplicateDeviceAndNoGpu();
    void NotYaml();
    void MissingSpecDirectory();
    void SpecDirectoryResolution();
    void Simai();
    void SimaiErrors();
    void Hpcc();

private:
    void DoRun() override { (this->*m_check)(); }

    /// The error a bad file raises; fails the test if there is none.
    std::string ErrorOf(const std::string& path,
                        const TopologyReadOptions& options = TopologyReadOptions());
    /// Checks that a message names file, 1-based line and field.
    void CheckNames(const std::string& message, const std::string& path, int line,
                    const std::string& field, const std::string& detail = "");

    Check m_check;
};
} // namespace

std::string
TopologyTestCase::ErrorOf(const std::string& path, const TopologyReadOptions& options)
{
    try
    {
        ReadTopology(path, options);
    }
    catch (const TopologyError& e)
    {
        return e.what();
    }
    NS_TEST_EXPECT_MSG_EQ(true, false, "no error for " + path);
    return "";
}

void
TopologyTestCase::CheckNames(const std::string& message, const std::string& path, int line,
                             const std::string& field, const std::string& detail)
{
    NS_TEST_EXPECT_MSG_NE(message.find(path + ":" + std::to_string(line) + ":"), std::string::npos,
                          "message: " << message);
    NS_TEST_EXPECT_MSG_NE(message.find(field), std::string::npos, "message: " << message);
    if (!detail.empty())
    {
        NS_TEST_EXPECT_MSG_NE(message.find(detail), std::string::npos, "message: " << message);
    }
}

// ---- shipped

void
TopologyTestCase::DefaultYaml()
{
    auto t = ReadTopology(kTopologies + "default.yaml");
    // 2 nodes x 8 GPUs; one NIC and one PCIe switch per GPU; 8 rail leaves + 2 spines.
    NS_TEST_EXPECT_MSG_EQ(t->name, "default", "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 16u, "");
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Nic), 16u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::PcieSwitch), 16u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::NvSwitch), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 1), 8u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 2), 2u, "");
    // Per node 8 x (gpu-nvswitch, gpu-pcie, pcie-nic, pcie-host) = 32, x2 = 64; 16 NIC-leaf;
    // 8 leaves x 2 spines = 16. 64 + 16 + 16 = 96.
    NS_TEST_EXPECT_MSG_EQ(t->Links().size(), 96u, "");
    // Node-major GPU numbering: GPU 9 is node 1's second GPU.
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(t->GpuDevice(9)).name, "node1/gpu1", "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(0).name, "H100-SXM5-80GB", "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(0).marketingName, "NVIDIA H100 80GB HBM3", "");

    TopologySummary s = t->Summarize();
    NS_TEST_EXPECT_MSG_EQ(s.gpus, 16u, "");
    NS_TEST_EXPECT_MSG_EQ(s.nics, 16u, "");
    NS_TEST_EXPECT_MSG_EQ(s.switches, 10u, "");
    NS_TEST_EXPECT_MSG_EQ(s.switchesByTier[1], 8u, "");
    NS_TEST_EXPECT_MSG_EQ(s.switchesByTier[2], 2u, "");
    NS_TEST_EXPECT_MSG_EQ(s.hosts, 2u, "");
    NS_TEST_EXPECT_MSG_EQ(s.gpuModels["H100-SXM5-80GB"], 16u, "");
    // Node 0 -> node 1: every path leaves node 0 through one of its 8 NICs at 400 Gb/s = 50 GB/s,
    // and each rail leaf joins NIC i of both nodes directly, so 8 x 50 GB/s = 400 GB/s.
    EIDOLON_TEST_EXPECT_CLOSE(s.bisectionBandwidth, 400 * GB, 1e-9, "");
}

void
TopologyTestCase::DgxH100_1node()
{
    auto t = ReadTopology(kTopologies + "dgx-h100-1node.yaml");
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 8u, "");
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Nic), 8u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(t->Links().size(), 32u, ""); // 8 x 4 links per GPU, no fabric
    // Single node: GPUs 0-3 vs 4-7, each GPU 450 GB/s into the NVSwitch: 4 x 450 = 1800 GB/s.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 1800 * GB, 1e-9, "");
}

void
TopologyTestCase::DgxH100_4node()
{
    auto t = ReadTopology(kTopologies + "dgx-h100-4node.yaml");
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 32u, ""); // 4 x 8
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 4u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Nic), 32u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 1), 8u, ""); // one leaf per rail
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 2), 4u, "");
    // Each NIC runs at 400 Gb/s.
    uint32_t nic = t->FindDevice("node2/nic5");
    uint32_t leaf = t->FindDevice("leaf0-rail5");
    bool found = false;
    for (const Link& l : t->Links())
    {
        if ((l.a == nic && l.b == leaf) || (l.a == leaf && l.b == nic))
        {
            found = true;
            NS_TEST_EXPECT_MSG_EQ(l.bandwidth, 50 * GB, "");
            NS_TEST_EXPECT_MSG_EQ((l.kind == LinkKind::Net), true, "");
        }
    }
    NS_TEST_EXPECT_MSG_EQ(found, true, "");
    // Nodes 0-1 vs 2-3: 16 NICs x 50 GB/s = 800 GB/s, and the 1:1 spines carry it.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 800 * GB, 1e-9, "");
}

void
TopologyTestCase::DgxH100_128node()
{
    auto t = ReadTopology(kTopologies + "dgx-h100-128node.yaml");
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 1024u, ""); // 128 x 8
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 128u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Nic), 1024u, "");
    // 128 nodes / 32 per scalable unit = 4 units x 8 rails = 32 leaves; 16 spines.
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 1), 32u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 2), 16u, "");
    // 128 x 32 node links + 1024 NIC-leaf + 32 x 16 leaf-spine = 4096 + 1024 + 512.
    NS_TEST_EXPECT_MSG_EQ(t->Links().size(), 5632u, "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(t->GpuDevice(1023)).name, "node127/gpu7", "");
    // GPUs by (node, local index): the ones named so, and none past a node's eight.
    NS_TEST_EXPECT_MSG_EQ(t->FindGpu(127, 7), int64_t(t->FindDevice("node127/gpu7")), "");
    NS_TEST_EXPECT_MSG_EQ(t->FindGpu(0, 0), int64_t(t->FindDevice("node0/gpu0")), "");
    NS_TEST_EXPECT_MSG_EQ(t->FindGpu(64, 3), int64_t(t->FindDevice("node64/gpu3")), "");
    NS_TEST_EXPECT_MSG_EQ(t->FindGpu(5, 8), int64_t(-1), "");
    NS_TEST_EXPECT_MSG_EQ(t->FindGpu(128, 0), int64_t(-1), "");
    NS_TEST_EXPECT_MSG_EQ(t->FindGpu(-1, 0), int64_t(-1), "");
    // 1:1: a leaf's uplinks equal its 32 x 50 GB/s of NIC ports.
    EIDOLON_TEST_EXPECT_CLOSE(UplinkCapacity(*t, "leaf2-rail4"), 1600 * GB, 1e-9, "");
    // Half the nodes (512 NICs x 50 GB/s) against the other half, non-blocking: 25.6 TB/s.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 25600 * GB, 1e-9, "");
}

void
TopologyTestCase::DgxA100_16node()
{
    auto t = ReadTopology(kTopologies + "dgx-a100-16node.yaml");
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 128u, ""); // 16 x 8
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 16u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Nic), 128u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 1), 8u, "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(0).name, "A100-SXM4-80GB", "");
    // NVLink3 300 GB/s per GPU per direction, HDR 200 Gb/s = 25 GB/s NICs.
    auto intra = t->Route(t->GpuDevice(0), t->GpuDevice(1));
    NS_TEST_EXPECT_MSG_EQ(t->PathBandwidth(intra), 300 * GB, "");
    auto inter = t->Route(t->GpuDevice(0), t->GpuDevice(8));
    NS_TEST_EXPECT_MSG_EQ(t->PathBandwidth(inter), 25 * GB, "");
    // 8 nodes x 8 NICs x 25 GB/s = 1600 GB/s across the halves.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 1600 * GB, 1e-9, "");
}

// ---- routes

void
TopologyTestCase::IntraNodeOverNvswitch()
{
    auto t = ReadTopology(kTopologies + "default.yaml");
    auto path = t->Route(t->GpuDevice(0), t->GpuDevice(5));
    NS_TEST_EXPECT_MSG_EQ(path.size(), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(t->ChannelFrom(path[0])).name, "node0/gpu0", "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(t->ChannelTo(path[0])).name, "node0/nvswitch", "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(t->ChannelTo(path[1])).name, "node0/gpu5", "");
    NS_TEST_EXPECT_MSG_EQ((t->ChannelKind(path[0]) == LinkKind::NvLink), true, "");
    NS_TEST_EXPECT_MSG_EQ(t->PathCount(t->GpuDevice(0), t->GpuDevice(5)), 1u, "");
    NS_TEST_EXPECT_MSG_EQ(t->PathLatencyNs(path), 500, ""); // 2 NVLink hops of 250 ns
}

void
TopologyTestCase::InterNodeSameRail()
{
    auto t = ReadTopology(kTopologies + "default.yaml");
    auto path = t->Route(t->FindDevice("node0/gpu3"), t->FindDevice("node1/gpu3"));
    std::vector<std::string> expected = {"node0/pcie3", "node0/nic3",  "leaf0-rail3",
                                         "node1/nic3",  "node1/pcie3", "node1/gpu3"};
    NS_TEST_EXPECT_MSG_EQ(DevicesOnPath(*t, path), expected, "");
    // The rail leaf is the only shortest way: no spine, no other NIC.
    NS_TEST_EXPECT_MSG_EQ(t->PathCount(t->FindDevice("node0/gpu3"), t->FindDevice("node1/gpu3")),
                          1u, "");
    // 250 (PCIe) + 250 (PCIe) + 200 (NIC-leaf) + 200 + 250 + 250 = 1400 ns.
    NS_TEST_EXPECT_MSG_EQ(t->PathLatencyNs(path), 1400, "");
    NS_TEST_EXPECT_MSG_EQ(t->PathBandwidth(path), 50 * GB, ""); // the 400 Gb/s NIC port
}

void
TopologyTestCase::EcmpSpreadsOverSpines()
{
    auto t = ReadTopology(kTopologies + "dgx-h100-128node.yaml");
    // Node 0 and node 127 sit in different scalable units: rail 0 leaf -> any of 16 spines ->
    // rail 0 leaf of unit 3.
    uint32_t src = t->FindDevice("node0/gpu0");
    uint32_t dst = t->FindDevice("node127/gpu0");
    NS_TEST_EXPECT_MSG_EQ(t->PathCount(src, dst), 16u, "");
    std::set<std::string> spines;
    for (uint64_t hash = 0; hash < 512; ++hash)
    {
        auto path = t->Route(src, dst, hash);
        NS_TEST_ASSERT_MSG_EQ(path.size(), 8u, ""); // pcie nic leaf spine leaf nic pcie gpu
        spines.insert(t->GetDevice(t->ChannelTo(path[3])).name);
    }
    NS_TEST_EXPECT_MSG_EQ(spines.size(), 16u, "");
    // Deterministic: the same hash gives the same path.
    NS_TEST_EXPECT_MSG_EQ(t->Route(src, dst, 42), t->Route(src, dst, 42), "");
}

void
TopologyTestCase::CrossRailUsesBothSpines()
{
    auto t = ReadTopology(kTopologies + "default.yaml");
    uint32_t src = t->FindDevice("node0/gpu0");
    uint32_t dst = t->FindDevice("node1/gpu1");
    NS_TEST_EXPECT_MSG_EQ(t->PathCount(src, dst), 2u, "");
    std::set<std::string> spines;
    for (uint64_t hash = 0; hash < 64; ++hash)
    {
        spines.insert(t->GetDevice(t->ChannelTo(t->Route(src, dst, hash)[3])).name);
    }
    NS_TEST_EXPECT_MSG_EQ(spines.size(), 2u, "");
}

// ---- generators

void
TopologyTestCase::OversubscriptionHalvesUplinks()
{
    FabricTemplate f = DefaultFabric();
    f.kind = FabricKind::TwoTier;
    f.nodesPerLeaf = 2;
    f.spines = 2;
    auto flat = GenerateCluster("flat", NodePreset("dgx-h100"), 4, f);
    f.oversubscription = 2;
    auto over = GenerateCluster("over", NodePreset("dgx-h100"), 4, f);
    // A leaf has 2 NICs x 50 GB/s below it: 100 GB/s up at 1:1, 50 GB/s at 2:1.
    EIDOLON_TEST_EXPECT_CLOSE(UplinkCapacity(*flat, "leaf0-rail0"), 100 * GB, 1e-9, "");
    EIDOLON_TEST_EXPECT_CLOSE(UplinkCapacity(*over, "leaf0-rail0"), 50 * GB, 1e-9, "");
    // Nodes 0-1 (unit 0) vs 2-3 (unit 1) cross the spines only: 8 leaves x 100 GB/s = 800 GB/s
    // at 1:1, half at 2:1. (Even/odd nodes share leaves and get 800 GB/s in both.)
    EIDOLON_TEST_EXPECT_CLOSE(flat->Summarize().bisectionBandwidth, 800 * GB, 1e-9, "");
    EIDOLON_TEST_EXPECT_CLOSE(over->Summarize().bisectionBandwidth, 400 * GB, 1e-9, "");
}

void
TopologyTestCase::OversubscriptionFromYaml()
{
    std::string path = Tmp().Write("over.yaml", WithSpecs(R"(name: over
generate:
  nodes: 4
  node: {type: dgx-h100}
  fabric: {type: two-tier, nodes_per_leaf: 2, spines: 2, oversubscription: "2:1"}
)"));
    auto t = ReadTopology(path);
    EIDOLON_TEST_EXPECT_CLOSE(UplinkCapacity(*t, "leaf1-rail7"), 50 * GB, 1e-9, "");
}

void
TopologyTestCase::ThreeTierPods()
{
    FabricTemplate f = DefaultFabric();
    f.kind = FabricKind::ThreeTier;
    f.nodesPerLeaf = 2;
    f.unitsPerPod = 2;
    f.spines = 2;
    f.cores = 2;
    auto t = GenerateCluster("pods", NodePreset("dgx-h100"), 8, f);
    // 8 nodes / 2 per unit = 4 units x 8 rails = 32 leaves; 2 pods x 2 spines; 2 cores.
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 1), 32u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 2), 4u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 3), 2u, "");
    // Node 0 (pod 0) to node 7 (pod 1) on one rail: leaf, pod spine, core, pod spine, leaf.
    auto path = t->Route(t->FindDevice("node0/gpu2"), t->FindDevice("node7/gpu2"));
    auto names = DevicesOnPath(*t, path);
    NS_TEST_ASSERT_MSG_EQ(names.size(), 10u, "");
    NS_TEST_EXPECT_MSG_EQ(names[2], "leaf0-rail2", "");
    NS_TEST_EXPECT_MSG_EQ(names[3].rfind("spine0-", 0), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(names[4].rfind("core", 0), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(names[5].rfind("spine1-", 0), 0u, "");
    NS_TEST_EXPECT_MSG_EQ(names[6], "leaf3-rail2", "");
    // 1:1 throughout: pod 0 (4 nodes x 8 x 50 GB/s) to pod 1 = 1600 GB/s.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 1600 * GB, 1e-9, "");
    // 2:1 at the spines halves the inter-pod capacity.
    f.spineOversubscription = 2;
    auto thin = GenerateCluster("pods", NodePreset("dgx-h100"), 8, f);
    EIDOLON_TEST_EXPECT_CLOSE(thin->Summarize().bisectionBandwidth, 800 * GB, 1e-9, "");
}

void
TopologyTestCase::SingleSwitchAndPresets()
{
    FabricTemplate f = DefaultFabric();
    f.kind = FabricKind::SingleSwitch;
    auto t = GenerateCluster("tiny", NodePreset("dgx-b200"), 2, f);
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch), 1u, "");
    // B200: NVLink5 900 GB/s per GPU per direction.
    auto path = t->Route(t->GpuDevice(0), t->GpuDevice(1));
    NS_TEST_EXPECT_MSG_EQ(t->PathBandwidth(path), 900 * GB, "");
    NS_TEST_EXPECT_MSG_EQ(NodePresetNames().size(), 4u, "");
    EIDOLON_TEST_EXPECT_THROW(NodePreset("dgx-z900"), TopologyError);
    try
    {
        NodePreset("dgx-z900");
    }
    catch (const TopologyError& e)
    {
        NS_TEST_EXPECT_MSG_NE(std::string(e.what()).find("dgx-h100"), std::string::npos, "");
    }
}

void
TopologyTestCase::TopOfRackWithoutRails()
{
    FabricTemplate f = DefaultFabric();
    f.railOptimized = false;
    f.nodesPerLeaf = 2;
    auto t = GenerateCluster("tor", NodePreset("dgx-h100"), 4, f);
    // Two leaves of 2 nodes x 8 NICs; default spines: one per leaf port, 16.
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 1), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Switch, 2), 16u, "");
    EIDOLON_TEST_EXPECT_CLOSE(UplinkCapacity(*t, "leaf1"), 800 * GB, 1e-9, "");
    // Any NIC pair under one leaf is one switch hop apart, rail or not.
    auto path = t->Route(t->FindDevice("node0/gpu0"), t->FindDevice("node1/gpu5"));
    std::vector<std::string> expected = {"node0/pcie0", "node0/nic0",  "leaf0",
                                         "node1/nic5",  "node1/pcie5", "node1/gpu5"};
    NS_TEST_EXPECT_MSG_EQ(DevicesOnPath(*t, path), expected, "");
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 800 * GB, 1e-9, "");
}

void
TopologyTestCase::PcieOnlyNode()
{
    NodeTemplate n = NodePreset("dgx-h100");
    n.nvswitch = false;
    n.gpus = 4;
    FabricTemplate f = DefaultFabric();
    f.kind = FabricKind::None;
    auto t = GenerateCluster("pcie", n, 1, f);
    // gpu0 -> pcie0 -> pcie-root -> pcie2 -> gpu2, all PCIe at 63 GB/s.
    auto path = t->Route(t->FindDevice("node0/gpu0"), t->FindDevice("node0/gpu2"));
    std::vector<std::string> expected = {"node0/pcie0", "node0/pcie-root", "node0/pcie2",
                                         "node0/gpu2"};
    NS_TEST_EXPECT_MSG_EQ(DevicesOnPath(*t, path), expected, "");
    NS_TEST_EXPECT_MSG_EQ(t->PathBandwidth(path), 63 * GB, "");
    // GPUs 0-1 vs 2-3 through the root complex: two 63 GB/s links = 126 GB/s.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 126 * GB, 1e-9, "");
}

// `nics: 2` on an 8-GPU node: GPUs 0-3 reach node0/nic0 through their own PCIe switch and
// node0/nic-switch0, GPUs 4-7 nic1 through nic-switch1. GPU-to-GPU traffic stays on NVLink (two
// hops; the PCIe way is four). Two nodes on a rail-optimized two-tier fabric meet through 2 NICs
// each: the bisection is 2 x 50 GB/s (400 Gb/s NICs). The generator's size estimate counts what
// it makes, and NICs that do not divide the GPUs are refused, naming the field.
void
TopologyTestCase::NicsSharedByGpus()
{
    std::string path = Tmp().Write("nics.yaml", WithSpecs(R"(name: nics
generate:
  nodes: 2
  node: {type: dgx-h100, nics: 2}
  fabric: {type: two-tier, rail_optimized: true}
)"));
    auto t = ReadTopology(path);
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::Nic), 4u, "");
    NS_TEST_EXPECT_MSG_EQ(CountKind(*t, DeviceKind::PcieSwitch), 20u, ""); // 8 + 2 a node
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 16u, "");
    // node0/gpu3 leaves through its group's NIC to node1/gpu3 on rail 0.
    auto route = t->Route(t->FindDevice("node0/gpu3"), t->FindDevice("node1/gpu3"));
    std::vector<std::string> expected = {"node0/pcie3", "node0/nic-switch0", "node0/nic0",
                                         "leaf0-rail0", "node1/nic0",        "node1/nic-switch0",
                                         "node1/pcie3", "node1/gpu3"};
    NS_TEST_EXPECT_MSG_EQ(DevicesOnPath(*t, route), expected, "");
    auto local = t->Route(t->FindDevice("node0/gpu1"), t->FindDevice("node0/gpu2"));
    std::vector<std::string> nvlink = {"node0/nvswitch", "node0/gpu2"};
    NS_TEST_EXPECT_MSG_EQ(DevicesOnPath(*t, local), nvlink, "");
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 100 * GB, 1e-9, "");
    NodeTemplate node = NodePreset("dgx-h100");
    node.nics = 2;
    FabricTemplate f = DefaultFabric();
    f.kind = FabricKind::TwoTier;
    f.railOptimized = true;
    const GeneratedSize size = GeneratedSizeOf(node, 2, f);
    NS_TEST_EXPECT_MSG_EQ(size.devices, uint64_t(t->Devices().size()), "");
    NS_TEST_EXPECT_MSG_EQ(size.links, uint64_t(t->Links().size()), "");
    std::string bad = Tmp().Write("nics3.yaml", WithSpecs(R"(name: nics
generate:
  nodes: 2
  node: {type: dgx-h100, nics: 3}
)"));
    CheckNames(ErrorOf(bad), bad, 6, "nics", "must divide gpus (8)");
}

// Two GPUs on one PCIe switch and one NVSwitch (as a DGX A100 pairs them): both ways between
// them are two hops, and every flow, whatever its ECMP hash, takes NVLink (450 GB/s), never the
// PCIe switch (63 GB/s).
void
TopologyTestCase::NvlinkBeforeASharedPcieSwitch()
{
    std::string path = Tmp().Write("shared-pcie.yaml", WithSpecs(R"(name: shared-pcie
gpu_model: H100-SXM5-80GB
devices:
  - {name: n0/gpu0, type: gpu, node: 0, index: 0}
  - {name: n0/gpu1, type: gpu, node: 0, index: 1}
  - {name: n0/pcie0, type: pcie-switch, node: 0}
  - {name: n0/nvswitch, type: nvswitch, node: 0}
links:
  - {a: n0/gpu0, b: n0/pcie0, bandwidth: 63GB/s, latency: 250ns}
  - {a: n0/gpu1, b: n0/pcie0, bandwidth: 63GB/s, latency: 250ns}
  - {a: n0/gpu0, b: n0/nvswitch, bandwidth: 450GB/s, latency: 250ns}
  - {a: n0/gpu1, b: n0/nvswitch, bandwidth: 450GB/s, latency: 250ns}
)"));
    auto t = ReadTopology(path);
    for (uint64_t hash = 0; hash < 64; ++hash)
    {
        auto route = t->Route(t->FindDevice("n0/gpu0"), t->FindDevice("n0/gpu1"), hash);
        std::vector<std::string> expected = {"n0/nvswitch", "n0/gpu1"};
        NS_TEST_EXPECT_MSG_EQ(DevicesOnPath(*t, route), expected, "hash " << hash);
    }
}

void
TopologyTestCase::FromString()
{
    // YAML text without a file; a relative gpu_specs would resolve beside the name given.
    auto t = ReadTopologyFromString(WithSpecs(R"(name: inline
generate:
  nodes: 1
  node: {type: dgx-h200}
)"),
                                    "inline.yaml");
    NS_TEST_EXPECT_MSG_EQ(t->name, "inline", "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(7).name, "H200-SXM-141GB", "");
    NS_TEST_EXPECT_MSG_EQ(t->source, "inline.yaml", "");
}

void
TopologyTestCase::NetworkTransport()
{
    const std::string cluster = R"(generate:
  nodes: 2
  node: {type: dgx-h100}
)";
    // Without the key: InfiniBand verbs with GPUDirect RDMA, nothing added.
    auto ib = ReadTopologyFromString(WithSpecs("name: ib\n" + cluster), "ib.yaml");
    NS_TEST_EXPECT_MSG_EQ(ib->transport.kind, "ib", "");
    NS_TEST_EXPECT_MSG_EQ(ib->transport.messageLatencyUs, 0.0, "");
    NS_TEST_EXPECT_MSG_EQ(ib->transport.bandwidthShare, 1.0, "");
    auto tcpxo = ReadTopologyFromString(WithSpecs("name: t\n" + cluster + R"(network_transport:
  kind: tcpxo
  message_latency: 48us
  bandwidth_share: 0.94
  source: a measured log
)"),
                                        "t.yaml");
    NS_TEST_EXPECT_MSG_EQ(tcpxo->transport.kind, "tcpxo", "");
    NS_TEST_EXPECT_MSG_EQ(tcpxo->transport.messageLatencyUs, 48.0, "");
    NS_TEST_EXPECT_MSG_EQ(tcpxo->transport.bandwidthShare, 0.94, "");
    // The proxy's LL read rate: the collective model's own unless the file gives one.
    NS_TEST_EXPECT_MSG_EQ(ib->transport.llProxyRate, 0.0, "");
    auto proxy = ReadTopologyFromString(WithSpecs("name: p\n" + cluster + R"(network_transport:
  kind: ib
  ll_proxy_rate: 2.5GB/s
)"),
                                        "p.yaml");
    NS_TEST_EXPECT_MSG_EQ(proxy->transport.llProxyRate, 2.5e9, "");
    // A stack with no default figure must state its own; a share above 1 is refused.
    std::string p = Tmp().Write("tcpx.yaml", WithSpecs("name: x\n" + cluster + R"(network_transport:
  kind: tcpx
  bandwidth_share: 0.9
)"));
    std::string error = ErrorOf(p);
    NS_TEST_EXPECT_MSG_NE(error.find("message_latency"), std::string::npos, error);
    NS_TEST_EXPECT_MSG_NE(error.find("no default"), std::string::npos, error);
    p = Tmp().Write("share.yaml", WithSpecs("name: x\n" + cluster + R"(network_transport:
  kind: roce
  bandwidth_share: 1.5
)"));
    error = ErrorOf(p);
    NS_TEST_EXPECT_MSG_NE(error.find("bandwidth_share"), std::string::npos, error);
    p = Tmp().Write("kind.yaml", WithSpecs("name: x\n" + cluster + R"(network_transport:
  kind: carrier-pigeon
)"));
    error = ErrorOf(p);
    NS_TEST_EXPECT_MSG_NE(error.find("carrier-pigeon"), std::string::npos, error);

    // In-network reduction: absent by default; `sharp:` with its figures; SHARPv1 refused.
    NS_TEST_EXPECT_MSG_EQ(ib->sharp.present, false, "");
    auto sharp = ReadTopologyFromString(WithSpecs("name: s\n" + cluster + R"(sharp:
  version: 3
  aggregation_bandwidth: 400Gbps
  source: Quantum-2 SHARPv3
)"),
                                        "s.yaml");
    NS_TEST_EXPECT_MSG_EQ(sharp->sharp.present, true, "");
    NS_TEST_EXPECT_MSG_EQ(sharp->sharp.version, 3, "");
    NS_TEST_EXPECT_MSG_EQ(sharp->sharp.aggregationBandwidth, 50e9, ""); // 400 Gb/s in bytes/s
    p = Tmp().Write("sharp1.yaml", WithSpecs("name: x\n" + cluster + R"(sharp:
  version: 1
)"));
    error = ErrorOf(p);
    NS_TEST_EXPECT_MSG_NE(error.find("version"), std::string::npos, error);
    NS_TEST_EXPECT_MSG_NE(error.find("SHARPv1"), std::string::npos, error);
}

void
TopologyTestCase::MixedGeneratedAndExplicit()
{
    // A storage host hung off leaf0-rail0 beside two generated nodes; explicit links may name
    // generated devices.
    std::string path = Tmp().Write("mixed.yaml", WithSpecs(R"(name: mixed
generate:
  nodes: 2
  node: {type: dgx-h100}
  fabric: {type: two-tier, nodes_per_leaf: 2, spines: 2}
devices:
  - {name: storage, type: host}
  - {name: node2/gpu0, type: gpu, node: 2, model: H200-SXM-141GB}
  - {name: node2/nic0, type: nic, node: 2, index: 0}
links:
  - {a: storage, b: leaf0-rail0, bandwidth: 200Gbps, latency: 300ns}
  - {a: node2/gpu0, b: node2/nic0, bandwidth: 63GB/s, latency: 250ns}
  - {a: node2/nic0, b: leaf0-rail0, bandwidth: 400Gbps, latency: 200ns, count: 2}
)"));
    auto t = ReadTopology(path);
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 17u, "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(16).name, "H200-SXM-141GB", "");
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 3u, "");
    // count: 2 makes two parallel links, so two equal next hops.
    NS_TEST_EXPECT_MSG_EQ(t->PathCount(t->GpuDevice(16), t->FindDevice("node0/gpu0")), 2u, "");
    // Inferred link kinds: gpu-nic is the network, host-leaf too.
    auto p = t->Route(t->GpuDevice(16), t->FindDevice("node2/nic0"));
    NS_TEST_EXPECT_MSG_EQ((t->ChannelKind(p[0]) == LinkKind::Net), true, "");
}

// ---- gpu_specs

void
TopologyTestCase::ShippedSpecs()
{
    auto specs = LoadGpuSpecs(kGpuSpecs);
    NS_TEST_EXPECT_MSG_EQ(specs.size(), 4u, "");
    const GpuSpec& h100 = FindGpuSpec(specs, "H100-SXM5-80GB");
    NS_TEST_EXPECT_MSG_EQ(h100.marketingName, "NVIDIA H100 80GB HBM3", "");
    NS_TEST_EXPECT_MSG_EQ(h100.computeCapabilityMajor, 9, "");
    NS_TEST_EXPECT_MSG_EQ(h100.computeCapabilityMinor, 0, "");
    NS_TEST_EXPECT_MSG_EQ(h100.smCount, 132, "");
    NS_TEST_EXPECT_MSG_EQ(h100.memoryBytes, 80ULL << 30, "");
    NS_TEST_EXPECT_MSG_LT(h100.memoryUsableBytes, h100.memoryBytes, "");
    NS_TEST_EXPECT_MSG_EQ(h100.hbmBandwidth, 3.35e12, "");
    NS_TEST_EXPECT_MSG_EQ(h100.l2CacheBytes, 50ULL << 20, "");
    NS_TEST_EXPECT_MSG_EQ(h100.sharedMemoryPerSmBytes, 228ULL << 10, "");
    NS_TEST_EXPECT_MSG_EQ(h100.nvlinkBandwidth, 450 * GB, "");
    NS_TEST_EXPECT_MSG_EQ(h100.nvlinkLinks, 18, "");
    NS_TEST_EXPECT_MSG_EQ(h100.pcieGeneration, 5, "");
    NS_TEST_EXPECT_MSG_EQ(h100.denseTflops.at("bf16"), 989, "");
    NS_TEST_EXPECT_MSG_EQ(h100.denseTflops.at("fp8"), 1979, "");
    NS_TEST_EXPECT_MSG_EQ(h100.sources.empty(), false, "");
    // HBM bandwidth agrees with clock x bus width: 2 x 2619 MHz x 640 bytes = 3.352 TB/s.
    EIDOLON_TEST_EXPECT_CLOSE(2 * h100.memoryClockMhz * 1e6 * h100.memoryBusWidthBits / 8,
                              h100.hbmBandwidth, 0.01, "");
    const GpuSpec& a100 = FindGpuSpec(specs, "A100-SXM4-80GB");
    NS_TEST_EXPECT_MSG_EQ(a100.denseTflops.count("fp8"), 0u, ""); // no FP8 on Ampere
    NS_TEST_EXPECT_MSG_EQ(a100.nvlinkBandwidth, 300 * GB, "");
    NS_TEST_EXPECT_MSG_EQ(FindGpuSpec(specs, "B200").nvlinkBandwidth, 900 * GB, "");
    NS_TEST_EXPECT_MSG_EQ(FindGpuSpec(specs, "H200-SXM-141GB").hbmBandwidth, 4.8e12, "");
    for (const auto& [name, s] : specs)
    {
        NS_TEST_EXPECT_MSG_GT(s.copyEngineEfficiency, 0.5, name);
        NS_TEST_EXPECT_MSG_GT(s.launchOverheadUs, 0, name);
    }
}

void
TopologyTestCase::UnknownModelListsKnown()
{
    auto specs = LoadGpuSpecs(kGpuSpecs);
    try
    {
        FindGpuSpec(specs, "X100");
        NS_TEST_ASSERT_MSG_EQ(true, false, "no error");
    }
    catch (const TopologyError& e)
    {
        std::string m = e.what();
        NS_TEST_EXPECT_MSG_NE(m.find("X100"), std::string::npos, "");
        for (const char* known : {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200"})
        {
            NS_TEST_EXPECT_MSG_NE(m.find(known), std::string::npos, "");
        }
    }
}

void
TopologyTestCase::BadSpecFile()
{
    std::string good;
    {
        std::ifstream in(kGpuSpecs + "/H100-SXM5-80GB.yaml");
        good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    // A missing field: drop sm_count (line 7 of the file is 'sm_count: 132').
    std::string noSm = good;
    noSm.replace(noSm.find("sm_count: 132\n"), 14, "");
    std::string p = Tmp().Write("specs-a/H100-SXM5-80GB.yaml", noSm);
    try
    {
        ReadGpuSpec(p);
        NS_TEST_ASSERT_MSG_EQ(true, false, "no error");
    }
    catch (const TopologyError& e)
    {
        std::string m = e.what();
        NS_TEST_EXPECT_MSG_NE(m.find(p + ":"), std::string::npos, m);
        NS_TEST_EXPECT_MSG_NE(m.find("field 'sm_count': missing"), std::string::npos, m);
    }
    // A wrong type, on its own line.
    std::string badType = good;
    badType.replace(badType.find("sm_count: 132"), 13, "sm_count: many");
    p = Tmp().Write("specs-b/H100-SXM5-80GB.yaml", badType);
    int line = 1 + static_cast<int>(std::count(badType.begin(),
                                               badType.begin() + badType.find("sm_count"), '\n'));
    try
    {
        ReadGpuSpec(p);
        NS_TEST_ASSERT_MSG_EQ(true, false, "no error");
    }
    catch (const TopologyError& e)
    {
        CheckNames(e.what(), p, line, "field 'sm_count'", "expected an integer");
    }
    // A name that does not match the file.
    p = Tmp().Write("specs-c/H100.yaml", good);
    EIDOLON_TEST_EXPECT_THROW(ReadGpuSpec(p), TopologyError);
}

// ---- bad_input

// Each case: the file text, the line and field the message must name.
void
TopologyTestCase::UnknownKey()
{
    std::string p = Tmp().Write("unknown-key.yaml", WithSpecs(R"(name: x
generate:
  nodes: 1
  node: {type: dgx-h100}
  fabirc: {type: none}
)"));
    CheckNames(ErrorOf(p), p, 7, "unknown key 'fabirc'", "allowed: nodes, node, fabric");
}

void
TopologyTestCase::UnknownTopLevelKey()
{
    std::string p = Tmp().Write("unknown-top.yaml", WithSpecs("nmae: x\n"));
    CheckNames(ErrorOf(p), p, 3, "unknown key 'nmae'");
}

void
TopologyTestCase::MissingField()
{
    std::string p = Tmp().Write("missing.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: g1, type: gpu, node: 0}
  - {name: nv, type: nvswitch, node: 0}
links:
  - {a: g0, b: nv, bandwidth: 450GB/s, latency: 250ns}
  - {a: g1, b: nv, latency: 250ns}
)"));
    CheckNames(ErrorOf(p), p, 10, "field 'bandwidth'", "missing");
}

// `host_bridge` marks a PCIe switch as the CPU's root complex; on anything else it is an error.
void
TopologyTestCase::HostBridgeOnlyOnPcieSwitches()
{
    std::string p = Tmp().Write("bridge.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: root, type: pcie-switch, node: 0, host_bridge: true}
  - {name: nic, type: nic, node: 0, host_bridge: true}
)"));
    CheckNames(ErrorOf(p), p, 7, "field 'host_bridge'", "only a pcie-switch");
}

void
TopologyTestCase::GpuWithoutNode()
{
    std::string p = Tmp().Write("no-node.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu}
)"));
    CheckNames(ErrorOf(p), p, 5, "field 'node'", "missing");
}

void
TopologyTestCase::DanglingEndpoint()
{
    std::string p = Tmp().Write("dangling.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: g1, type: gpu, node: 0}
  - {name: nv, type: nvswitch, node: 0}
links:
  - {a: g0, b: nv, bandwidth: 450GB/s, latency: 250ns}
  - {a: g1,
     b: nvswich,
     bandwidth: 450GB/s, latency: 250ns}
)"));
    CheckNames(ErrorOf(p), p, 11, "field 'b'", "no device named 'nvswich'");
}

void
TopologyTestCase::UnreachableGpu()
{
    // g1 only reaches a NIC that leads nowhere.
    std::string p = Tmp().Write("unreachable.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: nv, type: nvswitch, node: 0}
  - {name: g1, type: gpu, node: 1}
  - {name: n1, type: nic, node: 1}
links:
  - {a: g0, b: nv, bandwidth: 450GB/s, latency: 250ns}
  - {a: g1, b: n1, bandwidth: 50GB/s, latency: 250ns}
)"));
    CheckNames(ErrorOf(p), p, 7, "field 'links'", "GPU 'g1' cannot reach GPU 'g0'");
}

void
TopologyTestCase::UnreachableGeneratedNodes()
{
    // Two nodes and no fabric: node 1 cannot reach node 0; blame the generate block.
    std::string p = Tmp().Write("nofabric.yaml", WithSpecs(R"(generate:
  nodes: 2
  node: {type: dgx-h100}
  fabric: {type: none}
)"));
    CheckNames(ErrorOf(p), p, 4, "cannot reach", "node1/gpu0");
}

void
TopologyTestCase::NonPositiveBandwidth()
{
    std::string p = Tmp().Write("zero-bw.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: g1, type: gpu, node: 0}
links:
  - {a: g0, b: g1, latency: 250ns,
     bandwidth: 0Gbps}
)"));
    CheckNames(ErrorOf(p), p, 9, "field 'bandwidth'", "not a positive bandwidth");
    std::string q = Tmp().Write("neg-bw.yaml", WithSpecs(R"(generate:
  nodes: 1
  node: {type: dgx-h100, nvlink_bandwidth: -450GB/s}
)"));
    CheckNames(ErrorOf(q), q, 5, "field 'nvlink_bandwidth'", "not a positive bandwidth");
}

// Generator counts and link rates have documented limits (doc/topology.md, "Limits"), checked
// before anything is allocated. Before, `spines: 99999999` ran for minutes in gigabytes, and a
// 1e-30 GB/s link was accepted and the run then reported a deadlock.
void
TopologyTestCase::SizesAndRatesOutOfBounds()
{
    std::string p = Tmp().Write("spines.yaml", WithSpecs(R"(generate:
  nodes: 2
  node: {type: dgx-h100}
  fabric:
    spines: 99999999
)"));
    CheckNames(ErrorOf(p), p, 7, "field 'spines'", "99999999 is more than the 65536");
    // 65536 spines pass their own bound, but not the total: 8 nodes of 8 GPUs, one node per
    // leaf, rail-optimized: 8 units x 8 rails = 64 leaves, each linked to all 65536 spines
    // (4194304 links) + 8 x 8 NIC links + 8 nodes x 32 links inside a node = 4194624 links, over
    // the 4194304 allowed; devices: 8 x (host + NVSwitch + 8 x 3) + 64 + 65536 = 65808.
    std::string q = Tmp().Write("links.yaml", WithSpecs(R"(generate:
  nodes: 8
  node: {type: dgx-h100}
  fabric: {nodes_per_leaf: 1, spines: 65536}
)"));
    CheckNames(ErrorOf(q), q, 6, "field 'fabric'", "make 65808 devices and 4194624 links");
    std::string slow = Tmp().Write("slow.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: g1, type: gpu, node: 0}
links:
  - {a: g0, b: g1, latency: 250ns,
     bandwidth: 1e-30GB/s}
)"));
    CheckNames(ErrorOf(slow), slow, 9, "field 'bandwidth'", "outside what a link can be");
    std::string far = Tmp().Write("far.yaml", WithSpecs(R"(generate:
  nodes: 1
  node: {type: dgx-h100, nvlink_latency: 2s}
)"));
    CheckNames(ErrorOf(far), far, 5, "field 'nvlink_latency'", "outside what a link can be");
    // An imported file's header is bounded before anything is sized by it.
    TopologyReadOptions o;
    o.gpuSpecDir = kGpuSpecs;
    std::string huge = Tmp().Write("simai/huge.txt", "1000000000000 8 1 1 1 H100\n0 1\n");
    CheckNames(ErrorOf(huge, o), huge, 1, "field 'node_num'", "must be at most 2097152");
}

void
TopologyTestCase::UnknownGpuModel()
{
    std::string p = Tmp().Write("model.yaml", WithSpecs(R"(devices:
  - {name: g0, type: gpu, node: 0, model: H100-SXM5-80GB}
  - {name: g1, type: gpu, node: 0,
     model: H1000}
  - {name: nv, type: nvswitch, node: 0}
)"));
    std::string m = ErrorOf(p);
    CheckNames(m, p, 6, "field 'model'", "unknown GPU model 'H1000'");
    NS_TEST_EXPECT_MSG_NE(m.find("known: A100-SXM4-80GB, B200, H100-SXM5-80GB, H200-SXM-141GB"),
                          std::string::npos, "");
    std::string q = Tmp().Write("model-gen.yaml", WithSpecs(R"(generate:
  nodes: 1
  node:
    type: dgx-h100
    gpu_model: H100-PCIe
)"));
    CheckNames(ErrorOf(q), q, 7, "field 'gpu_model'", "unknown GPU model 'H100-PCIe'");
}

void
TopologyTestCase::WrongTypes()
{
    std::string p = Tmp().Write("type-node.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: zero}
)"));
    CheckNames(ErrorOf(p), p, 5, "field 'node'", "expected an integer, got 'zero'");
    std::string q = Tmp().Write("type-nodes.yaml", WithSpecs(R"(generate:
  nodes: [1, 2]
  node: {type: dgx-h100}
)"));
    CheckNames(ErrorOf(q), q, 4, "field 'nodes'", "expected a single value");
    std::string r = Tmp().Write("type-devices.yaml", WithSpecs("devices: {name: g0}\n"));
    CheckNames(ErrorOf(r), r, 3, "field 'devices'", "expected a list");
    std::string s = Tmp().Write("type-kind.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: tpu, node: 0}
)"));
    CheckNames(ErrorOf(s), s, 5, "field 'type'", "unknown device type 'tpu'");
    std::string t = Tmp().Write("type-count.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: g0, type: gpu, node: 0}
  - {name: g1, type: gpu, node: 0}
links:
  - {a: g0, b: g1, bandwidth: 1GB/s, latency: 1us, count: 1.5}
)"));
    CheckNames(ErrorOf(t), t, 8, "field 'count'", "expected an integer");
    std::string u = Tmp().Write("type-fabric.yaml", WithSpecs(R"(generate:
  nodes: 2
  node: {type: dgx-h100}
  fabric: {type: dragonfly}
)"));
    CheckNames(ErrorOf(u), u, 6, "field 'type'", "unknown fabric type 'dragonfly'");
    std::string w = Tmp().Write("type-preset.yaml", WithSpecs(R"(generate:
  nodes: 1
  node: {type: dgx-z100}
)"));
    CheckNames(ErrorOf(w), w, 5, "field 'type'", "unknown node type 'dgx-z100'");
    std::string v = Tmp().Write("type-version.yaml", "version: 2\n");
    CheckNames(ErrorOf(v), v, 1, "field 'version'");
}

void
TopologyTestCase::DuplicateDeviceAndNoGpu()
{
    std::string p = Tmp().Write("dup.yaml", WithSpecs(R"(generate:
  nodes: 1
  node: {type: dgx-h100}
devices:
  - {name: node0/gpu0, type: gpu, node: 0}
)"));
    CheckNames(ErrorOf(p), p, 7, "field 'name'", "duplicate device name 'node0/gpu0'");
    std::string r = Tmp().Write("dup-index.yaml", WithSpecs(R"(gpu_model: H100-SXM5-80GB
devices:
  - {name: a, type: gpu, node: 0, index: 0}
  - {name: b, type: gpu, node: 0, index: 0}
)"));
    CheckNames(ErrorOf(r), r, 6, "field 'index'", "GPU 0 of node 0 is already 'a'");
    std::string q = Tmp().Write("nogpu.yaml", WithSpecs(R"(devices:
  - {name: sw, type: switch}
)"));
    CheckNames(ErrorOf(q), q, 1, "field 'devices'", "no GPU");
}

void
TopologyTestCase::NotYaml()
{
    std::string p = Tmp().Write("broken.yaml", "version: 1\nname: [oops\n");
    std::string m = ErrorOf(p);
    NS_TEST_EXPECT_MSG_NE(m.find(p + ":"), std::string::npos, "");
    NS_TEST_EXPECT_MSG_NE(m.find("not valid YAML"), std::string::npos, "");
    NS_TEST_EXPECT_MSG_NE(ErrorOf(Tmp().Dir().string() + "/no-such-file.yaml").find("cannot open"),
                          std::string::npos, "");
}

void
TopologyTestCase::MissingSpecDirectory()
{
    std::string p = Tmp().Write("nospecs.yaml", R"(version: 1
gpu_specs: does-not-exist
generate:
  nodes: 1
  node: {type: dgx-h100}
)");
    CheckNames(ErrorOf(p), p, 2, "field 'gpu_specs'", "does not exist");
}

void
TopologyTestCase::SpecDirectoryResolution()
{
    const std::string body = "version: 1\ngenerate:\n  nodes: 1\n  node: {type: dgx-a100}\n";
    // No gpu_specs, no gpus/ beside, no environment, no fallback: an error on the first line.
    unsetenv("EIDOLON_GPU_SPECS");
    std::string p = Tmp().Write("resolve/alone/t.yaml", body);
    CheckNames(ErrorOf(p), p, 1, "field 'gpu_specs'", "no GPU spec directory");
    // $EIDOLON_GPU_SPECS is used when there is no gpus/ beside the file.
    setenv("EIDOLON_GPU_SPECS", kGpuSpecs.c_str(), 1);
    NS_TEST_EXPECT_MSG_EQ(ReadTopology(p)->GpuSpecOf(0).name, "A100-SXM4-80GB", "");
    // A gpus/ beside the file wins over the environment: here it knows the H100 only.
    fs::create_directories(Tmp().Dir() / "resolve/beside/gpus");
    fs::copy_file(kGpuSpecs + "/H100-SXM5-80GB.yaml",
                  Tmp().Dir() / "resolve/beside/gpus/H100-SXM5-80GB.yaml");
    std::string q = Tmp().Write("resolve/beside/t.yaml", body);
    CheckNames(ErrorOf(q), q, 4, "field 'type'",
               "unknown GPU model 'A100-SXM4-80GB' (known: H100-SXM5-80GB)");
    unsetenv("EIDOLON_GPU_SPECS");
    // The caller's fallback is the last resort.
    TopologyReadOptions o;
    o.fallbackGpuSpecDir = kGpuSpecs;
    NS_TEST_EXPECT_MSG_EQ(ReadTopology(p, o)->GpuCount(), 8u, "");
}

// ---- importers

// Two servers x 2 GPUs (ids 0-3), one NVSwitch per server (4, 5), two rail switches (6, 7) and
// one spine (8), written the way SimAI's generators write it (NVSwitch ids first on line 2).
const char* kSimAi = R"(9 2 2 3 10 H100
4 5 6 7 8
0 4 2400Gbps 0.000025ms 0
1 4 2400Gbps 0.000025ms 0
2 5 2400Gbps 0.000025ms 0
3 5 2400Gbps 0.000025ms 0
0 6 400Gbps 0.0005ms 0
1 7 400Gbps 0.0005ms 0
2 6 400Gbps 0.0005ms 0
3 7 400Gbps 0.0005ms 0
6 8 800Gbps 0.0005ms 0
7 8 800Gbps 0.0005ms 0
)";

void
TopologyTestCase::Simai()
{
    std::string p = Tmp().Write("simai/rail.txt", kSimAi);
    TopologyReadOptions o;
    o.gpuSpecDir = kGpuSpecs;
    auto t = ReadTopology(p, o);
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 4u, "");
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(2).name, "node1/gpu0", ""); // device ids are the file's ids
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(4).name, "node0/nvswitch0", "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(5).name, "node1/nvswitch0", "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(6).tier, 1, "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(8).tier, 2, "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(0).name, "H100-SXM5-80GB", "");
    NS_TEST_EXPECT_MSG_EQ(t->Links().size(), 10u, "");
    NS_TEST_EXPECT_MSG_EQ((t->Links()[0].kind == LinkKind::NvLink), true, "");
    NS_TEST_EXPECT_MSG_EQ(t->Links()[0].bandwidth, 300 * GB, ""); // 2400 Gb/s
    NS_TEST_EXPECT_MSG_EQ(t->Links()[0].latencyNs, 25, "");       // 0.000025 ms
    NS_TEST_EXPECT_MSG_EQ((t->Links()[4].kind == LinkKind::Net), true, "");
    // GPU 0 -> GPU 1 over the NVSwitch; GPU 0 -> GPU 2 over rail switch 6.
    NS_TEST_EXPECT_MSG_EQ(t->Route(0, 1).size(), 2u, "");
    auto rail = t->Route(0, 2);
    NS_TEST_EXPECT_MSG_EQ(rail.size(), 2u, "");
    NS_TEST_EXPECT_MSG_EQ(t->ChannelTo(rail[0]), 6u, "");
    // Server 0 -> server 1: two 400 Gb/s GPU uplinks = 100 GB/s.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 100 * GB, 1e-9, "");

    // Content sniffing: the same file without an extension is still a SimAI file.
    std::string bare = Tmp().Write("simai/Rail_Opti_4g", kSimAi);
    NS_TEST_EXPECT_MSG_EQ(ReadTopology(bare, o)->GpuCount(), 4u, "");
}

void
TopologyTestCase::SimaiErrors()
{
    TopologyReadOptions o;
    o.gpuSpecDir = kGpuSpecs;
    std::string text = kSimAi;
    // An unknown GPU type names line 1, gpu_type and the known models.
    std::string h20 = text;
    h20.replace(h20.find("H100"), 4, "H20");
    std::string p = Tmp().Write("simai/h20.txt", h20);
    std::string m = ErrorOf(p, o);
    CheckNames(m, p, 1, "field 'gpu_type'", "unknown GPU model 'H20'");
    NS_TEST_EXPECT_MSG_NE(m.find("H100-SXM5-80GB"), std::string::npos, "");
    // ... unless a default model is given.
    o.defaultGpuModel = "H100-SXM5-80GB";
    NS_TEST_EXPECT_MSG_EQ(ReadTopology(p, o)->GpuCount(), 4u, "");
    o.defaultGpuModel.clear();
    // A link to a node that does not exist.
    std::string dangling = text;
    dangling.replace(dangling.find("7 8 800Gbps"), 3, "7 9");
    p = Tmp().Write("simai/dangling.txt", dangling);
    CheckNames(ErrorOf(p, o), p, 12, "field 'dst'", "node 9 does not exist");
    // Fewer links than announced.
    std::string shortText = text.substr(0, text.find("7 8 800Gbps"));
    p = Tmp().Write("simai/short.txt", shortText);
    CheckNames(ErrorOf(p, o), p, 1, "field 'link_num'", "announces 10 links");
    // A bad rate.
    std::string rate = text;
    rate.replace(rate.find("400Gbps 0.0005ms"), 7, "fast"); // the first GPU-switch link
    p = Tmp().Write("simai/rate.txt", rate);
    CheckNames(ErrorOf(p, o), p, 7, "field 'rate'", "not a bandwidth: 'fast'");
}

void
TopologyTestCase::Hpcc()
{
    // Three hosts on one switch (id 3), HPCC's own header.
    std::string p = Tmp().Write("hpcc/topology.txt", R"(4 1 3
3
0 3 100Gbps 0.001ms 0
1 3 100Gbps 0.001ms 0
2 3 100Gbps 0.001ms 0
)");
    TopologyReadOptions o;
    o.gpuSpecDir = kGpuSpecs;
    auto t = ReadTopology(p, o);
    NS_TEST_EXPECT_MSG_EQ(t->GpuCount(), 3u, "");
    NS_TEST_EXPECT_MSG_EQ(t->NodeCount(), 3u, ""); // each host is a one-GPU node
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(2).name, "node2/gpu0", "");
    NS_TEST_EXPECT_MSG_EQ(t->GetDevice(3).tier, 1, "");
    NS_TEST_EXPECT_MSG_EQ(t->GpuSpecOf(0).name, "H100-SXM5-80GB", "");
    NS_TEST_EXPECT_MSG_EQ(t->Links()[0].bandwidth, 12.5 * GB, "");
    NS_TEST_EXPECT_MSG_EQ(t->Links()[0].latencyNs, 1000, "");
    // Node 0 against nodes 1-2 (and nodes 0,2 against 1): one 12.5 GB/s host link.
    EIDOLON_TEST_EXPECT_CLOSE(t->Summarize().bisectionBandwidth, 12.5 * GB, 1e-9, "");
}

namespace
{
class TopologyTestSuite : public TestSuite
{
public:
    TopologyTestSuite()
        : TestSuite("eidolon-topology", UNIT)
    {
        const std::pair<const char*, TopologyTestCase::Check> checks[] = {
            {"shipped.default_yaml", &TopologyTestCase::DefaultYaml},
            {"shipped.dgx_h100_1node", &TopologyTestCase::DgxH100_1node},
            {"shipped.dgx_h100_4node", &TopologyTestCase::DgxH100_4node},
            {"shipped.dgx_h100_128node", &TopologyTestCase::DgxH100_128node},
            {"shipped.dgx_a100_16node", &TopologyTestCase::DgxA100_16node},
            {"routes.intra_node_over_nvswitch", &TopologyTestCase::IntraNodeOverNvswitch},
            {"routes.inter_node_same_rail", &TopologyTestCase::InterNodeSameRail},
            {"routes.ecmp_spreads_over_spines", &TopologyTestCase::EcmpSpreadsOverSpines},
            {"routes.cross_rail_uses_both_spines", &TopologyTestCase::CrossRailUsesBothSpines},
            {"generators.oversubscription_halves_uplinks",
             &TopologyTestCase::OversubscriptionHalvesUplinks},
            {"generators.oversubscription_from_yaml", &TopologyTestCase::OversubscriptionFromYaml},
            {"generators.three_tier_pods", &TopologyTestCase::ThreeTierPods},
            {"generators.single_switch_and_presets", &TopologyTestCase::SingleSwitchAndPresets},
            {"generators.top_of_rack_without_rails", &TopologyTestCase::TopOfRackWithoutRails},
            {"generators.pcie_only_node", &TopologyTestCase::PcieOnlyNode},
            {"generators.nics_shared_by_gpus", &TopologyTestCase::NicsSharedByGpus},
            {"routes.nvlink_before_a_shared_pcie_switch",
             &TopologyTestCase::NvlinkBeforeASharedPcieSwitch},
            {"generators.from_string", &TopologyTestCase::FromString},
            {"generators.network_transport", &TopologyTestCase::NetworkTransport},
            {"generators.mixed_generated_and_explicit",
             &TopologyTestCase::MixedGeneratedAndExplicit},
            {"gpu_specs.shipped_specs", &TopologyTestCase::ShippedSpecs},
            {"gpu_specs.unknown_model_lists_known", &TopologyTestCase::UnknownModelListsKnown},
            {"gpu_specs.bad_spec_file", &TopologyTestCase::BadSpecFile},
            {"bad_input.unknown_key", &TopologyTestCase::UnknownKey},
            {"bad_input.unknown_top_level_key", &TopologyTestCase::UnknownTopLevelKey},
            {"bad_input.missing_field", &TopologyTestCase::MissingField},
            {"bad_input.host_bridge_only_on_pcie_switches",
             &TopologyTestCase::HostBridgeOnlyOnPcieSwitches},
            {"bad_input.gpu_without_node", &TopologyTestCase::GpuWithoutNode},
            {"bad_input.dangling_endpoint", &TopologyTestCase::DanglingEndpoint},
            {"bad_input.unreachable_gpu", &TopologyTestCase::UnreachableGpu},
            {"bad_input.unreachable_generated_nodes", &TopologyTestCase::UnreachableGeneratedNodes},
            {"bad_input.non_positive_bandwidth", &TopologyTestCase::NonPositiveBandwidth},
            {"bad_input.sizes_and_rates_out_of_bounds",
             &TopologyTestCase::SizesAndRatesOutOfBounds},
            {"bad_input.unknown_gpu_model", &TopologyTestCase::UnknownGpuModel},
            {"bad_input.wrong_types", &TopologyTestCase::WrongTypes},
            {"bad_input.duplicate_device_and_no_gpu", &TopologyTestCase::DuplicateDeviceAndNoGpu},
            {"bad_input.not_yaml", &TopologyTestCase::NotYaml},
            {"bad_input.missing_spec_directory", &TopologyTestCase::MissingSpecDirectory},
            {"bad_input.spec_directory_resolution", &TopologyTestCase::SpecDirectoryResolution},
            {"importers.simai", &TopologyTestCase::Simai},
            {"importers.simai_errors", &TopologyTestCase::SimaiErrors},
            {"importers.hpcc", &TopologyTestCase::Hpcc},
        };
        for (const auto& [name, check] : checks)
        {
            AddTestCase(new TopologyTestCase(name, check), TestCase::QUICK);
        }
    }
};

TopologyTestSuite g_topologyTestSuite;
} // namespace
