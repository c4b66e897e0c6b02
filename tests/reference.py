"""Shared helpers for tricov's tests: test matrices, memory layouts, and error measures.

Everything here is plain NumPy, independent of tricov, so that tests compare tricov against an
implementation it does not share code with. Other test modules import it as
``from reference import ...`` (``tests/`` is on ``sys.path`` under pytest's default rootdir
handling) and may rely on every name in ``__all__`` staying as documented.

Three groups of helpers:

* **Matrices.** :func:`make_rng` gives a generator seeded from any key, so a test's data depend
  only on its parameters. :func:`random_general`, :func:`random_triangular` and
  :func:`random_spd` make well-conditioned matrices of any supported dtype.
* **Layouts.** :func:`embed` places an operand in memory as one of :data:`LAYOUTS`: its own
  F- or C-ordered array, an F- or C-ordered sub-view of a larger NaN-filled array (leading
  dimension larger than the operand), or a non-unit-stride view. The returned :class:`Embedded`
  remembers the whole buffer so :meth:`Embedded.assert_outside_unchanged` can check, bitwise,
  that nothing outside the operand was written.
* **Recursion depth.** :func:`forced_leaf_size` sets a tiny leaf size for one dtype inside a
  ``with`` block, so the recursions run several levels on small matrices, and restores it.
* **Errors.** Each ``*_error`` function returns a normwise relative residual (a backward error,
  or the relative error of a product), computed in float64/complex128, that a correct
  implementation keeps below :func:`tolerance` ``(dtype, n)``, i.e. a small multiple of
  ``n * eps``. NaN anywhere in a result makes the error NaN, which fails every comparison.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ALL_LAYOUTS",
    "COMPLEX_DTYPES",
    "DTYPES",
    "LAYOUTS",
    "LEAF_OPS",
    "REAL_DTYPES",
    "TOL_FACTOR",
    "Embedded",
    "assert_bitwise_equal",
    "assert_small",
    "bits",
    "embed",
    "eps",
    "forced_leaf_size",
    "hermitian_from",
    "inverse_error",
    "lauum_error",
    "make_rng",
    "nan_fill",
    "op",
    "poison_triangle",
    "potrf_error",
    "random_general",
    "random_spd",
    "random_triangular",
    "reference_dtype",
    "solve_error",
    "syrk_error",
    "tolerance",
    "triangle",
    "triangle_mask",
    "trmm_error",
    "trsm_error",
    "trtri_error",
]

#: The four dtypes tricov supports.
DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)
)
REAL_DTYPES: tuple[np.dtype, ...] = DTYPES[:2]
COMPLEX_DTYPES: tuple[np.dtype, ...] = DTYPES[2:]

#: Layouts that tricov must handle in place (zero copy).
LAYOUTS: tuple[str, ...] = ("F", "C", "F-sub", "C-sub")
#: :data:`LAYOUTS` plus ``"strided"``, a non-unit-stride view that tricov copies in and out.
ALL_LAYOUTS: tuple[str, ...] = LAYOUTS + ("strided",)

#: The constant of the tolerance rule: an error passes if it is at most
#: ``TOL_FACTOR * max(n, 1) * eps(dtype)``.
TOL_FACTOR = 10.0


# --------------------------------------------------------------------------- dtypes, tolerance
def make_rng(*key: object) -> np.random.Generator:
    """A NumPy generator seeded deterministically from ``key`` (any printable values).

    >>> float(make_rng("trsm", 3).random()) == float(make_rng("trsm", 3).random())
    True
    """
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def eps(dtype: np.dtype) -> float:
    """Machine epsilon of ``dtype`` (that of the real part for complex dtypes)."""
    return float(np.finfo(np.dtype(dtype)).eps)


def reference_dtype(dtype: np.dtype) -> np.dtype:
    """float64 for real dtypes, complex128 for complex ones: the precision of the references."""
    return np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)


def tolerance(dtype: np.dtype, n: int, factor: float = TOL_FACTOR) -> float:
    """Bound for a normwise relative error of an ``n``-sized problem in ``dtype``.

    ``factor * max(n, 1) * eps(dtype)``: the classical backward-error bound of the triangular
    and Cholesky algorithms is a modest multiple of ``n * eps``; a wrong element, a wrong
    triangle or a missing conjugate gives an error of order one.
    """
    return factor * max(int(n), 1) * eps(dtype)


def assert_small(err: float, dtype: np.dtype, n: int, what: str = "") -> None:
    """Assert ``err <= tolerance(dtype, n)`` (NaN fails), with a readable message."""
    tol = tolerance(dtype, n)
    assert err <= tol, f"{what}: relative error {err:.3e} > tolerance {tol:.3e} (n={n})"


#: Operations that have a leaf size in tricov's policy.
LEAF_OPS: tuple[str, ...] = ("trsm", "trmm", "syrk", "potrf", "trtri", "lauum")


@contextmanager
def forced_leaf_size(dtype: np.dtype, size: int | None, ops: Sequence[str] = LEAF_OPS,
                     backend: str = "cpu") -> Iterator[None]:
    """Inside the block, tricov's leaf size of each of ``ops`` for ``dtype`` is ``size``.

    ``backend`` is the leaf-size policy entry ("cpu", "batched_cpu", "gpu").

    ``size=None`` changes nothing (the leaf sizes in force are used), so a test can loop over
    ``(None, 2, ...)``. Otherwise, on exit every override of ``backend`` for ``dtype`` is
    removed (``set_leaf_size(..., None)``), also when the block raises. Overrides are per
    process, so this is safe under pytest-xdist.
    """
    import tricov as tc

    if size is None:
        yield
        return
    try:
        for name in ops:
            tc.set_leaf_size(backend, name, dtype, size)
        yield
    finally:
        tc.set_leaf_size(backend, ops[0], dtype, None)


# --------------------------------------------------------------------------------- matrices
def _standard(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "c":
        z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        return z / np.sqrt(2.0)
    return rng.standard_normal(shape)


def random_general(rng: np.random.Generator, shape: tuple[int, int],
                   dtype: np.dtype) -> np.ndarray:
    """A C-ordered ``shape`` array of standard normal entries (complex: unit variance)."""
    return _standard(rng, tuple(shape), dtype).astype(dtype)


def random_triangular(rng: np.random.Generator, n: int, dtype: np.dtype, *,
                      uplo: str = "L") -> np.ndarray:
    """A well-conditioned ``n x n`` triangular matrix; the other triangle is zero.

    Diagonal entries have modulus in [1, 2] (random sign or phase); off-diagonal entries are
    uniform of modulus below ``1/n``, so every row is diagonally dominant and the matrix is
    well conditioned whether its own diagonal or a unit diagonal is used (``diag='U'``).
    """
    dtype = np.dtype(dtype)
    off = rng.uniform(-1.0, 1.0, (n, n)) / max(n, 1)
    mod = rng.uniform(1.0, 2.0, n)
    if dtype.kind == "c":
        off = off * np.exp(2j * np.pi * rng.random((n, n)))
        diag = mod * np.exp(2j * np.pi * rng.random(n))
    else:
        diag = mod * rng.choice([-1.0, 1.0], n)
    t = np.tril(off, -1) if uplo.upper() == "L" else np.triu(off, 1)
    t = t + np.diag(diag)
    return t.astype(dtype)


def random_spd(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    """A Hermitian positive definite ``n x n`` matrix, eigenvalues in about [1, 5].

    ``G G^H / n + I`` with ``G`` standard normal; the diagonal is exactly real.
    """
    g = _standard(rng, (n, n), dtype)
    a = g @ g.conj().T / max(n, 1) + np.eye(n)
    a = (a + a.conj().T) / 2
    return a.astype(dtype)


def nan_fill(dtype: np.dtype) -> complex | float:
    """The NaN used to fill unreferenced memory (``nan + nan j`` for complex dtypes)."""
    return complex(np.nan, np.nan) if np.dtype(dtype).kind == "c" else np.nan


def triangle_mask(n: int, uplo: str, *, diag: bool = True) -> np.ndarray:
    """Boolean ``n x n`` mask of the ``uplo`` triangle (with or without its diagonal)."""
    k = 0 if diag else 1
    ones = np.ones((n, n), dtype=bool)
    return np.tril(ones, -k) if uplo.upper() == "L" else np.triu(ones, k)


def poison_triangle(x: np.ndarray, uplo: str, *, unit: bool = False) -> None:
    """Fill, in place, what a ``uplo`` triangular operand must not read with NaN.

    That is the strict opposite triangle of the square array ``x``, and also its diagonal if
    ``unit`` (``diag='U'``).
    """
    n = x.shape[0]
    other = "U" if uplo.upper() == "L" else "L"
    x[triangle_mask(n, other, diag=unit)] = nan_fill(x.dtype)


def triangle(a: np.ndarray, uplo: str, *, unit: bool = False) -> np.ndarray:
    """The triangular matrix that ``a`` stands for, in the reference precision.

    Only the ``uplo`` triangle of ``a`` is read (and not its diagonal if ``unit``); everything
    else may hold NaN. The result has zeros in the other triangle and ones on the diagonal if
    ``unit``.
    """
    n = a.shape[0]
    mask = triangle_mask(n, uplo, diag=not unit)
    t = np.where(mask, np.asarray(a, dtype=reference_dtype(a.dtype)), 0)
    if unit:
        t[np.diag_indices(n)] = 1
    return t


def hermitian_from(a: np.ndarray, uplo: str) -> np.ndarray:
    """The Hermitian matrix stored in the ``uplo`` triangle of ``a`` (reference precision).

    The imaginary part of the diagonal is dropped, as LAPACK does.
    """
    t = triangle(a, uplo)
    d = np.diag(np.diag(t).real)
    strict = t - np.diag(np.diag(t))
    return strict + strict.conj().T + d


def op(a: np.ndarray, trans: str) -> np.ndarray:
    """``a``, its transpose (``'T'``) or conjugate transpose (``'C'``)."""
    t = trans.upper()
    if t == "N":
        return a
    return a.T if t == "T" else a.conj().T


# ---------------------------------------------------------------------------------- layouts
@dataclass
class Embedded:
    """An operand placed in memory by :func:`embed`.

    Attributes
    ----------
    base : numpy.ndarray
        The whole buffer the operand lives in (the operand itself for layouts "F" and "C").
    view : numpy.ndarray
        The operand: the array to pass to tricov.
    mask : numpy.ndarray
        Boolean array shaped like ``base``, True on the elements that ``view`` covers.
    layout : str
        One of :data:`ALL_LAYOUTS`.
    """

    base: np.ndarray
    view: np.ndarray
    mask: np.ndarray
    layout: str

    def snapshot(self) -> np.ndarray:
        """A copy of the whole buffer, for :meth:`assert_outside_unchanged`."""
        return self.base.copy()

    def assert_outside_unchanged(self, before: np.ndarray) -> None:
        """Assert every element of the buffer outside the operand is bitwise as in ``before``."""
        outside = ~self.mask
        same = (bits(self.base) == bits(before)).all(axis=-1)
        bad = outside & ~same
        assert not bad.any(), (
            f"layout {self.layout}: {int(bad.sum())} element(s) outside the operand changed, "
            f"first at {tuple(int(i) for i in np.argwhere(bad)[0])}"
        )


def embed(a: np.ndarray, layout: str, *, fill: complex | float | None = None) -> Embedded:
    """Place a copy of the 2-D array ``a`` in memory according to ``layout``.

    Parameters
    ----------
    a : (m, n) array
        The values (and dtype) of the operand.
    layout : str
        ``"F"`` / ``"C"``: a fresh F- or C-ordered array. ``"F-sub"`` / ``"C-sub"``: a
        sub-view, offset from the start, of a larger F- or C-ordered array, so the leading
        dimension exceeds the operand's (column count for C order). ``"strided"``: the view
        ``X[1::2, 2::3]`` of a larger array, with no unit stride (tricov copies it in and out).
    fill : scalar, optional
        Value of the buffer outside the operand; default :func:`nan_fill` of the dtype.

    Returns
    -------
    Embedded
    """
    a = np.asarray(a)
    m, n = a.shape
    if fill is None:
        fill = nan_fill(a.dtype)
    if layout in ("F", "C"):
        base = np.array(a, order=layout, copy=True)
        return Embedded(base, base, np.ones(base.shape, dtype=bool), layout)
    if layout == "F-sub":
        shape, index, order = (m + 3, n + 2), (slice(1, 1 + m), slice(2, 2 + n)), "F"
    elif layout == "C-sub":
        shape, index, order = (m + 2, n + 3), (slice(2, 2 + m), slice(1, 1 + n)), "C"
    elif layout == "strided":
        shape, index, order = (2 * m + 2, 3 * n + 3), (slice(1, 1 + 2 * m, 2),
                                                       slice(2, 2 + 3 * n, 3)), "C"
    else:
        raise ValueError(f"unknown layout {layout!r}; expected one of {ALL_LAYOUTS}")
    base = np.full(shape, fill, dtype=a.dtype, order=order)
    view = base[index]
    view[...] = a
    mask = np.zeros(shape, dtype=bool)
    mask[index] = True
    return Embedded(base, view, mask, layout)


def bits(x: np.ndarray) -> np.ndarray:
    """The bytes of each element of ``x``, shape ``x.shape + (itemsize,)``, for bitwise tests."""
    x = np.ascontiguousarray(x)
    return x.view(np.uint8).reshape(x.shape + (x.dtype.itemsize,))


def assert_bitwise_equal(x: np.ndarray, y: np.ndarray, what: str = "") -> None:
    """Assert two arrays of one dtype and shape hold the same bits (NaN equals its own bits)."""
    assert x.shape == y.shape and x.dtype == y.dtype, f"{what}: shape/dtype differ"
    diff = ~(bits(x) == bits(y)).all(axis=-1)
    assert not diff.any(), (
        f"{what}: {int(diff.sum())} element(s) differ bitwise, first at "
        f"{tuple(int(i) for i in np.argwhere(diff)[0])}"
    )


# ------------------------------------------------------------------------ error measures
def _nrm(x: np.ndarray) -> float:
    return float(np.linalg.norm(x)) if x.size else 0.0


def _ratio(num: float, den: float) -> float:
    if np.isnan(num) or np.isnan(den):
        return float("nan")
    if num == 0.0:
        return 0.0
    return num / den if den > 0 else float("inf")


def _ref(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=reference_dtype(x.dtype))


def trsm_error(a: np.ndarray, b: np.ndarray, x: np.ndarray, *, side: str, uplo: str,
               trans: str, diag: str, alpha: complex) -> float:
    """Backward error of a triangular solve ``op(A) X = alpha B`` (or ``X op(A) = alpha B``).

    ``||op(T) X - alpha B|| / (||T|| ||X|| + |alpha| ||B||)`` where ``T`` is
    ``triangle(a, uplo, unit=diag=='U')``; ``b`` is the input B and ``x`` the output.
    """
    t = op(triangle(a, uplo, unit=diag.upper() == "U"), trans)
    xr, br = _ref(x), _ref(b)
    res = t @ xr - alpha * br if side.upper() == "L" else xr @ t - alpha * br
    return _ratio(_nrm(res), _nrm(t) * _nrm(xr) + abs(alpha) * _nrm(br))


def trmm_error(a: np.ndarray, b: np.ndarray, out: np.ndarray, *, side: str, uplo: str,
               trans: str, diag: str, alpha: complex) -> float:
    """Relative error of a triangular product ``alpha op(A) B`` (or ``alpha B op(A)``).

    ``||out - alpha op(T) B|| / (|alpha| ||T|| ||B||)``; ``b`` is the input B.
    """
    t = op(triangle(a, uplo, unit=diag.upper() == "U"), trans)
    br = _ref(b)
    exact = alpha * (t @ br if side.upper() == "L" else br @ t)
    return _ratio(_nrm(_ref(out) - exact), abs(alpha) * _nrm(t) * _nrm(br))


def syrk_error(a: np.ndarray, c: np.ndarray, out: np.ndarray, *, uplo: str, trans: str,
               alpha: float, beta: float) -> float:
    """Relative error of the ``uplo`` triangle of ``alpha op(A) op(A)^H + beta C``.

    ``op(A)`` is ``A`` for ``trans='N'`` and ``A^H`` otherwise (for real data ``A^T``). With
    ``beta == 0`` the input ``c`` is not read (it may hold NaN); otherwise, as in BLAS herk,
    the imaginary part of its diagonal is taken as zero. The measure is
    ``||tri(out - exact)|| / (|alpha| ||A||^2 + |beta| ||tri(C)||)``.
    """
    ar = _ref(a)
    d = ar if trans.upper() == "N" else ar.conj().T
    exact = alpha * (d @ d.conj().T)
    scale = abs(alpha) * _nrm(ar) ** 2
    if beta != 0:
        cr = triangle(c, uplo)
        cr[np.diag_indices(cr.shape[0])] = np.diag(cr).real  # herk: diagonal taken as real
        exact = exact + beta * cr
        scale += abs(beta) * _nrm(cr)
    mask = triangle_mask(c.shape[0], uplo)
    diff = np.where(mask, _ref(out) - exact, 0)
    return _ratio(_nrm(diff), scale)


def potrf_error(a: np.ndarray, factor: np.ndarray, uplo: str) -> float:
    """Backward error of a Cholesky factorization: ``||A - L L^H|| / ||A||``.

    ``a`` is the input (its ``uplo`` triangle defines the Hermitian A) and ``factor`` the
    output (its ``uplo`` triangle is the factor: L for 'L', U with ``A = U^H U`` for 'U').
    """
    h = hermitian_from(a, uplo)
    f = triangle(factor, uplo)
    prod = f @ f.conj().T if uplo.upper() == "L" else f.conj().T @ f
    return _ratio(_nrm(h - prod), _nrm(h))


def solve_error(a: np.ndarray, x: np.ndarray, b: np.ndarray) -> float:
    """Backward error of a linear solve: ``||A X - B|| / (||A|| ||X|| + ||B||)``.

    ``a`` is the full matrix (e.g. :func:`hermitian_from` of the input).
    """
    ar, xr, br = _ref(a), _ref(x), _ref(b)
    return _ratio(_nrm(ar @ xr - br), _nrm(ar) * _nrm(xr) + _nrm(br))


def trtri_error(a: np.ndarray, inv: np.ndarray, uplo: str, diag: str) -> float:
    """Residual of a triangular inverse: ``||T X - I|| / (||T|| ||X||)``.

    ``a`` is the input and ``inv`` the output; both are read through :func:`triangle` with the
    same ``uplo`` and ``diag``.
    """
    unit = diag.upper() == "U"
    t, x = triangle(a, uplo, unit=unit), triangle(inv, uplo, unit=unit)
    n = t.shape[0]
    return _ratio(_nrm(t @ x - np.eye(n)), _nrm(t) * _nrm(x))


def lauum_error(a: np.ndarray, out: np.ndarray, uplo: str) -> float:
    """Relative error of LAUUM: ``L^H L`` (``'L'``) or ``U U^H`` (``'U'``), in that triangle.

    ``||tri(out - exact)|| / ||T||^2`` with ``T = triangle(a, uplo)``.
    """
    t = triangle(a, uplo)
    exact = t.conj().T @ t if uplo.upper() == "L" else t @ t.conj().T
    mask = triangle_mask(t.shape[0], uplo)
    return _ratio(_nrm(np.where(mask, _ref(out) - exact, 0)), _nrm(t) ** 2)


def inverse_error(a_full: np.ndarray, inv: np.ndarray, uplo: str) -> float:
    """Residual of an SPD inverse stored in one triangle: ``||A X - I|| / (||A|| ||X||)``.

    ``a_full`` is the full Hermitian matrix; ``inv`` holds the ``uplo`` triangle of its inverse
    (POTRI / POTI output), from which the full ``X`` is rebuilt.
    """
    ar = _ref(a_full)
    x = hermitian_from(inv, uplo)
    n = ar.shape[0]
    return _ratio(_nrm(ar @ x - np.eye(n)), _nrm(ar) * _nrm(x))
