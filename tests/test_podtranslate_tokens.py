"""Token projections replaced by virtual-cluster tokens (podtranslate/tokens.py), in both of vcluster's modes."""

from __future__ import annotations

import copy
from typing import Any

from syncer.controllers.podtranslate.tokens import TokenSource, apply_tokens, token_request, token_sources

Obj = dict[str, Any]
# vcluster, pkg/controllers/resources/pods/translate/translator.go (translateProjectedVolume): the audiences of
# a projected token without its own, for cluster domain cluster.local, and the lifetime of every token
VCLUSTER_AUDIENCES = ("https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                      "https://kubernetes.default")
VCLUSTER_EXPIRATION_SECONDS = 315_360_000  # 10 * 365 * 24 * 60 * 60
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
    assert token_request(sources[1], "web", "u-1")["spec"] == {
        "audiences": ["vault"], "expirationSeconds": VCLUSTER_EXPIRATION_SECONDS,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u-1"}}
    assert token_request(sources[0], "web", "u-1")["spec"]["audiences"] == list(VCLUSTER_AUDIENCES)


def test_annotation_mode() -> None:
    spec, ann = copy.deepcopy(SPEC), {"vcluster.loft.sh/token-aaaaaaaa": "taken"}
    names = iter(["aaaaaaaa", "bbbbbbbb", "cccccccc"])
    data = apply_tokens(spec, ann, list(zip(token_sources(SPEC), ["t1", "t2"], strict=True)), secret_name=None,
                        suffix=lambda: next(names))
    assert data == {}
    assert ann == {"vcluster.loft.sh/token-aaaaaaaa": "taken", "vcluster.loft.sh/token-bbbbbbbb": "t1",
                   "vcluster.loft.sh/token-cccccccc": "t2"}
    assert spec["volumes"][0]["projected"]["sources"] == [
        {"downwardAPI": {"items": [{"path": "token", "mode": 0o644, "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['vcluster.loft.sh/token-bbbbbbbb']"}}]}},
        {"configMap": {"name": "kube-root-ca.crt-x-ns-x-vc"}}]
    assert spec["volumes"][1]["projected"]["sources"][0]["downwardAPI"]["items"][0]["path"] == "jwt"


def test_secret_mode() -> None:
    spec, ann = copy.deepcopy(SPEC), {}
    data = apply_tokens(spec, ann, list(zip(token_sources(SPEC), ["t1", "t2"], strict=True)),
                        secret_name="web-sa-token-x-ns-x-vc", suffix=lambda: "unused")
    assert ann == {} and data == {"kube-api-access-abcde": "t1", "vault": "t2"}
    assert spec["volumes"][0]["projected"]["sources"][0] == {"secret": {"name": "web-sa-token-x-ns-x-vc", "items": [
        {"key": "kube-api-access-abcde", "path": "token", "mode": 0o644}]}}


def test_the_whole_token_request_and_the_sources_found() -> None:
    # authentication.k8s.io/v1 TokenRequest, bound to the virtual pod (vcluster's translateProjectedVolume)
    spec: Obj = {"volumes": ["junk", {"name": "x", "projected": {"sources": [
        "junk", {"configMap": {"name": "c"}}, {"serviceAccountToken": {}},
        {"serviceAccountToken": {"audience": "vault", "path": "v/jwt"}}]}}, {"name": "y", "emptyDir": {}}]}
    sources = token_sources(spec)
    assert sources == [TokenSource("x", 2, "token", VCLUSTER_AUDIENCES), TokenSource("x", 3, "v/jwt", ("vault",))]
    assert token_request(sources[0], "web", "u-9") == {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "audiences": list(VCLUSTER_AUDIENCES), "expirationSeconds": VCLUSTER_EXPIRATION_SECONDS,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u-9"}}}
