"""Checking the arguments of a call and preparing its operands.

:class:`Operands` takes the caller's arrays, checks them (array type, 2-D, dtype, one dtype for
all, writeable outputs, no output overlapping itself or another operand), picks the executor of
their device, and inside its ``with`` block hands out logical views. Arrays whose strides allow it
(F- or C-ordered blocks, any leading dimension) are used in place; any other strides are copied
into a column-major buffer and, for outputs, copied back on exit, also when the call raises.
"""

from __future__ import annotations

import ctypes
import functools
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _calls, _plans
from ._keys import CUDA_DLPACK
from ._views import Mat, view_of
from .backends.base import Executor

__all__ = ["Operands", "as_matrix", "real_scalar", "refuse_capture", "scalar", "self_overlaps"]

SUPPORTED = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _is_cupy(x: Any) -> bool:
    return type(x).__module__.startswith("cupy")


def as_array(x: Any, name: str) -> Any:
    """The NumPy or CuPy array behind ``x`` (DLPack producers are wrapped without a copy)."""
    if isinstance(x, np.ndarray) or _is_cupy(x):
        return x
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        device_type = int(x.__dlpack_device__()[0])
        if device_type == 1:  # kDLCPU
            arr = np.from_dlpack(x)
            if not arr.flags.writeable:
                # NumPy marks DLPack imports read-only; the producer's memory is ours to write.
                arr = _writeable_alias(arr)
            return arr
        if device_type in CUDA_DLPACK:
            import cupy

            return cupy.from_dlpack(x)
        raise TypeError(f"{name} lives on a DLPack device of type {device_type}, which tricov "
                        "does not support")
    raise TypeError(f"{name} must be a NumPy or CuPy array (or a DLPack tensor), "
                    f"got {type(x).__name__}")


def as_matrix(x: Any, name: str, column: bool = True) -> Any:
    """``x``, or where it is a vector (1-D), the 2-D view of the same memory as one column
    (``column``) or one row of a matrix, so that right-hand sides may be a vector as in SciPy.
    A DLPack tensor is wrapped first (no copy), so the caller's own object sees the result."""
    if getattr(x, "ndim", None) != 1:
        return x
    arr = as_array(x, name)
    return arr[:, None] if column else arr[None, :]


def self_overlaps(x: Any) -> bool:
    """Whether two elements of the NumPy or CuPy array ``x`` share bytes (a view made with
    ``as_strided``, say), which an in-place output must not.

    Strides that nest (each, sorted by size, at least the span of the axes below it: every
    C/F-ordered array and block of one) answer at once; others are solved exactly by NumPy's
    bounded overlap solver where it is available, and count as overlapping where it gives up.
    """
    if not x.size:
        return False
    span = x.itemsize
    axes = [(abs(s), n) for n, s in zip(x.shape, x.strides, strict=True) if n > 1]
    for stride, n in sorted(axes):
        if stride < span:
            break
        span += (n - 1) * stride
    else:
        return False
    solver = _overlap_solver()
    if solver is None:  # pragma: no cover - a NumPy without its solver module
        return True
    try:
        return bool(solver(_address_alias(x), max_work=10**6))
    except np.exceptions.TooHardError:
        return True


@functools.cache
def _overlap_solver() -> Callable[..., bool] | None:
    """NumPy's exact test of an array's internal overlap (``internal_overlap``, in its
    ``_multiarray_tests`` module since NumPy 1.11: ``numpy._core`` from 2.0, ``numpy.core``
    before), or None where that module is missing."""
    import importlib

    for module in ("numpy._core._multiarray_tests", "numpy.core._multiarray_tests"):
        try:
            return importlib.import_module(module).internal_overlap
        except (ImportError, AttributeError):
            continue
    return None


def refuse_capture(name: str) -> None:
    """Raise ``RuntimeError`` where the current CUDA stream is capturing a graph: operation
    ``name`` reads its status (LAPACK's info) on the host at its end, which a capture cannot do,
    and CUDA would then invalidate the caller's whole capture. Called before any work."""
    import cupy

    if cupy.cuda.get_current_stream().is_capturing():
        raise RuntimeError(
            f"{name} reads its status on the host when it ends, which a CUDA graph capture "
            "cannot do; call it outside the capture (trsm, trmm, syrk, potrs and lauum can be "
            "captured), or in tricov.batched with check=False, which leaves the status on the "
            "device")


def _writeable_alias(arr: np.ndarray) -> np.ndarray:
    """A writeable NumPy view of the same memory as ``arr``."""
    iface = dict(arr.__array_interface__)
    iface["data"] = (iface["data"][0], False)

    class _Holder:
        __array_interface__ = iface
        base = arr

    return np.asarray(_Holder())


def scalar(value: Any, name: str, complex_: bool) -> complex | float:
    """A Python scalar for ``value``, complex only if the data are complex."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    z = complex(value)
    if complex_:
        return z
    if z.imag != 0:
        raise TypeError(f"{name} is complex ({value!r}) but the arrays are real")
    return z.real


def real_scalar(value: Any, name: str) -> float:
    """A real Python scalar for ``value`` (herk's alpha and beta)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    z = complex(value)
    if z.imag != 0:
        raise TypeError(f"{name} must be real for syrk/herk, got {value!r}")
    return z.real


@dataclass
class _Operand:
    name: str
    user: Any
    written: bool
    work: Any = None


def _address_alias(x: Any) -> np.ndarray:
    """A NumPy array over the same addresses as ``x`` (host or device), never dereferenced.

    ``numpy.shares_memory`` only does arithmetic on addresses, shapes and strides, and a ctypes
    buffer placed at an address reads nothing, so an alias of a device array answers overlap
    questions exactly without touching GPU memory.
    """
    if not _is_cupy(x):
        return x
    low = sum(min(0, (n - 1) * s) for n, s in zip(x.shape, x.strides, strict=True))
    high = sum(max(0, (n - 1) * s) for n, s in zip(x.shape, x.strides, strict=True))
    span = high - low + x.dtype.itemsize
    raw = (ctypes.c_char * span).from_address(x.data.ptr + low)
    return np.ndarray(x.shape, dtype=x.dtype, buffer=raw, offset=-low, strides=x.strides)


def _overlap(x: Any, y: Any) -> bool:
    try:
        return bool(np.shares_memory(_address_alias(x), _address_alias(y), max_work=10**6))
    except np.exceptions.TooHardError:
        return True


@functools.cache
def _executor_class(gpu: bool) -> type[Executor]:
    # Imported on first use (the GPU one needs CuPy), then kept: an import statement in the
    # function would resolve the package on every call.
    if gpu:
        from .backends.cuda import CUDAExecutor

        return CUDAExecutor
    from .backends.cpu import CPUExecutor

    return CPUExecutor


def executor_for(array: Any, dtype: np.dtype) -> Executor:
    """The executor of the array's device, for one dtype."""
    return _executor_class(_is_cupy(array))(dtype)


class Operands:
    """The checked operands of one call.

    Parameters
    ----------
    *items : (name, array, written)
        Each operand with the name used in error messages and whether the call writes it.
    call : tuple, optional
        The call's replay key (:mod:`tricov._calls`), under which its steps are recorded.
    checked : str, optional
        The name of an operation that reads its status on the host when it ends: on the GPU it
        refuses a caller's stream capture (:func:`refuse_capture`).

    Attributes
    ----------
    arrays : list
        The operands as NumPy/CuPy arrays (DLPack tensors wrapped, no copy).
    dtype : numpy.dtype
    complex : bool
    ex : Executor
        The executor of the operands' device, available inside the ``with`` block.
    xp : module
        numpy or cupy.
    """

    def __init__(self, *items: tuple[str, Any, bool], call: tuple | None = None,
                 checked: str | None = None) -> None:
        ops = [_Operand(name, as_array(x, name), written) for name, x, written in items]
        for op in ops:
            if op.user.ndim != 2:
                raise ValueError(f"{op.name} must be 2-D, got shape {tuple(op.user.shape)}")
            if np.dtype(op.user.dtype) not in SUPPORTED:
                raise TypeError(f"{op.name} has dtype {op.user.dtype}; tricov supports float32, "
                                "float64, complex64 and complex128")
            if op.written and not _is_cupy(op.user) and not op.user.flags.writeable:
                raise ValueError(f"{op.name} is read-only, but the operation writes it in place")
            if op.written and self_overlaps(op.user):
                raise ValueError(f"{op.name} overlaps itself in memory (two of its elements "
                                 "share bytes); the output of an in-place operation must not")
        dtypes = {np.dtype(op.user.dtype) for op in ops}
        if len(dtypes) > 1:
            desc = ", ".join(f"{op.name} is {op.user.dtype}" for op in ops)
            raise TypeError(f"all operands must have one dtype ({desc})")
        kinds = {_is_cupy(op.user) for op in ops}
        if len(kinds) > 1:
            raise TypeError("operands must all be on the CPU or all on the GPU")
        for i, op in enumerate(ops):
            for other in ops[i + 1:]:
                if (op.written or other.written) and op.user.size and other.user.size \
                        and _overlap(op.user, other.user):
                    out, inp = (op, other) if op.written else (other, op)
                    raise ValueError(f"{out.name} overlaps {inp.name} in memory; the output of "
                                     "an in-place operation must not share memory with another "
                                     "operand")
        if checked and _is_cupy(ops[0].user):
            refuse_capture(checked)
        self._ops = ops
        self.arrays = [op.user for op in ops]
        self.dtype = dtypes.pop()
        self.complex = self.dtype.kind == "c"
        if _is_cupy(ops[0].user):
            import cupy

            self.xp: Any = cupy
        else:
            self.xp = np
        self.ex: Executor | None = None  # made inside the device context, by __enter__
        self._runner: Executor | None = None
        # The steps a replay of this call would take (tricov._calls), while it may be recorded.
        self._call = call
        self._steps: list[tuple[int, Any]] | None = [] if call is not None else None

    def __enter__(self) -> list[Mat]:
        self._device = None
        if _is_cupy(self.arrays[0]):
            self._device = self.arrays[0].device
            self._device.__enter__()
        self.ex = self._runner = executor_for(self.arrays[0], self.dtype)
        views = []
        for op in self._ops:
            v = view_of(op.user)
            if v is None:
                op.work = self.xp.asfortranarray(op.user)
                v = view_of(op.work)
                self._steps = None
            views.append(v)
        return views

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None and self._steps is not None:
            _calls.keep(self._call, self._steps)
        try:
            for op in self._ops:
                if op.work is not None and op.written:
                    op.user[...] = op.work
                op.work = None
        finally:
            if self._device is not None:
                self._device.__exit__(None, None, None)

    def run(self, fn: Any, *args: Any) -> None:
        """Run a recursion ``fn(ex, *args)`` on this call's executor (replaying a captured CUDA
        graph when the same call was seen before; see :mod:`tricov._plans`).

        Afterwards :attr:`ex` is the executor whose ``info`` describes this run: a replayed
        plan's own. Later runs still start from the executor of the call, which works on the
        caller's stream (a plan's executor was bound to the private stream it was captured on).
        """
        self.ex, plan = _plans.run(self._runner, fn, *args)
        if self._steps is not None:
            if plan is None:
                self._steps = None
            else:
                self._steps.append((_calls.PLAN, plan))

    def raise_failure(self, error: type[Exception]) -> None:
        """Raise ``error(info)`` where the last run reports a failure (:attr:`ex`'s info)."""
        info = self.ex.info
        if self._steps is not None:
            self._steps.append((_calls.FAILURE, error))
        if info:
            raise error(info)

    def test(self, test: Callable[[Any, Any], None], index: int) -> None:
        """Run ``test(xp, array)`` on operand ``index`` (the caller's array), a check of its
        data that raises; a replay of the call runs it again."""
        if self._steps is not None:
            self._steps.append((_calls.TEST, (test, index)))
        test(self.xp, self.arrays[index])

    def unrecorded(self) -> None:
        """Mark the call as doing work that a replay would not repeat."""
        self._steps = None

    def working(self, index: int) -> Any:
        """The memory the call works on for operand ``index`` (the array, or its copy)."""
        op = self._ops[index]
        return op.work if op.work is not None else op.user

    def conj_inplace(self, index: int) -> None:
        """Conjugate operand ``index`` (its working memory) in place."""
        self.unrecorded()
        w = self.working(index)
        self.xp.conjugate(w, out=w)
