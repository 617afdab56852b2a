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

Obj = dict[str, Any]
SELECTOR_PATH = "sync.fromHost.runtimeClasses.selector"


@dataclass(frozen=True)
class GateDecision:
    """`allowed`, or refused with `message` (the SyncWarning text). `runtime_class` is the class the
    pod names ("" when none)."""

    allowed: bool
    runtime_class: str = ""
    message: str = ""


def runtime_class_matches(config: SyncerConfig, host_rc: Obj) -> bool:
    """True when a host RuntimeClass passes the selector (labels that are not a string map never do)."""
    labels = (host_rc.get("metadata") or {}).get("labels")
    if labels is not None and not _is_string_map(labels):
        return False
    return config.selector.matches(labels)


def _is_string_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def evaluate(config: SyncerConfig, vpod: Obj, host_rc: Obj | None) -> GateDecision:
    """Decide whether `vpod` may sync, given the host RuntimeClass it names (None when missing).

    `host_rc` must be the host object named by the pod's `spec.runtimeClassName` (the caller looks it
    up in the host RuntimeClass cache).
    """
    pod = vpod["metadata"]["name"]
    rc_name = (vpod.get("spec") or {}).get("runtimeClassName") or ""
    if not config.enabled or config.selector.empty or not rc_name:
        return GateDecision(True, rc_name)
    prefix = f'did not sync pod "{pod}" to host because the runtime class "{rc_name}"'
    if host_rc is None:
        return GateDecision(False, rc_name, f"{prefix} couldn't be reached in the host: "
                                            f'runtimeclasses.node.k8s.io "{rc_name}" not found')
    if (host_rc.get("metadata") or {}).get("deletionTimestamp"):
        return GateDecision(False, rc_name, f"{prefix} couldn't be reached in the host: runtime class is being deleted")
    labels = (host_rc.get("metadata") or {}).get("labels")
    if labels is not None and not _is_string_map(labels):
        return GateDecision(False, rc_name, f"{prefix} in the host could not be checked against the selector under "
                                            f"'{SELECTOR_PATH}': metadata.labels is not a map of strings")
    if not config.selector.matches(labels):
        return GateDecision(False, rc_name, f"{prefix} in the host does not match the selector under '{SELECTOR_PATH}'")
    return GateDecision(True, rc_name)
