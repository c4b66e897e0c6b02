// tricov: register-resident kernels for batches of small matrices (order n <= N <= 32).
//
// A group of N lanes inside one warp (N = 4, 8, 16 or 32; 32 / N groups per warp) owns one
// batch member. Lane l keeps one line of each operand in registers: row l of the square
// operand ("row-owner") or column l of a right-hand-side tile ("column-owner"), whichever
// makes the algorithm's communication a plain broadcast, so every step is a few width-N
// shuffles and FMAs: no shared memory and no barriers. Each operation is written once, in one
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
// reads and writes one memory row (coalesced across the group); when the algorithm wants the
// other line of the operand, a butterfly transpose in registers (log2 N shuffle rounds) moves
// it. Orders n < N are padded: loops stop at n, padding is zero and never stored.
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

// Lane `src` of the caller's group of N lanes.
template <int N> __device__ __forceinline__ float bcast(float v, int src) {
    return __shfl_sync(FULL, v, src, N);
}
template <int N> __device__ __forceinline__ double bcast(double v, int src) {
    return __shfl_sync(FULL, v, src, N);
}
template <int N, typename R> __device__ __forceinline__ cplx<R> bcast(cplx<R> v, int src) {
    return cplx<R>(__shfl_sync(FULL, v.re, src, N), __shfl_sync(FULL, v.im, src, N));
}
// The lane whose index differs from the caller's by `mask`.
template <int N> __device__ __forceinline__ float partner(float v, int mask) {
    return __shfl_xor_sync(FULL, v, mask, N);
}
template <int N> __device__ __forceinline__ double partner(double v, int mask) {
    return __shfl_xor_sync(FULL, v, mask, N);
}
template <int N, typename R> __device__ __forceinline__ cplx<R> partner(cplx<R> v, int mask) {
    return cplx<R>(__shfl_xor_sync(FULL, v.re, mask, N), __shfl_xor_sync(FULL, v.im, mask, N));
}

// The N-bit mask of the lanes of the caller's group for which `pred` holds.
template <int N> __device__ __forceinline__ unsigned group_ballot(bool pred) {
    const unsigned bits = __ballot_sync(FULL, pred);
    if constexpr (N == 32) return bits;
    else return (bits >> ((threadIdx.x & 31) & ~(N - 1))) & ((1u << N) - 1u);
}

// x (lane l: line l of an N x N tile) <- its transpose, by swapping the off-diagonal blocks
// of every size s = N/2, ..., 1: element (l, r) with bit s of l != bit s of r moves to
// (l ^ s, r ^ s). One shuffle per pair of registers per round.
template <typename T, int N> __device__ __forceinline__ void transpose(T (&x)[N], int lane) {
#pragma unroll
    for (int s = N / 2; s >= 1; s /= 2) {
        const bool high = lane & s;
#pragma unroll
        for (int r0 = 0; r0 < N; ++r0) {
            if (r0 & s) continue;
            const int r1 = r0 | s;
            const T got = partner<N>(high ? x[r0] : x[r1], s);
            if (high) x[r0] = got; else x[r1] = got;
        }
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

    // The line of a tile that lane `lane` reads or writes: memory row `lane` of the tile whose
    // first canonical column is c0. Element r of the line is canonical (lane, c0 + r) if the
    // operand is not transposed, else (r, c0 + lane); it sits at p[at + r * step].
    __device__ __forceinline__ void line(int lane, int c0, long long& at, long long& step) const {
        if (!(flags & TRANSPOSED)) {
            const int i = (flags & REV_ROWS) ? nr - 1 - lane : lane;
            const int j = (flags & REV_COLS) ? nc - 1 - c0 : c0;
            at = i + j * ld;
            step = (flags & REV_COLS) ? -ld : ld;
        } else {
            const int j = (flags & REV_COLS) ? nc - 1 - (c0 + lane) : c0 + lane;
            at = j + ((flags & REV_ROWS) ? nr - 1 : 0) * ld;
            step = (flags & REV_ROWS) ? -ld : ld;
        }
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

// x <- a tile of the canonical operand: ROWS, lane l gets row l (x[r] = (l, c0 + r)); else
// column c0 + l (x[r] = (r, c0 + l)). Elements outside the operand or the region are zero.
template <typename T, int N, bool ROWS, typename Region>
__device__ __forceinline__ void load_tile(T (&x)[N], const View<T>& v, bool live, int lane,
                                          int c0, Region in) {
    const bool mem_rows = !(v.flags & TRANSPOSED);  // lanes read memory rows: coalesced
    long long at, step;
    v.line(lane, c0, at, step);
#pragma unroll
    for (int r = 0; r < N; ++r) {
        const int i = mem_rows ? lane : r;
        const int j = c0 + (mem_rows ? r : lane);
        x[r] = (live && i < v.nr && j < v.nc && in(i, j)) ? v.get(at + r * step) : T(0);
    }
    if (ROWS != mem_rows) transpose<T, N>(x, lane);
}

// The tile x (laid out as load_tile's) back to memory, region only. x is left transposed
// where the layouts differ, unless `restore` (one more round of shuffles).
template <typename T, int N, bool ROWS, typename Region>
__device__ __forceinline__ void store_tile(T (&x)[N], const View<T>& v, bool live, int lane,
                                           int c0, Region in, bool restore = false) {
    const bool mem_rows = !(v.flags & TRANSPOSED);
    if (ROWS != mem_rows) transpose<T, N>(x, lane);
    lane = opaque(lane);
    c0 = opaque(c0);
    long long at, step;
    v.line(lane, c0, at, step);
#pragma unroll
    for (int r = 0; r < N; ++r) {
        const int i = mem_rows ? lane : r;
        const int j = c0 + (mem_rows ? r : lane);
        if (live && i < v.nr && j < v.nc && in(i, j)) v.put(at + r * step, x[r]);
    }
    if (restore && ROWS != mem_rows) transpose<T, N>(x, lane);
}

// Register `lane` of x (a run-time index, so a select over the compile-time ones).
template <typename T, int N> __device__ __forceinline__ T own(const T (&x)[N], int lane) {
    T d = x[0];
#pragma unroll
    for (int r = 1; r < N; ++r) d = (r == lane) ? x[r] : d;
    return d;
}

// Make register `lane` of x real (the diagonal of a Hermitian result).
template <typename T, int N> __device__ __forceinline__ void real_diagonal(T (&x)[N], int lane) {
#pragma unroll
    for (int r = 0; r < N; ++r) if (r == lane) x[r] = T(re(x[r]));
}

// ------------------------------------------------------------------------------ algorithms
// a: row-owner (lane i holds row i of the lower triangle; the strict upper part of a row is
// scratch, never stored). b: column-owner tile of right-hand sides.

// Right-looking Cholesky. Returns, on lane j, j + 1 if pivot j was not positive (or NaN).
template <typename T, int N> __device__ __forceinline__ int potrf_rows(T (&a)[N], int n, int lane) {
    using R = real_t<T>;
    int fail = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        const R d = re(bcast<N>(a[j], j));
        if (lane == j && !(d > R(0))) fail = j + 1;
        const R inv = rsqrt(d);  // NaN or infinite for a failing pivot, as 1 / sqrt(d)
        a[j] = (lane == j) ? T(d * inv) : scale(a[j], inv);  // l_jj = sqrt(d); l_ij
#pragma unroll
        for (int k = j + 1; k < N; ++k) {
            if (k >= n) break;
            const T lkj = bcast<N>(a[j], k);
            a[k] -= a[j] * conj_(lkj);  // rows i >= k: A_ik -= l_ij conj(l_kj)
        }
    }
    return fail;
}

// Forward substitution L X = B for one tile (dinv: this lane's 1 / l_ii, or 1 for unit).
template <typename T, int N>
__device__ __forceinline__ void trsm_cols(const T (&a)[N], T (&b)[N], T dinv, bool unit, int n) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        if (!unit) b[j] = b[j] * bcast<N>(dinv, j);
#pragma unroll
        for (int i = j + 1; i < N; ++i) {
            if (i >= n) break;
            b[i] -= bcast<N>(a[j], i) * b[j];  // l_ij from lane i
        }
    }
}

// Backward substitution L^H X = B for one tile (dinv as trsm_cols, non-unit).
template <typename T, int N>
__device__ __forceinline__ void trsm_h_cols(const T (&a)[N], T (&b)[N], T dinv, int n) {
#pragma unroll
    for (int k = N - 1; k >= 0; --k) {
        if (k >= n) continue;
        b[k] = b[k] * conj_(bcast<N>(dinv, k));
#pragma unroll
        for (int j = 0; j < k; ++j) b[j] -= conj_(bcast<N>(a[j], k)) * b[k];  // conj(l_kj)
    }
}

// B <- L B for one tile, bottom row first (row i reads only the rows above it).
template <typename T, int N>
__device__ __forceinline__ void trmm_cols(const T (&a)[N], T (&b)[N], bool unit, int n) {
#pragma unroll
    for (int i = N - 1; i >= 0; --i) {
        if (i >= n) continue;
        T acc = unit ? b[i] : bcast<N>(a[i], i) * b[i];
#pragma unroll
        for (int k = 0; k < i; ++k) acc += bcast<N>(a[k], i) * b[k];
        b[i] = acc;
    }
}

// L <- L^-1 in place, columns right to left: lane i solves x_i L = e_i for its row.
template <typename T, int N>
__device__ __forceinline__ void trtri_rows(T (&a)[N], T dinv, int n, int lane) {
#pragma unroll
    for (int j = N - 1; j >= 0; --j) {
        if (j >= n) continue;
        T acc = (lane == j) ? T(1) : T(0);
#pragma unroll
        for (int k = j + 1; k < N; ++k) {
            if (k >= n) break;
            acc -= a[k] * bcast<N>(a[j], k);  // x_ik (0 above the diagonal) l_kj
        }
        a[j] = acc * bcast<N>(dinv, j);
    }
}

// L <- L^H L in place, column-owner (lane j holds column j): C_ij = sum_{k >= i} conj(l_ki) l_kj.
template <typename T, int N>
__device__ __forceinline__ void lauum_cols(T (&c)[N], int n, int lane) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        if (i >= n) break;
        T acc = T(0);
#pragma unroll
        for (int k = i; k < N; ++k) {
            if (k >= n) break;
            acc += conj_(bcast<N>(c[k], i)) * c[k];
        }
        c[i] = acc;
    }
    real_diagonal<T, N>(c, lane);
}

// ---------------------------------------------------------------------------------- kernel
// The body of the kernel of operation OP for width N (see TRICOV_BATCHED_SMALL below).
template <typename T, int N, int OP>
__device__ __forceinline__ void
small(long long first, long long count, int n, int m, int unit, T alpha, real_t<T> beta,
      const long long* tp, long long tb, long long ts, long long to, long long tld, int tf,
      const long long* rp, long long rb, long long rs, long long ro, long long rld, int rf,
      int* info, int order0, int skip)
{
    const int lane = threadIdx.x & (N - 1);
    const long long g = (long long)blockIdx.x * (blockDim.x / N) + threadIdx.x / N;
    const long long k = first + g;
    bool live = g < count;
    if (live && skip && info[k] != 0) live = false;  // a failure found earlier: untouched
    const Operand top{tp, tb, ts, to, tld, tf}, rop{rp, rb, rs, ro, rld, rf};
    const View<T> t = member<T>(top, live, k, n, n);
    const View<T> r = member<T>(rop, live, k, n, m);
    T a[N], b[N];

    if (OP == HERK) {  // T = C (lower), R = A (n x m)
        T acc[N];
#pragma unroll
        for (int j = 0; j < N; ++j) acc[j] = T(0);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, true>(b, r, live, lane, c0, Whole{});
#pragma unroll
            for (int j = 0; j < N; ++j) {
                if (j >= n) break;
#pragma unroll
                for (int p = 0; p < N; ++p) {
                    if (c0 + p >= m) break;
                    acc[j] += b[p] * conj_(bcast<N>(b[p], j));
                }
            }
        }
        if (beta != real_t<T>(0)) load_tile<T, N, true>(a, t, live, lane, 0, Lower{false, n});
#pragma unroll
        for (int j = 0; j < N; ++j) {
            acc[j] = scale(acc[j], re(alpha));
            if (beta != real_t<T>(0)) acc[j] += scale(a[j], beta);
        }
        real_diagonal<T, N>(acc, lane);
        store_tile<T, N, true>(acc, t, live, lane, 0, Lower{false, n});
        return;
    }

    if (OP == LAUUM) {
        load_tile<T, N, false>(a, t, live, lane, 0, Lower{false, n});
        lauum_cols<T, N>(a, n, lane);
        store_tile<T, N, false>(a, t, live, lane, 0, Lower{false, n});
        return;
    }

    const bool strict = unit && (OP == TRSM || OP == TRMM || OP == TRTRI);
    load_tile<T, N, true>(a, t, live, lane, 0, Lower{strict, n});

    if (OP == TRSM || OP == TRMM) {
        const T dinv = unit ? T(1) : T(1) / own<T, N>(a, lane);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, false>(b, r, live, lane, c0, Whole{});
#pragma unroll
            for (int i = 0; i < N; ++i) b[i] = alpha * b[i];
            if (OP == TRSM) trsm_cols<T, N>(a, b, dinv, unit, n);
            else trmm_cols<T, N>(a, b, unit, n);
            store_tile<T, N, false>(b, r, live, lane, c0, Whole{});
        }
        return;
    }

    if (OP == POTRS) {
        const T dinv = T(1) / own<T, N>(a, lane);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, false>(b, r, live, lane, c0, Whole{});
            trsm_cols<T, N>(a, b, dinv, false, n);
            trsm_h_cols<T, N>(a, b, dinv, n);
            store_tile<T, N, false>(b, r, live, lane, c0, Whole{});
        }
        return;
    }

    // Members that fail: POTRF's first non-positive pivot, or TRTRI's first zero pivot.
    int failed = 0;  // 1-based column of the failure, 0 if none
    if (OP == TRTRI || OP == POTRI) {
        const unsigned zero = group_ballot<N>(live && !(OP == TRTRI && unit) && lane < n &&
                                              is_zero(own<T, N>(a, lane)));
        failed = zero ? __ffs(zero) : 0;
    } else {  // POTRF, POTI, POSV (every lane factors: the shuffles need the whole warp)
        const int fail = potrf_rows<T, N>(a, n, lane);
        const unsigned bad = group_ballot<N>(live && fail != 0);
        failed = bad ? __ffs(bad) : 0;
    }
    if (info && live && (failed || !skip) && lane == 0) info[k] = failed ? order0 + failed : 0;

    // What POTRF, POSV and a failing member of POTI store of the factor: all of it, or the
    // columns before the failure. Shuffles must stay warp-uniform, so members are selected
    // by predicate, never by branch.
    const Lower factored{false, failed ? failed - 1 : n};
    if (OP == POTRF) {
        store_tile<T, N, true>(a, t, live, lane, 0, factored);
        return;
    }
    if (OP == POSV) {  // the factor first: stored after the solves, it would spill (complex)
        store_tile<T, N, true>(a, t, live, lane, 0, factored, true);
        const T dinv = T(1) / own<T, N>(a, lane);
        for (int c0 = 0; c0 < m; c0 += N) {
            load_tile<T, N, false>(b, r, live && !failed, lane, c0, Whole{});
            trsm_cols<T, N>(a, b, dinv, false, n);
            trsm_h_cols<T, N>(a, b, dinv, n);
            store_tile<T, N, false>(b, r, live && !failed, lane, c0, Whole{});
        }
        return;
    }
    if (OP == POTI) store_tile<T, N, true>(a, t, live && failed, lane, 0, factored, true);

    // TRTRI, POTRI, POTI: the inverse of the triangle (unit: of its strict part plus I).
    const bool keep_unit = OP == TRTRI && unit;
    const T dinv = keep_unit ? T(1) : T(1) / own<T, N>(a, lane);
    trtri_rows<T, N>(a, dinv, n, lane);
    if (OP == TRTRI) {
        store_tile<T, N, true>(a, t, live && !failed, lane, 0, Lower{keep_unit, n});
        return;
    }
    transpose<T, N>(a, lane);  // rows of X = L^-1 -> columns, for LAUUM
    lauum_cols<T, N>(a, n, lane);
    store_tile<T, N, false>(a, t, live && !failed, lane, 0, Lower{false, n});
}

// A kernel with C linkage: kernels/nvrtc.py appends TRICOV_BATCHED_SMALL(name, T, N, OP) for
// the one it launches, so that CuPy can cache the binary on disk (it caches modules compiled
// without C++ name expressions only). Members [first, first + count) of the batch, 128 / N
// per block of 128 threads.
#define TRICOV_BATCHED_SMALL(NAME, T, N, OP)                                                   \
    extern "C" __global__ void __launch_bounds__(128)                                          \
    NAME(long long first, long long count, int n, int m, int unit, T alpha,                    \
         tricov::real_t<T> beta, const long long* tp, long long tb, long long ts,     \
         long long to, long long tld, int tf, const long long* rp, long long rb,               \
         long long rs, long long ro, long long rld, int rf, int* info, int order0, int skip)  \
    {                                                                                          \
        tricov::batched::small<T, N, OP>(first, count, n, m, unit, alpha, beta, tp, tb, ts,    \
                                         to, tld, tf, rp, rb, rs, ro, rld, rf, info, order0,  \
                                         skip);                                                \
    }

// ------------------------------------------------------------------- helpers of the recursion
// out[k] = address of element (0, 0) of block `offset` of member first + k; members that
// failed (info[k] != 0, when info is given) get `dummy`, so cuBLAS writes them nowhere.
__global__ void addresses(long long first, long long count, const long long* ptrs,
                          long long base, long long stride, long long offset, const int* info,
                          long long dummy, long long* out)
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
                            int* info)
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
                          long long offset, long long ld, const int* info)
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
