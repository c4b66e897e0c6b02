"""Morton ordering of points."""

from __future__ import annotations

import numpy as np
import pytest

from tricov.tlr import morton_order


def _morton_key_2d(ix: int, iy: int, bits: int) -> int:
    key = 0
    for b in range(bits):
        key |= ((ix >> b) & 1) << (2 * b)
        key |= ((iy >> b) & 1) << (2 * b + 1)
    return key


def test_4x4_grid_follows_the_z_curve():
    pts = np.array([(x, y) for y in range(4) for x in range(4)], dtype=float)
    order = morton_order(pts[::-1])  # input order must not matter
    got = [tuple(p) for p in pts[::-1][order].astype(int)]
    expected = sorted(((x, y) for y in range(4) for x in range(4)),
                      key=lambda p: _morton_key_2d(p[0], p[1], 2))
    assert got == expected
    assert got[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_permutation_of_any_dimension(d):
    pts = np.random.default_rng(d).random((257, d))
    order = morton_order(pts)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order), np.arange(257))


def test_one_dimensional_input_sorts_coordinates():
    x = np.random.default_rng(0).random(100)
    np.testing.assert_array_equal(morton_order(x), np.argsort(x, kind="stable"))


def test_ties_keep_input_order_and_degenerate_inputs():
    pts = np.zeros((5, 2))
    np.testing.assert_array_equal(morton_order(pts), np.arange(5))
    assert morton_order(np.zeros((0, 3))).size == 0


def test_locality_consecutive_points_are_close():
    rng = np.random.default_rng(3)
    g = np.stack(np.meshgrid(np.arange(32), np.arange(32)), -1).reshape(-1, 2) / 32.0
    g = g[rng.permutation(len(g))]
    z = g[morton_order(g)]
    step_z = np.linalg.norm(np.diff(z, axis=0), axis=1).mean()
    step_r = np.linalg.norm(np.diff(g, axis=0), axis=1).mean()
    assert step_z < 2.0 / 32 < step_r / 5


def test_common_scale_keeps_the_domain_shape():
    # A 2 x 8 strip: cells are squares, so the curve sweeps 2 x 2 blocks of points in turn
    # (scaling each axis to its own range would instead run along the whole first row).
    pts = np.array([(x, y) for y in range(2) for x in range(8)], dtype=float) / 2
    z = pts[morton_order(pts, bits=3)]
    for b in range(4):
        block = z[4 * b:4 * b + 4]
        assert set(block[:, 1]) == {0.0, 0.5}
        assert np.ptp(block[:, 0]) == 0.5


@pytest.mark.parametrize("bad, match", [
    (np.zeros((3, 2, 2)), "1-D or 2-D"),
    (np.zeros((3, 65)), "1 to 64"),
    (np.array([[0.0, np.nan]]), "NaN"),
])
def test_invalid_points(bad, match):
    with pytest.raises(ValueError, match=match):
        morton_order(bad)


@pytest.mark.parametrize("bits", [0, 33, 2.5, True])
def test_invalid_bits(bits):
    with pytest.raises(ValueError, match="bits"):
        morton_order(np.zeros((3, 2)), bits=bits)
