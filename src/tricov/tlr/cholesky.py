"""TLR Cholesky factorization: ``A ~ L L^H`` with ``L`` in tile low-rank form, in place.

Two modes:

``LL`` - :func:`potrf` factors a :class:`~tricov.tlr.TLRMatrix` (low-rank in, low-rank out),
    by one of two algorithms:

    ``algorithm='left'`` (left-looking, the default on CPUs). For each tile column ``k``:

    1. ``A_kk -= sum_j L_kj L_kj^H`` (one :func:`tricov.syrk` on ``X = [U_kj P_j sqrt(w_j)]``,
       ``P_j w_j P_j^H`` the eigendecomposition of the small ``V_kj^H V_kj``), then
       ``L_kk = potrf(A_kk)`` (:func:`tricov.potrf`);
    2. every tile ``(i, k)`` of the Schur complement, ``S_ik = U_ik V_ik^H - X_i W^H`` with
       ``W = [U_k0 ... U_k,k-1]`` and ``X_i = [U_ij (V_ij^H V_kj)]_j``, is recompressed once,
       by the randomized SVD (:mod:`tricov.tlr.compression`) that touches it only through
       products with blocks of vectors: it is never formed, and the cost is
       ``O(nb (r + R) p)`` per tile instead of the ``O(nb^2 R)`` of a dense update (``R`` is the
       width of ``W``, ``p`` the sample size); tiles of a panel are processed as a stack;
    3. ``L_ik = S_ik L_kk^-H = U_ik (L_kk^-1 V_ik)^H``: one :func:`tricov.trsm` on the
       concatenated ``V`` factors of the column.

    ``algorithm='right'`` (right-looking, low-rank updates). For each tile column ``k``:

    1. ``L_kk = potrf(A_kk)``;
    2. ``L_ik = U_ik (L_kk^-1 V_ik)^H`` (one TRSM on the concatenated ``V`` factors);
    3. ``A_jj -= L_jk L_jk^H`` for ``j > k``: dense SYRK updates as above;
    4. ``A_ij -= L_ik L_jk^H`` for ``i > j > k``: the update ``U_ik (V_ik^H V_jk) U_jk^H`` is
       appended to ``U_ij V_ij^H`` and the sum recompressed (QR of both factors, SVD of the
       small core: :func:`~tricov.tlr.lowrank.recompress`), batched over tiles of similar rank.
       Tile column ``j`` receives ``j`` updates, each truncated to ``tau / j``.

    The right-looking variant is the classic one for batched GPU kernels; on CPUs its many
    tall-skinny Householder QRs (LAPACK runs them at a fraction of GEMM speed) make it about
    twice as slow as the left-looking one, which recompresses each tile once.

On the CPU (float64 NumPy tiles, with a tolerance) the left-looking algorithm of both modes
runs on compiled kernels (:mod:`tricov.tlr._columns`, :mod:`tricov.kernels.numba.schur`): the
factor is kept as packed tile rows of ``U`` and tile columns of ``V``, so that the update of
a tile is applied as ``U_i (Pblk_i (W^T Z))`` with the small blocks ``V_ij^T V_kj`` of one
product per column, and the tiles of a column are compressed in parallel
(``numba.get_num_threads()`` threads, BLAS on one thread each). On the GPU (real CuPy tiles
with a tolerance) both modes run on dense panels of whole tile columns instead
(:mod:`tricov.tlr._panels`): a dense Schur tile costs little there, and one GEMM per column
update and a batched range finder per column keep the launches few. Other dtypes, the
fixed-rank mode and ``method='svd'`` take the array-module path described above.

Accuracy. Let ``tau = tol * anorm / ntiles`` (see :class:`~tricov.tlr.TLRMatrix`). Each
compression or recompression changes one tile of the current Schur complement by at most its
truncation bound in Frobenius norm, and a change of the Schur complement is a change of the
same entries of ``A``: the computed factor is the exact factor of ``A + E``. Each tile of ``E``
is bounded by the sum of the bounds of the truncations it went through: ``tau`` (DL), or
``tau`` from the construction plus ``tau_f`` from the factorization (LL; ``tau_f`` is computed
with potrf's ``tol``, by default the matrix's). With ``ntiles * (ntiles - 1)`` off-diagonal
tiles,

    ``||A - L L^H||_F <= tol ||A||_F``  (DL),   ``<= (tol + tol_f) ||A||_F``  (LL),

up to rounding and up to the rare underestimates of the randomized/ACA error estimators.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dense
from .._errors import NotPositiveDefiniteError
from . import _columns, _panels
from ._array import array_module, fro2, herm, zero_upper
from ._progress import Progress
from ._threads import tile_loops
from .build import chunk_hint, generate_diagonal, rank_hints, store, tile_atol
from .compression import DenseStack, check_accuracy, check_method, compress_op
from .lowrank import recompress
from .matrix import TLRMatrix, _tile_size
from .sources import DenseSource, KernelSource, TileSource, panel_chunks

__all__ = ["potrf", "potrf_from_dense", "potrf_from_kernel"]

ALGORITHMS = ("left", "right")

#: Largest stack (elements of one factor) recompressed at once in the right-looking updates.
_BATCH_ELEMENTS = 1 << 23
_MAX_BATCH = 32
#: Largest number of ``V`` columns solved in one TRSM.
_TRSM_COLUMNS = 8192


# ---------------------------------------------------------------------------- steps
def _factor_diag(T: TLRMatrix, k: int, d: Any = None) -> None:
    """``L_kk = potrf(A_kk)`` (of ``d``, default T's tile ``k``), in place; on failure mark T
    failed and raise with the global order (:func:`_diag_failure`)."""
    d = T._diag[k] if d is None else d
    try:
        dense.potrf(d)
    except NotPositiveDefiniteError as err:
        raise _diag_failure(T, k, err.order) from None
    zero_upper(d)


def _diag_failure(T: TLRMatrix, k: int, order: int) -> NotPositiveDefiniteError:
    """Mark T failed; the error for leading minor ``order`` of diagonal tile ``k``."""
    T._state = "failed"
    order = int(T.offsets[k]) + order
    acc = f"tol={T.tol}" if T.rank is None else f"tol={T.tol}, rank={T.rank}"
    return NotPositiveDefiniteError(order, message=(
        f"TLR Cholesky failed: the leading minor of order {order} (in diagonal tile {k}) "
        f"is not positive definite at the requested accuracy ({acc}). Compression errors "
        "can make a nearly singular matrix indefinite: use a smaller tol (or a larger "
        "rank), or add a nugget (a small multiple of the identity) to the diagonal. The "
        "matrix now holds a partial factorization; build it again."))


def _trsm_column(T: TLRMatrix, k: int) -> None:
    """``V_ik <- L_kk^-1 V_ik`` for all ``i > k``, in concatenated batches."""
    xp = array_module(T._diag[k])
    rows = [i for i in range(k + 1, T.ntiles) if T._V[i][k].shape[1]]
    start = 0
    while start < len(rows):
        stop, width = start, 0
        while stop < len(rows) and (stop == start or width + T._V[rows[stop]][k].shape[1]
                                    <= _TRSM_COLUMNS):
            width += T._V[rows[stop]][k].shape[1]
            stop += 1
        block = xp.concatenate([T._V[i][k] for i in rows[start:stop]], axis=1)
        dense.trsm(T._diag[k], block)
        col = 0
        for i in rows[start:stop]:
            r = T._V[i][k].shape[1]
            T._V[i][k] = xp.ascontiguousarray(block[:, col:col + r])
            col += r
        start = stop


def _gram_root(u: Any, v: Any) -> Any:
    """``X`` with ``X X^H = (U V^H)(U V^H)^H = U (V^H V) U^H`` (``U`` times a root of V^H V)."""
    xp = array_module(u)
    w, p = xp.linalg.eigh(herm(v) @ v)
    return u @ (p * xp.sqrt(xp.maximum(w, 0)).astype(p.dtype))


def _update_diag(T: TLRMatrix, j: int, ks: range) -> None:
    """``A_jj -= sum_k L_jk L_jk^H`` over ``k in ks`` (one SYRK)."""
    xp = array_module(T._diag[j])
    roots = [_gram_root(T._U[j][k], T._V[j][k]) for k in ks if T._V[j][k].shape[1]]
    if roots:
        dense.syrk(xp.ascontiguousarray(xp.concatenate(roots, axis=1)), T._diag[j],
                   alpha=-1.0, beta=1.0)


def _rank_chunks(tasks: list[tuple[int, int, int]], rows: int) -> list[list[tuple[int, int, int]]]:
    """Split ``(K, i, j)`` tasks, sorted by width K, into stacks of similar width."""
    tasks = sorted(tasks)
    chunks: list[list[tuple[int, int, int]]] = []
    for t in tasks:
        if chunks:
            last = chunks[-1]
            size = (len(last) + 1) * rows * t[0]
            if len(last) < _MAX_BATCH and size <= _BATCH_ELEMENTS and t[0] <= 1.25 * last[0][0] + 8:
                last.append(t)
                continue
        chunks.append([t])
    return chunks


def _update_offdiag(T: TLRMatrix, k: int, atol_col: list[float | None], rank: int | None) -> None:
    """``A_ij -= L_ik L_jk^H`` for ``i > j > k``, recompressed in batches."""
    xp = array_module(T._diag[k])
    nt, off = T.ntiles, T.offsets
    groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for j in range(k + 1, nt):
        rj = T._V[j][k].shape[1]
        for i in range(j + 1, nt):
            ri = T._V[i][k].shape[1]
            if ri and rj:
                shape = (int(off[i + 1] - off[i]), int(off[j + 1] - off[j]))
                groups.setdefault(shape, []).append((T._U[i][j].shape[1] + min(ri, rj), i, j))
    for (mi, mj), tasks in groups.items():
        for chunk in _rank_chunks(tasks, max(mi, mj)):
            width = max(t[0] for t in chunk)
            L = xp.zeros((len(chunk), mi, width), dtype=T.dtype)
            R = xp.zeros((len(chunk), mj, width), dtype=T.dtype)
            atol = None if atol_col[k + 1] is None else np.empty(len(chunk))
            for b, (_, i, j) in enumerate(chunk):
                uc, vc = T._U[i][j], T._V[i][j]
                c = uc.shape[1]
                L[b, :, :c], R[b, :, :c] = uc, vc
                m = herm(T._V[i][k]) @ T._V[j][k]  # L_ik L_jk^H = U_ik m U_jk^H
                if m.shape[0] <= m.shape[1]:
                    L[b, :, c:c + m.shape[0]] = T._U[i][k]
                    R[b, :, c:c + m.shape[0]] = -(T._U[j][k] @ herm(m))
                else:
                    L[b, :, c:c + m.shape[1]] = T._U[i][k] @ m
                    R[b, :, c:c + m.shape[1]] = -T._U[j][k]
                if atol is not None:
                    atol[b] = atol_col[j]
            U, V, ranks = recompress(L, R, atol, rank)
            for b, (_, i, j) in enumerate(chunk):
                r = int(ranks[b])
                T._U[i][j] = xp.ascontiguousarray(U[b, :, :r])
                T._V[i][j] = xp.ascontiguousarray(V[b, :, :r])
            del L, R, U, V


def _right_looking(T: TLRMatrix, tau: float | None, rank: int | None, progress: bool) -> None:
    nt = T.ntiles
    # Tile column j is updated j times: each update gets tau / j.
    atol_col = [None if tau is None else tau / max(j, 1) for j in range(nt)]
    with Progress(nt, "TLR Cholesky (right-looking)", progress) as bar:
        for k in range(nt):
            _factor_diag(T, k)
            if k < nt - 1:
                _trsm_column(T, k)
                for j in range(k + 1, nt):
                    _update_diag(T, j, range(k, k + 1))
                _update_offdiag(T, k, atol_col, rank)
            bar.advance()


class _LowRankStack:
    """Low-rank tiles ``U_b V_b^H`` of one shape as a tile operator."""

    def __init__(self, factors: list[tuple[Any, Any]], shape: tuple[int, int], dtype: Any,
                 xp: Any) -> None:
        self.factors = factors
        self.count, self.shape, self.dtype, self.xp = len(factors), shape, np.dtype(dtype), xp

    def apply(self, idx: np.ndarray, X: Any) -> Any:
        xs = [X] * idx.size if X.ndim == 2 else list(X)
        return self.xp.stack([self.factors[b][0] @ (herm(self.factors[b][1]) @ x)
                              for b, x in zip(idx.tolist(), xs, strict=True)])

    def adjoint(self, idx: np.ndarray, Q: Any) -> Any:
        return self.xp.stack([self.factors[b][1] @ (herm(self.factors[b][0]) @ q)
                              for b, q in zip(idx.tolist(), Q, strict=True)])

    def rows(self, b: int, i: Any) -> Any:
        u, v = self.factors[b]
        return u[i] @ herm(v)

    def cols(self, b: int, j: Any) -> Any:
        u, v = self.factors[b]
        return u @ herm(v[j])

    def dense(self, b: int) -> Any:
        u, v = self.factors[b]
        return u @ herm(v)


class _Schur:
    """Schur-complement tiles ``S_b = base_b - X_b W^H`` as a tile operator.

    ``W = [U_k0 ... U_k,k-1]`` is shared by the tiles of column ``k``; ``X_b`` holds the
    matching blocks ``U_ij (V_ij^H V_kj)``, so that ``X_b W^H = sum_j L_ij L_kj^H``.
    """

    def __init__(self, base: Any, X: list[Any], W: Any) -> None:
        self.base, self.X, self.W = base, X, W
        self.count, self.shape, self.dtype, self.xp = base.count, base.shape, base.dtype, base.xp

    def apply(self, idx: np.ndarray, Z: Any) -> Any:
        Y = self.base.apply(idx, Z)
        shared = herm(self.W) @ Z if Z.ndim == 2 else None
        for a, b in enumerate(idx.tolist()):
            Y[a] -= self.X[b] @ (shared if shared is not None else herm(self.W) @ Z[a])
        return Y

    def adjoint(self, idx: np.ndarray, Q: Any) -> Any:
        Y = self.base.adjoint(idx, Q)
        for a, b in enumerate(idx.tolist()):
            Y[a] -= self.W @ (herm(self.X[b]) @ Q[a])
        return Y

    def rows(self, b: int, i: Any) -> Any:
        return self.base.rows(b, i) - self.X[b][i] @ herm(self.W)

    def cols(self, b: int, j: Any) -> Any:
        return self.base.cols(b, j) - self.X[b] @ herm(self.W[j])

    def dense(self, b: int) -> Any:
        return self.base.dense(b) - self.X[b] @ herm(self.W)


def _left_looking(T: TLRMatrix, src: TileSource | None, tol: float | None, rank: int | None,
                  norm2: float, rng: np.random.Generator, method: str, progress: bool) -> float:
    """Left-looking TLR Cholesky.

    Tile ``(i, k)`` of the Schur complement is ``base - sum_j L_ij L_kj^H``, compressed once
    through its products with blocks of vectors (:class:`_Schur`): ``base`` is the dense tile
    of ``A`` from ``src`` (DL; ``norm2``, the running ``||A||_F^2``, grows with each panel) or
    the low-rank tile of T itself when ``src`` is None (LL; ``norm2`` fixed). Returns the final
    ``norm2``.
    """
    nt, off = T.ntiles, T.offsets
    xp = array_module(T._diag[0]) if nt else np
    with Progress(nt, "TLR Cholesky (left-looking)", progress) as bar:
        for k in range(nt):
            _update_diag(T, k, range(k))
            _factor_diag(T, k)
            used = [j for j in range(k) if T._U[k][j].shape[1]]
            W = xp.concatenate([T._U[k][j] for j in used], axis=1) if used else None
            width = 0 if W is None else W.shape[1]
            mk = int(off[k + 1] - off[k])
            cols = width + (mk if src is not None else 0)
            hints = (rank_hints(T, k) if src is not None
                     else [T._U[i][k].shape[1] for i in range(k + 1, nt)])
            for i0, i1 in (panel_chunks(off, k, max(cols, 1), hints) if k < nt - 1 else []):
                mi = int(off[i0 + 1] - off[i0])
                if src is not None:
                    panel = src.panel(k, i0, i1)
                    norm2 += 2.0 * fro2(panel, None)
                    base = DenseStack(panel.reshape(i1 - i0, mi, mk))
                else:
                    base = _LowRankStack([(T._U[i][k], T._V[i][k]) for i in range(i0, i1)],
                                         (mi, mk), T.dtype, xp)
                hint = chunk_hint(hints, k, i0, i1)
                op = base
                if W is not None:
                    X = []
                    for i in range(i0, i1):
                        x = xp.zeros((mi, width), dtype=T.dtype)
                        col = 0
                        for j in used:
                            r = T._U[k][j].shape[1]
                            if T._U[i][j].shape[1]:
                                x[:, col:col + r] = T._U[i][j] @ (herm(T._V[i][j]) @ T._V[k][j])
                            col += r
                        X.append(x)
                    op = _Schur(base, X, W)
                atol = tile_atol(tol, norm2, nt)
                store(T, k, i0, compress_op(op, None if atol is None else
                                            np.full(i1 - i0, atol), rank, method, rng, hint))
                del op, base
            if k < nt - 1:
                _trsm_column(T, k)
            bar.advance()
    return norm2


# ---------------------------------------------------------------------------- public
def potrf(T: TLRMatrix, *, tol: float | None = None, rank: int | None = None,
          algorithm: str = "left", seed: Any = None, progress: bool = False,
          device_memory: int | float | None = None) -> TLRMatrix:
    """TLR Cholesky factorization in place (mode LL): T becomes its lower factor ``L``.

    A host-stored T (``T.storage == 'host'``, built with ``storage='host'`` from CuPy points
    or a CuPy matrix) is factored on the GPU with its tiles streamed from and back to host
    memory, within ``device_memory`` (:mod:`tricov.tlr.stream`); its factor stays on the host.

    Parameters
    ----------
    T : TLRMatrix
        Not yet factored.
    tol : float, optional
        Accuracy of the recompressions during the factorization (relative, as in
        :class:`TLRMatrix`); default ``T.tol``.
    rank : int, optional
        Fixed rank (or cap) of the recompressed tiles; default ``T.rank``.
    algorithm : {'left', 'right'}
        See the module notes: left-looking, each tile recompressed once from products with
        the Schur complement (default), or right-looking with low-rank updates recompressed
        after each update.
    seed : int or numpy.random.Generator, optional
        Randomness of the left-looking recompressions (``rsvd``; ``svd`` if T was built with
        it).
    progress : bool
        Show a progress bar (on a terminal only).
    device_memory : int or float, optional
        Host-stored T only: the device memory the factorization may hold, in bytes (int), or
        as a fraction of the free device memory (float in (0, 1]); default 0.8 of the free
        memory. See :mod:`tricov.tlr.stream` for what is counted.

    Returns
    -------
    T
        Factored (``T.is_factored``); ``||A - L L^H||_F <= (T.tol + tol) ||A||_F``.

    Raises
    ------
    NotPositiveDefiniteError
        If a diagonal tile is not positive definite at this accuracy; ``order`` is the global
        leading minor. T then holds a partial factorization and cannot be used.
    ValueError
        Also if ``device_memory`` is too small for one tile column of a host-stored T (before
        any work if one dense tile does not fit; else T then holds a partial factorization).

    Examples
    --------
    A matrix kept in host memory, factored on the GPU within 4 GiB of device memory:

    >>> T = TLRMatrix.from_kernel(kernel, cupy.asarray(x), tile_size=2048, tol=1e-8,
    ...                           storage="host")                    # doctest: +SKIP
    >>> potrf(T, device_memory=4 << 30)                              # doctest: +SKIP
    >>> T.transfer_stats["h2d_bytes"], T.transfer_stats["device_peak_bytes"]  # doctest: +SKIP
    """
    if not isinstance(T, TLRMatrix):
        raise TypeError(f"T must be a TLRMatrix, got {type(T).__name__}")
    T._check_usable()
    if T.is_factored:
        raise ValueError("T is already factored")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    tol = T.tol if tol is None else tol
    rank = T.rank if rank is None else rank
    check_accuracy(tol, rank, T.dtype)
    tau = tile_atol(tol, T.anorm ** 2, T.ntiles)
    if T.storage == "host":
        from . import stream

        if algorithm != "left":
            raise ValueError("a host-stored TLRMatrix is factored by the left-looking algorithm "
                             f"only: algorithm must be 'left', got {algorithm!r}")
        budget = stream.resolve_budget(device_memory, T._device, T, dl=False)
        method = "svd" if T.method == "svd" else "rsvd"
        stream.left_looking(T, None, tol, rank, T.anorm ** 2, np.random.default_rng(seed),
                            method, budget, progress)
        T._state = "factored"
        return T
    if device_memory is not None:
        raise ValueError("device_memory applies to host-stored matrices (storage='host') only")
    if algorithm == "right":
        _right_looking(T, tau, rank, progress)
    elif _panels.usable(T, tol, rank, "svd" if T.method == "svd" else "rsvd"):
        _panels.left_looking(T, None, tol, T.anorm ** 2, np.random.default_rng(seed), progress)
    elif T.method != "svd" and _columns.usable(T, tol):
        _columns.left_looking(T, None, tol, rank, T.anorm ** 2, np.random.default_rng(seed),
                              progress)
    else:
        # Schur tiles are reached through products with blocks: ACA (entrywise) gains nothing.
        method = "svd" if T.method == "svd" else "rsvd"
        _left_looking(T, None, tol, rank, T.anorm ** 2, np.random.default_rng(seed), method,
                      progress)
    T._state = "factored"
    return T


def _potrf_dl(src: TileSource, tile_size: int, tol: float | None, rank: int | None, method: str,
              seed: Any, progress: bool, storage: str, device_memory: Any,
              like: Any) -> TLRMatrix:
    from . import stream

    T = TLRMatrix(src.n, tile_size, src.dtype, tol=tol, rank=rank, method=method)
    T._device = stream.device_for(storage, like)
    if T._device is not None:
        budget = stream.resolve_budget(device_memory, T._device, T, dl=True)
        try:
            norm2 = generate_diagonal(T, src)
        except BaseException:
            T._device.wait()
            raise
        norm2 = stream.left_looking(T, src, tol, rank, norm2, np.random.default_rng(seed),
                                    method, budget, progress)
        T.anorm = math.sqrt(norm2)
        T._state = "factored"
        return T
    if device_memory is not None:
        raise ValueError("device_memory applies to storage='host' only")
    if getattr(src, "compiled", None) is not None:
        with tile_loops():
            norm2 = generate_diagonal(T, src)
    else:
        norm2 = generate_diagonal(T, src)
    if _panels.usable(T, tol, rank, method):
        norm2 = _panels.left_looking(T, src, tol, norm2, np.random.default_rng(seed), progress)
    elif method == "rsvd" and _columns.usable(T, tol):
        norm2 = _columns.left_looking(T, src, tol, rank, norm2, np.random.default_rng(seed),
                                      progress)
    else:
        norm2 = _left_looking(T, src, tol, rank, norm2, np.random.default_rng(seed), method,
                              progress)
    T.anorm = math.sqrt(norm2)
    T._state = "factored"
    return T


def potrf_from_kernel(kernel: Any, points: Any, *, tile_size: int, tol: float | None = None,
                      rank: int | None = None, method: str = "rsvd", nugget: float = 0.0,
                      seed: Any = None, dtype: Any = None, progress: bool = False,
                      storage: str = "device",
                      device_memory: int | float | None = None) -> TLRMatrix:
    """Compress and factor at once (mode DL): the TLR Cholesky factor of a kernel matrix.

    Left-looking: when tile column ``k`` is reached its panels are generated from the
    kernel, updated densely by the columns already factored, and compressed once (to
    ``tau = tol * anorm / ntiles`` with the running norm). Never forms the dense matrix.
    Parameters are those of :meth:`TLRMatrix.from_kernel`; ``method`` compresses the dense
    Schur-complement tiles. With ``storage='host'`` (CuPy points) the factor is kept in host
    memory and computed on the GPU within ``device_memory`` (see :func:`potrf` and
    :mod:`tricov.tlr.stream`):

    >>> F = potrf_from_kernel(kernel, cupy.asarray(x), tile_size=2048, tol=1e-8,
    ...                       storage="host", device_memory=0.5)     # doctest: +SKIP
    >>> F.storage                                                    # doctest: +SKIP
    'host'

    Returns
    -------
    TLRMatrix
        The factor (``is_factored``), with ``||A - L L^H||_F <= tol ||A||_F``.

    Raises
    ------
    NotPositiveDefiniteError
        As :func:`potrf`.
    """
    check_method(method)
    src = KernelSource(kernel, points, _tile_size(tile_size), dtype, nugget)
    return _potrf_dl(src, tile_size, tol, rank, method, seed, progress, storage, device_memory,
                     src.points)


def potrf_from_dense(A: Any, *, tile_size: int, tol: float | None = None,
                     rank: int | None = None, method: str = "rsvd", nugget: float = 0.0,
                     seed: Any = None, progress: bool = False, storage: str = "device",
                     device_memory: int | float | None = None) -> TLRMatrix:
    """Compress and factor a dense Hermitian matrix at once (mode DL); reads its lower triangle.

    See :func:`potrf_from_kernel` (``storage='host'`` with a CuPy ``A``: the factor in host
    memory). ``A`` is not modified.
    """
    check_method(method)
    src = DenseSource(A, _tile_size(tile_size), nugget)
    return _potrf_dl(src, tile_size, tol, rank, method, seed, progress, storage, device_memory, A)
