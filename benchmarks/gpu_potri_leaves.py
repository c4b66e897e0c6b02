"""GPU POTRI against torch.cholesky_inverse at several TRTRI/LAUUM leaf sizes, in one run.

Each call is timed as a user makes it (CUDA events around ``tricov.potri``, which replays its
captured CUDA graph from the third call on; the factor restored outside the timed region),
median of 7 after 2 warm-ups, against ``torch.cholesky_inverse`` on the same memory (DLPack).
Usage (a machine with an NVIDIA GPU, CuPy and PyTorch)::

    PYTHONPATH=src python benchmarks/gpu_potri_leaves.py [N ...]
"""

from __future__ import annotations

import sys

import cupy as cp
import numpy as np
import torch

import tricov as tc
from tricov.bench.devices import event_seconds

LEAVES = ((128, 128), (256, 256), (128, 256), (512, 512), (1024, 1024))


def timed(call, reset) -> float:
    """Median milliseconds of ``call`` (``reset`` before each, untimed; two warm-ups)."""
    return float(np.median(event_seconds(call, reset))) * 1e3


def row(dt: np.dtype, n: int) -> str:
    """One line of the table: torch, then tricov at each leaf setting."""
    g = cp.random.default_rng(1).standard_normal((n, n)).astype(dt)
    factor = cp.asfortranarray(g @ g.T / n + 2 * cp.eye(n, dtype=dt))
    tc.potrf(factor)
    factor = cp.asfortranarray(cp.tril(factor))
    work = factor.copy(order="F")
    peer = timed(lambda: torch.cholesky_inverse(torch.from_dlpack(factor)), lambda: None)
    cells = []
    for trtri, lauum in LEAVES:
        tc.set_leaf_size("gpu", "trtri", dt, trtri)
        tc.set_leaf_size("gpu", "lauum", dt, lauum)
        ms = timed(lambda: tc.potri(work), lambda: work.__setitem__(Ellipsis, factor))
        tc.set_leaf_size("gpu", "trtri", dt, None)
        cells.append(f"{trtri}/{lauum}: {ms:.2f} ms {peer / ms:.2f}x")
    return f"potri {np.dtype(dt).name} {n}: torch {peer:.2f} ms | " + " | ".join(cells)


def main(sizes: list[int]) -> None:
    print(f"# {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; ms per call, "
          "x = torch.cholesky_inverse / tricov.potri; columns: TRTRI/LAUUM leaf sizes")
    for dt in (np.float64, np.float32):
        for n in sizes:
            print(row(dt, n), flush=True)
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [1024, 2048, 4096, 8192, 16384])
