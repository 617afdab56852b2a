"""Work queue semantics (client-go's workqueue): de-duplication, one worker per key, delays, backoff."""

from __future__ import annotations

import asyncio

from syncer.kube.workqueue import RateLimiter, ShutDown, WorkQueue


async def test_duplicates_are_processed_once() -> None:
    q = WorkQueue("t")
    for k in ("a", "b", "a", "a"):
        q.add(k)
    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["a", "b"]


async def test_key_added_while_processing_is_requeued_after_done() -> None:
    q = WorkQueue("t")
    q.add("a")
    key = await q.get()
    q.add("a")
    assert len(q) == 0  # not handed to a second worker while the first holds it
    q.done(key)
    assert len(q) == 1 and await q.get() == "a"


async def test_add_after_keeps_the_earliest_time_and_wait_idle() -> None:
    q = WorkQueue("t")
    q.add_after("a", 30)
    q.add_after("a", 0.01)
    assert not q.idle
    assert await asyncio.wait_for(q.get(), 2) == "a"
    q.done("a")
    await asyncio.wait_for(q.wait_idle(), 1)


async def test_rate_limiter_backs_off_exponentially_and_forgets() -> None:
    rl = RateLimiter(base=0.1, cap=1.0, qps=1000, burst=1000)
    assert [rl.when("k") for _ in range(5)] == [0.1, 0.2, 0.4, 0.8, 1.0]  # capped
    assert rl.failures("k") == 5
    rl.forget("k")
    assert rl.when("k") == 0.1


async def test_bucket_limits_overall_rate() -> None:
    rl = RateLimiter(base=0.0, cap=0.0, qps=10, burst=2)
    delays = [rl.when(f"k{i}") for i in range(4)]
    assert delays[:2] == [0.0, 0.0] and delays[3] > delays[2] > 0


async def test_shutdown_releases_waiting_workers() -> None:
    q = WorkQueue("t")
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    try:
        await asyncio.wait_for(waiter, 1)
        raise AssertionError("get() returned after shutdown")
    except ShutDown:
        pass
