"""Host paths that would show a tenant every host pod's logs, rewritten (pure).

Follows vcluster's `translate/hostpath.go` (`rewriteHostPaths`, `translateKubeletSubPath`,
`addPhysicalPathToVolumesAndCorrectContainers`, `ensureMountPropagation`), which vcluster always applies:
a `hostPath` volume of

- `/var/log/pods` becomes `<virtual>/log/pods`, `/var/log` becomes `<virtual>/log` and `/var/lib/kubelet/pods`
  becomes `<virtual>/kubelet/pods`, where `<virtual>` is `/tmp/vcluster/<host namespace>/<vcluster>`: the
  folders vcluster's hostpath-mapper fills with links to this vcluster's pods only. **Deliberately different:**
  the path is compared normalised (`//`, `/./`, a trailing `/`), where vcluster compares the string, so
  `/var//log/pods` is rewritten too. This is not a boundary (`/` itself is a host path): the host's Pod Security
  admission is what refuses hostPath volumes;
- `/var/lib/kubelet/pods/<virtual pod uid>/...` gets the uid of that pod's host pod (`host_uid`), so it
  points at a real folder; an unknown uid is left as it is;
- with the hostpath-mapper enabled and not central (`controlPlane.hostPathMapper`), a second volume
  `<name>-vcluster-physical` with the original path is added and mounted, in each container using the
  volume, at `/var/vcluster/physical/log/pods`, `/var/vcluster/physical/log` or
  `/var/vcluster/physical/kubelet/pods` (once per container and path), the links' targets;
  **deliberately different:** vcluster skips volumes whose name ends in `vcluster-physical` (to avoid
  rewriting its own volume twice), so a tenant who names a `/var/log/pods` volume `x-vcluster-physical`
  escapes the rewrite; here every volume of the virtual pod is rewritten (the translation always starts
  from the virtual pod, so there is nothing to rewrite twice);
- container mounts at `/var/log/pods`, `/var/lib/kubelet/pods` or `/var/log` get `mountPropagation:
  HostToContainer`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
POD_LOGS = "/var/log/pods"
LOGS = "/var/log"
KUBELET_PODS = "/var/lib/kubelet/pods"
PHYSICAL_SUFFIX = "vcluster-physical"
_PHYSICAL_MOUNT = {POD_LOGS: "/var/vcluster/physical/log/pods", LOGS: "/var/vcluster/physical/log",
                   KUBELET_PODS: "/var/vcluster/physical/kubelet/pods"}


def virtual_path(host_namespace: str, vcluster_name: str) -> str:
    """`VirtualPathTemplate`: `/tmp/vcluster/<host namespace>/<vcluster>`."""
    return f"/tmp/vcluster/{host_namespace}/{vcluster_name}"


def rewrite_host_paths(spec: Obj, base: str, *, physical: bool, host_uid: Callable[[str], str | None]) -> None:
    """Rewrite the host paths of a (copied) pod spec as this module's docstring says (mutates `spec`).

    Args:
        spec: the host pod spec.
        base: `virtual_path(...)`.
        physical: add the hostpath-mapper's physical volumes and mounts.
        host_uid: the uid of the host pod of the virtual pod with this uid, or None when unknown.
    """
    volumes = spec.get("volumes")
    if not isinstance(volumes, list) or not volumes:
        return
    targets = {POD_LOGS: f"{base}/log/pods", LOGS: f"{base}/log", KUBELET_PODS: f"{base}/kubelet/pods"}
    registered: dict[str, set[str]] = {p: set() for p in targets}
    for vol in list(volumes):
        hp = vol.get("hostPath") if isinstance(vol, dict) else None
        if not isinstance(hp, dict) or not isinstance(hp.get("path"), str):
            continue
        name = str(vol.get("name", ""))
        path = _normal(hp["path"])
        if path in targets:
            hp["path"] = targets[path]
            if physical:
                _add_physical(spec, name, hp.get("type"), path, registered[path])
        elif path.startswith(KUBELET_PODS + "/"):
            rest = path[len(KUBELET_PODS) + 1:]
            uid = rest.partition("/")[0]
            translated = host_uid(uid) if uid else None
            if translated:
                hp["path"] = f"{KUBELET_PODS}/{translated}{rest[len(uid):]}"
    for c in spec.get("containers") or []:
        for m in (c.get("volumeMounts") or []) if isinstance(c, dict) else []:
            if isinstance(m, dict) and str(m.get("mountPath", "")).rstrip("/") in targets:
                m["mountPropagation"] = "HostToContainer"


def _normal(path: str) -> str:
    """`path` as the kernel resolves it without links: `//`, `/./` and a trailing `/` collapsed (`..` the API
    server refuses in a host path). `/var//log/pods/.` is `/var/log/pods`, which an exact match of the string
    would let through unchanged."""
    return "/" + posixpath.normpath(path).lstrip("/") if path.startswith("/") else posixpath.normpath(path)


def _add_physical(spec: Obj, name: str, kind: Any, path: str, registered: set[str]) -> None:
    """The hostpath-mapper's extra volume with the original path, mounted in the containers using `name`."""
    physical = f"{name}-{PHYSICAL_SUFFIX}"
    hp: Obj = {"path": path}
    if kind is not None:
        hp["type"] = kind
    spec["volumes"].append({"name": physical, "hostPath": hp})
    for c in spec.get("containers") or []:
        if not isinstance(c, dict) or c.get("name") in registered:
            continue
        for m in list(c.get("volumeMounts") or []):
            if isinstance(m, dict) and m.get("name") == name:
                c["volumeMounts"].append({**m, "name": physical, "mountPath": _PHYSICAL_MOUNT[path]})
                registered.add(str(c.get("name")))
