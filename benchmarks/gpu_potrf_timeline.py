"""Where the host time of one tricov.potrf call of order 1024 goes, by CUDA events recorded at
points inside it (entering the device context, the plan's launch, the status read), each call
on a fresh copy with the device idle; with torch's Cholesky run between our calls or not, and
with CUDA graphs on or off. Medians of 20 calls, microseconds from the call's start.

    PYTHONPATH=src python3 benchmarks/gpu_potrf_timeline.py

It wraps tricov internals (``_plans.run``, ``cuda_libs.read_small``, ``Operands.__enter__``) to
place the events: a diagnostic, not a benchmark of the library's speed.
"""

import time

import cupy as cp
import numpy as np
import torch

import tricov as tc
import tricov._frontend as fe
import tricov._plans as plans
import tricov.backends.cuda_libs as lib
from tricov import dense

marks = {}
orig_run, orig_read, orig_enter = plans.run, lib.read_small, fe.Operands.__enter__


def ev(name):
    e = cp.cuda.Event()
    e.record()
    marks[name] = e


def run(*a, **k):
    ev("launch")
    out = orig_run(*a, **k)
    ev("launched")
    return out


def read(*a, **k):
    ev("read")
    return orig_read(*a, **k)


def enter(self):
    ev("enter")
    return orig_enter(self)


plans.run, lib.read_small, fe.Operands.__enter__ = run, read, enter
fe._plans.run = run

n = 1024
g = cp.random.default_rng(0).standard_normal((n, n))
a0 = cp.asfortranarray(g @ g.T / n + cp.eye(n))
w = a0.copy(order="F")
other = a0.copy(order="F")
for graphs, inter in ((True, False), (True, True), (False, True)):
    tc.set_cuda_graphs(graphs)
    rows = []
    for k in range(25):
        marks.clear()
        if inter:
            cp.copyto(other, a0)
            torch.linalg.cholesky(torch.from_dlpack(other))
        cp.copyto(w, a0)
        cp.cuda.Device().synchronize()
        ev("start")
        h0 = time.perf_counter()
        dense.potrf(w)
        h1 = time.perf_counter()
        ev("stop")
        marks["stop"].synchronize()
        t = {k2: cp.cuda.get_elapsed_time(marks["start"], e) * 1e3 for k2, e in marks.items()}
        t["host"] = (h1 - h0) * 1e6
        if k >= 5:
            rows.append(t)
    keys = ["enter", "launch", "launched", "read", "stop", "host"]
    # A replayed call (tricov._calls, from the third on) enters no Operands and no plans.run.
    print(f"graphs={graphs} torch between={inter}: " + "  ".join(
        f"{k} {np.median([r[k] for r in rows]):.1f}" if all(k in r for r in rows) else f"{k} -"
        for k in keys), flush=True)
