"""Experiment (not used by tricov): float32 GEMMs of small output on the FP64 tensor cores.

    PYTHONPATH=src python3 benchmarks/exp_small_gemm_dmma.py

The kernel, ``exp_small_gemm_dmma.cu``, reads float32 operands into shared memory by
``cp.async`` stages and multiplies them as float64 with ``mma.m16n8k4`` (exact products,
float64 sums): a block per 32 x 32 tile of D, its four warps each taking a quarter of every
slab's depth, their parts added at the end. ``small_gemm<false>`` stages any layout by 4-byte
copies; ``small_gemm<true>`` by 16-byte copies where neither operand is transposed, row counts
and leading dimensions are multiples of 4 and the operands 16-byte aligned.

Checked first against float64 NumPy on every pair of transposes, odd shapes, views with leading
dimensions above the rows, and an empty depth (D = beta C); then timed against cuBLAS's SGEMM
and its DGEMM on float64 copies of the data: 50 calls in one CUDA graph, best of 3 replays
(``gpu_small_gemm_algos.per_call``), microseconds per call. The shapes are the products of a
narrow TRSM's lower levels and leaves (benchmarks/README.md, session 31, has the results).
"""

from __future__ import annotations

import functools
from pathlib import Path

import cupy as cp
import numpy as np
from gpu_small_gemm_algos import per_call

from tricov.backends import cuda_libs as lib
from tricov.kernels import nvrtc

SOURCE = Path(__file__).with_suffix(".cu")
SMEM = 40960  # small_gemm_smem()
F32 = np.float32
SHAPES = ((256, 256, 256), (512, 256, 512), (512, 128, 512), (512, 64, 512), (1024, 256, 1024),
          (1024, 128, 1024), (1024, 64, 1024), (2048, 256, 2048), (2048, 64, 2048),
          (512, 2048, 512), (512, 512, 512), (4096, 256, 512), (8192, 256, 8192))


@functools.cache
def kernel(vec: bool):
    module = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17", f"-I{nvrtc.SOURCE_DIR}"),
                          name_expressions=(f"tricov::small_gemm<{str(vec).lower()}>",))
    return module.get_function(f"tricov::small_gemm<{str(vec).lower()}>")


def launch(vec: bool, m: int, n: int, k: int, alpha: float, a: int, lda: int, ta: int, b: int,
           ldb: int, tb: int, beta: float, c: int, ldc: int, d: int, ldd: int,
           stream=None) -> None:
    kernel(vec)(((m + 31) // 32, (n + 31) // 32), (128,),
                (np.int32(m), np.int32(n), np.int32(k), F32(alpha), np.uint64(a),
                 np.int64(lda), np.int32(ta), np.uint64(b), np.int64(ldb), np.int32(tb),
                 F32(beta), np.uint64(c), np.int64(ldc), np.uint64(d), np.int64(ldd)),
                shared_mem=SMEM, stream=stream)


def check() -> None:
    """Raise if a result is off; print the worst error against float32 NumPy's."""
    rng = np.random.default_rng(0)
    cases = [(m, n, k, ta, tb, False, 3) for m, n, k in
             ((1, 1, 1), (33, 17, 65), (512, 256, 512), (100, 37, 300), (31, 64, 1000),
              (7, 5, 0), (64, 64, 33)) for ta in (0, 1) for tb in (0, 1)]
    cases += [(m, n, k, 0, 0, True, 4) for m, n, k in
              ((4, 1, 4), (36, 17, 68), (512, 256, 512), (100, 37, 300), (32, 64, 1000),
               (8, 5, 0))]
    worst = worst_numpy = 0.0
    for m, n, k, ta, tb, vec, pad in cases:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(F32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(F32)
        c = rng.standard_normal((m, n)).astype(F32)
        opa, opb = (a.T if ta else a), (b.T if tb else b)
        want = 0.5 * opa.astype(np.float64) @ opb.astype(np.float64) - 2.0 * c
        # column-major views whose leading dimensions exceed their rows
        ag = cp.zeros((a.shape[0] + pad, a.shape[1] + 1), dtype=F32, order="F")
        ag[:a.shape[0], :a.shape[1]] = cp.asarray(a)
        bg = cp.zeros((b.shape[0] + 2 * pad, b.shape[1] + 1), dtype=F32, order="F")
        bg[:b.shape[0], :b.shape[1]] = cp.asarray(b)
        cg = cp.asfortranarray(cp.asarray(c))
        dg = cp.full((m + 2, n), np.nan, dtype=F32, order="F")
        launch(vec, m, n, k, 0.5, ag.data.ptr, ag.shape[0], ta, bg.data.ptr, bg.shape[0], tb,
               -2.0, cg.data.ptr, m, dg.data.ptr, m + 2)
        got = cp.asnumpy(dg)
        if not np.isnan(got[m:]).all():
            raise AssertionError(f"wrote outside D: {m}x{n}x{k} {ta}{tb} {vec}")
        if m * n:
            scale = (0.5 * np.abs(opa) @ np.abs(opb) + 2 * np.abs(c)).max()
            err = np.abs(got[:m] - want).max() / scale
            if not err < 4 * np.finfo(F32).eps:
                raise AssertionError(f"{m}x{n}x{k} {ta}{tb} {vec}: error {err:.2e}")
            worst = max(worst, err)
            numpy = (0.5 * (opa @ opb) - 2.0 * c).astype(F32)
            worst_numpy = max(worst_numpy, np.abs(numpy - want).max() / scale)
    print(f"checked {len(cases)} cases: worst relative error {worst:.2e} "
          f"(float32 NumPy {worst_numpy:.2e})")


def cublas(handle: int, dtype, shape: tuple, ops: tuple, stream: int) -> None:
    (m, n, k), (one, zero, a, b, c) = shape, ops
    lib.bind_blas(stream, handle)
    lib.check(lib.blas("gemm_v2", dtype)(handle, 0, 0, m, n, k, one.ctypes.data, a.data.ptr, m,
                                         b.data.ptr, k, zero.ctypes.data, c.data.ptr, m), "gemm")


def ours(vec: bool, shape: tuple, ops: tuple, stream: int) -> None:
    """small_gemm on the current stream (per_call's, whose address is ``stream``)."""
    (m, n, k), (_, _, a, b, c) = shape, ops
    launch(vec, m, n, k, 1.0, a.data.ptr, m, 0, b.data.ptr, k, 0, 0.0, c.data.ptr, m,
           c.data.ptr, m)


def main() -> None:
    check()
    handle = lib.own_handle("capture")
    print("m x n x k: us per call, cuBLAS SGEMM | cuBLAS DGEMM (float64 data) | "
          "small_gemm 4-byte | 16-byte staging | SGEMM / small_gemm")
    for shape in SHAPES:
        m, n, k = shape
        times = {}
        for dtype in (np.float32, np.float64):
            ops = (np.ones(1, dtype), np.zeros(1, dtype),
                   cp.asfortranarray(cp.random.standard_normal((m, k)).astype(dtype)),
                   cp.asfortranarray(cp.random.standard_normal((k, n)).astype(dtype)),
                   cp.zeros((m, n), dtype=dtype, order="F"))
            times[dtype] = per_call(functools.partial(cublas, handle, dtype, shape, ops))
            if dtype is np.float32:
                mine = [per_call(functools.partial(ours, vec, shape, ops)) for vec in (0, 1)]
        sgemm = times[np.float32]
        print(f"{m}x{n}x{k}: {sgemm:7.1f} | {times[np.float64]:7.1f} | {mine[0]:7.1f} | "
              f"{mine[1]:7.1f} | {sgemm / mine[0]:4.2f} / {sgemm / mine[1]:4.2f}x")


if __name__ == "__main__":
    main()
