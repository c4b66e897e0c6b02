"""Ordering points along a space-filling curve, so that the tiles of a covariance matrix are
blocks of nearby points interacting with blocks of nearby points: low-rank where far apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["morton_order"]


def morton_order(points: Any, *, bits: int | None = None) -> np.ndarray:
    """The permutation that sorts points along the Morton (Z-order) curve.

    Each coordinate is scaled to an integer grid of ``2**bits`` cells per axis (one common
    scale for all axes, so the cells are cubes and the domain's shape is kept) and the bits of
    the coordinates are interleaved, the lowest bit from axis 0, into one 64-bit key; the
    points are sorted by key (stably: ties keep their input order).

    Parameters
    ----------
    points : (n, d) or (n,) array_like
        Coordinates; ``d <= 64``.
    bits : int, optional
        Grid resolution per axis; default ``min(21, 64 // d)`` (the most that fits 64 bits).

    Returns
    -------
    (n,) int64 array
        ``order`` such that ``points[order]`` follows the curve. Reorder the points (and any
        data attached to them) with it before building a :class:`~tricov.tlr.TLRMatrix`; the
        matrix rows follow the order of the points it is given.

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.tlr import morton_order
    >>> grid = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> grid[morton_order(grid)].tolist()
    [[0, 0], [1, 0], [0, 1], [1, 1]]
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim == 1:
        pts = pts[:, None]
    if pts.ndim != 2:
        raise ValueError(f"points must be 1-D or 2-D (n, d), got shape {pts.shape}")
    n, d = pts.shape
    if d == 0 or d > 64:
        raise ValueError(f"points must have 1 to 64 coordinates, got {d}")
    if not np.isfinite(pts).all():
        raise ValueError("points hold NaN or infinity")
    if bits is None:
        bits = min(21, 64 // d)
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) \
            or not 1 <= bits <= 64 // d:
        raise ValueError(f"bits must be an int in [1, {64 // d}] for d={d}, got {bits!r}")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lo = pts.min(axis=0)
    span = float((pts.max(axis=0) - lo).max())
    scale = (2.0 ** bits - 1) / span if span > 0 else 0.0
    cells = np.floor((pts - lo) * scale).astype(np.uint64)
    key = np.zeros(n, dtype=np.uint64)
    one = np.uint64(1)
    for b in range(bits):
        for axis in range(d):
            bit = (cells[:, axis] >> np.uint64(b)) & one
            key |= bit << np.uint64(b * d + axis)
    return np.argsort(key, kind="stable").astype(np.int64)
