# Everything a fresh machine with Python 3.11+ needs: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint soak bench image image-check clean

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

image:
	docker build -t runtimeclass-syncer:$(shell $(PYTHON) -c 'import tomllib;print(tomllib.load(open("pyproject.toml","rb"))["project"]["version"])') .

# Without a Docker engine: lint the Dockerfile and run its build steps in a fresh virtualenv.
image-check: $(STAMP)
	$(BIN)/hadolint Dockerfile
	$(BIN)/python -m pytest -m image -p no:cacheprovider

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
