"""A stand-in for vcluster's own ConfigMap, Secret, PersistentVolumeClaim (and ServiceAccount, ResourceClaim and
ResourceClaimTemplate) syncers (tests and demo only).

In a real vcluster these keep running when only its pod sync is off (behaviour.md section 3.1). This
stand-in copies virtual objects to the host namespace with vcluster's single-namespace host names
(`<name>-x-<namespace>-x-<vcluster>`; ResourceClaims and ResourceClaimTemplates get vcluster's short names,
`host_name_short`): PVCs always, ConfigMaps and Secrets when `sync.toHost.<kind>.all` is
set or the virtual object is annotated `vcluster.loft.sh/force-sync: "true"`, ServiceAccounts, ResourceClaims and
ResourceClaimTemplates (all) when asked (vcluster's open-source tree maps the claims' names but has no syncer of
them; this one copies them as its other syncers copy objects, `translate.HostMetadata`); a virtual object that
is deleted (or no longer selected) takes its host copy with it. It never lives in the syncer's own path.

The host copy's metadata is vcluster's `translate.HostMetadata` (loft-sh/vcluster `pkg/util/translate/
translate.go`, HEAD 487667546; `host_metadata` below): the virtual object's annotations but vcluster's own
keys, `vcluster.loft.sh/managed-annotations` listing the copied keys, and `object-name`, `object-namespace`,
`object-uid`, `object-kind` (`/v1, Kind=Secret`), `object-host-name`, `object-host-namespace`
(`addHostAnnotations`; the expected copy in `pkg/controllers/resources/secrets/to_host_syncer_test.go`);
labels: the virtual ones (keys vcluster rewrites are not rewritten here) with `vcluster.loft.sh/managed-by`
and `vcluster.loft.sh/namespace` (`labels.go`: `HostLabelsMap`). A Secret of type
`kubernetes.io/service-account-token` becomes `Opaque` (secrets `SyncToHost`); a ServiceAccount loses its
`secrets` and `imagePullSecrets` and gets `automountServiceAccountToken: false` (serviceaccounts `SyncToHost`).

Two virtual objects whose host names collide (`a` in `b-x-c`, `a-x-b` in `c`): the first copy stays, and the
second object is not synced; deleting either object deletes only its own copy. vcluster itself fights over
the name (`pkg/syncer/syncer.go` `Reconcile`: a host object whose `object-uid` differs from the virtual
object's is deleted and re-created; a deleted virtual object deletes the host object its name maps to), which
the stand-in does not reproduce: the syncer must not rely on either.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from kubesim.vcluster import FORCE_SYNC, MANAGED_BY, NAMESPACE_LABEL, OBJECT_NAME, OBJECT_NAMESPACE, OBJECT_UID
from kubesim.vcluster import host_name as host_pod_name
from syncer.kube.cache import Cached, Store, object_key, split_key
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.informer import Handlers, Informer
from syncer.kube.resources import (
    CONFIGMAPS,
    PVCS,
    RESOURCECLAIMS,
    RESOURCECLAIMTEMPLATES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    APIResource,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]
RETRY_SECONDS = 0.5
# pkg/util/translate/types.go
OBJECT_KIND = "vcluster.loft.sh/object-kind"
OBJECT_HOST_NAME = "vcluster.loft.sh/object-host-name"
OBJECT_HOST_NAMESPACE = "vcluster.loft.sh/object-host-namespace"
MANAGED_ANNOTATIONS = "vcluster.loft.sh/managed-annotations"
MANAGED_LABELS = "vcluster.loft.sh/managed-labels"
# what HostAnnotations sets itself, never copied from the virtual object
_IDENTITY_ANNOTATIONS = (OBJECT_NAME, OBJECT_NAMESPACE, OBJECT_UID, OBJECT_KIND, OBJECT_HOST_NAME,
                         OBJECT_HOST_NAMESPACE)
# the PVC syncer's excludedAnnotations (persistentvolumeclaims/syncer.go)
_PVC_EXCLUDED = ("pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
                 "volume.beta.kubernetes.io/storage-provisioner")


def host_name_short(name: str, namespace: str, vcluster_name: str) -> str:
    """The host name vcluster's production ResourceClaim and ResourceClaimTemplate mappers give `namespace/name`
    (pkg/mappings/resources/resourceclaims.go, resourceclaimtemplates.go: `translate.Default.HostNameShort`), written
    here from vcluster's code apart from the syncer's (so that a mistake in the syncer's is not copied into the copies
    it waits for): pkg/util/translate/single_namespace.go `HostNameShort`,
    `"v" + base36.EncodeBytes(sha256(strings.Join([]string{vName, "x", vNamespace, "x", VClusterName}, "-")))[0:13]`,
    with pkg/util/base36/base36.go `EncodeBytesAsBytes`: the digits of the number, least significant first, then a
    `0` for each leading zero byte, all reversed."""
    if name == "":
        return ""
    digest = hashlib.sha256("-".join([name, "x", namespace, "x", vcluster_name]).encode()).digest()
    x, answer = int.from_bytes(digest, "big"), []
    while x > 0:
        x, mod = divmod(x, 36)
        answer.append("0123456789abcdefghijklmnopqrstuvwxyz"[mod])
    for byte in digest:  # leading zero bytes
        if byte != 0:
            break
        answer.append("0")
    return "v" + "".join(reversed(answer))[0:13]


def host_metadata(vobj: Mapping[str, Any], kind: str, host_name: str, host_namespace: str, vcluster_name: str,
                  excluded: tuple[str, ...] = (), group: str = "") -> Obj:
    """The metadata of the host copy of virtual object `vobj` of `kind` (e.g. `Secret`), as vcluster's
    `translate.HostMetadata(vObj, name, excluded...)` builds it: `HostAnnotations` (`applyAnnotations` with
    `ApplyMaps`, then `addHostAnnotations`) and `HostLabels`."""
    meta = vobj.get("metadata") or {}
    vann = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in excluded}
    skip = (*_IDENTITY_ANNOTATIONS, MANAGED_ANNOTATIONS, MANAGED_LABELS)
    copied = sorted(k for k in vann if k not in skip)
    ann = {k: vann[k] for k in copied}
    if MANAGED_LABELS in vann:  # ApplyMaps keeps an excluded key of the target (a copy of the virtual object's)
        ann[MANAGED_LABELS] = vann[MANAGED_LABELS]
    if copied:
        ann[MANAGED_ANNOTATIONS] = "\n".join(copied)
    ann.update({OBJECT_NAME: meta.get("name", ""), OBJECT_UID: meta.get("uid", ""), OBJECT_HOST_NAME: host_name,
                OBJECT_HOST_NAMESPACE: host_namespace, OBJECT_NAMESPACE: meta.get("namespace", ""),
                OBJECT_KIND: f"{group}/v1, Kind={kind}"})
    labels = {**(meta.get("labels") or {}), MANAGED_BY: vcluster_name, NAMESPACE_LABEL: meta.get("namespace", "")}
    return {"name": host_name, "namespace": host_namespace, "labels": labels, "annotations": ann}


def is_copy_of(hobj: Mapping[str, Any], namespace: str, name: str) -> bool:
    """Whether host object `hobj` is the copy of virtual object `namespace/name` (its object annotations)."""
    ann = (hobj.get("metadata") or {}).get("annotations") or {}
    return bool(ann.get(OBJECT_NAMESPACE) == namespace and ann.get(OBJECT_NAME) == name)



class VClusterResourceSyncers:
    """Copies virtual ConfigMaps, Secrets and PVCs to `host_namespace` as vcluster would.

    Args:
        virtual, host: clients for the two clusters.
        host_namespace, vcluster_name: where copies go and how they are named.
        all_configmaps, all_secrets: vcluster's `sync.toHost.configMaps.all` / `secrets.all`.
        kinds: the resources to sync (default all three).
        service_accounts: vcluster's `sync.toHost.serviceAccounts.enabled`: ServiceAccounts too.
    """

    def __init__(self, virtual: KubeClient, host: KubeClient, host_namespace: str, vcluster_name: str, *,
                 all_configmaps: bool = False, all_secrets: bool = False,
                 kinds: tuple[APIResource, ...] = (CONFIGMAPS, SECRETS, PVCS), service_accounts: bool = False,
                 resource_claims: bool = False, resource_claim_templates: bool = False) -> None:
        self.virtual, self.host = virtual, host
        self.host_namespace, self.vcluster_name = host_namespace, vcluster_name
        self.all = {CONFIGMAPS.plural: all_configmaps, SECRETS.plural: all_secrets, PVCS.plural: True,
                    SERVICEACCOUNTS.plural: True, RESOURCECLAIMS.plural: True, RESOURCECLAIMTEMPLATES.plural: True}
        asked = ((SERVICEACCOUNTS, service_accounts), (RESOURCECLAIMS, resource_claims),
                 (RESOURCECLAIMTEMPLATES, resource_claim_templates))
        self.kinds = (*kinds, *(res for res, on in asked if on and res not in kinds))
        self._queue: asyncio.Queue[tuple[APIResource, str]] = asyncio.Queue()
        self.stores: dict[str, Store] = {}
        self.informers: list[Informer] = []
        for res in self.kinds:
            store = self.stores[res.plural] = Store()
            inf = Informer(virtual, res, store, name=f"vcluster-standin/{res.plural}")
            enqueue = functools.partial(self._enqueue, res)
            inf.add_handlers(Handlers(on_add=enqueue, on_update=functools.partial(self._enqueue_new, res),
                                      on_delete=enqueue))
            self.informers.append(inf)

    def _enqueue(self, res: APIResource, obj: Obj) -> None:
        self._queue.put_nowait((res, object_key(obj)))

    def _enqueue_new(self, res: APIResource, _old: Obj, new: Obj) -> None:
        self._enqueue(res, new)

    def _selected(self, res: APIResource, obj: Cached) -> bool:
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        return self.all[res.plural] or ann.get(FORCE_SYNC) == "true"

    async def run(self, stop: asyncio.Event) -> None:
        """Sync until `stop` is set."""
        tasks = [asyncio.create_task(i.run(stop)) for i in self.informers]
        tasks.append(asyncio.create_task(self._work()))
        try:
            await stop.wait()
        finally:
            for t in tasks:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t

    def resync(self) -> None:
        """Sync every known virtual object again (after the host lost its state)."""
        for res in self.kinds:
            for key in self.stores[res.plural].list_keys():
                self._queue.put_nowait((res, key))

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            res, key = await self._queue.get()
            try:
                await self._sync(res, key)
            except ApiError as e:  # retried: a lost copy would leave pods waiting for ever
                log.info("vcluster stand-in: %s; retrying", e)
                loop.call_later(RETRY_SECONDS, self._queue.put_nowait, (res, key))

    async def _sync(self, res: APIResource, key: str) -> None:
        ns, name = split_key(key)
        assert ns is not None
        vobj = self.stores[res.plural].get(key)
        short = res in (RESOURCECLAIMS, RESOURCECLAIMTEMPLATES)  # their mappers' HostNameShort
        hname = (host_name_short if short else host_pod_name)(name, ns, self.vcluster_name)
        if vobj is None or not self._selected(res, vobj):
            with contextlib.suppress(ApiError):
                hobj = await self.host.get(res, hname, self.host_namespace)
                if is_copy_of(hobj, ns, name):  # never another object's copy under a colliding name
                    await self.host.delete(res, hname, self.host_namespace, uid=hobj["metadata"].get("uid"))
            return
        copy: Obj = {k: v for k, v in vobj.items() if k not in ("metadata", "status")}
        copy["metadata"] = host_metadata(vobj, res.kind, hname, self.host_namespace, self.vcluster_name,
                                         _PVC_EXCLUDED if res == PVCS else (), res.group)
        if res == SECRETS and copy.get("type") == "kubernetes.io/service-account-token":
            copy["type"] = "Opaque"
        if res == SERVICEACCOUNTS:
            copy.pop("secrets", None)
            copy.pop("imagePullSecrets", None)
            copy["automountServiceAccountToken"] = False
        try:
            await self.host.create(res, copy, self.host_namespace)
        except ApiError as e:
            if not e.already_exists:
                raise
            hobj = await self.host.get(res, hname, self.host_namespace)
            if not is_copy_of(hobj, ns, name):
                log.warning("vcluster stand-in: host %s %s/%s is not the copy of %s/%s; left as it is", res.kind,
                            self.host_namespace, hname, ns, name)
                return
            if res != PVCS:  # a PVC's spec is immutable once bound; vcluster keeps the first copy
                await self.host.patch(res, hname, {k: v for k, v in copy.items() if k != "metadata"},
                                      self.host_namespace)


async def create_vcluster_host_objects(host: KubeClient, host_namespace: str, vcluster_name: str) -> None:
    """What vcluster's chart and its service syncer put in the host namespace, which host pods need: the
    vcluster's Service (the virtual API server, port 443), the host copy of the virtual cluster's
    `kube-system/kube-dns` Service (port 53), and the workload service account `vc-workload-<name>`.
    Existing objects are left as they are."""
    dns = host_pod_name("kube-dns", "kube-system", vcluster_name)
    objects: list[tuple[APIResource, Obj]] = [
        (SERVICES, {"metadata": {"name": vcluster_name, "labels": {"app": "vcluster"}},
                    "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]}}),
        (SERVICES, {"metadata": {"name": dns, "labels": {MANAGED_BY: vcluster_name},
                                 "annotations": {OBJECT_NAME: "kube-dns", OBJECT_NAMESPACE: "kube-system"}},
                    "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                       {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}}),
        (SERVICEACCOUNTS, {"metadata": {"name": f"vc-workload-{vcluster_name}"}}),
    ]
    for res, obj in objects:
        try:
            await host.create(res, {"apiVersion": "v1", "kind": res.kind, **obj}, host_namespace)
        except ApiError as e:
            if not e.already_exists:
                raise
