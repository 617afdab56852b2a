"""What every benchmark needs: the API servers' process, the syncer and floor processes, their CPU and
memory read from /proc, and observers that see objects appear and vanish (list, then watch).

Times are seconds (wall clock from `time.perf_counter`), CPU is user + system seconds of one process,
memory is resident bytes. Linux only (/proc).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import aiohttp

from bench.names import HOST_NAMESPACE, VCLUSTER

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "bench" / "vcluster.yaml"
PATCHED_CONFIG = ROOT / "bench" / "vcluster-patches.yaml"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid: int) -> int:
    """Resident memory of process `pid` in bytes."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


@dataclass
class Servers:
    """The running API servers' process: base URLs and kubeconfig paths."""

    proc: asyncio.subprocess.Process
    host: str
    virtual: str
    workdir: Path

    @property
    def host_kubeconfig(self) -> Path:
        return self.workdir / "host.kubeconfig"

    @property
    def virtual_kubeconfig(self) -> Path:
        return self.workdir / "virtual.kubeconfig"


@contextlib.asynccontextmanager
async def servers(workdir: Path, classes: int = 0, pods: int = 0, latency: int = 0) -> AsyncIterator[Servers]:
    """Start `bench.servers` seeded with `classes` host RuntimeClasses and `pods` virtual pods (and the
    objects of `latency` changes of each kind)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.servers", "--workdir", str(workdir), "--classes", str(classes), "--pods",
        str(pods), "--latency", str(latency), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stdin is not None
    line = await proc.stdout.readline()
    if not line:
        raise RuntimeError("the benchmark API servers did not start")
    info = json.loads(line)
    try:
        yield Servers(proc, info["host"], info["virtual"], workdir)
    finally:
        proc.stdin.close()
        await proc.wait()


@dataclass
class Process:
    """A measured child process (the syncer or the floor) and when it was started."""

    proc: subprocess.Popen[bytes]
    started: float
    log: IO[bytes] | None = None

    @property
    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    @property
    def rss(self) -> int:
        return rss_bytes(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=30)
        if self.log is not None:
            self.log.close()


def start_syncer(s: Servers, *, config: Path = CONFIG, probe_port: int = 0, extra: tuple[str, ...] = (),
                 command: tuple[str, ...] = ()) -> Process:
    """Start `runtimeclass-syncer run` as a user would (default log level, logs to a file). `command`: the
    program to run instead of this checkout's `python -m syncer` (e.g. an installed `runtimeclass-syncer`)."""
    log = (s.workdir / "syncer.log").open("ab")
    args = [*(command or (sys.executable, "-m", "syncer")), "run", "--config", str(config), "--virtual-kubeconfig",
            str(s.virtual_kubeconfig), "--host-kubeconfig", str(s.host_kubeconfig), "--vcluster-name", VCLUSTER,
            "--host-namespace", HOST_NAMESPACE, *extra]
    if probe_port:
        args += ["--health-probe-bind-address", f"127.0.0.1:{probe_port}"]
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=log, stderr=log, cwd=ROOT)
    profile = os.environ.get("BENCH_PROFILE")  # a file: py-spy samples the syncer (on-CPU only) into it
    if profile:
        subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw", "-r", "200",
                          "-o", profile, "--pid", str(proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Process(proc, started, log)


def start_floor(s: Servers, script: str = "bench.floor") -> Process:
    """Start a floor script (the initial sync's by default); its standard output is a pipe (`announced`)."""
    started = time.perf_counter()
    return Process(subprocess.Popen([sys.executable, "-m", script, "--host", s.host, "--virtual", s.virtual],
                                    cwd=ROOT, stdout=subprocess.PIPE), started)


async def announced(proc: Process, line: bytes) -> None:
    """Wait until the process prints `line` (a floor script telling that its watches are open).

    Raises:
        RuntimeError: the process ended first."""
    assert proc.proc.stdout is not None
    while (got := await asyncio.to_thread(proc.proc.stdout.readline)) != line + b"\n":
        if not got:
            raise RuntimeError(f"{proc.proc.args!r} ended before printing {line!r}")


@dataclass
class Observer:
    """Keeps the current objects of one collection (list, then watch) and wakes waiters on every change.

    `seen` maps name -> (object, perf_counter time it was last seen changing); `gone` maps name -> time
    it vanished."""

    session: aiohttp.ClientSession
    url: str
    changed: asyncio.Condition  # shared by the observers of one block: any change wakes every waiter
    seen: dict[str, Obj] = field(default_factory=dict)
    changed_at: dict[str, float] = field(default_factory=dict)
    gone: dict[str, float] = field(default_factory=dict)
    listeners: list[Callable[[str, str, Obj, float], None]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        async with self.session.get(self.url) as resp:
            data = json.loads(await resp.read())
        now = time.perf_counter()
        for obj in data["items"]:
            self.seen[obj["metadata"]["name"]] = obj
            self.changed_at[obj["metadata"]["name"]] = now
        self._task = asyncio.create_task(self._watch(data["metadata"]["resourceVersion"]))

    async def _watch(self, rv: str) -> None:
        sep = "&" if "?" in self.url else "?"
        async with self.session.get(f"{self.url}{sep}watch=true&resourceVersion={rv}&timeoutSeconds=3600",
                                    timeout=aiohttp.ClientTimeout(total=None)) as resp:
            async for line in resp.content:
                if not line.strip():
                    continue
                ev = json.loads(line)
                obj, now = ev["object"], time.perf_counter()
                name = obj["metadata"]["name"]
                if ev["type"] == "DELETED":
                    self.seen.pop(name, None)
                    self.gone[name] = now
                elif ev["type"] in ("ADDED", "MODIFIED"):
                    self.seen[name] = obj
                    self.changed_at[name] = now
                    self.gone.pop(name, None)
                else:
                    continue
                for listener in self.listeners:
                    listener(ev["type"], name, obj, now)
                async with self.changed:
                    self.changed.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 600.0) -> float:
        """Wait until `predicate()` holds; returns the perf_counter time it first held."""
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(predicate)
        return time.perf_counter()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                await self._task


@contextlib.asynccontextmanager
async def observers(*urls: str) -> AsyncIterator[list[Observer]]:
    """Observers of each collection URL, started (listed) before the block and stopped after it."""
    async with aiohttp.ClientSession(headers={"User-Agent": "bench-observer"}) as session:
        changed = asyncio.Condition()
        obs = [Observer(session, url, changed) for url in urls]
        for o in obs:
            await o.start()
        try:
            yield obs
        finally:
            for o in obs:
                await o.stop()


async def wait_ready(port: int, proc: Process, timeout: float = 600.0) -> float:
    """Wait until the syncer's `/readyz` answers 200 (the only polled thing here: a probe is polled by
    design, as a kubelet does). Returns the perf_counter time."""
    deadline = time.perf_counter() + timeout
    async with aiohttp.ClientSession() as session:
        while time.perf_counter() < deadline:
            if proc.proc.poll() is not None:
                raise RuntimeError(f"the syncer exited with {proc.proc.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{port}/readyz") as resp:
                    if resp.status == 200:
                        return time.perf_counter()
            await asyncio.sleep(0.02)
    raise TimeoutError("the syncer did not become ready")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
