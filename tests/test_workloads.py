"""Real workloads (behaviour.md section 3.1), over real HTTP with vcluster's resource syncers stood in:
references rewritten to host names, the force-sync annotation, waiting for the host objects with the
exact SyncWarning after 10 s, optional references, and what cannot be translated."""

from __future__ import annotations

import base64
import copy
import re
from typing import Any

import pytest

from kubesim.tokens import whoami
from kubesim.validation import validate_pod
from kubesim.vcluster_standin import create_vcluster_host_objects
from syncer.kube.client import DEFAULT_USER_AGENT, ApiError
from syncer.kube.clock import FakeClock
from syncer.kube.resources import CONFIGMAPS, EVENTS, PODS, PVCS, SECRETS, SERVICEACCOUNTS, SERVICES
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, hold_watch_down, pod, rc_config, running_syncer
from tests.kubectl import kubectl
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
FORCE_SYNC = "vcluster.loft.sh/force-sync"


def app_pod(name: str = "web") -> Obj:
    p = pod(name)
    p["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "app-config"}},
                            {"name": "certs", "projected": {"sources": [{"secret": {"name": "db"}}]}},
                            {"name": "kube-api-access-x1y2z", "projected": {"sources": [
                                {"serviceAccountToken": {"path": "token"}}]}}]
    p["spec"]["imagePullSecrets"] = [{"name": "regcred"}]
    p["spec"]["containers"][0].update(
        volumeMounts=[{"name": "config", "mountPath": "/etc/app"}, {"name": "certs", "mountPath": "/etc/certs"}],
        envFrom=[{"configMapRef": {"name": "app-config"}}, {"secretRef": {"name": "db", "optional": True}}],
        env=[{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
             {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "tuning", "key": "mode", "optional": True}}}])
    return p


async def create_app_objects(c: Clusters) -> None:
    await c.virtual.create(CONFIGMAPS, {"metadata": {"name": "app-config"}, "data": {"app.yaml": "x: 1"}}, "default")
    await c.virtual.create(SECRETS, {"metadata": {"name": "db"}, "stringData": {"password": "s3cret"}}, "default")
    await c.virtual.create(SECRETS, {"metadata": {"name": "regcred"}, "type": "kubernetes.io/dockerconfigjson",
                                     "stringData": {".dockerconfigjson": "{}"}}, "default")


def h(name: str) -> str:
    return f"{name}-x-default-x-{VCLUSTER}"


@pytest.mark.kubectl
async def test_references_are_translated_and_the_objects_marked_for_vcluster(clusters: Clusters) -> None:
    await create_app_objects(clusters)
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, app_pod(), "default")
        objs = await host_pods(clusters, lambda o: hname("web") in o, "web synced once its objects are on the host")
        out = await kubectl(clusters.host_kubeconfig, "describe", "pod", hname("web"), "-n", HOST_NS)
    spec = objs[hname("web")]["spec"]
    assert spec["volumes"][0] == {"name": "config", "configMap": {"name": h("app-config")}}
    assert spec["volumes"][1] == {"name": "certs", "projected": {"sources": [{"secret": {"name": h("db")}}]}}
    assert spec["imagePullSecrets"] == [{"name": h("regcred")}]
    assert spec["containers"][0]["envFrom"] == [{"configMapRef": {"name": h("app-config")}},
                                                {"secretRef": {"name": h("db"), "optional": True}}]
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": h("db"), "key": "password"}
    assert env["MODE"]["valueFrom"]["configMapKeyRef"] == {"name": h("tuning"), "key": "mode", "optional": True}
    for res, name in ((CONFIGMAPS, "app-config"), (SECRETS, "db"), (SECRETS, "regcred")):  # only annotated
        v = await clusters.virtual.get(res, name, "default")
        assert v["metadata"]["annotations"] == {FORCE_SYNC: "true"}
    assert re.search(rf"config:\n\s+Type:\s+ConfigMap \(a volume populated by a ConfigMap\)\n\s+Name:\s+"
                     rf"{h('app-config')}\n", out), out


async def test_an_object_many_pods_wait_for_is_annotated_once(clusters: Clusters) -> None:
    # replicas of one Deployment wait for the same ConfigMap: the first reconcile annotates it; the others, before
    # the cache has seen that write, do not write it again (a patch that would change nothing)
    clock = FakeClock()
    await clusters.virtual.create(CONFIGMAPS, {"metadata": {"name": "app-config"}, "data": {"a": "1"}}, "default")
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await syncer.wait_idle()
        await hold_watch_down(clusters.virtual_server, "configmaps")  # the annotation's echo waits
        for i in range(3):
            p = pod(f"web-{i}")
            p["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "app-config"}}]
            await clusters.virtual.create(PODS, p, "default")
        patch = ("PATCH", "/api/v1/namespaces/default/configmaps/app-config")
        await eventually(lambda: patch in [(m, q) for m, q, _ in clusters.virtual_server.requests], "annotated")
        await syncer.wait_idle()
        assert [(m, q) for m, q, _ in clusters.virtual_server.requests].count(patch) == 1
        clock.advance(60)  # the watch back
        v = await wait_for(clusters.virtual, CONFIGMAPS, lambda o: FORCE_SYNC in (
            o["default/app-config"]["metadata"].get("annotations") or {}), namespace="default", what="annotated")
        assert v["default/app-config"]["metadata"]["annotations"] == {FORCE_SYNC: "true"}


@pytest.mark.parametrize(("configmaps_all", "secrets_all"), [(True, True), (True, False), (False, True)])
async def test_what_vcluster_syncs_by_all_is_not_annotated(clusters: Clusters, configmaps_all: bool,
                                                           secrets_all: bool) -> None:
    # behaviour.md 3.1: the annotation is added "unless the matching `all` key is true", kind by kind
    await create_app_objects(clusters)
    doc = rc_config()
    doc["sync"]["toHost"] = {"configMaps": {"all": configmaps_all}, "secrets": {"all": secrets_all}}
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, app_pod(), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web synced")
    for res, name, synced_by_all in ((CONFIGMAPS, "app-config", configmaps_all), (SECRETS, "db", secrets_all)):
        v = await clusters.virtual.get(res, name, "default")
        assert (FORCE_SYNC in (v["metadata"].get("annotations") or {})) is not synced_by_all, (res.plural, name)


async def test_a_pod_waits_for_its_objects_and_says_so_after_10_seconds(clusters: Clusters) -> None:
    # behaviour.md 3.1: the pod waits; "after 10 s of waiting a SyncWarning says what it waits for". The
    # syncer runs on a fake clock, so the 10 s pass without waiting.
    await create_app_objects(clusters)
    await clusters.virtual.delete(CONFIGMAPS, "app-config", "default")  # the one the pod will wait for
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, app_pod(), "default")
        await eventually(lambda: "default/web" in syncer.pod_queue.pending(), "web waits")
        clock.advance(9.9)
        # a change at 9.9 s is reconciled, and still says nothing
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"touched": "9.9s"}}}, "default")
        await eventually(lambda: syncer.pod_queue.pending().get("default/web") == 0.1, "web looked at again")
        await syncer.wait_idle()
        assert not [e for e in (await clusters.virtual.list(EVENTS, "default"))["items"]
                    if e["involvedObject"]["name"] == "web"]
        clock.advance(0.1)
        (event,) = await warnings_for(clusters, "web", what="the waiting SyncWarning at 10 s")
        assert not (await clusters.host.list(PODS, HOST_NS))["items"]  # nothing on the host meanwhile
        clock.advance(60)  # more rechecks repeat nothing: the same warning is not recorded again
        await syncer.wait_idle()
        again = await warnings_for(clusters, "web")
        assert [e.get("count", 1) for e in again] == [1]
        await clusters.virtual.create(CONFIGMAPS, {"metadata": {"name": "app-config"}}, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web synced once app-config was created")
    assert (event["reason"], event["source"]["component"]) == ("SyncWarning", "pod-syncer")
    assert event["message"] == (f'did not sync pod "web" to host yet: waiting for configmap "app-config" to be '
                                f'synced to the host as "{h("app-config")}"')


async def test_a_debug_container_waits_for_its_objects_like_a_pod(clusters: Clusters) -> None:
    # `kubectl debug` on a synced pod with a container whose env names a Secret the host has no copy of: the
    # container is not added to the host pod until it has (it would start with CreateContainerConfigError, or read
    # another namespace's copy: tests/test_hostile_references.py); after 10 s a SyncWarning in the waiting
    # message's words says what it waits for; once the Secret is created it gets the force-sync annotation,
    # vcluster copies it, and the container is added.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web synced")
        debug = {"name": "dbg", "image": "busybox",
                 "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "debug-creds", "key": "k"}}}]}
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers",
                                                    "value": [debug]}], "default", patch_type="json",
                                     subresource="ephemeralcontainers")
        await eventually(lambda: syncer.pod_queue.pending().get("default/web") == 10, "web's debug container waits")
        await syncer.wait_idle()
        assert "ephemeralContainers" not in (await clusters.host.get(PODS, hname("web"), HOST_NS))["spec"]
        assert not [e for e in (await clusters.virtual.list(EVENTS, "default"))["items"]
                    if e["involvedObject"]["name"] == "web" and e["type"] == "Warning"]
        clock.advance(10)
        (event,) = await warnings_for(clusters, "web", what="the waiting SyncWarning at 10 s")
        assert event["message"] == (f'did not add ephemeral container "dbg" of pod "web" to the host yet: waiting '
                                    f'for secret "debug-creds" to be synced to the host as "{h("debug-creds")}"')
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "debug-creds"}, "stringData": {"k": "v"}},
                                      "default")
        hpods = await host_pods(clusters, lambda o: (o.get(hname("web")) or {}).get("spec", {}).get(
            "ephemeralContainers"), "the debug container added")
        marked = await clusters.virtual.get(SECRETS, "debug-creds", "default")
    assert marked["metadata"]["annotations"] == {FORCE_SYNC: "true"}
    assert {"name": "K", "valueFrom": {"secretKeyRef": {"name": h("debug-creds"), "key": "k"}}} in hpods[
        hname("web")]["spec"]["ephemeralContainers"][0]["env"]  # after the service variables (parity row 17)


async def test_a_debug_container_does_not_wait_for_what_the_pod_named_at_its_start(clusters: Clusters) -> None:
    # Only the new container's own references are checked: a Secret the running pod mounted and that is gone
    # since (its volume was mounted when the pod started) does not hold back a debug container that names nothing.
    await clusters.virtual.create(SECRETS, {"metadata": {"name": "db"}, "stringData": {"k": "v"}}, "default")
    p = pod("web")
    p["spec"]["volumes"] = [{"name": "db", "secret": {"secretName": "db"}}]
    async with running_syncer(clusters, rc_config(), clock=FakeClock()):
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web synced with its Secret")
        await clusters.virtual.delete(SECRETS, "db", "default")
        await wait_for(clusters.host, SECRETS, lambda o: f"{HOST_NS}/{h('db')}" not in o, namespace=HOST_NS,
                       timeout=10, what="the host copy deleted with it")
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            {"name": "dbg", "image": "busybox"}]}], "default", patch_type="json", subresource="ephemeralcontainers")
        hpods = await host_pods(clusters, lambda o: (o.get(hname("web")) or {}).get("spec", {}).get(
            "ephemeralContainers"), "the debug container added at once")
    assert [c["name"] for c in hpods[hname("web")]["spec"]["ephemeralContainers"]] == ["dbg"]


async def test_a_pod_created_again_under_its_name_waits_its_own_10_seconds(clusters: Clusters) -> None:
    # A pod deleted and created again under the same name can reach the syncer as one update with a new uid (a
    # re-list after a watch outage sees only the new pod). The 10 s are counted for each pod (by uid): the new
    # pod is not warned about at the old pod's 10 s.
    await create_app_objects(clusters)
    await clusters.virtual.delete(CONFIGMAPS, "app-config", "default")
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, app_pod(), "default")
        await eventually(lambda: syncer.pod_queue.pending().get("default/web") == 10, "web waits")
        clock.advance(9)
        storage = clusters.virtual_server.storage
        old = storage.objects(PODS)[("default", "web")]
        new = copy.deepcopy(old)
        new["metadata"]["uid"] = "0b5e2d5c-1a7e-4d8f-9c3b-2f6a7e8d9c01"
        storage.write(PODS, new, old)  # as the re-list shows it: the same name, another pod
        uid = new["metadata"]["uid"]
        await eventually(lambda: (syncer.virtual_pods.full("default/web") or {})["metadata"]["uid"] == uid,
                         "the new pod in the cache")
        await syncer.wait_idle()
        clock.advance(1)  # the old pod's 10 s: it is looked at again (the earlier of the two waits), and waits on
        await eventually(lambda: syncer.pod_queue.pending().get("default/web") == 9, "the new pod waits 9 s more")
        await syncer.wait_idle()
        assert not [e for e in (await clusters.virtual.list(EVENTS, "default"))["items"]
                    if e["involvedObject"]["name"] == "web"]
        clock.advance(9)  # the new pod's
        (event,) = await warnings_for(clusters, "web", what="the new pod's waiting SyncWarning")
    assert event["involvedObject"]["uid"] == uid


async def test_a_pvc_is_waited_for_and_an_ephemeral_volume_is_its_claim(clusters: Clusters) -> None:
    p = pod("db")
    p["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, p, "default")
        # Kubernetes' ephemeral-volume controller creates the claim <pod>-<volume> in the virtual cluster
        await clusters.virtual.create(PVCS, {"metadata": {"name": "db-scratch"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}, "default")
        objs = await host_pods(clusters, lambda o: hname("db") in o, "db synced once its claim is on the host")
    assert objs[hname("db")]["spec"]["volumes"][0] == {"name": "scratch",
                                                       "persistentVolumeClaim": {"claimName": h("db-scratch")}}


def token_volume(hpod: Obj) -> Obj:
    (vol,) = [v for v in hpod["spec"]["volumes"] if v["name"].startswith("kube-api-access-")]
    return vol


async def test_the_injected_token_is_a_virtual_cluster_token_in_an_annotation(clusters: Clusters) -> None:
    await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "builder"}}, "default")
    async with running_syncer(clusters, rc_config()):
        vpod = await clusters.virtual.create(PODS, pod("web", serviceAccountName="builder"), "default")
        objs = await host_pods(clusters, lambda o: hname("web") in o, "web synced")
        hp = objs[hname("web")]
        (name,) = [k for k in hp["metadata"]["annotations"] if k.startswith("vcluster.loft.sh/token-")]
        token = hp["metadata"]["annotations"][name]
        assert await whoami(clusters.virtual, token) == "system:serviceaccount:default:builder"
        # deleting the virtual pod takes the host pod, and with it the token
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        await host_pods(clusters, lambda o: hname("web") not in o, "host pod gone")
        await clusters.virtual.create(PODS, pod("web", serviceAccountName="builder"), "default")
        again = await host_pods(clusters, lambda o: hname("web") in o and o[hname("web")]["metadata"][
            "annotations"]["vcluster.loft.sh/object-uid"] != vpod["metadata"]["uid"], "the re-created pod synced")
    new_tokens = [v for k, v in again[hname("web")]["metadata"]["annotations"].items()
                  if k.startswith("vcluster.loft.sh/token-")]
    assert new_tokens and new_tokens != [token]  # a new token, bound to the new pod
    assert hp["spec"]["automountServiceAccountToken"] is False
    sources = token_volume(hp)["projected"]["sources"]
    assert sources[0] == {"downwardAPI": {"items": [{"path": "token", "mode": 0o644, "fieldRef": {
        "apiVersion": "v1", "fieldPath": f"metadata.annotations['{name}']"}}]}}
    assert sources[1]["configMap"]["name"] == h("kube-root-ca.crt")
    assert "serviceAccountToken" not in str(hp["spec"])


async def test_with_use_secrets_for_sa_tokens_the_token_is_in_a_secret_owned_by_the_host_pod(
        clusters: Clusters) -> None:
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    secret_name = h("web-sa-token")
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, pod("web"), "default")
        objs = await host_pods(clusters, lambda o: hname("web") in o, "web synced")
        hp = objs[hname("web")]
        secrets = await wait_for(clusters.host, SECRETS, lambda o: bool(
            o.get(f"{HOST_NS}/{secret_name}", {}).get("metadata", {}).get("ownerReferences")),
            namespace=HOST_NS, timeout=10, what="the token Secret owned by the host pod")
        secret = secrets[f"{HOST_NS}/{secret_name}"]
        vol = token_volume(hp)
        assert vol["projected"]["sources"][0] == {"secret": {"name": secret_name, "items": [
            {"key": vol["name"], "path": "token", "mode": 0o644}]}}
        token = base64.b64decode(secret["data"][vol["name"]]).decode()
        assert await whoami(clusters.virtual, token) == "system:serviceaccount:default:default"
        assert secret["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": hname("web"),
                                                          "uid": hp["metadata"]["uid"]}]
        assert not any(k.startswith("vcluster.loft.sh/token-") for k in hp["metadata"]["annotations"])
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        await host_pods(clusters, lambda o: hname("web") not in o, "host pod gone")
    with pytest.raises(ApiError) as err:  # nothing left behind
        await clusters.host.get(SECRETS, secret_name, HOST_NS)
    assert err.value.not_found


async def test_two_tokens_of_one_volume_get_two_keys_of_the_token_secret(clusters: Clusters) -> None:
    # A volume projecting the API server's token and one for another audience (a Vault's): each file gets its own
    # token. vcluster keys the Secret by the volume's name only, so both files would read one token, the API
    # server's landing in the file meant for the third party.
    from tests.test_token_renewal import claims
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    p = pod("web")
    p["spec"]["volumes"] = [{"name": "creds", "projected": {"sources": [
        {"serviceAccountToken": {"path": "kube-token"}},
        {"serviceAccountToken": {"audience": "vault", "path": "vault-token"}}]}}]
    secret_name = h("web-sa-token")
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, p, "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web synced"))[hname("web")]
        secret = await clusters.host.get(SECRETS, secret_name, HOST_NS)
    (creds,) = [v for v in hp["spec"]["volumes"] if v["name"] == "creds"]
    assert creds["projected"]["sources"] == [
        {"secret": {"name": secret_name, "items": [{"key": "creds", "path": "kube-token", "mode": 0o644}]}},
        {"secret": {"name": secret_name, "items": [{"key": "creds.1", "path": "vault-token", "mode": 0o644}]}}]
    audiences = {k: claims(base64.b64decode(v).decode())["aud"] for k, v in secret["data"].items()
                 if k.startswith("creds")}  # beside the injected kube-api-access volume's
    assert audiences == {"creds": ["https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                                   "https://kubernetes.default"], "creds.1": ["vault"]}


async def test_default_token_audiences_name_the_configured_cluster_domain(clusters: Clusters) -> None:
    # vcluster's translateProjectedVolume asks "https://kubernetes.default.svc." + networking.advanced.clusterDomain
    # first: the issuer of its virtual API server, which a client checking the audience expects
    from tests.test_token_renewal import claims
    doc = rc_config(networking={"advanced": {"clusterDomain": "corp.local"}})
    p = pod("web")
    p["spec"]["volumes"] = [{"name": "creds", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, p, "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web synced"))[hname("web")]
    (creds,) = [v for v in hp["spec"]["volumes"] if v["name"] == "creds"]
    field = creds["projected"]["sources"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"]
    token = hp["metadata"]["annotations"][field.removeprefix("metadata.annotations['").removesuffix("']")]
    assert claims(token)["aud"] == ["https://kubernetes.default.svc.corp.local", "https://kubernetes.default.svc",
                                    "https://kubernetes.default"]


async def test_a_pod_with_a_full_dns_config_of_its_own_reaches_the_host(clusters: Clusters) -> None:
    # as many nameservers and searches as a real API server takes (validatePodDNSConfig: 3, 32), and options: the
    # host pod gets the kubelet's merge for ClusterFirst (pkg/kubelet/network/dns/dns.go, appendDNSConfig and
    # formDNSConfigFitsLimits), the cluster's first, cut to what the host accepts for dnsPolicy None
    dns = await clusters.host.get(SERVICES, f"kube-dns-x-kube-system-x-{VCLUSTER}", HOST_NS)
    p = pod("resolver")
    p["spec"]["dnsConfig"] = {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9"],
                              "searches": [f"s{i}.example" for i in range(32)],
                              "options": [{"name": "ndots", "value": "2"}, {"name": "single-request-reopen"}]}
    from tests.test_label_keys import synced_or_refused
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, p, "default")
        hp = await synced_or_refused(clusters, "resolver")  # not refused by the host
    assert hp["spec"]["dnsConfig"] == {
        "nameservers": [dns["spec"]["clusterIP"], "1.1.1.1", "8.8.8.8"],
        "searches": ["default.svc.cluster.local", "svc.cluster.local", "cluster.local",
                     *(f"s{i}.example" for i in range(29))],
        "options": [{"name": "ndots", "value": "2"}, {"name": "single-request-reopen"}]}


async def test_a_missing_image_pull_secret_does_not_hold_the_pod_back(clusters: Clusters) -> None:
    # the kubelet starts a pod whose pull Secret is missing and tries the pull without it (pkg/kubelet/kubelet_pods.go
    # getPullSecretsForPod); vcluster syncs such a pod at once. The host name is still the translated one.
    from tests.test_label_keys import synced_or_refused
    p = pod("public-image")
    p["spec"]["imagePullSecrets"] = [{"name": "regcred-gone"}]
    async with running_syncer(clusters, rc_config(), clock=FakeClock()):  # never advanced: no 10 s warning either
        await clusters.virtual.create(PODS, p, "default")
        hp = await synced_or_refused(clusters, "public-image")
    assert hp["spec"]["imagePullSecrets"] == [{"name": h("regcred-gone")}]


async def service(c: Clusters, name: str, ns: str, ports: list[Obj], cluster: str = "host") -> Obj:
    client = c.host if cluster == "host" else c.virtual
    return await client.create(SERVICES, {"metadata": {"name": name}, "spec": {"ports": ports}}, ns)


async def test_dns_api_address_service_links_identity_and_service_account(clusters: Clusters) -> None:
    kube = await clusters.host.get(SERVICES, VCLUSTER, HOST_NS)
    dns = await clusters.host.get(SERVICES, f"kube-dns-x-kube-system-x-{VCLUSTER}", HOST_NS)
    db = await service(clusters, "db-main", "default", [{"name": "pg", "port": 5432}], cluster="virtual")
    await service(clusters, "other-ns", "kube-system", [{"port": 80}], cluster="virtual")  # another namespace
    p = pod("web", labels=None)
    p["metadata"]["labels"] = {"app": "web"}
    p["spec"]["dnsConfig"] = {"searches": ["corp.example"], "options": [{"name": "edns0"}]}
    p["spec"]["containers"][0]["env"] = [
        {"name": "KUBERNETES_SERVICE_PORT", "value": "6443"},  # the container's own value wins
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}]
    p["spec"]["volumes"] = [{"name": "info", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "uid", "fieldRef": {"fieldPath": "metadata.uid"}}]}}]
    async with running_syncer(clusters, rc_config()):
        vpod = await clusters.virtual.create(PODS, p, "default")
        objs = await host_pods(clusters, lambda o: hname("web") in o, "web synced")
    hp = objs[hname("web")]
    spec, ann = hp["spec"], hp["metadata"]["annotations"]
    ip, dns_ip, db_ip = kube["spec"]["clusterIP"], dns["spec"]["clusterIP"], db["spec"]["clusterIP"]
    assert spec["serviceAccountName"] == f"vc-workload-{VCLUSTER}" and spec["automountServiceAccountToken"] is False
    assert spec["dnsPolicy"] == "None"
    assert spec["dnsConfig"] == {"nameservers": [dns_ip], "options": [{"name": "ndots", "value": "5"},
                                                                      {"name": "edns0"}],
                                 "searches": ["default.svc.cluster.local", "svc.cluster.local", "cluster.local",
                                              "corp.example"]}
    assert spec["enableServiceLinks"] is False
    assert spec["hostAliases"] == [{"ip": ip, "hostnames": ["kubernetes.default.svc.cluster.local", "kubernetes",
                                                            "kubernetes.default", "kubernetes.default.svc"]}]
    env = spec["containers"][0]["env"]
    values = {e["name"]: e.get("value") for e in env}
    assert values["KUBERNETES_SERVICE_HOST"] == ip and values["KUBERNETES_SERVICE_PORT"] == "6443"
    assert [e["name"] for e in env].count("KUBERNETES_SERVICE_PORT") == 1
    assert values.get("DB_MAIN_SERVICE_HOST") == db_ip and values["DB_MAIN_SERVICE_PORT_PG"] == "5432", values
    assert values["DB_MAIN_PORT_5432_TCP"] == f"tcp://{db_ip}:5432"
    assert values["KUBERNETES_PORT"] == f"tcp://{ip}:443"  # the virtual cluster's kubernetes Service is not used
    assert not any(n.startswith("OTHER_NS_") for n in values)
    names = [e["name"] for e in env]
    assert names.index("DB_MAIN_SERVICE_HOST") < names.index("POD_NAME")  # service variables come first
    refs = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in env if "valueFrom" in e}
    assert refs == {"POD_NAME": "metadata.annotations['vcluster.loft.sh/name']",
                    "POD_NS": "metadata.annotations['vcluster.loft.sh/namespace']",
                    "APP": "metadata.labels['app']"}
    assert [i["fieldRef"]["fieldPath"] for i in spec["volumes"][0]["downwardAPI"]["items"]] == [
        "metadata.annotations['vcluster.loft.sh/labels']", "metadata.annotations['vcluster.loft.sh/uid']"]
    assert (ann["vcluster.loft.sh/name"], ann["vcluster.loft.sh/namespace"]) == ("web", "default")
    assert ann["vcluster.loft.sh/uid"] == vpod["metadata"]["uid"] and ann["vcluster.loft.sh/labels"] == 'app="web"'


async def test_without_the_dns_service_a_pod_waits_for_it(clusters: Clusters) -> None:
    await clusters.host.delete(SERVICES, f"kube-dns-x-kube-system-x-{VCLUSTER}", HOST_NS)
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        # ClusterFirstWithHostNet is the cluster's DNS too (Kubernetes pkg/kubelet/network/dns: a pod on the host
        # network gets it only with this policy)
        await clusters.virtual.create(PODS, pod("agent", dnsPolicy="ClusterFirstWithHostNet"), "default")
        await clusters.virtual.create(PODS, pod("hostdns", dnsPolicy="Default"), "default")
        await host_pods(clusters, lambda o: hname("hostdns") in o, "a pod with dnsPolicy Default does not wait")
        await eventually(lambda: {"default/web", "default/agent"} <= set(syncer.pod_queue.pending()), "both wait")
        clock.advance(10)  # behaviour.md 3.1: the SyncWarning after 10 s of waiting
        for name in ("web", "agent"):
            (event,) = await warnings_for(clusters, name, what="the waiting SyncWarning")
            assert event["message"] == (f'did not sync pod "{name}" to host yet: waiting for the DNS service '
                                        '"kube-system/kube-dns" to be synced to the host as "kube-dns-x-kube-system-x-'
                                        f'{VCLUSTER}"')
        await create_vcluster_host_objects(clusters.host, HOST_NS, VCLUSTER)
        await host_pods(clusters, lambda o: hname("web") in o and hname("agent") in o,
                        "both synced once the DNS service exists")


async def test_the_waiting_warning_is_written_though_its_first_write_fails(clusters: Clusters) -> None:
    # the SyncWarning was marked as recorded before its write, and a failed write (here one HTTP 500) was never
    # tried again: the reconcile's retry found it marked
    await clusters.host.delete(SERVICES, f"kube-dns-x-kube-system-x-{VCLUSTER}", HOST_NS)
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await eventually(lambda: "default/web" in syncer.pod_queue.pending(), "web waits")
        failed = clusters.virtual_server.faults.fail(500, verb="create", resource="events", agent=DEFAULT_USER_AGENT)
        clock.advance(10)  # the SyncWarning is due; its write is refused once
        await eventually(lambda: failed.times == 0, "the warning's first write refused")
        await syncer.wait_idle()  # that reconcile failed; its retry waits for its backoff
        clock.advance(60)
        (event,) = await warnings_for(clusters, "web", what="the waiting SyncWarning, written on the retry")
    assert event["message"].startswith('did not sync pod "web" to host yet: waiting for the DNS service')


async def test_a_headless_dns_service_gives_no_nameserver(clusters: Clusters) -> None:
    # a Service whose spec.clusterIP is "None" (headless) has no address to name: the host pod keeps its policy
    # rather than a nameserver "None", which the host refuses (validatePodDNSConfig: nameservers are IP addresses)
    dns = f"kube-dns-x-kube-system-x-{VCLUSTER}"
    copy_of = await clusters.host.get(SERVICES, dns, HOST_NS)
    await clusters.host.delete(SERVICES, dns, HOST_NS)
    await clusters.host.create(SERVICES, {"metadata": {k: copy_of["metadata"][k] for k in ("name", "labels",
                                                                                        "annotations")},
                                          "spec": {"clusterIP": "None", "ports": copy_of["spec"]["ports"]}}, HOST_NS)
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, pod("web"), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web synced"))[hname("web")]
    assert hp["spec"]["dnsPolicy"] == "ClusterFirst" and "dnsConfig" not in hp["spec"]


COREDNS = {  # vcluster's own CoreDNS pod, as its Deployment creates it in the virtual cluster
    "metadata": {"name": "coredns-5b6bc8d9f8-q7x2m",
                 "labels": {"k8s-app": "kube-dns", "pod-template-hash": "5b6bc8d9f8"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "coredns-5b6bc8d9f8",
                                      "uid": "4f8e2c1a-0000-4000-8000-000000000001", "controller": True}]},
    "spec": {
        "serviceAccountName": "coredns", "priorityClassName": "system-cluster-critical", "dnsPolicy": "Default",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "volumes": [{"name": "config-volume", "configMap": {"name": "coredns", "items": [
            {"key": "Corefile", "path": "Corefile"}, {"key": "NodeHosts", "path": "NodeHosts"}]}}],
        "containers": [{
            "name": "coredns", "image": "coredns/coredns:1.11.3", "imagePullPolicy": "IfNotPresent",
            "args": ["-conf", "/etc/coredns/Corefile"],
            "resources": {"limits": {"cpu": "1000m", "memory": "170Mi"}, "requests": {"cpu": "20m", "memory": "64Mi"}},
            "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}],
            "ports": [{"containerPort": 1053, "name": "dns", "protocol": "UDP"},
                      {"containerPort": 1053, "name": "dns-tcp", "protocol": "TCP"},
                      {"containerPort": 9153, "name": "metrics", "protocol": "TCP"}],
            "securityContext": {"runAsUser": 1001, "runAsNonRoot": True, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
            "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "initialDelaySeconds": 60},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}}}]}}


async def test_vclusters_own_coredns_pod_syncs_valid(clusters: Clusters) -> None:
    await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "coredns"}}, "kube-system")
    await clusters.virtual.create(CONFIGMAPS, {"metadata": {"name": "coredns"}, "data": {
        "Corefile": ".:1053 {\n  forward . /etc/resolv.conf\n}\n", "NodeHosts": ""}}, "kube-system")
    await clusters.virtual.create(SERVICES, {"metadata": {"name": "kube-dns", "labels": {"k8s-app": "kube-dns"}},
                                             "spec": {"selector": {"k8s-app": "kube-dns"}, "ports": [
                                                 {"name": "dns", "port": 53, "protocol": "UDP"},
                                                 {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}},
                                  "kube-system")
    name = COREDNS["metadata"]["name"]
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, copy.deepcopy(COREDNS), "kube-system")
        objs = await host_pods(clusters, lambda o: hname(name, "kube-system") in o, "CoreDNS synced")
    hp = objs[hname(name, "kube-system")]
    assert validate_pod(hp) == []  # what the host stored passes kube-apiserver's validation again
    spec = hp["spec"]
    assert spec["volumes"][0]["configMap"]["name"] == f"coredns-x-kube-system-x-{VCLUSTER}"
    assert spec["dnsPolicy"] == "Default" and "dnsConfig" not in spec  # CoreDNS resolves upstream, as in vcluster
    env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
    kube_dns = await clusters.virtual.get(SERVICES, "kube-dns", "kube-system")
    assert env["KUBE_DNS_SERVICE_HOST"] == kube_dns["spec"]["clusterIP"]  # its namespace's service links
    assert any(v["name"].startswith("kube-api-access-") for v in spec["volumes"])  # with its own token
    ann = hp["metadata"]["annotations"]
    assert [k for k in ann if k.startswith("vcluster.loft.sh/token-")]


async def test_a_token_secret_whose_pod_never_reached_the_host_is_removed(clusters: Clusters) -> None:
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    refused = clusters.host_server.faults.fail(422, verb="create", resource="pods", times=10_000,
                                               message="refused by a host admission webhook")
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await wait_for(clusters.host, SECRETS, lambda o: f"{HOST_NS}/{h('web-sa-token')}" in o, namespace=HOST_NS,
                       timeout=10, what="the token Secret written before the host pod")
        await refused.wait_hits(1)
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        await wait_for(clusters.host, SECRETS, lambda o: f"{HOST_NS}/{h('web-sa-token')}" not in o,
                       namespace=HOST_NS, timeout=10, what="the token Secret removed with the virtual pod")
    clusters.host_server.faults.clear()


async def test_a_tenant_pod_cannot_join_the_vclusters_own_service(clusters: Clusters) -> None:
    # The vcluster chart's Service selects `app: vcluster, release: <vcluster>` in the host namespace: every
    # tenant's route to the virtual API server. vcluster rewrites `release` on the host (LabelsToTranslate).
    p = pod("impostor")
    p["metadata"]["labels"] = {"app": "vcluster", "release": VCLUSTER}
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, p, "default")
        await host_pods(clusters, lambda o: hname("impostor") in o, "impostor synced")
    selected = await clusters.host.list(PODS, HOST_NS, label_selector=f"app=vcluster,release={VCLUSTER}")
    assert selected["items"] == []


async def test_a_pod_certificate_projection_is_not_synced(clusters: Clusters) -> None:
    # A projected podCertificate source (Kubernetes 1.34 alpha, 1.35 beta) would have the host's kubelet get the
    # pod a certificate identifying the host pod and its host service account: a host credential, which a tenant
    # pod never gets (behaviour.md 3: never the host's service-account token). The pod is refused, saying why.
    p = pod("certs")
    p["spec"]["volumes"] = [{"name": "id", "projected": {"sources": [
        {"configMap": {"name": "ca", "optional": True}},
        {"podCertificate": {"signerName": "example.com/host-signer", "keyType": "ED25519",
                            "credentialBundlePath": "bundle.pem"}}]}}]
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, p, "default")
        (event,) = await warnings_for(clusters, "certs", what="the refusal")
        await syncer.wait_idle()
        assert not (await clusters.host.list(PODS, HOST_NS))["items"]
    assert (event["reason"], event["message"]) == ("SyncWarning", (
        'did not sync pod "certs" to host because spec.volumes[0].projected.sources[1].podCertificate would have the '
        "host issue it a certificate of the host pod; pod certificates are not synced: remove the source"))
