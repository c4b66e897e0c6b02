"""Left-looking TLR Cholesky on dense tile panels, batched over the tiles of a column (GPU).

The CuPy path of :func:`tricov.tlr.potrf` (mode LL) and of
:func:`tricov.tlr.potrf_from_kernel` / :func:`~tricov.tlr.potrf_from_dense` (mode DL) for real
tiles with a tolerance, and of the compression of :meth:`TLRMatrix.from_kernel`. It is written
for any array module (the CPU tests run it on NumPy), but it is shaped for a GPU, where a
dense ``nb x nb`` tile is cheap to hold and every Python call costs a launch: the work of a
tile column is a few hundred batched GEMMs and small kernels over all its tiles at once, and
the host waits only for the range finder's convergence flags (while the device works on) and
for the ranks.

For tile column ``k`` the tiles ``i >= k`` are handled as stacks ``(tiles, nb, nb)`` (a short
last tile padded with zero rows to a full one, so that a column is one stack, or a few where
it exceeds :data:`PANEL_BYTES`):

1. the panel of ``A`` (DL: generated; LL: the low-rank tiles expanded, ``U_ik V_ik^T``);
2. the Schur update in factored form, ``S_i = A_ik - T_i W^T`` with
   ``W = [U_k0 ... U_k,k-1]`` and ``T_i = [U_ij (V_ij^T V_kj)]_j``: two grouped GEMMs
   (:func:`~tricov.tlr._stacks.bmm_grouped`) over every earlier column ``j`` and every tile
   of the stack, each product on the tile's own rank, not on its column's padded one. Only
   the diagonal tile is updated densely; the off-diagonal ``S_i`` are never formed: the range
   finder multiplies ``A`` and the factors apart, which costs a fraction (its samples over
   ``nb``) of a dense update;
3. ``L_kk = potrf(S_kk)``, on a GPU on a second stream beside step 4, which does not need it;
4. the off-diagonal tiles compressed by :func:`compress_stack`;
5. ``V_ik <- L_kk^-1 V_ik`` for the whole column in one TRSM on the rows of the tiles' ranks.

The factor of column ``j`` is kept as two stacks ``UT[j]`` and ``VT[j]`` of shape
``(tiles, R_j, nb)`` (``U^T`` and ``V^T`` of tiles ``i > j``, zero-padded to the column's
largest rank ``R_j``; the short last tile row is zero-padded to ``nb`` rows), so that the
blocks of step 2 are strided views; at the end the tiles are copied out into ``T``.

Accuracy is that of :mod:`tricov.tlr.cholesky`: each tile of the Schur complement is
compressed once, to ``tau = tol * sqrt(norm2) / ntiles`` with the running squared norm.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import dense
from ._array import array_module, asnumpy, fro2, zero_upper
from ._orthonormal import WIDTH, orthonormalize, project
from ._progress import Progress
from ._stacks import Product, bmm, bmm_grouped
from .build import tile_atol
from .matrix import TLRMatrix

__all__ = ["compress_column", "compress_stack", "left_looking", "usable"]

#: Samples in the first rounds of the range finder (and the granularity of the ranks it finds):
#: two blocks of :data:`~tricov.tlr._orthonormal.WIDTH` rows. Fewer, larger rounds cost more
#: samples but fewer launches and waits: 128 factors n = 100000 (tile 4096, tol 1e-8) in 0.53 s
#: on an H100, 64 in 0.65 s, 32 in 0.69 s.
BLOCK = 2 * WIDTH
#: The range finder's later rounds leave out the tiles that have stopped once their share of
#: the tiles still in the rounds reaches ``1 - GATHER`` (their bases are then gathered).
GATHER = 0.75
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


def compress_stack(C: Any, atol: float, rng: np.random.Generator,
                   update: tuple[Any, Any] | None = None) -> tuple[Any, Any, np.ndarray]:
    """Low-rank factors of every tile ``X_b`` of the stack ``C`` (``(B, p, q)``,
    C-contiguous), less ``update``: ``X_b = C_b - Tb_b W^T`` for ``update = (Tb, W^T)``
    (``(B, >= p, w)`` and ``(w, q)``), else ``X_b = C_b``. ``X_b ~ QT_b^T VT_b`` with
    ``||X_b - QT_b^T VT_b||_F <= atol`` (with high probability); ``C`` is not modified.

    Blocked adaptive randomized range finder (Halko, Martinsson & Tropp, sec. 4.4), one
    Gaussian block per round shared by the tiles (:data:`BLOCK` rows of samples, later half
    the basis size), everything in rows: the samples ``Z_b = Omega X_b^T`` with the basis
    ``QT_b`` projected out estimate each tile's error, ``est_b = ||Z_b||_F / sqrt(s)`` for
    ``s`` rows; a tile whose estimate is ``<= atol / 2`` stops (a flag on the device), the
    others add the block, orthonormalized by :func:`~tricov.tlr._orthonormal.orthonormalize`,
    to their basis, and ``VT = QT X`` of the new rows. ``X`` is only ever multiplied: with
    ``update`` the products take ``C`` and the factors apart, ``O(s (p + q) w)`` per round of
    ``s`` samples instead of a dense update of ``O(p q w)``. The host reads the flags while
    the device orthonormalizes, and waits for nothing else; once at least ``1 - GATHER`` of
    the tiles in the rounds have stopped (:data:`GATHER`), the bases of the others are
    gathered into smaller stacks and later rounds read only their tiles of ``C`` and ``Tb``,
    in place (by address, see :func:`~tricov.tlr._stacks.bmm`). Ranks are the rows kept; a
    tile that reaches ``min(p, q)`` without a converged estimate gets an exact basis.

    Returns
    -------
    QT : (B, R, p) array
        ``U_b^T`` (orthonormal rows), zero beyond the tile's rank; ``R`` the largest rank.
    VT : (B, R, q) array
        ``V_b^T = U_b^T X_b``.
    ranks : (B,) int64 NumPy array
    """
    xp = array_module(C)
    B, p, q = C.shape
    cap = min(p, q)
    omega = _sampler(xp, rng, q, C.dtype)
    idx = np.arange(B)  # the tiles still in the rounds (their members of C and Tb)
    Tb, WT = (update[0][:, :p], update[1]) if update is not None else (None, None)
    basis = _Basis(xp, B, p, q, C.dtype)
    live = xp.ones(B, dtype=C.dtype)  # on the device: 1 while the tile's estimate is large
    active = np.ones(B, dtype=bool)  # on the host: live as last read
    # tiles that left the rounds: (tiles, the basis they were in, their members of it)
    done: list[tuple[np.ndarray, _Basis, np.ndarray]] = []
    r = 0
    while True:
        if active.sum() <= GATHER * idx.size:  # later rounds take only the tiles still in them
            stopped, sel = np.flatnonzero(~active), np.flatnonzero(active)
            done.append((idx[stopped], basis, stopped))
            live, basis = live[xp.asarray(sel)], basis.take(sel)
            idx, active = idx[sel], active[sel]
        m = idx.size
        tiles = None if m == B else idx  # C and Tb are read in place, not gathered
        # samples: BLOCK, then half the basis found (fewer rounds and reads of C for high
        # ranks; directions that carry nothing are dropped); at cap: an estimate only
        s = min(max(BLOCK, r // 2 // BLOCK * BLOCK), cap - r) if r < cap else min(BLOCK, q)
        om = omega(s)
        Z = bmm(om, C, xp.empty((m, s, p), dtype=C.dtype), tb=True, b_members=tiles)
        if WT is not None:  # Z -= (Omega W) Tb^T
            OW = bmm(om, WT, xp.empty((1, s, WT.shape[0]), dtype=C.dtype), tb=True)
            bmm(OW[0], Tb, Z, tb=True, alpha=-1.0, beta=1.0, b_members=tiles)
        project(Z, basis.QT[:, :r])
        _drop_converged(Z, live, s * (0.5 * atol) ** 2)
        if r >= cap:
            break
        flags = _fetch(live)
        basis.reserve(r + s)
        for c0 in range(0, s, WIDTH):
            orthonormalize(Z[:, c0:c0 + WIDTH], basis.QT, r + c0, live, atol * atol / 16,
                           basis.used, projected=r)
        active = flags()
        if not active.any():
            break
        new = basis.QT[:, r:r + s]
        bmm(new, C, basis.VT[:, r:r + s], b_members=tiles)
        if WT is not None:  # VT -= (QT Tb) W^T
            P = bmm(new, Tb, xp.empty((m, s, WT.shape[0]), dtype=C.dtype), b_members=tiles)
            bmm(P, WT, basis.VT[:, r:r + s], alpha=-1.0, beta=1.0)
        r += s
    if r >= cap:  # filled their rank without a converged estimate: exact bases
        for j in np.flatnonzero(asnumpy(live) > 0).tolist():
            X = C[idx[j]] if WT is None else C[idx[j]] - Tb[idx[j]] @ WT
            basis.QT[j, :cap] = xp.eye(p, dtype=C.dtype) if p <= q else xp.linalg.qr(X)[0].T
            basis.VT[j, :cap] = basis.QT[j, :cap] @ X
            basis.used[j, :cap] = 1
    done.append((idx, basis, np.arange(idx.size)))
    return _compact(done, B, p, q, C.dtype)


def _drop_converged(Z: Any, live: Any, thr: float) -> None:
    """``live_b <- 0`` in place where ``||Z_b||_F^2 <= thr`` (or is NaN), for the C-contiguous
    stack ``Z`` (on a GPU one kernel, ``gram.cu``)."""
    xp = array_module(Z)
    if xp is np:
        live *= fro2(Z) > thr
    elif Z.shape[0]:
        from ..kernels import nvrtc

        kernel = nvrtc.function("gram.cu", f"tricov::live_by_norm<{nvrtc.CTYPE[Z.dtype]}>")
        kernel((Z.shape[0],), (1024,), (np.int64(Z[0].size), Z, Z.dtype.type(thr), live))


class _Basis:
    """The rows ``QT`` ``(m, capacity, p)``, ``VT`` ``(m, capacity, q)`` and flags ``used``
    ``(m, capacity)`` (1 for rows kept) of a stack's bases, zero-initialised; the capacity
    grows by doubling (:meth:`reserve`)."""

    def __init__(self, xp: Any, m: int, p: int, q: int, dtype: Any, capacity: int = 4 * BLOCK,
                 parts: tuple[Any, Any, Any] | None = None) -> None:
        self.xp, self.p, self.q, self.dtype = xp, p, q, dtype
        if parts is None:
            parts = (xp.zeros((m, capacity, p), dtype=dtype),
                     xp.zeros((m, capacity, q), dtype=dtype),
                     xp.zeros((m, capacity), dtype=dtype))
        self.QT, self.VT, self.used = parts

    def reserve(self, rows: int) -> None:
        """Room for at least ``rows`` rows."""
        have = self.used.shape[1]
        if rows <= have:
            return
        grown = _Basis(self.xp, self.used.shape[0], self.p, self.q, self.dtype,
                       max(rows, 2 * have))
        for new, old in zip((grown.QT, grown.VT, grown.used), (self.QT, self.VT, self.used),
                            strict=True):
            new[:, :have] = old
        self.QT, self.VT, self.used = grown.QT, grown.VT, grown.used

    def take(self, members: np.ndarray) -> _Basis:
        """The bases of ``members``."""
        sel = self.xp.asarray(members)
        parts = (self.QT[sel], self.VT[sel], self.used[sel])
        return _Basis(self.xp, 0, self.p, self.q, self.dtype, parts=parts)


def _compact(done: list[tuple[np.ndarray, _Basis, np.ndarray]], B: int, p: int, q: int,
             dtype: Any) -> tuple[Any, Any, np.ndarray]:
    """``QT``, ``VT`` ``(B, R, .)`` and the ranks from the bases of the tiles
    ``done[i][0]``, the members ``done[i][2]`` of the bases ``done[i][1]``: each tile's rows
    kept moved to the front, in order. The flags of the rows come to the host in one copy
    (one wait); the moves are one gather and one scatter per stack and basis."""
    xp = done[0][1].xp
    flat = [b.used[xp.asarray(members)].reshape(-1) for _, b, members in done]
    used = asnumpy(xp.concatenate(flat)) > 0 if B else np.zeros(0, dtype=bool)
    ranks = np.zeros(B, dtype=np.int64)
    kept, at = [], 0
    for tiles, b, members in done:
        size = members.size * b.used.shape[1]
        u = used[at:at + size].reshape(members.size, b.used.shape[1])
        at += size
        ranks[tiles] = u.sum(axis=1)
        kept.append(u)
    R = int(ranks.max()) if B else 0
    QT = xp.zeros((B, R, p), dtype=dtype)
    VT = xp.zeros((B, R, q), dtype=dtype)
    for (tiles, b, members), u in zip(done, kept, strict=True):
        member, row = np.nonzero(u)  # the rows kept, tile by tile, in order
        if not member.size:
            continue
        slot = np.arange(member.size) - np.searchsorted(member, member)  # place in its tile
        idx = xp.asarray(np.stack([members[member], row, tiles[member], slot]))
        QT[idx[2], idx[3]] = b.QT[idx[0], idx[1]]
        VT[idx[2], idx[3]] = b.VT[idx[0], idx[1]]
    return QT, VT, ranks


def _fetch(flags: Any) -> Any:
    """Start copying the device vector ``flags`` to the host; returns a function that waits
    for the copy (not for later work) and gives ``flags > 0`` as a NumPy array."""
    if array_module(flags) is np:
        return lambda: flags > 0
    import cupy
    import cupyx

    host = cupyx.empty_pinned(flags.shape, dtype=flags.dtype)
    flags.get(out=host, blocking=False)
    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record()

    def wait() -> np.ndarray:
        event.synchronize()
        return host > 0

    return wait


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


def _sampler(xp: Any, rng: np.random.Generator, cols: int, dtype: Any) -> Any:
    """``omega(s)``: independent standard normal ``s x cols`` blocks where ``xp`` computes
    (on a GPU from one seed that ``rng`` draws, by :func:`_normal_kernel`)."""
    if xp is np:
        return lambda s: rng.standard_normal((s, cols)).astype(dtype, copy=False)
    seed = int(rng.integers(2**62))
    drawn = [0]

    def omega(s: int) -> Any:
        out = xp.empty((s, cols), dtype=dtype)
        _normal_kernel()(np.uint64(seed + 2 * drawn[0]), out)
        drawn[0] += cols * s
        return out

    return omega


class _Columns:
    """The factor's tile columns as padded stacks (see the module notes)."""

    def __init__(self, T: TLRMatrix) -> None:
        self.T = T
        self.nb = T.tile_size
        self.UT: list[Any] = []
        self.VT: list[Any] = []
        self.ranks: list[np.ndarray] = []
        self._wt: tuple[int, Any] | None = None
        self._solved: Any = None  # the event ending the last column's TRSM (GPU)

    def settle(self) -> None:
        """Make the current stream wait for the last column's TRSM (a GPU runs it on the side
        stream): before anything reads the factors."""
        if self._solved is not None:
            import cupy

            cupy.cuda.get_current_stream().wait_event(self._solved)
            self._solved = None

    def correction(self, k: int, i0: int, i1: int, xp: Any) -> tuple[Any, Any] | None:
        """The Schur update of tiles ``i0 <= i < i1`` of column ``k`` (``i0 >= k``) as
        factors: ``sum_j L_ij L_kj^T = Tb_i W^T`` with ``Tb`` ``(i1 - i0, nb, width)`` and
        ``W^T`` ``(width, nb)``; None where no earlier column reaches row ``k``. The products
        of all earlier columns are two grouped GEMMs."""
        self.settle()
        used = [j for j in range(k) if self.ranks[j][k - j - 1]]
        if not used:
            return None
        c, dtype = i1 - i0, self.T.dtype
        rs = [int(self.ranks[j][k - j - 1]) for j in used]
        Rs = [self.UT[j].shape[1] for j in used]
        width = sum(rs)
        Tb = xp.zeros((c, self.nb, width), dtype=dtype)  # tiles of rank 0 are skipped
        Zall = xp.empty(c * sum(R * r for R, r in zip(Rs, rs, strict=True)), dtype=dtype)
        first, second = [], []
        col = at = 0
        for j, r, R in zip(used, rs, Rs, strict=True):
            s0, s1 = i0 - j - 1, i1 - j - 1
            Z = Zall[at:at + c * R * r].reshape(c, R, r)
            rank = self.ranks[j][s0:s1]  # each tile's own rank, not the column's padded R
            first.append(Product(self.VT[j][s0:s1], self.VT[j][k - j - 1, :r], Z, tb=True,
                                 rows=rank))
            second.append(Product(self.UT[j][s0:s1], Z, Tb[:, :, col:col + r], ta=True,
                                  inner=rank))
            col, at = col + r, at + c * R * r
        bmm_grouped(first)
        bmm_grouped(second)
        return Tb, self._w(k, used, rs, xp)

    def _w(self, k: int, used: list[int], rs: list[int], xp: Any) -> Any:
        """``W^T`` of column ``k``: the rows ``U_kj^T`` of the earlier columns, stacked (made
        once per column)."""
        if self._wt is None or self._wt[0] != k:
            self._wt = (k, xp.concatenate([self.UT[j][k - j - 1, :r]
                                           for j, r in zip(used, rs, strict=True)]))
        return self._wt[1]

    def add(self, k: int, parts: list[tuple[int, Any, Any, np.ndarray]], L: Any) -> None:
        """Record column ``k`` from the compressed chunks ``(first tile, QT, VT, ranks)``,
        then ``V <- L_kk^-1 V`` (one TRSM on the stacked ``V^T``; on a GPU on the side stream,
        beside the generation of the next panel, see :meth:`settle`)."""
        xp = array_module(L)
        m = self.T.ntiles - k - 1
        ranks = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64)
        R = int(ranks.max()) if m else 0
        if len(parts) == 1 and parts[0][1].shape == parts[0][2].shape == (m, R, self.nb):
            UT, VT = parts[0][1:3]  # one chunk (the usual case): its stacks are the column's
        else:
            UT = xp.zeros((m, R, self.nb), dtype=L.dtype)
            VT = xp.zeros((m, R, self.nb), dtype=L.dtype)
            for i0, qt, vt, _ in parts:
                a, c = i0 - k - 1, qt.shape[0]
                UT[a:a + c, :qt.shape[1], :qt.shape[2]] = qt
                VT[a:a + c, :vt.shape[1], :vt.shape[2]] = vt
        if R:  # on each tile's rows only: a column's ranks vary by far more than 2x
            self._solved = _solve_column(L, VT.reshape(m * R, self.nb),
                                         np.flatnonzero(np.arange(R) < ranks[:, None]))
        self.UT.append(UT)
        self.VT.append(VT)
        self.ranks.append(ranks)

    def store(self, columns: int) -> None:
        """Copy the tiles of the first ``columns`` columns into ``T`` (contiguous, trimmed),
        releasing the stacks."""
        self.settle()
        T, off = self.T, self.T.offsets
        for j in range(columns):
            xp = array_module(self.UT[j])
            for i in range(j + 1, T.ntiles):
                r, mi = int(self.ranks[j][i - j - 1]), int(off[i + 1] - off[i])
                T._U[i][j] = xp.ascontiguousarray(self.UT[j][i - j - 1, :r, :mi].T)
                T._V[i][j] = xp.ascontiguousarray(self.VT[j][i - j - 1, :r].T)
            self.UT[j] = self.VT[j] = None


def _solve_column(L: Any, flat: Any, rows: np.ndarray) -> Any:
    """``flat[rows] <- flat[rows] L^-T`` (the rows of a column's ``V^T`` within the ranks);
    on a GPU on the side stream after the work queued so far, returning the event of its end
    (on the host at once: None)."""
    xp = array_module(flat)
    if xp is np:
        flat[rows] = _solve_rows(L, flat[rows])
        return None
    import cupy

    ready = cupy.cuda.get_current_stream().record()
    side = _side_stream(cupy.cuda.runtime.getDevice())
    with side:
        side.wait_event(ready)
        if rows.size == flat.shape[0]:
            _solve_rows(L, flat)
        else:
            idx = xp.asarray(rows)
            flat[idx] = _solve_rows(L, flat[idx])
        return side.record()


def _solve_rows(L: Any, X: Any) -> Any:
    """``X <- X L^-T`` (returned) for the lower triangular ``L`` and the C-contiguous rows
    ``X``: on a GPU one cuBLAS TRSM (its launches are made in C: the recursion of
    :func:`tricov.dense.trsm` would launch about a hundred kernels from Python for a 4096
    tile)."""
    if array_module(X) is np:
        dense.trsm(L, X, side="R", uplo="L", trans="T")
        return X
    from ..backends.cuda import CUDAExecutor

    # row-major X (rows x n) and L are column-major X^T and L^T: X^T <- (L^T)^-T X^T
    L = array_module(L).ascontiguousarray(L)
    n, isz = L.shape[0], L.itemsize
    CUDAExecutor(X.dtype).raw_trsm(b"L", b"U", b"T", b"N", n, X.shape[0], 1.0, L.data.ptr,
                                   L.strides[0] // isz, X.data.ptr, X.strides[0] // isz)
    return X


def _chunks(T: TLRMatrix, k: int) -> list[tuple[int, int]]:
    """Tiles ``k < i < nt`` of column ``k`` in runs of at most :data:`PANEL_BYTES` (a short
    last tile is padded to a full one: see :func:`_panel`)."""
    nt, nb = T.ntiles, T.tile_size
    per = max(1, PANEL_BYTES // (nb * nb * T.dtype.itemsize))
    return [(i, min(i + per, nt)) for i in range(k + 1, nt, per)]


def _panel(T: TLRMatrix, src: Any, k: int, i0: int, i1: int) -> tuple[Any, float]:
    """The stack ``(i1 - i0, nb, cols)`` of tiles ``i0 <= i < i1`` of column ``k`` of ``A``
    (a short last tile padded with zero rows, so that a column is one stack), and what they
    add to the running ``||A||_F^2`` (in mode DL; 0 in mode LL, where ``src`` is None and the
    low-rank tiles of ``T`` are expanded and released)."""
    off, nb = T.offsets, T.tile_size
    cols = int(off[k + 1] - off[k])
    if src is not None:
        C = src.panel(k, i0, i1, check=False, rows=(i1 - i0) * nb).reshape(i1 - i0, nb, cols)
        norm2 = fro2(C, None)
        src.check_norm(C, norm2)
        return C, 2.0 * norm2  # the upper triangle too
    xp = array_module(T._diag[k])
    short = int(off[i1] - off[i1 - 1]) < nb
    C = (xp.zeros if short else xp.empty)((i1 - i0, nb, cols), dtype=T.dtype)
    for b, i in enumerate(range(i0, i1)):
        C[b, :int(off[i + 1] - off[i])] = T._U[i][k] @ T._V[i][k].T
        T._U[i][k] = T._V[i][k] = None  # the tiles of A are consumed
    return C, 0.0


def compress_column(T: TLRMatrix, src: Any, k: int, norm2: float,
                    rng: np.random.Generator) -> float:
    """Generate and compress the off-diagonal tiles of column ``k`` of ``T`` (not factored;
    :func:`tricov.tlr.build.build`), each run of tiles to the accuracy of the running squared
    norm ``norm2``; returns it."""
    xp = array_module(T._diag[k])
    off = T.offsets
    for i0, i1 in _chunks(T, k):
        C, add = _panel(T, src, k, i0, i1)
        norm2 += add
        QT, VT, ranks = compress_stack(C, tile_atol(T.tol, norm2, T.ntiles), rng)
        for b, r in enumerate(ranks.tolist()):
            rows = int(off[i0 + b + 1] - off[i0 + b])
            T._U[i0 + b][k] = xp.ascontiguousarray(QT[b, :r, :rows].T)
            T._V[i0 + b][k] = xp.ascontiguousarray(VT[b, :r].T)
    return norm2


def _start_diag(T: TLRMatrix, k: int) -> Any:
    """Start ``L_kk = potrf(A_kk)``; :func:`_finish_diag` completes it.

    On a GPU the factorization (cuSOLVER) runs on a second stream after the work queued so
    far, beside the compression of the column, which does not need it, and it is launched by
    a worker thread: cuSOLVER's call returns only once the factorization is done, which would
    hold up the launches of the compression. Its status is read when the column's TRSM needs
    the factor. On the host it is done at once (and raises at once).
    """
    from .cholesky import _factor_diag

    d = T._diag[k]
    if array_module(d) is np:
        _factor_diag(T, k)
        return None
    import cupy

    device = cupy.cuda.Device().id
    side = _side_stream(device)
    ready = cupy.cuda.get_current_stream().record()
    return _worker().submit(_potrf_on, d, device, side, ready), side


def _potrf_on(d: Any, device: int, side: Any, ready: Any) -> tuple[Any, Any]:
    """(Worker thread.) ``potrf`` of the CuPy tile ``d`` (lower, in place, upper part zeroed)
    on ``side`` after the event ``ready``; returns the device statuses (cuSOLVER's info, the
    order of the first NaN pivot, which cuSOLVER does not test, or 0) and the event of its
    end."""
    import cupy

    from ..backends.cuda import CUDAExecutor

    n, ld = d.shape[0], d.strides[0] // d.itemsize
    with cupy.cuda.Device(device), side:
        side.wait_event(ready)
        # Row-major lower triangle = column-major upper triangle; the executor's handles are
        # this thread's, bound to ``side``.
        ex = CUDAExecutor(d.dtype)
        status = ex.status_words(ex.raw_potrf(b"U", n, d.data.ptr, ld),
                                 ex.nan_pivot(n, d.data.ptr, ld))
        zero_upper(d)
        return status, side.record()


def _finish_diag(T: TLRMatrix, k: int, started: Any) -> None:
    """Make the current stream wait for :func:`_start_diag`'s factorization; raise if it
    failed (as :func:`tricov.tlr.cholesky._factor_diag`)."""
    if started is None:
        return
    import cupy

    from .cholesky import _diag_failure

    future, side = started
    status, done = future.result()
    cupy.cuda.get_current_stream().wait_event(done)
    info, nan = (int(v) for v in status.get(stream=side))
    if info or nan:
        raise _diag_failure(T, k, info or nan)


@functools.cache
def _worker() -> Any:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="tricov-potrf")


@functools.cache
def _side_stream(device: int) -> Any:
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


def left_looking(T: TLRMatrix, src: Any, tol: float, norm2: float, rng: np.random.Generator,
                 progress: bool) -> float:
    """Factor ``T`` in place (mode LL: ``src`` None, the tiles of ``T`` are ``A``; mode DL:
    tiles generated from ``src``, diagonal tiles already in ``T``, ``norm2`` the running
    ``||A||_F^2``). Returns ``norm2``."""
    from .._errors import NotPositiveDefiniteError

    nt = T.ntiles
    F = _Columns(T)
    xp = array_module(T._diag[0])
    with Progress(nt, "TLR Cholesky (left-looking, panels)", progress) as bar:
        for k in range(nt):
            chunks = _chunks(T, k)
            # the first panel, beside the last column's TRSM (GPU: on the side stream)
            panel = _panel(T, src, k, *chunks[0]) if chunks else None
            # the diagonal tile's update comes with that of the first chunk
            update = F.correction(k, k, chunks[0][1] if chunks else k + 1, xp)
            if update is not None:
                d = T._diag[k]
                bmm(update[0][:1, :d.shape[0]], update[1][:, :d.shape[1]], d[None],
                    alpha=-1.0, beta=1.0)
                update = (update[0][1:], update[1])
            try:
                started = _start_diag(T, k)
            except NotPositiveDefiniteError:
                F.store(k)
                raise
            parts = []
            for c, (i0, i1) in enumerate(chunks):
                C, add = panel if c == 0 else _panel(T, src, k, i0, i1)
                panel = None
                norm2 += add
                if c and update is not None:
                    update = F.correction(k, i0, i1, xp)
                parts.append((i0, *compress_stack(C, tile_atol(tol, norm2, nt), rng, update)))
                del C
            try:
                _finish_diag(T, k, started)
            except NotPositiveDefiniteError:
                F.store(k)
                raise
            F.add(k, parts, T._diag[k])
            bar.advance()
    F.store(nt)
    return norm2
