"""The Pod reconciler, virtual -> host, behind the RuntimeClass gate (behaviour.md section 3).

For a virtual pod key `namespace/name` it:
- deletes the host pod it owns when the virtual pod is gone;
- checks the gate before every create or update on the host; a refused pod gets a Warning
  `SyncWarning` event (repeats raise its count) and nothing is written to the host. An already synced
  pod whose class went away therefore stays where it is and stops receiving updates (orphan);
- creates the host pod, or patches the synced fields that may change (labels, annotations, images);
- turns a host-side rejection (403/422, e.g. RuntimeClass admission) into a Warning `SyncError`
  event with the host's message, and retries with backoff;
- never touches a host pod that does not carry its managed-by label and object annotations.
"""

from __future__ import annotations

import logging
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.controllers import gate, translate
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


class PodReconciler:
    """Reconciles one virtual pod with its host pod.

    Args:
        config: the validated configuration (gate, forced runtimeClassName).
        vcluster_name: the vcluster name (host pod names and the managed-by label).
        host_namespace: where host pods are created (single-namespace mode).
        virtual_pods: cache of virtual pods (key `ns/name`).
        host_pods: cache of host pods in `host_namespace` carrying our managed-by label.
        host_rcs: cache of host RuntimeClasses (key = name), for the gate.
        host: client for the host cluster.
        recorder: writes events on virtual pods.
        metrics: pods synced/refused counters.
    """

    def __init__(self, config: SyncerConfig, *, vcluster_name: str, host_namespace: str, virtual_pods: Store,
                 host_pods: Store, host_rcs: Store, host: KubeClient, recorder: EventRecorder,
                 metrics: Metrics) -> None:
        self.config = config
        self.vcluster_name = vcluster_name
        self.host_namespace = host_namespace
        self.virtual_pods = virtual_pods
        self.host_pods = host_pods
        self.host_rcs = host_rcs
        self.host = host
        self.recorder = recorder
        self.metrics = metrics

    def host_key(self, namespace: str, name: str) -> str:
        """Cache key of the host pod for virtual pod `namespace/name`."""
        return f"{self.host_namespace}/{translate.host_pod_name(name, namespace, self.vcluster_name)}"

    def owns(self, hpod: Obj, namespace: str, name: str) -> bool:
        """True when `hpod` was synced by this vcluster from virtual pod `namespace/name`."""
        meta = hpod.get("metadata") or {}
        labels, ann = meta.get("labels") or {}, meta.get("annotations") or {}
        return (labels.get(translate.MANAGED_BY) == self.vcluster_name
                and ann.get(translate.OBJECT_NAMESPACE) == namespace and ann.get(translate.OBJECT_NAME) == name)

    def decide(self, vpod: Obj) -> gate.GateDecision:
        """The gate decision for a virtual pod, against the host RuntimeClass cache."""
        rc_name = (vpod.get("spec") or {}).get("runtimeClassName") or ""
        return gate.evaluate(self.config, vpod, self.host_rcs.get(rc_name) if rc_name else None)

    async def reconcile(self, key: str) -> float | None:
        """Bring the host pod of virtual pod `key` to the desired state. Raises to be retried."""
        namespace, name = split_key(key)
        if namespace is None:
            log.warning("pod key %r has no namespace; ignored", key)
            return None
        vpod = self.virtual_pods.get(key)
        hpod = self.host_pods.get(self.host_key(namespace, name))
        if hpod is not None and not self.owns(hpod, namespace, name):
            hpod = None  # same name, another owner: never touched (create will report the conflict)
        if vpod is None or (vpod.get("metadata") or {}).get("deletionTimestamp"):
            if hpod is not None:
                await self._delete_host(hpod)
            return None
        decision = self.decide(vpod)
        if not decision.allowed:
            self.metrics.pods_refused.labels(decision.runtime_class).inc()
            log.info("%s", decision.message)
            await self.recorder.record(PODS, vpod, "Warning", "SyncWarning", decision.message, ACTION)
            return None
        desired = translate.host_pod(vpod, vcluster_name=self.vcluster_name, host_namespace=self.host_namespace,
                                     forced_runtime_class=self.config.forced_runtime_class)
        if hpod is None:
            await self._create_host(vpod, desired, decision.runtime_class)
            return None
        ops = translate.host_pod_update(desired, hpod)
        if ops:
            await self._write(vpod, desired, lambda: self.host.patch(
                PODS, desired["metadata"]["name"], ops, self.host_namespace, patch_type="json"))
            self.metrics.pods_synced.labels(decision.runtime_class).inc()
            log.info("updated host pod %s/%s from virtual pod %s", self.host_namespace,
                     desired["metadata"]["name"], key)
        return None

    async def _create_host(self, vpod: Obj, desired: Obj, rc_name: str) -> None:
        hname = desired["metadata"]["name"]
        try:
            await self._write(vpod, desired, lambda: self.host.create(PODS, desired, self.host_namespace))
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

    async def _write(self, vpod: Obj, desired: Obj, call: Any) -> None:
        try:
            await call()
        except ApiError as e:
            if e.status in (400, 403, 422):
                msg = f'host rejected pod "{vpod["metadata"]["name"]}": {e.message}'
                await self.recorder.record(PODS, vpod, "Warning", "SyncError", msg, ACTION)
                raise HostRejected(msg) from e
            raise

    async def _delete_host(self, hpod: Obj) -> None:
        meta = hpod["metadata"]
        try:
            await self.host.delete(PODS, meta["name"], self.host_namespace, uid=meta.get("uid"))
            log.info("deleted host pod %s/%s because its virtual pod is gone", self.host_namespace, meta["name"])
        except ApiError as e:
            if not e.not_found:
                raise
