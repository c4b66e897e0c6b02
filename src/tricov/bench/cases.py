"""The benchmark cases: what each benchmarked operation needs, independent of the device.

A :class:`Case` knows its dimensions and default shapes, its flop count, the GEMM it is compared
with, how to make fresh random inputs (on the host, column-major, never zero), which of them it
overwrites, and how to call tricov. The native peer (the vendor library's routine on the same
data) belongs to the device (see :mod:`tricov.bench.devices`), looked up by the case's name.

New cases (``batched-potrf``, ``tlr-potrf``, ...) are added with :func:`register`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import flops as _flops

__all__ = ["CASES", "Case", "format_shape", "parse_shapes", "random_matrix", "register",
           "shapes_for"]

Shape = tuple[int, ...]
Arrays = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One benchmarked operation.

    Attributes
    ----------
    name : str
        The name used on the command line (``tricov bench NAME``) and for the device's peers.
    dims : tuple of str
        Names of the dimensions of a shape, e.g. ``("m", "n")``.
    default_shapes : tuple of tuple of int
        Shapes measured when the user gives none.
    flops : callable
        ``flops(shape, dtype) -> float``.
    gemm_dims : callable
        ``gemm_dims(shape) -> (m, n, k)``: the GEMM this case is compared with.
    make : callable
        ``make(rng, shape, dtype, xp=numpy) -> {name: array}``: fresh column-major random
        inputs made with the array module ``xp`` and the generator ``rng``.
    outputs : tuple of str
        Names of the inputs the operation overwrites (restored before each timed call).
    run : callable
        ``run(arrays)``: the tricov call on device arrays.
    leaf_ops : tuple of str
        The leaf sizes (operations of :data:`tricov._policy.OPERATIONS`) that the call uses.
    gemm_note : str
        The comparison GEMM in words, e.g. ``"C (m x n) += A (m x m) B (m x n)"``.
    """

    name: str
    dims: tuple[str, ...]
    default_shapes: tuple[Shape, ...]
    flops: Callable[[Shape, np.dtype], float]
    gemm_dims: Callable[[Shape], tuple[int, int, int]]
    make: Callable[..., Arrays]
    outputs: tuple[str, ...]
    run: Callable[[Arrays], object]
    leaf_ops: tuple[str, ...]
    gemm_note: str


#: The registered cases, by name, in the order they are listed.
CASES: dict[str, Case] = {}


def register(case: Case) -> Case:
    """Add ``case`` to :data:`CASES` (its name must be new) and return it."""
    if case.name in CASES:
        raise ValueError(f"a benchmark case named {case.name!r} is already registered")
    CASES[case.name] = case
    return case


# ------------------------------------------------------------------------------------ shapes
_SHAPE = re.compile(r"^\s*(\d+)(?:\s*[xX*]\s*(\d+))?\s*$")


def parse_shapes(specs: Sequence[str], case: Case) -> tuple[Shape, ...]:
    """Shapes of ``case`` from strings such as ``"4096x64"`` or ``"1024"`` (or comma lists).

    A single number ``N`` means ``NxN`` for a case with two dimensions.

    Raises
    ------
    ValueError
        For a malformed entry, a size below 1, or two numbers for a one-dimensional case.
    """
    shapes: list[Shape] = []
    for spec in specs:
        for item in filter(None, (s.strip() for s in spec.split(","))):
            match = _SHAPE.match(item)
            if not match:
                raise ValueError(f"size {item!r} is neither N nor MxN")
            values = tuple(int(g) for g in match.groups() if g is not None)
            if len(case.dims) == 1 and len(values) == 2:
                raise ValueError(f"{case.name} takes one size ({case.dims[0]}), got {item!r}")
            if len(values) == 1:
                values = values * len(case.dims)
            if min(values) < 1:
                raise ValueError(f"sizes must be at least 1, got {item!r}")
            shapes.append(values)
    if not shapes:
        raise ValueError("no sizes given")
    return tuple(shapes)


def format_shape(shape: Shape) -> str:
    """``(4096, 64)`` as ``"4096x64"``."""
    return "x".join(str(d) for d in shape)


# ------------------------------------------------------------------------------------ inputs
# Inputs are made with the device's array module ``xp`` (NumPy, CuPy) and a generator with
# NumPy's ``uniform(low, high, size)``, so that large GPU inputs never pass through the host.
def random_matrix(rng: Any, rows: int, cols: int, dtype: np.dtype, xp: Any = np) -> Any:
    """Entries uniform in (-1, 1) (real and imaginary parts), column-major."""
    out = xp.empty((rows, cols), dtype=dtype, order="F")
    re = rng.uniform(-1.0, 1.0, size=(rows, cols))
    if out.dtype.kind == "c":
        out[...] = re + 1j * rng.uniform(-1.0, 1.0, size=(rows, cols))
    else:
        out[...] = re
    return out


def _add_diagonal(a: Any, value: float, xp: Any) -> Any:
    idx = xp.arange(a.shape[0])
    a[idx, idx] += value
    return a


def _triangle(rng: Any, n: int, dtype: np.dtype, xp: Any = np) -> Any:
    """A well-conditioned triangle like a Cholesky factor: random entries, a real diagonal
    shifted by ``2n`` (LAPACK's LAUUM and POTRI read only the real part of the diagonal).

    Both triangles are filled (the one an operation does not reference is random too), so that
    an implementation reading the wrong triangle gets a wrong answer rather than a lucky one.
    """
    a = random_matrix(rng, n, n, dtype, xp)
    idx = xp.arange(n)
    a[idx, idx] = a[idx, idx].real
    return _add_diagonal(a, 2.0 * n, xp)


def _spd(rng: Any, n: int, dtype: np.dtype, xp: Any = np) -> Any:
    """A symmetric (Hermitian) positive definite matrix, diagonally dominant."""
    g = random_matrix(rng, n, n, dtype, xp)
    a = g.conj().T.copy(order="F")
    a += g
    a /= 2
    del g
    return _add_diagonal(a, 2.0 * n, xp)


# ------------------------------------------------------------------------------------ cases
def _tricov() -> Any:
    import tricov

    return tricov


def _count(op: str) -> Callable[[Shape, np.dtype], float]:
    return lambda shape, dtype: _flops.flops(op, shape, dtype)


_SQUARES = (1024, 2048, 3072, 4096)
_TRIANGULAR_SHAPES = tuple((n, n) for n in _SQUARES) + tuple(
    (m, n) for m in (4096, 8192) for n in (16, 32, 64, 128))


def _trxm_case(name: str) -> Case:
    def make(rng: Any, shape: Shape, dtype: np.dtype, xp: Any = np) -> Arrays:
        m, n = shape
        return {"A": _triangle(rng, m, dtype, xp), "B": random_matrix(rng, m, n, dtype, xp)}

    def run(x: Arrays) -> object:
        return getattr(_tricov(), name)(x["A"], x["B"])

    return Case(name=name, dims=("m", "n"), default_shapes=_TRIANGULAR_SHAPES,
                flops=_count(name), gemm_dims=lambda s: (s[0], s[1], s[0]), make=make,
                outputs=("B",), run=run, leaf_ops=(name,),
                gemm_note="C (m x n) += A (m x m) B (m x n)")


def _syrk_make(rng: Any, shape: Shape, dtype: np.dtype, xp: Any = np) -> Arrays:
    n, k = shape
    return {"A": random_matrix(rng, n, k, dtype, xp), "C": _spd(rng, n, dtype, xp)}


def _square_case(name: str, make: Callable[..., Any], leaf_ops: tuple[str, ...]) -> Case:
    def run(x: Arrays) -> object:
        return getattr(_tricov(), name)(x["A"])

    return Case(name=name, dims=("n",), default_shapes=tuple((n,) for n in _SQUARES),
                flops=_count(name), gemm_dims=lambda s: (s[0], s[0], s[0]),
                make=lambda rng, shape, dtype, xp=np: {"A": make(rng, shape[0], dtype, xp)},
                outputs=("A",), run=run, leaf_ops=leaf_ops,
                gemm_note="C (n x n) += A (n x n) B (n x n)")


_RHS_SHAPES = ((1024, 64), (2048, 64), (4096, 64), (4096, 1), (4096, 512))


def _potrs_make(rng: Any, shape: Shape, dtype: np.dtype, xp: Any = np) -> Arrays:
    n, nrhs = shape
    return {"L": _triangle(rng, n, dtype, xp), "B": random_matrix(rng, n, nrhs, dtype, xp)}


def _posv_make(rng: Any, shape: Shape, dtype: np.dtype, xp: Any = np) -> Arrays:
    n, nrhs = shape
    return {"A": _spd(rng, n, dtype, xp), "B": random_matrix(rng, n, nrhs, dtype, xp)}


register(_trxm_case("trsm"))
register(_trxm_case("trmm"))
register(Case(
    name="syrk", dims=("n", "k"),
    default_shapes=tuple((n, n) for n in _SQUARES) + ((4096, 64), (4096, 256)),
    flops=_count("syrk"), gemm_dims=lambda s: (s[0], s[0], s[1]), make=_syrk_make,
    outputs=("C",), run=lambda x: _tricov().syrk(x["A"], x["C"], alpha=1.0, beta=1.0),
    leaf_ops=("syrk",), gemm_note="C (n x n) += A (n x k) B (k x n)"))
register(_square_case("potrf", _spd, ("potrf", "trsm", "syrk")))
register(Case(
    name="potrs", dims=("n", "nrhs"), default_shapes=_RHS_SHAPES, flops=_count("potrs"),
    gemm_dims=lambda s: (s[0], s[1], s[0]), make=_potrs_make, outputs=("B",),
    run=lambda x: _tricov().potrs(x["L"], x["B"]), leaf_ops=("trsm",),
    gemm_note="C (n x nrhs) += A (n x n) B (n x nrhs)"))
register(Case(
    name="posv", dims=("n", "nrhs"), default_shapes=_RHS_SHAPES, flops=_count("posv"),
    gemm_dims=lambda s: (s[0], s[0], s[0]), make=_posv_make, outputs=("A", "B"),
    run=lambda x: _tricov().posv(x["A"], x["B"]), leaf_ops=("potrf", "trsm", "syrk"),
    gemm_note="C (n x n) += A (n x n) B (n x n)"))
register(_square_case("trtri", _triangle, ("trtri", "trmm")))
register(_square_case("lauum", _triangle, ("lauum", "syrk", "trmm")))
register(_square_case("potri", _triangle, ("trtri", "trmm", "lauum", "syrk")))
register(_square_case("poti", _spd, ("potrf", "trsm", "syrk", "trtri", "trmm", "lauum")))


def shapes_for(case: Case, specs: Sequence[str] | None) -> tuple[Shape, ...]:
    """The shapes to measure for ``case``: parsed from ``specs``, or the case's defaults."""
    return case.default_shapes if specs is None else parse_shapes(specs, case)
