"""Batched POTRF of small orders on the CPU against ``numpy.linalg.cholesky``, 1 and 2 threads.

Run: ``python benchmarks/cpu_batched_small.py [REPS]``. Times are the minimum over ``REPS``
rounds (default 25), each of which times every contender once, in turn (:func:`interleaved`);
tricov's time is that of a copy and the call, less that of the copy.
"copy 2t" copies the stack with two threads (members split between them): an in-place call
reads and writes the whole stack, so it cannot take less, and ``numpy / copy 2t`` ("bound") is
the most any in-place POTRF could show against NumPy on this machine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numba
import numpy as np

import tricov as tc


def best(f: Callable[[], object], reps: int) -> float:
    """Minimum wall time of ``f()`` over ``reps`` calls, in seconds (the timer of the other
    CPU scripts: ``cpu_batched_orders.py``, ``cpu_batched_footprint.py``, ``cpu_potrf_split.py``,
    ``cpu_potrf_lanes.py``)."""
    low = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f()
        low = min(low, time.perf_counter() - t)
    return low


def interleaved(calls: dict[str, Callable[[], object]], reps: int) -> dict[str, float]:
    """Minimum wall time of each call over ``reps`` rounds, in seconds; every round times each
    call once, in turn, so that load that comes and goes on the machine (the other core taken
    for a while) spoils a round of every contender rather than all the rounds of one."""
    ts = {name: float("inf") for name in calls}
    for _ in range(reps):
        for name, f in calls.items():
            t = time.perf_counter()
            f()
            ts[name] = min(ts[name], time.perf_counter() - t)
    return ts


@numba.njit(parallel=True)
def parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src``, the members split between the threads."""
    for k in numba.prange(src.shape[0]):
        dst[k] = src[k]


def row(n: int, reps: int, batch: int, rng: np.random.Generator) -> str:
    """One line of the table: order ``n``, ``batch`` SPD members."""
    x = rng.standard_normal((batch, n, n))
    a = x @ x.transpose(0, 2, 1) + n * np.eye(n)
    w = a.copy()

    def threads(count: int, f: Callable[[], object]) -> Callable[[], object]:
        return lambda: (numba.set_num_threads(count), f())

    t = interleaved({
        "numpy": lambda: np.linalg.cholesky(a),
        "copy": lambda: np.copyto(w, a),
        "copy 2t": threads(2, lambda: parallel_copy(w, a)),
        "1t": threads(1, lambda: (np.copyto(w, a), tc.batched.potrf(w))),
        "2t": threads(2, lambda: (np.copyto(w, a), tc.batched.potrf(w))),
    }, reps)
    t_np, t_copy, t_copy2 = t["numpy"], t["copy"], t["copy 2t"]
    out = [t["1t"] - t_copy, t["2t"] - t_copy]
    return (f"n={n:3d} numpy {t_np * 1e3:7.3f} ms copy {t_copy * 1e3:6.3f} copy 2t "
            f"{t_copy2 * 1e3:6.3f}  tricov 1t {out[0] * 1e3:7.3f} 2t {out[1] * 1e3:7.3f}  "
            f"x numpy {t_np / out[1]:5.1f} (bound {t_np / t_copy2:5.1f})")


def main(reps: int = 25, batch: int = 10240) -> None:
    rng = np.random.default_rng(0)
    for n in (4, 8, 12, 16, 24, 32):
        print(row(n, reps, batch, rng))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 25)
