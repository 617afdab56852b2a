"""What the pod translation reads of the configuration, in one value (pure).

Each field names the vcluster.yaml key it comes from; the defaults are vcluster's chart defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.config.tolerations import parse_toleration

Obj = dict[str, Any]


def image_reference(registry: str, repository: str, tag: str) -> str:
    """vcluster's `Image.String()`: `registry/` (and `library/` for a repository without `/`), the repository,
    `:tag` when there is one."""
    ref = f"{registry}/" if registry else ""
    if registry and repository and "/" not in repository:
        ref += "library/"
    return ref + repository + (f":{tag}" if tag else "")


@dataclass(frozen=True)
class PodOptions:
    """The translation's settings.

    Attributes:
        priority_classes_to_host: `sync.toHost.priorityClasses.enabled` (class names translated).
        priority_classes_from_host: `sync.fromHost.priorityClasses.enabled` (class names kept).
        priority_class_name: `sync.toHost.pods.priorityClassName` (for pods left without a class).
        enforce_tolerations: `sync.toHost.pods.enforceTolerations`, parsed.
        translate_image: `sync.toHost.pods.translateImage`.
        rewrite_hosts: `sync.toHost.pods.rewriteHosts.enabled`.
        rewrite_hosts_image: the init container's image (`rewriteHosts.initContainer.image`, the registry
            replaced by `controlPlane.advanced.defaultImageRegistry` when that is set).
        rewrite_hosts_resources: `rewriteHosts.initContainer.resources` ({"limits": ..., "requests": ...}).
        set_owner: `experimental.syncSettings.setOwner`.
        physical_host_paths: `controlPlane.hostPathMapper.enabled` and not `.central`.
        cluster_domain: `networking.advanced.clusterDomain`.
        service_accounts_to_host: `sync.toHost.serviceAccounts.enabled` (pods run as the host copy of their own).
        resource_claims, resource_claim_templates: `sync.toHost.resourceClaims.enabled` /
            `resourceClaimTemplates.enabled` (claim names translated).
        node_selector: `sync.fromHost.nodes.selector.labels` (merged into every host pod's nodeSelector).
        virtual_scheduler: `SyncerConfig.virtual_scheduler`, vcluster's `IsVirtualSchedulerEnabled` (the virtual
            cluster picks nodes).
    """

    priority_classes_to_host: bool = False
    priority_classes_from_host: bool = False
    priority_class_name: str = ""
    enforce_tolerations: tuple[Obj, ...] = ()
    translate_image: dict[str, str] = field(default_factory=dict)
    rewrite_hosts: bool = True
    rewrite_hosts_image: str = "mirror.gcr.io/library/alpine:3.20"
    rewrite_hosts_resources: Obj = field(default_factory=lambda: {"limits": {"cpu": "30m", "memory": "64Mi"},
                                                                  "requests": {"cpu": "30m", "memory": "64Mi"}})
    set_owner: bool = True
    physical_host_paths: bool = False
    cluster_domain: str = "cluster.local"
    service_accounts_to_host: bool = False
    resource_claims: bool = False
    resource_claim_templates: bool = False
    node_selector: dict[str, str] = field(default_factory=dict)
    virtual_scheduler: bool = False

    @classmethod
    def from_config(cls, config: SyncerConfig) -> PodOptions:
        """The options of a validated configuration (its tolerations were checked by `parse_config`)."""
        raw = config.raw
        pods = raw.sync.toHost.pods
        init = pods.rewriteHosts.initContainer
        registry = raw.controlPlane.advanced.defaultImageRegistry or init.image.registry or "docker.io"
        mapper = raw.controlPlane.hostPathMapper
        return cls(
            priority_classes_to_host=raw.sync.toHost.priorityClasses.enabled,
            priority_classes_from_host=raw.sync.fromHost.priorityClasses.enabled,
            priority_class_name=pods.priorityClassName,
            enforce_tolerations=tuple(parse_toleration(t) for t in pods.enforceTolerations),
            translate_image=dict(pods.translateImage),
            rewrite_hosts=pods.rewriteHosts.enabled,
            rewrite_hosts_image=image_reference(registry, init.image.repository, init.image.tag),
            rewrite_hosts_resources={k: dict(v) for k, v in (("limits", init.resources.limits),
                                                             ("requests", init.resources.requests)) if v},
            set_owner=raw.experimental.syncSettings.setOwner,
            physical_host_paths=mapper.enabled and not mapper.central,
            cluster_domain=raw.networking.advanced.clusterDomain or "cluster.local",
            service_accounts_to_host=raw.sync.toHost.serviceAccounts.enabled,
            resource_claims=raw.sync.toHost.resourceClaims.enabled,
            resource_claim_templates=raw.sync.toHost.resourceClaimTemplates.enabled,
            node_selector=dict(raw.sync.fromHost.nodes.selector.labels),
            virtual_scheduler=config.virtual_scheduler,
        )
