"""Work queue semantics (client-go's workqueue): de-duplication, one worker per key, delays, backoff."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import Callable

import pytest

from syncer.kube.clock import FakeClock, Timer
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


async def test_add_after_fires_at_the_earliest_time_on_the_clock() -> None:
    clock = FakeClock()
    q = WorkQueue("t", clock=clock)
    q.add_after("a", 30)
    q.add_after("a", 5)  # the earlier add wins
    q.add_after("a", 60)  # a later one does not move it back
    assert q.idle and len(q) == 0  # a delayed key is work for later, not work now
    assert q.pending() == {"a": 5.0}
    clock.advance(4.9)
    assert len(q) == 0
    clock.advance(0.1)
    assert len(q) == 1 and q.pending() == {} and not q.idle
    assert await q.get() == "a"
    q.done("a")
    await asyncio.wait_for(q.wait_idle(), 1)
    clock.advance(100)  # the cancelled 30 s timer never fires
    assert len(q) == 0


async def test_many_waiting_keys_hold_one_timer_and_a_cancelled_wait_holds_none() -> None:
    """client-go's delaying queue waits for its earliest key with one timer (`nextReadyAt`): thousands of pods
    waiting for their token renewal cost the event loop one timer, and a pod deleted meanwhile leaves nothing
    behind (with a timer per key, each cancelled one stayed in the loop's heap until the heap was rebuilt)."""
    clock = FakeClock(start=0)
    q = WorkQueue("t", clock=clock)
    for i in range(1000):
        q.add_after(f"p{i}", 100 + i)
    assert clock.pending() == [100.0]
    for i in range(0, 1000, 2):
        q.cancel_delayed(f"p{i}")
    assert clock.pending() == [101.0]  # the earliest wait left
    assert len(q.pending()) == 500
    clock.advance(103)  # p1 at 101 and p3 at 103 fall due, in order
    assert [await q.get(), await q.get()] == ["p1", "p3"] and len(q) == 0
    for i in range(5, 1000, 2):
        q.cancel_delayed(f"p{i}")
    assert clock.pending() == [] and q.pending() == {}
    clock.advance(10_000)
    assert len(q) == 0


class EarlyClock(FakeClock):
    """asyncio runs a timer once the loop's time is within its clock resolution of the due time: this clock runs
    every timer 1 ms before its time. A queue that set a timer again and again for the same key would spin."""

    def __init__(self) -> None:
        super().__init__(start=0)
        self.timers_set = 0

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        self.timers_set += 1
        if self.timers_set > 10:
            raise AssertionError("the queue keeps setting timers: it spins on a due key")
        return super().call_later(max(0.0, delay - 0.001), callback)


async def test_a_timer_that_runs_a_little_early_still_adds_its_key() -> None:
    clock = EarlyClock()
    q = WorkQueue("t", clock=clock)
    q.add_after("a", 5)
    clock.advance(4.999)
    assert len(q) == 1 and q.pending() == {}  # added when its timer ran, not put off again


async def test_cancelled_waits_do_not_pile_up() -> None:
    """Under churn, each pod's renewal wait is added and then cancelled long before it is due: the queue keeps at
    most a quarter more entries than it has waiting keys (and 64), however many waits come and go."""
    clock = FakeClock(start=0)
    q = WorkQueue("t", clock=clock)
    for i in range(400):
        q.add_after(f"live-{i}", 100 + i)  # older pods renew first

    def churn(keys: range) -> None:
        for i in keys:
            q.add_after(f"churn-{i}", 2880)  # a new pod's renewal, later than the older pods'
            q.cancel_delayed(f"churn-{i}")  # and the pod deleted

    churn(range(2_000))  # the queue's dicts and heap at their working size
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        grew = 0
        for block in range(2_000, 20_000, 250):
            churn(range(block, block + 250))
            grew = max(grew, tracemalloc.get_traced_memory()[0] - base)
    finally:
        tracemalloc.stop()
    # measured: at most 39 KiB above the working size (the heap's stale entries, a quarter of the 400 waiting keys
    # with their keys, and the dicts' tables between resizes); with stale entries up to twice the waiting keys
    # (the bound before), 73 KiB; with a loop timer per key, every cancelled timer until the loop's rebuild
    assert grew < 56 * 1024, grew
    assert len(q.pending()) == 400
    clock.advance(100 + 399)
    assert len(q) == 400


async def test_rate_limited_retries_back_off_on_the_clock_and_reset_after_forget() -> None:
    clock = FakeClock()
    q = WorkQueue("t", RateLimiter(base=1.0, cap=8.0, qps=1000, burst=1000, clock=clock), clock=clock)
    waits = []
    for _ in range(5):
        q.add_rate_limited("k")
        (delay,) = q.pending().values()
        waits.append(delay)
        clock.advance(delay)
        assert await q.get() == "k"
        q.done("k")
    assert waits == [1.0, 2.0, 4.0, 8.0, 8.0]  # base x 2^n, capped (client-go's ItemExponentialFailureRateLimiter)
    assert q.num_requeues("k") == 5
    q.forget("k")
    q.add_rate_limited("k")
    assert q.pending() == {"k": 1.0}


def test_fake_clock_runs_due_timers_in_time_order_and_never_goes_back() -> None:
    clock = FakeClock(start=0)
    fired: list[tuple[str, float]] = []
    clock.call_later(3, lambda: fired.append(("c", clock.now())))
    clock.call_later(1, lambda: fired.append(("a", clock.now())))
    clock.call_later(2, lambda: fired.append(("b", clock.now()))).cancel()
    clock.advance(5)
    assert fired == [("a", 1), ("c", 3)] and clock.now() == 5
    with pytest.raises(ValueError):
        clock.advance(-1)


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


def test_a_key_that_always_fails_stays_at_the_cap_however_many_times() -> None:
    # client-go's ItemExponentialFailureRateLimiter.When (util/workqueue/default_rate_limiters.go): `backoff :=
    # float64(r.baseDelay.Nanoseconds()) * math.Pow(2, float64(exp)); if backoff > math.MaxInt64 { return
    # r.maxDelay }`. A pod the host refuses for good, retried every 30 s, reaches 1024 failures in 8.5 h; Python's
    # `2.0 ** 1024` raises OverflowError where Go's math.Pow gives +Inf.
    rl = RateLimiter(base=0.05, cap=30.0, qps=1e9, burst=10**9, clock=FakeClock())
    delays = [rl.when("k") for _ in range(1100)]
    assert delays[:3] == [0.05, 0.1, 0.2] and delays[1020:] == [30.0] * 80
    assert rl.failures("k") == 1100


async def test_an_add_while_processing_is_counted() -> None:
    # workqueue_adds_total: client-go's Typed.Add calls `q.metrics.add(item)` before it checks `q.processing`
    # (k8s.io/client-go/util/workqueue/queue.go); an add of a key already queued (dirty) is not counted
    adds: list[str] = []
    queue = WorkQueue("t", on_add=adds.append)
    queue.add("a")
    key = await queue.get()
    queue.add("a")  # changed while its reconcile runs: reconciled again after done()
    queue.add("a")  # already waiting for that: not counted
    queue.done(key)
    assert await queue.get() == "a" and adds == ["a", "a"]
