// tricov: orthonormal bases from Gram matrices, one warp per member of a batch.
//
// For rows Z_b (w x p) with Gram matrix G_b = Z_b Z_b^T, gram_basis writes M_b (w x w) such
// that the rows of M_b Z_b are orthonormal (to the rounding of the Gram matrix) and span the
// significant part of Z_b: a Cholesky factorization of G_b with diagonal pivoting,
// G_b[piv, piv] = U^T U, stopped when the largest remaining diagonal (the squared distance of
// the best remaining row from the span of the rows taken) is at most
// max(floor, rel * max(diag G_b)). Row i < k of M_b Z_b is row i of U^-T Z_b[piv]; rows i >= k,
// and every row of a member whose live flag is 0, are zero. What the rows dropped carry is at
// most w times the threshold (squared Frobenius norm). used[i] (if given) is 1 for i < k, else
// 0. The Gram matrices and the products are cuBLAS's (strided-batched GEMMs, spread over the
// whole GPU); this kernel is the small sequential part. Used by tricov.tlr._orthonormal.
//
// live_by_norm clears live[b] where member b of a stack of samples has a squared Frobenius
// norm at most thr (or NaN): the range finder's convergence test, one block per member.
#include "common.cuh"

namespace tricov {

template <typename T, int W>
__global__ void gram_basis(int w, const T* __restrict__ G, const T* __restrict__ live, T floor,
                           T rel, T* __restrict__ M, T* __restrict__ used, long long used_ld) {
    __shared__ T S[W][W + 1];  // S[a][c]: the remaining Schur complement (lane c owns column c)
    __shared__ T R[W][W + 1];  // R[j][c]: row j of the factor, over the rows c of Z
    __shared__ T Ms[W][W + 1];  // M; row i holds column i of U^-1 at the pivots
    __shared__ int piv[W];
    const unsigned full = 0xffffffffu;
    const int t = threadIdx.x;
    const long long b = blockIdx.x;
    const T* g = G + b * w * w;
    for (int a = 0; a < w; ++a)
        if (t < w) S[a][t] = g[(long long)a * w + t];
    for (int c = 0; c < W; ++c) Ms[t][c] = T(0);
    __syncwarp();
    bool open = t < w;  // row t of Z not taken yet
    T d = open ? S[t][t] : T(0);
    T top = d == d ? d : T(0);
    for (int off = W / 2; off > 0; off >>= 1) top = max(top, __shfl_xor_sync(full, top, off));
    const T thr = max(floor, rel * top);
    const int steps = live[b] > T(0) ? w : 0;
    int k = 0;
    while (k < steps) {
        T v = (open && d == d) ? d : T(-1);
        int pv = t;
        for (int off = W / 2; off > 0; off >>= 1) {
            const T ov = __shfl_xor_sync(full, v, off);
            const int op = __shfl_xor_sync(full, pv, off);
            if (ov > v || (ov == v && op < pv)) { v = ov; pv = op; }
        }
        if (!(v > thr)) break;  // the same v and pv on every lane
        const T rkk = sqrt(v);
        if (t == 0) piv[k] = pv;
        R[k][t] = open ? S[pv][t] / rkk : T(0);
        __syncwarp();
        if (t == pv) open = false;
        if (open) {
            const T rt = R[k][t];
            for (int a = 0; a < w; ++a) S[a][t] -= R[k][a] * rt;
            d = S[t][t];
        }
        __syncwarp();
        ++k;
    }
    __syncwarp();
    if (t < k) {  // column t of U^-1 (U[i][l] = R[i][piv[l]]), stored as Ms[t][piv[i]]
        Ms[t][piv[t]] = T(1) / R[t][piv[t]];
        for (int i = t - 1; i >= 0; --i) {
            T s = T(0);
            for (int l = i + 1; l <= t; ++l) s += R[i][piv[l]] * Ms[t][piv[l]];
            Ms[t][piv[i]] = -s / R[i][piv[i]];
        }
    }
    __syncwarp();
    if (t < w) {
        T* row = M + b * w * w + (long long)t * w;
        for (int c = 0; c < w; ++c) row[c] = Ms[t][c];
        if (used != nullptr) used[b * used_ld + t] = t < k ? T(1) : T(0);
    }
}

template <typename T>
__global__ void live_by_norm(long long len, const T* __restrict__ Z, T thr, T* __restrict__ live) {
    __shared__ T part[32];
    const T* z = Z + (long long)blockIdx.x * len;
    // four independent loads in flight per thread: a block streams a member at full speed
    const long long step = blockDim.x;
    T a[4] = {T(0), T(0), T(0), T(0)};
    long long i = threadIdx.x;
    for (; i + 3 * step < len; i += 4 * step) {
        const T v0 = z[i], v1 = z[i + step], v2 = z[i + 2 * step], v3 = z[i + 3 * step];
        a[0] += v0 * v0;
        a[1] += v1 * v1;
        a[2] += v2 * v2;
        a[3] += v3 * v3;
    }
    for (; i < len; i += step) a[0] += z[i] * z[i];
    T s = (a[0] + a[1]) + (a[2] + a[3]);
    const unsigned full = 0xffffffffu;
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(full, s, off);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : T(0);
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(full, s, off);
        if (threadIdx.x == 0 && !(s > thr)) live[blockIdx.x] = T(0);
    }
}

}  // namespace tricov
