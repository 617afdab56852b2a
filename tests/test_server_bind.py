"""The probe and metrics addresses as controller-runtime's `--health-probe-bind-address` takes them (Go's
`net.Listen("tcp", addr)`): `:PORT` listens on every IPv4 and IPv6 address, `[IPv6]:PORT` on that address, and an
address Go's `net.SplitHostPort` refuses is a command-line error. Real sockets and real HTTP, through
`ProbeServer` and through `runtimeclass-syncer run` as a process."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from syncer.metrics import Metrics
from syncer.server import ProbeServer, parse_bind_address

REPO = Path(__file__).resolve().parent.parent


def _ipv6_loopback() -> str | None:
    """Why this machine cannot serve on ::1, or None when it can."""
    if not socket.has_ipv6:
        return "Python was built without IPv6"
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError as e:
        return f"no IPv6 loopback on this machine ({e})"
    return None


NO_IPV6 = _ipv6_loopback()
needs_ipv6 = pytest.mark.skipif(NO_IPV6 is not None, reason=f"skipped: {NO_IPV6}")


class _Up:
    healthy = True
    ready = True
    metrics = Metrics()

    def readiness_detail(self) -> list[str]:
        return []


@contextlib.asynccontextmanager
async def _serving(addr: str) -> AsyncIterator[int]:
    server = ProbeServer(_Up(), addr, None)
    await server.start()
    try:
        yield server.ports["health"]
    finally:
        await server.stop()


async def _status(url: str) -> int | str:
    """The status of GET `url`, or the connection error's class name."""
    try:
        async with aiohttp.ClientSession() as http, http.get(url, timeout=aiohttp.ClientTimeout(total=5)) as r:
            return r.status
    except aiohttp.ClientConnectionError as e:
        return type(e).__name__


@needs_ipv6
@pytest.mark.parametrize("addr", [":0", "[::]:0", "0.0.0.0:0"])
async def test_a_wildcard_address_serves_ipv4_and_ipv6(addr: str) -> None:
    # Go's favoriteAddrFamily (net/ipsock_posix.go): listening on a wildcard address (no host, 0.0.0.0 or ::) with
    # network "tcp" takes a dual-stack IPv6 socket, so controller-runtime's :8081 answers on both families
    async with _serving(addr) as port:
        assert port != 0
        assert await _status(f"http://127.0.0.1:{port}/healthz") == 200
        assert await _status(f"http://[::1]:{port}/healthz") == 200


@needs_ipv6
async def test_a_bracketed_ipv6_literal_serves_that_address_only() -> None:
    async with _serving("[::1]:0") as port:
        assert await _status(f"http://[::1]:{port}/readyz") == 200
        assert await _status(f"http://127.0.0.1:{port}/readyz") == "ClientConnectorError"


async def test_an_ipv4_address_serves_ipv4() -> None:
    async with _serving("127.0.0.1:0") as port:
        assert await _status(f"http://127.0.0.1:{port}/healthz") == 200


@pytest.mark.parametrize("addr", ["::1:8081", "8081", ":http", ":65536", "[::1]8081", "[::1:8081", "a]:8081",
                                  "::0", ""])
def test_addresses_go_would_not_split_are_refused(addr: str) -> None:
    # net.SplitHostPort: "missing port in address", "too many colons in address" (an IPv6 literal without
    # brackets), "missing ']' in address", "unexpected ']' in address"; a port is 0 to 65535
    with pytest.raises(ValueError, match=r"invalid bind address .*: expected HOST:PORT, \[IPv6\]:PORT or :PORT"):
        parse_bind_address(addr)


def _free_dual_stack_port() -> int:
    if NO_IPV6 is not None:
        with socket.socket() as s:
            s.bind(("0.0.0.0", 0))
            return int(s.getsockname()[1])
    with socket.create_server(("::", 0), family=socket.AF_INET6, dualstack_ipv6=True) as s:
        return int(s.getsockname()[1])


async def test_run_serves_the_probes_on_both_families_with_a_bare_port(tmp_path: Path) -> None:
    # the deploy fragment's --health-probe-bind-address=:8081, with a kubeconfig that is not there yet: the process
    # waits for it (syncer/startup.py) and answers /healthz meanwhile, on IPv4 and on IPv6
    port = _free_dual_stack_port()
    missing = str(tmp_path / "not-yet.kubeconfig")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "syncer", "run", "--config", "examples/vcluster-matchlabels.yaml",
        "--virtual-kubeconfig", missing, "--host-kubeconfig", missing, "--vcluster-name", "t",
        "--host-namespace", "t", "--health-probe-bind-address", f":{port}", cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        urls = [f"http://127.0.0.1:{port}/healthz"] + ([] if NO_IPV6 else [f"http://[::1]:{port}/healthz"])
        deadline = asyncio.get_running_loop().time() + 30
        statuses: list[int | str] = []
        while asyncio.get_running_loop().time() < deadline:
            statuses = [await _status(u) for u in urls]
            if all(s == 200 for s in statuses) or proc.returncode is not None:
                break
            await asyncio.sleep(0.2)
        assert statuses == [200] * len(urls), statuses
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if NO_IPV6 is not None:
        print(f"IPv6 not checked: {NO_IPV6}")


@pytest.mark.parametrize("flag", ["--health-probe-bind-address", "--metrics-bind-address"])
async def test_run_refuses_a_bad_address_as_a_command_line_error(flag: str) -> None:
    # exit 2 for an invalid command line (syncer/cli.py; argparse's usage error), naming the flag, before anything
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "syncer", "run", "--config", "examples/vcluster-matchlabels.yaml",
        "--virtual-kubeconfig", "x", "--vcluster-name", "t", "--host-namespace", "t", flag, "::1:8081", cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2 and out == b""
    assert (f"error: argument {flag}: invalid bind address '::1:8081': expected HOST:PORT, [IPv6]:PORT or :PORT"
            in err.decode()), err.decode()
