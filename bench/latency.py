"""Benchmark 2, change latency under background churn: K changes of each kind, from the moment the
change is sent to the moment a watch sees its effect, for the syncer and for a bare watch-then-write loop
(bench.floor_watch).

Kinds and effects:
  - relabel: a synced host class loses the selector's label -> its virtual copy is deleted;
  - delete: a synced host class is deleted -> its virtual copy is deleted;
  - local: a RuntimeClass is created in the virtual cluster -> it is deleted;
  - release: a refused pod's host class gains the label -> the host pod is created.
Background churn: virtual pods of an allowed class are created and deleted all along (about 20 per
second), so the changes compete with ordinary work. Changes are sent in a shuffled order, one every
`pace` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench import floor, harness
from bench.names import HOST_NAMESPACE, VCLUSTER
from bench.servers import matches, refused, virtual_pod

KINDS = ("relabel", "delete", "local", "release")
MERGE = {"Content-Type": "application/merge-patch+json"}


@dataclass
class Latencies:
    """Seconds from change to effect, by kind, and the p50/p99 over all changes."""

    by_kind: dict[str, list[float]]

    def percentile(self, q: float, kind: str | None = None) -> float:
        values = sorted(v for k, vs in self.by_kind.items() if kind in (None, k) for v in vs)
        return values[min(len(values) - 1, int(q * len(values)))]

    @property
    def p50(self) -> float:
        return statistics.median(v for vs in self.by_kind.values() for v in vs)

    @property
    def p99(self) -> float:
        return self.percentile(0.99)


async def _churn(session: aiohttp.ClientSession, virtual: str, n: int, stop: asyncio.Event) -> None:
    """Create and delete virtual pods of an allowed class, about 20 operations a second."""
    allowed = next(i for i in range(n) if not refused(i, n))
    i = 0
    while not stop.is_set():
        pod = virtual_pod(allowed, n)
        pod["metadata"].update(name=f"churn-{i}", namespace="default")
        await floor._post(session, f"{virtual}/api/v1/namespaces/default/pods", pod)
        if i >= 10:
            async with session.delete(f"{virtual}/api/v1/namespaces/default/pods/churn-{i - 10}") as resp:
                await resp.read()
        i += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


async def one(who: str, changes: int, n: int = 1000, pace: float = 0.01, seed: int = 1) -> Latencies:
    """K=`changes` changes of each kind against a syncer (or the floor) that has synced n classes and pods."""
    matching = sum(1 for i in range(n) if matches(i))
    rc_path = "/apis/node.k8s.io/v1/runtimeclasses"
    with tempfile.TemporaryDirectory() as tmp:
        async with harness.servers(Path(tmp), n, n, latency=changes) as s, harness.observers(
                f"{s.virtual}{rc_path}", f"{s.host}/api/v1/namespaces/{HOST_NAMESPACE}/pods") as (vrcs, hpods):
            port = harness.free_port()
            proc = (harness.start_syncer(s, probe_port=port) if who == "syncer"
                    else harness.start_floor(s, "bench.floor_watch"))
            stop = asyncio.Event()
            try:
                await (harness.wait_ready(port, proc) if who == "syncer" else harness.announced(proc, b"watching"))
                await vrcs.wait_for(lambda: len(vrcs.seen) >= matching + 2 * changes)
                plan = [(kind, i) for kind in KINDS for i in range(changes)]
                random.Random(seed).shuffle(plan)
                sent: dict[tuple[str, int], float] = {}
                async with aiohttp.ClientSession() as session:
                    churn = asyncio.create_task(_churn(session, s.virtual, n, stop))
                    for kind, i in plan:
                        sent[kind, i] = time.perf_counter()
                        body: dict[str, Any] | None
                        if kind == "relabel":
                            url, body, method = f"{s.host}{rc_path}/lat-relabel-{i}", {
                                "metadata": {"labels": {"tier": None}}}, "PATCH"
                        elif kind == "delete":
                            url, body, method = f"{s.host}{rc_path}/lat-delete-{i}", None, "DELETE"
                        elif kind == "local":
                            url, method = f"{s.virtual}{rc_path}", "POST"
                            body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                    "metadata": {"name": f"lat-local-{i}"}, "handler": "runc"}
                        else:
                            url, body, method = f"{s.host}{rc_path}/lat-gate-{i}", {
                                "metadata": {"labels": {"tier": "tenant"}}}, "PATCH"
                        headers = MERGE if method == "PATCH" else floor.JSON
                        async with session.request(method, url, headers=headers,
                                                   data=json.dumps(body) if body else None) as resp:
                            await resp.read()
                            if resp.status >= 400:
                                raise RuntimeError(f"{method} {url}: {resp.status}")
                        await asyncio.sleep(pace)  # the load's pace, not a wait for a condition

                    def effect(kind: str, i: int) -> float | None:
                        if kind == "release":
                            t = hpods.changed_at.get(f"gated-{i}-x-default-x-{VCLUSTER}")
                            return t if f"gated-{i}-x-default-x-{VCLUSTER}" in hpods.seen else None
                        return vrcs.gone.get(f"lat-{'local' if kind == 'local' else kind}-{i}")

                    await vrcs.wait_for(lambda: all(effect(k, i) is not None for k, i in plan), timeout=300)
                    stop.set()
                    await churn
                by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
                for (kind, i), t0 in sent.items():
                    t1 = effect(kind, i)
                    assert t1 is not None
                    by_kind[kind].append(max(0.0, t1 - t0))
                return Latencies(by_kind)
            finally:
                stop.set()
                proc.stop()

