"""vcluster settings the sidecar cannot honour, refused through the real CLI (`validate` and `run`, exit 2 before any
API request) rather than accepted in silence.

Sources: loft-sh/vcluster 487667546, `pkg/controllers/resources/pods/syncer.go` (`SyncToHost`, `Sync`:
`pro.ApplyPatchesHostObject`, `pro.ApplyIstioPatches`), `pods/translate/translator.go` (`NewTranslator`:
`parseResources`, `scheduling.NewConfig`), the chart's `values.schema.json` (tests/data/vcluster-chart-*).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import HOST_NS, Clusters
from tests.test_cli import CLI, REPO, run_cli, write

OWN = "sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n"
OFF = "sync:\n  toHost:\n    pods:\n      enabled: false\n"

# ---------------------------------------------------------------- 1. vcluster Pro's pod settings

PRO = [
    (OFF + "      patches:\n        - path: metadata.labels[\"cost-center\"]\n          expression: '\"team-a\"'\n",
     "invalid sync.toHost.pods.patches: patches on host pods are applied by vcluster's own pod syncer (a vcluster "
     "Pro feature), which is off beside runtimeclass-syncer; the syncer does not apply them, and every pod would "
     "reach the host unpatched; remove them"),
    (OFF + "      hybridScheduling: {enabled: true, hostSchedulers: [default-scheduler]}\n",
     "invalid sync.toHost.pods.hybridScheduling.enabled: hybrid scheduling (a vcluster Pro feature) is done by "
     "vcluster's own pod syncer, which is off beside runtimeclass-syncer; a pod naming a virtual scheduler would "
     "reach the host with a schedulerName the host does not have and stay Pending; set it to false"),
    (OFF + "integrations:\n  istio: {enabled: true}\n",
     "invalid integrations.istio.enabled: vcluster's Istio integration (a vcluster Pro feature) labels host pods in "
     "vcluster's own pod syncer, which is off beside runtimeclass-syncer; the syncer does not, and pods would reach "
     "the host without the mesh; set it to false"),
]


@pytest.mark.parametrize(("vcluster", "message"), PRO, ids=["patches", "hybridScheduling", "istio"])
async def test_vcluster_pro_pod_settings_are_refused(vcluster: str, message: str, tmp_path: Path) -> None:
    own, vc = write(tmp_path, "own.yaml", OWN), write(tmp_path, "vc.yaml", vcluster)
    code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert (code, err) == (2, f"error: {vc}: {message}\n")
    # a whole vcluster.yaml (no --vcluster-config) is refused alike
    whole = write(tmp_path, "whole.yaml", vcluster.replace("sync:\n", OWN, 1))
    code, _, err = await run_cli("validate", "--config", str(whole))
    assert (code, err) == (2, f"error: {message}\n")


async def test_vcluster_pro_pod_settings_off_or_empty_are_accepted(tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", OFF + "      patches: []\n      hybridScheduling: {enabled: false}\n"
               "integrations:\n  istio: {enabled: null}\n")
    code, out, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 0, err
    assert f"{vc}: the syncer can run beside it" in out


async def refused_run(clusters: Clusters, *config: str) -> str:
    """`run` with these config arguments against the test clusters: it must exit 2 before any API request (a run
    that starts is stopped after 15 s and fails the test). Returns its stderr."""
    before = (len(clusters.host_server.requests), len(clusters.virtual_server.requests))
    proc = await asyncio.create_subprocess_exec(
        *CLI, "run", *config, "--virtual-kubeconfig", str(clusters.virtual_kubeconfig),
        "--host-kubeconfig", str(clusters.host_kubeconfig), "--vcluster-name", "t", "--host-namespace", HOST_NS,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        _, err = await asyncio.wait_for(proc.communicate(), 15)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        pytest.fail("run started instead of refusing its configuration")
    assert proc.returncode == 2, err
    assert (len(clusters.host_server.requests), len(clusters.virtual_server.requests)) == before
    return err.decode()


async def test_run_refuses_hybrid_scheduling_before_any_api_request(clusters: Clusters, tmp_path: Path) -> None:
    own, vc = write(tmp_path, "own.yaml", OWN), write(tmp_path, "vc.yaml", PRO[1][0])
    err = await refused_run(clusters, "--config", str(own), "--vcluster-config", str(vc))
    assert err == f"error: {vc}: {PRO[1][1]}\n"
