"""Left-looking TLR Cholesky on dense tile panels, batched over the tiles of a column (GPU).

The CuPy path of :func:`tricov.tlr.potrf` (mode LL) and of
:func:`tricov.tlr.potrf_from_kernel` / :func:`~tricov.tlr.potrf_from_dense` (mode DL) for real
tiles with a tolerance, and of the compression of :meth:`TLRMatrix.from_kernel`. It is written
for any array module (the CPU tests run it on NumPy), but it is shaped for a GPU, where a
dense ``nb x nb`` tile is cheap to hold and every Python call costs a launch: the work of a
tile column is a few large batched GEMMs, and the host waits only for the ranks.

For tile column ``k`` the tiles ``i >= k`` are handled as stacks ``(tiles, nb, nb)``:

1. the panel of ``A`` (DL: generated; LL: the low-rank tiles expanded, ``U_ik V_ik^T``);
2. the Schur update of the whole panel in one GEMM, ``S_i = A_ik - T_i W^T`` with
   ``W = [U_k0 ... U_k,k-1]`` and ``T_i = [U_ij (V_ij^T V_kj)]_j``; the blocks of ``T`` are
   two strided-batched GEMMs per earlier column ``j``, over all the panel's tiles at once;
3. ``L_kk = potrf(S_kk)``;
4. the off-diagonal tiles compressed by :func:`compress_stack`;
5. ``V_ik <- L_kk^-1 V_ik`` for the whole column in one TRSM.

The factor of column ``j`` is kept as two stacks ``UT[j]`` and ``VT[j]`` of shape
``(tiles, R_j, nb)`` (``U^T`` and ``V^T`` of tiles ``i > j``, zero-padded to the column's
largest rank ``R_j``; the short last tile row is zero-padded to ``nb`` rows), so that the
blocks of step 2 are strided batches; at the end the tiles are copied out into ``T``.

Accuracy is that of :mod:`tricov.tlr.cholesky`: each tile of the Schur complement is
compressed once, to ``tau = tol * sqrt(norm2) / ntiles`` with the running squared norm.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import dense
from ._array import array_module, asnumpy, fro2
from ._progress import Progress
from .build import tile_atol
from .matrix import TLRMatrix

__all__ = ["compress_column", "compress_stack", "left_looking", "usable"]

#: Samples per round of the range finder (and the granularity of the ranks it finds).
BLOCK = 32
#: Largest dense panel (bytes) generated and compressed at once.
PANEL_BYTES = 1 << 31


#: Fraction of the free device memory that the padded column stacks may be expected to take:
#: about ``n^2`` bytes in float64 when the largest rank of a column is an eighth of the tile
#: size (covariances at tol 1e-8: 9 GB at n = 100000). Larger problems take the tile-by-tile
#: path of :mod:`tricov.tlr.cholesky`, whose storage is exact.
MEMORY_SHARE = 0.5


def usable(T: TLRMatrix, tol: float | None, rank: int | None, method: str) -> bool:
    """Whether this path applies: CuPy tiles of a real dtype, a tolerance, no fixed rank,
    the randomized method, and room for the padded stacks (:data:`MEMORY_SHARE`)."""
    if not (tol is not None and rank is None and method == "rsvd" and T.ntiles > 0
            and T.dtype.kind == "f" and T._device is None
            and all(type(d).__module__.startswith("cupy") for d in T._diag if d is not None)):
        return False
    import cupy

    free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
    return float(T.n) ** 2 * T.dtype.itemsize / 8 <= MEMORY_SHARE * free


def _gemm_sub(C: Any, A: Any, B: Any) -> None:
    """``C -= A @ B`` for 2-D C-contiguous ``C`` and contiguous ``A``, ``B``, in place."""
    xp = array_module(C)
    if xp is np:
        C -= A @ B
        return
    from cupy import cublas

    cublas.gemm("N", "N", A, B, out=C, alpha=-1.0, beta=1.0)


def _orthonormalize(Y: Any, keep: Any, floor: float, QT: Any) -> Any:
    """Orthonormal columns for the significant part of each ``Y_b`` of the stack ``(B, p, s)``,
    orthogonal to the basis ``QT`` (rows; None if empty).

    Two passes of: projection out of ``QT``, then the eigendecomposition of the Gram matrix
    ``Y_b^T Y_b = W diag(w) W^T`` (one batched call) and ``Y_b <- Y_b W w^-1/2`` over the
    eigenvalues ``w`` above ``floor`` (first pass) and above rounding, zero columns for the
    others and for members with ``keep_b = 0``. A block of samples near a tile's convergence
    is numerically rank deficient, which Cholesky QR cannot factor; the directions dropped
    carry less than ``floor`` and are found again by the next round if they matter. The
    second pass, on nearly orthonormal columns, restores orthogonality to rounding.
    """
    xp = array_module(Y)
    eps = float(np.finfo(Y.dtype).eps)
    for npass in range(2):
        if QT is not None:
            Y -= QT.transpose(0, 2, 1) @ (QT @ Y)
        w, W = xp.linalg.eigh(Y.transpose(0, 2, 1) @ Y)
        scale = _scales(w, keep, floor if npass == 0 else 0.25, 4 * Y.shape[2] * eps)
        Y = Y @ (W * scale[:, None, :])
    return Y


def _scales(w: Any, keep: Any, floor: float, rel: float) -> Any:
    """``w^-1/2`` where ``w > max(floor, rel * max(w))`` and ``keep > 0``, else 0, per row of
    the eigenvalues ``w`` (ascending); one fused kernel on a GPU."""
    xp = array_module(w)
    if xp is np:
        good = (w > np.maximum(floor, rel * w[:, -1:])) & (keep[:, None] > 0)
        return np.where(good, 1 / np.sqrt(np.where(good, w, 1)), 0).astype(w.dtype)
    return _scale_kernel()(w, w[:, -1:], keep[:, None], w.dtype.type(floor), w.dtype.type(rel))


@functools.cache
def _scale_kernel() -> Any:
    import cupy

    return cupy.ElementwiseKernel(
        "T w, T top, T keep, T floor, T rel", "T scale",
        "scale = (keep > 0 && w > max(floor, rel * top)) ? 1 / sqrt(w) : 0",
        "tricov_tlr_panel_scale")


@functools.cache
def _normal_kernel() -> Any:
    import cupy

    # Standard normal deviates from a counter-based hash (splitmix64 of seed + index, two
    # uniforms, Box-Muller): asynchronous, unlike a host-API generator call.
    return cupy.ElementwiseKernel(
        "uint64 seed", "T z",
        """
        unsigned long long a = seed + 2ull * (unsigned long long)i;
        double u[2];
        for (int k = 0; k < 2; ++k) {
            unsigned long long x = a + (unsigned long long)k + 0x9e3779b97f4a7c15ull;
            x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
            x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
            x ^= x >> 31;
            u[k] = ((x >> 11) + 0.5) * 0x1.0p-53;
        }
        z = (T)(sqrt(-2.0 * log(u[0])) * cospi(2.0 * u[1]));
        """,
        "tricov_tlr_panel_normal")


def compress_stack(C: Any, atol: float, rng: np.random.Generator) -> tuple[Any, Any, np.ndarray]:
    """Low-rank factors of every tile of the stack ``C`` (``(B, p, q)``, C-contiguous):
    ``C_b ~ QT_b^T VT_b`` with ``||C_b - QT_b^T VT_b||_F <= atol`` (with high probability).

    Blocked adaptive randomized range finder (Halko, Martinsson & Tropp, sec. 4.4), one
    Gaussian block per round shared by the tiles (:data:`BLOCK` columns, later half the basis
    size): the block, with the directions already found projected out, estimates each tile's
    error, ``est_b = ||Y_b||_F / sqrt(s)`` for ``s`` columns; a tile whose estimate is
    ``<= atol / 2`` stops, the others add the block, orthonormalized by pieces of
    :data:`BLOCK` columns (:func:`_orthonormalize`), to their basis, and ``V^T = Q^T C`` of
    the new rows. When a quarter of the tiles in the rounds have stopped, the others are
    gathered into a smaller stack, so that later rounds read only them. Ranks are sums of
    block sizes, less the directions that orthonormalization dropped; a tile that reaches
    ``min(p, q)`` without a converged estimate gets an exact basis.

    Returns
    -------
    QT : (B, R, p) array
        ``U_b^T`` (orthonormal rows), zero beyond the tile's rank; ``R`` the largest rank.
    VT : (B, R, q) array
        ``V_b^T = U_b^T C_b``.
    ranks : (B,) int64 NumPy array
    """
    xp = array_module(C)
    B, p, q = C.shape
    cap = min(p, q)
    gaussian = _sampler(xp, rng, q, C.dtype)
    idx = np.arange(B)  # the tiles still in the rounds, and their stacks
    Cw = C
    QTw = xp.zeros((B, 0, p), dtype=C.dtype)  # contiguous (appended to), so that the
    VTw = xp.zeros((B, 0, q), dtype=C.dtype)  # products take them without copies
    active = np.ones(B, dtype=bool)
    final: list[tuple[Any, Any]] = [(None, None)] * B
    r = 0
    while active.any():
        if active.sum() <= 0.75 * idx.size:  # gather the tiles still in the rounds
            for j in np.flatnonzero(~active).tolist():
                final[idx[j]] = (QTw[j, :r], VTw[j, :r])
            sel = np.flatnonzero(active)
            dev = xp.asarray(sel)
            Cw, QTw, VTw = Cw[dev], QTw[dev], VTw[dev]
            idx, active = idx[sel], active[sel]
        m = idx.size
        # samples: BLOCK, then half the basis found (fewer rounds and reads of C for high
        # ranks; directions that carry nothing are dropped by _orthonormalize); at cap: an
        # estimate only
        s = min(max(BLOCK, r // 2 // BLOCK * BLOCK), cap - r) if r < cap else min(BLOCK, q)
        Y = (Cw.reshape(m * p, q) @ gaussian(s)).reshape(m, p, s)
        if r:
            Y -= QTw.transpose(0, 2, 1) @ (QTw @ Y)
        est = np.sqrt(np.asarray(asnumpy(fro2(Y)), dtype=np.float64) / s)
        active &= ~(est <= 0.5 * atol)
        if r >= cap or not active.any():
            break
        keep = xp.asarray(active.astype(C.dtype))
        new = []
        for c0 in range(0, s, BLOCK):  # the batched eigensolver takes orders <= 32
            Yc = _orthonormalize(Y[:, :, c0:c0 + BLOCK], keep, atol * atol / 16,
                                 QTw if QTw.shape[1] else None)
            new.append(Yc.transpose(0, 2, 1))
            QTw = xp.concatenate([QTw, new[-1]], axis=1)
        r += s
        VTw = xp.concatenate([VTw, xp.concatenate(new, axis=1) @ Cw], axis=1)
    for j in range(idx.size):
        if active[j]:  # filled its rank without a converged estimate: an exact basis
            QTw[j, :r] = 0
            QTw[j, :cap] = xp.eye(p, dtype=C.dtype) if p <= q else xp.linalg.qr(Cw[j])[0].T
            VTw[j, :r] = QTw[j, :r] @ Cw[j]
        final[idx[j]] = (QTw[j, :r], VTw[j, :r])
    # Directions dropped, or rounds after a tile stopped, left zero rows: keep the others.
    used = [(qt != 0).any(axis=1) for qt, _ in final]
    counts = asnumpy(xp.stack([u.sum() for u in used])) if B else np.zeros(0)
    ranks = np.asarray(counts, dtype=np.int64)
    R = int(ranks.max()) if B else 0
    QT = xp.zeros((B, R, p), dtype=C.dtype)
    VT = xp.zeros((B, R, q), dtype=C.dtype)
    for b, ((qt, vt), u) in enumerate(zip(final, used, strict=True)):
        if ranks[b] == qt.shape[0]:
            QT[b, :ranks[b]], VT[b, :ranks[b]] = qt, vt
        elif ranks[b]:
            rows = xp.flatnonzero(u)
            QT[b, :ranks[b]], VT[b, :ranks[b]] = qt[rows], vt[rows]
    return QT, VT, ranks


def _sampler(xp: Any, rng: np.random.Generator, rows: int, dtype: Any) -> Any:
    """``gaussian(s)``: independent standard normal ``rows x s`` blocks where ``xp`` computes
    (on a GPU from one seed that ``rng`` draws, by :func:`_normal_kernel`)."""
    if xp is np:
        return lambda s: rng.standard_normal((rows, s)).astype(dtype, copy=False)
    seed = int(rng.integers(2**62))
    drawn = [0]

    def gaussian(s: int) -> Any:
        out = xp.empty((rows, s), dtype=dtype)
        _normal_kernel()(np.uint64(seed + 2 * drawn[0]), out)
        drawn[0] += rows * s
        return out

    return gaussian


class _Columns:
    """The factor's tile columns as padded stacks (see the module notes)."""

    def __init__(self, T: TLRMatrix) -> None:
        self.T = T
        self.nb = T.tile_size
        self.UT: list[Any] = []
        self.VT: list[Any] = []
        self.ranks: list[np.ndarray] = []

    def schur(self, C: Any, k: int, i0: int, i1: int) -> None:
        """``C_i -= sum_j L_ij L_kj^T`` for the stack ``C`` of tiles ``i0 <= i < i1`` of
        column ``k`` (``i0 >= k``; rows of a short last tile may be fewer than ``nb``)."""
        used = [j for j in range(k) if self.ranks[j][k - j - 1]]
        if not used:
            return
        xp = array_module(C)
        c, rows = i1 - i0, C.shape[1]
        width = sum(int(self.ranks[j][k - j - 1]) for j in used)
        Tb = xp.empty((c, self.nb, width), dtype=C.dtype)
        WT = xp.empty((width, self.nb), dtype=C.dtype)
        col = 0
        for j in used:
            r, R = int(self.ranks[j][k - j - 1]), self.UT[j].shape[1]
            s0, s1 = i0 - j - 1, i1 - j - 1
            vk = self.VT[j][k - j - 1, :r]
            Z = (self.VT[j][s0:s1].reshape(c * R, self.nb) @ vk.T).reshape(c, R, r)
            Tb[:, :, col:col + r] = self.UT[j][s0:s1].transpose(0, 2, 1) @ Z
            WT[col:col + r] = self.UT[j][k - j - 1, :r]
            col += r
        if rows == self.nb and C.flags.c_contiguous:
            _gemm_sub(C.reshape(c * rows, -1), Tb.reshape(c * rows, width),
                      WT[:, :C.shape[2]])
        else:
            for b in range(c):
                C[b] -= Tb[b, :rows] @ WT[:, :C.shape[2]]

    def add(self, k: int, parts: list[tuple[int, Any, Any, np.ndarray]], L: Any) -> None:
        """Record column ``k`` from the compressed chunks ``(first tile, QT, VT, ranks)``,
        then ``V <- L_kk^-1 V`` (one TRSM on the stacked ``V^T``)."""
        xp = array_module(L)
        m = self.T.ntiles - k - 1
        ranks = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64)
        R = int(ranks.max()) if m else 0
        UT = xp.zeros((m, R, self.nb), dtype=L.dtype)
        VT = xp.zeros((m, R, self.nb), dtype=L.dtype)
        for i0, qt, vt, _ in parts:
            a, c = i0 - k - 1, qt.shape[0]
            UT[a:a + c, :qt.shape[1], :qt.shape[2]] = qt
            VT[a:a + c, :vt.shape[1], :vt.shape[2]] = vt
        if R:
            dense.trsm(L, VT.reshape(m * R, self.nb), side="R", uplo="L", trans="T")
        self.UT.append(UT)
        self.VT.append(VT)
        self.ranks.append(ranks)

    def store(self, columns: int) -> None:
        """Copy the tiles of the first ``columns`` columns into ``T`` (contiguous, trimmed),
        releasing the stacks."""
        T, off = self.T, self.T.offsets
        for j in range(columns):
            xp = array_module(self.UT[j])
            for i in range(j + 1, T.ntiles):
                r, mi = int(self.ranks[j][i - j - 1]), int(off[i + 1] - off[i])
                T._U[i][j] = xp.ascontiguousarray(self.UT[j][i - j - 1, :r, :mi].T)
                T._V[i][j] = xp.ascontiguousarray(self.VT[j][i - j - 1, :r].T)
            self.UT[j] = self.VT[j] = None


def _chunks(T: TLRMatrix, k: int) -> list[tuple[int, int]]:
    """Tiles ``k < i < nt`` of column ``k`` in runs of at most :data:`PANEL_BYTES`, the short
    last tile on its own."""
    nt, nb = T.ntiles, T.tile_size
    per = max(1, PANEL_BYTES // (nb * nb * T.dtype.itemsize))
    stop = nt - 1 if int(T.offsets[nt] - T.offsets[nt - 1]) != nb else nt
    out = [(i, min(i + per, stop)) for i in range(k + 1, stop, per)]
    if stop < nt and k + 1 < nt:
        out.append((nt - 1, nt))
    return out


def _generated(T: TLRMatrix, src: Any, k: int, i0: int, i1: int) -> tuple[Any, float]:
    """The stack of tiles ``i0 <= i < i1`` of column ``k`` generated from ``src``, and what
    they add to the running ``||A||_F^2`` (twice their squares: the upper triangle too)."""
    off = T.offsets
    C = src.panel(k, i0, i1).reshape(i1 - i0, int(off[i0 + 1] - off[i0]), -1)
    return C, 2.0 * fro2(C, None)


def compress_column(T: TLRMatrix, src: Any, k: int, norm2: float,
                    rng: np.random.Generator) -> float:
    """Generate and compress the off-diagonal tiles of column ``k`` of ``T`` (not factored;
    :func:`tricov.tlr.build.build`), each run of tiles to the accuracy of the running squared
    norm ``norm2``; returns it."""
    xp = array_module(T._diag[k])
    for i0, i1 in _chunks(T, k):
        C, add = _generated(T, src, k, i0, i1)
        norm2 += add
        QT, VT, ranks = compress_stack(C, tile_atol(T.tol, norm2, T.ntiles), rng)
        for b, r in enumerate(ranks.tolist()):
            T._U[i0 + b][k] = xp.ascontiguousarray(QT[b, :r].T)
            T._V[i0 + b][k] = xp.ascontiguousarray(VT[b, :r].T)
    return norm2


def left_looking(T: TLRMatrix, src: Any, tol: float, norm2: float, rng: np.random.Generator,
                 progress: bool) -> float:
    """Factor ``T`` in place (mode LL: ``src`` None, the tiles of ``T`` are ``A``; mode DL:
    tiles generated from ``src``, diagonal tiles already in ``T``, ``norm2`` the running
    ``||A||_F^2``). Returns ``norm2``."""
    from .._errors import NotPositiveDefiniteError
    from .cholesky import _factor_diag

    nt, off = T.ntiles, T.offsets
    F = _Columns(T)
    with Progress(nt, "TLR Cholesky (left-looking, panels)", progress) as bar:
        for k in range(nt):
            F.schur(T._diag[k][None], k, k, k + 1)
            try:
                _factor_diag(T, k)
            except NotPositiveDefiniteError:
                F.store(k)
                raise
            parts = []
            for i0, i1 in _chunks(T, k):
                if src is not None:
                    C, add = _generated(T, src, k, i0, i1)
                    norm2 += add
                else:
                    xp = array_module(T._diag[k])
                    C = xp.empty((i1 - i0, int(off[i0 + 1] - off[i0]), int(off[k + 1] - off[k])),
                                 dtype=T.dtype)
                    for b, i in enumerate(range(i0, i1)):
                        C[b] = T._U[i][k] @ T._V[i][k].T
                        T._U[i][k] = T._V[i][k] = None  # the tiles of A are consumed
                F.schur(C, k, i0, i1)
                parts.append((i0, *compress_stack(C, tile_atol(tol, norm2, nt), rng)))
                del C
            F.add(k, parts, T._diag[k])
            bar.advance()
    F.store(nt)
    return norm2
