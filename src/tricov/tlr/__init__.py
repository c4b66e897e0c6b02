"""Tile low-rank (TLR) matrices: compression, TLR GEMM and TLR Cholesky.

A Hermitian (real: symmetric) covariance matrix is cut into square tiles; diagonal tiles stay
dense and every tile below the diagonal is stored as ``U V^H`` with its own rank, to a fixed
accuracy or a fixed rank. Covariances of points ordered along a space-filling curve
(:func:`morton_order`) have low-rank far-field tiles, so memory and work drop from ``O(n^2)`` /
``O(n^3)`` to far less.

>>> import numpy as np
>>> from tricov import tlr
>>> x = np.random.default_rng(0).random((600, 2))
>>> x = x[tlr.morton_order(x)]
>>> def kernel(a, b):                      # exponential covariance, range 0.2
...     d = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
...     return np.exp(-d / 0.2)
>>> T = tlr.TLRMatrix.from_kernel(kernel, x, tile_size=150, tol=1e-8)
>>> L = tlr.potrf(T)                       # in place: T is now the factor
>>> z = T.solve(np.ones(600)); ld = T.logdet()

Supported dtypes: float32, float64, complex64 and complex128.
"""

from .cholesky import potrf, potrf_from_dense, potrf_from_kernel
from .compression import METHODS, compress
from .gemm import gemm
from .lowrank import LowRank
from .matrix import TLRMatrix, default_tile_size
from .ordering import morton_order

__all__ = [
    "METHODS",
    "LowRank",
    "TLRMatrix",
    "compress",
    "default_tile_size",
    "gemm",
    "morton_order",
    "potrf",
    "potrf_from_dense",
    "potrf_from_kernel",
]
