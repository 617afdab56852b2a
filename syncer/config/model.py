"""The part of a vcluster.yaml this sidecar reads, as pydantic v2 models, and its loader.

Source: vcluster's config reference for `sync.fromHost.runtimeClasses` (../shared/reference) and
behaviour.md section 1. Every other key of a vcluster.yaml is accepted and ignored, so a real
vcluster.yaml loads. Unknown keys are errors only inside `sync.fromHost.runtimeClasses` (and inside
its selector, the selector's expressions, and each patch), where a typo would silently change what is
synced, and on the way there (the top level, `sync`, `sync.fromHost`) and beside the other keys it reads
(`sync.toHost`, `sync.toHost.pods`, its `rewriteHosts(.initContainer)`, `controlPlane.advanced`,
`networking.advanced`) when a key is not one of vcluster's but within two letter edits of one (`fromhost`,
`runtimeClass`, `runtimeClassname`): such a setting would be read as absent.

Types are as strict as vcluster's `values.schema.json` (Helm refuses the values otherwise, and vcluster's
`yaml.UnmarshalStrict` into its Go structs refuses them too): a boolean is `true` or `false`, never
`"yes"` or `1`; a string is never a number. A null is read as vcluster reads it: Helm removes a
null key from the values before the chart renders them (the chart's default with it), and vcluster's
Go structs start from their zero values, so a null key, or a null section, is the zero value of its
type (`false`, `""`, empty; for a section, every key in it).

Errors are reported as `invalid <dotted path>: <reason>`, e.g.
`invalid sync.fromHost.runtimeClasses.selector: "Foo" is not a valid label selector operator (at
sync.fromHost.runtimeClasses.selector.matchExpressions[0].operator)`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args, get_origin

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from syncer.config.selector import Selector, from_label_selector, label_selector_errors
from syncer.config.tolerations import TolerationError, parse_toleration
from syncer.patches.fields import QuantityError, parse_quantity_text
from syncer.patches.path import Key, PathError, Segment, reaches
from syncer.patches.path import parse as parse_path

RC_PATH = "sync.fromHost.runtimeClasses"
PC_PATH = "sync.fromHost.priorityClasses"
_M = TypeVar("_M", bound=BaseModel)
# Names are the same on both sides (behaviour.md section 2): these are never patched.
UNPATCHABLE_PATHS = ("metadata.name", "metadata.namespace", "apiVersion", "kind")
# Metadata the virtual copy never takes from the host (behaviour.md section 2, "dropped"; translate._DROPPED_META):
# the virtual API server sets it, or it would hold the syncer's own copy (finalizers, owners). Never patched either.
NOT_COPIED_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "managedFields", "selfLink",
                   "generateName")


def _zero(annotation: Any) -> Any:
    """The zero value of a field's type, as a Go struct field of that type has it: None for an optional
    field, `false`, `""`, empty for a list or a mapping, and for a section every one of its keys' zero."""
    args = get_args(annotation)
    if type(None) in args:
        return None
    if get_origin(annotation) is Annotated:
        return _zero(args[0])
    origin = get_origin(annotation) or annotation
    if isinstance(origin, type) and issubclass(origin, BaseModel):
        return {name: _zero(f.annotation) for name, f in origin.model_fields.items()}
    return {bool: False, str: "", dict: {}, list: []}[origin]


class _Section(BaseModel):
    """A mapping of vcluster.yaml: types as strict as vcluster's schema; a null key is its zero value."""

    model_config = ConfigDict(strict=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _nulls(cls, data: Any) -> Any:
        """Helm drops a null key (the chart's default with it); vcluster's Go struct then keeps its zero."""
        if isinstance(data, dict) and any(v is None for v in data.values()):
            fields = cls.model_fields
            return {k: _zero(fields[k].annotation) if v is None and k in fields else v for k, v in data.items()}
        return data


class _Loose(_Section):
    """A vcluster.yaml section whose other keys belong to vcluster and are ignored."""

    model_config = ConfigDict(extra="ignore")


class _Strict(_Section):
    """A section owned by this sidecar: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class Enabled(_Loose):
    """A vcluster section of which only `enabled` is read."""

    enabled: bool = Field(default=False, description="enabled")


class LabelSelectorRequirement(_Strict):
    """One `matchExpressions` entry: key, operator (In, NotIn, Exists, DoesNotExist), values."""

    key: str = Field(description="the label key")
    operator: str = Field(description="In, NotIn, Exists or DoesNotExist")
    values: list[str] = Field(default_factory=list, description="for In/NotIn: at least one; else none")


class LabelSelector(_Strict):
    """A metav1.LabelSelector: matchLabels and matchExpressions, ANDed."""

    matchLabels: dict[str, str] = Field(default_factory=dict, description="labels a host RuntimeClass must have")
    matchExpressions: list[LabelSelectorRequirement] = Field(
        default_factory=list, description="requirements, ANDed with each other and with matchLabels")


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


class NodeSelectorLabels(_Loose):
    """`sync.fromHost.nodes.selector`: only `labels` is read."""

    labels: dict[str, str] = Field(default_factory=dict, description="host pods are kept to nodes with these labels")


class NodesSync(_Loose):
    """`sync.fromHost.nodes`: only `selector.labels` is read."""

    selector: NodeSelectorLabels = Field(default_factory=NodeSelectorLabels)


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


def parse_image_ref(ref: str) -> dict[str, str]:
    """An image reference as vcluster's `ParseImageRef` splits it (config/default_extra_values.go):
    `[registry/]repository[:tag]`, where the first part is a registry when it holds `.` or `:`, and a
    leading `library/` of the repository is dropped. `"registry:5000/some/repo:sometag"` ->
    `{"registry": "registry:5000", "repository": "some/repo", "tag": "sometag"}`."""
    registry, rest = "", ref
    first, sep, tail = ref.partition("/")
    if sep and any(c in first for c in ".:"):
        registry, rest = first, tail
    repository, _, tag = rest.partition(":")
    return {"registry": registry, "repository": repository.removeprefix("library/"), "tag": tag}


class ImageRef(_Loose):
    """An image of vcluster's chart: registry, repository, tag. A string is read as vcluster reads it since
    the key became an object in v0.27 (`Image.UnmarshalJSON`: the charts up to v0.26 wrote
    `image: "library/alpine:3.20"`, and vcluster still parses that on upgrade)."""

    registry: str = Field(default="mirror.gcr.io", description="registry; empty: Docker Hub")
    repository: str = Field(default="library/alpine", description="repository")
    tag: str = Field(default="3.20", description="tag")


def _image_string(data: Any) -> Any:
    """An image written as a string, split as vcluster splits it (`parse_image_ref`)."""
    return parse_image_ref(data) if isinstance(data, str) else data


# An image key: a mapping, or (the charts up to v0.26) a string; the schema says both.
Image = Annotated[ImageRef, BeforeValidator(_image_string, json_schema_input_type=ImageRef | str)]


class GoYAMLNonString(str):
    """A plain (unquoted) YAML scalar PyYAML reads as a string where Go's YAML reads a `kind` of value: vcluster's
    config is read by sigs.k8s.io/yaml v1.6.0 over go.yaml.in/yaml/v2, whose resolve.go is YAML 1.1 with other
    rules than PyYAML's. Everything but the quantity maps reads it as the string it is."""

    kind = ""


class GoYAMLNumber(GoYAMLNonString):
    """A number to Go's YAML: after a sign or digit it matches resolve.go's `yamlStyleFloat` once its `_` are
    dropped, after a `.` strconv.ParseFloat reads it, and the float is within float64's range (`1e400` stays a
    string in Go too). PyYAML's YAML 1.1 floats need a dot and a signed exponent, so `1e3`, `1e-07`, `1.5e3`,
    `+.5`, `.5e3` and `09` are strings to it."""

    kind = "number"


class GoYAMLBoolean(GoYAMLNonString):
    """A boolean to Go's YAML and a string to PyYAML: `y`, `Y`, `n`, `N` (resolve.go's resolveMapList)."""

    kind = "boolean"


GO_YAML_NON_STRING_TAG = "tag:runtimeclass-syncer,2025:go-yaml-non-string"
# go.yaml.in/yaml/v2 resolve.go yamlStyleFloat
_GO_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")


def _construct_scalar_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """A plain scalar no PyYAML resolver took (`_StrictLoader`'s last implicit resolver): a `GoYAMLNumber` or
    `GoYAMLBoolean` when Go's YAML reads it so, else the string PyYAML reads."""
    text = str(loader.construct_scalar(node))
    if text in ("y", "Y", "n", "N"):
        return GoYAMLBoolean(text)
    plain = text if text.startswith(".") else text.replace("_", "")
    if _GO_YAML_FLOAT.fullmatch(plain) and abs(float(plain)) != float("inf"):
        return GoYAMLNumber(text)
    return text


def _not_a_go_value(value: Any) -> Any:
    """A resource value written unquoted that vcluster reads as a number or boolean (`GoYAMLNonString`) is refused
    as vcluster's `parseResources` refuses it ("resource value of cpu is not a string")."""
    if isinstance(value, GoYAMLNonString):
        raise ValueError(f"expected a string, got the {value.kind} {value} (unquoted, vcluster's YAML reads a "
                         f"{value.kind}; quote it: {json.dumps(str(value))})")
    return value


def _quantity(value: str) -> str:
    """`value` when apimachinery's `resource.ParseQuantity` reads it (`syncer.patches.fields.parse_quantity_text`,
    nothing trimmed), as vcluster's `NewTranslator` (pods/translate/translator.go `parseResources`) reads each value
    at start: a host pod given a value it cannot read would be refused by the API server."""
    try:
        parse_quantity_text(value)
    except QuantityError as e:
        raise ValueError(f"{json.dumps(value)} is not a quantity: {e}") from None
    return value


# A resource map of vcluster's (`map[string]interface{}` in its config.go, untyped in its schema): every value a
# quantity string. vcluster's `parseResources` refuses a number ("resource value of cpu is not a string"), and the
# chart's values.yaml gives strings ("30m", "64Mi"), so a number is refused here too, also one only Go's YAML reads
# as a number or boolean (`GoYAMLNonString`: `cpu: 1e3` unquoted). ParseQuantity trims nothing: `" 30m"` is refused.
# The schema gives apimachinery's quantity expression (`resource.ParseQuantity` checks the suffix further).
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
Quantities = dict[str, Annotated[str, BeforeValidator(_not_a_go_value), AfterValidator(_quantity),
                                 WithJsonSchema({"type": "string", "pattern": QUANTITY_PATTERN})]]


class ContainerResources(_Loose):
    """`limits` and `requests` of a container vcluster adds, as quantity strings."""

    limits: Quantities = Field(default_factory=lambda: {"cpu": "30m", "memory": "64Mi"}, description="limits")
    requests: Quantities = Field(default_factory=lambda: {"cpu": "30m", "memory": "64Mi"},
                                     description="requests")


class RewriteHostsInitContainer(_Loose):
    """`sync.toHost.pods.rewriteHosts.initContainer`: the image and resources of `vcluster-rewrite-hosts`."""

    image: Image = Field(default_factory=ImageRef)
    resources: ContainerResources = Field(default_factory=ContainerResources)


class RewriteHosts(_Loose):
    """`sync.toHost.pods.rewriteHosts`: an init container makes a pod with a subdomain resolve its FQDN."""

    enabled: bool = Field(default=True, description="add the /etc/hosts init container to pods with a subdomain")
    initContainer: RewriteHostsInitContainer = Field(default_factory=RewriteHostsInitContainer)


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


class Sync(_Loose):
    """`sync`: `fromHost.runtimeClasses`, what the pod translation reads of `toHost`, and priority classes."""

    fromHost: FromHost = Field(default_factory=FromHost)
    toHost: ToHost = Field(default_factory=ToHost)


class WorkloadServiceAccount(_Loose):
    """`controlPlane.advanced.workloadServiceAccount`: only `name` is read."""

    name: str = Field(default="", description="host service account of tenant pods; empty: vc-workload-<name>")


class Advanced(_Loose):
    """`controlPlane.advanced`: `workloadServiceAccount` and `defaultImageRegistry`."""

    workloadServiceAccount: WorkloadServiceAccount = Field(default_factory=WorkloadServiceAccount)
    defaultImageRegistry: str = Field(default="", description="registry of the images vcluster adds, if set")
    # deprecated by vcluster for controlPlane.distro.k8s.scheduler; either turns the virtual scheduler on
    virtualScheduler: Enabled = Field(default_factory=Enabled)


class DistroK8s(_Loose):
    """`controlPlane.distro.k8s`: only `scheduler.enabled` is read."""

    scheduler: Enabled = Field(default_factory=Enabled)  # the virtual cluster runs its own scheduler


class Distro(_Loose):
    """`controlPlane.distro`: only `k8s.scheduler.enabled` is read."""

    k8s: DistroK8s = Field(default_factory=DistroK8s)


class HostPathMapper(_Loose):
    """`controlPlane.hostPathMapper`: with it enabled and not central, host pods also mount the real log paths."""

    enabled: bool = Field(default=False, description="vcluster's hostpath-mapper runs beside the vcluster")
    central: bool = Field(default=False, description="the mapper is the central one (no physical mounts)")


class CoreDNS(_Loose):
    """`controlPlane.coredns`: whether vcluster runs CoreDNS as a Deployment in the virtual kube-system (a pod the
    runtime policy judges like any other, vcluster's pkg/coredns/template.go) or inside its control plane."""

    enabled: bool = Field(default=True, description="vcluster deploys CoreDNS for the virtual cluster")
    embedded: bool = Field(default=False, description="CoreDNS runs inside vcluster's control plane, not as a "
                                                      "pod in the virtual kube-system")


class ControlPlane(_Loose):
    """`controlPlane`: `advanced`, `distro.k8s.scheduler`, `hostPathMapper` and `coredns`."""

    advanced: Advanced = Field(default_factory=Advanced)
    distro: Distro = Field(default_factory=Distro)
    hostPathMapper: HostPathMapper = Field(default_factory=HostPathMapper)
    coredns: CoreDNS = Field(default_factory=CoreDNS)


class NetworkingAdvanced(_Loose):
    """`networking.advanced`: only `clusterDomain` is read."""

    clusterDomain: str = Field(default="cluster.local", description="the virtual cluster's DNS domain")


class Networking(_Loose):
    """`networking`: only `advanced.clusterDomain` is read."""

    advanced: NetworkingAdvanced = Field(default_factory=NetworkingAdvanced)


class SyncSettings(_Loose):
    """`experimental.syncSettings`: only `setOwner` is read."""

    setOwner: bool = Field(default=True, description="host pods are owned by the vcluster's Service")


class Experimental(_Loose):
    """`experimental`: only `syncSettings.setOwner` is read."""

    syncSettings: SyncSettings = Field(default_factory=SyncSettings)


POD_SECURITY_STANDARDS = ("", "privileged", "baseline", "restricted")


class Policies(_Loose):
    """`policies`: only `podSecurityStandard` is read."""

    podSecurityStandard: str = Field(default="", description="virtual pods must meet this Pod Security Standard "
                                                             "(privileged, baseline, restricted) to be synced",
                                     json_schema_extra={"enum": list(POD_SECURITY_STANDARDS)})

    @field_validator("podSecurityStandard")
    @classmethod
    def _level(cls, v: str) -> str:
        if v not in POD_SECURITY_STANDARDS:
            raise ValueError(f'"{v}" is not a Pod Security Standard (privileged, baseline or restricted)')
        return v


class VClusterConfig(_Loose):
    """A whole vcluster.yaml (or a fragment of one)."""

    sync: Sync = Field(default_factory=Sync)
    controlPlane: ControlPlane = Field(default_factory=ControlPlane)
    networking: Networking = Field(default_factory=Networking)
    experimental: Experimental = Field(default_factory=Experimental)
    policies: Policies = Field(default_factory=Policies)


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
    def virtual_scheduler(self) -> bool:
        """Whether the virtual cluster schedules its pods (then the host pod keeps the node it chose): vcluster's
        `Config.IsVirtualSchedulerEnabled` (config/config.go), `controlPlane.distro.k8s.scheduler.enabled` or the
        deprecated `controlPlane.advanced.virtualScheduler.enabled`."""
        control_plane = self.raw.controlPlane
        return control_plane.distro.k8s.scheduler.enabled or control_plane.advanced.virtualScheduler.enabled

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


# What a strict type error expected (pydantic's error type -> words) and what YAML gave instead.
_EXPECTED = {"bool_type": "a boolean (true or false)", "string_type": "a string", "list_type": "a list",
             "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
             "int_type": "an integer", "float_type": "a number"}


def _given(value: Any) -> str:
    """What YAML gave, in words: `the string "yes"`, `the integer 1`, `a mapping`, `null`."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    words = {dict: "a mapping", list: "a list", type(None): "null"}
    return words.get(type(value), f"a {type(value).__name__} ({value})")


def _unwrap(annotation: Any) -> Any:
    """`X` of `X | None` and of `Annotated[X, ...]`."""
    while True:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if get_origin(annotation) is Annotated or (type(None) in get_args(annotation) and len(args) == 1):
            annotation = args[0]
        else:
            return annotation


def _keys_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model `root` accepts in the mapping at `loc` (a pydantic error location: field names,
    list indexes and mapping keys); [] when `loc` does not lead to a model."""
    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        if get_origin(annotation) in (list, dict):
            annotation = get_args(annotation)[-1]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel) and part in annotation.model_fields:
            annotation = annotation.model_fields[str(part)].annotation
        else:
            return []
    annotation = _unwrap(annotation)
    return list(annotation.model_fields) if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []


def did_you_mean(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` is a misspelling of, if any: the same letters in another case, or close by
    difflib's ratio (at least 0.75: `runtimeClass` -> `runtimeClasses`, `fromhost` -> `fromHost`)."""
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.75)
    return by_lower[close[0]] if close else None


def unknown_key_message(path: str, key: str, known: Iterable[str]) -> str:
    """`invalid <path>: unknown field "<key>"`, with ` (did you mean "<k>"?)` for a near miss."""
    suggestion = did_you_mean(key, known)
    return f'invalid {path}: unknown field "{key}"' + (f' (did you mean "{suggestion}"?)' if suggestion else "")


def _pydantic_errors(err: ValidationError, root: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    """(field path, message) for each pydantic error; with the `root` model that was validated, an unknown
    key names the known one it is close to."""
    out: list[tuple[str, str]] = []
    for e in err.errors():
        loc = tuple(e["loc"])
        path = _loc_to_path(loc)
        if e["type"] == "extra_forbidden":
            known = _keys_at(root, loc[:-1]) if root is not None else []
            out.append((path, unknown_key_message(path, str(loc[-1]), known)))
        elif e["type"] in _EXPECTED:
            out.append((path, f"invalid {path}: expected {_EXPECTED[e['type']]}, got {_given(e['input'])}"))
        else:
            msg = str(e["msg"]).removeprefix("Value error, ")  # a validator's own words stand alone
            out.append((path, f"invalid {path}: {msg}"))
    return out


# vcluster's keys on the way to `sync.fromHost.runtimeClasses`, and at the levels of the other keys the syncer
# reads (`sync.toHost.pods` and its `rewriteHosts`, `controlPlane.advanced`, `networking.advanced`): the union of
# the `properties` of vcluster's chart/values.schema.json at these levels, from v0.20.6 (the first vcluster.yaml) to
# main 487667546 (a test checks that the schemas of the supported minors in tests/data/vcluster-chart-*/ are
# covered; each of these levels has `additionalProperties: false` there). A key at one of these levels that is none
# of these but within two letter edits of one (`misspelling_of`) is an error: the setting it meant would be read
# as absent (a misspelt `sync.toHost.pods.runtimeClassname` would silently turn the forced runtime class off).
# Other unknown keys are left to vcluster, whose newer versions add keys at these levels.
VCLUSTER_KEYS: dict[tuple[str, ...], frozenset[str]] = {
    (): frozenset({
        "controlPlane", "deletion", "deploy", "experimental", "exportKubeConfig", "external", "global",
        "integrations", "logging", "networking", "platform", "plugin", "plugins", "policies", "privateNodes",
        "pro", "rbac", "serviceCIDR", "sleep", "sleepMode", "snapshots", "sync", "telemetry"}),
    ("sync",): frozenset({"fromHost", "toHost"}),
    ("sync", "fromHost"): frozenset({
        "configMaps", "csiDrivers", "csiNodes", "csiStorageCapacities", "customResources", "deviceClasses",
        "events", "gatewayClasses", "gateways", "ingressClasses", "nodes", "priorityClasses", "runtimeClasses",
        "secrets", "storageClasses", "volumeSnapshotClasses"}),
    ("sync", "toHost"): frozenset({
        "configMaps", "customResources", "endpointSlices", "endpoints", "gatewayApi", "ingresses", "namespaces",
        "networkPolicies", "persistentVolumeClaims", "persistentVolumes", "podDisruptionBudgets", "pods",
        "priorityClasses", "resourceClaimTemplates", "resourceClaims", "secrets", "serviceAccounts", "services",
        "storageClasses", "volumeSnapshotContents", "volumeSnapshots"}),
    ("sync", "toHost", "pods"): frozenset({
        "enabled", "enforceTolerations", "hybridScheduling", "patches", "priorityClassName", "rewriteHosts",
        "runtimeClassName", "translateImage", "useSecretsForSATokens"}),
    ("sync", "toHost", "pods", "rewriteHosts"): frozenset({"enabled", "initContainer"}),
    ("sync", "toHost", "pods", "rewriteHosts", "initContainer"): frozenset({"image", "resources"}),
    ("controlPlane", "advanced"): frozenset({
        "cloudControllerManager", "defaultImageRegistry", "globalMetadata", "headlessService", "konnectivity",
        "kubeVip", "podDisruptionBudget", "registry", "serviceAccount", "virtualScheduler", "workloadServiceAccount"}),
    ("networking", "advanced"): frozenset({"clusterDomain", "fallbackHostCluster", "proxyKubelets"}),
}


def misspelling_of(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` misspells: one at most 2 letter edits (insert, delete, replace) away, case aside
    (`runtimeClassname`, `useSecretForSATokens`, `pod`, `runtimeClass`). Tighter than `did_you_mean`: a key that a
    newer vcluster adds beside these (`persistentVolumeClaimTemplates`, `clusterDNS`) must not stop the syncer."""
    lowered = key.lower()
    return next((k for k in sorted(known) if _edits(lowered, k.lower()) <= 2), None)


def _edits(a: str, b: str) -> int:
    """Levenshtein distance of `a` and `b` (3 for anything further: only `<= 2` is asked)."""
    if abs(len(a) - len(b)) > 2:
        return 3
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _misspelt_sections(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, message) for each key at a level of VCLUSTER_KEYS (on the way to `sync.fromHost.runtimeClasses`, and
    beside the other keys the syncer reads) that is not vcluster's but a misspelling of one of its keys
    (`misspelling_of`; other unknown keys there are left to vcluster, whose newer versions add keys)."""
    out: list[tuple[str, str]] = []
    for level, known in VCLUSTER_KEYS.items():
        node = _sub(document, *level) if level else document
        for key in node if isinstance(node, dict) else ():
            meant = misspelling_of(key, known) if isinstance(key, str) and key not in known else None
            if meant is not None:
                path = ".".join((*level, key))
                out.append((path, f'invalid {path}: unknown field "{key}" (did you mean "{meant}"?)'))
    return out


def _patch_messages(patches: list[Patch]) -> list[tuple[str, str]]:
    """The patch rules of behaviour.md section 5 that a schema cannot express: (field path, message)."""
    msgs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, p in enumerate(patches):
        where = f"{RC_PATH}.patches[{i}]"
        # vcluster's pkg/config/validation.go validatePatches: an expression counts when `expression` or
        # `reverseExpression` is not "" (an empty expression would delete the field it names)
        kinds = [k for k, used in (("expression", bool(p.expression or p.reverseExpression)),
                                   ("labels", p.labels is not None), ("reference", p.reference is not None)) if used]
        if len(kinds) > 1:
            msgs.append((where, f"invalid {where}: can only use one of: expression, labels or reference"))
        elif not kinds:
            msgs.append((where, f"invalid {where}: need to use one of: expression, labels or reference"))
        if p.path in seen:
            msgs.append((f"{where}.path", f'invalid {where}: have the same path "{p.path}"'))
        seen.add(p.path)
        try:
            segments = parse_path(p.path)
        except PathError as e:
            msgs.append((f"{where}.path", f"invalid {where}.path: {e}"))
            continue
        problem = unpatchable(segments)
        if problem is not None:
            msgs.append((f"{where}.path", f'invalid {where}.path: "{p.path}" cannot be patched: {problem}'))
    return msgs


def unpatchable(segments: tuple[Segment, ...]) -> str | None:
    """Why a patch at the parsed path `segments` is refused, or None when it may be used.

    The path is compared segment by segment (so `metadata["name"]`, `["apiVersion"]` and `*.name` are the
    fields they name), against the fields a patch may not write: the name, namespace, apiVersion and kind
    (names are the same on both sides, behaviour.md section 2) and the metadata the virtual copy never takes
    from the host (NOT_COPIED_META). A path that holds one of them (`metadata`, `*`, `metadata.*`: the whole
    object or its metadata) is refused too: its result would replace them.

    Returns:
        The reason, to follow `"<path>" cannot be patched: `; None when the path is allowed.
    """
    for field in UNPATCHABLE_PATHS:
        target = parse_path(field)
        if reaches(segments, target):
            exact = len(segments) == len(target) and all(  # the field itself, however quoted
                isinstance(s, Key) and isinstance(t, Key) and s.name == t.name
                for s, t in zip(segments, target, strict=False))
            if not exact:
                return (f"it reaches {field} (RuntimeClasses keep their name and type on both sides): the whole "
                        "object, metadata and wildcards over them cannot be patched; patch fields such as "
                        "metadata.labels or metadata.annotations")
            return "RuntimeClasses keep their name and type on both sides"
    for key in NOT_COPIED_META:
        if reaches(segments, parse_path(f"metadata.{key}")):
            return f"metadata.{key} is never copied to the virtual RuntimeClass (the virtual side owns it)"
    return None


def _toleration_messages(entries: Any) -> list[tuple[str, str]]:
    """Each `sync.toHost.pods.enforceTolerations` entry vcluster's syntax does not accept: a configuration error, as
    vcluster refuses to start on it (`pkg/config/validation.go` `ValidateConfigAndSetDefaults` returns
    `ParseToleration`'s error)."""
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
        errors += _pydantic_errors(e, VClusterConfig)
    errors += _misspelt_sections(document)
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


# gopkg.in/yaml.v3 decode.go (yaml.v2 decode.go alike since v2.2.8, the decoder under sigs.k8s.io/yaml that vcluster
# reads its configuration with): a document whose aliases expand it too much is refused, "document contains excessive
# aliasing". Of the nodes decoded (each one reached, every time an alias leads to it again), at most this share may
# come from alias expansion: 99% up to 400,000 decoded nodes, falling to 10% at 4,000,000.
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000


def allowed_alias_ratio(decode_count: int) -> float:
    """yaml.v3's `allowedAliasRatio`."""
    if decode_count <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decode_count - ALIAS_RATIO_RANGE_LOW) / (ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW))


def alias_problem(root: yaml.Node) -> str | None:
    """Why yaml.v3 would refuse the composed document `root` for its aliases, or None.

    The nodes are counted in document order as yaml.v3's decoder reaches them (`decodeCount`), those reached
    through an alias (`aliasCount`: the anchored node again, with everything under it) too, and the walk stops at
    yaml.v3's limit, `aliasCount > 100 && decodeCount > 1000 && aliasCount/decodeCount > allowedAliasRatio`, so a
    few lines that expand to billions of nodes cost about a thousand steps. An anchor whose value holds an alias of
    itself is refused as yaml.v3 refuses it ("anchor ... value contains itself").
    """
    decoded = aliased = 0
    met: set[int] = set()  # the nodes met where they are written (an anchor's definition)
    open_: set[int] = set()  # the nodes being walked (an alias of one of them is a cycle)
    stack: list[tuple[yaml.Node, int] | int] = [(root, 0)]  # (node, alias depth), or the end of a node's walk
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            open_.discard(item)
            continue
        node, depth = item
        if id(node) in open_:
            mark = node.start_mark
            return f"anchor at line {mark.line + 1}, column {mark.column + 1}: value contains itself"
        if id(node) in met:
            depth += 1  # an alias: the anchored node decoded again
        met.add(id(node))
        decoded += 1
        if depth:
            aliased += 1
        if aliased > 100 and decoded > 1000 and aliased / decoded > allowed_alias_ratio(decoded):
            return "document contains excessive aliasing"
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            continue
        open_.add(id(node))
        stack.append(id(node))
        stack.extend((child, depth) for child in reversed(children))
    return None


def _not_utf8(data: bytes, e: UnicodeDecodeError) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "not UTF-8 but UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8"
    return f"not UTF-8 ({e.reason} at byte {e.start}); save it as UTF-8"


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader refusing a key set twice in one mapping, as vcluster's strict decoding of its config
    refuses it (`config/config.go` `UnmarshalYAMLStrict`: sigs.k8s.io/yaml `UnmarshalStrict`, whose go-yaml says
    `line N: key "k" already set in map`); PyYAML keeps the last value silently, so a policy naming a namespace twice
    lost the first, stricter, entry without a word. Merge keys (`<<`) may be overridden, as YAML's merge allows."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: SafeConstructor's own error follows
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(
                    problem=f'line {key_node.start_mark.line + 1}: key "{key}" already set in map')
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# A plain scalar no PyYAML resolver took (a string to it) that may be something else to Go's YAML gets
# GO_YAML_NON_STRING_TAG, resolved after PyYAML's own: `_construct_scalar_text` reads it as a string, a
# `GoYAMLNonString` where Go's YAML has a number or boolean (resolve.go looks at a scalar starting with a sign, digit
# or `.`, and at its map of words).
_StrictLoader.add_implicit_resolver(GO_YAML_NON_STRING_TAG, re.compile(r"^(?:[-+.0-9][-+._0-9eE]*|[yYnN])$"),
                                    list("-+.0123456789yYnN"))
_StrictLoader.add_constructor(GO_YAML_NON_STRING_TAG, _construct_scalar_text)


def read_yaml(path: str | Path, what: str = "config") -> Any:
    """The YAML document of the file `path` (None for an empty file), as `yaml_document` reads it.

    Raises:
        ConfigError: `cannot read <what> <path>: ...` (missing, unreadable, not UTF-8) or `cannot parse <what>
            <path>: ...` (not YAML, a key set twice, excessive aliasing, nested too deeply).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError([f"cannot read {what} {path}: {e.strerror or e}"]) from None
    return yaml_document(data, path, what)


def yaml_document(data: bytes, path: str | Path, what: str = "config") -> Any:
    """The YAML document of a file's content `data` (None for an empty one): UTF-8 text (a UTF-8 byte-order mark is
    allowed), read with PyYAML's SafeLoader as `yaml.safe_load` reads it, refused when a mapping sets a key twice
    (`_StrictLoader`) or when its aliases expand it as Go's yaml.v3 would not (`alias_problem`). `path` and `what`
    name the file in errors.

    Raises:
        ConfigError: as `read_yaml`.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError([f"cannot read {what} {path}: {_not_utf8(data, e)}"]) from None
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        problem = alias_problem(node) if node is not None else None
        if problem is not None:
            raise ConfigError([f"cannot parse {what} {path}: {problem}"])
        return loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        raise ConfigError([f"cannot parse {what} {path}: {e}"]) from None
    except RecursionError:  # PyYAML composes and constructs recursively
        raise ConfigError([f"cannot parse {what} {path}: the document is nested too deeply"]) from None
    finally:
        loader.dispose()


def load_config(path: str | Path) -> SyncerConfig:
    """Read and validate a vcluster.yaml file (YAML, read with `read_yaml`).

    Raises:
        ConfigError: the file cannot be read or parsed, or the configuration is invalid.
    """
    return parse_config(read_yaml(path))
