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


# ---------------------------------------------------------------- 2. the rewrite-hosts init container's resources

RESOURCES = "sync.toHost.pods.rewriteHosts.initContainer.resources"
QUANTITY_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _resources(limits: str, requests: str = "{}") -> str:
    return (OFF + "      rewriteHosts:\n        initContainer:\n          resources:\n"
            f"            limits: {limits}\n            requests: {requests}\n")


async def test_rewrite_hosts_resources_must_be_quantities(tmp_path: Path) -> None:
    # vcluster's NewTranslator (translator.go parseResources) refuses at start a value resource.ParseQuantity does
    # not read ("error parsing resource value cpu (lots)") and a number ("resource value of memory is not a
    # string"); every pod with a subdomain would otherwise get a host spec the API server refuses
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", _resources('{cpu: "lots", memory: 1000}', "{cpu: 0.5, memory: 2Xi}"))
    code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 2
    assert err.splitlines() == [
        f'error: {vc}: invalid {RESOURCES}.limits.cpu: "lots" is not a quantity: {QUANTITY_WRONG}',
        f"error: {vc}: invalid {RESOURCES}.limits.memory: expected a string, got the integer 1000",
        f"error: {vc}: invalid {RESOURCES}.requests.cpu: expected a string, got the number 0.5",
        f'error: {vc}: invalid {RESOURCES}.requests.memory: "2Xi" is not a quantity: {QUANTITY_WRONG}',
    ]


async def test_rewrite_hosts_quantities_vcluster_reads_are_accepted(tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", _resources('{cpu: "1", memory: "1e3", nvidia.com/gpu: "0"}',
                                               '{cpu: "500m", memory: "64Mi", ephemeral-storage: "1.5Gi"}'))
    code, out, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 0, err
    assert f"{vc}: the syncer can run beside it" in out


async def test_run_refuses_a_rewrite_hosts_resource_that_is_not_a_quantity(clusters: Clusters,
                                                                           tmp_path: Path) -> None:
    whole = write(tmp_path, "whole.yaml", _resources('{cpu: "lots"}').replace("sync:\n", OWN, 1))
    err = await refused_run(clusters, "--config", str(whole))
    assert err == f'error: invalid {RESOURCES}.limits.cpu: "lots" is not a quantity: {QUANTITY_WRONG}\n'


# ---------------------------------------------------------------- 3. misspelt keys beside the syncer's section

# vcluster's chart schema refuses each (additionalProperties: false on SyncToHost, SyncPods, ...); read as absent,
# the forced runtime class (a security control) and the Secret-held tokens were silently off
TYPOS = [
    'error: {vc}invalid sync.toHost.pods.runtimeClassname: unknown field "runtimeClassname" (did you mean '
    '"runtimeClassName"?)',
    'error: {vc}invalid sync.toHost.pods.useSecretForSATokens: unknown field "useSecretForSATokens" (did you mean '
    '"useSecretsForSATokens"?)',
    'error: {vc}invalid sync.toHost.pod: unknown field "pod" (did you mean "pods"?)',
]
TYPO_DOC = ("sync:\n  toHost:\n    pods:\n      enabled: false\n      runtimeClassname: gvisor\n"
            "      useSecretForSATokens: true\n    pod:\n      runtimeClassName: gvisor\n")


async def test_misspelt_keys_beside_the_syncers_section_are_refused(tmp_path: Path) -> None:
    own, vc = write(tmp_path, "own.yaml", OWN), write(tmp_path, "vc.yaml", TYPO_DOC)
    code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert (code, err.splitlines()) == (2, [t.format(vc=f"{vc}: ") for t in TYPOS])
    whole = write(tmp_path, "whole.yaml", TYPO_DOC.replace("sync:\n", OWN, 1))
    code, _, err = await run_cli("validate", "--config", str(whole))
    assert (code, err.splitlines()) == (2, [t.format(vc="") for t in TYPOS])


async def test_keys_a_newer_vcluster_may_add_beside_these_are_left_to_it(tmp_path: Path) -> None:
    # only a key within two letter edits of one of vcluster's (case aside) is a misspelling; a new key that merely
    # resembles one (vcluster adds keys at these levels in new releases) must not stop the syncer
    newer = ("sync:\n  toHost:\n    persistentVolumeClaimTemplates: {enabled: false}\n    pods:\n      enabled: false\n"
             "      hostPriorityClassName: x\n      enforceTolerationSeconds: 1\nnetworking:\n  advanced:\n"
             "    clusterDNS: 10.0.0.10\n    proxyKubeletsPort: 1\n")
    own, vc = write(tmp_path, "own.yaml", OWN), write(tmp_path, "vc.yaml", newer)
    code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 0, err


async def test_run_refuses_a_misspelt_forced_runtime_class(clusters: Clusters, tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", OFF + "      runtimeClassname: gvisor\n")
    err = await refused_run(clusters, "--config", str(own), "--vcluster-config", str(vc))
    assert err == TYPOS[0].format(vc=f"{vc}: ") + "\n"
