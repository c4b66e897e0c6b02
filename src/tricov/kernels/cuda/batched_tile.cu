// tricov: shared-memory tile kernels for the leaves of the batched recursions beyond the
// register kernels (real types, orders up to 256).
//
// The register kernels of batched_small.cu stop at order 32. Above that, a recursion that
// stops at order 32 moves every block of its output through memory once per level (cuBLAS
// batched GEMM in the middle, a leaf kernel at the bottom). These kernels take larger leaves
// (TRMM up to 256, LAUUM 64, HERK any order) in one launch: one block of 256 threads computes
// one tile of the output of one member,
//
//   TRMM   B <- alpha L B        L lower n x n (unit or not), B n x m: a tile is all n rows of
//                                B and TC of its columns (the block that owns them reads them)
//   HERK   lower triangle of C <- alpha A A^T + beta C   (A n x k): a tile is a 64 x 64
//                                block of C's lower triangle (beta = 0: C is not read)
//   LAUUM  L <- L^T L (lower, n <= 64): one tile, the whole triangle
//
// as a sum over k of rank-KC updates Out += X[:, k] Y[k, :], X and Y staged through shared
// memory chunk by chunk and the tile accumulated in registers, then written once (so TRMM and
// LAUUM are safe in place: a block writes only what it alone read, after reading all of it).
// Float64 multiplies on the tensor cores (mma m8n8k4, FP64: the same rounding as FMAs), other
// types by FMAs; each warp owns a 32 x 16 piece of the tile either way.
//
// Measured (H200, batch 10240, float64; benchmarks/gpu_batched_tile_probe_h200.txt): HERK and
// LAUUM leaves of 64 beat the register leaves under cuBLAS; TRMM tiles do not (a tile of TC
// columns re-reads the whole triangle, and the load-sync-compute loop of small chunks is bound
// by memory latency at 2 blocks per SM): the default policy keeps TRMM on the register leaves.
// Next steps: double-buffered staging (cp.async), wider column tiles, fewer registers.
//
// Operands are read as in batched_small.cu: the canonical element (i, j) of an operand is
// element (i, j) of its member's column-major memory, or (j, i) if transposed, after an
// optional reversal of i (and j), so every variant (C order, uplo, side, trans) runs on the
// same canonical operation. Elements outside the referenced triangle are never read (they may
// hold anything), the unit diagonal is not read, and outside the referenced triangle of the
// output nothing is written. With `skip`, members whose info is nonzero are left alone.
#include "common.cuh"

namespace tricov {
namespace tile {

enum Mode { TRMM = 0, HERK = 1, LAUUM = 2 };
enum Flags { TRANSPOSED = 1, REV_ROWS = 4, REV_COLS = 8 };
// Which part of a staged operand V (element (r, k)) is referenced: all of it, its lower
// triangle (k <= r; unit: k < r, and 1 on the diagonal) or its upper triangle (k >= r).
enum Mask { ALL = 0, LOWER = 1, LOWER_UNIT = 2, UPPER = 3 };

constexpr int THREADS = 256;
constexpr int KC = 16;  // k per chunk

// One member's canonical nr x nc operand.
template <typename T> struct View {
    T* p;
    long long ld;
    int flags, nr, nc;

    __device__ __forceinline__ long long at(int i, int j) const {
        const int r = (flags & REV_ROWS) ? nr - 1 - i : i;
        const int c = (flags & REV_COLS) ? nc - 1 - j : j;
        return (flags & TRANSPOSED) ? c + (long long)r * ld : r + (long long)c * ld;
    }
    // The transpose, as a view of the same memory.
    __device__ __forceinline__ View t() const {
        const int f = (flags ^ TRANSPOSED) & TRANSPOSED;
        const int rev = ((flags & REV_ROWS) ? REV_COLS : 0) | ((flags & REV_COLS) ? REV_ROWS : 0);
        return View{p, ld, f | rev, nc, nr};
    }
};

template <typename T>
__device__ __forceinline__ View<T> member_view(long long k, const long long* ptrs, long long base,
                                               long long stride, long long offset, long long ld,
                                               int flags, int nr, int nc) {
    const long long at = (ptrs ? ptrs[k] : base + k * stride) + offset;
    return View<T>{reinterpret_cast<T*>(at), ld, flags, nr, nc};
}

// s[kk * lds + r] <- V(r0 + r, k0 + kk) for r < R, kk < KC (zero outside the referenced part,
// outside rows [0, rows) and columns [0, cols)). Threads walk the operand's contiguous index.
template <typename T, int R>
__device__ __forceinline__ void stage(T* s, int lds, const View<T>& v, int r0, int rows, int k0,
                                      int cols, int mask) {
    const bool by_row = !(v.flags & TRANSPOSED);  // memory-contiguous along r
#pragma unroll 4
    for (int e = threadIdx.x; e < R * KC; e += THREADS) {
        const int r = by_row ? e % R : e / KC;
        const int kk = by_row ? e / R : e % KC;
        const int i = r0 + r, k = k0 + kk;
        T x = T(0);
        if (i < rows && k < cols) {
            if (mask == ALL || (mask == LOWER && k <= i) || (mask == LOWER_UNIT && k < i) ||
                (mask == UPPER && k >= i))
                x = v.p[v.at(i, k)];
            else if (mask == LOWER_UNIT && k == i)
                x = T(1);
        }
        s[kk * lds + r] = x;
    }
}

// Whether the rows [r, r + rn) of X can have a nonzero in columns [k, k + kn).
__device__ __forceinline__ bool live(int mask, int r, int rn, int k, int kn) {
    if (mask == LOWER || mask == LOWER_UNIT) return k <= r + rn - 1;
    if (mask == UPPER) return k + kn - 1 >= r;
    return true;
}

// ----------------------------------------------------------------------- warp products
// A warp's 32 x 16 piece of the tile, rows wr.., columns wc.., accumulated over one chunk.
// FMA version: lane (g, q) = (lane / 4, lane % 4) owns rows wr + 4g .. + 3, columns
// wc + 4q .. + 3.
template <typename T> struct FmaAcc {
    T c[4][4];

    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 4; ++b) c[a][b] = T(0);
    }
    __device__ __forceinline__ void chunk(const T* xs, int ldx, const T* ys, int ldy, int wr,
                                          int wc, int mask, int k0) {
        const int lane = threadIdx.x & 31, r = wr + 4 * (lane >> 2), q = wc + 4 * (lane & 3);
#pragma unroll 4
        for (int kk = 0; kk < KC; ++kk) {
            if (!live(mask, wr, 32, k0 + kk, 1)) continue;
            T x[4], y[4];
#pragma unroll
            for (int a = 0; a < 4; ++a) { x[a] = xs[kk * ldx + r + a]; y[a] = ys[kk * ldy + q + a]; }
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) c[a][b] += x[a] * y[b];
        }
    }
    // Visit every owned element: f(row in tile, column in tile, value).
    template <typename F> __device__ __forceinline__ void each(int wr, int wc, F f) const {
        const int lane = threadIdx.x & 31, r = wr + 4 * (lane >> 2), q = wc + 4 * (lane & 3);
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 4; ++b) f(r + a, q + b, c[a][b]);
    }
};

// Tensor-core version (double): 4 x 2 blocks of 8 x 8, mma.m8n8k4 (A row g, column q; B row
// q, column g; C row g, columns 2q, 2q + 1 with g = lane / 4, q = lane % 4).
struct MmaAcc {
    double c[4][2][2];

    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 2; ++b) c[a][b][0] = c[a][b][1] = 0.0;
    }
    __device__ __forceinline__ void chunk(const double* xs, int ldx, const double* ys, int ldy,
                                          int wr, int wc, int mask, int k0) {
        const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
        for (int kk = 0; kk < KC; kk += 4) {
            double y[2];
#pragma unroll
            for (int b = 0; b < 2; ++b) y[b] = ys[(kk + q) * ldy + wc + 8 * b + g];
#pragma unroll
            for (int a = 0; a < 4; ++a) {
                if (!live(mask, wr + 8 * a, 8, k0 + kk, 4)) continue;
                const double x = xs[(kk + q) * ldx + wr + 8 * a + g];
#pragma unroll
                for (int b = 0; b < 2; ++b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
                    asm volatile(
                        "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
                        "{%0, %1};\n"
                        : "+d"(c[a][b][0]), "+d"(c[a][b][1])
                        : "d"(x), "d"(y[b]));
#endif
                }
            }
        }
    }
    template <typename F> __device__ __forceinline__ void each(int wr, int wc, F f) const {
        const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                f(wr + 8 * a + g, wc + 8 * b + 2 * q, c[a][b][0]);
                f(wr + 8 * a + g, wc + 8 * b + 2 * q + 1, c[a][b][1]);
            }
    }
};

template <typename T, bool MMA> struct AccOf { using type = FmaAcc<T>; };
template <> struct AccOf<double, true> { using type = MmaAcc; };

// ---------------------------------------------------------------------------- the kernel
// Members [first, first + count), `tiles` blocks each (block b: member first + b / tiles,
// tile b % tiles). TR x TC tile, TR * TC = 8 warps of 32 x 16. Operands: x (TRMM: L; HERK:
// A; LAUUM: L) and o (TRMM: B; HERK: C; LAUUM: L), as in batched_small.cu.
template <typename T, int MODE, int TR, bool MMA>
__device__ __forceinline__ void run(long long first, long long count, int tiles, int n, int m,
                                    int kdim, int unit, T alpha, T beta, const long long* xp,
                                    long long xb, long long xs_, long long xo, long long xld,
                                    int xf, const long long* op, long long ob, long long os,
                                    long long oo, long long old, int of,
                                    const long long* info, int skip) {
    constexpr int TC = 4096 / TR;
    constexpr int LDX = TR + 8, LDY = TC + 8;  // rows of 8 mod 16 doubles: no bank conflicts
    __shared__ T xs[KC * LDX];
    __shared__ T ys[KC * LDY];
    const long long g = first + blockIdx.x / tiles;
    const int tile = blockIdx.x % tiles;
    if (blockIdx.x / tiles >= count) return;
    if (skip && info && info[g] != 0) return;

    // The output tile [i0, i0 + TR) x [j0, j0 + TC), and what X, Y are.
    int i0 = 0, j0 = 0, kn = 0, xmask = ALL, ymask = ALL, rows = n, cols = 0;
    View<T> o, x, y;
    if (MODE == TRMM) {
        o = member_view<T>(g, op, ob, os, oo, old, of, n, m);
        x = member_view<T>(g, xp, xb, xs_, xo, xld, xf, n, n);
        y = o.t();  // Y(k, j) = B(k, j): staged as rows j of B^T
        j0 = tile * TC;
        kn = n;
        cols = m;
        xmask = unit ? LOWER_UNIT : LOWER;
    } else if (MODE == HERK) {
        o = member_view<T>(g, op, ob, os, oo, old, of, n, n);
        x = member_view<T>(g, xp, xb, xs_, xo, xld, xf, n, kdim);
        y = x;  // Y(k, j) = A(j, k)
        int I = (int)((sqrtf(8.0f * tile + 1.0f) - 1.0f) * 0.5f);
        while ((I + 1) * (I + 2) / 2 <= tile) ++I;
        while (I * (I + 1) / 2 > tile) --I;
        i0 = I * TR;
        j0 = (tile - I * (I + 1) / 2) * TC;
        kn = kdim;
        cols = n;
    } else {  // LAUUM: X(i, k) = L(k, i) (k >= i), Y(k, j) = L(k, j) (k >= j)
        o = member_view<T>(g, op, ob, os, oo, old, of, n, n);
        x = o.t();
        y = x;
        kn = n;
        cols = n;
        xmask = ymask = UPPER;
    }
    const int warp = threadIdx.x >> 5;
    const int wr = (warp % (TR / 32)) * 32, wc = (warp / (TR / 32)) * 16;
    typename AccOf<T, MMA>::type acc;
    acc.zero();
    // LAUUM: chunks below the tile's... every k >= the row matters; TRMM: k <= the last row.
    for (int k0 = 0; k0 < kn; k0 += KC) {
        stage<T, TR>(xs, LDX, x, i0, rows, k0, kn, xmask);
        stage<T, TC>(ys, LDY, y, j0, cols, k0, kn, ymask);
        __syncthreads();
        acc.chunk(xs, LDX, ys, LDY, wr, wc, xmask, k0);
        __syncthreads();
    }
    const bool lower_only = MODE != TRMM;
    const bool read_c = MODE == HERK && beta != T(0);
    acc.each(wr, wc, [&](int r, int c, T v) {
        const int i = i0 + r, j = j0 + c;
        if (i >= n || j >= cols || (lower_only && j > i)) return;
        T* at = o.p + o.at(i, j);
        *at = read_c ? alpha * v + beta * *at : alpha * v;
    });
}

}  // namespace tile
}  // namespace tricov

// A kernel with C linkage (cached on disk by CuPy, see kernels/nvrtc.py): kernels/__init__.py
// names it and appends TRICOV_BATCHED_TILE(name, T, MODE, TR, MMA) to this file.
#define TRICOV_BATCHED_TILE(NAME, T, MODE, TR, MMA)                                            \
    extern "C" __global__ void __launch_bounds__(tricov::tile::THREADS)                       \
    NAME(long long first, long long count, int tiles, int n, int m, int kdim, int unit,       \
         T alpha, T beta, const long long* xp, long long xb, long long xs, long long xo,       \
         long long xld, int xf, const long long* op, long long ob, long long os, long long oo, \
         long long old, int of, const long long* info, int skip)                               \
    {                                                                                          \
        tricov::tile::run<T, MODE, TR, MMA>(first, count, tiles, n, m, kdim, unit, alpha,     \
                                            beta, xp, xb, xs, xo, xld, xf, op, ob, os, oo,     \
                                            old, of, info, skip);                              \
    }
