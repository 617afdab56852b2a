"""Wires the syncer together: informers -> caches -> work queues -> reconcilers.

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

The pod controller's watches are declarations (kube/watches.py: an informer, the queue, and the map from
a changed object to pod keys), as controller-runtime's builder declares For/Watches.

Start order: informers start and list; controllers start only once every cache is synced (so no
reconcile acts on a half-filled cache); readiness is reported once each key queued at start-up has
been reconciled once. Stop: informers and workers stop; in-flight reconciles get a bounded time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.config.policy import Policy
from syncer.controllers import policyreport, translate
from syncer.controllers.gate import runtime_class_matches
from syncer.controllers.pods import FORCE_SYNC, NAMESPACE_INDEX, SERVICE, PodReconciler
from syncer.controllers.podtokens import ServiceAccountTokens
from syncer.controllers.podtranslate.references import CONFIGMAP, PVC, SECRET
from syncer.controllers.runtimeclasses import RuntimeClassReconciler
from syncer.kube.cache import Cached, Store, field_equal, object_key, rest_equal, sub_field
from syncer.kube.cache import field as cached_field
from syncer.kube.client import KubeClient
from syncer.kube.clock import Clock, RealClock
from syncer.kube.controller import Controller
from syncer.kube.events import EventRecorder
from syncer.kube.informer import Handlers, Informer
from syncer.kube.leader import LeaderElector
from syncer.kube.resources import CONFIGMAPS, NAMESPACES, PODS, PVCS, RUNTIMECLASSES, SECRETS, SERVICES
from syncer.kube.watches import enqueue
from syncer.kube.workqueue import WorkQueue
from syncer.metrics import Metrics
from syncer.patches.apply import Patcher

log = logging.getLogger(__name__)

Obj = dict[str, Any]
RC_INDEX = "runtimeClassName"
# What event handlers and indexes read of a cached object without decoding it; the rest stays packed.
IDENTITY = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
POD_PACKED = {"metadata": IDENTITY, "spec": ("runtimeClassName", "nodeName"), "status": ("startTime",)}
RC_PACKED = {"metadata": (*IDENTITY, "labels"), "overhead": (), "scheduling": ()}


@dataclass
class Options:
    """Process options from the command line.

    Attributes:
        vcluster_name: names host pods and the managed-by label.
        host_namespace: where host pods live (single-namespace mode).
        pod_workers / rc_workers: concurrent reconciles per controller.
        instance: the events' reportingInstance.
        watch_timeout: seconds a watch stays open before it is renewed.
    """

    vcluster_name: str
    host_namespace: str
    pod_workers: int = 4
    rc_workers: int = 2
    instance: str = field(default_factory=lambda: f"pod-syncer-{socket.gethostname()}")
    watch_timeout: int = 300


def _host_pod_transform(obj: Obj) -> Obj:
    """Keep only what the pod reconciler reads of a host pod."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    keep_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels", "annotations",
                                      "deletionTimestamp") if k in meta}
    keep_spec: Obj = {f: [{"name": c.get("name"), "image": c.get("image")} for c in spec.get(f) or []
                          if isinstance(c, dict)] for f in ("containers", "initContainers")}
    for k in ("activeDeadlineSeconds", "runtimeClassName", "nodeName"):
        if k in spec:
            keep_spec[k] = spec[k]
    out: Obj = {"metadata": keep_meta, "spec": keep_spec}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


DEPENDENCY_RESOURCES = {CONFIGMAP: CONFIGMAPS, SECRET: SECRETS, PVC: PVCS, SERVICE: SERVICES}
FORCE_SYNC_RESOURCES = {CONFIGMAP: CONFIGMAPS, SECRET: SECRETS}


def _metadata_transform(obj: Obj) -> Obj:
    """Keep only what is read of an object a pod references: its identity, and the force-sync annotation."""
    meta = obj.get("metadata") or {}
    out = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta}
    ann = meta.get("annotations")
    if isinstance(ann, dict) and FORCE_SYNC in ann:
        out["annotations"] = {FORCE_SYNC: ann[FORCE_SYNC]}
    return {"metadata": out}


def _service_transform(obj: Obj) -> Obj:
    """Keep what the translation reads of a Service: its identity, ClusterIP and ports."""
    out = _metadata_transform(obj)
    spec = obj.get("spec") or {}
    out["spec"] = {"clusterIP": spec.get("clusterIP"),
                   "ports": [{k: p[k] for k in ("name", "port", "protocol") if k in p}
                             for p in spec.get("ports") or [] if isinstance(p, dict)]}
    return out


def _namespace_index(obj: Cached) -> list[str]:
    ns = sub_field(obj, "metadata", "namespace")
    return [ns] if isinstance(ns, str) else []


def _own_key(obj: Cached) -> list[str]:
    return [object_key(obj)]


def _virtual_key_of_host_pod(hpod: Cached) -> list[str]:
    key = translate.virtual_key_of_host_pod({"metadata": cached_field(hpod, "metadata")})
    return [key] if key is not None else []


def _rc_index(pod: Cached) -> list[str]:
    rcn = sub_field(pod, "spec", "runtimeClassName")
    return [rcn] if isinstance(rcn, str) and rcn else []


def _host_rc_index(hpod: Cached) -> list[str]:
    """Host pods by the runtime class their virtual pod named (finds orphans whose virtual pod is gone)."""
    ann = (cached_field(hpod, "metadata") or {}).get("annotations")
    rcn = ann.get(translate.VIRTUAL_RUNTIME_CLASS) if isinstance(ann, dict) else None
    return [rcn] if isinstance(rcn, str) and rcn else []


def _pod_changed(old: Cached, new: Cached) -> bool:
    """A virtual pod change the pod reconciler must look at (not just a status write)."""
    # metadata besides identity is packed: labels, annotations (and owners, finalizers) compare encoded
    return (not field_equal(old, new, "spec") or not rest_equal(old, new, "metadata")
            or any(sub_field(old, "metadata", k) != sub_field(new, "metadata", k)
                   for k in ("deletionTimestamp", "uid")))


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

        # Caches keep large fields packed (kube/cache.py); handlers and indexes read only the sub-fields left
        # decoded, reconcilers decode the object they work on.
        self.host_rcs = Store(packed=RC_PACKED)
        self.virtual_rcs = Store(packed=RC_PACKED)
        pod_indexes = {RC_INDEX: _rc_index, **({NAMESPACE_INDEX: _namespace_index} if policy is not None else {})}
        self.virtual_pods = Store(indexers=pod_indexes, packed=POD_PACKED)
        # The policy's namespace entries read the virtual namespaces' labels (metadata only)
        self.virtual_namespaces = Store(packed={"metadata": IDENTITY})
        self.host_pods = Store(transform=_host_pod_transform, indexers={RC_INDEX: _host_rc_index}, packed=POD_PACKED)

        pod_adds, rc_adds = m.workqueue_adds.labels("pod"), m.workqueue_adds.labels("runtimeclass")
        self.clock = clock or RealClock()
        self.pod_queue = WorkQueue("pod", on_add=lambda _: pod_adds.inc(), clock=self.clock)
        self.rc_queue = WorkQueue("runtimeclass", on_add=lambda _: rc_adds.inc(), clock=self.clock)
        self.recorder = EventRecorder(virtual, "pod-syncer", options.instance)

        # Metadata-only caches of what host pods reference (section 3.1): no ConfigMap or Secret content
        # ever enters the process.
        self.host_objects = {kind: Store(transform=_service_transform if kind == SERVICE else _metadata_transform)
                             for kind in DEPENDENCY_RESOURCES}
        self.virtual_services = Store(transform=_service_transform, indexers={NAMESPACE_INDEX: _namespace_index})
        self.virtual_objects = {kind: Store(transform=_metadata_transform) for kind in FORCE_SYNC_RESOURCES}
        self.pod_reconciler = PodReconciler(
            config, vcluster_name=options.vcluster_name, host_namespace=options.host_namespace,
            virtual_pods=self.virtual_pods, host_pods=self.host_pods, host_rcs=self.host_rcs, host=host,
            virtual=virtual, recorder=self.recorder, metrics=m, host_objects=self.host_objects,
            virtual_objects=self.virtual_objects, virtual_services=self.virtual_services,
            tokens=ServiceAccountTokens(virtual, host, host_namespace=options.host_namespace,
                                        vcluster_name=options.vcluster_name, use_secrets=config.use_secrets_for_tokens,
                                        host_secrets=self.host_objects[SECRET]),
            policy=policy, namespaces=self.virtual_namespaces if policy is not None else None, clock=self.clock)
        rc_events = EventRecorder(virtual, "runtimeclass-syncer",
                                  options.instance.replace("pod-syncer", "runtimeclass-syncer", 1))
        self.rc_reconciler = RuntimeClassReconciler(config, self.host_rcs, self.virtual_rcs, virtual, patcher,
                                                    rc_events)

        wt = options.watch_timeout
        pq = self.pod_queue
        # What the pod controller watches and which pod keys a change wakes (controller-runtime's For/Watches)
        self.informers: list[Informer] = [
            enqueue(Informer(virtual, PODS, self.virtual_pods, watch_timeout=wt), pq, _own_key, changed=_pod_changed,
                    relist=self._enqueue_all_pods),
            enqueue(Informer(host, PODS, self.host_pods, namespace=options.host_namespace, watch_timeout=wt,
                             label_selector=f"{translate.MANAGED_BY}={options.vcluster_name}"), pq,
                    _virtual_key_of_host_pod, relist=self._enqueue_all_pods),
            # host objects pods reference (and the Services they need): pods waiting for them
            *(enqueue(Informer(host, res, self.host_objects[kind], namespace=options.host_namespace, watch_timeout=wt,
                               metadata_only=kind != SERVICE), pq,
                      functools.partial(self._pods_waiting_for_host_object, kind), on_delete=False)
              for kind, res in DEPENDENCY_RESOURCES.items()),
            # virtual ConfigMaps/Secrets pods reference: pods waiting for them may now mark them for vcluster
            *(enqueue(Informer(virtual, res, self.virtual_objects[kind], watch_timeout=wt, metadata_only=True), pq,
                      functools.partial(self._pods_waiting_for_virtual_object, kind), on_delete=False)
              for kind, res in FORCE_SYNC_RESOURCES.items()),
            Informer(virtual, SERVICES, self.virtual_services, watch_timeout=wt),  # read at translation only
        ]
        if policy is not None:  # a namespace's labels decide which entry applies (a reload may add selectors)
            self.informers.append(enqueue(
                Informer(virtual, NAMESPACES, self.virtual_namespaces, watch_timeout=wt, metadata_only=True), pq,
                lambda ns: self.virtual_pods.keys_by_index(NAMESPACE_INDEX, object_key(ns)), on_delete=False))
        self.controllers: list[Controller] = [
            Controller("pod", self.pod_queue, self.pod_reconciler.reconcile, m, workers=options.pod_workers)]
        if config.enabled:
            host_rc_inf = Informer(host, RUNTIMECLASSES, self.host_rcs, watch_timeout=wt)
            virtual_rc_inf = Informer(virtual, RUNTIMECLASSES, self.virtual_rcs, watch_timeout=wt)
            host_rc_inf.add_handlers(Handlers(
                on_add=lambda o: self._host_rc_changed(None, o), on_update=self._host_rc_changed,
                on_delete=lambda o: self._host_rc_changed(o, None), on_relist=self._enqueue_after_host_rc_relist))
            virtual_rc_inf.add_handlers(Handlers(
                on_add=self._enqueue_rc, on_update=lambda o, n: self._enqueue_rc(n), on_delete=self._enqueue_rc,
                on_relist=self._enqueue_all_rcs))
            self.informers += [host_rc_inf, virtual_rc_inf]
            self.controllers.append(Controller("runtimeclass", self.rc_queue, self.rc_reconciler.reconcile, m,
                                               workers=options.rc_workers))
        self.caches_synced = asyncio.Event()
        self.ready_event = asyncio.Event()
        self.following = False  # waiting to become leader (leader election only)
        self.lost_leadership = False
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ event handlers (map to keys)

    def _pods_waiting_for_host_object(self, kind: str, obj: Cached) -> list[str]:
        """A host ConfigMap/Secret/PVC/Service appeared or changed: the pods waiting for it."""
        return self.pod_reconciler.pods_waiting_for(kind, (obj.get("metadata") or {}).get("name", ""))

    def _pods_waiting_for_virtual_object(self, kind: str, obj: Cached) -> list[str]:
        """A virtual ConfigMap/Secret appeared or changed: the pods waiting for its host copy."""
        meta = obj.get("metadata") or {}
        return self.pod_reconciler.pods_waiting_for(kind, translate.host_pod_name(
            meta.get("name", ""), meta.get("namespace", ""), self.options.vcluster_name))

    def set_policy(self, policy: Policy) -> None:
        """Put a reloaded runtime policy in force: every pod is looked at again; those refused so far are
        judged by the new policy, those on the host are left as they are (behaviour.md section 6)."""
        self.pod_reconciler.policy = policy
        self.metrics.policy_reloads.labels("applied").inc()
        self.check_policy(policy)
        self._enqueue_all_pods()

    def policy_rejected(self, errors: list[str]) -> None:
        """A changed policy file did not validate (its errors are logged; the policy in force stays)."""
        self.metrics.policy_reloads.labels("invalid").inc()

    def check_policy(self, policy: Policy) -> None:
        """Log what the host shows of a policy's defaults (behaviour.md section 6): a default the host lacks
        is a warning; one the host has but the selector or the handler list refuses is an error (each pod
        that would get it is refused, naming why)."""
        classes = [rc for k in self.host_rcs.list_keys() if (rc := self.host_rcs.full(k)) is not None]
        for problem in policyreport.report(self.config, policy, classes)["problems"]:
            if "does not exist in the host" in problem:
                log.warning("runtime policy %s: %s", policy.source, problem)
            else:
                log.error("runtime policy %s: %s", policy.source, problem)

    def _enqueue_rc(self, rc: Cached) -> None:
        self.rc_queue.add(object_key(rc))

    def _enqueue_all_rcs(self) -> None:
        for name in {*self.host_rcs.list_keys(), *self.virtual_rcs.list_keys()}:
            self.rc_queue.add(name)

    def _enqueue_all_pods(self) -> None:
        for key in self.virtual_pods.list_keys():
            self.pod_queue.add(key)
        for hpod in self.host_pods.values():
            for key in _virtual_key_of_host_pod(hpod):
                self.pod_queue.add(key)

    def _enqueue_after_host_rc_relist(self) -> None:
        """A host RC may have flickered while the watch was down: every class and every gated pod."""
        self._enqueue_all_rcs()
        self._enqueue_all_pods()

    def _gate_state(self, rc: Cached | None) -> tuple[bool, bool, bool]:
        if rc is None:
            return (False, False, False)
        return (True, bool(sub_field(rc, "metadata", "deletionTimestamp")), runtime_class_matches(self.config, rc))

    def _host_rc_changed(self, old: Cached | None, new: Cached | None) -> None:
        rc = new or old
        assert rc is not None
        name = object_key(rc)
        self.rc_queue.add(name)
        if self._gate_state(old) != self._gate_state(new):
            for key in self.virtual_pods.keys_by_index(RC_INDEX, name):
                self.pod_queue.add(key)
            for hpod in self.host_pods.by_index(RC_INDEX, name):  # incl. orphans whose virtual pod is gone
                for key in _virtual_key_of_host_pod(hpod):
                    self.pod_queue.add(key)
            policy = self.pod_reconciler.policy
            if policy is not None and name in policy.defaults():  # pods that name no class may get it now
                self._enqueue_all_pods()

    # ------------------------------------------------------------------ lifecycle

    @property
    def ready(self) -> bool:
        """Caches synced and every informer healthy, and either the first full reconcile done or this
        replica a follower (followers are ready to take over; they do not write)."""
        return ((self.ready_event.is_set() or (self.following and self.caches_synced.is_set()))
                and all(i.last_error is None for i in self.informers)
                and not any(c.forbidden for c in self.controllers))

    def readiness_detail(self) -> list[str]:
        """Why the syncer is not ready (empty when ready)."""
        why = [f"cache {i.name} not synced" + (f": {i.last_error}" if i.last_error else "")
               for i in self.informers if not i.synced.is_set()]
        why += [f"informer {i.name} failing: {i.last_error}" for i in self.informers
                if i.synced.is_set() and i.last_error is not None]
        why += [f"forbidden to {verb} {resource} on the {cluster} cluster: {msg}" for c in self.controllers
                for (cluster, verb, resource), msg in c.forbidden.items()]
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
        """True while every loop is running."""
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

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
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(elector.release(), 2.0)

    async def _finish(self) -> None:
        """Informers and the election stop at once (a watch may be silent for a minute); controllers get
        up to 6 s to finish in-flight reconciles, then are cancelled (at once after a lost lease)."""
        cancel_now = [t for t in self._tasks if t.get_name().startswith(("informer ", "leader election"))]
        if self.lost_leadership:  # stop writing at once: in-flight reconciles are abandoned
            cancel_now = list(self._tasks)
        for t in cancel_now:
            t.cancel()
        others = [t for t in self._tasks if t not in cancel_now]
        _, pending = await asyncio.wait(others, timeout=6.0) if others else (set(), set())
        for t in pending:
            t.cancel()
        for t in [*cancel_now, *pending]:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        for t in self._tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                log.error("%s ended with an error", t.get_name(), exc_info=t.exception())
