"""cuBLAS's GEMM against every algorithm cuBLASLt's heuristic offers (up to 16, with
tricov's capture workspace) for the GEMM shapes of the TRSM/TRMM recursions: few right-hand
sides (16384 x {64, 256}) and square B (8192, 4096), both precisions, column-major.

    PYTHONPATH=src python3 benchmarks/gpu_gemm_algos.py

Per shape: TFLOP/s of cuBLAS, of the heuristic's first choice and of the fastest choice (with
its index). Each time is the best of three loops of ten back-to-back calls, so shapes of a few
microseconds of work (order 512 and less) measure the host's call overhead, not the GPU.
"""

from __future__ import annotations

import ctypes

import cupy as cp
import numpy as np

from tricov.backends import cuda_libs as lib
from tricov.bench.devices import queued_seconds


def _best(f, reps=10):
    return queued_seconds(f, reps) * 1e3


def _row(dtype, m, n, k, ld, count=16):
    dt = np.dtype(dtype)
    a = cp.random.standard_normal((ld, max(k, m))).astype(dt)
    b = cp.random.standard_normal((ld, n)).astype(dt)
    c = cp.zeros((ld, n), dtype=dt)
    scalar = ctypes.c_double if dt == np.float64 else ctypes.c_float
    one, zero = scalar(1.0), scalar(0.0)
    handle = lib.cublas_handle()
    stream = cp.cuda.get_current_stream().ptr
    lib.bind_blas(stream)
    gemm = lib.blas("gemm_v2", dt)
    t_cublas = _best(lambda: gemm(handle, 0, 0, m, n, k, ctypes.addressof(one), a.data.ptr, ld,
                                  b.data.ptr, ld, ctypes.addressof(zero), c.data.ptr, ld))
    plan = lib.matmul_plan(dt, 0, 0, m, n, k, ld, ld, ld, ld)
    pref = ctypes.c_void_p()
    lib._lt("cublasLtMatmulPreferenceCreate")(ctypes.byref(pref))
    most = ctypes.c_uint64(lib.CAPTURE_WORKSPACE)
    lib._lt("cublasLtMatmulPreferenceSetAttribute")(pref, lib._LT_MAX_WORKSPACE,
                                                    ctypes.byref(most), 8)
    results = ctypes.create_string_buffer(lib._LT_RESULT * count)
    found = ctypes.c_int(0)
    lib.check(lib._lt("cublasLtMatmulAlgoGetHeuristic")(
        handle, plan.desc, *plan.layouts, pref, count, results, ctypes.byref(found)), "heuristic")
    lib._lt("cublasLtMatmulPreferenceDestroy")(pref)
    workspace = cp.empty(lib.CAPTURE_WORKSPACE, dtype=np.uint8)
    la, lb, lc, ld_ = plan.layouts
    times = []
    for i in range(found.value):
        result = ctypes.addressof(results) + i * lib._LT_RESULT
        size = ctypes.c_size_t.from_address(result + 64).value
        times.append(_best(lambda result=result, size=size: lib.check(lib._lt("cublasLtMatmul")(
            handle, plan.desc, ctypes.addressof(one), a.data.ptr, la, b.data.ptr, lb,
            ctypes.addressof(zero), c.data.ptr, lc, c.data.ptr, ld_, result, workspace.data.ptr,
            size, stream), "matmul")))
    rate = lambda t: 2.0 * m * n * k / t / 1e9  # noqa: E731
    best = int(np.argmin(times))
    print(f"{dt.name:8s} {m:6d} {n:6d} {k:6d} cublas {rate(t_cublas):6.1f} lt0 "
          f"{rate(times[0]):6.1f} best#{best:2d}/{found.value} {rate(times[best]):6.1f} TF/s  "
          f"best/cublas {t_cublas / times[best]:5.2f}", flush=True)


def main() -> None:
    for dt in ("float32", "float64"):
        for rhs in (256, 64):
            for s in (8192, 4096, 2048, 1024, 512, 256):
                _row(dt, s, rhs, s, 16384)
    for s in (4096, 2048, 1024, 512, 256):
        _row("float64", s, 8192, s, 8192)
    for s in (2048, 1024, 512, 256, 128):
        _row("float64", s, 4096, s, 4096)


if __name__ == "__main__":
    main()
