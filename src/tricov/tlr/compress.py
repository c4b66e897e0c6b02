"""Compression of dense tiles into low-rank form: truncated SVD, adaptive randomized SVD, ACA.

Every method returns, per tile, factors ``U`` (orthonormal columns) and ``V`` with
``||A - U V^H||_F <= atol`` (fixed accuracy) or of rank ``rank`` (fixed rank), or both
(accuracy with a rank cap). ``svd`` and ``rsvd`` work on stacks of equal-shape tiles at once;
``aca`` reads single rows and columns through two callables and so never needs the tile.

``svd``
    Truncated SVD: exact (the best approximation of the given rank).
``rsvd``
    Randomized range finder with an a-posteriori error estimate (Halko, Martinsson & Tropp,
    sec. 4.3-4.4), blocked. Each round samples ``Y = A Omega`` with a fresh Gaussian block of
    ``p >= 16`` columns and removes the directions already found; since
    ``E ||(I - QQ^H) A w||^2 = ||(I - QQ^H) A||_F^2`` for a Gaussian vector ``w``, the projected
    block gives ``est = ||Y||_F / sqrt(p)``. A tile stops when ``est <= atol / 2`` (that block is
    still added to Q, which only lowers the error). With ``p >= 16`` the chance that ``est``
    underestimates the error by the factor 2 this margin absorbs is below 1e-3 per round even
    when the error is a single direction (``P(chi2_16 < 4)``), and the added block makes the
    true error far smaller in practice. A final SVD of ``Q^H A`` truncates to the budget
    ``sqrt(atol^2 - est^2)``: the two errors are orthogonal, so the total stays within ``atol``.
``aca``
    Adaptive cross approximation with partial pivoting, and a safe stop: a step counts as
    small when its rank-1 term has norm ``<= atol / 4``; after two small steps in a row the
    residual is measured on up to 8 random unused rows (an unbiased estimate of its squared
    Frobenius norm) and the iteration stops only if that estimate is ``<= atol / 2``, otherwise
    it continues from the worst sampled row. The result is recompressed (QR + SVD) to
    ``sqrt(atol^2 - est^2)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._array import SUPPORTED, array_module, asnumpy, fro2, herm, real_dtype
from .lowrank import LowRank, recompress, truncation_ranks

__all__ = ["METHODS", "aca", "compress", "compress_tiles"]

#: Compression methods.
METHODS = ("rsvd", "aca", "svd")

Factors = tuple[Any, Any]
Oracle = Callable[[Any], Any]

_FIRST_BLOCK = 32
_BLOCK = 16
_OVERSAMPLE = 10


def _gaussian(rng: np.random.Generator, n: int, p: int, dtype: np.dtype, xp: Any) -> Any:
    omega = rng.standard_normal((n, p)).astype(real_dtype(dtype), copy=False)
    return xp.asarray(omega).astype(dtype, copy=False)


def _matmul_stack(A: Any, B: Any) -> Any:
    """``A @ B`` for a stack A (b, m, n) and one matrix B (n, p), as one GEMM when possible."""
    b, m, n = A.shape
    if A.flags.c_contiguous:
        return (A.reshape(b * m, n) @ B).reshape(b, m, B.shape[1])
    return A @ B


def _split(U: Any, V: Any, ranks: Any) -> list[Factors]:
    xp = array_module(U)
    out = []
    for b, r in enumerate(ranks.tolist()):
        out.append((xp.ascontiguousarray(U[b, :, :r]), xp.ascontiguousarray(V[b, :, :r])))
    return out


def _svd_tiles(A: Any, atol: Any, rank: int | None) -> list[Factors]:
    xp = array_module(A)
    x, s, yh = xp.linalg.svd(A, full_matrices=False)
    ranks = truncation_ranks(s, atol, rank)
    out = []
    for b, r in enumerate(ranks.tolist()):
        out.append((xp.ascontiguousarray(x[b, :, :r]),
                    xp.ascontiguousarray(herm(yh[b, :r, :]) * s[b, :r].astype(A.dtype))))
    return out


def _finish(A: Any, Q: Any, budget: Any, rank: int | None) -> list[Factors]:
    """Truncate ``A ~ Q (Q^H A)`` for a stack; Q is re-orthonormalized first."""
    xp = array_module(A)
    Q, _ = xp.linalg.qr(Q)
    x, s, yh = xp.linalg.svd(herm(Q) @ A, full_matrices=False)
    ranks = truncation_ranks(s, budget, rank)
    out = []
    for b, r in enumerate(ranks.tolist()):
        out.append((xp.ascontiguousarray(Q[b] @ x[b, :, :r]),
                    xp.ascontiguousarray(herm(yh[b, :r, :]) * s[b, :r].astype(A.dtype))))
    return out


def _rsvd_fixed_rank(A: Any, rank: int, rng: np.random.Generator) -> list[Factors]:
    xp = array_module(A)
    _, m, n = A.shape
    p = min(m, n, rank + _OVERSAMPLE)
    Q, _ = xp.linalg.qr(_matmul_stack(A, _gaussian(rng, n, p, A.dtype, xp)))
    # One power iteration: the range of (A A^H) A Omega fits the leading directions better.
    Z, _ = xp.linalg.qr(herm(A) @ Q)
    Q = A @ Z
    return _finish(A, Q, None, rank)


def _rsvd_tiles(A: Any, atol: Any, rank: int | None, rng: np.random.Generator) -> list[Factors]:
    xp = array_module(A)
    nb, m, n = A.shape
    if atol is None:
        return _rsvd_fixed_rank(A, int(rank), rng)
    full = min(m, n)
    cap = full if rank is None else min(full, int(rank) + _OVERSAMPLE)
    atol = np.asarray(atol, dtype=np.float64)
    out: list[Factors | None] = [None] * nb
    act = np.arange(nb)
    A_act, Q = A, xp.zeros((nb, m, 0), dtype=A.dtype)
    p = min(_FIRST_BLOCK, cap)
    while act.size:
        Y = _matmul_stack(A_act, _gaussian(rng, n, p, A.dtype, xp))
        if Q.shape[2]:
            for _ in range(2):  # project twice: orthogonal to Q to working precision
                Y = Y - Q @ (herm(Q) @ Y)
        est = np.sqrt(asnumpy(fro2(Y)).astype(np.float64) / p)
        Qn, _ = xp.linalg.qr(Y)
        Q = xp.concatenate([Q, Qn], axis=2)
        w = Q.shape[2]
        if w >= full:
            est[:] = 0.0  # Q spans the whole range (almost surely): nothing is left
        done = (est <= 0.5 * atol[act]) | (w >= cap)
        if done.any():
            idx = np.flatnonzero(done)
            budget = np.sqrt(np.maximum(atol[act[idx]] ** 2 - est[idx] ** 2, 0.0))
            sel = xp.asarray(idx)
            for b, f in zip(act[idx].tolist(), _finish(A_act[sel], Q[sel], budget, rank),
                            strict=True):
                out[b] = f
            keep = xp.asarray(np.flatnonzero(~done))
            act = act[~done]
            A_act, Q = A_act[keep], Q[keep]
        p = min(max(_BLOCK, w // 2), cap - w)
    return out  # type: ignore[return-value]


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
        Fixed rank (``atol`` None) or rank cap.
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
    cap = full if rank is None else min(full, int(rank) + (_OVERSAMPLE if atol is None else 0))
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
    budget = None if atol is None else np.array([np.sqrt(max(target ** 2 - est ** 2, 0.0))])
    Uc, Vc, ranks = recompress(U[None, :, :k], V[None, :, :k], budget, rank)
    r = int(ranks[0])
    return xp.ascontiguousarray(Uc[0, :, :r]), xp.ascontiguousarray(Vc[0, :, :r])


def _aca_tiles(A: Any, atol: Any, rank: int | None, rng: np.random.Generator) -> list[Factors]:
    xp = array_module(A)
    out = []
    for b in range(A.shape[0]):
        tile = A[b]
        out.append(aca(lambda i, t=tile: t[i, :], lambda j, t=tile: t[:, j], tile.shape,
                       None if atol is None else float(atol[b]), rank=rank, dtype=A.dtype,
                       rng=rng, xp=xp))
    return out


def compress_tiles(A: Any, atol: Any, rank: int | None, method: str,
                   rng: np.random.Generator) -> list[Factors]:
    """Compress a stack of equal-shape tiles; one ``(U, V)`` per tile, each of its own rank.

    Parameters
    ----------
    A : (B, m, n) array
    atol : (B,) array or None
        Absolute Frobenius accuracy per tile (None: fixed rank).
    rank : int or None
        Fixed rank, or the rank cap with ``atol``.
    method : {'rsvd', 'aca', 'svd'}
    rng : numpy.random.Generator
    """
    if A.shape[0] == 0:
        return []
    if method == "svd":
        return _svd_tiles(A, atol, rank)
    if method == "rsvd":
        return _rsvd_tiles(A, atol, rank, rng)
    return _aca_tiles(A, atol, rank, rng)


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
