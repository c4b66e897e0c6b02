// tricov: small triangular solve and multiply with few right-hand sides (the leaves of the
// recursive TRSM/TRMM when B is narrow), and triangle copies for the LAUUM leaf.
#include "common.cuh"

namespace tricov {

// One warp owns COLS columns of B; lane l keeps rows l, l + 32, ... of each in registers
// (NB / 32 per column), so a substitution step is one shuffle and a few FMAs: no shared memory,
// no block-wide barrier. T = op_a(A) is n x n with n <= NB, lower if LOWER; B = op_b(Bmem) is
// n x ncols. MULT = false solves T X = alpha B (X over B); MULT = true forms B = alpha T B.
// The ops of A and B and a unit diagonal are run-time arguments (uniform branches), so that
// a handful of instantiations serve every variant.
template <typename T, int NB, int COLS, bool MULT, bool LOWER>
__global__ void __launch_bounds__(128, 4)
tri_small(int n, int ncols, T alpha, const T* __restrict__ A, long long lda, int opa, T* B,
          long long ldb, int opb, int unit)
{
    constexpr int R = NB / 32;
    const int lane = threadIdx.x & 31;
    const int col0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * COLS;
    if (col0 >= ncols) return;  // the whole warp leaves together
    T x[COLS][R];
    T acc[COLS][R];
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = lane + 32 * r;
            const bool live = i < n && col0 + c < ncols;
            x[c][r] = live ? load(B, ldb, opb, i, col0 + c) : T(0);
            if (!MULT) x[c][r] = alpha * x[c][r];
            acc[c][r] = T(0);
        }
    }
    // Step k = 32 * slot + kk: the slot loop is unrolled (register indices are compile-time),
    // the 32 steps inside a slot are a run-time loop (small code, fast compiles). Nothing that
    // waits on memory is left on the step-to-step chain: the slot's 32 inverse diagonals are
    // formed up front (lane kk holds row k's), and column k + 1 of T is loaded during step k.
#pragma unroll
    for (int s = 0; s < R; ++s) {
        const int slot = LOWER ? s : R - 1 - s;  // forward for lower, backward for upper
        const int first = 32 * slot + (LOWER ? 0 : 31);
        T dinv = T(1);
        if (!MULT && !unit && 32 * slot + lane < n) {
            const int kd = 32 * slot + lane;
            dinv = T(1) / load(A, lda, opa, kd, kd);
        }
        T col[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = lane + 32 * r;
            const bool used = LOWER ? r >= slot : r <= slot;
            col[r] = (used && i < n && first < n) ? load(A, lda, opa, i, first) : T(0);
        }
#pragma unroll 1
        for (int q = 0; q < 32; ++q) {
            const int kk = LOWER ? q : 31 - q;
            const int k = 32 * slot + kk;
            const int next = LOWER ? k + 1 : k - 1;
            const bool more = q < 31 && next < n;
            T nxt[R];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int i = lane + 32 * r;
                const bool used = LOWER ? r >= slot : r <= slot;
                nxt[r] = (used && more && i < n) ? load(A, lda, opa, i, next) : T(0);
            }
            if (k < n) {
                if (!MULT && !unit && lane == kk) {
#pragma unroll
                    for (int c = 0; c < COLS; ++c) x[c][slot] = x[c][slot] * dinv;
                }
                T xk[COLS];
#pragma unroll
                for (int c = 0; c < COLS; ++c) xk[c] = shfl(x[c][slot], kk);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    if (LOWER ? r < slot : r > slot) continue;  // rows all on the far side of k
                    const int i = lane + 32 * r;
                    if (MULT) {
                        if (LOWER ? i < k : i > k) continue;
                        const T t = (i == k && unit) ? T(1) : col[r];
#pragma unroll
                        for (int c = 0; c < COLS; ++c) acc[c][r] += t * xk[c];
                    } else {
                        if (LOWER ? i <= k : i >= k) continue;
#pragma unroll
                        for (int c = 0; c < COLS; ++c) x[c][r] -= col[r] * xk[c];
                    }
                }
            }
#pragma unroll
            for (int r = 0; r < R; ++r) col[r] = nxt[r];
        }
    }
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = lane + 32 * r;
            if (i < n && col0 + c < ncols)
                store(B, ldb, opb, i, col0 + c, MULT ? alpha * acc[c][r] : x[c][r]);
        }
    }
}

// D's LOWER (else upper) triangle, diagonal included, gets S's; with ZERO the rest of D is
// zeroed, without it left alone. Both n x n column-major.
template <typename T, bool LOWER, bool ZERO>
__global__ void tri_copy(int n, const T* __restrict__ S, long long lds, T* D, long long ldd)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    if (LOWER ? i >= j : i <= j) D[i + j * ldd] = S[i + j * lds];
    else if (ZERO) D[i + j * ldd] = T(0);
}

}  // namespace tricov
