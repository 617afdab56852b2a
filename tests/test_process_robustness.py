"""The process under what others do to it: a probe client that never finishes its request.

- SIGTERM or SIGINT stops cleanly with exit status 0 within 10 seconds (behaviour.md section 7), whatever a client of
  the probe/metrics port does: aiohttp's defaults (a 10 s wait for an unfinished request body, a 60 s wait for open
  connections) made it 10.6 s.
"""

from __future__ import annotations

import asyncio
import socket

from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import HOST_NS, VCLUSTER, Clusters, rc
from tests.procs import SyncerProcess

CONFIG = "examples/vcluster-matchlabels.yaml"  # selector environment=development
STOP_WITHIN = 10  # seconds: "SIGTERM or SIGINT stops cleanly with exit status 0 within 10 seconds" (behaviour.md 7)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _syncer(clusters: Clusters, *args: str) -> SyncerProcess:
    return SyncerProcess("--config", CONFIG, "--virtual-kubeconfig", str(clusters.virtual_kubeconfig),
                         "--host-kubeconfig", str(clusters.host_kubeconfig), "--vcluster-name", VCLUSTER,
                         "--host-namespace", HOST_NS, *args)


async def _killed(proc: SyncerProcess) -> None:
    if proc.proc is not None and proc.proc.returncode is None:
        await proc.stop("kill")


# ---------------------------------------------------------------------------------------------- stop, probe clients

async def test_sigterm_stops_within_10s_while_a_probe_client_leaves_its_request_unfinished(clusters: Clusters) -> None:
    # An in-cluster client (a scraper, a probe through a proxy) that sent a body shorter than its Content-Length:
    # aiohttp read on for the rest of it for 10 s (lingering_time) and the stop waited for that connection. The
    # request comes after SIGTERM (the port is served until the syncer has stopped: here its reconcile is held), so
    # that wait began after the signal.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    held = clusters.virtual_server.faults.hold(verb="create", resource="runtimeclasses", agent="runtimeclass-syncer/")
    port = _free_port()
    proc = await _syncer(clusters, "--health-probe-bind-address", f"127.0.0.1:{port}").start()
    writer: asyncio.StreamWriter | None = None
    try:
        await asyncio.wait_for(held.wait_hits(1), 20)  # the syncer's create of gvisor waits for its answer
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert proc.proc is not None
        proc.proc.terminate()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: syncer\r\nContent-Length: 100\r\n\r\nab")  # 98 bytes never come
        await writer.drain()
        assert (await reader.read(64)).startswith(b"HTTP/1.1 ")  # answered; aiohttp waits for the rest of the body
        held.release()  # the in-flight reconcile ends: the stop goes on at once
        code = await proc.stop("term", timeout=STOP_WITHIN + 20)
        took = loop.time() - began
        assert code == 0
        assert took < STOP_WITHIN, f"SIGTERM took {took:.1f} s to end the process"
    finally:
        held.release()
        if writer is not None:
            writer.close()
        await _killed(proc)
