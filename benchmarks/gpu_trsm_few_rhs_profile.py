"""Where a TRSM (or TRMM) with few right-hand sides spends its device time: the best of seven
whole calls (CUDA events, B restored between them), then the kernels of one call as PyTorch's
profiler sees them (``tricov.bench.devices.kernel_times``), for a lower triangle of 16384 rows
and 128 right-hand sides (``--rhs``) in float32 and float64 (``--dtype``).

    PYTHONPATH=src python3 benchmarks/gpu_trsm_few_rhs_profile.py [--op trmm] [--rhs 256]

It found the condition test of the assembled leaf inverses (``tri_cond``) at 167 µs of a
float32 call; ``benchmarks/README.md`` has the before and after.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np

import tricov as tc
from tricov.bench.devices import event_seconds, kernel_times

N = 16384


def profile(op: str, dt: type, m: int) -> None:
    """Best whole call and kernels of one call of ``op``, for dtype ``dt`` and ``m`` columns."""
    n = N
    call = getattr(tc, op)
    rng = cp.random.default_rng(0)
    t = cp.tril(rng.standard_normal((n, n), dtype=dt)) / np.sqrt(n)
    t += cp.eye(n, dtype=dt) * 2
    t = cp.asfortranarray(t.astype(dt))
    b0 = cp.asfortranarray(rng.standard_normal((n, m), dtype=dt))
    b = b0.copy(order="F")
    ts = event_seconds(lambda: call(t, b), lambda: b.__setitem__(Ellipsis, b0), repeats=7)
    print(op, np.dtype(dt).name, f"{n} x {m}: best {min(ts) * 1e3:.3f} ms  "
          f"{n * n * m / min(ts) / 1e12:.1f} TF/s")
    b[...] = b0
    ks = kernel_times(lambda: call(t, b))
    tot = sum(x for _, x, _ in ks)
    print(f"  kernels {tot:.0f} us in {sum(c for *_, c in ks)} launches")
    for name, us, c in ks[:12]:
        print(f"   {us:8.1f} us x{c:3d}  {name[:110]}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--op", choices=("trsm", "trmm"), default="trsm")
    ap.add_argument("--rhs", type=int, default=128)
    ap.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    args = ap.parse_args()
    for dtype in args.dtype:
        profile(args.op, np.dtype(dtype).type, args.rhs)
