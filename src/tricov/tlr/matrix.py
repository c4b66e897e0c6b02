"""The tile low-rank (TLR) matrix: dense diagonal tiles, low-rank ``U V^H`` lower tiles."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dense
from ._array import SUPPORTED, array_module, asnumpy, herm, real_dtype
from .compression import check_accuracy, check_method
from .lowrank import LowRank
from .sources import tile_offsets

__all__ = ["TLRMatrix", "default_tile_size"]


def default_tile_size(n: int) -> int:
    """A good tile size for an ``n x n`` covariance matrix on the CPU: ``3.2 sqrt(n)`` rounded to
    a multiple of 64, within [256, 2048].

    Larger tiles mean fewer tiles and larger products but higher ranks near the diagonal; the
    rule follows measurements of construction plus factorization of Matérn matrices of 2-D
    points at tol 1e-8..1e-9 on 2 cores (best near 448 at n = 20000, 704..1024 at 50000, 1024
    at 100000).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    return int(min(2048, max(256, 64 * round(3.2 * math.sqrt(n) / 64))))


class TLRMatrix:
    """A Hermitian (real: symmetric) matrix, or its Cholesky factor, in tile low-rank form.

    The ``n x n`` matrix is cut into square tiles of ``tile_size`` (the last row and column of
    tiles may be smaller). Diagonal tiles are dense; each tile ``(i, j)`` below the diagonal is
    ``U_ij V_ij^H`` with its own rank (``U_ij`` has orthonormal columns); tiles above the
    diagonal are implied by symmetry. After :func:`tricov.tlr.potrf` the object holds the lower
    triangular factor ``L`` (``A ~ L L^H``) in the same layout: ``is_factored`` is then true,
    and the dense diagonal tiles are lower triangular.

    Build one with :meth:`from_kernel` or :meth:`from_dense` (or factor while compressing with
    :func:`tricov.tlr.potrf_from_kernel`); the constructor itself only makes the empty tiling
    that those fill.

    Storage. By default (``storage='device'``) the tiles live where the computation runs:
    NumPy arrays on the CPU, CuPy arrays on the GPU. With ``storage='host'`` (points or matrix
    given as CuPy arrays) the tiles are NumPy arrays in page-locked host memory while
    construction and factorization run on the GPU, streaming tiles through a bounded amount of
    device memory: for factors larger than the GPU's memory. See :mod:`tricov.tlr.stream`.

    Parameters
    ----------
    n : int
        Order of the matrix.
    tile_size : int
    dtype : dtype
    tol : float, optional
        Fixed accuracy (see the notes).
    rank : int, optional
        Fixed rank, or the rank cap with ``tol``. At least one of ``tol`` and ``rank``.
    method : {'rsvd', 'aca', 'svd'}
        Tile compression (:mod:`tricov.tlr.compression`).

    Notes
    -----
    With ``tol`` (fixed accuracy) every off-diagonal tile is compressed to the absolute
    Frobenius accuracy ``tau = tol * anorm / ntiles``, where ``anorm`` is the Frobenius norm of
    the matrix accumulated from the tiles generated so far (a lower bound of ``||A||_F``, exact
    once all tiles are seen; for ACA an estimate). The ``ntiles * (ntiles - 1)`` off-diagonal
    tiles of the full matrix then give ``||A - T||_F <= tol * ||A||_F``. With ``rank`` alone
    (fixed rank) every tile has rank ``min(rank, tile sizes)``; with both, ``rank`` caps the
    adaptive ranks.

    Supported dtypes: float32, float64, complex64, complex128 (those of the dense tricov
    kernels; ``tol`` must be at least the dtype's machine epsilon).

    Attributes
    ----------
    anorm : float
        Frobenius norm of ``A`` as accumulated during construction (see the notes).
    """

    def __init__(self, n: int, tile_size: int, dtype: Any = np.float64, *,
                 tol: float | None = None, rank: int | None = None, method: str = "rsvd") -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        if isinstance(tile_size, bool) or not isinstance(tile_size, (int, np.integer)) \
                or tile_size < 1:
            raise ValueError(f"tile_size must be an int >= 1, got {tile_size!r}")
        if np.dtype(dtype) not in SUPPORTED:
            raise TypeError(f"dtype must be float32, float64, complex64 or complex128, got "
                            f"{np.dtype(dtype)}")
        check_accuracy(tol, rank, dtype)
        self._n = int(n)
        self._nb = int(tile_size)
        self._dtype = np.dtype(dtype)
        self._tol = None if tol is None else float(tol)
        self._rank = None if rank is None else int(rank)
        self._method = check_method(method)
        self._offsets = tile_offsets(self._n, self._nb)
        nt = self.ntiles
        self._diag: list[Any] = [None] * nt
        self._U: list[list[Any]] = [[None] * i for i in range(nt)]
        self._V: list[list[Any]] = [[None] * i for i in range(nt)]
        self.anorm = 0.0
        self._state = "symmetric"
        self._device: Any = None  # a stream.Device for host storage (tiles on the host)
        self._stream_report: dict[str, Any] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_kernel(cls, kernel: Callable[[Any, Any], Any], points: Any, *, tile_size: int,
                    tol: float | None = None, rank: int | None = None, method: str | None = None,
                    nugget: float = 0.0, seed: Any = None, dtype: Any = None,
                    progress: bool = False, storage: str = "device") -> TLRMatrix:
        """Compress the covariance matrix ``kernel(points, points) + nugget I``, tile by tile.

        The dense matrix is never formed: diagonal tiles are generated once and kept; panels
        of off-diagonal tiles (a few tiles of one tile column at a time, one kernel call per
        panel) are generated, compressed and dropped. ``method='aca'`` evaluates only the rows
        and columns it pivots on. A kernel with a compiled form (:class:`tricov.geostat.Kernel`;
        see :mod:`tricov.tlr.sources`) on NumPy points is evaluated by compiled parallel loops,
        and its ACA compresses many tiles at once, in parallel.

        Parameters
        ----------
        kernel : callable
            ``kernel(x, y)``: covariances between point sets ``x`` (p, d) and ``y`` (q, d) as a
            (p, q) array; must satisfy ``kernel(x, y) = kernel(y, x)^H``.
        points : (n, d) or (n,) array
            Order them along a space-filling curve first (:func:`tricov.tlr.morton_order`).
        tile_size : int
        tol : float, optional
            Fixed accuracy (relative Frobenius, see the class notes).
        rank : int, optional
            Fixed rank, or the rank cap with ``tol``.
        method : {'rsvd', 'aca', 'svd'}, optional
            Compression of each tile (:mod:`tricov.tlr.compression`). Default: ``'aca'`` for
            a kernel with a compiled form, else ``'rsvd'``.
        nugget : float
            Added to the diagonal.
        seed : int or numpy.random.Generator, optional
            Randomness of ``rsvd``/``aca``.
        dtype : dtype, optional
            Default: the kernel's output dtype.
        progress : bool
            Show a progress bar (on a terminal only).
        storage : {'device', 'host'}
            Where the tiles are kept. ``'device'``: where they are computed (NumPy points: host
            memory; CuPy points: GPU memory). ``'host'``: tiles are generated and compressed
            where the points are (on the GPU for CuPy points), each finished tile is copied to
            page-locked host memory, and :func:`tricov.tlr.potrf` streams them back through a
            bounded amount of device memory (see :mod:`tricov.tlr.stream`). Construction then
            holds one panel on the device at a time.

        Examples
        --------
        >>> import numpy as np
        >>> from tricov.tlr import TLRMatrix, morton_order
        >>> x = np.random.default_rng(0).random((500, 2))
        >>> x = x[morton_order(x)]
        >>> def kernel(a, b):
        ...     d = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
        ...     return np.exp(-d / 0.1)
        >>> T = TLRMatrix.from_kernel(kernel, x, tile_size=100, tol=1e-8)
        >>> T.shape, T.ntiles
        ((500, 500), 5)
        """
        from .build import build
        from .sources import KernelSource
        from .stream import device_for

        src = KernelSource(kernel, points, _tile_size(tile_size), dtype, nugget)
        device = device_for(storage, src.points)
        if method is None:
            method = "aca" if src.compiled is not None else "rsvd"
        T = cls(src.n, tile_size, src.dtype, tol=tol, rank=rank, method=method)
        T._device = device
        build(T, src, np.random.default_rng(seed), progress)
        T._finish_transfers()
        return T

    @classmethod
    def from_dense(cls, A: Any, *, tile_size: int, tol: float | None = None,
                   rank: int | None = None, method: str = "rsvd", nugget: float = 0.0,
                   seed: Any = None, progress: bool = False,
                   storage: str = "device") -> TLRMatrix:
        """Compress a dense Hermitian matrix; only its lower triangle is read.

        Parameters are those of :meth:`from_kernel` (``storage='host'`` with a CuPy ``A``
        compresses on the GPU and keeps the tiles in host memory); ``A`` is not modified.
        """
        from .build import build
        from .sources import DenseSource
        from .stream import device_for

        src = DenseSource(A, _tile_size(tile_size), nugget)
        T = cls(src.n, tile_size, src.dtype, tol=tol, rank=rank, method=method)
        T._device = device_for(storage, A)
        build(T, src, np.random.default_rng(seed), progress)
        T._finish_transfers()
        return T

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, int]:
        return (self._n, self._n)

    @property
    def n(self) -> int:
        return self._n

    @property
    def tile_size(self) -> int:
        return self._nb

    @property
    def ntiles(self) -> int:
        """Number of tile rows (and columns)."""
        return int(self._offsets.size - 1)

    @property
    def offsets(self) -> np.ndarray:
        """First row of each tile, then ``n``."""
        return self._offsets.copy()

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def tol(self) -> float | None:
        return self._tol

    @property
    def rank(self) -> int | None:
        """The fixed rank or rank cap (None if none)."""
        return self._rank

    @property
    def method(self) -> str:
        return self._method

    @property
    def storage(self) -> str:
        """``'device'`` (tiles where the computation runs) or ``'host'`` (tiles in host memory,
        computation on the GPU, streamed: see :mod:`tricov.tlr.stream`)."""
        return "device" if self._device is None else "host"

    @property
    def transfer_stats(self) -> dict[str, Any] | None:
        """Host <-> device traffic of a host-stored matrix (None for ``storage='device'``).

        Keys: ``h2d_bytes``, ``d2h_bytes``, ``h2d_copies``, ``d2h_copies`` (cumulative over
        construction and factorization), ``cache_hits`` (tiles found resident instead of
        copied), and, after a streamed factorization, ``device_memory`` (its budget, bytes) and
        ``device_peak_bytes`` (the most bytes it held on the device at once, as accounted: the
        tiles, panels and products it keeps plus an estimate of the compression workspace).
        """
        if self._device is None:
            return None
        return {**self._device.stats, **self._stream_report}

    @property
    def is_factored(self) -> bool:
        """True once :func:`tricov.tlr.potrf` has turned the matrix into its factor."""
        return self._state == "factored"

    @property
    def ranks(self) -> np.ndarray:
        """(ntiles, ntiles) int array: ``ranks[i, j]`` is the rank of tile ``(i, j)``, i > j.

        Entries on and above the diagonal are -1 (no low-rank tile is stored there).
        """
        nt = self.ntiles
        r = np.full((nt, nt), -1, dtype=np.int64)
        for i in range(nt):
            for j in range(i):
                r[i, j] = self._U[i][j].shape[1]
        return r

    @property
    def max_rank(self) -> int:
        """Largest off-diagonal rank (0 with fewer than two tiles)."""
        r = self.ranks
        return int(r.max()) if self.ntiles > 1 else 0

    @property
    def mean_rank(self) -> float:
        """Mean off-diagonal rank (0.0 with fewer than two tiles)."""
        r = self.ranks
        return float(r[r >= 0].mean()) if self.ntiles > 1 else 0.0

    @property
    def nbytes(self) -> int:
        """Bytes held by all tiles (dense diagonal tiles and low-rank factors)."""
        total = sum(int(d.nbytes) for d in self._diag if d is not None)
        for i in range(self.ntiles):
            for j in range(i):
                total += int(self._U[i][j].nbytes + self._V[i][j].nbytes)
        return total

    def tile_atol(self) -> float | None:
        """Absolute Frobenius accuracy of one off-diagonal tile: ``tol * anorm / ntiles``."""
        if self._tol is None:
            return None
        return self._tol * self.anorm / max(1, self.ntiles)

    def tile(self, i: int, j: int) -> Any:
        """Tile ``(i, j)`` with ``i >= j``: the dense array if ``i == j``, else a :class:`LowRank`.

        These are the stored arrays, not copies.
        """
        nt = self.ntiles
        if not (0 <= j <= i < nt):
            raise IndexError(f"tile ({i}, {j}) is not on or below the diagonal of a "
                             f"{nt}x{nt} tiling")
        self._check_usable()
        if i == j:
            return self._diag[i]
        return LowRank(self._U[i][j], self._V[i][j])

    def _rows(self, k: int) -> slice:
        return slice(int(self._offsets[k]), int(self._offsets[k + 1]))

    def _keep(self, a: Any) -> Any:
        """A finished tile as stored: ``a`` itself, or its host copy for host storage."""
        return a if self._device is None else self._device.to_host(a)

    def _finish_transfers(self) -> None:
        """Wait for the copies to the host still in flight (host storage)."""
        if self._device is not None:
            self._device.wait()

    def _compute_module(self) -> Any:
        """The array module that computes on the tiles (CuPy for a GPU-computed host matrix)."""
        return self._xp() if self._device is None else self._device.xp

    def _check_usable(self) -> None:
        if self._state == "failed":
            raise ValueError("this TLRMatrix holds a failed, partial factorization; build it "
                             "again")

    def copy(self) -> TLRMatrix:
        """A deep copy (for factoring while keeping the matrix)."""
        self._check_usable()
        out = TLRMatrix(self._n, self._nb, self._dtype, tol=self._tol, rank=self._rank,
                        method=self._method)
        out._diag = [d.copy() for d in self._diag]
        out._U = [[u.copy() for u in row] for row in self._U]
        out._V = [[v.copy() for v in row] for row in self._V]
        out.anorm = self.anorm
        out._state = self._state
        out._device = self._device
        return out

    def __repr__(self) -> str:
        state = "factor L" if self.is_factored else "Hermitian matrix"
        where = "" if self._device is None else ", storage=host"
        return (f"TLRMatrix({state}{where}, n={self._n}, tile_size={self._nb}, "
                f"dtype={self._dtype}, "
                f"tol={self._tol}, rank={self._rank}, max_rank="
                f"{self.max_rank if self._state != 'failed' else '?'}, nbytes={self.nbytes})")

    # ------------------------------------------------------------------ products
    def to_dense(self) -> Any:
        """The stored matrix as a dense array: ``A`` (full, Hermitian), or ``L`` once factored."""
        self._check_usable()
        xp = self._xp()
        out = xp.zeros((self._n, self._n), dtype=self._dtype)
        for i in range(self.ntiles):
            ri = self._rows(i)
            out[ri, ri] = self._diag[i]
            for j in range(i):
                rj = self._rows(j)
                block = self._U[i][j] @ herm(self._V[i][j])
                out[ri, rj] = block
                if not self.is_factored:
                    out[rj, ri] = herm(block)
        return out

    def _xp(self) -> Any:
        return array_module(self._diag[0]) if self.ntiles else np

    def _operand(self, B: Any, name: str) -> tuple[Any, bool]:
        xp = self._xp()
        if self._device is not None:
            B = asnumpy(B)  # host storage: products and solves run on the host
        if not hasattr(B, "shape"):
            B = xp.asarray(B)
        if B.ndim not in (1, 2) or B.shape[0] != self._n:
            raise ValueError(f"{name} must have shape ({self._n},) or ({self._n}, k), got "
                             f"{tuple(B.shape)}")
        if np.dtype(B.dtype).kind not in "biufc":
            raise TypeError(f"{name} must hold numbers, got dtype {B.dtype}")
        vec = B.ndim == 1
        return (B[:, None] if vec else B), vec

    def _like(self, result: Any, operand: Any) -> Any:
        """Host storage: the host ``result`` moved to the device if ``operand`` was there."""
        if self._device is not None and type(operand).__module__.startswith("cupy"):
            return array_module(operand).asarray(result)
        return result

    def matvec(self, x: Any, *, trans: bool = False) -> Any:
        """Product of the stored matrix with a vector or a block of vectors.

        ``A x`` for the unfactored matrix; ``L x`` (``trans=False``) or ``L^H x``
        (``trans=True``) once factored, so ``T.matvec(T.matvec(x, trans=True))`` applies
        ``L L^H ~ A``.

        Parameters
        ----------
        x : (n,) or (n, k) array

        Returns
        -------
        array of the shape of ``x``, dtype ``result_type(T.dtype, x.dtype)``.

        Notes
        -----
        A host-stored matrix (``storage='host'``) computes on the host, reading its tiles in
        place; a CuPy ``x`` is copied to the host and the result returned as a CuPy array.
        """
        self._check_usable()
        X, vec = self._operand(x, "x")
        xp = self._xp()
        out_dtype = np.result_type(self._dtype, X.dtype)
        Y = xp.zeros(X.shape, dtype=out_dtype)
        rows = [self._rows(k) for k in range(self.ntiles)]
        lower = self.is_factored
        for i in range(self.ntiles):
            d = self._diag[i]
            Y[rows[i]] += (herm(d) if (lower and trans) else d) @ X[rows[i]]
            for j in range(i):
                u, v = self._U[i][j], self._V[i][j]
                if not lower or not trans:
                    Y[rows[i]] += u @ (herm(v) @ X[rows[j]])
                if not lower or trans:
                    Y[rows[j]] += v @ (herm(u) @ X[rows[i]])
        return self._like(Y[:, 0] if vec else Y, x)

    def __matmul__(self, x: Any) -> Any:
        return self.matvec(x)

    # ------------------------------------------------------------------ factor use
    def _check_factored(self, what: str) -> None:
        self._check_usable()
        if not self.is_factored:
            raise ValueError(f"{what} needs the Cholesky factor: call tricov.tlr.potrf(T) first")

    def solve(self, B: Any) -> Any:
        """Solve ``A X = B`` with the factor (``L L^H X = B``); B is not modified.

        Forward then backward substitution over the tiles: dense triangular solves with the
        diagonal tiles (:func:`tricov.trsm`), low-rank products ``U (V^H x)`` elsewhere.

        Parameters
        ----------
        B : (n,) or (n, k) array

        Returns
        -------
        X : array of B's shape, dtype ``result_type(T.dtype, B.dtype)`` (floating).

        Notes
        -----
        A host-stored factor (``storage='host'``) is used on the host, in place: the solve
        reads each tile once per sweep (two sweeps), which costs about as much as copying the
        factor to the GPU would, and needs no device memory. A CuPy ``B`` is copied to the
        host and ``X`` returned as a CuPy array.
        """
        self._check_factored("solve")
        Bm, vec = self._operand(B, "B")
        xp = self._xp()
        work = np.result_type(self._dtype, Bm.dtype, np.float32)
        tile_dtype = work if self._dtype.kind == "c" else real_dtype(work)
        X = xp.array(Bm, dtype=work, order="C", copy=True)
        if X.size == 0:
            return self._like(X[:, 0] if vec else X, B)
        R = X.view(tile_dtype).reshape(self._n, -1) if work != tile_dtype else X
        rows = [self._rows(k) for k in range(self.ntiles)]

        def cast(a: Any) -> Any:
            return a if a.dtype == tile_dtype else a.astype(tile_dtype)

        for k in range(self.ntiles):
            dense.trsm(cast(self._diag[k]), R[rows[k]])
            for i in range(k + 1, self.ntiles):
                R[rows[i]] -= cast(self._U[i][k]) @ (herm(cast(self._V[i][k])) @ R[rows[k]])
        for k in reversed(range(self.ntiles)):
            for i in range(k + 1, self.ntiles):
                R[rows[k]] -= cast(self._V[i][k]) @ (herm(cast(self._U[i][k])) @ R[rows[i]])
            dense.trsm(cast(self._diag[k]), R[rows[k]], trans="C")
        return self._like(X[:, 0] if vec else X, B)

    def logdet(self) -> float:
        """``log det A = 2 sum log diag(L)`` from the factor (a float)."""
        self._check_factored("logdet")
        total = 0.0
        for d in self._diag:
            diag = asnumpy(d.diagonal()).real.astype(np.float64)
            total += 2.0 * float(np.log(diag).sum())
        return total


def _tile_size(tile_size: Any) -> int:
    if isinstance(tile_size, bool) or not isinstance(tile_size, (int, np.integer)) \
            or tile_size < 1:
        raise ValueError(f"tile_size must be an int >= 1, got {tile_size!r}")
    return int(tile_size)
