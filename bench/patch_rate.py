"""Benchmark 6a, patch evaluations per second through the real async path (`Patcher.apply` from the
event loop, V8 on mini-racer's thread), alone in a process: the four recipes of
examples/vcluster-patches.yaml on the virtual copies of N host RuntimeClasses.
"""

from __future__ import annotations

import time

from bench import harness
from bench.servers import host_class
from syncer.config.model import load_config
from syncer.controllers.translate import virtual_runtime_class
from syncer.patches.apply import Patcher


async def rate(count: int = 2000) -> tuple[float, bool]:
    """(evaluations per second, whether the patches went to V8 in one call per object)."""
    patcher = await Patcher.create(load_config(harness.PATCHED_CONFIG), vcluster_name="bench",
                                   host_namespace="bench")
    assert patcher is not None and patcher.engine is not None
    try:
        objects = [virtual_runtime_class(host_class(2 * i)) for i in range(count)]
        for obj in objects[:50]:  # warm-up: V8's compiler, the first allocations
            await patcher.apply(obj, obj, None)
        before, started = patcher.engine.evaluations, time.perf_counter()
        for obj in objects:
            await patcher.apply(obj, obj, None)
        return (patcher.engine.evaluations - before) / (time.perf_counter() - started), patcher.batched
    finally:
        await patcher.close()
