# `make demo` and `make test` each build .venv on first use: torch first (the CPU
# build on this machine), then the package with its pinned test tools.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test lint lit pytest slow bench fuzz clean

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/mlp_seed.py
	$(BIN)/python examples/mlp_megakernel.py
	$(BIN)/python examples/mlp_mncore.py

test: lint lit pytest

lint: $(STAMP)
	$(BIN)/ruff check .

lit: $(STAMP)
	$(BIN)/lit -sv lit_tests

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow" tests

# the model tests too slow for CI (compiles for the Triton interpreter and MN-Core)
slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests

bench: $(STAMP)
	$(BIN)/python bench/compile_scaling.py
	$(BIN)/python bench/lazy_overhead.py
	$(BIN)/python bench/task_graph.py
	$(BIN)/python bench/triton_megakernel.py
	$(BIN)/python bench/mncore_schedule.py
	$(BIN)/python bench/multi_device.py
	$(BIN)/python bench/decode.py
	$(BIN)/python bench/op_coverage.py

# 10,000 mutants of the lit tests' and examples' IR through mncore-opt, mncore-run and
# the differential check; examples of each failure under build/fuzz.
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz.run --count 10000 --seed 0 --differential --jobs 2 --out build/fuzz

clean:
	rm -rf $(VENV) build *.egg-info
