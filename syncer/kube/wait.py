"""Wait for a condition on the objects of a resource, by listing and then watching (no polling).

Used by the demo and the tests: `await wait_for(client, PODS, lambda objs: ..., namespace="default")`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from syncer.kube.cache import object_key
from syncer.kube.client import KubeClient
from syncer.kube.resources import APIResource

Obj = dict[str, Any]


async def wait_for(client: KubeClient, res: APIResource, predicate: Callable[[dict[str, Obj]], bool], *,
                   namespace: str | None = None, timeout: float = 30.0, what: str = "") -> dict[str, Obj]:
    """Return the objects (by `ns/name` key) as soon as `predicate(objects)` is true.

    Raises:
        TimeoutError: not true within `timeout` seconds; the message says what was awaited (`what`)
            and the last state seen.
    """
    objects: dict[str, Obj] = {}

    async def run() -> dict[str, Obj]:
        while True:
            listed = await client.list(res, namespace)
            objects.clear()
            objects.update({object_key(o): o for o in listed.get("items") or []})
            if predicate(objects):
                return objects
            rv = listed["metadata"]["resourceVersion"]
            async for ev in client.watch(res, rv, namespace, timeout_seconds=max(1, int(timeout) + 1)):
                if ev.type == "ERROR":
                    break
                if ev.type == "BOOKMARK":
                    continue
                key = object_key(ev.object)
                if ev.type == "DELETED":
                    objects.pop(key, None)
                else:
                    objects[key] = ev.object
                if predicate(objects):
                    return objects

    try:
        return await asyncio.wait_for(run(), timeout)
    except TimeoutError:
        names = ", ".join(sorted(objects)) or "none"
        raise TimeoutError(f"timed out after {timeout}s waiting for {what or 'a condition'} on "
                           f"{client.cluster} {res.qualified} (objects seen: {names})") from None
