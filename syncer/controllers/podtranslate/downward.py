"""The downward API: containers see their virtual identity, not the host pod's (pure).

Follows vcluster's `translateFieldRef` (translator.go), applied to `env[].valueFrom.fieldRef` of every
container and to the items of `downwardAPI` volumes and projections: `metadata.name`, `metadata.namespace`,
`metadata.uid`, `spec.serviceAccountName` and `metadata.labels` read host-pod annotations that hold the
virtual values (`vcluster.loft.sh/name`, `.../namespace`, `.../uid`, `.../service-account-name`,
`.../labels`, written by `identity_annotations` as vcluster's `Translate` writes them). A single label
(`metadata.labels['k']`) reads the key the host pod carries the label under: the same key, but for those vcluster
rewrites (`release` and its own markers, translate.TRANSLATED_LABELS), as `translateFieldRef` maps it through
`translate.HostLabel` (`FieldPathLabelRegEx`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
NAME = "vcluster.loft.sh/name"
NAMESPACE = "vcluster.loft.sh/namespace"
UID = "vcluster.loft.sh/uid"
SERVICE_ACCOUNT_NAME = "vcluster.loft.sh/service-account-name"
LABELS = "vcluster.loft.sh/labels"
_REWRITES = {"metadata.name": NAME, "metadata.namespace": NAMESPACE, "metadata.uid": UID,
             "spec.serviceAccountName": SERVICE_ACCOUNT_NAME, "metadata.labels": LABELS}
_ONE_LABEL = re.compile(r"^metadata\.labels\['(.+)'\]$")  # vcluster's FieldPathLabelRegEx


def identity_annotations(vpod: Obj) -> dict[str, str]:
    """The host-pod annotations holding the virtual pod's name, namespace, uid, service account and labels
    (labels as vcluster's `LabelsAnnotation`: sorted `key="json value"` lines)."""
    meta, spec = vpod.get("metadata") or {}, vpod.get("spec") or {}
    labels = meta.get("labels") or {}
    return {NAME: meta.get("name", ""), NAMESPACE: meta.get("namespace", ""), UID: meta.get("uid", ""),
            SERVICE_ACCOUNT_NAME: spec.get("serviceAccountName") or "",
            LABELS: "\n".join(sorted(f"{k}={json.dumps(v)}" for k, v in labels.items()))}


def _rewrite(ref: Any, host_label: Callable[[str], str]) -> None:
    if not isinstance(ref, dict) or not isinstance(ref.get("fieldPath"), str):
        return
    if ref["fieldPath"] in _REWRITES:
        ref["fieldPath"] = f"metadata.annotations['{_REWRITES[ref['fieldPath']]}']"
    elif (m := _ONE_LABEL.match(ref["fieldPath"])) is not None:
        ref["fieldPath"] = f"metadata.labels['{host_label(m.group(1))}']"


def translate_downward_api(spec: Obj, host_label: Callable[[str], str] = lambda k: k) -> None:
    """Rewrite every downward-API `fieldRef` of a (copied) pod spec to the identity annotations, and a single
    label's to the key `host_label` gives it on the host (mutates)."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            for env in (c.get("env") or []) if isinstance(c, dict) else []:
                vf = env.get("valueFrom") if isinstance(env, dict) else None
                if isinstance(vf, dict):
                    _rewrite(vf.get("fieldRef"), host_label)
    for vol in spec.get("volumes") or []:
        if not isinstance(vol, dict):
            continue
        sources = [vol.get("downwardAPI")]
        if isinstance(vol.get("projected"), dict):
            sources += [s.get("downwardAPI") for s in vol["projected"].get("sources") or [] if isinstance(s, dict)]
        for src in sources:
            for item in (src.get("items") or []) if isinstance(src, dict) else []:
                if isinstance(item, dict):
                    _rewrite(item.get("fieldRef"), host_label)
