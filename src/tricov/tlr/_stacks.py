"""Products of stacks of matrices in place, without copies of transposed or strided operands.

``numpy.matmul`` and CuPy's ``@`` make their operands contiguous first: a transposed stack
(``U^T`` of a column of tiles) is copied, every time. :func:`bmm` reads the operands through
their strides and transposes them in the product (one cuBLAS ``gemmStridedBatched`` on CuPy
arrays), and writes into a given output, which may be a slice of a larger stack; it reads
chosen members of a stack by their addresses (``gemmBatched``) instead of gathering them.
:func:`bmm_grouped` does several such products of different shapes in one cuBLAS call
(``gemmGroupedBatched``), for loops whose every step is a small product.
"""

from __future__ import annotations

import collections
import ctypes
import functools
from typing import Any, NamedTuple

import numpy as np

from ._array import array_module

__all__ = ["Product", "bmm", "bmm_grouped"]


class Product(NamedTuple):
    """One product of :func:`bmm_grouped`: ``out_b = alpha op(A_b) op(B_b) + beta out_b``
    (the arguments of :func:`bmm`), optionally on the leading part of each member only:
    ``rows[b]`` rows of ``op(A_b)`` and ``out_b``, ``inner[b]`` of the inner dimension (int
    arrays, one entry per member; None: all)."""

    A: Any
    B: Any
    out: Any
    ta: bool = False
    tb: bool = False
    alpha: float = 1.0
    beta: float = 0.0
    rows: np.ndarray | None = None
    inner: np.ndarray | None = None


def bmm(A: Any, B: Any, out: Any, *, ta: bool = False, tb: bool = False, alpha: float = 1.0,
        beta: float = 0.0, b_members: np.ndarray | None = None) -> Any:
    """``out_b = alpha op(A_b) op(B_b) + beta out_b`` for every member ``b``; returns ``out``.

    Parameters
    ----------
    A, B : (batch, rows, cols) or (rows, cols) arrays
        Real, of ``out``'s dtype, with unit stride along the last axis (any row and batch
        strides); a 2-D operand is the same matrix for every member. ``op`` transposes where
        ``ta`` / ``tb``.
    out : (batch, rows, cols) array
        Unit stride along the last axis; it must not overlap ``A`` or ``B``.
    beta : float
        ``out`` is not read when 0.
    b_members : (batch,) int array, optional
        Host indices: member ``b`` takes ``B[b_members[b]]`` (a 3-D ``B`` of any length), the
        members of a large stack without gathering them (on CuPy arrays one cuBLAS
        ``gemmBatched`` on the members' addresses).
    """
    if isinstance(out, np.ndarray):
        a = A.swapaxes(-1, -2) if ta else A
        b = B if b_members is None else B[b_members]
        b = b.swapaxes(-1, -2) if tb else b
        if beta == 0:
            out[...] = alpha * (a @ b)
        else:
            out *= beta
            out += alpha * (a @ b)
        return out
    batch, rows, cols = out.shape
    inner = A.shape[-2] if ta else A.shape[-1]
    if batch == 0 or rows == 0 or cols == 0:
        return out
    if inner == 0:
        out *= beta
        return out
    dtype = out.dtype
    geo = [_geometry(X, dtype) for X in (B, A, out)]
    # Row-major products are column-major products of the transposes: out^T = op(B)^T op(A)^T.
    if b_members is None:
        gemm, scalar, handle = _cublas(dtype)
        (pb, ldb, sb), (pa, lda, sa), (pc, ldc, sc) = geo
        status = gemm(handle(), tb, ta, cols, rows, inner, scalar(alpha), pb, ldb, sb, pa, lda,
                      sa, scalar(beta), pc, ldc, sc, batch)
    else:
        members = np.arange(batch)
        addrs = _upload(_addresses(geo, (np.asarray(b_members), members, members), dtype))
        gemm, scalar, handle = _cublas(dtype, "gemmBatched")
        status = gemm(handle(), tb, ta, cols, rows, inner, scalar(alpha), addrs[0].data.ptr,
                      geo[0][1], addrs[1].data.ptr, geo[1][1], scalar(beta), addrs[2].data.ptr,
                      geo[2][1], batch)
    if status:
        raise RuntimeError(f"cublas batched GEMM failed with status {status}")
    return out


def _addresses(geo: list[tuple[int, int, int]], members: tuple[np.ndarray, ...],
               dtype: np.dtype) -> np.ndarray:
    """``(operands, count)`` addresses of the chosen members of the operands of the given
    :func:`_geometry` (a 2-D operand's batch stride is 0: the same address for all)."""
    return np.stack([ptr + at * (stride * dtype.itemsize)
                     for (ptr, _, stride), at in zip(geo, members, strict=True)])


def _geometry(X: Any, dtype: np.dtype) -> tuple[int, int, int]:
    """Address, leading dimension and batch stride (0 for a matrix) of a row-major operand."""
    isz = dtype.itemsize
    strides, shape = X.strides, X.shape
    if X.dtype != dtype or (strides[-1] != isz and shape[-1] > 1):
        raise ValueError(f"bmm takes {dtype} operands with unit stride along the last axis")
    return (X.data.ptr, max(strides[-2] // isz, shape[-1], 1),
            strides[0] // isz if len(shape) == 3 else 0)


#: The stream each of tricov's handles was last bound to.
_BOUND: dict[int, int] = {}


def _handle() -> int:
    """tricov's cuBLAS handle for stacks, bound to the current stream (rebound only when that
    changes)."""
    import cupy

    from ..backends import cuda_libs as lib

    h = lib.own_handle("stacks")
    stream = cupy.cuda.get_current_stream().ptr
    if _BOUND.get(h) != stream:
        lib.bind_blas(stream, h)
        _BOUND[h] = stream
    return h


@functools.cache
def _cublas(dtype: np.dtype, name: str = "gemmStridedBatched") -> tuple[Any, Any, Any]:
    """cuBLAS's batched GEMM ``name`` for ``dtype``, a function passing a scalar to it (by
    reference), and :func:`_handle`."""
    from ..backends import cuda_libs as lib

    real = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    return lib.blas(name, dtype), lambda x: ctypes.byref(real(x)), _handle


@functools.cache
def _grouped(dtype: np.dtype) -> tuple[Any, Any] | None:
    """cuBLAS's grouped-batched GEMM for ``dtype`` and :func:`_handle`; None before cuBLAS
    12.5, which has none (:func:`bmm_grouped` then loops over the members)."""
    from ..backends import cuda_libs as lib

    try:
        return lib.blas("gemmGroupedBatched", dtype), _handle
    except AttributeError:
        return None


#: Pinned host buffers of copies still in flight, with the events that end them.
_IN_FLIGHT: collections.deque = collections.deque()


def _upload(addresses: np.ndarray) -> Any:
    """The int64 host array ``addresses`` on the device, copied asynchronously on the current
    stream from a pinned buffer that is held until the copy is done (the buffers of finished
    copies are released)."""
    import cupy
    import cupyx

    host = cupyx.empty_pinned(addresses.shape, dtype=np.int64)
    host[...] = addresses
    dev = cupy.empty(addresses.shape, dtype=np.int64)
    stream = cupy.cuda.get_current_stream()
    cupy.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, host.nbytes,
                                  cupy.cuda.runtime.memcpyHostToDevice, stream.ptr)
    while _IN_FLIGHT and _IN_FLIGHT[0][0].done:
        _IN_FLIGHT.popleft()
    _IN_FLIGHT.append((stream.record(), host))
    return dev


def bmm_grouped(products: list[Product]) -> None:
    """Every product of ``products`` (as :func:`bmm`; the outputs must not overlap any
    operand), on CuPy arrays in one cuBLAS ``gemmGroupedBatched`` call, one group per member,
    the members' addresses sent to the device in one asynchronous copy (before cuBLAS 12.5,
    which has no grouped GEMM: one :func:`bmm` per member). A member given no rows or no
    inner dimension (:class:`Product`'s ``rows``, ``inner``) is skipped: its output is not
    written."""
    if not products:
        return
    dtype = products[0].out.dtype
    if array_module(products[0].out) is np or _grouped(dtype) is None:
        for p in products:
            for b in range(p.out.shape[0]):
                r = slice(None) if p.rows is None else slice(0, int(p.rows[b]))
                k = slice(None) if p.inner is None else slice(0, int(p.inner[b]))
                if r.stop == 0 or k.stop == 0:
                    continue
                a = p.A[b] if p.A.ndim == 3 else p.A
                a = a[k, r] if p.ta else a[r, k]
                bb = p.B[b] if p.B.ndim == 3 else p.B
                bb = bb[:, k] if p.tb else bb[k]
                bmm(a, bb, p.out[b:b + 1, r], ta=p.ta, tb=p.tb, alpha=p.alpha, beta=p.beta)
        return

    cols_, rows_, inner_, params, addrs, scalars = [], [], [], [], [], []
    for p in products:
        batch, rows, cols = p.out.shape
        inner = p.A.shape[-2] if p.ta else p.A.shape[-1]
        r = np.full(batch, rows) if p.rows is None else np.minimum(p.rows, rows)
        k = np.full(batch, inner) if p.inner is None else np.minimum(p.inner, inner)
        if p.rows is None and p.inner is None and batch and rows and cols and not inner:
            out = p.out
            out *= p.beta  # the product of nothing, as BLAS defines it
        members = np.flatnonzero((r > 0) & (k > 0)) if cols else np.zeros(0, np.int64)
        if not members.size:
            continue
        geo = [_geometry(X, dtype) for X in (p.B, p.A, p.out)]
        # row-major products as column-major ones of the transposes (see bmm): B first
        addrs.append(_addresses(geo, (members,) * 3, dtype))
        params.append(np.repeat([[int(p.tb)], [int(p.ta)], [geo[0][1]], [geo[1][1]],
                                 [geo[2][1]]], members.size, axis=1))
        cols_.append(np.full(members.size, cols))
        rows_.append(r[members])
        inner_.append(k[members])
        scalars.append(np.repeat([[p.alpha], [p.beta]], members.size, axis=1))
    if not addrs:
        return
    count = sum(a.shape[1] for a in addrs)
    dev = _upload(np.concatenate(addrs, axis=1))
    ta, tb, lda, ldb, ldc = np.ascontiguousarray(np.concatenate(params, axis=1), np.int32)
    m, n, k = (np.ascontiguousarray(np.concatenate(x), np.int32)
               for x in (cols_, rows_, inner_))
    alpha, beta = np.ascontiguousarray(np.concatenate(scalars, axis=1),
                                       np.float64 if dtype == np.float64 else np.float32)
    sizes = np.ones(count, dtype=np.int32)
    grouped, handle = _grouped(dtype)
    status = grouped(handle(), ta.ctypes.data, tb.ctypes.data, m.ctypes.data, n.ctypes.data,
                     k.ctypes.data, alpha.ctypes.data, dev[0].data.ptr, lda.ctypes.data,
                     dev[1].data.ptr, ldb.ctypes.data, beta.ctypes.data, dev[2].data.ptr,
                     ldc.ctypes.data, count, sizes.ctypes.data)
    if status:
        raise RuntimeError(f"cublas gemmGroupedBatched failed with status {status}")
