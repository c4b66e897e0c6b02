"""Batched kernels for small matrices: ``W`` batch members at a time, side by side in SIMD lanes.

Every operation is computed in one canonical variant only, on scratch copies of ``W`` members:

=========  ==========================================================================
``TRSM``   solve ``L X = B`` (``L`` lower ``n x n``, ``B`` ``n x m``), X over B
``TRMM``   ``B <- L B``
``HERK``   lower triangle of ``C <- alpha A A^H + beta C`` (``C`` ``n x n``, ``A`` ``n x m``)
``POTRF``  ``C = L L^H`` in the lower triangle
``TRTRI``  ``L <- L^-1``;  ``LAUUM``: ``L <- L^H L``
fused      ``POTRI`` (TRTRI, LAUUM), ``POTI`` (POTRF, TRTRI, LAUUM), ``POTRS`` (two solves),
           ``POSV`` (POTRF and the two solves), each in one pass over a member's data
=========  ==========================================================================

Every other variant is reached by *how* the operands are copied in and out (the "pack"): the
canonical operand's element ``(i, j)``, after an optional reversal of ``i`` and ``j``, is the
member's memory element ``(i, j)`` or, transposed, ``(j, i)``, optionally conjugated. So
transposes (C order, ``trans``, right side, ``uplo='U'``), conjugates and the row/column
reversal ``P U P`` that turns an upper triangle into a lower one cost nothing; the front end
(:mod:`tricov.batched._cpu`) derives these descriptors from the logical views of
:mod:`tricov._views` and the variant identities of :mod:`tricov._options`.

The scratch holds ``W`` members (16 float32 or 8 float64 per 64-byte vector; complex data in
split real/imaginary planes, see :mod:`.lanes`). Every arithmetic operation is one SIMD
instruction over the ``W`` members (:mod:`.simd`), so the serial chains of tiny
factorizations (square roots, divisions) are amortised over ``W`` members, and loops over the
matrix order never limit vector efficiency. Members are moved between memory and scratch by
blocks of ``W`` reals per member and one register transpose per block (:func:`.simd.tload`,
:func:`.simd.tstore`, masked loads and stores: nothing outside an operand's region is
written). Where an operand lies in scratch as in memory (contiguous members whose memory
columns are the scratch's rows or columns, orders up to ``W``, see :func:`_transfer`), its
whole block is moved as one run of full blocks (the other triangle of a triangular operand is
read but never used nor written back); elsewhere column by column, reading only the region.
POTRF of orders 4, 8 and 12 runs a copy of the chunk loop compiled for that order, so its
loops over the order have constant trip counts (unrolled, constant masks and offsets). Order 12
gained about 12% that way (float64, 10240 members, ``benchmarks/cpu_potrf_lanes12.txt``); order
16 lost on one thread, so it keeps the general loop (each copy costs about 4 s of compilation
per dtype). Real POTRF from order :data:`PANEL_MIN` runs by panels of four columns, blocks of
four rows by four columns sharing their loads (:func:`_potrf_panels`). Square operands of the
sizes of :data:`PREFETCH_BYTES` are prefetched two chunks ahead, so that their memory traffic
overlaps the arithmetic of the chunks before them.

Failures are per member: POTRF records the first non-positive (or NaN) pivot of each member
(LAPACK's ``info``) and keeps going, so one failing member never changes the others; TRTRI and
POTRI find exact zero pivots before computing and leave those members unchanged.

Threads: each thread claims runs of contiguous chunks from a shared atomic counter
(:func:`.calls.claim`) until none is left, so a thread whose core is busy elsewhere takes less
of the batch instead of holding the call for a fixed share; small calls run in the calling
thread alone (:data:`SERIAL_WORK`), which then wakes no other thread. The per-dtype
work is compiled once as a C callback (:func:`_worker`) and called by address from one
dtype-independent parallel loop (:func:`.calls.for_threads`), which keeps the compile time of
each dtype to one pass over the kernels (about 9 s per dtype, cached on disk by Numba).

Numba's on-disk cache checks only the source file of each cached function; the package drops
every cache of tricov when any of its Numba sources changes (:func:`..drop_stale_caches`), so
that editing :mod:`.simd` or :mod:`.lanes` recompiles this module too.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
from numba import cfunc, njit, types
from numba.extending import register_jitable

from .calls import claim, for_threads
from .lanes import (
    as_array,
    eadd,
    econj,
    efill,
    efma,
    efmac,
    efmca,
    efnma,
    efnmac,
    efromre,
    eload,
    emul,
    emulre,
    ere,
    erecip,
    estore,
    ewidth,
    from_parts,
    itemsize,
    lane_get,
    nlanes,
    scratch,
)
from .simd import lanes, prefetch, tload, tstore, vdiv, vfill, vnotpos, vsqrt

__all__ = ["HERK", "LAUUM", "OPS", "POSV", "POTI", "POTRF", "POTRI", "POTRS", "TRMM", "TRSM",
           "TRTRI", "lanes_for", "record", "rerun", "run"]

TRSM, TRMM, HERK, POTRF, TRTRI, LAUUM, POTRI, POTI, POTRS, POSV = range(10)
#: Operation codes by name.
OPS = {"trsm": TRSM, "trmm": TRMM, "herk": HERK, "potrf": POTRF, "trtri": TRTRI,
       "lauum": LAUUM, "potri": POTRI, "poti": POTI, "potrs": POTRS, "posv": POSV}

_FAST = {"contract"}


def lanes_for(dtype: np.dtype) -> int:
    """Members processed side by side for a member dtype."""
    dtype = np.dtype(dtype)
    return lanes(np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype)


# ----------------------------------------------------------------------------- kernels
# Each works on the scratch ``s``: the square operand T (n x n) at 0, stored by rows with row
# stride ``lt`` elements (element (i, j) at ``(i*lt + j) * ew``), and the rectangular R (n x m)
# at ``ro``, stored by columns with column stride ``lr`` (element (i, j) at
# ``ro + (i + j*lr) * ew``), except for HERK, which reads R by rows (row stride ``lr``). So the
# inner loops of the dot products below walk contiguous memory; the strides are odd past 16 (see
# :func:`_stride`) so that walking a column of T does not hit one cache set again and again.
# Loops are blocked by four rows or columns where that gives four independent accumulators.

@register_jitable
def _stride(k):
    """A row or column stride of the scratch for ``k`` elements: ``k`` itself up to 16 (the
    operand then lies in scratch as in memory, see :func:`_transfer`), else the odd number
    ``k | 1``."""
    return k if k <= 16 else k | 1


#: Real orders from which POTRF runs by panels of four columns (:func:`_potrf_panels`): one
#: column at a time, each of its products loads an element of the row being solved and one of
#: the pivot's row (1.25 loads a multiply-add by blocks of four rows), by panels a block of four
#: rows by four columns shares them (0.5). Float64 on one Zen 4 thread, 10240 members, ms
#: (``benchmarks/cpu_potrf_panels.txt``): order 15 1.55 -> 1.41-1.45, 32 9.9-10.1 -> 8.8;
#: orders up to 14 keep the columns (the panels' idle columns and rows outweigh the gain: order
#: 5 0.36 -> 0.45). Complex data keeps the columns at every order: its products already do four
#: multiply-adds per pair of loads, and the panels gained nothing.
PANEL_MIN = 15


@njit(cache=True, fastmath=_FAST)
def _potrf(s, n, lt, z, info):
    """Left-looking Cholesky of the lower triangle of T; ``info`` per lane (0 = success)."""
    if ewidth(z) == nlanes(z) and n >= PANEL_MIN:
        _potrf_panels(s, n, lt, z, info)
    else:
        _potrf_columns(s, n, lt, z, info)


@njit(cache=True, fastmath=_FAST)
def _potrf_columns(s, n, lt, z, info):
    """:func:`_potrf` one column at a time (the pivot's dot product, then the rows below it by
    blocks of four)."""
    ew = ewidth(z)
    rs = lt * ew
    for j in range(n):
        rj = j * rs
        ojj = rj + j * ew
        d = eload(s, ojj, z)
        for k in range(j):
            x = eload(s, rj + k * ew, z)
            d = efnmac(x, x, d)
        root, inv = _pivot(s, d, j, n, info)
        estore(s, ojj, efromre(root, z))
        i = j + 1
        while i + 3 < n:
            r0, r1, r2, r3 = i * rs, (i + 1) * rs, (i + 2) * rs, (i + 3) * rs
            a0 = eload(s, r0 + j * ew, z)
            a1 = eload(s, r1 + j * ew, z)
            a2 = eload(s, r2 + j * ew, z)
            a3 = eload(s, r3 + j * ew, z)
            for k in range(j):
                b = eload(s, rj + k * ew, z)
                a0 = efnmac(eload(s, r0 + k * ew, z), b, a0)
                a1 = efnmac(eload(s, r1 + k * ew, z), b, a1)
                a2 = efnmac(eload(s, r2 + k * ew, z), b, a2)
                a3 = efnmac(eload(s, r3 + k * ew, z), b, a3)
            estore(s, r0 + j * ew, emulre(a0, inv))
            estore(s, r1 + j * ew, emulre(a1, inv))
            estore(s, r2 + j * ew, emulre(a2, inv))
            estore(s, r3 + j * ew, emulre(a3, inv))
            i += 4
        while i < n:
            ri = i * rs
            a = eload(s, ri + j * ew, z)
            for k in range(j):
                a = efnmac(eload(s, ri + k * ew, z), eload(s, rj + k * ew, z), a)
            estore(s, ri + j * ew, emulre(a, inv))
            i += 1


@register_jitable
def _minus4(x, b0, b1, b2, b3, a):
    """``a[c] - x conj(b_c)`` for the four columns of a row of a panel block."""
    return (efnmac(x, b0, a[0]), efnmac(x, b1, a[1]), efnmac(x, b2, a[2]),
            efnmac(x, b3, a[3]))


@register_jitable
def _panel_block(s, p0, p1, p2, p3, q0, q1, q2, q3, c0, c1, c2, c3, k1, z):
    """Rows at ``p0 .. p3`` of the panel's columns at ``c0 .. c3``, less the products of the
    columns ``k < k1`` of those rows and of the panel's rows at ``q0 .. q3``."""
    ew = ewidth(z)
    r0 = (eload(s, p0 + c0, z), eload(s, p0 + c1, z), eload(s, p0 + c2, z), eload(s, p0 + c3, z))
    r1 = (eload(s, p1 + c0, z), eload(s, p1 + c1, z), eload(s, p1 + c2, z), eload(s, p1 + c3, z))
    r2 = (eload(s, p2 + c0, z), eload(s, p2 + c1, z), eload(s, p2 + c2, z), eload(s, p2 + c3, z))
    r3 = (eload(s, p3 + c0, z), eload(s, p3 + c1, z), eload(s, p3 + c2, z), eload(s, p3 + c3, z))
    for k in range(k1):
        o = k * ew
        b0, b1 = eload(s, q0 + o, z), eload(s, q1 + o, z)
        b2, b3 = eload(s, q2 + o, z), eload(s, q3 + o, z)
        r0 = _minus4(eload(s, p0 + o, z), b0, b1, b2, b3, r0)
        r1 = _minus4(eload(s, p1 + o, z), b0, b1, b2, b3, r1)
        r2 = _minus4(eload(s, p2 + o, z), b0, b1, b2, b3, r2)
        r3 = _minus4(eload(s, p3 + o, z), b0, b1, b2, b3, r3)
    return r0, r1, r2, r3


@register_jitable
def _pivot(s, a, col, n, info):
    """Square root and its inverse of the pivot ``a``; lanes whose pivot is not positive get
    ``info = col + 1`` unless they already failed (only for a column ``col < n``)."""
    d = ere(a)
    bad = vnotpos(d)
    if bad and col < n:
        for lane in range(len(info)):
            if bad >> lane & 1 and info[lane] == 0:
                info[lane] = col + 1
    root = vsqrt(d)
    return root, vdiv(vfill(s, 1.0), root)


@register_jitable
def _panel_row(s, p, a, c0, c1, c2, c3, jb, factor, inv):
    """Store the row at ``p`` of the panel's first ``jb`` columns: ``a L^-H``, ``L`` the
    panel's diagonal block (``factor``: its strict lower part by rows, ``inv``: the inverses
    of its diagonal)."""
    l10, l20, l21, l30, l31, l32 = factor
    x0 = emulre(a[0], inv[0])
    x1 = emulre(efnmac(x0, l10, a[1]), inv[1])
    x2 = emulre(efnmac(x1, l21, efnmac(x0, l20, a[2])), inv[2])
    x3 = emulre(efnmac(x2, l32, efnmac(x1, l31, efnmac(x0, l30, a[3]))), inv[3])
    estore(s, p + c0, x0)
    if jb > 1:
        estore(s, p + c1, x1)
    if jb > 2:
        estore(s, p + c2, x2)
    if jb > 3:
        estore(s, p + c3, x3)


@njit(cache=True, fastmath=_FAST)
def _potrf_panels(s, n, lt, z, info):
    """:func:`_potrf` by panels of four columns.

    Each panel's rows are computed by blocks of four: sixteen sums over the columns left of the
    panel, four loads of the panel's rows and four of the block's per column (the diagonal
    block's upper half is computed and dropped). Rows and columns past ``n`` (the last panel
    or block) repeat row ``n - 1``; their results are never stored nor tested.
    """
    ew = ewidth(z)
    rs = lt * ew
    last = n - 1
    for j0 in range(0, n, 4):
        q0, q1 = j0 * rs, min(j0 + 1, last) * rs
        q2, q3 = min(j0 + 2, last) * rs, min(j0 + 3, last) * rs
        c0, c1 = j0 * ew, min(j0 + 1, last) * ew
        c2, c3 = min(j0 + 2, last) * ew, min(j0 + 3, last) * ew
        a0, a1, a2, a3 = _panel_block(s, q0, q1, q2, q3, q0, q1, q2, q3, c0, c1, c2, c3, j0, z)
        root0, inv0 = _pivot(s, a0[0], j0, n, info)
        l10, l20, l30 = emulre(a1[0], inv0), emulre(a2[0], inv0), emulre(a3[0], inv0)
        root1, inv1 = _pivot(s, efnmac(l10, l10, a1[1]), j0 + 1, n, info)
        l21 = emulre(efnmac(l20, l10, a2[1]), inv1)
        l31 = emulre(efnmac(l30, l10, a3[1]), inv1)
        root2, inv2 = _pivot(s, efnmac(l21, l21, efnmac(l20, l20, a2[2])), j0 + 2, n, info)
        l32 = emulre(efnmac(l31, l21, efnmac(l30, l20, a3[2])), inv2)
        root3, inv3 = _pivot(s, efnmac(l32, l32, efnmac(l31, l31, efnmac(l30, l30, a3[3]))),
                             j0 + 3, n, info)
        estore(s, q0 + c0, efromre(root0, z))
        if j0 + 1 < n:
            estore(s, q1 + c0, l10)
            estore(s, q1 + c1, efromre(root1, z))
        if j0 + 2 < n:
            estore(s, q2 + c0, l20)
            estore(s, q2 + c1, l21)
            estore(s, q2 + c2, efromre(root2, z))
        if j0 + 3 < n:
            estore(s, q3 + c0, l30)
            estore(s, q3 + c1, l31)
            estore(s, q3 + c2, l32)
            estore(s, q3 + c3, efromre(root3, z))
        factor = (l10, l20, l21, l30, l31, l32)
        inv = (inv0, inv1, inv2, inv3)
        jb = min(4, n - j0)
        for i0 in range(j0 + 4, n, 4):
            p0, p1 = i0 * rs, min(i0 + 1, last) * rs
            p2, p3 = min(i0 + 2, last) * rs, min(i0 + 3, last) * rs
            b0, b1, b2, b3 = _panel_block(s, p0, p1, p2, p3, q0, q1, q2, q3, c0, c1, c2, c3,
                                          j0, z)
            _panel_row(s, p0, b0, c0, c1, c2, c3, jb, factor, inv)
            if i0 + 1 < n:
                _panel_row(s, p1, b1, c0, c1, c2, c3, jb, factor, inv)
            if i0 + 2 < n:
                _panel_row(s, p2, b2, c0, c1, c2, c3, jb, factor, inv)
            if i0 + 3 < n:
                _panel_row(s, p3, b3, c0, c1, c2, c3, jb, factor, inv)


@njit(cache=True, fastmath=_FAST)
def _solve_row(s, m, ro, lr, i, k0, k1, tstep, tbase, r, scale, conj_t, z):
    """``R[i, c] <- (R[i, c] - sum_k op(T_ik) R[k, c]) * r`` for every column c, k in [k0, k1).

    ``T_ik`` is read at ``tbase + k * tstep`` (a row or a column of T), conjugated if
    ``conj_t``; ``scale`` says whether to multiply by ``r`` (else the unit diagonal).
    """
    ew = ewidth(z)
    cs = lr * ew
    c = 0
    while c + 3 < m:
        o = ro + i * ew + c * cs
        a0 = eload(s, o, z)
        a1 = eload(s, o + cs, z)
        a2 = eload(s, o + 2 * cs, z)
        a3 = eload(s, o + 3 * cs, z)
        for k in range(k0, k1):
            t = eload(s, tbase + k * tstep, z)
            if conj_t:
                t = econj(t)
            x = ro + k * ew + c * cs
            a0 = efnma(t, eload(s, x, z), a0)
            a1 = efnma(t, eload(s, x + cs, z), a1)
            a2 = efnma(t, eload(s, x + 2 * cs, z), a2)
            a3 = efnma(t, eload(s, x + 3 * cs, z), a3)
        if scale:
            a0, a1, a2, a3 = emul(a0, r), emul(a1, r), emul(a2, r), emul(a3, r)
        estore(s, o, a0)
        estore(s, o + cs, a1)
        estore(s, o + 2 * cs, a2)
        estore(s, o + 3 * cs, a3)
        c += 4
    while c < m:
        o = ro + i * ew + c * cs
        a = eload(s, o, z)
        for k in range(k0, k1):
            t = eload(s, tbase + k * tstep, z)
            if conj_t:
                t = econj(t)
            a = efnma(t, eload(s, ro + k * ew + c * cs, z), a)
        if scale:
            a = emul(a, r)
        estore(s, o, a)
        c += 1


@njit(cache=True, fastmath=_FAST)
def _trsm(s, n, m, lt, ro, lr, unit, z):
    """Forward substitution ``L X = R`` in place of R (``unit``: L has a unit diagonal)."""
    ew = ewidth(z)
    for i in range(n):
        r = erecip(eload(s, (i * lt + i) * ew, z))
        _solve_row(s, m, ro, lr, i, 0, i, ew, i * lt * ew, r, not unit, False, z)


@njit(cache=True, fastmath=_FAST)
def _trsm_lh(s, n, m, lt, ro, lr, z):
    """Backward substitution ``L^H X = R`` in place of R (L lower, non-unit)."""
    ew = ewidth(z)
    for i in range(n - 1, -1, -1):
        r = econj(erecip(eload(s, (i * lt + i) * ew, z)))
        _solve_row(s, m, ro, lr, i, i + 1, n, lt * ew, i * ew, r, True, True, z)


@njit(cache=True, fastmath=_FAST)
def _trmm(s, n, m, lt, ro, lr, unit, z):
    """``R <- L R`` in place, bottom row first (row i reads only the rows above it)."""
    ew = ewidth(z)
    cs = lr * ew
    for i in range(n - 1, -1, -1):
        ri = i * lt * ew
        d = eload(s, ri + i * ew, z)
        c = 0
        while c + 3 < m:
            o = ro + i * ew + c * cs
            a0 = eload(s, o, z)
            a1 = eload(s, o + cs, z)
            a2 = eload(s, o + 2 * cs, z)
            a3 = eload(s, o + 3 * cs, z)
            if not unit:
                a0, a1, a2, a3 = emul(d, a0), emul(d, a1), emul(d, a2), emul(d, a3)
            for k in range(i):
                t = eload(s, ri + k * ew, z)
                x = ro + k * ew + c * cs
                a0 = efma(t, eload(s, x, z), a0)
                a1 = efma(t, eload(s, x + cs, z), a1)
                a2 = efma(t, eload(s, x + 2 * cs, z), a2)
                a3 = efma(t, eload(s, x + 3 * cs, z), a3)
            estore(s, o, a0)
            estore(s, o + cs, a1)
            estore(s, o + 2 * cs, a2)
            estore(s, o + 3 * cs, a3)
            c += 4
        while c < m:
            o = ro + i * ew + c * cs
            a = eload(s, o, z)
            if not unit:
                a = emul(d, a)
            for k in range(i):
                a = efma(eload(s, ri + k * ew, z), eload(s, ro + k * ew + c * cs, z), a)
            estore(s, o, a)
            c += 1


@njit(cache=True, fastmath=_FAST)
def _herk(s, n, m, lt, ro, lr, alpha, beta, z):
    """Lower triangle of ``T <- alpha R R^H + beta T`` (R by rows); T unread when ``beta == 0``."""
    ew = ewidth(z)
    rs = lr * ew
    va, vb = vfill(s, alpha), vfill(s, beta)
    zero = efromre(vfill(s, 0.0), z)
    for j in range(n):
        rj = ro + j * rs
        i = j
        while i + 3 < n:
            r0 = ro + i * rs
            r1, r2, r3 = r0 + rs, r0 + 2 * rs, r0 + 3 * rs
            a0 = a1 = a2 = a3 = zero
            for p in range(m):
                b = eload(s, rj + p * ew, z)
                a0 = efmac(eload(s, r0 + p * ew, z), b, a0)
                a1 = efmac(eload(s, r1 + p * ew, z), b, a1)
                a2 = efmac(eload(s, r2 + p * ew, z), b, a2)
                a3 = efmac(eload(s, r3 + p * ew, z), b, a3)
            _herk_store(s, (i * lt + j) * ew, a0, va, vb, beta, i == j, z)
            _herk_store(s, ((i + 1) * lt + j) * ew, a1, va, vb, beta, False, z)
            _herk_store(s, ((i + 2) * lt + j) * ew, a2, va, vb, beta, False, z)
            _herk_store(s, ((i + 3) * lt + j) * ew, a3, va, vb, beta, False, z)
            i += 4
        while i < n:
            ri = ro + i * rs
            a = zero
            for p in range(m):
                a = efmac(eload(s, ri + p * ew, z), eload(s, rj + p * ew, z), a)
            _herk_store(s, (i * lt + j) * ew, a, va, vb, beta, i == j, z)
            i += 1


@njit(cache=True, fastmath=_FAST)
def _herk_store(s, o, acc, va, vb, beta, diag, z):
    """``T[o] <- alpha acc + beta T[o]`` (T unread when ``beta == 0``; real on the diagonal)."""
    acc = emulre(acc, va)
    if beta != 0:
        acc = eadd(emulre(eload(s, o, z), vb), acc)
    if diag:
        acc = efromre(ere(acc), z)
    estore(s, o, acc)


@njit(cache=True, fastmath=_FAST)
def _trtri(s, n, lt, unit, z):
    """``L <- L^-1`` in place, columns right to left (LAPACK's TRTI2 order)."""
    ew = ewidth(z)
    rs = lt * ew
    minus = efromre(vfill(s, -1.0), z)
    for j in range(n - 1, -1, -1):
        ojj = j * rs + j * ew
        ajj = minus
        if not unit:
            inv = erecip(eload(s, ojj, z))
            estore(s, ojj, inv)
            ajj = emul(inv, minus)
        # column j below the diagonal <- X22 A[j+1:, j] * ajj, X22 the inverse found so far;
        # bottom-up, so that row i still reads the old values of the rows above it
        for i in range(n - 1, j, -1):
            ri = i * rs
            acc = eload(s, ri + j * ew, z)
            if not unit:
                acc = emul(eload(s, ri + i * ew, z), acc)
            for k in range(j + 1, i):
                acc = efma(eload(s, ri + k * ew, z), eload(s, k * rs + j * ew, z), acc)
            estore(s, ri + j * ew, emul(acc, ajj))


@njit(cache=True, fastmath=_FAST)
def _lauum(s, n, lt, z):
    """``L <- L^H L`` in the lower triangle, rows top-down (row i reads only rows below it)."""
    ew = ewidth(z)
    rs = lt * ew
    zero = efromre(vfill(s, 0.0), z)
    for i in range(n):
        for j in range(i + 1):
            acc = zero
            for k in range(i, n):
                acc = efmca(eload(s, k * rs + i * ew, z), eload(s, k * rs + j * ew, z), acc)
            if i == j:
                acc = efromre(ere(acc), z)
            estore(s, i * rs + j * ew, acc)


# ------------------------------------------------------------------------ pack / unpack
# A canonical operand maps to member memory as follows: its element (i, j), after reversing i
# (and j) if asked, is memory element (i, j), or (j, i) if ``tr``; memory is column-major with
# leading dimension ``ld`` (elements). In scratch, element (i, j) is at ``i*rs + j*cs``
# elements from the operand's start. Memory is walked column by column, in blocks of W reals,
# each moved between W members and the scratch by one register transpose; only the rows of a
# column that hold the operand's region are read or written.

@njit(cache=True)
def _canon(r, c, rows, cols, tr, rev_i, rev_j):
    """Canonical (i, j) of memory element (r, c)."""
    i, j = (c, r) if tr else (r, c)
    if rev_i:
        i = rows - 1 - i
    if rev_j:
        j = cols - 1 - j
    return i, j


@njit(cache=True)
def _rows_of(c, mrows, tri, strict, tr, rev):
    """Rows ``[lo, hi)`` of memory column ``c`` that hold the operand's region.

    For a triangle, canonical ``i >= j`` (``>`` if ``strict``) is memory ``r >= c`` when the
    memory is neither transposed nor reversed, and ``r <= c`` when exactly one of them holds.
    """
    if not tri:
        return 0, mrows
    gap = 1 if strict else 0
    if tr == rev:
        return c + gap, mrows
    return 0, max(0, c + 1 - gap)


@njit(cache=True)
def _place(r, c, rows, cols, rs, cs, tr, rev_i, rev_j):
    """Scratch index (in elements) of memory element (r, c), and its step as r grows by one."""
    i, j = _canon(r, c, rows, cols, tr, rev_i, rev_j)
    if tr:  # r moves along j
        return i * rs + j * cs, -cs if rev_j else cs
    return i * rs + j * cs, -rs if rev_i else rs


@njit(cache=True, fastmath=_FAST)
def _transfer(s, at0, rs, cs, rows, cols, tri, strict, addrs, b0, sel, ld, tr, rev_i, rev_j,
              conj, z, store):
    """Move the canonical ``rows x cols`` operand between the members and the lanes.

    The region is the operand (its lower triangle if ``tri``, without the diagonal if
    ``strict``), conjugated on the way if ``conj``, at ``s[at0:]`` in the lanes. Loading
    (``store`` false) fills lanes ``b0 .. b0+sel-1`` (idle lanes get zeros); storing writes back
    the lanes set in the bit mask ``sel``.
    """
    ew = ewidth(z)
    epr = ew // nlanes(z)  # reals per element
    per = nlanes(z) // epr  # elements per block of W reals
    isz = itemsize(z)
    mrows, mcols = (cols, rows) if tr else (rows, cols)
    at, step = _place(0, 0, rows, cols, rs, cs, tr, rev_i, rev_j)
    if ld == mrows and (not tri or mrows <= per) and (
            mcols == 1 or _place(0, 1, rows, cols, rs, cs, tr, rev_i, rev_j)[0] - at
            == mrows * step):
        # memory element k = c*ld + r lies at scratch ``at + k*step``: one run of blocks
        total = mrows * mcols
        for e0 in range(0, total, per):
            cnt = min(per, total - e0)
            if store:
                keep = _region_bits(e0, cnt, mrows, tri, strict, tr, rev_i, epr)
                if keep:
                    tstore(s, at0 + at * ew, step * ew, z, conj, addrs, b0, sel, e0 * isz,
                           keep)
            else:  # a triangle's block is read whole; the other triangle is never used
                tload(s, at0 + at * ew, step * ew, z, conj, addrs, b0, sel, e0 * isz,
                      cnt * epr)
            at += cnt * step
        return
    for c in range(mcols):
        lo, hi = _rows_of(c, mrows, tri, strict, tr, rev_i)
        if lo >= hi:
            continue
        at, step = _place(lo, c, rows, cols, rs, cs, tr, rev_i, rev_j)
        for e0 in range(lo, hi, per):
            cnt = min(per, hi - e0)
            if store:
                tstore(s, at0 + at * ew, step * ew, z, conj, addrs, b0, sel,
                       (c * ld + e0) * isz, (1 << (cnt * epr)) - 1)
            else:
                tload(s, at0 + at * ew, step * ew, z, conj, addrs, b0, sel,
                      (c * ld + e0) * isz, cnt * epr)
            at += cnt * step


@njit(cache=True)
def _region_bits(e0, cnt, mrows, tri, strict, tr, rev, epr):
    """Bit mask of the reals of the memory elements ``e0 .. e0+cnt-1`` (column-major, ``mrows``
    rows) that lie in the operand's region (see :func:`_rows_of`).

    Orders 2, 4 and 8 test element by element (divisions by a power of two; the chunk loops
    compiled for orders 4 and 8 fold the masks to constants); other orders take the columns
    the block spans, one run of bits each: no division per element. Float32 POTRF of 10240
    members on one thread went 0.69-0.71 -> 0.49-0.55 ms at order 12 and 1.23-1.32 -> 1.02-1.14
    at 16, float64 0.37 -> 0.32-0.34 at 5 (``benchmarks/cpu_potrf_panels.txt``).
    """
    bits = 0
    if mrows <= 8 and mrows & (mrows - 1) == 0:
        for q in range(cnt):
            r, c = (e0 + q) % mrows, (e0 + q) // mrows
            lo, hi = _rows_of(c, mrows, tri, strict, tr, rev)
            if lo <= r < hi:
                bits |= ((1 << epr) - 1) << (q * epr)
        return bits
    for c in range(e0 // mrows, (e0 + cnt - 1) // mrows + 1):
        lo, hi = _rows_of(c, mrows, tri, strict, tr, rev)
        first, last = max(lo + c * mrows, e0), min(hi + c * mrows, e0 + cnt)
        if first < last:
            bits |= ((1 << ((last - first) * epr)) - 1) << ((first - e0) * epr)
    return bits


@njit(cache=True, fastmath=_FAST)
def _pack(s, dst, rs, cs, rows, cols, tri, strict, addrs, b0, nl, ld, tr, rev_i, rev_j, conj,
          z):
    """Copy members ``b0 .. b0+nl-1`` into the lanes at ``s[dst:]`` (see :func:`_transfer`)."""
    _transfer(s, dst, rs, cs, rows, cols, tri, strict, addrs, b0, nl, ld, tr, rev_i, rev_j,
              conj, z, False)


@njit(cache=True, fastmath=_FAST)
def _unpack(s, src, rs, cs, rows, cols, tri, strict, addrs, b0, lanes, ld, tr, rev_i, rev_j,
            conj, z):
    """Copy the lanes set in the bit mask ``lanes`` back to their members (region only)."""
    _transfer(s, src, rs, cs, rows, cols, tri, strict, addrs, b0, lanes, ld, tr, rev_i, rev_j,
              conj, z, True)


@njit(cache=True, fastmath=_FAST)
def _scale(s, ro, n, m, lr, alpha, z):
    """``R <- alpha R`` (R by columns, stride ``lr``)."""
    ew = ewidth(z)
    factor = efill(s, alpha)
    for j in range(m):
        for i in range(n):
            o = ro + (i + j * lr) * ew
            estore(s, o, emul(eload(s, o, z), factor))


@njit(cache=True)
def _zero_pivot(s, n, lt, lane, z):
    """1-based index of the first exactly zero diagonal element of lane ``lane``, else 0."""
    ew = ewidth(z)
    for j in range(n):
        if lane_get(s, (j * lt + j) * ew, lane, z) == 0:
            return j + 1
    return 0


# ------------------------------------------------------------------------------ chunks
@njit(cache=True, inline="always")
def _chunk(op, z, n, m, unit, alpha, beta, tp, tld, ttr, trev, tc, rp, rld, rtr, rrev, rc,
           info, b0, nl, s, linfo):
    """Pack, compute and unpack the members ``b0 .. b0+nl-1``.

    Inlined into the chunk loop (Numba's own inlining): a call passed its 22 arguments, arrays
    as structures of seven words, for every chunk; inlined, float64 POTRF of 10240 members of
    order 4 took 0.151-0.166 ms on one thread instead of 0.174-0.185, of order 8 0.38-0.41
    instead of 0.42-0.46 (``benchmarks/cpu_potrf_panels.txt``).

    ``n`` may be a compile-time constant (see :func:`_work`); the T packing and POTRF then
    are compiled for it, every other kernel takes the run-time order ``nd`` and is compiled
    once.
    """
    nd = n + 0
    w = nlanes(z)
    ew = ewidth(z)
    lt, lr = _stride(n), _stride(m if op == HERK else n)
    ro = n * lt * ew
    has_r = op in (TRSM, TRMM, HERK, POTRS, POSV)
    rrs, rcs = (lr, 1) if op == HERK else (1, lr)
    tri_unit = unit and op in (TRSM, TRMM, TRTRI)
    for lane in range(w):
        linfo[lane] = 0
    if op != HERK or beta != 0:
        _pack(s, 0, lt, 1, n, n, True, tri_unit, tp, b0, nl, tld, ttr, trev, trev, tc, z)
    if tri_unit:
        one = efromre(vfill(s, 1.0), z)
        for j in range(n):
            estore(s, (j * lt + j) * ew, one)
    if has_r:
        _pack(s, ro, rrs, rcs, nd, m, False, False, rp, b0, nl, rld, rtr, rrev, False, rc, z)
        if op in (TRSM, TRMM) and alpha != 1:
            _scale(s, ro, nd, m, lr, alpha, z)
    if (op == TRTRI and not unit) or op == POTRI:
        for lane in range(nl):
            linfo[lane] = _zero_pivot(s, nd, lt, lane, z)
    if op == TRSM:
        _trsm(s, nd, m, lt, ro, lr, unit, z)
    elif op == TRMM:
        _trmm(s, nd, m, lt, ro, lr, unit, z)
    elif op == HERK:
        _herk(s, nd, m, lt, ro, lr, alpha.real, beta, z)
    elif op == TRTRI:
        _trtri(s, nd, lt, unit, z)
    elif op == LAUUM:
        _lauum(s, nd, lt, z)
    elif op == POTRI:
        _trtri(s, nd, lt, False, z)
        _lauum(s, nd, lt, z)
    else:  # POTRF, POTI, POTRS, POSV
        if op != POTRS:
            _potrf(s, n, lt, z, linfo)
        if op == POTI:
            failed = _lane_bits(linfo, nl, True)
            if failed:  # failing members keep the partial factorization
                _unpack(s, 0, lt, 1, n, n, True, False, tp, b0, failed, tld, ttr, trev, trev,
                        tc, z)
            _trtri(s, nd, lt, False, z)
            _lauum(s, nd, lt, z)
        elif op != POTRF:
            _trsm(s, nd, m, lt, ro, lr, False, z)
            _trsm_lh(s, nd, m, lt, ro, lr, z)
    good = _lane_bits(linfo, nl, False)
    for lane in range(nl):
        info[b0 + lane] = linfo[lane]
    if op in (HERK, POTRF, LAUUM, POSV):
        t_lanes = good | _lane_bits(linfo, nl, True)
    else:
        t_lanes = good
    if op in (HERK, POTRF, TRTRI, LAUUM, POTRI, POTI, POSV) and t_lanes:
        _unpack(s, 0, lt, 1, n, n, True, tri_unit, tp, b0, t_lanes, tld, ttr, trev, trev, tc,
                z)
    if op in (TRSM, TRMM, POTRS, POSV) and good:
        _unpack(s, ro, rrs, rcs, nd, m, False, False, rp, b0, good, rld, rtr, rrev, False, rc, z)


@njit(cache=True)
def _lane_bits(linfo, nl, failed):
    """Bit mask of the lanes below ``nl`` whose info is nonzero (``failed``) or zero."""
    bits = 0
    for lane in range(nl):
        if (linfo[lane] != 0) == failed:
            bits |= 1 << lane
    return bits


# ------------------------------------------------------------------------------ driver
# One worker per dtype, compiled as a C callback (``cfunc``) on first use: thread ``t`` of ``nt``
# runs its share of the chunks. The parallel loop that calls the workers by address
# (:func:`tricov.kernels.numba.calls.for_threads`) is compiled once for every dtype, so the
# dtype-specific code is compiled (and cached) once, not once more inside a parallel region.

#: Layout of the int64 parameter block of a worker.
(P_OP, P_N, P_M, P_UNIT, P_NB, P_TP, P_TLD, P_TTR, P_TREV, P_TC, P_RP, P_RLD, P_RTR, P_RREV,
 P_RC, P_INFO, P_SCALARS, P_WORK, P_WBYTES, P_NEXT, P_COUNT) = range(21)


@njit(cache=True, inline="always")
def _work(t, nt, params, z):
    """Thread ``t`` of ``nt``: runs the chunks it claims, POTRF of order 4, 8 and 12 with the
    operation and the order compile-time constants."""
    p = as_array(params, P_COUNT, np.int64(0))
    op, n = p[P_OP], p[P_N]
    if op == POTRF and n == 4:
        _claim_chunks(params, t, nt, z, POTRF, 4)
    elif op == POTRF and n == 8:
        _claim_chunks(params, t, nt, z, POTRF, 8)
    elif op == POTRF and n == 12:
        _claim_chunks(params, t, nt, z, POTRF, 12)
    else:
        _claim_chunks(params, t, nt, z, op, n)


@njit(cache=True)
def _claim_chunks(params, t, nt, z, op, n):
    """Runs of contiguous chunks claimed from the counter ``P_NEXT`` until none is left, with
    the scratch of thread ``t`` (its part of the block at ``P_WORK``)."""
    p = as_array(params, P_COUNT, np.int64(0))
    m, unit, nb = p[P_M], p[P_UNIT] != 0, p[P_NB]
    tp = as_array(p[P_TP], nb, np.int64(0))
    rp = as_array(p[P_RP], nb, np.int64(0))
    info = as_array(p[P_INFO], nb, np.int64(0))
    scalars = as_array(p[P_SCALARS], 3, np.float64(0))
    alpha = from_parts(scalars[0], scalars[1], z)
    w = nlanes(z)
    ew = ewidth(z)
    nchunks = (nb + w - 1) // w
    size = _scratch_size(op, n, m) * ew
    work = p[P_WORK] + t * p[P_WBYTES]
    s = scratch(work, size, z)
    linfo = as_array(work + size * (itemsize(z) * w // ew), w, np.int64(0))
    run = _run_length(nchunks, nt)
    ahead = PREFETCH_BYTES[0] < n * n * itemsize(z) <= PREFETCH_BYTES[1]
    first = claim(params + P_NEXT * 8, run)
    while first < nchunks:
        last = min(first + run, nchunks)
        for c in range(first, last):
            b0 = c * w
            if ahead and c + PREFETCH_AHEAD < nchunks:
                b1 = b0 + PREFETCH_AHEAD * w
                _prefetch(tp, b1, min(w, nb - b1), n, p[P_TLD], itemsize(z))
            _chunk(op, z, n, m, unit, alpha, scalars[2], tp, p[P_TLD], p[P_TTR] != 0,
                   p[P_TREV] != 0, p[P_TC] != 0, rp, p[P_RLD], p[P_RTR] != 0, p[P_RREV] != 0,
                   p[P_RC] != 0, info, b0, min(w, nb - b0), s, linfo)
        first = claim(params + P_NEXT * 8, run)


#: Square operands of members of more than ``PREFETCH_BYTES[0]`` and at most
#: ``PREFETCH_BYTES[1]`` bytes are prefetched PREFETCH_AHEAD chunks ahead of the chunk being
#: computed (into L2), so that their memory traffic overlaps the arithmetic. On 2 cores of an AMD
#: EPYC (Zen 4) VM, float64 POTRF of order 16, batch 10240 (``benchmarks/cpu_batched_small.py
#: 25``, three runs interleaved with the code before): 2.31-2.57 -> 1.57-1.91 ms on one thread,
#: 0.97-1.37 -> 0.90-1.13 ms on two. Orders 24 and 32 (members of 4.5-8 KB) showed no steady
#: gain, nor did orders 4 and 8 (an earlier prefetch cost them 7-9%, commit 600cb9c); they are
#: left to the hardware prefetchers.
PREFETCH_BYTES = (512, 2048)
PREFETCH_AHEAD = 2


@njit(cache=True)
def _prefetch(addrs, b0, nl, n, ld, isz):
    """Prefetch the ``n x n`` column-major blocks (leading dimension ``ld`` elements of ``isz``
    bytes) of members ``b0 .. b0+nl-1``, a hint per cache line of each column."""
    for k in range(nl):
        base = addrs[b0 + k]
        for c in range(n):
            col = base + c * ld * isz
            for off in range(0, n * isz, 64):
                prefetch(col + off)
            prefetch(col + n * isz - 1)


@register_jitable
def _scratch_size(op, n, m):
    """Elements of the scratch of ``op``: T, and R where the operation has one."""
    has_r = op in (TRSM, TRMM, HERK, POTRS, POSV)
    return n * _stride(n) + (max(n * _stride(m), m * _stride(n)) if has_r else 0)


@njit(cache=True)
def _run_length(nchunks, nt):
    """Chunks claimed at a time: about 1/16 of a thread's even share (contiguous members, few
    claims), all of them when alone."""
    return nchunks if nt == 1 else max(1, nchunks // (16 * nt))


def _work_f32(t, nt, params):
    _work(t, nt, params, np.float32(0))


def _work_f64(t, nt, params):
    _work(t, nt, params, np.float64(0))


def _work_c64(t, nt, params):
    _work(t, nt, params, np.complex64(0))


def _work_c128(t, nt, params):
    _work(t, nt, params, np.complex128(0))


_WORKERS = {np.dtype(np.float32): _work_f32, np.dtype(np.float64): _work_f64,
            np.dtype(np.complex64): _work_c64, np.dtype(np.complex128): _work_c128}


@functools.cache
def _worker(dtype: np.dtype):
    return cfunc(types.void(types.int64, types.int64, types.int64), cache=True)(_WORKERS[dtype])


def run(op: int, dtype: np.dtype, n: int, m: int, unit: bool, alpha: complex, beta: float,
        t: tuple, r: tuple, info: np.ndarray, threads: int) -> None:
    """Run operation ``op`` on every member of a batch, in parallel over the batch.

    Parameters
    ----------
    op : int
        One of the codes of :data:`OPS`.
    dtype : numpy.dtype
        The member dtype.
    n, m : int
        Order of the square operand T; columns of the rectangular operand R (``k`` for HERK).
    unit : bool
        Unit diagonal (TRSM, TRMM, TRTRI).
    alpha : scalar
        TRSM/TRMM: R is read as ``alpha R``; HERK: its real part is ``alpha``.
    beta : float
        HERK only; T is not read when it is 0.
    t, r : tuple (addrs, ld, tr, rev, conj)
        The square operand T and the rectangular operand R (``r`` is ignored where the
        operation has none): the byte address of memory element (0, 0) of each member (a
        contiguous int64 array); the leading dimension of the members' column-major memory in
        elements; whether the canonical operand is the transpose of memory; whether it is
        reversed (rows and columns for T, that is ``P T P``; rows for R); whether it is
        conjugated.
    info : int64 array
        Per member, written: 0, POTRF's failing leading minor, or TRTRI's first zero pivot.
    threads : int
        Number of threads to split the batch over (``numba.get_num_threads()``).
    """
    nb = info.shape[0]
    dtype = np.dtype(dtype)
    w = _LANES[dtype]
    nt = _threads_for(nb, n, m, threads, w)
    alpha = complex(alpha)
    # one block: the parameters, the scalars, then each thread's scratch and lane infos
    wbytes = -(-(_scratch_size(op, n, m) * w * dtype.itemsize + w * 8) // 64) * 64
    block = np.empty(_block_size(nt, wbytes), np.int64)
    block[:P_COUNT] = (op, n, m, unit, nb, 0, t[1], t[2], t[3], t[4], 0, r[1], r[2], r[3], r[4],
                       0, 0, 0, wbytes, 0)
    block[P_COUNT:P_COUNT + 3].view(np.float64)[:] = (alpha.real, alpha.imag, beta)
    runs = getattr(_recording, "runs", None)
    if runs is not None:
        runs.append((dtype, block[:_HEADER].copy(), t[0], r[0], info, nt))
    for_threads(_worker(dtype).address, _addresses(block, t[0], r[0], info), nt)


#: Leading entries of a parameter block that :func:`run` fills: the parameters and the scalars.
_HEADER = P_COUNT + 3


def _block_size(nt: int, wbytes: int) -> int:
    """int64 entries of the parameter block of ``nt`` threads of ``wbytes`` of scratch each:
    the header, room to align the scratch to 64 bytes, the scratch."""
    return _HEADER + 8 + nt * wbytes // 8


# Per thread: the list :func:`run` appends its calls to, if any (see :func:`record`).
_recording = threading.local()


def record(runs: list | None) -> None:
    """Append every later :func:`run` of the calling thread to ``runs``, as (dtype, header of
    its parameter block, addresses of T and R, info, threads), until called with None."""
    _recording.runs = runs


def rerun(dtype: np.dtype, header: np.ndarray, tp: np.ndarray, rp: np.ndarray,
          info: np.ndarray, nt: int) -> None:
    """A :func:`run` recorded by :func:`record` again, its info written to ``info``, in a new
    parameter block (concurrent reruns share no scratch or counters; the scratch is neither
    copied nor cleared, as :func:`run` does not clear it)."""
    block = np.empty(_block_size(nt, int(header[P_WBYTES])), np.int64)
    block[:_HEADER] = header
    for_threads(_worker(dtype).address, _addresses(block, tp, rp, info), nt)


_LANES = {dtype: lanes_for(dtype) for dtype in _WORKERS}


@njit(types.int64(*[types.int64[::1]] * 4), cache=True)
def _addresses(block, tp, rp, info):
    """Write the addresses of the parameter block: of the member addresses of T and R, of the
    info, of the scalars (after the parameters) and of the first thread's scratch (the next
    64-byte boundary after the scalars); returns the block's address. The signature admits
    contiguous int64 arrays only."""
    base = block.ctypes.data
    block[P_TP] = tp.ctypes.data
    block[P_RP] = rp.ctypes.data
    block[P_INFO] = info.ctypes.data
    block[P_SCALARS] = base + P_COUNT * 8
    block[P_WORK] = -(-(base + (P_COUNT + 3) * 8) // 64) * 64
    return base


#: Work (member count times ``n^2 (n + m)``) per thread below which a call runs in fewer
#: threads (in the calling thread alone below twice this): about 50 microseconds of one core
#: at n = 4, the order of the time that waking Numba's other threads can take on a busy
#: machine (measured: 2 threads never slower than 1 from this size on).
SERIAL_WORK = 1 << 18


def _threads_for(nb: int, n: int, m: int, threads: int, w: int) -> int:
    """Threads for ``nb`` members of order ``n`` (``m`` right-hand sides), ``w`` per chunk: one
    per share of at least :data:`SERIAL_WORK`, at most one per chunk and at most ``threads``."""
    work = nb * n * n * (n + m)
    return max(1, min(threads, -(-nb // w), work // SERIAL_WORK))
