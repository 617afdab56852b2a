"""An in-process Kubernetes API server over real HTTP (aiohttp), for tests and the demo.

It serves namespaces, pods (+status), core/v1 events, node.k8s.io/v1 runtimeclasses and
coordination.k8s.io/v1 leases with the API semantics the syncer and kubectl depend on: discovery,
list/get/create/replace/patch/delete, label and field selectors, one global resourceVersion,
optimistic concurrency (409), finalizers, watches with resume/410/bookmarks/timeouts, server-side
Table printing for `kubectl get`, and KEP-585 RuntimeClass admission (see test-apiserver.md).

Usage:
    async with EmbeddedAPIServer("host") as server:
        server.write_kubeconfig(path)     # for kubernetes-asyncio and kubectl
        ... server.url ...
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime as dt
import ipaddress
import json
import logging
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import yaml
from aiohttp import web

from kubesim import admission, features, fielderrors, openapi, quantity, tokens, validation
from kubesim.faults import FaultInjector
from kubesim.status import StatusError, already_exists, conflict, invalid, kind_conflict, not_found, options_invalid
from kubesim.storage import Change, Expired, Obj, Storage, Watcher
from kubesim.tables import to_table
from syncer.config.selector import SelectorError
from syncer.config.selector import parse as parse_label_selector
from syncer.kube import jsonutil
from syncer.kube.clock import now_rfc3339, rfc3339
from syncer.kube.resources import (
    ALL_RESOURCES,
    CONFIGMAPS,
    EVENTS,
    LEASES,
    NAMESPACES,
    PODS,
    PRIORITYCLASSES,
    RUNTIMECLASSES,
    SECRETS,
    SELFSUBJECTREVIEWS,
    SERVICEACCOUNTS,
    SERVICES,
    APIResource,
)

log = logging.getLogger(__name__)

_USER = web.RequestKey("user", str)  # the authenticated user of a request
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # v1.LabelMetadataName (staging/src/k8s.io/api/core/v1)
_INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# The resources whose registry strategy answers false to AllowUnconditionalUpdate, so that an update (PUT) must
# name the resourceVersion it replaces (kubernetes pkg/registry/node/runtimeclass/strategy.go and
# pkg/registry/coordination/lease/strategy.go; the others served here allow it and take the stored version)
_CONDITIONAL_UPDATE_ONLY = (RUNTIMECLASSES, LEASES)


# The characters Go's encoding/json writes as `\\u` escapes in strings (HTML-safe: `HTMLEscape`, and the JavaScript
# line terminators), which kube-apiserver's encoding of the stored object therefore holds escaped.
GO_ESCAPED = ("&", "<", ">", "\u2028", "\u2029")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _go_unequal_test(ops: Any, raw: bytes) -> bool:
    """Whether JSON patch `ops`, sent as the bytes `raw`, has a `test` that kube-apiserver before 1.35 finds unequal
    whatever the values: gopkg.in/evanphx/json-patch.v4 v4.12.0 (`lazyNode.equal`) compares a string's bytes as the
    patch wrote them with the server's own encoding of the object, so a tested string holding a character of
    GO_ESCAPED that the patch writes as it is (not `\\u0026`...) never tests equal (v4.13.0, in 1.35, decodes
    strings first). Approximated: such a character anywhere in the raw patch."""
    if not isinstance(ops, list):
        return False
    tested = {c for op in ops if isinstance(op, dict) and op.get("op") == "test"
              for s in _strings(op.get("value")) for c in GO_ESCAPED if c in s}
    return any(c.encode() in raw for c in tested)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (also used for strategic-merge and apply patches on these types)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def _field_value(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    return "" if cur is None else str(cur)


def parse_field_selector(text: str) -> Callable[[Obj], bool]:
    """Parse `a.b=c,d!=e` (`=`, `==`, `!=`) into a predicate on objects. Raises StatusError 400."""
    terms: list[tuple[str, str, bool]] = []
    for raw in filter(None, (t.strip() for t in text.split(","))):
        if "!=" in raw:
            k, v = raw.split("!=", 1)
            terms.append((k, v, False))
        elif "==" in raw:
            k, v = raw.split("==", 1)
            terms.append((k, v, True))
        elif "=" in raw:
            k, v = raw.split("=", 1)
            terms.append((k, v, True))
        else:
            raise StatusError(400, f'invalid field selector: "{raw}": expected an operator')
    return lambda o: all((_field_value(o, k) == v) == eq for k, v, eq in terms)


@dataclass(frozen=True)
class AuditEntry:
    """A resource request as an RBAC authorizer sees it: who (user agent), verb, API group, resource
    (`pods`, `pods/binding`) and namespace ("" for cluster-wide or cluster-scoped requests)."""

    agent: str
    verb: str
    group: str
    resource: str
    namespace: str


def _wants_metadata(request: web.Request) -> bool:
    """The client asked for `PartialObjectMetadata(List)` in `Accept`, as controller-runtime's metadata-only
    informers do (`application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`)."""
    return "as=PartialObjectMetadata" in request.headers.get("Accept", "")


def _metadata(obj: Obj) -> Obj:
    """An object as `meta.k8s.io/v1` PartialObjectMetadata: its metadata only (no data, no spec)."""
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def _encode(data: Any) -> bytes:
    """JSON bytes of a response (orjson; the standard library for what orjson cannot encode, such as
    integers beyond 64 bits that a client managed to store)."""
    try:
        return jsonutil.dumps(data)
    except TypeError:
        return json.dumps(data).encode()


def _json_response(data: Any, *, status: int = 200, headers: Any = None) -> web.Response:
    """A JSON response (`web.json_response` with a faster encoder)."""
    return web.Response(body=_encode(data), status=status, headers=headers, content_type="application/json")


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _storage_uid_error(res: APIResource, obj: Obj, uid: str) -> str:
    """The storage's refusal of a uid precondition (`Preconditions.Check` in k8s.io/apiserver pkg/storage: a
    `StorageError` of code 4, ErrCodeInvalidObj, printed by `StorageError.Error`), which `InterpretUpdateError` wraps
    in a 409 Conflict: the object's etcd key under kube-apiserver's default `/registry` prefix (Services' under
    `services/specs`)."""
    meta = obj["metadata"]
    prefix = "services/specs" if res == SERVICES else res.plural
    key = "/".join(["/registry", prefix, *([meta["namespace"]] if res.namespaced else []), meta["name"]])
    return (f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: "
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}")


def _label_namespace_name(ns: Obj) -> None:
    """Set a namespace's `kubernetes.io/metadata.name` label to its name, whatever the request said (replaced if
    different, put back if removed), as kube-apiserver does on every create and update since 1.21 (the
    NamespaceDefaultLabelName feature, GA and gate removed in 1.24): the v1 defaulting `SetDefaults_Namespace`
    (pkg/apis/core/v1/defaults.go) and, for a name made from generateName, `namespaceStrategy.Canonicalize`
    (pkg/registry/core/namespace/strategy.go)."""
    meta = ns["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), NAMESPACE_NAME_LABEL: meta["name"]}


def _dry_run(values: Any, kind: str) -> bool:
    """Whether a write is a dry run (`dryRun=All`), its values checked as the handlers check every write's options
    (`ValidateDryRun`, k8s.io/apimachinery pkg/apis/meta/v1/validation/validation.go: only `All`): an unknown value
    is 422 `<Kind>.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{...}: supported values: "All"`."""
    given = [str(v) for v in values] if isinstance(values, list) else [] if values is None else [str(values)]
    if any(v != "All" for v in given):
        raise options_invalid(kind, [fielderrors.not_supported("dryRun", given, ["All"])])
    return bool(given)


# Media types a real server decodes and this one does not (kubesim/README.md, "What it does not emulate").
UNDECODED_MEDIA_TYPES = ("application/vnd.kubernetes.protobuf", "application/cbor")


class EmbeddedAPIServer:
    """A Kubernetes API server on 127.0.0.1 (real HTTP) backed by in-memory storage.

    Args:
        name: the cluster name used in the kubeconfig it writes (e.g. "host", "virtual").
        runtime_class_admission: run the KEP-585 RuntimeClass admission on pod create (a host
            cluster does; the demo's virtual cluster does not, so pods naming an unsynced class can
            be created there, as vcluster's own documentation shows).
        history_size: changes kept for watch resumption; older resourceVersions get 410 Expired.
        bookmark_interval: seconds between BOOKMARK events on watches that allow them.
        port: TCP port (0 = pick a free one; a restart keeps the port it got).
        token: when set, every request must carry `Authorization: Bearer <token>` (401 otherwise).
        minor: the Kubernetes 1.x version reported by `/version`, and whose default feature gates decide which
            pod fields are dropped silently (features.py: pod-level resources and observedGeneration before 1.34).
            An attribute: a test may change it before the clients ask.
    """

    def __init__(self, name: str = "cluster", *, runtime_class_admission: bool = True,
                 history_size: int = 2000, bookmark_interval: float = 5.0, port: int = 0,
                 token: str | None = None, minor: int = 32) -> None:
        self.name = name
        self.minor = minor
        self.runtime_class_admission = runtime_class_admission
        self.bookmark_interval = bookmark_interval
        self.port = port
        self.token = token
        self.storage = Storage(history_size)
        self.tokens = tokens.TokenIssuer(f"https://{name}.embedded")
        self.faults = FaultInjector()
        self.requests: list[tuple[str, str, str]] = []  # (method, path, user agent) of every request, for tests
        self.audit: list[AuditEntry] = []  # every resource request as RBAC sees it, for tests
        # The host's mutating admission webhooks on pod create (a test's stand-in for Kueue's, which adds a
        # scheduling gate): each mutates the pod in place, after the built-in mutating plugins, as kube-apiserver's
        # MutatingAdmissionWebhook plugin runs after them.
        self.pod_create_webhooks: list[Callable[[dict[str, Any]], None]] = []
        # ... and on pod update (the pod itself, not a subresource): each mutates the new pod in place, given the
        # old one, before validation, as MutatingAdmissionWebhook does for UPDATE (a policy engine's mutate rule)
        self.pod_update_webhooks: list[Callable[[dict[str, Any], dict[str, Any]], None]] = []
        self._runner: web.AppRunner | None = None
        # the namespace controller's pass over terminating namespaces (kube-controller-manager requeues them too)
        self.namespace_sync_interval = 0.1
        self._namespace_task: asyncio.Task[None] | None = None
        self._by_path = {(r.group, r.version, r.plural): r for r in ALL_RESOURCES}
        self._seed()

    # ------------------------------------------------------------------ lifecycle

    def _seed(self) -> None:
        self._next_ip = 1
        for ns in _INITIAL_NAMESPACES:
            obj = {"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": ns, "uid": str(uuid.uuid4()), "creationTimestamp": now_rfc3339()},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
            _label_namespace_name(obj)
            self.storage.write(NAMESPACES, obj, None)
            self._namespace_created(ns)
        for pc_name, value in admission.SYSTEM_PRIORITY_CLASSES.items():  # the API server's bootstrap classes
            self._create_obj(PRIORITYCLASSES, "", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": pc_name},
                "value": value, "description": "Used for system critical pods that must not be moved from their "
                                               "current node." if pc_name == "system-node-critical" else
                "Used for system critical pods that must run in the cluster, but can be moved to another node if "
                "necessary."})
        self._create_obj(SERVICES, "default", {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}})

    def _namespace_created(self, ns: str) -> None:
        """What kube-controller-manager adds to every new namespace: the `default` ServiceAccount (the
        service-account controller) and the `kube-root-ca.crt` ConfigMap (the root-CA publisher)."""
        for res, obj in ((SERVICEACCOUNTS, {"metadata": {"name": "default"}}),
                         (CONFIGMAPS, {"metadata": {"name": "kube-root-ca.crt"},
                                       "data": {"ca.crt": f"-----BEGIN CERTIFICATE-----\n{self.name} test CA\n"
                                                          "-----END CERTIFICATE-----\n"}})):
            self._create_obj(res, ns, {"apiVersion": "v1", "kind": res.kind, **obj})

    def _allocate_cluster_ip(self, svc: Obj) -> None:
        """The service IP allocator: a ClusterIP from 10.96.0.0/12 for a Service that asks for none
        (`None` stays headless); a requested one must be free (422 otherwise)."""
        spec = svc.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
        used = {(o.get("spec") or {}).get("clusterIP") for o in self.storage.objects(SERVICES).values()}
        want = spec.get("clusterIP")
        if want == "None":
            spec["clusterIPs"] = ["None"]
            return
        if want:
            if want in used:
                raise invalid(SERVICES, svc["metadata"]["name"], [fielderrors.invalid(
                    "spec.clusterIPs", [want], f"failed to allocate IP {want}: provided IP is already allocated")])
        else:
            while True:
                want = str(ipaddress.ip_address("10.96.0.0") + self._next_ip)
                self._next_ip += 1
                if want not in used:
                    break
        spec["clusterIP"], spec["clusterIPs"] = want, [want]

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:41234`."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start serving (binds the port; a restarted server reuses its port)."""
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self._namespace_task = asyncio.create_task(self._namespace_sync_loop())
        if self.port == 0:
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    def cut_watches(self) -> int:
        """End every open watch stream now (as a load balancer or an API server restart does). Returns
        how many were open; clients must resume from their last resourceVersion."""
        return self.storage.close_watches()

    def expire_history(self) -> None:
        """Forget the watch history: every resume from an older resourceVersion gets 410 Expired."""
        self.storage.expire_history()

    async def stop(self) -> None:
        """Stop serving: open watches end, the port is released; stored state is kept."""
        self.storage.close_watches()
        if self._namespace_task is not None:
            self._namespace_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._namespace_task
            self._namespace_task = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def restart(self, *, wipe: bool = False) -> None:
        """Stop and start again on the same port, keeping the state or (wipe=True) starting empty."""
        await self.stop()
        if wipe:
            self.storage.wipe()
            self._seed()
        await self.start()

    async def __aenter__(self) -> EmbeddedAPIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig document (dict) pointing at this server."""
        user: dict[str, Any] = {"token": self.token} if self.token else {}
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": self.name, "cluster": {"server": self.url}}],
            "users": [{"name": self.name, "user": user}],
            "contexts": [{"name": self.name,
                          "context": {"cluster": self.name, "user": self.name, "namespace": namespace}}],
            "current-context": self.name,
        }

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """Write a kubeconfig file for this server and return its path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(yaml.safe_dump(self.kubeconfig(namespace), sort_keys=False), encoding="utf-8")
        return p

    # ------------------------------------------------------------------ routing

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path, request.headers.get("User-Agent", "")))
        try:
            request[_USER] = self._authenticate(request.headers.get("Authorization", ""))
            return await self._route(request)
        except StatusError as e:
            return _json_response(e.status(), status=e.code, headers=e.details.get("headers") or None)
        except Exception as e:  # a bug in the test server must show up as a 500, not a hung client
            log.exception("embedded API server %s: %s %s failed", self.name, request.method, request.path)
            return _json_response(StatusError(500, f"internal error: {e}").status(), status=500)

    def _authenticate(self, authorization: str) -> str:
        """The user of a request: a service account for a bearer token this server issued (401 if it does not
        verify, has expired, or its service account or bound pod or Secret is gone or replaced: tokens.invalidated),
        else the static `token` (required when set) or anonymous admin access."""
        bearer = authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else ""
        if bearer.count(".") == 2:
            claims = self.tokens.verify(bearer)
            if claims is None or tokens.invalidated(claims, self.storage.get) is not None:
                raise StatusError(401, "Unauthorized", "Unauthorized")
            return str(claims["sub"])
        if self.token and bearer != self.token:
            raise StatusError(401, "Unauthorized", "Unauthorized")
        return "kubernetes-admin"

    async def _token_request(self, request: web.Request, ns: str, name: str) -> web.Response:
        """`serviceaccounts/token` (TokenRequest), see tokens.py."""
        _dry_run(request.query.getall("dryRun", []), "CreateOptions")
        body = await self._body(request, "TokenRequest")
        admission.admit_namespace_lifecycle(SERVICEACCOUNTS, name, ns, self.storage.get(NAMESPACES, "", ns))
        sa = self._get(SERVICEACCOUNTS, ns, name)
        req = body if isinstance(body, dict) else {}
        tokens.validate(req)
        bound = tokens.bound_object(req, name, lambda n: self.storage.get(PODS, ns, n),
                                    lambda n: self.storage.get(SECRETS, ns, n))
        return _json_response(self.tokens.issue(ns, sa, req, bound), status=201)

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts in (["version"],):
            return _json_response({"major": "1", "minor": str(self.minor), "gitVersion": f"v1.{self.minor}.0-embedded",
                                      "platform": "linux/amd64"})
        if parts[:2] == ["openapi", "v3"]:
            doc = openapi.root() if len(parts) == 2 else openapi.group_version("/".join(parts[2:]))
            if doc is None:
                raise StatusError(404, "the server could not find the requested resource")
            return _json_response(doc)
        if parts and parts[0] in ("healthz", "readyz", "livez"):
            return web.Response(text="ok")
        if parts == ["api"]:
            return _json_response({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]})
        if parts == ["apis"]:
            return _json_response({"kind": "APIGroupList", "apiVersion": "v1",
                                      "groups": [self._group(g) for g in self._groups()]})
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 2:
            if len(parts) == 2:
                if parts[1] not in self._groups():
                    raise StatusError(404, "the server could not find the requested resource")
                return _json_response({"kind": "APIGroup", "apiVersion": "v1", **self._group(parts[1])})
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise StatusError(404, "the server could not find the requested resource")
        if not rest:
            return _json_response(self._resource_list(group, version))
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (
                group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        res = self._by_path.get((group, version, rest[0]))
        if res is None or len(rest) > 3 or (len(rest) == 3 and rest[2] not in res.subresources):
            raise StatusError(404, "the server could not find the requested resource")
        if namespace is not None and not res.namespaced:
            raise StatusError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        ns = namespace or ""
        m = request.method
        # Faults and the audit name resources as RBAC does: a subresource is `pods/status`, `pods/binding`.
        verb, rbac_resource, agent = self._verb(request, name), f"{res.plural}/{sub}" if sub else res.plural, \
            request.headers.get("User-Agent", "")
        self.audit.append(AuditEntry(agent, verb, group, rbac_resource, namespace or ""))
        fault = self.faults.match(verb, rbac_resource, agent)
        if fault is not None:
            await fault.apply()
        if name is None:
            if m == "GET":
                if _truthy(request.query.get("watch")):
                    return await self._watch(request, res, namespace)
                return self._list(request, res, namespace)
            if m == "POST":
                return await self._create(request, res, ns)
            if m == "DELETE":
                return self._delete_collection(request, res, namespace)
        else:
            if m == "GET":
                obj = self._get(res, ns, name)
                if "as=Table" in request.headers.get("Accept", "") and not sub:  # `kubectl get pod x`: its columns
                    return _json_response(to_table(res, [obj], str(obj["metadata"].get("resourceVersion", "")),
                                                   request.query.get("includeObject", "")))
                return _json_response(_metadata(obj) if _wants_metadata(request) else obj)
            if m == "POST" and sub == "binding":
                return await self._bind(request, ns, name)
            if m == "POST" and sub == "token":
                return await self._token_request(request, ns, name)
            if m == "PUT":
                return await self._replace(request, res, ns, name, sub)
            if m == "PATCH":
                return await self._patch(request, res, ns, name, sub)
            if m == "DELETE":
                return await self._delete(request, res, ns, name)
        raise StatusError(405, f"the server does not allow this method on the requested resource ({m})")

    @staticmethod
    def _verb(request: web.Request, name: str | None) -> str:
        m = request.method
        if m == "GET":
            return "get" if name else "watch" if _truthy(request.query.get("watch")) else "list"
        if name is None:
            return {"POST": "create", "DELETE": "deletecollection"}.get(m, m.lower())
        return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(m, m.lower())

    # ------------------------------------------------------------------ discovery

    def _groups(self) -> list[str]:
        return sorted({r.group for r in ALL_RESOURCES if r.group})

    def _group(self, group: str) -> dict[str, Any]:
        versions = sorted({r.version for r in ALL_RESOURCES if r.group == group})
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        for r in ALL_RESOURCES:
            if r.group != group or r.version != version:
                continue
            entry: dict[str, Any] = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                                     "kind": r.kind, "verbs": list(r.verbs)}
            if r.short_names:
                entry["shortNames"] = list(r.short_names)
            if r.categories:
                entry["categories"] = list(r.categories)
            resources.append(entry)
            resources.extend({"name": f"{r.plural}/{s}", "singularName": "", "namespaced": r.namespaced,
                              "kind": {"binding": "Binding", "token": "TokenRequest"}.get(s, r.kind),
                              "verbs": ["create"] if s in ("binding", "token") else ["get", "patch", "update"]}
                             for s in r.subresources)
        if not resources:
            raise StatusError(404, "the server could not find the requested resource")
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}

    # ------------------------------------------------------------------ reads

    def _get(self, res: APIResource, ns: str, name: str) -> Obj:
        obj = self.storage.get(res, ns, name)
        if obj is None:
            raise not_found(res, name)
        return obj

    def _selectors(self, request: web.Request) -> Callable[[Obj], bool]:
        try:
            labels = parse_label_selector(request.query.get("labelSelector", ""))
        except SelectorError as e:
            raise StatusError(400, f"unable to parse requirement: {e.reason}") from None
        fields = parse_field_selector(request.query.get("fieldSelector", ""))
        return lambda o: labels.matches(o.get("metadata", {}).get("labels")) and fields(o)

    def _list(self, request: web.Request, res: APIResource, namespace: str | None) -> web.Response:
        matches = self._selectors(request)
        rv = self.storage.rv
        start: tuple[str, str] | None = None
        if request.query.get("continue"):
            rv, start = self._continue_from(request.query["continue"])
        items = [o for key, o in sorted(self.storage.objects(res).items())
                 if (start is None or key > start) and (namespace is None or key[0] == namespace) and matches(o)]
        meta: Obj = {"resourceVersion": str(rv)}
        limit = request.query.get("limit", "")
        if limit.isdigit() and 0 < int(limit) < len(items):
            # Chunked lists (the reflector asks for 500 at a time): the token carries the first chunk's
            # resourceVersion and the last key served. Later chunks show the objects as they are now, not as
            # of that resourceVersion (no snapshots here); a watch from it delivers every change anyway.
            remaining = len(items) - int(limit)
            items, last = items[:int(limit)], items[int(limit) - 1]["metadata"]
            meta["continue"] = base64.urlsafe_b64encode(json.dumps({
                "v": "meta.k8s.io/v1", "rv": rv, "start": [last.get("namespace", ""), last["name"]]}).encode()).decode()
            meta["remainingItemCount"] = remaining
        if "as=Table" in request.headers.get("Accept", ""):
            return _json_response(to_table(res, items, str(rv), request.query.get("includeObject", "")))
        if _wants_metadata(request):
            return _json_response({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                   "metadata": meta, "items": [_metadata(o) for o in items]})
        return _json_response({"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                               "items": items})

    def _continue_from(self, token: str) -> tuple[int, tuple[str, str]]:
        """The resourceVersion and last key of a continue token (apiserver's storage `continue.go`).

        Raises:
            StatusError: 400 for a token that does not decode; 410 Expired when its resourceVersion has
                been compacted, with the real server's message."""
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            rv, (ns, name) = int(data["rv"]), data["start"]
        except (ValueError, KeyError, TypeError):
            raise StatusError(400, "continue key is not valid: incorrect encoded start resourceVersion "
                                   "(version meta.k8s.io/v1)") from None
        if rv < self.storage.compacted:
            raise StatusError(410, "The provided continue parameter is too old to display a consistent list "
                                   "result. You can start a new list without the continue parameter, or use the "
                                   "continue token in this response to retrieve the remainder of the results. "
                                   "Continuing with the provided token results in an inconsistent list - objects "
                                   "that were created, modified, or deleted between the time the first chunk was "
                                   "returned and now may show up in the list.", "Expired")
        return rv, (str(ns), str(name))

    async def _watch(self, request: web.Request, res: APIResource, namespace: str | None) -> web.StreamResponse:
        """A watch as kube-apiserver's watch cache serves it (staging/src/k8s.io/apiserver/pkg/storage/cacher):
        from no resourceVersion (or "0"), the current objects as ADDED first; from one older than the history, an
        ERROR event with 410 Expired (`getAllEventsSinceLocked`: "too old resource version"); from one still in
        it, the changes after it. A resourceVersion ahead of the server's (a client's position from another
        etcd, say, or one made up) is accepted without waiting or an error (`waitUntilWatchCacheFreshAndForce
        AllEvents` blocks only a watch with sendInitialEvents, which is not served here), and, as
        `cacheWatcher.process` sends "only events newer than resourceVersion", no event or bookmark at or below it
        is sent: the stream stays silent until the server's resourceVersion passes it."""
        matches = self._selectors(request)
        rv_param = request.query.get("resourceVersion", "")
        try:
            since = None if rv_param in ("", "0") else int(rv_param)
        except ValueError:
            raise StatusError(400, f'invalid resourceVersion "{rv_param}"') from None
        timeout = float(request.query.get("timeoutSeconds") or 1800)
        bookmarks = _truthy(request.query.get("allowWatchBookmarks"))
        table = "as=Table" in request.headers.get("Accept", "")
        metadata_only = _wants_metadata(request)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        try:
            watcher, backlog = self.storage.subscribe(res, namespace, matches, since)
        except Expired as e:
            await resp.prepare(request)
            err = StatusError(410, str(e), "Expired").status()
            await resp.write(json.dumps({"type": "ERROR", "object": err}).encode() + b"\n")
            return resp
        initial = ([Change(int(o["metadata"]["resourceVersion"]), "ADDED", res, o, None)
                    for (ns, _), o in sorted(self.storage.objects(res).items())
                    if namespace is None or ns == namespace] if since is None else [])
        try:
            await resp.prepare(request)
            for past in initial + backlog:
                await self._send(resp, res, watcher, past, table, metadata_only)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while (left := deadline - loop.time()) > 0:
                wait = min(left, self.bookmark_interval) if bookmarks else left
                try:
                    change = await asyncio.wait_for(watcher.queue.get(), wait)
                except TimeoutError:
                    if since is not None and self.storage.rv <= since:
                        continue  # no bookmark at or below a watch's resourceVersion either (cacheWatcher.process)
                    # A bookmark says every change up to its version was sent (a client resumes after it), so
                    # it goes out only when nothing waits in the queue: a wait that timed out in the same turn
                    # as a cut of the stream (its end marker queued, the watch unregistered, later changes no
                    # longer queued) must not cover those changes. kube-apiserver's cacher delivers a watcher's
                    # bookmarks in order with its events (cacher/cache_watcher.go), so a bookmark never runs ahead.
                    if bookmarks and watcher.queue.empty():
                        await self._write(resp, {"type": "BOOKMARK", "object": {
                            "kind": res.kind, "apiVersion": res.api_version,
                            "metadata": {"resourceVersion": str(self.storage.rv)}}})
                    continue
                if change is None:
                    break
                if since is not None and change.rv <= since:
                    continue  # a watch from a resourceVersion ahead of the server's: cacheWatcher.process
                await self._send(resp, res, watcher, change, table, metadata_only)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.storage.unsubscribe(watcher)
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()
        return resp

    async def _send(self, resp: web.StreamResponse, res: APIResource, w: Watcher, c: Change, table: bool,
                    metadata_only: bool = False) -> None:
        new_ok = w.selects(c.obj)
        old_ok = c.old is not None and w.selects(c.old)
        if c.type == "ADDED":
            kind = "ADDED" if new_ok else None
        elif c.type == "DELETED":
            kind = "DELETED" if old_ok else None
        else:
            kind = "MODIFIED" if new_ok and old_ok else "ADDED" if new_ok else "DELETED" if old_ok else None
        if kind is None:
            return
        if table or metadata_only:
            obj = to_table(res, [c.obj], str(c.rv), "") if table else _metadata(c.obj)
            await self._write(resp, {"type": kind, "object": obj})
            return
        line = c.wire.get(kind)
        if line is None:
            line = c.wire[kind] = _encode({"type": kind, "object": c.obj}) + b"\n"
        await resp.write(line)

    @staticmethod
    async def _write(resp: web.StreamResponse, event: dict[str, Any]) -> None:
        await resp.write(_encode(event) + b"\n")

    # ------------------------------------------------------------------ writes

    async def _body(self, request: web.Request, kind: str = "") -> Any:
        """The request body, decoded as kube-apiserver reads it for a `kind` object (create, replace; "" for patches
        and DeleteOptions): JSON by `quantity.loads` (the strings written with an escape and the numbers' text kept
        for `resource.Quantity`, as a create, a replace, a merge and a JSON patch reach UnmarshalJSON with the raw
        literal; a strategic merge patch as Go writes it again), YAML as sigs.k8s.io/yaml turns it into JSON (Go's
        `json.Marshal`) for the same decoder. A body Go's JSON
        scanner refuses though Python's reads it (`NaN`, `Infinity`) is a 400 in the handler's words:
        `transformDecodeError` (handlers/rest.go; `SimpleMetaFactory.Interpret` fails before the kind is known) on a
        create or replace, `error decoding patch: ...` for a merge patch (`jsonPatcher.applyJSPatch` strictly decodes
        it first unless `fieldValidation=Ignore`, then `MergePatch`'s "Invalid JSON Patch"), the bare SyntaxError for
        a JSON patch (`jsonpatch.DecodePatch`) and a strategic merge patch (`strategicPatchObject`)."""
        raw = await request.read()
        if not raw:
            return None
        if kind and request.content_type in UNDECODED_MEDIA_TYPES:
            # no protobuf or CBOR decoder here: refused as a server refuses a media type it has no serializer for
            # (apimachinery's negotiation.NewUnsupportedMediaTypeError, 415), which the real kubectl prints (its
            # `create configmap|secret|namespace` send protobuf; `apply -f` sends JSON)
            raise StatusError(415, "the body of the request was in an unknown format - accepted media types include: "
                                   "application/json, application/yaml")
        try:
            if "yaml" in request.content_type:
                return quantity.mark_go_escapes(yaml.safe_load(raw))
            return quantity.loads(raw, literal=request.content_type != "application/strategic-merge-patch+json")
        except quantity.JSONSyntaxError as e:
            ctype = request.content_type
            if request.method == "PATCH" and ctype == "application/merge-patch+json":
                ignore = request.query.get("fieldValidation") == "Ignore"
                raise StatusError(400, "Invalid JSON Patch" if ignore else f"error decoding patch: {e}") from None
            if request.method == "PATCH":
                raise StatusError(400, str(e)) from None
            problem = f"couldn't get version/kind; json parse error: {e}"
            if not kind:
                raise StatusError(400, problem) from None
            summary = raw[:30].decode("utf-8", "replace") + (" ..." if len(raw) > 30 else "")
            if not raw.startswith(b"{"):  # summarizeData: hex unless a JSON object
                summary = raw[:30].hex() + (" ..." if len(raw) > 30 else "")
            raise StatusError(400, f"the object provided is unrecognized (must be of type {kind}): {problem} "
                                   f"({summary})") from None
        except (ValueError, yaml.YAMLError) as e:
            raise StatusError(400, f"the request body could not be decoded: {e}") from None

    @staticmethod
    def _secret_string_data(res: APIResource, obj: Obj) -> None:
        """A Secret's write-only `stringData` is merged into `data` (base64), as the API server's
        conversion does; it is never stored or returned."""
        if res == SECRETS and isinstance(obj.get("stringData"), dict):
            data = dict(obj.get("data") or {})
            data.update({k: base64.b64encode(str(v).encode()).decode() for k, v in obj.pop("stringData").items()})
            obj["data"] = data

    @staticmethod
    def _decodable(res: APIResource, obj: Obj) -> Obj:
        """Refuse a body that a typed decode refuses (labels/annotations not string maps) as the
        create and update handlers do: 400 `<Kind> in version "v1" cannot be handled as a <Kind>: ...`."""
        problem = validation.decode_errors(res.kind, obj)
        if problem:
            raise StatusError(400, f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                                   f"{problem}")
        EmbeddedAPIServer._secret_string_data(res, obj)
        validation.decode(res.kind, obj)
        return obj

    def _check_type(self, res: APIResource, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise StatusError(400, f"the request body must be a {res.kind} object")
        if body.get("kind", res.kind) != res.kind or body.get("apiVersion", res.api_version) != res.api_version:
            raise StatusError(400, f"the API version in the data ({body.get('apiVersion')}) and kind "
                                   f"({body.get('kind')}) do not match {res.api_version}, {res.kind}")
        body["kind"], body["apiVersion"] = res.kind, res.api_version
        if not isinstance(body.setdefault("metadata", {}), dict):
            raise StatusError(400, "metadata must be an object")
        return body

    async def _create(self, request: web.Request, res: APIResource, ns: str) -> web.Response:
        if res == SELFSUBJECTREVIEWS:  # who am I: the authenticated user, nothing stored
            user = request[_USER]
            return _json_response({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                                      "metadata": {"creationTimestamp": now_rfc3339()},
                                      "status": {"userInfo": {"username": user, "groups": (
                                          ["system:serviceaccounts", "system:authenticated"]
                                          if user.startswith("system:serviceaccount:")
                                          else ["system:masters", "system:authenticated"])}}}, status=201)
        dry = _dry_run(request.query.getall("dryRun", []), "CreateOptions")
        obj = self._decodable(res, self._check_type(res, await self._body(request, res.kind)))
        return _json_response(self._create_obj(res, ns, obj, dry_run=dry), status=201)

    def _create_obj(self, res: APIResource, ns: str, obj: Obj, dry_run: bool = False) -> Obj:
        meta = obj["metadata"]
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise StatusError(400, "the namespace of the provided object does not match the namespace "
                                       "sent on the request")
            meta["namespace"] = ns
            admission.admit_namespace_lifecycle(res, meta.get("name") or meta.get("generateName") or "", ns,
                                                self.storage.get(NAMESPACES, "", ns))
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise StatusError(422, f"{res.kind} is invalid: metadata.name: Required value: name or "
                                       "generateName is required", "Invalid")
            meta["name"] = meta["generateName"] + "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
        # kube-apiserver's order (endpoints/handlers/create.go, then registry Store.Create): decoding defaults, the
        # mutating admission plugins (then webhooks), the strategy's PrepareForCreate, validation, the validating
        # admission (PodSecurity), and only then the storage's AlreadyExists
        if res == PODS and isinstance(obj.get("spec"), dict):
            admission.default_pod_spec(obj)
        if res == PODS:
            admission.admit_service_account(obj, lambda n: self.storage.get(SERVICEACCOUNTS, ns, n))
            admission.admit_priority(obj, lambda n: self.storage.get(PRIORITYCLASSES, "", n),
                                     lambda: list(self.storage.objects(PRIORITYCLASSES).values()))
            admission.admit_default_toleration_seconds(obj)
            if self.runtime_class_admission:
                admission.admit_runtime_class(obj, lambda n: self.storage.get(RUNTIMECLASSES, "", n))
            for webhook in self.pod_create_webhooks:
                webhook(obj)
            features.drop_disabled_pod_fields(obj, None, self.minor)
            features.merge_label_keys(obj, self.minor)  # the pod strategy's PrepareForCreate, before validation
        self._validate(res, obj, None)
        if res == PODS:
            admission.default_pod(obj)
            namespace = self.storage.get(NAMESPACES, "", ns)
            # the validating plugins in kube-apiserver's order (AllOrderedPlugins): PodSecurity, then RuntimeClass
            admission.admit_pod_security(obj, ((namespace or {}).get("metadata") or {}).get("labels"), self.minor)
            if self.runtime_class_admission:
                admission.validate_runtime_class_overhead(obj, lambda n: self.storage.get(RUNTIMECLASSES, "", n))
            # the overhead setOverhead copied from the class is stored as it is, and read back from storage through
            # the defaulting decoder (SetDefaults_ResourceList: rounded up to milli), as every later read and the
            # create's own response see it; an update then compares equal to its decoded, rounded body
            validation.round_pod_overhead(obj)
        existing = self.storage.get(res, ns, meta["name"])
        if existing is not None:
            err = already_exists(res, meta["name"])
            if (existing.get("metadata") or {}).get("deletionTimestamp"):  # Store.Create: the object is terminating
                err = StatusError(409, f"object is being deleted: {err.message}", "AlreadyExists", err.details)
            raise err
        if res == PRIORITYCLASSES:
            admission.admit_priority_class(obj, lambda: list(self.storage.objects(PRIORITYCLASSES).values()))
        if res == NAMESPACES:
            admission.admit_namespace_pod_security(obj, None)
            obj["status"] = {"phase": "Active"}
            spec = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
            finalizers: list[Any] = spec["finalizers"] if isinstance(spec.get("finalizers"), list) else []
            # the namespace strategy's PrepareForCreate: the `kubernetes` finalizer the namespace controller removes
            obj["spec"] = {**spec, "finalizers": finalizers if "kubernetes" in finalizers else [*finalizers,
                                                                                             "kubernetes"]}
            _label_namespace_name(obj)  # after generateName, as the strategy's Canonicalize
        if res == SERVICES and not dry_run:
            self._allocate_cluster_ip(obj)
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(k, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
        if dry_run:
            return obj
        stored = self.storage.write(res, obj, None)
        if res == NAMESPACES:
            self._namespace_created(meta["name"])
        return stored

    async def _replace(self, request: web.Request, res: APIResource, ns: str, name: str,
                       sub: str | None) -> web.Response:
        dry = _dry_run(request.query.getall("dryRun", []), "UpdateOptions")
        body = self._decodable(res, self._check_type(res, await self._body(request, res.kind)))
        old = self._get(res, ns, name)
        if res in _CONDITIONAL_UPDATE_ONLY and not body["metadata"].get("resourceVersion"):
            # apiserver pkg/registry/generic/registry/store.go Update: the uint64 0 as %#v, the plural as the kind
            raise invalid(res, name, [fielderrors.invalid("metadata.resourceVersion", fielderrors.GoSyntax("0x0"),
                                                          "must be specified for an update")], by_resource=True)
        with self.storage.dry_run(dry):
            return _json_response(self._update_obj(res, old, body, sub))

    def _update_obj(self, res: APIResource, old: Obj, body: Obj, sub: str | None, *, patched: bool = False) -> Obj:
        """Store `body` as the new state of `old` (PUT, or the result of a PATCH when `patched`). A uid in `body`
        other than the object's refuses the write, as the generic registry does: for a PUT it is a precondition
        (`rest.DefaultUpdatedObjectInfo.Preconditions`, checked by the storage: 409 Conflict), for a PATCH the
        patched uid fails `BeforeUpdate`'s common-field validation (metadata.uid is immutable: 422 Invalid)."""
        name = old["metadata"]["name"]
        meta = body["metadata"]
        if meta.get("name", name) != name:
            raise StatusError(400, f"the name of the object ({meta.get('name')}) does not match the name on "
                                   f"the URL ({name})")
        uid = meta.get("uid")
        if uid and uid != old["metadata"]["uid"]:
            if patched:
                raise invalid(res, name, [fielderrors.invalid("metadata.uid", uid, "field is immutable")])
            raise conflict(res, name, _storage_uid_error(res, old, uid))
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res, name, "the object has been modified; please apply your changes to the latest "
                                      "version and try again")
        if sub == "status" and res == PODS:
            new = self._prepare_pod_status(body, old)
            features.drop_disabled_pod_status_fields(new, old, self.minor)
            errs = validation.validate_pod_status_update(new, old)
            if errs:
                raise invalid(res, name, errs)
        elif sub == "status":
            new = copy.deepcopy(old)
            new["status"] = body.get("status")
        elif sub in ("ephemeralcontainers", "resize"):  # pods only: one part of the spec may change
            new = copy.deepcopy(old)
            spec: Obj = body["spec"] if isinstance(body.get("spec"), dict) else {}
            if sub == "ephemeralcontainers":
                new["spec"]["ephemeralContainers"] = spec.get("ephemeralContainers")
                admission.default_pod_spec(new)
                errs = validation.validate_ephemeral_containers_update(new, old)
            else:
                new["spec"]["containers"] = spec.get("containers")
                errs = validation.validate_resize(new, old)
            if errs:
                raise invalid(res, name, errs)
        else:
            new = body
            if "status" in res.subresources:
                if old.get("status") is None:
                    new.pop("status", None)
                else:
                    new["status"] = old["status"]
            for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "namespace", "generation"):
                if k in old["metadata"]:
                    new["metadata"][k] = old["metadata"][k]
                else:
                    new["metadata"].pop(k, None)
            new["metadata"]["name"] = name
            if res == PODS and isinstance(new.get("spec"), dict):
                admission.default_pod_spec(new)
                for webhook in self.pod_update_webhooks:
                    webhook(new, old)
            self._validate(res, new, old)
        if res == NAMESPACES and sub is None:
            # the namespace strategy's PrepareForUpdate: status and spec.finalizers are not the user's to change
            new["status"] = old.get("status")
            new["spec"] = {**(new["spec"] if isinstance(new.get("spec"), dict) else {}),
                           "finalizers": (old.get("spec") or {}).get("finalizers")}
            if new["spec"]["finalizers"] is None:
                del new["spec"]["finalizers"]
            admission.admit_namespace_pod_security(new, old)
        if res == NAMESPACES:
            _label_namespace_name(new)  # every update, status and finalize too (the v1 defaulting on decode)
        if res == PODS and sub != "status":  # PodSecurity ignores the status subresource only
            namespace = self.storage.get(NAMESPACES, "", old["metadata"]["namespace"]) or {}
            admission.admit_pod_security_update(new, old, (namespace.get("metadata") or {}).get("labels"), self.minor)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return old  # a no-op update does not take a new resourceVersion
        if sub is None and {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
                k: v for k, v in old.items() if k not in ("metadata", "status")}:
            new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and not (
                res == PODS and new["metadata"].get("deletionGracePeriodSeconds")) and not (
                res == NAMESPACES and (new.get("spec") or {}).get("finalizers")):
            # the last finalizer removed; a gracefully terminating pod stays until its kubelet deletes it (grace 0), a
            # namespace until its controller has removed its content and its spec.finalizers
            # (ShouldDeleteNamespaceDuringUpdate)
            return self.storage.remove(res, old)
        return self.storage.write(res, new, old)

    @staticmethod
    def _prepare_pod_status(body: Obj, old: Obj) -> Obj:
        """A write of `pods/status` as `podStatusStrategy.PrepareForUpdate` (pkg/registry/core/pod/strategy.go)
        and the generic registry's `rest.BeforeUpdate` prepare it: the body's metadata and status, with the old
        spec, ownerReferences ("old kubelets corrupt them") and deletionTimestamp; a status without a qosClass gets
        the old one back. Labels, annotations and finalizers sent to `pods/status` are stored (the status strategy
        resets none of them, unlike `ResetObjectMetaForStatus`). The fields no update changes (uid,
        creationTimestamp, deletionGracePeriodSeconds, namespace, generation) stay as they were."""
        new = copy.deepcopy(body)
        new["spec"] = copy.deepcopy(old.get("spec"))
        if new["spec"] is None:
            del new["spec"]
        meta, old_meta = new["metadata"], old["metadata"]
        for k in ("ownerReferences", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "namespace", "generation"):
            if k in old_meta:
                meta[k] = copy.deepcopy(old_meta[k])
            else:
                meta.pop(k, None)
        meta["name"] = old_meta["name"]
        status = new.get("status")
        if isinstance(status, dict) and not status.get("qosClass") and (old.get("status") or {}).get("qosClass"):
            status["qosClass"] = old["status"]["qosClass"]
        return new

    def _validate(self, res: APIResource, obj: Obj, old: Obj | None) -> None:
        """Validate a new object (`old` None) or an update, as the resource's registry strategy does: pods on a
        server of 1.`minor` (`ValidatePodCreate`, `ValidatePodUpdate`), secrets (`ValidateSecret`,
        `ValidateSecretUpdate`), core/v1 events (`ValidateEventCreate`/`ValidateEventUpdate` for a v1 request, then
        the generic metadata check), the rest as admission.py dispatches it. Raises StatusError 422 listing every
        error."""
        if res == PODS and old is not None:
            errs = validation.validate_pod_update(obj, old, self.minor)
        elif res == SECRETS:
            errs = validation.validate_secret(obj) if old is None else validation.validate_secret_update(obj, old)
        elif res == EVENTS:
            errs = validation.validate_event(obj)
        elif old is None:
            admission.validate_create(res, obj, self.minor)
            return
        else:
            admission.validate_update(res, obj, old)
            return
        if errs:
            raise invalid(res, (old or obj)["metadata"].get("name", ""), errs)

    async def _patch(self, request: web.Request, res: APIResource, ns: str, name: str,
                     sub: str | None) -> web.Response:
        ctype = request.content_type
        dry = _dry_run(request.query.getall("dryRun", []), "PatchOptions")
        body = await self._body(request)
        old = self.storage.get(res, ns, name)
        if old is None:
            if ctype == "application/apply-patch+yaml":
                obj = self._decodable(res, self._check_type(res, body))
                obj["metadata"]["name"] = name
                return _json_response(self._create_obj(res, ns, obj, dry_run=dry), status=201)
            raise not_found(res, name)
        if ctype == "application/json-patch+json":
            try:
                if self.minor < 35 and _go_unequal_test(body, await request.read()):
                    raise jsonpatch.JsonPatchTestFailed("a test of a string written otherwise than Go writes it")
                patched = jsonpatch.apply_patch(old, body)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError):
                # kubernetes' patch.go applyJSPatch: any failure to apply (a failed `test`, a missing path) is
                # errors.NewGenericServerResponse(422, ...), whose message is the generic one of its code
                raise StatusError(422, "the server rejected our request due to an error in our request",
                                  "Invalid") from None
        elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                       "application/apply-patch+yaml"):
            if not isinstance(body, dict):
                raise StatusError(400, "a merge patch must be a JSON object")
            patched = merge_patch(copy.deepcopy(old), body)  # never share nested dicts with the stored object
        else:
            raise StatusError(415, f"the body of the request was in an unknown format - accepted media types "
                                   f"include: application/json-patch+json, application/merge-patch+json, "
                                   f"application/apply-patch+yaml (got {ctype})")
        patched = self._check_type(res, patched)
        problem = validation.decode_errors(res.kind, patched)
        if problem:  # the patch handlers' decode failure: 422 with the cause on the field "patch"
            raise invalid(None, "", [fielderrors.invalid("patch", json.dumps(body), problem)])
        self._secret_string_data(res, patched)  # the patched object is decoded as a body is: stringData into data
        validation.decode(res.kind, patched)
        if patched["metadata"].get("resourceVersion") == old["metadata"]["resourceVersion"]:
            patched["metadata"].pop("resourceVersion")  # only a rv the patch itself names is a precondition
        with self.storage.dry_run(dry):
            return _json_response(self._update_obj(res, old, patched, sub, patched=True))

    async def _bind(self, request: web.Request, ns: str, name: str) -> web.Response:
        """`pods/binding` as the pod registry's `BindingREST.Create`: the Binding must name the pod of the
        URL (400) and a target node (`ValidatePodBinding`); `spec.nodeName` is set once, with the
        PodScheduled condition; a pod being deleted, bound already or with scheduling gates is a 409 Conflict on
        `pods/binding`, and so is a Binding whose `metadata.uid` is not the pod's (a precondition)."""
        dry = _dry_run(request.query.getall("dryRun", []), "CreateOptions")
        body = await self._body(request, "Binding")
        if not isinstance(body, dict):
            raise StatusError(400, f"not a Binding object: {body!r}")
        admission.admit_namespace_lifecycle(PODS, name, ns, self.storage.get(NAMESPACES, "", ns))
        if (body.get("metadata") or {}).get("name") != name:
            raise StatusError(400, "name in URL does not match name in Binding object")
        target = body.get("target") or {}
        errs = []
        if target.get("kind") not in (None, "", "Node"):
            errs.append(fielderrors.not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
        if not target.get("name"):
            errs.append(fielderrors.required("target.name"))
        if errs:
            raise StatusError(500, "Internal error occurred: " + ", ".join(str(e) for e in errs), "InternalError")
        old = self._get(PODS, ns, name)
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != old["metadata"]["uid"]:  # BindingREST.setPodNodeAndMetadata: the Binding's uid is a
            raise conflict(PODS, name, _storage_uid_error(PODS, old, uid))  # precondition on the pod (storeerr: pods)
        why = None
        if old["metadata"].get("deletionTimestamp"):
            why = f"pod {name} is being deleted, cannot be assigned to a host"
        elif (old.get("spec") or {}).get("nodeName"):
            why = f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"'
        elif (old.get("spec") or {}).get("schedulingGates"):  # a scheduling un-ready pod is not bound
            why = f"pod {name} has non-empty .spec.schedulingGates"
        if why:
            raise StatusError(409, f'Operation cannot be fulfilled on pods/binding "{name}": {why}', "Conflict",
                              {"name": name, "kind": "pods/binding"})
        new = copy.deepcopy(old)
        new["spec"]["nodeName"] = target["name"]
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*conditions, {"type": "PodScheduled", "status": "True",
                                              "lastTransitionTime": now_rfc3339()}]
        with self.storage.dry_run(dry):
            self.storage.write(PODS, new, old)
        return _json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                  "code": 201}, status=201)

    async def _delete(self, request: web.Request, res: APIResource, ns: str, name: str) -> web.Response:
        body = await self._body(request)
        # handlers/delete.go: the DeleteOptions are the body's when there is one, else the query's
        if body:
            opts: Obj = body if isinstance(body, dict) else {}
        else:
            opts = {"dryRun": request.query.getall("dryRun", [])}
            if request.query.get("gracePeriodSeconds", "").lstrip("-").isdigit():
                opts["gracePeriodSeconds"] = int(request.query["gracePeriodSeconds"])
        dry = _dry_run(opts.get("dryRun"), "DeleteOptions")
        old = self._get(res, ns, name)
        with self.storage.dry_run(dry):
            return self._delete_request(res, old, opts)

    def _delete_request(self, res: APIResource, old: Obj, opts: Obj) -> web.Response:
        pre = opts.get("preconditions") or {}
        self._check_delete_preconditions(res, old, pre)
        grace = opts.get("gracePeriodSeconds")
        return _json_response(self._delete_obj(res, old, grace if isinstance(grace, int) else None))

    @staticmethod
    def _check_delete_preconditions(res: APIResource, old: Obj, pre: Obj) -> None:
        """A delete's `preconditions` as the registry checks them before anything else: the namespace registry's
        own `Delete` (pkg/registry/core/namespace/storage/storage.go: `Precondition failed: ...`, on `namespaces`),
        every other resource's `Store.Delete` through `rest.BeforeDelete` (staging/src/k8s.io/apiserver/pkg/
        registry/rest/delete.go: `the UID in the precondition (...) does not match ...`, on the kind). The storage's
        own check (`Precondition failed: UID in precondition`) comes later and is reached only in a race."""
        name, meta = old["metadata"]["name"], old["metadata"]
        if res == NAMESPACES:
            if pre.get("uid") and pre["uid"] != meta["uid"]:
                raise conflict(res, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                                          f"meta: {meta['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise conflict(res, name, f"Precondition failed: ResourceVersion in precondition: "
                                          f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                          f"{meta['resourceVersion']}")
            return
        if pre.get("uid") is not None and pre["uid"] != meta["uid"]:
            raise kind_conflict(res, name, f"the UID in the precondition ({pre['uid']}) does not match the UID in "
                                           f"record ({meta['uid']}). The object might have been deleted and then "
                                           "recreated")
        if pre.get("resourceVersion") is not None and pre["resourceVersion"] != meta["resourceVersion"]:
            raise kind_conflict(res, name, f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does "
                                           f"not match the ResourceVersion in record ({meta['resourceVersion']}). The "
                                           "object might have been modified")

    def _delete_pod(self, old: Obj, grace: int | None) -> Obj:
        """A pod's deletion as the pod registry's `Store.Delete` does it with `rest.BeforeDelete` (staging/src/
        k8s.io/apiserver/pkg/registry/rest/delete.go) and the pod strategy's `CheckGracefulDelete`: the first delete
        sets deletionTimestamp = now + the grace period (the one asked for, else the pod's
        terminationGracePeriodSeconds; 0 for a pod not scheduled or finished) and bumps the generation; a later one
        may only shorten the period (deletionTimestamp moves back by the difference). The pod stays while the
        period is above 0 or finalizers remain, and goes once both are spent (its last finalizer's removal deletes
        a pod whose period is 0). As `Store.updateForGracefulDeletionAndFinalizers` (staging/src/k8s.io/apiserver/
        pkg/registry/generic/registry/store.go), a graceful delete is written first, even one with a period of 0
        (an unscheduled pod's, the kubelet's last): watches see MODIFIED with the deletionTimestamp, then DELETED."""
        meta = old["metadata"]
        if grace is not None and grace < 0:
            grace = 1  # negative values are treated as 1 s on the delete path
        if meta.get("deletionTimestamp"):
            current = int(meta.get("deletionGracePeriodSeconds") or 0)
            if current <= 0:  # graceful deletion is over: not graceful (markAsDeleting, or deleted now)
                return self._delete_now(PODS, old)
            if grace is None or grace >= current:
                return old  # graceful deletion pending: only a shorter period may be asked for
            new = copy.deepcopy(old)
            when = dt.datetime.strptime(meta["deletionTimestamp"], "%Y-%m-%dT%H:%M:%S%z")
            new["metadata"]["deletionTimestamp"] = rfc3339(when + dt.timedelta(seconds=grace - current))
        else:
            spec, status = old.get("spec") or {}, old.get("status") or {}
            period = grace if grace is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
            if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
                period = 0  # not scheduled, or finished: nothing left to stop
            grace = 1 if period < 0 else period
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = now_rfc3339(grace)
            if int(meta.get("generation") or 0) > 0:
                new["metadata"]["generation"] = int(meta["generation"]) + 1
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        # Store.updateForGracefulDeletionAndFinalizers writes the graceful deletion first (a MODIFIED event), whatever
        # the period; only with the period at 0 and no finalizers does Store.Delete then delete it (DELETED)
        written = self.storage.write(PODS, new, old)
        if grace > 0 or new["metadata"].get("finalizers"):
            return written
        return self._delete_now(PODS, written)

    def _delete_obj(self, res: APIResource, old: Obj, grace: int | None = None) -> Obj:
        """Delete `old` as its registry does: a pod gracefully (`_delete_pod`), a namespace by its lifecycle,
        anything else at once unless finalizers hold it."""
        if res == PODS:
            return self._delete_pod(old, grace)
        if res == NAMESPACES:
            return self._delete_namespace(old)
        return self._delete_now(res, old)

    def _delete_namespace(self, old: Obj) -> Obj:
        """The namespace registry's `Delete` (pkg/registry/core/namespace/storage/storage.go): the first delete sets
        the deletionTimestamp and phase Terminating (the namespace controller then deletes its content and removes
        it, `_namespace_controller`); a later one deletes it only once its spec.finalizers are empty."""
        name = old["metadata"]["name"]
        admission.admit_namespace_delete(name)
        if not old["metadata"].get("deletionTimestamp"):
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = now_rfc3339()
            new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
            written = self.storage.write(NAMESPACES, new, old)
            if not self.storage.dry:
                self._namespace_controller(remove=False)  # the content goes at once; the namespace on the next pass
            return written
        if (old.get("spec") or {}).get("finalizers"):
            return old
        return self._delete_now(NAMESPACES, old)

    def _namespace_controller(self, remove: bool = True) -> None:
        """One pass of kube-controller-manager's namespace controller (pkg/controller/namespace/deletion) over the
        terminating namespaces: every object in one is deleted as a client deletes it (pods gracefully, with their
        own grace period, objects with finalizers kept until those are removed); a namespace found empty (on a pass
        with `remove`) is finalized (its `kubernetes` spec.finalizer removed) and deleted. The server runs a pass
        right after a namespace's deletion (content only) and every `namespace_sync_interval` seconds while one is
        terminating."""
        for ns in [o for o in self.storage.objects(NAMESPACES).values() if o["metadata"].get("deletionTimestamp")]:
            name = ns["metadata"]["name"]
            left = False
            for r in ALL_RESOURCES:
                if not r.namespaced:
                    continue
                for (ons, _), o in list(self.storage.objects(r).items()):
                    if ons == name and self.storage.get(r, ons, o["metadata"]["name"]) is o:
                        self._delete_obj(r, o)
                        left = left or self.storage.get(r, ons, o["metadata"]["name"]) is not None
            if left or not remove:
                continue
            current = self.storage.get(NAMESPACES, "", name)
            if current is None:
                continue
            finalizers = [f for f in (current.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"]
            if current["metadata"].get("finalizers"):  # finalized now, deleted with its last metadata.finalizer
                if finalizers != (current.get("spec") or {}).get("finalizers"):
                    new = copy.deepcopy(current)
                    new.setdefault("spec", {})["finalizers"] = finalizers
                    self.storage.write(NAMESPACES, new, current)
            elif not finalizers:
                self._delete_now(NAMESPACES, current)

    async def _namespace_sync_loop(self) -> None:
        """Run `_namespace_controller` every `namespace_sync_interval` seconds while a namespace is terminating."""
        while True:
            await asyncio.sleep(self.namespace_sync_interval)
            if any(o["metadata"].get("deletionTimestamp") for o in self.storage.objects(NAMESPACES).values()):
                try:
                    self._namespace_controller()
                except Exception:  # a bug here must not end the loop
                    log.exception("embedded API server %s: namespace controller failed", self.name)

    def _delete_now(self, res: APIResource, old: Obj) -> Obj:
        """A deletion without a grace period: with finalizers, `markAsDeleting` (deletionTimestamp now unless set
        earlier, deletionGracePeriodSeconds 0, the generation bumped the first time); without, the object goes."""
        meta = old["metadata"]
        if meta.get("finalizers") and res != NAMESPACES:
            new = copy.deepcopy(old)
            now = now_rfc3339()
            if not meta.get("deletionTimestamp"):
                if int(meta.get("generation") or 0) > 0:
                    new["metadata"]["generation"] = int(meta["generation"]) + 1
                new["metadata"]["deletionTimestamp"] = now
            elif meta["deletionTimestamp"] > now:
                new["metadata"]["deletionTimestamp"] = now
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return old if new == old else self.storage.write(res, new, old)
        gone = self.storage.remove(res, old)
        self._collect_garbage(old)
        return gone

    def _collect_garbage(self, owner: Obj) -> None:
        """The garbage collector's background deletion: objects in the owner's namespace whose
        ownerReferences name its uid go with it (dependents of dependents too)."""
        uid, ns = owner["metadata"].get("uid"), owner["metadata"].get("namespace", "")
        for r in ALL_RESOURCES:
            if not r.namespaced:
                continue
            for (ons, _), o in list(self.storage.objects(r).items()):
                refs = o["metadata"].get("ownerReferences") or []
                if ons == ns and any(isinstance(x, dict) and x.get("uid") == uid for x in refs):
                    self._delete_obj(r, o)

    def _delete_collection(self, request: web.Request, res: APIResource, namespace: str | None) -> web.Response:
        matches = self._selectors(request)
        dry = _dry_run(request.query.getall("dryRun", []), "DeleteOptions")
        with self.storage.dry_run(dry):
            gone = [self._delete_obj(res, o) for (ns, _), o in sorted(self.storage.objects(res).items())
                    if (namespace is None or ns == namespace) and matches(o)]
        return _json_response({"kind": f"{res.kind}List", "apiVersion": res.api_version,
                                  "metadata": {"resourceVersion": str(self.storage.rv)}, "items": gone})
