"""Feature gates whose default changed between the Kubernetes versions the test API server can emulate, and what
kube-apiserver does with the fields they guard while they are off.

Source: kubernetes `pkg/features/kube_features.go` (the versioned defaults) and `pkg/api/pod/util.go`
(`dropDisabledPodLevelResources`, `dropDisabledPodStatusFields`). A field whose gate is off is not refused: the
API server drops it silently before validation (unless the old object already uses it), and the request succeeds.

- `PodLevelResources` (pod `spec.resources`): off in 1.32 and 1.33 (alpha), on from 1.34 (beta);
- `PodObservedGenerationTracking` (pod `status.observedGeneration` and `status.conditions[].observedGeneration`):
  off in 1.33 (alpha; the fields do not exist before), on from 1.34 (beta);
- `UserNamespacesSupport` (pod `spec.hostUsers`): off up to 1.32 (alpha 1.28-1.29, beta off 1.30-1.32), on from 1.33
  (beta); `dropDisabledFields` clears `hostUsers` unless the old pod uses it (`hostUsersInUse`).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
POD_LEVEL_RESOURCES = 34  # first minor version with PodLevelResources on by default
POD_OBSERVED_GENERATION = 34  # first minor version with PodObservedGenerationTracking on by default
USER_NAMESPACES = 33  # first minor version with UserNamespacesSupport on by default


def _resources_in_use(spec: Any) -> bool:
    """`podLevelResourcesInUse`: the old pod spec sets pod-level requests or limits."""
    res = spec.get("resources") if isinstance(spec, dict) else None
    return isinstance(res, dict) and bool(res.get("requests") or res.get("limits"))


def drop_disabled_pod_fields(pod: Obj, old: Obj | None, minor: int) -> None:
    """`dropDisabledPodLevelResources` and `dropDisabledFields`' user-namespace rule for a server of Kubernetes
    1.`minor` with default gates (mutates `pod`): before 1.34 a pod's `spec.resources`, before 1.33 its
    `spec.hostUsers`, is removed unless the old pod (None on create) already has it."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    old_spec = (old or {}).get("spec")
    if minor < POD_LEVEL_RESOURCES and not _resources_in_use(old_spec):
        spec.pop("resources", None)
    if minor < USER_NAMESPACES and (not isinstance(old_spec, dict) or old_spec.get("hostUsers") is None):
        spec.pop("hostUsers", None)


def _observed_generation_in_use(status: Any) -> bool:
    """`podObservedGenerationTrackingInUse`: the old status or one of its conditions has an observedGeneration."""
    if not isinstance(status, dict):
        return False
    return bool(status.get("observedGeneration")) or any(
        isinstance(c, dict) and bool(c.get("observedGeneration")) for c in status.get("conditions") or [])


def drop_disabled_pod_status_fields(pod: Obj, old: Obj, minor: int) -> None:
    """`dropDisabledPodStatusFields` for PodObservedGenerationTracking (mutates `pod`): before 1.34 the pod's
    `status.observedGeneration` and its conditions' are removed unless the old status already has one."""
    status = pod.get("status")
    if minor >= POD_OBSERVED_GENERATION or not isinstance(status, dict) or _observed_generation_in_use(
            old.get("status")):
        return
    status.pop("observedGeneration", None)
    for c in status.get("conditions") or []:
        if isinstance(c, dict):
            c.pop("observedGeneration", None)
