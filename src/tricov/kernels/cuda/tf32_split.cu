// tricov: operands of float32 products on the TF32 tensor cores at float32 accuracy (3xTF32).
// A float x is split into hi = tf32(x) and lo = tf32(x - hi), both exact TF32 values (10
// explicit mantissa bits, float32's exponent range), so that x = hi + lo to about 2^-22 |x|.
// A product A B is then lo_A hi_B + hi_A lo_B + hi_A hi_B (the term lo_A lo_B, about 2^-22 of
// A B, is dropped): one TF32 GEMM of depth 3k on operands whose three parts are stacked along
// k, whose tensor cores read every part exactly (no rounding mode of theirs matters).
#include "common.cuh"
#include "tf32.cuh"

namespace tricov {

// Split the r x c column-major block S (leading dimension lds) into three parts of D, each
// r x c column-major with leading dimension ldd: part p, at D + p * step, is lo where bit p of
// lo_parts is set, else hi. lo of an infinite or NaN x is zero (hi carries it). Blocks along z
// take further pairs (S, D), sstep and dstep floats apart.
__global__ void tf32_split(int r, int c, const float* __restrict__ S, long long lds, float* D,
                          long long ldd, long long step, int lo_parts, long long sstep,
                          long long dstep)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= r || j >= c) return;
    const float x = S[blockIdx.z * sstep + i + j * lds];
    float hi, lo;
    tf32_parts(x, hi, lo);
    float* d = D + blockIdx.z * dstep + i + j * ldd;
    for (int p = 0; p < 3; ++p) d[p * step] = (lo_parts >> p) & 1 ? lo : hi;
}

}  // namespace tricov
