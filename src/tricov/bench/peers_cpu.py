"""The native CPU peers: the same BLAS/LAPACK routine as each case, called on the same data.

Every peer calls the routine of the BLAS/LAPACK that SciPy ships (the one tricov's CPU executor
uses for its GEMMs and leaves) by function pointer through :mod:`tricov.backends.cpu_blas`, in
place on the column-major arrays of the case, so that the only difference between tricov and its
peer is the algorithm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends import cpu_blas as blas

__all__ = ["NATIVE", "gemm", "routines"]

Arrays = dict[str, Any]


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def _ld(a: np.ndarray) -> int:
    if not a.flags.f_contiguous:
        raise ValueError("the native peers take column-major (Fortran-ordered) arrays")
    return max(1, a.shape[0])


def _check(info: int, routine: str) -> None:
    if info:
        raise RuntimeError(f"{routine} returned info={info}")


def _trxm(routine: Callable[..., None]) -> Callable[[Arrays, np.dtype], None]:
    def call(x: Arrays, dtype: np.dtype) -> None:
        a, b = x["A"], x["B"]
        m, n = b.shape
        routine(dtype, b"L", b"L", b"N", b"N", m, n, 1.0, _ptr(a), _ld(a), _ptr(b), _ld(b))

    return call


def _syrk(x: Arrays, dtype: np.dtype) -> None:
    a, c = x["A"], x["C"]
    n, k = a.shape
    blas.herk(dtype, b"L", b"N", n, k, 1.0, _ptr(a), _ld(a), 1.0, _ptr(c), _ld(c))


def _square(name: str) -> Callable[[Arrays, np.dtype], None]:
    def call(x: Arrays, dtype: np.dtype) -> None:
        a = x["A"]
        n = a.shape[0]
        args = (b"L", b"N") if name == "trtri" else (b"L",)
        _check(getattr(blas, name)(dtype, *args, n, _ptr(a), _ld(a)), name)

    return call


def _poti(x: Arrays, dtype: np.dtype) -> None:
    a = x["A"]
    n = a.shape[0]
    _check(blas.potrf(dtype, b"L", n, _ptr(a), _ld(a)), "potrf")
    _check(blas.potri(dtype, b"L", n, _ptr(a), _ld(a)), "potri")


def _potrs(x: Arrays, dtype: np.dtype) -> None:
    lf, b = x["L"], x["B"]
    n, nrhs = b.shape
    _check(blas.potrs(dtype, b"L", n, nrhs, _ptr(lf), _ld(lf), _ptr(b), _ld(b)), "potrs")


def _posv(x: Arrays, dtype: np.dtype) -> None:
    a, b = x["A"], x["B"]
    n, nrhs = b.shape
    _check(blas.posv(dtype, b"L", n, nrhs, _ptr(a), _ld(a), _ptr(b), _ld(b)), "posv")


#: Native peer of each case: ``peer(arrays, dtype)``, in place, lower triangles.
NATIVE: dict[str, Callable[[Arrays, np.dtype], None]] = {
    "trsm": _trxm(blas.trsm),
    "trmm": _trxm(blas.trmm),
    "syrk": _syrk,
    "potrf": _square("potrf"),
    "potrs": _potrs,
    "posv": _posv,
    "trtri": _square("trtri"),
    "lauum": _square("lauum"),
    "potri": _square("potri"),
    "poti": _poti,
}

_ROUTINES = {"syrk": ("syrk",), "poti": ("potrf", "potri")}


def routines(case: str, dtype: np.dtype) -> str:
    """Names of the routines the peer of ``case`` calls, e.g. ``'zherk'``, ``'dpotrf+dpotri'``."""
    p = blas.prefix(dtype)
    names = _ROUTINES.get(case, (case,))
    if np.dtype(dtype).kind == "c":
        names = tuple("herk" if n == "syrk" else n for n in names)
    return "+".join(p + n for n in names)


def gemm(x: Arrays, dtype: np.dtype) -> None:
    """``C += A B`` on the arrays ``A`` (m x k), ``B`` (k x n) and ``C`` (m x n)."""
    a, b, c = x["A"], x["B"], x["C"]
    m, k = a.shape
    n = b.shape[1]
    blas.gemm(dtype, b"N", b"N", m, n, k, 1.0, _ptr(a), _ld(a), _ptr(b), _ld(b), 1.0, _ptr(c),
              _ld(c))
