// tricov: float32 GEMMs with a small output against their depth, D <- alpha op(A) op(B) +
// beta C (m x n, depth k), on the FP64 tensor cores: a float32 product is exact in float64,
// and the sums are float64's, so the result is float32's rounding of a sum more accurate than
// SGEMM's. A narrow TRSM's lower levels and leaves have these shapes (512 x 256 x 512: C is
// 128 tiles of 32 x 32), where cuBLAS's SGEMM splits the depth over a few blocks and sums the
// parts in a second kernel. Here a block owns one 32 x 32 tile of D: its four warps take a
// quarter of the depth of every slab each and add their parts in shared memory at the end.
#include "batched_tile.cu"  // src/tricov/kernels/cuda: copy_async, copies_sent, copies_done

namespace tricov {

constexpr int SG_TILE = 32, SG_DEPTH = 32, SG_STAGES = 4, SG_THREADS = 128;
// A slab's row of 32 floats padded to 40: the 32 lanes of an mma fragment's read (rows q,
// columns g of a slab, g < 8, q < 4) fall in distinct banks.
constexpr int SG_LD = SG_TILE + 8;
constexpr int SG_STAGE = 2 * SG_DEPTH * SG_LD;  // floats of one stage: A's slab, then B's
constexpr int SG_PER = SG_TILE * SG_DEPTH / SG_THREADS;  // elements of each a thread copies
constexpr int SG_PART = SG_TILE + 1;             // a column of a warp's part in shared memory

__host__ __device__ constexpr int small_gemm_smem()
{
    return SG_STAGES * SG_STAGE * 4 > 4 * SG_TILE * SG_PART * 8 ? SG_STAGES * SG_STAGE * 4
                                                                 : 4 * SG_TILE * SG_PART * 8;
}

using tile::copies_done;
using tile::copies_sent;
using tile::copy_async;

// Stage the slab of depth [k0, k0 + SG_DEPTH) of the block's tile: As[p][i] = op(A)(i0 + i,
// k0 + p) and Bs[p][j] = op(B)(k0 + p, j0 + j), zero outside the matrices. Consecutive threads
// take consecutive addresses of each operand's memory, transposed or not.
__device__ __forceinline__ void stage_slab(float* As, float* Bs, const float* A, long long lda,
                                           int ta, const float* B, long long ldb, int tb, int m,
                                           int n, int k, int i0, int j0, int k0)
{
#pragma unroll
    for (int q = 0; q < SG_PER; ++q) {
        const int e = threadIdx.x + q * SG_THREADS, fast = e % 32, slow = e / 32;
        const int i = ta ? slow : fast, p = ta ? fast : slow;
        const bool a_ok = i0 + i < m && k0 + p < k;
        const float* a = ta ? A + (k0 + p) + (long long)(i0 + i) * lda
                            : A + (i0 + i) + (long long)(k0 + p) * lda;
        copy_async(As + p * SG_LD + i, a_ok ? a : A, a_ok);
        const int j = tb ? fast : slow, r = tb ? slow : fast;
        const bool b_ok = k0 + r < k && j0 + j < n;
        const float* b = tb ? B + (j0 + j) + (long long)(k0 + r) * ldb
                            : B + (k0 + r) + (long long)(j0 + j) * ldb;
        copy_async(Bs + r * SG_LD + j, b_ok ? b : B, b_ok);
    }
    copies_sent();
}

// The same slab by 16-byte copies, where neither operand is transposed, every row count and
// leading dimension is a multiple of 4 and A and B are 16-byte aligned: As[p][i] as above, but
// Bs[j][r] (rows of SG_LD_B floats), whose four consecutive depths are one copy.
constexpr int SG_LD_B = SG_DEPTH + 4;
__device__ __forceinline__ void copy_async16(float* dst, const float* src, bool ok)
{
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void stage_slab16(float* As, float* Bs, const float* A, long long lda,
                                             const float* B, long long ldb, int m, int n, int k,
                                             int i0, int j0, int k0)
{
#pragma unroll
    for (int q = 0; q < SG_PER / 4; ++q) {
        const int e = threadIdx.x + q * SG_THREADS, fast = 4 * (e % 8), slow = e / 8;
        const bool a_ok = i0 + fast < m && k0 + slow < k;
        copy_async16(As + slow * SG_LD + fast,
                     a_ok ? A + (i0 + fast) + (long long)(k0 + slow) * lda : A, a_ok);
        const bool b_ok = k0 + fast < k && j0 + slow < n;
        copy_async16(Bs + slow * SG_LD_B + fast,
                     b_ok ? B + (k0 + fast) + (long long)(j0 + slow) * ldb : B, b_ok);
    }
    copies_sent();
}

// Stage a slab into the stage at st if `any` (else only commit an empty group, so that every
// iteration counts one group).
template <bool VEC>
__device__ __forceinline__ void stage(float* st, bool any, const float* A, long long lda, int ta,
                                      const float* B, long long ldb, int tb, int m, int n, int k,
                                      int i0, int j0, int k0)
{
    if (any && VEC)
        stage_slab16(st, st + SG_DEPTH * SG_LD, A, lda, B, ldb, m, n, k, i0, j0, k0);
    else if (any)
        stage_slab(st, st + SG_DEPTH * SG_LD, A, lda, ta, B, ldb, tb, m, n, k, i0, j0, k0);
    else
        copies_sent();
}

// ta, tb: whether op(A), op(B) transpose (float32 has no conjugate). C and D column-major (D
// may be C); C is not read where beta is zero. Grid: ceil(m / 32) x ceil(n / 32) blocks of
// SG_THREADS threads, small_gemm_smem() bytes of dynamic shared memory. sm_90 (mma.m16n8k4
// in float64).
template <bool VEC>
__global__ void __launch_bounds__(SG_THREADS)
small_gemm(int m, int n, int k, float alpha, const float* __restrict__ A, long long lda,
           int ta, const float* __restrict__ B, long long ldb, int tb, float beta,
           const float* C, long long ldc, float* D, long long ldd)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float smem[];
    const int i0 = blockIdx.x * SG_TILE, j0 = blockIdx.y * SG_TILE;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    // Warp w's part of the tile: rows 16 mb + (g, g + 8), columns 8 nb + 2q + (0, 1), from
    // depths 8 w .. 8 w + 7 of every slab (two mma.m16n8k4 steps).
    double acc[2][4][4] = {};
    const int slabs = (k + SG_DEPTH - 1) / SG_DEPTH;
#pragma unroll
    for (int s = 0; s < SG_STAGES - 1; ++s) {
        stage<VEC>(smem + s * SG_STAGE, s < slabs, A, lda, ta, B, ldb, tb, m, n, k, i0, j0,
                   s * SG_DEPTH);
    }
    for (int s = 0; s < slabs; ++s) {
        copies_done<SG_STAGES - 2>();
        __syncthreads();  // slab s is in; every warp is done with slab s - 1's stage
        const int next = s + SG_STAGES - 1;
        stage<VEC>(smem + (next % SG_STAGES) * SG_STAGE, next < slabs, A, lda, ta, B, ldb, tb,
                   m, n, k, i0, j0, next * SG_DEPTH);
        const float* As = smem + (s % SG_STAGES) * SG_STAGE;
        const float* Bs = As + SG_DEPTH * SG_LD;
#pragma unroll
        for (int step = 0; step < 2; ++step) {
            const int p = 8 * warp + 4 * step + q;
            double a[2][2], b[4];
#pragma unroll
            for (int mb = 0; mb < 2; ++mb) {
                a[mb][0] = As[p * SG_LD + 16 * mb + g];
                a[mb][1] = As[p * SG_LD + 16 * mb + g + 8];
            }
#pragma unroll
            for (int nb = 0; nb < 4; ++nb)
                b[nb] = VEC ? Bs[(8 * nb + g) * SG_LD_B + p] : Bs[p * SG_LD + 8 * nb + g];
#pragma unroll
            for (int mb = 0; mb < 2; ++mb)
#pragma unroll
                for (int nb = 0; nb < 4; ++nb)
                    asm volatile(
                        "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                        "{%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                        : "+d"(acc[mb][nb][0]), "+d"(acc[mb][nb][1]), "+d"(acc[mb][nb][2]),
                          "+d"(acc[mb][nb][3])
                        : "d"(a[mb][0]), "d"(a[mb][1]), "d"(b[nb]));
        }
    }
    copies_done<0>();
    __syncthreads();
    // The warps' parts, added in a fixed order (the same result on every run).
    double* part = reinterpret_cast<double*>(smem);  // [warp][column][row]
#pragma unroll
    for (int mb = 0; mb < 2; ++mb)
#pragma unroll
        for (int nb = 0; nb < 4; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = 16 * mb + g + 8 * (e / 2), c = 8 * nb + 2 * q + e % 2;
                part[(warp * SG_TILE + c) * SG_PART + r] = acc[mb][nb][e];
            }
    __syncthreads();
    for (int e = threadIdx.x; e < SG_TILE * SG_TILE; e += SG_THREADS) {
        const int r = e % SG_TILE, c = e / SG_TILE, i = i0 + r, j = j0 + c;
        if (i >= m || j >= n) continue;
        double sum = 0.0;
#pragma unroll
        for (int w = 0; w < SG_THREADS / 32; ++w) sum += part[(w * SG_TILE + c) * SG_PART + r];
        double out = double(alpha) * sum;
        if (beta != 0.0f) out += double(beta) * double(C[i + (long long)j * ldc]);
        D[i + (long long)j * ldd] = float(out);
    }
#endif
}

}  // namespace tricov
