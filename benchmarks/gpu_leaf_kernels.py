"""Device time of the shared-memory Cholesky-family leaf kernels (POTRF, TRTRI, LAUUM).

    PYTHONPATH=src python benchmarks/gpu_leaf_kernels.py --sizes 32 64 128

For each n and dtype: the executor's leaf on a random SPD matrix (POTRF), its Cholesky factor
(TRTRI) and that factor again (LAUUM), column-major, called on a fresh copy each time. Twenty
(copy, leaf) pairs are captured in one CUDA graph and the graph is timed with CUDA events (best
of 5 replays); the time of twenty copies alone is subtracted. Prints microseconds per leaf.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import cupy as cp
import numpy as np

from tricov._views import view_of
from tricov.backends.cuda import CUDAExecutor

_CALLS = 20


def _graph_us(body: Callable[[], None]) -> float:
    """Microseconds of one ``body()`` out of a CUDA graph of :data:`_CALLS` of them."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for _ in range(_CALLS):
            body()
        graph = stream.end_capture()
        graph.launch()
        best = np.inf
        for _ in range(5):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            graph.launch()
            stop.record()
            stop.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e3 / _CALLS)
    return best


def _row(dt: np.dtype, n: int) -> str:
    """Microseconds of each leaf at order ``n``."""
    g = cp.random.default_rng(0).standard_normal((n, n)).astype(dt)
    spd = cp.asfortranarray(g @ g.conj().T / n + cp.eye(n, dtype=dt))
    factor = cp.asfortranarray(cp.tril(cp.linalg.cholesky(spd)))
    work = cp.empty_like(spd, order="F")
    view = view_of(work)
    ex = CUDAExecutor(dt)
    leaves = {"potrf": (spd, lambda: ex.potrf(view, 0)),
              "trtri": (factor, lambda: ex.trtri(False, view, 0)),
              "lauum": (factor, lambda: ex.lauum(view))}
    cp.cuda.Device().synchronize()
    out = []
    for leaf, (source, call) in leaves.items():
        def copy(src: cp.ndarray = source) -> None:
            work[...] = src

        def both(call: Callable[[], object] = call, copy: Callable[[], None] = copy) -> None:
            copy()
            call()

        out.append(f"{leaf} {_graph_us(both) - _graph_us(copy):7.1f}")
    return "  ".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    args = p.parse_args()
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; microseconds per leaf")
    for name in args.dtypes:
        for n in args.sizes:
            print(f"{name:10s} n={n:4d}  {_row(np.dtype(name), n)}", flush=True)


if __name__ == "__main__":
    main()
