"""Service-account tokens: the mode of the file that replaces a token projection, and an orphan's tokens once its
virtual pod is gone (syncer/controllers/podtranslate/tokens.py, podtokens.py; behaviour.md sections 3 and 3.1).

Expected modes are the kubelet's for a `serviceAccountToken` source (kubernetes pkg/volume/projected/projected.go
`collectData`: the volume's `defaultMode`, but 0600 when `mounterArgs.FsUser` or `FsGroup` is set, "When FsGroup is
set, we depend on SetVolumeOwnership to change from 0600 to 0640"; `FsUser` is `FsUserFrom`, pkg/volume/util/util.go:
the one `runAsUser` of all the pod's containers), except where a downward-API or Secret file, which the kubelet
writes as root's, could not be read by the pod's user that way."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from syncer.controllers.podtranslate.tokens import apply_tokens, fs_user, token_file_mode, token_sources
from syncer.kube.client import DEFAULT_USER_AGENT, ApiError
from syncer.kube.clock import FakeClock
from syncer.kube.resources import PODS, RUNTIMECLASSES, SECRETS
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc, rc_config, running_syncer
from tests.test_pod_sync import hname, host_pods, warnings_for
from tests.test_token_renewal import LIFETIME, annotations, orphaned_web, renewed, token_of, web_synced

Obj = dict[str, Any]
DEFAULT_MODE = 420  # 0644: SetDefaults_ProjectedVolumeSource, and the kube-api-access volume the API server injects
TOKEN = {"serviceAccountToken": {"path": "token"}}


def volume(default_mode: int | None = DEFAULT_MODE) -> Obj:
    projected: Obj = {"sources": [copy.deepcopy(TOKEN)]}
    if default_mode is not None:
        projected["defaultMode"] = default_mode
    return {"name": "creds", "projected": projected}


def spec(pod_context: Obj | None = None, *containers: Obj | None, vol: Obj | None = None) -> Obj:
    """A pod spec with one container per entry of `containers` (its securityContext, None for none)."""
    s: Obj = {"containers": [{"name": f"c{i}", "image": "busybox", **({"securityContext": sc} if sc else {})}
                             for i, sc in enumerate(containers or (None,))], "volumes": [vol or volume()]}
    if pod_context is not None:
        s["securityContext"] = pod_context
    return s


def test_fs_user_is_the_kubelets_fs_user_from() -> None:
    assert fs_user(spec()) is None  # no runAsUser anywhere
    assert fs_user(spec({"runAsUser": 1000}, None, None)) == 1000  # the pod's, for every container
    assert fs_user(spec({"runAsUser": 1000}, {"runAsUser": 2000})) == 2000  # the container's own wins
    assert fs_user(spec({"runAsUser": 1000}, None, {"runAsUser": 2000})) is None  # two users
    assert fs_user(spec(None, {"runAsUser": 1000}, None)) is None  # one container without a user
    s = spec({"runAsUser": 1000})
    s["initContainers"] = [{"name": "init", "image": "busybox", "securityContext": {"runAsUser": 0}}]
    assert fs_user(s) is None  # init containers count
    assert fs_user(spec({"runAsUser": 0})) == 0
    # FsUserFrom visits InitContainers|Containers only ("Exclude ephemeral containers"): a debug container kept
    # from before the host pod existed (parity row 51) does not change the file's owner
    debugged = spec({"runAsUser": 0})
    debugged["ephemeralContainers"] = [{"name": "debugger", "image": "busybox", "securityContext": {"runAsUser": 1000}}]
    assert fs_user(debugged) == 0


@pytest.mark.parametrize(("pod_spec", "mode"), [
    (spec(), 0o644),  # the defaultMode, as the kubelet (and vcluster's 0644)
    (spec(vol=volume(None)), 0o644),  # a volume without defaultMode (the API server defaults it to 0644)
    (spec(vol=volume(0o400)), 0o400),  # the tenant's defaultMode: vcluster's 0644 made it every user's
    (spec(vol=volume(0o440)), 0o440),
    (spec({"fsGroup": 2000}), 0o600),  # the kubelet's 0600, made 0640 with the fsGroup by SetVolumeOwnership
    (spec({"fsGroup": 2000, "runAsUser": 1000}), 0o600),
    (spec({"runAsUser": 0}), 0o600),  # the kubelet's 0600 for root; the file is root's here too
    (spec({"runAsUser": 1000}), 0o644),  # the kubelet's 0600 is the user's; a root file must be readable by others
    (spec({"runAsUser": 1000}, vol=volume(0o400)), 0o644),  # ... whatever the defaultMode, or the user cannot read it
    (spec({"runAsUser": 1000}, None, {"runAsUser": 2000}, vol=volume(0o400)), 0o400),  # no FsUser: the defaultMode
])
def test_token_file_mode(pod_spec: Obj, mode: int) -> None:
    assert token_file_mode(pod_spec, pod_spec["volumes"][0]) == mode


@pytest.mark.parametrize("secret_name", [None, "web-sa-token-x-ns-x-vc"])
def test_the_mode_is_judged_on_the_virtual_pods_spec(secret_name: str | None) -> None:
    # the host spec has the syncer's own vcluster-rewrite-hosts init container (uid 1001, podtranslate/hosts.py);
    # judged on it, a pod running as 1000 with defaultMode 0400 would get a file its user cannot read
    virtual = spec({"runAsUser": 1000}, vol=volume(0o400))
    host = copy.deepcopy(virtual)
    host["initContainers"] = [{"name": "vcluster-rewrite-hosts", "image": "alpine",
                               "securityContext": {"runAsUser": 1001}}]
    apply_tokens(host, {}, [(token_sources(host)[0], "t")], secret_name=secret_name, suffix=lambda: "abcdefgh",
                 pod_spec=virtual)
    (source,) = host["volumes"][0]["projected"]["sources"]
    (item,) = (source.get("secret") or source["downwardAPI"])["items"]
    assert item["mode"] == 0o644
    assert host["volumes"][0]["projected"]["defaultMode"] == 0o400  # the volume itself as the tenant wrote it


def token_item(hp: Obj, name: str) -> Obj:
    (vol,) = [v for v in hp["spec"]["volumes"] if v["name"] == name]
    source = vol["projected"]["sources"][0]  # the token's (kubesim's kube-api-access volume has it first)
    (item,) = (source.get("secret") or source["downwardAPI"])["items"]
    return dict(item)


@pytest.mark.parametrize("use_secrets", [False, True])
async def test_the_host_pods_token_files_get_the_kubelets_mode(clusters: Clusters, use_secrets: bool) -> None:
    doc = rc_config()
    if use_secrets:
        doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    owner_only = pod("owner", securityContext={"fsGroup": 2000})
    tight = pod("tight", volumes=[volume(0o400)])
    tight["spec"]["containers"][0]["volumeMounts"] = [{"name": "creds", "mountPath": "/var/run/creds"}]
    async with running_syncer(clusters, doc):
        for p in (owner_only, tight, pod("plain")):
            await clusters.virtual.create(PODS, p, "default")
        hps = await host_pods(clusters, lambda o: all(hname(n) in o for n in ("owner", "tight", "plain")),
                              "the three pods on the host")
    injected = [v["name"] for v in hps[hname("plain")]["spec"]["volumes"] if v["name"].startswith("kube-api-access")]
    assert token_item(hps[hname("plain")], injected[0])["mode"] == 0o644  # the injected volume's defaultMode 420
    owner_vol = [v["name"] for v in hps[hname("owner")]["spec"]["volumes"] if v["name"].startswith("kube-api")]
    assert token_item(hps[hname("owner")], owner_vol[0])["mode"] == 0o600
    assert token_item(hps[hname("tight")], "creds")["mode"] == 0o400


async def test_an_orphan_whose_virtual_pod_is_gone_keeps_nothing_of_the_syncer(clusters: Clusters) -> None:
    # behaviour.md section 3: an orphan's host pod stays when its virtual pod goes (podplan row 5, LeaveOrphan). Its
    # tokens are bound to the virtual pod, which is gone: the virtual API server no longer accepts them (kubernetes
    # pkg/serviceaccount/claims.go `Validate`: the bound pod must exist with the token's uid), and a TokenRequest for
    # it would be refused (TokenREST.Create: the pod is not found). So they are not renewed, nothing is kept for the
    # pod, and the token Secret goes with the host pod when the user deletes it.
    clock = FakeClock()
    dev = {"matchLabels": {"environment": "development"}}
    doc = rc_config(dev)
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    secret = hname("web-sa-token")
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, doc, clock=clock, token_lifetime=LIFETIME) as syncer:
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "prod"}}})
        await warnings_for(clusters, "web", lambda ws: any(w["reason"] == "Orphaned" for w in ws), "orphaned")
        await eventually(lambda: bool((clusters.host_server.storage.get(SECRETS, HOST_NS, secret) or {}).get(
            "metadata", {}).get("ownerReferences")), "the token Secret owned by the host pod")
        await syncer.wait_idle()
        await clusters.virtual.delete(PODS, "web", "default")  # not bound to a node: gone at once
        await eventually(lambda: syncer.virtual_pods.full("default/web") is None, "the syncer saw web go")
        await syncer.wait_idle()
        assert clusters.host_server.storage.get(PODS, HOST_NS, hname("web")) is not None  # left in place
        requests = len(clusters.virtual_server.requests)
        clock.advance(2 * LIFETIME)
        await syncer.wait_idle()
        assert "default/web" not in syncer.pod_queue.pending()  # no renewal timer set for the gone pod
        assert not [p for m, p, _ in clusters.virtual_server.requests[requests:] if p.endswith("/token")]
        assert renewed(syncer, "renewed") == renewed(syncer, "failed") == 0.0
        assert "default/web" not in syncer.pod_reconciler.tokens.failing and syncer.ready
        # the user deletes the orphan on the host: its token Secret goes with it
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)
        await eventually(lambda: clusters.host_server.storage.get(SECRETS, HOST_NS, secret) is None,
                         "the token Secret gone with the host pod")
    with pytest.raises(ApiError) as err:
        await clusters.host.get(SECRETS, secret, HOST_NS)
    assert err.value.not_found


async def test_an_orphans_host_pod_keeps_its_token_annotation_untouched(clusters: Clusters) -> None:
    # annotation mode: the orphan is never written once its virtual pod is gone (its tokens are invalid without the
    # pod, and an emptied annotation would only empty the mounted file of a workload the user keeps running)
    clock = FakeClock()
    dev = {"matchLabels": {"environment": "development"}}
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(dev), clock=clock, token_lifetime=LIFETIME) as syncer:
        key, first = await orphaned_web(clusters)
        await syncer.wait_idle()
        rv = (clusters.host_server.storage.get(PODS, HOST_NS, hname("web")) or {})["metadata"]["resourceVersion"]
        await clusters.virtual.delete(PODS, "web", "default")
        await eventually(lambda: syncer.virtual_pods.full("default/web") is None, "the syncer saw web go")
        await syncer.wait_idle()
        clock.advance(2 * LIFETIME)
        await syncer.wait_idle()
        hp = clusters.host_server.storage.get(PODS, HOST_NS, hname("web"))
        assert hp is not None and hp["metadata"]["resourceVersion"] == rv
        assert token_of(annotations(clusters)) == (key, first)


async def test_a_renewal_that_finds_its_virtual_pod_gone_is_no_failure(clusters: Clusters) -> None:
    # The renewal comes due as the virtual pod goes, before the syncer's cache has seen it go (here its virtual pod
    # watch and re-lists are refused): the TokenRequest is refused (TokenREST.Create: `pods "web" not found`). That is
    # no failure to count, to show in /readyz (which would take the vcluster pod out of its Service) or to retry: the
    # deletion's event reconciles the pod, and its host pod goes.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        await web_synced(clusters, syncer)
        down = [clusters.virtual_server.faults.fail(500, verb=verb, resource="pods", agent=DEFAULT_USER_AGENT,
                                                    times=10**6) for verb in ("watch", "list")]
        clusters.virtual_server.cut_watches()
        seen = len(clusters.virtual_server.requests)
        await clusters.virtual.delete(PODS, "web", "default")  # not bound to a node: gone at once
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: any(p.endswith("/token") for _, p, _ in clusters.virtual_server.requests[seen:]),
                         "the renewal tried")
        await syncer.wait_idle()
        assert syncer.virtual_pods.full("default/web") is not None  # the cache is behind
        assert renewed(syncer, "failed") == renewed(syncer, "renewed") == 0.0
        assert not [w for w in syncer.readiness_detail() if "service-account tokens" in w]
        assert "default/web" not in syncer.pod_queue.pending()  # no retry
        for fault in down:
            fault.times = 0

        def deleted() -> bool:  # the informer's retry comes on the clock: each look moves it on
            clock.advance(5)
            return clusters.host_server.storage.get(PODS, HOST_NS, hname("web")) is None
        await eventually(deleted, "the host pod deleted with its virtual pod")
    assert renewed(syncer, "failed") == 0.0
