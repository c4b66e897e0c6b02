"""Thin bindings to the BLAS and LAPACK that SciPy ships, by function pointer.

SciPy exports every BLAS/LAPACK routine of its ``cython_blas`` and ``cython_lapack`` modules as a
PyCapsule holding a C function pointer with the Fortran calling convention (every argument by
address). We call those pointers through ctypes with raw addresses, so an operand is never
copied, any leading dimension works, and the GIL is released during the call.

Each function here is one routine family over the four precisions, taking the dtype first and
then the routine's arguments in Fortran order: matrices as addresses, sizes as ints, option
letters as bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.linalg.cython_blas as _cython_blas
import scipy.linalg.cython_lapack as _cython_lapack

__all__ = ["gemm", "herk", "lauum", "one_thread", "posv", "potrf", "potri", "potrs", "routine",
           "trmm", "trsm", "trtri"]

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}

# Option letters live at fixed addresses for the life of the process.
_LETTERS = {ch: ctypes.create_string_buffer(ch, 2) for ch in (b"N", b"T", b"C", b"L", b"R", b"U")}
_ADDR = {ch: ctypes.addressof(buf) for ch, buf in _LETTERS.items()}

_pyapi = ctypes.pythonapi
_pyapi.PyCapsule_GetName.restype = ctypes.c_char_p
_pyapi.PyCapsule_GetName.argtypes = [ctypes.py_object]
_pyapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pyapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@functools.cache
def routine(name: str) -> Callable[..., None]:
    """The BLAS/LAPACK routine ``name`` (e.g. ``'dtrsm'``) as a ctypes function of addresses."""
    capsule = _cython_blas.__pyx_capi__.get(name) or _cython_lapack.__pyx_capi__[name]
    signature = _pyapi.PyCapsule_GetName(capsule)
    pointer = _pyapi.PyCapsule_GetPointer(capsule, signature)
    nargs = signature.count(b",") + 1
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs))(pointer)


def prefix(dtype: np.dtype) -> str:
    """The BLAS precision letter of a dtype (s, d, c or z)."""
    return _PREFIX[np.dtype(dtype)]


def _ints(*values: int) -> tuple[ctypes.Array, int]:
    buf = (ctypes.c_int * len(values))(*values)
    return buf, ctypes.addressof(buf)


_SINGLE = {np.dtype(np.float32), np.dtype(np.complex64)}


def _scalars(dtype: np.dtype, *values: complex,
             real: bool = False) -> tuple[ctypes.Array, int, int]:
    """Scalars in the routine's precision: (buffer, address, bytes per scalar).

    ``real`` gives herk's real alpha and beta for complex dtypes.
    """
    ctype = ctypes.c_float if dtype in _SINGLE else ctypes.c_double
    if dtype.kind == "c" and not real:
        flat = [x for v in values for x in (complex(v).real, complex(v).imag)]
        width = 2
    else:
        flat = [complex(v).real for v in values]
        width = 1
    buf = (ctype * len(flat))(*flat)
    return buf, ctypes.addressof(buf), width * ctypes.sizeof(ctype)


def gemm(dtype: np.dtype, ta: bytes, tb: bytes, m: int, n: int, k: int, alpha: complex,
         a: int, lda: int, b: int, ldb: int, beta: complex, c: int, ldc: int) -> None:
    """``C = alpha op(A) op(B) + beta C``."""
    ib, ip = _ints(m, n, k, lda, ldb, ldc)
    sb, sp, step = _scalars(dtype, alpha, beta)
    routine(prefix(dtype) + "gemm")(_ADDR[ta], _ADDR[tb], ip, ip + 4, ip + 8, sp, a, ip + 12,
                                    b, ip + 16, sp + step, c, ip + 20)


def _trxm(kind: str, dtype: np.dtype, side: bytes, uplo: bytes, trans: bytes, diag: bytes,
          m: int, n: int, alpha: complex, a: int, lda: int, b: int, ldb: int) -> None:
    ib, ip = _ints(m, n, lda, ldb)
    sb, sp, _ = _scalars(dtype, alpha)
    routine(prefix(dtype) + kind)(_ADDR[side], _ADDR[uplo], _ADDR[trans], _ADDR[diag], ip,
                                  ip + 4, sp, a, ip + 8, b, ip + 12)


def trsm(dtype: np.dtype, side: bytes, uplo: bytes, trans: bytes, diag: bytes, m: int, n: int,
         alpha: complex, a: int, lda: int, b: int, ldb: int) -> None:
    """Solve ``op(A) X = alpha B`` (side L) or ``X op(A) = alpha B`` (side R), X over B."""
    _trxm("trsm", dtype, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)


def trmm(dtype: np.dtype, side: bytes, uplo: bytes, trans: bytes, diag: bytes, m: int, n: int,
         alpha: complex, a: int, lda: int, b: int, ldb: int) -> None:
    """``B = alpha op(A) B`` (side L) or ``B = alpha B op(A)`` (side R)."""
    _trxm("trmm", dtype, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)


def herk(dtype: np.dtype, uplo: bytes, trans: bytes, n: int, k: int, alpha: float, a: int,
         lda: int, beta: float, c: int, ldc: int) -> None:
    """``C = alpha op(A) op(A)^H + beta C`` on one triangle (syrk for real dtypes)."""
    ib, ip = _ints(n, k, lda, ldc)
    complex_ = dtype.kind == "c"
    sb, sp, step = _scalars(dtype, alpha, beta, real=True)
    name = prefix(dtype) + ("herk" if complex_ else "syrk")
    routine(name)(_ADDR[uplo], _ADDR[trans], ip, ip + 4, sp, a, ip + 8, sp + step, c, ip + 12)


def _lapack(name: str, dtype: np.dtype, letters: tuple[bytes, ...], ints_before: tuple[int, ...],
            matrices: tuple[tuple[int, int], ...]) -> int:
    """Call a LAPACK routine of the shape (letters, sizes, (matrix, ld)..., info)."""
    values = list(ints_before) + [ld for _, ld in matrices] + [0]
    ib, ip = _ints(*values)
    args: list[int] = [_ADDR[x] for x in letters]
    args += [ip + 4 * i for i in range(len(ints_before))]
    for j, (ptr, _) in enumerate(matrices):
        args += [ptr, ip + 4 * (len(ints_before) + j)]
    args.append(ip + 4 * (len(values) - 1))
    routine(prefix(dtype) + name)(*args)
    return int(ib[len(values) - 1])


def potrf(dtype: np.dtype, uplo: bytes, n: int, a: int, lda: int) -> int:
    """Cholesky factorization; returns LAPACK's info."""
    return _lapack("potrf", dtype, (uplo,), (n,), ((a, lda),))


def trtri(dtype: np.dtype, uplo: bytes, diag: bytes, n: int, a: int, lda: int) -> int:
    """Triangular inverse in place; returns LAPACK's info."""
    return _lapack("trtri", dtype, (uplo, diag), (n,), ((a, lda),))


def lauum(dtype: np.dtype, uplo: bytes, n: int, a: int, lda: int) -> int:
    """``L^H L`` (uplo L) or ``U U^H`` (uplo U) in place; returns LAPACK's info."""
    return _lapack("lauum", dtype, (uplo,), (n,), ((a, lda),))


def potri(dtype: np.dtype, uplo: bytes, n: int, a: int, lda: int) -> int:
    """Inverse from a Cholesky factor; returns LAPACK's info."""
    return _lapack("potri", dtype, (uplo,), (n,), ((a, lda),))


def potrs(dtype: np.dtype, uplo: bytes, n: int, nrhs: int, a: int, lda: int, b: int,
          ldb: int) -> int:
    """Solve with a Cholesky factor; returns LAPACK's info."""
    return _lapack("potrs", dtype, (uplo,), (n, nrhs), ((a, lda), (b, ldb)))


def posv(dtype: np.dtype, uplo: bytes, n: int, nrhs: int, a: int, lda: int, b: int,
         ldb: int) -> int:
    """Factor and solve; returns LAPACK's info."""
    return _lapack("posv", dtype, (uplo,), (n, nrhs), ((a, lda), (b, ldb)))


_controller: Any = None


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """BLAS on one thread inside the block: every BLAS library loaded (SciPy's among them),
    through one threadpoolctl controller made at the first use, where
    ``threadpoolctl.threadpool_limits`` looks the libraries up again on every entry (batched
    TRMM of 4 members of order 64 on 2 cores: 726-737 -> 149-157 us a call,
    ``benchmarks/cpu_batched_call.py``, ``benchmarks/cpu_batched.txt``)."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield
