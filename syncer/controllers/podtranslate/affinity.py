"""Inter-pod affinity and topology spread, confined to the virtual cluster (pure).

On the host, one namespace holds the pods of every virtual namespace (and of nothing else of this
vcluster), so a term's label selector must be confined, as vcluster's pod translator does in
single-namespace mode (`translator.go`: `translatePodAffinity`, `translatePodAffinityTerm`,
`translateTopologySpreadConstraints`; `pkg/util/translate/labels.go`: `HostLabelSelector`,
`MergeLabelSelectors`):

- every selector's keys are host label keys (`release` and vcluster's markers rewritten, translate.py);
- a pod affinity term with a selector also gets `vcluster.loft.sh/managed-by: <vcluster>`, and:
  `namespaces` -> a `vcluster.loft.sh/namespace In (...)` requirement (unless an empty namespaceSelector
  selects every namespace); else a `namespaceSelector` -> its requirements with keys made
  `vcluster.loft.sh/ns-label-<vcluster>-x-<hash>`; else this pod's namespace; `namespaces` and
  `namespaceSelector` themselves are dropped (the host namespace is the only one);
- a topology spread constraint's selector gets the pod's namespace and the managed-by label.
A term without a label selector matches nothing and is left as it is.

A term with both `namespaces` and a non-empty `namespaceSelector` selects the union of the two, which one label
selector cannot say: as vcluster does, the `namespaces` are kept and the `namespaceSelector` is ignored, and the
virtual pod gets a `SyncWarning` in vcluster's words (IGNORED_NAMESPACE_SELECTOR; ignored_namespace_selectors counts
such terms).

**Label keys** (`matchLabelKeys`, `mismatchLabelKeys`). On create, kube-apiserver folds each key the pod has a label
of into the selector, `key In (value)` or `key NotIn (value)` (pkg/registry/core/pod/strategy.go, `PrepareForCreate`:
`mutatePodAffinity` from 1.31, where MatchLabelKeysInPodAffinity is on; `mutateTopologySpreadConstraints` from 1.34,
MatchLabelKeysInPodTopologySpreadSelectorMerge), keeps the keys, and refuses a selector that names a
`matchLabelKeys` key twice (pkg/apis/core/validation: `ValidateMatchLabelKeysAndMismatchLabelKeys`, `exists in both
matchLabelKeys and labelSelector`; before 1.34 a spread constraint's key may not be in its selector at all). The
virtual pod's selectors therefore already hold what its keys mean, and a host that folds them again refuses the
pod (vcluster issue 3684 for spread constraints). vcluster's new affinity term has only the selector and the topology
key (`translatePodAffinityTerm`), so it drops the keys of every term; here a term or constraint keeps its other fields,
and of its keys only those its translated selector does not name (`_label_keys`): a key the selector names was
folded in by the virtual API server (its own validation refuses a selector naming a `matchLabelKeys` key otherwise),
and a `mismatchLabelKeys` key whose requirement the tenant wrote is inert on the host pod (its labels are the virtual
pod's), so dropping it changes no result. A key the selector does not name is kept, made a host label key like the
selector's: the virtual pod has no label of it (nothing to fold), or its virtual API server predates the fold of
spread constraints (before 1.34), whose keys the host's scheduler or API server then applies to the host pod's
labels.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
MANAGED_BY = "vcluster.loft.sh/managed-by"
NAMESPACE_LABEL = "vcluster.loft.sh/namespace"
NS_LABEL_PREFIX = "vcluster.loft.sh/ns-label"
# vcluster's SyncWarning for such a term (translator.go, translatePodAffinityTerm), word for word
IGNORED_NAMESPACE_SELECTOR = (
    "Inter-pod affinity rule(s) that use both .namespaces and .namespaceSelector fields in the same term are not "
    "supported by vcluster yet. The .namespaceSelector fields of the unsupported affinity entries will be ignored.")


def _selector(sel: Any, key: Callable[[str], str]) -> Obj | None:
    """`hostLabelSelector`: the same selector with every key mapped by `key` (None stays None)."""
    if not isinstance(sel, dict):
        return None
    out: Obj = {}
    if isinstance(sel.get("matchLabels"), dict):
        out["matchLabels"] = {key(k): v for k, v in sel["matchLabels"].items()}
    exprs = [e for e in sel.get("matchExpressions") or [] if isinstance(e, dict)]
    if exprs:
        out["matchExpressions"] = [{**e, "key": key(str(e.get("key", "")))} for e in exprs]
    return out


def _is_empty(sel: Any) -> bool:
    return isinstance(sel, dict) and not sel.get("matchLabels") and not sel.get("matchExpressions")


def translate_affinity(spec: Obj, namespace: str, vcluster_name: str, host_key: Callable[[str], str],
                       ns_key: Callable[[str], str]) -> None:
    """Confine the pod (anti-)affinity terms and topology spread constraints of a (copied) pod spec to the
    virtual cluster (mutates `spec`). `host_key` maps a label key to its host key, `ns_key` a namespace
    label key to the host pod label that carries it."""
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        for kind in ("podAffinity", "podAntiAffinity"):
            rules = affinity.get(kind)
            if not isinstance(rules, dict):
                continue
            required = rules.get("requiredDuringSchedulingIgnoredDuringExecution")
            if isinstance(required, list):
                rules["requiredDuringSchedulingIgnoredDuringExecution"] = [
                    _term(t, namespace, vcluster_name, host_key, ns_key) if isinstance(t, dict) else t
                    for t in required]
            for weighted in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
                if isinstance(weighted, dict) and isinstance(weighted.get("podAffinityTerm"), dict):
                    weighted["podAffinityTerm"] = _term(weighted["podAffinityTerm"], namespace, vcluster_name,
                                                        host_key, ns_key)
    for c in spec.get("topologySpreadConstraints") or []:
        if isinstance(c, dict) and isinstance(c.get("labelSelector"), dict):
            sel = _selector(c["labelSelector"], host_key) or {}
            sel.setdefault("matchLabels", {}).update({NAMESPACE_LABEL: namespace, MANAGED_BY: vcluster_name})
            c["labelSelector"] = sel
            _label_keys(c, sel, host_key)


def _label_keys(term: Obj, sel: Obj, host_key: Callable[[str], str]) -> None:
    """Keep, of a (copied) term's or constraint's `matchLabelKeys` and `mismatchLabelKeys`, the keys its translated
    selector `sel` names no requirement of, as host label keys; a list left empty goes (mutates `term`). See the
    module's "Label keys"."""
    named = set(sel.get("matchLabels") or {}) | {e.get("key") for e in sel.get("matchExpressions") or []}
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        keys = [host_key(k) for k in term.pop(field, None) or [] if isinstance(k, str)]
        kept = [k for k in keys if k not in named]
        if kept:
            term[field] = kept


def _term(term: Obj, namespace: str, vcluster_name: str, host_key: Callable[[str], str],
          ns_key: Callable[[str], str]) -> Obj:
    out = {k: v for k, v in term.items() if k not in ("namespaces", "namespaceSelector", "labelSelector")}
    sel = _selector(term.get("labelSelector"), host_key)
    if sel is None:
        return out  # no selector matches nothing (Kubernetes); nothing to confine
    namespaces = [n for n in term.get("namespaces") or [] if isinstance(n, str)]
    ns_sel = term.get("namespaceSelector")
    if namespaces:
        if ns_sel is None or not _is_empty(ns_sel):  # an empty namespaceSelector already selects every namespace
            sel.setdefault("matchExpressions", []).append(
                {"key": NAMESPACE_LABEL, "operator": "In", "values": namespaces})
    elif isinstance(ns_sel, dict):
        translated = _selector(ns_sel, ns_key) or {}
        sel.setdefault("matchLabels", {}).update(translated.get("matchLabels") or {})
        if translated.get("matchExpressions"):
            sel.setdefault("matchExpressions", []).extend(translated["matchExpressions"])
    else:
        sel.setdefault("matchLabels", {})[NAMESPACE_LABEL] = namespace  # "this pod's namespace"
    sel.setdefault("matchLabels", {})[MANAGED_BY] = vcluster_name
    out["labelSelector"] = sel
    _label_keys(out, sel, host_key)
    return out


def ignored_namespace_selectors(spec: Obj) -> int:
    """How many pod (anti-)affinity terms of a virtual pod spec, required or preferred, have a label selector,
    `namespaces` and a non-empty `namespaceSelector`: the terms whose namespaceSelector the translation ignores
    (vcluster's condition for its SyncWarning in `translatePodAffinityTerm`)."""
    affinity = spec.get("affinity")
    terms: list[Any] = []
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) if isinstance(affinity, dict) else None
        if isinstance(rules, dict):
            terms += rules.get("requiredDuringSchedulingIgnoredDuringExecution") or []
            terms += [w.get("podAffinityTerm") for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution")
                      or [] if isinstance(w, dict)]
    return sum(1 for t in terms if isinstance(t, dict) and isinstance(t.get("labelSelector"), dict)
               and any(isinstance(n, str) for n in t.get("namespaces") or [])
               and isinstance(t.get("namespaceSelector"), dict) and not _is_empty(t["namespaceSelector"]))


def ns_label_key(key: str, vcluster_name: str, concat: Callable[..., str]) -> str:
    """The host pod label that carries virtual namespace label `key` (vcluster's `HostLabelNamespace`:
    `vcluster.loft.sh/ns-label-<vcluster>-x-<first 10 hex digits of sha256(key)>`, made safe by `concat`)."""
    return concat(NS_LABEL_PREFIX, vcluster_name, "x", hashlib.sha256(key.encode()).hexdigest()[:10])
