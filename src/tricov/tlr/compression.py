"""Compression of dense tiles into low-rank form: truncated SVD, adaptive randomized SVD, ACA.

Every method returns, per tile, factors ``U`` (orthonormal columns) and ``V`` with
``||A - U V^H||_F <= atol`` (fixed accuracy) or of rank ``rank`` (fixed rank), or both
(accuracy with a rank cap). ``svd`` and ``rsvd`` work on stacks of equal-shape tiles at once;
``aca`` reads single rows and columns through two callables and so never needs the tile.

``svd``
    Truncated SVD: exact (the best approximation of the given rank).
``rsvd``
    Randomized range finder with an a-posteriori error estimate (Halko, Martinsson & Tropp,
    sec. 4.3-4.4), blocked. Each round applies the tile to a Gaussian block of ``p`` columns
    plus 16 more: the ``p`` columns, with the directions already found removed, extend the
    basis Q; the 16 others, projected out of the extended Q, estimate the error, since
    ``E ||(I - QQ^H) A w||^2 = ||(I - QQ^H) A||_F^2`` for a Gaussian vector ``w``:
    ``est = ||Y||_F / 4``. A tile stops when ``est <= atol / 2`` (the 16 columns are still
    added to Q, which only lowers the error). With 16 samples the chance that ``est``
    underestimates the error by the factor 2 that this margin absorbs is below 1e-3 per round
    even when the error is a single direction (``P(chi2_16 < 4)``), and the added block makes
    the true error far smaller in practice. A final SVD of ``Q^H A`` truncates to the budget
    ``sqrt(atol^2 - est^2)``: the two errors are orthogonal, so the total stays within
    ``atol``. The first block has ``hint + 10`` columns when a rank hint is given (a
    neighbouring tile's rank), 32 otherwise; later blocks half the current basis size.
    Tiles are reached only through products with blocks of vectors (:class:`TileOperator`),
    so a Schur-complement tile ``A_ik - X W^H`` never has to be formed.
``aca``
    Adaptive cross approximation with partial pivoting, and a safe stop: a step counts as
    small when its rank-1 term has norm ``<= atol / 4``; after two small steps in a row the
    residual is measured on up to 8 random unused rows (an unbiased estimate of its squared
    Frobenius norm) and the iteration stops only if that estimate is ``<= atol / 2``, otherwise
    it continues from the worst sampled row. The result is recompressed (QR + SVD) to
    ``atol - 2 est``: the cross residual and the truncation are not orthogonal, so their norms
    add, and the residual is taken as twice its estimate, the margin the stop allows for (the
    compiled ACA of :mod:`tricov.kernels.numba.tiles` also samples 8 unused columns and keeps
    the larger estimate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._array import SUPPORTED, array_module, asnumpy, fro2, herm, real_dtype, thin_svd
from .lowrank import LowRank, recompress, truncation_ranks

__all__ = ["METHODS", "DenseStack", "TileOperator", "aca", "compress", "compress_op",
           "compress_tiles"]

#: Compression methods.
METHODS = ("rsvd", "aca", "svd")

Factors = tuple[Any, Any]
Oracle = Callable[[Any], Any]

_FIRST_BLOCK = 32
_BLOCK = 16
_OVERSAMPLE = 10


def _gaussian(rng: np.random.Generator, n: int, p: int, dtype: np.dtype, xp: Any) -> Any:
    """An ``(n, p)`` standard Gaussian block of ``dtype`` (real parts only), drawn where
    ``xp`` computes (on a GPU from a seed that ``rng`` draws, without a host transfer)."""
    real = real_dtype(dtype)
    if xp is np:
        omega = rng.standard_normal((n, p)).astype(real, copy=False)
    else:
        omega = xp.random.RandomState(int(rng.integers(2**63))).standard_normal((n, p),
                                                                                 dtype=real)
    return xp.asarray(omega).astype(dtype, copy=False)


class DenseStack:
    """A stack of dense tiles as a tile operator (see :class:`TileOperator`).

    Parameters
    ----------
    A : (B, m, n) array
    """

    def __init__(self, A: Any) -> None:
        self.A = A
        self.count = int(A.shape[0])
        self.shape = (int(A.shape[1]), int(A.shape[2]))
        self.dtype = np.dtype(A.dtype)
        self.xp = array_module(A)

    def apply(self, idx: np.ndarray, X: Any) -> Any:
        A = self.A
        if X.ndim == 2 and idx.size == self.count:
            b, m, n = A.shape
            if A.flags.c_contiguous:  # one GEMM for the whole stack
                return (A.reshape(b * m, n) @ X).reshape(b, m, X.shape[1])
            return A @ X
        xs = [X] * idx.size if X.ndim == 2 else list(X)
        return self.xp.stack([A[b] @ x for b, x in zip(idx.tolist(), xs, strict=True)])

    def adjoint(self, idx: np.ndarray, Q: Any) -> Any:
        if idx.size == self.count:
            return herm(self.A) @ Q
        return self.xp.stack([herm(self.A[b]) @ q for b, q in zip(idx.tolist(), Q, strict=True)])

    def rows(self, b: int, idx: Any) -> Any:
        return self.A[b][idx, :]

    def cols(self, b: int, idx: Any) -> Any:
        return self.A[b][:, idx]

    def dense(self, b: int) -> Any:
        return self.A[b]


class TileOperator:
    """What the compressors need from a stack of ``count`` tiles ``S_b`` of one shape.

    Tiles need not exist as arrays: a Schur-complement tile ``A_ik - X W^H`` is applied
    through its factors. Attributes ``count``, ``shape`` ``(m, n)``, ``dtype``, ``xp``.

    - ``apply(idx, X)``: ``S_b X`` for ``b`` in ``idx`` (X (n, p) shared, or (len(idx), n, p));
    - ``adjoint(idx, Q)``: ``S_b^H Q_b``, Q of shape (len(idx), m, w);
    - ``rows(b, i)`` / ``cols(b, j)``: rows ``S_b[i, :]`` / columns ``S_b[:, j]``;
    - ``dense(b)``: the tile as an array.
    """


def _project(Y: Any, Q: Any) -> Any:
    """Remove the span of Q from Y, twice (orthogonal to Q to working precision)."""
    if Q.shape[-1]:
        for _ in range(2):
            Y = Y - Q @ (herm(Q) @ Y)
    return Y


def _orth(Y: Any, Q: Any) -> Any:
    """An orthonormal basis of the projected block ``Y`` (``_project``), orthogonal to Q.

    The QR factor of a projected block that is mostly rounding noise (sampled past the
    numerical rank) can lean towards Q by ``eps cond(Y)``; projecting the factor once more and
    factoring again restores orthogonality (the span Q + Y is what matters, not Y itself).
    """
    xp = array_module(Y)
    Qn, _ = xp.linalg.qr(Y)
    if Q.shape[-1]:
        Qn, _ = xp.linalg.qr(Qn - Q @ (herm(Q) @ Qn))
    return Qn


def _finish(op: Any, idx: np.ndarray, Q: Any, budget: Any, rank: int | None) -> list[Factors]:
    """Truncated SVD of ``Q Q^H S_b`` for the members ``idx``, to ``budget`` and ``rank``."""
    xp = op.xp
    w = Q.shape[-1]
    if w:
        # Blocks are orthonormal to each other (_orth) unless a block was exactly zero
        # (Householder QR then returns unit vectors that may repeat); re-orthonormalize those.
        dev = herm(Q) @ Q - xp.eye(w, dtype=Q.dtype)
        bad = np.flatnonzero(asnumpy(xp.abs(dev).max(axis=(1, 2))) > 10 * np.finfo(
            real_dtype(Q.dtype)).eps * w)
        if bad.size:
            sel = xp.asarray(bad)
            Q[sel] = xp.linalg.qr(Q[sel])[0]
    BH = op.adjoint(idx, Q)  # (S^H Q) = B^H, B = Q^H S
    x, s, yh = thin_svd(BH)  # B = yh^H s x^H
    ranks = truncation_ranks(s, budget, rank)
    out = []
    for b, r in enumerate(ranks.tolist()):
        out.append((xp.ascontiguousarray(Q[b] @ herm(yh[b, :r, :])),
                    xp.ascontiguousarray(x[b, :, :r] * s[b, :r].astype(Q.dtype))))
    return out


def _rsvd_fixed_rank(op: Any, rank: int, rng: np.random.Generator) -> list[Factors]:
    xp = op.xp
    m, n = op.shape
    idx = np.arange(op.count)
    p = min(m, n, rank + _OVERSAMPLE)
    Q, _ = xp.linalg.qr(op.apply(idx, _gaussian(rng, n, p, op.dtype, xp)))
    # One power iteration: the range of (S S^H) S Omega fits the leading directions better.
    Z, _ = xp.linalg.qr(op.adjoint(idx, Q))
    Q, _ = xp.linalg.qr(op.apply(idx, Z))
    return _finish(op, idx, Q, None, rank)


def _rsvd(op: Any, atol: Any, rank: int | None, rng: np.random.Generator,
          hint: int | None) -> list[Factors]:
    """Adaptive randomized SVD of a tile stack (see the module notes)."""
    xp = op.xp
    m, n = op.shape
    if atol is None:
        return _rsvd_fixed_rank(op, int(rank), rng)
    full = min(m, n)
    cap = full if rank is None else min(full, int(rank) + _OVERSAMPLE)
    atol = np.asarray(atol, dtype=np.float64)
    out: list[Factors | None] = [None] * op.count
    act = np.arange(op.count)
    Q = xp.zeros((op.count, m, 0), dtype=op.dtype)
    p = _FIRST_BLOCK if hint is None else max(_BLOCK, int(hint) + _OVERSAMPLE)
    while act.size:
        w = Q.shape[2]
        room = cap - w
        main, extra = (room, 0) if p + _BLOCK >= room else (p, _BLOCK)
        Y = op.apply(act, _gaussian(rng, n, main + extra, op.dtype, xp))
        Q = xp.concatenate([Q, _orth(_project(Y[..., :main], Q), Q)], axis=2)
        if extra:
            # A fresh Gaussian block, projected: E ||(I - QQ^H) S w||^2 = ||(I - QQ^H) S||_F^2.
            Yb = _project(Y[..., main:], Q)
            est = np.sqrt(asnumpy(fro2(Yb)).astype(np.float64) / extra)
            Q = xp.concatenate([Q, _orth(Yb, Q)], axis=2)
            done = est <= 0.5 * atol[act]
        else:  # Q reached the cap: it spans the range (cap = full), or the rank cap decides
            est = np.zeros(act.size)
            done = np.ones(act.size, dtype=bool)
        if done.any():
            sel = np.flatnonzero(done)
            budget = np.sqrt(np.maximum(atol[act[sel]] ** 2 - est[sel] ** 2, 0.0))
            sub = _Subset(op, act[sel])
            for b, f in zip(act[sel].tolist(), _finish(sub, np.arange(sel.size),
                                                       Q[xp.asarray(sel)], budget, rank),
                            strict=True):
                out[b] = f
            keep = np.flatnonzero(~done)
            act, Q = act[keep], Q[xp.asarray(keep)]
        p = max(_BLOCK, Q.shape[2] // 2)
    return out  # type: ignore[return-value]


class _Subset:
    """The members ``sel`` of a tile operator, renumbered from 0."""

    def __init__(self, op: Any, sel: np.ndarray) -> None:
        self.op, self.sel = op, sel
        self.count, self.shape, self.dtype, self.xp = sel.size, op.shape, op.dtype, op.xp

    def apply(self, idx: np.ndarray, X: Any) -> Any:
        return self.op.apply(self.sel[idx], X)

    def adjoint(self, idx: np.ndarray, Q: Any) -> Any:
        return self.op.adjoint(self.sel[idx], Q)


def aca(rows: Oracle, cols: Oracle, shape: tuple[int, int], atol: float | None, *,
        rank: int | None = None, dtype: Any = np.float64, rng: np.random.Generator,
        xp: Any = np) -> Factors:
    """Adaptive cross approximation of one ``m x n`` matrix read by rows and columns.

    Parameters
    ----------
    rows : callable
        ``rows(i)`` with an integer array ``i`` returns the rows ``A[i, :]``, shape ``(len(i), n)``.
    cols : callable
        ``cols(j)`` returns the columns ``A[:, j]``, shape ``(m, len(j))``.
    shape : (m, n)
    atol : float or None
        Absolute Frobenius accuracy; None for fixed rank.
    rank : int or None
        Fixed rank (``atol`` None) or rank cap; the cross runs up to 10 steps beyond it and is
        truncated to it.
    dtype, rng, xp
        Data type of the factors, random generator for the pivots and checks, array module.

    Returns
    -------
    U, V : arrays
        ``U`` (m, r) with orthonormal columns and ``V`` (n, r); see the module notes for the
        stopping rule.
    """
    m, n = shape
    full = min(m, n)
    target = 0.0 if atol is None else float(atol)
    cap = full if rank is None else min(full, int(rank) + _OVERSAMPLE)
    width = max(1, min(cap, 16))
    U = xp.zeros((m, width), dtype=dtype)
    V = xp.zeros((n, width), dtype=dtype)
    k, small, est = 0, 0, 0.0
    used = np.zeros(m, dtype=bool)
    i = int(rng.integers(m)) if m else 0
    pending = None

    def residual_rows(idx: np.ndarray) -> Any:
        return rows(idx) - U[idx, :k] @ herm(V[:, :k])

    def check() -> tuple[bool, int, Any]:
        """Estimate the residual on random unused rows; say whether to stop."""
        free = np.flatnonzero(~used)
        if free.size == 0:
            return True, -1, None
        pick = rng.choice(free, size=min(8, free.size), replace=False)
        res = residual_rows(pick)
        norms = asnumpy(fro2(res, axis=(-1,))).astype(np.float64)
        nonlocal est
        est = float(np.sqrt(norms.sum() * free.size / pick.size))
        if est <= 0.5 * target:
            return True, -1, None
        w = int(np.argmax(norms))
        return False, int(pick[w]), res[w]

    while k < cap and m and n:
        if pending is None:
            r = residual_rows(np.array([i]))[0]
        else:
            r, pending = pending, None
        used[i] = True
        j = int(np.argmax(np.abs(asnumpy(r))))
        d = r[j]
        if d == 0:  # this residual row is exactly zero: nothing to add from it
            small += 1
        else:
            if k == U.shape[1]:
                grow = min(cap, 2 * k) - k
                U = xp.concatenate([U, xp.zeros((m, grow), dtype=dtype)], axis=1)
                V = xp.concatenate([V, xp.zeros((n, grow), dtype=dtype)], axis=1)
            c = cols(np.array([j]))[:, 0] - U[:, :k] @ V[j, :k].conj()
            U[:, k] = c
            V[:, k] = (r / d).conj()
            k += 1
            term = float(np.sqrt(float(fro2(c, axis=(-1,))) * float(fro2(V[:, k - 1], axis=(-1,)))))
            small = small + 1 if term <= 0.25 * target else 0
        if small >= 2 or used.all():
            stop, i, pending = check()
            if stop:
                break
            small = 0
            continue
        if d == 0:
            free = np.flatnonzero(~used)
            i = int(rng.choice(free))
        else:
            cand = np.abs(asnumpy(U[:, k - 1]))
            cand[used] = -1.0
            i = int(np.argmax(cand))
    if k == full:
        est = 0.0  # every row or every column is a pivot: the cross interpolation is exact
    budget = None if atol is None else np.array([max(target - 2.0 * est, 0.0)])
    Uc, Vc, ranks = recompress(U[None, :, :k], V[None, :, :k], budget, rank)
    r = int(ranks[0])
    return xp.ascontiguousarray(Uc[0, :, :r]), xp.ascontiguousarray(Vc[0, :, :r])


def _svd(op: Any, atol: Any, rank: int | None) -> list[Factors]:
    xp = op.xp
    A = op.A if isinstance(op, DenseStack) else xp.stack([op.dense(b) for b in range(op.count)])
    x, s, yh = xp.linalg.svd(A, full_matrices=False)
    ranks = truncation_ranks(s, atol, rank)
    out = []
    for b, r in enumerate(ranks.tolist()):
        out.append((xp.ascontiguousarray(x[b, :, :r]),
                    xp.ascontiguousarray(herm(yh[b, :r, :]) * s[b, :r].astype(op.dtype))))
    return out


def compress_op(op: Any, atol: Any, rank: int | None, method: str, rng: np.random.Generator,
                hint: int | None = None) -> list[Factors]:
    """Compress every tile of a tile operator; one ``(U, V)`` per tile, each of its own rank.

    Parameters
    ----------
    op : DenseStack or another :class:`TileOperator`
    atol : (count,) array or None
        Absolute Frobenius accuracy per tile (None: fixed rank).
    rank : int or None
        Fixed rank, or the rank cap with ``atol``.
    method : {'rsvd', 'aca', 'svd'}
    rng : numpy.random.Generator
    hint : int, optional
        Expected rank (e.g. of a neighbouring tile): ``rsvd`` starts with that many samples.
    """
    if op.count == 0:
        return []
    if method == "svd":
        return _svd(op, atol, rank)
    if method == "rsvd":
        return _rsvd(op, atol, rank, rng, hint)
    return [aca(lambda i, b=b: op.rows(b, i), lambda j, b=b: op.cols(b, j), op.shape,
                None if atol is None else float(atol[b]), rank=rank, dtype=op.dtype, rng=rng,
                xp=op.xp) for b in range(op.count)]


def compress_tiles(A: Any, atol: Any, rank: int | None, method: str,
                   rng: np.random.Generator, hint: int | None = None) -> list[Factors]:
    """:func:`compress_op` on a dense (B, m, n) stack."""
    return compress_op(DenseStack(A), atol, rank, method, rng, hint)


def check_accuracy(tol: float | None, rank: int | None, dtype: Any, *, name: str = "tol") -> None:
    """Validate a (tol, rank) pair: at least one, tol in [eps, 1), rank >= 0."""
    if tol is None and rank is None:
        raise ValueError(f"give {name}= (fixed accuracy) or rank= (fixed rank), or both")
    if tol is not None:
        eps = float(np.finfo(np.dtype(dtype)).eps)
        if not (isinstance(tol, (int, float, np.floating)) and not isinstance(tol, bool)):
            raise TypeError(f"{name} must be a float, got {type(tol).__name__}")
        if not np.isfinite(tol) or tol >= 1 or tol < 0:
            raise ValueError(f"{name} must be in [0, 1), got {tol!r}")
        if tol < eps:
            raise ValueError(f"{name}={tol!r} is below the precision of {np.dtype(dtype)} "
                             f"(eps={eps:.2e}); use a larger {name} or a wider dtype")
    if rank is not None:
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
            raise TypeError(f"rank must be an int, got {type(rank).__name__}")
        if rank < 0:
            raise ValueError(f"rank must be >= 0, got {rank}")


def check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def compress(A: Any, *, tol: float | None = None, atol: float | None = None,
             rank: int | None = None, method: str = "rsvd", seed: Any = None) -> LowRank:
    """Compress a dense matrix (or a stack of them) into low-rank form.

    Parameters
    ----------
    A : (m, n) or (B, m, n) array
        float32, float64, complex64 or complex128.
    tol : float, optional
        Relative accuracy: ``||A - U V^H||_F <= tol * ||A||_F`` (per member).
    atol : float, optional
        Absolute accuracy ``||A - U V^H||_F <= atol`` (instead of ``tol``).
    rank : int, optional
        Fixed rank without ``tol``/``atol``; the rank cap with them.
    method : {'rsvd', 'aca', 'svd'}
        See the module notes.
    seed : int or numpy.random.Generator, optional
        Randomness of ``rsvd`` and ``aca``.

    Returns
    -------
    LowRank
        ``U`` has orthonormal columns. For a stack, the members share the largest rank;
        members of lower rank have zero columns beyond their own.

    Examples
    --------
    >>> import numpy as np
    >>> from tricov.tlr import compress
    >>> x = np.linspace(0, 1, 50)
    >>> A = np.exp(-np.abs(x[:, None] - x[None, :] - 3))
    >>> c = compress(A, tol=1e-10)
    >>> c.rank, bool(np.linalg.norm(A - c.to_dense()) <= 1e-10 * np.linalg.norm(A))
    (1, True)
    """
    xp = array_module(A)
    if getattr(A, "ndim", 0) not in (2, 3):
        raise ValueError(f"A must be 2-D or a 3-D stack, got shape {getattr(A, 'shape', None)}")
    if np.dtype(A.dtype) not in SUPPORTED:
        raise TypeError(f"A has dtype {A.dtype}; supported: float32, float64, complex64, "
                        "complex128")
    if tol is not None and atol is not None:
        raise ValueError("give tol= (relative) or atol= (absolute), not both")
    if atol is None:
        check_accuracy(tol, rank, A.dtype)
    else:
        if isinstance(atol, bool) or not isinstance(atol, (int, float, np.floating)) \
                or not np.isfinite(atol) or atol < 0:
            raise ValueError(f"atol must be a finite number >= 0, got {atol!r}")
        if rank is not None:
            check_accuracy(None, rank, A.dtype)
    check_method(method)
    stack = A[None] if A.ndim == 2 else A
    if not bool(xp.isfinite(stack).all()):
        raise ValueError("A holds NaN or infinity")
    if tol is not None:
        bound = np.sqrt(np.asarray(fro2(stack), dtype=np.float64)) * tol
    elif atol is not None:
        bound = np.full(stack.shape[0], float(atol))
    else:
        bound = None
    rng = np.random.default_rng(seed)
    factors = compress_tiles(xp.ascontiguousarray(stack), bound, rank, method, rng)
    r = max((f[0].shape[1] for f in factors), default=0)
    U = xp.zeros((*stack.shape[:2], r), dtype=A.dtype)
    V = xp.zeros((stack.shape[0], stack.shape[2], r), dtype=A.dtype)
    for b, (u, v) in enumerate(factors):
        U[b, :, :u.shape[1]] = u
        V[b, :, :v.shape[1]] = v
    return LowRank(U[0], V[0]) if A.ndim == 2 else LowRank(U, V)
