"""Logical views of matrices in memory: the vocabulary of every recursion.

A :class:`Mat` is a pointer to a column-major block of memory (``mrows x mcols`` with leading
dimension ``ld``) together with an op code (see :mod:`tricov._options`): the matrix it stands for
is ``op(memory)``. Taking a transpose, a conjugate or a sub-block makes a new view and moves no
data, so a C-ordered NumPy array (the transpose of an F-ordered one), a right-side operation (a
left-side one on ``B^T``) and an upper triangle (the lower one of ``A^T``) all cost nothing.

Views know nothing of devices: NumPy and CuPy arrays both describe themselves through the
array-interface protocols, and executors turn views back into (pointer, leading dimension, BLAS
letter) triples.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _options as opt

__all__ = ["Mat", "view_from", "view_of"]


class Mat(NamedTuple):
    """A logical matrix ``op(M)`` over column-major memory ``M``.

    A named tuple: the recursions make many of these, and tuples are the cheapest immutable
    objects Python builds.

    Attributes
    ----------
    ptr : int
        Address of element (0, 0) (the same element logically and in memory).
    mrows, mcols : int
        Shape of the memory block ``M``.
    ld : int
        Leading dimension of ``M`` in elements (``>= max(1, mrows)``).
    op : int
        One of ``N, T, R, C`` from :mod:`tricov._options`.
    itemsize : int
        Bytes per element.
    """

    ptr: int
    mrows: int
    mcols: int
    ld: int
    op: int
    itemsize: int

    @property
    def t(self) -> bool:
        """Whether the logical matrix is the transpose of the memory block."""
        return bool(self.op & opt.T)

    @property
    def rows(self) -> int:
        """Logical number of rows."""
        return self.mcols if self.op & opt.T else self.mrows

    @property
    def cols(self) -> int:
        """Logical number of columns."""
        return self.mrows if self.op & opt.T else self.mcols

    @property
    def T(self) -> Mat:  # noqa: N802 - mirrors NumPy
        """The transpose, as a view."""
        return self.apply(opt.T)

    @property
    def H(self) -> Mat:  # noqa: N802 - mirrors NumPy's .mH
        """The conjugate transpose, as a view."""
        return self.apply(opt.C)

    @property
    def conj(self) -> Mat:
        """The complex conjugate, as a view."""
        return self.apply(opt.R)

    def apply(self, op: int) -> Mat:
        """The view of ``op(self)``."""
        return Mat(self.ptr, self.mrows, self.mcols, self.ld, opt.compose(op, self.op),
                   self.itemsize)

    def block(self, i0: int, i1: int, j0: int, j1: int) -> Mat:
        """Logical rows ``i0:i1`` and columns ``j0:j1``, as a view."""
        if self.op & opt.T:
            i0, i1, j0, j1 = j0, j1, i0, i1
        ptr = self.ptr + (i0 + j0 * self.ld) * self.itemsize
        return Mat(ptr, i1 - i0, j1 - j0, self.ld, self.op, self.itemsize)

    def quad(self, k: int) -> tuple[Mat, Mat, Mat, Mat]:
        """The 2x2 partition ``(A11, A21, A12, A22)`` of a square view split at ``k``."""
        n = self.rows
        return (self.block(0, k, 0, k), self.block(k, n, 0, k),
                self.block(0, k, k, n), self.block(k, n, k, n))

    def rowsplit(self, k: int) -> tuple[Mat, Mat]:
        """Rows ``0:k`` and ``k:`` as two views."""
        return self.block(0, k, 0, self.cols), self.block(k, self.rows, 0, self.cols)


def _interface(arr: Any) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """Address of element (0, 0), shape and byte strides of a NumPy or CuPy array (read
    directly: CuPy's ``__cuda_array_interface__`` builds a dictionary on every access)."""
    if isinstance(arr, np.ndarray):
        return arr.__array_interface__["data"][0], arr.shape, arr.strides
    return arr.data.ptr, arr.shape, arr.strides


def view_of(arr: Any) -> Mat | None:
    """The logical view of a 2-D NumPy or CuPy array, or None if it needs a copy.

    An array is viewed in place when one of its two strides is the item size and the other is a
    positive multiple of it at least as large as the other extent: an F-ordered block (op N) or a
    C-ordered block (op T over the transposed memory). Other strides return None.
    """
    ptr, shape, strides = _interface(arr)
    return view_from(ptr, shape, strides, arr.dtype.itemsize)


def view_from(ptr: int, shape: tuple[int, int], strides: tuple[int, int] | None,
              isz: int) -> Mat | None:
    """:func:`view_of` for the 2-D array at address ``ptr`` with these shape and byte strides
    (None: C-contiguous) and item size."""
    rows, cols = shape
    if strides is None:  # C-contiguous
        strides = (cols * isz, isz)
    s0, s1 = strides
    if rows == 0 or cols == 0:
        return Mat(ptr, rows, cols, max(1, rows), opt.N, isz)
    # F-like: unit stride down a column (or a single row), columns ld apart.
    if s0 == isz or rows == 1:
        ld = s1 // isz if cols > 1 else max(1, rows)
        if cols == 1 or (s1 > 0 and s1 % isz == 0 and ld >= rows):
            return Mat(ptr, rows, cols, max(ld, 1), opt.N, isz)
    # C-like: unit stride along a row; memory is the transpose, cols x rows.
    if s1 == isz or cols == 1:
        ld = s0 // isz if rows > 1 else max(1, cols)
        if rows == 1 or (s0 > 0 and s0 % isz == 0 and ld >= cols):
            return Mat(ptr, cols, rows, max(ld, 1), opt.T, isz)
    return None


def is_complex(dtype: np.dtype) -> bool:
    """Whether a dtype is complex."""
    return dtype.kind == "c"
