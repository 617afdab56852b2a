"""Health, readiness and metrics over HTTP (aiohttp), as controller-runtime's manager serves them.

`/healthz` is 200 while the syncer's loops run; `/readyz` is 200 once both clusters' caches are synced
and the first full reconcile is done, else 503 with the reasons, one per line; `/metrics` is Prometheus
text from the syncer's own registry. What they report comes from a `Probed` object: the running syncer, or
the process while it still waits for its clusters' configurations (syncer/startup.py), so the probes answer
from the first second on.
"""

from __future__ import annotations

import errno
import socket
from typing import Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from syncer.metrics import Metrics


class Probed(Protocol):
    """What the probes ask (syncer.manager.Syncer, syncer.startup.Startup)."""

    @property
    def healthy(self) -> bool:
        """/healthz: 200 when true."""

    @property
    def ready(self) -> bool:
        """/readyz: 200 when true."""

    @property
    def metrics(self) -> Metrics:
        """/metrics: this registry."""

    def readiness_detail(self) -> list[str]:
        """/readyz when not ready: the reasons, one per line."""


# How long a stop waits for the connections still open (aiohttp's BaseRunner `shutdown_timeout`, 60 s by default,
# counted twice per connection: for its handler to finish, then for its task once the handler is cancelled), and how
# long a response waits for the rest of a request body the client never finishes (aiohttp's RequestHandler
# `lingering_time`, 10 s by default, which that stop waited out too). Every handler here answers at once, so half a
# second each is plenty, and a client that leaves a request unfinished no longer holds the stop (SIGTERM or SIGINT
# stops the process within 10 s, behaviour.md section 7; the syncer's own drain and lease release take up to 8 s).
SHUTDOWN_SECONDS = 0.5
LINGER_SECONDS = 0.5

# The hosts that mean every address (Go's net.Listen: an empty host, 0.0.0.0 and :: are all wildcards).
_WILDCARDS = ("", "0.0.0.0", "::")


def parse_bind_address(addr: str) -> tuple[str | None, int]:
    """`host:port`, `[ipv6]:port` or `:port` -> (host, port); the host is None for every address of every family.

    As controller-runtime's `--health-probe-bind-address` (Go's `net.Listen("tcp", addr)`): the address is split
    as `net.SplitHostPort` splits it (an IPv6 literal in brackets; a host with a colon outside brackets is refused),
    and a wildcard host (empty, `0.0.0.0`, `::`) listens on IPv4 and IPv6 alike (Go's `favoriteAddrFamily`: a
    dual-stack socket for a wildcard listen).

    Raises:
        ValueError: not of that form, or the port is not a number from 0 to 65535.
    """
    host, sep, port = addr.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    if (not sep or not (port.isascii() and port.isdigit()) or int(port) > 65535 or "[" in host or "]" in host
            or (":" in host and not bracketed)):
        raise ValueError(f"invalid bind address {addr!r}: expected HOST:PORT, [IPv6]:PORT or :PORT "
                         "(e.g. :8081, 127.0.0.1:8081, [::1]:8081)")
    return (None if host in _WILDCARDS else host), int(port)


def _wildcard_site(runner: web.AppRunner, port: int) -> web.BaseSite:
    """A site on every address: one dual-stack IPv6 socket (IPv4 arrives mapped), as Go listens; IPv4 alone on a
    machine without IPv6."""
    if socket.has_dualstack_ipv6():
        try:
            sock = socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True)
        except OSError as e:
            if e.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):  # IPv6 turned off: IPv4 below
                raise
        else:
            return web.SockSite(runner, sock)
    return web.TCPSite(runner, "0.0.0.0", port)


class ProbeServer:
    """Serves the probes and/or metrics of one syncer on the given addresses (same site if equal)."""

    def __init__(self, syncer: Probed, health_addr: str | None, metrics_addr: str | None) -> None:
        self.syncer = syncer
        self.health_addr = health_addr
        self.metrics_addr = metrics_addr
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}

    async def _healthz(self, _: web.Request) -> web.Response:
        if self.syncer.healthy:
            return web.Response(text="ok")
        return web.Response(status=503, text="syncer loops are not running\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        if self.syncer.ready:
            return web.Response(text="ok")
        return web.Response(status=503, text="\n".join(self.syncer.readiness_detail()) + "\n")

    async def _metrics(self, _: web.Request) -> web.Response:
        body = generate_latest(self.syncer.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        """Bind the addresses. Raises OSError when a port is taken, ValueError on a bad address."""
        sites: dict[str, list[tuple[str, web.RouteDef]]] = {}
        if self.health_addr:
            sites.setdefault(self.health_addr, []).extend(
                [("health", web.get("/healthz", self._healthz)), ("health", web.get("/readyz", self._readyz))])
        if self.metrics_addr:
            sites.setdefault(self.metrics_addr, []).append(("metrics", web.get("/metrics", self._metrics)))
        for addr, routes in sites.items():
            host, port = parse_bind_address(addr)
            app = web.Application()
            app.add_routes([r for _, r in routes])
            runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_SECONDS,
                                   lingering_time=LINGER_SECONDS)
            await runner.setup()
            site = _wildcard_site(runner, port) if host is None else web.TCPSite(runner, host, port)
            await site.start()
            self._runners.append(runner)
            bound = site._server.sockets[0].getsockname()[1] if site._server else port  # type: ignore[attr-defined]
            for kind, _ in routes:
                self.ports[kind] = bound

    async def stop(self) -> None:
        """Close the listeners, then the connections: within 2 x `SHUTDOWN_SECONDS` (1 s) whatever a client does."""
        for r in self._runners:
            await r.cleanup()
        self._runners.clear()
