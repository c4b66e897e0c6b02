"""Time of dense GPU calls as a user makes them, with the replay of repeated calls
(tricov._calls) on and off, against torch on the same memory (float64, column-major).

    PYTHONPATH=src python3 benchmarks/gpu_dense_call.py [LABEL]

Part 1, host time: TRSM/TRMM of order 64 with 4 right-hand sides, SYRK 64 x 16, POTRS with 4
right-hand sides and TRSM on PyTorch tensors (DLPack), each called 200 times back to back
without synchronising (their device work is a few microseconds, so the loop measures the
host's time per call), seven times; the best per-call time, microseconds.

Part 2, whole calls that read a status (POTRF, POTRI; orders 64, 1024, 2048, 4096): on a fresh
copy of the matrix with the device idle, CUDA events around the call; the contenders take turns
call by call, each first in turn (replay on, replay off, ``torch.linalg.cholesky`` or
``torch.cholesky_inverse``), medians of 30, microseconds. "off" is tricov with every call
taking the slow path (its plans still replayed as CUDA graphs), as before the replay existed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import cupy as cp
import numpy as np
import torch

import tricov as tc
from tricov import _calls
from tricov.bench.devices import call_microseconds

_replay = _calls.replay


def _replay_on(on: bool) -> None:
    _calls.replay = _replay if on else (lambda call, arrays: False)


def _host_part(label: str) -> None:
    sync = cp.cuda.Device().synchronize
    rng = cp.random.default_rng(0)
    n, k = 64, 4
    x = rng.standard_normal((n, n))
    spd = cp.asfortranarray(x @ x.T / n + cp.eye(n))
    low = cp.asfortranarray(cp.linalg.cholesky(spd))
    b = cp.asfortranarray(rng.standard_normal((n, k)))
    a16 = cp.asfortranarray(rng.standard_normal((n, 16)))
    c = cp.zeros((n, n), order="F")
    tl, tb, ta = (torch.from_dlpack(v) for v in (low, b, a16))
    tb2 = torch.from_dlpack(b.copy(order="F"))
    calls = {"trsm": lambda: tc.trsm(low, b), "trmm": lambda: tc.trmm(low, b),
             "syrk": lambda: tc.syrk(a16, c), "potrs": lambda: tc.potrs(low, b),
             "trsm on torch tensors": lambda: tc.trsm(tl, tb2)}
    row = {}
    for on in (True, False):
        _replay_on(on)
        for name, fn in calls.items():
            row[f"{name} {'on' if on else 'off'}"] = call_microseconds(fn, 200, 7, 50, sync)
    _replay_on(True)
    row |= {"torch solve_triangular": call_microseconds(
                lambda: torch.linalg.solve_triangular(tl, tb, upper=False), 200, 7, 50, sync),
            "torch matmul": call_microseconds(lambda: torch.matmul(tl, tb), 200, 7, 50, sync),
            "torch syrk (a @ a.T)": call_microseconds(lambda: ta @ ta.T, 200, 7, 50, sync),
            "torch cholesky_solve": call_microseconds(
                lambda: torch.cholesky_solve(tb, tl), 200, 7, 50, sync)}
    print(label, "host us/call, order 64: " + " | ".join(f"{k} {v:.1f}" for k, v in row.items()),
          flush=True)


def _timed(f: Callable[[cp.ndarray], object], w: cp.ndarray, a0: cp.ndarray) -> float:
    cp.copyto(w, a0)
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    f(w)
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) * 1e3


def _whole_part(label: str, reps: int = 30) -> None:
    for n in (64, 1024, 2048, 4096):
        x = cp.random.default_rng(1).standard_normal((n, n))
        spd = cp.asfortranarray(x @ x.T / n + cp.eye(n))
        low = cp.asfortranarray(cp.linalg.cholesky(spd))
        del x
        w = cp.empty_like(spd, order="F")
        cases = {
            "potrf": (spd, tc.potrf, lambda a: torch.linalg.cholesky(torch.from_dlpack(a))),
            "potri": (low, tc.potri, lambda a: torch.cholesky_inverse(torch.from_dlpack(a))),
        }
        for op, (a0, ours, theirs) in cases.items():
            times: dict[str, list[float]] = {"on": [], "off": [], "torch": []}
            names = list(times)
            for k in range(reps + 3):
                for name in names[k % 3:] + names[:k % 3]:  # each goes first in turn
                    _replay_on(name != "off")
                    t = _timed(theirs if name == "torch" else ours, w, a0)
                    if k >= 3:
                        times[name].append(t)
            _replay_on(True)
            med = {name: float(np.median(v)) for name, v in times.items()}
            print(f"{label} {op} n={n:5d} us: on {med['on']:8.1f}  off {med['off']:8.1f}  "
                  f"torch {med['torch']:8.1f}   torch/on {med['torch'] / med['on']:.3f}  "
                  f"torch/off {med['torch'] / med['off']:.3f}", flush=True)


def main(label: str = "") -> None:
    _host_part(label)
    _whole_part(label)


if __name__ == "__main__":
    main(*sys.argv[1:2])
