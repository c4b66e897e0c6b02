"""Every dense GPU operation on C- and F-ordered CuPy arrays of the same data: the layout's cost.

    PYTHONPATH=src python3 benchmarks/gpu_layouts.py [N ...]

A C-ordered matrix is the transpose of its memory to cuBLAS and cuSOLVER, so tricov runs the
transposed variant of each operation on it; where a vendor routine's variants differ in speed
(cuSOLVER's upper POTRF runs 2.5-3x slower than its lower, ``gpu_potrf_order.py``), the
layout shows. Printed per operation, dtype and order: microseconds on C and F order (median of
10 replayed calls, CUDA events, inputs restored before each) and C / F. Output:
``gpu_layouts_h100.txt``.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

import cupy as cp
import numpy as np

import tricov as tc

OPS: dict[str, Callable[[dict], object]] = {
    "trsm": lambda x: tc.trsm(x["L"], x["B"]),
    "trmm": lambda x: tc.trmm(x["L"], x["B"]),
    "syrk": lambda x: tc.syrk(x["B"], x["C"]),
    "potrf": lambda x: tc.potrf(x["S"]),
    "trtri": lambda x: tc.trtri(x["L"]),
    "lauum": lambda x: tc.lauum(x["L"]),
    "potri": lambda x: tc.potri(x["L"]),
    "poti": lambda x: tc.poti(x["S"]),
    "potrs": lambda x: tc.potrs(x["L"], x["B"]),
    "posv": lambda x: tc.posv(x["S"], x["B"]),
}


def median_us(restore: Callable[[], object], call: Callable[[], object], reps: int = 10,
              warmup: int = 3) -> float:
    """Median time in microseconds of ``reps`` calls of ``call`` (CUDA events), each after
    ``restore`` (not timed), ``warmup`` rounds first (also used by ``gpu_potrf_order.py`` and
    ``gpu_potrf_split.py``)."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for r in range(reps + warmup):
        restore()
        start.record()
        call()
        end.record()
        end.synchronize()
        if r >= warmup:
            times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times) * 1e3


def inputs(dtype: np.dtype, n: int) -> dict[str, cp.ndarray]:
    """A well-conditioned lower triangle L, an SPD S, a general B and a zero C (F order)."""
    rng = cp.random.default_rng(n)
    x = rng.standard_normal((n, n), dtype=np.float64).astype(dtype)
    s = x @ x.conj().T / n + cp.eye(n, dtype=dtype)
    return {"L": cp.asfortranarray(cp.linalg.cholesky(s)), "S": cp.asfortranarray(s),
            "B": cp.asfortranarray(rng.standard_normal((n, n), dtype=np.float64).astype(dtype)),
            "C": cp.zeros((n, n), dtype=dtype, order="F")}


def main(sizes: list[int]) -> None:
    print("op     dtype       n  |   C us    F us   C / F")
    for dtype in (np.float32, np.float64, np.complex128):
        for n in sizes:
            pristine = inputs(np.dtype(dtype), n)
            for op, call in OPS.items():
                times = []
                for order in ("C", "F"):
                    work = {k: cp.array(v, order=order) for k, v in pristine.items()}

                    def restore(work=work, pristine=pristine) -> None:
                        for k, v in pristine.items():
                            work[k][...] = v
                    times.append(median_us(restore, lambda work=work, call=call: call(work)))
                print(f"{op:6} {np.dtype(dtype).name:10} {n:5d} | {times[0]:7.0f} {times[1]:7.0f} "
                      f"{times[0] / times[1]:6.2f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1024, 3072])
