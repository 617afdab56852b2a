"""Service-account tokens of the embedded API server: TokenRequest and bearer authentication.

As kube-apiserver's `serviceaccounts/token` subresource (pkg/registry/core/serviceaccount/storage/token.go)
issues them: a signed JWT for `system:serviceaccount:<ns>:<name>` with the requested audiences (default the
API server's), an expiry of at least 10 minutes, optionally bound to a pod whose uid must match. Tokens are
signed with HMAC-SHA256 under a key of the server's own (real servers use RSA keys; what matters here is that
only this server's tokens verify). The server then accepts them as `Authorization: Bearer` and answers
`selfsubjectreviews` with their user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from typing import Any

from kubesim import fielderrors
from kubesim.status import StatusError, invalid
from syncer.kube.client import KubeClient
from syncer.kube.clock import now_rfc3339
from syncer.kube.resources import SELFSUBJECTREVIEWS

Obj = dict[str, Any]
DEFAULT_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]


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

    def issue(self, namespace: str, sa: Obj, request: Obj, pod: Obj | None) -> Obj:
        """Answer a TokenRequest for service account `sa` (the stored object); `pod` is the bound pod, if any.

        Raises:
            StatusError: 422 for an expiry under 10 minutes.
        """
        spec = request.get("spec") or {}
        expiry = int(spec.get("expirationSeconds") or 3600)
        if expiry < 600:
            raise invalid(None, "", [fielderrors.invalid("spec.expirationSeconds", expiry,
                                                         "may not specify a duration less than 10 minutes")])
        if self.max_expiration and expiry > self.max_expiration:
            expiry = self.max_expiration
        now = int(time.time())
        name = sa["metadata"]["name"]
        claims: Obj = {"iss": self.issuer, "sub": f"system:serviceaccount:{namespace}:{name}",
                       "aud": spec.get("audiences") or DEFAULT_AUDIENCES, "iat": now, "nbf": now, "exp": now + expiry,
                       "jti": str(uuid.uuid4()),  # every token is unique (ServiceAccountTokenJTI, 1.29+)
                       "kubernetes.io": {"namespace": namespace,
                                         "serviceaccount": {"name": name, "uid": sa["metadata"].get("uid", "")}}}
        if pod is not None:
            claims["kubernetes.io"]["pod"] = {"name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        sig = _b64(hmac.new(self._key, f"{head}.{body}".encode(), hashlib.sha256).digest())
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_rfc3339()},
                "spec": {**spec, "expirationSeconds": expiry, "audiences": claims["aud"]},
                "status": {"token": f"{head}.{body}.{sig}", "expirationTimestamp": now_rfc3339(expiry)}}

    def verify(self, token: str) -> Obj | None:
        """The claims of a token this server issued that has not expired, or None."""
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
        return claims if claims.get("exp", 0) > time.time() else None


def bound_pod(request: Obj, get_pod: Any, namespace: str) -> Obj | None:
    """The pod a TokenRequest binds to (`spec.boundObjectRef` of kind Pod), checked as the token REST does:
    it must exist and have the given uid. Raises StatusError 404/409."""
    ref = (request.get("spec") or {}).get("boundObjectRef")
    if not isinstance(ref, dict) or ref.get("kind") != "Pod":
        return None
    pod: Obj | None = get_pod(ref.get("name", ""))
    if pod is None:
        raise StatusError(404, f'pods "{ref.get("name")}" not found', "NotFound")
    if ref.get("uid") and ref["uid"] != pod["metadata"]["uid"]:
        raise StatusError(409, f'the UID in the bound object reference ({ref["uid"]}) does not match the UID in '
                               f'record. The object might have been deleted and then recreated', "Conflict")
    return pod


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
