"""Batched POTRF on one CPU thread against the size of the stack: where its time goes once the
members no longer fit in the caches.

Run: ``OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cpu_batched_footprint.py [N]
[BATCH ...]`` (order ``N``, default 32; batches default 512 ... 10240). Each line gives ns per
member of a call (the minimum over repeated calls of a copy and the call, less that of the
copy alone; the copy leaves the stack's end in the last-level cache and its start evicted) and
ns per member of the copy. Run it alternately against a scratch copy of the package to see
what a change costs in cache and out of it.
"""

from __future__ import annotations

import sys

import numba
import numpy as np
from cpu_batched_small import best

import tricov as tc


def line(n: int, batch: int, rng: np.random.Generator) -> str:
    """One line of the table: order ``n``, ``batch`` SPD members."""
    x = rng.standard_normal((batch, n, n))
    a = x @ x.transpose(0, 2, 1) + n * np.eye(n)
    w = a.copy()
    tc.batched.potrf(w)
    reps = max(5, 100000 // batch)
    copy = best(lambda: np.copyto(w, a), reps)
    call = best(lambda: (np.copyto(w, a), tc.batched.potrf(w)), reps) - copy
    return (f"n={n} batch={batch:6d} stack {a.nbytes / 1e6:5.1f} MB  potrf "
            f"{call / batch * 1e9:7.1f} ns/member  copy {copy / batch * 1e9:6.1f} ns/member")


def main(n: int = 32, batches: tuple[int, ...] = (512, 1024, 2048, 4096, 6144, 10240)) -> None:
    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    for batch in batches:
        print(line(n, batch, rng), flush=True)


if __name__ == "__main__":
    args = [int(v) for v in sys.argv[1:]]
    main(*args[:1], *([tuple(args[1:])] if len(args) > 1 else []))
