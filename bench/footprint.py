"""Benchmarks 3-5, the syncer's footprint: memory per cached object and over churn, idle CPU, start-up.

- memory: resident memory after the caches hold `classes` host RuntimeClasses and `pods` virtual pods (and
  what the sync creates from them: virtual classes, host pods), minus the resident memory of a syncer
  whose clusters are empty, divided by the number of cached objects; then `churn_seconds` of pods created
  and deleted, and the growth of resident memory over it (sampled after the first tenth, so that
  the caches' and allocator's steady state is the baseline);
- idle: CPU seconds over `idle_seconds` with everything synced and nothing changing, as a share of a core;
- start-up: process start to `/readyz` answering 200, and the import time of what `run` imports (with
  the floor's import of aiohttp beside it).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench import harness, latency
from bench.names import HOST_NAMESPACE
from bench.servers import matches, refused


@dataclass
class Footprint:
    """Bytes, seconds and shares of a core (see the module docstring)."""

    cached_objects: int
    rss_empty: int
    rss_full: int
    churn_growth: int
    idle_cpu_share: float
    ready_seconds: float
    import_seconds: float
    floor_import_seconds: float

    @property
    def bytes_per_object(self) -> float:
        return (self.rss_full - self.rss_empty) / self.cached_objects


def import_seconds(modules: str) -> float:
    """Seconds a fresh interpreter takes to import `modules` (comma-separated), median of 3."""
    code = f"import time; t = time.perf_counter(); import {modules}; print(time.perf_counter() - t)"
    runs = sorted(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       cwd=harness.ROOT).stdout) for _ in range(3))
    return runs[1]


async def _settled_rss(s: harness.Servers, classes: int, pods: int) -> tuple[int, float, harness.Process, float]:
    """Start a syncer against `s`, wait until ready and converged; (rss, ready seconds, process, cpu now)."""
    port = harness.free_port()
    proc = harness.start_syncer(s, probe_port=port)
    ready = await harness.wait_ready(port, proc) - proc.started
    allowed = sum(1 for i in range(pods) if not refused(i, classes))
    async with harness.observers(f"{s.host}/api/v1/namespaces/{HOST_NAMESPACE}/pods") as (hpods,):
        await hpods.wait_for(lambda: len(hpods.seen) >= allowed)
    return proc.rss, ready, proc, proc.cpu


async def run(classes: int = 2000, pods: int = 10_000, idle_seconds: float = 60.0,
              churn_seconds: float = 600.0) -> Footprint:
    """Measure everything in the module docstring."""
    with tempfile.TemporaryDirectory() as tmp:
        async with harness.servers(Path(tmp)) as s:
            rss_empty, _, proc, _ = await _settled_rss(s, 0, 0)
            proc.stop()
    with tempfile.TemporaryDirectory() as tmp:
        async with harness.servers(Path(tmp), classes, pods) as s:
            rss_full, ready, proc, cpu = await _settled_rss(s, classes, pods)
            try:
                await asyncio.sleep(idle_seconds)  # the measurement window: nothing changes meanwhile
                idle = (proc.cpu - cpu) / idle_seconds
                stop = asyncio.Event()
                async with aiohttp.ClientSession() as session:
                    churn = asyncio.create_task(latency._churn(session, s.virtual, classes, stop))
                    await asyncio.sleep(churn_seconds / 10)
                    before = proc.rss
                    await asyncio.sleep(churn_seconds * 9 / 10)
                    after = proc.rss
                    stop.set()
                    await churn
            finally:
                proc.stop()
    cached = pods + sum(1 for i in range(pods) if not refused(i, classes)) + classes + sum(
        1 for i in range(classes) if matches(i))
    return Footprint(cached, rss_empty, rss_full, after - before, idle, ready,
                     import_seconds("syncer.cli, syncer.manager, syncer.server"), import_seconds("aiohttp"))
