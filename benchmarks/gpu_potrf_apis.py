"""cuSOLVER's two POTRF entry points on one matrix: ``cusolverDnDpotrf`` and
``cusolverDnDpotrfBatched`` with a batch of one.

    PYTHONPATH=src python3 benchmarks/gpu_potrf_apis.py

Best of five calls (CUDA events, two untimed first), float64, column-major random SPD
matrices; prints microseconds and the largest entry of ``L L^T - A`` of the batched call.
"""

from __future__ import annotations

from collections.abc import Callable

import cupy as cp
from cupy.cuda import cusolver
from cupy_backends.cuda.libs import cublas

from tricov.bench.devices import event_seconds

SIZES = (256, 512, 1024, 2048, 4096)


def best_us(call: Callable[[], object], reset: Callable[[], object]) -> float:
    """Best time of ``call`` in microseconds over five timed calls (``reset`` before each,
    two untimed first)."""
    return min(event_seconds(call, reset, repeats=5, warmup=2)) * 1e6


def row(n: int) -> str:
    """One line of the table: both entry points on a random SPD matrix of order ``n``."""
    handle = cp.cuda.device.get_cusolver_handle()
    lower = cublas.CUBLAS_FILL_MODE_LOWER
    g = cp.random.default_rng(0).standard_normal((n, n))
    a0 = cp.asfortranarray(g @ g.T / n + cp.eye(n))
    a = a0.copy(order="F")

    def reset() -> None:
        a[...] = a0

    lwork = cusolver.dpotrf_bufferSize(handle, lower, n, a.data.ptr, n)
    work, info = cp.empty(lwork, cp.float64), cp.zeros(1, cp.int32)
    single = best_us(lambda: cusolver.dpotrf(handle, lower, n, a.data.ptr, n, work.data.ptr,
                                             lwork, info.data.ptr), reset)
    ptrs, infos = cp.array([a.data.ptr], dtype=cp.uint64), cp.zeros(1, cp.int32)
    batched = best_us(lambda: cusolver.dpotrfBatched(handle, lower, n, ptrs.data.ptr, n,
                                                     infos.data.ptr, 1), reset)
    low = cp.tril(a)
    err = float(cp.abs(low @ low.T - a0).max())
    return (f"n={n:5d} Dpotrf {single:8.1f}  DpotrfBatched(1) {batched:8.1f}  "
            f"({single / n:.2f} / {batched / n:.2f} per column)  err {err:.1e}")


def main() -> None:
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; microseconds")
    for n in SIZES:
        print(row(n), flush=True)


if __name__ == "__main__":
    main()
