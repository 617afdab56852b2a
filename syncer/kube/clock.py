"""Time, injected: the clock the work queue, its rate limiter and the reconcilers read and set timers on,
so that waits and backoffs can be tested without waiting (client-go's `k8s.io/utils/clock` and its
`testing.FakeClock`); and timestamps as the Kubernetes API writes them (RFC 3339, UTC, second precision).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A callback scheduled on a clock; `cancel` stops it if it has not run yet."""

    def cancel(self) -> None:
        """Stop the callback (no effect once it ran)."""


class Clock(Protocol):
    """Monotonic seconds and timers on them."""

    def now(self) -> float:
        """Monotonic seconds (only differences mean anything)."""

    def wall(self) -> float:
        """Unix seconds (what is written into objects, to be read after a restart)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` once, `delay` seconds from now (needs a running event loop for the real clock)."""


class RealClock:
    """The process's monotonic clock and the running event loop's timers (the default everywhere)."""

    def now(self) -> float:
        """`time.monotonic()`, which is also what asyncio's loop time is."""
        return time.monotonic()

    def wall(self) -> float:
        """`time.time()`."""
        return time.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """`loop.call_later` on the running loop."""
        return asyncio.get_running_loop().call_later(delay, callback)


class _FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told (tests): `advance(seconds)` runs, in time order, every timer that
    falls due, as client-go's FakeClock.Step does. Starts at `start` seconds."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, Callable[[], None], _FakeTimer]] = []
        self._order = itertools.count()

    def now(self) -> float:
        """The fake time in seconds."""
        return self._now

    def wall(self) -> float:
        """Unix seconds moving with the fake time (it starts at 2026-01-01T00:00:00Z)."""
        return 1_767_225_600.0 + self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Schedule `callback` at now + `delay` (fake seconds)."""
        timer = _FakeTimer()
        heapq.heappush(self._timers, (self._now + max(0.0, delay), next(self._order), callback, timer))
        return timer

    def pending(self) -> list[float]:
        """The due times of the timers not yet run or cancelled, earliest first."""
        return sorted(at for at, _, _, t in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, running each timer that falls due at its own time.

        Raises:
            ValueError: `seconds` is negative (a monotonic clock never goes back).
        """
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back ({seconds} s)")
        end = self._now + seconds
        while self._timers and self._timers[0][0] <= end:
            at, _, callback, timer = heapq.heappop(self._timers)
            self._now = at
            if not timer.cancelled:
                callback()
        self._now = end


def rfc3339(when: dt.datetime) -> str:
    """Format an aware datetime as `2026-01-02T03:04:05Z`."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339(offset_seconds: float = 0.0) -> str:
    """The current time (plus `offset_seconds`) formatted by `rfc3339`."""
    return rfc3339(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset_seconds))
