"""A tenant's image change that never reaches the host pod, the syncer idle with only the pod's token renewal
pending: the symptom of the soak's failure seen once with seed 20261512 (docs/development.md). This is one cause
that gives it, in the test API server; whether it was that run's cause is not known.

The syncer's informer resumes a watch from the resourceVersion of the last BOOKMARK it got, as client-go's reflector
does: a bookmark says every change up to its version was sent. The test API server's watch (kubesim/apiserver.py,
`_watch`) stamps a bookmark with the storage's current version whenever its wait for the next change times out,
whatever its queue still holds. When that timeout races a cut of the stream (`cut_watches`, `expire_history` and a
restart close every watch: an end marker is queued and the watch is unregistered), a change made after the cut is
never queued to that watch, yet the bookmark the watch still sends before it reads its end marker covers it. The
syncer resumes after the change, its cache keeps the pod as it was, no event wakes the pod again, and the host pod
keeps the old image for good.

The race needs the watch's bookmark timer to fall due just before the cut is handled, which a stalled event loop (a
busy machine) makes likely: timers and ready work then run together. Here the stall is made: the loop is blocked so
that the watch's timer and this test's timer fall due in the same turn, the watch's first; this test's timer cuts the
stream and writes the tenant's change on the storage (as the other stale-cache tests write it) before the watch
runs again. The order comes from the timers, not from how long anything takes.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Mapping
from typing import Any

import pytest

from syncer.kube.resources import PODS
from tests.conftest import HOST_NS, Clusters, pod, rc_config, running_syncer
from tests.test_pod_lifecycle import DEV
from tests.test_pod_sync import hname, host_pods

OLD, NEW = "nginx:1.27", "nginx:1.28"  # the image pod() gives, and the tenant's new one


def image(p: Mapping[str, Any] | None) -> str:
    """The pod's (first and only) container's image; "-" for no pod."""
    return str(p["spec"]["containers"][0]["image"]) if p else "-"


async def test_an_image_change_behind_a_bookmark_of_a_cut_watch_reaches_the_host_pod(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        synced = await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        assert image(synced[hname("web")]) == OLD
        await syncer.wait_idle()
        server, loop = clusters.virtual_server, asyncio.get_running_loop()

        def cut_then_change() -> None:
            # Runs after the watch's wait timed out and before the watch handles it: its queue gets the cut's end
            # marker only, and the tenant's change is made after the cut, before the bookmark.
            server.cut_watches()
            stored = server.storage.objects(PODS)[("default", "web")]
            changed = copy.deepcopy(stored)
            changed["spec"]["containers"][0]["image"] = NEW
            server.storage.write(PODS, changed, stored)  # the tenant's image change, on the storage

        # The syncer's idle watch of virtual pods waits at most 0.5 s (the fixture's bookmark interval) for a change.
        # A stall of 0.7 s makes its wait's timer and this one (0.6 s) fall due in the same turn, its own first
        # (timers run in the order they fall due); the watch's wake-up is then queued behind cut_then_change.
        loop.call_later(0.6, cut_then_change)
        loop.call_soon(time.sleep, 0.7)
        try:
            await host_pods(clusters, lambda o: hname("web") in o and image(o[hname("web")]) == NEW,
                            "the changed image on the host pod")
        except TimeoutError:
            await syncer.wait_idle()
            host = await clusters.host.get(PODS, hname("web"), HOST_NS)
            pytest.fail(f"the virtual pod's image is {NEW}, its host pod's {image(host)}; the syncer's cache still "
                        f"holds {image(syncer.virtual_pods.full('default/web'))}, and the pod's only delayed "
                        f"work is {syncer.pod_queue.pending()}: the change was never seen")
