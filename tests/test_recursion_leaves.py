"""The leaves of the TRSM recursion (what ``Executor.run_trsm`` is told is what runs) and the
steps of POTRF's."""

from __future__ import annotations

import numpy as np
import pytest

import tricov as tc
from tricov import _options as opt
from tricov._policy import LeafSizes, leaf_sizes, trsm_leaf
from tricov._views import Mat
from tricov.backends.base import Executor
from tricov.recursive import leaf_rows, trsm
from tricov.recursive.cholesky import potrf

BASE_A, BASE_B, ITEM = 1 << 20, 1 << 40, 8


class _Recorder(Executor):
    """Records the announced leaf size and the (first row, rows) of every leaf."""

    def __init__(self) -> None:
        super().__init__(np.float64)
        self.block: int | None = None
        self.leaves: list[tuple[int, int]] = []

    def run_trsm(self, lower, unit, a, b, block, body):
        self.block = block
        body(self, b)

    def trsm(self, lower, unit, alpha, a, b):
        first = (b.ptr - BASE_B) // ITEM
        assert a.ptr == BASE_A + first * (a.ld + 1) * ITEM  # the diagonal block of b's rows
        self.leaves.append((first, b.rows))

    def gemm(self, alpha, a, b, beta, c):
        pass


@pytest.mark.parametrize("m", [1, 2, 31, 32, 33, 100, 255, 256, 257, 300, 1000, 1023, 4097])
@pytest.mark.parametrize("leaf", [1, 3, 32, 48, 128, 200, 256])
@pytest.mark.parametrize("lower", [True, False])
def test_leaves_are_uniform_but_the_last(m, leaf, lower):
    a = Mat(BASE_A, m, m, m, opt.N, ITEM)
    b = Mat(BASE_B, m, 5, m, opt.N, ITEM)
    ex = _Recorder()
    trsm(ex, LeafSizes(trsm=leaf), lower, False, 1.0, a, b)
    block = ex.block
    assert block == leaf_rows(m, leaf) and 1 <= block <= max(leaf, 1)
    leaves = sorted(ex.leaves)
    assert [first for first, _ in leaves] == [i * block for i in range(len(leaves))]
    assert all(rows == block for _, rows in leaves[:-1])
    assert 1 <= leaves[-1][1] <= max(leaf, 1) and sum(rows for _, rows in leaves) == m
    if leaf & (leaf - 1) == 0:  # a power of two: the last leaf is no longer than the others
        assert leaves[-1][1] <= block
    if not lower:  # the backward recursion meets them from the bottom up
        assert ex.leaves == leaves[::-1]


def test_wide_right_hand_sides_are_one_leaf():
    m = 600
    a, b = Mat(BASE_A, m, m, m, opt.N, ITEM), Mat(BASE_B, m, 900, m, opt.N, ITEM)
    ex = _Recorder()
    trsm(ex, LeafSizes(trsm=64, trsm_rhs=512), True, False, 1.0, a, b)
    assert ex.block == m and ex.leaves == [(0, m)]


@pytest.mark.parametrize("rows,cols,want", [
    (16384, 64, 512), (16384, 1024, 512), (8192, 512, 512),   # narrow: its own leaf
    (16384, 1025, 256), (8191, 64, 256), (4096, 64, 256),     # too wide, or too few rows
    (16384, 2048, 16384),                                     # wide: one leaf (trsm_rhs)
])
def test_trsm_leaf_for_narrow_right_hand_sides(rows, cols, want):
    nb = LeafSizes(trsm=256, trsm_narrow=512, trsm_rhs=2048)
    assert trsm_leaf(nb, rows, cols) == want
    plain = LeafSizes(trsm=256, trsm_rhs=2048)  # no narrow leaf: trsm below trsm_rhs
    assert trsm_leaf(plain, rows, cols) == (rows if cols >= 2048 else 256)


@pytest.mark.parametrize("rows,want", [
    (100, 512), (255, 512), (256, 128), (767, 128), (1023, 128), (1024, 256), (2047, 256),
    (2048, 512), (16384, 512),
])
def test_trsm_leaf_for_few_rows(rows, want):
    """With ``trsm_min``, B of at least twice as many rows gets leaves of at most a quarter of
    its rows (``trsm_min`` times a power of two), up to ``trsm``; fewer rows, one leaf."""
    assert trsm_leaf(LeafSizes(trsm=512, trsm_min=128), rows, rows) == want
    assert trsm_leaf(LeafSizes(trsm=512), rows, rows) == 512


def test_narrow_right_hand_sides_recurse_to_their_leaf():
    m, cols = 16384, 64
    a, b = Mat(BASE_A, m, m, m, opt.N, ITEM), Mat(BASE_B, m, cols, m, opt.N, ITEM)
    ex = _Recorder()
    trsm(ex, LeafSizes(trsm=256, trsm_narrow=512), True, False, 1.0, a, b)
    assert ex.block == 512 and ex.leaves == [(k, 512) for k in range(0, m, 512)]


def test_setting_the_trsm_leaf_drops_the_narrow_and_small_leaves():
    dt = np.float64
    try:
        assert trsm_leaf(leaf_sizes("gpu", dt), 512, 512) == 128  # the GPU default's trsm_min
        tc.set_leaf_size("gpu", "trsm", dt, 512)
        assert leaf_sizes("gpu", dt).trsm_narrow == leaf_sizes("gpu", dt).trsm_min == 0
        assert trsm_leaf(leaf_sizes("gpu", dt), 512, 512) == 512
        tc.set_leaf_size("gpu", "trsm", dt, 128)
        assert trsm_leaf(leaf_sizes("gpu", dt), 16384, 64) == 128
        tc.set_leaf_size("gpu", "trsm_narrow", dt, 1024)
        assert trsm_leaf(leaf_sizes("gpu", dt), 16384, 64) == 1024
        assert leaf_sizes("gpu", dt).trsm == 128
    finally:
        tc.set_leaf_size("gpu", "trsm", dt, None)
    assert leaf_sizes("gpu", dt).trsm_narrow == 512  # the GPU default for float64


class _Steps(Executor):
    """Records POTRF's steps: ``("panel", first row, rows, columns)`` of the panels it fuses
    (those of at most ``fuses`` columns), ``("leaf", first row, rows)`` of its leaves and
    ``("trsm", rows, columns)`` of the solves below the leaves."""

    def __init__(self, fuses: int) -> None:
        super().__init__(np.float64)
        self.fuses, self.steps = fuses, []

    def _first(self, a: Mat) -> int:
        return (a.ptr - BASE_A) // ITEM % a.ld

    def potrf_panel(self, a, offset):
        if a.cols > self.fuses:
            return None
        self.steps.append(("panel", self._first(a), a.rows, a.cols))
        return True

    def potrf(self, a, offset):
        self.steps.append(("leaf", self._first(a), a.rows))
        return True

    def trsm(self, lower, unit, alpha, a, b):
        self.steps.append(("trsm", b.cols, b.rows))  # B is A21^T

    def herk(self, alpha, a, beta, c):
        pass

    def gemm(self, alpha, a, b, beta, c):
        pass


@pytest.mark.parametrize("n, leaf, panel, fuses, want", [
    (4096, 2048, 512, 4096, [("panel", 512 * k, 4096 - 512 * k, 512) for k in range(4)]
     + [("leaf", 2048, 2048)]),
    # the rows above the last leaf in the fewest steps of at most 512, as equal as they come
    (2600, 2048, 512, 4096, [("panel", 0, 2600, 276), ("panel", 276, 2324, 276),
                             ("leaf", 552, 2048)]),
    (2100, 2048, 512, 4096, [("panel", 0, 2100, 52), ("leaf", 52, 2048)]),
    # an executor without the fused kernel: the leaf, then the TRSM below it
    (2600, 2048, 512, 0, [("leaf", 0, 276), ("trsm", 2324, 276), ("leaf", 276, 276),
                          ("trsm", 2048, 276), ("leaf", 552, 2048)]),
    # no panels: the smaller block first, and nothing fused
    (3000, 2048, 0, 4096, [("leaf", 0, 952), ("trsm", 2048, 952), ("leaf", 952, 2048)]),
    # above two leaves, halves by powers of two; panels inside them
    (8192, 2048, 1024, 4096, [("panel", 0, 4096, 1024), ("panel", 1024, 3072, 1024),
                              ("leaf", 2048, 2048), ("trsm", 4096, 4096),
                              ("panel", 4096, 4096, 1024), ("panel", 5120, 3072, 1024),
                              ("leaf", 6144, 2048)]),
])
def test_potrf_steps(n, leaf, panel, fuses, want):
    ex = _Steps(fuses)
    a = Mat(BASE_A, n, n, n, opt.N, ITEM)
    whole = 1 << 20  # TRSM and HERK in one leaf each
    assert potrf(ex, LeafSizes(potrf=leaf, potrf_panel=panel, trsm=whole, syrk=whole), a)
    assert ex.steps == want


def test_potrf_panel_crossover_can_be_turned_off():
    dt = np.float32
    try:
        assert leaf_sizes("gpu", dt).potrf_panel == 512  # the GPU default for float32
        tc.set_leaf_size("gpu", "potrf_panel", dt, 0)
        assert leaf_sizes("gpu", dt).potrf_panel == 0
        with pytest.raises(ValueError, match="at least 0"):
            tc.set_leaf_size("gpu", "potrf_panel", dt, -1)
        with pytest.raises(ValueError, match="at least 1"):
            tc.set_leaf_size("gpu", "potrf", dt, 0)
    finally:
        tc.set_leaf_size("gpu", "potrf", dt, None)
