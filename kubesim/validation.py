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
  `ValidatePodUpdate` (only images, a lowered `activeDeadlineSeconds`, added tolerations and
  `terminationGracePeriodSeconds` may change);
- `pkg/apis/node/validation/validation.go`: `ValidateRuntimeClass` (handler, a DNS-1123 label, immutable).

Messages are the real ones (see `fielderrors.py`); a refused request is a 422 whose message lists the
errors as kube-apiserver's `errors.NewInvalid` does. The version modelled is the one `/version`
reports (1.32): environment variable names follow the relaxed rule (RelaxedEnvironmentVariableValidation,
on by default since 1.32).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kubesim import features, qos
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
    return None


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
    """`ValidatePodCreate` on a server of Kubernetes 1.`minor`: object metadata and `ValidatePodSpec` for the fields
    the syncer writes, then no ephemeral containers: they are added through `pods/ephemeralcontainers` only ("cannot
    be set on create")."""
    spec = pod.get("spec") or {}
    errs = validate_object_meta(pod.get("metadata") or {}) + validate_pod_spec(spec, "spec", minor)
    if spec.get("ephemeralContainers"):
        errs.append(fe.forbidden("spec.ephemeralContainers", "cannot be set on create"))
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


def _updatable_spec(spec: Obj) -> Obj:
    """The spec with what `ValidatePodUpdate` lets change masked out."""
    out = {k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations",
                                                      "terminationGracePeriodSeconds", "schedulingGates")}
    for field in ("containers", "initContainers"):
        if isinstance(out.get(field), list):
            out[field] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                          for c in out[field]]
    return out


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


def validate_pod_update(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidatePodUpdate`: metadata as on create, and the pod-specific annotations as
    `pod_specific_annotation_updates`; `activeDeadlineSeconds` may only be set or lowered (0 to 2^31-1), never
    removed; existing tolerations stay; scheduling gates may only be removed; nothing else in the spec may change."""
    errs = validate_object_meta(new.get("metadata") or {}) + pod_specific_annotation_updates(new, old)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for i, c in _dicts(ns.get("containers")):
        if not c.get("image"):
            errs.append(fe.required(f"spec.containers[{i}].image"))
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
    errs += validate_tolerations(new_tols, "spec.tolerations")
    old_gates = [g.get("name") for _, g in _dicts(os_.get("schedulingGates"))]
    for i, g in _dicts(ns.get("schedulingGates")):
        if g.get("name") not in old_gates:
            errs.append(fe.forbidden(f"spec.schedulingGates[{i}]", "only deletion is allowed, but found new "
                                                                   f"scheduling gate '{g.get('name')}'"))
    if _updatable_spec(ns) != _updatable_spec(os_):
        errs.append(fe.forbidden("spec", POD_UPDATE_FORBIDDEN))
    return errs


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


def validate_pod_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """`ValidatePodStatusUpdate` (Kubernetes 1.32+): `status.qosClass`, set when the pod was created, is
    immutable, so a status write that changes it is refused whole."""
    new_qos = (new.get("status") or {}).get("qosClass")
    old_qos = (old.get("status") or {}).get("qosClass")
    if new_qos != old_qos:
        return [fe.invalid("status.qosClass", new_qos, "field is immutable")]
    return []


# ---------------------------------------------------------------------------------------------- runtime classes

def validate_runtime_class(rc: Obj, old: Obj | None = None) -> list[FieldError]:
    """`ValidateRuntimeClass` / `ValidateRuntimeClassUpdate`: metadata; handler required, a DNS-1123
    label, immutable; overhead and scheduling as given (the syncer copies them from the host)."""
    errs = validate_object_meta(rc.get("metadata") or {})
    handler = rc.get("handler")
    if not handler:
        errs.append(fe.required("handler"))
    else:
        errs += fe.dns1123_label("handler", str(handler))
    if old is not None and handler != old.get("handler"):
        errs.append(fe.invalid("handler", handler, "field is immutable"))
    scheduling = rc.get("scheduling")
    if isinstance(scheduling, dict):
        errs += validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector")
        errs += validate_tolerations(scheduling.get("tolerations"), "scheduling.tolerations")
    return errs
