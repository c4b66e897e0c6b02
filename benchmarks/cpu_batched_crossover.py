"""Batched CPU operations on the lane kernels against the per-member executor, past the
crossovers of ``tricov.batched._cpu`` (``LANES_MAX``, ``LANES_MAX_FEW_RHS``, ``SCRATCH_BYTES``).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/cpu_batched_crossover.py [CASE ...]``, a case
being ``OP:DTYPE:N[:M]`` (M right-hand sides for potrs / posv / trsm, default 4), by default
the list below. Each case runs on one thread, 128 members (64 when M > 4), both ways: the
executor (the operation's limits set to 0) and the lane kernels (set past N, with no
scratch limit). Prints the minimum over three calls, the operands restored before each call
and the restore timed with it, and the executor's time over the lanes' (above 1: the lanes win).
"""

from __future__ import annotations

import sys
import time

import numba
import numpy as np

import tricov as tc
from tricov.batched import _cpu
from tricov.kernels.numba import small

CASES = [f"{op}:{dtype}:{n}" for op in ("potrf", "posv", "poti") for dtype in
         ("float64", "float32", "complex128") for n in (160, 256)]
CASES += [f"{op}:float64:{n}" for op in ("potrs", "potri", "trtri", "lauum", "trsm")
          for n in (112, 128, 160, 256)]
CASES += [f"{op}:{dtype}:{n}:{n}" for op in ("posv", "potrs") for dtype in
          ("float64", "complex128") for n in (128, 160, 256)]
CASES += [f"{op}:{dtype}:256:64" for op in ("posv", "potrs") for dtype in
          ("float64", "complex128")]


def case(spec: str, rng: np.random.Generator) -> str:
    """One case: its line of output."""
    op, dtype, n, *rest = spec.split(":")
    n, m = int(n), int(rest[0]) if rest else 4
    count = 128 if m <= 4 else 64
    x = rng.standard_normal((count, n, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((count, n, n))
    a = (x @ x.conj().transpose(0, 2, 1) + n * np.eye(n)).astype(dtype)
    if op in ("potrs", "potri", "trtri", "lauum", "trsm"):
        a = np.linalg.cholesky(a)
    b = rng.standard_normal((count, n, m)).astype(dtype)
    w, wb = a.copy(), b.copy()
    with_b = op in ("potrs", "posv", "trsm")
    fn = getattr(tc.batched, op)

    def call() -> None:
        np.copyto(w, a)
        if with_b:
            np.copyto(wb, b)
            fn(w, wb)
        else:
            fn(w)

    times = []
    saved = dict(_cpu.LANES_MAX), dict(_cpu.LANES_MAX_FEW_RHS), _cpu.SCRATCH_BYTES
    try:
        for lanes in (False, True):
            _cpu.LANES_MAX[op] = n if lanes else 0
            _cpu.LANES_MAX_FEW_RHS[op] = 0
            _cpu.SCRATCH_BYTES = 1 << 40
            call()
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - t)
            times.append(best)
    finally:
        _cpu.LANES_MAX.update(saved[0])
        _cpu.LANES_MAX_FEW_RHS.clear()
        _cpu.LANES_MAX_FEW_RHS.update(saved[1])
        _cpu.SCRATCH_BYTES = saved[2]
    scratch = (n + 1) * (n + m * with_b + 1) * small.lanes_for(dtype) * np.dtype(dtype).itemsize
    return (f"{spec:24s} executor {times[0] * 1e3:8.2f} ms  lanes {times[1] * 1e3:8.2f} ms  "
            f"ratio {times[0] / times[1]:5.2f}  scratch {scratch / 2**20:5.2f} MiB")


def main(cases: list[str]) -> None:
    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    for spec in cases or CASES:
        print(case(spec, rng), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
