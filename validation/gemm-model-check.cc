// Compares gpu-emu's cuBLAS GEMM model with measured GEMM times in ../shared/validation-data:
// TraceLens H100 bf16 inference GEMMs (per-op kernel time), Azure cuBLASLt sweeps (A100 fp16,
// H100/H200 fp8) and the best-shape MAMF figures (bf16). Prints every row and, per set, the mean
// and maximum relative error of the modelled time. The model is never fed these numbers.
//
//   eidolon-gemm-check [VALIDATION_DATA_DIR]
#include "cost-model.h"
#include "gpu-spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace eidolon::gpu;

namespace
{
struct Row
{
    std::string set, gpu, dtype;
    int64_t m, n, k, batch;
    double measuredUs;
};

struct Summary
{
    double sumErr = 0, maxErr = 0;
    int count = 0;
};

DType
TypeOf(const std::string& d)
{
    if (d.rfind("fp8", 0) == 0)
    {
        return DType::F8;
    }
    return d == "fp16" ? DType::F16 : DType::BF16;
}

std::string
SpecName(const std::string& gpu)
{
    if (gpu.find("A100") != std::string::npos)
    {
        return "A100-SXM4-80GB";
    }
    if (gpu.find("H200") != std::string::npos)
    {
        return "H200-SXM-141GB";
    }
    if (gpu.find("H100") != std::string::npos || gpu.find("GH200") != std::string::npos)
    {
        return "H100-SXM5-80GB";
    }
    if (gpu.find("B200") != std::string::npos)
    {
        return "B200";
    }
    return "";
}
} // namespace

int
main(int argc, char** argv)
{
    const std::string data = argc > 1 ? argv[1] : std::string(EIDOLON_SOURCE_DIR) + "/../shared/validation-data";
    const std::vector<std::string> specDirs = {std::string(EIDOLON_SOURCE_DIR) + "/topologies/gpus"};
    std::vector<Row> rows;
    try
    {
        for (const auto& r : YAML::LoadFile(data + "/gemm-tracelens-h100.yaml")["rows"])
        {
            rows.push_back({"tracelens-h100-bf16", "H100", "bf16", r["M"].as<int64_t>(),
                            r["N"].as<int64_t>(), r["K"].as<int64_t>(), r["B"].as<int64_t>(),
                            r["kernel_time_us"]["median"].as<double>()});
        }
        for (const auto& r : YAML::LoadFile(data + "/gemm-cublaslt-azure.yaml")["rows"])
        {
            const std::string dtype = r["dtype"].as<std::string>();
            rows.push_back({"azure-cublaslt-" + dtype.substr(0, 4), r["gpu"].as<std::string>(), dtype,
                            r["m"].as<int64_t>(), r["n"].as<int64_t>(), r["k"].as<int64_t>(), 1,
                            r["time_us_derived"].as<double>()});
        }
        for (const auto& r : YAML::LoadFile(data + "/gemm-mamf-mlengineering.yaml")["rows"])
        {
            const std::string gpu = r["accelerator"].as<std::string>();
            const std::string dtype = r["dtype"].as<std::string>();
            // SXM parts only (the specs eidolon ships); PCIe/NVL/GB variants have other clocks.
            if (SpecName(gpu).empty() || gpu.find("SXM") == std::string::npos ||
                gpu.find("GH200") != std::string::npos || dtype != "bf16")
            {
                continue;
            }
            auto s = r["best_shape_mnk"];
            const double m = s[0].as<double>(), n = s[1].as<double>(), k = s[2].as<double>();
            const double us = 2 * m * n * k / (r["mamf_tflops"].as<double>() * 1e12) * 1e6;
            rows.push_back({"mamf-best-shape-bf16", gpu, dtype, int64_t(m), int64_t(n), int64_t(k), 1, us});
        }
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "eidolon-gemm-check: %s\n", e.what());
        return 1;
    }

    GemmModel model(1000.0);
    std::map<std::string, GpuSpec> specs;
    std::map<std::string, Summary> sets;
    std::printf("%-22s %-16s %-10s %8s %8s %8s %4s %12s %12s %8s\n", "set", "gpu", "dtype", "m", "n",
                "k", "b", "measured_us", "model_us", "error");
    for (const Row& r : rows)
    {
        const std::string name = SpecName(r.gpu);
        if (name.empty())
        {
            continue;
        }
        if (!specs.count(name))
        {
            try
            {
                specs[name] = FindGpuSpec(name, specDirs);
            }
            catch (const std::exception& e)
            {
                std::fprintf(stderr, "eidolon-gemm-check: %s\n", e.what());
                return 1;
            }
        }
        GemmShape shape;
        shape.m = r.m;
        shape.n = r.n;
        shape.k = r.k;
        shape.batch = r.batch;
        shape.inputType = TypeOf(r.dtype);
        shape.mathType = shape.inputType;
        shape.outputBytes = shape.inputType == DType::F8 ? 2 : DTypeBytes(shape.inputType);
        auto price = model.PriceGemm(shape, specs[name]);
        if (!price)
        {
            continue;
        }
        const double us = *price / 1e3;
        const double err = us / r.measuredUs - 1;
        Summary& s = sets[r.set];
        s.sumErr += std::fabs(err);
        s.maxErr = std::max(s.maxErr, std::fabs(err));
        ++s.count;
        std::printf("%-22s %-16s %-10s %8lld %8lld %8lld %4lld %12.2f %12.2f %+7.1f%%\n", r.set.c_str(),
                    name.c_str(), r.dtype.c_str(), (long long)r.m, (long long)r.n, (long long)r.k,
                    (long long)r.batch, r.measuredUs, us, err * 100);
    }
    std::printf("\n%-22s %5s %16s %16s\n", "set", "rows", "mean |error|", "max |error|");
    for (const auto& [set, s] : sets)
    {
        std::printf("%-22s %5d %15.1f%% %15.1f%%\n", set.c_str(), s.count, 100 * s.sumErr / s.count,
                    100 * s.maxErr);
    }
    return 0;
}
