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

Batch order: members are numbered in C order of the batch dimensions for a stack, by list
position for a list; per-member results (``info``) have the batch shape (a stack) or the list's
length (a list).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._frontend import SUPPORTED, as_array
from .._views import Mat, view_of

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
    ptrs : int64 array (operands, members)
        Address of memory element (0, 0) of each member of each operand.
    index : int64 array (members) or None
        Batch index (flat, see the module notes) of each member; None for all of them in order.
    """

    views: tuple[Mat, ...]
    ptrs: np.ndarray
    index: np.ndarray | None

    @property
    def size(self) -> int:
        """Number of members."""
        return int(self.ptrs.shape[1])


@dataclass
class Operand:
    """One operand of a call as the caller gave it, with its working copies."""

    name: str
    user: Any
    written: bool
    is_list: bool
    arrays: list[np.ndarray] = field(default_factory=list)
    #: Per member of a list: its in-place view (None: empty, or strides that need a copy).
    views: list[Mat | None] = field(default_factory=list)
    _copies: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def shape_of(self, k: int) -> tuple[int, int]:
        """Shape of member ``k`` (a list) or of every member (a stack)."""
        arr = self.arrays[k] if self.is_list else self.arrays[0]
        return int(arr.shape[-2]), int(arr.shape[-1])


def _as_operand(name: str, x: Any, written: bool) -> Operand:
    if isinstance(x, (list, tuple)):
        arrays = [as_array(m, f"{name}[{k}]") for k, m in enumerate(x)]
        for k, arr in enumerate(arrays):
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"{name}[{k}] is not a NumPy array; lists of GPU arrays are not "
                                "supported on the CPU")
            if arr.ndim != 2:
                raise ValueError(f"{name}[{k}] must be 2-D, got shape {arr.shape}")
        views = [view_of(arr) if arr.size else None for arr in arrays]
        return Operand(name, x, written, True, arrays, views)
    arr = as_array(x, name)
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array or a list of them, got "
                        f"{type(x).__name__}")
    if arr.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (..., rows, cols), got shape "
                         f"{arr.shape}")
    return Operand(name, x, written, False, [arr])


def _interval(arr: np.ndarray, view: Mat | None) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` that hold the elements of ``arr`` (``view``: its in-place view)."""
    if view is None:
        lo, hi = np.lib.array_utils.byte_bounds(arr)
        return lo, hi
    return view.ptr, view.ptr + ((view.mcols - 1) * view.ld + view.mrows) * view.itemsize


def _check_overlaps(ops: list[Operand]) -> None:
    """No written member may share memory with any other member, of any operand."""
    spans = []
    for op in ops:
        for k, arr in enumerate(op.arrays):
            if arr.size:
                lo, hi = _interval(arr, op.views[k] if op.is_list else None)
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


def _shares(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return bool(np.shares_memory(a, b, max_work=10**6))
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
        for op in ops:
            if op.written:
                for k, arr in enumerate(op.arrays):
                    if not arr.flags.writeable:
                        where = f"{op.name}[{k}]" if op.is_list else op.name
                        raise ValueError(f"{where} is read-only, but the operation writes it in "
                                         "place")
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

    # ------------------------------------------------------------------ groups
    def __enter__(self) -> list[Group]:
        if self.count == 0:
            return []
        if self.is_list:
            return self._list_groups()
        return self._stack_groups()

    def __exit__(self, *exc: object) -> None:
        for op in self.ops:
            if op.written:
                for user, work in op._copies:
                    user[...] = work
            op._copies.clear()

    def _stack_groups(self) -> list[Group]:
        views = []
        ptrs = np.empty((len(self.ops), self.count), np.int64)
        for slot, op in enumerate(self.ops):
            arr = op.arrays[0]
            rows, cols = arr.shape[-2:]
            if rows == 0 or cols == 0:
                views.append(Mat(slot << SLOT_BITS, rows, cols, max(1, rows), 0, arr.itemsize))
                ptrs[slot] = 0
                continue
            lead = (0,) * (arr.ndim - 2)
            view = view_of(arr[lead])
            if view is None:
                work = np.ascontiguousarray(arr)
                op._copies.append((arr, work))
                arr = work
                view = view_of(arr[lead])
            views.append(Mat(slot << SLOT_BITS, view.mrows, view.mcols, view.ld, view.op,
                             view.itemsize))
            row = ptrs[slot].reshape(arr.shape[:-2])
            row[...] = arr.ctypes.data
            for d, (extent, stride) in enumerate(zip(arr.shape[:-2], arr.strides[:-2],
                                                     strict=True)):
                if extent > 1:
                    shape = [1] * row.ndim
                    shape[d] = extent
                    row += (np.arange(extent, dtype=np.int64) * stride).reshape(shape)
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
                    work = np.asfortranarray(arr)
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
            groups.append(Group(views, ptrs, idx))
        return groups


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
