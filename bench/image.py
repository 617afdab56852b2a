"""The image's footprint where no Docker engine runs: the Dockerfile's build steps in a fresh virtualenv
(what its final stage copies onto `python:3.12-slim`), that virtualenv's size on disk, and the start-up of
its `runtimeclass-syncer run`: process start to `/readyz` answering 200, against empty clusters and against
2,000 host RuntimeClasses and 10,000 virtual pods.

    python -m bench.image          (make image-check runs it; pip downloads the dependencies)

The size leaves out the base image, which cannot be had here. Sizes are bytes of the files on disk (their
apparent size, as `du --apparent-size` counts); times are seconds, the median of 3.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import harness

MIB = 1024 * 1024


def build_venv(workdir: Path) -> Path:
    """Run the Dockerfile's build stage in `workdir`: copy the build context, make a virtualenv without pip,
    install the package into it with the outer pip (no cache, no bytecode), then compile its bytecode.
    Returns the virtualenv's path. Raises subprocess.CalledProcessError when a step fails."""
    src = workdir / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(harness.ROOT / name, src / name)
    for folder in ("syncer", "kubesim", "examples"):  # the Dockerfile's COPY lines
        shutil.copytree(harness.ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    venv = workdir / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=src, check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                    "--no-cache-dir", "--no-compile", "--quiet", "."], cwd=src, check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "compileall", "-q", str(venv / "lib")], cwd=src, check=True,
                   stdout=subprocess.DEVNULL)
    return venv


def size_bytes(path: Path) -> int:
    """Total apparent size of the regular files under `path` (symlinks not followed)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


async def startup_seconds(venv: Path, classes: int, pods: int) -> float:
    """Median of 3: the virtualenv's `runtimeclass-syncer run` from process start to `/readyz` 200."""
    env_cmd = (str(venv / "bin" / "runtimeclass-syncer"),)
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            async with harness.servers(Path(tmp), classes, pods) as s:
                port = harness.free_port()
                proc = harness.start_syncer(s, probe_port=port, command=env_cmd)
                try:
                    times.append(await harness.wait_ready(port, proc) - proc.started)
                finally:
                    proc.stop()
    return statistics.median(times)


async def measure(venv: Path) -> dict[str, float]:
    """Size (MiB) of the virtualenv and of its largest packages, and the start-up times (seconds)."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    return {"venv_mib": size_bytes(venv) / MIB,
            "v8_mib": size_bytes(site / "py_mini_racer") / MIB,
            "kubernetes_asyncio_mib": size_bytes(site / "kubernetes_asyncio") / MIB,
            "ready_empty_seconds": await startup_seconds(venv, 0, 0),
            "ready_12000_objects_seconds": await startup_seconds(venv, 2000, 10_000)}


def main() -> None:
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")  # as the image sets it: nothing is written at run time
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(measure(build_venv(Path(tmp))))
    print(f"virtualenv the final stage copies: {figures['venv_mib']:.0f} MiB (V8 in py_mini_racer "
          f"{figures['v8_mib']:.0f} MiB, kubernetes_asyncio {figures['kubernetes_asyncio_mib']:.0f} MiB)")
    print(f"start-up to /readyz: {figures['ready_empty_seconds']:.2f} s with empty clusters, "
          f"{figures['ready_12000_objects_seconds']:.2f} s with 2,000 host RuntimeClasses and 10,000 virtual pods")


if __name__ == "__main__":
    main()
