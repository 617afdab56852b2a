"""What changes on a synced pod pair after the host pod exists (pure): the host pod's mutable spec, both pods'
labels and annotations, the host's ephemeral containers and container resources, and readiness gates.

Follows vcluster's pod syncer (`syncer.go`: `Sync`, `resizeHostPodContainerResourcesInPlace`;
`ephemeral_containers.go`: `syncEphemeralContainers`; `translate/diff.go`: `Diff`, `calcSpecDiff`,
`conditionsCopyBidirectional`), with the differences named below.

- container and init container images, virtual -> host: the translated image (`translateImage`); not the image of
  the syncer's own `/etc/hosts` init container (podtranslate/hosts.own_container, as vcluster's `calcSpecDiff`);
- `activeDeadlineSeconds`, virtual -> host: set when the virtual pod sets it (a real server refuses removing it);
- `schedulingGates`, virtual -> host: the virtual pod's (a gate removed in the virtual cluster goes on the host);
- `nodeSelector` and the required node affinity, virtual -> host, while the host pod is gated (**different:**
  vcluster never updates them, so a Kueue-style controller that narrows a gated pod's placement and then removes
  its gate has the host pod scheduled without it): only the narrowing the API server allows a gated pod
  (`gated_placement`); what cannot go is named in a `SyncWarning`;
- tolerations, virtual -> host: the virtual pod's, then every toleration only the host has (its RuntimeClass and
  DefaultTolerationSeconds admission added them; a real server refuses removing one), then the enforced ones the
  host lacks;
- ephemeral containers, virtual -> host: each new one, translated, through `pods/ephemeralcontainers`
  (`kubectl debug` in the virtual cluster);
- container cpu/memory, virtual -> host: through `pods/resize`, for the cpu and memory values the virtual pod
  sets (**different:** vcluster compares whole resources, so a host LimitRange's defaults would be resized
  away again and again);
- labels and annotations, both ways: the three-way merge of podtranslate/metadata.py (**different:**
  level-triggered, its base stored on the host pod); namespace labels and vcluster's own keys always the
  translation's;
- readiness-gate conditions, virtual -> host: the virtual pod's conditions of its `readinessGates` types go to
  the host pod's status, where the kubelet reads them; every other condition goes host -> virtual.

Every host write is planned from the cache, which may be behind the host, and says only what it changes
(**different:** vcluster's `applyObjectWithPatch` in pkg/patcher/apply.go applies its merge patch to the cached
object and updates the whole object, its resourceVersion a precondition: any write in between, each kubelet status
write included, is a 409 and a retry): labels and annotations key by key, a readiness-gate condition by its index,
each change of a value the host has guarded by a JSON-patch `test` of the value the cache holds, and each list
replaced whole (scheduling gates, tolerations) guarded by a `test` of the whole list. A host write made in between
is therefore kept, or fails the patch (kube-apiserver's generic 422), which is then planned again from the fresh
cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonpointer import JsonPointer

from syncer.controllers import translate
from syncer.controllers.podtranslate import hosts, metadata, scheduling, tokens, trust

Obj = dict[str, Any]
# Annotations the translation derives: they go to the host as translated, never come back, and are not merged
# (translate.DERIVED_ANNOTATIONS, where the create's record of the synced annotations leaves them out too).
DERIVED_ANNOTATIONS = translate.DERIVED_ANNOTATIONS
derived_annotation = translate.derived_annotation
_SYSTEM_LABELS = (translate.MANAGED_BY, translate.NAMESPACE_LABEL)
RESIZABLE = ("cpu", "memory")


_SET_ONCE = (tokens.STATE_ANNOTATION, metadata.SAFE_TO_EVICT, metadata.DAEMONSET_POD, translate.SCHEDULING_GATES,
             translate.DEFAULT_RUNTIME_CLASS)


def _host_owned(key: str) -> bool:
    """A derived annotation set when the host pod is created and kept as the host has it from then on: the tokens
    and their renewal state, and the autoscaler's (vcluster sets those only when absent, and never merges them)."""
    return key.startswith(tokens.TOKEN_ANNOTATION_PREFIX) or key in _SET_ONCE


FIXED_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
FIXED_ANNOTATION = "kubernetes.io/config.mirror"


def fixed_annotation(key: str) -> bool:
    """True for a pod annotation the API server lets no update add, change or remove: AppArmor's
    `container.apparmor.security.beta.kubernetes.io/<container>` and the mirror pod's `kubernetes.io/config.mirror`
    (pkg/apis/core/validation/validation.go `ValidatePodSpecificAnnotationUpdates`). Such a key goes neither way in
    an update: the host's (a webhook's, or the host API server's AppArmor version skew at the create) copied to the
    virtual pod would have every update of it refused."""
    return key.startswith(FIXED_ANNOTATION_PREFIX) or key == FIXED_ANNOTATION


def _system_label(key: str) -> bool:
    return key in _SYSTEM_LABELS or key.startswith(metadata.NS_LABEL_PREFIX)


def host_label_key(key: str, vcluster_name: str) -> str | None:
    """The host key of virtual label `key`, None for a key that forges a rewritten one (translate.host_labels)."""
    if any(key == translate.host_label_key(k, vcluster_name) for k in translate.TRANSLATED_LABELS):
        return None
    return translate.host_label_key(key, vcluster_name)


def virtual_label_key(key: str, vcluster_name: str) -> str | None:
    """The virtual key of host label `key` (vcluster's `VirtualLabel`), None for the syncer's own labels, a raw
    key vcluster rewrites (`release`...), another vcluster's rewritten keys, and any key a tenant may not set
    (podtranslate/trust.py: it would not survive the next trip to the host)."""
    if _system_label(key) or key in translate.TRANSLATED_LABELS:
        return None
    for k in translate.TRANSLATED_LABELS:
        if translate.host_label_key(k, vcluster_name) == key:
            return k
    return None if key.startswith(translate.LABEL_PREFIX + "-") or trust.reserved_label(key) else key


@dataclass
class PodUpdate:
    """The writes that bring a synced pod pair together.

    Attributes:
        host_ops: JSON-patch operations on the host pod (labels, annotations, mutable spec).
        virtual_metadata: a merge patch of the virtual pod's labels and annotations (host changes coming back),
            with its resourceVersion as a precondition; None when nothing comes back.
        ephemeral: translated ephemeral containers to add on the host (`pods/ephemeralcontainers`).
        resize: `[{"name", "resources"}]` for the host pod's `pods/resize`.
        host_condition_ops: JSON-patch operations on the host pod's status (its readiness gates' conditions),
            [] when in sync.
        placement_kept: what of a gated virtual pod's narrowed placement cannot reach the host pod
            (`gated_placement`), one phrase each; [] when all of it goes.
    """

    host_ops: list[Obj] = field(default_factory=list)
    virtual_metadata: Obj | None = None
    ephemeral: list[Obj] = field(default_factory=list)
    resize: list[Obj] = field(default_factory=list)
    host_condition_ops: list[Obj] = field(default_factory=list)
    placement_kept: list[str] = field(default_factory=list)


def map_ops(field_: str, have: Any, want: Mapping[str, Any]) -> list[Obj]:
    """JSON-patch operations that turn the host pod's `metadata.<field_>` from `have` (the cache's, maybe behind
    the host) into `want`, key by key: a key the host wrote since the cache saw the pod stays. A key the cache holds
    is changed or removed only after a `test` of the value the cache holds, so a host write of that key in between
    fails the patch (422) instead of being lost. A missing map is added whole. [] when they are equal."""
    if not isinstance(have, dict):
        return [{"op": "add", "path": f"/metadata/{field_}", "value": dict(want)}] if want else []
    ops: list[Obj] = []
    for k, v in want.items():
        path = JsonPointer.from_parts(["metadata", field_, k]).path
        if k not in have:
            ops.append({"op": "add", "path": path, "value": v})
        elif have[k] != v:
            ops += [{"op": "test", "path": path, "value": have[k]}, {"op": "replace", "path": path, "value": v}]
    for k, v in have.items():
        if k not in want:
            path = JsonPointer.from_parts(["metadata", field_, k]).path
            ops += [{"op": "test", "path": path, "value": v}, {"op": "remove", "path": path}]
    return ops


def _list_ops(path: str, have: Any, want: Any) -> list[Obj]:
    """Replace the host pod's list (or map) at `path` with `want`, after a `test` that it is still `have` (the
    cache's): a host write of it in between fails the patch (422) instead of being undone."""
    if have is None:
        return [{"op": "add", "path": path, "value": want}]
    return [{"op": "test", "path": path, "value": have}, {"op": "replace", "path": path, "value": want}]


def _map_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> Obj:
    """A merge patch turning map `old` into `new` (removed keys as null)."""
    patch: Obj = {k: v for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch


def merge_metadata(desired: Obj, host: Obj, vpod: Obj, vcluster_name: str) -> tuple[Obj, Obj, Obj, Obj]:
    """The three-way merge of labels and annotations (podtranslate/metadata.py): returns (virtual labels, virtual
    annotations, host labels, host annotations) as they should be."""
    vmeta, hmeta, dmeta = vpod.get("metadata") or {}, host.get("metadata") or {}, desired["metadata"]
    v_labels, v_ann = vmeta.get("labels") or {}, vmeta.get("annotations") or {}
    h_labels, h_ann = hmeta.get("labels") or {}, hmeta.get("annotations") or {}
    new_vl, new_hl = metadata.merge_labels(
        v_labels, {k: v for k, v in h_labels.items() if not _system_label(k)}, h_ann.get(metadata.LABELS),
        to_host=lambda k: host_label_key(k, vcluster_name), to_virtual=lambda k: virtual_label_key(k, vcluster_name))
    new_hl.update({k: v for k, v in dmeta["labels"].items() if _system_label(k)})
    # keys a tenant may not set (podtranslate/trust.py) and keys no update may change go neither way: on the host
    # they stay as the host has them
    new_va, new_ha = metadata.merge_annotations(
        v_ann, h_ann, excluded=lambda k: derived_annotation(k) or trust.reserved_annotation(k) or fixed_annotation(k))
    for k in [k for k in new_ha if derived_annotation(k) and not _host_owned(k)]:
        if k not in dmeta["annotations"]:
            del new_ha[k]
    new_ha.update({k: v for k, v in dmeta["annotations"].items() if derived_annotation(k) and not _host_owned(k)})
    if isinstance(new_ha.get(metadata.SYNCED_IMAGES), str) and hosts.own_container(
            hosts.CONTAINER, h_ann, (vpod.get("spec") or {}).get("initContainers")):  # its image stays: its record too
        new_ha[metadata.SYNCED_IMAGES] = metadata.keep_recorded_image(
            new_ha[metadata.SYNCED_IMAGES], h_ann.get(metadata.SYNCED_IMAGES), f"initContainers/{hosts.CONTAINER}")
    new_ha[metadata.LABELS] = metadata.labels_annotation(new_vl)
    new_ha[metadata.SYNCED_ANNOTATIONS] = translate.synced_annotations(new_va)  # as at the create
    return new_vl, new_va, new_hl, new_ha


def scheduling_gates(desired: list[Any], host: list[Any], synced: Any) -> list[Any]:
    """The host pod's scheduling gates as they should be: the host's, less those the virtual pod had when the host
    pod was created (`synced`, the host pod's translate.SCHEDULING_GATES) and has dropped since. A gate the host's
    admission added at the create (Kueue's `kueue.x-k8s.io/admission`, a quota's) stays: vcluster's `calcSpecDiff`
    sets the host's gates to the virtual pod's, which removes it and lets the pod past the host's quota. A host pod
    without the record (created before it was kept) gets vcluster's rule. The API server allows only removing
    gates once a pod exists (`ValidatePodUpdate`), so the virtual pod's can only shrink."""
    if not isinstance(synced, str):
        return desired
    from_virtual = set(synced.split(",")) - {""}
    keep = set(translate.gate_names(desired))
    return [g for g in host if not isinstance(g, dict) or g.get("name") in keep or g.get("name") not in from_virtual]


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _required_node_affinity(spec: Obj) -> Any:
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    return node.get(REQUIRED) if isinstance(node, dict) else None


def _terms(required: Any) -> list[Any]:
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    return terms if isinstance(terms, list) else []


def _only_additions(new: Any, old: Any) -> bool:
    """`validateNodeSelectorTermHasOnlyAdditions`: an empty old term stays empty; the old term's matchExpressions
    and matchFields are the first ones of the new term's."""
    new, old = (new if isinstance(new, dict) else {}), (old if isinstance(old, dict) else {})
    if not old.get("matchExpressions") and not old.get("matchFields"):
        return not new.get("matchExpressions") and not new.get("matchFields")
    return all(list(new.get(k) or [])[:len(old.get(k) or [])] == list(old.get(k) or [])
               for k in ("matchExpressions", "matchFields"))


def gated_placement(dspec: Obj, hspec: Obj) -> tuple[list[Obj], list[str]]:
    """The narrowing of a gated pod's placement the host pod gets while it is gated (`hspec` has scheduling gates):
    (JSON-patch operations, what is kept back). The API server allows a gated pod's update only to add nodeSelector
    entries and node affinity requirements (kubernetes pkg/apis/core/validation/validation.go `ValidatePodUpdate`,
    "validations specific to gated pods": `validateNodeSelectorMutation`, `validateNodeAffinityMutation`), so the
    virtual pod (`dspec` its translation) can only have narrowed; the host pod gets:
    - each nodeSelector entry of the translation it lacks. One it has with another value (its RuntimeClass's
      `scheduling.nodeSelector`, merged at the create) stays and is kept back: the host allows no change of it;
    - the translation's required node affinity, when the host allows it: the host pod has no required terms, or as
      many as the translation, each of the host's a prefix of the translation's (requirements added at their
      end). Otherwise (a host webhook changed them) it is kept back whole. Preferred terms are not updated.
    Each write is guarded by a `test` of the value the cache holds (a host write in between fails the patch, which
    is planned again). ([], []) when the host pod is not gated or nothing changed."""
    if not hspec.get("schedulingGates"):
        return [], []
    ops: list[Obj] = []
    kept: list[str] = []
    want, have = dspec.get("nodeSelector") or {}, hspec.get("nodeSelector")
    host_selector = have if isinstance(have, dict) else {}
    added = {k: v for k, v in want.items() if k not in host_selector}
    kept += [f"nodeSelector {k}={v} (the host pod has {k}={host_selector[k]})" for k, v in want.items()
             if k in host_selector and host_selector[k] != v]
    if added:
        ops += _list_ops("/spec/nodeSelector", have, {**host_selector, **added})
    required, host_required = _required_node_affinity(dspec), _required_node_affinity(hspec)
    if required is not None and required != host_required:
        terms, host_terms = _terms(required), _terms(host_required)
        if host_terms and (len(terms) != len(host_terms) or
                           not all(map(_only_additions, terms, host_terms))):
            kept.append("the required node affinity (the host pod's terms are not a part of it)")
        else:
            affinity = hspec.get("affinity")
            node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
            if not isinstance(affinity, dict):
                ops.append({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {REQUIRED: required}}})
            elif not isinstance(node, dict):
                ops += [{"op": "test", "path": "/spec/affinity", "value": affinity},
                        {"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {REQUIRED: required}}]
            else:
                ops += [{"op": "test", "path": "/spec/affinity/nodeAffinity", "value": node},
                        {"op": "add", "path": f"/spec/affinity/nodeAffinity/{REQUIRED}", "value": required}]
    return ops, kept


def _same_toleration(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, dict) and isinstance(b, dict) and scheduling.same_toleration(a, b))


def _tolerations(desired: Sequence[Any], host: Sequence[Any], virtual: Sequence[Any]) -> list[Any]:
    """The host pod's tolerations as they should be, in vcluster's order (translate/diff.go `calcSpecDiff`): the
    virtual pod's (those of the translation `desired` that `virtual`, the virtual pod's own, has), then the host's
    others in their order, then the enforced ones (the rest of `desired`) the host lacks. So a host pod as created
    (the virtual pod's, the enforced ones, then what the host's admission appended) is left as it is, and a
    toleration only the host has keeps its place (`TestDiffTolerationSync`, "remove toleration"). Compared as the API
    server does (an empty `value` is absent): an enforced `key=:Effect` toleration reads back without its `value`,
    and is not added again. A host toleration that a desired one equals but for `tolerationSeconds` is that one
    changed, not another: it is replaced (by the virtual pod's, at the virtual pod's place; by an enforced one, in
    its place), as the API server allows (pkg/apis/core/validation `validateOnlyAddedTolerations`: an existing
    toleration may change its tolerationSeconds only); kept beside it, the shorter time would still evict the pod
    (the taint manager takes the smallest). Linear in the number of tolerations (`scheduling.toleration_key`): a
    tenant sets as many as it likes (no limit in ValidatePod)."""
    key = scheduling.toleration_key
    own_keys = {key(t) for t in virtual if isinstance(t, dict)}
    own: list[Any] = []
    own_full: set[str] = set()  # the virtual pod's, whole
    replaced: set[str] = set()  # the virtual pod's, without tolerationSeconds
    enforced: dict[str, Any] = {}  # the others, by their key without tolerationSeconds
    for d in desired:
        if not isinstance(d, dict):
            own.append(d)
            continue
        full, k = key(d), key(d, seconds=False)
        if full in own_keys:
            own.append(d)
            own_full.add(full)
            replaced.add(k)
        else:
            enforced[k] = d
    out = list(own)
    for t in host:
        if not isinstance(t, dict):
            if t not in own:
                out.append(t)
            continue
        full, k = key(t), key(t, seconds=False)
        if full in own_full:
            continue  # the virtual pod's, first already
        if k in enforced and key(enforced[k]) == full:
            out.append(enforced.pop(k))  # an enforced one as it is, in its place (one the virtual pod's equals
            continue  # but for tolerationSeconds included)
        if k in replaced:
            continue  # the virtual pod's, its tolerationSeconds changed since
        out.append(enforced.pop(k) if k in enforced else t)  # an enforced one's tolerationSeconds set, in its place
    return [*out, *enforced.values()]


def _resize(desired: Sequence[Any], host: Sequence[Any]) -> list[Obj]:
    """The containers whose cpu/memory requests or limits the virtual pod sets to other values than the host's."""
    have = {c.get("name"): c.get("resources") or {} for c in host if isinstance(c, dict)}
    out: list[Obj] = []
    for c in desired:
        if not isinstance(c, dict) or c.get("name") not in have:
            continue
        want, got = c.get("resources") or {}, have[c["name"]]
        changed = {kind: {r: q for r, q in (want.get(kind) or {}).items() if r in RESIZABLE}
                   for kind in ("requests", "limits")}
        if any((got.get(kind) or {}).get(r) != q for kind, rs in changed.items() for r, q in rs.items()):
            out.append({"name": c["name"], "resources": {k: v for k, v in changed.items() if v}})
    return out


def resize_ops(host: Obj, resize: Sequence[Obj]) -> list[Obj]:
    """JSON-patch operations for `pods/resize`: each container's resources with the new cpu/memory values, guarded
    by a `test` of the container's name."""
    ops: list[Obj] = []
    want = {r["name"]: r["resources"] for r in resize}
    for i, c in enumerate((host.get("spec") or {}).get("containers") or []):
        if not isinstance(c, dict) or c.get("name") not in want:
            continue
        # the host container's resources as they are (`claims`, a list of DRA claims, included: the resize may
        # change cpu and memory only, and a resources object without its claims would be refused), the new values
        # over them
        resources = {k: dict(v) if isinstance(v, dict) else v for k, v in (c.get("resources") or {}).items()}
        for kind, values in want[c["name"]].items():
            resources.setdefault(kind, {}).update(values)
        ops.append({"op": "test", "path": f"/spec/containers/{i}/name", "value": c["name"]})
        ops.append({"op": "add", "path": f"/spec/containers/{i}/resources", "value": resources})
    return ops


# Fields of a pod condition that a host drops while a newer virtual server keeps them: `observedGeneration`
# (PodObservedGenerationTracking, off before 1.34; kubernetes pkg/api/pod/util.go `dropDisabledPodStatusFields`).
_HOST_MAY_DROP = frozenset({"observedGeneration"})


def same_gate_condition(host_condition: Obj, virtual_condition: Obj) -> bool:
    """Whether the host's condition of a readiness gate already says what the virtual one says: equal, or equal but
    for a field the host's version drops (`_HOST_MAY_DROP`) and its condition lacks. Written again, such a condition
    would be a status write that changes nothing on each reconcile of the pod. The cost: a host that does keep the
    field, whose condition lacks it, gets it only with the condition's next other change (the kubelet reads a
    gate's `status`, not its `observedGeneration`)."""
    return host_condition == virtual_condition or \
        host_condition == {k: v for k, v in virtual_condition.items() if k not in _HOST_MAY_DROP}


def host_gate_condition_ops(vpod: Obj, host: Obj) -> list[Obj]:
    """JSON-patch operations on the host pod's status that set the conditions of the pod's readiness gates to the
    virtual pod's, [] when they already agree (or the pod has no gates). Each condition is written alone, the one
    the host has replaced after a `test` that its index still holds it as the cache does: the kubelet writes the
    pod's other conditions at any time, and a write of the whole list would undo one made since the cache saw the
    pod. One the host lacks is appended after a `test` of the whole list as the cache holds it: a cache behind the
    syncer's own earlier append would otherwise add the condition twice (the kubelet reads the first)."""
    types = translate.gate_types(vpod.get("spec") or {})
    if not types:
        return []
    virtual = {c.get("type"): c for c in (vpod.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
    want = [virtual[t] for t in types if t in virtual]
    current = (host.get("status") or {}).get("conditions")
    if not isinstance(current, list):
        return [{"op": "add", "path": "/status/conditions", "value": want}] if want else []
    index = {c.get("type"): i for i, c in enumerate(current) if isinstance(c, dict)}
    ops: list[Obj] = []
    if any(c.get("type") not in index for c in want):
        ops.append({"op": "test", "path": "/status/conditions", "value": current})
    for c in want:
        i = index.get(c.get("type"))
        if i is None:
            ops.append({"op": "add", "path": "/status/conditions/-", "value": c})
        elif not same_gate_condition(current[i], c):
            ops += [{"op": "test", "path": f"/status/conditions/{i}", "value": current[i]},
                    {"op": "replace", "path": f"/status/conditions/{i}", "value": c}]
    return ops


def plan_update(desired: Obj, host: Obj, vpod: Obj, *, vcluster_name: str) -> PodUpdate:
    """Compare the translation `desired` of `vpod` with the `host` pod; returns the writes (the table of this
    module's docstring). Each image change is guarded by a `test` of the container's name."""
    out = PodUpdate()
    new_vl, new_va, new_hl, new_ha = merge_metadata(desired, host, vpod, vcluster_name)
    vmeta, hmeta = vpod.get("metadata") or {}, host.get("metadata") or {}
    vpatch: Obj = {}
    if (lp := _map_patch(vmeta.get("labels") or {}, new_vl)):
        vpatch["labels"] = lp
    if (ap := _map_patch(vmeta.get("annotations") or {}, new_va)):
        vpatch["annotations"] = ap
    if vpatch:
        out.virtual_metadata = {"metadata": {"resourceVersion": vmeta.get("resourceVersion"), **vpatch}}
    for k, new in (("labels", new_hl), ("annotations", new_ha)):
        out.host_ops += map_ops(k, hmeta.get(k), new)
    dspec, hspec = desired.get("spec") or {}, host.get("spec") or {}
    synced = (hmeta.get("annotations") or {}).get(metadata.SYNCED_IMAGES)
    for fld in ("initContainers", "containers"):
        want = {c.get("name"): c.get("image") for c in dspec.get(fld) or []}
        for i, c in enumerate(hspec.get(fld) or []):
            if fld == "initContainers" and hosts.own_container(c.get("name"), hmeta.get("annotations") or {},
                                                               (vpod.get("spec") or {}).get("initContainers")):
                continue  # the /etc/hosts init container keeps the image it started with (vcluster's calcSpecDiff)
            image = want.get(c.get("name"))
            # only an image the virtual pod changed since the last sync: one a host webhook set stays (vcluster's
            # calcSpecDiff sets it back, which restarts the container with an image the host's policy replaced)
            if image is not None and image != c.get("image") and \
                    metadata.image_changed(synced, f"{fld}/{c.get('name')}", image):
                out.host_ops.append({"op": "test", "path": f"/spec/{fld}/{i}/name", "value": c.get("name")})
                out.host_ops.append({"op": "replace", "path": f"/spec/{fld}/{i}/image", "value": image})
    ads = dspec.get("activeDeadlineSeconds")
    if ads is not None and ads != hspec.get("activeDeadlineSeconds"):
        out.host_ops.append({"op": "add", "path": "/spec/activeDeadlineSeconds", "value": ads})
    gates = scheduling_gates(dspec.get("schedulingGates") or [], hspec.get("schedulingGates") or [],
                             (hmeta.get("annotations") or {}).get(translate.SCHEDULING_GATES))
    placement, out.placement_kept = gated_placement(dspec, hspec)  # validated against the gated pod the host has
    out.host_ops += placement
    if gates != (hspec.get("schedulingGates") or []):
        out.host_ops += _list_ops("/spec/schedulingGates", hspec.get("schedulingGates"), gates)
    host_tolerations = hspec.get("tolerations") or []
    tolerations = _tolerations(dspec.get("tolerations") or [], host_tolerations,
                               (vpod.get("spec") or {}).get("tolerations") or [])
    if len(tolerations) != len(host_tolerations) or not all(map(_same_toleration, tolerations, host_tolerations)):
        out.host_ops += _list_ops("/spec/tolerations", hspec.get("tolerations"), tolerations)
    have = {c.get("name") for c in hspec.get("ephemeralContainers") or [] if isinstance(c, dict)}
    out.ephemeral = [c for c in dspec.get("ephemeralContainers") or [] if isinstance(c, dict)
                     and c.get("name") not in have]
    out.resize = _resize(dspec.get("containers") or [], hspec.get("containers") or [])
    out.host_condition_ops = host_gate_condition_ops(vpod, host)
    return out
