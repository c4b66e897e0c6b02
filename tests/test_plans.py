"""The plan cache of captured CUDA graphs: what it keeps (checked without a GPU)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from tricov import _plans


class _Executor:
    def __init__(self, nbytes: int) -> None:
        self._keep = [np.empty(nbytes, dtype=np.uint8), object()]


def _plan(nbytes: int) -> _plans._Plan:
    return _plans._Plan(None, _Executor(nbytes), None)


def test_plans_beyond_the_workspace_budget_are_dropped_oldest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plans, "_plans", OrderedDict())
    monkeypatch.setattr(_plans, "WORKSPACE", 1000)
    _plans._remember("a", _plan(400))
    _plans._remember("b", 1)  # a first sighting: no workspace
    _plans._remember("c", _plan(500))
    assert list(_plans._plans) == ["a", "b", "c"]
    _plans._remember("d", _plan(300))  # 1200 bytes held: the oldest goes
    assert list(_plans._plans) == ["b", "c", "d"]
    _plans._remember("e", _plan(5000))  # alone above the budget: it stays, the rest goes
    assert list(_plans._plans) == ["e"]


def test_plans_beyond_the_capacity_are_dropped_oldest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plans, "_plans", OrderedDict())
    monkeypatch.setattr(_plans, "CAPACITY", 3)
    for key in "abcde":
        _plans._remember(key, _plan(10))
    assert list(_plans._plans) == ["c", "d", "e"]


def test_split_tf32_setting_is_part_of_the_executor_settings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans and replayed calls are keyed by the executor's settings: a plan captured with
    split-TF32 products must not replay once they are turned off (and back)."""
    import tricov as tc
    from tricov.backends.cuda import CUDAExecutor

    monkeypatch.setattr(tc._precision, "_enabled", True)
    on = CUDAExecutor.settings()
    tc.set_split_tf32(False)
    assert not tc.split_tf32_enabled()
    assert CUDAExecutor.settings() != on
    tc.set_split_tf32(True)
    assert CUDAExecutor.settings() == on
