"""A Kubernetes client that works on plain dicts, for one cluster.

It uses kubernetes-asyncio for what a client library is for (kubeconfig and in-cluster loading,
authentication with token refresh, TLS and the connection pool) and sends the REST requests itself over
that connection pool, so objects stay plain JSON dicts: the generated models reject some valid server
data and cost time to build, and the library's request path costs per request what a controller pays
for every object (a recursive walk of the body, and an `aiohttp` session with `trust_env`, which looks
up `~/.netrc` on a worker thread and the proxy variables on every request). The proxy a request goes
through is resolved once per client instead: the kubeconfig's `proxy-url`, else the standard
`HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` variables, as client-go's `ProxyFromEnvironment` does.

Every failure is an `ApiError`, including connection errors and timeouts (status 0), so callers handle
one exception type and can log the verb, resource and cluster it came from.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import yaml
from aiohttp.http_exceptions import HttpProcessingError
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader
from kubernetes_asyncio.config.kube_config import KubeConfigLoader

from syncer import __version__
from syncer.kube import jsonutil
from syncer.kube.clock import Clock
from syncer.kube.resources import PODS, SERVICEACCOUNTS, APIResource

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_USER_AGENT = f"runtimeclass-syncer/{__version__}"

# Metadata-only reads, as controller-runtime's metadata informers ask for them: no Secret data ever
# enters the process.
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


class ApiError(Exception):
    """A failed API request.

    Attributes:
        status: HTTP status (0 when no response arrived: connection refused, reset, timeout).
        reason: the Status reason (NotFound, AlreadyExists, Conflict, Expired, Forbidden, ...); always a str (a
            reason or message passed as anything else is kept as its str()).
        message: the server's message (or the connection error); always a str.
        cluster, verb, resource: where it happened, for logs (`host`, `create`, `pods`).
        retry_after: seconds from a `Retry-After` header (429/503), else None.
    """

    def __init__(self, status: int, reason: str, message: str, *, cluster: str = "", verb: str = "",
                 resource: str = "", retry_after: float | None = None) -> None:
        where = f"{verb} {resource} on the {cluster} cluster" if cluster else f"{verb} {resource}"
        # str(): what the loops do with them (hash a reason, search a message) must work whatever a caller passed
        reason, message = str(reason), str(message)
        super().__init__(f"{where}: {message} (HTTP {status or 'no response'}, {reason})")
        self.status = status
        self.reason = reason
        self.message = message
        self.cluster = cluster
        self.verb = verb
        self.resource = resource
        self.retry_after = retry_after

    @property
    def not_found(self) -> bool:
        """404 NotFound."""
        return self.status == 404

    @property
    def already_exists(self) -> bool:
        """409 AlreadyExists (a create of an existing name)."""
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def other_object(self) -> bool:
        """The write named a uid and the object of that name is another one now: a uid precondition failed (409:
        the storage's `Precondition failed: UID in precondition` on a PUT or a Binding, also the namespace registry's
        on a delete; on any other delete `rest.BeforeDelete`'s `the UID in the precondition (...) does not match the
        UID in record (...)`) or a patch would change metadata.uid (422, `metadata.uid: ... field is immutable`).
        The object the caller meant is gone."""
        return ((self.status == 409 and ("Precondition failed: UID in precondition" in self.message
                                         or "the UID in the precondition (" in self.message))
                or (self.status == 422 and "metadata.uid" in self.message))

    @property
    def conflict(self) -> bool:
        """409 Conflict (stale resourceVersion or failed precondition)."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def expired(self) -> bool:
        """The resourceVersion is too old (re-list): HTTP 410, or the reason Expired or Gone whatever the code (a
        watch ERROR event's Status may carry no code, or another one). client-go's reflector re-lists on
        `isExpiredError`: `apierrors.IsResourceExpired(err) || apierrors.IsGone(err)`, which look at the reason
        (k8s.io/client-go/tools/cache/reflector.go; k8s.io/apimachinery/pkg/api/errors/errors.go: IsGone also takes
        a 410 whose reason is unknown; here any 410 re-lists)."""
        return self.status == 410 or self.reason in EXPIRED_REASONS

    @property
    def transient(self) -> bool:
        """Routine and retried: no response, a conflict (a uid precondition too: the cache was behind),
        throttling (429) or brief server trouble (5xx)."""
        return self.status in TRANSIENT_STATUSES or self.other_object


SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # where the kubelet mounts them
SERVICE_ACCOUNT_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


class KubeconfigError(Exception):
    """A cluster's client configuration cannot be used (yet): a kubeconfig file missing, unreadable or
    invalid, or the pod's service-account files missing.

    Attributes:
        source: what was read, for logs and `/readyz` (`the virtual kubeconfig /data/vcluster/admin.conf`).
        reason: why it cannot be used (`no such file`, `[Errno 13] Permission denied`,
            `not a kubeconfig: ...`).
    """

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


def _os_reason(e: OSError, with_file: bool = False) -> str:
    """`no such file`, or `[Errno 13] Permission denied` (with the file's name when it is another file)."""
    if isinstance(e, FileNotFoundError) and e.strerror == os.strerror(errno.ENOENT):
        text = "no such file"
    else:  # also tempfile's `No usable temporary directory found in [...]` (embedded certificates are written out)
        text = f"[Errno {e.errno}] {e.strerror}" if e.errno is not None else str(e)
    return f"{e.filename}: {text}" if with_file and e.filename else text


def _api_client(source: str, cfg: k8s_client.Configuration) -> k8s_client.ApiClient:
    """The library's client for `cfg`; it reads the CA certificate and the client certificate and key now.
    Raises KubeconfigError naming `source` when one cannot be read or is not PEM."""
    try:
        return k8s_client.ApiClient(configuration=cfg)
    except ssl.SSLError as e:
        raise KubeconfigError(source, f"not a usable kubeconfig: a certificate or key cannot be loaded: "
                                      f"{e.reason or e}") from e
    except OSError as e:
        raise KubeconfigError(source, _os_reason(e, with_file=True)) from e


CREDENTIAL_REFRESH = 60.0
"""Seconds between two looks at a kubeconfig user's credential: its `tokenFile` read again (client-go's
`NewCachedFileTokenSource` re-reads it after a minute: k8s.io/client-go/transport/token_source.go), its `exec`
plugin run again when its credential expires within 5 minutes (kubernetes-asyncio's `load_from_exec_plugin`)."""


class _CredentialRefresh:
    """kubernetes-asyncio's `refresh_api_key_hook` for a kubeconfig whose user has a `tokenFile` or an `exec`
    plugin: at most every `every` seconds (monotonic) the library's loader `loader` loads the user again and the
    bearer token it finds replaces the one in use. The library loads a kubeconfig's credential once; a rotated
    projected token, or an exec plugin's 15-minute token (EKS), would then be refused for good (401 on every
    request). A credential that cannot be loaded is logged at warning and the one in use kept (retried `every` s
    later)."""

    def __init__(self, loader: KubeConfigLoader, source: str, every: float) -> None:
        self.loader = loader
        self.source = source
        self.every = every
        self._due = time.monotonic() + every

    async def __call__(self, cfg: k8s_client.Configuration) -> None:
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + self.every
        scratch = k8s_client.Configuration()
        try:
            await self.loader.load_and_set(scratch)
        except Exception as e:  # the library's ConfigException, a plugin that failed, a file gone
            log.warning("could not refresh the credential of %s: %s; the one in use is kept", self.source,
                        e or type(e).__name__)
            return
        token = scratch.api_key.get("BearerToken")
        if token:
            cfg.api_key["BearerToken"] = token


def _kubeconfig_entry(doc: dict[str, Any], context: str | None, section: str) -> dict[str, Any]:
    """The `user` (`section` "users") or `cluster` ("clusters") mapping of kubeconfig `doc`'s context `context`
    (its current one when None), {} when the document names none (the library's loader reports what is wrong)."""
    def named(entries: str, name: Any, key: str) -> Any:
        return next((e.get(key) for e in doc.get(entries) or [] if isinstance(e, dict) and e.get("name") == name),
                    None)
    ctx = named("contexts", context or doc.get("current-context"), "context")
    key = section.removesuffix("s")
    entry = named(section, ctx.get(key), key) if isinstance(ctx, dict) else None
    return entry if isinstance(entry, dict) else {}


def kubeconfig_fingerprint(path: str, context: str | None = None) -> bytes:
    """The bytes of kubeconfig `path` followed by those of the files it names for its context's cluster and user
    (`certificate-authority`, `client-certificate`, `client-key`, relative to its folder): a change of any of them
    (a rotated client certificate) changes the fingerprint. A referenced file that cannot be read counts as empty.

    Raises:
        OSError: the kubeconfig itself cannot be read.
    """
    with open(path, "rb") as f:
        raw = f.read()
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    if not isinstance(doc, dict):
        return raw
    folder, out = os.path.dirname(os.path.abspath(path)), [raw]
    user, cluster = _kubeconfig_entry(doc, context, "users"), _kubeconfig_entry(doc, context, "clusters")
    for section, key in ((cluster, "certificate-authority"), (user, "client-certificate"), (user, "client-key")):
        name = section.get(key)
        if isinstance(name, str) and name:
            try:
                with open(os.path.join(folder, name), "rb") as f:
                    out.append(b"\0" + f.read())
            except OSError:
                out.append(b"\0")
    return b"".join(out)


def _read_kubeconfig(source: str, path: str) -> tuple[bytes, dict[str, Any], str]:
    """A kubeconfig file's bytes, its YAML document and the folder its relative paths start from. Raises
    KubeconfigError naming `source`."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise KubeconfigError(source, _os_reason(e)) from e
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError as e:  # where and what only: the parser's excerpt of the file may hold a key or token
        mark, problem = getattr(e, "problem_mark", None), getattr(e, "problem", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise KubeconfigError(source, f"not a kubeconfig: YAML error{where}: {problem or type(e).__name__}") from e
    if doc is None:
        raise KubeconfigError(source, "not a kubeconfig: the file is empty")
    if not isinstance(doc, dict):
        raise KubeconfigError(source, f"not a kubeconfig: a YAML {type(doc).__name__}, not a mapping")
    return raw, doc, os.path.dirname(os.path.abspath(path))


MAX_WATCH_EVENT_BYTES = 256 * 2**20
"""Bytes: the largest watch event (one line of the stream) the client buffers; a longer one is an ApiError, not a
crash or an unbounded buffer. client-go's framer has no limit; kube-apiserver on etcd refuses objects over 1.5 MiB
(etcd's --max-request-bytes), and a kine-backed vcluster may hold larger ones, but not this large."""

TRANSIENT_STATUSES = (0, 409, 429, 500, 502, 503, 504)  # no response, conflict, throttled, server trouble
PERSISTENT_RETRIES = 5  # a transient failure is logged at warning from this retry on (info before)
EXPIRED_REASONS = ("Expired", "Gone")  # metav1.StatusReasonExpired, metav1.StatusReasonGone: `ApiError.expired`
_RETRY_AFTER = re.compile(r"[0-9]+(\.[0-9]*)?")  # ASCII digits only: str.isdigit() is also true of "²"


def status_text(value: Any, fallback: str) -> str:
    """A Status field (`reason`, `message`) as an ApiError keeps it: `value` when it is a non-empty string, else
    `fallback` (a proxy's or a broken server's JSON may put an object or a number there; metav1.Status declares
    both strings, k8s.io/apimachinery/pkg/apis/meta/v1/types.go)."""
    return value if isinstance(value, str) and value else fallback


def retry_after_seconds(header: str | None) -> float | None:
    """A `Retry-After` header's delay in seconds, None when it is missing or not a number of seconds (an HTTP date
    is not read). client-go's `retryAfterSeconds` (k8s.io/client-go/rest/request.go) takes `strconv.Atoi`'s
    integers; a fraction is taken too."""
    return float(header) if header and _RETRY_AFTER.fullmatch(header.strip()) else None


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, with the raw object dict."""

    type: str
    object: Any  # a dict from a well-behaved server; checked by the consumer


class KubeClient:
    """Plain-dict access to one cluster's API.

    Args:
        api: a kubernetes-asyncio ApiClient configured for the cluster.
        cluster: a name for logs and errors ("host", "virtual").
        request_timeout: seconds before a non-watch request is abandoned (ApiError status 0).
    Attributes:
        kubeconfig: (path, the bytes read) when built by `from_kubeconfig`, else None: what
            syncer.startup.watch_kubeconfigs compares the file with later.
    """

    def __init__(self, api: k8s_client.ApiClient, cluster: str, request_timeout: float = 30.0,
                 user_agent: str = DEFAULT_USER_AGENT) -> None:
        self.api = api
        self.api.user_agent = user_agent  # shows up in the API servers' audit logs
        self.cluster = cluster
        self.request_timeout = request_timeout
        cfg = api.configuration
        self._base = str(cfg.host).rstrip("/")
        self._headers = {"User-Agent": user_agent}
        self._proxy = proxy_for(self._base, cfg.proxy)
        self._proxy_headers = cfg.proxy_headers or None
        self._server_hostname = cfg.tls_server_name or None
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)  # every request's but the watches'
        self.kubeconfig: tuple[str, bytes] | None = None
        # The library's pool (its TLS settings and connection limit) without its per-request env lookups
        self._session = aiohttp.ClientSession(connector=api.rest_client.pool_manager.connector,
                                              connector_owner=False, trust_env=False, read_bufsize=2 ** 21)

    @classmethod
    async def from_kubeconfig(cls, path: str, cluster: str, context: str | None = None,
                              request_timeout: float = 30.0, user_agent: str = DEFAULT_USER_AGENT,
                              server: str | None = None, credential_refresh: float = CREDENTIAL_REFRESH) -> KubeClient:
        """Build a client from a kubeconfig file (its current context unless `context` is given); `server`, when
        given, replaces the cluster's `server` URL (the CA and credentials stay, as with kubectl's --server).
        Paths in it (`certificate-authority`, `client-certificate`, `tokenFile`) are relative to the file's
        folder, as kubectl reads them. A user's `tokenFile` is read again, and its `exec` plugin run again before
        its credential expires, every `credential_refresh` seconds (`CREDENTIAL_REFRESH`); `kubeconfig` holds the
        file's path and its fingerprint (`kubeconfig_fingerprint`: the file and the certificate files it names).

        Raises:
            KubeconfigError: the file is missing, unreadable, not a kubeconfig, or unusable (a referenced
                file missing, no such context); `source` is `the <cluster> kubeconfig <path>`.
        """
        source = f"the {cluster} kubeconfig {path}"
        raw, doc, folder = _read_kubeconfig(source, path)
        cfg = k8s_client.Configuration()
        try:
            loader = KubeConfigLoader(config_dict=doc, active_context=context, config_base_path=folder)
            await loader.load_and_set(cfg)
            user = _kubeconfig_entry(doc, context, "users")
            if "tokenFile" in user or "exec" in user:
                cfg.refresh_api_key_hook = _CredentialRefresh(loader, source, credential_refresh)
        except OSError as e:
            raise KubeconfigError(source, _os_reason(e, with_file=True)) from e
        except Exception as e:  # the library's ConfigException, and its asserts and lookups on odd shapes
            raise KubeconfigError(source, f"not a usable kubeconfig: {e or type(e).__name__}") from e
        if server:
            cfg.host = server.rstrip("/")
        client = cls(_api_client(source, cfg), cluster, request_timeout, user_agent)
        try:
            client.kubeconfig = (path, kubeconfig_fingerprint(path, context))
        except OSError:  # gone since it was read: the watch sees the change
            client.kubeconfig = (path, raw)
        return client

    @classmethod
    def in_cluster(cls, cluster: str, request_timeout: float = 30.0, user_agent: str = DEFAULT_USER_AGENT, *,
                   token_file: str = SERVICE_ACCOUNT_TOKEN, ca_file: str = SERVICE_ACCOUNT_CA) -> KubeClient:
        """Build a client from the pod's service account: `KUBERNETES_SERVICE_HOST`/`_PORT` and the token and
        CA certificate the kubelet mounts (client-go's `rest.InClusterConfig`, k8s.io/client-go/rest/config.go).
        The token file is read again every minute, so a rotated projected token is picked up.

        Raises:
            KubeconfigError: not in a pod (the variables are unset), or a file missing, unreadable or empty;
                `source` is `the <cluster> cluster's service account`.
        """
        source = f"the {cluster} cluster's service account"
        for name in (token_file, ca_file):
            try:
                with open(name, "rb") as f:
                    if not f.read(1):
                        raise KubeconfigError(source, f"{name}: the file is empty")
            except OSError as e:
                raise KubeconfigError(source, f"{name}: {_os_reason(e)}") from e
        cfg = k8s_client.Configuration()
        try:
            InClusterConfigLoader(token_filename=token_file, cert_filename=ca_file).load_and_set(cfg)
        except OSError as e:
            raise KubeconfigError(source, _os_reason(e, with_file=True)) from e
        except k8s_config.ConfigException as e:
            raise KubeconfigError(source, str(e)) from e
        return cls(_api_client(source, cfg), cluster, request_timeout, user_agent)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._session.close()
        await self.api.close()

    @staticmethod
    def _resource_label(res: APIResource, subresource: str | None) -> str:
        """How errors name what was asked for, as RBAC names it: `pods`, `pods/binding`,
        `runtimeclasses.node.k8s.io`, `leases/status.coordination.k8s.io`."""
        if not subresource:
            return res.qualified
        return f"{res.plural}/{subresource}" + (f".{res.group}" if res.group else "")

    async def _send(self, verb: str, res: APIResource, method: str, path: str, *,
                    query: list[tuple[str, str]] | None = None, body: Any = None,
                    content_type: str = "application/json", subresource: str | None = None,
                    accept: str = "application/json",
                    timeout: aiohttp.ClientTimeout | float | None = None) -> aiohttp.ClientResponse:
        headers = {**self._headers, "Accept": accept, "Content-Type": content_type}
        query = list(query or [])
        if timeout is None:
            timeout = self._timeout
        elif not isinstance(timeout, aiohttp.ClientTimeout):
            timeout = aiohttp.ClientTimeout(total=timeout)
        try:
            # the library's authentication: a bearer token (refreshed by its hooks), or nothing with certs (the
            # library adds nothing without a "BearerToken" key, and calls its refresh hook only with one)
            if "BearerToken" in self.api.configuration.api_key:
                await self.api.update_params_for_auth(headers, query, ["BearerToken"])
            url = self._base + path + ("?" + urllib.parse.urlencode(query) if query else "")
            resp = await self._session.request(
                method, url, headers=headers, timeout=timeout, proxy=self._proxy, proxy_headers=self._proxy_headers,
                server_hostname=self._server_hostname,
                data=None if body is None else body if isinstance(body, bytes) else jsonutil.dumps(body))
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ApiError(0, "ConnectionError", str(e) or type(e).__name__, cluster=self.cluster, verb=verb,
                           resource=self._resource_label(res, subresource)) from e
        if resp.status >= 400:
            raw = await resp.read()
            resp.release()
            raise self._error(verb, self._resource_label(res, subresource), resp, raw)
        return resp

    def _error(self, verb: str, label: str, resp: aiohttp.ClientResponse, raw: bytes) -> ApiError:
        """The ApiError of an answer with status >= 400: reason and message from its body when it is a Status and
        they are strings (`status_text`), else the HTTP reason phrase and the body's first 500 characters."""
        reason, message = resp.reason or "", raw.decode("utf-8", "replace")[:500]
        try:
            status = jsonutil.loads(raw)
        except ValueError:
            status = None
        if isinstance(status, dict) and status.get("kind") == "Status":
            reason, message = status_text(status.get("reason"), reason), status_text(status.get("message"), message)
        return ApiError(resp.status, reason, message, cluster=self.cluster, verb=verb, resource=label,
                        retry_after=retry_after_seconds(resp.headers.get("Retry-After")))

    async def _json(self, verb: str, res: APIResource, method: str, path: str, **kw: Any) -> Obj:
        resp = await self._send(verb, res, method, path, **kw)
        try:
            raw = await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ApiError(0, "ConnectionError", str(e) or type(e).__name__, cluster=self.cluster, verb=verb,
                           resource=self._resource_label(res, kw.get("subresource"))) from e
        finally:
            resp.release()
        try:
            data = jsonutil.loads(raw) if raw else {}
        except ValueError as e:
            raise ApiError(resp.status, "BadResponse", f"response is not JSON: {e}", cluster=self.cluster,
                           verb=verb, resource=self._resource_label(res, kw.get("subresource"))) from e
        if not isinstance(data, dict):
            raise ApiError(resp.status, "BadResponse", "response is not a JSON object", cluster=self.cluster,
                           verb=verb, resource=self._resource_label(res, kw.get("subresource")))
        return data

    @staticmethod
    def _selectors(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
        q = []
        if label_selector:
            q.append(("labelSelector", label_selector))
        if field_selector:
            q.append(("fieldSelector", field_selector))
        return q

    async def list(self, res: APIResource, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None, metadata_only: bool = False, limit: int | None = None,
                   continue_token: str | None = None) -> Obj:
        """List objects. Returns the `<Kind>List` dict (`items`, `metadata.resourceVersion`); with
        `metadata_only` a `PartialObjectMetadataList` (metadata of each object, no data or spec). With
        `limit`, at most that many items and, when more remain, `metadata.continue`: the token that asks for
        the next chunk (`continue_token`; 410 Expired when it is too old)."""
        query = self._selectors(label_selector, field_selector)
        if limit:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        return await self._json("list", res, "GET", res.path(namespace), query=query,
                                accept=METADATA_LIST_ACCEPT if metadata_only else "application/json")

    async def get(self, res: APIResource, name: str, namespace: str | None = None, *,
                  metadata_only: bool = False) -> Obj:
        """Get one object; with `metadata_only` a `PartialObjectMetadata` (its metadata, no data or spec). Raises
        ApiError (404 when missing)."""
        return await self._json("get", res, "GET", res.path(namespace, name),
                                accept=METADATA_ACCEPT if metadata_only else "application/json")

    async def create(self, res: APIResource, obj: Obj, namespace: str | None = None, *, dry_run: bool = False) -> Obj:
        """Create an object; returns it as stored, or with `dry_run` (`dryRun=All`) as it would be stored: through
        defaulting, field drops, admission and validation, without persisting it. Raises ApiError (409
        AlreadyExists, 403, 422...)."""
        return await self._json("create", res, "POST", res.path(namespace), body=obj,
                                query=[("dryRun", "All")] if dry_run else None)

    async def replace(self, res: APIResource, obj: Obj, namespace: str | None = None,
                      subresource: str | None = None) -> Obj:
        """PUT an object (its metadata.resourceVersion, if set, is a precondition: 409 Conflict when stale)."""
        return await self._json("update", res, "PUT", res.path(namespace, obj["metadata"]["name"], subresource),
                                body=obj, subresource=subresource)

    async def patch(self, res: APIResource, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: str = "merge", subresource: str | None = None, uid: str | None = None) -> Obj:
        """PATCH an object with a merge (default), strategic, json or apply patch; returns the result. With `uid`,
        only the object of that uid: the patch sets `metadata.uid` to it (a merge patch names it, a JSON patch
        starts with a `replace` of it), which the API server refuses to change (`rest.BeforeUpdate`'s
        common-field validation: 422, `other_object`). That holds for the pod subresources too: the `status`,
        `ephemeralcontainers` and `resize` strategies rebuild the pod from the stored one but keep the patched uid
        (kubernetes' pkg/registry/core/pod/strategy.go), and `BeforeUpdate` validates after them.

        Raises:
            ApiError: the request failed.
            ValueError: `uid` with an apply patch."""
        if uid:
            if patch_type == "json":
                patch = [{"op": "replace", "path": "/metadata/uid", "value": uid}, *patch]
            elif patch_type in ("merge", "strategic"):
                patch = {**patch, "metadata": {**(patch.get("metadata") or {}), "uid": uid}}
            else:
                raise ValueError(f"a uid precondition needs a merge, strategic or JSON patch, not {patch_type}")
        # a JSON patch is written as Go writes JSON: its `test`s of strings then hold on a kube-apiserver that
        # compares them byte for byte (jsonutil.dumps_go)
        body = jsonutil.dumps_go(patch) if patch_type == "json" else patch
        return await self._json("patch", res, "PATCH", res.path(namespace, name, subresource), body=body,
                                content_type=PATCH_TYPES[patch_type], subresource=subresource)

    async def delete(self, res: APIResource, name: str, namespace: str | None = None, *, uid: str | None = None,
                     resource_version: str | None = None, grace_period_seconds: int | None = None) -> Obj:
        """Delete an object, optionally only if its uid/resourceVersion still match (409 otherwise).

        Returns the server's answer (the object or a Status). Raises ApiError (404 when already gone).
        """
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            body["preconditions"] = pre
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        return await self._json("delete", res, "DELETE", res.path(namespace, name), body=body)

    async def bind(self, name: str, namespace: str, node: str, uid: str | None = None) -> Obj:
        """Bind a pod to a node (POST `pods/{name}/binding`, as the scheduler does). With `uid`, only the pod of
        that uid: the Binding's `metadata.uid` is a precondition (kube-scheduler's DefaultBinder sends it;
        `BindingREST.setPodNodeAndMetadata`). Raises ApiError (409 when the pod is already bound, or is
        another pod of that name)."""
        meta = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        return await self._json("create", PODS, "POST", PODS.path(namespace, name, "binding"), body=body,
                                subresource="binding")

    async def token_request(self, namespace: str, service_account: str, request: Obj) -> Obj:
        """Request a token for a service account (POST `serviceaccounts/{name}/token`, a TokenRequest).
        Returns the TokenRequest with `status.token`. Raises ApiError."""
        return await self._json("create", SERVICEACCOUNTS, "POST",
                                SERVICEACCOUNTS.path(namespace, service_account, "token"), body=request,
                                subresource="token")

    def _watch_event(self, line: bytes, res: APIResource, status: int) -> WatchEvent:
        """One line of a watch stream (`{"type": ..., "object": ...}`) as a WatchEvent.

        Raises:
            ApiError: reason BadWatchEvent (status `status`, the stream's, not transient) when it is not one.
        """
        try:
            event = jsonutil.loads(line)
            return WatchEvent(str(event["type"]), event["object"])
        except (ValueError, KeyError, TypeError) as e:
            raise ApiError(status, "BadWatchEvent", f"a malformed watch event ({type(e).__name__}: {e}): "
                           f"{line[:200]!r}", cluster=self.cluster, verb="watch", resource=res.qualified) from e

    async def watch(self, res: APIResource, resource_version: str, namespace: str | None = None, *,
                    label_selector: str | None = None, field_selector: str | None = None,
                    timeout_seconds: int = 300, bookmarks: bool = True, metadata_only: bool = False,
                    on_connected: Callable[[], None] | None = None) -> AsyncIterator[WatchEvent]:
        """Watch changes after `resource_version` until the server ends the stream.

        Yields WatchEvents as they arrive (ERROR events are yielded, not raised, so the caller can
        re-list on 410). `on_connected` is called once the server has accepted the request. A stream
        that stays silent for `timeout_seconds` + 30 s is treated as hung and raises ApiError status 0.

        The stream is one JSON event per line, read with no per-line limit up to `MAX_WATCH_EVENT_BYTES` (client-go's
        JSON framer has none; aiohttp's line reader stops at twice its read buffer). A line that is not an event ends
        the watch with an error, before any later event, so the caller resumes from the last good resourceVersion
        (client-go's StreamWatcher stops on a decode error). Bytes after the last newline when the stream ends (cut
        inside an event) are dropped, unless they are a whole event.

        Raises:
            ApiError: the request failed or the connection broke (status 0, ConnectionError); a line is not a watch
                event (BadWatchEvent) or one event exceeds `MAX_WATCH_EVENT_BYTES` (WatchEventTooLarge), both with the
                stream's status (200) and not transient.
        """
        query = [("watch", "true"), ("resourceVersion", resource_version),
                 ("timeoutSeconds", str(timeout_seconds)), *self._selectors(label_selector, field_selector)]
        if bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout,
                                        sock_read=timeout_seconds + 30)
        resp = await self._send("watch", res, "GET", res.path(namespace), query=query, timeout=timeout,
                                accept=METADATA_ACCEPT if metadata_only else "application/json")
        try:
            if on_connected is not None:
                on_connected()  # the server accepted the watch: the connection is healthy again
            buf = bytearray()  # the bytes of the event being received (an event is one line, of any length)
            try:
                async for chunk in resp.content.iter_any():
                    scan = len(buf)  # the bytes before have no newline
                    buf += chunk
                    start = 0
                    while (end := buf.find(b"\n", scan)) >= 0:
                        if end - start > MAX_WATCH_EVENT_BYTES:
                            break
                        line = bytes(buf[start:end])
                        start = scan = end + 1
                        if line.strip():
                            yield self._watch_event(line, res, resp.status)
                    del buf[:start]
                    if len(buf) > MAX_WATCH_EVENT_BYTES:  # an event that is or will be over the limit
                        raise ApiError(resp.status, "WatchEventTooLarge", f"a watch event over {MAX_WATCH_EVENT_BYTES} "
                                       f"bytes: {bytes(buf[:200])!r}...", cluster=self.cluster, verb="watch",
                                       resource=res.qualified)
            except (aiohttp.ClientError, HttpProcessingError, TimeoutError, OSError) as e:
                raise ApiError(0, "ConnectionError", f"watch stream broke: {e or type(e).__name__}",
                               cluster=self.cluster, verb="watch", resource=res.qualified) from e
            if buf.strip():  # the stream ended without a newline after the last bytes
                try:
                    event = self._watch_event(bytes(buf), res, resp.status)
                except ApiError:  # cut inside an event: the next watch resumes from the last one applied
                    log.debug("%s cluster: the %s watch stream ended inside an event: %.200r", self.cluster,
                              res.qualified, bytes(buf))
                else:
                    yield event
        finally:
            resp.close()  # an unfinished stream cannot go back to the pool


def proxy_for(base_url: str, configured: str | None) -> str | None:
    """The proxy for requests to `base_url`: the kubeconfig's `proxy-url`, else the environment's
    (`HTTPS_PROXY`/`HTTP_PROXY`, unless `NO_PROXY` names the host), else None. Resolved once per client."""
    if configured:
        return configured
    parts = urllib.parse.urlsplit(base_url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.netloc):
        return None
    return urllib.request.getproxies().get(parts.scheme)


async def sleep_or_stop(delay: float, stop: asyncio.Event, clock: Clock | None = None) -> bool:
    """Wait `delay` seconds on `clock` (default the real one) or until `stop` is set. Returns True when
    stopped."""
    if clock is None:
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            return False
        return True
    elapsed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    timer = clock.call_later(delay, lambda: None if elapsed.done() else elapsed.set_result(None))
    stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([elapsed, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        stopped.cancel()
        elapsed.cancel()
    return stop.is_set()
