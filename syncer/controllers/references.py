"""Pod fields that reference objects existing only in the virtual cluster (pure).

The sidecar syncs pods and nothing else to the host, so a host pod that mounts a Secret, ConfigMap or
PersistentVolumeClaim of the virtual cluster would either fail to start or, worse, pick up a host
object that happens to share the name. Such pods are refused with a `SyncWarning` naming each field
(behaviour.md section 3). The projected service-account token volume that the virtual API server
injects (`kube-api-access-*`) is not a refusal: it is left out of the host pod (translate.py).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def is_injected_token_volume(vol: Obj) -> bool:
    """The projected `kube-api-access-*` volume a virtual API server injects into every pod."""
    return str(vol.get("name", "")).startswith("kube-api-access-") and "projected" in vol


def _volume_refs(i: int, vol: Obj) -> list[str]:
    where = f'spec.volumes[{i}] ("{vol.get("name", "")}")'
    out: list[str] = []
    if isinstance(vol.get("secret"), dict):
        out.append(f'{where} secret "{vol["secret"].get("secretName", "")}"')
    if isinstance(vol.get("configMap"), dict):
        out.append(f'{where} configMap "{vol["configMap"].get("name", "")}"')
    if isinstance(vol.get("persistentVolumeClaim"), dict):
        out.append(f'{where} persistentVolumeClaim "{vol["persistentVolumeClaim"].get("claimName", "")}"')
    projected = vol.get("projected")
    if isinstance(projected, dict) and not is_injected_token_volume(vol):
        for j, src in enumerate(projected.get("sources") or []):
            if not isinstance(src, dict):
                continue
            if isinstance(src.get("secret"), dict):
                out.append(f'{where} projected.sources[{j}] secret "{src["secret"].get("name", "")}"')
            if isinstance(src.get("configMap"), dict):
                out.append(f'{where} projected.sources[{j}] configMap "{src["configMap"].get("name", "")}"')
            if isinstance(src.get("serviceAccountToken"), dict):
                out.append(f"{where} projected.sources[{j}] serviceAccountToken")
    return out


def _container_refs(field: str, i: int, c: Obj) -> list[str]:
    where = f'spec.{field}[{i}] ("{c.get("name", "")}")'
    out: list[str] = []
    for j, src in enumerate(c.get("envFrom") or []):
        if not isinstance(src, dict):
            continue
        if isinstance(src.get("secretRef"), dict):
            out.append(f'{where} envFrom[{j}] secretRef "{src["secretRef"].get("name", "")}"')
        if isinstance(src.get("configMapRef"), dict):
            out.append(f'{where} envFrom[{j}] configMapRef "{src["configMapRef"].get("name", "")}"')
    for j, env in enumerate(c.get("env") or []):
        value_from = env.get("valueFrom") if isinstance(env, dict) else None
        if not isinstance(value_from, dict):
            continue
        for kind in ("secretKeyRef", "configMapKeyRef"):
            if isinstance(value_from.get(kind), dict):
                out.append(f'{where} env[{j}] ("{env.get("name", "")}") valueFrom.{kind} '
                           f'"{value_from[kind].get("name", "")}"')
    return out


def virtual_only_references(pod: Obj) -> list[str]:
    """Descriptions of every field of `pod` that references a virtual-only object, in spec order,
    e.g. `spec.volumes[0] ("creds") secret "db"`. Empty when the pod can be synced as it is."""
    spec = pod.get("spec") or {}
    out: list[str] = []
    for i, vol in enumerate(spec.get("volumes") or []):
        if isinstance(vol, dict):
            out.extend(_volume_refs(i, vol))
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(field) or []):
            if isinstance(c, dict):
                out.extend(_container_refs(field, i, c))
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        if isinstance(ref, dict):
            out.append(f'spec.imagePullSecrets[{i}] "{ref.get("name", "")}"')
    return out


def refusal_reason(refs: list[str]) -> str:
    """The `because ...` part of the SyncWarning for pods with virtual-only references."""
    return ("it references objects that exist only in the virtual cluster and are not synced to the host: "
            + "; ".join(refs))
