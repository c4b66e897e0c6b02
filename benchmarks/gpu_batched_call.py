"""Host time of one batched call on the GPU: tricov.batched (on CuPy stacks, and on PyTorch
stacks through DLPack) against the torch calls a user would make instead, on the same members
(batch 10240 of order 8, float64, C order).

    PYTHONPATH=src python3 benchmarks/gpu_batched_call.py [LABEL]

Each call is made 200 times back to back (no device synchronisation between them: at order 8
the device work of a call is a few microseconds, so the loop measures what the host spends per
call), seven times; the best per-call time is printed, in microseconds. ``LABEL`` starts the
line (to tell runs of two trees apart).
"""

from __future__ import annotations

import sys

import cupy as cp

import tricov as tc
from tricov.bench.devices import call_microseconds


def main(label: str = "") -> None:
    sync = cp.cuda.Device().synchronize
    batch, n = 10240, 8
    rng = cp.random.default_rng(0)
    x = rng.standard_normal((batch, n, n))
    a = x @ x.transpose(0, 2, 1) + n * cp.eye(n)
    lower = cp.linalg.cholesky(a)
    b = rng.standard_normal((batch, n, n))
    w = a.copy()
    calls = {"trsm": lambda: tc.batched.trsm(lower, b),
             "trmm": lambda: tc.batched.trmm(lower, b),
             "potrf(check=False)": lambda: tc.batched.potrf(w, check=False)}
    try:
        import torch

        tl, tb, ta = (torch.from_dlpack(v) for v in (lower, b, a))
        tw = torch.from_dlpack(w.copy())
        calls |= {"trsm on torch stacks": lambda: tc.batched.trsm(tl, tb),
                  "potrf(check=False) on torch stacks": lambda: tc.batched.potrf(
                      tw, check=False)}
        calls |= {"torch solve_triangular": lambda: torch.linalg.solve_triangular(
                      tl, tb, upper=False),
                  "torch matmul": lambda: torch.matmul(tl, tb),
                  "torch cholesky_ex": lambda: torch.linalg.cholesky_ex(ta)}
    except ImportError:
        pass
    times = {name: call_microseconds(fn, 200, 7, 50, sync) for name, fn in calls.items()}
    print(label, " | ".join(f"{name} {t:.1f}" for name, t in times.items()),
          flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:2])
