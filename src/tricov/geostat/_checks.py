"""Argument checks shared by the geostatistics functions (clear errors naming the argument)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["host", "locations", "no_duplicates", "observations"]


def host(x: Any) -> np.ndarray:
    """``x`` as a NumPy array (a CuPy array is copied to the host; the checks run there)."""
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def locations(x: Any, name: str = "locations", *, metric: str = "euclidean") -> np.ndarray:
    """``x`` as a C-ordered float64 (n, d) array: finite, d in 1..3 (2 for great-circle)."""
    arr = host(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be an (n, d) array, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one point, got shape {arr.shape}")
    if metric == "great_circle":
        if arr.shape[1] != 2:
            raise ValueError(f"{name} must be (n, 2) (longitude, latitude) in degrees for the "
                             f"great-circle distance, got shape {arr.shape}")
    elif not 1 <= arr.shape[1] <= 3:
        raise ValueError(f"{name} must have 1, 2 or 3 coordinates per point, got shape "
                         f"{arr.shape}")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise ValueError(f"{name} has non-finite coordinates (NaN or inf) at row "
                         f"{int(np.flatnonzero(bad)[0])}")
    if metric == "great_circle" and (np.abs(arr[:, 1]) > 90).any():
        row = int(np.flatnonzero(np.abs(arr[:, 1]) > 90)[0])
        raise ValueError(f"{name} has latitude {arr[row, 1]} outside [-90, 90] at row {row} "
                         "(columns are longitude, latitude)")
    return arr


def observations(z: Any, n: int, name: str = "z") -> np.ndarray:
    """``z`` as a float64 vector of length n, finite."""
    arr = host(z)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be a vector of {n} values (one per location), got "
                         f"shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} non-finite values (NaN or inf), the "
                         f"first at index {int(np.flatnonzero(bad)[0])}; drop those locations "
                         "first")
    return arr


def no_duplicates(x: np.ndarray, nugget: float, name: str = "locations") -> None:
    """Raise if two rows of ``x`` coincide while there is no nugget (C would be singular)."""
    if nugget > 0 or x.shape[0] < 2:
        return
    order = np.lexsort(x.T[::-1])
    s = x[order]
    same = (s[1:] == s[:-1]).all(axis=1)
    if same.any():
        k = int(np.flatnonzero(same)[0])
        i, j = sorted((int(order[k]), int(order[k + 1])))
        raise ValueError(f"{name} has duplicate points (rows {i} and {j}); without a nugget the "
                         "covariance matrix is singular: pass nugget > 0 (measurement noise) "
                         "or average the observations at each point")
