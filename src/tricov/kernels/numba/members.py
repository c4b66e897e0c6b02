"""Element-wise helpers over the members of a batch, by address (parallel Numba loops)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .lanes import itemsize, mload, mstore

__all__ = ["conj_members", "zero_pivots"]


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
def zero_pivots(addrs, n, step, z, info, threads):
    """Per member, the 1-based index of the first exactly zero diagonal element, else 0.

    The diagonal of member ``b`` is at ``addrs[b] + k * step`` bytes, ``k < n``.
    """
    nb = addrs.shape[0]
    nt = max(1, min(threads, nb))
    for t in prange(nt):
        for b in range(t * nb // nt, (t + 1) * nb // nt):
            info[b] = 0
            for k in range(n):
                if mload(addrs[b] + k * step, z) == 0:
                    info[b] = k + 1
                    break
