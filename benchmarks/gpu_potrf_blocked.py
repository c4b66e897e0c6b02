"""tricov's blocked POTRF on the GPU against cuSOLVER and torch.linalg.cholesky, per call.

    PYTHONPATH=src python benchmarks/gpu_potrf_blocked.py --sizes 1024 2048 4096 \\
        --blocks 32 64 128 --leaves 1024 2048

For each n: a random SPD matrix (column-major) of ``--dtype``. Contenders, each called once
untimed and then timed on fresh copies with CUDA events around the call as a user makes it
(median of ``--repeats``; repeated calls replay a captured graph):

* ``cusolver``: ``tricov.potrf`` with the whole matrix given to cuSOLVER's potrf
  (``CUDAExecutor.potrf_blocked = 0``);
* ``b<nb>``: ``tricov.potrf`` with the whole matrix one blocked leaf in columns of ``nb``;
* ``r<leaf>``: tricov's recursion down to blocked leaves of ``leaf`` rows (columns of 64);
* ``policy``: ``tricov.potrf`` as it stands;
* ``torch``: ``torch.linalg.cholesky`` on the same memory (DLPack), which reads its status as
  every tricov call does.

Prints microseconds, then each contender's speed-up over torch.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import cupy as cp
import numpy as np
import torch
from gpu_potrf_sizes import timed

import tricov as tc
from tricov import dense
from tricov.backends.cuda import CUDAExecutor


def _with(settings: dict, leaves: dict, f: Callable, a0: cp.ndarray, repeats: int) -> float:
    """Median seconds of ``f`` with executor attributes ``settings`` and leaf sizes ``leaves``."""
    saved = {k: getattr(CUDAExecutor, k) for k in settings}
    dt = a0.dtype
    try:
        for k, v in settings.items():
            setattr(CUDAExecutor, k, v)
        for op, size in leaves.items():
            tc.set_leaf_size("gpu", op, dt, size)
        return float(np.median(timed(f, a0, repeats)))
    finally:
        for k, v in saved.items():
            setattr(CUDAExecutor, k, v)
        tc.set_leaf_size("gpu", "potrf", dt, None)  # drops every override


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--blocks", type=int, nargs="*", default=[32, 64, 128])
    p.add_argument("--leaves", type=int, nargs="*", default=[1024, 2048])
    p.add_argument("--dtype", default="float64")
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    dt = np.dtype(args.dtype)
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, torch "
          f"{torch.__version__}, {dt}; median microseconds per call (x torch)")
    big = 1 << 30
    for n in args.sizes:
        g = cp.random.default_rng(0).standard_normal((n, n)).astype(dt)
        a0 = cp.asfortranarray(g @ g.conj().T / n + cp.eye(n, dtype=dt))
        del g
        cases = {"cusolver": ({"potrf_blocked": 0}, {})}
        for nb in args.blocks:
            cases[f"b{nb}"] = ({"potrf_blocked": big, "potrf_block": nb},
                               {"potrf": big, "potrf_whole": big})
        for leaf in args.leaves:
            if leaf < n:
                cases[f"r{leaf}"] = ({"potrf_blocked": big},
                                     {"potrf": leaf, "potrf_whole": 1})
        cases["policy"] = ({}, {})
        t = {name: _with(s, lv, dense.potrf, a0, args.repeats) for name, (s, lv) in cases.items()}
        t["torch"] = float(np.median(timed(
            lambda a: torch.linalg.cholesky(torch.from_dlpack(a)), a0, args.repeats)))
        print(f"n={n:6d}  " + "  ".join(f"{k} {v * 1e6:7.0f} ({t['torch'] / v:4.2f})"
                                        for k, v in t.items()), flush=True)
        del a0


if __name__ == "__main__":
    main()
