"""The scaled Matérn function ``M_nu`` on CuPy arrays: the method of :mod:`._bessel` (table of
Chebyshev pieces, series and continued fraction outside it) as one CUDA kernel
(``kernels/cuda/matern.cu``), its constants built on the host by :mod:`._bessel` and kept on
the device per order."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..kernels import nvrtc
from . import _bessel

__all__ = ["matern_scaled_inplace"]

_THREADS = 256


@functools.lru_cache(maxsize=16)
def _constants(nu: float, device: int, exact: bool) -> tuple[int, tuple[Any, ...]]:
    """``(functions in the table, device arrays)`` of order ``nu`` on ``device``."""
    import cupy

    consts, temme, steed, up = _bessel.orders(nu)
    if exact:
        nf, coef, sub = 1, np.zeros(1), np.zeros(8)
    else:
        coef, sub = _bessel.table(nu)
        nf = coef.shape[1]
    with cupy.cuda.Device(device):
        arrays = tuple(cupy.asarray(np.ascontiguousarray(a, dtype=np.float64).reshape(-1))
                       for a in (coef, sub, consts, temme, steed, up if up.size else np.zeros(1)))
    return nf, arrays


def matern_scaled_inplace(t: Any, nu: float, *, exact: bool = False) -> Any:
    """Overwrite the CuPy float64 array ``t`` (1-D or 2-D, any strides) by ``M_nu(t)``.

    Agrees with the CPU path (:func:`tricov.geostat._bessel.matern_scaled_inplace`) to a few
    units in the last place; runs on the current stream.
    """
    import cupy

    if t.ndim not in (1, 2):
        raise ValueError(f"t must be 1-D or 2-D, got shape {t.shape}")
    if t.dtype != np.float64:
        raise TypeError(f"t must be float64, got {t.dtype}")
    if t.size == 0:
        return t
    t2 = t[:, None] if t.ndim == 1 else t
    exact = exact or nu > _bessel._NU_TABLE_MAX
    nf, arrays = _constants(float(nu), cupy.cuda.Device().id, bool(exact))
    rows, cols = t2.shape
    rs, cs = (s // 8 for s in t2.strides)
    kernel = nvrtc.function("matern.cu", f"tricov::matern_block<{nf}>")
    blocks = min(-(-t2.size // _THREADS), 65536)
    kernel((blocks,), (_THREADS,), (np.int32(rows), np.int32(cols), np.int64(rs), np.int64(cs),
                                     t2, *arrays, np.bool_(exact)))
    return t
