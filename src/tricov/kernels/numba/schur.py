"""Compiled steps of the left-looking TLR Cholesky on the CPU (float64): one tile column at a time.

Storage (built by :mod:`tricov.tlr._columns`). The factor's low-rank tiles ``L_ij = U_ij V_ij^T``
are kept transposed and packed: ``UT[i]`` holds the ``U`` factors of tile row ``i`` as rows
(``U_ij^T`` at rows ``uoff[i, j]`` .. ``+ rk[i, j]``, ``j`` increasing), ``VT[j]`` the ``V``
factors of tile column ``j`` (``V_ij^T`` at rows ``voff[j, i]``, ``i`` increasing). So
``W = [U_k0 ... U_k,k-1] = UT[k][:R_k]^T`` and the ``V`` factors of the tiles below tile
``(k, j)`` are consecutive rows of ``VT[j]``.

Column ``k``. Tile ``(i, k)`` of the Schur complement is

    ``S_ik = A_ik - sum_j U_ij (V_ij^T V_kj) U_kj^T = A_ik - U_i Pblk_i W^T``,

``U_i = UT[i][:R_i]^T`` and ``Pblk_i`` block diagonal with blocks ``P_ij = V_ij^T V_kj``, which
:func:`gram_blocks` computes for all ``i >= k`` at once per ``j`` (one product per ``j``: the
``V`` factors below ``(k, j)`` are consecutive). :func:`schur_tiles` compresses each ``S_ik``
(threads take ranges of tiles: every function here releases the GIL) by the adaptive
randomized range finder of :mod:`tricov.tlr.compression`, touching ``S_ik`` only through

    ``S_ik Z = A_ik Z - U_i (Pblk_i (W^T Z))``,   ``S_ik^T Q = A_ik^T Q - W (Pblk_i^T (U_i^T Q))``,

where ``W^T Z`` is shared by the tiles of the column for the first block of samples, and
``A_ik`` is the low-rank tile ``U V^T`` of the compressed matrix or a dense tile. Each product
is two GEMMs of width ``R`` (the rank sums) and the small block-diagonal ``Pblk``: about
``3 nb R p`` flops per tile with ``p`` samples (with a low-rank ``A_ik``, nothing of order
``nb^2``). The final factors come from
an R-only QR of ``B^T = S^T Q`` and an SVD of its small triangle: ``U = Q y``, ``V = B^T y``.

Every random block after the first is drawn per tile from a SplitMix64 stream seeded by the
tile's position, so results do not depend on the threads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from . import lapack
from .tiles import next_random, tile_stream

__all__ = ["OVERFLOW", "diag_roots", "gram_blocks", "schur_tiles"]

#: ``status`` of a tile whose factors do not fit the room given (nothing stored).
OVERFLOW = 1
_EXTRA = 16        # columns of the error estimate, per round
_MIN_BLOCK = 16    # smallest block of a later round


@njit(nogil=True, cache=True)
def _gaussian(state: np.uint64, rows: int, cols: int) -> tuple[np.uint64, Any]:
    """A (rows, cols) block of standard normal numbers (Box-Muller on SplitMix64)."""
    out = np.empty((rows, cols))
    flat = out.reshape(-1)
    for t in range(0, flat.size, 2):
        state, z1 = next_random(state)
        state, z2 = next_random(state)
        u1 = (float(z1 >> np.uint64(11)) + 1.0) * (1.0 / 9007199254740992.0)
        u2 = float(z2 >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        rad = math.sqrt(-2.0 * math.log(u1))
        flat[t] = rad * math.cos(2.0 * math.pi * u2)
        if t + 1 < flat.size:
            flat[t + 1] = rad * math.sin(2.0 * math.pi * u2)
    return state, out


@njit(nogil=True, cache=True)
def _project(Y: Any, Q: Any) -> Any:
    """``Y`` with the span of ``Q`` removed, twice."""
    if Q.shape[1] == 0:
        return Y.copy()
    for _ in range(2):
        Y = Y - Q @ (Q.T @ Y)
    return Y


@njit(nogil=True, cache=True)
def _extend(Q: Any, Y: Any, fns: Any) -> Any:
    """``[Q, orth(Y)]``: ``Y`` already projected against ``Q``; orthonormalized, projected once
    more (a block of rounding noise leans towards Q after its QR) and appended. A block that is
    exactly zero adds nothing."""
    nrm = 0.0
    for v in Y.reshape(-1):
        nrm += v * v
    if Y.shape[1] == 0 or nrm == 0.0:
        return Q
    Qn = lapack.qr_q(Y, fns)
    if Q.shape[1]:
        Qn = lapack.qr_q(Qn - Q @ (Q.T @ Qn), fns)
    out = np.empty((Q.shape[0], Q.shape[1] + Qn.shape[1]))
    out[:, :Q.shape[1]] = Q
    out[:, Q.shape[1]:] = Qn
    return out


# ---------------------------------------------------------------------------- column setup
@njit(nogil=True, cache=True)
def gram_blocks(VT: Any, vk: Any, rkk: Any, PT: Any, j0: int, j1: int) -> None:
    """``PT[j] = V_kj^T [V_kj, V_k+1,j, ...]`` for ``j0 <= j < j1`` with ``rkk[j] > 0``.

    ``vk[j]`` is the row of ``V_kj^T`` in ``VT[j]`` (the tiles below follow it); ``PT[j]`` is
    ``(rkk[j], rows of VT[j] from vk[j])``, so ``P_ij = V_ij^T V_kj`` is the transpose of its
    columns ``voff[j, i] - vk[j]`` .. ``+ rk[i, j]``.
    """
    for j in range(j0, j1):
        r = rkk[j]
        if r == 0:
            continue
        V = VT[j]
        below = V[vk[j]:]
        PT[j][:, :] = below[:r] @ below.T


@njit(nogil=True, cache=True)
def diag_roots(UTk: Any, uk: Any, rkk: Any, PT: Any, XT: Any, fns: Any, j0: int,
               j1: int) -> None:
    """Rows of ``XT`` (R_k, m_k) of blocks ``j0 <= j < j1``, with
    ``X X^T = sum_j U_kj (V_kj^T V_kj) U_kj^T``.

    Block ``j`` of ``X`` is ``U_kj E sqrt(w)`` for the eigendecomposition ``E w E^T`` of the
    Gram matrix ``V_kj^T V_kj`` (the leading block of ``PT[j]``).
    """
    for j in range(j0, j1):
        r = rkk[j]
        if r == 0:
            continue
        w, e = lapack.eigh(PT[j][:, :r], fns)
        for c in range(r):
            s = math.sqrt(max(w[c], 0.0))
            for a in range(r):
                e[a, c] *= s
        XT[uk[j]:uk[j] + r] = e.T @ UTk[uk[j]:uk[j] + r]


# ---------------------------------------------------------------------------- one tile
@njit(nogil=True, cache=True)
def _apply_blocks(i: int, k: int, rk: Any, uoff: Any, voff: Any, vk: Any, PT: Any, G: Any,
                  q: int, Ri: int) -> Any:
    """``Pblk_i G[:, :q]`` (R_i, q): block ``j`` is ``P_ij G_j``, ``G_j`` the rows of ``G`` of
    tile ``(k, j)`` (row-major, the sample columns innermost)."""
    T = np.zeros((Ri, q))
    for j in range(k):
        rij, rkj = rk[i, j], rk[k, j]
        if rij == 0 or rkj == 0:
            continue
        a0 = voff[j, i] - vk[j]
        u0, g0 = uoff[i, j], uoff[k, j]
        P = PT[j]
        for a in range(rij):
            t = T[u0 + a]
            for b in range(rkj):
                coef = P[b, a0 + a]
                g = G[g0 + b]
                for c in range(q):
                    t[c] += coef * g[c]
    return T


@njit(nogil=True, cache=True)
def _adjoint_blocks(i: int, k: int, rk: Any, uoff: Any, voff: Any, vk: Any, PT: Any, E: Any,
                    Rk: int) -> Any:
    """``Pblk_i^T E`` (R_k, w) for ``E`` (R_i, w) (row-major, the columns innermost)."""
    w = E.shape[1]
    F = np.zeros((Rk, w))
    for j in range(k):
        rij, rkj = rk[i, j], rk[k, j]
        if rij == 0 or rkj == 0:
            continue
        a0 = voff[j, i] - vk[j]
        u0, g0 = uoff[i, j], uoff[k, j]
        P = PT[j]
        for b in range(rkj):
            f = F[g0 + b]
            for a in range(rij):
                coef = P[b, a0 + a]
                e = E[u0 + a]
                for c in range(w):
                    f[c] += coef * e[c]
    return F


@njit(nogil=True, cache=True)
def _sample(b: int, i: int, k: int, dense: bool, BU: Any, BV: Any, BD: Any, UTi: Any, Ri: int,
            rk: Any, uoff: Any, voff: Any, vk: Any, PT: Any, Z: Any, G: Any) -> Any:
    """``S_ik Z`` given ``G``, whose first columns are ``W^T Z``."""
    if dense:
        Y = BD[b] @ Z
    elif BU[b].shape[1]:
        Y = BU[b] @ (BV[b].T @ Z)
    else:
        Y = np.zeros((BU[b].shape[0], Z.shape[1]))
    if Ri:
        T = _apply_blocks(i, k, rk, uoff, voff, vk, PT, G, Z.shape[1], Ri)
        Y -= UTi[:Ri].T @ T
    return Y


@njit(nogil=True, cache=True)
def _adjoint(b: int, i: int, k: int, dense: bool, BU: Any, BV: Any, BD: Any, UTi: Any, Ri: int,
             WT: Any, rk: Any, uoff: Any, voff: Any, vk: Any, PT: Any, Q: Any) -> Any:
    """``S_ik^T Q``."""
    if dense:
        BT = BD[b].T @ Q
    elif BU[b].shape[1]:
        BT = BV[b] @ (BU[b].T @ Q)
    else:
        BT = np.zeros((BV[b].shape[0], Q.shape[1]))
    if Ri:
        E = UTi[:Ri] @ Q
        F = _adjoint_blocks(i, k, rk, uoff, voff, vk, PT, E, WT.shape[0])
        BT -= WT.T @ F
    return BT


@njit(nogil=True, cache=True)
def _compress(b: int, i: int, k: int, mi: int, nk: int, dense: bool, BU: Any, BV: Any, BD: Any,
              UTi: Any, Ri: int, WT: Any, rk: Any, uoff: Any, voff: Any, vk: Any, PT: Any,
              Z: Any, G: Any, hint: int, oversample: int, atol: float, rank: int,
              seed: np.uint64, fns: Any) -> tuple[Any, Any, int]:
    """Adaptive randomized compression of ``S_ik``: ``(Q y, B^T y, rounds)`` truncated to
    ``atol`` (Frobenius) and ``rank`` (< 0: no cap)."""
    full = min(mi, nk)
    cap = full if rank < 0 else min(full, rank + 10)
    Q = np.zeros((mi, 0))
    state = seed
    p = min(max(hint + oversample, _MIN_BLOCK), Z.shape[1])
    est = 0.0
    rounds = 0
    while True:
        room = cap - Q.shape[1]
        if room <= 0:
            est = 0.0
            break
        main, extra = (room, 0) if p + _EXTRA >= room else (p, _EXTRA)
        if rounds == 0 and main + extra <= Z.shape[1]:
            Y = _sample(b, i, k, dense, BU, BV, BD, UTi, Ri, rk, uoff, voff, vk, PT,
                        np.ascontiguousarray(Z[:, :main + extra]), G)
        else:
            state, Zr = _gaussian(state, nk, main + extra)
            Y = _sample(b, i, k, dense, BU, BV, BD, UTi, Ri, rk, uoff, voff, vk, PT, Zr,
                        WT @ Zr)
        rounds += 1
        Q = _extend(Q, _project(np.ascontiguousarray(Y[:, :main]), Q), fns)
        if extra == 0:
            est = 0.0  # Q reached the cap: it spans the range (cap = full), or the rank decides
            break
        Yb = _project(np.ascontiguousarray(Y[:, main:]), Q)
        s2 = 0.0
        for v in Yb.reshape(-1):
            s2 += v * v
        est = math.sqrt(s2 / extra)
        if est <= 0.5 * atol:
            break
        Q = _extend(Q, Yb, fns)
        p = max(_MIN_BLOCK, Q.shape[1] // 2)
    w = Q.shape[1]
    if w == 0:
        return np.zeros((mi, 0)), np.zeros((nk, 0)), rounds
    Q = np.ascontiguousarray(Q)
    BT = _adjoint(b, i, k, dense, BU, BV, BD, UTi, Ri, WT, rk, uoff, voff, vk, PT, Q)
    R = lapack.qr_r(BT, fns)           # B^T = Qb R, B = R^T Qb^T: B's left singular vectors
    s, yt = lapack.svd_right(R, fns)   # are R's right ones: R = x s y^T
    y = yt.T
    budget2 = max(atol * atol - est * est, 0.0)
    r = s.shape[0]
    tail = 0.0
    while r > 0 and tail + s[r - 1] * s[r - 1] <= budget2:
        tail += s[r - 1] * s[r - 1]
        r -= 1
    if 0 <= rank < r:
        r = rank
    yr = np.ascontiguousarray(y[:, :r])
    return Q @ yr, BT @ yr, rounds


@njit(nogil=True, cache=True)
def schur_tiles(tiles: Any, k: int, dense: bool, BU: Any, BV: Any, BD: Any, UT: Any, ru: Any,
                rk: Any, uoff: Any, voff: Any, vk: Any, PT: Any, Z: Any, G: Any, hints: Any,
                oversample: int, atol: float, rank: int, seed: int, fns: Any, vbuf: Any,
                vstart: Any, vroom: Any, ranks: Any, status: Any, rounds: Any, b0: int,
                b1: int) -> None:
    """Compress the Schur-complement tiles ``(tiles[b], k)``, ``b0 <= b < b1``.

    Parameters
    ----------
    tiles : int64 (B,)
        Tile rows ``i > k``.
    dense : bool
        ``A_ik`` is ``BD[b]`` (dense, (B, m, n)) rather than ``BU[b] BV[b]^T`` (typed lists).
    UT, ru, rk, uoff, voff
        The factor so far (module notes); ``ru[i]`` rows of ``UT[i]`` are in use (``R_i``).
    vk : int64 (k,)
        ``voff[j, k]``, where the blocks ``PT[j]`` (:func:`gram_blocks`) start.
    Z, G : (n_k, p) and (R_k, p) float64, C-ordered
        First block of samples shared by the tiles and ``W^T Z``.
    hints : int64 (B,)
        Expected ranks: the first block of tile ``b`` has ``hints[b] + oversample`` columns
        (at least 16), plus 16 for the error estimate, at most ``p``.
    atol : float
        Absolute Frobenius accuracy per tile. ``rank`` caps the rank (< 0: none).
    seed : int
        Randomness of the later blocks (with the tile position), >= 0.
    fns : int64 array
        :func:`tricov.kernels.numba.lapack.addresses`.
    vbuf, vstart, vroom
        ``V^T`` of tile ``b`` goes to ``vbuf[vstart[b]:]`` as a (r, n_k) block if
        ``r <= vroom[b]``; ``U^T`` to ``UT[i][ru[i]:ru[i] + r]`` if it fits.
    ranks, status, rounds : int64 (B,)
        Outputs: rank, 0 or :data:`OVERFLOW` (nothing stored), sampling rounds.
    """
    WT = UT[k][:ru[k]]
    nk = Z.shape[0]
    for b in range(b0, b1):
        i = tiles[b]
        UTi = UT[i]
        Ri = ru[i]
        mi = UTi.shape[1]
        st = tile_stream(seed, i, k)
        U, V, nr = _compress(b, i, k, mi, nk, dense, BU, BV, BD, UTi, Ri, WT, rk, uoff, voff,
                             vk, PT, Z, G, hints[b], oversample, atol, rank, st, fns)
        r = U.shape[1]
        ranks[b] = r
        rounds[b] = nr
        if r > vroom[b] or Ri + r > UTi.shape[0]:
            status[b] = OVERFLOW
            continue
        status[b] = 0
        UTi[Ri:Ri + r] = U.T
        v0 = vstart[b]
        for a in range(r):
            for c in range(nk):
                vbuf[v0 + a * nk + c] = V[c, a]

