// Element-wise arithmetic of NCCL reductions on host copies of device buffers (data-exchange.h):
// sum, product, max, min and average over NCCL's integer and floating-point types. Half and
// bfloat16 are widened to float for each step and rounded back to nearest even.
#pragma once

#include <cstdint>
#include <string>

namespace eidolon::gpu
{

// acc[i] = acc[i] (op) in[i] for `count` elements of NCCL datatype `dtype` (ncclDataType_t)
// under `redop` (ncclRedOp_t; average sums here). False with `error` set for what is not computed:
// 8-bit floats and user-created (PreMulSum) operators.
bool Combine(int dtype, int redop, char* acc, const char* in, uint64_t count, std::string* error);
// The last step of a reduction over `nranks` contributions: average divides the sum.
void Finish(int dtype, int redop, char* acc, uint64_t count, int nranks);

// IEEE binary16 and bfloat16 conversions (round to nearest even).
float HalfToFloat(uint16_t half);
uint16_t FloatToHalf(float value);
float Bfloat16ToFloat(uint16_t value);
uint16_t FloatToBfloat16(float value);

} // namespace eidolon::gpu
