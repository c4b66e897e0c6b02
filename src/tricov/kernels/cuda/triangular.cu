// tricov: triangle copies and updates (the cuBLAS-based LAUUM leaf, HERK leaves run as GEMMs),
// and the NaN-pivot test after cuSOLVER's POTRF.
#include "common.cuh"

namespace tricov {

// D's LOWER (else upper) triangle, diagonal included, gets S's (ones on the diagonal if unit);
// with ZERO the rest of D is zeroed, without it left alone. Both n x n column-major; blocks along
// z take further pairs (S, D), each sstep and dstep elements after the one before.
template <typename T, bool LOWER, bool ZERO>
__global__ void tri_copy(int n, const T* __restrict__ S, long long lds, T* D, long long ldd,
                         long long sstep, long long dstep, int unit)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    S += blockIdx.z * sstep;
    D += blockIdx.z * dstep;
    if (i == j && unit) D[i + j * ldd] = T(1);
    else if (LOWER ? i >= j : i <= j) D[i + j * ldd] = S[i + j * lds];
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

// The n x n column-major block A <- A^T in place (no conjugation): blockIdx (x, y) swaps the
// tiles of 32 x 32 at block row x and column y with those at row y and column x (x >= y; the
// others return), through shared memory so that both reads and writes run down columns.
template <typename T>
__global__ void transpose_square(int n, T* A, long long lda)
{
    const int bi = blockIdx.x, bj = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
    if (bi < bj) return;
    __shared__ T lo[32][33], up[32][33];
#pragma unroll
    for (int k = 0; k < 32; k += 8) {
        int i = bi * 32 + tx, j = bj * 32 + ty + k;
        if (i < n && j < n) lo[ty + k][tx] = A[i + (long long)j * lda];
        i = bj * 32 + tx, j = bi * 32 + ty + k;
        if (bi != bj && i < n && j < n) up[ty + k][tx] = A[i + (long long)j * lda];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 32; k += 8) {
        int i = bj * 32 + tx, j = bi * 32 + ty + k;
        if (i < n && j < n) A[i + (long long)j * lda] = lo[tx][ty + k];
        i = bi * 32 + tx, j = bj * 32 + ty + k;
        if (bi != bj && i < n && j < n) A[i + (long long)j * lda] = up[tx][ty + k];
    }
}

// status[0] <- 1 + the first i < n whose diagonal element A[i * step] is NaN (ZERO false: the
// order LAPACK reports for a NaN pivot, which cuSOLVER's POTRF does not test; a NaN anywhere in
// the triangle reaches the diagonal of the factor in its own row) or exactly zero (ZERO true: the
// singular pivot TRTRI and POTRI report before they compute), else 0. One block.
template <typename T, bool ZERO>
__global__ void diag_find(int n, const T* __restrict__ A, long long step, int* status)
{
    __shared__ int first;
    if (threadIdx.x == 0) first = n;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T d = A[(long long)i * step];
        if (ZERO ? mag(d) == 0 : re(d) != re(d)) atomicMin(&first, i);
    }
    __syncthreads();
    if (threadIdx.x == 0) status[0] = first < n ? first + 1 : 0;
}

}  // namespace tricov
