"""How the client reads a watch stream: kube-apiserver's JSON framing is one event per line, of any length
(client-go's framer, k8s.io/apimachinery/pkg/util/framer, has no per-line limit); a line that is not an event ends
the watch with an error, as client-go's StreamWatcher does on a decode error, so the reflector resumes from the last
good resourceVersion instead of moving past a change it never saw."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from syncer.kube import client as client_module
from syncer.kube.cache import Store
from syncer.kube.client import ApiError, KubeClient, WatchEvent
from syncer.kube.informer import Backoff, Informer
from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import Clusters, eventually, rc, serving


def added(name: str, rv: str, **annotations: str) -> bytes:
    """An ADDED event of RuntimeClass `name` at `rv`, as one line."""
    obj = {"kind": "RuntimeClass", "handler": "h",
           "metadata": {"name": name, "resourceVersion": rv, "annotations": annotations}}
    return json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n"


@contextlib.asynccontextmanager
async def streaming(*chunks: bytes) -> AsyncIterator[KubeClient]:
    """A client of a server whose every watch sends `chunks` (as separate writes) and ends."""
    async def watch(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        for chunk in chunks:
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/apis/node.k8s.io/v1/runtimeclasses", watch)
    async with serving(app) as url:
        client = KubeClient(k8s_client.ApiClient(k8s_client.Configuration(host=url)), "fake")
        try:
            yield client
        finally:
            await client.close()


async def events(client: KubeClient) -> tuple[list[tuple[str, str]], ApiError | None]:
    """(type, resourceVersion) of each event one watch yields, and the error that ended it (None: a clean end)."""
    seen: list[tuple[str, str]] = []
    try:
        async for ev in client.watch(RUNTIMECLASSES, "10"):
            seen.append((ev.type, ev.object["metadata"]["resourceVersion"]))
    except ApiError as e:
        return seen, e
    return seen, None


async def test_a_malformed_event_ends_the_watch_at_the_last_good_one() -> None:
    # client-go's StreamWatcher.receive: a decode error is sent as an ERROR and the watch stops; the reflector
    # resumes from the last resourceVersion it applied (11), so event 13 is read again, after 12 was not lost
    async with streaming(added("a", "11"), b'{"type": "MODIFIED", "object": {"metad\n', added("b", "13")) as client:
        seen, error = await events(client)
    assert seen == [("ADDED", "11")]
    assert error is not None and error.reason == "BadWatchEvent" and not error.transient


async def test_an_event_without_a_type_ends_the_watch() -> None:
    async with streaming(added("a", "11"), b'{"object": {}}\n', added("b", "13")) as client:
        seen, error = await events(client)
    assert seen == [("ADDED", "11")] and error is not None and error.reason == "BadWatchEvent"


async def test_a_partial_last_line_at_the_end_of_the_stream_is_dropped() -> None:
    # the stream ended inside an event: nothing after it was applied, the next watch starts from 11
    async with streaming(added("a", "11"), added("b", "12")[:30]) as client:
        seen, error = await events(client)
    assert seen == [("ADDED", "11")] and error is None


async def test_events_split_across_writes_and_a_last_line_without_newline() -> None:
    line = added("a", "11")
    async with streaming(line[:7], line[7:] + added("b", "12")[:20], added("b", "12")[20:],
                         added("c", "13").rstrip(b"\n")) as client:
        seen, error = await events(client)
    assert seen == [("ADDED", "11"), ("ADDED", "12"), ("ADDED", "13")] and error is None


async def test_an_event_over_any_line_limit_of_the_http_library_is_read() -> None:
    # aiohttp's readline stops at its read buffer (2 MiB here, x2 = 4 MiB) with LineTooLong; a 6 MiB object (an
    # annotation on a kine-backed vcluster, where etcd's 1.5 MiB request limit does not apply) is one line
    big = added("big", "11", x="a" * (6 * 2**20))
    async with streaming(big, added("b", "12")) as client:
        seen, error = await events(client)
    assert seen == [("ADDED", "11"), ("ADDED", "12")] and error is None


async def test_an_event_over_the_sanity_cap_is_an_api_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "MAX_WATCH_EVENT_BYTES", 4096)
    async with streaming(added("a", "11"), added("big", "12", x="a" * 8192)) as client:
        seen, error = await events(client)
    assert seen == [("ADDED", "11")] and error is not None and error.reason == "WatchEventTooLarge"


async def test_an_informer_reads_an_object_over_4_mib_and_goes_on(clusters: Clusters) -> None:
    # through kubesim: a RuntimeClass with a 5 MiB annotation written to storage (a kine-backed API server takes
    # it); the informer caches it and the object created after it
    inf = Informer(clusters.host, RUNTIMECLASSES, Store(), backoff=Backoff(initial=0.05, cap=0.2))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await asyncio.wait_for(inf.synced.wait(), 5)
        big = rc("big")
        big["metadata"]["annotations"] = {"x": "a" * (5 * 2**20)}
        clusters.host_server.storage.write(RUNTIMECLASSES, big, None)
        await clusters.host.create(RUNTIMECLASSES, rc("after"))
        await eventually(lambda: inf.store.get("after") is not None, "the object after the big one", timeout=5)
        assert inf.store.get("big") is not None and not task.done() and inf.lists == 1
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Exploding:
    """A KubeClient stand-in whose first watch raises what no handler expects (a library bug), then behaves."""

    cluster = "fake"

    def __init__(self) -> None:
        self.watches = 0

    async def list(self, *a: object, **kw: object) -> dict[str, object]:
        return {"metadata": {"resourceVersion": "10"}, "items": []}

    async def watch(self, *a: object, **kw: object) -> AsyncIterator[WatchEvent]:
        self.watches += 1
        await asyncio.sleep(0)
        if self.watches == 1:
            raise RuntimeError("an exception no one expected")
        yield WatchEvent("ADDED", {"metadata": {"name": "later", "resourceVersion": "11"}})
        await asyncio.Event().wait()


async def test_the_informer_survives_any_exception_and_retries() -> None:
    # client-go's reflector: `wait.BackoffUntil(func() { if err := r.ListAndWatch(stopCh); err != nil {
    # r.watchErrorHandler(r, err) } }, r.backoffManager, true, stopCh)`: any error is handled and retried
    client = Exploding()
    inf = Informer(client, RUNTIMECLASSES, Store(), backoff=Backoff(initial=0.01, cap=0.02))  # type: ignore[arg-type]
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await eventually(lambda: inf.store.get("later") is not None, "the watch after the exception", timeout=2)
        assert not task.done() and client.watches == 2
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
