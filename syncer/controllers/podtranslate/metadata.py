"""The metadata vcluster gives a host pod beyond its identity, and the three-way merge of labels and
annotations between a virtual pod and its host pod (pure).

Follows vcluster's pod translator (`translator.go`: `Translate`, `canAnnotateOwnerSetKind`; `diff.go`: `Diff`,
`GetExcludedAnnotations`) and `pkg/util/translate` (`GetOwnerReference`, `HostLabelNamespace`,
`LabelsBidirectionalUpdateFunctionMaps`, `AnnotationsBidirectionalUpdateFunction`, `mergeMaps`):

- `cluster-autoscaler.kubernetes.io/safe-to-evict`: "true" when the virtual pod has a controller (a
  ReplicaSet, StatefulSet, Job... recreates it), else "false", unless the pod sets it itself;
  `cluster-autoscaler.kubernetes.io/daemonset-pod: "true"` for a DaemonSet's pod;
- `vcluster.loft.sh/owner-references`: the virtual pod's owner references as JSON, and
  `vcluster.loft.sh/owner-set-kind`: the kind of its first `apps/v1` DaemonSet, Job, ReplicaSet or
  StatefulSet owner;
- an owner reference to the vcluster's Service in the host namespace (`experimental.syncSettings.setOwner`,
  default true), so that uninstalling the vcluster garbage-collects its tenants' pods;
- every label of the pod's virtual namespace as `vcluster.loft.sh/ns-label-<vcluster>-x-<sha256(key)[:10]>`,
  which is what translated `namespaceSelector`s and tenant NetworkPolicies select on.

**The three-way merge.** vcluster compares each side with the copy its informer saw before (edge-triggered).
Here the base is stored on the host pod, so the merge is level-triggered and survives restarts: for labels
the `vcluster.loft.sh/labels` annotation (the virtual labels at the last sync, which the downward API also
reads), for annotations `runtimeclass-syncer.io/synced-annotations` (each synced key with a hash of its
value). A key whose virtual value moved from the base goes to the host; else a key whose host value moved
from the base (or that only the host has: a webhook's, a CNI's, a service mesh's) comes back to the
virtual pod; keys the syncer derives (identity, owners, namespace labels, tokens...) go neither way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

Obj = dict[str, Any]
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
DAEMONSET_POD = "cluster-autoscaler.kubernetes.io/daemonset-pod"
OWNER_REFERENCES = "vcluster.loft.sh/owner-references"
OWNER_SET_KIND = "vcluster.loft.sh/owner-set-kind"
NS_LABEL_PREFIX = "vcluster.loft.sh/ns-label"
LABELS = "vcluster.loft.sh/labels"
SYNCED_ANNOTATIONS = "runtimeclass-syncer.io/synced-annotations"
SYNCED_IMAGES = "runtimeclass-syncer.io/synced-images"
_OWNER_SET_KINDS = ("DaemonSet", "Job", "ReplicaSet", "StatefulSet")


def controller_of(vpod: Obj) -> Obj | None:
    """The owner reference with `controller: true` (`metav1.GetControllerOf`), or None."""
    for ref in (vpod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def owner_annotations(vpod: Obj, own: Mapping[str, Any]) -> dict[str, str]:
    """The autoscaler and owner annotations of this module's docstring for `vpod`, whose own annotations are
    `own` (a `safe-to-evict` it sets itself is kept)."""
    out: dict[str, str] = {}
    controller = controller_of(vpod)
    if SAFE_TO_EVICT not in own:
        out[SAFE_TO_EVICT] = "true" if controller is not None else "false"
        if controller is not None and controller.get("kind") == "DaemonSet":
            out[DAEMONSET_POD] = "true"
    owners = (vpod.get("metadata") or {}).get("ownerReferences") or []
    if owners:
        out[OWNER_REFERENCES] = json.dumps(owners, separators=(",", ":"))
        for ref in owners:
            if isinstance(ref, dict) and ref.get("apiVersion") == "apps/v1" and ref.get("kind") in _OWNER_SET_KINDS:
                out[OWNER_SET_KIND] = ref["kind"]
                break
    return out


def owner_reference(service: Mapping[str, Any] | None, vpod: Obj) -> list[Obj]:
    """The host pod's owner references: the vcluster's Service (`{"name", "uid"}`), `controller` true when the
    virtual pod has a controller, as vcluster's `GetOwnerReference` does. None or no uid: none."""
    if not service or not service.get("name") or not service.get("uid"):
        return []
    return [{"apiVersion": "v1", "kind": "Service", "name": service["name"], "uid": service["uid"],
             "controller": controller_of(vpod) is not None}]


def namespace_labels(labels: Mapping[str, Any] | None, ns_label_key: Callable[[str], str]) -> dict[str, str]:
    """The host labels carrying the virtual namespace's `labels` (keys made by `ns_label_key`)."""
    return {ns_label_key(k): v for k, v in (labels or {}).items() if isinstance(v, str)}


def labels_annotation(labels: Mapping[str, Any]) -> str:
    """vcluster's `LabelsAnnotation`: sorted `key="json value"` lines."""
    return "\n".join(sorted(f"{k}={json.dumps(v)}" for k, v in labels.items()))


def parse_labels_annotation(text: Any) -> dict[str, str] | None:
    """The labels a `vcluster.loft.sh/labels` annotation holds, or None when it is absent or unreadable."""
    if not isinstance(text, str):
        return None
    out: dict[str, str] = {}
    for line in text.split("\n"):
        if not line:
            continue
        key, sep, raw = line.partition("=")
        try:
            value = json.loads(raw) if sep else None
        except ValueError:
            return None
        if not isinstance(value, str):
            return None
        out[key] = value
    return out


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:10]


def synced_annotations(annotations: Mapping[str, Any]) -> str:
    """The value of `runtimeclass-syncer.io/synced-annotations`: each synced key with a hash of its value,
    as compact sorted JSON (the base of the next three-way merge, without copying values twice)."""
    return json.dumps({k: _digest(str(v)) for k, v in sorted(annotations.items())}, separators=(",", ":"))


def synced_images(spec: Mapping[str, Any]) -> str:
    """The value of `runtimeclass-syncer.io/synced-images` for a translated pod spec: `<initContainers|containers>/
    <name>` -> a hash of the image the translation gives that container, as compact sorted JSON. The images of the
    last sync: an image the host pod has otherwise was changed on the host (a registry mirror's or a digest-pinning
    admission webhook at the create), not by the tenant, and is left as it is (`image_changed`)."""
    out = {f"{fld}/{c['name']}": _digest(c["image"]) for fld in ("initContainers", "containers")
           for c in spec.get(fld) or [] if isinstance(c, dict) and isinstance(c.get("name"), str)
           and isinstance(c.get("image"), str)}
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


def keep_recorded_image(record: str, host_record: Any, container: str) -> str:
    """`record` (a `synced_images` value) with the entry of `container` (`<field>/<name>`) as `host_record` (the host
    pod's value) has it, or without it when the host's has none: the image of a container an update leaves as it is
    (the syncer's own `/etc/hosts` init container, hosts.own_container) keeps its record too, so that a new image
    configured for it costs no host write of the record either. `record` as it is when either does not parse."""
    try:
        new, old = json.loads(record), json.loads(host_record) if isinstance(host_record, str) else None
    except ValueError:
        return record
    if not isinstance(new, dict) or not isinstance(old, dict):
        return record
    if container in old:
        new[container] = old[container]
    else:
        new.pop(container, None)
    return json.dumps(new, sort_keys=True, separators=(",", ":"))


def image_changed(base: Any, container: str, image: str) -> bool:
    """Whether the translated `image` of `container` (`<field>/<name>`) differs from the one of the last sync, as
    the host pod's `synced-images` annotation `base` records it. A host pod without a readable record (synced
    before it was kept) counts as changed: vcluster's rule, which sets every host image to the virtual one."""
    recorded = _parse_synced(base)
    return recorded is None or recorded.get(container) != _digest(image)


def _parse_synced(text: Any) -> dict[str, str] | None:
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def merge(virtual: Mapping[str, Any], host: Mapping[str, Any], base: Mapping[str, str] | None, *,
          to_host: Callable[[str], str | None], to_virtual: Callable[[str], str | None],
          same: Callable[[str, str], bool]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Three-way merge of one map (labels or annotations). Returns (new virtual, new host).

    Args:
        virtual, host: the current maps (host keys are host keys).
        base: the virtual map at the last sync (values as `same` compares them), None when unknown (a pod
            synced by an older version): then the virtual map wins for every key it has, nothing comes back.
        to_host: the host key of a virtual key, None for a key that never goes to the host.
        to_virtual: the virtual key of a host key, None for a key that never comes back (the syncer's own).
        same: whether a current value equals a base value.
    """
    new_v, new_h = dict(virtual), dict(host)
    if base is None:
        for k, v in virtual.items():
            hk = to_host(k)
            if hk is not None:
                new_h[hk] = v
        return new_v, new_h
    pushed: set[str] = set()
    for k in set(virtual) | set(base):
        hk = to_host(k)
        if hk is None:
            continue
        if k in virtual and (k not in base or not same(str(virtual[k]), base[k])):
            new_h[hk] = virtual[k]
            pushed.add(hk)
        elif k not in virtual and k in base:
            new_h.pop(hk, None)
            pushed.add(hk)
    for hk, v in host.items():
        vk = to_virtual(hk)
        if vk is None or hk in pushed or to_host(vk) != hk:
            continue
        if vk not in base or not same(str(v), base[vk]):
            new_v[vk] = v  # the host changed or added it
    for vk in base:
        hk = to_host(vk)
        if hk is not None and hk not in host and hk not in pushed and vk in virtual:
            new_v.pop(vk)  # the host removed it
    return new_v, new_h


def merge_labels(virtual: Mapping[str, Any], host: Mapping[str, Any], base: Any, *,
                 to_host: Callable[[str], str | None], to_virtual: Callable[[str], str | None]
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """`merge` for labels; `base` is the host pod's `vcluster.loft.sh/labels` annotation (None: unknown)."""
    return merge(virtual, host, parse_labels_annotation(base), to_host=to_host, to_virtual=to_virtual,
                 same=lambda a, b: a == b)


def merge_annotations(virtual: Mapping[str, Any], host: Mapping[str, Any], *, excluded: Callable[[str], bool]
                      ) -> tuple[dict[str, Any], dict[str, Any]]:
    """`merge` for annotations, the base read from the host's `runtimeclass-syncer.io/synced-annotations`;
    `excluded` keys (the syncer's own) go neither way."""
    base = _parse_synced(host.get(SYNCED_ANNOTATIONS))

    def key(k: str) -> str | None:
        return None if excluded(k) or k == SYNCED_ANNOTATIONS else k

    return merge(virtual, host, base, to_host=key, to_virtual=key, same=lambda v, h: _digest(v) == h)
