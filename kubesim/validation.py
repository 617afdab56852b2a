"""Object validation of the embedded API server, after kube-apiserver's, for every field the syncer writes.

Each rule names the Kubernetes function it follows. Sources:
- `k8s.io/apimachinery/pkg/api/validation/objectmeta.go`: `ValidateObjectMeta` (name, generateName),
  `ValidateAnnotations` (keys, 256 KiB total), `ValidateObjectMetaUpdate`;
- `k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go`: `ValidateLabels`;
- `pkg/apis/core/validation/validation.go` (kubernetes/kubernetes): `ValidatePodCreate`/`ValidatePodSpec`
  (`validateVolumes`, `validateContainers`/`validateContainerCommon`, `validateVolumeMounts`,
  `ValidateEnv`/`validateEnvVarValueFrom`/`validateObjectFieldSelector`, `validateEnvFrom`,
  `validateRestartPolicy`, `validateDNSPolicy`, `validatePodDNSConfig`, `ValidateTolerations`,
  `activeDeadlineSeconds`, `hostname`/`subdomain` as `ValidateDNS1123Label`,
  `validateImagePullSecrets`, the label keys of `validatePodAffinityTerm` and `validateTopologySpreadConstraints`:
  `validateMatchLabelKeysAndMismatchLabelKeys`, `validateMatchLabelKeysInTopologySpread` before 1.34), and
  `ValidatePodUpdate` (the new pod validated whole as on create, `validatePodMetadataAndSpec`, then only images,
  a lowered `activeDeadlineSeconds`, added tolerations, removed scheduling gates and a negative
  `terminationGracePeriodSeconds` set to 1 may change), `ValidatePodStatusUpdate`, `ValidateSecret`,
  `ValidateSecretUpdate`, `ValidateContainerResourceRequirements` (for RuntimeClass overhead);
- `pkg/apis/core/validation/events.go`: `ValidateEventCreate`/`ValidateEventUpdate` for a v1 request
  (`legacyValidateEvent`), then apimachinery `path.ValidatePathSegmentName` for the name;
- `pkg/apis/node/validation/validation.go`: `ValidateRuntimeClass` (handler, a DNS-1123 label, immutable; overhead;
  scheduling);
- decoding (`decode_errors`, `decode`): apimachinery `resource.Quantity` (kubesim/quantity.py), encoding/base64,
  `SetDefaults_Secret`, the pod conversion of a negative grace period (kubernetes#115606).

Messages are the real ones (see `fielderrors.py`); a refused request is a 422 whose message lists the
errors as kube-apiserver's `errors.NewInvalid` does. The version modelled is the one `/version`
reports (1.32): environment variable names follow the relaxed rule (RelaxedEnvironmentVariableValidation,
on by default since 1.32).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
from typing import Any

from kubesim import features, qos, quantity
from kubesim import fielderrors as fe
from kubesim.fielderrors import FieldError
from syncer.config.selector import label_value_errors, qualified_name_errors

Obj = dict[str, Any]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # bytes, ValidateAnnotationsSize
MAX_INT32 = 2**31 - 1
MAX_DNS_NAMESERVERS = 3  # validatePodDNSConfig
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_LIST_CHARS = 2048

RESTART_POLICIES = ["Always", "Never", "OnFailure"]
DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
TOLERATION_OPERATORS = ["Equal", "Exists"]
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
# validateObjectFieldSelector: the downward-API paths an env var's fieldRef may use (v1).
ENV_FIELD_PATHS = ["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
                   "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"]
# validateDownwardAPIVolumeFile: the paths a downwardAPI volume item may use.
VOLUME_FIELD_PATHS = ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
                      "metadata.uid"]
# The volume sources of core/v1 VolumeSource (validateVolumeSource: exactly one).
VOLUME_SOURCES = ("hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
                  "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                  "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
                  "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral",
                  "image")
POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _dicts(value: Any) -> list[tuple[int, Obj]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------- metadata

def decode_errors(kind: str, obj: Obj) -> str | None:
    """What a typed decode of the object's metadata would refuse (labels and annotations are
    `map[string]string`), as the `json: cannot unmarshal ...` text, or None."""
    meta = obj.get("metadata") or {}
    for k in ("labels", "annotations"):
        m = meta.get(k)
        if m is None:
            continue
        if not isinstance(m, dict):
            return f"json: cannot unmarshal {_json_kind(m)} into Go struct field ObjectMeta.metadata.{k} of type " \
                   "map[string]string"
        for v in m.values():
            if not isinstance(v, str):
                return f"json: cannot unmarshal {_json_kind(v)} into Go struct field ObjectMeta.metadata.{k} of " \
                       "type string"
    if kind == "RuntimeClass":
        return _runtime_class_decode_error(obj.get("overhead"), obj.get("scheduling"))
    if kind == "Pod":
        spec = obj.get("spec")
        return _resource_list_decode_error(spec.get("overhead"), "PodSpec.spec.overhead") if isinstance(
            spec, dict) else None
    if kind == "Secret":
        return _secret_decode_error(obj.get("data"))
    return None


def _runtime_class_decode_error(overhead: Any, scheduling: Any) -> str | None:
    """node/v1 `Overhead.podFixed` is a `ResourceList`: each value a `resource.Quantity`, decoded by its
    `UnmarshalJSON` (kubesim/quantity.py), whose error is the decode's. `overhead` and `scheduling` themselves are
    `*Overhead` and `*Scheduling`: a value other than an object or null is refused as encoding/json refuses it
    (`RuntimeClass.overhead of type v1.Overhead`)."""
    fixed = overhead.get("podFixed") if isinstance(overhead, dict) else None
    if isinstance(fixed, dict) and (quantity_error := _resource_list_decode_error(fixed, "")):
        return quantity_error  # a Quantity's UnmarshalJSON error ends the decode; a type mismatch is kept, and the
        # first one returned at its end (encoding/json `d.saveError`)
    for field, value in (("overhead", overhead), ("scheduling", scheduling)):
        if value is not None and not isinstance(value, dict):
            return f"json: cannot unmarshal {_json_kind(value)} into Go struct field RuntimeClass.{field} of type " \
                   f"v1.{field.capitalize()}"
    return _resource_list_decode_error(fixed, "Overhead.overhead.podFixed")


def _resource_list_decode_error(fixed: Any, field: str) -> str | None:
    """A `ResourceList` (`field` the Go struct field the JSON decoder names) decoded: each value a `resource.Quantity`
    read by its `UnmarshalJSON` (kubesim/quantity.py), whose error is the decode's."""
    if fixed is None:
        return None
    if not isinstance(fixed, dict):
        return f"json: cannot unmarshal {_json_kind(fixed)} into Go struct field {field} of type v1.ResourceList"
    for value in fixed.values():
        try:
            quantity.from_json(value)
        except quantity.QuantityError as e:
            return str(e)
    return None


def _secret_decode_error(data: Any) -> str | None:
    """core/v1 `Secret.data` is a `map[string][]byte`: each value base64 (encoding/json decodes a `[]byte` with
    `base64.StdEncoding`, whose `CorruptInputError` is the decode's: `illegal base64 data at input byte N`)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        return f"json: cannot unmarshal {_json_kind(data)} into Go struct field Secret.data of type map[string][]uint8"
    for value in data.values():
        if value is None:
            continue
        if not isinstance(value, str):
            return f"json: cannot unmarshal {_json_kind(value)} into Go struct field Secret.data of type []uint8"
        try:
            go_base64_length(value)
        except ValueError as e:
            return str(e)
    return None


_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = (ord("\n"), ord("\r"))


def go_base64_length(text: str) -> int:
    """The length of what Go's `base64.StdEncoding.Decode` (encoding/base64 `decodeQuantum`) decodes from `text`
    (its UTF-8 bytes): newlines skipped, `=` padding required.

    Raises:
        ValueError: `illegal base64 data at input byte <offset>`, the offset Go's CorruptInputError names.
    """
    src = text.encode()
    n = si = 0
    end = len(src)

    def corrupt(offset: int) -> ValueError:
        return ValueError(f"illegal base64 data at input byte {offset}")

    while si < end:
        j, dlen = 0, 4
        while j < 4:
            if si == end:
                if j == 0:
                    return n
                raise corrupt(si - j)
            c = src[si]
            si += 1
            if c in _BASE64:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != ord("=") or j < 2:
                raise corrupt(si - 1)
            if j == 2:  # "==" expected: the second one, after any newlines
                while si < end and src[si] in _NEWLINES:
                    si += 1
                if si == end:
                    raise corrupt(end)
                if src[si] != ord("="):
                    raise corrupt(si - 1)
                si += 1
            while si < end and src[si] in _NEWLINES:
                si += 1
            if si < end:
                raise corrupt(si)  # trailing garbage
            dlen = j
            break
        n += dlen - 1
    return n



def round_pod_overhead(pod: Obj) -> None:
    """SetDefaults_ResourceList (pkg/apis/core/v1/defaults.go, for PodSpec.Overhead in the generated
    SetObjectDefaults_Pod) on a pod (mutated): each overhead quantity rounded up to milli, kept as written when
    nothing was lost; an empty overhead dropped (`json:"overhead,omitempty"`)."""
    spec = pod.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("overhead"), dict):
        spec["overhead"] = {k: str(quantity.from_json(v).round_up(-3)) for k, v in spec["overhead"].items()}
        if not spec["overhead"]:
            del spec["overhead"]

def decode(kind: str, obj: Obj) -> None:
    """What kube-apiserver's decoding (defaulting and conversion) does to an object it accepts, in place:
    - a RuntimeClass's `overhead.podFixed` quantities are stored as `resource.Quantity` writes them back
      (kubesim/quantity.py: `"0.5"` as `"500m"`, `"1000m"` as `"1"`, `"1Gi"` as it is; node/v1 has no defaulter,
      so no rounding to milli as core/v1's `SetDefaults_ResourceList` does); a null `overhead` or `scheduling` (Go
      pointers with `omitempty`) is absent;
    - a Secret without a `type` is `Opaque` (`SetDefaults_Secret`, pkg/apis/core/v1/defaults.go);
    - a Pod's `spec.overhead` quantities rounded up to milli (`SetDefaults_ResourceList`) and written as
      `resource.Quantity` writes them;
    - a Pod's negative `spec.terminationGracePeriodSeconds` is 1 (since 1.27, kubernetes#115606: the pod conversion
      `Convert_v1_Pod_To_core_Pod`, later its defaulting), on create and on every update.
    Call it after `decode_errors` found nothing."""
    if kind == "RuntimeClass":
        for pointer in ("overhead", "scheduling"):  # *Overhead, *Scheduling with omitempty: null is written back absent
            if pointer in obj and obj[pointer] is None:
                del obj[pointer]
        overhead = obj.get("overhead")
        if isinstance(overhead, dict) and isinstance(overhead.get("podFixed"), dict):
            overhead["podFixed"] = {k: quantity.stored(v) for k, v in overhead["podFixed"].items()}
    elif kind == "Secret":
        if not obj.get("type"):
            obj["type"] = "Opaque"
    elif kind == "Pod":
        spec = obj.get("spec")
        round_pod_overhead(obj)
        if isinstance(spec, dict):
            grace = spec.get("terminationGracePeriodSeconds")
            if isinstance(grace, int) and not isinstance(grace, bool) and grace < 0:
                spec["terminationGracePeriodSeconds"] = 1


def _json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "string"


def validate_labels(labels: Any, field: str = "metadata.labels") -> list[FieldError]:
    """`ValidateLabels`: each key a qualified name, each value a label value."""
    errs: list[FieldError] = []
    for k, v in (labels or {}).items():
        errs += [fe.invalid(field, k, m) for m in qualified_name_errors(k)]
        errs += [fe.invalid(field, v, m) for m in label_value_errors(str(v))]
    return errs


def validate_annotations(annotations: Any, field: str = "metadata.annotations") -> list[FieldError]:
    """`ValidateAnnotations`: keys are qualified names (checked lower-cased); keys and values together
    at most 256 KiB."""
    errs: list[FieldError] = []
    total = 0
    for k, v in (annotations or {}).items():
        errs += [fe.invalid(field, k, m) for m in qualified_name_errors(k.lower())]
        total += len(k.encode()) + len(str(v).encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(fe.too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_object_meta(meta: Obj, *, name_is_label: bool = False) -> list[FieldError]:
    """`ValidateObjectMeta`: the name (a DNS-1123 subdomain, or a label where the kind says so), labels
    and annotations."""
    errs: list[FieldError] = []
    name = meta.get("name")
    if not name:
        errs.append(fe.required("metadata.name", "name or generateName is required"))
    else:
        check = fe.dns1123_label_errors if name_is_label else fe.dns1123_subdomain_errors
        errs += [fe.invalid("metadata.name", name, m) for m in check(str(name))]
    return (errs + validate_labels(meta.get("labels")) + validate_annotations(meta.get("annotations"))
            + validate_owner_references(meta.get("ownerReferences")))


def validate_owner_references(refs: Any) -> list[FieldError]:
    """apimachinery's `validateOwnerReference`: each reference names an apiVersion with a version, a kind, a
    name and a uid (the path is the list's, without an index, as the real messages have it)."""
    errs: list[FieldError] = []
    for _, ref in _dicts(refs):
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            errs.append(fe.invalid("metadata.ownerReferences.apiVersion", api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                errs.append(fe.invalid(f"metadata.ownerReferences.{key}", str(ref.get(key) or ""), "must not be empty"))
    return errs


# ---------------------------------------------------------------------------------------------- pods

def validate_pod(pod: Obj, minor: int = features.DEFAULT_MINOR) -> list[FieldError]:
    """`ValidatePodCreate` on a server of Kubernetes 1.`minor`: `validate_pod_metadata_and_spec`, then no ephemeral
    containers: they are added through `pods/ephemeralcontainers` only ("cannot be set on create")."""
    spec = pod.get("spec") or {}
    errs = validate_pod_metadata_and_spec(pod, minor)
    if spec.get("ephemeralContainers"):
        errs.append(fe.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    return errs


def validate_pod_metadata_and_spec(pod: Obj, minor: int = features.DEFAULT_MINOR) -> list[FieldError]:
    """`validatePodMetadataAndSpec`, which `ValidatePodCreate` and `ValidatePodUpdate` both run: object metadata,
    `ValidatePodSpec` for the fields the syncer writes, and `validateContainersOnlyForPod` (an image without
    leading or trailing whitespace)."""
    spec = pod.get("spec") or {}
    errs = validate_object_meta(pod.get("metadata") or {}) + validate_pod_spec(spec, "spec", minor)
    for field in ("containers", "initContainers"):
        for i, c in _dicts(spec.get(field)):
            image = c.get("image")
            if isinstance(image, str) and image.strip(quantity.GO_SPACE) != image:  # strings.TrimSpace
                errs.append(fe.invalid(f"spec.{field}[{i}].image", image, "must not have leading or trailing "
                                                                         "whitespace"))
    return errs


def validate_pod_spec(spec: Obj, path: str, minor: int = features.DEFAULT_MINOR) -> list[FieldError]:
    """`ValidatePodSpec` (the parts the syncer can produce) on a server of Kubernetes 1.`minor`."""
    volumes, errs = _validate_volumes(spec.get("volumes"), f"{path}.volumes")
    errs += _validate_containers(spec, volumes, path)
    restart = spec.get("restartPolicy")
    if restart is not None and restart not in RESTART_POLICIES:
        errs.append(fe.not_supported(f"{path}.restartPolicy", restart, RESTART_POLICIES))
    errs += _validate_dns(spec, path)
    for f in ("hostname", "subdomain"):
        if spec.get(f):
            errs += fe.dns1123_label(f"{path}.{f}", str(spec[f]))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and not (1 <= ads <= MAX_INT32):
        errs.append(fe.invalid(f"{path}.activeDeadlineSeconds", ads, fe.inclusive_range_error(1, MAX_INT32)))
    errs += validate_tolerations(spec.get("tolerations"), f"{path}.tolerations")
    for i, ref in _dicts(spec.get("imagePullSecrets")):
        if not ref.get("name"):
            errs.append(fe.required(f"{path}.imagePullSecrets[{i}].name"))
    if spec.get("nodeSelector"):
        errs += validate_labels(spec["nodeSelector"], f"{path}.nodeSelector")
    for f in ("serviceAccountName", "runtimeClassName", "priorityClassName"):
        if spec.get(f):
            errs += fe.dns1123_subdomain(f"{path}.{f}", str(spec[f]))
    return errs + _validate_affinity_label_keys(spec, path) + _validate_spread_label_keys(spec, path, minor)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _label_key_names(path: str, keys: list[str], selector: Any) -> list[FieldError]:
    """`validateLabelKeys`: label keys only beside a label selector, each a qualified name (`ValidateLabelName`)."""
    if not keys:
        return []
    if not isinstance(selector, dict):
        return [fe.forbidden(path, "must not be specified when labelSelector is not set")]
    return [fe.invalid(f"{path}[{i}]", key, m) for i, key in enumerate(keys) for m in qualified_name_errors(key)]


def validate_label_keys(path: str, match_keys: Any, mismatch_keys: Any, selector: Any) -> list[FieldError]:
    """`ValidateMatchLabelKeysAndMismatchLabelKeys` (pkg/apis/core/validation) for the term or constraint at `path`:
    the keys are label names beside a selector; a `matchLabelKeys` key the selector names again after a requirement
    on it (the API server has folded the keys in by then: `mutatePodAffinity`) is refused at `<path>[<index of the
    key>]` (sic: the path lacks `.matchLabelKeys`), "exists in both matchLabelKeys and labelSelector"; and no key is in
    both lists."""
    match, mismatch = _strings(match_keys), _strings(mismatch_keys)
    errs = _label_key_names(f"{path}.matchLabelKeys", match, selector)
    errs += _label_key_names(f"{path}.mismatchLabelKeys", mismatch, selector)
    if isinstance(selector, dict):
        index = {key: i for i, key in enumerate(match)}
        seen = set(selector.get("matchLabels") or {}) if isinstance(selector.get("matchLabels"), dict) else set()
        for _, expr in _dicts(selector.get("matchExpressions")):
            key = expr.get("key")
            if key in index and key in seen:
                errs.append(fe.invalid(f"{path}[{index[key]}]", key, "exists in both matchLabelKeys and labelSelector"))
            seen.add(key)
    errs += [fe.invalid(f"{path}.matchLabelKeys[{i}]", key, "exists in both matchLabelKeys and mismatchLabelKeys")
             for i, key in enumerate(match) if key in mismatch]
    return errs


def _validate_affinity_label_keys(spec: Obj, path: str) -> list[FieldError]:
    """`validateAffinity` -> `validatePodAffinityTerm`'s label-key rule for every pod (anti-)affinity term, required
    (`...requiredDuringSchedulingIgnoredDuringExecution[i]`) then preferred (`...[j].podAffinityTerm`)."""
    affinity = spec.get("affinity")
    errs: list[FieldError] = []
    for kind in features.AFFINITY_KINDS:
        rules = affinity.get(kind) if isinstance(affinity, dict) else None
        if not isinstance(rules, dict):
            continue
        at = f"{path}.affinity.{kind}"
        terms = [(f"{at}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", t)
                 for i, t in _dicts(rules.get("requiredDuringSchedulingIgnoredDuringExecution"))]
        terms += [(f"{at}.preferredDuringSchedulingIgnoredDuringExecution[{j}].podAffinityTerm", w["podAffinityTerm"])
                  for j, w in _dicts(rules.get("preferredDuringSchedulingIgnoredDuringExecution"))
                  if isinstance(w.get("podAffinityTerm"), dict)]
        for where, term in terms:
            errs += validate_label_keys(where, term.get("matchLabelKeys"), term.get("mismatchLabelKeys"),
                                        term.get("labelSelector"))
    return errs


def _validate_spread_label_keys(spec: Obj, path: str, minor: int) -> list[FieldError]:
    """`validateTopologySpreadConstraints`' label-key rule: from 1.34 (MatchLabelKeysInPodTopologySpreadSelectorMerge,
    the keys folded into the selector on create) `ValidateMatchLabelKeysAndMismatchLabelKeys` at the constraint's
    path, as for affinity terms; before, `validateMatchLabelKeysInTopologySpread` at `...matchLabelKeys`: a key the
    selector names at all is refused (the scheduler adds it)."""
    errs: list[FieldError] = []
    for i, c in _dicts(spec.get("topologySpreadConstraints")):
        at, selector = f"{path}.topologySpreadConstraints[{i}]", c.get("labelSelector")
        if minor >= features.SPREAD_SELECTOR_MERGE:
            errs += validate_label_keys(at, c.get("matchLabelKeys"), None, selector)
            continue
        keys, where = _strings(c.get("matchLabelKeys")), f"{at}.matchLabelKeys"
        if not keys:
            continue
        named: set[Any] = set()
        if isinstance(selector, dict):
            named.update(selector.get("matchLabels") or {})
            named.update(e.get("key") for _, e in _dicts(selector.get("matchExpressions")))
        else:
            errs.append(fe.forbidden(where, "must not be specified when labelSelector is not set"))
        for k, key in enumerate(keys):
            errs += [fe.invalid(f"{where}[{k}]", key, m) for m in qualified_name_errors(key)]
            if key in named:
                errs.append(fe.invalid(f"{where}[{k}]", key, "exists in both matchLabelKeys and labelSelector"))
    return errs


def _unique_label_name(name: Any, field: str, seen: set[str]) -> list[FieldError]:
    """A required name that is a DNS-1123 label unique among `seen` (volume and container names); adds it."""
    if not name:
        return [fe.required(field)]
    errs = fe.dns1123_label(field, str(name))
    if name in seen:
        errs.append(fe.duplicate(field, name))
    seen.add(str(name))
    return errs


def _validate_volumes(volumes: Any, path: str) -> tuple[set[str], list[FieldError]]:
    """`validateVolumes`: names required, DNS-1123 labels, unique; exactly one volume source;
    `validateProjectedVolumeSource`/`validateDownwardAPIVolumeSource` for the items the syncer rewrites."""
    names: set[str] = set()
    errs: list[FieldError] = []
    for i, vol in _dicts(volumes):
        at = f"{path}[{i}]"
        errs += _unique_label_name(vol.get("name"), f"{at}.name", names)
        sources = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if not sources:
            errs.append(fe.required(at, "must specify a volume type"))
        elif len(sources) > 1:
            errs.append(fe.forbidden(f"{at}.{sources[1]}", "may not specify more than 1 volume type"))
        if isinstance(vol.get("downwardAPI"), dict):
            for j, item in _dicts(vol["downwardAPI"].get("items")):
                errs += _downward_file(item, f"{at}.downwardAPI.items[{j}]")
        if isinstance(vol.get("projected"), dict):
            for j, src in _dicts(vol["projected"].get("sources")):
                where = f"{at}.projected.sources[{j}]"
                if isinstance(src.get("downwardAPI"), dict):
                    for k, item in _dicts(src["downwardAPI"].get("items")):
                        errs += _downward_file(item, f"{where}.downwardAPI.items[{k}]")
                token = src.get("serviceAccountToken")
                if isinstance(token, dict):
                    errs += _token_projection(token, f"{where}.serviceAccountToken")
    return names, errs


def _downward_file(item: Obj, at: str) -> list[FieldError]:
    """`validateDownwardAPIVolumeFile`: a path and exactly one of fieldRef / resourceFieldRef."""
    errs = [] if item.get("path") else [fe.required(f"{at}.path")]
    ref = item.get("fieldRef")
    if isinstance(ref, dict):
        errs += _field_selector(ref, f"{at}.fieldRef", VOLUME_FIELD_PATHS)
        if item.get("resourceFieldRef") is not None:
            errs.append(fe.invalid(at, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif item.get("resourceFieldRef") is None:
        errs.append(fe.required(at, "one of fieldRef and resourceFieldRef is required"))
    return errs


def _token_projection(token: Obj, at: str) -> list[FieldError]:
    """`validateProjectionSources` for serviceAccountToken: a path; an expiry of at least 10 minutes and
    at most 2^32 seconds."""
    errs = [] if token.get("path") else [fe.required(f"{at}.path")]
    exp = token.get("expirationSeconds")
    if exp is not None:
        if exp < 600:
            errs.append(fe.invalid(f"{at}.expirationSeconds", exp, "may not specify a duration less than 10 minutes"))
        elif exp > 1 << 32:
            errs.append(fe.invalid(f"{at}.expirationSeconds", exp,
                                   "may not specify a duration larger than 2^32 seconds"))
    return errs


def _field_selector(ref: Obj, at: str, supported: list[str]) -> list[FieldError]:
    """`validateObjectFieldSelector`: a fieldPath among the supported ones; `metadata.labels['k']` and
    `metadata.annotations['k']` with a valid key."""
    path = ref.get("fieldPath")
    if not path:
        return [fe.required(f"{at}.fieldPath")]
    for prefix, check in (("metadata.labels", qualified_name_errors),
                          ("metadata.annotations", lambda k: qualified_name_errors(k.lower()))):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return [fe.invalid(f"{at}.fieldPath", path, m) for m in check(path[len(prefix) + 2:-2])]
    if path not in supported:
        return [fe.not_supported(f"{at}.fieldPath", path, supported)]
    return []


def _validate_containers(spec: Obj, volumes: set[str], path: str) -> list[FieldError]:
    """`validateInitContainers`/`validateContainers`/`validateContainerCommon`: at least one container;
    names required, DNS-1123 labels, unique across init and app containers; an image; env, envFrom and
    volume mounts."""
    errs: list[FieldError] = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errs.append(fe.required(f"{path}.containers"))
    names: set[str] = set()
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in _dicts(spec.get(field)):
            at = f"{path}.{field}[{i}]"
            errs += _unique_label_name(c.get("name"), f"{at}.name", names)
            if not c.get("image") and field != "ephemeralContainers":
                errs.append(fe.required(f"{at}.image"))
            errs += validate_env(c.get("env"), f"{at}.env")
            errs += _validate_env_from(c.get("envFrom"), f"{at}.envFrom")
            errs += _validate_mounts(c.get("volumeMounts"), volumes, f"{at}.volumeMounts")
            if field == "ephemeralContainers":
                errs += _validate_ephemeral_only(c, at)
    return errs


# What an app container may have and an ephemeral one may not, in the order of the fields of kubernetes'
# EphemeralContainerCommon (validateEphemeralContainers' validateFieldAllowList)
EPHEMERAL_FORBIDDEN = ("ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe", "readinessProbe",
                       "startupProbe", "lifecycle")


def _validate_ephemeral_only(c: Obj, at: str) -> list[FieldError]:
    """`validateEphemeralContainers`' own rules: none of EPHEMERAL_FORBIDDEN, and no volume mount `subPath` or
    `subPathExpr` (bind mounts that would outlive the container), each "cannot be set for an Ephemeral Container"."""
    detail = "cannot be set for an Ephemeral Container"
    errs = [fe.forbidden(f"{at}.{k}", detail) for k in EPHEMERAL_FORBIDDEN if c.get(k)]
    for i, vm in _dicts(c.get("volumeMounts")):
        errs += [fe.forbidden(f"{at}.volumeMounts[{i}].{k}", detail) for k in ("subPath", "subPathExpr") if vm.get(k)]
    return errs


def validate_env(env: Any, path: str) -> list[FieldError]:
    """`ValidateEnv`: names required and printable ASCII without `=` (relaxed rule, 1.32); `valueFrom`
    with exactly one source and no `value`; key refs with a name and key; fieldRefs among the
    downward-API paths (`validateEnvVarValueFrom`)."""
    errs: list[FieldError] = []
    for i, ev in _dicts(env):
        at = f"{path}[{i}]"
        name = ev.get("name")
        if not name:
            errs.append(fe.required(f"{at}.name"))
        elif any(ord(ch) > 126 or ord(ch) < 32 or ch == "=" for ch in name):
            errs.append(fe.invalid(f"{at}.name", name, "a valid environment variable name must consist only of "
                                                       "printable ASCII characters other than '='"))
        vf = ev.get("valueFrom")
        if not isinstance(vf, dict):
            continue
        sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
                   if vf.get(k) is not None]
        if not sources:
            errs.append(fe.invalid(f"{at}.valueFrom", "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                                          "`configMapKeyRef` or `secretKeyRef`"))
        elif len(sources) > 1:
            errs.append(fe.invalid(f"{at}.valueFrom", "", "may not have more than one field specified at a time"))
        if ev.get("value") and sources:
            errs.append(fe.invalid(f"{at}.valueFrom", "", "may not be specified when `value` is not empty"))
        if isinstance(vf.get("fieldRef"), dict):
            errs += _field_selector(vf["fieldRef"], f"{at}.valueFrom.fieldRef", ENV_FIELD_PATHS)
        for ref in ("configMapKeyRef", "secretKeyRef"):
            r = vf.get(ref)
            if isinstance(r, dict):
                if not r.get("key"):
                    errs.append(fe.required(f"{at}.valueFrom.{ref}.key"))
                if not r.get("name"):
                    errs.append(fe.required(f"{at}.valueFrom.{ref}.name"))
                else:
                    errs += fe.dns1123_subdomain(f"{at}.valueFrom.{ref}.name", r["name"])
    return errs


def _validate_env_from(env_from: Any, path: str) -> list[FieldError]:
    """`validateEnvFrom`: one of configMapRef / secretRef, each with a valid name."""
    errs: list[FieldError] = []
    for i, src in _dicts(env_from):
        at = f"{path}[{i}]"
        refs = [k for k in ("configMapRef", "secretRef") if src.get(k) is not None]
        if len(refs) != 1:
            errs.append(fe.invalid(at, "", "must specify one of: `configMapRef` or `secretRef`" if not refs
                                   else "may not have more than one field specified at a time"))
        for ref in refs:
            name = (src[ref] or {}).get("name") if isinstance(src[ref], dict) else None
            if not name:
                errs.append(fe.required(f"{at}.{ref}.name"))
            else:
                errs += fe.dns1123_subdomain(f"{at}.{ref}.name", name)
    return errs


def _validate_mounts(mounts: Any, volumes: set[str], path: str) -> list[FieldError]:
    """`ValidateVolumeMounts`: a name of a pod volume, a mountPath, unique mount paths."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, m in _dicts(mounts):
        at = f"{path}[{i}]"
        name = m.get("name")
        if not name:
            errs.append(fe.required(f"{at}.name"))
        elif name not in volumes:
            errs.append(fe.not_found(f"{at}.name", name))
        mp = m.get("mountPath")
        if not mp:
            errs.append(fe.required(f"{at}.mountPath"))
        elif mp in seen:
            errs.append(fe.invalid(f"{at}.mountPath", mp, "must be unique"))
        else:
            seen.add(mp)
    return errs


def _validate_dns(spec: Obj, path: str) -> list[FieldError]:
    """`validateDNSPolicy` and `validatePodDNSConfig`."""
    errs: list[FieldError] = []
    policy = spec.get("dnsPolicy")
    if policy is not None and policy not in DNS_POLICIES:
        errs.append(fe.not_supported(f"{path}.dnsPolicy", policy, DNS_POLICIES))
    cfg = spec.get("dnsConfig")
    if policy == "None" and cfg is None:
        errs.append(fe.required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"))
    if not isinstance(cfg, dict):
        return errs
    at = f"{path}.dnsConfig"
    servers = cfg.get("nameservers") or []
    if policy == "None" and not servers:
        errs.append(fe.required(f"{at}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` "
                                                      "is None"))
    if len(servers) > MAX_DNS_NAMESERVERS:
        errs.append(fe.invalid(f"{at}.nameservers", servers,
                               f"must not have more than {MAX_DNS_NAMESERVERS} nameservers"))
    for i, ns in enumerate(servers):
        try:
            ipaddress.ip_address(str(ns))
        except ValueError:
            errs.append(fe.invalid(f"{at}.nameservers[{i}]", ns, "must be a valid IP address"))
    searches = cfg.get("searches") or []
    if len(searches) > MAX_DNS_SEARCH_PATHS:
        errs.append(fe.invalid(f"{at}.searches", searches, f"must not have more than {MAX_DNS_SEARCH_PATHS} "
                                                            "search paths"))
    if len(" ".join(str(s) for s in searches)) > MAX_DNS_SEARCH_LIST_CHARS:
        errs.append(fe.invalid(f"{at}.searches", searches, f"must not have more than {MAX_DNS_SEARCH_LIST_CHARS} "
                                                            "characters (including spaces) in the search list"))
    for i, s in enumerate(searches):
        s = str(s)
        errs += fe.dns1123_subdomain(f"{at}.searches[{i}]", s[:-1] if s.endswith(".") else s)
    for i, opt in _dicts(cfg.get("options")):
        if not opt.get("name"):
            errs.append(fe.required(f"{at}.options[{i}].name"))
    return errs


def validate_tolerations(tolerations: Any, path: str) -> list[FieldError]:
    """`ValidateTolerations`: key a qualified name (empty only with `Exists`); `Equal` values are label
    values, `Exists` has none; effect one of the taint effects; tolerationSeconds only with NoExecute."""
    errs: list[FieldError] = []
    for i, t in _dicts(tolerations):
        at = f"{path}[{i}]"
        key, op, value, effect = t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect")
        if key:
            errs += [fe.invalid(f"{at}.key", key, m) for m in qualified_name_errors(key)]
        elif op != "Exists":
            errs.append(fe.invalid(f"{at}.operator", op, 'operator must be Exists when `key` is empty, which means '
                                                         '"match all values and all keys"'))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(fe.invalid(f"{at}.effect", effect or "", "effect must be 'NoExecute' when "
                                                                 "`tolerationSeconds` is set"))
        if op in ("", "Equal"):
            errs += [fe.invalid(f"{at}.value", value, m) for m in label_value_errors(value)]
        elif op == "Exists":
            if value:
                errs.append(fe.invalid(f"{at}.operator", t.get("value"), "value must be empty when `operator` is "
                                                                         "'Exists'"))
        else:
            errs.append(fe.not_supported(f"{at}.operator", op, TOLERATION_OPERATORS))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(fe.not_supported(f"{at}.effect", effect, TAINT_EFFECTS))
    return errs


TERMINATION_GRACE = "terminationGracePeriodSeconds"
_MUNGED = ("activeDeadlineSeconds", "tolerations", "schedulingGates")  # checked on their own by ValidatePodUpdate


def _updatable_spec(spec: Obj, old: Obj) -> Obj:
    """The spec as `ValidatePodUpdate` munges it before comparing it with the old one (`old`): images, the
    activeDeadlineSeconds, tolerations and scheduling gates masked out, and a terminationGracePeriodSeconds of 1 taken
    as the old one when that was negative (the only change of it allowed)."""
    out = {k: v for k, v in spec.items() if k not in _MUNGED}
    for field in ("containers", "initContainers"):
        if isinstance(out.get(field), list):
            out[field] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                          for c in out[field]]
    grace = old.get(TERMINATION_GRACE)
    if isinstance(grace, int) and grace < 0 and out.get(TERMINATION_GRACE) == 1:
        out[TERMINATION_GRACE] = grace
    return out


def _container_updates(new: Any, old: Any, path: str) -> tuple[list[FieldError], bool]:
    """`ValidateContainerUpdates`: as many containers as before (else `pod updates may not add or remove containers`,
    and the update's validation stops there), each with an image without surrounding whitespace."""
    new_list = new if isinstance(new, list) else []
    if len(new_list) != len(old if isinstance(old, list) else []):
        return [fe.forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, c in _dicts(new_list):
        image = c.get("image")
        if not image:
            errs.append(fe.required(f"{path}[{i}].image"))
        elif isinstance(image, str) and image.strip(quantity.GO_SPACE) != image:  # strings.TrimSpace
            errs.append(fe.invalid(f"{path}[{i}].image", image, "must not have leading or trailing whitespace"))
    return errs, False


APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"  # v1.DeprecatedAppArmorBeta...
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"  # core.MirrorPodAnnotationKey


def pod_specific_annotation_updates(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidatePodSpecificAnnotationUpdates` (pkg/apis/core/validation/validation.go), part of `ValidatePodUpdate`:
    a pod's AppArmor annotations (`container.apparmor.security.beta.kubernetes.io/<container>`) and its mirror pod
    annotation may not be added, removed or changed once it exists."""
    new_ann = (new.get("metadata") or {}).get("annotations") or {}
    old_ann = (old.get("metadata") or {}).get("annotations") or {}
    errs: list[FieldError] = []
    for k, old_value in old_ann.items():
        if k in new_ann and new_ann[k] == old_value:
            continue
        if k.startswith(APPARMOR_ANNOTATION_PREFIX):
            errs.append(fe.forbidden(f"metadata.annotations[{k}]", "may not remove or update AppArmor annotations"))
        if k == MIRROR_POD_ANNOTATION:
            errs.append(fe.forbidden(f"metadata.annotations[{k}]", "may not remove or update mirror pod annotation"))
    for k in new_ann:
        if k in old_ann:
            continue
        if k.startswith(APPARMOR_ANNOTATION_PREFIX):
            errs.append(fe.forbidden(f"metadata.annotations[{k}]", "may not add AppArmor annotations"))
        if k == MIRROR_POD_ANNOTATION:
            errs.append(fe.forbidden(f"metadata.annotations[{k}]", "may not add mirror pod annotation"))
    return errs


def validate_pod_update(new: Obj, old: Obj, minor: int = features.DEFAULT_MINOR) -> list[FieldError]:
    """`ValidatePodUpdate` on a server of Kubernetes 1.`minor`: the new pod validated whole as on create
    (`validate_pod_metadata_and_spec`), the pod-specific annotations as `pod_specific_annotation_updates`; as many
    containers and init containers as before, each with an image (`ValidateContainerUpdates`); then
    `activeDeadlineSeconds` may only be set or lowered (0 to 2^31-1), never removed; existing tolerations stay;
    scheduling gates may only be removed; a gated pod's nodeSelector and node affinity may narrow
    (`_gated_pod_updates`); nothing else in the spec may change, terminationGracePeriodSeconds included (but from a
    negative value to 1)."""
    errs = validate_pod_metadata_and_spec(new, minor) + pod_specific_annotation_updates(new, old)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for field in ("containers", "initContainers"):
        more, stop = _container_updates(ns.get(field), os_.get(field), f"spec.{field}")
        errs += more
        if stop:
            return errs
    new_ads, old_ads = ns.get("activeDeadlineSeconds"), os_.get("activeDeadlineSeconds")
    if new_ads is not None:
        if not (0 <= new_ads <= MAX_INT32):
            return [*errs, fe.invalid("spec.activeDeadlineSeconds", new_ads, fe.inclusive_range_error(0, MAX_INT32))]
        if old_ads is not None and old_ads < new_ads:
            return [*errs, fe.invalid("spec.activeDeadlineSeconds", new_ads,
                                      "must be less than or equal to previous value")]
    elif old_ads is not None:
        errs.append(fe.invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil "
                                                                   "value"))
    old_tols, new_tols = os_.get("tolerations") or [], ns.get("tolerations") or []
    # validateOnlyAddedTolerations: each old toleration is in the new list, its tolerationSeconds aside (copied from
    # each new one onto the old's clone before the comparison)
    if any(not any(isinstance(n, dict) and {**t, "tolerationSeconds": n.get("tolerationSeconds")} ==
                   {**n, "tolerationSeconds": n.get("tolerationSeconds")} for n in new_tols)
           for t in old_tols if isinstance(t, dict)):
        errs.append(fe.forbidden("spec.tolerations", "existing toleration can not be modified except its "
                                                     "tolerationSeconds"))
    old_gates = [g.get("name") for _, g in _dicts(os_.get("schedulingGates"))]
    for i, g in _dicts(ns.get("schedulingGates")):
        if g.get("name") not in old_gates:
            errs.append(fe.forbidden(f"spec.schedulingGates[{i}]", "only deletion is allowed, but found new "
                                                                   f"scheduling gate '{g.get('name')}'"))
    if ns != os_:
        munged = _updatable_spec(ns, os_)
        if old_gates:
            errs += _gated_pod_updates(munged, os_, minor)
        if munged != _updatable_spec(os_, os_):
            errs.append(fe.forbidden("spec", POD_UPDATE_FORBIDDEN))
    return errs


def _gated_pod_updates(munged: Obj, old: Obj, minor: int) -> list[FieldError]:
    """`ValidatePodUpdate`'s "validations specific to gated pods" (a pod whose old spec has scheduling gates), on
    the munged new spec (`munged`, changed in place: what may change is set back to the old spec's, as Go does):
    - `validateNodeSelectorMutation`: every old nodeSelector entry kept with its value (new entries allowed), else
      `spec.nodeSelector: Invalid value: <the new map>: only additions to spec.nodeSelector are allowed (no
      mutations or deletions)`;
    - `validateNodeAffinityMutation`: an old node affinity without required terms may become anything; with
      terms, as many terms as before (`...nodeSelectorTerms: Invalid value: <new terms>: no additions/deletions to
      non-empty NodeSelectorTerms list are allowed`), each keeping its old matchExpressions and matchFields as its
      first ones (`validateNodeSelectorTermHasOnlyAdditions`; `...nodeSelectorTerms[i]: Invalid value: <term>: only
      additions are allowed (no mutations or deletions)`); then the node affinity set back as Go's switch does.
    Compared as `apiequality.Semantic.DeepEqual` compares (`_semantic`: an absent, null or empty list or string is
    its zero value; a node affinity, a pointer, is not its empty object). The values are shown as `ErrorBody` shows
    them on a server of 1.`minor` (`_shown`). Source: kubernetes pkg/apis/core/validation/validation.go."""
    errs: list[FieldError] = []
    new_sel, old_sel = munged.get("nodeSelector") or {}, old.get("nodeSelector") or {}
    if new_sel != old_sel:
        if any(k not in new_sel or new_sel[k] != v for k, v in old_sel.items()):
            errs.append(fe.invalid("spec.nodeSelector", _shown_selector(munged.get("nodeSelector"), minor),
                                   "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        _set_or_drop(munged, "nodeSelector", old.get("nodeSelector"))
    old_aff, new_aff = old.get("affinity"), munged.get("affinity")
    old_na = old_aff.get("nodeAffinity") if isinstance(old_aff, dict) else None
    new_na = new_aff.get("nodeAffinity") if isinstance(new_aff, dict) else None
    if _semantic(old_na) != _semantic(new_na):
        errs += _node_affinity_mutation(new_na, old_na, minor)
        if new_aff is None and old_na is None:
            pass
        elif new_aff is None:
            munged["affinity"] = {"nodeAffinity": old_na}
        elif old_aff is None and not new_aff.get("podAffinity") and not new_aff.get("podAntiAffinity"):
            del munged["affinity"]
        else:
            munged["affinity"] = {**new_aff}
            _set_or_drop(munged["affinity"], "nodeAffinity", old_na)
    elif isinstance(new_aff, dict) and new_na is not None:
        munged["affinity"] = {**new_aff, "nodeAffinity": old_na}  # the same but for zero values written otherwise
    return errs


def _semantic(value: Any) -> Any:
    """`value` as `apiequality.Semantic.DeepEqual` tells values apart (its forked reflect.DeepEqual: an empty slice
    or map is a nil one; a zero string is an absent one; a pointer to an empty struct is not a nil pointer): a
    member whose value is null, "" or [] dropped, an empty object kept."""
    if isinstance(value, dict):
        return {k: _semantic(v) for k, v in value.items() if v is not None and v != "" and v != []}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _shown(minor: int, json_text: str, go_syntax: str) -> fe.GoSyntax:
    """A value as `field.Error.ErrorBody` shows it on a server of 1.`minor`: `json.Marshal`'s text from 1.34
    (apimachinery c58e197e, "Nicer value rendering in API errors"), Go's `%#v` before."""
    return fe.GoSyntax(json_text if minor >= 34 else go_syntax)


def _go_string(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)  # %q of a plain string


def _shown_selector(selector: Any, minor: int) -> fe.GoSyntax:
    """A `map[string]string` nodeSelector as `ErrorBody` shows it (`_shown`): `%#v` sorts its keys."""
    if not isinstance(selector, dict):
        return _shown(minor, "null", "map[string]string(nil)")
    pairs = ", ".join(f"{_go_string(k)}:{_go_string(v)}" for k, v in sorted(selector.items()))
    return _shown(minor, fe.go_json(selector), f"map[string]string{{{pairs}}}")


def _set_or_drop(obj: Obj, key: str, value: Any) -> None:
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = value


def _selector_terms(affinity: Any) -> list[Any] | None:
    """`requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms` of a node affinity, None when it has no
    required part."""
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, dict) else None
    if not isinstance(required, dict):
        return None
    terms = required.get("nodeSelectorTerms")
    return terms if isinstance(terms, list) else []


def _requirements(value: Any) -> list[Obj] | None:
    if not value:
        return None
    return [r for r in value if isinstance(r, dict)]


def _internal_term_json(term: Any) -> Obj:
    """A v1 NodeSelectorTerm as the internal `core.NodeSelectorTerm` marshals (Go field names: the internal types
    have no json tags; nil as null)."""
    term = term if isinstance(term, dict) else {}

    def requirements(value: Any) -> list[Obj] | None:
        reqs = _requirements(value)
        return None if reqs is None else [{"Key": r.get("key", ""), "Operator": r.get("operator", ""),
                                           "Values": r.get("values") or None} for r in reqs]
    return {"MatchExpressions": requirements(term.get("matchExpressions")),
            "MatchFields": requirements(term.get("matchFields"))}


def _internal_term_go(term: Any) -> str:
    """A v1 NodeSelectorTerm as `%#v` writes the internal `core.NodeSelectorTerm`."""
    term = term if isinstance(term, dict) else {}

    def requirements(value: Any) -> str:
        reqs = _requirements(value)
        if reqs is None:
            return "[]core.NodeSelectorRequirement(nil)"
        shown = []
        for r in reqs:
            values = r.get("values")
            vs = ("[]string{" + ", ".join(_go_string(v) for v in values) + "}") if values else "[]string(nil)"
            shown.append(f'core.NodeSelectorRequirement{{Key:{_go_string(r.get("key", ""))}, '
                         f'Operator:{_go_string(r.get("operator", ""))}, Values:{vs}}}')
        return "[]core.NodeSelectorRequirement{" + ", ".join(shown) + "}"
    return (f"core.NodeSelectorTerm{{MatchExpressions:{requirements(term.get('matchExpressions'))}, "
            f"MatchFields:{requirements(term.get('matchFields'))}}}")


def _node_affinity_mutation(new: Any, old: Any, minor: int) -> list[FieldError]:
    """`validateNodeAffinityMutation` (see `_gated_pod_updates`)."""
    old_terms = _selector_terms(old)
    if old_terms is None:
        return []
    new_terms = _selector_terms(new) or []
    at = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    if old_terms and len(old_terms) != len(new_terms):
        shown = _shown(minor, fe.go_json([_internal_term_json(t) for t in new_terms] or None, sort_keys=False),
                       ("[]core.NodeSelectorTerm{" + ", ".join(_internal_term_go(t) for t in new_terms) + "}")
                       if new_terms else "[]core.NodeSelectorTerm(nil)")
        return [fe.invalid(at, shown, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")]
    errs: list[FieldError] = []
    for i, (new_term, old_term) in enumerate(zip(new_terms, old_terms, strict=False)):
        if not _term_has_only_additions(new_term, old_term):
            shown = _shown(minor, fe.go_json(_internal_term_json(new_term), sort_keys=False),
                           _internal_term_go(new_term))
            errs.append(fe.invalid(f"{at}[{i}]", shown, "only additions are allowed (no mutations or deletions)"))
    return errs


def _term_has_only_additions(new: Any, old: Any) -> bool:
    """`validateNodeSelectorTermHasOnlyAdditions`: an empty old term stays empty; the old matchExpressions and
    matchFields are the first ones of the new term (compared as `_semantic`)."""
    new, old = (new if isinstance(new, dict) else {}), (old if isinstance(old, dict) else {})
    if not old.get("matchExpressions") and not old.get("matchFields") and (
            new.get("matchExpressions") or new.get("matchFields")):
        return False
    for key in ("matchExpressions", "matchFields"):
        before, after = old.get(key) or [], new.get(key) or []
        if before and (len(after) < len(before) or _semantic(after[:len(before)]) != _semantic(before)):
            return False
    return True


def validate_ephemeral_containers_update(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidatePodEphemeralContainersUpdate` (`pods/ephemeralcontainers`): the containers (names unique with the
    pod's other containers, an image each) may be added, never removed or changed."""
    ns = new.get("spec") or {}
    errs = _validate_containers(ns, {str(v.get("name")) for _, v in _dicts(ns.get("volumes"))}, "spec")
    for i, c in _dicts(ns.get("ephemeralContainers")):
        if not c.get("image"):
            errs.append(fe.required(f"spec.ephemeralContainers[{i}].image"))
    now = {c.get("name"): c for _, c in _dicts(ns.get("ephemeralContainers"))}
    for i, c in _dicts((old.get("spec") or {}).get("ephemeralContainers")):
        if c.get("name") not in now:
            errs.append(fe.forbidden("spec.ephemeralContainers",
                                     f'existing ephemeral containers "{c.get("name")}" may not be removed\n'))
        elif now[c.get("name")] != c:
            errs.append(fe.forbidden(f"spec.ephemeralContainers[{i}]",
                                     f'existing ephemeral containers "{c.get("name")}" may not be changed\n'))
    return errs


def validate_resize(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidatePodResize` (`pods/resize`, 1.33+): only the cpu and memory requests and limits of containers may
    change, and the pod's QoS class may not."""
    def masked(spec: Obj) -> Obj:
        out = []
        for _, c in _dicts(spec.get("containers")):
            res = {k: {r: q for r, q in (v or {}).items() if r not in ("cpu", "memory")}
                   for k, v in (c.get("resources") or {}).items() if isinstance(v, dict)}
            out.append({**{k: v for k, v in c.items() if k not in ("resources", "resizePolicy")},
                        "resources": {k: v for k, v in res.items() if v}})
        return {**spec, "containers": out}

    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if not isinstance(ns.get("containers"), list) or masked(ns) != masked(os_):
        return [fe.forbidden("spec", "only cpu and memory resources are mutable")]
    if qos.pod_qos(new) != qos.pod_qos(old):
        return [fe.invalid("metadata.qosClass", qos.pod_qos(new),
                           "Pod QOS Class may not change as a result of resizing")]
    return []


SYSTEM_POD_CONDITIONS = ("PodScheduled", "Ready", "Initialized")  # validatePodConditions


def validate_pod_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidatePodStatusUpdate` (pkg/apis/core/validation/validation.go) of a pod the status strategy prepared
    (`podStatusStrategy.PrepareForUpdate`: the old spec, ownerReferences and deletionTimestamp, the new labels and
    annotations): the metadata (labels and annotations as on any update, `pod_specific_annotation_updates`); each
    condition type but PodScheduled, Ready and Initialized a qualified name (`validatePodConditions`, at
    `metadata.conditions[<i>].Type`: sic, the Go passes the metadata path); `status.qosClass`, set when the pod was
    created, immutable (Kubernetes 1.32+)."""
    errs = validate_object_meta(new.get("metadata") or {}) + pod_specific_annotation_updates(new, old)
    status: Obj = new["status"] if isinstance(new.get("status"), dict) else {}
    for i, c in _dicts(status.get("conditions")):
        kind = str(c.get("type") or "")
        if kind not in SYSTEM_POD_CONDITIONS:
            errs += [fe.invalid(f"metadata.conditions[{i}].Type", kind, m) for m in qualified_name_errors(kind)]
    new_qos = status.get("qosClass")
    old_qos = (old.get("status") or {}).get("qosClass")
    if new_qos != old_qos:
        errs.append(fe.invalid("status.qosClass", new_qos, "field is immutable"))
    return errs


# ---------------------------------------------------------------------------------------------- runtime classes

def validate_runtime_class(rc: Obj, old: Obj | None = None) -> list[FieldError]:
    """`ValidateRuntimeClass` then, on update, `ValidateRuntimeClassUpdate` (pkg/apis/node/validation/validation.go,
    as the registry strategy's ValidateUpdate runs them): metadata; the handler required and a DNS-1123 label;
    `validateOverhead` (`validate_resource_limits` of `overhead.podFixed` at `overhead`); `validateScheduling`
    (the nodeSelector's labels, the tolerations); on update the handler immutable."""
    errs = validate_object_meta(rc.get("metadata") or {})
    handler = rc.get("handler")
    if not handler:
        errs.append(fe.required("handler"))
    else:
        errs += fe.dns1123_label("handler", str(handler))
    overhead = rc.get("overhead")
    if isinstance(overhead, dict) and isinstance(overhead.get("podFixed"), dict):
        errs += validate_resource_limits(overhead["podFixed"], "overhead")
    scheduling = rc.get("scheduling")
    if isinstance(scheduling, dict):
        errs += validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector")
        errs += validate_tolerations(scheduling.get("tolerations"), "scheduling.tolerations")
    if old is not None and handler != old.get("handler"):
        errs.append(fe.invalid("handler", handler, "field is immutable"))
    return errs


# pkg/apis/core/helper/helpers.go: standardResources (IsStandardResourceName, with the quota hugepages prefixes),
# standardContainerResources (IsStandardContainerResourceName, with `hugepages-`), integerResources
STANDARD_RESOURCES = frozenset((
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers"))
STANDARD_CONTAINER_RESOURCES = frozenset(("cpu", "memory", "ephemeral-storage"))
INTEGER_RESOURCES = frozenset(("pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                               "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"))
HUGEPAGES_PREFIX = "hugepages-"
IS_NEGATIVE = "must be greater than or equal to 0"  # apimachinery validation.IsNegativeErrorMsg


def _native_resource(name: str) -> bool:
    """`IsNativeResource`: no `/`, or in the `kubernetes.io/` namespace."""
    return "/" not in name or "kubernetes.io/" in name


def _extended_resource(name: str) -> bool:
    """`IsExtendedResourceName`: not native, no `requests.` prefix, and `requests.<name>` a qualified name."""
    return (not _native_resource(name) and not name.startswith("requests.")
            and not qualified_name_errors("requests." + name))


def _container_resource_name(name: str, at: str) -> list[FieldError]:
    """`validateContainerResourceName` (with `validateResourceName`): a qualified name; without a `/` a standard
    resource, and one containers may ask for; with one, native or an extended resource."""
    errs = [fe.invalid(at, name, m) for m in qualified_name_errors(name)]
    if not errs and "/" not in name and name not in STANDARD_RESOURCES and not (
            name.startswith((HUGEPAGES_PREFIX, "requests." + HUGEPAGES_PREFIX))):
        errs.append(fe.invalid(at, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith(HUGEPAGES_PREFIX):
            errs.append(fe.invalid(at, name, "must be a standard resource for containers"))
    elif not _native_resource(name) and not _extended_resource(name):
        errs.append(fe.invalid(at, name, "doesn't follow extended resource name standard"))
    return errs


def _hugepage_divisible(name: str, q: quantity.Quantity) -> bool:
    """`IsHugePageResourceValueDivisible`: the page size of `hugepages-<size>` a positive whole quantity, and the
    value (`Value()`, rounded up) a multiple of it."""
    try:
        page = quantity.parse(name[len(HUGEPAGES_PREFIX):])
    except quantity.QuantityError:
        return False
    if page.sign() <= 0 or page.scaled_value(-3) % 1000:
        return False
    return q.scaled_value(0) % page.scaled_value(0) == 0


def validate_resource_limits(limits: Obj, path: str) -> list[FieldError]:
    """`ValidateContainerResourceRequirements` of requirements with only `limits` (what `validateOverhead` passes):
    each at `<path>.limits[<name>]`: the name (`_container_resource_name`), the quantity not negative
    (`ValidateNonnegativeQuantity`, its `String()` quoted), whole for an integer resource (an extended one:
    `ValidateResourceQuantityValue`, `must be an integer` after the quantity unquoted), hugepages a multiple of their
    page size (`validateResourceQuantityHugePageValue`); hugepages only beside cpu or memory (`<path>: Forbidden:
    HugePages require cpu or memory`). The values are the stored texts (`decode`)."""
    errs: list[FieldError] = []
    compute = hugepages = False
    for name, value in limits.items():
        at = f"{path}.limits[{name}]"
        errs += _container_resource_name(str(name), at)
        q = quantity.from_json(value)
        if q.sign() < 0:
            errs.append(fe.invalid(at, str(q), IS_NEGATIVE))
        if (name in INTEGER_RESOURCES or _extended_resource(str(name))) and q.scaled_value(-3) % 1000:
            errs.append(fe.invalid(at, fe.GoSyntax(str(q)), "must be an integer"))
        if str(name).startswith(HUGEPAGES_PREFIX):
            hugepages = True
            if not _hugepage_divisible(str(name), q):
                errs.append(fe.invalid(at, str(q), f"{q} is not positive integer multiple of {name}"))
        compute = compute or name in ("cpu", "memory")
    if hugepages and not compute:
        errs.append(fe.forbidden(path, "HugePages require cpu or memory"))
    return errs


# ---------------------------------------------------------------------------------------------- secrets

MAX_SECRET_SIZE = 1024 * 1024  # core.MaxSecretSize
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"  # core.ServiceAccountNameKey
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_RE = re.compile(f"^{CONFIG_MAP_KEY_FMT}$")
_CONFIG_MAP_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


def config_map_key_errors(key: str) -> list[str]:
    """apimachinery `IsConfigMapKey`: at most 253 bytes, `[-._a-zA-Z0-9]+`, not `.` or `..` nor starting with `..`."""
    errs = [fe.max_len_error(253)] if len(key.encode()) > 253 else []
    if not _CONFIG_MAP_KEY_RE.fullmatch(key):
        errs.append(fe.regex_error(_CONFIG_MAP_KEY_MSG, CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _quote_char(c: str) -> str:
    """encoding/json `quoteChar`."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    return "'" + (c if c.isprintable() else json.dumps(c)[1:-1]) + "'"


def go_json_object_error(raw: bytes) -> str | None:
    """What Go's `json.Unmarshal(raw, &map[string]interface{}{})` refuses, in its words, or None: a document cut short
    (`unexpected end of JSON input`), a syntax error (`invalid character 'x' ...`, its context told as the scanner
    tells it for the common cases), a value that is not an object (`json: cannot unmarshal array into Go value of
    type map[string]interface {}`; null is accepted)."""
    text = raw.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated"):
            return "unexpected end of JSON input"
        c = _quote_char(text[e.pos])
        if e.msg == "Extra data":
            return f"invalid character {c} after top-level value"
        if e.msg.startswith("Expecting property name"):
            return f"invalid character {c} looking for beginning of object key string"
        if e.msg == "Expecting ':' delimiter":
            return f"invalid character {c} after object key"
        if e.msg == "Expecting ',' delimiter":
            depth: list[str] = []
            in_string = escaped = False
            for ch in text[:e.pos]:
                if in_string:
                    escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
                elif ch == '"':
                    in_string = True
                elif ch in "[{":
                    depth.append(ch)
                elif ch in "]}" and depth:
                    depth.pop()
            inside = "array element" if depth and depth[-1] == "[" else "object key:value pair"
            return f"invalid character {c} after {inside}"
        if e.msg.startswith("Invalid control character"):
            return f"invalid character {c} in string literal"
        return f"invalid character {c} looking for beginning of value"
    if value is None or isinstance(value, dict):
        return None
    return f"json: cannot unmarshal {_json_kind(value)} into Go value of type map[string]interface {{}}"


def _secret_data(secret: Obj) -> dict[str, bytes]:
    data = secret.get("data")
    if not isinstance(data, dict):
        return {}
    return {str(k): base64.b64decode(v) if isinstance(v, str) and v else b"" for k, v in data.items()}


def validate_secret(secret: Obj) -> list[FieldError]:
    """`ValidateSecret` (pkg/apis/core/validation/validation.go): metadata; each data key `IsConfigMapKey` (at
    `data[<key>]`); the data at most 1 MiB in all (`data: Too long: must have at most 1048576 bytes`); by type:
    `kubernetes.io/service-account-token` needs the annotation `kubernetes.io/service-account.name`,
    `kubernetes.io/dockercfg` and `kubernetes.io/dockerconfigjson` their key holding a JSON object
    (`<secret contents redacted>` shown), `kubernetes.io/basic-auth` a username or a password,
    `kubernetes.io/ssh-auth` a non-empty `ssh-privatekey`, `kubernetes.io/tls` both `tls.crt` and `tls.key`."""
    errs = validate_object_meta(secret.get("metadata") or {})
    data = _secret_data(secret)
    for key in data:
        errs += [fe.invalid(f"data[{key}]", key, m) for m in config_map_key_errors(key)]
    if sum(len(v) for v in data.values()) > MAX_SECRET_SIZE:
        errs.append(fe.too_long("data", MAX_SECRET_SIZE))
    kind = secret.get("type") or "Opaque"
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
            errs.append(fe.required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]"))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(fe.required(f"data[{key}]"))
        else:
            problem = go_json_object_error(data[key])
            if problem:
                errs.append(fe.invalid(f"data[{key}]", "<secret contents redacted>", problem))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [fe.required("data[username]"), fe.required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(fe.required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        errs += [fe.required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return errs


def validate_secret_update(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidateSecretUpdate`: the type immutable (`type: Invalid value: "<new>": field is immutable`); an
    `immutable` secret stays immutable and keeps its data (`immutable`/`data: Forbidden: field is immutable when
    `immutable` is set`; a stored secret's empty data is none, as `omitempty` stores it, and `data: {}` is not none,
    as Go's `reflect.DeepEqual` of a nil and an empty map says); then `ValidateSecret` of the new secret."""
    errs: list[FieldError] = []
    new_type, old_type = new.get("type") or "Opaque", old.get("type") or "Opaque"
    if new_type != old_type:
        errs.append(fe.invalid("type", new_type, "field is immutable"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(fe.forbidden("immutable", IMMUTABLE_WHEN_SET))
        old_data = _secret_data(old) if old.get("data") else None
        new_data = _secret_data(new) if isinstance(new.get("data"), dict) else None
        if new_data != old_data:
            errs.append(fe.forbidden("data", IMMUTABLE_WHEN_SET))
    return errs + validate_secret(new)


# ---------------------------------------------------------------------------------------------- events

EVENT_LENGTH_LIMITS = {"reportingInstance": 128, "action": 128, "reason": 128, "message": 1024}  # events.go


def path_segment_name_errors(name: str) -> list[str]:
    """apimachinery `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def validate_event(event: Obj) -> list[FieldError]:
    """A core/v1 Event as `ValidateEventCreate`/`ValidateEventUpdate` check it for a v1 request (pkg/apis/core/
    validation/events.go: only `legacyValidateEvent`), then, only if that passed, the generic registry's
    `ValidateObjectMetaAccessor` with `ValidatePathSegmentName` (`BeforeCreate`/`BeforeUpdate`: an event's name
    need not be a DNS subdomain). Without an `eventTime` the involved object's namespace must be the event's (one
    without a namespace allows only the event namespaces `""` and `default`); with one, an involved object without
    a namespace allows `default` and `kube-system`, and `reportingController` (a qualified name),
    `reportingInstance` and `action` are required, with length limits on them, `reason` and `message`."""
    meta = event.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    involved: Obj = event["involvedObject"] if isinstance(event.get("involvedObject"), dict) else {}
    involved_ns = str(involved.get("namespace") or "")
    errs: list[FieldError] = []
    mismatch = fe.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if not event.get("eventTime"):
        if (namespace not in ("", "default")) if not involved_ns else namespace != involved_ns:
            errs.append(mismatch)
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(mismatch)
        controller = str(event.get("reportingComponent") or "")  # core/v1's JSON name of ReportingController
        if not controller:
            errs.append(fe.required("reportingController"))
        errs += [fe.invalid("reportingController", controller, m) for m in qualified_name_errors(controller)]
        for field in ("reportingInstance", "action", "reason", "message"):
            value = str(event.get(field) or "")
            if not value and field != "message":
                errs.append(fe.required(field))
            if len(value.encode()) > EVENT_LENGTH_LIMITS[field]:
                errs.append(fe.invalid(field, "", f"can have at most {EVENT_LENGTH_LIMITS[field]} characters"))
    errs += [fe.invalid("namespace", namespace, m) for m in fe.dns1123_subdomain_errors(namespace)]
    if errs:
        return errs
    name = meta.get("name")
    if not name:
        errs.append(fe.required("metadata.name", "name or generateName is required"))
    else:
        errs += [fe.invalid("metadata.name", name, m) for m in path_segment_name_errors(str(name))]
    return (errs + validate_labels(meta.get("labels")) + validate_annotations(meta.get("annotations"))
            + validate_owner_references(meta.get("ownerReferences")))
