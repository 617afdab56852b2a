"""The controller runner (syncer/kube/controller.py) over its work queue, on a fake clock: retries back off
per key and a success resets the backoff (client-go's workqueue: `Forget` after a successful sync)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from syncer.kube.client import ApiError
from syncer.kube.clock import FakeClock
from syncer.kube.controller import Controller
from syncer.kube.workqueue import RateLimiter, WorkQueue
from syncer.metrics import Metrics
from tests.conftest import eventually


class Flaky(Exception):
    """The reconcile's failure, retried with backoff."""


async def test_retries_back_off_and_a_success_resets_the_backoff() -> None:
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=1.0, cap=100.0, qps=1000, burst=1000, clock=clock), clock=clock)
    outcomes = iter(["fail", "fail", "fail", "ok", "fail"])
    calls: list[str] = []

    async def reconcile(key: str) -> float | None:
        outcome = next(outcomes)
        calls.append(outcome)
        if outcome == "fail":
            raise Flaky(f"{key} failed")
        return None

    controller = Controller("t", queue, reconcile, Metrics(), workers=1)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        queue.add("k")
        for delay in (1.0, 2.0, 4.0):  # base x 2^n after each failure in a row
            await eventually(lambda d=delay: queue.pending() == {"k": d}, f"retry of k in {delay} s")
            clock.advance(delay)
        await eventually(lambda: calls == ["fail", "fail", "fail", "ok"] and queue.idle, "k reconciled")
        assert queue.pending() == {}
        queue.add("k")  # a new change fails again: the backoff starts over from the base
        await eventually(lambda: queue.pending() == {"k": 1.0}, "retry of k in 1 s after the success")
    finally:
        stop.set()
        await task


@contextlib.asynccontextmanager
async def answering(answers: list[float | None]) -> AsyncIterator[tuple[FakeClock, WorkQueue, list[float]]]:
    """A controller of one worker on a fake clock whose reconciles return `answers` in turn; yields (the clock, the
    queue, the clock's time at each reconcile)."""
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=1.0, cap=100.0, qps=1000, burst=1000, clock=clock), clock=clock)
    seen: list[float] = []

    async def reconcile(key: str) -> float | None:
        seen.append(clock.now())
        return answers[len(seen) - 1]

    stop = asyncio.Event()
    task = asyncio.create_task(Controller("t", queue, reconcile, Metrics(), workers=1).run(stop))
    try:
        yield clock, queue, seen
    finally:
        stop.set()
        await task


async def test_requeue_after_is_a_delay_not_a_failure() -> None:
    async with answering([30.0, None]) as (clock, queue, seen):
        queue.add("k")
        await eventually(lambda: queue.pending() == {"k": 30.0}, "k looked at again in 30 s")
        assert queue.num_requeues("k") == 0
        clock.advance(30)
        await eventually(lambda: len(seen) == 2 and queue.idle, "k reconciled again")
        assert seen[1] - seen[0] == 30.0


async def test_a_reconcile_replaces_the_wake_up_an_earlier_one_asked_for() -> None:
    # level-triggered: the last successful reconcile of a key says when it must look again (here: first in 10 s,
    # a pod waiting for an object; then, the object there, in 3000 s, a token renewal; then not at all); an
    # earlier, nearer wake-up would only reconcile a key with nothing to do
    async with answering([10.0, 3000.0, None]) as (_, queue, seen):
        queue.add("k")
        await eventually(lambda: queue.pending() == {"k": 10.0}, "k looked at again in 10 s")
        queue.add("k")  # the object appeared
        await eventually(lambda: queue.pending() == {"k": 3000.0}, "k looked at again in 3000 s only")
        queue.add("k")  # the pod went
        await eventually(lambda: len(seen) == 3 and queue.idle, "k reconciled a third time")
        assert queue.pending() == {}


async def test_a_routine_failure_is_info_until_it_persists(caplog: pytest.LogCaptureFixture) -> None:
    # a conflict or a server briefly away is retried quietly (info); from the fifth retry in a row it is something
    # to act on (warning)
    caplog.set_level(logging.INFO, logger="syncer.kube.controller")
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=1.0, cap=100.0, qps=1000, burst=1000, clock=clock), clock=clock)

    async def reconcile(key: str) -> float | None:
        raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request",
                       cluster="host", verb="create", resource="pods")

    controller = Controller("t", queue, reconcile, Metrics(), workers=1)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        queue.add("k")
        for retry in range(1, 5):
            await eventually(lambda r=retry: len(caplog.records) == r, f"failure {retry} logged")
            clock.advance(queue.pending()["k"])
        await eventually(lambda: len(caplog.records) == 5, "failure 5 logged")
    finally:
        stop.set()
        await task
    levels = [r.levelno for r in caplog.records]
    assert levels == [logging.INFO] * 4 + [logging.WARNING], [r.getMessage() for r in caplog.records]
    assert caplog.records[-1].getMessage().endswith("(retry 5)")


async def in_flight(controller: Controller, queue: WorkQueue, stop: asyncio.Event
                    ) -> tuple[asyncio.Task[None], list[str], asyncio.Event]:
    """Run `controller` with key k in a reconcile that waits for the returned event; returns its task and what the
    reconcile saw ("finished", or "cancelled")."""
    release, seen, started = asyncio.Event(), [], asyncio.Event()

    async def reconcile(key: str) -> float | None:
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        seen.append("finished")
        return None

    controller.reconcile = reconcile
    task = asyncio.create_task(controller.run(stop))
    queue.add("k")
    await started.wait()
    return task, seen, release


async def test_a_cancelled_controller_cancels_in_flight_reconciles_at_once() -> None:
    # a lost lease: the manager sets `stop` and cancels the controller in the same turn; controller-runtime's
    # manager then waits for nothing (gracefulShutdownTimeout 0 on lost leadership, pkg/manager/internal.go)
    queue = WorkQueue("t", clock=FakeClock())
    stop = asyncio.Event()
    task, seen, _ = await in_flight(Controller("t", queue, lambda k: asyncio.sleep(0), Metrics(), workers=2), queue,
                                    stop)
    stop.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 1.0)  # not the clean stop's 5 s
    assert seen == ["cancelled"] and queue.processing == 0


async def test_a_clean_stop_lets_an_in_flight_reconcile_finish() -> None:
    queue = WorkQueue("t", clock=FakeClock())
    stop = asyncio.Event()
    task, seen, release = await in_flight(Controller("t", queue, lambda k: asyncio.sleep(0), Metrics()), queue, stop)
    stop.set()  # SIGTERM; the controller wakes first
    release.set()
    await asyncio.wait_for(task, 5.0)
    assert seen == ["finished"] and queue.processing == 0


class Fatal(BaseException):
    """Not an Exception: what no reconcile failure handler catches."""


async def test_a_cancelled_error_raised_by_a_reconcile_is_its_failure_not_the_workers_end() -> None:
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=1.0, cap=100.0, qps=1000, burst=1000, clock=clock), clock=clock)
    calls: list[str] = []

    async def reconcile(key: str) -> float | None:
        calls.append(key)
        if len(calls) == 1:
            raise asyncio.CancelledError()  # e.g. a library's own timeout leaking out; the worker was not cancelled
        return None

    controller = Controller("t", queue, reconcile, Metrics(), workers=1)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        queue.add("k")
        await eventually(lambda: queue.pending() == {"k": 1.0}, "k retried with backoff")
        assert controller.healthy and queue.processing == 0
        clock.advance(1.0)
        await eventually(lambda: calls == ["k", "k"] and queue.idle, "k reconciled by the same worker")
        assert controller.healthy
    finally:
        stop.set()
        await task


async def test_a_worker_that_ends_is_noticed_and_leaves_no_key_processing(caplog: pytest.LogCaptureFixture) -> None:
    queue = WorkQueue("t", clock=FakeClock())

    async def reconcile(key: str) -> float | None:
        raise Fatal()

    controller = Controller("t", queue, reconcile, Metrics(), workers=2)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        assert controller.healthy
        queue.add("k")
        await eventually(lambda: not controller.healthy, "the worker's end noticed")
        assert queue.processing == 0
        (logged,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert logged.startswith("t-worker-") and logged.endswith(" ended with an error")
    finally:
        stop.set()
        await task


async def test_a_key_that_failed_a_thousand_times_is_still_retried_at_the_cap() -> None:
    # 1024 failures in a row (8.5 h of a pod the host refuses for good, retried every 30 s): the next delay is still
    # the cap (client-go default_rate_limiters.go: `if backoff > math.MaxInt64 { return r.maxDelay }`), and the
    # worker goes on.
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=0.05, cap=30.0, qps=1e9, burst=10**9, clock=clock), clock=clock)
    for _ in range(1024):
        queue.rate_limiter.when("k")

    async def reconcile(key: str) -> float | None:
        raise Flaky(f"{key} refused for good")

    controller = Controller("t", queue, reconcile, Metrics(), workers=1)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        queue.add("k")
        await eventually(lambda: queue.pending() == {"k": 30.0}, "k retried in 30 s", timeout=2)
        clock.advance(30.0)
        await eventually(lambda: queue.num_requeues("k") == 1026, "k failed again, retried again", timeout=2)
        assert controller.healthy and queue.processing == 0 and queue.pending() == {"k": 30.0}
    finally:
        stop.set()
        await task


class BrokenOnce(RateLimiter):
    """A rate limiter whose first `when` raises: what a failing retry computation does to a worker."""

    broken = True

    def when(self, key: str) -> float:
        if self.broken:
            self.broken = False
            raise RuntimeError("the retry delay cannot be computed")
        return super().when(key)


async def test_a_failing_retry_never_leaves_its_key_processing() -> None:
    # client-go's processNextWorkItem: `defer c.queue.Done(obj)` whatever happens in between; a key left in the
    # processing set is never handed out again (a later add only marks it dirty).
    clock = FakeClock()
    queue = WorkQueue("t", BrokenOnce(base=1.0, cap=100.0, qps=1000, burst=1000, clock=clock), clock=clock)
    calls: list[str] = []

    async def reconcile(key: str) -> float | None:
        calls.append(key)
        if len(calls) == 1:
            raise Flaky(f"{key} failed")
        return None

    controller = Controller("t", queue, reconcile, Metrics(), workers=2)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        queue.add("k")
        await eventually(lambda: calls == ["k"] and not controller.healthy, "the first reconcile failed", timeout=2)
        assert queue.processing == 0
        queue.add("k")  # a new event: the other worker takes it
        await eventually(lambda: calls == ["k", "k"] and queue.idle, "k reconciled again", timeout=2)
    finally:
        stop.set()
        await task
