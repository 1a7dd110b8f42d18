#include "reductions.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace eidolon::gpu
{
namespace
{

// ncclDataType_t and ncclRedOp_t values (nccl.h; the core does not include it).
enum Dtype
{
    kInt8 = 0,
    kUint8 = 1,
    kInt32 = 2,
    kUint32 = 3,
    kInt64 = 4,
    kUint64 = 5,
    kFloat16 = 6,
    kFloat32 = 7,
    kFloat64 = 8,
    kBfloat16 = 9,
};
enum Redop
{
    kSum = 0,
    kProd = 1,
    kMax = 2,
    kMin = 3,
    kAvg = 4,
};

struct Add
{
    template<class T> T operator()(T a, T b) const { return T(a + b); }
};
struct Multiply
{
    template<class T> T operator()(T a, T b) const { return T(a * b); }
};
struct Max
{
    template<class T> T operator()(T a, T b) const { return std::max(a, b); }
};
struct Min
{
    template<class T> T operator()(T a, T b) const { return std::min(a, b); }
};

// One operator over all elements (the loop has no branch, so the compiler vectorizes it).
template<class Stored, class Wide, Wide (*Load)(Stored), Stored (*Save)(Wide), class Op>
void
CombineWith(Op op, char* acc, const char* in, uint64_t count)
{
    for (uint64_t i = 0; i < count; ++i)
    {
        Stored a, b;
        std::memcpy(&a, acc + i * sizeof(Stored), sizeof(Stored));
        std::memcpy(&b, in + i * sizeof(Stored), sizeof(Stored));
        Stored r = Save(op(Load(a), Load(b)));
        std::memcpy(acc + i * sizeof(Stored), &r, sizeof(Stored));
    }
}

// Elements stored as `Stored`, computed as `Wide` (half and bfloat16 through float).
template<class Stored, class Wide, Wide (*Load)(Stored), Stored (*Save)(Wide)>
void
CombineAs(int redop, char* acc, const char* in, uint64_t count)
{
    switch (redop)
    {
    case kProd:
        return CombineWith<Stored, Wide, Load, Save>(Multiply{}, acc, in, count);
    case kMax:
        return CombineWith<Stored, Wide, Load, Save>(Max{}, acc, in, count);
    case kMin:
        return CombineWith<Stored, Wide, Load, Save>(Min{}, acc, in, count);
    default: // sum, and the sum of an average
        return CombineWith<Stored, Wide, Load, Save>(Add{}, acc, in, count);
    }
}

template<class T>
T
Same(T value)
{
    return value;
}

template<class Stored, class Wide, Wide (*Load)(Stored), Stored (*Save)(Wide)>
void
DivideAs(char* acc, uint64_t count, int nranks)
{
    for (uint64_t i = 0; i < count; ++i)
    {
        Stored a;
        std::memcpy(&a, acc + i * sizeof(Stored), sizeof(Stored));
        Stored r = Save(Wide(Load(a) / Wide(nranks)));
        std::memcpy(acc + i * sizeof(Stored), &r, sizeof(Stored));
    }
}

// Expands CALL(Stored, Wide, Load, Save) for `dtype`; returns false from the enclosing function
// for a datatype that is not computed (8-bit floats).
#define EIDOLON_FOR_DTYPE(dtype, CALL)                                                             \
    switch (dtype)                                                                                 \
    {                                                                                              \
    case kInt8:                                                                                    \
        CALL(int8_t, int8_t, Same<int8_t>, Same<int8_t>);                                          \
        break;                                                                                     \
    case kUint8:                                                                                   \
        CALL(uint8_t, uint8_t, Same<uint8_t>, Same<uint8_t>);                                      \
        break;                                                                                     \
    case kInt32:                                                                                   \
        CALL(int32_t, int32_t, Same<int32_t>, Same<int32_t>);                                      \
        break;                                                                                     \
    case kUint32:                                                                                  \
        CALL(uint32_t, uint32_t, Same<uint32_t>, Same<uint32_t>);                                  \
        break;                                                                                     \
    case kInt64:                                                                                   \
        CALL(int64_t, int64_t, Same<int64_t>, Same<int64_t>);                                      \
        break;                                                                                     \
    case kUint64:                                                                                  \
        CALL(uint64_t, uint64_t, Same<uint64_t>, Same<uint64_t>);                                  \
        break;                                                                                     \
    case kFloat16:                                                                                 \
        CALL(uint16_t, float, HalfToFloat, FloatToHalf);                                           \
        break;                                                                                     \
    case kFloat32:                                                                                 \
        CALL(float, float, Same<float>, Same<float>);                                              \
        break;                                                                                     \
    case kFloat64:                                                                                 \
        CALL(double, double, Same<double>, Same<double>);                                          \
        break;                                                                                     \
    case kBfloat16:                                                                                \
        CALL(uint16_t, float, Bfloat16ToFloat, FloatToBfloat16);                                   \
        break;                                                                                     \
    default:                                                                                       \
        return false;                                                                              \
    }

} // namespace

float
HalfToFloat(uint16_t half)
{
    uint32_t sign = uint32_t(half & 0x8000) << 16;
    uint32_t exponent = (half >> 10) & 0x1f;
    uint32_t mantissa = half & 0x3ff;
    uint32_t bits;
    if (exponent == 0)
    {
        float value = std::ldexp(float(mantissa), -24); // subnormal: mantissa x 2^-24
        return sign ? -value : value;
    }
    if (exponent == 31)
    {
        bits = sign | 0x7f800000u | (mantissa << 13);
    }
    else
    {
        bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
    }
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

uint16_t
FloatToHalf(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    uint32_t sign = (bits >> 16) & 0x8000;
    uint32_t mantissa = bits & 0x7fffff;
    int exponent = int((bits >> 23) & 0xff);
    if (exponent == 0xff)
    {
        return uint16_t(sign | 0x7c00 | (mantissa ? 0x200 : 0));
    }
    int e = exponent - 127 + 15;
    if (e >= 0x1f)
    {
        return uint16_t(sign | 0x7c00);
    }
    uint32_t half;
    uint32_t rest;
    uint32_t middle;
    if (e <= 0)
    {
        if (e < -10)
        {
            return uint16_t(sign);
        }
        mantissa |= 0x800000;
        int shift = 14 - e; // units of 2^-24
        half = mantissa >> shift;
        rest = mantissa & ((1u << shift) - 1);
        middle = 1u << (shift - 1);
    }
    else
    {
        half = (uint32_t(e) << 10) | (mantissa >> 13);
        rest = mantissa & 0x1fff;
        middle = 0x1000;
    }
    if (rest > middle || (rest == middle && (half & 1)))
    {
        ++half; // a carry into the exponent is still the right value
    }
    return uint16_t(sign | half);
}

float
Bfloat16ToFloat(uint16_t value)
{
    uint32_t bits = uint32_t(value) << 16;
    float result;
    std::memcpy(&result, &bits, sizeof(result));
    return result;
}

uint16_t
FloatToBfloat16(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    if (std::isnan(value))
    {
        return uint16_t((bits >> 16) | 0x40);
    }
    bits += 0x7fff + ((bits >> 16) & 1);
    return uint16_t(bits >> 16);
}

bool
Combine(int dtype, int redop, char* acc, const char* in, uint64_t count, std::string* error)
{
    if (redop < kSum || redop > kAvg)
    {
        *error = "user-created operator " + std::to_string(redop);
        return false;
    }
#define EIDOLON_COMBINE(S, W, L, V) CombineAs<S, W, L, V>(redop, acc, in, count)
    auto run = [&]() -> bool
    {
        EIDOLON_FOR_DTYPE(dtype, EIDOLON_COMBINE)
        return true;
    };
#undef EIDOLON_COMBINE
    if (!run())
    {
        *error = "datatype " + std::to_string(dtype);
        return false;
    }
    return true;
}

void
Finish(int dtype, int redop, char* acc, uint64_t count, int nranks)
{
    if (redop != kAvg || nranks <= 1)
    {
        return;
    }
#define EIDOLON_DIVIDE(S, W, L, V) DivideAs<S, W, L, V>(acc, count, nranks)
    auto run = [&]() -> bool
    {
        EIDOLON_FOR_DTYPE(dtype, EIDOLON_DIVIDE)
        return true;
    };
#undef EIDOLON_DIVIDE
    run();
}

} // namespace eidolon::gpu
