"""The floor: the API work of an initial sync done by a minimal script, with the syncer's HTTP client
library (aiohttp) and its concurrency (2 RuntimeClass writers, 4 pod writers) and no controller logic.

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
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import aiohttp

from bench.servers import HOST_NAMESPACE, SELECTOR_LABEL, VCLUSTER

Obj = dict[str, Any]
RC_PATH = "/apis/node.k8s.io/v1/runtimeclasses"
JSON = {"Content-Type": "application/json", "Accept": "application/json"}


async def _pool(workers: int, items: list[Obj], work: Callable[[Obj], Awaitable[None]]) -> None:
    queue: asyncio.Queue[Obj] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(workers)))


async def _post(session: aiohttp.ClientSession, url: str, body: Obj) -> Obj:
    async with session.post(url, data=json.dumps(body), headers=JSON) as resp:
        data: Obj = json.loads(await resp.read())
        if resp.status >= 400:
            raise RuntimeError(f"POST {url}: {resp.status}")
        return data


def host_pod(pod: Obj, token: str) -> Obj:
    """The host pod of a benchmark pod, built as a fixed template with the parts of vcluster's translation
    that make the body the size the syncer's is: the host name, labels and object annotations, the token in
    an annotation read through the downward API, the host copy of `kube-root-ca.crt`, the workload service
    account, the virtual cluster's API address and DNS (no controller logic: nothing is looked up)."""
    meta, spec = pod["metadata"], pod["spec"]
    ns, name = meta["namespace"], meta["name"]
    suffix = f"-x-{ns}-x-{VCLUSTER}"
    host_spec = {k: v for k, v in spec.items() if k not in ("serviceAccount", "nodeName", "volumes")}
    env = [{"name": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.10"},
           {"name": "KUBERNETES_SERVICE_PORT", "value": "443"},
           {"name": "KUBERNETES_PORT", "value": "tcp://10.96.0.10:443"}]
    host_spec["containers"] = [{**c, "env": [*(c.get("env") or []), *env]} for c in spec["containers"]]
    host_spec["volumes"] = [{"name": v["name"], "projected": {"defaultMode": 420, "sources": [
        {"downwardAPI": {"items": [{"path": "token", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['vcluster.loft.sh/token-bench']"}}]}},
        {"configMap": {"name": f"kube-root-ca.crt{suffix}", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['vcluster.loft.sh/namespace']"}}]}}]}}
        for v in spec.get("volumes") or []]
    host_spec.update(serviceAccountName=f"vc-workload-{VCLUSTER}", automountServiceAccountToken=False,
                     enableServiceLinks=False, hostname=name, dnsPolicy="None", dnsConfig={
                         "nameservers": ["10.96.0.11"], "options": [{"name": "ndots", "value": "5"}],
                         "searches": [f"{ns}.svc.cluster.local", "svc.cluster.local", "cluster.local"]})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{name}{suffix}",
        "labels": {**(meta.get("labels") or {}), "vcluster.loft.sh/managed-by": VCLUSTER,
                   "vcluster.loft.sh/namespace": ns},
        "annotations": {**(meta.get("annotations") or {}), "vcluster.loft.sh/object-name": name,
                        "vcluster.loft.sh/object-namespace": ns, "vcluster.loft.sh/object-uid": meta["uid"],
                        "vcluster.loft.sh/object-kind": "/v1, Kind=Pod", "vcluster.loft.sh/namespace": ns,
                        "vcluster.loft.sh/token-bench": token}},
        "spec": host_spec}


async def _get(session: aiohttp.ClientSession, url: str) -> Obj:
    async with session.get(url, headers=JSON) as resp:
        data: Obj = json.loads(await resp.read())
        return data


async def run(host: str, virtual: str) -> None:
    """Do the floor's API work against the two servers (base URLs)."""
    async with aiohttp.ClientSession() as session:
        classes, pods = await asyncio.gather(_get(session, host + RC_PATH), _get(session, virtual + "/api/v1/pods"))
        matching = {rc["metadata"]["name"]: rc for rc in classes["items"]
                    if (rc["metadata"].get("labels") or {}).get(SELECTOR_LABEL[0]) == SELECTOR_LABEL[1]}

        async def write_class(rc: Obj) -> None:
            meta = rc["metadata"]
            await _post(session, virtual + RC_PATH, {
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": rc["handler"],
                "metadata": {"name": meta["name"], "labels": meta.get("labels") or {},
                             "annotations": meta.get("annotations") or {}},
                **{k: rc[k] for k in ("overhead", "scheduling") if k in rc}})

        async def write_pod(pod: Obj) -> None:
            meta, spec = pod["metadata"], pod["spec"]
            if spec.get("runtimeClassName") not in matching:
                await _post(session, f"{virtual}/api/v1/namespaces/{meta['namespace']}/events", {
                    "apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": f"{meta['name']}.floor", "namespace": meta["namespace"]},
                    "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": meta["namespace"],
                                       "name": meta["name"], "uid": meta["uid"]},
                    "reason": "SyncWarning", "type": "Warning", "count": 1, "source": {"component": "pod-syncer"},
                    "message": f'did not sync pod "{meta["name"]}" to host because its runtime class is refused'})
                return
            review = await _post(session, f"{virtual}/api/v1/namespaces/{meta['namespace']}/serviceaccounts/"
                                          f"{spec.get('serviceAccountName', 'default')}/token", {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
                    "audiences": ["https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",
                                  "https://kubernetes.default"], "expirationSeconds": 3600,
                    "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}})
            await _post(session, f"{host}/api/v1/namespaces/{HOST_NAMESPACE}/pods",
                        host_pod(pod, review["status"]["token"]))

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
