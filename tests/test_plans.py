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


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plans, "_plans", OrderedDict())
    monkeypatch.setattr(_plans, "_futile", OrderedDict())


def test_a_plan_dropped_before_it_paid_makes_its_key_futile(
        monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    """A caller cycling through more large operands than the budget holds: each capture would
    be dropped before it paid, so the key runs eagerly from then on."""
    monkeypatch.setattr(_plans, "WORKSPACE", 1000)
    monkeypatch.setattr(_plans, "PAYBACK", 2)
    _plans._remember("a", _plan(600))
    assert _plans._lookup("a")[0].replays == 1
    _plans._remember("b", _plan(600))  # "a" goes, replayed once only
    assert list(_plans._plans) == ["b"] and list(_plans._futile) == ["a"]
    assert _plans._lookup("a") == (None, True)
    for _ in range(2):
        _plans._lookup("b")
    _plans._remember("c", _plan(600))  # "b" goes, replayed twice: it may be captured again
    assert list(_plans._futile) == ["a"]
    assert _plans._lookup("b") == (None, False)
    assert _plans._lookup("never seen") == (None, False)


def test_replays_through_find_count_and_a_new_plan_clears_futility(
        monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setattr(_plans, "CAPACITY", 2)
    monkeypatch.setattr(_plans, "PAYBACK", 1)
    _plans._remember("a", _plan(10))
    _plans._remember("b", _plan(10))
    assert _plans.find(["a"]) is not None  # "a" replayed, and now the most recent
    _plans._remember("c", _plan(10))  # "b" goes unreplayed
    _plans._remember("d", 1)  # a first sighting: "a" goes, replayed
    assert list(_plans._plans) == ["c", "d"] and list(_plans._futile) == ["b"]
    _plans._remember("b", _plan(10))  # captured again after all (the futile key was forgotten)
    assert "b" not in _plans._futile


def test_futile_keys_are_bounded_and_forgotten_with_the_plans(
        monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setattr(_plans, "CAPACITY", 1)
    monkeypatch.setattr(_plans, "FUTILE", 3)
    for key in "abcdef":
        _plans._remember(key, _plan(10))
    assert list(_plans._futile) == ["c", "d", "e"]
    assert _plans._lookup("c") == (None, True)
    _plans._remember("g", _plan(10))  # "f" futile: "d" is the least recently seen
    assert list(_plans._futile) == ["e", "c", "f"]
    import tricov as tc

    tc.set_cuda_graphs(_plans.cuda_graphs_enabled())
    assert not _plans._futile and not _plans._plans


def test_timing_runs_keep_every_plan_then_trim(monkeypatch: pytest.MonkeyPatch,
                                              fresh: None) -> None:
    """Interleaved timing keeps every contender's plan (tricov.bench.runner), and the cache is
    back within its budget afterwards, the oldest dropped (replayed: not futile)."""
    from tricov.bench.runner import time_interleaved

    monkeypatch.setattr(_plans, "WORKSPACE", 1000)
    seen = []

    class _Contender:
        def __init__(self, key: str) -> None:
            self.key = key

        def timed(self) -> float:
            seen.append(_plans.WORKSPACE)
            if _plans._lookup(self.key)[0] is None:
                _plans._remember(self.key, _plan(600))
            return 1.0

    time_interleaved([_Contender(k) for k in "abc"], repeat=2, warmup=1)
    assert min(seen) > 3 * 600 and _plans.WORKSPACE == 1000
    assert len(_plans._plans) == 1 and not _plans._futile


def test_the_workspace_budget_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _plans._bytes("4G") == 4 << 30 and _plans._bytes(" 512m ") == 512 << 20
    assert _plans._bytes("1000") == 1000 and _plans._bytes("0") == 0
    for bad in ("", "G", "4T", "-1G", "1.5G"):
        with pytest.raises(ValueError, match="TRICOV_PLAN_WORKSPACE"):
            _plans._bytes(bad)
    monkeypatch.delenv("TRICOV_PLAN_WORKSPACE", raising=False)
    assert _plans._budget() == 4 << 30
    monkeypatch.setenv("TRICOV_PLAN_WORKSPACE", "8G")
    assert _plans._budget() == 8 << 30
    monkeypatch.setenv("TRICOV_PLAN_WORKSPACE", "lots")
    with pytest.warns(UserWarning, match="TRICOV_PLAN_WORKSPACE.*'lots'.*at most 4G"):
        assert _plans._budget() == 4 << 30


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
