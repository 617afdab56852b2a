"""Defaulting, validation and admission of the embedded API server.

Only what the syncer's behaviour depends on, modelled on kube-apiserver:
- RuntimeClass admission (KEP-585, plugin/pkg/admission/runtimeclass): on pod create, an unknown
  class is refused, `spec.overhead` is set from the class (a different one is refused, compared by value; one the class
  does not define is refused by the plugin's `Validate`), the class's
  `scheduling.nodeSelector` is merged into the pod's (a conflicting key is refused) and its tolerations
  merged with the pod's as `tolerations.MergeTolerations` merges them (only the broader of two overlapping ones
  kept). Messages are the plugin's.
- Priority admission (plugin/pkg/admission/priority) on pod create: the class named (or the `globalDefault` one
  with the lowest value) gives `priority` and `preemptionPolicy`; an unknown class, or a `priority` or
  `preemptionPolicy` the pod sets that differs from the class's, is refused with the plugin's words. On
  PriorityClass create: `system-` names are reserved and only one class may be the global default.
- DefaultTolerationSeconds (plugin/pkg/admission/defaulttolerationseconds): a pod that does not tolerate
  `node.kubernetes.io/not-ready` and `.../unreachable` NoExecute taints gets them for 300 s.
- PodSecurity (k8s.io/pod-security-admission, through syncer/controllers/podsecurity.py, shared with the syncer's
  `policies.podSecurityStandard` check) on pod create and on the updates the library evaluates (an image changed, a
  container added), for a namespace labelled `pod-security.kubernetes.io/enforce` (and `enforce-version`), `latest`
  being the server's own minor version (`pod_security_refusal`); before
  it, as the pod strategy does on create, AppArmor annotations become fields and a volume without a source becomes
  an emptyDir (`SetDefaults_Volume`, applied before validation as on decode). A namespace whose Pod Security labels
  the library cannot parse is refused (`ValidateNamespace`).
- Validation on create and update: validation.py (kube-apiserver's `ValidatePod`, `ValidatePodUpdate`,
  `ValidateRuntimeClass`, `ValidateObjectMeta`), every error in one 422.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from kubesim import features, fielderrors, qos, quantity, validation
from kubesim.status import StatusError, forbidden, invalid
from kubesim.tokens import kube_api_access_volume
from syncer.controllers import podsecurity
from syncer.kube.resources import NAMESPACES, PODS, PRIORITYCLASSES, RUNTIMECLASSES, APIResource

Obj = dict[str, Any]
SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_RANDOM = "bcdfghjklmnpqrstvwxz2456789"


def default_pod(pod: Obj) -> None:
    """Apply the pod defaults and reset the status, for a pod being created."""
    default_pod_spec(pod)
    apply_apparmor_version_skew(pod)
    try:
        qos_class = qos.pod_qos(pod)  # the pod strategy's PrepareForCreate
    except ValueError as e:  # kube-apiserver cannot decode a pod with such a quantity: 400, as it answers
        raise StatusError(400, f"Pod in version \"v1\" cannot be handled as a Pod: {e}") from None
    pod["status"] = {"phase": "Pending", "qosClass": qos_class}


def default_pod_spec(pod: Obj) -> None:
    """Apply the pod spec defaults the syncer might see (a subset of kube-apiserver's `SetDefaults_PodSpec`
    and `SetDefaults_Container`), as the API server does on every decode: create, update and patch."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    for t in spec.get("tolerations") or []:  # its string fields are `omitempty`: an empty one is not stored
        if isinstance(t, dict):
            for k in [k for k in ("key", "operator", "value", "effect") if t.get(k) == ""]:
                del t[k]
    for v in spec.get("volumes") or []:
        if isinstance(v, dict) and all(value is None for key, value in v.items() if key != "name"):
            v["emptyDir"] = {}  # SetDefaults_Volume: a volume without a source is an emptyDir
        projected = v.get("projected") if isinstance(v, dict) else None
        for src in (projected.get("sources") or []) if isinstance(projected, dict) else []:
            token = src.get("serviceAccountToken") if isinstance(src, dict) else None
            if isinstance(token, dict):  # SetDefaults_ServiceAccountTokenProjection: one hour
                token.setdefault("expirationSeconds", 3600)
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            c.setdefault("imagePullPolicy", "Always" if str(c.get("image", "")).endswith(":latest")
                         or ":" not in str(c.get("image", "")) else "IfNotPresent")


def _apparmor_field_for_annotation(value: str) -> Obj | None:
    """`ApparmorFieldForAnnotation`: the profile a deprecated AppArmor annotation value stands for, or None."""
    if value == "unconfined":
        return {"type": "Unconfined"}
    if value == "runtime/default":
        return {"type": "RuntimeDefault"}
    if value.startswith("localhost/") and value != "localhost/":
        return {"type": "Localhost", "localhostProfile": value.removeprefix("localhost/")}
    return None


def apply_apparmor_version_skew(pod: Obj) -> None:
    """The pod strategy's `applyAppArmorVersionSkew` (pkg/registry/core/pod/strategy.go, PrepareForCreate): a
    container without an `appArmorProfile` whose `container.apparmor.security.beta.kubernetes.io/<name>`
    annotation names a profile gets that profile in its securityContext, unless it equals the pod's; not for a
    Windows pod. PodSecurity admission then sees both the annotation and the field, as on a real API server."""
    def obj(parent: Any, key: str) -> Obj:
        value = parent.get(key) if isinstance(parent, dict) else None
        return value if isinstance(value, dict) else {}
    spec = obj(pod, "spec")
    annotations = obj(pod.get("metadata"), "annotations")
    if obj(spec, "os").get("name") == "windows":
        return
    pod_profile = obj(spec, "securityContext").get("appArmorProfile")
    for field in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(field)
        for c in items if isinstance(items, list) else []:
            if not isinstance(c, dict) or obj(c, "securityContext").get("appArmorProfile") is not None:
                continue
            value = annotations.get(podsecurity.APPARMOR_ANNOTATION_PREFIX + str(c.get("name", "")))
            profile = _apparmor_field_for_annotation(value) if isinstance(value, str) else None
            if profile is not None and profile != pod_profile:
                c["securityContext"] = {**obj(c, "securityContext"), "appArmorProfile": profile}


def validate_create(res: APIResource, obj: Obj, minor: int = features.DEFAULT_MINOR) -> None:
    """Validate a new object on a server of Kubernetes 1.`minor` (validation.py: pods, runtime classes, and object
    metadata for every kind). Raises StatusError 422 listing every error."""
    if res == PODS:
        errs = validation.validate_pod(obj, minor)
    elif res == RUNTIMECLASSES:
        errs = validation.validate_runtime_class(obj)
    else:
        errs = validation.validate_object_meta(obj["metadata"])
    if errs:
        raise invalid(res, obj["metadata"].get("name", ""), errs)


def validate_update(res: APIResource, new: Obj, old: Obj) -> None:
    """Validate an update as kube-apiserver's update validation does (immutable fields, pod update
    rules). Raises StatusError 422 listing every error."""
    if res == PODS:
        errs = validation.validate_pod_update(new, old)
    elif res == RUNTIMECLASSES:
        errs = validation.validate_runtime_class(new, old)
    else:
        errs = validation.validate_object_meta(new["metadata"])
    if errs:
        raise invalid(res, old["metadata"]["name"], errs)


def same_resources(a: Any, b: Any) -> bool:
    """`apiequality.Semantic.DeepEqual` of two ResourceLists (k8s.io/apimachinery pkg/api/equality/semantic.go): the
    same names, each quantity equal by value (`Cmp`, so `500m` equals `0.5`); nil and empty are equal. Both decoded
    already (a value that does not parse is unequal)."""
    a, b = a or {}, b or {}
    if not isinstance(a, dict) or not isinstance(b, dict) or a.keys() != b.keys():
        return False
    try:
        return all(quantity.from_json(a[k]).cmp(quantity.from_json(b[k])) == 0 for k in a)
    except quantity.QuantityError:
        return False


def admit_runtime_class(pod: Obj, get_runtime_class: Callable[[str], Obj | None]) -> None:
    """KEP-585 RuntimeClass admission on pod create (plugin/pkg/admission/runtimeclass/admission.go `Admit`:
    `prepareObjects`, `setOverhead`, `setScheduling`); mutates `pod` or raises 403 StatusError. A pod's overhead is
    compared with the class's by value (`apiequality.Semantic.DeepEqual`, `same_resources`), the pod's as decoded
    (rounded to milli, validation.decode), the class's as stored; the class's then replaces it."""
    spec = pod.get("spec") or {}
    rcn = spec.get("runtimeClassName")
    if not rcn:
        return
    name = pod["metadata"]["name"]
    rc = get_runtime_class(rcn)
    if rc is None:
        raise forbidden(PODS, name, f'pod rejected: RuntimeClass "{rcn}" not found')
    overhead = rc.get("overhead")
    if isinstance(overhead, dict):  # setOverhead: nothing to do for a class without an overhead
        pod_fixed = overhead.get("podFixed")
        if spec.get("overhead") and not same_resources(pod_fixed, spec["overhead"]):
            raise forbidden(PODS, name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        if pod_fixed:
            spec["overhead"] = dict(pod_fixed)
        else:  # pod.Spec.Overhead = nodeOverhead.PodFixed: nil (or empty, omitted)
            spec.pop("overhead", None)
    scheduling = rc.get("scheduling") or {}
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in (scheduling.get("nodeSelector") or {}).items():
        if key in selector and selector[key] != value:
            raise forbidden(PODS, name, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                        f"pod.spec.nodeSelector[{key}] = {selector[key]}")
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    if "scheduling" not in rc or rc["scheduling"] is None:  # setScheduling: nothing to do without a scheduling
        return
    tolerations = merge_tolerations(list(spec.get("tolerations") or []), list(scheduling.get("tolerations") or []))
    if tolerations:
        spec["tolerations"] = tolerations
    else:
        spec.pop("tolerations", None)


def validate_runtime_class_overhead(pod: Obj, get_runtime_class: Callable[[str], Obj | None]) -> None:
    """The RuntimeClass plugin's `Validate` (`validateOverhead`), after the pod's validation: a pod with an overhead
    whose class defines none, or that names no class, is refused (403); one whose overhead differs from its class's
    (a webhook changed it after `setOverhead`) too."""
    spec = pod.get("spec") or {}
    if not spec.get("overhead"):
        return
    name = pod["metadata"]["name"]
    rc = get_runtime_class(spec["runtimeClassName"]) if spec.get("runtimeClassName") else None
    overhead = rc.get("overhead") if rc is not None else None
    if not isinstance(overhead, dict):
        raise forbidden(PODS, name, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined "
                                    "Overhead")
    if not same_resources(overhead.get("podFixed"), spec["overhead"]):
        raise forbidden(PODS, name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")


def _toleration(t: Any) -> tuple[str, str, str, str, Any]:
    """A toleration's fields as the internal type holds them (a missing string is "", a missing
    tolerationSeconds nil): what `apiequality.Semantic.DeepEqual` compares."""
    d = t if isinstance(t, dict) else {}
    return (d.get("key") or "", d.get("operator") or "", d.get("value") or "", d.get("effect") or "",
            d.get("tolerationSeconds"))


def _is_superset(ss: Any, t: Any) -> bool:
    """pkg/util/tolerations/tolerations.go `isSuperset`: whether toleration `ss` tolerates a superset of what `t`
    tolerates."""
    s_key, s_op, s_value, s_effect, s_seconds = _toleration(ss)
    t_key, t_op, t_value, t_effect, t_seconds = _toleration(t)
    if _toleration(ss) == _toleration(t):
        return True
    if t_key != s_key and (s_key != "" or s_op != "Exists"):  # an empty key with Exists matches every key
        return False
    if t_effect != s_effect and s_effect != "":  # an empty effect matches every effect
        return False
    if s_effect == "NoExecute" and s_seconds is not None and (t_seconds is None or t_seconds > s_seconds):
        return False
    if s_op in ("Equal", ""):  # an empty operator means Equal (but only an explicit Equal in `t` matches it)
        return t_op == "Equal" and t_value == s_value
    return s_op == "Exists"  # an unknown operator: klog.Errorf and false


def merge_tolerations(first: list[Any], second: list[Any]) -> list[Any]:
    """pkg/util/tolerations/tolerations.go `MergeTolerations`, as the RuntimeClass plugin's `setScheduling` merges
    the class's tolerations (`second`) into the pod's (`first`): of two tolerations where one tolerates a superset of
    the other, only the broader is kept (of two equal ones, the first), so a pod's own toleration can be dropped for
    a broader one of the class."""
    every = [*first, *second]
    merged: list[Any] = []
    for i, t in enumerate(every):
        if any(_is_superset(t2, t) for t2 in merged):
            continue  # t is redundant
        if any(_toleration(t) != _toleration(t2) and _is_superset(t2, t) for t2 in every[i + 1:]):
            continue  # a later one is broader
        merged.append(t)
    return merged


SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def admit_priority(pod: Obj, get_class: Callable[[str], Obj | None], list_classes: Callable[[], list[Obj]]) -> None:
    """Priority admission on pod create (plugin/pkg/admission/priority `admitPod`, `getDefaultPriority`); mutates
    `pod` or raises 403."""
    spec = pod.setdefault("spec", {})
    name = pod["metadata"]["name"]
    cls_name = spec.get("priorityClassName") or ""
    if not cls_name:
        defaults = [c for c in list_classes() if c.get("globalDefault")]
        cls = min(defaults, key=lambda c: int(c.get("value", 0))) if defaults else None
        if cls is not None:
            spec["priorityClassName"] = cls["metadata"]["name"]
    else:
        cls = get_class(cls_name)
        if cls is None:
            raise forbidden(PODS, name, f"no PriorityClass with name {cls_name} was found")
    priority = int(cls.get("value", 0)) if cls is not None else 0
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise forbidden(PODS, name, f"the integer value of priority ({spec['priority']}) must not be provided in pod "
                                    f"spec; priority admission controller computed {priority} from the given "
                                    "PriorityClass name")
    spec["priority"] = priority
    # getDefaultPriority: with no global default class, priority 0 and PreemptLowerPriority
    policy = cls.get("preemptionPolicy") if cls is not None else "PreemptLowerPriority"
    if policy is not None:
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise forbidden(PODS, name, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must "
                                        f"not be provided in pod spec; priority admission controller computed "
                                        f"{policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy


def admit_priority_class(pc: Obj, list_classes: Callable[[], list[Obj]]) -> None:
    """PriorityClass create (`validatePriorityClass`, `ValidatePriorityClass`): `preemptionPolicy` defaults to
    PreemptLowerPriority; a `system-` name is reserved; a second global default is refused (403)."""
    pc.setdefault("preemptionPolicy", "PreemptLowerPriority")
    name = pc["metadata"]["name"]
    if name.startswith("system-") and name not in SYSTEM_PRIORITY_CLASSES:
        raise invalid(PRIORITYCLASSES, name, [fielderrors.forbidden(
            "metadata.name", "priority class names with 'system-' prefix are reserved for system use only")])
    if pc.get("globalDefault"):
        other = next((c for c in list_classes() if c.get("globalDefault")), None)
        if other is not None:
            raise forbidden(PRIORITYCLASSES, name, f"PriorityClass {other['metadata']['name']} is already marked "
                                                   "as default. Only one default can exist")


_DTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def admit_default_toleration_seconds(pod: Obj, seconds: int = 300) -> None:
    """DefaultTolerationSeconds on pod create: a NoExecute toleration of `seconds` for each of the not-ready and
    unreachable taints the pod does not already tolerate (a toleration with that key or an empty key, and effect
    NoExecute or empty)."""
    spec = pod.setdefault("spec", {})
    tolerations = list(spec.get("tolerations") or [])
    for key in _DTS:
        if not any(isinstance(t, dict) and t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
                   for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
    spec["tolerations"] = tolerations


def pod_security_refusal(namespace_labels: Obj | None, metadata: Obj, spec: Obj,
                         minor: int = features.DEFAULT_MINOR) -> str | None:
    """What PodSecurity in a kube-apiserver of 1.`minor` says of a pod in a namespace with `namespace_labels`, or None
    when it admits it: `violates PodSecurity "<level>:<version>": <reason> (<detail>), ...` (admission/admission.go
    `EvaluatePod`, the version as the namespace names it). The server's library (k8s.io/pod-security-admission of the
    same release) has no check revision newer than its own minor, so `latest` is v1.`minor` there and a pinned
    `enforce-version` beyond it is evaluated as that (policy/registry.go `EvaluatePod`: `if
    r.maxVersion.Older(lv.Version) { lv.Version = r.maxVersion }`, `maxVersion` the newest MinimumVersion of the build's
    checks: v1.32 in release-1.32, v1.34 in release-1.34, v1.35 in release-1.35 and 1.36). podsecurity.refusal evaluates
    at the library's newest revision instead (what vcluster's own check needs)."""
    level, version = podsecurity.enforce_policy(namespace_labels)
    pinned = podsecurity.parse_version(version)
    found = podsecurity.violations(level, metadata, spec, minor if pinned is None else min(pinned, minor))
    return f'violates PodSecurity "{level}:{version}": {", ".join(found)}' if found else None


def admit_pod_security(pod: Obj, namespace_labels: Obj | None, minor: int = features.DEFAULT_MINOR) -> None:
    """PodSecurity (k8s.io/pod-security-admission `ValidatePod`, through syncer/controllers/podsecurity.py) on pod
    create in a kube-apiserver of 1.`minor`: the pod's metadata and spec evaluated at the namespace's
    `pod-security.kubernetes.io/enforce` level and `enforce-version` (`pod_security_refusal`); raises 403
    `pods "<name>" is forbidden: violates PodSecurity "<level>:<version>": ...`."""
    why = pod_security_refusal(namespace_labels, pod["metadata"], pod.get("spec") or {}, minor)
    if why is not None:
        raise forbidden(PODS, pod["metadata"]["name"], why)


def significant_pod_update(new: Obj, old: Obj) -> bool:
    """`isSignificantPodUpdate` (k8s.io/pod-security-admission admission/admission.go): an update PodSecurity
    evaluates again changes the number of init or app containers, the image of one, or adds or changes the image
    of an ephemeral container (matched by name); anything else (labels, annotations, resources) is allowed."""
    def containers(pod: Obj, field: str) -> list[Obj]:
        return [c for c in (pod.get("spec") or {}).get(field) or [] if isinstance(c, dict)]
    for field in ("containers", "initContainers"):
        now, before = containers(new, field), containers(old, field)
        if len(now) != len(before) or any(n.get("image") != o.get("image")
                                          for n, o in zip(now, before, strict=True)):
            return True
    images = {c.get("name"): c.get("image") for c in containers(old, "ephemeralContainers")}
    return any(c.get("name") not in images or images[c.get("name")] != c.get("image")
               for c in containers(new, "ephemeralContainers"))


def admit_pod_security_update(new: Obj, old: Obj, namespace_labels: Obj | None,
                              minor: int = features.DEFAULT_MINOR) -> None:
    """PodSecurity on a pod update (`ValidatePod`, the `status` subresource excepted by the caller): a significant
    update (`significant_pod_update`) is evaluated as a create is; raises 403 with the library's words."""
    if significant_pod_update(new, old):
        admit_pod_security(new, namespace_labels, minor)


def admit_namespace_pod_security(ns: Obj, old: Obj | None) -> None:
    """PodSecurity on a namespace create (`old` None) or update (`ValidateNamespace`): Pod Security labels the
    library cannot parse are refused with 422 `Namespace "<name>" is invalid: metadata.labels[<label>]: Invalid
    value: "<value>": must be ...`; on update only when they changed (errors the old labels already had pass)."""
    def errors(obj: Obj) -> list[fielderrors.FieldError]:
        labels = (obj.get("metadata") or {}).get("labels")
        return [fielderrors.invalid(f"metadata.labels[{key}]", value, why)
                for key, value, why in podsecurity.label_errors(labels if isinstance(labels, dict) else None)]
    found = errors(ns)
    if found and (old is None or [str(e) for e in found] != [str(e) for e in errors(old)]):
        raise invalid(NAMESPACES, ns["metadata"]["name"], found)


IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


def admit_namespace_lifecycle(res: APIResource, name: str, namespace: str, ns_obj: Obj | None) -> None:
    """NamespaceLifecycle admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle) on a
    create in `namespace` (`ns_obj` the stored namespace, None when missing), subresource creates (`pods/binding`,
    `serviceaccounts/token`) included: a missing namespace is 404 NotFound; a terminating one is 403 `<resource>
    "<name>" is forbidden: unable to create new content in namespace <ns> because it is being terminated` with the
    NamespaceTerminating cause (`name` as `admission.NewForbidden` finds it: the request's, else the object's name or
    generateName, else "Unknown")."""
    if ns_obj is None:
        raise StatusError(404, f'namespaces "{namespace}" not found', "NotFound",
                          {"name": namespace, "kind": "namespaces"})
    if (ns_obj.get("status") or {}).get("phase") == "Terminating":
        err = forbidden(res, name or "Unknown", f"unable to create new content in namespace {namespace} because it "
                                                "is being terminated")
        err.details["causes"] = [{"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being "
                                                                               "terminated",
                                  "field": "metadata.namespace"}]
        raise err


def admit_namespace_delete(name: str) -> None:
    """NamespaceLifecycle on a namespace's deletion: `default`, `kube-system` and `kube-public` may not be deleted
    (403)."""
    if name in IMMORTAL_NAMESPACES:
        raise forbidden(NAMESPACES, name, "this namespace may not be deleted")


def admit_service_account(pod: Obj, get_service_account: Callable[[str], Obj | None]) -> None:
    """ServiceAccount admission (plugin/pkg/admission/serviceaccount) on pod create: a pod that names no
    service account runs as `default`; a service account that does not exist is refused (403); unless the
    pod or the service account sets `automountServiceAccountToken: false`, the projected
    `kube-api-access-<random>` volume is added and mounted at /var/run/secrets/kubernetes.io/serviceaccount."""
    spec = pod.setdefault("spec", {})
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = name
    sa = get_service_account(name)
    if sa is None:
        ns = pod["metadata"].get("namespace", "")
        raise forbidden(PODS, pod["metadata"]["name"], f'error looking up service account {ns}/{name}: '
                                                       f'serviceaccount "{name}" not found')
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = sa.get("automountServiceAccountToken")
    volumes = spec.get("volumes") or []
    if automount is False or any(isinstance(v, dict) and str(v.get("name", "")).startswith("kube-api-access-")
                                 for v in volumes):
        return
    # the plugin's token volume, mounted read-only at the well-known path in every container
    vol = kube_api_access_volume("kube-api-access-" + "".join(secrets.choice(_RANDOM) for _ in range(5)))
    spec["volumes"] = [*volumes, vol]
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            mounts = (c.get("volumeMounts") or []) if isinstance(c, dict) else []
            if isinstance(c, dict) and not any(m.get("mountPath") == SA_MOUNT_PATH for m in mounts):
                c["volumeMounts"] = [*mounts, {"name": vol["name"], "readOnly": True, "mountPath": SA_MOUNT_PATH}]
