#include "pricing-spec.h"

#include "units.h"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

namespace eidolon::gpu
{
namespace
{

class Reader
{
public:
    Reader(const YAML::Node& node, const std::string& path)
        : m_node(node)
        , m_path(path)
    {
    }

    // The field's node, or an invalid node when this level is absent.
    YAML::Node Field(const char* field) const
    {
        return m_node && m_node.IsMap() ? m_node[field] : YAML::Node(YAML::NodeType::Undefined);
    }

    void Number(const char* field, double& out, double scale = 1.0) const
    {
        YAML::Node value = Field(field);
        if (!value || value.IsNull())
        {
            return;
        }
        try
        {
            out = value.as<double>() * scale;
        }
        catch (const YAML::Exception&)
        {
            Fail(field, "not a number");
        }
        if (out < 0)
        {
            Fail(field, "negative");
        }
    }

    void Rate(const char* field, double& out) const
    {
        YAML::Node value = Field(field);
        if (!value || value.IsNull())
        {
            return;
        }
        auto parsed = ParseBytesPerSecond(value.as<std::string>());
        if (!parsed)
        {
            Fail(field, "not a bandwidth such as 3TB/s: '" + value.as<std::string>() + "'");
        }
        out = *parsed;
    }

    void Size(const char* field, uint64_t& out) const
    {
        YAML::Node value = Field(field);
        if (!value || value.IsNull())
        {
            return;
        }
        auto parsed = ParseBytes(value.as<std::string>());
        if (!parsed)
        {
            Fail(field, "not a size such as 32MiB: '" + value.as<std::string>() + "'");
        }
        out = static_cast<uint64_t>(*parsed);
    }

    Reader Child(const char* field) const { return Reader(Field(field), m_path, Prefix() + field); }

    bool Exists() const { return m_node.IsDefined() && !m_node.IsNull(); }

private:
    Reader(const YAML::Node& node, const std::string& path, const std::string& prefix)
        : m_node(node)
        , m_path(path)
        , m_prefix(prefix)
    {
    }

    std::string Prefix() const { return m_prefix.empty() ? "pricing." : m_prefix + "."; }

    [[noreturn]] void Fail(const std::string& field, const std::string& why) const
    {
        throw std::runtime_error(m_path + ": field '" + Prefix() + field + "': " + why);
    }

    YAML::Node m_node;
    std::string m_path;
    std::string m_prefix;
};

void
ReadFractions(const Reader& reader, DTypeFractions& out)
{
    reader.Number("fp64", out.fp64);
    reader.Number("fp32", out.fp32);
    reader.Number("tf32", out.tf32);
    reader.Number("bf16", out.bf16);
    reader.Number("fp16", out.fp16);
    reader.Number("fp8", out.fp8);
    reader.Number("int8", out.int8);
}

void
ReadAttention(const Reader& reader, AttentionRates& out)
{
    reader.Number("hd64", out.hd64);
    reader.Number("hd128", out.hd128);
    reader.Number("hd256", out.hd256);
}

} // namespace

PricingSpec
LoadPricingSpec(const YAML::Node& node, const std::string& path)
{
    PricingSpec spec;
    if (!node || node.IsNull())
    {
        return spec;
    }
    if (!node.IsMap())
    {
        throw std::runtime_error(path + ": field 'pricing': expected a mapping");
    }
    spec.present = true;
    Reader r(node, path);
    ReadFractions(r.Child("gemm_efficiency"), spec.gemmEfficiency);
    r.Number("gemm_sm_efficiency", spec.gemmSmEfficiency);
    r.Number("gemm_tile_penalty", spec.gemmTilePenalty);
    r.Number("gemm_tile_overhead_k", spec.gemmTileOverheadK);
    r.Number("gemm_fixed_us", spec.gemmFixedNs, 1e3);
    r.Number("gemm_gelu_factor", spec.gemmGeluFactor);
    r.Number("gemm_unaligned_efficiency", spec.gemmUnalignedEfficiency);
    r.Number("kernel_min_us", spec.kernelMinNs, 1e3);
    r.Number("kernel_gap_us", spec.kernelGapNs, 1e3);
    r.Number("hbm_efficiency", spec.hbmEfficiency);
    r.Number("memcpy_efficiency", spec.memcpyEfficiency);
    r.Number("memset_efficiency", spec.memsetEfficiency);
    r.Rate("l2_bandwidth", spec.l2BytesPerSecond);
    r.Size("l2_resident", spec.l2ResidentBytes);
    r.Number("host_copy_latency_us", spec.hostCopyLatencyNs, 1e3);
    r.Rate("pinned_bandwidth", spec.pinnedBytesPerSecond);
    r.Rate("pageable_h2d_bandwidth", spec.pageableH2DBytesPerSecond);
    r.Rate("pageable_d2h_bandwidth", spec.pageableD2HBytesPerSecond);
    Reader attention = r.Child("attention");
    if (attention.Exists())
    {
        ReadAttention(attention.Child("fa2_forward"), spec.fa2Forward);
        ReadAttention(attention.Child("fa2_backward"), spec.fa2Backward);
        ReadAttention(attention.Child("fa3_forward"), spec.fa3Forward);
        ReadAttention(attention.Child("fa3_backward"), spec.fa3Backward);
        attention.Number("causal_efficiency", spec.attentionCausalEfficiency);
    }
    return spec;
}

} // namespace eidolon::gpu
