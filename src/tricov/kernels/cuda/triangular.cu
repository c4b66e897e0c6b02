// tricov: small triangular solve and multiply with few right-hand sides (the leaves of the
// recursive TRSM/TRMM when B is narrow), and triangle copies for the LAUUM leaf.
#include "common.cuh"

namespace tricov {

// One warp owns COLS columns of B; lane l keeps rows l, l + 32, ... of each in registers
// (NB / 32 per column), so a substitution step is one shuffle and a few FMAs. T = op_a(A) is
// n x n with n <= NB, lower if LOWER; B = op_b(Bmem) is n x ncols. MULT = false solves
// T X = alpha B (X over B); MULT = true forms B = alpha T B. The block stages 16 columns of T
// at a time in shared memory (one coalesced, highly parallel load), so no step of the
// step-to-step chain waits on global memory. The ops of A and B and a unit diagonal are
// run-time arguments (uniform branches): a handful of instantiations serve every variant.
template <typename T, int NB, int COLS, bool MULT, bool LOWER>
__global__ void __launch_bounds__(128, 4)
tri_small(int n, int ncols, T alpha, const T* __restrict__ A, long long lda, int opa, T* B,
          long long ldb, int opb, int unit)
{
    constexpr int R = NB / 32;
    constexpr int H = 16;  // columns of T per staged panel
    __shared__ T panel[H * NB];
    const int lane = threadIdx.x & 31;
    const int col0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * COLS;
    const bool active = col0 < ncols;  // idle warps still stage panels and meet the barriers
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
    // the steps inside a slot are run-time loops (small code, fast compiles). Lane kk holds
    // the inverse of T(k, k), formed at the start of the slot, off the chain.
#pragma unroll
    for (int s = 0; s < R; ++s) {
        const int slot = LOWER ? s : R - 1 - s;  // forward for lower, backward for upper
        T dinv = T(1);
        if (!MULT && !unit && 32 * slot + lane < n) {
            const int kd = 32 * slot + lane;
            dinv = T(1) / load(A, lda, opa, kd, kd);
        }
        const int lo = LOWER ? 32 * slot : 0;  // rows of T this slot's columns touch
        const int hi = LOWER ? n : min(n, 32 * slot + 32);
#pragma unroll 1
        for (int h = 0; h < 2; ++h) {
            const int half = LOWER ? h : 1 - h;
            const int kbase = 32 * slot + H * half;
            __syncthreads();  // the previous panel is no longer read
            const int rows = hi - lo;
            for (int e = threadIdx.x; e < rows * H; e += blockDim.x) {
                int i, c;
                if (opa & 1) {  // T(i, k) = A(k, i): walk k fastest for coalesced reads
                    c = e % H;
                    i = lo + e / H;
                } else {
                    i = lo + e % rows;
                    c = e / rows;
                }
                const int k = kbase + c;
                panel[c * NB + i] = k < n ? load(A, lda, opa, i, k) : T(0);
            }
            __syncthreads();
            if (!active) continue;
#pragma unroll 1
            for (int q = 0; q < H; ++q) {
                const int kq = LOWER ? q : H - 1 - q;
                const int kk = H * half + kq;
                const int k = 32 * slot + kk;
                if (k >= n) continue;
                if (!MULT && !unit && lane == kk) {
#pragma unroll
                    for (int c = 0; c < COLS; ++c) x[c][slot] = x[c][slot] * dinv;
                }
                T xk[COLS];
#pragma unroll
                for (int c = 0; c < COLS; ++c) xk[c] = shfl(x[c][slot], kk);
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    if (LOWER ? r < slot : r > slot) continue;  // rows all on the far side
                    const int i = lane + 32 * r;
                    if (i >= n) continue;
                    if (MULT) {
                        if (LOWER ? i < k : i > k) continue;
                        const T t = (i == k && unit) ? T(1) : panel[kq * NB + i];
#pragma unroll
                        for (int c = 0; c < COLS; ++c) acc[c][r] += t * xk[c];
                    } else {
                        if (LOWER ? i <= k : i >= k) continue;
                        const T t = panel[kq * NB + i];
#pragma unroll
                        for (int c = 0; c < COLS; ++c) x[c][r] -= t * xk[c];
                    }
                }
            }
        }
    }
    if (!active) return;
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

// D's LOWER (else upper) triangle <- alpha * W + beta * D (W and D n x n column-major); with
// beta == 0, D is not read (BLAS semantics). HERK: a real-valued result diagonal for complex T.
template <typename T, bool LOWER>
__global__ void tri_update(int n, T alpha, const T* __restrict__ W, long long ldw, T beta, T* D,
                           long long ldd, int beta_zero)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n || (LOWER ? i < j : i > j)) return;
    T v = alpha * W[i + j * ldw];
    if (!beta_zero) v += beta * D[i + j * ldd];
    if (i == j) v = real_part(v);
    D[i + j * ldd] = v;
}

}  // namespace tricov
