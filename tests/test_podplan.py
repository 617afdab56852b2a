"""The pod reconciler's decision table (syncer/controllers/podplan.py, behaviour.md section 3), row by row:
each case is one row of the table, with the inputs that select it and the action the row names."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.controllers import podplan
from syncer.controllers.gate import GateDecision
from syncer.controllers.policy import Resolution
from syncer.controllers.refusal import Refusal, Why

Obj = dict[str, Any]
VC, NS, NAME, UID = "vc", "default", "web", "uid-1"
# the host pod's identity as vcluster writes it (behaviour.md section 3, "Host metadata")
OURS = {"labels": {"vcluster.loft.sh/managed-by": VC},
        "annotations": {"vcluster.loft.sh/object-name": NAME, "vcluster.loft.sh/object-namespace": NS,
                        "vcluster.loft.sh/object-uid": UID,
                        "runtimeclass-syncer.io/virtual-runtime-class": "gvisor"}}
ORPHANED = Refusal(Why.NO_MATCH, "gvisor")  # what the gate says of gvisor in the "orphaned" rows


def virtual(*, deleting: bool = False, started: bool = False, uid: str = UID, malformed: bool = False) -> Obj:
    meta: Obj = {"name": NAME, "namespace": NS, "uid": uid, "resourceVersion": "7"}
    if deleting:
        meta |= {"deletionTimestamp": "2026-11-24T08:00:00Z", "deletionGracePeriodSeconds": 30}
    pod: Obj = {"metadata": meta, "spec": {"runtimeClassName": "gvisor", "containers": [{"name": "a", "image": "b"}]}}
    if started:
        pod["status"] = {"startTime": "2026-11-24T07:00:00Z"}
    if malformed:
        pod["spec"]["containers"] = "not a list"
    return pod


def host(*, uid: str | None = UID, deleting: bool = False, owner: str = VC) -> Obj:
    """A host pod; `uid` None: without the object-uid annotation (a host webhook or a manual edit removed it)."""
    meta: Obj = {"name": f"{NAME}-x-{NS}-x-{VC}", "namespace": "vc-ns",
                 "labels": {**OURS["labels"], "vcluster.loft.sh/managed-by": owner},
                 "annotations": {**OURS["annotations"], "vcluster.loft.sh/object-uid": uid}}
    if uid is None:
        del meta["annotations"]["vcluster.loft.sh/object-uid"]
    if deleting:
        meta["deletionTimestamp"] = "2026-11-24T08:00:00Z"
    return {"metadata": meta, "spec": {}}


def defaulted(pod: Obj) -> Obj:
    """A pod that named no class and got the runtime policy's default, gvisor (behaviour.md section 6); for a host
    pod, as the syncer created it: the default remembered in its annotation."""
    if "runtimeClassName" in pod["spec"]:
        del pod["spec"]["runtimeClassName"]
    else:
        ann = pod["metadata"]["annotations"]
        del ann["runtimeclass-syncer.io/virtual-runtime-class"]
        ann["runtimeclass-syncer.io/default-runtime-class"] = "gvisor"
    return pod


def bound(pod: Obj, node: str) -> Obj:
    pod["spec"]["nodeName"] = node
    return pod


ADMITTED = Resolution(True, "gvisor", pod=NAME)
REFUSED = Resolution(False, "gvisor", refusal=Refusal(Why.NOT_FOUND, "gvisor"), pod=NAME)

# (row, virtual pod, host pod, does the gate allow gvisor, admit() answer, expected action)
ROWS = [
    (1, virtual(malformed=True), host(), True, ADMITTED,
     podplan.Skip("spec.containers is not a list of objects")),
    (2, virtual(), host(owner="another-vcluster"), True, ADMITTED, podplan.Create(ADMITTED)),
    (3, None, None, True, ADMITTED, podplan.Forget()),
    (3, None, host(owner="another-vcluster"), True, ADMITTED, podplan.Forget()),  # row 2 then row 3
    (4, None, host(), True, ADMITTED, podplan.DeleteHost("virtual pod is gone")),
    (5, None, host(), False, ADMITTED, podplan.LeaveOrphan(ORPHANED)),
    (6, virtual(uid="uid-2"), host(), True, ADMITTED,
     podplan.DeleteHost("it belongs to an earlier virtual pod of the same name")),
    (7, virtual(uid="uid-2"), host(), False, ADMITTED, podplan.RefuseStale()),
    (8, virtual(deleting=True), None, True, ADMITTED,
     podplan.FinishVirtualDelete("it is being deleted and has no host pod")),
    (9, virtual(deleting=True), host(), False, ADMITTED, podplan.ReportOrphaned(ORPHANED)),
    (10, virtual(deleting=True), host(deleting=True), True, ADMITTED, podplan.CopyStatus()),
    (11, virtual(deleting=True), host(), True, ADMITTED, podplan.DeleteHost("virtual pod is being deleted", 30)),
    (12, virtual(started=True), None, True, ADMITTED, podplan.FinishVirtualDelete("its host pod is gone")),
    (13, virtual(), None, True, REFUSED, podplan.Refuse(REFUSED)),
    (14, virtual(), None, True, ADMITTED, podplan.Create(ADMITTED)),
    (15, virtual(), host(), False, ADMITTED, podplan.ReportOrphaned(ORPHANED)),
    # a pod that got the policy's default runs with it: judged by it (section 3 "Orphans": pods that use the class)
    (15, defaulted(virtual()), defaulted(host()), False, ADMITTED, podplan.ReportOrphaned(ORPHANED)),
    (9, defaulted(virtual(deleting=True)), defaulted(host()), False, ADMITTED, podplan.ReportOrphaned(ORPHANED)),
    (5, None, defaulted(host()), False, ADMITTED, podplan.LeaveOrphan(ORPHANED)),
    (16, bound(virtual(), "node-2"), bound(host(), "node-1"), True, ADMITTED,
     podplan.FinishVirtualDelete("it is bound to node node-2 and its host pod runs on node node-1")),
    # ours without the uid annotation: not stale, kept (the update writes the annotation back)
    (17, virtual(), host(uid=None), True, ADMITTED, podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    (17, virtual(uid="uid-2"), host(uid=None), True, ADMITTED, podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    (17, virtual(), host(uid=""), True, ADMITTED, podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    (4, None, host(uid=None), True, ADMITTED, podplan.DeleteHost("virtual pod is gone")),
    (11, virtual(deleting=True), host(uid=None), True, ADMITTED,
     podplan.DeleteHost("virtual pod is being deleted", 30)),
    (18, virtual(), host(), True, ADMITTED, podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    (18, defaulted(virtual()), defaulted(host()), True, ADMITTED,
     podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    (18, bound(virtual(), "node-1"), bound(host(), "node-1"), True, ADMITTED,
     podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    (18, virtual(), bound(host(), "node-1"), True, ADMITTED,  # not bound yet: the update binds it
     podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
    # bound in the virtual cluster (a tenant's own binding) while the host pod is still pending: kept; row 16 only
    # when both name a node and they differ
    (18, bound(virtual(), "node-2"), host(), True, ADMITTED, podplan.Update(GateDecision(True, "gvisor", pod=NAME))),
]


@pytest.mark.parametrize(("row", "vpod", "hpod", "gate_allows", "admitted", "expected"), ROWS,
                         ids=[f"row{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_each_row_of_the_table(row: int, vpod: Obj | None, hpod: Obj | None, gate_allows: bool,
                               admitted: Resolution, expected: podplan.Action) -> None:
    asked: list[str] = []

    def judge(rc: str) -> GateDecision:
        asked.append(rc)
        return GateDecision(True, rc, pod=NAME) if gate_allows else GateDecision(False, rc, ORPHANED, NAME)

    assert podplan.plan(vpod, hpod, vcluster_name=VC, namespace=NS, name=NAME, judge=judge,
                        admit=lambda: admitted) == expected
    assert set(asked) <= {"gvisor"}  # the class the pod named, or the one its host pod was synced with


def test_every_row_has_a_case_and_the_docstring_lists_them_all() -> None:
    rows = [line.split("|")[1].strip() for line in (podplan.__doc__ or "").splitlines()
            if line.startswith("|") and line.split("|")[1].strip().isdigit()]
    assert rows == [str(n) for n in range(1, 19)]
    assert {r[0] for r in ROWS} == set(range(1, 19))


def test_a_pod_on_the_host_is_never_asked_to_be_admitted_again() -> None:
    # behaviour.md section 6: the policy judges pods not yet on the host; those on it are left as they are
    def admit() -> Resolution:
        raise AssertionError("admit() called for a pod already on the host")

    action = podplan.plan(virtual(), host(), vcluster_name=VC, namespace=NS, name=NAME,
                          judge=lambda rc: GateDecision(True, rc, pod=NAME), admit=admit)
    assert isinstance(action, podplan.Update)
