"""Numba's on-disk caches of tricov are dropped when any Numba source changes.

Numba revalidates a cached function against its own file only; functions inlined from other
modules (simd and lanes into the batched kernels) would otherwise run stale after an edit or
an upgrade (:func:`tricov.kernels.numba.drop_stale_caches`).
"""

from __future__ import annotations

from pathlib import Path

from tricov.kernels import numba as kernels


def _tree(root: Path) -> tuple[Path, Path, Path]:
    """A package with a Numba module, an inlined helper in another directory, a module that does
    not mention Numba, and a cache file beside each."""
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    user = root / "user.py"
    user.write_text("from numba import njit\nfrom .sub.helper import f\n")
    helper = root / "sub" / "helper.py"
    helper.write_text("from numba import njit\n\n@njit\ndef f(x):\n    return x + 1\n")
    plain = root / "plain.py"
    plain.write_text("X = 1\n")
    return user, helper, plain


def _caches(root: Path) -> list[Path]:
    """Write one cache index and one data file in each ``__pycache__``; return them."""
    files = [root / "__pycache__" / "user.f-1.py311.nbi", root / "sub" / "__pycache__" /
             "helper.f-3.py311.1.nbc"]
    for f in files:
        f.write_bytes(b"cached")
    return files


def test_caches_follow_the_numba_sources(tmp_path: Path) -> None:
    user, helper, plain = _tree(tmp_path)
    pyc = tmp_path / "__pycache__" / "user.cpython-311.pyc"
    pyc.write_bytes(b"bytecode")
    files = _caches(tmp_path)
    assert kernels.drop_stale_caches(tmp_path)  # no stamp yet: dropped
    assert not any(f.exists() for f in files) and pyc.exists()
    files = _caches(tmp_path)
    assert not kernels.drop_stale_caches(tmp_path)  # nothing changed: kept
    assert all(f.exists() for f in files)
    plain.write_text("X = 2\n")
    assert not kernels.drop_stale_caches(tmp_path)  # not a Numba source: kept
    assert all(f.exists() for f in files)
    helper.write_text(helper.read_text().replace("x + 1", "x + 2"))
    assert kernels.drop_stale_caches(tmp_path)  # the inlined helper changed: all dropped
    assert not any(f.exists() for f in files)
    assert user.exists() and helper.exists()


def test_the_installed_package_is_stamped() -> None:
    """Importing the kernels stamped tricov's own caches: a second look finds them current."""
    assert not kernels.drop_stale_caches()
    assert (kernels.ROOT / "__pycache__" / kernels.STAMP).is_file()
