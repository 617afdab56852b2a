"""The part of a vcluster.yaml this sidecar reads, as pydantic v2 models, and its loader.

Source: vcluster's config reference for `sync.fromHost.runtimeClasses` (../shared/reference) and
behaviour.md section 1. Every other key of a vcluster.yaml is accepted and ignored, so a real
vcluster.yaml loads. Unknown keys are errors only inside `sync.fromHost.runtimeClasses` (and inside
its selector, the selector's expressions, and each patch), where a typo would silently change what is
synced.

Errors are reported as `invalid <dotted path>: <reason>`, e.g.
`invalid sync.fromHost.runtimeClasses.selector: "Foo" is not a valid label selector operator (at
sync.fromHost.runtimeClasses.selector.matchExpressions[0].operator)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from syncer.config.selector import Selector, from_label_selector, label_selector_errors
from syncer.config.tolerations import TolerationError, parse_toleration
from syncer.patches.path import PathError
from syncer.patches.path import parse as parse_path

RC_PATH = "sync.fromHost.runtimeClasses"
PC_PATH = "sync.fromHost.priorityClasses"
_M = TypeVar("_M", bound=BaseModel)
# Names are the same on both sides (behaviour.md section 2): these are never patched.
UNPATCHABLE_PATHS = ("metadata.name", "metadata.namespace", "apiVersion", "kind")


class _Loose(BaseModel):
    """A vcluster.yaml section whose other keys belong to vcluster and are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Strict(BaseModel):
    """A section owned by this sidecar: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _none_to_empty(value: Any, empty: Any) -> Any:
    return empty if value is None else value


class Enabled(_Loose):
    """A vcluster section of which only `enabled` is read."""

    enabled: bool = Field(default=False, description="enabled")


class LabelSelectorRequirement(_Strict):
    """One `matchExpressions` entry: key, operator (In, NotIn, Exists, DoesNotExist), values."""

    key: str = Field(description="the label key")
    operator: str = Field(description="In, NotIn, Exists or DoesNotExist")
    values: list[str] = Field(default_factory=list, description="for In/NotIn: at least one; else none")

    @field_validator("values", mode="before")
    @classmethod
    def _values(cls, v: Any) -> Any:
        return _none_to_empty(v, [])


class LabelSelector(_Strict):
    """A metav1.LabelSelector: matchLabels and matchExpressions, ANDed."""

    matchLabels: dict[str, str] = Field(default_factory=dict, description="labels a host RuntimeClass must have")
    matchExpressions: list[LabelSelectorRequirement] = Field(
        default_factory=list, description="requirements, ANDed with each other and with matchLabels")

    @field_validator("matchLabels", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        return _none_to_empty(v, {})

    @field_validator("matchExpressions", mode="before")
    @classmethod
    def _expressions(cls, v: Any) -> Any:
        return _none_to_empty(v, [])

    def compile(self) -> Selector:
        """Validate with the Kubernetes rules and return a matcher.

        Raises:
            SelectorError: with the Kubernetes message and the path inside the selector.
        """
        return from_label_selector(self.model_dump())


class PatchReference(_Strict):
    """`reference` of a patch: treat the value at `path` as a reference to another object."""

    apiVersion: str = ""
    apiVersionPath: str = ""
    kind: str = ""
    kindPath: str = ""
    namePath: str = ""
    namespacePath: str = ""


class PatchLabels(_Strict):
    """`labels` of a patch: treat the value at `path` as a label selector."""


class Patch(_Strict):
    """One entry of `patches` (behaviour.md section 5): a path and exactly one transform."""

    path: str = Field(description="where to patch: dots, [N], [*] or *, [\"quoted.key\"] (unique)")
    expression: str | None = Field(default=None, description="JavaScript giving the new value (null deletes)")
    reverseExpression: str | None = Field(default=None, description="virtual -> host; unused for RuntimeClasses")
    reference: PatchReference | None = Field(default=None, description="vcluster's reference patch (identity here)")
    labels: PatchLabels | None = Field(default=None, description="vcluster's labels patch (identity here)")


class RuntimeClassesSync(_Strict):
    """`sync.fromHost.runtimeClasses`: whether RCs are synced, which (selector), and patches."""

    enabled: bool = Field(default=False, description="sync host RuntimeClasses and gate pods by them")
    selector: LabelSelector | None = Field(default=None, description="which host RuntimeClasses; absent: all")
    patches: list[Patch] = Field(default_factory=list, description="JavaScript patches on the virtual copies")

    @field_validator("patches", mode="before")
    @classmethod
    def _patches(cls, v: Any) -> Any:
        return _none_to_empty(v, [])


class NodeSelectorLabels(_Loose):
    """`sync.fromHost.nodes.selector`: only `labels` is read."""

    labels: dict[str, str] = Field(default_factory=dict, description="host pods are kept to nodes with these labels")

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class NodesSync(_Loose):
    """`sync.fromHost.nodes`: only `selector.labels` is read."""

    selector: NodeSelectorLabels = Field(default_factory=NodeSelectorLabels)

    @field_validator("selector", mode="before")
    @classmethod
    def _selector(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class PriorityClassesSync(_Loose):
    """`sync.fromHost.priorityClasses`: vcluster syncs host PriorityClasses (pods keep their class names); with a
    selector, a pod naming a class that does not pass it is not synced (vcluster's `applyLimitByPriorityClass`)."""

    enabled: bool = Field(default=False, description="vcluster syncs host PriorityClasses")
    selector: LabelSelector | None = Field(default=None, description="which host PriorityClasses pods may name")


class FromHost(_Loose):
    """`sync.fromHost`: `runtimeClasses`, `priorityClasses` (pods keep their class names; its selector gates them)
    and `nodes.selector.labels` (host pods are kept to those nodes)."""

    runtimeClasses: RuntimeClassesSync = Field(default_factory=RuntimeClassesSync)
    priorityClasses: PriorityClassesSync = Field(default_factory=PriorityClassesSync)
    nodes: NodesSync = Field(default_factory=NodesSync)

    @field_validator("priorityClasses", "nodes", mode="before")
    @classmethod
    def _pcs(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class ImageRef(_Loose):
    """An image of vcluster's chart: registry, repository, tag."""

    registry: str = Field(default="mirror.gcr.io", description="registry; empty: Docker Hub")
    repository: str = Field(default="library/alpine", description="repository")
    tag: str = Field(default="3.20", description="tag")

    @field_validator("registry", "repository", "tag", mode="before")
    @classmethod
    def _strings(cls, v: Any) -> Any:
        return _none_to_empty(v, "")


class ContainerResources(_Loose):
    """`limits` and `requests` of a container vcluster adds, as quantity strings."""

    limits: dict[str, str] = Field(default_factory=lambda: {"cpu": "30m", "memory": "64Mi"}, description="limits")
    requests: dict[str, str] = Field(default_factory=lambda: {"cpu": "30m", "memory": "64Mi"},
                                     description="requests")

    @field_validator("limits", "requests", mode="before")
    @classmethod
    def _maps(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class RewriteHostsInitContainer(_Loose):
    """`sync.toHost.pods.rewriteHosts.initContainer`: the image and resources of `vcluster-rewrite-hosts`."""

    image: ImageRef = Field(default_factory=ImageRef)
    resources: ContainerResources = Field(default_factory=ContainerResources)

    @field_validator("image", "resources", mode="before")
    @classmethod
    def _sections(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class RewriteHosts(_Loose):
    """`sync.toHost.pods.rewriteHosts`: an init container makes a pod with a subdomain resolve its FQDN."""

    enabled: bool = Field(default=True, description="add the /etc/hosts init container to pods with a subdomain")
    initContainer: RewriteHostsInitContainer = Field(default_factory=RewriteHostsInitContainer)

    @field_validator("initContainer", mode="before")
    @classmethod
    def _init(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class ToHostPods(_Loose):
    """`sync.toHost.pods`: what vcluster's pod translator reads (the sidecar replaces it)."""

    runtimeClassName: str = Field(default="", description="force this runtimeClassName on every host pod")
    priorityClassName: str = Field(default="", description="host PriorityClass of pods left without one")
    useSecretsForSATokens: bool = Field(
        default=False, description="tokens in a host Secret owned by the host pod instead of an annotation")
    translateImage: dict[str, str] = Field(default_factory=dict, description="image -> image on the host")
    enforceTolerations: list[str] = Field(
        default_factory=list, description="tolerations added to every host pod: key[=value][:effect] or *")
    rewriteHosts: RewriteHosts = Field(default_factory=RewriteHosts)

    @field_validator("runtimeClassName", "priorityClassName", mode="before")
    @classmethod
    def _rcn(cls, v: Any) -> Any:
        return _none_to_empty(v, "")

    @field_validator("translateImage", mode="before")
    @classmethod
    def _images(cls, v: Any) -> Any:
        return _none_to_empty(v, {})

    @field_validator("enforceTolerations", mode="before")
    @classmethod
    def _tolerations(cls, v: Any) -> Any:
        return _none_to_empty(v, [])

    @field_validator("rewriteHosts", mode="before")
    @classmethod
    def _rewrite(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class ToHostAll(_Loose):
    """`sync.toHost.configMaps` / `sync.toHost.secrets`: only `all` is read (vcluster then syncs every
    object of the kind itself, so no `vcluster.loft.sh/force-sync` annotation is needed)."""

    all: bool = Field(default=False, description="vcluster syncs every object: no force-sync annotation needed")


class ToHost(_Loose):
    """`sync.toHost`: `pods`, and `configMaps.all` / `secrets.all` (behaviour.md section 3.1)."""

    pods: ToHostPods = Field(default_factory=ToHostPods)
    configMaps: ToHostAll = Field(default_factory=ToHostAll)
    secrets: ToHostAll = Field(default_factory=ToHostAll)
    priorityClasses: Enabled = Field(default_factory=Enabled)
    serviceAccounts: Enabled = Field(default_factory=Enabled)
    resourceClaims: Enabled = Field(default_factory=Enabled)
    resourceClaimTemplates: Enabled = Field(default_factory=Enabled)

    @field_validator("pods", "configMaps", "secrets", "priorityClasses", "serviceAccounts", "resourceClaims",
                     "resourceClaimTemplates", mode="before")
    @classmethod
    def _sections(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class Sync(_Loose):
    """`sync`: `fromHost.runtimeClasses`, what the pod translation reads of `toHost`, and priority classes."""

    fromHost: FromHost = Field(default_factory=FromHost)
    toHost: ToHost = Field(default_factory=ToHost)


class WorkloadServiceAccount(_Loose):
    """`controlPlane.advanced.workloadServiceAccount`: only `name` is read."""

    name: str = Field(default="", description="host service account of tenant pods; empty: vc-workload-<name>")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> Any:
        return _none_to_empty(v, "")


class Advanced(_Loose):
    """`controlPlane.advanced`: `workloadServiceAccount` and `defaultImageRegistry`."""

    workloadServiceAccount: WorkloadServiceAccount = Field(default_factory=WorkloadServiceAccount)
    defaultImageRegistry: str = Field(default="", description="registry of the images vcluster adds, if set")
    virtualScheduler: Enabled = Field(default_factory=Enabled)

    @field_validator("defaultImageRegistry", mode="before")
    @classmethod
    def _registry(cls, v: Any) -> Any:
        return _none_to_empty(v, "")

    @field_validator("virtualScheduler", mode="before")
    @classmethod
    def _scheduler(cls, v: Any) -> Any:
        return _none_to_empty(v, {})

    @field_validator("workloadServiceAccount", mode="before")
    @classmethod
    def _wsa(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class HostPathMapper(_Loose):
    """`controlPlane.hostPathMapper`: with it enabled and not central, host pods also mount the real log paths."""

    enabled: bool = Field(default=False, description="vcluster's hostpath-mapper runs beside the vcluster")
    central: bool = Field(default=False, description="the mapper is the central one (no physical mounts)")


class ControlPlane(_Loose):
    """`controlPlane`: `advanced` and `hostPathMapper`."""

    advanced: Advanced = Field(default_factory=Advanced)
    hostPathMapper: HostPathMapper = Field(default_factory=HostPathMapper)

    @field_validator("advanced", "hostPathMapper", mode="before")
    @classmethod
    def _advanced(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class NetworkingAdvanced(_Loose):
    """`networking.advanced`: only `clusterDomain` is read."""

    clusterDomain: str = Field(default="cluster.local", description="the virtual cluster's DNS domain")


class Networking(_Loose):
    """`networking`: only `advanced.clusterDomain` is read."""

    advanced: NetworkingAdvanced = Field(default_factory=NetworkingAdvanced)

    @field_validator("advanced", mode="before")
    @classmethod
    def _advanced(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class SyncSettings(_Loose):
    """`experimental.syncSettings`: only `setOwner` is read."""

    setOwner: bool = Field(default=True, description="host pods are owned by the vcluster's Service")


class Experimental(_Loose):
    """`experimental`: only `syncSettings.setOwner` is read."""

    syncSettings: SyncSettings = Field(default_factory=SyncSettings)

    @field_validator("syncSettings", mode="before")
    @classmethod
    def _settings(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class Policies(_Loose):
    """`policies`: only `podSecurityStandard` is read."""

    podSecurityStandard: str = Field(default="", description="virtual pods must meet this Pod Security Standard "
                                                             "(privileged, baseline, restricted) to be synced")

    @field_validator("podSecurityStandard", mode="before")
    @classmethod
    def _level(cls, v: Any) -> Any:
        v = _none_to_empty(v, "")
        if v not in ("", "privileged", "baseline", "restricted"):
            raise ValueError(f'"{v}" is not a Pod Security Standard (privileged, baseline or restricted)')
        return v


class VClusterConfig(_Loose):
    """A whole vcluster.yaml (or a fragment of one)."""

    sync: Sync = Field(default_factory=Sync)
    controlPlane: ControlPlane = Field(default_factory=ControlPlane)
    networking: Networking = Field(default_factory=Networking)
    experimental: Experimental = Field(default_factory=Experimental)
    policies: Policies = Field(default_factory=Policies)

    @field_validator("networking", "experimental", "policies", mode="before")
    @classmethod
    def _sections(cls, v: Any) -> Any:
        return _none_to_empty(v, {})

    @field_validator("controlPlane", mode="before")
    @classmethod
    def _control_plane(cls, v: Any) -> Any:
        return _none_to_empty(v, {})

    @field_validator("sync", mode="before")
    @classmethod
    def _sync(cls, v: Any) -> Any:
        return _none_to_empty(v, {})


class ConfigError(Exception):
    """The configuration cannot be used. `errors` lists every problem as `invalid <path>: <reason>`
    (or, for an unreadable file, what could not be read and why)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


class SyncerConfig:
    """The validated configuration the controllers use.

    Attributes:
        raw: the parsed vcluster.yaml model.
        enabled: `sync.fromHost.runtimeClasses.enabled`.
        selector: the compiled selector (empty selects every RC).
        priority_selector: the compiled `sync.fromHost.priorityClasses.selector` (empty: no priority-class gate).
        forced_runtime_class: `sync.toHost.pods.runtimeClassName` ("" = not forced).
        source: the parsed YAML document as a dict (exposed to patches as `context.vcluster.config`).
    """

    def __init__(self, raw: VClusterConfig, selector: Selector, source: dict[str, Any],
                 priority_selector: Selector | None = None) -> None:
        self.raw = raw
        self.selector = selector
        self.priority_selector = priority_selector or Selector()
        self.source = source

    @property
    def rc(self) -> RuntimeClassesSync:
        """The `sync.fromHost.runtimeClasses` section."""
        return self.raw.sync.fromHost.runtimeClasses

    @property
    def enabled(self) -> bool:
        """True when RuntimeClass sync (and therefore the Pod gate) is on."""
        return self.rc.enabled

    def syncs_all(self, kind: str) -> bool:
        """True when vcluster syncs every object of `kind` (`configmap`: `sync.toHost.configMaps.all`,
        `secret`: `sync.toHost.secrets.all`); PVCs are always synced by vcluster."""
        to_host = self.raw.sync.toHost
        return {"configmap": to_host.configMaps.all, "secret": to_host.secrets.all}.get(kind, True)

    def workload_service_account(self, vcluster_name: str) -> str:
        """The host service account tenant pods run as: `controlPlane.advanced.workloadServiceAccount.name`,
        by default `vc-workload-<vcluster name>` (the one vcluster's chart creates)."""
        return self.raw.controlPlane.advanced.workloadServiceAccount.name or f"vc-workload-{vcluster_name}"

    @property
    def use_secrets_for_tokens(self) -> bool:
        """`sync.toHost.pods.useSecretsForSATokens`."""
        return self.raw.sync.toHost.pods.useSecretsForSATokens

    @property
    def forced_runtime_class(self) -> str:
        """`sync.toHost.pods.runtimeClassName`, or "" when not set."""
        return self.raw.sync.toHost.pods.runtimeClassName


def _loc_to_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _pydantic_errors(err: ValidationError) -> list[tuple[str, str]]:
    """(field path, message) for each pydantic error."""
    out: list[tuple[str, str]] = []
    for e in err.errors():
        path = _loc_to_path(tuple(e["loc"]))
        if e["type"] == "extra_forbidden":
            out.append((path, f'invalid {path}: unknown field "{e["loc"][-1]}"'))
        else:
            msg = str(e["msg"]).removeprefix("Value error, ")  # a validator's own words stand alone
            out.append((path, f"invalid {path}: {msg}"))
    return out


def _patch_messages(patches: list[Patch]) -> list[tuple[str, str]]:
    """The patch rules of behaviour.md section 5 that a schema cannot express: (field path, message)."""
    msgs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, p in enumerate(patches):
        where = f"{RC_PATH}.patches[{i}]"
        kinds = [k for k in ("expression", "labels", "reference") if getattr(p, k) is not None]
        if len(kinds) > 1:
            msgs.append((where, f"invalid {where}: can only use one of: expression, labels or reference"))
        elif not kinds:
            msgs.append((where, f"invalid {where}: need to use one of: expression, labels or reference"))
        if p.path in seen:
            msgs.append((f"{where}.path", f'invalid {where}: have the same path "{p.path}"'))
        seen.add(p.path)
        try:
            parse_path(p.path)
        except PathError as e:
            msgs.append((f"{where}.path", f"invalid {where}.path: {e}"))
        if p.path in UNPATCHABLE_PATHS:
            msgs.append((f"{where}.path", f'invalid {where}.path: "{p.path}" cannot be patched: RuntimeClasses keep '
                                          "their name and type on both sides"))
    return msgs


def _toleration_messages(entries: Any) -> list[tuple[str, str]]:
    """Each `sync.toHost.pods.enforceTolerations` entry vcluster's syntax does not accept (vcluster drops such
    an entry silently; here it is a configuration error)."""
    out: list[tuple[str, str]] = []
    for i, text in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(text, str):
            try:
                parse_toleration(text)
            except TolerationError as e:
                where = f"sync.toHost.pods.enforceTolerations[{i}]"
                out.append((where, f"invalid {where}: {e}"))
    return out


def parse_config(document: Any) -> SyncerConfig:
    """Validate a parsed vcluster.yaml document (a dict; None is an empty document).

    Returns:
        SyncerConfig with the compiled selector.
    Raises:
        ConfigError: listing every problem found, each naming its field path.
    """
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError([f"invalid config: the document must be a mapping, not {type(document).__name__}"])
    errors: list[tuple[str, str]] = []  # (field path, message)
    raw: VClusterConfig | None = None
    try:
        raw = VClusterConfig.model_validate(document)
    except ValidationError as e:
        errors += _pydantic_errors(e)
    # The rules a schema cannot express are checked too, on whatever parts are well-formed, so that one run
    # reports every error (behaviour.md section 7).
    rc_doc = _sub(document, "sync", "fromHost", "runtimeClasses")
    selector_doc = rc_doc.get("selector") if isinstance(rc_doc, dict) else None
    selector_model = raw.sync.fromHost.runtimeClasses.selector if raw is not None else _valid(LabelSelector,
                                                                                               selector_doc)
    if selector_model is not None:
        for err in label_selector_errors(selector_model.model_dump()):
            path = f"{RC_PATH}.selector.{err.path}"
            errors.append((path, f"invalid {RC_PATH}.selector: {err.reason} (at {path})"))
    pc_doc = _sub(document, "sync", "fromHost", "priorityClasses", "selector")
    pc_model = raw.sync.fromHost.priorityClasses.selector if raw is not None else _valid(LabelSelector, pc_doc)
    if pc_model is not None:
        for err in label_selector_errors(pc_model.model_dump()):
            path = f"{PC_PATH}.selector.{err.path}"
            errors.append((path, f"invalid {PC_PATH}.selector: {err.reason} (at {path})"))
    patch_docs = rc_doc.get("patches") if isinstance(rc_doc, dict) else None
    patches = raw.sync.fromHost.runtimeClasses.patches if raw is not None else [
        p for p in (_valid(Patch, d) for d in (patch_docs if isinstance(patch_docs, list) else [])) if p is not None]
    errors += _patch_messages(patches)
    errors += _toleration_messages(_sub(document, "sync", "toHost", "pods", "enforceTolerations"))
    if errors:
        order = _document_order(document)
        raise ConfigError([msg for _, msg in sorted(errors, key=lambda e: order(e[0]))])
    assert raw is not None
    rc = raw.sync.fromHost.runtimeClasses
    selector = rc.selector.compile() if rc.selector is not None else Selector()
    pcs = raw.sync.fromHost.priorityClasses
    priority_selector = pcs.selector.compile() if pcs.enabled and pcs.selector is not None else Selector()
    return SyncerConfig(raw, selector, document, priority_selector)


def _sub(doc: Any, *keys: str) -> Any:
    for k in keys:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc


def _valid(model: type[_M], doc: Any) -> _M | None:
    """`doc` as `model` when it is well-formed (its errors are reported by the whole-document validation)."""
    try:
        return model.model_validate(doc) if doc is not None else None
    except ValidationError:
        return None


def _document_order(document: Any) -> Callable[[str], tuple[int, ...]]:
    """A sort key for field paths (`a.b[2].c`, `...selector.matchLabels[k]`) by where they stand in the
    document: keys in the order the YAML gives them, list items by index; unknown parts sort last."""
    def key(path: str) -> tuple[int, ...]:
        out: list[int] = []
        node = document
        for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
            name = part[1:-1] if part.startswith("[") else part
            if isinstance(node, list) and name.isdigit() and int(name) < len(node):
                out.append(int(name))
                node = node[int(name)]
            elif isinstance(node, dict) and name in node:
                out.append(list(node).index(name))
                node = node[name]
            else:
                out.append(1 << 30)
                node = None
        return tuple(out)
    return key


def load_config(path: str | Path) -> SyncerConfig:
    """Read and validate a vcluster.yaml file (YAML, read with `yaml.safe_load`).

    Raises:
        ConfigError: the file cannot be read or parsed, or the configuration is invalid.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([f"cannot read config {path}: {e.strerror or e}"]) from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError([f"cannot parse config {path}: {e}"]) from None
    return parse_config(document)
