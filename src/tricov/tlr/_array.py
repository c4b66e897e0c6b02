"""Array helpers shared by the TLR modules, written for any NumPy-compatible array module.

Every function takes the array module ``xp`` from its operands (:func:`array_module`), so the
same code runs on NumPy arrays now and on CuPy arrays later.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["array_module", "asnumpy", "fro2", "herm", "real_dtype", "symmetrize_lower",
           "thin_svd", "zero_upper"]

SUPPORTED = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def array_module(x: Any) -> ModuleType:
    """The array module (NumPy or CuPy) of ``x``."""
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def asnumpy(x: Any) -> np.ndarray:
    """``x`` as a NumPy array on the host (a copy only for device arrays)."""
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def herm(x: Any) -> Any:
    """The conjugate transpose of the last two axes (a view for real data)."""
    return x.conj().swapaxes(-1, -2)


def fro2(x: Any, axis: tuple[int, ...] | None = (-2, -1)) -> Any:
    """Squared Frobenius norm over ``axis`` (default: the last two axes; None: all, a float)."""
    xp = array_module(x)
    if axis is None:
        flat = x.reshape(-1)
        if xp is not np and not xp.iscomplexobj(x):
            from cupy import cublas

            return float(cublas.dot(flat, flat))  # one pass, no temporary
        return float(xp.vdot(flat, flat).real)
    if xp.iscomplexobj(x):
        return (x.real * x.real + x.imag * x.imag).sum(axis=axis)
    axes = sorted(a % x.ndim for a in axis)
    if xp is np or axes != list(range(x.ndim - len(axes), x.ndim)) or not x.flags.c_contiguous:
        return (x * x).sum(axis=axis)
    # CuPy reduces with one block per result: with few results, cut each into ``c`` parts
    outer = x.shape[:x.ndim - len(axes)]
    length = int(np.prod(x.shape[x.ndim - len(axes):]))
    c = math.gcd(length, 256)
    parts = _sumsq()(x.reshape(*outer, c, length // c), axis=len(outer) + 1)
    return parts.sum(axis=-1)


@functools.cache
def _sumsq() -> Any:
    import cupy

    return cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "tricov_sumsq")


def thin_svd(a: Any) -> tuple[Any, Any, Any]:
    """Thin SVD ``a = x diag(s) yh`` of a stack of tall matrices ``(B, m, p)``, ``m >= p``.

    NumPy: :func:`numpy.linalg.svd`. CuPy: a batched QR on the device, then the SVDs of the
    small ``p x p`` triangular factors on the host (LAPACK), whose left vectors go back to
    multiply Q: cuSOLVER's batched SVD loops over members beyond 32 x 32 and was the largest
    cost of GPU compression (3.4 of 8.2 s at n = 50000).
    """
    xp = array_module(a)
    if xp is np or a.shape[-2] < a.shape[-1]:
        return xp.linalg.svd(a, full_matrices=False)
    q, r = xp.linalg.qr(a)
    u, s, yh = np.linalg.svd(r.get(), full_matrices=False)
    return q @ xp.asarray(u), xp.asarray(s), xp.asarray(yh)


def real_dtype(dtype: Any) -> np.dtype:
    """The real dtype of the same precision (float32 for complex64, ...)."""
    return np.dtype(np.finfo(np.dtype(dtype)).dtype)


_BLOCK = 256


def symmetrize_lower(a: Any) -> Any:
    """Overwrite the strict upper triangle of the square ``a`` with the conjugate of the lower.

    Done in place (on a GPU by one kernel; on the host by blocks of rows, with no ``n x n``
    temporaries); returns ``a``.
    """
    xp = array_module(a)
    n = a.shape[0]
    if xp is not np:
        _upper_kernel()(np.int64(n), True, a, size=n * n)
        return a
    for r0 in range(0, n, _BLOCK):
        r1 = min(n, r0 + _BLOCK)
        a[r0:r1, r1:] = a[r1:, r0:r1].T.conj()
        d = a[r0:r1, r0:r1]
        d[...] = xp.tril(d) + xp.tril(d, -1).T.conj()
    return a


def zero_upper(a: Any) -> Any:
    """Zero the strict upper triangle of the square ``a`` in place; returns ``a``."""
    xp = array_module(a)
    n = a.shape[0]
    if xp is not np:
        _upper_kernel()(np.int64(n), False, a, size=n * n)
        return a
    for r0 in range(0, n, _BLOCK):
        r1 = min(n, r0 + _BLOCK)
        a[r0:r1, r1:] = 0
        d = a[r0:r1, r0:r1]
        d[...] = xp.tril(d)
    return a


@functools.cache
def _upper_kernel() -> Any:
    import cupy

    # Element (r, c) above the diagonal of the square ``a`` (any strides) gets the conjugate
    # of (c, r) (``mirror``) or zero; the two triangles are disjoint, so in place is safe.
    return cupy.ElementwiseKernel(
        "int64 n, bool mirror", "raw T a",
        """
        ptrdiff_t r = i / n, c = i % n;
        if (c > r) a[i] = mirror ? tricov_conj(a[c * n + r]) : T(0);
        """,
        "tricov_upper",
        preamble="""
        __device__ float tricov_conj(float x) { return x; }
        __device__ double tricov_conj(double x) { return x; }
        template <typename C> __device__ C tricov_conj(C x) { return conj(x); }
        """)
