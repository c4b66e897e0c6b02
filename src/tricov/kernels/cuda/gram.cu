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
// whole GPU); this kernel is the small sequential part, each row of M made as its pivot is
// taken. Used by tricov.tlr._orthonormal, with W = 32 or 64 (w <= W) and
// 2 W (W + 1) + W / 32 values and W / 32 ints of dynamic shared memory.
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
    // Thread c holds column c of the remaining Schur complement in registers (s[a] = S[a][c],
    // zero beyond w) and column c of M in shared memory (Ms[j][c]); R[j][a]: row j of the
    // factor over the rows a of Z, copied by the thread of its pivot (G is symmetric, so the
    // pivot's row is its column) and divided by every thread.
    extern __shared__ __align__(16) unsigned char smem[];
    auto R = reinterpret_cast<T (*)[W + 1]>(smem);
    auto Ms = R + W;
    T* sv = reinterpret_cast<T*>(Ms + W);
    int* sp = reinterpret_cast<int*>(sv + W / 32);
    const int t = threadIdx.x;
    const long long b = blockIdx.x;
    const T* g = G + b * w * w;
    T s[W];
#pragma unroll
    for (int a = 0; a < W; ++a) {
        s[a] = (a < w && t < w) ? g[(long long)a * w + t] : T(0);
        Ms[a][t] = T(0);
    }
    // bit a: row a of Z not taken yet (the same on every thread)
    unsigned long long open = w == 64 ? ~0ull : (1ull << w) - 1;
    T d = t < w ? g[(long long)t * w + t] : T(0);
    T top = d == d ? d : T(0);
    int ignored = 0;
    block_argmax<T, W>(top, ignored, sv, sp);
    const T thr = max(floor, rel * top);
    const int steps = live[b] > T(0) ? w : 0;
    int k = 0;
    while (k < steps) {
        T v = ((open >> t) & 1 && d == d) ? d : T(-1);
        int pv = t;
        block_argmax<T, W>(v, pv, sv, sp);
        if (!(v > thr)) break;  // the same v and pv on every thread
        const T rkk = sqrt(v);
        if (t == pv) {
#pragma unroll
            for (int a = 0; a < W; ++a) R[k][a] = (open >> a) & 1 ? s[a] : T(0);
        }
        __syncthreads();
        R[k][t] /= rkk;  // one division per thread, not W on the pivot's
        __syncthreads();
        // Row k of M: the new orthonormal row q_k = (z_pv - sum_{j<k} R[j][pv] q_j) / rkk in
        // terms of the rows of Z (forward substitution with U^T, U[j][i] = R[j][piv[i]]).
        T m[4] = {t == pv ? T(1) : T(0), T(0), T(0), T(0)};
#pragma unroll
        for (int j = 0; j < W; ++j)
            if (j < k) m[j & 3] -= R[j][pv] * Ms[j][t];
        Ms[k][t] = ((m[0] + m[1]) + (m[2] + m[3])) / rkk;
        open &= ~(1ull << pv);
        if ((open >> t) & 1) {
            const T rt = R[k][t];
#pragma unroll
            for (int a = 0; a < W; ++a) s[a] -= R[k][a] * rt;
            d -= rt * rt;
        }
        ++k;
    }
    if (t < w) {  // column t of M (rows >= k stay zero)
        T* col = M + b * w * w + t;
        for (int i = 0; i < w; ++i) col[(long long)i * w] = Ms[i][t];
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
