"""The floor of change latency: a bare watch-then-write loop over aiohttp, no cache, queue or reconcile.

    python -m bench.floor_watch --host URL --virtual URL

After the floor's initial sync (bench.floor) it watches the host RuntimeClasses, the virtual
RuntimeClasses and the virtual pods, and answers each event with the one write it calls for:
  - a host class that lost the selector's label or was deleted: delete its virtual copy;
  - a virtual class with no matching host class (created locally): delete it;
  - a host class that gained the label: create the host pods of the virtual pods that name it;
  - a virtual pod added or deleted: create or delete its host pod when its class matches.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from bench import floor
from bench.names import HOST_NAMESPACE, SELECTOR_LABEL, VCLUSTER

Obj = dict[str, Any]


def _matching(rc: Obj) -> bool:
    return bool((rc["metadata"].get("labels") or {}).get(SELECTOR_LABEL[0]) == SELECTOR_LABEL[1])


async def _watch(session: aiohttp.ClientSession, url: str, rv: str,
                 handle: Callable[[str, Obj], Awaitable[None]], connected: asyncio.Barrier) -> None:
    async with session.get(f"{url}?watch=true&resourceVersion={rv}&timeoutSeconds=3600",
                           timeout=aiohttp.ClientTimeout(total=None)) as resp:
        if await connected.wait() == 0:
            print("watching", flush=True)  # every watch is open: the harness may start changing things
        async for line in resp.content:
            if line.strip():
                ev = orjson.loads(line)
                await handle(ev["type"], ev["object"])


async def run(host: str, virtual: str) -> None:
    """Initial sync, then answer changes until killed."""
    await floor.run(host, virtual)
    async with aiohttp.ClientSession() as session:
        classes: dict[str, bool] = {}  # host class -> matches
        pods_by_class: dict[str, dict[str, Obj]] = {}
        inflight: set[asyncio.Task[None]] = set()

        def spawn(aw: Awaitable[None]) -> None:
            task = asyncio.ensure_future(aw)
            inflight.add(task)
            task.add_done_callback(done)

        def done(task: asyncio.Task[None]) -> None:
            inflight.discard(task)
            if not task.cancelled() and task.exception() is not None:
                print(f"floor_watch: {task.exception()}", file=sys.stderr)

        async def delete(url: str) -> None:
            async with session.delete(url) as resp:
                await resp.read()

        def host_pod_url(pod: Obj) -> str:
            m = pod["metadata"]
            return f"{host}/api/v1/namespaces/{HOST_NAMESPACE}/pods/{m['name']}-x-{m['namespace']}-x-{VCLUSTER}"

        async def create_host_pod(pod: Obj) -> None:
            m, spec = pod["metadata"], pod["spec"]
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{m['name']}-x-{m['namespace']}-x-{VCLUSTER}",
                "labels": {**(m.get("labels") or {}), "vcluster.loft.sh/managed-by": VCLUSTER}},
                "spec": {**{k: v for k, v in spec.items() if k not in ("serviceAccount", "nodeName")},
                         "serviceAccountName": f"vc-workload-{VCLUSTER}"}}
            await floor._post(session, f"{host}/api/v1/namespaces/{HOST_NAMESPACE}/pods", body)

        async def on_host_class(kind: str, rc: Obj) -> None:
            name = rc["metadata"]["name"]
            was, now = classes.get(name, False), kind != "DELETED" and _matching(rc)
            classes[name] = now
            if was and not now:
                spawn(delete(f"{virtual}{floor.RC_PATH}/{name}"))
            elif now and not was:
                for pod in pods_by_class.get(name, {}).values():
                    spawn(create_host_pod(pod))

        async def on_virtual_class(kind: str, rc: Obj) -> None:
            name = rc["metadata"]["name"]
            if kind == "ADDED" and not classes.get(name):
                spawn(delete(f"{virtual}{floor.RC_PATH}/{name}"))

        async def on_virtual_pod(kind: str, pod: Obj) -> None:
            m, rc = pod["metadata"], pod["spec"].get("runtimeClassName") or ""
            key = f"{m['namespace']}/{m['name']}"
            if kind == "DELETED":
                pods_by_class.get(rc, {}).pop(key, None)
                if classes.get(rc):
                    spawn(delete(host_pod_url(pod)))
            elif kind == "ADDED":
                pods_by_class.setdefault(rc, {})[key] = pod
                if classes.get(rc):
                    spawn(create_host_pod(pod))

        host_rcs, virtual_rcs, pods = await asyncio.gather(*(floor._get(session, url) for url in (
            host + floor.RC_PATH, virtual + floor.RC_PATH, virtual + "/api/v1/pods")))
        for rc in host_rcs["items"]:
            classes[rc["metadata"]["name"]] = _matching(rc)
        for pod in pods["items"]:
            m = pod["metadata"]
            pods_by_class.setdefault(pod["spec"].get("runtimeClassName") or "", {})[
                f"{m['namespace']}/{m['name']}"] = pod
        connected = asyncio.Barrier(3)
        await asyncio.gather(
            _watch(session, host + floor.RC_PATH, host_rcs["metadata"]["resourceVersion"], on_host_class, connected),
            _watch(session, virtual + floor.RC_PATH, virtual_rcs["metadata"]["resourceVersion"], on_virtual_class,
                   connected),
            _watch(session, virtual + "/api/v1/pods", pods["metadata"]["resourceVersion"], on_virtual_pod, connected))


def main() -> None:
    floor.command(run, __doc__)


if __name__ == "__main__":
    main()
