"""Randomised convergence scenarios: random interleavings of user actions, configuration changes,
syncer restarts and API-server faults, then a check of every invariant of behaviour.md sections 2 and 3
once the system is quiet again. Used by the property-based tests (tests/test_convergence.py, a fixed
seed set in every CI run) and the soak (`python bench/convergence.py`), which reports the figures.

The invariants are computed from the servers' actual final state, not from a model of what the steps
should have done, so the driver's own requests may be hit by the injected faults without confusing
the check. The syncer's requests are told apart from the driver's by their user agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import logging
import random
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesim.apiserver import EmbeddedAPIServer
from kubesim.kubelet import FakeKubelet
from kubesim.vcluster import (
    CONTROLLED_BY,
    MANAGED_BY,
    NAMESPACE_LABEL,
    OBJECT_NAME,
    OBJECT_UID,
    host_name,
    safe_concat_name,
)
from kubesim.vcluster_standin import VClusterResourceSyncers, create_vcluster_host_objects
from syncer.config.model import SyncerConfig, parse_config
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.resources import EVENTS, NAMESPACES, PODS, RUNTIMECLASSES
from syncer.manager import Options, Syncer

log = logging.getLogger(__name__)

Obj = dict[str, Any]
VCLUSTER = "chaos"
HOST_NS = "vc-chaos"
# vcluster's HostLabelNamespace of kubernetes.io/metadata.name, the label kube-apiserver gives every namespace
# (SetDefaults_Namespace, pkg/apis/core/v1/defaults.go), so every host pod of `default` carries it as an ns-label
DEFAULT_NS_LABEL = safe_concat_name("vcluster.loft.sh/ns-label", VCLUSTER, "x",
                                    hashlib.sha256(b"kubernetes.io/metadata.name").hexdigest()[:10])
SYNCER_AGENT = "runtimeclass-syncer (chaos)"
DRIVER_AGENT = "chaos-driver"
KUBELET_AGENT = "chaos-kubelet"
RC_NAMES = ("gvisor", "kata", "youki", "runc", "fenced")
POD_NAMES = ("p0", "p1", "p2", "p3", "p4", "p5")
SQUATTED_POD = "p5"  # a host pod of another owner sits on p5's host name
ENVS = ("development", "production", "")
SELECTORS: dict[str, Obj | None] = {
    "dev": {"matchLabels": {"environment": "development"}},
    "not-prod": {"matchExpressions": [{"key": "environment", "operator": "NotIn", "values": ["production"]}]},
    "all": None,
}
# What each selector means, written from Kubernetes' label-selector rules rather than taken from the syncer's
# selector code (NotIn also matches a class without the key); the checker judges the syncer with these.
SELECTOR_MEANING: dict[str, Any] = {
    "dev": lambda labels: labels.get("environment") == "development",
    "not-prod": lambda labels: labels.get("environment") != "production",
    "all": lambda labels: True,
}
# what the checker compares of a synced pod's status: the host's, copied back (behaviour.md section 3, lifecycle)
STATUS_SEEN = ("phase", "podIP", "hostIP", "startTime")
FAULT_STATUSES = (409, 429, 500, 503)
FAULT_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
FAULT_RESOURCES = ("pods", "runtimeclasses", "events", "")


@dataclass(frozen=True)
class Step:
    """One action. `op` is one of OPS; `a`, `b`, `n` are its arguments (see Scenario.apply)."""

    op: str
    a: str = ""
    b: str = ""
    n: int = 0


OPS = ("host_rc_put", "host_rc_delete", "virtual_rc_put", "virtual_rc_delete", "pod_create", "pod_delete",
       "pod_label", "config", "syncer_restart", "fault", "cut_watches", "expire_history", "server_restart",
       "latency", "server_wipe", "host_pod_evict", "pod_image", "host_pod_squat", "pod_debug", "host_pod_label")


def random_step(rng: random.Random) -> Step:
    """A random step, weighted towards user actions, for the soak."""
    op = rng.choices(OPS, weights=(8, 3, 3, 2, 6, 3, 3, 1, 1, 4, 2, 1, 1, 1, 0.2, 1, 2, 2, 1, 2))[0]
    if op in ("host_rc_put", "virtual_rc_put"):
        return Step(op, rng.choice(RC_NAMES), rng.choice(ENVS))
    if op in ("host_rc_delete", "virtual_rc_delete"):
        return Step(op, rng.choice(RC_NAMES))
    if op == "pod_create":
        return Step(op, rng.choice(POD_NAMES), rng.choice((*RC_NAMES, "")))
    if op in ("pod_delete", "pod_label", "host_pod_evict", "pod_image", "host_pod_squat", "pod_debug",
              "host_pod_label"):
        return Step(op, rng.choice(POD_NAMES), str(rng.randint(0, 9)))
    if op == "config":
        return Step(op, rng.choice(tuple(SELECTORS)))
    if op == "fault":
        return Step(op, rng.choice(("host", "virtual")), f"{rng.choice(FAULT_VERBS)}/{rng.choice(FAULT_RESOURCES)}",
                    rng.choice(FAULT_STATUSES) * 10 + rng.randint(1, 3))
    if op in ("cut_watches", "expire_history", "server_restart", "latency", "server_wipe"):
        return Step(op, rng.choice(("host", "virtual")))
    return Step(op)


@dataclass
class Report:
    """Figures of one or more scenarios."""

    scenarios: int = 0
    steps: int = 0
    restarts: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    lost: int = 0
    converge_seconds: list[float] = field(default_factory=list)

    def merge(self, other: Report) -> None:
        """Add another report's figures to this one."""
        self.scenarios += other.scenarios
        self.steps += other.steps
        self.restarts += other.restarts
        self.faults.update(other.faults)
        self.violations += other.violations
        self.lost += other.lost
        self.converge_seconds += other.converge_seconds

    def render(self) -> str:
        """A plain-text summary (the README's reliability figures come from this)."""
        cs = sorted(self.converge_seconds) or [0.0]
        lines = [f"scenarios {self.scenarios}, steps {self.steps}, restarts (syncer and API servers) {self.restarts}",
                 f"faults injected: {sum(self.faults.values())} "
                 + "(" + ", ".join(f"{k}: {v}" for k, v in sorted(self.faults.items())) + ")",
                 f"invariant violations: {len(self.violations)}", f"objects lost: {self.lost}",
                 f"time to converge after the last fault: median {statistics.median(cs):.2f} s, "
                 f"worst {cs[-1]:.2f} s"]
        lines += [f"  violation: {v}" for v in self.violations[:20]]
        return "\n".join(lines)


class Scenario:
    """Two embedded API servers, a syncer, and a driver that applies steps to them.

    Use as `async with Scenario(workdir) as s: report = await s.run(steps)`. With `kubelet`, a scheduler and
    kubelet stand-in (kubesim/kubelet.py) binds and starts the host pods and finishes their graceful deletion, so
    the host status, the binding and the deletion rows of syncer/controllers/podplan.py are exercised too.
    """

    def __init__(self, workdir: Path, selector: str = "dev", kubelet: bool = False) -> None:
        self.workdir = workdir
        self.selector = selector
        self.kubelet = kubelet
        self.report = Report(scenarios=1)
        self.host_server = EmbeddedAPIServer("host", bookmark_interval=0.5)
        self.virtual_server = EmbeddedAPIServer("virtual", runtime_class_admission=False, bookmark_interval=0.5)
        self.pods_alive: set[str] = set()  # virtual pods the driver created and did not delete
        # virtual pods the syncer may delete: the driver deleted them (a bound pod's deletion is finished by the
        # syncer, podplan row 8), or their started host pod went away (row 12, as vcluster)
        self.may_go: set[str] = set()
        self._syncer: Syncer | None = None
        self._syncer_task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._clients: list[KubeClient] = []
        # host pods of another owner, by name: (uid, the resourceVersion they were created with), which the syncer
        # must never change (the first sits on SQUATTED_POD's host name; host_pod_squat puts more)
        self.foreign: dict[str, tuple[str, str]] = {}
        self.hold = {host_name(SQUATTED_POD, "default", VCLUSTER)}  # what the kubelet leaves alone: the foreign pods
        # the last `mesh` label a host controller wrote on a synced host pod, by host name: (the pod's uid, value);
        # the syncer must keep it on that pod (and bring it to the virtual pod)
        self.host_labels: dict[str, tuple[str, str]] = {}

    @property
    def config(self) -> SyncerConfig:
        """The configuration the current syncer runs with."""
        rc: Obj = {"enabled": True}
        if SELECTORS[self.selector] is not None:
            rc["selector"] = SELECTORS[self.selector]
        return parse_config({"sync": {"fromHost": {"runtimeClasses": rc}}})

    async def __aenter__(self) -> Scenario:
        await self.host_server.start()
        await self.virtual_server.start()
        self.host_kc = self.host_server.write_kubeconfig(self.workdir / "host.kubeconfig")
        self.virtual_kc = self.virtual_server.write_kubeconfig(self.workdir / "virtual.kubeconfig")
        self.host = await self._client(self.host_kc, "host", DRIVER_AGENT)
        self.virtual = await self._client(self.virtual_kc, "virtual", DRIVER_AGENT)
        # vcluster's own ConfigMap/Secret/PVC syncers around the sidecar (the host copies of what pods reference)
        self.standin = VClusterResourceSyncers(self.virtual, self.host, HOST_NS, VCLUSTER)
        self._standin_stop = asyncio.Event()
        self._standin_task = asyncio.create_task(self.standin.run(self._standin_stop))
        await self._seed_host()
        self._kubelet_stop = asyncio.Event()
        self._kubelet_task: asyncio.Task[None] | None = None
        self._kubelet: FakeKubelet | None = None
        if self.kubelet:  # the squatter is another team's pod: it stays as it was created
            node = FakeKubelet(await self._client(self.host_kc, "host", KUBELET_AGENT), HOST_NS,
                               hold=self.hold)
            self._kubelet = node
            self._kubelet_task = asyncio.create_task(node.run(self._kubelet_stop))
        await self._start_syncer()
        return self

    async def _seed_host(self) -> None:
        """The host namespace, and a pod of another owner on the host name of SQUATTED_POD. Repeated until done
        (an injected fault may refuse a create): the vcluster's namespace exists while the vcluster runs."""
        squatter = {"metadata": {"name": host_name(SQUATTED_POD, "default", VCLUSTER)},
                    "spec": {"containers": [{"name": "c", "image": "other-team/app"}]}}
        for attempt in itertools.count(1):
            try:
                await self._create_or_get(NAMESPACES, {"metadata": {"name": HOST_NS}})
                await create_vcluster_host_objects(self.host, HOST_NS, VCLUSTER)
                meta = (await self._create_or_get(PODS, squatter, HOST_NS))["metadata"]
                self.foreign[host_name(SQUATTED_POD, "default", VCLUSTER)] = (meta["uid"], meta["resourceVersion"])
                return
            except ApiError as e:
                if not e.transient or attempt == 20:
                    raise

    async def _create_or_get(self, res: Any, obj: Obj, ns: str | None = None) -> Obj:
        try:
            return await self.host.create(res, obj, ns)
        except ApiError as e:
            if not e.already_exists:
                raise
            return await self.host.get(res, obj["metadata"]["name"], ns)

    async def __aexit__(self, *exc: object) -> None:
        await self._stop_syncer()
        self._standin_stop.set()
        await self._standin_task
        self._kubelet_stop.set()
        if self._kubelet_task is not None:
            await self._kubelet_task
        for c in self._clients:
            await c.close()
        await self.host_server.stop()
        await self.virtual_server.stop()

    async def _client(self, kc: Path, cluster: str, agent: str) -> KubeClient:
        c = await KubeClient.from_kubeconfig(str(kc), cluster, request_timeout=5, user_agent=agent)
        self._clients.append(c)
        return c

    async def _start_syncer(self) -> None:
        host = await self._client(self.host_kc, "host", SYNCER_AGENT)
        virtual = await self._client(self.virtual_kc, "virtual", SYNCER_AGENT)
        self._stop = asyncio.Event()
        self._syncer = Syncer(self.config, host, virtual,
                              Options(vcluster_name=VCLUSTER, host_namespace=HOST_NS, watch_timeout=20))
        self._syncer_task = asyncio.create_task(self._syncer.run(self._stop))

    async def _stop_syncer(self) -> None:
        self._stop.set()
        if self._syncer_task is not None:
            await self._syncer_task

    def _server(self, name: str) -> EmbeddedAPIServer:
        return self.host_server if name == "host" else self.virtual_server

    # ------------------------------------------------------------------ steps

    async def apply(self, step: Step) -> None:
        """Apply one step; a driver request refused by an injected fault simply does not happen."""
        self.report.steps += 1
        try:
            await self._apply(step)
        except ApiError as e:
            log.debug("step %s: %s", step, e)

    async def _apply(self, s: Step) -> None:
        labels = {"environment": s.b} if s.b else {}
        if s.op in ("host_rc_put", "virtual_rc_put"):
            client = self.host if s.op == "host_rc_put" else self.virtual
            if s.a == "fenced":
                labels["vcluster.loft.sh/controlled-by"] = "someone-else"
            obj = {"metadata": {"name": s.a, "labels": labels}, "handler": s.a}
            try:
                await client.create(RUNTIMECLASSES, obj)
            except ApiError as e:
                if not e.already_exists:
                    raise
                await client.patch(RUNTIMECLASSES, s.a, {"metadata": {"labels": labels or None}})
        elif s.op in ("host_rc_delete", "virtual_rc_delete"):
            await (self.host if s.op == "host_rc_delete" else self.virtual).delete(RUNTIMECLASSES, s.a)
        elif s.op == "pod_create":
            spec: Obj = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
            if s.b:
                spec["runtimeClassName"] = s.b
            await self.virtual.create(PODS, {"metadata": {"name": s.a}, "spec": spec}, "default")
            self.pods_alive.add(s.a)
        elif s.op == "pod_delete":
            self.may_go.add(s.a)
            try:
                await self.virtual.delete(PODS, s.a, "default")
            except ApiError as e:
                if not e.not_found:
                    raise
            self.pods_alive.discard(s.a)
        elif s.op == "host_pod_evict":  # someone on the host (an eviction, a drain) deletes a synced host pod
            h = self._objs(self.host_server, PODS, HOST_NS).get(host_name(s.a, "default", VCLUSTER))
            if h is None or not (h["metadata"].get("annotations") or {}).get(OBJECT_NAME):
                return  # none, or the other team's pod
            self._host_pods_go([h])
            gone = await self.host.delete(PODS, h["metadata"]["name"], HOST_NS)
            # The scheduler's Binding may land between the read above and the delete; a kubelet whose cache is behind
            # may then start the terminating pod (its status patch is allowed), and a started pod's virtual pod may go.
            # Once the delete has taken it no Binding is accepted, so the pod as the delete answered says it all.
            self._host_pods_go([gone])
        elif s.op == "host_pod_squat":
            # Another owner takes a synced pod's host name while the syncer's host pod watch is down (its next three
            # watches refused), and the tenant changes the pod meanwhile: the syncer's cache still holds its own
            # host pod when it reconciles the change, and must not write the other owner's.
            hname = host_name(s.a, "default", VCLUSTER)
            h = self._objs(self.host_server, PODS, HOST_NS).get(hname)
            if h is None or not (h["metadata"].get("annotations") or {}).get(OBJECT_NAME):
                return  # none, or another owner's already
            self.host_server.faults.fail(500, verb="watch", resource="pods", agent=SYNCER_AGENT, times=3)
            self.host_server.cut_watches()
            self._host_pods_go([h])
            self.hold.add(hname)  # the kubelet leaves the other owner's pod as it was created
            try:
                await self.host.delete(PODS, hname, HOST_NS, grace_period_seconds=0)
                theirs = await self.host.create(PODS, {"metadata": {"name": hname}, "spec": {"containers": [
                    {"name": "app", "image": "other-team/app"}]}}, HOST_NS)
            except ApiError:  # refused by a fault, or the syncer was first to the name again: no squatter
                self.hold.discard(hname)
                if self._kubelet is not None:
                    self._kubelet.wake(hname)  # whatever pod holds the name now
                raise
            self.foreign[hname] = (theirs["metadata"]["uid"], theirs["metadata"]["resourceVersion"])
            self.report.faults["host pod name taken by another owner"] += 1
            await self.virtual.patch(PODS, s.a, {"metadata": {"labels": {"rev": s.b}}}, "default")
        elif s.op == "host_pod_label":
            # A host controller (a mesh) labels a synced host pod while the syncer's host pod watch is down (its next
            # two watches refused), and the tenant relabels the pod meanwhile: the syncer writes the tenant's label
            # from a cache without the host's, which must stay on the host pod.
            hname = host_name(s.a, "default", VCLUSTER)
            h = self._objs(self.host_server, PODS, HOST_NS).get(hname)
            if h is None or not (h["metadata"].get("annotations") or {}).get(OBJECT_NAME):
                return  # none, or another owner's
            self.host_server.faults.fail(500, verb="watch", resource="pods", agent=SYNCER_AGENT, times=2)
            self.host_server.cut_watches()
            done = await self.host.patch(PODS, hname, {"metadata": {"labels": {"mesh": s.b}}}, HOST_NS,
                                         uid=h["metadata"]["uid"])
            self.host_labels[hname] = (done["metadata"]["uid"], s.b)
            self.report.faults["host label written behind the syncer's cache"] += 1
            await self.virtual.patch(PODS, s.a, {"metadata": {"labels": {"rev": s.b}}}, "default")
        elif s.op == "pod_debug":  # kubectl debug: an ephemeral container, through the pod's subresource only
            v = self._objs(self.virtual_server, PODS, "default").get(s.a)
            if v is None:
                return
            debug = {"name": f"debug-{s.b}", "image": "busybox:1.36"}
            ops = ([{"op": "add", "path": "/spec/ephemeralContainers/-", "value": debug}]
                   if v["spec"].get("ephemeralContainers") else
                   [{"op": "add", "path": "/spec/ephemeralContainers", "value": [debug]}])
            await self.virtual.patch(PODS, s.a, ops, "default", patch_type="json", subresource="ephemeralcontainers")
        elif s.op == "pod_label":
            await self.virtual.patch(PODS, s.a, {"metadata": {"labels": {"rev": s.b}}}, "default")
        elif s.op == "pod_image":  # a container's image is one of the few fields of a pod that may change
            await self.virtual.patch(PODS, s.a, [{"op": "replace", "path": "/spec/containers/0/image",
                                                  "value": f"nginx:1.{s.b}"}], "default", patch_type="json")
        elif s.op in ("config", "syncer_restart"):
            self.selector = s.a or self.selector
            await self._stop_syncer()
            await self._start_syncer()
            self.report.restarts += 1
        elif s.op == "fault":
            verb, resource = s.b.split("/")
            status, times = divmod(s.n, 10)
            self._server(s.a).faults.fail(status, verb=verb, resource=resource or None, times=max(1, times),
                                          retry_after=1 if status == 429 else None)
            self.report.faults[f"HTTP {status}"] += 1
        elif s.op == "cut_watches":
            self._server(s.a).cut_watches()
            self.report.faults["watches cut"] += 1
        elif s.op == "expire_history":
            self._server(s.a).expire_history()
            self._server(s.a).cut_watches()
            self.report.faults["history expired (410)"] += 1
        elif s.op == "server_restart":
            await self._server(s.a).restart()
            self.report.faults["API server restart"] += 1
            self.report.restarts += 1
        elif s.op == "server_wipe":  # restarted with an empty store, as after losing etcd
            if s.a == "host":  # read before the wipe; any may start while the restart is under way
                self._host_pods_go(list(self._objs(self.host_server, PODS, HOST_NS).values()), bound_only=False)
                self.hold.intersection_update({host_name(SQUATTED_POD, "default", VCLUSTER)})  # squatters go too
            await self._server(s.a).restart(wipe=True)
            self.report.faults["API server restart, state wiped"] += 1
            self.report.restarts += 1
            if s.a == "virtual":
                self.pods_alive.clear()
            else:
                await self._seed_host()
                self.standin.resync()  # the host copies went with the host's state
        elif s.op == "latency":
            self._server(s.a).faults.delay(0.3, times=3)
            self.report.faults["latency"] += 1

    def _host_pods_go(self, host_pods: list[Obj], bound_only: bool = True) -> None:
        """These host pods are going away: the virtual pods of those that may have started (the bound ones; all of
        them, with not `bound_only`) may be deleted (podplan row 12: a started pod is not synced again), so they
        are not lost. A pod unbound when it goes was never started: its virtual pod stays and is synced again."""
        for h in host_pods:
            name = (h["metadata"].get("annotations") or {}).get(OBJECT_NAME)
            if name and (not bound_only or (h.get("spec") or {}).get("nodeName")):
                self.may_go.add(name)
                self.pods_alive.discard(name)

    # ------------------------------------------------------------------ convergence

    async def converge(self, timeout: float = 90.0) -> list[str]:
        """Stop injecting faults and wait until the state is converged; returns what is still wrong
        at the deadline (empty when converged). Records the time it took.

        Converged means the syncer is ready and every state invariant holds. The work queue need not
        be idle: a pod the host keeps refusing is correctly retried with backoff forever."""
        for srv in (self.host_server, self.virtual_server):
            srv.faults.clear()
        loop = asyncio.get_running_loop()
        start = loop.time()
        problems: list[str] = []
        assert self._syncer is not None
        while loop.time() - start < timeout:
            left = timeout - (loop.time() - start)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._syncer.ready_event.wait(), left)
            for srv in (self.host_server, self.virtual_server):
                srv.storage.changed.clear()
            problems = self.check() if self._syncer.ready else ["syncer not ready: "
                                                                + "; ".join(self._syncer.readiness_detail())]
            if not problems:
                self.report.converge_seconds.append(loop.time() - start)
                return []
            # not there yet: wait for the next change in either cluster (the syncer's writes, a re-list)
            waits = [asyncio.ensure_future(srv.storage.changed.wait())
                     for srv in (self.host_server, self.virtual_server)]
            await asyncio.wait(waits, timeout=min(2.0, max(0.0, timeout - (loop.time() - start))),
                               return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
        self.report.converge_seconds.append(loop.time() - start)
        waiting = {q.name: q.pending() for q in (self._syncer.pod_queue, self._syncer.rc_queue)}
        return [*problems, f"not converged after {timeout:g}s; delayed retries: {waiting}"]

    async def run(self, steps: list[Step]) -> Report:
        """Apply the steps, converge, check. Returns this scenario's report."""
        for step in steps:
            await self.apply(step)
        problems = await self.converge()
        self.report.violations += problems + self.check_writes()
        self.report.lost += self.lost()
        return self.report

    # ------------------------------------------------------------------ invariants

    def _objs(self, srv: EmbeddedAPIServer, res: Any, ns: str = "") -> dict[str, Obj]:
        return {k[1]: v for k, v in srv.storage.objects(res).items() if k[0] == ns}

    def _gate(self, pod: str, rcn: str, host_rcs: dict[str, Obj]) -> tuple[bool, str, str]:
        """The gate of behaviour.md section 3, as the contract states it: (allowed, the SyncWarning message,
        the reason after `because`)."""
        if not rcn or self.selector == "all":  # no class, or an empty selector: every pod passes
            return True, "", ""
        h = host_rcs.get(rcn)
        if h is None:
            reason = (f'the runtime class "{rcn}" couldn\'t be reached in the host: runtimeclasses.node.k8s.io '
                      f'"{rcn}" not found')
        elif h["metadata"].get("deletionTimestamp"):
            reason = f'the runtime class "{rcn}" couldn\'t be reached in the host: runtime class is being deleted'
        elif not SELECTOR_MEANING[self.selector](h["metadata"].get("labels") or {}):
            reason = (f'the runtime class "{rcn}" in the host does not match the selector under '
                      "'sync.fromHost.runtimeClasses.selector'")
        else:
            return True, "", ""
        return False, f'did not sync pod "{pod}" to host because {reason}', reason

    def check(self) -> list[str]:
        """Every state invariant of behaviour.md sections 2 and 3; returns the violations. The expected state
        is computed here from the contract, independently of the syncer's modules."""
        out: list[str] = []
        host_rcs = self._objs(self.host_server, RUNTIMECLASSES)
        virtual_rcs = self._objs(self.virtual_server, RUNTIMECLASSES)
        # section 2: a virtual RC exists iff a host RC of that name exists and matches (controlled-by: alone)
        fenced = {n for n, o in (*host_rcs.items(), *virtual_rcs.items())
                  if CONTROLLED_BY in (o["metadata"].get("labels") or {})}
        expected = {n for n, h in host_rcs.items()
                    if n not in fenced and SELECTOR_MEANING[self.selector](h["metadata"].get("labels") or {})}
        got = set(virtual_rcs) - fenced
        if got != expected:
            out.append(f"virtual runtime classes {sorted(got)} != expected {sorted(expected)}")

        def view(rc: Obj) -> Obj:  # what section 2 says the copy has: spec fields, labels, annotations
            meta = rc["metadata"]
            return {"handler": rc.get("handler"), "overhead": rc.get("overhead"), "scheduling": rc.get("scheduling"),
                    "labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {}}

        for n in expected & got:
            if view(virtual_rcs[n]) != view(host_rcs[n]):
                out.append(f"virtual runtime class {n} differs from the host's")
        # section 3: pods
        vpods = self._objs(self.virtual_server, PODS, "default")
        hpods = self._objs(self.host_server, PODS, HOST_NS)
        events = list(self._objs(self.virtual_server, EVENTS, "default").values())

        def has_event(uid: str, reason: str, text: str, exact: bool) -> bool:
            return any(e["involvedObject"].get("uid") == uid and e["reason"] == reason
                       and (e["message"] == text if exact else text in e["message"]) for e in events)

        def owned(h: Obj, name: str) -> bool:
            ann = h["metadata"].get("annotations") or {}
            return ((h["metadata"].get("labels") or {}).get(MANAGED_BY) == VCLUSTER
                    and ann.get(OBJECT_NAME) == name)

        for name, v in vpods.items():
            uid = v["metadata"]["uid"]
            rcn = v["spec"].get("runtimeClassName") or ""
            allowed, message, reason = self._gate(name, rcn, host_rcs)
            h = hpods.get(host_name(name, "default", VCLUSTER))
            deleting = bool(v["metadata"].get("deletionTimestamp"))
            if h is not None and not owned(h, name):  # the gate is judged first, then the name conflict
                if allowed and rcn and rcn not in host_rcs:  # no gate (empty selector): the host's RuntimeClass
                    # admission refuses the create before its storage finds the name taken (endpoints/handlers/
                    # create.go: admission, then registry Store.Create's AlreadyExists)
                    if not has_event(uid, "SyncError", f'RuntimeClass "{rcn}" not found', exact=False):
                        out.append(f"pod {name}: no SyncError event with the host's refusal of class {rcn}")
                elif allowed and not has_event(uid, "SyncError", "is not managed by vcluster", exact=False):
                    out.append(f"pod {name}: no SyncError event about the host pod of another owner")
                elif not allowed and not has_event(uid, "SyncWarning", message, exact=True):
                    out.append(f"pod {name}: refused but no SyncWarning event with {message!r}")
            elif h is None:
                if deleting:  # podplan row 8: the syncer finishes the deletion of a pod with no host pod
                    out.append(f"pod {name}: being deleted, has no host pod, and was not deleted")
                elif (v.get("status") or {}).get("startTime"):  # row 12, vcluster's SyncToHost: never synced again
                    out.append(f"pod {name}: started, its host pod is gone, and it was not deleted")
                elif allowed and rcn and rcn not in host_rcs:  # no gate (empty selector): host admission refuses
                    if not has_event(uid, "SyncError", f'RuntimeClass "{rcn}" not found', exact=False):
                        out.append(f"pod {name}: no SyncError event with the host's refusal of class {rcn}")
                elif allowed:
                    out.append(f"pod {name}: allowed (class {rcn or '-'}) but not on the host")
                elif not has_event(uid, "SyncWarning", message, exact=True):
                    out.append(f"pod {name}: refused but no SyncWarning event with {message!r}")
            elif (h["metadata"].get("annotations") or {}).get(OBJECT_UID) != uid:
                old_rcn = h["spec"].get("runtimeClassName") or ""  # no class is forced here: the pod's own
                if self._gate(name, old_rcn, host_rcs)[0]:
                    out.append(f"pod {name}: host pod still belongs to an earlier pod of that name")
                elif not has_event(uid, "SyncWarning", "earlier, orphaned pod", exact=False):
                    out.append(f"pod {name}: no SyncWarning about the orphaned host pod of an earlier pod")
            elif allowed and deleting:  # rows 11 and 8: the host pod is deleted, then the virtual pod
                out.append(f"pod {name}: being deleted, its class allowed, and still there")
            elif allowed:
                # section 3, host metadata: the virtual pod's labels plus managed-by, the namespace label and the
                # virtual namespace's labels as ns-labels: `default` has kube-apiserver's kubernetes.io/metadata.name
                want = {**(v["metadata"].get("labels") or {}), MANAGED_BY: VCLUSTER, NAMESPACE_LABEL: "default",
                        DEFAULT_NS_LABEL: "default"}
                if h["metadata"].get("labels") != want:
                    out.append(f"pod {name}: host labels {h['metadata'].get('labels')} != {want}")
                # a host controller's label stays on the host pod it wrote it on (and so, above, reaches the
                # virtual pod), though the syncer's cache was behind when it wrote the tenant's
                huid, mesh = self.host_labels.get(host_name(name, "default", VCLUSTER), ("", ""))
                if huid == h["metadata"].get("uid") and (h["metadata"].get("labels") or {}).get("mesh") != mesh:
                    out.append(f"pod {name}: the host's label mesh={mesh} was lost from its host pod")
                # a changed image reaches the host pod (vcluster's translateUpdate: the containers' images)
                images = [c.get("image") for c in h["spec"].get("containers") or []]
                if images != (vimages := [c.get("image") for c in v["spec"].get("containers") or []]):
                    out.append(f"pod {name}: host images {images} != the virtual pod's {vimages}")
                # and so do its ephemeral containers (vcluster's syncEphemeralContainers), a host pod created after
                # them included (kube-apiserver takes them only through the subresource)
                debug = [c.get("name") for c in h["spec"].get("ephemeralContainers") or []]
                if debug != (vdebug := [c.get("name") for c in v["spec"].get("ephemeralContainers") or []]):
                    out.append(f"pod {name}: host ephemeral containers {debug} != the virtual pod's {vdebug}")
                # section 3, lifecycle: the host status is copied back, and the virtual pod is bound to its node
                seen = {k: (v.get("status") or {}).get(k) for k in STATUS_SEEN}
                if seen != (want_status := {k: (h.get("status") or {}).get(k) for k in STATUS_SEEN}):
                    out.append(f"pod {name}: virtual status {seen} != the host's {want_status}")
                if v["spec"].get("nodeName") != h["spec"].get("nodeName"):
                    out.append(f"pod {name}: bound to {v['spec'].get('nodeName')!r}, its host pod to "
                               f"{h['spec'].get('nodeName')!r}")
            elif not has_event(uid, "Orphaned", f'pod "{name}" is orphaned: {reason}', exact=False):
                out.append(f"pod {name}: orphaned but no Orphaned event for {reason!r}")
        for hname, h in hpods.items():
            ann = h["metadata"].get("annotations") or {}
            vname = ann.get(OBJECT_NAME)
            uid, rv = self.foreign.get(hname, ("", ""))
            if h["metadata"]["uid"] == uid:  # another owner's: whatever it says, it stays as it was created
                if h["metadata"]["resourceVersion"] != rv:
                    out.append(f"host pod {hname} of another owner was modified")
                continue
            if vname not in vpods and self._gate(str(vname), h["spec"].get("runtimeClassName") or "", host_rcs)[0]:
                out.append(f"host pod {hname}: its virtual pod is gone but it was not deleted")
            settled = not h["metadata"].get("deletionTimestamp") and (h.get("status") or {}).get("startTime")
            if self.kubelet and not settled:  # not the syncer's violation: quiet means the kubelet is done too
                out.append(f"host pod {hname}: not started, or not deleted yet, by the kubelet")
        return out

    def check_writes(self) -> list[str]:
        """What the syncer must never do, from the requests it sent (by user agent)."""
        out: list[str] = []
        managed = re.compile(rf"-x-default-x-{VCLUSTER}$")
        for method, path, agent in self.host_server.requests:
            if agent != SYNCER_AGENT or method not in ("POST", "PUT", "PATCH", "DELETE"):
                continue
            if "/runtimeclasses" in path:
                out.append(f"the syncer wrote a host runtime class: {method} {path}")
            if method == "DELETE" and "/pods/" in path and not managed.search(path):
                out.append(f"the syncer deleted a host pod it does not own: {path}")
        for method, path, agent in self.virtual_server.requests:
            if (agent == SYNCER_AGENT and method == "DELETE" and "/pods/" in path
                    and path.rpartition("/pods/")[2] not in self.may_go):
                out.append(f"the syncer deleted a virtual pod neither the tenant deleted nor its host pod left: {path}")
        return out

    def lost(self) -> int:
        """Virtual pods the driver created and did not delete that no longer exist."""
        return len(self.pods_alive - set(self._objs(self.virtual_server, PODS, "default")))


async def run_random(workdir: Path, seed: int, steps: int, chunk: int = 40) -> Report:
    """The soak: `steps` random steps in scenarios of `chunk` steps each, from `seed`."""
    rng = random.Random(seed)
    total = Report()
    done = 0
    while done < steps:
        n = min(chunk, steps - done)
        started = time.perf_counter()
        async with Scenario(workdir, selector=rng.choice(tuple(SELECTORS)), kubelet=rng.random() < 0.5) as s:
            total.merge(await s.run([random_step(rng) for _ in range(n)]))
        log.info("soak: %d/%d steps (%.1fs)", done + n, steps, time.perf_counter() - started)
        done += n
    total.scenarios = -(-steps // chunk)
    return total
