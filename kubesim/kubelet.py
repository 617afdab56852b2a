"""A stand-in for the scheduler and kubelet of an embedded cluster, over HTTP (tests and demo).

For the pods of one namespace it binds unbound pods without scheduling gates to a node, then reports them
Running and Ready (Ready only when every readiness gate's condition is True, recomputed when they change)
with container statuses, pod and host IPs and a start time, and finishes graceful deletion by
deleting terminating pods with grace 0, as a kubelet does once the containers have stopped. Pods whose
name is in `hold` are left Pending and unbound (to test what a user sees before a pod starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import Any

from syncer.kube.cache import Cached, Store
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import now_rfc3339
from syncer.kube.informer import Handlers, Informer
from syncer.kube.resources import PODS

log = logging.getLogger(__name__)

Obj = dict[str, Any]
RETRY_SECONDS = 0.2  # after a step the API server refused for a moment (5xx, 429, no response)


def ready_condition(pod: Cached, now: str) -> Obj:
    """The kubelet's `Ready` condition of a pod whose containers are all ready (`GeneratePodReadyCondition`): True
    unless a readiness gate's condition is missing or not True, then False with reason `ReadinessGatesNotReady` and
    the kubelet's message."""
    conditions = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        t = gate.get("conditionType") if isinstance(gate, dict) else None
        if t not in conditions:
            msg = f'corresponding condition of pod readiness gate "{t}" does not exist.'
        elif conditions[t].get("status") != "True":
            msg = f'the status of pod readiness gate "{t}" is not "True", but {conditions[t].get("status")}'
        else:
            continue
        return {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady", "message": msg,
                "lastTransitionTime": now}
    return {"type": "Ready", "status": "True", "lastTransitionTime": now}


def running_status(pod: Cached, pod_ip: str, host_ip: str) -> Obj:
    """The status a kubelet reports for a started pod whose containers are all ready."""
    now = now_rfc3339()
    containers = (pod.get("spec") or {}).get("containers") or []
    return {
        "phase": "Running", "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}], "startTime": now,  # qosClass stays as the API server computed it
        "conditions": [ready_condition(pod, now) if t == "Ready" else {"type": t, "status": "True",
                                                                       "lastTransitionTime": now}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                 "PodScheduled")],
        "containerStatuses": [{"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True,
                               "started": True, "restartCount": 0,
                               "containerID": f"containerd://{abs(hash((pod['metadata']['name'], c['name']))):x}",
                               "state": {"running": {"startedAt": now}}} for c in containers],
    }


class FakeKubelet:
    """Schedules and runs the pods of `namespace` on node `node` of the cluster behind `client`."""

    def __init__(self, client: KubeClient, namespace: str, node: str = "node-1", host_ip: str = "10.0.0.1",
                 hold: set[str] | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.node = node
        self.host_ip = host_ip
        self.hold = hold or set()
        self.store = Store()
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._ips = (f"10.244.0.{i}" for i in itertools.count(2))
        self.informer = Informer(client, PODS, self.store, namespace=namespace, name=f"kubelet/{namespace}")
        self.informer.add_handlers(Handlers(on_add=self._enqueue, on_update=lambda _, n: self._enqueue(n)))

    def _enqueue(self, pod: Cached) -> None:
        self._queue.put_nowait(pod["metadata"]["name"])

    def wake(self, name: str) -> None:
        """Look at pod `name` again (its hold lifted: its events while held were passed over)."""
        self._queue.put_nowait(name)

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set."""
        inf = asyncio.create_task(self.informer.run(stop))
        worker = asyncio.create_task(self._work())
        try:
            await stop.wait()
        finally:
            for t in (inf, worker):
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t

    async def _work(self) -> None:
        while True:
            name = await self._queue.get()
            pod = self.store.get(f"{self.namespace}/{name}")
            if pod is None or name in self.hold:
                continue
            try:
                await self._step(name, pod)
            except ApiError as e:
                if e.not_found or e.other_object:  # gone, or another pod now (its own events bring it): nothing to do
                    continue
                if e.status != 409:  # a Conflict is routine: bound already (the next step reads the cache again)
                    log.warning("fake kubelet: %s", e)
                if e.transient:  # a kubelet retries: a refused step must not leave the pod as it was for good
                    asyncio.get_running_loop().call_later(RETRY_SECONDS, self._queue.put_nowait, name)

    async def _step(self, name: str, pod: Cached) -> None:
        # Each write names the pod's uid, so a pod created again under the name since is left alone, as the real
        # ones do: the kubelet's final delete (a UID precondition) and status patch (`statusutil.PatchPodStatus`
        # sets metadata.uid), the scheduler's Binding (DefaultBinder sets its metadata.uid).
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        uid = pod["metadata"].get("uid")
        if pod["metadata"].get("deletionTimestamp"):
            await self.client.delete(PODS, name, self.namespace, grace_period_seconds=0, uid=uid)
        elif not spec.get("nodeName"):
            if not spec.get("schedulingGates"):  # the scheduler leaves a gated pod alone
                await self.client.bind(name, self.namespace, self.node, uid=uid)
        elif not status.get("startTime"):
            await self.client.patch(PODS, name, {"status": running_status(pod, next(self._ips), self.host_ip)},
                                    self.namespace, subresource="status", uid=uid)
        else:
            ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
            want = ready_condition(pod, now_rfc3339())
            if ready is not None and (ready.get("status"), ready.get("message")) != (want["status"],
                                                                                  want.get("message")):
                conditions = [want if c.get("type") == "Ready" else c for c in status.get("conditions") or []]
                await self.client.patch(PODS, name, {"status": {"conditions": conditions}}, self.namespace,
                                        subresource="status", uid=uid)
