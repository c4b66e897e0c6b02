"""Where a TRSM with few right-hand sides spends its device time: the best of seven whole calls
(CUDA events, B restored between them), then the kernels of one call as PyTorch's profiler sees
them (``tricov.bench.devices.kernel_times``), for a lower triangle of 16384 rows and 128
right-hand sides in float32 and float64.

    PYTHONPATH=src python3 benchmarks/gpu_trsm_few_rhs_profile.py

It found the condition test of the assembled leaf inverses (``tri_cond``) at 167 µs of a
float32 call; ``benchmarks/README.md`` has the before and after.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

import tricov as tc
from tricov.bench.devices import event_seconds, kernel_times

N, M = 16384, 128


def profile(dt: type) -> None:
    """Best whole call and kernels of one call, for dtype ``dt``."""
    n, m = N, M
    rng = cp.random.default_rng(0)
    t = cp.tril(rng.standard_normal((n, n), dtype=dt)) / np.sqrt(n)
    t += cp.eye(n, dtype=dt) * 2
    t = cp.asfortranarray(t.astype(dt))
    b0 = cp.asfortranarray(rng.standard_normal((n, m), dtype=dt))
    b = b0.copy(order="F")
    ts = event_seconds(lambda: tc.trsm(t, b), lambda: b.__setitem__(Ellipsis, b0), repeats=7)
    print(np.dtype(dt).name, f"best {min(ts) * 1e3:.3f} ms  {n * n * m / min(ts) / 1e12:.1f} TF/s")
    b[...] = b0
    ks = kernel_times(lambda: tc.trsm(t, b))
    tot = sum(x for _, x, _ in ks)
    print(f"  kernels {tot:.0f} us in {sum(c for *_, c in ks)} launches")
    for name, us, c in ks[:12]:
        print(f"   {us:8.1f} us x{c:3d}  {name[:110]}")


if __name__ == "__main__":
    for dtype in (np.float32, np.float64):
        profile(dtype)
