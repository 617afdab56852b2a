"""Signals as the kubelet and an operator send them to `runtimeclass-syncer run`, a real process: SIGTERM and
SIGINT stop it cleanly with status 0 (behaviour.md section 7) also while it is still starting, and SIGHUP reads its
policy and kubeconfig files again instead of ending it.

The kubelet sends SIGTERM to a sidecar that is still starting when its pod is deleted soon after it was created;
before `run`'s event loop handled signals (about a second of imports), that SIGTERM ended the process with status
143 and no log line (syncer.cli.EarlySignals).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from syncer.cli import EarlySignals, main
from syncer.kube.client import KubeClient
from syncer.kube.clock import FakeClock
from syncer.kube.resources import RUNTIMECLASSES
from syncer.metrics import Metrics
from syncer.startup import Startup, watch_kubeconfigs
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, rc
from tests.procs import REPO, SyncerProcess

CONFIG = "examples/vcluster-matchlabels.yaml"  # selector environment=development
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "runtimeclass-syncer")  # the image's entrypoint
LAUNCHERS = {"python -m syncer": [sys.executable, "-m", "syncer"], "console script": [CONSOLE_SCRIPT]}

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")


class Launched(SyncerProcess):
    """A SyncerProcess started with `command` (`python -m syncer` or the console script) instead of `-m syncer`."""

    def __init__(self, command: list[str], *args: str, env: dict[str, str] | None = None) -> None:
        super().__init__(*args, env=env)
        self.command = command

    async def start(self) -> Launched:
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, "run", *self.args, cwd=REPO, env=self.env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        self._reader = asyncio.create_task(self._read())
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def ended(self, timeout: float = 10) -> int:
        """The exit status, once the process ended on its own (within `timeout` seconds)."""
        assert self.proc is not None
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        assert self._reader is not None
        await self._reader
        return code

    def log(self) -> str:
        return "".join(self.lines)


def catches(pid: int, *signals: int) -> bool:
    """True when process `pid` has a handler for each of `signals` (SigCgt of /proc/<pid>/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return all(mask >> (sig - 1) & 1 for sig in signals)


async def handling_signals(proc: Launched) -> None:
    """Wait until the process handles SIGTERM and SIGHUP: the first moment it can (the interpreter has not run a
    line of the program before; SIGINT has Python's own handler from the start, so it tells nothing)."""
    await eventually(lambda: catches(proc.pid, signal.SIGTERM, signal.SIGHUP),
                     f"process {proc.pid} to handle SIGTERM and SIGHUP", timeout=20)


def run_args(c: Clusters, *extra: str) -> list[str]:
    return ["--config", CONFIG, "--virtual-kubeconfig", str(c.virtual_kubeconfig), "--host-kubeconfig",
            str(c.host_kubeconfig), "--vcluster-name", VCLUSTER, "--host-namespace", HOST_NS, *extra]


def syncer_requests(c: Clusters) -> list[tuple[str, str, str]]:
    return [r for r in c.host_server.requests + c.virtual_server.requests if r[2].startswith("runtimeclass-syncer")]


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_stop_as_soon_as_the_process_can_handle_it_is_clean(clusters: Clusters, launcher: str,
                                                                     sig: signal.Signals) -> None:
    proc = await Launched(LAUNCHERS[launcher], *run_args(clusters)).start()
    try:
        await handling_signals(proc)
        os.kill(proc.pid, sig)
        assert await proc.ended() == 0, proc.log()
    finally:
        await proc.stop("kill")
    log = proc.log()
    assert f"syncer: {sig.name} received while starting; stopping\n" in log, log
    assert log.endswith("syncer: stopped\n"), log
    assert "Traceback" not in log and "runtimeclass-syncer 0.1.0: vcluster" not in log, log  # no syncer started
    assert syncer_requests(clusters) == []  # nothing read


async def test_sigterm_in_the_middle_of_the_imports_is_a_clean_stop(clusters: Clusters) -> None:
    # PYTHONPROFILEIMPORTTIME: a line on stderr as each module is imported; the first of aiohttp comes from the
    # imports of `run` (syncer.kube.client), with some hundred modules still to import
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = await Launched(LAUNCHERS["python -m syncer"], *run_args(clusters), env=env).start()
    try:
        await proc.wait_for_line(" aiohttp.")  # "import time: <us> | <us> |   aiohttp.hdrs"
        os.kill(proc.pid, signal.SIGTERM)
        assert await proc.ended() == 0, proc.log()
    finally:
        await proc.stop("kill")
    log = proc.log()
    assert "syncer: SIGTERM received while starting; stopping\n" in log, log
    assert log.endswith("syncer: stopped\n"), log
    assert syncer_requests(clusters) == []


async def test_sighup_while_starting_is_logged_and_the_syncer_goes_on(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    proc = await Launched(LAUNCHERS["console script"], *run_args(clusters)).start()
    try:
        await handling_signals(proc)
        os.kill(proc.pid, signal.SIGHUP)
        line = await proc.wait_for_line("SIGHUP received")
        assert line.endswith(
            f"syncer: SIGHUP received while starting: reading the virtual kubeconfig {clusters.virtual_kubeconfig} "
            f"and the host kubeconfig {clusters.host_kubeconfig} again now (--config {CONFIG} is read only at start: "
            "a restart applies it)\n"), line
        await proc.wait_for_line("first reconcile done; ready")
    finally:
        code = await proc.stop()
    assert code == 0, proc.log()


async def test_sighup_reads_the_policy_again_and_sigterm_then_stops(clusters: Clusters, tmp_path: Path) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    # the policy file is a symlink to a file in a folder the watch does not cover: a write there raises no event,
    # only SIGHUP has it read (a swap of the symlink itself is seen)
    watched, outside = tmp_path / "watched", tmp_path / "outside"
    watched.mkdir()
    outside.mkdir()
    (outside / "first.yaml").write_text("requireRuntimeClassName: true\n")
    (outside / "second.yaml").write_text("defaultRuntimeClassName: gvisor\n")
    policy = watched / "policy.yaml"
    policy.symlink_to(outside / "first.yaml")
    proc = await Launched(LAUNCHERS["python -m syncer"], *run_args(clusters, "--policy", str(policy))).start()

    def reloads() -> int:
        return sum(f"policy {policy} reloaded" in line for line in proc.lines)
    try:
        await proc.wait_for_line("first reconcile done; ready")
        (watched / "swap").symlink_to(outside / "second.yaml")
        os.replace(watched / "swap", policy)
        await eventually(lambda: reloads() == 1, "the watch to apply the swapped symlink (it is up)")
        (outside / "second.yaml").write_text("defaultRuntimeClassName: gvisor\nrequireRuntimeClassName: true\n")
        os.kill(proc.pid, signal.SIGHUP)
        line = await proc.wait_for_line("SIGHUP received")
        assert line.endswith(
            f"syncer: SIGHUP received: reading the virtual kubeconfig {clusters.virtual_kubeconfig}, the host "
            f"kubeconfig {clusters.host_kubeconfig} and the policy {policy} again now (--config {CONFIG} is read "
            "only at start: a restart applies it)\n"), line
        await eventually(lambda: reloads() == 2, "SIGHUP to have the policy read again and applied")
        assert proc.proc is not None and proc.proc.returncode is None
        os.kill(proc.pid, signal.SIGTERM)
        assert await proc.ended() == 0, proc.log()
    finally:
        await proc.stop("kill")
    log = proc.log()
    assert "syncer: SIGTERM received; stopping\n" in log and log.endswith("syncer: stopped\n"), log


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(f"apiVersion: v1\nkind: Config\nclusters: [{{name: v, cluster: {{server: '{server}'}}}}]\n"
                    "users: [{name: v, user: {token: x}}]\ncontexts: [{name: v, context: {cluster: v, user: v}}]\n"
                    "current-context: v\n")
    return path


async def test_a_wake_reads_the_kubeconfigs_again_at_once(tmp_path: Path) -> None:
    # what SIGHUP sets (syncer.cli._handle_signals), on a clock that never moves: only the wake can end the waits
    clock, stop, wake = FakeClock(), asyncio.Event(), asyncio.Event()
    path = tmp_path / "admin.conf"

    async def load() -> KubeClient:
        return await KubeClient.from_kubeconfig(str(path), "virtual")

    waiting = asyncio.create_task(Startup(Metrics(), clock).clients({"virtual": load}, stop, wake=wake))
    await eventually(lambda: bool(clock.pending()), "the wait for the missing file")
    kubeconfig(path, "http://127.0.0.1:1")
    wake.set()
    clients = await asyncio.wait_for(waiting, 5)
    assert clients is not None and not wake.is_set()
    halt = asyncio.Event()
    watch = asyncio.create_task(watch_kubeconfigs(clients, halt, clock, wake=wake))
    try:
        await eventually(lambda: bool(clock.pending()), "the watch's timer")
        kubeconfig(path, "http://127.0.0.1:2")
        wake.set()
        await asyncio.wait_for(halt.wait(), 5)  # the changed file is taken up: the syncer starts again with it
    finally:
        watch.cancel()
        await clients["virtual"].close()


def test_other_commands_keep_the_usual_signal_handling() -> None:
    # a shell's background job starts with SIGINT ignored (so would a CI runner's), which release() rightly puts
    # back; the test sets the default handler, which an interactive `validate` has, and restores the one it found
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        assert main(["validate", "--config", str(REPO / CONFIG)]) == 0
        assert {sig: signal.getsignal(sig) for sig in before} == before
        early = EarlySignals.catch()  # what `main` does first; a signal noted is raised again for them
        try:
            signal.raise_signal(signal.SIGINT)
            assert early.received == [signal.SIGINT]
        finally:
            with pytest.raises(KeyboardInterrupt):
                early.release(deliver=True)
        assert {sig: signal.getsignal(sig) for sig in before} == before
    finally:
        signal.signal(signal.SIGINT, found)
