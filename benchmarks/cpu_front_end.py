"""Fixed cost of tricov's front ends on the CPU, on operands too small to take any time: the
leaf-size lookup, a dense POTRF of order 4, and batched POTRF / TRSM of one member of order 4
(POTRF also on a fresh stack at each call, all of them alive: a new replay key every time).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cpu_front_end.py [LABEL]

Each is called 2000 times, five times over; the best microseconds per call are printed, with
numpy.linalg.cholesky on the same matrix as the peer. ``LABEL`` starts the line.
"""

from __future__ import annotations

import sys

import numpy as np

import tricov as tc
from tricov._policy import leaf_sizes
from tricov.bench.devices import call_microseconds


def main(label: str = "") -> None:
    f64 = np.dtype(np.float64)
    spd = np.asfortranarray(np.eye(4) * 4 + 1)
    work = spd.copy(order="F")
    stack, low, b = spd[None].copy(), np.linalg.cholesky(spd)[None], np.ones((1, 4, 4))

    def potrf() -> None:
        work[...] = spd
        tc.potrf(work)

    fresh = iter([spd[None].copy() for _ in range(12000)])  # the calls below take 10200

    calls = {"leaf_sizes": lambda: leaf_sizes("gpu", f64), "potrf 4": potrf,
             "numpy cholesky 4": lambda: np.linalg.cholesky(spd),
             "batched potrf 4 x1": lambda: tc.batched.potrf(stack.copy(), check=False),
             "batched trsm 4 x1": lambda: tc.batched.trsm(low, b),
             "batched potrf 4 x1 fresh": lambda: tc.batched.potrf(next(fresh), check=False)}
    times = {name: call_microseconds(fn, 2000, warmup=200) for name, fn in calls.items()}
    print(label, " | ".join(f"{name} {t:.1f}" for name, t in times.items()),
          flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:2])
