"""Token projections replaced by virtual-cluster tokens (podtranslate/tokens.py), in both of vcluster's modes."""

from __future__ import annotations

import copy
from typing import Any

from syncer.controllers.podtranslate.tokens import (
    RenewalState,
    TokenSource,
    apply_tokens,
    token_request,
    token_sources,
)

Obj = dict[str, Any]
# vcluster, pkg/controllers/resources/pods/translate/translator.go (translateProjectedVolume): the audiences of
# a projected token without its own, for cluster domain cluster.local, and the lifetime of every token
VCLUSTER_AUDIENCES = ("https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                      "https://kubernetes.default")
VCLUSTER_EXPIRATION_SECONDS = 315_360_000  # 10 * 365 * 24 * 60 * 60 (here: --token-lifetime 0)
LIFETIME = 3600  # the default --token-lifetime: an hour, as the kubelet's projected tokens
SPEC: Obj = {"volumes": [
    {"name": "kube-api-access-abcde", "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt-x-ns-x-vc"}}]}},
    {"name": "vault", "projected": {"sources": [{"serviceAccountToken": {"path": "jwt", "audience": "vault"}}]}},
    {"name": "data", "emptyDir": {}}]}


def test_sources_and_requests() -> None:
    sources = token_sources(SPEC)
    assert sources == [TokenSource("kube-api-access-abcde", 0, "token", VCLUSTER_AUDIENCES),
                       TokenSource("vault", 0, "jwt", ("vault",))]
    assert token_request(sources[1].audiences, "web", "u-1", LIFETIME)["spec"] == {
        "audiences": ["vault"], "expirationSeconds": LIFETIME,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u-1"}}
    assert token_request(sources[0].audiences, "web", "u-1", 0)["spec"]["audiences"] == list(VCLUSTER_AUDIENCES)
    assert token_request(sources[0].audiences, "web", "u-1", 0)["spec"]["expirationSeconds"] == \
        VCLUSTER_EXPIRATION_SECONDS


def test_the_first_default_audience_names_the_cluster_domain() -> None:
    # translator.go: audiences := []string{"https://kubernetes.default.svc." + t.clusterDomain, ...}, clusterDomain
    # being networking.advanced.clusterDomain (the virtual API server's issuer); a projection's own audience stays
    assert token_sources(SPEC, "corp.local") == [
        TokenSource("kube-api-access-abcde", 0, "token", ("https://kubernetes.default.svc.corp.local",
                                                          "https://kubernetes.default.svc", "https://kubernetes.default")),
        TokenSource("vault", 0, "jwt", ("vault",))]


def test_annotation_mode() -> None:
    spec, ann = copy.deepcopy(SPEC), {"vcluster.loft.sh/token-aaaaaaaa": "taken"}
    names = iter(["aaaaaaaa", "bbbbbbbb", "cccccccc"])
    data, where = apply_tokens(spec, ann, list(zip(token_sources(SPEC), ["t1", "t2"], strict=True)),
                               secret_name=None, suffix=lambda: next(names))
    assert data == {}
    assert where == {"vcluster.loft.sh/token-bbbbbbbb": list(VCLUSTER_AUDIENCES),
                     "vcluster.loft.sh/token-cccccccc": ["vault"]}
    assert ann == {"vcluster.loft.sh/token-aaaaaaaa": "taken", "vcluster.loft.sh/token-bbbbbbbb": "t1",
                   "vcluster.loft.sh/token-cccccccc": "t2"}
    assert spec["volumes"][0]["projected"]["sources"] == [
        {"downwardAPI": {"items": [{"path": "token", "mode": 0o644, "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['vcluster.loft.sh/token-bbbbbbbb']"}}]}},
        {"configMap": {"name": "kube-root-ca.crt-x-ns-x-vc"}}]
    assert spec["volumes"][1]["projected"]["sources"][0]["downwardAPI"]["items"][0]["path"] == "jwt"


def test_secret_mode() -> None:
    spec, ann = copy.deepcopy(SPEC), {}
    data, where = apply_tokens(spec, ann, list(zip(token_sources(SPEC), ["t1", "t2"], strict=True)),
                               secret_name="web-sa-token-x-ns-x-vc", suffix=lambda: "unused")
    assert ann == {} and data == {"kube-api-access-abcde": "t1", "vault": "t2"}
    assert where == {"kube-api-access-abcde": list(VCLUSTER_AUDIENCES), "vault": ["vault"]}
    assert spec["volumes"][0]["projected"]["sources"][0] == {"secret": {"name": "web-sa-token-x-ns-x-vc", "items": [
        {"key": "kube-api-access-abcde", "path": "token", "mode": 0o644}]}}


def test_the_whole_token_request_and_the_sources_found() -> None:
    # authentication.k8s.io/v1 TokenRequest, bound to the virtual pod (vcluster's translateProjectedVolume)
    spec: Obj = {"volumes": ["junk", {"name": "x", "projected": {"sources": [
        "junk", {"configMap": {"name": "c"}}, {"serviceAccountToken": {}},
        {"serviceAccountToken": {"audience": "vault", "path": "v/jwt"}}]}}, {"name": "y", "emptyDir": {}}]}
    sources = token_sources(spec)
    assert sources == [TokenSource("x", 2, "token", VCLUSTER_AUDIENCES), TokenSource("x", 3, "v/jwt", ("vault",))]
    assert token_request(sources[0].audiences, "web", "u-9", LIFETIME) == {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "audiences": list(VCLUSTER_AUDIENCES), "expirationSeconds": LIFETIME,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u-9"}}}


def test_the_renewal_state_round_trips_and_bad_values_are_none() -> None:
    state = RenewalState(1767229200.7, {"vcluster.loft.sh/token-abc": ["vault"]}, "")
    assert state.encode() == '{"renewAt":1767229200,"tokens":{"vcluster.loft.sh/token-abc":["vault"]}}'
    assert RenewalState.decode(state.encode()) == RenewalState(1767229200, {"vcluster.loft.sh/token-abc": ["vault"]})
    secret = RenewalState(5, {"kube-api-access-x": ["a"]}, "web-sa-token-x-ns-x-vc")
    assert RenewalState.decode(secret.encode()) == secret
    for bad in (None, "", "{", "[]", '{"renewAt": "soon", "tokens": {}}', '{"renewAt": 1}'):
        assert RenewalState.decode(bad) is None
    short = RenewalState(5, {"vcluster.loft.sh/token-v": ["vault"]}, "", {"vcluster.loft.sh/token-v": 600})
    assert short.encode() == ('{"expirationSeconds":{"vcluster.loft.sh/token-v":600},"renewAt":5,'
                              '"tokens":{"vcluster.loft.sh/token-v":["vault"]}}')
    assert RenewalState.decode(short.encode()) == short
    # only what a projection may ask for below the default hour is read back (600 <= seconds < 3600)
    assert RenewalState.decode('{"renewAt":5,"tokens":{},"expirationSeconds":{"a":599,"b":3600,"c":true,'
                               '"d":"600","e":1800}}') == RenewalState(5, {}, "", {"e": 1800})


def test_a_projection_asking_for_less_than_the_default_hour_says_so() -> None:
    # ServiceAccountTokenProjection.expirationSeconds: "Defaults to 1 hour and must be at least 10 minutes"
    # (core/v1 types.go); the API server's injected kube-api-access volume asks 3607
    def source(seconds: object) -> TokenSource:
        (src,) = token_sources({"volumes": [{"name": "v", "projected": {"sources": [
            {"serviceAccountToken": {"path": "t", "expirationSeconds": seconds}}]}}]})
        return src
    assert [source(s).expiration for s in (600, 1800, 3599)] == [600, 1800, 3599]
    assert [source(s).expiration for s in (3600, 3607, 86400, None, True, "600", 599)] == [None] * 7
