"""Host time of replayed dense calls with the ordering of plan launches (tricov._plans.launch)
and without it, in one process.

    PYTHONPATH=src python3 benchmarks/gpu_plan_launch_cost.py

TRSM and POTRS of order 64 with 4 right-hand sides, and POTRF of order 64 on a fresh copy, each
replayed 200 times back to back without synchronising (their device work is a few
microseconds, so the loop measures the host), seven rounds alternating the guarded launch and a
plain ``graph.launch``; the best microseconds per call of each.
"""

from __future__ import annotations

import time

import cupy as cp

import tricov as tc
from tricov import _plans


def plain(plan, stream) -> None:
    plan.graph.launch(stream=stream)


def main() -> None:
    guarded = _plans.launch
    rng = cp.random.default_rng(0)
    a = cp.asfortranarray(cp.tril(rng.standard_normal((64, 64))) + 8 * cp.eye(64))
    b = cp.asfortranarray(rng.standard_normal((64, 4)))
    s = cp.asfortranarray(a @ a.T)
    calls = {"trsm": lambda: tc.trsm(a, b), "potrs": lambda: tc.potrs(a, b),
             "potrf": lambda: tc.potrf(s.copy(order="F"))}
    sync = cp.cuda.Device().synchronize
    try:
        for name, call in calls.items():
            for _ in range(3):  # eager, captured, replayed
                call()
            best = {"ordered": float("inf"), "plain": float("inf")}
            for _ in range(7):
                for label, launch in (("ordered", guarded), ("plain", plain)):
                    _plans.launch = launch
                    sync()
                    start = time.perf_counter()
                    for _ in range(200):
                        call()
                    best[label] = min(best[label], (time.perf_counter() - start) / 200 * 1e6)
                    sync()
            print(f"{name:6} host us per call: ordered {best['ordered']:.2f}  "
                  f"plain {best['plain']:.2f}")
    finally:
        _plans.launch = guarded


if __name__ == "__main__":
    main()
