"""Benchmark: what JavaScript patches cost, measured against the same sync without patches.

In one process and one run: a host and a virtual embedded API server (real HTTP), N host
RuntimeClasses, then alternately a full sync of all N into an empty virtual cluster
  - without patches, and
  - with the four recipe patches of examples/vcluster-patches.yaml,
each timed from start to readiness (readiness = every class reconciled once). Reports, as medians over
the rounds:
  - patch evaluations per second through the real async path (evaluations / time the engine was held),
  - the share of the patched sync's time that patches add: (patched - plain) / patched,
  - the patched / plain sync time ratio.

    python bench/patches.py [--count 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from syncer.config.model import load_config
from syncer.embedded.apiserver import EmbeddedAPIServer
from syncer.kube.client import KubeClient
from syncer.kube.resources import RUNTIMECLASSES
from syncer.manager import Options, Syncer
from syncer.patches.apply import Patcher

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def host_class(i: int) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": f"rc-{i:05d}", "labels": {"environment": "development",
                                                           "cost-center.example.com/id": str(i)},
                         "annotations": {"owner": "platform"}},
            "handler": "runsc", "overhead": {"podFixed": {"cpu": "50m"}},
            "scheduling": {"tolerations": [{"key": "sandbox.example.com/gvisor", "operator": "Exists"}]}}


async def one_sync(host_kc: Path, workdir: Path, patched: bool) -> dict[str, float]:
    config = load_config(EXAMPLES / ("vcluster-patches.yaml" if patched else "vcluster-matchlabels.yaml"))
    async with EmbeddedAPIServer("virtual", runtime_class_admission=False) as vs:
        vk = vs.write_kubeconfig(workdir / "virtual.kubeconfig")
        host = await KubeClient.from_kubeconfig(str(host_kc), "host")
        virtual = await KubeClient.from_kubeconfig(str(vk), "virtual")
        patcher = await Patcher.create(config, vcluster_name="bench", host_namespace="bench") if patched else None
        syncer = Syncer(config, host, virtual, Options(vcluster_name="bench", host_namespace="bench"),
                        patcher=patcher)
        stop = asyncio.Event()
        start = time.perf_counter()
        task = asyncio.create_task(syncer.run(stop))
        await syncer.ready_event.wait()
        elapsed = time.perf_counter() - start
        stop.set()
        await task
        engine = patcher.engine if patcher else None
        result = {"seconds": elapsed, "evaluations": float(engine.evaluations if engine else 0),
                  "busy": engine.busy_seconds if engine else 0.0,
                  "synced": float(len((await virtual.list(RUNTIMECLASSES))["items"]))}
        if patcher:
            await patcher.close()
        await host.close()
        await virtual.close()
        return result


async def main(count: int, rounds: int) -> dict[str, Any]:
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        async with EmbeddedAPIServer("host", history_size=count * 2 + 100) as hs:
            hk = hs.write_kubeconfig(workdir / "host.kubeconfig")
            host = await KubeClient.from_kubeconfig(str(hk), "host")
            for i in range(count):
                await host.create(RUNTIMECLASSES, host_class(i))
            await host.close()
            plain, patched = [], []
            for _ in range(rounds):
                plain.append(await one_sync(hk, workdir, False))
                patched.append(await one_sync(hk, workdir, True))
    for r in plain + patched:
        assert r["synced"] == count, f"only {r['synced']} of {count} classes were synced"
    t_plain = statistics.median(r["seconds"] for r in plain)
    t_patched = statistics.median(r["seconds"] for r in patched)
    rate = statistics.median(r["evaluations"] / r["busy"] for r in patched)
    busy_share = statistics.median(r["busy"] / r["seconds"] for r in patched)
    return {"classes": count, "rounds": rounds, "plain_sync_s": round(t_plain, 3),
            "patched_sync_s": round(t_patched, 3), "patched_over_plain": round(t_patched / t_plain, 2),
            "evaluations_per_class": patched[0]["evaluations"] / count,
            "patch_evaluations_per_s": round(rate),
            # the extra wall time patches cause, as a share of the patched sync (the honest figure)
            "patch_share_of_sync_time": round((t_patched - t_plain) / t_patched, 3),
            # time the engine was held, which also covers API-server work the loop did meanwhile (an upper bound)
            "engine_held_share": round(busy_share, 3)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    report = asyncio.run(main(a.count, a.rounds))
    for k, v in report.items():
        print(f"{k:28} {v}")
    print(json.dumps(report))
