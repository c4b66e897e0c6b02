"""Orthonormal rows for stacks of samples, batched over the tiles of a panel.

The range finder of :mod:`tricov.tlr._panels` keeps each tile's basis as rows ``QT_b`` and
adds blocks of at most :data:`WIDTH` sample rows ``Z_b`` at a time. :func:`orthonormalize`
projects the basis out of a block and makes its significant part orthonormal with the Gram
matrix ``Z_b Z_b^T`` and a Cholesky factorization with diagonal pivoting
(:func:`orthonormal_rows`: the Gram matrices and the products are strided-batched GEMMs, the
factorizations one block of 32 or 64 threads per tile, ``kernels/cuda/gram.cu``), twice. A block of
samples near a tile's convergence is numerically rank deficient; pivoting takes its
significant rows first and stops below a threshold, so the directions dropped carry at most
``WIDTH`` times the threshold (squared), and the second pass restores orthogonality to
rounding. Every step is a strided-batched GEMM or one kernel launch over the whole stack.
:func:`gram_basis` is the factorization itself, on the host (the reference of the tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._array import array_module
from ._stacks import bmm

__all__ = ["WIDTH", "gram_basis", "orthonormal_rows", "orthonormalize", "project"]

#: Most rows of samples orthonormalized at once (the threads of a block in ``gram_basis``): a
#: round of the range finder with ``s`` samples takes ``ceil(s / WIDTH)`` blocks of 8 GEMMs.
WIDTH = 64


def project(Z: Any, QT: Any) -> None:
    """``Z_b <- Z_b - (Z_b QT_b^T) QT_b`` in place: the rows of the stack ``Z`` ``(m, w, p)``
    with the span of the orthonormal rows ``QT`` ``(m, r, p)`` projected out."""
    xp = array_module(Z)
    m, w, _ = Z.shape
    if QT.shape[1] == 0:
        return
    P = bmm(Z, QT, xp.empty((m, w, QT.shape[1]), dtype=Z.dtype), tb=True)
    bmm(P, QT, Z, alpha=-1.0, beta=1.0)


def gram_basis(G: np.ndarray, live: np.ndarray, floor: float, rel: float,
               used: np.ndarray | None = None) -> np.ndarray:
    """``M_b`` ``(w, w)`` with orthonormal rows ``M_b Z_b`` for the Gram matrices
    ``G_b = Z_b Z_b^T`` of the NumPy stack ``G`` ``(m, w, w)`` (see the module notes and
    ``kernels/cuda/gram.cu``).

    The factorization takes rows while the largest remaining squared distance exceeds
    ``max(floor, rel * max(diag G_b))``; the first ``k`` rows of ``M_b Z_b`` are the basis,
    the others zero, as are all rows of members whose ``live`` entry is 0. Where ``used``
    (an ``(m, w)`` view) is given, ``used[b, i]`` is set to 1 for the rows kept, 0 for the
    others.
    """
    m, w, _ = G.shape
    M = np.zeros((m, w, w), dtype=G.dtype)
    for b in range(m):
        S = G[b].copy()
        d = np.diag(S).copy()
        thr = max(floor, rel * (d.max() if w else 0.0))
        open_ = np.ones(w, dtype=bool)
        piv: list[int] = []
        R = np.zeros((w, w), dtype=S.dtype)
        while live[b] > 0 and len(piv) < w:
            cand = np.where(open_, d, -1.0)
            p = int(np.argmax(cand))
            if not cand[p] > thr:
                break
            k = len(piv)
            R[k] = np.where(open_, S[p], 0) / np.sqrt(cand[p])
            open_[p] = False
            S -= np.outer(R[k], R[k]) * np.outer(open_, open_)
            d = np.diag(S).copy()
            piv.append(p)
        k = len(piv)
        if k:
            M[b][:k, piv] = np.linalg.inv(R[:k][:, piv]).T  # U^-T, U upper triangular
        if used is not None:
            used[b] = np.arange(w) < k
    return M


def orthonormal_rows(Z: Any, live: Any, floor: float, rel: float, dst: Any,
                     used: Any = None) -> Any:
    """``dst_b = M_b Z_b`` for the stack of rows ``Z`` ``(m, w, p)``, ``w <= WIDTH``, with
    ``M`` from :func:`gram_basis` of ``Z_b Z_b^T`` (same arguments); ``dst`` ``(m, w, p)``
    must not overlap ``Z``. Both may be views with unit stride along the last axis. Returns
    ``dst``."""
    xp = array_module(Z)
    m, w, _ = Z.shape
    G = bmm(Z, Z, xp.empty((m, w, w), dtype=Z.dtype), tb=True)
    if xp is np:
        M = gram_basis(G, live, floor, rel, used)
    else:
        from ..kernels import nvrtc

        M = xp.empty((m, w, w), dtype=Z.dtype)
        threads = 32 if w <= 32 else WIDTH
        kernel = nvrtc.function("gram.cu", f"tricov::gram_basis<{nvrtc.CTYPE[Z.dtype]}, "
                                           f"{threads}>")
        # R and M (threads x (threads + 1) each) and the reduction scratch
        smem = (2 * threads * (threads + 1) + threads // 32) * Z.itemsize + threads // 32 * 4
        nvrtc.allow_shared(kernel, smem)
        sc = Z.dtype.type
        flags = (used, np.int64(used.strides[0] // used.itemsize)) if used is not None \
            else (np.uint64(0), np.int64(0))
        if m:
            kernel((m,), (threads,), (np.int32(w), G, xp.ascontiguousarray(live), sc(floor),
                                      sc(rel), M, *flags), shared_mem=smem)
    return bmm(M, Z, dst)


def orthonormalize(Z: Any, QT: Any, r0: int, live: Any, floor: float, used: Any,
                   projected: int = 0) -> None:
    """Orthonormalize the sample rows ``Z`` ``(m, w, p)`` against the basis rows
    ``QT[:, :r0]`` and write them to ``QT[:, r0:r0 + w]``, their flags (1 kept, 0 dropped) to
    ``used[:, r0:r0 + w]``. ``Z`` is overwritten; the rows ``QT[:, :projected]`` have been
    projected out of it already.

    Two passes of the projection (:func:`project`) and :func:`orthonormal_rows`. The first
    drops directions carrying at most ``floor`` (squared) and those below rounding of the
    largest; the second, on nearly orthonormal rows, drops only the zero rows. Members with
    ``live`` 0 get zero rows.
    """
    xp = array_module(Z)
    m, w, p = Z.shape
    rel = 4 * w * float(np.finfo(Z.dtype).eps)
    tmp = xp.empty((m, w, p), dtype=Z.dtype)
    project(Z, QT[:, projected:r0])
    orthonormal_rows(Z, live, floor, rel, tmp)
    project(tmp, QT[:, :r0])
    orthonormal_rows(tmp, live, 0.25, rel, QT[:, r0:r0 + w], used[:, r0:r0 + w])
