"""Short-lived service-account tokens, renewed in place before 80% of their lifetime passes (as the kubelet renews
projected tokens), over real HTTP with the time on an injected clock; a failed renewal is retried and shows in
/readyz and a metric; `--token-lifetime 0` keeps vcluster's ten-year tokens (syncer/controllers/podtokens.py)."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from kubesim.tokens import whoami
from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.clock import FakeClock
from syncer.kube.resources import NAMESPACES, PODS, RUNTIMECLASSES, SECRETS
from syncer.manager import Syncer
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc, rc_config, running_syncer
from tests.test_pod_lifecycle import kubelet
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
LIFETIME = 600  # the shortest the API server allows (kube-apiserver: "may not specify a duration less than 10 minutes")
STATE = "runtimeclass-syncer.io/token-renewal"


def annotations(c: Clusters) -> dict[str, str]:
    hp = c.host_server.storage.get(PODS, HOST_NS, hname("web"))
    assert hp is not None
    return dict(hp["metadata"]["annotations"])


async def orphaned_web(c: Clusters) -> tuple[str, str]:
    """Create pod `web` of class gvisor, wait for its host pod, then relabel gvisor out of the selector and wait for
    the Orphaned event; returns web's token annotation (key, token) as first synced."""
    await c.virtual.create(PODS, pod("web", "gvisor"), "default")
    await host_pods(c, lambda o: hname("web") in o, "web on the host")
    key, first = token_of(annotations(c))
    await c.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "prod"}}})
    await warnings_for(c, "web", lambda ws: any(w["reason"] == "Orphaned" for w in ws), "orphaned")
    return key, first


def token_of(ann: dict[str, str]) -> tuple[str, str]:
    (key,) = [k for k in ann if k.startswith("vcluster.loft.sh/token-")]
    return key, ann[key]


def claims(token: str) -> Obj:
    body = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))


def renewed(syncer: Syncer, result: str) -> float:
    return syncer.metrics.registry.get_sample_value("runtimeclass_syncer_token_renewals_total",
                                                    {"result": result}) or 0.0


async def web_synced(c: Clusters, syncer: Syncer) -> str:
    """Create virtual pod default/web and wait until its host pod is there and the syncer idle; its first token."""
    await c.virtual.create(PODS, pod("web"), "default")
    await host_pods(c, lambda o: hname("web") in o, "web on the host")
    _, first = token_of(annotations(c))
    await syncer.wait_idle()
    return first


async def test_tokens_live_the_lifetime_and_are_renewed_at_80_percent(clusters: Clusters) -> None:
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        ann = annotations(clusters)
        key, first = token_of(ann)
        c = claims(first)
        assert c["exp"] - c["iat"] == LIFETIME  # asked for the lifetime, not vcluster's ten years
        state = json.loads(ann[STATE])
        assert state == {"renewAt": int(clock.wall() + 0.8 * LIFETIME),
                         "tokens": {key: ["https://kubernetes.default.svc.cluster.local",
                                          "https://kubernetes.default.svc", "https://kubernetes.default"]}}
        await syncer.wait_idle()
        clock.advance(0.8 * LIFETIME - 1)
        await syncer.wait_idle()
        assert token_of(annotations(clusters)) == (key, first)  # not yet
        clock.advance(1)
        await eventually(lambda: token_of(annotations(clusters))[1] != first, "the token renewed in place")
        key2, second = token_of(annotations(clusters))
        assert key2 == key  # the same annotation, which the mounted file reads: the kubelet refreshes it
        # the syncer's cache of host pods keeps which token annotations a pod has, not the tokens (about 1 KB each)
        cached = syncer.host_pods.full(f"{HOST_NS}/{hname('web')}")
        assert cached is not None and cached["metadata"]["annotations"][key] == ""
        assert await whoami(clusters.virtual, second) == "system:serviceaccount:default:default"
        assert json.loads(annotations(clusters)[STATE])["renewAt"] == int(clock.wall() + 0.8 * LIFETIME)
        assert renewed(syncer, "renewed") == 1.0
        await syncer.wait_idle()
        # a tenant's label change does not touch the tokens or their state
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: clusters.host_server.storage.get(PODS, HOST_NS, hname("web"))["metadata"][
            "labels"].get("v") == "2", "the label on the host")
        assert token_of(annotations(clusters)) == (key, second)


async def test_tokens_a_server_shortens_are_renewed_before_they_expire(clusters: Clusters,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    # kube-apiserver shortens a TokenRequest to its --service-account-max-token-expiration (at least an hour) and
    # says so in the answer's spec.expirationSeconds (pkg/registry/core/serviceaccount/storage/token.go): with a
    # two-hour --token-lifetime, renewing at 80% of two hours would leave the pod's tokens expired for 36 minutes.
    caplog.set_level(logging.INFO)
    clusters.virtual_server.tokens.max_expiration = 3600
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=7200) as syncer:
        first = await web_synced(clusters, syncer)
        assert claims(first)["exp"] - claims(first)["iat"] == 3600
        assert json.loads(annotations(clusters)[STATE])["renewAt"] == int(clock.wall() + 0.8 * 3600)
        clock.advance(0.8 * 3600)
        await eventually(lambda: token_of(annotations(clusters))[1] != first, "renewed before the token expires")
        assert json.loads(annotations(clusters)[STATE])["renewAt"] == int(clock.wall() + 0.8 * 3600)
        # and so on: the renewed tokens too are renewed after 80% of the hour granted, not of the two hours asked
        assert "next renewal in 2880 s" in caplog.text
        second = token_of(annotations(clusters))[1]
        await syncer.wait_idle()
        clock.advance(0.8 * 3600)
        await eventually(lambda: token_of(annotations(clusters))[1] != second, "renewed again before it expires")


async def test_a_projection_asking_for_a_shorter_token_gets_one_and_its_renewal_comes_sooner(
        clusters: Clusters) -> None:
    # The kubelet requests each projection's own expirationSeconds (defaulted to an hour by the API server,
    # SetDefaults_ServiceAccountTokenProjection; at least 10 minutes): a token for a Vault that asks for 10 minutes
    # gets 10 minutes, not the hour of --token-lifetime (vcluster: ten years), and all the pod's tokens are renewed
    # after 80% of the shortest. The API server's own injected volume (3607 s) and a defaulted projection keep the
    # lifetime the platform team chose (two hours here).
    web = pod("web")
    web["spec"]["volumes"] = [{"name": "vault", "projected": {"sources": [{"serviceAccountToken": {
        "audience": "vault", "expirationSeconds": 600, "path": "jwt"}}]}}, {"name": "api", "projected": {
            "sources": [{"serviceAccountToken": {"audience": "api", "path": "jwt"}}]}}]
    web["spec"]["containers"][0]["volumeMounts"] = [{"name": "vault", "mountPath": "/vault"},
                                                    {"name": "api", "mountPath": "/api"}]
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=7200) as syncer:
        await clusters.virtual.create(PODS, web, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()

        def lives() -> dict[str, int]:
            """Each token's audience -> its lifetime in seconds, as its claims say."""
            ann = annotations(clusters)
            out = {}
            for k, v in ann.items():
                if k.startswith("vcluster.loft.sh/token-"):
                    c = claims(v)
                    out[c["aud"][0]] = c["exp"] - c["iat"]
            return out

        first = lives()
        assert first == {"vault": 600, "api": 7200, "https://kubernetes.default.svc.cluster.local": 7200}
        state = json.loads(annotations(clusters)[STATE])
        assert state["renewAt"] == int(clock.wall() + 0.8 * 600)
        assert [v for k, v in state["expirationSeconds"].items()] == [600]
        before = {k: v for k, v in annotations(clusters).items() if k.startswith("vcluster.loft.sh/token-")}
        clock.advance(0.8 * 600)
        await eventually(lambda: all(annotations(clusters)[k] != v for k, v in before.items()),
                         "every token renewed before the Vault's expires")
        assert lives() == first  # the Vault's renewed for 10 minutes again
        assert json.loads(annotations(clusters)[STATE])["renewAt"] == int(clock.wall() + 0.8 * 600)


async def test_a_deleted_pod_leaves_no_renewal_waiting(clusters: Clusters) -> None:
    """The renewal a synced pod waits for goes with the pod: under churn (pods created and deleted all day) the
    waits of deleted pods would otherwise pile up for 80% of the lifetime each (about 0.8 KiB apiece; 5 MiB over
    the 10 minutes of the footprint benchmark's churn)."""
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        for name in ("web", "api"):
            await clusters.virtual.create(PODS, pod(name), "default")
        await host_pods(clusters, lambda o: hname("web") in o and hname("api") in o, "both on the host")
        await syncer.wait_idle()
        assert sorted(syncer.pod_queue.pending()) == ["default/api", "default/web"]  # each pod's renewal, later
        await clusters.virtual.delete(PODS, "web", "default")
        await host_pods(clusters, lambda o: hname("web") not in o, "web's host pod deleted with it")
        await syncer.wait_idle()
        assert list(syncer.pod_queue.pending()) == ["default/api"]  # the live pod's renewal stays
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: renewed(syncer, "renewed") == 1.0, "api's tokens renewed")


async def test_an_orphaned_pods_tokens_are_renewed(clusters: Clusters) -> None:
    # behaviour.md section 3: an orphan stays in both clusters and runs on, so its tokens are renewed as the kubelet
    # renews them for a running pod (token_manager.go requiresRefresh); with short lifetimes they would otherwise
    # expire within the hour and its in-cluster clients get 401
    clock = FakeClock()
    dev = {"matchLabels": {"environment": "development"}}
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(dev), clock=clock, token_lifetime=LIFETIME) as syncer:
        key, first = await orphaned_web(clusters)  # orphaned from now on
        await syncer.wait_idle()
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: token_of(annotations(clusters))[1] != first, "the orphan's token renewed")
        assert token_of(annotations(clusters))[0] == key
        assert renewed(syncer, "renewed") == 1.0
        await syncer.wait_idle()  # the renewal's echo reconciled too
        # told once: neither the renewal nor its echo records the Orphaned event or counts the refusal again
        (orphaned,) = [e for e in await warnings_for(clusters, "web") if e["reason"] == "Orphaned"]
        assert orphaned["count"] == 1
        assert syncer.metrics.registry.get_sample_value("runtimeclass_syncer_pods_refused_total",
                                                        {"runtime_class": "gvisor"}) == 1.0


async def test_a_failed_renewal_is_retried_and_shows_in_readyz(clusters: Clusters) -> None:
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        first = await web_synced(clusters, syncer)
        fault = clusters.virtual_server.faults.fail(503, verb="create", resource="serviceaccounts/token", times=2)
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: not syncer.ready, "not ready while the renewal fails")
        assert syncer.readiness_detail()[0].startswith(
            "renewing the service-account tokens of pod default/web failing: ")
        assert renewed(syncer, "failed") >= 1.0
        while fault.times:  # the retries come with backoff, on the clock
            await syncer.wait_idle()
            clock.advance(max(clock.pending()[0] - clock.now(), 0.0) if clock.pending() else 1.0)
            await eventually(lambda: fault.times == 0 or not syncer.pod_queue.idle or bool(clock.pending()),
                             "the retry scheduled")
        await eventually(lambda: token_of(annotations(clusters))[1] != first, "renewed once the server answers")
        await eventually(lambda: syncer.ready, "ready again")
        assert renewed(syncer, "renewed") == 1.0


async def test_a_debug_container_the_host_refuses_does_not_stop_the_renewal(clusters: Clusters) -> None:
    # The host namespace enforces Pod Security baseline, which refuses a privileged debug container; the pod keeps
    # it for good (ephemeral containers cannot be removed), so every update of the pod is refused from then on. The
    # tokens must still be renewed, or they expire with the workload running.
    await clusters.host.patch(NAMESPACES, HOST_NS, {"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}})
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        first = await web_synced(clusters, syncer)
        await clusters.virtual.patch(PODS, "web", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [
            {"name": "dbg", "image": "busybox", "securityContext": {"privileged": True}}]}], "default",
            patch_type="json", subresource="ephemeralcontainers")
        await warnings_for(clusters, "web", lambda ws: any(w["reason"] == "SyncError" for w in ws),
                           "the host's refusal told to the tenant")
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: token_of(annotations(clusters))[1] != first, "the token renewed all the same")
    assert renewed(syncer, "renewed") == 1.0


async def test_a_forbidden_binding_does_not_stop_the_renewal(clusters: Clusters) -> None:
    # a virtual API server (or RBAC) without pods/binding: the pod is shown Running all the same (README), and its
    # tokens must be renewed all the same
    clusters.virtual_server.faults.fail(403, verb="create", resource="pods/binding", times=10**6)
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer, \
            kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: (o.get(hname("web")) or {}).get("spec", {}).get("nodeName"),
                        "web scheduled on the host")
        _, first = token_of(annotations(clusters))
        await syncer.wait_idle()
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: token_of(annotations(clusters))[1] != first, "the token renewed all the same")
    assert renewed(syncer, "renewed") == 1.0


async def test_a_renewal_never_writes_the_tokens_into_a_host_pod_of_another_owner(clusters: Clusters) -> None:
    # The syncer's host pod watch is down; someone on the host replaces the synced pod by their own of the same
    # name. The tenant's fresh tokens must not land in that pod's annotations (whoever runs it could read them):
    # the renewal's patch names the uid of the host pod the cache holds, which the API server refuses for another
    # pod (422, metadata.uid is immutable), and the renewal counts as failed, to be retried.
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await syncer.wait_idle()
        down = clusters.host_server.faults.fail(500, verb="watch", resource="pods", agent=DEFAULT_USER_AGENT,
                                                times=1_000_000)  # down through the renewal and its retries
        clusters.host_server.cut_watches()
        await down.wait_hits(1)
        await clusters.host.delete(PODS, hname("web"), HOST_NS, grace_period_seconds=0)
        theirs = await clusters.host.create(PODS, pod(hname("web"), namespace=HOST_NS), HOST_NS)
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: renewed(syncer, "failed") + renewed(syncer, "renewed") >= 1.0, "the renewal tried")
        await syncer.wait_idle()
        after = clusters.host_server.storage.get(PODS, HOST_NS, hname("web"))
    assert after is not None and after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    assert not [k for k in after["metadata"].get("annotations") or {} if k.startswith("vcluster.loft.sh/token-")]
    assert renewed(syncer, "renewed") == 0.0 and renewed(syncer, "failed") >= 1.0


async def test_tokens_in_a_secret_are_renewed_in_the_secret(clusters: Clusters) -> None:
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    clock = FakeClock()
    async with running_syncer(clusters, doc, clock=clock, token_lifetime=LIFETIME) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        state = json.loads(annotations(clusters)[STATE])
        (vol,) = state["tokens"]
        secret = clusters.host_server.storage.get(SECRETS, HOST_NS, state["secret"])
        assert secret is not None
        first = secret["data"][vol]
        await syncer.wait_idle()
        clock.advance(0.8 * LIFETIME)

        def current() -> str:
            s = clusters.host_server.storage.get(SECRETS, HOST_NS, state["secret"])
            return str((s or {}).get("data", {}).get(vol))
        await eventually(lambda: current() != first, "the Secret's token renewed")
        assert await whoami(clusters.virtual, base64.b64decode(current()).decode()) == \
            "system:serviceaccount:default:default"


async def test_lifetime_zero_keeps_vclusters_ten_year_tokens(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(), token_lifetime=0):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
    ann = annotations(clusters)
    c = claims(token_of(ann)[1])
    assert c["exp"] - c["iat"] == 315_360_000  # vcluster's 10 * 365 days
    assert STATE not in ann
