"""Batched POTRF, POSV or POTI on the CPU at several orders: one line of times, for A/B runs.

Run: ``python benchmarks/cpu_batched_orders.py THREADS DTYPE BATCH ORDERS [OP]``, e.g.
``OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cpu_batched_orders.py 1 float64 10240
4,8,16,32``. Prints ``order:ms`` per order: the minimum over 100 calls of a copy of the stack
and the call, less the minimum over 100 copies (the calls are in place). To compare two
versions of the code, run it alternately with ``PYTHONPATH`` pointing at each (for example a
``git worktree`` of the earlier commit): this VM's timings drift between processes.
"""

from __future__ import annotations

import sys

import numba
import numpy as np
from cpu_batched_small import best

import tricov as tc


def timing(op: str, n: int, dtype: np.dtype, batch: int, rng: np.random.Generator) -> float:
    """Seconds of one call of ``op`` on ``batch`` SPD members of order ``n`` (4 right-hand
    sides for posv), the stack's copy subtracted."""
    x = rng.standard_normal((batch, n, n))
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal((batch, n, n))
    a = (x @ x.conj().transpose(0, 2, 1) + n * np.eye(n)).astype(dtype)
    w = a.copy()
    b = rng.standard_normal((batch, n, 4)).astype(dtype)
    wb = b.copy()
    call = {"potrf": lambda: tc.batched.potrf(w),
            "posv": lambda: (np.copyto(wb, b), tc.batched.posv(w, wb)),
            "poti": lambda: tc.batched.poti(w)}[op]
    call()
    return best(lambda: (np.copyto(w, a), call()), 100) - best(lambda: np.copyto(w, a), 100)


def main(threads: int, dtype: str, batch: int, orders: str, op: str = "potrf") -> None:
    rng = np.random.default_rng(0)
    numba.set_num_threads(threads)
    times = [f"{n}:{timing(op, n, np.dtype(dtype), batch, rng) * 1e3:.3f}"
             for n in map(int, orders.split(","))]
    print(" ".join(times))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], *sys.argv[5:6])
