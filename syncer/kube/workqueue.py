"""A de-duplicating, delaying, rate-limited work queue (client-go's `util/workqueue`).

Semantics as in client-go:
- a key added several times before a worker takes it is processed once (dirty set);
- a key is never processed by two workers at once: added while processing, it is queued again when
  the worker calls `done` (processing set);
- `add_after` delays an add (the earliest pending time wins); the waiting keys are kept in one heap with one
  timer for the earliest (the delaying queue's `waitingForQueue` and its `nextReadyAt` timer), so a queue of
  many waiting keys holds one timer on the clock, and a key whose wait is cancelled leaves no timer behind;
- `add_rate_limited` delays by the rate limiter: per-key exponential backoff (base x 2^failures,
  capped) combined with an overall token bucket, whichever is longer
  (`DefaultControllerRateLimiter`); `forget` resets a key's failures after a success.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from syncer.kube.clock import Clock, RealClock, Timer

MAX_EXPONENT = 1000
"""The largest n in a backoff of base x 2^n: `2.0 ** 1000` is finite (about 1e301), a product with it is at worst
`inf`, never an OverflowError, and it exceeds any cap for a base above 1e-290 seconds."""


class ShutDown(Exception):
    """The queue was shut down; workers should return."""


@dataclass
class RateLimiter:
    """Per-key exponential backoff (`base` x 2^n seconds, at most `cap`) and an overall token
    bucket of `qps` per second with `burst`, on `clock` (client-go's `DefaultControllerRateLimiter`:
    base 5 ms, cap 1000 s, 10 qps, burst 100; ours retries sooner and caps at 30 s)."""

    base: float = 0.05
    cap: float = 30.0
    qps: float = 50.0
    burst: int = 300
    clock: Clock = field(default_factory=RealClock)
    _failures: dict[str, int] = field(default_factory=dict)
    _tokens: float | None = field(default=None)  # None until first use; negative = reserved ahead
    _last: float | None = field(default=None)

    def when(self, key: str) -> float:
        """Seconds to wait before retrying `key` (at most `cap`, however many failures); counts one more failure
        for it. The exponent stops growing at `MAX_EXPONENT` (client-go's `if backoff > math.MaxInt64 { return
        r.maxDelay }`, util/workqueue/default_rate_limiters.go): `2.0 ** 1024` raises OverflowError, which a worker
        computing a retry would die of after 1024 failures of one key (8.5 h at 30 s)."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        per_item = min(self.cap, self.base * (2.0 ** min(n, MAX_EXPONENT)))
        return max(per_item, self._bucket_delay())

    def _bucket_delay(self) -> float:
        now = self.clock.now()
        tokens = float(self.burst) if self._tokens is None or self._last is None else min(
            float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._tokens = tokens
        self._last = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: str) -> None:
        """Clear the failures of `key`."""
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        """How many times `key` has been rate-limited since it was last forgotten."""
        return self._failures.get(key, 0)


class WorkQueue:
    """An asyncio work queue of string keys.

    Args:
        name: for metrics and logs.
        rate_limiter: used by `add_rate_limited` (default: one on `clock`).
        on_add: optional callback for each add of a key not already queued (the `workqueue_adds_total` metric).
        clock: the time delayed adds are measured and fired on (default the real one).
    """

    def __init__(self, name: str, rate_limiter: RateLimiter | None = None,
                 on_add: Callable[[str], None] | None = None, clock: Clock | None = None) -> None:
        self.name = name
        self.clock = clock or RealClock()
        self.rate_limiter = rate_limiter or RateLimiter(clock=self.clock)
        self._on_add = on_add
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._waiting: dict[str, float] = {}  # key -> when its delayed add is due (clock seconds)
        self._due: list[tuple[float, str]] = []  # heap of (due, key); an entry _waiting no longer has is stale
        self._timer: Timer | None = None  # the one timer, set for _timer_at: the earliest due time
        self._timer_at = 0.0
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        """Keys waiting to be processed (the `workqueue_depth` metric)."""
        return len(self._queue)

    def queued(self) -> set[str]:
        """The keys waiting to be processed now."""
        return set(self._queue)

    @property
    def processing(self) -> int:
        """Keys being processed by a worker now."""
        return len(self._processing)

    @property
    def idle(self) -> bool:
        """True when nothing is queued or processing. Keys waiting for a delayed add (a retry, a recheck)
        do not count: they are work for later, and `pending()` lists them."""
        return not self._queue and not self._processing

    def _update_idle(self) -> None:
        if self.idle:
            self._idle.set()
        else:
            self._idle.clear()

    async def wait_idle(self) -> None:
        """Wait until nothing is queued or processing (delayed adds are not waited for)."""
        await self._idle.wait()

    def add(self, key: str) -> None:
        """Queue `key` unless it is already queued (a key being processed is queued again after). `on_add` is called
        for every add that is not already queued, a key being processed included: client-go's `Typed.Add` calls
        `q.metrics.add(item)` before it checks `q.processing` (k8s.io/client-go/util/workqueue/queue.go)."""
        if self._shutting_down or key in self._dirty:
            return
        self._idle.clear()
        self._dirty.add(key)
        if self._on_add:
            self._on_add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._wake_one()

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def add_after(self, key: str, delay: float) -> None:
        """Queue `key` after `delay` seconds (at once when delay <= 0). The earliest pending add wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        at = self.clock.now() + delay
        pending = self._waiting.get(key)
        if pending is not None and pending <= at:
            return
        self._waiting[key] = at
        heapq.heappush(self._due, (at, key))
        self._compact()
        self._arm()

    def cancel_delayed(self, key: str) -> None:
        """Drop the delayed add of `key`, if one is pending."""
        if self._waiting.pop(key, None) is not None:
            self._compact()
            self._arm()

    def _compact(self) -> None:
        """Rebuild the heap when its stale entries (cancelled or superseded waits) pass a quarter of the waiting
        keys (and 64): the heap stays within 1.25 times the waiting keys, and each rebuild is paid for by the
        cancels before it (under pod churn, the renewal waits of deleted pods)."""
        stale = len(self._due) - len(self._waiting)
        if stale > 64 and 4 * stale > len(self._waiting):
            self._due = [(at, key) for key, at in self._waiting.items()]
            heapq.heapify(self._due)

    def _arm(self) -> None:
        """Set the timer for the earliest live due time (none when nothing waits)."""
        due = self._due
        while due and self._waiting.get(due[0][1]) != due[0][0]:
            heapq.heappop(due)  # a stale head
        if self._timer is not None and (not due or due[0][0] != self._timer_at):
            self._timer.cancel()
            self._timer = None
        if due and self._timer is None:
            self._timer_at = due[0][0]
            self._timer = self.clock.call_later(max(0.0, self._timer_at - self.clock.now()), self._fire)

    def _fire(self) -> None:
        """Add every key that is due (by the clock, or by the time the timer was set for: a loop's timer may
        run a little before its time), then set the timer for the next."""
        self._timer = None
        now = max(self.clock.now(), self._timer_at)
        due = self._due
        while due and due[0][0] <= now:
            at, key = heapq.heappop(due)
            if self._waiting.get(key) == at:
                del self._waiting[key]
                self.add(key)
        self._arm()

    def pending(self) -> dict[str, float]:
        """Every key waiting for a delayed add, with the seconds left (diagnostics)."""
        now = self.clock.now()
        return {k: round(at - now, 2) for k, at in self._waiting.items()}

    def pending_delay(self, key: str) -> float | None:
        """Seconds until a delayed add of `key` fires (None when none is pending)."""
        pending = self._waiting.get(key)
        return None if pending is None else pending - self.clock.now()

    def add_rate_limited(self, key: str) -> None:
        """Queue `key` after the rate limiter's delay for it (retry with backoff)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: str) -> None:
        """Reset `key`'s backoff (call after a successful reconcile)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        """How many rate-limited retries `key` has had since it was last forgotten."""
        return self.rate_limiter.failures(key)

    async def get(self) -> str:
        """Wait for and take the next key; call `done(key)` when finished with it.

        Raises:
            ShutDown: the queue is shutting down and empty.
        """
        while not self._queue:
            if self._shutting_down:
                raise ShutDown()
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake_one()  # pass the wake-up on to another worker
                raise
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        """Mark `key` finished; if it was added meanwhile, it is queued again."""
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._wake_one()
        self._update_idle()

    def shutdown(self) -> None:
        """Stop accepting keys and wake every waiting worker (they get ShutDown once the queue is empty)."""
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self._due.clear()
        self._queue.clear()
        self._dirty.clear()
        self._update_idle()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
