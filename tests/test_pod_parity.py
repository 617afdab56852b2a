"""The rest of vcluster's pod sync, over real HTTP with the syncer running: labels and annotations both ways,
readiness gates, namespace labels, the owner reference to the vcluster Service, scheduling gates, tolerations,
ephemeral containers (`kubectl debug`), in-place resize and host paths (docs/vcluster-parity.md)."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pytest

from kubesim.faults import Fault
from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.clock import FakeClock
from syncer.kube.resources import EVENTS, NAMESPACES, PODS, RUNTIMECLASSES, SERVICES
from syncer.manager import Syncer
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, hold_watch_down, pod, rc, rc_config, running_syncer
from tests.test_pod_lifecycle import kubelet, running, virtual_pod
from tests.test_pod_sync import hname, host_pods

Obj = dict[str, Any]


def host(c: Clusters, name: str) -> Obj:
    """The host pod of virtual pod default/`name` as stored (the test reads the server's storage directly)."""
    hp = c.host_server.storage.get(PODS, HOST_NS, hname(name))
    assert hp is not None, f"no host pod for {name}"
    return hp


def vstored(c: Clusters, name: str, ns: str = "default") -> Obj:
    vp = c.virtual_server.storage.get(PODS, ns, name)
    assert vp is not None
    return vp


def condition(p: Obj, kind: str) -> Obj:
    return next((x for x in (p.get("status") or {}).get("conditions") or [] if x.get("type") == kind), {})


GATE = "example.com/lb"


async def gated_web(c: Clusters, host_conditions: list[Obj]) -> None:
    """Create virtual pod default/web with a readiness gate of type GATE, give its host pod `host_conditions` (as
    the kubelet would) and wait until the virtual pod shows them."""
    await c.virtual.create(PODS, pod("web", readinessGates=[{"conditionType": GATE}]), "default")
    await host_pods(c, lambda o: hname("web") in o, "web on the host")
    await c.host.patch(PODS, hname("web"), {"status": {"phase": "Pending", "conditions": host_conditions}}, HOST_NS,
                       subresource="status")
    await eventually(lambda: all(condition(vstored(c, "web"), x["type"]) == x for x in host_conditions),
                     "the host's conditions on the virtual pod")


async def cache_behind_own_write(c: Clusters, syncer: Syncer, held: Fault, host_write: Obj,
                                 subresource: str | None = None) -> None:
    """With the syncer's write to host pod web held on its way (`held`, already hit): make another writer's merge
    patch `host_write`, wait until the syncer's cache holds it, then hold the host pod watch down (on the injected
    clock) and let the syncer's write go: the cache is then newer than what the write was planned from, and older
    than the write."""
    await c.host.patch(PODS, hname("web"), host_write, HOST_NS, subresource=subresource)
    rv = host(c, "web")["metadata"]["resourceVersion"]
    key = f"{HOST_NS}/{hname('web')}"
    await eventually(lambda: (syncer.host_pods.full(key) or {}).get("metadata", {}).get("resourceVersion") == rv,
                     "the other writer's write in the syncer's cache")
    await hold_watch_down(c.host_server, "pods")
    held.release()


async def status_copy_keeps_the_gate(c: Clusters, syncer: Syncer, clock: FakeClock, caplog: pytest.LogCaptureFixture,
                                     host_status: Obj, arrives: Obj, gate: Obj) -> None:
    """With the virtual pod watch held down after a controller set `gate` on virtual pod web: the kubelet writes
    `host_status` on web's host pod; the status copy, planned from the stale cache, must fail its guard (a routine
    retry, logged at info), not undo `gate`; once the watch is back (the injected clock advanced), condition
    `arrives` reaches the virtual pod beside `gate`."""
    seen = len(c.virtual_server.requests)
    await c.host.patch(PODS, hname("web"), {"status": host_status}, HOST_NS, subresource="status")
    await eventually(lambda: ("PATCH", "/api/v1/namespaces/default/pods/web/status", DEFAULT_USER_AGENT)
                     in c.virtual_server.requests[seen:], "the status copy from the stale cache")
    await syncer.wait_idle()
    assert condition(vstored(c, "web"), gate["type"]) == gate
    assert "virtual pod default/web changed since the cache saw it" in caplog.text  # a routine retry
    clock.advance(60)  # the watch back, and the retry's backoff over
    await eventually(lambda: condition(vstored(c, "web"), arrives["type"]) == arrives,
                     "the host's condition on the virtual pod")
    assert condition(vstored(c, "web"), gate["type"]) == gate


async def test_labels_and_annotations_travel_both_ways(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config()):
        p = pod("web")
        p["metadata"]["labels"], p["metadata"]["annotations"] = {"app": "web", "tier": "a"}, {"note": "x"}
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        # a host webhook, CNI or mesh adds a label and an annotation: they reach the virtual pod
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"labels": {"mesh": "on"}, "annotations": {
            "k8s.v1.cni.cncf.io/network-status": "[]"}}}, HOST_NS)
        await eventually(lambda: vstored(clusters, "web")["metadata"]["labels"].get("mesh") == "on"
                         and "k8s.v1.cni.cncf.io/network-status" in vstored(clusters, "web")["metadata"]["annotations"],
                         "the host's label and annotation on the virtual pod")
        # a tenant changes its own: they reach the host, and the host's additions stay
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "b"}, "annotations": {
            "note": None}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "b"
                         and "note" not in host(clusters, "web")["metadata"]["annotations"],
                         "the tenant's change on the host")
        h = host(clusters, "web")["metadata"]
        assert h["labels"]["mesh"] == "on" and h["annotations"]["k8s.v1.cni.cncf.io/network-status"] == "[]"
        assert h["annotations"]["vcluster.loft.sh/labels"] == 'app="web"\nmesh="on"\ntier="b"'



async def test_annotations_fixed_once_a_pod_exists_stay_where_they_are(clusters: Clusters) -> None:
    # A host webhook (or the host API server's AppArmor version skew, applyAppArmorVersionSkew) gives the host pod
    # an AppArmor annotation at the create. The virtual API server refuses adding one to an existing pod
    # (ValidatePodSpecificAnnotationUpdates: "may not add AppArmor annotations"), so copying it back failed every
    # update of the virtual pod and, with it, every later host write of the pod: such keys go neither way.
    apparmor = "container.apparmor.security.beta.kubernetes.io/c"

    def profile(p: Obj) -> None:
        p["metadata"]["annotations"] = {**(p["metadata"].get("annotations") or {}), apparmor: "runtime/default"}
    clusters.host_server.pod_create_webhooks.append(profile)
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"labels": {"mesh": "on"}}}, HOST_NS)
        await eventually(lambda: vstored(clusters, "web")["metadata"].get("labels", {}).get("mesh") == "on",
                         "the host's label on the virtual pod")
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "a"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "a",
                         "the tenant's label on the host")
        await syncer.wait_idle()
    assert apparmor not in (vstored(clusters, "web")["metadata"].get("annotations") or {})
    assert host(clusters, "web")["metadata"]["annotations"][apparmor] == "runtime/default"

async def test_a_host_write_between_the_syncers_read_and_its_write_is_kept(clusters: Clusters) -> None:
    # A host controller (a mesh, a CNI) labels the host pod while the syncer's cache of host pods is behind (its
    # watch down, here on the injected clock), and the tenant changes a label: the syncer plans its host write
    # from the cache, which lacks the host's label. A write of whole maps would drop it for good: the base does not
    # hold it, so no later sync brings it back (vcluster's applyObjectWithPatch updates the whole object with its
    # resourceVersion as a precondition instead: a 409). Per-key writes keep it, and it comes back to the virtual
    # pod.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        p = pod("web")
        p["metadata"]["labels"], p["metadata"]["annotations"] = {"app": "web"}, {"note": "x"}
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"labels": {"mesh": "on"}, "annotations": {
            "sidecar.istio.io/status": "{}"}}}, HOST_NS)
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"app": "web2"}, "annotations": {
            "note": "y"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("app") == "web2",
                         "the tenant's label on the host, written from the stale cache")
        clusters.host_server.expire_history()  # the watch comes back with a list: the state now, not each step
        clock.advance(60)
        await eventually(lambda: vstored(clusters, "web")["metadata"]["labels"].get("mesh") == "on"
                         and vstored(clusters, "web")["metadata"]["annotations"].get("sidecar.istio.io/status")
                         == "{}", "the host's label and annotation on the virtual pod")
        h = host(clusters, "web")["metadata"]
        assert (h["labels"]["app"], h["labels"]["mesh"]) == ("web2", "on")
        assert (h["annotations"]["note"], h["annotations"]["sidecar.istio.io/status"]) == ("y", "{}")
        await eventually(lambda: host(clusters, "web")["metadata"]["annotations"]["vcluster.loft.sh/labels"]
                         == 'app="web2"\nmesh="on"', "the base holding the host's label")


async def test_an_annotation_holding_an_ampersand_is_changed_on_a_host_before_1_35(clusters: Clusters) -> None:
    # The change of an annotation tests its old value first. A host before 1.35 compares a tested string byte for
    # byte with its own (Go's) encoding of the pod, which writes & < > as \u escapes (evanphx/json-patch v4.12.0), so
    # the patch must write them so too; otherwise every change of such an annotation (a URL with a query) is a 422,
    # told to the tenant as a refusal, and the pod's other changes never reach the host with it.
    assert clusters.host_server.minor < 35
    async with running_syncer(clusters, rc_config()) as syncer:
        p = pod("web")
        p["metadata"]["annotations"] = {"dashboard": "https://grafana.example/d?var-pod=web&from=now-1h"}
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "b"}, "annotations": {
            "dashboard": "https://grafana.example/d?var-pod=web&from=now-6h"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["annotations"]["dashboard"].endswith("now-6h")
                         and host(clusters, "web")["metadata"]["labels"].get("tier") == "b",
                         "the changed annotation and the label on the host")
        events = (await clusters.virtual.list(EVENTS, "default"))["items"]
        assert [e["message"] for e in events if e.get("reason") == "SyncError"] == []


async def test_a_host_change_of_the_same_key_in_between_is_retried_not_told_as_a_refusal(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # The host changes the very label the tenant changes while the syncer's cache is behind: the write planned from
    # the cache no longer applies (its `test` of the value the cache holds fails: kube-apiserver's generic 422 of
    # applyJSPatch), and is planned again from the fresh cache. It is not a refusal by the host: no SyncError.
    caplog.set_level(logging.INFO)
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        p = pod("web")
        p["metadata"]["labels"] = {"app": "web", "tier": "a"}
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"labels": {"tier": "host"}}}, HOST_NS)
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "b"}}}, "default")
        path = f"/api/v1/namespaces/{HOST_NS}/pods/{hname('web')}"
        await eventually(lambda: ("GET", path, DEFAULT_USER_AGENT) in clusters.host_server.requests,
                         "the syncer's read of the host pod after its write did not apply")
        await syncer.wait_idle()
        clock.advance(60)  # the watch back, and the retry's backoff over
        # both changed since the base: the virtual pod's value wins (diff.go LabelsBidirectionalUpdateFunction)
        await eventually(lambda: host(clusters, "web")["metadata"]["annotations"].get("vcluster.loft.sh/labels")
                         == 'app="web"\ntier="b"' and host(clusters, "web")["metadata"]["labels"]["tier"] == "b",
                         "the tenant's value on the host, with the base that says so")
        events = (await clusters.virtual.list(EVENTS, "default"))["items"]
        assert [e["message"] for e in events if e.get("reason") == "SyncError"] == []
    # an operator sees a routine retry, not a refusal
    assert f"host pod {HOST_NS}/{hname('web')} changed since the cache saw it" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "422" in r.getMessage()]


async def test_a_readiness_gate_set_in_the_virtual_cluster_makes_the_pod_ready(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # A controller in the virtual cluster (a load balancer's, say) sets the gate's condition on the virtual pod;
    # the host kubelet reads it from the host pod, so it must get there, or the pod is never Ready.
    caplog.set_level(logging.INFO)
    async with running_syncer(clusters, rc_config()), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", readinessGates=[{"conditionType": "example.com/lb"}]),
                                      "default")
        vp = await virtual_pod(clusters, "web", running, "web Running")
        await eventually(lambda: condition(vstored(clusters, "web"), "Ready").get("reason")
                         == "ReadinessGatesNotReady", "web not ready for its gate")
        # the status copy that comes with the binding waits for the binding's echo: planned from the cache before
        # the binding, its resourceVersion guard (no conditions yet) would fail and be retried
        assert "changed since the cache saw it" not in caplog.text
        vp = vstored(clusters, "web")
        assert condition(vp, "Ready")["message"] == ('corresponding condition of pod readiness gate '
                                                     '"example.com/lb" does not exist.')
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vp["status"]["conditions"], {"type": "example.com/lb", "status": "True"}]}}, "default",
            subresource="status")
        # the status write alone wakes the pod (not a recheck 10 s later)
        await eventually(lambda: condition(vstored(clusters, "web"), "Ready").get("status") == "True",
                         "web Ready once its gate is True", timeout=5)
    assert condition(host(clusters, "web"), "example.com/lb")["status"] == "True"
    assert condition(vstored(clusters, "web"), "example.com/lb")["status"] == "True"


async def test_a_refused_debug_container_does_not_hold_back_the_readiness_gate(clusters: Clusters) -> None:
    # The host namespace enforces Pod Security baseline, which refuses a privileged debug container; the pod keeps
    # it for good (ephemeral containers cannot be removed), so that write is refused on every reconcile. The gate's
    # condition a controller in the virtual cluster sets must still reach the host pod, or it is never Ready.
    await clusters.host.patch(NAMESPACES, HOST_NS, {"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}})
    async with running_syncer(clusters, rc_config()), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", readinessGates=[{"conditionType": "example.com/lb"}]),
                                      "default")
        await virtual_pod(clusters, "web", running, "web Running")
        debug = {"name": "debugger", "image": "busybox:1.36", "securityContext": {"privileged": True}}
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            debug]}], "default", patch_type="json", subresource="ephemeralcontainers")
        await eventually(lambda: any(e["reason"] == "SyncError" for e in clusters.virtual_server.storage.objects(
            EVENTS).values()), "the debug container refused (SyncError)")
        vp = vstored(clusters, "web")
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vp["status"]["conditions"], {"type": "example.com/lb", "status": "True"}]}}, "default",
            subresource="status")
        await eventually(lambda: condition(host(clusters, "web"), "example.com/lb").get("status") == "True",
                         "the gate's condition on the host pod", timeout=5)
        await eventually(lambda: condition(vstored(clusters, "web"), "Ready").get("status") == "True",
                         "web Ready", timeout=5)


async def test_a_tolerations_seconds_changed_in_the_virtual_pod_replace_the_hosts(clusters: Clusters) -> None:
    # Kubernetes lets a pod change an existing toleration's tolerationSeconds (validateOnlyAddedTolerations); the
    # taint manager evicts after the smallest matching one, so the host must not keep the old one beside the new
    gpu = {"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, pod("web", tolerations=[gpu]), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        tols = (await clusters.virtual.get(PODS, "web", "default"))["spec"]["tolerations"]
        longer = [{**t, "tolerationSeconds": 600} if t.get("key") == "gpu" else t for t in tols]
        await clusters.virtual.patch(PODS, "web", {"spec": {"tolerations": longer}}, "default")
        await eventually(lambda: [t.get("tolerationSeconds") for t in host(clusters, "web")["spec"]["tolerations"]
                                  if t.get("key") == "gpu"] == [600], "only the new time on the host pod")


async def test_a_virtual_metadata_refused_write_does_not_hold_back_the_readiness_gate(clusters: Clusters) -> None:
    # A host controller annotates the host pod, which the syncer copies back to the virtual pod; a policy in the
    # virtual cluster refuses pod updates. That copy is refused on every reconcile; the gate's condition a virtual
    # controller sets (a status write, which the policy lets through) must still reach the host pod.
    from kubesim.status import forbidden

    def immutable(new: Obj, old: Obj) -> None:  # a validating webhook in the virtual cluster
        if (new["metadata"].get("annotations") or {}) != (old["metadata"].get("annotations") or {}):
            raise forbidden(PODS, new["metadata"]["name"], 'admission webhook "pods.example.com" denied the '
                                                           "request: pods are not edited here")
    clusters.virtual_server.pod_update_webhooks.append(immutable)
    async with running_syncer(clusters, rc_config()), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", readinessGates=[{"conditionType": "example.com/lb"}]),
                                      "default")
        await virtual_pod(clusters, "web", running, "web Running")
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"annotations": {"host.example.com/seen": "1"}}},
                                  HOST_NS)
        vp = vstored(clusters, "web")
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vp["status"]["conditions"], {"type": "example.com/lb", "status": "True"}]}}, "default",
            subresource="status")
        await eventually(lambda: condition(host(clusters, "web"), "example.com/lb").get("status") == "True",
                         "the gate's condition on the host pod", timeout=5)
    assert "host.example.com/seen" not in (vstored(clusters, "web")["metadata"].get("annotations") or {})


async def test_rapid_changes_wait_for_the_echo_of_the_syncers_own_update(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # A tenant relabels a pod 30 times in a row. A reconcile that comes before the watch event of the syncer's own
    # last update (its echo) would plan from a cache without it, and its `test`s would fail (a 422, a read of the
    # host pod, a retry with backoff); it waits for the echo instead, which reconciles the pod.
    caplog.set_level(logging.INFO)
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        seen = len(clusters.host_server.requests)
        for i in range(30):
            await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"rev": str(i)}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("rev") == "29",
                         "the last label on the host")
        await syncer.wait_idle()
    ours = [(m, p) for m, p, agent in clusters.host_server.requests[seen:] if agent == DEFAULT_USER_AGENT]
    assert ("GET", f"/api/v1/namespaces/{HOST_NS}/pods/{hname('web')}") not in ours
    assert "changed since the cache saw it" not in caplog.text
    assert 1 <= len([m for m, _ in ours if m == "PATCH"]) <= 30
    assert host(clusters, "web")["metadata"]["annotations"]["vcluster.loft.sh/labels"] == 'rev="29"'


async def test_a_gate_condition_write_that_changes_nothing_on_the_host_does_not_hold_later_updates(
        clusters: Clusters) -> None:
    # A 1.34 virtual cluster writes a condition's observedGeneration; a 1.32 host drops it (its
    # PodObservedGenerationTracking is off: dropDisabledPodStatusFields), so the syncer's write of the gate's
    # condition changes nothing there: no new resourceVersion, no watch event. The next update must not wait for
    # an echo that never comes, or the tenant's later changes never reach the host pod.
    clusters.virtual_server.minor = 34
    assert clusters.host_server.minor < 34
    gate = {"type": "example.com/lb", "status": "True", "observedGeneration": 1}
    async with running_syncer(clusters, rc_config()) as syncer:
        await gated_web(clusters, [{"type": "PodScheduled", "status": "True"}])
        await syncer.wait_idle()
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vstored(clusters, "web")["status"]["conditions"], gate]}}, "default", subresource="status")
        await eventually(lambda: condition(host(clusters, "web"), gate["type"]) == {"type": gate["type"],
                                                                                    "status": "True"},
                         "the gate's condition on the host, without the field it drops")
        await syncer.wait_idle()
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "b"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "b",
                         "the tenant's later label on the host")
        await syncer.wait_idle()
    # nor is the condition written again on each later reconcile of the pod: the host's condition lacks only the
    # field its version drops, so it agrees with the virtual one
    status = f"/api/v1/namespaces/{HOST_NS}/pods/{hname('web')}/status"
    assert [(m, p) for m, p, agent in clusters.host_server.requests[seen:]
            if agent == DEFAULT_USER_AGENT and p == status] == []


async def test_a_host_write_a_webhook_undoes_does_not_hold_later_updates(clusters: Clusters) -> None:
    # A host policy engine's mutate rule takes out a toleration tenants may not add (on update too): the syncer's
    # write of the pod's tolerations then changes nothing (kube-apiserver stores no new resourceVersion for an update
    # that changes nothing, and sends no watch event). The next update must not wait for an echo that never comes,
    # or the tenant's later changes never reach the host pod.
    def no_gpu(new: Obj, old: Obj) -> None:
        new["spec"]["tolerations"] = [t for t in new["spec"].get("tolerations") or [] if t.get("key") != "gpu"]
    clusters.host_server.pod_update_webhooks.append(no_gpu)
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        before = host(clusters, "web")["metadata"]["resourceVersion"]
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/tolerations/-", "value": {
            "key": "gpu", "operator": "Exists"}}], "default", patch_type="json")
        await eventually(lambda: ("PATCH", f"/api/v1/namespaces/{HOST_NS}/pods/{hname('web')}", DEFAULT_USER_AGENT)
                         in clusters.host_server.requests[seen:], "the syncer's write of the toleration")
        await syncer.wait_idle()
        assert host(clusters, "web")["metadata"]["resourceVersion"] == before  # it changed nothing
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "b"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "b",
                         "the tenant's later label on the host")


async def test_a_gate_condition_is_not_added_twice_when_the_kubelet_wrote_while_it_was_on_its_way(
        clusters: Clusters) -> None:
    # The syncer adds the gate's condition (held on its way to the host); the kubelet writes the conditions
    # meanwhile, and the cache sees that before the syncer's own write. The next reconcile plans from a cache
    # without the condition the syncer added: an append must test the list it appends to, or the condition is
    # there twice, and the kubelet, which reads the first, keeps seeing the stale one.
    clock = FakeClock()
    scheduled = {"type": "PodScheduled", "status": "True"}
    containers = {"type": "ContainersReady", "status": "False"}
    gate = {"type": "example.com/lb", "status": "False"}
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await gated_web(clusters, [scheduled])
        await syncer.wait_idle()
        held = clusters.host_server.faults.hold(verb="patch", resource="pods/status", agent=DEFAULT_USER_AGENT)
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vstored(clusters, "web")["status"]["conditions"], gate]}}, "default", subresource="status")
        await held.wait_hits(1)  # the syncer's add of the gate's condition, not applied yet
        await cache_behind_own_write(clusters, syncer, held, {"status": {"conditions": [scheduled, containers]}},
                                     "status")
        await eventually(lambda: condition(host(clusters, "web"), gate["type"]) == gate, "the gate's condition added")
        await syncer.wait_idle()
        clock.advance(60)  # the watch back, and any retry's backoff over
        await syncer.wait_idle()
        assert host(clusters, "web")["status"]["conditions"] == [scheduled, containers, gate]


async def test_a_debug_container_added_again_from_a_cache_behind_the_add_is_no_refusal(clusters: Clusters) -> None:
    # As above for `kubectl debug`: the syncer's add of the debug container is held on its way; a host write lands
    # meanwhile and the cache sees it before the add. The next reconcile plans the add again, which the host refuses
    # (the name is there already: 422): the syncer's own earlier write, not a refusal for the tenant.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            {"name": "first", "image": "busybox:1.36"}]}], "default", patch_type="json",
            subresource="ephemeralcontainers")
        await eventually(lambda: [c["name"] for c in host(clusters, "web")["spec"].get("ephemeralContainers") or []]
                         == ["first"], "the first debug container on the host pod")
        await syncer.wait_idle()
        held = clusters.host_server.faults.hold(verb="patch", resource="pods/ephemeralcontainers",
                                                agent=DEFAULT_USER_AGENT)
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers/-", "value": {
            "name": "debugger", "image": "busybox:1.36"}}], "default", patch_type="json",
            subresource="ephemeralcontainers")
        await held.wait_hits(1)  # the syncer's add of the second, appended to the list, not applied yet
        await cache_behind_own_write(clusters, syncer, held, {"metadata": {"labels": {"mesh": "on"}}})
        await eventually(lambda: [c["name"] for c in host(clusters, "web")["spec"].get("ephemeralContainers") or []]
                         == ["first", "debugger"], "the second debug container on the host pod")
        await syncer.wait_idle()
        clock.advance(60)
        await syncer.wait_idle()
        events = (await clusters.virtual.list(EVENTS, "default"))["items"]
        assert [e["message"] for e in events if e.get("reason") == "SyncError"] == []
        assert [c["name"] for c in host(clusters, "web")["spec"]["ephemeralContainers"]] == ["first", "debugger"]


async def test_a_gate_condition_written_from_a_stale_cache_keeps_the_kubelets_conditions(clusters: Clusters) -> None:
    # The kubelet writes the host pod's conditions at any time. A gate's condition the syncer adds while its cache
    # is behind (the watch down, on the injected clock) is written alone, after a test of the list it appends to,
    # which fails here and is retried once the watch is back; a write of the whole list, taken from the cache, would
    # set the kubelet's newer ContainersReady back to False until its next status sync.
    clock = FakeClock()
    gate = {"type": "example.com/lb", "status": "True"}
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        scheduled = {"type": "PodScheduled", "status": "True"}
        await gated_web(clusters, [scheduled, {"type": "ContainersReady", "status": "False"}])
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.host.patch(PODS, hname("web"), {"status": {"conditions": [
            scheduled, {"type": "ContainersReady", "status": "True"}]}}, HOST_NS, subresource="status")
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vstored(clusters, "web")["status"]["conditions"], gate]}}, "default", subresource="status")
        path = f"/api/v1/namespaces/{HOST_NS}/pods/{hname('web')}/status"
        await eventually(lambda: ("PATCH", path, DEFAULT_USER_AGENT) in clusters.host_server.requests[seen:],
                         "the gate's condition written from the stale cache")
        await syncer.wait_idle()
        assert host(clusters, "web")["status"]["conditions"][1] == {"type": "ContainersReady", "status": "True"}
        clock.advance(60)  # the watch back, and the retry's backoff over
        await eventually(lambda: condition(host(clusters, "web"), "example.com/lb") == gate,
                         "the gate's condition on the host")
        assert host(clusters, "web")["status"]["conditions"] == [
            scheduled, {"type": "ContainersReady", "status": "True"}, gate]


async def test_a_gate_condition_the_kubelet_moved_since_the_cache_saw_it_is_written_where_it_is_now(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # The gate's condition is written at the index the cache holds it, after a `test` that it is still there: the
    # kubelet, which rewrites the list, has put Initialized first since (the syncer's watch down), so that index now
    # holds ContainersReady. The write does not apply (422), and is made again where the watch shows the condition.
    caplog.set_level(logging.INFO)
    clock = FakeClock()
    scheduled, containers = {"type": "PodScheduled", "status": "True"}, {"type": "ContainersReady", "status": "True"}
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await gated_web(clusters, [scheduled, containers])
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vstored(clusters, "web")["status"]["conditions"], {"type": "example.com/lb", "status": "False"}]}},
            "default", subresource="status")
        await eventually(lambda: condition(host(clusters, "web"), "example.com/lb").get("status") == "False",
                         "the gate's condition on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        initialized = {"type": "Initialized", "status": "True"}
        await clusters.host.patch(PODS, hname("web"), {"status": {"conditions": [
            initialized, scheduled, containers, {"type": "example.com/lb", "status": "False"}]}}, HOST_NS,
            subresource="status")
        conditions = [c for c in vstored(clusters, "web")["status"]["conditions"] if c["type"] != "example.com/lb"]
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *conditions, {"type": "example.com/lb", "status": "True"}]}}, "default", subresource="status")
        await eventually(lambda: f"host pod {HOST_NS}/{hname('web')} changed since the cache saw it" in caplog.text,
                         "the write from the stale cache found not to apply")
        assert host(clusters, "web")["status"]["conditions"][2] == containers
        clock.advance(60)  # the watch back, and the retry's backoff over
        await eventually(lambda: condition(host(clusters, "web"), "example.com/lb").get("status") == "True",
                         "the gate's condition on the host, where it is now")
        assert host(clusters, "web")["status"]["conditions"] == [
            initialized, scheduled, containers, {"type": "example.com/lb", "status": "True"}]


async def test_a_gate_condition_a_virtual_controller_set_behind_the_cache_is_not_undone(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # The other way: the host status is copied to the virtual pod with its conditions written whole, the gate's taken
    # from the cache of virtual pods. A load balancer's controller sets the gate's condition while that cache is
    # behind (the virtual watch down) and the kubelet changes the host status: the copy must not undo the
    # controller's write (vcluster's Update of the virtual status would get a 409 for it), or the pod is not Ready.
    caplog.set_level(logging.INFO)
    clock = FakeClock()
    scheduled = {"type": "PodScheduled", "status": "True"}
    gate = {"type": "example.com/lb", "status": "True"}
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await gated_web(clusters, [scheduled])
        await syncer.wait_idle()
        await hold_watch_down(clusters.virtual_server, "pods")
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            *vstored(clusters, "web")["status"]["conditions"], gate]}}, "default", subresource="status")
        containers = {"type": "ContainersReady", "status": "True"}
        await status_copy_keeps_the_gate(clusters, syncer, clock, caplog, {"conditions": [scheduled, containers]},
                                         containers, gate)


async def test_the_first_gate_condition_set_behind_the_cache_before_any_other_condition_is_not_undone(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # As above, in the pod's first moments: the virtual pod has no conditions yet when the controller sets its gate's
    # and the scheduler then binds the host pod. A JSON patch cannot test that a list is absent, so the copy is
    # guarded by the virtual pod's resourceVersion as the cache has it.
    caplog.set_level(logging.INFO)
    clock = FakeClock()
    gate = {"type": "example.com/lb", "status": "True"}
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web", readinessGates=[{"conditionType": GATE}]), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        assert "conditions" not in vstored(clusters, "web")["status"]
        await hold_watch_down(clusters.virtual_server, "pods")
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [gate]}}, "default", subresource="status")
        scheduled = {"type": "PodScheduled", "status": "True"}
        await status_copy_keeps_the_gate(clusters, syncer, clock, caplog, {"phase": "Pending", "conditions": [
            scheduled]}, scheduled, gate)


async def test_a_readiness_gate_naming_a_kubelet_condition_does_not_write_it_on_the_host(clusters: Clusters) -> None:
    # The API server takes any qualified name as a gate's conditionType; a tenant listing `Ready` and `PodScheduled`
    # must not set those on the host pod (they are the host kubelet's and scheduler's: k8s.io/api core/v1 types.go
    # PodConditionType); only the gate's own condition goes to the host.
    gates = [{"conditionType": "Ready"}, {"conditionType": "PodScheduled"}, {"conditionType": "example.com/lb"}]
    async with running_syncer(clusters, rc_config()), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", readinessGates=gates), "default")
        vp = await virtual_pod(clusters, "web", running, "web Running")
        forged = [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "False",
                                                        "reason": "Unschedulable"},
                  {"type": "example.com/lb", "status": "False"}]
        await clusters.virtual.patch(PODS, "web", {"status": {"conditions": [
            c for c in vp["status"]["conditions"] if c["type"] not in ("Ready", "PodScheduled")] + forged}},
            "default", subresource="status")
        await eventually(lambda: condition(host(clusters, "web"), "example.com/lb").get("status") == "False",
                         "the gate's own condition on the host")
    hp = host(clusters, "web")
    assert condition(hp, "PodScheduled")["status"] == "True"
    assert condition(hp, "Ready")["status"] == "False"  # its gate example.com/lb is False


async def test_namespace_labels_and_the_vcluster_service_as_owner(clusters: Clusters) -> None:
    # vcluster's HostLabelNamespace (tenant NetworkPolicies and namespaceSelectors select on it) and
    # GetOwnerReference (uninstalling the vcluster removes its tenants' pods)
    # The relabel comes before anything else changes the pods: the host pod as just created must not be taken as up
    # to date with the namespace (on the injected clock no later recheck would hide that).
    key = "vcluster.loft.sh/ns-label-test-x-" + hashlib.sha256(b"team").hexdigest()[:10]
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "shop", "labels": {"team": "a"}}})
    async with running_syncer(clusters, rc_config(), clock=FakeClock()):
        await clusters.virtual.create(PODS, pod("web", namespace="shop"), "shop")
        hp = (await host_pods(clusters, lambda o: hname("web", "shop") in o, "web on the host"))[hname("web", "shop")]
        assert hp["metadata"]["labels"][key] == "a"
        svc = await clusters.host.get(SERVICES, VCLUSTER, HOST_NS)
        assert hp["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": VCLUSTER,
                                                      "uid": svc["metadata"]["uid"], "controller": False}]
        await clusters.virtual.patch(NAMESPACES, "shop", {"metadata": {"labels": {"team": "b"}}})
        await host_pods(clusters, lambda o: o[hname("web", "shop")]["metadata"]["labels"].get(key) == "b",
                        "the new namespace label on the host pod")


async def test_spec_changes_reach_the_host_pod(clusters: Clusters) -> None:
    # calcSpecDiff: a scheduling gate removed, a toleration added; syncEphemeralContainers (kubectl debug);
    # resizeHostPodContainerResourcesInPlace
    gated = pod("web", schedulingGates=[{"name": "example.com/quota"}])
    gated["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    async with running_syncer(clusters, rc_config()), kubelet(clusters):
        await clusters.virtual.create(PODS, gated, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        assert host(clusters, "web")["spec"]["schedulingGates"] == [{"name": "example.com/quota"}]
        assert not host(clusters, "web")["spec"].get("nodeName")  # the host scheduler waits for the gate
        toleration = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
        await clusters.virtual.patch(PODS, "web", [
            {"op": "remove", "path": "/spec/schedulingGates"},
            {"op": "add", "path": "/spec/tolerations",
             "value": [*(vstored(clusters, "web")["spec"].get("tolerations") or []), toleration]}], "default",
            patch_type="json")
        await virtual_pod(clusters, "web", running, "web Running once its gate is gone")
        assert toleration in host(clusters, "web")["spec"]["tolerations"]
        debug = {"name": "debugger", "image": "busybox:1.36", "stdin": True, "tty": True, "targetContainerName": "c"}
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            debug]}], "default", patch_type="json", subresource="ephemeralcontainers")
        await eventually(lambda: [c["name"] for c in host(clusters, "web")["spec"].get("ephemeralContainers") or []]
                         == ["debugger"], "the debug container on the host pod")
        await clusters.virtual.patch(PODS, "web", [{"op": "replace", "path": "/spec/containers/0/resources",
                                                    "value": {"requests": {"cpu": "200m"}}}], "default",
                                     patch_type="json", subresource="resize")
        await eventually(lambda: host(clusters, "web")["spec"]["containers"][0]["resources"]
                         == {"requests": {"cpu": "200m"}}, "the host pod resized")


async def test_a_pod_debugged_before_it_reaches_the_host_gets_its_debug_container_there(clusters: Clusters) -> None:
    # A tenant runs `kubectl debug` on a pod the gate keeps out; the platform team then lets its class through. The
    # host API server takes ephemeral containers through pods/ephemeralcontainers only (kubernetes'
    # ValidatePodCreate: "spec.ephemeralContainers: Forbidden: cannot be set on create"): the host pod is created
    # without it and given it right after, instead of a create refused for as long as the pod has one (vcluster
    # puts them in the create).
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "production"}))
    async with running_syncer(clusters, rc_config({"matchLabels": {"environment": "development"}})) as syncer:
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        await eventually(lambda: any(e["reason"] == "SyncWarning" for e in clusters.virtual_server.storage.objects(
            EVENTS).values()), "web kept out by the gate")
        debug = {"name": "debugger", "image": "busybox:1.36"}
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            debug]}], "default", patch_type="json", subresource="ephemeralcontainers")
        await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "development"}}})
        await eventually(lambda: [c["name"] for c in (clusters.host_server.storage.get(PODS, HOST_NS, hname("web"))
                                                      or {"spec": {}})["spec"].get("ephemeralContainers") or []]
                         == ["debugger"], "the debug container on the host pod")
        await syncer.wait_idle()
        errors = [e for e in clusters.virtual_server.storage.objects(EVENTS).values() if e["reason"] == "SyncError"]
    assert errors == []


async def test_a_statefulset_pod_can_be_debugged(clusters: Clusters) -> None:
    # A StatefulSet's pod has a hostname and subdomain, so its host pod gets the /etc/hosts rewrite (hosts.go). vcluster
    # mounts the rewritten file in ephemeral containers too, with a subPath, which kube-apiserver refuses there
    # (validateEphemeralContainers: "cannot be set for an Ephemeral Container"): kubectl debug of such a pod would
    # fail on the host. The debug container goes to the host pod without that mount.
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web-0", hostname="web-0", subdomain="web"), "default")
        await host_pods(clusters, lambda o: hname("web-0") in o, "web-0 on the host")
        debug = {"name": "debugger", "image": "busybox:1.36"}
        await clusters.virtual.patch(PODS, "web-0", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            debug]}], "default", patch_type="json", subresource="ephemeralcontainers")
        await eventually(lambda: [c["name"] for c in host(clusters, "web-0")["spec"].get("ephemeralContainers") or []]
                         == ["debugger"], "the debug container on the host pod")
        await syncer.wait_idle()
        errors = [e for e in clusters.virtual_server.storage.objects(EVENTS).values() if e["reason"] == "SyncError"]
    assert errors == []
    assert host(clusters, "web-0")["metadata"]["annotations"]["vcluster.loft.sh/hosts-rewritten"] == "true"


async def test_host_paths_that_would_show_every_pods_logs_are_rewritten(clusters: Clusters) -> None:
    # hostpath.go: always, so a tenant's log shipper sees only its vcluster's pods
    p = pod("shipper", volumes=[{"name": "logs", "hostPath": {"path": "/var/log/pods"}}])
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "logs", "mountPath": "/var/log/pods"}]
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, p, "default")
        hp = (await host_pods(clusters, lambda o: hname("shipper") in o, "shipper on the host"))[hname("shipper")]
    assert hp["spec"]["volumes"][0] == {"name": "logs", "hostPath": {"path": f"/tmp/vcluster/{HOST_NS}/test/log/pods"}}
    assert hp["spec"]["containers"][0]["volumeMounts"][0]["mountPropagation"] == "HostToContainer"


async def test_a_kubelet_pod_folder_path_gets_the_host_pods_uid(clusters: Clusters) -> None:
    # hostpath.go translateKubeletSubPath: `/var/lib/kubelet/pods/<virtual pod uid>/...` names the folder of that
    # pod's host pod; a uid no virtual pod has is left as it is. With many such volumes the cache is read once
    # per translation.
    async with running_syncer(clusters, rc_config()):
        target = await clusters.virtual.create(PODS, pod("data"), "default")
        target_host = (await host_pods(clusters, lambda o: hname("data") in o, "data on the host"))[hname("data")]
        vuid, huid = target["metadata"]["uid"], target_host["metadata"]["uid"]
        assert vuid != huid
        volumes = [{"name": f"v{i}", "hostPath": {"path": f"/var/lib/kubelet/pods/{vuid}/volumes/v{i}"}}
                   for i in range(3)] + [{"name": "other", "hostPath": {"path": "/var/lib/kubelet/pods/no-such-uid/x"}}]
        await clusters.virtual.create(PODS, pod("backup", volumes=volumes), "default")
        hp = (await host_pods(clusters, lambda o: hname("backup") in o, "backup on the host"))[hname("backup")]
    assert [v["hostPath"]["path"] for v in hp["spec"]["volumes"] if "hostPath" in v] == [
        f"/var/lib/kubelet/pods/{huid}/volumes/v0", f"/var/lib/kubelet/pods/{huid}/volumes/v1",
        f"/var/lib/kubelet/pods/{huid}/volumes/v2", "/var/lib/kubelet/pods/no-such-uid/x"]


async def test_a_terminating_pod_still_shows_the_hosts_final_status(clusters: Clusters) -> None:
    # vcluster's Sync: "Keep propagating the host status to the virtual pod while the host pod is deleting": a
    # Job's controller waits for Succeeded or Failed before it lets the pod go
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, pod("job-1"), "default")
        await host_pods(clusters, lambda o: hname("job-1") in o, "job-1 on the host")
        await clusters.host.bind(hname("job-1"), HOST_NS, "node-1")  # a bound pod terminates gracefully
        await eventually(lambda: vstored(clusters, "job-1")["spec"].get("nodeName") == "node-1", "bound")
        await clusters.virtual.delete(PODS, "job-1", "default", grace_period_seconds=30)
        await host_pods(clusters, lambda o: o[hname("job-1")]["metadata"].get("deletionTimestamp"),
                        "the host pod terminating")  # no kubelet here: it stays terminating
        await clusters.host.patch(PODS, hname("job-1"), {"status": {"phase": "Succeeded"}}, HOST_NS,
                                  subresource="status")
        await eventually(lambda: vstored(clusters, "job-1")["status"]["phase"] == "Succeeded",
                         "the final phase on the terminating virtual pod")


@pytest.mark.parametrize("virtual_scheduler", [False, True], ids=["host-scheduler", "virtual-scheduler"])
async def test_a_pod_placed_by_hand_must_name_a_node_the_virtual_cluster_has(clusters: Clusters,
                                                                             virtual_scheduler: bool) -> None:
    # vcluster's SyncToHost with sync.fromHost.nodes.selector: pods without a node are kept to the selected nodes;
    # a pod with a nodeName the virtual cluster has no node for is held back ("Given nodeName ... does not exist").
    # With the virtual scheduler on, vcluster drops the pod's nodeSelector and syncs only pods with a node.
    from syncer.kube.resources import NODES
    from tests.test_pod_sync import warnings_for
    doc = rc_config()
    doc["sync"]["fromHost"]["nodes"] = {"selector": {"labels": {"pool": "tenants"}}}
    if virtual_scheduler:
        doc["controlPlane"] = {"advanced": {"virtualScheduler": {"enabled": True}}}
    async with running_syncer(clusters, doc):
        if not virtual_scheduler:
            await clusters.virtual.create(PODS, pod("free"), "default")
        await clusters.virtual.create(PODS, pod("pinned", nodeName="gpu-7"), "default")
        if not virtual_scheduler:
            free = (await host_pods(clusters, lambda o: hname("free") in o, "free on the host"))[hname("free")]
            assert free["spec"]["nodeSelector"] == {"pool": "tenants"}
        events = await warnings_for(clusters, "pinned")
        assert events[0]["message"] == "Given nodeName gpu-7 does not exist in virtual cluster"
        await clusters.virtual.create(NODES, {"metadata": {"name": "gpu-7", "labels": {"pool": "tenants"}}})
        pinned = (await host_pods(clusters, lambda o: hname("pinned") in o, "pinned synced once its node exists"))[
            hname("pinned")]
    # deliberately different from vcluster, which leaves the nodeSelector off a pod with a node: the tenant may
    # create the virtual Node itself, and the host kubelet refuses a pod whose nodeSelector its node does not match
    assert pinned["spec"]["nodeName"] == "gpu-7" and pinned["spec"]["nodeSelector"] == {"pool": "tenants"}


async def test_a_scheduling_gate_the_host_added_stays_until_the_host_removes_it(clusters: Clusters) -> None:
    # A host webhook adds a gate at the create (Kueue's pod integration adds `kueue.x-k8s.io/admission` to pods
    # with a queue label, and removes it when the quota admits the pod). vcluster's calcSpecDiff sets the host's
    # gates to the virtual pod's, which removes Kueue's at the first update and lets the pod past the host's quota;
    # here only the gates the virtual pod had at the create go when the virtual pod drops them.
    def kueue(p: Obj) -> None:
        if "kueue.x-k8s.io/queue-name" in (p["metadata"].get("labels") or {}):
            p["spec"]["schedulingGates"] = [*(p["spec"].get("schedulingGates") or []),
                                            {"name": "kueue.x-k8s.io/admission"}]
    clusters.host_server.pod_create_webhooks.append(kueue)
    gated = pod("web", schedulingGates=[{"name": "example.com/wait"}])
    gated["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "gpu"}
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, gated, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        assert host(clusters, "web")["spec"]["schedulingGates"] == [{"name": "example.com/wait"},
                                                                    {"name": "kueue.x-k8s.io/admission"}]
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "a"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "a", "an update")
        assert host(clusters, "web")["spec"]["schedulingGates"] == [{"name": "example.com/wait"},
                                                                    {"name": "kueue.x-k8s.io/admission"}]
        await clusters.virtual.patch(PODS, "web", [{"op": "remove", "path": "/spec/schedulingGates"}], "default",
                                     patch_type="json")
        await eventually(lambda: host(clusters, "web")["spec"].get("schedulingGates") == [
            {"name": "kueue.x-k8s.io/admission"}], "the tenant's gate gone, the host's kept")
        await syncer.wait_idle()
    assert host(clusters, "web")["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]


async def test_an_image_a_host_webhook_set_stays_until_the_tenant_changes_it(clusters: Clusters) -> None:
    # A host webhook rewrites images at the create (a registry mirror; Kyverno's or a digest pinner's). vcluster's
    # calcSpecDiff sets the host image back to the virtual one at the next update, which restarts the container
    # with the image the host's policy replaced; here only an image the tenant changed goes to the host.
    def mirror(p: Obj) -> None:
        for c in p["spec"]["containers"]:
            c["image"] = "mirror.example.com/library/" + c["image"]
    clusters.host_server.pod_create_webhooks.append(mirror)
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        image = vstored(clusters, "web")["spec"]["containers"][0]["image"]
        assert host(clusters, "web")["spec"]["containers"][0]["image"] == "mirror.example.com/library/" + image
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "a"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "a", "an update")
        assert host(clusters, "web")["spec"]["containers"][0]["image"] == "mirror.example.com/library/" + image
        await clusters.virtual.patch(PODS, "web", [{"op": "replace", "path": "/spec/containers/0/image",
                                                    "value": "nginx:1.28"}], "default", patch_type="json")
        await eventually(lambda: host(clusters, "web")["spec"]["containers"][0]["image"] == "nginx:1.28",
                         "the tenant's new image on the host")
        await syncer.wait_idle()


async def test_a_host_without_pods_resize_skips_resizes_and_keeps_the_rest_in_sync(
        clusters: Clusters, caplog: Any) -> None:
    # a host older than Kubernetes 1.33 has no pods/resize (404 on the subresource of a pod that exists); vcluster
    # skips resizing below 1.35 by the host's version; here the 404 itself says so, once
    async with running_syncer(clusters, rc_config()) as syncer:
        p = pod("web")
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        clusters.host_server.faults.fail(404, verb="patch", resource="pods/resize", times=100,
                                         message='the server could not find the requested resource')
        await clusters.virtual.patch(PODS, "web", [{"op": "replace", "path": "/spec/containers/0/resources",
                                                    "value": {"requests": {"cpu": "200m"}}}], "default",
                                     patch_type="json", subresource="resize")
        await eventually(lambda: "does not serve pods/resize" in caplog.text, "the warning")
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("v") == "2", "the label synced")
        await syncer.wait_idle()
    assert host(clusters, "web")["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}
    assert caplog.text.count("does not serve pods/resize") == 1


async def test_a_resize_of_a_pod_gone_meanwhile_leaves_resizes_on(clusters: Clusters, caplog: Any) -> None:
    # a 404 on pods/resize of a pod that is gone from the cache is that pod's absence, not a host without the
    # subresource: the next pod's resize still reaches the host
    resize = [{"op": "replace", "path": "/spec/containers/0/resources", "value": {"requests": {"cpu": "200m"}}}]
    async with running_syncer(clusters, rc_config()) as syncer:
        for name in ("web", "api"):
            p = pod(name)
            p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
            await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o and hname("api") in o, "both on the host")
        slow = clusters.host_server.faults.delay(0.5, verb="patch", resource="pods/resize")
        await clusters.virtual.patch(PODS, "web", resize, "default", patch_type="json", subresource="resize")
        await slow.wait_hits(1)
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)  # the resize then gets 404
        await eventually(lambda: syncer.host_pods.get(f"{HOST_NS}/{hname('web')}") is None, "the cache without it")
        # an unbound pod whose host pod went is created on the host again: its resize is over by then
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host again")
        await clusters.virtual.patch(PODS, "api", resize, "default", patch_type="json", subresource="resize")
        await eventually(lambda: host(clusters, "api")["spec"]["containers"][0]["resources"]
                         == {"requests": {"cpu": "200m"}}, "api resized on the host")
    assert "does not serve pods/resize" not in caplog.text


async def test_the_whole_host_status_reaches_the_virtual_pod(clusters: Clusters) -> None:
    # vcluster's DesiredVirtualStatus copies the host status whole but qosClass: the generation the host kubelet
    # observed, and the node a host scheduler nominated for a preempting pod (Kubernetes 1.34 keeps
    # observedGeneration, kubesim/features.py)
    clusters.virtual_server.minor = clusters.host_server.minor = 34
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        status = {"observedGeneration": 1, "nominatedNodeName": "node-b", "phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "observedGeneration": 1}]}
        await clusters.host.patch(PODS, hname("web"), {"status": status}, HOST_NS, subresource="status")
        await eventually(lambda: vstored(clusters, "web")["status"].get("nominatedNodeName") == "node-b",
                         "the nominated node on the virtual pod")
        vs = vstored(clusters, "web")["status"]
        assert (vs["observedGeneration"], vs["conditions"]) == (1, status["conditions"])
        await clusters.host.patch(PODS, hname("web"), {"status": {"nominatedNodeName": None}}, HOST_NS,
                                  subresource="status")
        await eventually(lambda: "nominatedNodeName" not in vstored(clusters, "web")["status"],
                         "the nomination gone from the virtual pod too")


async def test_an_older_virtual_server_drops_the_observed_generation_and_nothing_loops(clusters: Clusters) -> None:
    # vcluster keeps the virtual observedGeneration for a virtual server older than 1.34 (DesiredVirtualStatus);
    # here the host's is written and the 1.33 server drops it itself: the same stored pod, and a write that
    # changes nothing takes no new resourceVersion, so no watch event brings the pod back
    clusters.virtual_server.minor, clusters.host_server.minor = 33, 34
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await clusters.host.patch(PODS, hname("web"), {"status": {"observedGeneration": 1, "phase": "Running"}},
                                  HOST_NS, subresource="status")
        await eventually(lambda: vstored(clusters, "web")["status"]["phase"] == "Running", "Running")
        await syncer.wait_idle()
        rv = vstored(clusters, "web")["metadata"]["resourceVersion"]
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"labels": {"a": "b"}}}, HOST_NS)
        await eventually(lambda: vstored(clusters, "web")["metadata"].get("labels") == {"a": "b"}, "the label back")
        await syncer.wait_idle()
        assert "observedGeneration" not in vstored(clusters, "web")["status"]
        assert int(vstored(clusters, "web")["metadata"]["resourceVersion"]) == int(rv) + 1  # the label only


async def test_pod_level_resources_a_host_drops_are_reported(clusters: Clusters) -> None:
    # a 1.33 host (PodLevelResources off by default) drops spec.resources silently (dropDisabledPodLevelResources):
    # the host pod is the one vcluster would create (its translator drops the field below 1.34), and the tenant is
    # told; a 1.34 host keeps the pod's budget
    from tests.test_pod_sync import warnings_for
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}}
    clusters.virtual_server.minor, clusters.host_server.minor = 34, 33
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("old-host", resources=resources), "default")
        hp = (await host_pods(clusters, lambda o: hname("old-host") in o, "on the host"))[hname("old-host")]
        assert "resources" not in hp["spec"]
        [event] = await warnings_for(clusters, "old-host")
        assert (event["reason"], event["message"]) == ("SyncWarning", (
            f'host pod "{HOST_NS}/old-host-x-default-x-test" of pod "old-host" has no pod-level resources: the host '
            "API server dropped spec.resources (its PodLevelResources feature gate is off, the default before "
            "Kubernetes 1.34), so only the containers' own resources apply"))
        clusters.host_server.minor = 34
        await clusters.virtual.create(PODS, pod("new-host", resources=resources), "default")
        hp = (await host_pods(clusters, lambda o: hname("new-host") in o, "on the host"))[hname("new-host")]
        assert hp["spec"]["resources"] == resources
        await syncer.wait_idle()
    events = (await clusters.virtual.list(EVENTS, "default"))["items"]
    assert [e["involvedObject"]["name"] for e in events if e["type"] == "Warning"] == ["old-host"]


async def test_an_enforced_toleration_with_an_empty_value_is_on_the_host_pod_once(clusters: Clusters) -> None:
    # enforceTolerations `dedicated=:NoSchedule` (value ""): vcluster's hasToleration compares with
    # apiequality.Semantic, for which the API server's copy without the value is the same toleration. It is added
    # once whether the tenant's pod has it or not, and the updates after it do not add it again
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"enforceTolerations": ["dedicated=:NoSchedule"]}}
    own = {"key": "dedicated", "operator": "Equal", "effect": "NoSchedule"}  # as the virtual API server returns it

    def dedicated(name: str) -> list[Obj]:
        return [t for t in host(clusters, name)["spec"].get("tolerations") or [] if t.get("key") == "dedicated"]

    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(PODS, pod("own", tolerations=[own]), "default")
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await host_pods(clusters, lambda o: hname("own") in o and hname("plain") in o, "both on the host")
        assert dedicated("own") == dedicated("plain") == [own]
        for name in ("own", "plain"):  # updates compare the host's tolerations with the translation again
            await clusters.virtual.patch(PODS, name, {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: all(host(clusters, n)["metadata"]["labels"].get("v") == "2" for n in ("own", "plain")),
                         "the labels synced")
        await syncer.wait_idle()
        assert dedicated("own") == dedicated("plain") == [own]


async def test_a_label_the_tenant_changed_stays_when_the_host_removed_it_meanwhile(clusters: Clusters) -> None:
    # both sides changed `tier` since the last sync (here while the syncer was down): the tenant's value wins, on
    # both pods, and the virtual pod never loses the label on the way (a Service or ReplicaSet selecting it would
    # lose the pod, and the ReplicaSet would start another)
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"app": "web", "tier": "a"}}}, "default")
        await host_pods(clusters, lambda o: (o.get(hname("web")) or {}).get("metadata", {}).get("labels", {}).get(
            "tier") == "a", "tier on the host")
        await syncer.wait_idle()
    await clusters.host.patch(PODS, hname("web"), {"metadata": {"labels": {"tier": None}}}, HOST_NS)
    changed = await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "b"}}}, "default")
    async with running_syncer(clusters, rc_config()) as syncer:
        await eventually(lambda: host(clusters, "web")["metadata"]["labels"].get("tier") == "b",
                         "the tenant's tier on the host")
        await syncer.wait_idle()
    watcher, since = clusters.virtual_server.storage.subscribe(PODS, "default", lambda o: True,
                                                               int(changed["metadata"]["resourceVersion"]))
    clusters.virtual_server.storage.unsubscribe(watcher)
    seen = [c.obj["metadata"]["labels"] for c in since if c.obj["metadata"]["name"] == "web"]
    assert all(labels == {"app": "web", "tier": "b"} for labels in seen), seen
    assert vstored(clusters, "web")["metadata"]["labels"] == {"app": "web", "tier": "b"}
    assert host(clusters, "web")["metadata"]["annotations"]["vcluster.loft.sh/labels"] == 'app="web"\ntier="b"'
