"""A stand-in for vcluster's own ConfigMap, Secret and PersistentVolumeClaim syncers (tests and demo only).

In a real vcluster these keep running when only its pod sync is off (behaviour.md section 3.1). This
stand-in copies virtual objects to the host namespace with vcluster's single-namespace host names
(`<name>-x-<namespace>-x-<vcluster>`) and its managed-by label: PVCs always, ConfigMaps and Secrets
when `sync.toHost.<kind>.all` is set or the virtual object is annotated `vcluster.loft.sh/force-sync:
"true"`; a virtual object that is deleted (or no longer selected) takes its host copy with it. It never
lives in the syncer's own path.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any

from kubesim.vcluster import FORCE_SYNC, MANAGED_BY, OBJECT_NAME, OBJECT_NAMESPACE
from kubesim.vcluster import host_name as host_pod_name
from syncer.kube.cache import Cached, Store, object_key, split_key
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.informer import Handlers, Informer
from syncer.kube.resources import CONFIGMAPS, PVCS, SECRETS, SERVICEACCOUNTS, SERVICES, APIResource

log = logging.getLogger(__name__)

Obj = dict[str, Any]
RETRY_SECONDS = 0.5



class VClusterResourceSyncers:
    """Copies virtual ConfigMaps, Secrets and PVCs to `host_namespace` as vcluster would.

    Args:
        virtual, host: clients for the two clusters.
        host_namespace, vcluster_name: where copies go and how they are named.
        all_configmaps, all_secrets: vcluster's `sync.toHost.configMaps.all` / `secrets.all`.
        kinds: the resources to sync (default all three).
    """

    def __init__(self, virtual: KubeClient, host: KubeClient, host_namespace: str, vcluster_name: str, *,
                 all_configmaps: bool = False, all_secrets: bool = False,
                 kinds: tuple[APIResource, ...] = (CONFIGMAPS, SECRETS, PVCS)) -> None:
        self.virtual, self.host = virtual, host
        self.host_namespace, self.vcluster_name = host_namespace, vcluster_name
        self.all = {CONFIGMAPS.plural: all_configmaps, SECRETS.plural: all_secrets, PVCS.plural: True}
        self.kinds = kinds
        self._queue: asyncio.Queue[tuple[APIResource, str]] = asyncio.Queue()
        self.stores: dict[str, Store] = {}
        self.informers: list[Informer] = []
        for res in kinds:
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
        hname = host_pod_name(name, ns, self.vcluster_name)
        if vobj is None or not self._selected(res, vobj):
            with contextlib.suppress(ApiError):
                await self.host.delete(res, hname, self.host_namespace)
            return
        meta = vobj["metadata"]
        copy: Obj = {k: v for k, v in vobj.items() if k not in ("metadata", "status")}
        copy["metadata"] = {"name": hname, "namespace": self.host_namespace,
                            "labels": {**(meta.get("labels") or {}), MANAGED_BY: self.vcluster_name},
                            "annotations": {OBJECT_NAME: name, OBJECT_NAMESPACE: ns}}
        try:
            await self.host.create(res, copy, self.host_namespace)
        except ApiError as e:
            if not e.already_exists:
                raise
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
