"""Dense POTRF on the CPU with the recursion's first split as tricov makes it, and at the power
of two, between one and two leaves (leaves of 256: 257 to 512 rows).

    PYTHONPATH=src python benchmarks/cpu_potrf_split.py [REPS]

``ours`` is :func:`tricov.recursive.cholesky.potrf_split` (A22 a whole leaf, A11 the rest);
``pow2`` splits at the largest power of two below the order. Times are the minimum over REPS
(default 30) of a copy and the call, less the copy's, in microseconds; the two splits alternate
twice per order in one process (the CPU path captures nothing, so patching the split between
calls is enough).
"""

from __future__ import annotations

import sys

import numpy as np
from cpu_batched_small import best

import tricov as tc
from tricov.recursive import blas3, cholesky

SPLITS = {"ours": cholesky.potrf_split, "pow2": lambda n, leaf, panel=0: blas3.split(n)}


def main(reps: int = 30) -> None:
    rng = np.random.default_rng(0)
    for n in (300, 384, 448, 511):
        x = rng.standard_normal((n, n))
        a = np.asfortranarray(x @ x.T + n * np.eye(n))
        w = a.copy(order="F")
        copy = best(lambda w=w, a=a: np.copyto(w, a), reps)
        out: dict[str, list[float]] = {name: [] for name in SPLITS}
        for _ in range(2):
            for name, rule in SPLITS.items():
                cholesky.potrf_split = rule
                out[name].append(
                    best(lambda w=w, a=a: (np.copyto(w, a), tc.potrf(w)), reps) - copy)
        cholesky.potrf_split = SPLITS["ours"]
        print(f"n={n}: " + " | ".join(f"{name} " + " ".join(f"{t * 1e6:6.0f}" for t in ts)
                                      for name, ts in out.items()) + " us")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
