"""The Pod reconciler, virtual -> host, behind the RuntimeClass gate (behaviour.md section 3).

For a virtual pod key `namespace/name`, comparing the virtual pod with the host pod it owns:

| virtual pod          | host pod           | action                                                        |
|----------------------|--------------------|---------------------------------------------------------------|
| gone                 | ours, class allowed| delete the host pod                                           |
| gone                 | ours, orphaned     | leave it (the user deletes it on the host); log               |
| being deleted        | none               | finish: delete the virtual pod with grace 0                   |
| being deleted        | ours, orphaned     | leave both; Orphaned event says what to do                    |
| being deleted        | ours               | delete the host pod with the virtual pod's grace period       |
| exists, was started  | none               | the host pod vanished: delete the virtual pod (as vcluster)   |
| exists               | none               | gate, then virtual-only references, then create (or refuse)   |
| exists, orphaned     | ours               | no updates; Orphaned event                                    |
| exists               | ours               | patch labels/annotations/images; copy status back; bind node  |

A refusal is a Warning `SyncWarning` event on the virtual pod (repeats raise its count); nothing is
written to the host. A host-side rejection (403/422/400, e.g. RuntimeClass admission) is a Warning
`SyncError` event with the host's message and a retry with backoff. A host pod that does not carry
this vcluster's managed-by label and object annotations is never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.controllers import gate, references, translate
from syncer.kube.cache import Store, split_key
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.controller import ReconcileError
from syncer.kube.events import EventRecorder
from syncer.kube.resources import PODS
from syncer.metrics import Metrics

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ACTION = "SyncPod"


class HostRejected(ReconcileError):
    """The host API server refused the pod (reported as a SyncError event; retried with backoff)."""


class BindingFailed(ReconcileError):
    """Binding a virtual pod to its host pod's node failed (logged once per cause; retried quietly)."""

    quiet = True


class PodReconciler:
    """Reconciles one virtual pod with its host pod.

    Args:
        config: the validated configuration (gate, forced runtimeClassName).
        vcluster_name: the vcluster name (host pod names and the managed-by label).
        host_namespace: where host pods are created (single-namespace mode).
        virtual_pods: cache of virtual pods (key `ns/name`).
        host_pods: cache of host pods in `host_namespace` carrying our managed-by label.
        host_rcs: cache of host RuntimeClasses (key = name), for the gate.
        host, virtual: clients for the two clusters.
        recorder: writes events on virtual pods.
        metrics: pods synced/refused counters.
    """

    def __init__(self, config: SyncerConfig, *, vcluster_name: str, host_namespace: str, virtual_pods: Store,
                 host_pods: Store, host_rcs: Store, host: KubeClient, virtual: KubeClient, recorder: EventRecorder,
                 metrics: Metrics) -> None:
        self.config = config
        self.vcluster_name = vcluster_name
        self.host_namespace = host_namespace
        self.virtual_pods = virtual_pods
        self.host_pods = host_pods
        self.host_rcs = host_rcs
        self.host = host
        self.virtual = virtual
        self.recorder = recorder
        self.metrics = metrics
        self._skipped: dict[str, str] = {}  # malformed virtual pods already logged, by resourceVersion
        self._binding_failures: set[tuple[str, str, str, int]] = set()  # causes already logged

    def host_key(self, namespace: str, name: str) -> str:
        """Cache key of the host pod for virtual pod `namespace/name`."""
        return f"{self.host_namespace}/{translate.host_pod_name(name, namespace, self.vcluster_name)}"

    def owns(self, hpod: Obj, namespace: str, name: str) -> bool:
        """True when `hpod` was synced by this vcluster from virtual pod `namespace/name`."""
        meta = hpod.get("metadata") or {}
        labels, ann = meta.get("labels"), meta.get("annotations")
        if not isinstance(labels, dict) or not isinstance(ann, dict):
            return False
        return (labels.get(translate.MANAGED_BY) == self.vcluster_name
                and ann.get(translate.OBJECT_NAMESPACE) == namespace and ann.get(translate.OBJECT_NAME) == name)

    def decide(self, pod_name: str, rc_name: str) -> gate.GateDecision:
        """The gate decision for a pod naming `rc_name`, against the host RuntimeClass cache."""
        return gate.evaluate(self.config, pod_name, rc_name, self.host_rcs.get(rc_name) if rc_name else None)

    async def reconcile(self, key: str) -> float | None:
        """Bring the host pod of virtual pod `key` (and the virtual pod's status) to the desired state.
        Raises ApiError or HostRejected to be retried with backoff."""
        namespace, name = split_key(key)
        if namespace is None:
            log.warning("pod key %r has no namespace; ignored", key)
            return None
        vpod = self.virtual_pods.get(key)
        if vpod is not None:
            problem = translate.pod_shape_error(vpod)
            if problem is not None:
                rv = str((vpod.get("metadata") or {}).get("resourceVersion") or "")
                if self._skipped.get(key) != rv:
                    self._skipped[key] = rv
                    log.warning("skipped virtual pod %s: %s", key, problem)
                return None
            self._skipped.pop(key, None)
        hpod = self.host_pods.get(self.host_key(namespace, name))
        if hpod is not None and not self.owns(hpod, namespace, name):
            hpod = None  # same name, another owner: never touched (create reports the conflict)
        if vpod is None:
            if hpod is not None:
                await self._virtual_gone(key, name, hpod)
            return None
        if hpod is not None and self._stale(hpod, vpod):
            await self._replace_stale(key, name, vpod, hpod)
            return None
        rc_name = (vpod.get("spec") or {}).get("runtimeClassName") or ""
        decision = self.decide(name, rc_name)
        if (vpod.get("metadata") or {}).get("deletionTimestamp"):
            await self._virtual_deleting(vpod, hpod, decision)
        elif hpod is None:
            await self._host_missing(vpod, decision)
        elif not decision.allowed:
            self.metrics.pods_refused.labels(rc_name).inc()
            await self._orphaned(vpod, hpod, decision)
        else:
            await self._update(vpod, hpod, decision)
        return None

    # ------------------------------------------------------------------ the cases

    @staticmethod
    def _stale(hpod: Obj, vpod: Obj) -> bool:
        """The host pod was synced from an earlier virtual pod of the same name (deleted and re-created
        before we saw it): its spec is immutable, so it cannot be updated into the new pod."""
        uid = (hpod["metadata"].get("annotations") or {}).get(translate.OBJECT_UID)
        return bool(uid) and uid != vpod["metadata"].get("uid")

    async def _replace_stale(self, key: str, name: str, vpod: Obj, hpod: Obj) -> None:
        rc_name = (hpod["metadata"].get("annotations") or {}).get(translate.VIRTUAL_RUNTIME_CLASS) or ""
        if self.decide(name, rc_name).allowed:
            log.info("host pod %s/%s belongs to an earlier virtual pod %s; deleting it so the new one can sync",
                     self.host_namespace, hpod["metadata"]["name"], key)
            await self._delete_host(hpod, None)  # its deletion event brings this key back
            return
        msg = (f'did not sync pod "{name}" to host because host pod "{self.host_namespace}/{hpod["metadata"]["name"]}" '
               "still belongs to an earlier, orphaned pod of the same name; delete it in the host cluster")
        await self._refuse(vpod, (vpod.get("spec") or {}).get("runtimeClassName") or "", msg)

    async def _virtual_gone(self, key: str, name: str, hpod: Obj) -> None:
        rc_name = ((hpod["metadata"].get("annotations") or {}).get(translate.VIRTUAL_RUNTIME_CLASS) or "")
        decision = self.decide(name, rc_name)
        if decision.allowed:
            await self._delete_host(hpod, None)
            log.info("deleted host pod %s/%s because virtual pod %s is gone", self.host_namespace,
                     hpod["metadata"]["name"], key)
        else:
            log.warning("virtual pod %s is gone; its host pod %s/%s is orphaned (%s) and is left in place: delete it "
                        "in the host cluster when it is no longer needed", key, self.host_namespace,
                        hpod["metadata"]["name"], decision.reason)

    async def _virtual_deleting(self, vpod: Obj, hpod: Obj | None, decision: gate.GateDecision) -> None:
        meta = vpod["metadata"]
        if hpod is None:
            await self._finish_virtual_delete(vpod, "it is being deleted and has no host pod")
        elif not decision.allowed:
            await self._orphaned(vpod, hpod, decision)
        elif not hpod["metadata"].get("deletionTimestamp"):
            await self._delete_host(hpod, meta.get("deletionGracePeriodSeconds"))
            log.info("deleting host pod %s/%s (grace %ss) because virtual pod %s/%s is being deleted",
                     self.host_namespace, hpod["metadata"]["name"], meta.get("deletionGracePeriodSeconds"),
                     meta["namespace"], meta["name"])

    async def _host_missing(self, vpod: Obj, decision: gate.GateDecision) -> None:
        if (vpod.get("status") or {}).get("startTime"):
            # It ran on the host and its host pod vanished without us (deleted, garbage-collected):
            # vcluster then deletes the virtual pod too rather than starting it again.
            await self._finish_virtual_delete(vpod, "its host pod is gone")
            return
        if not decision.allowed:
            await self._refuse(vpod, decision.runtime_class, decision.message)
            return
        refs = references.virtual_only_references(vpod)
        if refs:
            message = f'did not sync pod "{vpod["metadata"]["name"]}" to host because {references.refusal_reason(refs)}'
            await self._refuse(vpod, decision.runtime_class, message)
            return
        await self._create_host(vpod, self._desired(vpod), decision.runtime_class)

    async def _orphaned(self, vpod: Obj, hpod: Obj, decision: gate.GateDecision) -> None:
        meta = vpod["metadata"]
        message = (f'pod "{meta["name"]}" is orphaned: {decision.reason}. It stays on the host as pod '
                   f'"{self.host_namespace}/{hpod["metadata"]["name"]}" but no longer receives updates, and the '
                   "syncer will not delete it. To remove it, delete the pod in the virtual cluster and the host pod "
                   f'in the host cluster; to resume syncing, make runtime class "{decision.runtime_class}" exist on '
                   "the host and match the selector again")
        log.info("%s", message)
        await self.recorder.record(PODS, vpod, "Warning", "Orphaned", message, ACTION)

    async def _update(self, vpod: Obj, hpod: Obj, decision: gate.GateDecision) -> None:
        desired = self._desired(vpod)
        hname = hpod["metadata"]["name"]
        ops = translate.host_pod_update(desired, hpod)
        if ops:
            await self._write(vpod, lambda: self.host.patch(PODS, hname, ops, self.host_namespace, patch_type="json"))
            self.metrics.pods_synced.labels(decision.runtime_class).inc()
            log.info("updated host pod %s/%s from virtual pod %s/%s", self.host_namespace, hname,
                     vpod["metadata"]["namespace"], vpod["metadata"]["name"])
        meta = vpod["metadata"]
        # The status is copied whatever happens to the binding: a virtual API server without
        # pods/binding, or RBAC without it, must still show the pod Running.
        bind_error = await self._bind(vpod, (hpod.get("spec") or {}).get("nodeName"))
        status = translate.status_update(hpod, vpod)
        if status is not None:
            try:
                await self.virtual.patch(PODS, meta["name"], status, meta["namespace"], subresource="status")
            except ApiError as e:
                if not e.not_found:
                    raise
        if bind_error is not None:
            raise bind_error  # retried with backoff, reported once per cause

    async def _bind(self, vpod: Obj, node: str | None) -> Exception | None:
        """Bind the virtual pod to the host pod's node (`pods/binding`, as a scheduler does) unless it is
        bound already. Returns the failure to raise once the status is copied: a 403 as it is (the
        controller reports each forbidden verb and resource once), anything else as a quiet BindingFailed
        logged here once per cause (cluster, verb, resource, HTTP status) until a binding works again."""
        meta = vpod["metadata"]
        if not node or (vpod.get("spec") or {}).get("nodeName"):
            return None
        try:
            await self.virtual.bind(meta["name"], meta["namespace"], node)
        except ApiError as e:
            if e.status == 409:
                return None  # bound meanwhile (the binding registry's Conflict)
            if e.status == 403:
                return e  # the controller logs a 403 once per verb and resource, and /readyz names it
            cause = (e.cluster, e.verb, e.resource, e.status)
            if cause not in self._binding_failures:
                self._binding_failures.add(cause)
                log.warning("could not bind virtual pod %s/%s to node %s (%s); its status is still copied from the "
                            "host pod, and binding is retried with backoff", meta["namespace"], meta["name"], node, e)
            return BindingFailed(f"binding virtual pod {meta['namespace']}/{meta['name']} to node {node} failed: {e}")
        if self._binding_failures:
            log.info("binding virtual pods to nodes works again")
            self._binding_failures.clear()
        return None

    # ------------------------------------------------------------------ writes

    def _desired(self, vpod: Obj) -> Obj:
        return translate.host_pod(vpod, vcluster_name=self.vcluster_name, host_namespace=self.host_namespace,
                                  forced_runtime_class=self.config.forced_runtime_class)

    async def _refuse(self, vpod: Obj, rc_name: str, message: str) -> None:
        self.metrics.pods_refused.labels(rc_name).inc()
        log.info("%s", message)
        await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", message, ACTION)

    async def _create_host(self, vpod: Obj, desired: Obj, rc_name: str) -> None:
        hname = desired["metadata"]["name"]
        try:
            await self._write(vpod, lambda: self.host.create(PODS, desired, self.host_namespace))
        except ApiError as e:
            if not e.already_exists:
                raise
            existing = await self.host.get(PODS, hname, self.host_namespace)
            meta = vpod["metadata"]
            if self.owns(existing, meta["namespace"], meta["name"]):
                raise  # ours, the cache is behind: retry once the watch catches up
            msg = (f'did not sync pod "{meta["name"]}" to host because a pod named "{hname}" already exists in '
                   f'host namespace "{self.host_namespace}" and is not managed by vcluster "{self.vcluster_name}"')
            log.warning("%s", msg)
            await self.recorder.record(PODS, vpod, "Warning", "SyncError", msg, ACTION)
            return
        self.metrics.pods_synced.labels(rc_name).inc()
        log.info("created host pod %s/%s from virtual pod %s/%s", self.host_namespace, hname,
                 vpod["metadata"]["namespace"], vpod["metadata"]["name"])

    async def _write(self, vpod: Obj, call: Callable[[], Awaitable[Obj]]) -> None:
        try:
            await call()
        except ApiError as e:
            if e.status in (400, 403, 422):
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
