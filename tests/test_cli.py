"""The ``tricov`` command line and the benchmark harness: every subcommand runs and produces what
it says, flop counts are right, inputs are restored between timed calls. No timing assertions."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tricov
from tricov import _policy, cli
from tricov.bench import demo
from tricov.bench.cases import CASES, parse_shapes
from tricov.bench.devices import CPUDevice
from tricov.bench.flops import flops, gemm_flops
from tricov.bench.report import CSV_COLUMNS
from tricov.bench.runner import DTYPES, Contender, time_interleaved

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rich wraps table cells at the terminal width; 200 columns keep each row on one line.
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh tuned-settings directory; the policy's in-process cache is restored afterwards."""
    where = tmp_path / "cache"
    monkeypatch.setenv("TRICOV_CACHE_DIR", str(where))
    monkeypatch.setattr(_policy, "_tuned", None)
    return where


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _table_rows(out: str, shapes: list[str]) -> list[list[str]]:
    return [line.split() for line in out.splitlines()
            if line.split() and line.split()[0] in shapes]


# ------------------------------------------------------------------------------------- flops
@pytest.mark.parametrize(("op", "dims", "expected"), [
    ("trsm", (3, 2), 18),          # m^2 n
    ("trmm", (5, 7), 175),
    ("syrk", (4, 3), 48),          # n^2 k
    ("potrf", (6,), 72),           # n^3 / 3
    ("trtri", (6,), 72),
    ("lauum", (6,), 72),
    ("potri", (6,), 144),          # 2 n^3 / 3
    ("poti", (6,), 216),           # n^3
    ("potrs", (5, 3), 150),        # 2 n^2 nrhs
    ("posv", (6, 2), 72 + 144),    # n^3 / 3 + 2 n^2 nrhs
])
def test_flop_counts(op: str, dims: tuple[int, ...], expected: int) -> None:
    assert flops(op, dims, np.float64) == expected
    assert flops(op, dims, np.float32) == expected
    assert flops(op, dims, np.complex64) == 4 * expected
    assert flops(op, dims, np.complex128) == 4 * expected


def test_flop_counts_right_side_gemm_and_errors() -> None:
    assert flops("trsm", (3, 2), np.float64, side="R") == 12  # m n^2
    assert gemm_flops(2, 3, 4, np.float64) == 48
    assert gemm_flops(2, 3, 4, np.complex64) == 192
    with pytest.raises(ValueError, match="op must be one of"):
        flops("getrf", (3,), np.float64)


# ------------------------------------------------------------------------------------ shapes
def test_parse_shapes() -> None:
    assert parse_shapes(["4096x64", "100"], CASES["trsm"]) == ((4096, 64), (100, 100))
    assert parse_shapes(["10,20", "7X3"], CASES["potrs"]) == ((10, 10), (20, 20), (7, 3))
    assert parse_shapes(["33"], CASES["potrf"]) == ((33,),)
    for bad, case in (("0x3", "trsm"), ("abc", "trsm"), ("3x3", "potrf"), ("4x", "syrk"),
                      ("", "trsm")):
        with pytest.raises(ValueError):
            parse_shapes([bad], CASES[case])


# ---------------------------------------------------------------------------------- harness
def test_inputs_are_restored_before_every_call_and_turns_rotate() -> None:
    device = CPUDevice()
    pristine = {"A": np.asfortranarray(np.arange(1.0, 7.0).reshape(2, 3)),
                "X": np.asfortranarray(np.arange(1.0, 5.0).reshape(2, 2))}
    order: list[str] = []

    def make_call(name: str):
        def call(work: dict) -> None:
            np.testing.assert_array_equal(work["X"], pristine["X"])  # restored
            assert work["A"] is pristine["A"]                        # read-only input shared
            work["X"][...] = -1.0
            order.append(name)
        return call

    contenders = [Contender(name, make_call(name), pristine, ("X",), device)
                  for name in ("a", "b", "c")]
    times = time_interleaved(contenders, repeat=3, warmup=1)
    assert len(times) == 3 and all(t >= 0 for t in times)
    assert len(order) == 3 * 4
    assert order[:3] == ["a", "b", "c"] and order[3:6] == ["b", "c", "a"]
    np.testing.assert_array_equal(pristine["X"], np.arange(1.0, 5.0).reshape(2, 2))
    with pytest.raises(ValueError, match="repeat"):
        time_interleaved(contenders, repeat=0)


def test_case_inputs_are_random_and_column_major() -> None:
    rng = np.random.default_rng(1)
    for name, case in CASES.items():
        shape = (17, 5) if len(case.dims) == 2 else (17,)
        for dtype in DTYPES:
            arrays = case.make(rng, shape, np.dtype(dtype))
            assert set(case.outputs) <= set(arrays), name
            for arr in arrays.values():
                assert arr.flags.f_contiguous and arr.dtype == np.dtype(dtype)
                assert np.all(arr != 0), name


# ------------------------------------------------------------------------------------- bench
def test_bench_prints_rows_and_writes_csv_and_png(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    out_csv, out_png = tmp_path / "r.csv", tmp_path / "r.png"
    rc = cli.main(["bench", "trsm", "--sizes", "150x7", "33", "--repeat", "1",
                   "--csv", str(out_csv), "--plot", str(out_png)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "trsm float64" in out and "dtrsm" in out and "dgemm" in out
    rows = _table_rows(out, ["150x7", "33x33"])
    assert [r[0] for r in rows] == ["150x7", "33x33"]
    for r in rows:  # tricov, native, GEMM GFLOP/s, two ratios, rel. diff
        assert len(r) == 7 and all(float(x.replace(",", "")) >= 0 for x in r[1:])

    records = _rows(out_csv)
    assert [r["shape"] for r in records] == ["150x7", "33x33"]
    header = list(records[0])
    assert header[:len(CSV_COLUMNS)] == list(CSV_COLUMNS)
    for column in ("leaf_trsm", "blas", "blas_version", "cpu_model", "numpy_version",
                   "scipy_version", "timestamp"):
        assert column in header
    for r in records:
        for column in ("flops", "tricov_s", "native_s", "gemm_s", "tricov_gflops",
                       "native_gflops", "gemm_gflops", "ratio_native", "ratio_gemm"):
            assert float(r[column]) > 0, column
        m, n = int(r["dim1"]), int(r["dim2"])
        assert float(r["flops"]) == m * m * n
        assert float(r["gemm_flops"]) == 2 * m * n * m
        assert float(r["tricov_gflops"]) == pytest.approx(
            float(r["flops"]) / float(r["tricov_s"]) / 1e9, rel=1e-4)
        assert float(r["ratio_native"]) == pytest.approx(
            float(r["tricov_gflops"]) / float(r["native_gflops"]), rel=1e-3)
        assert float(r["rel_diff"]) < 1e-12
    assert out_png.read_bytes()[:8] == PNG_MAGIC


def test_bench_every_op_and_dtype_agrees_with_native(tmp_path: Path) -> None:
    out_csv = tmp_path / "all.csv"
    n = 150  # above the default leaf size, so the recursions recurse
    rc = cli.main(["bench", *CASES, "--sizes", str(n), "--dtype", "all", "--repeat", "1",
                   "--warmup", "0", "--csv", str(out_csv)])
    assert rc == 0
    records = _rows(out_csv)
    assert {(r["op"], r["dtype"]) for r in records} == {(op, d) for op in CASES for d in DTYPES}
    for r in records:
        eps = np.finfo(np.dtype(r["dtype"])).eps
        assert float(r["tricov_gflops"]) > 0 and float(r["native_gflops"]) > 0
        assert float(r["gemm_gflops"]) > 0
        # two backward-stable algorithms on well-conditioned data: tiny relative difference
        assert float(r["rel_diff"]) < n * eps, (r["op"], r["dtype"], r["rel_diff"])


@pytest.mark.parametrize("argv", [
    ["bench", "potrf", "--sizes", "4x4"],
    ["bench", "trsm", "--sizes", "0x3"],
    ["bench", "trsm", "--repeat", "0"],
    ["bench", "getrf"],
    ["bench", "trsm", "--dtype", "float16"],
    ["bench", "trsm", "--device", "tpu"],
    ["tune", "--ops", "poti"],
    ["nosuchcommand"],
    [],
])
def test_bad_arguments_exit_with_status_2(argv: list[str],
                                         capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


# -------------------------------------------------------------------------------------- tune
def test_tune_stores_and_later_lookups_return_the_stored_sizes(
        cache: Path, capsys: pytest.CaptureFixture) -> None:
    before = {d: _policy.leaf_sizes("cpu", d) for d in DTYPES}
    rc = cli.main(["tune", "--ops", "potrf", "trsm", "--dtypes", "float64", "--size", "96",
                   "--candidates", "16", "32", "--repeat", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "stored in" in out and str(cache) in out.replace("\n", "")
    data = json.loads((cache / "leaf_sizes.json").read_text())
    assert set(data["leaf_sizes"]["cpu"]) == {"float64"}
    stored = data["leaf_sizes"]["cpu"]["float64"]
    old = before["float64"]
    for op in ("trsm", "potrf"):
        assert stored[op] in {16, 32, getattr(old, op)}
    for op in ("trmm", "syrk", "trtri", "lauum"):  # not tuned: kept as they were
        assert stored[op] == getattr(old, op)
    assert data["machine"]["cpu"]["size"] == 96
    assert data["machine"]["cpu"]["blas_version"]
    # the process sees the stored sizes (no overrides left behind), other dtypes untouched
    now = tricov.leaf_sizes("cpu", np.float64)
    assert {op: getattr(now, op) for op in _policy.OPERATIONS} == stored
    assert tricov.leaf_sizes("cpu", np.float32) == before["float32"]

    # tuning another op later keeps what was stored before
    rc = cli.main(["tune", "--quick", "--ops", "trmm", "--dtypes", "float64", "--size", "64",
                   "--candidates", "8", "--repeat", "1"])
    assert rc == 0
    again = json.loads((cache / "leaf_sizes.json").read_text())["leaf_sizes"]["cpu"]["float64"]
    assert again["trsm"] == stored["trsm"] and again["potrf"] == stored["potrf"]
    assert again["trmm"] in {8, stored["trmm"]}
    assert tricov.leaf_sizes("cpu", np.float64).trmm == again["trmm"]


# -------------------------------------------------------------------------------------- info
def test_info_reports_libraries_leaf_sizes_cache_and_gpus(
        cache: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tricov._precision, "_enabled", True)
    _policy.store_tuned("cpu", np.complex64, {"lauum": 48}, {})
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"tricov {tricov.__version__}" in out
    assert "BLAS" in out and "threadpoolctl" in out
    assert np.__version__ in out
    assert str(cache) in out.replace("\n", "") and "leaf_sizes.json" in out
    cells = [[c for c in line.split() if c not in ("│", "┃")] for line in out.splitlines()]
    lauum = next(c for c in cells if c[:1] == ["lauum"])
    assert lauum == ["lauum", *(str(_policy.leaf_sizes("cpu", d).lauum) for d in DTYPES)]
    assert lauum[1 + DTYPES.index("complex64")] == "48"
    assert "GPUs:" in out
    assert "Float32 GPU products: split TF32" in out.replace("\n", " ")
    tricov.set_split_tf32(False)
    assert cli.main(["info"]) == 0
    assert "Float32 GPU products: FP32" in capsys.readouterr().out.replace("\n", " ")
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert "GPUs: none" in out


# -------------------------------------------------------------------------------------- demo
def test_bench_demo_runs_its_benchmarks(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(demo, "SHAPES", {"trsm": ("40x8",), "potri": ("40",)})
    monkeypatch.setattr(demo, "REPEAT", 1)
    assert cli.main(["bench-demo"]) == 0
    out = capsys.readouterr().out
    assert "trsm float64" in out and "potri float64" in out
    assert len(_table_rows(out, ["40x8", "40"])) == 2


# ------------------------------------------------------------------------------- the command
def test_help_lists_every_subcommand_and_each_configures(
        capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert command.name in out
    for command in cli.COMMANDS:
        with pytest.raises(SystemExit) as info:
            cli.main([command.name, "--help"])
        assert info.value.code == 0
        assert f"usage: tricov {command.name}" in capsys.readouterr().out
    cli.build_parser(configure_all=True)


def test_a_subcommand_is_one_registry_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "tricov_fake_command.py").write_text(
        "def configure(parser):\n"
        "    parser.add_argument('--name', default='world')\n"
        "    return lambda args: print('hello', args.name) or 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "COMMANDS", [
        *cli.COMMANDS, cli.Command("hello", "tricov_fake_command:configure", "Say hello.")])
    monkeypatch.delitem(sys.modules, "tricov_fake_command", raising=False)
    assert cli.main(["info"]) == 0
    assert "tricov_fake_command" not in sys.modules  # only the requested command is imported
    assert cli.main(["hello", "--name", "tricov"]) == 0
    assert "hello tricov" in capsys.readouterr().out


def test_python_dash_m_tricov() -> None:
    src = Path(tricov.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "tricov", "--version"], capture_output=True,
                          text=True, env={"PYTHONPATH": str(src), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tricov {tricov.__version__}"


def test_bench_families_run_their_benchmarks(capsys):
    from tricov.cli import main

    assert main(["bench", "batched-potrf", "batched-posv", "--batch", "16", "--sizes", "3",
                 "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "potrf" in out and "posv" in out and "copy bandwidth" in out
    assert main(["bench", "tlr-potrf", "--n", "300", "--tile-size", "100", "--tol", "1e-6",
                 "--dense", "yes"]) == 0
    out = capsys.readouterr().out
    assert "TLR Cholesky" in out and "dense_time" in out
