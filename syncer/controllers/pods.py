"""The Pod reconciler, virtual -> host, behind the RuntimeClass gate (behaviour.md section 3).

The decision table is `podplan.plan` (pure, tested row by row); this module carries out the action it
returns for a virtual pod key `namespace/name`, comparing the virtual pod with the host pod it owns.

References to ConfigMaps, Secrets and PVCs are rewritten to host names (podtranslate/references.py);
the host pod is created once every required referenced object exists on the host (vcluster syncs
them; a missing ConfigMap/Secret gets the `vcluster.loft.sh/force-sync` annotation unless vcluster's
`all` key is set). After 10 s of waiting a `SyncWarning` says what for (behaviour.md section 3.1). A host
object whose `vcluster.loft.sh/object-name`/`object-namespace` do not name the referenced virtual object
(another namespace's copy under a colliding name) counts as missing, and a `SyncWarning` names the conflict
at once (references.not_the_copy).
Service-account token projections get tokens requested from the virtual API server (TokenRequest, the
reconciler's only I/O besides the writes), in a pod annotation or a host Secret owned by the host pod.

A refusal is a Warning `SyncWarning` event on the virtual pod (repeats raise its count); nothing is
written to the host. A host-side rejection (403/422/400, e.g. RuntimeClass admission) is a Warning
`SyncError` event with the host's message and a retry with backoff. What the host pod does not carry of the
virtual pod (an affinity term's ignored namespaceSelector, pod-level resources the host dropped) is a
`SyncWarning` once per host pod created. A host pod that does not carry this vcluster's managed-by label and
object annotations is never touched.

The trust boundary (podtranslate/trust.py, docs/security.md): `reconcile` reads a virtual pod only through
`trust.tenant_pod`, which drops every label and annotation the syncer or vcluster give a meaning to, so that what
the syncer reads back from the host pod later (ownership, the class the pod named, merge bases, token state) is
only what it wrote itself.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.config.policy import Policy
from syncer.controllers import gate, podplan, podsecurity, podupdate, policy, translate
from syncer.controllers.podtokens import ServiceAccountTokens, TokenProjectionsTooLarge, TokenSecretTaken
from syncer.controllers.podtranslate import affinity, scheduling, tokens, trust
from syncer.controllers.podtranslate.options import PodOptions
from syncer.controllers.podtranslate.references import (
    CONFIGMAP,
    OBJECT_NAME,
    OBJECT_NAMESPACE,
    RESOURCECLAIM,
    RESOURCECLAIMTEMPLATE,
    SECRET,
    Dependency,
    not_the_copy,
)
from syncer.controllers.refusal import Refusal, Why
from syncer.controllers.sources import (
    DEPENDENCY_RESOURCES,
    FORCE_SYNC,
    FORCE_SYNC_RESOURCES,
    SERVICE,
    SERVICEACCOUNT,
    Sources,
)
from syncer.kube import jsonutil
from syncer.kube.builder import ControllerBuilder, InformerFactory, OwnWrites
from syncer.kube.cache import Cached, Packed, Store, field_equal, object_key, rest_equal, split_key, sub_field
from syncer.kube.cache import field as cached_field
from syncer.kube.cache import resource_version as _rv
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import Clock, RealClock
from syncer.kube.controller import ReconcileError, rbac_denial
from syncer.kube.events import EventRecorder
from syncer.kube.resources import CONFIGMAPS, PODS, SECRETS, SERVICEACCOUNTS
from syncer.metrics import Metrics

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ACTION = "SyncPod"


WAIT_WARNING = 10.0  # seconds a pod waits for its host objects before a SyncWarning says for what
WAIT_RECHECK = 30.0  # seconds between checks after that (a host object appearing wakes the pod at once)
UNKNOWN_CLASS = "<unknown>"  # the refusal metric's label for a class the host does not have (or is not read)
NODE_RECHECK = 15.0  # seconds before a pod naming a node the virtual cluster lacks is looked at again (vcluster's)


DNS_SERVICE = ("kube-system", "kube-dns")  # the virtual cluster's DNS Service, synced to the host by vcluster
NAMESPACE_INDEX = "namespace"
RC_INDEX = "runtimeClassName"
PC_INDEX = "priorityClassName"
NODE_INDEX = "nodeName"


def _waiting_for(d: Dependency) -> str:
    """What a pod waits for, in the words of the `waiting for` SyncWarning (behaviour.md section 3.1)."""
    if d.kind != SERVICE:
        return f'{d.kind} "{d.name}" to be synced to the host as "{d.host_name}"'
    if d.field == "spec.dnsPolicy":
        return f'the DNS service "{d.name}" to be synced to the host as "{d.host_name}"'
    return f'the vcluster service "{d.name}" (the virtual API server) to exist on the host'


def placement_kept_message(pod: str, kept: list[str]) -> str:
    """The SyncWarning of a gated pod whose narrowed placement the host pod cannot take whole
    (podupdate.gated_placement): `did not sync the placement of pod "<pod>" to the host: the host allows a gated
    pod's placement only additions, so it keeps back <what>[; <what>...]`."""
    return (f'did not sync the placement of pod "{pod}" to the host: the host allows a gated pod\'s placement only '
            f'additions, so it keeps back {"; ".join(kept)}')


def _namespace_index(obj: Cached) -> list[str]:
    ns = sub_field(obj, "metadata", "namespace")
    return [ns] if isinstance(ns, str) else []


def _rc_index(pod: Cached) -> list[str]:
    rcn = sub_field(pod, "spec", "runtimeClassName")
    return [rcn] if isinstance(rcn, str) and rcn else []


def _pc_index(pod: Cached) -> list[str]:
    pcn = sub_field(pod, "spec", "priorityClassName")
    return [pcn] if isinstance(pcn, str) and pcn else []


def _node_index(pod: Cached) -> list[str]:
    node = sub_field(pod, "spec", "nodeName")
    return [node] if isinstance(node, str) and node else []


def _host_rc_index(hpod: Cached) -> list[str]:
    """Host pods by the runtime class they were synced with, the virtual pod's own or the policy's default
    (`podplan.synced_class`: finds orphans whose virtual pod is gone, and pods of a default the policy no longer
    gives)."""
    rcn = podplan.synced_class({"metadata": cached_field(hpod, "metadata")})
    return [rcn] if rcn else []


def _virtual_key_of_host_pod(hpod: Cached) -> list[str]:
    key = translate.virtual_key_of_host_pod({"metadata": cached_field(hpod, "metadata")})
    return [key] if key is not None else []


def _labels_changed(old: Cached, new: Cached) -> bool:
    """A namespace whose labels changed."""
    return bool(cached_field(old, "metadata").get("labels") != cached_field(new, "metadata").get("labels"))


def _gate_conditions(pod: Cached) -> list[Any]:
    """The conditions of a virtual pod's readiness-gate types (a controller in the virtual cluster writes them to
    the status; they go to the host pod, where the kubelet reads them)."""
    types = translate.gate_types(cached_field(pod, "spec") or {})
    if not types:
        return []
    conditions = (cached_field(pod, "status") or {}).get("conditions")
    return [c for c in conditions or [] if isinstance(c, dict) and c.get("type") in types]


def _pod_changed(old: Cached, new: Cached) -> bool:
    """A virtual pod change the pod reconciler must look at: not a status write, unless it changes a
    readiness-gate condition."""
    # metadata besides identity is packed: labels, annotations (and owners, finalizers) compare encoded
    return (not field_equal(old, new, "spec") or not rest_equal(old, new, "metadata")
            or any(sub_field(old, "metadata", k) != sub_field(new, "metadata", k)
                   for k in ("deletionTimestamp", "uid"))
            or (not field_equal(old, new, "status") and _gate_conditions(old) != _gate_conditions(new)))


@dataclass
class _Waiting:
    """A virtual pod (of this uid) waiting since `since` (monotonic seconds) for host objects (`missing`; none
    when another pod holds its host name), and the SyncWarning or SyncError last recorded for it."""

    uid: str
    since: float
    missing: set[tuple[str, str]] = field(default_factory=set)  # (kind, host name)
    warned: str = ""


class HostRejected(ReconcileError):
    """The host API server refused the pod (reported as a SyncError event; retried with backoff)."""


class CacheBehind(ReconcileError):
    """A pod write planned from a cache that is behind its API server no longer applies to the pod (a `test` of a
    value written since, a key removed since: kube-apiserver's generic 422 of `applyJSPatch`); logged at info where
    it is found, retried with backoff, by when the watch has brought the change (like a 409 Conflict)."""

    quiet = True


class BindingFailed(ReconcileError):
    """Binding a virtual pod to its host pod's node failed (logged once per cause; retried quietly)."""

    quiet = True


class PodReconciler:
    """Reconciles one virtual pod with its host pod, reading the shared caches it declares (sources.py).

    Args:
        config: the validated configuration (gate, forced runtimeClassName, token mode).
        sources: the vcluster name and host namespace, and the views of both clusters read here.
        host, virtual: clients for the two clusters.
        factory: the shared informers; the caches below come from it, and `watches` declares what wakes a pod.
        recorder: writes events on virtual pods.
        metrics: pods synced/refused counters.
        policy: the runtime policy (behaviour.md section 6), None for none. It judges pods that are not yet on
            the host: their class (or the namespace's default), the gate, and the handler list. With a policy
            the virtual namespaces are watched (its selector entries read their labels).
        clock: how long a pod has waited for its host objects is measured on it (default the real one), and
            token renewals are timed on it.
        token_lifetime: seconds the pods' service-account tokens live before they are renewed (0: vcluster's ten
            years, never renewed).

    The caches: virtual pods (indexed by runtime class and namespace, and by priority class and node name when
    those gates are on); virtual namespaces (metadata); host PriorityClasses and virtual nodes (metadata) only with
    their gates; this vcluster's host
    pods (by the class their virtual pod named); host RuntimeClasses (the gate; an empty cache when the
    feature is disabled, which never reads it); the host ConfigMaps, Secrets, PVCs and Services (and, with
    `sync.toHost.serviceAccounts.enabled`, ServiceAccounts) a host pod needs (`host_objects`, by kind: it is
    created once they exist and are the copies of what it references); the virtual ConfigMaps and Secrets it
    may mark for vcluster (`virtual_objects`); the virtual Services (service links).
    """

    def __init__(self, config: SyncerConfig, sources: Sources, *, host: KubeClient, virtual: KubeClient,
                 factory: InformerFactory, recorder: EventRecorder, metrics: Metrics, policy: Policy | None = None,
                 clock: Clock | None = None, token_lifetime: int = tokens.DEFAULT_LIFETIME) -> None:
        self.config = config
        self.sources = sources
        self.vcluster_name = sources.vcluster_name
        self.host_namespace = sources.host_namespace
        self.clock = clock or RealClock()
        self.policy = policy
        self.host = host
        self.virtual = virtual
        self.recorder = recorder
        self.metrics = metrics
        self.virtual_pods = factory.store(sources.virtual_pods)
        factory.index(sources.virtual_pods, RC_INDEX, _rc_index)
        self.host_pods = factory.store(sources.host_pods)
        factory.index(sources.host_pods, RC_INDEX, _host_rc_index)
        self.host_rcs = factory.store(sources.host_rcs) if config.enabled else Store()
        self.host_objects = {kind: factory.store(sources.host_objects(kind)) for kind in DEPENDENCY_RESOURCES}
        self.virtual_objects = {kind: factory.store(sources.virtual_objects(kind)) for kind in FORCE_SYNC_RESOURCES}
        self.virtual_services = factory.store(sources.virtual_services)
        factory.index(sources.virtual_services, NAMESPACE_INDEX, _namespace_index)
        self.namespaces = factory.store(sources.virtual_namespaces)
        factory.index(sources.virtual_pods, NAMESPACE_INDEX, _namespace_index)
        self.options = PodOptions.from_config(config)
        if self.options.service_accounts_to_host:  # pods run as the host copy of their own service account
            self.host_objects[SERVICEACCOUNT] = factory.store(sources.host_objects(SERVICEACCOUNT))
        for kind, on in ((RESOURCECLAIM, self.options.resource_claims),
                         (RESOURCECLAIMTEMPLATE, self.options.resource_claim_templates)):
            if on:  # the host copies of the claims and templates pods name
                self.host_objects[kind] = factory.store(sources.host_objects(kind))
        self.virtual_nodes: Store | None = None  # a pod's nodeName must name one, with a nodes selector
        if self.options.node_selector:
            self.virtual_nodes = factory.store(sources.virtual_nodes)
            factory.index(sources.virtual_pods, NODE_INDEX, _node_index)
        self.host_pcs = Store()  # the priority-class gate's view, read only when it is on
        if config.raw.sync.fromHost.priorityClasses.enabled and not config.priority_selector.empty:
            self.host_pcs = factory.store(sources.host_priority_classes)
            factory.index(sources.virtual_pods, PC_INDEX, _pc_index)
        self.tokens = ServiceAccountTokens(virtual, host, host_namespace=self.host_namespace,
                                           vcluster_name=self.vcluster_name, use_secrets=config.use_secrets_for_tokens,
                                           host_secrets=self.host_objects[SECRET], lifetime=token_lifetime,
                                           clock=self.clock, cluster_domain=self.options.cluster_domain)
        self._skipped: dict[str, str] = {}  # malformed virtual pods already logged, by resourceVersion
        # pods whose host pod this process just created: key -> the resourceVersions of the virtual pod, the host
        # pod and the virtual namespace (whose labels the host pod carries) then. A reconcile that finds all three
        # unchanged skips the comparison (it was made by the create); popped by the next reconcile of the key. The
        # create's own watch event enqueues nothing (own_writes), unless it arrived before the create returned.
        self._created: dict[str, tuple[str, str, str]] = {}
        # pods whose host pod this process just updated: key -> the host pod's resourceVersion the update was planned
        # from. While the cache still holds that version, the update's own watch event (its echo) has not arrived,
        # and a host write planned from the cache would repeat or undo it (its `test`s fail: a 422 and a read); the
        # update waits for the echo, which reconciles the key. Popped by the next reconcile of the key.
        self._updated: dict[str, str] = {}
        # synced pods whose references a host object's event asks to check again (`_readers_of_another_copy`), even
        # when the reconcile finds both pods unchanged; popped by the next reconcile of the key
        self._recheck: set[str] = set()
        # pods refused because the host dropped the `hostUsers: false` they need (seen on a created host pod, which
        # was deleted): key -> uid; the field cannot change, so such a pod is not created again (popped when gone)
        self._userns_refused: dict[str, str] = {}
        self.own_writes = OwnWrites()  # the host pods this process created, by key and resourceVersion
        self._binding_failures: set[tuple[str, str, str, int]] = set()  # causes already logged
        self._waiting: dict[str, _Waiting] = {}  # virtual pods waiting for host objects or a taken host name, by key
        # the events of a host pod's create whose write was refused, by key: (the virtual pod's uid, the events)
        self._unrecorded: dict[str, tuple[str, list[tuple[str, str, str]]]] = {}
        # token Secrets whose owner patch failed after their host pod was created: key -> the host pod's uid; the
        # key's next reconcile makes the pod the owner (else a Secret outlives both pods when the syncer is down
        # as they go: nothing else deletes it)
        self._unowned: dict[str, str] = {}
        # orphaned pods told so (the Orphaned event, the refusal counted): key -> (the virtual pod's resourceVersion
        # then, the reason)
        self._orphans: dict[str, tuple[str, str]] = {}
        # pods refused for naming no class, with (their resourceVersion, the SyncWarning): the warning lists the
        # usable host classes, which a host class's change may change (`_pods_of_runtime_class`); told again only
        # when it or the pod changed, not on each host class's change
        self._no_class: dict[str, tuple[str, str]] = {}
        # gated pods whose narrowed placement the host pod cannot take whole, with the SyncWarning last written:
        # told again when what is kept back changes, not on each reconcile (a status copy changes the virtual pod's
        # resourceVersion, so it cannot tell a tenant's change)
        self._placement_told: dict[str, str] = {}
        # virtual ConfigMaps/Secrets this process annotated with force-sync, by kind/namespace/name: the
        # resourceVersion the cache had then, until the cache shows the annotation (its echo)
        self._force_synced: dict[str, str] = {}
        self._unserved: set[str] = set()  # pod subresources the host API server answered 404 for

    # ------------------------------------------------------------------ what wakes a pod (the watches)

    def watches(self, b: ControllerBuilder) -> ControllerBuilder:
        """Declare the pod controller's watches (controller-runtime's For/Owns/Watches):

        - for virtual pods (a change of spec, metadata or identity; not a status write alone);
        - owns this vcluster's host pods (mapped to their virtual pod);
        - watches host RuntimeClasses whose gate view changed (exists, being deleted, matches): the pods that
          name them, the host pods synced with them, the pods refused for naming no class (their SyncWarning lists
          the usable classes), and every pod when it is a policy default or (with a policy) the forced class;
        - with the priority-class gate, watches host PriorityClasses: the pods that name them;
        - with a nodes selector, watches virtual nodes: the pods bound to them;
        - watches the host objects pods wait for (created, changed, deleted: a copy's annotations decide whether
          it may be used), and the virtual ConfigMaps/Secrets they mark: the waiting pods;
        - watches virtual namespaces whose labels changed: their pods (the labels go to host pods as ns-labels,
          and choose a namespace's runtime policy entry).
        A re-list of pods or RuntimeClasses enqueues every pod: a watch gap may have hidden any change.
        """
        s = self.sources
        b.for_(s.virtual_pods, predicate=_pod_changed, relist=self.all_pod_keys)
        b.owns(s.host_pods, _virtual_key_of_host_pod, relist=self.all_pod_keys, own_writes=self.own_writes)
        if self.config.enabled:
            b.watches(s.host_rcs, self._pods_of_runtime_class, predicate=self._gate_view_changed,
                      relist=self.all_pod_keys)
        if self.virtual_nodes is not None:
            b.watches(s.virtual_nodes, lambda node: self.virtual_pods.keys_by_index(NODE_INDEX, object_key(node)),
                      on_delete=False)
        if self.config.raw.sync.fromHost.priorityClasses.enabled and not self.config.priority_selector.empty:
            b.watches(s.host_priority_classes,
                      lambda pc: self.virtual_pods.keys_by_index(PC_INDEX, object_key(pc)))
        for kind in self.host_objects:  # a deletion too: a conflicting copy removed turns into a plain wait
            b.watches(s.host_objects(kind), functools.partial(self._waiting_for_host_object, kind))
        for kind in FORCE_SYNC_RESOURCES:
            b.watches(s.virtual_objects(kind), functools.partial(self._waiting_for_virtual_object, kind),
                      on_delete=False)
        b.watches(s.virtual_namespaces, lambda ns: self.virtual_pods.keys_by_index(NAMESPACE_INDEX, object_key(ns)),
                  predicate=_labels_changed, on_delete=False)
        return b

    def all_pod_keys(self) -> list[str]:
        """Every virtual pod's key, and the keys of the virtual pods of every host pod (orphans included)."""
        keys = dict.fromkeys(self.virtual_pods.list_keys())
        for hpod in self.host_pods.values():
            keys.update(dict.fromkeys(_virtual_key_of_host_pod(hpod)))
        return list(keys)

    def _gate_view(self, rc: Cached | None) -> tuple[bool, bool, bool]:
        if rc is None:
            return (False, False, False)
        return (True, bool(sub_field(rc, "metadata", "deletionTimestamp")), gate.runtime_class_matches(self.config, rc))

    def _gate_view_changed(self, old: Cached, new: Cached) -> bool:
        return self._gate_view(old) != self._gate_view(new)

    def _pods_of_runtime_class(self, rc: Cached) -> list[str]:
        name = object_key(rc)
        if self.policy is not None and (name in self.policy.defaults() or name == self.config.forced_runtime_class):
            return self.all_pod_keys()  # pods that name no class may get it; every pod runs with a forced class
        keys = dict.fromkeys(self.virtual_pods.keys_by_index(RC_INDEX, name))
        keys.update(dict.fromkeys(sorted(self._no_class)))  # their warning lists the usable classes: told again
        for hpod in self.host_pods.by_index(RC_INDEX, name):  # incl. orphans whose virtual pod is gone
            keys.update(dict.fromkeys(_virtual_key_of_host_pod(hpod)))
        return list(keys)

    def _waiting_for_host_object(self, kind: str, obj: Cached) -> list[str]:
        """A host ConfigMap/Secret/PVC/Service/ServiceAccount appeared, changed or went: the pods waiting for it,
        and the synced pods that may read it as another object than it now is (`_readers_of_another_copy`)."""
        waiting = self.pods_waiting_for(kind, (obj.get("metadata") or {}).get("name", ""))
        return waiting + [k for k in self._readers_of_another_copy(obj) if k not in waiting]

    def _readers_of_another_copy(self, obj: Cached) -> list[str]:
        """Keys of the virtual pods that may name host object `obj` meaning another virtual object than the one it
        is the copy of: those of the namespaces whose object would have the same host name (`<name>-x-<namespace>`,
        split at another `-x-`: Secret `a` of `b-x-c` and `a-x-b` of `c`). The name is taken over after the pod
        was synced, or while its create is on its way (checked before): an optional reference to an object absent
        then, or the pod's own object deleted and another namespace's copy synced under its freed name. Their next
        reconcile checks their references again (`_update`, even for a pod as it was created). [] for an object
        whose annotations name no virtual object."""
        ann = sub_field(obj, "metadata", "annotations")
        name, ns = (ann.get(OBJECT_NAME), ann.get(OBJECT_NAMESPACE)) if isinstance(ann, dict) else (None, None)
        if not isinstance(name, str) or not isinstance(ns, str):
            return []
        joined, keys = f"{name}-x-{ns}", []
        i = joined.find("-x-")
        while i != -1:
            other = joined[i + 3:]
            if other != ns and joined[:i]:  # those not on the host yet too: one may be on its way there
                # only the pods whose spec names it (its JSON string in the cached spec's bytes, not decoded): an
                # update of a copy a tenant makes, its namespace chosen to split so, then wakes no other pods
                needle = jsonutil.dumps(joined[:i])
                for k in self.virtual_pods.keys_by_index(NAMESPACE_INDEX, other):
                    cached = self.virtual_pods.get(k)
                    spec = cached.rest("spec") if isinstance(cached, Packed) else None
                    if spec is None or needle in spec:
                        keys.append(k)
            i = joined.find("-x-", i + 1)
        self._recheck.update(keys)
        return keys

    def _waiting_for_virtual_object(self, kind: str, obj: Cached) -> list[str]:
        """A virtual ConfigMap/Secret appeared or changed: the pods waiting for its host copy."""
        meta = obj.get("metadata") or {}
        return self.pods_waiting_for(kind, translate.host_pod_name(meta.get("name", ""), meta.get("namespace", ""),
                                                                   self.vcluster_name))

    def host_key(self, namespace: str, name: str) -> str:
        """Cache key of the host pod for virtual pod `namespace/name`."""
        return f"{self.host_namespace}/{translate.host_pod_name(name, namespace, self.vcluster_name)}"

    def owns(self, hpod: Obj, namespace: str, name: str) -> bool:
        """True when `hpod` was synced by this vcluster from virtual pod `namespace/name`."""
        return podplan.owns(hpod, self.vcluster_name, namespace, name)

    def decide(self, pod_name: str, rc_name: str) -> gate.GateDecision:
        """The gate decision for a pod naming `rc_name`, against the host RuntimeClass cache."""
        return gate.evaluate(self.config, pod_name, rc_name, self.host_rcs.get(rc_name) if rc_name else None)

    async def reconcile(self, key: str) -> float | None:
        """Bring the host pod of virtual pod `key` (and the virtual pod's status) to the desired state: the
        action `podplan.plan` chooses. Returns seconds after which to look again (a pod waiting for host
        objects), or None. Raises ApiError or HostRejected to be retried with backoff."""
        namespace, name = split_key(key)
        if namespace is None:
            log.warning("pod key %r has no namespace; ignored", key)
            return None
        self.own_writes.reconciling(key)  # this reconcile may decide before the echo of an earlier create
        created = self._created.pop(key, None)
        updated = self._updated.pop(key, None)
        recheck = key in self._recheck
        self._recheck.discard(key)
        raw = self.virtual_pods.full(key)
        vpod = trust.tenant_pod(raw) if raw is not None else None  # the trust boundary: all below reads only this
        hpod = self.host_pods.full(self.host_key(namespace, name))
        if (vpod is not None and hpod is None and not vpod["metadata"].get("deletionTimestamp")
                and self.namespaces.get(namespace) is None):
            # The namespace's watch event has not come yet (another watch than the pod's): its labels choose the
            # runtime policy's entry and go to the host pod as ns-labels, so no host pod is created without them.
            # Its ADDED event enqueues the namespace's pods. vcluster's translator fails the reconcile instead
            # (translateLabels reads the namespace from the virtual API server). A pod with a host pod, or being
            # deleted, goes on: a namespace removed under its pods (force-finalized) must not strand them.
            log.debug("pod %s: its namespace is not in the cache yet; its watch event reconciles the pod", key)
            return None
        action = podplan.plan(vpod, hpod, vcluster_name=self.vcluster_name, namespace=namespace, name=name,
                              judge=lambda rc: self.decide(name, rc), admit=lambda: self._admit(vpod or {}))
        if not isinstance(action, podplan.Skip):
            self._skipped.pop(key, None)
        if not isinstance(action, podplan.ReportOrphaned):
            self._orphans.pop(key, None)
        if not (isinstance(action, podplan.Refuse) and action.resolution.refusal is not None
                and action.resolution.refusal.why is Why.NO_CLASS):
            self._no_class.pop(key, None)
        if vpod is None:
            self._waiting.pop(key, None)
            self._userns_refused.pop(key, None)
            self._unowned.pop(key, None)
            self._placement_told.pop(key, None)
            self.tokens.failing.pop(key, None)
        unrecorded = self._unrecorded.pop(key, None)
        if unrecorded is not None and vpod is not None and unrecorded[0] == vpod["metadata"].get("uid", ""):
            await self._record_all(vpod, unrecorded[1])  # the events of its host pod's create, first
        match action:
            case podplan.Skip(problem):
                rv = str(((vpod or {}).get("metadata") or {}).get("resourceVersion") or "")
                if self._skipped.get(key) != rv:
                    self._skipped[key] = rv
                    log.warning("skipped virtual pod %s: %s", key, problem)
            case podplan.Forget():
                await self.tokens.forget(namespace, name)
            case podplan.DeleteHost(why, grace):
                assert hpod is not None
                await self._delete_host(hpod, grace)
                log.info("deleting host pod %s/%s (grace %s) because %s: virtual pod %s", self.host_namespace,
                         hpod["metadata"]["name"], "its own" if grace is None else f"{grace}s", why, key)
            case podplan.LeaveOrphan(refusal):
                assert hpod is not None
                log.warning("virtual pod %s is gone; its host pod %s/%s is orphaned (%s) and is left in place: "
                            "delete it in the host cluster when it is no longer needed", key, self.host_namespace,
                            hpod["metadata"]["name"], refusal.reason)
            case podplan.RefuseStale():
                assert vpod is not None and hpod is not None
                msg = (f'did not sync pod "{name}" to host because host pod "{self.host_namespace}/'
                       f'{hpod["metadata"]["name"]}" still belongs to an earlier, orphaned pod of the same name; '
                       "delete it in the host cluster")
                await self._refuse(vpod, (vpod.get("spec") or {}).get("runtimeClassName") or "", msg)
            case podplan.FinishVirtualDelete(why):
                assert vpod is not None
                await self._finish_virtual_delete(vpod, why)
            case podplan.ReportOrphaned(refusal):
                assert vpod is not None and hpod is not None
                # told again when the virtual pod changes (a tenant's update, which is not synced: the count says
                # so) or the cause does, not on the host pod's changes (its status, the echo of a token renewal)
                reported = (_rv(vpod), refusal.reason)
                if self._orphans.get(key) != reported:
                    if not (vpod.get("metadata") or {}).get("deletionTimestamp"):
                        self.metrics.pods_refused.labels(refusal.runtime_class).inc()
                    await self._orphaned(vpod, hpod, refusal)
                    self._orphans[key] = reported
                # it runs on, so its tokens are renewed as the kubelet renews them for a running pod (they are
                # bound to the virtual pod, which exists); nothing else of it is written
                return await self._renew_tokens(vpod, hpod)
            case podplan.CopyStatus():
                assert vpod is not None and hpod is not None
                await self._copy_status(vpod, hpod)
            case podplan.Refuse(resolution):
                assert vpod is not None and resolution.refusal is not None
                told = (_rv(vpod), resolution.message)
                if resolution.refusal.why is Why.NO_CLASS and self._no_class.get(key) == told:
                    return None
                if self.policy is not None and resolution.refusal.metric != "gate":
                    self.metrics.pods_refused_by_policy.labels(resolution.refusal.metric).inc()
                await self._refuse(vpod, resolution.runtime_class, resolution.message)
                if resolution.refusal.why is Why.NO_CLASS:  # told once written: a failed write is retried
                    self._no_class[key] = told
            case podplan.Create(resolution):
                assert vpod is not None
                return await self._create(vpod, resolution)
            case podplan.Update(decision):
                assert vpod is not None and hpod is not None
                if updated is not None and updated == _rv(hpod):  # the echo of this process's last update to come
                    self._updated[key] = updated
                    log.debug("pod %s: the cache has not seen the last update of its host pod yet; its echo "
                              "reconciles the pod", key)
                    return await self._update(vpod, hpod, decision, unchanged=True, recheck=recheck)
                return await self._update(vpod, hpod, decision, unchanged=created == (
                    _rv(vpod), _rv(hpod), _rv(self.namespaces.get(namespace))), recheck=recheck)
        return None

    # ------------------------------------------------------------------ the cases

    def _admit(self, vpod: Obj) -> policy.Resolution:
        """The decision for a pod not yet on the host: the priority-class gate's refusal, else the runtime policy's
        resolution (which includes the gate), or without a policy the gate's decision for the class the pod
        names."""
        meta, named = vpod["metadata"], (vpod.get("spec") or {}).get("runtimeClassName") or ""
        pc_name = (vpod.get("spec") or {}).get("priorityClassName") or ""
        refused = gate.evaluate_priority(self.config, pc_name, self.host_pcs.get(pc_name) if pc_name else None)
        if refused is not None:  # vcluster checks the priority class first
            return policy.Resolution(False, named, False, refused, meta["name"])
        if self.policy is None:
            d = self.decide(meta["name"], named)
            return policy.Resolution(d.allowed, named, False, d.refusal, meta["name"])
        ns = meta["namespace"]
        effective = self.policy.effective(ns, self._namespace_labels(ns))
        return policy.resolve(self.config, effective, meta["name"], named, self.host_rcs.get,
                              lambda: policy.usable_classes(self.config, effective, (
                                  self.host_rcs.full(k) or {} for k in self.host_rcs.list_keys())))

    async def _create(self, vpod: Obj, resolution: policy.Resolution) -> float | None:
        """Translate, wait for the host objects the pod needs, request its tokens, create the host pod."""
        if self.options.virtual_scheduler and not (vpod.get("spec") or {}).get("nodeName"):
            return None  # vcluster's SyncToHost: the virtual scheduler binds it first (its binding wakes the pod)
        if await self._violates_pod_security(vpod, resolution.runtime_class):
            return None
        credential = translate.host_credential_field(vpod.get("spec") or {})
        if credential is not None:  # the spec's volumes cannot change: the pod stays refused
            await self._refuse(vpod, resolution.runtime_class, (
                f'did not sync pod "{vpod["metadata"]["name"]}" to host because {credential} would have the host '
                "issue it a certificate of the host pod; pod certificates are not synced: remove the source"))
            return None
        node = (vpod.get("spec") or {}).get("nodeName")
        if self.virtual_nodes is not None and node and self.virtual_nodes.get(node) is None:
            # vcluster's SyncToHost with sync.fromHost.nodes.selector: a pod placed by hand must name a node the
            # virtual cluster has (one the selector synced), or it would escape the selector
            await self.recorder.record(PODS, vpod, "Warning", "SyncWarning",
                                       f"Given nodeName {node} does not exist in virtual cluster", ACTION)
            return NODE_RECHECK
        default = resolution.runtime_class if resolution.defaulted else ""
        try:
            desired, deps = self._translate(vpod, default)
        except translate.ServiceEnvironmentTooLarge as e:  # not retried: a change of the pod looks again
            await self._refuse(vpod, resolution.runtime_class, str(e))
            return None
        namespace_version = _rv(self.namespaces.get(vpod["metadata"]["namespace"]))  # the labels translated
        missing = self._missing(vpod, deps)
        if missing:
            return await self._wait(vpod, missing)
        if self._userns_refused.get(object_key(vpod)) == vpod["metadata"].get("uid"):
            return None
        drops = await self._host_drops_user_namespace(vpod, desired, resolution.runtime_class)
        if drops:
            return None
        try:
            secret = await self.tokens.apply(vpod, desired)
        except TokenProjectionsTooLarge as e:  # no token requested; its volumes cannot change: a change of its
            await self._refuse(vpod, resolution.runtime_class, str(e))  # annotations (or a resync) looks again
            return None
        except TokenSecretTaken as e:  # retried with backoff; the tenant is told once per cause
            w = self._waiting_since(vpod, self.clock.now())
            message = (f'did not sync pod "{vpod["metadata"]["name"]}" to host because {e}: rename the pod, or the '
                       "virtual Secret or pod that holds the name")
            if w.warned != message:
                await self.recorder.record(PODS, vpod, "Warning", "SyncError", message, ACTION)
                w.warned = message
            raise
        except ApiError as e:  # its service account deleted since the pod was created, say: tell the tenant, once
            if e.resource == f"{SERVICEACCOUNTS.plural}/token" and (
                    e.status in (400, 422) or (e.not_found and f'{SERVICEACCOUNTS.plural} "' in e.message)):
                w = self._waiting_since(vpod, self.clock.now())
                message = (f'did not sync pod "{vpod["metadata"]["name"]}" to host yet: the virtual API server '
                           f"refused a token for its service account: {e.message}")
                if w.warned != message:
                    await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", message, ACTION)
                    w.warned = message
            raise
        # A pod debugged before its host pod is created (kept out by the gate until then, or its unstarted host pod
        # gone): the API server takes ephemeral containers through pods/ephemeralcontainers only (ValidatePodCreate:
        # "cannot be set on create"), so the create leaves them out and the reconcile of its echo adds them. vcluster
        # sends them in the create, which the host refuses for as long as the pod has them.
        later = bool((desired.get("spec") or {}).pop("ephemeralContainers", None))
        created = await self._create_host(vpod, desired, resolution.runtime_class,
                                          settled=None if later else namespace_version)
        if created is None:  # another pod holds the host name: look again, it may go (vcluster retries with backoff)
            return WAIT_RECHECK
        if drops is None and (created.get("spec") or {}).get("hostUsers") is not False:  # no dry run: seen now
            self._userns_refused[object_key(vpod)] = vpod["metadata"].get("uid", "")
            await self._delete_host(created, 0)
            await self._refuse_user_namespace(vpod, resolution.runtime_class, self._needs_user_namespace(vpod))
            return None
        self._waiting.pop(object_key(vpod), None)
        self.tokens.failing.pop(object_key(vpod), None)  # an earlier pod's of that name, if its key went unseen
        own_error: ApiError | None = None
        if secret is not None:  # a failed owner patch holds back neither the events nor the first renewal's wait
            self._unowned[object_key(vpod)] = created["metadata"].get("uid", "")
            own_error = await self._own_token_secret(vpod, created)
        events = self._warn_translated(vpod, desired, created)
        if default:
            self.metrics.pods_defaulted.labels(default).inc()
            events.append(("Normal", policy.DEFAULTED_REASON, policy.defaulted_message(vpod["metadata"]["name"],
                                                                                       default)))
        await self._record_all(vpod, events)
        if own_error is not None:
            raise own_error  # retried with backoff: the retry finds the pod created and makes it the owner
        # What the reconcile of the created pod's echo would return (it is not enqueued, see own_writes): the
        # pair is as created, so only the first token renewal is due, after RENEW_AFTER of the lifetime.
        return await self.tokens.renew_if_due(vpod, created)

    async def _record_all(self, vpod: Obj, events: list[tuple[str, str, str]]) -> None:
        """Record `events` ((type, reason, message) each) on virtual pod `vpod`, the events of a host pod just
        created. What a refused write leaves unrecorded is kept, and recorded first by the key's next reconcile
        (which finds the host pod created and would not make them again).

        Raises:
            ApiError: a write failed (the reconcile is retried with backoff).
        """
        for i, (type_, reason, message) in enumerate(events):
            try:
                await self.recorder.record(PODS, vpod, type_, reason, message, ACTION)
            except ApiError:
                self._unrecorded[object_key(vpod)] = (vpod["metadata"].get("uid", ""), events[i:])
                raise

    def _warn_translated(self, vpod: Obj, desired: Obj, created: Obj) -> list[tuple[str, str, str]]:
        """Once per host pod created, a `SyncWarning` (returned as (type, reason, message), to record) on the
        virtual pod for what of it the host pod does not have:
        - an affinity term's `namespaceSelector` ignored (it has `namespaces` too), in vcluster's words
          (`translatePodAffinityTerm`; vcluster warns on each translation, before the create);
        - pod-level `spec.resources` the host API server dropped: its PodLevelResources feature gate is off (the
          default before Kubernetes 1.34; `dropDisabledPodLevelResources` drops the field silently). vcluster drops
          it itself for a host older than 1.34 and says nothing."""
        name = vpod["metadata"]["name"]
        out: list[tuple[str, str, str]] = []
        if not self.options.virtual_scheduler and affinity.ignored_namespace_selectors(vpod.get("spec") or {}):
            log.info("the namespaceSelector of pod %s/%s's affinity terms that also name namespaces is ignored",
                     vpod["metadata"]["namespace"], name)
            out.append(("Warning", "SyncWarning", affinity.IGNORED_NAMESPACE_SELECTOR))
        if (desired.get("spec") or {}).get("resources") and not (created.get("spec") or {}).get("resources"):
            message = (f'host pod "{self.host_namespace}/{created["metadata"]["name"]}" of pod "{name}" has no '
                       "pod-level resources: the host API server dropped spec.resources (its PodLevelResources "
                       "feature gate is off, the default before Kubernetes 1.34), so only the containers' own "
                       "resources apply")
            log.warning("%s", message)
            out.append(("Warning", "SyncWarning", message))
        return out

    # ------------------------------------------------------------------ dependencies (section 3.1)

    def pods_waiting_for(self, kind: str, host_name: str) -> list[str]:
        """Keys of the virtual pods waiting for host object `kind`/`host_name` (for the host informers'
        handlers: a pod is re-examined as soon as what it waits for appears)."""
        return [k for k, w in self._waiting.items() if (kind, host_name) in w.missing]

    def _missing(self, vpod: Obj, deps: list[Dependency]) -> list[tuple[Dependency, str]]:
        """The required host objects that cannot be used yet, in spec order (each once), each with why: "" when
        it does not exist, else how it is not the copy of the referenced virtual object (references.not_the_copy;
        not checked for the vcluster's own Service, which is nobody's copy). An optional reference may be absent when
        the tenant does not have the object either (the kubelet starts the pod without it); one the tenant has is
        waited for (and force-synced) as a required one is, since the kubelet would give it to the pod. One whose
        host name holds another object's copy waits as a required one does: the host pod would read
        that object (a Secret of another namespace whose name and namespace join with `-x-` to the same host name;
        docs/security.md, attack 4). Read from the caches without a pause, so that `_wait` records them before a
        host object's event can come in between."""
        out: list[tuple[Dependency, str]] = []
        seen: set[tuple[str, str]] = set()
        for d in deps:
            store = self.host_objects.get(d.kind)
            if store is None or (d.kind, d.host_name) in seen:
                continue
            obj = store.get(f"{self.host_namespace}/{d.host_name}")
            if obj is None and d.optional and not self._in_virtual_cluster(d, vpod["metadata"]["namespace"]):
                continue  # absent in both clusters (a required reference to the same object later still waits)
            seen.add((d.kind, d.host_name))
            why = "" if obj is None else self._not_the_copy(d, vpod["metadata"]["namespace"], obj)
            if obj is not None and not why:
                continue
            out.append((d, why))
        return out

    def _in_virtual_cluster(self, d: Dependency, namespace: str) -> bool:
        """Whether the virtual ConfigMap or Secret `d` references from a pod in `namespace` exists (the cache)."""
        store = self.virtual_objects.get(d.kind)
        return store is not None and store.get(f"{namespace}/{d.name}") is not None

    def _not_the_copy(self, d: Dependency, namespace: str, obj: Cached) -> str:
        """How cached host object `obj`, which `d` names, is not the copy of the virtual object `d` references from
        a pod in `namespace` ("" when it is): a reference names an object of the pod's namespace, the DNS Service
        `kube-system/kube-dns`; the vcluster's own Service is not a copy and is not checked. A host ResourceClaim or
        template without vcluster's annotations passes (references.not_the_copy's `unmarked_ok`)."""
        if d.kind == SERVICE and d.field != "spec.dnsPolicy":
            return ""
        ns, _, name = d.name.rpartition("/") if d.kind == SERVICE else (namespace, "/", d.name)
        return not_the_copy(d.kind, d.host_name, ns, name, sub_field(obj, "metadata", "annotations"),
                            unmarked_ok=d.kind in (RESOURCECLAIM, RESOURCECLAIMTEMPLATE))

    async def _force_sync(self, kind: str, name: str, namespace: str) -> None:
        """Annotate virtual ConfigMap/Secret `namespace/name` with `vcluster.loft.sh/force-sync: "true"`
        (nothing else of it changes) unless its cached metadata shows it already is. A missing object is
        not an error: the pod waits, and is re-examined when the object is created."""
        store = self.virtual_objects.get(kind)
        key = f"{kind}/{namespace}/{name}"
        vobj = store.get(f"{namespace}/{name}") if store is not None else None
        if vobj is None or ((vobj.get("metadata") or {}).get("annotations") or {}).get(FORCE_SYNC) == "true":
            self._force_synced.pop(key, None)
            return
        if self._force_synced.get(key) == _rv(vobj):
            return  # annotated from this very version: the cache has not seen the echo yet (another pod waits too)
        res = CONFIGMAPS if kind == CONFIGMAP else SECRETS
        self._force_synced[key] = _rv(vobj)  # before the write: another worker's pod may wait for it too
        try:
            await self.virtual.patch(res, name, {"metadata": {"annotations": {FORCE_SYNC: "true"}}}, namespace)
        except BaseException as e:  # not written (cancelled included): the next reconcile writes it
            self._force_synced.pop(key, None)
            if isinstance(e, ApiError) and e.not_found:
                return
            raise
        log.info("annotated virtual %s %s/%s with %s so that vcluster syncs it to the host", kind, namespace, name,
                 FORCE_SYNC)

    def _waiting_since(self, vpod: Obj, now: float) -> _Waiting:
        """The waiting record of virtual pod `vpod`: the one kept for its key and uid, or a new one from `now`
        (monotonic seconds) for a pod that was not waiting or is another pod of that name."""
        key, uid = object_key(vpod), vpod["metadata"].get("uid", "")
        w = self._waiting.get(key)
        if w is None or w.uid != uid:
            w = self._waiting[key] = _Waiting(uid, now)
        return w

    async def _wait(self, vpod: Obj, missing: list[tuple[Dependency, str]], *, subject: str = "") -> float:
        """Record that the pod waits for `missing` (_missing's); after WAIT_WARNING seconds of waiting a
        SyncWarning says for what, and at once when a host object is another's copy: the first such conflict.
        Each ConfigMap or Secret in `missing` gets the `vcluster.loft.sh/force-sync` annotation in the virtual
        cluster, unless vcluster's `all` key syncs its kind anyway, so that vcluster syncs it. `subject`: what
        waits when it is not the whole pod (`ephemeral container "<name>"` of a synced pod): the message is then
        `did not add <subject> of pod "<pod>" to the host yet: ...`. Returns when to look again (sooner when a
        host object appears, changes or goes)."""
        key, meta = object_key(vpod), vpod["metadata"]
        now = self.clock.now()
        w = self._waiting_since(vpod, now)
        w.missing = {(d.kind, d.host_name) for d, _ in missing}  # before any pause: what wakes the pod from now on
        for m, _ in missing:
            if m.kind in (CONFIGMAP, SECRET) and not self.config.syncs_all(m.kind):
                await self._force_sync(m.kind, m.name, meta["namespace"])
        waited = now - w.since
        conflicts = [why for _, why in missing if why]
        d = missing[0][0]
        if conflicts:
            log.info("pod %s waits before it can be synced: %s", key, conflicts[0])
        else:
            log.info("pod %s waits for %s %s/%s (host %s) before it can be synced", key, d.kind, meta["namespace"],
                     d.name, d.host_name)
        if waited < WAIT_WARNING and not conflicts:
            return WAIT_WARNING - waited
        message = (f'did not add {subject} of pod "{meta["name"]}" to the host yet: ' if subject
                   else f'did not sync pod "{meta["name"]}" to host yet: ') + (
            conflicts[0] if conflicts else f"waiting for {_waiting_for(d)}")
        if w.warned != message:  # marked once recorded: a failed write is retried with the reconcile
            if conflicts:  # a host object another virtual object's copy: for the platform team too, once
                log.warning("pod %s: %s", key, message)
            await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", message, ACTION)
            w.warned = message
        return WAIT_RECHECK

    async def _orphaned(self, vpod: Obj, hpod: Obj, refusal: Refusal) -> None:
        meta = vpod["metadata"]
        message = (f'pod "{meta["name"]}" is orphaned: {refusal.reason}. It stays on the host as pod '
                   f'"{self.host_namespace}/{hpod["metadata"]["name"]}" but no longer receives updates, and the '
                   "syncer will not delete it. To remove it, delete the pod in the virtual cluster and the host pod "
                   f'in the host cluster; to resume syncing, make runtime class "{refusal.runtime_class}" exist on '
                   "the host and match the selector again")
        log.info("%s", message)
        await self.recorder.record(PODS, vpod, "Warning", "Orphaned", message, ACTION)

    async def _update(self, vpod: Obj, hpod: Obj, decision: gate.GateDecision, *,
                      unchanged: bool = False, recheck: bool = False) -> float | None:
        """Bring the pod pair together (podupdate.py: the virtual pod's labels and annotations the host changed,
        then the host pod's metadata and mutable spec, new ephemeral containers, resized containers and
        readiness-gate conditions; skipped when `unchanged`: both pods are as this process created them), bind
        the virtual pod, copy the host pod's status, and renew the tokens when due. First, unless `unchanged` and
        not `recheck`, the host pod is deleted when a host object it reads became another virtual object's copy
        (`_delete_reader`). Returns the seconds until the next token renewal (None: nothing to renew)."""
        update_error: Exception | None = await self._own_token_secret(vpod, hpod)
        held: float | None = None  # seconds until new ephemeral containers held back are looked at again
        if not unchanged or recheck:
            desired, deps = self._translate(vpod, for_update=True)
            if conflict := self._reads_another_copy(vpod, hpod, desired, deps):
                await self._delete_reader(vpod, hpod, conflict)
                return None
        if not unchanged and not await self._violates_pod_security(vpod, decision.runtime_class):
            dspec = desired["spec"]  # without what the host's RuntimeClass admission merged away at the create
            if dspec.get("tolerations"):
                dspec["tolerations"] = scheduling.admitted_tolerations(
                    dspec["tolerations"], (hpod.get("spec") or {}).get("tolerations") or [])
            plan = podupdate.plan_update(desired, hpod, vpod, vcluster_name=self.vcluster_name)
            key = object_key(vpod)
            if not plan.placement_kept:
                self._placement_told.pop(key, None)
            elif self._placement_told.get(key) != (told := placement_kept_message(vpod["metadata"]["name"],
                                                                                   plan.placement_kept)):
                await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", told, ACTION)
                self._placement_told[key] = told  # once written: a failed write is retried
            if plan.ephemeral:
                held = await self._hold_ephemeral(vpod, desired, deps, plan)
            try:
                await self._apply_update(vpod, hpod, plan, decision)
            except (ApiError, ReconcileError) as e:
                update_error = e  # raised once the status is copied: a refused update must not hide the pod's state
        # The status is copied whatever happens to the update or the binding: a virtual API server without
        # pods/binding, or RBAC without it, must still show the pod Running.
        bound, bind_error = await self._bind(vpod, (hpod.get("spec") or {}).get("nodeName"))
        if not bound:
            await self._copy_status(vpod, hpod)
        # else: the pod was just bound, and the binding's echo (its nodeName, a spec change) reconciles it and copies
        # the status then: a copy now, from the cache before the binding, would write the PodScheduled condition
        # the binding just wrote (a write that changes nothing), and a gated pod without conditions yet has its copy
        # guarded by the resourceVersion the binding changed (it would fail, and be retried)
        # The tokens are renewed whatever happened to the update or the binding: a lasting refusal of one of them
        # (a debug container the host's Pod Security refuses, which the pod keeps for good; no pods/binding) would
        # otherwise stop the renewal for good, and the pod's tokens would expire. The retry of the failure (its
        # backoff is at most 30 s) looks again.
        due: float | None = None
        renew_error: Exception | None = None
        try:
            due = await self._renew_tokens(vpod, hpod)
        except (ApiError, ReconcileError) as e:
            renew_error = e
        for error in (update_error, bind_error, renew_error):  # the update's was reported as a SyncError, the
            if error is not None:  # binding's once per cause; each is retried with backoff
                raise error
        return held if due is None else due if held is None else min(due, held)

    async def _own_token_secret(self, vpod: Obj, hpod: Obj) -> ApiError | None:
        """Make host pod `hpod` the owner of its token Secret when the owner patch of its create failed (`_unowned`).
        A failure that may pass (no answer, 429, 5xx, the syncer's own missing RBAC, which readiness then shows) is
        kept for the next reconcile and returned, to be raised once the rest of the update is done; a refusal (the
        Secret gone, another object under its name, a host webhook that refuses the patch) is logged and given up:
        the Secret then goes only with the virtual pod (`forget`), and nothing else of the pod is held back."""
        key = object_key(vpod)
        if key not in self._unowned:
            return None
        if self._unowned[key] != (hpod.get("metadata") or {}).get("uid"):
            self._unowned.pop(key)  # another host pod by now: its own create owns its Secret
            return None
        try:
            await self.tokens.own(vpod, hpod)
        except ApiError as e:
            if e.transient or e.status < 400 or rbac_denial(e):  # may pass; the syncer's RBAC shows in readiness
                return e
            log.warning("pod %s: its token secret is left without an owner (the host refused the owner reference; "
                        "it is deleted with the virtual pod instead): %s", key, e)
        except ReconcileError as e:
            log.warning("pod %s: its token secret is left without an owner: %s", key, e)
        self._unowned.pop(key, None)
        return None

    async def _renew_tokens(self, vpod: Obj, hpod: Obj) -> float | None:
        """Renew the tokens of `hpod` when due (`ServiceAccountTokens.renew_if_due`, counted in the metric), not for
        a host pod being deleted. Returns the seconds until the next renewal (None: nothing to renew).

        Raises:
            ApiError, ReconcileError: the renewal failed (retried with backoff).
        """
        if (hpod.get("metadata") or {}).get("deletionTimestamp"):
            return None
        renewals = self.tokens.renewals
        try:
            return await self.tokens.renew_if_due(vpod, hpod)
        except (ApiError, ReconcileError):
            self.metrics.token_renewals.labels("failed").inc()
            raise
        finally:
            if self.tokens.renewals > renewals:
                self.metrics.token_renewals.labels("renewed").inc()

    def _reads_another_copy(self, vpod: Obj, hpod: Obj, desired: Obj, deps: list[Dependency]) -> str:
        """How host pod `hpod` of synced pod `vpod` reads a host object that is now the copy of another virtual
        object than the one it references (references.not_the_copy's words), "" when none does. `desired` and
        `deps` are `_translate`'s; the references of ephemeral containers not on `hpod` yet are `_hold_ephemeral`'s
        to check."""
        added = {c.get("name") for c in (hpod.get("spec") or {}).get("ephemeralContainers") or []
                 if isinstance(c, dict)}
        pending = tuple(f"spec.ephemeralContainers[{i}]." for i, c in
                        enumerate((desired.get("spec") or {}).get("ephemeralContainers") or [])
                        if isinstance(c, dict) and c.get("name") not in added)
        return next((why for _, why in self._missing(vpod, [d for d in deps if not d.field.startswith(pending)])
                     if why), "")

    async def _delete_reader(self, vpod: Obj, hpod: Obj, conflict: str) -> None:
        """Delete host pod `hpod` of `vpod` at once (grace 0): it reads a host object that became another virtual
        object's copy after it was synced (`conflict`). A SyncWarning on the virtual pod says why; the pod then
        goes as one whose host pod vanished (podplan row 12), and its controller's next pod waits with the
        conflict's SyncWarning (row 14) until the host object is its own namespace's copy again."""
        meta, hname = vpod["metadata"], hpod["metadata"]["name"]
        await self._delete_host(hpod, 0)
        message = f'deleted host pod "{self.host_namespace}/{hname}" of pod "{meta["name"]}": {conflict}'
        log.warning("deleted host pod %s/%s of virtual pod %s/%s: %s", self.host_namespace, hname, meta["namespace"],
                    meta["name"], conflict)
        await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", message, ACTION)

    async def _hold_ephemeral(self, vpod: Obj, desired: Obj, deps: list[Dependency],
                              plan: podupdate.PodUpdate) -> float | None:
        """The create path's check of references (`_missing`) for the ephemeral containers `plan` would add to a
        synced pod's host pod (`kubectl debug` after the sync): the ConfigMaps and Secrets their `env` and
        `envFrom` name must exist on the host as the copies of the pod's own namespace's objects, or a debug
        container in namespace `b-x-c` naming Secret `a` would read the host copy of `c/a-x-b` (both are
        `a-x-b-x-c-x-<vcluster>`). When one cannot be used yet, `plan.ephemeral` is emptied (the rest of the update
        goes on) and the pod waits as a pod not yet created does (`_wait`: the virtual objects annotated for
        vcluster to sync, a SyncWarning, woken when the host object appears). `desired` and `deps` are `_translate`'s
        for `vpod`. Returns the seconds until the pod is looked at again, None when nothing is held back."""
        key = object_key(vpod)
        containers = (desired.get("spec") or {}).get("ephemeralContainers") or []
        new = tuple(f"spec.ephemeralContainers[{i}]." for i, c in enumerate(containers)
                    if any(c is e for e in plan.ephemeral))  # the fields of the containers to add
        missing = self._missing(vpod, [d for d in deps if d.field.startswith(new)])
        if not missing:
            w = self._waiting.get(key)
            if w is not None and w.uid == vpod["metadata"].get("uid", ""):
                self._waiting.pop(key, None)
            return None
        held = [str(c.get("name")) for c in plan.ephemeral]
        plan.ephemeral = []
        return await self._wait(vpod, missing, subject="ephemeral container" + ("s " if len(held) > 1 else " ")
                                + ", ".join(f'"{n}"' for n in held))

    async def _violates_pod_security(self, vpod: Obj, rc_name: str) -> bool:
        """vcluster's `isPodSecurityStandardsValid` (`policies.podSecurityStandard`): a virtual pod that does not meet
        the standard, judged as k8s.io/pod-security-admission judges it (controllers/podsecurity.py), is not synced
        (nor updated); a `SyncError` event says why (vcluster's words, without the admission status vcluster
        repeats inside them: docs/vcluster-parity.md row 44), at vcluster's `latest` (`podsecurity.VCLUSTER_MINOR`)."""
        level = self.config.raw.policies.podSecurityStandard
        found = podsecurity.violations(level, vpod["metadata"], vpod.get("spec") or {},
                                       podsecurity.VCLUSTER_MINOR) if level else []
        if not found:
            return False
        await self._refuse_pod_security(vpod, rc_name, found)
        return True

    async def _refuse_pod_security(self, vpod: Obj, rc_name: str, found: list[str], why: str = "") -> None:
        """Count, log and tell the tenant (a SyncError) that `vpod` is not synced for the Pod Security checks it
        fails (`found`, the library's words), `why` appended when the pod's own spec is not the reason."""
        level = self.config.raw.policies.podSecurityStandard
        name = vpod["metadata"]["name"]
        message = f'Pod {name} is forbidden: violates PodSecurity "{level}:latest": {", ".join(found)}' + (
            f" ({why})" if why else "")
        self.metrics.pods_refused.labels(self._class_label(rc_name)).inc()
        log.info("did not sync pod %s/%s: %s", vpod["metadata"]["namespace"], name, message)
        await self.recorder.record(PODS, vpod, "Warning", "SyncError", message, ACTION)

    def _needs_user_namespace(self, vpod: Obj) -> list[str]:
        """What the Pod Security standard would find in `vpod` without its `spec.hostUsers: false` ([] when it sets
        no such field, no standard is configured, or it meets the standard without it): the 1.35 checks waive
        running as root in a user namespace (pod-security-admission policy/helpers.go
        `relaxPolicyForUserNamespacePod`)."""
        level = self.config.raw.policies.podSecurityStandard
        spec = vpod.get("spec") or {}
        if not level or spec.get("hostUsers") is not False:
            return []
        return podsecurity.violations(level, vpod["metadata"], {k: v for k, v in spec.items() if k != "hostUsers"},
                                      podsecurity.VCLUSTER_MINOR)

    async def _host_drops_user_namespace(self, vpod: Obj, desired: Obj, rc_name: str) -> bool | None:
        """For a pod that meets the Pod Security standard only through `spec.hostUsers: false`
        (`_needs_user_namespace`): whether the host API server drops that field, as it does while its
        `UserNamespacesSupport` feature gate is off (the default up to 1.32; kubernetes pkg/api/pod/util.go
        `dropDisabledFields`), so that the pod would run as root in the node's user namespace. Asked of the host
        with a dry-run create of `desired` (nothing is stored). True: the pod is refused (a SyncError, as
        `_violates_pod_security`'s); False: the host keeps the field, or the pod does not rely on it; None: the dry
        run failed (a webhook without dry-run support...), the created host pod is looked at instead."""
        found = self._needs_user_namespace(vpod)
        if not found:
            return False
        try:
            stored = await self.host.create(PODS, desired, self.host_namespace, dry_run=True)
        except ApiError:
            return None
        if (stored.get("spec") or {}).get("hostUsers") is False:
            return False
        await self._refuse_user_namespace(vpod, rc_name, found)
        return True

    async def _refuse_user_namespace(self, vpod: Obj, rc_name: str, found: list[str]) -> None:
        """Refuse `vpod`, which fails the checks `found` (`_needs_user_namespace`) unless it runs in a user namespace,
        because the host drops its `spec.hostUsers: false`."""
        await self._refuse_pod_security(vpod, rc_name, found, "the host API server drops spec.hostUsers: its "
                                        "UserNamespacesSupport feature gate is off, so the pod would not run in a "
                                        "user namespace")

    async def _copy_status(self, vpod: Obj, hpod: Obj) -> None:
        """Copy the host pod's status to the virtual pod (translate.status_update) when they differ: to that pod
        only. The patch names its uid, so a pod created again under the name since the cache saw `vpod` is
        refused (the API server's common-field validation: metadata.uid is immutable, 422) and keeps its own
        status; a start time copied to it would have it deleted as a pod whose host pod went away."""
        meta = vpod["metadata"]
        status = translate.status_update(hpod, vpod, self.vcluster_name)
        if status is not None:
            ops = translate.guarded_status_ops(status, vpod)  # the gates' conditions kept as a controller wrote them
            try:
                await self.virtual.patch(PODS, meta["name"], status if ops is None else ops, meta["namespace"],
                                         subresource="status", uid=meta.get("uid"),
                                         patch_type="merge" if ops is None else "json")
            except ApiError as e:
                if e.not_found or e.other_object:
                    return  # gone, or another pod of that name now: its own watch event brings it
                if ops is not None:
                    await self._raise_if_behind(e, self.virtual, meta["namespace"], meta["name"], meta.get("uid"),
                                                ops)
                raise

    async def _apply_update(self, vpod: Obj, hpod: Obj, plan: podupdate.PodUpdate,
                            decision: gate.GateDecision) -> None:
        """Carry out `plan`: the virtual pod's metadata first (so that a failure between the two writes leaves
        the base on the host older, never newer, than the virtual pod), then the host writes, each tried whatever
        became of the one before: a lasting refusal of one (a debug container the host's Pod Security refuses,
        which the pod keeps for good; a toleration a host admission refuses) must not stop the others for good (the
        readiness-gate conditions a virtual controller sets, a resize). The first failure is raised once all were
        tried (retried with backoff; a refusal was reported as a SyncError)."""
        meta, hname = vpod["metadata"], hpod["metadata"]["name"]
        huid = hpod["metadata"].get("uid")  # only the host pod the cache holds: not another put under its name since
        what: list[str] = []
        failed: list[ApiError | ReconcileError] = []
        host_ops = plan.host_ops
        if plan.virtual_metadata is not None:
            try:
                await self.virtual.patch(PODS, meta["name"], plan.virtual_metadata, meta["namespace"])
                log.info("updated virtual pod %s/%s from host pod %s/%s: %s changed on the host", meta["namespace"],
                         meta["name"], self.host_namespace, hname, ", ".join(
                             f"metadata.{k}" for k in plan.virtual_metadata["metadata"] if k != "resourceVersion"))
            except ApiError as e:  # the host's metadata writes carry the merge base: they wait for this one
                failed.append(e)
                host_ops = []
        if host_ops:
            ops = host_ops
            try:
                done = await self._write(vpod, lambda: self.host.patch(PODS, hname, ops, self.host_namespace,
                                                                       patch_type="json", uid=huid),
                                         written=(hname, huid, ops))
                self._wait_for_echo(vpod, hpod, done)
                what += [_changed_field(str(op.get("path"))) for op in ops if op.get("op") != "test"]
            except (ApiError, ReconcileError) as e:
                failed.append(e)
        if plan.ephemeral:
            have = bool(hpod["spec"].get("ephemeralContainers"))
            eph = ([{"op": "add", "path": "/spec/ephemeralContainers/-", "value": c} for c in plan.ephemeral] if have
                   else [{"op": "add", "path": "/spec/ephemeralContainers", "value": plan.ephemeral}])
            try:
                if (added := await self._write_subresource(vpod, hname, huid, "ephemeralcontainers", eph)) is not None:
                    self._wait_for_echo(vpod, hpod, added)
                    what += [f"ephemeral container {c.get('name')}" for c in plan.ephemeral]
            except (ApiError, ReconcileError) as e:
                failed.append(e)
        resize = podupdate.resize_ops(hpod, plan.resize)
        try:
            if resize and (resized := await self._write_subresource(vpod, hname, huid, "resize", resize)) is not None:
                self._wait_for_echo(vpod, hpod, resized)
                what += [f"resources of container {c['name']}" for c in plan.resize]
        except (ApiError, ReconcileError) as e:
            failed.append(e)
        if plan.host_condition_ops:
            # not through _write: a refusal of the status is not the tenant's to fix; a `test` that no longer holds
            # (the kubelet wrote the conditions since the cache saw them) is retried from the fresh cache
            cops = plan.host_condition_ops
            try:
                try:
                    gated = await self.host.patch(PODS, hname, cops, self.host_namespace, patch_type="json",
                                                  subresource="status", uid=huid)
                except ApiError as e:
                    await self._raise_if_behind(e, self.host, self.host_namespace, hname, huid, cops)
                    raise
                self._wait_for_echo(vpod, hpod, gated)
                what.append("readiness-gate conditions")
            except (ApiError, ReconcileError) as e:
                failed.append(e)
        if what:
            self.metrics.pods_synced.labels(self._synced_label(hpod)).inc()
            log.info("updated host pod %s/%s from virtual pod %s/%s: %s changed", self.host_namespace, hname,
                     meta["namespace"], meta["name"], ", ".join(dict.fromkeys(what)))
        if failed:  # the syncer's missing RBAC first (the controller records it for readiness), the others logged
            failed.sort(key=lambda error: not (isinstance(error, ApiError) and rbac_denial(error)))
            for other in failed[1:]:
                log.warning("pod %s/%s: another write of its update failed too (retried with it): %s",
                            meta["namespace"], meta["name"], other)
            raise failed[0]

    def _wait_for_echo(self, vpod: Obj, hpod: Obj, written: Obj) -> None:
        """After a write to host pod `hpod` (as the cache held it) that the server answered with `written`: until
        the cache holds a newer version, the next reconcile of `vpod` plans no host write (`_updated`). A write
        that changed nothing (the same resourceVersion: a status field the host drops, say) has no echo to wait
        for."""
        if _rv(written) != _rv(hpod):
            self._updated[object_key(vpod)] = _rv(hpod)

    async def _write_subresource(self, vpod: Obj, hname: str, huid: str | None, subresource: str,
                                 ops: list[Obj]) -> Obj | None:
        """JSON-patch host pod `hname`'s `subresource` (`ephemeralcontainers`, `resize`), naming the uid `huid` of
        the host pod the cache holds: both strategies keep the patched uid (`dropNonEphemeralContainerUpdates`,
        `dropNonResizeUpdates` in kubernetes' pkg/registry/core/pod/strategy.go), so `BeforeUpdate`'s common-field
        validation refuses another pod put under the name (422, metadata.uid is immutable). A host API server that
        does not serve it (404 while the pod exists: `pods/resize` came with Kubernetes 1.33) is logged once and
        skipped from then on, so that the rest of the pod stays in sync; whether the pod exists is read from the
        host, not the cache, which still holds a pod deleted a moment ago. Returns the pod as written, None when
        not written."""
        if subresource in self._unserved:
            return None
        try:
            return await self._write(vpod, lambda: self.host.patch(PODS, hname, ops, self.host_namespace,
                                                                   patch_type="json", subresource=subresource,
                                                                   uid=huid),
                                     written=(hname, huid, ops))
        except ApiError as e:
            if not e.not_found or await self._live_pod(self.host, self.host_namespace, hname, huid) is None:
                raise  # a 404 of a pod gone (or replaced) since the cache saw it: its watch event brings the rest
            self._unserved.add(subresource)
            log.warning("the host API server does not serve pods/%s (%s); changes that need it are not synced to "
                        "host pods", subresource, e)
            return None

    async def _raise_if_behind(self, e: ApiError, client: KubeClient, namespace: str, name: str, uid: str | None,
                               ops: list[Obj]) -> None:
        """Classify a failed JSON patch `ops` of pod `namespace/name` (uid `uid`) through `client` (the host's or
        the virtual cluster's), which the cache planned: for a 422 where a read shows a pod the ops do not apply to,
        raise `e` as it is when the pod is gone or another one (its watch event brings the rest), CacheBehind when
        it is the same pod, changed since the cache saw it. Returns when the failure is the server's own refusal
        (or not a 422)."""
        if e.status != 422:
            return
        live = await self._live_pod(client, namespace, name, uid)
        if live is None:
            raise e
        if not _applies(ops, live):
            log.info("%s pod %s/%s changed since the cache saw it; the write is planned again from the watch's "
                     "newer copy", client.cluster, namespace, name)
            raise CacheBehind(f"{client.cluster} pod {namespace}/{name} changed since the cache saw it") from e

    @staticmethod
    async def _live_pod(client: KubeClient, namespace: str, name: str, uid: str | None) -> Obj | None:
        """Pod `namespace/name` as `client`'s API server has it, None when it does not exist or has another uid than
        `uid` (a rare error path: the cache may be behind). Raises ApiError when the read fails otherwise than
        with 404."""
        try:
            live = await client.get(PODS, name, namespace)
        except ApiError as e:
            if e.not_found:
                return None
            raise
        return live if (live.get("metadata") or {}).get("uid") == uid else None

    async def _bind(self, vpod: Obj, node: str | None) -> tuple[bool, Exception | None]:
        """Bind the virtual pod to the host pod's node (`pods/binding`, as a scheduler does) unless it is
        bound already. Returns (whether this call bound it, the failure to raise once the status is copied): a 403
        as it is (the controller reports each forbidden verb and resource once), anything else as a quiet
        BindingFailed logged here once per cause (cluster, verb, resource, HTTP status) until a binding works
        again."""
        meta = vpod["metadata"]
        if not node or (vpod.get("spec") or {}).get("nodeName"):
            return False, None
        try:
            await self.virtual.bind(meta["name"], meta["namespace"], node, uid=meta.get("uid"))
        except ApiError as e:
            if e.status == 409:
                return False, None  # bound meanwhile, or another pod of that name now (the binding's Conflict)
            if e.status == 403:
                return False, e  # the controller logs a 403 once per verb and resource, and /readyz names it
            cause = (e.cluster, e.verb, e.resource, e.status)
            if cause not in self._binding_failures:
                self._binding_failures.add(cause)
                log.warning("could not bind virtual pod %s/%s to node %s (%s); its status is still copied from the "
                            "host pod, and binding is retried with backoff", meta["namespace"], meta["name"], node, e)
            return False, BindingFailed(f"binding virtual pod {meta['namespace']}/{meta['name']} to node {node} "
                                        f"failed: {e}")
        if self._binding_failures:
            log.info("binding virtual pods to nodes works again")
            self._binding_failures.clear()
        return True, None

    # ------------------------------------------------------------------ writes

    def _translate(self, vpod: Obj, default: str = "", *, for_update: bool = False) -> tuple[Obj, list[Dependency]]:
        """The desired host pod and what it needs on the host: the referenced objects, the vcluster's
        Service (the API server's address) and, for cluster DNS, the DNS Service. `default`: the policy's
        default class for a pod that names none (set on the host pod only). `for_update`: for the update of an
        existing host pod, whose containers' environment cannot change: the service-link variables go to its
        ephemeral containers only.

        Raises:
            translate.ServiceEnvironmentTooLarge: (not `for_update`) the host would refuse the pod for its size."""
        ns = vpod["metadata"]["namespace"]
        kube = self._service_ip(self.vcluster_name)
        dns_name = translate.host_pod_name(DNS_SERVICE[1], DNS_SERVICE[0], self.vcluster_name)
        dns = self._service_ip(dns_name)
        services = [svc for k in self.virtual_services.keys_by_index(NAMESPACE_INDEX, ns)
                    if (svc := self.virtual_services.get(k)) is not None]
        svc_store = self.host_objects.get(SERVICE)
        svc = svc_store.get(f"{self.host_namespace}/{self.vcluster_name}") if svc_store is not None else None
        view = translate.ClusterView(kube or "", dns or "", services,
                                     self.config.workload_service_account(self.vcluster_name),
                                     namespace_labels=self._namespace_labels(ns),
                                     owner=(svc.get("metadata") or {}) if svc is not None else None,
                                     host_uid=self._host_uids())
        desired, deps = translate.host_pod_and_dependencies(
            vpod, vcluster_name=self.vcluster_name, host_namespace=self.host_namespace,
            forced_runtime_class=self.config.forced_runtime_class, default_runtime_class=default, cluster=view,
            options=self.options, for_update=for_update)
        own_sa = (vpod.get("spec") or {}).get("serviceAccountName") or (vpod.get("spec") or {}).get("serviceAccount")
        if SERVICEACCOUNT in self.host_objects and isinstance(own_sa, str) and own_sa:  # the pod runs as its copy
            deps.append(Dependency(SERVICEACCOUNT, own_sa, translate.host_pod_name(own_sa, ns, self.vcluster_name),
                                   False, "spec.serviceAccountName"))
        if SERVICE in self.host_objects:
            deps.append(Dependency(SERVICE, f"{self.host_namespace}/{self.vcluster_name}", self.vcluster_name, False,
                                   "env KUBERNETES_SERVICE_HOST"))
            if (vpod.get("spec") or {}).get("dnsPolicy", "ClusterFirst") in ("ClusterFirst", "ClusterFirstWithHostNet"):
                deps.append(Dependency(SERVICE, "/".join(DNS_SERVICE), dns_name, False, "spec.dnsPolicy"))
        return desired, deps

    def _namespace_labels(self, namespace: str) -> dict[str, Any] | None:
        """The labels of virtual namespace `namespace` from the cache (None when it is not cached)."""
        ns_obj = self.namespaces.get(namespace)
        labels = cached_field(ns_obj, "metadata").get("labels") if ns_obj is not None else None
        return labels if isinstance(labels, dict) else ({} if ns_obj is not None else None)

    def _host_uids(self) -> Callable[[str], str | None]:
        """For one translation: virtual pod uid -> the uid of its host pod (None when either is unknown), for the
        kubelet host paths that name a pod's folder (podtranslate/hostpath.py). The virtual pods are read once, at
        the first lookup, so a pod naming many such folders costs one pass over the cache, not one a volume (a
        tenant's pod of 10,000 such volumes held the event loop for 11 s with 5,000 pods cached); a pod naming
        none costs nothing."""
        by_uid: dict[str, str] | None = None

        def host_uid(virtual_uid: str) -> str | None:
            nonlocal by_uid
            if by_uid is None:
                by_uid = {}
                for k in self.virtual_pods.list_keys():
                    vpod = self.virtual_pods.get(k)
                    vuid = sub_field(vpod, "metadata", "uid") if vpod is not None else None
                    if isinstance(vuid, str):
                        by_uid[vuid] = k
            key = by_uid.get(virtual_uid)
            if key is None:
                return None
            ns, name = split_key(key)
            hpod = self.host_pods.get(self.host_key(ns or "", name))
            uid = sub_field(hpod, "metadata", "uid") if hpod is not None else None
            return uid if isinstance(uid, str) else None

        return host_uid

    def _service_ip(self, name: str) -> str | None:
        store = self.host_objects.get(SERVICE)
        svc = store.get(f"{self.host_namespace}/{name}") if store is not None else None
        ip = ((svc or {}).get("spec") or {}).get("clusterIP")
        return ip if isinstance(ip, str) and ip and ip != "None" else None

    def _class_label(self, rc_name: str) -> str:
        """The `runtime_class` label of the refusal metric for class `rc_name`: the name when the host has
        that class (or "" when the pod names none), else UNKNOWN_CLASS. The name comes from the tenant's pod: one
        series per made-up name would grow the syncer's memory and the platform's Prometheus without bound (one
        a name, kept after the pod is gone)."""
        return rc_name if not rc_name or self.host_rcs.get(rc_name) is not None else UNKNOWN_CLASS

    @staticmethod
    def _synced_label(hpod: Obj) -> str:
        """The `runtime_class` label of the sync metric for host pod `hpod` (as created or cached): the class the
        host pod runs, not the one the virtual pod names (a forced class or the runtime policy's default replaces
        it, and with the gate off a made-up name would add a series per name). The host has that class: its
        RuntimeClass admission refuses a pod naming one it lacks (kubernetes plugin/pkg/admission/runtimeclass)."""
        return str((hpod.get("spec") or {}).get("runtimeClassName") or "")

    async def _refuse(self, vpod: Obj, rc_name: str, message: str) -> None:
        self.metrics.pods_refused.labels(self._class_label(rc_name)).inc()
        log.info("%s", message)
        await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", message, ACTION)

    async def _create_host(self, vpod: Obj, desired: Obj, rc_name: str, *, settled: str | None) -> Obj | None:
        """Create the host pod; returns it as created, or None when another pod holds its name: then a SyncError
        says whose (once per message while the pod is kept out; the caller looks again after WAIT_RECHECK).
        `settled`: the resourceVersion of the virtual namespace whose labels `desired` carries, when the created
        pod is all the pod needs until one of them changes; None: the reconcile of its echo looks again."""
        hname = desired["metadata"]["name"]
        try:
            created = await self._write(vpod, lambda: self.host.create(PODS, desired, self.host_namespace))
        except ApiError as e:
            if not e.already_exists:
                raise
            existing = await self.host.get(PODS, hname, self.host_namespace)
            meta = vpod["metadata"]
            if self.owns(existing, meta["namespace"], meta["name"]):
                raise  # ours, the cache is behind: retry once the watch catches up
            holder = podplan.synced_from(existing, self.vcluster_name)
            msg = (f'did not sync pod "{meta["name"]}" to host because a pod named "{hname}" already exists in '
                   f'host namespace "{self.host_namespace}"' + (
                       f' and is not managed by vcluster "{self.vcluster_name}"' if holder is None else
                       f': it is the host pod of virtual pod "{holder}" (their host names collide)'))
            w = self._waiting_since(vpod, self.clock.now())
            w.missing = set()  # what wakes it is the recheck: the other pod need not be one this syncer watches
            if w.warned != msg:  # marked once recorded: a failed write is retried with the reconcile
                log.warning("%s", msg)
                await self.recorder.record(PODS, vpod, "Warning", "SyncError", msg, ACTION)
                w.warned = msg
            return None
        self.metrics.pods_synced.labels(self._synced_label(created)).inc()
        if settled is not None:
            self._created[object_key(vpod)] = (_rv(vpod), _rv(created), settled)
            self.own_writes.created(created, object_key(vpod))  # its echo wakes nobody: _create returns the requeue
        log.info("created host pod %s/%s from virtual pod %s/%s (%s)", self.host_namespace, hname,
                 vpod["metadata"]["namespace"], vpod["metadata"]["name"],
                 f'runtime class "{rc_name}" allowed' if rc_name else "no runtime class")
        return created

    async def _write(self, vpod: Obj, call: Callable[[], Awaitable[Obj]], *,
                     written: tuple[str, str | None, list[Obj]] | None = None) -> Obj:
        """Make a host write for `vpod`. A refusal by the host (400, 403, 422) is told to the tenant as a SyncError
        and raised as HostRejected (retried with backoff), unless the write was planned from a cache that is behind
        the host: `other_object` (another pod under the name), or, for JSON patch `written` = (name, uid, ops) of a
        host pod, a 422 where a read of the host shows another pod under the name or a pod the ops no longer apply
        to (a `test` of a value the host changed since, a removed key: kube-apiserver's generic 422 of
        `applyJSPatch`). Such a write is raised as it is (CacheBehind for a pod that changed), retried quietly:
        the watch brings the rest."""
        try:
            return await call()
        except ApiError as e:
            if e.status in (400, 403, 422) and not e.other_object:  # another pod under the name: the cache was behind
                if written is not None:
                    await self._raise_if_behind(e, self.host, self.host_namespace, *written)
                msg = f'host rejected pod "{vpod["metadata"]["name"]}": {e.message}'
                await self.recorder.record(PODS, vpod, "Warning", "SyncError", msg, ACTION)
                raise HostRejected(msg) from e
            raise

    async def _delete_host(self, hpod: Obj, grace: int | None) -> None:
        meta = hpod["metadata"]
        try:
            await self.host.delete(PODS, meta["name"], self.host_namespace, uid=meta.get("uid"),
                                   grace_period_seconds=grace)
        except ApiError as e:
            if not e.not_found:
                raise

    async def _finish_virtual_delete(self, vpod: Obj, why: str) -> None:
        meta = vpod["metadata"]
        try:
            await self.virtual.delete(PODS, meta["name"], meta["namespace"], uid=meta.get("uid"),
                                      grace_period_seconds=0)
            log.info("deleted virtual pod %s/%s immediately because %s", meta["namespace"], meta["name"], why)
        except ApiError as e:
            if not e.not_found:
                raise


def _applies(ops: list[Obj], live: Obj) -> bool:
    """Whether JSON patch `ops` applies to pod `live` as an API server answered it: every `test` holds and every
    path exists (RFC 6902, with the `jsonpatch` library as kube-apiserver's `applyJSPatch` with
    evanphx/json-patch), and the result does not hold an ephemeral container twice (a debug container the syncer
    added already, which a cache behind that write plans to add again; kube-apiserver's validation refuses the
    duplicate name, 422, which is no refusal for the tenant to see)."""
    import jsonpatch  # a rare error path: not among the imports every start pays (difflib and its own, 7 ms)

    try:
        result = jsonpatch.apply_patch(live, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        return False
    names = [c.get("name") for c in (result.get("spec") or {}).get("ephemeralContainers") or [] if isinstance(c, dict)]
    return len(names) == len(set(names))


def _changed_field(path: str) -> str:
    """The field a JSON-patch `path` changes, as the update's log line names it: a label or annotation key's path
    as its map (`/metadata/labels/app` is `/metadata/labels`), any other path as it is."""
    parts = path.split("/")
    return "/".join(parts[:3]) if parts[1:2] == ["metadata"] else path
