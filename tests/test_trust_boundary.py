"""The trust boundary over real HTTP (issue 22, docs/security.md): the attacks a hostile tenant (admin of the
virtual cluster) tried against a running syncer, each reproduced as the issue describes it, and refused or made
harmless; and two ownership decisions (issue 24): a host pod whose uid annotation was removed is kept, and a
virtual pod bound while its host pod is pending is not deleted.

Names and values are the issue's, with this suite's vcluster (`test`): `vc-test` is the vcluster's own kubeconfig
Secret in the host namespace (the vcluster chart's `vc-<release>`)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kubesim.vcluster import host_name
from syncer.kube.resources import EVENTS, PODS, RUNTIMECLASSES, SECRETS
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, pod, rc, rc_config, running_syncer

Obj = dict[str, Any]
DEV = {"matchLabels": {"environment": "development"}}
RENEWAL = "runtimeclass-syncer.io/token-renewal"  # the syncer's renewal state (README "Service-account tokens")
VIRTUAL_RC = "runtimeclass-syncer.io/virtual-runtime-class"
OBJECT_NAME, OBJECT_NAMESPACE, OBJECT_UID = ("vcluster.loft.sh/object-name", "vcluster.loft.sh/object-namespace",
                                             "vcluster.loft.sh/object-uid")
OPT_OUT = "vcluster.loft.sh/disable-subdomain-rewrite"  # vcluster's documented opt-out a tenant sets on a pod
KUBECONFIG_SECRET = f"vc-{VCLUSTER}"
KUBECONFIG = base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()


def hname(name: str) -> str:
    return host_name(name, "default", VCLUSTER)


def host_pod(c: Clusters, name: str) -> Obj | None:
    return c.host_server.storage.get(PODS, HOST_NS, hname(name))


async def create_kubeconfig_secret(c: Clusters) -> Obj:
    return await c.host.create(SECRETS, {"metadata": {"name": KUBECONFIG_SECRET}, "data": {"config": KUBECONFIG}},
                               HOST_NS)


async def round_trip(c: Clusters, name: str, step: str) -> None:
    """Change a plain label of the virtual pod and wait until the host pod has it: every reconcile before (the one
    the host pod's creation brings, with its token renewal) is done."""
    await c.virtual.patch(PODS, name, {"metadata": {"labels": {"step": step}}}, "default")
    await eventually(lambda: ((host_pod(c, name) or {}).get("metadata") or {}).get("labels", {}).get("step") == step,
                     f"label step={step} on the host pod of {name}")


@pytest.mark.parametrize("automount", [True, False], ids=["with-token", "without-token"])
@pytest.mark.parametrize("secret_mode", [False, True], ids=["annotation-mode", "secret-mode"])
async def test_attack_1_a_renewal_annotation_cannot_write_a_host_secret(clusters: Clusters, automount: bool,
                                                                        secret_mode: bool) -> None:
    before = await create_kubeconfig_secret(clusters)
    doc = rc_config()
    if secret_mode:
        doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    async with running_syncer(clusters, doc) as syncer:
        evil = pod("evil-renew", automountServiceAccountToken=automount)
        evil["metadata"]["annotations"] = {
            RENEWAL: json.dumps({"renewAt": 0, "tokens": {"config": ["x"]}, "secret": KUBECONFIG_SECRET})}
        await clusters.virtual.create(PODS, evil, "default")
        await round_trip(clusters, "evil-renew", "1")
        # after sync: the tenant adds it again, aimed at the token Secret's own key
        await clusters.virtual.patch(PODS, "evil-renew", {"metadata": {"annotations": {RENEWAL: json.dumps(
            {"renewAt": 0, "tokens": {"config": ["x"]}, "secret": KUBECONFIG_SECRET})}}}, "default")
        await round_trip(clusters, "evil-renew", "2")
        await syncer.wait_idle()
        after = await clusters.host.get(SECRETS, KUBECONFIG_SECRET, HOST_NS)
        ann = host_pod(clusters, "evil-renew")["metadata"]["annotations"]  # type: ignore[index]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["data"] == {"config": KUBECONFIG}
    if automount:  # the state is the syncer's own: its tokens, and in Secret mode the pod's own token Secret
        state = json.loads(ann[RENEWAL])
        assert state.get("secret", "") == (host_name("evil-renew-sa-token", "default", VCLUSTER) if secret_mode
                                           else "")
        assert "config" not in state["tokens"]
    else:  # no token: no renewal state at all
        assert RENEWAL not in ann


async def test_attack_1_a_renewal_annotation_cannot_overwrite_the_pods_identity(clusters: Clusters) -> None:
    forged = json.dumps({"renewAt": 0, "tokens": {OBJECT_NAME: ["x"], OBJECT_NAMESPACE: ["x"]}})
    async with running_syncer(clusters, rc_config()):
        evil = pod("evil-renew", automountServiceAccountToken=False)
        evil["metadata"]["annotations"] = {RENEWAL: forged}
        vpod = await clusters.virtual.create(PODS, evil, "default")
        await round_trip(clusters, "evil-renew", "1")
        ann = host_pod(clusters, "evil-renew")["metadata"]["annotations"]  # type: ignore[index]
        assert (ann[OBJECT_NAME], ann[OBJECT_NAMESPACE], ann[OBJECT_UID]) == (
            "evil-renew", "default", vpod["metadata"]["uid"])
        assert RENEWAL not in ann
        # still recognised as the syncer's: it goes with its virtual pod
        await clusters.virtual.delete(PODS, "evil-renew", "default")
        await eventually(lambda: host_pod(clusters, "evil-renew") is None, "the host pod deleted with its virtual pod")


@pytest.mark.parametrize("when", ["on-create", "after-sync"])
async def test_attack_2_a_forged_runtime_class_annotation_does_not_orphan_a_pod(clusters: Clusters,
                                                                               when: str) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        ghost = pod("ghost")  # no runtimeClassName
        if when == "on-create":
            ghost["metadata"]["annotations"] = {VIRTUAL_RC: "ghost-rc"}
        await clusters.virtual.create(PODS, ghost, "default")
        if when == "after-sync":
            await round_trip(clusters, "ghost", "1")
            await clusters.virtual.patch(PODS, "ghost", {"metadata": {"annotations": {VIRTUAL_RC: "ghost-rc"}}},
                                         "default")
        await round_trip(clusters, "ghost", "2")
        assert VIRTUAL_RC not in host_pod(clusters, "ghost")["metadata"]["annotations"]  # type: ignore[index]
        # kubectl delete pod --grace-period=0 --force
        await clusters.virtual.delete(PODS, "ghost", "default", grace_period_seconds=0)
        await eventually(lambda: host_pod(clusters, "ghost") is None, "the host pod deleted, not left as an orphan")


async def test_reserved_labels_and_annotations_never_reach_the_host(clusters: Clusters) -> None:
    # the keys a tenant may not set (docs/security.md); the opt-out a tenant may set travels
    labels = {"vcluster.loft.sh/ns-label-test-x-0123456789": "x", "runtimeclass-syncer.io/anything": "x",
              "vcluster.loft.sh/label-test-x-4d3e0bd1a5": "x", "app": "web"}
    annotations = {"vcluster.loft.sh/owner-set-kind": "StatefulSet", "vcluster.loft.sh/hosts-rewritten": "true",
                   "runtimeclass-syncer.io/synced-annotations": "{}", "vcluster.loft.sh/labels": 'app="forged"',
                   "vcluster.loft.sh/object-host-name": "vc-test", "vcluster.loft.sh/token-forged": "t",
                   OPT_OUT: "true", "note": "kept"}
    async with running_syncer(clusters, rc_config()):
        p = pod("web")
        p["metadata"] |= {"labels": dict(labels), "annotations": dict(annotations)}
        await clusters.virtual.create(PODS, p, "default")
        await round_trip(clusters, "web", "1")
        first = host_pod(clusters, "web")["metadata"]  # type: ignore[index]
        # after sync: the same keys with other values
        await clusters.virtual.patch(PODS, "web", {"metadata": {
            "labels": {k: "y" for k in labels if k != "app"},
            "annotations": {k: "y" for k in annotations if k not in ("note", OPT_OUT)}}}, "default")
        await round_trip(clusters, "web", "2")
        second = host_pod(clusters, "web")["metadata"]  # type: ignore[index]
    for meta in (first, second):
        assert meta["labels"]["app"] == "web" and meta["annotations"]["note"] == "kept"
        assert meta["annotations"][OPT_OUT] == "true"
        for k in labels:
            if k != "app":
                assert k not in meta["labels"], k
        for k in ("vcluster.loft.sh/owner-set-kind", "vcluster.loft.sh/hosts-rewritten",
                  "vcluster.loft.sh/token-forged"):
            assert k not in meta["annotations"], k
        # the syncer writes this one itself (vcluster's HostAnnotations): the host pod's own name, not the tenant's
        assert meta["annotations"]["vcluster.loft.sh/object-host-name"] == "web-x-default-x-test"
        # the merge bases are the syncer's: the labels line is the virtual pod's real labels
        assert "forged" not in meta["annotations"]["vcluster.loft.sh/labels"]
        assert json.loads(meta["annotations"]["runtimeclass-syncer.io/synced-annotations"])


async def test_a_tenant_secret_named_like_a_token_secret_is_neither_written_nor_deleted(clusters: Clusters) -> None:
    # vcluster syncs the virtual Secret "web-sa-token" to the host name of pod web's token Secret
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    token_secret = host_name("web-sa-token", "default", VCLUSTER)
    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(SECRETS, {"metadata": {"name": "web-sa-token", "annotations": {
            "vcluster.loft.sh/force-sync": "true"}}, "data": {"a": KUBECONFIG}}, "default")
        await eventually(lambda: clusters.host_server.storage.get(SECRETS, HOST_NS, token_secret) is not None,
                         "the tenant's Secret synced by vcluster's stand-in")
        before = await clusters.host.get(SECRETS, token_secret, HOST_NS)
        await clusters.virtual.create(PODS, pod("web"), "default")
        await eventually(lambda: syncer.pod_queue.num_requeues("default/web") >= 1, "the create refused and retried")
        assert host_pod(clusters, "web") is None  # its token has nowhere safe to go: not created
        await eventually(lambda: [e["message"] for e in clusters.virtual_server.storage.objects(EVENTS).values()
                                  if e["involvedObject"]["name"] == "web" and e["reason"] == "SyncError"] == [
            f'did not sync pod "web" to host because host secret {HOST_NS}/{token_secret} is not the token secret of '
            "pod default/web (another object holds its name); its tokens are not written there: the server rejected "
            "our request due to an error in our request: rename the pod, or the virtual Secret or pod that holds the "
            "name"], "the tenant told why")  # the 422 of a failed JSON-patch test (apimachinery's words)
        retries = syncer.pod_queue.num_requeues("default/web")
        await eventually(lambda: syncer.pod_queue.num_requeues("default/web") >= retries + 2, "retried twice more")
        told = [e for e in clusters.virtual_server.storage.objects(EVENTS).values()
                if e["involvedObject"]["name"] == "web" and e["reason"] == "SyncError"]
        assert [e.get("count", 1) for e in told] == [1]  # once per cause, not per retry
        await clusters.virtual.delete(PODS, "web", "default", grace_period_seconds=0)
        await eventually(lambda: clusters.virtual_server.storage.get(PODS, "default", "web") is None, "web gone")
        await syncer.wait_idle()
        after = await clusters.host.get(SECRETS, token_secret, HOST_NS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["data"] == before["data"]


async def test_row_17_a_host_pod_that_lost_its_uid_annotation_is_kept(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config()):
        vpod = await clusters.virtual.create(PODS, pod("web"), "default")
        await round_trip(clusters, "web", "1")
        uid = host_pod(clusters, "web")["metadata"]["uid"]  # type: ignore[index]
        # a host webhook or a manual edit removes the annotation
        await clusters.host.patch(PODS, hname("web"), [{"op": "remove", "path": "/metadata/annotations/"
                                                        "vcluster.loft.sh~1object-uid"}], HOST_NS, patch_type="json")
        await eventually(lambda: (host_pod(clusters, "web") or {}).get("metadata", {}).get("annotations", {}).get(
            OBJECT_UID) == vpod["metadata"]["uid"], "the annotation written back")
        await round_trip(clusters, "web", "2")
        assert host_pod(clusters, "web")["metadata"]["uid"] == uid  # type: ignore[index]  # the same pod: kept


async def test_row_18_a_virtual_pod_bound_while_its_host_pod_is_pending_is_kept(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await round_trip(clusters, "web", "1")
        assert not host_pod(clusters, "web")["spec"].get("nodeName")  # type: ignore[index]  # pending on the host
        await clusters.virtual.bind("web", "default", "node-7")  # the tenant binds it (it is admin)
        await round_trip(clusters, "web", "2")
        assert clusters.virtual_server.storage.get(PODS, "default", "web") is not None


@pytest.mark.parametrize("secret_mode", [False, True], ids=["annotation-mode", "secret-mode"])
async def test_a_forged_renewal_state_already_on_the_host_renews_only_the_pods_own_tokens(clusters: Clusters,
                                                                                          secret_mode: bool) -> None:
    # A pod synced by an earlier version kept the renewal state a tenant wrote (the syncer keeps that annotation as
    # the host has it): the renewal still writes only the pod's own token annotations, or its own token Secret.
    before = await create_kubeconfig_secret(clusters)
    doc = rc_config()
    if secret_mode:
        doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    own_secret = host_name("web-sa-token", "default", VCLUSTER)
    async with running_syncer(clusters, doc):
        vpod = await clusters.virtual.create(PODS, pod("web"), "default")
        await round_trip(clusters, "web", "1")
        state = json.loads(host_pod(clusters, "web")["metadata"]["annotations"][RENEWAL])  # type: ignore[index]
        (token_key,) = state["tokens"]

        def token() -> str:
            if secret_mode:
                return str(clusters.host_server.storage.get(SECRETS, HOST_NS, own_secret)["data"][token_key])  # type: ignore[index]
            return str(host_pod(clusters, "web")["metadata"]["annotations"][token_key])  # type: ignore[index]

        first = token()
        forged = {"renewAt": 0, "tokens": {token_key: state["tokens"][token_key], OBJECT_NAME: ["x"],
                                           OBJECT_NAMESPACE: ["x"]}}
        if secret_mode:
            forged["secret"] = KUBECONFIG_SECRET
        await clusters.host.patch(PODS, hname("web"), {"metadata": {"annotations": {RENEWAL: json.dumps(forged)}}},
                                  HOST_NS)
        await eventually(lambda: token() != first, "the pod's own token renewed")
        await round_trip(clusters, "web", "2")
        ann = host_pod(clusters, "web")["metadata"]["annotations"]  # type: ignore[index]
        after = await clusters.host.get(SECRETS, KUBECONFIG_SECRET, HOST_NS)
    assert (ann[OBJECT_NAME], ann[OBJECT_NAMESPACE], ann[OBJECT_UID]) == ("web", "default", vpod["metadata"]["uid"])
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    renewed = json.loads(ann[RENEWAL])
    assert set(renewed["tokens"]) == {token_key}
    assert renewed.get("secret", "") == (own_secret if secret_mode else "")
