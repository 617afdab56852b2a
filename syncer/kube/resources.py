"""The Kubernetes resources this project reads and writes, described once for the client and the
embedded test API server.

Each `APIResource` maps to URL paths the way the Kubernetes API does:
`/api/v1/namespaces/{ns}/pods/{name}` for the core group, `/apis/{group}/{version}/{plural}/{name}`
for named groups, with `/status` for the status subresource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote


@dataclass(frozen=True)
class APIResource:
    """A resource type: API group ("" for core), version, plural, Kind, and whether it is namespaced.

    `short_names`, `subresources` and `verbs` are advertised in discovery by the test API server.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = field(
        default=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    )

    @property
    def api_version(self) -> str:
        """`v1` for the core group, else `group/version` (the objects' apiVersion)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`plural.group` (or just `plural` for core), as Kubernetes names it in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path for a collection (no name) or an object, e.g. `/api/v1/namespaces/a/pods/b/status`."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


NAMESPACES = APIResource("", "v1", "namespaces", "Namespace", False, "namespace", ("ns",),
                         ("status",))
PODS = APIResource("", "v1", "pods", "Pod", True, "pod", ("po",),
                   ("status", "binding", "ephemeralcontainers", "resize"), ("all",))
EVENTS = APIResource("", "v1", "events", "Event", True, "event", ("ev",))
RUNTIMECLASSES = APIResource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, "runtimeclass")
LEASES = APIResource("coordination.k8s.io", "v1", "leases", "Lease", True, "lease")

CONFIGMAPS = APIResource("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",))
SECRETS = APIResource("", "v1", "secrets", "Secret", True, "secret")
SERVICES = APIResource("", "v1", "services", "Service", True, "service", ("svc",), ("status",), ("all",))
PVCS = APIResource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, "persistentvolumeclaim",
                   ("pvc",), ("status",))
SERVICEACCOUNTS = APIResource("", "v1", "serviceaccounts", "ServiceAccount", True, "serviceaccount", ("sa",),
                              ("token",))
NODES = APIResource("", "v1", "nodes", "Node", False, "node", ("no",), ("status",))
PRIORITYCLASSES = APIResource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, "priorityclass",
                              ("pc",))
# Dynamic resource allocation (Kubernetes 1.34 GA; vcluster's `mappings.ResourceClaims`, `ResourceClaimTemplates`)
RESOURCECLAIMS = APIResource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, "resourceclaim",
                             subresources=("status",))
RESOURCECLAIMTEMPLATES = APIResource("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True,
                                     "resourceclaimtemplate")
SELFSUBJECTREVIEWS = APIResource("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False,
                                 "selfsubjectreview", verbs=("create",))

ALL_RESOURCES: tuple[APIResource, ...] = (NAMESPACES, PODS, EVENTS, RUNTIMECLASSES, LEASES, CONFIGMAPS, SECRETS,
                                          SERVICES, PVCS, SERVICEACCOUNTS, PRIORITYCLASSES, NODES,
                                          RESOURCECLAIMS, RESOURCECLAIMTEMPLATES, SELFSUBJECTREVIEWS)
