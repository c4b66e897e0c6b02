"""The operands of a batched call: stacks or lists of matrices, checked and grouped.

A batched operand is either a *stack*, one array of shape ``(..., rows, cols)`` whose leading
dimensions are the batch, or a *list* (or tuple) of 2-D arrays, whose shapes may differ (the
pointer-array form). Both become :class:`Group` objects: the members that share a shape and a
memory layout, each described by one logical view (:class:`tricov._views.Mat`, its ``ptr`` the
byte offset of element (0, 0) within a member, 0) and the address of every member. Executors
then work on a group as on one matrix with many addresses.

Members whose strides allow it (each matrix F- or C-ordered inside, any leading dimension, any
batch strides) are used in place; other members are copied into column-major buffers and, for
outputs, copied back on exit, also when the call raises.

Members live on the host (NumPy) or on one GPU (CuPy, or any DLPack tensor of a CUDA device,
wrapped without a copy); every member of every operand of a call on the same device. For GPU
members the addresses stay on the device: a stack whose batch dimensions collapse to one
stride is described by a base address and that stride (:attr:`Group.affine`), any other stack
by a device array computed on the device, and a list by its addresses copied to the device.

Batch order: members are numbered in C order of the batch dimensions for a stack, by list
position for a list; per-member results (``info``) have the batch shape (a stack) or the list's
length (a list).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .._frontend import SUPPORTED, _address_alias, _is_cupy, as_array, self_overlaps
from .._views import Mat, view_from, view_of
from ..kernels.numba.members import stack_addresses

__all__ = ["SLOT_BITS", "Batch", "Group", "Operand", "check_square", "slot_of"]

#: A batched view's ``ptr`` is ``slot << SLOT_BITS | offset``: the operand it belongs to and
#: the byte offset of its element (0, 0) within a member of that operand.
SLOT_BITS = 48


def slot_of(view: Mat) -> tuple[int, int]:
    """The operand slot and the byte offset within a member of a batched view."""
    return view.ptr >> SLOT_BITS, view.ptr & ((1 << SLOT_BITS) - 1)


@dataclass(frozen=True)
class Group:
    """Members of every operand of a call that share shapes and layouts.

    Attributes
    ----------
    views : tuple of Mat
        Per operand ``k``, the logical view of each of its members, ``ptr`` ``k << SLOT_BITS``
        (the views derived from it by the algebra of :mod:`tricov._views` keep their slot).
    ptrs : int64 array (operands, members), or None
        Address of memory element (0, 0) of each member of each operand: a NumPy array for
        host members, a CuPy array for device members; None where :attr:`affine` gives them.
    index : int64 array (members) or None
        Batch index (flat, see the module notes) of each member; None for all of them in order.
    affine : tuple of (int, int), or None
        Device members only, with ``ptrs`` None: per operand, the address of member 0 and the
        byte stride from one member to the next (member ``k`` at ``base + k * stride``).
    count : int
        Number of members where ``ptrs`` is None.
    """

    views: tuple[Mat, ...]
    ptrs: Any
    index: np.ndarray | None
    affine: tuple[tuple[int, int], ...] | None = None
    count: int = 0

    @property
    def size(self) -> int:
        """Number of members."""
        return self.count if self.ptrs is None else int(self.ptrs.shape[1])


@dataclass
class Operand:
    """One operand of a call as the caller gave it, with its working copies."""

    name: str
    user: Any
    written: bool
    is_list: bool
    arrays: list[Any] = field(default_factory=list)
    #: Per member of a list: its in-place view (None: empty, or strides that need a copy).
    views: list[Mat | None] = field(default_factory=list)
    #: A stack's address (of element (0, ..., 0)).
    at: int = 0
    _copies: list[tuple[Any, Any]] = field(default_factory=list)

    def shape_of(self, k: int) -> tuple[int, int]:
        """Shape of member ``k`` (a list) or of every member (a stack)."""
        arr = self.arrays[k] if self.is_list else self.arrays[0]
        return int(arr.shape[-2]), int(arr.shape[-1])


def _as_operand(name: str, x: Any, written: bool) -> Operand:
    if isinstance(x, (list, tuple)):
        arrays = [as_array(m, f"{name}[{k}]") for k, m in enumerate(x)]
        for k, arr in enumerate(arrays):
            if arr.ndim != 2:
                raise ValueError(f"{name}[{k}] must be 2-D, got shape {tuple(arr.shape)}")
        views = [view_of(arr) if arr.size else None for arr in arrays]
        return Operand(name, x, written, True, arrays, views)
    arr = as_array(x, name)
    if arr.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (..., rows, cols), got shape "
                         f"{tuple(arr.shape)}")
    return Operand(name, x, written, False, [arr], at=_address(arr))


def _device_of(arr: Any) -> int | None:
    """The CUDA device of a CuPy array, None for a NumPy array."""
    return int(arr.data.device_id) if _is_cupy(arr) else None


def _address(arr: Any) -> int:
    """Address of element (0, ..., 0) of a NumPy or CuPy array."""
    return arr.data.ptr if _is_cupy(arr) else arr.__array_interface__["data"][0]


def _interval(op: Operand, k: int) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` that hold the elements of member ``k`` of a list, or of a
    stack."""
    if op.is_list:
        view = op.views[k]
        if view is not None:
            return view.ptr, view.ptr + ((view.mcols - 1) * view.ld + view.mrows) * view.itemsize
        arr, at = op.arrays[k], _address(op.arrays[k])
    else:
        arr, at = op.arrays[0], op.at
    layout = _stack_layout(0, arr.shape, arr.strides, arr.itemsize)
    return at + layout.lo, at + layout.hi


class _Layout(NamedTuple):
    """What a stack's shape and strides say about its members (:func:`_stack_layout`)."""

    #: The in-place logical view of a member (``ptr``: the slot, offset 0); None where the
    #: strides need a copy.
    view: Mat | None
    #: Byte stride from one member to the next (C order) where one stride serves, else None.
    step: int | None
    #: The bytes that hold the elements: ``[address + lo, address + hi)``.
    lo: int
    hi: int


@functools.lru_cache(maxsize=512)
def _stack_layout(slot: int, shape: tuple[int, ...], strides: tuple[int, ...],
                  itemsize: int) -> _Layout:
    """The :class:`_Layout` of operand ``slot``, a stack of this shape, byte strides and item
    size (calls on like stacks, the usual case, look it up instead of working it out)."""
    rows, cols = shape[-2:]
    if rows == 0 or cols == 0:
        view = Mat(slot << SLOT_BITS, rows, cols, max(1, rows), 0, itemsize)
    else:
        view = view_from(0, (rows, cols), strides[-2:], itemsize)
        if view is not None:
            view = view._replace(ptr=slot << SLOT_BITS)
    lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides, strict=True))
    hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides, strict=True)) + itemsize
    return _Layout(view, _member_stride(shape[:-2], strides[:-2]), lo, hi)


def _check_overlaps(ops: list[Operand]) -> None:
    """No written member may share memory with any other member, of any operand."""
    spans = []
    for op in ops:
        for k, arr in enumerate(op.arrays):
            if arr.size:
                lo, hi = _interval(op, k)
                spans.append((lo, hi, op, k))
    spans.sort(key=lambda t: t[0])
    active: list[tuple[int, int, Operand, int]] = []
    for span in spans:
        lo = span[0]
        active = [s for s in active if s[1] > lo]
        for other in active:
            if not (span[2].written or other[2].written):
                continue
            a, b = span[2].arrays[span[3]], other[2].arrays[other[3]]
            if _shares(a, b):
                raise ValueError(_overlap_message(span, other))
        active.append(span)


def _shares(a: Any, b: Any) -> bool:
    try:
        return bool(np.shares_memory(_address_alias(a), _address_alias(b), max_work=10**6))
    except np.exceptions.TooHardError:
        return True


def _overlap_message(x, y) -> str:
    def name(s):
        op, k = s[2], s[3]
        return f"{op.name}[{k}]" if op.is_list else op.name

    if x[2] is y[2]:
        return (f"{name(x)} and {name(y)} share memory; the members of an output must not "
                "overlap")
    out, other = (x, y) if x[2].written else (y, x)
    return (f"{name(out)} overlaps {name(other)} in memory; the output of an in-place "
            "operation must not share memory with another operand")


class Batch:
    """The checked operands of one batched call, grouped for the executors.

    Parameters
    ----------
    *items : (name, operand, written)
        Each operand with the name used in messages and whether the call writes it. All
        stacks or all lists.

    Attributes
    ----------
    ops : list of Operand
    dtype : numpy.dtype
    is_list : bool
    device : int or None
        The CUDA device of the members (CuPy arrays), None for host members (NumPy).
    shape : tuple of int
        The batch shape: the leading dimensions of a stack, ``(len(list),)`` for a list.
    count : int
        Number of members.
    """

    def __init__(self, *items: tuple[str, Any, bool]) -> None:
        ops = [_as_operand(name, x, written) for name, x, written in items]
        kinds = {op.is_list for op in ops}
        if len(kinds) > 1:
            names = " and ".join(op.name for op in ops)
            raise TypeError(f"{names} must be all stacks (arrays) or all lists of matrices")
        self.is_list = kinds.pop()
        self.ops = ops
        dtypes = {np.dtype(a.dtype) for op in ops for a in op.arrays}
        for dt in dtypes:
            if dt not in SUPPORTED:
                raise TypeError(f"dtype {dt} is not supported; tricov supports float32, "
                                "float64, complex64 and complex128")
        if len(dtypes) > 1:
            raise TypeError("all matrices must have one dtype, got "
                            + ", ".join(sorted(d.name for d in dtypes)))
        self.dtype = dtypes.pop() if dtypes else np.dtype(np.float64)
        devices = {_device_of(a) for op in ops for a in op.arrays}
        if len(devices) > 1:
            where = ", ".join("the CPU" if d is None else f"GPU {d}"
                              for d in sorted(devices, key=lambda d: -1 if d is None else d))
            raise TypeError(f"all matrices must live on one device, got members on {where}")
        #: The CUDA device of the members, None for the host.
        self.device: int | None = devices.pop() if devices else None
        for op in ops:
            if not op.written:
                continue
            for k, arr in enumerate(op.arrays):
                where = f"{op.name}[{k}]" if op.is_list else op.name
                if self.device is None and not arr.flags.writeable:
                    raise ValueError(f"{where} is read-only, but the operation writes it in place")
                # A member viewed in place cannot overlap itself; a stack's members may overlap.
                if (not op.is_list or op.views[k] is None) and self_overlaps(arr):
                    raise ValueError(f"{where} overlaps itself in memory (two of its elements "
                                     "share bytes); the output of an in-place operation must "
                                     "not")
        if self.is_list:
            counts = {len(op.arrays) for op in ops}
            if len(counts) > 1:
                desc = ", ".join(f"{op.name} has {len(op.arrays)}" for op in ops)
                raise ValueError(f"the lists must have one length ({desc})")
            self.shape: tuple[int, ...] = (counts.pop(),)
        else:
            shapes = {op.arrays[0].shape[:-2] for op in ops}
            if len(shapes) > 1:
                desc = ", ".join(f"{op.name} has {op.arrays[0].shape[:-2]}" for op in ops)
                raise ValueError(f"the stacks must have one batch shape ({desc})")
            self.shape = shapes.pop()
        #: Number of members.
        self.count = math.prod(self.shape)
        if len(ops) > 1 or self.is_list:
            _check_overlaps(ops)

    @property
    def xp(self) -> Any:
        """The array module of the members: numpy or cupy."""
        if self.device is None:
            return np
        import cupy

        return cupy

    def on_device(self) -> contextlib.AbstractContextManager:
        """A context in which the members' device is the current one (nothing for the host)."""
        if self.device is None:
            return contextlib.nullcontext()
        import cupy

        return cupy.cuda.Device(self.device)

    # ------------------------------------------------------------------ groups
    def __enter__(self) -> list[Group]:
        self._scope = self.on_device()
        self._scope.__enter__()
        try:
            if self.count == 0:
                return []
            if self.is_list:
                return self._list_groups()
            return self._stack_groups()
        except BaseException:
            self._scope.__exit__(None, None, None)
            raise

    @property
    def copied(self) -> bool:
        """Whether members were copied to a working layout (copied back on exit)."""
        return any(op._copies for op in self.ops)

    def __exit__(self, *exc: object) -> None:
        try:
            for op in self.ops:
                if op.written:
                    for user, work in op._copies:
                        user[...] = work
                op._copies.clear()
        finally:
            self._scope.__exit__(None, None, None)

    def _stack_groups(self) -> list[Group]:
        views = []
        layouts: list[tuple[int, tuple[int, ...], tuple[int, ...], int | None]] = []
        xp = self.xp
        for slot, op in enumerate(self.ops):
            arr = op.arrays[0]
            at = op.at
            layout = _stack_layout(slot, arr.shape, arr.strides, arr.itemsize)
            if layout.view is None:
                work = xp.ascontiguousarray(arr)
                op._copies.append((arr, work))
                arr, at = work, _address(work)
                layout = _stack_layout(slot, arr.shape, arr.strides, arr.itemsize)
            views.append(layout.view)
            layouts.append((at, arr.shape[:-2], arr.strides[:-2], layout.step))
        if self.device is not None and all(step is not None for *_, step in layouts):
            affine = tuple((base, step) for base, _, _, step in layouts)
            return [Group(tuple(views), None, None, affine, self.count)]
        # Member addresses where no one stride serves (and for host stacks, which the CPU
        # engine reads by address): NumPy arithmetic or a Numba loop for host stacks; for
        # device stacks, CuPy array arithmetic on the device (no copy from the host, safe while
        # a CUDA graph is captured).
        ptrs = xp.empty((len(self.ops), self.count), np.int64)
        for slot, (base, shape, strides, step) in enumerate(layouts):
            if self.device is None:
                if step is not None:  # (step 0: one member)
                    ptrs[slot] = (np.arange(base, base + step * self.count, step, dtype=np.int64)
                                  if step else base)
                else:
                    stack_addresses(ptrs[slot], base, np.array(shape, np.int64),
                                    np.array(strides, np.int64))
                continue
            row = ptrs[slot].reshape(self.shape)
            row[...] = base
            for d, (extent, stride) in enumerate(zip(shape, strides, strict=True)):
                if extent > 1:
                    dims = [1] * row.ndim
                    dims[d] = extent
                    row += (xp.arange(extent, dtype=np.int64) * stride).reshape(dims)
        return [Group(tuple(views), ptrs, None)]

    def _list_groups(self) -> list[Group]:
        keys: dict[tuple, list[int]] = {}
        members: list[list[tuple[Mat, int]]] = []
        for k in range(self.count):
            row = []
            for slot, op in enumerate(self.ops):
                arr = op.arrays[k]
                if arr.size == 0:
                    view = Mat(slot << SLOT_BITS, arr.shape[0], arr.shape[1],
                               max(1, arr.shape[0]), 0, arr.itemsize)
                    row.append((view, 0))
                    continue
                view = op.views[k]
                if view is None:
                    work = self.xp.asfortranarray(arr)
                    op._copies.append((arr, work))
                    view = view_of(work)
                row.append((Mat(slot << SLOT_BITS, view.mrows, view.mcols, view.ld, view.op,
                                 view.itemsize), view.ptr))
            members.append(row)
            keys.setdefault(tuple(v for v, _ in row), []).append(k)
        groups = []
        for views, index in keys.items():
            idx = np.asarray(index, np.int64)
            ptrs = np.array([[members[k][j][1] for k in index] for j in range(len(views))],
                            np.int64).reshape(len(views), len(index))
            if self.device is not None:
                ptrs = self.xp.asarray(ptrs)
            groups.append(Group(views, ptrs, idx))
        return groups


def _member_stride(shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """The byte stride between consecutive members (C order) of a stack with these batch
    dimensions, if one stride describes them all; else None."""
    dims = [(e, s) for e, s in zip(shape, strides, strict=True) if e > 1]
    if not dims:
        return 0
    step = expect = dims[-1][1]
    for extent, stride in reversed(dims):
        if stride != expect:
            return None
        expect = stride * extent
    return step


def check_square(batch: Batch, which: int, name: str) -> None:
    """Every member of operand ``which`` is square."""
    for k in _members_to_check(batch):
        r, c = batch.ops[which].shape_of(k)
        if r != c:
            where = f"{name}[{k}]" if batch.is_list else name
            shape = (r, c) if batch.is_list else batch.ops[which].arrays[0].shape
            raise ValueError(f"{where} must be square, got shape {tuple(shape)}")


def _members_to_check(batch: Batch) -> Sequence[int]:
    return range(batch.count) if batch.is_list else range(1)
