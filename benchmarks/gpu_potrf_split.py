"""DPOTRF / SPOTRF of orders between one and two leaves: the recursion's first split.

    for r in 1 2; do for v in ours pow2; do
        PYTHONPATH=src python3 benchmarks/gpu_potrf_split.py $v; done; done

``ours`` is :func:`tricov.recursive.cholesky.potrf_split` (with at most two leaves of rows,
A22 a whole leaf and A11 the rest); ``pow2`` splits at the largest power of two below the
order, as before session 32 (a process each: captured plans do not know the split). Printed per
dtype and order: tc.potrf and torch.linalg.cholesky on the same C-ordered SPD matrix, medians
of 20 calls after 5 (µs, CUDA events, the input restored before each), the speed-up, and
``max |L L^T - A| / max |A|``. Output: ``gpu_potrf_split_h100.txt``.
"""

from __future__ import annotations

import sys

import cupy as cp
import numpy as np
import torch
from gpu_layouts import median_us

import tricov as tc
from tricov.recursive import blas3, cholesky


def main(variant: str) -> None:
    if variant == "pow2":
        cholesky.potrf_split = lambda n, leaf, panel=0: blas3.split(n)
    out = []
    for dtype, sizes in ((np.float64, (2600, 3072, 3584, 4000)), (np.float32, (3700, 4000))):
        for n in sizes:
            x = cp.random.default_rng(0).standard_normal((n, n), dtype=dtype)
            a = x @ x.T + n * cp.eye(n, dtype=dtype)
            w = cp.empty_like(a)
            torch_a = torch.as_tensor(a, device="cuda")
            t_torch = median_us(lambda: None, lambda a=torch_a: torch.linalg.cholesky(a), 20, 5)
            t_ours = median_us(lambda w=w, a=a: cp.copyto(w, a), lambda w=w: tc.potrf(w), 20, 5)
            low = cp.tril(w)
            err = float(cp.abs(low @ low.T - a).max() / cp.abs(a).max())
            out.append(f"{np.dtype(dtype).name} {n}: tricov {t_ours:7.0f} us torch "
                       f"{t_torch:7.0f} us x{t_torch / t_ours:5.2f} err {err:.1e}")
    print(f"{variant}: " + " | ".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ours")
