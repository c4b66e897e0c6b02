"""Square TRSM (left, lower, B of m x m) of small orders on the GPU: tricov at its policy's leaves
and with leaves of 128 and 256 forced, against cuBLAS's trsm, in one run.

    PYTHONPATH=src python3 benchmarks/gpu_trsm_small.py --sizes 160 256 384 512 768 1024

Medians of CUDA-event times of whole calls (B refilled before each call, outside the events),
best of two rounds, microseconds.
"""

from __future__ import annotations

import argparse

import cupy as cp
import numpy as np

import tricov as tc
from tricov.bench.devices import event_seconds
from tricov.bench.peers_gpu import _trxm


def _median(f, w: cp.ndarray, b0: cp.ndarray) -> float:
    """Median microseconds of calls of ``f`` with ``w`` refilled from ``b0`` before each."""
    s = event_seconds(f, lambda: cp.copyto(w, b0), repeats=11)
    return float(np.median(s)) * 1e6


def _row(dt: np.dtype, m: int, rng: np.random.Generator, peer) -> dict[str, float]:
    g = rng.standard_normal((m, m)) / m**0.5 + 2 * np.eye(m)
    t = cp.asfortranarray(cp.asarray(np.tril(g), dtype=dt))
    b0 = cp.asfortranarray(cp.asarray(rng.standard_normal((m, m)), dtype=dt))
    w = cp.empty_like(b0, order="F")
    res: dict[str, float] = {}
    for _ in range(2):
        for leaf in (None, 128, 256):
            tc.set_leaf_size("gpu", "trsm", dt, leaf)
            key = f"leaf{leaf}" if leaf else "policy"
            res[key] = min(res.get(key, np.inf), _median(lambda: tc.trsm(t, w), w, b0))
        tc.set_leaf_size("gpu", "trsm", dt, None)
        us = _median(lambda: peer({"A": t, "B": w}, dt), w, b0)
        res["cublas"] = min(res.get("cublas", np.inf), us)
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[160, 256, 384, 512, 768, 1024])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    args = p.parse_args()
    rng = np.random.default_rng(0)
    peer = _trxm("trsm_v2")
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; us")
    for name in args.dtypes:
        for m in args.sizes:
            res = _row(np.dtype(name), m, rng, peer)
            print(f"{name} {m}: " + "  ".join(f"{k} {v:6.0f}" for k, v in res.items()),
                  flush=True)


if __name__ == "__main__":
    main()
