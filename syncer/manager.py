"""Wires the syncer together: shared informers -> caches -> work queues -> reconcilers.

```
host RuntimeClasses ──informer──▶ cache ─┬─▶ runtimeclass queue ─▶ RuntimeClassReconciler ─▶ virtual RCs
virtual RuntimeClasses ─informer─▶ cache ┘        (name)
host RuntimeClasses (gate changes) ──▶ pods that name the class ─┐
virtual Pods ──informer──▶ cache ────────────────────────────────┼─▶ pod queue ─▶ PodReconciler ─▶ host Pods,
host Pods (ours) ──informer──▶ cache ────────────────────────────┤    (ns/name)                    virtual Events,
host ConfigMaps/Secrets/PVCs/Services (metadata) ─▶ pods waiting ─┤                                  tokens
virtual ConfigMaps/Secrets (metadata) ──▶ pods waiting ───────────┘
virtual Services ──informer──▶ cache (read when a pod is translated: service links)
```

Each controller declares its watches (`watches(ControllerBuilder)`: for/owns/watches with predicates and
the map from a changed object to keys, kube/builder.py); the caches it reads come from one shared
`InformerFactory`, one informer per (cluster, resource) view, cached as controllers/sources.py declares.
The manager only wires the declarations to the queues and runs them; it holds no rule of its own.

Start order: informers start and list; controllers start only once every cache is synced (so no
reconcile acts on a half-filled cache); readiness is reported once each key queued at start-up has
been reconciled once. Stop: informers and workers stop; in-flight reconciles get a bounded time, during
which a leader goes on renewing its Lease (a Lease lost cancels them at once); it releases the Lease once
they stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.config.policy import Policy
from syncer.controllers import policyreport
from syncer.controllers.pods import PodReconciler
from syncer.controllers.podtranslate.tokens import DEFAULT_LIFETIME
from syncer.controllers.runtimeclasses import RuntimeClassReconciler
from syncer.controllers.sources import Sources, slim_of
from syncer.kube.builder import ControllerBuilder, InformerFactory, wire
from syncer.kube.cache import Store
from syncer.kube.client import KubeClient
from syncer.kube.clock import Clock, RealClock
from syncer.kube.controller import Controller
from syncer.kube.events import EventRecorder
from syncer.kube.leader import LeaderElector
from syncer.kube.workqueue import WorkQueue
from syncer.metrics import Metrics
from syncer.patches.apply import Patcher

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass
class Options:
    """Process options from the command line.

    Attributes:
        vcluster_name: names host pods and the managed-by label.
        host_namespace: where host pods live (single-namespace mode).
        pod_workers / rc_workers: concurrent reconciles per controller.
        instance: the events' reportingInstance.
        watch_timeout: seconds a watch stays open before it is renewed.
        token_lifetime: seconds the service-account tokens of host pods live before they are renewed (at least
            600); 0 keeps vcluster's ten-year tokens, never renewed.
    """

    vcluster_name: str
    host_namespace: str
    pod_workers: int = 4
    rc_workers: int = 2
    instance: str = field(default_factory=lambda: f"pod-syncer-{socket.gethostname()}")
    watch_timeout: int = 300
    token_lifetime: int = DEFAULT_LIFETIME


async def _wait_or_stop(aw: Awaitable[Any], *stops: asyncio.Event) -> bool:
    """Wait for `aw` unless one of `stops` is set first (then `aw` is cancelled). True when `aw` finished."""
    work: asyncio.Future[Any] = asyncio.ensure_future(aw)
    waiters = [asyncio.ensure_future(s.wait()) for s in stops]
    try:
        await asyncio.wait({work, *waiters}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
    if work.done():
        return True
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await work
    return False


class Syncer:
    """One running syncer: its caches, queues, reconcilers and controllers.

    Args:
        config: validated configuration.
        host, virtual: clients for the two clusters.
        options: names, namespace and worker counts.
        metrics: where metrics go (a fresh registry by default).
        patcher: compiled RuntimeClass patches (None when none are configured).
        policy: the runtime policy (behaviour.md section 6), None for none.
        clock: the time work-queue delays, backoffs and waits run on (default the real one; tests pass a
            FakeClock and move it).
    """

    def __init__(self, config: SyncerConfig, host: KubeClient, virtual: KubeClient, options: Options,
                 metrics: Metrics | None = None, patcher: Patcher | None = None, policy: Policy | None = None,
                 clock: Clock | None = None) -> None:
        self.config = config
        self.host = host
        self.virtual = virtual
        self.options = options
        self.metrics = metrics or Metrics()
        m = self.metrics

        self.clock = clock or RealClock()
        self.sources = Sources(options.host_namespace, options.vcluster_name)
        self.factory = InformerFactory({"host": host, "virtual": virtual}, slim_of, options.watch_timeout,
                                       self.clock)
        pod_adds, rc_adds = m.workqueue_adds.labels("pod"), m.workqueue_adds.labels("runtimeclass")
        self.pod_queue = WorkQueue("pod", on_add=lambda _: pod_adds.inc(), clock=self.clock)
        self.rc_queue = WorkQueue("runtimeclass", on_add=lambda _: rc_adds.inc(), clock=self.clock)
        self.recorder = EventRecorder(virtual, "pod-syncer", options.instance, clock=self.clock)
        self.recorders = [self.recorder]  # an event write their RBAC refuses shows in readiness
        self.pod_reconciler = PodReconciler(config, self.sources, host=host, virtual=virtual, factory=self.factory,
                                            recorder=self.recorder, metrics=m, policy=policy, clock=self.clock,
                                            token_lifetime=options.token_lifetime)
        wire(self.factory, self.pod_queue, self.pod_reconciler.watches(ControllerBuilder("pod")).watch_list)
        self.controllers: list[Controller] = [
            Controller("pod", self.pod_queue, self.pod_reconciler.reconcile, m, workers=options.pod_workers)]
        if config.enabled:
            rc_events = EventRecorder(virtual, "runtimeclass-syncer",
                                      options.instance.replace("pod-syncer", "runtimeclass-syncer", 1),
                                      clock=self.clock)
            self.recorders.append(rc_events)
            self.rc_reconciler = RuntimeClassReconciler(config, self.factory.store(self.sources.host_rcs),
                                                        self.factory.store(self.sources.virtual_rcs), virtual,
                                                        patcher, rc_events)
            wire(self.factory, self.rc_queue,
                 self.rc_reconciler.watches(ControllerBuilder("runtimeclass"), self.sources).watch_list)
            self.controllers.append(Controller("runtimeclass", self.rc_queue, self.rc_reconciler.reconcile, m,
                                               workers=options.rc_workers))
        self.informers = self.factory.informers
        # the caches, by name (logs, tests, the demo)
        self.virtual_pods, self.host_pods = self.pod_reconciler.virtual_pods, self.pod_reconciler.host_pods
        self.host_rcs = self.pod_reconciler.host_rcs
        self.virtual_rcs = self.factory.store(self.sources.virtual_rcs) if config.enabled else Store()
        self.caches_synced = asyncio.Event()
        self.ready_event = asyncio.Event()
        self.following = False  # waiting to become leader (leader election only)
        self.elector: LeaderElector | None = None  # the election, while `run` campaigns or leads
        self.lost_leadership = False
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ runtime policy

    def set_policy(self, policy: Policy) -> None:
        """Put a reloaded runtime policy in force: every pod is looked at again; those refused so far are
        judged by the new policy, those on the host are left as they are (behaviour.md section 6)."""
        self.pod_reconciler.policy = policy
        self.metrics.policy_reloads.labels("applied").inc()
        self.check_policy(policy)
        for key in self.pod_reconciler.all_pod_keys():
            self.pod_queue.add(key)

    def policy_rejected(self, errors: list[str]) -> None:
        """A changed policy file did not validate (its errors are logged; the policy in force stays)."""
        self.metrics.policy_reloads.labels("invalid").inc()

    def check_policy(self, policy: Policy) -> None:
        """Log what the host shows of a policy's defaults (behaviour.md section 6): a default the host lacks
        is a warning; one the host has but the selector or the handler list refuses is an error (each pod
        that would get it is refused, naming why). No missing default with `sync.fromHost.runtimeClasses.enabled:
        false`: the host's classes are not read then, so every default would look missing."""
        classes = [rc for k in self.host_rcs.list_keys() if (rc := self.host_rcs.full(k)) is not None]
        for problem in policyreport.report(self.config, policy, classes)["problems"]:
            if "the default runtime class" in problem and "does not exist in the host" in problem:
                if self.config.enabled:
                    log.warning("runtime policy %s: %s", policy.source, problem)
            else:
                log.error("runtime policy %s: %s", policy.source, problem)

    # ------------------------------------------------------------------ lifecycle

    @property
    def ready(self) -> bool:
        """Caches synced and every informer healthy, no token renewal failing, no request for the leader's Lease
        refused, and either the first full reconcile done or this replica a follower (followers are ready to take
        over; they do not write)."""
        return ((self.ready_event.is_set() or (self.following and self.caches_synced.is_set()))
                and all(i.last_error is None for i in self.informers)
                and not any(c.forbidden for c in self.controllers) and not any(r.forbidden for r in self.recorders)
                and not self.pod_reconciler.tokens.failing
                and (self.elector is None or self.elector.problem is None))

    def readiness_detail(self) -> list[str]:
        """Why the syncer is not ready (empty when ready)."""
        why = [f"cache {i.name} not synced" + (f": {i.last_error}" if i.last_error else "")
               for i in self.informers if not i.synced.is_set()]
        why += [f"informer {i.name} failing: {i.last_error}" for i in self.informers
                if i.synced.is_set() and i.last_error is not None]
        why += [f"forbidden to {verb} {resource} on the {cluster} cluster: {msg}" for c in self.controllers
                for (cluster, verb, resource), msg in c.forbidden.items()]
        why += [f"forbidden to {verb} {resource} on the {cluster} cluster: {msg}" for r in self.recorders
                for (cluster, verb, resource), msg in r.forbidden.items() if not any(
                    (cluster, verb, resource) in c.forbidden for c in self.controllers)]
        why += [f"renewing the service-account tokens of pod {key} failing: {msg}"
                for key, msg in sorted(self.pod_reconciler.tokens.failing.items())]
        if self.elector is not None and self.elector.problem is not None:
            why.append(f"leader election: {self.elector.problem}")
        if not why and not self.ready_event.is_set():
            why.append("first reconcile not finished")
        return why

    async def wait_idle(self) -> None:
        """Wait until every work queue is empty with nothing in flight (tests, demo). Keys waiting for a
        delayed add (a retry with backoff, a pod's recheck) are not waited for: `pending()` shows them."""
        while not all(c.queue.idle for c in self.controllers):
            await asyncio.gather(*(c.queue.wait_idle() for c in self.controllers))

    @property
    def healthy(self) -> bool:
        """True while every loop is running, the controllers' workers too."""
        return bool(self._tasks) and not any(t.done() for t in self._tasks) and all(c.healthy for c in self.controllers)

    async def run(self, stop: asyncio.Event, elector: LeaderElector | None = None) -> None:
        """Run until `stop` is set. With an `elector`, controllers (all writes) run only while this
        replica leads; a lost lease stops them at once and sets `lost_leadership`."""
        self._tasks = [asyncio.create_task(i.run(stop), name=f"informer {i.name}") for i in self.informers]
        halt = asyncio.Event()  # stop, or leadership lost
        try:
            if not await _wait_or_stop(asyncio.gather(*(i.synced.wait() for i in self.informers)), stop):
                return
            self.caches_synced.set()
            log.info("all caches synced: %d virtual pods, %d host pods, %d host and %d virtual runtime classes",
                     len(self.virtual_pods), len(self.host_pods), len(self.host_rcs), len(self.virtual_rcs))
            if self.pod_reconciler.policy is not None:
                self.check_policy(self.pod_reconciler.policy)
            self.elector = elector
            if elector is not None:
                self.following = True
                self._tasks.append(asyncio.create_task(elector.run(), name="leader election"))
                if not await _wait_or_stop(elector.leading.wait(), stop, elector.lost):
                    self.lost_leadership = elector.lost.is_set()
                    return
                self.following = False
            for c in self.controllers:
                c.start_first_pass(c.queue.queued())
                self._tasks.append(asyncio.create_task(c.run(halt), name=f"controller {c.name}"))
            lost = elector.lost if elector is not None else asyncio.Event()
            if await _wait_or_stop(asyncio.gather(*(c.first_pass_done.wait() for c in self.controllers)),
                                   stop, lost):
                self.ready_event.set()
                log.info("first reconcile done; ready")
            await _wait_or_stop(lost.wait(), stop)
            if lost.is_set():
                self.lost_leadership = True
        finally:
            halt.set()
            await self._finish()
            if elector is not None:  # bounded: shutdown must finish within 10 s even if the host hangs
                await elector.release(timeout=2.0)

    async def _finish(self) -> None:
        """Stop: informers at once (a watch may be silent for a minute); controllers get up to 6 s to finish their
        in-flight reconciles, then are cancelled; the election goes on renewing the Lease until they stopped, and a
        Lease lost meanwhile cancels them at once (as does a lease lost before: in-flight reconciles are abandoned).

        controller-runtime's `engageStopProcedure` (pkg/manager/internal.go) stops the leader-election runnables
        first and cancels leader election only once they stopped; its `OnStoppedLeading` sets the graceful shutdown
        timeout to 0. Cancelling the election at once, as this did, left the drain without renewals and without the
        renew-deadline guard: another replica could take the Lease while this one still wrote.
        """
        election = [t for t in self._tasks if t.get_name() == "leader election"]
        cancel_now = [t for t in self._tasks if t.get_name().startswith("informer ")]
        if self.lost_leadership:  # stop writing at once: in-flight reconciles are abandoned
            cancel_now = list(self._tasks)
        for t in cancel_now:
            t.cancel()
        draining = [t for t in self._tasks if t not in cancel_now and t not in election]
        lost = self.elector.lost if self.elector is not None else asyncio.Event()
        if draining and not await _wait_or_stop(asyncio.wait(draining, timeout=6.0), lost):
            self.lost_leadership = True  # the elector said so (`lost the lease ...; stopped writing`)
        pending = [t for t in [*draining, *election] if not t.done()]
        for t in pending:
            t.cancel()
        for t in [*cancel_now, *pending]:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        for t in self._tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                log.error("%s ended with an error", t.get_name(), exc_info=t.exception())
