"""The trust boundary: where a virtual pod enters translation (pure).

The tenant is admin of the virtual cluster, so every field of a virtual pod is theirs to write. The syncer later
reads back state it keeps on the host pod (its identity and ownership annotations, the runtime class the virtual
pod named, the bases of the three-way merge, the token-renewal state). Nothing of that may come from the tenant,
so every label and annotation key the syncer or vcluster's conventions give a meaning to is dropped from the
virtual pod before anything reads it, on create and on every update (docs/security.md):

- every key under the syncer's own prefix `runtimeclass-syncer.io/` (labels and annotations);
- every annotation under `vcluster.loft.sh/` except the opt-outs a tenant is meant to set on a pod
  (TENANT_ANNOTATIONS: `vcluster.loft.sh/disable-subdomain-rewrite`, podtranslate/hosts.py). The keys vcluster's
  pod translator writes and reads back (`object-name`, `object-namespace`, `object-uid`, `object-kind`, `name`,
  `namespace`, `uid`, `service-account-name`, `labels`, `owner-references`, `owner-set-kind`, `hosts-rewritten`,
  `token-*`...) are among them, and so is any key a later translation step adds: deny by default;
- every label under `vcluster.loft.sh/` except the ones vcluster rewrites to a hashed key
  (`vcluster.loft.sh/managed-by`, `/namespace`, `/controlled-by`: vcluster's `LabelsToTranslate`, done by
  translate.host_labels), so a tenant cannot set `vcluster.loft.sh/ns-label-...` (what namespace selectors and
  tenant NetworkPolicies select on) or a rewritten `vcluster.loft.sh/label-...` key.

vcluster itself copies a virtual pod's annotations to the host pod after removing only the few it excludes
(`translate/diff.go` `GetExcludedAnnotations`); dropping the whole reserved space is deliberately stricter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]
SYNCER_PREFIX = "runtimeclass-syncer.io/"
VCLUSTER_PREFIX = "vcluster.loft.sh/"
# vcluster.loft.sh annotations a tenant sets on a pod to choose how it is translated (read from the virtual pod)
TENANT_ANNOTATIONS = frozenset({"vcluster.loft.sh/disable-subdomain-rewrite"})
# vcluster.loft.sh labels vcluster rewrites to `vcluster.loft.sh/label-<vcluster>-x-<hash>` on the host
# (translate/single_namespace.go, LabelsToTranslate); the rewritten key carries the tenant's value harmlessly
REWRITTEN_LABELS = frozenset({"vcluster.loft.sh/managed-by", "vcluster.loft.sh/namespace",
                              "vcluster.loft.sh/controlled-by"})


def reserved_annotation(key: str) -> bool:
    """True for an annotation key a tenant may not set (this module's rule)."""
    return key.startswith(SYNCER_PREFIX) or (key.startswith(VCLUSTER_PREFIX) and key not in TENANT_ANNOTATIONS)


def reserved_label(key: str) -> bool:
    """True for a label key a tenant may not set (this module's rule)."""
    return key.startswith(SYNCER_PREFIX) or (key.startswith(VCLUSTER_PREFIX) and key not in REWRITTEN_LABELS)


def tenant_pod(vpod: Mapping[str, Any]) -> Obj:
    """The virtual pod as translation may see it: a shallow copy whose `metadata.labels` and
    `metadata.annotations` lack the reserved keys. Everything else is shared with `vpod` (not copied); metadata of
    the wrong shape is left as it is, for the pod table's shape check to refuse."""
    pod = dict(vpod)
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return pod
    meta = dict(meta)
    for field, reserved in (("labels", reserved_label), ("annotations", reserved_annotation)):
        values = meta.get(field)
        if isinstance(values, Mapping) and any(isinstance(k, str) and reserved(k) for k in values):
            meta[field] = {k: v for k, v in values.items() if not (isinstance(k, str) and reserved(k))}
    pod["metadata"] = meta
    return pod
