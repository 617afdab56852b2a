"""Defaulting, validation and admission of the embedded API server.

Only what the syncer's behaviour depends on, modelled on kube-apiserver:
- RuntimeClass admission (KEP-585, plugin/pkg/admission/runtimeclass): on pod create, an unknown
  class is refused, `spec.overhead` is set from the class (a different one is refused), the class's
  `scheduling.nodeSelector` is merged into the pod's (a conflicting key is refused) and its tolerations
  are appended without duplicates. Messages are the plugin's.
- Pod spec immutability on update (pods allow only image, activeDeadlineSeconds and added tolerations).
- RuntimeClass `handler` is required, a DNS-1123 label, and immutable.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from syncer.embedded.status import StatusError, forbidden, invalid
from syncer.kube.resources import PODS, RUNTIMECLASSES, APIResource

Obj = dict[str, Any]
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate_name(res: APIResource, name: str) -> None:
    """Object names must be DNS-1123 subdomains of at most 253 characters (422 otherwise)."""
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        raise invalid(res, name, [
            f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        ])


def default_pod(pod: Obj) -> None:
    """Apply the pod defaults the syncer might see (a subset of kube-apiserver's) and reset status."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            c.setdefault("imagePullPolicy", "Always" if str(c.get("image", "")).endswith(":latest")
                         or ":" not in str(c.get("image", "")) else "IfNotPresent")
    pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}


def validate_create(res: APIResource, obj: Obj) -> None:
    """Validate a new object of a resource with rules (pods, runtimeclasses). Raises StatusError 422."""
    name = obj["metadata"]["name"]
    validate_name(res, name)
    if res == PODS:
        containers = (obj.get("spec") or {}).get("containers")
        if not isinstance(containers, list) or not containers:
            raise invalid(res, name, ["spec.containers: Required value"])
        for i, c in enumerate(containers):
            if not isinstance(c, dict) or not c.get("name"):
                raise invalid(res, name, [f"spec.containers[{i}].name: Required value"])
            if not c.get("image"):
                raise invalid(res, name, [f"spec.containers[{i}].image: Required value"])
        rcn = obj["spec"].get("runtimeClassName")
        if rcn is not None and (not isinstance(rcn, str) or not _DNS1123_SUBDOMAIN.match(rcn)):
            raise invalid(res, name, [
                f'spec.runtimeClassName: Invalid value: "{rcn}": a lowercase RFC 1123 subdomain must consist '
                "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character"
            ])
    elif res == RUNTIMECLASSES:
        handler = obj.get("handler")
        if not handler:
            raise invalid(res, name, ["handler: Required value"])
        if not isinstance(handler, str) or not _DNS1123_LABEL.match(handler):
            raise invalid(res, name, [
                f'handler: Invalid value: "{handler}": a lowercase RFC 1123 label must consist of lower case '
                "alphanumeric characters or '-', and must start and end with an alphanumeric character"
            ])


def _mutable_pod_spec(spec: Obj) -> Obj:
    """The pod spec without the fields an update may change."""
    out = {k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations")}
    for field in ("containers", "initContainers"):
        if isinstance(out.get(field), list):
            out[field] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                          for c in out[field]]
    return out


def validate_update(res: APIResource, new: Obj, old: Obj) -> None:
    """Refuse changes to immutable fields (422), as kube-apiserver's update validation does."""
    name = old["metadata"]["name"]
    if res == RUNTIMECLASSES and new.get("handler") != old.get("handler"):
        raise invalid(res, name, [f'handler: Invalid value: "{new.get("handler")}": field is immutable'])
    if res == PODS:
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        if _mutable_pod_spec(new_spec) != _mutable_pod_spec(old_spec):
            raise invalid(res, name, [
                "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only "
                "additions to existing tolerations) or `spec.terminationGracePeriodSeconds`"
            ])
        old_tols = old_spec.get("tolerations") or []
        new_tols = new_spec.get("tolerations") or []
        if any(t not in new_tols for t in old_tols):
            raise invalid(res, name, ["spec.tolerations: Forbidden: existing toleration can not be modified"])


def admit_runtime_class(pod: Obj, get_runtime_class: Callable[[str], Obj | None]) -> None:
    """KEP-585 RuntimeClass admission on pod create; mutates `pod` or raises 403 StatusError."""
    spec = pod.get("spec") or {}
    rcn = spec.get("runtimeClassName")
    if not rcn:
        return
    name = pod["metadata"]["name"]
    rc = get_runtime_class(rcn)
    if rc is None:
        raise forbidden(PODS, name, f'pod rejected: RuntimeClass "{rcn}" not found')
    pod_fixed = (rc.get("overhead") or {}).get("podFixed")
    if spec.get("overhead") and spec["overhead"] != pod_fixed:
        raise forbidden(PODS, name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    if pod_fixed:
        spec["overhead"] = dict(pod_fixed)
    scheduling = rc.get("scheduling") or {}
    selector = dict(spec.get("nodeSelector") or {})
    for key, value in (scheduling.get("nodeSelector") or {}).items():
        if key in selector and selector[key] != value:
            raise forbidden(PODS, name, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                        f"pod.spec.nodeSelector[{key}] = {selector[key]}")
        selector[key] = value
    if selector:
        spec["nodeSelector"] = selector
    tolerations = list(spec.get("tolerations") or [])
    for t in scheduling.get("tolerations") or []:
        if t not in tolerations:
            tolerations.append(t)
    if tolerations:
        spec["tolerations"] = tolerations


def check_namespace_exists(namespace: str, exists: bool) -> None:
    """NamespaceLifecycle admission: creating in a missing namespace is 404 NotFound."""
    if not exists:
        raise StatusError(404, f'namespaces "{namespace}" not found', "NotFound",
                          {"name": namespace, "kind": "namespaces"})
