// tricov: shared-memory tile kernels for the leaves of the batched recursions beyond the
// register kernels (real types).
//
// The register kernels of batched_small.cu stop at order 32. Above that, a recursion that
// stops at order 32 moves every block of its output through memory once per level (cuBLAS
// batched GEMM in the middle, a leaf kernel at the bottom). These kernels take larger leaves
// (TRMM and HERK of any order, LAUUM up to 64) in one launch; one block of 256 threads (128
// for the tensor-core HERK and float32 TRMM, see WN below)
// computes 64 x 64 tiles of the output of one member (or, for orders up to 32, where the
// register kernels' shuffles cost more than the data they move, one block of 64 threads
// 32 x 32 tiles; for float64 TRMM of outputs of at least 128 x 128 on the tensor cores, one
// block of 256 threads 128 x 128 tiles: TILE below, kernels/__init__.py's tile_order),
//
//   TRMM   B <- alpha L B        L lower n x n (unit or not), B n x m: a block owns TILE
//                                columns of B and computes their row tiles from the last up
//                                (a row tile needs only the rows above it, still unwritten)
//   HERK   lower triangle of C <- alpha A A^T + beta C   (A n x k): a block computes one
//                                tile of C's lower triangle (beta = 0: C is not read)
//   LAUUM  L <- L^T L (lower, n <= TILE): one tile, the whole triangle
//
// as a sum over k of rank-16 updates Out += X[:, k] Y[k, :]. X and Y reach shared memory by
// asynchronous copies (cp.async) into a ring of chunks, all but one in flight while one is
// multiplied; a tile is accumulated in registers and written once, after everything it
// reads has been read (so TRMM and LAUUM are safe in place). Where X and Y are the same
// elements (LAUUM, HERK's diagonal tiles) one chunk serves both. Products run on the FP64
// tensor cores on sm_90 (mma m16n8k4: for float64 the same rounding as FMAs; float32
// elements are widened, so their products are exact and their sums double, rounded once at
// the store), elsewhere by FMAs; each warp owns a 32 x 16 piece of the tile (32 x 32 where
// kernels/__init__.py's tile_groups says so: WN), and
// skips the chunks whose products with it are all zero. (On one H100, batch 10240, order 64:
// float32 SYRK took 0.302 ms on the tensor cores against 0.366 by FMAs, which had kept the
// issue slots 78% busy, LAUUM 0.179 against 0.243; skipping the zero chunks took float64
// LAUUM from 0.190 to 0.168 ms.)
//
// Memory is moved in pairs of neighbouring elements where it can be (16-byte copies of
// doubles, bypassing L1, and 16-byte stores): an operand whose memory runs along r in aligned
// pairs is staged so, and an output whose rows have unit stride is stored so; other layouts
// move single elements. On one H100 (batch 10240, float64, C order; an A/B of the two stagings,
// which benchmarks/gpu_batched_ab.py source --file batched_tile.cu repeats) that took TRMM of
// order 64 from 0.417 to 0.325 ms (torch.matmul 0.340) and LAUUM 64 from 0.241 to 0.223 ms
// (0.229); Nsight Compute had put the kernels' limit in the L1 and L2 request rates of 8-byte
// accesses (TRMM: L2 80% busy, DRAM 53%; now 70% and 67%).
// Benchmarks: benchmarks/gpu_batched_h100.txt.

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

constexpr int KC = 16;  // k per chunk

// The shape of the kernels of elements T whose output tiles are TILE x TILE (64, 32 for
// orders up to 32, or 128): a warp per 32 x 8 WN piece of the tile (WN from tile_groups), a
// ring of STAGES chunks, STAGES - 1 in flight (4 for tiles of 64 and 128; 2 for tiles of 32,
// whose k is mostly 32: both chunks at once, and more blocks per multiprocessor), and shared
// rows of LDS elements, 8 words (of 4 bytes) more than TILE: consecutive rows k start 8 banks
// apart, so the elements that one phase of a tensor-core fragment load reads (rows k .. k +
// 3, 4 consecutive r of double or 8 of float) fall in 32 different banks. (Rows of 16 words
// more, as before, put the fragments' rows k and k + 2 in the same banks: on an H100, float64
// SYRK of order 64 went from 0.430 to 0.360 ms with 8, LAUUM from 0.214 to 0.190.)
template <typename T, int TILE, int WN> struct Shape {
    static_assert(TILE == 32 || TILE == 64 || TILE == 128, "tiles of 32, 64 or 128");
    static constexpr int THREADS = TILE * TILE / (8 * WN);
    static constexpr int LDS = TILE + 32 / (int)sizeof(T);
    static constexpr int STAGES = TILE == 32 ? 2 : 4;
    // Elements of the ring (dynamic shared memory: RING * sizeof(T) bytes from the launch),
    // which also holds HERK's staged C tile.
    static constexpr int RING = STAGES * 2 * KC * LDS;
    static_assert((TILE - 1) * LDS + TILE <= RING, "a staged C tile fits the ring");
};

// One member's canonical nr x nc operand: element (i, j) at p[i * rs + j * cs] (the strides,
// which may be negative, carry the transposition and reversals of the variant).
template <typename T> struct View {
    T* p;
    long long rs, cs;

    __device__ __forceinline__ T* at(int i, int j) const { return p + i * rs + j * cs; }
    // The transpose, as a view of the same memory.
    __device__ __forceinline__ View t() const { return View{p, cs, rs}; }
};

template <typename T>
__device__ __forceinline__ View<T> member_view(long long k, const long long* ptrs, long long base,
                                               long long stride, long long offset, long long ld,
                                               int flags, int nr, int nc) {
    T* p = reinterpret_cast<T*>((ptrs ? ptrs[k] : base + k * stride) + offset);
    long long rs = 1, cs = ld;
    if (flags & TRANSPOSED) rs = ld, cs = 1;
    if (flags & REV_ROWS) p += (nr - 1) * rs, rs = -rs;
    if (flags & REV_COLS) p += (nc - 1) * cs, cs = -cs;
    return View<T>{p, rs, cs};
}

// Copy one element from global to shared memory without waiting (cp.async; zero-filled when
// !ok, and then `src` is not read), so the copies of the next chunk overlap the products of
// this one. Completed by copies_done.
template <typename T>
__device__ __forceinline__ void copy_async(T* dst, const T* src, bool ok) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(at), "l"(src),
                 "n"(sizeof(T)), "r"(ok ? (int)sizeof(T) : 0));
#else
    *dst = ok ? *src : T(0);
#endif
}

// Two elements adjacent in memory, as one vector (16 bytes for double, 8 for float).
template <typename T> struct PairOf;
template <> struct PairOf<double> { using type = double2; };
template <> struct PairOf<float> { using type = float2; };

// Whether element pairs (2 m, 2 m + 1) of a run of unit stride starting at `p` are aligned
// for vector access: `p` is, and so is every run (`other`, the stride between runs, is even).
template <typename T>
__device__ __forceinline__ bool pairs_aligned(const T* p, long long other) {
    return reinterpret_cast<unsigned long long>(p) % (2 * sizeof(T)) == 0 && other % 2 == 0;
}

// copy_async of the two elements src[0], src[1] (aligned as a pair) into dst[0], dst[1]: one
// copy of 16 bytes (double, bypassing L1) or 8 (float).
template <typename T>
__device__ __forceinline__ void copy_async_pair(T* dst, const T* src, bool ok) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if (sizeof(T) == 8)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(at), "l"(src),
                     "r"(ok ? 16 : 0));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(at), "l"(src),
                     "r"(ok ? 8 : 0));
#else
    dst[0] = ok ? src[0] : T(0);
    dst[1] = ok ? src[1] : T(0);
#endif
}

// Close the group of copies this thread issued since the last call.
__device__ __forceinline__ void copies_sent() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Wait until at most `PENDING` groups of this thread's copies are in flight (a barrier must
// follow before other threads read them).
template <int PENDING> __device__ __forceinline__ void copies_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

// s[kk * LDS + r] <- V(r0 + r, k0 + kk) for r < TILE, kk < KC (zero outside the referenced
// part, outside rows [0, rows) and columns [0, cols)), by asynchronous copies. Where memory
// runs along r, ascending, in aligned pairs, each thread copies pairs (r, r + 1) (one vector
// copy where both elements are read alike) and a warp covers 64 rows; descending, single
// elements, a warp 32 rows. Otherwise (memory along k, or along r ascending but not in
// aligned pairs: taking those by rows too spilled registers) each run of 4 threads reads 4
// consecutive k (a 32-byte sector of doubles where memory runs along k) and a warp covers 8
// rows, so the stores to shared memory conflict at most twice.
//
// Each thread copies a fixed number of elements at fixed places (loops of constant trip
// count, fully unrolled), walking one source pointer by a fixed stride, and which elements
// are referenced (MASK, known at compile time) is a bound on k - i, so that a copy takes a
// few instructions without branches. The kernels issue most of their instructions here:
// loops over a thread-dependent range that branched per element over a run-time mask and
// computed each address from scratch took float64 TRMM of order 128 to 1.03 G instructions
// on an H100 (Nsight Compute: the ALU pipe 53% busy, the tensor pipe 27%).
//
// INSIDE: the chunk lies wholly inside the operand and its referenced part, away from a unit
// diagonal (stage() tests that once per chunk), so no element is tested. Nsight Compute had
// found the tensor-core TRMM on tiles of 128 latency-bound (one instruction issued every 3.8
// cycles per scheduler, a third of the stalls on fixed-latency dependencies); untested copies
// took it from 6.76 to 6.61 ms at order 256 (float64, batch 10240, one H100, A/B in one run by
// benchmarks/gpu_batched_ab.py source), float32 TRMM 128 / 256 from 1.035 / 6.61 to 0.964 /
// 6.31 ms and LAUUM 256 from 3.58 to 3.42; no kernel lost more than 2% (float64 TRMM on tiles
// of 64, which took them at the same time within 1% but spilled, goes without: see run()).
template <typename T, int TILE, int WN, int MASK, bool INSIDE>
__device__ __forceinline__ void stage_chunk(T* s, const View<T>& v, int r0, int rows, int k0,
                                            int cols) {
    constexpr int THREADS = Shape<T, TILE, WN>::THREADS, LDS = Shape<T, TILE, WN>::LDS;
    static_assert(THREADS % TILE == 0 && TILE * KC % (2 * THREADS) == 0, "whole steps");
    const int tid = threadIdx.x;
    // V(r0 + r, k0 + kk) is base[r * rs + kk * cs]; it is referenced where r < rr, kk < kr and
    // (for a triangle) k - i = kk + dk - r is in the triangle.
    const T* const base = v.p + (r0 * v.rs + k0 * v.cs);
    const int rr = rows - r0, kr = cols - k0, dk = k0 - r0;
    auto in = [&](int r, int kk) {
        const int d = kk + dk - r;
        return INSIDE || (r < rr && kk < kr &&
                          (MASK == ALL || (MASK == UPPER ? d >= 0 : MASK == LOWER ? d <= 0
                                                                                  : d < 0)));
    };
    // One element from src; a unit diagonal element is written as 1 (no copy).
    auto one = [&](int r, int kk, const T* src) {
        T* dst = s + kk * LDS + r;
        if (MASK == LOWER_UNIT && !INSIDE && kk + dk == r && r < rr && kk < kr) {
            *dst = T(1);
        } else {
            const bool ok = in(r, kk);
            copy_async(dst, ok ? src : v.p, ok);
        }
    };
    if (v.rs == 1 && pairs_aligned(v.p, v.cs)) {
        constexpr int HALF = TILE / 2, STEP = THREADS / HALF;
        const int r = 2 * (tid % HALF), kk0 = tid / HALF;
        const long long step = STEP * v.cs;
        const T* src = base + (r + kk0 * v.cs);
#pragma unroll
        for (int t = 0; t < KC / STEP; ++t, src += step) {
            const int kk = kk0 + t * STEP;
            const bool in0 = in(r, kk);
            if (in0 == in(r + 1, kk) &&
                !(MASK == LOWER_UNIT && !INSIDE && (kk + dk == r || kk + dk == r + 1))) {
                copy_async_pair(s + kk * LDS + r, in0 ? src : v.p, in0);
            } else {
                one(r, kk, src);
                one(r + 1, kk, src + 1);
            }
        }
        return;
    }
    if (v.rs == -1) {  // memory runs along r, descending
        constexpr int STEP = THREADS / TILE;
        const int r = tid % TILE, kk0 = tid / TILE;
        const long long step = STEP * v.cs;
        const T* src = base + (kk0 * v.cs - r);
#pragma unroll
        for (int t = 0; t < KC / STEP; ++t, src += step) one(r, kk0 + t * STEP, src);
        return;
    }
    // Runs of 4 threads along k, ROWS rows per pass, PASSES passes per 4 k.
    constexpr int ROWS = THREADS / 4, PASSES = TILE / ROWS;
    const int r1 = tid >> 2, kk1 = tid & 3;
    const long long rstep = ROWS * v.rs, kstep = 4 * v.cs;
    const T* const src1 = base + (r1 * v.rs + kk1 * v.cs);
#pragma unroll
    for (int p = 0; p < PASSES; ++p) {
        const T* src = src1 + p * rstep;
#pragma unroll
        for (int q = 0; q < KC / 4; ++q, src += kstep) one(r1 + p * ROWS, kk1 + 4 * q, src);
    }
}

// UNTESTED: whether chunks inside take the copies without tests (a second copy of the code).
template <typename T, int TILE, int WN, int MASK, bool UNTESTED>
__device__ __forceinline__ void stage(T* s, const View<T>& v, int r0, int rows, int k0, int cols) {
    const int dk = k0 - r0;
    const bool inside = rows - r0 >= TILE && cols - k0 >= KC &&
                        (MASK == ALL || (MASK == UPPER ? dk >= TILE - 1
                                         : MASK == LOWER ? dk + KC - 1 <= 0 : dk + KC - 1 < 0));
    if constexpr (UNTESTED) {
        if (inside) {
            stage_chunk<T, TILE, WN, MASK, true>(s, v, r0, rows, k0, cols);
            return;
        }
    }
    stage_chunk<T, TILE, WN, MASK, false>(s, v, r0, rows, k0, cols);
}

// ----------------------------------------------------------------------- warp products
// A warp's piece of the tile (32 x 16 here; 32 x 8 WN for MmaAcc), rows wr.., columns wc..,
// accumulated over one chunk.
// FMA version: lane (g, q) = (lane / 4, lane % 4) owns
// rows wr + 4g .. + 3, columns wc + 4q .. + 3.
template <typename T, int LDS> struct FmaAcc {
    T c[4][4];

    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 4; ++b) c[a][b] = T(0);
    }
    // Where this lane's elements of X and Y start in a staged chunk (computed once).
    static __device__ __forceinline__ int2 lanes(int wr, int wc) {
        const int lane = threadIdx.x & 31;
        return make_int2(wr + 4 * (lane >> 2), wc + 4 * (lane & 3));
    }
    // One chunk, xs and ys already offset by lanes().
    __device__ __forceinline__ void chunk(const T* xs, const T* ys) {
#pragma unroll
        for (int kk = 0; kk < KC; ++kk) {
            T x[4], y[4];
#pragma unroll
            for (int a = 0; a < 4; ++a) { x[a] = xs[kk * LDS + a]; y[a] = ys[kk * LDS + a]; }
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) c[a][b] += x[a] * y[b];
        }
    }
    // Visit every owned element, in pairs of neighbours in a row: f(row in tile, (even)
    // column in tile, value there, value in the next column).
    template <typename F> __device__ __forceinline__ void each_pair(int wr, int wc, F f) const {
        const int lane = threadIdx.x & 31, r = wr + 4 * (lane >> 2), q = wc + 4 * (lane & 3);
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 4; b += 2) f(r + a, q + b, c[a][b], c[a][b + 1]);
    }
};

// Tensor-core version (sm_90; FP64 products, of double or of float elements, which are exact
// in double, accumulated in double): 2 x WN blocks of 16 x 8, mma.m16n8k4 (with g = lane / 4,
// q = lane % 4: A elements (g, q) and (g + 8, q); B element (q, g); C elements
// (g + 8 (i / 2), 2q + i % 2) in c[i]). Inside a chunk every product is made, zeros included
// (the caller skips whole chunks of zeros): on an H100, skipping the blocks outside the
// triangles (tests per block) cost more than it saved, and m16n8k4 was faster than m16n8k8,
// m16n8k16 and m8n8k4.
template <typename S, int LDS, int WN> struct MmaAcc {
    double c[2][WN][4];

    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
            for (int b = 0; b < WN; ++b)
#pragma unroll
                for (int i = 0; i < 4; ++i) c[a][b][i] = 0.0;
    }
    static __device__ __forceinline__ int2 lanes(int wr, int wc) {
        const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
        return make_int2(q * LDS + wr + g, q * LDS + wc + g);
    }
    __device__ __forceinline__ void chunk(const S* xs, const S* ys) {
#pragma unroll 2
        for (int kk = 0; kk < KC; kk += 4) {
            const S* xk = xs + kk * LDS;
            const S* yk = ys + kk * LDS;
            S y[WN];
#pragma unroll
            for (int b = 0; b < WN; ++b) y[b] = yk[8 * b];
#pragma unroll
            for (int a = 0; a < 2; ++a) {
                const S x0 = xk[16 * a], x1 = xk[16 * a + 8];
#pragma unroll
                for (int b = 0; b < WN; ++b) product(c[a][b], x0, x1, y[b]);
            }
        }
    }
    static __device__ __forceinline__ void product(double (&d)[4], double x0, double x1,
                                                   double y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        asm volatile(
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
            "{%0, %1, %2, %3};\n"
            : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
            : "d"(x0), "d"(x1), "d"(y));
#endif
    }
    template <typename F> __device__ __forceinline__ void each_pair(int wr, int wc, F f) const {
        const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
        for (int a = 0; a < 2; ++a)
#pragma unroll
            for (int b = 0; b < WN; ++b)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    f(wr + 16 * a + g + 8 * h, wc + 8 * b + 2 * q, c[a][b][2 * h],
                      c[a][b][2 * h + 1]);
    }
};

template <typename T, bool MMA, int LDS, int WN> struct AccOf { using type = FmaAcc<T, LDS>; };
template <typename T, int LDS, int WN> struct AccOf<T, true, LDS, WN> {
    using type = MmaAcc<T, LDS, WN>;
};

// ---------------------------------------------------------------------------- the kernel
// Members [first, first + count), `tiles` blocks each (block b: member first + b / tiles,
// tile b % tiles). Operands: x (TRMM: L; HERK: A; LAUUM: L) and o (TRMM: B; HERK: C; LAUUM:
// L), as in batched_small.cu.
//
// A block computes output tiles one after the other (TRMM: the row tiles of its 64 columns
// of B, from the last up, so that the rows a tile needs are still unwritten when it is
// computed; HERK, LAUUM: one tile) from one stream of chunks: while chunk c is multiplied,
// the copies of chunk c + 1 (of this tile or the next) are in flight.
template <typename T, int MODE, bool MMA, int TILE, int WN>
__device__ __forceinline__ void run(long long first, long long count, int tiles, int n, int m,
                                    int kdim, int unit, T alpha, T beta, const long long* xp,
                                    long long xb, long long xs_, long long xo, long long xld,
                                    int xf, const long long* op, long long ob, long long os,
                                    long long oo, long long old, int of,
                                    const long long* info, int skip) {
    constexpr int THREADS = Shape<T, TILE, WN>::THREADS, LDS = Shape<T, TILE, WN>::LDS;
    constexpr int STAGES = Shape<T, TILE, WN>::STAGES;
    // The ring of STAGES buffers, each a chunk of X then one of Y (Shape<T, TILE>::RING).
    extern __shared__ __align__(16) unsigned char ring_[];
    T* const ring = reinterpret_cast<T*>(ring_);
    const long long g = first + blockIdx.x / tiles;
    const int tile = blockIdx.x % tiles;
    if (blockIdx.x / tiles >= count) return;
    if (skip && info && info[g] != 0) return;

    // Row tiles I = top, top - 1, .., last of output columns [j0, j0 + TILE); the k range of
    // row tile I is [0, kend(I)).
    int top = 0, last = 0, j0 = 0, cols = n;
    constexpr bool lower_only = MODE != TRMM;  // only the lower triangle of the output is kept
    View<T> o, x, y;
    if (MODE == TRMM) {
        o = member_view<T>(g, op, ob, os, oo, old, of, n, m);
        x = member_view<T>(g, xp, xb, xs_, xo, xld, xf, n, n);
        y = o.t();  // Y(k, j) = B(k, j): staged as rows j of B^T
        top = (n - 1) / TILE;
        j0 = tile * TILE;
        cols = m;
    } else if (MODE == HERK) {
        o = member_view<T>(g, op, ob, os, oo, old, of, n, n);
        x = member_view<T>(g, xp, xb, xs_, xo, xld, xf, n, kdim);
        y = x;  // Y(k, j) = A(j, k)
        int I = (int)((sqrtf(8.0f * tile + 1.0f) - 1.0f) * 0.5f);
        while ((I + 1) * (I + 2) / 2 <= tile) ++I;
        while (I * (I + 1) / 2 > tile) --I;
        top = last = I;
        j0 = (tile - I * (I + 1) / 2) * TILE;
    } else {  // LAUUM (n <= TILE): X(i, k) = L(k, i) (k >= i), Y(k, j) = L(k, j) (k >= j)
        o = member_view<T>(g, op, ob, os, oo, old, of, n, n);
        x = o.t();
        y = x;
    }
    const int kn = MODE == HERK ? kdim : n;
    auto kend = [&](int I) { return MODE == TRMM ? min(kn, (I + 1) * TILE) : kn; };
    // X and Y are the same staged chunk where they read the same elements (LAUUM; the
    // diagonal tiles of HERK).
    const bool same = MODE != TRMM && j0 == top * TILE;
    auto xbuf = [&](int c) { return ring + (c % STAGES) * 2 * KC * LDS; };
    auto ybuf = [&](int c) { return same ? xbuf(c) : xbuf(c) + KC * LDS; };
    // Untested copies of inside chunks everywhere but in float64 TRMM on tiles of 64, whose
    // registers (at most 80, for 3 blocks per multiprocessor) would spill with both forms of
    // the copies, and which gained nothing from them.
    constexpr bool untested = !(MODE == TRMM && TILE == 64 && sizeof(T) == 8);
    // Issue the copies of chunk c: (I, k0) of the stream.
    auto put = [&](int c, int I, int k0) {
        if (MODE == LAUUM)
            stage<T, TILE, WN, UPPER, untested>(xbuf(c), x, 0, n, k0, kn);
        else if (MODE == HERK)
            stage<T, TILE, WN, ALL, untested>(xbuf(c), x, I * TILE, n, k0, kn);
        else if (unit)
            stage<T, TILE, WN, LOWER_UNIT, untested>(xbuf(c), x, I * TILE, n, k0, kn);
        else
            stage<T, TILE, WN, LOWER, untested>(xbuf(c), x, I * TILE, n, k0, kn);
        if (!same) stage<T, TILE, WN, ALL, untested>(ybuf(c), y, j0, cols, k0, kn);
    };

    const int warp = threadIdx.x >> 5;
    const int wr = (warp % (TILE / 32)) * 32, wc = (warp / (TILE / 32)) * 8 * WN;
    const bool read_c = MODE == HERK && beta != T(0);
    using Acc = typename AccOf<T, MMA, LDS, WN>::type;
    Acc acc;
    acc.zero();
    const int2 lane = Acc::lanes(wr, wc);
    // The chunk multiplied now is (I, k0); the next one to issue (nI, nk), STAGES - 1 ahead.
    int I = top, k0 = 0, nI = top, nk = 0;
    auto advance = [&](int& i, int& k) {
        k += KC;
        if (k >= kend(i)) --i, k = 0;
    };
    // Issue the copies of the next chunk of the stream, if any, into the next buffer.
    int issued = 0;
    auto issue = [&]() {
        if (nI >= last && kn > 0) {
            put(issued, nI, nk);
            advance(nI, nk);
        }
        ++issued;
        copies_sent();
    };
    for (int s = 0; s < STAGES - 1; ++s) issue();
    // One barrier per chunk where the ring has more than two buffers: past it, chunk c is
    // everyone's and every warp is done with chunk c - 1, whose buffer the next issue then
    // refills. (On one H100, batch 10240, device time: float64 TRMM of order 256 on tiles of
    // 128 went from 7.08 to 6.75 ms with one barrier instead of two; the other tile kernels
    // moved by at most 3% either way.) A ring of two issues chunk c + 1 before chunk c is
    // waited for, and takes a second barrier after the products (with one barrier, float64
    // TRMM of order 20 went from 0.037 to 0.045 ms).
    constexpr bool two = STAGES == 2;
    for (int c = 0;; ++c) {
        if (two) issue();
        copies_done<two ? 1 : STAGES - 2>();  // chunk c has landed
        __syncthreads();
        if (!two) issue();
        // A warp skips a chunk whose products with its piece are all zero (outside the
        // triangles: TRMM's L(i, k) for k > i, LAUUM's L(k, i) L(k, j) for k < max(i, j)).
        const bool zero = MODE == TRMM ? k0 > I * TILE + wr + 31
                        : MODE == LAUUM && k0 + KC <= max(wr, wc);
        if (kn > 0 && !zero) acc.chunk(xbuf(c) + lane.x, ybuf(c) + lane.y);
        if (two) __syncthreads();  // before the next iteration refills this buffer
        if (k0 + KC >= kend(I)) {  // row tile I is complete
            const int i0 = I * TILE;
            auto kept = [&](int i, int j) { return i < n && j < cols && !(lower_only && j > i); };
            // HERK with beta (one tile per block: the ring is free now): C's tile is staged
            // first, c[q * LDS + r] = C(i0 + r, j0 + q), so that its loads overlap. (By this
            // loop rather than stage() per chunk of columns, which spilled the registers of
            // the float HERK kernel.)
            const T* c = ring;
            if (read_c) {
                __syncthreads();  // every warp is done with the ring's chunks
                const bool by_row = o.rs == 1 || o.rs == -1;
#pragma unroll 4
                for (int e = threadIdx.x; e < TILE * TILE; e += THREADS) {
                    const int r = by_row ? e % TILE : e / TILE, q = by_row ? e / TILE : e % TILE;
                    const bool ok = kept(i0 + r, j0 + q);
                    copy_async(ring + q * LDS + r, ok ? o.at(i0 + r, j0 + q) : o.p, ok);
                }
                copies_sent();
                copies_done<0>();
                __syncthreads();
            }
            // Rows of unit stride in aligned pairs: neighbours in a row are stored as one.
            const bool pairs = o.cs == 1 && pairs_aligned(o.p, o.rs);
            acc.each_pair(wr, wc, [&](int r, int q, T v0, T v1) {
                const int i = i0 + r, j = j0 + q;
                const T w0 = read_c ? alpha * v0 + beta * c[q * LDS + r] : alpha * v0;
                const T w1 = read_c ? alpha * v1 + beta * c[(q + 1) * LDS + r] : alpha * v1;
                const bool keep0 = kept(i, j), keep1 = kept(i, j + 1);
                if (pairs && keep0 && keep1) {
                    using P = typename PairOf<T>::type;
                    *reinterpret_cast<P*>(o.at(i, j)) = P{w0, w1};
                    return;
                }
                if (keep0) *o.at(i, j) = w0;
                if (keep1) *o.at(i, j + 1) = w1;
            });
            acc.zero();
            if (I == last) break;
        }
        advance(I, k0);
    }
}

// Blocks per multiprocessor the kernel is compiled for (registers at most 65536 / (THREADS x
// that)). Tiles of 128 (TRMM on the tensor cores): 1. Tiles of 64: 3, as many as the shared
// memory of float64 holds, except for float64 HERK, which takes 2 (at 3 its registers would
// spill). Tiles of 32: 10 for float64, 12 for float32 (8 were slower).
__host__ __device__ constexpr int min_blocks(int itemsize, int mode, int tile) {
    return tile == 128 ? 1
         : tile == 32  ? (itemsize == 8 ? 10 : 12)
                       : itemsize == 8 && mode == HERK ? 2 : 3;
}

}  // namespace tile
}  // namespace tricov

// A kernel with C linkage (cached on disk by CuPy, see kernels/nvrtc.py): kernels/__init__.py
// names it and appends TRICOV_BATCHED_TILE(name, T, MODE, MMA, TILE, WN) to this file.
#define TRICOV_BATCHED_TILE(NAME, T, MODE, MMA, TILE, WN)                                      \
    extern "C" __global__ void                                                                 \
    __launch_bounds__(tricov::tile::Shape<T, TILE, WN>::THREADS,                               \
                      tricov::tile::min_blocks(sizeof(T), MODE, TILE))                         \
    NAME(long long first, long long count, int tiles, int n, int m, int kdim, int unit,       \
         T alpha, T beta, const long long* xp, long long xb, long long xs, long long xo,       \
         long long xld, int xf, const long long* op, long long ob, long long os, long long oo, \
         long long old, int of, const long long* info, int skip)                               \
    {                                                                                          \
        tricov::tile::run<T, MODE, MMA, TILE, WN>(first, count, tiles, n, m, kdim, unit,      \
                                                  alpha, beta, xp, xb, xs, xo, xld, xf, op,   \
                                                  ob, os, oo, old, of, info, skip);           \
    }
