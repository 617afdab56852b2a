"""Leader election on a `coordination.k8s.io/v1` Lease, for a vcluster that runs several replicas.

It uses kubernetes-asyncio's `leaderelection` (client-go semantics): a candidate becomes leader by
creating or taking over the Lease once the holder has not renewed it for `lease_duration` seconds; the
leader renews it every `retry_period` seconds and gives up when it could not renew within
`renew_deadline` (shorter than `lease_duration`, so two leaders never overlap). On a clean shutdown the
leader releases the Lease (clears `holderIdentity`) so a follower takes over at once instead of after
`lease_duration`, as client-go's `ReleaseOnCancel` does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import cast

from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
from kubernetes_asyncio.leaderelection.resourcelock.baselock import BaseLock
from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

from syncer.kube.client import ApiError, KubeClient
from syncer.kube.resources import LEASES

log = logging.getLogger(__name__)

_NO_LOCK = object()  # stands in for the lock when only the timings are checked


async def _nothing() -> None:
    """A callback that does nothing (timing checks)."""


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
        lost: set when a leader could not renew in time (it must stop writing at once), or when the
            election itself failed (then no replica state is trusted: the process should restart).
    """

    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration: int = 15, renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.leading = asyncio.Event()
        self.lost = asyncio.Event()
        self._config = electionconfig.Config(
            LeaseLock(name, namespace, identity, client.api), lease_duration=int(lease_duration),
            renew_deadline=renew_deadline, retry_period=retry_period,
            onstarted_leading=self._started, onstopped_leading=self._stopped)

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
        log.info("%s became the leader (lease %s/%s)", self.identity, self.namespace, self.name)
        self.leading.set()
        await asyncio.Event().wait()  # held until the library cancels it on a lost lease

    async def _stopped(self) -> None:
        if self.leading.is_set():
            log.error("%s lost the lease %s/%s; stopped writing", self.identity, self.namespace, self.name)
            self.lost.set()

    async def run(self) -> None:
        """Campaign, then renew, until the lease is lost (returns) or the task is cancelled."""
        log.info("%s is waiting to become the leader (lease %s/%s)", self.identity, self.namespace, self.name)
        try:
            await leaderelection.LeaderElection(self._config).run()
        except Exception:
            log.exception("%s: leader election failed (lease %s/%s)", self.identity, self.namespace, self.name)
            self.lost.set()

    async def release(self) -> None:
        """Give the Lease up if this candidate holds it (clean shutdown); errors are logged, not raised."""
        if not self.leading.is_set() or self.lost.is_set():
            return
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"]["holderIdentity"] = None
            await self.client.replace(LEASES, lease, self.namespace)
            log.info("%s released the lease %s/%s", self.identity, self.namespace, self.name)
        except ApiError as e:
            log.warning("%s could not release the lease %s/%s: %s", self.identity, self.namespace, self.name, e)
