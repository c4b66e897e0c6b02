"""The leaves of the TRSM recursion: what ``Executor.run_trsm`` is told is what runs."""

from __future__ import annotations

import numpy as np
import pytest

import tricov as tc
from tricov import _options as opt
from tricov._policy import LeafSizes, leaf_sizes, trsm_leaf
from tricov._views import Mat
from tricov.backends.base import Executor
from tricov.recursive import leaf_rows, trsm

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
