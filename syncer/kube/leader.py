"""Leader election on a `coordination.k8s.io/v1` Lease, for a vcluster that runs several replicas.

It uses kubernetes-asyncio's `leaderelection` (client-go semantics): a candidate becomes leader by
creating or taking over the Lease once the holder has not renewed it for `lease_duration` seconds; the
leader renews it every `retry_period` seconds and gives up when it could not renew within
`renew_deadline` (shorter than `lease_duration`, so two leaders never overlap). On a clean shutdown the
leader releases the Lease (clears `holderIdentity`) so a follower takes over at once instead of after
`lease_duration`, as client-go's `ReleaseOnCancel` does.

Two rules of client-go (k8s.io/client-go/tools/leaderelection/leaderelection.go) that the library lacks are
added by `_BoundedElection`: every attempt is bounded in time (the library's requests have none), and a failed
attempt (connection refused, reset, timed out) is logged and retried every `retry_period` instead of ending the
election; only a leader that cannot renew within `renew_deadline` stops.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import time
from collections.abc import Awaitable
from typing import Any, cast

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
from kubernetes_asyncio.leaderelection.leaderelectionrecord import LeaderElectionRecord
from kubernetes_asyncio.leaderelection.resourcelock.baselock import BaseLock
from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import Clock, RealClock
from syncer.kube.resources import LEASES

log = logging.getLogger(__name__)

_NO_LOCK = object()  # stands in for the lock when only the timings are checked


# errors of one attempt that client-go retries (tryAcquireOrRenew fails, the next try comes `retry_period`
# later): no answer (aiohttp.ClientError, OSError, TimeoutError), an error answer the library raises instead of
# returning (ApiException), an error body that is not JSON (a proxy's 502 page: json's ValueError)
_RETRIED: tuple[type[Exception], ...] = (aiohttp.ClientError, OSError, asyncio.TimeoutError, ApiException, ValueError)


async def _nothing() -> None:
    """A callback that does nothing (timing checks)."""


def _describe(e: ApiException) -> str:
    """`HTTP <status>: <the Status message>` of a refused lease request (its reason when the body is no Status)."""
    try:
        message = json.loads(e.body or "").get("message")
    except (ValueError, AttributeError):
        message = None
    return f"HTTP {e.status}: {message or e.reason}"


class _ObservedLeaseLock(LeaseLock):
    """The library's Lease lock, whose refused requests are kept for `/readyz` (`problem`) and logged in one line.

    The library logs a refused create or update with a traceback (`logger.exception`) and returns False, and returns
    a refused read to its caller, which logs it at error without the status; either way nothing tells a follower
    whose lease RBAC is missing from one that waits its turn. A 404 on read (no Lease yet) and a 409 (another
    candidate wrote first) are the election's normal course and no problem.

    Attributes:
        problem: why the last request for the Lease was refused, None when it was not.
    """

    def __init__(self, name: str, namespace: str, identity: str, api_client: Any) -> None:
        super().__init__(name, namespace, identity, api_client)
        self.problem: str | None = None

    async def get(self, name: str, namespace: str) -> Any:
        """The library's read; a refusal other than 404 is kept as `problem`."""
        ok, record = await super().get(name, namespace)
        self.problem = (f"cannot get the lease {namespace}/{name}: {_describe(record)}"
                        if not ok and isinstance(record, ApiException) and record.status != 404 else None)
        return ok, record

    async def create(self, name: str, namespace: str, election_record: LeaderElectionRecord) -> bool:
        """The library's create (its body), without its traceback on a refusal."""
        body = k8s.V1Lease(metadata=k8s.V1ObjectMeta(name=name), spec=self.update_lease(election_record))
        return await self._write("create", name, namespace, self.api_instance.create_namespaced_lease(namespace, body))

    async def update(self, name: str, namespace: str, updated_record: LeaderElectionRecord) -> bool:
        """The library's update (the Lease it read, its spec renewed), without its traceback on a refusal."""
        assert self.lease_reference is not None
        self.lease_reference.spec = self.update_lease(updated_record, self.lease_reference.spec)
        return await self._write("update", name, namespace, self.api_instance.replace_namespaced_lease(
            name=name, namespace=namespace, body=self.lease_reference))

    async def _write(self, verb: str, name: str, namespace: str, request: Awaitable[Any]) -> bool:
        try:
            await request
        except ApiException as e:
            if e.status == 409:  # another candidate wrote the Lease first: the next attempt reads it again
                log.debug("could not %s the lease %s/%s: %s", verb, namespace, name, _describe(e))
                return False
            self.problem = f"cannot {verb} the lease {namespace}/{name}: {_describe(e)}"
            log.warning("cannot %s the lease %s/%s: %s", verb, namespace, name, _describe(e))
            return False
        self.problem = None
        return True


class _BoundedElection(leaderelection.LeaderElection):
    """The library's election (its record handling and callbacks unchanged) with client-go's time bounds.

    Args:
        config: the library's configuration (lock, lease_duration, renew_deadline, retry_period in seconds).
        describe: names the candidate and the Lease in log messages.
        clock: the monotonic clock a Lease's expiry is judged on (default the real one; tests pass a FakeClock).
    Attributes:
        renewed_at: the event loop's monotonic time (seconds) at which the last successful attempt began
            (`-inf` before the first): the Lease was written no earlier, so another candidate cannot take it
            before `renewed_at + lease_duration`.
    """

    def __init__(self, config: electionconfig.Config, describe: str, clock: Clock | None = None) -> None:
        super().__init__(config)
        self.describe = describe
        self.renewed_at = float("-inf")
        self.clock: Clock = clock or RealClock()
        self.observed_at = float("-inf")  # `clock` seconds at which `observed_record` was last seen to change

    async def _acquire_or_renew(self) -> bool:
        """The library's `try_acquire_or_renew` (its create, update and record handling), with the holder's lease
        judged expired on `clock`: `lease_duration` seconds after this candidate last saw the record change (client-go
        `tryAcquireOrRenew`: `le.observedTime.Add(leaseDuration).After(now)`, monotonic readings of `time.Now()`).
        The library compares `time.time()` readings: a wall-clock step forward (NTP) made a follower take a Lease its
        holder still renews. The times written into the Lease stay wall-clock times, in UTC as a Lease's are."""
        config, lock = self.election_config, self.election_config.lock
        # The library writes the local time with a "Z" (UTC) suffix and drops a time whose microseconds are 0 (its
        # parse needs ".%f"); a Lease's acquireTime and renewTime are UTC (metav1.MicroTime, RFC 3339 with "Z").
        now = datetime.datetime.fromtimestamp(time.time(), datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        found, old = await lock.get(lock.name, lock.namespace)
        record = LeaderElectionRecord(lock.identity, str(config.lease_duration), now, now)
        if not found:
            if not isinstance(old, ApiException) or old.status != 404:
                log.warning("%s: could not acquire or renew the lease: %s", self.describe,
                            _describe(old) if isinstance(old, ApiException) else old)
                return False
            if not await lock.create(lock.name, lock.namespace, record):
                return False
            self.observed_record, self.observed_at = record, self.clock.now()
            return True
        if not isinstance(old, LeaderElectionRecord) or None in (old.holder_identity, old.lease_duration,
                                                                 old.acquire_time, old.renew_time):
            return await self.update_lock(record)
        seen = self.observed_record
        if seen is None or old.__dict__ != seen.__dict__:
            seen = self.observed_record = old
            self.observed_at = self.clock.now()
        if seen.holder_identity != lock.identity and self.observed_at + config.lease_duration > self.clock.now():
            return False  # held, and not expired
        if seen.holder_identity == lock.identity:
            record.acquire_time = _with_microseconds(seen.acquire_time)
        return await self.update_lock(record)

    async def update_lock(self, leader_election_record: LeaderElectionRecord) -> bool:
        """The library's write of the record; a success is an observation at `clock`'s now."""
        ok = bool(await super().update_lock(leader_election_record))
        if ok:
            self.observed_at = self.clock.now()
        return ok

    async def try_acquire_or_renew(self) -> bool:
        """One attempt (the library's): True when this candidate holds the Lease afterwards.

        A failed request is logged at warning (one line, no traceback) and counts as a failed attempt
        (client-go's `tryAcquireOrRenew` returns false on every error; its callers retry). Other exceptions
        (programming errors) propagate.
        """
        began = asyncio.get_running_loop().time()
        try:
            ok = await self._acquire_or_renew()
        except _RETRIED as e:
            log.warning("%s: could not acquire or renew the lease: %s: %s", self.describe, type(e).__name__, e)
            return False
        if ok:
            self.renewed_at = began
        return ok

    async def _attempt(self, limit: float) -> bool:
        """One attempt bounded to `limit` seconds (client-go runs it under a context that ends at the renew
        deadline); a request still pending then is cancelled and the attempt fails. Returns: True on success."""
        try:
            async with asyncio.timeout(limit):
                return await self.try_acquire_or_renew()
        except TimeoutError:
            log.warning("%s: could not acquire or renew the lease: no answer within %.1f s", self.describe, limit)
            return False

    async def acquire(self) -> bool:
        """Follower: try every `retry_period` seconds until this candidate holds the Lease (client-go
        `acquire`: failed attempts are retried for ever); each attempt is bounded by `renew_deadline`, so a
        request that never answers does not stop the campaign. Returns: True (once leading)."""
        config = self.election_config
        while True:
            if await self._attempt(config.renew_deadline):
                return True
            await asyncio.sleep(config.retry_period)

    async def renew_loop(self) -> None:
        """Leader: renew every `retry_period` seconds; returns (the library then cancels `onstarted_leading` and
        runs `onstopped_leading`) once no renewal has succeeded by `renew_deadline` seconds after the last
        successful attempt began. A pending request is cancelled at that deadline, which is measured on the
        event loop's monotonic clock (the library's loop uses the wall clock, between attempts only).

        client-go `renew`: `wait.PollImmediateUntil(RetryPeriod, tryAcquireOrRenew(timeoutCtx),
        timeoutCtx.Done())` under `context.WithTimeout(ctx, RenewDeadline)`. Counting from the start of the
        last successful attempt (client-go counts from a retry period after it ended) and renew_deadline <
        lease_duration make this leader stop before another candidate can take the Lease.
        Raises: nothing but cancellation; an unexpected error of an attempt propagates.
        """
        config = self.election_config
        loop = asyncio.get_running_loop()
        while True:
            deadline = self.renewed_at + config.renew_deadline
            await asyncio.sleep(min(config.retry_period, max(0.0, deadline - loop.time())))
            remaining = deadline - loop.time()
            if remaining <= 0:
                log.warning("%s: no renewal within renew_deadline (%s s)", self.describe, config.renew_deadline)
                return
            await self._attempt(remaining)


def _with_microseconds(text: str | None) -> str | None:
    """A Lease time as the library read it back (`str()` of a datetime, without `.%f` at a whole second) in the
    form its write parses (`%Y-%m-%d %H:%M:%S.%f`); text that is no time stays as it is."""
    try:
        return datetime.datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M:%S.%f") if text else text
    except ValueError:
        return text


class LeaderElector:
    """Campaigns for one Lease.

    Args:
        client: the cluster holding the Lease (the host).
        namespace, name: the Lease.
        identity: this candidate's unique identity (written to `spec.holderIdentity`).
        lease_duration: whole seconds (the Lease's `leaseDurationSeconds`), 15 by default.
        renew_deadline, retry_period: seconds, as in client-go (10 and 2 by default; the library requires
            retry_period >= 1 and renew_deadline > 1.2 x retry_period).
    Raises:
        ValueError: the timings are inconsistent (message from the library).
    Attributes:
        leading: set once this candidate holds the Lease.
        problem: why the last request for the Lease was refused (403: RBAC), None when it was not.
        lost: set when a leader could not renew within `renew_deadline` seconds of its last successful
            attempt's start (it must stop writing at once), or when the election itself failed on an
            unexpected error (then no replica state is trusted: the caller builds everything anew and campaigns
            again after a growing wait, syncer/cli.py `_serve`). A failed
            request (connection refused, a hung request cut at its bound) is retried, never sets it alone.
    """

    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration: int = 15, renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.leading = asyncio.Event()
        self.lost = asyncio.Event()
        self._lock = _ObservedLeaseLock(name, namespace, identity, client.api)
        self._config = electionconfig.Config(
            self._lock, lease_duration=int(lease_duration),
            renew_deadline=renew_deadline, retry_period=retry_period,
            onstarted_leading=self._started, onstopped_leading=self._stopped)

    @property
    def problem(self) -> str | None:
        """Why the last request for the Lease was refused (e.g. `cannot get the lease ns/name: HTTP 403: ...`, RBAC
        missing), None when it was not: a follower that cannot read the Lease would never lead."""
        return self._lock.problem

    @staticmethod
    def check_timing(lease_duration: int, renew_deadline: float, retry_period: float) -> None:
        """Check the timings as the library will (before any cluster is reached: a wrong flag is a
        configuration error, not something to wait for).

        Raises:
            ValueError: inconsistent (the library's message, e.g. `lease_duration must be greater than
                renew_deadline`).
        """
        electionconfig.Config(cast(BaseLock, _NO_LOCK), lease_duration=int(lease_duration),
                              renew_deadline=renew_deadline, retry_period=retry_period,
                              onstarted_leading=_nothing, onstopped_leading=_nothing)

    async def _started(self) -> None:
        """The library's `onstarted_leading`, run as a task of its own: it returns at once (the library cancels it
        only when the renew loop ends; cancelled with the election, it would stay pending for ever)."""
        log.info("%s became the leader (lease %s/%s)", self.identity, self.namespace, self.name)
        self.leading.set()

    async def _stopped(self) -> None:
        if self.leading.is_set():
            log.error("%s lost the lease %s/%s; stopped writing", self.identity, self.namespace, self.name)
            self.lost.set()

    async def run(self) -> None:
        """Campaign, then renew, until the lease is lost (returns, `lost` set) or the task is cancelled.

        Failed attempts are logged and retried every `retry_period` (a follower for ever, a leader until
        `renew_deadline`), as client-go does; an unexpected error sets `lost` with its traceback.
        """
        log.info("%s is waiting to become the leader (lease %s/%s)", self.identity, self.namespace, self.name)
        try:
            await _BoundedElection(self._config, f"{self.identity} (lease {self.namespace}/{self.name})").run()
        except Exception:
            log.exception("%s: leader election failed (lease %s/%s)", self.identity, self.namespace, self.name)
            self.lost.set()

    async def release(self, timeout: float = 2.0) -> None:
        """Give the Lease up if this candidate holds it (clean shutdown), within `timeout` seconds (a stop must end
        within the pod's grace period even when the host hangs). A refusal or no answer in time is logged as a
        warning (the next leader then waits for the Lease to expire), never raised."""
        if not self.leading.is_set() or self.lost.is_set():
            return
        try:
            async with asyncio.timeout(timeout):
                lease = await self.client.get(LEASES, self.name, self.namespace)
                if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                    return
                lease["spec"]["holderIdentity"] = None
                await self.client.replace(LEASES, lease, self.namespace)
            log.info("%s released the lease %s/%s", self.identity, self.namespace, self.name)
        except ApiError as e:
            log.warning("%s could not release the lease %s/%s: %s", self.identity, self.namespace, self.name, e)
        except TimeoutError:
            log.warning("%s could not release the lease %s/%s: no answer within %g s", self.identity,
                        self.namespace, self.name, timeout)
