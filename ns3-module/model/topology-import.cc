/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * Importer for the plain-text topology files of HPCC (High-Precision-Congestion-Control's ns-3
 * simulations) and of SimAI, which extends HPCC's header with GPU and NVSwitch information.
 *
 *   HPCC:   node_num switch_num link_num
 *           <switch ids>
 *           src dst rate delay error_rate        (link_num lines, e.g. "0 5 100Gbps 0.001ms 0")
 *   SimAI:  node_num gpus_per_server nvswitch_num switch_num link_num gpu_type [more...]
 *           <nvswitch ids> <switch ids>          (NVSwitches first, as SimAI's generators write)
 *           src dst rate delay error_rate
 *
 * Node ids run over every box (0..node_num-1). Ids not listed as switches are endpoints: GPUs in
 * SimAI (the GPU's NIC is folded into the GPU there), hosts in HPCC, which eidolon models as
 * one-GPU nodes because its endpoints are GPUs.
 */
#include "topology-reader.h"

#include "ns3/log.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <set>
#include <sstream>

namespace ns3
{
namespace eidolon
{

NS_LOG_COMPONENT_DEFINE("EidolonTopologyImport");

namespace
{
constexpr const char* kDefaultHpccGpu = "H100-SXM5-80GB";
/// What an imported file may hold (doc/topology.md, "Limits"), checked before anything is sized
/// by the header: as many boxes and links as a generated cluster, links of 1 Mb/s to 1 Pb/s and
/// at most 1 s.
constexpr int64_t kMaxImportedNodes = int64_t(1) << 21;
constexpr int64_t kMaxImportedLinks = int64_t(1) << 22;
constexpr int64_t kMaxGpusPerServer = 1024;
constexpr double kMinLinkBandwidth = 1e6 / 8;  // bytes/s
constexpr double kMaxLinkBandwidth = 1e15 / 8; // bytes/s
constexpr int64_t kMaxLinkLatencyNs = 1000000000;

struct Token
{
    std::string text;
    int line;
};

/// SimAI's gpu_type values mapped to eidolon's spec names. H800 has the H100 SXM5's compute; its
/// narrower NVLink comes from the file's own link rates, which is where the importer takes them.
std::string
SimAiModel(const std::string& type)
{
    static const std::map<std::string, std::string> models = {
        {"A100", "A100-SXM4-80GB"}, {"H100", "H100-SXM5-80GB"}, {"H800", "H100-SXM5-80GB"},
        {"H200", "H200-SXM-141GB"}, {"B200", "B200"},
    };
    auto it = models.find(type);
    return it != models.end() ? it->second : std::string();
}

class TextParser
{
public:
    TextParser(const std::string& text, const std::string& file)
        : m_file(file)
    {
        std::istringstream in(text);
        std::string line;
        int n = 0;
        while (std::getline(in, line))
        {
            ++n;
            line = line.substr(0, line.find('#'));
            std::istringstream words(line);
            std::string w;
            std::vector<Token> lineTokens;
            while (words >> w)
            {
                lineTokens.push_back({w, n});
            }
            if (!lineTokens.empty())
            {
                m_lines.push_back(lineTokens);
            }
        }
    }

    [[noreturn]] void Fail(int line, const std::string& field, const std::string& message) const
    {
        throw TopologyError(m_file + ":" + std::to_string(line) + ": field '" + field +
                            "': " + message);
    }

    int64_t Integer(const Token& t, const std::string& field, int64_t min, int64_t max) const
    {
        const int64_t v = Integer(t, field, min);
        if (v > max)
        {
            Fail(t.line, field, "must be at most " + std::to_string(max) + ", got " + t.text);
        }
        return v;
    }

    int64_t Integer(const Token& t, const std::string& field, int64_t min) const
    {
        size_t used = 0;
        int64_t v = 0;
        try
        {
            v = std::stoll(t.text, &used);
        }
        catch (const std::exception&)
        {
            used = 0;
        }
        if (used == 0 || used != t.text.size())
        {
            Fail(t.line, field, "expected an integer, got '" + t.text + "'");
        }
        if (v < min)
        {
            Fail(t.line, field, "must be at least " + std::to_string(min) + ", got " + t.text);
        }
        return v;
    }

    TextTopology Parse(const std::string& defaultGpuModel)
    {
        if (m_lines.empty())
        {
            throw TopologyError(m_file + ": empty topology file");
        }
        const std::vector<Token>& head = m_lines[0];
        bool simai = head.size() >= 6;
        if (head.size() != 3 && !simai)
        {
            Fail(head[0].line, "header",
                 "expected 'node_num switch_num link_num' (HPCC) or 'node_num gpus_per_server "
                 "nvswitch_num switch_num link_num gpu_type' (SimAI), got " +
                     std::to_string(head.size()) + " values");
        }
        TextTopology out;
        out.format = simai ? "simai" : "hpcc";
        const int64_t nodeNum = Integer(head[0], "node_num", 1, kMaxImportedNodes);
        int64_t gpusPerServer = 1;
        int64_t nvswitchNum = 0;
        int64_t switchNum = 0;
        int64_t linkNum = 0;
        std::string model;
        if (simai)
        {
            gpusPerServer = Integer(head[1], "gpus_per_server", 1, kMaxGpusPerServer);
            nvswitchNum = Integer(head[2], "nvswitch_num", 0, kMaxImportedNodes);
            switchNum = Integer(head[3], "switch_num", 0, kMaxImportedNodes);
            linkNum = Integer(head[4], "link_num", 1, kMaxImportedLinks);
            const std::string& type = head[5].text;
            model = SimAiModel(type);
            if (model.empty())
            {
                // Keep the raw name when there is no default, so that the spec check reports it
                // as an unknown model on this line.
                model = defaultGpuModel.empty() ? type : defaultGpuModel;
            }
            out.modelLine = head[5].line;
            out.modelField = "gpu_type";
        }
        else
        {
            switchNum = Integer(head[1], "switch_num", 0, kMaxImportedNodes);
            linkNum = Integer(head[2], "link_num", 1, kMaxImportedLinks);
            model = defaultGpuModel.empty() ? kDefaultHpccGpu : defaultGpuModel;
            out.modelLine = head[0].line;
            out.modelField = "node_num";
        }
        if (nvswitchNum + switchNum >= nodeNum)
        {
            Fail(head[0].line, "node_num",
                 "must exceed the switch count (" + std::to_string(nvswitchNum + switchNum) +
                     "): every other node is an endpoint");
        }

        // The switch id list: nvswitch_num + switch_num integers, possibly over several lines.
        std::deque<Token> rest;
        for (size_t i = 1; i < m_lines.size(); ++i)
        {
            rest.insert(rest.end(), m_lines[i].begin(), m_lines[i].end());
        }
        std::vector<int> kind(nodeNum, 0); // 0 endpoint, 1 nvswitch, 2 switch
        for (int64_t i = 0; i < nvswitchNum + switchNum; ++i)
        {
            if (rest.empty())
            {
                Fail(head[0].line, "switch ids",
                     "the file ends before the " + std::to_string(nvswitchNum + switchNum) +
                         " switch ids the header announces");
            }
            Token t = rest.front();
            rest.pop_front();
            int64_t id = Integer(t, "switch ids", 0);
            if (id >= nodeNum)
            {
                Fail(t.line, "switch ids",
                     "id " + t.text + " is not below node_num " + std::to_string(nodeNum));
            }
            if (kind[id] != 0)
            {
                Fail(t.line, "switch ids", "id " + t.text + " listed twice");
            }
            kind[id] = i < nvswitchNum ? 1 : 2;
        }

        struct RawLink
        {
            int64_t src;
            int64_t dst;
            double rate;
            int64_t delayNs;
            int line;
        };
        std::vector<RawLink> links;
        for (int64_t i = 0; i < linkNum; ++i)
        {
            if (rest.empty())
            {
                Fail(head[0].line, "link_num",
                     "the header announces " + std::to_string(linkNum) + " links, the file has " +
                         std::to_string(i));
            }
            const int line = rest.front().line;
            std::vector<Token> f;
            while (!rest.empty() && rest.front().line == line)
            {
                f.push_back(rest.front());
                rest.pop_front();
            }
            if (f.size() != 5)
            {
                Fail(line, "link",
                     "expected 'src dst rate delay error_rate', got " + std::to_string(f.size()) +
                         " values");
            }
            RawLink l;
            l.line = line;
            l.src = Integer(f[0], "src", 0);
            l.dst = Integer(f[1], "dst", 0);
            for (auto [id, name] : {std::pair{l.src, "src"}, std::pair{l.dst, "dst"}})
            {
                if (id >= nodeNum)
                {
                    Fail(line, name,
                         "node " + std::to_string(id) + " does not exist (node_num is " +
                             std::to_string(nodeNum) + ")");
                }
            }
            if (l.src == l.dst)
            {
                Fail(line, "dst", "a link cannot join node " + f[0].text + " to itself");
            }
            try
            {
                l.rate = ParseBandwidth(f[2].text);
            }
            catch (const TopologyError& e)
            {
                Fail(line, "rate", e.what());
            }
            if (!(l.rate >= kMinLinkBandwidth && l.rate <= kMaxLinkBandwidth))
            {
                Fail(line, "rate",
                     "'" + f[2].text + "' is outside what a link can be (1 Mb/s to 1 Pb/s)");
            }
            try
            {
                l.delayNs = ParseLatencyNs(f[3].text);
            }
            catch (const TopologyError& e)
            {
                Fail(line, "delay", e.what());
            }
            if (l.delayNs < 0 || l.delayNs > kMaxLinkLatencyNs)
            {
                Fail(line, "delay", "'" + f[3].text + "' is outside what a link can be (0 to 1 s)");
            }
            // The error rate drives packet loss in HPCC's simulations; eidolon's links are
            // lossless, so it is checked for form and otherwise ignored.
            try
            {
                size_t used = 0;
                double er = std::stod(f[4].text, &used);
                if (used != f[4].text.size() || er < 0 || er > 1)
                {
                    throw std::invalid_argument(f[4].text);
                }
            }
            catch (const std::exception&)
            {
                Fail(line, "error_rate", "expected a probability, got '" + f[4].text + "'");
            }
            links.push_back(l);
        }
        if (!rest.empty())
        {
            Fail(rest.front().line, "link_num",
                 "more links than the " + std::to_string(linkNum) + " the header announces");
        }

        // Names. Endpoints in id order: the k-th is GPU k % gps of server k / gps.
        Ptr<Topology> topo = Create<Topology>();
        std::vector<std::string> names(nodeNum);
        std::vector<int32_t> server(nodeNum, -1);
        std::vector<int32_t> local(nodeNum, -1);
        int64_t k = 0;
        for (int64_t id = 0; id < nodeNum; ++id)
        {
            if (kind[id] == 0)
            {
                server[id] = static_cast<int32_t>(k / gpusPerServer);
                local[id] = static_cast<int32_t>(k % gpusPerServer);
                names[id] = "node" + std::to_string(k / gpusPerServer) + "/gpu" +
                            std::to_string(k % gpusPerServer);
                ++k;
            }
        }
        // An NVSwitch belongs to the server of the first GPU linked to it.
        std::map<int32_t, int> nvPerServer;
        for (const RawLink& l : links)
        {
            for (auto [sw, other] : {std::pair{l.src, l.dst}, std::pair{l.dst, l.src}})
            {
                if (kind[sw] == 1 && names[sw].empty() && kind[other] == 0)
                {
                    server[sw] = server[other];
                    names[sw] = "node" + std::to_string(server[other]) + "/nvswitch" +
                                std::to_string(nvPerServer[server[other]]++);
                }
            }
        }
        // Fabric tiers: switches next to an endpoint are leaves (1), then breadth-first upwards.
        std::vector<int32_t> tier(nodeNum, 0);
        std::vector<std::vector<int64_t>> adj(nodeNum);
        for (const RawLink& l : links)
        {
            adj[l.src].push_back(l.dst);
            adj[l.dst].push_back(l.src);
        }
        std::deque<int64_t> queue;
        for (int64_t id = 0; id < nodeNum; ++id)
        {
            if (kind[id] == 2 && std::any_of(adj[id].begin(), adj[id].end(),
                                             [&](int64_t v) { return kind[v] == 0; }))
            {
                tier[id] = 1;
                queue.push_back(id);
            }
        }
        while (!queue.empty())
        {
            int64_t v = queue.front();
            queue.pop_front();
            for (int64_t w : adj[v])
            {
                if (kind[w] == 2 && tier[w] == 0)
                {
                    tier[w] = tier[v] + 1;
                    queue.push_back(w);
                }
            }
        }
        for (int64_t id = 0; id < nodeNum; ++id)
        {
            Device d;
            d.node = server[id];
            if (kind[id] == 0)
            {
                d.kind = DeviceKind::Gpu;
                d.name = names[id];
                d.localIndex = local[id];
                d.model = model;
            }
            else if (kind[id] == 1)
            {
                d.kind = DeviceKind::NvSwitch;
                d.name = names[id].empty() ? "nvswitch" + std::to_string(id) : names[id];
                names[id] = d.name;
            }
            else
            {
                d.kind = DeviceKind::Switch;
                d.tier = tier[id];
                d.name = "switch" + std::to_string(id);
                names[id] = d.name;
            }
            topo->AddDevice(d);
        }
        for (const RawLink& r : links)
        {
            Link l;
            l.a = static_cast<uint32_t>(r.src); // device ids equal the file's node ids
            l.b = static_cast<uint32_t>(r.dst);
            l.bandwidth = r.rate;
            l.latencyNs = r.delayNs;
            l.kind = (kind[r.src] == 1 || kind[r.dst] == 1) ? LinkKind::NvLink : LinkKind::Net;
            topo->AddLink(l);
            for (int64_t id : {r.src, r.dst})
            {
                out.deviceLines.emplace(names[id], r.line);
            }
        }
        out.topology = topo;
        NS_LOG_INFO(m_file << ": " << out.format << " topology, " << topo->GpuCount()
                           << " endpoints, " << links.size() << " links");
        return out;
    }

private:
    std::string m_file;
    std::vector<std::vector<Token>> m_lines;
};
} // namespace

TextTopology
ParseTextTopology(const std::string& text, const std::string& nameForMessages,
                  const std::string& defaultGpuModel)
{
    TextParser parser(text, nameForMessages);
    TextTopology out = parser.Parse(defaultGpuModel);
    out.topology->name = std::filesystem::path(nameForMessages).stem().string();
    return out;
}

} // namespace eidolon
} // namespace ns3
