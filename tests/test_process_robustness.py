"""The process under what others do to it: a probe client that never finishes its request, a clean stop while a
reconcile is in flight with another replica waiting for the Lease, and tenant text with line breaks in the log.

- SIGTERM or SIGINT stops cleanly with exit status 0 within 10 seconds (behaviour.md section 7), whatever a client of
  the probe/metrics port does: aiohttp's defaults (a 10 s wait for an unfinished request body, a 60 s wait for open
  connections) made it 10.6 s.
- On a clean stop the leader goes on renewing its Lease while its in-flight reconciles drain, and releases it once
  they stopped; a Lease lost meanwhile stops them at once (controller-runtime, pkg/manager/internal.go
  `engageStopProcedure`: leader election is cancelled only after the runnables stopped; `OnStoppedLeading` sets the
  graceful shutdown timeout to 0).
- A text log line is one record: a message's line breaks and other control characters are escaped, as klog quotes a
  value (Go's strconv.Quote), so a tenant's admission webhook denial relayed by the API server cannot forge a line.
"""

from __future__ import annotations

import asyncio
import socket
import sys

from syncer.kube.client import KubeClient
from syncer.kube.leader import LeaderElector
from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, rc
from tests.procs import REPO, SyncerProcess
from tests.test_leader import campaigning

CONFIG = "examples/vcluster-matchlabels.yaml"  # selector environment=development
STOP_WITHIN = 10  # seconds: "SIGTERM or SIGINT stops cleanly with exit status 0 within 10 seconds" (behaviour.md 7)
# a line as the text format writes it, here a forged record of another logger (syncer/kube/leader.py's error)
FORGED = "2026-01-01 00:00:00,000 ERROR   syncer.kube.leader: one lost the lease vc/lease; stopped writing"


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


# ---------------------------------------------------------------------------------------------- stop, leader election

def _renewals(clusters: Clusters, agent: str, since: int) -> int:
    """Writes of the Lease by the client whose user agent ends with `agent`, among the host's requests from `since`."""
    return sum(1 for method, path, ua in clusters.host_server.requests[since:]
               if method == "PUT" and "/leases/" in path and ua.endswith(agent))


async def test_a_stopping_leader_renews_its_lease_until_its_reconciles_drained_then_releases_it(
        clusters: Clusters) -> None:
    # Lease 3 s, renew deadline 2.5 s, retry 1 s (tests/test_leader.py `campaigning`); a clean stop gives an in-flight
    # reconcile up to 5 s (syncer/kube/controller.py), longer than the Lease: without renewals replica two took it
    # about 3 s into the drain while one's create was still on its way.
    other = await KubeClient.from_kubeconfig(str(clusters.host_kubeconfig), "host", user_agent="syncer (two)")
    two = LeaderElector(other, HOST_NS, "lease", "two", lease_duration=3, renew_deadline=2.5, retry_period=1)
    two_task: asyncio.Task[None] | None = None
    try:
        async with campaigning(clusters) as c:
            held = clusters.virtual_server.faults.hold(verb="create", resource="runtimeclasses", agent="(one)")
            try:
                await asyncio.wait_for(c.syncer.ready_event.wait(), 10)
                two_task = asyncio.create_task(two.run())  # a follower
                await clusters.host.create(RUNTIMECLASSES, rc("a"))
                await asyncio.wait_for(held.wait_hits(1), 10)  # one's reconcile of "a" waits for its create's answer
                since = len(clusters.host_server.requests)
                c.syncer_stop.set()  # SIGTERM: in-flight reconciles get their grace
                # four renewals a retry period (1 s) apart: the drain outlasted the 3 s Lease
                two_leads = asyncio.ensure_future(two.leading.wait())
                renewed = asyncio.ensure_future(eventually(lambda: _renewals(clusters, "(one)", since) >= 4,
                                                           "one renews its lease while it drains", 10))
                await asyncio.wait({two_leads, renewed}, return_when=asyncio.FIRST_COMPLETED)
                two_leads.cancel()
                assert not two.leading.is_set(), "replica two leads while replica one's reconcile is in flight"
                renewed.result()  # raises when one did not renew
                assert c.syncer.rc_queue.processing == 1 and not c.task.done()
            finally:
                held.release()
            # the create answered, the drain ends, one releases the Lease: two leads on its next attempt (1 s), not
            # after the Lease's 3 s
            await asyncio.wait_for(two.leading.wait(), 10)
            assert c.task.done() and c.syncer.rc_queue.processing == 0
            assert not c.syncer.lost_leadership
    finally:
        if two_task is not None:
            two_task.cancel()
            await asyncio.gather(two_task, return_exceptions=True)
        await other.close()


async def test_a_lease_lost_while_stopping_abandons_the_in_flight_reconciles_at_once(clusters: Clusters) -> None:
    # no writes after the Lease is lost, a clean stop's drain included (OnStoppedLeading: graceful shutdown 0)
    async with campaigning(clusters) as c:
        held = clusters.virtual_server.faults.hold(verb="create", resource="runtimeclasses", agent="(one)")
        try:
            await asyncio.wait_for(c.syncer.ready_event.wait(), 10)
            await clusters.host.create(RUNTIMECLASSES, rc("a"))
            await asyncio.wait_for(held.wait_hits(1), 10)
            c.syncer_stop.set()  # the drain begins (up to 5 s for the held create)
            clusters.host_server.faults.fail(500, resource="leases", times=10_000)  # renewals fail from now on
            await asyncio.wait_for(c.elector.lost.wait(), 10)  # renew deadline 2.5 s
            finished, _ = await asyncio.wait({c.task}, timeout=1.0)  # not wait_for: it would cancel the run
            assert finished == {c.task}, "the drain went on after the Lease was lost"
            assert c.syncer.lost_leadership and c.syncer.rc_queue.processing == 0
        finally:
            held.release()


# ---------------------------------------------------------------------------------------------- log lines

async def test_a_tenant_webhook_denial_cannot_forge_a_log_line(clusters: Clusters) -> None:
    # kube-apiserver relays an admission webhook's denial as the webhook wrote it (webhook status.message); the
    # tenant's webhook controls every byte of it, line breaks included
    denial = f'admission webhook "deny.tenant.example" denied the request: no\n{FORGED}\r\x1b[2K'
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    refused = clusters.virtual_server.faults.fail(400, verb="create", resource="runtimeclasses", message=denial)
    proc = await _syncer(clusters).start()
    try:
        line = await proc.wait_for_line("denied the request")
        await asyncio.wait_for(refused.wait_hits(1), 10)
        assert not any(text.startswith(FORGED) for text in proc.lines)
        assert r"denied the request: no\n" + FORGED + r"\r\x1b[2K" in line  # escaped, as strconv.Quote writes
        assert await proc.stop() == 0
        assert not any(text.startswith(FORGED) for text in proc.lines)
    finally:
        await _killed(proc)


async def test_a_traceback_keeps_its_lines_indented_so_none_starts_a_record() -> None:
    # a traceback's lines stay lines (readable), each indented by a tab as klog writes a multi-line value: the
    # exception's message, tenant text included, cannot start a line at the margin where records start
    code = ("import asyncio, logging; from syncer import logs; logs.setup()\n"
            "try:\n"
            f"    raise ValueError('denied: no\\n' + {FORGED!r} + '\\rx')\n"
            "except ValueError:\n"
            "    logging.getLogger('x').exception('reconcile failed')\n")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, cwd=REPO, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    first, *rest = err.decode().splitlines()
    assert first.endswith("ERROR   x: reconcile failed")
    assert rest[0] == "\tTraceback (most recent call last):"
    assert rest[-2:] == ["\tValueError: denied: no", f"\t{FORGED}\\rx"]
    assert all(text.startswith("\t") for text in rest)
