"""The token Secret of a pod (sync.toHost.pods.useSecretsForSATokens) across retries and races, and Events that
outlive their API object, over real HTTP: what survives a failed try, what is owned, what is deleted."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from syncer.kube.resources import EVENTS, PODS, RUNTIMECLASSES, SECRETS, SERVICEACCOUNTS
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc, rc_config, running_syncer
from tests.test_pod_lifecycle import kubelet, running, virtual_pod
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
STATE = "runtimeclass-syncer.io/token-renewal"
SECRET = "web-sa-token-x-default-x-test"  # translate.host_pod_name("web-sa-token", "default", "test")


def secret_mode() -> Obj:
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    return doc


def foreign_secret(uid: str) -> Obj:
    """A Secret that holds the token Secret's name but is not the syncer's: no managed-by label or object
    annotations (e.g. a platform team's own)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"k": "dmFsdWU="},
            "metadata": {"name": SECRET, "namespace": HOST_NS, "uid": uid, "labels": {"team": "platform"}}}


async def test_a_pod_create_retried_uses_the_token_secret_of_the_earlier_try(clusters: Clusters) -> None:
    # the first try writes the Secret, then the host pod's create fails; the retry finds the Secret there and
    # writes its tokens into it rather than failing on AlreadyExists
    failed = clusters.host_server.faults.fail(500, verb="create", resource="pods")
    async with running_syncer(clusters, secret_mode()):
        await clusters.virtual.create(PODS, pod("web"), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web on the host after a retry"))[hname("web")]
        secret = await clusters.host.get(SECRETS, SECRET, HOST_NS)
    assert failed.hits == 1
    assert json.loads(hp["metadata"]["annotations"][STATE])["secret"] == SECRET
    assert [o["uid"] for o in secret["metadata"].get("ownerReferences") or []] == [hp["metadata"]["uid"]]


async def test_the_token_secret_of_an_earlier_host_pod_is_made_anew(clusters: Clusters) -> None:
    # A StatefulSet pod created again under its name while the garbage collector has not yet removed the token Secret
    # of the pod before: that Secret still names the gone host pod as its owner, and the collector deletes it by its
    # uid. As vcluster's SATokenSecret (token/sa_token_secret.go: delete, then create), the syncer makes it anew: a
    # new uid, owned by the new host pod only.
    gone = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    clusters.host_server.storage.write(SECRETS, {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"kube-api-access": "b2xk"},
        "metadata": {"name": SECRET, "namespace": HOST_NS, "uid": "5f4e3d2c-1b0a-4f9e-8d7c-6b5a4f3e2d1c",
                     "labels": {"vcluster.loft.sh/managed-by": "test"},
                     "annotations": {"vcluster.loft.sh/object-name": "web", "vcluster.loft.sh/object-namespace":
                                     "default"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": hname("web"), "uid": gone}]}},
        None)
    async with running_syncer(clusters, secret_mode()):
        await clusters.virtual.create(PODS, pod("web"), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web on the host"))[hname("web")]
        secret = await clusters.host.get(SECRETS, SECRET, HOST_NS)
    assert secret["metadata"]["uid"] != "5f4e3d2c-1b0a-4f9e-8d7c-6b5a4f3e2d1c"
    assert [o["uid"] for o in secret["metadata"].get("ownerReferences") or []] == [hp["metadata"]["uid"]]
    assert "kube-api-access" not in secret["data"]  # made anew: the old Secret's keys are not kept


async def test_a_failed_owner_patch_is_made_by_the_next_reconcile(clusters: Clusters) -> None:
    # the host pod is created, then its token Secret's owner patch fails: the retry makes it the owner (else the
    # Secret would outlive both pods, if they went while the syncer was down)
    failed = clusters.host_server.faults.fail(500, verb="patch", resource="secrets")
    async with running_syncer(clusters, secret_mode()):
        await clusters.virtual.create(PODS, pod("web"), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web on the host"))[hname("web")]

        def owners() -> list[str]:
            s = clusters.host_server.storage.get(SECRETS, HOST_NS, SECRET) or {}
            return [o["uid"] for o in (s.get("metadata") or {}).get("ownerReferences") or []]
        await eventually(lambda: owners() == [hp["metadata"]["uid"]], "the host pod the Secret's owner")
    assert failed.hits == 1


async def test_an_owner_patch_the_host_refuses_holds_nothing_back(clusters: Clusters,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    # a host webhook that refuses ownerReferences on Secrets: the token Secret stays without an owner (it goes with
    # the virtual pod instead), and the pod is synced, bound and shown Running all the same
    webhook = 'admission webhook "secrets.example.com" denied the request: ownerReferences are not allowed'
    refused = clusters.host_server.faults.fail(403, verb="patch", resource="secrets", times=10_000, message=webhook)
    async with running_syncer(clusters, secret_mode()), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await virtual_pod(clusters, "web", running, "web Running")
    assert refused.hits == 1  # given up at once: a refusal is not retried
    secret = clusters.host_server.storage.get(SECRETS, HOST_NS, SECRET)
    assert secret is not None and not secret["metadata"].get("ownerReferences")
    assert "its token secret is left without an owner" in caplog.text


async def test_a_create_tried_again_before_the_cache_has_its_pod_keeps_the_pods_secret(clusters: Clusters) -> None:
    # The token Secret exists and names a running host pod as its owner: a reconcile that plans the create again
    # (its cache behind the create) writes the tokens into it, and does not delete the Secret the pod reads
    doc = secret_mode()
    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web on the host"))[hname("web")]
        await eventually(lambda: bool((clusters.host_server.storage.get(SECRETS, HOST_NS, SECRET) or {}).get(
            "metadata", {}).get("ownerReferences")), "the Secret owned")
        before = clusters.host_server.storage.get(SECRETS, HOST_NS, SECRET)
        assert before is not None
        vpod = await clusters.virtual.get(PODS, "web", "default")
        desired = copy.deepcopy(hp)
        desired["spec"]["volumes"] = vpod["spec"]["volumes"]  # its token projection, as the translation has it
        desired["metadata"]["annotations"] = {}
        assert await syncer.pod_reconciler.tokens.apply(vpod, desired) == SECRET
        after = clusters.host_server.storage.get(SECRETS, HOST_NS, SECRET)
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["ownerReferences"] == before["metadata"]["ownerReferences"]


async def test_a_token_the_virtual_api_server_refuses_is_told_to_the_tenant(clusters: Clusters) -> None:
    # the pod's service account was deleted after the pod was created (its admission checked it then), before the
    # pod reached the host: the TokenRequest is refused (404), retried with backoff, and the tenant is told why
    await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}}, "default")
    p = pod("web", "gvisor")
    p["spec"]["serviceAccountName"] = "robot"
    async with running_syncer(clusters, rc_config({"matchLabels": {"environment": "development"}})):
        await clusters.virtual.create(PODS, p, "default")
        await warnings_for(clusters, "web", lambda evs: any("gvisor" in e["message"] for e in evs), "held back")
        await clusters.virtual.delete(SERVICEACCOUNTS, "robot", "default")
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
        events = await warnings_for(clusters, "web", lambda evs: any("token" in e["message"] for e in evs),
                                    "the refused token told")
    (told,) = [e for e in events if "token" in e["message"]]
    assert (told["reason"], told["message"]) == ("SyncWarning", (
        'did not sync pod "web" to host yet: the virtual API server refused a token for its service account: '
        'serviceaccounts "robot" not found'))


async def test_a_secret_that_took_the_name_meanwhile_is_not_made_the_pods(clusters: Clusters) -> None:
    # Between the token Secret's write and the host pod's create, another Secret takes the name. The pod does not
    # become its owner (the owner reference is patched only with `test` operations that hold on the syncer's own
    # Secret), so the garbage collector will not delete it with the pod.
    slow = clusters.host_server.faults.delay(1.0, verb="create", resource="pods")
    async with running_syncer(clusters, secret_mode()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await asyncio.wait_for(slow.wait_hits(1), 10)
        storage = clusters.host_server.storage
        storage.remove(SECRETS, storage.objects(SECRETS)[(HOST_NS, SECRET)])
        storage.write(SECRETS, foreign_secret("3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a98"), None)
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        patch = ("PATCH", f"/api/v1/namespaces/{HOST_NS}/secrets/{SECRET}")
        await eventually(lambda: patch in [(m, p) for m, p, _ in clusters.host_server.requests],
                         "the owner reference attempted")
        await syncer.wait_idle()  # its answer taken in
        kept = await clusters.host.get(SECRETS, SECRET, HOST_NS)
    assert "ownerReferences" not in kept["metadata"] and kept["metadata"]["labels"] == {"team": "platform"}


async def test_a_secret_that_took_the_name_before_the_delete_is_left(clusters: Clusters) -> None:
    # A pod whose host pod was never created goes: its token Secret is deleted, with the uid read just before as a
    # precondition, so a Secret that took the name in between is left in place.
    refused = clusters.host_server.faults.fail(500, verb="create", resource="pods", times=10_000)
    async with running_syncer(clusters, secret_mode()) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        secrets = syncer.pod_reconciler.tokens.host_secrets
        assert secrets is not None
        await eventually(lambda: secrets.get(f"{HOST_NS}/{SECRET}") is not None, "the token Secret in the cache")
        await asyncio.wait_for(refused.wait_hits(1), 10)
        slow = clusters.host_server.faults.delay(1.0, verb="delete", resource="secrets")
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        await asyncio.wait_for(slow.wait_hits(1), 10)
        storage = clusters.host_server.storage
        storage.remove(SECRETS, storage.objects(SECRETS)[(HOST_NS, SECRET)])
        other = "5e4d3c2b-1a09-4f8e-8d7c-6b5a4e3d2c1b"
        storage.write(SECRETS, foreign_secret(other), None)
        await syncer.wait_idle()  # the delayed delete answered
        kept = await clusters.host.get(SECRETS, SECRET, HOST_NS)
    assert kept["metadata"]["uid"] == other


async def test_a_warning_whose_event_expired_is_recorded_again(clusters: Clusters) -> None:
    # Events expire (kube-apiserver --event-ttl, 1 h by default); the same warning later is a new Event, not a
    # failed count of the old one
    async with running_syncer(clusters, rc_config({"matchLabels": {"environment": "development"}})) as syncer:
        await clusters.virtual.create(PODS, pod("wasm", "wasm"), "default")
        (first,) = await warnings_for(clusters, "wasm")
        await clusters.virtual.delete(EVENTS, first["metadata"]["name"], "default")  # as the TTL does
        await clusters.virtual.patch(PODS, "wasm", {"metadata": {"labels": {"v": "2"}}}, "default")
        (again,) = await warnings_for(clusters, "wasm", what="the warning recorded again")
        await syncer.wait_idle()
        errors = syncer.metrics.registry.get_sample_value("controller_runtime_reconcile_errors_total",
                                                          {"controller": "pod"})
    assert again["message"] == first["message"] and again["count"] == 1
    assert errors == 0


async def test_a_pod_created_again_gets_its_own_warning(clusters: Clusters) -> None:
    # `kubectl describe pod` shows the events whose involvedObject.uid is the pod's: a pod created again under the
    # name gets a warning Event of its own, not a count on the old pod's
    async with running_syncer(clusters, rc_config({"matchLabels": {"environment": "development"}})):
        await clusters.virtual.create(PODS, pod("wasm", "wasm"), "default")
        (first,) = await warnings_for(clusters, "wasm")
        await clusters.virtual.delete(PODS, "wasm", "default", grace_period_seconds=0)
        again = await clusters.virtual.create(PODS, pod("wasm", "wasm"), "default")
        uid = again["metadata"]["uid"]
        events = await warnings_for(clusters, "wasm", lambda evs: any(e["involvedObject"]["uid"] == uid for e in evs),
                                    "the new pod's own warning")
    (own,) = [e for e in events if e["involvedObject"]["uid"] == uid]
    assert own["count"] == 1 and own["message"] == first["message"]
