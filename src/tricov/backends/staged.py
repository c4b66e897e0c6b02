"""Recursive TRMM and TRSM run out of place on a GPU, in few or large calls.

**TRMM.** A recursive TRMM runs as a few batched calls instead of one call per node.

The in-place TRMM recursion (:func:`tricov.recursive.trmm`) is a chain: each GEMM must follow
the recursion below its right half and precede the one below its left half, so on a GPU, where
a call on a small block costs its launch and little else, the many small leaves and products
near the bottom of the tree set the pace. The recursion's values do not need that order,
though. Every product ``B2 += alpha A21 B1`` reads a block of B that nothing has written yet
(the recursion below ``B1`` runs after it), and every leaf ``B_d <- alpha A_dd B_d`` is the
first to write its rows (the products that add to them run after the recursion below them). So
with a workspace ``W`` of B's shape:

1. every leaf runs first, ``W_d <- alpha A_dd B_d``: same-sized leaves, whose blocks lie at
   equal strides along the diagonal, in one batched call (on the GPU one strided-batched GEMM
   on zero-padded copies of the triangles);
2. then every product off the *spine* (the nodes whose input half holds the first leaf, the
   one no product adds to), reading B and adding to ``W``: products of one shape whose blocks
   lie at equal strides (the nodes of one level of the tree) in one strided-batched GEMM.
   Their blocks are disjoint (distinct nodes of one size are disjoint), and all of them add;
3. then the spine's products, outermost (largest ``B1``) first, each
   ``B2 <- alpha A21 B1 + W2`` (a GEMM whose output is not its input C, cuBLASLt's on the
   GPU): the rows ``B2`` hold their result, and the input ``B1`` is still unwritten, as the
   later spine products only write inside it;
4. last, the first leaf's rows are copied from ``W`` to B.

A TRMM on ``m`` rows with leaves of ``nb`` rows then takes about ``2 log2(m / nb) + 2`` calls
rather than ``2 m / nb``, with the same products summed in another order, and copies one
leaf's rows rather than all of B (on one H100, float64 TRMM of 4096 x 4096, a copy of B had
taken 6% of the call). For B of fewer than :data:`SPINE_COLUMNS` columns, where a copy costs
little and a GEMM per level more, B is copied to ``W`` first and every leaf and product reads
``W`` and writes B (steps 1 and 2 with B and ``W`` exchanged; no spine, no final copy).

**TRSM.** A solve's recursion is a true chain: each leaf needs the products above it. What
makes it slow on a GPU is the leaf, a substitution on a few columns of B in few blocks of
threads. Given the inverses of the diagonal blocks (where they are well conditioned) a leaf is
a GEMM, but a GEMM cannot write over its input: so the right-hand sides move between B and a
workspace ``W`` (:class:`SolveInto`). Each product reads the solved rows from B and writes the
rows it updates to ``W`` (the first product on a block reads it from B: a GEMM whose output is
not its input C, cuBLASLt's on the GPU); each leaf reads ``W_d`` and writes
``B_d <- alpha A_dd^-1 W_d``. Only the first leaf, which no product updates, solves into ``W``
and is copied back: one leaf's rows are copied rather than all of B (on one H100, float64 TRSM
of 8192 x 8192, that copy had taken 3% of the call).

Wide B is taken in panels of columns (the columns of both operations are independent), so that
``W`` stays within a budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from .._views import Mat

__all__ = ["SPINE_COLUMNS", "SolveInto", "StagedTrmm", "Stager", "block_in", "panels", "run",
           "runs", "solve"]

#: Columns of B from which a staged TRMM runs without the copy of B (the spine's products
#: written into B; see the module notes), below which on the copy. On one H100 (float64, best
#: of 5, three alternating rounds; benchmarks/gpu_trmm_spine_ab_h100.txt, F / C order): the
#: copy is 13 / 7% faster at 16384 x 64 and 1 / 6% at 16384 x 256 (a copy of narrow B costs
#: little, and the spine adds a GEMM per level); the spine 3 / 3% at 16384 x 1024, 6 / 8% at
#: 4096 x 4096, 4 / 5% at 8192 x 8192.
SPINE_COLUMNS = 1024


class Stager(Protocol):
    """What an executor provides to run a staged TRMM (the batched primitives of
    :class:`~tricov.backends.base.Executor` and a copy)."""

    def gemm(self, alpha: complex, a: Mat, b: Mat, beta: complex, c: Mat, count: int = 1,
             steps: tuple[int, int, int] = (0, 0, 0), out: Mat | None = None) -> None: ...

    def trmm_from(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat, dst: Mat,
                  count: int = 1, steps: tuple[int, int, int] = (0, 0, 0)) -> None: ...

    def trsm_into(self, lower: bool, unit: bool, alpha: complex, a: Mat, src: Mat,
                  dst: Mat) -> None: ...

    def stage_block(self, view: Mat, copy: bool) -> Mat:
        """The memory block of ``view`` in new memory (a copy if ``copy``), as the same logical
        view (leading dimension its rows), kept alive until the work queued so far is done."""
        ...

    def copy_into(self, src: Mat, dst: Mat) -> None:
        """Copy the memory block of ``src`` over that of ``dst`` (same shape and layout)."""
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


def _span(b: Mat, view: Mat) -> tuple[int, int]:
    """The logical rows ``[first, last)`` of ``b`` that ``view`` (a block of its rows) holds."""
    offset = (view.ptr - b.ptr) // b.itemsize
    first = offset // b.ld if view.t else offset % b.ld
    return first, first + view.rows


def _within(span: tuple[int, int], outer: tuple[int, int]) -> bool:
    return outer[0] <= span[0] and span[1] <= outer[1]


def block_in(b: Mat, work: Mat, view: Mat) -> Mat:
    """The block of ``work`` (a block of memory of the shape and layout of ``b``) that ``view``
    (a block of ``b``) is in ``b``."""
    size = b.itemsize
    offset, rem = divmod(view.ptr - b.ptr, size)
    i, j = offset % b.ld, offset // b.ld
    if rem or view.op != b.op or i + view.mrows > b.mrows or j + view.mcols > b.mcols:
        raise AssertionError("a staged operation reaches outside B")
    return Mat(work.ptr + (i + j * work.ld) * size, view.mrows, view.mcols, work.ld, view.op,
               size)


class StagedTrmm:
    """Stands in for the executor of one TRMM recursion on ``b``: records its leaves and
    products, then runs them in batches on ``ex`` (see the module notes).

    Parameters
    ----------
    ex : Stager
        The executor that runs the batches.
    b : Mat
        The right-hand sides the recursion multiplies, in place.
    spine : bool
        Run the schedule without the copy of B (the spine's products into B); else on a copy.
    """

    def __init__(self, ex: Stager, b: Mat, spine: bool) -> None:
        self.ex, self.b, self.spine = ex, b, spine
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

    def run(self) -> None:
        """Run what was recorded (see the module notes): on a copy of B, the leaves and the
        products from W into B; else the leaves into W, the products off the spine into W, the
        spine's products into B, and the first leaf's copy."""
        ex, b = self.ex, self.b
        work = ex.stage_block(b, not self.spine)
        spine = []
        if self.spine:  # the products' outputs cover every row but the first leaf's
            spans = [_span(b, c) for _, _, _, _, c in self.products]
            covered = (min(lo for lo, _ in spans), max(hi for _, hi in spans))
            first = next(i for i, leaf in enumerate(self.leaves)
                         if not _within(_span(b, leaf[4]), covered))
            head = _span(b, self.leaves[first][4])
            rest = []
            for alpha, a, x, beta, c in self.products:
                if _within(head, _span(b, x)):
                    spine.append((alpha, a, x, beta, c))
                else:
                    rest.append((alpha, a, x, beta, block_in(b, work, c)))
            leaves = [(lower, unit, alpha, a, d, block_in(b, work, d))
                      for lower, unit, alpha, a, d in self.leaves]
        else:
            rest = [(alpha, a, block_in(b, work, x), beta, c)
                    for alpha, a, x, beta, c in self.products]
            leaves = [(lower, unit, alpha, a, block_in(b, work, d), d)
                      for lower, unit, alpha, a, d in self.leaves]
        for group, steps in runs(leaves, lambda t: t[:3] + _shape(t[3]) + _shape(t[5]),
                                 lambda t: (t[3].ptr, t[4].ptr, t[5].ptr)):
            lower, unit, alpha, a, src, dst = group[0]
            ex.trmm_from(lower, unit, alpha, a, src, dst, len(group), steps)
        for group, steps in runs(
                rest, lambda t: (t[0], t[3]) + _shape(t[1]) + _shape(t[2]) + _shape(t[4]),
                lambda t: (t[1].ptr, t[2].ptr, t[4].ptr)):
            alpha, a, x, beta, c = group[0]
            ex.gemm(alpha, a, x, beta, c, len(group), steps)
        for alpha, a, x, beta, c in sorted(spine, key=lambda t: -t[2].rows):  # outermost first
            ex.gemm(alpha, a, x, beta, block_in(b, work, c), out=c)
        if self.spine:
            d = self.leaves[first][4]
            ex.copy_into(block_in(b, work, d), d)


def run(ex: Stager, b: Mat, body: Callable[[Any, Mat], None], budget: int) -> None:
    """Run the TRMM recursion ``body(stage, panel)`` on each panel of ``b`` (its workspace
    within ``budget`` bytes): recorded by a :class:`StagedTrmm`, then run in batches."""
    for panel in panels(b, budget):
        stage = StagedTrmm(ex, panel, panel.cols >= SPINE_COLUMNS)
        body(stage, panel)
        stage.run()


class SolveInto:
    """Stands in for the executor of one TRSM recursion on ``b``, out of place between B and
    the workspace ``work`` (see the module notes).

    A product ``C <- alpha A X + beta C`` reads the solved rows X from B and writes its result
    to W: the first one to update a block of rows reads C from B (a GEMM whose output is not
    its input, :meth:`Stager.gemm` with ``out``), later ones update W in place. A leaf reads
    its right-hand sides from W where a product has updated them and writes the solution to
    B; a leaf no product updated (the first the recursion solves) solves into W and its
    solution is copied to B.

    Parameters
    ----------
    ex : Stager
        The executor that runs the calls.
    b : Mat
        The right-hand sides the recursion solves for.
    work : Mat
        A block of memory of the shape and layout of ``b``.
    """

    def __init__(self, ex: Stager, b: Mat, work: Mat) -> None:
        self.ex, self.b, self.work = ex, b, work
        self._moved: list[tuple[int, int]] = []  # logical row spans of B whose values are in W

    def _in_work(self, view: Mat) -> bool:
        span = _span(self.b, view)
        return any(_within(span, moved) for moved in self._moved)

    def trsm(self, lower: bool, unit: bool, alpha: complex, a: Mat, b: Mat) -> None:
        """The leaf ``X_b <- alpha A^-1 B_b`` into B."""
        w = block_in(self.b, self.work, b)
        if self._in_work(b):
            self.ex.trsm_into(lower, unit, alpha, a, w, b)
        else:
            self.ex.trsm_into(lower, unit, alpha, a, b, w)
            self.ex.copy_into(w, b)

    def gemm(self, alpha: complex, a: Mat, b: Mat, beta: complex, c: Mat) -> None:
        """The product ``C <- alpha A X + beta C`` (X: ``b``, solved rows) into W."""
        w = block_in(self.b, self.work, c)
        if self._in_work(c):
            self.ex.gemm(alpha, a, b, beta, w)
        else:
            self.ex.gemm(alpha, a, b, beta, c, out=w)
            self._moved.append(_span(self.b, c))


def solve(ex: Stager, b: Mat, body: Callable[[Any, Mat], None], budget: int) -> None:
    """Run the TRSM recursion ``body(stage, panel)`` on each panel of ``b`` (its workspace
    within ``budget`` bytes) through a :class:`SolveInto`."""
    for panel in panels(b, budget):
        body(SolveInto(ex, panel, ex.stage_block(panel, False)), panel)
