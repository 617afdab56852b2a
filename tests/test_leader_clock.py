"""A follower judges a Lease's expiry on a monotonic clock: client-go's `le.observedTime` is a `time.Now()`, whose
monotonic reading `observedTime.Add(leaseDuration).After(now)` compares (tools/leaderelection/leaderelection.go,
tryAcquireOrRenew), so a wall-clock step (NTP) never makes a lease that is being renewed look expired.
kubernetes-asyncio's election compares `time.time()` readings."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes_asyncio.leaderelection import electionconfig
from kubernetes_asyncio.leaderelection.leaderelectionrecord import LeaderElectionRecord

from syncer.kube.clock import FakeClock
from syncer.kube.leader import _BoundedElection, _nothing


class HeldByA:
    """A Lease lock stand-in: the Lease is held by `a` (a record that does not change between reads: `a`'s next
    renewal is not due yet); `updates` counts this candidate's writes (all succeed)."""

    name, namespace, identity = "lease", "ns", "b"

    def __init__(self) -> None:
        self.updates = 0

    async def get(self, name: str, namespace: str) -> tuple[bool, LeaderElectionRecord]:
        return True, LeaderElectionRecord("a", "15", "2026-01-01 00:00:00", "2026-01-01 00:00:00")

    async def update(self, name: str, namespace: str, record: Any) -> bool:
        self.updates += 1
        return True


async def test_a_wall_clock_step_forward_does_not_expire_a_held_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, lock = FakeClock(), HeldByA()
    config = electionconfig.Config(lock, lease_duration=15, renew_deadline=10, retry_period=2,  # type: ignore[arg-type]
                                   onstarted_leading=_nothing, onstopped_leading=_nothing)
    election = _BoundedElection(config, "b", clock=clock)
    assert not await election.try_acquire_or_renew()  # held by a: observed now
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # NTP steps the wall clock an hour forward
    assert not await election.try_acquire_or_renew() and lock.updates == 0
    clock.advance(14.9)
    assert not await election.try_acquire_or_renew() and lock.updates == 0
    clock.advance(0.1)  # lease_duration (15 s) without a change of the record: a may be gone, b takes the Lease
    assert await election.try_acquire_or_renew() and lock.updates == 1
