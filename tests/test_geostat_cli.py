"""The demo and ``tricov fit`` entry points of tricov.geostat (run in-process, small sizes)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tricov.geostat import bench, demo, fit, fitcli, predict, simulate


def _tlr_available() -> bool:
    try:
        import tricov.tlr  # noqa: F401
    except ImportError:
        return False
    return True


def test_demo_writes_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo.png"
    assert demo.main(["--n", "150", "--method", "dense", "--grid", "12", "--quiet",
                      "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "true" in text and "dense estimate" in text and "log-likelihood" in text


def test_demo_device_and_method_errors(tmp_path: Path) -> None:
    assert demo.main(["--device", "gpu", "--out", str(tmp_path / "x.png")]) == 1
    assert demo.main(["--n", "3", "--out", str(tmp_path / "x.png")]) == 2
    if not _tlr_available():
        assert demo.main(["--n", "50", "--method", "tlr", "--out",
                          str(tmp_path / "x.png")]) == 1
    with pytest.raises(SystemExit):
        demo.main(["--method", "hodlr"])


def _write_csv(path: Path, header: list[str], rows: np.ndarray) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows.tolist())


def test_fit_cli_with_prediction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x, z = simulate(200, (1.0, 0.1, 0.5), seed=21)
    data = tmp_path / "data.csv"
    _write_csv(data, ["x", "y", "value"], np.column_stack([x, z]))
    grid = tmp_path / "grid.csv"
    new = np.random.default_rng(0).uniform(size=(9, 2))
    _write_csv(grid, ["x", "y"], new)
    out = tmp_path / "pred.csv"
    status = fitcli.main([str(data), "--fix", "nu=0.5", "--bounds", "beta=0.01:1",
                          "--quiet", "--predict", str(grid), "--output", str(out)])
    assert status == 0
    report = capsys.readouterr().out
    assert "200 observations" in report and "beta" in report
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["x", "y", "mean", "variance"] and len(rows) == 10
    got = np.array(rows[1:], dtype=float)
    res = fit(x, z, fix={"nu": 0.5}, bounds={"beta": (0.01, 1.0)}, progress=False)
    mean, var = predict(x, z, new, res)
    np.testing.assert_allclose(got[:, :2], new, rtol=0, atol=0)
    np.testing.assert_allclose(got[:, 2], mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[:, 3], var, rtol=1e-12, atol=1e-14)


def test_fit_cli_prediction_to_stdout(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    x, z = simulate(80, (1.0, 0.2), kernel="exponential", seed=2)
    data = tmp_path / "d.csv"
    _write_csv(data, ["lon", "lat", "z"], np.column_stack([x, z]))
    grid = tmp_path / "g.csv"
    _write_csv(grid, ["lon", "lat"], x[:7])
    status = fitcli.main([str(data), "--kernel", "exponential", "--estimate-nugget",
                          "--quiet", "--predict", str(grid)])
    assert status == 0
    cap = capsys.readouterr()
    lines = cap.out.strip().splitlines()
    assert lines[0] == "lon,lat,mean,variance" and len(lines) == 8
    assert "nugget" in cap.err


def test_fit_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y,value\n0.1,0.2,1.0\n0.3,0.4,nan\n0.5,0.1,2.0\n")
    assert fitcli.main([str(bad), "--quiet"]) == 1
    assert "non-finite" in capsys.readouterr().out
    short = tmp_path / "short.csv"
    short.write_text("x,y,value\n0.1,0.2\n")
    assert fitcli.main([str(short)]) == 1
    assert "columns" in capsys.readouterr().out
    assert fitcli.main([str(tmp_path / "missing.csv")]) == 1
    ok = tmp_path / "ok.csv"
    ok.write_text("x,value\n0.1,1.0\n0.4,2.0\n0.9,0.5\n")
    assert fitcli.main([str(ok), "--fix", "nu"]) == 1
    assert "NAME=VALUE" in capsys.readouterr().out
    assert fitcli.main([str(ok), "--bounds", "beta=1"]) == 1


def test_bench_runs(tmp_path: Path) -> None:
    assert bench.main(["kernel", "--n", "200"]) == 0
    out = tmp_path / "b.json"
    assert bench.main(["loglik", "--n", "300", "--nu", "0.8", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["n"] == 300 and result["potrf_s"] > 0 and math.isfinite(result["loglik"])
    assert bench.main(["fit", "--n", "120", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["evaluations"] > 1


def test_bench_peers_agree(tmp_path: Path) -> None:
    """The peers compute the same log-likelihood on the same data."""
    pytest.importorskip("sklearn")
    out = tmp_path / "b.json"
    assert bench.main(["loglik", "--n", "400", "--nu", "1.3", "--peer", "sklearn",
                       "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["peer"] == "sklearn" and r["peer_total_s"] > 0
    assert r["speedup"] == pytest.approx(r["peer_total_s"] / r["total_s"])
    assert r["loglik_rel_diff"] < 1e-10
    if _tlr_available():
        assert bench.main(["loglik", "--n", "600", "--method", "tlr", "--tol", "1e-10",
                           "--tile-size", "150", "--peer", "dense", "--json", str(out)]) == 0
        r = json.loads(out.read_text())
        assert r["peer"] == "dense" and r["loglik_rel_diff"] < 1e-6
    with pytest.raises(SystemExit, match="method tlr"):
        bench.main(["loglik", "--n", "50", "--peer", "dense"])
