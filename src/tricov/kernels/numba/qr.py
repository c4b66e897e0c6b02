"""Householder QR pieces that NumPy and Numba do not offer, for compiled code: the R factor
alone (LAPACK's ``dgeqrf``, SciPy's, called by address so that the callers stay cacheable)."""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .calls import address

__all__ = ["geqrf_address", "qr_r"]


def geqrf_address() -> int:
    """Address of LAPACK's ``dgeqrf`` (SciPy's), the argument ``geqrf`` of the kernels here."""
    return address("dgeqrf")


@intrinsic
def _call8(typingctx: Any, fn: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any,
           a6: Any, a7: Any) -> Any:
    """Call the Fortran routine at address ``fn`` with 8 arguments given as addresses."""
    argtys = (a0, a1, a2, a3, a4, a5, a6, a7)
    if not all(isinstance(t, types.Integer) for t in (fn, *argtys)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr] * 8)
        values = [builder.inttoptr(context.cast(builder, v, t, types.int64), ptr)
                  for v, t in zip(args[1:], sig.args[1:], strict=True)]
        target = context.cast(builder, args[0], sig.args[0], types.int64)
        builder.call(builder.inttoptr(target, fnty.as_pointer()), values)
        return context.get_dummy_value()

    return types.void(fn, *argtys), codegen


@njit(nogil=True, cache=True)
def qr_r(a: Any, geqrf: int) -> Any:
    """The R factor (min(m, n) x n) of the QR factorization of ``a`` (Householder, no Q)."""
    m, n = a.shape
    f = np.asfortranarray(a)
    k = min(m, n)
    tau = np.empty(max(k, 1))
    lwork = 64 * max(n, 1)
    work = np.empty(lwork)
    dims = np.array([m, n, max(m, 1), lwork, 0], dtype=np.int32)
    d = np.int64(dims.ctypes.data)
    _call8(geqrf, d, d + 4, np.int64(f.ctypes.data), d + 8, np.int64(tau.ctypes.data),
           np.int64(work.ctypes.data), d + 12, d + 16)
    r = np.zeros((k, n))
    for c in range(n):
        for i in range(min(c + 1, k)):
            r[i, c] = f[i, c]
    return r
