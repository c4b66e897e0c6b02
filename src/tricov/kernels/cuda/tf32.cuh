// tricov: float32 values rounded to TF32 (10 explicit mantissa bits, float32's exponent range),
// shared by the split-TF32 products' kernels (tf32_split.cu, tf32_narrow.cu).
#pragma once

namespace tricov {

// x rounded to the nearest TF32 value (ties to even), as float32 bits with the 13 low bits
// zero; where rounding up would overflow, x truncated; infinities and NaN unchanged.
__device__ __forceinline__ float tf32_round(float x)
{
    unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    const unsigned r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    u = (r & 0x7f800000u) == 0x7f800000u ? u & 0xffffe000u : r;
    return __uint_as_float(u);
}

// The two TF32 parts of x: hi = tf32(x) and lo = tf32(x - hi), with x = hi + lo to about
// 2^-22 |x|; lo of an infinite or NaN x is zero (hi carries it).
__device__ __forceinline__ void tf32_parts(float x, float& hi, float& lo)
{
    hi = tf32_round(x);
    lo = isfinite(x) ? tf32_round(x - hi) : 0.0f;
}

}  // namespace tricov
