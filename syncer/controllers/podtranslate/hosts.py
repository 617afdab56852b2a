"""A pod with a `subdomain` (a StatefulSet's) resolves its own FQDN (pure).

Follows vcluster's pod translator (`translator.go`: `Translate`, "if spec.subdomain is set we have to
translate the /etc/hosts"; `hosts.go`: `rewritePodHostnameFQDN`). On the host the pod's subdomain would
name a host Service that does not exist, so `subdomain` is removed; with `sync.toHost.pods.rewriteHosts.enabled`
(default true) an init container `vcluster-rewrite-hosts` (image `rewriteHosts.initContainer.image`, default
`mirror.gcr.io/library/alpine:3.20`; resources from `initContainer.resources`) writes an `/etc/hosts` in which
the pod's hostname line also names `<hostname>.<subdomain>.<namespace>.svc.<cluster domain>`, on an
`emptyDir` volume `vcluster-rewrite-hosts` mounted at `/etc/hosts` (subPath `hosts`) in every other app and init
container; the host pod is annotated `vcluster.loft.sh/hosts-rewritten: "true"`. Not in ephemeral containers, as
in vcluster: kube-apiserver refuses a volume mount `subPath` in an ephemeral container (`validateEphemeralContainers`:
"cannot be set for an Ephemeral Container"); vcluster's `hosts.go` loops over ephemeral containers only in
`Translate`, at the create, where a pod has none, and its `syncEphemeralContainers` adds a debug container with its
env translated only. A debug container sees the kubelet's `/etc/hosts`. The init container runs as uid/gid
1001 (vcluster's default when it runs as root), non-root, without privilege escalation or capabilities,
with the RuntimeDefault seccomp profile, so a `restricted` host namespace admits it.
A pod annotated `vcluster.loft.sh/disable-subdomain-rewrite: "true"` is left without it (**deliberately
different:** vcluster opts out only when `vcluster.loft.sh/hosts-rewritten: "true"` is set as well).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]
CONTAINER = "vcluster-rewrite-hosts"
VOLUME = "vcluster-rewrite-hosts"
REWRITTEN = "vcluster.loft.sh/hosts-rewritten"
DISABLE = "vcluster.loft.sh/disable-subdomain-rewrite"
USER_ID = 1001


def rewrite_hosts(spec: Obj, annotations: Obj, *, namespace: str, cluster_domain: str, enabled: bool, image: str,
                  resources: Mapping[str, Any]) -> None:
    """Apply this module's rule to a (copied) host pod spec and its annotations (mutates both)."""
    subdomain = spec.pop("subdomain", None)
    if not subdomain or not enabled or annotations.get(DISABLE) == "true":
        return
    hostname = spec.get("hostname") or ""
    fqdn = f"{hostname}.{subdomain}.{namespace}.svc.{cluster_domain}"
    init: Obj = {
        "name": CONTAINER, "image": image, "command": ["sh"],
        "args": ["-c", "sed -E -e 's/^(\\d+.\\d+.\\d+.\\d+\\s+)" + hostname + "$/\\1 " + fqdn + " " + hostname
                 + "/' /etc/hosts > /hosts/hosts"],
        "securityContext": {"runAsUser": USER_ID, "runAsGroup": USER_ID, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"mountPath": "/hosts", "name": VOLUME}],
    }
    if resources:
        init["resources"] = {k: dict(v) for k, v in resources.items() if v}
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": VOLUME, "emptyDir": {}}]
    mount = {"mountPath": "/etc/hosts", "name": VOLUME, "subPath": "hosts"}
    for field in ("containers", "initContainers"):  # not ephemeral ones: see the module's docstring
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                c["volumeMounts"] = [*(c.get("volumeMounts") or []), dict(mount)]
    spec["initContainers"] = [init, *(spec.get("initContainers") or [])]
    annotations[REWRITTEN] = "true"


def own_container(name: Any, host_annotations: Mapping[str, Any], virtual_init_containers: Any) -> bool:
    """Whether init container `name` of a host pod is the syncer's own `vcluster-rewrite-hosts`, whose image an
    update leaves as it is: the host pod carries `vcluster.loft.sh/hosts-rewritten: "true"` (written by the syncer
    only: a tenant's `vcluster.loft.sh/` annotations never reach the host, podtranslate/trust.py) and the virtual
    pod has no init container of that name. vcluster's `calcSpecDiff` (translate/diff.go) skips it the same way
    (`skipContainers`, on the annotation alone; its diff compares the virtual pod's own containers, which lack it),
    since a new image of an init container restarts the whole pod: a changed `rewriteHosts.initContainer.image`,
    `controlPlane.advanced.defaultImageRegistry` or `translateImage` rule, or a new default image, must not restart
    every running pod with a subdomain. A tenant's own init container of that name is compared as any other (its
    image is the tenant's to change); with a subdomain the host refuses such a pod at the create anyway (two init
    containers of one name)."""
    if name != CONTAINER or host_annotations.get(REWRITTEN) != "true":
        return False
    return not any(isinstance(c, dict) and c.get("name") == CONTAINER for c in virtual_init_containers or [])
