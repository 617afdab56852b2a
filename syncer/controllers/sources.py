"""What the controllers cache, declared once: the views (`Source`) of each cluster they read, and how
objects of each are slimmed (`slim_of`), so that caches keep only what reconcilers, handlers and indexes
read (the rest of a kept field packed as compact JSON; see kube/cache.py).

| source                                   | kept                                                     |
|------------------------------------------|----------------------------------------------------------|
| virtual pods                             | whole; identity, classes, node and start time decoded    |
| host pods (this vcluster's, by label)    | identity, labels, annotations (not a token's value),     |
|                                          | container names, images and resources, ephemeral         |
|                                          | container names, tolerations, scheduling gates,          |
|                                          | activeDeadlineSeconds, class, node, status               |
| host and virtual RuntimeClasses          | whole; identity and labels decoded                       |
| host PriorityClasses (with their gate)   | whole; identity and labels decoded                       |
| host ConfigMaps, Secrets, PVCs (and      | metadata only (server-side), then identity and the       |
| ServiceAccounts, with their sync on)     | object-name/-namespace annotations (whose copy it is)    |
| virtual ConfigMaps, Secrets              | metadata only, then identity and the force-sync          |
|                                          | annotation: no content enters the process                |
| host and virtual Services                | identity, ClusterIP, ports (host: and the object-name/   |
|                                          | -namespace annotations)                                  |
| virtual namespaces (ns-labels, policy)   | metadata only; identity decoded                          |
| virtual nodes (with a nodes selector)    | metadata only; identity                                  |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syncer.controllers import translate
from syncer.controllers.podtranslate.references import (
    CONFIGMAP,
    OBJECT_NAME,
    OBJECT_NAMESPACE,
    PVC,
    RESOURCECLAIM,
    RESOURCECLAIMTEMPLATE,
    SECRET,
)
from syncer.controllers.podtranslate.tokens import TOKEN_ANNOTATION_PREFIX
from syncer.kube.builder import Slim, Source
from syncer.kube.resources import (
    CONFIGMAPS,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITYCLASSES,
    PVCS,
    RESOURCECLAIMS,
    RESOURCECLAIMTEMPLATES,
    RUNTIMECLASSES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    APIResource,
)

Obj = dict[str, Any]
FORCE_SYNC = "vcluster.loft.sh/force-sync"
SERVICE = "service"  # host Services a pod needs: the vcluster's own, and the DNS Service
SERVICEACCOUNT = "serviceaccount"  # the host copy of a pod's service account, with sync.toHost.serviceAccounts
# the kinds of host object a pod may wait for, and the virtual ones it may mark for vcluster
DEPENDENCY_RESOURCES: dict[str, APIResource] = {CONFIGMAP: CONFIGMAPS, SECRET: SECRETS, PVC: PVCS, SERVICE: SERVICES}
OPTIONAL_DEPENDENCY_RESOURCES: dict[str, APIResource] = {  # read only when their sync is enabled
    SERVICEACCOUNT: SERVICEACCOUNTS, RESOURCECLAIM: RESOURCECLAIMS, RESOURCECLAIMTEMPLATE: RESOURCECLAIMTEMPLATES}
FORCE_SYNC_RESOURCES: dict[str, APIResource] = {CONFIGMAP: CONFIGMAPS, SECRET: SECRETS}

# What event handlers and indexes read of a cached object without decoding it; the rest stays packed.
IDENTITY = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
POD_PACKED = {"metadata": IDENTITY, "spec": ("runtimeClassName", "priorityClassName", "nodeName"),
              "status": ("startTime",)}
RC_PACKED = {"metadata": (*IDENTITY, "labels"), "overhead": (), "scheduling": ()}


@dataclass(frozen=True)
class Sources:
    """The views the controllers of vcluster `vcluster_name` read; host pods and the host objects they
    reference live in `host_namespace` (single-namespace mode)."""

    host_namespace: str
    vcluster_name: str

    @property
    def virtual_pods(self) -> Source:
        """Every virtual pod."""
        return Source("virtual", PODS)

    @property
    def host_pods(self) -> Source:
        """The host pods this vcluster manages (its managed-by label)."""
        return Source("host", PODS, self.host_namespace, f"{translate.MANAGED_BY}={self.vcluster_name}")

    @property
    def host_rcs(self) -> Source:
        """Host RuntimeClasses."""
        return Source("host", RUNTIMECLASSES)

    @property
    def host_priority_classes(self) -> Source:
        """Host PriorityClasses (read only with `sync.fromHost.priorityClasses.selector`)."""
        return Source("host", PRIORITYCLASSES)

    @property
    def virtual_rcs(self) -> Source:
        """Virtual RuntimeClasses."""
        return Source("virtual", RUNTIMECLASSES)

    def host_objects(self, kind: str) -> Source:
        """Host objects of `kind` (DEPENDENCY_RESOURCES or OPTIONAL_DEPENDENCY_RESOURCES) in the host namespace;
        metadata only but Services."""
        res = DEPENDENCY_RESOURCES.get(kind) or OPTIONAL_DEPENDENCY_RESOURCES[kind]
        return Source("host", res, self.host_namespace, metadata_only=kind != SERVICE)

    def virtual_objects(self, kind: str) -> Source:
        """Virtual ConfigMaps or Secrets (FORCE_SYNC_RESOURCES), metadata only."""
        return Source("virtual", FORCE_SYNC_RESOURCES[kind], metadata_only=True)

    @property
    def virtual_services(self) -> Source:
        """Virtual Services (service-link variables)."""
        return Source("virtual", SERVICES)

    @property
    def virtual_nodes(self) -> Source:
        """Virtual nodes, metadata only (read only with `sync.fromHost.nodes.selector.labels`: a pod's `nodeName`
        must name one)."""
        return Source("virtual", NODES, metadata_only=True)

    @property
    def virtual_namespaces(self) -> Source:
        """Virtual namespaces, metadata only (their labels go to host pods as ns-labels; the runtime policy's
        selector entries read them)."""
        return Source("virtual", NAMESPACES, metadata_only=True)


def slim_of(source: Source) -> Slim:
    """How objects of `source` are cached (the table in this module's docstring)."""
    r = source.resource
    if r is PODS:
        return Slim(keep=_host_pod if source.cluster == "host" else None, packed=POD_PACKED)
    if r is RUNTIMECLASSES:
        return Slim(packed=RC_PACKED)
    if r is PRIORITYCLASSES:
        return Slim(packed={"metadata": (*IDENTITY, "labels")})
    if r is SERVICES:
        return Slim(keep=_host_service if source.cluster == "host" else _service)
    if r is NAMESPACES:
        return Slim(packed={"metadata": IDENTITY})
    return Slim(keep=_identity_and_copy_of if source.cluster == "host" else _identity_and_force_sync)


def _host_pod(obj: Obj) -> Obj:
    """Keep only what the pod reconciler reads of a host pod."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    keep_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "labels", "annotations",
                                      "deletionTimestamp") if k in meta}
    ann = keep_meta.get("annotations")
    if isinstance(ann, dict) and any(k.startswith(TOKEN_ANNOTATION_PREFIX) for k in ann):
        # A token's value (a JWT of about 1 KB) is never read from the cache: the renewal reads which token
        # annotations the pod has, the update leaves their values to the host (podupdate._host_owned). Not keeping
        # it saves a third of a host pod's cached bytes, and keeps the tokens out of the syncer's memory.
        keep_meta["annotations"] = {k: "" if k.startswith(TOKEN_ANNOTATION_PREFIX) else v for k, v in ann.items()}
    keep_spec: Obj = {f: [{"name": c.get("name"), "image": c.get("image")} for c in spec.get(f) or []
                          if isinstance(c, dict)] for f in ("containers", "initContainers")}
    for kept, c in zip(keep_spec["containers"], [c for c in spec.get("containers") or [] if isinstance(c, dict)],
                       strict=True):
        if c.get("resources"):
            kept["resources"] = c["resources"]
    if spec.get("ephemeralContainers"):
        keep_spec["ephemeralContainers"] = [{"name": c.get("name")} for c in spec["ephemeralContainers"]
                                            if isinstance(c, dict)]
    for k in ("activeDeadlineSeconds", "runtimeClassName", "nodeName", "tolerations", "schedulingGates"):
        if k in spec:
            keep_spec[k] = spec[k]
    if spec.get("schedulingGates"):  # a gated pod's placement may still narrow (podupdate.gated_placement)
        keep_spec.update({k: spec[k] for k in ("nodeSelector", "affinity") if k in spec})
    out: Obj = {"metadata": keep_meta, "spec": keep_spec}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def _identity_and(obj: Obj, annotations: tuple[str, ...]) -> Obj:
    """The identity of `obj` and those of its `annotations` it has."""
    meta = obj.get("metadata") or {}
    out = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta}
    ann = meta.get("annotations")
    kept = {k: ann[k] for k in annotations if k in ann} if isinstance(ann, dict) else {}
    if kept:
        out["annotations"] = kept
    return {"metadata": out}


def _identity_and_force_sync(obj: Obj) -> Obj:
    """Keep only what is read of a virtual object a pod references: its identity, and the force-sync annotation."""
    return _identity_and(obj, (FORCE_SYNC,))


def _identity_and_copy_of(obj: Obj) -> Obj:
    """Keep only what is read of a host object a pod references: its identity, and the annotations naming the
    virtual object it is the copy of (podtranslate/references.not_the_copy)."""
    return _identity_and(obj, (OBJECT_NAME, OBJECT_NAMESPACE))


def _host_service(obj: Obj) -> Obj:
    """A host Service as _service, and the annotations naming the virtual Service it is the copy of (the DNS
    Service's are checked)."""
    out = _service(obj)
    out["metadata"] = _identity_and_copy_of(obj)["metadata"]
    return out


def _service(obj: Obj) -> Obj:
    """Keep what the translation reads of a Service: its identity, ClusterIP and ports."""
    out = _identity_and(obj, ())
    spec = obj.get("spec") or {}
    out["spec"] = {"clusterIP": spec.get("clusterIP"),
                   "ports": [{k: p[k] for k in ("name", "port", "protocol") if k in p}
                             for p in spec.get("ports") or [] if isinstance(p, dict)]}
    return out
