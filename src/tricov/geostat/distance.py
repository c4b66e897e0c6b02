"""Distances between two sets of locations, one block at a time.

Every function here is written against the NumPy API through an ``xp`` module (NumPy, or CuPy
for arrays on a GPU), writes into ``out`` when given (any strides: a tile of a larger
column-major matrix), and computes differences coordinate by coordinate (never through
``|x|^2 - 2 x.y + |y|^2``, which loses the small distances that matter most to a covariance).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["EARTH_RADIUS_KM", "METRICS", "array_namespace", "distances", "euclidean",
           "great_circle"]

#: Mean radius of the Earth in kilometres (the default sphere of :func:`great_circle`).
EARTH_RADIUS_KM = 6371.0
#: Names of the distance functions.
METRICS = ("euclidean", "great_circle")


def array_namespace(*arrays: Any) -> ModuleType:
    """NumPy, or CuPy when any of ``arrays`` is a CuPy array (the hook for GPU tiles)."""
    for a in arrays:
        if type(a).__module__.startswith("cupy"):
            import cupy

            return cupy
    return np


def _out(xp: ModuleType, out: Any, shape: tuple[int, int]) -> Any:
    if out is None:
        return xp.empty(shape, dtype=xp.float64, order="F")
    if tuple(out.shape) != shape:
        raise ValueError(f"out must have shape {shape}, got {tuple(out.shape)}")
    if out.dtype != xp.float64:
        raise TypeError(f"out must be float64, got {out.dtype}")
    return out


def euclidean(x: Any, y: Any, *, out: Any = None) -> Any:
    """Euclidean distances ``|x_i - y_j|`` between the rows of ``x`` (n, d) and ``y`` (m, d).

    Parameters
    ----------
    x, y : (n, d) and (m, d) float64 arrays
        Coordinates, d >= 1.
    out : (n, m) float64 array, optional
        Written in place (any strides).

    Returns
    -------
    (n, m) array
    """
    xp = array_namespace(x, y)
    out = _out(xp, out, (x.shape[0], y.shape[0]))
    d = x.shape[1]
    xp.subtract(x[:, 0:1], y[None, :, 0], out=out)
    if d == 1:
        return xp.abs(out, out=out)
    xp.multiply(out, out, out=out)
    tmp = xp.empty_like(out)
    for k in range(1, d):
        xp.subtract(x[:, k:k + 1], y[None, :, k], out=tmp)
        xp.multiply(tmp, tmp, out=tmp)
        xp.add(out, tmp, out=out)
    return xp.sqrt(out, out=out)


def great_circle(x: Any, y: Any, *, radius: float = EARTH_RADIUS_KM, out: Any = None) -> Any:
    """Great-circle distances on a sphere between (longitude, latitude) points in degrees.

    The haversine form ``2 R asin(sqrt(sin^2(dlat/2) + cos lat1 cos lat2 sin^2(dlon/2)))``, which
    is accurate for small distances (where the spherical law of cosines is not).

    Parameters
    ----------
    x, y : (n, 2) and (m, 2) float64 arrays
        Longitude and latitude in degrees.
    radius : float
        Radius of the sphere; the distances are in its unit (default: the Earth, 6371 km).
    out : (n, m) float64 array, optional

    Returns
    -------
    (n, m) array

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.geostat.distance import great_circle
    >>> float(great_circle(np.array([[0.0, 0.0]]), np.array([[90.0, 0.0]]), radius=1.0)[0, 0])
    1.5707963267948966
    """
    xp = array_namespace(x, y)
    out = _out(xp, out, (x.shape[0], y.shape[0]))
    half_rad = np.pi / 360.0
    # differences in degrees first: exact for nearby points, so small distances stay accurate
    tmp = xp.empty_like(out)
    xp.subtract(x[:, 1:2], y[None, :, 1], out=out)
    xp.multiply(out, half_rad, out=out)
    xp.sin(out, out=out)
    xp.multiply(out, out, out=out)                       # sin^2(dlat/2)
    xp.subtract(x[:, 0:1], y[None, :, 0], out=tmp)
    xp.multiply(tmp, half_rad, out=tmp)
    xp.sin(tmp, out=tmp)
    xp.multiply(tmp, tmp, out=tmp)                       # sin^2(dlon/2)
    xp.multiply(tmp, xp.cos(x[:, 1:2] * (2 * half_rad)), out=tmp)
    xp.multiply(tmp, xp.cos(y[None, :, 1] * (2 * half_rad)), out=tmp)
    xp.add(out, tmp, out=out)
    xp.sqrt(out, out=out)
    xp.minimum(out, 1.0, out=out)                        # rounding may push it past 1
    xp.arcsin(out, out=out)
    return xp.multiply(out, 2.0 * radius, out=out)


def distances(x: Any, y: Any, *, metric: str = "euclidean", radius: float = EARTH_RADIUS_KM,
              out: Any = None) -> Any:
    """Distances by name: ``metric`` is ``"euclidean"`` or ``"great_circle"`` (see those)."""
    if metric == "euclidean":
        return euclidean(x, y, out=out)
    if metric == "great_circle":
        return great_circle(x, y, radius=radius, out=out)
    raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
