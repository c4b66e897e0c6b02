"""Parsing of BLAS option letters, and the algebra of transposes and conjugates.

Every operand of tricov is seen through a *logical view*: the matrix the caller means is
``op(M)`` where ``M`` is a column-major block of memory and ``op`` is one of four operations,

==== ============== ===========
op   meaning        bits (t, c)
==== ============== ===========
N    ``M``          (0, 0)
T    ``M^T``        (1, 0)
R    ``conj(M)``    (0, 1)
C    ``M^H``        (1, 1)
==== ============== ===========

They form the group Z2 x Z2 under composition, so composing is XOR of two bits: the variant
identities of the design (a right-side op is a left-side op on ``B^T``; ``uplo=U`` is ``uplo=L``
on ``A^T``; a C-ordered array is the transpose of an F-ordered one) are all compositions.
BLAS can apply N, T and C to an operand but not R, which is why the front ends check
:func:`blas_letter` before they run.
"""

from __future__ import annotations

from typing import Final

N: Final = 0
T: Final = 1
R: Final = 2
C: Final = 3

_LETTERS: Final = {"N": N, "T": T, "C": C}


def _letter(value: object, name: str, allowed: str) -> str:
    if not isinstance(value, str) or len(value) != 1 or value.upper() not in allowed:
        choices = ", ".join(repr(x) for x in allowed)
        raise ValueError(f"{name} must be one of {choices} (case-insensitive), got {value!r}")
    return value.upper()


def parse_side(side: object) -> bool:
    """Return True for a left-side operation (``side='L'``)."""
    return _letter(side, "side", "LR") == "L"


def parse_uplo(uplo: object) -> bool:
    """Return True for the lower triangle (``uplo='L'``)."""
    return _letter(uplo, "uplo", "LU") == "L"


def parse_trans(trans: object, *, complex_: bool, hermitian: bool = False) -> int:
    """Return the op code of a ``trans`` letter.

    For real data 'C' means 'T'. Where the operation is Hermitian (herk), the complex
    transpose without conjugation is not defined and is refused.
    """
    letter = _letter(trans, "trans", "NTC")
    op = _LETTERS[letter]
    if not complex_ and op == C:
        return T
    if complex_ and hermitian and op == T:
        raise ValueError(
            "trans='T' is not defined for complex syrk, which computes the Hermitian product "
            "(herk); use trans='C'"
        )
    return op


def parse_diag(diag: object) -> bool:
    """Return True for a unit diagonal (``diag='U'``)."""
    return _letter(diag, "diag", "NU") == "U"


def compose(a: int, b: int) -> int:
    """The op code of ``a`` applied after ``b`` (XOR of the two bits)."""
    return a ^ b


def has_t(op: int) -> bool:
    """Whether ``op`` transposes."""
    return bool(op & T)


def has_c(op: int) -> bool:
    """Whether ``op`` conjugates."""
    return bool(op & R)


def blas_letter(op: int, complex_: bool) -> bytes:
    """The BLAS letter for ``op``; raises for R (conjugate without transpose) on complex data."""
    if not complex_:
        return b"T" if op & T else b"N"
    if op == R:
        raise AssertionError("conjugate-without-transpose reached a BLAS call")
    return (b"N", b"T", b"", b"C")[op]
