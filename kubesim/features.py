"""Feature gates whose default changed between the Kubernetes versions the test API server can emulate, and what
kube-apiserver does with the fields they guard while they are off.

Source: kubernetes `pkg/features/kube_features.go` (the versioned defaults) and `pkg/api/pod/util.go`
(`dropDisabledPodLevelResources`, `dropDisabledPodStatusFields`). A field whose gate is off is not refused: the
API server drops it silently before validation (unless the old object already uses it), and the request succeeds.

- `PodLevelResources` (pod `spec.resources`): off in 1.32 and 1.33 (alpha), on from 1.34 (beta);
- `PodObservedGenerationTracking` (pod `status.observedGeneration` and `status.conditions[].observedGeneration`):
  off in 1.33 (alpha; the fields do not exist before), on from 1.34 (beta);
- `UserNamespacesSupport` (pod `spec.hostUsers`): off up to 1.32 (alpha 1.28-1.29, beta off 1.30-1.32), on from 1.33
  (beta); `dropDisabledFields` clears `hostUsers` unless the old pod uses it (`hostUsersInUse`);
- `MatchLabelKeysInPodAffinity` (pod (anti-)affinity terms' `matchLabelKeys`/`mismatchLabelKeys`): off before 1.31
  (alpha 1.29-1.30), on from 1.31 (beta; GA and locked in 1.33); while off
  `dropDisabledMatchLabelKeysFieldInPodAffinity` clears both unless the old pod uses them; while on the pod
  strategy's `PrepareForCreate` folds them into the term's `labelSelector` (`mutatePodAffinity`,
  pkg/registry/core/pod/strategy.go);
- `MatchLabelKeysInPodTopologySpreadSelectorMerge` (topology spread constraints' `matchLabelKeys`, a beta field on since
  1.27): on from 1.34 (beta); while on, `PrepareForCreate` folds the keys into the constraint's `labelSelector`
  (`mutateTopologySpreadConstraints`) and validation holds the constraint to the affinity terms' rule (validation.py);
  before, the scheduler reads the keys and validation refuses a key the selector names at all.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
DEFAULT_MINOR = 32  # the version a server reports unless told another (EmbeddedAPIServer's `minor`)
POD_LEVEL_RESOURCES = 34  # first minor version with PodLevelResources on by default
POD_OBSERVED_GENERATION = 34  # first minor version with PodObservedGenerationTracking on by default
USER_NAMESPACES = 33  # first minor version with UserNamespacesSupport on by default
MATCH_LABEL_KEYS_IN_POD_AFFINITY = 31  # first minor version with MatchLabelKeysInPodAffinity on by default
SPREAD_SELECTOR_MERGE = 34  # first minor version with MatchLabelKeysInPodTopologySpreadSelectorMerge on by default
AFFINITY_KINDS = ("podAffinity", "podAntiAffinity")


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
    if minor < MATCH_LABEL_KEYS_IN_POD_AFFINITY and not any(
            t.get("matchLabelKeys") or t.get("mismatchLabelKeys") for t in affinity_terms(old_spec)):
        for term in affinity_terms(spec):  # dropDisabledMatchLabelKeysFieldInPodAffinity
            term.pop("matchLabelKeys", None)
            term.pop("mismatchLabelKeys", None)


def affinity_terms(spec: Any) -> list[Obj]:
    """The pod (anti-)affinity terms of a pod spec: preferred (the `podAffinityTerm` of each weighted term) then
    required, pod affinity before anti-affinity, as `mutatePodAffinity` visits them."""
    affinity = spec.get("affinity") if isinstance(spec, dict) else None
    out: list[Obj] = []
    for kind in AFFINITY_KINDS:
        rules = affinity.get(kind) if isinstance(affinity, dict) else None
        if not isinstance(rules, dict):
            continue
        for weighted in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            term = weighted.get("podAffinityTerm") if isinstance(weighted, dict) else None
            if isinstance(term, dict):
                out.append(term)
        out += [t for t in rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [] if isinstance(t, dict)]
    return out


def _fold_label_keys(selector: Obj, keys: Any, operator: str, labels: Obj) -> None:
    """`applyLabelKeysToLabelSelector`: for each key the pod has a label of, `key <operator> (value)` appended to the
    selector's matchExpressions."""
    for key in keys or []:
        if isinstance(key, str) and key in labels:
            selector.setdefault("matchExpressions", []).append(
                {"key": key, "operator": operator, "values": [labels[key]]})


def merge_label_keys(pod: Obj, minor: int) -> None:
    """The pod strategy's `mutatePodAffinity` (from 1.31) and `mutateTopologySpreadConstraints` (from 1.34) on create
    (mutates `pod`): each term's and constraint's label keys the pod has labels of are folded into its selector,
    `matchLabelKeys` as `In`, `mismatchLabelKeys` as `NotIn`; a term without a selector (which matches nothing) is
    left alone. The keys themselves stay."""
    spec = pod.get("spec")
    meta = pod.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if not isinstance(spec, dict):
        return
    labels = labels if isinstance(labels, dict) else {}
    if minor >= MATCH_LABEL_KEYS_IN_POD_AFFINITY:
        for term in affinity_terms(spec):  # applyMatchLabelKeysAndMismatchLabelKeys
            if isinstance(term.get("labelSelector"), dict):
                _fold_label_keys(term["labelSelector"], term.get("matchLabelKeys"), "In", labels)
                _fold_label_keys(term["labelSelector"], term.get("mismatchLabelKeys"), "NotIn", labels)
    if minor >= SPREAD_SELECTOR_MERGE:
        for c in spec.get("topologySpreadConstraints") or []:  # applyMatchLabelKeys
            if isinstance(c, dict) and isinstance(c.get("labelSelector"), dict):
                _fold_label_keys(c["labelSelector"], c.get("matchLabelKeys"), "In", labels)


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
