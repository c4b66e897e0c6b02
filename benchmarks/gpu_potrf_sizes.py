"""tricov.potrf on the GPU against cuSOLVER's potrf at any sizes, powers of two or not.

    PYTHONPATH=src python benchmarks/gpu_potrf_sizes.py 1024 3000 4096 6000 10000 40000

For each n: a random SPD float64 matrix (column-major); tricov.potrf with the default policy
(``tricov.leaf_sizes("gpu", float64)``: the whole matrix to cuSOLVER up to ``potrf_whole`` rows,
else cuSOLVER on leaves of ``potrf`` rows under tricov's recursion), with the recursion forced
(``potrf_whole`` 1) and with the whole matrix forced (leaf 2^20); and cuSOLVER's
``cusolverDnDpotrf`` called directly on the same data. Each is called once untimed, then timed
three times with CUDA events on fresh copies; the best time is kept. Prints TFLOP/s (n^3 / 3
flops) and cuSOLVER's time over tricov's (above 1: tricov is faster).
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
from cupy.cuda import cusolver
from cupy_backends.cuda.libs import cublas

import tricov as tc
from tricov import dense
from tricov.bench.devices import event_seconds


def _cusolver(a: cp.ndarray, read: bool = False) -> None:
    """cuSOLVER's potrf of ``a`` in place; with ``read``, its status read back too."""
    handle = cp.cuda.device.get_cusolver_handle()
    n = a.shape[0]
    lower = cublas.CUBLAS_FILL_MODE_LOWER
    lwork = cusolver.dpotrf_bufferSize(handle, lower, n, a.data.ptr, n)
    work = cp.empty(lwork, cp.float64)
    info = cp.zeros(1, cp.int32)
    cusolver.dpotrf(handle, lower, n, a.data.ptr, n, work.data.ptr, lwork, info.data.ptr)
    if read:
        int(info.get()[0])


def timed(f, a0: cp.ndarray, repeats: int = 3) -> list[float]:
    """Seconds of ``repeats`` calls of ``f`` on fresh column-major copies of ``a0`` (CUDA events
    around each call as a user makes it), after one untimed call."""
    work = [a0]

    def reset() -> None:
        work[0] = a0.copy(order="F")
        cp.cuda.Device().synchronize()

    return event_seconds(lambda: f(work[0]), reset, repeats=repeats, warmup=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("sizes", type=int, nargs="+")
    args = p.parse_args()
    dt = np.dtype(np.float64)
    nb = tc.leaf_sizes("gpu", dt)
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; TFLOP/s; ratio = "
          f"cuSOLVER time / tricov time; policy: whole up to {nb.potrf_whole}, leaves of "
          f"{nb.potrf}")
    settings = {"policy": {}, f"leaves {nb.potrf}": {"potrf_whole": 1}, "whole": {"potrf": 1 << 20}}
    for n in args.sizes:
        g = cp.random.default_rng(0).standard_normal((n, n))
        a0 = cp.asfortranarray(g @ g.T / n + cp.eye(n))
        del g
        times = {}
        for name, setting in settings.items():
            for op, size in setting.items():
                tc.set_leaf_size("gpu", op, dt, size)
            try:
                times[name] = min(timed(dense.potrf, a0))
            finally:
                tc.set_leaf_size("gpu", "potrf", dt, None)  # drops every override
        t_native = min(timed(_cusolver, a0))
        f = n**3 / 3 / 1e12
        rates = "  ".join(f"{name} {f / t:6.2f}" for name, t in times.items())
        ratios = " / ".join(f"{t_native / t:.2f}" for t in times.values())
        print(f"n={n:6d}  {rates}  cuSOLVER {f / t_native:6.2f}   ratio {ratios}", flush=True)
        del a0
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
