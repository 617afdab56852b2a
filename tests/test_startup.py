"""Start-up that waits instead of crashing (issue 23 item 2), as the sidecar meets it in a vcluster pod.

vcluster writes the virtual cluster's kubeconfig (`/data/vcluster/admin.conf`) as root with mode 0600, after
the pod's containers have started; the sidecar runs as uid 65532 (the image's user). A sidecar that exited
crash-looped and made the vcluster pod unready. Each test runs `runtimeclass-syncer run` as a real process,
asks its probes over HTTP as the kubelet would, and talks to the embedded API servers; the process must stay
up with `/healthz` 200, say in `/readyz` and in its log what it waits for, and sync once it can.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import itertools
import logging
import os
import shutil
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from kubesim.apiserver import EmbeddedAPIServer
from syncer.kube.client import KubeClient, KubeconfigError
from syncer.kube.clock import FakeClock
from syncer.kube.resources import RUNTIMECLASSES
from syncer.kube.wait import wait_for
from syncer.metrics import Metrics
from syncer.startup import Startup
from tests.conftest import HOST_NS, Clusters, eventually, rc, virtual_rc_names
from tests.procs import REPO, SyncerProcess
from tests.test_cli import free_port, run_cli

SIDECAR_UID = 65532  # the Dockerfile's USER, and the chart fragment's runAsNonRoot user
CONFIG = "examples/vcluster-matchlabels.yaml"  # selector environment=development
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # where the kubelet mounts it


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder every user can traverse (pytest's own tmp_path is private to root), as /data is in the pod."""
    path = Path(tempfile.mkdtemp(prefix="rcs-startup-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def host_class() -> dict[str, object]:
    return rc("gvisor", labels={"environment": "development"})


def run_args(clusters: Clusters, virtual_kubeconfig: Path, health: int, *extra: str) -> list[str]:
    return ["--config", CONFIG, "--virtual-kubeconfig", str(virtual_kubeconfig), "--vcluster-name", "t",
            "--host-namespace", HOST_NS, "--health-probe-bind-address", f"127.0.0.1:{health}", *extra]


async def probe_until(health: int, done: Callable[[int, str, int], bool], what: str,
                      timeout: float = 30.0) -> tuple[int, str, int]:
    """Ask /readyz and /healthz, every 0.2 s as a kubelet's probes would, until `done(readyz status, readyz body,
    healthz status)`; returns those. Raises AssertionError with the last answers after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: tuple[int, str, int] = (0, "no answer yet", 0)
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(f"http://127.0.0.1:{health}/readyz") as r:
                    ready, text = r.status, await r.text()
                async with http.get(f"http://127.0.0.1:{health}/healthz") as r:
                    last = (ready, text, r.status)
                if done(*last):
                    return last
            except aiohttp.ClientConnectionError as e:  # not listening yet
                last = (0, str(e), 0)
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}; last /readyz {last[0]} "
                                     f"{last[1]!r}, /healthz {last[2]}")
            await asyncio.sleep(0.2)


def waiting(health_text: str) -> Callable[[int, str, int], bool]:
    """/readyz 503 whose body contains `health_text`."""
    return lambda ready, text, _: ready == 503 and health_text in text


def kubelet_write(folder: Path, files: dict[str, str]) -> None:
    """Update a Secret volume as the kubelet does (kubernetes pkg/volume/util/atomic_writer.go, AtomicWriter.Write):
    the files go to a new timestamped folder, a `..data_tmp` symlink to it is renamed over `..data`, each file
    is a symlink `<name> -> ..data/<name>`, and the previous timestamped folder is removed."""
    folder.mkdir(exist_ok=True)
    stamp = folder / f"..{time.strftime('%Y_%m_%d_%H_%M_%S', time.gmtime())}.{time.time_ns() % 10 ** 9:09d}"
    stamp.mkdir()
    for name, text in files.items():
        (stamp / name).write_text(text)
    data = folder / "..data"
    old = data.resolve() if data.is_symlink() else None
    (folder / "..data_tmp").symlink_to(stamp.name)
    os.replace(folder / "..data_tmp", data)
    for name in files:
        if not (folder / name).is_symlink():
            (folder / name).symlink_to(f"..data/{name}")
    if old is not None:
        shutil.rmtree(old)


def has_service_account() -> bool:
    """True when this machine is a pod with a service account mounted."""
    return Path(SERVICE_ACCOUNT_TOKEN).exists()


def ready(status: int, _: str, __: int) -> bool:
    return status == 200


def sidecar_python(home: Path) -> tuple[str, dict[str, str]] | str:
    """An interpreter the sidecar's uid can run this checkout with, and its environment; or why there is none.

    This interpreter first. Where it lives in a folder the uid may not enter (a pyenv build under /root), an
    interpreter of the same version from the system's folders, given this environment's packages through
    PYTHONPATH (the checkout itself is the working directory of `python -m syncer`)."""
    if os.geteuid() != 0:
        return f"starting a process as uid {SIDECAR_UID} needs root (running as uid {os.geteuid()})"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONNOUSERSITE": "1"}
    candidates = [(sys.executable, base)] + [
        (path, {**base, "PYTHONPATH": os.pathsep.join(site.getsitepackages())})
        for folder in ("/usr/local/bin", "/usr/bin") if os.access(path := f"{folder}/{version}", os.X_OK)]
    tried = []
    for python, env in candidates:
        try:
            probe = subprocess.run([python, "-c", "import syncer.cli, aiohttp, kubernetes_asyncio"], cwd=REPO,
                                   user=SIDECAR_UID, group=SIDECAR_UID, extra_groups=[], env=env,
                                   capture_output=True, text=True, timeout=60)
        except OSError as e:
            tried.append(f"{python}: {e}")
            continue
        if probe.returncode == 0:
            return python, env
        tried.append(f"{python}: {probe.stderr.strip()[-200:]}")
    return f"uid {SIDECAR_UID} cannot run this checkout with any {version} found: " + "; ".join(tried)


async def test_a_kubeconfig_the_sidecar_cannot_read_is_waited_for_and_used_once_readable(
        clusters: Clusters, shared_dir: Path) -> None:
    found = sidecar_python(shared_dir)
    if isinstance(found, str):
        pytest.skip(found)
    python, env = found
    await clusters.host.create(RUNTIMECLASSES, host_class())
    # as vcluster leaves it: root-owned, 0600, in a folder the sidecar can enter but not list
    admin = clusters.virtual_server.write_kubeconfig(shared_dir / "vcluster" / "admin.conf")
    admin.parent.chmod(0o711)
    os.chown(admin, 0, 0)
    admin.chmod(0o600)
    host = shared_dir / "host.kubeconfig"
    host.write_text(clusters.host_kubeconfig.read_text())  # mode 0644 (umask 022)
    health = free_port()
    proc = await SyncerProcess(*run_args(clusters, admin, health, "--host-kubeconfig", str(host)), user=SIDECAR_UID,
                               env=env, python=python).start()
    try:
        reason = f"waiting for the virtual kubeconfig {admin}: [Errno 13] Permission denied"
        status, text, healthz = await probe_until(health, waiting(reason), "/readyz to name the unreadable file")
        assert (status, text, healthz) == (503, reason + "\n", 200)  # alive: the kubelet leaves it (and the pod) be
        await proc.wait_for_line(reason)
        assert proc.proc is not None and proc.proc.returncode is None
        admin.chmod(0o644)  # the pod is fixed (or vcluster rewrites it readable)
        await virtual_rc_names(clusters, lambda names: names == {"gvisor"}, "gvisor synced once the file is readable")
        assert await probe_until(health, ready, "/readyz 200 after the first reconcile") == (200, "ok", 200)
        await proc.wait_for_line(f"the virtual kubeconfig {admin} can be used now")
        assert await proc.stop() == 0
    finally:
        await proc.stop("kill")
    assert sum(reason in line for line in proc.lines) == 1, proc.lines  # once per reason, not per retry


async def test_a_missing_then_empty_kubeconfig_is_waited_for_until_written(
        clusters: Clusters, shared_dir: Path) -> None:
    await clusters.host.create(RUNTIMECLASSES, host_class())
    admin, health = shared_dir / "vcluster" / "admin.conf", free_port()
    proc = await SyncerProcess(*run_args(clusters, admin, health, "--host-kubeconfig",
                                         str(clusters.host_kubeconfig))).start()
    try:
        missing = f"waiting for the virtual kubeconfig {admin}: no such file"
        assert await probe_until(health, waiting(missing), "/readyz to name the missing file") == (
            503, missing + "\n", 200)
        admin.parent.mkdir()
        admin.write_text("")  # created, not yet written
        empty = f"waiting for the virtual kubeconfig {admin}: not a kubeconfig: the file is empty"
        assert await probe_until(health, waiting(empty), "/readyz to say the file is empty") == (
            503, empty + "\n", 200)
        await proc.wait_for_line(missing)
        await proc.wait_for_line(empty)
        written = clusters.virtual_server.write_kubeconfig(shared_dir / "new.conf")
        written.rename(admin)  # as a writer that renames a finished file into place
        await virtual_rc_names(clusters, lambda names: names == {"gvisor"}, "gvisor synced once the file is there")
        assert (await probe_until(health, ready, "/readyz 200"))[0] == 200
        assert await proc.stop() == 0
    finally:
        await proc.stop("kill")


async def test_a_changed_kubeconfig_in_a_secret_volume_starts_the_syncer_again_with_it(
        clusters: Clusters, tmp_path: Path) -> None:
    await clusters.host.create(RUNTIMECLASSES, host_class())
    volume, health = tmp_path / "kubeconfig", free_port()
    admin = volume / "admin.conf"
    kubelet_write(volume, {"admin.conf": clusters.virtual_server.write_kubeconfig(tmp_path / "a.conf").read_text()})
    proc = await SyncerProcess(*run_args(clusters, admin, health, "--host-kubeconfig",
                                         str(clusters.host_kubeconfig))).start()
    async with EmbeddedAPIServer("other", runtime_class_admission=False, bookmark_interval=0.5) as other_server:
        other = await KubeClient.from_kubeconfig(str(other_server.write_kubeconfig(tmp_path / "b.conf")), "virtual")
        try:
            await virtual_rc_names(clusters, lambda names: names == {"gvisor"}, "gvisor synced through the symlinks")
            assert (await probe_until(health, ready, "/readyz 200"))[0] == 200
            # a Secret update that is not a kubeconfig: logged, and the clients in use are kept
            kubelet_write(volume, {"admin.conf": "not: [a kubeconfig"})
            await proc.wait_for_line(f"waiting for the virtual kubeconfig {admin} to be usable again: not a "
                                     "kubeconfig: YAML error at line 1, column 19")
            await clusters.host.create(RUNTIMECLASSES, rc("kata", labels={"environment": "development"}))
            await virtual_rc_names(clusters, lambda names: names == {"gvisor", "kata"}, "kata synced meanwhile")
            # a kubeconfig for another API server (as a rotated certificate or token would be): used from now on
            kubelet_write(volume, {"admin.conf": (tmp_path / "b.conf").read_text()})
            await proc.wait_for_line(f"the virtual kubeconfig {admin} changed; starting the syncer again with it")
            await wait_for(other, RUNTIMECLASSES, lambda objs: set(objs) == {"gvisor", "kata"}, timeout=15,
                           what="both classes synced into the server the new kubeconfig names")
            assert await probe_until(health, ready, "/readyz 200 with the new clients") == (200, "ok", 200)
            assert await proc.stop() == 0
        finally:
            await other.close()
            await proc.stop("kill")


async def test_api_servers_down_at_start_are_waited_for(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, host_class())
    await clusters.host_server.stop()
    await clusters.virtual_server.stop()
    health = free_port()
    proc = await SyncerProcess(*run_args(clusters, clusters.virtual_kubeconfig, health, "--host-kubeconfig",
                                         str(clusters.host_kubeconfig))).start()
    try:
        both = ("cache host/runtimeclasses.node.k8s.io not synced: list runtimeclasses.node.k8s.io on the host "
                "cluster: ", "cache virtual/pods not synced: list pods on the virtual cluster: ")
        _, text, healthz = await probe_until(health, lambda s, t, _: s == 503 and all(w in t for w in both),
                                             "/readyz to name both unreachable API servers")
        assert healthz == 200 and "(HTTP no response, ConnectionError)" in text, text
        await clusters.host_server.start()
        await clusters.virtual_server.start()
        await virtual_rc_names(clusters, lambda names: names == {"gvisor"}, "gvisor synced once both are up")
        assert (await probe_until(health, ready, "/readyz 200"))[0] == 200
        assert await proc.stop() == 0
    finally:
        if clusters.host_server._runner is None:
            await clusters.host_server.start()
        if clusters.virtual_server._runner is None:
            await clusters.virtual_server.start()
        await proc.stop("kill")


async def test_missing_service_account_files_are_waited_for_and_sigterm_exits_0(clusters: Clusters,
                                                                                 tmp_path: Path) -> None:
    if has_service_account():
        pytest.skip(f"this machine is a pod with a service account ({SERVICE_ACCOUNT_TOKEN} exists)")
    health = free_port()
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    proc = await SyncerProcess(*run_args(clusters, clusters.virtual_kubeconfig, health), env=env).start()
    try:
        reason = f"waiting for the host cluster's service account: {SERVICE_ACCOUNT_TOKEN}: no such file"
        assert await probe_until(health, waiting(reason), "/readyz to name the token file") == (
            503, reason + "\n", 200)
        await proc.wait_for_line(reason)
        started = time.monotonic()
        assert await proc.stop() == 0
        assert time.monotonic() - started < 5, "SIGTERM while waiting ends the process at once"
        assert any("stopped while waiting for the cluster configurations" in line for line in proc.lines)
    finally:
        await proc.stop("kill")


async def test_what_waiting_cannot_fix_still_exits_2_before_anything(clusters: Clusters, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE_")}
    missing = str(tmp_path / "admin.conf")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "syncer", "run", "--config", CONFIG, "--virtual-kubeconfig", missing,
        "--vcluster-name", "t", "--host-namespace", HOST_NS, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert err.decode().startswith("error: no --host-kubeconfig, and not in a pod (KUBERNETES_SERVICE_HOST and "
                                   "KUBERNETES_SERVICE_PORT are not set)"), err.decode()
    code, _, err_text = await run_cli(
        "run", "--config", CONFIG, "--virtual-kubeconfig", missing, "--host-kubeconfig", missing,
        "--vcluster-name", "t", "--host-namespace", HOST_NS, "--leader-elect", "--lease-duration", "5",
        "--renew-deadline", "10")
    assert code == 2
    assert "error: invalid leader election timing: lease_duration must be greater than renew_deadline" in err_text


async def test_the_wait_logs_each_reason_once_and_backs_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="syncer")
    path = tmp_path / "admin.conf"
    loads: list[float] = []
    clock = FakeClock()

    async def load() -> KubeClient:
        loads.append(clock.now())
        return await KubeClient.from_kubeconfig(str(path), "virtual")

    startup = Startup(Metrics(), clock)
    stop = asyncio.Event()
    task = asyncio.create_task(startup.clients({"virtual": load}, stop))

    async def retry() -> None:
        """Move the clock to the backoff timer and wait for the load it starts."""
        await eventually(lambda: bool(clock.pending()), "the wait to set its backoff timer")
        before = len(loads)
        clock.advance(clock.pending()[0] - clock.now())
        await eventually(lambda: len(loads) > before, "the next attempt")

    for _ in range(4):
        await retry()
    path.write_text("clusters: [")  # cut short: a second reason
    for _ in range(6):  # past 30 s of waiting
        await retry()
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: v, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: v, user: {token: x}}]\ncontexts: [{name: v, context: {cluster: v, user: v}}]\n"
        "current-context: v\n")
    await retry()
    clients = await asyncio.wait_for(task, 5)
    assert clients is not None and set(clients) == {"virtual"}
    await clients["virtual"].close()
    # backoff: 0.5 s, doubled each round, at most 5 s (syncer/startup.py INITIAL_DELAY, MAX_DELAY)
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(loads)]
    assert gaps == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "syncer.startup"]
    missing = f"the virtual kubeconfig {path}: no such file"
    # the place and the parser's problem, never the parser's excerpt of the file (it may hold a key or token)
    invalid = (f"the virtual kubeconfig {path}: not a kubeconfig: YAML error at line 1, column 12: expected the node "
               "content, but found '<stream end>'")
    assert lines == [
        ("INFO", f"waiting for {missing} (retrying with backoff)"),  # once, though retried 5 times
        ("INFO", f"waiting for {invalid} (retrying with backoff)"),
        ("WARNING", f"waiting for {invalid} (for 32 s now; retrying every 5 s)"),  # after 30 s: for an operator
        ("INFO", f"the virtual kubeconfig {path} can be used now"),
    ], lines


async def test_a_kubeconfig_that_is_not_one_says_why(tmp_path: Path) -> None:
    path = tmp_path / "admin.conf"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: missing\ncontexts: []\nclusters: []\n")
    with pytest.raises(KubeconfigError) as e:
        await KubeClient.from_kubeconfig(str(path), "virtual")
    assert e.value.source == f"the virtual kubeconfig {path}"
    assert e.value.reason.startswith("not a usable kubeconfig: "), e.value.reason
    path.write_text("users: [{name: v, user: {token: s3cr3t-t0ken}\n")  # cut short
    with pytest.raises(KubeconfigError) as e:
        await KubeClient.from_kubeconfig(str(path), "virtual")
    assert "s3cr3t" not in str(e.value) and e.value.reason.startswith("not a kubeconfig: YAML error at line 2"), e.value
    path.write_text("- a list\n")
    with pytest.raises(KubeconfigError, match=r"not a kubeconfig: a YAML list, not a mapping$"):
        await KubeClient.from_kubeconfig(str(path), "virtual")
    # a relative certificate path is read from the kubeconfig's folder, as kubectl does
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: v\n"
                    "clusters: [{name: v, cluster: {server: 'https://127.0.0.1:1', certificate-authority: ca.crt}}]\n"
                    "users: [{name: v, user: {}}]\ncontexts: [{name: v, context: {cluster: v, user: v}}]\n")
    with pytest.raises(KubeconfigError) as e:
        await KubeClient.from_kubeconfig(str(path), "virtual")
    assert e.value.reason == f"not a usable kubeconfig: File does not exists: {tmp_path / 'ca.crt'}"
    pem = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"  # not a certificate
    (tmp_path / "ca.crt").write_text(pem)
    with pytest.raises(KubeconfigError) as e:
        await KubeClient.from_kubeconfig(str(path), "virtual")
    assert e.value.reason.startswith("not a usable kubeconfig: a certificate or key cannot be loaded: "), e.value


async def test_service_account_files_that_are_not_there_yet_say_which(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    source = "the host cluster's service account"
    with pytest.raises(KubeconfigError) as e:
        KubeClient.in_cluster("host", token_file=str(token), ca_file=str(ca))
    assert (e.value.source, e.value.reason) == (source, f"{token}: no such file")
    token.write_text("")  # the kubelet has created it, not yet written it
    with pytest.raises(KubeconfigError) as e:
        KubeClient.in_cluster("host", token_file=str(token), ca_file=str(ca))
    assert e.value.reason == f"{token}: the file is empty"
    token.write_text("a-token")
    with pytest.raises(KubeconfigError) as e:
        KubeClient.in_cluster("host", token_file=str(token), ca_file=str(ca))
    assert e.value.reason == f"{ca}: no such file"


async def test_no_writable_temporary_folder_is_named_not_taken_for_a_missing_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The client library writes a kubeconfig's embedded certificates (vcluster's admin.conf has them) to temporary
    # files; on a read-only root filesystem without a /tmp volume, Python's tempfile finds no folder.
    def no_folder() -> str:
        raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp', '/var/tmp']")

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_get_default_tempdir", no_folder)
    ca = base64.b64encode(f"a CA written at {time.time_ns()}".encode()).decode()  # not cached by the library yet
    path = tmp_path / "admin.conf"
    cluster = {"server": "https://127.0.0.1:1", "certificate-authority-data": ca}
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "v",
                                    "clusters": [{"name": "v", "cluster": cluster}],
                                    "users": [{"name": "v", "user": {}}],
                                    "contexts": [{"name": "v", "context": {"cluster": "v", "user": "v"}}]}))
    with pytest.raises(KubeconfigError) as e:
        await KubeClient.from_kubeconfig(str(path), "virtual")
    assert e.value.reason == "[Errno 2] No usable temporary directory found in ['/tmp', '/var/tmp']"
