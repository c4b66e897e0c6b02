"""Where points come from and in which order they go: jittered grids and the Morton curve.

Sorting locations along a space-filling curve puts nearby points in nearby rows, so that the
off-diagonal tiles of a covariance matrix couple distant clusters and have low numerical rank:
what tile low-rank compression needs.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["jittered_grid", "morton_order"]



def morton_order(points: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``points`` (n, d) along the Morton (Z-order) curve.

    Each coordinate is scaled to the bounding box and quantised to ``min(52, 63 // d)`` bits;
    the bits of the coordinates are interleaved into one integer key (the lowest of each group
    from the first coordinate), and the keys are sorted (stably, so that ties keep their order).

    Parameters
    ----------
    points : (n, d) array, d >= 1

    Returns
    -------
    (n,) int64 array
        ``points[order]`` is sorted.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim == 1:
        pts = pts[:, None]
    if pts.ndim != 2 or pts.shape[1] < 1:
        raise ValueError(f"points must be an (n, d) array, got shape {pts.shape}")
    n, d = pts.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    bits = min(52, 63 // d)  # 2^bits - 1 must be exact in float64
    lo = pts.min(axis=0)
    span = pts.max(axis=0) - lo
    span[span == 0] = 1.0
    levels = float(2**bits - 1)
    q = np.floor((pts - lo) / span * levels).astype(np.uint64)
    key = np.zeros(n, dtype=np.uint64)
    for b in range(bits):
        for k in range(d):
            bit = (q[:, k] >> np.uint64(b)) & np.uint64(1)
            key |= bit << np.uint64(b * d + k)
    return np.argsort(key, kind="stable")


def jittered_grid(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points in the unit square (cube): cells of a regular grid, each point jittered.

    The grid has ``m = ceil(n^(1/dim))`` cells per side; ``n`` distinct cells are drawn at
    random, and each point sits at its cell's centre moved by up to 0.4 cell widths per
    coordinate, so no two points coincide and the smallest distance is at least 0.2 / m.

    Returns
    -------
    (n, dim) float64 array, in the order of the drawn cells (not sorted).
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    if dim not in (1, 2, 3):
        raise ValueError(f"dim must be 1, 2 or 3, got {dim}")
    m = math.ceil(round(n ** (1.0 / dim), 9))
    while m**dim < n:
        m += 1
    cells = rng.choice(m**dim, size=n, replace=False)
    idx = np.stack(np.unravel_index(cells, (m,) * dim), axis=1).astype(np.float64)
    return (idx + 0.5 + rng.uniform(-0.4, 0.4, size=idx.shape)) / m
