"""A gated pod's placement narrowed in the virtual cluster reaches the host pod while it is gated.

The API server lets an update of a gated pod add nodeSelector entries and node affinity requirements (kubernetes
pkg/apis/core/validation/validation.go `ValidatePodUpdate`, "validations specific to gated pods"): Kueue admits a
gated pod by narrowing it to its flavour's nodes, then removes its gate. vcluster's pod syncer never updates either
field (pkg/controllers/resources/pods/translate/diff.go `calcSpecDiff`), so the host pod would be scheduled without
them; here they go to the host pod, and what the host cannot take is named in a SyncWarning.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from syncer.controllers.podupdate import gated_placement
from syncer.kube.resources import PODS, RUNTIMECLASSES
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc, rc_config, running_syncer
from tests.test_pod_parity import host
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
GATE = [{"name": "kueue.x-k8s.io/admission"}]
ZONE = {"key": "zone", "operator": "In", "values": ["a"]}
DISK = {"key": "disk", "operator": "Exists"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def node_affinity(*terms: Obj) -> Obj:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(terms)}}}


@contextlib.asynccontextmanager
async def gated_web(c: Clusters) -> AsyncIterator[None]:
    """The syncer running, and the gated pod `web` of class `gvisor` on the host: the class's
    scheduling.nodeSelector `sandbox: yes` merged into it at its create (RuntimeClass admission), its required node
    affinity one term of ZONE."""
    await c.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", scheduling={"nodeSelector": {"sandbox": "yes"}}))
    async with running_syncer(c, rc_config()):
        await c.virtual.create(PODS, pod("web", "gvisor", schedulingGates=GATE,
                                         affinity=node_affinity({"matchExpressions": [ZONE]})), "default")
        await host_pods(c, lambda o: hname("web") in o, "web on the host")
        yield


async def test_a_kueue_style_admission_reaches_the_host_pod_before_its_gate_goes(clusters: Clusters) -> None:
    # the class's nodeSelector stays; the tenant's narrowing and the gate's removal come in one virtual update
    async with gated_web(clusters):
        await clusters.virtual.patch(PODS, "web", {"spec": {
            "nodeSelector": {"pool": "gpu"}, "affinity": node_affinity({"matchExpressions": [ZONE, DISK]}),
            "schedulingGates": None}}, "default")
        await eventually(lambda: not host(clusters, "web")["spec"].get("schedulingGates"), "the host pod ungated")
        spec = host(clusters, "web")["spec"]
        assert (spec["nodeSelector"], spec["affinity"]) == (
            {"sandbox": "yes", "pool": "gpu"}, node_affinity({"matchExpressions": [ZONE, DISK]}))


async def test_what_the_host_pod_cannot_take_is_named_and_the_rest_goes(clusters: Clusters) -> None:
    # a nodeSelector entry the class's fixes otherwise, and required terms a host webhook changed
    async with gated_web(clusters):
        webhook = node_affinity({"matchExpressions": [ZONE, {"key": "host", "operator": "Exists"}]})
        await clusters.host.patch(PODS, hname("web"), {"spec": {"affinity": webhook}}, HOST_NS)
        await clusters.virtual.patch(PODS, "web", {"spec": {
            "nodeSelector": {"sandbox": "no", "pool": "gpu"},
            "affinity": node_affinity({"matchExpressions": [ZONE, DISK]})}}, "default")
        message = ('did not sync the placement of pod "web" to the host: the host allows a gated pod\'s placement '
                   "only additions, so it keeps back nodeSelector sandbox=no (the host pod has sandbox=yes); the "
                   "required node affinity (the host pod's terms are not a part of it)")
        await warnings_for(clusters, "web", lambda evs: any(e["message"] == message for e in evs), "the warning")
        await eventually(lambda: host(clusters, "web")["spec"]["nodeSelector"] == {"sandbox": "yes", "pool": "gpu"},
                         "the entry the host can take")
        assert host(clusters, "web")["spec"]["affinity"] == webhook
        await clusters.virtual.patch(PODS, "web", {"spec": {"schedulingGates": None}}, "default")
        await eventually(lambda: not host(clusters, "web")["spec"].get("schedulingGates"), "the host pod ungated")


async def test_what_is_kept_back_is_told_once_not_on_each_change_of_the_host_pod(clusters: Clusters) -> None:
    # the host pod's status changes (its conditions, copied to the virtual pod) and the tenant's other changes
    # reconcile the pod each time; the warning is written again only when what is kept back changes
    async with gated_web(clusters):
        await clusters.virtual.patch(PODS, "web", {"spec": {"nodeSelector": {"sandbox": "no"}}}, "default")

        def kept(events: list[Obj]) -> list[int]:
            return [e.get("count", 1) for e in events if "keeps back" in e["message"]]
        await warnings_for(clusters, "web", lambda evs: kept(evs) == [1], "the warning, once")
        for i in range(3):
            await clusters.host.patch(PODS, hname("web"), {"status": {"conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": f"m{i}"}]}},
                HOST_NS, subresource="status")
            await wait_for(clusters.virtual, PODS, lambda o, m=f"m{i}": any(
                c.get("message") == m for c in (o["default/web"].get("status") or {}).get("conditions") or []),
                namespace="default", what=f"the host's condition {i} on the virtual pod")
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"app": "web"}}}, "default")
        await host_pods(clusters, lambda o: o[hname("web")]["metadata"]["labels"].get("app") == "web",
                        "the tenant's label on the host pod")
        wider = node_affinity({"matchExpressions": [ZONE, DISK]})  # a requirement added: this one goes
        await clusters.virtual.patch(PODS, "web", {"spec": {"affinity": wider}}, "default")
        await host_pods(clusters, lambda o: o[hname("web")]["spec"].get("affinity") == wider,
                        "the added requirement on the host pod")
        assert kept(await warnings_for(clusters, "web", what="the warnings")) == [1]


def test_the_planned_narrowing_follows_the_rule_for_gated_pods() -> None:
    gated: Obj = {"schedulingGates": GATE}
    # not gated on the host: nothing (the host refuses any change; the virtual server did too)
    assert gated_placement({"nodeSelector": {"a": "1"}}, {}) == ([], [])
    # nothing to add: no write
    assert gated_placement({"nodeSelector": {"a": "1"}}, {**gated, "nodeSelector": {"a": "1", "b": "2"}}) == ([], [])
    # new entries: the whole map replaced after a test of the cache's
    assert gated_placement({"nodeSelector": {"a": "1"}}, {**gated, "nodeSelector": {"b": "2"}}) == ([
        {"op": "test", "path": "/spec/nodeSelector", "value": {"b": "2"}},
        {"op": "replace", "path": "/spec/nodeSelector", "value": {"b": "2", "a": "1"}}], [])
    assert gated_placement({"nodeSelector": {"a": "1"}}, gated) == ([
        {"op": "add", "path": "/spec/nodeSelector", "value": {"a": "1"}}], [])
    # required terms on a host pod without any: set; beside its pod affinity: only the node affinity
    want = node_affinity({"matchExpressions": [ZONE]})
    assert gated_placement({"affinity": want}, gated) == ([{"op": "add", "path": "/spec/affinity", "value": want}],
                                                          [])
    pod_affinity = {"podAffinity": {"x": 1}}
    assert gated_placement({"affinity": want}, {**gated, "affinity": pod_affinity}) == ([
        {"op": "test", "path": "/spec/affinity", "value": pod_affinity},
        {"op": "add", "path": "/spec/affinity/nodeAffinity", "value": want["nodeAffinity"]}], [])
    # validateNodeSelectorTermHasOnlyAdditions: an empty old term stays empty; old requirements first, unchanged
    kept = ["the required node affinity (the host pod's terms are not a part of it)"]
    for old, new, ok in (({}, {"matchFields": [DISK]}, False),
                         ({"matchExpressions": [ZONE]}, {"matchExpressions": [ZONE, DISK]}, True),
                         ({"matchExpressions": [ZONE]}, {"matchExpressions": [DISK, ZONE]}, False),
                         ({"matchFields": [DISK]}, {"matchFields": [DISK], "matchExpressions": [ZONE]}, True),
                         ({"matchFields": [DISK]}, {"matchExpressions": [DISK]}, False)):
        host_pod = {**gated, "affinity": node_affinity(old)}
        ops, why = gated_placement({"affinity": node_affinity(new)}, host_pod)
        assert (why == [], bool(ops)) == (ok, ok), (old, new)
    # a term more or fewer than the host pod's: kept back; preferred terms alone change nothing
    two = node_affinity({"matchExpressions": [ZONE]}, {"matchExpressions": [DISK]})
    assert gated_placement({"affinity": two}, {**gated, "affinity": want}) == ([], kept)
    preferred = {"nodeAffinity": {**want["nodeAffinity"], "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [DISK]}}]}}
    assert gated_placement({"affinity": preferred}, {**gated, "affinity": want}) == ([], [])
