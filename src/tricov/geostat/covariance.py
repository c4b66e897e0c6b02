"""Covariance matrices assembled tile by tile, in parallel, straight into column-major memory.

The kernel writes each tile into its place in the output (no full-size temporaries), and only
the tiles a caller needs are computed: the lower triangle for a Cholesky factorization. The
tiles run on a pool of threads; the distance and kernel code releases the GIL (NumPy ufuncs,
Numba ``nogil`` loops), so the threads run side by side.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .distance import array_namespace
from .kernels import Kernel

__all__ = ["DEFAULT_TILE", "covariance", "default_workers"]

#: Tile size of the assembly (rows and columns of one kernel call).
DEFAULT_TILE = 512


def default_workers() -> int:
    """Threads for assembly: ``$TRICOV_NUM_THREADS``, else ``$OMP_NUM_THREADS``, else the CPUs
    this process may run on."""
    for var in ("TRICOV_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.strip().isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _tiles(n: int, m: int, tile: int, lower: bool) -> Iterator[tuple[int, int, int, int]]:
    for j0 in range(0, m, tile):
        j1 = min(j0 + tile, m)
        for i0 in range(j0 if lower else 0, n, tile):
            yield i0, min(i0 + tile, n), j0, j1


def covariance(kernel: Kernel, x: Any, y: Any = None, *, lower: bool = False, out: Any = None,
               tile_size: int = DEFAULT_TILE, workers: int | None = None) -> Any:
    """The covariance matrix ``C(x, y)`` (``C(x, x)`` with the nugget when ``y`` is None).

    Parameters
    ----------
    kernel : Kernel
    x : (n, d) float64 array
    y : (m, d) float64 array, optional
    lower : bool
        Only with ``y=None``: compute only the tiles that meet the lower triangle (the strictly
        upper part of ``out`` is then partly left as it was) -- what a Cholesky factorization
        reads, for half the work.
    out : (n, m) float64 array, optional
        Written in place; F order is the fast layout. Default: a new F-ordered array.
    tile_size : int
        Rows and columns of each kernel call.
    workers : int, optional
        Threads (default :func:`default_workers`).

    Returns
    -------
    out
    """
    same = y is None
    y = x if same else y
    if lower and not same:
        raise ValueError("lower=True needs y=None (a symmetric matrix)")
    if tile_size < 1:
        raise ValueError(f"tile_size must be positive, got {tile_size}")
    xp = array_namespace(x, y, out)
    n, m = x.shape[0], y.shape[0]
    if out is None:
        out = xp.empty((n, m), dtype=xp.float64, order="F")
    elif tuple(out.shape) != (n, m) or out.dtype != xp.float64:
        raise ValueError(f"out must be a float64 array of shape {(n, m)}, got {out.dtype} "
                         f"{tuple(out.shape)}")
    kernel.prepare()

    def one(t: tuple[int, int, int, int]) -> None:
        i0, i1, j0, j1 = t
        kernel.fill(out[i0:i1, j0:j1], x[i0:i1], y[j0:j1], same=same and i0 == j0)

    tiles = list(_tiles(n, m, tile_size, lower and same))
    workers = default_workers() if workers is None else int(workers)
    if workers <= 1 or len(tiles) <= 1 or xp is not np:
        for t in tiles:
            one(t)
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(tiles))) as pool:
            for _ in pool.map(one, tiles):
                pass
    return out
