"""Where the time of a dense GPU operation goes: best whole calls, then the kernels of one call.

    PYTHONPATH=src python benchmarks/gpu_dense_profile.py potrf --sizes 1024 4096 --leaves 128
    PYTHONPATH=src python benchmarks/gpu_dense_profile.py trsm --sizes 4096 8192

For each n (float64 unless ``--dtype``, column-major; POTRF on a random SPD matrix, TRSM and
TRMM with a well-conditioned lower triangle and an n x n right-hand side): the best of five
calls (CUDA events around each call as a user makes it; tricov replays its CUDA graphs from the
third) of the native routine (cuSOLVER's potrf, cuBLAS's trsm/trmm), of tricov with its default
leaf sizes and with each ``--leaves`` order forced; then the kernels of one eager tricov call
(default leaves) as the PyTorch profiler sees them (CUPTI: every kernel on the device, CuPy's
and cuBLAS's included), summed by name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import cupy as cp
import numpy as np
from gpu_potrf_sizes import _cusolver, timed

import tricov as tc
from tricov import dense
from tricov.bench.devices import kernel_times
from tricov.bench.peers_gpu import _trxm


def _native_trxm(op: str, t: cp.ndarray) -> Callable[[cp.ndarray], None]:
    """cuBLAS's left, lower, non-transposed TRSM or TRMM with the triangle ``t`` (tricov's peer
    of ``tricov bench``)."""
    peer = _trxm("trsm_v2" if op == "trsm" else "trmm_v2")
    return lambda b: peer({"A": t, "B": b}, t.dtype)


def _kernels(f: Callable[[cp.ndarray], object], a0: cp.ndarray) -> list[tuple[str, float, int]]:
    """(name, total microseconds, launches) of the kernels of one call of ``f`` on a copy."""
    a = a0.copy(order="F")
    return kernel_times(lambda: f(a))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("op", choices=("potrf", "trsm", "trmm"))
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--leaves", type=int, nargs="*", default=[])
    p.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    args = p.parse_args()
    dt = np.dtype(args.dtype)
    print(f"# {args.op} {dt}, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; "
          "microseconds (TFLOP/s), best of 5")
    for n in args.sizes:
        g = cp.random.default_rng(0).standard_normal((n, n), dtype=dt)
        if args.op == "potrf":
            a0 = cp.asfortranarray(g @ g.T / n + cp.eye(n, dtype=dt))
            native, call, flops = _cusolver, dense.potrf, n**3 / 3
        else:
            t = cp.asfortranarray(cp.tril(g) / n**0.5 + 2 * cp.eye(n, dtype=dt))
            a0 = cp.asfortranarray(cp.random.default_rng(1).standard_normal((n, n), dtype=dt))
            native = _native_trxm(args.op, t)
            fn = dense.trsm if args.op == "trsm" else dense.trmm

            def call(b, t=t, fn=fn):
                return fn(t, b)

            flops = n**3
        if args.op == "potrf" and dt != np.float64:
            native = None
        row = {} if native is None else {"native": min(timed(native, a0, 5))}
        for leaf in [None, *args.leaves]:
            tc.set_leaf_size("gpu", args.op, dt, None)
            if leaf is not None:
                if args.op == "potrf":
                    tc.set_leaf_size("gpu", "potrf_whole", dt, 1)
                tc.set_leaf_size("gpu", args.op, dt, leaf)
            row["tricov" if leaf is None else f"leaf {leaf}"] = min(timed(call, a0, 5))
        tc.set_leaf_size("gpu", args.op, dt, None)
        print(f"n={n:6d} " + "  ".join(f"{k} {v * 1e6:9.1f} ({flops / v / 1e12:5.2f})"
                                         for k, v in row.items()), flush=True)
        tc.set_cuda_graphs(False)
        rows = _kernels(call, a0)
        tc.set_cuda_graphs(True)
        print(f"  kernels of one eager call: {sum(r[1] for r in rows):.1f} us in "
              f"{sum(r[2] for r in rows)} launches")
        for name, us, count in rows[:10]:
            print(f"    {us:9.1f} us {count:4d}x  {name[:80]}")
        del a0, g


if __name__ == "__main__":
    main()
