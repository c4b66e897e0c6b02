"""Tiles of a matrix given entry by entry: compiled generation and adaptive cross approximation.

The matrix is ``A[i, j] = C(x[i], x[j])`` (plus ``diag`` where ``i == j``) for a block function:
a C callback at address ``fn`` with the signature :data:`BLOCK_SIGNATURE`,

    ``block(x, n, d, i0, i1, j0, j1, p, pn, tab, tn, out, sa, sb)``

(every argument an int64; ``x``, ``p``, ``tab``, ``out`` are addresses of float64 arrays: the
C-ordered points ``x`` (n, d), the parameters ``p`` (pn) and tables ``tab`` (tn) of the
function) that writes ``C(x[i0 + a], x[j0 + b])`` into ``out[a sa + b sb]``
(:meth:`tricov.geostat.Kernel.compiled` gives one). Called by address, the function is a
run-time argument: the loops here are compiled once, cached on disk, and serve every kernel.
Every function releases the GIL and works on a range of rows or tiles, so that threads run
ranges side by side (:func:`tricov.tlr._threads.run_ranges`); each calls ``block`` once per row
or column, so nothing else than the tile (or the rows and columns ACA asks for) is evaluated.

:func:`fill` generates rows of a dense block; :func:`fill_lower` rows of the lower triangle
of a diagonal tile; :func:`aca_tiles` compresses a range of tiles of a list, one after another,
by adaptive cross approximation with the safe stop of :func:`tricov.tlr.compression.aca` (plus
a second check on random columns), then recompresses each result by QR and SVD.

Randomness (the first pivot row, the rows and columns of the checks) comes from a SplitMix64
stream per tile, seeded by ``seed`` and the tile's position: the result of a tile does not
depend on the threads or on which other tiles are compressed in the same call.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from . import lapack

__all__ = ["BLOCK_SIGNATURE", "OVERFLOW", "aca_tiles", "as_pointer", "fill", "fill_lower",
           "next_random", "tile_stream"]

#: Signature of a block function (see the module notes).
BLOCK_SIGNATURE = types.void(*([types.int64] * 14))

#: ``status`` of a tile whose rank exceeds the room of the output arrays (not stored).
OVERFLOW = 1
_CHECK = 8          # rows (and columns) of each residual check
_SMALL_STEPS = 2    # consecutive small steps before a check
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@intrinsic
def as_pointer(typingctx: Any, addr: Any) -> Any:
    """The float64 pointer at the integer address ``addr`` (for ``numba.carray``)."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return types.CPointer(types.float64)(addr), codegen


@intrinsic
def _call14(typingctx: Any, fn: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any,
            a6: Any, a7: Any, a8: Any, a9: Any, a10: Any, a11: Any, a12: Any,
            a13: Any) -> Any:
    """Call the block function at address ``fn`` with 14 integer arguments."""
    argtys = (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13)
    if not all(isinstance(t, types.Integer) for t in (fn, *argtys)):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64] * 14)
        values = [context.cast(builder, v, t, types.int64)
                  for v, t in zip(args[1:], sig.args[1:], strict=True)]
        target = context.cast(builder, args[0], sig.args[0], types.int64)
        builder.call(builder.inttoptr(target, fnty.as_pointer()), values)
        return context.get_dummy_value()

    return types.void(fn, *argtys), codegen


@njit(nogil=True, inline="always")
def _block(fn: int, x: Any, p: Any, tab: Any, i0: int, i1: int, j0: int, j1: int,
           out: Any) -> None:
    """``out[a, b] = C(x[i0 + a], x[j0 + b])`` (``out`` a 2-D float64 view, any strides)."""
    _call14(fn, x.ctypes.data, x.shape[0], x.shape[1], i0, i1, j0, j1, p.ctypes.data,
            p.shape[0], tab.ctypes.data, tab.shape[0], out.ctypes.data, out.strides[0] // 8,
            out.strides[1] // 8)


@njit(nogil=True, cache=True)
def fill(fn: int, x: Any, p: Any, tab: Any, r0: int, c0: int, out: Any, diag: float, a0: int,
         a1: int) -> None:
    """Rows ``a0 <= a < a1`` of ``out[a, b] = A[r0 + a, c0 + b]``, ``diag`` added on the
    global diagonal."""
    n = out.shape[1]
    for a in range(a0, a1):
        _block(fn, x, p, tab, r0 + a, r0 + a + 1, c0, c0 + n, out[a:a + 1])
        g = r0 + a - c0
        if 0 <= g < n:
            out[a, g] += diag


@njit(nogil=True, cache=True)
def fill_lower(fn: int, x: Any, p: Any, tab: Any, r0: int, out: Any, diag: float, a0: int,
               a1: int) -> None:
    """Rows ``a0 <= a < a1`` of the lower triangle of the diagonal tile
    ``out = A[r0:r0 + m, r0:r0 + m]``, ``diag`` added on its diagonal."""
    for a in range(a0, a1):
        _block(fn, x, p, tab, r0 + a, r0 + a + 1, r0, r0 + a + 1, out[a:a + 1, :a + 1])
        out[a, a] += diag


# ---------------------------------------------------------------------------- randomness
@njit(nogil=True, inline="always")
def next_random(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """SplitMix64: the next state and a 64-bit output."""
    state = state + _GAMMA
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return state, z ^ (z >> np.uint64(31))


@njit(nogil=True, inline="always")
def tile_stream(seed: int, i: int, k: int) -> np.uint64:
    """The first state of the random stream of tile ``(i, k)`` under ``seed`` (>= 0)."""
    state, _ = next_random(np.uint64(seed) ^ (np.uint64(i) * _MIX1 + np.uint64(k) * _MIX2))
    return state


@njit(nogil=True, inline="always")
def _below(state: np.uint64, n: int) -> tuple[np.uint64, int]:
    """A uniform integer in ``[0, n)``."""
    state, z = next_random(state)
    u = float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return state, min(int(u * n), n - 1)


# ---------------------------------------------------------------------------- ACA of one tile
@njit(nogil=True, cache=True)
def _residual_row(fn: int, x: Any, p: Any, tab: Any, gi: int, c0: int, c1: int, Ut: Any,
                  Vt: Any, k: int, i: int, out: Any) -> None:
    """``out[0, :] = A[gi, c0:c1] - U[i, :k] V[:, :k]^T`` (factors stored transposed)."""
    _block(fn, x, p, tab, gi, gi + 1, c0, c1, out)
    n = c1 - c0
    for q in range(k):
        u = Ut[q, i]
        for c in range(n):
            out[0, c] -= u * Vt[q, c]


@njit(nogil=True, cache=True)
def _residual_col(fn: int, x: Any, p: Any, tab: Any, r0: int, r1: int, gj: int, Ut: Any,
                  Vt: Any, k: int, j: int, out: Any) -> None:
    """``out[:, 0] = A[r0:r1, gj] - U[:, :k] V[j, :k]^T``."""
    _block(fn, x, p, tab, r0, r1, gj, gj + 1, out)
    m = r1 - r0
    for q in range(k):
        v = Vt[q, j]
        for a in range(m):
            out[a, 0] -= v * Ut[q, a]


@njit(nogil=True, cache=True)
def _pick(state: np.uint64, used: Any, free: int, count: int,
          picks: Any) -> tuple[np.uint64, int]:
    """Up to ``count`` distinct indices with ``used`` false, into ``picks``; returns how many."""
    n = used.shape[0]
    if free <= count:
        c = 0
        for a in range(n):
            if not used[a]:
                picks[c] = a
                c += 1
        return state, c
    c = 0
    while c < count:
        state, a = _below(state, n)
        if used[a]:
            continue
        dup = False
        for q in range(c):
            if picks[q] == a:
                dup = True
        if not dup:
            picks[c] = a
            c += 1
    return state, c


@njit(nogil=True, cache=True)
def _grow(F: Any, width: int) -> Any:
    G = np.zeros((width, F.shape[1]))
    G[:F.shape[0]] = F
    return G


@njit(nogil=True, cache=True)
def _aca_one(fn: int, x: Any, p: Any, tab: Any, r0: int, r1: int, c0: int, c1: int,
             target: float, steps: int, state: np.uint64) -> tuple[Any, Any, int, float]:
    """ACA of the tile ``A[r0:r1, c0:c1]`` to the absolute accuracy ``target`` (0: run
    ``steps`` steps). Returns the factors (transposed, ``k`` rows used), ``k`` and the
    residual estimate of the last check (0 if the interpolation is exact)."""
    m, n = r1 - r0, c1 - c0
    full = min(m, n)
    width = max(1, min(steps, 32))
    Ut = np.zeros((width, m))
    Vt = np.zeros((width, n))
    used_r = np.zeros(m, dtype=np.bool_)
    used_c = np.zeros(n, dtype=np.bool_)
    free_r, free_c = m, n
    row = np.empty((1, n))
    col = np.empty((m, 1))
    sample_r = np.empty((_CHECK, n))
    sample_c = np.empty((m, _CHECK))
    picks = np.empty(_CHECK, dtype=np.int64)
    k, small, est = 0, 0, 0.0
    state, i = _below(state, max(m, 1))
    pending = False
    while k < steps and m > 0 and n > 0:
        if not pending:
            _residual_row(fn, x, p, tab, r0 + i, c0, c1, Ut, Vt, k, i, row)
        pending = False
        if not used_r[i]:
            used_r[i] = True
            free_r -= 1
        j = 0
        big = -1.0
        for c in range(n):
            a = abs(row[0, c])
            if a > big:
                big, j = a, c
        d = row[0, j]
        if d == 0.0:
            small += 1
        else:
            if k == Ut.shape[0]:
                Ut = _grow(Ut, min(steps, 2 * k))
                Vt = _grow(Vt, min(steps, 2 * k))
            _residual_col(fn, x, p, tab, r0, r1, c0 + j, Ut, Vt, k, j, col)
            cu = 0.0
            for a in range(m):
                Ut[k, a] = col[a, 0]
                cu += col[a, 0] * col[a, 0]
            cv = 0.0
            for c in range(n):
                v = row[0, c] / d
                Vt[k, c] = v
                cv += v * v
            if not used_c[j]:
                used_c[j] = True
                free_c -= 1
            k += 1
            small = small + 1 if math.sqrt(cu * cv) <= 0.25 * target else 0
        if small >= _SMALL_STEPS or free_r == 0:
            # Estimate the residual on random unused rows and columns: each sample is an
            # unbiased estimate of its squared Frobenius norm; the larger one decides.
            if free_r == 0:
                est = 0.0
                break
            state, nr = _pick(state, used_r, free_r, _CHECK, picks)
            worst_r, wr, tot_r = -1, -1.0, 0.0
            for q in range(nr):
                s = sample_r[q:q + 1]
                _residual_row(fn, x, p, tab, r0 + picks[q], c0, c1, Ut, Vt, k, picks[q], s)
                w = 0.0
                for c in range(n):
                    w += s[0, c] * s[0, c]
                tot_r += w
                if w > wr:
                    wr, worst_r = w, q
            worst_row = picks[worst_r]
            tot_r *= free_r / nr
            tot_c, wc, worst_col = 0.0, -1.0, -1
            if free_c > 0:
                state, nc = _pick(state, used_c, free_c, _CHECK, picks)
                for q in range(nc):
                    s = sample_c[:, q:q + 1]
                    _residual_col(fn, x, p, tab, r0, r1, c0 + picks[q], Ut, Vt, k, picks[q],
                                  s)
                    w = 0.0
                    for a in range(m):
                        w += s[a, 0] * s[a, 0]
                    tot_c += w
                    if w > wc:
                        wc, worst_col = w, q
                tot_c *= free_c / nc
            est = math.sqrt(max(tot_r, tot_c))
            if est <= 0.5 * target:
                break
            small = 0
            if tot_r >= tot_c:
                # continue from the worst sampled row, whose residual is at hand
                i = worst_row
                for c in range(n):
                    row[0, c] = sample_r[worst_r, c]
                pending = True
            else:
                # continue from the free row where the worst sampled column is largest
                big, i = -1.0, -1
                for a in range(m):
                    if not used_r[a] and abs(sample_c[a, worst_col]) > big:
                        big, i = abs(sample_c[a, worst_col]), a
            continue
        if d == 0.0:
            if free_r == 0:
                break
            state, nr = _pick(state, used_r, free_r, 1, picks)
            i = picks[0]
        else:
            big, i = -1.0, -1
            for a in range(m):
                if not used_r[a] and abs(Ut[k - 1, a]) > big:
                    big, i = abs(Ut[k - 1, a]), a
            if i < 0:
                break
    if k == full:
        est = 0.0  # every row or every column is a pivot: the cross interpolation is exact
    return Ut, Vt, k, est


@njit(nogil=True, cache=True)
def _recompress(Ut: Any, Vt: Any, k: int, budget: float, rank: int, fns: Any,
                U: Any, V: Any) -> tuple[int, float]:
    """Truncated SVD of ``U V^T`` (``k`` columns, given transposed) to ``budget`` and ``rank``
    (< 0: none), into ``U``, ``V`` (``U`` orthonormal) if it fits; returns the rank and
    ``||V||_F^2``. Nothing is written when the rank exceeds ``U``'s columns.

    ``U = Qu Ru`` (Householder), ``M = V Ru^T`` so that ``U V^T = Qu M^T``; the right singular
    vectors ``x`` and values ``s`` of ``M`` come from the SVD of the R factor of ``M`` alone
    (no second Q), and ``U V^T ~ (Qu x_r) (M x_r)^T``.
    """
    if k == 0:
        return 0, 0.0
    qu, ru = lapack.qr(Ut[:k].T, fns)
    M = np.ascontiguousarray(Vt[:k].T) @ ru.T
    s, xt = lapack.svd_right(lapack.qr_r(M, fns), fns)
    r = s.shape[0]
    tail = 0.0
    b2 = budget * budget
    while r > 0 and tail + s[r - 1] * s[r - 1] <= b2:
        tail += s[r - 1] * s[r - 1]
        r -= 1
    if 0 <= rank < r:
        r = rank
    if r > U.shape[1]:
        return r, 0.0
    x = np.ascontiguousarray(xt[:r].T)
    u = qu @ x
    v = M @ x
    U[:, :r] = u
    V[:, :r] = v
    nrm = 0.0
    for a in range(v.shape[0]):
        for c in range(r):
            nrm += v[a, c] * v[a, c]
    return r, nrm


@njit(nogil=True, cache=True)
def aca_tiles(fn: int, x: Any, p: Any, tab: Any, offsets: Any, ti: Any, tk: Any,
              atol: Any, steps: int, rank: int, seed: int, fns: Any, U: Any, V: Any,
              ranks: Any, norms: Any, status: Any, b0: int, b1: int) -> None:
    """Compress tiles ``(ti[b], tk[b])``, ``b0 <= b < b1``, of the tiling ``offsets`` by ACA.

    Parameters
    ----------
    atol : float64 (B,)
        Absolute Frobenius accuracy per tile (0 with a fixed rank).
    steps : int
        Most ACA steps (the rank cap plus oversampling; ``>= min(m, n)``: no cap).
    rank : int
        Final rank cap (< 0: none).
    seed : int
        Randomness (with the tile position), >= 0.
    fns : int64 array
        :func:`tricov.kernels.numba.lapack.addresses`.
    U, V : float64 (B, M, R), (B, N, R)
        Outputs: tile ``b`` gets ``U[b, :m, :r]`` (orthonormal columns), ``V[b, :n, :r]``.
    ranks, norms, status : (B,) int64, float64, int64
        Rank, ``||U V^T||_F^2`` and 0, or :data:`OVERFLOW` if ``r > R`` (then nothing is
        stored, and ``ranks[b]`` is the rank needed).
    """
    for b in range(b0, b1):
        i, k = ti[b], tk[b]
        r0, r1, c0, c1 = offsets[i], offsets[i + 1], offsets[k], offsets[k + 1]
        state = tile_stream(seed, i, k)
        Ut, Vt, kk, est = _aca_one(fn, x, p, tab, r0, r1, c0, c1, atol[b],
                                   min(steps, min(r1 - r0, c1 - c0)), state)
        # residual and truncation add (not orthogonal); the residual taken as twice its estimate
        budget = max(atol[b] - 2.0 * est, 0.0)
        r, nrm = _recompress(Ut, Vt, kk, budget, rank, fns, U[b, :r1 - r0], V[b, :c1 - c0])
        ranks[b] = r
        norms[b] = nrm
        status[b] = OVERFLOW if r > U.shape[2] else 0
