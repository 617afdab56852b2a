"""The host's RuntimeClass admission merges the class's `scheduling.tolerations` into a pod's at the create
(plugin/pkg/admission/runtimeclass `setScheduling` -> pkg/util/tolerations `MergeTolerations`), keeping only the
broader of two tolerations where one tolerates a superset of the other. A toleration of the pod (or an enforced one)
that it dropped must not be written back by the next update: that write changes nothing the scheduler or the
taint manager reads, and vcluster's `calcSpecDiff` makes it too (podtranslate/scheduling.py `admitted_tolerations`).

The test API server's RuntimeClass admission merges as MergeTolerations does (kubesim/admission.py); the virtual one
runs without it here, as a virtual API server whose class differs from the host's (a forced
`sync.toHost.pods.runtimeClassName`, a patched copy) leaves the pod's own tolerations unmerged."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.controllers.podtranslate.scheduling import admitted_tolerations, tolerates_superset
from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.resources import PODS, RUNTIMECLASSES
from syncer.manager import Syncer
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc, rc_config, running_syncer
from tests.test_api_fidelity import IS_SUPERSET, TOLERATIONS
from tests.test_pod_sync import hname, host_pods

Obj = dict[str, Any]

# kubernetes pkg/util/tolerations/tolerations_test.go: the `tolerations` table and TestIsSuperset's expectations
# (each toleration is a superset of itself and of the names listed, of no other), as tests/test_api_fidelity.py holds
# them for the test API server's MergeTolerations
SUPERSET_OF: dict[str, list[str]] = {t: s for t, s in IS_SUPERSET if t in TOLERATIONS}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}  # DefaultTolerationSeconds' (plugin/pkg/admission/defaulttolerationseconds)
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}
BROAD = {"key": "sandbox", "operator": "Exists"}  # the class's: every taint `sandbox`, any value or effect
NARROW = {"key": "sandbox", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"}  # the pod's own


@pytest.mark.parametrize("ss", sorted(SUPERSET_OF))
def test_tolerates_superset_is_kubernetes_is_superset(ss: str) -> None:
    for t, toleration in TOLERATIONS.items():
        assert tolerates_superset(TOLERATIONS[ss], toleration) == (t == ss or t in SUPERSET_OF[ss]), (ss, t)


def test_a_toleration_the_admission_merged_away_is_not_desired_again() -> None:
    # MergeTolerations([NARROW, NOT_READY, UNREACHABLE], [BROAD]) = [NOT_READY, UNREACHABLE, BROAD]
    host = [NOT_READY, UNREACHABLE, BROAD]
    assert admitted_tolerations([NARROW, NOT_READY, UNREACHABLE], host) == [NOT_READY, UNREACHABLE]
    # TestMergeTolerations "merge all": a class tolerating everything drops every toleration of the pod
    every = [TOLERATIONS[n] for n in ("foo-bar-nosched", "foo-baz-nosched")]
    assert admitted_tolerations(every, [TOLERATIONS["all"]]) == []
    # the pod's own broader toleration (on the host) does not hide a narrower one of the pod's it lacks: that one
    # was added in the virtual cluster since (tolerations may be added to a running pod), and is synced
    assert admitted_tolerations([TOLERATIONS["foo"], TOLERATIONS["foo-bar"]], [TOLERATIONS["foo"]]) == [
        TOLERATIONS["foo"], TOLERATIONS["foo-bar"]]
    # a host toleration that is the pod's own with another tolerationSeconds is that one changed in the virtual
    # cluster (podupdate._tolerations replaces it), not a broader one
    assert admitted_tolerations([TOLERATIONS["foo-noexec-0"]], [TOLERATIONS["foo-noexec-10"]]) == [
        TOLERATIONS["foo-noexec-0"]]


def test_a_shorter_toleration_seconds_is_not_redundant() -> None:
    # beside a broader toleration without tolerationSeconds, one with 10 s still evicts the pod after 10 s (the taint
    # manager's getMinTolerationTime takes the shortest of the matching tolerations): not redundant, it is synced,
    # as vcluster's calcSpecDiff syncs it
    assert admitted_tolerations([TOLERATIONS["foo-noexec-10"]], [TOLERATIONS["foo"]]) == [TOLERATIONS["foo-noexec-10"]]
    # with the same tolerationSeconds the broader one evicts as soon: redundant
    assert admitted_tolerations([TOLERATIONS["foo-bar-noexec-10"]], [TOLERATIONS["foo-noexec-10"]]) == []


def pod_writes(c: Clusters, since: int) -> list[str]:
    """The syncer's writes of host pod web since request number `since` (its status and subresources included)."""
    return [f"{m} {p}" for m, p, agent in c.host_server.requests[since:]
            if agent == DEFAULT_USER_AGENT and m in ("PUT", "PATCH", "POST") and f"/pods/{hname('web')}" in p]


def host_tolerations(c: Clusters) -> list[Obj]:
    hp = c.host_server.storage.get(PODS, HOST_NS, hname("web"))
    assert hp is not None
    return list(hp["spec"].get("tolerations") or [])


async def host_status_changed(c: Clusters, syncer: Syncer, message: str) -> None:
    """A host-side change of the pod (the kubelet's status write, as any would be) and the syncer idle after it."""
    await c.host.patch(PODS, hname("web"), {"status": {"message": message}}, HOST_NS, subresource="status")
    await eventually(lambda: (syncer.host_pods.full(f"{HOST_NS}/{hname('web')}") or {}).get("status", {}).get(
        "message") == message, "the host change seen")
    await syncer.wait_idle()


@pytest.mark.parametrize("how", ["own", "enforced"])
async def test_no_host_write_for_a_toleration_the_class_merged_away(clusters: Clusters, how: str) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", scheduling={"tolerations": [BROAD]}))
    doc = rc_config()
    if how == "enforced":
        doc["sync"]["toHost"] = {"pods": {"enforceTolerations": ["sandbox=gvisor:NoSchedule"]}}
    async with running_syncer(clusters, doc) as syncer:
        seen = len(clusters.host_server.requests)
        p = pod("web", "gvisor", tolerations=[NARROW] if how == "own" else [])
        vpod = await clusters.virtual.create(PODS, p, "default")
        assert vpod["spec"]["tolerations"] == [NARROW, NOT_READY, UNREACHABLE] if how == "own" else [
            NOT_READY, UNREACHABLE]  # the virtual API server's DefaultTolerationSeconds
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        # the host's admission: MergeTolerations(pod's, class's), NARROW dropped for BROAD
        assert host_tolerations(clusters) == [NOT_READY, UNREACHABLE, BROAD]
        assert pod_writes(clusters, seen) == []
        for i in range(3):  # each host change reconciles the pod, and finds nothing to write
            await host_status_changed(clusters, syncer, f"change {i}")
        assert pod_writes(clusters, seen) == []
        # a tenant's change is one write, which does not touch the tolerations
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: (clusters.host_server.storage.get(PODS, HOST_NS, hname("web")) or {})["metadata"][
            "labels"].get("v") == "2", "the label on the host")
        await syncer.wait_idle()
        assert len(pod_writes(clusters, seen)) == 1
        assert host_tolerations(clusters) == [NOT_READY, UNREACHABLE, BROAD]


async def test_a_toleration_added_in_the_virtual_cluster_still_reaches_the_host(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", scheduling={"tolerations": [BROAD]}))
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        # BROAD covers it, but for 60 s only: the taint manager evicts after the shortest matching toleration
        evict = {"key": "sandbox", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
        other = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/tolerations/-", "value": t}
                                                   for t in (evict, other)], "default", patch_type="json")
        await eventually(lambda: len(host_tolerations(clusters)) == 5, "the added tolerations on the host")
        await syncer.wait_idle()
        assert host_tolerations(clusters) == [NOT_READY, UNREACHABLE, evict, other, BROAD]
        assert len(pod_writes(clusters, seen)) == 1
        await host_status_changed(clusters, syncer, "after")
        assert len(pod_writes(clusters, seen)) == 1
