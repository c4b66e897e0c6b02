// tricov: the leaf kernels of the dense recursions on one GPU.
//
// tri_leaf     B <- alpha op(T) B or op(T) X = alpha B for a triangle T of up to a few hundred
//              rows: each block owns a band of columns of B in shared memory and sweeps T in
//              diagonal sub-blocks of SB rows. A solve multiplies by the inverse of a
//              sub-block where tri_inv found it well conditioned, else substitutes.
// tri_inv      inverses of the diagonal blocks of a triangle (one block of threads each, in
//              shared memory) with a flag per block saying whether its Skeel condition number
//              || |T^-1| |T| || is small enough for tri_leaf to use it; or one inverse in place
//              (the TRTRI leaf).
// tri_rows     row sums of |T| on diagonal blocks, for tri_cond.
// tri_cond     the same test on inverses of larger diagonal blocks assembled from tri_inv's.
// potrf_leaf   Cholesky factor of one diagonal block in shared memory (the POTRF leaf).
// potrf_tiles  Cholesky factor of a larger block by tiles of 32, every block of threads the
//              device holds taking tiles in dependency order (the POTRF leaf up to 2048 rows).
// lauum_leaf   L^H L of one diagonal block in shared memory (the LAUUM leaf).
//
// Matrices are logical views as everywhere in tricov: (pointer, leading dimension, op), op as
// in tricov/_options.py; `lower` says which logical triangle is referenced. Every kernel runs
// THREADS threads per block and takes its shared memory dynamically (sizes in
// tricov/kernels/__init__.py).
#include "common.cuh"

namespace tricov {

constexpr int THREADS = 256;
// Global memory is read in batches of BATCH elements per thread, all loads issued before the
// first store, so that a thread waits for memory once per batch rather than once per element.
constexpr int BATCH = 8;

template <typename T>
__device__ __forceinline__ T* shared_as() {
    extern __shared__ __attribute__((aligned(16))) unsigned char tricov_smem[];
    return reinterpret_cast<T*>(tricov_smem);
}

// ------------------------------------------------------------------------ triangular leaf

// How a panel of T is staged: as stored; as a triangle (zeros beyond the diagonal, ones on a
// unit diagonal); strictly inside the triangle with row i scaled by scale[i].
enum Stage { PLAIN = 0, TRIANGLE = 1, SCALED = 2 };

// One band of columns of B in shared memory and the panels of T that act on it. Thread
// (tr, tc) holds rows tr + TR u (u < 4) of a sub-block and columns tc + TC v (v < CPT).
template <typename T, int SBM, int CPT, int KP, bool LOWER>
struct Band {
    static constexpr int TR = SBM / 4;             // threads along the rows
    static constexpr int TC = THREADS / TR;        // column groups
    static constexpr int CB = TC * CPT;            // columns of B per block of threads
    static constexpr int MLD = SBM + 1;            // leading dimension of a staged panel
    static constexpr int PF = SBM * KP / THREADS;  // panel elements each thread stages

    T* Ms;           // staged panel: SBM x KP
    T* Bs;           // the band of B: n x CB, leading dimension bld
    const T* scale;  // row factors of SCALED panels
    int bld, tr, tc;

    // Element (i, kk) of a panel is src(r0 + i, c0 + kb + kk), for i < rows and
    // 0 <= kb + kk < kcount (zero elsewhere). Consecutive threads walk memory consecutively.
    __device__ void fetch(T (&pre)[PF], const T* src, long long ld, int op, int r0, int c0,
                          int rows, int kb, int kcount, int mode, int unit) const {
        const bool across = op & 1;
#pragma unroll
        for (int q = 0; q < PF; ++q) {
            const int e = threadIdx.x + THREADS * q;
            const int i = across ? e / KP : e % SBM;
            const int k = kb + (across ? e % KP : e / SBM);
            T v = T(0);
            if (i < rows && k >= 0 && k < kcount) {
                const int gi = r0 + i, gk = c0 + k;
                const bool beyond = LOWER ? gk > gi : gk < gi;
                if (mode == TRIANGLE && beyond) {
                    v = T(0);
                } else if (mode == TRIANGLE && gk == gi && unit) {
                    v = T(1);
                } else if (mode == SCALED && (beyond || gk == gi)) {
                    v = T(0);
                } else {
                    v = load(src, ld, op, gi, gk);
                    if (mode == SCALED) v = v * scale[i];
                }
            }
            pre[q] = v;
        }
    }

    __device__ void put(const T (&pre)[PF], int op) const {
        const bool across = op & 1;
#pragma unroll
        for (int q = 0; q < PF; ++q) {
            const int e = threadIdx.x + THREADS * q;
            const int i = across ? e / KP : e % SBM;
            const int kk = across ? e % KP : e / SBM;
            Ms[i + kk * MLD] = pre[q];
        }
    }

    // acc[u][v] (-)+= sum_k src(r0 + i_u, c0 + k) Bs(b0 + k, c_v), k < kcount; the next panel
    // is fetched while the current one is used.
    template <bool NEG>
    __device__ void gemm(T (&acc)[4][CPT], const T* src, long long ld, int op, int r0, int c0,
                         int rows, int kcount, int b0, int mode, int unit) const {
        T pre[PF];
        fetch(pre, src, ld, op, r0, c0, rows, 0, kcount, mode, unit);
        for (int kb = 0; kb < kcount; kb += KP) {
            __syncthreads();  // the previous panel has been read
            put(pre, op);
            __syncthreads();
            if (kb + KP < kcount) fetch(pre, src, ld, op, r0, c0, rows, kb + KP, kcount, mode, unit);
            const int kn = min(KP, kcount - kb);
#pragma unroll
            for (int kk = 0; kk < KP; ++kk) {
                if (kk < kn) {
                    T b[CPT];
#pragma unroll
                    for (int v = 0; v < CPT; ++v) b[v] = Bs[b0 + kb + kk + (tc + TC * v) * bld];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const T a = Ms[tr + TR * u + kk * MLD];
#pragma unroll
                        for (int v = 0; v < CPT; ++v) {
                            if (NEG) acc[u][v] -= a * b[v];
                            else acc[u][v] += a * b[v];
                        }
                    }
                }
            }
        }
    }

    __device__ void publish(const T (&acc)[4][CPT], int r0, int row) const {
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (tr + TR * u == row)
#pragma unroll
                for (int v = 0; v < CPT; ++v) Bs[r0 + row + (tc + TC * v) * bld] = acc[u][v];
    }

    __device__ void write(const T (&acc)[4][CPT], int r0, int rp, T factor) const {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int i = tr + TR * u;
            if (i < rp)
#pragma unroll
                for (int v = 0; v < CPT; ++v) Bs[r0 + i + (tc + TC * v) * bld] = factor * acc[u][v];
        }
    }

    // Solve the sub-block T(r0.., r0..) (rp rows) for the rows acc holds, by substitution: the
    // rows are scaled by the inverse diagonal first, so that each step is one broadcast of
    // the row just finished and one update of the rows after it (one barrier per step).
    __device__ void substitute(T (&acc)[4][CPT], T* scl, const T* A, long long lda, int opa,
                               int r0, int rp, int unit) const {
        __syncthreads();  // scl is free
        for (int i = threadIdx.x; i < rp; i += THREADS)
            scl[i] = unit ? T(1) : T(1) / load(A, lda, opa, r0 + i, r0 + i);
        __syncthreads();
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (tr + TR * u < rp)
#pragma unroll
                for (int v = 0; v < CPT; ++v) acc[u][v] = acc[u][v] * scl[tr + TR * u];
        publish(acc, r0, LOWER ? 0 : rp - 1);
        const int panels = (rp + KP - 1) / KP;
        int kb = LOWER ? 0 : rp - KP;
        T pre[PF];
        fetch(pre, A, lda, opa, r0, r0, rp, kb, rp, SCALED, unit);
        for (int j = 0; j < panels; ++j) {
            const int cur = kb;
            __syncthreads();
            put(pre, opa);
            __syncthreads();
            kb += LOWER ? KP : -KP;
            if (j + 1 < panels) fetch(pre, A, lda, opa, r0, r0, rp, kb, rp, SCALED, unit);
#pragma unroll
            for (int q = 0; q < KP; ++q) {
                const int kk = LOWER ? q : KP - 1 - q;
                const int step = cur + kk;
                if (step < 0 || step >= rp) continue;  // the same for every thread
                T x[CPT];
#pragma unroll
                for (int v = 0; v < CPT; ++v) x[v] = Bs[r0 + step + (tc + TC * v) * bld];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const int i = tr + TR * u;
                    if (i < rp && (LOWER ? i > step : i < step)) {
                        const T m = Ms[i + kk * MLD];
#pragma unroll
                        for (int v = 0; v < CPT; ++v) acc[u][v] -= m * x[v];
                    }
                }
                const int next = LOWER ? step + 1 : step - 1;
                if (next >= 0 && next < rp) publish(acc, r0, next);
                __syncthreads();
            }
        }
    }
};

// B (n x ncols) <- alpha op(T) B (SOLVE = false) or X with op(T) X = alpha B (SOLVE = true),
// T = op_a(A) n x n, lower if LOWER. Each block of threads owns CB columns; T is swept in
// sub-blocks of sb <= SBM rows. A solve uses D (the inverses of the diagonal sub-blocks, sb x sb
// column-major each, zeros outside their triangle) for the sub-blocks whose flag in ok is set,
// and substitution for the others (everywhere when ok is null). Nothing is done when gate is
// set and points to a non-zero flag (a leaf whose block a GEMM with its inverse solves instead).
template <typename T, int SBM, int CPT, int KP, bool SOLVE, bool LOWER>
__global__ void __launch_bounds__(THREADS, 1)
tri_leaf(int n, int ncols, int sb, T alpha, const T* __restrict__ A, long long lda, int opa,
         T* B, long long ldb, int opb, int unit, const T* __restrict__ D,
         const int* __restrict__ ok, const int* __restrict__ gate)
{
    if (gate != nullptr && *gate != 0) return;
    using Bd = Band<T, SBM, CPT, KP, LOWER>;
    constexpr int TR = Bd::TR, TC = Bd::TC, CB = Bd::CB, MLD = Bd::MLD;
    T* smem = shared_as<T>();
    T* scl = smem + MLD * KP;
    Bd band;
    band.Ms = smem;
    band.scale = scl;
    band.Bs = scl + SBM;
    band.bld = n | 1;
    band.tr = threadIdx.x % TR;
    band.tc = threadIdx.x / TR;
    T* Bs = band.Bs;
    const int bld = band.bld, tr = band.tr, tc = band.tc;
    const int col0 = blockIdx.x * CB;
    const int width = min(CB, ncols - col0);

    for (int e0 = threadIdx.x; e0 < n * CB; e0 += THREADS * BATCH) {
        T v[BATCH];
#pragma unroll
        for (int q = 0; q < BATCH; ++q) {
            const int e = e0 + THREADS * q;
            const int i = (opb & 1) ? e / CB : e % n;
            const int c = (opb & 1) ? e % CB : e / n;
            v[q] = e < n * CB && c < width ? load(B, ldb, opb, i, col0 + c) : T(0);
        }
#pragma unroll
        for (int q = 0; q < BATCH; ++q) {
            const int e = e0 + THREADS * q;
            const int i = (opb & 1) ? e / CB : e % n;
            const int c = (opb & 1) ? e % CB : e / n;
            if (e < n * CB) Bs[i + c * bld] = SOLVE ? alpha * v[q] : v[q];
        }
    }
    __syncthreads();

    const int phases = (n + sb - 1) / sb;
    for (int s = 0; s < phases; ++s) {
        // Solves run forward for lower triangles; products from the far end.
        const int p = (SOLVE == LOWER) ? s : phases - 1 - s;
        const int r0 = p * sb, rp = min(sb, n - r0);
        T acc[4][CPT];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int v = 0; v < CPT; ++v) {
                const int i = tr + TR * u;
                acc[u][v] = (SOLVE && i < rp) ? Bs[r0 + i + (tc + TC * v) * bld] : T(0);
            }
        if (SOLVE) {
            // rows of this sub-block minus the part of T off its diagonal block times the
            // rows already solved
            const int k0 = LOWER ? 0 : r0 + rp, k1 = LOWER ? r0 : n;
            if (k1 > k0)
                band.template gemm<true>(acc, A, lda, opa, r0, k0, rp, k1 - k0, k0, PLAIN, 0);
            if (ok != nullptr && ok[p] != 0) {
                band.write(acc, r0, rp, T(1));
                T x[4][CPT];
#pragma unroll
                for (int u = 0; u < 4; ++u)
#pragma unroll
                    for (int v = 0; v < CPT; ++v) x[u][v] = T(0);
                band.template gemm<false>(x, D + (long long)p * sb * sb, sb, 0, 0, 0, rp, rp, r0,
                                          PLAIN, 0);
                __syncthreads();  // the rows have been read
                band.write(x, r0, rp, T(1));
            } else {
                band.substitute(acc, scl, A, lda, opa, r0, rp, unit);
                band.write(acc, r0, rp, T(1));
            }
        } else {
            const int k0 = LOWER ? 0 : r0, k1 = LOWER ? r0 + rp : n;
            band.template gemm<false>(acc, A, lda, opa, r0, k0, rp, k1 - k0, k0, TRIANGLE, unit);
            __syncthreads();  // the rows have been read
            band.write(acc, r0, rp, alpha);
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < n * CB; e += THREADS) {
        const int i = (opb & 1) ? e / CB : e % n;
        const int c = (opb & 1) ? e % CB : e / n;
        if (c < width) store(B, ldb, opb, i, col0 + c, Bs[i + c * bld]);
    }
}

// ------------------------------------------------------------- diagonal blocks in shared memory
// A block of order n <= SBM sits in S (SBM x SBM, leading dimension SBM + 1) as a lower
// triangle with zeros above; it is padded to n32 (n rounded up to 32) with zeros or the
// identity. Work is split in 32 x 32 tiles: warp w, lane l.

// S(i, j) <- L(i, j) for the lower triangle L of the logical block at (r0, r0) of op(A), or the
// transpose of its upper triangle; ones on the diagonal if unit_one.
template <typename T, int SBM>
__device__ void load_lower(T* S, const T* A, long long lda, int op, int r0, int n, int n32,
                           bool lower, bool unit_one, bool pad_identity) {
    constexpr int LD = SBM + 1, PB = 32, WARPS = THREADS / 32;
    const bool across = ((op & 1) != 0) == lower;  // memory runs along the rows of L
    const int lane = threadIdx.x & 31, fast = n32 / 32;
    // Lanes run along memory, warps across it; a thread issues up to PB loads before it stores
    // any.
    for (int p = 0, q = threadIdx.x >> 5; q < n32;) {
        T v[PB];
        int at[PB];
#pragma unroll
        for (int u = 0; u < PB; ++u) at[u] = -1;
#pragma unroll
        for (int u = 0; u < PB; ++u) {
            if (q >= n32) break;
            const int f = lane + 32 * p, i = across ? q : f, j = across ? f : q;
            T x = T(0);
            if (i < n && j < n) {
                if (i == j && unit_one) x = T(1);
                else if (i >= j) x = lower ? load(A, lda, op, r0 + i, r0 + j)
                                           : load(A, lda, op, r0 + j, r0 + i);
            } else if (i == j && pad_identity) {
                x = T(1);
            }
            at[u] = i + j * LD;
            v[u] = x;
            if (++p == fast) {
                p = 0;
                q += WARPS;
            }
        }
#pragma unroll
        for (int u = 0; u < PB; ++u)
            if (at[u] >= 0) S[at[u]] = v[u];
    }
}

// The inverse of load_lower for i, j < n (the diagonal skipped if skip_diag).
template <typename T, int SBM>
__device__ void store_lower(const T* S, T* A, long long lda, int op, int r0, int n, bool lower,
                            bool skip_diag) {
    constexpr int LD = SBM + 1;
    const bool across = ((op & 1) != 0) == lower;
    for (int q = threadIdx.x >> 5; q < n; q += THREADS / 32) {
        for (int f = threadIdx.x & 31; f < n; f += 32) {  // lanes along memory
            const int i = across ? q : f, j = across ? f : q;
            if (i < j || (i == j && skip_diag)) continue;
            const T v = S[i + j * LD];
            if (lower) store(A, lda, op, r0 + i, r0 + j, v);
            else store(A, lda, op, r0 + j, r0 + i, v);
        }
    }
}

// acc[u][v] += sum_{k0 <= k < k1} a(i_u, k) b(k, j_v) over S, i_u = ia + lane + 32 u (u < nu),
// j_v = jb + warp + 8 v; a(i, k) = S(i, k) or conj(S(k, i)) (TA), b(k, j) = S(k, j) or
// conj(S(j, k)) (TB).
template <typename T, int SBM, int U, bool TA, bool TB>
__device__ void sq_mm(T (&acc)[U][4], const T* S, int ia, int nu, int jb, int k0, int k1) {
    constexpr int LD = SBM + 1;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll 2
    for (int k = k0; k < k1; ++k) {
        T b[4];
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            const int j = jb + warp + 8 * v;
            b[v] = TB ? conj_(S[j + k * LD]) : S[k + j * LD];
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (u < nu) {
                const int i = ia + lane + 32 * u;
                const T a = TA ? conj_(S[k + i * LD]) : S[i + k * LD];
#pragma unroll
                for (int v = 0; v < 4; ++v) acc[u][v] += a * b[v];
            }
        }
    }
}

template <typename T, int U>
__device__ __forceinline__ void zero(T (&acc)[U][4]) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
        for (int v = 0; v < 4; ++v) acc[u][v] = T(0);
}

// S(i_u, j_v) <- sign acc[u][v] for the rows and columns of sq_mm.
template <typename T, int SBM, int U>
__device__ void sq_put(T* S, const T (&acc)[U][4], int ia, int nu, int jb, bool negate) {
    constexpr int LD = SBM + 1;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int u = 0; u < U; ++u)
        if (u < nu)
#pragma unroll
            for (int v = 0; v < 4; ++v)
                S[ia + lane + 32 * u + (jb + warp + 8 * v) * LD] =
                    negate ? T(0) - acc[u][v] : acc[u][v];
}

// The lower 32 x 32 block at S(o.., o..) <- its inverse (one warp; lane = column, forward
// substitution on the identity). dinv holds the reciprocals of its diagonal.
template <typename T, int SBM>
__device__ void invert32(T* S, int o, const T* dinv) {
    constexpr int LD = SBM + 1;
    const int lane = threadIdx.x & 31;
    T x[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) x[i] = i == lane ? T(1) : T(0);
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        x[k] = x[k] * dinv[o + k];
#pragma unroll
        for (int i = k + 1; i < 32; ++i) x[i] -= S[(o + i) + (o + k) * LD] * x[k];
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 32; ++i)
        if (i >= lane) S[(o + i) + (o + lane) * LD] = x[i];
    __syncwarp();
}

// Inverses of the diagonal blocks of the triangle T = op_a(A) (n x n, lower if `lower`): block
// b (rows b bs .. b bs + bs - 1, the last one shorter) is handled by block of threads b.
// INPLACE: the block (grid of one, bs = n) is overwritten by its inverse and info[0] gets 0,
// or 1 + the first zero diagonal element (A then unchanged). Otherwise the inverse goes to
// D + b bs^2 (bs x bs column-major, zeros outside the triangle) and ok[b] says whether the
// Skeel condition number || |T_bb^-1| |T_bb| ||_inf is at most tau (else D gets the identity).
template <typename T, int SBM, bool INPLACE>
__global__ void __launch_bounds__(THREADS, 1)
tri_inv(int n, int bs, T* A, long long lda, int opa, int lower, int unit, T* D, int* ok,
        int* info, real_t<T> tau)
{
    using R = real_t<T>;
    constexpr int LD = SBM + 1, UB = SBM / 32 - 1;
    T* S = shared_as<T>();
    T* dinv = S + SBM * LD;
    R* rowsum = reinterpret_cast<R*>(dinv + SBM);
    __shared__ int zero_at;
    const int b = blockIdx.x, r0 = b * bs, nb = min(bs, n - r0), n32 = (nb + 31) & ~31;
    const int tid = threadIdx.x, warp = tid >> 5;
    if (tid == 0) zero_at = nb;
    load_lower<T, SBM>(S, A, lda, opa, r0, nb, n32, lower, unit, true);
    __syncthreads();
    if (tid < n32) {
        const T d = S[tid + tid * LD];
        if (tid < nb && mag(d) == R(0)) atomicMin(&zero_at, tid);
        dinv[tid] = T(1) / d;
        R s = R(0);
        for (int j = 0; j <= tid; ++j) s += mag(S[tid + j * LD]);
        rowsum[tid] = s;
    }
    __syncthreads();
    const bool singular = zero_at < nb;  // then only the status is written in place
    if (singular && INPLACE) {
        if (tid == 0) info[0] = zero_at + 1;
        return;
    }
    if (!singular) {
        if (warp < n32 / 32) invert32<T, SBM>(S, 32 * warp, dinv);
        __syncthreads();
        // Block columns right to left: X21 <- -(X22 L21) X11, with X22 and X11 inverted.
        for (int jb = n32 / 32 - 2; jb >= 0; --jb) {
            const int r = 32 * (jb + 1), hb = n32 / 32 - jb - 1;
            T acc[UB][4];
            zero(acc);
            sq_mm<T, SBM, UB, false, false>(acc, S, r, hb, 32 * jb, r, n32);
            __syncthreads();
            sq_put<T, SBM, UB>(S, acc, r, hb, 32 * jb, false);
            __syncthreads();
            zero(acc);
            sq_mm<T, SBM, UB, false, false>(acc, S, r, hb, 32 * jb, 32 * jb, 32 * jb + 32);
            __syncthreads();
            sq_put<T, SBM, UB>(S, acc, r, hb, 32 * jb, true);
            __syncthreads();
        }
        if (INPLACE) {
            store_lower<T, SBM>(S, A, lda, opa, r0, nb, lower, unit);
            if (tid == 0) info[0] = 0;
            return;
        }
    }
    int bad = singular;
    if (!singular && tid < nb) {
        R w = R(0);
        for (int j = 0; j <= tid; ++j) w += mag(S[tid + j * LD]) * rowsum[j];
        bad = !(w <= tau);  // NaN too
    }
    bad = __syncthreads_or(bad);
    // A block that fails the test is stored as the identity: a GEMM with it leaves alone the
    // rows that tri_leaf has solved by substitution.
    T* out = D + (long long)b * bs * bs;
    for (int e = tid; e < bs * bs; e += THREADS) {
        const int i = e % bs, j = e / bs;
        T v = T(0);
        if (bad) v = T(i == j ? 1 : 0);
        else if (i < nb && j < nb && (lower ? i >= j : i <= j))
            v = lower ? S[i + j * LD] : S[j + i * LD];
        out[e] = v;
    }
    if (tid == 0) ok[b] = !bad;
}

// rs[b bs + j] <- || row j of T_bb ||_1 for the diagonal blocks T_bb of order bs of T = op_a(A)
// (lower if `lower`; unit: ones on the diagonal), bs / 32 blocks of threads per diagonal block:
// the row sums tri_cond weighs |D_b| by. Each block of threads sums 32 rows, its 8 warps
// taking every eighth column; lanes run along memory (a row per lane where memory runs down
// the columns of T, else along the row).
// Summed once here, not by every slice of tri_cond that needs them: there, each slice summed
// all the rows above its own, a thread per row, and that took 69 of the 101 us of tri_cond in
// a float64 TRSM of 16384 x 256 (leaves of 512) and 54 of 74 in a float32 one (one H100,
// benchmarks/README.md).
template <typename T>
__global__ void __launch_bounds__(THREADS)
tri_rows(int bs, const T* A, long long lda, int opa, int lower, int unit, real_t<T>* rs)
{
    using R = real_t<T>;
    constexpr int WARPS = THREADS / 32;
    __shared__ R part[WARPS][32];
    const int first = blockIdx.x * 32, b = first / bs, r0 = b * bs, j0 = first - r0;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const bool by_lane = (opa & 1) == 0;
    // Row j of the block: columns [0, j) (lower) or (j, bs) (upper), the diagonal apart.
    auto sum = [&](int j, int k, int step) {
        const int k1 = lower ? j : bs;
        R s[4] = {R(0), R(0), R(0), R(0)};
        for (; k + 3 * step < k1; k += 4 * step)
#pragma unroll
            for (int u = 0; u < 4; ++u) s[u] += mag(load(A, lda, opa, r0 + j, r0 + k + u * step));
        for (; k < k1; k += step) s[0] += mag(load(A, lda, opa, r0 + j, r0 + k));
        return s[0] + s[1] + s[2] + s[3];
    };
    if (by_lane) {  // lane: row j0 + lane; warp: every WARPS-th column
        const int j = j0 + lane;
        part[warp][lane] = j < bs ? sum(j, (lower ? 0 : j + 1) + warp, WARPS) : R(0);
    } else {        // warp: rows j0 + warp + WARPS t; lanes along the row
        for (int t = warp; t < 32; t += WARPS) {
            const int j = j0 + t;
            R s = j < bs ? sum(j, (lower ? 0 : j + 1) + lane, 32) : R(0);
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) part[0][t] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x < 32 && j0 + lane < bs) {
        const int j = j0 + lane;
        R s = part[0][lane];
        if (by_lane)
            for (int w = 1; w < WARPS; ++w) s += part[w][lane];
        rs[r0 + j] = s + (unit ? R(1) : mag(load(A, lda, opa, r0 + j, r0 + j)));
    }
}

// The test of tri_inv on inverses assembled elsewhere: D + b bs^2 holds the inverse (bs x bs
// column-major, zeros outside the triangle) of the diagonal block b of T (every block of order
// bs, lower if `lower`), ok[b] whether the blocks it was assembled from passed, and rs + b bs the
// row sums of |T_bb| (tri_rows). ok[b] is left set only where it was and
// || |D_b| |T_bb| ||_inf <= tau; elsewhere D_b becomes the identity.
//
// Each diagonal block is shared by `split` blocks of threads (block b / split, rows slice
// b % split of bs / split rows, bs / split dividing THREADS): a row of |D_b| |T_bb| e is
// summed by THREADS split / bs threads, each over every (THREADS split / bs)-th group of 8
// columns of the row's triangle. A slice that fails writes the identity and clears ok (the
// other slices may then read some of it: they can only find smaller sums, and the block has
// failed anyway). On one H100, one block of threads per diagonal block, reading whole rows of
// D_b, took 167 us of a float32 TRSM of 16384 x 128 (32 blocks of 512) and 60 us of a float64
// one (64 of 256); these slices, reading the triangle only, 73 and 45 us (the TRSMs 1.559 ->
// 1.43 ms and 1.448 -> 1.438 ms; benchmarks/gpu_trsm_few_rhs_profile.py, each tree twice in one
// run).
template <typename T>
__global__ void __launch_bounds__(THREADS)
tri_cond(int bs, int lower, T* D, int* ok, const real_t<T>* rs, real_t<T> tau, int split)
{
    using R = real_t<T>;
    __shared__ R part[THREADS];
    const int b = blockIdx.x / split, rows = bs / split, i0 = (blockIdx.x % split) * rows;
    const R* sums = rs + (long long)b * bs;
    T* inv = D + (long long)b * bs * bs;
    const int parts = THREADS / rows, i = i0 + threadIdx.x % rows, p = threadIdx.x / rows;
    // Row i's triangle in groups of 8 columns (bs is a multiple of 8; the stored zeros beside
    // the diagonal add nothing).
    const int j0 = lower ? 0 : i & ~7, j1 = lower ? (i | 7) + 1 : bs;
    R w[8] = {};
    for (int j = j0 + 8 * p; j < j1; j += 8 * parts)
#pragma unroll
        for (int u = 0; u < 8; ++u) w[u] += mag(inv[i + (long long)(j + u) * bs]) * sums[j + u];
#pragma unroll
    for (int u = 1; u < 8; ++u) w[0] += w[u];
    part[threadIdx.x] = w[0];
    __syncthreads();
    int bad = ok[b] == 0;
    if (threadIdx.x < rows) {
        R sum = R(0);
        for (int q = 0; q < parts; ++q) sum += part[threadIdx.x + q * rows];
        bad |= !(sum <= tau);  // NaN too
    }
    bad = __syncthreads_or(bad);
    if (!bad) return;
    for (long long e = threadIdx.x; e < (long long)bs * bs; e += THREADS)
        inv[e] = T(e % bs == e / bs ? 1 : 0);
    if (threadIdx.x == 0) ok[b] = 0;
}

// ------------------------------------------------------------------------- POTRF leaf
// The steps of a Cholesky factorization in shared memory (column-major, leading dimension ld)
// on 32 columns from column o: chol32 factors their diagonal block, solve_rows the rows below
// it, update_rows takes them out of the columns to their right.

// The 32 x 32 diagonal block at S(o, o) <- its Cholesky factor (lower triangle; one warp, lane
// = row, right-looking in registers: the rest of each column by broadcast from shared memory,
// which keeps the code short). The next pivot comes by shuffle from the lane that owns it as
// soon as that lane has its own element of the column (the same operations as its update, so
// the same value): the chain from pivot to pivot does not wait for shared memory. Returns the
// first column whose pivot is not positive (or is NaN), or -1, the same on every lane;
// dinv[o + j] gets 1 / L(o + j, o + j). Elements above the diagonal are left undefined, and
// those of the rows below the failing column's pivot, in the columns after it, as they were.
template <typename T>
__device__ int chol32(T* S, int ld, int o, real_t<T>* dinv) {
    using R = real_t<T>;
    const int lane = threadIdx.x & 31;
    T* row = S + o + lane + o * ld;
    T r[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) r[k] = row[k * ld];
    int bad = -1;
    R piv = re(shfl(r[0], 0));
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        if (!(piv > R(0))) {  // the columns from j on stay as they are
            bad = j;
            break;
        }
        const R rs = rsq(piv);
        r[j] = lane == j ? T(piv * rs) : r[j] * T(rs);
        if (j < 31) piv = re(shfl(r[j + 1] - r[j] * conj_(r[j]), j + 1));
        if (lane == 0) dinv[o + j] = rs;
        row[j * ld] = r[j];
        __syncwarp();
        const T* lj = S + o + (o + j) * ld;
#pragma unroll
        for (int k = j + 1; k < 32; ++k) r[k] -= r[j] * conj_(lj[k]);
    }
    __syncwarp();
    return bad;
}

// Rows [r0, r1) of S, columns o .. o + 31: X <- X L^-H for the factor L at S(o, o) (a row per
// thread, right-looking in registers; L is read by broadcast).
template <typename T>
__device__ void solve_rows(T* S, int ld, int o, int r0, int r1, const real_t<T>* dinv) {
    for (int i = r0 + threadIdx.x; i < r1; i += THREADS) {
        T x[32];
#pragma unroll
        for (int k = 0; k < 32; ++k) x[k] = S[i + (o + k) * ld];
#pragma unroll
        for (int k = 0; k < 32; ++k) {
            x[k] = x[k] * T(dinv[o + k]);
#pragma unroll
            for (int m = k + 1; m < 32; ++m) x[m] -= x[k] * conj_(S[(o + m) + (o + k) * ld]);
        }
#pragma unroll
        for (int k = 0; k < 32; ++k) S[i + (o + k) * ld] = x[k];
    }
}

// Rows [r0, r1) of S, columns [c0, c1) (c1 - c0 a multiple of 32), on and below the diagonal:
// S(i, j) -= sum_k S(i, o + k) conj(S(j, o + k)), k < 32 (a row per thread).
template <typename T>
__device__ void update_rows(T* S, int ld, int o, int r0, int r1, int c0, int c1) {
    for (int i = r0 + threadIdx.x; i < r1; i += THREADS) {
        for (int c = c0; c < c1 && c <= i; c += 32) {
            T acc[32];
#pragma unroll
            for (int j = 0; j < 32; ++j) acc[j] = T(0);
#pragma unroll 4
            for (int k = 0; k < 32; ++k) {
                const T a = S[i + (o + k) * ld];
#pragma unroll
                for (int j = 0; j < 32; ++j) acc[j] += a * conj_(S[(c + j) + (o + k) * ld]);
            }
#pragma unroll
            for (int j = 0; j < 32; ++j)
                if (c + j <= i) S[i + (c + j) * ld] -= acc[j];
        }
    }
}

// The Cholesky factor of the Hermitian n x n logical view op_a(A) (n <= SBM; lower triangle read
// and written) in shared memory, 32 columns at a time. info[0] gets 0 or the order of the first
// leading minor that is not positive definite; A then holds the partial factor.
template <typename T, int SBM>
__global__ void __launch_bounds__(THREADS, 1)
potrf_leaf(int n, T* A, long long lda, int opa, int* info)
{
    using R = real_t<T>;
    constexpr int LD = SBM + 1;
    T* S = shared_as<T>();
    R* dinv = reinterpret_cast<R*>(S + SBM * LD);
    __shared__ int fail;
    const int n32 = (n + 31) & ~31, tid = threadIdx.x;
    if (tid == 0) fail = 0;
    load_lower<T, SBM>(S, A, lda, opa, 0, n, n32, true, false, true);
    __syncthreads();
    for (int o = 0; o < n32; o += 32) {
        if (tid < 32) {
            const int bad = chol32(S, LD, o, dinv);
            if (tid == 0 && bad >= 0) fail = o + bad + 1;
        }
        __syncthreads();
        if (fail) break;
        solve_rows(S, LD, o, o + 32, n32, dinv);
        __syncthreads();
        update_rows(S, LD, o, o + 32, n32, o + 32, n32);
        __syncthreads();
    }
    store_lower<T, SBM>(S, A, lda, opa, 0, n, true, false);
    if (tid == 0) info[0] = fail;
}

// ------------------------------------------------------------------------ POTRF by tiles
// The Cholesky factor of a larger logical view by tiles of 32 x 32, in one launch, and with
// it the solve of the rows below it (a panel of POTRF's recursion: L21 = A21 L11^-H), whose
// tiles fill the multiprocessors that the chain of diagonal tiles leaves idle. Blocks of
// threads take work items from a counter: the pair P_j of the tiles (j, j - 1) and (j, j) (P_0
// the tile (0, 0) alone), or a tile (i, c), i >= c + 2, solved alone. A tile subtracts its
// row's and its column's factored tiles as they appear (left-looking), then is solved against
// its column's factored diagonal tile or factored itself (chol32). A pair keeps its solved
// tile in shared memory to update its diagonal tile, so that the chain of diagonal tiles, which
// sets the pace, passes through global memory once per column of tiles. The order of items:
// P_0, then for j >= 1 P_j followed by the solved-alone tiles of column j - 1 of the triangle
// and those of column j - 1 - lag below it, then the columns below it left (every item reads
// only earlier items, so every wait ends whatever number of blocks is resident). Blocks wait
// for the tiles they read through flags in global memory and read tiles past L1 (__ldcg): a
// block may have read a tile's memory before its factor was written.

// Tiles in shared memory have the leading dimension TLD: a multiple of 4, so that a row's four
// consecutive elements are one aligned vector (sub_product), and 4 modulo 16 in doubles, so
// that the 16 lanes of an mma fragment's read fall in distinct banks. With TLD = 33 (no bank
// conflicts down columns) a product took 1730 cycles in float64 and 1490 in float32 (one
// block on one H100, benchmarks/gpu_potrf_steps.py), against 590 and 1000; potrf_tiles of 2048
// rows took 871 / 613 us against 557 / 478 (float64 / float32, gpu_potrf_trace.py).
constexpr int TILE = 32, TLD = 36;

template <typename T> __device__ __forceinline__ T ld_cg(const T* p) { return __ldcg(p); }
template <typename R> __device__ __forceinline__ cplx<R> ld_cg(const cplx<R>* p) {
    const R* q = reinterpret_cast<const R*>(p);
    return cplx<R>(__ldcg(q), __ldcg(q + 1));
}

// Flag states: 0 pending (set before the launch), DONE, FAILED (a failed pivot at or before
// the tile: it was not written).
constexpr int DONE = 1, FAILED = 2;

// Waits for the flag (thread 0 polls it), then returns its state to every thread.
__device__ __forceinline__ int wait_flag(const volatile int* flag, int* state) {
    if (threadIdx.x == 0) {
        int s;
        while ((s = *flag) == 0) __nanosleep(32);
        *state = s;
        __threadfence();
    }
    __syncthreads();
    const int s = *state;
    __syncthreads();
    return s;
}

// Every thread's writes visible, then the flag set to `state` (by thread `first`, after the
// barrier of the threads from `first` on: the block, or warps 1.. on their named barrier).
__device__ __forceinline__ void publish(volatile int* flag, int state, int first = 0) {
    __threadfence();
    if (first == 0) __syncthreads();
    else asm volatile("bar.sync 1, %0;" :: "r"(THREADS - first));
    if (threadIdx.x == first) atomicExch(const_cast<int*>(flag), state);
}

// Tiles move between memory and shared memory through registers, PER elements a thread.
constexpr int PER = TILE * TILE / THREADS;

// Thread tid's elements of the tile at (i0, j0) of op_a(A) (along memory: rows of the tile
// for op N), zero outside rows < m and columns < n (with `lower`, a diagonal tile: also zero
// above the diagonal, and ones on the diagonal past the matrix).
template <typename T>
__device__ __forceinline__ void fetch_tile(T (&v)[PER], const T* A, long long lda, int opa,
                                           int m, int n, int i0, int j0, bool lower) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
        const int e = threadIdx.x + q * THREADS;
        const int r = (opa & 1) ? e / TILE : e % TILE, c = (opa & 1) ? e % TILE : e / TILE;
        const int i = i0 + r, j = j0 + c;
        v[q] = T(lower && r == c && i >= m ? 1 : 0);
        if (i < m && j < n && (!lower || r >= c)) {
            v[q] = ld_cg((opa & 1) ? A + j + i * lda : A + i + j * lda);
            if (opa & 2) v[q] = conj_(v[q]);
        }
    }
}

// D (TILE x TILE, leading dimension TLD) <- the elements fetch_tile read.
template <typename T>
__device__ __forceinline__ void put_tile(T* D, const T (&v)[PER], int opa) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
        const int e = threadIdx.x + q * THREADS;
        D[(opa & 1) ? e / TILE + (e % TILE) * TLD : e % TILE + (e / TILE) * TLD] = v[q];
    }
}

template <typename T>
__device__ __forceinline__ void load_tile(T* D, const T* A, long long lda, int opa, int m,
                                          int n, int i0, int j0, bool lower) {
    T v[PER];
    fetch_tile(v, A, lda, opa, m, n, i0, j0, lower);
    put_tile(D, v, opa);
}

// The inverse of load_tile, by the threads from `first` on.
template <typename T>
__device__ void store_tile(const T* D, T* A, long long lda, int opa, int m, int n, int i0,
                           int j0, bool lower, int first = 0) {
    for (int e = threadIdx.x - first; e < TILE * TILE; e += THREADS - first) {
        const int r = (opa & 1) ? e / TILE : e % TILE, c = (opa & 1) ? e % TILE : e / TILE;
        if (i0 + r < m && j0 + c < n && (!lower || r >= c))
            store(A, lda, opa, i0 + r, j0 + c, D[r + c * TLD]);
    }
}

// Four consecutive elements in shared memory, read as 16-byte vectors.
template <typename T>
struct alignas(16) Four {
    T v[4];
};

// C -= X Y^H (tiles of leading dimension TLD). Thread (r, w) (lane, warp) takes row r of the
// columns 4w .. 4w + 3: an element of X per step, and those four of Y's row by one broadcast
// vector read (four broadcast reads took 1.5 times as long in float32).
template <typename T>
__device__ __forceinline__ void sub_product(T* C, const T* X, const T* Y) {
    const int r = threadIdx.x & 31, c = 4 * (threadIdx.x >> 5);
    T acc[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[q] = T(0);
#pragma unroll 8
    for (int m = 0; m < TILE; ++m) {
        const T x = X[r + m * TLD];
        const Four<T> y = *reinterpret_cast<const Four<T>*>(Y + c + m * TLD);
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[q] += x * conj_(y.v[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) C[r + (c + q) * TLD] -= acc[q];
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// float64 on the tensor cores (sm_90): warp w takes the 16 x 8 block at rows 16 (w % 2),
// columns 8 (w / 2), eight mma.m16n8k4 over the 32 terms (with g = lane / 4, q = lane % 4: X
// elements (g, q) and (g + 8, q), Y element (g, q), D elements (g + 8 (i / 2), 2q + i % 2)),
// each product and sum rounded as an FMA's.
__device__ __forceinline__ void sub_product(double* C, const double* X, const double* Y) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const int r0 = (w & 1) * 16 + g, c0 = (w >> 1) * 8;
    double d[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
    for (int k = q; k < TILE; k += 4) {
        asm volatile(
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
            "{%0, %1, %2, %3};\n"
            : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
            : "d"(X[r0 + k * TLD]), "d"(X[r0 + 8 + k * TLD]), "d"(Y[c0 + g + k * TLD]));
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) C[r0 + 8 * (i / 2) + (c0 + 2 * q + i % 2) * TLD] -= d[i];
}
#endif

// C <- C L^-H (tiles of leading dimension TLD; dinv: 1 / the diagonal of L). Warp w solves
// rows w, w + 8, ...; lane m holds column m of those rows. The solve is against the factor's
// unit lower triangle (lane m scales row m of L by dinv as it reads it), each step broadcasting
// one solved element of each row by shuffle, and the diagonal comes last: a shuffle and an FMA
// a step on the chain (one H100: 3830 -> 3120 cycles in float64, 1940 -> 1630 in float32,
// against scaling each element before its broadcast).
template <typename T>
__device__ __forceinline__ void solve_tile(T* C, const T* L, const real_t<T>* dinv) {
    constexpr int ROWS = TILE / (THREADS / 32);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T c[ROWS];
#pragma unroll
    for (int q = 0; q < ROWS; ++q) c[q] = C[warp + (THREADS / 32) * q + lane * TLD];
#pragma unroll
    for (int k = 0; k < TILE; ++k) {
        const T l = conj_(L[lane + k * TLD]) * T(dinv[k]);
#pragma unroll
        for (int q = 0; q < ROWS; ++q) {
            const T x = shfl(c[q], k);
            if (lane > k) c[q] -= x * l;
        }
    }
    const T d = T(dinv[lane]);
#pragma unroll
    for (int q = 0; q < ROWS; ++q) C[warp + (THREADS / 32) * q + lane * TLD] = c[q] * d;
}

// The tiles of a panel of m rows whose first n form the triangle: t columns of tiles, rt rows
// of them; row of tiles i < t starts at row 32 i of the triangle, row t + b at row n + 32 b of
// the rows below it (tiles of the triangle end at row n, those below it at row m). Tile (i, c)
// is flagged at done[i + c rt].
struct Panel {
    int m, n, t, rt, lag;
    __device__ int row(int i) const { return i < t ? TILE * i : n + TILE * (i - t); }
    __device__ int end(int i) const { return i < t ? n : m; }
    __device__ int flag(int i, int c) const { return i + c * rt; }
    __device__ int items() const { return 1 + t * (t - 1) / 2 + t * (rt - t); }

    // Item s < items() in the order above: the pair P_i (c < 0) or the tile (i, c).
    __device__ void item(int s, int& i, int& c) const {
        const int below = rt - t;
        i = 0;
        c = -1;
        if (s-- == 0) return;
        for (int j = 1; j < t; ++j) {
            if (s-- == 0) {
                i = j;
                return;
            }
            if (s < t - j - 1) {
                i = j + 1 + s;
                c = j - 1;
                return;
            }
            s -= t - j - 1;
            if (j - 1 - lag >= 0) {
                if (s < below) {
                    i = t + s;
                    c = j - 1 - lag;
                    return;
                }
                s -= below;
            }
        }
        i = t + s % below;
        c = max(0, t - 1 - lag) + s / below;
    }
};

// The end of the run of terms k0 <= k < r of a left-looking update whose tiles (rx, k) and
// (ry, k) are all flagged DONE, r > k0 (waiting until term k0's are flagged), or -1 if the first
// term not DONE has a FAILED tile. The block reads the flags of every term left at once: one
// round trip to L2 for the run, where waiting for each tile in turn took two for every term.
__device__ int ready_terms(const volatile int* done, int rt, int rx, int ry, int k0, int kmax,
                           int* first, int* failed) {
    for (;;) {
        if (threadIdx.x == 0) *first = *failed = kmax;
        __syncthreads();
        for (int k = k0 + threadIdx.x; k < kmax; k += THREADS) {
            const int fx = done[rx + k * rt], fy = done[ry + k * rt];
            if (fx != DONE || fy != DONE) {
                atomicMin(first, k);
                if (fx == FAILED || fy == FAILED) atomicMin(failed, k);
            }
        }
        __threadfence();  // the tiles read after this are those the flags published
        __syncthreads();
        const int f = *first, bad = *failed;
        __syncthreads();
        if (f < kmax && bad == f) return -1;
        if (f > k0) return f;
        __nanosleep(64);
    }
}

// C1 -= sum_{k < kmax} L_xk L_yk^H (and C2 -= L_xk L_xk^H if C2), L_xk the factored tile (rx, k)
// of op_a(A), each term as soon as its tiles are flagged. While one term is multiplied, the next
// term's tiles are read into registers if they are already known to be flagged; if not, the
// wait for them comes after this product, not before it. Reading two or three terms ahead was
// slower in float64 (one H100, 1024 rows: 376 / 400 us against 306). Returns DONE, or FAILED
// once a tile did.
template <typename T>
__device__ int left_looking(T* C1, T* C2, T* X, T* Y, int kmax, int rx, int ry, const T* A,
                            long long lda, int opa, const Panel& p, const volatile int* done,
                            int* first, int* failed) {
    T x[PER], y[PER];
    const int x0 = p.row(rx), xend = p.end(rx), y0 = TILE * ry;  // ry < t
    bool got = false;  // x and y hold term k's tiles
    int ready = 0;     // terms below it are flagged DONE
    for (int k = 0; k < kmax; ++k) {
        if (!got) {
            if (k >= ready) ready = ready_terms(done, p.rt, rx, ry, k, kmax, first, failed);
            if (ready <= k) return FAILED;
            fetch_tile(x, A, lda, opa, xend, p.n, x0, k * TILE, false);
            fetch_tile(y, A, lda, opa, p.n, p.n, y0, k * TILE, false);
        }
        put_tile(X, x, opa);
        put_tile(Y, y, opa);
        __syncthreads();
        got = k + 1 < kmax && k + 1 < ready;
        if (got) {
            fetch_tile(x, A, lda, opa, xend, p.n, x0, (k + 1) * TILE, false);
            fetch_tile(y, A, lda, opa, p.n, p.n, y0, (k + 1) * TILE, false);
        }
        sub_product(C1, X, Y);
        if (C2) sub_product(C2, X, X);
        __syncthreads();
    }
    return DONE;
}

// C <- C L^-H for the factored diagonal tile L = (c, c) of op_a(A) once it is flagged (into
// shared memory at Lf, with dinv 1 / its diagonal). Returns its flag's state.
template <typename T>
__device__ int solve_below(T* C, T* Lf, real_t<T>* dinv, int c, const T* A, long long lda,
                           int opa, const Panel& p, const volatile int* done, int* state) {
    const int result = wait_flag(done + p.flag(c, c), state);
    if (result == DONE) {
        load_tile(Lf, A, lda, opa, p.n, p.n, c * TILE, c * TILE, true);
        __syncthreads();
        if (threadIdx.x < TILE) dinv[threadIdx.x] = real_t<T>(1) / re(Lf[threadIdx.x * (TLD + 1)]);
        __syncthreads();
        solve_tile(C, Lf, dinv);
        __syncthreads();
    }
    return result;
}

// The lower triangle of the n x n logical view op_a(A) <- its Cholesky factor L, and the
// m - n rows below it <- themselves times L^-H. flags: 1 + rt t ints (Panel), zero at the
// launch: the item counter, then a flag per tile. lag: how many columns of tiles the rows below
// the triangle trail its own (Panel::item). info[0] gets 0 or the order of the first leading
// minor that is not positive definite (A then holds the factor's tiles left of the failing
// diagonal tile and in its row, that tile as chol32 left it, the tiles below it and right of
// it as they were, and the rows below the triangle solved in the columns of tiles left of it).
// Blocks per multiprocessor as kernels.TILE_BLOCKS says (float64 would spill registers at two).
template <typename T>
__global__ void __launch_bounds__(THREADS, sizeof(T) >= 8 ? 1 : 2)
potrf_tiles(int m, int n, T* A, long long lda, int opa, int lag, int* flags, int* info)
{
    using R = real_t<T>;
    T* Lf = shared_as<T>();      // a factored diagonal tile,
    T* Cs = Lf + TILE * TLD;     // the tile to solve,
    T* Cd = Cs + TILE * TLD;     // the diagonal tile to factor,
    T* X = Cd + TILE * TLD;      // and two factored tiles of a product
    T* Y = X + TILE * TLD;
    __shared__ R dinv[TILE];
    __shared__ int ticket, state, bad, first, failed;
    const int t = (n + TILE - 1) / TILE, tid = threadIdx.x;
    const Panel p{m, n, t, t + (m - n + TILE - 1) / TILE, lag};
    const int items = p.items();
    volatile int* done = flags + 1;
    for (;;) {
        if (tid == 0) ticket = atomicAdd(flags, 1);
        __syncthreads();
        const int s = ticket;
        __syncthreads();
        if (s >= items) return;
        int j, c;  // P_j, or the tile (j, c) solved alone if c >= 0
        p.item(s, j, c);
        int result;
        if (c >= 0) {
            const int i = j;
            load_tile(Cs, A, lda, opa, p.end(i), n, p.row(i), c * TILE, false);
            result = left_looking(Cs, static_cast<T*>(nullptr), X, Y, c, i, c, A, lda, opa, p,
                                  done, &first, &failed);
            if (result == DONE) result = solve_below(Cs, Lf, dinv, c, A, lda, opa, p, done, &state);
            if (result == DONE) store_tile(Cs, A, lda, opa, p.end(i), n, p.row(i), c * TILE, false);
            publish(done + p.flag(i, c), result);
            continue;
        }
        const int j0 = j * TILE;
        load_tile(Cd, A, lda, opa, n, n, j0, j0, true);
        if (j > 0) load_tile(Cs, A, lda, opa, n, n, j0, j0 - TILE, false);
        __syncthreads();
        result = left_looking(Cs, Cd, X, Y, j - 1, j, j - 1, A, lda, opa, p, done, &first,
                              &failed);
        if (j > 0) {
            if (result == DONE)
                result = solve_below(Cs, Lf, dinv, j - 1, A, lda, opa, p, done, &state);
            if (result == DONE) {
                sub_product(Cd, Cs, Cs);
                __syncthreads();
            }
            if (tid >= 32) {  // the solved tile out while warp 0 factors the diagonal one
                if (result == DONE) store_tile(Cs, A, lda, opa, n, n, j0, j0 - TILE, false, 32);
                publish(done + p.flag(j, j - 1), result, 32);
            }
        }
        if (result == DONE && tid < 32) {
            const int b = chol32(Cd, TLD, 0, dinv);
            if (tid == 0) bad = b;
        }
        __syncthreads();
        if (result == DONE) {
            store_tile(Cd, A, lda, opa, n, n, j0, j0, true);
            if (bad >= 0) result = FAILED;
            if (tid == 0 && (bad >= 0 || j == t - 1)) info[0] = bad >= 0 ? j0 + bad + 1 : 0;
        }
        publish(done + p.flag(j, j), result);
    }
}

// The lower triangle of the n x n logical view op_a(A) (n <= SBM) <- L^H L, L its lower triangle.
template <typename T, int SBM>
__global__ void __launch_bounds__(THREADS, 1)
lauum_leaf(int n, T* A, long long lda, int opa)
{
    T* S = shared_as<T>();
    const int n32 = (n + 31) & ~31, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    load_lower<T, SBM>(S, A, lda, opa, 0, n, n32, true, false, false);
    __syncthreads();
    for (int ti = 0; ti < n32 / 32; ++ti) {
        for (int tj = 0; tj <= ti; ++tj) {
            T acc[1][4];
            zero(acc);
            sq_mm<T, SBM, 1, true, false>(acc, S, 32 * ti, 1, 32 * tj, 32 * ti, n32);
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                const int i = 32 * ti + lane, j = 32 * tj + warp + 8 * v;
                if (i < n && i >= j) store(A, lda, opa, i, j, i == j ? real_part(acc[0][v]) : acc[0][v]);
            }
        }
    }
}

}  // namespace tricov
