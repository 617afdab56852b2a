"""Pod lifecycle behind the gate (behaviour.md section 3 from "Orphans" on): status back-sync,
deletion both ways, orphans, forced runtime class, binding failures."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator

import pytest

from kubesim.kubelet import FakeKubelet
from syncer.kube.clock import FakeClock
from syncer.kube.resources import EVENTS, PODS, RUNTIMECLASSES
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, Clusters, eventually, hold_watch_down, pod, rc, rc_config, running_syncer
from tests.kubectl import kubectl
from tests.test_pod_sync import hname, host_pods, warnings_for

DEV = {"matchLabels": {"environment": "development"}}


@contextlib.asynccontextmanager
async def kubelet(c: Clusters) -> AsyncIterator[FakeKubelet]:
    k = FakeKubelet(c.host, HOST_NS)
    stop = asyncio.Event()
    task = asyncio.create_task(k.run(stop))
    try:
        yield k
    finally:
        stop.set()
        await task


async def virtual_pod(c: Clusters, name: str, predicate, what: str) -> dict:  # type: ignore[no-untyped-def]
    objs = await wait_for(c.virtual, PODS, lambda o: predicate(o.get(f"default/{name}")), namespace="default",
                          timeout=10, what=what)
    return objs.get(f"default/{name}", {})


def running(p: dict | None) -> bool:
    return bool(p) and (p.get("status") or {}).get("phase") == "Running"


@pytest.mark.kubectl
async def test_pod_reaches_running_in_the_virtual_cluster(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        vp = await virtual_pod(clusters, "web", lambda p: running(p) and p["spec"].get("nodeName"), "web Running")
        hp = await clusters.host.get(PODS, hname("web"), HOST_NS)
        for field in ("podIP", "podIPs", "hostIP", "startTime", "qosClass", "conditions", "containerStatuses"):
            assert vp["status"][field] == hp["status"][field], field
        assert vp["spec"]["nodeName"] == hp["spec"]["nodeName"] == "node-1"
        out = await kubectl(clusters.virtual_kubeconfig, "get", "pods", "-o", "wide")
    assert re.search(r"web\s+1/1\s+Running\s+0\s+\S+\s+10\.244\.0\.\d+\s+node-1", out), out


async def test_virtual_delete_removes_the_host_pod_with_its_grace_period(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)):
        async with kubelet(clusters):
            await clusters.virtual.create(PODS, pod("web"), "default")
            await virtual_pod(clusters, "web", running, "web Running")
        # the kubelet is down: deletion waits for it, as on a real node
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=7)
        pods = await host_pods(clusters, lambda o: hname("web") in o and o[hname("web")]["metadata"].get(
            "deletionTimestamp"), "host pod terminating")
        assert pods[hname("web")]["metadata"]["deletionGracePeriodSeconds"] == 7
        assert (await clusters.virtual.get(PODS, "web", "default"))["metadata"]["deletionTimestamp"]
        async with kubelet(clusters):  # the kubelet finishes the host pod; the syncer finishes the virtual one
            await host_pods(clusters, lambda o: hname("web") not in o, "host pod gone")
            await virtual_pod(clusters, "web", lambda p: p is None, "virtual pod gone")


async def test_host_pod_that_disappears_takes_the_virtual_pod(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await virtual_pod(clusters, "web", running, "web Running")
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)  # e.g. a node drain
        await virtual_pod(clusters, "web", lambda p: p is None, "virtual pod removed")
        await host_pods(clusters, lambda o: hname("web") not in o, "not re-created on the host")


async def test_evicted_host_pod_shows_in_the_virtual_cluster(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await virtual_pod(clusters, "web", running, "web Running")
        await clusters.host.patch(PODS, hname("web"), {"status": {
            "phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}},
            HOST_NS, subresource="status")
        vp = await virtual_pod(clusters, "web", lambda p: p and p["status"]["phase"] == "Failed", "web Failed")
    assert vp["status"]["reason"] == "Evicted" and "low on resource" in vp["status"]["message"]


@pytest.mark.kubectl
async def test_orphaned_pod_survives_the_removal_of_its_class(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        await virtual_pod(clusters, "web", running, "web Running")
        await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "prod"}}})
        (event,) = await warnings_for(clusters, "web")
        assert event["reason"] == "Orphaned"
        assert event["message"].startswith('pod "web" is orphaned: the runtime class "gvisor" in the host does not '
                                           "match the selector")
        assert "delete the pod in the virtual cluster and the host pod in the host cluster" in event["message"]
        out = await kubectl(clusters.virtual_kubeconfig, "describe", "pod", "web")
        assert re.search(r"Warning\s+Orphaned\s+\S+\s+pod-syncer\s+pod \"web\" is orphaned", out), out
        assert re.search(r"Status:\s+Running", out)
        # no more updates flow
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"version": "2"}}}, "default")
        await warnings_for(clusters, "web", lambda evs: evs and evs[0]["count"] == 2, "second orphan notice")
        assert "version" not in ((await clusters.host.get(PODS, hname("web"), HOST_NS))["metadata"]["labels"])
        # the class is deleted on the host too: still nothing is deleted
        await clusters.host.delete(RUNTIMECLASSES, "gvisor")
        await warnings_for(clusters, "web", lambda evs: any("not found" in e["message"] for e in evs), "notice")
        assert running(await clusters.virtual.get(PODS, "web", "default"))
        # the user deletes the virtual pod: the host pod stays until they delete it there as well
        await clusters.virtual.delete(PODS, "web", "default")
        vp = await virtual_pod(clusters, "web", lambda p: p and p["metadata"].get("deletionTimestamp"), "deleting")
        assert vp and (await clusters.host.get(PODS, hname("web"), HOST_NS))["metadata"].get("deletionTimestamp") \
            is None
        await clusters.host.delete(PODS, hname("web"), HOST_NS)
        await virtual_pod(clusters, "web", lambda p: p is None, "virtual pod finished deleting")


async def test_forced_runtime_class_on_host_pods(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    await clusters.host.create(RUNTIMECLASSES, rc("kata", labels={"environment": "production"}))
    doc = rc_config(DEV)
    doc["sync"]["toHost"] = {"pods": {"runtimeClassName": "gvisor", "enabled": False}}
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await clusters.virtual.create(PODS, pod("vm", "kata"), "default")
        pods = await host_pods(clusters, lambda o: hname("plain") in o, "plain synced")
        (event,) = await warnings_for(clusters, "vm")  # the gate judges the pod's own class
    assert pods[hname("plain")]["spec"]["runtimeClassName"] == "gvisor"
    assert 'the runtime class "kata" in the host does not match' in event["message"]


@pytest.mark.parametrize("status", [404, 403])
async def test_status_is_copied_when_binding_fails(clusters: Clusters, caplog: pytest.LogCaptureFixture,
                                                   status: int) -> None:
    # Regression: a failed pods/binding (a virtual API server without it, or RBAC without it) raised before
    # the status was copied, so the virtual pod never showed Running, and the log blamed "create pods".
    caplog.set_level(logging.INFO)
    refused = clusters.virtual_server.faults.fail(status, verb="create", resource="pods/binding", times=10_000)
    async with running_syncer(clusters, rc_config(DEV)), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        vp = await virtual_pod(clusters, "web", running, "web Running without a binding")
        await refused.wait_hits(2)  # retried with backoff
    assert not vp["spec"].get("nodeName")
    lines = [r.getMessage() for r in caplog.records if "pods/binding" in r.getMessage()]
    assert len(lines) == 1, lines  # reported once, with its real verb and resource
    assert "create pods/binding" in lines[0] and "on the virtual cluster" in lines[0]
    assert "create pods on the virtual cluster" not in caplog.text


async def test_a_binding_refused_as_already_bound_is_no_failure(clusters: Clusters,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    # The binding registry answers 409 Conflict when the pod is bound already (someone bound it since the cache
    # last saw it, e.g. the virtual scheduler): that is the outcome the syncer wanted, not a failure to warn
    # about and retry with backoff.
    caplog.set_level(logging.INFO)
    conflict = clusters.virtual_server.faults.fail(409, verb="create", resource="pods/binding",
                                                   message='pod web is already assigned to node "node-1"')
    async with running_syncer(clusters, rc_config(DEV)) as syncer, kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await virtual_pod(clusters, "web", lambda p: running(p) and p["spec"].get("nodeName"), "web Running, bound")
        await syncer.wait_idle()
        errors = syncer.metrics.registry.get_sample_value("controller_runtime_reconcile_errors_total",
                                                          {"controller": "pod"})
    assert conflict.hits == 1
    assert errors == 0
    assert not [m for m in caplog.messages if "could not bind" in m]


async def test_the_status_is_copied_once_the_binding_wrote_is_seen(clusters: Clusters) -> None:
    # the binding writes the pod's nodeName and PodScheduled condition (kube-apiserver's BindingREST); a status copy
    # planned from the cache before it would write that condition again, a write that changes nothing: the status
    # is copied by the reconcile of the binding's echo instead
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.virtual_server, "pods")  # the binding's echo waits
        seen = len(clusters.virtual_server.requests)
        await clusters.host.bind(hname("web"), HOST_NS, "node-1")  # the host scheduler
        binding = ("POST", "/api/v1/namespaces/default/pods/web/binding")
        await eventually(lambda: binding in [(m, p) for m, p, _ in clusters.virtual_server.requests[seen:]],
                         "the virtual pod bound")
        await syncer.wait_idle()
        status = ("PATCH", "/api/v1/namespaces/default/pods/web/status")
        assert status not in [(m, p) for m, p, _ in clusters.virtual_server.requests[seen:]]
        clock.advance(60)  # the watch back: the reconcile of the binding's echo copies the host's status
        hp = await clusters.host.get(PODS, hname("web"), HOST_NS)
        await virtual_pod(clusters, "web", lambda p: (p.get("status") or {}).get("conditions") == hp["status"][
            "conditions"], "the host pod's conditions on the virtual pod")


async def test_a_bound_pod_is_not_bound_again(clusters: Clusters) -> None:
    # the virtual pod is bound once, to the host pod's node; later reconciles (a label change) write no binding
    async with running_syncer(clusters, rc_config(DEV)) as syncer, kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await virtual_pod(clusters, "web", lambda p: running(p) and p["spec"].get("nodeName"), "web Running, bound")
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "front"}}}, "default")
        await host_pods(clusters, lambda o: (o.get(hname("web"), {}).get("metadata", {}).get("labels") or {})
                        .get("tier") == "front", "the label on the host pod")
        await syncer.wait_idle()
    bindings = [p for m, p, _ in clusters.virtual_server.requests if m == "POST" and p.endswith("/binding")]
    assert bindings == ["/api/v1/namespaces/default/pods/web/binding"]


async def test_a_host_pod_replaced_behind_a_stale_cache_is_not_deleted(clusters: Clusters) -> None:
    # The syncer deletes a host pod with the uid it saw as a precondition (DeleteOptions.preconditions.uid), so a
    # pod that took the name meanwhile, not the syncer's, is never deleted by mistake. Here the syncer's watch of
    # host pods is slow to come back, so its cache still holds its own pod when the virtual pod is deleted.
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web synced")
        await syncer.wait_idle()
        slow = clusters.host_server.faults.delay(1.0, verb="watch", resource="pods")
        clusters.host_server.cut_watches()
        await slow.wait_hits(1)
        storage = clusters.host_server.storage
        storage.remove(PODS, storage.objects(PODS)[(HOST_NS, hname("web"))])
        other_uid = "5f0c7a8e-3b1d-4c2e-9a6f-8d7e6c5b4a32"
        storage.write(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": hname("web"), "namespace": HOST_NS, "uid": other_uid, "labels": {"app": "someone-else"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}}, None)
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        path = f"/api/v1/namespaces/{HOST_NS}/pods/{hname('web')}"
        await eventually(lambda: ("DELETE", path) in [(m, p) for m, p, _ in clusters.host_server.requests],
                         "the syncer's delete of the pod it saw")
        # the watch back: the syncer's pod is gone (the other pod is not the syncer's to watch: no managed-by label)
        await eventually(lambda: syncer.host_pods.get(f"{HOST_NS}/{hname('web')}") is None, "the watch back")
        await syncer.wait_idle()
        assert (await clusters.host.get(PODS, hname("web"), HOST_NS))["metadata"]["uid"] == other_uid


async def test_a_host_pod_made_while_its_watch_is_down_goes_when_its_virtual_pod_went_meanwhile(
        clusters: Clusters) -> None:
    # Found by the soak (seed 20261125): the echo of the syncer's own create of a host pod is not reconciled. When
    # the virtual pod is deleted before the echo arrives, the reconcile of that deletion sees no host pod in a cache
    # that has not caught up, and does nothing; the echo must then be reconciled, or the host pod runs on without
    # its virtual pod. The host watch is held down on the injected clock (its retry waits for it).
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        await eventually(lambda: (HOST_NS, hname("web")) in clusters.host_server.storage.objects(PODS),
                         "the host pod created (its echo not seen yet)")
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        await eventually(lambda: syncer.virtual_pods.get("default/web") is None, "the virtual pod's deletion seen")
        await syncer.wait_idle()
        assert syncer.host_pods.get(f"{HOST_NS}/{hname('web')}") is None  # the deletion's reconcile saw no host pod
        clock.advance(60)  # the watch back: the host pod's ADDED event
        await host_pods(clusters, lambda o: hname("web") not in o, "the host pod deleted once its watch event arrived")


async def test_a_virtual_pod_created_again_behind_a_stale_cache_is_not_deleted(clusters: Clusters) -> None:
    # The same for the tenant's pods: the virtual pod whose host pod is gone is deleted with its uid as a
    # precondition, so a pod the tenant created again under the name (the syncer's watch of virtual pods slow to
    # come back) is not deleted: it is synced once the watch is back.
    async with running_syncer(clusters, rc_config(DEV)) as syncer, kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await virtual_pod(clusters, "web", lambda p: running(p) and p["spec"].get("nodeName"), "web Running, bound")
        await syncer.wait_idle()
        slow = clusters.virtual_server.faults.delay(1.0, verb="watch", resource="pods")
        clusters.virtual_server.cut_watches()
        await slow.wait_hits(1)
        storage = clusters.virtual_server.storage
        storage.remove(PODS, storage.objects(PODS)[("default", "web")])
        again = pod("web")
        again["metadata"].update(namespace="default", uid="9d3c1b7a-6e5f-4a2b-8c9d-0e1f2a3b4c5d")
        storage.write(PODS, again, None)
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)  # e.g. a node drain
        path = "/api/v1/namespaces/default/pods/web"
        await eventually(lambda: ("DELETE", path) in [(m, p) for m, p, _ in clusters.virtual_server.requests],
                         "the syncer's delete of the virtual pod it saw")
        hp = await host_pods(clusters, lambda o: hname("web") in o, "the new pod synced once the watch is back")
    assert hp[hname("web")]["metadata"]["annotations"]["vcluster.loft.sh/object-uid"] == again["metadata"]["uid"]
    assert (await clusters.virtual.get(PODS, "web", "default"))["metadata"]["uid"] == again["metadata"]["uid"]


async def test_a_virtual_pod_created_again_behind_a_stale_cache_gets_neither_the_old_status_nor_a_node(
        clusters: Clusters) -> None:
    # Found by the soak (seed 20261517): while the syncer's watch of virtual pods was down, the tenant replaced a pod
    # by another of the same name, and the old host pod's next change had its status (start time included) copied
    # and its node bound, by name, to the new pod. A started pod whose host pod goes is deleted (podplan row 12,
    # vcluster's SyncToHost), so the tenant's new pod was deleted once the watch came back. The status patch and
    # the Binding name the uid the syncer saw; the API server refuses them for another pod (422, 409).
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "the host pod created, not scheduled yet")
        await syncer.wait_idle()
        await hold_watch_down(clusters.virtual_server, "pods")
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        again = await clusters.virtual.create(PODS, pod("web"), "default")
        seen = len(clusters.virtual_server.requests)
        async with kubelet(clusters):  # the host pod is scheduled and started: the syncer sees it change
            await eventually(lambda: any(m == "PATCH" and p.endswith("/pods/web/status")
                                         for m, p, _ in clusters.virtual_server.requests[seen:]),
                             "the syncer's status copy for the pod its cache still holds")
            await syncer.wait_idle()
            assert syncer.virtual_pods.get("default/web")["metadata"]["uid"] != again["metadata"]["uid"]  # stale
            assert syncer.metrics.registry.get_sample_value(  # a refusal for another pod is no failure
                "controller_runtime_reconcile_errors_total", {"controller": "pod"}) == 0
            new = await clusters.virtual.get(PODS, "web", "default")
            assert (new["metadata"]["uid"], new["spec"].get("nodeName")) == (again["metadata"]["uid"], None)
            assert "startTime" not in new.get("status", {}) and "podIP" not in new.get("status", {})
            clock.advance(60)  # the watch back: the new pod replaces the old one's host pod, and runs
            vp = await virtual_pod(clusters, "web", lambda p: running(p) and p["spec"].get("nodeName"),
                                   "the new pod synced, Running and bound")
        hp = await clusters.host.get(PODS, hname("web"), HOST_NS)
    assert vp["metadata"]["uid"] == again["metadata"]["uid"]
    assert hp["metadata"]["annotations"]["vcluster.loft.sh/object-uid"] == again["metadata"]["uid"]


async def test_a_host_pod_of_another_owner_put_under_the_name_behind_a_stale_cache_is_not_written(
        clusters: Clusters) -> None:
    # The syncer's host pod watch is down; someone on the host deletes the synced pod and creates their own under
    # its name. A change of the virtual pod must not be patched onto that pod (our labels and ownership annotations
    # would make it look ours): the patch names the uid of the host pod the cache holds, which the API server
    # refuses for another pod (422), and the tenant is told nothing false (no "host rejected" SyncError).
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        ours = await clusters.host.get(PODS, hname("web"), HOST_NS)
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)
        # their pod happens to carry a labels map and our base annotation as it was, so that every operation of the
        # syncer's per-key patch (an `add` of the label, a `test` and `replace` of the base) applies to it, and
        # only the uid the patch names stops it
        theirs = pod(hname("web"), namespace=HOST_NS)
        theirs["metadata"].update(labels={"app": "theirs"}, annotations={
            "vcluster.loft.sh/labels": ours["metadata"]["annotations"]["vcluster.loft.sh/labels"]})
        theirs = await clusters.host.create(PODS, theirs, HOST_NS)
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"tier": "front"}}}, "default")
        await eventually(lambda: any(m == "PATCH" and p.endswith(f"/pods/{hname('web')}")
                                     for m, p, _ in clusters.host_server.requests[seen:]),
                         "the syncer's patch for the host pod its cache still holds")
        await syncer.wait_idle()
        # the refusal names the uid (other_object): the syncer needs no read of the host to know the pod is not its
        assert not [p for m, p, _ in clusters.host_server.requests[seen:]
                    if m == "GET" and p.endswith(f"/pods/{hname('web')}")]
        after = await clusters.host.get(PODS, hname("web"), HOST_NS)
        assert after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
        events = (await clusters.virtual.list(EVENTS, "default"))["items"]
        assert not [e for e in events if e["reason"] == "SyncError"]
        clock.advance(60)  # the watch back: the name is another owner's, which the tenant is told
        (event,) = await warnings_for(clusters, "web")
        after = await clusters.host.get(PODS, hname("web"), HOST_NS)
    assert event["reason"] == "SyncError" and "is not managed by vcluster" in event["message"]
    assert after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]


async def test_an_image_change_that_does_not_apply_to_another_owners_pod_is_no_host_refusal(
        clusters: Clusters) -> None:
    # As above, with an image change: its JSON patch tests the container's name first, which fails on the other
    # owner's pod (kube-apiserver's generic 422, with no uid in it). The host is read to tell that from a real
    # refusal, so the tenant is not told the host rejected the pod.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)
        theirs = pod(hname("web"), namespace=HOST_NS)
        theirs["spec"]["containers"][0]["name"] = "their-app"
        theirs = await clusters.host.create(PODS, theirs, HOST_NS)
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", [{"op": "replace", "path": "/spec/containers/0/image",
                                                    "value": "nginx:1.28"}], "default", patch_type="json")
        await eventually(lambda: any(m == "PATCH" and p.endswith(f"/pods/{hname('web')}")
                                     for m, p, _ in clusters.host_server.requests[seen:]),
                         "the syncer's patch for the host pod its cache still holds")
        await syncer.wait_idle()
        after = await clusters.host.get(PODS, hname("web"), HOST_NS)
        events = (await clusters.virtual.list(EVENTS, "default"))["items"]
    assert after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    assert not [e for e in events if e["reason"] == "SyncError"]


# A tenant's `kubectl debug` and an in-place resize, each a write to a subresource of the host pod
DEBUG = [{"op": "add", "path": "/spec/ephemeralContainers", "value": [{"name": "debugger", "image": "busybox:1.36"}]}]
RESIZE = [{"op": "replace", "path": "/spec/containers/0/resources", "value": {"requests": {"cpu": "200m"}}}]


@pytest.mark.parametrize(("subresource", "change"), [("ephemeralcontainers", DEBUG), ("resize", RESIZE)])
async def test_a_subresource_write_to_a_host_pod_of_another_owner_behind_a_stale_cache_is_refused(
        clusters: Clusters, subresource: str, change: list[dict[str, object]]) -> None:
    # As above, for the writes that go to a subresource: both strategies keep the uid the patch names
    # (kubernetes' pkg/registry/core/pod/strategy.go, dropNonEphemeralContainerUpdates and dropNonResizeUpdates), so
    # the other owner's pod gets no debug container and no new resources from the tenant.
    clock = FakeClock()
    web = pod("web")
    web["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, web, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)
        theirs = pod(hname("web"), namespace=HOST_NS)
        theirs["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
        theirs = await clusters.host.create(PODS, theirs, HOST_NS)
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", change, "default", patch_type="json", subresource=subresource)
        await eventually(lambda: any(m == "PATCH" and p.endswith(f"/pods/{hname('web')}/{subresource}")
                                     for m, p, _ in clusters.host_server.requests[seen:]),
                         f"the syncer's write to {subresource} of the host pod its cache still holds")
        await syncer.wait_idle()
        after = await clusters.host.get(PODS, hname("web"), HOST_NS)
        events = (await clusters.virtual.list(EVENTS, "default"))["items"]
    assert after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    assert not after["spec"].get("ephemeralContainers")
    assert after["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}
    assert not [e for e in events if e["reason"] == "SyncError"]  # no "host rejected" told to the tenant


async def test_a_debug_container_for_a_host_pod_gone_behind_a_stale_cache_does_not_turn_debugging_off(
        clusters: Clusters) -> None:
    # The host pod is deleted while the syncer's host pod watch is down, and the tenant debugs the pod: the write to
    # pods/ephemeralcontainers gets 404 because the pod is gone, not because the host lacks the subresource (which
    # would turn debug-container sync off for good). Once the watch is back the pod, never started, is synced again
    # and its debug container follows.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        await hold_watch_down(clusters.host_server, "pods")
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)
        seen = len(clusters.host_server.requests)
        await clusters.virtual.patch(PODS, "web", DEBUG, "default", patch_type="json",
                                     subresource="ephemeralcontainers")
        await eventually(lambda: any(m == "PATCH" and p.endswith("/ephemeralcontainers")
                                     for m, p, _ in clusters.host_server.requests[seen:]), "the write, answered 404")
        await syncer.wait_idle()
        clock.advance(60)  # the watch back: the host pod is gone, and the pod was never started
        await eventually(lambda: [c["name"] for c in (clusters.host_server.storage.get(PODS, HOST_NS, hname("web"))
                                                      or {"spec": {}})["spec"].get("ephemeralContainers") or []]
                         == ["debugger"], "the debug container on the new host pod")


async def test_a_status_copy_to_a_pod_gone_meanwhile_is_no_failure(clusters: Clusters) -> None:
    # a status write answered 404 (the virtual pod was deleted since the cache saw it) has nothing left to do:
    # it is not an error retried with backoff
    gone = clusters.virtual_server.faults.fail(404, verb="patch", resource="pods/status")
    async with running_syncer(clusters, rc_config(DEV)) as syncer, kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await eventually(lambda: gone.hits == 1, "a status copy answered 404")
        await syncer.wait_idle()
        errors = syncer.metrics.registry.get_sample_value("controller_runtime_reconcile_errors_total",
                                                          {"controller": "pod"})
    assert gone.hits == 1
    assert errors == 0
