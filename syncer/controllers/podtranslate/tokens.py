"""Service-account token projections, replaced by tokens of the virtual cluster (pure).

Follows vcluster's `translateProjectedVolume` (translator.go) and `SATokenSecret` (token/sa_token_secret.go):
each projected `serviceAccountToken` source (the `kube-api-access-*` volume the virtual API server injects,
or one the user declared) is replaced by a token the syncer requests from the virtual API server for the
pod's service account, bound to the virtual pod, for the source's audience or the three
`https://kubernetes.default...` audiences (the first with the cluster domain: `default_audiences`). The token then
lives either

- in a host pod annotation `vcluster.loft.sh/token-<random>`, read through a downward-API item at the
  source's path (the default), or
- with `sync.toHost.pods.useSecretsForSATokens`, in the host Secret `<host name of <pod>-sa-token>` under
  the volume's name, read through a secret source (the Secret is owned by the host pod, so it goes with it).

**File mode (deliberately different from vcluster).** vcluster gives every token file the item mode 0644, over the
volume's `defaultMode` and over the kubelet's rule for token files. The kubelet writes a `serviceAccountToken` file
with the projected volume's `defaultMode` (0644 when it sets none), but 0600 when the pod has an `fsGroup` or all its
containers run as one `runAsUser` (kubernetes pkg/volume/projected/projected.go `collectData`, `FsUserFrom` in
pkg/volume/util/util.go); the file is then owned by that user, and an `fsGroup` makes it 0640 with that group
(`SetVolumeOwnership` adds group read). Here the item gets (`token_file_mode`, judged on the virtual pod's spec, without
the syncer's own init container):

- with an `fsGroup`: 0600, which the host's kubelet turns into 0640 with the pod's `fsGroup`, as for a token;
- with one common `runAsUser` and no `fsGroup`: 0600 for root; for another user 0644, as vcluster: a downward-API or
  Secret file cannot be given to the pod's user, so it must be readable by others for that user to read it (all the
  pod's containers run as that user);
- otherwise the volume's `defaultMode` (0644 unless the tenant set another): a tenant's `defaultMode: 0400` keeps the
  token from the pod's other users, as on a plain cluster, where vcluster's 0644 let every user of the pod read it.

The host pod thus never carries a host token (`automountServiceAccountToken: false`), and a token only
grants what the pod's service account may do in the virtual cluster.

**Lifetime (deliberately different from vcluster).** vcluster requests ten-year tokens, so a token copied out
of a pod stays valid for ten years. Here tokens live `lifetime` seconds (default one hour, `--token-lifetime`)
and are renewed once 80% of it has passed, as the kubelet renews projected tokens: the host pod's annotation
(or the token Secret) gets the new token in place and the kubelet refreshes the mounted file. The renewal
state is the host pod annotation `runtimeclass-syncer.io/token-renewal` (when to renew, and which annotation or
Secret key holds a token for which audiences), so it survives a restart. `--token-lifetime 0` keeps vcluster's
ten-year tokens and never renews.

A projection that asks for a shorter token than the API's default hour (`expirationSeconds: 600` for a Vault's
audience, say) gets one that short, when the lifetime is longer, and is renewed after 80% of it, as the kubelet
requests each projection's own `expirationSeconds` (vcluster asks ten years whatever the projection says). A
longer or defaulted value (the API server sets one hour on every projection that has none:
`SetDefaults_ServiceAccountTokenProjection` in kubernetes' pkg/apis/core/v1/defaults.go) leaves the lifetime to
`--token-lifetime`, which the platform team chose.

**Too many tokens.** Tokens go where the host limits their size: kube-apiserver refuses an object whose annotations
(keys and values) take more than 256 KiB (`ValidateAnnotationsSize`, `TotalAnnotationSizeLimitB = 256 * 1024`) and
a Secret whose data values take more than 1 MiB (`ValidateSecret`, `MaxSecretSize = 1 * 1024 * 1024`). A pod whose
projections could not fit there whatever tokens it got is refused before any token is requested (`oversize`), as
the host would refuse it after them (vcluster requests them all, on every retry). The count is a lower bound:
`MIN_TOKEN_BYTES`, the shortest token a TokenRequest bound to a pod can get from kube-apiserver
(pkg/serviceaccount/claims.go `Claims`, signed by go-jose): a header with only `alg` (no `kid`), claims `aud`, `exp`,
`iat`, `iss`, `nbf`, `sub` and `kubernetes.io` (namespace, service account and pod, each name one character, the
two uids the API server's 36-character UUIDs; no `jti`, no node), a one-character issuer and audience, and an ES256
signature (64 bytes, the shortest kube-apiserver makes), each part base64url-encoded: 480 bytes. In annotation
mode each token also takes its annotation's key, `vcluster.loft.sh/token-` and 8 random characters (511 bytes a
token, so at most 513 tokens fit a pod without other annotations); the pod's other annotations count too, the
renewal state's does not (a lower bound). Real tokens are longer (an RS256 signature alone is 342 characters).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from syncer.controllers.podtranslate.environment import CLUSTER_DOMAIN

Obj = dict[str, Any]
TOKEN_ANNOTATION_PREFIX = "vcluster.loft.sh/token-"
# vcluster's audiences of a token for a projection without its own, for the default cluster domain (default_audiences)
DEFAULT_AUDIENCES = ("https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                     "https://kubernetes.default")
VCLUSTER_LIFETIME = 10 * 365 * 24 * 60 * 60  # vcluster's token lifetime (--token-lifetime 0)
DEFAULT_LIFETIME = 3600  # seconds, as the kubelet's projected tokens
RENEW_AFTER = 0.8  # of the lifetime, as the kubelet
API_DEFAULT_EXPIRATION = 3600  # seconds: a projection's `expirationSeconds` when it sets none (SetDefaults_...)
MIN_EXPIRATION = 600  # the least a projection or TokenRequest may ask (ValidateServiceAccountTokenProjection)
STATE_ANNOTATION = "runtimeclass-syncer.io/token-renewal"
FILE_MODE = 0o644  # a projected volume's defaultMode when it sets none (SetDefaults_ProjectedVolumeSource); vcluster's
OWNER_ONLY = 0o600  # the kubelet's token file of a pod with an fsGroup or one runAsUser (projected.go collectData)
SUFFIX_LENGTH = 8  # random characters after TOKEN_ANNOTATION_PREFIX (vcluster's, RandomString(8))
# What the host holds (kube-apiserver): the keys and values of an object's annotations (apimachinery
# ValidateAnnotationsSize: TotalAnnotationSizeLimitB = 256 * 1024) and the data values of a Secret (pkg/apis/core/
# validation ValidateSecret: MaxSecretSize = 1 * 1024 * 1024), in bytes
ANNOTATIONS_LIMIT = 256 * 1024
SECRET_DATA_LIMIT = 1024 * 1024


def _b64_length(size: int) -> int:
    """The characters of `size` bytes in unpadded base64url, as a JWS encodes each part (RFC 7515)."""
    return (4 * size + 2) // 3


def _json_length(value: Any) -> int:
    """The bytes of `value` in compact JSON (Go's encoding/json, which go-jose uses, writes no spaces)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


_UUID = "00000000-0000-0000-0000-000000000000"  # the length of every uid the API server gives (uuid.NewUUID)
# the shortest header and claims of a token bound to a pod (module docstring, "Too many tokens"); go-jose writes a
# single audience as a string
_SHORTEST_HEADER = {"alg": "ES256"}
_SHORTEST_CLAIMS = {"aud": "a", "exp": 1_000_000_000, "iat": 1_000_000_000, "iss": "a", "nbf": 1_000_000_000,
                    "sub": "system:serviceaccount:a:a", "kubernetes.io": {
                        "namespace": "a", "pod": {"name": "a", "uid": _UUID},
                        "serviceaccount": {"name": "a", "uid": _UUID}}}
_ES256_SIGNATURE = 64  # bytes: r and s of P-256, 32 each (RFC 7518 3.4)
# the least bytes a token takes: header.claims.signature (480), and in annotation mode with its key (511)
MIN_TOKEN_BYTES = (_b64_length(_json_length(_SHORTEST_HEADER)) + 1 + _b64_length(_json_length(_SHORTEST_CLAIMS)) +
                   1 + _b64_length(_ES256_SIGNATURE))
MIN_TOKEN_ANNOTATION_BYTES = len(TOKEN_ANNOTATION_PREFIX) + SUFFIX_LENGTH + MIN_TOKEN_BYTES


@dataclass(frozen=True)
class TokenSource:
    """A `serviceAccountToken` projection: its volume, position in the sources, path and audiences, and its own
    `expirationSeconds` (seconds) when it asks for less than the API's default hour, else None."""

    volume: str
    index: int
    path: str
    audiences: tuple[str, ...]
    expiration: int | None = None


def _short_expiration(value: Any) -> int | None:
    """A projection's `expirationSeconds` when it asks for a token shorter than the API's default hour (and no
    shorter than the API's minimum, which the virtual API server has validated), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and MIN_EXPIRATION <= value < API_DEFAULT_EXPIRATION:
        return value
    return None


def default_audiences(cluster_domain: str = CLUSTER_DOMAIN) -> tuple[str, ...]:
    """The audiences of a token for a projection without its own: vcluster's (`translateProjectedVolume`,
    translator.go: `"https://kubernetes.default.svc." + clusterDomain`, then the two short names), since its virtual
    API server issues and accepts tokens for `https://kubernetes.default.svc.<networking.advanced.clusterDomain>`."""
    return (f"https://kubernetes.default.svc.{cluster_domain}", *DEFAULT_AUDIENCES[1:])


def token_sources(spec: Obj, cluster_domain: str = CLUSTER_DOMAIN) -> list[TokenSource]:
    """The service-account token projections of a pod spec, in order; a projection without an audience gets
    `default_audiences(cluster_domain)` (`cluster_domain`: `networking.advanced.clusterDomain`)."""
    out: list[TokenSource] = []
    for vol in spec.get("volumes") or []:
        projected = vol.get("projected") if isinstance(vol, dict) else None
        for i, src in enumerate((projected.get("sources") or []) if isinstance(projected, dict) else []):
            tok = src.get("serviceAccountToken") if isinstance(src, dict) else None
            if isinstance(tok, dict):
                audience = tok.get("audience")
                out.append(TokenSource(str(vol.get("name", "")), i, str(tok.get("path") or "token"),
                                       (audience,) if audience else default_audiences(cluster_domain),
                                       _short_expiration(tok.get("expirationSeconds"))))
    return out


def fs_user(spec: Obj) -> Any:
    """The kubelet's `FsUserFrom` (pkg/volume/util/util.go): the `runAsUser` every container of the pod runs as
    (`DetermineEffectiveRunAsUser`: the container's own, else the pod's), None when one has none or two differ;
    ephemeral containers do not count ("Exclude ephemeral containers": it visits InitContainers|Containers)."""
    pod_user = (spec.get("securityContext") or {}).get("runAsUser")
    user = None
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            own = ((c.get("securityContext") if isinstance(c, dict) else None) or {}).get("runAsUser")
            uid = pod_user if own is None else own
            if uid is None or (user is not None and uid != user):
                return None
            user = uid
    return user


def token_file_mode(spec: Obj, volume: Obj) -> int:
    """The item mode of the file that replaces a token projection of `volume` in a pod of spec `spec` (the virtual
    pod's): the rules of this module's docstring, "File mode"."""
    if (spec.get("securityContext") or {}).get("fsGroup") is not None:
        return OWNER_ONLY  # the kubelet's 0600, made 0640 with the fsGroup by SetVolumeOwnership
    user = fs_user(spec)
    if user is not None:
        return OWNER_ONLY if user == 0 else FILE_MODE  # the file is root's: another user reads it as others do
    mode = (volume.get("projected") or {}).get("defaultMode")
    return mode if isinstance(mode, int) and not isinstance(mode, bool) else FILE_MODE


def annotations_size(annotations: dict[str, Any]) -> int:
    """The bytes the host counts of an object's annotations: each key's and value's (ValidateAnnotationsSize; Go's
    `len` of a string is its UTF-8 bytes)."""
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())


def oversize(pod: str, count: int, annotations: dict[str, Any], *, secret: bool) -> str | None:
    """The SyncWarning that refuses pod `pod` when the tokens of its `count` token projections could not fit where
    they go, whatever tokens it got (module docstring, "Too many tokens"), else None: with `secret` (Secret mode) in
    its token Secret's data, else in the host pod's annotations beside its other `annotations` (the host pod's)."""
    if secret:
        need, limit, where = count * MIN_TOKEN_BYTES, SECRET_DATA_LIMIT, "of its token secret's data"
    else:
        need = count * MIN_TOKEN_ANNOTATION_BYTES + annotations_size(annotations)
        limit, where = ANNOTATIONS_LIMIT, "of host pod annotations, its other annotations included"
    if need <= limit:
        return None
    return (f'did not sync pod "{pod}" to host because its {count} service-account token projections would need at '
            f"least {need} bytes {where}, over the host's limit of {limit} bytes: use fewer token projections")


def token_request(audiences: tuple[str, ...] | list[str], pod_name: str, pod_uid: str, lifetime: int) -> Obj:
    """The TokenRequest for one projection's `audiences`, bound to the virtual pod, valid `lifetime` seconds
    (0: vcluster's ten years)."""
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
        "audiences": list(audiences), "expirationSeconds": lifetime or VCLUSTER_LIFETIME,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid}}}


@dataclass(frozen=True)
class RenewalState:
    """What the `runtimeclass-syncer.io/token-renewal` annotation holds.

    Attributes:
        renew_at: Unix seconds after which the tokens are renewed.
        tokens: annotation name (annotation mode) or Secret key (Secret mode) -> the token's audiences.
        secret: the token Secret's name in Secret mode, else "".
        expirations: annotation name or Secret key -> the seconds its projection asks for, for the tokens of
            projections that ask for less than the API's default hour (`TokenSource.expiration`).
    """

    renew_at: float
    tokens: dict[str, list[str]]
    secret: str = ""
    expirations: dict[str, int] = field(default_factory=dict)

    def encode(self) -> str:
        """Compact JSON: `{"renewAt": <unix seconds>, "tokens": {...}, "secret": "...", "expirationSeconds":
        {...}}`, the last two only when set."""
        out: Obj = {"renewAt": int(self.renew_at), "tokens": self.tokens}
        if self.secret:
            out["secret"] = self.secret
        if self.expirations:
            out["expirationSeconds"] = self.expirations
        return json.dumps(out, separators=(",", ":"), sort_keys=True)

    @classmethod
    def decode(cls, text: Any) -> RenewalState | None:
        """The state an annotation value holds, None when absent or unreadable."""
        try:
            data = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("renewAt"), (int, float)) or \
                not isinstance(data.get("tokens"), dict):
            return None
        exp = data.get("expirationSeconds")
        return cls(float(data["renewAt"]), {str(k): [str(a) for a in v] for k, v in data["tokens"].items()
                                            if isinstance(v, list)}, str(data.get("secret") or ""),
                   {str(k): v for k, v in exp.items() if _short_expiration(v) is not None}
                   if isinstance(exp, dict) else {})


def apply_tokens(spec: Obj, annotations: dict[str, str], tokens: list[tuple[TokenSource, str]], *,
                 secret_name: str | None, suffix: Callable[[], str],
                 pod_spec: Obj | None = None) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Replace each token projection of a (copied) host pod spec by its token (mutates `spec` and
    `annotations`).

    Args:
        tokens: (projection, token) pairs from token_sources and the TokenRequests.
        secret_name: the host Secret for Secret mode, or None for annotation mode.
        suffix: a random suffix for annotation names (vcluster's 8 random characters).
        pod_spec: the virtual pod's spec, whose security context and containers choose the files' mode
            (`token_file_mode`); `spec` itself when None.
    Returns:
        the Secret's data (key -> token) in Secret mode, else an empty dict; and where each token is
        (annotation name or Secret key) -> its audiences (the renewal state's `tokens`). A Secret key is the
        volume's name, as vcluster's `SATokenSecret` names it, and `<volume>.<source index>` for a volume's further
        token sources: vcluster gives them all the volume's key, so a volume projecting a token for another audience
        (a Vault's) beside the API server's would mount the API server's token, valid for the virtual cluster, in
        the file meant for the third party.
    """
    data: dict[str, str] = {}
    where: dict[str, list[str]] = {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    for source, token in tokens:
        sources = volumes[source.volume]["projected"]["sources"]
        mode = token_file_mode(spec if pod_spec is None else pod_spec, volumes[source.volume])
        if secret_name is not None:
            key = source.volume if source.volume not in data else f"{source.volume}.{source.index}"
            data[key] = token
            where[key] = list(source.audiences)
            sources[source.index] = {"secret": {"name": secret_name, "items": [
                {"key": key, "path": source.path, "mode": mode}]}}
        else:
            while (name := TOKEN_ANNOTATION_PREFIX + suffix()) in annotations:
                pass
            annotations[name] = token
            where[name] = list(source.audiences)
            sources[source.index] = {"downwardAPI": {"items": [
                {"path": source.path, "fieldRef": {"apiVersion": "v1",
                                                   "fieldPath": f"metadata.annotations['{name}']"},
                 "mode": mode}]}}
    return data, where
