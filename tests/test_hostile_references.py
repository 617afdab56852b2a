"""Hostile references (issue 22: item 2 and attack 4), over real HTTP with vcluster's resource syncers stood in.

vcluster's single-namespace host names collide: Secret `a` in namespace `b-x-c` and Secret `a-x-b` in `c` both
become `a-x-b-x-c-x-<vcluster>`. A host ConfigMap, Secret, PVC, ServiceAccount or the DNS Service is used only
when its `vcluster.loft.sh/object-name`/`object-namespace` (which vcluster writes on each copy, overwriting what
the virtual object carries under those keys: `pkg/util/translate/translate.go` `addHostAnnotations`) name the
referenced virtual object; otherwise the pod waits, and a SyncWarning names the conflict at once (behaviour.md
3.1 in the waiting message's style). The property test: whatever tenants create in colliding namespaces, no
host pod ever mounts an object of another virtual namespace, and every pod held back says why.

The default run checks a fixed (derandomized) handful of examples; `-m soak` runs many more.
"""

from __future__ import annotations

import asyncio
import base64
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.vcluster import host_name
from syncer.kube.client import DEFAULT_USER_AGENT, ApiError
from syncer.kube.clock import FakeClock
from syncer.kube.resources import (
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    PODS,
    RESOURCECLAIMS,
    RESOURCECLAIMTEMPLATES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
)
from syncer.kube.wait import wait_for
from syncer.manager import Syncer
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, open_clusters, pod, rc_config, running_syncer

Obj = dict[str, Any]
FORCE_SYNC = "vcluster.loft.sh/force-sync"
OBJECT_NAME, OBJECT_NAMESPACE = "vcluster.loft.sh/object-name", "vcluster.loft.sh/object-namespace"
COLLIDING = f"a-x-b-x-c-x-{VCLUSTER}"  # the host name of both b-x-c/a and c/a-x-b


async def namespaces(c: Clusters, *names: str) -> None:
    for name in names:
        await c.virtual.create(NAMESPACES, {"metadata": {"name": name}})


async def warnings_in(c: Clusters, namespace: str, pod_name: str, what: str) -> list[Obj]:
    """Wait for the Warning events of virtual pod `namespace/pod_name`; return them."""
    objs = await wait_for(c.virtual, EVENTS, lambda o: any(
        e["involvedObject"]["name"] == pod_name and e["type"] == "Warning" for e in o.values()),
        namespace=namespace, timeout=10, what=what)
    return [e for e in objs.values() if e["involvedObject"]["name"] == pod_name and e["type"] == "Warning"]


async def host_object(c: Clusters, res: Any, name: str, what: str) -> Obj:
    objs = await wait_for(c.host, res, lambda o: f"{HOST_NS}/{name}" in o, namespace=HOST_NS, timeout=10, what=what)
    return objs[f"{HOST_NS}/{name}"]


async def no_host_pod(c: Clusters, syncer: Syncer, name: str) -> None:
    await syncer.wait_idle()
    assert name not in {p["metadata"]["name"] for p in (await c.host.list(PODS, HOST_NS))["items"]}


def secret_volume_pod(name: str, namespace: str, secret: str) -> Obj:
    p = pod(name, namespace=namespace)
    p["spec"]["volumes"] = [{"name": "creds", "secret": {"secretName": secret}}]
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "creds", "mountPath": "/creds"}]
    return p


# ------------------------------------------------------------------ the copies the check relies on are vcluster's

async def test_the_stand_in_writes_the_annotations_vcluster_writes(clusters: Clusters) -> None:
    # loft-sh/vcluster pkg/controllers/resources/secrets/to_host_syncer_test.go (TestSync, "Used secret"): the
    # synced Secret carries object-name, object-namespace, object-uid, object-kind, object-host-namespace and
    # object-host-name, and the `vcluster.loft.sh/namespace` label; the virtual object's own annotations are
    # copied with `vcluster.loft.sh/managed-annotations` listing them (translate.go ApplyMaps), and what it
    # carries under vcluster's own keys is overwritten (addHostAnnotations).
    await namespaces(clusters, "test")
    secret = await clusters.virtual.create(SECRETS, {"metadata": {"name": "test-secret", "labels": {
        "test-label": "label-value"}, "annotations": {FORCE_SYNC: "true", "note": "n", OBJECT_NAME: "forged",
                                                      OBJECT_NAMESPACE: "kube-system"}}}, "test")
    async with running_syncer(clusters, rc_config()):
        copy = await host_object(clusters, SECRETS, f"test-secret-x-test-x-{VCLUSTER}", "the host copy")
    assert copy["metadata"]["annotations"] == {
        "vcluster.loft.sh/object-name": "test-secret",
        "vcluster.loft.sh/object-namespace": "test",
        "vcluster.loft.sh/object-uid": secret["metadata"]["uid"],
        "vcluster.loft.sh/object-kind": "/v1, Kind=Secret",
        "vcluster.loft.sh/object-host-namespace": HOST_NS,
        "vcluster.loft.sh/object-host-name": f"test-secret-x-test-x-{VCLUSTER}",
        "vcluster.loft.sh/force-sync": "true", "note": "n",
        "vcluster.loft.sh/managed-annotations": "note\nvcluster.loft.sh/force-sync"}
    assert copy["metadata"]["labels"] == {"test-label": "label-value", "vcluster.loft.sh/namespace": "test",
                                          "vcluster.loft.sh/managed-by": VCLUSTER}


# ------------------------------------------------------------------ attack 4

@pytest.mark.parametrize("forged", [False, True], ids=["plain", "claiming-to-be-b-x-c-a"])
async def test_attack_4_another_namespaces_secret_through_a_name_collision(clusters: Clusters, forged: bool) -> None:
    # issue 22 attack 4: a pod in namespace b-x-c mounting Secret `a` (which does not exist there) must not get
    # the host copy of c/a-x-b, though both map to a-x-b-x-c-x-<vcluster>; even when c's Secret carries
    # annotations claiming to be b-x-c/a (vcluster overwrites them on the copy).
    await namespaces(clusters, "b-x-c", "c")
    claim = {OBJECT_NAME: "a", OBJECT_NAMESPACE: "b-x-c"} if forged else {}
    await clusters.virtual.create(SECRETS, {"metadata": {"name": "a-x-b", "annotations": {FORCE_SYNC: "true", **claim}},
                                            "stringData": {"token": "c's secret"}}, "c")
    clock = FakeClock()  # never advanced: the conflict is reported at once, not after 10 s
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        copy = await host_object(clusters, SECRETS, COLLIDING, "the stand-in synced c/a-x-b")
        assert (copy["metadata"]["annotations"][OBJECT_NAMESPACE], copy["metadata"]["annotations"][OBJECT_NAME]) == (
            "c", "a-x-b")
        await clusters.virtual.create(PODS, secret_volume_pod("thief", "b-x-c", "a"), "b-x-c")
        (event,) = await warnings_in(clusters, "b-x-c", "thief", "the conflict's SyncWarning")
        assert (event["reason"], event["message"]) == ("SyncWarning", (
            f'did not sync pod "thief" to host yet: the host secret "{COLLIDING}" is the copy of secret "c/a-x-b", '
            'not of "b-x-c/a"'))
        await no_host_pod(clusters, syncer, host_name("thief", "b-x-c", VCLUSTER))
        # the conflict ends: c's Secret goes (its copy with it): the pod, waiting for more than 10 s by now, says
        # at once that it waits for `a` (the deletion wakes it; its next recheck would be 30 s on)
        clock.advance(10)
        await clusters.virtual.delete(SECRETS, "a-x-b", "c")
        await wait_for(clusters.host, SECRETS, lambda o: f"{HOST_NS}/{COLLIDING}" not in o, namespace=HOST_NS,
                       timeout=10, what="c's copy deleted with it")
        waiting = await wait_for(clusters.virtual, EVENTS, lambda o: any(
            e["involvedObject"]["name"] == "thief" and "waiting for" in e["message"] for e in o.values()),
            namespace="b-x-c", timeout=10, what="the waiting SyncWarning")
        assert [e["message"] for e in waiting.values() if "waiting for" in e["message"]] == [
            f'did not sync pod "thief" to host yet: waiting for secret "a" to be synced to the host as "{COLLIDING}"']
        # and b-x-c creates its own `a`
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "a"}, "stringData": {"token": "b-x-c's own"}},
                                      "b-x-c")
        hpods = await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{host_name('thief', 'b-x-c', VCLUSTER)}"
                               in o, namespace=HOST_NS, timeout=10, what="the pod synced with its own Secret")
    hpod = hpods[f"{HOST_NS}/{host_name('thief', 'b-x-c', VCLUSTER)}"]
    assert hpod["spec"]["volumes"][0] == {"name": "creds", "secret": {"secretName": COLLIDING}}
    mounted = await clusters.host.get(SECRETS, COLLIDING, HOST_NS)
    assert base64.b64decode(mounted["data"]["token"]).decode() == "b-x-c's own"
    ann = mounted["metadata"]["annotations"]
    assert (ann[OBJECT_NAMESPACE], ann[OBJECT_NAME]) == ("b-x-c", "a")


OPTIONAL_REFERENCES = {  # each names Secret `a` with `optional: true` (k8s.io/api core/v1: a missing one is no error)
    "volume": {"volumes": [{"name": "creds", "secret": {"secretName": "a", "optional": True}}]},
    "projected": {"volumes": [{"name": "creds", "projected": {"sources": [
        {"secret": {"name": "a", "optional": True}}]}}]},
    "envFrom": {"containers": [{"name": "app", "image": "nginx", "envFrom": [
        {"secretRef": {"name": "a", "optional": True}}]}]},
    "env": {"containers": [{"name": "app", "image": "nginx", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {
        "name": "a", "key": "token", "optional": True}}}]}]},
    # optional whatever it says: the kubelet pulls without a missing pull Secret (kubelet_pods.go getPullSecretsForPod)
    "imagePullSecrets": {"imagePullSecrets": [{"name": "a"}]},
}


@pytest.mark.parametrize("how", list(OPTIONAL_REFERENCES))
async def test_attack_4_through_an_optional_reference(clusters: Clusters, how: str) -> None:
    # An optional reference may name an object that does not exist, and the pod starts without it; but a host name
    # that holds another namespace's copy is not an absent object: the pod must not read c's Secret through it.
    await namespaces(clusters, "b-x-c", "c")
    await clusters.virtual.create(SECRETS, {"metadata": {"name": "a-x-b", "annotations": {FORCE_SYNC: "true"}},
                                            "stringData": {"token": "c's secret"}}, "c")
    thief = pod("thief", namespace="b-x-c")
    thief["spec"].update(OPTIONAL_REFERENCES[how])
    async with running_syncer(clusters, rc_config(), clock=FakeClock()) as syncer:
        await host_object(clusters, SECRETS, COLLIDING, "the stand-in synced c/a-x-b")
        await clusters.virtual.create(PODS, thief, "b-x-c")
        (event,) = await warnings_in(clusters, "b-x-c", "thief", "the conflict's SyncWarning")
        assert (event["reason"], event["message"]) == ("SyncWarning", (
            f'did not sync pod "thief" to host yet: the host secret "{COLLIDING}" is the copy of secret "c/a-x-b", '
            'not of "b-x-c/a"'))
        await no_host_pod(clusters, syncer, host_name("thief", "b-x-c", VCLUSTER))
        # an optional reference to a Secret nobody has is no reason to wait: another pod naming `b` starts at once
        other = pod("other", namespace="b-x-c")
        other["spec"]["volumes"] = [{"name": "creds", "secret": {"secretName": "b", "optional": True}}]
        await clusters.virtual.create(PODS, other, "b-x-c")
        await host_object(clusters, PODS, host_name("other", "b-x-c", VCLUSTER), "the pod with an absent one")


@pytest.mark.parametrize("reference", ["optional", "own-then-deleted"])
async def test_attack_4_through_a_host_name_taken_over_after_the_sync(clusters: Clusters, reference: str) -> None:
    # The host name changes hands after the pod is on the host: b-x-c's pod names Secret `a` optionally while no
    # `a` exists (it starts without it), or names its own `a`, which b-x-c then deletes (its copy goes with it).
    # When c's `a-x-b` is synced under the freed name, the kubelet would put c's Secret into b-x-c's running pod:
    # its host pod is deleted, and the tenant told why.
    await namespaces(clusters, "b-x-c", "c")
    thief = secret_volume_pod("thief", "b-x-c", "a")
    hname = host_name("thief", "b-x-c", VCLUSTER)
    if reference == "optional":
        thief["spec"]["volumes"][0]["secret"]["optional"] = True
    else:
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "a"}, "stringData": {"token": "b-x-c's"}},
                                      "b-x-c")
    async with running_syncer(clusters, rc_config(), clock=FakeClock()) as syncer:
        await clusters.virtual.create(PODS, thief, "b-x-c")
        hpod = await host_object(clusters, PODS, hname, "the pod on the host")
        # a bystander in b-x-c naming nothing of c's keeps its host pod
        await clusters.virtual.create(PODS, pod("bystander", namespace="b-x-c"), "b-x-c")
        await host_object(clusters, PODS, host_name("bystander", "b-x-c", VCLUSTER), "the bystander on the host")
        if reference == "own-then-deleted":
            await clusters.virtual.delete(SECRETS, "a", "b-x-c")
            await wait_for(clusters.host, SECRETS, lambda o: f"{HOST_NS}/{COLLIDING}" not in o, namespace=HOST_NS,
                           timeout=10, what="b-x-c's copy deleted with it")
        await syncer.wait_idle()
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "a-x-b", "annotations": {FORCE_SYNC: "true"}},
                                                "stringData": {"token": "c's secret"}}, "c")
        await host_object(clusters, SECRETS, COLLIDING, "the stand-in synced c/a-x-b under the freed name")
        await wait_for(clusters.host, PODS, lambda o: all(
            (p["metadata"]["name"], p["metadata"]["uid"]) != (hname, hpod["metadata"]["uid"]) for p in o.values()),
            namespace=HOST_NS, timeout=10, what="the host pod that would read c's Secret deleted")
        events = await warnings_in(clusters, "b-x-c", "thief", "the SyncWarning")
        assert f'deleted host pod "{HOST_NS}/{hname}" of pod "thief": the host secret "{COLLIDING}" is the copy of ' \
               'secret "c/a-x-b", not of "b-x-c/a"' in [e["message"] for e in events]
        await syncer.wait_idle()
        assert host_name("bystander", "b-x-c", VCLUSTER) in {
            p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}


async def test_attack_4_through_a_host_name_taken_over_while_the_create_is_on_its_way(clusters: Clusters) -> None:
    # The pod's references are checked, then its host pod is created: c's copy may take the name in between (found
    # by the property below). The copy's event comes while the pod has no host pod yet; the pod is looked at again
    # once its create is done, and its host pod deleted.
    await namespaces(clusters, "b-x-c", "c")
    thief = secret_volume_pod("thief", "b-x-c", "a")
    thief["spec"]["volumes"][0]["secret"]["optional"] = True
    hname = host_name("thief", "b-x-c", VCLUSTER)
    async with running_syncer(clusters, rc_config(), clock=FakeClock()) as syncer:
        await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "other"}})  # the stand-in's CA copies first
        await syncer.wait_idle()
        held = clusters.host_server.faults.hold(verb="create", resource="pods", agent=DEFAULT_USER_AGENT)
        await clusters.virtual.create(PODS, thief, "b-x-c")
        await held.wait_hits(1)  # checked (no `a` then), its create on its way
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "a-x-b", "annotations": {FORCE_SYNC: "true"}},
                                                "stringData": {"token": "c's secret"}}, "c")
        await host_object(clusters, SECRETS, COLLIDING, "c's copy under the name")
        secrets = syncer.pod_reconciler.host_objects["secret"]
        await eventually(lambda: secrets.get(f"{HOST_NS}/{COLLIDING}") is not None, "the copy in the syncer's cache")
        held.release()
        await host_object(clusters, PODS, hname, "the create done")
        await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{hname}" not in o, namespace=HOST_NS, timeout=10,
                       what="the host pod that would read c's Secret deleted")
        events = await warnings_in(clusters, "b-x-c", "thief", "the SyncWarning")
        assert any(e["message"].startswith(f'deleted host pod "{HOST_NS}/{hname}" of pod "thief": the host secret '
                                           f'"{COLLIDING}" is the copy of secret "c/a-x-b"') for e in events), events


async def test_a_colliding_copy_changing_wakes_only_the_pods_that_name_it(clusters: Clusters) -> None:
    # A tenant that names a namespace `q-x-default` makes every copy of its objects split to `default`: were each
    # change of such a copy to wake every pod of `default`, its updates would keep the syncer busy for all tenants.
    # Only the pods whose spec names the colliding name are looked at again.
    from prometheus_client import generate_latest

    def pod_adds(syncer: Syncer) -> float:
        line = next(x for x in generate_latest(syncer.metrics.registry).decode().splitlines()
                    if x.startswith('workqueue_adds_total{name="pod"}'))
        return float(line.rsplit(" ", 1)[1])

    await namespaces(clusters, "b-x-c", "c")
    async with running_syncer(clusters, rc_config(), clock=FakeClock()) as syncer:
        for i in range(3):
            await clusters.virtual.create(PODS, pod(f"bystander-{i}", namespace="b-x-c"), "b-x-c")
        await clusters.virtual.create(PODS, secret_volume_pod("reader", "b-x-c", "a-other"), "b-x-c")
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "a-x-b", "annotations": {FORCE_SYNC: "true"}},
                                                "stringData": {"token": "0"}}, "c")
        await host_object(clusters, SECRETS, COLLIDING, "c's copy")
        await host_object(clusters, PODS, host_name("bystander-2", "b-x-c", VCLUSTER), "the bystanders synced")
        await syncer.wait_idle()
        before = pod_adds(syncer)
        for i in range(1, 4):  # c's Secret changes: its copy with it
            token = base64.b64encode(str(i).encode()).decode()
            await clusters.virtual.patch(SECRETS, "a-x-b", {"data": {"token": token}}, "c")
            await wait_for(clusters.host, SECRETS, lambda o, i=i: base64.b64decode(
                o[f"{HOST_NS}/{COLLIDING}"]["data"]["token"]).decode() == str(i), namespace=HOST_NS, timeout=10,
                what="the copy updated")
        await syncer.wait_idle()
        assert pod_adds(syncer) == before  # neither the bystanders nor `reader` (its "a-other" is not "a")
        # a pod that names `a` is woken by the next change
        await clusters.virtual.create(PODS, secret_volume_pod("thief", "b-x-c", "a"), "b-x-c")
        await warnings_in(clusters, "b-x-c", "thief", "the conflict's SyncWarning")
        await syncer.wait_idle()
        before = pod_adds(syncer)
        await clusters.virtual.patch(SECRETS, "a-x-b", {"data": {"token": base64.b64encode(b"4").decode()}}, "c")
        await wait_for(clusters.host, SECRETS, lambda o: base64.b64decode(
            o[f"{HOST_NS}/{COLLIDING}"]["data"]["token"]).decode() == "4", namespace=HOST_NS, timeout=10,
            what="the copy updated")
        await syncer.wait_idle()
        # the thief alone, once or twice: it waits for that host name, so the virtual Secret's change and its
        # copy's each wake it (one add when the second comes while it is still queued)
        assert before + 1 <= pod_adds(syncer) <= before + 2


async def test_attack_4_through_a_debug_container_added_after_the_sync(clusters: Clusters) -> None:
    # The same collision through `kubectl debug` (pods/ephemeralcontainers) on a pod already on the host: the debug
    # container's envFrom naming Secret `a` (which b-x-c lacks) must not reach the host pod, whose `a` would be the
    # host copy of c/a-x-b; the container waits as a pod does, and is added once b-x-c's own `a` is synced.
    await namespaces(clusters, "b-x-c", "c")
    await clusters.virtual.create(SECRETS, {"metadata": {"name": "a-x-b", "annotations": {FORCE_SYNC: "true"}},
                                            "stringData": {"token": "c's secret"}}, "c")
    hname = host_name("thief", "b-x-c", VCLUSTER)
    async with running_syncer(clusters, rc_config(), clock=FakeClock()) as syncer:
        await host_object(clusters, SECRETS, COLLIDING, "the stand-in synced c/a-x-b")
        await clusters.virtual.create(PODS, pod("thief", namespace="b-x-c"), "b-x-c")
        await host_object(clusters, PODS, hname, "the pod synced (it names no Secret)")
        debug = {"name": "dbg", "image": "busybox", "envFrom": [{"secretRef": {"name": "a"}}]}
        await clusters.virtual.patch(PODS, "thief", [{"op": "add", "path": "/spec/ephemeralContainers",
                                                      "value": [debug]}], "b-x-c", patch_type="json",
                                     subresource="ephemeralcontainers")
        (event,) = await warnings_in(clusters, "b-x-c", "thief", "the conflict's SyncWarning")
        assert (event["reason"], event["message"]) == ("SyncWarning", (
            f'did not add ephemeral container "dbg" of pod "thief" to the host yet: the host secret "{COLLIDING}" '
            'is the copy of secret "c/a-x-b", not of "b-x-c/a"'))
        await syncer.wait_idle()
        assert "ephemeralContainers" not in (await clusters.host.get(PODS, hname, HOST_NS))["spec"]
        # c's Secret goes, b-x-c creates its own `a`: its copy wakes the pod and the container is added
        await clusters.virtual.delete(SECRETS, "a-x-b", "c")
        await wait_for(clusters.host, SECRETS, lambda o: f"{HOST_NS}/{COLLIDING}" not in o, namespace=HOST_NS,
                       timeout=10, what="c's copy deleted with it")
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "a"}, "stringData": {"token": "b-x-c's own"}},
                                      "b-x-c")
        hpods = await wait_for(clusters.host, PODS, lambda o: (o.get(f"{HOST_NS}/{hname}") or {}).get(
            "spec", {}).get("ephemeralContainers"), namespace=HOST_NS, timeout=10, what="the debug container added")
    assert hpods[f"{HOST_NS}/{hname}"]["spec"]["ephemeralContainers"][0]["envFrom"] == [
        {"secretRef": {"name": COLLIDING}}]
    ann = (await clusters.host.get(SECRETS, COLLIDING, HOST_NS))["metadata"]["annotations"]
    assert (ann[OBJECT_NAMESPACE], ann[OBJECT_NAME]) == ("b-x-c", "a")


def claim_pod(name: str, namespace: str, **claim: str) -> Obj:
    p = pod(name, namespace=namespace)
    p["spec"]["resourceClaims"] = [{"name": "gpu", **claim}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return p


CLAIM_SYNC = {"resourceClaims": {"enabled": True}, "resourceClaimTemplates": {"enabled": True}}
# the host name vcluster's claim and template mappers give both b-x-c/a and c/a-x-b (HostNameShort hashes the one
# string "a-x-b-x-c-x-test": pkg/util/translate/single_namespace.go)
COLLIDING_CLAIM = "v5j8nnafvuut61"


@pytest.mark.parametrize("field", ["resourceClaimName", "resourceClaimTemplateName"])
async def test_attack_4_through_a_resource_claim(clusters: Clusters, field: str) -> None:
    # With vcluster's claim sync on, claim `a` of namespace b-x-c and claim `a-x-b` of c are both
    # COLLIDING_CLAIM on the host: a pod in b-x-c naming `a` must not share c's allocated device (or get a
    # claim from c's template). The pod waits, with the conflict named at once, until b-x-c's own copy is there.
    res = RESOURCECLAIMS if field == "resourceClaimName" else RESOURCECLAIMTEMPLATES
    kind = res.singular
    spec = {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    body = spec if res is RESOURCECLAIMS else {"spec": spec}
    await namespaces(clusters, "b-x-c", "c")
    await clusters.virtual.create(res, {"metadata": {"name": "a-x-b"}, **body}, "c")
    doc = rc_config()
    doc["sync"]["toHost"] = CLAIM_SYNC
    async with running_syncer(clusters, doc, clock=FakeClock()) as syncer:
        await host_object(clusters, res, COLLIDING_CLAIM, "the stand-in synced c/a-x-b")
        await clusters.virtual.create(PODS, claim_pod("thief", "b-x-c", **{field: "a"}), "b-x-c")
        (event,) = await warnings_in(clusters, "b-x-c", "thief", "the conflict's SyncWarning")
        assert event["message"] == (f'did not sync pod "thief" to host yet: the host {kind} "{COLLIDING_CLAIM}" is '
                                    f'the copy of {kind} "c/a-x-b", not of "b-x-c/a"')
        await no_host_pod(clusters, syncer, host_name("thief", "b-x-c", VCLUSTER))
        await clusters.virtual.delete(res, "a-x-b", "c")
        await wait_for(clusters.host, res, lambda o: f"{HOST_NS}/{COLLIDING_CLAIM}" not in o, namespace=HOST_NS,
                       timeout=10, what="c's copy deleted with it")
        await clusters.virtual.create(res, {"metadata": {"name": "a"}, **body}, "b-x-c")
        hpods = await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{host_name('thief', 'b-x-c', VCLUSTER)}"
                               in o, namespace=HOST_NS, timeout=10, what="the pod synced with its own claim")
    hpod = hpods[f"{HOST_NS}/{host_name('thief', 'b-x-c', VCLUSTER)}"]
    assert hpod["spec"]["resourceClaims"] == [{"name": "gpu", field: COLLIDING_CLAIM}]
    ann = (await clusters.host.get(res, COLLIDING_CLAIM, HOST_NS))["metadata"]["annotations"]
    assert (ann[OBJECT_NAMESPACE], ann[OBJECT_NAME]) == ("b-x-c", "a")


async def test_a_host_claim_without_vclusters_annotations_is_used(clusters: Clusters) -> None:
    # Unlike a ConfigMap or Secret, a host claim that names no virtual object is used: vcluster's open-source tree
    # has no ResourceClaim syncer to show what its copies carry, and a tenant cannot create host objects; only a
    # copy of another virtual object is refused (above).
    hname = "v1je0vm5w19zxx"  # HostNameShort of default/shared in vcluster test (pkg/util/translate)
    await clusters.host.create(RESOURCECLAIMS, {"metadata": {"name": hname}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}, HOST_NS)
    doc = rc_config()
    doc["sync"]["toHost"] = {"resourceClaims": {"enabled": True}}
    async with running_syncer(clusters, doc, clock=FakeClock()):
        await clusters.virtual.create(PODS, claim_pod("web", "default", resourceClaimName="shared"), "default")
        hpod = await host_object(clusters, PODS, host_name("web", "default", VCLUSTER), "web synced")
    assert hpod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": hname}]


async def test_a_host_object_vcluster_did_not_copy_is_not_used_until_its_annotations_say_whose_it_is(
        clusters: Clusters) -> None:
    # A Secret someone created on the host under the host name of default/s, without vcluster's annotations:
    # the pod waits and says why; once the host object names default/s (fixed in place), the pod is synced at
    # once (its change wakes the pod; the clock never moves).
    hname = f"s-x-default-x-{VCLUSTER}"
    await clusters.host.create(SECRETS, {"metadata": {"name": hname}, "stringData": {"k": "v"}}, HOST_NS)
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, secret_volume_pod("web", "default", "s"), "default")
        (event,) = await warnings_in(clusters, "default", "web", "the SyncWarning")
        assert event["message"] == (
            f'did not sync pod "web" to host yet: the host secret "{hname}" is not the copy of secret "default/s": '
            'it has no vcluster.loft.sh/object-name and vcluster.loft.sh/object-namespace annotations')
        await no_host_pod(clusters, syncer, host_name("web", "default", VCLUSTER))
        await clusters.host.patch(SECRETS, hname, {"metadata": {"annotations": {
            OBJECT_NAME: "s", OBJECT_NAMESPACE: "default"}}}, HOST_NS)
        await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{host_name('web', 'default', VCLUSTER)}" in o,
                       namespace=HOST_NS, timeout=10, what="web synced once the host Secret names default/s")


async def test_the_dns_service_is_used_only_as_the_copy_of_kube_system_kube_dns(clusters: Clusters) -> None:
    dns = f"kube-dns-x-kube-system-x-{VCLUSTER}"
    await clusters.host.patch(SERVICES, dns, {"metadata": {"annotations": {OBJECT_NAME: "resolver",
                                                                          OBJECT_NAMESPACE: "tenant"}}}, HOST_NS)
    async with running_syncer(clusters, rc_config(), clock=FakeClock()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        (event,) = await warnings_in(clusters, "default", "web", "the SyncWarning")
        assert event["message"] == (f'did not sync pod "web" to host yet: the host service "{dns}" is the copy of '
                                    'service "tenant/resolver", not of "kube-system/kube-dns"')
        await no_host_pod(clusters, syncer, host_name("web", "default", VCLUSTER))
        await clusters.host.patch(SERVICES, dns, {"metadata": {"annotations": {
            OBJECT_NAME: "kube-dns", OBJECT_NAMESPACE: "kube-system"}}}, HOST_NS)
        await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{host_name('web', 'default', VCLUSTER)}" in o,
                       namespace=HOST_NS, timeout=10, what="web synced once the DNS Service is kube-dns's copy")


async def test_with_service_account_sync_a_pod_runs_only_as_the_copy_of_its_own(clusters: Clusters) -> None:
    # sync.toHost.serviceAccounts.enabled: a host pod runs as the host copy of its service account (vcluster's
    # Translate), which a colliding name would make another namespace's (its host RBAC, its cloud identity)
    await namespaces(clusters, "b-x-c", "c")
    doc = rc_config()
    doc["sync"]["toHost"] = {"serviceAccounts": {"enabled": True}}
    async with running_syncer(clusters, doc, clock=FakeClock()) as syncer:
        await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "a-x-b"}}, "c")
        await host_object(clusters, SERVICEACCOUNTS, COLLIDING, "the copy of c/a-x-b")
        await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "a"}}, "b-x-c")
        await clusters.virtual.create(PODS, pod("owner", namespace="c", serviceAccountName="a-x-b"), "c")
        await clusters.virtual.create(PODS, pod("thief", namespace="b-x-c", serviceAccountName="a"), "b-x-c")
        (event,) = await warnings_in(clusters, "b-x-c", "thief", "the SyncWarning")
        owner = await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{host_name('owner', 'c', VCLUSTER)}" in o,
                               namespace=HOST_NS, timeout=10, what="owner synced as its own service account")
        await no_host_pod(clusters, syncer, host_name("thief", "b-x-c", VCLUSTER))
    assert owner[f"{HOST_NS}/{host_name('owner', 'c', VCLUSTER)}"]["spec"]["serviceAccountName"] == COLLIDING
    assert event["message"] == (f'did not sync pod "thief" to host yet: the host serviceaccount "{COLLIDING}" is the '
                                'copy of serviceaccount "c/a-x-b", not of "b-x-c/a"')


@pytest.mark.parametrize("optional", [False, True], ids=["required", "optional"])
async def test_a_pod_cannot_mount_another_pods_token_secret(clusters: Clusters, optional: bool) -> None:
    # With useSecretsForSATokens the syncer writes web's token to the host Secret web-sa-token-x-default-x-<vc>
    # (vcluster's SecretNameFromPodName), the host name virtual Secret default/web-sa-token would have: a pod
    # naming that Secret would mount web's token (vcluster's own token Secret carries no object annotations).
    # The syncer's token Secret is not the copy of a virtual Secret, so the pod waits.
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    token_secret = f"web-sa-token-x-default-x-{VCLUSTER}"
    async with running_syncer(clusters, doc, clock=FakeClock()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_object(clusters, SECRETS, token_secret, "web's token Secret")
        q = secret_volume_pod("q", "default", "web-sa-token")
        q["spec"]["volumes"][0]["secret"]["optional"] = optional
        await clusters.virtual.create(PODS, q, "default")
        (event,) = await warnings_in(clusters, "default", "q", "the SyncWarning")
        await no_host_pod(clusters, syncer, host_name("q", "default", VCLUSTER))
    prefix = f'did not sync pod "q" to host yet: the host secret "{token_secret}" is '
    assert event["message"].startswith(prefix) and '"default/web-sa-token"' in event["message"], event["message"]


# ------------------------------------------------------------------ the property

# Objects and references drawn from names whose host names collide: c/a-x-d-x-b, b-x-c/a-x-d and d-x-b-x-c/a all
# become a-x-d-x-b-x-c-x-<vcluster>; c/a-x-b and b-x-c/a become a-x-b-x-c-x-<vcluster>; c/kube-root-ca.crt-x-b is
# b-x-c's CA bundle's host name (the injected token volume reads it: a tenant of c would choose which API server
# b-x-c's pods trust); c/a-x-d has no twin.
TENANT_NAMESPACES = ("c", "b-x-c", "d-x-b-x-c")
PAIRS = (("c", "a-x-d-x-b"), ("b-x-c", "a-x-d"), ("d-x-b-x-c", "a"), ("c", "a-x-b"), ("b-x-c", "a"),
         ("c", "kube-root-ca.crt-x-b"), ("c", "a-x-d"))
KINDS = {"secret": SECRETS, "configmap": CONFIGMAPS}


def refs_of(vpod: Obj) -> list[tuple[str, str, bool]]:
    """(kind, name, optional) of each ConfigMap/Secret a pod's volumes and envFrom name (Kubernetes' pod spec)."""
    out: list[tuple[str, str, bool]] = []
    for vol in vpod["spec"].get("volumes") or []:
        if "secret" in vol:
            out.append(("secret", vol["secret"]["secretName"], bool(vol["secret"].get("optional"))))
        if "configMap" in vol:
            out.append(("configmap", vol["configMap"]["name"], bool(vol["configMap"].get("optional"))))
        for src in (vol.get("projected") or {}).get("sources") or []:
            for key, kind in (("secret", "secret"), ("configMap", "configmap")):
                if key in src:
                    out.append((kind, src[key]["name"], bool(src[key].get("optional"))))
    for c in vpod["spec"]["containers"]:
        for src in c.get("envFrom") or []:
            for key, kind in (("secretRef", "secret"), ("configMapRef", "configmap")):
                if key in src:
                    out.append((kind, src[key]["name"], bool(src[key].get("optional"))))
    return out


objects = st.builds(lambda kind, pair, forged: ("object", kind, *pair, forged), st.sampled_from(tuple(KINDS)),
                    st.sampled_from(PAIRS), st.booleans())
pods = st.builds(lambda kind, pair, how: ("pod", kind, *pair, how), st.sampled_from(tuple(KINDS)),
                 st.sampled_from(PAIRS), st.sampled_from(("volume", "envFrom", "optional volume", "optional envFrom")))
plans = st.lists(st.one_of(objects, pods), min_size=3, max_size=10)


async def _run_plan(tmp: Path, plan: list[tuple[str, str, str, str, Any]]) -> None:
    async with open_clusters(tmp) as c:
        await namespaces(c, *TENANT_NAMESPACES)
        async with running_syncer(c, rc_config(), clock=FakeClock()) as syncer:
            created: list[tuple[str, str, str]] = []
            vpods: dict[tuple[str, str], Obj] = {}
            for i, (step, kind, ns, name, extra) in enumerate(plan):
                if step == "object":
                    # each object says whose it is; `extra`: it also claims to be another namespace's
                    claim = {OBJECT_NAME: "a", OBJECT_NAMESPACE: "d-x-b-x-c"} if extra else {}
                    body: Obj = {"metadata": {"name": name, "annotations": {FORCE_SYNC: "true", **claim}},
                                 "data": {"owner": f"{ns}/{name}"}}
                    if kind == "secret":
                        body["data"] = {"owner": base64.b64encode(f"{ns}/{name}".encode()).decode()}
                    try:
                        await c.virtual.create(KINDS[kind], body, ns)
                        created.append((kind, ns, name))
                    except ApiError as e:  # the same object twice
                        assert e.already_exists, e
                else:
                    p = pod(f"p{i}", namespace=ns)
                    ref = ({"secretRef": {"name": name}} if kind == "secret" else {"configMapRef": {"name": name}})
                    if extra.endswith("envFrom"):
                        p["spec"]["containers"][0]["envFrom"] = [ref]
                    else:
                        p["spec"]["volumes"] = [{"name": "v", "secret": {"secretName": name}} if kind == "secret"
                                                else {"name": "v", "configMap": {"name": name}}]
                    if extra.startswith("optional"):  # may be absent; `optional` sits beside the name
                        ((p["spec"]["volumes"][0].get("secret") or p["spec"]["volumes"][0].get("configMap"))
                         if "volumes" in p["spec"] else next(iter(ref.values())))["optional"] = True
                    vpods[(ns, f"p{i}")] = await c.virtual.create(PODS, p, ns)
            # quiescence: every created object's host name is taken (by its own copy or a colliding one's)
            for kind, ns, name in created:
                key = f"{HOST_NS}/{host_name(name, ns, VCLUSTER)}"
                await wait_for(c.host, KINDS[kind], lambda o, key=key: key in o, namespace=HOST_NS, timeout=10,
                               what=f"{kind} {ns}/{name} or a colliding one synced")
            await check_pods(c, syncer, vpods)


async def check_pods(c: Clusters, syncer: Syncer, vpods: dict[tuple[str, str], Obj]) -> None:
    """The property, at quiescence (host copies, once made, never change whose they are: the plans only create):
    a pod whose every referenced object's host copy is its own (or, for an optional reference, absent) is on the
    host; one whose reference's host name holds another's copy is not, and says so (the rule's words, from the
    host object's annotations; a pod synced while its optional reference was absent has its host pod deleted when
    another's copy takes the name, and says that); a host pod never mounts an object whose annotations or content
    are another namespace's."""
    async def host_objects() -> dict[tuple[str, str], Obj]:
        return {(kind, o["metadata"]["name"]): o for kind, res in KINDS.items()
                for o in (await c.host.list(res, HOST_NS))["items"]}

    def expectation(objs: dict[tuple[str, str], Obj], ns: str, vpod: Obj) -> tuple[bool, set[str]]:
        """(every reference's host copy is the pod's own or an optional one's absent, the conflict messages its
        references may cause)."""
        ok, conflicts = True, set()
        pod_name = vpod["metadata"]["name"]
        for kind, name, optional in refs_of(vpod):
            hname = host_name(name, ns, VCLUSTER)
            h = objs.get((kind, hname))
            ann = (h or {}).get("metadata", {}).get("annotations") or {}
            if (h is None and not optional) or (h is not None and (
                    ann.get(OBJECT_NAMESPACE), ann.get(OBJECT_NAME)) != (ns, name)):
                ok = False
            if h is not None and (ann.get(OBJECT_NAMESPACE), ann.get(OBJECT_NAME)) != (ns, name):
                why = (f'the host {kind} "{hname}" is the copy of {kind} "{ann[OBJECT_NAMESPACE]}/'
                       f'{ann[OBJECT_NAME]}", not of "{ns}/{name}"')
                conflicts.add(f'did not sync pod "{pod_name}" to host yet: {why}')
                if optional:  # synced while it was absent, its host pod deleted when the name was taken
                    conflicts.add(f'deleted host pod "{HOST_NS}/{host_name(pod_name, ns, VCLUSTER)}" of pod '
                                  f'"{pod_name}": {why}')
        return ok, conflicts

    async def settled() -> bool:
        # events first: a host object a warning names existed before it was recorded, so it is in `objs`
        events = [e for ns in TENANT_NAMESPACES for e in (await c.virtual.list(EVENTS, ns))["items"]]
        objs = await host_objects()
        hpods = {p["metadata"]["name"] for p in (await c.host.list(PODS, HOST_NS))["items"]}
        for (ns, name), vpod in vpods.items():
            ok, conflicts = expectation(objs, ns, vpod)
            warned = {e["message"] for e in events if e["involvedObject"]["namespace"] == ns
                      and e["involvedObject"]["name"] == name and e["type"] == "Warning"}
            assert warned <= conflicts, (ns, name, warned, conflicts)
            on_host = host_name(name, ns, VCLUSTER) in hpods
            # on the host with a required reference that is not its own copy: for good, the copies never change
            # hands (an optional one absent at the sync may be taken over: then its host pod is deleted)
            assert ok or not on_host or any(o for *_, o in refs_of(vpod)), \
                f"{ns}/{name} was synced with another's object: {refs_of(vpod)}"
            if on_host != ok or (conflicts and not warned):
                return False
        return True

    deadline = asyncio.get_running_loop().time() + 15
    while not await settled():
        assert asyncio.get_running_loop().time() < deadline, "the pods did not settle"
        await syncer.wait_idle()
        await asyncio.sleep(0.05)
    # safety, over every host pod: what it mounts is its own namespace's, by annotations and by content
    objs = await host_objects()
    for hpod in (await c.host.list(PODS, HOST_NS))["items"]:
        ns = hpod["metadata"]["annotations"][OBJECT_NAMESPACE]
        for kind, hname, optional in refs_of(hpod):
            if optional and (kind, hname) not in objs:
                continue
            h = objs[(kind, hname)]
            ann = h["metadata"]["annotations"]
            assert ann[OBJECT_NAMESPACE] == ns and host_name(ann[OBJECT_NAME], ns, VCLUSTER) == hname, (hpod, h)
            if ann[OBJECT_NAME] == "kube-root-ca.crt":
                continue  # the virtual API server's own CA bundle (checked by its annotations above)
            owner = h["data"]["owner"]
            owner = base64.b64decode(owner).decode() if kind == "secret" else owner
            assert owner == f"{ns}/{ann[OBJECT_NAME]}", (hpod["metadata"]["name"], hname, owner)


def run_plan(plan: list[tuple[str, str, str, str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run_plan(Path(tmp), plan))


@settings(max_examples=25, deadline=None, derandomize=True, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(plans)
def test_no_pod_ever_mounts_an_object_of_another_virtual_namespace(plan: list[tuple[str, str, str, str, Any]]) -> None:
    run_plan(plan)


def test_every_collision_at_once() -> None:
    # the example the property must hold for whatever hypothesis draws: the three-way collision, objects before
    # and after the pods, a forged claim, c's CA-bundle lookalike, envFrom and volumes
    run_plan([
        ("object", "secret", "c", "a-x-d-x-b", True), ("pod", "secret", "b-x-c", "a-x-d", "volume"),
        ("pod", "secret", "d-x-b-x-c", "a", "envFrom"), ("object", "secret", "d-x-b-x-c", "a", False),
        ("pod", "secret", "c", "a-x-d-x-b", "volume"),
        ("object", "configmap", "c", "kube-root-ca.crt-x-b", False), ("pod", "configmap", "b-x-c", "a", "volume"),
        ("object", "configmap", "b-x-c", "a", False), ("pod", "configmap", "c", "a-x-b", "envFrom"),
    ])


@pytest.mark.soak
@settings(max_examples=200, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(objects, pods), min_size=3, max_size=30))
def test_soak_no_pod_ever_mounts_an_object_of_another_virtual_namespace(
        plan: list[tuple[str, str, str, str, Any]]) -> None:
    run_plan(plan)
