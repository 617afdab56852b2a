"""A minimal OpenAPI v3 description for kubectl.

kubectl (1.27+) reads `/openapi/v3` to learn whether the server validates fields itself
(`fieldValidation` on PATCH, client-go's QueryParamVerifierV3); when it does, `kubectl apply` sends
`fieldValidation=Strict` and skips downloading the full schema. Only the PATCH operations with their
`x-kubernetes-group-version-kind` extension and that one parameter are described.
"""

from __future__ import annotations

from typing import Any

from syncer.kube.resources import ALL_RESOURCES


def _gv_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def root() -> dict[str, Any]:
    """The `/openapi/v3` index: one entry per group-version."""
    keys = sorted({_gv_key(r.group, r.version) for r in ALL_RESOURCES})
    return {"paths": {k: {"serverRelativeURL": f"/openapi/v3/{k}?hash=embedded"} for k in keys}}


def group_version(key: str) -> dict[str, Any] | None:
    """The document for one group-version key (`api/v1`, `apis/node.k8s.io/v1`), None if unknown."""
    paths: dict[str, Any] = {}
    for r in ALL_RESOURCES:
        if _gv_key(r.group, r.version) != key:
            continue
        ns = "/namespaces/{namespace}" if r.namespaced else ""
        paths[f"/{key}{ns}/{r.plural}/{{name}}"] = {"patch": {
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}},
        }}
    if not paths:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (embedded)", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}
