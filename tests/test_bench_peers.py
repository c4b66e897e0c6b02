"""The benchmark harness with peers beyond the native one (PyTorch on the GPU), on the CPU."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tricov.bench import report
from tricov.bench.cases import CASES
from tricov.bench.devices import CPUDevice, get_device
from tricov.bench.runner import Job, measure


class _TwoPeers(CPUDevice):
    """The CPU with a second peer: NumPy's solve of the same triangle (out of place)."""

    def peers(self, case, dtype):
        def numpy_solve(x):
            np.linalg.solve(np.tril(x["A"]), x["B"])

        return [("numpy", numpy_solve, "numpy.linalg.solve")]


def test_further_peers_are_timed_and_reported(tmp_path: Path) -> None:
    device = _TwoPeers()
    results = [measure(device, Job(CASES["trsm"], shape, np.dtype(np.float64)), repeat=2)
               for shape in ((96, 96), (128, 7))]
    for r in results:
        seconds, routine = r.peers["numpy"]
        assert seconds > 0 and routine == "numpy.linalg.solve"
        assert r.ratio_peer("numpy") == pytest.approx(r.tricov_gflops / r.peer_gflops("numpy"))
    table = report.table(results, title="trsm")
    headers = [str(c.header) for c in table.columns]
    assert "numpy\nGFLOP/s" in headers and "tricov/\nnumpy" in headers
    path = report.write_csv(tmp_path / "out.csv", results, {"host": "x"})
    rows = list(csv.DictReader(path.open()))
    assert float(rows[0]["ratio_numpy"]) == pytest.approx(
        float(rows[0]["tricov_gflops"]) / float(rows[0]["numpy_gflops"]), rel=1e-3)
    assert rows[1]["numpy_routine"] == "numpy.linalg.solve"
    assert report.plot(tmp_path / "out.png", results).stat().st_size > 0


def test_gpu_device_without_cupy_is_a_clear_error() -> None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="gpu"):
            get_device("gpu")
    else:
        pytest.skip("CuPy is installed")


@pytest.mark.gpu
def test_queued_seconds_times_every_queued_call() -> None:
    """``queued_seconds`` runs its warm-up calls and ``calls`` per round, and returns the best
    round's device seconds per call: a copy of 64 MiB takes at least a microsecond."""
    cp = pytest.importorskip("cupy")
    from tricov.bench.devices import queued_seconds

    src = cp.ones(1 << 23)
    dst = cp.empty_like(src)
    ran = []

    def copy() -> None:
        ran.append(1)
        cp.copyto(dst, src)

    t = queued_seconds(copy, calls=4, rounds=2, warmup=1)
    assert len(ran) == 1 + 4 * 2
    assert 1e-6 < t < 1.0
