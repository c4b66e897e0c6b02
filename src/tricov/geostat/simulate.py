"""Exact draws of a zero-mean Gaussian random field: ``z = L e``, ``C = L L^T``, ``e ~ N(0, I)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import dense
from .._errors import NotPositiveDefiniteError
from . import _checks
from .covariance import DEFAULT_TILE, covariance
from .distance import EARTH_RADIUS_KM
from .kernels import Kernel, make_kernel
from .likelihood import DEFAULT_TOL, tlr_api, tlr_tile_size
from .ordering import jittered_grid, morton_order

__all__ = ["simulate"]


def simulate(n: int | None, params: Sequence[float] | Mapping[str, float] | None = None, *,
             kernel: str | Kernel = "matern", dim: int = 2, seed: Any = None,
             locations: Any = None, nugget: float = 0.0, metric: str = "euclidean",
             radius: float = EARTH_RADIUS_KM, method: str = "dense", tol: float = DEFAULT_TOL,
             tile_size: int | None = None, workers: int | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Draw a Gaussian random field with a Cholesky factor of its covariance, reproducibly.

    Parameters
    ----------
    n : int or None
        Number of locations (None, or ``len(locations)``, when locations are given).
    params : sequence or mapping
        Kernel parameters (Matérn: sigma2, beta, nu).
    kernel : str or Kernel
        Family name, or a :class:`Kernel` (then ``params``, ``nugget``, ``metric``, ``radius``
        come from it).
    dim : int
        1, 2 or 3: dimension of the generated locations.
    seed : int, numpy Generator or None
        Seeds the locations and the field (same seed, same output).
    locations : (n, d) array, optional
        Where to draw the field (kept in their order). Default: a jittered grid in the unit
        square/cube (for ``metric="great_circle"``: the jittered grid mapped to longitudes
        [-180, 180] and latitudes [-90, 90]), sorted along the Morton curve.
    nugget : float
        White-noise variance (measurement error) added to the field.
    metric : {"euclidean", "great_circle"}
    radius : float
    method : {"dense", "tlr"}
        "dense": the exact factor (n^2 memory). "tlr": the tile low-rank factor of
        :mod:`tricov.tlr` at accuracy ``tol`` (``z = L e`` by ``TLRMatrix.matvec`` of the
        factor), for sizes whose dense matrix does not fit in memory.
    tol : float
        TLR accuracy.
    tile_size, workers
        Tile size (assembly, default 512, or TLR tiles, default
        :func:`tricov.tlr.default_tile_size`) and assembly threads.

    Returns
    -------
    locations : (n, d) float64 array
    z : (n,) float64 array

    Examples
    --------
    >>> from tricov.geostat import simulate
    >>> x, z = simulate(400, (1.0, 0.1, 0.5), seed=1)
    >>> x.shape, z.shape
    ((400, 2), (400,))
    """
    kern = make_kernel(kernel, params, nugget=nugget, metric=metric, radius=radius)
    rng = np.random.default_rng(seed)
    if locations is None:
        if n is None or isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if kern.metric == "great_circle":
            if dim != 2:
                raise ValueError(f"dim must be 2 for great-circle locations, got {dim}")
            x = jittered_grid(int(n), 2, rng) * np.array([360.0, 180.0]) - np.array([180.0, 90.0])
        else:
            x = jittered_grid(int(n), dim, rng)
        x = np.ascontiguousarray(x[morton_order(x)])
    else:
        x = _checks.locations(locations, metric=kern.metric)
        if n is not None and n != x.shape[0]:
            raise ValueError(f"n = {n} but locations holds {x.shape[0]} points")
        _checks.no_duplicates(x, kern.nugget)
    if method == "tlr":
        return x, _draw_tlr(kern, x, rng, tol, tlr_tile_size(x.shape[0]) if tile_size is None
                            else tile_size)
    if method != "dense":
        raise ValueError(f"method must be 'dense' or 'tlr', got {method!r}")
    chol = covariance(kern, x, lower=True, tile_size=DEFAULT_TILE if tile_size is None
                      else tile_size, workers=workers)
    try:
        dense.potrf(chol)
    except NotPositiveDefiniteError as exc:
        raise NotPositiveDefiniteError(
            exc.order, message=f"the covariance matrix of these locations is not numerically "
            f"positive definite (leading minor {exc.order}); a smoother kernel or a longer "
            "range needs a nugget (nugget > 0)") from exc
    e = rng.standard_normal((x.shape[0], 1))
    dense.trmm(chol, e)
    return x, e[:, 0].copy()


def _draw_tlr(kern: Kernel, x: np.ndarray, rng: np.random.Generator, tol: float,
              tile_size: int) -> np.ndarray:
    """``L e`` with the TLR Cholesky factor of C at the Morton-sorted points, in x's order."""
    tlr_matrix, tlr_potrf = tlr_api()
    order = morton_order(x)
    kern.prepare()
    mat = tlr_matrix.from_kernel(kern, np.ascontiguousarray(x[order]), tile_size=tile_size,
                                 tol=tol)
    tlr_potrf(mat)
    z = np.empty(x.shape[0])
    z[order] = np.asarray(mat.matvec(rng.standard_normal(x.shape[0])), dtype=np.float64)
    return z
