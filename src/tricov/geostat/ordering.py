"""Where points come from and in which order they go: jittered grids and the Morton curve.

The Morton ordering itself is :func:`tricov.tlr.morton_order`, re-exported here.

Sorting locations along a space-filling curve puts nearby points in nearby rows, so that the
off-diagonal tiles of a covariance matrix couple distant clusters and have low numerical rank:
what tile low-rank compression needs.
"""

from __future__ import annotations

import math

import numpy as np

from ..tlr.ordering import morton_order

__all__ = ["jittered_grid", "morton_order"]



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
