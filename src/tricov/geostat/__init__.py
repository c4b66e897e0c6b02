"""Gaussian-process geostatistics: Matérn kernels, exact simulation, maximum likelihood, kriging.

>>> from tricov import geostat
>>> x, z = geostat.simulate(300, (1.0, 0.1, 0.5), seed=0)
>>> ll = geostat.loglik(x, z, (1.0, 0.1, 0.5))
>>> ll == geostat.loglik(x, z, kernel=geostat.matern(1.0, 0.1, 0.5))
True
>>> res = geostat.fit(x, z, progress=False)
>>> res.loglik >= ll
True
"""

from .covariance import covariance
from .distance import EARTH_RADIUS_KM, euclidean, great_circle
from .fit import Evaluation, FitResult, default_bounds, fit
from .kernels import FAMILIES, Kernel, exponential, make_kernel, matern, powexp, sqexp
from .kriging import predict
from .likelihood import loglik
from .ordering import jittered_grid, morton_order
from .simulate import simulate

__all__ = [
    "EARTH_RADIUS_KM",
    "FAMILIES",
    "Evaluation",
    "FitResult",
    "Kernel",
    "covariance",
    "default_bounds",
    "euclidean",
    "exponential",
    "fit",
    "great_circle",
    "jittered_grid",
    "loglik",
    "make_kernel",
    "matern",
    "morton_order",
    "powexp",
    "predict",
    "simulate",
    "sqexp",
]
