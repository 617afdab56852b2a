"""Service-account token projections, replaced by tokens of the virtual cluster (pure).

Follows vcluster's `translateProjectedVolume` (translator.go) and `SATokenSecret` (token/sa_token_secret.go):
each projected `serviceAccountToken` source (the `kube-api-access-*` volume the virtual API server injects,
or one the user declared) is replaced by a token the syncer requests from the virtual API server for the
pod's service account, bound to the virtual pod, for the source's audience or the three
`https://kubernetes.default...` audiences, valid for vcluster's ten years. The token then lives either

- in a host pod annotation `vcluster.loft.sh/token-<random>`, read through a downward-API item at the
  source's path (the default), or
- with `sync.toHost.pods.useSecretsForSATokens`, in the host Secret `<host name of <pod>-sa-token>` under
  the volume's name, read through a secret source (the Secret is owned by the host pod, so it goes with it).

The host pod thus never carries a host token (`automountServiceAccountToken: false`), and a token only
grants what the pod's service account may do in the virtual cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
TOKEN_ANNOTATION_PREFIX = "vcluster.loft.sh/token-"
DEFAULT_AUDIENCES = ("https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                     "https://kubernetes.default")
EXPIRATION_SECONDS = 10 * 365 * 24 * 60 * 60  # vcluster's token lifetime
FILE_MODE = 0o644


@dataclass(frozen=True)
class TokenSource:
    """A `serviceAccountToken` projection: its volume, position in the sources, path and audiences."""

    volume: str
    index: int
    path: str
    audiences: tuple[str, ...]


def token_sources(spec: Obj) -> list[TokenSource]:
    """The service-account token projections of a pod spec, in order."""
    out: list[TokenSource] = []
    for vol in spec.get("volumes") or []:
        projected = vol.get("projected") if isinstance(vol, dict) else None
        for i, src in enumerate((projected.get("sources") or []) if isinstance(projected, dict) else []):
            tok = src.get("serviceAccountToken") if isinstance(src, dict) else None
            if isinstance(tok, dict):
                audience = tok.get("audience")
                out.append(TokenSource(str(vol.get("name", "")), i, str(tok.get("path") or "token"),
                                       (audience,) if audience else DEFAULT_AUDIENCES))
    return out


def token_request(source: TokenSource, pod_name: str, pod_uid: str) -> Obj:
    """The TokenRequest for one projection, bound to the virtual pod."""
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
        "audiences": list(source.audiences), "expirationSeconds": EXPIRATION_SECONDS,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid}}}


def apply_tokens(spec: Obj, annotations: dict[str, str], tokens: list[tuple[TokenSource, str]], *,
                 secret_name: str | None, suffix: Callable[[], str]) -> dict[str, str]:
    """Replace each token projection of a (copied) host pod spec by its token (mutates `spec` and
    `annotations`).

    Args:
        tokens: (projection, token) pairs from token_sources and the TokenRequests.
        secret_name: the host Secret for Secret mode, or None for annotation mode.
        suffix: a random suffix for annotation names (vcluster's 8 random characters).
    Returns:
        the Secret's data (volume name -> token) in Secret mode, else an empty dict.
    """
    data: dict[str, str] = {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    for source, token in tokens:
        sources = volumes[source.volume]["projected"]["sources"]
        if secret_name is not None:
            data[source.volume] = token
            sources[source.index] = {"secret": {"name": secret_name, "items": [
                {"key": source.volume, "path": source.path, "mode": FILE_MODE}]}}
        else:
            while (name := TOKEN_ANNOTATION_PREFIX + suffix()) in annotations:
                pass
            annotations[name] = token
            sources[source.index] = {"downwardAPI": {"items": [
                {"path": source.path, "fieldRef": {"apiVersion": "v1",
                                                   "fieldPath": f"metadata.annotations['{name}']"},
                 "mode": FILE_MODE}]}}
    return data
