"""The Gaussian log-likelihood of observations under a covariance kernel, dense or tile low-rank.

``l = -1/2 z^T C^-1 z - 1/2 log det C - n/2 log(2 pi)``. Dense: the lower triangle of C is
assembled tile by tile into one column-major matrix, factored in place by :func:`tricov.potrf`,
and ``L^-1 z`` comes from :func:`tricov.trsm`; ``log det C = 2 sum log L_ii``. TLR: the matrix is
compressed tile by tile by :mod:`tricov.tlr` (locations sorted along the Morton curve first) and
factored there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dense
from . import _checks
from .covariance import DEFAULT_TILE, covariance
from .distance import EARTH_RADIUS_KM, array_namespace
from .kernels import Kernel, make_kernel
from .ordering import morton_order

__all__ = ["DEVICES", "METHODS", "DenseEvaluator", "Terms", "TLREvaluator", "evaluator",
           "loglik"]

#: Ways to compute the likelihood.
METHODS = ("dense", "tlr")
#: Where it runs: NumPy arrays on the CPU, or CuPy arrays on the current GPU.
DEVICES = ("cpu", "gpu")
#: Default assembly tile on a GPU (larger tiles, fewer kernel launches).
GPU_TILE = 4096
#: Default accuracy of the TLR compression.
DEFAULT_TOL = 1e-9
_LOG_2PI = math.log(2.0 * math.pi)


def on_device(a: np.ndarray, device: str) -> Any:
    """``a`` where ``device`` ("cpu" or "gpu") computes: itself, or a CuPy copy."""
    if device == "cpu":
        return a
    if device != "gpu":
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    try:
        import cupy
    except ImportError as exc:
        raise ImportError("device='gpu' needs CuPy (pip install tricov[gpu])") from exc
    return cupy.asarray(a)


@dataclass(frozen=True)
class Terms:
    """The two data-dependent terms of the likelihood: ``z^T C^-1 z`` and ``log det C``."""

    quad: float
    logdet: float
    n: int

    def loglik(self, scale: float = 1.0) -> float:
        """The log-likelihood, for C multiplied by ``scale`` (1: C as evaluated)."""
        return -0.5 * (self.quad / scale + self.logdet + self.n * math.log(scale)
                       + self.n * _LOG_2PI)


class DenseEvaluator:
    """Likelihood terms with a dense Cholesky factorization, reusing one n x n workspace.

    Parameters
    ----------
    x : (n, d) float64 array
    z : (n,) float64 array
        NumPy arrays, or CuPy arrays to compute on their GPU.
    tile_size : int
        Tile size of the assembly.
    workers : int, optional
        Assembly threads (CPU).
    """

    def __init__(self, x: np.ndarray, z: np.ndarray, *, tile_size: int = DEFAULT_TILE,
                 workers: int | None = None) -> None:
        self.x, self.z = x, z
        self.tile_size, self.workers = tile_size, workers
        self._work: np.ndarray | None = None

    def factor(self, kern: Kernel) -> np.ndarray:
        """The Cholesky factor of ``C(x, x)`` (lower triangle of the workspace, overwritten
        at the next call). Raises :class:`tricov.NotPositiveDefiniteError`."""
        n = self.x.shape[0]
        if self._work is None:
            xp = array_namespace(self.x)
            self._work = xp.empty((n, n), dtype=xp.float64, order="F")
        covariance(kern, self.x, lower=True, out=self._work, tile_size=self.tile_size,
                   workers=self.workers)
        return dense.potrf(self._work)

    def __call__(self, kern: Kernel) -> Terms:
        chol = self.factor(kern)
        xp = array_namespace(chol)
        logdet = 2.0 * float(xp.sum(xp.log(xp.diagonal(chol))))
        w = xp.array(self.z, dtype=xp.float64, order="F").reshape(-1, 1)
        dense.trsm(chol, w)
        return Terms(float(w[:, 0] @ w[:, 0]), logdet, self.x.shape[0])

    def release(self) -> None:
        """Free the workspace."""
        self._work = None


def tlr_tile_size(n: int) -> int:
    """The default TLR tile size for ``n`` locations (:func:`tricov.tlr.default_tile_size`)."""
    from ..tlr import default_tile_size

    return default_tile_size(n)


def tlr_api() -> tuple[Any, Any]:
    """``(TLRMatrix, potrf)`` from :mod:`tricov.tlr`, or an ImportError that says so."""
    try:
        from ..tlr import TLRMatrix
        from ..tlr import potrf as tlr_potrf
    except ImportError as exc:
        raise ImportError("method='tlr' needs the tile low-rank module tricov.tlr (TLRMatrix, "
                          "potrf), which this installation of tricov does not have; use "
                          "method='dense'") from exc
    return TLRMatrix, tlr_potrf


class TLREvaluator:
    """Likelihood terms with a tile low-rank Cholesky factorization (:mod:`tricov.tlr`).

    The locations are sorted along the Morton curve (the likelihood does not depend on the
    order) so that off-diagonal tiles have low rank.

    Parameters
    ----------
    x : (n, d) float64 array
    z : (n,) float64 array
    tile_size : int, optional
        Default: :func:`tricov.tlr.default_tile_size` of ``n``.
    tol : float
        Compression accuracy passed to ``TLRMatrix.from_kernel``.
    device : {"cpu", "gpu"}
        Where the tiles live and are factored.
    """

    def __init__(self, x: np.ndarray, z: np.ndarray, *, tile_size: int | None = None,
                 tol: float = DEFAULT_TOL, device: str = "cpu") -> None:
        self._api = tlr_api()
        order = morton_order(x)
        self.x = on_device(np.ascontiguousarray(x[order]), device)
        self.z = on_device(np.ascontiguousarray(z[order]), device)
        if tile_size is None:
            tile_size = GPU_TILE if device == "gpu" else tlr_tile_size(x.shape[0])
        self.tile_size = int(tile_size)
        self.tol = tol

    def factor(self, kern: Kernel) -> Any:
        """The factored TLR matrix of ``C(x, x)`` (in Morton order)."""
        tlr_matrix, tlr_potrf = self._api
        kern.prepare()
        mat = tlr_matrix.from_kernel(kern, self.x, tile_size=self.tile_size, tol=self.tol)
        tlr_potrf(mat)
        return mat

    def __call__(self, kern: Kernel) -> Terms:
        mat = self.factor(kern)
        sol = mat.solve(self.z).reshape(-1)
        return Terms(float(self.z @ sol), float(mat.logdet()), self.x.shape[0])

    def release(self) -> None:
        """Nothing is kept between calls."""


def evaluator(method: str, x: np.ndarray, z: np.ndarray, *, tile_size: int | None = None,
              tol: float = DEFAULT_TOL, workers: int | None = None, device: str = "cpu"
              ) -> DenseEvaluator | TLREvaluator:
    """The likelihood evaluator of ``method`` ("dense" or "tlr") for fixed data (NumPy
    arrays), computing on ``device`` ("cpu" or "gpu": CuPy's current device). The default tile
    size is the assembly's (dense: 512, 4096 on a GPU) or, for tlr,
    :func:`tricov.tlr.default_tile_size` (4096 on a GPU, where large tiles measured faster)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if tile_size is not None and int(tile_size) < 1:
        raise ValueError(f"tile_size must be positive, got {tile_size}")
    if method == "dense":
        tile = (GPU_TILE if device == "gpu" else DEFAULT_TILE) if tile_size is None \
            else int(tile_size)
        return DenseEvaluator(on_device(x, device), on_device(z, device), tile_size=tile,
                              workers=workers)
    if method == "tlr":
        if not (isinstance(tol, (int, float)) and 0 < tol < 1):
            raise ValueError(f"tol must be in (0, 1), got {tol!r}")
        return TLREvaluator(x, z, tile_size=tile_size, tol=float(tol), device=device)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def loglik(locations: Any, z: Any, params: Sequence[float] | Mapping[str, float] | None = None,
           *, kernel: str | Kernel = "matern", nugget: float = 0.0, metric: str = "euclidean",
           radius: float = EARTH_RADIUS_KM, method: str = "dense", tol: float = DEFAULT_TOL,
           tile_size: int | None = None, workers: int | None = None,
           device: str = "cpu") -> float:
    """Gaussian log-likelihood of zero-mean observations ``z`` at ``locations``.

    ``-1/2 z^T C^-1 z - 1/2 log det C - n/2 log(2 pi)`` with ``C = kernel(locations)``.

    Parameters
    ----------
    locations : (n, d) array
        Coordinates (d = 1..3), or (longitude, latitude) in degrees with
        ``metric="great_circle"``.
    z : (n,) array
        Observations, finite.
    params : sequence or mapping
        The kernel's parameters (for Matérn: sigma2, beta, nu), in order or by name.
    kernel : str or Kernel
        Family name ("matern", "exponential", "sqexp", "powexp"), or a :class:`Kernel`
        (then ``params``, ``nugget``, ``metric`` and ``radius`` come from it).
    nugget : float
        White-noise variance added on the diagonal.
    metric : {"euclidean", "great_circle"}
    radius : float
        Sphere radius for great-circle distances (default the Earth, km).
    method : {"dense", "tlr"}
        Dense Cholesky (exact), or tile low-rank (:mod:`tricov.tlr`, accuracy ``tol``).
    tol : float
        TLR compression accuracy.
    tile_size : int, optional
        Tile size (assembly tiles for dense, default 512, 4096 on a GPU; TLR tiles for tlr,
        default :func:`tricov.tlr.default_tile_size` of n, 4096 on a GPU).
    workers : int, optional
        Assembly threads (dense, CPU).
    device : {"cpu", "gpu"}
        Compute on the CPU, or on CuPy's current GPU (the inputs may be NumPy or CuPy arrays).

    Returns
    -------
    float

    Raises
    ------
    tricov.NotPositiveDefiniteError
        If C is not numerically positive definite (e.g. a very smooth kernel without nugget).
    ValueError, TypeError
        Bad shapes, non-finite data, bad parameters, duplicate locations without nugget.

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.geostat import loglik
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> round(loglik(x, [0.5, -0.2], (1.0, 1.0, 0.5)), 6)
    -1.975411
    """
    kern = make_kernel(kernel, params, nugget=nugget, metric=metric, radius=radius)
    x = _checks.locations(locations, metric=kern.metric)
    zz = _checks.observations(z, x.shape[0])
    _checks.no_duplicates(x, kern.nugget)
    ev = evaluator(method, x, zz, tile_size=tile_size, tol=tol, workers=workers, device=device)
    return ev(kern).loglik()
