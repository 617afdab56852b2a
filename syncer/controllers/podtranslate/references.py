"""References to ConfigMaps, Secrets and PersistentVolumeClaims (and Endpoints), rewritten to host names (pure).

Follows vcluster's pod translator (`translator.go`): `translateVolumes` (configMap, secret,
persistentVolumeClaim and ephemeral volumes, the secretRefs of the iscsi, rbd, flexVolume, cinder, cephfs,
scaleIO, storageos and csi plugins, azureFile's secretName, glusterfs's endpoints), `translateProjectedVolume`
(configMap and secret sources), `TranslateContainerEnv` (envFrom, env[].valueFrom configMapKeyRef/secretKeyRef,
for init, app and ephemeral containers) and `Translate` (imagePullSecrets). A host name is vcluster's
single-namespace name `<name>-x-<namespace>-x-<vcluster>` (translate.safe_concat_name); an ephemeral
volume becomes the claim `<pod>-<volume>` that Kubernetes' ephemeral-volume controller creates in the
virtual cluster (`ephemeral.VolumeClaimName`), as vcluster does.

A glusterfs volume's `endpoints` (Go `EndpointsName`) is renamed through vcluster's Endpoints mapper
(`mappings.Endpoints()`, pkg/mappings/resources/endpoints.go: `<name>-x-<namespace>-x-<vcluster>`, and
`default/kubernetes` is the vcluster's own, named like the vcluster) and is no `Dependency`: the pod does not wait
for it, as it waits only for the kinds whose copies the syncer watches (the kubelet retries the mount until the
Endpoints are there; no Secret is read).

Each other rewritten reference is also returned as a `Dependency`: the host object the host pod needs, unless
the reference is `optional: true` (the `kube-root-ca.crt` source of the injected `kube-api-access-*` volume
is a ConfigMap reference like any other). `imagePullSecrets` entries are optional whatever they say: the kubelet
starts a pod whose pull Secret is missing and tries the pull without it (kubernetes pkg/kubelet/kubelet_pods.go,
`getPullSecretsForPod`: a `FailedToRetrieveImagePullSecret` event, "attempting to pull the image may not succeed"),
and vcluster syncs the pod without waiting; a host name that holds another object's copy still holds the pod back,
as for every optional reference (`not_the_copy`). `serviceAccountToken` sources are tokens.py's.

A host object is used only when it is the copy of what the pod references (`not_the_copy`): vcluster's
single-namespace host names collide (`a` in namespace `b-x-c` and `a-x-b` in `c` both become
`a-x-b-x-c-x-<vcluster>`, and past 63 characters a name keeps only 40 bits of a hash), so the name alone
does not say whose object it is. vcluster's syncers write the virtual object's name and namespace on every
host copy (`pkg/util/translate/translate.go`: `HostMetadata` -> `HostAnnotations` -> `addHostAnnotations`,
which overwrites whatever the virtual object carried under those keys); vcluster's pod translator does not
read them back (`translator.go`: `mappings.VirtualToHostName` maps the name only), which this check adds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
CONFIGMAP, SECRET, PVC = "configmap", "secret", "persistentvolumeclaim"
RESOURCECLAIM, RESOURCECLAIMTEMPLATE = "resourceclaim", "resourceclaimtemplate"
# the annotations vcluster writes on each host copy naming its virtual object (pkg/util/translate/types.go:
# NameAnnotation, NamespaceAnnotation; the same keys as translate.OBJECT_NAME/OBJECT_NAMESPACE)
OBJECT_NAME = "vcluster.loft.sh/object-name"
OBJECT_NAMESPACE = "vcluster.loft.sh/object-namespace"


@dataclass(frozen=True)
class Dependency:
    """A host object a host pod references: kind (`configmap`, `secret`, `persistentvolumeclaim`), the
    virtual name, the host name, whether the reference is optional, and the field that names it."""

    kind: str
    name: str
    host_name: str
    optional: bool
    field: str


# volume source -> (kind, the key holding the name, the key holding `optional` or "")
_VOLUME_REFS = {"configMap": (CONFIGMAP, "name", "optional"), "secret": (SECRET, "secretName", "optional"),
                "persistentVolumeClaim": (PVC, "claimName", "")}
# volume plugins whose secretRef.name names a Secret in the pod's namespace
_PLUGIN_SECRET_REFS = {"iscsi": "secretRef", "rbd": "secretRef", "flexVolume": "secretRef", "cinder": "secretRef",
                       "cephfs": "secretRef", "scaleIO": "secretRef", "storageos": "secretRef",
                       "csi": "nodePublishSecretRef"}
_PROJECTED_REFS = {"configMap": CONFIGMAP, "secret": SECRET}
_ENV_FROM_REFS = {"configMapRef": CONFIGMAP, "secretRef": SECRET}
_ENV_KEY_REFS = {"configMapKeyRef": CONFIGMAP, "secretKeyRef": SECRET}


class _Rewriter:
    def __init__(self, host_name: Any) -> None:
        self.host_name = host_name
        self.deps: list[Dependency] = []

    def rename(self, obj: Any, key: str, host_name: Any) -> None:
        """Rewrite `obj[key]` (a virtual name) to `host_name(obj[key])`, without a dependency."""
        if isinstance(obj, dict) and isinstance(obj.get(key), str) and obj[key]:
            obj[key] = host_name(obj[key])

    def ref(self, obj: Any, key: str, kind: str, field: str, optional: bool = False) -> None:
        """Rewrite `obj[key]` (a virtual name) to its host name and record the dependency."""
        if not isinstance(obj, dict) or not isinstance(obj.get(key), str) or not obj[key]:
            return
        name = obj[key]
        obj[key] = self.host_name(name)
        self.deps.append(Dependency(kind, name, obj[key], optional, f"{field}.{key}"))


def translate_references(spec: Obj, pod_name: str, host_name: Any,
                         endpoints_name: Any = None) -> list[Dependency]:
    """Rewrite every reference of a (copied) pod `spec` in place to host names and return the host
    objects it needs, in spec order.

    Args:
        spec: the pod spec to rewrite (mutated).
        pod_name: the virtual pod's name (ephemeral volumes' claim names).
        host_name: maps a virtual object name in the pod's namespace to its host name.
        endpoints_name: maps the name of an Endpoints object in the pod's namespace to its host name (glusterfs
            volumes; default `host_name`).
    """
    r = _Rewriter(host_name)
    for i, vol in enumerate(spec.get("volumes") or []):
        if not isinstance(vol, dict):
            continue
        at = f"spec.volumes[{i}]"
        for source, (kind, key, opt) in _VOLUME_REFS.items():
            src = vol.get(source)
            if isinstance(src, dict):
                r.ref(src, key, kind, f"{at}.{source}", bool(opt and src.get(opt)))
        if isinstance(vol.get("ephemeral"), dict):
            claim = {"claimName": f"{pod_name}-{vol.get('name', '')}"}
            r.ref(claim, "claimName", PVC, f"{at}.ephemeral")
            del vol["ephemeral"]
            vol["persistentVolumeClaim"] = claim
        for plugin, ref_key in _PLUGIN_SECRET_REFS.items():
            src = vol.get(plugin)
            if isinstance(src, dict):
                r.ref(src.get(ref_key), "name", SECRET, f"{at}.{plugin}.{ref_key}")
        if isinstance(vol.get("azureFile"), dict):
            r.ref(vol["azureFile"], "secretName", SECRET, f"{at}.azureFile")
        r.rename(vol.get("glusterfs"), "endpoints", endpoints_name or host_name)
        projected = vol.get("projected")
        if isinstance(projected, dict):
            for j, src in enumerate(projected.get("sources") or []):
                if not isinstance(src, dict):
                    continue
                where = f"{at}.projected.sources[{j}]"
                for source, kind in _PROJECTED_REFS.items():
                    s = src.get(source)
                    if isinstance(s, dict):
                        r.ref(s, "name", kind, f"{where}.{source}", bool(s.get("optional")))
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(field) or []):
            if not isinstance(c, dict):
                continue
            at = f"spec.{field}[{i}]"
            for j, src in enumerate(c.get("envFrom") or []):
                for ref, kind in _ENV_FROM_REFS.items():
                    s = src.get(ref) if isinstance(src, dict) else None
                    if isinstance(s, dict):
                        r.ref(s, "name", kind, f"{at}.envFrom[{j}].{ref}", bool(s.get("optional")))
            for j, env in enumerate(c.get("env") or []):
                vf = env.get("valueFrom") if isinstance(env, dict) else None
                for ref, kind in _ENV_KEY_REFS.items():
                    s = vf.get(ref) if isinstance(vf, dict) else None
                    if isinstance(s, dict):
                        r.ref(s, "name", kind, f"{at}.env[{j}].valueFrom.{ref}", bool(s.get("optional")))
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):  # optional: the kubelet pulls without a missing one
        r.ref(ref, "name", SECRET, f"spec.imagePullSecrets[{i}]", True)
    return r.deps


def not_the_copy(kind: str, host_name: str, namespace: str, name: str, annotations: Any, *,
                 unmarked_ok: bool = False) -> str:
    """Why host object `kind`/`host_name` (with `annotations`, its metadata.annotations) is not the copy of
    virtual object `namespace/name`, in the words of the pod's SyncWarning; "" when it is (its
    `vcluster.loft.sh/object-namespace` and `object-name` are exactly `namespace` and `name`). `unmarked_ok`: a
    host object with neither annotation passes (for kinds whose syncer this project cannot check: vcluster's
    open-source tree has no ResourceClaim syncer, only its name mappings), so only a copy of another virtual
    object is refused.

    E.g. `the host secret "a-x-b-x-c-x-vc" is the copy of secret "c/a-x-b", not of "b-x-c/a"`; a host
    object without both annotations (one vcluster did not write) is nobody's copy:
    `the host secret "s-x-ns-x-vc" is not the copy of secret "ns/s": it has no vcluster.loft.sh/object-name
    and vcluster.loft.sh/object-namespace annotations` (or names the one it lacks).
    """
    ann = annotations if isinstance(annotations, dict) else {}
    got_ns, got_name = ann.get(OBJECT_NAMESPACE), ann.get(OBJECT_NAME)
    if got_ns == namespace and got_name == name:
        return ""
    what = f'the host {kind} "{host_name}"'
    if isinstance(got_ns, str) and isinstance(got_name, str) and got_ns and got_name:
        return f'{what} is the copy of {kind} "{got_ns}/{got_name}", not of "{namespace}/{name}"'
    lacking = [k for k, v in ((OBJECT_NAME, got_name), (OBJECT_NAMESPACE, got_ns)) if not isinstance(v, str) or not v]
    if unmarked_ok and len(lacking) == 2:
        return ""
    return (f'{what} is not the copy of {kind} "{namespace}/{name}": it has no {" and ".join(lacking)} '
            f'annotation{"s" if len(lacking) > 1 else ""}')
