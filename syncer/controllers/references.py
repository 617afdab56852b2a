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


# (field that references an object, the field in it that names the object)
_VOLUME_REFS = (("secret", "secretName"), ("configMap", "name"), ("persistentVolumeClaim", "claimName"))
_PROJECTED_REFS = (("secret", "name"), ("configMap", "name"))
_ENV_FROM_REFS = (("secretRef", "name"), ("configMapRef", "name"))
_ENV_VALUE_REFS = (("secretKeyRef", "name"), ("configMapKeyRef", "name"))


def _named_refs(where: str, obj: Any, table: tuple[tuple[str, str], ...], sep: str = " ") -> list[str]:
    """`<where><sep><field> "<name>"` for each field of `table` present in `obj` as an object."""
    if not isinstance(obj, dict):
        return []
    return [f'{where}{sep}{key} "{obj[key].get(name, "")}"' for key, name in table if isinstance(obj.get(key), dict)]


def _volume_refs(i: int, vol: Obj) -> list[str]:
    where = f'spec.volumes[{i}] ("{vol.get("name", "")}")'
    out = _named_refs(where, vol, _VOLUME_REFS)
    projected = vol.get("projected")
    if isinstance(projected, dict) and not is_injected_token_volume(vol):
        for j, src in enumerate(projected.get("sources") or []):
            out += _named_refs(f"{where} projected.sources[{j}]", src, _PROJECTED_REFS)
            if isinstance(src, dict) and isinstance(src.get("serviceAccountToken"), dict):
                out.append(f"{where} projected.sources[{j}] serviceAccountToken")
    return out


def _container_refs(field: str, i: int, c: Obj) -> list[str]:
    where = f'spec.{field}[{i}] ("{c.get("name", "")}")'
    out: list[str] = []
    for j, src in enumerate(c.get("envFrom") or []):
        out += _named_refs(f"{where} envFrom[{j}]", src, _ENV_FROM_REFS)
    for j, env in enumerate(c.get("env") or []):
        if isinstance(env, dict):
            out += _named_refs(f'{where} env[{j}] ("{env.get("name", "")}") valueFrom', env.get("valueFrom"),
                               _ENV_VALUE_REFS, sep=".")
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
