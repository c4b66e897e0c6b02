"""A recursive TRMM run as a few batched calls instead of one call per node.

The in-place TRMM recursion (:func:`tricov.recursive.trmm`) is a chain: each GEMM must follow
the recursion below its right half and precede the one below its left half, so on a GPU, where
a call on a small block costs its launch and little else, the many small leaves and products
near the bottom of the tree set the pace. The recursion's values do not need that order,
though. Every product ``B2 += alpha A21 B1`` reads a block of B that nothing has written yet
(the recursion below ``B1`` runs after it), and every leaf ``B_d <- alpha A_dd B_d`` is the
first to write its rows (the products that add to them run after the recursion below them). So
with a copy ``W`` of B's input:

1. every leaf runs first, ``B_d <- alpha A_dd W_d``: same-sized leaves, whose blocks lie at
   equal strides along the diagonal, in one batched call (on the GPU one strided-batched GEMM
   on zero-padded copies of the triangles);
2. then every product, reading ``W`` instead of B: products of one shape whose blocks lie at
   equal strides (the nodes of one level of the tree) in one strided-batched GEMM. Their
   blocks of B are disjoint (distinct nodes of one size are disjoint), and all of them add.

A TRMM on ``m`` rows with leaves of ``nb`` rows then takes about ``log2(m / nb) + 2`` calls
rather than ``2 m / nb``, with the same products summed in another order. Wide B is taken in
panels of columns (columns of a TRMM are independent), so that ``W`` stays within a budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from .._views import Mat

__all__ = ["StagedTrmm", "Stager", "panels", "run", "runs"]


class Stager(Protocol):
    """What an executor provides to run a staged TRMM (the batched primitives of
    :class:`~tricov.backends.base.Executor` and a copy)."""

    def gemm(self, alpha: complex, a: Mat, b: Mat, beta: complex, c: Mat, count: int = 1,
             steps: tuple[int, int, int] = (0, 0, 0)) -> None: ...

    def trmm_from(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat, dst: Mat,
                  count: int = 1, steps: tuple[int, int, int] = (0, 0, 0)) -> None: ...

    def copy_block(self, view: Mat) -> Mat:
        """A copy of the memory block of ``view``, as the same logical view of new memory
        (leading dimension its rows), kept alive until the work queued so far is done."""
        ...


def panels(b: Mat, budget: int) -> Iterator[Mat]:
    """Logical column panels of ``b`` whose memory takes at most ``budget`` bytes (at least
    one column each)."""
    width = max(1, budget // max(1, b.rows * b.itemsize))
    for j in range(0, b.cols, width):
        yield b.block(0, b.rows, j, min(b.cols, j + width))


def runs(items: Sequence[Any], key: Callable[[Any], Any],
         ptrs: Callable[[Any], tuple[int, ...]]) -> Iterator[tuple[list[Any], tuple[int, ...]]]:
    """Split ``items`` into runs that one batched call takes: the same ``key``, and addresses
    ``ptrs(item)`` that step by the same non-negative byte distances from one member to the
    next (in the order of the last address). Yields ``(members, steps)``."""
    groups: dict[Any, list[Any]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    for members in groups.values():
        members.sort(key=lambda item: ptrs(item)[-1])
        run, steps = [members[0]], None
        for item in members[1:]:
            step = tuple(p - q for p, q in zip(ptrs(item), ptrs(run[-1]), strict=True))
            if min(step) >= 0 and (steps is None or step == steps):
                run.append(item)
                steps = step
                continue
            yield run, steps or (0,) * len(step)
            run, steps = [item], None
        yield run, steps or (0,) * len(ptrs(members[0]))


def _shape(view: Mat) -> tuple[int, int, int, int]:
    return view.mrows, view.mcols, view.ld, view.op


class StagedTrmm:
    """Stands in for the executor of one TRMM recursion on ``b``: records its leaves and
    products, then runs them in batches on ``ex`` (see the module notes).

    Parameters
    ----------
    ex : Stager
        The executor that runs the batches.
    b : Mat
        The right-hand sides the recursion multiplies, in place.
    """

    def __init__(self, ex: Stager, b: Mat) -> None:
        self.ex, self.b = ex, b
        self.leaves: list[tuple[bool, bool, complex, Mat, Mat]] = []
        self.products: list[tuple[complex, Mat, Mat, complex, Mat]] = []

    def trmm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        """Record the leaf ``B <- alpha A B``."""
        self.leaves.append((lower, unit, alpha, a, b))

    def gemm(self, alpha: complex, a: Mat, b: Mat, beta: complex, c: Mat) -> None:
        """Record the product ``C <- alpha A B + beta C`` (B a block of the input)."""
        if beta != 1:
            raise AssertionError("a staged TRMM product must add to its block")
        self.products.append((alpha, a, b, beta, c))

    def _from(self, work: Mat, view: Mat) -> Mat:
        """The block of the copy ``work`` that ``view`` (a block of B) is in B."""
        b, size = self.b, self.b.itemsize
        offset, rem = divmod(view.ptr - b.ptr, size)
        i, j = offset % b.ld, offset // b.ld
        if rem or view.op != b.op or i + view.mrows > b.mrows or j + view.mcols > b.mcols:
            raise AssertionError("a staged TRMM product reads outside B")
        return Mat(work.ptr + (i + j * work.ld) * size, view.mrows, view.mcols, work.ld,
                   view.op, size)

    def run(self) -> None:
        """Run what was recorded: the copy of B, the leaves, then the products."""
        ex = self.ex
        work = ex.copy_block(self.b)
        products = [(alpha, a, self._from(work, b), beta, c)
                    for alpha, a, b, beta, c in self.products]
        leaves = [(lower, unit, alpha, a, self._from(work, b), b)
                  for lower, unit, alpha, a, b in self.leaves]
        for group, steps in runs(leaves, lambda t: t[:3] + _shape(t[3]) + _shape(t[5]),
                                 lambda t: (t[3].ptr, t[4].ptr, t[5].ptr)):
            lower, unit, alpha, a, src, dst = group[0]
            ex.trmm_from(lower, unit, alpha, a, src, dst, len(group), steps)
        for group, steps in runs(
                products, lambda t: (t[0], t[3]) + _shape(t[1]) + _shape(t[2]) + _shape(t[4]),
                lambda t: (t[1].ptr, t[2].ptr, t[4].ptr)):
            alpha, a, b, beta, c = group[0]
            ex.gemm(alpha, a, b, beta, c, len(group), steps)


def run(ex: Stager, b: Mat, body: Callable[[Any, Mat], None], budget: int) -> None:
    """Run the TRMM recursion ``body(stage, panel)`` on each panel of ``b`` (the copy of a
    panel within ``budget`` bytes): recorded by a :class:`StagedTrmm`, then run in batches."""
    for panel in panels(b, budget):
        stage = StagedTrmm(ex, panel)
        body(stage, panel)
        stage.run()
