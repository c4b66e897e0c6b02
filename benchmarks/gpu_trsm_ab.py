"""A/B of the GPU TRSM schedules on F-order operands, CUDA graphs on: in place (leaves on the
substitution kernel, leaves of 128) against the workspace schedule with leaves of 128 / 256 /
512. Ratios to cuBLAS TRSM and to the same-shape GEMM, measured in the same run.

    PYTHONPATH=src python3 benchmarks/gpu_trsm_ab.py > benchmarks/gpu_trsm_ab_h100.txt
"""

from __future__ import annotations

from collections.abc import Callable

import cupy as cp
import numpy as np

import tricov as tc
from tricov import _plans, _policy
from tricov.backends import cuda
from tricov.backends.cuda_libs import bind_blas, blas
from tricov.bench.devices import event_seconds

SHAPES = ((16384, 64), (16384, 128), (16384, 256), (4096, 4096), (8192, 8192), (16384, 16384))
WORKSPACE = cuda.CUDAExecutor.run_trsm


def in_place(self, lower, unit, a, b, block, body) -> None:
    """The schedule before the workspace: inverses prepared, leaves solved in place."""
    self.prepare_trsm(lower, unit, a, b, block)
    body(self, b)


def timeit(fn: Callable[[], object], reset: Callable[[], object] | None = None) -> float:
    """Median milliseconds of ``fn`` by CUDA events, ``reset`` before each (two warm-ups)."""
    return float(np.median(event_seconds(fn, reset))) * 1e3


def measure(dt: type, m: int, n: int) -> str:
    rng = cp.random.default_rng(0)
    a = cp.asfortranarray(rng.standard_normal((m, m)).astype(dt)) / m**0.5
    a += 4 * cp.eye(m, dtype=dt)
    b0 = cp.asfortranarray(rng.standard_normal((m, n)).astype(dt))
    b = b0.copy(order="F")

    def reset() -> None:
        b[...] = b0

    handle = bind_blas(cp.cuda.get_current_stream().ptr)
    one, zero = np.array([1.0], dtype=dt), np.array([0.0], dtype=dt)
    t_native = timeit(lambda: blas("trsm_v2", np.dtype(dt))(
        handle, 0, 0, 0, 0, m, n, one.ctypes.data, a.data.ptr, m, b.data.ptr, m), reset)
    c = cp.empty((m, n), dt, order="F")
    t_gemm = timeit(lambda: blas("gemm_v2", np.dtype(dt))(
        handle, 0, 0, m, n, m, one.ctypes.data, a.data.ptr, m, b.data.ptr, m, zero.ctypes.data,
        c.data.ptr, m))
    out = []
    for name, schedule, leaf in (("inplace128", in_place, 128), ("s128", WORKSPACE, 128),
                                 ("s256", WORKSPACE, 256), ("s512", WORKSPACE, 512)):
        cuda.CUDAExecutor.run_trsm = schedule
        _plans.set_cuda_graphs(True)  # drops the plans of the other schedule
        _policy.set_leaf_size("gpu", "trsm", dt, leaf)
        t = timeit(lambda: tc.trsm(a, b), reset)
        _policy.set_leaf_size("gpu", "trsm", dt, None)
        out.append(f"{name} {t_native / t:.2f}x/{t_gemm / 2 / t:.2f}g")
    cuda.CUDAExecutor.run_trsm = WORKSPACE
    flops = m * m * n
    return (f"trsm {np.dtype(dt).name} {m}x{n}: cublas {flops / t_native / 1e9:.1f} TF "
            f"gemm {2 * flops / t_gemm / 1e9:.1f} TF | " + " ".join(out))


def main() -> None:
    for dt in (np.float64, np.float32):
        for m, n in SHAPES:
            if dt == np.float32 and m == n == 16384:
                continue
            print(measure(dt, m, n), flush=True)


if __name__ == "__main__":
    main()
