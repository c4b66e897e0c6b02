"""Left-looking TLR Cholesky on the CPU, one tile column per step, on compiled kernels.

The float64 NumPy path of :func:`tricov.tlr.potrf` (mode LL) and of
:func:`tricov.tlr.potrf_from_kernel` (mode DL) with a tolerance; the algorithm is the one of
:mod:`tricov.tlr.cholesky` (each Schur-complement tile compressed once by the adaptive
randomized range finder, through products only), the storage and the loops are those of
:mod:`tricov.kernels.numba.schur`: the factor is kept as packed rows ``UT[i]`` and columns
``VT[j]`` of transposed factors, so that every product is a GEMM over a whole tile row or
column and the tiles of a column are compressed in parallel. The whole factorization runs
with BLAS on one thread (:func:`tricov.tlr._threads.tile_loops`); the threads are ours: ranges
of tiles for the compiled kernels, row blocks for the diagonal update (:func:`syrk_lower`) and
the triangular solve of a column's ``V`` factors (:func:`trsm_rows`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dense
from ._array import fro2
from ._progress import Progress
from ._threads import run_ranges, thread_count, tile_loops
from .build import tile_atol
from .matrix import TLRMatrix

__all__ = ["left_looking", "usable"]

#: Elements of dense Schur tiles generated at once (mode DL).
DENSE_CHUNK = 1 << 24
#: Samples beyond a tile's expected rank in the first block of the range finder.
OVERSAMPLE = 10
#: Room for the factors of a new tile beyond twice its expected rank (tiles that need more
#: are compressed again with the room they need).
ROOM = 32
_FIRST_HINT = 22   # expected rank of the tiles of the first column (mode DL)
_EXTRA = 16        # error-estimate columns of the range finder (as in the kernel)


def _split(n: int, parts: int, triangle: bool = False) -> list[tuple[int, int]]:
    """``parts`` ranges covering ``[0, n)``: of equal length, or of equal area of the lower
    triangle (boundaries at ``n sqrt(p / parts)``)."""
    cuts = [round(n * (math.sqrt(p / parts) if triangle else p / parts)) for p in range(parts + 1)]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def _threaded(tasks: list[Any]) -> None:
    """Run the callables ``tasks`` on the threads (BLAS calls release the GIL)."""
    run_ranges(lambda t0, t1: [tasks[t]() for t in range(t0, t1)], len(tasks), ())


def syrk_lower(X: np.ndarray, C: np.ndarray) -> None:
    """``C -= X X^T`` on the lower triangle of ``C`` (row blocks of equal work in parallel:
    a SYRK on each diagonal block, a GEMM left of it)."""

    def block(r0: int, r1: int) -> None:
        dense.syrk(X[r0:r1], C[r0:r1, r0:r1], alpha=-1.0, beta=1.0)
        if r0:
            C[r0:r1, :r0] -= X[r0:r1] @ X[:r0].T

    _threaded([lambda a=a, b=b: block(a, b) for a, b in _split(C.shape[0], thread_count(),
                                                                  triangle=True)])


def trsm_rows(L: np.ndarray, B: np.ndarray) -> None:
    """``B <- B L^-T`` (``L`` lower triangular), row blocks in parallel."""
    _threaded([lambda a=a, b=b: dense.trsm(L, B[a:b], side="R", uplo="L", trans="T")
               for a, b in _split(B.shape[0], thread_count())])


def usable(T: TLRMatrix, tol: float | None) -> bool:
    """Whether the compiled path applies: float64 NumPy tiles and a tolerance."""
    return (tol is not None and T.dtype == np.float64 and T.ntiles > 0
            and all(isinstance(d, np.ndarray) for d in T._diag if d is not None))


def _typed_list(arrays: list[np.ndarray]) -> Any:
    from numba import types
    from numba.typed import List

    out = List.empty_list(types.float64[:, ::1])
    for a in arrays:
        out.append(a)
    return out


def _grow(UT: Any, i: int, rows: int) -> None:
    """Make room for ``rows`` rows in ``UT[i]`` (capacity at least doubled)."""
    old = UT[i]
    if old.shape[0] >= rows:
        return
    new = np.empty((max(rows, 2 * old.shape[0]), old.shape[1]))
    new[:old.shape[0]] = old
    UT[i] = new


class _Factor:
    """The packed factor (see :mod:`tricov.kernels.numba.schur`)."""

    def __init__(self, sizes: np.ndarray, caps: np.ndarray) -> None:
        nt = sizes.size
        self.sizes = sizes
        self.UT = _typed_list([np.empty((int(c), int(m))) for c, m in zip(caps, sizes,
                                                                          strict=True)])
        self.VT = _typed_list([])
        self.ru = np.zeros(nt, dtype=np.int64)
        self.rk = np.zeros((nt, nt), dtype=np.int64)
        self.uoff = np.zeros((nt, nt), dtype=np.int64)
        self.voff = np.zeros((nt, nt), dtype=np.int64)

    def gram(self, k: int) -> Any:
        """``PT[j]`` of column ``k`` (:func:`~tricov.kernels.numba.schur.gram_blocks`)."""
        from ..kernels.numba import schur

        vk = np.ascontiguousarray(self.voff[:k, k])
        rkk = np.ascontiguousarray(self.rk[k, :k])
        PT = _typed_list([np.empty((int(rkk[j]), self.VT[j].shape[0] - int(vk[j])))
                          for j in range(k)])
        run_ranges(schur.gram_blocks, k, (self.VT, vk, rkk, PT))
        return vk, PT

    def update_diag(self, T: TLRMatrix, k: int, PT: Any) -> None:
        """``A_kk -= sum_j L_kj L_kj^T`` (one SYRK on the Gram roots)."""
        from ..kernels.numba import lapack, schur

        if not self.ru[k]:
            return
        XT = np.empty((int(self.ru[k]), int(self.sizes[k])))
        run_ranges(schur.diag_roots, k, (self.UT[k], np.ascontiguousarray(self.uoff[k, :k]),
                                         np.ascontiguousarray(self.rk[k, :k]), PT, XT,
                                         lapack.addresses()))
        syrk_lower(XT.T, T._diag[k])

    def column(self, k: int, tiles: np.ndarray, hints: np.ndarray, base: tuple[Any, Any, Any],
               dense_base: bool, vk: np.ndarray, PT: Any, atol: float, rank: int | None,
               rng: np.random.Generator, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
        """Compress the Schur tiles ``(tiles, k)``; their ``U`` go to ``UT``, returns their
        ``V^T`` blocks and ranks (nothing else is updated)."""
        from ..kernels.numba import lapack, schur

        nk = int(self.sizes[k])
        count = tiles.size
        pmax = min(nk, max(int(hints.max()) + OVERSAMPLE, 16) + _EXTRA)
        Z = rng.standard_normal((nk, pmax))
        G = self.UT[k][:self.ru[k]] @ Z
        for b, i in enumerate(tiles.tolist()):
            _grow(self.UT, i, int(self.ru[i]) + 2 * int(hints[b]) + ROOM)
        vroom = np.maximum(np.minimum(2 * hints + ROOM, nk), 0).astype(np.int64)
        ranks = np.zeros(count, dtype=np.int64)
        todo = np.arange(count)
        vts: list[np.ndarray | None] = [None] * count
        BU, BV, BD = base
        while todo.size:
            vstart = np.concatenate([[0], np.cumsum(vroom[todo] * nk)]).astype(np.int64)
            vbuf = np.empty(int(vstart[-1]))
            r = np.zeros(todo.size, dtype=np.int64)
            st = np.zeros(todo.size, dtype=np.int64)
            rounds = np.zeros(todo.size, dtype=np.int64)
            sel = todo if todo.size < count else None
            run_ranges(schur.schur_tiles, todo.size, (
                np.ascontiguousarray(tiles[todo]), k, dense_base,
                BU if sel is None or dense_base else _typed_list([BU[b] for b in sel]),
                BV if sel is None or dense_base else _typed_list([BV[b] for b in sel]),
                BD if sel is None or not dense_base else np.ascontiguousarray(BD[sel]),
                self.UT, self.ru, self.rk, self.uoff, self.voff, vk, PT, Z, G,
                np.ascontiguousarray(hints[todo]), OVERSAMPLE, atol,
                -1 if rank is None else int(rank),
                seed, lapack.addresses(), vbuf, vstart[:-1].copy(),
                np.ascontiguousarray(vroom[todo]), r, st, rounds))
            for a, b in enumerate(todo.tolist()):
                ranks[b] = r[a]
                if st[a] == 0:
                    vts[b] = vbuf[vstart[a]:vstart[a] + r[a] * nk].reshape(int(r[a]), nk)
            redo = st != 0
            for a in np.flatnonzero(redo).tolist():
                b = int(todo[a])
                _grow(self.UT, int(tiles[b]), int(self.ru[tiles[b]] + r[a]))
                vroom[b] = r[a]
            todo = todo[redo]
        return vts, ranks  # type: ignore[return-value]

    def commit(self, k: int, tiles: np.ndarray, ranks: np.ndarray, vts: list[np.ndarray],
               L: np.ndarray) -> None:
        """Record column ``k``: offsets and ranks, ``VT[k]``, then ``V <- L_kk^-1 V``."""
        nk = int(self.sizes[k])
        for i, r in zip(tiles.tolist(), ranks.tolist(), strict=True):
            self.uoff[i, k] = self.ru[i]
            self.rk[i, k] = r
            self.ru[i] += r
        starts = np.concatenate([[0], np.cumsum(ranks)])
        self.voff[k, tiles] = starts[:-1]
        VTk = np.empty((int(starts[-1]), nk))
        for b, v in enumerate(vts):
            VTk[starts[b]:starts[b + 1]] = v
        if VTk.shape[0]:
            trsm_rows(L, VTk)  # V^T <- V^T L^-T: the whole column at once
        self.VT.append(VTk)

    def store(self, T: TLRMatrix, columns: int) -> None:
        """Put the factor's tiles of the first ``columns`` tile columns into ``T`` (views of
        trimmed copies of the packed rows)."""
        nt = T.ntiles
        for i in range(nt):
            U = np.ascontiguousarray(self.UT[i][:self.ru[i]])
            for j in range(min(i, columns)):
                u0, r = int(self.uoff[i, j]), int(self.rk[i, j])
                T._U[i][j] = U[u0:u0 + r].T
                v0 = int(self.voff[j, i])
                T._V[i][j] = self.VT[j][v0:v0 + r].T


def left_looking(T: TLRMatrix, src: Any, tol: float, rank: int | None, norm2: float,
                 rng: np.random.Generator, progress: bool) -> float:
    """Factor ``T`` in place (mode LL: ``src`` None, the tiles of ``T`` are ``A``; mode DL:
    tiles generated from ``src``, ``norm2`` the running ``||A||_F^2``). Returns ``norm2``."""
    from .._errors import NotPositiveDefiniteError
    from .cholesky import _factor_diag

    nt, off = T.ntiles, T.offsets
    sizes = np.diff(off).astype(np.int64)
    if src is None:
        caps = np.array([sum(T._U[i][j].shape[1] for j in range(i)) + 32 for i in range(nt)])
    else:
        caps = np.full(nt, 64)
    F = _Factor(sizes, caps)
    seed = int(rng.integers(1 << 62))
    empty = _typed_list([])
    with Progress(nt, "TLR Cholesky (left-looking)", progress) as bar, tile_loops():
        for k in range(nt):
            vk, PT = F.gram(k)
            F.update_diag(T, k, PT)
            try:
                _factor_diag(T, k)
            except NotPositiveDefiniteError:
                F.store(T, k)
                raise
            if k < nt - 1:
                tiles = np.arange(k + 1, nt, dtype=np.int64)
                if src is None:
                    hints = np.array([T._U[i][k].shape[1] for i in tiles], dtype=np.int64)
                    base = (_typed_list([np.ascontiguousarray(T._U[i][k]) for i in tiles]),
                            _typed_list([np.ascontiguousarray(T._V[i][k]) for i in tiles]),
                            np.empty((0, 0, 0)))
                    vts, ranks = F.column(k, tiles, hints, base, False, vk, PT,
                                          tile_atol(tol, norm2, nt), rank, rng, seed)
                    del base
                    for i in tiles.tolist():  # the tiles of A are consumed
                        T._U[i][k] = T._V[i][k] = None
                else:
                    hints = (F.rk[tiles - 1, k - 1] if k else
                             np.full(tiles.size, _FIRST_HINT)).astype(np.int64)
                    vts, ranks, norm2 = _dense_column(F, src, k, tiles, hints, sizes, vk, PT,
                                                      tol, rank, norm2, rng, seed, empty)
                F.commit(k, tiles, ranks, vts, T._diag[k])
            bar.advance()
    F.store(T, nt)
    return norm2


def _dense_column(F: _Factor, src: Any, k: int, tiles: np.ndarray, hints: np.ndarray,
                  sizes: np.ndarray, vk: np.ndarray, PT: Any, tol: float, rank: int | None,
                  norm2: float,
                  rng: np.random.Generator, seed: int,
                  empty: Any) -> tuple[list[np.ndarray], np.ndarray, float]:
    """Mode DL: the tiles of column ``k`` generated in panels of at most :data:`DENSE_CHUNK`
    elements (tiles of one shape each), each compressed to the running norm's accuracy."""
    nt, mk = sizes.size, int(sizes[k])
    per = max(1, DENSE_CHUNK // max(1, mk * int(sizes[0])))
    short = int(sizes[-1]) != int(sizes[0])
    groups = [tiles[:-1], tiles[-1:]] if short and tiles.size > 1 else [tiles]
    vts: list[np.ndarray] = []
    ranks = []
    for group in groups:
        for c0 in range(0, group.size, per):
            part = group[c0:c0 + per]
            if not part.size:
                continue
            panel = src.panel(k, int(part[0]), int(part[-1]) + 1)
            norm2 += 2.0 * fro2(panel, None)
            BD = np.ascontiguousarray(panel.reshape(part.size, -1, mk), dtype=np.float64)
            v, r = F.column(k, part, hints[part - k - 1], (empty, empty, BD), True, vk, PT,
                            tile_atol(tol, norm2, nt), rank, rng, seed)
            vts += v
            ranks.append(r)
    return vts, np.concatenate(ranks), norm2
