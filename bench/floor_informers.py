"""A reference beside the floor, not the floor: the initial sync's API work (bench.floor) done by a minimal
watch-and-cache controller, the least a controller built on informers pays before any logic of its own.

    python -m bench.floor_informers --host URL --virtual URL

Like bench.floor it writes the matching RuntimeClasses, each allowed pod's TokenRequest and host pod, and each
refused pod's SyncWarning Event, with the same libraries and concurrency. Unlike it, it reads through four
informers, as the syncer does: the host RuntimeClasses, the virtual pods, the host pods of its namespace and the
virtual RuntimeClasses are each listed, then watched from the list's resourceVersion, every event decoded
(orjson) and kept in a dict by namespace/name, so the echoes of its own writes are decoded and cached too. It
writes from the caches once the lists are in, and exits when every written object's echo is in its cache.

No work queue, reconcile, translation, comparison, logging, events library or metrics: what the syncer spends
beyond this is what its controller logic costs. `make bench` runs it at N = 5,000 beside the syncer and the
floor, and shows the syncer's ratios to it without a target.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from bench import floor
from bench.names import HOST_NAMESPACE

Obj = dict[str, Any]
WATCH_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_read=None)


class Informer:
    """A list, then a watch from its resourceVersion, into a dict of objects by namespace/name."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url
        self.objects: dict[str, Obj] = {}
        self.listed = asyncio.Event()
        self.changed = asyncio.Event()

    @staticmethod
    def key(obj: Obj) -> str:
        meta = obj["metadata"]
        return f"{meta.get('namespace', '')}/{meta['name']}"

    async def run(self) -> None:
        listed = await floor._get(self.session, self.url)
        self.objects = {self.key(o): o for o in listed["items"]}
        self.listed.set()
        params = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"]}
        async with self.session.get(self.url, params=params, headers=floor.JSON, timeout=WATCH_TIMEOUT) as resp:
            async for line in resp.content:
                event = orjson.loads(line)
                obj = event["object"]
                if event["type"] == "DELETED":
                    self.objects.pop(self.key(obj), None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    self.objects[self.key(obj)] = obj
                self.changed.set()

    async def holds(self, keys: set[str]) -> None:
        """Wait until every key in `keys` is cached."""
        while not keys <= self.objects.keys():
            self.changed.clear()
            await self.changed.wait()


async def run(host: str, virtual: str) -> None:
    """Do the floor's API work against the two servers (base URLs), reading through informers."""
    async with aiohttp.ClientSession() as session:
        host_rcs = Informer(session, host + floor.RC_PATH)
        vpods = Informer(session, virtual + "/api/v1/pods")
        hpods = Informer(session, f"{host}/api/v1/namespaces/{HOST_NAMESPACE}/pods")
        vrcs = Informer(session, virtual + floor.RC_PATH)
        informers = [host_rcs, vpods, hpods, vrcs]
        tasks = [asyncio.create_task(i.run()) for i in informers]
        await asyncio.gather(*(i.listed.wait() for i in informers))
        matching = floor.matching_classes(list(host_rcs.objects.values()))
        write_class, write_pod = floor.writers(session, host, virtual, matching)
        written_pods: set[str] = set()

        async def write(pod: Obj) -> None:
            created = await write_pod(pod)
            if created is not None:
                written_pods.add(Informer.key(created))

        await asyncio.gather(floor._pool(2, list(matching.values()), write_class),
                             floor._pool(4, list(vpods.objects.values()), write))
        await asyncio.gather(hpods.holds(written_pods), vrcs.holds({f"/{name}" for name in matching}))
        for task in tasks:
            task.cancel()


def main() -> None:
    floor.command(run, __doc__)


if __name__ == "__main__":
    main()
