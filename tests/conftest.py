"""Shared test configuration: GPU tests are skipped where no GPU (or CuPy) is present."""

from __future__ import annotations

import pytest


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any failure means no usable GPU
        return False


GPU = _gpu_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if GPU:
        return
    skip = pytest.mark.skip(reason="no GPU with CuPy on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_replay_across_tests():
    """No test replays a call recorded by another (tricov._calls, tricov.batched._replay):
    tests change the tables that pick kernels, and patch executors, between them."""
    from tricov import _calls
    from tricov.batched import _replay

    _calls.clear()
    _replay.clear()
