# Everything a fresh machine with Python 3.11+ needs: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint soak bench bench-check image image-run image-check image-bench image-clean mutate clean

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
	$(BIN)/ruff check syncer kubesim tests bench tools
	$(BIN)/mypy

# Every benchmark against its floor (about 20 minutes: the memory benchmark churns for 10): one table,
# bench/results/{table.md,results.json,bench.png}.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench.run --out bench/results

# The small version CI runs (N = 100, about a minute): fails when a figure regresses by more than half
# from bench/baseline-quick.json.
bench-check: $(STAMP)
	$(BIN)/python -m bench.run --quick --out bench/results-quick --check bench/baseline-quick.json

# Mutation testing (about 30 minutes; not part of CI): mutmut over the pure modules with their unit tests, then
# the listed mutations of integration paths; prints caught/missed and the score (README "Mutation testing").
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[mutate]'
	$(BIN)/python tools/mutate.py

# The 3,000-step convergence soak (about 100 s; docs/development.md): make soak ARGS="--seed N --steps N"
soak: $(STAMP)
	$(BIN)/python -m bench.convergence $(ARGS)

# The image, built here without a Docker engine (buildah, mmdebstrap; installed with apt-get when missing;
# needs root): localhost/runtimeclass-syncer:<version> (tools/image.py says how).
# ARCH=arm64 on an amd64 machine (or the reverse): that architecture through qemu-user-static, slower.
image: $(STAMP)
	$(BIN)/python tools/image.py build $(if $(ARCH),--arch $(ARCH))

# Runs the built image (make image first) as a container runtime would, e.g. make image-run ARGS=--version
image-run: $(STAMP)
	$(BIN)/python tools/image.py run $(if $(ARCH),--arch $(ARCH)) -- $(ARGS)

# What CI runs (.ci/run): lint the Dockerfile (hadolint), then tests/test_image.py -m image: make image, and its
# entrypoint run as uid 65532 on a read-only root (about a minute and a half; the first build about a minute more).
# ARCH=arm64 on an amd64 machine: the same for that architecture through qemu-user-static (several minutes).
image-check: $(STAMP)
	$(BIN)/hadolint Dockerfile
	IMAGE_ARCH=$(ARCH) $(BIN)/python -m pytest -m image -p no:cacheprovider tests/test_image.py

# The built image's size and start-up (bench/image.py; a few minutes).
image-bench: image
	$(BIN)/python -m bench.image

# Drop the cached Debian root filesystem and the images: the next make image takes the newest packages.
image-clean:
	rm -rf build/image
	-buildah rmi $$(buildah images --quiet --filter 'reference=localhost/runtimeclass-syncer*')

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
