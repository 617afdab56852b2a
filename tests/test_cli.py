"""The command line as an operator uses it: validate, run (probes, metrics, SIGTERM) and demo, each as a
real subprocess talking HTTP to the embedded API servers."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
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


async def test_run_serves_probes_and_metrics_and_stops_on_sigterm(clusters: Clusters, tmp_path: Path) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    health, metrics = free_port(), free_port()
    proc = await asyncio.create_subprocess_exec(
        *CLI, "run", "--config", "examples/vcluster-matchlabels.yaml",
        "--virtual-kubeconfig", str(clusters.virtual_kubeconfig), "--host-kubeconfig", str(clusters.host_kubeconfig),
        "--vcluster-name", "t", "--host-namespace", HOST_NS, "--log-format", "json",
        "--health-probe-bind-address", f"127.0.0.1:{health}", "--metrics-bind-address", f"127.0.0.1:{metrics}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
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
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 10)
        assert code == 0
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
    assert (tmp_path / "virtual.kubeconfig").is_file() and (tmp_path / "host.kubeconfig").is_file()
