"""POTRF by tiles (``potrf_tiles``) against cuSOLVER and torch on one GPU: first a check of
every dtype and layout against NumPy (and of a failing minor), then timings of whole
matrices, each case in the same run: tricov as shipped (default), the whole matrix on
cuSOLVER (``CUDAExecutor.tile_potrf`` 0) or as one tile call (tiles), and with --leaves N the
recursion on tile leaves of at most N rows (leafN).

    PYTHONPATH=src python3 benchmarks/gpu_potrf_tiles.py [--sizes ...] [--leaves ...]

Medians of CUDA-event times of whole calls as a user makes them (a buffer refilled before
each call, outside the events), microseconds.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
import torch

import tricov as tc
from tricov import _plans, _policy
from tricov.backends.cuda import CUDAExecutor
from tricov.bench.devices import event_seconds

TILES = CUDAExecutor.tile_potrf


def spd(n: int, dt, order: str = "F", seed: int = 0) -> cp.ndarray:
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, n))
    if np.dtype(dt).kind == "c":
        g = g + 1j * rng.standard_normal((n, n))
    a = g @ g.conj().T / n + np.eye(n)
    return cp.asarray(np.asarray(a, dtype=dt), order=order)


def configure(tiles: int | None, whole: int | None, leaf: int | None, dt) -> None:
    CUDAExecutor.tile_potrf = tiles
    _policy.set_leaf_size("gpu", "potrf", dt, None)
    if whole is not None:
        _policy.set_leaf_size("gpu", "potrf_whole", dt, whole)
    if leaf is not None:
        _policy.set_leaf_size("gpu", "potrf", dt, leaf)
    _plans.set_cuda_graphs(True)


def check() -> None:
    worst = {}
    for dt in (np.float32, np.float64, np.complex64, np.complex128):
        eps = np.finfo(dt).eps
        for n in (129, 160, 257, 500, 1000, 1024):
            for order in "FC":
                for uplo in "LU":
                    configure(1 << 20, None, None, dt)
                    a = spd(n, dt, order, seed=n)
                    host = cp.asnumpy(a).astype(np.complex128)
                    tc.potrf(a, uplo=uplo)
                    got = cp.asnumpy(a).astype(np.complex128)
                    f = np.tril(got) if uplo == "L" else np.triu(got).conj().T
                    r = np.abs(f @ f.conj().T - host).max() / np.abs(host).max() / (n * eps)
                    worst[np.dtype(dt).name] = max(worst.get(np.dtype(dt).name, 0), r)
                    assert r < 1, (dt, n, order, uplo, r)
        for n, bad in ((300, 37), (1000, 777), (1024, 1024), (200, 129)):
            configure(1 << 20, None, None, dt)
            a = spd(n, dt)
            a[bad - 1, bad - 1] = -1
            try:
                tc.potrf(a)
            except tc.NotPositiveDefiniteError as e:
                assert e.order == bad, (dt, n, bad, e.order)
            else:
                raise AssertionError("no failure")
            a = spd(n, dt)
            a[bad - 1, 0] = np.nan
            try:
                tc.potrf(a)
            except tc.NotPositiveDefiniteError as e:
                assert e.order <= bad, (dt, n, bad, e.order)
            else:
                raise AssertionError("no NaN failure")
    print("check: max ||L L^H - A|| / (||A|| n eps) by dtype:",
          {k: f"{v:.3f}" for k, v in worst.items()}, flush=True)


def median_us(fn, a0, w) -> float:
    return float(np.median(event_seconds(fn, lambda: cp.copyto(w, a0), repeats=15))) * 1e6


def timings(sizes, leaves, dtypes) -> None:
    for dt in dtypes:
        for n in sizes:
            a0 = spd(n, dt)
            w = cp.empty_like(a0, order="F")
            t = torch.from_dlpack(w)
            cases = {"default": (None, None, None), "cusolver": (0, 1 << 30, None),
                     "tiles": (1 << 20, 1 << 30, None)}
            cases.update({f"leaf{leaf}": (1 << 20, 1, leaf) for leaf in leaves if leaf < n})
            res = {}
            for _ in range(2):
                for name, (tiles, whole, leaf) in cases.items():
                    configure(tiles, whole, leaf, dt)
                    us = median_us(lambda w=w: tc.potrf(w), a0, w)
                    res[name] = min(res.get(name, np.inf), us)
                us = median_us(lambda t=t: torch.linalg.cholesky(t), a0, w)
                res["torch"] = min(res.get("torch", np.inf), us)
            flops = n**3 / 3 * (4 if np.dtype(dt).kind == "c" else 1)
            print(f"{np.dtype(dt).name:>10} n={n:6d} " + "  ".join(
                f"{k} {v:8.0f} ({res['torch'] / v:.2f}x, {flops / v / 1e6:.1f} TF)"
                for k, v in res.items()), flush=True)
    for dt in dtypes:  # the shipped policy again
        configure(TILES, None, None, dt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--leaves", type=int, nargs="*", default=[])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, torch {torch.__version__}")
    if not args.no_check:
        check()
    timings(args.sizes, args.leaves, [np.dtype(d) for d in args.dtypes])


if __name__ == "__main__":
    main()
