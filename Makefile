# tricov: `make demo` and `make test` each set up (or update) .venv and run.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Tests run two workers; keep BLAS single-threaded inside each so that 2 cores are not oversubscribed.
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1

.PHONY: demo test gpu-test lint bench clean
# The GPU machine has CuPy, PyTorch and the test tools already; it runs from the source tree.
GPU_PY ?= python3
GPU_JOBS ?= 4

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tricov demo

test: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --durations=15

# On a machine with an NVIDIA GPU: the GPU test suite, then the GPU benchmark (peers: cuBLAS,
# cuSOLVER by pointer and PyTorch), its table on stdout and in benchmarks/gpu_dense.json.
gpu-test:
	OPENBLAS_NUM_THREADS=1 PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PY) -m pytest -q -m gpu -n $(GPU_JOBS) \
		-p no:cacheprovider tests
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PY) benchmarks/gpu_dense.py --quick \
		--json benchmarks/gpu_dense.json
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PY) -m tricov.batched.bench --device gpu \
		--ops potrf potrs posv trsm potri poti trmm syrk lauum --sizes 8 16 32 64 128 256 \
		--repeats 3 --jobs $(GPU_JOBS)
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PY) benchmarks/gpu_geostat.py dense --n 40000
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PY) benchmarks/gpu_geostat.py tlr --n 50000 --tile 4096 --mode dl ll \
		--storage device host
	PYTHONPATH=src PYTHONUNBUFFERED=1 $(GPU_PY) -m tricov.cli demo --device gpu --n 3000 --quiet \
		--out /tmp/tricov-demo-gpu.png

# The CPU benchmarks of the README (a quiet machine, please): tables, CSV and plots.
bench: $(STAMP)
	$(BIN)/tricov bench trsm trmm --csv benchmarks/cpu_trxm.csv --plot benchmarks/cpu_trxm.png
	$(BIN)/tricov bench potrf potri poti --csv benchmarks/cpu_chol.csv \
		--plot benchmarks/cpu_chol.png

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache .hypothesis
