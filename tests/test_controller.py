"""The controller runner (syncer/kube/controller.py) over its work queue, on a fake clock: retries back off
per key and a success resets the backoff (client-go's workqueue: `Forget` after a successful sync)."""

from __future__ import annotations

import asyncio
import logging

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


async def test_requeue_after_is_a_delay_not_a_failure() -> None:
    clock = FakeClock()
    queue = WorkQueue("t", RateLimiter(base=1.0, cap=100.0, qps=1000, burst=1000, clock=clock), clock=clock)
    seen: list[float] = []

    async def reconcile(key: str) -> float | None:
        seen.append(clock.now())
        return 30.0 if len(seen) == 1 else None

    controller = Controller("t", queue, reconcile, Metrics(), workers=1)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        queue.add("k")
        await eventually(lambda: queue.pending() == {"k": 30.0}, "k looked at again in 30 s")
        assert queue.num_requeues("k") == 0
        clock.advance(30)
        await eventually(lambda: len(seen) == 2 and queue.idle, "k reconciled again")
        assert seen[1] - seen[0] == 30.0
    finally:
        stop.set()
        await task


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
