"""Covariance entries on the GPU in one pass: ``kernels/cuda/matern.cu``'s ``covariance_block``.

The vectorised path of :class:`~tricov.geostat.Kernel` makes about a dozen passes over a block
(coordinate differences, squares, sums, the square root, the scaling, the correlation), with
two block-sized temporaries; on a GPU that is memory traffic and allocation, and it was most
of the time of a TLR factorization at n = 100000. One kernel computes each entry from the
coordinates with the same operations in the same order and writes it once (CUDA's ``exp``
and NumPy's may differ in the last place).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kernels import nvrtc
from . import _bessel

__all__ = ["fill"]

_THREADS = 128
_GRID_Y = 65535
#: Family codes of the CUDA template (its ``enum Family``).
_FAMILY = {"exponential": 0, "sqexp": 1, "powexp": 2}
_MATERN = {0.5: 3, 1.5: 4, 2.5: 5}
_MATERN_GENERAL = 6


def fill(out: Any, x: Any, y: Any, family: str, params: tuple[float, ...], metric: str,
         radius: float) -> Any:
    """Write ``sigma2 C(x_i, y_j)`` into the CuPy float64 block ``out`` (any strides), without
    the nugget; ``x`` (n, d) and ``y`` (m, d) CuPy coordinates. Returns ``out``."""
    import cupy

    from . import _bessel_cuda

    rows, cols = out.shape
    if rows == 0 or cols == 0:
        return out
    x = x if x.dtype == np.float64 else x.astype(np.float64)
    y = y if y.dtype == np.float64 else y.astype(np.float64)
    sigma2, beta = float(params[0]), float(params[1])
    third, nf, exact = 0.0, 1, False
    arrays: tuple[Any, ...] = (out,) * 6  # unread unless the family is a general Matérn
    if family == "matern":
        nu = float(params[2])
        code = _MATERN.get(nu, _MATERN_GENERAL)
        if code == _MATERN_GENERAL:
            exact = nu > _bessel._NU_TABLE_MAX
            nf, arrays = _bessel_cuda._constants(nu, cupy.cuda.Device().id, exact)
    else:
        code = _FAMILY[family]
        if family == "powexp":
            third = float(params[2])
    great = metric == "great_circle"
    kernel = nvrtc.function("matern.cu", f"tricov::covariance_block<{code}, "
                                         f"{nvrtc.cbool(great)}, {nf}>")
    grid = (-(-rows // _THREADS), min(cols, _GRID_Y))
    rs, cs = (s // 8 for s in out.strides)
    kernel(grid, (_THREADS,), (
        np.int32(rows), np.int32(cols), np.int32(x.shape[1]), x, np.int64(x.strides[0] // 8),
        np.int64(x.strides[1] // 8), y, np.int64(y.strides[0] // 8), np.int64(y.strides[1] // 8),
        out, np.int64(rs), np.int64(cs), np.float64(sigma2), np.float64(beta), np.float64(third),
        np.float64(radius), *arrays, np.bool_(exact)))
    return out
