"""A workload for Nsight Compute: a few calls of one batched operation (batch 10240, float64),
so that ``ncu`` can profile one launch of its kernel.

    ncu --kernel-name regex:tricov_batched_tile128 --launch-skip 1 --launch-count 1 \\
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \\
        --section Occupancy python3 benchmarks/gpu_batched_ncu.py trmm 256
    ncu --kernel-name regex:tricov_batched_small --launch-skip 3 --launch-count 3 \\
        --section SpeedOfLight --section WarpStateStats --section Occupancy \\
        python3 benchmarks/gpu_batched_ncu.py potrf 32
    (the grid kernels of orders 17-32: ``--kernel-name regex:tricov_batched_grid``)

(run with ``PYTHONPATH=src``). Operations: ``trmm``, ``potrf``, ``potri``, ``potrs``.
"""

from __future__ import annotations

import sys

import cupy as cp

import tricov as tc


def main(op: str = "trmm", n: str = "256") -> None:
    order = int(n)
    rng = cp.random.default_rng(0)
    x = rng.standard_normal((10240, order, order))
    a = x @ x.transpose(0, 2, 1) + order * cp.eye(order)
    low = cp.linalg.cholesky(a)
    rhs = rng.standard_normal((10240, order, order))
    calls = {"trmm": lambda: tc.batched.trmm(low, rhs.copy()),
             "potrf": lambda: tc.batched.potrf(a.copy(), check=False),
             "potri": lambda: tc.batched.potri(low.copy(), check=False),
             "potrs": lambda: tc.batched.potrs(low, rhs.copy())}
    for _ in range(3):
        calls[op]()
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main(*sys.argv[1:3])
