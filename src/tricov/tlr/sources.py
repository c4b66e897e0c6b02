"""Where the entries of a matrix come from, one tile or one panel of tiles at a time.

A source hands out the diagonal tiles (dense, Hermitian, nugget added), dense panels of
off-diagonal tiles of one tile column (rows ``i0 <= i < i1`` of tile column ``k``, all below the
diagonal) and, for ACA, single rows and columns of one tile. The builders and the TLR Cholesky
only talk to this interface, so the whole matrix is never formed: a panel holds at most
``panel_rows(...)`` rows.

A kernel with a compiled form (a ``compiled()`` method, as :class:`tricov.geostat.Kernel` has:
it returns ``(fn, p, tab, nugget)``, the address of a block function that writes blocks of
``kernel(x, x)`` without the nugget, its parameter and table arrays (see
:mod:`tricov.kernels.numba.tiles`), and what ``kernel(x, x)`` adds on its diagonal) is
evaluated by compiled parallel loops on NumPy points: tiles are filled in place, and
:meth:`KernelSource.aca` compresses many tiles at once, in parallel, evaluating only the rows
and columns it pivots on. Other kernels, and points on a GPU, go through ``kernel(x, y)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._array import SUPPORTED, array_module, symmetrize_lower

__all__ = ["DenseSource", "KernelSource", "TileSource", "panel_chunks"]

Factors = tuple[Any, Any]

#: Largest panel (elements) generated at once; at least one tile is always allowed.
PANEL_ELEMENTS = 1 << 22
#: Columns of the output of compiled ACA per tile at first (tiles of higher rank are redone).
_ACA_ROOM = 64
#: Rows per range of the compiled tile generation.
_FILL_ROWS = 16


def tile_offsets(n: int, tile_size: int) -> np.ndarray:
    """Start of each tile and ``n`` at the end: ``[0, nb, 2 nb, ..., n]``."""
    return np.append(np.arange(0, n, tile_size), n).astype(np.int64)


def panel_chunks(offsets: np.ndarray, k: int, cols: int | None = None,
                 hints: list[int] | None = None,
                 elements: int = PANEL_ELEMENTS) -> list[tuple[int, int]]:
    """Ranges ``[i0, i1)`` of consecutive tile rows below tile ``k``, processed together.

    A chunk holds at most ``elements`` (a tile counts ``rows x cols``; ``cols`` defaults to the
    width of tile column ``k``: a dense panel), tiles of one shape only (the last, shorter
    tile is alone), and, given ``hints`` (expected ranks of tiles ``k + 1, k + 2, ...``), only
    tiles whose hints are close to that of the chunk's first tile, so that a stack shares one
    sampling width.
    """
    nt = offsets.size - 1
    if cols is None:
        cols = int(offsets[k + 1] - offsets[k])
    full = int(offsets[1] - offsets[0]) if nt else 0
    per = max(1, elements // max(1, cols * full))
    last_short = nt > 1 and int(offsets[nt] - offsets[nt - 1]) != full
    stop = nt - 1 if last_short else nt
    out: list[tuple[int, int]] = []
    i = k + 1
    while i < stop:
        j = i + 1
        while j < min(i + per, stop):
            if hints is not None:
                h0, h = hints[i - k - 1], hints[j - k - 1]
                if abs(h - h0) > max(16, h0 // 4):
                    break
            j += 1
        out.append((i, j))
        i = j
    if last_short and k + 1 <= nt - 1:
        out.append((nt - 1, nt))
    return out


class TileSource:
    """Base of the tile sources: an ``n x n`` Hermitian matrix cut into tiles."""

    #: Who returns the entries, for error messages.
    source_name = "entries"

    def __init__(self, n: int, tile_size: int, dtype: Any, nugget: float) -> None:
        self.n = n
        self.tile_size = tile_size
        self.dtype = np.dtype(dtype)
        self.offsets = tile_offsets(n, tile_size)
        if isinstance(nugget, bool) or not isinstance(nugget, (int, float, np.floating)) \
                or not np.isfinite(nugget):
            raise ValueError(f"nugget must be a finite real number, got {nugget!r}")
        self.nugget = float(nugget)

    def _range(self, k: int) -> slice:
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def _block(self, rows: Any, cols: Any, check: bool = True) -> Any:
        """Entries ``rows x cols`` (slices or index arrays); ``check``: raise on NaN or
        infinite entries (:func:`_check_block`)."""
        raise NotImplementedError

    def diag(self, k: int) -> Any:
        """Dense diagonal tile ``k`` (both triangles, Hermitian, nugget on the diagonal)."""
        s = self._range(k)
        d = symmetrize_lower(self._diag_block(s))
        if self.nugget:
            xp = array_module(d)
            idx = xp.arange(d.shape[0])
            d[idx, idx] += self.nugget
        return d

    def _diag_block(self, s: slice) -> Any:
        return self._block(s, s)

    def panel(self, k: int, i0: int, i1: int, check: bool = True,
              rows: int | None = None) -> Any:
        """Dense rows of tiles ``i0 <= i < i1`` (all ``> k``) of tile column ``k``; ``check``
        as :meth:`_block` (a caller that reduces the panel anyway can test the result).
        ``rows`` (at least the panel's): that many rows, the ones past the matrix zero (a
        short last tile padded to a full one, in the same array)."""
        r0, r1 = int(self.offsets[i0]), int(self.offsets[i1])
        if rows is None or rows == r1 - r0:
            return self._block(slice(r0, r1), self._range(k), check)
        # the rows past the matrix repeat its last row (computed alike), then are cleared
        idx = np.minimum(np.arange(r0, r0 + rows), self.n - 1)
        out = self._block(idx, self._range(k), check)
        out[r1 - r0:] = 0
        return out

    def oracles(self, i: int, k: int) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
        """``rows(idx)`` and ``cols(idx)`` of tile ``(i, k)`` (local indices), for ACA."""
        r, c = self._range(i), self._range(k)
        r0, c0 = r.start, c.start
        return (lambda idx: self._block(np.asarray(idx) + r0, c),
                lambda idx: self._block(r, np.asarray(idx) + c0))

    def check_norm(self, block: Any, norm2: float) -> None:
        """Raise unless ``norm2`` (the squared norm of ``block``, from an unchecked
        :meth:`panel`) is finite: for NaN or infinite entries as :meth:`_block` would."""
        if not np.isfinite(norm2):
            _check_block(block, tuple(block.shape), self.source_name)
            raise ValueError(f"the squares of the entries of {self.source_name} overflow "
                             f"{np.dtype(self.dtype)}")


def _check_block(block: Any, shape: tuple[int, int], what: str, finite: bool = True) -> None:
    if tuple(block.shape) != shape:
        raise ValueError(f"{what} returned shape {tuple(block.shape)}, expected {shape}")
    if not finite:
        return
    xp = array_module(block)
    # One cheap reduction; the elementwise test only if it is not finite (or overflowed).
    if not bool(xp.isfinite(block.sum())) and not bool(xp.isfinite(block).all()):
        raise ValueError(f"{what} returned NaN or infinity")


class KernelSource(TileSource):
    """Entries ``kernel(points[rows], points[cols])``.

    Parameters
    ----------
    kernel : callable
        ``kernel(x, y)`` with point sets ``x`` (p, d) and ``y`` (q, d) returns the (p, q)
        covariances. It must be symmetric: ``kernel(x, y) = kernel(y, x)^H``.
    points : (n, d) or (n,) array
    tile_size : int
    dtype : dtype or None
        dtype of the matrix; None takes the kernel's (float64 if that is not a float type).
    nugget : float
        Added to the diagonal.
    """

    def __init__(self, kernel: Callable[[Any, Any], Any], points: Any, tile_size: int,
                 dtype: Any, nugget: float) -> None:
        if not callable(kernel):
            raise TypeError(f"kernel must be callable, got {type(kernel).__name__}")
        pts = points if hasattr(points, "ndim") else np.asarray(points)
        if pts.ndim == 1:
            pts = pts[:, None]
        if pts.ndim != 2:
            raise ValueError(f"points must be 1-D or 2-D (n, d), got shape {tuple(pts.shape)}")
        self.kernel = kernel
        self.points = pts
        self.compiled = _compiled_form(kernel, pts)
        n = int(pts.shape[0])
        if dtype is None:
            dtype = np.float64
            if n:
                probe = kernel(pts[:1], pts[:1])
                if np.dtype(probe.dtype) in SUPPORTED:
                    dtype = probe.dtype
        if np.dtype(dtype) not in SUPPORTED:
            raise TypeError(f"dtype must be float32, float64, complex64 or complex128, got "
                            f"{np.dtype(dtype)}")
        super().__init__(n, tile_size, dtype, nugget)

    source_name = "kernel"

    def _block(self, rows: Any, cols: Any, check: bool = True) -> Any:
        if self.compiled is not None and isinstance(rows, slice) and isinstance(cols, slice):
            return self._compiled_block(rows, cols)
        pm = array_module(self.points)
        x, y = (self.points[s if isinstance(s, slice) else pm.asarray(s)] for s in (rows, cols))
        out = self.kernel(x, y)
        xp = array_module(out) if hasattr(out, "shape") else np
        out = xp.asarray(out)
        _check_block(out, (int(x.shape[0]), int(y.shape[0])), "kernel", check)
        if out.dtype != self.dtype or not out.flags.c_contiguous \
                or not getattr(out.flags, "writeable", True):  # CuPy arrays are writeable
            out = xp.array(out, dtype=self.dtype, order="C")
        return out

    def _compiled_block(self, rows: slice, cols: slice) -> Any:
        from ..kernels.numba import tiles
        from ._threads import run_ranges, tile_loops

        fn, p, tab, nugget = self.compiled
        out = np.empty((rows.stop - rows.start, cols.stop - cols.start))
        with tile_loops():
            run_ranges(tiles.fill, out.shape[0], (fn, self._xc, p, tab, rows.start, cols.start,
                                                  out, nugget if rows == cols else 0.0),
                       _FILL_ROWS)
        _check_block(out, out.shape, "kernel")
        return out if out.dtype == self.dtype else out.astype(self.dtype)

    def _diag_block(self, s: slice) -> Any:
        if self.compiled is None:
            return self._block(s, s)
        from ..kernels.numba import tiles
        from ._threads import run_ranges, tile_loops

        fn, p, tab, nugget = self.compiled
        m = s.stop - s.start
        out = np.zeros((m, m))
        with tile_loops():  # the lower triangle (the caller mirrors it)
            run_ranges(tiles.fill_lower, m, (fn, self._xc, p, tab, s.start, out, nugget),
                       _FILL_ROWS)
        _check_block(out, out.shape, "kernel")
        return out if out.dtype == self.dtype else out.astype(self.dtype)

    def aca(self, tiles_ik: np.ndarray, atol: float | None, rank: int | None,
            seed: int) -> tuple[list[Factors], np.ndarray]:
        """Compress the tiles ``tiles_ik[b] = (i, k)`` by ACA, in parallel (compiled kernels).

        Parameters
        ----------
        tiles_ik : (B, 2) int array
            Tile positions (any, each once).
        atol : float or None
            Absolute Frobenius accuracy of every tile (None: fixed ``rank``).
        rank : int or None
            Rank cap (with ``atol``) or fixed rank.
        seed : int
            Randomness: with a tile's position, it fixes the tile's result (whatever the other
            tiles and the threads).

        Returns
        -------
        factors : list of (U, V)
            ``U`` (m, r) with orthonormal columns, ``V`` (n, r), C-ordered, of ``self.dtype``.
        norms2 : (B,) float64
            ``||U V^H||_F^2`` of each tile.
        """
        from ..kernels.numba import tiles
        from ..kernels.numba.lapack import addresses
        from ._threads import run_ranges, tile_loops
        from .compression import _OVERSAMPLE

        if self.compiled is None:
            raise ValueError("this kernel has no compiled form")
        fn, p, tab, _ = self.compiled
        tiles_ik = np.asarray(tiles_ik, dtype=np.int64).reshape(-1, 2)
        count = tiles_ik.shape[0]
        full = self.tile_size
        steps = full if rank is None else int(rank) + _OVERSAMPLE
        tol = np.full(count, 0.0 if atol is None else float(atol))
        norms = np.zeros(count)
        factors: list[Factors | None] = [None] * count
        todo = np.arange(count)
        room = min(full, _ACA_ROOM)
        while todo.size:
            sub = tiles_ik[todo]
            U = np.empty((todo.size, full, room))
            V = np.empty((todo.size, full, room))
            ranks = np.zeros(todo.size, dtype=np.int64)
            norm2 = np.zeros(todo.size)
            status = np.zeros(todo.size, dtype=np.int64)
            with tile_loops():
                run_ranges(tiles.aca_tiles, todo.size, (
                    fn, self._xc, p, tab, self.offsets, np.ascontiguousarray(sub[:, 0]),
                    np.ascontiguousarray(sub[:, 1]), tol[todo], steps,
                    -1 if rank is None else int(rank), int(seed), addresses(), U, V, ranks,
                    norm2, status))
            for b, t in enumerate(todo.tolist()):
                if status[b] == 0:
                    i, k, r = int(sub[b, 0]), int(sub[b, 1]), int(ranks[b])
                    m = int(self.offsets[i + 1] - self.offsets[i])
                    n = int(self.offsets[k + 1] - self.offsets[k])
                    factors[t] = (np.array(U[b, :m, :r], dtype=self.dtype, order="C"),
                                  np.array(V[b, :n, :r], dtype=self.dtype, order="C"))
                    norms[t] = norm2[b]
            redo = status != 0
            todo = todo[redo]
            room = int(ranks[redo].max()) if todo.size else room
        return factors, norms  # type: ignore[return-value]

    @property
    def _xc(self) -> np.ndarray:
        if not hasattr(self, "_x_compiled"):
            self._x_compiled = np.ascontiguousarray(self.points, dtype=np.float64)
        return self._x_compiled


def _compiled_form(kernel: Any, points: Any) -> tuple[Any, Any, Any, float] | None:
    """``kernel.compiled()`` if the kernel has one and the points are a NumPy array."""
    make = getattr(kernel, "compiled", None)
    if make is None or not isinstance(points, np.ndarray) or points.dtype.kind not in "fiu":
        return None
    return make()


class DenseSource(TileSource):
    """Entries of a dense Hermitian array; only its lower triangle is read."""

    def __init__(self, A: Any, tile_size: int, nugget: float) -> None:
        if getattr(A, "ndim", 0) != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"A must be a square 2-D array, got shape {getattr(A, 'shape', None)}")
        if np.dtype(A.dtype) not in SUPPORTED:
            raise TypeError(f"A has dtype {A.dtype}; supported: float32, float64, complex64, "
                            "complex128")
        self.A = A
        super().__init__(int(A.shape[0]), tile_size, A.dtype, nugget)

    source_name = "A"

    def _block(self, rows: Any, cols: Any, check: bool = True) -> Any:
        xp = array_module(self.A)
        if isinstance(rows, slice) and isinstance(cols, slice):
            out = xp.array(self.A[rows, cols], order="C")
        else:
            r = xp.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
            c = xp.arange(cols.start, cols.stop) if isinstance(cols, slice) else cols
            out = xp.array(self.A[xp.asarray(r)[:, None], xp.asarray(c)[None, :]], order="C")
        _check_block(out, tuple(out.shape), "A", check)
        return out
