#include "profile-db.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cxxabi.h>
#include <fstream>
#include <map>
#include <stdexcept>

namespace eidolon::gpu
{
namespace
{

constexpr const char* kFormat = "eidolon-profile-db";
constexpr int kVersion = 1;

Dim3
DimFromJson(const nlohmann::json& value)
{
    Dim3 dim;
    if (value.is_array())
    {
        if (value.size() > 0)
            dim.x = value[0].get<unsigned>();
        if (value.size() > 1)
            dim.y = value[1].get<unsigned>();
        if (value.size() > 2)
            dim.z = value[2].get<unsigned>();
    }
    return dim;
}

nlohmann::json
DimToJson(Dim3 dim)
{
    return nlohmann::json::array({dim.x, dim.y, dim.z});
}

} // namespace

std::string
Demangle(const std::string& mangled)
{
    if (mangled.rfind("_Z", 0) != 0)
    {
        return mangled;
    }
    int status = 0;
    char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !text)
    {
        return mangled;
    }
    std::string result(text);
    std::free(text);
    return result;
}

std::string
NormalizeKernelName(const std::string& name)
{
    std::string result = Demangle(name);
    if (result.rfind("void ", 0) == 0)
    {
        result.erase(0, 5);
    }
    size_t first = result.find_first_not_of(' ');
    size_t last = result.find_last_not_of(' ');
    return first == std::string::npos ? std::string() : result.substr(first, last - first + 1);
}

std::string
ProfileDb::Key(const std::string& gpu, const std::string& kernel, Dim3 grid, Dim3 block,
               uint64_t sharedMem)
{
    return gpu + '\x1f' + kernel + '\x1f' + std::to_string(grid.x) + ',' + std::to_string(grid.y) +
           ',' + std::to_string(grid.z) + '\x1f' + std::to_string(block.x) + ',' +
           std::to_string(block.y) + ',' + std::to_string(block.z) + '\x1f' +
           std::to_string(sharedMem);
}

void
ProfileDb::Add(const ProfileEntry& entry)
{
    ProfileEntry normalized = entry;
    normalized.kernel = NormalizeKernelName(entry.kernel);
    m_index.emplace(Key(normalized.gpu, normalized.kernel, normalized.grid, normalized.block,
                        normalized.sharedMemBytes),
                    m_entries.size());
    m_entries.push_back(normalized);
}

std::optional<Ns>
ProfileDb::PriceKernel(const KernelLaunch& launch, const GpuSpec& spec)
{
    if (!launch.kernel || m_entries.empty())
    {
        return std::nullopt;
    }
    auto range = m_index.equal_range(
        Key(spec.name, launch.kernel->name, launch.grid, launch.block, launch.sharedMemBytes));
    for (auto it = range.first; it != range.second; ++it)
    {
        const ProfileEntry& entry = m_entries[it->second];
        if (entry.argBytes < 0 || launch.argBytes < 0 || entry.argBytes == launch.argBytes)
        {
            return entry.durationUs * 1e3;
        }
    }
    return std::nullopt;
}

void
ProfileDb::Load(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error(path + ": cannot open profile database");
    }
    nlohmann::json root;
    try
    {
        root = nlohmann::json::parse(in);
        if (root.value("format", "") != kFormat || root.value("version", 0) != kVersion)
        {
            throw std::runtime_error("not an eidolon-profile-db version 1 file");
        }
        for (const auto& item : root.at("entries"))
        {
            ProfileEntry entry;
            entry.gpu = item.at("gpu").get<std::string>();
            entry.kernel = item.at("kernel").get<std::string>();
            entry.grid = DimFromJson(item.at("grid"));
            entry.block = DimFromJson(item.at("block"));
            entry.sharedMemBytes = item.value("shared_mem", uint64_t(0));
            entry.argBytes = item.contains("arg_bytes") && !item["arg_bytes"].is_null()
                                 ? item["arg_bytes"].get<int64_t>()
                                 : -1;
            entry.durationUs = item.at("duration_us").get<double>();
            entry.samples = item.value("samples", uint64_t(1));
            Add(entry);
        }
    }
    catch (const nlohmann::json::exception& e)
    {
        throw std::runtime_error(path + ": " + e.what());
    }
    catch (const std::runtime_error& e)
    {
        throw std::runtime_error(path + ": " + e.what());
    }
}

void
ProfileDb::Save(const std::string& path) const
{
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& entry : m_entries)
    {
        nlohmann::json item = {{"gpu", entry.gpu},
                               {"kernel", entry.kernel},
                               {"grid", DimToJson(entry.grid)},
                               {"block", DimToJson(entry.block)},
                               {"shared_mem", entry.sharedMemBytes},
                               {"duration_us", entry.durationUs},
                               {"samples", entry.samples}};
        item["arg_bytes"] =
            entry.argBytes < 0 ? nlohmann::json(nullptr) : nlohmann::json(entry.argBytes);
        entries.push_back(item);
    }
    nlohmann::json root = {{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
    std::ofstream out(path);
    if (!out)
    {
        throw std::runtime_error(path + ": cannot write profile database");
    }
    out << root.dump(1) << '\n';
}

size_t
ProfileDb::ImportKinetoTrace(const std::string& path, const std::string& gpu)
{
    std::ifstream in(path);
    if (!in)
    {
        throw std::runtime_error(path + ": cannot open trace");
    }
    nlohmann::json root;
    try
    {
        root = nlohmann::json::parse(in);
    }
    catch (const nlohmann::json::exception& e)
    {
        throw std::runtime_error(path + ": " + e.what());
    }
    const nlohmann::json& events =
        root.is_array() ? root : root.value("traceEvents", nlohmann::json::array());
    std::map<std::string, std::pair<ProfileEntry, std::vector<double>>> groups;
    size_t kernels = 0;
    for (const auto& event : events)
    {
        if (!event.is_object() || event.value("cat", "") != "kernel" || !event.contains("dur"))
        {
            continue;
        }
        const nlohmann::json args = event.value("args", nlohmann::json::object());
        ProfileEntry entry;
        entry.gpu = gpu;
        entry.kernel = NormalizeKernelName(event.value("name", ""));
        entry.grid = DimFromJson(args.value("grid", nlohmann::json::array()));
        entry.block = DimFromJson(args.value("block", nlohmann::json::array()));
        entry.sharedMemBytes = args.value("shared memory", uint64_t(0));
        std::string key = Key(gpu, entry.kernel, entry.grid, entry.block, entry.sharedMemBytes);
        auto& group = groups[key];
        group.first = entry;
        group.second.push_back(event["dur"].get<double>());
        ++kernels;
    }
    for (auto& [key, group] : groups)
    {
        std::vector<double>& durations = group.second;
        std::sort(durations.begin(), durations.end());
        size_t n = durations.size();
        group.first.durationUs =
            n % 2 ? durations[n / 2] : (durations[n / 2 - 1] + durations[n / 2]) / 2.0;
        group.first.samples = n;
        Add(group.first);
    }
    return kernels;
}

} // namespace eidolon::gpu
