// tricov: orthonormal bases from Gram matrices, one block of W threads (W/32 warps) per member.
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
// whole GPU); this kernel is the small sequential part. Used by tricov.tlr._orthonormal, with
// W = 32 or 64 (w <= W) and gram_shared<T, W>() bytes of dynamic shared memory.
//
// live_by_norm clears live[b] where member b of a stack of samples has a squared Frobenius
// norm at most thr (or NaN): the range finder's convergence test, one block per member.
#include "common.cuh"

namespace tricov {

// The largest v over the block (ties: the smallest p), on every thread; scratch: W / 32
// values and indices in shared memory.
template <typename T, int W>
__device__ void block_argmax(T& v, int& p, T* sv, int* sp) {
    const unsigned full = 0xffffffffu;
    for (int off = 16; off > 0; off >>= 1) {
        const T ov = __shfl_xor_sync(full, v, off);
        const int op = __shfl_xor_sync(full, p, off);
        if (ov > v || (ov == v && op < p)) { v = ov; p = op; }
    }
    if (W > 32) {
        if ((threadIdx.x & 31) == 0) { sv[threadIdx.x >> 5] = v; sp[threadIdx.x >> 5] = p; }
        __syncthreads();
        v = sv[0];
        p = sp[0];
        for (int i = 1; i < W / 32; ++i)
            if (sv[i] > v || (sv[i] == v && sp[i] < p)) { v = sv[i]; p = sp[i]; }
        __syncthreads();  // the scratch is free again
    }
}

template <typename T, int W>
__global__ void gram_basis(int w, const T* __restrict__ G, const T* __restrict__ live, T floor,
                           T rel, T* __restrict__ M, T* __restrict__ used, long long used_ld) {
    // S[a][c]: the remaining Schur complement (thread c owns column c), then M (row i holds
    // column i of U^-1 at the pivots); R[j][c]: row j of the factor, over the rows c of Z.
    extern __shared__ __align__(16) unsigned char smem[];
    auto S = reinterpret_cast<T (*)[W + 1]>(smem);
    auto R = S + W;
    T* sv = reinterpret_cast<T*>(R + W);
    int* sp = reinterpret_cast<int*>(sv + W / 32);
    int* piv = sp + W / 32;
    const int t = threadIdx.x;
    const long long b = blockIdx.x;
    const T* g = G + b * w * w;
    for (int a = 0; a < w; ++a)
        if (t < w) S[a][t] = g[(long long)a * w + t];
    __syncthreads();
    bool open = t < w;  // row t of Z not taken yet
    T d = open ? S[t][t] : T(0);
    T top = d == d ? d : T(0);
    int ignored = 0;
    block_argmax<T, W>(top, ignored, sv, sp);
    const T thr = max(floor, rel * top);
    const int steps = live[b] > T(0) ? w : 0;
    int k = 0;
    while (k < steps) {
        T v = (open && d == d) ? d : T(-1);
        int pv = t;
        block_argmax<T, W>(v, pv, sv, sp);
        if (!(v > thr)) break;  // the same v and pv on every thread
        const T rkk = sqrt(v);
        if (t == 0) piv[k] = pv;
        R[k][t] = open ? S[pv][t] / rkk : T(0);
        __syncthreads();
        if (t == pv) open = false;
        if (open) {
            const T rt = R[k][t];
            for (int a = 0; a < w; ++a) S[a][t] -= R[k][a] * rt;
            d = S[t][t];
        }
        ++k;
    }
    __syncthreads();  // S is free: thread t now owns its row, M's row t
    T* Ms = S[t];
    for (int c = 0; c < W; ++c) Ms[c] = T(0);
    if (t < k) {  // column t of U^-1 (U[i][l] = R[i][piv[l]]), stored as Ms[piv[i]]
        Ms[piv[t]] = T(1) / R[t][piv[t]];
        for (int i = t - 1; i >= 0; --i) {
            T s = T(0);
            for (int l = i + 1; l <= t; ++l) s += R[i][piv[l]] * Ms[piv[l]];
            Ms[piv[i]] = -s / R[i][piv[i]];
        }
    }
    if (t < w) {
        T* row = M + b * w * w + (long long)t * w;
        for (int c = 0; c < w; ++c) row[c] = Ms[c];
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
