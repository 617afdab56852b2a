"""What the pod reconciler does for one virtual pod: its decision table as a pure function (behaviour.md
section 3; vcluster's `pkg/controllers/resources/pods/syncer.go`, whose three cases are only virtual,
only host, both).

`plan(virtual, host, ...)` returns one action per row below; the reconciler (pods.py) only carries it out.
"ours" is a host pod that carries this vcluster's managed-by label and the virtual pod's name and namespace
in its object annotations; "stale" is ours but synced from an earlier virtual pod of the same name (its
`vcluster.loft.sh/object-uid` annotation names another uid); "orphaned" means its runtime class no longer passes
the gate. The first matching row wins. Every field these decisions read on the host pod is one only the syncer
writes: a tenant's copy of those labels and annotations never reaches the host (podtranslate/trust.py).

| # | virtual pod            | host pod              | action                                                      |
|---|------------------------|-----------------------|-------------------------------------------------------------|
| 1 | malformed              | any                   | Skip: log the problem once per resourceVersion              |
| 2 | any                    | another owner's       | treated as none: it is never touched (a create reports it)  |
| 3 | gone                   | none                  | Forget: drop what is kept for the pod (its tokens)          |
| 4 | gone                   | ours, class allowed   | DeleteHost                                                  |
| 5 | gone                   | ours, orphaned        | LeaveOrphan: log; the user deletes it on the host           |
| 6 | exists                 | stale, class allowed  | DeleteHost (its deletion brings the key back: row 12/13)    |
| 7 | exists                 | stale, orphaned       | RefuseStale: SyncWarning, delete it on the host             |
| 8 | being deleted          | none                  | FinishVirtualDelete: delete the virtual pod with grace 0    |
| 9 | being deleted          | ours, orphaned        | ReportOrphaned: leave both; Orphaned event; tokens renewed  |
|10 | being deleted          | ours, being deleted   | CopyStatus: only the host's status comes back until it goes |
|11 | being deleted          | ours                  | DeleteHost with the virtual pod's grace period              |
|12 | exists, was started    | none                  | FinishVirtualDelete: its host pod vanished (as vcluster)    |
|13 | exists, refused        | none                  | Refuse: SyncWarning with the gate's or the policy's reason |
|14 | exists, admitted       | none                  | Create: translate, wait for host objects, tokens, create    |
|15 | exists                 | ours, orphaned        | ReportOrphaned: no updates; Orphaned event; tokens renewed  |
|16 | bound to another node  | ours, on its node     | FinishVirtualDelete: the pods disagree (vcluster ensureNode) |
|17 | exists                 | ours, no uid annotation | Update: kept; the update writes the annotation back       |
|18 | exists                 | ours                  | Update: patch mutable fields; copy status back; bind node   |

Row 13/14 ask `admit()` (the runtime policy's resolution, which includes the gate, or the gate alone);
the other rows ask `judge(class)`, the gate for the class the pod named, or for a pod that named none the runtime
policy's default its host pod got (for a host pod, the class it was synced with, kept in an annotation:
`synced_class`). Waiting for host objects (section 3.1) is
part of carrying out Create: what is missing is known only after the translation. Row 17: a host pod whose
`object-uid` annotation a host webhook or a manual edit removed is not taken for stale, so its running workload is
not deleted for a missing annotation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from syncer.controllers import translate
from syncer.controllers.gate import GateDecision
from syncer.controllers.policy import Resolution
from syncer.controllers.refusal import Refusal

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Skip:
    """Row 1: the virtual pod cannot be translated; `problem` says why."""

    problem: str


@dataclass(frozen=True)
class Forget:
    """Row 3: neither pod exists; forget what is kept for the pod."""


@dataclass(frozen=True)
class DeleteHost:
    """Rows 4, 6, 11: delete the host pod (`grace`: seconds, None for its own); `why` for the log."""

    why: str
    grace: int | None = None


@dataclass(frozen=True)
class LeaveOrphan:
    """Row 5: the virtual pod is gone and its host pod is orphaned: left in place, logged."""

    refusal: Refusal


@dataclass(frozen=True)
class RefuseStale:
    """Row 7: an orphaned host pod of an earlier virtual pod holds the name: SyncWarning."""


@dataclass(frozen=True)
class FinishVirtualDelete:
    """Rows 8, 12, 16: delete the virtual pod with grace 0; `why` for the log."""

    why: str


@dataclass(frozen=True)
class ReportOrphaned:
    """Rows 9, 15: the pod's class no longer passes the gate: Orphaned event; nothing written but the renewal of its
    service-account tokens (it runs on)."""

    refusal: Refusal


@dataclass(frozen=True)
class CopyStatus:
    """Row 10: both pods are being deleted; the host pod's status still comes back (a Job's controller waits for
    Succeeded or Failed before it lets a pod go, as vcluster's `Sync` says), nothing else is written."""


@dataclass(frozen=True)
class Refuse:
    """Row 13: not synced; SyncWarning with `resolution`'s refusal."""

    resolution: Resolution


@dataclass(frozen=True)
class Create:
    """Row 14: create the host pod (`resolution` says with which class, and whether it is a default)."""

    resolution: Resolution


@dataclass(frozen=True)
class Update:
    """Rows 17, 18: bring the host pod's mutable fields to the translation, copy its status back."""

    decision: GateDecision


Action = (Skip | Forget | DeleteHost | LeaveOrphan | RefuseStale | FinishVirtualDelete | ReportOrphaned | CopyStatus
          | Refuse | Create | Update)


def owns(host: Obj, vcluster_name: str, namespace: str, name: str) -> bool:
    """True when host pod `host` was synced by vcluster `vcluster_name` from virtual pod `namespace/name`."""
    return synced_from(host, vcluster_name) == f"{namespace}/{name}"


def synced_from(host: Obj, vcluster_name: str) -> str | None:
    """`namespace/name` of the virtual pod host pod `host` was synced from by vcluster `vcluster_name`, or None
    when this vcluster did not sync it (the labels and annotations vcluster's `translate.HostMetadata` writes:
    `vcluster.loft.sh/managed-by`, `vcluster.loft.sh/object-namespace` and `vcluster.loft.sh/object-name`).
    A host name is `<name>-x-<namespace>-x-<vcluster>`, so two virtual pods can share one (`b-x-c/a` and
    `c/a-x-b`); this names the one that holds it."""
    meta = host.get("metadata") or {}
    labels, ann = meta.get("labels"), meta.get("annotations")
    if not isinstance(labels, Mapping) or not isinstance(ann, Mapping):
        return None
    namespace, name = ann.get(translate.OBJECT_NAMESPACE), ann.get(translate.OBJECT_NAME)
    if labels.get(translate.MANAGED_BY) != vcluster_name or not isinstance(namespace, str) \
            or not isinstance(name, str) or not namespace or not name:
        return None
    return f"{namespace}/{name}"


def synced_class(host: Obj) -> str:
    """The runtime class host pod `host` was synced with ("" when none): the one its virtual pod named, else the
    runtime policy's default it got (the annotations the syncer wrote when it created the host pod, translate.py
    VIRTUAL_RUNTIME_CLASS and DEFAULT_RUNTIME_CLASS; a forced class is not judged, as in vcluster)."""
    ann = (host.get("metadata") or {}).get("annotations") or {}
    if not isinstance(ann, Mapping):
        return ""
    value = ann.get(translate.VIRTUAL_RUNTIME_CLASS) or ann.get(translate.DEFAULT_RUNTIME_CLASS)
    return value if isinstance(value, str) else ""


def plan(virtual: Obj | None, host: Obj | None, *, vcluster_name: str, namespace: str, name: str,
         judge: Callable[[str], GateDecision], admit: Callable[[], Resolution]) -> Action:
    """The action for virtual pod `namespace/name` (`virtual`, None when gone) and the host pod cached
    under its host name (`host`, None when none), by the table in this module's docstring.

    Args:
        judge: the gate's decision for a runtime class name ("" = none) of this pod.
        admit: the decision for a pod that is not on the host yet (the policy's, or the gate's).
    """
    if virtual is not None:
        problem = translate.pod_shape_error(dict(virtual))
        if problem is not None:
            return Skip(problem)
    if host is not None and not owns(host, vcluster_name, namespace, name):
        host = None
    vmeta = (virtual or {}).get("metadata") or {}
    named = ((virtual or {}).get("spec") or {}).get("runtimeClassName") or ""
    if virtual is None:
        if host is None:
            return Forget()
        decision = judge(synced_class(host))
        return DeleteHost("virtual pod is gone") if decision.refusal is None else LeaveOrphan(decision.refusal)
    if host is not None:
        uid = ((host.get("metadata") or {}).get("annotations") or {}).get(translate.OBJECT_UID)
        if uid and uid != vmeta.get("uid"):  # without the annotation it is not stale (row 17)
            if judge(synced_class(host)).allowed:
                return DeleteHost("it belongs to an earlier virtual pod of the same name")
            return RefuseStale()
    if vmeta.get("deletionTimestamp"):
        if host is None:
            return FinishVirtualDelete("it is being deleted and has no host pod")
        decision = judge(named or synced_class(host))
        if decision.refusal is not None:
            return ReportOrphaned(decision.refusal)
        if (host.get("metadata") or {}).get("deletionTimestamp"):
            return CopyStatus()
        return DeleteHost("virtual pod is being deleted", vmeta.get("deletionGracePeriodSeconds"))
    if host is None:
        if ((virtual.get("status") or {}).get("startTime")):
            return FinishVirtualDelete("its host pod is gone")
        resolution = admit()
        return Create(resolution) if resolution.allowed else Refuse(resolution)
    decision = judge(named or synced_class(host))  # a pod that got the policy's default is judged by it
    if decision.refusal is not None:
        return ReportOrphaned(decision.refusal)
    vnode, hnode = (virtual.get("spec") or {}).get("nodeName"), (host.get("spec") or {}).get("nodeName")
    if vnode and hnode and vnode != hnode:
        return FinishVirtualDelete(f"it is bound to node {vnode} and its host pod runs on node {hnode}")
    return Update(decision)
