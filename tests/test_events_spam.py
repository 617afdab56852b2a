"""client-go's spam filter on events (k8s.io/client-go/tools/record/events_cache.go `EventSourceObjectSpamFilter`):
a source may write `defaultSpamBurst` = 25 events about one object, then one every 1/`defaultSpamQPS` = 300 s; the
key is `getSpamKey` (source and object, not the reason or message). A filtered event is not written but counted: the
correlator counts before it filters, so the next Event written carries every occurrence. The buckets are an LRU of
`maxLruCacheEntries` = 4096. Time is the injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.kube.client import ApiError
from syncer.kube.clock import FakeClock
from syncer.kube.events import EventRecorder
from syncer.kube.resources import EVENTS, PODS
from tests.conftest import Clusters, eventually, pod, rc_config, running_syncer
from tests.test_events_refused import DEV, Events, no_answer, vpod

Obj = dict[str, Any]


def event_writes(c: Clusters) -> list[str]:
    return [method for method, path, _ in c.virtual_server.requests
            if method in ("POST", "PATCH") and "/events" in path]


async def test_a_pod_relabelled_again_and_again_gets_25_writes_then_one_each_300_s(clusters: Clusters) -> None:
    # the audit's reproduction: a refused pod that the tenant relabels gets its SyncWarning again on each reconcile
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        reconciled = syncer.metrics.registry.get_sample_value

        def successes() -> float:
            return float(reconciled("controller_runtime_reconcile_total",
                                    {"controller": "pod", "result": "success"}) or 0)

        async def occurrence(i: int) -> None:  # one reconcile, one SyncWarning
            before = successes()
            if i == 0:
                await clusters.virtual.create(PODS, pod("wasm", "wasm"), "default")
            else:
                await clusters.virtual.patch(PODS, "wasm", {"metadata": {"labels": {"i": str(i)}}}, "default")
            await eventually(lambda: successes() == before + 1, f"occurrence {i + 1} reconciled")
            await syncer.wait_idle()

        for i in range(30):
            await occurrence(i)
        (event,) = (await clusters.virtual.list(EVENTS, "default"))["items"]
        assert (event["count"], event_writes(clusters)) == (25, ["POST"] + ["PATCH"] * 24)
        clock.advance(299)
        await occurrence(30)
        assert len(event_writes(clusters)) == 25  # no token yet
        clock.advance(1)
        await occurrence(31)
        (event,) = (await clusters.virtual.list(EVENTS, "default"))["items"]
    assert event["count"] == 32 and len(event_writes(clusters)) == 26  # every occurrence counted


def recorder(events: Events, clock: FakeClock) -> EventRecorder:
    return EventRecorder(events, "pod-syncer", "pod-syncer-a", lambda: "2026-01-01T00:00:00Z",  # type: ignore[arg-type]
                         clock=clock)


async def test_the_bucket_is_per_source_and_object_not_per_reason() -> None:
    clock = FakeClock()
    events = Events()
    r = recorder(events, clock)
    written = [await r.record(PODS, vpod("a"), "Warning", "SyncWarning", f"message {i}", "SyncPod") for i in range(25)]
    assert all(e is not None for e in written)
    assert await r.record(PODS, vpod("a"), "Warning", "SyncError", "another reason", "SyncPod") is None
    assert await r.record(PODS, vpod("b"), "Warning", "SyncError", "another reason", "SyncPod") is not None
    other = EventRecorder(events, "runtimeclass-syncer", "x", clock=clock)  # type: ignore[arg-type]
    assert await other.record(PODS, vpod("a"), "Warning", "PatchFailed", "m", "SyncRuntimeClass") is not None
    clock.advance(300)
    assert await r.record(PODS, vpod("a"), "Warning", "SyncError", "another reason", "SyncPod") is not None
    assert await r.record(PODS, vpod("a"), "Warning", "SyncError", "another reason", "SyncPod") is None


async def test_a_write_tried_again_does_not_use_up_the_bucket() -> None:
    clock = FakeClock()
    events = Events(*[no_answer() for _ in range(11)])
    r = recorder(events, clock)
    for _ in range(11):  # one event, its write retried by the reconcile (client-go filters it once)
        with pytest.raises(ApiError):
            await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod")
    results = [await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod") for _ in range(26)]
    assert [e is not None for e in results] == [True] * 25 + [False]


async def test_the_buckets_are_an_lru_of_4096_objects() -> None:
    clock = FakeClock()
    r = recorder(Events(), clock)
    for _ in range(25):
        await r.record(PODS, vpod("a"), "Warning", "SyncWarning", "m", "SyncPod")
    assert await r.record(PODS, vpod("a"), "Warning", "SyncWarning", "m", "SyncPod") is None
    for i in range(4095):  # a's bucket is still among the 4096 most recently used
        await r.record(PODS, vpod(f"p{i}"), "Warning", "SyncWarning", "m", "SyncPod")
    assert await r.record(PODS, vpod("a"), "Warning", "SyncWarning", "m", "SyncPod") is None
    for i in range(4096):  # now it is not: forgotten, a full bucket again
        await r.record(PODS, vpod(f"q{i}"), "Warning", "SyncWarning", "m", "SyncPod")
    assert await r.record(PODS, vpod("a"), "Warning", "SyncWarning", "m", "SyncPod") is not None
