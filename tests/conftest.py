"""Shared fixtures: two embedded API servers (host and virtual) over real HTTP, clients for them, and
a helper that runs the syncer in-process against them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubesim.apiserver import EmbeddedAPIServer
from kubesim.vcluster_standin import VClusterResourceSyncers, create_vcluster_host_objects
from syncer.config.model import parse_config
from syncer.kube.client import DEFAULT_USER_AGENT, KubeClient
from syncer.kube.resources import NAMESPACES, RUNTIMECLASSES
from syncer.kube.wait import wait_for
from syncer.manager import Options, Syncer

Obj = dict[str, Any]
HOST_NS = "vc-test"
TEST_AGENT = "tests"  # the user agent of the tests' own clients; the syncer's is runtimeclass-syncer/<version>
VCLUSTER = "test"


@dataclass
class Clusters:
    """The two API servers, kubeconfig paths, and clients for them (the test's own view)."""

    host_server: EmbeddedAPIServer
    virtual_server: EmbeddedAPIServer
    host_kubeconfig: Path
    virtual_kubeconfig: Path
    host: KubeClient
    virtual: KubeClient


@pytest.fixture(scope="session", autouse=True)
def all_api_servers() -> Iterator[list[EmbeddedAPIServer]]:
    """Every embedded API server the session starts (tests, chaos scenarios, demo runs in process), so
    that tests/test_zz_rbac.py can check the syncer's requests against deploy/ (RBAC from the code)."""
    servers: list[EmbeddedAPIServer] = []
    original = EmbeddedAPIServer.__init__

    def register(self: EmbeddedAPIServer, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        servers.append(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(EmbeddedAPIServer, "__init__", register)
        yield servers


@pytest.fixture
async def clusters(tmp_path: Path) -> AsyncIterator[Clusters]:
    async with open_clusters(tmp_path) as c:
        yield c


@contextlib.asynccontextmanager
async def open_clusters(tmp_path: Path) -> AsyncIterator[Clusters]:
    """The `clusters` fixture's two API servers, for a test that needs fresh ones per example (hypothesis)."""
    async with EmbeddedAPIServer("host", bookmark_interval=0.5) as hs, \
            EmbeddedAPIServer("virtual", runtime_class_admission=False, bookmark_interval=0.5) as vs:
        hk = hs.write_kubeconfig(tmp_path / "host.kubeconfig", HOST_NS)
        vk = vs.write_kubeconfig(tmp_path / "virtual.kubeconfig")
        host = await KubeClient.from_kubeconfig(str(hk), "host", user_agent=TEST_AGENT)
        virtual = await KubeClient.from_kubeconfig(str(vk), "virtual", user_agent=TEST_AGENT)
        await host.create(NAMESPACES, {"metadata": {"name": HOST_NS}})
        await create_vcluster_host_objects(host, HOST_NS, VCLUSTER)
        try:
            yield Clusters(hs, vs, hk, vk, host, virtual)
        finally:
            await host.close()
            await virtual.close()


def rc_config(selector: Obj | None = None, enabled: bool = True, **extra: Any) -> Obj:
    """A vcluster.yaml document enabling RuntimeClass sync with `selector`."""
    rc: Obj = {"enabled": enabled}
    if selector is not None:
        rc["selector"] = selector
    doc: Obj = {"sync": {"fromHost": {"runtimeClasses": rc}}}
    for k, v in extra.items():
        doc[k] = v
    return doc


@contextlib.asynccontextmanager
async def running_syncer(c: Clusters, document: Obj, **options: Any) -> AsyncIterator[Syncer]:
    """Run a Syncer in-process against `c` until the block ends; yields once it is ready."""
    config = parse_config(document)
    timeout = options.pop("request_timeout", 30.0)
    host = await KubeClient.from_kubeconfig(str(c.host_kubeconfig), "host", request_timeout=timeout)
    virtual = await KubeClient.from_kubeconfig(str(c.virtual_kubeconfig), "virtual", request_timeout=timeout)
    patcher = options.pop("patcher", None)
    policy = options.pop("policy", None)
    clock = options.pop("clock", None)
    # vcluster's own resource syncers keep running beside the sidecar (section 3.1): stood in here
    to_host = config.raw.sync.toHost
    standin = VClusterResourceSyncers(c.virtual, c.host, HOST_NS, VCLUSTER, all_configmaps=to_host.configMaps.all,
                                      all_secrets=to_host.secrets.all,
                                      service_accounts=to_host.serviceAccounts.enabled,
                                      resource_claims=to_host.resourceClaims.enabled,
                                      resource_claim_templates=to_host.resourceClaimTemplates.enabled)
    syncer = Syncer(config, host, virtual, Options(vcluster_name=VCLUSTER, host_namespace=HOST_NS,
                                                   watch_timeout=options.pop("watch_timeout", 30), **options),
                    patcher=patcher, policy=policy, clock=clock)
    stop = asyncio.Event()
    task = asyncio.create_task(syncer.run(stop))
    standin_task = asyncio.create_task(standin.run(stop))
    try:
        await asyncio.wait_for(syncer.ready_event.wait(), 15)
        yield syncer
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)
        await standin_task
        await host.close()
        await virtual.close()


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve the aiohttp `app` on a free port of 127.0.0.1 until the block ends; yields its URL (a stand-in server
    for what kubesim does not model: a stream framed on purpose, a credential check)."""
    from aiohttp import web

    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def hold_watch_down(server: EmbeddedAPIServer, resource: str) -> None:
    """Cut `server`'s watches and refuse the syncer's next watch of `resource` (HTTP 500), so that the syncer's
    informer waits for its retry: with an injected clock, until the test advances it. Returns once the watch was
    refused."""
    down = server.faults.fail(500, verb="watch", resource=resource, agent=DEFAULT_USER_AGENT)
    server.cut_watches()
    await eventually(lambda: down.times == 0, f"the {server.name} {resource} watch down, its retry waiting")


async def eventually(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Wait until `condition()` holds (checked after each turn of the event loop, at most every 10 ms).

    Raises:
        TimeoutError: naming `what`, when it does not hold within `timeout` seconds.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for: {what}")
        await asyncio.sleep(0.01)


def rc(name: str, handler: str | None = None, labels: dict[str, str] | None = None, **fields: Any) -> Obj:
    """A RuntimeClass manifest."""
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": meta,
            "handler": handler or name, **fields}


def pod(name: str, runtime_class: str | None = None, namespace: str = "default", **spec: Any) -> Obj:
    """A Pod manifest with one container."""
    s: Obj = {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec}
    if runtime_class is not None:
        s["runtimeClassName"] = runtime_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": s}


async def virtual_rc_names(c: Clusters, predicate: Callable[[set[str]], bool], what: str) -> set[str]:
    """Wait until the set of virtual RuntimeClass names satisfies `predicate`; return it."""
    objs = await wait_for(c.virtual, RUNTIMECLASSES, lambda o: predicate(set(o)), timeout=10, what=what)
    return set(objs)
