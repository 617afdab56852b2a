# Everything a fresh machine with Python 3.11+ needs: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint soak bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/runtimeclass-syncer demo

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check syncer tests $(wildcard bench)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/patches.py
	$(BIN)/python bench/convergence.py --steps 400

soak: $(STAMP)
	$(BIN)/python bench/convergence.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
