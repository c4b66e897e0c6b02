"""Element-wise helpers over the members of a batch, by address (parallel Numba loops)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .lanes import itemsize, mload, mstore

__all__ = ["conj_members", "scan_diagonals", "stack_addresses"]


@njit(cache=True, parallel=True)
def conj_members(addrs, active, rows, cols, ld, z, threads):
    """Conjugate in place the ``rows x cols`` column-major block (leading dimension ``ld``
    elements) at each address ``addrs[b]`` with ``active[b]``; ``z`` is a zero of the dtype."""
    nb = addrs.shape[0]
    isz = itemsize(z)
    nt = max(1, min(threads, nb))
    for t in prange(nt):
        for b in range(t * nb // nt, (t + 1) * nb // nt):
            if not active[b]:
                continue
            for j in range(cols):
                base = addrs[b] + j * ld * isz
                for i in range(rows):
                    mstore(base + i * isz, np.conj(mload(base + i * isz, z)))


@njit(cache=True, parallel=True)
def scan_diagonals(addrs, active, n, step, nan, z, info, threads):
    """Per active member without a failure yet: the 1-based index of its first diagonal
    element that is NaN (``nan``) or exactly zero (not ``nan``), written to ``info``.

    The diagonal of member ``b`` is at ``addrs[b] + k * step`` bytes, ``k < n``.
    """
    nb = addrs.shape[0]
    nt = max(1, min(threads, nb))
    for t in prange(nt):
        for b in range(t * nb // nt, (t + 1) * nb // nt):
            if not active[b] or info[b] != 0:
                continue
            for k in range(n):
                x = mload(addrs[b] + k * step, z)
                if (np.isnan(x) if nan else x == 0):
                    info[b] = k + 1
                    break


@njit(cache=True)
def stack_addresses(out, base, shape, strides):
    """Write the address of every member of a stack into ``out``, in C order of the batch.

    Member ``(k_0, .., k_d)`` lies at ``base + sum_i k_i * strides[i]`` bytes; ``shape`` and
    ``strides`` (int64 arrays) are the batch dimensions, ``out`` holds ``prod(shape)`` values.
    """
    nd = shape.shape[0]
    idx = np.zeros(nd, np.int64)
    inner = shape[nd - 1] if nd else 1
    step = strides[nd - 1] if nd else 0
    addr = base
    for b in range(0, out.shape[0], inner):
        row = out[b:b + inner]
        for k in range(inner):
            row[k] = addr + k * step
        d = nd - 2
        while d >= 0:  # the next index of the outer dimensions, like an odometer
            idx[d] += 1
            addr += strides[d]
            if idx[d] < shape[d]:
                break
            addr -= idx[d] * strides[d]
            idx[d] = 0
            d -= 1
