"""The reflector: list then watch, resume after a cut without re-listing, re-list on 410, reconnect
after the API server restarts, skip malformed objects."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from syncer.kube.cache import Store
from syncer.kube.clock import FakeClock
from syncer.kube.informer import Backoff, Handlers, Informer
from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import Clusters, eventually, rc


class Seen(list[tuple[str, str]]):
    """Handler calls as (verb, name), with an event set on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def note(self, verb: str, obj: dict) -> None:  # type: ignore[type-arg]
        self.append((verb, obj["metadata"]["name"]))
        self.changed.set()

    async def until(self, *wanted: tuple[str, str]) -> None:
        async def wait() -> None:
            while not all(w in self for w in wanted):
                self.changed.clear()
                await self.changed.wait()
        try:
            await asyncio.wait_for(wait(), 5)
        except TimeoutError:
            raise AssertionError(f"handlers never saw {wanted}; saw {list(self)}") from None


@contextlib.asynccontextmanager
async def informer(c: Clusters) -> AsyncIterator[tuple[Informer, Seen]]:
    seen = Seen()
    inf = Informer(c.host, RUNTIMECLASSES, Store(), watch_timeout=30, backoff=Backoff(initial=0.05, cap=0.2))
    inf.add_handlers(Handlers(on_add=lambda o: seen.note("add", o), on_update=lambda o, n: seen.note("update", n),
                              on_delete=lambda o: seen.note("delete", o)))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    await asyncio.wait_for(inf.synced.wait(), 5)
    try:
        yield inf, seen
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_cut_watches_resume_without_relist(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("a"))
    async with informer(clusters) as (inf, seen):
        assert inf.store.get("a") is not None and inf.lists == 1
        clusters.host_server.storage.close_watches()
        await clusters.host.create(RUNTIMECLASSES, rc("b"))
        await seen.until(("add", "b"))
        assert inf.lists == 1
        # a second cut resumes after the last event seen, not from the list: nothing is delivered twice
        clusters.host_server.storage.close_watches()
        await clusters.host.create(RUNTIMECLASSES, rc("c"))
        await seen.until(("add", "c"))
        assert seen == [("add", "a"), ("add", "b"), ("add", "c")] and inf.lists == 1


async def test_expired_history_relists_and_reports_only_differences(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("a"))
    await clusters.host.create(RUNTIMECLASSES, rc("gone"))
    await clusters.host.create(RUNTIMECLASSES, rc("changed"))
    async with informer(clusters) as (inf, seen):
        seen.clear()
        clusters.host_server.storage.expire_history()
        clusters.host_server.storage.close_watches()
        clusters.host_server.faults.delay(0.2, verb="watch", resource="runtimeclasses")  # changes land meanwhile
        await clusters.host.delete(RUNTIMECLASSES, "gone")
        await clusters.host.create(RUNTIMECLASSES, rc("new"))
        await clusters.host.patch(RUNTIMECLASSES, "changed", {"metadata": {"labels": {"v": "2"}}})
        clusters.host_server.storage.expire_history()
        await seen.until(("add", "new"), ("delete", "gone"), ("update", "changed"))
        assert inf.lists == 2 and inf.store.get("gone") is None
        assert (inf.store.full("changed") or {})["metadata"]["labels"] == {"v": "2"}
        assert ("add", "a") not in seen and ("update", "a") not in seen  # unchanged: no event


async def test_reconnects_after_the_server_restarts(clusters: Clusters) -> None:
    async with informer(clusters) as (inf, seen):
        await clusters.host_server.stop()
        await clusters.host_server.start()
        await clusters.host.create(RUNTIMECLASSES, rc("after-restart"))
        await seen.until(("add", "after-restart"))
        assert inf.store.get("after-restart") is not None


async def test_objects_without_a_name_are_skipped(clusters: Clusters) -> None:
    async with informer(clusters) as (inf, seen):
        clusters.host_server.storage.write(RUNTIMECLASSES, {"metadata": {"name": ""}, "handler": "x"}, None)
        await clusters.host.create(RUNTIMECLASSES, rc("fine"))
        await seen.until(("add", "fine"))
        assert len(inf.store) == 1


async def test_list_in_chunks_caches_everything_and_keeps_large_fields_packed(clusters: Clusters) -> None:
    for i in range(7):
        await clusters.host.create(RUNTIMECLASSES, {**rc(f"c{i}"), "overhead": {"podFixed": {"cpu": "10m"}}})
    store = Store(packed={"overhead": ()})
    inf = Informer(clusters.host, RUNTIMECLASSES, store, page_size=3)
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    await asyncio.wait_for(inf.synced.wait(), 5)
    stop.set()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert sorted(store.list_keys()) == [f"c{i}" for i in range(7)]
    assert store.get("c0")["overhead"] == {}  # type: ignore[index]  # what handlers see: the kept sub-fields
    full = store.full("c0")
    assert full is not None and full["overhead"] == {"podFixed": {"cpu": "10m"}}
    assert "__packed__" not in full
    lists = [a for a in clusters.host_server.audit if a.verb == "list" and a.resource == "runtimeclasses"]
    assert len(lists) == 3 and inf.lists == 1  # 3 + 3 + 1 objects, one list


async def test_an_api_server_briefly_away_is_info_until_it_persists_and_a_403_is_an_error(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="syncer.kube.informer")
    errors = _ErrorSeen()
    logging.getLogger("syncer.kube.informer").addHandler(errors)
    away = clusters.host_server.faults.fail(503, verb="list", resource="runtimeclasses", times=7)
    inf = Informer(clusters.host, RUNTIMECLASSES, Store(), backoff=Backoff(initial=0.01, cap=0.02))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)  # after the 7 failures
        assert away.times == 0
        retrying = [r for r in caplog.records
                    if "HTTP 503" in r.getMessage() and "watching again" not in r.getMessage()]
        # "retrying with backoff" at info for the first failure and at warning at the 5th in a row; the rest debug
        assert [r.getMessage().endswith("retrying with backoff") for r in retrying] == [
            True, False, False, False, True, False, False]
        assert [r.levelno for r in retrying] == [logging.INFO, logging.DEBUG, logging.DEBUG, logging.DEBUG,
                                                 logging.WARNING, logging.DEBUG, logging.DEBUG]
        assert any("watching again" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
        caplog.clear()
        clusters.host_server.faults.fail(403, verb="watch", resource="runtimeclasses", times=2)
        clusters.host_server.storage.close_watches()
        await asyncio.wait_for(errors.seen.wait(), 10)
        (error,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert "forbidden to watch runtimeclasses (group node.k8s.io) on the host cluster" in error.getMessage()
    finally:
        logging.getLogger("syncer.kube.informer").removeHandler(errors)
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class _ErrorSeen(logging.Handler):
    """Sets `seen` when a record at error level is logged."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.set()


async def test_failed_lists_are_retried_with_backoff_on_the_clock(clusters: Clusters) -> None:
    # client-go's reflector backs off between failed lists; here on an injected clock, so no test waits
    clock = FakeClock()
    failing = clusters.host_server.faults.fail(503, verb="list", resource="runtimeclasses", times=2)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor"))
    inf = Informer(clusters.host, RUNTIMECLASSES, Store(), clock=clock, backoff=Backoff(initial=4, cap=8, jitter=0))
    stop = asyncio.Event()
    task = asyncio.create_task(inf.run(stop))
    try:
        await eventually(lambda: failing.hits == 1 and clock.pending() == [clock.now() + 4], "the first retry due")
        clock.advance(3.9)
        assert failing.hits == 1 and not inf.synced.is_set()  # nothing before the backoff is over
        clock.advance(0.1)
        await eventually(lambda: failing.hits == 2 and clock.pending() == [clock.now() + 8], "the second, doubled")
        clock.advance(8)
        await asyncio.wait_for(inf.synced.wait(), 5)
        assert inf.store.get("gvisor") is not None and inf.last_error is None
    finally:
        stop.set()
        await task
