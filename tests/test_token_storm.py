"""A pod with more service-account token projections than the host can hold costs no TokenRequest (audit: thousands of
projections, one TokenRequest each, one after another, on every retry of a create the host must refuse, kept the
pod workers from other namespaces' pods), and a pod's TokenRequests go out a few at a time (podtokens.py,
podtranslate/tokens.py "Too many tokens")."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from syncer.controllers.podtranslate import tokens
from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.clock import FakeClock
from syncer.kube.resources import PODS
from syncer.manager import Syncer
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc_config, running_syncer
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
# kube-apiserver: the keys and values of an object's annotations, at most 256 KiB (apimachinery pkg/api/validation
# ValidateAnnotationsSize: TotalAnnotationSizeLimitB = 256 * 1024), and a Secret's data values, at most 1 MiB
# (pkg/apis/core/validation ValidateSecret: MaxSecretSize = 1 * 1024 * 1024)
ANNOTATIONS_LIMIT = 262144
SECRET_LIMIT = 1048576
# the shortest token kube-apiserver can issue for a TokenRequest bound to a pod (podtranslate/tokens.py "Too many
# tokens"): base64url of {"alg":"ES256"} (20) . of the shortest claims, 279 bytes (372) . of an ES256 signature,
# 64 bytes (86); in annotation mode with its key `vcluster.loft.sh/token-` and 8 random characters (31)
MIN_TOKEN = 480
MIN_TOKEN_ANNOTATION = 511
LIFETIME = 600  # the shortest token the API server issues


def storm_pod(name: str, count: int) -> Obj:
    """A pod with `count` volumes, each projecting a token for an audience of its own (and no other: the API
    server's ServiceAccount admission adds none)."""
    p = pod(name, automountServiceAccountToken=False)
    p["spec"]["volumes"] = [{"name": f"t{i}", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "audience": f"aud-{i}"}}]}} for i in range(count)]
    return p


def token_requests(c: Clusters) -> int:
    """The TokenRequests the virtual API server has received."""
    return sum(1 for method, path, _ in c.virtual_server.requests
               if method == "POST" and path.endswith("/token") and "/serviceaccounts/" in path)


def test_the_bound_is_the_shortest_token_and_the_hosts_limits() -> None:
    assert (tokens.MIN_TOKEN_BYTES, tokens.MIN_TOKEN_ANNOTATION_BYTES) == (MIN_TOKEN, MIN_TOKEN_ANNOTATION)
    assert (tokens.ANNOTATIONS_LIMIT, tokens.SECRET_DATA_LIMIT) == (ANNOTATIONS_LIMIT, SECRET_LIMIT)
    # the token a real kube-apiserver issues for the shortest names, audience and issuer (an ES256 key, no kid, no
    # jti): header.claims.signature as go-jose writes them; the bound is that long
    header = "eyJhbGciOiJFUzI1NiJ9"  # {"alg":"ES256"}
    assert len(header) + 1 + 372 + 1 + 86 == MIN_TOKEN


def test_annotation_mode_refuses_just_over_the_bound_and_counts_the_other_annotations() -> None:
    fits = ANNOTATIONS_LIMIT // MIN_TOKEN_ANNOTATION  # 513
    assert tokens.oversize("p", fits, {}, secret=False) is None
    assert tokens.oversize("p", fits + 1, {}, secret=False) == (
        'did not sync pod "p" to host because its 514 service-account token projections would need at least 262654 '
        "bytes of host pod annotations, its other annotations included, over the host's limit of 262144 bytes: use "
        "fewer token projections")
    room = ANNOTATIONS_LIMIT - fits * MIN_TOKEN_ANNOTATION  # 1 byte left (key "n", value "": 1 byte)
    assert tokens.oversize("p", fits, {"n": ""}, secret=False) is None
    assert tokens.oversize("p", fits, {"n": "é"}, secret=False) is not None  # UTF-8 bytes, as Go's len
    assert room == 1
    # one token beside annotations that leave it no room
    assert tokens.oversize("p", 1, {"big": "x" * (ANNOTATIONS_LIMIT - MIN_TOKEN_ANNOTATION - 3)}, secret=False) is None
    assert "262145 bytes" in (tokens.oversize(
        "p", 1, {"big": "x" * (ANNOTATIONS_LIMIT - MIN_TOKEN_ANNOTATION - 2)}, secret=False) or "")


def test_secret_mode_refuses_just_over_the_secrets_limit() -> None:
    fits = SECRET_LIMIT // MIN_TOKEN  # 2184: the pod's annotations do not hold the tokens
    assert tokens.oversize("p", fits, {"big": "x" * 200_000}, secret=True) is None
    assert tokens.oversize("p", fits + 1, {}, secret=True) == (
        'did not sync pod "p" to host because its 2185 service-account token projections would need at least 1048800 '
        "bytes of its token secret's data, over the host's limit of 1048576 bytes: use fewer token projections")


async def refused_without_a_token(c: Clusters, syncer: Syncer, name: str) -> None:
    """Wait until the pod reconciler has looked at virtual pod default/`name`; it sent no TokenRequest and created
    nothing on the host."""
    await eventually(lambda: syncer.pod_reconciler.virtual_pods.get(f"default/{name}") is not None, "the pod seen")
    await syncer.wait_idle()
    assert token_requests(c) == 0
    assert c.host_server.storage.get(PODS, HOST_NS, hname(name)) is None


@pytest.mark.parametrize(("secret_mode", "count"), [(False, 1000), (True, 2500)])
async def test_a_pod_whose_tokens_cannot_fit_costs_no_token_request(clusters: Clusters, secret_mode: bool,
                                                                    count: int) -> None:
    doc = rc_config()
    if secret_mode:
        doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(PODS, storm_pod("storm", count), "default")
        await refused_without_a_token(clusters, syncer, "storm")
        # another pod's tokens are requested as before
        await clusters.virtual.create(PODS, storm_pod("web", 2), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        assert token_requests(clusters) == 2
        assert clusters.host_server.storage.get(PODS, HOST_NS, hname("storm")) is None


def host_annotations(c: Clusters, name: str) -> dict[str, str]:
    hp = c.host_server.storage.get(PODS, HOST_NS, hname(name))
    assert hp is not None
    return dict(hp["metadata"]["annotations"])


async def test_the_tenant_is_told_the_refusal_is_counted_and_not_retried(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config()) as syncer:
        # what the syncer writes on a host pod of a name as long, beside the tokens: counted with them
        await clusters.virtual.create(PODS, storm_pod("other", 0), "default")
        await host_pods(clusters, lambda o: hname("other") in o, "other on the host")
        own = tokens.annotations_size(host_annotations(clusters, "other"))
        await clusters.virtual.create(PODS, storm_pod("storm", 1000), "default")
        (event,) = await warnings_for(clusters, "storm", what="the refusal")
        await syncer.wait_idle()
        assert syncer.pod_queue.pending_delay("default/storm") is None  # no retry, not even with backoff
        assert syncer.metrics.registry.get_sample_value("runtimeclass_syncer_pods_refused_total",
                                                        {"runtime_class": ""}) == 1
        assert token_requests(clusters) == 0
        assert clusters.host_server.storage.get(PODS, HOST_NS, hname("storm")) is None
    assert (event["reason"], event["message"], event.get("count", 1)) == ("SyncWarning", (
        f'did not sync pod "storm" to host because its 1000 service-account token projections would need at least '
        f"{1000 * MIN_TOKEN_ANNOTATION + own} bytes of host pod annotations, its other annotations included, over the "
        "host's limit of 262144 bytes: use fewer token projections"), 1)


async def test_a_change_of_the_pod_looks_again(clusters: Clusters) -> None:
    # two tokens beside an annotation that leaves them no room: refused; once the tenant removes it, the pod syncs
    p = storm_pod("web", 2)
    p["metadata"]["annotations"] = {"big": "x" * (ANNOTATIONS_LIMIT - 2 * MIN_TOKEN_ANNOTATION - 300)}
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, p, "default")
        (event,) = await warnings_for(clusters, "web", what="the refusal")
        assert "its 2 service-account token projections" in event["message"]
        await syncer.wait_idle()
        assert token_requests(clusters) == 0
        await clusters.virtual.patch(PODS, "web", {"metadata": {"annotations": {"big": None}}}, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
    assert token_requests(clusters) == 2
    assert sum(1 for k in host_annotations(clusters, "web") if k.startswith("vcluster.loft.sh/token-")) == 2


async def test_a_pod_under_the_bound_syncs_with_every_token(clusters: Clusters) -> None:
    # 300 tokens take ~200 KB of annotations here (the embedded API server's tokens are ~650 bytes): under the
    # host's limit, and 300 * 511 is under the bound
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, storm_pod("many", 300), "default")
        pods = await host_pods(clusters, lambda o: hname("many") in o, "many on the host")
    ann = pods[hname("many")]["metadata"]["annotations"]
    assert sum(1 for k in ann if k.startswith("vcluster.loft.sh/token-")) == 300
    assert token_requests(clusters) == 300


def claims(token: str) -> Obj:
    body = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))


def audience_by_volume(c: Clusters, name: str) -> dict[str, list[str]]:
    """Volume -> the audiences of the token its file reads (its downward-API item's annotation)."""
    hp = c.host_server.storage.get(PODS, HOST_NS, hname(name))
    assert hp is not None
    ann = hp["metadata"]["annotations"]
    out = {}
    for vol in hp["spec"]["volumes"]:
        for src in vol.get("projected", {}).get("sources", []):
            if "downwardAPI" in src:
                (item,) = src["downwardAPI"]["items"]
                key = item["fieldRef"]["fieldPath"].removeprefix("metadata.annotations['").removesuffix("']")
                out[vol["name"]] = claims(ann[key])["aud"]
    return out


def count_in_flight(monkeypatch: pytest.MonkeyPatch, syncer: Syncer) -> list[int]:
    """Count the TokenRequests the syncer has on their way at once; returns [now, most, answered]."""
    client = syncer.pod_reconciler.tokens.virtual
    request = client.token_request
    seen = [0, 0, 0]

    async def counted(*args: Any, **kwargs: Any) -> Obj:
        seen[0] += 1
        seen[1] = max(seen[:2])
        try:
            return await request(*args, **kwargs)
        finally:
            seen[0] -= 1
            seen[2] += 1

    monkeypatch.setattr(client, "token_request", counted)
    return seen


async def test_a_pods_token_requests_go_out_a_few_at_a_time_and_each_token_to_its_projection(
        clusters: Clusters, monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 projections: 20 round trips one after another held a pod worker for all of them; now at most 8 are on
    # their way at once (each worker sends its next once its last is answered, so 8 start together), and each
    # token still goes to the file of its own projection, though the first request is answered last
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(), clock=clock, token_lifetime=LIFETIME) as syncer:
        seen = count_in_flight(monkeypatch, syncer)
        held = clusters.virtual_server.faults.hold(verb="create", resource="serviceaccounts/token",
                                                   agent=DEFAULT_USER_AGENT)
        await clusters.virtual.create(PODS, storm_pod("web", 20), "default")
        await eventually(lambda: seen[2] == 19, "all TokenRequests but the held one answered")
        held.release()
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        assert 1 < seen[1] <= 8 and seen[0] == 0
        assert audience_by_volume(clusters, "web") == {f"t{i}": [f"aud-{i}"] for i in range(20)}
        first = audience_tokens(clusters, "web")
        await syncer.wait_idle()
        # the renewal too, each annotation renewed with its own audience's token
        seen[1] = 0
        clock.advance(0.8 * LIFETIME)
        await eventually(lambda: not set(audience_tokens(clusters, "web")) & set(first), "the tokens renewed")
        assert 1 < seen[1] <= 8 and seen[0] == 0
        assert audience_by_volume(clusters, "web") == {f"t{i}": [f"aud-{i}"] for i in range(20)}
    assert token_requests(clusters) == 40


def audience_tokens(c: Clusters, name: str) -> list[str]:
    hp = c.host_server.storage.get(PODS, HOST_NS, hname(name))
    assert hp is not None
    return [v for k, v in hp["metadata"]["annotations"].items() if k.startswith("vcluster.loft.sh/token-")]
