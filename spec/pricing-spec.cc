#include "pricing-spec.h"

#include "spec-fields.h"

namespace eidolon::spec
{
namespace
{

// The optional fields of one pricing mapping; an absent or null key keeps the default.
class OptionalFields
{
public:
    explicit OptionalFields(Fields fields)
        : m_fields(std::move(fields))
    {
    }

    const Fields& Raw() const { return m_fields; }

    void Fraction(const char* key, double& out) const
    {
        if (m_fields.Has(key))
        {
            out = m_fields.NonNegative(key);
        }
    }

    void Microseconds(const char* key, double& outNs) const
    {
        double us = outNs / 1e3;
        Fraction(key, us);
        outNs = us * 1e3;
    }

    void Rate(const char* key, double& out) const
    {
        if (m_fields.Has(key))
        {
            out = m_fields.Parsed(key, ParseBandwidth);
        }
    }

    void Size(const char* key, uint64_t& out) const
    {
        if (m_fields.Has(key))
        {
            out = m_fields.Parsed(key, ParseBytes);
        }
    }

    OptionalFields Child(const char* key, const std::string& what) const
    {
        return OptionalFields(Fields(m_fields.File(), m_fields.Get(key), what));
    }

private:
    Fields m_fields;
};

void
ReadFractions(const OptionalFields& f, DTypeFractions& out)
{
    f.Raw().Allow({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"});
    f.Fraction("fp64", out.fp64);
    f.Fraction("fp32", out.fp32);
    f.Fraction("tf32", out.tf32);
    f.Fraction("bf16", out.bf16);
    f.Fraction("fp16", out.fp16);
    f.Fraction("fp8", out.fp8);
    f.Fraction("int8", out.int8);
}

void
ReadAttentionRates(const OptionalFields& attention, const char* key, AttentionRates& out)
{
    if (!attention.Raw().Has(key))
    {
        return;
    }
    OptionalFields f = attention.Child(key, std::string("pricing.attention.") + key);
    f.Raw().Allow({"hd64", "hd128", "hd256"});
    f.Fraction("hd64", out.hd64);
    f.Fraction("hd128", out.hd128);
    f.Fraction("hd256", out.hd256);
}

void
ReadAttention(const OptionalFields& pricing, PricingSpec& spec)
{
    if (!pricing.Raw().Has("attention"))
    {
        return;
    }
    OptionalFields a = pricing.Child("attention", "pricing.attention");
    a.Raw().Allow(
        {"fa2_forward", "fa2_backward", "fa3_forward", "fa3_backward", "causal_efficiency"});
    ReadAttentionRates(a, "fa2_forward", spec.fa2Forward);
    ReadAttentionRates(a, "fa2_backward", spec.fa2Backward);
    ReadAttentionRates(a, "fa3_forward", spec.fa3Forward);
    ReadAttentionRates(a, "fa3_backward", spec.fa3Backward);
    a.Fraction("causal_efficiency", spec.attentionCausalEfficiency);
}

} // namespace

PricingSpec
ReadPricingSpec(const Fields& gpuSpec)
{
    PricingSpec spec;
    if (!gpuSpec.Has("pricing"))
    {
        return spec;
    }
    spec.present = true;
    OptionalFields p(Fields(gpuSpec.File(), gpuSpec.Get("pricing"), "pricing"));
    p.Raw().Allow({"gemm_efficiency",
                   "gemm_sm_efficiency",
                   "gemm_tile_penalty",
                   "gemm_tile_overhead_k",
                   "gemm_fixed_us",
                   "gemm_gelu_factor",
                   "gemm_unaligned_efficiency",
                   "kernel_min_us",
                   "kernel_gap_us",
                   "hbm_efficiency",
                   "memcpy_efficiency",
                   "memset_efficiency",
                   "l2_bandwidth",
                   "l2_resident",
                   "host_copy_latency_us",
                   "pinned_bandwidth",
                   "pageable_h2d_bandwidth",
                   "pageable_d2h_bandwidth",
                   "load_round_us",
                   "same_address_atomic_ns",
                   "dependent_load_us",
                   "attention"});
    if (p.Raw().Has("gemm_efficiency"))
    {
        ReadFractions(p.Child("gemm_efficiency", "pricing.gemm_efficiency"), spec.gemmEfficiency);
    }
    p.Fraction("gemm_sm_efficiency", spec.gemmSmEfficiency);
    p.Fraction("gemm_tile_penalty", spec.gemmTilePenalty);
    p.Fraction("gemm_tile_overhead_k", spec.gemmTileOverheadK);
    p.Microseconds("gemm_fixed_us", spec.gemmFixedNs);
    p.Fraction("gemm_gelu_factor", spec.gemmGeluFactor);
    p.Fraction("gemm_unaligned_efficiency", spec.gemmUnalignedEfficiency);
    p.Microseconds("kernel_min_us", spec.kernelMinNs);
    p.Microseconds("kernel_gap_us", spec.kernelGapNs);
    p.Fraction("hbm_efficiency", spec.hbmEfficiency);
    p.Fraction("memcpy_efficiency", spec.memcpyEfficiency);
    p.Fraction("memset_efficiency", spec.memsetEfficiency);
    p.Rate("l2_bandwidth", spec.l2BytesPerSecond);
    p.Size("l2_resident", spec.l2ResidentBytes);
    p.Microseconds("host_copy_latency_us", spec.hostCopyLatencyNs);
    p.Rate("pinned_bandwidth", spec.pinnedBytesPerSecond);
    p.Rate("pageable_h2d_bandwidth", spec.pageableH2DBytesPerSecond);
    p.Rate("pageable_d2h_bandwidth", spec.pageableD2HBytesPerSecond);
    p.Microseconds("load_round_us", spec.loadRoundNs);
    p.Fraction("same_address_atomic_ns", spec.sameAddressAtomicNs); // a plain number (ns)
    p.Microseconds("dependent_load_us", spec.dependentLoadNs);
    ReadAttention(p, spec);
    return spec;
}

} // namespace eidolon::spec
