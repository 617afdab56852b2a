"""Run the real kubectl against an embedded API server without blocking the event loop."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")


async def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> str:
    """Run `kubectl --kubeconfig <kubeconfig> args...`; returns stdout (stderr appended on failure)."""
    if KUBECTL is None:
        pytest.fail("kubectl is not on PATH; .ci/run checks for it (it is part of this machine kind)")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(kubeconfig), *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {err.decode()}")
    return out.decode() + ("" if proc.returncode == 0 else err.decode())
