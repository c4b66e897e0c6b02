"""A/B of the GPU TRSM recursion's cut: at powers of two (the default) against steps of
``trsm_step`` rows (each step's product updates every row still to solve, a GEMM as deep as
the step). Ratios to cuBLAS TRSM and to the same-shape GEMM, measured in the same run; the
cases alternate round by round (best of each round's median).

    PYTHONPATH=src python3 benchmarks/gpu_trsm_steps.py [--rounds 3]
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np

import tricov as tc
from tricov import _plans, _policy
from tricov.backends.cuda_libs import bind_blas, blas
from tricov.bench.devices import event_seconds

SHAPES = ((16384, 64), (16384, 128), (16384, 256), (32768, 256), (4096, 4096), (8192, 8192))
STEPS = (None, 512, 1024, 2048, 4096)


def measure(dt: type, m: int, n: int, rounds: int, lower: bool) -> str:
    rng = cp.random.default_rng(0)
    a = cp.asfortranarray(rng.standard_normal((m, m)).astype(dt)) / m**0.5
    a += 4 * cp.eye(m, dtype=dt)
    b0 = cp.asfortranarray(rng.standard_normal((m, n)).astype(dt))
    b = b0.copy(order="F")

    def reset() -> None:
        b[...] = b0

    def ms(fn, rst=None) -> float:
        return float(np.median(event_seconds(fn, rst, repeats=5))) * 1e3

    handle = bind_blas(cp.cuda.get_current_stream().ptr)
    one, zero = np.array([1.0], dtype=dt), np.array([0.0], dtype=dt)
    uplo = 0 if lower else 1  # CUBLAS_FILL_MODE_LOWER, _UPPER
    native = lambda: blas("trsm_v2", np.dtype(dt))(  # noqa: E731
        handle, 0, uplo, 0, 0, m, n, one.ctypes.data, a.data.ptr, m, b.data.ptr, m)
    c = cp.empty((m, n), dt, order="F")
    gemm = lambda: blas("gemm_v2", np.dtype(dt))(  # noqa: E731
        handle, 0, 0, m, n, m, one.ctypes.data, a.data.ptr, m, b.data.ptr, m, zero.ctypes.data,
        c.data.ptr, m)
    reset()
    native()
    want = b.copy()
    best: dict[str, float] = {}
    diffs: dict[str, float] = {}
    for _ in range(rounds):
        for name in ["cublas", "gemm"] + [str(s) for s in STEPS]:
            if name == "cublas":
                t = ms(native, reset)
            elif name == "gemm":
                t = ms(gemm)
            else:
                step = None if name == "None" else int(name)
                _policy.set_leaf_size("gpu", "trsm_step", dt, step or (1 << 62))
                _plans.set_cuda_graphs(True)
                call = lambda: tc.trsm(a, b, uplo="L" if lower else "U")  # noqa: E731
                t = ms(call, reset)
                reset()
                call()
                diffs[name] = float(cp.abs(b - want).max() / cp.abs(want).max())
            best[name] = min(best.get(name, np.inf), t)
    _policy.set_leaf_size("gpu", "trsm_step", dt, None)
    flops = m * m * n
    cols = " ".join(f"{k}:{best['cublas'] / best[k]:.2f}x/{best['gemm'] / 2 / best[k]:.2f}g"
                    f"({diffs[k]:.0e})" for k in best if k not in ("cublas", "gemm"))
    return (f"trsm {np.dtype(dt).name} {'L' if lower else 'U'} {m}x{n}: cublas "
            f"{flops / best['cublas'] / 1e9:.1f} TF gemm {2 * flops / best['gemm'] / 1e9:.1f} TF"
            f" | {cols}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; entries "
          "<step>:<x cuBLAS>x/<share of GEMM>g(<max diff to cuBLAS>), step None = powers of two")
    for dt in (np.float32, np.float64):
        for m, n in SHAPES:
            print(measure(dt, m, n, args.rounds, True), flush=True)
        print(measure(dt, 16384, 256, args.rounds, False), flush=True)


if __name__ == "__main__":
    main()
