"""The floor: the API work of an initial sync done by a minimal script, with the syncer's HTTP client
library (aiohttp), its JSON library (orjson) and its concurrency (2 RuntimeClass writers, 4 pod writers) and
no controller logic.

    python -m bench.floor --host URL --virtual URL

It lists the host RuntimeClasses and creates the matching ones in the virtual cluster, lists the virtual
pods, and for each pod whose class matches requests its service-account token from the virtual cluster
(TokenRequest) and creates its host pod (`host_pod`: a fixed template of vcluster's translation); it writes
one SyncWarning Event for each refused pod. It
exits when everything is written.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import aiohttp
import orjson

from bench.names import HOST_NAMESPACE, SELECTOR_LABEL, VCLUSTER

Obj = dict[str, Any]
RC_PATH = "/apis/node.k8s.io/v1/runtimeclasses"
JSON = {"Content-Type": "application/json", "Accept": "application/json"}


async def _pool(workers: int, items: list[Obj], work: Callable[[Obj], Awaitable[object]]) -> None:
    queue: asyncio.Queue[Obj] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(workers)))


async def _post(session: aiohttp.ClientSession, url: str, body: Obj) -> Obj:
    async with session.post(url, data=orjson.dumps(body), headers=JSON) as resp:
        data: Obj = orjson.loads(await resp.read())
        if resp.status >= 400:
            raise RuntimeError(f"POST {url}: {resp.status}")
        return data


def host_pod(pod: Obj, token: str, renew_at: int = 0) -> Obj:
    """The host pod of a benchmark pod, built as a fixed template with every field vcluster's translation writes
    (so the body is the size the syncer's is): the host name, labels, object, identity and merge-base annotations,
    the token in an annotation read through the downward API with its renewal state, the host copy of
    `kube-root-ca.crt`, the workload service account, an owner reference, the virtual cluster's API address (the
    `KUBERNETES_*` variables and host alias) and DNS. No controller logic: nothing is looked up or compared."""
    meta, spec = pod["metadata"], pod["spec"]
    ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
    suffix = f"-x-{ns}-x-{VCLUSTER}"
    labels = meta.get("labels") or {}
    host_spec = {k: v for k, v in spec.items() if k not in ("serviceAccount", "nodeName", "volumes")}
    ip, tcp = "10.96.0.10", "tcp://10.96.0.10:443"
    env = [{"name": k, "value": v} for k, v in (
        ("KUBERNETES_PORT", tcp), ("KUBERNETES_PORT_443_TCP", tcp), ("KUBERNETES_PORT_443_TCP_ADDR", ip),
        ("KUBERNETES_PORT_443_TCP_PORT", "443"), ("KUBERNETES_PORT_443_TCP_PROTO", "tcp"),
        ("KUBERNETES_SERVICE_HOST", ip), ("KUBERNETES_SERVICE_PORT", "443"), ("KUBERNETES_SERVICE_PORT_HTTPS", "443"))]
    host_spec["containers"] = [{**c, "env": [*env, *(c.get("env") or [])]} for c in spec["containers"]]
    host_spec["volumes"] = [{"name": v["name"], "projected": {"defaultMode": 420, "sources": [
        {"downwardAPI": {"items": [{"path": "token", "mode": 420, "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['vcluster.loft.sh/token-bench000']"}}]}},
        {"configMap": {"name": f"kube-root-ca.crt{suffix}", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['vcluster.loft.sh/namespace']"}}]}}]}}
        for v in spec.get("volumes") or []]
    host_spec.update(serviceAccountName=f"vc-workload-{VCLUSTER}", automountServiceAccountToken=False,
                     enableServiceLinks=False, hostname=name, dnsPolicy="None", dnsConfig={
                         "nameservers": ["10.96.0.11"], "options": [{"name": "ndots", "value": "5"}],
                         "searches": [f"{ns}.svc.cluster.local", "svc.cluster.local", "cluster.local"]},
                     hostAliases=[{"ip": ip, "hostnames": ["kubernetes.default.svc.cluster.local", "kubernetes",
                                                           "kubernetes.default", "kubernetes.default.svc"]}])
    audiences = ["https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                 "https://kubernetes.default"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{name}{suffix}",
        "labels": {**labels, "vcluster.loft.sh/managed-by": VCLUSTER, "vcluster.loft.sh/namespace": ns},
        "annotations": {
            **(meta.get("annotations") or {}), "vcluster.loft.sh/object-name": name,
            "vcluster.loft.sh/object-namespace": ns, "vcluster.loft.sh/object-uid": uid,
            "vcluster.loft.sh/object-kind": "/v1, Kind=Pod", "vcluster.loft.sh/object-host-name": f"{name}{suffix}",
            "vcluster.loft.sh/object-host-namespace": HOST_NAMESPACE,
            "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
            "vcluster.loft.sh/labels": "\n".join(f'{k}="{v}"' for k, v in sorted(labels.items())),
            "runtimeclass-syncer.io/synced-annotations": orjson.dumps(
                {k: "0123456789" for k in meta.get("annotations") or {}}).decode(),
            "runtimeclass-syncer.io/virtual-runtime-class": spec.get("runtimeClassName", ""),
            "vcluster.loft.sh/name": name, "vcluster.loft.sh/namespace": ns, "vcluster.loft.sh/uid": uid,
            "vcluster.loft.sh/service-account-name": spec.get("serviceAccountName", "default"),
            "vcluster.loft.sh/token-bench000": token,
            "runtimeclass-syncer.io/token-renewal": orjson.dumps({
                "renewAt": renew_at, "tokens": {"vcluster.loft.sh/token-bench000": audiences}}).decode()},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": VCLUSTER, "uid": uid,
                             "controller": False}]},
        "spec": host_spec}


async def _get(session: aiohttp.ClientSession, url: str) -> Obj:
    async with session.get(url, headers=JSON) as resp:
        data: Obj = orjson.loads(await resp.read())
        return data


def writers(session: aiohttp.ClientSession, host: str, virtual: str, matching: dict[str, Obj]) -> tuple[
        Callable[[Obj], Awaitable[None]], Callable[[Obj], Awaitable[Obj | None]]]:
    """The floor's two writes: (write_class(host class): its virtual copy, write_pod(virtual pod): the pod's
    SyncWarning Event when its class is not in `matching` (by name), else its TokenRequest and host pod, which
    it returns as created)."""

    async def write_class(rc: Obj) -> None:
        meta = rc["metadata"]
        await _post(session, virtual + RC_PATH, {
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": rc["handler"],
            "metadata": {"name": meta["name"], "labels": meta.get("labels") or {},
                         "annotations": meta.get("annotations") or {}},
            **{k: rc[k] for k in ("overhead", "scheduling") if k in rc}})

    async def write_pod(pod: Obj) -> Obj | None:
        meta, spec = pod["metadata"], pod["spec"]
        if spec.get("runtimeClassName") not in matching:
            await _post(session, f"{virtual}/api/v1/namespaces/{meta['namespace']}/events", {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{meta['name']}.floor", "namespace": meta["namespace"]},
                "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": meta["namespace"],
                                   "name": meta["name"], "uid": meta["uid"]},
                "reason": "SyncWarning", "type": "Warning", "count": 1, "source": {"component": "pod-syncer"},
                "message": f'did not sync pod "{meta["name"]}" to host because its runtime class is refused'})
            return None
        review = await _post(session, f"{virtual}/api/v1/namespaces/{meta['namespace']}/serviceaccounts/"
                                      f"{spec.get('serviceAccountName', 'default')}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
                "audiences": ["https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                              "https://kubernetes.default"], "expirationSeconds": 3600,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}})
        return await _post(session, f"{host}/api/v1/namespaces/{HOST_NAMESPACE}/pods",
                           host_pod(pod, review["status"]["token"]))

    return write_class, write_pod


def matching_classes(classes: list[Obj]) -> dict[str, Obj]:
    """The host classes the benchmark's selector matches, by name."""
    return {rc["metadata"]["name"]: rc for rc in classes
            if (rc["metadata"].get("labels") or {}).get(SELECTOR_LABEL[0]) == SELECTOR_LABEL[1]}


async def run(host: str, virtual: str) -> None:
    """Do the floor's API work against the two servers (base URLs)."""
    async with aiohttp.ClientSession() as session:
        classes, pods = await asyncio.gather(_get(session, host + RC_PATH), _get(session, virtual + "/api/v1/pods"))
        matching = matching_classes(classes["items"])
        write_class, write_pod = writers(session, host, virtual, matching)
        await asyncio.gather(_pool(2, list(matching.values()), write_class), _pool(4, pods["items"], write_pod))


def command(run: Callable[[str, str], Coroutine[Any, Any, None]], doc: str | None) -> None:
    """A floor script's command line: `--host URL --virtual URL`, then `run(host, virtual)`."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", required=True)
    ap.add_argument("--virtual", required=True)
    args = ap.parse_args()
    asyncio.run(run(args.host, args.virtual))


def main() -> None:
    command(run, __doc__)


if __name__ == "__main__":
    main()
