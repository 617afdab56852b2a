"""Faults one at a time: hung requests, caches that cannot sync, missing RBAC, throttling."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest

from syncer.config.model import parse_config
from syncer.kube.client import DEFAULT_USER_AGENT, ApiError, KubeClient
from syncer.kube.controller import Controller
from syncer.kube.resources import PODS, RUNTIMECLASSES
from syncer.kube.workqueue import WorkQueue
from syncer.manager import Options, Syncer
from syncer.metrics import Metrics
from syncer.server import ProbeServer
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, pod, rc, rc_config, running_syncer, virtual_rc_names


@contextlib.asynccontextmanager
async def probed_syncer(c: Clusters) -> AsyncIterator[tuple[Syncer, str]]:
    """A syncer started without waiting for readiness, with /readyz served over HTTP."""
    host = await KubeClient.from_kubeconfig(str(c.host_kubeconfig), "host")
    virtual = await KubeClient.from_kubeconfig(str(c.virtual_kubeconfig), "virtual")
    syncer = Syncer(parse_config(rc_config({})), host, virtual, Options(vcluster_name=VCLUSTER, host_namespace=HOST_NS))
    probes = ProbeServer(syncer, "127.0.0.1:0", None)
    await probes.start()
    stop = asyncio.Event()
    task = asyncio.create_task(syncer.run(stop))
    try:
        yield syncer, f"http://127.0.0.1:{probes.ports['health']}/readyz"
    finally:
        stop.set()
        await task
        await probes.stop()
        await host.close()
        await virtual.close()


async def readyz(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as r:
        return r.status, await r.text()


async def test_hung_requests_time_out_and_are_retried(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor"))
    # The first create hangs far longer than the wait below: only a request timeout and a retry can sync it.
    slow = clusters.virtual_server.faults.delay(120.0, verb="create", resource="runtimeclasses",
                                                agent=DEFAULT_USER_AGENT)
    async with running_syncer(clusters, rc_config({}), request_timeout=0.3):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "synced after the hung create timed out")
    assert slow.hits == 1


async def test_readyz_is_503_with_the_reason_until_caches_sync(clusters: Clusters) -> None:
    blocked = clusters.host_server.faults.fail(503, verb="list", resource="runtimeclasses", times=10_000,
                                               agent=DEFAULT_USER_AGENT)
    async with probed_syncer(clusters) as (syncer, url):
        await asyncio.wait_for(blocked.wait_hits(2), 10)  # the informer is retrying with backoff
        status, text = await readyz(url)
        assert status == 503
        assert "cache host/runtimeclasses.node.k8s.io not synced" in text and "HTTP 503" in text
        clusters.host_server.faults.clear()
        await asyncio.wait_for(syncer.ready_event.wait(), 10)
        assert await readyz(url) == (200, "ok")


async def test_forbidden_is_logged_once_and_shown_in_readiness(clusters: Clusters,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor"))
    await clusters.host.create(RUNTIMECLASSES, rc("kata"))
    denied = clusters.virtual_server.faults.fail(403, verb="create", resource="runtimeclasses", times=10_000,
                                                 agent=DEFAULT_USER_AGENT,
                                                 message='runtimeclasses.node.k8s.io is forbidden: User "syncer" '
                                                         'cannot create resource "runtimeclasses"')
    async with probed_syncer(clusters) as (syncer, url):
        await asyncio.wait_for(syncer.ready_event.wait(), 10)
        await asyncio.wait_for(denied.wait_hits(6), 10)  # both classes retried a few times
        status, text = await readyz(url)
        assert status == 503 and "forbidden to create runtimeclasses.node.k8s.io on the virtual cluster" in text
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert errors == ["runtimeclass: forbidden to create runtimeclasses (group node.k8s.io) on the virtual "
                          "cluster; check the RBAC of the syncer: " + denied.message]
        clusters.virtual_server.faults.clear()  # RBAC fixed
        await virtual_rc_names(clusters, lambda n: n == {"gvisor", "kata"}, "synced once allowed")
        await syncer.wait_idle()
        assert await readyz(url) == (200, "ok")


async def test_retry_after_is_honoured() -> None:
    queue = WorkQueue("t")
    controller = Controller("t", queue, lambda key: asyncio.sleep(0), Metrics())
    controller._failed("k", ApiError(429, "TooManyRequests", "slow down", retry_after=5))
    delay = queue.pending_delay("k")
    queue.shutdown()
    assert delay is not None and delay > 4.9  # the rate limiter alone would retry after 50 ms


class Fatal(BaseException):
    """Not an Exception: nothing in a reconcile's failure handling catches it."""


async def test_a_pod_worker_that_ends_turns_healthz_red(clusters: Clusters) -> None:
    async with probed_syncer(clusters) as (syncer, url):
        await asyncio.wait_for(syncer.ready_event.wait(), 10)
        healthz = url.replace("/readyz", "/healthz")
        assert (await readyz(healthz))[0] == 200
        (pods,) = [c for c in syncer.controllers if c.name == "pod"]
        reconcile = pods.reconcile

        async def dies_on_web(key: str) -> float | None:
            if key == "default/web":
                raise Fatal()
            return await reconcile(key)

        pods.reconcile = dies_on_web
        await clusters.virtual.create(PODS, pod("web"), "default")
        await eventually(lambda: not syncer.healthy, "a pod worker's end noticed")
        assert (await readyz(healthz))[0] == 503  # the kubelet's liveness probe restarts the syncer
        assert pods.queue.processing == 0
