"""Pure translation between host and virtual objects (no I/O).

Sources: vcluster's `translate.SafeConcatName` and pod translator (single-namespace mode) for the
host pod name and metadata, behaviour.md sections 2 and 3 for what is copied.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonpointer import JsonPointer

from syncer.controllers.podtranslate import (
    affinity,
    downward,
    environment,
    hostpath,
    hosts,
    metadata,
    scheduling,
    tokens,
)
from syncer.controllers.podtranslate.options import PodOptions
from syncer.controllers.podtranslate.references import (
    RESOURCECLAIM,
    RESOURCECLAIMTEMPLATE,
    Dependency,
    translate_references,
)
from syncer.kube.controller import ReconcileError
from syncer.kube.jsonutil import copy_json

Obj = dict[str, Any]

MANAGED_BY = "vcluster.loft.sh/managed-by"
NAMESPACE_LABEL = "vcluster.loft.sh/namespace"
CONTROLLED_BY = "vcluster.loft.sh/controlled-by"
OBJECT_NAME = "vcluster.loft.sh/object-name"
OBJECT_NAMESPACE = "vcluster.loft.sh/object-namespace"
OBJECT_UID = "vcluster.loft.sh/object-uid"
OBJECT_KIND = "vcluster.loft.sh/object-kind"
# the host object's own name and namespace, beside the other object-* annotations (vcluster's
# `translate.HostNameAnnotation`, `HostNamespaceAnnotation`, written by `addHostAnnotations`)
OBJECT_HOST_NAME = "vcluster.loft.sh/object-host-name"
OBJECT_HOST_NAMESPACE = "vcluster.loft.sh/object-host-namespace"
POD_KIND = "/v1, Kind=Pod"

# Fields of a RuntimeClass that the invariant of behaviour.md section 2 compares.
RC_SPEC_FIELDS = ("handler", "overhead", "scheduling")
# Server-owned metadata that is never copied from the host.
_DROPPED_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "ownerReferences", "finalizers",
                 "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName",
                 "namespace")


def safe_concat_name(*parts: str) -> str:
    """Join with `-`; over 63 characters: first 52, `-`, 10 hex digits of the SHA-256 of the whole,
    then `.-` -> `-` (vcluster's `translate.SafeConcatName`)."""
    full = "-".join(parts)
    if len(full) > 63:
        digest = hashlib.sha256(full.encode()).hexdigest()[:10]
        return (full[:52] + "-" + digest).replace(".-", "-")
    return full


# Label keys vcluster rewrites on the host in single-namespace mode (translate/single_namespace.go,
# LabelsToTranslate): `release` would let a tenant pod join the vcluster's own Service (selector `app: vcluster,
# release: <vcluster>`), the others are vcluster's own markers.
TRANSLATED_LABELS = ("release", NAMESPACE_LABEL, MANAGED_BY, CONTROLLED_BY)
LABEL_PREFIX = "vcluster.loft.sh/label"


def host_label_key(key: str, vcluster_name: str) -> str:
    """The host key of virtual label `key`: itself, or for TRANSLATED_LABELS
    `vcluster.loft.sh/label-<vcluster>-x-<first 10 hex digits of sha256(key)>` made safe (vcluster's
    `HostLabel`/`convertLabelKeyWithPrefix`)."""
    if key not in TRANSLATED_LABELS:
        return key
    return safe_concat_name(LABEL_PREFIX, vcluster_name, "x", hashlib.sha256(key.encode()).hexdigest()[:10])


def host_labels(labels: Mapping[str, Any], vcluster_name: str) -> Obj:
    """A virtual object's labels as vcluster writes them on the host (`HostLabelsMap`): the keys of
    TRANSLATED_LABELS rewritten, and a virtual label that already has such a rewritten key dropped (a tenant
    cannot forge one)."""
    # every rewritten key starts with LABEL_PREFIX (safe_concat_name keeps the first 52 characters), so the
    # three hashes of the forged keys are needed only when some label has that prefix
    forged = {host_label_key(k, vcluster_name) for k in TRANSLATED_LABELS} \
        if any(k.startswith(LABEL_PREFIX) for k in labels) else set()
    return {host_label_key(k, vcluster_name): v for k, v in labels.items() if k not in forged}


def host_pod_name(name: str, namespace: str, vcluster_name: str) -> str:
    """The host name of virtual object `namespace/name` (a pod, or a ConfigMap, Secret, PVC or Service
    vcluster syncs): `<name>-x-<namespace>-x-<vcluster>` (made safe)."""
    return safe_concat_name(name, "x", namespace, "x", vcluster_name)


_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def base36_encode_bytes(data: bytes) -> str:
    """vcluster's `base36.EncodeBytes` (pkg/util/base36/base36.go `EncodeBytesAsBytes`): `data` as one big-endian
    number written in base 36 with the digits `0-9a-z` (no leading zero digit), after one `0` for each leading zero
    byte of `data` (so 32 bytes of a SHA-256 starting with a 0x00 byte give a `0` first)."""
    value, digits = int.from_bytes(data, "big"), []
    while value > 0:
        value, digit = divmod(value, 36)
        digits.append(_BASE36[digit])
    zero_bytes = len(data) - len(data.lstrip(b"\0"))
    return "0" * zero_bytes + "".join(reversed(digits))


def host_name_short(name: str, namespace: str, vcluster_name: str) -> str:
    """The host name vcluster gives a ResourceClaim or ResourceClaimTemplate `namespace/name`: its production mappers
    are `generic.NewMapper(ctx, &resourcev1.ResourceClaim{}, translate.Default.HostNameShort)` (and the same for
    `ResourceClaimTemplate`; pkg/mappings/resources/resourceclaims.go, resourceclaimtemplates.go), and
    `HostNameShort` (pkg/util/translate/single_namespace.go) is `"v"` and the first 13 characters of
    base36_encode_bytes(sha256("<name>-x-<namespace>-x-<vcluster>")); "" for an empty name. E.g. claim `my-claim`
    of namespace `default` in vcluster `test` is `vmxp9i7o0awtyx` on the host. Like `<name>-x-<namespace>-x-<vc>`,
    the joined string is the same for `a` in `b-x-c` and `a-x-b` in `c` (references.not_the_copy tells them apart).
    vcluster's own translator test (`TestTranslateResourceClaims`) registers its mappers with `HostName` instead,
    which is why it expects `<name>-x-<namespace>-x-<vc>`."""
    if not name:
        return ""
    digest = hashlib.sha256("-".join((name, "x", namespace, "x", vcluster_name)).encode()).digest()
    return "v" + base36_encode_bytes(digest)[:13]


def host_endpoints_name(name: str, namespace: str, vcluster_name: str) -> str:
    """The host name of virtual Endpoints `namespace/name` (a glusterfs volume's `endpoints`), as vcluster's
    Endpoints mapper gives it (pkg/mappings/resources/endpoints.go: `CreateEndpointsMapper` maps with
    `translate.Default.HostName`, and `endpointsMapper.VirtualToHost` names `default/kubernetes` the vcluster's own
    Endpoints, named like the vcluster): `<name>-x-<namespace>-x-<vcluster>` (host_pod_name), or `<vcluster>` for
    `default/kubernetes`."""
    if name == "kubernetes" and namespace == "default":
        return vcluster_name
    return host_pod_name(name, namespace, vcluster_name)


def host_pod_hostname(name: str) -> str:
    """`spec.hostname` of a host pod whose virtual pod sets none: the virtual name cut to 63 characters,
    every `.` replaced by `-` and trailing `-` trimmed, so it is a DNS-1123 label as a real API server
    requires (`ValidatePodSpec`: "must not contain dots"). vcluster's pod translator does the same
    ("truncate hostname if needed") but trims only one `-`, which leaves `a--` invalid; all are trimmed here.
    """
    return name[:63].replace(".", "-").rstrip("-")


def is_controlled_by_other(obj: Obj | None) -> bool:
    """True when the object carries `vcluster.loft.sh/controlled-by` (any value): left alone."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and CONTROLLED_BY in labels


def virtual_runtime_class(host_rc: Obj) -> Obj:
    """The virtual copy of a host RuntimeClass: same name, spec fields, labels and annotations (always
    present as maps); no server-owned metadata (uid, resourceVersion, generation, timestamps, owners,
    finalizers...)."""
    meta = host_rc.get("metadata") or {}
    # labels and annotations are always maps (possibly empty) so that a patch with a quoted key such as
    # metadata.annotations["x"] can create an entry on a class that has none.
    out_meta: Obj = {"name": meta["name"], "labels": dict(meta.get("labels") or {}),
                     "annotations": dict(meta.get("annotations") or {})}
    out: Obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": out_meta}
    for f in RC_SPEC_FIELDS:
        if host_rc.get(f) is not None:
            out[f] = copy_json(host_rc[f])
    return out


def runtime_class_view(rc: Obj) -> Obj:
    """The part of a RuntimeClass the sync invariant compares: spec fields, labels, annotations."""
    meta = rc.get("metadata") or {}
    view: Obj = {f: rc.get(f) for f in RC_SPEC_FIELDS if rc.get(f) is not None}
    view["labels"] = meta.get("labels") or {}
    view["annotations"] = meta.get("annotations") or {}
    return view


# The host pod remembers the virtual pod's own runtimeClassName (it may differ when
# sync.toHost.pods.runtimeClassName forces one), so the gate can be judged after the virtual pod is gone.
VIRTUAL_RUNTIME_CLASS = "runtimeclass-syncer.io/virtual-runtime-class"
# The host pod of a pod that named no class and got the runtime policy's default remembers that default (set once,
# when the host pod is created): the class it runs with, judged by the gate like a named one (orphaned when the host
# withdraws it, behaviour.md section 3 "Orphans"), whatever the policy's default becomes later.
DEFAULT_RUNTIME_CLASS = "runtimeclass-syncer.io/default-runtime-class"
# The host pod remembers the names of the scheduling gates the virtual pod had when the host pod was created (comma
# separated; "" for none): the gates the syncer may remove from the host pod when the virtual pod drops them. A gate
# the host's admission added (Kueue's `kueue.x-k8s.io/admission`) is not among them and stays.
SCHEDULING_GATES = "runtimeclass-syncer.io/scheduling-gates"
# Pod status fields kept virtual; every other field of the host pod's status is copied host -> virtual, as
# vcluster's `DesiredVirtualStatus` (translate/diff.go) copies the whole host status: `observedGeneration`,
# `nominatedNodeName` and fields newer Kubernetes versions add included. Not `qosClass`: the virtual API server
# computed its own when the pod was created, and from Kubernetes 1.32 refuses a status write that changes it
# (a host LimitRange can make the host's differ); vcluster keeps the virtual one too.
VIRTUAL_STATUS_FIELDS = ("qosClass",)
# Annotations the translation derives: they go to the host as translated, never come back, and are not merged
# (podupdate.py); vcluster's `GetExcludedAnnotations` (translate/diff.go) excludes its own the same way.
DERIVED_ANNOTATIONS = frozenset({
    OBJECT_NAME, OBJECT_NAMESPACE, OBJECT_UID, OBJECT_KIND, OBJECT_HOST_NAME, OBJECT_HOST_NAMESPACE,
    VIRTUAL_RUNTIME_CLASS, DEFAULT_RUNTIME_CLASS, downward.NAME, downward.NAMESPACE, downward.UID,
    downward.SERVICE_ACCOUNT_NAME,
    downward.LABELS, metadata.SAFE_TO_EVICT, metadata.DAEMONSET_POD, metadata.OWNER_REFERENCES,
    metadata.OWNER_SET_KIND, hosts.REWRITTEN, metadata.SYNCED_ANNOTATIONS, tokens.STATE_ANNOTATION,
    SCHEDULING_GATES, metadata.SYNCED_IMAGES})


def derived_annotation(key: str) -> bool:
    """True for an annotation the translation derives (DERIVED_ANNOTATIONS, service-account tokens)."""
    return key in DERIVED_ANNOTATIONS or key.startswith(tokens.TOKEN_ANNOTATION_PREFIX)


def synced_annotations(annotations: Mapping[str, Any]) -> str:
    """The host pod's record of the virtual pod's `annotations` (metadata.SYNCED_ANNOTATIONS, the base of the next
    three-way merge): the same at the create and after each update, without the derived ones, which the merge
    leaves out (a pod's own `cluster-autoscaler.kubernetes.io/safe-to-evict`, recorded at the create only, cost a
    host write at the first update)."""
    return metadata.synced_annotations({k: v for k, v in annotations.items() if not derived_annotation(k)})


class ServiceEnvironmentTooLarge(ReconcileError):
    """The service-link variables a pod's containers would get make a host pod the host refuses
    (`environment.MAX_HOST_POD_BYTES`). The message is the SyncWarning that refuses the pod; the pod reconciler
    records it and does not retry (a change of the pod looks again). Raised before the variables are built: their
    number is the namespace's ports times the pod's containers, both the tenant's."""


@dataclass(frozen=True)
class ClusterView:
    """What a host pod needs to know of the virtual cluster around it (behaviour.md section 3.1).

    Attributes:
        kube_ip: ClusterIP of the vcluster's Service in the host namespace (the virtual API server).
        dns_ip: ClusterIP of the host copy of the virtual cluster's `kube-system/kube-dns` Service.
        services: the Services of the pod's virtual namespace (service-link variables).
        service_account: the host service account tenant pods run as (the workload service account).
        namespace_labels: the labels of the pod's virtual namespace (None: unknown, none added).
        owner: the vcluster's Service in the host namespace, `{"name", "uid"}` (None: not known yet).
        host_uid: the uid of the host pod of the virtual pod with a given uid (kubelet host paths).
    """

    kube_ip: str
    dns_ip: str
    services: Sequence[Mapping[str, Any]] = dataclasses.field(default_factory=list)
    service_account: str = ""
    namespace_labels: Mapping[str, Any] | None = None
    owner: Mapping[str, Any] | None = None
    host_uid: Callable[[str], str | None] = lambda uid: None


def host_pod(vpod: Obj, *, vcluster_name: str, host_namespace: str, forced_runtime_class: str = "",
             default_runtime_class: str = "", cluster: ClusterView | None = None,
             options: PodOptions | None = None) -> Obj:
    """The host pod for a virtual pod (host_pod_and_dependencies without the dependencies)."""
    return host_pod_and_dependencies(vpod, vcluster_name=vcluster_name, host_namespace=host_namespace,
                                     forced_runtime_class=forced_runtime_class,
                                     default_runtime_class=default_runtime_class, cluster=cluster, options=options)[0]


def ns_label_key(key: str, vcluster_name: str) -> str:
    """The host label key carrying virtual namespace label `key` (vcluster's `HostLabelNamespace`)."""
    return affinity.ns_label_key(key, vcluster_name, safe_concat_name)


def priority_class_host_name(name: str, host_namespace: str, vcluster_name: str) -> str:
    """The host name vcluster gives a PriorityClass it syncs (`HostNameCluster`): `vcluster-<name>-x-<host
    namespace>-x-<vcluster>`, made safe."""
    return safe_concat_name("vcluster", name, "x", host_namespace, "x", vcluster_name)


def host_pod_and_dependencies(vpod: Obj, *, vcluster_name: str, host_namespace: str, forced_runtime_class: str = "",
                              default_runtime_class: str = "", cluster: ClusterView | None = None,
                              options: PodOptions | None = None,
                              for_update: bool = False) -> tuple[Obj, list[Dependency]]:
    """The host pod for a virtual pod (single-namespace mode), and the host objects it references.

    - name `<pod>-x-<namespace>-x-<vcluster>` (safe_concat_name), in `host_namespace`;
    - labels: the pod's plus managed-by and namespace; annotations: the pod's plus object-name,
      object-namespace, object-uid, object-kind, object-host-name and object-host-namespace (vcluster's
      `HostAnnotations`: the host pod's own name and namespace);
    - references to ConfigMaps, Secrets and PVCs rewritten to their host names
      (podtranslate.references; returned as the dependencies, in spec order; a glusterfs volume's Endpoints renamed
      too, host_endpoints_name, without a dependency), then, with vcluster's
      `sync.toHost.resourceClaims`/`resourceClaimTemplates` on, the claims and templates renamed to vcluster's
      short host names (host_name_short, `translateResourceClaims`), also as dependencies;
    - spec: the virtual spec without what host admission sets or what names virtual-only objects:
      serviceAccountName, overhead (service-account token projections are left for the reconciler to replace
      with tokens, podtranslate.tokens); priority, enforced tolerations and images (podtranslate.scheduling);
      vcluster's autoscaler and owner annotations and owner reference (podtranslate.metadata); the rewritten
      host paths (podtranslate.hostpath) and `/etc/hosts` of a pod with a subdomain (podtranslate.hosts);
      `automountServiceAccountToken: false`; hostname defaults
      to the virtual pod name made a DNS-1123 label (host_pod_hostname); `runtimeClassName` forced when
      `forced_runtime_class` is set, else the runtime policy's `default_runtime_class` for a pod that names none
      (remembered in the annotation DEFAULT_RUNTIME_CLASS);
    - with `cluster`: the workload service account, the virtual cluster's DNS, the `KUBERNETES_*` and
      service-link variables and the `kubernetes` host alias (podtranslate.environment), and downward-API
      fieldRefs reading the virtual identity from annotations (podtranslate.downward).
    """
    opts = options or PodOptions()
    meta = vpod["metadata"]
    labels = host_labels(meta.get("labels") or {}, vcluster_name)
    labels[MANAGED_BY] = vcluster_name
    labels[NAMESPACE_LABEL] = meta["namespace"]
    own_annotations = meta.get("annotations") or {}
    annotations = dict(own_annotations)
    hname = host_pod_name(meta["name"], meta["namespace"], vcluster_name)
    annotations.update({OBJECT_NAME: meta["name"], OBJECT_NAMESPACE: meta["namespace"],
                        OBJECT_UID: meta.get("uid", ""), OBJECT_KIND: POD_KIND,
                        OBJECT_HOST_NAME: hname, OBJECT_HOST_NAMESPACE: host_namespace})
    annotations.update(metadata.owner_annotations(vpod, own_annotations))
    # the bases of the next three-way merge of labels and annotations (podtranslate/metadata.py)
    annotations[metadata.LABELS] = metadata.labels_annotation(meta.get("labels") or {})
    annotations[metadata.SYNCED_ANNOTATIONS] = synced_annotations(own_annotations)
    if (vpod.get("spec") or {}).get("runtimeClassName"):
        annotations[VIRTUAL_RUNTIME_CLASS] = vpod["spec"]["runtimeClassName"]
    elif default_runtime_class and not forced_runtime_class:
        annotations[DEFAULT_RUNTIME_CLASS] = default_runtime_class
    annotations[SCHEDULING_GATES] = ",".join(gate_names((vpod.get("spec") or {}).get("schedulingGates")))
    spec = copy_json(vpod.get("spec") or {})
    for k in ("serviceAccountName", "serviceAccount", "overhead"):
        spec.pop(k, None)
    scheduling.translate_priority(
        spec, to_host=opts.priority_classes_to_host, from_host=opts.priority_classes_from_host,
        host_class_name=lambda n: priority_class_host_name(n, host_namespace, vcluster_name),
        default_class=opts.priority_class_name)
    spec["automountServiceAccountToken"] = False
    if not spec.get("hostname"):
        spec["hostname"] = host_pod_hostname(meta["name"])
    hosts.rewrite_hosts(spec, annotations, namespace=meta["namespace"], cluster_domain=opts.cluster_domain,
                        enabled=opts.rewrite_hosts, image=opts.rewrite_hosts_image,
                        resources=opts.rewrite_hosts_resources)
    scheduling.translate_images(spec, opts.translate_image)
    if forced_runtime_class:
        spec["runtimeClassName"] = forced_runtime_class
    elif default_runtime_class and not spec.get("runtimeClassName"):
        spec["runtimeClassName"] = default_runtime_class
    if opts.virtual_scheduler:  # the virtual cluster's scheduler chose the node (vcluster's Translate)
        for k in ("affinity", "topologySpreadConstraints", "nodeSelector"):
            spec.pop(k, None)
    else:
        affinity.translate_affinity(spec, meta["namespace"], vcluster_name, lambda k: host_label_key(k, vcluster_name),
                                    lambda k: ns_label_key(k, vcluster_name))
    if opts.node_selector:  # SyncToHost "ensure node selector"
        # vcluster merges it only into pods without a node and checks a pod's nodeName against the virtual
        # cluster's Nodes, which a tenant with cluster rights there can create; here a pod placed by hand, or by
        # the virtual scheduler onto such a Node, gets it too, so the host kubelet refuses it on a node outside the
        # selector (its admission's GeneralPredicates: kubernetes pkg/kubelet/lifecycle/predicate.go), whatever the
        # virtual Nodes say. The host nodes the virtual cluster has from the host match it.
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **opts.node_selector}
    claims: list[Dependency] = []  # the host claims and templates the pod names (a copy of another's is refused)
    for i, claim in enumerate(spec.get("resourceClaims") or []):
        for key, on, kind in (("resourceClaimName", opts.resource_claims, RESOURCECLAIM),
                              ("resourceClaimTemplateName", opts.resource_claim_templates, RESOURCECLAIMTEMPLATE)):
            if on and isinstance(claim, dict) and isinstance(claim.get(key), str):
                host_claim = host_name_short(claim[key], meta["namespace"], vcluster_name)
                claims.append(Dependency(kind, claim[key], host_claim, False, f"spec.resourceClaims[{i}].{key}"))
                claim[key] = host_claim
    if opts.enforce_tolerations:
        spec["tolerations"] = scheduling.add_tolerations(spec.get("tolerations") or [], opts.enforce_tolerations)
    deps = translate_references(spec, meta["name"], lambda n: host_pod_name(n, meta["namespace"], vcluster_name),
                                lambda n: host_endpoints_name(n, meta["namespace"], vcluster_name))
    deps += claims
    hostpath.rewrite_host_paths(spec, hostpath.virtual_path(host_namespace, vcluster_name),
                                physical=opts.physical_host_paths,
                                host_uid=cluster.host_uid if cluster is not None else lambda uid: None)
    owners: list[Obj] = []
    if cluster is not None:
        labels.update(metadata.namespace_labels(cluster.namespace_labels, lambda k: ns_label_key(k, vcluster_name)))
        if opts.set_owner:
            owners = metadata.owner_reference(cluster.owner, vpod)
        vspec = vpod.get("spec") or {}
        annotations.update(downward.identity_annotations(vpod))
        downward.translate_downward_api(spec, lambda k: host_label_key(k, vcluster_name))
        own_sa = (vpod.get("spec") or {}).get("serviceAccountName") or (vpod.get("spec") or {}).get("serviceAccount")
        if opts.service_accounts_to_host and own_sa:
            spec["serviceAccountName"] = host_pod_name(own_sa, meta["namespace"], vcluster_name)
        elif cluster.service_account:
            spec["serviceAccountName"] = cluster.service_account
        environment.translate_dns(spec, meta["namespace"], cluster.dns_ip, opts.cluster_domain)
        env = environment.service_environment(cluster.services, vspec.get("enableServiceLinks") is not False,
                                              cluster.kube_ip)
        fields = ("ephemeralContainers",) if for_update else environment.CONTAINER_FIELDS
        if environment.environment_bytes(env, spec, fields) > environment.MAX_HOST_POD_BYTES:
            if not for_update:
                raise ServiceEnvironmentTooLarge(
                    f'did not sync pod "{meta["name"]}" to host because the {len(env)} service-link variables of its '
                    f"namespace's Services in each of its {sum(len(spec.get(f) or []) for f in fields)} containers "
                    f"would make a host pod of more than {environment.MAX_HOST_POD_BYTES} bytes, which the host "
                    "refuses: set enableServiceLinks: false in the pod, or have fewer Services or ports in the "
                    "namespace")
            env = environment.service_environment([], False, cluster.kube_ip)  # a debug container of such a
            # pod (synced before its namespace's Services grew) gets the KUBERNETES_* variables only
        environment.add_environment(spec, env, cluster.kube_ip, opts.cluster_domain, fields)
    annotations[metadata.SYNCED_IMAGES] = metadata.synced_images(spec)  # the base of image changes (podupdate.py)
    host_meta: Obj = {"name": hname, "namespace": host_namespace, "labels": labels, "annotations": annotations}
    if owners:
        host_meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": host_meta, "spec": spec}, deps


def virtual_key_of_host_pod(hpod: Obj) -> str | None:
    """`namespace/name` of the virtual pod a host pod was synced from (from its annotations)."""
    ann = (hpod.get("metadata") or {}).get("annotations")
    if not isinstance(ann, dict):
        return None
    name, ns = ann.get(OBJECT_NAME), ann.get(OBJECT_NAMESPACE)
    return f"{ns}/{name}" if isinstance(name, str) and isinstance(ns, str) and name and ns else None


def virtual_claim_name(host_name: str, vspec: Mapping[str, Any], namespace: str, vcluster_name: str) -> str:
    """The name a resource-claim status of a host pod gives the virtual pod: `host_name` (a claim in the host
    namespace) maps back to the claim `c` that virtual pod spec `vspec` names itself (`spec.resourceClaims[]
    .resourceClaimName`) when `host_name` is the host name the syncer gave it, host_name_short(c, namespace,
    vcluster_name); any other name stays the host's, as vcluster's `convertResourceClaimStatuses`
    (translate/diff.go) keeps the host name when the mapping fails ("Keep host name if mapping fails").

    A short name is a hash and cannot be read back, and the claim's own annotations are no proof: vcluster reads the
    host claim's `vcluster.loft.sh/object-name` (`mappings.HostToVirtual`, generic.TryToTranslateBackByAnnotations),
    but the claims a status names are the ones the host's resourceclaim controller generated from a template
    (`<pod>-<claim>-<random>`), whose annotations and labels it copies from the template's `spec.metadata`, which the
    tenant writes; so only a name the syncer itself wrote into the host pod's spec is mapped, by hashing forward."""
    return virtual_claim_names(vspec, namespace, vcluster_name).get(host_name, host_name)


def virtual_claim_names(vspec: Mapping[str, Any], namespace: str, vcluster_name: str) -> dict[str, str]:
    """host name -> virtual name of each claim virtual pod spec `vspec` names itself (`virtual_claim_name`'s rule;
    the first of two that share a host name): built once per status, each claim hashed once, so a pod with
    thousands of claims and statuses costs linear work (a tenant sets as many as it likes)."""
    names: dict[str, str] = {}
    for claim in vspec.get("resourceClaims") or []:
        name = claim.get("resourceClaimName") if isinstance(claim, dict) else None
        if isinstance(name, str) and name:
            names.setdefault(host_name_short(name, namespace, vcluster_name), name)
    return names


# The pod condition types the kubelet, the scheduler and the control plane own (k8s.io/api core/v1 types.go:
# PodScheduled, PodReady, PodInitialized, ContainersReady, PodReadyToStartContainers and its alpha name PodHasNetwork,
# DisruptionTarget, PodResizePending, PodResizeInProgress). The API server accepts any qualified name as a readiness
# gate, so a tenant could list these; their conditions are never taken from the virtual pod.
SYSTEM_CONDITIONS = frozenset({"PodScheduled", "Ready", "Initialized", "ContainersReady", "PodReadyToStartContainers",
                               "PodHasNetwork", "DisruptionTarget", "PodResizePending", "PodResizeInProgress"})


def gate_names(gates: Any) -> list[str]:
    """The names of a pod spec's `schedulingGates` (a list of `{"name": ...}`), in order."""
    return [g["name"] for g in gates or [] if isinstance(g, dict) and isinstance(g.get("name"), str)]


def gate_types(spec: Mapping[str, Any]) -> list[str]:
    """The condition types of pod spec `spec`'s `readinessGates` that a controller in the virtual cluster sets: the
    conditions that go from the virtual pod's status to the host pod's (podupdate.host_gate_condition_ops), not back.
    A gate naming a condition of SYSTEM_CONDITIONS is left out: the host's kubelet and scheduler own those (a fake
    `Ready` would show a host pod ready before its containers are, a fake `PodScheduled=False` reason
    `Unschedulable` asks a host cluster-autoscaler for nodes). vcluster's `conditionsCopyBidirectional` copies every
    condition the virtual side changed; here only the gates' own go that way."""
    return [t for g in spec.get("readinessGates") or [] if isinstance(g, dict)
            and isinstance(t := g.get("conditionType"), str) and t and t not in SYSTEM_CONDITIONS]


def status_update(hpod: Obj, vpod: Obj, vcluster_name: str = "") -> Obj | None:
    """A merge patch for the virtual pod's status subresource that copies the host pod's status (every field but
    VIRTUAL_STATUS_FIELDS; a field the host no longer has is removed), or None when they are equal. The
    conditions of the pod's readiness gates stay the virtual pod's (a controller in the virtual cluster sets
    them; they go the other way, podupdate.py), and the statuses of containers the virtual pod does not have (a
    host webhook's sidecar) are left out, as vcluster's `stripInjectedSidecarContainers` does. With `vcluster_name`,
    resource-claim statuses name the virtual claims (virtual_claim_name)."""
    hs, vs = dict(hpod.get("status") or {}), vpod.get("status") or {}
    vspec = vpod.get("spec") or {}
    for field, spec_field in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
        if isinstance(hs.get(field), list):  # containers a host webhook injected (a mesh's sidecar) stay hidden
            names = {c.get("name") for c in vspec.get(spec_field) or [] if isinstance(c, dict)}
            hs[field] = [c for c in hs[field] if isinstance(c, dict) and c.get("name") in names]
    if vcluster_name and isinstance(hs.get("resourceClaimStatuses"), list):  # host claim names back to virtual ones
        ns = str((vpod.get("metadata") or {}).get("namespace", ""))
        claims = virtual_claim_names(vspec, ns, vcluster_name)
        hs["resourceClaimStatuses"] = [
            {**c, "resourceClaimName": claims.get(c["resourceClaimName"], c["resourceClaimName"])}
            if isinstance(c, dict) and isinstance(c.get("resourceClaimName"), str) else c
            for c in hs["resourceClaimStatuses"]]
    gates = gate_types(vspec)
    if gates:
        own = [c for c in vs.get("conditions") or [] if isinstance(c, dict) and c.get("type") in gates]
        hs["conditions"] = [c for c in hs.get("conditions") or [] if isinstance(c, dict)
                            and c.get("type") not in gates] + own or None
    fields = sorted((set(hs) | set(vs)) - set(VIRTUAL_STATUS_FIELDS))
    patch = {f: _stored(hs.get(f)) for f in fields if _stored(hs.get(f)) != _stored(vs.get(f))}
    return {"status": patch} if patch else None


def _stored(value: Any) -> Any:
    """A status field as the API server stores it: the Go types' `omitempty` drops an empty list, map or string and
    a zero number (None here), so `[]` and absent are the same field, as vcluster's `CalculateMergePatch` sees them
    (an `initContainerStatuses` left empty by hiding a host webhook's init container was written on every
    reconcile, and never stored)."""
    if value is None or isinstance(value, bool):
        return value
    return None if value in ([], {}, "", 0) else value


def version_guarded(vpod: Obj) -> bool:
    """Whether a status copy to `vpod` is guarded by its resourceVersion (`guarded_status_ops`): a pod with
    readiness gates and no conditions yet."""
    vs = vpod.get("status")
    return bool(gate_types(vpod.get("spec") or {})) and not (isinstance(vs, dict) and "conditions" in vs)


def guarded_status_ops(patch: Obj, vpod: Obj) -> list[Obj] | None:
    """Merge patch `patch` (status_update's) as JSON-patch operations for a pod with readiness gates whose
    conditions it writes: first a `test` that the virtual pod's `status.conditions` are still those of `vpod` (the
    cache's), since the list is written whole and a controller in the virtual cluster writes its gate's condition at
    any time; a write of it since then fails the patch (422) instead of being undone. A virtual pod without
    conditions yet (its first moments, when the controller may set its gate's first) is guarded by a `test` of its
    `metadata.resourceVersion` as the cache has it instead: JSON patch cannot test that a member is absent. None
    when no guard is needed (no gates, or conditions not written: then the merge patch as it is)."""
    status, vs = patch.get("status") or {}, vpod.get("status")
    if "conditions" not in status or not gate_types(vpod.get("spec") or {}):
        return None
    if isinstance(vs, dict) and "conditions" in vs:
        ops: list[Obj] = [{"op": "test", "path": "/status/conditions", "value": vs["conditions"]}]
    else:
        rv = (vpod.get("metadata") or {}).get("resourceVersion")
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv}]
        if not isinstance(vs, dict):  # no status at all: its parent first (the test above holds it absent)
            return [*ops, {"op": "add", "path": "/status", "value": {k: v for k, v in status.items() if v is not None}}]
    for f, v in status.items():
        path = JsonPointer.from_parts(["status", f]).path
        ops.append({"op": "remove", "path": path} if v is None else {"op": "add", "path": path, "value": v})
    return ops


def pod_shape_error(pod: Obj) -> str | None:
    """Why a pod from an API server cannot be translated (None when it can): the fields translation
    reads must have the types the Kubernetes API gives them."""
    meta, spec = pod.get("metadata"), pod.get("spec")
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("name", "namespace")):
        return "metadata.name and metadata.namespace must be strings"
    for k in ("labels", "annotations"):
        if meta.get(k) is not None and not isinstance(meta[k], dict):
            return f"metadata.{k} is not an object"
    if not isinstance(spec, dict):
        return "spec is not an object"
    for field in ("containers", "initContainers", "ephemeralContainers", "volumes"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, list) or not all(isinstance(c, dict) for c in value)):
            return f"spec.{field} is not a list of objects"
    if spec.get("runtimeClassName") is not None and not isinstance(spec["runtimeClassName"], str):
        return "spec.runtimeClassName is not a string"
    return None


def host_credential_field(spec: Mapping[str, Any]) -> str | None:
    """The first field of pod spec `spec` that would have the host issue the pod a credential of its own, None
    when there is none: a projected `podCertificate` source (Kubernetes 1.34 alpha, 1.35 beta: the host's kubelet
    asks the signer the pod names for a certificate identifying the host pod and its host service account). vcluster
    passes it through; here such a pod is not synced, as a host pod never gets the host's service-account token.
    E.g. `spec.volumes[0].projected.sources[1].podCertificate`."""
    for i, vol in enumerate(spec.get("volumes") or []):
        projected = vol.get("projected") if isinstance(vol, dict) else None
        sources = projected.get("sources") if isinstance(projected, dict) else None
        for j, src in enumerate(sources if isinstance(sources, list) else []):
            if isinstance(src, dict) and src.get("podCertificate") is not None:
                return f"spec.volumes[{i}].projected.sources[{j}].podCertificate"
    return None


def runtime_class_shape_error(rc: Obj) -> str | None:
    """Why a host RuntimeClass cannot be copied (None when it can)."""
    meta = rc.get("metadata")
    if not isinstance(meta, dict):
        return "metadata is not an object"
    for k in ("labels", "annotations"):
        if meta.get(k) is not None and not isinstance(meta[k], dict):
            return f"metadata.{k} is not an object"
    if not isinstance(rc.get("handler"), str):
        return "handler is not a string"
    for k in ("overhead", "scheduling"):
        if rc.get(k) is not None and not isinstance(rc[k], dict):
            return f"{k} is not an object"
    return None
