"""Service-account tokens of the embedded API server: TokenRequest and bearer authentication.

As kube-apiserver's `serviceaccounts/token` subresource (pkg/registry/core/serviceaccount/storage/token.go)
issues them: a signed JWT for `system:serviceaccount:<ns>:<name>` with the requested audiences (default the
API server's), an expiry of at least 10 minutes, optionally bound to a pod (run as that service account) or a
Secret whose uid must match. Tokens are
signed with HMAC-SHA256 under a key of the server's own (real servers use RSA keys; what matters here is that
only this server's tokens verify). The server then accepts them as `Authorization: Bearer` and answers
`selfsubjectreviews` with their user.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Any

from kubesim import fielderrors
from kubesim.status import StatusError, kind_conflict, kind_invalid, not_found
from syncer.kube.client import KubeClient
from syncer.kube.clock import now_rfc3339
from syncer.kube.resources import PODS, SECRETS, SELFSUBJECTREVIEWS, SERVICEACCOUNTS, APIResource

Obj = dict[str, Any]
DEFAULT_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]
LEEWAY = 60  # go-jose jwt.DefaultLeeway: the clock skew claims.go allows, in seconds


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Issues and verifies service-account tokens for one server (its own signing key)."""

    def __init__(self, issuer: str, max_expiration: int = 0) -> None:
        self.issuer = issuer
        # kube-apiserver's --service-account-max-token-expiration (0: none): a longer request is shortened to it,
        # and the answer's spec says so (pkg/registry/core/serviceaccount/storage/token.go)
        self.max_expiration = max_expiration
        self._key = secrets.token_bytes(32)

    def issue(self, namespace: str, sa: Obj, request: Obj, bound: Obj | None) -> Obj:
        """Answer a TokenRequest for service account `sa` (the stored object), checked already (`validate`,
        `bound_object`); `bound` is the bound object (`{"pod": {name, uid}}` or `{"secret": ...}`), if any."""
        spec = request.get("spec") or {}
        expiry = expiration(request)
        if self.max_expiration and expiry > self.max_expiration:
            expiry = self.max_expiration
        now = int(time.time())
        name = sa["metadata"]["name"]
        claims: Obj = {"iss": self.issuer, "sub": f"system:serviceaccount:{namespace}:{name}",
                       "aud": spec.get("audiences") or DEFAULT_AUDIENCES, "iat": now, "nbf": now, "exp": now + expiry,
                       "jti": str(uuid.uuid4()),  # every token is unique (ServiceAccountTokenJTI, 1.29+)
                       "kubernetes.io": {"namespace": namespace,
                                         "serviceaccount": {"name": name, "uid": sa["metadata"].get("uid", "")}}}
        if bound is not None:
            claims["kubernetes.io"].update(bound)
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        sig = _b64(hmac.new(self._key, f"{head}.{body}".encode(), hashlib.sha256).digest())
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_rfc3339()},
                "spec": {**spec, "expirationSeconds": expiry, "audiences": claims["aud"]},
                "status": {"token": f"{head}.{body}.{sig}", "expirationTimestamp": now_rfc3339(expiry)}}

    def verify(self, token: str) -> Obj | None:
        """The claims of a token this server issued that is in its validity, or None. The times are checked as
        pkg/serviceaccount/claims.go `publickValidate` does (go-jose `Claims.Validate`, which allows
        `jwt.DefaultLeeway`, a minute): expired once the expiry is more than a minute past, not valid yet while
        `nbf` is more than a minute ahead. Whether the objects it names still exist is `invalidated`'s question."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        want = _b64(hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(want, parts[2]):
            return None
        try:
            claims: Obj = json.loads(_unb64(parts[1]))
        except ValueError:
            return None
        now = time.time()
        if now - LEEWAY > claims.get("exp", 0) or now + LEEWAY < claims.get("nbf", 0):
            return None
        return claims


def _deleted_before(obj: Obj, when: float) -> bool:
    """`obj.DeletionTimestamp != nil && obj.DeletionTimestamp.Time.Before(when)`."""
    stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not stamp:
        return False
    return dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() < when


def invalidated(claims: Obj, get: Callable[[APIResource, str, str], Obj | None]) -> str | None:
    """Why kube-apiserver refuses a verified token whose bound objects are gone, or None (pkg/serviceaccount/claims.go
    `validator.Validate`: `serviceAccountValidate`, `secretValidate`, `podValidate`): the service account, and the
    Secret and the pod the token is bound to, must exist (`get(resource, namespace, name)`), with the uid of the
    claim, and not be deleted more than a minute ago (a deletionTimestamp, which a graceful delete sets at the end of
    the grace period, before now minus `jwt.DefaultLeeway`). The answer is then 401 Unauthorized: the reason is only
    logged (the authenticator's error never reaches the client)."""
    private = claims.get("kubernetes.io") or {}
    namespace = str(private.get("namespace") or "")
    before = time.time() - LEEWAY
    sa_ref = private.get("serviceaccount") or {}
    sa = get(SERVICEACCOUNTS, namespace, str(sa_ref.get("name") or ""))
    if sa is None:
        return f'serviceaccounts "{sa_ref.get("name")}" not found'
    if _deleted_before(sa, before):
        return f"service account {namespace}/{sa_ref.get('name')} has been deleted"
    if sa["metadata"].get("uid") != sa_ref.get("uid"):
        return f"service account UID ({sa['metadata'].get('uid')}) does not match claim ({sa_ref.get('uid')})"
    for claim, res in (("secret", SECRETS), ("pod", PODS)):
        ref = private.get(claim)
        if not isinstance(ref, dict):
            continue
        obj = get(res, namespace, str(ref.get("name") or ""))
        if obj is None or _deleted_before(obj, before):
            return "service account token has been invalidated"
        if obj["metadata"].get("uid") != ref.get("uid"):
            return f"{claim} UID ({obj['metadata'].get('uid')}) does not match service account {claim} ref claim " \
                   f"({ref.get('uid')})"
    return None


def expiration(request: Obj) -> int:
    """A TokenRequest's `spec.expirationSeconds`, 3600 when unset (`SetDefaults_TokenRequestSpec`)."""
    value = (request.get("spec") or {}).get("expirationSeconds")
    return 3600 if value is None else int(value)


def validate(request: Obj) -> None:
    """`ValidateTokenRequest` (pkg/apis/authentication/validation), as the TokenRequest REST calls it (pkg/registry/
    core/serviceaccount/storage/token.go): 422 `TokenRequest.authentication.k8s.io "" is invalid: ...`."""
    expiry = expiration(request)
    errs = []
    if expiry < 600:
        errs.append(fielderrors.invalid("spec.expirationSeconds", expiry, "may not specify a duration less than 10 "
                                                                          "minutes"))
    if expiry > 1 << 32:
        errs.append(fielderrors.invalid("spec.expirationSeconds", expiry, "may not specify a duration larger than "
                                                                          "2^32 seconds"))
    if errs:
        raise kind_invalid("authentication.k8s.io", "TokenRequest", "", errs)


def bound_object(request: Obj, service_account: str, get_pod: Any, get_secret: Any) -> Obj | None:
    """The claim of the object a TokenRequest binds to (`spec.boundObjectRef`: `{"pod": {name, uid}}` or
    `{"secret": ...}`), checked as the token REST (pkg/registry/core/serviceaccount/storage/token.go, `Create`)
    does: the object must exist (404), a pod must run as the requested service account (400), a uid given must be
    the object's (409, named on the kind), and any other kind is refused (400). Nodes are not served here, so a
    Node is never found."""
    ref = (request.get("spec") or {}).get("boundObjectRef")
    if not isinstance(ref, dict):
        return None
    api_version, kind, name = str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""), str(ref.get("name") or "")
    group, _, version = api_version.rpartition("/")
    if group == "" and kind == "Pod":
        obj: Obj | None = get_pod(name)
        if obj is None:
            raise not_found(PODS, name)
        if service_account != (obj.get("spec") or {}).get("serviceAccountName"):
            raise StatusError(400, f'cannot bind token for serviceaccount "{service_account}" to pod running with '
                                   "different serviceaccount name.")
        res, claim = PODS, "pod"
    elif group == "" and kind == "Secret":
        obj = get_secret(name)
        if obj is None:
            raise not_found(SECRETS, name)
        res, claim = SECRETS, "secret"
    elif group == "" and kind == "Node":
        raise StatusError(404, f'nodes "{name}" not found', "NotFound", {"name": name, "kind": "nodes"})
    else:  # schema.GroupVersionKind.String()
        raise StatusError(400, f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    uid = obj["metadata"]["uid"]
    if ref.get("uid") and ref["uid"] != uid:
        raise kind_conflict(res, name, f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                                       "in record. The object might have been deleted and then recreated")
    return {claim: {"name": name, "uid": uid}}


def kube_api_access_volume(name: str) -> Obj:
    """The projected volume the ServiceAccount admission plugin injects (`kube-api-access-<random>`): a
    bound token (3607 s), the `kube-root-ca.crt` ConfigMap and the namespace from the downward API."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}}]}}


async def whoami(client: KubeClient, token: str) -> str:
    """The user an API server sees for a bearer `token`, asked through `client`'s connection with a
    SelfSubjectReview (as `kubectl auth whoami`); an error is returned as text naming the HTTP status."""
    resp = await client.api.call_api(SELFSUBJECTREVIEWS.path(), "POST", header_params={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, _preload_content=False)
    review = await resp.json()
    if resp.status != 201:
        return f"an error: HTTP {resp.status} {review.get('message', '')}"
    return str(review["status"]["userInfo"]["username"])
