# Two commands set up a fresh machine (see README):
#   make demo   install into .venv and run the main job on the built-in table
#   make test   run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Real data sets: ../shared/data when it is there (CI and developers), else the user cache.
ifneq ($(wildcard ../shared/data),)
export DPEVOLVE_DATA ?= $(abspath ../shared/data)
endif

.PHONY: demo test lint typecheck bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/dpevolve demo --output demo-output --force

test: $(BIN)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadfile tests

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks experiments
	$(BIN)/mypy

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/adult_tabpe.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache .mypy_cache .ruff_cache
