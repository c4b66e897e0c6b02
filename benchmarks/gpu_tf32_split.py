"""Split-TF32 products against cuBLAS's FP32 and one-pass TF32 GEMMs: speed and accuracy.

For each shape ``m x n x k`` and dtype (float32, complex64), one run times on the same data
(CUDA events, median of 10 after a warm-up):

* ``fp32``: cuBLAS SGEMM/CGEMM (``cublas<t>gemm``, FP32 math, what tricov runs with
  ``tc.set_split_tf32(False)``);
* ``split``: tricov's split-TF32 GEMM (``CUDAExecutor.raw_gemm`` with the split forced:
  both operands split by ``kernels/cuda/tf32_split.cu``, then one TF32 GEMM of depth ``3 k``);
  its time includes the split;
* ``tf32``: one cuBLAS GEMM on the TF32 tensor cores (``CUBLAS_COMPUTE_32F_FAST_TF32``), for
  the accuracy it gives up;

and the largest error of each against a float64 product on the host, per element, in units
of ``u = 2^-24`` times ``(|A| |B|)_ij``. Usage, on a machine with an NVIDIA GPU and CuPy::

    PYTHONPATH=src python benchmarks/gpu_tf32_split.py [--quick]
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np

from tricov.backends import cuda_libs as lib
from tricov.backends.cuda import CUDAExecutor

SHAPES = [(512, 4096, 512), (1024, 4096, 1024), (2048, 4096, 2048), (4096, 4096, 4096),
          (8192, 8192, 8192), (4096, 256, 4096), (8192, 256, 8192), (2048, 2048, 2048)]


def _time(fn, reps: int = 10) -> float:
    fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return float(np.median(times))


def run(dt: np.dtype, m: int, n: int, k: int) -> dict:
    rng = np.random.default_rng(m + n + k)
    shape_a, shape_b = (m, k), (k, n)
    a = rng.standard_normal(shape_a) + (1j * rng.standard_normal(shape_a) if dt.kind == "c"
                                        else 0)
    b = rng.standard_normal(shape_b) + (1j * rng.standard_normal(shape_b) if dt.kind == "c"
                                        else 0)
    A, B = cp.asarray(a.astype(dt), order="F"), cp.asarray(b.astype(dt), order="F")
    C = cp.empty((m, n), dtype=dt, order="F")
    ex = CUDAExecutor(dt)
    args = (b"N", b"N", m, n, k, 1.0, A.data.ptr, m, B.data.ptr, k, 0.0, C.data.ptr, m)
    split_rows = CUDAExecutor.split_rows

    def fp32() -> None:
        CUDAExecutor.split_rows = 1 << 40
        ex.raw_gemm(*args)

    def split() -> None:
        CUDAExecutor.split_rows = 1
        ex.raw_gemm(*args)

    def tf32() -> None:
        kind = lib.CUDA_TYPE[dt]
        lib.check(lib.blas("cublasGemmEx")(
            ex._hb, 0, 0, m, n, k, ex._s(1.0), A.data.ptr, kind, m, B.data.ptr, kind, k,
            ex._s(0.0), C.data.ptr, kind, m, lib.COMPUTE_TF32, lib.GEMM_DEFAULT), "gemmEx")

    exact = a.astype(dt).astype(np.complex128) @ b.astype(dt).astype(np.complex128)
    scale = np.abs(a.astype(dt)).astype(np.float64) @ np.abs(b.astype(dt)).astype(np.float64)
    out = {"dtype": dt.name, "shape": f"{m}x{n}x{k}"}
    flops = (8 if dt.kind == "c" else 2) * m * n * k
    try:
        for name, fn in (("fp32", fp32), ("split", split), ("tf32", tf32)):
            us = _time(fn)
            fn()
            err = np.abs(cp.asnumpy(C).astype(np.complex128) - exact) / scale
            out[name] = (us, flops / us / 1e6, float(err.max()) / 2.0 ** -24)
            ex._keep.clear()
    finally:
        CUDAExecutor.split_rows = split_rows
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer shapes")
    opts = p.parse_args()
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    print(f"{'dtype':>9} {'m x n x k':>16} | {'fp32 us':>9} {'TF/s':>6} | {'split us':>9} "
          f"{'TF/s':>6} {'x fp32':>6} | {'tf32 us':>8} | err/u: fp32  split   tf32")
    for dt in (np.dtype(np.float32), np.dtype(np.complex64)):
        for m, n, k in SHAPES[:4] if opts.quick else SHAPES:
            if dt.kind == "c" and m * n * k > 4096**3:
                continue
            r = run(dt, m, n, k)
            (t0, f0, e0), (t1, f1, e1), (t2, _, e2) = r["fp32"], r["split"], r["tf32"]
            print(f"{r['dtype']:>9} {r['shape']:>16} | {t0:9.1f} {f0:6.1f} | {t1:9.1f} {f1:6.1f} "
                  f"{t0 / t1:6.2f} | {t2:8.1f} | {e0:10.1f} {e1:6.1f} {e2:6.0f}")


if __name__ == "__main__":
    main()
