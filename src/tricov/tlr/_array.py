"""Array helpers shared by the TLR modules, written for any NumPy-compatible array module.

Every function takes the array module ``xp`` from its operands (:func:`array_module`), so the
same code runs on NumPy arrays now and on CuPy arrays later.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["array_module", "asnumpy", "fro2", "herm", "real_dtype", "symmetrize_lower"]

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
    """Squared Frobenius norm over ``axis`` (default: the last two axes; None: all)."""
    xp = array_module(x)
    if axis is None:
        flat = x.reshape(-1)
        return float(xp.vdot(flat, flat).real)
    if xp.iscomplexobj(x):
        return (x.real * x.real + x.imag * x.imag).sum(axis=axis)
    return (x * x).sum(axis=axis)


def real_dtype(dtype: Any) -> np.dtype:
    """The real dtype of the same precision (float32 for complex64, ...)."""
    return np.dtype(np.finfo(np.dtype(dtype)).dtype)


def symmetrize_lower(a: Any) -> Any:
    """The square ``a`` with its strict upper triangle replaced by the conjugate of the lower."""
    xp = array_module(a)
    return xp.tril(a) + xp.tril(a, -1).T.conj()
