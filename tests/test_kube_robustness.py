"""The controller runtime against API answers no well-behaved server sends but a proxy or a broken server can: watch
events that cannot be applied, Status replies whose reason or message is no string, a watch ERROR whose reason says
Expired with another code, a Retry-After of a day. Each must neither kill a loop that must never end (an informer's
run, a controller's worker) nor turn into a loop of requests. The informer runs over real HTTP against a stand-in
API server (what kubesim does not model) or kubesim itself (its faults), with its retries and stream timing on an
injected FakeClock: the number of requests is counted until the informer waits, no wall-clock window is timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from syncer.kube.cache import Store
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import FakeClock
from syncer.kube.controller import Controller
from syncer.kube.informer import WATCH_IDLE_TIMEOUT, Backoff, Informer
from syncer.kube.resources import RUNTIMECLASSES
from syncer.kube.workqueue import RateLimiter, WorkQueue
from syncer.metrics import Metrics
from tests.conftest import Clusters, eventually, serving

Obj = dict[str, Any]
INFORMER = "fake/runtimeclasses.node.k8s.io"  # how the informer names itself in its log lines


class StandIn:
    """A RuntimeClass API server. A list answers at resourceVersion `list_rvs[i]` for the i-th list (the last one
    after); a watch from resourceVersion rv sends the events `streams[rv]` and ends, or, for an rv not in `streams`,
    stays open and silent (a healthy, quiet watch) until `closed`. `answer`, when set, is (status, body) of every
    request instead. `watched_from` is the resourceVersion of each watch request."""

    def __init__(self, streams: dict[str, list[Any]] | None = None, list_rvs: tuple[str, ...] = ("10",)) -> None:
        self.streams = streams or {}
        self.list_rvs = list_rvs
        self.answer: tuple[int, Obj] | None = None
        self.lists = 0
        self.watched_from: list[str] = []
        self.closed = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.answer is not None:
            status, body = self.answer
            return web.Response(status=status, text=json.dumps(body), content_type="application/json")
        if request.query.get("watch") != "true":
            rv = self.list_rvs[min(self.lists, len(self.list_rvs) - 1)]
            self.lists += 1
            return web.json_response({"kind": "RuntimeClassList", "metadata": {"resourceVersion": rv}, "items": []})
        rv = request.query["resourceVersion"]
        self.watched_from.append(rv)
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        if rv not in self.streams:
            await self.closed.wait()
        for event in self.streams.get(rv, []):
            await resp.write(json.dumps(event).encode() + b"\n")
        await resp.write_eof()
        return resp


@contextlib.asynccontextmanager
async def informing(server: StandIn, clock: FakeClock) -> AsyncIterator[tuple[Informer, asyncio.Task[None]]]:
    """An informer of RuntimeClasses on `server` whose retries and stream timing run on `clock`, backing off 4, 8,
    16 s; yields it and the task of its run."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    async with serving(app) as url:
        client = KubeClient(k8s_client.ApiClient(k8s_client.Configuration(host=url)), "fake")
        inf = Informer(client, RUNTIMECLASSES, Store(), clock=clock, watch_clock=clock,
                       backoff=Backoff(initial=4, cap=16, jitter=0))
        stop = asyncio.Event()
        task = asyncio.create_task(inf.run(stop))
        try:
            yield inf, task
        finally:
            stop.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            server.closed.set()
            await client.close()


def backing_off(clock: FakeClock, seconds: float) -> bool:
    """Whether the only timer on `clock` is a retry `seconds` from now (the watch's idle timer is gone)."""
    return clock.pending() == [clock.now() + seconds]


UNUSABLE = {  # events the cache cannot take and that do not move the watch's resourceVersion
    "object-a-string": {"type": "MODIFIED", "object": "not an object"},
    "object-empty": {"type": "MODIFIED", "object": {}},
    "no-metadata": {"type": "ADDED", "object": {"kind": "RuntimeClass", "handler": "h"}},
    "no-resource-version": {"type": "MODIFIED", "object": {"kind": "RuntimeClass", "metadata": {"name": "a"}}},
    "unknown-type": {"type": "SYNC", "object": {"kind": "RuntimeClass", "metadata": {"name": "a"}}},
}


@pytest.mark.parametrize("event", list(UNUSABLE.values()), ids=list(UNUSABLE))
async def test_a_watch_that_only_replays_an_unusable_event_is_backed_off(
        event: Obj, caplog: pytest.LogCaptureFixture) -> None:
    # The event does not move the resourceVersion, so a watch from the same one gets it again: resumed at once, that
    # was thousands of watch requests a second. client-go's StreamWatcher ends a watch on an event it cannot decode
    # and the reflector backs off (k8s.io/apimachinery/pkg/watch/streamwatcher.go receive; client-go
    # tools/cache/reflector.go handleWatch and its backoff manager), from the first such watch: 4 s, then 8 s here.
    caplog.set_level(logging.INFO, logger="syncer.kube.informer")
    server, clock = StandIn({"10": [event]}), FakeClock()
    async with informing(server, clock) as (inf, _):
        await eventually(lambda: len(server.watched_from) > 1 or backing_off(clock, 4), "the first watch's end")
        assert server.watched_from == ["10"], "a watch that applied nothing was resumed at once"
        assert inf.last_error is not None and inf.last_error.reason == "WatchNoProgress"
        clock.advance(4)
        await eventually(lambda: len(server.watched_from) > 2 or backing_off(clock, 8), "the second watch's end")
        assert server.watched_from == ["10", "10"] and server.lists == 1  # the backoff doubled: nothing reset it
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"{INFORMER}: ")]
    assert any("WatchNoProgress" in m and "from resourceVersion 10 ended after 1 event(s)" in m for m in logged)


async def test_a_watch_that_replays_a_bookmark_of_its_own_resource_version_is_a_very_short_watch() -> None:
    # A BOOKMARK at the watch's own resourceVersion moves nothing (kube-apiserver never sends one: cacheWatcher.process
    # sends only events and bookmarks newer than the watch's resourceVersion, k8s.io/apiserver/pkg/storage/cacher):
    # the stream that ends at once after it is a "very short watch", the second in a row backed off (4 s).
    same = {"type": "BOOKMARK", "object": {"kind": "RuntimeClass", "metadata": {"resourceVersion": "10"}}}
    server, clock = StandIn({"10": [same]}), FakeClock()
    async with informing(server, clock) as (inf, _):
        await eventually(lambda: len(server.watched_from) > 2 or backing_off(clock, 4), "two watches' end")
        assert server.watched_from == ["10", "10"]
        assert inf.last_error is not None and inf.last_error.reason == "VeryShortWatch"


async def test_a_watch_that_applied_an_event_after_an_unusable_one_is_resumed_at_once() -> None:
    # the change at 12 moved the resourceVersion: the next watch starts after both events, nothing to back off
    bad = UNUSABLE["object-empty"]
    good = {"type": "ADDED", "object": {"metadata": {"name": "b", "resourceVersion": "12"}}}
    server, clock = StandIn({"10": [bad, good]}), FakeClock()
    async with informing(server, clock) as (inf, _):
        await eventually(lambda: server.watched_from == ["10", "12"], "the watch resumed from 12")
        assert inf.store.get("b") is not None and inf.last_error is None
        assert clock.pending() == [clock.now() + WATCH_IDLE_TIMEOUT]  # only the open stream's idle timer


@pytest.mark.parametrize("status", [{"reason": "Expired", "message": "too old resource version"},
                                    {"reason": "Gone", "code": 500, "message": "too old resource version"}],
                         ids=["Expired-without-code", "Gone-with-500"])
async def test_a_watch_error_whose_reason_says_expired_relists(status: Obj) -> None:
    # client-go's reflector re-lists on isExpiredError: `apierrors.IsResourceExpired(err) || apierrors.IsGone(err)`,
    # both of which read the Status reason, not the code (client-go tools/cache/reflector.go; apimachinery
    # pkg/api/errors/errors.go). Retried from resourceVersion 10 instead, the watch failed for ever.
    event = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure", **status}}
    server, clock = StandIn({"10": [event]}, list_rvs=("10", "20")), FakeClock()
    async with informing(server, clock) as (inf, _):
        await eventually(lambda: len(server.watched_from) > 1 or backing_off(clock, 4), "the 410 handled")
        assert server.watched_from == ["10", "20"] and server.lists == 2 and inf.last_error is None


async def test_an_informer_survives_a_status_whose_reason_is_no_string() -> None:
    # metav1.Status's reason and message are strings (k8s.io/apimachinery/pkg/apis/meta/v1/types.go); one that is
    # not was an unhashable reason raised in the run's error handler: the informer's run ended ("never raises")
    server, clock = StandIn(), FakeClock()
    server.answer = (500, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                           "reason": {"unexpected": "shape"}, "message": "etcd leader changed"})
    async with informing(server, clock) as (inf, task):
        await eventually(lambda: task.done() or backing_off(clock, 4), "the failed list handled")
        assert not task.done() and inf.last_error is not None
        # the HTTP reason phrase instead (as for any error body that is no Status), the message as it was
        assert (inf.last_error.reason, inf.last_error.message) == ("Internal Server Error", "etcd leader changed")
        clock.advance(4)
        await eventually(lambda: task.done() or backing_off(clock, 8), "the list retried")
        assert not task.done()


class FailingList:
    """A client whose every list raises `error` (an ApiError some code built with a reason that is no string)."""

    cluster = "fake"

    def __init__(self, error: ApiError) -> None:
        self.error = error

    async def list(self, *args: Any, **kw: Any) -> Obj:
        raise self.error


async def test_an_informer_survives_an_api_error_built_with_a_reason_that_is_no_string() -> None:
    clock = FakeClock()
    bad = ApiError(500, {"unexpected": "shape"}, "etcd leader changed")  # type: ignore[arg-type]
    inf = Informer(FailingList(bad), RUNTIMECLASSES, Store(), clock=clock,  # type: ignore[arg-type]
                   backoff=Backoff(initial=4, cap=16, jitter=0))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await eventually(lambda: task.done() or backing_off(clock, 4), "the failed list handled")
        assert not task.done() and inf.last_error is not None and inf.last_error.reason == "{'unexpected': 'shape'}"
    finally:
        stop.set()
        await task


@contextlib.asynccontextmanager
async def reconciling(reconcile: Any) -> AsyncIterator[tuple[Controller, WorkQueue, FakeClock]]:
    """A one-worker controller running `reconcile`, its queue's retries on a FakeClock (1 s doubling, cap 30 s)."""
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=1.0, cap=30.0, qps=1e9, burst=10**9, clock=clock), clock=clock)
    controller = Controller("t", queue, reconcile, Metrics(), workers=1)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        yield controller, queue, clock
    finally:
        stop.set()
        await task


async def test_a_worker_survives_a_403_whose_status_message_is_a_number() -> None:
    # `words in e.message` of an int message raised in the worker's failure handling: the only worker ended
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": 403}
    server = StandIn()
    server.answer = (403, body)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    async with serving(app) as url:
        client = KubeClient(k8s_client.ApiClient(k8s_client.Configuration(host=url)), "fake")

        async def reconcile(key: str) -> float | None:
            await client.get(RUNTIMECLASSES, key)
            return None

        try:
            async with reconciling(reconcile) as (controller, queue, _):
                queue.add("a")
                await eventually(lambda: not controller.healthy or "a" in queue.pending(), "a's failure handled")
                assert controller.healthy and queue.pending() == {"a": 1.0}
                # readiness shows the refusal, with the body as its message (the Status's is no string)
                assert controller.forbidden == {("fake", "get", "runtimeclasses.node.k8s.io"): json.dumps(body)}
        finally:
            await client.close()


async def test_a_worker_survives_an_api_error_built_with_a_message_that_is_no_string() -> None:
    async def reconcile(key: str) -> float | None:
        raise ApiError(403, "Forbidden", 403, cluster="fake", verb="get", resource="pods")  # type: ignore[arg-type]

    async with reconciling(reconcile) as (controller, queue, _):
        queue.add("a")
        await eventually(lambda: not controller.healthy or "a" in queue.pending(), "a's failure handled")
        assert controller.healthy and controller.forbidden == {("fake", "get", "pods"): "403"}


async def test_an_informer_waits_at_most_its_backoff_cap_whatever_retry_after_says(clusters: Clusters) -> None:
    # client-go's reflector waits on its backoff manager (cap 30 s) and never on Retry-After (tools/cache/reflector.go:
    # `r.delayHandler()` on a 429, `wait.BackoffUntil` otherwise); here a Retry-After raises the delay up to the cap
    clusters.host_server.faults.fail(503, verb="list", resource="runtimeclasses", retry_after=86400)
    clock = FakeClock()
    inf = Informer(clusters.host, RUNTIMECLASSES, Store(), clock=clock, backoff=Backoff(initial=4, cap=16, jitter=0))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await eventually(lambda: bool(clock.pending()), "the failed list handled")
        assert clock.pending() == [clock.now() + 16]  # the cap, not a day
        clock.advance(16)
        await asyncio.wait_for(inf.synced.wait(), 5)
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_key_waits_at_most_the_rate_limiters_cap_whatever_retry_after_says(clusters: Clusters) -> None:
    # client-go's workqueue retries a failed key after at most its rate limiter's maxDelay
    # (util/workqueue/default_rate_limiters.go); the REST client honours Retry-After only within one request's at most
    # 10 retries (rest/with_retry.go). A Retry-After of a day parked the key for a day.
    clusters.host_server.faults.fail(429, verb="get", resource="runtimeclasses", retry_after=86400)

    async def reconcile(key: str) -> float | None:
        await clusters.host.get(RUNTIMECLASSES, key)
        return None

    async with reconciling(reconcile) as (controller, queue, _):
        queue.add("a")
        await eventually(lambda: "a" in queue.pending(), "a's failure handled")
        assert queue.pending() == {"a": 30.0} and controller.healthy


async def test_a_retry_after_that_is_no_number_of_seconds_is_ignored() -> None:
    # client-go's retryAfterSeconds reads the header with strconv.Atoi (ASCII digits; rest/request.go); Python's
    # str.isdigit() also takes "²", which float() refuses: the request raised ValueError, not an ApiError
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=503, text="busy", headers={"Retry-After": "\u00b2"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    async with serving(app) as url:
        client = KubeClient(k8s_client.ApiClient(k8s_client.Configuration(host=url)), "fake")
        try:
            with pytest.raises(ApiError) as err:
                await client.get(RUNTIMECLASSES, "a")
        finally:
            await client.close()
    assert err.value.status == 503 and err.value.retry_after is None
