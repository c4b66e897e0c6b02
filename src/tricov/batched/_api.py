"""The batched public operations: the dense API of :mod:`tricov.dense` over many matrices.

Each function checks its operands (:class:`~tricov.batched._operands.Batch`), turns the
caller's options into canonical logical views through the same variant identities as the
dense path (a right-side operation is a left-side one on ``B^T``; ``uplo='U'`` is ``uplo='L'``
on ``A^T``; a C-ordered matrix is the transpose of an F-ordered one; see
:mod:`tricov._options`), and hands each group of like members to the engine of the arrays'
device.

Per-member failures (POTRF, POSV, POTI: a leading minor that is not positive definite;
TRTRI, POTRI: an exactly zero diagonal element) never stop or change the other members. With
``check=True`` (the default) the call raises once every member is computed; with
``check=False`` it returns LAPACK's ``info`` of every member instead.

GPU members (CuPy arrays, DLPack tensors of a CUDA device) are computed on the current stream
of their device, and nothing waits for the device except the check of ``check=True``, which
reads the members' info once, at the end. With ``check=False`` the info is returned as a CuPy
array on the members' device, as the results are: the call does not wait at all.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol, TypeVar

import numpy as np

from .. import _options as opt
from .._errors import NotPositiveDefiniteError, SingularMatrixError
from .._frontend import real_scalar, refuse_capture, scalar
from .._keys import on_cuda
from .._views import Mat
from ..backends.cuda_libs import read_small
from . import _replay
from ._cpu import CPUEngine
from ._operands import Batch, Group, check_square

__all__ = ["lauum", "posv", "poti", "potrf", "potri", "potrs", "syrk", "trmm", "trsm", "trtri"]

Array = TypeVar("Array")


class Engine(Protocol):
    """What an engine does for the members of one group (see ``CPUEngine``)."""

    def trsm(self, tri: Mat, lower: bool, unit: bool, alpha: complex, b: Mat) -> None: ...
    def trmm(self, tri: Mat, lower: bool, unit: bool, alpha: complex, b: Mat) -> None: ...
    def herk(self, alpha: float, a: Mat, beta: float, c: Mat) -> None: ...
    def potrf(self, a: Mat) -> Any: ...
    def trtri(self, a: Mat, unit: bool) -> Any: ...
    def lauum(self, a: Mat) -> None: ...
    def potri(self, a: Mat) -> Any: ...
    def poti(self, a: Mat) -> Any: ...
    def potrs(self, lv: Mat, b: Mat) -> None: ...
    def posv(self, a: Mat, b: Mat) -> Any: ...
    def replayable(self, op: str, n: int, m: int = 0) -> bool: ...


@functools.cache
def _cuda_engine() -> type:
    from ._cuda import CUDAEngine  # needs CuPy: imported on first use, then kept

    return CUDAEngine


def _engine(batch: Batch, group: Group) -> Engine:
    """The engine of the members' device: NumPy members on the CPU, CuPy members on their GPU."""
    if batch.device is not None:
        return _cuda_engine()(batch.dtype, group)
    return CPUEngine(batch.dtype, group)


class _Infos:
    """Per-member info of the groups of one call, assembled once at the end.

    Engines return a group's info as a NumPy array (host members) or a CuPy int64 array
    (device members, still being computed). :meth:`result` puts them in batch order: on the
    host (one copy from the device, which waits for it) or, for device members when the caller
    does not check, on the device (nothing waits).
    """

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        self.parts: list[tuple[Group, Any]] = []

    def add(self, group: Group, values: Any) -> None:
        self.parts.append((group, values))

    def result(self, on_host: bool) -> Any:
        """int64 info of every member, shaped like the batch (read from the device: a view
        valid until this thread's next call, see :func:`~tricov.backends.cuda_libs.read_small`)."""
        xp = np if on_host else self.batch.xp
        with self.batch.on_device():
            if len(self.parts) == 1 and self.parts[0][0].index is None:
                values = self.parts[0][1]
                if on_host:
                    values = _on_host(values)
                return xp.asarray(values, dtype=np.int64).reshape(self.batch.shape)
            info = xp.zeros(self.batch.count, np.int64)
            parts = self.parts
            if on_host and parts and not isinstance(parts[0][1], np.ndarray):
                import cupy

                flat = _on_host(cupy.concatenate([v for _, v in parts]))
                ends = np.cumsum([v.size for _, v in parts])
                parts = list(zip([g for g, _ in parts], np.split(flat, ends[:-1]), strict=True))
            for group, values in parts:
                index = group.index if group.index is not None else slice(None)
                info[index if on_host else xp.asarray(index)] = values
            return info.reshape(self.batch.shape)


def _on_host(values: Any) -> np.ndarray:
    """Info values on the host: host ones as they are, device ones read from the device."""
    if isinstance(values, np.ndarray):
        return values
    return read_small(values)


def _finish(batch: Batch, infos: _Infos, check: bool, error: type, result: Any) -> Any:
    """Raise for the failing members (``check``) or return the info array (on the members'
    device: see :class:`_Infos`)."""
    if not check:
        return infos.result(on_host=batch.device is None)
    return _raise_failures(infos.result(on_host=True), error, result)


def _replayed(kind: str, arrays: tuple[Any, ...], options: tuple, result: Any,
              error: type | None = None, check: bool = True) -> tuple[tuple | None, bool, Any]:
    """(replay key, whether the call was replayed, what it then returns): a call recorded
    before runs its kernels again (:mod:`tricov.batched._replay`) and returns as
    :func:`_finish` would, from the info array its kernels wrote where ``error`` is given (the
    operation returns per-member info of the stack ``arrays[0]``)."""
    if error is not None and check and _on_gpu(arrays[0]):
        refuse_capture(f"tricov.batched.{kind} with check=True")
    call = _replay.key(kind, arrays, options)
    hit, info = _replay.replay(call, arrays[0] if error is not None else None)
    if not hit or error is None:
        return call, hit, result
    shape = arrays[0].shape[:-2]
    if not check:
        return call, True, info.reshape(shape)
    return call, True, _raise_failures(_on_host(info).reshape(shape), error, result)


def _on_gpu(x: Any) -> bool:
    """Whether a stack, or the first member of a list, is a CuPy array or a DLPack tensor of a
    CUDA device."""
    return on_cuda(x[0] if isinstance(x, (list, tuple)) and len(x) else x)


def _raise_failures(info: np.ndarray, error: type, result: Any) -> Any:
    """Raise ``error`` for the members whose host ``info`` is not zero; else ``result``."""
    if np.count_nonzero(info):
        failed = np.flatnonzero(info)
        orders = info.reshape(-1)[failed]
        what = "leading minor" if error is NotPositiveDefiniteError else "zero diagonal element"
        shown = ", ".join(f"{int(i)} ({what} {int(k)})"
                          for i, k in zip(failed[:5], orders[:5], strict=True))
        more = f" and {failed.size - 5} more" if failed.size > 5 else ""
        raise error(int(orders[0]), indices=failed.tolist(), orders=orders.tolist(),
                    message=f"{failed.size} of {info.size} batch members failed: member "
                            f"{shown}{more}")
    return result


def _zero(batch: Batch, which: int) -> None:
    with batch.on_device():
        for arr in batch.ops[which].arrays:
            arr[...] = 0


def _check_rows(batch: Batch, which: int, name: str, want: int, *, axis: int) -> None:
    """Member ``k`` of operand ``which`` has ``want`` rows (axis 0) or columns (axis 1), where
    ``want`` indexes the square operand 0."""
    count = batch.count if batch.is_list else 1
    for k in range(count):
        n = batch.ops[0].shape_of(k)[0]
        got = batch.ops[which].shape_of(k)[axis]
        if got != n:
            where = f"{name}[{k}]" if batch.is_list else name
            what = "rows" if axis == 0 else "columns"
            raise ValueError(f"{where} must have {n} {what} to match the {n}x{n} matrix, got "
                             f"shape {batch.ops[which].shape_of(k)}")


def _trxm(kind: str, A: Array, B: Array, side: str, uplo: str, trans: str, diag: str,
          alpha: complex) -> Array:
    call, hit, out = _replayed(kind, (A, B), (side, uplo, trans, diag, alpha), B)
    if hit:
        return out
    left, lower, unit = opt.parse_side(side), opt.parse_uplo(uplo), opt.parse_diag(diag)
    batch = Batch(("A", A, False), ("B", B, True))
    op = opt.parse_trans(trans, complex_=batch.dtype.kind == "c")
    check_square(batch, 0, "A")
    _check_rows(batch, 1, "B", 0, axis=0 if left else 1)
    alpha = scalar(alpha, "alpha", batch.dtype.kind == "c")
    if alpha == 0:
        _zero(batch, 1)
        return B
    with _replay.Recording(call) as recording, batch as groups:
        only_kernels = not batch.copied
        for g in groups:
            a, b = g.views
            if b.rows == 0 or b.cols == 0:
                continue
            tri, tri_lower = a.apply(op), lower != opt.has_t(op)
            if not left:
                tri, tri_lower, b = tri.T, not tri_lower, b.T
            engine = _engine(batch, g)
            only_kernels = only_kernels and engine.replayable(kind, b.rows, b.cols)
            getattr(engine, kind)(tri, tri_lower, unit, alpha, b)
        recording.keep(only_kernels)
    return B


def trsm(A: Array, B: Array, *, side: str = "L", uplo: str = "L", trans: str = "N",
         diag: str = "N", alpha: complex = 1.0) -> Array:
    """Triangular solves of a batch, in place: ``op(A_k) X_k = alpha B_k`` (or ``X_k op(A_k)``).

    Parameters
    ----------
    A : (..., k, k) array, or list of 2-D arrays
        Triangular matrices; only the ``uplo`` triangle is read (not its diagonal if
        ``diag='U'``).
    B : (..., m, n) array, or list of 2-D arrays
        Right-hand sides, overwritten by the solutions. A stack must have the batch shape of
        A; a list the length of A (member sizes may differ from member to member).
    side, uplo, trans, diag, alpha
        As :func:`tricov.trsm`.

    Returns
    -------
    B

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[[2.0, 0.0], [1.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]]])
    >>> tc.batched.trsm(A, np.array([[[2.0], [9.0]], [[3.0], [4.0]]]))[:, :, 0]
    array([[1., 2.],
           [3., 2.]])
    """
    return _trxm("trsm", A, B, side, uplo, trans, diag, alpha)


def trmm(A: Array, B: Array, *, side: str = "L", uplo: str = "L", trans: str = "N",
         diag: str = "N", alpha: complex = 1.0) -> Array:
    """Triangular products of a batch, in place: ``B_k = alpha op(A_k) B_k`` (or ``B_k op(A_k)``).

    Operands and options are those of :func:`trsm`.

    Returns
    -------
    B

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[[2.0, 0.0], [1.0, 4.0]]])
    >>> tc.batched.trmm(A, np.array([[[1.0], [2.0]]]))[0, :, 0]
    array([2., 9.])
    """
    return _trxm("trmm", A, B, side, uplo, trans, diag, alpha)


def syrk(A: Array, C: Array, *, uplo: str = "L", trans: str = "N", alpha: float = 1.0,
         beta: float = 0.0) -> Array:
    """Rank-k updates of one triangle of each member: ``C_k = alpha A_k A_k^H + beta C_k``.

    Parameters
    ----------
    A : (..., n, k) or (..., k, n) array, or list of 2-D arrays
    C : (..., n, n) array, or list of 2-D arrays
        Only the ``uplo`` triangle is read and written (not read at all when ``beta=0``).
    uplo, trans, alpha, beta
        As :func:`tricov.syrk` (Hermitian product for complex data; ``trans`` 'N' or 'C').

    Returns
    -------
    C

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    >>> tc.batched.syrk(A, np.zeros((1, 2, 2)))[0]
    array([[ 5.,  0.],
           [11., 25.]])
    """
    call, hit, out = _replayed("syrk", (A, C), (uplo, trans, alpha, beta), C)
    if hit:
        return out
    lower = opt.parse_uplo(uplo)
    batch = Batch(("A", A, False), ("C", C, True))
    op = opt.parse_trans(trans, complex_=batch.dtype.kind == "c", hermitian=True)
    check_square(batch, 1, "C")
    count = batch.count if batch.is_list else 1
    for k in range(count):
        n = batch.ops[1].shape_of(k)[0]
        shape = batch.ops[0].shape_of(k)
        if shape[1 if opt.has_t(op) else 0] != n:
            where = f"A[{k}]" if batch.is_list else "A"
            raise ValueError(f"C is {n}x{n} but op({where}) has "
                             f"{shape[1 if opt.has_t(op) else 0]} rows ({where} has shape "
                             f"{shape}, trans={trans!r})")
    alpha, beta = real_scalar(alpha, "alpha"), real_scalar(beta, "beta")
    with _replay.Recording(call) as recording, batch as groups:
        only_kernels = not batch.copied
        for g in groups:
            a, c = g.views
            if c.rows == 0:
                continue
            d = a.apply(op)
            if not lower:  # the upper triangle of C is the lower one of C^T = conj(C)
                c, d = c.T, d.conj
            engine = _engine(batch, g)
            only_kernels = only_kernels and engine.replayable("herk", c.rows, d.cols)
            engine.herk(alpha, d, beta, c)
        recording.keep(only_kernels)
    return C


def _lower_view(a: Mat, lower: bool) -> Mat:
    """The upper triangle of A is the lower triangle of the view ``A^T``."""
    return a if lower else a.T


def _square_op(kind: str, A: Array, name: str, uplo: str, check: bool, error: type | None,
               **kw: Any) -> Any:
    call, hit, out = _replayed(kind, (A,), (uplo, *kw.values()), A, error, check)
    if hit:
        return out
    lower = opt.parse_uplo(uplo)
    batch = Batch((name, A, True))
    check_square(batch, 0, name)
    infos = _Infos(batch)
    with _replay.Recording(call) as recording, batch as groups:
        only_kernels, out = not batch.copied and len(groups) == 1, None
        for g in groups:
            a = g.views[0]
            if a.rows == 0:
                continue
            engine = _engine(batch, g)
            only_kernels = only_kernels and engine.replayable(kind, a.rows)
            out = getattr(engine, kind)(_lower_view(a, lower), **kw)
            if error is not None:
                infos.add(g, out)
        recording.keep(only_kernels, out)
    if error is None:
        return A
    return _finish(batch, infos, check, error, A)


def potrf(A: Array, *, uplo: str = "L", check: bool = True) -> Any:
    """Cholesky factorizations of a batch, in place: ``A_k = L_k L_k^H`` (or ``U_k^H U_k``).

    Parameters
    ----------
    A : (..., n, n) array, or list of 2-D arrays (sizes may differ)
        Symmetric (Hermitian) positive definite; only the ``uplo`` triangle is read and
        overwritten by the factor.
    uplo : {'L', 'U'}
    check : bool
        Raise for failing members (default), or return the info of every member.

    Returns
    -------
    A, or info
        With ``check=False``: an int64 array of the batch shape (a list: its length), on the
        members' device (NumPy for host members, CuPy for GPU members), 0 for a member that
        succeeded, else the order of its first leading minor that is not positive definite
        (or holds NaN).

    Raises
    ------
    NotPositiveDefiniteError
        With ``check=True``, after every member is computed, if any failed: ``indices`` are
        the flat batch indices of the failing members (C order over the batch dimensions;
        ``numpy.unravel_index(e.indices, A.shape[:-2])`` gives tuples), ``orders`` their
        leading-minor orders, ``order`` that of the first. A failing member holds a partial
        factorization (its leading ``order - 1`` columns, rows for ``uplo='U'``, are
        factored); the others are complete.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[[4.0, 2.0], [2.0, 5.0]], [[1.0, 0.0], [0.0, -1.0]]])
    >>> tc.batched.potrf(A, check=False)
    array([0, 2])
    >>> A[0]
    array([[2., 2.],
           [1., 2.]])
    """
    return _square_op("potrf", A, "A", uplo, check, NotPositiveDefiniteError)


def trtri(A: Array, *, uplo: str = "L", diag: str = "N", check: bool = True) -> Any:
    """Inverses of triangular matrices, in place (only the ``uplo`` triangle is touched).

    Returns
    -------
    A, or info
        With ``check=False``: per member 0, or the 1-based index of its first exactly zero
        diagonal element (such a member is left unchanged).

    Raises
    ------
    SingularMatrixError
        With ``check=True``, if a member has a zero diagonal element (``indices``, ``orders``
        as for :func:`potrf`); the other members are inverted.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.batched.trtri(np.array([[[2.0, 0.0], [1.0, 4.0]]]))[0]
    array([[ 0.5  ,  0.   ],
           [-0.125,  0.25 ]])
    """
    unit = opt.parse_diag(diag)
    return _square_op("trtri", A, "A", uplo, check, SingularMatrixError, unit=unit)


def lauum(A: Array, *, uplo: str = "L") -> Array:
    """``L_k^H L_k`` (``uplo='L'``) or ``U_k U_k^H`` (``'U'``) of each member, in place.

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.batched.lauum(np.array([[[2.0, 0.0], [1.0, 4.0]]]))[0]
    array([[ 5.,  0.],
           [ 4., 16.]])
    """
    return _square_op("lauum", A, "A", uplo, True, None)


def potri(L: Array, *, uplo: str = "L", check: bool = True) -> Any:
    """Inverses of SPD matrices from their Cholesky factors, in place (TRTRI then LAUUM).

    Returns
    -------
    L, or info
        As :func:`trtri`: a member whose factor has a zero diagonal element is unchanged.

    Raises
    ------
    SingularMatrixError

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> L = tc.batched.potrf(np.array([[[4.0, 2.0], [2.0, 5.0]]]))
    >>> tc.batched.potri(L)[0]
    array([[ 0.3125,  2.    ],
           [-0.125 ,  0.25  ]])
    """
    return _square_op("potri", L, "L", uplo, check, SingularMatrixError)


def poti(A: Array, *, uplo: str = "L", check: bool = True) -> Any:
    """Inverses of SPD matrices in place: POTRF then POTRI, in one pass over each member.

    Returns
    -------
    A, or info
        As :func:`potrf`; a failing member holds its partial factorization.

    Raises
    ------
    NotPositiveDefiniteError

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> tc.batched.poti(np.array([[[4.0, 2.0], [2.0, 5.0]]]))[0]
    array([[ 0.3125,  2.    ],
           [-0.125 ,  0.25  ]])
    """
    return _square_op("poti", A, "A", uplo, check, NotPositiveDefiniteError)


def _solve_views(a: Mat, b: Mat, lower: bool) -> tuple[Mat, Mat]:
    """The lower factor and right-hand sides of ``L L^H X = B``.

    For ``uplo='U'``, ``A = U^H U`` and ``L = U^T`` is the lower factor of ``conj(A)``, so
    ``A X = B`` is ``L L^H conj(X) = conj(B)``.
    """
    return (a, b) if lower else (a.T, b.conj)


def potrs(L: Array, B: Array, *, uplo: str = "L") -> Array:
    """Solves ``A_k X_k = B_k`` from Cholesky factors, X over B.

    Parameters
    ----------
    L : (..., n, n) array, or list of 2-D arrays
        Factors from :func:`potrf` (``uplo`` triangle read).
    B : (..., n, nrhs) array, or list of 2-D arrays
        Overwritten by the solutions.

    Returns
    -------
    B

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> L = tc.batched.potrf(np.array([[[4.0, 2.0], [2.0, 5.0]]]))
    >>> tc.batched.potrs(L, np.array([[[6.0], [7.0]]]))[0]
    array([[1.],
           [1.]])
    """
    call, hit, out = _replayed("potrs", (L, B), (uplo,), B)
    if hit:
        return out
    lower = opt.parse_uplo(uplo)
    batch = Batch(("L", L, False), ("B", B, True))
    check_square(batch, 0, "L")
    _check_rows(batch, 1, "B", 0, axis=0)
    with _replay.Recording(call) as recording, batch as groups:
        only_kernels = not batch.copied
        for g in groups:
            a, b = g.views
            if b.rows == 0 or b.cols == 0:
                continue
            engine = _engine(batch, g)
            only_kernels = only_kernels and engine.replayable("potrs", b.rows, b.cols)
            engine.potrs(*_solve_views(a, b, lower))
        recording.keep(only_kernels)
    return B


def posv(A: Array, B: Array, *, uplo: str = "L", check: bool = True) -> Any:
    """Solves ``A_k X_k = B_k`` for SPD members: A by its factor, B by X, one pass per member.

    Returns
    -------
    B, or info
        As :func:`potrf`; a failing member's B is unchanged and its A holds a partial
        factorization.

    Raises
    ------
    NotPositiveDefiniteError

    Examples
    --------
    >>> import numpy as np, tricov as tc
    >>> A = np.array([[[4.0, 2.0], [2.0, 5.0]]])
    >>> tc.batched.posv(A, np.array([[[6.0], [7.0]]]))[0]
    array([[1.],
           [1.]])
    """
    call, hit, out = _replayed("posv", (A, B), (uplo,), B, NotPositiveDefiniteError, check)
    if hit:
        return out
    lower = opt.parse_uplo(uplo)
    batch = Batch(("A", A, True), ("B", B, True))
    check_square(batch, 0, "A")
    _check_rows(batch, 1, "B", 0, axis=0)
    infos = _Infos(batch)
    with _replay.Recording(call) as recording, batch as groups:
        only_kernels, out = not batch.copied and len(groups) == 1, None
        for g in groups:
            a, b = g.views
            if a.rows == 0:
                continue
            engine = _engine(batch, g)
            only_kernels = only_kernels and engine.replayable("posv", b.rows, b.cols)
            out = engine.posv(*_solve_views(a, b, lower))
            infos.add(g, out)
        recording.keep(only_kernels, out)
    return _finish(batch, infos, check, NotPositiveDefiniteError, B)
