// The steps of potrf_tiles' chain of diagonal tiles, alone in one block of threads, in cycles
// (benchmarks/gpu_potrf_steps.py): STEP 0 chol32, 1 chol32 reordered (tried, not kept), 2
// solve_tile, 3 sub_product. Compiled with leaves.cu of the --source directory given.
#include "leaves.cu"

namespace tricov {

// 1 / sqrt(x) without a branch: the hardware's approximation and two Newton steps.
__device__ __forceinline__ float rsq_branchless(float x) { return rsqrtf(x); }
__device__ __forceinline__ double rsq_branchless(double x) {
    double y;
    asm("rsqrt.approx.f64 %0, %1;" : "=d"(y) : "d"(x));
    const double h = 0.5 * x;
    y = fma(y, fma(-h * y, y, 0.5), y);
    return fma(y, fma(-h * y, y, 0.5), y);
}

// chol32 with no early exit, the pivot from each lane's own diagonal element, and the next
// pivot's inverse square root taken before the column's updates (not kept: faster alone, slower
// inside potrf_tiles; benchmarks/README.md, session 24).
template <typename T>
__device__ int chol32_reordered(T* S, int ld, int o, real_t<T>* dinv) {
    using R = real_t<T>;
    const int lane = threadIdx.x & 31;
    T* row = S + o + lane + o * ld;
    T r[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) r[k] = row[k * ld];
    R dg = re(row[lane * ld]);
    int bad = -1;
    R piv = shfl(dg, 0), rs = rsq_branchless(piv);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        if (bad < 0 && !(piv > R(0))) bad = j;
        const T x = lane == j ? T(piv * rs) : r[j] * T(rs);
        if (bad < 0) {
            row[j * ld] = x;
            if (lane == 0) dinv[o + j] = rs;
        }
        dg -= re(x * conj_(x));
        if (j < 31) {
            piv = shfl(dg, j + 1);
            rs = rsq_branchless(piv);
        }
        __syncwarp();
        const T* lj = S + o + (o + j) * ld;
#pragma unroll
        for (int k = j + 1; k < 32; ++k) r[k] -= x * conj_(lj[k]);
    }
    __syncwarp();
    return bad;
}

// Mean cycles of STEP over `reps` runs on the tile A (32 x 32, SPD, column-major) into cyc;
// out gets the result (the factor for STEP 0 and 1, A L^-H for 2, A - A A^H for 3).
template <typename T, int STEP>
__global__ void __launch_bounds__(THREADS, 1) steps(const T* A, T* out, long long* cyc, int reps) {
    using R = real_t<T>;
    T* C = shared_as<T>();
    T* D = C + TILE * TLD;
    __shared__ R dinv[TILE];
    long long total = 0;
    if (STEP == 2) {  // a factor to solve against
        load_tile(D, A, 32, 0, 32, 32, 0, 0, true);
        __syncthreads();
        if (threadIdx.x < 32) chol32(D, TLD, 0, dinv);
        __syncthreads();
    }
    for (int r = 0; r < reps; ++r) {
        if (STEP != 2) load_tile(D, A, 32, 0, 32, 32, 0, 0, true);
        load_tile(C, A, 32, 0, 32, 32, 0, 0, false);
        __syncthreads();
        const long long t0 = clock64();
        if constexpr (STEP <= 1) {
            if (threadIdx.x < 32) {
                const int bad = STEP == 0 ? chol32(D, TLD, 0, dinv)
                                          : chol32_reordered(D, TLD, 0, dinv);
                if (bad >= 0 && threadIdx.x == 0) out[0] = T(-1);
            }
        } else if constexpr (STEP == 2) {
            solve_tile(C, D, dinv);
        } else {
            sub_product(C, D, D);
        }
        __syncthreads();
        total += clock64() - t0;
        __syncthreads();
    }
    if (threadIdx.x == 0) cyc[0] = total / reps;
    store_tile(STEP <= 1 ? D : C, out, 32, 0, 32, 32, 0, 0, false);
}

}  // namespace tricov
