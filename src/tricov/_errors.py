"""Exceptions raised by tricov, carrying LAPACK's information."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["NotPositiveDefiniteError", "SingularMatrixError"]


class NotPositiveDefiniteError(np.linalg.LinAlgError):
    """A leading minor is not positive (or is NaN): the Cholesky factorization failed.

    Attributes
    ----------
    order : int
        The 1-based order of the first leading minor that is not positive definite
        (LAPACK's ``info``). For batched operations, that of the first failing member.
    indices : tuple of int
        Batched operations only: the batch indices of every failing member.
    orders : tuple of int
        Batched operations only: the leading-minor order of each failing member.
    """

    def __init__(
        self,
        order: int,
        *,
        indices: Sequence[int] = (),
        orders: Sequence[int] = (),
        message: str | None = None,
    ) -> None:
        self.order = int(order)
        self.indices = tuple(int(i) for i in indices)
        self.orders = tuple(int(k) for k in orders)
        if message is None:
            message = (
                f"the leading minor of order {self.order} is not positive definite "
                "(or holds NaN); the factorization could not be completed"
            )
        super().__init__(message)


class SingularMatrixError(np.linalg.LinAlgError):
    """A triangular matrix has an exactly zero diagonal element and cannot be inverted.

    Attributes
    ----------
    index : int
        The 1-based index of the first zero diagonal element (LAPACK's ``info``).
    indices, orders : tuple of int
        Batched operations only: failing batch members and each one's ``index``.
    """

    def __init__(
        self,
        index: int,
        *,
        indices: Sequence[int] = (),
        orders: Sequence[int] = (),
        message: str | None = None,
    ) -> None:
        self.index = int(index)
        self.indices = tuple(int(i) for i in indices)
        self.orders = tuple(int(k) for k in orders)
        if message is None:
            message = f"the triangular matrix is singular: diagonal element {self.index} is zero"
        super().__init__(message)
