"""Batched POTRF of 10240 members of each order (default 4 and 8) on the CPU (``check=False``),
the time of a restoring copy subtracted, best of 400 calls:

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cpu_potrf_lanes.py [THREADS [N ...]]

Made to compare two trees, each in its own clone with its own Numba cache, run alternately
(this VM's timings drift between minutes).
"""

from __future__ import annotations

import sys

import numba
import numpy as np
from cpu_batched_small import best

import tricov as tc


def main(threads: int = 1, orders: tuple[int, ...] = (4, 8)) -> None:
    rng = np.random.default_rng(0)
    numba.set_num_threads(threads)
    for n in orders:
        x = rng.standard_normal((10240, n, n))
        a = x @ x.transpose(0, 2, 1) + n * np.eye(n)
        w = a.copy()
        tc.batched.potrf(w, check=False)
        copy = best(lambda w=w, a=a: np.copyto(w, a), 400)
        call = best(lambda w=w, a=a: (np.copyto(w, a), tc.batched.potrf(w, check=False)),
                    400) - copy
        print(f"n={n} threads={threads} potrf {call * 1e3:.3f} ms (copy {copy * 1e3:.3f})",
              flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1,
         tuple(int(n) for n in sys.argv[2:]) or (4, 8))
