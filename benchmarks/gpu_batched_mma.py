"""Batched TRSM, POTRS, POTRI, POTRF and POSV of orders 17-32 on the tensor-core kernel against the
register kernels: ``tricov.batched`` calls with ``BatchedCUDAExecutor.mma`` on (the default:
the orders of ``tricov.kernels.MMA_SOLVES`` on the tensor-core kernel) and off (the
register kernels), batch 10240, C and F order inside each member, device time of 20 queued
calls (best of 5; POTRI, POTRF and POSV restore their operands before each call and subtract the
copies' time), and the largest relative difference of the two results.

    PYTHONPATH=src python3 benchmarks/gpu_batched_mma.py [--force] [--ops OP ...] [--orders N ...]

``--ops`` and ``--orders`` (as many right-hand sides as the order) narrow the cases.
``--force`` runs float32 and every order on the tensor-core kernel (the
measurements behind ``tricov.kernels.MMA_SOLVES``). GB/s counts what each operation must read
and write (a triangle once or twice, B twice: ``tricov.batched.bench.bytes_moved``).
"""
import argparse

import cupy as cp
import numpy as np

import tricov as tc
import tricov.backends.batched_cuda as bc
from tricov.backends.batched_cuda import BatchedCUDAExecutor
from tricov.batched.bench import BatchedCase, bytes_moved
from tricov.bench.devices import queued_seconds

OPS = ("trsm", "potrs", "potri", "potrf", "posv")
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--force", action="store_true")
ap.add_argument("--ops", nargs="+", choices=OPS, default=OPS)
ap.add_argument("--orders", nargs="+", type=int)
args = ap.parse_args()
if args.force:
    bc.MMA_SOLVES = {ch: {0: 0, 8: 0, 6: 0} for ch in "df"}

BATCH = 10240


def events(fn):
    """Device µs per call: 20 queued calls, best of 5."""
    return queued_seconds(fn, calls=20, rounds=5, warmup=1) * 1e6


def case(op, lc, a, b0):
    """(call, result array, restoring copy or None) of ``op`` on fresh working copies."""
    f = getattr(tc.batched, op)
    if op in ("trsm", "potrs"):
        b = b0.copy()
        return (lambda: f(lc, b)), b, None
    w = a.copy()
    if op == "potrf":
        return (lambda: f(w, check=False)), w, lambda: cp.copyto(w, a)
    if op == "potri":
        w = lc.copy()
        return (lambda: f(w, check=False)), w, lambda: cp.copyto(w, lc)
    b = b0.copy()
    return ((lambda: f(w, b, check=False)), b,
            lambda: (cp.copyto(w, a), cp.copyto(b, b0)))


def device_us(op, lc, a, b0):
    """Device µs of one call, and its result: the factorizations restored before each call,
    the restoring copies' own time subtracted."""
    call, out, restore = case(op, lc, a, b0)
    if restore is None:
        us = events(call)
    else:
        us = events(lambda: (restore(), call())) - events(restore)
    call, out, restore = case(op, lc, a, b0)
    call()
    return us, out


rng = cp.random.default_rng(1)
warm = cp.ones(1 << 27)  # a second of copies first: a GPU just started ramps its clocks
for _ in range(500):
    warm.copy()
cp.cuda.Device().synchronize()
del warm
print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, batch {BATCH}, µs")
print(f"{'case':28} {'regs us':>9} {'mma us':>9} {'x':>6} {'GB/s mma':>9} {'reldiff':>8}")
shapes = ([(n, n) for n in args.orders] if args.orders else
          [(32, 32), (28, 28), (25, 25), (24, 24), (17, 17), (32, 8), (32, 64), (32, 100)])
for dt in (np.float64, np.float32) if args.force else (np.float64,):
    for n, nrhs in shapes:
        for order in ("C", "F"):
            g = rng.standard_normal((BATCH, n, n)).astype(dt)
            a = g @ g.transpose(0, 2, 1) / n + cp.eye(n, dtype=dt)
            lc = cp.linalg.cholesky(a.astype(np.float64)).astype(dt)
            b0 = rng.standard_normal((BATCH, n, nrhs)).astype(dt)
            if order == "F":
                a, lc, b0 = (cp.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)
                             for x in (a, lc, b0))
            for op in [op for op in args.ops if nrhs == n or op in ("trsm", "potrs")]:
                res, times = {}, {}
                for mma in (False, True):
                    BatchedCUDAExecutor.mma = mma
                    times[mma], res[mma] = device_us(op, lc, a, b0)
                BatchedCUDAExecutor.mma = True
                diff = float(cp.abs(res[True] - res[False]).max() / cp.abs(res[False]).max())
                nb = bytes_moved(BatchedCase(op, n, BATCH, nrhs, np.dtype(dt).name))
                print(f"{op} {n}x{nrhs} {order} {np.dtype(dt).name:8} {times[False]:9.1f} "
                      f"{times[True]:9.1f} {times[False] / times[True]:6.2f} "
                      f"{nb / times[True] / 1e3:9.0f} {diff:8.1e}", flush=True)
