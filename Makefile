# Two commands set up a fresh machine (see README):
#   make demo   install dpevolve (core + report, fast extras) into .venv and run the main job
#               on the built-in table
#   make test   install the development set and run the test suite but its slow
#               statistical tests (tests/slow.py; under 10 minutes on 2 cores)
#   make test-all  every test, the slow ones too (CI; before changing a mechanism)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Real data sets: $DPEVOLVE_DATA, else a sibling data folder when one is there (CI and
# developers), else the user cache filled by `dpevolve datasets fetch NAME`.
ifneq ($(wildcard ../shared/data),)
export DPEVOLVE_DATA ?= $(abspath ../shared/data)
endif

.PHONY: demo test test-slow test-all lint typecheck bench clean

# Two install levels: what the demo needs (core + report + fast: the numpy reference
# backend takes minutes where numba takes seconds), and everything tests need.
$(BIN)/.demo-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[report,fast]'
	touch $@

$(BIN)/.installed: pyproject.toml $(BIN)/.demo-installed
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(BIN)/.demo-installed
	$(BIN)/dpevolve demo --output demo-output --force

test: $(BIN)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not slow" tests

# The statistical tests marked slow (tests/slow.py): CI runs them after `make test`.
test-slow: $(BIN)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadfile -m slow tests

test-all: $(BIN)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadfile tests

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks experiments
	$(BIN)/mypy

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/adult_tabpe.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache .mypy_cache .ruff_cache
