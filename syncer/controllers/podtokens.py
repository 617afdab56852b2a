"""Service-account tokens for host pods: the I/O around podtranslate/tokens.py (behaviour.md section 3.1).

Follows vcluster's `translateProjectedVolume` (translator.go) and `SATokenSecret`/`SetPodAsOwner`
(token/sa_token_secret.go): a TokenRequest against the virtual API server per token projection, bound to
the virtual pod; the tokens go into a host pod annotation, or with `useSecretsForSATokens` into the host
Secret `<host name of <pod>-sa-token>`, which the host pod then owns so that it goes with the pod. A Secret
written for a pod that never reached the host is deleted with the virtual pod.

A pod's TokenRequests go out CONCURRENT_REQUESTS at a time (vcluster sends them one after another), so that a pod
with many projections holds a pod worker for a fraction of their round trips. A pod whose projections could not fit
where their tokens go (the host's 256 KiB of annotations, 1 MiB of Secret data: podtranslate/tokens.py `oversize`)
gets none: `apply` raises TokenProjectionsTooLarge before the first request, and the pod reconciler refuses it.

Tokens live `lifetime` seconds and are renewed in place once 80% of it has passed (`renew_if_due`, called by
the pod reconciler, which looks again when the next renewal is due); a failed renewal is retried with backoff,
counted in `runtimeclass_syncer_token_renewals_total{result="failed"}` and named in `/readyz` until one works
(podtranslate/tokens.py). A renewal that finds the virtual pod gone (it went after the cache's copy) is none of
that: the deletion's event reconciles the pod. Tokens are bound to the virtual pod, so once it is gone the virtual
API server accepts none of them (an orphan left on the host keeps tokens nobody accepts, and none are renewed).

What is written is derived, never named by what is read (docs/security.md): the token Secret's name comes from
the virtual pod's identity (`secret_name`), and every write or delete of it holds only on the Secret this syncer
wrote for that pod (its managed-by label and object annotations; vcluster gives a Secret it syncs the virtual
Secret's name, so a tenant's Secret whose host name collides never matches). A renewal writes only annotations
`vcluster.loft.sh/token-*` the host pod already has. The renewal state is read only from the host pod, where
only the syncer writes it (the trust boundary drops a tenant's copy, podtranslate/trust.py).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import secrets
from collections.abc import Iterable
from typing import Any

from jsonpointer import JsonPointer

from syncer.controllers import translate
from syncer.controllers.podtranslate import tokens
from syncer.controllers.podtranslate.environment import CLUSTER_DOMAIN
from syncer.kube.cache import Store
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import Clock, RealClock
from syncer.kube.controller import ReconcileError
from syncer.kube.resources import PODS, SECRETS

log = logging.getLogger(__name__)

Obj = dict[str, Any]
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")  # a valid Secret data key (ValidateSecret: IsConfigMapKey)
CONCURRENT_REQUESTS = 8  # a pod's TokenRequests in flight at once


class TokenSecretTaken(ReconcileError):
    """Another object holds the name of a pod's token Secret (`ServiceAccountTokens.secret_name`): a virtual Secret
    `<pod>-sa-token` synced by vcluster, or the token Secret of a pod whose name and namespace join to the same
    name. The pod is not created until the name is free; its reconciler tells the tenant."""


class TokenProjectionsTooLarge(ReconcileError):
    """A pod's token projections could not fit where their tokens go, whatever tokens it got (`tokens.oversize`):
    the host would refuse the pod or its token Secret, so no token is requested. The message is the SyncWarning
    that refuses the pod; the pod reconciler records it and does not retry (a change of the pod looks again)."""


class ServiceAccountTokens:
    """Requests tokens for host pods and keeps their Secrets (Secret mode).

    Args:
        virtual: client of the virtual API server (TokenRequests).
        host: client of the host API server (token Secrets).
        host_namespace, vcluster_name: where host pods live and how objects are named there.
        use_secrets: `sync.toHost.pods.useSecretsForSATokens`.
        host_secrets: metadata cache of the host Secrets in `host_namespace` (which token Secrets exist).
        lifetime: seconds a token is valid (at least 600, the API server's minimum); 0 for vcluster's ten years
            without renewal.
        clock: renewal times are read and written on it (wall seconds).
        cluster_domain: `networking.advanced.clusterDomain`: the first default audience of a projection that names
            none is `https://kubernetes.default.svc.<cluster_domain>`, the virtual API server's issuer (vcluster's
            translator.go).

    Attributes:
        failing: virtual pod key -> why its last renewal failed (for `/readyz`), while it fails.
        renewals, failures: counts of renewals done and failed (the metrics read them).
    """

    def __init__(self, virtual: KubeClient, host: KubeClient, *, host_namespace: str, vcluster_name: str,
                 use_secrets: bool, host_secrets: Store | None = None, lifetime: int = tokens.DEFAULT_LIFETIME,
                 clock: Clock | None = None, cluster_domain: str = CLUSTER_DOMAIN) -> None:
        self.virtual = virtual
        self.cluster_domain = cluster_domain
        self.host = host
        self.host_namespace = host_namespace
        self.vcluster_name = vcluster_name
        self.use_secrets = use_secrets
        self.host_secrets = host_secrets
        self.lifetime = lifetime
        self.clock = clock or RealClock()
        self.failing: dict[str, str] = {}
        self.renewals = 0
        self.failures = 0

    def secret_name(self, namespace: str, name: str) -> str:
        """The host Secret of virtual pod `namespace/name`'s tokens."""
        return translate.host_pod_name(f"{name}-sa-token", namespace, self.vcluster_name)

    async def apply(self, vpod: Obj, desired: Obj) -> str | None:
        """Replace the token projections of the host pod `desired` (mutated) by tokens requested from the
        virtual API server for the pod's service account. In Secret mode the tokens are written to the host
        Secret first; returns its name (to be owned by the host pod once it exists), else None.

        Raises:
            TokenProjectionsTooLarge: the tokens could not fit where they go (nothing was requested).
            ApiError: a TokenRequest or the Secret write failed.
            ReconcileError: the virtual API server answered without a token.
        """
        sources = tokens.token_sources(desired["spec"], self.cluster_domain)
        if not sources:
            return None
        meta = vpod["metadata"]
        refusal = tokens.oversize(meta["name"], len(sources), desired["metadata"]["annotations"],
                                  secret=self.use_secrets)
        if refusal is not None:
            raise TokenProjectionsTooLarge(refusal)
        answers = await self._request_all(vpod, [(src.audiences, src.expiration) for src in sources])
        issued = [(src, token) for src, (token, _) in zip(sources, answers, strict=True)]
        name = self.secret_name(meta["namespace"], meta["name"]) if self.use_secrets else None
        data, where = tokens.apply_tokens(
            desired["spec"], desired["metadata"]["annotations"], issued, secret_name=name,
            suffix=lambda: secrets.token_hex(tokens.SUFFIX_LENGTH // 2), pod_spec=vpod.get("spec") or {})
        if self.lifetime:
            # `where` has one key per source, in the order of `issued`
            expirations = {k: src.expiration for k, src in zip(where, sources, strict=True) if src.expiration}
            desired["metadata"]["annotations"][tokens.STATE_ANNOTATION] = tokens.RenewalState(
                self._renew_at(seconds for _, seconds in answers), where, name or "", expirations).encode()
        if name is None:
            return None
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "stringData": data, "metadata": {
            "name": name, "namespace": self.host_namespace, "labels": {translate.MANAGED_BY: self.vcluster_name},
            "annotations": {translate.OBJECT_NAME: meta["name"], translate.OBJECT_NAMESPACE: meta["namespace"]}}}
        try:
            await self.host.create(SECRETS, secret, self.host_namespace)
        except ApiError as e:
            if not e.already_exists:
                raise
            if await self._owner_gone(name):
                # the token Secret of an earlier host pod of the same name, which names that gone pod as its owner:
                # the garbage collector would delete it under the new pod (its delete is guarded by the Secret's
                # uid only). As vcluster's SATokenSecret (token/sa_token_secret.go), it is deleted and made anew.
                if not await self._delete_if_ours(meta["namespace"], meta["name"]):
                    raise TokenSecretTaken(f"host secret {self.host_namespace}/{name} is not the token secret of pod "
                                           f'{meta["namespace"]}/{meta["name"]} (another object holds its name); its '
                                           "tokens are not written there") from e
                await self.host.create(SECRETS, secret, self.host_namespace)
            else:  # an earlier try's (its host pod not created, or created and not in the cache yet): used as it is
                await self._write_secret(meta["namespace"], meta["name"], data)
        return name

    async def _owner_gone(self, secret: str) -> bool:
        """Whether host Secret `secret` names a Pod owner that is gone: no host pod of its name and uid, or one being
        deleted (its Secret goes with it). False for a Secret without a Pod owner (an earlier try's) and for one
        whose owner runs (a reconcile before the cache has the pod it created).

        Raises:
            ApiError: a read failed (not a 404).
        """
        try:
            meta = (await self.host.get(SECRETS, secret, self.host_namespace, metadata_only=True)).get("metadata")
        except ApiError as e:
            if e.not_found:
                return False
            raise
        owners = [o for o in (meta or {}).get("ownerReferences") or []
                  if isinstance(o, dict) and o.get("kind") == "Pod" and isinstance(o.get("name"), str)]
        for owner in owners:
            try:
                pod = await self.host.get(PODS, owner["name"], self.host_namespace, metadata_only=True)
            except ApiError as e:
                if e.not_found:
                    continue
                raise
            pmeta = pod.get("metadata") or {}
            if pmeta.get("uid") == owner.get("uid") and not pmeta.get("deletionTimestamp"):
                return False
        return bool(owners)

    def _ours(self, namespace: str, name: str) -> list[Obj]:
        """JSON-patch `test` operations that hold only on the token Secret written for virtual pod
        `namespace/name`: this vcluster's managed-by label and the pod's object annotations."""
        return [{"op": "test", "path": JsonPointer.from_parts(["metadata", field, key]).path, "value": value}
                for field, key, value in (
                    ("labels", translate.MANAGED_BY, self.vcluster_name),
                    ("annotations", translate.OBJECT_NAME, name),
                    ("annotations", translate.OBJECT_NAMESPACE, namespace))]

    async def _write_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Write `data` (key -> token) into the token Secret of virtual pod `namespace/name`, only when it is the
        one written for that pod (`_ours`).

        Raises:
            TokenSecretTaken: another object holds the Secret's name (the host answered 422 to a failed test).
            ApiError: the write failed otherwise.
        """
        secret = self.secret_name(namespace, name)
        ops = self._ours(namespace, name) + [
            {"op": "add", "path": JsonPointer.from_parts(["data", k]).path,
             "value": base64.b64encode(v.encode()).decode()} for k, v in data.items()]
        try:
            await self.host.patch(SECRETS, secret, ops, self.host_namespace, patch_type="json")
        except ApiError as e:
            if e.status != 422:
                raise
            raise TokenSecretTaken(f'host secret {self.host_namespace}/{secret} is not the token secret of pod '
                                   f'{namespace}/{name} (another object holds its name); its tokens are not written '
                                   f'there: {e.message}') from e

    def _renew_at(self, valid: Iterable[int | None]) -> float:
        """When to renew tokens just issued (Unix seconds): after RENEW_AFTER of the shortest time one of them is
        valid, `valid` being each answer's seconds (None: as asked). A virtual API server with
        `--service-account-max-token-expiration` below the lifetime shortens a request and says so in the answer's
        `spec.expirationSeconds`; renewing after 80% of the lifetime asked would leave the pod with expired tokens."""
        shortest = min([self.lifetime, *(v for v in valid if v is not None and v > 0)])
        return self.clock.wall() + tokens.RENEW_AFTER * shortest

    async def _request_all(self, vpod: Obj, wanted: list[tuple[tuple[str, ...] | list[str], int | None]]
                           ) -> list[tuple[str, int | None]]:
        """`_request` for each (audiences, expiration) of `wanted`, CONCURRENT_REQUESTS at a time; the answers in
        the order of `wanted`. The first failure is raised once the requests still on their way are cancelled (a
        retry asks for every token again, as one after another did)."""
        answers: dict[int, tuple[str, int | None]] = {}
        todo = iter(enumerate(wanted))  # shared: each worker takes the next request once its own is answered

        async def worker() -> None:
            for i, (audiences, expiration) in todo:
                answers[i] = await self._request(vpod, audiences, expiration)

        workers = [asyncio.create_task(worker()) for _ in range(min(CONCURRENT_REQUESTS, len(wanted)))]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()  # the others, after a failure (or a cancel of this reconcile)
            await asyncio.gather(*workers, return_exceptions=True)
        return [answers[i] for i in range(len(wanted))]

    async def _request(self, vpod: Obj, audiences: tuple[str, ...] | list[str],
                       expiration: int | None) -> tuple[str, int | None]:
        """A token for the virtual pod's service account and `audiences`, bound to the pod, valid for the lifetime
        or the shorter `expiration` (seconds) its projection asks for; and the seconds it is valid as the server
        answered (`spec.expirationSeconds`), or as asked when the answer does not say (None with lifetime 0)."""
        meta = vpod["metadata"]
        sa = (vpod.get("spec") or {}).get("serviceAccountName") or "default"
        asked = min(self.lifetime, expiration) if self.lifetime and expiration else self.lifetime
        answer = await self.virtual.token_request(
            meta["namespace"], sa, tokens.token_request(audiences, meta["name"], meta.get("uid", ""), asked))
        token = (answer.get("status") or {}).get("token")
        if not isinstance(token, str) or not token:
            raise ReconcileError(f"the virtual API server returned no token for service account "
                                 f"{meta['namespace']}/{sa}")
        seconds = (answer.get("spec") or {}).get("expirationSeconds")
        return token, seconds if isinstance(seconds, int) and not isinstance(seconds, bool) else asked or None

    async def renew_if_due(self, vpod: Obj, hpod: Obj) -> float | None:
        """Renew the host pod's tokens when their renewal time has come (the host pod's renewal annotation);
        returns the seconds until the next renewal, None for a pod without renewable tokens.

        Raises:
            ApiError, ReconcileError: the renewal failed (recorded in `failing`; retried with backoff).
        """
        host_ann = (hpod.get("metadata") or {}).get("annotations") or {}
        state = tokens.RenewalState.decode(host_ann.get(tokens.STATE_ANNOTATION))
        vmeta = vpod["metadata"]
        key = f'{vmeta["namespace"]}/{vmeta["name"]}'
        if state is not None:  # only the host pod's own token annotations; in Secret mode, only valid Secret keys
            state = tokens.RenewalState(state.renew_at, {k: a for k, a in state.tokens.items() if (
                _SECRET_KEY.fullmatch(k) if state.secret else
                k in host_ann and k.startswith(tokens.TOKEN_ANNOTATION_PREFIX))}, state.secret, state.expirations)
        if state is None or not state.tokens or not self.lifetime:
            self.failing.pop(key, None)
            return None
        wait = state.renew_at - self.clock.wall()
        if wait > 0:
            return wait
        try:
            keys = list(state.tokens)
            answers = dict(zip(keys, await self._request_all(vpod, [
                (state.tokens[k], state.expirations.get(k)) for k in keys]), strict=True))
            fresh = {k: token for k, (token, _) in answers.items()}
            secret = self.secret_name(vmeta["namespace"], vmeta["name"]) if state.secret else ""  # derived
            renewed = tokens.RenewalState(self._renew_at(seconds for _, seconds in answers.values()), state.tokens,
                                          secret, state.expirations)
            hname = hpod["metadata"]["name"]
            if secret:
                await self._write_secret(vmeta["namespace"], vmeta["name"], fresh)
                ann: Obj = {tokens.STATE_ANNOTATION: renewed.encode()}
            else:
                ann = {**fresh, tokens.STATE_ANNOTATION: renewed.encode()}
            # only to the host pod the cache holds (its uid): never the tokens into another pod put under the name
            await self.host.patch(PODS, hname, {"metadata": {"annotations": ann}}, self.host_namespace,
                                  uid=hpod["metadata"].get("uid"))
        except (ApiError, ReconcileError) as e:
            if isinstance(e, ApiError) and e.status in (404, 409) and await self._pod_gone(vpod):
                # the TokenRequest found no pod of the uid to bind to (TokenREST.Create: NotFound, or a Conflict for
                # another uid): the virtual pod went after the cache's copy, and its deletion's event reconciles the
                # key (its host pod deleted, or an orphan left in place). No token can be had for a gone pod and
                # none is needed: not a failure (the metric, /readyz), and no retry.
                self.failing.pop(key, None)
                log.info("did not renew the service-account tokens of pod %s: the pod is gone (%s)", key, e)
                return None
            self.failures += 1
            self.failing[key] = str(e)
            log.warning("renewing the service-account tokens of pod %s failed (retried with backoff; the current "
                        "ones expire %d s after they were issued): %s", key, self.lifetime, e)
            raise
        self.renewals += 1
        if self.failing.pop(key, None) is not None:
            log.info("renewing the service-account tokens of pod %s works again", key)
        wait = renewed.renew_at - self.clock.wall()  # after 80% of what the server granted, maybe less than asked
        log.info("renewed %d service-account token(s) of pod %s (host pod %s/%s); next renewal in %d s", len(fresh),
                 key, self.host_namespace, hname, int(wait))
        return wait

    async def _pod_gone(self, vpod: Obj) -> bool:
        """Whether virtual pod `vpod` is gone from the virtual API server: no pod of its name, or one of another uid
        (read as metadata). False when the read fails otherwise."""
        meta = vpod["metadata"]
        try:
            live = await self.virtual.get(PODS, meta["name"], meta["namespace"], metadata_only=True)
        except ApiError as e:
            return e.not_found
        return bool((live.get("metadata") or {}).get("uid") != meta.get("uid"))

    async def own(self, vpod: Obj, hpod: Obj) -> None:
        """Make the host pod the owner of the token Secret of virtual pod `vpod`, so that the Secret goes with the
        pod (only when it is the one written for that pod, `_ours`)."""
        meta, vmeta = hpod["metadata"], vpod["metadata"]
        owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
        await self.host.patch(SECRETS, self.secret_name(vmeta["namespace"], vmeta["name"]), [
            *self._ours(vmeta["namespace"], vmeta["name"]),
            {"op": "add", "path": "/metadata/ownerReferences", "value": [owner]}], self.host_namespace,
            patch_type="json")

    async def forget(self, namespace: str, name: str) -> None:
        """Virtual pod `namespace/name` is gone and has no host pod: delete a token Secret written for it
        (it has no owner yet for the garbage collector). Costs nothing when the cache shows none; a Secret of that
        name that was not written for this pod (its metadata, read without its data, says so) is left alone."""
        secret = self.secret_name(namespace, name)
        if not self.use_secrets or self.host_secrets is None or \
                self.host_secrets.get(f"{self.host_namespace}/{secret}") is None:
            return
        if await self._delete_if_ours(namespace, name):
            log.info("deleted token secret %s/%s: virtual pod %s/%s is gone", self.host_namespace, secret,
                     namespace, name)
        else:
            log.info("left host secret %s/%s alone: it is not the token secret of virtual pod %s/%s",
                     self.host_namespace, secret, namespace, name)

    async def _delete_if_ours(self, namespace: str, name: str) -> bool:
        """Delete the token Secret of virtual pod `namespace/name` when it is the one written for that pod (its
        metadata, read without its data, carries this vcluster's label and the pod's object annotations), guarded
        by its uid. Returns False when another object holds the name (left alone), True otherwise (deleted, or
        gone already).

        Raises:
            ApiError: the read or the delete failed (not a 404).
        """
        secret = self.secret_name(namespace, name)
        try:
            meta = (await self.host.get(SECRETS, secret, self.host_namespace, metadata_only=True)).get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            labels, ann = meta.get("labels") or {}, meta.get("annotations") or {}
            if labels.get(translate.MANAGED_BY) != self.vcluster_name or ann.get(translate.OBJECT_NAME) != name or \
                    ann.get(translate.OBJECT_NAMESPACE) != namespace:
                return False
            await self.host.delete(SECRETS, secret, self.host_namespace, uid=meta.get("uid"))
        except ApiError as e:
            if not e.not_found:
                raise
        return True
