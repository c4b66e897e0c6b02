"""Small LAPACK factorizations for compiled code, called by address (float64).

NumPy's ``linalg`` inside Numba copies and checks its operands and takes seconds to compile per
call site; the tile kernels call these thin wrappers instead: SciPy's LAPACK routines at the
addresses in the array ``fns`` (:func:`addresses`), passed as an argument so that the compiled
callers stay cacheable. Every result is a new Fortran-ordered array.

- :func:`qr_r`: the R factor of a Householder QR (``dgeqrf``), no Q;
- :func:`qr_q`: the orthonormal factor Q (``dgeqrf`` then ``dorgqr``), :func:`qr` both;
- :func:`svd_right`: singular values and right singular vectors (``dgesvd``, the left ones
  not computed); :func:`eigh`: symmetric eigendecomposition (``dsyev``).

A routine that fails (``info != 0``: NaN input, no convergence) leaves NaN in its results.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .calls import address

__all__ = ["addresses", "eigh", "qr", "qr_q", "qr_r", "svd_right"]

_ROUTINES = ("dgeqrf", "dorgqr", "dsyev", "dgesvd")
_GEQRF, _ORGQR, _SYEV, _GESVD = range(4)


@functools.cache
def addresses() -> np.ndarray:
    """The routines' addresses, the ``fns`` argument of the functions here."""
    return np.array([address(name) for name in _ROUTINES], dtype=np.int64)


@intrinsic
def _fcall(typingctx: Any, fn: Any, argv: Any, nargs: Any) -> Any:
    """Call the Fortran routine at address ``fn`` with the ``nargs`` addresses in ``argv``."""
    if not isinstance(nargs, types.IntegerLiteral):
        return None
    count = nargs.literal_value

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr] * count)
        ary = context.make_array(sig.args[1])(context, builder, args[1])
        values = [builder.inttoptr(builder.load(builder.gep(ary.data, [ir.Constant(
            ir.IntType(64), k)])), ptr) for k in range(count)]
        target = context.cast(builder, args[0], sig.args[0], types.int64)
        builder.call(builder.inttoptr(target, fnty.as_pointer()), values)
        return context.get_dummy_value()

    return types.void(fn, argv, nargs), codegen


@njit(nogil=True, cache=True)
def _at(a: Any) -> np.int64:
    return np.int64(a.ctypes.data)


@njit(nogil=True, cache=True)
def _keep(a: Any) -> None:
    """A use of ``a`` after a call that got only its address: Numba frees an array after its
    last use, which would otherwise come before the routine writes into it."""
    if a.size < 0:
        raise ValueError("negative size")


@njit(nogil=True, cache=True)
def _fcopy(a: Any) -> Any:
    """A Fortran-ordered copy of the 2-D ``a``."""
    f = np.empty((a.shape[1], a.shape[0])).T
    f[:, :] = a
    return f


@njit(nogil=True, cache=True)
def _factor(a: Any, fns: Any) -> tuple[Any, Any, int]:
    """``dgeqrf`` on a Fortran copy of ``a``: (reflectors and R, tau, info)."""
    m, n = a.shape
    f = _fcopy(a)
    tau = np.empty(max(min(m, n), 1))
    lwork = 64 * max(n, 1)
    work = np.empty(lwork)
    ints = np.array([m, n, max(m, 1), lwork, 0], dtype=np.int32)
    d = _at(ints)
    argv = np.array([d, d + 4, _at(f), d + 8, _at(tau), _at(work), d + 12, d + 16])
    if m and n:
        _fcall(fns[_GEQRF], argv, 8)
    _keep(work)
    return f, tau, ints[4]


@njit(nogil=True, cache=True)
def _upper(f: Any, info: int) -> Any:
    m, n = f.shape
    k = min(m, n)
    r = np.zeros((n, k)).T
    for c in range(n):
        for i in range(min(c + 1, k)):
            r[i, c] = f[i, c] if info == 0 else np.nan
    return r


@njit(nogil=True, cache=True)
def qr_r(a: Any, fns: Any) -> Any:
    """The R factor (min(m, n), n) of ``a = Q R``."""
    f, _, info = _factor(a, fns)
    return _upper(f, info)


@njit(nogil=True, cache=True)
def qr(a: Any, fns: Any) -> tuple[Any, Any]:
    """``(Q, R)``: Q (m, min(m, n)) with orthonormal columns, R (min(m, n), n)."""
    f, tau, info = _factor(a, fns)
    r = _upper(f, info)
    return _orthonormal(f, tau, info, fns), r


@njit(nogil=True, cache=True)
def qr_q(a: Any, fns: Any) -> Any:
    """The orthonormal factor Q (m, min(m, n)) of ``a = Q R``."""
    f, tau, info = _factor(a, fns)
    return _orthonormal(f, tau, info, fns)


@njit(nogil=True, cache=True)
def _orthonormal(f: Any, tau: Any, info: int, fns: Any) -> Any:
    """``dorgqr``: Q from the reflectors in ``f``."""
    m, n = f.shape
    k = min(m, n)
    q = np.empty((k, m)).T
    q[:, :] = f[:, :k]
    lwork = 64 * max(k, 1)
    work = np.empty(lwork)
    ints = np.array([m, k, k, max(m, 1), lwork, 0], dtype=np.int32)
    d = _at(ints)
    argv = np.array([d, d + 4, d + 8, _at(q), d + 12, _at(tau), _at(work), d + 16, d + 20])
    if m and k and info == 0:
        _fcall(fns[_ORGQR], argv, 9)
    _keep(work)
    _keep(tau)
    if info != 0 or ints[5] != 0:
        q[:, :] = np.nan
    return q


@njit(nogil=True, cache=True)
def svd_right(a: Any, fns: Any) -> tuple[Any, Any]:
    """Singular values ``s`` (k,) descending and right singular vectors ``vt`` (k, n) of ``a``
    (m, n), ``k = min(m, n)``; the left ones are not computed."""
    m, n = a.shape
    k = min(m, n)
    f = _fcopy(a)
    s = np.empty(k)
    vt = np.empty((n, k)).T
    lwork = 5 * (m + n) + 64 * max(n, 1)
    work = np.empty(lwork)
    dummy = np.empty(1)
    ints = np.array([m, n, max(m, 1), 1, max(k, 1), lwork, 0], dtype=np.int32)
    jobs = np.array([ord("N"), ord("S")], dtype=np.uint8)
    d = _at(ints)
    jb = _at(jobs)
    argv = np.array([jb, jb + 1, d, d + 4, _at(f), d + 8, _at(s), _at(dummy), d + 12, _at(vt),
                     d + 16, _at(work), d + 20, d + 24])
    if k:
        _fcall(fns[_GESVD], argv, 14)
    _keep(f)
    _keep(work)
    _keep(dummy)
    _keep(jobs)
    if ints[6] != 0:
        s[:] = np.nan
        vt[:, :] = np.nan
    return s, vt


@njit(nogil=True, cache=True)
def eigh(a: Any, fns: Any) -> tuple[Any, Any]:
    """Eigenvalues (ascending) and eigenvectors of the symmetric ``a`` (its lower triangle)."""
    n = a.shape[0]
    v = _fcopy(a)
    w = np.empty(n)
    lwork = 64 * max(n, 1)
    work = np.empty(lwork)
    ints = np.array([n, max(n, 1), lwork, 0], dtype=np.int32)
    flags = np.array([ord("V"), ord("L")], dtype=np.uint8)
    d = _at(ints)
    fl = _at(flags)
    argv = np.array([fl, fl + 1, d, _at(v), d + 4, _at(w), _at(work), d + 8, d + 12])
    if n:
        _fcall(fns[_SYEV], argv, 9)
    _keep(work)
    _keep(flags)
    if ints[3] != 0:
        w[:] = np.nan
        v[:, :] = np.nan
    return w, v
