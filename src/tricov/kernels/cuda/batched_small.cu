// tricov: register-resident kernels for batches of small matrices (order n <= N <= 32).
//
// A group of G lanes inside one warp (G a power of 2 dividing N; 32 / G groups per warp)
// owns one batch member, and each lane keeps P = N / G lines of each operand in registers:
// lane l holds lines l, l + G, ..., l + (P - 1) G (cyclic, so that a triangle's lines are
// shared out evenly and a load of slot p by the group reads G consecutive memory lines).
// A line is a row of the square operand ("row-owner") or a column of a right-hand-side tile
// ("column-owner"), whichever makes the algorithm's communication a plain broadcast: every
// step is a few width-G shuffles and FMAs, no shared memory and no barriers. One broadcast
// value feeds one FMA per line the lane holds, so wider lanes (larger P, smaller G) trade
// shuffles for registers and fewer members in flight; G = 1 is one thread per member, with no
// shuffle at all. The launcher picks G per operation, order and dtype (backends/batched_cuda.py,
// measured in benchmarks/exp_batched_small.py). Each operation is written once, in one
// canonical variant (as in kernels/numba/small.py):
//
//   TRSM   solve L X = B (L lower n x n, B n x m), X over B      TRMM   B <- L B
//   HERK   lower triangle of C <- alpha A A^H + beta C            POTRF  A = L L^H (lower)
//   TRTRI  L <- L^-1        LAUUM  L <- L^H L                      POTRS  L L^H X = B
//   fused  POTRI (TRTRI, LAUUM), POTI (POTRF, TRTRI, LAUUM), POSV (POTRF and both solves)
//
// Every other variant is a matter of how the operands are read and written: the canonical
// element (i, j) of an operand is element (i, j) of its member's column-major memory, or (j, i)
// if transposed (C order, trans, right side, uplo='U'), optionally conjugated, after an
// optional reversal of i and j (P U P turns an upper triangle into a lower one). A lane always
// reads and writes memory rows (coalesced across the group); when the algorithm wants the
// other line of the operand, a butterfly transpose in registers (log2 G shuffle rounds and a
// renaming of registers) moves it. Orders n < N are padded: loops stop at n (or up to three
// lines past it, see past()), padding is zero and never stored. Registers that a triangle
// never uses (whole blocks of G x G above the diagonal) are not kept at all (Shape), which is
// what lets several lines fit in a lane.
//
// POTRF, TRTRI, POTRI and POTI have a second layout (the grid kernels below, chosen by
// kernels.BATCHED_GRID): a grid of R x R lanes per member, each lane a block of the lower
// triangle, which needs about half the shuffles and no transposes.
//
// Failures are per member and never touch other members: POTRF records the first pivot that
// is not positive (NaN included) and stores only the columns before it; TRTRI/POTRI find
// exactly zero pivots first and store nothing for such a member. `info` (when given) gets
// order0 + LAPACK's info of each failing member; with `skip`, members whose info is already
// nonzero are neither read nor written (the recursions for larger orders run on), without it
// every member's info is written (0 for success), so the array needs no clearing first.
#include "common.cuh"

namespace tricov {
namespace batched {

enum Op { TRSM = 0, TRMM, HERK, POTRF, TRTRI, LAUUM, POTRI, POTI, POTRS, POSV };

// real_t and re() come from common.cuh.

__device__ __forceinline__ float scale(float x, float s) { return x * s; }
__device__ __forceinline__ double scale(double x, double s) { return x * s; }
template <typename R> __device__ __forceinline__ cplx<R> scale(cplx<R> x, R s) {
    return cplx<R>(x.re * s, x.im * s);
}

__device__ __forceinline__ bool is_zero(float x) { return x == 0.0f; }
__device__ __forceinline__ bool is_zero(double x) { return x == 0.0; }
template <typename R> __device__ __forceinline__ bool is_zero(cplx<R> x) {
    return x.re == R(0) && x.im == R(0);
}

constexpr unsigned FULL = 0xffffffffu;

// Lane `src` of the caller's group of G lanes (G = 1: the caller's own value).
template <int G> __device__ __forceinline__ float bcast(float v, int src) {
    if constexpr (G == 1) return v;
    else return __shfl_sync(FULL, v, src, G);
}
template <int G> __device__ __forceinline__ double bcast(double v, int src) {
    if constexpr (G == 1) return v;
    else return __shfl_sync(FULL, v, src, G);
}
template <int G, typename R> __device__ __forceinline__ cplx<R> bcast(cplx<R> v, int src) {
    return cplx<R>(bcast<G>(v.re, src), bcast<G>(v.im, src));
}
// The lane whose index differs from the caller's by `mask`.
template <int G> __device__ __forceinline__ float partner(float v, int mask) {
    return __shfl_xor_sync(FULL, v, mask, G);
}
template <int G> __device__ __forceinline__ double partner(double v, int mask) {
    return __shfl_xor_sync(FULL, v, mask, G);
}
template <int G, typename R> __device__ __forceinline__ cplx<R> partner(cplx<R> v, int mask) {
    return cplx<R>(partner<G>(v.re, mask), partner<G>(v.im, mask));
}

// The G-bit mask of the lanes of the caller's group for which `pred` holds.
template <int G> __device__ __forceinline__ unsigned group_ballot(bool pred) {
    const unsigned bits = __ballot_sync(FULL, pred);
    if constexpr (G == 32) return bits;
    else return (bits >> ((threadIdx.x & 31) & ~(G - 1))) & ((1u << G) - 1u);
}

// Which registers x[p][r] of a lane's P lines are kept: all (a full tile), or those that a
// lower triangle can use when the lines are its rows (r < (p + 1) G: line p G + l has no
// element right of its block of G columns) or its columns (r >= p G).
enum Shape { FULL_TILE = 0, LOWER_ROWS, LOWER_COLS };

template <int G, int SHAPE> __host__ __device__ constexpr bool kept(int p, int r) {
    return SHAPE == FULL_TILE || (SHAPE == LOWER_ROWS ? r < (p + 1) * G : r >= p * G);
}
__host__ __device__ constexpr int flip(int shape) {
    return shape == LOWER_ROWS ? LOWER_COLS : shape == LOWER_COLS ? LOWER_ROWS : shape;
}

// x (shape SHAPE; lane l: lines p G + l of an N x N tile) <- its transpose (shape flip(SHAPE)).
// The element (p G + l, r) must go to lane r % G, line r / G, position p G + l. First the
// lane bits: for every size s = G/2, ..., 1, the elements whose bit s of r differs from bit s
// of l move to lane l ^ s, position r ^ s (one shuffle per pair of registers per round); then
// the block indices, by renaming registers: x[p][q G + l] <-> x[q][p G + l].
template <typename T, int N, int G, int SHAPE>
__device__ __forceinline__ void transpose(T (&x)[N / G][N], int lane) {
    constexpr int P = N / G;
#pragma unroll
    for (int s = G / 2; s >= 1; s /= 2) {
        const bool high = lane & s;
#pragma unroll
        for (int p = 0; p < P; ++p) {
#pragma unroll
            for (int r0 = 0; r0 < N; ++r0) {
                if ((r0 & s) || !kept<G, SHAPE>(p, r0)) continue;
                const int r1 = r0 | s;
                const T got = partner<G>(high ? x[p][r0] : x[p][r1], s);
                if (high) x[p][r0] = got; else x[p][r1] = got;
            }
        }
    }
    if constexpr (P > 1) {
        T y[P][N];
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
            for (int r = 0; r < N; ++r) y[p][r] = x[p][r];
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
            for (int q = 0; q < P; ++q)
#pragma unroll
                for (int l = 0; l < G; ++l)
                    if (p != q && kept<G, flip(SHAPE)>(p, q * G + l))
                        x[p][q * G + l] = y[q][p * G + l];
    }
}

// Where the members of one operand are, and how its canonical matrix sits in their memory.
struct Operand {
    const long long* ptrs;  // member addresses, or null: base + k * stride
    long long base, stride, offset;  // bytes (offset: of element (0, 0) inside a member)
    long long ld;           // elements
    int flags;              // 1 transposed, 2 conjugated, 4 rows reversed, 8 columns reversed
};

enum Flags { TRANSPOSED = 1, CONJUGATED = 2, REV_ROWS = 4, REV_COLS = 8 };

// The canonical nr x nc matrix of one member.
template <typename T> struct View {
    T* p;
    long long ld;
    int flags, nr, nc;

    // Memory row `m` of the tile whose first canonical column is c0. Element r of the line is
    // canonical (m, c0 + r) if the operand is not transposed, else (r, c0 + m); it sits at
    // p[at + r * step].
    __device__ __forceinline__ void line(int m, int c0, long long& at, long long& step) const {
        if (!(flags & TRANSPOSED)) {
            const int i = (flags & REV_ROWS) ? nr - 1 - m : m;
            const int j = (flags & REV_COLS) ? nc - 1 - c0 : c0;
            at = i + j * ld;
            step = (flags & REV_COLS) ? -ld : ld;
        } else {
            const int j = (flags & REV_COLS) ? nc - 1 - (c0 + m) : c0 + m;
            at = j + ((flags & REV_ROWS) ? nr - 1 : 0) * ld;
            step = (flags & REV_ROWS) ? -ld : ld;
        }
    }
    // Where canonical element (i, j) sits: at0 + i * di + j * dj (an affine map, whatever
    // the flags).
    __device__ __forceinline__ void affine(long long& at0, long long& di, long long& dj) const {
        const bool tr = flags & TRANSPOSED;
        const long long ri = tr ? ld : 1, rj = tr ? 1 : ld;  // memory steps of i and j
        di = (flags & REV_ROWS) ? -ri : ri;
        dj = (flags & REV_COLS) ? -rj : rj;
        at0 = ((flags & REV_ROWS) ? (nr - 1) * ri : 0) + ((flags & REV_COLS) ? (nc - 1) * rj : 0);
    }
    __device__ __forceinline__ T get(long long e) const {
        const T v = p[e];
        return (flags & CONJUGATED) ? conj_(v) : v;
    }
    __device__ __forceinline__ void put(long long e, T v) const {
        p[e] = (flags & CONJUGATED) ? conj_(v) : v;
    }
};

// x, hidden from the optimizer: addresses recomputed for a store are not kept alive from the
// load (a tile's addresses would otherwise hold as many registers as the tile itself).
__device__ __forceinline__ long long opaque(long long x) {
#ifdef __CUDA_ARCH__
    asm volatile("" : "+l"(x));
#endif
    return x;
}
__device__ __forceinline__ int opaque(int x) {
#ifdef __CUDA_ARCH__
    asm volatile("" : "+r"(x));
#endif
    return x;
}

// Member k's view of an operand (a null pointer for a lane without a member: its layout, and
// so every shuffle of the loads and stores, stays that of its warp).
template <typename T>
__device__ __forceinline__ View<T> member(const Operand& o, bool live, long long k, int nr,
                                          int nc) {
    const long long at = live ? (o.ptrs ? o.ptrs[k] : o.base + k * o.stride) + o.offset : 0;
    return View<T>{reinterpret_cast<T*>(at), o.ld, o.flags, nr, nc};
}

// Regions of an operand that are read or written.
struct Whole {
    __device__ __forceinline__ bool operator()(int, int) const { return true; }
};
struct Lower {   // i >= j (i > j if strict), and only columns j < cols
    bool strict;
    int cols;
    __device__ __forceinline__ bool operator()(int i, int j) const {
        return (strict ? i > j : i >= j) && j < cols;
    }
};

// The lines of shape SHAPE that lane `lane` reads or writes as they sit in memory: its memory
// rows q = p G + lane (x[p][r] = element r of memory row q), the region of the operand only.
template <typename T, int N, int G, int SHAPE, typename Region>
__device__ __forceinline__ void load_lines(T (&x)[N / G][N], const View<T>& v, bool live,
                                           int lane, int c0, Region in, bool mem_rows) {
#pragma unroll
    for (int p = 0; p < N / G; ++p) {
        const int q = p * G + lane;
        long long at, step;
        v.line(q, c0, at, step);
#pragma unroll
        for (int r = 0; r < N; ++r) {
            if (!kept<G, SHAPE>(p, r)) continue;
            const int i = mem_rows ? q : r;
            const int j = c0 + (mem_rows ? r : q);
            x[p][r] = (live && i < v.nr && j < v.nc && in(i, j)) ? v.get(at + r * step) : T(0);
        }
    }
}

template <typename T, int N, int G, int SHAPE, typename Region>
__device__ __forceinline__ void store_lines(const T (&x)[N / G][N], const View<T>& v, bool live,
                                            int lane, int c0, Region in, bool mem_rows) {
    lane = opaque(lane);
    c0 = opaque(c0);
#pragma unroll
    for (int p = 0; p < N / G; ++p) {
        const int q = p * G + lane;
        long long at, step;
        v.line(q, c0, at, step);
#pragma unroll
        for (int r = 0; r < N; ++r) {
            if (!kept<G, SHAPE>(p, r)) continue;
            const int i = mem_rows ? q : r;
            const int j = c0 + (mem_rows ? r : q);
            if (live && i < v.nr && j < v.nc && in(i, j)) v.put(at + r * step, x[p][r]);
        }
    }
}

// x <- a tile of the canonical operand, as lines of shape SHAPE: ROWS, line q = p G + l of
// lane l is row q (x[p][r] = (q, c0 + r)); else column c0 + q (x[p][r] = (r, c0 + q)).
// Elements outside the operand or the region are zero.
template <typename T, int N, int G, bool ROWS, int SHAPE, typename Region>
__device__ __forceinline__ void load_tile(T (&x)[N / G][N], const View<T>& v, bool live,
                                          int lane, int c0, Region in) {
    const bool mem_rows = !(v.flags & TRANSPOSED);  // lanes read memory rows: coalesced
    if constexpr (N == G) {  // one line per lane: one shape either way, one copy of the code
        load_lines<T, N, G, SHAPE>(x, v, live, lane, c0, in, mem_rows);
        if (ROWS != mem_rows) transpose<T, N, G, SHAPE>(x, lane);
    } else if (ROWS == mem_rows) {
        load_lines<T, N, G, SHAPE>(x, v, live, lane, c0, in, mem_rows);
    } else {
        load_lines<T, N, G, flip(SHAPE)>(x, v, live, lane, c0, in, mem_rows);
        transpose<T, N, G, flip(SHAPE)>(x, lane);
    }
}

// The tile x (lines of shape SHAPE, as load_tile's) back to memory, region only. x is left
// transposed where the layouts differ, unless `restore` (one more round of shuffles).
template <typename T, int N, int G, bool ROWS, int SHAPE, typename Region>
__device__ __forceinline__ void store_tile(T (&x)[N / G][N], const View<T>& v, bool live,
                                           int lane, int c0, Region in, bool restore = false) {
    const bool mem_rows = !(v.flags & TRANSPOSED);
    if constexpr (N == G) {
        if (ROWS != mem_rows) transpose<T, N, G, SHAPE>(x, lane);
        store_lines<T, N, G, SHAPE>(x, v, live, lane, c0, in, mem_rows);
        if (restore && ROWS != mem_rows) transpose<T, N, G, SHAPE>(x, lane);
    } else if (ROWS == mem_rows) {
        store_lines<T, N, G, SHAPE>(x, v, live, lane, c0, in, mem_rows);
    } else {
        transpose<T, N, G, SHAPE>(x, lane);
        store_lines<T, N, G, flip(SHAPE)>(x, v, live, lane, c0, in, mem_rows);
        if (restore) transpose<T, N, G, flip(SHAPE)>(x, lane);
    }
}

// Register `q` of a line of block p (q = p G + lane: a run-time index, so a select over the
// compile-time ones of that block).
template <typename T, int N, int G>
__device__ __forceinline__ T own(const T (&x)[N], int p, int lane) {
    T d = x[p * G];
#pragma unroll
    for (int r = 1; r < G; ++r) d = (r == lane) ? x[p * G + r] : d;
    return d;
}

// Make the diagonal element of each of the lane's lines real (a Hermitian result).
template <typename T, int N, int G>
__device__ __forceinline__ void real_diagonal(T (&x)[N / G][N], int lane) {
#pragma unroll
    for (int p = 0; p < N / G; ++p)
#pragma unroll
        for (int r = 0; r < G; ++r) if (r == lane) x[p][p * G + r] = T(re(x[p][p * G + r]));
}

// 1 / (diagonal element) of each of the lane's lines of a row-owner triangle.
template <typename T, int N, int G>
__device__ __forceinline__ void inverse_diagonal(T (&dinv)[N / G], const T (&a)[N / G][N],
                                                 int lane) {
#pragma unroll
    for (int p = 0; p < N / G; ++p) dinv[p] = T(1) / own<T, N, G>(a[p], p, lane);
}

// Whether a loop over the lines k of a padded order stops at line k (n real lines): tested at
// every fourth line only. Padding lines are zero, so the up to three lines past n that a loop
// then runs subtract products with a zero factor, from padding alone. A test at every line (a
// compare and a branch) made a quarter of the instructions of POTRF of order 32, and its
// removal made the kernels of order 32 1.2-1.5x faster (H100, benchmarks/gpu_batched_ab.py
// source with the earlier file).
__device__ __forceinline__ bool past(int k, int n) { return k % 4 == 0 && k >= n; }

// ------------------------------------------------------------------------------ algorithms
// a: row-owner (line q of lane l = q % G is row q of the lower triangle; its part right of
// the diagonal inside the diagonal block is scratch, never stored). b: column-owner tile of
// right-hand sides. A value broadcast from line k sits on lane k % G, block k / G.

// Right-looking Cholesky. Returns j + 1 for the first pivot j that was not positive (or NaN),
// 0 if none (the same on every lane of the group).
template <typename T, int N, int G>
__device__ __forceinline__ int potrf_rows(T (&a)[N / G][N], int n, int lane) {
    using R = real_t<T>;
    constexpr int P = N / G;
    int fail = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        const R d = re(bcast<G>(a[j / G][j], j % G));
        if (!fail && !(d > R(0))) fail = j + 1;
        const R inv = rsqrt(d);  // NaN or infinite for a failing pivot, as 1 / sqrt(d)
#pragma unroll
        for (int p = 0; p < P; ++p) {  // l_jj = sqrt(d); l_ij
            if (kept<G, LOWER_ROWS>(p, j))
                a[p][j] = (p * G + lane == j) ? T(d * inv) : scale(a[p][j], inv);
        }
#pragma unroll
        for (int k = j + 1; k < N; ++k) {
            if (past(k, n)) break;
            const T lkj = conj_(bcast<G>(a[k / G][j], k % G));
#pragma unroll
            for (int p = 0; p < P; ++p)  // rows i >= k: A_ik -= l_ij conj(l_kj)
                if (kept<G, LOWER_ROWS>(p, k)) a[p][k] -= a[p][j] * lkj;
        }
    }
    return fail;
}

// Forward substitution L X = B for one tile (dinv: 1 / l_qq of the lane's lines q, or 1 for
// unit).
template <typename T, int N, int G>
__device__ __forceinline__ void trsm_cols(const T (&a)[N / G][N], T (&b)[N / G][N],
                                          const T (&dinv)[N / G], bool unit, int n) {
    constexpr int P = N / G;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        if (!unit) {
            const T d = bcast<G>(dinv[j / G], j % G);
#pragma unroll
            for (int p = 0; p < P; ++p) b[p][j] = b[p][j] * d;
        }
#pragma unroll
        for (int i = j + 1; i < N; ++i) {
            if (past(i, n)) break;
            const T lij = bcast<G>(a[i / G][j], i % G);
#pragma unroll
            for (int p = 0; p < P; ++p) b[p][i] -= lij * b[p][j];
        }
    }
}

// Backward substitution L^H X = B for one tile (dinv as trsm_cols, non-unit).
template <typename T, int N, int G>
__device__ __forceinline__ void trsm_h_cols(const T (&a)[N / G][N], T (&b)[N / G][N],
                                            const T (&dinv)[N / G], int n) {
    constexpr int P = N / G;
#pragma unroll
    for (int k = N - 1; k >= 0; --k) {
        if (k >= n) continue;
        const T d = conj_(bcast<G>(dinv[k / G], k % G));
#pragma unroll
        for (int p = 0; p < P; ++p) b[p][k] = b[p][k] * d;
#pragma unroll
        for (int j = 0; j < k; ++j) {
            const T lkj = conj_(bcast<G>(a[k / G][j], k % G));
#pragma unroll
            for (int p = 0; p < P; ++p) b[p][j] -= lkj * b[p][k];
        }
    }
}

// B <- L B for one tile, bottom row first (row i reads only the rows above it).
template <typename T, int N, int G>
__device__ __forceinline__ void trmm_cols(const T (&a)[N / G][N], T (&b)[N / G][N], bool unit,
                                          int n) {
    constexpr int P = N / G;
#pragma unroll
    for (int i = N - 1; i >= 0; --i) {
        if (i >= n) continue;
        T acc[P];
        const T lii = bcast<G>(a[i / G][i], i % G);
#pragma unroll
        for (int p = 0; p < P; ++p) acc[p] = unit ? b[p][i] : lii * b[p][i];
#pragma unroll
        for (int k = 0; k < i; ++k) {
            const T lik = bcast<G>(a[i / G][k], i % G);
#pragma unroll
            for (int p = 0; p < P; ++p) acc[p] += lik * b[p][k];
        }
#pragma unroll
        for (int p = 0; p < P; ++p) b[p][i] = acc[p];
    }
}

// L <- L^-1 in place, columns right to left: each line q solves x_q L = e_q for its row.
template <typename T, int N, int G>
__device__ __forceinline__ void trtri_rows(T (&a)[N / G][N], const T (&dinv)[N / G], int n,
                                           int lane) {
    constexpr int P = N / G;
#pragma unroll
    for (int j = N - 1; j >= 0; --j) {
        if (j >= n) continue;
        T acc[P];
#pragma unroll
        for (int p = 0; p < P; ++p) acc[p] = (p * G + lane == j) ? T(1) : T(0);
#pragma unroll
        for (int k = j + 1; k < N; ++k) {
            if (past(k, n)) break;
            const T lkj = bcast<G>(a[k / G][j], k % G);
#pragma unroll
            for (int p = 0; p < P; ++p)  // x_qk (0 above the diagonal) l_kj
                if (kept<G, LOWER_ROWS>(p, k)) acc[p] -= a[p][k] * lkj;
        }
        const T d = bcast<G>(dinv[j / G], j % G);
#pragma unroll
        for (int p = 0; p < P; ++p)
            if (kept<G, LOWER_ROWS>(p, j)) a[p][j] = acc[p] * d;
    }
}

// L <- L^H L in place, column-owner (line q holds column q): C_iq = sum_{k >= i} conj(l_ki) l_kq.
template <typename T, int N, int G>
__device__ __forceinline__ void lauum_cols(T (&c)[N / G][N], int n, int lane) {
    constexpr int P = N / G;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        if (i >= n) break;
        T acc[P];
#pragma unroll
        for (int p = 0; p < P; ++p) acc[p] = T(0);
#pragma unroll
        for (int k = i; k < N; ++k) {
            if (past(k, n)) break;
            const T lki = conj_(bcast<G>(c[i / G][k], i % G));
#pragma unroll
            for (int p = 0; p < P; ++p)
                if (kept<G, LOWER_COLS>(p, i)) acc[p] += lki * c[p][k];
        }
#pragma unroll
        for (int p = 0; p < P; ++p)  // rows i of columns right of block i / G: not needed
            if (kept<G, LOWER_COLS>(p, i)) c[p][i] = acc[p];
    }
    real_diagonal<T, N, G>(c, lane);
}

// ---------------------------------------------------------------------------------- kernel
// The body of the kernel of operation OP for order N and G lanes per member (see
// TRICOV_BATCHED_SMALL below).
template <typename T, int N, int G, int OP>
__device__ __forceinline__ void
small(long long first, long long count, int n, int m, int unit, T alpha, real_t<T> beta,
      const long long* tp, long long tb, long long ts, long long to, long long tld, int tf,
      const long long* rp, long long rb, long long rs, long long ro, long long rld, int rf,
      long long* info, int order0, int skip)
{
    constexpr int P = N / G;
    const int lane = threadIdx.x & (G - 1);
    const long long g = (long long)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    const long long k = first + g;
    bool live = g < count;
    if (live && skip && info[k] != 0) live = false;  // a failure found earlier: untouched
    const Operand top{tp, tb, ts, to, tld, tf}, rop{rp, rb, rs, ro, rld, rf};
    const View<T> t = member<T>(top, live, k, n, n);
    const View<T> r = member<T>(rop, live, k, n, m);
    T a[P][N], b[P][N], dinv[P];

    if (OP == HERK) {  // T = C (lower), R = A (n x m)
        T acc[P][N];
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
            for (int j = 0; j < N; ++j) if (kept<G, LOWER_ROWS>(p, j)) acc[p][j] = T(0);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, G, true, FULL_TILE>(b, r, live, lane, c0, Whole{});
#pragma unroll
            for (int j = 0; j < N; ++j) {
                if (j >= n) break;
#pragma unroll
                for (int s = 0; s < N; ++s) {
                    if (c0 + s >= m) break;
                    const T ajs = conj_(bcast<G>(b[j / G][s], j % G));
#pragma unroll
                    for (int p = 0; p < P; ++p)
                        if (kept<G, LOWER_ROWS>(p, j)) acc[p][j] += b[p][s] * ajs;
                }
            }
        }
        if (beta != real_t<T>(0))
            load_tile<T, N, G, true, LOWER_ROWS>(a, t, live, lane, 0, Lower{false, n});
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
            for (int j = 0; j < N; ++j) {
                if (!kept<G, LOWER_ROWS>(p, j)) continue;
                acc[p][j] = scale(acc[p][j], re(alpha));
                if (beta != real_t<T>(0)) acc[p][j] += scale(a[p][j], beta);
            }
        real_diagonal<T, N, G>(acc, lane);
        store_tile<T, N, G, true, LOWER_ROWS>(acc, t, live, lane, 0, Lower{false, n});
        return;
    }

    if (OP == LAUUM) {
        load_tile<T, N, G, false, LOWER_COLS>(a, t, live, lane, 0, Lower{false, n});
        lauum_cols<T, N, G>(a, n, lane);
        store_tile<T, N, G, false, LOWER_COLS>(a, t, live, lane, 0, Lower{false, n});
        return;
    }

    const bool strict = unit && (OP == TRSM || OP == TRMM || OP == TRTRI);
    load_tile<T, N, G, true, LOWER_ROWS>(a, t, live, lane, 0, Lower{strict, n});

    if (OP == TRSM || OP == TRMM) {
        if (OP == TRSM) {
            if (unit) {
#pragma unroll
                for (int p = 0; p < P; ++p) dinv[p] = T(1);
            } else {
                inverse_diagonal<T, N, G>(dinv, a, lane);
            }
        }
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, G, false, FULL_TILE>(b, r, live, lane, c0, Whole{});
#pragma unroll
            for (int p = 0; p < P; ++p)
#pragma unroll
                for (int i = 0; i < N; ++i) b[p][i] = alpha * b[p][i];
            if (OP == TRSM) trsm_cols<T, N, G>(a, b, dinv, unit, n);
            else trmm_cols<T, N, G>(a, b, unit, n);
            store_tile<T, N, G, false, FULL_TILE>(b, r, live, lane, c0, Whole{});
        }
        return;
    }

    if (OP == POTRS) {
        inverse_diagonal<T, N, G>(dinv, a, lane);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, G, false, FULL_TILE>(b, r, live, lane, c0, Whole{});
            trsm_cols<T, N, G>(a, b, dinv, false, n);
            trsm_h_cols<T, N, G>(a, b, dinv, n);
            store_tile<T, N, G, false, FULL_TILE>(b, r, live, lane, c0, Whole{});
        }
        return;
    }

    // Members that fail: POTRF's first non-positive pivot, or TRTRI's first zero pivot.
    int failed = 0;  // 1-based column of the failure, 0 if none
    if (OP == TRTRI || OP == POTRI) {
#pragma unroll
        for (int p = P - 1; p >= 0; --p) {  // the first zero line: lowest block, lowest lane
            const unsigned zero = group_ballot<G>(
                live && !(OP == TRTRI && unit) && p * G + lane < n &&
                is_zero(own<T, N, G>(a[p], p, lane)));
            if (zero) failed = p * G + __ffs(zero);
        }
    } else {  // POTRF, POTI, POSV (every lane factors: the shuffles need the whole warp)
        const int fail = potrf_rows<T, N, G>(a, n, lane);
        failed = live ? fail : 0;
    }
    if (info && live && (failed || !skip) && lane == 0) info[k] = failed ? order0 + failed : 0;

    // What POTRF, POSV and a failing member of POTI store of the factor: all of it, or the
    // columns before the failure. Shuffles must stay warp-uniform, so members are selected
    // by predicate, never by branch.
    const Lower factored{false, failed ? failed - 1 : n};
    if (OP == POTRF) {
        store_tile<T, N, G, true, LOWER_ROWS>(a, t, live, lane, 0, factored);
        return;
    }
    if (OP == POSV) {  // the factor first: stored after the solves, it would spill (complex)
        store_tile<T, N, G, true, LOWER_ROWS>(a, t, live, lane, 0, factored, true);
        inverse_diagonal<T, N, G>(dinv, a, lane);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, G, false, FULL_TILE>(b, r, live && !failed, lane, c0, Whole{});
            trsm_cols<T, N, G>(a, b, dinv, false, n);
            trsm_h_cols<T, N, G>(a, b, dinv, n);
            store_tile<T, N, G, false, FULL_TILE>(b, r, live && !failed, lane, c0, Whole{});
        }
        return;
    }
    if (OP == POTI)
        store_tile<T, N, G, true, LOWER_ROWS>(a, t, live && failed, lane, 0, factored, true);

    // TRTRI, POTRI, POTI: the inverse of the triangle (unit: of its strict part plus I).
    const bool keep_unit = OP == TRTRI && unit;
    if (keep_unit) {
#pragma unroll
        for (int p = 0; p < P; ++p) dinv[p] = T(1);
    } else {
        inverse_diagonal<T, N, G>(dinv, a, lane);
    }
    trtri_rows<T, N, G>(a, dinv, n, lane);
    if (OP == TRTRI) {
        store_tile<T, N, G, true, LOWER_ROWS>(a, t, live && !failed, lane, 0,
                                              Lower{keep_unit, n});
        return;
    }
    transpose<T, N, G, LOWER_ROWS>(a, lane);  // rows of X = L^-1 -> columns, for LAUUM
    lauum_cols<T, N, G>(a, n, lane);
    store_tile<T, N, G, false, LOWER_COLS>(a, t, live && !failed, lane, 0, Lower{false, n});
}

// ------------------------------------------------------------------------- grid kernels
// The Cholesky family on a grid of R x R lanes per member (G = R^2 lanes; P = N / R): lane
// (x, y) keeps the elements (x + R q, y + R q') of the lower triangle, q >= q' (P (P + 1) / 2
// registers). Each step of POTRF, TRTRI and LAUUM below is a rank-1 update of part of the
// triangle by one column or row of it, and a lane needs that line only at its own rows x + R q
// (from lane (x, j % R)) and columns y + R q' (from lane (y, j % R), or (j % R, y) for a row):
// each shuffle gives every lane a different value, where in the line layout one shuffle
// broadcasts one value to the whole group. So a step takes about half the shuffles. A group of
// lanes (fixed q, q') reads whole 32-byte sectors of R consecutive elements of R lines whichever
// way the member is stored: no transposes either.
template <int R>
struct Grid {
    int lane, x, y;  // this lane's rows x + R q and columns y + R q'
    bool mem_rows;   // consecutive lanes hold consecutive rows (else columns)

    __device__ __forceinline__ Grid(int g, bool rows_in_memory) : lane(threadIdx.x & (g - 1)) {
        mem_rows = rows_in_memory;
        x = mem_rows ? lane % R : lane / R;
        y = mem_rows ? lane / R : lane % R;
    }
    // The lane of grid position (row, col) in the group.
    __device__ __forceinline__ int at(int row, int col) const {
        return mem_rows ? row + R * col : col + R * row;
    }
};

// The lower triangle of order n between memory and the grid: a[q][q'] (q >= q') is element
// (x + R q, y + R q'); loads give zero outside `in`, stores write inside it only.
template <typename T, int N, int R, bool STORE>
__device__ __forceinline__ void grid_move(T (&a)[N / R][N / R], const View<T>& t, bool live,
                                          int x, int y, Lower in) {
    constexpr int P = N / R;
    if (STORE) {  // addresses recomputed, not kept from the load
        x = opaque(x);
        y = opaque(y);
    }
    long long at0, di, dj;  // element (i, j) at at0 + i di + j dj
    t.affine(at0, di, dj);
    // element (x + R q, y + R q') at row q + q' R dj for row q = at0 + (x + R q) di + y dj,
    // both by increments: with a product per element the POTRF kernel of order 32 had 15%
    // more instructions, and more registers (kernels.BATCHED_GRID has the timings)
    const long long rstep = R * di, cstep = R * dj;
    const int cols = min(t.nc, in.cols);
    const bool diag = in.strict ? x > y : x >= y;  // (x + R q, y + R q) in the region
    const T* row = t.p + (at0 + x * di + y * dj);
#pragma unroll
    for (int q = 0; q < P; ++q, row += rstep) {
        const bool row_in = live && x + R * q < t.nr;
        const T* e = row;
#pragma unroll
        for (int q2 = 0; q2 <= q; ++q2, e += cstep) {
            const bool inside = row_in && y + R * q2 < cols && (q2 < q || diag);
            if (STORE) {
                if (inside) t.put(e - t.p, a[q][q2]);
            } else {
                a[q][q2] = inside ? t.get(e - t.p) : T(0);
            }
        }
    }
}

// Right-looking Cholesky: returns j + 1 for the first pivot j that was not positive (or NaN),
// 0 if none (the same on every lane of the group). Columns left of step j are never written
// again (selects, not products with zero, keep them: a NaN would spread), so a failing member's
// first columns are LAPACK's.
template <typename T, int N, int R>
__device__ __forceinline__ int grid_potrf(T (&a)[N / R][N / R], const Grid<R>& g, int n) {
    using Re = real_t<T>;
    constexpr int G = R * R, P = N / R;
    const int x = g.x, y = g.y;
    int fail = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        const int jr = j % R, jq = j / R;
        const Re d = re(bcast<G>(a[jq][jq], g.at(jr, jr)));
        if (!fail && !(d > Re(0))) fail = j + 1;
        const Re inv = rsqrt(d);  // NaN or infinite for a failing pivot, as 1 / sqrt(d)
#pragma unroll
        for (int q = jq; q < P; ++q) {  // the lanes of column j: l_jj = sqrt(d), l_ij
            const T lij = (x + R * q == j) ? T(d * inv) : scale(a[q][jq], inv);
            a[q][jq] = (y == jr) ? lij : a[q][jq];
        }
        T li[P], lk[P];  // l_ij of this lane's rows, conj(l_kj) of its columns
#pragma unroll
        for (int q = jq; q < P; ++q) li[q] = bcast<G>(a[q][jq], g.at(x, jr));
#pragma unroll
        for (int q = jq; q < P; ++q) lk[q] = conj_(bcast<G>(a[q][jq], g.at(y, jr)));
#pragma unroll
        for (int q = jq; q < P; ++q) {
            // columns y + R jq: right of j only (the others are final, or column j itself)
            const T upd = a[q][jq] - li[q] * lk[jq];
            a[q][jq] = (y > jr) ? upd : a[q][jq];
#pragma unroll
            for (int q2 = jq + 1; q2 <= q; ++q2) a[q][q2] -= li[q] * lk[q2];
        }
    }
    return fail;
}

// L <- L^-1 in place (unit: of its strict part plus I), or with GRAM the lower triangle of
// C = X^H X for X = L^-1 (POTRI), in one right-looking pass: step j finishes row j of X,
// x_jk = -r_jk / l_jj (k < j), x_jj = 1 / l_jj, where every row i >= j holds
// r_ik = sum_{m < j} l_im x_mk left of column j, then adds l_ij x_jk to the rows i > j. With
// GRAM the same step adds conj(x_ji) x_jk to the rows i <= j of C, row j set by this first
// term (x_ji = 0 for i > j): row j of X is not read after its step, so C takes its place.
// TRTRI then LAUUM in two passes was 3-18% slower at orders 17-32 (gpu_batched_onepass_h100.txt).
template <typename T, int N, int R, bool GRAM>
__device__ __forceinline__ void grid_inverse(T (&a)[N / R][N / R], const Grid<R>& g, int n,
                                             bool unit) {
    constexpr int G = R * R, P = N / R;
    const int x = g.x, y = g.y;
    T dinv[P];  // 1 / l_qq of the lane's diagonal elements (on the lanes x = y), off the chain
#pragma unroll
    for (int q = 0; q < P; ++q) dinv[q] = unit ? T(1) : T(1) / a[q][q];
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        const int jr = j % R, jq = j / R;
        const T d = bcast<G>(dinv[jq], g.at(jr, jr));
#pragma unroll
        for (int q2 = 0; q2 <= jq; ++q2) {  // row j, on the lanes x = j % R
            const int col = y + R * q2;
            const T v = (col == j) ? d : T(0) - d * a[jq][q2];
            a[jq][q2] = (x == jr && col <= j) ? v : a[jq][q2];
        }
        // l_ij of this lane's rows i > j (column j of L), x_jk of its columns k <= j, and
        // conj(x_ji) of its rows i <= j
        T li[P], xj[P], xi[P];
#pragma unroll
        for (int q = jq; q < P; ++q) li[q] = bcast<G>(a[q][jq], g.at(x, jr));
#pragma unroll
        for (int q2 = 0; q2 <= jq; ++q2) xj[q2] = bcast<G>(a[jq][q2], g.at(jr, y));
        if (GRAM) {
#pragma unroll
            for (int q = 0; q <= jq; ++q) xi[q] = conj_(bcast<G>(a[jq][q], g.at(jr, x)));
        }
#pragma unroll
        for (int q = 0; q < P; ++q)
#pragma unroll
            for (int q2 = 0; q2 <= jq && q2 <= q; ++q2) {
                const int col = y + R * q2;
                const bool below = q > jq || (q == jq && x > jr);  // row i > j
                if (q >= jq) {  // rows below j: r_ik += l_ij x_jk, r_ij = l_ij x_jj
                    const T p = li[q] * xj[q2];
                    const T v = (col == j) ? p : a[q][q2] + p;
                    a[q][q2] = (below && col <= j) ? v : a[q][q2];
                }
                if (GRAM && q <= jq) {  // rows i <= j: C_ik += conj(x_ji) x_jk, row j set
                    const T p = xi[q] * xj[q2];
                    const T v = (q == jq && x == jr) ? p : a[q][q2] + p;
                    a[q][q2] = below ? a[q][q2] : v;
                }
            }
    }
    if (GRAM) {
#pragma unroll
        for (int q = 0; q < P; ++q)  // a Hermitian diagonal is real
            a[q][q] = (x == y) ? T(re(a[q][q])) : a[q][q];
    }
}

// The grid kernel of OP (POTRF, TRTRI, POTRI, POTI), with the register kernels' parameters
// (the unused ones ignored), so that one launcher serves both; failures as in `small`.
template <typename T, int N, int R, int OP>
__device__ __forceinline__ void
grid(long long first, long long count, int n, int unit, const long long* tp, long long tb,
     long long ts, long long to, long long tld, int tf, long long* info, int order0, int skip)
{
    constexpr int G = R * R, P = N / R;
    const long long gi = (long long)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    const long long k = first + gi;
    bool live = gi < count;
    if (live && skip && info[k] != 0) live = false;  // a failure found earlier: untouched
    const View<T> t = member<T>(Operand{tp, tb, ts, to, tld, tf}, live, k, n, n);
    const Grid<R> g(G, !(t.flags & TRANSPOSED));
    const bool keep_unit = OP == TRTRI && unit;
    T a[P][P];
    grid_move<T, N, R, false>(a, t, live, g.x, g.y, Lower{keep_unit, n});

    int failed = 0;  // 1-based column of the failure, 0 if none
    if (OP == POTRF || OP == POTI) {
        const int fail = grid_potrf<T, N, R>(a, g, n);
        failed = live ? fail : 0;
    } else if (!keep_unit) {  // TRTRI, POTRI: the first exactly zero pivot
#pragma unroll
        for (int q = P - 1; q >= 0; --q) {  // the lowest wins: lane (x, x) is x (R + 1)
            const unsigned zero = group_ballot<G>(live && g.x == g.y && g.x + R * q < n &&
                                                  is_zero(a[q][q]));
            if (zero) failed = (__ffs(zero) - 1) / (R + 1) + R * q + 1;
        }
    }
    if (info && live && (failed || !skip) && g.lane == 0) info[k] = failed ? order0 + failed : 0;
    if (OP == POTRF || OP == POTI) {  // POTI stores the factor of a failing member only
        grid_move<T, N, R, true>(a, t, OP == POTRF ? live : live && failed, g.x, g.y,
                                 Lower{false, failed ? failed - 1 : n});
        if (OP == POTRF) return;
    }
    grid_inverse<T, N, R, OP != TRTRI>(a, g, n, keep_unit);
    grid_move<T, N, R, true>(a, t, live && !failed, g.x, g.y, Lower{keep_unit, n});
}

#define TRICOV_BATCHED_GRID(NAME, T, N, R, OP, BLOCKS)                                         \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS)                                  \
    NAME(long long first, long long count, int n, int, int unit, T, tricov::real_t<T>,         \
         const long long* tp, long long tb, long long ts, long long to, long long tld, int tf, \
         const long long*, long long, long long, long long, long long, int, long long* info,   \
         int order0, int skip)                                                                 \
    {                                                                                          \
        tricov::batched::grid<T, N, R, OP>(first, count, n, unit, tp, tb, ts, to, tld, tf,     \
                                           info, order0, skip);                                \
    }

// ------------------------------------------------------------------ tensor-core kernels
// TRSM, POTRS and POTRI of orders up to 32 (from those of kernels.MMA_SOLVES) on real types,
// where the device has FP64 MMA: one warp per member, in shared memory rather than registers.
// The triangle (and a tile of 32 columns of B) are staged as doubles (column-major, leading
// dimension MMA_LD: odd, so that a lane per line, row or column, hits distinct banks), zero
// outside the operand and with ones on the diagonal past n (and on the whole of it for a unit
// triangle), so that the padded rows solve to zero and invert to the identity. A solve runs by
// blocks of 8 rows: the products with the blocks already solved are mma.m8n8k4 in double (the
// kernel is a template over the member's type, but float32 keeps its register kernels, see
// kernels.MMA_SOLVES), in the same order as substitution;
// the diagonal block of 8 is substitution proper, one lane per column of the tile, the
// triangle's elements read as shared-memory broadcasts. POTRI is LAPACK's blocked TRTRI and
// LAUUM on blocks of 8 (mma_potri). Loads of the triangle and the first tile are all issued
// before any is parked in shared memory, so that a warp has its whole member in flight. (The
// shuffle kernels broadcast one element per FMA per lane; here a product of 8 x 8 x 4 takes two
// shared-memory loads.)
constexpr int MMA_LD = 37;
constexpr int MMA_TLD = 9;  // leading dimension of POTRI's blocks of 8 x 8 (tb)
// Doubles of shared memory per member (kernels.mma_shared): the triangle, a tile and the
// reciprocals of the diagonal; POTRI: the triangle and three blocks of 8 x 8.
template <int OP> __host__ __device__ constexpr int mma_doubles() {
    return OP == POTRI ? 32 * MMA_LD + 3 * 8 * MMA_TLD : 2 * 32 * MMA_LD + 32;
}

__device__ __forceinline__ void mma884(double& d0, double& d1, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
                 "{%0, %1};" : "+d"(d0), "+d"(d1) : "d"(a), "d"(b));
}

// Lane `lane`'s line of the canonical 32 x 32 block at column c0 of v: a row where rows are
// consecutive in memory (coalesced), else a column; element u, canonical (row(u), col(u)),
// sits at p[u * step]. (One code path for both: templated on the walk, the kernel took more
// registers and ran 5-16% slower.)
template <typename T>
struct Walk {
    T* p;
    long long step;
    int lane;
    bool rows;
    __device__ __forceinline__ Walk(const View<T>& v, int lane_, int c0) : lane(lane_) {
        long long at0, di, dj;
        v.affine(at0, di, dj);
        rows = di == 1 || di == -1;
        p = v.p + at0 + (rows ? lane * di + c0 * dj : (c0 + lane) * dj);
        step = rows ? dj : di;
    }
    __device__ __forceinline__ int row(int u) const { return rows ? lane : u; }
    __device__ __forceinline__ int col(int u) const { return rows ? u : lane; }
};

// x[u] <- element u of the lane's line (Walk) where inside (rows < n, columns < cols; TRI: the
// lower triangle, strict if unit), else 0.
template <bool TRI, typename T>
__device__ __forceinline__ void mma_load(double (&x)[32], const Walk<T>& w, int n, int cols,
                                         bool unit) {
#pragma unroll
    for (int u = 0; u < 32; ++u) {
        const int i = w.row(u), j = w.col(u);
        const bool in = i < n && j < cols && (!TRI || (unit ? i > j : i >= j));
        x[u] = in ? double(w.p[u * w.step]) : 0.0;  // real T: no conjugation
    }
}

// Park x (from mma_load) in s: times alpha, and TRI: ones on the diagonal where it is unit or
// past n.
template <bool TRI, typename T>
__device__ __forceinline__ void mma_park(double* s, const double (&x)[32], const Walk<T>& w,
                                         int n, bool unit, double alpha) {
#pragma unroll
    for (int u = 0; u < 32; ++u) {
        const int i = w.row(u), j = w.col(u);
        s[j * MMA_LD + i] = TRI && i == j && (unit || i >= n) ? 1.0 : TRI ? x[u] : alpha * x[u];
    }
}

// Store s where inside (rows < n, columns < cols; TRI: the lower triangle).
template <bool TRI, typename T>
__device__ __forceinline__ void mma_store(const double* s, const Walk<T>& w, int n, int cols) {
#pragma unroll
    for (int u = 0; u < 32; ++u) {
        const int i = w.row(u), j = w.col(u);
        if (i < n && j < cols && (!TRI || i >= j)) w.p[u * w.step] = T(s[j * MMA_LD + i]);
    }
}

// X <- op(L)^-1 X in shared memory (op: L, or L^T if TRANS), L lower (column-major in ls), X
// a tile of 32 columns (xs), dv[i] = 1 / L_ii. Blocks of 8 rows, first to last (last to
// first if TRANS); lane (g, q) = (lane / 4, lane % 4) holds the mma fragments of block row i:
// A = -op(L)[8i + g][k], B = X[k][8t + g], C = X[8i + g][8t + 2q ... 8t + 2q + 1].
template <bool TRANS>
__device__ __forceinline__ void mma_solve_tile(const double* ls, double* xs, const double* dv,
                                               int lane) {
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int step = 0; step < 4; ++step) {
        const int i = TRANS ? 3 - step : step;
        if (step > 0) {
            double c[4][2];
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                c[t][0] = xs[(8 * t + 2 * q) * MMA_LD + 8 * i + g];
                c[t][1] = xs[(8 * t + 2 * q + 1) * MMA_LD + 8 * i + g];
            }
#pragma unroll
            for (int s = 0; s < step; ++s) {
                const int j = TRANS ? 3 - s : s;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int kk = 8 * j + 4 * h + q;
                    const double a = TRANS ? -ls[(8 * i + g) * MMA_LD + kk]
                                           : -ls[kk * MMA_LD + 8 * i + g];
#pragma unroll
                    for (int t = 0; t < 4; ++t)
                        mma884(c[t][0], c[t][1], a, xs[(8 * t + g) * MMA_LD + kk]);
                }
            }
            __syncwarp();
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                xs[(8 * t + 2 * q) * MMA_LD + 8 * i + g] = c[t][0];
                xs[(8 * t + 2 * q + 1) * MMA_LD + 8 * i + g] = c[t][1];
            }
            __syncwarp();
        }
        double x[8];  // column `lane` of block row i
        double* col = xs + lane * MMA_LD + 8 * i;
        const double* d = ls + 8 * i * (MMA_LD + 1);  // the diagonal block
#pragma unroll
        for (int r = 0; r < 8; ++r) x[r] = col[r];
#pragma unroll
        for (int rr = 0; rr < 8; ++rr) {
            const int r = TRANS ? 7 - rr : rr;
#pragma unroll
            for (int s = 0; s < 8; ++s) {
                if (TRANS ? s > r : s < r)  // op(L)[r][s]: L[s][r] if TRANS
                    x[r] -= (TRANS ? d[r * MMA_LD + s] : d[s * MMA_LD + r]) * x[s];
            }
            x[r] *= dv[8 * i + r];
        }
#pragma unroll
        for (int r = 0; r < 8; ++r) col[r] = x[r];
        __syncwarp();
    }
}

// L (lower, in ls; diagonal blocks of 8 nonzero) <- the lower triangle of (L L^T)^-1 = X^T X,
// X = L^-1, in place, as LAPACK's blocked TRTRI and LAUUM on blocks of 8. First the four
// diagonal blocks of X, a lane per column (substitution with the reciprocals of L's diagonal;
// zeros above the block's diagonal); then block columns j from right to left: T_i = sum over
// j < k <= i of X_ik L_kj for every i > j (into tb, three blocks of 8 x 8, leading dimension
// MMA_TLD), then X_ij = -T_i X_jj over L_ij; then C_ij = sum over k >= i of X_ki^T X_kj by rows
// i from the top, C_ii last in its row, each over X_ij once no later block reads it. Every
// product is on the tensor cores.
__device__ __forceinline__ void mma_potri(double* ls, double* tb, int lane) {
    const int g = lane >> 2, q = lane & 3;
    {
        const int bi = lane >> 3, cc = lane & 7;
        double* d = ls + 8 * bi * (MMA_LD + 1);  // L_ii, (r, s) at d[s MMA_LD + r]
        double l[8][8], y[8];
#pragma unroll
        for (int r = 0; r < 8; ++r)
#pragma unroll
            for (int s2 = 0; s2 <= r; ++s2) l[r][s2] = d[s2 * MMA_LD + r];
        __syncwarp();  // every lane has read its block before any writes over it
#pragma unroll
        for (int r = 0; r < 8; ++r) {
            double acc = r == cc ? 1.0 : 0.0;
#pragma unroll
            for (int s2 = 0; s2 < r; ++s2) acc -= l[r][s2] * y[s2];
            y[r] = r < cc ? 0.0 : acc * (1.0 / l[r][r]);
        }
#pragma unroll
        for (int r = 0; r < 8; ++r) d[cc * MMA_LD + r] = y[r];
    }
    __syncwarp();
#pragma unroll
    for (int j = 2; j >= 0; --j) {
#pragma unroll
        for (int i = j + 1; i < 4; ++i) {
            double c0 = 0.0, c1 = 0.0;
#pragma unroll
            for (int k = j + 1; k <= i; ++k)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int kk = 8 * k + 4 * h + q;
                    mma884(c0, c1, ls[kk * MMA_LD + 8 * i + g], ls[(8 * j + g) * MMA_LD + kk]);
                }
            double* t = tb + (i - j - 1) * 8 * MMA_TLD;
            t[2 * q * MMA_TLD + g] = c0;
            t[(2 * q + 1) * MMA_TLD + g] = c1;
        }
        __syncwarp();
#pragma unroll
        for (int i = j + 1; i < 4; ++i) {
            const double* t = tb + (i - j - 1) * 8 * MMA_TLD;
            double e0 = 0.0, e1 = 0.0;
#pragma unroll
            for (int h = 0; h < 2; ++h)
                mma884(e0, e1, -t[(4 * h + q) * MMA_TLD + g],
                       ls[(8 * j + g) * MMA_LD + 8 * j + 4 * h + q]);
            ls[(8 * j + 2 * q) * MMA_LD + 8 * i + g] = e0;
            ls[(8 * j + 2 * q + 1) * MMA_LD + 8 * i + g] = e1;
        }
        __syncwarp();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int jj = 0; jj <= i; ++jj) {
            const int j = jj < i ? jj : i;  // C_ii last: it reads X_ii
            double c0 = 0.0, c1 = 0.0;
#pragma unroll
            for (int k = i; k < 4; ++k)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int kk = 8 * k + 4 * h + q;
                    mma884(c0, c1, ls[(8 * i + g) * MMA_LD + kk], ls[(8 * j + g) * MMA_LD + kk]);
                }
            __syncwarp();  // every lane has read X_ij
            ls[(8 * j + 2 * q) * MMA_LD + 8 * i + g] = c0;
            ls[(8 * j + 2 * q + 1) * MMA_LD + 8 * i + g] = c1;
            __syncwarp();
        }
}

// TRSM (X <- alpha L^-1 B), POTRS (X <- (L L^T)^-1 B) or POTRI (L <- the lower triangle of
// (L L^T)^-1), one member per warp, with the register kernels' parameters (beta unused) so
// that one launcher serves both; POTRI's failures (an exactly zero pivot) as in `small`.
template <typename T, int OP>
__device__ __forceinline__ void
mma_solve(long long first, long long count, int n, int m, int unit, T alpha,
          const long long* tp, long long tb, long long ts, long long to, long long tld, int tf,
          const long long* rp, long long rb, long long rs, long long ro, long long rld, int rf,
          long long* info, int order0, int skip)
{
    extern __shared__ double mma_shared[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long g = (long long)blockIdx.x * (blockDim.x >> 5) + warp;
    const long long k = first + g;
    if (g >= count || (skip && info[k] != 0)) return;  // a warp per member: no one waits
    double* ls = mma_shared + warp * mma_doubles<OP>();
    double* xs = ls + 32 * MMA_LD;
    double* dv = xs + 32 * MMA_LD;
    const View<T> t = member<T>(Operand{tp, tb, ts, to, tld, tf}, true, k, n, n);
    const View<T> r = member<T>(Operand{rp, rb, rs, ro, rld, rf}, true, k, n, m);
    const bool u = OP == TRSM && unit;
    const double scale = OP == TRSM ? double(alpha) : 1.0;
    const Walk<T> wt(t, lane, 0);
    if (OP == POTRI) {
        double a[32];
        mma_load<true>(a, wt, n, n, false);
        mma_park<true>(ls, a, wt, n, false, 1.0);
        __syncwarp();
        const unsigned zero = __ballot_sync(0xffffffffu, ls[lane * (MMA_LD + 1)] == 0.0);
        const int failed = zero ? __ffs(zero) : 0;  // the first exactly zero pivot, 1-based
        if (info && (failed || !skip) && lane == 0) info[k] = failed ? order0 + failed : 0;
        if (failed) return;  // nothing stored
        mma_potri(ls, xs, lane);  // xs: its three blocks of 8 x 8
        mma_store<true>(ls, wt, n, n);
        return;
    }
    {
        const Walk<T> wr(r, lane, 0);
        double a[32], b[32];
        mma_load<true>(a, wt, n, n, u);
        mma_load<false>(b, wr, n, min(m, 32), false);
        mma_park<true>(ls, a, wt, n, u, 1.0);
        mma_park<false>(xs, b, wr, n, false, scale);
    }
    __syncwarp();
    dv[lane] = 1.0 / ls[lane * (MMA_LD + 1)];
    for (int c0 = 0; c0 < m; c0 += 32) {
        const int cols = min(m - c0, 32);
        const Walk<T> wr(r, lane, c0);
        if (c0 > 0) {
            double b[32];
            mma_load<false>(b, wr, n, cols, false);
            __syncwarp();  // the last tile's stores have read xs
            mma_park<false>(xs, b, wr, n, false, scale);
        }
        __syncwarp();
        mma_solve_tile<false>(ls, xs, dv, lane);
        if (OP == POTRS) mma_solve_tile<true>(ls, xs, dv, lane);
        mma_store<false>(xs, wr, n, cols);
    }
}

// Two members per block (kernels.MMA_MEMBERS); five blocks fit a multiprocessor's shared memory,
// and asking ptxas for them keeps TRSM from spilling (left alone it takes as many registers but
// spills 4 bytes).
#define TRICOV_BATCHED_MMA(NAME, T, OP)                                                        \
    extern "C" __global__ void __launch_bounds__(64, 5)                                        \
    NAME(long long first, long long count, int n, int m, int unit, T alpha,                    \
         tricov::real_t<T>, const long long* tp, long long tb, long long ts, long long to,     \
         long long tld, int tf, const long long* rp, long long rb, long long rs, long long ro, \
         long long rld, int rf, long long* info, int order0, int skip)                         \
    {                                                                                          \
        tricov::batched::mma_solve<T, OP>(first, count, n, m, unit, alpha, tp, tb, ts, to,     \
                                          tld, tf, rp, rb, rs, ro, rld, rf, info, order0,      \
                                          skip);                                               \
    }

// A kernel with C linkage: kernels/nvrtc.py appends TRICOV_BATCHED_SMALL(name, T, N, G, OP,
// BLOCKS) for the one it launches, so that CuPy can cache the binary on disk (it caches modules
// compiled without C++ name expressions only). Members [first, first + count) of the batch,
// blockDim.x / G per block; BLOCKS is the fewest blocks per multiprocessor asked of ptxas (0:
// its own choice of registers, see tricov.kernels.BATCHED_BLOCKS).
#define TRICOV_BATCHED_SMALL(NAME, T, N, G, OP, BLOCKS)                                        \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS)                                  \
    NAME(long long first, long long count, int n, int m, int unit, T alpha,                    \
         tricov::real_t<T> beta, const long long* tp, long long tb, long long ts,              \
         long long to, long long tld, int tf, const long long* rp, long long rb,               \
         long long rs, long long ro, long long rld, int rf, long long* info, int order0,       \
         int skip)                                                                          \
    {                                                                                          \
        tricov::batched::small<T, N, G, OP>(first, count, n, m, unit, alpha, beta, tp, tb, ts, \
                                            to, tld, tf, rp, rb, rs, ro, rld, rf, info,        \
                                            order0, skip);                                     \
    }

// ------------------------------------------------------------------- helpers of the recursion
// out[k] = address of element (0, 0) of block `offset` of member first + k; members that
// failed (info[k] != 0, when info is given) get `dummy`, so cuBLAS writes them nowhere.
__global__ void addresses(long long first, long long count, const long long* ptrs,
                          long long base, long long stride, long long offset,
                          const long long* info, long long dummy, long long* out)
{
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= count) return;
    const long long k = first + g;
    const long long at = (ptrs ? ptrs[k] : base + k * stride) + offset;
    out[g] = (info && info[k] != 0) ? dummy : at;
}

// info[k] (if still 0) <- 1-based index of the first exactly zero diagonal element of the
// n x n block at `offset` of each member (leading dimension ld elements).
template <typename T>
__global__ void zero_pivots(long long first, long long count, int n, const long long* ptrs,
                            long long base, long long stride, long long offset, long long ld,
                            long long* info)
{
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= count) return;
    const long long k = first + g;
    if (info[k] != 0) return;
    const T* p = reinterpret_cast<const T*>((ptrs ? ptrs[k] : base + k * stride) + offset);
    for (int i = 0; i < n; ++i) {
        if (is_zero(p[i + i * ld])) { info[k] = i + 1; return; }
    }
}

// Conjugate in place the rows x cols column-major block at `offset` of every member that has
// not failed (complex types only): all of it (region 0), its lower (1) or upper (2) triangle.
// The sign bit of the imaginary part is flipped as a bit, so that twice is the identity on
// every value, NaN included.
__device__ __forceinline__ float flip_sign(float x) {
    return __int_as_float(__float_as_int(x) ^ 0x80000000);
}
__device__ __forceinline__ double flip_sign(double x) {
    return __longlong_as_double(__double_as_longlong(x) ^ 0x8000000000000000LL);
}
__device__ __forceinline__ float exact_conj(float x) { return x; }
__device__ __forceinline__ double exact_conj(double x) { return x; }
template <typename R> __device__ __forceinline__ cplx<R> exact_conj(cplx<R> x) {
    return cplx<R>(x.re, flip_sign(x.im));
}

template <typename T>
__global__ void conjugate(long long first, long long count, int rows, int cols, int region,
                          const long long* ptrs, long long base, long long stride,
                          long long offset, long long ld, const long long* info)
{
    const long long g = (long long)blockIdx.y * gridDim.x + blockIdx.x;
    if (g >= count) return;
    const long long k = first + g;
    if (info && info[k] != 0) return;
    T* p = reinterpret_cast<T*>((ptrs ? ptrs[k] : base + k * stride) + offset);
    for (int e = threadIdx.x; e < rows * cols; e += blockDim.x) {
        const int i = e % rows, j = e / rows;
        if ((region == 1 && i < j) || (region == 2 && i > j)) continue;
        p[i + j * ld] = exact_conj(p[i + j * ld]);
    }
}

}  // namespace batched
}  // namespace tricov
