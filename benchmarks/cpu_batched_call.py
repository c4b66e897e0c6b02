"""Time of one batched call on the CPU for a few members, where the fixed cost of a call shows:
tricov.batched against the NumPy call a user would make instead (2 Numba threads, BLAS on one).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cpu_batched_call.py [LABEL]

POTRF of order 4 for one member, TRSM of order 4 (one member, 4 right-hand sides), and TRMM
and POTRF of orders 64 and 128 for four members (those run tricov's recursion, whose BLAS runs
on one thread inside the call). Each call is made 200 times, five times over; the best
per-call time is printed in microseconds. ``LABEL`` starts the line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numba
import numpy as np

import tricov as tc
from tricov.bench.devices import call_microseconds


def cases(rng: np.random.Generator, batch: int, n: int) -> dict[str, Callable[[], object]]:
    """The calls timed for ``batch`` members of order ``n``."""
    low = np.tril(rng.standard_normal((batch, n, n))) + n * np.eye(n)
    spd = low @ low.transpose(0, 2, 1)
    b = rng.standard_normal((batch, n, 4 if n == 4 else n))
    work = spd.copy()

    def potrf() -> None:
        np.copyto(work, spd)
        tc.batched.potrf(work)

    calls = {f"potrf {n} x{batch}": potrf,
             f"numpy cholesky {n} x{batch}": lambda: np.linalg.cholesky(spd)}
    if n == 4:
        calls[f"trsm {n} x{batch}"] = lambda: tc.batched.trsm(low, b)
    else:
        calls[f"trmm {n} x{batch}"] = lambda: tc.batched.trmm(low, b)
        calls[f"numpy matmul {n} x{batch}"] = lambda: np.matmul(low, b)
    return calls


def main(label: str = "") -> None:
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    rng = np.random.default_rng(0)
    out = [f"{name} {call_microseconds(fn):.1f}"
           for batch, n in ((1, 4), (4, 64), (4, 128))
           for name, fn in cases(rng, batch, n).items()]
    print(label, " | ".join(out), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:2])
