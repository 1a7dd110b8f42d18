// nvidia-smi for the emulated GPUs: what NVIDIA's tool prints for the questions scripts ask of it
// (the default table, -L, and --query-gpu with --format=csv), read through NVML as the real tool
// reads it, so that it answers from gpu-emu's libnvidia-ml.so.1 under `eidolon run`. What the
// emulated GPUs do not have (temperature, power draw, utilization, fan) is "N/A", as nvidia-smi
// prints for a sensor a GPU lacks. Memory used is this process's own, as NVML reports it to a
// process (nvidia-smi, a process of its own, holds none); the run summary has each GPU's peak.
#include "nvml-api.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace
{

constexpr unsigned long long kMiB = 1ull << 20;

struct Gpu
{
    unsigned index = 0;
    std::string name;
    std::string uuid;
    std::string busId;
    std::string computeCap;
    nvmlMemory_t memory{};
};

struct System
{
    std::string driver;
    std::string cuda;
    std::vector<Gpu> gpus;
};

// Reads what NVML says; false (with the message nvidia-smi gives) when NVML cannot start.
bool
Read(System* system, std::string* error)
{
    nvmlReturn_t result = nvmlInit_v2();
    if (result != NVML_SUCCESS)
    {
        *error = fmt::format("NVIDIA-SMI has failed because it couldn't communicate with the "
                             "NVIDIA driver ({}).",
                             nvmlErrorString(result));
        return false;
    }
    char text[96] = {};
    nvmlSystemGetDriverVersion(text, sizeof text);
    system->driver = text;
    int cuda = 0;
    nvmlSystemGetCudaDriverVersion_v2(&cuda);
    system->cuda = fmt::format("{}.{}", cuda / 1000, cuda % 1000 / 10);
    unsigned count = 0;
    nvmlDeviceGetCount_v2(&count);
    for (unsigned i = 0; i < count; ++i)
    {
        nvmlDevice_t device = nullptr;
        if (nvmlDeviceGetHandleByIndex_v2(i, &device) != NVML_SUCCESS)
        {
            continue;
        }
        Gpu gpu;
        gpu.index = i;
        nvmlDeviceGetName(device, text, sizeof text);
        gpu.name = text;
        nvmlDeviceGetUUID(device, text, sizeof text);
        gpu.uuid = text;
        nvmlPciInfo_t pci{};
        nvmlDeviceGetPciInfo_v3(device, &pci);
        gpu.busId = pci.busId;
        int major = 0, minor = 0;
        nvmlDeviceGetCudaComputeCapability(device, &major, &minor);
        gpu.computeCap = fmt::format("{}.{}", major, minor);
        nvmlDeviceGetMemoryInfo(device, &gpu.memory);
        system->gpus.push_back(gpu);
    }
    nvmlShutdown();
    return true;
}

// `text` in a cell of `width` columns, right-aligned when `right`.
std::string
Cell(const std::string& text, size_t width, bool right = false)
{
    std::string cut = text.substr(0, width);
    std::string pad(width - cut.size(), ' ');
    return right ? pad + cut : cut + pad;
}

void
PrintTable(const System& system, std::ostream& out)
{
    std::time_t now = std::time(nullptr);
    char date[64] = {};
    std::strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", std::localtime(&now));
    const std::string rule(89, '-');
    const std::string split =
        "+" + std::string(41, '-') + "+" + std::string(24, '-') + "+" + std::string(22, '-') + "+";
    out << date << "       \n";
    out << "+" << rule << "+\n";
    out << "| "
        << Cell(fmt::format("NVIDIA-SMI {}              Driver Version: {}      CUDA Version: {}",
                            system.driver, system.driver, system.cuda),
                87)
        << " |\n";
    out << split << "\n";
    out << "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. "
           "ECC |\n";
    out << "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute "
           "M. |\n";
    out << "|                                         |                        |               MIG "
           "M. |\n";
    out << "|" << std::string(41, '=') << "+" << std::string(24, '=') << "+" << std::string(22, '=')
        << "|\n";
    for (const Gpu& gpu : system.gpus)
    {
        out << "|" << Cell(fmt::format(" {:>3}  {}", gpu.index, gpu.name), 37) << "On  "
            << "|" << Cell(fmt::format("{} Off ", gpu.busId), 24, true) << "|"
            << Cell("0 ", 22, true) << "|\n";
        std::string memory =
            fmt::format("{}MiB / {:>6}MiB ", gpu.memory.used / kMiB, gpu.memory.total / kMiB);
        out << "|" << Cell(" N/A   N/A    P0             N/A  /  N/A ", 41) << "|"
            << Cell(memory, 24, true) << "|" << Cell("   N/A      Default ", 22, true) << "|\n";
        out << "|" << std::string(41, ' ') << "|" << std::string(24, ' ') << "|"
            << Cell("Disabled ", 22, true) << "|\n";
        out << split << "\n";
    }
    out << "\n";
    out << "+" << rule << "+\n";
    out << "| " << Cell("Processes:", 87) << " |\n";
    out << "| " << Cell(" GPU   GI   CI              PID   Type   Process name", 72)
        << Cell("GPU Memory", 15, true) << " |\n";
    out << "| " << Cell("       ID   ID", 72) << Cell("Usage     ", 15, true) << " |\n";
    out << "|" << std::string(89, '=') << "|\n";
    out << "| " << Cell(" No running processes found", 87) << " |\n";
    out << "+" << rule << "+\n";
}

void
PrintList(const System& system, std::ostream& out)
{
    for (const Gpu& gpu : system.gpus)
    {
        out << fmt::format("GPU {}: {} (UUID: {})\n", gpu.index, gpu.name, gpu.uuid);
    }
}

// One --query-gpu field: its value for a GPU, and its unit for the header ("" if none).
struct Field
{
    std::string unit;
    std::function<std::string(const System&, const Gpu&)> value;
};

const std::map<std::string, Field>&
Fields()
{
    auto na = [](const System&, const Gpu&) { return std::string("[N/A]"); };
    static const std::map<std::string, Field> fields = {
        {"index", {"", [](const System&, const Gpu& g) { return std::to_string(g.index); }}},
        {"count", {"", [](const System& s, const Gpu&) { return std::to_string(s.gpus.size()); }}},
        {"name", {"", [](const System&, const Gpu& g) { return g.name; }}},
        {"gpu_name", {"", [](const System&, const Gpu& g) { return g.name; }}},
        {"uuid", {"", [](const System&, const Gpu& g) { return g.uuid; }}},
        {"gpu_uuid", {"", [](const System&, const Gpu& g) { return g.uuid; }}},
        {"pci.bus_id", {"", [](const System&, const Gpu& g) { return g.busId; }}},
        {"gpu_bus_id", {"", [](const System&, const Gpu& g) { return g.busId; }}},
        {"driver_version", {"", [](const System& s, const Gpu&) { return s.driver; }}},
        {"compute_cap", {"", [](const System&, const Gpu& g) { return g.computeCap; }}},
        {"memory.total",
         {"MiB", [](const System&, const Gpu& g)
          { return std::to_string(g.memory.total / kMiB) + " MiB"; }}},
        {"memory.used",
         {"MiB", [](const System&, const Gpu& g)
          { return std::to_string(g.memory.used / kMiB) + " MiB"; }}},
        {"memory.free",
         {"MiB", [](const System&, const Gpu& g)
          { return std::to_string(g.memory.free / kMiB) + " MiB"; }}},
        {"persistence_mode",
         {"", [](const System&, const Gpu&) { return std::string("Enabled"); }}},
        {"compute_mode", {"", [](const System&, const Gpu&) { return std::string("Default"); }}},
        {"mig.mode.current",
         {"", [](const System&, const Gpu&) { return std::string("Disabled"); }}},
        {"pstate", {"", [](const System&, const Gpu&) { return std::string("P0"); }}},
        {"temperature.gpu", {"", na}},
        {"temperature.memory", {"", na}},
        {"fan.speed", {"%", na}},
        {"utilization.gpu", {"%", na}},
        {"utilization.memory", {"%", na}},
        {"power.draw", {"W", na}},
        {"power.limit", {"W", na}},
        {"clocks.sm", {"MHz", na}},
        {"clocks.mem", {"MHz", na}},
        {"clocks.max.sm", {"MHz", na}},
        {"clocks.max.mem", {"MHz", na}},
        {"ecc.errors.uncorrected.volatile.total", {"", na}},
    };
    return fields;
}

std::vector<std::string>
SplitCommas(const std::string& text)
{
    std::vector<std::string> parts;
    std::stringstream stream(text);
    for (std::string part; std::getline(stream, part, ',');)
    {
        size_t first = part.find_first_not_of(' ');
        size_t last = part.find_last_not_of(' ');
        if (first != std::string::npos)
        {
            parts.push_back(part.substr(first, last - first + 1));
        }
    }
    return parts;
}

// --query-gpu=FIELDS --format=csv[,noheader][,nounits]; 2 on a field it does not know.
int
PrintQuery(const System& system, const std::string& query, const std::string& format,
           std::ostream& out, std::ostream& err)
{
    std::vector<std::string> names = SplitCommas(query);
    std::vector<std::string> options = SplitCommas(format);
    bool csv = false, header = true, units = true;
    for (const std::string& option : options)
    {
        if (option == "csv")
        {
            csv = true;
        }
        else if (option == "noheader")
        {
            header = false;
        }
        else if (option == "nounits")
        {
            units = false;
        }
        else
        {
            err << fmt::format("\"{}\" is not a valid format option.\n", option);
            return 2;
        }
    }
    if (!csv)
    {
        err << "--format=csv is required with --query-gpu (e.g. --format=csv,noheader).\n";
        return 2;
    }
    std::vector<const Field*> fields;
    for (const std::string& name : names)
    {
        auto found = Fields().find(name);
        if (found == Fields().end())
        {
            err << fmt::format("Field \"{}\" is not a valid field to query.\n\n", name);
            return 2;
        }
        fields.push_back(&found->second);
    }
    if (header)
    {
        for (size_t i = 0; i < names.size(); ++i)
        {
            std::string unit = fields[i]->unit;
            out << (i ? ", " : "") << names[i]
                << (units && !unit.empty() ? " [" + unit + "]" : std::string());
        }
        out << "\n";
    }
    for (const Gpu& gpu : system.gpus)
    {
        for (size_t i = 0; i < fields.size(); ++i)
        {
            std::string value = fields[i]->value(system, gpu);
            if (!units && !fields[i]->unit.empty() && value.size() > fields[i]->unit.size() + 1 &&
                value.compare(value.size() - fields[i]->unit.size() - 1, std::string::npos,
                              " " + fields[i]->unit) == 0)
            {
                value.resize(value.size() - fields[i]->unit.size() - 1);
            }
            out << (i ? ", " : "") << value;
        }
        out << "\n";
    }
    return 0;
}

} // namespace

int
main(int argc, char** argv)
{
    CLI::App app{"nvidia-smi of eidolon's emulated GPUs (NVML from gpu-emu's libnvidia-ml.so.1)",
                 "nvidia-smi"};
    bool list = false;
    std::string query, format, ids;
    app.add_flag("-L,--list-gpus", list, "one line per GPU with its UUID");
    app.add_option("--query-gpu", query, "comma-separated fields, e.g. index,name,memory.total");
    app.add_option("--format", format, "csv, with noheader and/or nounits");
    app.add_option("-i,--id", ids, "only these GPUs (comma-separated indexes)");
    CLI11_PARSE(app, argc, argv);

    System system;
    std::string error;
    if (!Read(&system, &error))
    {
        std::cout << error << "\n";
        return 9; // what NVIDIA's nvidia-smi returns when the driver cannot be reached
    }
    if (!ids.empty())
    {
        std::vector<Gpu> chosen;
        for (const std::string& id : SplitCommas(ids))
        {
            size_t end = 0;
            unsigned long index = 0;
            try
            {
                index = std::stoul(id, &end);
            }
            catch (const std::exception&)
            {
                end = 0;
            }
            if (end != id.size() || index >= system.gpus.size())
            {
                std::cout << fmt::format("No devices were found matching the id \"{}\"\n", id);
                return 6; // NVML_ERROR_NOT_FOUND, as nvidia-smi returns it
            }
            chosen.push_back(system.gpus[index]);
        }
        system.gpus = chosen;
    }
    if (!query.empty())
    {
        return PrintQuery(system, query, format, std::cout, std::cerr);
    }
    if (list)
    {
        PrintList(system, std::cout);
        return 0;
    }
    PrintTable(system, std::cout);
    return 0;
}
