"""The benchmarks' API servers: a host and a virtual embedded API server in a process of their own, so
the syncer's (or the floor's) CPU is measured alone.

    python -m bench.servers --workdir DIR [--classes N] [--pods N]

Seeds, in-process (no HTTP): the host namespace `bench` with what vcluster puts there (its Service, the
host copy of kube-dns and of each namespace's kube-root-ca.crt, the workload service account), N host
RuntimeClasses of which every even one matches the benchmark selector (`tier=tenant`), and N virtual pods
of which every fifth names a non-matching class (refused). Then it writes `host.kubeconfig` and
`virtual.kubeconfig` into DIR, prints one JSON line (`{"host": url, "virtual": url, "pid": ...}`) and serves
until its standard input closes; then it writes every client's request counts to `requests.json` in DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from bench.names import HOST_NAMESPACE, SELECTOR_LABEL, VCLUSTER
from kubesim.apiserver import EmbeddedAPIServer
from kubesim.tokens import kube_api_access_volume
from kubesim.vcluster import MANAGED_BY, OBJECT_NAME, OBJECT_NAMESPACE
from kubesim.vcluster import host_name as host_pod_name
from syncer.kube.resources import CONFIGMAPS, NAMESPACES, PODS, RUNTIMECLASSES, SERVICEACCOUNTS, SERVICES, APIResource

Obj = dict[str, Any]
POD_NAMESPACES = ("default", "team-a", "team-b", "team-c")
TOKEN_VOLUME = "kube-api-access-b3nch"


def class_name(i: int) -> str:
    """The name of host RuntimeClass number i."""
    return f"rc-{i:05d}"


def matches(i: int) -> bool:
    """Whether host RuntimeClass number i carries the selector's label (every even one)."""
    return i % 2 == 0


def host_class(i: int, *, matching: bool | None = None) -> Obj:
    """Host RuntimeClass number i, shaped like a real one (labels, overhead, scheduling)."""
    labels = {"app.kubernetes.io/part-of": "sandboxes", "cost-center.example.com/id": str(i)}
    if matches(i) if matching is None else matching:
        labels[SELECTOR_LABEL[0]] = SELECTOR_LABEL[1]
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": class_name(i), "labels": labels, "annotations": {"owner": "platform"}},
            "handler": "runsc", "overhead": {"podFixed": {"cpu": "50m", "memory": "32Mi"}},
            "scheduling": {"nodeSelector": {"sandbox.example.com/gvisor": "true"},
                           "tolerations": [{"key": "sandbox.example.com/gvisor", "operator": "Exists",
                                            "effect": "NoSchedule"}]}}


def pod_class(i: int, classes: int) -> int:
    """The class number virtual pod i names: a non-matching one for every fifth pod, else a matching one."""
    if i % 5 == 0:
        return (2 * i + 1) % classes if classes > 1 else 0
    return (2 * i) % classes


def virtual_pod(i: int, classes: int, *, rc: str | None = None) -> Obj:
    """Virtual pod number i: a small web workload (labels, an env, resources, a probe) naming a class, with
    the service-account token volume every pod of a real cluster gets (so its host pod needs a TokenRequest
    and the host copy of `kube-root-ca.crt`)."""
    name = f"web-{i:05d}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": POD_NAMESPACES[i % len(POD_NAMESPACES)],
                         "labels": {"app": "web", "pod-template-hash": "6f9c7d8b5"},
                         "annotations": {"example.com/owner": "tenant"}},
            "spec": {"runtimeClassName": rc if rc is not None else class_name(pod_class(i, classes)),
                     "serviceAccountName": "default",
                     "containers": [{"name": "web", "image": "nginx:1.27",
                                     "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                     "env": [{"name": "MODE", "value": "production"}],
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                   "limits": {"memory": "128Mi"}},
                                     "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                                     "volumeMounts": [{"name": TOKEN_VOLUME, "readOnly": True,
                                                       "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
                     # what the virtual API server's ServiceAccount admission injects into every pod
                     "volumes": [kube_api_access_volume(TOKEN_VOLUME)]}}


def refused(i: int, classes: int) -> bool:
    """Whether virtual pod i is refused by the gate."""
    return not matches(pod_class(i, classes))


def _put(server: EmbeddedAPIServer, res: APIResource, ns: str, obj: Obj) -> None:
    server._create_obj(res, ns, obj)  # in-process: seeding must not cost the measured processes anything


def latency_class(kind: str, i: int) -> Obj:
    """A class the change-latency benchmark changes: `lat-relabel-i` and `lat-delete-i` match (they are
    synced, then relabelled or deleted), `lat-gate-i` does not (pod `gated-i` waits for it)."""
    rc = host_class(i, matching=kind != "gate")
    rc["metadata"]["name"] = f"lat-{kind}-{i}"
    return rc


def seed(host: EmbeddedAPIServer, virtual: EmbeddedAPIServer, classes: int, pods: int, latency: int = 0) -> None:
    """Fill both servers directly (see the module docstring); with `latency` K, also K classes of each kind
    of `latency_class` and K virtual pods `gated-i` in `default` naming `lat-gate-i`."""
    _put(host, NAMESPACES, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOST_NAMESPACE}})
    dns = host_pod_name("kube-dns", "kube-system", VCLUSTER)
    _put(host, SERVICES, HOST_NAMESPACE, {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": VCLUSTER}, "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}})
    _put(host, SERVICES, HOST_NAMESPACE, {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": dns, "labels": {MANAGED_BY: VCLUSTER},
        "annotations": {OBJECT_NAME: "kube-dns", OBJECT_NAMESPACE: "kube-system"}},
        "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}})
    _put(host, SERVICEACCOUNTS, HOST_NAMESPACE, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                 "metadata": {"name": f"vc-workload-{VCLUSTER}"}})
    for ns in POD_NAMESPACES:  # vcluster's ConfigMap syncer keeps a host copy of each kube-root-ca.crt
        _put(host, CONFIGMAPS, HOST_NAMESPACE, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": host_pod_name("kube-root-ca.crt", ns, VCLUSTER), "labels": {MANAGED_BY: VCLUSTER},
            "annotations": {OBJECT_NAME: "kube-root-ca.crt", OBJECT_NAMESPACE: ns}},
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nbench CA\n-----END CERTIFICATE-----\n"}})
    for i in range(classes):
        _put(host, RUNTIMECLASSES, "", host_class(i))
    for ns in POD_NAMESPACES[1:]:
        _put(virtual, NAMESPACES, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for i in range(pods):
        pod = virtual_pod(i, classes)
        _put(virtual, PODS, pod["metadata"]["namespace"], pod)
    for i in range(latency):
        for kind in ("relabel", "delete", "gate"):
            _put(host, RUNTIMECLASSES, "", latency_class(kind, i))
        pod = virtual_pod(i, classes, rc=f"lat-gate-{i}")
        pod["metadata"].update(name=f"gated-{i}", namespace="default")
        _put(virtual, PODS, "default", pod)


async def serve(workdir: Path, classes: int, pods: int, latency: int = 0) -> None:
    """Seed, start both servers, announce them on stdout, serve until stdin closes."""
    history = 4 * (classes + pods + 4 * latency) + 10_000
    async with EmbeddedAPIServer("host", history_size=history) as host, \
            EmbeddedAPIServer("virtual", runtime_class_admission=False, history_size=history) as virtual:
        seed(host, virtual, classes, pods, latency)
        host.write_kubeconfig(workdir / "host.kubeconfig", HOST_NAMESPACE)
        virtual.write_kubeconfig(workdir / "virtual.kubeconfig")
        print(json.dumps({"host": host.url, "virtual": virtual.url, "pid": os.getpid()}), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # the harness closes stdin to stop us
        (workdir / "requests.json").write_text(json.dumps(request_counts([host, virtual])))


def request_counts(servers: list[EmbeddedAPIServer]) -> dict[str, dict[str, int]]:
    """Requests each client sent, from the servers' audit: {user agent's first word: {"<server> <verb>
    <resource>": count}}; the harness's own observers (agent `bench-observer`) are left out."""
    out: dict[str, dict[str, int]] = {}
    for server in servers:
        for e in server.audit:
            agent = e.agent.split("/")[0].split(" ")[0] or "unknown"
            if agent == "bench-observer":
                continue
            key = f"{server.name} {e.verb} {e.resource}"
            out.setdefault(agent, {})[key] = out.setdefault(agent, {}).get(key, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--classes", type=int, default=0)
    ap.add_argument("--pods", type=int, default=0)
    ap.add_argument("--latency", type=int, default=0, help="objects for K changes of each kind (bench.latency)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(serve(args.workdir, args.classes, args.pods, args.latency))


if __name__ == "__main__":
    main()
