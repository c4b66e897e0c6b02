"""Batched TRSM and POTRS of orders 17-32 on the tensor-core solve kernel against the register
kernels: ``tricov.batched.trsm`` / ``potrs`` with ``BatchedCUDAExecutor.mma`` on (the default:
float64 orders from ``tricov.kernels.MMA_FROM`` on the tensor-core kernel) and off (the register
kernels), batch 10240, C and F order inside each member, device time of 20 queued calls (best of
5), and the largest relative difference of the two results.

    PYTHONPATH=src python3 benchmarks/gpu_batched_mma.py [--force]

``--force`` runs float32 and orders below ``MMA_FROM`` on the tensor-core kernel too (the
measurements behind ``tricov.kernels.MMA_SOLVES``). GB/s counts the triangle once and B twice.
"""
import sys

import cupy as cp
import numpy as np

import tricov as tc
import tricov.backends.batched_cuda as bc
from tricov.backends.batched_cuda import BatchedCUDAExecutor

if "--force" in sys.argv:
    bc.MMA_FROM = 0
    bc.MMA_SOLVES = {"d": (0, 8), "f": (0, 8)}

BATCH = 10240


def events(fn, reps=20, rounds=5):
    fn()
    cp.cuda.runtime.deviceSynchronize()
    best = np.inf
    for _ in range(rounds):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(s, e) / reps)
    return best * 1e3


rng = cp.random.default_rng(1)
print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, batch {BATCH}, µs")
print(f"{'case':28} {'regs us':>9} {'mma us':>9} {'x':>6} {'GB/s mma':>9} {'reldiff':>8}")
for dt in (np.float64, np.float32) if "--force" in sys.argv else (np.float64,):
    for n, nrhs in ((32, 32), (28, 28), (25, 25), (24, 24), (17, 17), (32, 8), (32, 64),
                    (32, 100)):
        for order in ("C", "F"):
            g = rng.standard_normal((BATCH, n, n)).astype(dt)
            a = g @ g.transpose(0, 2, 1) / n + cp.eye(n, dtype=dt)
            lc = cp.linalg.cholesky(a.astype(np.float64)).astype(dt)
            b0 = rng.standard_normal((BATCH, n, nrhs)).astype(dt)
            if order == "F":
                lc = cp.ascontiguousarray(lc.transpose(0, 2, 1)).transpose(0, 2, 1)
                b0 = cp.ascontiguousarray(b0.transpose(0, 2, 1)).transpose(0, 2, 1)
            for op in ("trsm", "potrs"):
                f = getattr(tc.batched, op)
                res, times = {}, {}
                for mma in (False, True):
                    BatchedCUDAExecutor.mma = mma
                    b = b0.copy()
                    f(lc, b)
                    res[mma] = b
                    bt = b0.copy()
                    times[mma] = events(lambda f=f, lc=lc, bt=bt: f(lc, bt))
                BatchedCUDAExecutor.mma = True
                diff = float(cp.abs(res[True] - res[False]).max() / cp.abs(res[False]).max())
                nb = BATCH * (n * (n + 1) // 2 + 2 * n * nrhs) * np.dtype(dt).itemsize
                print(f"{op} {n}x{nrhs} {order} {np.dtype(dt).name:8} {times[False]:9.1f} "
                      f"{times[True]:9.1f} {times[False] / times[True]:6.2f} "
                      f"{nb / times[True] / 1e3:9.0f} {diff:8.1e}")
