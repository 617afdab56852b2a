"""The Pod gate: may a virtual pod be synced to the host, given its runtimeClassName? (pure)

Source: vcluster's pod syncer check for `sync.fromHost.runtimeClasses` and behaviour.md section 3.
A pod passes when the feature is disabled, the selector is empty, the pod names no runtime class, or
it names a host RuntimeClass that exists, is not being deleted, and matches the selector. Otherwise
the decision carries the exact `SyncWarning` message the user will read in `kubectl describe pod`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.controllers.refusal import Refusal, Why
from syncer.kube.cache import sub_field

Obj = Mapping[str, Any]  # a host RuntimeClass (cached or whole)


@dataclass(frozen=True)
class GateDecision:
    """`allowed`, or refused for `refusal` (refusal.py renders its words). `runtime_class` is the class the
    pod names ("" when none); `pod` the pod's name, for `message`."""

    allowed: bool
    runtime_class: str = ""
    refusal: Refusal | None = None
    pod: str = ""

    @property
    def reason(self) -> str:
        """Why, after `because` (e.g. `the runtime class "x" in the host does not match ...`); "" when allowed."""
        return self.refusal.reason if self.refusal is not None else ""

    @property
    def message(self) -> str:
        """The SyncWarning text: `did not sync pod "<pod>" to host because <reason>` ("" when allowed)."""
        return self.refusal.message(self.pod) if self.refusal is not None else ""


def runtime_class_matches(config: SyncerConfig, host_rc: Obj) -> bool:
    """True when a host RuntimeClass passes the selector (labels that are not a string map never do)."""
    labels = sub_field(host_rc, "metadata", "labels")
    if labels is not None and not _is_string_map(labels):
        return False
    return config.selector.matches(labels)


def _is_string_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def evaluate(config: SyncerConfig, pod_name: str, rc_name: str, host_rc: Obj | None) -> GateDecision:
    """Decide whether pod `pod_name`, naming runtime class `rc_name` ("" = none), may sync, given the host
    RuntimeClass of that name (None when the host has none)."""
    if not config.enabled or config.selector.empty or not rc_name:
        return GateDecision(True, rc_name, pod=pod_name)

    def refuse(why: Why, detail: str = "") -> GateDecision:
        return GateDecision(False, rc_name, Refusal(why, rc_name, detail=detail), pod_name)

    if host_rc is None:
        return refuse(Why.NOT_FOUND)
    if sub_field(host_rc, "metadata", "deletionTimestamp"):
        return refuse(Why.DELETING)
    labels = sub_field(host_rc, "metadata", "labels")
    if labels is not None and not _is_string_map(labels):
        return refuse(Why.UNCHECKABLE, "metadata.labels is not a map of strings")
    if not config.selector.matches(labels):
        return refuse(Why.NO_MATCH)
    return GateDecision(True, rc_name, pod=pod_name)


# vcluster's constants.SystemPriorityClassesAllowList: never gated
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


def evaluate_priority(config: SyncerConfig, pc_name: str, host_pc: Obj | None) -> Refusal | None:
    """vcluster's `applyLimitByPriorityClass`: with `sync.fromHost.priorityClasses.enabled` and a selector, a pod
    naming priority class `pc_name` (not a system one) is refused unless the host PriorityClass `host_pc` (None
    when the host has none) exists, is not being deleted and matches the selector. None when allowed."""
    pcs = config.raw.sync.fromHost.priorityClasses
    if not pcs.enabled or config.priority_selector.empty or not pc_name or pc_name in SYSTEM_PRIORITY_CLASSES:
        return None
    if host_pc is None:
        return Refusal(Why.NOT_FOUND, priority_class=pc_name)
    if sub_field(host_pc, "metadata", "deletionTimestamp"):
        return Refusal(Why.DELETING, priority_class=pc_name)
    labels = sub_field(host_pc, "metadata", "labels")
    if labels is not None and not _is_string_map(labels):
        return Refusal(Why.UNCHECKABLE, priority_class=pc_name, detail="metadata.labels is not a map of strings")
    if not config.priority_selector.matches(labels):
        return Refusal(Why.NO_MATCH, priority_class=pc_name)
    return None
