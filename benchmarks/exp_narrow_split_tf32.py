"""Experiment (not used by tricov): split-TF32 products of narrow output, ``C = A B`` with A
m x k and B k x n, n small, against cuBLAS SGEMM on one GPU.

    PYTHONPATH=src python3 benchmarks/exp_narrow_split_tf32.py

Columns, microseconds (best of 3 x 20 calls): cuBLAS SGEMM; tricov's split kernel writing
three parts of A (``tf32_split.cu``) and the TF32 GEMM of depth 3k (the executor's split
product, together "now"); a two-part split of A (float4 loads) followed either by one TF32
GEMM of depth 2k and width 2n plus a sum of its halves ("wide"), or by two TF32 GEMMs of
depth 2k and k accumulating into C ("two"). Operand values do not change the times.
Outputs: ``exp_narrow_split_tf32_h100.txt``. No variant beats SGEMM on these shapes, so the
executor keeps narrow float32 products on SGEMM (``CUDAExecutor.split_rows``).
"""

from __future__ import annotations

from collections.abc import Callable

import cupy as cp
import numpy as np
import torch

from tricov.kernels import nvrtc

SHAPES = ((8192, 256, 8192), (4096, 256, 4096), (2048, 256, 2048), (8192, 128, 8192),
          (8192, 64, 8192))

TWO_PARTS = r"""
__device__ __forceinline__ float tf32(float x) {  // as tf32_split.cu's tf32_round
    unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    const unsigned r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    return __uint_as_float((r & 0x7f800000u) == 0x7f800000u ? u & 0xffffe000u : r);
}
// rows a multiple of 4; column j of S into lo at D and hi at D + step
extern "C" __global__ void two_parts(int rows, const float* S, long long lds, float* D,
                                     long long ldd, long long step) {
    const long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
    if (i >= rows) return;
    const float4 x = *(const float4*)(S + i + blockIdx.y * lds);
    const float4 h = make_float4(tf32(x.x), tf32(x.y), tf32(x.z), tf32(x.w));
    const float4 l = make_float4(tf32(x.x - h.x), tf32(x.y - h.y), tf32(x.z - h.z),
                                 tf32(x.w - h.w));
    float* d = D + i + blockIdx.y * ldd;
    *(float4*)d = l;
    *(float4*)(d + step) = h;
}
"""


def timeit(f: Callable[[], object], reps: int = 20) -> float:
    """Best time of one call of ``f``, microseconds."""
    f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            f()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / reps)
    return best


def row(m: int, n: int, k: int) -> str:
    """One line of the table."""
    three = nvrtc.function("tf32_split.cu", "tricov::tf32_split")
    two = cp.RawKernel(TWO_PARTS, "two_parts")
    a = cp.asfortranarray(cp.random.standard_normal((m, k), dtype=cp.float32))
    a3 = cp.empty((m, 3 * k), dtype=cp.float32, order="F")
    a2 = cp.empty((m, 2 * k), dtype=cp.float32, order="F")
    t_split3 = timeit(lambda: three(
        ((m + 31) // 32, (k + 7) // 8, 1), (32, 8),
        (np.int32(m), np.int32(k), np.uint64(a.data.ptr), np.int64(m), np.uint64(a3.data.ptr),
         np.int64(m), np.int64(m * k), np.int32(1), np.int64(0), np.int64(0))))
    t_split2 = timeit(lambda: two(
        ((m // 4 + 127) // 128, k), (128,),
        (np.int32(m), a.data.ptr, np.int64(m), a2.data.ptr, np.int64(m), np.int64(m * k))))
    # column-major CuPy arrays are transposed views to torch: no copies
    ta, ta3, ta2 = (torch.as_tensor(x, device="cuda") for x in (a, a3, a2))
    b3 = torch.randn(3 * k, n, device="cuda")
    wide = torch.randn(2 * k, 2 * n, device="cuda")
    halves, c = torch.empty(m, 2 * n, device="cuda"), torch.empty(m, n, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    t_sgemm = timeit(lambda: ta @ b3[:k])
    torch.backends.cuda.matmul.allow_tf32 = True
    t_gemm3 = timeit(lambda: ta3 @ b3)
    t_wide = timeit(lambda: (torch.matmul(ta2, wide, out=halves),
                             torch.add(halves[:, :n], halves[:, n:], out=c)))
    t_two = timeit(lambda: (torch.matmul(ta2, b3[:2 * k], out=c),
                            c.addmm_(ta2[:, k:], b3[2 * k:])))
    now, best = t_split3 + t_gemm3, t_split2 + min(t_wide, t_two)
    return (f"{m}x{n}x{k} | {t_sgemm:7.1f} | {t_split3:7.1f} + {t_gemm3:7.1f} | "
            f"{t_split2:7.1f} + {t_wide:7.1f} / {t_two:7.1f} | {t_sgemm / now:4.2f} / "
            f"{t_sgemm / best:4.2f}")


def main() -> None:
    print("m x n x k | SGEMM | now: split3 + gemm 3k | split2 + wide / two | "
          "SGEMM / now, / best new")
    for shape in SHAPES:
        print(row(*shape))


if __name__ == "__main__":
    main()
