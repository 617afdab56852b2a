"""The reflector against streams that misbehave: closed at once without an event, a resourceVersion that keeps
expiring, and a half-open connection that stays silent. client-go's reflector (k8s.io/client-go/tools/cache/
reflector.go) backs off a "very short watch" and every re-list; kube-apiserver sends a BOOKMARK about once a minute,
so a stream silent for much longer is a dead connection. The rules are timed on injected FakeClocks (no test waits
for them), except the end-to-end half-open test, which runs on real sockets with a short silence limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from syncer.kube.cache import Store
from syncer.kube.client import ApiError, KubeClient, WatchEvent, sleep_or_stop
from syncer.kube.clock import FakeClock
from syncer.kube.informer import EXPIRED_BACKOFF_RESET, WATCH_IDLE_TIMEOUT, Backoff, Informer
from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import Clusters, eventually, rc

EXPIRED = WatchEvent("ERROR", {"kind": "Status", "code": 410, "reason": "Expired",
                               "message": "too old resource version"})


def bookmark(rv: str) -> WatchEvent:
    """A BOOKMARK at resourceVersion `rv`."""
    return WatchEvent("BOOKMARK", {"kind": "RuntimeClass", "metadata": {"resourceVersion": rv}})


class ScriptedClient:
    """A KubeClient stand-in: every list returns one object at resourceVersion 10; every watch is a stream the
    test drives through `streams[i]` (put events; None ends it cleanly; nothing put = a silent, half-open stream).
    `watched_from[i]` is the resourceVersion watch i started from."""

    cluster = "fake"

    def __init__(self) -> None:
        self.lists = 0
        self.streams: list[asyncio.Queue[WatchEvent | None]] = []
        self.watched_from: list[str] = []

    async def list(self, res: Any, namespace: str | None = None, **kw: Any) -> dict[str, Any]:
        self.lists += 1
        await asyncio.sleep(0)
        return {"metadata": {"resourceVersion": "10"}, "items": [{"metadata": {"name": "a", "resourceVersion": "5"}}]}

    async def watch(self, res: Any, resource_version: str, namespace: str | None = None, *,
                    on_connected: Callable[[], None] | None = None, **kw: Any) -> AsyncIterator[WatchEvent]:
        stream: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self.streams.append(stream)
        self.watched_from.append(resource_version)
        await asyncio.sleep(0)  # a real request suspends at least once
        if on_connected is not None:
            on_connected()
        while (ev := await stream.get()) is not None:
            yield ev


@contextlib.asynccontextmanager
async def running(client: ScriptedClient, clock: FakeClock) -> AsyncIterator[Informer]:
    """An informer on `client` whose retries and stream timing both run on `clock`, backing off 4, 8, 16 s."""
    inf = Informer(client, RUNTIMECLASSES, Store(), clock=clock, watch_clock=clock,  # type: ignore[arg-type]
                   backoff=Backoff(initial=4, cap=16, jitter=0))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await asyncio.wait_for(inf.synced.wait(), 2)
        yield inf
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def watching(client: ScriptedClient, n: int) -> None:
    """Until the n-th watch (1-based) has been opened."""
    await eventually(lambda: len(client.streams) >= n, f"watch {n} open", timeout=2)


async def test_a_watch_closed_at_once_without_events_is_retried_with_backoff() -> None:
    # client-go: a watch that lasted < 1 s and delivered no event is the error "very short watch", backed off. Here
    # the first in a row is resumed at once (a cut stream recovers without delay), the next ones back off; a
    # stream that delivered an event (a bookmark counts) or lasted 1 s and ended is resumed at once.
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock) as inf:
        await watching(client, 1)
        client.streams[0].put_nowait(bookmark("12"))
        client.streams[0].put_nowait(None)
        await watching(client, 2)
        assert client.watched_from[1] == "12" and inf.last_error is None  # resumed at once, nothing to back off
        client.streams[1].put_nowait(None)  # closed at once (0 s on the clock), no event: the first in a row
        await watching(client, 3)
        assert inf.last_error is None
        client.streams[2].put_nowait(None)  # the second in a row: a failure
        await eventually(lambda: clock.pending() == [clock.now() + 4], "the retry backed off 4 s", timeout=2)
        assert len(client.streams) == 3 and inf.last_error is not None and inf.last_error.reason == "VeryShortWatch"
        clock.advance(3.9)
        await asyncio.sleep(0.01)
        assert len(client.streams) == 3  # nothing before the backoff is over
        clock.advance(0.1)
        await watching(client, 4)
        client.streams[3].put_nowait(None)
        await eventually(lambda: clock.pending() == [clock.now() + 8], "the next retry, doubled", timeout=2)
        clock.advance(8)
        await watching(client, 5)
        clock.advance(1.0)  # a stream that lasted SHORT_WATCH is no "very short watch", events or not
        client.streams[4].put_nowait(None)
        await watching(client, 6)
        assert inf.last_error is None and clock.pending() == [clock.now() + WATCH_IDLE_TIMEOUT]  # no backoff
        client.streams[5].put_nowait(None)  # the first very short watch after a healthy one: resumed at once
        await watching(client, 7)
        assert inf.last_error is None and clock.pending() == [clock.now() + WATCH_IDLE_TIMEOUT]
        assert client.watched_from == ["10"] + ["12"] * 6 and client.lists == 1  # never a re-list


async def test_repeated_410s_relist_with_backoff_after_the_first() -> None:
    # The first 410 after a healthy stretch re-lists at once; one again within EXPIRED_BACKOFF_RESET (client-go's
    # backoff manager resets after 2 minutes) waits 4, then 8 s... although each re-list itself succeeds.
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock) as inf:
        await watching(client, 1)
        client.streams[0].put_nowait(EXPIRED)
        await watching(client, 2)
        assert client.lists == 2 and clock.pending() == [clock.now() + WATCH_IDLE_TIMEOUT]  # only the watchdog
        client.streams[1].put_nowait(EXPIRED)
        await eventually(lambda: clock.pending() == [clock.now() + 4], "the re-list backed off 4 s", timeout=2)
        assert client.lists == 2 and inf.last_error is not None and inf.last_error.expired and inf.synced.is_set()
        clock.advance(4)
        await watching(client, 3)
        assert client.lists == 3 and inf.last_error is None
        client.streams[2].put_nowait(EXPIRED)
        await eventually(lambda: clock.pending() == [clock.now() + 8], "the next re-list backed off 8 s", timeout=2)
        # Long after: the re-list due at +8 happens, and the next 410 comes after EXPIRED_BACKOFF_RESET: at once
        clock.advance(EXPIRED_BACKOFF_RESET + 10)
        await watching(client, 4)
        client.streams[3].put_nowait(EXPIRED)
        await watching(client, 5)
        assert client.lists == 5
        client.streams[4].put_nowait(EXPIRED)  # soon after that one: the backoff starts again from 4 s
        await eventually(lambda: clock.pending() == [clock.now() + 4], "the backoff reset", timeout=2)


async def test_a_silent_watch_is_broken_off_and_resumed_from_its_resource_version() -> None:
    # A half-open connection: nothing arrives, no FIN, no RST. Bookmarks keep a quiet stream alive; silence for
    # WATCH_IDLE_TIMEOUT is a failure (last_error, logged) and the watch resumes from the last version, no re-list.
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock) as inf:
        await watching(client, 1)
        assert clock.pending() == [clock.now() + WATCH_IDLE_TIMEOUT]  # one timer per stream, not per event
        clock.advance(WATCH_IDLE_TIMEOUT - 20)
        client.streams[0].put_nowait(bookmark("15"))
        await eventually(lambda: inf._rv == "15", "the bookmark applied", timeout=2)
        clock.advance(WATCH_IDLE_TIMEOUT - 1)  # the first deadline passed, but the stream spoke meanwhile
        await asyncio.sleep(0.01)
        assert inf.last_error is None and len(client.streams) == 1
        clock.advance(1)  # WATCH_IDLE_TIMEOUT of silence since the bookmark
        await eventually(lambda: inf.last_error is not None, "the silent stream taken as broken", timeout=2)
        assert inf.last_error is not None and inf.last_error.reason == "WatchStalled"
        assert clock.pending() == [clock.now() + 4]  # retried with the informer's backoff
        clock.advance(4)
        await watching(client, 2)
        assert client.watched_from == ["10", "15"] and client.lists == 1 and inf.last_error is None


class BlackHole:
    """A TCP proxy to `port` that can go silent on the connections open so far (`drop`): a load balancer or NAT that
    dropped the flow without telling either end. Connections opened later go through."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.dropped: set[asyncio.StreamWriter] = set()
        self.open: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    def drop(self) -> None:
        self.dropped |= self.open

    async def _conn(self, r1: asyncio.StreamReader, w1: asyncio.StreamWriter) -> None:
        r2, w2 = await asyncio.open_connection("127.0.0.1", self.port)
        self.open.add(w1)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            while data := await r.read(65536):
                if w1 in self.dropped:
                    continue  # swallowed: the peer never hears anything again
                w.write(data)
                await w.drain()
        await asyncio.gather(pipe(r1, w2), pipe(r2, w1), return_exceptions=True)
        for w in (w1, w2):
            w.close()


async def test_a_half_open_watch_connection_is_noticed_and_the_watch_resumed(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # End to end, on real sockets: the test API server sends a bookmark every 0.5 s; 1.5 s of silence breaks the
    # stream off (120 s against kube-apiserver's 60 s bookmarks); the change made meanwhile arrives without a re-list.
    caplog.set_level(logging.INFO, logger="syncer.kube.informer")
    proxy = BlackHole(clusters.host_server.port)
    port = await proxy.start()
    client = await KubeClient.from_kubeconfig(str(clusters.host_kubeconfig), "host", server=f"http://127.0.0.1:{port}")
    inf = Informer(client, RUNTIMECLASSES, Store(), watch_idle_timeout=1.5, backoff=Backoff(initial=0.05, cap=0.2))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await asyncio.wait_for(inf.synced.wait(), 5)
        proxy.drop()
        await clusters.host.create(RUNTIMECLASSES, rc("created-while-half-open"))
        await eventually(lambda: inf.store.get("created-while-half-open") is not None, "the change after the drop",
                         timeout=5)
        assert inf.lists == 1
        assert any("WatchStalled" in r.getMessage() for r in caplog.records)
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.close()
        proxy.server.close()


def test_the_informer_backoff_stays_at_its_cap_however_many_failures() -> None:
    # A watch refused for good (a 403 retried every 30 s) fails its 1024th time after 9.4 h; Python's `2.0 ** 1024`
    # raises OverflowError in the run loop's error handler, ending the informer. client-go's backoff manager caps
    # the delay (k8s.io/apimachinery/pkg/util/wait/backoff.go: `if b.Cap > 0 && b.Duration > b.Cap { b.Duration =
    # b.Cap }`), never an error.
    backoff = Backoff(initial=0.2, cap=30.0, jitter=0)
    delays = [backoff.next() for _ in range(1100)]
    assert delays[:3] == [0.2, 0.4, 0.8] and delays[1020:] == [30.0] * 80


UNAVAILABLE = WatchEvent("ERROR", {"kind": "Status", "code": 503, "reason": "ServiceUnavailable",
                                   "message": "the server is currently unable to handle the request"})


async def fail_twice(client: ScriptedClient, clock: FakeClock) -> None:
    """Watches 1 and 2 fail (an ERROR event at once): backed off 4, then 8 s; watch 3 is open after."""
    for i, delay in ((0, 4), (1, 8)):
        await watching(client, i + 1)
        client.streams[i].put_nowait(UNAVAILABLE)
        await eventually(lambda d=delay: clock.pending() == [clock.now() + d], f"backed off {delay} s", timeout=2)
        clock.advance(delay)
    await watching(client, 3)


async def test_a_bookmark_resets_the_backoff() -> None:
    # client-go's reflector backs off through `wait.NewExponentialBackoffManager(800ms, 30s, 2*time.Minute, ...)`
    # (tools/cache/reflector.go), which starts again at its initial delay once it went unused for 2 minutes: a quiet
    # resource's healthy watch delivers only bookmarks, and its next failure must not wait the capped delay
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock):
        await fail_twice(client, clock)
        client.streams[2].put_nowait(bookmark("12"))
        client.streams[2].put_nowait(UNAVAILABLE)
        await eventually(lambda: clock.pending() == [clock.now() + 4], "backed off 4 s again, not 16", timeout=2)


async def test_a_watch_that_lasted_two_minutes_resets_the_backoff() -> None:
    # without bookmarks (an API server without its watch cache), a watch that lasted 2 minutes worked: client-go's
    # backoff manager starts again after 2 minutes without a failure (its resetDuration, tools/cache/reflector.go)
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock):
        await fail_twice(client, clock)
        clock.advance(120.0)
        client.streams[2].put_nowait(UNAVAILABLE)
        await eventually(lambda: clock.pending() == [clock.now() + 4], "backed off 4 s again, not 16", timeout=2)


async def test_a_server_that_fails_every_watch_a_moment_later_is_backed_off_more_each_time() -> None:
    # a server that accepts every watch and fails it a few seconds later (no event) has not worked in between: the
    # backoff grows to its cap instead of starting again each time (a reset after one lasting second retried such a
    # server every 1.2 s for ever)
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock):
        await fail_twice(client, clock)
        for i, delay in ((2, 16), (3, 16)):
            clock.advance(5.0)
            client.streams[i].put_nowait(UNAVAILABLE)
            await eventually(lambda d=delay: clock.pending() == [clock.now() + d], f"backed off {delay} s", timeout=2)
            clock.advance(delay)
            await watching(client, i + 2)


async def test_a_watch_accepted_then_failing_at_once_escalates_the_log(caplog: pytest.LogCaptureFixture) -> None:
    # the API server accepts every watch and sends an ERROR right away: no watch worked, so the failures count on
    # and the fifth in a row is a warning (PERSISTENT_RETRIES), the repeats in between debug, as for a failed list
    caplog.set_level(logging.DEBUG, logger="syncer.kube.informer")
    client, clock = ScriptedClient(), FakeClock()
    async with running(client, clock) as inf:
        for i, delay in enumerate((4, 8, 16, 16, 16)):
            await watching(client, i + 1)
            client.streams[i].put_nowait(UNAVAILABLE)
            await eventually(lambda d=delay: clock.pending() == [clock.now() + d], f"backed off {delay} s", timeout=2)
            assert inf.last_error is not None and inf.last_error.status == 503
            clock.advance(delay)
        await watching(client, 6)
        assert inf.last_error is None  # accepted: /readyz is green while it lasts
    levels = [r.levelno for r in caplog.records if "HTTP 503" in r.getMessage()]
    assert levels == [logging.INFO, logging.DEBUG, logging.DEBUG, logging.DEBUG, logging.WARNING]
    assert not any("watching again" in r.getMessage() for r in caplog.records)


class SlowlyRefused(ScriptedClient):
    """Every watch request hangs without an answer (a black-holed API server) for 130 s on `clock`: longer than the
    120 s after which an accepted watch counts as one that lasted (informer.py `WORKED_AFTER`), and than the 120 s of
    silence after which a stream is taken as broken (`WatchStalled`)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    async def watch(self, res: Any, resource_version: str, namespace: str | None = None, *,
                    on_connected: Callable[[], None] | None = None, **kw: Any) -> AsyncIterator[WatchEvent]:
        self.streams.append(asyncio.Queue())
        await sleep_or_stop(130.0, asyncio.Event(), self.clock)
        raise ApiError(0, "ConnectionError", "connect timed out")
        yield  # an async generator, as the client's


async def test_a_watch_request_that_took_long_to_fail_does_not_reset_the_backoff() -> None:
    # only a watch the server accepted counts as one that lasted
    clock = FakeClock()
    client = SlowlyRefused(clock)
    async with running(client, clock) as inf:
        for i, delay in enumerate((4, 8, 16)):
            await watching(client, i + 1)
            await asyncio.sleep(0.01)
            clock.advance(130.0)
            await eventually(lambda d=delay: clock.pending() == [clock.now() + d], f"backed off {delay} s", timeout=2)
            assert inf.last_error is not None and inf.last_error.reason == "WatchStalled"
            clock.advance(delay)


CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You can start "
                    "a new list without the continue parameter")  # kube-apiserver's message (storage/errors.go)


class Paged(ScriptedClient):
    """Lists in two pages of 500 at resourceVersion 10 (`a`, then `b` after the continue token `tok`); unpaginated,
    both at resourceVersion 20. `expire_continue`: the next continue token is refused with 410 Expired. `pages` is
    (limit, continue token) of each list request."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: list[tuple[int | None, str | None]] = []
        self.expire_continue = False

    async def list(self, res: Any, namespace: str | None = None, *, limit: int | None = None,
                   continue_token: str | None = None, **kw: Any) -> dict[str, Any]:
        self.lists += 1
        self.pages.append((limit, continue_token))
        await asyncio.sleep(0)
        a, b = ({"metadata": {"name": n, "resourceVersion": "5"}} for n in "ab")
        if continue_token and self.expire_continue:
            self.expire_continue = False
            raise ApiError(410, "Expired", CONTINUE_EXPIRED, cluster="fake", verb="list", resource="runtimeclasses")
        if not limit:
            return {"metadata": {"resourceVersion": "20"}, "items": [a, b]}
        if continue_token:
            return {"metadata": {"resourceVersion": "10"}, "items": [b]}
        return {"metadata": {"resourceVersion": "10", "continue": "tok"}, "items": [a]}


async def test_an_expired_continue_token_falls_back_to_one_full_list_at_once() -> None:
    # client-go tools/pager/pager.go, FullListIfExpired (on by default): `if !m.FullListIfExpired ||
    # !errors.IsResourceExpired(err) { return ... err }; options.Limit = 0; options.Continue = ""; result, err :=
    # p.PageFn(ctx, options)`. Here after a 410 re-list: the continue token's 410 is not the re-list's 410 again.
    client, clock = Paged(), FakeClock()
    async with running(client, clock) as inf:
        await watching(client, 1)
        assert client.pages == [(500, None), (500, "tok")]
        client.expire_continue = True
        client.streams[0].put_nowait(EXPIRED)
        await watching(client, 2)
        assert client.pages[2:] == [(500, None), (500, "tok"), (None, None)]
        assert client.watched_from == ["10", "20"] and inf.lists == 2 and inf.last_error is None
        assert clock.pending() == [clock.now() + WATCH_IDLE_TIMEOUT]  # no backoff on the way
        assert sorted(inf.store.list_keys()) == ["a", "b"]
