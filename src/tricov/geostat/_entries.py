"""Covariance entries without NumPy temporaries: the compiled block function of tile codes.

:func:`block_address` is a C callback (a Numba ``cfunc`` with the signature
:data:`tricov.kernels.numba.tiles.BLOCK_SIGNATURE`) that writes ``C(x[i], x[j])`` for a block of
index pairs, without the nugget; compiled tile codes (TLR compression) call it for a tile, a
row or a column. It computes with the same operations as the vectorised path of
:class:`~tricov.geostat.Kernel` (differences coordinate by coordinate, then the correlation,
then ``sigma2``), so both agree to an ulp or two (NumPy's SIMD ``exp`` and libm's may differ in
the last place). Every family and metric goes through this one function (compiled once and
cached on disk), chosen by codes in the parameter array ``p`` (:func:`pack`); the Matérn
tables of a general smoothness travel in the flat array ``tab``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import carray, cfunc, njit

from ..kernels.numba.tiles import BLOCK_SIGNATURE, as_pointer
from . import _bessel

__all__ = ["block_address", "pack"]

# family codes (p[0]); a general Matérn smoothness is _MEXACT, _MTAB1 or _MTAB2 (how M_nu is
# evaluated: :func:`tricov.geostat._bessel.tables`)
_EXP, _SQEXP, _POWEXP, _M05, _M15, _M25, _MEXACT, _MTAB1, _MTAB2 = range(9)
# metric codes (p[1])
_EUCLID, _GREAT_CIRCLE = range(2)
_HALF_RAD = math.pi / 360.0
_CHUNK = 2048  # elements of a block whose correlations are evaluated at once
# p = [family, metric, sigma2, beta, nu or alpha, radius, then the 7 offsets of the Matérn
# arrays coef, sub, consts, temme, steed, up (and their end) in tab]
_P_SIZE = 13


def pack(family: str, params: tuple[float, ...], metric: str,
         radius: float) -> tuple[np.ndarray, np.ndarray]:
    """``(p, tab)``: the parameter array and the table array of one kernel (see the module)."""
    third = 0.0
    arrays: tuple[np.ndarray, ...] = ()
    if family == "matern":
        nu = params[2]
        third = nu
        code = {0.5: _M05, 1.5: _M15, 2.5: _M25}.get(nu, -1)
        if code < 0:
            mode, arrays = _bessel.tables(nu)
            code = _MEXACT + mode
    else:
        code = {"exponential": _EXP, "sqexp": _SQEXP, "powexp": _POWEXP}[family]
        if family == "powexp":
            third = params[2]
    sizes = [a.size for a in arrays] or [0] * 6
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    tab = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(1)
    p = np.array([code, _EUCLID if metric == "euclidean" else _GREAT_CIRCLE, params[0],
                  params[1], third, radius, *offsets], dtype=np.float64)
    return p, np.ascontiguousarray(tab, dtype=np.float64)


@njit(nogil=True, inline="always")
def _euclidean(x: Any, i: int, j: int) -> float:
    s = 0.0
    for c in range(x.shape[1]):
        d = x[i, c] - x[j, c]
        s += d * d
    return math.sqrt(s)


@njit(nogil=True, inline="always")
def _great_circle(x: Any, i: int, j: int, radius: float) -> float:
    a = math.sin((x[i, 1] - x[j, 1]) * _HALF_RAD)
    b = math.sin((x[i, 0] - x[j, 0]) * _HALF_RAD)
    h = a * a + b * b * math.cos(x[i, 1] * (2 * _HALF_RAD)) * math.cos(x[j, 1] * (2 * _HALF_RAD))
    return math.asin(min(math.sqrt(h), 1.0)) * (2.0 * radius)


@njit(nogil=True, inline="always")
def _scaled(metric: int, x: Any, i: int, j: int, beta: float, radius: float) -> float:
    """The distance over the range, ``t = r / beta``."""
    if metric == _EUCLID:
        return _euclidean(x, i, j) / beta
    return _great_circle(x, i, j, radius) / beta


@njit(nogil=True, cache=True)
def _correlate(code: int, t: Any, third: float, tab: Any, o: Any, work: Any) -> None:
    """``t <- C(t) / sigma2`` for a 1-D array of scaled distances, by family."""
    if code == _M05 or code == _EXP:
        _bessel.exp_neg(t, work)
        t[:] = work
    elif code == _M15:
        _bessel.exp_neg(t, work)
        for e in range(t.shape[0]):
            t[e] = (t[e] + 1.0) * work[e]
    elif code == _M25:
        _bessel.exp_neg(t, work)
        for e in range(t.shape[0]):
            t[e] = (t[e] * (t[e] * (1.0 / 3.0) + 1.0) + 1.0) * work[e]
    elif code == _SQEXP:
        for e in range(t.shape[0]):
            t[e] = t[e] * t[e] * 0.5
        _bessel.exp_neg(t, work)
        t[:] = work
    elif code == _POWEXP:
        for e in range(t.shape[0]):
            t[e] = t[e] ** third
        _bessel.exp_neg(t, work)
        t[:] = work
    else:
        coef, consts, up = tab[o[0]:o[1]], tab[o[2]:o[3]], tab[o[5]:o[6]]
        sub = tab[o[1]:o[2]].reshape((2, (o[2] - o[1]) // 2))
        temme = tab[o[3]:o[4]].reshape((4, (o[4] - o[3]) // 4))
        steed = tab[o[4]:o[5]].reshape((2, (o[5] - o[4]) // 2))
        if code == _MEXACT:
            for e in range(t.shape[0]):
                t[e] = _bessel._exact(t[e], consts, temme, steed, up)
        else:
            _bessel.table_row(t, coef, sub, consts, temme, steed, up,
                              2 if code == _MTAB2 else 1)


@njit(nogil=True, inline="always")
def _loops(code: int, metric: int, x: Any, i0: int, i1: int, j0: int, j1: int, sigma2: float,
           beta: float, third: float, radius: float, tab: Any, o: Any, out: Any, sa: int,
           sb: int) -> None:
    """The block in chunks of its elements (row-major): scaled distances into a buffer, the
    correlation of the whole chunk (:func:`_correlate`: loops without calls, vectorized), then
    ``sigma2`` times it into place."""
    rows, cols = i1 - i0, j1 - j0
    size = min(rows * cols, _CHUNK)
    buf = np.empty(size)
    work = np.empty(size)
    pos = np.empty(size, dtype=np.int64)
    q = 0
    for a in range(rows):
        for b in range(cols):
            buf[q] = _scaled(metric, x, i0 + a, j0 + b, beta, radius)
            pos[q] = a * sa + b * sb
            q += 1
            if q == size or (a == rows - 1 and b == cols - 1):
                _correlate(code, buf[:q], third, tab, o, work[:q])
                if sigma2 != 1.0:
                    for e in range(q):
                        out[pos[e]] = buf[e] * sigma2
                else:
                    for e in range(q):
                        out[pos[e]] = buf[e]
                q = 0


def _covariance_block(xa: int, n: int, d: int, i0: int, i1: int, j0: int, j1: int, pa: int,
                      pn: int, ta: int, tn: int, oa: int, sa: int, sb: int) -> None:
    """``out[a sa + b sb] = C(x[i0 + a], x[j0 + b])``: the body of the callback."""
    x = carray(as_pointer(xa), (n, d))
    p = carray(as_pointer(pa), (pn,))
    tab = carray(as_pointer(ta), (tn,))
    out = carray(as_pointer(oa), ((i1 - i0 - 1) * sa + (j1 - j0 - 1) * sb + 1,))
    o = np.empty(7, dtype=np.int64)
    for k in range(7):
        o[k] = int(p[6 + k])
    _loops(int(p[0]), int(p[1]), x, i0, i1, j0, j1, p[2], p[3], p[4], p[5], tab, o, out, sa,
           sb)


@functools.cache
def block_address() -> int:
    """Address of the compiled block function (compiled, or loaded from the disk cache, once)."""
    return int(cfunc(BLOCK_SIGNATURE, cache=True)(_covariance_block).address)
