"""Benchmark 1, initial sync: N host RuntimeClasses (half matching) and N virtual pods (a fifth refused),
from the process start to the last write seen by a watch, for the syncer and for the floor.

Converged means: every matching class exists in the virtual cluster, every allowed pod has its host pod,
and every refused pod has its SyncWarning Event.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness
from bench.names import HOST_NAMESPACE
from bench.servers import matches, refused


@dataclass
class SyncRun:
    """One initial sync: wall seconds from process start to convergence, the process's CPU seconds, and
    the CPU seconds the API servers' process spent meanwhile (serving it and the observers)."""

    wall: float
    cpu: float
    server_cpu: float
    requests: dict[str, int] = field(default_factory=dict)  # "<server> <verb> <resource>" -> count, this client's

    @property
    def request_total(self) -> int:
        return sum(self.requests.values())


async def one(n: int, who: str, config: Path = harness.CONFIG) -> SyncRun:
    """Run one initial sync of size n by `who` ("syncer", "floor", or "floor-informers": the reference of
    bench/floor_informers.py) against fresh servers (the syncer with `config`)."""
    classes = sum(1 for i in range(n) if matches(i))
    refusals = sum(1 for i in range(n) if refused(i, n))
    with tempfile.TemporaryDirectory() as tmp:
        async with harness.servers(Path(tmp), n, n) as s, harness.observers(
                f"{s.host}/api/v1/namespaces/{HOST_NAMESPACE}/pods", f"{s.virtual}/api/v1/events",
                f"{s.virtual}/apis/node.k8s.io/v1/runtimeclasses") as (hpods, events, vrcs):
            server_cpu = harness.cpu_seconds(s.proc.pid)
            proc = (harness.start_syncer(s, config=config) if who == "syncer"
                    else harness.start_floor(s, "bench.floor_informers") if who == "floor-informers"
                    else harness.start_floor(s))
            try:
                cpu = 0.0

                def converged() -> bool:
                    nonlocal cpu
                    done = (len(hpods.seen) >= n - refusals and len(vrcs.seen) >= classes
                            and sum(1 for e in events.seen.values() if e.get("reason") == "SyncWarning") >= refusals)
                    if done:
                        cpu = proc.cpu  # read at once: what came before convergence
                    return done

                done_at = await hpods.wait_for(converged)  # any observer's change wakes the check
                run = SyncRun(done_at - proc.started, cpu, harness.cpu_seconds(s.proc.pid) - server_cpu)
            finally:
                proc.stop()
        counts = json.loads((Path(tmp) / "requests.json").read_text())  # written when the servers stop
        run.requests = counts.get("runtimeclass-syncer" if who == "syncer" else "Python", {})
        return run
