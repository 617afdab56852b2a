"""The command line as an operator uses it: validate, run (probes, metrics, SIGTERM) and demo, each as a
real subprocess talking HTTP to the embedded API servers."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp

from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import HOST_NS, Clusters, rc, virtual_rc_names

CLI = [sys.executable, "-m", "syncer"]
REPO = Path(__file__).resolve().parent.parent


async def run_cli(*args: str, timeout: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*CLI, *args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, cwd=REPO)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def start_run(clusters: Clusters, health: int, metrics: int, *extra: str) -> asyncio.subprocess.Process:
    """`runtimeclass-syncer run` as a process against the test clusters (JSON logs on stderr)."""
    return await asyncio.create_subprocess_exec(
        *CLI, "run", "--config", "examples/vcluster-matchlabels.yaml", *extra,
        "--virtual-kubeconfig", str(clusters.virtual_kubeconfig), "--host-kubeconfig", str(clusters.host_kubeconfig),
        "--vcluster-name", "t", "--host-namespace", HOST_NS, "--log-format", "json",
        "--health-probe-bind-address", f"127.0.0.1:{health}", "--metrics-bind-address", f"127.0.0.1:{metrics}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


async def test_validate(tmp_path: Path) -> None:
    code, out, _ = await run_cli("validate", "--config", "examples/vcluster-combined.yaml")
    assert code == 0 and "valid" in out and "kubernetes.io/runtime.class in (gvisor,youki)" in out
    bad = write(tmp_path, "bad.yaml", "sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n"
                "      selector:\n        matchExpressions:\n          - {key: a, operator: In}\n"
                "      patches:\n        - {path: handler}\n")
    code, _, err = await run_cli("validate", "--config", str(bad))
    assert code == 2
    assert ("error: invalid sync.fromHost.runtimeClasses.selector: for 'in', 'notin' operators, values set can't "
            "be empty (at sync.fromHost.runtimeClasses.selector.matchExpressions[0].values)") in err
    assert "need to use one of: expression, labels or reference" in err
    # a key or value that ends in a newline (YAML's "|" block, or a quoted "\n") is not a label key or value
    newline = write(tmp_path, "newline.yaml", 'sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n'
                    '      selector:\n        matchLabels: {"environment\\n": development}\n')
    code, _, err = await run_cli("validate", "--config", str(newline))
    assert code == 2 and 'invalid label key "environment\n"' in err, err


async def test_invalid_config_exits_2_before_any_api_request(clusters: Clusters, tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", "sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n"
                "      selector:\n        matchExpressions:\n          - {key: a, operator: Foo}\n")
    before = (len(clusters.host_server.requests), len(clusters.virtual_server.requests))
    code, _, err = await run_cli("run", "--config", str(bad), "--virtual-kubeconfig", str(clusters.virtual_kubeconfig),
                                 "--host-kubeconfig", str(clusters.host_kubeconfig), "--vcluster-name", "t",
                                 "--host-namespace", HOST_NS)
    assert code == 2
    assert 'invalid sync.fromHost.runtimeClasses.selector: "Foo" is not a valid label selector operator' in err
    assert (len(clusters.host_server.requests), len(clusters.virtual_server.requests)) == before


async def _probe_until(health: int, done: Callable[[int, int], bool], timeout: float = 30.0) -> tuple[int, int]:
    """Ask /readyz and /healthz until `done(readyz status, healthz status)`; returns the two statuses."""
    deadline = asyncio.get_running_loop().time() + timeout
    async with aiohttp.ClientSession() as http:
        while True:
            async with http.get(f"http://127.0.0.1:{health}/readyz") as r:
                ready = r.status
            async with http.get(f"http://127.0.0.1:{health}/healthz") as r:
                healthy = r.status
            if done(ready, healthy) or asyncio.get_running_loop().time() > deadline:
                return ready, healthy
            await asyncio.sleep(0.2)  # a probe's period, as the kubelet polls


async def test_run_serves_probes_and_metrics_and_stops_on_sigterm(clusters: Clusters, tmp_path: Path) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    health, metrics = free_port(), free_port()
    proc = await start_run(clusters, health, metrics)
    assert proc.stderr is not None
    try:
        lines: list[str] = []
        while not any('"msg": "first reconcile done; ready"' in line for line in lines):
            line = (await asyncio.wait_for(proc.stderr.readline(), 20)).decode()
            assert line, f"syncer exited early: {''.join(lines)}"
            lines.append(line)
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced by the CLI")
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{health}/healthz") as r:
                assert r.status == 200
            async with http.get(f"http://127.0.0.1:{health}/readyz") as r:
                assert r.status == 200
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as r:
                text = await r.text()
        assert 'controller_runtime_reconcile_total{controller="runtimeclass",result="success"}' in text
        assert 'workqueue_depth{name="pod"}' in text
        drain = asyncio.create_task(proc.stderr.read())  # logs of the outage below must not fill the pipe
        # The host API server goes away: /readyz says so, /healthz (the deploy fragment's only probe, liveness)
        # stays 200, so the kubelet neither restarts the sidecar nor marks the vcluster pod unready.
        await clusters.host_server.stop()
        try:
            ready_status, health_status = await _probe_until(health, lambda ready, _: ready == 503)
            assert (ready_status, health_status) == (503, 200)
        finally:
            await clusters.host_server.start()
        assert await _probe_until(health, lambda ready, _: ready == 200) == (200, 200)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 10)
        assert code == 0
        await drain
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_demo_runs_from_the_examples(tmp_path: Path) -> None:
    code, out, err = await run_cli("demo", "--no-wait", "--workdir", str(tmp_path))
    assert code == 0, err
    assert "SYNCED   gvisor" in out and "skipped  kata-qemu" in out
    assert "DELETED  tenant-made-class" in out
    assert "REFUSED  default/microvm-kata-qemu" in out
    assert 'runtimeclasses.node.k8s.io "wasm" not found' in out
    # a real workload: translated references, waiting for a ConfigMap, and a token the virtual cluster accepts
    assert "secret db-password -> host secret db-password-x-default-x-demo" in out
    assert 'waited (not on the host) until configmap "web-settings" was created and synced by vcluster' in out
    assert re.search(r"default/web-config: the virtual API server answers the token in vcluster\.loft\.sh/token-"
                     r"[a-z0-9]{8} with system:serviceaccount:default:default\n", out), out
    assert (tmp_path / "virtual.kubeconfig").is_file() and (tmp_path / "host.kubeconfig").is_file()
    # vcluster's pod translation: a Deployment's pod confined and re-prioritised, a StatefulSet's FQDN
    assert ("anti-affinity selector on the host: app=web, vcluster.loft.sh/managed-by=demo, "
            "vcluster.loft.sh/namespace=default") in out
    assert "priority class tenant-high (virtual) -> host <host default>, priority 0" in out
    assert "owned by Service demo; safe-to-evict true" in out
    assert "init containers vcluster-rewrite-hosts make db-0.db.default.svc.cluster.local resolve" in out


async def test_the_demo_shows_the_virtual_copies_as_patched(tmp_path: Path) -> None:
    # examples/vcluster-patches.yaml prefixes the handler with "tenant-": the demo shows the copy the tenant sees
    code, out, err = await run_cli("demo", "--no-wait", "--workdir", str(tmp_path), "--config",
                                   str(REPO / "examples" / "vcluster-patches.yaml"))
    assert code == 0, err
    assert re.search(r"SYNCED   gvisor +handler tenant-runsc \(host: runsc\) labels: ", out), out


async def test_validate_reports_every_error_in_document_order(tmp_path: Path) -> None:
    cfg = write(tmp_path, "vcluster.yaml", """
sync:
  fromHost:
    runtimeClasses:
      enabled: true
      selector:
        matchLabels: {ok: "-bad"}
        matchExpressions:
          - {key: a, operator: Equals, values: [x]}
          - {key: b, operator: Exists, values: [y]}
      patches:
        - {path: handler}
      typo: 1
""")
    code, out, err = await run_cli("validate", "--config", str(cfg))
    assert code == 2 and out == ""
    sel = "error: invalid sync.fromHost.runtimeClasses.selector: "
    lines = err.splitlines()
    assert len(lines) == 5, err
    assert lines[0].startswith(f'{sel}invalid label value: "-bad": at key: "ok": a valid label must')
    assert lines[0].endswith("(at sync.fromHost.runtimeClasses.selector.matchLabels[ok].values[0])")
    assert lines[1] == (f'{sel}"Equals" is not a valid label selector operator '
                        "(at sync.fromHost.runtimeClasses.selector.matchExpressions[0].operator)")
    assert lines[2] == (f"{sel}values set must be empty for exists and does not exist "
                        "(at sync.fromHost.runtimeClasses.selector.matchExpressions[1].values)")
    assert lines[3] == ("error: invalid sync.fromHost.runtimeClasses.patches[0]: need to use one of: expression, "
                        "labels or reference")
    assert lines[4] == 'error: invalid sync.fromHost.runtimeClasses.typo: unknown field "typo"'


async def test_a_missing_javascript_engine_is_one_clear_line(tmp_path: Path) -> None:
    broken = tmp_path / "site" / "py_mini_racer"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("libmini_racer.so: cannot open shared object file")\n')
    cfg = REPO / "examples" / "vcluster-patches.yaml"
    proc = await asyncio.create_subprocess_exec(*CLI, "validate", "--config", str(cfg), cwd=REPO,
                                                env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2 and out == b""
    assert err.decode() == ("error: invalid sync.fromHost.runtimeClasses.patches: the JavaScript engine for patch "
                            "expressions cannot be loaded (ImportError: libmini_racer.so: cannot open shared object "
                            "file); it comes with the PyPI package mini-racer, a dependency of runtimeclass-syncer: "
                            "reinstall it\n")


async def test_log_level_warning_keeps_decisions_out_of_the_log(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    proc = await start_run(clusters, free_port(), free_port(), "--log-level", "warning")
    try:
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced by the CLI")
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0
    assert '"level": "info"' not in err.decode(), err.decode()  # "create virtual runtime class ..." is info


async def test_the_demo_runs_from_a_plain_install_outside_the_checkout(tmp_path: Path) -> None:
    # `pip install .` (the wheel, not the checkout) and then `runtimeclass-syncer demo` in another folder:
    # the demo's manifests travel with the package. Dependencies come from this environment (--no-deps).
    target, source = tmp_path / "site", tmp_path / "source"  # built from a copy: no build/ left in the checkout
    for name in ("syncer", "kubesim", "examples"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-cache-dir",
        "--target", str(target), str(source), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    out, _ = await asyncio.wait_for(build.communicate(), 300)
    assert build.returncode == 0, out.decode()
    assert not (target / "examples").exists()  # only packages are installed, the examples inside kubesim
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys, syncer, kubesim; print(syncer.__file__, kubesim.__file__); "
        "from syncer.cli import main; sys.exit(main(['demo', '--no-wait', '--workdir', sys.argv[1]]))",
        str(tmp_path / "work"), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(target)})
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    text = stdout.decode()
    assert proc.returncode == 0, stderr.decode()
    assert all(path.startswith(str(target)) for path in text.splitlines()[0].split())  # the installed copy ran
    assert "SYNCED   gvisor" in text and "REFUSED  default/microvm-kata-qemu" in text


LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
             "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


# Each numeric or name flag of `run` out of its range: exit 2, an invalid command line (the module docstring of
# syncer/cli.py, argparse's usage error), naming the flag, before any cluster is asked. --pod-workers 0 used to start a
# syncer that never synced a pod.
async def test_flags_out_of_range_are_command_line_errors() -> None:
    cases = [("--pod-workers", "0", "must be at least 1, not 0"), ("--pod-workers", "-2", "must be at least 1, not -2"),
             ("--pod-workers", "two", "not a whole number: 'two'"),
             ("--lease-duration", "0", "must be at least 1, not 0"),
             ("--patch-memory-limit", "-64", "must be at least 1, not -64"),
             ("--request-timeout", "0", "must be a number of seconds greater than 0, not '0'"),
             ("--request-timeout", "nan", "must be a number of seconds greater than 0, not 'nan'"),
             ("--renew-deadline", "-1", "must be a number of seconds greater than 0, not '-1'"),
             ("--retry-period", "inf", "must be a number of seconds greater than 0, not 'inf'"),
             ("--patch-timeout", "0", "must be a number of seconds greater than 0, not '0'"),
             # names: a DNS-1123 label (apimachinery validation.go IsDNS1123Label, dns1123LabelErrMsg); an empty
             # name (no `release` label on the pod) or an unexpanded $(VCLUSTER_NAME) used to start a syncer that
             # waited for ever with /readyz green
             ("--vcluster-name", "", f"'': {LABEL_MSG}"),
             ("--vcluster-name", "$(VCLUSTER_NAME)", f"'$(VCLUSTER_NAME)': {LABEL_MSG}"),
             ("--host-namespace", "", f"'': {LABEL_MSG}"),
             ("--host-namespace", "Team_A", f"'Team_A': {LABEL_MSG}")]

    async def attempt(flag: str, value: str) -> tuple[int | None, str, str]:
        # a run that accepts its flags waits for the kubeconfig "x" for ever: stopped after 30 s, code None
        proc = await asyncio.create_subprocess_exec(
            *CLI, "run", "--config", "examples/vcluster-matchlabels.yaml", "--virtual-kubeconfig", "x",
            "--host-kubeconfig", "x", "--vcluster-name", "t", "--host-namespace", HOST_NS, flag, value, cwd=REPO,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return None, "", "accepted: the syncer started"
        return proc.returncode, out.decode(), err.decode()

    results = await asyncio.gather(*(attempt(flag, value) for flag, value, _ in cases))
    for (flag, value, why), (code, out, err) in zip(cases, results, strict=True):
        assert (code, out) == (2, ""), (flag, value, err)
        assert f"runtimeclass-syncer run: error: argument {flag}: {why}\n" in err, err
