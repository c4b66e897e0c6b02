"""A/B of the two staged TRMM schedules on the GPU: on a copy of B, or without it (the spine).

    PYTHONPATH=src python3 benchmarks/gpu_trmm_spine_ab.py

For each shape (float64, left lower non-unit; both operands column-major (F) or row-major (C,
as in the table of benchmarks/gpu_dense.py, where a left TRMM on B is a right one on B^T)),
both schedules are timed in alternation (``tricov.backends.staged.SPINE_COLUMNS`` forced to
never / always), three rounds, each the best of five calls with CUDA events (graphs captured
afresh for each schedule and replayed from the third call); prints TFLOP/s per round and the
ratio of the best times.
"""

from __future__ import annotations

import itertools

import cupy as cp

import tricov as tc
from tricov import dense
from tricov.backends import staged
from tricov.bench.devices import event_seconds

SHAPES = ((16384, 64), (16384, 256), (16384, 1024), (4096, 4096), (8192, 8192))


def _best(t: cp.ndarray, b: cp.ndarray, b0: cp.ndarray, columns: int) -> float:
    """Best of five timed calls of ``dense.trmm(t, b)`` with ``SPINE_COLUMNS = columns``."""
    staged.SPINE_COLUMNS = columns
    tc.set_cuda_graphs(True)  # drops the captured plans, which do not know the setting
    return min(event_seconds(lambda: dense.trmm(t, b), lambda: b.__setitem__(..., b0),
                             repeats=5, warmup=2))


def main() -> None:
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; TFLOP/s, best of 5 "
          "per round")
    default = staged.SPINE_COLUMNS
    for (m, n), order in itertools.product(SHAPES, "FC"):
        g = cp.random.default_rng(0)
        t = cp.array(cp.tril(g.standard_normal((m, m))) / m**0.5, order=order)
        b0 = cp.array(g.standard_normal((m, n)), order=order)
        b = b0.copy(order=order)
        best: dict[str, list[float]] = {"copy": [], "spine": []}
        for _ in range(3):
            best["copy"].append(_best(t, b, b0, 1 << 30))
            best["spine"].append(_best(t, b, b0, 1))
        flops = m * m * n
        rates = {k: " ".join(f"{flops / s / 1e12:6.2f}" for s in v) for k, v in best.items()}
        print(f"{order} {m:6d} x {n:5d}  copy {rates['copy']}  spine {rates['spine']}  "
              f"copy/spine time {min(best['copy']) / min(best['spine']):.3f}", flush=True)
    staged.SPINE_COLUMNS = default


if __name__ == "__main__":
    main()
