"""What vcluster itself defines, written down independently of the syncer (tests, the stand-ins, the
convergence checker): names and labels a real vcluster uses, so that they can check the syncer against
vcluster instead of against itself.

Sources (loft-sh/vcluster): `pkg/util/translate/util.go` (`SafeConcatName`), `pkg/util/translate/
single_namespace.go` (host names `<name>-x-<namespace>-x-<vcluster>`), `pkg/util/translate/types.go`
(the label and annotation keys), and the `vcluster.loft.sh/force-sync` annotation of its ConfigMap and
Secret syncers.
"""

from __future__ import annotations

import hashlib

MANAGED_BY = "vcluster.loft.sh/managed-by"
NAMESPACE_LABEL = "vcluster.loft.sh/namespace"
OBJECT_NAME = "vcluster.loft.sh/object-name"
OBJECT_NAMESPACE = "vcluster.loft.sh/object-namespace"
OBJECT_UID = "vcluster.loft.sh/object-uid"
CONTROLLED_BY = "vcluster.loft.sh/controlled-by"
FORCE_SYNC = "vcluster.loft.sh/force-sync"


def safe_concat_name(*parts: str) -> str:
    """vcluster's `SafeConcatName`: the parts joined with `-`; a result longer than 63 characters becomes
    its first 52 characters, `-` and the first 10 hex digits of the SHA-256 of the whole, and `.-` is then
    replaced by `-`."""
    name = "-".join(parts)
    if len(name) <= 63:
        return name
    return f"{name[:52]}-{hashlib.sha256(name.encode()).hexdigest()[:10]}".replace(".-", "-")


def host_name(name: str, namespace: str, vcluster_name: str) -> str:
    """The host name vcluster gives virtual object `namespace/name` in single-namespace mode."""
    return safe_concat_name(name, "x", namespace, "x", vcluster_name)
