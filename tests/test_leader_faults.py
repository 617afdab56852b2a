"""Leader election under faults of the API server (client-go's rules that kubernetes-asyncio's election lacks):
a hung lease request is bounded, so a leader steps down before another replica can take the Lease; a failed
request is retried every retry period, so a short outage stops neither the leader nor a follower."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim.faults import Fault
from syncer.kube import leader
from syncer.kube.client import KubeClient
from syncer.kube.leader import LeaderElector
from syncer.kube.resources import LEASES
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, Clusters

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3, 2.5, 1.0  # short, and accepted by the library
MARGIN = 0.25  # scheduling slack; a takeover needs LEASE_DURATION - RENEW_DEADLINE = 0.5 s more


class Candidates:
    """LeaderElectors on the Lease `lease`, each with its own client (user agent `syncer (<identity>)`, which the
    server's faults match); `close()` cancels their campaigns and closes the clients."""

    def __init__(self, c: Clusters) -> None:
        self.clusters = c
        self.running: list[tuple[LeaderElector, asyncio.Task[None]]] = []

    async def start(self, identity: str) -> LeaderElector:
        client = await KubeClient.from_kubeconfig(str(self.clusters.host_kubeconfig), "host",
                                                  user_agent=f"syncer ({identity})")
        elector = LeaderElector(client, HOST_NS, "lease", identity, lease_duration=LEASE_DURATION,
                                renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD)
        self.running.append((elector, asyncio.create_task(elector.run())))
        return elector

    async def close(self) -> None:
        for elector, task in self.running:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await elector.client.close()


@contextlib.asynccontextmanager
async def candidates(c: Clusters) -> AsyncIterator[Candidates]:
    cs = Candidates(c)
    try:
        yield cs
    finally:
        await cs.close()


async def hits(fault: Fault, timeout: float, what: str) -> None:
    """Wait until `fault` matched a request; fail naming `what` after `timeout` seconds."""
    try:
        await asyncio.wait_for(fault.wait_hits(1), timeout)
    except TimeoutError:
        pytest.fail(f"not within {timeout} s: {what}")


async def renewed(c: Clusters, than: str | None, timeout: float) -> str:
    """The Lease's `renewTime` once it differs from `than` (watched, no polling)."""
    def changed(objs: dict[str, dict[str, Any]]) -> bool:
        lease = objs.get(f"{HOST_NS}/lease")
        return lease is not None and lease["spec"].get("renewTime") != than
    objs = await wait_for(c.host, LEASES, changed, namespace=HOST_NS, timeout=timeout, what="a lease renewal")
    return str(objs[f"{HOST_NS}/lease"]["spec"]["renewTime"])


async def test_a_hung_renewal_steps_down_before_another_replica_can_take_over(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    async with candidates(clusters) as cs:
        one = await cs.start("one")
        await asyncio.wait_for(one.leading.wait(), 5)
        two = await cs.start("two")
        # from now on one's lease requests hang (a black-holed connection, a server stuck behind a load
        # balancer); one's last successful attempt began before this
        held = clusters.host_server.faults.hold(resource="leases", agent="(one)", times=1000)
        try:
            try:
                await asyncio.wait_for(one.lost.wait(), RENEW_DEADLINE + MARGIN)
            except TimeoutError:
                pytest.fail(f"the leader did not step down within renew_deadline ({RENEW_DEADLINE} s) of its last "
                            f"renewal: split brain once another replica takes the lease")
            assert held.hits >= 1, "the leader's renewal was never held"
            assert not two.leading.is_set(), "two took the lease while one still led"
            assert any("no answer within" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
            await asyncio.wait_for(two.leading.wait(), LEASE_DURATION + 5)  # the lease expires: two takes over
            lease = await clusters.host.get(LEASES, "lease", HOST_NS)
            assert lease["spec"]["holderIdentity"] == "two"
        finally:
            held.release()


async def test_a_followers_hung_request_is_bounded(clusters: Clusters) -> None:
    async with candidates(clusters) as cs:
        held = clusters.host_server.faults.hold(resource="leases", agent="(two)", times=1)  # its first request hangs
        try:
            two = await cs.start("two")
            await asyncio.wait_for(held.wait_hits(1), 5)
            # the hung attempt is cut after renew_deadline, the next one (retry_period later) creates the Lease
            try:
                await asyncio.wait_for(two.leading.wait(), RENEW_DEADLINE + RETRY_PERIOD + 1)
            except TimeoutError:
                pytest.fail("a follower's hung lease request blocked its campaign")
            assert not two.lost.is_set()
        finally:
            held.release()


async def test_a_short_api_server_outage_stops_neither_leader_nor_follower(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    server = clusters.host_server
    async with candidates(clusters) as cs:
        one = await cs.start("one")
        await asyncio.wait_for(one.leading.wait(), 5)
        probe = server.faults.delay(0, resource="leases", agent="(two)")  # matches (and counts) two's next request
        two = await cs.start("two")
        await hits(probe, 5, "two campaigns")
        # stop right after one renewed, so that it can renew again within renew_deadline once the server is back
        last = await renewed(clusters, await renewed(clusters, None, 5), 5)
        await server.stop()  # an API server restart (an upgrade, a control-plane node roll): down for ~1 s
        await asyncio.sleep(1.2)
        await server.start()
        probe = server.faults.delay(0, resource="leases", agent="(two)")
        await hits(probe, 5, "the follower campaigns on after the outage")
        assert not two.lost.is_set(), "the follower gave up the election on a refused connection"
        await renewed(clusters, last, RENEW_DEADLINE)
        assert not one.lost.is_set(), "the leader gave up on a refused connection within renew_deadline"
        assert not two.leading.is_set()
        refused = [r for r in caplog.records
                   if r.levelno == logging.WARNING and "ClientConnectorError" in r.getMessage()]
        assert refused, "a failed attempt is logged at warning with its error"
        assert all(r.exc_info is None for r in refused), "one line per failed attempt, not a traceback"


async def test_the_lease_times_are_utc_whatever_the_local_zone(clusters: Clusters,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # a Lease's renewTime is a metav1.MicroTime: RFC 3339 in UTC ("Z"); a process in another zone (a POSIX TZ
    # string, no tzdata needed) writes the same instant
    monkeypatch.setenv("TZ", "XYZ-5:30")
    time.tzset()
    try:
        before = datetime.datetime.now(datetime.UTC)
        async with candidates(clusters) as cs:
            one = await cs.start("one")
            await asyncio.wait_for(one.leading.wait(), 5)
            renew = await renewed(clusters, None, 5)
        written = datetime.datetime.strptime(renew, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC)
        assert before - datetime.timedelta(seconds=1) <= written <= datetime.datetime.now(datetime.UTC), renew
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


async def test_a_renewal_at_a_whole_second_writes_its_time(clusters: Clusters, monkeypatch: pytest.MonkeyPatch) -> None:
    # a time with 0 microseconds is written too (the library's parse of its own str() needs ".%f", and dropped it)
    class WholeSeconds:
        @staticmethod
        def time() -> float:
            return float(int(time.time()))
    monkeypatch.setattr(leader, "time", WholeSeconds)
    async with candidates(clusters) as cs:
        one = await cs.start("one")
        await asyncio.wait_for(one.leading.wait(), 5)
        renew = await renewed(clusters, None, 5)
    written = datetime.datetime.fromisoformat(renew.replace("Z", "+00:00"))
    assert written.microsecond == 0 and abs(written.timestamp() - time.time()) < 5, renew


async def test_a_held_lease_acquired_at_a_whole_second_keeps_its_acquire_time(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # the holder renews its own Lease and keeps its acquireTime; one on a whole second (no fraction) was read back by
    # the library without ".%f", which its write cannot parse ("Failed to parse time string", logged at error)
    await clusters.host.create(LEASES, {"metadata": {"name": "lease"}, "spec": {
        "holderIdentity": "one", "leaseDurationSeconds": LEASE_DURATION, "acquireTime": "2026-01-02T03:04:05.000000Z",
        "renewTime": "2026-01-02T03:04:05.000000Z"}}, HOST_NS)
    async with candidates(clusters) as cs:
        one = await cs.start("one")
        await asyncio.wait_for(one.leading.wait(), 5)
        await renewed(clusters, "2026-01-02T03:04:05.000000Z", 5)
    lease = await clusters.host.get(LEASES, "lease", HOST_NS)
    assert lease["spec"]["acquireTime"] in ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records


async def test_a_cancelled_election_leaves_no_task_behind(clusters: Clusters) -> None:
    # the library starts onstarted_leading as a task and cancels it only when its renew loop ends; an election
    # cancelled while leading (a clean stop) must not leave it pending ("Task was destroyed but it is pending!")
    async with candidates(clusters) as cs:
        one = await cs.start("one")
        await asyncio.wait_for(one.leading.wait(), 5)
    assert not [t for t in asyncio.all_tasks() if "_started" in repr(t.get_coro())]
