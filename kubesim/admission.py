"""Defaulting, validation and admission of the embedded API server.

Only what the syncer's behaviour depends on, modelled on kube-apiserver:
- RuntimeClass admission (KEP-585, plugin/pkg/admission/runtimeclass): on pod create, an unknown
  class is refused, `spec.overhead` is set from the class (a different one is refused), the class's
  `scheduling.nodeSelector` is merged into the pod's (a conflicting key is refused) and its tolerations
  are appended without duplicates. Messages are the plugin's.
- Validation on create and update: validation.py (kube-apiserver's `ValidatePod`, `ValidatePodUpdate`,
  `ValidateRuntimeClass`, `ValidateObjectMeta`), every error in one 422.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from kubesim import qos, validation
from kubesim.status import StatusError, forbidden, invalid
from kubesim.tokens import kube_api_access_volume
from syncer.kube.resources import PODS, RUNTIMECLASSES, APIResource

Obj = dict[str, Any]
SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_RANDOM = "bcdfghjklmnpqrstvwxz2456789"


def default_pod(pod: Obj) -> None:
    """Apply the pod defaults and reset the status, for a pod being created."""
    default_pod_spec(pod)
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
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            c.setdefault("imagePullPolicy", "Always" if str(c.get("image", "")).endswith(":latest")
                         or ":" not in str(c.get("image", "")) else "IfNotPresent")


def validate_create(res: APIResource, obj: Obj) -> None:
    """Validate a new object (validation.py: pods, runtime classes, and object metadata for every
    kind). Raises StatusError 422 listing every error."""
    if res == PODS:
        errs = validation.validate_pod(obj)
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
