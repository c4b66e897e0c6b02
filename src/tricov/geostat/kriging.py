"""Kriging: the conditional mean and variance of the field at new locations.

For observations ``z`` at ``x`` with covariance ``C = L L^T`` and cross-covariances
``k = C(x, x*)`` (no nugget: the prediction is of the field itself), the simple-kriging mean is
``k^T C^-1 z = (L^-1 k)^T (L^-1 z)`` and the variance ``sigma2 - |L^-1 k|^2``. The new locations
are processed in chunks, so memory stays at ``n x chunk`` besides the factor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import dense
from . import _checks
from .covariance import covariance
from .distance import EARTH_RADIUS_KM, array_namespace
from .kernels import Kernel, make_kernel
from .likelihood import DEFAULT_TOL, DenseEvaluator, evaluator, on_device

__all__ = ["predict"]


def predict(locations: Any, z: Any, new_locations: Any,
            params: Sequence[float] | Mapping[str, float] | Any = None, *,
            kernel: str | Kernel = "matern", nugget: float = 0.0, metric: str = "euclidean",
            radius: float = EARTH_RADIUS_KM, method: str = "dense", tol: float = DEFAULT_TOL,
            tile_size: int | None = None, workers: int | None = None, device: str = "cpu",
            return_variance: bool = True, chunk: int = 2048
            ) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
    """Kriging means (and variances) of a zero-mean field at ``new_locations``.

    Parameters
    ----------
    locations : (n, d) array
    z : (n,) array
    new_locations : (m, d) array
    params : sequence, mapping or FitResult
        Kernel parameters, or the result of :func:`fit` (its kernel is used).
    kernel, nugget, metric, radius
        As for :func:`loglik` (ignored when ``params`` is a fit result or ``kernel`` a Kernel).
    method : {"dense", "tlr"}
        The factorization of C. With "tlr" the variances call the TLR solve on blocks of
        ``chunk`` right-hand sides.
    tol, tile_size, workers, device
        As for :func:`loglik`.
    return_variance : bool
        Also return the variances.
    chunk : int
        New locations per block.

    Returns
    -------
    mean : (m,) array
    variance : (m,) array
        Only with ``return_variance``: the conditional variance of the field (without the
        nugget; add it for the variance of a new noisy observation).

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.geostat import predict
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> mean, var = predict(x, [1.0, -1.0], x, (1.0, 0.5, 0.5))
    >>> np.allclose(mean, [1.0, -1.0]), np.allclose(var, 0.0)
    (True, True)
    """
    if hasattr(params, "kernel") and isinstance(params.kernel, Kernel):
        kern = params.kernel
    else:
        kern = make_kernel(kernel, params, nugget=nugget, metric=metric, radius=radius)
    x = _checks.locations(locations, metric=kern.metric)
    zz = _checks.observations(z, x.shape[0])
    xn = _checks.locations(new_locations, "new_locations", metric=kern.metric)
    if xn.shape[1] != x.shape[1]:
        raise ValueError(f"new_locations have {xn.shape[1]} coordinates but locations have "
                         f"{x.shape[1]}")
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    _checks.no_duplicates(x, kern.nugget)
    ev = evaluator(method, x, zz, tile_size=tile_size, tol=tol, workers=workers, device=device)
    xp = array_namespace(ev.x)
    xn = on_device(xn, device)
    m = xn.shape[0]
    mean = np.empty(m)
    var = np.empty(m) if return_variance else None
    if isinstance(ev, DenseEvaluator):
        chol = ev.factor(kern)
        alpha = xp.array(ev.z, order="F").reshape(-1, 1)
        dense.trsm(chol, alpha)
    else:
        mat = ev.factor(kern)
        alpha = mat.solve(ev.z).reshape(-1, 1)
    for c0 in range(0, m, chunk):
        c1 = min(c0 + chunk, m)
        k = covariance(kern, ev.x, xn[c0:c1], workers=workers)
        if isinstance(ev, DenseEvaluator):
            dense.trsm(chol, k)     # L^-1 k: mean k^T C^-1 z = (L^-1 k)^T (L^-1 z)
            s = k
        else:
            s = mat.solve(k).reshape(k.shape)
        mean[c0:c1] = _checks.host(k.T @ alpha[:, 0])
        if var is not None:
            var[c0:c1] = kern.sigma2 - _checks.host(xp.einsum("ij,ij->j", k, s))
    ev.release()
    if var is None:
        return mean
    np.maximum(var, 0.0, out=var)
    return mean, var
